//! `peer-kube`: kube-rs 5 as a benchmark peer — `reflector(writer, watcher(api, config))` with
//! kube's defaults (list semantic, page size 500, bookmarks, the default backoff), its `Store`
//! as the cache, and `Store::state_filter` for queries. `--metadata-only` watches
//! `PartialObjectMeta<Pod>`; `--view` watches [`PodView`], pods decoded into the fields of
//! [`informer_bench::view`] (kube-rs decodes any `kube::Resource`, so a view is a type with
//! that trait); `--transform strip-managed-fields` uses `WatchStreamExt::modify`.
//! The protocol is in [`informer_bench`]'s crate docs.

// Counts, sizes and durations of a benchmark are far below 2^52: `as f64` is exact here.
#![allow(clippy::cast_precision_loss)]

use std::borrow::Cow;
use std::fmt::Debug;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use informer_bench::view::{PodViewSpec, PodViewStatus};
use informer_bench::{PeerArgs, Report, Scenario, memory, report};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{PartialObjectMeta, Selector, SelectorExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource, ResourceExt};
use serde::Deserialize;
use serde::de::DeserializeOwned;

const PEER: &str = "kube-rs";

/// Why `scale` is not run with kube-rs: its client speaks HTTP/1.1, a connection per request,
/// so 2,000 watches are 2,000 TLS connections and no stream limit applies; the scenario
/// measures HTTP/2 clients at the server's stream limit.
const SCALE_UNSUPPORTED: &str =
    "kube-rs's client speaks HTTP/1.1 (a connection per watch): no stream limit to meet";

/// A view of a pod: what `--view` caches, decoded by serde from each pod's JSON.
#[derive(Clone, Debug, Deserialize)]
struct PodView {
    metadata: ObjectMeta,
    #[allow(dead_code, reason = "decoded, as a controller would read it")]
    spec: Option<PodViewSpec>,
    #[allow(dead_code, reason = "decoded, as a controller would read it")]
    status: Option<PodViewStatus>,
}

/// kube-rs's identity of a pod, for the view.
impl Resource for PodView {
    type DynamicType = ();
    type Scope = kube::core::NamespaceResourceScope;

    fn kind(&(): &()) -> Cow<'_, str> {
        Cow::Borrowed("Pod")
    }

    fn group(&(): &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn version(&(): &()) -> Cow<'_, str> {
        Cow::Borrowed("v1")
    }

    fn plural(&(): &()) -> Cow<'_, str> {
        Cow::Borrowed("pods")
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

fn main() -> ExitCode {
    informer_bench::main(PEER, run)
}

async fn run(args: PeerArgs) -> Result<(), String> {
    if args.scenario == Scenario::Scale {
        return report::unsupported(SCALE_UNSUPPORTED);
    }
    let url = args.server.parse().map_err(|e| format!("--server {}: {e}", args.server))?;
    let client = kube::Client::try_from(kube::Config::new(url))
        .map_err(|e| format!("client for {}: {e}", args.server))?;
    if args.metadata_only {
        measure::<PartialObjectMeta<Pod>>(Api::all(client), &args).await
    } else if args.view {
        measure::<PodView>(Api::all(client), &args).await
    } else {
        measure::<Pod>(Api::all(client), &args).await
    }
}

async fn measure<K>(api: Api<K>, args: &PeerArgs) -> Result<(), String>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store::<K>();
    let strip = args.strip_managed_fields;
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff().modify(
        move |obj: &mut K| {
            if strip {
                obj.meta_mut().managed_fields = None;
            }
        },
    );
    let mut stream = Box::pin(reflector::reflector(writer, stream));

    let started = Instant::now();
    next_init_done(&mut stream, args.timeout, None).await?;
    let sync = started.elapsed();
    let after_sync = memory::read()?;
    let cached = store.len();
    if cached != args.objects {
        return Err(format!("synced with {cached} pods, expected {}", args.objects));
    }

    let mut out = Report::new(PEER, args);
    out.set_ms("sync_ms", sync).set("cached", cached).set("peak_rss_kib", after_sync.peak_kib);
    match args.scenario {
        Scenario::Sync => {
            tokio::time::sleep(args.settle).await;
            out.set("rss_kib", memory::read()?.rss_kib);
        }
        Scenario::Churn => {
            let steady = report::steady(args.settle).await?;
            let mut seen = 0;
            let mut first = None;
            let deadline = tokio::time::Instant::now() + args.timeout;
            while seen < args.events {
                let event = tokio::time::timeout_at(deadline, stream.next())
                    .await
                    .map_err(|_| format!("saw {seen} of {} modifications in time", args.events))?
                    .ok_or("the watcher stream ended")?;
                if let Ok(Event::Apply(obj)) = event {
                    first.get_or_insert_with(Instant::now);
                    std::hint::black_box(obj.meta().resource_version.as_deref());
                    seen += 1;
                }
            }
            out.set("done_unix_us", report::unix_us());
            let elapsed = first.map_or(Duration::ZERO, |first| first.elapsed());
            out.set("handlers", 1).set("events", seen).set_ms("churn_ms", elapsed);
            out.set("events_per_s", seen as f64 / elapsed.as_secs_f64().max(1e-9));
            out.set("rss_kib", steady.rss_kib);
            out.set("churn_peak_rss_kib", memory::read()?.peak_kib);
        }
        Scenario::Relist => {
            let steady = report::steady(args.settle).await?;
            let relisted = Instant::now();
            next_init_done(&mut stream, args.timeout, Some(&args.marker)).await?;
            out.set_ms("relist_ms", relisted.elapsed());
            out.set("rss_kib", steady.rss_kib);
            out.set("relist_peak_rss_kib", memory::read()?.peak_kib);
        }
        // Turned away before the sync (`scale` runs elsewhere, or not at all).
        Scenario::Scale => return Err("the scale scenario is not run here".to_owned()),
        Scenario::Lister => {
            let (key, value) = args.selector_pair()?;
            let selector: Selector = [(key.to_owned(), value.to_owned())].into_iter().collect();
            let namespace = args.namespace.as_str();
            let (per_query, hits) = time_queries(args.queries, &store, |obj| {
                obj.meta().namespace.as_deref() == Some(namespace)
            });
            out.set("namespace_query_us", per_query).set("namespace_hits", hits);
            let (per_query, hits) =
                time_queries(args.queries, &store, |obj| selector.matches(obj.labels()));
            out.set("selector_query_us", per_query).set("selector_hits", hits);
            let keys = store
                .state()
                .iter()
                .map(|obj| format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any()))
                .collect();
            let keys = report::get_order(keys);
            let (per_get, hits) = report::time_gets(&keys, |ns, name| {
                store.get(&reflector::ObjectRef::new(name).within(ns)).is_some()
            });
            out.set("get_us", per_get).set("get_hits", hits);
        }
    }
    Err(out.emit_and_exit())
}

/// Polls the reflector's stream until an `InitDone` (after the object named `marker`, if
/// given, was listed): the store then holds the whole list.
async fn next_init_done<K, S>(
    stream: &mut S,
    timeout: Duration,
    marker: Option<&str>,
) -> Result<(), String>
where
    K: Resource,
    S: Stream<Item = watcher::Result<Event<K>>> + Unpin,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut marker_seen = marker.is_none();
    loop {
        let event = tokio::time::timeout_at(deadline, stream.next())
            .await
            .map_err(|_| format!("no complete list within {timeout:?}"))?
            .ok_or("the watcher stream ended")?;
        match event {
            Ok(Event::InitApply(obj)) if !marker_seen => {
                marker_seen = obj.meta().name.as_deref() == marker;
            }
            Ok(Event::InitDone) if marker_seen => return Ok(()),
            // Errors are retried by the watcher after its backoff, as in any kube-rs program.
            Ok(_) | Err(_) => {}
        }
    }
}

/// Runs a `state_filter` query `n` times; microseconds per query, and what the last returned.
fn time_queries<K>(n: usize, store: &Store<K>, predicate: impl Fn(&K) -> bool) -> (f64, usize)
where
    K: reflector::Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    let started = Instant::now();
    let mut hits = 0;
    for _ in 0..n {
        hits = std::hint::black_box(store.state_filter(&predicate).len());
    }
    (started.elapsed().as_secs_f64() * 1e6 / n as f64, hits)
}
