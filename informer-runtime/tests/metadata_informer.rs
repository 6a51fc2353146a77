//! Metadata-only informers over real HTTP against the embedded API server: the informer of
//! `PartialObjectMetadata<Pod>` lists, watches, and tells its handlers about updates and
//! deletes, its lister answers by namespace, name and label; and the server renders
//! `PartialObjectMetadata(List)` as kube-apiserver does (lists, watches, bookmarks, 406s).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use informer_runtime::client::{Client, Config};
use informer_runtime::metadata::PartialObjectMetadata;
use informer_runtime::reflector::ReflectorConfig;
use informer_runtime::testing::apiserver::ApiServer;
use informer_runtime::{GroupVersionResource, HandlerFuncs, LabelSelector, SharedInformerFactory};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use tokio::sync::mpsc;

const DEADLINE: Duration = Duration::from_secs(20);
const LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const OBJECT: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const PODS: &str = "/api/v1/namespaces/default/pods";

type PodMeta = PartialObjectMetadata<Pod>;

/// A pod with labels and `managedFields`, as a body to create.
fn pod(namespace: &str, name: &str, app: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": namespace, "labels": {"app": app},
            "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]
        },
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    })
}

fn pods() -> GroupVersionResource {
    GroupVersionResource::of::<Pod>()
}

async fn next<T>(rx: &mut mpsc::UnboundedReceiver<T>) -> T {
    tokio::time::timeout(DEADLINE, rx.recv()).await.expect("an event in time").expect("open")
}

/// What a handler saw, as `ADD|UPDATE|DELETE ns/name`.
fn recording_handler(tx: mpsc::UnboundedSender<String>) -> HandlerFuncs<PodMeta> {
    let (add, update, delete) = (tx.clone(), tx.clone(), tx);
    let key = |m: &PodMeta| {
        format!(
            "{}/{}",
            m.metadata.namespace.as_deref().unwrap_or(""),
            m.metadata.name.as_deref().unwrap_or("")
        )
    };
    HandlerFuncs::new()
        .on_add(move |m: Arc<PodMeta>, _initial| {
            let _ = add.send(format!("ADD {}", key(&m)));
        })
        .on_update(move |_old, new: Arc<PodMeta>| {
            let labels = new.metadata.labels.clone().unwrap_or_default();
            let _ = update.send(format!("UPDATE {} app={}", key(&new), labels["app"]));
        })
        .on_delete(move |deleted| {
            let _ = delete.send(format!("DELETE {}", deleted.key()));
        })
}

#[tokio::test]
async fn metadata_informers_list_watch_update_delete_and_list_by_label() {
    let server = ApiServer::start().await.unwrap();
    server.create(&pods(), pod("default", "web-0", "web")).unwrap();
    server.create(&pods(), pod("default", "db-0", "db")).unwrap();
    server.create(&pods(), pod("other", "web-1", "web")).unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();

    // Listing then watching, and a streaming list (a watch with sendInitialEvents).
    let listing = SharedInformerFactory::new(client.clone());
    let streaming = SharedInformerFactory::builder(client)
        .reflector_config(ReflectorConfig::default().streaming_list(true))
        .build();
    let mut seen = Vec::new();
    for factory in [&listing, &streaming] {
        let (tx, rx) = mpsc::unbounded_channel();
        factory.informer::<PodMeta>().add_event_handler(recording_handler(tx)).unwrap();
        factory.start();
        assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
        seen.push(rx);
    }
    for rx in &mut seen {
        let mut initial = vec![next(rx).await, next(rx).await, next(rx).await];
        initial.sort();
        assert_eq!(initial, ["ADD default/db-0", "ADD default/web-0", "ADD other/web-1"]);
    }

    // Through the watch: an add, an update (a label), a delete.
    server.create(&pods(), pod("default", "web-2", "web")).unwrap();
    let mut web0 = server.get(&pods(), "default", "web-0").unwrap();
    web0["metadata"]["labels"]["app"] = json!("edge");
    server.update(&pods(), web0).unwrap();
    server.delete(&pods(), "default", "db-0").unwrap();
    for rx in &mut seen {
        assert_eq!(next(rx).await, "ADD default/web-2");
        assert_eq!(next(rx).await, "UPDATE default/web-0 app=edge");
        assert_eq!(next(rx).await, "DELETE default/db-0");
    }

    for factory in [&listing, &streaming] {
        let lister = factory.lister::<PodMeta>();
        let web = LabelSelector::parse("app=web").unwrap();
        let mut names: Vec<String> =
            lister.list(&web).iter().map(|m| m.metadata.name.clone().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["web-1", "web-2"]);
        assert_eq!(lister.namespace("default").list(&web).len(), 1);
        assert_eq!(lister.namespace("other").list(&LabelSelector::everything()).len(), 1);
        let edge = lister.namespace("default").get("web-0").unwrap();
        assert_eq!(edge.metadata.labels.as_ref().unwrap()["app"], "edge");
        assert!(edge.metadata.uid.is_some() && edge.metadata.resource_version.is_some());
        // managedFields is skipped while decoding, as for whole objects.
        assert!(
            lister
                .list(&LabelSelector::everything())
                .iter()
                .all(|m| m.metadata.managed_fields.is_none())
        );
        assert_eq!(
            lister.namespace("default").get("db-0").unwrap_err().to_string(),
            r#"pod "db-0" not found"#
        );
    }
    listing.shutdown().await;
    streaming.shutdown().await;
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn whole_object_and_metadata_informers_of_one_resource_live_side_by_side() {
    let server = ApiServer::start().await.unwrap();
    server.create(&pods(), pod("default", "web-0", "web")).unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let factory = SharedInformerFactory::new(client.clone());
    // Metadata first: `for_resource` still answers with the whole-object informer.
    let metadata = factory.informer::<PodMeta>();
    let full = factory.informer::<Pod>();
    factory.start();
    let report = factory.wait_for_cache_sync(DEADLINE).await;
    assert!(report.all_synced());
    assert_eq!(report.0.len(), 1, "one resource");
    assert!(factory.for_resource(&pods()).unwrap().downcast::<Pod>().is_some());
    assert_eq!((metadata.cache().len(), full.cache().len()), (1, 1));
    assert!(full.cache().list()[0].spec.is_some());
    // A typed get through the client asks for metadata alone, too.
    let got: PodMeta = client.get(Some("default"), "web-0").await.unwrap();
    assert_eq!(got.metadata.name.as_deref(), Some("web-0"));
    factory.shutdown().await;
    server.shutdown().await.unwrap();
}

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// The response to a GET of `path` with an `Accept` header.
async fn request(server: &ApiServer, path: &str, accept: &str) -> reqwest::Response {
    http().get(format!("{}{path}", server.url())).header("accept", accept).send().await.unwrap()
}

/// One GET with an `Accept` header: status and JSON body.
async fn get(server: &ApiServer, path: &str, accept: &str) -> (u16, Value) {
    let response = request(server, path, accept).await;
    let status = response.status().as_u16();
    (status, serde_json::from_slice(&response.bytes().await.unwrap()).unwrap_or(Value::Null))
}

/// The events of a watch until it ends, or `n` of them.
async fn watch_events(server: &ApiServer, path: &str, accept: &str, n: usize) -> Vec<Value> {
    let response = request(server, path, accept).await;
    assert_eq!(response.status().as_u16(), 200);
    let mut body = response.bytes_stream();
    let (mut buf, mut events) = (Vec::new(), Vec::new());
    while events.len() < n {
        match tokio::time::timeout(DEADLINE, body.next()).await.expect("an event in time") {
            Some(chunk) => buf.extend_from_slice(&chunk.unwrap()),
            None => break,
        }
        while let Some(end) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            events.push(serde_json::from_slice(&line).unwrap());
        }
    }
    events
}

#[tokio::test]
async fn the_server_renders_partial_object_metadata_as_kube_apiserver() {
    let server = ApiServer::start().await.unwrap();
    for name in ["a", "b", "c"] {
        server.create(&pods(), pod("default", name, "web")).unwrap();
    }

    // A list page: the list's metadata, then items that each say what they are.
    let (status, page) = get(&server, &format!("{PODS}?limit=2"), LIST).await;
    assert_eq!(status, 200);
    assert_eq!(
        (&page["kind"], &page["apiVersion"]),
        (&json!("PartialObjectMetadataList"), &json!("meta.k8s.io/v1"))
    );
    assert!(
        page["metadata"]["continue"].is_string() && page["metadata"]["resourceVersion"].is_string()
    );
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    for item in items {
        assert_eq!(item["kind"], "PartialObjectMetadata");
        assert_eq!(item["apiVersion"], "meta.k8s.io/v1");
        assert!(item["metadata"]["managedFields"].is_array(), "the server sends all metadata");
        assert!(item.get("spec").is_none());
    }
    // What clients send: fallbacks the server skips (protobuf) or does not need (plain JSON).
    let client_go =
        format!("application/vnd.kubernetes.protobuf;{}, {LIST}, application/json", &LIST[17..]);
    let (status, all) = get(&server, PODS, &client_go).await;
    assert_eq!((status, all["items"].as_array().map(Vec::len)), (200, Some(3)));
    // An empty list has `"items": null`, as a nil Go slice.
    let (_, empty) = get(&server, "/api/v1/namespaces/kube-public/pods", LIST).await;
    assert_eq!(
        (&empty["kind"], &empty["items"]),
        (&json!("PartialObjectMetadataList"), &Value::Null)
    );
    // One object.
    let (status, one) = get(&server, &format!("{PODS}/a"), OBJECT).await;
    assert_eq!(
        (status, &one["kind"], &one["metadata"]["name"]),
        (200, &json!("PartialObjectMetadata"), &json!("a"))
    );
    assert!(one.get("spec").is_none());

    // The wrong shape is a 406 NotAcceptable with kube-apiserver's message; so is an `as=`
    // nobody serves when no other range fits.
    let (status, wrong) = get(&server, PODS, OBJECT).await;
    assert_eq!((status, &wrong["reason"]), (406, &json!("NotAcceptable")));
    assert_eq!(
        wrong["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*core.PodList)"
    );
    let (status, wrong) = get(&server, &format!("{PODS}/a"), LIST).await;
    assert_eq!(status, 406);
    assert_eq!(
        wrong["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.Pod)"
    );
    let (status, _) = get(
        &server,
        "/apis/apps/v1/deployments",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    )
    .await;
    assert_eq!(status, 406);
    let (status, _) = get(&server, PODS, "application/json;as=Foo;g=meta.k8s.io;v=v1").await;
    assert_eq!(status, 406);
    let (status, _) =
        get(&server, PODS, "application/json;as=PartialObjectMetadataList;g=example.com;v=v1")
            .await;
    assert_eq!(status, 406);

    // A streaming list: every object and the initial-events-end bookmark as PartialObjectMetadata.
    let path = format!(
        "{PODS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    );
    let events = watch_events(&server, &path, OBJECT, 4).await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "ADDED", "ADDED", "BOOKMARK"]);
    for event in &events {
        assert_eq!(event["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(event["object"]["apiVersion"], "meta.k8s.io/v1");
        assert!(event["object"].get("spec").is_none());
    }
    assert_eq!(events[3]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    // A watch asked for as a list ends at its first object (kube-apiserver cannot encode it).
    let events = watch_events(&server, &format!("{PODS}?watch=true"), LIST, 1).await;
    assert!(events.is_empty(), "{events:?}");
    // A watch from a compacted version still gets its ERROR Status.
    server.compact();
    let events =
        watch_events(&server, &format!("{PODS}?watch=true&resourceVersion=1"), OBJECT, 1).await;
    assert_eq!(
        (&events[0]["type"], &events[0]["object"]["kind"]),
        (&json!("ERROR"), &json!("Status"))
    );
    server.shutdown().await.unwrap();
}
