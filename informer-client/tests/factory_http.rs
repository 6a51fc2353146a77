//! The factory over real HTTP against the embedded API server: pods are cached without
//! `managedFields` unless the factory keeps them, whether listed, streamed or watched.
//!
//! (A unit test until the server became its own crate: it links informer-runtime as a library,
//! so only an integration test can use both.)

// Every test here runs this crate's own HTTP client (`Client::new`, `Config`), which the
// `http` feature builds.
#![cfg(feature = "http")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use embedded_apiserver::ApiServer;
use informer_client::{Client, Config};
use informer_runtime::delta_fifo::HANDOVER_BOUND;
use informer_runtime::dynamic::DynamicObject;
use informer_runtime::reflector::ReflectorConfig;
use informer_runtime::{GroupVersionResource, SharedIndexInformer, SharedInformerFactory};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A real pod with `managedFields` (kind's `coredns-589f44dc88-4fpns`, from the kube-system pod
/// list recorded in this crate's fixtures), as a body to create on the embedded API server.
fn coredns_pod(name: &str) -> serde_json::Value {
    let list: serde_json::Value = serde_json::from_slice(include_bytes!(
        "fixtures/kind-v1-36-kube-system-podlist.compact.json"
    ))
    .unwrap();
    let mut pod = list["items"]
        .as_array()
        .and_then(|items| {
            items.iter().find(|pod| pod["metadata"]["name"] == "coredns-589f44dc88-4fpns")
        })
        .expect("the recorded coredns pod")
        .clone();
    // A list's items leave out what the list says once.
    pod["apiVersion"] = "v1".into();
    pod["kind"] = "Pod".into();
    let metadata = pod["metadata"].as_object_mut().unwrap();
    // Its ReplicaSet is not on this server: the garbage collector would take the pod for a
    // dependent of a deleted owner and delete it, as a cluster's would.
    for server_owned in
        ["resourceVersion", "uid", "creationTimestamp", "generateName", "ownerReferences"]
    {
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

/// The pods of `pods`' cache, sorted by name, as the lister reads them.
fn sorted(mut pods: Vec<std::sync::Arc<Pod>>) -> Vec<Pod> {
    pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    pods.into_iter().map(|p| Pod::clone(&p)).collect()
}

// A compact cache (issue 18) fed over HTTP, through a list, watch events of every kind and a
// relist, reads as the decoded cache fed by the same server: whole objects, managedFields kept.
#[tokio::test]
async fn over_http_a_compact_cache_reads_as_a_decoded_one() {
    compact_reads_as_decoded(true).await;
}

// The same without managedFields (the default), which a compact cache's list cuts out of each
// item's JSON without decoding it (issue 33), where the decoded cache's list skips them while
// decoding; a dynamic informer's objects get the `apiVersion` and `kind` the list's items leave
// out either way.
#[tokio::test]
async fn over_http_a_compact_cache_without_managed_fields_reads_as_a_decoded_one() {
    compact_reads_as_decoded(false).await;
}

/// Whether `informer` holds the 14 pods of the test with `listed-3`'s last change.
fn settled<K: informer_runtime::Object>(informer: &SharedIndexInformer<K>) -> bool {
    let cache = informer.cache();
    cache
        .get_by_key("kube-system/listed-3")
        .is_some_and(|o| o.meta().labels.as_ref().is_some_and(|l| l.contains_key("moved")))
        && cache.len() == 14
}

/// Whether `informer` holds what the test's relist brings.
fn relisted<K: informer_runtime::Object>(informer: &SharedIndexInformer<K>) -> bool {
    let cache = informer.cache();
    cache.get_by_key("kube-system/relisted").is_some()
        && cache.get_by_key("kube-system/listed-8").is_none()
}

/// The decoded and the compact dynamic informer hold the same objects, with their type.
fn assert_dynamic_alike(dynamic: [SharedIndexInformer<DynamicObject>; 2]) {
    let [decoded, compact] = dynamic.map(|objects| {
        let mut objects: Vec<DynamicObject> =
            objects.cache().list().iter().map(|o| (**o).clone()).collect();
        objects.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        objects
    });
    assert_eq!(compact.len(), 14);
    assert_eq!(compact, decoded);
    assert!(compact.iter().all(|o| (o.api_version(), o.kind()) == ("v1", "Pod")));
}

async fn compact_reads_as_decoded(keep_managed_fields: bool) {
    use informer_runtime::{LabelSelector, StorageMode};

    let server = ApiServer::start().await.unwrap();
    let pods_gvr = GroupVersionResource::of::<Pod>();
    let labeled = |name: &str, app: &str| {
        let mut pod = coredns_pod(name);
        pod["metadata"]["labels"] = serde_json::json!({ "app": app });
        pod
    };
    for i in 0..10 {
        server.create(&pods_gvr, labeled(&format!("listed-{i}"), "web")).unwrap();
    }
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let decoded = SharedInformerFactory::builder(client.clone())
        .keep_managed_fields(keep_managed_fields)
        .build();
    let compact = SharedInformerFactory::builder(client)
        .keep_managed_fields(keep_managed_fields)
        .compact_storage(3)
        .build();
    let informers = [&decoded, &compact].map(SharedInformerFactory::informer::<Pod>);
    let dynamic = [&decoded, &compact].map(|f| f.dynamic_informer(&pods_gvr).unwrap());
    assert_eq!(informers[1].cache().storage_mode(), StorageMode::Compact { recent: 3 });
    assert_eq!(dynamic[1].cache().storage_mode(), StorageMode::Compact { recent: 3 });
    for factory in [&decoded, &compact] {
        factory.start();
        assert!(factory.wait_for_cache_sync(Duration::from_secs(20)).await.all_synced());
    }
    for i in 0..5 {
        server.create(&pods_gvr, labeled(&format!("watched-{i}"), "db")).unwrap();
    }
    for i in 0..4 {
        let mut pod = server.get(&pods_gvr, "kube-system", &format!("listed-{i}")).unwrap();
        pod["metadata"]["labels"] = serde_json::json!({ "app": "db", "moved": "yes" });
        server.update(&pods_gvr, pod).unwrap();
    }
    server.delete(&pods_gvr, "kube-system", "listed-9").unwrap();
    for pods in &informers {
        wait_for_len(pods, 14).await;
    }
    // The last change through the watch, then the same state in every cache.
    tokio::time::timeout(Duration::from_secs(20), async {
        while !(informers.iter().all(settled) && dynamic.iter().all(settled)) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("every cache settles");

    // Changes the watches miss, then a relist: the server forgets its history and ends them.
    assert_eq!(server.stall_watches(), 4);
    server.delete(&pods_gvr, "kube-system", "listed-8").unwrap();
    server.create(&pods_gvr, labeled("relisted", "web")).unwrap();
    server.compact();
    server.drop_watches();
    tokio::time::timeout(Duration::from_secs(30), async {
        while !(informers.iter().all(relisted) && dynamic.iter().all(relisted)) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("every cache relists");
    assert_dynamic_alike(dynamic);

    let [decoded, compact] = informers.map(|pods| pods.lister());
    let everything = LabelSelector::everything();
    assert_eq!(sorted(compact.list(&everything)), sorted(decoded.list(&everything)));
    assert!(
        compact
            .list(&everything)
            .iter()
            .all(|p| p.metadata.managed_fields.is_some() == keep_managed_fields)
    );
    for selector in ["app=db", "app=web", "moved", "!moved,app in (db,web)"] {
        let selector = LabelSelector::parse(selector).unwrap();
        assert_eq!(
            sorted(compact.namespace("kube-system").list(&selector)),
            sorted(decoded.namespace("kube-system").list(&selector)),
            "{selector}"
        );
    }
    assert_eq!(compact.list(&LabelSelector::parse("app=db").unwrap()).len(), 9);
    for name in ["listed-0", "listed-7", "watched-4", "relisted"] {
        let (c, d) = (
            compact.namespace("kube-system").get(name),
            decoded.namespace("kube-system").get(name),
        );
        assert_eq!(c.unwrap(), d.unwrap(), "{name}");
    }
    assert!(compact.namespace("kube-system").get("listed-9").is_err());
    assert_eq!(compact.list(&everything).len(), 14);
    server.shutdown().await.unwrap();
}

/// How many [`Counted`] values are alive, and the most that were at once since the last reset.
static ALIVE: AtomicUsize = AtomicUsize::new(0);
static MOST_ALIVE: AtomicUsize = AtomicUsize::new(0);

/// A value that counts its live copies: one per decoded [`CountedConfigMap`].
#[derive(Debug)]
struct Counted;

impl Counted {
    fn new() -> Self {
        let alive = ALIVE.fetch_add(1, Ordering::SeqCst) + 1;
        MOST_ALIVE.fetch_max(alive, Ordering::SeqCst);
        Self
    }
}

impl Default for Counted {
    fn default() -> Self {
        Self::new()
    }
}

impl Clone for Counted {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        ALIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A config map that counts how many of it are decoded at once.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct CountedConfigMap {
    metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<BTreeMap<String, String>>,
    /// Counts this copy while it lives.
    #[serde(skip)]
    _counted: Counted,
}

informer_runtime::impl_resource!(
    CountedConfigMap,
    group = "",
    version = "v1",
    kind = "ConfigMap",
    plural = "configmaps",
    namespaced
);

/// Syncs a factory's informer of [`CountedConfigMap`]s (compact or not, with a queue bound of
/// `bound` or the default); the most of them decoded at once meanwhile, and the cache's size.
async fn most_decoded_during_sync(
    client: &Client,
    compact: bool,
    bound: Option<usize>,
) -> (usize, usize) {
    let mut builder = SharedInformerFactory::builder(client.clone());
    if let Some(bound) = bound {
        builder = builder.max_queued_deltas(bound);
    }
    if compact {
        builder = builder.compact_storage(0);
    }
    let factory = builder.build();
    let maps = factory.informer::<CountedConfigMap>();
    MOST_ALIVE.store(ALIVE.load(Ordering::SeqCst), Ordering::SeqCst);
    factory.start();
    assert!(factory.wait_for_cache_sync(Duration::from_secs(30)).await.all_synced());
    let most = MOST_ALIVE.load(Ordering::SeqCst);
    let cached = maps.cache().len();
    factory.shutdown().await;
    (most, cached)
}

// A list reaches a compact cache without ever being held decoded whole (issue 18): each item
// waits for the end of the list in compact form, then is decoded again only as the queue has
// room. A decoded cache holds every object decoded, of course; a compact one, with no recent
// objects kept and no handler, about the queue's bound during the handover: the informer's
// bound when smaller, else the queue's handover bound (64).
#[tokio::test]
async fn over_http_a_compact_cache_never_holds_a_whole_list_decoded() {
    const MAPS: usize = 2_000;
    const BOUND: usize = 20;
    let server = ApiServer::start().await.unwrap();
    let gvr = GroupVersionResource::of::<k8s_openapi::api::core::v1::ConfigMap>();
    for i in 0..MAPS {
        let map = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": { "namespace": "default", "name": format!("map-{i}") },
            "data": { "key": "value" },
        });
        server.create(&gvr, map).unwrap();
    }
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let (decoded, cached) = most_decoded_during_sync(&client, false, Some(BOUND)).await;
    assert_eq!(cached, MAPS);
    assert!(decoded >= MAPS, "a decoded cache holds every object: {decoded}");
    // The bound, one being applied to the cache, one being decoded for the queue, one being
    // decoded off the list.
    for (bound, most) in [(Some(BOUND), BOUND), (None, HANDOVER_BOUND)] {
        let (compact, cached) = most_decoded_during_sync(&client, true, bound).await;
        assert_eq!(cached, MAPS);
        assert!(
            compact <= most + 3,
            "{compact} config maps decoded at once, with a bound of {most}"
        );
    }
}
