//! This project's informer as a benchmark peer, whatever carries its bytes: a
//! `SharedInformerFactory`, its pod informer with counting handlers, and its lister. The
//! binaries `peer-informer` (over this project's `Client`) and `peer-informer-kube` (over
//! kube-rs's `kube::Client`) run it with their source. The protocol is in the
//! [crate docs](crate).
//!
//! With `--transform strip-managed-fields` it runs with the factory's defaults, which skip
//! `managedFields` while decoding (no transform needed). Without it, it keeps full pods
//! (`keep_managed_fields(true)`), as the other peers do by default, so that "full pods" figures
//! compare the same objects.
//!
//! With `--metadata-only` it runs the informer of `PartialObjectMetadata<Pod>`: the server sends
//! only each pod's metadata, and the cache holds nothing else (without `managedFields`, unless
//! kept as above).
//!
//! With `--compact-storage RECENT` the cache holds each pod as compressed JSON, `RECENT`
//! recently read ones decoded (`FactoryBuilder::compact_storage`).
//!
//! With `--streaming-list` it lists with a watch that sends the initial events
//! (`ReflectorConfig::streaming_list`).
//!
//! With `--view` it runs the informer of [`PodView`], a `#[derive(Informer)]` view of pods with
//! the fields a typical controller reads ([`crate::view`]), decoded straight from each
//! pod's JSON.
//!
//! `INFORMER_BENCH_LABEL_INDEX=off` in the environment builds the factory without the label
//! index, to measure what the index costs in memory and saves in selector queries.
//! `INFORMER_BENCH_MAX_QUEUED_DELTAS=N` sets the factory's `max_queued_deltas` (`N` = `none`:
//! no bound), to measure what the bound on decoded watch events saves during churn.

// Counts, sizes and durations of a benchmark are far below 2^52: `as f64` is exact here.
#![allow(clippy::cast_precision_loss)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use informer_derive::Informer;
use informer_runtime::metadata::PartialObjectMetadata;
use informer_runtime::reflector::ReflectorConfig;
use informer_runtime::{
    HandlerFuncs, LabelSelector, ListWatchSource, Lister, ObjectKey, Resource,
    ResourceEventHandlerRegistration, SharedIndexInformer, SharedInformerFactory,
};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use tokio::sync::Notify;

use crate::view::{PodViewSpec, PodViewStatus};
use crate::{PeerArgs, Report, Scenario, memory, report};

/// What one handler has seen; the handler notifies when it reaches its target.
#[derive(Default)]
struct Counter {
    updates: AtomicUsize,
    target: AtomicUsize,
    reached: Notify,
    marker_seen: Notify,
}

/// The view of a pod `--view` caches.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(view = Pod)]
pub struct PodView {
    metadata: ObjectMeta,
    spec: Option<PodViewSpec>,
    status: Option<PodViewStatus>,
}

/// Runs the peer `peer` (its name in the report) over `source`, as `args` say.
///
/// # Errors
///
/// What failed, for the peer's stderr; a successful run prints its report and exits.
pub async fn run<S: ListWatchSource>(
    peer: &'static str,
    args: PeerArgs,
    source: S,
) -> Result<(), String> {
    if args.metadata_only {
        measure::<PartialObjectMetadata<Pod>, S>(peer, args, source).await
    } else if args.view {
        measure::<PodView, S>(peer, args, source).await
    } else {
        measure::<Pod, S>(peer, args, source).await
    }
}

/// The whole run, with an informer of `K`: pods, or their metadata.
async fn measure<K: Resource<Scope = NamespaceResourceScope>, S: ListWatchSource>(
    peer: &'static str,
    args: PeerArgs,
    source: S,
) -> Result<(), String> {
    let factory = factory(&args, source)?;
    let pods = factory.informer::<K>();

    let first_update: Arc<OnceLock<Instant>> = Arc::default();
    let lister = factory.lister::<K>();
    let (counters, registrations) = add_counting_handlers(&pods, &args, &first_update, &lister)?;

    let started = Instant::now();
    factory.start();
    let report = factory.wait_for_cache_sync(args.timeout).await;
    if !report.all_synced() {
        return Err(format!("the cache did not sync within {:?}", args.timeout));
    }
    let cache_sync = started.elapsed();
    for registration in &registrations {
        if !registration.wait_for_sync().await {
            return Err("a handler stopped before it synced".to_owned());
        }
    }
    let sync = started.elapsed();
    let after_sync = memory::read()?;
    // Counted by key: a list of every object would decode each one in compact storage, and
    // the memory figures after this would be that list's.
    let cached = pods.cache().len();
    if cached != args.objects {
        return Err(format!("synced with {cached} pods, expected {}", args.objects));
    }

    let mut out = Report::new(peer, &args);
    out.set("handlers", args.handlers).set_ms("cache_sync_ms", cache_sync);
    out.set_ms("sync_ms", sync).set("cached", cached).set("peak_rss_kib", after_sync.peak_kib);
    match args.scenario {
        Scenario::Sync => {
            tokio::time::sleep(args.settle).await;
            out.set("rss_kib", memory::read()?.rss_kib);
        }
        Scenario::Churn => {
            let steady = report::steady(args.settle).await?;
            let waits = counters.iter().map(|c| async move {
                // The target may have been reached before this wait began: check the count too.
                let reached = c.reached.notified();
                if c.updates.load(Ordering::SeqCst) < c.target.load(Ordering::SeqCst) {
                    reached.await;
                }
            });
            tokio::time::timeout(args.timeout, futures::future::join_all(waits))
                .await
                .map_err(|_| churn_timeout(&counters, args.events, args.timeout))?;
            let done = Instant::now();
            out.set("done_unix_us", report::unix_us());
            let first = first_update.get().copied().unwrap_or(done);
            let elapsed = done.duration_since(first);
            out.set("events", args.events).set_ms("churn_ms", elapsed);
            out.set("events_per_s", args.events as f64 / elapsed.as_secs_f64().max(1e-9));
            out.set("rss_kib", steady.rss_kib);
            out.set("churn_peak_rss_kib", memory::read()?.peak_kib);
        }
        Scenario::Relist => {
            let steady = report::steady(args.settle).await?;
            let relisted = Instant::now();
            let marker = counters[0].marker_seen.notified();
            tokio::time::timeout(args.timeout, marker)
                .await
                .map_err(|_| format!("no relist with {} within {:?}", args.marker, args.timeout))?;
            // The marker is one add of the relist's replace; wait until the handlers are idle.
            while registrations.iter().any(|r| r.pending() > 0) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            out.set_ms("relist_ms", relisted.elapsed());
            out.set("rss_kib", steady.rss_kib);
            out.set("relist_peak_rss_kib", memory::read()?.peak_kib);
        }
        // Turned away before the sync (`scale` runs elsewhere, or not at all).
        Scenario::Scale => return Err("the scale scenario is not run here".to_owned()),
        Scenario::Lister => {
            let selector = LabelSelector::parse(&args.selector)
                .map_err(|e| format!("--selector {}: {e}", args.selector))?;
            let namespace = lister.namespace(&args.namespace);
            let (per_query, hits) =
                time_queries(args.queries, || namespace.list(&LabelSelector::everything()).len());
            out.set("namespace_query_us", per_query).set("namespace_hits", hits);
            let (per_query, hits) = time_queries(args.queries, || lister.list(&selector).len());
            out.set("selector_query_us", per_query).set("selector_hits", hits);
            let keys = pods.cache().list_keys().iter().map(|k| k.as_str().to_owned()).collect();
            let keys = report::get_order(keys);
            let (per_get, hits) =
                report::time_gets(&keys, |ns, name| lister.namespace(ns).get(name).is_ok());
            out.set("get_us", per_get).set("get_hits", hits);
        }
    }
    Err(out.emit_and_exit())
}

/// The factory as the arguments and the environment configure it.
fn factory<S: ListWatchSource>(
    args: &PeerArgs,
    source: S,
) -> Result<SharedInformerFactory<S>, String> {
    let mut builder = SharedInformerFactory::builder(source);
    if !args.strip_managed_fields {
        builder = builder.keep_managed_fields(true);
    }
    if let Some(recent) = args.compact_storage {
        builder = builder.compact_storage(recent);
    }
    if args.streaming_list {
        builder = builder.reflector_config(ReflectorConfig::default().streaming_list(true));
    }
    if std::env::var_os("INFORMER_BENCH_LABEL_INDEX").is_some_and(|v| v == "off") {
        builder = builder.without_label_index();
    }
    if let Some(max) = std::env::var_os("INFORMER_BENCH_MAX_QUEUED_DELTAS") {
        let max = match max.to_str() {
            Some("none") => usize::MAX,
            other => other.and_then(|n| n.parse().ok()).ok_or_else(|| {
                format!("INFORMER_BENCH_MAX_QUEUED_DELTAS={}: a number or `none`", max.display())
            })?,
        };
        builder = builder.max_queued_deltas(max);
    }
    Ok(builder.build())
}

/// Adds `--handlers` handlers that count updates (and note the first), spot the relist
/// marker, and touch what they get, as a real handler reads its objects. With `--reconcile`,
/// each handler hands the key of each update to a worker thread of its own, which reads the
/// object back from `lister` and counts it.
#[allow(clippy::type_complexity, reason = "the two lists the caller keeps")]
fn add_counting_handlers<K: Resource<Scope = NamespaceResourceScope>>(
    pods: &SharedIndexInformer<K>,
    args: &PeerArgs,
    first_update: &Arc<OnceLock<Instant>>,
    lister: &Lister<K>,
) -> Result<(Vec<Arc<Counter>>, Vec<ResourceEventHandlerRegistration<K>>), String> {
    let mut counters = Vec::new();
    let mut registrations = Vec::new();
    for _ in 0..args.handlers {
        let counter = Arc::new(Counter::default());
        counter.target.store(args.events, Ordering::SeqCst);
        let (on_add, on_update, first) =
            (Arc::clone(&counter), Arc::clone(&counter), Arc::clone(first_update));
        let reconciles =
            args.reconcile.then(|| reconcile_loop(lister.clone(), Arc::clone(&counter)));
        let marker = args.marker.clone();
        let handler = HandlerFuncs::new()
            .on_add(move |pod: Arc<K>, _initial| {
                if pod.meta().name.as_deref() == Some(marker.as_str()) {
                    on_add.marker_seen.notify_one();
                }
            })
            .on_update(move |_old, new: Arc<K>| {
                first.get_or_init(Instant::now);
                if let Some(keys) = &reconciles {
                    // Blocks while the worker is behind: backpressure, as a bounded queue.
                    let _ = keys.send(ObjectKey::of(&*new));
                    return;
                }
                std::hint::black_box(new.meta().resource_version.as_deref());
                on_update.count();
            })
            .on_delete(|deleted| {
                std::hint::black_box(deleted.key());
            });
        let registration =
            pods.add_event_handler(handler).map_err(|e| format!("cannot add handler: {e}"))?;
        counters.push(counter);
        registrations.push(registration);
    }
    Ok((counters, registrations))
}

impl Counter {
    /// Counts one update, and notifies when it is the target.
    fn count(&self) {
        let seen = self.updates.fetch_add(1, Ordering::SeqCst) + 1;
        if seen == self.target.load(Ordering::SeqCst) {
            self.reached.notify_one();
        }
    }
}

/// Keys waiting for the reconcile worker at most: the handler waits beyond.
const RECONCILE_QUEUE: usize = 1024;

/// A reconcile worker, on a thread of its own: for each key it gets, it reads the object from
/// `lister` (in compact storage, decoded unless recently read) and counts it in `counter`. It
/// ends when the sender is dropped.
fn reconcile_loop<K: Resource<Scope = NamespaceResourceScope>>(
    lister: Lister<K>,
    counter: Arc<Counter>,
) -> std::sync::mpsc::SyncSender<ObjectKey> {
    let (keys, queue) = std::sync::mpsc::sync_channel::<ObjectKey>(RECONCILE_QUEUE);
    std::thread::spawn(move || {
        for key in queue {
            let Ok((namespace, name)) = key.split() else { continue };
            if let Ok(obj) = lister.namespace(namespace).get(name) {
                std::hint::black_box(obj.meta().resource_version.as_deref());
            }
            counter.count();
        }
    });
    keys
}

/// Runs `query` `n` times; microseconds per query, and what the last one returned.
fn time_queries(n: usize, mut query: impl FnMut() -> usize) -> (f64, usize) {
    let started = Instant::now();
    let mut hits = 0;
    for _ in 0..n {
        hits = std::hint::black_box(query());
    }
    (started.elapsed().as_secs_f64() * 1e6 / n as f64, hits)
}

fn churn_timeout(counters: &[Arc<Counter>], events: usize, timeout: Duration) -> String {
    let seen: Vec<usize> = counters.iter().map(|c| c.updates.load(Ordering::SeqCst)).collect();
    format!("handlers saw {seen:?} of {events} modifications within {timeout:?}")
}
