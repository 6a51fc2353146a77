//! The HTTP client against the embedded API server: typed requests with optimistic
//! concurrency, paged lists, streaming lists, and an informer that follows the server through
//! dropped watches and compaction.

// Every test here runs this crate's own HTTP client (`Client::new`, `Config`), which the
// `http` feature builds.
#![cfg(feature = "http")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use embedded_apiserver::ApiServer;
use futures::StreamExt;
use informer_client::{Client, Config, Patch, PatchParams};
use informer_runtime::listwatch::{ListOptions, ResourceVersionMatch, WatchEvent, WatchOptions};
use informer_runtime::{GroupVersionResource, HandlerFuncs, LabelSelector, SharedInformerFactory};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, ObjectMeta, Preconditions};

const DEADLINE: Duration = Duration::from_secs(20);

async fn within<F: Future>(fut: F) -> F::Output {
    tokio::time::timeout(DEADLINE, fut).await.expect("deadline exceeded")
}

async fn start() -> (ApiServer, Client) {
    let server = ApiServer::start().await.unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    (server, client)
}

fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([("app".to_owned(), "web".to_owned())])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".to_owned(),
                image: Some("nginx".to_owned()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

#[tokio::test]
async fn typed_requests_with_optimistic_concurrency() {
    let (_server, client) = start().await;
    let cm = ConfigMap {
        metadata: ObjectMeta { name: Some("settings".to_owned()), ..ObjectMeta::default() },
        data: Some(BTreeMap::from([("a".to_owned(), "1".to_owned())])),
        ..ConfigMap::default()
    };
    let created = within(client.create(Some("default"), &cm)).await.unwrap();
    assert!(created.metadata.uid.is_some());
    let again = within(client.create(Some("default"), &cm)).await.unwrap_err();
    assert!(again.is_conflict(), "{again}");

    let patch = serde_json::json!({"data": {"b": "2"}});
    let patched: ConfigMap =
        within(client.patch_merge(Some("default"), "settings", &patch)).await.unwrap();
    assert_eq!(patched.data.as_ref().unwrap().len(), 2);

    // `created` carries the version before the patch: replacing with it is stale.
    let stale = within(client.replace(Some("default"), "settings", &created)).await.unwrap_err();
    assert!(stale.is_conflict(), "{stale}");
    let mut changed = patched.clone();
    changed.data.as_mut().unwrap().insert("c".to_owned(), "3".to_owned());
    let replaced = within(client.replace(Some("default"), "settings", &changed)).await.unwrap();
    assert_eq!(replaced.data.as_ref().unwrap().len(), 3);
    assert_ne!(replaced.metadata.resource_version, patched.metadata.resource_version);

    within(client.delete::<ConfigMap>(Some("default"), "settings")).await.unwrap();
    let gone = within(client.get::<ConfigMap>(Some("default"), "settings")).await.unwrap_err();
    assert!(gone.is_not_found(), "{gone}");
}

/// Server-side apply as the embedded server approximates it (create or merge; it keeps no
/// managedFields, so ownership and its conflicts are checked against kube-apiserver in
/// `tests/kube_apiserver.rs`).
#[tokio::test]
async fn server_side_apply_creates_then_changes_the_object() {
    let (_server, client) = start().await;
    let apply = |mode: &str| {
        serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "applied", "namespace": "default"},
            "data": {"mode": mode},
        })
    };
    let params = PatchParams::apply("controller-a").force();
    let created: ConfigMap =
        within(client.patch(Some("default"), "applied", &Patch::Apply(apply("fast")), &params))
            .await
            .unwrap();
    assert_eq!(created.data.as_ref().unwrap()["mode"], "fast");
    let changed: ConfigMap =
        within(client.patch(Some("default"), "applied", &Patch::Apply(apply("slow")), &params))
            .await
            .unwrap();
    assert_eq!(changed.data.as_ref().unwrap()["mode"], "slow");
    assert_eq!(changed.metadata.uid, created.metadata.uid);
}

/// The other patch formats: a JSON patch whose test fails changes nothing, a merge patch with
/// a field manager, a dry run that stores nothing.
#[tokio::test]
async fn json_and_merge_patches_and_dry_runs() {
    let (_server, client) = start().await;
    let cm = ConfigMap {
        metadata: ObjectMeta { name: Some("applied".to_owned()), ..ObjectMeta::default() },
        data: Some(BTreeMap::from([("mode".to_owned(), "slow".to_owned())])),
        ..ConfigMap::default()
    };
    within(client.create(Some("default"), &cm)).await.unwrap();
    let failing = serde_json::json!([
        {"op": "test", "path": "/data/mode", "value": "fast"},
        {"op": "replace", "path": "/data/mode", "value": "never"},
    ]);
    let refused = within(client.patch::<ConfigMap, _>(
        Some("default"),
        "applied",
        &Patch::Json(&failing),
        &PatchParams::default(),
    ))
    .await
    .unwrap_err();
    assert!(refused.status().is_some_and(|s| s.code == 422), "{refused}");
    let merged: ConfigMap = within(client.patch(
        Some("default"),
        "applied",
        &Patch::Merge(serde_json::json!({"data": {"extra": "1"}})),
        &PatchParams::default().field_manager("kubectl-edit"),
    ))
    .await
    .unwrap();
    assert_eq!(merged.data.as_ref().unwrap().len(), 2);
    let dry: ConfigMap = within(client.patch(
        Some("default"),
        "applied",
        &Patch::Merge(serde_json::json!({"data": {"dry": "1"}})),
        &PatchParams::default().dry_run(),
    ))
    .await
    .unwrap();
    assert!(dry.data.as_ref().unwrap().contains_key("dry"));
    let stored: ConfigMap = within(client.get(Some("default"), "applied")).await.unwrap();
    assert!(!stored.data.as_ref().unwrap().contains_key("dry"), "a dry run stores nothing");
}

/// Status through its subresource, conditional on the version; deletes conditional on the UID.
#[tokio::test]
async fn status_updates_and_deletes_with_preconditions() {
    let (_server, client) = start().await;
    let created = within(client.create(Some("default"), &pod("web"))).await.unwrap();
    let status = serde_json::json!({"status": {"phase": "Running"}});
    let patched: Pod = within(client.patch_status(
        Some("default"),
        "web",
        &Patch::Strategic(&status),
        &PatchParams::default(),
    ))
    .await
    .unwrap();
    assert_eq!(patched.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Running"));
    let mut failed = patched.clone();
    failed.status.as_mut().unwrap().phase = Some("Failed".to_owned());
    let replaced = within(client.replace_status(Some("default"), "web", &failed)).await.unwrap();
    assert_eq!(replaced.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Failed"));
    let stale = within(client.replace_status(Some("default"), "web", &patched)).await.unwrap_err();
    assert!(stale.is_conflict(), "the status update carried an old version: {stale}");

    // Delete with a precondition: a wrong UID conflicts, the right one deletes.
    let wrong = DeleteOptions {
        preconditions: Some(Preconditions {
            uid: Some("not-this-one".to_owned()),
            ..Preconditions::default()
        }),
        ..DeleteOptions::default()
    };
    let refused = within(client.delete_with::<Pod>(Some("default"), "web", &wrong)).await;
    assert!(refused.unwrap_err().is_conflict());
    let right = DeleteOptions {
        preconditions: Some(Preconditions {
            uid: created.metadata.uid.clone(),
            ..Preconditions::default()
        }),
        propagation_policy: Some("Background".to_owned()),
        ..DeleteOptions::default()
    };
    within(client.delete_with::<Pod>(Some("default"), "web", &right)).await.unwrap();
    let gone = within(client.get::<Pod>(Some("default"), "web")).await.unwrap_err();
    assert!(gone.is_not_found(), "{gone}");
}

#[tokio::test]
async fn paged_lists_return_every_object_once() {
    let (_server, client) = start().await;
    for i in 0..23 {
        within(client.create(Some("default"), &pod(&format!("p-{i:02}")))).await.unwrap();
    }
    let pods = client.lister_watcher::<Pod>(Some("default"));
    let mut options = ListOptions { limit: Some(5), ..ListOptions::default() };
    let mut names = Vec::new();
    let mut pages = 0;
    loop {
        let page = within(pods.list(&options)).await.unwrap();
        pages += 1;
        names.extend(page.items.iter().map(|p| p.metadata.name.clone().unwrap()));
        let Some(token) = page.continue_token else { break };
        // What the reflector sends next, so the prefetched page is used.
        options =
            ListOptions { continue_token: Some(token), resource_version: String::new(), ..options };
    }
    names.sort();
    names.dedup();
    assert_eq!((names.len(), pages), (23, 5));
}

#[tokio::test]
async fn a_streaming_list_ends_with_the_initial_events_bookmark() {
    let (_server, client) = start().await;
    for i in 0..3 {
        within(client.create(Some("default"), &pod(&format!("s-{i}")))).await.unwrap();
    }
    let pods = client.lister_watcher::<Pod>(None);
    let options = WatchOptions {
        resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
        allow_watch_bookmarks: true,
        send_initial_events: true,
        timeout: Some(Duration::from_secs(60)),
        ..WatchOptions::default()
    };
    let mut watch = within(pods.watch(&options)).await.unwrap();
    let mut added = 0;
    loop {
        match within(watch.next()).await.unwrap().unwrap() {
            WatchEvent::Added(_) => added += 1,
            WatchEvent::Bookmark(b) if b.initial_events_end => break,
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(added, 3);
}

/// Names of the cached pods and of the server's, sorted.
fn cached_and_served(
    factory: &SharedInformerFactory<Client>,
    server: &ApiServer,
) -> (Vec<String>, Vec<String>) {
    let mut cached: Vec<String> = factory
        .lister::<Pod>()
        .list(&LabelSelector::everything())
        .iter()
        .map(|p| {
            format!(
                "{}@{}",
                p.metadata.name.as_deref().unwrap(),
                p.metadata.resource_version.as_deref().unwrap()
            )
        })
        .collect();
    let mut served: Vec<String> = server
        .objects(&GroupVersionResource::of::<Pod>())
        .iter()
        .map(|p| {
            format!(
                "{}@{}",
                p["metadata"]["name"].as_str().unwrap(),
                p["metadata"]["resourceVersion"].as_str().unwrap()
            )
        })
        .collect();
    cached.sort();
    served.sort();
    (cached, served)
}

/// A server holding `count` pods in `default`, named `<prefix>-00`, `<prefix>-01`, …; and a
/// started pod informer on it, synced and watching, with a channel its handlers bump on every
/// add, update and delete: a test waits on that instead of polling the cache.
async fn watched_pod_informer(
    prefix: &str,
    count: usize,
) -> (ApiServer, Client, SharedInformerFactory<Client>, tokio::sync::watch::Receiver<u64>) {
    let (server, client) = start().await;
    for i in 0..count {
        within(client.create(Some("default"), &pod(&format!("{prefix}-{i:02}")))).await.unwrap();
    }
    let factory = SharedInformerFactory::builder(client.clone()).build();
    let (changed_tx, changed) = tokio::sync::watch::channel(0_u64);
    let changed_tx = Arc::new(changed_tx);
    let (on_add, on_update, on_delete) =
        (Arc::clone(&changed_tx), Arc::clone(&changed_tx), changed_tx);
    factory
        .informer::<Pod>()
        .add_event_handler(
            HandlerFuncs::new()
                .on_add(move |_, _| on_add.send_modify(|n| *n += 1))
                .on_update(move |_, _| on_update.send_modify(|n| *n += 1))
                .on_delete(move |_| on_delete.send_modify(|n| *n += 1)),
        )
        .unwrap();
    factory.start();
    assert!(within(factory.wait_for_cache_sync(DEADLINE)).await.all_synced());
    within(server.wait_for_watches(1)).await;
    (server, client, factory, changed)
}

/// Waits, within the deadline, until the cache holds exactly the server's pods at the server's
/// versions; it rechecks only when a handler has run, since nothing else changes the cache.
async fn converge(
    factory: &SharedInformerFactory<Client>,
    server: &ApiServer,
    changed: &mut tokio::sync::watch::Receiver<u64>,
) {
    within(async {
        loop {
            let (cached, served) = cached_and_served(factory, server);
            if cached == served {
                return;
            }
            changed.changed().await.unwrap();
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_follows_dropped_watches_and_compaction() {
    let (server, client, factory, mut changed) = watched_pod_informer("w", 20).await;

    for i in 0..5 {
        let patch = serde_json::json!({"metadata": {"labels": {"round": "1"}}});
        within(client.patch_merge::<Pod>(Some("default"), &format!("w-{i:02}"), &patch))
            .await
            .unwrap();
        within(client.delete::<Pod>(Some("default"), &format!("w-{:02}", 19 - i))).await.unwrap();
    }
    server.drop_watches();
    server.compact();
    for i in 20..25 {
        within(client.create(Some("default"), &pod(&format!("w-{i:02}")))).await.unwrap();
    }

    converge(&factory, &server, &mut changed).await;
    within(factory.shutdown()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_keeps_the_cached_copy_of_every_unchanged_object() {
    let (server, client, factory, mut changed) = watched_pod_informer("r", 30).await;
    let lister = factory.lister::<Pod>();
    let before: Vec<Arc<Pod>> =
        (0..30).map(|i| lister.namespace("default").get(&format!("r-{i:02}")).unwrap()).collect();

    // Changes the stalled watch never delivers; then its version is compacted away, so the
    // re-watch gets 410 Expired and the informer relists.
    assert_eq!(server.stall_watches(), 1);
    for i in 0..3 {
        let patch = serde_json::json!({"metadata": {"labels": {"round": "2"}}});
        within(client.patch_merge::<Pod>(Some("default"), &format!("r-{i:02}"), &patch))
            .await
            .unwrap();
    }
    server.compact();
    server.drop_watches();
    converge(&factory, &server, &mut changed).await;

    for (i, held) in before.iter().enumerate() {
        let now = lister.namespace("default").get(&format!("r-{i:02}")).unwrap();
        assert_eq!(Arc::ptr_eq(&now, held), i >= 3, "r-{i:02}: shared only when unchanged");
    }
    within(factory.shutdown()).await;
}

#[tokio::test]
async fn a_stalled_watch_ends_at_the_configured_idle_deadline() {
    // No bookmarks: nothing but the stall's silence on the wire.
    let server = ApiServer::builder().bookmark_interval(None).start().await.unwrap();
    let idle = Duration::from_millis(300);
    let config = Config::new(server.url().parse().unwrap()).watch_idle_timeout(idle);
    let pods = Client::new(config).unwrap().lister_watcher::<Pod>(None);
    // The server would end it in ten minutes, the default idle deadline half a minute later.
    let options =
        WatchOptions { timeout: Some(Duration::from_secs(600)), ..WatchOptions::default() };
    let mut watch = within(pods.watch(&options)).await.unwrap();
    server.wait_for_watches(1).await;
    assert_eq!(server.stall_watches(), 1);
    server
        .create(
            &GroupVersionResource::of::<Pod>(),
            embedded_apiserver::testing::pod("default", "unseen", "web"),
        )
        .unwrap();

    let started = tokio::time::Instant::now();
    assert!(within(watch.next()).await.is_none(), "the stalled watch ends quietly");
    assert!(
        started.elapsed() < idle * 10,
        "ended after {:?}, not at its idle deadline",
        started.elapsed()
    );
}

/// Names and namespaces can come from users' data (an annotation mapped to a key). A value that
/// is path navigation (`..`), or holds `/` or `%`, must never turn a request on one object into
/// one on another object or on the whole collection: client-go refuses them
/// (`IsValidPathSegmentName`), and so does every typed request here, naming the value.
#[tokio::test]
async fn names_that_would_retarget_a_request_are_refused() {
    let (_server, client) = start().await;
    for name in ["a", "b", "status"] {
        within(client.create(Some("ns"), &pod(name))).await.unwrap();
    }
    let served = async || {
        let mut found = 0;
        for name in ["a", "b", "status"] {
            found += usize::from(within(client.get::<Pod>(Some("ns"), name)).await.is_ok());
        }
        found
    };

    // `..` would delete the collection `/api/v1/namespaces/ns/pods`.
    let refused = within(client.delete::<Pod>(Some("ns"), "..")).await.unwrap_err();
    assert!(refused.to_string().contains(r#"".."#), "{refused}");
    let refused = within(client.delete_with::<Pod>(Some("ns"), ".", &DeleteOptions::default()))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains(r#""."#), "{refused}");
    assert_eq!(served().await, 3, "a refused delete deleted pods");

    // `patch_status(ns, "..")` would patch the pod named `status`.
    let patch = serde_json::json!({"metadata": {"labels": {"hit": "yes"}}});
    let params = PatchParams::default();
    let refused =
        within(client.patch_status::<Pod, _>(Some("ns"), "..", &Patch::Merge(&patch), &params))
            .await
            .unwrap_err();
    assert!(refused.to_string().contains("name"), "{refused}");
    let untouched: Pod = within(client.get(Some("ns"), "status")).await.unwrap();
    assert!(!untouched.metadata.labels.unwrap().contains_key("hit"));

    // A namespace of `..` would leave the namespace; `/` and `%` would add or smuggle segments.
    for (namespace, name) in
        [("..", "a"), ("ns/../other", "a"), ("ns", "a/b"), ("ns", "%2e%2e"), ("ns", ""), ("", "a")]
    {
        let refused = within(client.get::<Pod>(Some(namespace), name)).await.unwrap_err();
        let shown = if namespace == "ns" { name } else { namespace };
        assert!(refused.to_string().contains(&format!("{shown:?}")), "{refused}");
        let refused = within(client.replace(Some(namespace), name, &pod("a"))).await.unwrap_err();
        assert!(refused.to_string().contains(&format!("{shown:?}")), "{refused}");
    }
    let refused = within(client.create(Some(".."), &pod("c"))).await.unwrap_err();
    assert!(refused.to_string().contains(r#"".."#), "{refused}");
    assert_eq!(served().await, 3);
}

/// A burst at start-up shares connections: an informer per namespace lists and watches at once,
/// and a controller's first gets go out together. hyper learns that a connection speaks HTTP/2
/// only once its TLS handshake agreed on it, so each request of the burst dialled its own,
/// keeping one and dropping the rest: about 3,900 TLS handshakes for 2,000 watches where the
/// stream limit asks for 41. Over TLS and HTTP/2, 80 namespaces' lists and watches and 100
/// gets need 3 connections (one for requests, two of 50 watches); a few more are tolerated for
/// a slow machine, where a handshake may outlast the second that requests wait for the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_requests_at_start_up_shares_connections() {
    let namespaces: Vec<String> = (0..80).map(|i| format!("ns-{i:02}")).collect();
    let names: Vec<&str> = namespaces.iter().map(String::as_str).collect();
    let server = ApiServer::builder().tls(true).namespaces(&names).start().await.unwrap();
    let handle = server.handle();
    for namespace in &namespaces {
        let object = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"namespace": namespace, "name": "cm"},
        });
        handle.create(&GroupVersionResource::of::<ConfigMap>(), object).unwrap();
    }
    let mut config = Config::new(server.url().parse().unwrap());
    config.root_certs_pem = server.ca_pem().map(|pem| pem.as_bytes().to_vec());
    let client = Client::new(config).unwrap();

    let gets = futures::future::join_all(
        (0..100).map(|i| client.get::<ConfigMap>(Some(&namespaces[i % 80]), "cm")),
    );
    for got in within(gets).await {
        got.unwrap();
    }
    let factory = SharedInformerFactory::builder(client).namespaces(namespaces.clone()).build();
    let config_maps = factory.informer::<ConfigMap>();
    factory.start();
    let report = factory.wait_for_cache_sync(DEADLINE).await;
    assert!(report.all_synced(), "{report:?}");
    assert_eq!(config_maps.cache().list_keys().len(), 80);

    within(async {
        while handle.open_watches() < 80 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let traffic = handle.traffic();
    assert!(traffic.http2_requests >= 260, "100 gets, 80 lists, 80 watches: {traffic:?}");
    assert!(traffic.tls_connections <= 6, "3 connections are needed: {traffic:?}");
    factory.shutdown().await;
}
