//! A kube-rs program adds informers in a few lines: its `kube::Client`, built as kube-rs builds
//! one (a `kube::Config` from a kubeconfig, then `kube::Client::try_from`), carries the factory's
//! requests (`SharedInformerFactory::new(Client::from(kube_client))`). Against the embedded API
//! server: a Pod informer and one of a kube-derive `#[derive(CustomResource)]` type sync, their handlers see
//! adds, updates and deletes, listers answer, a compacted history (410) makes them relist, a
//! resource that is not served is explained, and typed requests go over the same client. Our
//! `Client` is also built from the program's `kube::Config`.
//!
//! `kube::Client::try_default()` reads `KUBECONFIG`; these tests build the `kube::Config` from
//! the server's kubeconfig text instead (`kube::Config::from_custom_kubeconfig`), which is what
//! `try_default` does with the file, without touching the process's environment.

#![allow(clippy::expect_used, reason = "in a test, a failed expect is a failed assertion")]

use std::sync::Arc;
use std::time::Duration;

use embedded_apiserver::ApiServer;
use informer_client::Client;
use informer_runtime::listwatch::ListOptions;
use informer_runtime::{
    GroupVersionResource, HandlerFuncs, LabelSelector, SharedInformerFactory, impl_resource,
};
use informer_tests::eventually;
use informer_tests::kube_program::KubeProgram;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const DEADLINE: Duration = Duration::from_secs(30);

/// A kube-rs custom resource, as a kube-rs program declares it.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    /// How many.
    pub size: i32,
}

/// One whose CRD is never installed.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Gadget", namespaced)]
pub struct GadgetSpec {
    /// Anything.
    pub size: i32,
}

impl_resource!(
    Widget,
    group = "example.com",
    version = "v1",
    kind = "Widget",
    plural = "widgets",
    namespaced
);
impl_resource!(
    Gadget,
    group = "example.com",
    version = "v1",
    kind = "Gadget",
    plural = "gadgets",
    namespaced
);

/// The `kube::Config` a kube-rs program reading `server`'s kubeconfig gets.
async fn kube_config(server: &ApiServer) -> kube::Config {
    let kubeconfig = Kubeconfig::from_yaml(&server.kubeconfig_yaml()).expect("a kubeconfig");
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a kube config")
}

fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            labels: Some([("app".to_owned(), "shop".to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".to_owned(),
                image: Some("busybox".to_owned()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// A CRD as `kubectl apply` sends it: no status, no server-set metadata.
fn as_applied(crd: CustomResourceDefinition) -> CustomResourceDefinition {
    CustomResourceDefinition {
        metadata: ObjectMeta { name: crd.metadata.name, ..ObjectMeta::default() },
        spec: crd.spec,
        status: None,
    }
}

/// Installs the Widget CRD as a kube-rs program does; the widgets of `default`.
async fn install_widgets(kube_client: &kube::Client) -> Api<Widget> {
    let crds: Api<CustomResourceDefinition> = Api::all(kube_client.clone());
    crds.create(&PostParams::default(), &as_applied(Widget::crd())).await.expect("the CRD");
    Api::default_namespaced(kube_client.clone())
}

/// What handlers saw, as `add NAME`, `update NAME`, `delete NAME` lines.
type Seen = Arc<Mutex<Vec<String>>>;

fn recorder<K: informer_runtime::Resource>(seen: &Seen) -> HandlerFuncs<K> {
    let (adds, updates, deletes) = (Arc::clone(seen), Arc::clone(seen), Arc::clone(seen));
    let name = |o: &K| o.meta().name.clone().unwrap_or_default();
    HandlerFuncs::new()
        .on_add(move |o: Arc<K>, _| adds.lock().push(format!("add {}", name(&o))))
        .on_update(move |_, o: Arc<K>| updates.lock().push(format!("update {}", name(&o))))
        .on_delete(move |o| {
            let key = o.key().to_string();
            deletes.lock().push(format!("delete {}", key.rsplit('/').next().unwrap_or_default()));
        })
}

fn saw(seen: &Seen, line: &str) -> bool {
    seen.lock().iter().any(|l| l == line)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kube_rs_program_runs_informers_over_its_kube_client() {
    let server = ApiServer::start().await.expect("server starts");
    let kube_client = kube::Client::try_from(kube_config(&server).await).expect("a kube client");

    // The program's own kube-rs calls: its CRD and a first widget.
    let widgets = install_widgets(&kube_client).await;
    widgets
        .create(&PostParams::default(), &Widget::new("w1", WidgetSpec { size: 1 }))
        .await
        .expect("w1 is created");
    // Typed requests of our client over the same kube-rs client.
    let client = Client::from(kube_client.clone());
    client.create(Some("default"), &pod("p1")).await.expect("p1 is created");

    // The few lines the issue asks for.
    let factory = SharedInformerFactory::new(Client::from(kube_client.clone()));
    let (pods_seen, widgets_seen) = (Seen::default(), Seen::default());
    factory.informer::<Pod>().add_event_handler(recorder(&pods_seen)).expect("a pod handler");
    factory
        .informer::<Widget>()
        .add_event_handler(recorder(&widgets_seen))
        .expect("a widget handler");
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    let pods = factory.lister::<Pod>();
    let widget_lister = factory.lister::<Widget>();
    assert!(pods.namespace("default").get("p1").is_ok());
    assert_eq!(widget_lister.namespace("default").get("w1").expect("cached").spec.size, 1);
    // Handlers are told after the cache is written: their first adds may still be on the way.
    eventually("the handlers see the listed objects", DEADLINE, || {
        saw(&pods_seen, "add p1") && saw(&widgets_seen, "add w1")
    })
    .await;

    // Adds, updates and deletes, through kube-rs and through our client.
    widgets
        .create(&PostParams::default(), &Widget::new("w2", WidgetSpec { size: 2 }))
        .await
        .expect("w2 is created");
    widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"size": 10}})),
        )
        .await
        .expect("w1 is patched");
    widgets.delete("w2", &DeleteParams::default()).await.expect("w2 is deleted");
    client.create(Some("default"), &pod("p2")).await.expect("p2 is created");
    let labels = serde_json::json!({"metadata": {"labels": {"tier": "edge"}}});
    let patched: Pod =
        client.patch_merge(Some("default"), "p1", &labels).await.expect("p1 is patched");
    assert_eq!(patched.labels().get("tier").map(String::as_str), Some("edge"));
    client.delete::<Pod>(Some("default"), "p2").await.expect("p2 is deleted");
    eventually("the widget handler to see w2 come and go and w1 change", DEADLINE, || {
        ["add w2", "update w1", "delete w2"].iter().all(|line| saw(&widgets_seen, line))
    })
    .await;
    eventually("the pod handler to see p2 come and go and p1 change", DEADLINE, || {
        ["add p2", "update p1", "delete p2"].iter().all(|line| saw(&pods_seen, line))
    })
    .await;
    assert_eq!(widget_lister.namespace("default").get("w1").expect("cached").spec.size, 10);
    assert!(widget_lister.namespace("default").get("w2").is_err());
    let edge = LabelSelector::parse("tier=edge").expect("a selector");
    assert_eq!(pods.list(&edge).len(), 1);

    // History compacted while the watches were silent: they resume at a version the server no
    // longer has (410), and the informers list again to catch up.
    server.stall_watches();
    let gvr = GroupVersionResource::new("example.com", "v1", "widgets");
    server.delete(&gvr, "default", "w1").expect("w1 is deleted");
    widgets
        .create(&PostParams::default(), &Widget::new("w3", WidgetSpec { size: 3 }))
        .await
        .expect("w3 is created");
    client.create(Some("default"), &pod("p3")).await.expect("p3 is created");
    server.compact();
    server.drop_watches();
    eventually("the informers to relist after 410", DEADLINE, || {
        widget_lister.namespace("default").get("w3").is_ok()
            && widget_lister.namespace("default").get("w1").is_err()
            && pods.namespace("default").get("p3").is_ok()
    })
    .await;
    eventually("the widget handler to see the relist's delete", DEADLINE, || {
        saw(&widgets_seen, "delete w1") && saw(&widgets_seen, "add w3")
    })
    .await;

    factory.shutdown().await;
    server.shutdown().await.expect("a clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_over_a_kube_client_are_the_same_as_over_our_own() {
    let server = ApiServer::start().await.expect("server starts");
    let kube_client = kube::Client::try_from(kube_config(&server).await).expect("a kube client");
    let client = Client::from(kube_client);
    assert_eq!(client.default_namespace(), "default");

    // kube-rs answers a 404 as a response: it is our typed status.
    let missing = client.get::<Pod>(Some("default"), "missing").await.expect_err("no such pod");
    assert!(missing.is_not_found(), "{missing}");
    client.create(Some("default"), &pod("p1")).await.expect("p1 is created");
    let again = client.create(Some("default"), &pod("p1")).await.expect_err("p1 exists");
    assert!(again.is_conflict(), "{again}");

    // A resource that is not served: explained from discovery, over kube-rs too.
    let gadgets = client.lister_watcher::<Gadget>(Some("default"));
    let error = gadgets.list(&ListOptions::default()).await.expect_err("gadgets are not served");
    let message = error.to_string();
    assert!(message.contains("gadgets.example.com (example.com/v1) is not served"), "{message}");
    assert!(message.contains("install the CustomResourceDefinition"), "{message}");

    // Lists page as over our own client: the continue token, then the rest.
    for name in ["p2", "p3"] {
        client.create(Some("default"), &pod(name)).await.expect("a pod is created");
    }
    let pods = client.lister_watcher::<Pod>(Some("default"));
    let first = pods
        .list(&ListOptions { limit: Some(2), ..ListOptions::default() })
        .await
        .expect("a first page");
    assert_eq!(first.items.len(), 2);
    let token = first.continue_token.expect("a continue token");
    let rest = pods
        .list(&ListOptions {
            limit: Some(2),
            continue_token: Some(token),
            ..ListOptions::default()
        })
        .await
        .expect("the next page");
    assert_eq!(rest.items.len(), 1);
    assert!(rest.continue_token.is_none());

    server.shutdown().await.expect("a clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_is_built_from_the_programs_kube_config() {
    let server = ApiServer::start().await.expect("server starts");
    let config = kube_config(&server).await;
    let kube_client = kube::Client::try_from(config.clone()).expect("a kube client");
    let client = Client::try_from(config).expect("our client from the kube::Config");
    assert_eq!(client.default_namespace(), "default");

    // Both clients reach the same server: what one writes, the other reads.
    client.create(Some("default"), &pod("p1")).await.expect("p1 is created");
    let pods: Api<Pod> = Api::default_namespaced(kube_client);
    assert_eq!(pods.get("p1").await.expect("kube-rs reads p1").name_any(), "p1");
    let factory = SharedInformerFactory::new(client);
    factory.informer::<Pod>();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    assert!(factory.lister::<Pod>().namespace("default").get("p1").is_ok());

    factory.shutdown().await;
    server.shutdown().await.expect("a clean stop");
}

/// The kube-rs program itself (`support/bin/kube_program.rs`), started as its users start it:
/// `kube::Client::try_default()` reads `KUBECONFIG`. Its Pod and Widget informers sync through
/// the `kube` feature, and a widget created afterwards reaches its handler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kube_rs_program_from_client_try_default_runs_informers() {
    let server = ApiServer::start().await.expect("server starts");
    let kube_client = kube::Client::try_from(kube_config(&server).await).expect("a kube client");
    let widgets = install_widgets(&kube_client).await;
    widgets
        .create(&PostParams::default(), &Widget::new("early", WidgetSpec { size: 1 }))
        .await
        .expect("a widget");
    Client::from(kube_client.clone()).create(Some("default"), &pod("p1")).await.expect("a pod");

    let kubeconfig =
        std::env::temp_dir().join(format!("kube-program-{}.yaml", server.addr().port()));
    std::fs::write(&kubeconfig, server.kubeconfig_yaml()).expect("the kubeconfig is written");
    let exe = env!("CARGO_BIN_EXE_kube-program");
    let mut program = KubeProgram::start(exe, &kubeconfig, "default", DEADLINE);
    assert_eq!(program.line().await, "synced pods=1 widgets=1");
    widgets
        .create(&PostParams::default(), &Widget::new("late", WidgetSpec { size: 2 }))
        .await
        .expect("the late widget");
    assert_eq!(program.line().await, "saw late");
    program.exits_successfully().await;
    let _ = std::fs::remove_file(&kubeconfig);
}
