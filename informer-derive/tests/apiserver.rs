//! A derived type end to end: its `crd()` manifest is accepted by the embedded API server,
//! objects created over HTTP (typed, and as raw JSON as kubectl would send them) reach a handler
//! and a lister through the derived informer aliases, and through the grouped accessors of
//! `informers!` (`factory.example().v1().foos()`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use embedded_apiserver::ApiServer;
use embedded_apiserver::testing::eventually;
use informer_client::{Client, Config};
use informer_derive::Informer;
use informer_runtime::{HandlerFuncs, LabelSelector, SharedInformerFactory};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const DEADLINE: Duration = Duration::from_secs(30);

/// The example resource.
#[derive(Clone, Debug, PartialEq, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", status, shortname = "fo")]
pub struct Foo {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// The desired state.
    pub spec: FooSpec,
    /// The observed state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<FooStatus>,
}

/// The desired state of a foo.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct FooSpec {
    /// How many.
    pub replicas: i32,
}

/// The observed state of a foo.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct FooStatus {
    /// How many are ready.
    pub ready: i32,
}

/// A cluster-scoped kind of another group, to list beside `Foo`. Its plural and version have
/// dashes, as DNS labels may (Multus' plural is `network-attachment-definitions`): its accessors
/// are `v1_preview()` and `network_limits()`.
#[derive(Clone, Debug, PartialEq, Deserialize, Informer)]
#[informer(group = "apps.example.org", version = "v1-preview", cluster, plural = "network-limits")]
pub struct NetworkLimit {
    /// Standard object metadata.
    pub metadata: ObjectMeta,
    /// The limit.
    pub spec: FooSpec,
}

/// The grouped accessors, as a user writes them.
mod informers {
    informer_derive::informers!(super::Foo, crate::NetworkLimit);
}

use informers::CustomResourceInformers as _;

fn foo(name: &str, replicas: i32) -> Foo {
    Foo {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            labels: Some([("app".to_owned(), "demo".to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: FooSpec { replicas },
        status: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn derived_informers_sync_from_the_embedded_api_server() {
    let server = ApiServer::start().await.unwrap();
    let url = server.url();
    let client = Client::new(Config::new(url.parse().unwrap())).unwrap();
    let crd = client.create(None, &Foo::crd()).await.unwrap();
    assert_eq!(crd.metadata.name.as_deref(), Some("foos.example.com"));
    client.create(Some("default"), &foo("a", 1)).await.unwrap();

    let factory = SharedInformerFactory::new(client.clone());
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (on_add, on_update) = (Arc::clone(&seen), Arc::clone(&seen));
    let registration = factory
        .informer::<Foo>()
        .add_event_handler(
            HandlerFuncs::new()
                .on_add(move |foo: Arc<Foo>, _| {
                    let name = foo.metadata.name.clone().unwrap_or_default();
                    on_add.lock().unwrap().push(format!("add {name}"));
                })
                .on_update(move |_, foo: Arc<Foo>| {
                    on_update.lock().unwrap().push(format!("update {}", foo.spec.replicas));
                }),
        )
        .unwrap();
    // The alias informer-gen would have generated, over the same shared informer.
    let typed: FooInformer<'_, Client> = informer_runtime::informers::TypedInformer::new(&factory);
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    assert!(registration.wait_for_sync().await);

    let lister: FooLister = typed.lister();
    let in_default: FooNamespaceLister = lister.namespace("default");
    assert_eq!(in_default.get("a").unwrap().spec.replicas, 1);

    client.create(Some("default"), &foo("b", 2)).await.unwrap();
    client
        .patch_merge::<Foo>(Some("default"), "a", &serde_json::json!({"spec": {"replicas": 5}}))
        .await
        .unwrap();
    // As kubectl would send it: plain JSON with apiVersion and kind, over HTTP.
    let raw = serde_json::json!({
        "apiVersion": "example.com/v1",
        "kind": "Foo",
        "metadata": {"name": "c", "namespace": "default", "labels": {"app": "demo"}},
        "spec": {"replicas": 3},
    });
    let host = url.strip_prefix("http://").unwrap().trim_end_matches('/');
    let response =
        post_json(host, "/apis/example.com/v1/namespaces/default/foos", &raw).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");

    let demo = LabelSelector::parse("app=demo").unwrap();
    eventually("three foos in the lister", DEADLINE, || lister.list(&demo).len() == 3).await;
    eventually("the handler to see the adds and the update", DEADLINE, || {
        let seen = seen.lock().unwrap();
        ["add a", "add b", "add c", "update 5"].iter().all(|e| seen.contains(&(*e).to_owned()))
    })
    .await;
    assert_eq!(in_default.get("c").unwrap().spec.replicas, 3);

    factory.shutdown().await;
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouped_accessors_of_derived_types_sync() {
    let server = ApiServer::start().await.unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    client.create(None, &Foo::crd()).await.unwrap();
    client.create(None, &NetworkLimit::crd()).await.unwrap();
    client.create(Some("default"), &foo("a", 1)).await.unwrap();
    let limit = NetworkLimit {
        metadata: ObjectMeta { name: Some("l".to_owned()), ..ObjectMeta::default() },
        spec: FooSpec { replicas: 7 },
    };
    client.create(None, &limit).await.unwrap();

    let factory = SharedInformerFactory::new(client.clone());
    // `example.com` is `example()`; `apps.example.org` may not take the built-in `apps()`.
    let foos: FooInformer<'_, Client> = factory.example().v1().foos();
    let limits: NetworkLimitInformer<'_, Client> =
        factory.apps_example_org().v1_preview().network_limits();
    // Asked for before the factory starts, as with `factory.informer::<Foo>()`.
    foos.informer();
    limits.informer();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());

    assert_eq!(foos.lister().namespace("default").get("a").unwrap().spec.replicas, 1);
    assert_eq!(limits.lister().get("l").unwrap().spec.replicas, 7);
    client.create(Some("default"), &foo("b", 2)).await.unwrap();
    let lister: FooLister = foos.lister();
    eventually("the new foo in the lister", DEADLINE, || {
        lister.namespace("default").get("b").is_ok()
    })
    .await;

    // register_custom_resources makes them known by group, version and resource: the typed
    // informer, where an unregistered resource gets a dynamic one.
    let gvr = informer_runtime::GroupVersionResource::of::<NetworkLimit>();
    let fresh = SharedInformerFactory::new(client.clone());
    let dynamic = fresh.for_resource(&gvr).unwrap();
    assert!(dynamic.downcast::<informer_runtime::dynamic::DynamicObject>().is_some());
    let fresh = SharedInformerFactory::new(client.clone());
    fresh.register_custom_resources();
    assert!(fresh.for_resource(&gvr).unwrap().downcast::<NetworkLimit>().is_some());
    factory.shutdown().await;
    server.shutdown().await.unwrap();
}

/// POSTs `body` to `path` on `host` (`127.0.0.1:port`) with a bare HTTP/1.1 request; returns the
/// response head and body.
async fn post_json(host: &str, path: &str, body: &serde_json::Value) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let body = body.to_string();
    let mut stream = tokio::net::TcpStream::connect(host).await?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response)
}
