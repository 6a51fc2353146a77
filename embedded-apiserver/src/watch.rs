//! The watch verb: open watches, their events, bookmarks, and the HTTP stream that carries them.
//!
//! Each watch is a [`Watcher`](crate::watch_hub::Watcher) in the state's
//! [`WatchHub`](crate::watch_hub::WatchHub) with its own bounded buffer; a write reaches it
//! under the state lock, filtered as the watch cache filters (see `watch_hub.rs`). This module
//! starts watches (replaying what they ask for) and streams their frames over HTTP. The HTTP
//! response is a chunked stream of newline-terminated
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

use std::collections::VecDeque;
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
use crate::conversion::Converter;
use crate::query::{Filter, ListParams, parse_version};
use crate::render::Output;
use crate::served::{ListMeta, partial_metadata, served};
use crate::state::Shared;
use crate::status::ApiError;
use crate::storage::{ChangeKind, meta_str};
use crate::table;
use crate::watch_hub::{Frame, Watcher, event_for};

/// The annotation that marks the bookmark ending a streaming list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Opens a watch of `resource` (in `namespace`, if given) and returns the streaming response.
///
/// Where it starts (the watch cache's rules):
/// - `sendInitialEvents=true`: an `ADDED` per current object, a bookmark annotated
///   `k8s.io/initial-events-end` if the watch allows bookmarks, then changes; from a version
///   in the future, one `ERROR` event (`504`, cause `ResourceVersionTooLarge`) and the end (the
///   watch cache first waits about 3 s for the version to arrive; this server does not);
/// - resourceVersion `""` or `"0"`: an `ADDED` per current object, then changes (nothing
///   before the changes with `sendInitialEvents=false`);
/// - resourceVersion `N`: the kept changes after `N`, then new ones; if `N` is compacted, or
///   older than the last [restart](crate::ServerHandle::restart), one `ERROR` event
///   (`410 Expired`) and the end; if `N` is in the future, nothing until changes after `N`
///   (the watch cache opens the watch and waits, it does not fail it).
///
/// The events it starts with are a snapshot the stream walks (as the cacher's watchers walk
/// their initial interval); only the changes that follow go through the watch's bounded
/// buffer (see `watch_hub.rs`).
///
/// A resourceVersion that is not a number fails with a 500 without a reason, as the storage
/// layer's parse error reaches the client. More than
/// [`Config::max_watches`](crate::Config::max_watches) open watches get `429` with a
/// `Retry-After`.
pub(crate) fn watch(
    shared: &Arc<Shared>,
    resource: Arc<ApiResource>,
    namespace: Option<&str>,
    params: &ListParams,
    output: Output,
    converter: Option<Converter>,
) -> Result<Response, ApiError> {
    let filter = Filter::new(namespace, params);
    let (tx, rx) = mpsc::channel(shared.settings.watch_buffer.max(1));
    let stalled = Arc::new(AtomicBool::new(false));
    let mut initial = VecDeque::new();
    let start = {
        let mut state = shared.state.lock();
        if !state.catalog.serves(&resource) {
            // Its CRD was deleted since the request was routed: it would never end.
            return Err(ApiError::path_not_found());
        }
        let current = state.store.resource_version();
        let requested = parse_version(&params.resource_version).map_err(ApiError::internal)?;
        if state.hub.open() >= shared.settings.max_watches {
            return Err(too_many_watches(shared.settings.max_watches));
        }
        let future = requested.filter(|&n| n > current);
        if let Some(n) = future.filter(|_| params.send_initial_events == Some(true)) {
            // As the watch cache answers: HTTP 200 and one ERROR event, then the end.
            let error = ApiError::too_large_resource_version(n, current);
            initial.push_back(Frame::Error(Box::new(error)));
            drop(state);
            let parts = (initial, None, converter);
            return Ok(response(shared, resource, parts, output, params, stalled, current));
        }
        let storage = &resource.storage;
        // Where the watch stands once its first events are queued: the version it starts from,
        // or the newest replayed change, or now for initial events. The watch cache compares
        // its bookmarks with this version.
        let start = match (params.send_initial_events, requested) {
            (Some(true), _) | (None, None | Some(0)) => {
                for (_, obj) in state.store.range(storage, "") {
                    if filter.matches(obj) {
                        initial.push_back(Frame::Event(ChangeKind::Added, Arc::clone(obj)));
                    }
                }
                if params.send_initial_events == Some(true) && params.allow_watch_bookmarks {
                    initial.push_back(Frame::Bookmark { rv: current, initial_events_end: true });
                }
                current
            }
            (Some(false), None | Some(0)) => current,
            (_, Some(n)) => {
                // The watch cache's window starts at its last initialization (a restart), and
                // nothing older than etcd's compaction can be replayed.
                let oldest = state.store.compacted().max(state.hub.since());
                if n < oldest {
                    let message = format!("too old resource version: {n} ({oldest})");
                    initial.push_back(Frame::Error(Box::new(ApiError::expired(message))));
                    drop(state);
                    let parts = (initial, None, converter);
                    return Ok(response(shared, resource, parts, output, params, stalled, current));
                }
                let mut start = n;
                for change in state.store.changes_after(n).filter(|c| &c.storage == storage) {
                    if let Some(frame) = event_for(change, &filter) {
                        start = change.rv;
                        initial.push_back(frame);
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
        state.hub.add(watcher);
        start
    };
    shared.watch_opened.notify_waiters();
    let parts = (initial, Some(rx), converter);
    Ok(response(shared, resource, parts, output, params, stalled, start))
}

/// The answer to a watch beyond [`Config::max_watches`](crate::Config::max_watches): `429`
/// with `Retry-After: 1`, as kube-apiserver's max-in-flight filter answers a request it has no
/// seat for (`tooManyRequests` in `k8s.io/apiserver/pkg/server/filters/maxinflight.go`), as a
/// `Status` so that every client reads it.
fn too_many_watches(max: usize) -> ApiError {
    let mut error = ApiError::new(
        429,
        "TooManyRequests",
        format!(
            "Too many requests, please try again later: {max} watches are open, the most this \
             server serves (Config::max_watches)"
        ),
    );
    error.retry_after = Some(1);
    error
}

/// How long before its timeout a watch that allows bookmarks gets one (the watch cache's
/// `nextBookmarkTime`), so that its client resumes from as recent a version as possible.
const PRE_TIMEOUT_BOOKMARK: Duration = Duration::from_secs(2);

/// The frames of a watch: those it starts with, its buffer (none for a watch that ends after
/// them), and the conversion of its objects, if any.
type Frames = (VecDeque<Frame>, Option<mpsc::Receiver<Frame>>, Option<Converter>);

/// The chunked response of a watch that starts at version `start`: its initial frames, then
/// what its buffer receives (nothing more without one).
fn response(
    shared: &Arc<Shared>,
    resource: Arc<ApiResource>,
    (initial, rx, converter): Frames,
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
        initial,
        rx,
        converter,
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
    /// The events the watch starts with, sent first.
    initial: VecDeque<Frame>,
    /// The watch's buffer, fed by the hub; `None` for a watch that ends after `initial`.
    rx: Option<mpsc::Receiver<Frame>>,
    /// Converts each event's object to the watch's version (a CRD's conversion webhook).
    converter: Option<Converter>,
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
        if self.ended || self.shutdown.is_cancelled() {
            return None;
        }
        if let Some(frame) = self.initial.pop_front() {
            let frame = self.converted(frame).await;
            return self.send(frame);
        }
        loop {
            let rx = self.rx.as_mut()?;
            tokio::select! {
                biased;
                () = self.shutdown.cancelled() => return None,
                frame = rx.recv() => {
                    let frame = self.converted(frame?).await;
                    return self.send(frame);
                }
                () = &mut self.bookmark_at, if self.bookmark_armed => {
                    self.bookmark_armed = false;
                    // Only a bookmark past where the watch started is sent (the watch cache's
                    // rule, which may repeat the version of the last event), and none while
                    // stalled.
                    let current = self.shared.state.lock().store.resource_version();
                    if current > self.start_rv && !self.stalled.load(Ordering::SeqCst) {
                        let bookmark = Frame::Bookmark { rv: current, initial_events_end: false };
                        return self.send(bookmark);
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

    /// `frame` with its object in the watch's version: a conversion that fails is an `ERROR`
    /// event with the converter's `500`, which ends the watch.
    async fn converted(&self, frame: Frame) -> Frame {
        let (Some(converter), Frame::Event(kind, obj)) = (&self.converter, &frame) else {
            return frame;
        };
        match converter.object(obj).await {
            Ok(obj) => Frame::Event(*kind, obj),
            Err(error) => Frame::Error(Box::new(error)),
        }
    }

    /// `frame`'s bytes as the next chunk; after an `ERROR`, the stream ends.
    fn send(mut self, frame: Frame) -> Option<(Result<Bytes, std::convert::Infallible>, Self)> {
        self.ended = matches!(frame, Frame::Error(_));
        let bytes = self.encoder.encode(frame)?;
        Some((Ok(bytes), self))
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
    use informer_runtime::GroupVersionResource;

    use super::*;
    use crate::ApiServer;
    use crate::query::Query;

    fn widget_crd(scope: &str) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": scope,
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true}]
            }
        })
    }

    /// A watch routed to a CRD's resource just before the CRD is deleted and created again
    /// with another scope must not open on the new one's storage: kube-apiserver would have
    /// served it from the old storage, which the deletion ended, and a watch of
    /// `namespaces/default/widgets` on cluster-scoped widgets would hear none of them and never
    /// end. (A dynamic informer of widgets waited for its watch's timeout, minutes.)
    #[tokio::test]
    async fn a_watch_of_a_resource_whose_crd_was_replaced_meanwhile_is_not_found() {
        let server = ApiServer::start().await.unwrap();
        let handle = server.handle();
        let crds =
            GroupVersionResource::new("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        handle.create(&crds, widget_crd("Namespaced")).unwrap();
        let shared = Arc::clone(&handle.shared);
        // What the router found for `/apis/example.com/v1/namespaces/default/widgets`.
        let routed = shared.state.lock().catalog.find("example.com", "v1", "widgets").unwrap();

        handle.delete(&crds, "", "widgets.example.com").unwrap();
        handle.create(&crds, widget_crd("Cluster")).unwrap();
        let query = Query::parse(Some("watch=true&resourceVersion=1"));
        let params = ListParams::parse(&query, &routed, true).unwrap();
        let answer = watch(&shared, routed, Some("default"), &params, Output::Json, None);
        let error = answer.err().map(|e| e.code);
        assert_eq!(error, Some(404), "the watch opened on the new CRD's storage");
        assert_eq!(handle.open_watches(), 0);
    }
}
