//! The server renders `PartialObjectMetadata(List)` as kube-apiserver does: lists, objects,
//! watches and their bookmarks, and 406s for the wrong `as=` kind.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Duration;

use embedded_apiserver::ApiServer;
use embedded_apiserver::testing::pod;
use futures::StreamExt;
use informer_runtime::GroupVersionResource;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(20);
const LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const OBJECT: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const PODS: &str = "/api/v1/namespaces/default/pods";

fn pods() -> GroupVersionResource {
    GroupVersionResource::of::<Pod>()
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
