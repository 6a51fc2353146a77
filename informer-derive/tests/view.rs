//! Views (`#[informer(view = ...)]`) end to end over real HTTP against the embedded API server:
//! a view of pods and a view of a derived custom resource sync, tell their handlers about adds,
//! updates, deletes and resyncs as whole objects do, answer listers by namespace, name and label
//! and a custom index, skip `managedFields`, and never decode the fields they do not name (a pod
//! whose field k8s-openapi's `Pod` cannot decode still syncs into the view, by a list, a
//! streaming list and a watch).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use embedded_apiserver::ApiServer;
use embedded_apiserver::testing::eventually;
use informer_client::{Client, Config};
use informer_derive::Informer;
use informer_runtime::reflector::ReflectorConfig;
use informer_runtime::store::IndexFn;
use informer_runtime::{
    GroupVersionResource, HandlerFuncs, LabelSelector, Object, Resource, SharedInformerFactory,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(30);

/// What a scheduler-like controller reads of a pod.
#[derive(Clone, Debug, PartialEq, Deserialize, Informer)]
#[informer(view = k8s_openapi::api::core::v1::Pod)]
pub struct PodView {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// The node, and nothing else of the spec.
    pub spec: Option<PodViewSpec>,
    /// The phase, and nothing else of the status.
    pub status: Option<PodViewStatus>,
}

/// A pod's node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodViewSpec {
    /// `spec.nodeName`.
    pub node_name: Option<String>,
}

/// A pod's phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PodViewStatus {
    /// `status.phase`.
    pub phase: Option<String>,
}

impl PodView {
    fn node(&self) -> Option<&str> {
        self.spec.as_ref()?.node_name.as_deref()
    }

    fn key(&self) -> String {
        let meta = self.meta();
        format!(
            "{}/{}",
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default()
        )
    }
}

fn pods() -> GroupVersionResource {
    GroupVersionResource::of::<Pod>()
}

/// A pod as kubectl would create it, with `managedFields` and a node (the server sets its
/// status: phase `Pending`).
fn pod(namespace: &str, name: &str, app: &str, node: &str) -> Value {
    let mut pod = embedded_apiserver::testing::pod(namespace, name, app);
    pod["spec"]["nodeName"] = json!(node);
    pod
}

/// What the handler saw: `ADD|UPDATE|SYNC|DELETE ns/name`, with the node on updates.
type Seen = Arc<Mutex<Vec<String>>>;

fn recording_handler(seen: &Seen) -> HandlerFuncs<PodView> {
    let (add, update, delete) = (Arc::clone(seen), Arc::clone(seen), Arc::clone(seen));
    HandlerFuncs::new()
        .on_add(move |pod: Arc<PodView>, _initial| {
            add.lock().unwrap().push(format!("ADD {}", pod.key()));
        })
        .on_update(move |old: Arc<PodView>, new: Arc<PodView>| {
            // A resync hands the cached object over again, at the same resourceVersion.
            let verb = if old.meta().resource_version == new.meta().resource_version {
                "SYNC"
            } else {
                "UPDATE"
            };
            let node = new.node().unwrap_or_default();
            update.lock().unwrap().push(format!("{verb} {} node={node}", new.key()));
        })
        .on_delete(move |deleted| {
            delete.lock().unwrap().push(format!("DELETE {}", deleted.key()));
        })
}

fn saw(seen: &Seen, event: &str) -> bool {
    seen.lock().unwrap().iter().any(|e| e == event)
}

fn names(pods: &[Arc<PodView>]) -> Vec<String> {
    let mut names: Vec<String> = pods.iter().map(|p| p.key()).collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_of_pods_syncs_with_handlers_listers_an_index_and_resync() {
    view_of_pods_syncs(None).await;
}

// The same in compact storage (issue 18): handlers, listers, indices and resync answer alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_of_pods_in_compact_storage_syncs_alike() {
    view_of_pods_syncs(Some(1)).await;
}

/// A view informer over HTTP, its cache decoded or compact with `recent` objects decoded.
async fn view_of_pods_syncs(compact: Option<usize>) {
    let server = ApiServer::start().await.unwrap();
    server.create(&pods(), pod("default", "web-0", "web", "n1")).unwrap();
    server.create(&pods(), pod("default", "db-0", "db", "n1")).unwrap();
    server.create(&pods(), pod("other", "web-1", "web", "n2")).unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let mut builder = SharedInformerFactory::builder(client.clone()).resync(Duration::from_secs(1));
    if let Some(recent) = compact {
        builder = builder.compact_storage(recent);
    }
    let factory = builder.build();

    // The alias, as for any derived type; the informer is the factory's of `PodView`.
    let views = PodViewInformer::new(&factory);
    let informer = views.informer();
    let by_node: IndexFn<PodView> =
        Arc::new(|pod: &PodView| pod.node().map(str::to_owned).into_iter().collect());
    informer.add_indexers(HashMap::from([("node".into(), by_node)])).unwrap();
    let seen: Seen = Arc::default();
    let registration = informer.add_event_handler(recording_handler(&seen)).unwrap();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    assert!(registration.wait_for_sync().await);
    for initial in ["ADD default/web-0", "ADD default/db-0", "ADD other/web-1"] {
        assert!(saw(&seen, initial), "{initial} in {:?}", seen.lock().unwrap());
    }

    // Resync: the cached views again, unchanged.
    eventually("a resync of web-0", DEADLINE, || saw(&seen, "SYNC default/web-0 node=n1")).await;

    // Through the watch: an add, an update (by a merge patch read back as a view), a delete.
    server.create(&pods(), pod("default", "web-2", "web", "n2")).unwrap();
    let patch = json!({"spec": {"nodeName": "n3"}, "metadata": {"labels": {"app": "edge"}}});
    let patched: PodView = client.patch_merge(Some("default"), "web-0", &patch).await.unwrap();
    assert_eq!(patched.node(), Some("n3"));
    server.delete(&pods(), "default", "db-0").unwrap();
    for event in ["ADD default/web-2", "UPDATE default/web-0 node=n3", "DELETE default/db-0"] {
        eventually(event, DEADLINE, || saw(&seen, event)).await;
    }

    // Listers: by label, by namespace, by name, with typed not-found errors.
    let lister: PodViewLister = views.lister();
    let web = LabelSelector::parse("app=web").unwrap();
    assert_eq!(names(&lister.list(&web)), ["default/web-2", "other/web-1"]);
    let in_default: PodViewNamespaceLister = lister.namespace("default");
    assert_eq!(
        names(&in_default.list(&LabelSelector::everything())),
        ["default/web-0", "default/web-2"]
    );
    assert_eq!(names(&in_default.list(&web)), ["default/web-2"]);
    let web_0 = in_default.get("web-0").unwrap();
    assert_eq!(web_0.node(), Some("n3"));
    assert_eq!(web_0.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Pending"));
    assert!(web_0.metadata.uid.is_some() && web_0.metadata.resource_version.is_some());
    assert_eq!(in_default.get("db-0").unwrap_err().to_string(), r#"pod "db-0" not found"#);

    // The custom index follows updates and deletes.
    let on = |node: &str| names(&informer.cache().by_index("node", node).unwrap());
    assert_eq!(on("n1"), Vec::<String>::new());
    assert_eq!(on("n2"), ["default/web-2", "other/web-1"]);
    assert_eq!(on("n3"), ["default/web-0"]);

    // managedFields is skipped while decoding a view, as for whole objects.
    let all = lister.list(&LabelSelector::everything());
    assert_eq!(all.len(), 3);
    assert!(all.iter().all(|p| p.metadata.managed_fields.is_none()));

    factory.shutdown().await;
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_a_view_does_not_name_are_never_decoded() {
    let server = ApiServer::start().await.unwrap();
    // `spec.priority` is an integer in `Pod`, and `containers` a list: k8s-openapi's `Pod`
    // cannot decode this pod, the view (which names neither) can.
    let mut odd = pod("default", "odd-0", "web", "n1");
    odd["spec"]["priority"] = json!("high");
    odd["spec"]["containers"][0]["ports"] = json!({"not": "a list"});
    server.create(&pods(), odd).unwrap();
    server.create(&pods(), pod("default", "web-0", "web", "n1")).unwrap();
    let stored = server.get(&pods(), "default", "odd-0").unwrap();
    assert!(serde_json::from_value::<Pod>(stored).is_err(), "Pod cannot decode it");

    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    // Listing then watching, and a streaming list (a watch with sendInitialEvents).
    let listing = SharedInformerFactory::new(client.clone());
    let streaming = SharedInformerFactory::builder(client.clone())
        .reflector_config(ReflectorConfig::default().streaming_list(true))
        .build();
    for factory in [&listing, &streaming] {
        let lister = factory.lister::<PodView>();
        factory.start();
        assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
        assert_eq!(lister.namespace("default").get("odd-0").unwrap().node(), Some("n1"));
    }

    // And through a watch event too.
    let mut later = pod("default", "odd-1", "web", "n2");
    later["spec"]["priority"] = json!({"very": "high"});
    server.create(&pods(), later).unwrap();
    for factory in [&listing, &streaming] {
        let lister = factory.lister::<PodView>();
        eventually("odd-1 in the view's cache", DEADLINE, || {
            lister.namespace("default").get("odd-1").is_ok_and(|p| p.node() == Some("n2"))
        })
        .await;
    }
    // A single-object read decodes into the view as well.
    let odd: PodView = client.get(Some("default"), "odd-1").await.unwrap();
    assert_eq!(odd.node(), Some("n2"));

    listing.shutdown().await;
    streaming.shutdown().await;
    server.shutdown().await.unwrap();
}

/// A derived custom resource...
#[derive(Clone, Debug, PartialEq, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", kind = "Widget")]
pub struct Widget {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// The desired state.
    pub spec: WidgetSpec,
}

/// What a widget should be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WidgetSpec {
    /// How many.
    pub replicas: i32,
    /// A long description no controller of ours reads.
    pub description: String,
}

/// ...and a view of it, naming its type as a string.
#[derive(Clone, Debug, PartialEq, Deserialize, Informer)]
#[informer(view = "Widget")]
pub struct WidgetView {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// The replicas alone.
    pub spec: WidgetViewSpec,
}

/// How many widgets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WidgetViewSpec {
    /// How many.
    pub replicas: i32,
}

fn widget(name: &str, replicas: i32) -> Widget {
    Widget {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: WidgetSpec { replicas, description: "x".repeat(1000) },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_of_a_derived_custom_resource_syncs() {
    let server = ApiServer::start().await.unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    client.create(None, &Widget::crd()).await.unwrap();
    client.create(Some("default"), &widget("a", 1)).await.unwrap();

    let factory = SharedInformerFactory::new(client.clone());
    let lister: WidgetViewLister = factory.lister::<WidgetView>();
    let whole = factory.lister::<Widget>();
    factory.start();
    let report = factory.wait_for_cache_sync(DEADLINE).await;
    assert!(report.all_synced());
    assert_eq!(report.0.len(), 1, "one resource, two informers");
    assert_eq!(lister.namespace("default").get("a").unwrap().spec.replicas, 1);

    client.create(Some("default"), &widget("b", 2)).await.unwrap();
    eventually("b in the view and in the whole objects", DEADLINE, || {
        lister.namespace("default").get("b").is_ok() && whole.namespace("default").get("b").is_ok()
    })
    .await;
    // The whole objects are the factory's answer by resource.
    let by_resource = factory.for_resource(&GroupVersionResource::of::<Widget>()).unwrap();
    assert!(by_resource.downcast::<Widget>().is_some());

    factory.shutdown().await;
    server.shutdown().await.unwrap();
}

#[test]
fn a_view_has_the_identity_of_the_viewed_type() {
    assert_eq!(
        (PodView::API_VERSION, PodView::GROUP, PodView::VERSION, PodView::KIND, PodView::PLURAL),
        ("v1", "", "v1", "Pod", "pods")
    );
    assert!(informer_runtime::is_namespaced::<PodView>());
    assert_eq!(GroupVersionResource::of::<WidgetView>(), GroupVersionResource::of::<Widget>());
    assert_eq!((WidgetView::API_VERSION, WidgetView::KIND), ("example.com/v1", "Widget"));
}

#[test]
fn a_view_serializes_its_fields_alone_never_as_the_whole_object() {
    let view = PodView {
        metadata: ObjectMeta { name: Some("web-0".to_owned()), ..ObjectMeta::default() },
        spec: Some(PodViewSpec { node_name: Some("n1".to_owned()) }),
        status: None,
    };
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(
        json,
        json!({"metadata": {"name": "web-0"}, "spec": {"nodeName": "n1"}, "status": null})
    );
    // And reads it back.
    assert_eq!(serde_json::from_value::<PodView>(json).unwrap(), view);
}
