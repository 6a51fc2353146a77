//! The factory's options: namespaces, selectors and tweaks, resync, transforms, storage,
//! shutdown, metrics; per informer type where it makes sense.

use std::any::{Any, TypeId};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;
// Named by the documentation only.
#[cfg(doc)]
use crate::dynamic::DynamicObject;
#[cfg(doc)]
use crate::shared_informer::SharedIndexInformer;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::clock::SharedClock;
use crate::listwatch::{ListTweak, ListWatchSource, TweakListOptions};
use crate::reflector::ReflectorConfig;
use crate::resource::Object;
use crate::store::StorageMode;

pub(super) type MetaTransform = Arc<dyn Fn(&mut ObjectMeta) + Send + Sync>;

/// How the factory makes its informers. Built by
/// [`SharedInformerFactory::builder`](super::SharedInformerFactory::builder).
pub struct FactoryBuilder<S> {
    pub(super) source: S,
    /// Empty: every namespace.
    pub(super) namespaces: BTreeSet<String>,
    pub(super) typed_tweaks: HashMap<TypeId, TweakListOptions>,
    pub(super) default_resync: Duration,
    pub(super) custom_resync: HashMap<TypeId, Duration>,
    pub(super) transform: Option<MetaTransform>,
    pub(super) typed_transforms: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    pub(super) reflector: ReflectorConfig,
    pub(super) clock: Option<SharedClock>,
    pub(super) label_index: bool,
    pub(super) storage: StorageMode,
    pub(super) custom_storage: HashMap<TypeId, StorageMode>,
    pub(super) shutdown_timeout: Option<Duration>,
    pub(super) backlog_warning: Option<usize>,
    pub(super) max_queued_deltas: Option<usize>,
    #[cfg(feature = "metrics")]
    pub(super) metrics: Option<crate::metrics::Metrics>,
}

impl<S: ListWatchSource> FactoryBuilder<S> {
    /// The default options over `source`.
    pub(super) fn new(source: S) -> Self {
        Self {
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
    /// [Sharding across replicas](crate::factory#sharding-across-replicas) for a use. It replaces an
    /// earlier one.
    #[doc(alias = "WithTweakListOptions")]
    #[must_use]
    pub fn tweak_list_options(
        mut self,
        tweak: impl Fn(&mut ListTweak) + Send + Sync + 'static,
    ) -> Self {
        self.reflector = self.reflector.tweak_list_options(tweak);
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

    /// How long [`shutdown`](super::SharedInformerFactory::shutdown) waits for handlers in a call to
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
}
