//! Controllers of resources known only at run time, over real HTTP to the embedded API server:
//! a `Controller<DynamicObject, _>` of a CRD installed while it runs, children and watched
//! resources known at run time (`owns_dynamic`, `watches_dynamic`) of dynamic and typed
//! controllers, filters on dynamic objects, and status written through `Client::dynamic` and
//! `ApiWriter::json_patch`, converging.
//!
//! The anchors: kube-rs's `Controller::new_with(Api<DynamicObject>, _, ApiResource)` (its
//! `examples/dynamic_*`), and controller-runtime's builder with unstructured objects
//! (`pkg/builder/controller_test.go`: "should Reconcile Owns objects", `doReconcileTest`,
//! whose `For` and `Owns` take `unstructured.Unstructured` as well as typed objects). Each test
//! names the scenario it ports.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "support/clients.rs"]
mod clients;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use clients::{kube_client, our_client};

use embedded_apiserver::ApiServer;
use embedded_apiserver::testing::eventually;
use informer_client::{Client, ClientError, Patch, PatchParams};
use informer_controller::ApiWriter;
use informer_controller::controller::{
    Action, Controller, ControllerError, ControllerReport, Request,
};
use informer_controller::filter::GenerationChanged;
use informer_controller::workqueue::WorkQueue;
use informer_runtime::dynamic::DynamicObject;
use informer_runtime::{ApiResource, GroupVersionResource, ObjectKey, SharedInformerFactory};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// How long a test waits for a controller (real time) before it fails.
const DEADLINE: Duration = Duration::from_secs(20);
/// `widgets.example.com` as the program knows it without asking discovery: written out, as a
/// controller that installs its own CRD knows it.
fn widgets() -> ApiResource {
    ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
        namespaced: true,
    }
}

fn widget_gvr() -> GroupVersionResource {
    widgets().gvr()
}

fn config_maps() -> ApiResource {
    ApiResource::of::<ConfigMap>()
}

/// The CRD of [`widgets`], with a status subresource or without.
fn widget_crd(status_subresource: bool) -> CustomResourceDefinition {
    let mut version = json!({
        "name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
    });
    if status_subresource {
        version["subresources"] = json!({"status": {}});
    }
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [version],
        }
    }))
    .unwrap()
}

fn widget(name: &str, size: i64) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"namespace": "default", "name": name},
        "spec": {"size": size},
    })
}

/// A controller reference to `owner` (as stored on the server), as `set_controller_reference`
/// writes one.
fn controller_reference_to(owner: &Value) -> Value {
    json!({
        "apiVersion": owner["apiVersion"], "kind": owner["kind"],
        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
        "controller": true, "blockOwnerDeletion": true,
    })
}

/// The config map `default/name`, with `owner_references`.
fn config_map(name: &str, owner_references: &Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"namespace": "default", "name": name, "ownerReferences": owner_references},
        "data": {"k": "v"},
    })
}

/// Changes `data.k` of the config map `default/name` on the server.
fn touch_config_map(server: &ApiServer, name: &str, value: &str) {
    let gvr = config_maps().gvr();
    let mut stored = server.get(&gvr, "default", name).unwrap();
    stored["data"]["k"] = json!(value);
    server.update(&gvr, stored).unwrap();
}

/// A queue of the controller's own, so that a test can tell when it has nothing left.
fn own_queue() -> WorkQueue<ObjectKey> {
    WorkQueue::builder().build()
}

/// Whether `queue` holds no key, delays none and works on none.
fn idle(queue: &WorkQueue<ObjectKey>) -> bool {
    queue.is_empty() && queue.delayed() == 0 && queue.processing() == 0
}

/// A controller reference to a widget `name` that need not exist: a sentinel's owner.
fn reference_to_widget(name: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "name": name,
           "uid": format!("uid-of-{name}"), "controller": true, "blockOwnerDeletion": true})
}

/// How a test shows that an event did not reconcile anything: a later event of the same
/// informer (a sentinel) that enqueues another key. The informer hands the handler its events
/// in order, and the one worker takes keys in order: once the sentinel's key was reconciled and
/// the queue is idle, whatever the earlier events enqueued was reconciled before it.
async fn after_sentinel(
    what: &str,
    queue: &WorkQueue<ObjectKey>,
    seen: &Seen,
    sentinel: &str,
    add: impl FnOnce(),
) {
    let before = count_key(seen, sentinel);
    add();
    eventually(what, DEADLINE, || count_key(seen, sentinel) > before && idle(queue)).await;
}

/// How many lines of `seen` are about `key`.
fn count_key(seen: &Seen, key: &str) -> usize {
    seen.lock().iter().filter(|l| l.split(' ').next() == Some(key)).count()
}

/// What the recording reconciles saw, one line each.
type Seen = Arc<Mutex<Vec<String>>>;

fn count(seen: &Seen, line: &str) -> usize {
    seen.lock().iter().filter(|l| *l == line).count()
}

/// A reconcile of widgets that records `key size`, or `key gone`.
fn recording_widgets(
    seen: &Seen,
) -> impl Fn(Request<DynamicObject>) -> std::future::Ready<Result<Action, ClientError>>
+ Send
+ Sync
+ 'static {
    let seen = Arc::clone(seen);
    move |request| {
        let line = match &request.object {
            Some(widget) => format!("{} {}", request.key, widget.data["spec"]["size"]),
            None => format!("{} gone", request.key),
        };
        seen.lock().push(line);
        std::future::ready(Ok(Action::Done))
    }
}

/// A controller running in its own task until [`finish`](Running::finish).
struct Running {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Result<ControllerReport, ControllerError>>,
}

impl Running {
    fn start(
        run: impl FnOnce(
            CancellationToken,
        ) -> std::pin::Pin<
            Box<dyn Future<Output = Result<ControllerReport, ControllerError>> + Send>,
        >,
    ) -> Self {
        let stop = CancellationToken::new();
        let task = tokio::spawn(run(stop.clone()));
        Self { stop, task }
    }

    /// [`finish`](Self::finish), when the report's counts do not matter.
    async fn stop(self) {
        drop(self.finish().await);
    }

    /// Stops the controller, and checks that its caches synced and it finished cleanly.
    async fn finish(self) -> ControllerReport {
        self.stop.cancel();
        let report = self.task.await.unwrap().unwrap();
        assert!(report.synced && report.is_clean(), "{report:?}");
        report
    }
}

// controller-runtime `pkg/builder/controller_test.go` "should Reconcile Owns objects"
// (`doReconcileTest`: create, and the reconcile request comes), for an unstructured `For`, on
// a CRD the API server serves only after the controller started (client-go's
// `TestDynamicSharedInformerFactory` for the informer underneath).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_controller_of_a_crd_installed_at_run_time_reconciles_adds_updates_and_deletes() {
    let server = ApiServer::start().await.unwrap();
    let client = our_client(&server);
    let factory = SharedInformerFactory::new(client.clone());
    let seen = Seen::default();
    let controller = Controller::for_resource(&factory, &widgets());
    assert!(format!("{controller:?}").contains("\"widgets.example.com\""), "{controller:?}");
    let reconcile = recording_widgets(&seen);
    let running = Running::start(move |stop| Box::pin(controller.run(reconcile, stop)));

    // Not served yet: the informer's list fails, and the controller, waiting for its cache,
    // reconciles nothing.
    eventually("the list of widgets to fail", DEADLINE, || {
        factory.health().iter().any(|i| i.resource == widget_gvr() && i.watch.last_error.is_some())
    })
    .await;
    assert!(seen.lock().is_empty(), "{:?}", seen.lock());
    client.create(None, &widget_crd(false)).await.unwrap();
    server.create(&widget_gvr(), widget("first", 1)).unwrap();
    eventually("the add is reconciled", DEADLINE, || count(&seen, "default/first 1") == 1).await;

    let mut first = server.get(&widget_gvr(), "default", "first").unwrap();
    first["spec"]["size"] = json!(2);
    server.update(&widget_gvr(), first).unwrap();
    eventually("the update is reconciled", DEADLINE, || count(&seen, "default/first 2") == 1).await;

    server.delete(&widget_gvr(), "default", "first").unwrap();
    eventually("the delete is reconciled", DEADLINE, || count(&seen, "default/first gone") == 1)
        .await;
    let report = running.finish().await;
    assert_eq!((report.succeeded, report.failed), (3, 0));
    factory.shutdown().await;
}

/// A dynamic widget controller whose reconcile creates the config map `NAME-child` with a
/// controller reference to its widget, through `Client::dynamic`; `own` adds the config maps
/// as owned, typed or dynamic. Then a child's changes reconcile its widget, and config maps
/// that do not name the widget as their controller do not.
async fn owned_config_maps_reconcile_their_widget(
    own: impl FnOnce(Controller<DynamicObject, Client>) -> Controller<DynamicObject, Client>,
) {
    let server = ApiServer::start().await.unwrap();
    let client = our_client(&server);
    client.create(None, &widget_crd(false)).await.unwrap();
    let owner = server.create(&widget_gvr(), widget("owner", 1)).unwrap();
    let factory = SharedInformerFactory::new(client.clone());
    let seen = Seen::default();
    let queue = own_queue();
    let controller = own(Controller::for_resource(&factory, &widgets()).queue(queue.clone()));
    let recorded = Arc::clone(&seen);
    let reconcile = move |request: Request<DynamicObject>| {
        let (client, seen) = (client.clone(), Arc::clone(&recorded));
        async move {
            seen.lock().push(request.key.to_string());
            let Some(widget) = request.object else { return Ok(Action::Done) };
            let name = widget.metadata.name.clone().unwrap_or_default();
            let mut child = DynamicObject::new(&format!("{name}-child"), &config_maps());
            child.metadata.namespace = widget.metadata.namespace.clone();
            let reference = controller_reference_to(&serde_json::to_value(&*widget).unwrap());
            child.metadata.owner_references =
                Some(vec![serde_json::from_value(reference).unwrap()]);
            child.data.insert("data".into(), json!({"k": "created"}));
            let config_maps = client.dynamic(&config_maps()).namespace("default");
            match config_maps.create(&child).await {
                Ok(_) => Ok(Action::Done),
                Err(error) if error.status().is_some_and(|s| s.reason == "AlreadyExists") => {
                    Ok(Action::Done)
                }
                Err(error) => Err(error),
            }
        }
    };
    let running = Running::start(move |stop| Box::pin(controller.run(reconcile, stop)));

    // The first reconcile creates the child; its add reconciles the widget again.
    eventually("the child's add reconciles its widget", DEADLINE, || {
        count(&seen, "default/owner") >= 2
    })
    .await;
    let child = server.get(&config_maps().gvr(), "default", "owner-child").unwrap();
    assert_eq!(child["metadata"]["ownerReferences"][0]["uid"], owner["metadata"]["uid"]);
    // Config maps of a widget `sentinel` (that does not exist) enqueue its key after whatever
    // the earlier config map events enqueued.
    let sentinel = |name: &str| {
        let cm = config_map(name, &json!([reference_to_widget("sentinel")]));
        let server = &server;
        move || drop(server.create(&config_maps().gvr(), cm).unwrap())
    };
    after_sentinel("the child's add settles", &queue, &seen, "default/sentinel", sentinel("s1"))
        .await;
    let before = count(&seen, "default/owner");
    touch_config_map(&server, "owner-child", "changed");
    // At least once: an update adds the owners of the old and the new state, and a worker
    // may take the key between the two adds.
    eventually("the child's update reconciles its widget", DEADLINE, || {
        count(&seen, "default/owner") > before
    })
    .await;
    after_sentinel("the child's update settles", &queue, &seen, "default/sentinel", sentinel("s2"))
        .await;
    let settled = count(&seen, "default/owner");

    // Not the controller reference, or one to another kind of the same name: not this
    // controller's children.
    let mut not_controller = controller_reference_to(&owner);
    not_controller["controller"] = json!(false);
    let mut other_kind = controller_reference_to(&owner);
    other_kind["kind"] = json!("Gadget");
    let unrelated = [("bystander", not_controller), ("stranger", other_kind)];
    for (name, reference) in unrelated {
        server.create(&config_maps().gvr(), config_map(name, &json!([reference]))).unwrap();
    }
    after_sentinel(
        "the other config maps settle",
        &queue,
        &seen,
        "default/sentinel",
        sentinel("s3"),
    )
    .await;
    assert_eq!(count(&seen, "default/owner"), settled, "{:?}", seen.lock());
    let keys = ["default/owner", "default/sentinel"];
    assert!(seen.lock().iter().all(|key| keys.contains(&key.as_str())), "{:?}", seen.lock());
    running.stop().await;
    factory.shutdown().await;
}

// controller-runtime `pkg/builder/controller_test.go` "should Reconcile Owns objects"
// (`doReconcileTest`: a child with the controller reference reconciles its owner), with an
// unstructured `For` and an unstructured `Owns`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_controller_owning_dynamic_children_reconciles_on_their_changes() {
    owned_config_maps_reconcile_their_widget(|c| c.owns_dynamic(&config_maps())).await;
}

// The same, with an unstructured `For` and a typed `Owns`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_controller_owning_typed_children_reconciles_on_their_changes() {
    owned_config_maps_reconcile_their_widget(Controller::owns::<ConfigMap>).await;
}

// The same, with a typed `For` (ConfigMap) and an unstructured `Owns` (widgets from a CRD the
// program has no type for).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_controller_owning_dynamic_children_reconciles_on_their_changes() {
    let server = ApiServer::start().await.unwrap();
    let client = our_client(&server);
    client.create(None, &widget_crd(false)).await.unwrap();
    let parent = server.create(&config_maps().gvr(), config_map("parent", &json!([]))).unwrap();
    let factory = SharedInformerFactory::new(client);
    let seen = Seen::default();
    let recorded = Arc::clone(&seen);
    let queue = own_queue();
    let controller =
        Controller::<ConfigMap, _>::new(&factory).queue(queue.clone()).owns_dynamic(&widgets());
    let reconcile = move |request: Request<ConfigMap>| {
        recorded.lock().push(request.key.to_string());
        std::future::ready(Ok::<_, ClientError>(Action::Done))
    };
    let running = Running::start(move |stop| Box::pin(controller.run(reconcile, stop)));
    eventually("the parent's add is reconciled", DEADLINE, || count(&seen, "default/parent") == 1)
        .await;

    let mut kid = widget("kid", 1);
    kid["metadata"]["ownerReferences"] = json!([controller_reference_to(&parent)]);
    server.create(&widget_gvr(), kid).unwrap();
    eventually("the widget's add reconciles its config map", DEADLINE, || {
        count(&seen, "default/parent") == 2
    })
    .await;
    // An update adds the owners of the old and the new state: reconciled once or twice.
    let mut kid = server.get(&widget_gvr(), "default", "kid").unwrap();
    kid["spec"]["size"] = json!(2);
    server.update(&widget_gvr(), kid).unwrap();
    eventually("the widget's update reconciles its config map", DEADLINE, || {
        count(&seen, "default/parent") >= 3
    })
    .await;
    // A widget controlled by a config map `sentinel` (that does not exist) enqueues its key
    // after whatever the update enqueued.
    let mut marker = widget("marker", 1);
    marker["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "sentinel", "uid": "uid-of-sentinel",
        "controller": true,
    }]);
    after_sentinel("the update settles", &queue, &seen, "default/sentinel", || {
        drop(server.create(&widget_gvr(), marker).unwrap());
    })
    .await;
    let before = count(&seen, "default/parent");
    server.delete(&widget_gvr(), "default", "kid").unwrap();
    eventually("the widget's delete reconciles its config map", DEADLINE, || {
        count(&seen, "default/parent") == before + 1
    })
    .await;
    let keys = ["default/parent", "default/sentinel"];
    assert!(seen.lock().iter().all(|key| keys.contains(&key.as_str())), "{:?}", seen.lock());
    running.stop().await;
    factory.shutdown().await;
}

// controller-runtime `pkg/builder/controller_test.go` "should Reconcile Watches objects"
// (`Watches` with `EnqueueRequestsFromMapFunc`), for an unstructured watched resource: a
// widget names in `spec.configMap` the config map it concerns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_controller_watching_a_dynamic_resource_reconciles_the_keys_it_maps_to() {
    let server = ApiServer::start().await.unwrap();
    let client = our_client(&server);
    client.create(None, &widget_crd(false)).await.unwrap();
    server.create(&config_maps().gvr(), config_map("target", &json!([]))).unwrap();
    let factory = SharedInformerFactory::new(client);
    let seen = Seen::default();
    let recorded = Arc::clone(&seen);
    let queue = own_queue();
    let controller = Controller::<ConfigMap, _>::new(&factory)
        .queue(queue.clone())
        .watches_dynamic(&widgets(), |w: &DynamicObject| {
            let name = w.data.get("spec")?.get("configMap")?.as_str()?;
            Some(ObjectKey::new(w.metadata.namespace.as_deref(), name))
        });
    let reconcile = move |request: Request<ConfigMap>| {
        recorded.lock().push(request.key.to_string());
        std::future::ready(Ok::<_, ClientError>(Action::Done))
    };
    let running = Running::start(move |stop| Box::pin(controller.run(reconcile, stop)));
    eventually("the config map's add is reconciled", DEADLINE, || {
        count(&seen, "default/target") == 1
    })
    .await;

    let mut pointing = widget("pointing", 1);
    pointing["spec"]["configMap"] = json!("target");
    server.create(&widget_gvr(), pointing).unwrap();
    eventually("the widget's add reconciles what it names", DEADLINE, || {
        count(&seen, "default/target") == 2
    })
    .await;
    // A widget that names nothing maps to no key.
    server.create(&widget_gvr(), widget("silent", 1)).unwrap();
    let mut marker = widget("marker", 1);
    marker["spec"]["configMap"] = json!("sentinel");
    after_sentinel("the silent widget settles", &queue, &seen, "default/sentinel", || {
        drop(server.create(&widget_gvr(), marker).unwrap());
    })
    .await;
    assert_eq!(count(&seen, "default/target"), 2, "{:?}", seen.lock());
    running.stop().await;
    factory.shutdown().await;
}

/// `status.size` of the widget `default/name` on the server.
fn status_size(server: &ApiServer, name: &str) -> Option<i64> {
    server.get(&widget_gvr(), "default", name)?.get("status")?.get("size")?.as_i64()
}

// controller-runtime `pkg/predicate/predicate_test.go` "When checking a
// GenerationChangedPredicate" behind `For(obj, WithPredicates(...))`, on unstructured
// objects: the reconcile's own status write (the `/status` subresource, through
// `Client::dynamic`) bumps no generation and does not come back, nor does a label change; a
// spec change does, and the status converges on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filtered_dynamic_controller_writes_status_through_client_dynamic_and_converges() {
    let server = ApiServer::start().await.unwrap();
    let client = our_client(&server);
    client.create(None, &widget_crd(true)).await.unwrap();
    server.create(&widget_gvr(), widget("w", 1)).unwrap();
    let factory = SharedInformerFactory::new(client.clone());
    let seen = Seen::default();
    let recorded = Arc::clone(&seen);
    let queue = own_queue();
    let controller = Controller::for_resource(&factory, &widgets())
        .queue(queue.clone())
        .filter(GenerationChanged);
    let reconcile = move |request: Request<DynamicObject>| {
        let (client, seen) = (client.clone(), Arc::clone(&recorded));
        async move {
            let Some(widget) = request.object else { return Ok(Action::Done) };
            let size = widget.data["spec"]["size"].clone();
            seen.lock().push(format!("{} {size}", request.key));
            if widget.data.get("status").and_then(|s| s.get("size")) == Some(&size) {
                return Ok(Action::Done);
            }
            let name = widget.metadata.name.as_deref().unwrap_or_default();
            let status = json!({"status": {"size": size}});
            let widgets = client.dynamic(&widgets()).namespace("default");
            widgets.patch_status(name, &Patch::Merge(&status), &PatchParams::default()).await?;
            Ok::<_, ClientError>(Action::Done)
        }
    };
    let running = Running::start(move |stop| Box::pin(controller.run(reconcile, stop)));

    eventually("the status says size 1", DEADLINE, || status_size(&server, "w") == Some(1)).await;
    // A new widget passes the filter, and is reconciled after whatever w's writes enqueued.
    let w_lines =
        || seen.lock().iter().filter(|l| l.starts_with("default/w ")).cloned().collect::<Vec<_>>();
    after_sentinel("w's status write settles", &queue, &seen, "default/mark-1", || {
        drop(server.create(&widget_gvr(), widget("mark-1", 1)).unwrap());
    })
    .await;
    assert_eq!(w_lines(), ["default/w 1"], "the status write does not come back");

    let mut labelled = server.get(&widget_gvr(), "default", "w").unwrap();
    labelled["metadata"]["labels"] = json!({"tier": "edge"});
    server.update(&widget_gvr(), labelled).unwrap();
    let mut bigger = server.get(&widget_gvr(), "default", "w").unwrap();
    bigger["spec"]["size"] = json!(2);
    server.update(&widget_gvr(), bigger).unwrap();
    eventually("the status says size 2", DEADLINE, || status_size(&server, "w") == Some(2)).await;
    after_sentinel("w's changes settle", &queue, &seen, "default/mark-2", || {
        drop(server.create(&widget_gvr(), widget("mark-2", 1)).unwrap());
    })
    .await;
    assert_eq!(w_lines(), ["default/w 1", "default/w 2"], "the label change is filtered out");
    running.stop().await;
    factory.shutdown().await;
}

/// A dynamic widget controller without a filter whose reconcile writes `status.size` through
/// `writer`'s JSON patch, guarded by a `test` of the resource version: its own write comes
/// back once, finds the status right, and writes nothing more.
async fn a_dynamic_controller_writes_through_json_patch_and_converges(
    writer: Arc<dyn ApiWriter>,
    server: &ApiServer,
) {
    let client = our_client(server);
    client.create(None, &widget_crd(false)).await.unwrap();
    server.create(&widget_gvr(), widget("w", 3)).unwrap();
    let factory = SharedInformerFactory::new(client);
    let seen = Seen::default();
    let recorded = Arc::clone(&seen);
    let queue = own_queue();
    let controller = Controller::for_resource(&factory, &widgets()).queue(queue.clone());
    let reconcile = move |request: Request<DynamicObject>| {
        let (writer, seen) = (Arc::clone(&writer), Arc::clone(&recorded));
        async move {
            let Some(widget) = request.object else { return Ok(Action::Done) };
            let size = widget.data["spec"]["size"].clone();
            let status = widget.data.get("status").and_then(|s| s.get("size")).cloned();
            seen.lock().push(format!("{} {size} {}", request.key, status.unwrap_or_default()));
            if widget.data.get("status").and_then(|s| s.get("size")) == Some(&size) {
                return Ok(Action::Done);
            }
            let version = widget.metadata.resource_version.clone().unwrap_or_default();
            let patch = json!([
                {"op": "test", "path": "/metadata/resourceVersion", "value": version},
                {"op": "add", "path": "/status", "value": {"size": size}},
            ]);
            let name = widget.metadata.name.as_deref().unwrap_or_default();
            writer.json_patch(&widgets(), Some("default"), name, &patch).await?;
            Ok::<_, informer_controller::WriteError>(Action::Done)
        }
    };
    let running = Running::start(move |stop| Box::pin(controller.run(reconcile, stop)));

    eventually("the status says size 3", DEADLINE, || status_size(server, "w") == Some(3)).await;
    eventually("the controller's own write is reconciled", DEADLINE, || seen.lock().len() == 2)
        .await;
    // The marker's own write comes back too: two reconciles, after whatever w's enqueued.
    server.create(&widget_gvr(), widget("marker", 3)).unwrap();
    eventually("the marker converges, and nothing else waits", DEADLINE, || {
        count_key(&seen, "default/marker") == 2 && idle(&queue)
    })
    .await;
    let w_lines: Vec<String> =
        seen.lock().iter().filter(|l| l.starts_with("default/w ")).cloned().collect();
    assert_eq!(w_lines, ["default/w 3 null", "default/w 3 3"], "converged");
    let report = running.finish().await;
    assert_eq!((report.succeeded, report.failed), (4, 0));
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_controller_writes_through_our_clients_json_patch_and_converges() {
    let server = ApiServer::start().await.unwrap();
    let writer = Arc::new(our_client(&server));
    a_dynamic_controller_writes_through_json_patch_and_converges(writer, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_controller_writes_through_a_kube_clients_json_patch_and_converges() {
    let server = ApiServer::start().await.unwrap();
    let writer = Arc::new(kube_client(&server).await);
    a_dynamic_controller_writes_through_json_patch_and_converges(writer, &server).await;
}

// No anchor: kube-rs's `new_with` cannot fail this way (its `Api` is always dynamic-capable).
// A factory over a source that lists only Rust types has no dynamic informer: `run` says so,
// naming the resource, before it waits for anything.
#[tokio::test]
async fn a_dynamic_controller_on_a_source_without_dynamic_informers_fails_to_run() {
    let factory = SharedInformerFactory::new(informer_runtime::testing::FakeSource::new());
    for controller in [
        Controller::for_resource(&factory, &widgets()),
        Controller::for_resource(&factory, &config_maps()).owns::<ConfigMap>(),
    ] {
        let run = controller.run(recording_widgets(&Seen::default()), CancellationToken::new());
        let error = tokio::time::timeout(DEADLINE, run).await.unwrap().unwrap_err();
        assert!(matches!(error, ControllerError::Informer { .. }), "{error:?}");
    }
    let typed = Controller::<ConfigMap, _>::new(&factory).watches_dynamic(&widgets(), |_| None);
    let reconcile = |_: Request<ConfigMap>| async { Ok::<_, ClientError>(Action::Done) };
    let error = typed.run(reconcile, CancellationToken::new()).await.unwrap_err();
    let message = error.to_string();
    assert!(message.starts_with("controller configmaps: no dynamic informer for"), "{message}");
    assert!(message.contains("widgets"), "{message}");
}

// controller-runtime `pkg/predicate/predicate_test.go` (the `GenerationChangedPredicate`,
// `ResourceVersionChangedPredicate`, `LabelChangedPredicate` and `AnnotationChangedPredicate`
// cases), on unstructured objects: every filter reads `DynamicObject`'s typed metadata, and
// `Changed` and `Matching` its JSON.
#[test]
fn every_filter_reads_dynamic_objects() {
    use informer_controller::filter::{
        And, AnnotationsChanged, Changed, Filter, LabelsChanged, Matching, Not,
        ResourceVersionChanged,
    };

    let object = |generation: i64, version: &str, size: i64| {
        let mut w = DynamicObject::new("w", &widgets());
        w.metadata.generation = Some(generation);
        w.metadata.resource_version = Some(version.into());
        w.data.insert("spec".into(), json!({"size": size}));
        w
    };
    let (old, same) = (object(1, "10", 1), object(1, "10", 1));
    let (status_write, spec_change) = (object(1, "11", 1), object(2, "12", 2));
    assert!(!GenerationChanged.update(&old, &status_write));
    assert!(GenerationChanged.update(&old, &spec_change));
    assert!(!ResourceVersionChanged.update(&old, &same));
    assert!(ResourceVersionChanged.update(&old, &status_write));
    let mut labelled = status_write.clone();
    labelled.metadata.labels = Some([("tier".to_owned(), "edge".to_owned())].into());
    assert!(LabelsChanged.update(&old, &labelled));
    assert!(!AnnotationsChanged.update(&old, &labelled));
    let size = Changed(|w: &DynamicObject| w.data["spec"]["size"].clone());
    assert!(!size.update(&old, &status_write));
    assert!(size.update(&old, &spec_change));
    let big = Matching(|w: &DynamicObject| w.data["spec"]["size"].as_i64() > Some(1));
    assert!(!big.add(&old) && big.add(&spec_change));
    assert!(And(GenerationChanged, Not(big)).update(&spec_change, &old));
}
