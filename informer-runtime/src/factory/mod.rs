//! The shared informer factory: one informer per resource type for a whole program.
//!
//! **Who it is for.** Every program: the factory is where informers come from, and the one place to
//! start and stop them.
//!
//! Every part of a program that asks the same [`SharedInformerFactory`] for pods gets the same
//! [`SharedIndexInformer`]: one watch, one cache, however many handlers and listers.
//!
//! # Lifecycle
//!
//! ```
//! # use std::sync::Arc;
//! # use std::time::Duration;
//! # use informer_runtime::factory::SharedInformerFactory;
//! # use informer_runtime::shared_informer::HandlerFuncs;
//! # use informer_runtime::selector::LabelSelector;
//! # use informer_runtime::testing::FakeSource;
//! # use k8s_openapi::api::core::v1::Pod;
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let client = FakeSource::new(); // or an HTTP client
//! // Create the factory.
//! let factory = SharedInformerFactory::builder(client).resync(Duration::from_secs(600)).build();
//! // Ask for informers, register handlers.
//! let pods = factory.informer::<Pod>();
//! let registration = pods
//!     .add_event_handler(HandlerFuncs::new().on_add(|pod: Arc<Pod>, _| println!("{:?}", pod.metadata.name)))
//!     .unwrap();
//! // Start every informer asked for so far, and wait for their caches.
//! factory.start();
//! assert!(factory.wait_for_cache_sync(Duration::from_secs(30)).await.all_synced());
//! // Read from the cache.
//! let all = factory.lister::<Pod>().list(&LabelSelector::everything());
//! # assert!(all.is_empty());
//! // Shut down: stops every informer and waits for all their tasks.
//! factory.shutdown().await;
//! pods.remove_event_handler(&registration);
//! # }
//! ```
//!
//! # A set of namespaces
//!
//! `.namespaces(["team-a", "team-b"])` limits every informer of a namespaced kind to those
//! namespaces (controller-runtime's `cache.Options.DefaultNamespaces`): one watch per
//! namespace, one cache, one lister, handlers registered once; see
//! [`SharedIndexInformer::for_namespaces`]. Cluster-scoped kinds are unaffected.
//!
//! # Sharding across replicas
//!
//! One process holds one cache of a resource, and handles all of its changes. Past what one
//! process can do, shard the resource by a label: whoever creates an object (or a mutating
//! webhook) labels it `shard=<hash of its name> % n`, with a hash every writer computes the
//! same way (FNV-1a below, not `std`'s `DefaultHasher`, whose output may change between Rust
//! releases), and replica `k` of `n` watches `shard=k` only, through a list tweak (client-go's
//! `WithTweakListOptions`). The server filters: each replica lists, watches, caches and
//! handles its shard alone, and the replicas partition the objects exactly. An object whose
//! label changes leaves one replica's cache as a delete and enters another's as an add; one
//! without the label is in no shard, so label every object, or give one replica `!shard`.
//!
//! ```
//! # use informer_runtime::factory::SharedInformerFactory;
//! # use informer_runtime::testing::FakeSource;
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! /// The shard of an object named `name`, out of `shards`: FNV-1a, stable everywhere.
//! fn shard_of(name: &str, shards: u64) -> u64 {
//!     let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
//!         (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
//!     });
//!     hash % shards
//! }
//!
//! let client = FakeSource::new(); // or an HTTP client
//! let (replica, replicas) = (1, 3); // from the StatefulSet's ordinal, say
//! let factory = SharedInformerFactory::builder(client)
//!     .tweak_list_options(move |options| {
//!         options.and_labels(&format!("shard={replica}"));
//!     })
//!     .build();
//! let maps = factory.informer::<ConfigMap>(); // this replica's shard only
//! # assert_eq!(shard_of("web", replicas), shard_of("web", 3));
//! ```
//!
//! # Metadata only
//!
//! `factory.informer::<PartialObjectMetadata<Pod>>()` is the informer of pods' metadata alone
//! (client-go's `metadatainformer`): the server sends only each pod's `ObjectMeta`, and its
//! cache, handlers and [`Lister<PartialObjectMetadata<Pod>>`](crate::Lister) hold nothing else.
//! It is an informer like any other, shared per type, and is separate from
//! `factory.informer::<Pod>()`. See the [`metadata`](crate::metadata) module.
//!
//! # Views
//!
//! A view (projection) of pods, a struct with `#[informer(view = Pod)]` and only the fields a
//! controller reads, has an informer of its own too: `factory.informer::<PodView>()` lists and
//! watches pods and decodes each straight into `PodView`, skipping the rest unallocated. See
//! [Whole objects, metadata and views](crate::resource#whole-objects-metadata-and-views).

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::dynamic::DynamicObject;
use crate::lister::Lister;
use crate::listwatch::{DynamicScope, ListWatchSource};
use crate::reflector::WatchHealth;
use crate::resource::{GroupVersionResource, Object, Resource, is_namespaced};
use crate::shared_informer::{Identity, SharedIndexInformer, ShutdownReport};
use crate::store::StorageMode;

/// Why the factory could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactoryError {
    /// [`for_resource`](SharedInformerFactory::for_resource) knows no type for this resource,
    /// and the factory's source cannot list resources unknown at compile time: ask for its
    /// type once with [`informer`](SharedInformerFactory::informer) or
    /// [`register`](SharedInformerFactory::register) it.
    #[error("no informer found for {0}")]
    NoInformerFound(GroupVersionResource),
    /// The factory's source cannot list resources unknown at compile time (the `testing`
    /// module's `FakeSource`): use `informer-client`'s `Client`, or a typed informer.
    #[error(
        "no dynamic informer for {0}: the factory's source lists only Rust types known at \
         compile time; use an HTTP client (informer_client::Client) as the source"
    )]
    DynamicNotSupported(GroupVersionResource),
}

/// Which informers synced, from [`SharedInformerFactory::wait_for_cache_sync`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheSyncReport(pub BTreeMap<GroupVersionResource, bool>);

impl CacheSyncReport {
    /// Whether every started informer synced.
    #[must_use]
    pub fn all_synced(&self) -> bool {
        self.0.values().all(|synced| *synced)
    }

    /// The resources whose informers did not sync.
    #[must_use]
    pub fn not_synced(&self) -> Vec<&GroupVersionResource> {
        self.0.iter().filter(|(_, synced)| !**synced).map(|(gvr, _)| gvr).collect()
    }
}

/// How one of a factory's informers is doing: [`SharedInformerFactory::health`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InformerHealth {
    /// The resource it watches (a resource may have several informers: whole objects,
    /// metadata only, views).
    pub resource: GroupVersionResource,
    /// Whether its cache holds the first complete list.
    pub synced: bool,
    /// Whether its lists and watches have been failing, and for how long.
    pub watch: WatchHealth,
}

/// What the factory keeps one informer per: a Rust type, or a resource known at run time (and
/// whether of metadata only).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum InformerKey {
    Typed(TypeId),
    Dynamic(GroupVersionResource, bool),
}

struct Entry {
    typed: Box<dyn Any + Send + Sync>,
    erased: Arc<dyn ErasedInformer>,
    started: bool,
}

impl Entry {
    fn new<K: Object + DynResource>(informer: &SharedIndexInformer<K>) -> Self {
        Self {
            typed: Box::new(informer.clone()),
            erased: Arc::new(informer.clone()),
            started: false,
        }
    }
}

type Constructor<S> = fn(&SharedInformerFactory<S>) -> Arc<dyn ErasedInformer>;

struct State<S> {
    informers: HashMap<InformerKey, Entry>,
    registered: HashMap<GroupVersionResource, Constructor<S>>,
    shutting_down: bool,
}

struct Inner<S> {
    options: FactoryBuilder<S>,
    state: Mutex<State<S>>,
    tasks: TaskTracker,
    stop: CancellationToken,
    /// What the informers' runs reported as they ended.
    report: Mutex<ShutdownReport>,
}

/// One informer per resource type, shared by every caller; see the [module documentation](self).
pub struct SharedInformerFactory<S> {
    inner: Arc<Inner<S>>,
}

impl<S> Clone for SharedInformerFactory<S> {
    fn clone(&self) -> Self {
        Self { inner: Arc::clone(&self.inner) }
    }
}

impl<S: ListWatchSource> SharedInformerFactory<S> {
    /// A factory with default options over `source`.
    #[must_use]
    pub fn new(source: S) -> Self {
        Self::builder(source).build()
    }

    /// Options: namespace, selectors, resync, transforms, `managedFields`.
    #[must_use]
    pub fn builder(source: S) -> FactoryBuilder<S> {
        FactoryBuilder::new(source)
    }

    /// The factory `options` describe.
    fn from_options(options: FactoryBuilder<S>) -> Self {
        Self {
            inner: Arc::new(Inner {
                options,
                state: Mutex::new(State {
                    informers: HashMap::new(),
                    registered: HashMap::new(),
                    shutting_down: false,
                }),
                tasks: TaskTracker::new(),
                stop: CancellationToken::new(),
                report: Mutex::new(ShutdownReport::default()),
            }),
        }
    }

    /// The informer for `K`, created on first request. Asking is enough to have it run by the
    /// next [`start`](Self::start), as with client-go's `factory.Core().V1().Pods().Informer()`.
    #[doc(alias = "InformerFor")]
    #[allow(
        clippy::must_use_candidate,
        reason = "asking registers the informer; the handle may be dropped"
    )]
    pub fn informer<K: Resource>(&self) -> SharedIndexInformer<K> {
        let mut state = self.inner.state.lock();
        let key = InformerKey::Typed(TypeId::of::<K>());
        if let Some(informer) =
            state.informers.get(&key).and_then(|e| e.typed.downcast_ref::<SharedIndexInformer<K>>())
        {
            return informer.clone();
        }
        let informer = self.configure(self.scoped_informer::<K>());
        register::<S, K>(&mut state.registered);
        state.informers.insert(key, Entry::new(&informer));
        informer
    }

    /// The informer of `gvr`, a resource known only at run time, holding
    /// [`DynamicObject`]s; created on first request, like [`informer`](Self::informer), and
    /// shared per resource (client-go's `dynamicinformer.NewDynamicSharedInformerFactory(...)
    /// .ForResource(gvr)`). Its kind and scope come from the server's discovery when it first
    /// lists; see the [`dynamic`](crate::dynamic) module. Options set for
    /// [`DynamicObject`] (`resync_for`, `transform_for`, `compact_storage_for`) apply to it.
    ///
    /// # Errors
    ///
    /// [`FactoryError::DynamicNotSupported`] when the factory's source cannot list resources
    /// unknown at compile time.
    #[doc(alias = "ForResource")]
    pub fn dynamic_informer(
        &self,
        gvr: &GroupVersionResource,
    ) -> Result<SharedIndexInformer<DynamicObject>, FactoryError> {
        self.dynamic(gvr, false)
    }

    /// The informer of the metadata alone of `gvr`'s objects (client-go's
    /// `metadatainformer`): as [`dynamic_informer`](Self::dynamic_informer), but the server
    /// sends each object's `ObjectMeta` only, and its objects' `kind` is
    /// `PartialObjectMetadata`.
    ///
    /// # Errors
    ///
    /// As [`dynamic_informer`](Self::dynamic_informer).
    pub fn dynamic_metadata_informer(
        &self,
        gvr: &GroupVersionResource,
    ) -> Result<SharedIndexInformer<DynamicObject>, FactoryError> {
        self.dynamic(gvr, true)
    }

    fn dynamic(
        &self,
        gvr: &GroupVersionResource,
        metadata_only: bool,
    ) -> Result<SharedIndexInformer<DynamicObject>, FactoryError> {
        let mut state = self.inner.state.lock();
        let key = InformerKey::Dynamic(gvr.clone(), metadata_only);
        if let Some(informer) = state
            .informers
            .get(&key)
            .and_then(|e| e.typed.downcast_ref::<SharedIndexInformer<DynamicObject>>())
        {
            return Ok(informer.clone());
        }
        let informer = self.configure(self.scoped_dynamic_informer(gvr, metadata_only)?);
        state.informers.insert(key, Entry::new(&informer));
        Ok(informer)
    }

    /// Applies the factory's options to a new informer of `K`.
    fn configure<K: Object>(&self, informer: SharedIndexInformer<K>) -> SharedIndexInformer<K> {
        let options = &self.inner.options;
        let resync = options
            .custom_resync
            .get(&TypeId::of::<K>())
            .copied()
            .unwrap_or(options.default_resync);
        let mut config = options.reflector.clone();
        if let Some(typed) = options.typed_tweaks.get(&TypeId::of::<K>()) {
            config.tweak_list_options = Some(match config.tweak_list_options.take() {
                Some(factory_wide) => factory_wide.then(typed.clone()),
                None => typed.clone(),
            });
        }
        let mut informer = informer.with_resync(resync).with_reflector_config(config);
        if let Some(clock) = &options.clock {
            informer = informer.with_clock(Arc::clone(clock));
        }
        if !options.label_index {
            informer = informer.without_label_index();
        }
        let storage =
            options.custom_storage.get(&TypeId::of::<K>()).copied().unwrap_or(options.storage);
        if let StorageMode::Compact { recent } = storage {
            informer = informer.with_compact_storage(recent);
        }
        if let Some(timeout) = options.shutdown_timeout {
            informer = informer.with_shutdown_timeout(timeout);
        }
        if let Some(mark) = options.backlog_warning {
            informer = informer.with_handler_backlog_warning(mark);
        }
        if let Some(max) = options.max_queued_deltas {
            informer = informer.with_max_queued_deltas(max);
        }
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &options.metrics {
            informer = informer.with_metrics(metrics);
        }
        let typed = options
            .typed_transforms
            .get(&TypeId::of::<K>())
            .and_then(|t| t.downcast_ref::<Arc<dyn Fn(&mut K) + Send + Sync>>());
        // Not started yet: setting a transform cannot fail here.
        let _ = match (typed, &options.transform) {
            (Some(transform), _) => {
                let transform = Arc::clone(transform);
                informer.set_transform(move |obj: &mut K| transform(obj))
            }
            (None, Some(transform)) => {
                let transform = Arc::clone(transform);
                informer.set_transform(move |obj: &mut K| {
                    transform(obj.meta_mut());
                })
            }
            (None, None) => Ok(()),
        };
        informer
    }

    /// A bare informer for `K` over the factory's namespaces: every namespace (the empty set,
    /// or one holding `""`, and any cluster-scoped kind), one, or one lister-watcher for each.
    fn scoped_informer<K: Resource>(&self) -> SharedIndexInformer<K> {
        let options = &self.inner.options;
        let source = &options.source;
        let every = options.namespaces.is_empty() || options.namespaces.contains("");
        if every || !is_namespaced::<K>() {
            return SharedIndexInformer::new(source.lister_watcher::<K>(None));
        }
        let scoped = options
            .namespaces
            .iter()
            .map(|ns| (Some(ns.clone()), source.lister_watcher::<K>(Some(ns))))
            .collect::<Vec<_>>();
        // A set without "" and not empty, as `for_namespaces` wants it; one namespace keeps the
        // single lister-watcher it always had.
        match <[_; 1]>::try_from(scoped) {
            Ok([(_, single)]) => SharedIndexInformer::new(single),
            Err(scoped) => SharedIndexInformer::with_lister_watchers(scoped, Identity::of::<K>()),
        }
    }

    /// [`scoped_informer`](Self::scoped_informer) of a resource known at run time, whose scope
    /// is not known yet: a single namespace is ignored by its lister-watcher if the resource
    /// turns out cluster-scoped; the lister-watchers of a set refuse one (each would list it
    /// whole).
    fn scoped_dynamic_informer(
        &self,
        gvr: &GroupVersionResource,
        metadata_only: bool,
    ) -> Result<SharedIndexInformer<DynamicObject>, FactoryError> {
        let options = &self.inner.options;
        let source = &options.source;
        let unsupported = || FactoryError::DynamicNotSupported(gvr.clone());
        let every = options.namespaces.is_empty() || options.namespaces.contains("");
        let single = options.namespaces.first().filter(|_| options.namespaces.len() == 1);
        if every || single.is_some() {
            let scope = match single {
                Some(namespace) if !every => DynamicScope::Namespace(namespace),
                _ => DynamicScope::All,
            };
            let lister_watcher =
                source.dynamic_lister_watcher(gvr, scope, metadata_only).ok_or_else(unsupported)?;
            return Ok(SharedIndexInformer::dynamic(lister_watcher, gvr.clone(), metadata_only));
        }
        let mut scoped = Vec::with_capacity(options.namespaces.len());
        for namespace in &options.namespaces {
            let scope = DynamicScope::NamespaceOfSet(namespace);
            let lister_watcher =
                source.dynamic_lister_watcher(gvr, scope, metadata_only).ok_or_else(unsupported)?;
            scoped.push((Some(namespace.clone()), lister_watcher));
        }
        Ok(SharedIndexInformer::dynamic_for_namespaces(scoped, gvr.clone(), metadata_only))
    }

    /// A lister over the cache of the informer for `K` (creating the informer if needed).
    #[must_use]
    pub fn lister<K: Resource>(&self) -> Lister<K> {
        self.informer::<K>().lister()
    }

    /// Makes `K` known to [`for_resource`](Self::for_resource) without creating its informer.
    pub fn register<K: Resource>(&self) {
        register::<S, K>(&mut self.inner.state.lock().registered);
    }

    /// The informer for a resource known only at run time: one already asked for, or one whose
    /// type was [registered](Self::register), or else a [dynamic
    /// informer](Self::dynamic_informer) of it, for any resource the server serves.
    ///
    /// A resource has informers of several types when `K` and
    /// [`PartialObjectMetadata<K>`](crate::metadata::PartialObjectMetadata) or a view of `K`
    /// were asked for; the one of `K` (whole objects) is the answer then, as it is what
    /// client-go's `ForResource` gives; a typed informer before a dynamic one. Between parts
    /// only (metadata, views), any of them.
    ///
    /// Two consequences of the fallback: a resource the server does not serve (a typo, a CRD
    /// not installed yet) gets an informer that syncs only once it is served, which
    /// [`wait_for_cache_sync`](Self::wait_for_cache_sync) reports as not synced and whose errors
    /// say why; and a resource asked for here before its Rust type was asked for or
    /// [registered](Self::register) gets a dynamic informer, beside the typed one asked for
    /// later (two watches): register types first.
    ///
    /// # Errors
    ///
    /// [`FactoryError::NoInformerFound`] for a resource no type was registered for when the
    /// factory's source cannot list resources unknown at compile time.
    #[doc(alias = "ForResource")]
    pub fn for_resource(
        &self,
        gvr: &GroupVersionResource,
    ) -> Result<GenericInformer, FactoryError> {
        let constructor = {
            let state = self.inner.state.lock();
            // Whole objects before metadata only and views, typed before dynamic, whatever
            // the map's order.
            let found = state.informers.iter().filter(|(_, e)| e.erased.gvr() == *gvr).min_by_key(
                |(key, e)| (e.erased.partial(), matches!(key, InformerKey::Dynamic(..))),
            );
            if let Some((_, entry)) = found {
                return Ok(GenericInformer { erased: Arc::clone(&entry.erased) });
            }
            state.registered.get(gvr).copied()
        };
        if let Some(constructor) = constructor {
            return Ok(GenericInformer { erased: constructor(self) });
        }
        match self.dynamic_informer(gvr) {
            Ok(informer) => Ok(GenericInformer { erased: Arc::new(informer) }),
            Err(_) => Err(FactoryError::NoInformerFound(gvr.clone())),
        }
    }

    /// Starts every informer asked for and not started yet. Call it again after asking for more;
    /// after [`shutdown`](Self::shutdown) it does nothing.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn start(&self) {
        let mut state = self.inner.state.lock();
        if state.shutting_down {
            return;
        }
        for entry in state.informers.values_mut().filter(|e| !e.started) {
            entry.started = true;
            let run = entry.erased.run(self.inner.stop.child_token());
            // Weak: an informer that outlives a dropped factory must not keep it alive.
            let inner = Arc::downgrade(&self.inner);
            self.inner.tasks.spawn(async move {
                let report = run.await;
                if let Some(inner) = inner.upgrade() {
                    inner.report.lock().merge(report);
                }
            });
        }
    }

    /// How each started informer is doing, in no particular order: whether its cache synced,
    /// and whether its lists and watches have been failing (and for how long). What a
    /// readiness probe reads; it waits for nothing.
    #[must_use]
    pub fn health(&self) -> Vec<InformerHealth> {
        let state = self.inner.state.lock();
        state
            .informers
            .values()
            .filter(|e| e.started)
            .map(|e| InformerHealth {
                resource: e.erased.gvr(),
                synced: e.erased.has_synced(),
                watch: e.erased.health(),
            })
            .collect()
    }

    /// Waits until every started informer has synced, or `timeout` passed; says which synced.
    ///
    /// The report names resources: when a resource has several informers (whole objects,
    /// metadata only, views), it says synced only if all did.
    pub async fn wait_for_cache_sync(&self, timeout: Duration) -> CacheSyncReport {
        let started: Vec<Arc<dyn ErasedInformer>> = self
            .inner
            .state
            .lock()
            .informers
            .values()
            .filter(|e| e.started)
            .map(|e| Arc::clone(&e.erased))
            .collect();
        let waits = started.into_iter().map(|informer| async move {
            let synced =
                tokio::time::timeout(timeout, informer.wait_for_sync()).await.unwrap_or(false);
            (informer.gvr(), synced)
        });
        let mut report = CacheSyncReport::default();
        for (gvr, synced) in futures::future::join_all(waits).await {
            *report.0.entry(gvr).or_insert(true) &= synced;
        }
        report
    }

    /// Stops every informer and waits until their watches have ended and their handlers have
    /// returned, or the [shutdown timeout](FactoryBuilder::shutdown_timeout) ran out (the
    /// informers stop together, so it is the time the whole shutdown takes at most). The report
    /// names the handlers still in a call; each is also logged. A second call reports nothing
    /// new.
    pub async fn shutdown(&self) -> ShutdownReport {
        self.inner.state.lock().shutting_down = true;
        self.inner.stop.cancel();
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
        std::mem::take(&mut *self.inner.report.lock())
    }
}

/// Makes `K` the type [`for_resource`](SharedInformerFactory::for_resource) builds for its
/// resource, unless it holds parts of objects (metadata only, a view) and another type is
/// registered there already.
fn register<S: ListWatchSource, K: Resource>(
    registered: &mut HashMap<GroupVersionResource, Constructor<S>>,
) {
    let gvr = GroupVersionResource::of::<K>();
    if !K::PARTIAL || !registered.contains_key(&gvr) {
        registered.insert(gvr, |f| Arc::new(f.informer::<K>()));
    }
}

impl<S: ListWatchSource> FactoryBuilder<S> {
    /// The factory.
    ///
    /// (Defined here rather than beside the builder's options, so that the builder, below the
    /// factory, does not import it.)
    #[must_use]
    pub fn build(self) -> SharedInformerFactory<S> {
        SharedInformerFactory::from_options(self)
    }
}

impl<S> fmt::Debug for SharedInformerFactory<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        let mut resources: Vec<GroupVersionResource> =
            state.informers.values().map(|e| e.erased.gvr()).collect();
        resources.sort();
        f.debug_struct("SharedInformerFactory")
            .field("namespaces", &self.inner.options.namespaces)
            .field("informers", &resources)
            .field("shutting_down", &state.shutting_down)
            .finish()
    }
}

mod builder;
mod generic;
#[cfg(test)]
mod tests;

pub use builder::FactoryBuilder;
use generic::ErasedInformer;
pub use generic::{DynResource, GenericInformer, GenericLister};
