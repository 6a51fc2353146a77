//! The shared informer: one cache and one watch per resource, any number of handlers.
//!
//! **Who it is for.** Every program that reacts to changes: it registers handlers here and reads
//! the informer's cache. The factory makes the informers; a program rarely builds one itself.
//!
//! A [`SharedIndexInformer`] runs a [reflector](crate::reflector) into a
//! [`DeltaFifo`], pops each key's deltas into its
//! [`Indexer`], and fans every change out to the registered
//! [handlers](ResourceEventHandler) through per-handler buffers (the processor).
//!
//! # Guarantees
//!
//! - **Eventual consistency.** Once the informer has synced, the cache converges to the server's
//!   state. The states a given object takes in the cache are a subsequence of the states it had
//!   on the server: some may be skipped (several changes merged between two pops, or missed
//!   during a disconnect), but never reordered.
//! - **Identity is namespace/name, not UID.** An object deleted and re-created while the watch
//!   was down arrives as an update.
//! - **Per handler, notifications keep their order**; across handlers there is no order.
//! - **A late handler** (added after start) first receives an add for every cached object, with
//!   `is_in_initial_list = true`, then live changes, with nothing lost or duplicated in between.
//! - **Deletes** carry the last known state, or a [`DeletedFinalStateUnknown`] tombstone when a
//!   relist found the object gone.
//!
//! # Not guaranteed
//!
//! - The cache is not a snapshot: two reads may see different versions.
//! - [`has_synced`](SharedIndexInformer::has_synced) means the cache holds the first list; it
//!   does not mean the handlers processed it (use the
//!   [registration's](ResourceEventHandlerRegistration::has_synced)).
//!
//! # A set of namespaces
//!
//! [`SharedIndexInformer::for_namespaces`] watches several namespaces (not one, not all) into
//! one cache, as controller-runtime's multi-namespace cache does with one cache per namespace:
//! a reflector per namespace, each with its own list, watch, resourceVersion and backoff, all
//! feeding the one queue, cache and set of handlers. A relist (after a `410`, say) in one
//! namespace replaces that namespace's objects only; the informer has synced once every
//! namespace's first list is in the cache; a resync replays the cache once per period.
//!
//! # Example
//!
//! ```
//! # use std::sync::Arc;
//! # use informer_runtime::shared_informer::{HandlerFuncs, SharedIndexInformer};
//! # use informer_runtime::testing::FakeSource;
//! # use k8s_openapi::api::core::v1::Pod;
//! # use tokio_util::sync::CancellationToken;
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let source = FakeSource::new(); // or an HTTP client
//! let informer = SharedIndexInformer::<Pod>::new(source.lister_watcher::<Pod>(None));
//! let registration = informer
//!     .add_event_handler(HandlerFuncs::new().on_add(|pod: Arc<Pod>, _| {
//!         println!("{:?}", pod.metadata.name);
//!     }))
//!     .unwrap();
//! let stop = CancellationToken::new();
//! let run = tokio::spawn({
//!     let (informer, stop) = (informer.clone(), stop.clone());
//!     async move { informer.run(stop).await }
//! });
//! assert!(registration.wait_for_sync().await);
//! stop.cancel();
//! run.await.unwrap();
//! # }
//! ```

mod handler;
mod process_loop;
mod processor;
mod registration;
mod shutdown;
mod stream;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use self::handler::{
    DeletedFinalStateUnknown, DeletedObject, FilteringHandler, HandlerFuncs, Notification,
    ResourceEventHandler,
};
pub use self::registration::ResourceEventHandlerRegistration;
pub use self::shutdown::{ShutdownReport, UnfinishedHandler};
pub use self::stream::NotificationStream;

use self::process_loop::{QueueSink, Sinks};
use self::processor::{MINIMUM_RESYNC_PERIOD, Processor, determine_resync_period};
use crate::clock::{Random, SharedClock, TokioClock};
use crate::delta_fifo::{DeltaFifo, TransformFn};
use crate::dynamic::DynamicObject;
use crate::instrument::InformerObserver;
use crate::lister::Lister;
use crate::listwatch::ListerWatcher;
use crate::reflector::{
    Reflector, ReflectorConfig, ReflectorError, WatchErrorHandler, WatchHealth,
};
use crate::resource::{GroupVersionResource, Object, Resource};
use crate::store::{Cache, IndexError, Indexer, Indexers, StorageMode};

/// Why an informer refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InformerError {
    /// The setting must be made before [`run`](SharedIndexInformer::run).
    #[error("informer has already started: {0} must be set before run")]
    AlreadyStarted(&'static str),
    /// The informer has stopped; nothing can be registered any more.
    #[error("handler was not added to shared informer because it has stopped already")]
    Stopped,
    /// [`for_namespaces`](SharedIndexInformer::for_namespaces) was given no namespace.
    #[error(
        "an informer over a set of namespaces was given none; give at least one, or use SharedIndexInformer::new to watch every namespace"
    )]
    NoNamespaces,
    /// [`for_namespaces`](SharedIndexInformer::for_namespaces) was given a namespace twice.
    #[error(
        "namespace {0:?} was given twice to an informer over a set of namespaces; give each namespace one lister-watcher"
    )]
    DuplicateNamespace(String),
    /// [`for_namespaces`](SharedIndexInformer::for_namespaces) was given `""`, which means
    /// every namespace.
    #[error(
        "the namespace \"\" means every namespace and cannot be one of a set; use SharedIndexInformer::new to watch every namespace"
    )]
    AllNamespacesInSet,
    /// [`for_namespaces`](SharedIndexInformer::for_namespaces) was asked for a cluster-scoped
    /// kind, whose objects are in no namespace.
    #[error(
        "{0} is cluster-scoped, so it cannot be watched per namespace; use SharedIndexInformer::new"
    )]
    ClusterScoped(&'static str),
}

/// Watch events that may wait, decoded, for the cache: a few milliseconds of decoding, and a few
/// percent of a cache of thousands of objects at most.
const DEFAULT_MAX_QUEUED_DELTAS: usize = 1_000;

struct Settings<K> {
    resync_check_period: Duration,
    default_resync: Duration,
    transform: Option<TransformFn<K>>,
    watch_error_handler: Option<WatchErrorHandler>,
    reflector: ReflectorConfig,
    random: Random,
    shutdown_timeout: Duration,
    max_queued_deltas: usize,
    /// Metrics, when asked for.
    observer: Option<Arc<dyn InformerObserver>>,
    started: bool,
    stopped: bool,
}

/// How an informer names its resource in logs, metrics, shutdown reports and the listers'
/// [`NotFound`](crate::NotFound) errors: from `K`'s constants, or from the group, version and
/// resource of a dynamic informer.
#[derive(Clone, Debug)]
pub(crate) struct Identity {
    gvr: GroupVersionResource,
    /// `plural[.group]`.
    name: Arc<str>,
    /// As listers name it: client-go's typed listers `pod`, `deployment.apps`; its dynamic
    /// listers `widgets.example.com`.
    lister_label: Arc<str>,
    /// The `resource` label of metrics: the name, with what partial objects hold appended.
    #[cfg_attr(not(feature = "metrics"), allow(dead_code, reason = "read by metrics only"))]
    metric_label: String,
    partial: bool,
    /// Whether values hold all the server sends for an object: whole objects, or the metadata
    /// a metadata-only list sends; not a view.
    as_sent: bool,
}

impl Identity {
    pub(crate) fn of<K: Resource>() -> Self {
        let name = crate::resource::resource_name::<K>();
        let metric_label = if K::METADATA_ONLY {
            format!("{name}(metadata)")
        } else if K::PARTIAL {
            // The view's own type name, without its path and generics.
            let view = std::any::type_name::<K>();
            let view = view.split('<').next().unwrap_or(view);
            let view = view.rsplit("::").next().unwrap_or(view);
            format!("{name}(view {view})")
        } else {
            name.clone()
        };
        Self {
            gvr: GroupVersionResource::of::<K>(),
            name: name.into(),
            lister_label: crate::lister::typed_label::<K>(),
            metric_label,
            partial: K::PARTIAL,
            as_sent: crate::resource::holds_all_it_is_sent::<K>(),
        }
    }

    fn dynamic(gvr: GroupVersionResource, metadata_only: bool) -> Self {
        let name: Arc<str> = gvr.qualified_name().into();
        let metric_label =
            if metadata_only { format!("{name}(metadata)") } else { name.to_string() };
        Self {
            gvr,
            lister_label: Arc::clone(&name),
            name,
            metric_label,
            partial: metadata_only,
            as_sent: true,
        }
    }

    /// The resource's group, version and plural name.
    pub(crate) fn gvr(&self) -> &GroupVersionResource {
        &self.gvr
    }

    /// Whether the informer holds parts of objects (metadata only, a view).
    pub(crate) fn partial(&self) -> bool {
        self.partial
    }
}

/// A lister-watcher and the namespace it is limited to: `None` for every namespace (the one
/// lister-watcher of an informer), `Some` for one of a [set](SharedIndexInformer::for_namespaces).
type ScopedListerWatcher<K> = (Option<String>, Arc<dyn ListerWatcher<K>>);

struct Shared<K> {
    identity: Identity,
    indexer: Indexer<K>,
    processor: Arc<Processor<K>>,
    lister_watchers: Vec<ScopedListerWatcher<K>>,
    clock: SharedClock,
    settings: Mutex<Settings<K>>,
    /// Held while deltas are applied and while a late handler is given the cache, so that it
    /// sees every change exactly once.
    block_deltas: Mutex<()>,
    queue: OnceLock<Arc<DeltaFifo<K>>>,
    /// One per lister-watcher, in their order.
    reflectors: OnceLock<Vec<Arc<Reflector<K>>>>,
    /// Woken when the sync state may have changed, and when the informer stops.
    progress: Arc<Notify>,
}

/// A cache of one resource type kept in sync by one watch, shared by any number of handlers;
/// see the [module documentation](self) for its guarantees.
#[doc(alias = "SharedInformer")]
pub struct SharedIndexInformer<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        Self { shared: Arc::clone(&self.shared) }
    }
}

impl<K: Resource> SharedIndexInformer<K> {
    /// An informer over `lister_watcher`, with the namespace index, the
    /// [label index](Indexer::with_label_index) and no resync.
    #[must_use]
    pub fn new(lister_watcher: Arc<dyn ListerWatcher<K>>) -> Self {
        Self::with_lister_watchers(vec![(None, lister_watcher)], Identity::of::<K>())
    }

    /// An informer over a set of namespaces, from one lister-watcher per namespace (each limited
    /// to its namespace), with one cache, one lister and handlers registered once; see
    /// [A set of namespaces](self#a-set-of-namespaces). Otherwise as [`new`](Self::new).
    ///
    /// ```
    /// # use informer_runtime::shared_informer::SharedIndexInformer;
    /// # use informer_runtime::testing::FakeSource;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// let source = FakeSource::new(); // or an HTTP client
    /// let pods = SharedIndexInformer::<Pod>::for_namespaces(
    ///     ["team-a", "team-b"].map(|ns| (ns, source.lister_watcher::<Pod>(Some(ns)))),
    /// )?;
    /// # Ok::<(), informer_runtime::shared_informer::InformerError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`InformerError::NoNamespaces`] for none, [`InformerError::DuplicateNamespace`] for a
    /// namespace given twice, [`InformerError::AllNamespacesInSet`] for `""` (which means every
    /// namespace: use [`new`](Self::new)), and [`InformerError::ClusterScoped`] for a kind
    /// whose objects are in no namespace.
    #[doc(alias = "MultiNamespacedCacheBuilder")]
    #[doc(alias = "DefaultNamespaces")]
    pub fn for_namespaces<N: Into<String>>(
        lister_watchers: impl IntoIterator<Item = (N, Arc<dyn ListerWatcher<K>>)>,
    ) -> Result<Self, InformerError> {
        if !crate::resource::is_namespaced::<K>() {
            return Err(InformerError::ClusterScoped(K::KIND));
        }
        let mut scoped: Vec<ScopedListerWatcher<K>> = Vec::new();
        for (namespace, lister_watcher) in lister_watchers {
            let namespace = namespace.into();
            if namespace.is_empty() {
                return Err(InformerError::AllNamespacesInSet);
            }
            if scoped.iter().any(|(ns, _)| ns.as_deref() == Some(namespace.as_str())) {
                return Err(InformerError::DuplicateNamespace(namespace));
            }
            scoped.push((Some(namespace), lister_watcher));
        }
        if scoped.is_empty() {
            return Err(InformerError::NoNamespaces);
        }
        Ok(Self::with_lister_watchers(scoped, Identity::of::<K>()))
    }
}

impl SharedIndexInformer<DynamicObject> {
    /// An informer of `gvr`, a resource known only at run time, over `lister_watcher` (for
    /// example `informer-client`'s `Client::dynamic_lister_watcher`);
    /// `metadata_only` when it lists and watches metadata alone. As [`new`](Self::new)
    /// otherwise; see the [`dynamic`](crate::dynamic) module.
    #[must_use]
    pub fn dynamic(
        lister_watcher: Arc<dyn ListerWatcher<DynamicObject>>,
        gvr: GroupVersionResource,
        metadata_only: bool,
    ) -> Self {
        let identity = Identity::dynamic(gvr, metadata_only);
        Self::with_lister_watchers(vec![(None, lister_watcher)], identity)
    }

    /// [`dynamic`](Self::dynamic) over a set of namespaces, one lister-watcher each, as
    /// [`for_namespaces`](SharedIndexInformer::for_namespaces) (the factory checks the set).
    pub(crate) fn dynamic_for_namespaces(
        lister_watchers: Vec<ScopedListerWatcher<DynamicObject>>,
        gvr: GroupVersionResource,
        metadata_only: bool,
    ) -> Self {
        Self::with_lister_watchers(lister_watchers, Identity::dynamic(gvr, metadata_only))
    }
}

impl<K: Object> SharedIndexInformer<K> {
    /// An informer over `lister_watchers`, each `None` (every namespace; only one) or limited
    /// to a namespace (no two the same, none `""`): [`new`](Self::new) and
    /// [`for_namespaces`](Self::for_namespaces) check that.
    pub(crate) fn with_lister_watchers(
        lister_watchers: Vec<ScopedListerWatcher<K>>,
        identity: Identity,
    ) -> Self {
        let clock: SharedClock = Arc::new(TokioClock);
        let processor = Processor::new(Arc::clone(&clock), identity.gvr.to_string().into());
        Self {
            shared: Arc::new(Shared {
                identity,
                indexer: Indexer::with_namespace_index().with_label_index(),
                processor: Arc::new(processor),
                lister_watchers,
                clock,
                settings: Mutex::new(Settings {
                    resync_check_period: Duration::ZERO,
                    default_resync: Duration::ZERO,
                    transform: None,
                    watch_error_handler: None,
                    reflector: ReflectorConfig::default(),
                    random: Random::default(),
                    shutdown_timeout: shutdown::DEFAULT_SHUTDOWN_TIMEOUT,
                    max_queued_deltas: DEFAULT_MAX_QUEUED_DELTAS,
                    observer: None,
                    started: false,
                    stopped: false,
                }),
                block_deltas: Mutex::new(()),
                queue: OnceLock::new(),
                reflectors: OnceLock::new(),
                progress: Arc::new(Notify::new()),
            }),
        }
    }

    /// How the informer names its resource.
    pub(crate) fn identity(&self) -> &Identity {
        &self.shared.identity
    }

    fn configure(mut self, f: impl FnOnce(&mut Shared<K>)) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            f(shared);
        } else {
            tracing::error!("informer options must be set before the informer is shared; ignored");
        }
        self
    }

    /// Default resync period of handlers, and the informer's resync check period.
    #[must_use]
    pub fn with_resync(self, period: Duration) -> Self {
        self.configure(|s| {
            let settings = s.settings.get_mut();
            settings.resync_check_period = period;
            settings.default_resync = period;
        })
    }

    /// Options of the reflector: selectors, paging, streaming list, backoff.
    #[must_use]
    pub fn with_reflector_config(self, config: ReflectorConfig) -> Self {
        self.configure(|s| s.settings.get_mut().reflector = config)
    }

    /// Extra indices, besides the namespace index.
    ///
    /// # Errors
    ///
    /// [`IndexError::Conflict`] if a name is taken.
    pub fn with_indexers(self, indexers: Indexers<K>) -> Result<Self, IndexError> {
        self.shared.indexer.add_indexers(indexers)?;
        Ok(self)
    }

    /// Drops the [label index](Indexer::with_label_index): label selector queries of this
    /// informer's listers then read every object (or every object of the namespace), and the
    /// cache saves the index's memory (a table slot per label of each object) and the upkeep on
    /// each change (a table lookup per label).
    ///
    /// ```
    /// # use informer_runtime::shared_informer::SharedIndexInformer;
    /// # use informer_runtime::testing::FakeSource;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let source = FakeSource::new();
    /// // A cache that is only ever read by name or by namespace.
    /// let pods = SharedIndexInformer::<Pod>::new(source.lister_watcher::<Pod>(None))
    ///     .without_label_index();
    /// ```
    #[must_use]
    pub fn without_label_index(self) -> Self {
        self.shared.indexer.set_label_index(false);
        self
    }

    /// Holds the cache's objects in a compact form, decoded on read, keeping the `recent`
    /// objects read or written last decoded; see
    /// [`Indexer::with_compact_storage`](crate::store::Indexer::with_compact_storage) for what
    /// it saves and costs, and when to choose it.
    ///
    /// Handlers and listers still get `Arc<K>`. A handler's `old` object of an update is
    /// decoded from the cache (unless it is among the recent objects), and so is every object a
    /// resync or a late handler's replay of the cache reads.
    ///
    /// ```
    /// # use informer_runtime::shared_informer::SharedIndexInformer;
    /// # use informer_runtime::store::StorageMode;
    /// # use informer_runtime::testing::FakeSource;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let source = FakeSource::new();
    /// // Many pods, read mostly through handlers and the odd lookup by name.
    /// let pods = SharedIndexInformer::<Pod>::new(source.lister_watcher::<Pod>(None))
    ///     .with_compact_storage(1024);
    /// assert_eq!(pods.cache().storage_mode(), StorageMode::Compact { recent: 1024 });
    /// ```
    #[must_use]
    pub fn with_compact_storage(self, recent: usize) -> Self {
        self.shared.indexer.set_storage_mode(StorageMode::Compact { recent });
        self
    }

    /// The clock for resync, backoff and deadlines (tests step a `FakeClock`).
    #[must_use]
    pub fn with_clock(self, clock: SharedClock) -> Self {
        self.configure(|s| {
            let processor = Processor::new(Arc::clone(&clock), s.processor.resource());
            processor.set_backlog_mark(s.processor.backlog_mark());
            s.processor = Arc::new(processor);
            s.clock = clock;
        })
    }

    /// How long [`run`](Self::run), once stopped, waits for handlers in a call to return
    /// (default 30 seconds, controller-runtime's graceful shutdown timeout). Those that do not are
    /// reported in the [`ShutdownReport`] and logged, and their threads are left running.
    #[must_use]
    pub fn with_shutdown_timeout(self, timeout: Duration) -> Self {
        self.configure(|s| s.settings.get_mut().shutdown_timeout = timeout)
    }

    /// How many watch events may wait, decoded, between the watch and the cache (default
    /// 1,000; at least 1): beyond that the informer reads the watch no further until the
    /// queue has drained to half of it, so that a burst of changes (a node's label change
    /// touching every pod, a controller restarting elsewhere) waits in the connection and on
    /// the server instead of doubling the informer's memory, each new object queued while the
    /// cache still holds the old. See [`DeltaFifo::with_max_queued_deltas`].
    ///
    /// The cache takes events as fast as they are decoded, so the bound costs no throughput;
    /// what it bounds is the decoder running ahead. It does not bound handlers' buffers: a
    /// handler slower than the stream keeps both versions of what it has not seen yet (see
    /// [`with_handler_backlog_warning`](Self::with_handler_backlog_warning)).
    #[must_use]
    pub fn with_max_queued_deltas(self, max: usize) -> Self {
        self.configure(|s| s.settings.get_mut().max_queued_deltas = max)
    }

    /// Logs a warning when a handler's backlog (notifications buffered for it beyond the
    /// initial list) reaches `mark`, once until it drains to half of it; zero turns the warning
    /// off. Default 10,000. Handlers registered from now on use the new mark.
    ///
    /// Buffers stay unbounded, as client-go's are: the informer never drops a change nor waits
    /// for a handler. Read a handler's backlog with
    /// [`ResourceEventHandlerRegistration::pending`], for metrics.
    #[must_use]
    pub fn with_handler_backlog_warning(self, mark: usize) -> Self {
        self.shared.processor.set_backlog_mark(mark);
        self
    }

    /// Records this informer's metrics (`informer_events_total`, ...) in `metrics`, labelled
    /// `resource="<plural>[.<group>]"`, for metadata-only informers and views with what they
    /// hold appended (`pods(metadata)`, `pods(view PodView)`). The factory does this for
    /// every informer it makes ([`FactoryBuilder::metrics`](crate::factory::FactoryBuilder::metrics)).
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    #[must_use]
    pub fn with_metrics(self, metrics: &crate::metrics::Metrics) -> Self {
        let resource = self.shared.identity.metric_label.clone();
        let observer = metrics.informer_observer(&resource);
        let this = self.configure(|shared| shared.settings.get_mut().observer = Some(observer));
        let probe: std::sync::Weak<dyn crate::instrument::InformerProbe> =
            Arc::downgrade(&this.shared) as _;
        metrics.watch_informer(&resource, probe);
        this
    }

    /// The randomness for jitter and watch timeouts.
    #[must_use]
    pub fn with_random(self, random: Random) -> Self {
        self.configure(|s| s.settings.get_mut().random = random)
    }

    /// Applies `transform` to every object before it is cached (for example to drop fields the
    /// program never reads); see [`TransformFn`]. `metadata.managedFields` needs no transform:
    /// lister-watchers drop it while decoding unless
    /// [`ReflectorConfig::keep_managed_fields`] is set.
    ///
    /// # Errors
    ///
    /// [`InformerError::AlreadyStarted`] after [`run`](Self::run).
    #[doc(alias = "SetTransform")]
    pub fn set_transform(
        &self,
        transform: impl Fn(&mut K) + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        let mut settings = self.shared.settings.lock();
        if settings.started {
            return Err(InformerError::AlreadyStarted("transform"));
        }
        settings.transform = Some(Arc::new(transform));
        Ok(())
    }

    /// Reports list and watch failures to `handler` (by default they are logged).
    ///
    /// # Errors
    ///
    /// [`InformerError::AlreadyStarted`] after [`run`](Self::run).
    #[doc(alias = "SetWatchErrorHandler")]
    pub fn set_watch_error_handler(
        &self,
        handler: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        let mut settings = self.shared.settings.lock();
        if settings.started {
            return Err(InformerError::AlreadyStarted("watch error handler"));
        }
        settings.watch_error_handler = Some(Arc::new(handler));
        Ok(())
    }

    /// Registers `handler` with the informer's default resync period.
    ///
    /// # Errors
    ///
    /// [`InformerError::Stopped`] once the informer has stopped.
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K>,
    ) -> Result<ResourceEventHandlerRegistration<K>, InformerError> {
        let period = self.shared.settings.lock().default_resync;
        self.add_event_handler_with_resync_period(handler, period)
    }

    /// Registers `handler`, replaying the cache to it every `resync_period` (zero: never).
    ///
    /// Periods under a second are raised to a second. Before start, a period shorter than the
    /// informer's check period lowers the check period; after start it is raised to it.
    ///
    /// # Errors
    ///
    /// [`InformerError::Stopped`] once the informer has stopped.
    pub fn add_event_handler_with_resync_period(
        &self,
        handler: impl ResourceEventHandler<K>,
        resync_period: Duration,
    ) -> Result<ResourceEventHandlerRegistration<K>, InformerError> {
        let shared = &self.shared;
        let mut settings = shared.settings.lock();
        if settings.stopped {
            return Err(InformerError::Stopped);
        }
        let mut period = resync_period;
        if !period.is_zero() {
            period = period.max(MINIMUM_RESYNC_PERIOD);
            if period < settings.resync_check_period {
                if settings.started {
                    tracing::warn!(?period, check = ?settings.resync_check_period, "resync period is below the informer's check period; raised to it");
                    period = settings.resync_check_period;
                } else {
                    settings.resync_check_period = period;
                    shared.processor.resync_check_period_changed(period);
                }
            }
        }
        let effective = determine_resync_period(period, settings.resync_check_period);
        let handler: Arc<dyn ResourceEventHandler<K>> = Arc::new(handler);
        let listener = if settings.started {
            let _block = shared.block_deltas.lock();
            shared.processor.add_handler(handler, period, effective, |push| self.replay_cache(push))
        } else {
            shared.processor.add_handler(handler, period, effective, |_| {})
        };
        drop(settings);
        let listener = listener.ok_or(InformerError::Stopped)?;
        Ok(self.registration(listener))
    }

    /// The changes as a [`Stream`](futures::Stream) instead of callbacks.
    ///
    /// # Errors
    ///
    /// [`InformerError::Stopped`] once the informer has stopped.
    pub fn stream(&self) -> Result<NotificationStream<K>, InformerError> {
        let shared = &self.shared;
        let settings = shared.settings.lock();
        if settings.stopped {
            return Err(InformerError::Stopped);
        }
        let _block = shared.block_deltas.lock();
        let added = if settings.started {
            shared.processor.add_stream(|push| self.replay_cache(push))
        } else {
            shared.processor.add_stream(|_| {})
        };
        let (listener, receiver) = added.ok_or(InformerError::Stopped)?;
        let registration = self.registration(Arc::clone(&listener));
        Ok(NotificationStream::new(
            receiver,
            registration,
            Arc::downgrade(&shared.processor),
            listener,
        ))
    }

    fn replay_cache(&self, push: &mut dyn FnMut(Notification<K>)) {
        self.shared.indexer.for_each(|obj| {
            push(Notification::Add { obj: Arc::clone(obj), is_in_initial_list: true });
        });
    }

    fn registration(
        &self,
        listener: Arc<processor::Listener<K>>,
    ) -> ResourceEventHandlerRegistration<K> {
        let shared = Arc::downgrade(&self.shared);
        let synced = Arc::new(move || {
            shared.upgrade().is_some_and(|s| s.queue.get().is_some_and(|q| q.has_synced()))
        });
        ResourceEventHandlerRegistration::new(listener, synced, Arc::clone(&self.shared.progress))
    }

    /// Unregisters a handler. Idempotent; a registration of another informer is ignored.
    /// Notifications still buffered for it are dropped. The one notification its thread may
    /// already have taken is still delivered, and a call under way is not interrupted: either
    /// may end after this returns (as in client-go). Nothing later is delivered.
    pub fn remove_event_handler(&self, registration: &ResourceEventHandlerRegistration<K>) {
        self.shared.processor.remove(registration.listener.id());
    }

    /// Number of registered handlers and streams.
    #[must_use]
    pub fn handler_count(&self) -> usize {
        self.shared.processor.len()
    }

    /// Adds indices; allowed at any time, existing objects are indexed at once.
    ///
    /// # Errors
    ///
    /// [`IndexError::Conflict`] if a name is taken.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), IndexError> {
        self.shared.indexer.add_indexers(indexers)
    }

    /// A read handle on the cache.
    #[must_use]
    #[doc(alias = "GetIndexer")]
    #[doc(alias = "GetStore")]
    pub fn cache(&self) -> Cache<K> {
        self.shared.indexer.cache()
    }

    /// A lister over the cache.
    #[must_use]
    pub fn lister(&self) -> Lister<K> {
        Lister::named(self.cache(), Arc::clone(&self.shared.identity.lister_label))
    }

    /// Whether the cache holds the first complete list (of every namespace, for an informer
    /// over a [set of them](Self::for_namespaces)).
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.shared.queue.get().is_some_and(|q| q.has_synced())
    }

    /// Waits until [`has_synced`](Self::has_synced); `false` if the informer stopped first.
    pub async fn wait_for_sync(&self) -> bool {
        loop {
            let progress = self.shared.progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            if self.has_synced() {
                return true;
            }
            if self.is_stopped() {
                return false;
            }
            progress.await;
        }
    }

    /// How its lists and watches are doing: whether, and for how long, they have been failing
    /// (for an informer over a [set of namespaces](Self::for_namespaces), the namespace
    /// failing longest). `None` in [`failing_for`](WatchHealth::failing_for) before it starts.
    ///
    /// A reflector retries every failure; this is how a readiness probe learns that it has
    /// been retrying for long (an RBAC rule missing, a CRD deleted, the server unreachable).
    #[must_use]
    pub fn health(&self) -> WatchHealth {
        let reflectors = self.shared.reflectors.get().map(Vec::as_slice).unwrap_or_default();
        reflectors.iter().map(|r| r.health()).fold(WatchHealth::default(), WatchHealth::worse)
    }

    /// The resourceVersion of the last list or event seen. For an informer over a
    /// [set of namespaces](Self::for_namespaces), of the first namespace's (versions are
    /// opaque: there is no newest of several).
    #[must_use]
    pub fn last_sync_resource_version(&self) -> String {
        self.shared
            .reflectors
            .get()
            .and_then(|r| r.first())
            .map(|r| r.last_sync_resource_version())
            .unwrap_or_default()
    }

    /// The period at which the reflector checks whether any handler is due for a resync.
    #[must_use]
    pub fn resync_check_period(&self) -> Duration {
        self.shared.settings.lock().resync_check_period
    }

    /// Whether [`run`](Self::run) was called.
    #[must_use]
    pub fn is_started(&self) -> bool {
        self.shared.settings.lock().started
    }

    /// Whether the informer has stopped.
    #[must_use]
    pub fn is_stopped(&self) -> bool {
        self.shared.settings.lock().stopped
    }

    /// Runs the informer until `stop` fires, then stops every handler and returns once they
    /// have all returned, or the [shutdown timeout](Self::with_shutdown_timeout) ran out; the
    /// report names the handlers still in a call. A second call does nothing.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub async fn run(&self, stop: CancellationToken) -> ShutdownReport {
        let shared = &self.shared;
        let (queue, reflectors, resync, shutdown_timeout) = {
            let mut settings = shared.settings.lock();
            if settings.started {
                tracing::warn!("the informer has already been started");
                return ShutdownReport::default();
            }
            settings.started = true;
            let namespaces = shared.lister_watchers.iter().filter_map(|(ns, _)| ns.clone());
            let mut queue = DeltaFifo::new()
                .with_known_objects(Arc::new(shared.indexer.cache()))
                .with_max_queued_deltas(settings.max_queued_deltas)
                .with_namespaces(namespaces);
            if let Some(transform) = &settings.transform {
                queue = queue.with_transform(Arc::clone(transform));
            }
            let queue = Arc::new(queue);
            let several = shared.lister_watchers.len() > 1;
            let reflectors = shared
                .lister_watchers
                .iter()
                .map(|(namespace, lister_watcher)| {
                    // Every reflector's resync would replay the whole cache, and one reflector's
                    // resync stops while it cannot list: an informer over a set resyncs on a
                    // timer of its own (see `process_loop::run`).
                    let resync =
                        if several { Duration::ZERO } else { settings.resync_check_period };
                    let sink = QueueSink::new(Arc::clone(&queue), Arc::clone(&shared.progress))
                        .compact_lists(matches!(
                            shared.indexer.storage_mode(),
                            StorageMode::Compact { .. }
                        ))
                        .namespace(namespace.clone());
                    Arc::new(self.reflector(
                        &settings,
                        namespace.as_deref(),
                        Arc::clone(lister_watcher),
                        sink,
                        resync,
                    ))
                })
                .collect::<Vec<_>>();
            if let Some(observer) = settings.observer.clone() {
                // The time to the first sync, measured from here.
                let (informer, clock) = (self.clone(), Arc::clone(&shared.clock));
                let start = clock.now();
                tokio::spawn(async move {
                    if informer.wait_for_sync().await {
                        observer.synced(clock.now().saturating_duration_since(start));
                    }
                });
            }
            // `started` was false and is now true under this lock: nobody set these before.
            let _ = shared.queue.set(Arc::clone(&queue));
            let _ = shared.reflectors.set(reflectors.clone());
            let resync = (several && !settings.resync_check_period.is_zero()).then(|| {
                let processor = Arc::downgrade(&shared.processor);
                process_loop::Resync {
                    period: settings.resync_check_period,
                    clock: Arc::clone(&shared.clock),
                    should: Box::new(move || {
                        processor.upgrade().is_some_and(|p| p.should_resync())
                    }),
                }
            });
            (queue, reflectors, resync, settings.shutdown_timeout)
        };
        shared.processor.run(&tokio::runtime::Handle::current());
        let sinks = Sinks {
            indexer: &shared.indexer,
            processor: &shared.processor,
            block_deltas: &shared.block_deltas,
            progress: &shared.progress,
        };
        process_loop::run(&queue, &reflectors, resync, stop, sinks).await;
        shared.settings.lock().stopped = true;
        let unfinished = shared.processor.stop(shutdown_timeout).await;
        shared.progress.notify_waiters();
        ShutdownReport::new(unfinished)
    }

    /// The reflector of one lister-watcher into `sink`, resyncing every `resync` (zero: never).
    fn reflector(
        &self,
        settings: &Settings<K>,
        namespace: Option<&str>,
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        sink: QueueSink<K>,
        resync: Duration,
    ) -> Reflector<K> {
        let processor = Arc::downgrade(&self.shared.processor);
        let mut config = settings.reflector.clone();
        config.resync_period = resync;
        // Logs name the namespace of a reflector of a set, whose errors are its own.
        let name = match namespace {
            Some(namespace) => format!("{} in namespace {namespace}", self.shared.identity.name),
            None => self.shared.identity.name.to_string(),
        };
        let mut reflector = Reflector::named(lister_watcher, Arc::new(sink), config, name)
            .with_clock(Arc::clone(&self.shared.clock))
            .with_random(settings.random.clone())
            .with_should_resync(Arc::new(move || {
                processor.upgrade().is_some_and(|p| p.should_resync())
            }));
        if let Some(handler) = &settings.watch_error_handler {
            reflector = reflector.with_watch_error_handler(Arc::clone(handler));
        }
        reflector
            .with_observer(settings.observer.clone())
            .with_compact_cache(
                matches!(self.shared.indexer.storage_mode(), StorageMode::Compact { .. })
                    .then(|| self.shared.indexer.clone()),
            )
            .with_items_as_sent(self.shared.identity.as_sent)
    }
}

#[cfg(feature = "metrics")]
impl<K: Object> crate::instrument::InformerProbe for Shared<K> {
    fn last_sync_resource_version(&self) -> String {
        let first = self.reflectors.get().and_then(|r| r.first());
        first.map(|r| r.last_sync_resource_version()).unwrap_or_default()
    }

    fn pending(&self) -> Vec<(u64, usize)> {
        self.processor.pending_by_handler()
    }

    fn cache_decode_failures(&self) -> u64 {
        self.indexer.decode_failures()
    }
}

impl<K> std::fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let settings = self.shared.settings.lock();
        f.debug_struct("SharedIndexInformer")
            .field("started", &settings.started)
            .field("stopped", &settings.stopped)
            .field("cache", &self.shared.indexer)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod namespaces_tests;
#[cfg(test)]
mod tests;
