//! Owner-reference garbage collection over real HTTP: the server's collector runs by itself
//! after a delete, and a watch sees each change it makes. (The rules themselves are unit
//! tested in `src/garbage_collector.rs` and compared with kube-controller-manager's collector
//! in the workspace's conformance tests.)

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::time::Duration;

use embedded_apiserver::testing::{WatchLines, eventually};
use serde_json::{Value, json};
use support::start;

/// How long any single wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(10);
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

async fn send(http: &reqwest::Client, method: reqwest::Method, url: &str, body: &Value) -> Value {
    let reply = http
        .request(method, url)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).expect("JSON"))
        .send()
        .await
        .expect("the server answers");
    serde_json::from_slice(&reply.bytes().await.expect("a body")).expect("a JSON body")
}

// Anchor: test/integration/garbagecollector TestCascadingDeletion, seen through a watch.
#[tokio::test]
async fn the_collector_deletes_dependents_after_the_owner_and_a_watch_sees_it() {
    let server = start().await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder().build().expect("an HTTP client");
    let base = format!("{}{CONFIGMAPS}", server.url());
    let owner =
        send(&http, reqwest::Method::POST, &base, &json!({"metadata": {"name": "owner"}})).await;
    let reference = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                           "uid": owner["metadata"]["uid"]});
    let dependent = json!({"metadata": {"name": "dependent", "ownerReferences": [reference]}});
    let orphan = json!({"metadata": {"name": "orphan", "ownerReferences": [reference]}});
    send(&http, reqwest::Method::POST, &base, &dependent).await;
    send(&http, reqwest::Method::POST, &base, &orphan).await;
    let rv = server.resource_version();
    let watch = http
        .get(format!("{base}?watch=true&resourceVersion={rv}"))
        .send()
        .await
        .expect("the watch opens");
    let mut watch = WatchLines::new(watch.bytes_stream());

    // Orphan: the owner waits with the `orphan` finalizer while its dependents are released.
    let orphaning = json!({"propagationPolicy": "Orphan"});
    let marked = send(&http, reqwest::Method::DELETE, &format!("{base}/owner"), &orphaning).await;
    assert_eq!(marked["metadata"]["finalizers"], json!(["orphan"]));
    let mut seen = Vec::new();
    for _ in 0..4 {
        let event = tokio::time::timeout(DEADLINE, watch.next_event())
            .await
            .expect("an event in time")
            .expect("the watch goes on");
        seen.push(format!(
            "{} {}",
            event["type"].as_str().unwrap(),
            event["object"]["metadata"]["name"].as_str().unwrap()
        ));
    }
    // The owner marked, its dependents released (in store order), then the owner gone.
    assert_eq!(seen, ["MODIFIED owner", "MODIFIED dependent", "MODIFIED orphan", "DELETED owner"]);
    let got = |name: &str| {
        let url = format!("{base}/{name}");
        let http = http.clone();
        async move { http.get(url).send().await.expect("the server answers").status().as_u16() }
    };
    assert_eq!(got("dependent").await, 200);

    // Background: a new owner, and the released dependent made its dependent again.
    let owner =
        send(&http, reqwest::Method::POST, &base, &json!({"metadata": {"name": "owner"}})).await;
    let reference = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                           "uid": owner["metadata"]["uid"]});
    let adopt = json!({"metadata": {"ownerReferences": [reference]}});
    let url = format!("{base}/dependent");
    let patched = http
        .patch(&url)
        .header("content-type", "application/merge-patch+json")
        .body(serde_json::to_vec(&adopt).expect("JSON"))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(patched.status(), 200);
    send(&http, reqwest::Method::DELETE, &format!("{base}/owner"), &json!({})).await;
    let server_ref = &server;
    eventually("the dependent is collected", DEADLINE, || {
        server_ref
            .objects(&informer_runtime::GroupVersionResource::new("", "v1", "configmaps"))
            .iter()
            .all(|o| o["metadata"]["name"] != "dependent")
    })
    .await;
    assert_eq!(got("dependent").await, 404);
    assert_eq!(got("orphan").await, 200, "an orphaned object stays");
    server.shutdown().await.unwrap();
}
