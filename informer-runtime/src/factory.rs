//! The shared informer factory: one informer per resource type for a whole program.
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
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::clock::SharedClock;
use crate::dynamic::DynamicObject;
use crate::lister::{Lister, NotFound};
use crate::listwatch::{DynamicScope, ListTweak, ListWatchSource, TweakListOptions};
use crate::reflector::ReflectorConfig;
use crate::resource::{GroupVersionResource, Object, Resource, is_namespaced};
use crate::selector::LabelSelector;
use crate::shared_informer::{Identity, SharedIndexInformer, ShutdownReport};
use crate::store::{ObjectKey, StorageMode};

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
    /// module's `FakeSource`): use a [`Client`](crate::Client), or a typed informer.
    #[error(
        "no dynamic informer for {0}: the factory's source lists only Rust types known at \
         compile time; use an HTTP client (informer_runtime::Client) as the source"
    )]
    DynamicNotSupported(GroupVersionResource),
}

type MetaTransform = Arc<dyn Fn(&mut ObjectMeta) + Send + Sync>;

/// How the factory makes its informers. Built by [`SharedInformerFactory::builder`].
pub struct FactoryBuilder<S> {
    source: S,
    /// Empty: every namespace.
    namespaces: BTreeSet<String>,
    typed_tweaks: HashMap<TypeId, TweakListOptions>,
    default_resync: Duration,
    custom_resync: HashMap<TypeId, Duration>,
    transform: Option<MetaTransform>,
    typed_transforms: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    reflector: ReflectorConfig,
    clock: Option<SharedClock>,
    label_index: bool,
    storage: StorageMode,
    custom_storage: HashMap<TypeId, StorageMode>,
    shutdown_timeout: Option<Duration>,
    backlog_warning: Option<usize>,
    max_queued_deltas: Option<usize>,
    #[cfg(feature = "metrics")]
    metrics: Option<crate::metrics::Metrics>,
}

impl<S: ListWatchSource> FactoryBuilder<S> {
    /// Watch only `namespace` (namespaced kinds; cluster-scoped kinds are unaffected): the
    /// set of one, see [`namespaces`](Self::namespaces).
    #[must_use]
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespaces = BTreeSet::from([namespace.to_owned()]);
        self
    }

    /// Watch only these namespaces (namespaced kinds; cluster-scoped kinds are unaffected):
    /// each informer runs one watch per namespace into one cache (see
    /// [`SharedIndexInformer::for_namespaces`]). It replaces an earlier
    /// [`namespace`](Self::namespace) or `namespaces`.
    ///
    /// A set: a namespace given twice counts once. As everywhere in Kubernetes, `""` means
    /// every namespace, so a set holding it, and an empty set (an operator's empty
    /// `WATCH_NAMESPACE`), watch every namespace.
    ///
    /// ```
    /// # use informer_runtime::factory::SharedInformerFactory;
    /// # use informer_runtime::testing::FakeSource;
    /// let client = FakeSource::new(); // or an HTTP client
    /// let factory = SharedInformerFactory::builder(client).namespaces(["team-a", "team-b"]).build();
    /// ```
    #[doc(alias = "DefaultNamespaces")]
    #[must_use]
    pub fn namespaces(mut self, namespaces: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.namespaces = namespaces.into_iter().map(Into::into).collect();
        self
    }

    /// Changes the selectors of every list and watch of every informer (client-go's
    /// `WithTweakListOptions`), starting from those of [`labels`](Self::labels) and
    /// [`fields`](Self::fields); see [`ListTweak`] for what it may change and why, and
    /// [Sharding across replicas](self#sharding-across-replicas) for a use. It replaces an
    /// earlier one.
    #[doc(alias = "WithTweakListOptions")]
    #[must_use]
    pub fn tweak_list_options(
        mut self,
        tweak: impl Fn(&mut ListTweak) + Send + Sync + 'static,
    ) -> Self {
        self.reflector.tweak_list_options = Some(TweakListOptions::new(tweak));
        self
    }

    /// A tweak of the lists and watches of the informer for `K`, run after the factory's
    /// [`tweak_list_options`](Self::tweak_list_options) (so it can add to a shard's selector).
    /// For [`DynamicObject`], of every dynamic informer.
    ///
    /// ```
    /// # use informer_runtime::factory::SharedInformerFactory;
    /// # use informer_runtime::testing::FakeSource;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let client = FakeSource::new();
    /// // Only the pods of this node; other kinds unfiltered.
    /// let factory = SharedInformerFactory::builder(client)
    ///     .tweak_list_options_for::<Pod>(|options| {
    ///         options.and_fields("spec.nodeName=node-1");
    ///     })
    ///     .build();
    /// ```
    #[must_use]
    pub fn tweak_list_options_for<K: Object>(
        mut self,
        tweak: impl Fn(&mut ListTweak) + Send + Sync + 'static,
    ) -> Self {
        self.typed_tweaks.insert(TypeId::of::<K>(), TweakListOptions::new(tweak));
        self
    }

    /// Label selector for every list and watch of every informer.
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        self.reflector.label_selector = Some(selector.to_owned());
        self
    }

    /// Field selector for every list and watch of every informer.
    #[must_use]
    pub fn fields(mut self, selector: &str) -> Self {
        self.reflector.field_selector = Some(selector.to_owned());
        self
    }

    /// Default resync period of every informer (zero: never).
    #[must_use]
    pub fn resync(mut self, period: Duration) -> Self {
        self.default_resync = period;
        self
    }

    /// Resync period of the informer for `K`, instead of the default. For
    /// [`DynamicObject`], of every dynamic informer.
    #[doc(alias = "WithCustomResyncConfig")]
    #[must_use]
    pub fn resync_for<K: Object>(mut self, period: Duration) -> Self {
        self.custom_resync.insert(TypeId::of::<K>(), period);
        self
    }

    /// A transform of every object's metadata, for every informer. It overrides an informer's
    /// own transform. (`managedFields` needs none: it is dropped while decoding unless
    /// [`keep_managed_fields`](Self::keep_managed_fields) says otherwise.)
    #[doc(alias = "WithTransform")]
    #[must_use]
    pub fn transform(
        mut self,
        transform: impl Fn(&mut ObjectMeta) + Send + Sync + 'static,
    ) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// A transform for objects of `K`; it takes precedence over [`transform`](Self::transform).
    /// For [`DynamicObject`], of every dynamic informer.
    #[must_use]
    pub fn transform_for<K: Object>(
        mut self,
        transform: impl Fn(&mut K) + Send + Sync + 'static,
    ) -> Self {
        let transform: Arc<dyn Fn(&mut K) + Send + Sync> = Arc::new(transform);
        self.typed_transforms.insert(TypeId::of::<K>(), Box::new(transform));
        self
    }

    /// Keep `metadata.managedFields` in the objects every informer caches.
    ///
    /// Off by default: the HTTP client skips `managedFields` while it decodes list pages and
    /// watch events, so it is never even allocated (client-go recommends stripping it in
    /// informers, whose controllers almost never read it; it is over 40% of a realistic pod's
    /// JSON, and skipping it takes about a third off the peak memory of a pod informer's sync).
    /// Turn it on for a controller that reads field ownership; objects are then decoded whole. The `testing` module's `FakeSource` follows the same option.
    ///
    /// ```
    /// # use informer_runtime::factory::SharedInformerFactory;
    /// # use informer_runtime::testing::FakeSource;
    /// let client = FakeSource::new(); // or an HTTP client
    /// let factory = SharedInformerFactory::builder(client).keep_managed_fields(true).build();
    /// ```
    #[must_use]
    pub fn keep_managed_fields(mut self, keep: bool) -> Self {
        self.reflector.keep_managed_fields = keep;
        self
    }

    /// Reflector options for every informer (paging, streaming list, backoff). Selectors, the
    /// [list tweak](Self::tweak_list_options) and
    /// [`keep_managed_fields`](Self::keep_managed_fields) set earlier on this builder are kept
    /// unless `config` sets them.
    #[must_use]
    pub fn reflector_config(mut self, config: ReflectorConfig) -> Self {
        let (labels, fields) =
            (self.reflector.label_selector.take(), self.reflector.field_selector.take());
        let tweak = self.reflector.tweak_list_options.take();
        let keep_managed_fields = self.reflector.keep_managed_fields;
        self.reflector = config;
        self.reflector.label_selector = self.reflector.label_selector.take().or(labels);
        self.reflector.field_selector = self.reflector.field_selector.take().or(fields);
        self.reflector.tweak_list_options = self.reflector.tweak_list_options.take().or(tweak);
        self.reflector.keep_managed_fields |= keep_managed_fields;
        self
    }

    /// The clock every informer uses.
    #[must_use]
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Informers without the label index; see
    /// [`SharedIndexInformer::without_label_index`].
    #[must_use]
    pub fn without_label_index(mut self) -> Self {
        self.label_index = false;
        self
    }

    /// Informers whose caches hold objects in a compact form, decoded on read, keeping the
    /// `recent` objects read or written last decoded; see
    /// [`SharedIndexInformer::with_compact_storage`] and, for when to choose it,
    /// [`Indexer::with_compact_storage`](crate::store::Indexer::with_compact_storage).
    ///
    /// ```
    /// # use informer_runtime::factory::SharedInformerFactory;
    /// # use informer_runtime::store::StorageMode;
    /// # use informer_runtime::testing::FakeSource;
    /// # use k8s_openapi::api::core::v1::{Namespace, Pod};
    /// let client = FakeSource::new(); // or an HTTP client
    /// let factory = SharedInformerFactory::builder(client)
    ///     .compact_storage(1024)
    ///     .decoded_storage_for::<Namespace>() // few and often listed: keep them decoded
    ///     .build();
    /// assert_eq!(factory.informer::<Pod>().cache().storage_mode(), StorageMode::Compact { recent: 1024 });
    /// assert_eq!(factory.informer::<Namespace>().cache().storage_mode(), StorageMode::Decoded);
    /// ```
    #[must_use]
    pub fn compact_storage(mut self, recent: usize) -> Self {
        self.storage = StorageMode::Compact { recent };
        self
    }

    /// Compact storage for the informer of `K` only, whatever
    /// [`compact_storage`](Self::compact_storage) says for the others.
    ///
    /// ```
    /// # use informer_runtime::factory::SharedInformerFactory;
    /// # use informer_runtime::store::StorageMode;
    /// # use informer_runtime::testing::FakeSource;
    /// # use k8s_openapi::api::core::v1::{Namespace, Pod};
    /// let factory = SharedInformerFactory::builder(FakeSource::new())
    ///     .compact_storage_for::<Pod>(256) // the many; the rest stays decoded
    ///     .build();
    /// assert_eq!(factory.informer::<Pod>().cache().storage_mode(), StorageMode::Compact { recent: 256 });
    /// assert_eq!(factory.informer::<Namespace>().cache().storage_mode(), StorageMode::Decoded);
    /// ```
    #[must_use]
    pub fn compact_storage_for<K: Object>(mut self, recent: usize) -> Self {
        self.custom_storage.insert(TypeId::of::<K>(), StorageMode::Compact { recent });
        self
    }

    /// Decoded objects (the default) for the informer of `K`, whatever
    /// [`compact_storage`](Self::compact_storage) says for the others.
    #[must_use]
    pub fn decoded_storage_for<K: Object>(mut self) -> Self {
        self.custom_storage.insert(TypeId::of::<K>(), StorageMode::Decoded);
        self
    }

    /// How long [`shutdown`](SharedInformerFactory::shutdown) waits for handlers in a call to
    /// return (default 30 seconds); see [`SharedIndexInformer::with_shutdown_timeout`].
    #[must_use]
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = Some(timeout);
        self
    }

    /// How many watch events may wait, decoded, for each informer's cache (default 1,000);
    /// see [`SharedIndexInformer::with_max_queued_deltas`].
    #[must_use]
    pub fn max_queued_deltas(mut self, max: usize) -> Self {
        self.max_queued_deltas = Some(max);
        self
    }

    /// The backlog at which a handler of any informer logs a warning (default 10,000; zero:
    /// never); see [`SharedIndexInformer::with_handler_backlog_warning`].
    #[must_use]
    pub fn handler_backlog_warning(mut self, mark: usize) -> Self {
        self.backlog_warning = Some(mark);
        self
    }

    /// Records every informer's metrics (`informer_events_total`, ...) in `metrics`; see
    /// [`SharedIndexInformer::with_metrics`].
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    #[must_use]
    pub fn metrics(mut self, metrics: &crate::metrics::Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// The factory.
    #[must_use]
    pub fn build(self) -> SharedInformerFactory<S> {
        SharedInformerFactory {
            inner: Arc::new(Inner {
                options: self,
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
}

/// A type-erased informer: what the factory needs to run, sync and list any of them.
trait ErasedInformer: Send + Sync {
    fn gvr(&self) -> GroupVersionResource;
    fn partial(&self) -> bool;
    fn has_synced(&self) -> bool;
    fn wait_for_sync(&self) -> BoxFuture<'static, bool>;
    fn run(&self, stop: CancellationToken) -> BoxFuture<'static, ShutdownReport>;
    fn list(&self, selector: &LabelSelector) -> Vec<Arc<dyn DynResource>>;
    fn get(&self, key: &str) -> Option<Arc<dyn DynResource>>;
    fn as_any(&self) -> &dyn Any;
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

impl<K: Object + DynResource> ErasedInformer for SharedIndexInformer<K> {
    fn gvr(&self) -> GroupVersionResource {
        self.identity().gvr().clone()
    }

    fn partial(&self) -> bool {
        self.identity().partial()
    }

    fn has_synced(&self) -> bool {
        SharedIndexInformer::has_synced(self)
    }

    fn wait_for_sync(&self) -> BoxFuture<'static, bool> {
        let informer = self.clone();
        Box::pin(async move { informer.wait_for_sync().await })
    }

    fn run(&self, stop: CancellationToken) -> BoxFuture<'static, ShutdownReport> {
        let informer = self.clone();
        Box::pin(async move { informer.run(stop).await })
    }

    fn list(&self, selector: &LabelSelector) -> Vec<Arc<dyn DynResource>> {
        self.lister().list(selector).into_iter().map(|o| o as Arc<dyn DynResource>).collect()
    }

    fn get(&self, key: &str) -> Option<Arc<dyn DynResource>> {
        self.cache().get_by_key(key).map(|o| o as Arc<dyn DynResource>)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An object of a type known only at run time, as a [`GenericLister`] returns it.
pub trait DynResource: Any + Send + Sync {
    /// The object's metadata.
    fn metadata(&self) -> &ObjectMeta;
    /// The object's kind.
    fn kind(&self) -> &str;
    /// The object as JSON.
    ///
    /// # Errors
    ///
    /// When the object cannot be serialized.
    fn to_json(&self) -> serde_json::Result<serde_json::Value>;
    /// The object itself, to downcast to its Rust type.
    fn as_any(&self) -> &dyn Any;
}

impl<K: Resource> DynResource for K {
    fn metadata(&self) -> &ObjectMeta {
        self.meta()
    }

    fn kind(&self) -> &str {
        K::KIND
    }

    fn to_json(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl DynResource for DynamicObject {
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn kind(&self) -> &str {
        DynamicObject::kind(self)
    }

    fn to_json(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::to_value(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An informer found by group/version/resource; see [`SharedInformerFactory::for_resource`].
#[derive(Clone)]
pub struct GenericInformer {
    erased: Arc<dyn ErasedInformer>,
}

impl GenericInformer {
    /// The resource it watches.
    #[must_use]
    pub fn resource(&self) -> GroupVersionResource {
        self.erased.gvr()
    }

    /// Whether its cache holds the first complete list.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.erased.has_synced()
    }

    /// A lister over its cache.
    #[must_use]
    pub fn lister(&self) -> GenericLister {
        GenericLister { erased: Arc::clone(&self.erased) }
    }

    /// The typed informer, when `K` is its type ([`DynamicObject`] for a dynamic informer).
    #[must_use]
    pub fn downcast<K: Object>(&self) -> Option<SharedIndexInformer<K>> {
        self.erased.as_any().downcast_ref::<SharedIndexInformer<K>>().cloned()
    }
}

impl fmt::Debug for GenericInformer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenericInformer").field("resource", &self.erased.gvr()).finish()
    }
}

/// Reads a [`GenericInformer`]'s cache.
#[derive(Clone)]
pub struct GenericLister {
    erased: Arc<dyn ErasedInformer>,
}

impl GenericLister {
    /// The objects whose labels match `selector`.
    #[must_use]
    pub fn list(&self, selector: &LabelSelector) -> Vec<Arc<dyn DynResource>> {
        self.erased.list(selector)
    }

    /// The object `name` in `namespace` (`None` for cluster-scoped kinds).
    ///
    /// # Errors
    ///
    /// [`NotFound`] when the cache does not hold it.
    pub fn get(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Arc<dyn DynResource>, NotFound> {
        let key = ObjectKey::new(namespace, name);
        self.erased
            .get(key.as_str())
            .ok_or_else(|| NotFound { resource: self.erased.gvr().resource, name: name.to_owned() })
    }
}

impl fmt::Debug for GenericLister {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenericLister").field("resource", &self.erased.gvr()).finish()
    }
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
        FactoryBuilder {
            source,
            namespaces: BTreeSet::new(),
            typed_tweaks: HashMap::new(),
            default_resync: Duration::ZERO,
            custom_resync: HashMap::new(),
            transform: None,
            typed_transforms: HashMap::new(),
            reflector: ReflectorConfig::default(),
            clock: None,
            label_index: true,
            storage: StorageMode::Decoded,
            custom_storage: HashMap::new(),
            shutdown_timeout: None,
            backlog_warning: None,
            max_queued_deltas: None,
            #[cfg(feature = "metrics")]
            metrics: None,
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

#[cfg(test)]
mod tests;
