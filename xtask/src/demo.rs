//! `cargo xtask demo`: a shared informer factory with typed informers, handlers and listers over
//! HTTP, through churn and disruption, checked against the server at the end.
//!
//! Without a cluster it starts the embedded API server, installs a CRD, creates namespaces, pods
//! and widgets through the HTTP client, and drives creates, updates and deletes while the server
//! drops watches, compacts its history (a 410 and a relist), and throttles (429) and fails (500)
//! requests. With `--kubeconfig PATH` (or `KUBECONFIG` set) it only reads that cluster.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use embedded_apiserver::{ApiServer, Failure, ServerHandle};
use futures::StreamExt;
use informer_client::{Client, Config, KubeconfigOptions};
use informer_runtime::factory::SharedInformerFactory;
use informer_runtime::selector::LabelSelector;
use informer_runtime::shared_informer::{DeletedObject, ResourceEventHandler};
use informer_runtime::{GroupVersionResource, ObjectKey, Resource};
use k8s_openapi::api::core::v1::{Namespace, Pod, PodSpec};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::widget::{self, Widget};

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

struct Options {
    objects: usize,
    kubeconfig: Option<String>,
    seconds: u64,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options { objects: 5_000, kubeconfig: None, seconds: 15 };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().cloned().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--objects" => {
                let n = value("--objects")?;
                options.objects = n.parse().map_err(|e| format!("--objects {n:?}: {e}"))?;
            }
            "--kubeconfig" => options.kubeconfig = Some(value("--kubeconfig")?),
            "--seconds" => {
                let n = value("--seconds")?;
                options.seconds = n.parse().map_err(|e| format!("--seconds {n:?}: {e}"))?;
            }
            other => return Err(format!("unknown demo option {other:?}")),
        }
    }
    if options.kubeconfig.is_none() {
        options.kubeconfig = std::env::var("KUBECONFIG").ok().filter(|k| !k.is_empty());
    }
    Ok(options)
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let options = parse(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("could not start the tokio runtime: {e}"))?;
    match &options.kubeconfig {
        Some(path) => runtime.block_on(real_cluster(path, options.seconds)),
        None => runtime.block_on(embedded(options.objects)),
    }
}

const NAMESPACES: [&str; 4] = ["default", "payments", "search", "batch"];
const TIERS: [&str; 3] = ["web", "api", "db"];
const CONCURRENCY: usize = 32;

fn meta(ns: Option<&str>, name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        namespace: ns.map(str::to_owned),
        name: Some(name.to_owned()),
        labels: Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
        ..ObjectMeta::default()
    }
}

fn pod(i: usize) -> Pod {
    let spec = PodSpec { node_name: Some(format!("node-{}", i % 16)), ..PodSpec::default() };
    Pod {
        metadata: meta(Some(NAMESPACES[i % 4]), &format!("pod-{i}"), &[("tier", TIERS[i % 3])]),
        spec: Some(spec),
        ..Pod::default()
    }
}

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

async fn embedded(objects: usize) -> Result<(), String> {
    let started = Instant::now();
    let server = ApiServer::start().await.map_err(text)?;
    let handle = server.handle();
    println!(
        "demo: embedded API server at {} (kubectl works against it too: cargo xtask serve)",
        server.url()
    );
    let url = server.url().parse().map_err(|e| format!("server url: {e}"))?;
    let client = Client::new(Config::new(url)).map_err(text)?;

    let initial = populate(&client, objects).await?;

    let factory = SharedInformerFactory::builder(client.clone())
        .resync(Duration::from_secs(300))
        .transform(|meta| meta.managed_fields = None)
        .build();
    let pods = factory.informer::<Pod>();
    let pod_counter = Arc::new(Counter::default());
    let registration = pods.add_event_handler(Arc::clone(&pod_counter)).map_err(text)?;
    factory.informer::<Namespace>().add_event_handler(Counter::default()).map_err(text)?;
    let widget_counter = Arc::new(Counter::default());
    factory.informer::<Widget>().add_event_handler(Arc::clone(&widget_counter)).map_err(text)?;
    factory.start();
    let report = factory.wait_for_cache_sync(Duration::from_secs(60)).await;
    if !report.all_synced() {
        return Err(format!("caches did not sync: {:?}", report.not_synced()));
    }
    registration.wait_for_sync().await;
    println!(
        "demo: 3 informers synced in {:?}; pods handler: {}",
        started.elapsed(),
        pod_counter.line()
    );

    let changes = churn(&client, &handle, objects, initial, &pod_counter).await?;

    converge(&factory, &handle).await?;
    let web = LabelSelector::parse("tier=web").map_err(text)?;
    let web_in_payments = factory.lister::<Pod>().namespace("payments").list(&web).len();
    let big_widgets = factory
        .lister::<Widget>()
        .list(&LabelSelector::everything())
        .iter()
        .filter(|w| w.spec.size >= 25)
        .count();
    println!("demo: pods handler: {}", pod_counter.line());
    println!("demo: widgets handler: {}", widget_counter.line());
    println!(
        "demo: listers: {web_in_payments} tier=web pods in namespace payments; {big_widgets} widgets of size >= 25"
    );
    println!(
        "demo: OK: every cache equals the server's state ({} pods, {} namespaces, {} widgets) after {changes} changes over HTTP, in {:?}",
        cached::<Pod>(&factory).len(),
        cached::<Namespace>(&factory).len(),
        cached::<Widget>(&factory).len(),
        started.elapsed()
    );
    factory.shutdown().await;
    server.shutdown().await.map_err(text)
}

/// Namespaces, the widgets CRD, a quarter of the pods and 50 widgets; returns the pod count.
async fn populate(client: &Client, objects: usize) -> Result<usize, String> {
    for ns in NAMESPACES {
        if client.get::<Namespace>(None, ns).await.is_ok() {
            continue; // `default` exists from the start, as on a real server
        }
        let namespace = Namespace { metadata: meta(None, ns, &[]), ..Namespace::default() };
        client.create(None, &namespace).await.map_err(|e| format!("create namespace {ns}: {e}"))?;
    }
    client
        .create::<CustomResourceDefinition>(None, &widget::crd()?)
        .await
        .map_err(|e| format!("install the widget CRD: {e}"))?;
    let initial = objects / 4;
    create_pods(client, 0..initial).await?;
    for i in 0..50 {
        let w = Widget::new(
            NAMESPACES[i % 4],
            &format!("widget-{i}"),
            TIERS[i % 3],
            i64::try_from(i).unwrap_or(0),
        );
        client
            .create(Some(NAMESPACES[i % 4]), &w)
            .await
            .map_err(|e| format!("create widget-{i}: {e}"))?;
    }
    println!(
        "demo: created {} namespaces, the widgets CRD, {initial} pods and 50 widgets over HTTP",
        NAMESPACES.len()
    );

    Ok(initial)
}

/// Waits until every cache equals the server's objects of its type.
async fn converge(
    factory: &SharedInformerFactory<Client>,
    handle: &ServerHandle,
) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pods_ok = cached::<Pod>(factory) == served(handle, &GroupVersionResource::of::<Pod>());
        let ns_ok = cached::<Namespace>(factory)
            == served(handle, &GroupVersionResource::of::<Namespace>());
        let widgets_ok =
            cached::<Widget>(factory) == served(handle, &GroupVersionResource::of::<Widget>());
        if pods_ok && ns_ok && widgets_ok {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!(
                "caches did not converge within 60 s (pods {pods_ok}, namespaces {ns_ok}, widgets {widgets_ok})"
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

async fn create_pods(client: &Client, range: std::ops::Range<usize>) -> Result<(), String> {
    let results: Vec<Result<Pod, String>> = futures::stream::iter(range)
        .map(|i| async move {
            client
                .create(Some(NAMESPACES[i % 4]), &pod(i))
                .await
                .map_err(|e| format!("create pod-{i}: {e}"))
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    results.into_iter().try_for_each(|r| r.map(drop))
}

enum Op {
    Create(usize),
    Relabel(usize, &'static str),
    Delete(usize),
}

async fn apply(client: &Client, op: Op) -> Result<(), String> {
    match op {
        Op::Create(i) => client.create(Some(NAMESPACES[i % 4]), &pod(i)).await.map(drop),
        Op::Relabel(i, tier) => {
            let patch = serde_json::json!({ "metadata": { "labels": { "tier": tier } } });
            client
                .patch_merge::<Pod>(Some(NAMESPACES[i % 4]), &format!("pod-{i}"), &patch)
                .await
                .map(drop)
        }
        Op::Delete(i) => client.delete::<Pod>(Some(NAMESPACES[i % 4]), &format!("pod-{i}")).await,
    }
    .map_err(text)
}

/// Creates, relabels and deletes pods over HTTP, in batches of concurrent requests on distinct
/// pods, while the server drops watches, compacts (410 → relist), fails lists (500) and throttles
/// watches (429). Returns the number of changes made.
async fn churn(
    client: &Client,
    server: &ServerHandle,
    objects: usize,
    initial: usize,
    counter: &Counter,
) -> Result<usize, String> {
    let mut rng = fastrand::Rng::with_seed(42);
    let mut live: Vec<usize> = (0..initial).collect();
    let mut next = initial;
    let operations = objects * 2;
    let mut done = 0;
    let mut quarter = 0;
    while done < operations {
        let mut batch = Vec::with_capacity(CONCURRENCY);
        let mut busy = std::collections::HashSet::new();
        while batch.len() < CONCURRENCY && done + batch.len() < operations {
            let roll = rng.u32(0..10);
            if roll < 4 && next < objects {
                batch.push(Op::Create(next));
                busy.insert(next);
                live.push(next);
                next += 1;
            } else if !live.is_empty() {
                let at = rng.usize(0..live.len());
                let i = live[at];
                if !busy.insert(i) {
                    continue;
                }
                if roll < 8 {
                    batch.push(Op::Relabel(i, TIERS[rng.usize(0..3)]));
                } else {
                    live.swap_remove(at);
                    batch.push(Op::Delete(i));
                }
            } else {
                break;
            }
        }
        if batch.is_empty() {
            break;
        }
        done += batch.len();
        let results =
            futures::future::join_all(batch.into_iter().map(|op| apply(client, op))).await;
        results.into_iter().collect::<Result<(), String>>()?;
        while done * 4 >= operations * (quarter + 1) && quarter < 4 {
            quarter += 1;
            let what = match quarter {
                1 => {
                    server.drop_watches();
                    "dropped every watch (informers watch again from their last version)"
                }
                2 => {
                    server.fail_next(
                        2,
                        Failure::internal_error("etcdserver: leader changed").verb("list"),
                    );
                    server.compact();
                    server.drop_watches();
                    "compacted history and dropped watches: 410, then a relist through two 500s"
                }
                3 => {
                    server.fail_next(
                        3,
                        Failure::too_many_requests(Duration::from_secs(1)).verb("watch"),
                    );
                    server.drop_watches();
                    "dropped watches and throttled the next three (429, Retry-After 1 s)"
                }
                _ => "all changes sent",
            };
            println!(
                "demo: {done:>7}/{operations} changes; {what}; pods handler: {}",
                counter.line()
            );
        }
    }
    Ok(done)
}

fn cached<K: Resource>(factory: &SharedInformerFactory<Client>) -> BTreeMap<ObjectKey, String> {
    factory
        .lister::<K>()
        .list(&LabelSelector::everything())
        .iter()
        .map(|o| (ObjectKey::of(&**o), o.meta().resource_version.clone().unwrap_or_default()))
        .collect()
}

fn served(server: &ServerHandle, gvr: &GroupVersionResource) -> BTreeMap<ObjectKey, String> {
    server
        .objects(gvr)
        .iter()
        .map(|o| {
            let meta = &o["metadata"];
            let key = ObjectKey::new(
                meta["namespace"].as_str(),
                meta["name"].as_str().unwrap_or_default(),
            );
            (key, meta["resourceVersion"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

/// Read-only: sync pods and namespaces from a real cluster, follow it for a while, report.
async fn real_cluster(kubeconfig: &str, seconds: u64) -> Result<(), String> {
    let started = Instant::now();
    let paths: Vec<&str> = kubeconfig.split(':').filter(|p| !p.is_empty()).collect();
    let config =
        Config::from_kubeconfig_files(&paths, &KubeconfigOptions::default()).map_err(text)?;
    println!("demo: read-only against {} (from {kubeconfig})", config.cluster_url);
    let client = Client::new(config).map_err(text)?;
    let factory =
        SharedInformerFactory::builder(client).transform(|meta| meta.managed_fields = None).build();
    let pod_counter = Arc::new(Counter::default());
    factory.informer::<Pod>().add_event_handler(Arc::clone(&pod_counter)).map_err(text)?;
    factory.informer::<Namespace>().add_event_handler(Counter::default()).map_err(text)?;
    factory.start();
    let report = factory.wait_for_cache_sync(Duration::from_secs(60)).await;
    if !report.all_synced() {
        return Err(format!("caches did not sync within 60 s: {:?}", report.not_synced()));
    }
    let pods = factory.lister::<Pod>().list(&LabelSelector::everything());
    let mut by_namespace: BTreeMap<String, usize> = BTreeMap::new();
    for p in &pods {
        *by_namespace.entry(p.metadata.namespace.clone().unwrap_or_default()).or_default() += 1;
    }
    println!(
        "demo: synced in {:?}: {} pods in {} namespaces",
        started.elapsed(),
        pods.len(),
        by_namespace.len()
    );
    for (ns, n) in by_namespace.iter().take(10) {
        println!("demo:   {ns}: {n} pods");
    }
    for _ in 0..seconds.div_ceil(5) {
        tokio::time::sleep(Duration::from_secs(5)).await;
        println!("demo: following the cluster; pods handler: {}", pod_counter.line());
    }
    println!(
        "demo: OK: {} pods and {} namespaces cached",
        factory.lister::<Pod>().list(&LabelSelector::everything()).len(),
        factory.lister::<Namespace>().list(&LabelSelector::everything()).len()
    );
    factory.shutdown().await;
    Ok(())
}
