//! Factory behaviour (client-go's `informers/factory.go` contract), against the `FakeSource`.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};

use super::*;
use crate::listwatch::{Error, Status};
use crate::reflector::ReflectorConfig;
use crate::selector::LabelSelector;
use crate::shared_informer::UnfinishedHandler;
use crate::store::ObjectKey;
use crate::testing::FakeSource;
use crate::testing::objects::{Gate, OpenOnDrop, labeled_pod, namespace, pod};

#[tokio::test]
async fn one_informer_per_type_shared_by_every_caller() {
    let factory = SharedInformerFactory::new(FakeSource::new());
    let a = factory.informer::<Pod>();
    let b = factory.clone().informer::<Pod>();
    a.add_event_handler(crate::shared_informer::HandlerFuncs::new()).unwrap();
    assert_eq!(b.handler_count(), 1, "the same informer");
    let namespaces = factory.informer::<Namespace>();
    assert_eq!((a.handler_count(), namespaces.handler_count()), (1, 0), "one informer per type");
}

#[tokio::test]
async fn start_is_repeatable_and_wait_reports_each_informer() {
    let source = FakeSource::new();
    source.add(pod("ns", "a", ""));
    source.add(namespace("ns"));
    let factory = SharedInformerFactory::new(source.clone());
    let pods = factory.informer::<Pod>();
    factory.start();
    factory.start(); // nothing new to start
    let report = factory.wait_for_cache_sync(Duration::from_secs(10)).await;
    assert!(report.all_synced());
    assert_eq!(report.0.keys().cloned().collect::<Vec<_>>(), [GroupVersionResource::of::<Pod>()]);
    assert_eq!(pods.cache().len(), 1);

    // An informer asked for later starts with the next start(); one that cannot list is reported.
    source.set_list_error(Some(Error::Api(Status::new(
        403,
        "Forbidden",
        "namespaces is forbidden",
    ))));
    let namespaces = factory.informer::<Namespace>();
    assert!(!namespaces.is_started());
    factory.start();
    let report = factory.wait_for_cache_sync(Duration::from_millis(200)).await;
    assert!(!report.all_synced());
    assert_eq!(report.not_synced(), [&GroupVersionResource::of::<Namespace>()]);
    assert!(report.0[&GroupVersionResource::of::<Pod>()]);
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_everything_and_start_does_nothing_after() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let baseline = metrics.num_alive_tasks();
    let source = FakeSource::new();
    let factory = SharedInformerFactory::new(source.clone());
    let pods = factory.informer::<Pod>();
    pods.add_event_handler(crate::shared_informer::HandlerFuncs::new()).unwrap();
    let _ = factory.informer::<Namespace>();
    factory.start();
    assert!(factory.wait_for_cache_sync(Duration::from_secs(10)).await.all_synced());
    factory.shutdown().await;
    assert!(pods.is_stopped());
    let alive = crate::testing::objects::settle_alive_tasks(baseline).await;
    assert_eq!(alive, baseline, "every informer and handler task joined");
    let late = factory.informer::<Deployment>();
    factory.start();
    assert!(!late.is_started(), "start after shutdown does nothing");
}

#[tokio::test]
async fn options_namespace_selectors_resync_and_transforms() {
    let source = FakeSource::new();
    let mut managed = labeled_pod("team-a", "web", &[("app", "web")]);
    managed.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
    source.add(managed);
    source.add(labeled_pod("team-a", "db", &[("app", "db")]));
    source.add(labeled_pod("team-b", "web", &[("app", "web")]));
    source.add(namespace("team-a"));
    let factory = SharedInformerFactory::builder(source.clone())
        .namespace("team-a")
        .labels("app=web")
        .resync(Duration::from_secs(300))
        .resync_for::<Namespace>(Duration::from_secs(60))
        .transform(|meta| meta.managed_fields = None)
        // Kept by the source, so that only the transform can drop them.
        .keep_managed_fields(true)
        .build();
    let pods = factory.informer::<Pod>();
    let namespaces = factory.informer::<Namespace>();
    assert_eq!(pods.resync_check_period(), Duration::from_secs(300));
    assert_eq!(namespaces.resync_check_period(), Duration::from_secs(60));
    factory.start();
    assert!(factory.wait_for_cache_sync(Duration::from_secs(10)).await.all_synced());

    let cached = pods.cache().list();
    assert_eq!(cached.len(), 1, "only team-a, only app=web");
    assert!(cached[0].metadata.managed_fields.is_none(), "the factory's transform ran");
    assert_eq!(namespaces.cache().len(), 0, "label selectors apply to every informer");
    let lists = source.list_requests::<Pod>();
    let watches = source.watch_requests::<Pod>();
    assert_eq!(lists[0].label_selector.as_deref(), Some("app=web"));
    assert!(
        watches.iter().all(|w| w.label_selector.as_deref() == Some("app=web")),
        "list and watch alike"
    );
    factory.shutdown().await;

    let factory = SharedInformerFactory::builder(source.clone())
        .transform(|meta| meta.annotations = Some([("factory".into(), "wide".into())].into()))
        .transform_for::<Pod>(|pod| {
            pod.metadata.annotations = Some([("typed".into(), "pod".into())].into());
        })
        .build();
    let pods = factory.informer::<Pod>();
    factory.start();
    assert!(factory.wait_for_cache_sync(Duration::from_secs(10)).await.all_synced());
    assert!(
        pods.cache().list().iter().all(|p| p
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key("typed")))
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn for_resource_by_group_version_resource() {
    let source = FakeSource::new();
    source.add(pod("ns", "a", ""));
    let factory = SharedInformerFactory::new(source);
    let unknown =
        factory.for_resource(&GroupVersionResource::new("apps", "v1", "deployments")).unwrap_err();
    assert_eq!(unknown.to_string(), "no informer found for apps/v1, Resource=deployments");

    let _ = factory.informer::<Pod>();
    factory.register::<Deployment>();
    let deployments =
        factory.for_resource(&GroupVersionResource::new("apps", "v1", "deployments")).unwrap();
    assert!(deployments.downcast::<Deployment>().is_some());
    assert!(deployments.downcast::<Pod>().is_none());

    let pods = factory.for_resource(&GroupVersionResource::of::<Pod>()).unwrap();
    factory.start();
    assert!(factory.wait_for_cache_sync(Duration::from_secs(10)).await.all_synced());
    assert!(pods.has_synced());
    let lister = pods.lister();
    let all = lister.list(&LabelSelector::everything());
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].kind(), "Pod");
    assert!(all[0].as_any().downcast_ref::<Pod>().is_some());
    assert_eq!(all[0].to_json().unwrap()["metadata"]["name"], "a");
    assert!(lister.get(Some("ns"), "a").is_ok());
    assert_eq!(lister.get(Some("ns"), "zz").err().unwrap().to_string(), r#"pods "zz" not found"#);
    factory.shutdown().await;
    let _ = Arc::new(());
}

/// A view of pods: their metadata and node.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct PodView {
    metadata: ObjectMeta,
    #[serde(default)]
    spec: serde_json::Map<String, serde_json::Value>,
}
crate::impl_resource!(PodView, view = Pod);

#[tokio::test]
async fn for_resource_prefers_whole_objects_to_views_in_either_order() {
    let source = FakeSource::new();
    source.add(pod("ns", "a", ""));
    source.add(PodView { metadata: pod("ns", "a", "").metadata, spec: serde_json::Map::new() });
    let gvr = GroupVersionResource::of::<Pod>();
    // The view asked for first, then the pods; and the other way round.
    for view_first in [true, false] {
        let factory = SharedInformerFactory::new(source.clone());
        if view_first {
            let _ = factory.informer::<PodView>();
            let only = factory.for_resource(&gvr).unwrap();
            assert!(only.downcast::<PodView>().is_some(), "the only informer of pods");
            let _ = factory.informer::<Pod>();
        } else {
            let _ = factory.informer::<Pod>();
            let _ = factory.informer::<PodView>();
        }
        let found = factory.for_resource(&gvr).unwrap();
        assert!(
            found.downcast::<Pod>().is_some(),
            "whole objects first (view first: {view_first})"
        );
        factory.start();
        let report = factory.wait_for_cache_sync(Duration::from_secs(10)).await;
        assert_eq!(report.0.len(), 1, "one resource, two informers");
        assert!(report.all_synced());
        assert_eq!(
            factory.lister::<PodView>().namespace("ns").get("a").unwrap().meta().name.as_deref(),
            Some("a")
        );
        factory.shutdown().await;
    }
    // Registering a view never displaces the type of whole objects.
    let factory = SharedInformerFactory::new(source);
    factory.register::<Pod>();
    factory.register::<PodView>();
    assert!(factory.for_resource(&gvr).unwrap().downcast::<Pod>().is_some());
}

#[tokio::test]
async fn managed_fields_are_dropped_by_default_and_kept_on_request_from_a_fake_source() {
    let source = FakeSource::new();
    let mut managed = pod("ns", "a", "");
    managed.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
    source.add(managed.clone());
    let pruned = SharedInformerFactory::new(source.clone());
    let kept = SharedInformerFactory::builder(source.clone())
        // Set before a config that does not say: still kept.
        .keep_managed_fields(true)
        .reflector_config(ReflectorConfig::default().streaming_list(true))
        .build();
    let (pruned_pods, kept_pods) = (pruned.informer::<Pod>(), kept.informer::<Pod>());
    for factory in [&pruned, &kept] {
        factory.start();
        assert!(factory.wait_for_cache_sync(Duration::from_secs(10)).await.all_synced());
    }
    // A watch event too.
    managed.metadata.name = Some("b".to_owned());
    source.add(managed);
    for pods in [&pruned_pods, &kept_pods] {
        tokio::time::timeout(Duration::from_secs(10), async {
            while pods.cache().len() < 2 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap();
    }
    assert!(pruned_pods.cache().list().iter().all(|p| p.metadata.managed_fields.is_none()));
    assert!(kept_pods.cache().list().iter().all(|p| p.metadata.managed_fields.is_some()));
    pruned.shutdown().await;
    kept.shutdown().await;
}

/// `shutdown` is bounded by the factory's shutdown timeout, whatever its handlers do, and says
/// which handlers it gave up on.
#[tokio::test]
async fn shutdown_gives_up_on_a_stuck_handler_after_the_timeout_and_names_it() {
    let source = FakeSource::new();
    source.add(pod("ns", "a", ""));
    let factory =
        SharedInformerFactory::builder(source).shutdown_timeout(Duration::from_millis(100)).build();
    let gate = Gate::default();
    gate.close();
    let _open = OpenOnDrop(gate.clone());
    let (entered, entered_rx) = std::sync::mpsc::channel();
    let stuck = factory
        .informer::<Pod>()
        .add_event_handler(crate::shared_informer::HandlerFuncs::new().on_add({
            let gate = gate.clone();
            move |_, _| {
                let _ = entered.send(());
                gate.pass();
            }
        }))
        .unwrap();
    let quick = factory
        .informer::<Namespace>()
        .add_event_handler(crate::shared_informer::HandlerFuncs::new());
    factory.start();
    tokio::task::spawn_blocking(move || entered_rx.recv_timeout(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("the handler is called");

    let report = tokio::time::timeout(Duration::from_secs(10), factory.shutdown())
        .await
        .expect("shutdown is bounded");
    let ids: Vec<u64> = report.unfinished().iter().map(UnfinishedHandler::id).collect();
    assert_eq!(ids, [stuck.id()], "{report}");
    assert!(report.to_string().contains("v1, Resource=pods"), "{report}");
    assert!(quick.unwrap().is_stopped());
}

// controller-runtime's cache_test.go "should be able to restrict cache to a namespace by using
// the global DefaultNamespaces setting" with a set of two, and "test multinamespaced cache for
// cluster scoped resources": pods of team-a and team-b only, one watch per namespace; namespaces
// (cluster-scoped) unaffected, listed once, not once per namespace. Duplicates count once;
// an empty set or "" is every namespace; `namespace` is the set of one.
#[tokio::test]
async fn namespaces_limit_namespaced_kinds_to_the_set() {
    let source = FakeSource::new();
    for ns in ["team-a", "team-b", "team-c"] {
        source.add(pod(ns, "web", ""));
        source.add(namespace(ns));
    }
    let factory = SharedInformerFactory::builder(source.clone())
        .namespaces(["team-b", "team-a", "team-b"])
        .build();
    let (pods, namespaces) = (factory.informer::<Pod>(), factory.informer::<Namespace>());
    factory.start();
    assert!(factory.wait_for_cache_sync(Duration::from_secs(10)).await.all_synced());
    let mut keys: Vec<_> = pods.cache().list_keys().iter().map(|k| k.as_str().to_owned()).collect();
    keys.sort();
    assert_eq!(keys, ["team-a/web", "team-b/web"]);
    assert_eq!(namespaces.cache().len(), 3);
    source.wait_for_watches::<Pod>(2).await;
    assert_eq!(source.list_requests::<Pod>().len(), 2, "one list per namespace");
    assert_eq!(source.list_requests::<Namespace>().len(), 1, "cluster-scoped: one list");
    assert!(format!("{factory:?}").contains(r#"namespaces: {"team-a", "team-b"}"#));
    factory.shutdown().await;

    for every in [
        SharedInformerFactory::builder(source.clone()).namespaces(Vec::<String>::new()).build(),
        SharedInformerFactory::builder(source.clone()).namespaces(["team-a", ""]).build(),
    ] {
        let pods = every.informer::<Pod>();
        every.start();
        assert!(every.wait_for_cache_sync(Duration::from_secs(10)).await.all_synced());
        assert_eq!(pods.cache().len(), 3, "every namespace");
        every.shutdown().await;
    }
    let one = SharedInformerFactory::builder(source.clone())
        .namespaces(["team-a", "team-b"])
        .namespace("team-c")
        .build();
    let pods = one.informer::<Pod>();
    one.start();
    assert!(one.wait_for_cache_sync(Duration::from_secs(10)).await.all_synced());
    assert_eq!(pods.cache().list_keys(), [ObjectKey::from("team-c/web")]);
    one.shutdown().await;
}

// client-go's NewFilteredSharedInformerFactory(client, resync, ns, tweak) and
// WithTweakListOptions (informers/factory.go), whose tweak every generated informer applies to
// both its ListFunc and its WatchFunc: here the factory's tweak starts from `labels`, a tweak
// for pods runs after it, and every list and watch of each namespace carries the result.
#[tokio::test]
async fn list_tweaks_apply_to_every_list_and_watch() {
    let source = FakeSource::new();
    for (ns, name, shard) in
        [("a", "p0", "0"), ("a", "p1", "1"), ("b", "q1", "1"), ("b", "web", "1")]
    {
        source.add(labeled_pod(ns, name, &[("shard", shard), ("app", "x")]));
    }
    source.add(namespace("a"));
    let factory = SharedInformerFactory::builder(source.clone())
        .namespaces(["a", "b"])
        .labels("app=x")
        .tweak_list_options(|options| {
            options.and_labels("shard=1");
        })
        .tweak_list_options_for::<Pod>(|options| {
            options.and_fields("metadata.name!=web");
        })
        // Set after the tweak: keeps it.
        .reflector_config(ReflectorConfig::default().page_size(1))
        .build();
    let (pods, namespaces) = (factory.informer::<Pod>(), factory.informer::<Namespace>());
    factory.start();
    assert!(factory.wait_for_cache_sync(Duration::from_secs(10)).await.all_synced());
    let mut keys: Vec<_> = pods.cache().list_keys().iter().map(|k| k.as_str().to_owned()).collect();
    keys.sort();
    assert_eq!(keys, ["a/p1", "b/q1"]);
    assert_eq!(namespaces.cache().len(), 0, "the factory's tweak applies to every kind");
    source.wait_for_watches::<Pod>(2).await;
    let lists = source.list_requests::<Pod>();
    let watches = source.watch_requests::<Pod>();
    assert!(lists.len() >= 2 && !watches.is_empty());
    assert!(lists.iter().all(|l| l.label_selector.as_deref() == Some("app=x,shard=1")
        && l.field_selector.as_deref() == Some("metadata.name!=web")));
    assert!(watches.iter().all(|w| w.label_selector.as_deref() == Some("app=x,shard=1")
        && w.field_selector.as_deref() == Some("metadata.name!=web")));
    let namespace_lists = source.list_requests::<Namespace>();
    assert!(namespace_lists.iter().all(|l| l.field_selector.is_none()), "pods' tweak is theirs");
    factory.shutdown().await;
}
