//! `cargo xtask demo`: a shared informer factory with handlers and listers, through churn and
//! disruption, checked against the source at the end.
//!
//! It runs in process on `FakeSource` (the runtime's test source) until the embedded HTTP API
//! server lands; the informer code is the same either way.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use informer_runtime::factory::SharedInformerFactory;
use informer_runtime::informer::{DeletedObject, ResourceEventHandler};
use informer_runtime::selector::LabelSelector;
use informer_runtime::testing::FakeSource;
use informer_runtime::{ObjectKey, Resource};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Counts what a handler receives.
#[derive(Default)]
struct Counter {
    adds: AtomicU64,
    updates: AtomicU64,
    deletes: AtomicU64,
    tombstones: AtomicU64,
}

impl<K: Send + Sync + 'static> ResourceEventHandler<K> for Counter {
    fn on_add(&self, _: Arc<K>, _: bool) {
        self.adds.fetch_add(1, Ordering::Relaxed);
    }

    fn on_update(&self, _: Arc<K>, _: Arc<K>) {
        self.updates.fetch_add(1, Ordering::Relaxed);
    }

    fn on_delete(&self, obj: DeletedObject<K>) {
        self.deletes.fetch_add(1, Ordering::Relaxed);
        if obj.is_final_state_unknown() {
            self.tombstones.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Counter {
    fn line(&self) -> String {
        format!(
            "adds {:>6}  updates {:>6}  deletes {:>6} ({} tombstones)",
            self.adds.load(Ordering::Relaxed),
            self.updates.load(Ordering::Relaxed),
            self.deletes.load(Ordering::Relaxed),
            self.tombstones.load(Ordering::Relaxed)
        )
    }
}

fn meta(ns: Option<&str>, name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        namespace: ns.map(str::to_owned),
        name: Some(name.to_owned()),
        labels: Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
        ..ObjectMeta::default()
    }
}

fn pod(ns: &str, name: &str, tier: &str, generation: u64) -> Pod {
    let generation = generation.to_string();
    Pod {
        metadata: meta(Some(ns), name, &[("tier", tier), ("generation", &generation)]),
        ..Pod::default()
    }
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut objects = 20_000usize;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--objects" => {
                let n = args.next().ok_or("--objects needs a number")?;
                objects = n.parse().map_err(|e| format!("--objects {n:?}: {e}"))?;
            }
            other => return Err(format!("unknown demo option {other:?}")),
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("could not start the tokio runtime: {e}"))?;
    runtime.block_on(demo(objects))
}

const NAMESPACES: [&str; 4] = ["default", "payments", "search", "batch"];
const TIERS: [&str; 3] = ["web", "api", "db"];

async fn demo(objects: usize) -> Result<(), String> {
    let started = Instant::now();
    println!("demo: in-process source (the embedded HTTP API server replaces it when it lands)");
    let source = FakeSource::new();
    for ns in NAMESPACES {
        source.add(Namespace { metadata: meta(None, ns, &[]), ..Namespace::default() });
    }
    let initial = objects / 4;
    for i in 0..initial {
        source.add(pod(NAMESPACES[i % 4], &format!("pod-{i}"), TIERS[i % 3], 0));
    }
    println!("demo: {} namespaces and {initial} pods before start", NAMESPACES.len());

    let factory = SharedInformerFactory::builder(source.clone())
        .resync(Duration::from_secs(300))
        .transform(|meta| meta.managed_fields = None)
        .build();
    let pods = factory.informer::<Pod>();
    let namespaces = factory.informer::<Namespace>();
    let pod_counter = Arc::new(Counter::default());
    let ns_counter = Arc::new(Counter::default());
    let pod_registration =
        pods.add_event_handler(Arc::clone(&pod_counter)).map_err(|e| e.to_string())?;
    namespaces.add_event_handler(Arc::clone(&ns_counter)).map_err(|e| e.to_string())?;
    factory.start();
    let report = factory.wait_for_cache_sync(Duration::from_secs(60)).await;
    if !report.all_synced() {
        return Err(format!("caches did not sync: {:?}", report.not_synced()));
    }
    pod_registration.wait_for_sync().await;
    println!(
        "demo: caches synced in {:?}; pods handler: {}",
        started.elapsed(),
        pod_counter.line()
    );

    let operations = churn(&source, objects, initial, &pod_counter).await;

    let deadline = Instant::now() + Duration::from_secs(60);
    let server_pods: Vec<(ObjectKey, String)> = snapshot(&source.items::<Pod>());
    loop {
        let cached = snapshot(&pods.lister().list(&LabelSelector::everything()));
        if cached == server_pods {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the pod cache did not converge: {} cached, {} on the server",
                cached.len(),
                server_pods.len()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let web = LabelSelector::parse("tier=web").map_err(|e| e.to_string())?;
    let web_in_payments = factory.lister::<Pod>().namespace("payments").list(&web).len();
    let namespaces_cached = factory.lister::<Namespace>().list(&LabelSelector::everything()).len();
    println!("demo: pods handler: {}", pod_counter.line());
    println!(
        "demo: lister: {web_in_payments} tier=web pods in namespace payments, {namespaces_cached} namespaces"
    );
    println!(
        "demo: OK: every cache equals the server ({} pods, {} namespaces) after {} changes, in {:?}",
        server_pods.len(),
        namespaces_cached,
        operations,
        started.elapsed()
    );
    factory.shutdown().await;
    Ok(())
}

/// Creates, updates and deletes pods against the source, dropping every watch four times and
/// compacting history once; returns the number of changes made.
async fn churn(
    source: &FakeSource,
    objects: usize,
    initial: usize,
    pod_counter: &Counter,
) -> usize {
    let mut rng = fastrand::Rng::with_seed(42);
    let mut live: Vec<usize> = (0..initial).collect();
    let mut next = initial;
    let operations = objects * 2;
    for op in 1..=operations {
        let generation = op as u64;
        match rng.u32(0..10) {
            0..=3 if next < objects => {
                source.add(pod(
                    NAMESPACES[next % 4],
                    &format!("pod-{next}"),
                    TIERS[next % 3],
                    generation,
                ));
                live.push(next);
                next += 1;
            }
            0..=7 if !live.is_empty() => {
                let i = live[rng.usize(0..live.len())];
                source.modify(pod(
                    NAMESPACES[i % 4],
                    &format!("pod-{i}"),
                    TIERS[rng.usize(0..3)],
                    generation,
                ));
            }
            _ if !live.is_empty() => {
                let i = live.swap_remove(rng.usize(0..live.len()));
                source.delete(&pod(NAMESPACES[i % 4], &format!("pod-{i}"), "", 0));
            }
            _ => {}
        }
        if op % (operations / 4).max(1) == 0 {
            source.drop_watches();
            println!(
                "demo: {op:>7}/{operations} changes; dropped every watch; pods handler: {}",
                pod_counter.line()
            );
        }
        if op == operations / 2 {
            source.reset_watch();
            println!("demo: compacted history: the informers get 410 and relist");
        }
        if op % 1_000 == 0 {
            tokio::task::yield_now().await;
        }
    }

    operations
}

fn snapshot<K: Resource>(objs: &[Arc<K>]) -> Vec<(ObjectKey, String)> {
    let mut v: Vec<(ObjectKey, String)> = objs
        .iter()
        .map(|o| (ObjectKey::of(&**o), o.metadata().resource_version.clone().unwrap_or_default()))
        .collect();
    v.sort();
    v
}
