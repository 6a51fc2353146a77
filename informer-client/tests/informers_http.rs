//! Informers over real HTTP against the embedded API server: initial sync, churn, dropped
//! watches, compaction (410 → relist), and bursts of 429 and 500; at the end of each scenario
//! every informer's cache equals the server's state.

// Every test here runs this crate's own HTTP client (`Client::new`, `Config`), which the
// `http` feature builds.
#![cfg(feature = "http")]
#![allow(clippy::expect_used, reason = "in a test, a failed expect is a failed assertion")]

use std::collections::BTreeMap;
use std::time::Duration;

use embedded_apiserver::{ApiServer, Failure, ServerHandle};
use futures::StreamExt;
use informer_client::{Client, Config};
use informer_runtime::factory::SharedInformerFactory;
use informer_runtime::reflector::{BackoffConfig, ReflectorConfig};
use informer_runtime::selector::LabelSelector;
use informer_runtime::{GroupVersionResource, ObjectKey, Resource};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const DEADLINE: Duration = Duration::from_secs(60);

fn pod(ns: &str, i: usize) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some(ns.to_owned()),
            name: Some(format!("pod-{i}")),
            labels: Some([("n".to_owned(), (i % 5).to_string())].into()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

async fn setup() -> (ApiServer, Client, SharedInformerFactory<Client>) {
    let server = ApiServer::start().await.expect("server starts");
    let client = Client::new(Config::new(server.url().parse().expect("a url"))).expect("client");
    // Fast backoff: these tests provoke many retries and their time is real.
    let backoff = BackoffConfig {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(200),
        ..BackoffConfig::default()
    };
    let factory = SharedInformerFactory::builder(client.clone())
        .reflector_config(ReflectorConfig::default().backoff(backoff))
        .build();
    (server, client, factory)
}

fn cached<K: Resource>(factory: &SharedInformerFactory<Client>) -> BTreeMap<String, String> {
    factory
        .lister::<K>()
        .list(&LabelSelector::everything())
        .iter()
        .map(|o| {
            (ObjectKey::of(&**o).to_string(), o.meta().resource_version.clone().unwrap_or_default())
        })
        .collect()
}

fn served<K: Resource>(server: &ServerHandle) -> BTreeMap<String, String> {
    server
        .objects(&GroupVersionResource::of::<K>())
        .iter()
        .map(|o| {
            let m = &o["metadata"];
            let key =
                ObjectKey::new(m["namespace"].as_str(), m["name"].as_str().unwrap_or_default());
            (key.to_string(), m["resourceVersion"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

/// Waits until the informer's cache of `K` equals the server's objects of `K`.
async fn converged<K: Resource>(factory: &SharedInformerFactory<Client>, server: &ServerHandle) {
    let start = tokio::time::Instant::now();
    loop {
        let (cache, truth) = (cached::<K>(factory), served::<K>(server));
        if cache == truth {
            return;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "cache of {} has {} objects, server {}",
            K::KIND,
            cache.len(),
            truth.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn create_pods(client: &Client, ns: &str, range: std::ops::Range<usize>) {
    futures::stream::iter(range)
        .map(|i| async move { client.create(Some(ns), &pod(ns, i)).await.expect("create pod") })
        .buffer_unordered(16)
        .collect::<Vec<Pod>>()
        .await;
}

async fn churn(client: &Client, ns: &str, range: std::ops::Range<usize>) {
    for i in range {
        match i % 3 {
            0 => {
                client.create(Some(ns), &pod(ns, 10_000 + i)).await.expect("create");
            }
            1 => {
                let patch = serde_json::json!({"metadata": {"labels": {"touched": i.to_string()}}});
                client
                    .patch_merge::<Pod>(Some(ns), &format!("pod-{i}"), &patch)
                    .await
                    .expect("patch");
            }
            _ => client.delete::<Pod>(Some(ns), &format!("pod-{i}")).await.expect("delete"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initial_sync_and_churn() {
    let (server, client, factory) = setup().await;
    create_pods(&client, "default", 0..300).await;
    let pods = factory.informer::<Pod>();
    let _ = factory.informer::<ConfigMap>();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    assert_eq!(pods.cache().len(), 300);
    converged::<Pod>(&factory, &server.handle()).await;
    churn(&client, "default", 0..150).await;
    converged::<Pod>(&factory, &server.handle()).await;
    converged::<ConfigMap>(&factory, &server.handle()).await;
    factory.shutdown().await;
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_watches_resume_from_the_last_version() {
    let (server, client, factory) = setup().await;
    create_pods(&client, "default", 0..50).await;
    let pods = factory.informer::<Pod>();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    server.wait_for_watches(1).await;
    for round in 0..5 {
        server.drop_watches();
        churn(&client, "default", round * 10..round * 10 + 10).await;
    }
    converged::<Pod>(&factory, &server.handle()).await;
    assert!(!pods.last_sync_resource_version().is_empty());
    factory.shutdown().await;
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_forces_a_relist_through_500s() {
    let (server, client, factory) = setup().await;
    create_pods(&client, "default", 0..100).await;
    factory.informer::<Pod>();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    server.wait_for_watches(1).await;
    // Changes the informer will miss: its watch is stalled, then history is compacted away.
    server.stall_watches();
    churn(&client, "default", 0..60).await;
    server.fail_next(3, Failure::internal_error("etcdserver: leader changed").verb("list"));
    server.compact();
    server.drop_watches();
    converged::<Pod>(&factory, &server.handle()).await;
    factory.shutdown().await;
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bursts_of_429_and_500_on_watch_are_ridden_out() {
    let (server, client, factory) = setup().await;
    create_pods(&client, "default", 0..30).await;
    factory.informer::<Pod>();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    server.wait_for_watches(1).await;
    server.fail_next(5, Failure::too_many_requests(Duration::from_secs(0)).verb("watch"));
    server.drop_watches();
    churn(&client, "default", 0..15).await;
    converged::<Pod>(&factory, &server.handle()).await;
    server.fail_next(4, Failure::internal_error("boom").verb("watch"));
    server.drop_watches();
    churn(&client, "default", 15..30).await;
    converged::<Pod>(&factory, &server.handle()).await;
    factory.shutdown().await;
    server.shutdown().await.expect("clean shutdown");
}
