//! The scope of a watch (issue 20) over real HTTP against the embedded API server: a factory
//! over a set of namespaces, list tweaks, and a resource sharded across two replicas by a label.

// Every test here runs this crate's own HTTP client (`Client::new`, `Config`), which the
// `http` feature builds.
#![cfg(feature = "http")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use embedded_apiserver::ApiServer;
use informer_client::{Client, Config};
use informer_runtime::shared_informer::HandlerFuncs;
use informer_runtime::{
    DeletedObject, GroupVersionResource, ObjectKey, SharedIndexInformer, SharedInformerFactory,
};
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;

/// A pod to create, in `namespace`, with `labels`.
fn pod(namespace: &str, name: &str, labels: &[(&str, &str)]) -> serde_json::Value {
    let labels: serde_json::Map<String, serde_json::Value> =
        labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).into())).collect();
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "namespace": namespace, "name": name, "labels": labels },
        "spec": { "containers": [{ "name": "c", "image": "busybox" }] },
    })
}

fn keys(pods: &SharedIndexInformer<Pod>) -> BTreeSet<String> {
    pods.cache().list_keys().iter().map(|k| k.as_str().to_owned()).collect()
}

fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|k| (*k).to_owned()).collect()
}

/// Polls `condition` until it holds, failing after 20 seconds with `what`.
async fn until(what: &str, condition: impl Fn() -> bool) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting until {what}"));
}

/// Records `add:`, `update:` and `delete:` with each pod's key.
fn recorder(pods: &SharedIndexInformer<Pod>) -> Arc<Mutex<Vec<String>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let (add, update, delete) = (Arc::clone(&events), Arc::clone(&events), Arc::clone(&events));
    let handler = HandlerFuncs::new()
        .on_add(move |p: Arc<Pod>, _| add.lock().push(format!("add:{}", ObjectKey::of(&*p))))
        .on_update(move |_, p: Arc<Pod>| {
            update.lock().push(format!("update:{}", ObjectKey::of(&*p)));
        })
        .on_delete(move |d: DeletedObject<Pod>| delete.lock().push(format!("delete:{}", d.key())));
    pods.add_event_handler(handler).unwrap();
    events
}

// controller-runtime's cache_test.go "should be able to restrict cache to a namespace by using
// the global DefaultNamespaces setting", with a set of two (multi_namespace_cache.go): pods in a,
// b and c; the cache holds a's and b's, and the changes of a and b, not c, reach a handler.
#[tokio::test]
async fn over_http_a_factory_over_two_namespaces_caches_and_hears_those_only() {
    let server = ApiServer::start().await.unwrap();
    let gvr = GroupVersionResource::of::<Pod>();
    for ns in ["a", "b", "c"] {
        server.create(&gvr, pod(ns, "listed", &[])).unwrap();
    }
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let factory = SharedInformerFactory::builder(client).namespaces(["a", "b"]).build();
    let pods = factory.informer::<Pod>();
    let events = recorder(&pods);
    factory.start();
    assert!(factory.wait_for_cache_sync(Duration::from_secs(20)).await.all_synced());
    assert_eq!(keys(&pods), set(&["a/listed", "b/listed"]));
    server.wait_for_watches(2).await;

    // c first: its changes are made before the last of b's, so had one reached a handler it
    // would be there by the time b's last change is.
    for ns in ["c", "a", "b"] {
        server.create(&gvr, pod(ns, "watched", &[])).unwrap();
        let mut listed = server.get(&gvr, ns, "listed").unwrap();
        listed["metadata"]["labels"] = serde_json::json!({ "changed": "yes" });
        server.update(&gvr, listed).unwrap();
        server.delete(&gvr, ns, "watched").unwrap();
    }
    let expected = [
        "add:a/listed",
        "add:a/watched",
        "add:b/listed",
        "add:b/watched",
        "delete:a/watched",
        "delete:b/watched",
        "update:a/listed",
        "update:b/listed",
    ];
    until("b's last change arrives", || events.lock().iter().any(|e| e == "delete:b/watched"))
        .await;
    until("every change of a and b arrives", || events.lock().len() >= expected.len()).await;
    let mut seen = events.lock().clone();
    seen.sort();
    assert_eq!(seen, expected);
    assert_eq!(keys(&pods), set(&["a/listed", "b/listed"]));
    assert_eq!(
        pods.lister().namespace("b").list(&informer_runtime::LabelSelector::everything()).len(),
        1
    );
    factory.shutdown().await;
    server.shutdown().await.unwrap();
}

// client-go's WithTweakListOptions / NewFilteredListWatchFromClient (informers/factory.go,
// tools/cache/listwatch.go): the tweak's label selector is on every list and watch, so the server
// sends only matching pods; a pod relabelled out of the selector leaves the cache as a delete,
// one relabelled into it enters as an add.
#[tokio::test]
async fn over_http_a_list_tweak_selects_what_the_server_sends() {
    let server = ApiServer::start().await.unwrap();
    let gvr = GroupVersionResource::of::<Pod>();
    server.create(&gvr, pod("default", "web-1", &[("app", "web")])).unwrap();
    server.create(&gvr, pod("default", "db-1", &[("app", "db")])).unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let factory = SharedInformerFactory::builder(client)
        .tweak_list_options(|options| {
            options.and_labels("app=web");
        })
        .build();
    let pods = factory.informer::<Pod>();
    let events = recorder(&pods);
    factory.start();
    assert!(factory.wait_for_cache_sync(Duration::from_secs(20)).await.all_synced());
    assert_eq!(keys(&pods), set(&["default/web-1"]));
    server.wait_for_watches(1).await;

    server.create(&gvr, pod("default", "web-2", &[("app", "web")])).unwrap();
    server.create(&gvr, pod("default", "db-2", &[("app", "db")])).unwrap();
    let mut moved = server.get(&gvr, "default", "web-1").unwrap();
    moved["metadata"]["labels"] = serde_json::json!({ "app": "db" });
    server.update(&gvr, moved).unwrap();
    let mut joined = server.get(&gvr, "default", "db-1").unwrap();
    joined["metadata"]["labels"] = serde_json::json!({ "app": "web" });
    server.update(&gvr, joined).unwrap();
    until("the cache follows the selector", || {
        keys(&pods) == set(&["default/db-1", "default/web-2"])
    })
    .await;
    until("the handler hears of it", || events.lock().len() == 4).await;
    let mut seen = events.lock().clone();
    seen.sort();
    assert_eq!(
        seen,
        ["add:default/db-1", "add:default/web-1", "add:default/web-2", "delete:default/web-1"]
    );
    factory.shutdown().await;
    server.shutdown().await.unwrap();
}

/// The shard of an object named `name`, out of `shards`: FNV-1a, as in the factory module's
/// "Sharding across replicas".
fn shard_of(name: &str, shards: u64) -> u64 {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    hash % shards
}

// Sharding a resource across replicas (issue 20): every pod labelled `shard=<FNV-1a(name) % 2>`
// by its creator; replica k's factory watches `shard=k` through its list tweak. The two caches
// are disjoint and together hold every pod, through the first list and through the watch.
#[tokio::test]
async fn over_http_two_replicas_sharded_by_label_partition_the_objects_exactly() {
    const SHARDS: u64 = 2;
    let server = ApiServer::start().await.unwrap();
    let gvr = GroupVersionResource::of::<Pod>();
    let create = |name: &str| {
        let shard = shard_of(name, SHARDS).to_string();
        server.create(&gvr, pod("default", name, &[("shard", &shard)])).unwrap();
    };
    let names: Vec<String> = (0..20).map(|i| format!("pod-{i}")).collect();
    for name in &names[..10] {
        create(name);
    }
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let replicas: Vec<_> = (0..SHARDS)
        .map(|replica| {
            SharedInformerFactory::builder(client.clone())
                .tweak_list_options(move |options| {
                    options.and_labels(&format!("shard={replica}"));
                })
                .build()
        })
        .collect();
    let caches: Vec<_> = replicas.iter().map(SharedInformerFactory::informer::<Pod>).collect();
    for replica in &replicas {
        replica.start();
        assert!(replica.wait_for_cache_sync(Duration::from_secs(20)).await.all_synced());
    }
    server.wait_for_watches(2).await;
    for name in &names[10..] {
        create(name);
    }
    let total = || caches.iter().map(|c| c.cache().len()).sum::<usize>();
    until("every pod is in a shard", || total() == names.len()).await;

    let all: BTreeSet<String> = names.iter().map(|n| format!("default/{n}")).collect();
    let [zero, one] = [keys(&caches[0]), keys(&caches[1])];
    assert!(zero.is_disjoint(&one), "no pod in two shards");
    assert_eq!(zero.union(&one).cloned().collect::<BTreeSet<_>>(), all, "every pod in one");
    for (replica, cached) in [&zero, &one].into_iter().enumerate() {
        assert!(!cached.is_empty(), "both shards hold pods");
        let replica = u64::try_from(replica).unwrap();
        assert!(cached.iter().all(|k| shard_of(&k["default/".len()..], SHARDS) == replica));
    }
    for replica in &replicas {
        replica.shutdown().await;
    }
    server.shutdown().await.unwrap();
}
