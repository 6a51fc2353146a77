//! Dynamic informers over real HTTP against the embedded API server: resources known only at
//! run time, a built-in and a CRD created while the informer already runs, with handlers,
//! listers, the factory's `for_resource` and kubectl-style names.
//!
//! Then writes through `Client::dynamic` (`DynamicApi`): create, get, replace, every patch
//! format, the status subresource and deletes with preconditions, for a custom resource and a
//! built-in.
//!
//! client-go's scenarios: `dynamicinformer`'s `TestFilteredDynamicSharedInformerFactory` and
//! `TestDynamicSharedInformerFactory` (an informer per GVR, add/update/delete reach the
//! handler), and `metadatainformer`'s `TestMetadataSharedInformerFactory` (metadata only).

// Every test here runs this crate's own HTTP client (`Client::new`, `Config`), which the
// `http` feature builds.
#![cfg(feature = "http")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::sync::Arc;
use std::time::Duration;

use embedded_apiserver::ApiServer;
use informer_client::{Client, Config, DynamicApi, Patch, PatchParams};
use informer_runtime::dynamic::DynamicObject;
use informer_runtime::factory::FactoryError;
use informer_runtime::{
    ApiResource, GroupVersionResource, HandlerFuncs, LabelSelector, SharedInformerFactory,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, Preconditions};
use parking_lot::Mutex;
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(20);

/// Waits until `ready` holds, failing with `what` after the deadline.
async fn until(what: &str, mut ready: impl FnMut() -> bool) {
    tokio::time::timeout(DEADLINE, async {
        while !ready() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting until {what}"));
}

/// What a handler saw, as `verb name`.
type Seen = Arc<Mutex<Vec<String>>>;

fn recording_handler(seen: &Seen) -> HandlerFuncs<DynamicObject> {
    let (adds, updates, deletes) = (Arc::clone(seen), Arc::clone(seen), Arc::clone(seen));
    let name = |o: &DynamicObject| o.metadata.name.clone().unwrap_or_default();
    HandlerFuncs::new()
        .on_add(move |o: Arc<DynamicObject>, _| adds.lock().push(format!("add {}", name(&o))))
        .on_update(move |_, o: Arc<DynamicObject>| {
            updates.lock().push(format!("update {}", name(&o)));
        })
        .on_delete(move |o| {
            let key = o.key();
            let name = key.split().map_or(key.as_str(), |(_, name)| name).to_owned();
            deletes.lock().push(format!("delete {name}"));
        })
}

fn config_map(namespace: &str, name: &str, mode: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": namespace, "name": name, "labels": {"app": "demo"}},
        "data": {"mode": mode},
    })
}

fn client(server: &ApiServer) -> Client {
    Client::new(Config::new(server.url().parse().unwrap())).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_informer_of_a_built_in_caches_and_tells_handlers_like_a_typed_one() {
    let server = ApiServer::start().await.unwrap();
    let gvr = GroupVersionResource::of::<ConfigMap>();
    server.create(&gvr, config_map("a", "listed", "slow")).unwrap();
    server.create(&gvr, config_map("b", "other", "slow")).unwrap();

    let factory = SharedInformerFactory::new(client(&server));
    let informer = factory.dynamic_informer(&gvr).unwrap();
    let seen: Seen = Arc::default();
    informer.add_event_handler(recording_handler(&seen)).unwrap();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());

    // Listed: typed metadata, the rest as JSON, `apiVersion` and `kind` filled in.
    let lister = informer.lister();
    let listed = lister.namespace("a").get("listed").unwrap();
    assert_eq!((listed.api_version(), listed.kind()), ("v1", "ConfigMap"));
    assert_eq!(listed.data["data"]["mode"], "slow");
    let typed: ConfigMap = listed.try_parse().unwrap();
    assert_eq!(typed.data.unwrap()["mode"], "slow");
    assert_eq!(lister.list(&LabelSelector::parse("app=demo").unwrap()).len(), 2);
    assert_eq!(lister.namespace("b").list(&LabelSelector::everything()).len(), 1);
    let missing = lister.namespace("a").get("nope").unwrap_err();
    assert_eq!(missing.to_string(), r#"configmaps "nope" not found"#);

    // Watched: adds, updates and deletes reach the handler.
    server.create(&gvr, config_map("a", "watched", "slow")).unwrap();
    let mut changed = server.get(&gvr, "a", "listed").unwrap();
    changed["data"]["mode"] = json!("fast");
    server.update(&gvr, changed).unwrap();
    server.delete(&gvr, "b", "other").unwrap();
    until("every change is seen", || seen.lock().len() == 5).await;
    let mut seen = seen.lock().clone();
    seen.sort();
    assert_eq!(seen, ["add listed", "add other", "add watched", "delete other", "update listed"]);
    until("the update is cached", || {
        lister.namespace("a").get("listed").is_ok_and(|o| o.data["data"]["mode"] == "fast")
    })
    .await;

    // One informer per resource, shared; `for_resource` finds it.
    let again = factory.dynamic_informer(&gvr).unwrap();
    assert_eq!(again.cache().len(), informer.cache().len());
    let generic = factory.for_resource(&gvr).unwrap();
    let found = generic.lister().get(Some("a"), "watched").unwrap();
    assert_eq!(found.kind(), "ConfigMap");
    assert!(generic.downcast::<DynamicObject>().is_some());
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_factory_namespace_applies_to_namespaced_dynamic_resources_only() {
    let server = ApiServer::start().await.unwrap();
    let gvr = GroupVersionResource::of::<ConfigMap>();
    server.create(&gvr, config_map("a", "in", "x")).unwrap();
    server.create(&gvr, config_map("b", "out", "x")).unwrap();

    // `""` is every namespace.
    let every = SharedInformerFactory::builder(client(&server)).namespace("").build();
    let all = every.dynamic_informer(&gvr).unwrap();
    every.start();
    assert!(every.wait_for_cache_sync(DEADLINE).await.all_synced());
    assert_eq!(all.cache().len(), 2);
    every.shutdown().await;

    let factory = SharedInformerFactory::builder(client(&server)).namespace("a").build();
    let config_maps = factory.dynamic_informer(&gvr).unwrap();
    let namespaces =
        factory.dynamic_informer(&GroupVersionResource::new("", "v1", "namespaces")).unwrap();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    let names: Vec<_> =
        config_maps.cache().list().iter().map(|o| o.metadata.name.clone()).collect();
    assert_eq!(names, [Some("in".to_owned())]);
    // Cluster-scoped: the namespace does not narrow it, and `get` reads by name.
    assert!(namespaces.lister().get("kube-system").is_ok(), "every namespace is cached");
    factory.shutdown().await;
}

/// controller-runtime's multi-namespace cache ("should be able to restrict cache to a namespace
/// set"), for a resource known at run time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_informer_over_a_set_of_namespaces_caches_those_only() {
    let server = ApiServer::start().await.unwrap();
    let gvr = GroupVersionResource::of::<ConfigMap>();
    for namespace in ["a", "b", "c"] {
        server.create(&gvr, config_map(namespace, "listed", "x")).unwrap();
    }
    let factory = SharedInformerFactory::builder(client(&server)).namespaces(["a", "b"]).build();
    let config_maps = factory.dynamic_informer(&gvr).unwrap();
    let seen: Seen = Arc::default();
    config_maps.add_event_handler(recording_handler(&seen)).unwrap();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    server.create(&gvr, config_map("b", "watched", "x")).unwrap();
    server.create(&gvr, config_map("c", "watched", "x")).unwrap();
    until("the new object in b is seen", || seen.lock().len() == 3).await;
    let mut keys: Vec<String> =
        config_maps.cache().list_keys().iter().map(|k| k.as_str().to_owned()).collect();
    keys.sort();
    assert_eq!(keys, ["a/listed", "b/listed", "b/watched"]);

    // A cluster-scoped resource under a set of namespaces: an error that says so, never synced.
    let namespaces =
        factory.dynamic_informer(&GroupVersionResource::new("", "v1", "namespaces")).unwrap();
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = Arc::clone(&errors);
    namespaces.set_watch_error_handler(move |e| log.lock().push(e.to_string())).unwrap();
    factory.start();
    until("the error", || !errors.lock().is_empty()).await;
    let error = errors.lock()[0].clone();
    assert!(error.contains("namespaces is cluster-scoped"), "{error}");
    assert!(error.contains("limited to a set of namespaces"), "{error}");
    assert!(!namespaces.has_synced());
    assert!(namespaces.cache().is_empty());
    factory.shutdown().await;
}

/// A namespaced CRD, `widgets.example.com`, served at `v1`; its lists are `WidgetCollection`s,
/// which discovery does not say (dynamic informers take lists of any kind).
fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "shortNames": ["wd"], "listKind": "WidgetCollection"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    }))
    .unwrap()
}

fn widget(name: &str, size: i64) -> serde_json::Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"namespace": "default", "name": name},
        "spec": {"size": size},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_informer_of_a_crd_created_at_run_time_syncs_once_it_is_served() {
    let server = ApiServer::start().await.unwrap();
    let client = client(&server);
    let gvr = GroupVersionResource::new("example.com", "v1", "widgets");

    // Asked for before the CRD exists: discovery says why it is not served.
    let error = client.discover(&gvr).await.unwrap_err();
    assert!(
        error.to_string().contains("the server does not know the group example.com"),
        "{error}"
    );
    assert!(error.is_not_found(), "{error:?}");

    let factory = SharedInformerFactory::new(client.clone());
    let widgets = factory.dynamic_informer(&gvr).unwrap();
    let seen: Seen = Arc::default();
    widgets.add_event_handler(recording_handler(&seen)).unwrap();
    factory.start();
    assert!(!factory.wait_for_cache_sync(Duration::from_millis(300)).await.all_synced());

    client.create(None, &widget_crd()).await.unwrap();
    server.create(&gvr, widget("first", 1)).unwrap();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced(), "synced once served");
    let resource = client.discover(&gvr).await.unwrap();
    assert_eq!(
        resource,
        ApiResource {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
        }
    );

    until("the first widget is seen", || seen.lock().contains(&"add first".to_owned())).await;
    let mut first = server.get(&gvr, "default", "first").unwrap();
    first["spec"]["size"] = json!(2);
    server.update(&gvr, first).unwrap();
    server.create(&gvr, widget("second", 5)).unwrap();
    server.delete(&gvr, "default", "second").unwrap();
    until("every change is seen", || seen.lock().len() == 4).await;
    assert_eq!(*seen.lock(), ["add first", "update first", "add second", "delete second"]);
    let cached = widgets.lister().namespace("default").get("first").unwrap();
    assert_eq!((cached.kind(), cached.data["spec"]["size"].as_i64()), ("Widget", Some(2)));

    // The metadata informer of the same resource: metadata only.
    let metadata = factory.dynamic_metadata_informer(&gvr).unwrap();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    let only_metadata = metadata.lister().namespace("default").get("first").unwrap();
    assert_eq!(only_metadata.kind(), "PartialObjectMetadata");
    assert!(only_metadata.data.is_empty(), "{:?}", only_metadata.data);
    // `for_resource` prefers whole objects.
    let generic = factory.for_resource(&gvr).unwrap();
    assert_eq!(generic.lister().get(Some("default"), "first").unwrap().kind(), "Widget");
    factory.shutdown().await;
}

/// `doohickeys.example.com`, served only at `v1alpha1`: not the group's preferred version.
fn doohickey_crd() -> CustomResourceDefinition {
    let mut crd = serde_json::to_value(widget_crd()).unwrap();
    crd["metadata"]["name"] = json!("doohickeys.example.com");
    crd["spec"]["names"] = json!({"kind": "Doohickey", "plural": "doohickeys"});
    crd["spec"]["versions"][0]["name"] = json!("v1alpha1");
    serde_json::from_value(crd).unwrap()
}

#[tokio::test]
async fn resources_are_found_by_the_names_kubectl_takes() {
    let server = ApiServer::start().await.unwrap();
    let client = client(&server);
    client.create(None, &widget_crd()).await.unwrap();
    client.create(None, &doohickey_crd()).await.unwrap();
    let doohickeys = client.resolve("doohickeys").await.unwrap();
    assert_eq!((doohickeys.version.as_str(), doohickeys.kind.as_str()), ("v1alpha1", "Doohickey"));
    for (name, expected) in [
        ("configmaps", "configmaps"),
        ("configmap", "configmaps"),
        ("ConfigMap", "configmaps"),
        ("cm", "configmaps"),
        ("deployments.apps", "deployments.apps"),
        ("deployments.v1.apps", "deployments.apps"),
        ("Deployments.Apps", "deployments.apps"),
        ("deploy", "deployments.apps"),
        ("widgets.example.com", "widgets.example.com"),
        ("wd", "widgets.example.com"),
    ] {
        let found = client.resolve(name).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(found.to_string(), expected, "{name}");
    }
    let error = client.resolve("gizmos").await.unwrap_err();
    assert!(error.to_string().contains("kubectl api-resources"), "{error}");
    assert!(error.is_not_found());
}

/// A CRD deleted and created again with another scope: the informer reads discovery again
/// and follows the resource as it is now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_informer_follows_a_crd_created_again_with_another_scope() {
    let server = ApiServer::start().await.unwrap();
    let client = client(&server);
    let gvr = GroupVersionResource::new("example.com", "v1", "widgets");
    client.create(None, &widget_crd()).await.unwrap();
    server.create(&gvr, widget("namespaced", 1)).unwrap();

    let factory = SharedInformerFactory::builder(client.clone()).namespace("default").build();
    let widgets = factory.dynamic_informer(&gvr).unwrap();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    until("the namespaced widget", || widgets.cache().len() == 1).await;

    client.delete::<CustomResourceDefinition>(None, "widgets.example.com").await.unwrap();
    let mut cluster_scoped = serde_json::to_value(widget_crd()).unwrap();
    cluster_scoped["spec"]["scope"] = json!("Cluster");
    let cluster_scoped: CustomResourceDefinition = serde_json::from_value(cluster_scoped).unwrap();
    // The server may take a moment to forget the old definition.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while let Err(error) = client.create(None, &cluster_scoped).await {
        assert!(tokio::time::Instant::now() < deadline, "the CRD is never created again: {error}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut global = widget("global", 2);
    global["metadata"].as_object_mut().unwrap().remove("namespace");
    server.create(&gvr, global).unwrap();
    until("the cluster-scoped widget, and only it", || {
        let keys = widgets.cache().list_keys();
        keys.len() == 1 && keys[0].as_str() == "global"
    })
    .await;
    factory.shutdown().await;
}

#[tokio::test]
async fn a_source_without_dynamic_resources_says_so() {
    let factory = SharedInformerFactory::new(informer_runtime::testing::FakeSource::new());
    let gvr = GroupVersionResource::new("example.com", "v1", "widgets");
    assert_eq!(
        factory.dynamic_informer(&gvr).err(),
        Some(FactoryError::DynamicNotSupported(gvr.clone()))
    );
    assert_eq!(factory.for_resource(&gvr).err(), Some(FactoryError::NoInformerFound(gvr)));
}

// Writes through `Client::dynamic`: client-go's dynamic client (`dynamic/client_test.go`:
// `TestCreate`, `TestGet`, `TestUpdate`, `TestUpdateStatus`, `TestPatch`, `TestDelete`) and
// kube-rs's `Api<DynamicObject>`, over real HTTP.

/// `widgets.example.com` with a status subresource.
fn widget_crd_with_status() -> CustomResourceDefinition {
    let mut crd = serde_json::to_value(widget_crd()).unwrap();
    crd["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    serde_json::from_value(crd).unwrap()
}

fn status_of(error: &informer_client::ClientError) -> (u16, String) {
    let status = error.status().unwrap_or_else(|| panic!("no status in {error:?}"));
    (status.code, status.reason.clone())
}

fn uid_precondition(uid: &str) -> DeleteOptions {
    DeleteOptions {
        preconditions: Some(Preconditions {
            uid: Some(uid.to_owned()),
            ..Preconditions::default()
        }),
        ..DeleteOptions::default()
    }
}

/// The server with `widgets.example.com` (with a status subresource) installed, and the
/// dynamic requests for its widgets in `default`.
async fn widgets(server: &ApiServer) -> (Client, ApiResource, DynamicApi) {
    let client = client(server);
    client.create(None, &widget_crd_with_status()).await.unwrap();
    let resource =
        client.discover(&GroupVersionResource::new("example.com", "v1", "widgets")).await.unwrap();
    let widgets = client.dynamic(&resource).namespace("default");
    assert_eq!(widgets.resource(), &resource);
    (client, resource, widgets)
}

/// A widget `blue` of size `size`, created.
async fn create_blue(widgets: &DynamicApi, resource: &ApiResource, size: i64) -> DynamicObject {
    let mut blue = DynamicObject::new("blue", resource);
    blue.data.insert("spec".to_owned(), json!({"size": size}));
    widgets.create(&blue).await.unwrap()
}

#[tokio::test]
async fn dynamic_writes_of_a_custom_resource_create_replace_and_patch_in_every_format() {
    let server = ApiServer::start().await.unwrap();
    let (_, resource, widgets) = widgets(&server).await;

    // Create, then create again: 409 AlreadyExists.
    let created = create_blue(&widgets, &resource, 1).await;
    assert_eq!((created.api_version(), created.kind()), ("example.com/v1", "Widget"));
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(created.data["spec"]["size"], 1);
    let again = widgets.create(&created).await.unwrap_err();
    assert_eq!(status_of(&again), (409, "AlreadyExists".to_owned()), "{again}");

    // Get, replace, and a replace from the stale version: 409 Conflict.
    let read = widgets.get("blue").await.unwrap();
    assert_eq!(read.metadata.resource_version, created.metadata.resource_version);
    let mut bigger = read.clone();
    bigger.data.insert("spec".to_owned(), json!({"size": 2}));
    let replaced = widgets.replace("blue", &bigger).await.unwrap();
    assert_eq!(replaced.data["spec"]["size"], 2);
    let stale = widgets.replace("blue", &read).await.unwrap_err();
    assert!(stale.is_conflict(), "{stale}");
    assert_eq!(status_of(&stale), (409, "Conflict".to_owned()));

    // Each patch format a custom resource takes.
    let merge = json!({"metadata": {"labels": {"tier": "edge"}}});
    let merged =
        widgets.patch("blue", &Patch::Merge(&merge), &PatchParams::default()).await.unwrap();
    assert_eq!(merged.metadata.labels.unwrap()["tier"], "edge");
    let guarded = json!([
        {"op": "test", "path": "/spec/size", "value": 2},
        {"op": "replace", "path": "/spec/size", "value": 3},
    ]);
    let patched = widgets.patch("blue", &Patch::Json(&guarded), &PatchParams::default()).await;
    assert_eq!(patched.unwrap().data["spec"]["size"], 3);
    // The same test again fails: size is 3 now. kube-apiserver answers 422 Invalid.
    let failed = widgets.patch("blue", &Patch::Json(&guarded), &PatchParams::default()).await;
    assert_eq!(status_of(&failed.unwrap_err()), (422, "Invalid".to_owned()));
    let applied = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "blue", "namespace": "default"},
        "spec": {"color": "blue"},
    });
    let params = PatchParams::apply("widget-controller").force();
    let applied_widget = widgets.patch("blue", &Patch::Apply(&applied), &params).await.unwrap();
    assert_eq!(applied_widget.data["spec"]["color"], "blue");
    // An apply names its field manager; the server says so.
    let unnamed = widgets.patch("blue", &Patch::Apply(&applied), &PatchParams::default()).await;
    assert_eq!(status_of(&unnamed.unwrap_err()), (422, "Invalid".to_owned()));
    // No strategic merge patches for custom resources: 415, as the apiextensions server says.
    let none = PatchParams::default();
    let strategic = widgets.patch("blue", &Patch::Strategic(&merge), &none).await.unwrap_err();
    assert_eq!(status_of(&strategic), (415, "UnsupportedMediaType".to_owned()));
}

#[tokio::test]
async fn dynamic_writes_of_a_custom_resource_status_and_deletes_with_preconditions() {
    let server = ApiServer::start().await.unwrap();
    let (client, resource, widgets) = widgets(&server).await;
    let created = create_blue(&widgets, &resource, 3).await;
    let uid = created.metadata.uid.clone().unwrap();

    // The status subresource changes the status only; the main resource keeps it.
    let status_patch = json!({"status": {"ready": true}, "spec": {"size": 99}});
    let with_status = widgets
        .patch_status("blue", &Patch::Merge(&status_patch), &PatchParams::default())
        .await
        .unwrap();
    assert_eq!(
        (&with_status.data["status"]["ready"], &with_status.data["spec"]["size"]),
        (&json!(true), &json!(3))
    );
    let mut not_ready = with_status.clone();
    not_ready.data.insert("status".to_owned(), json!({"ready": false}));
    not_ready.data.insert("spec".to_owned(), json!({"size": 100}));
    let updated = widgets.replace_status("blue", &not_ready).await.unwrap();
    assert_eq!(
        (&updated.data["status"]["ready"], &updated.data["spec"]["size"]),
        (&json!(false), &json!(3))
    );
    let mut main = updated.clone();
    main.data.insert("status".to_owned(), json!({"ready": true}));
    let kept = widgets.replace("blue", &main).await.unwrap();
    assert_eq!(kept.data["status"]["ready"], false, "the main resource keeps the stored status");

    // Delete with preconditions: another UID or a stale version is 409, the object stays.
    let wrong_uid = widgets.delete_with("blue", &uid_precondition("not-the-uid")).await;
    assert_eq!(status_of(&wrong_uid.unwrap_err()), (409, "Conflict".to_owned()));
    let stale_version = DeleteOptions {
        preconditions: Some(Preconditions {
            resource_version: created.metadata.resource_version.clone(),
            ..Preconditions::default()
        }),
        ..DeleteOptions::default()
    };
    let stale_delete = widgets.delete_with("blue", &stale_version).await.unwrap_err();
    assert!(stale_delete.is_conflict(), "{stale_delete}");
    assert!(widgets.get("blue").await.is_ok(), "a failed precondition deletes nothing");
    let options = DeleteOptions {
        propagation_policy: Some("Background".to_owned()),
        grace_period_seconds: Some(0),
        ..uid_precondition(&uid)
    };
    widgets.delete_with("blue", &options).await.unwrap();
    let gone = widgets.get("blue").await.unwrap_err();
    assert!(gone.is_not_found(), "{gone}");
    assert!(widgets.delete("blue").await.unwrap_err().is_not_found());
    let patch = Patch::Merge(json!({"metadata": {"labels": {"tier": "edge"}}}));
    let absent = widgets.patch("blue", &patch, &PatchParams::default()).await.unwrap_err();
    assert!(absent.is_not_found(), "{absent}");

    // A namespaced resource without a namespace: nothing is sent.
    let unscoped = client.dynamic(&resource).get("blue").await.unwrap_err();
    assert!(
        matches!(unscoped, informer_client::ClientError::NamespaceRequired { .. }),
        "{unscoped}"
    );
}

#[tokio::test]
async fn dynamic_writes_of_a_built_in_kind_take_every_patch_format() {
    let server = ApiServer::start().await.unwrap();
    let client = client(&server);
    let resource = client.resolve("cm").await.unwrap();
    assert_eq!(resource, ApiResource::of::<ConfigMap>());
    let config_maps = client.dynamic(&resource).namespace("apps");

    let object: DynamicObject =
        serde_json::from_value(config_map("apps", "settings", "slow")).unwrap();
    let created = config_maps.create(&object).await.unwrap();
    assert_eq!((created.kind(), &created.data["data"]["mode"]), ("ConfigMap", &json!("slow")));
    // The typed client reads what the dynamic one wrote.
    let typed: ConfigMap = client.get(Some("apps"), "settings").await.unwrap();
    assert_eq!(typed.metadata.uid, created.metadata.uid);

    let mut replaced = created.clone();
    replaced.data.insert("data".to_owned(), json!({"mode": "fast"}));
    assert_eq!(
        config_maps.replace("settings", &replaced).await.unwrap().data["data"]["mode"],
        "fast"
    );
    let stale = config_maps.replace("settings", &created).await.unwrap_err();
    assert!(stale.is_conflict(), "{stale}");

    let none = PatchParams::default();
    let merge = json!({"data": {"extra": "1"}});
    let merged = config_maps.patch("settings", &Patch::Merge(&merge), &none).await.unwrap();
    assert_eq!(merged.data["data"], json!({"mode": "fast", "extra": "1"}));
    let strategic = json!({"metadata": {"labels": {"tier": "edge"}}});
    let patched =
        config_maps.patch("settings", &Patch::Strategic(&strategic), &none).await.unwrap();
    assert_eq!(patched.metadata.labels.unwrap()["tier"], "edge");
    let ops = json!([
        {"op": "test", "path": "/data/extra", "value": "1"},
        {"op": "remove", "path": "/data/extra"},
    ]);
    let removed = config_maps.patch("settings", &Patch::Json(&ops), &none).await.unwrap();
    assert_eq!(removed.data["data"], json!({"mode": "fast"}));
    let failed = config_maps.patch("settings", &Patch::Json(&ops), &none).await.unwrap_err();
    assert_eq!(status_of(&failed), (422, "Invalid".to_owned()));
    let desired = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "apps"},
        "data": {"owner": "settings-controller"},
    });
    let params = PatchParams::apply("settings-controller").force();
    let applied = config_maps.patch("settings", &Patch::Apply(&desired), &params).await.unwrap();
    assert_eq!(applied.data["data"]["owner"], "settings-controller");
    // A dry run answers with the result and stores nothing.
    let dry = config_maps
        .patch(
            "settings",
            &Patch::Merge(&json!({"data": {"mode": "dry"}})),
            &PatchParams::default().dry_run(),
        )
        .await
        .unwrap();
    assert_eq!(dry.data["data"]["mode"], "dry");
    assert_eq!(config_maps.get("settings").await.unwrap().data["data"]["mode"], "fast");
    // A ConfigMap has no status subresource.
    let no_status = config_maps.patch_status("settings", &Patch::Merge(&merge), &none).await;
    assert!(no_status.unwrap_err().is_not_found());

    let wrong = config_maps.delete_with("settings", &uid_precondition("not-the-uid")).await;
    assert_eq!(status_of(&wrong.unwrap_err()), (409, "Conflict".to_owned()));
    config_maps.delete("settings").await.unwrap();
    assert!(config_maps.get("settings").await.unwrap_err().is_not_found());

    // A cluster-scoped kind: no namespace needed, one given is ignored.
    let namespaces = client.resolve("namespaces").await.unwrap();
    let default = client.dynamic(&namespaces).get("default").await.unwrap();
    assert_eq!((default.kind(), default.metadata.name.as_deref()), ("Namespace", Some("default")));
    assert!(client.dynamic(&namespaces).namespace("apps").get("default").await.is_ok());
}
