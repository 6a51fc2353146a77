//! The example controller (`examples/controller`: a manager with warm standby behind a Lease,
//! the finalizer helper, owner references, status conditions, event filters) against a real
//! kube-apiserver and etcd (`tests/kube-apiserver/`): a set is put in place, changed, its
//! leader killed, and deleted through its finalizer, and the world converges each time as the
//! embedded server's test (`examples/controller/tests/converges.rs`) says it does there.
//!
//! The real server is shared with the other tests of the process, so everything here is named
//! for this run: its namespaces, its sets, its Lease's namespace. Without Go this test prints
//! one line and passes (see `informer_tests::kube_apiserver`).

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "in a test, a failed expect is a failed assertion"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use example_controller::{ConfigMapSet, ConfigMapSetSpec, Settings, difference};
use informer_client::{Client, ClientError, DynamicApi, Patch, PatchParams};
use informer_controller::controller::{Action, Controller, Request};
use informer_controller::filter::GenerationChanged;
use informer_controller::leader_election::Leadership;
use informer_controller::owner_references::{self, DynamicOwner};
use informer_runtime::dynamic::DynamicObject;
use informer_runtime::listwatch::ListOptions;
use informer_runtime::resource::ApiResource;
use informer_runtime::{GroupVersionResource, SharedInformerFactory};
use informer_tests::kube_apiserver::KubeApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long any convergence may take: the real server is slower than the embedded one.
const DEADLINE: Duration = Duration::from_secs(90);

fn named(name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() }
}

/// The sets of this run (those named `prefix-...`), every config map and every namespace, as
/// the server has them; and where they differ from what the sets ask for.
async fn converged(client: &Client, prefix: &str) -> Result<(), String> {
    let all = ListOptions::default();
    let sets: Vec<ConfigMapSet> = objects(client.list_all(None, &all, 10_000).await)?
        .into_iter()
        .filter(|s: &ConfigMapSet| {
            s.metadata.name.as_deref().is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    let configmaps: Vec<ConfigMap> = objects(client.list_all(None, &all, 100_000).await)?;
    let namespaces: Vec<Namespace> = objects(client.list_all(None, &all, 10_000).await)?;
    difference(&sets, &configmaps, &namespaces).map_or(Ok(()), Err)
}

/// The objects of a list, owned.
fn objects<K: Clone>(
    list: Result<informer_runtime::listwatch::ObjectList<K>, informer_client::ClientError>,
) -> Result<Vec<K>, String> {
    let list = list.map_err(|e| e.to_string())?;
    Ok(list.items.iter().map(|o| (**o).clone()).collect())
}

async fn converge(client: &Client, prefix: &str, what: &str) {
    let start = tokio::time::Instant::now();
    loop {
        match converged(client, prefix).await {
            Ok(()) => return,
            Err(left) => assert!(
                start.elapsed() < DEADLINE,
                "not converged to {what} within {DEADLINE:?}: {left}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

struct Replica {
    stop: CancellationToken,
    task: JoinHandle<Leadership>,
}

fn replica(client: &Client, identity: &str, lease_namespace: &str) -> Replica {
    let mut settings = Settings::new(identity);
    lease_namespace.clone_into(&mut settings.lease_namespace);
    settings.lease = (Duration::from_secs(3), Duration::from_secs(2), Duration::from_millis(250));
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (client, stop) = (client.clone(), stop.clone());
        async move { example_controller::run(client, settings, stop).await.expect("it runs") }
    });
    Replica { stop, task }
}

/// The holder of the run's Lease.
async fn leader(client: &Client, namespace: &str) -> Option<String> {
    let lease: k8s_openapi::api::coordination::v1::Lease =
        client.get(Some(namespace), example_controller::CONTROLLER).await.ok()?;
    lease.spec?.holder_identity
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_controller_converges_on_kube_apiserver() {
    let Some(server) =
        tokio::task::spawn_blocking(KubeApiServer::shared).await.expect("the harness thread")
    else {
        return;
    };
    let client = server.client("cert");
    let run = format!("ex{:06x}", fastrand::u32(..0x100_0000));
    match client.create(None, &ConfigMapSet::crd()).await {
        Err(e) if e.is_conflict() || e.status().is_some_and(|s| s.reason == "AlreadyExists") => {}
        other => drop(other.expect("the CRD is created")),
    }
    let (shop, blog, missing) =
        (format!("{run}-shop"), format!("{run}-blog"), format!("{run}-later"));
    for ns in [&shop, &blog] {
        let namespace = Namespace { metadata: named(ns), ..Namespace::default() };
        client.create(None, &namespace).await.expect("the namespace is created");
    }
    // The CRD is served a moment after it is created.
    let start = tokio::time::Instant::now();
    while client.list::<ConfigMapSet>(None, &ListOptions::default()).await.is_err() {
        assert!(start.elapsed() < DEADLINE, "the CRD is not served");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let replicas = [replica(&client, "replica-a", &shop), replica(&client, "replica-b", &shop)];

    let name = format!("{run}-web");
    let spec = ConfigMapSetSpec {
        namespaces: vec![shop.clone(), blog.clone(), missing],
        data: [("mode".to_owned(), "fast".to_owned())].into(),
    };
    let set = ConfigMapSet { metadata: named(&name), spec, status: None };
    client.create(None, &set).await.expect("the set is created");
    converge(&client, &run, "the set in place (one namespace missing)").await;
    let stored: ConfigMapSet = client.get(None, &name).await.unwrap();
    let ready =
        stored.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"));
    assert_eq!(
        ready.map(|c| (c.status.as_str(), c.reason.as_str())),
        Some(("False", "NamespaceMissing"))
    );
    assert_eq!(
        stored.metadata.finalizers.as_deref(),
        Some(&[example_controller::FINALIZER.to_owned()][..])
    );

    let mut changed = stored.clone();
    changed.spec.data.insert("mode".to_owned(), "slow".to_owned());
    changed.spec.namespaces.retain(|ns| *ns != blog);
    client.replace(None, &name, &changed).await.expect("the set is changed");
    converge(&client, &run, "the changed set").await;

    // The leader dies without releasing its Lease; the standby takes over.
    let holder = leader(&client, &shop).await.expect("a leader");
    let [a, b] = replicas;
    let (killed, survivor) = if holder == "replica-a" { (a, b) } else { (b, a) };
    killed.task.abort();
    let _ = killed.task.await;
    client.delete::<ConfigMapSet>(None, &name).await.expect("the set is deleted");
    let start = tokio::time::Instant::now();
    loop {
        let gone = client.get::<ConfigMapSet>(None, &name).await.is_err_and(|e| e.is_not_found());
        let owned = client
            .list_all::<ConfigMap>(Some(&shop), &ListOptions::default(), 10_000)
            .await
            .unwrap()
            .items
            .iter()
            .filter(|cm| cm.metadata.name.as_deref() == Some(name.as_str()))
            .count();
        if gone && owned == 0 {
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "the new leader did not clean up and release the set: gone {gone}, {owned} config maps left"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_ne!(leader(&client, &shop).await.as_deref(), Some(holder.as_str()), "leadership moved");
    survivor.stop.cancel();
    let outcome = tokio::time::timeout(DEADLINE, survivor.task).await.unwrap().unwrap();
    assert_eq!(outcome, Leadership::Released);
}

/// A namespaced CRD `gizmos.<group>` with a status subresource, its objects free-form.
fn gizmo_crd(group: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gizmos.{group}")},
        "spec": {
            "group": group,
            "names": {"kind": "Gizmo", "plural": "gizmos", "singular": "gizmo", "listKind": "GizmoList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    })
}

/// The gizmo controller's reconcile: a config map it controls, with the gizmo's size, applied;
/// then the size in the gizmo's status.
async fn reconcile_gizmo(
    client: Client,
    gizmos: ApiResource,
    gizmo: Option<Arc<DynamicObject>>,
) -> Result<Action, ClientError> {
    let Some(gizmo) = gizmo else { return Ok(Action::Done) };
    let (name, ns) =
        (gizmo.metadata.name.clone().unwrap_or_default(), gizmo.metadata.namespace.clone());
    let size = gizmo.data["spec"]["size"].clone();
    let mut config = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: ns.clone(),
            ..ObjectMeta::default()
        },
        data: Some([("size".to_owned(), size.to_string())].into()),
        ..ConfigMap::default()
    };
    owner_references::set_controller_reference(&DynamicOwner::new(&gizmo, &gizmos), &mut config)
        .expect("the gizmo is stored");
    let params = PatchParams::apply("gizmo-controller").force();
    client.patch::<ConfigMap, _>(ns.as_deref(), &name, &Patch::Apply(&config), &params).await?;
    let status = serde_json::json!({"status": {"size": size}});
    let api = client.dynamic(&gizmos).namespace(ns.unwrap_or_default());
    api.patch_status(&name, &Patch::Merge(&status), &PatchParams::default()).await?;
    Ok(Action::Done)
}

/// Waits until the gizmo `g1` has `want` in its status and its config map; returns it.
async fn gizmo_converged(api: &DynamicApi, client: &Client, ns: &str, want: i64) -> DynamicObject {
    let start = tokio::time::Instant::now();
    loop {
        let gizmo = api.get("g1").await.unwrap();
        let config: Result<ConfigMap, _> = client.get(Some(ns), "g1").await;
        let status = gizmo
            .data
            .get("status")
            .and_then(|s| s.get("size"))
            .and_then(serde_json::Value::as_i64);
        let data = config.ok().and_then(|c| c.data).and_then(|d| d.get("size").cloned());
        if status == Some(want) && data == Some(want.to_string()) {
            return gizmo;
        }
        assert!(start.elapsed() < DEADLINE, "size {want}: status {status:?}, config map {data:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// A controller of a resource the program learns at run time, on the real server: a CRD
// installed while the test runs, found by discovery; its reconcile makes a config map it
// controls (`DynamicOwner`) and writes the gizmo's status through `Client::dynamic`, behind
// `GenerationChanged`; a spec change converges again, and a change to the config map brings
// the gizmo back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_controller_converges_on_kube_apiserver() {
    let Some(server) =
        tokio::task::spawn_blocking(KubeApiServer::shared).await.expect("the harness thread")
    else {
        return;
    };
    let client = server.client("cert");
    let run = format!("dy{:06x}", fastrand::u32(..0x100_0000));
    let group = format!("{run}.example.com");
    let crd: CustomResourceDefinition = serde_json::from_value(gizmo_crd(&group)).unwrap();
    client.create(None, &crd).await.expect("the CRD is created");
    let namespace = Namespace { metadata: named(&run), ..Namespace::default() };
    client.create(None, &namespace).await.expect("the namespace is created");
    let gvr = GroupVersionResource::new(&group, "v1", "gizmos");
    let start = tokio::time::Instant::now();
    let gizmos = loop {
        match client.discover(&gvr).await {
            Ok(resource) => break resource,
            Err(e) => assert!(start.elapsed() < DEADLINE, "gizmos are not served: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    let factory = SharedInformerFactory::new(client.clone());
    let reconciles = Arc::new(AtomicUsize::new(0));
    let controller =
        Controller::for_resource(&factory, &gizmos).filter(GenerationChanged).owns::<ConfigMap>();
    let reconcile = {
        let (client, gizmos, reconciles) =
            (client.clone(), gizmos.clone(), Arc::clone(&reconciles));
        move |request: Request<DynamicObject>| {
            reconciles.fetch_add(1, Ordering::SeqCst);
            reconcile_gizmo(client.clone(), gizmos.clone(), request.object)
        }
    };
    let stop = CancellationToken::new();
    let running = tokio::spawn(controller.run(reconcile, stop.clone()));

    let api = client.dynamic(&gizmos).namespace(&run);
    let mut gizmo = DynamicObject::new("g1", &gizmos);
    gizmo.metadata.namespace = Some(run.clone());
    gizmo.data.insert("spec".into(), serde_json::json!({"size": 3}));
    api.create(&gizmo).await.expect("the gizmo is created");
    let mut stored = gizmo_converged(&api, &client, &run, 3).await;
    stored.data.insert("spec".into(), serde_json::json!({"size": 5}));
    api.replace("g1", &stored).await.expect("the gizmo is changed");
    gizmo_converged(&api, &client, &run, 5).await;

    // The config map changed behind the controller's back: its owner is reconciled, and the
    // config map put back.
    let mut config: ConfigMap = client.get(Some(&run), "g1").await.unwrap();
    config.data = Some([("size".to_owned(), "0".to_owned())].into());
    client.replace(Some(&run), "g1", &config).await.expect("the config map is changed");
    gizmo_converged(&api, &client, &run, 5).await;
    assert!(reconciles.load(Ordering::SeqCst) >= 3, "an add, an update, a child's change");
    stop.cancel();
    let report = tokio::time::timeout(DEADLINE, running).await.unwrap().unwrap().unwrap();
    assert_eq!(report.failed, 0, "{report:?}");
    factory.shutdown().await;
}
