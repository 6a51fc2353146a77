//! The reflector: lists, then watches, and pushes every change into a store.
//!
//! A [`Reflector`] keeps a [`ReflectorStore`] (normally the informer's
//! [`DeltaFifo`](crate::delta_fifo::DeltaFifo)) equal to the server's state of one resource:
//!
//! 1. **List** at resourceVersion `"0"` the first time (served from the API server's watch
//!    cache), later at the last version it saw; a list answered 410 or "too large resource
//!    version" is retried at once with `""` (a consistent read). Pages of 500 when listing at
//!    `""` or `"0"`; a continue page that expires falls back to one full list at the same version.
//!    The store is replaced with the result, and only with a complete list: a list that fails
//!    part-way changes nothing. For a store that holds its objects compactly, each item waits
//!    for the end of the list in compact form (its JSON) instead of decoded, and is decoded
//!    as the store has room for it, so that the list is never held decoded whole; for an
//!    informer's compact cache, in the cache's own form, which it then stores as it is
//!    (`staged_list`), and, read over HTTP, as the server sent it, decoded only then
//!    (`raw_item`).
//! 2. **Watch** from the listed version, bookmarks allowed, with a random server timeout in
//!    `[min_watch_timeout, 2 × min_watch_timeout)` so that informers restarted together do not
//!    relist together. Every event, bookmarks included, advances the last seen version.
//! 3. When a watch ends, either **watch again** from the last version (clean close, timeout,
//!    after a backoff on 429 or connection refused) or **back off and relist** (410, errors,
//!    a watch that closed within a second with no events).
//!
//! List failures, and watch failures other than the normal ends (a timeout, a close, 410,
//! throttling), go to the [watch-error handler](Reflector::with_watch_error_handler): whatever
//! a server sends, broken or hostile, is reported there and followed by that recovery, and the
//! store keeps its last good state meanwhile. A list whose continue tokens come round again
//! fails instead of paging forever.
//!
//! While watching, it replays the cache as `Sync` deltas every resync period (never calling the
//! server). With [`ReflectorConfig::streaming_list`] it replaces step 1 by a streaming list
//! (`sendInitialEvents`), with a bounded wait and a fallback to a plain list.
//!
//! Time and randomness are injectable ([`Reflector::with_clock`], [`Reflector::with_random`]),
//! so the whole state machine runs in virtual time in tests.
//!
//! **Who it is for.** Programs set a reflector's options ([`ReflectorConfig`],
//! [`BackoffConfig`]) through the factory and the informer, and read its failures
//! ([`ReflectorError`]) in a watch-error handler; the informer runs the reflector. [`Reflector`]
//! and [`ReflectorStore`] are public for those who keep a store of their own in step with the
//! server, as client-go's `NewReflector` and kube-runtime's `reflector` are.

mod backoff;
mod list;
mod raw_item;
mod reflector_store;
mod staged_list;
mod state;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub use backoff::BackoffConfig;
pub use reflector_store::ReflectorStore;

use self::backoff::Backoff;
use self::state::{Next, WatchEnd, next_after};
use crate::clock::{Random, SharedClock, TokioClock};
use crate::instrument::{InformerObserver, WatchRestart};
use crate::listwatch::{
    Error, ListTweak, ListerWatcher, ResourceVersionMatch, TweakListOptions, WatchEvent,
    WatchOptions, WatchStream,
};
use crate::resource::{Object, Resource, resource_version};
use crate::store::Indexer;

use self::staged_list::StagedList;

/// A list or watch failure, as handed to the [watch-error handler](Reflector::with_watch_error_handler).
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReflectorError {
    /// Listing failed; the reflector backs off and lists again.
    #[error("failed to list {resource}: {source}")]
    List {
        /// The resource, as `plural.group`.
        resource: String,
        /// What the list returned.
        #[source]
        source: Error,
    },
    /// A watch failed: opening it failed with a non-retriable error, or its stream broke or
    /// carried what the protocol does not allow (a line that is not an event, an object too
    /// large, an error status); the reflector backs off and relists. Also an event the
    /// reflector skipped (an object of another kind), after which the watch goes on.
    ///
    /// Not reported: a watch's normal ends (its timeout, a closed connection between events,
    /// `410 Expired` when history was compacted) and throttling (429, retried in place).
    #[error("failed to watch {resource}: {source}")]
    Watch {
        /// The resource, as `plural.group`.
        resource: String,
        /// What the watch returned.
        #[source]
        source: Error,
    },
}

impl ReflectorError {
    /// The underlying list/watch error.
    #[must_use]
    pub fn error(&self) -> &Error {
        match self {
            Self::List { source, .. } | Self::Watch { source, .. } => source,
        }
    }
}

/// Called with every error that ends a list-and-watch round.
pub type WatchErrorHandler = Arc<dyn Fn(&ReflectorError) + Send + Sync>;

/// Options of a [`Reflector`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReflectorConfig {
    /// How often to replay the cache as `Sync` deltas; zero for never.
    pub resync_period: Duration,
    /// Page size of lists. `None`: client-go's rule, 500 when listing at `""` or `"0"` (or when the
    /// server paginated the first list), and unpaginated at a given version so the API server can
    /// answer from its watch cache.
    pub page_size: Option<u32>,
    /// The server-side watch timeout is drawn from `[min, 2 × min)`; values under 5 minutes are
    /// raised to 5 minutes, as in client-go.
    pub min_watch_timeout: Duration,
    /// Added to the server-side timeout to make the client-side deadline of a watch.
    pub watch_deadline_margin: Duration,
    /// Label selector applied to every list and watch.
    pub label_selector: Option<String>,
    /// Field selector applied to every list and watch.
    pub field_selector: Option<String>,
    /// Changes the selectors of every list and watch request (client-go's
    /// `tweakListOptions`): it starts from `label_selector` and `field_selector`, and may
    /// change them only (see [`ListTweak`]).
    pub tweak_list_options: Option<TweakListOptions>,
    /// Use a streaming list (`sendInitialEvents=true`) instead of a paginated list.
    pub streaming_list: bool,
    /// How long a streaming list may take to deliver its initial-events-end bookmark before the
    /// reflector falls back to a plain list (client-go waits forever).
    pub streaming_list_timeout: Duration,
    /// Backoff between failed attempts.
    pub backoff: BackoffConfig,
    /// Keep `metadata.managedFields` in the objects listed and watched; off by default, see
    /// [`ListOptions::keep_managed_fields`](crate::listwatch::ListOptions::keep_managed_fields).
    pub keep_managed_fields: bool,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        Self {
            resync_period: Duration::ZERO,
            page_size: None,
            // client-go's minWatchTimeout.
            min_watch_timeout: Duration::from_secs(5 * 60),
            watch_deadline_margin: Duration::from_secs(30),
            label_selector: None,
            field_selector: None,
            tweak_list_options: None,
            // Off by default: not every server or proxy supports it.
            streaming_list: false,
            streaming_list_timeout: Duration::from_secs(60),
            backoff: BackoffConfig::default(),
            // client-go recommends dropping it in informers; here it is not even decoded.
            keep_managed_fields: false,
        }
    }
}

impl ReflectorConfig {
    /// Sets [`resync_period`](Self::resync_period).
    #[must_use]
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = period;
        self
    }

    /// Sets [`page_size`](Self::page_size).
    #[must_use]
    pub fn page_size(mut self, size: u32) -> Self {
        self.page_size = Some(size);
        self
    }

    /// Sets [`min_watch_timeout`](Self::min_watch_timeout).
    #[must_use]
    pub fn min_watch_timeout(mut self, timeout: Duration) -> Self {
        self.min_watch_timeout = timeout;
        self
    }

    /// Sets [`label_selector`](Self::label_selector).
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }

    /// Sets [`field_selector`](Self::field_selector).
    #[must_use]
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_owned());
        self
    }

    /// Sets [`tweak_list_options`](Self::tweak_list_options).
    ///
    /// ```
    /// use informer_runtime::reflector::ReflectorConfig;
    /// // Only this replica's shard (see the factory module's "Sharding across replicas").
    /// let config = ReflectorConfig::default().tweak_list_options(|o| {
    ///     o.and_labels("shard=1");
    /// });
    /// ```
    #[doc(alias = "WithTweakListOptions")]
    #[must_use]
    pub fn tweak_list_options(
        mut self,
        tweak: impl Fn(&mut ListTweak) + Send + Sync + 'static,
    ) -> Self {
        self.tweak_list_options = Some(TweakListOptions::new(tweak));
        self
    }

    /// The selectors of a list or watch request: the configured ones, tweaked.
    fn selectors(&self) -> ListTweak {
        let mut selectors = ListTweak {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
        };
        if let Some(tweak) = &self.tweak_list_options {
            tweak.apply(&mut selectors);
        }
        selectors
    }

    /// Turns on [`streaming_list`](Self::streaming_list).
    #[must_use]
    pub fn streaming_list(mut self, enabled: bool) -> Self {
        self.streaming_list = enabled;
        self
    }

    /// Sets [`streaming_list_timeout`](Self::streaming_list_timeout).
    #[must_use]
    pub fn streaming_list_timeout(mut self, timeout: Duration) -> Self {
        self.streaming_list_timeout = timeout;
        self
    }

    /// Sets [`backoff`](Self::backoff).
    #[must_use]
    pub fn backoff(mut self, backoff: BackoffConfig) -> Self {
        self.backoff = backoff;
        self
    }

    /// Sets [`keep_managed_fields`](Self::keep_managed_fields).
    ///
    /// ```
    /// use informer_runtime::reflector::ReflectorConfig;
    /// let config = ReflectorConfig::default().keep_managed_fields(true);
    /// assert!(config.keep_managed_fields);
    /// ```
    #[must_use]
    pub fn keep_managed_fields(mut self, keep: bool) -> Self {
        self.keep_managed_fields = keep;
        self
    }
}

#[derive(Default)]
struct SyncState {
    last_sync_resource_version: String,
    /// The last version can no longer be listed (410 or too large): list at `""` next.
    resource_version_unavailable: bool,
    /// The first list at `"0"` came back paginated: the server does not serve it from a cache.
    paginated_result: bool,
    /// When lists or watches started failing, with no list completed and no watch opened
    /// since (on the reflector's clock).
    failing_since: Option<Instant>,
    /// What the latest of those failures said.
    last_error: Option<String>,
}

/// How a reflector's lists and watches are doing ([`Reflector::health`]): what a readiness
/// check reads, since a reflector retries every failure and never gives up on its own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchHealth {
    /// How long lists or watches have been failing, with no list completed and no watch
    /// opened since; `None` while they work.
    pub failing_for: Option<Duration>,
    /// What the latest of those failures said; `None` while they work.
    pub last_error: Option<String>,
}

impl WatchHealth {
    /// The worse of two: the one failing longer.
    #[must_use]
    pub(crate) fn worse(self, other: Self) -> Self {
        if other.failing_for > self.failing_for { other } else { self }
    }
}

/// Lists and watches one resource into a store; see the [module documentation](self).
pub struct Reflector<K> {
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    store: Arc<dyn ReflectorStore<K>>,
    config: ReflectorConfig,
    resource: String,
    clock: SharedClock,
    random: Random,
    should_resync: Option<Arc<dyn Fn() -> bool + Send + Sync>>,
    watch_error_handler: Option<WatchErrorHandler>,
    state: Mutex<SyncState>,
    backoff: Mutex<Backoff>,
    /// Metrics, when the informer has them.
    observer: Option<Arc<dyn InformerObserver>>,
    /// Whether a list completed already: the next ones are relists.
    listed: std::sync::atomic::AtomicBool,
    /// The compact cache the store feeds, whose codec encodes its lists' items (see
    /// `staged_list`); `None` for any other store.
    compact_cache: Option<Indexer<K>>,
    /// Whether a compact list may keep each item as the server sent it (see `staged_list`):
    /// only where `K` holds all the server sends for an object (whole objects, or the metadata
    /// a metadata-only list sends), never for a view, whose cache would then keep what the
    /// view leaves out.
    items_as_sent: bool,
}

impl<K: Resource> Reflector<K> {
    /// A reflector that keeps `store` in step with what `lister_watcher` serves.
    pub fn new(
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        store: Arc<dyn ReflectorStore<K>>,
        config: ReflectorConfig,
    ) -> Self {
        Self::named(lister_watcher, store, config, crate::resource::resource_name::<K>())
            .with_items_as_sent(crate::resource::holds_all_it_is_sent::<K>())
    }
}

impl<K: Object> Reflector<K> {
    /// [`new`](Self::new), for any object type: `resource` names it in logs.
    pub(crate) fn named(
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        store: Arc<dyn ReflectorStore<K>>,
        config: ReflectorConfig,
        resource: String,
    ) -> Self {
        let clock: SharedClock = Arc::new(TokioClock);
        let random = Random::default();
        let backoff = Backoff::new(config.backoff.clone(), Arc::clone(&clock), random.clone());
        Self {
            lister_watcher,
            store,
            config,
            resource,
            clock,
            random,
            should_resync: None,
            watch_error_handler: None,
            state: Mutex::new(SyncState::default()),
            backoff: Mutex::new(backoff),
            observer: None,
            listed: std::sync::atomic::AtomicBool::new(false),
            compact_cache: None,
            items_as_sent: false,
        }
    }

    /// Encodes the items of a compact list with the codec of `cache`, the compact cache the
    /// store feeds, which then takes their forms as they are (see `staged_list`).
    #[must_use]
    pub(crate) fn with_compact_cache(mut self, cache: Option<Indexer<K>>) -> Self {
        self.compact_cache = cache;
        self
    }

    /// Lets a compact list keep each item as the server sent it, when `K` holds all the server
    /// sends for an object (see the field's documentation); off unless set.
    #[must_use]
    pub(crate) fn with_items_as_sent(mut self, as_sent: bool) -> Self {
        self.items_as_sent = as_sent;
        self
    }

    /// Records events, lists and watch restarts for metrics.
    #[must_use]
    pub(crate) fn with_observer(mut self, observer: Option<Arc<dyn InformerObserver>>) -> Self {
        self.observer = observer;
        self
    }

    /// A list (plain or streaming) completed.
    fn observe_listed(&self) {
        self.note_working();
        let relist = self.listed.swap(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(observer) = &self.observer {
            observer.listed(relist);
        }
    }

    /// A watch ended: why, unless the reflector is stopping.
    fn observe_watch_end(&self, end: &WatchEnd) {
        let Some(observer) = &self.observer else { return };
        let reason = match end {
            WatchEnd::Stopped | WatchEnd::InitialEventsEnd => return,
            WatchEnd::Closed { .. } => WatchRestart::Closed,
            WatchEnd::DeadlineExceeded => WatchRestart::Timeout,
            WatchEnd::Failed(e) if e.is_expired() => WatchRestart::Expired,
            WatchEnd::Failed(e) if e.is_too_many_requests() => WatchRestart::Throttled,
            WatchEnd::Failed(_) => WatchRestart::Error,
        };
        observer.watch_restarted(reason);
    }

    /// Uses `clock` for backoff, resync and watch deadlines.
    #[must_use]
    pub fn with_clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self.reset_backoff();
        self
    }

    /// Uses `random` for jitter and watch timeouts.
    #[must_use]
    pub fn with_random(mut self, random: Random) -> Self {
        self.random = random;
        self.reset_backoff();
        self
    }

    /// Asks `should_resync` at every resync tick whether to replay the cache (the informer asks
    /// whether any handler is due).
    #[must_use]
    pub fn with_should_resync(
        mut self,
        should_resync: Arc<dyn Fn() -> bool + Send + Sync>,
    ) -> Self {
        self.should_resync = Some(should_resync);
        self
    }

    /// Reports list and watch errors to `handler` instead of logging them.
    #[must_use]
    pub fn with_watch_error_handler(mut self, handler: WatchErrorHandler) -> Self {
        self.watch_error_handler = Some(handler);
        self
    }

    fn reset_backoff(&mut self) {
        let backoff =
            Backoff::new(self.config.backoff.clone(), Arc::clone(&self.clock), self.random.clone());
        self.backoff = Mutex::new(backoff);
    }

    /// The resource version of the last list or event seen; `""` before the first list.
    #[must_use]
    pub fn last_sync_resource_version(&self) -> String {
        self.state.lock().last_sync_resource_version.clone()
    }

    /// Lists and watches until `cancel` fires, backing off between rounds.
    ///
    /// Errors never end it: they go to the watch-error handler (or the log) and the reflector
    /// tries again after a backoff.
    pub async fn run(&self, cancel: CancellationToken) {
        tracing::debug!(resource = %self.resource, "reflector started");
        loop {
            if cancel.is_cancelled() {
                break;
            }
            if let Err(error) = self.list_and_watch(&cancel).await {
                self.report(&error);
            }
            if cancel.is_cancelled() {
                break;
            }
            let delay = self.backoff.lock().next_delay();
            tokio::select! {
                () = cancel.cancelled() => break,
                () = self.clock.sleep(delay) => {}
            }
        }
        tracing::debug!(resource = %self.resource, "reflector stopped");
    }

    /// How lists and watches are doing: whether, and for how long, they have been failing.
    #[must_use]
    pub fn health(&self) -> WatchHealth {
        let state = self.state.lock();
        WatchHealth {
            failing_for: state
                .failing_since
                .map(|since| self.clock.now().saturating_duration_since(since)),
            last_error: state.last_error.clone(),
        }
    }

    /// A list or watch failed (or was refused): the reflector is failing from now, unless it
    /// was already.
    fn note_failure(&self, error: &dyn std::fmt::Display) {
        let now = self.clock.now();
        let mut state = self.state.lock();
        state.failing_since.get_or_insert(now);
        state.last_error = Some(error.to_string());
    }

    /// A list completed or a watch opened: whatever failed before works again.
    fn note_working(&self) {
        let mut state = self.state.lock();
        state.failing_since = None;
        state.last_error = None;
    }

    fn report(&self, error: &ReflectorError) {
        self.note_failure(error);
        match &self.watch_error_handler {
            Some(handler) => handler(error),
            None if error.error().is_expired() => {
                tracing::debug!(resource = %self.resource, %error, "watch closed");
            }
            None => tracing::warn!(resource = %self.resource, %error, "list and watch failed"),
        }
    }

    /// One round: list (or stream the initial state), then watch until a relist is needed.
    ///
    /// Returns `Ok` when the round ended in a way that calls for a relist, or on cancellation.
    ///
    /// # Errors
    ///
    /// The list failed, or opening a watch failed with an error that is not retried in place,
    /// or a watch stream failed with an error other than `410 Expired` (see
    /// [`ReflectorError::Watch`]).
    #[doc(alias = "ListAndWatch")]
    pub async fn list_and_watch(&self, cancel: &CancellationToken) -> Result<(), ReflectorError> {
        if cancel.is_cancelled() {
            return Ok(());
        }
        let mut stream = None;
        if self.config.streaming_list {
            match self.watch_list(cancel).await {
                Ok(Some(s)) => stream = Some(s),
                Ok(None) => return Ok(()),
                Err(error) => {
                    tracing::info!(resource = %self.resource, %error, "streaming list failed; falling back to list");
                }
            }
        }
        if stream.is_none() {
            let span = tracing::debug_span!("list", resource = %self.resource);
            let listed = self.list(cancel).instrument(span).await.map_err(|source| {
                ReflectorError::List { resource: self.resource.clone(), source }
            })?;
            if !listed {
                return Ok(());
            }
        }
        self.observe_listed();
        let mut resync = ResyncTimer::new(self);
        self.watch(stream, &mut resync, cancel).await
    }

    /// `""` after a 410 or a too-large version; `"0"` before anything was listed; else the last
    /// version seen.
    fn relist_resource_version(&self) -> String {
        let state = self.state.lock();
        if state.resource_version_unavailable {
            String::new()
        } else if state.last_sync_resource_version.is_empty() {
            "0".to_owned()
        } else {
            state.last_sync_resource_version.clone()
        }
    }

    fn rewatch_resource_version(&self) -> String {
        let state = self.state.lock();
        if state.resource_version_unavailable {
            String::new()
        } else {
            state.last_sync_resource_version.clone()
        }
    }

    fn set_last_sync_resource_version(&self, rv: &str) {
        let mut state = self.state.lock();
        if state.last_sync_resource_version != rv {
            rv.clone_into(&mut state.last_sync_resource_version);
        }
    }

    fn page_size_for(&self, resource_version: &str) -> Option<u32> {
        const DEFAULT_PAGE_SIZE: u32 = 500;
        if let Some(size) = self.config.page_size {
            return Some(size).filter(|s| *s > 0);
        }
        if self.state.lock().paginated_result
            || resource_version.is_empty()
            || resource_version == "0"
        {
            Some(DEFAULT_PAGE_SIZE)
        } else {
            // At a given version, unpaginated lets the API server answer from its watch cache
            // instead of etcd: a relist storm after an upgrade stays cheap.
            None
        }
    }

    fn watch_timeout(&self) -> Duration {
        const MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(5 * 60);
        let min = self.config.min_watch_timeout.max(MIN_WATCH_TIMEOUT);
        // Whole seconds, as the server takes them.
        let timeout =
            Duration::try_from_secs_f64(min.as_secs_f64() * (1.0 + self.random.next_f64()))
                .unwrap_or(Duration::MAX);
        Duration::from_secs(timeout.as_secs())
    }

    fn watch_options(&self, resource_version: String, timeout: Duration) -> WatchOptions {
        let ListTweak { label_selector, field_selector } = self.config.selectors();
        WatchOptions {
            label_selector,
            field_selector,
            resource_version,
            resource_version_match: None,
            timeout: Some(timeout),
            allow_watch_bookmarks: true,
            send_initial_events: false,
            keep_managed_fields: self.config.keep_managed_fields,
        }
    }

    /// Watches until the table in [`next_after`] says relist or stop.
    async fn watch(
        &self,
        mut stream: Option<(WatchStream<K>, Duration)>,
        resync: &mut ResyncTimer<'_, K>,
        cancel: &CancellationToken,
    ) -> Result<(), ReflectorError> {
        loop {
            let (mut watch, timeout) = if let Some(open) = stream.take() {
                open
            } else {
                let timeout = self.watch_timeout();
                let options = self.watch_options(self.last_sync_resource_version(), timeout);
                let span = tracing::debug_span!(
                    "watch",
                    resource = %self.resource,
                    resource_version = %options.resource_version
                );
                let open = self.lister_watcher.watch(&options).instrument(span);
                match resync.race(open, cancel).await {
                    None => return Ok(()),
                    Some(Ok(watch)) => {
                        self.note_working();
                        (watch, timeout)
                    }
                    Some(Err(e)) if e.is_watch_retriable() => {
                        self.note_failure(&e);
                        tracing::debug!(resource = %self.resource, error = %e, "watch refused; backing off");
                        if !self.backoff_wait(e.retry_after(), resync, cancel).await {
                            return Ok(());
                        }
                        continue;
                    }
                    Some(Err(source)) => {
                        return Err(ReflectorError::Watch {
                            resource: self.resource.clone(),
                            source,
                        });
                    }
                }
            };
            let deadline = timeout.saturating_add(self.config.watch_deadline_margin);
            let span = tracing::debug_span!("watch stream", resource = %self.resource);
            let end = self
                .handle_watch(&mut watch, &*self.store, None, deadline, resync, cancel)
                .instrument(span)
                .await;
            self.observe_watch_end(&end);
            match next_after(&end) {
                Next::Stop => return Ok(()),
                Next::Rewatch => {
                    tracing::trace!(resource = %self.resource, ?end, "watch ended; watching again");
                }
                Next::BackoffThenRewatch => {
                    let retry_after = match &end {
                        WatchEnd::Failed(e) => {
                            self.note_failure(e);
                            e.retry_after()
                        }
                        _ => None,
                    };
                    if !self.backoff_wait(retry_after, resync, cancel).await {
                        return Ok(());
                    }
                }
                Next::Relist => {
                    match end {
                        WatchEnd::Failed(e) if e.is_expired() => {
                            tracing::debug!(resource = %self.resource, error = %e, "watch expired; relisting");
                        }
                        // Hostile or broken input: the watch-error handler hears of it.
                        WatchEnd::Failed(source) => {
                            return Err(ReflectorError::Watch {
                                resource: self.resource.clone(),
                                source,
                            });
                        }
                        end => {
                            tracing::warn!(resource = %self.resource, ?end, "watch ended; relisting");
                        }
                    }
                    return Ok(());
                }
            }
        }
    }

    /// Waits one backoff step (at least `retry_after`). `false` when cancelled first.
    async fn backoff_wait(
        &self,
        retry_after: Option<Duration>,
        resync: &mut ResyncTimer<'_, K>,
        cancel: &CancellationToken,
    ) -> bool {
        // A server's Retry-After is a floor, capped at the backoff's maximum: one bad header
        // (a proxy's "retry in a day") must not stall the informer.
        let floor = retry_after.unwrap_or_default().min(self.config.backoff.max);
        let delay = self.backoff.lock().next_delay().max(floor);
        resync.race(self.clock.sleep(delay), cancel).await.is_some()
    }

    /// Reads `watch` into `target` until it ends. With `initial_events`, stops at the
    /// initial-events-end bookmark and records versions there instead of in the reflector.
    async fn handle_watch(
        &self,
        watch: &mut WatchStream<K>,
        target: &dyn ReflectorStore<K>,
        mut initial_events: Option<&mut String>,
        deadline: Duration,
        resync: &mut ResyncTimer<'_, K>,
        cancel: &CancellationToken,
    ) -> WatchEnd {
        let start = self.clock.now();
        let mut events = 0;
        let mut deadline = self.clock.sleep(deadline);
        loop {
            let next = tokio::select! {
                biased;
                () = cancel.cancelled() => return WatchEnd::Stopped,
                () = resync.tick() => continue,
                () = &mut deadline => return WatchEnd::DeadlineExceeded,
                // A full queue holds the watch back: the burst waits in the connection.
                next = async {
                    std::future::poll_fn(|cx| target.poll_ready(cx)).await;
                    watch.next().await
                } => next,
            };
            let event = match next {
                None => {
                    let lasted = self.clock.now().saturating_duration_since(start);
                    return WatchEnd::Closed { events, lasted };
                }
                Some(Err(source @ Error::UnexpectedKind { .. })) => {
                    // Skipped, and the watch goes on; the watch-error handler (or the log)
                    // hears of it.
                    self.report(&ReflectorError::Watch { resource: self.resource.clone(), source });
                    continue;
                }
                Some(Err(e)) => return WatchEnd::Failed(e),
                Some(Ok(event)) => event,
            };
            if let Some(observer) = &self.observer {
                observer.event(match &event {
                    WatchEvent::Added(_) => "ADDED",
                    WatchEvent::Modified(_) => "MODIFIED",
                    WatchEvent::Deleted(_) => "DELETED",
                    WatchEvent::Bookmark(_) => "BOOKMARK",
                    WatchEvent::Error(_) => "ERROR",
                });
            }
            let rv = match event {
                WatchEvent::Added(obj) => {
                    let rv = resource_version(&*obj).to_owned();
                    target.add(obj);
                    rv
                }
                WatchEvent::Modified(obj) => {
                    let rv = resource_version(&*obj).to_owned();
                    target.update(obj);
                    rv
                }
                WatchEvent::Deleted(obj) => {
                    let rv = resource_version(&*obj).to_owned();
                    target.delete(obj);
                    rv
                }
                WatchEvent::Bookmark(bookmark) => {
                    if bookmark.initial_events_end
                        && let Some(initial_rv) = initial_events.as_deref_mut()
                    {
                        *initial_rv = bookmark.resource_version;
                        return WatchEnd::InitialEventsEnd;
                    }
                    bookmark.resource_version
                }
                WatchEvent::Error(status) => return WatchEnd::Failed(Error::Api(status)),
            };
            match initial_events.as_deref_mut() {
                Some(initial_rv) => *initial_rv = rv,
                None => self.set_last_sync_resource_version(&rv),
            }
            events += 1;
        }
    }

    /// A streaming list: the current state as events into a temporary store, swapped into the
    /// real store at the initial-events-end bookmark; the same stream then goes on as the watch.
    ///
    /// `Ok(None)` when cancelled. An error means: fall back to a plain list.
    async fn watch_list(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Option<(WatchStream<K>, Duration)>, Error> {
        let started = self.clock.now();
        let budget = self.config.streaming_list_timeout;
        let mut no_resync = ResyncTimer::disabled(self);
        loop {
            let elapsed = self.clock.now().saturating_duration_since(started);
            let Some(remaining) = budget.checked_sub(elapsed).filter(|d| !d.is_zero()) else {
                return Err(Error::StreamingListTimeout(budget));
            };
            let timeout = self.watch_timeout();
            let mut options = self.watch_options(self.rewatch_resource_version(), timeout);
            options.send_initial_events = true;
            options.resource_version_match = Some(ResourceVersionMatch::NotOlderThan);
            let opened = tokio::select! {
                () = self.clock.sleep(remaining) => return Err(Error::StreamingListTimeout(budget)),
                opened = no_resync.race(self.lister_watcher.watch(&options), cancel) => opened,
            };
            let mut watch = match opened {
                None => return Ok(None),
                Some(Ok(watch)) => watch,
                Some(Err(e)) if e.is_watch_retriable() => {
                    if !self.backoff_wait(e.retry_after(), &mut no_resync, cancel).await {
                        return Ok(None);
                    }
                    continue;
                }
                Some(Err(e)) => return Err(e),
            };
            // For a compact cache, the initial events wait compactly too (see `list`).
            let compact = self.store.compact_lists();
            let staged = compact.then(|| StagedList::new(self.compact_cache.clone()));
            let decoded = Indexer::<K>::default();
            let temporary: &dyn ReflectorStore<K> = match &staged {
                Some(staged) => staged,
                None => &decoded,
            };
            let mut rv = String::new();
            let end = self
                .handle_watch(
                    &mut watch,
                    temporary,
                    Some(&mut rv),
                    remaining,
                    &mut no_resync,
                    cancel,
                )
                .await;
            match end {
                WatchEnd::InitialEventsEnd => {
                    if let Some(staged) = &staged {
                        if !self.hand_over_staged(staged, Vec::new(), &rv, cancel).await? {
                            return Ok(None);
                        }
                    } else {
                        self.store.replace(decoded.list(), &rv);
                    }
                    self.state.lock().resource_version_unavailable = false;
                    self.set_last_sync_resource_version(&rv);
                    return Ok(Some((watch, timeout)));
                }
                WatchEnd::Stopped => return Ok(None),
                WatchEnd::DeadlineExceeded => return Err(Error::StreamingListTimeout(budget)),
                WatchEnd::Failed(e) if e.is_expired() || e.is_resource_version_too_large() => {
                    self.state.lock().resource_version_unavailable = true;
                }
                WatchEnd::Failed(e) if e.is_too_many_requests() => {
                    if !self.backoff_wait(e.retry_after(), &mut no_resync, cancel).await {
                        return Ok(None);
                    }
                }
                WatchEnd::Failed(e) => return Err(e),
                // Closed before the bookmark: nothing was synced, so stream again from scratch.
                WatchEnd::Closed { .. } => {
                    if !self.backoff_wait(None, &mut no_resync, cancel).await {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

/// The resync timer of one list-and-watch round; it keeps ticking across rewatches and backoffs.
struct ResyncTimer<'a, K> {
    reflector: &'a Reflector<K>,
    timer: Option<BoxFuture<'static, ()>>,
}

impl<'a, K: Object> ResyncTimer<'a, K> {
    fn new(reflector: &'a Reflector<K>) -> Self {
        let period = reflector.config.resync_period;
        let timer = (!period.is_zero()).then(|| reflector.clock.sleep(period));
        Self { reflector, timer }
    }

    fn disabled(reflector: &'a Reflector<K>) -> Self {
        Self { reflector, timer: None }
    }

    /// Completes after a resync was done (or never, when resync is off).
    async fn tick(&mut self) {
        let Some(timer) = self.timer.as_mut() else {
            return std::future::pending().await;
        };
        timer.await;
        let reflector = self.reflector;
        if reflector.should_resync.as_ref().is_none_or(|should| should()) {
            tracing::trace!(resource = %reflector.resource, "resync");
            reflector.store.resync();
        }
        self.timer = Some(reflector.clock.sleep(reflector.config.resync_period));
    }

    /// Runs `fut` while resyncing on time; `None` if cancelled first.
    async fn race<T>(
        &mut self,
        fut: impl Future<Output = T>,
        cancel: &CancellationToken,
    ) -> Option<T> {
        tokio::pin!(fut);
        loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return None,
                () = self.tick() => {}
                out = &mut fut => return Some(out),
            }
        }
    }
}

impl<K> std::fmt::Debug for Reflector<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reflector")
            .field("resource", &self.resource)
            .field("last_sync_resource_version", &self.state.lock().last_sync_resource_version)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
