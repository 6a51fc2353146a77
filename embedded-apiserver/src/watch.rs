//! The watch verb: open watches, their events, bookmarks, and the HTTP stream that carries them.
//!
//! Each watch is a [`Watcher`] in the [`WatchHub`] with its own unbounded channel; a write
//! reaches it under the state lock, filtered as the watch cache filters (an object that stops
//! matching a selector arrives as `DELETED` with its last matching state, one that starts
//! matching as `ADDED`). The HTTP response is a chunked stream of newline-terminated
//! `{"type": ..., "object": ...}` events, as the API server writes them. A watch that allows
//! bookmarks gets one two seconds before its timeout if the server has moved past where the
//! watch started, as the watch cache does, so that its client resumes from close to now.
//!
//! In `PartialObjectMetadata` (`Accept: ...;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`),
//! every object, bookmarks included, is sent as `PartialObjectMetadata`; `ERROR` events keep
//! their `Status`. A watch asked for as `PartialObjectMetadataList` gets what kube-apiserver's
//! watch encoder makes of it: the transform of an object to a list fails, the untransformed
//! object cannot be encoded by the `meta.k8s.io` serializer it negotiated, and the stream ends
//! (HTTP 200, no event) at the first event that carries an object.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::catalog::ApiResource;
use crate::query::{Filter, ListParams, parse_version};
use crate::render::{ListMeta, Output, partial_metadata, served};
use crate::state::Shared;
use crate::status::{ApiError, GroupResource};
use crate::storage::{Change, ChangeKind, Object, meta_str, stamp};
use crate::table;

/// The annotation that marks the bookmark ending a streaming list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// One thing a watch sends.
#[derive(Debug)]
pub(crate) enum Frame {
    /// `ADDED`, `MODIFIED` or `DELETED`.
    Event(ChangeKind, Object),
    /// `BOOKMARK` at a version.
    Bookmark { rv: u64, initial_events_end: bool },
    /// `ERROR`; the watch ends after it.
    Error(ApiError),
}

/// One open watch.
#[derive(Debug)]
struct Watcher {
    storage: GroupResource,
    filter: Filter,
    bookmarks: bool,
    /// Only changes after this version are sent: a watch from a version the server has not
    /// reached yet waits for it.
    after: u64,
    tx: mpsc::UnboundedSender<Frame>,
    /// Set when the watch is stalled: its stream then ignores its timeout.
    stalled: Arc<AtomicBool>,
}

/// The open watches of every resource.
#[derive(Debug, Default)]
pub(crate) struct WatchHub {
    watchers: Vec<Watcher>,
    /// Stalled watches: kept open, sent nothing.
    stalled: Vec<Watcher>,
}

impl WatchHub {
    /// Sends a committed change to the watches of its resource that it concerns.
    pub(crate) fn broadcast(&mut self, change: &Change) {
        self.watchers.retain(|w| !w.tx.is_closed());
        let concerned = |w: &&Watcher| w.storage == change.storage && change.rv > w.after;
        for watcher in self.watchers.iter().filter(concerned) {
            if let Some(frame) = event_for(change, &watcher.filter) {
                // A receiver dropped since the retain above is pruned next time.
                let _ = watcher.tx.send(frame);
            }
        }
    }

    /// Sends a bookmark at `rv` to every watch that asked for bookmarks.
    pub(crate) fn bookmark(&mut self, rv: u64) {
        self.watchers.retain(|w| !w.tx.is_closed());
        // A bookmark never takes a watch back before where it started.
        for watcher in self.watchers.iter().filter(|w| w.bookmarks && rv >= w.after) {
            let _ = watcher.tx.send(Frame::Bookmark { rv, initial_events_end: false });
        }
    }

    /// Ends every open watch (stalled ones too) cleanly; returns how many there were.
    pub(crate) fn drop_all(&mut self) -> usize {
        let n = self.open();
        self.watchers.clear();
        self.stalled.clear();
        n
    }

    /// Stalls every open watch: it stays open and receives nothing more until it is dropped.
    /// Returns how many were stalled.
    pub(crate) fn stall_all(&mut self) -> usize {
        self.watchers.retain(|w| !w.tx.is_closed());
        for watcher in &self.watchers {
            watcher.stalled.store(true, Ordering::SeqCst);
        }
        let n = self.watchers.len();
        self.stalled.append(&mut self.watchers);
        n
    }

    /// The number of open watches, stalled ones included.
    pub(crate) fn open(&mut self) -> usize {
        self.watchers.retain(|w| !w.tx.is_closed());
        self.stalled.retain(|w| !w.tx.is_closed());
        self.watchers.len() + self.stalled.len()
    }
}

/// The event a watch with `filter` gets for `change` (`cacheWatcher.convertToWatchEvent`).
fn event_for(change: &Change, filter: &Filter) -> Option<Frame> {
    let now = change.kind != ChangeKind::Deleted && filter.matches(&change.obj);
    let before = change.prev.as_deref().is_some_and(|prev| filter.matches(prev));
    match (now, before) {
        (false, false) => None,
        (true, false) => Some(Frame::Event(ChangeKind::Added, Arc::clone(&change.obj))),
        (true, true) => Some(Frame::Event(ChangeKind::Modified, Arc::clone(&change.obj))),
        (false, true) if change.kind == ChangeKind::Deleted => {
            Some(Frame::Event(ChangeKind::Deleted, Arc::clone(&change.obj)))
        }
        (false, true) => {
            // The last state that matched, at the version where it stopped matching.
            let mut last = change.prev.as_deref().cloned().unwrap_or(Value::Null);
            stamp(&mut last, change.rv);
            Some(Frame::Event(ChangeKind::Deleted, Arc::new(last)))
        }
    }
}

/// Opens a watch of `resource` (in `namespace`, if given) and returns the streaming response.
///
/// Where it starts (the watch cache's rules):
/// - `sendInitialEvents=true`: an `ADDED` per current object, a bookmark annotated
///   `k8s.io/initial-events-end` if the watch allows bookmarks, then changes; from a version
///   in the future, one `ERROR` event (`504`, cause `ResourceVersionTooLarge`) and the end (the
///   watch cache first waits about 3 s for the version to arrive; this server does not);
/// - resourceVersion `""` or `"0"`: an `ADDED` per current object, then changes (nothing
///   before the changes with `sendInitialEvents=false`);
/// - resourceVersion `N`: the kept changes after `N`, then new ones; if `N` is compacted, one
///   `ERROR` event (`410 Expired`) and the end; if `N` is in the future, nothing until changes
///   after `N` (the watch cache opens the watch and waits, it does not fail it).
///
/// A resourceVersion that is not a number fails with a 500 without a reason, as the storage
/// layer's parse error reaches the client.
pub(crate) fn watch(
    shared: &Arc<Shared>,
    resource: Arc<ApiResource>,
    namespace: Option<&str>,
    params: &ListParams,
    output: Output,
) -> Result<Response, ApiError> {
    let filter = Filter::new(namespace, params);
    let (tx, rx) = mpsc::unbounded_channel();
    let stalled = Arc::new(AtomicBool::new(false));
    let start = {
        let mut state = shared.state.lock();
        let current = state.store.resource_version();
        let requested = parse_version(&params.resource_version).map_err(ApiError::internal)?;
        let future = requested.filter(|&n| n > current);
        if let Some(n) = future.filter(|_| params.send_initial_events == Some(true)) {
            // As the watch cache answers: HTTP 200 and one ERROR event, then the end.
            let _ = tx.send(Frame::Error(ApiError::too_large_resource_version(n, current)));
            drop(tx);
            drop(state);
            return Ok(response(shared, resource, rx, output, params, stalled, current));
        }
        let storage = &resource.storage;
        // Where the watch stands once its first events are queued: the version it starts from,
        // or the newest replayed change, or now for initial events. The watch cache compares
        // its bookmarks with this version.
        let start = match (params.send_initial_events, requested) {
            (Some(true), _) | (None, None | Some(0)) => {
                for (_, obj) in state.store.range(storage, "") {
                    if filter.matches(obj) {
                        let _ = tx.send(Frame::Event(ChangeKind::Added, Arc::clone(obj)));
                    }
                }
                if params.send_initial_events == Some(true) && params.allow_watch_bookmarks {
                    let _ = tx.send(Frame::Bookmark { rv: current, initial_events_end: true });
                }
                current
            }
            (Some(false), None | Some(0)) => current,
            (_, Some(n)) => {
                let compacted = state.store.compacted();
                if n < compacted {
                    let message = format!("too old resource version: {n} ({compacted})");
                    let _ = tx.send(Frame::Error(ApiError::expired(message)));
                    drop(tx);
                    return Ok(response(shared, resource, rx, output, params, stalled, current));
                }
                let mut start = n;
                for change in state.store.changes_after(n).filter(|c| &c.storage == storage) {
                    if let Some(frame) = event_for(change, &filter) {
                        start = change.rv;
                        let _ = tx.send(frame);
                    }
                }
                start
            }
        };
        let bookmarks = params.allow_watch_bookmarks;
        let storage = storage.clone();
        let after = future.unwrap_or(0);
        let stalled_flag = Arc::clone(&stalled);
        let watcher = Watcher { storage, filter, bookmarks, after, tx, stalled: stalled_flag };
        state.hub.watchers.push(watcher);
        start
    };
    shared.watch_opened.notify_waiters();
    Ok(response(shared, resource, rx, output, params, stalled, start))
}

/// How long before its timeout a watch that allows bookmarks gets one (the watch cache's
/// `nextBookmarkTime`), so that its client resumes from as recent a version as possible.
const PRE_TIMEOUT_BOOKMARK: Duration = Duration::from_secs(2);

/// The chunked response of a watch that starts at version `start`.
#[allow(clippy::too_many_arguments)] // One parameter per part of a watch's state.
fn response(
    shared: &Arc<Shared>,
    resource: Arc<ApiResource>,
    rx: mpsc::UnboundedReceiver<Frame>,
    output: Output,
    params: &ListParams,
    stalled: Arc<AtomicBool>,
    start: u64,
) -> Response {
    // As the API server: timeoutSeconds, or a random 30 to 60 minutes (--min-request-timeout).
    let timeout = match params.timeout_seconds.filter(|&t| t > 0) {
        Some(seconds) => Duration::from_secs(seconds),
        None => Duration::from_secs(1800 + fastrand::u64(..1800)),
    };
    let encoder = Encoder { resource, output, headers_sent: false };
    let bookmark_armed = params.allow_watch_bookmarks && timeout > PRE_TIMEOUT_BOOKMARK;
    let stream = WatchStream {
        rx,
        encoder,
        stalled,
        shared: Arc::clone(shared),
        shutdown: shared.shutdown.clone(),
        deadline: Box::pin(tokio::time::sleep(timeout)),
        bookmark_at: Box::pin(tokio::time::sleep(timeout.saturating_sub(PRE_TIMEOUT_BOOKMARK))),
        bookmark_armed,
        start_rv: start,
        timed_out: false,
        ended: false,
    };
    let body = Body::from_stream(futures::stream::unfold(stream, WatchStream::next));
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    response
}

/// The state of one watch response.
struct WatchStream {
    rx: mpsc::UnboundedReceiver<Frame>,
    encoder: Encoder,
    stalled: Arc<AtomicBool>,
    /// To read the current version for the pre-timeout bookmark.
    shared: Arc<Shared>,
    shutdown: CancellationToken,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    /// [`PRE_TIMEOUT_BOOKMARK`] before the deadline.
    bookmark_at: std::pin::Pin<Box<tokio::time::Sleep>>,
    /// The watch allows bookmarks and its pre-timeout bookmark is still due.
    bookmark_armed: bool,
    /// Where the watch stood once its first events were queued: a pre-timeout bookmark is
    /// sent only when the server is past it.
    start_rv: u64,
    /// The deadline passed while stalled: no longer armed.
    timed_out: bool,
    /// An `ERROR` event was sent: nothing follows it.
    ended: bool,
}

impl WatchStream {
    /// The next chunk, or `None` when the watch ends (closed, timed out, shut down, errored).
    async fn next(mut self) -> Option<(Result<Bytes, std::convert::Infallible>, Self)> {
        if self.ended {
            return None;
        }
        loop {
            tokio::select! {
                biased;
                () = self.shutdown.cancelled() => return None,
                frame = self.rx.recv() => {
                    let frame = frame?;
                    self.ended = matches!(frame, Frame::Error(_));
                    let bytes = self.encoder.encode(frame)?;
                    return Some((Ok(bytes), self));
                }
                () = &mut self.bookmark_at, if self.bookmark_armed => {
                    self.bookmark_armed = false;
                    // Only a bookmark past where the watch started is sent (the watch cache's
                    // rule, which may repeat the version of the last event), and none while
                    // stalled.
                    let current = self.shared.state.lock().store.resource_version();
                    if current > self.start_rv && !self.stalled.load(Ordering::SeqCst) {
                        let bookmark = Frame::Bookmark { rv: current, initial_events_end: false };
                        return Some((Ok(self.encoder.encode(bookmark)?), self));
                    }
                }
                () = &mut self.deadline, if !self.timed_out => {
                    if !self.stalled.load(Ordering::SeqCst) {
                        return None;
                    }
                    // A stalled watch stays open: the client must notice the silence.
                    self.timed_out = true;
                }
            }
        }
    }
}

/// Turns frames into the bytes of watch events.
struct Encoder {
    resource: Arc<ApiResource>,
    output: Output,
    /// A table watch sends column definitions with its first event only.
    headers_sent: bool,
}

impl Encoder {
    /// The bytes of one event; `None` when it cannot be encoded and the watch ends (an object
    /// asked for as a `PartialObjectMetadataList`: see the [module documentation](self)).
    fn encode(&mut self, frame: Frame) -> Option<Bytes> {
        let unencodable = matches!(self.output, Output::Metadata { list: true, .. });
        if unencodable && !matches!(frame, Frame::Error(_)) {
            return None;
        }
        let (kind, object) = match frame {
            Frame::Event(kind, obj) => (kind.as_str(), self.object(&obj)),
            Frame::Bookmark { rv, initial_events_end } => {
                let mut metadata = json!({"resourceVersion": rv.to_string()});
                if initial_events_end {
                    metadata["annotations"] = json!({INITIAL_EVENTS_END: "true"});
                }
                let bookmark = json!({"kind": self.resource.ty.kind,
                                      "apiVersion": self.resource.api_version(),
                                      "metadata": metadata});
                let object = match self.output {
                    Output::Metadata { api_version, .. } => {
                        partial_metadata(&bookmark, api_version)
                    }
                    Output::Json | Output::Table { .. } => bookmark,
                };
                ("BOOKMARK", object)
            }
            Frame::Error(error) => ("ERROR", error.to_json()),
        };
        // `type`, then `object`, in the API server's order (a `json!` map would sort them):
        // clients that read the server's own layout fastest should meet it here too.
        let mut line = format!(r#"{{"type":"{kind}","object":"#).into_bytes();
        // A `Value` always serializes, and a `Vec` always takes the bytes.
        let _ = serde_json::to_writer(&mut line, &object);
        line.extend_from_slice(b"}\n");
        Some(Bytes::from(line))
    }

    fn object(&mut self, obj: &Value) -> Value {
        match self.output {
            Output::Json => served(obj, &self.resource).into_owned(),
            Output::Metadata { api_version, .. } => partial_metadata(obj, api_version),
            Output::Table { api_version, include } => {
                let rv = meta_str(obj, "resourceVersion").to_owned();
                let meta = ListMeta { resource_version: rv, ..ListMeta::default() };
                let headers = !self.headers_sent;
                self.headers_sent = true;
                table::table(&self.resource, &[obj], api_version, include, headers, &meta)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::query::{ListParams, Query};

    fn change(kind: ChangeKind, prev: Option<Value>, obj: Value) -> Change {
        Change {
            rv: 9,
            storage: GroupResource::new("", "pods"),
            key: "ns/a".into(),
            kind,
            obj: Arc::new(obj),
            prev: prev.map(Arc::new),
        }
    }

    #[test]
    fn events_are_filtered_as_the_watch_cache_filters() {
        let pods = Catalog::builtin().find("", "v1", "pods").unwrap();
        let params =
            ListParams::parse(&Query::parse(Some("labelSelector=app%3Dweb")), &pods, true).unwrap();
        let filter = Filter::new(None, &params);
        let web =
            json!({"metadata": {"name": "a", "labels": {"app": "web"}, "resourceVersion": "8"}});
        let db = json!({"metadata": {"name": "a", "labels": {"app": "db"}}});
        let kind = |f: Option<Frame>| match f {
            Some(Frame::Event(k, o)) => {
                format!("{}@{}", k.as_str(), meta_str(&o, "resourceVersion"))
            }
            _ => "none".into(),
        };
        assert_eq!(
            kind(event_for(&change(ChangeKind::Modified, Some(web.clone()), db.clone()), &filter)),
            "DELETED@9"
        );
        assert_eq!(
            kind(event_for(&change(ChangeKind::Modified, Some(db.clone()), web.clone()), &filter)),
            "ADDED@8"
        );
        assert_eq!(
            kind(event_for(&change(ChangeKind::Modified, Some(db.clone()), db.clone()), &filter)),
            "none"
        );
        assert_eq!(
            kind(event_for(&change(ChangeKind::Deleted, Some(web.clone()), web), &filter)),
            "DELETED@8"
        );
        assert_eq!(
            kind(event_for(&change(ChangeKind::Deleted, Some(db.clone()), db), &filter)),
            "none"
        );
    }
}
