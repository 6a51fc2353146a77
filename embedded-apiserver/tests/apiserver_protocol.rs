//! The embedded API server's wire protocol, over real HTTP: discovery, CRUD and error bodies,
//! lists (pagination, continue expiry, resourceVersion rules, paged cached lists, selectors),
//! watches (event sequence, bookmarks, streaming lists, 410 ERROR events), tables, CRDs and
//! every fault.
//!
//! Nothing sleeps to let things settle: every wait is for an event or a condition, bounded by
//! a deadline.

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use embedded_apiserver::testing::{WatchLines, crontab_crd};
use embedded_apiserver::{ApiServer, Config, Failure};
use informer_runtime::GroupVersionResource;
use serde_json::{Value, json};
use support::{open_watches, start};

/// How long any single wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(10);
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
const PODS: &str = "/api/v1/namespaces/default/pods";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

struct Client {
    http: reqwest::Client,
    base: String,
}

struct Reply {
    status: u16,
    retry_after: Option<String>,
    content_type: String,
    body: Value,
}

impl Client {
    fn new(server: &ApiServer) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder().build().expect("an HTTP client");
        Self { http, base: server.url() }
    }

    async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("a method");
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.body(body.to_string());
        }
        let response = tokio::time::timeout(DEADLINE, request.send())
            .await
            .expect("a timely answer")
            .expect("an answer");
        let status = response.status().as_u16();
        let header = |name: &str| {
            response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
        };
        let retry_after = header("retry-after");
        let content_type = header("content-type").unwrap_or_default();
        let bytes = response.bytes().await.expect("a body");
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
        Reply { status, retry_after, content_type, body }
    }

    async fn get(&self, path: &str) -> Reply {
        self.request("GET", path, &[], None).await
    }

    async fn post(&self, path: &str, body: &Value) -> Reply {
        self.request("POST", path, &[("content-type", "application/json")], Some(body)).await
    }

    async fn put(&self, path: &str, body: &Value) -> Reply {
        self.request("PUT", path, &[("content-type", "application/json")], Some(body)).await
    }

    async fn patch(&self, path: &str, content_type: &str, body: &Value) -> Reply {
        self.request("PATCH", path, &[("content-type", content_type)], Some(body)).await
    }

    async fn delete(&self, path: &str) -> Reply {
        self.request("DELETE", path, &[], None).await
    }

    async fn watch(&self, path: &str, accept: Option<&str>) -> Watch {
        let mut request = self.http.get(format!("{}{path}", self.base));
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        let response = tokio::time::timeout(DEADLINE, request.send())
            .await
            .expect("a timely answer")
            .expect("an answer");
        let status = response.status().as_u16();
        Watch { status, lines: WatchLines::new(response.bytes_stream()) }
    }
}

/// An open watch: newline-delimited events.
struct Watch {
    status: u16,
    lines: WatchLines,
}

impl Watch {
    /// The next event, or `None` when the server ended the watch; fails after the deadline.
    async fn next(&mut self) -> Option<Value> {
        tokio::time::timeout(DEADLINE, self.next_event())
            .await
            .expect("a watch event (or the end) within the deadline")
    }

    async fn next_event(&mut self) -> Option<Value> {
        let line = self.lines.next_line().await?;
        // Clients may read kube-apiserver's layout fastest (this crate's does).
        assert!(
            line.starts_with(br#"{"type":""#),
            "an event starts with its type, as kube-apiserver writes it: {}",
            String::from_utf8_lossy(&line)
        );
        Some(serde_json::from_slice(&line).expect("each line is one JSON event"))
    }

    /// `TYPE name@rv` of the next event.
    async fn next_summary(&mut self) -> String {
        summary(&self.next().await.expect("an event, not the end"))
    }

    /// Whether nothing arrives for `quiet` (the server must stay silent, not end the watch).
    async fn stays_silent(&mut self, quiet: Duration) -> bool {
        tokio::time::timeout(quiet, self.next_event()).await.is_err()
    }
}

fn summary(event: &Value) -> String {
    let object = &event["object"];
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let rv = object["metadata"]["resourceVersion"].as_str().unwrap_or_default();
    format!("{} {name}@{rv}", event["type"].as_str().unwrap_or_default())
}

fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion")
        .parse()
        .expect("a number")
}

fn names(list: &Value) -> Vec<String> {
    let items = list["items"].as_array().expect("items");
    items.iter().map(|i| i["metadata"]["name"].as_str().unwrap_or_default().to_owned()).collect()
}

fn pod(name: &str, labels: &Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}})
}

#[tokio::test]
async fn discovery_documents_are_complete_enough_for_kubectl() {
    let server = start().await;
    let api = Client::new(&server);
    let version = api.get("/version").await;
    assert_eq!(
        (version.status, version.body["major"].as_str(), version.body["minor"].as_str()),
        (200, Some("1"), Some("32"))
    );
    let core = api.get("/api").await.body;
    assert_eq!(
        (core["kind"].as_str(), core["versions"].clone()),
        (Some("APIVersions"), json!(["v1"]))
    );
    let groups = api.get("/apis").await.body;
    assert_eq!(groups["kind"], "APIGroupList");
    let group_names: Vec<&str> =
        groups["groups"].as_array().unwrap().iter().filter_map(|g| g["name"].as_str()).collect();
    for group in
        ["apps", "batch", "coordination.k8s.io", "discovery.k8s.io", "apiextensions.k8s.io"]
    {
        assert!(group_names.contains(&group), "{group} in {group_names:?}");
    }
    let v1 = api.get("/api/v1").await.body;
    assert_eq!(
        (v1["kind"].as_str(), v1["groupVersion"].as_str()),
        (Some("APIResourceList"), Some("v1"))
    );
    let find = |list: &Value, name: &str| {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_default()
    };
    let pods = find(&v1, "pods");
    assert_eq!(
        (
            pods["kind"].as_str(),
            pods["singularName"].as_str(),
            pods["namespaced"].as_bool(),
            pods["shortNames"].clone()
        ),
        (Some("Pod"), Some("pod"), Some(true), json!(["po"]))
    );
    assert_eq!(
        pods["verbs"],
        json!(["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"])
    );
    assert_eq!(find(&v1, "namespaces")["namespaced"], false);
    assert_eq!(find(&v1, "pods/status")["verbs"], json!(["get", "patch", "update"]));
    for name in [
        "configmaps",
        "secrets",
        "services",
        "serviceaccounts",
        "nodes",
        "events",
        "endpoints",
        "persistentvolumes",
        "persistentvolumeclaims",
    ] {
        assert!(find(&v1, name).is_object(), "{name} is served");
    }
    let apps = api.get("/apis/apps/v1").await.body;
    assert_eq!(find(&apps, "deployments")["shortNames"], json!(["deploy"]));
    assert_eq!(api.get("/apis/apps").await.body["preferredVersion"]["groupVersion"], "apps/v1");
    let crds = api.get("/apis/apiextensions.k8s.io/v1").await.body;
    assert_eq!(find(&crds, "customresourcedefinitions")["shortNames"], json!(["crd", "crds"]));

    let index = api.get("/openapi/v3").await.body;
    let url = index["paths"]["apis/batch/v1"]["serverRelativeURL"]
        .as_str()
        .expect("batch/v1 in the OpenAPI index")
        .to_owned();
    let doc = api.get(&url).await.body;
    let patch = &doc["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "batch", "version": "v1", "kind": "Job"})
    );
    assert!(
        patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
    );

    // Aggregated discovery is not served: the legacy document comes back as plain JSON.
    let aggregated =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let reply = api.request("GET", "/apis", &[("accept", aggregated)], None).await;
    assert_eq!(
        (reply.content_type.as_str(), reply.body["kind"].as_str()),
        ("application/json", Some("APIGroupList"))
    );

    assert_eq!(api.get("/healthz").await.body, "ok");
    server.shutdown().await.unwrap();
}

/// Discovery as kube-apiserver 1.37 answers it (found by the workspace's conformance suite):
/// unknown groups, the core group's resource list, the verbs of namespaces.
#[tokio::test]
async fn discovery_edges_match_kube_apiserver() {
    let server = start().await;
    let api = Client::new(&server);
    let v1 = api.get("/api/v1").await.body;
    let find = |list: &Value, name: &str| {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_default()
    };
    // An unknown group is outside every API handler: the HTTP mux's plain-text 404.
    let missing = api.get("/apis/nope.example.com/v1/things").await;
    assert_eq!(
        (missing.status, missing.content_type.as_str(), missing.body.as_str()),
        (404, "text/plain; charset=utf-8", Some("404 page not found\n"))
    );
    // An unknown resource of a served group version is the group's handler's `Status`.
    let unknown = api.get("/apis/apps/v1/things").await;
    assert_eq!(unknown.body["message"], "the server could not find the requested resource");
    assert_eq!(
        find(&v1, "namespaces")["verbs"],
        json!(["create", "delete", "get", "list", "patch", "update", "watch"]),
        "namespaces cannot be deleted as a collection"
    );
    assert!(v1.get("apiVersion").is_none(), "the core group's list has no apiVersion");
    let groups = api.get("/apis").await.body;
    let order: Vec<&str> =
        groups["groups"].as_array().unwrap().iter().filter_map(|g| g["name"].as_str()).collect();
    assert_eq!(
        order,
        [
            "apps",
            "events.k8s.io",
            "policy",
            "batch",
            "admissionregistration.k8s.io",
            "apiextensions.k8s.io",
            "coordination.k8s.io",
            "discovery.k8s.io"
        ],
        "kube-aggregator's priority order"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn crud_with_the_api_servers_status_bodies() {
    let server = start().await;
    let api = Client::new(&server);
    let created = api.post(PODS, &pod("web-0", &json!({"app": "web"}))).await;
    assert_eq!(created.status, 201);
    let web = created.body;
    assert_eq!(web["metadata"]["uid"].as_str().map(str::len), Some(36));
    assert!(web["metadata"]["creationTimestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert_eq!(
        (web["metadata"]["namespace"].as_str(), rv(&web)),
        (Some("default"), server.resource_version())
    );

    let again = api.post(PODS, &pod("web-0", &json!({}))).await;
    assert_eq!(again.status, 409);
    assert_eq!(
        again.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "pods \"web-0\" already exists", "reason": "AlreadyExists",
               "details": {"name": "web-0", "kind": "pods"}, "code": 409})
    );
    let missing = api.get(&format!("{PODS}/nope")).await;
    assert_eq!(
        (
            missing.status,
            missing.body["reason"].as_str(),
            missing.body["message"].as_str(),
            missing.body["details"].clone()
        ),
        (
            404,
            Some("NotFound"),
            Some("pods \"nope\" not found"),
            json!({"name": "nope", "kind": "pods"})
        )
    );
    let deployment_missing = api.get("/apis/apps/v1/namespaces/default/deployments/x").await;
    assert_eq!(deployment_missing.body["message"], "deployments.apps \"x\" not found");
    assert_eq!(deployment_missing.body["details"]["group"], "apps");

    // Optimistic concurrency.
    let mut stale = web.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    let conflict = api.put(&format!("{PODS}/web-0"), &stale).await;
    assert_eq!((conflict.status, conflict.body["reason"].as_str()), (409, Some("Conflict")));
    assert_eq!(
        conflict.body["message"],
        "Operation cannot be fulfilled on pods \"web-0\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let mut fresh = web.clone();
    fresh["metadata"]["labels"]["tier"] = json!("front");
    let updated = api.put(&format!("{PODS}/web-0"), &fresh).await;
    assert_eq!((updated.status, rv(&updated.body)), (200, rv(&web) + 1));
    assert_eq!(updated.body["metadata"]["uid"], web["metadata"]["uid"]);

    // Patches.
    let merged = api
        .patch(
            &format!("{PODS}/web-0"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"tier": null, "x": "1"}}}),
        )
        .await;
    assert_eq!(merged.body["metadata"]["labels"], json!({"app": "web", "x": "1"}));
    let strategic = json!({"spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let smp = api
        .patch(&format!("{PODS}/web-0"), "application/strategic-merge-patch+json", &strategic)
        .await;
    assert_eq!(smp.body["spec"]["containers"], json!([{"name": "c", "image": "nginx"}]));
    let json_patch = json!([{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]);
    let patched =
        api.patch(&format!("{PODS}/web-0"), "application/json-patch+json", &json_patch).await;
    assert_eq!(patched.body["metadata"]["annotations"], json!({"a": "b"}));
    let unchanged = api
        .patch(
            &format!("{PODS}/web-0"),
            "application/merge-patch+json",
            &json!({"metadata": {"annotations": {"a": "b"}}}),
        )
        .await;
    assert_eq!(
        rv(&unchanged.body),
        rv(&patched.body),
        "a no-op patch takes no new resourceVersion"
    );
    let unsupported = api.patch(&format!("{PODS}/web-0"), "text/plain", &json!({})).await;
    assert_eq!(
        (unsupported.status, unsupported.body["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );

    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn names_scopes_and_delete_responses() {
    let server = start().await;
    let api = Client::new(&server);
    let web = api.post(PODS, &pod("web-0", &json!({"app": "web"}))).await.body;
    // generateName, namespaces from the path, one resourceVersion for all types.
    let generated = api.post(CONFIGMAPS, &json!({"metadata": {"generateName": "cfg-"}})).await.body;
    let generated_name = generated["metadata"]["name"].as_str().unwrap();
    assert!(generated_name.starts_with("cfg-") && generated_name.len() == 9, "{generated_name}");
    assert_eq!(rv(&generated), rv(&web) + 1, "one counter across types");
    let wrong_ns =
        api.post(CONFIGMAPS, &json!({"metadata": {"name": "x", "namespace": "other"}})).await;
    assert_eq!(wrong_ns.status, 400);
    let invalid = api.post(CONFIGMAPS, &json!({"metadata": {"name": "Not_Valid"}})).await;
    assert_eq!((invalid.status, invalid.body["reason"].as_str()), (422, Some("Invalid")));
    let no_name = api.post(CONFIGMAPS, &json!({"metadata": {}})).await;
    assert_eq!(
        no_name.body["message"],
        "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );

    // Cluster-scoped objects, and lists across namespaces.
    let ns = api.post("/api/v1/namespaces", &json!({"metadata": {"name": "team-a"}})).await;
    assert_eq!((ns.status, ns.body["status"]["phase"].as_str()), (201, Some("Active")));
    api.post("/api/v1/namespaces/team-a/pods", &pod("web-1", &json!({}))).await;
    let all = api.get("/api/v1/pods").await.body;
    assert_eq!(names(&all), ["web-0", "web-1"]);
    assert_eq!(all["kind"], "PodList");
    assert!(all["items"][0].get("kind").is_none(), "typed lists carry no kind on items");
    assert_eq!(api.post("/api/v1/pods", &pod("x", &json!({}))).await.status, 405);

    // Delete: pods answer with the object, configmaps with a Status.
    let deleted = api.delete(&format!("{PODS}/web-0")).await;
    assert_eq!((deleted.status, deleted.body["kind"].as_str()), (200, Some("Pod")));
    assert_eq!(rv(&deleted.body), server.resource_version());
    let status = api.delete(&format!("{CONFIGMAPS}/{generated_name}")).await.body;
    assert_eq!(
        (status["kind"].as_str(), status["status"].as_str()),
        (Some("Status"), Some("Success"))
    );
    assert_eq!(status["details"]["name"], generated_name);
    assert_eq!(api.delete(&format!("{PODS}/web-0")).await.status, 404);
    // Deleting a namespace deletes what is in it.
    api.delete("/api/v1/namespaces/team-a").await;
    assert!(names(&api.get("/api/v1/pods").await.body).is_empty());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn list_pages_share_one_snapshot_and_continue_tokens_expire_after_compaction() {
    let server = start().await;
    let api = Client::new(&server);
    for name in ["e", "b", "d", "a", "c"] {
        api.post(CONFIGMAPS, &configmap(name)).await;
    }
    let first = api.get(&format!("{CONFIGMAPS}?limit=2")).await.body;
    assert_eq!(names(&first), ["a", "b"]);
    assert_eq!(first["metadata"]["remainingItemCount"], 3);
    let list_rv = first["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let token = first["metadata"]["continue"].as_str().expect("a continue token").to_owned();

    // Changes after the first page do not show on the next ones.
    api.post(CONFIGMAPS, &configmap("bb")).await;
    api.delete(&format!("{CONFIGMAPS}/d")).await;
    let second = api.get(&format!("{CONFIGMAPS}?limit=2&continue={token}")).await.body;
    assert_eq!(names(&second), ["c", "d"]);
    assert_eq!(second["metadata"]["resourceVersion"], list_rv.as_str());
    let token2 = second["metadata"]["continue"].as_str().unwrap().to_owned();
    let third = api.get(&format!("{CONFIGMAPS}?limit=2&continue={token2}")).await.body;
    assert_eq!(names(&third), ["e"]);
    assert!(third["metadata"].get("continue").is_none(), "no token after the last page");

    let with_rv =
        api.get(&format!("{CONFIGMAPS}?limit=2&continue={token}&resourceVersion=3")).await;
    assert_eq!(
        with_rv.body["message"],
        "specifying resource version is not allowed when using continue"
    );
    assert_eq!(api.get(&format!("{CONFIGMAPS}?continue=garbage")).await.status, 400);

    server.compact();
    let expired = api.get(&format!("{CONFIGMAPS}?limit=2&continue={token}")).await;
    assert_eq!((expired.status, expired.body["reason"].as_str()), (410, Some("Expired")));
    assert_eq!(
        expired.body["message"],
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."
    );
    // The token in the 410 resumes from the current state.
    let resume = expired.body["metadata"]["continue"].as_str().expect("a resume token").to_owned();
    let resumed = api.get(&format!("{CONFIGMAPS}?limit=10&continue={resume}")).await.body;
    assert_eq!(names(&resumed), ["bb", "c", "e"]);
    assert_eq!(resumed["metadata"]["resourceVersion"], server.resource_version().to_string());
    server.shutdown().await.unwrap();
}

/// Lists `path` page by page (`query` on the first request, `limit=2` on every one), as a
/// client's pager does: the continuations carry no resourceVersion. Returns the pages.
async fn pages(api: &Client, path: &str, query: &str) -> Vec<Value> {
    let mut pages = vec![api.get(&format!("{path}?{query}&limit=2")).await.body];
    while let Some(token) = pages.last().and_then(|p| p["metadata"]["continue"].as_str()) {
        assert!(pages.len() < 10, "the pages end");
        let next = api.get(&format!("{path}?limit=2&continue={token}")).await.body;
        pages.push(next);
    }
    pages
}

#[tokio::test]
async fn cached_lists_are_paged_only_when_the_server_paginates_them() {
    let server = Config::default()
        .bookmark_interval(None)
        .paginate_cached_lists(true)
        .start()
        .await
        .unwrap();
    let api = Client::new(&server);
    for name in ["e", "b", "d", "a", "c"] {
        api.post(CONFIGMAPS, &configmap(name)).await;
    }
    let list_rv = server.resource_version().to_string();

    // Three pages of the five objects, at one version, under either match.
    for query in ["resourceVersion=0", "resourceVersion=0&resourceVersionMatch=NotOlderThan"] {
        let all = pages(&api, CONFIGMAPS, query).await;
        let sizes: Vec<usize> = all.iter().map(|p| names(p).len()).collect();
        assert_eq!(sizes, [2, 2, 1], "{query}");
        assert_eq!(all.iter().flat_map(names).collect::<Vec<_>>(), ["a", "b", "c", "d", "e"]);
        assert!(all.iter().all(|p| p["metadata"]["resourceVersion"] == list_rv.as_str()));
        assert_eq!(all[0]["metadata"]["remainingItemCount"], 3);
    }

    // The next pages read the first one's snapshot, whatever changed meanwhile: the token
    // carries the first page's version, as the API server's do.
    let first = api.get(&format!("{CONFIGMAPS}?resourceVersion=0&limit=2")).await.body;
    let token = first["metadata"]["continue"].as_str().expect("a continue token").to_owned();
    api.post(CONFIGMAPS, &configmap("bb")).await;
    api.delete(&format!("{CONFIGMAPS}/d")).await;
    let second = api.get(&format!("{CONFIGMAPS}?limit=2&continue={token}")).await.body;
    assert_eq!(names(&second), ["c", "d"]);
    assert_eq!(second["metadata"]["resourceVersion"], list_rv.as_str());
    // kube-apiserver allows "0" beside a continue token: the same page.
    let kept = api.get(&format!("{CONFIGMAPS}?resourceVersion=0&limit=2&continue={token}")).await;
    assert_eq!(names(&kept.body), ["c", "d"]);
    // A new list starts at the new version.
    let again = pages(&api, CONFIGMAPS, "resourceVersion=0").await;
    assert_eq!(again.iter().flat_map(names).collect::<Vec<_>>(), ["a", "b", "bb", "c", "e"]);
    let now = server.resource_version().to_string();
    assert!(again.iter().all(|p| p["metadata"]["resourceVersion"] == now.as_str()));
    // Without a limit, still one body.
    let whole = api.get(&format!("{CONFIGMAPS}?resourceVersion=0")).await.body;
    assert_eq!((names(&whole).len(), whole["metadata"].get("continue")), (5, None));

    // Switched off on the running server: one page again, the limit ignored.
    server.set_paginate_cached_lists(false);
    let one = pages(&api, CONFIGMAPS, "resourceVersion=0").await;
    assert_eq!(one.len(), 1);
    assert_eq!(names(&one[0]), ["a", "b", "bb", "c", "e"]);
    server.set_paginate_cached_lists(true);
    assert_eq!(pages(&api, CONFIGMAPS, "resourceVersion=0").await.len(), 3);
    // Their tokens expire with compaction, as every continue token does.
    server.compact();
    let expired = api.get(&format!("{CONFIGMAPS}?limit=2&continue={token}")).await;
    assert_eq!((expired.status, expired.body["reason"].as_str()), (410, Some("Expired")));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn cached_lists_ignore_the_limit_by_default() {
    let server = start().await;
    let api = Client::new(&server);
    for name in ["e", "b", "d", "a", "c"] {
        api.post(CONFIGMAPS, &configmap(name)).await;
    }
    for query in ["resourceVersion=0", "resourceVersion=0&resourceVersionMatch=NotOlderThan"] {
        let all = pages(&api, CONFIGMAPS, query).await;
        assert_eq!(all.len(), 1, "{query}");
        assert_eq!(names(&all[0]), ["a", "b", "c", "d", "e"]);
        assert_eq!(all[0]["metadata"]["resourceVersion"], server.resource_version().to_string());
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn resource_version_semantics_of_lists_and_gets() {
    let server = start().await;
    let api = Client::new(&server);
    let a = api.post(CONFIGMAPS, &configmap("a")).await.body;
    api.post(CONFIGMAPS, &configmap("b")).await;
    let mut changed = a.clone();
    changed["data"]["k"] = json!("changed");
    api.put(&format!("{CONFIGMAPS}/a"), &changed).await;
    let current = server.resource_version();

    // "0": any version, from the watch cache, which ignores the limit.
    let any = api.get(&format!("{CONFIGMAPS}?resourceVersion=0&limit=1")).await.body;
    assert_eq!((names(&any).len(), any["metadata"].get("continue")), (2, None));
    // Exact: the state at that version.
    let exact = api
        .get(&format!("{CONFIGMAPS}?resourceVersion={}&resourceVersionMatch=Exact", rv(&a)))
        .await
        .body;
    assert_eq!(names(&exact), ["a"]);
    assert_eq!(
        (exact["items"][0]["data"]["k"].as_str(), exact["metadata"]["resourceVersion"].as_str()),
        (Some("a"), Some(rv(&a).to_string().as_str()))
    );
    // NotOlderThan: the current state.
    let not_older = api
        .get(&format!("{CONFIGMAPS}?resourceVersion={}&resourceVersionMatch=NotOlderThan", rv(&a)))
        .await
        .body;
    assert_eq!(not_older["metadata"]["resourceVersion"], current.to_string());
    // Too new: 504 with the ResourceVersionTooLarge cause.
    let future = current + 10;
    let too_large = api
        .get(&format!("{CONFIGMAPS}?resourceVersion={future}&resourceVersionMatch=NotOlderThan"))
        .await;
    assert_eq!((too_large.status, too_large.body["reason"].as_str()), (504, Some("Timeout")));
    assert_eq!(
        too_large.body["message"],
        format!("Timeout: Too large resource version: {future}, current: {current}")
    );
    assert_eq!(
        too_large.body["details"]["causes"][0],
        json!({"reason": "ResourceVersionTooLarge", "message": "Too large resource version"})
    );
    assert_eq!(api.get(&format!("{CONFIGMAPS}/a?resourceVersion={future}")).await.status, 504);
    // Validation as ValidateListOptions.
    let invalid = api.get(&format!("{CONFIGMAPS}?resourceVersionMatch=Exact")).await;
    assert_eq!((invalid.status, invalid.body["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(api.get(&format!("{CONFIGMAPS}?resourceVersion=abc")).await.status, 400);
    // Compacted: exact reads of older versions expire.
    server.compact();
    let expired = api
        .get(&format!("{CONFIGMAPS}?resourceVersion={}&resourceVersionMatch=Exact", rv(&a)))
        .await;
    assert_eq!(
        (expired.status, expired.body["message"].as_str()),
        (410, Some("The resourceVersion for the provided list is too old."))
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn label_and_field_selectors() {
    let server = start().await;
    let api = Client::new(&server);
    api.post(PODS, &pod("web-0", &json!({"app": "web", "tier": "front"}))).await;
    api.post(PODS, &pod("web-1", &json!({"app": "web", "tier": "edge"}))).await;
    api.post(PODS, &pod("db-0", &json!({"app": "db"}))).await;
    api.post("/api/v1/namespaces/other/pods", &pod("web-0", &json!({"app": "web"}))).await;
    let select = |query: &str| format!("{PODS}?{query}");
    assert_eq!(names(&api.get(&select("labelSelector=app%3Dweb")).await.body), ["web-0", "web-1"]);
    assert_eq!(names(&api.get(&select("labelSelector=tier+in+(edge,x)")).await.body), ["web-1"]);
    assert_eq!(names(&api.get(&select("labelSelector=!tier")).await.body), ["db-0"]);
    assert_eq!(names(&api.get(&select("labelSelector=app!%3Dweb")).await.body), ["db-0"]);
    assert_eq!(
        names(&api.get(&select("fieldSelector=metadata.name%3Dweb-1")).await.body),
        ["web-1"]
    );
    assert_eq!(
        names(
            &api.get(&select("fieldSelector=metadata.name!%3Dweb-1,metadata.name!%3Ddb-0"))
                .await
                .body
        ),
        ["web-0"]
    );
    let across = api.get("/api/v1/pods?fieldSelector=metadata.namespace%3D%3Dother").await.body;
    assert_eq!(
        (names(&across), across["items"][0]["metadata"]["namespace"].as_str()),
        (vec!["web-0".to_owned()], Some("other"))
    );
    assert_eq!(names(&api.get(&select("fieldSelector=spec.nodeName%3D")).await.body).len(), 3);
    let bad_labels = api.get(&select("labelSelector=app+in+(web")).await;
    assert_eq!((bad_labels.status, bad_labels.body["reason"].as_str()), (400, Some("BadRequest")));
    let bad_field = api.get(&select("fieldSelector=spec.unknown%3Dx")).await;
    assert_eq!(
        (bad_field.status, bad_field.body["message"].as_str()),
        (400, Some("field label not supported: spec.unknown"))
    );
    // deletecollection honours selectors.
    let deleted = api.request("DELETE", &select("labelSelector=app%3Dweb"), &[], None).await.body;
    assert_eq!(names(&deleted), ["web-0", "web-1"]);
    assert_eq!(names(&api.get(PODS).await.body), ["db-0"]);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn watch_sends_added_modified_deleted_in_order() {
    let server = start().await;
    let api = Client::new(&server);
    api.post(PODS, &pod("existing", &json!({"app": "web"}))).await;
    let list = api.get(PODS).await.body;
    let from = list["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let mut watch = api.watch(&format!("{PODS}?watch=true&resourceVersion={from}"), None).await;
    assert_eq!(watch.status, 200);
    let web = api.post(PODS, &pod("web", &json!({"app": "web"}))).await.body;
    api.patch(
        &format!("{PODS}/web"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"app": "db"}}}),
    )
    .await;
    api.post(CONFIGMAPS, &configmap("not-a-pod")).await;
    api.delete(&format!("{PODS}/web")).await;
    let base = rv(&web);
    assert_eq!(watch.next_summary().await, format!("ADDED web@{base}"));
    assert_eq!(watch.next_summary().await, format!("MODIFIED web@{}", base + 1));
    assert_eq!(watch.next_summary().await, format!("DELETED web@{}", base + 3));

    // A watch from "" starts with the current objects; a selector turns changes into the
    // events the watch cache sends.
    let mut selected = api.watch(&format!("{PODS}?watch=1&labelSelector=app%3Dweb"), None).await;
    assert_eq!(selected.next_summary().await, format!("ADDED existing@{}", base - 1));
    let leave = api
        .patch(
            &format!("{PODS}/existing"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"app": "db"}}}),
        )
        .await
        .body;
    let back = api
        .patch(
            &format!("{PODS}/existing"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"app": "web"}}}),
        )
        .await
        .body;
    let deleted = selected.next().await.unwrap();
    assert_eq!(summary(&deleted), format!("DELETED existing@{}", rv(&leave)));
    assert_eq!(
        deleted["object"]["metadata"]["labels"]["app"], "web",
        "the last state that matched"
    );
    assert_eq!(selected.next_summary().await, format!("ADDED existing@{}", rv(&back)));
    assert_eq!(deleted["object"]["apiVersion"], "v1", "watch objects carry their type");

    // timeoutSeconds ends the watch.
    let mut short = api
        .watch(
            &format!(
                "{PODS}?watch=true&resourceVersion={}&timeoutSeconds=1",
                server.resource_version()
            ),
            None,
        )
        .await;
    let started = Instant::now();
    assert!(short.next().await.is_none(), "the watch ends at its timeout");
    assert!(started.elapsed() >= Duration::from_millis(900));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn bookmarks_on_request_and_periodically() {
    let server = start().await;
    let api = Client::new(&server);
    let now = server.resource_version();
    let mut asked = api
        .watch(&format!("{PODS}?watch=true&resourceVersion={now}&allowWatchBookmarks=true"), None)
        .await;
    let mut silent = api.watch(&format!("{PODS}?watch=true&resourceVersion={now}"), None).await;
    open_watches(&server, 2).await;
    api.post(CONFIGMAPS, &configmap("elsewhere")).await;
    server.send_bookmarks();
    let bookmark = asked.next().await.unwrap();
    assert_eq!(
        bookmark,
        json!({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": (now + 1).to_string()}}})
    );
    let added = api.post(PODS, &pod("p", &json!({}))).await.body;
    assert_eq!(
        silent.next_summary().await,
        format!("ADDED p@{}", rv(&added)),
        "no bookmark before it"
    );
    server.shutdown().await.unwrap();

    let periodic = Config::default()
        .bookmark_interval(Some(Duration::from_millis(100)))
        .start()
        .await
        .unwrap();
    let api = Client::new(&periodic);
    let mut watch = api.watch(&format!("{PODS}?watch=true&allowWatchBookmarks=true"), None).await;
    assert_eq!(watch.next().await.unwrap()["type"], "BOOKMARK");
    periodic.shutdown().await.unwrap();
}

#[tokio::test]
async fn streaming_list_ends_its_initial_events_with_a_bookmark() {
    let server = start().await;
    let api = Client::new(&server);
    let a = api.post(PODS, &pod("a", &json!({}))).await.body;
    let b = api.post(PODS, &pod("b", &json!({}))).await.body;
    api.post(CONFIGMAPS, &configmap("c")).await;
    let current = server.resource_version();
    let path = format!(
        "{PODS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    );
    let mut watch = api.watch(&path, None).await;
    assert_eq!(watch.next_summary().await, format!("ADDED a@{}", rv(&a)));
    assert_eq!(watch.next_summary().await, format!("ADDED b@{}", rv(&b)));
    let end = watch.next().await.unwrap();
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(end["object"]["metadata"]["resourceVersion"], current.to_string());
    assert_eq!(
        end["object"]["metadata"]["annotations"],
        json!({"k8s.io/initial-events-end": "true"})
    );
    api.delete(&format!("{PODS}/a")).await;
    assert_eq!(watch.next_summary().await, format!("DELETED a@{}", current + 1));

    let without_match = api
        .get(&format!("{PODS}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"))
        .await;
    assert_eq!(
        (without_match.status, without_match.body["reason"].as_str()),
        (422, Some("Invalid"))
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn watch_from_a_compacted_version_gets_one_410_error_event() {
    let server = Config::default().bookmark_interval(None).history_limit(3).start().await.unwrap();
    let api = Client::new(&server);
    let first = api.post(PODS, &pod("a", &json!({}))).await.body;
    for name in ["b", "c", "d", "e"] {
        api.post(PODS, &pod(name, &json!({}))).await;
    }
    // The history window (3 changes) no longer reaches back to the first pod.
    let mut old =
        api.watch(&format!("{PODS}?watch=true&resourceVersion={}", rv(&first)), None).await;
    assert_eq!(old.status, 200);
    let error = old.next().await.unwrap();
    let compacted = server.resource_version() - 3;
    assert_eq!(
        error,
        json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("too old resource version: {} ({compacted})", rv(&first)), "reason": "Expired", "code": 410}})
    );
    assert!(old.next().await.is_none(), "the watch ends after the error");

    server.compact();
    let mut after_compaction =
        api.watch(&format!("{PODS}?watch=true&resourceVersion={compacted}"), None).await;
    assert_eq!(after_compaction.next().await.unwrap()["object"]["code"], 410);
    // A version from the future: the watch cache opens the watch and waits for the version.
    let ahead = server.resource_version() + 5;
    let path = format!("{PODS}?watch=true&resourceVersion={ahead}&timeoutSeconds=1");
    let mut waiting = api.watch(&path, None).await;
    assert_eq!(waiting.status, 200);
    assert!(waiting.next().await.is_none(), "nothing before the version, then the timeout");
    // A streaming list from the future: 200 and one ERROR event.
    let mut future = api
        .watch(
            &format!(
                "{PODS}?watch=true&resourceVersion={ahead}&sendInitialEvents=true&\
                 resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
            ),
            None,
        )
        .await;
    assert_eq!(future.status, 200);
    let error = future.next().await.unwrap();
    assert_eq!(
        (error["type"].as_str(), error["object"]["code"].as_u64()),
        (Some("ERROR"), Some(504))
    );
    assert_eq!(error["object"]["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
    assert!(future.next().await.is_none(), "the watch ends after the error");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn tables_for_get_list_and_watch() {
    let server = start().await;
    let api = Client::new(&server);
    api.post(PODS, &pod("web-0", &json!({"app": "web"}))).await;
    let table =
        api.request("GET", &format!("{PODS}?limit=500"), &[("accept", TABLE)], None).await.body;
    assert_eq!(
        (table["kind"].as_str(), table["apiVersion"].as_str()),
        (Some("Table"), Some("meta.k8s.io/v1"))
    );
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    // kube-apiserver's pod printer.
    assert_eq!(
        columns,
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    assert_eq!(table["columnDefinitions"][0]["format"], "name");
    let row = &table["rows"][0];
    assert_eq!(row["cells"][0], "web-0");
    assert_eq!(
        row["cells"].as_array().unwrap()[1..4],
        [json!("0/1"), json!("Pending"), json!("0")]
    );
    assert!(row["cells"][4].as_str().is_some_and(|age| age.ends_with('s')), "{}", row["cells"]);
    // Types without a printer here keep the generic convertor's columns.
    let deployments = api
        .request("GET", "/apis/apps/v1/namespaces/default/deployments", &[("accept", TABLE)], None)
        .await
        .body;
    assert_eq!(deployments["columnDefinitions"][1]["name"], "Created At");
    assert_eq!(
        (row["object"]["kind"].as_str(), row["object"]["metadata"]["name"].as_str()),
        (Some("PartialObjectMetadata"), Some("web-0"))
    );
    assert_eq!(table["metadata"]["resourceVersion"], server.resource_version().to_string());

    let with_object = api
        .request("GET", &format!("{PODS}/web-0?includeObject=Object"), &[("accept", TABLE)], None)
        .await
        .body;
    assert_eq!(
        (
            with_object["rows"].as_array().map(Vec::len),
            with_object["rows"][0]["object"]["kind"].as_str()
        ),
        (Some(1), Some("Pod"))
    );
    let none = api
        .request("GET", &format!("{PODS}?includeObject=None"), &[("accept", TABLE)], None)
        .await
        .body;
    assert!(none["rows"][0]["object"].is_null());
    let partial = api
        .request(
            "GET",
            PODS,
            &[("accept", "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io")],
            None,
        )
        .await
        .body;
    assert_eq!(partial["kind"], "PartialObjectMetadataList");
    assert_eq!(
        api.request("GET", PODS, &[("accept", "application/vnd.kubernetes.protobuf")], None)
            .await
            .status,
        406
    );

    // A table watch sends the column definitions with its first event only.
    let mut watch = api.watch(&format!("{PODS}?watch=true"), Some(TABLE)).await;
    let first = watch.next().await.unwrap();
    assert_eq!(
        (first["type"].as_str(), first["object"]["kind"].as_str()),
        (Some("ADDED"), Some("Table"))
    );
    assert!(first["object"]["columnDefinitions"].is_array());
    api.post(PODS, &pod("web-1", &json!({}))).await;
    let second = watch.next().await.unwrap();
    assert_eq!(second["object"]["rows"][0]["cells"][0], "web-1");
    assert!(second["object"]["columnDefinitions"].is_null());
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_crd_created_through_the_api_is_served() {
    let server = start().await;
    let api = Client::new(&server);
    let crontabs = "/apis/stable.example.com/v1/namespaces/default/crontabs";
    assert_eq!(api.get(crontabs).await.status, 404);
    let crd = api
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crontab_crd("stable.example.com", "Namespaced"),
        )
        .await;
    assert_eq!(crd.status, 201);
    let established = crd.body["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == "Established" && c["status"] == "True");
    assert!(established, "{}", crd.body["status"]);
    assert_eq!(crd.body["status"]["acceptedNames"]["listKind"], "CronTabList");

    let groups = api.get("/apis").await.body;
    let group = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "stable.example.com")
        .cloned()
        .unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v1");
    let resources = api.get("/apis/stable.example.com/v1beta1").await.body;
    assert_eq!(resources["resources"][0]["shortNames"], json!(["ct"]));
    assert!(api.get("/openapi/v3").await.body["paths"]["apis/stable.example.com/v1"].is_object());

    let ct = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "my-cron"},
                    "spec": {"cronSpec": "* * * * */5", "replicas": 3}});
    let created = api.post(crontabs, &ct).await;
    assert_eq!((created.status, created.body["metadata"]["generation"].as_i64()), (201, Some(1)));
    let list = api.get(crontabs).await.body;
    assert_eq!(
        (list["kind"].as_str(), list["items"][0]["kind"].as_str()),
        (Some("CronTabList"), Some("CronTab"))
    );
    let beta =
        api.get("/apis/stable.example.com/v1beta1/namespaces/default/crontabs/my-cron").await.body;
    assert_eq!(beta["apiVersion"], "stable.example.com/v1beta1");
    let table = api.request("GET", crontabs, &[("accept", TABLE)], None).await.body;
    assert_eq!(table["rows"][0]["cells"], json!(["my-cron", "* * * * */5", 3]));

    // The status subresource: the main resource keeps the status, /status changes only it.
    let mut with_status = created.body.clone();
    with_status["status"] = json!({"ok": true});
    with_status["spec"]["replicas"] = json!(4);
    let main = api.put(&format!("{crontabs}/my-cron"), &with_status).await.body;
    assert!(main.get("status").is_none());
    assert_eq!(main["metadata"]["generation"], 2);
    with_status["metadata"]["resourceVersion"] = main["metadata"]["resourceVersion"].clone();
    with_status["spec"]["replicas"] = json!(9);
    let status = api.put(&format!("{crontabs}/my-cron/status"), &with_status).await.body;
    assert_eq!(
        (status["status"]["ok"].as_bool(), status["spec"]["replicas"].as_i64()),
        (Some(true), Some(4))
    );

    // Deleting the CRD deletes its objects and stops serving them.
    let gone = api
        .delete(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com",
        )
        .await;
    assert_eq!(gone.status, 200);
    assert_eq!(api.get(crontabs).await.status, 404);
    assert!(
        server
            .objects(&GroupVersionResource::new("stable.example.com", "v1", "crontabs"))
            .is_empty()
    );

    let mut misnamed = crontab_crd("stable.example.com", "Cluster");
    misnamed["metadata"]["name"] = json!("wrong");
    let invalid =
        api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &misnamed).await;
    assert_eq!((invalid.status, invalid.body["reason"].as_str()), (422, Some("Invalid")));
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn finalizers_keep_a_deleted_object_until_they_are_removed() {
    let server = start().await;
    let api = Client::new(&server);
    let mut cm = configmap("held");
    cm["metadata"]["finalizers"] = json!(["example.com/hold"]);
    api.post(CONFIGMAPS, &cm).await;
    let mut watch = api
        .watch(
            &format!("{CONFIGMAPS}?watch=true&resourceVersion={}", server.resource_version()),
            None,
        )
        .await;
    let terminating = api.delete(&format!("{CONFIGMAPS}/held")).await.body;
    assert!(terminating["metadata"]["deletionTimestamp"].is_string());
    assert!(watch.next_summary().await.starts_with("MODIFIED held@"));
    api.patch(
        &format!("{CONFIGMAPS}/held"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    )
    .await;
    assert!(watch.next_summary().await.starts_with("DELETED held@"));
    assert_eq!(api.get(&format!("{CONFIGMAPS}/held")).await.status, 404);
    server.shutdown().await.unwrap();
}

/// A JSON patch whose `test` fails is answered as kube-apiserver answers it (`422 Invalid`,
/// empty details: `NewGenericServerResponse`), and changes nothing; a missing member tests as
/// `null` (evanphx/json-patch's `test`), which kube-rs's finalizer helper relies on. A
/// strategic merge patch of a custom resource is a `415`, as the apiextensions server answers.
#[tokio::test]
async fn json_patch_tests_and_custom_resource_patch_types_answer_as_kube_apiserver() {
    let server = start().await;
    let api = Client::new(&server);
    api.post(CONFIGMAPS, &configmap("guarded")).await;
    let path = format!("{CONFIGMAPS}/guarded");
    let json_patch = |ops: Value| {
        let (api, path) = (&api, &path);
        async move { api.patch(path, "application/json-patch+json", &ops).await }
    };
    let added = json_patch(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/a"]},
    ]))
    .await;
    assert_eq!(added.status, 200, "{}", added.body);
    assert_eq!(added.body["metadata"]["finalizers"], json!(["example.com/a"]));

    // The same patch again: the finalizers are there now, so the test fails.
    let refused = json_patch(json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/b"]},
    ]))
    .await;
    assert_eq!((refused.status, refused.body["reason"].as_str()), (422, Some("Invalid")));
    assert_eq!(refused.body["details"], json!({}), "{}", refused.body);
    // Word for word kube-apiserver's (tests/conformance.rs compares them).
    assert_eq!(
        refused.body["message"], "the server rejected our request due to an error in our request",
        "{}",
        refused.body
    );
    // An index past the end is an error in the test, answered the same way.
    let past = json_patch(json!([
        {"op": "test", "path": "/metadata/finalizers/1", "value": "example.com/a"},
        {"op": "remove", "path": "/metadata/finalizers/1"},
    ]))
    .await;
    assert_eq!((past.status, past.body["reason"].as_str()), (422, Some("Invalid")));
    let stored = api.get(&path).await.body;
    assert_eq!(stored["metadata"]["finalizers"], json!(["example.com/a"]), "nothing changed");
    assert_eq!(rv(&stored), rv(&added.body));

    // A custom resource takes JSON, merge and apply patches, not strategic merge ones.
    api.post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crontab_crd("stable.example.com", "Namespaced"),
    )
    .await;
    let crontabs = "/apis/stable.example.com/v1/namespaces/default/crontabs";
    let ct = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                    "metadata": {"name": "c"}, "spec": {"replicas": 1}});
    assert_eq!(api.post(crontabs, &ct).await.status, 201);
    let strategic = api
        .patch(
            &format!("{crontabs}/c"),
            "application/strategic-merge-patch+json",
            &json!({"spec": {"replicas": 2}}),
        )
        .await;
    assert_eq!(
        (strategic.status, strategic.body["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );
    assert_eq!(
        strategic.body["message"],
        "the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
    let merged = api
        .patch(
            &format!("{crontabs}/c"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 2}}),
        )
        .await;
    assert_eq!(merged.body["spec"]["replicas"], 2);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn fault_drop_watches_ends_them_cleanly_and_history_survives() {
    let server = start().await;
    let api = Client::new(&server);
    let from = server.resource_version();
    let mut watch = api.watch(&format!("{PODS}?watch=true&resourceVersion={from}"), None).await;
    open_watches(&server, 1).await;
    let a = api.post(PODS, &pod("a", &json!({}))).await.body;
    assert_eq!(watch.next_summary().await, format!("ADDED a@{}", rv(&a)));
    assert_eq!(server.drop_watches(), 1);
    assert!(watch.next().await.is_none(), "a clean end of the response");
    assert_eq!(server.open_watches(), 0);
    let mut resumed = api.watch(&format!("{PODS}?watch=true&resourceVersion={from}"), None).await;
    assert_eq!(resumed.next_summary().await, format!("ADDED a@{}", rv(&a)), "resumed from history");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn fault_fail_next_requests_with_a_status_and_retry_after() {
    let server = start().await;
    let api = Client::new(&server);
    server.fail_next(
        2,
        Failure::too_many_requests(Duration::from_secs(3)).verb("list").resource("pods"),
    );
    server.fail_next(1, Failure::internal_error("etcd is down").resource("deployments.apps"));
    for _ in 0..2 {
        let throttled = api.get(PODS).await;
        assert_eq!((throttled.status, throttled.retry_after.as_deref()), (429, Some("3")));
        assert_eq!(
            throttled.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "Too many requests, please try again later.", "reason": "TooManyRequests",
                   "details": {"retryAfterSeconds": 3}, "code": 429})
        );
        assert_eq!(api.get(CONFIGMAPS).await.status, 200, "other resources are served");
        assert_eq!(api.get(&format!("{PODS}/x")).await.status, 404, "other verbs are served");
    }
    assert_eq!(api.get(PODS).await.status, 200, "only two failed");
    let failed = api.get("/apis/apps/v1/namespaces/default/deployments").await;
    assert_eq!(
        (failed.status, failed.body["message"].as_str()),
        (500, Some("Internal error occurred: etcd is down"))
    );
    assert_eq!(api.get("/apis/apps/v1/namespaces/default/deployments").await.status, 200);
    server.fail_next(5, Failure::new(503, "ServiceUnavailable", "maintenance").verb("watch"));
    let refused = api.get(&format!("{PODS}?watch=true")).await;
    assert_eq!(
        (refused.status, refused.body["reason"].as_str()),
        (503, Some("ServiceUnavailable"))
    );
    server.clear_failures();
    assert_eq!(api.watch(&format!("{PODS}?watch=true&timeoutSeconds=1"), None).await.status, 200);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn fault_delay_slows_every_response() {
    let server = start().await;
    let api = Client::new(&server);
    server.set_delay(Some(Duration::from_millis(300)));
    let started = Instant::now();
    assert_eq!(api.get(PODS).await.status, 200);
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    server.set_delay(None);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn fault_stall_keeps_watches_open_and_silent() {
    let server = start().await;
    let api = Client::new(&server);
    let now = server.resource_version();
    let mut stalled = api
        .watch(
            &format!(
                "{PODS}?watch=true&resourceVersion={now}&timeoutSeconds=1&allowWatchBookmarks=true"
            ),
            None,
        )
        .await;
    open_watches(&server, 1).await;
    assert_eq!(server.stall_watches(), 1);
    api.post(PODS, &pod("unseen", &json!({}))).await;
    server.send_bookmarks();
    // Past its one-second timeout, the stalled watch neither ends nor sends anything.
    assert!(stalled.stays_silent(Duration::from_millis(2500)).await);
    assert_eq!(server.open_watches(), 1);
    // New watches are not stalled.
    let mut fresh = api.watch(&format!("{PODS}?watch=true&resourceVersion={now}"), None).await;
    assert!(fresh.next_summary().await.starts_with("ADDED unseen@"));
    server.drop_watches();
    assert!(stalled.next().await.is_none(), "dropping ends a stalled watch");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn shutdown_ends_open_watches() {
    let server = start().await;
    let api = Client::new(&server);
    let mut watch = api.watch(&format!("{PODS}?watch=true"), None).await;
    open_watches(&server, 1).await;
    tokio::time::timeout(DEADLINE, server.shutdown())
        .await
        .expect("a timely shutdown")
        .expect("a clean shutdown");
    assert!(watch.next().await.is_none());
}

#[tokio::test]
async fn the_handle_inspects_and_writes_objects_directly() {
    let server = start().await;
    let api = Client::new(&server);
    let pods = GroupVersionResource::new("", "v1", "pods");
    let mut watch = api
        .watch(&format!("{PODS}?watch=true&resourceVersion={}", server.resource_version()), None)
        .await;
    let created = server
        .create(&pods, json!({"metadata": {"name": "direct", "namespace": "default"}}))
        .unwrap();
    assert_eq!(watch.next_summary().await, format!("ADDED direct@{}", rv(&created)));
    assert_eq!(
        server.get(&pods, "default", "direct").unwrap()["metadata"]["uid"],
        created["metadata"]["uid"]
    );
    assert_eq!(server.objects(&pods).len(), 1);
    let namespaces = server.objects(&GroupVersionResource::new("", "v1", "namespaces"));
    let ns_names: Vec<&str> =
        namespaces.iter().filter_map(|n| n["metadata"]["name"].as_str()).collect();
    assert_eq!(ns_names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
    let conflict = server
        .create(&pods, json!({"metadata": {"name": "direct", "namespace": "default"}}))
        .unwrap_err();
    assert_eq!((conflict.code, conflict.reason.as_str()), (409, "AlreadyExists"));
    server.delete(&pods, "default", "direct").unwrap();
    assert!(watch.next_summary().await.starts_with("DELETED direct@"));
    assert!(server.kubeconfig_yaml().contains(&format!("server: {}", server.url())));
    server.shutdown().await.unwrap();
}

/// What the differential conformance suite (`tests/conformance.rs` in the workspace) found
/// kube-apiserver 1.37 answers, pinned here too so that it holds where no real server runs.
#[tokio::test]
async fn answers_as_kube_apiserver_gives_them() {
    let server = start().await;
    let api = Client::new(&server);
    // Bodies: a type the decoder does not take, a patch type the router does not take.
    let text = api
        .request("POST", CONFIGMAPS, &[("content-type", "text/plain")], Some(&configmap("t")))
        .await;
    assert_eq!(
        (text.status, text.body["message"].as_str()),
        (
            415,
            Some(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
            )
        )
    );
    let untyped = api.request("POST", CONFIGMAPS, &[], Some(&configmap("untyped"))).await;
    assert_eq!(untyped.status, 201, "a body without a type is JSON");
    let patch = api.patch(&format!("{CONFIGMAPS}/untyped"), "text/plain", &json!({})).await;
    assert_eq!(
        (patch.status, patch.body["message"].as_str(), patch.body["details"].clone()),
        (415, Some("415: Unsupported Media Type"), json!({}))
    );
    let collection = api.delete("/api/v1/namespaces").await;
    assert_eq!((collection.status, collection.body["details"].clone()), (405, json!({})));
    // Delete preconditions name the kind.
    let cm = api.get(&format!("{CONFIGMAPS}/untyped")).await.body;
    let uid = cm["metadata"]["uid"].as_str().unwrap();
    let wrong = json!({"preconditions": {"uid": "x"}});
    let conflict = api
        .request(
            "DELETE",
            &format!("{CONFIGMAPS}/untyped"),
            &[("content-type", "application/json")],
            Some(&wrong),
        )
        .await;
    assert_eq!(
        (
            conflict.status,
            conflict.body["message"].as_str().map(str::to_owned),
            conflict.body["details"].clone()
        ),
        (
            409,
            Some(format!(
                "Operation cannot be fulfilled on ConfigMap \"untyped\": the UID in the precondition (x) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
            )),
            json!({"name": "untyped", "kind": "ConfigMap"})
        )
    );
    // A resourceVersion that is not a number: 400 for a list, 500 without a reason for a get.
    let list = api.get(&format!("{CONFIGMAPS}?resourceVersion=abc")).await;
    assert_eq!(
        list.body["message"],
        "invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"
    );
    let get = api.get(&format!("{CONFIGMAPS}/untyped?resourceVersion=abc")).await;
    assert_eq!((get.status, get.body.get("reason")), (500, None));
    // What creates store: a pending pod, an active namespace with its finalizer.
    let pending = api.post(PODS, &pod("p", &json!({"app": "web"}))).await.body;
    assert_eq!(pending["status"], json!({"phase": "Pending", "qosClass": "BestEffort"}));
    let ns = api.post("/api/v1/namespaces", &json!({"metadata": {"name": "fresh"}})).await.body;
    assert_eq!(ns["spec"], json!({"finalizers": ["kubernetes"]}));
    // A full page of a selective list carries a token while anything follows it.
    api.post(PODS, &pod("q", &json!({}))).await;
    let page = api.get(&format!("{PODS}?limit=1&labelSelector=app%3Dweb")).await.body;
    assert!(page["metadata"]["continue"].is_string(), "{page}");
    // A streaming list without bookmarks has no bookmark to end its initial events.
    let streaming =
        "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1";
    let mut watch = api.watch(&format!("{PODS}?{streaming}"), None).await;
    let mut types = Vec::new();
    while let Some(event) = watch.next().await {
        types.push(event["type"].as_str().unwrap_or_default().to_owned());
    }
    assert_eq!(types, ["ADDED", "ADDED"]);
    // A watch that allows bookmarks gets one before its timeout once the server moved on.
    let now = server.resource_version();
    let path = format!(
        "{PODS}?watch=true&resourceVersion={now}&allowWatchBookmarks=true&timeoutSeconds=3"
    );
    let mut watch = api.watch(&path, None).await;
    open_watches(&server, 1).await;
    api.post(CONFIGMAPS, &configmap("elsewhere")).await;
    let bookmark = watch.next().await.expect("a bookmark before the end");
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(bookmark["object"]["metadata"]["resourceVersion"], (now + 1).to_string());
    assert!(watch.next().await.is_none(), "then the timeout");
    server.shutdown().await.unwrap();
}
