//! kube-rs (kube 5, a client nobody here wrote) against the embedded API server: list with
//! pagination and selectors, get and its typed errors, writes, raw watches (events, bookmarks,
//! the 410 ERROR event), and `kube::runtime::watcher` in both list-watch and streaming-list
//! modes, including its relist after compaction; and its metadata-only list, get and watch
//! (`PartialObjectMetadata`).

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::time::Duration;

use embedded_apiserver::ApiServer;
use futures::{Stream, StreamExt};
use informer_runtime::GroupVersionResource;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Api;
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use serde_json::json;
use support::{open_watches, start};

/// How long any single wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(10);

/// A kube client configured from the server's kubeconfig, as a user's program would be.
async fn client(server: &ApiServer) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(&server.kubeconfig_yaml()).expect("a valid kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a kube config");
    assert_eq!(config.default_namespace, "default");
    kube::Client::try_from(config).expect("a kube client")
}

fn add_pod(server: &ApiServer, namespace: &str, name: &str, app: &str) {
    let pod = json!({"metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
                     "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    server.create(&GroupVersionResource::new("", "v1", "pods"), pod).expect("the pod is created");
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter().map(|p| p.metadata.name.clone().unwrap_or_default()).collect()
}

/// The next item of a stream, within the deadline.
async fn next<S: Stream + Unpin>(stream: &mut S) -> S::Item {
    tokio::time::timeout(DEADLINE, stream.next())
        .await
        .expect("an item within the deadline")
        .expect("the stream goes on")
}

#[tokio::test]
async fn kube_rs_lists_gets_and_writes() {
    let server = start().await;
    for (ns, name, app) in [
        ("default", "web-0", "web"),
        ("default", "web-1", "web"),
        ("default", "db-0", "db"),
        ("other", "web-0", "web"),
    ] {
        add_pod(&server, ns, name, app);
    }
    let client = client(&server).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());

    let list = pods.list(&ListParams::default()).await.expect("a list");
    assert_eq!(names(&list.items), ["db-0", "web-0", "web-1"]);
    assert_eq!(list.metadata.resource_version, Some(server.resource_version().to_string()));
    let all = Api::<Pod>::all(client.clone()).list(&ListParams::default()).await.expect("a list");
    assert_eq!(all.items.len(), 4);
    let web = pods.list(&ListParams::default().labels("app=web")).await.expect("a list");
    assert_eq!(names(&web.items), ["web-0", "web-1"]);

    let first = pods.list(&ListParams::default().limit(2)).await.expect("a page");
    assert_eq!(names(&first.items), ["db-0", "web-0"]);
    let token = first.metadata.continue_.clone().expect("a continue token");
    let second =
        pods.list(&ListParams::default().limit(2).continue_token(&token)).await.expect("a page");
    assert_eq!(names(&second.items), ["web-1"]);
    assert_eq!(second.metadata.resource_version, first.metadata.resource_version);

    let pod = pods.get("web-0").await.expect("the pod");
    assert_eq!(pod.metadata.labels.unwrap_or_default()["app"], "web");
    let kube::Error::Api(status) = pods.get("nope").await.expect_err("no such pod") else {
        panic!("a typed API error");
    };
    assert_eq!(
        (status.code, status.reason.as_str(), status.message.as_str()),
        (404, "NotFound", "pods \"nope\" not found")
    );

    let configmaps: Api<ConfigMap> = Api::default_namespaced(client);
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "settings"}, "data": {"a": "1"}}))
            .unwrap();
    let created = configmaps.create(&PostParams::default(), &cm).await.expect("created");
    assert!(created.metadata.uid.is_some());
    let kube::Error::Api(status) =
        configmaps.create(&PostParams::default(), &cm).await.expect_err("exists")
    else {
        panic!("a typed API error");
    };
    assert_eq!((status.code, status.reason.as_str()), (409, "AlreadyExists"));
    let patched = configmaps
        .patch("settings", &PatchParams::default(), &Patch::Merge(json!({"data": {"b": "2"}})))
        .await
        .expect("patched");
    assert_eq!(patched.data.unwrap_or_default().len(), 2);
    let applied = configmaps
        .patch("settings", &PatchParams::apply("test").force(), &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"c": "3"}})))
        .await
        .expect("applied");
    assert_eq!(applied.data.unwrap_or_default().len(), 3);
    let mut stale = created.clone();
    stale.data = Some([("a".to_owned(), "stale".to_owned())].into());
    let kube::Error::Api(status) =
        configmaps.replace("settings", &PostParams::default(), &stale).await.expect_err("stale")
    else {
        panic!("a typed API error");
    };
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    configmaps.delete("settings", &DeleteParams::default()).await.expect("deleted");
    assert!(server.objects(&GroupVersionResource::new("", "v1", "configmaps")).is_empty());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn kube_rs_watches_events_bookmarks_and_expiry() {
    let server = start().await;
    add_pod(&server, "default", "web-0", "web");
    let pods: Api<Pod> = Api::default_namespaced(client(&server).await);
    let list = pods.list(&ListParams::default()).await.expect("a list");
    let from = list.metadata.resource_version.clone().expect("a version");

    let mut events =
        pods.watch(&WatchParams::default().timeout(60), &from).await.expect("a watch").boxed();
    open_watches(&server, 1).await;
    add_pod(&server, "default", "web-1", "web");
    let WatchEvent::Added(added) = next(&mut events).await.expect("an event") else {
        panic!("ADDED")
    };
    assert_eq!(added.metadata.name.as_deref(), Some("web-1"));
    pods.patch(
        "web-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
    )
    .await
    .expect("patched");
    let WatchEvent::Modified(modified) = next(&mut events).await.expect("an event") else {
        panic!("MODIFIED")
    };
    assert_eq!(modified.metadata.labels.unwrap_or_default()["x"], "y");
    server.send_bookmarks();
    let WatchEvent::Bookmark(bookmark) = next(&mut events).await.expect("an event") else {
        panic!("BOOKMARK")
    };
    assert_eq!(bookmark.metadata.resource_version, server.resource_version().to_string());
    pods.delete("web-1", &DeleteParams::default()).await.expect("deleted");
    let WatchEvent::Deleted(deleted) = next(&mut events).await.expect("an event") else {
        panic!("DELETED")
    };
    assert_eq!(deleted.metadata.name.as_deref(), Some("web-1"));

    server.compact();
    let mut old =
        pods.watch(&WatchParams::default(), &from).await.expect("a watch (HTTP 200)").boxed();
    let WatchEvent::Error(status) = next(&mut old).await.expect("an event") else {
        panic!("ERROR")
    };
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    assert!(
        status.message.starts_with(&format!("too old resource version: {from} (")),
        "{}",
        status.message
    );
    server.shutdown().await.unwrap();
}

/// Collects watcher events until `InitDone`; returns the names applied during init.
async fn initial_names<S: Stream<Item = Result<watcher::Event<Pod>, watcher::Error>> + Unpin>(
    stream: &mut S,
) -> Vec<String> {
    let mut names = Vec::new();
    loop {
        match next(stream).await.expect("a watcher event") {
            watcher::Event::Init => names.clear(),
            watcher::Event::InitApply(pod) => names.push(pod.metadata.name.unwrap_or_default()),
            watcher::Event::InitDone => return names,
            other => panic!("unexpected event during init: {other:?}"),
        }
    }
}

#[tokio::test]
async fn kube_rs_runtime_watcher_lists_watches_and_relists_after_compaction() {
    let server = start().await;
    add_pod(&server, "default", "a", "web");
    add_pod(&server, "default", "b", "web");
    let pods: Api<Pod> = Api::default_namespaced(client(&server).await);

    for config in [watcher::Config::default(), watcher::Config::default().streaming_lists()] {
        let mut stream = watcher(pods.clone(), config).boxed();
        assert_eq!(initial_names(&mut stream).await, ["a", "b"]);
        // The watcher opens its watch when polled next, from the list's version: it replays.
        add_pod(&server, "default", "c", "web");
        let watcher::Event::Apply(pod) = next(&mut stream).await.expect("an event") else {
            panic!("Apply")
        };
        assert_eq!(pod.metadata.name.as_deref(), Some("c"));
        server
            .delete(&GroupVersionResource::new("", "v1", "pods"), "default", "c")
            .expect("deleted");
        let watcher::Event::Delete(pod) = next(&mut stream).await.expect("an event") else {
            panic!("Delete")
        };
        assert_eq!(pod.metadata.name.as_deref(), Some("c"));

        // The watch goes silent, a change is missed, history is compacted, the connection
        // drops: resuming from the watcher's version gets 410, and the watcher must relist.
        assert_eq!(server.stall_watches(), 1);
        add_pod(&server, "default", "missed", "web");
        server.compact();
        server.drop_watches();
        let error = next(&mut stream).await.expect_err("the 410 surfaces as an error");
        assert!(
            error.to_string().contains("410") || format!("{error:?}").contains("410"),
            "{error:?}"
        );
        assert!(matches!(next(&mut stream).await, Ok(watcher::Event::Init)), "then a relist");
        let mut relisted = Vec::new();
        loop {
            match next(&mut stream).await.expect("a watcher event") {
                watcher::Event::InitApply(pod) => {
                    relisted.push(pod.metadata.name.unwrap_or_default());
                }
                watcher::Event::InitDone => break,
                other => panic!("unexpected event during the relist: {other:?}"),
            }
        }
        assert_eq!(relisted, ["a", "b", "missed"]);
        drop(stream);
        server
            .delete(&GroupVersionResource::new("", "v1", "pods"), "default", "missed")
            .expect("deleted");
        server.drop_watches();
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn kube_rs_metadata_lists_gets_and_watches() {
    let server = start().await;
    add_pod(&server, "default", "web-0", "web");
    add_pod(&server, "default", "db-0", "db");
    let pods: Api<Pod> = Api::namespaced(client(&server).await, "default");

    // `list_metadata` sends `as=PartialObjectMetadataList`; kube decodes the list's kind.
    let list = pods.list_metadata(&ListParams::default().labels("app=web")).await.unwrap();
    assert_eq!(list.items.len(), 1);
    let item = &list.items[0];
    assert_eq!(item.metadata.name.as_deref(), Some("web-0"));
    let types = item.types.as_ref().expect("items say what they are");
    assert_eq!(
        (types.kind.as_str(), types.api_version.as_str()),
        ("PartialObjectMetadata", "meta.k8s.io/v1")
    );
    let one = pods.get_metadata("db-0").await.unwrap();
    assert_eq!(one.metadata.labels.unwrap()["app"], "db");

    let mut events = pods.watch_metadata(&WatchParams::default(), "0").await.unwrap().boxed();
    let mut added = Vec::new();
    for _ in 0..2 {
        match next(&mut events).await.unwrap() {
            WatchEvent::Added(meta) => added.push(meta.metadata.name.unwrap()),
            other => panic!("expected ADDED, got {other:?}"),
        }
    }
    added.sort();
    assert_eq!(added, ["db-0", "web-0"]);
    server.shutdown().await.unwrap();
}
