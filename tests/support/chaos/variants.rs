//! The informers of the chaos scenario that take other paths through the runtime than the main
//! factory's, over the same churned objects, under the same faults, checked the same way:
//!
//! - `configmaps (streaming list)`: its first list and every relist are streaming lists (a
//!   watch with `sendInitialEvents=true` and `resourceVersionMatch=NotOlderThan`, synced at the
//!   `k8s.io/initial-events-end` bookmark). The faults drop, stall and expire its watches, cut
//!   and stall them during the initial events (`faults.rs`: "cut streaming lists"), and force
//!   relists with 410s.
//! - `pods (compact)`: a cache in compact storage that keeps only a few objects decoded, so that
//!   almost every read, the checks' included, decodes; a decode failure is a difference and is
//!   counted as lost.
//! - `crontabs (chaos-1, chaos-3)`: a factory restricted to two of the four churned namespaces
//!   (a watch per namespace into one cache), listing by streaming lists into compact storage
//!   (the path where initial events wait compactly until their bookmark). It must hold exactly
//!   the server's objects in those namespaces and nothing from the other two.
//!
//! Each has a factory of its own over a clone of the scenario's client (the same connections),
//! through a [`Counting`] source that counts its lists, so that a report (and a soak's output)
//! shows that each path ran: plain lists, and streaming lists started, completed and cut.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use informer_client::Client;
use informer_runtime::listwatch::{
    Error, ListIntake, ListOptions, ListWatchSource, ListerWatcher, ObjectList, WatchEvent,
    WatchOptions, WatchStream,
};
use informer_runtime::reflector::ReflectorConfig;
use informer_runtime::store::StorageMode;
use informer_runtime::{Resource, SharedInformerFactory};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};

use super::objects::{CronTab, Kind};
use super::recorder::Recorder;
use super::register;
use super::verify::{Typed, Watched};

/// The namespaces (of `objects::NAMESPACES`) the restricted informer watches; the churn writes
/// to the others too.
const NAMESPACE_SET: [&str; 2] = ["chaos-1", "chaos-3"];
/// How many objects the compact caches keep decoded: few, so that reads decode.
const RECENT: usize = 8;

/// How many lists one variant's informer made.
#[derive(Debug, Default)]
struct ListCounts {
    plain: AtomicU64,
    streamed: AtomicU64,
    completed: AtomicU64,
    cut: AtomicU64,
}

/// What one variant informer did, for the report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VariantCounts {
    /// Notifications its handler received.
    pub events: u64,
    /// List and watch failures its watch-error handler was told of.
    pub errors: u64,
    /// Plain (paginated) lists started: for a streaming informer, its fallbacks.
    pub plain_lists: u64,
    /// Streaming lists started.
    pub streamed: u64,
    /// Streaming lists whose initial-events-end bookmark arrived.
    pub completed: u64,
    /// Streaming lists refused or ended before their initial-events-end bookmark.
    pub cut: u64,
    /// Reads of its cache that found an object it could not decode.
    pub decode_failures: u64,
}

impl fmt::Display for VariantCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} events, {} errors, {} plain lists, {} streaming lists ({} to their end, {} cut), \
             {} decode failures",
            self.events,
            self.errors,
            self.plain_lists,
            self.streamed,
            self.completed,
            self.cut,
            self.decode_failures
        )
    }
}

/// A [`ListWatchSource`] over the client that counts the lists of the informers made from it.
#[derive(Clone)]
pub(crate) struct Counting {
    client: Client,
    counts: Arc<ListCounts>,
}

impl ListWatchSource for Counting {
    fn lister_watcher<K: Resource>(&self, namespace: Option<&str>) -> Arc<dyn ListerWatcher<K>> {
        let inner = ListWatchSource::lister_watcher::<K>(&self.client, namespace);
        Arc::new(CountingListerWatcher { inner, counts: Arc::clone(&self.counts) })
    }
}

struct CountingListerWatcher<K> {
    inner: Arc<dyn ListerWatcher<K>>,
    counts: Arc<ListCounts>,
}

impl<K> CountingListerWatcher<K> {
    fn count_list(&self, options: &ListOptions) {
        // A list's later pages carry a continue token: count each list once.
        if options.continue_token.is_none() {
            self.counts.plain.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl<K: Resource> ListerWatcher<K> for CountingListerWatcher<K> {
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, Result<ObjectList<K>, Error>> {
        self.count_list(options);
        self.inner.list(options)
    }

    // Forwarded, not left to the default: the HTTP lister-watcher hands items to a compact
    // cache as it decodes them, the path the compact variants are here to take.
    fn list_into(
        &self,
        options: &ListOptions,
        intake: Arc<dyn ListIntake<K>>,
    ) -> BoxFuture<'_, Result<ObjectList<K>, Error>>
    where
        K: Send + Sync + 'static,
    {
        self.count_list(options);
        self.inner.list_into(options, intake)
    }

    fn watch(&self, options: &WatchOptions) -> BoxFuture<'_, Result<WatchStream<K>, Error>> {
        if !options.send_initial_events {
            return self.inner.watch(options);
        }
        self.counts.streamed.fetch_add(1, Ordering::Relaxed);
        let opening = self.inner.watch(options);
        let mut list = StreamingList { counts: Arc::clone(&self.counts), ended: false };
        Box::pin(async move {
            let stream = opening.await?;
            let counted = stream.map(move |event| {
                if let Ok(WatchEvent::Bookmark(bookmark)) = &event {
                    list.saw(bookmark.initial_events_end);
                }
                event
            });
            Ok(counted.boxed())
        })
    }
}

/// One streaming list: counted completed at its initial-events-end bookmark, and cut when it
/// is dropped (refused, failed, ended or abandoned) before it.
struct StreamingList {
    counts: Arc<ListCounts>,
    ended: bool,
}

impl StreamingList {
    fn saw(&mut self, initial_events_end: bool) {
        if initial_events_end && !self.ended {
            self.ended = true;
            self.counts.completed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for StreamingList {
    fn drop(&mut self) {
        if !self.ended {
            self.counts.cut.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One variant: its factory, its informer as the checks see it, its handler and its counts.
struct Variant {
    factory: SharedInformerFactory<Counting>,
    watched: Arc<dyn Watched>,
    recorder: Arc<Recorder>,
    counts: Arc<ListCounts>,
}

/// The variant informers, built and started beside the scenario's main factory.
pub(crate) struct Variants {
    variants: Vec<Variant>,
}

impl Variants {
    /// The variants over `client`, with `reflector` (the scenario's backoff) as the base of
    /// each factory's reflector options, a handler registered on each. Not started.
    pub(crate) fn new(client: &Client, reflector: &ReflectorConfig, kinds: &[Kind; 3]) -> Self {
        let [pods, config_maps, crontabs] = kinds;
        let source = || Counting { client: client.clone(), counts: Arc::default() };
        let streaming = reflector.clone().streaming_list(true);

        let counting = source();
        let counts = Arc::clone(&counting.counts);
        let factory =
            SharedInformerFactory::builder(counting).reflector_config(streaming.clone()).build();
        let name = "configmaps (streaming list)";
        let watched = Typed::<ConfigMap>::new(&factory, name, config_maps.gvr.clone());
        let streamed = Variant::of(factory, watched, counts);

        let counting = source();
        let counts = Arc::clone(&counting.counts);
        let factory = SharedInformerFactory::builder(counting)
            .reflector_config(reflector.clone())
            .compact_storage(RECENT)
            .build();
        let watched = Typed::<Pod>::new(&factory, "pods (compact)", pods.gvr.clone());
        compact_storage(&watched);
        let compact = Variant::of(factory, watched, counts);

        let counting = source();
        let counts = Arc::clone(&counting.counts);
        let factory = SharedInformerFactory::builder(counting)
            .namespaces(NAMESPACE_SET)
            .reflector_config(streaming)
            .compact_storage(RECENT)
            .build();
        let name = "crontabs (chaos-1, chaos-3)";
        let watched =
            Typed::<CronTab>::new(&factory, name, crontabs.gvr.clone()).only_in(&NAMESPACE_SET);
        compact_storage(&watched);
        let restricted = Variant::of(factory, watched, counts);

        Self { variants: vec![streamed, compact, restricted] }
    }

    /// Each variant's informer and its handler, for the scenario's checks.
    pub(crate) fn watched(&self) -> impl Iterator<Item = (Arc<dyn Watched>, Arc<Recorder>)> + '_ {
        self.variants.iter().map(|v| (Arc::clone(&v.watched), Arc::clone(&v.recorder)))
    }

    /// Starts every variant's factory and waits until each has synced.
    ///
    /// # Panics
    ///
    /// When one has not synced within `within`.
    pub(crate) async fn start(&self, within: Duration) {
        for variant in &self.variants {
            variant.factory.start();
        }
        for variant in &self.variants {
            let synced = variant.factory.wait_for_cache_sync(within).await;
            let name = variant.watched.name();
            assert!(synced.all_synced(), "chaos: {name} not synced: {:?}", synced.not_synced());
        }
    }

    /// What each variant did so far, by its informer's name.
    pub(crate) fn counts(&self) -> BTreeMap<String, VariantCounts> {
        self.variants
            .iter()
            .map(|v| {
                let lists = &v.counts;
                let counts = VariantCounts {
                    events: v.recorder.events(),
                    errors: v.watched.errors(),
                    plain_lists: lists.plain.load(Ordering::Relaxed),
                    streamed: lists.streamed.load(Ordering::Relaxed),
                    completed: lists.completed.load(Ordering::Relaxed),
                    cut: lists.cut.load(Ordering::Relaxed),
                    decode_failures: v.watched.decode_failures(),
                };
                (v.watched.name().to_owned(), counts)
            })
            .collect()
    }

    /// Shuts every variant's factory down; the names of those that did not within `within`.
    pub(crate) async fn shutdown(&self, within: Duration) -> Vec<&'static str> {
        let mut late = Vec::new();
        for variant in &self.variants {
            if tokio::time::timeout(within, variant.factory.shutdown()).await.is_err() {
                late.push(variant.watched.name());
            }
        }
        late
    }
}

/// Checks that `watched`'s cache is compact: a factory option that stopped reaching it would
/// otherwise leave the compact path untested without a word.
fn compact_storage<K: Resource + PartialEq + fmt::Debug>(watched: &Typed<K>) {
    let mode = watched.informer.cache().storage_mode();
    let name = watched.name();
    assert_eq!(mode, StorageMode::Compact { recent: RECENT }, "chaos: {name}'s cache");
}

impl Variant {
    fn of<K: Resource + PartialEq + fmt::Debug>(
        factory: SharedInformerFactory<Counting>,
        watched: Typed<K>,
        counts: Arc<ListCounts>,
    ) -> Self {
        let recorder = Recorder::new(format!("{}/a", watched.name()));
        register(&watched.informer, &recorder);
        Self { factory, watched: Arc::new(watched), recorder, counts }
    }
}
