//! The HTTP [`ListerWatcher`]: list pages with the next page prefetched, and watch streams with
//! an idle deadline.
//!
//! This is the transport end of the data flow: the [reflector](informer_runtime::reflector) calls
//! [`ListerWatcher::list`] and [`ListerWatcher::watch`]; the bytes come from the API server
//! through [`Client`].
//!
//! # Lists: decoded while they arrive, the next page while this one decodes
//!
//! A list body is decoded as it streams in, on tokio's blocking pool: a [`PageDecoder`] takes
//! the chunks the socket delivers and decodes each item once its last byte is in. Neither the
//! whole body nor a second copy of the items is ever held, and decoding overlaps the transfer;
//! reading runs at most [`READ_AHEAD_BYTES`] (1 MiB) ahead of decoding.
//! That matters most for the first list, which the reflector makes at resource version 0: API
//! servers answer it from their watch cache in one response, whatever the limit. Bodies known to
//! be at most [`INLINE_DECODE_MAX`] bytes are read whole and decoded on the calling task.
//!
//! A list answer must keep coming: its headers, then each next chunk of its body, within the
//! client's [`read_idle_timeout`](crate::Config::read_idle_timeout) (90 seconds by
//! default), or the list fails and the reflector lists again after a backoff. No item (nor any
//! other part of the list) may be larger than the client's
//! [`max_object_size`](crate::Config::max_object_size): the decoder refuses it as soon as
//! it grows past that, so a list never makes the client hold more than one object, the read-ahead
//! and a prefetched page.
//!
//! The reflector asks for one page at a time and asks for the next one with the continue token
//! of the previous (and its selectors and limit, with no resource version). The list's metadata
//! comes before its items in the body, so the decoder reports the continue token before it
//! decodes the items; at that moment this lister-watcher starts fetching exactly that next
//! page in a task. When the reflector then asks for it, the request is already under way or
//! done. A prefetched page is cancelled and dropped when the next list asks for something else
//! or fails, or when the lister-watcher is dropped; at most one page is held. A caller that
//! reads only the first page of a paginated list therefore causes one unused request.
//!
//! A prefetched page is held whole, so it may be at most [`PREFETCH_MAX_BYTES`] (8 MiB). One
//! that turns out larger is dropped as soon as it does (its request cancelled) and fetched
//! again, streamed, when it is asked for; the rest of that list is not prefetched. Pausing its
//! transfer until it is asked for would hold memory no longer, but on HTTP/2 a stream that is
//! not read keeps the connection's flow-control window, which every other list and watch of
//! the client shares: a few paused pages would stall them all.
//!
//! # Watches: an idle deadline
//!
//! A watch that receives no bytes for longer than its `timeoutSeconds` plus
//! [`WATCH_IDLE_MARGIN`] (or the client's
//! [`watch_idle_timeout`](crate::Config::watch_idle_timeout), when set) ends, as if the
//! server's timeout had ended it: the connection has gone silent (a dead peer, a stalled
//! proxy), and the reflector watches again from its last version.
//! A connection reset or an HTTP/2 GOAWAY also ends a watch quietly (client-go's
//! `IsProbableEOF`). The deadline runs on tokio's clock, so tests can pause time. A watch's
//! headers, like every response's, must arrive within the client's `read_idle_timeout`; its
//! events are bounded by the same `max_object_size` as list items.

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::{Stream, StreamExt};
use http::Method;
use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;

use crate::api_client::Client;
use crate::body::{BodyReader, ReadError};
use crate::discovery::explain;
use crate::error::{cause_chain, io_kind_in_chain, transport_error};
use crate::list_watch::list_page::PageDecoder;
use crate::list_watch::watch_decode::{Decoded, WatchDecoder};
use crate::request::{Target, set_list_query, set_watch_query};
use crate::transport::TransportError;
use informer_runtime::dynamic::DynamicObject;
use informer_runtime::listwatch::{
    DynamicScope, Error, ListIntake, ListOptions, ListWatchSource, ListerWatcher, ObjectList,
    Status, WatchOptions, WatchStream,
};
use informer_runtime::resource::{GroupVersionResource, Object, Resource};

/// Added to a watch's server timeout to make its client-side idle deadline.
pub(crate) const WATCH_IDLE_MARGIN: Duration = Duration::from_secs(30);

/// The idle deadline of a watch opened without a server timeout: the API server's longest
/// default (twice its 30 minute minimum request timeout), plus the margin.
const DEFAULT_SERVER_WATCH_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// List bodies up to this size are decoded on the calling task; larger ones on the blocking
/// pool.
pub(crate) const INLINE_DECODE_MAX: usize = 64 * 1024;

/// Lists and watches one resource type over HTTP; see the [module documentation](self).
pub(crate) struct HttpListerWatcher<K> {
    client: Client,
    namespace: Option<String>,
    /// What is listed and watched: known from `K`, or learnt from discovery.
    target: TargetSlot,
    /// `plural[.group]`, for logs and messages.
    resource: Arc<str>,
    prefetch: Arc<Mutex<Option<Prefetch>>>,
    /// A page of the current list was too large to prefetch: prefetch no more of it.
    pages_too_large: Arc<AtomicBool>,
    /// Whether a continue token starts the fetch of the next page (off for a caller that asks
    /// for one page only: [`Client::list`]).
    prefetch_pages: bool,
    _kind: PhantomData<fn() -> K>,
}

/// A page being fetched ahead, and the options it answers.
struct Prefetch {
    options: ListOptions,
    task: AbortOnDrop,
}

/// A fetch task that is cancelled when no one wants its result any more. It ends with the
/// page's body, or `None` when the page was larger than [`PREFETCH_MAX_BYTES`].
struct AbortOnDrop(JoinHandle<Result<Option<Bytes>, Error>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A lister-watcher's target: known when it is made (a Rust type), or found by discovery on
/// first use (a resource known by group, version and plural only).
enum TargetSlot {
    Known(Arc<Target>),
    Discovered {
        gvr: GroupVersionResource,
        metadata_only: bool,
        /// One namespace of a set: a cluster-scoped resource is refused.
        namespaced_only: bool,
        /// Set by a successful discovery; a failed one is tried again by the next list or watch,
        /// so that an informer syncs once a CRD is installed. Forgotten when the server's
        /// answers say it changed (see [`HttpListerWatcher::forget_target`]).
        found: Arc<Mutex<Option<Arc<Target>>>>,
    },
}

impl<K: Resource> HttpListerWatcher<K> {
    /// Lists and watches `K`.
    pub(crate) fn new(client: Client, namespace: Option<&str>) -> Self {
        Self::with_target(client, namespace, TargetSlot::Known(Arc::new(Target::of::<K>())))
    }
}

impl HttpListerWatcher<DynamicObject> {
    /// Lists and watches `gvr`, whose kind and scope discovery tells on first use.
    pub(crate) fn dynamic(
        client: Client,
        scope: DynamicScope<'_>,
        gvr: GroupVersionResource,
        metadata_only: bool,
    ) -> Self {
        let found = Arc::default();
        let namespaced_only = matches!(scope, DynamicScope::NamespaceOfSet(_));
        let target = TargetSlot::Discovered { gvr, metadata_only, namespaced_only, found };
        Self::with_target(client, scope.namespace(), target)
    }
}

impl<K: Object> HttpListerWatcher<K> {
    fn with_target(client: Client, namespace: Option<&str>, target: TargetSlot) -> Self {
        let resource = match &target {
            TargetSlot::Known(target) => Arc::clone(target.name()),
            TargetSlot::Discovered { gvr, .. } => gvr.qualified_name().into(),
        };
        Self {
            client,
            namespace: namespace.map(ToOwned::to_owned),
            target,
            resource,
            prefetch: Arc::default(),
            pages_too_large: Arc::default(),
            prefetch_pages: true,
            _kind: PhantomData,
        }
    }

    /// What to list and watch; discovered on first use for a dynamic resource.
    async fn target(&self) -> Result<Arc<Target>, Error> {
        let (gvr, metadata_only, namespaced_only, found) = match &self.target {
            TargetSlot::Known(target) => return Ok(Arc::clone(target)),
            TargetSlot::Discovered { gvr, metadata_only, namespaced_only, found } => {
                (gvr, *metadata_only, *namespaced_only, found)
            }
        };
        if let Some(target) = found.lock().clone() {
            return Ok(target);
        }
        // Not under the lock: a reflector lists and watches one at a time, so two discoveries
        // at once are rare, and both find the same.
        let resource = crate::discovery::discover(&self.client, gvr).await?;
        tracing::debug!(%resource, kind = %resource.kind, namespaced = resource.namespaced, "discovered");
        if namespaced_only && !resource.namespaced {
            let namespace = self.namespace.as_deref().unwrap_or_default();
            return Err(Error::Api(Status::new(
                400,
                "BadRequest",
                format!(
                    "{resource} is cluster-scoped, and this informer is limited to a set of \
                     namespaces (this lister-watcher to {namespace:?}): make its informer with a \
                     factory without namespaces, or with one"
                ),
            )));
        }
        let target = Arc::new(Target::discovered(resource, metadata_only));
        *found.lock() = Some(Arc::clone(&target));
        Ok(target)
    }

    /// A hook that forgets a discovered target when an error says the resource changed under
    /// it (a CRD deleted and created again with another scope or kind, a version no longer
    /// served): a 404, an object of another kind, a list that is not of the target. The next
    /// list or watch, after the reflector's backoff, discovers the resource again. `None` for a
    /// target known at compile time, which nothing can change.
    fn forget_target(&self) -> Option<impl Fn(&Error) + Send + Sync + 'static> {
        let TargetSlot::Discovered { found, .. } = &self.target else { return None };
        let (found, resource) = (Arc::clone(found), Arc::clone(&self.resource));
        Some(move |error: &Error| {
            let changed = match error {
                Error::Api(status) => status.code == 404,
                Error::UnexpectedKind { .. } | Error::Decode(_) => true,
                _ => false,
            };
            if changed && found.lock().take().is_some() {
                tracing::debug!(%resource, %error, "discovery will be read again");
            }
        })
    }

    async fn list_page(
        &self,
        options: ListOptions,
        intake: Option<Arc<dyn ListIntake<K>>>,
    ) -> Result<ObjectList<K>, Error> {
        let prefetched = {
            let mut slot = self.prefetch.lock();
            // A prefetch for other options is dropped here, which cancels it.
            slot.take().filter(|p| p.options == options)
        };
        if options.continue_token.is_none() {
            // A new list: its pages may be small enough to prefetch.
            self.pages_too_large.store(false, Ordering::Relaxed);
        }
        let target = match self.target().await {
            Ok(target) => target,
            Err(e) => {
                self.prefetch.lock().take();
                return Err(e);
            }
        };
        let url = match self.url(&target, &options) {
            Ok(url) => url,
            Err(e) => {
                self.prefetch.lock().take();
                return Err(e);
            }
        };
        let keep = options.keep_managed_fields;
        let limits = self.client.limits();
        let decoder =
            PageDecoder::new(Arc::clone(&target), keep, self.prefetcher(&target, options))
                .max_object_size(limits.max_object_size)
                .into_intake(intake);
        let fetched = match prefetched {
            Some(mut prefetch) => match (&mut prefetch.task.0).await {
                Ok(fetched) => fetched,
                Err(join) => Err(Error::Transport(format!("page prefetch: {join}"))),
            },
            None => Ok(None),
        };
        let decoded = match fetched {
            Ok(Some(body)) => {
                tracing::trace!(resource = %self.resource, "using the prefetched page");
                decode_body(body, decoder).await
            }
            Ok(None) => {
                let accept = target.list_accept();
                match self.client.send_accepting(Method::GET, url, None, accept).await {
                    Ok(response) => {
                        let body = BodyReader::new(response, limits.read_idle_timeout);
                        decode_response(body, &self.resource, decoder).await
                    }
                    // A 404 says the resource is not served: say why, from discovery.
                    Err(e) => Err(explain(&self.client, &target.resource().gvr(), e).await),
                }
            }
            Err(e) => Err(e),
        };
        if let Err(error) = &decoded {
            if let Some(forget) = self.forget_target() {
                forget(error);
            }
            // The list failed: the page prefetched for it will not be asked for.
            self.prefetch.lock().take();
        }
        decoded
    }

    fn url(&self, target: &Target, options: &ListOptions) -> Result<url::Url, Error> {
        let mut url = target
            .collection_url(self.client.base_url(), self.namespace.as_deref())
            .map_err(|e| Error::InvalidRequest(e.to_string()))?;
        set_list_query(&mut url, options);
        Ok(url)
    }

    /// What to do with a continue token: fetch the page the reflector will ask for next.
    fn prefetcher(
        &self,
        target: &Arc<Target>,
        options: ListOptions,
    ) -> impl FnOnce(&str) + Send + 'static {
        let target = Arc::clone(target);
        let client = self.client.clone();
        let namespace = self.namespace.clone();
        let resource = Arc::clone(&self.resource);
        let slot = Arc::clone(&self.prefetch);
        let too_large = Arc::clone(&self.pages_too_large);
        // Polled outside tokio (reqwest would fail anyway): no prefetch rather than a panic.
        let runtime = tokio::runtime::Handle::try_current().ok().filter(|_| self.prefetch_pages);
        move |token: &str| {
            let Some(runtime) = runtime else { return };
            if too_large.load(Ordering::Relaxed) {
                return;
            }
            // What the reflector sends for the next page.
            let next = ListOptions {
                continue_token: Some(token.to_owned()),
                resource_version: String::new(),
                resource_version_match: None,
                ..options
            };
            // The list's own URL was made from the same namespace: this one is too.
            let Ok(mut url) = target.collection_url(client.base_url(), namespace.as_deref()) else {
                return;
            };
            set_list_query(&mut url, &next);
            let accept = target.list_accept();
            let task = runtime.spawn(async move {
                let page = fetch_page(&client, url, accept, &resource).await;
                if matches!(page, Ok(None)) {
                    tracing::debug!(%resource, "a page too large to prefetch; no more prefetching in this list");
                    too_large.store(true, Ordering::Relaxed);
                }
                page
            });
            *slot.lock() = Some(Prefetch { options: next, task: AbortOnDrop(task) });
        }
    }

    async fn open_watch(&self, options: WatchOptions) -> Result<WatchStream<K>, Error> {
        let target = self.target().await?;
        let mut url = target
            .collection_url(self.client.base_url(), self.namespace.as_deref())
            .map_err(|e| Error::InvalidRequest(e.to_string()))?;
        set_watch_query(&mut url, &options);
        let accept = target.object_accept();
        let forget = self.forget_target();
        let response = match self.client.send_watch(url, accept).await {
            Ok(response) => response,
            Err(e) => {
                if let Some(forget) = &forget {
                    forget(&e);
                }
                return Err(explain(&self.client, &target.resource().gvr(), e).await);
            }
        };
        let idle = self.client.watch_idle_timeout().unwrap_or_else(|| {
            options
                .timeout
                .unwrap_or(DEFAULT_SERVER_WATCH_TIMEOUT)
                .saturating_add(WATCH_IDLE_MARGIN)
        });
        let body =
            response.into_body().map(|chunk| chunk.map_err(|e| ChunkError::from_transport(&e)));
        let decoder = WatchDecoder::new(Arc::clone(&target), options.keep_managed_fields)
            .max_object_size(self.client.limits().max_object_size);
        let events = watch_stream(body, decoder, idle);
        // Only a discovered target's events are looked at: a typed watch is left as it was.
        let Some(forget) = forget else { return Ok(events) };
        Ok(events
            .inspect(move |event| {
                if let Err(error @ Error::UnexpectedKind { .. }) = event {
                    forget(error);
                }
            })
            .boxed())
    }
}

impl<K: Object> ListerWatcher<K> for HttpListerWatcher<K> {
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, Result<ObjectList<K>, Error>> {
        Box::pin(self.list_page(options.clone(), None))
    }

    fn list_into(
        &self,
        options: &ListOptions,
        intake: Arc<dyn ListIntake<K>>,
    ) -> BoxFuture<'_, Result<ObjectList<K>, Error>> {
        Box::pin(self.list_page(options.clone(), Some(intake)))
    }

    fn watch(&self, options: &WatchOptions) -> BoxFuture<'_, Result<WatchStream<K>, Error>> {
        Box::pin(self.open_watch(options.clone()))
    }
}

impl<K> std::fmt::Debug for HttpListerWatcher<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpListerWatcher")
            .field("resource", &self.resource)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// The largest page held by a prefetch. A page of 500 objects of a typical size fits; a larger
/// one is fetched again when asked for (see the [module documentation](self)). A constant, not a
/// setting: it bounds memory and costs at worst one request.
const PREFETCH_MAX_BYTES: usize = 8 * 1024 * 1024;

/// GETs a list page and reads its whole body (a prefetch: at most one page of a paginated list);
/// `None` when the body is larger than [`PREFETCH_MAX_BYTES`], whose request is then dropped.
async fn fetch_page(
    client: &Client,
    url: url::Url,
    accept: &'static str,
    resource: &str,
) -> Result<Option<Bytes>, Error> {
    let response = client.send_accepting(Method::GET, url, None, accept).await?;
    let mut body = BodyReader::new(response, client.limits().read_idle_timeout);
    let (read, outcome) = body.read_prefix(PREFETCH_MAX_BYTES + 1).await;
    match outcome {
        Ok(_) if read.len() > PREFETCH_MAX_BYTES => Ok(None),
        Ok(_) => Ok(Some(read)),
        Err(e) => Err(list_read_error(resource, e)),
    }
}

/// The error for a list body that could not be read.
fn list_read_error(resource: &str, error: ReadError) -> Error {
    match error {
        ReadError::Idle(idle) => Error::Transport(format!(
            "{resource} list: the server sent nothing for {idle:?} (Config::read_idle_timeout); \
             the list is retried: raise read_idle_timeout for an API server slow to send large \
             lists"
        )),
        ReadError::Failed(e) => transport_error(e.cause()),
    }
}

/// How far reading may run ahead of decoding, in bytes of body waiting for the decoder. A few
/// milliseconds of decoding keeps the decoder busy while the next bytes arrive; more is only
/// memory held at the moment the cache is fullest. (A bound in chunks, as before, let up to
/// 16 MiB wait: 64 chunks of up to 256 KiB from a fast server.)
const READ_AHEAD_BYTES: u32 = 1024 * 1024;

/// Decodes a page from a body read whole: inline when small, on the blocking pool otherwise.
async fn decode_body<K, F>(
    body: Bytes,
    mut decoder: PageDecoder<K, F>,
) -> Result<ObjectList<K>, Error>
where
    K: Object,
    F: FnOnce(&str) + Send + 'static,
{
    if body.len() <= INLINE_DECODE_MAX {
        decoder.push(&body)?;
        return decoder.finish();
    }
    tokio::task::spawn_blocking(move || {
        decoder.push(&body)?;
        decoder.finish()
    })
    .await
    .map_err(|join| Error::Decode(format!("list: decoding task: {join}")))?
}

/// Decodes a page from a response body while it arrives: a task on the blocking pool decodes
/// the chunks this one reads, so decoding overlaps the transfer and the body is never held whole.
async fn decode_response<K, F>(
    mut body: BodyReader,
    resource: &str,
    mut decoder: PageDecoder<K, F>,
) -> Result<ObjectList<K>, Error>
where
    K: Object,
    F: FnOnce(&str) + Send + 'static,
{
    if body.content_length().is_some_and(|len| len <= INLINE_DECODE_MAX as u64) {
        // The length is the body's: the transfer fails rather than send more.
        let (whole, outcome) = body.read_prefix(INLINE_DECODE_MAX).await;
        outcome.map_err(|e| list_read_error(resource, e))?;
        return decode_body(whole, decoder).await;
    }
    // Each chunk travels with its share of the read-ahead budget, given back once decoded.
    let ahead = Arc::new(Semaphore::new(READ_AHEAD_BYTES as usize));
    let (chunks, mut pending) = mpsc::unbounded_channel::<(Bytes, OwnedSemaphorePermit)>();
    let decoding = tokio::task::spawn_blocking(move || {
        while let Some((chunk, budget)) = pending.blocking_recv() {
            decoder.push(&chunk)?;
            drop(budget);
        }
        decoder.finish()
    });
    let mut read = Ok(());
    loop {
        // A closed queue: the decoder stopped at an error, which it returns below; reading on
        // (or waiting for budget a stranded chunk holds) would be for nothing.
        let chunk = tokio::select! {
            () = chunks.closed() => break,
            chunk = body.next() => chunk,
        };
        let chunk = match chunk {
            Ok(None) => break,
            Err(e) => {
                read = Err(list_read_error(resource, e));
                break;
            }
            Ok(Some(chunk)) => chunk,
        };
        // A chunk larger than the whole budget waits for all of it.
        let size =
            u32::try_from(chunk.len()).map_or(READ_AHEAD_BYTES, |len| len.min(READ_AHEAD_BYTES));
        let budget = tokio::select! {
            () = chunks.closed() => break,
            budget = Arc::clone(&ahead).acquire_many_owned(size) => budget,
        };
        // The semaphore is never closed.
        let Ok(budget) = budget else { break };
        if chunks.send((chunk, budget)).is_err() {
            break;
        }
    }
    drop(chunks);
    let decoded =
        decoding.await.map_err(|join| Error::Decode(format!("list: decoding task: {join}")))?;
    // A broken transfer also leaves the decoder with a truncated list; the transfer is the cause.
    read?;
    decoded
}

/// Why reading a chunk of a watch body failed.
#[derive(Debug)]
pub(crate) enum ChunkError {
    /// The connection ended without the body's proper end: harmless between events (the server
    /// or a proxy closed the watch), a cut-off event otherwise.
    Eof(String),
    /// Any other failure.
    Failed(Error),
}

impl ChunkError {
    fn from_transport(error: &TransportError) -> Self {
        let error = error.cause();
        let message = cause_chain(error);
        // client-go's net.IsProbableEOF: a reset, a broken pipe or an HTTP/2 GOAWAY ends a watch
        // like a close does, and the reflector watches again from its last version.
        let probable_eof = [
            std::io::ErrorKind::UnexpectedEof,
            std::io::ErrorKind::ConnectionReset,
            std::io::ErrorKind::ConnectionAborted,
            std::io::ErrorKind::BrokenPipe,
        ]
        .into_iter()
        .any(|kind| io_kind_in_chain(error, kind));
        if probable_eof
            || message.contains("connection closed before message completed")
            || message.contains("GOAWAY")
            || message.contains("connection reset")
        {
            Self::Eof(message)
        } else {
            Self::Failed(transport_error(error))
        }
    }
}

/// The events of one watch body, ending at its end, at a transport error, or when no bytes
/// arrived for `idle`.
pub(crate) fn watch_stream<K, S>(
    body: S,
    decoder: WatchDecoder<K>,
    idle: Duration,
) -> WatchStream<K>
where
    K: Object,
    S: Stream<Item = Result<Bytes, ChunkError>> + Send + 'static,
{
    let state = WatchState {
        body: Box::pin(body),
        decoder,
        ready: Decoded::new(),
        idle,
        deadline: Box::pin(tokio::time::sleep(idle)),
        done: false,
    };
    // Fused: polling an ended watch again answers `None` instead of panicking.
    futures::stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item, state))
    })
    .fuse()
    .boxed()
}

struct WatchState<K, S> {
    body: std::pin::Pin<Box<S>>,
    decoder: WatchDecoder<K>,
    ready: Decoded<K>,
    idle: Duration,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    done: bool,
}

impl<K: Object, S: Stream<Item = Result<Bytes, ChunkError>>> WatchState<K, S> {
    async fn next(&mut self) -> Option<Result<informer_runtime::listwatch::WatchEvent<K>, Error>> {
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            tokio::select! {
                biased;
                chunk = self.body.next() => self.on_chunk(chunk),
                () = &mut self.deadline => {
                    self.done = true;
                    let idle = self.idle;
                    // Ended like a server-side timeout: the reflector watches again from its
                    // last version, on a fresh connection if this one is dead. Mid-event, the
                    // event is lost: that is an error.
                    tracing::debug!(resource = %self.decoder.resource(), ?idle, "watch idle; ending it");
                    if self.decoder.has_partial_line() {
                        self.ready.push_back(Err(Error::Transport(format!(
                            "watch idle for more than {idle:?} in the middle of an event"
                        ))));
                    }
                }
            }
        }
    }

    fn on_chunk(&mut self, chunk: Option<Result<Bytes, ChunkError>>) {
        match chunk {
            Some(Ok(bytes)) => {
                // `idle` may be huge (a watch timeout near `Duration::MAX`): saturate, never panic.
                let now = tokio::time::Instant::now().into_std();
                self.deadline.as_mut().reset(informer_runtime::clock::later(now, self.idle).into());
                self.decoder.feed(&bytes, &mut self.ready);
            }
            Some(Err(ChunkError::Eof(message))) => {
                self.done = true;
                if self.decoder.has_partial_line() {
                    let cut = format!("{message} (the last event was cut off)");
                    self.ready.push_back(Err(Error::Transport(cut)));
                } else {
                    tracing::debug!(resource = %self.decoder.resource(), message, "watch connection closed between events");
                }
            }
            Some(Err(ChunkError::Failed(error))) => {
                self.done = true;
                self.ready.push_back(Err(error));
            }
            None => {
                self.done = true;
                if let Err(error) = self.decoder.finish() {
                    self.ready.push_back(Err(error));
                }
            }
        }
    }
}

/// The lister-watcher constructor lives with the lister-watcher, so that the client's own file
/// knows nothing of list and watch.
impl Client {
    /// Lists and watches `K` over HTTP, in `namespace` when given (for namespaced kinds; it is
    /// ignored for cluster-scoped ones), across all namespaces otherwise.
    ///
    /// Lists are paged by the caller (the reflector); each page's continue token starts the
    /// fetch of the next page while the current one is decoded. Watches end by themselves when
    /// no bytes arrive for their timeout plus 30 seconds. Objects are decoded without their
    /// `metadata.managedFields` (never allocated) unless the request's
    /// [`keep_managed_fields`](informer_runtime::listwatch::ListOptions::keep_managed_fields) is set.
    ///
    /// ```no_run
    /// use informer_client::Client;
    /// use informer_runtime::listwatch::ListOptions;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// # async fn run(client: Client) -> Result<(), informer_runtime::listwatch::Error> {
    /// let pods = client.lister_watcher::<Pod>(Some("default"));
    /// let page = pods.list(&ListOptions { limit: Some(100), ..ListOptions::default() }).await?;
    /// println!("{} pods at version {}", page.items.len(), page.resource_version);
    /// # Ok(())
    /// # }
    /// ```
    #[doc(alias = "ListWatch")]
    #[must_use]
    pub fn lister_watcher<K: Resource>(
        &self,
        namespace: Option<&str>,
    ) -> Arc<dyn ListerWatcher<K>> {
        Arc::new(HttpListerWatcher::<K>::new(self.clone(), namespace))
    }

    /// Lists and watches `gvr`, a resource known only at run time, as
    /// [`DynamicObject`]s, over `scope` (see [`DynamicScope`]).
    ///
    /// Its kind and scope come from the server's discovery, read on the first list or watch
    /// (and again after a failure, so that an informer of a CRD not installed yet syncs once it
    /// is). With `metadata_only`, the server sends each object's metadata alone (client-go's
    /// `metadatainformer`); the objects' `kind` is then `PartialObjectMetadata`.
    #[must_use]
    pub fn dynamic_lister_watcher(
        &self,
        gvr: &GroupVersionResource,
        scope: DynamicScope<'_>,
        metadata_only: bool,
    ) -> Arc<dyn ListerWatcher<DynamicObject>> {
        Arc::new(HttpListerWatcher::dynamic(self.clone(), scope, gvr.clone(), metadata_only))
    }
}

impl Client {
    /// A lister of `K` that fetches no page ahead, for a caller that asks for pages one by one
    /// and may stop after any ([`Client::list`]).
    pub(crate) fn page_lister<K: Resource>(
        &self,
        namespace: Option<&str>,
    ) -> Arc<dyn ListerWatcher<K>> {
        let mut lister = HttpListerWatcher::<K>::new(self.clone(), namespace);
        lister.prefetch_pages = false;
        Arc::new(lister)
    }
}

impl ListWatchSource for Client {
    fn lister_watcher<K: Resource>(&self, namespace: Option<&str>) -> Arc<dyn ListerWatcher<K>> {
        Client::lister_watcher(self, namespace)
    }

    fn dynamic_lister_watcher(
        &self,
        gvr: &GroupVersionResource,
        scope: DynamicScope<'_>,
        metadata_only: bool,
    ) -> Option<Arc<dyn ListerWatcher<DynamicObject>>> {
        Some(Client::dynamic_lister_watcher(self, gvr, scope, metadata_only))
    }
}

#[cfg(test)]
mod tests {
    use futures::channel::mpsc;
    use k8s_openapi::api::core::v1::Pod;
    use tokio::time::Instant;

    use super::*;
    use informer_runtime::listwatch::WatchEvent;

    type Sender = mpsc::UnboundedSender<Result<Bytes, ChunkError>>;

    const BOOKMARK: &[u8] =
        b"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"5\"}}}\n";

    fn stream(idle: Duration) -> (Sender, WatchStream<Pod>) {
        let (tx, rx) = mpsc::unbounded();
        (tx, watch_stream(rx, WatchDecoder::new(Arc::new(Target::of::<Pod>()), false), idle))
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_watch_ends_at_its_idle_deadline() {
        let (tx, mut watch) = stream(Duration::from_secs(60));
        let start = Instant::now();
        tx.unbounded_send(Ok(Bytes::from_static(BOOKMARK))).unwrap();
        assert!(matches!(watch.next().await, Some(Ok(WatchEvent::Bookmark(_)))));
        assert!(watch.next().await.is_none(), "an idle watch just ends");
        assert_eq!(start.elapsed(), Duration::from_secs(60));
        assert!(watch.next().await.is_none());
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn any_bytes_push_the_idle_deadline_back() {
        let (tx, mut watch) = stream(Duration::from_secs(60));
        let start = Instant::now();
        let feeder = tokio::spawn(async move {
            // Half an event, then the rest 50 s later: each chunk counts as life.
            tokio::time::sleep(Duration::from_secs(50)).await;
            tx.unbounded_send(Ok(Bytes::from_static(&BOOKMARK[..10]))).unwrap();
            tokio::time::sleep(Duration::from_secs(50)).await;
            tx.unbounded_send(Ok(Bytes::from_static(&BOOKMARK[10..]))).unwrap();
            tx
        });
        assert!(matches!(watch.next().await, Some(Ok(WatchEvent::Bookmark(_)))));
        assert_eq!(start.elapsed(), Duration::from_secs(100));
        assert!(watch.next().await.is_none(), "an idle watch just ends");
        assert_eq!(start.elapsed(), Duration::from_secs(160));
        drop(feeder.await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_idle_in_the_middle_of_an_event_is_an_error() {
        let (tx, mut watch) = stream(Duration::from_secs(60));
        tx.unbounded_send(Ok(Bytes::from_static(&BOOKMARK[..10]))).unwrap();
        assert!(
            matches!(watch.next().await, Some(Err(Error::Transport(m))) if m.contains("middle of an event"))
        );
        assert!(watch.next().await.is_none());
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_closed_between_events_ends_the_stream_quietly() {
        let (tx, mut watch) = stream(Duration::from_secs(60));
        tx.unbounded_send(Ok(Bytes::from_static(BOOKMARK))).unwrap();
        tx.unbounded_send(Err(ChunkError::Eof("unexpected EOF".to_owned()))).unwrap();
        assert!(matches!(watch.next().await, Some(Ok(WatchEvent::Bookmark(_)))));
        assert!(watch.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_closed_inside_an_event_is_a_transport_error() {
        let (tx, mut watch) = stream(Duration::from_secs(60));
        tx.unbounded_send(Ok(Bytes::from_static(&BOOKMARK[..20]))).unwrap();
        tx.unbounded_send(Err(ChunkError::Eof("unexpected EOF".to_owned()))).unwrap();
        let Some(Err(Error::Transport(message))) = watch.next().await else {
            panic!("expected an error")
        };
        assert_eq!(message, "unexpected EOF (the last event was cut off)");
        assert!(watch.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_ending_inside_an_event_is_a_decode_error() {
        let (tx, mut watch) = stream(Duration::from_secs(60));
        tx.unbounded_send(Ok(Bytes::from_static(&BOOKMARK[..20]))).unwrap();
        drop(tx);
        assert!(matches!(watch.next().await, Some(Err(Error::Decode(_)))));
        assert!(watch.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn other_body_errors_end_the_stream_with_them() {
        let (tx, mut watch) = stream(Duration::from_secs(60));
        tx.unbounded_send(Err(ChunkError::Failed(Error::Transport("reset".to_owned())))).unwrap();
        assert!(matches!(watch.next().await, Some(Err(Error::Transport(m))) if m == "reset"));
        assert!(watch.next().await.is_none());
    }
}

#[cfg(test)]
mod read_ahead_tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::FutureExt;
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::transport::Response;

    /// The size of every item chunk: 16 of them fill the read-ahead budget.
    const CHUNK: usize = 64 * 1024;
    const ITEMS: usize = 40;
    const HEAD: &[u8] = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1","continue":"t"},"items":["#;

    /// A streamed list response of [`ITEMS`] chunks of one pod each (item 0 being `first`),
    /// counting the chunks the client has pulled from it.
    fn list_response(first: &str, pulled: &Arc<AtomicUsize>) -> Response {
        let items = (0..ITEMS).map(|i| {
            let mut item = if i == 0 {
                first.as_bytes().to_vec()
            } else {
                format!(r#"{{"metadata":{{"name":"p{i}","namespace":"ns"}}}}"#).into_bytes()
            };
            if i + 1 < ITEMS {
                item.push(b',');
            }
            item.resize(CHUNK, b' ');
            Bytes::from(item)
        });
        let parts: Vec<Bytes> = std::iter::once(Bytes::from_static(HEAD))
            .chain(items)
            .chain(std::iter::once(Bytes::from_static(b"]}")))
            .collect();
        let pulled = Arc::clone(pulled);
        let body = futures::stream::iter(parts).map(move |part| {
            pulled.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::io::Error>(part)
        });
        Response::ok_with_body(body)
    }

    /// A list body decoded as the lister-watcher decodes a response it did not prefetch.
    async fn decode_response(
        response: Response,
        decoder: PageDecoder<Pod, impl FnOnce(&str) + Send + 'static>,
    ) -> Result<ObjectList<Pod>, Error> {
        let body = BodyReader::new(response, Duration::from_secs(60));
        super::decode_response(body, "pods", decoder).await
    }

    /// A decoder that stops, inside its first chunk, until `gate` opens: the continue token is
    /// in the head, so no chunk's budget comes back before then.
    fn gated_decoder(
        gate: std::sync::mpsc::Receiver<()>,
    ) -> PageDecoder<Pod, impl FnOnce(&str) + Send + 'static> {
        PageDecoder::new(Arc::new(Target::of::<Pod>()), false, move |_: &str| {
            let _ = gate.recv();
        })
    }

    #[tokio::test]
    async fn reading_stops_a_budget_ahead_of_a_stalled_decoder() {
        let pulled = Arc::new(AtomicUsize::new(0));
        let first = r#"{"metadata":{"name":"p0","namespace":"ns"}}"#;
        let (open, gate) = std::sync::mpsc::channel();
        let decoding = decode_response(list_response(first, &pulled), gated_decoder(gate));
        let mut decoding = std::pin::pin!(decoding);
        for _ in 0..100 {
            assert!(decoding.as_mut().now_or_never().is_none());
        }
        // The head and the 15 item chunks that fit in the budget beside it, and the one
        // waiting for budget; of 42.
        let fit = (READ_AHEAD_BYTES as usize - HEAD.len()) / CHUNK;
        assert_eq!(fit, 15);
        assert_eq!(pulled.load(Ordering::SeqCst), 1 + fit + 1);

        open.send(()).unwrap();
        let list = decoding.await.unwrap();
        assert_eq!(list.items.len(), ITEMS);
        assert_eq!(list.continue_token.as_deref(), Some("t"));
        assert_eq!(pulled.load(Ordering::SeqCst), ITEMS + 2);
    }

    #[tokio::test]
    async fn a_decoder_that_fails_while_reading_waits_for_budget_ends_the_read() {
        let pulled = Arc::new(AtomicUsize::new(0));
        let (open, gate) = std::sync::mpsc::channel();
        let decoding =
            decode_response(list_response(r#"{"metadata":7}"#, &pulled), gated_decoder(gate));
        let mut decoding = std::pin::pin!(decoding);
        assert!(decoding.as_mut().now_or_never().is_none());
        open.send(()).unwrap();
        let outcome = tokio::time::timeout(Duration::from_secs(30), decoding).await;
        let error = outcome.expect("the read ended").unwrap_err();
        assert!(error.to_string().contains("item 0"), "{error}");
        assert!(pulled.load(Ordering::SeqCst) < ITEMS + 2);
    }
}
