//! The factory over real HTTP against the embedded API server: pods are cached without
//! `managedFields` unless the factory keeps them, whether listed, streamed or watched.
//!
//! (A unit test until the server became its own crate: it links informer-runtime as a library,
//! so only an integration test can use both.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::time::Duration;

use embedded_apiserver::ApiServer;
use informer_runtime::client::{Client, Config};
use informer_runtime::reflector::ReflectorConfig;
use informer_runtime::{GroupVersionResource, SharedIndexInformer, SharedInformerFactory};
use k8s_openapi::api::core::v1::Pod;

/// A real pod with `managedFields`, as a body to create on the embedded API server.
fn coredns_pod(name: &str) -> serde_json::Value {
    let mut pod: serde_json::Value =
        serde_json::from_slice(include_bytes!("fixtures/kind-v1-36-pod-coredns.json")).unwrap();
    let metadata = pod["metadata"].as_object_mut().unwrap();
    for server_owned in ["resourceVersion", "uid", "creationTimestamp", "generateName"] {
        metadata.remove(server_owned);
    }
    metadata.insert("name".to_owned(), name.into());
    pod
}

/// Waits until the cache of `pods` holds `n` objects.
async fn wait_for_len(pods: &SharedIndexInformer<Pod>, n: usize) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while pods.cache().len() < n {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the cache did not reach {n} objects"));
}

#[tokio::test]
async fn over_http_pods_are_cached_without_managed_fields_unless_kept() {
    let server = ApiServer::start().await.unwrap();
    let pods_gvr = GroupVersionResource::of::<Pod>();
    server.create(&pods_gvr, coredns_pod("listed")).unwrap();
    let served = server.get(&pods_gvr, "kube-system", "listed").unwrap();
    assert!(served["metadata"]["managedFields"].is_array(), "the server keeps them");
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();

    let by_default = SharedInformerFactory::new(client.clone());
    let streaming = SharedInformerFactory::builder(client.clone())
        .reflector_config(ReflectorConfig::default().streaming_list(true))
        .build();
    let kept = SharedInformerFactory::builder(client).keep_managed_fields(true).build();
    let informers = [&by_default, &streaming, &kept].map(SharedInformerFactory::informer::<Pod>);
    for factory in [&by_default, &streaming, &kept] {
        factory.start();
        assert!(factory.wait_for_cache_sync(Duration::from_secs(20)).await.all_synced());
    }
    // One more through each watch.
    server.create(&pods_gvr, coredns_pod("watched")).unwrap();
    for pods in &informers {
        wait_for_len(pods, 2).await;
    }

    let full: Pod = serde_json::from_value(served).unwrap();
    let [by_default, streaming, kept] = informers.map(|pods| {
        let mut cached = pods.cache().list();
        cached.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        cached
    });
    for pods in [&by_default, &streaming] {
        assert!(pods.iter().all(|p| p.metadata.managed_fields.is_none()));
        // Everything else is as served.
        let mut expected = full.clone();
        expected.metadata.managed_fields = None;
        assert_eq!(*pods[0], expected);
        assert!(pods[1].spec.as_ref().is_some_and(|s| !s.containers.is_empty()));
    }
    assert!(kept.iter().all(|p| p.metadata.managed_fields.as_ref().is_some_and(|m| !m.is_empty())));
    assert_eq!(*kept[0], full);
    server.shutdown().await.unwrap();
}
