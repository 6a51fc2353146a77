//! The requests beyond get/create/replace/patch/delete, against the embedded API server over
//! HTTP: lists with selectors and pages, the `scale` subresource of a Deployment and of a
//! custom resource, evictions with and without a `PodDisruptionBudget`, and pod logs (tail,
//! byte limit, follow, the bound of `log_text`).

// Every test here runs this crate's own HTTP client (`Client::new`, `Config`), which the
// `http` feature builds.
#![cfg(feature = "http")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::time::Duration;

use embedded_apiserver::ApiServer;
use futures::{StreamExt, TryStreamExt};
use informer_client::{Client, ClientError, Config, LogParams, Patch, PatchParams};
use informer_runtime::listwatch::ListOptions;
use informer_runtime::{GroupVersionResource, impl_resource};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::autoscaling::v1::{Scale, ScaleSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    DeleteOptions, LabelSelector, ObjectMeta, Preconditions,
};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(20);
const NS: &str = "default";

async fn within<F: Future>(fut: F) -> F::Output {
    tokio::time::timeout(DEADLINE, fut).await.expect("deadline exceeded")
}

async fn start() -> (ApiServer, Client) {
    let server = ApiServer::start().await.unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    (server, client)
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn meta(name: &str, pairs: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_owned()), labels: Some(labels(pairs)), ..ObjectMeta::default() }
}

fn config_map(name: &str, tier: &str) -> ConfigMap {
    ConfigMap { metadata: meta(name, &[("tier", tier)]), ..ConfigMap::default() }
}

fn pod(name: &str, containers: &[&str]) -> Pod {
    let containers = containers
        .iter()
        .map(|c| Container {
            name: (*c).to_owned(),
            image: Some("nginx".to_owned()),
            ..Container::default()
        })
        .collect();
    Pod {
        metadata: meta(name, &[("app", "web")]),
        spec: Some(PodSpec { containers, ..PodSpec::default() }),
        ..Pod::default()
    }
}

fn names<K: informer_runtime::Object>(items: &[std::sync::Arc<K>]) -> Vec<String> {
    items.iter().map(|o| o.meta().name.clone().unwrap_or_default()).collect()
}

async fn five_config_maps(client: &Client) {
    for (i, tier) in ["web", "db", "web", "db", "web"].iter().enumerate() {
        client.create(Some(NS), &config_map(&format!("cm-{i}"), tier)).await.unwrap();
    }
}

// Ported from client-go's `tools/pager` `TestListPager_List` (pages walked until the token
// runs out, the same items as one list) against a real server instead of a fake.
#[tokio::test]
async fn pages_of_two_over_five_objects_are_three_pages_with_the_items_of_one_list() {
    let (_server, client) = start().await;
    five_config_maps(&client).await;

    let whole = within(client.list::<ConfigMap>(Some(NS), &ListOptions::default())).await.unwrap();
    assert_eq!(whole.items.len(), 5);
    assert!(whole.continue_token.is_none());

    let options = ListOptions { limit: Some(2), ..ListOptions::default() };
    let pages: Vec<_> =
        within(client.list_pages::<ConfigMap>(Some(NS), &options).try_collect::<Vec<_>>())
            .await
            .unwrap();
    assert_eq!(pages.iter().map(|p| p.items.len()).collect::<Vec<_>>(), [2, 2, 1]);
    assert!(pages[0].continue_token.is_some() && pages[2].continue_token.is_none());
    // Every page reads the snapshot of the first.
    assert!(pages.iter().all(|p| p.resource_version == pages[0].resource_version));
    let paged: Vec<String> = pages.iter().flat_map(|p| names(&p.items)).collect();
    assert_eq!(paged, names(&whole.items));

    let all = within(client.list_all::<ConfigMap>(Some(NS), &options, 5)).await.unwrap();
    assert_eq!(names(&all.items), names(&whole.items));
    assert!(all.continue_token.is_none());
}

// The pages by hand, as client-go's typed `List` with `Limit` and `Continue` is used.
#[tokio::test]
async fn one_page_at_a_time_with_its_continue_token() {
    let (_server, client) = start().await;
    five_config_maps(&client).await;
    let options = ListOptions { limit: Some(3), ..ListOptions::default() };
    let first = within(client.list::<ConfigMap>(Some(NS), &options)).await.unwrap();
    assert_eq!(names(&first.items), ["cm-0", "cm-1", "cm-2"]);
    let token = first.continue_token.clone().expect("a token: more objects follow");
    let next = ListOptions { continue_token: Some(token), ..options };
    let second = within(client.list::<ConfigMap>(Some(NS), &next)).await.unwrap();
    assert_eq!(names(&second.items), ["cm-3", "cm-4"]);
    assert_eq!(second.resource_version, first.resource_version);
    assert!(second.continue_token.is_none());
}

#[tokio::test]
async fn label_and_field_selectors_narrow_the_list() {
    let (_server, client) = start().await;
    five_config_maps(&client).await;
    let web = ListOptions { label_selector: Some("tier=web".into()), ..ListOptions::default() };
    let page = within(client.list::<ConfigMap>(Some(NS), &web)).await.unwrap();
    assert_eq!(names(&page.items), ["cm-0", "cm-2", "cm-4"]);

    let both = ListOptions {
        label_selector: Some("tier in (db)".into()),
        field_selector: Some("metadata.name!=cm-1".into()),
        ..ListOptions::default()
    };
    let page = within(client.list::<ConfigMap>(Some(NS), &both)).await.unwrap();
    assert_eq!(names(&page.items), ["cm-3"]);

    // Paged and selective: the pages hold the matching objects only.
    let paged = ListOptions { limit: Some(1), ..web };
    let all = within(client.list_all::<ConfigMap>(Some(NS), &paged, 10)).await.unwrap();
    assert_eq!(names(&all.items), ["cm-0", "cm-2", "cm-4"]);

    // A selector the server cannot parse: its 400, naming the request.
    let bad = ListOptions { field_selector: Some("data.x=1".into()), ..ListOptions::default() };
    let error = within(client.list::<ConfigMap>(Some(NS), &bad)).await.unwrap_err();
    assert_eq!(error.status().map(|s| s.code), Some(400), "{error}");
    assert!(error.to_string().contains("/api/v1/namespaces/default/configmaps"), "{error}");
}

// client-go's `IsResourceExpired` on a continue token whose snapshot was compacted (the
// `TestListPager_List` expired-token case, and kube-apiserver's etcd3 store behaviour).
#[tokio::test]
async fn a_continue_token_older_than_the_compaction_is_410_expired() {
    let (server, client) = start().await;
    five_config_maps(&client).await;
    let options = ListOptions { limit: Some(2), ..ListOptions::default() };
    let first = within(client.list::<ConfigMap>(Some(NS), &options)).await.unwrap();
    client.create(Some(NS), &config_map("later", "web")).await.unwrap();
    server.compact();

    let next = ListOptions { continue_token: first.continue_token.clone(), ..options.clone() };
    let error = within(client.list::<ConfigMap>(Some(NS), &next)).await.unwrap_err();
    assert!(error.is_resource_expired(), "{error}");
    assert!(!error.is_not_found() && !error.is_conflict());
    assert_eq!(error.status().map(|s| s.code), Some(410));
    assert!(error.to_string().contains("410 Expired"), "{error}");

    // A walk meets it as its last item, and starts again without a token.
    let mut pages = std::pin::pin!(client.list_pages::<ConfigMap>(Some(NS), &next));
    let error = within(pages.next()).await.unwrap().unwrap_err();
    assert!(error.is_resource_expired(), "{error}");
    assert!(within(pages.next()).await.is_none());
    let again = within(client.list_all::<ConfigMap>(Some(NS), &options, 100)).await.unwrap();
    assert_eq!(again.items.len(), 6);
}

#[tokio::test]
async fn list_all_refuses_more_items_than_its_bound() {
    let (_server, client) = start().await;
    five_config_maps(&client).await;
    let options = ListOptions { limit: Some(2), ..ListOptions::default() };
    let error = within(client.list_all::<ConfigMap>(Some(NS), &options, 4)).await.unwrap_err();
    assert!(matches!(error, ClientError::ListTooLarge { max_items: 4, .. }), "{error}");
    assert!(error.to_string().contains("raise max_items"), "{error}");
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    let selector =
        LabelSelector { match_labels: Some(labels(&[("app", name)])), ..Default::default() };
    Deployment {
        metadata: meta(name, &[]),
        spec: DeploymentSpec {
            replicas: Some(replicas),
            selector,
            template: PodTemplateSpec {
                metadata: Some(meta("", &[("app", name)])),
                spec: Some(pod("", &["app"]).spec.unwrap()),
            },
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    }
}

// kube-rs's `Api::get_scale`/`replace_scale`/`patch_scale` and client-go's
// `DeploymentInterface.GetScale`/`UpdateScale` (e2e `test/e2e/apps/deployment.go`,
// "Deployment should have a working scale subresource").
#[tokio::test]
async fn the_scale_of_a_deployment_reads_and_writes_its_replicas() {
    let (_server, client) = start().await;
    let created = client.create(Some(NS), &deployment("web", 2)).await.unwrap();

    let scale = within(client.get_scale::<Deployment>(Some(NS), "web")).await.unwrap();
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(2));
    assert_eq!(scale.status.as_ref().map(|s| s.replicas), Some(0));
    assert_eq!(scale.status.as_ref().and_then(|s| s.selector.as_deref()), Some("app=web"));
    assert_eq!(scale.metadata.resource_version, created.metadata.resource_version);
    assert_eq!(scale.metadata.uid, created.metadata.uid);

    let mut wanted = scale.clone();
    wanted.spec = Some(ScaleSpec { replicas: Some(4) });
    let replaced =
        within(client.replace_scale::<Deployment>(Some(NS), "web", &wanted)).await.unwrap();
    assert_eq!(replaced.spec.and_then(|s| s.replicas), Some(4));
    let stored: Deployment = client.get(Some(NS), "web").await.unwrap();
    assert_eq!(stored.spec.replicas, Some(4));

    // The scale read before is stale now: 409, as an update of the object would be.
    let error =
        within(client.replace_scale::<Deployment>(Some(NS), "web", &wanted)).await.unwrap_err();
    assert!(error.is_conflict(), "{error}");

    let patch = json!({"spec": {"replicas": 1}});
    let patched = within(client.patch_scale::<Deployment>(Some(NS), "web", &patch)).await.unwrap();
    assert_eq!(patched.spec.and_then(|s| s.replicas), Some(1));

    let negative = json!({"spec": {"replicas": -1}});
    let error =
        within(client.patch_scale::<Deployment>(Some(NS), "web", &negative)).await.unwrap_err();
    assert_eq!(error.status().map(|s| s.code), Some(422), "{error}");

    let error = within(client.get_scale::<Deployment>(Some(NS), "missing")).await.unwrap_err();
    assert!(error.is_not_found(), "{error}");
    // ConfigMaps have no scale subresource.
    let error = within(client.get_scale::<ConfigMap>(Some(NS), "web")).await.unwrap_err();
    assert!(error.is_not_found(), "{error}");
}

/// A custom resource with a scale subresource.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Widget {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    spec: serde_json::Value,
}

impl_resource!(
    Widget,
    group = "example.com",
    version = "v1",
    kind = "Widget",
    plural = "widgets",
    namespaced
);

// The apiextensions server's scale of a custom resource (kube-rs's `crd_scale` example and
// apiextensions' `TestScaleSubresource` integration test).
#[tokio::test]
async fn the_scale_of_a_custom_resource_follows_its_crd_paths() {
    let (server, client) = start().await;
    let crds = GroupVersionResource::new("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.size",
                    "statusReplicasPath": ".status.ready",
                    "labelSelectorPath": ".status.selector"}}}]
        }
    });
    server.create(&crds, crd).unwrap();
    let widgets = GroupVersionResource::new("example.com", "v1", "widgets");
    server
        .create(
            &widgets,
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "blue", "namespace": NS}, "spec": {"size": 3}}),
        )
        .unwrap();
    let status = json!({"status": {"ready": 2, "selector": "widget=blue"}});
    let _: Widget = client
        .patch_status(Some(NS), "blue", &Patch::Merge(&status), &PatchParams::default())
        .await
        .unwrap();

    let scale = within(client.get_scale::<Widget>(Some(NS), "blue")).await.unwrap();
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(3));
    assert_eq!(scale.status.as_ref().map(|s| s.replicas), Some(2));
    assert_eq!(scale.status.as_ref().and_then(|s| s.selector.as_deref()), Some("widget=blue"));

    let scale = Scale { spec: Some(ScaleSpec { replicas: Some(7) }), ..scale };
    within(client.replace_scale::<Widget>(Some(NS), "blue", &scale)).await.unwrap();
    let widget: Widget = client.get(Some(NS), "blue").await.unwrap();
    assert_eq!(widget.spec["size"], 7);

    let patched =
        within(client.patch_scale::<Widget>(Some(NS), "blue", &json!({"spec": {"replicas": 0}})))
            .await
            .unwrap();
    assert_eq!(patched.spec.and_then(|s| s.replicas).unwrap_or_default(), 0);
    let widget: Widget = client.get(Some(NS), "blue").await.unwrap();
    assert_eq!(widget.spec["size"], 0);
}

/// A pod that is running and ready, as the kubelet would report it: the eviction checks
/// budgets only for such pods.
async fn running_pod(client: &Client, name: &str) -> Pod {
    client.create(Some(NS), &pod(name, &["app"])).await.unwrap();
    let status = json!({"status": {"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]}});
    client
        .patch_status(Some(NS), name, &Patch::Merge(&status), &PatchParams::default())
        .await
        .unwrap()
}

/// A budget over the `app=web` pods whose controller has seen it, allowing `allowed`
/// disruptions.
async fn budget(client: &Client, allowed: i32) {
    let pdb = PodDisruptionBudget {
        metadata: meta("web-pdb", &[]),
        spec: Some(PodDisruptionBudgetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(labels(&[("app", "web")])),
                ..Default::default()
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        ..PodDisruptionBudget::default()
    };
    client.create(Some(NS), &pdb).await.unwrap();
    let status = json!({"status": {"observedGeneration": 1, "disruptionsAllowed": allowed,
        "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}});
    let _: PodDisruptionBudget = client
        .patch_status(Some(NS), "web-pdb", &Patch::Merge(&status), &PatchParams::default())
        .await
        .unwrap();
}

// kube-rs's `Api::evict` and client-go's `EvictV1`; the cases of kube-apiserver's
// `TestEviction` (pkg/registry/core/pod/storage/eviction_test.go): allowed, blocked by a
// budget with no disruptions left, a missing pod.
#[tokio::test]
async fn an_eviction_deletes_the_pod_when_no_budget_forbids_it() {
    let (_server, client) = start().await;
    running_pod(&client, "web-0").await;
    within(client.evict(NS, "web-0", &DeleteOptions::default())).await.unwrap();
    let error = client.get::<Pod>(Some(NS), "web-0").await.unwrap_err();
    assert!(error.is_not_found(), "{error}");

    let error = within(client.evict(NS, "web-0", &DeleteOptions::default())).await.unwrap_err();
    assert!(error.is_not_found(), "{error}");
}

#[tokio::test]
async fn an_eviction_a_budget_forbids_is_429_and_the_pod_stays() {
    let (_server, client) = start().await;
    let web = running_pod(&client, "web-0").await;
    budget(&client, 0).await;

    let error = within(client.evict(NS, "web-0", &DeleteOptions::default())).await.unwrap_err();
    assert!(error.is_too_many_requests(), "{error}");
    let status = error.status().unwrap();
    assert_eq!(status.message, "Cannot evict pod as it would violate the pod's disruption budget.");
    assert_eq!(status.causes[0].0, "DisruptionBudget");
    assert_eq!(
        status.causes[0].1,
        "The disruption budget web-pdb needs 1 healthy pods and has 1 currently"
    );
    client.get::<Pod>(Some(NS), "web-0").await.unwrap();

    // With a disruption allowed the eviction goes through, and the budget records it.
    let allow = json!({"status": {"disruptionsAllowed": 1}});
    let _: PodDisruptionBudget = client
        .patch_status(Some(NS), "web-pdb", &Patch::Merge(&allow), &PatchParams::default())
        .await
        .unwrap();
    // A precondition on the pod's UID holds (its own), so the delete goes through.
    let options = DeleteOptions {
        preconditions: Some(Preconditions {
            uid: web.metadata.uid.clone(),
            ..Preconditions::default()
        }),
        ..DeleteOptions::default()
    };
    within(client.evict(NS, "web-0", &options)).await.unwrap();
    assert!(client.get::<Pod>(Some(NS), "web-0").await.unwrap_err().is_not_found());
    let pdb: PodDisruptionBudget = client.get(Some(NS), "web-pdb").await.unwrap();
    let status = pdb.status.unwrap();
    assert_eq!(status.disruptions_allowed, Some(0));
    assert!(status.disrupted_pods.unwrap_or_default().contains_key("web-0"));
}

#[tokio::test]
async fn a_pending_pod_is_evicted_whatever_its_budget_says() {
    let (_server, client) = start().await;
    client.create(Some(NS), &pod("web-0", &["app"])).await.unwrap();
    budget(&client, 0).await;
    within(client.evict(NS, "web-0", &DeleteOptions::default())).await.unwrap();
    assert!(client.get::<Pod>(Some(NS), "web-0").await.unwrap_err().is_not_found());
}

async fn read_all(client: &Client, pod: &str, params: &LogParams) -> String {
    let log = within(client.logs(NS, pod, params)).await.unwrap();
    let chunks: Vec<_> = within(log.try_collect::<Vec<_>>()).await.unwrap();
    String::from_utf8(chunks.concat()).unwrap()
}

// kube-rs's `Api::logs`/`log_stream` with `LogParams`, and the kubelet's tail and byte limit
// as kubectl's `logs --tail --limit-bytes` exercise them.
#[tokio::test]
async fn logs_with_tail_lines_and_limit_bytes() {
    let (server, client) = start().await;
    client.create(Some(NS), &pod("web-0", &["app"])).await.unwrap();
    server.append_pod_log(NS, "web-0", "app", "one\ntwo\nthree\n").unwrap();

    assert_eq!(read_all(&client, "web-0", &LogParams::default()).await, "one\ntwo\nthree\n");
    let tail = LogParams::default().tail_lines(2);
    assert_eq!(read_all(&client, "web-0", &tail).await, "two\nthree\n");
    let limited = LogParams::default().limit_bytes(6);
    assert_eq!(read_all(&client, "web-0", &limited).await, "one\ntw");
    let stamped =
        read_all(&client, "web-0", &LogParams::default().timestamps(true).tail_lines(1)).await;
    let (stamp, line) = stamped.split_once(' ').unwrap();
    assert!(stamp.ends_with('Z') && stamp.contains('T'), "{stamped}");
    assert_eq!(line, "three\n");

    // The text convenience, and its bound.
    let text = within(client.log_text(NS, "web-0", &LogParams::default(), 100)).await.unwrap();
    assert_eq!(text, "one\ntwo\nthree\n");
    let error = within(client.log_text(NS, "web-0", &LogParams::default(), 5)).await.unwrap_err();
    assert!(matches!(error, ClientError::LogTooLarge { max_bytes: 5, .. }), "{error}");
    assert!(error.to_string().contains("raise max_bytes"), "{error}");
}

// kube-apiserver's `LogLocation` checks: 404 for a missing pod, 400 for an unknown container
// or a missing container name in a pod with several, 422 for invalid options.
#[tokio::test]
async fn log_requests_the_api_server_refuses() {
    let (_server, client) = start().await;
    client.create(Some(NS), &pod("two", &["app", "sidecar"])).await.unwrap();

    let error = within(client.logs(NS, "missing", &LogParams::default())).await.unwrap_err();
    assert!(error.is_not_found(), "{error}");
    let error =
        within(client.logs(NS, "two", &LogParams::default().container("nope"))).await.unwrap_err();
    let status = error.status().unwrap();
    assert_eq!(
        (status.code, status.message.as_str()),
        (400, "container nope is not valid for pod two")
    );
    let error = within(client.logs(NS, "two", &LogParams::default())).await.unwrap_err();
    assert_eq!(
        error.status().unwrap().message,
        "a container name must be specified for pod two, choose one of: [app sidecar]"
    );
    let error =
        within(client.logs(NS, "two", &LogParams::default().container("app").tail_lines(-1)))
            .await
            .unwrap_err();
    assert_eq!(error.status().map(|s| s.code), Some(422), "{error}");
    // A named container of several is served.
    let log =
        within(client.logs(NS, "two", &LogParams::default().container("sidecar"))).await.unwrap();
    assert!(within(log.try_collect::<Vec<_>>()).await.unwrap().is_empty());
}

// kubectl's `logs -f`: what is there, then what is appended, until the pod goes.
#[tokio::test]
async fn a_followed_log_streams_appended_text_until_the_pod_is_deleted() {
    let (server, client) = start().await;
    client.create(Some(NS), &pod("web-0", &["app"])).await.unwrap();
    server.append_pod_log(NS, "web-0", "app", "old\nstarted\n").unwrap();

    let params = LogParams::default().follow(true).tail_lines(1);
    let mut log = within(client.logs(NS, "web-0", &params)).await.unwrap();
    let mut seen = String::new();
    while !seen.ends_with("started\n") {
        let chunk = within(log.next()).await.unwrap().unwrap();
        seen.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert_eq!(seen, "started\n");

    server.append_pod_log(NS, "web-0", "app", "serving").unwrap();
    server.append_pod_log(NS, "web-0", "app", " requests\n").unwrap();
    while !seen.ends_with("requests\n") {
        let chunk = within(log.next()).await.unwrap().unwrap();
        seen.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert_eq!(seen, "started\nserving requests\n");

    client.delete::<Pod>(Some(NS), "web-0").await.unwrap();
    assert!(within(log.next()).await.is_none(), "the stream ends with the pod");
}

// A followed log's byte limit ends it, as the kubelet's `limitBytes` does.
#[tokio::test]
async fn a_followed_log_ends_at_its_byte_limit() {
    let (server, client) = start().await;
    client.create(Some(NS), &pod("web-0", &["app"])).await.unwrap();
    server.append_pod_log(NS, "web-0", "app", "abc\n").unwrap();
    let params = LogParams::default().follow(true).limit_bytes(6);
    let log = within(client.logs(NS, "web-0", &params)).await.unwrap();
    server.append_pod_log(NS, "web-0", "app", "defgh\n").unwrap();
    let chunks: Vec<_> = within(log.try_collect::<Vec<_>>()).await.unwrap();
    assert_eq!(chunks.concat(), b"abc\nde");
}

// `TestEviction`'s budget whose controller has not caught up (`observedGeneration` behind
// `generation`): 429 with a 10 second retry, which `kubectl drain` waits out.
#[tokio::test]
async fn a_budget_its_controller_has_not_seen_asks_to_retry_in_ten_seconds() {
    let (_server, client) = start().await;
    running_pod(&client, "web-0").await;
    let pdb = PodDisruptionBudget {
        metadata: meta("fresh-pdb", &[]),
        spec: Some(PodDisruptionBudgetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(labels(&[("app", "web")])),
                ..Default::default()
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        ..PodDisruptionBudget::default()
    };
    client.create(Some(NS), &pdb).await.unwrap();
    let error = within(client.evict(NS, "web-0", &DeleteOptions::default())).await.unwrap_err();
    assert!(error.is_too_many_requests(), "{error}");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(10)));
    assert_eq!(
        error.status().unwrap().causes[0].1,
        "The disruption budget fresh-pdb is still being processed by the server."
    );
    client.get::<Pod>(Some(NS), "web-0").await.unwrap();
}

// `TestEvictionPDBStatus`'s two matching budgets: the server cannot tell which to honour.
#[tokio::test]
async fn a_pod_two_budgets_select_cannot_be_evicted() {
    let (_server, client) = start().await;
    running_pod(&client, "web-0").await;
    budget(&client, 1).await;
    let mut second: PodDisruptionBudget = client.get(Some(NS), "web-pdb").await.unwrap();
    second.metadata = meta("other-pdb", &[]);
    second.status = None;
    client.create(Some(NS), &second).await.unwrap();
    let error = within(client.evict(NS, "web-0", &DeleteOptions::default())).await.unwrap_err();
    let status = error.status().unwrap();
    assert_eq!(status.code, 500, "{error}");
    assert!(status.message.contains("more than one PodDisruptionBudget"), "{error}");
}

#[tokio::test]
async fn a_scale_for_another_object_is_refused() {
    let (_server, client) = start().await;
    client.create(Some(NS), &deployment("web", 1)).await.unwrap();
    client.create(Some(NS), &deployment("api", 1)).await.unwrap();
    let scale = client.get_scale::<Deployment>(Some(NS), "api").await.unwrap();
    let error =
        within(client.replace_scale::<Deployment>(Some(NS), "web", &scale)).await.unwrap_err();
    assert_eq!(error.status().map(|s| s.code), Some(400), "{error}");
    assert!(error.to_string().contains("does not match the name on the URL"), "{error}");
}
