//! Differential conformance: the embedded API server (`embedded_apiserver`)
//! against a real kube-apiserver and etcd (`tests/kube-apiserver/`).
//!
//! Every scenario runs the same requests against both servers and turns what a client can
//! observe into a normalised transcript (status codes, reasons, `Status` details and the
//! messages clients match on, event types in order, names, whether resourceVersions move
//! forward, continue tokens, bookmark annotations, discovery entries). The transcripts must be
//! equal; on failure the test prints the steps that differ. What legitimately differs is left
//! out: uids, timestamps, exact resourceVersion numbers, managedFields (but in the
//! server-side apply scenario, which compares them without their times), and defaults the real
//! server adds to built-in objects that the embedded server does not claim to add.
//!
//! The real server is shared by the test process ([`KubeApiServer::shared`]), so each scenario
//! works in a namespace of its own (namespaces cannot be deleted there: its controller manager
//! runs the garbage collector alone) and never assumes the cluster is empty. Scenarios that forget history (compaction) take
//! a private server. Without Go these tests print one line and pass.
//!
//! Every difference found is a bug in the embedded server, fixed there and pinned by the
//! scenario that found it; the scenario names the client behaviour it protects.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "in a test, a failed expect is a failed assertion"
)]

use std::fmt::Write as _;
use std::sync::OnceLock;
use std::time::Duration;

use embedded_apiserver::testing::{WatchLines, crontab_crd};
use embedded_apiserver::{ApiServer, Config};
use informer_tests::kube_apiserver::KubeApiServer;
use serde_json::{Value, json};

/// How long any single answer, event or condition may take: the real server is slower.
const DEADLINE: Duration = Duration::from_secs(60);
/// kubectl's `Accept` for `get`: a table, else plain JSON.
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

// ---------------------------------------------------------------------------------------------
// Targets
// ---------------------------------------------------------------------------------------------

/// Which server a [`Target`] talks to.
enum Server {
    /// The embedded server, one per scenario.
    Embedded(ApiServer),
    /// A real kube-apiserver: the shared one, or the process's private one for compaction.
    Real(&'static KubeApiServer),
}

/// One of the two servers a scenario runs against: where it is, an HTTP client for it, and
/// how to make it forget history.
struct Target {
    server: Server,
    base: String,
    http: reqwest::Client,
}

/// An HTTP answer: status, a few headers, and the body as JSON (or a JSON string of the text).
struct Reply {
    status: u16,
    content_type: String,
    retry_after: Option<String>,
    body: Value,
}

impl Target {
    /// A fresh embedded server configured as kube-apiserver behaves: namespaces must exist,
    /// and no periodic bookmarks (the real server sends them about once a minute).
    async fn embedded() -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let server = Config::default()
            .require_namespaces(true)
            .bookmark_interval(None)
            .start()
            .await
            .expect("the embedded server starts");
        let base = server.url();
        let http = reqwest::Client::builder().build().expect("an HTTP client");
        Self { server: Server::Embedded(server), base, http }
    }

    /// The real server, reached with the bearer token of the harness's kubeconfig and trusting
    /// its CA.
    fn real(server: &'static KubeApiServer) -> Self {
        let base = server.endpoints().server.clone();
        Self { server: Server::Real(server), base, http: server.https_client() }
    }

    fn name(&self) -> &'static str {
        match self.server {
            Server::Embedded(_) => "embedded",
            Server::Real(_) => "kube-apiserver",
        }
    }

    /// Forgets history, as etcd compaction does for the embedded server: afterwards no watch,
    /// exact list or continue token can start before the current resourceVersion.
    ///
    /// kube-apiserver serves those from its watch cache, which keeps its own history (and
    /// list snapshots) whatever etcd compacts; it only forgets when it starts again. So the
    /// real server is compacted and restarted, which is what a client sees after a compaction
    /// that its API server's cache has caught up with.
    async fn forget_history(&self) {
        match &self.server {
            Server::Embedded(server) => server.compact(),
            Server::Real(server) => {
                let server: &'static KubeApiServer = server;
                tokio::task::spawn_blocking(move || {
                    server.compact()?;
                    server.restart()
                })
                .await
                .expect("the harness thread")
                .expect("compaction and restart");
            }
        }
    }

    async fn request(
        &self,
        method: &str,
        path: &str,
        accept: Option<&str>,
        body: Option<(&str, &Value)>,
    ) -> Reply {
        self.request_as(method, path, accept, body, None).await
    }

    /// A request with a `User-Agent` (the field manager of a write without `fieldManager`).
    async fn request_as(
        &self,
        method: &str,
        path: &str,
        accept: Option<&str>,
        body: Option<(&str, &Value)>,
        agent: Option<&str>,
    ) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("a method");
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        if let Some(agent) = agent {
            request = request.header("user-agent", agent);
        }
        if let Some((content_type, body)) = body {
            request = request.header("content-type", content_type).body(body.to_string());
        }
        let response = tokio::time::timeout(DEADLINE, request.send())
            .await
            .unwrap_or_else(|_| panic!("{}: no answer to {path} in time", self.name()))
            .unwrap_or_else(|e| panic!("{}: {path}: {e}", self.name()));
        let status = response.status().as_u16();
        let header = |name: &str| {
            response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
        };
        let content_type = header("content-type").unwrap_or_default();
        let retry_after = header("retry-after");
        let bytes = tokio::time::timeout(DEADLINE, response.bytes())
            .await
            .unwrap_or_else(|_| panic!("{}: the body of {path} did not end in time", self.name()))
            .expect("a body");
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).trim().to_owned()));
        Reply { status, content_type, retry_after, body }
    }

    async fn get(&self, path: &str) -> Reply {
        self.request("GET", path, None, None).await
    }

    async fn post(&self, path: &str, body: &Value) -> Reply {
        self.request("POST", path, None, Some(("application/json", body))).await
    }

    async fn put(&self, path: &str, body: &Value) -> Reply {
        self.request("PUT", path, None, Some(("application/json", body))).await
    }

    async fn patch(&self, path: &str, content_type: &str, body: &Value) -> Reply {
        self.request("PATCH", path, None, Some((content_type, body))).await
    }

    async fn delete(&self, path: &str) -> Reply {
        self.request("DELETE", path, None, None).await
    }

    /// Opens a watch (or any streaming GET) and returns its response as events.
    async fn watch(&self, path: &str) -> Watch {
        let response =
            tokio::time::timeout(DEADLINE, self.http.get(format!("{}{path}", self.base)).send())
                .await
                .unwrap_or_else(|_| panic!("{}: no answer to {path} in time", self.name()))
                .unwrap_or_else(|e| panic!("{}: {path}: {e}", self.name()));
        let status = response.status().as_u16();
        Watch { status, lines: WatchLines::new(response.bytes_stream()) }
    }

    /// Creates a namespace; every scenario works in one of its own.
    async fn namespace(&self, name: &str) {
        let created = self.post("/api/v1/namespaces", &json!({"metadata": {"name": name}})).await;
        assert_eq!(created.status, 201, "{}: namespace {name}: {}", self.name(), created.body);
    }

    /// Polls `GET path` until it answers `want`, within the deadline (a CRD takes a moment to
    /// be served by the real server).
    async fn wait_for_status(&self, path: &str, want: u16) {
        let start = tokio::time::Instant::now();
        loop {
            let got = self.get(path).await.status;
            if got == want {
                return;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "{}: {path} still answers {got}, not {want}",
                self.name()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// An open watch: newline-delimited JSON events.
struct Watch {
    status: u16,
    lines: WatchLines,
}

impl Watch {
    /// The next event, or `None` when the server ended the watch; fails after the deadline.
    async fn next(&mut self) -> Option<Value> {
        tokio::time::timeout(DEADLINE, self.lines.next_event())
            .await
            .expect("a watch event (or the end) in time")
    }

    /// The next event that is not a plain periodic bookmark (the real server sends those on
    /// its own schedule; an `initial-events-end` bookmark is kept).
    async fn next_change(&mut self) -> Option<Value> {
        loop {
            let event = self.next().await?;
            let plain_bookmark = event["type"] == "BOOKMARK"
                && event["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"]
                    .is_null();
            if !plain_bookmark {
                return Some(event);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Transcripts
// ---------------------------------------------------------------------------------------------

/// What a scenario observed, step by step.
#[derive(Default)]
struct Transcript {
    steps: Vec<(String, Value)>,
}

impl Transcript {
    fn step(&mut self, label: &str, value: Value) {
        self.steps.push((label.to_owned(), value));
    }
}

/// The steps where two transcripts differ, readably; empty when they are equal.
fn diff(embedded: &Transcript, real: &Transcript) -> String {
    let mut out = String::new();
    let len = embedded.steps.len().max(real.steps.len());
    for i in 0..len {
        let (a, b) = (embedded.steps.get(i), real.steps.get(i));
        if a == b {
            continue;
        }
        let label = a.or(b).map_or("", |(l, _)| l.as_str());
        let show = |s: Option<&(String, Value)>| {
            s.map_or_else(
                || "(no such step)".to_owned(),
                |(l, v)| format!("[{l}] {}", serde_json::to_string_pretty(v).unwrap_or_default()),
            )
        };
        let _ = writeln!(
            out,
            "step {i} ({label}):\n  embedded:       {}\n  kube-apiserver: {}",
            show(a),
            show(b)
        );
    }
    out
}

/// A scenario: requests against one target, in namespace `ns`, turned into a transcript.
trait Scenario: AsyncFn(&Target, &str) -> Transcript {}
impl<F: AsyncFn(&Target, &str) -> Transcript> Scenario for F {}

/// The shared real server, or `None` (the test passes) where Go is missing and may be.
async fn shared() -> Option<&'static KubeApiServer> {
    tokio::task::spawn_blocking(KubeApiServer::shared).await.expect("the harness thread")
}

/// This process's private real server, for scenarios that compact and restart it; `None`
/// like [`shared`]. Scenarios that use it run one at a time (see [`PRIVATE_LOCK`]).
async fn private() -> Option<&'static KubeApiServer> {
    static PRIVATE: OnceLock<KubeApiServer> = OnceLock::new();
    shared().await?;
    let server = tokio::task::spawn_blocking(|| {
        if PRIVATE.get().is_none() {
            let server = KubeApiServer::start().expect("a private kube-apiserver");
            let _ = PRIVATE.set(server);
        }
        PRIVATE.get().expect("set above")
    })
    .await
    .expect("the harness thread");
    Some(server)
}

/// Serialises the scenarios that make the private server forget its history.
static PRIVATE_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A namespace name unique to this scenario and run, the same on both servers.
fn unique(scenario: &str) -> String {
    let short: String = scenario.chars().filter(char::is_ascii_alphanumeric).take(40).collect();
    format!("cf-{short}-{:06x}", fastrand::u32(..0x100_0000))
}

/// Runs `scenario` against the embedded server and the real one and asserts that the
/// transcripts are equal. Set `CONFORMANCE_PRINT=1` to print both.
async fn conformance(name: &str, real: &'static KubeApiServer, scenario: impl Scenario) {
    let ns = unique(name);
    let embedded = Target::embedded().await;
    embedded.namespace(&ns).await;
    let mine = scenario(&embedded, &ns).await;
    let real = Target::real(real);
    real.namespace(&ns).await;
    let theirs = scenario(&real, &ns).await;
    if std::env::var_os("CONFORMANCE_PRINT").is_some() {
        let mut text = String::new();
        for (target, transcript) in [("embedded", &mine), ("kube-apiserver", &theirs)] {
            let _ = writeln!(text, "--- {name} on {target}");
            for (label, value) in &transcript.steps {
                let _ = writeln!(text, "[{label}] {value}");
            }
        }
        eprint!("{text}");
    }
    let differences = diff(&mine, &theirs);
    assert!(
        differences.is_empty(),
        "{name}: the embedded server differs from kube-apiserver:\n{differences}"
    );
}

// ---------------------------------------------------------------------------------------------
// Normalisation
// ---------------------------------------------------------------------------------------------

/// A `Status` answer as clients read it: HTTP code, and the body's reason, message, details
/// (without the uid) and code. Digits in the message are masked when `mask_numbers`
/// (resourceVersions differ between servers).
fn status(reply: &Reply, mask_numbers: bool) -> Value {
    let body = &reply.body;
    if let Value::String(text) = body {
        // Not a `Status`: what the HTTP mux answers outside the API's handlers.
        return json!({"http": reply.status, "contentType": reply.content_type, "text": text});
    }
    let mut details = body.get("details").cloned().unwrap_or(Value::Null);
    if let Value::Object(map) = &mut details {
        map.remove("uid");
    }
    let message = body["message"].as_str().unwrap_or_default();
    let message = if mask_numbers { mask(message) } else { message.to_owned() };
    json!({
        "http": reply.status,
        "kind": body["kind"],
        "status": body["status"],
        "reason": body["reason"],
        "message": message,
        "details": details,
        "code": body["code"],
    })
}

/// Code and reason only: for errors whose message no client parses (decode errors).
fn code_and_reason(reply: &Reply) -> Value {
    json!({"http": reply.status, "reason": reply.body["reason"], "code": reply.body["code"]})
}

/// Replaces every run of digits with `N`.
fn mask(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            out.push(c);
            in_number = false;
        }
    }
    out
}

fn rv_of(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"].as_str().and_then(|rv| rv.parse().ok()).unwrap_or(0)
}

/// How a resourceVersion compares with an earlier one: what clients may rely on.
fn order(rv: u64, earlier: u64) -> &'static str {
    match rv.cmp(&earlier) {
        std::cmp::Ordering::Greater => "newer",
        std::cmp::Ordering::Equal => "same",
        std::cmp::Ordering::Less => "older",
    }
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| i["metadata"]["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A list as a client pages through it: kind, names, whether a continue token came, the
/// remaining count.
fn list_page(reply: &Reply) -> Value {
    if reply.status != 200 {
        return status(reply, false);
    }
    let meta = &reply.body["metadata"];
    json!({
        "http": reply.status,
        "kind": reply.body["kind"],
        "apiVersion": reply.body["apiVersion"],
        "names": names(&reply.body),
        "continue": meta["continue"].as_str().is_some_and(|c| !c.is_empty()),
        "remainingItemCount": meta["remainingItemCount"],
    })
}

/// A watch event: type, object kind and name; `order` says how its resourceVersion compares
/// with the previous event's.
fn event(event: &Value, previous: &mut u64) -> Value {
    let object = &event["object"];
    if event["type"] == "ERROR" {
        let reply = Reply {
            status: 200,
            content_type: String::new(),
            retry_after: None,
            body: object.clone(),
        };
        return json!({"type": "ERROR", "status": status(&reply, true)});
    }
    let rv = rv_of(object);
    let step = order(rv, *previous);
    *previous = rv;
    let mut summary = json!({
        "type": event["type"],
        "kind": object["kind"],
        "apiVersion": object["apiVersion"],
        "name": object["metadata"]["name"],
        "rv": step,
    });
    if event["type"] == "BOOKMARK" {
        summary["annotations"] = object["metadata"]["annotations"].clone();
        summary["metadataKeys"] =
            json!(object["metadata"].as_object().map(|m| m.keys().cloned().collect::<Vec<_>>()));
    }
    summary
}

fn configmap(name: &str, labels: &Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": name}})
}

fn pod(name: &str, labels: &Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
           "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
}

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

/// Protects clients that branch on a write's `Status`: `IsNotFound`, `IsAlreadyExists`,
/// `IsConflict` (retry on conflict), and on what updates do to resourceVersions.
async fn crud(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let created = t.post(&cms, &configmap("a", &json!({"app": "web"}))).await;
    let a = created.body.clone();
    out.step("create", json!({"http": created.status, "kind": a["kind"], "apiVersion": a["apiVersion"],
        "namespace": a["metadata"]["namespace"], "uid": a["metadata"]["uid"].is_string(),
        "creationTimestamp": a["metadata"]["creationTimestamp"].is_string(), "rv": rv_of(&a) > 0,
        "generation": a["metadata"]["generation"], "data": a["data"], "labels": a["metadata"]["labels"]}));
    out.step("create again", status(&t.post(&cms, &configmap("a", &json!({}))).await, false));
    out.step("get missing", status(&t.get(&format!("{cms}/nope")).await, false));
    out.step(
        "get missing deployment",
        status(&t.get(&format!("/apis/apps/v1/namespaces/{ns}/deployments/x")).await, false),
    );
    out.step(
        "get in a missing namespace",
        status(&t.get("/api/v1/namespaces/cf-no-such-namespace/configmaps/a").await, false),
    );
    out.step(
        "create in a missing namespace",
        status(
            &t.post(
                "/api/v1/namespaces/cf-no-such-namespace/configmaps",
                &configmap("a", &json!({})),
            )
            .await,
            false,
        ),
    );

    let mut stale = a.clone();
    stale["metadata"]["resourceVersion"] = json!("1");
    out.step(
        "update with a stale resourceVersion",
        status(&t.put(&format!("{cms}/a"), &stale).await, false),
    );
    let mut fresh = a.clone();
    fresh["data"]["k"] = json!("changed");
    let updated = t.put(&format!("{cms}/a"), &fresh).await;
    out.step("update", json!({"http": updated.status, "rv": order(rv_of(&updated.body), rv_of(&a)),
        "uid kept": updated.body["metadata"]["uid"] == a["metadata"]["uid"], "data": updated.body["data"]}));
    let same = t.put(&format!("{cms}/a"), &updated.body).await;
    out.step(
        "no-op update",
        json!({"http": same.status, "rv": order(rv_of(&same.body), rv_of(&updated.body))}),
    );
    let mut no_rv = updated.body.clone();
    no_rv["metadata"].as_object_mut().unwrap().remove("resourceVersion");
    no_rv["data"]["k"] = json!("unconditional");
    let unconditional = t.put(&format!("{cms}/a"), &no_rv).await;
    out.step(
        "update without a resourceVersion",
        json!({"http": unconditional.status, "data": unconditional.body["data"]}),
    );
    let mut renamed = unconditional.body.clone();
    renamed["metadata"]["name"] = json!("b");
    out.step(
        "update with another name in the body",
        status(&t.put(&format!("{cms}/a"), &renamed).await, false),
    );
    out.step(
        "update a missing object",
        status(&t.put(&format!("{cms}/nope"), &configmap("nope", &json!({}))).await, false),
    );

    out
}

/// Protects clients that surface the API server's validation and decoding errors (`IsInvalid`
/// with its field causes, `IsBadRequest`, `IsUnsupportedMediaType`) and the patch formats.
async fn bad_input_and_patches(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    t.post(&cms, &configmap("a", &json!({"app": "web"}))).await;
    out.step(
        "invalid name",
        status(&t.post(&cms, &configmap("Not_Valid", &json!({}))).await, false),
    );
    out.step("no name", status(&t.post(&cms, &json!({"metadata": {}})).await, false));
    let generated = t.post(&cms, &json!({"metadata": {"generateName": "gen-"}})).await;
    let generated_name = generated.body["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    out.step(
        "generateName",
        json!({"http": generated.status,
        "name": generated_name.starts_with("gen-") && generated_name.len() == 9,
        "generateName": generated.body["metadata"]["generateName"]}),
    );
    out.step(
        "namespace in the body differs",
        status(
            &t.post(&cms, &json!({"metadata": {"name": "x", "namespace": "other"}})).await,
            false,
        ),
    );
    // The message is the scheme's conversion error, which no client reads.
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}});
    out.step("another kind in the body", code_and_reason(&t.post(&cms, &secret).await));
    // Go's JSON decoder's message, which no client reads either.
    out.step(
        "malformed JSON",
        code_and_reason(
            &t.request("POST", &cms, None, Some(("application/json", &json!("{")))).await,
        ),
    );
    let text =
        t.request("POST", &cms, None, Some(("text/plain", &configmap("t", &json!({}))))).await;
    out.step("a body typed as text", status(&text, false));
    let untyped =
        t.request("POST", &cms, None, Some(("", &configmap("untyped", &json!({}))))).await;
    out.step(
        "a body without a type",
        json!({"http": untyped.status, "kind": untyped.body["kind"]}),
    );
    out.step(
        "unknown patch type",
        status(&t.patch(&format!("{cms}/a"), "text/plain", &json!({})).await, false),
    );
    let merged = t
        .patch(
            &format!("{cms}/a"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"app": null, "x": "1"}}}),
        )
        .await;
    out.step(
        "merge patch",
        json!({"http": merged.status, "labels": merged.body["metadata"]["labels"]}),
    );
    let json_patch = json!([{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]);
    let patched = t.patch(&format!("{cms}/a"), "application/json-patch+json", &json_patch).await;
    out.step(
        "json patch",
        json!({"http": patched.status, "annotations": patched.body["metadata"]["annotations"]}),
    );
    let failing = json!([{"op": "test", "path": "/data/k", "value": "other"}]);
    out.step(
        "failing json patch test",
        code_and_reason(
            &t.patch(&format!("{cms}/a"), "application/json-patch+json", &failing).await,
        ),
    );
    out.step(
        "patch a missing object",
        status(
            &t.patch(&format!("{cms}/nope"), "application/merge-patch+json", &json!({})).await,
            false,
        ),
    );

    out
}

/// Protects clients that read the `Status` of a request no handler takes
/// (`IsMethodNotSupported`, `IsNotFound` of a path) and those that probe for groups (an unknown
/// group is the HTTP mux's plain-text 404, not a `Status`).
async fn paths_and_methods(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    t.post(&cms, &configmap("a", &json!({}))).await;
    out.step("POST to an object", status(&t.post(&format!("{cms}/a"), &json!({})).await, false));
    out.step(
        "create across namespaces",
        status(&t.post("/api/v1/configmaps", &configmap("x", &json!({}))).await, false),
    );
    out.step("PUT to a collection", status(&t.put(&cms, &json!({})).await, false));
    out.step("delete every namespace", status(&t.delete("/api/v1/namespaces").await, false));
    out.step(
        "unknown resource",
        status(&t.get(&format!("/api/v1/namespaces/{ns}/nothings")).await, false),
    );
    out.step("unknown subresource", status(&t.get(&format!("{cms}/a/nothing")).await, false));
    out.step("unknown core version", status(&t.get("/api/v2").await, false));
    out.step("unknown version of a group", status(&t.get("/apis/apps/v2").await, false));
    out.step("unknown group", status(&t.get("/apis/nope.example.com/v1/things").await, false));
    out.step("outside the API", status(&t.get("/nothing").await, false));

    out
}

/// Protects clients of deletes and of what creates store: the delete answers (a `Status` or
/// the object), preconditions (`IsConflict`), finalizers; a new pod is `Pending` with its `QoS`
/// class whatever status it was sent with, a new namespace active with its finalizer.
async fn deletes_and_defaults(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    t.post(&cms, &configmap("a", &json!({}))).await;
    let deleted = t.delete(&format!("{cms}/a")).await;
    out.step(
        "delete a configmap",
        json!({"http": deleted.status, "kind": deleted.body["kind"],
        "status": deleted.body["status"], "details": status(&deleted, false)["details"]}),
    );
    out.step("delete again", status(&t.delete(&format!("{cms}/a")).await, false));

    // What creates store beyond what was sent.
    let namespace = t.get(&format!("/api/v1/namespaces/{ns}")).await.body;
    let labels =
        namespace["metadata"]["labels"].as_object().map(|l| l.keys().cloned().collect::<Vec<_>>());
    out.step(
        "a new namespace",
        json!({"spec": namespace["spec"], "status": namespace["status"], "labels": labels}),
    );
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let mut running = pod("p", &json!({}));
    running["status"] = json!({"phase": "Running"});
    let created_pod = t.post(&pods, &running).await;
    out.step(
        "create a pod claiming to run",
        json!({"http": created_pod.status, "kind": created_pod.body["kind"],
        "status": created_pod.body["status"]}),
    );
    for (name, resources) in [
        ("limits", json!({"limits": {"cpu": "1", "memory": "1Gi"}})),
        ("requests", json!({"requests": {"cpu": "100m"}})),
    ] {
        let mut with = pod(name, &json!({}));
        with["spec"]["containers"][0]["resources"] = resources;
        let created = t.post(&pods, &with).await;
        out.step(&format!("a pod with {name}"), created.body["status"].clone());
    }
    let deleted_pod = t.delete(&format!("{pods}/p")).await;
    out.step(
        "delete a pod",
        json!({"http": deleted_pod.status, "kind": deleted_pod.body["kind"],
        "name": deleted_pod.body["metadata"]["name"]}),
    );
    out.step("get the deleted pod", status(&t.get(&format!("{pods}/p")).await, false));

    let mut held = configmap("held", &json!({}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    let held = t.post(&cms, &held).await.body;
    let uid = held["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
    let wrong_uid = json!({"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}});
    let failed = t
        .request("DELETE", &format!("{cms}/held"), None, Some(("application/json", &wrong_uid)))
        .await;
    let mut failed = status(&failed, false);
    failed["message"] = json!(failed["message"].as_str().unwrap_or_default().replace(&uid, "UID"));
    out.step("delete with a failing uid precondition", failed);
    let wrong_rv = json!({"preconditions": {"resourceVersion": "1"}});
    let failed = t
        .request("DELETE", &format!("{cms}/held"), None, Some(("application/json", &wrong_rv)))
        .await;
    out.step("delete with a failing resourceVersion precondition", status(&failed, true));
    let terminating = t.delete(&format!("{cms}/held")).await;
    out.step(
        "delete with a finalizer",
        json!({"http": terminating.status, "kind": terminating.body["kind"],
        "deletionTimestamp": terminating.body["metadata"]["deletionTimestamp"].is_string(),
        "finalizers": terminating.body["metadata"]["finalizers"]}),
    );
    let released = t
        .patch(
            &format!("{cms}/held"),
            "application/merge-patch+json",
            &json!({"metadata": {"finalizers": null}}),
        )
        .await;
    out.step("remove the finalizer", json!({"http": released.status}));
    out.step("gone once released", status(&t.get(&format!("{cms}/held")).await, false));
    out
}

/// Protects paging clients (the reflector's paginated list, `kubectl get --chunk-size`): pages
/// of one snapshot, a token whenever the page is full and more objects follow (matching the
/// selectors or not), the errors for misuse.
async fn list_pages(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    for name in ["e", "b", "d", "a", "c"] {
        let labels = if matches!(name, "a" | "b") { json!({"first": "yes"}) } else { json!({}) };
        t.post(&cms, &configmap(name, &labels)).await;
    }
    let first = t.get(&format!("{cms}?limit=2")).await;
    out.step("first page", list_page(&first));
    let list_rv = first.body["metadata"]["resourceVersion"].clone();
    let token = first.body["metadata"]["continue"].as_str().unwrap_or_default().to_owned();
    t.post(&cms, &configmap("bb", &json!({}))).await;
    t.delete(&format!("{cms}/d")).await;
    let second = t.get(&format!("{cms}?limit=2&continue={token}")).await;
    out.step("second page, after changes", list_page(&second));
    out.step("same snapshot", json!(second.body["metadata"]["resourceVersion"] == list_rv));
    let token2 = second.body["metadata"]["continue"].as_str().unwrap_or_default().to_owned();
    out.step("last page", list_page(&t.get(&format!("{cms}?limit=2&continue={token2}")).await));
    out.step("everything", list_page(&t.get(&format!("{cms}?limit=500")).await));
    out.step("limit=0", list_page(&t.get(&format!("{cms}?limit=0")).await));

    out.step(
        "selected page",
        list_page(&t.get(&format!("{cms}?limit=2&labelSelector=first%3Dyes")).await),
    );
    out.step(
        "selected, limit 1",
        list_page(&t.get(&format!("{cms}?limit=1&labelSelector=first%3Dyes")).await),
    );
    out.step(
        "selected, nothing more matches",
        list_page(&t.get(&format!("{cms}?limit=1&labelSelector=first!%3Dyes")).await),
    );
    out.step(
        "selected, the last object",
        list_page(&t.get(&format!("{cms}?limit=1&fieldSelector=metadata.name%3De")).await),
    );

    out.step(
        "continue with a resourceVersion",
        status(&t.get(&format!("{cms}?limit=2&continue={token}&resourceVersion=3")).await, false),
    );
    out.step(
        "continue with a resourceVersionMatch",
        status(
            &t.get(&format!("{cms}?limit=2&continue={token}&resourceVersionMatch=NotOlderThan"))
                .await,
            false,
        ),
    );
    // The end of the message is Go's JSON decoder's; the rest is the API server's.
    let garbage = t.get(&format!("{cms}?continue=garbage")).await;
    let mut garbage = status(&garbage, false);
    let message: Vec<&str> =
        garbage["message"].as_str().unwrap_or_default().splitn(3, ": ").take(2).collect();
    garbage["message"] = json!(message.join(": "));
    out.step("garbage continue", garbage);
    out
}

/// Protects list-then-watch clients: what `resourceVersion` and `resourceVersionMatch` mean
/// for a list and a get, and the errors of impossible requests.
async fn resource_versions(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let a = t.post(&cms, &configmap("a", &json!({}))).await.body;
    t.post(&cms, &configmap("b", &json!({}))).await;
    let mut changed = a.clone();
    changed["data"]["k"] = json!("changed");
    let changed = t.put(&format!("{cms}/a"), &changed).await.body;
    let last = rv_of(&changed);
    let a_rv = rv_of(&a);

    let list_rv = |reply: &Reply| rv_of(&reply.body);
    let any = t.get(&format!("{cms}?resourceVersion=0&limit=1")).await;
    out.step(
        "rv=0 ignores the limit",
        json!({"page": list_page(&any), "rv not older": list_rv(&any) >= last}),
    );
    let consistent = t.get(&cms).await;
    out.step(
        "rv unset",
        json!({"page": list_page(&consistent), "rv not older": list_rv(&consistent) >= last}),
    );
    let exact = t.get(&format!("{cms}?resourceVersion={a_rv}&resourceVersionMatch=Exact")).await;
    out.step(
        "Exact",
        json!({"page": list_page(&exact), "rv": order(list_rv(&exact), a_rv),
        "data": exact.body["items"][0]["data"]}),
    );
    let legacy = t.get(&format!("{cms}?resourceVersion={a_rv}&limit=5")).await;
    out.step(
        "rv with a limit is exact",
        json!({"page": list_page(&legacy), "rv": order(list_rv(&legacy), a_rv)}),
    );
    let not_older =
        t.get(&format!("{cms}?resourceVersion={a_rv}&resourceVersionMatch=NotOlderThan")).await;
    out.step("NotOlderThan", json!({"page": list_page(&not_older), "rv not older than the last write": list_rv(&not_older) >= last}));
    let unset = t.get(&format!("{cms}?resourceVersion={a_rv}")).await;
    out.step("rv without match or limit", json!({"page": list_page(&unset), "rv not older than the last write": list_rv(&unset) >= last}));

    let future = last + 1_000_000;
    for (label, query) in [
        (
            "future, NotOlderThan",
            format!("resourceVersion={future}&resourceVersionMatch=NotOlderThan"),
        ),
        ("future, Exact", format!("resourceVersion={future}&resourceVersionMatch=Exact")),
        ("future, unset", format!("resourceVersion={future}")),
    ] {
        let reply = t.get(&format!("{cms}?{query}")).await;
        out.step(label, json!({"status": status(&reply, true), "retry-after": reply.retry_after}));
    }
    let get_future = t.get(&format!("{cms}/a?resourceVersion={future}")).await;
    out.step(
        "get from the future",
        json!({"status": status(&get_future, true), "retry-after": get_future.retry_after}),
    );
    let get_any = t.get(&format!("{cms}/a?resourceVersion=0")).await;
    out.step("get rv=0", json!({"http": get_any.status, "data": get_any.body["data"]}));

    out.step(
        "Exact without rv",
        status(&t.get(&format!("{cms}?resourceVersionMatch=Exact")).await, false),
    );
    out.step(
        "Exact at 0",
        status(&t.get(&format!("{cms}?resourceVersion=0&resourceVersionMatch=Exact")).await, false),
    );
    out.step(
        "unknown match",
        status(
            &t.get(&format!("{cms}?resourceVersion=1&resourceVersionMatch=Newest")).await,
            false,
        ),
    );
    out.step(
        "unknown match without rv",
        status(&t.get(&format!("{cms}?resourceVersionMatch=Newest")).await, false),
    );
    out.step("rv not a number", status(&t.get(&format!("{cms}?resourceVersion=abc")).await, false));
    out.step(
        "get rv not a number",
        status(&t.get(&format!("{cms}/a?resourceVersion=abc")).await, false),
    );
    out.step(
        "sendInitialEvents on a list",
        status(&t.get(&format!("{cms}?sendInitialEvents=true")).await, false),
    );
    out
}

/// Protects selector users (informers with tweak-list-options, `kubectl get -l`, field
/// selectors on names, namespaces and a pod's phase): which objects match, and the errors.
async fn selectors(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    t.post(&pods, &pod("web-0", &json!({"app": "web", "tier": "front"}))).await;
    t.post(&pods, &pod("web-1", &json!({"app": "web", "tier": "edge"}))).await;
    t.post(&pods, &pod("db-0", &json!({"app": "db"}))).await;
    let select = |query: &str| format!("{pods}?{query}");
    for query in [
        "labelSelector=app%3Dweb",
        "labelSelector=app%3D%3Dweb",
        "labelSelector=tier+in+(edge,x)",
        "labelSelector=tier+notin+(edge)",
        "labelSelector=!tier",
        "labelSelector=tier",
        "labelSelector=app!%3Dweb",
        "labelSelector=app%3Dweb,tier%3Dfront",
        "labelSelector=",
        "fieldSelector=metadata.name%3Dweb-1",
        "fieldSelector=metadata.name%3D%3Dweb-1",
        "fieldSelector=metadata.name!%3Dweb-1,metadata.name!%3Ddb-0",
        "fieldSelector=spec.nodeName%3D",
        "fieldSelector=status.phase%3DPending",
        "fieldSelector=status.phase!%3DPending",
        "fieldSelector=metadata.name%3Dweb-0&labelSelector=app%3Dweb",
    ] {
        out.step(query, list_page(&t.get(&select(query)).await));
    }
    let across = t.get(&format!("/api/v1/pods?fieldSelector=metadata.namespace%3D%3D{ns}")).await;
    let namespaces: Vec<Value> = across.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| json!(i["metadata"]["namespace"] == ns))
        .collect();
    out.step(
        "across namespaces by metadata.namespace",
        json!({"page": list_page(&across), "in the namespace": namespaces}),
    );
    out.step(
        "bad label selector",
        code_and_reason(&t.get(&select("labelSelector=app+in+(web")).await),
    );
    out.step(
        "unknown pod field",
        status(&t.get(&select("fieldSelector=spec.unknown%3Dx")).await, false),
    );
    out.step(
        "unsupported configmap field",
        status(
            &t.get(&format!("/api/v1/namespaces/{ns}/configmaps?fieldSelector=data.k%3Dx")).await,
            false,
        ),
    );
    out.step(
        "field selector without operator",
        code_and_reason(&t.get(&select("fieldSelector=metadata.name")).await),
    );
    let deleted = t.request("DELETE", &select("labelSelector=app%3Dweb"), None, None).await;
    out.step("deletecollection", json!({"http": deleted.status, "kind": deleted.body["kind"], "names": names(&deleted.body)}));
    out.step("what is left", list_page(&t.get(&pods).await));
    out
}

/// Collects a watch's events until the server ends it (`timeoutSeconds`).
async fn until_the_end(watch: &mut Watch, previous: &mut u64) -> Vec<Value> {
    let mut seen = Vec::new();
    while let Some(e) = watch.next_change().await {
        seen.push(event(&e, previous));
    }
    seen
}

/// Protects watchers (reflectors, `kubectl get -w`): event types in commit order, the
/// watch cache's selector semantics, the end at `timeoutSeconds`, where a watch from a
/// version the server has not reached starts.
async fn watch_events(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let existing = t.post(&cms, &configmap("existing", &json!({"app": "web"}))).await.body;
    let from = rv_of(&existing);
    let mut watch = t.watch(&format!("{cms}?watch=true&resourceVersion={from}")).await;
    out.step("watch status", json!(watch.status));
    let web = t.post(&cms, &configmap("web", &json!({"app": "web"}))).await.body;
    t.patch(
        &format!("{cms}/web"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"app": "db"}}}),
    )
    .await;
    t.post(
        &format!("/api/v1/namespaces/{ns}/secrets"),
        &json!({"metadata": {"name": "not-a-configmap"}}),
    )
    .await;
    t.delete(&format!("{cms}/web")).await;
    let mut previous = from;
    for _ in 0..3 {
        let e = watch.next_change().await.expect("an event");
        out.step("event", event(&e, &mut previous));
    }
    out.step("first event after the start", json!(order(rv_of(&web), from)));

    // From "": the current objects first; a selector turns changes into the watch cache's events.
    let mut selected = t.watch(&format!("{cms}?watch=1&labelSelector=app%3Dweb")).await;
    let mut previous = 0;
    out.step("selected: initial", event(&selected.next_change().await.unwrap(), &mut previous));
    let leave = t
        .patch(
            &format!("{cms}/existing"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"app": "db"}}}),
        )
        .await
        .body;
    t.patch(
        &format!("{cms}/existing"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"app": "web"}}}),
    )
    .await;
    let left = selected.next_change().await.unwrap();
    out.step("selected: stops matching", event(&left, &mut previous));
    out.step(
        "selected: the deleted object is the last matching state",
        json!({
        "labels": left["object"]["metadata"]["labels"],
        "rv is the change's": rv_of(&left["object"]) == rv_of(&leave)}),
    );
    out.step(
        "selected: matches again",
        event(&selected.next_change().await.unwrap(), &mut previous),
    );

    // One object: a watch by name.
    let mut one =
        t.watch(&format!("{cms}?watch=true&fieldSelector=metadata.name%3Dexisting")).await;
    let mut previous = 0;
    out.step("by name: initial", event(&one.next_change().await.unwrap(), &mut previous));
    t.post(&cms, &configmap("other", &json!({}))).await;
    t.delete(&format!("{cms}/existing")).await;
    out.step("by name: deleted", event(&one.next_change().await.unwrap(), &mut previous));

    let mut short = t
        .watch(&format!("{cms}?watch=true&resourceVersion={}&timeoutSeconds=1", rv_of(&leave)))
        .await;
    let mut previous = rv_of(&leave);
    out.step(
        "timeoutSeconds ends the watch after the replay",
        json!(until_the_end(&mut short, &mut previous).await),
    );

    // A version from the future: the watch opens and waits for it, silently.
    let future = rv_of(&leave) + 1_000_000;
    let mut ahead =
        t.watch(&format!("{cms}?watch=true&resourceVersion={future}&timeoutSeconds=2")).await;
    let mut previous = 0;
    let seen = until_the_end(&mut ahead, &mut previous).await;
    out.step("from the future", json!({"status": ahead.status, "events": seen}));

    out.step(
        "watch with a bad rv",
        status(
            &t.get(&format!("{cms}?watch=true&resourceVersion=abc&timeoutSeconds=2")).await,
            false,
        ),
    );
    out.step(
        "watch with a match but no sendInitialEvents",
        status(&t.get(&format!("{cms}?watch=true&resourceVersion=1&resourceVersionMatch=NotOlderThan&timeoutSeconds=2")).await, false),
    );
    out
}

/// Protects watch-list clients (client-go's `WatchListClient`, kube-rs' streaming lists): the
/// initial events, the `k8s.io/initial-events-end` bookmark, then changes; and the validation.
async fn streaming_list(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    t.post(&cms, &configmap("a", &json!({"app": "web"}))).await;
    let b = t.post(&cms, &configmap("b", &json!({}))).await.body;
    t.post(&format!("/api/v1/namespaces/{ns}/secrets"), &json!({"metadata": {"name": "s"}})).await;
    let query = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let mut watch = t.watch(&format!("{cms}?{query}")).await;
    out.step("status", json!(watch.status));
    let mut previous = 0;
    out.step("initial", event(&watch.next_change().await.unwrap(), &mut previous));
    out.step("initial", event(&watch.next_change().await.unwrap(), &mut previous));
    let end = watch.next_change().await.unwrap();
    out.step("end of initial events", event(&end, &mut previous));
    out.step(
        "bookmark rv not older than the last object",
        json!(rv_of(&end["object"]) >= rv_of(&b)),
    );
    t.delete(&format!("{cms}/a")).await;
    out.step("then changes", event(&watch.next_change().await.unwrap(), &mut previous));

    let mut selected = t.watch(&format!("{cms}?{query}&labelSelector=app%3Dweb")).await;
    let mut previous = 0;
    out.step("selected: end at once", event(&selected.next_change().await.unwrap(), &mut previous));

    let from = rv_of(&b);
    let mut from_rv = t.watch(&format!("{cms}?{query}&resourceVersion={from}")).await;
    let mut previous = 0;
    out.step("from an rv: initial", event(&from_rv.next_change().await.unwrap(), &mut previous));
    out.step("from an rv: end", event(&from_rv.next_change().await.unwrap(), &mut previous));

    let future = rv_of(&b) + 1_000_000;
    let mut ahead = t.watch(&format!("{cms}?{query}&resourceVersion={future}")).await;
    let mut previous = 0;
    out.step(
        "from the future",
        json!({"status": ahead.status, "events": until_the_end(&mut ahead, &mut previous).await}),
    );

    let without =
        "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=2";
    let mut no_bookmarks = t.watch(&format!("{cms}?{without}")).await;
    let mut previous = 0;
    out.step(
        "without bookmarks: no end bookmark",
        json!(until_the_end(&mut no_bookmarks, &mut previous).await),
    );

    let no_initial = "watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let mut quiet = t.watch(&format!("{cms}?{no_initial}&timeoutSeconds=1")).await;
    let mut previous = 0;
    out.step(
        "sendInitialEvents=false sends nothing before changes",
        json!(until_the_end(&mut quiet, &mut previous).await),
    );

    for (label, query) in [
        (
            "without resourceVersionMatch",
            "watch=true&sendInitialEvents=true&allowWatchBookmarks=true",
        ),
        (
            "with Exact",
            "watch=true&sendInitialEvents=true&resourceVersionMatch=Exact&allowWatchBookmarks=true",
        ),
        (
            "with continue",
            "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&continue=x",
        ),
    ] {
        // Bounded, in case a server accepts the watch.
        out.step(label, status(&t.get(&format!("{cms}?{query}&timeoutSeconds=2")).await, false));
    }
    out
}

/// Protects reflectors that resume from bookmarks: a watch that allows them gets one shortly
/// before it times out once the server has moved on (here: a write elsewhere), carrying only
/// the kind and a newer resourceVersion; a watch that does not allow them gets none.
async fn bookmarks(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let elsewhere = format!("{ns}-x");
    t.namespace(&elsewhere).await;
    let a = t.post(&cms, &configmap("a", &json!({}))).await.body;
    let query = format!("watch=true&resourceVersion={}&timeoutSeconds=5", rv_of(&a));
    let mut asked = t.watch(&format!("{cms}?{query}&allowWatchBookmarks=true")).await;
    let mut silent = t.watch(&format!("{cms}?{query}")).await;
    // A change the watches do not see (another namespace), which moves the server on.
    t.post(&format!("/api/v1/namespaces/{elsewhere}/configmaps"), &configmap("b", &json!({})))
        .await;
    let mut seen = Vec::new();
    while let Some(e) = asked.next().await {
        let mut previous = rv_of(&a);
        let mut summary = event(&e, &mut previous);
        summary["rv"] = json!(order(rv_of(&e["object"]), rv_of(&a)));
        seen.push(summary);
    }
    // The watch cache's bookmark timer works in whole seconds: depending on when the watch
    // started, the pre-timeout bookmark comes once or twice (at the same version).
    seen.dedup();
    out.step("a bookmark before the timeout", json!(seen));
    let mut seen = Vec::new();
    while let Some(e) = silent.next().await {
        seen.push(e["type"].clone());
    }
    out.step("none unless asked", json!(seen));
    out
}

/// The resources whose discovery entries both servers must agree on: every built-in the
/// embedded server serves, and their status subresources.
const BUILT_INS: &[(&str, &[&str])] = &[
    (
        "/api/v1",
        &[
            "configmaps",
            "endpoints",
            "events",
            "namespaces",
            "namespaces/status",
            "nodes",
            "nodes/status",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "persistentvolumes",
            "persistentvolumes/status",
            "pods",
            "pods/status",
            "secrets",
            "serviceaccounts",
            "services",
            "services/status",
        ],
    ),
    (
        "/apis/apps/v1",
        &[
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/status",
            "replicasets",
            "replicasets/status",
            "statefulsets",
            "statefulsets/status",
        ],
    ),
    ("/apis/batch/v1", &["cronjobs", "cronjobs/status", "jobs", "jobs/status"]),
    ("/apis/coordination.k8s.io/v1", &["leases"]),
    ("/apis/discovery.k8s.io/v1", &["endpointslices"]),
    ("/apis/events.k8s.io/v1", &["events"]),
    (
        "/apis/apiextensions.k8s.io/v1",
        &["customresourcedefinitions", "customresourcedefinitions/status"],
    ),
];

/// A discovery entry without what the embedded server does not have (storage version hashes).
fn discovery_entry(mut entry: Value) -> Value {
    if let Value::Object(map) = &mut entry {
        map.remove("storageVersionHash");
    }
    entry
}

/// Protects clients that read discovery (kubectl, client-go's `RESTMapper`, dynamic clients):
/// groups in priority order, resource entries with their verbs, names and scope.
async fn discovery(t: &Target, _ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let api = t.get("/api").await;
    out.step(
        "/api",
        json!({"http": api.status, "kind": api.body["kind"], "versions": api.body["versions"]}),
    );
    let apis = t.get("/apis").await;
    let known = [
        "apps",
        "batch",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "apiextensions.k8s.io",
    ];
    let groups: Vec<Value> = apis.body["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|g| known.contains(&g["name"].as_str().unwrap_or_default()))
        .map(|g| json!({"name": g["name"], "preferredVersion": g["preferredVersion"], "versions": g["versions"]}))
        .collect();
    out.step("/apis", json!({"http": apis.status, "kind": apis.body["kind"], "apiVersion": apis.body["apiVersion"], "groups": groups}));
    let apps = t.get("/apis/apps").await;
    out.step("/apis/apps", json!({"kind": apps.body["kind"], "apiVersion": apps.body["apiVersion"],
        "name": apps.body["name"], "versions": apps.body["versions"], "preferredVersion": apps.body["preferredVersion"]}));
    for (path, names) in BUILT_INS {
        let list = t.get(path).await.body;
        let entries: Vec<Value> = list["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| names.contains(&r["name"].as_str().unwrap_or_default()))
            .cloned()
            .map(discovery_entry)
            .collect();
        out.step(path, json!({"kind": list["kind"], "apiVersion": list["apiVersion"], "groupVersion": list["groupVersion"],
            "resources": entries}));
    }
    out.step("unknown group version", status(&t.get("/apis/nope.example.com/v1").await, false));
    out.step("unknown group", status(&t.get("/apis/nope.example.com").await, false));
    out
}

/// A table as kubectl reads it: the columns, and each row's cells (ages masked: they depend on
/// when the request came) and embedded object kind.
fn table(reply: &Reply) -> Value {
    let columns = reply.body["columnDefinitions"].as_array().cloned().unwrap_or_default();
    let ages: Vec<usize> =
        columns.iter().enumerate().filter(|(_, c)| c["name"] == "Age").map(|(i, _)| i).collect();
    let rows: Vec<Value> = reply.body["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let mut cells = r["cells"].as_array().cloned().unwrap_or_default();
            for &i in &ages {
                if let Some(cell) = cells.get_mut(i) {
                    *cell =
                        json!(cell.as_str().is_some_and(|a| a.ends_with('s') || a.ends_with('m')));
                }
            }
            json!({"cells": cells, "object": r["object"]["kind"]})
        })
        .collect();
    json!({"http": reply.status, "kind": reply.body["kind"], "apiVersion": reply.body["apiVersion"],
           "columns": columns, "rows": rows})
}

/// Protects kubectl's `get` output: server-side tables of the built-ins that have a printer
/// here, and partial object metadata.
async fn tables(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let base = format!("/api/v1/namespaces/{ns}");
    t.post(
        &format!("{base}/configmaps"),
        &json!({"metadata": {"name": "a"}, "data": {"x": "1"}, "binaryData": {"y": "AA=="}}),
    )
    .await;
    t.post(
        &format!("{base}/secrets"),
        &json!({"metadata": {"name": "s"}, "stringData": {"a": "b"}}),
    )
    .await;
    t.post(&format!("{base}/serviceaccounts"), &json!({"metadata": {"name": "sa"}})).await;
    t.post(&format!("{base}/pods"), &pod("p", &json!({}))).await;
    t.post(
        &format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"),
        &json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}}),
    )
    .await;
    for path in [
        format!("{base}/configmaps"),
        format!("{base}/configmaps/a"),
        format!("{base}/secrets"),
        format!("{base}/serviceaccounts"),
        format!("{base}/pods"),
        format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"),
        base.clone(),
    ] {
        let label = path.replace(ns, "NS");
        out.step(&label, table(&t.request("GET", &path, Some(TABLE), None).await));
    }
    let none =
        t.request("GET", &format!("{base}/configmaps?includeObject=None"), Some(TABLE), None).await;
    out.step("includeObject=None", json!(none.body["rows"][0]["object"]));
    let object = t
        .request("GET", &format!("{base}/configmaps?includeObject=Object"), Some(TABLE), None)
        .await;
    out.step("includeObject=Object", json!(object.body["rows"][0]["object"]["kind"]));
    let partial = t
        .request(
            "GET",
            &format!("{base}/configmaps"),
            Some("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"),
            None,
        )
        .await;
    out.step("partial metadata", json!({"kind": partial.body["kind"], "apiVersion": partial.body["apiVersion"],
        "items": partial.body["items"].as_array().map(|i| i.iter().map(|i| i["kind"].clone()).collect::<Vec<_>>())}));
    let content = t.get(&format!("{base}/configmaps")).await;
    out.step("content type", json!(content.content_type));
    out
}

/// Protects what the operator toolkit leans on: the finalizer helper's `test`-guarded JSON
/// patches and the deletion they hold up, a workload's `scale` subresource (`get_scale`,
/// `replace_scale`, `patch_scale`), and eviction with and without a disruption budget in the
/// way (`evict`, `is_too_many_requests`).
async fn toolkit_subresources(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let json_patch = "application/json-patch+json";
    t.post(&cms, &configmap("held", &json!({}))).await;
    // The finalizer helper's addition: tested absent (a missing member tests as null).
    let add = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/cleanup"]},
    ]);
    let added = t.patch(&format!("{cms}/held"), json_patch, &add).await;
    out.step(
        "finalizer added",
        json!({"http": added.status, "finalizers": added.body["metadata"]["finalizers"]}),
    );
    out.step(
        "the same addition again: its test fails",
        status(&t.patch(&format!("{cms}/held"), json_patch, &add).await, false),
    );
    let deleted = t.delete(&format!("{cms}/held")).await;
    out.step(
        "delete held by a finalizer",
        json!({"http": deleted.status,
               "deleting": deleted.body["metadata"]["deletionTimestamp"].is_string(),
               "finalizers": deleted.body["metadata"]["finalizers"]}),
    );
    let stale = json!([
        {"op": "test", "path": "/metadata/finalizers/0", "value": "someone-else"},
        {"op": "remove", "path": "/metadata/finalizers/0"},
    ]);
    out.step(
        "removal whose test fails",
        status(&t.patch(&format!("{cms}/held"), json_patch, &stale).await, false),
    );
    let remove = json!([
        {"op": "test", "path": "/metadata/finalizers/0", "value": "example.com/cleanup"},
        {"op": "remove", "path": "/metadata/finalizers/0"},
    ]);
    let removed = t.patch(&format!("{cms}/held"), json_patch, &remove).await;
    out.step("the last finalizer removed", json!({"http": removed.status}));
    out.step("then gone", status(&t.get(&format!("{cms}/held")).await, false));

    let deployments = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let labels = json!({"app": "web"});
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}},
    });
    t.post(&deployments, &deployment).await;
    let scale_of = |reply: &Reply| {
        json!({"http": reply.status, "kind": reply.body["kind"], "apiVersion": reply.body["apiVersion"],
               "name": reply.body["metadata"]["name"], "spec": reply.body["spec"],
               "selector": reply.body["status"]["selector"]})
    };
    let scale = format!("{deployments}/web/scale");
    let got = t.get(&scale).await;
    out.step("get scale", scale_of(&got));
    let mut replaced = got.body.clone();
    replaced["spec"]["replicas"] = json!(3);
    out.step("replace scale", scale_of(&t.put(&scale, &replaced).await));
    let patched =
        t.patch(&scale, "application/merge-patch+json", &json!({"spec": {"replicas": 5}})).await;
    out.step("patch scale", scale_of(&patched));
    let deployment = t.get(&format!("{deployments}/web")).await;
    out.step("the deployment's replicas", deployment.body["spec"]["replicas"].clone());
    out.step(
        "scale of a missing deployment",
        status(&t.get(&format!("{deployments}/nope/scale")).await, false),
    );

    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let eviction = |name: &str| {
        json!({"apiVersion": "policy/v1", "kind": "Eviction",
               "metadata": {"name": name, "namespace": ns}})
    };
    t.post(&pods, &pod("pending", &labels)).await;
    let evicted = t.post(&format!("{pods}/pending/eviction"), &eviction("pending")).await;
    out.step("evict a pending pod", status(&evicted, false));
    out.step("the evicted pod", code_and_reason(&t.get(&format!("{pods}/pending")).await));
    out.step(
        "evict a missing pod",
        status(&t.post(&format!("{pods}/nope/eviction"), &eviction("nope")).await, false),
    );
    // A running pod behind a budget no disruption controller has processed yet.
    t.post(&pods, &pod("running", &labels)).await;
    let mut running = t.get(&format!("{pods}/running")).await.body;
    running["status"]["phase"] = json!("Running");
    out.step("pod running", json!(t.put(&format!("{pods}/running/status"), &running).await.status));
    let budgets = format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets");
    let budget = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                        "metadata": {"name": "web"},
                        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}});
    out.step("budget created", json!(t.post(&budgets, &budget).await.status));
    let blocked = t.post(&format!("{pods}/running/eviction"), &eviction("running")).await;
    out.step(
        "evict behind an unprocessed budget",
        json!({"status": status(&blocked, false), "retry-after": blocked.retry_after}),
    );
    out.step("the pod stays", json!(t.get(&format!("{pods}/running")).await.status));
    out
}

/// Protects clients that install CRDs and then use them (operators, `kubectl apply` of a CRD
/// and its objects): creation, becoming served, the CRD's status, discovery, objects at every
/// served version, the status subresource, deletion.
async fn custom_resources(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let group = format!("{ns}.example.com");
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let crontabs = format!("/apis/{group}/v1/namespaces/{ns}/crontabs");
    out.step("before", status(&t.get(&crontabs).await, false));
    let created = t.post(crds, &crontab_crd(&group, "Namespaced")).await;
    out.step("create", json!({"http": created.status, "kind": created.body["kind"]}));
    t.wait_for_status(&crontabs, 200).await;
    let name = format!("crontabs.{group}");
    // Established: the condition the apiextensions controllers set.
    let start = tokio::time::Instant::now();
    let crd = loop {
        let crd = t.get(&format!("{crds}/{name}")).await.body;
        let established = crd["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Established" && c["status"] == "True");
        if established {
            break crd;
        }
        assert!(start.elapsed() < DEADLINE, "{}: the CRD is not established", t.name());
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut conditions: Vec<Value> = crd["status"]["conditions"].as_array().into_iter().flatten()
        .map(|c| json!({"type": c["type"], "status": c["status"], "reason": c["reason"], "message": c["message"]}))
        .collect();
    conditions.sort_by_key(|c| c["type"].as_str().unwrap_or_default().to_owned());
    out.step(
        "status",
        json!({"conditions": conditions, "acceptedNames": crd["status"]["acceptedNames"],
        "storedVersions": crd["status"]["storedVersions"]}),
    );
    let apis = t.get("/apis").await.body;
    let order: Vec<Value> = apis["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|g| {
            ["apps", "discovery.k8s.io", group.as_str()]
                .contains(&g["name"].as_str().unwrap_or_default())
        })
        .map(|g| json!(g["name"].as_str().map(|n| n.replace(&group, "GROUP"))))
        .collect();
    out.step("the group comes after the built-in ones", json!(order));
    let listed = apis["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| g["name"] == group.as_str())
        .cloned();
    out.step(
        "in /apis",
        json!(listed.map(
            |g| json!({"versions": g["versions"], "preferredVersion": g["preferredVersion"]})
        )),
    );
    for version in ["v1", "v1beta1"] {
        let list = t.get(&format!("/apis/{group}/{version}")).await.body;
        let resources: Vec<Value> = list["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .cloned()
            .map(discovery_entry)
            .collect();
        out.step(&format!("/apis/{{group}}/{version}"), json!({"kind": list["kind"], "apiVersion": list["apiVersion"],
            "groupVersion": list["groupVersion"].as_str().map(|g| g.replace(&group, "GROUP")), "resources": resources}));
    }

    custom_objects(&mut out, t, &group, ns).await;

    let mut misnamed = crontab_crd(&group, "Namespaced");
    misnamed["metadata"]["name"] = json!("wrong");
    let invalid = t.post(crds, &misnamed).await;
    out.step("a misnamed CRD", json!({"http": invalid.status, "reason": invalid.body["reason"],
        "causes": invalid.body["details"]["causes"].as_array().map(|c| c.iter().filter(|c| c["field"] == "metadata.name").cloned().collect::<Vec<_>>())}));

    let deleted = t.delete(&format!("{crds}/{name}")).await;
    out.step("delete the CRD", json!({"http": deleted.status, "kind": deleted.body["kind"]}));
    t.wait_for_status(&crontabs, 404).await;
    t.wait_for_status(&format!("{crds}/{name}"), 404).await;
    out.step("after", status(&t.get(&crontabs).await, false));
    out
}

/// The objects of the CRD of [`custom_resources`]: create, list, read at another version,
/// tables, field selectors, the status subresource.
async fn custom_objects(out: &mut Transcript, t: &Target, group: &str, ns: &str) {
    let crontabs = format!("/apis/{group}/v1/namespaces/{ns}/crontabs");
    let ct = json!({"apiVersion": format!("{group}/v1"), "kind": "CronTab", "metadata": {"name": "my-cron"},
                    "spec": {"cronSpec": "* * * * */5", "replicas": 3}, "status": {"claimed": true}});
    let created = t.post(&crontabs, &ct).await;
    out.step(
        "create an object",
        json!({"http": created.status, "kind": created.body["kind"],
        "generation": created.body["metadata"]["generation"], "spec": created.body["spec"],
        "status is dropped": created.body["status"]}),
    );
    let list = t.get(&crontabs).await.body;
    out.step("list", json!({"kind": list["kind"], "items": list["items"].as_array().map(|i| i.iter().map(|i| (i["kind"].clone(), i["apiVersion"] == format!("{group}/v1"))).collect::<Vec<_>>())}));
    let beta = t.get(&format!("/apis/{group}/v1beta1/namespaces/{ns}/crontabs/my-cron")).await.body;
    out.step("at v1beta1", json!(beta["apiVersion"] == format!("{group}/v1beta1")));
    let table = t.request("GET", &crontabs, Some(TABLE), None).await.body;
    out.step("table", json!({"columns": table["columnDefinitions"].as_array().map(|c| c.iter().map(|c| c["name"].clone()).collect::<Vec<_>>()),
        "cells": table["rows"][0]["cells"].as_array().map(|c| c[..c.len().min(3)].to_vec())}));
    out.step("missing", status(&t.get(&format!("{crontabs}/nope")).await, false));
    out.step(
        "field selector on a spec field",
        status(&t.get(&format!("{crontabs}?fieldSelector=spec.replicas%3D3")).await, false),
    );
    out.step(
        "field selector on the name",
        list_page(&t.get(&format!("{crontabs}?fieldSelector=metadata.name%3Dmy-cron")).await),
    );

    let mut with_status = created.body.clone();
    with_status["status"] = json!({"ok": true});
    with_status["spec"]["replicas"] = json!(4);
    let main = t.put(&format!("{crontabs}/my-cron"), &with_status).await.body;
    out.step(
        "update ignores the status",
        json!({"status": main["status"], "generation": main["metadata"]["generation"]}),
    );
    with_status["metadata"]["resourceVersion"] = main["metadata"]["resourceVersion"].clone();
    with_status["spec"]["replicas"] = json!(9);
    let status_put = t.put(&format!("{crontabs}/my-cron/status"), &with_status).await.body;
    out.step(
        "/status changes only the status",
        json!({"status": status_put["status"], "replicas": status_put["spec"]["replicas"],
        "generation": status_put["metadata"]["generation"]}),
    );
}

/// managedFields as controllers read them: each entry's manager, operation, apiVersion,
/// subresource and fields (not its time), in a stable order.
fn managed(obj: &Value) -> Value {
    let mut entries: Vec<Value> = obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            json!({"manager": e["manager"], "operation": e["operation"],
                   "apiVersion": e["apiVersion"], "subresource": e["subresource"],
                   "fieldsType": e["fieldsType"], "fieldsV1": e["fieldsV1"]})
        })
        .collect();
    entries.sort_by_key(|e| {
        (e["manager"].to_string(), e["operation"].to_string(), e["subresource"].to_string())
    });
    json!(entries)
}

/// Protects controllers that write with server-side apply (controller-runtime's and kube-rs's
/// `Patch::Apply`, `kubectl apply --server-side`): ownership recorded per manager, shared
/// ownership of equal values, conflicts and `force`, fields removed when their applier drops
/// them, list elements merged by name, Updates named by `fieldManager` or the User-Agent,
/// status writes, and a reset of managedFields.
async fn server_side_apply(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let apply = "application/apply-patch+yaml";
    let merge = "application/merge-patch+json";
    let cm = format!("/api/v1/namespaces/{ns}/configmaps/cfg");
    let config = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": data});
    let seen = |reply: &Reply| {
        json!({"http": reply.status, "data": reply.body["data"],
               "labels": reply.body["metadata"]["labels"], "managed": managed(&reply.body)})
    };
    let as_one = format!("{cm}?fieldManager=one");
    let as_two = format!("{cm}?fieldManager=two");
    let r = t.patch(&as_one, apply, &config(json!({"a": "1", "b": "1"}))).await;
    out.step("apply creates", seen(&r));
    let r = t.patch(&as_two, apply, &config(json!({"a": "1", "c": "1"}))).await;
    out.step("an equal value is shared", seen(&r));
    let r = t.patch(&as_two, apply, &config(json!({"a": "1", "b": "2", "c": "1"}))).await;
    out.step("a conflict", status(&r, false));
    let r = t
        .patch(
            &format!("{as_two}&force=true"),
            apply,
            &config(json!({"a": "1", "b": "2", "c": "1"})),
        )
        .await;
    out.step("forced", seen(&r));
    let r = t.patch(&as_one, apply, &config(json!({"d": "1"}))).await;
    out.step("a shared field dropped by one applier stays", seen(&r));
    let r = t.patch(&as_two, apply, &config(json!({"b": "2"}))).await;
    out.step("fields dropped by their only applier go", seen(&r));
    let r = t.patch(&cm, apply, &config(json!({"b": "2"}))).await;
    out.step("apply without a field manager", status(&r, false));

    let mut current = t.get(&cm).await.body;
    current["data"]["b"] = json!("3");
    let r = t
        .request_as(
            "PUT",
            &cm,
            None,
            Some(("application/json", &current)),
            Some("kubectl-edit/v1.31.0 (linux/amd64) kubernetes/abcdef"),
        )
        .await;
    out.step("an update named by its User-Agent", seen(&r));
    let r = t.patch(&as_two, apply, &config(json!({"b": "4"}))).await;
    out.step("a conflict with an updater", status(&r, false));
    let label = |v: &str| json!({"metadata": {"labels": {"x": v}}});
    t.patch(&format!("{cm}?fieldManager=editor"), merge, &label("1")).await;
    let r =
        t.patch(&format!("{cm}?fieldManager=editor"), merge, &json!({"data": {"e": "1"}})).await;
    out.step("updates by one manager are one entry", seen(&r));
    let list = t.get(&format!("/api/v1/namespaces/{ns}/configmaps")).await;
    out.step("listed", managed(&list.body["items"][0]));
    let r = t
        .patch(
            &format!("{cm}?fieldManager=resetter"),
            merge,
            &json!({"metadata": {"managedFields": [{}]}}),
        )
        .await;
    out.step("reset", seen(&r));
    let r = t
        .patch(
            &format!("{cm}?fieldManager=resetter"),
            merge,
            &json!({"metadata": {"managedFields": []}, "data": {"f": "1"}}),
        )
        .await;
    out.step("an empty list keeps them", seen(&r));

    let r = t.patch(&as_one, apply, &config(json!({"b": "5", "e": "5"}))).await;
    out.step("conflicts with two managers", status(&r, false));

    applied_creates(&mut out, t, ns).await;
    applied_deployment(&mut out, t, ns).await;
    out
}

/// Creates named by their User-Agent and by `fieldManager`, and a watch event's managedFields.
async fn applied_creates(out: &mut Transcript, t: &Target, ns: &str) {
    let seen = |reply: &Reply| {
        json!({"http": reply.status, "data": reply.body["data"],
               "labels": reply.body["metadata"]["labels"], "managed": managed(&reply.body)})
    };
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let mut watch =
        t.watch(&format!("{cms}?watch=true&fieldSelector=metadata.name%3Dposted")).await;
    let posted = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "posted", "labels": {"app": "x"}}, "data": {"k": "v"}});
    let agent = Some("informer-tests/0.1 (linux)");
    let body = Some(("application/json", &posted));
    let r = t.request_as("POST", &cms, None, body, agent).await;
    out.step("a create named by its User-Agent", seen(&r));
    let event = watch.next_change().await.unwrap_or_default();
    out.step(
        "the watch event",
        json!({"type": event["type"], "managed": managed(&event["object"])}),
    );
    let mut named = posted.clone();
    named["metadata"]["name"] = json!("named");
    let r = t
        .request_as(
            "POST",
            &format!("{cms}?fieldManager=creator"),
            None,
            Some(("application/json", &named)),
            agent,
        )
        .await;
    out.step("a create with a field manager", seen(&r));
}

/// A Deployment's containers applied by two managers: merged by name, a conflict in one,
/// forced, one dropped, and a status write.
async fn applied_deployment(out: &mut Transcript, t: &Target, ns: &str) {
    let apply = "application/apply-patch+yaml";
    let merge = "application/merge-patch+json";
    let deployments = format!("/apis/apps/v1/namespaces/{ns}/deployments");
    let web = format!("{deployments}/web");
    let labels = json!({"app": "web"});
    let deployment = |containers: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"selector": {"matchLabels": labels},
                        "template": {"metadata": {"labels": labels},
                                     "spec": {"containers": containers}}}})
    };
    let shown = |reply: &Reply| {
        let names: Vec<Value> = reply.body["spec"]["template"]["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| json!([c["name"], c["image"]]))
            .collect();
        json!({"http": reply.status, "containers": names, "managed": managed(&reply.body)})
    };
    let pause = "registry.k8s.io/pause:3.10";
    let r = t
        .patch(
            &format!("{web}?fieldManager=one"),
            apply,
            &deployment(json!([{"name": "app", "image": pause}])),
        )
        .await;
    out.step("deployment applied", shown(&r));
    let r = t
        .patch(
            &format!("{web}?fieldManager=two"),
            apply,
            &deployment(json!([{"name": "sidecar", "image": pause}])),
        )
        .await;
    out.step("containers merged by name", shown(&r));
    let r = t
        .patch(
            &format!("{web}?fieldManager=two"),
            apply,
            &deployment(json!([{"name": "app", "image": "registry.k8s.io/pause:3.9"}])),
        )
        .await;
    out.step("a container's image conflicts", status(&r, false));
    let r = t
        .patch(
            &format!("{web}?fieldManager=one&force=true"),
            apply,
            &deployment(json!([{"name": "app", "image": "registry.k8s.io/pause:3.9"}])),
        )
        .await;
    out.step("a container's image forced", shown(&r));
    let r = t.patch(&format!("{web}?fieldManager=two"), apply, &deployment(json!([]))).await;
    out.step("an element dropped by its only applier goes", shown(&r));
    let r = t
        .patch(
            &format!("{web}/status?fieldManager=statuser"),
            merge,
            &json!({"status": {"observedGeneration": 5, "replicas": 3}}),
        )
        .await;
    out.step("status write", shown(&r));
}

/// Protects reflectors' recovery: once history is gone, a continue token, an exact list and a
/// watch from before it get `410 Expired` (the signal to relist), each as the real server
/// sends it, and the token in the 410 resumes the list.
async fn expired_history(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    for name in ["a", "b", "c"] {
        t.post(&cms, &configmap(name, &json!({}))).await;
    }
    let first = t.get(&format!("{cms}?limit=2")).await;
    let token = first.body["metadata"]["continue"].as_str().unwrap_or_default().to_owned();
    let old = rv_of(&first.body);
    // A write after the list, so that compacting at the current version takes the list's away.
    t.post(&cms, &configmap("d", &json!({}))).await;
    t.forget_history().await;
    // After a restart the real server needs a moment before it serves again.
    t.wait_for_status(&cms, 200).await;
    let expired = t.get(&format!("{cms}?limit=2&continue={token}")).await;
    out.step("continue after compaction", status(&expired, false));
    let resume = expired.body["metadata"]["continue"].as_str().unwrap_or_default().to_owned();
    out.step("a resume token", json!(!resume.is_empty()));
    if !resume.is_empty() {
        out.step("resumed", list_page(&t.get(&format!("{cms}?limit=10&continue={resume}")).await));
    }
    let exact = t.get(&format!("{cms}?resourceVersion={old}&resourceVersionMatch=Exact")).await;
    out.step("exact list of a compacted version", status(&exact, true));
    let legacy = t.get(&format!("{cms}?resourceVersion={old}&limit=1")).await;
    out.step("paged list at a compacted version", status(&legacy, true));
    let mut watch =
        t.watch(&format!("{cms}?watch=true&resourceVersion={old}&timeoutSeconds=5")).await;
    let mut previous = 0;
    let events = until_the_end(&mut watch, &mut previous).await;
    out.step("watch from a compacted version", json!({"status": watch.status, "events": events}));
    let current = t.get(&format!("{cms}/a?resourceVersion={old}")).await;
    out.step(
        "get at a compacted version",
        json!({"http": current.status, "name": current.body["metadata"]["name"]}),
    );
    out
}

/// An owned object: a `ConfigMap` or `Secret` (`kind`) named `name` whose owners are the given
/// `ConfigMap`s, each with whether it blocks its owner's foreground deletion.
fn owned(kind: &str, name: &str, owners: &[(&Value, bool)]) -> Value {
    let references: Vec<Value> = owners
        .iter()
        .map(|(owner, block)| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
                   "uid": owner["metadata"]["uid"], "blockOwnerDeletion": block})
        })
        .collect();
    json!({"apiVersion": "v1", "kind": kind,
           "metadata": {"name": name, "ownerReferences": references}})
}

/// What a client sees of the named objects (`configmaps/x` or `secrets/x`): whether each
/// exists, its finalizers, its owners by name (uids differ between servers) and whether it
/// is being deleted.
async fn objects(t: &Target, ns: &str, which: &[&str]) -> Value {
    let mut seen = serde_json::Map::new();
    for path in which {
        let reply = t.get(&format!("/api/v1/namespaces/{ns}/{path}")).await;
        let view = if reply.status == 404 {
            json!("absent")
        } else {
            let meta = &reply.body["metadata"];
            let owners: Vec<Value> = meta["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| json!({"name": r["name"], "block": r["blockOwnerDeletion"]}))
                .collect();
            json!({"finalizers": meta["finalizers"], "owners": owners,
                   "deleting": meta["deletionTimestamp"].is_string()})
        };
        seen.insert((*path).to_owned(), view);
    }
    Value::Object(seen)
}

/// Polls [`objects`] until `settled` holds for what it shows (the garbage collector works
/// after the request that set it off), or [`DEADLINE`] passes; returns the last view, which
/// the transcript compares.
async fn settle(t: &Target, ns: &str, which: &[&str], settled: impl Fn(&Value) -> bool) -> Value {
    let start = tokio::time::Instant::now();
    loop {
        let seen = objects(t, ns, which).await;
        if settled(&seen) || start.elapsed() > DEADLINE {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn absent(seen: &Value, path: &str) -> bool {
    seen[path] == "absent"
}

/// What a DELETE answered: code, kind, and for an object kept for the collector its
/// finalizers and whether it is being deleted.
fn deleted(reply: &Reply) -> Value {
    json!({"http": reply.status, "kind": reply.body["kind"], "status": reply.body["status"],
           "finalizers": reply.body["metadata"]["finalizers"],
           "deleting": reply.body["metadata"]["deletionTimestamp"].is_string()})
}

/// Creates a `ConfigMap` or `Secret` in `ns`; returns what the server stored.
async fn create_in(t: &Target, ns: &str, kind: &str, body: Value) -> Value {
    let plural = if kind == "Secret" { "secrets" } else { "configmaps" };
    t.post(&format!("/api/v1/namespaces/{ns}/{plural}"), &body).await.body
}

/// [`garbage_collection`]'s background and foreground steps.
async fn gc_background_and_foreground(out: &mut Transcript, t: &Target, ns: &str, keep: &Value) {
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let create = async |kind: &str, body: Value| create_in(t, ns, kind, body).await;
    // Background (the default): the owner goes at once, its dependents after, recursively;
    // one with a finalizer is only marked; one with another owner stays, without the
    // reference to the gone owner.
    let bg = create("ConfigMap", configmap("bg", &json!({}))).await;
    let bg_cm = create("ConfigMap", owned("ConfigMap", "bg-cm", &[(&bg, false)])).await;
    create("Secret", owned("Secret", "bg-secret", &[(&bg, false)])).await;
    create("ConfigMap", owned("ConfigMap", "bg-grand", &[(&bg_cm, false)])).await;
    let mut held = owned("ConfigMap", "bg-held", &[(&bg, false)]);
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create("ConfigMap", held).await;
    create("ConfigMap", owned("ConfigMap", "bg-two", &[(&bg, false), (keep, false)])).await;
    out.step("background: delete the owner", deleted(&t.delete(&format!("{cms}/bg")).await));
    let which = [
        "configmaps/bg",
        "configmaps/bg-cm",
        "secrets/bg-secret",
        "configmaps/bg-grand",
        "configmaps/bg-held",
        "configmaps/bg-two",
    ];
    let seen = settle(t, ns, &which, |s| {
        absent(s, "configmaps/bg-cm")
            && absent(s, "secrets/bg-secret")
            && absent(s, "configmaps/bg-grand")
            && s["configmaps/bg-held"]["deleting"] == true
            && s["configmaps/bg-two"]["owners"].as_array().is_some_and(|o| o.len() == 1)
    })
    .await;
    out.step("background: dependents collected", seen);
    let release = json!({"metadata": {"finalizers": null}});
    let merge = "application/merge-patch+json";
    t.patch(&format!("{cms}/bg-held"), merge, &release).await;
    let seen = settle(t, ns, &["configmaps/bg-held"], |s| absent(s, "configmaps/bg-held")).await;
    out.step("background: the held dependent goes once released", seen);

    // Foreground: the owner waits, with `foregroundDeletion`, until no dependent blocks it.
    let fg = create("ConfigMap", configmap("fg", &json!({}))).await;
    let mut blocking = owned("ConfigMap", "fg-block", &[(&fg, true)]);
    blocking["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create("ConfigMap", blocking).await;
    create("Secret", owned("Secret", "fg-free", &[(&fg, false)])).await;
    create("ConfigMap", owned("ConfigMap", "fg-two", &[(&fg, false), (keep, false)])).await;
    let foreground = json!({"propagationPolicy": "Foreground"});
    let reply = t
        .request("DELETE", &format!("{cms}/fg"), None, Some(("application/json", &foreground)))
        .await;
    out.step("foreground: delete the owner", deleted(&reply));
    let which = ["configmaps/fg", "configmaps/fg-block", "secrets/fg-free", "configmaps/fg-two"];
    let seen = settle(t, ns, &which, |s| {
        absent(s, "secrets/fg-free")
            && s["configmaps/fg-block"]["deleting"] == true
            && s["configmaps/fg-two"]["owners"].as_array().is_some_and(|o| o.len() == 1)
    })
    .await;
    out.step("foreground: the owner waits for its blocking dependent", seen);
    t.patch(&format!("{cms}/fg-block"), merge, &release).await;
    let seen = settle(t, ns, &which, |s| absent(s, "configmaps/fg")).await;
    out.step("foreground: the owner goes after it", seen);
}

/// [`garbage_collection`]'s orphan, dangling-owner and deletecollection steps.
async fn gc_orphans_and_dangling_owners(out: &mut Transcript, t: &Target, ns: &str, keep: &Value) {
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let create = async |kind: &str, body: Value| create_in(t, ns, kind, body).await;
    // Orphan, by policy and by the deprecated `orphanDependents`: the dependents lose their
    // reference to the owner and stay.
    for (label, options) in [
        ("orphan", json!({"propagationPolicy": "Orphan"})),
        ("orphanDependents", json!({"orphanDependents": true})),
    ] {
        let owner_name = format!("or-{}", label.to_lowercase());
        let owner = create("ConfigMap", configmap(&owner_name, &json!({}))).await;
        let cm = format!("{owner_name}-cm");
        let two = format!("{owner_name}-two");
        create("ConfigMap", owned("ConfigMap", &cm, &[(&owner, true)])).await;
        create("Secret", owned("Secret", &two, &[(&owner, false), (keep, false)])).await;
        let reply = t
            .request(
                "DELETE",
                &format!("{cms}/{owner_name}"),
                None,
                Some(("application/json", &options)),
            )
            .await;
        out.step(&format!("{label}: delete the owner"), deleted(&reply));
        let owner_path = format!("configmaps/{owner_name}");
        let which = [owner_path.as_str(), &format!("configmaps/{cm}"), &format!("secrets/{two}")];
        let seen = settle(t, ns, &which, |s| absent(s, &owner_path)).await;
        out.step(&format!("{label}: dependents orphaned"), seen);
    }

    // Dangling owners: a dependent whose only owner never existed is collected; one with
    // another owner keeps that one.
    let ghost =
        json!({"metadata": {"name": "ghost", "uid": "6a3f1c2e-0000-4000-8000-000000000001"}});
    create("ConfigMap", owned("ConfigMap", "dangling", &[(&ghost, false)])).await;
    create("ConfigMap", owned("ConfigMap", "half", &[(&ghost, false), (keep, false)])).await;
    let which = ["configmaps/dangling", "configmaps/half"];
    let seen = settle(t, ns, &which, |s| {
        absent(s, "configmaps/dangling")
            && s["configmaps/half"]["owners"].as_array().is_some_and(|o| o.len() == 1)
    })
    .await;
    out.step("dangling: collected", seen);

    // deletecollection takes the same options.
    let mut dc = configmap("dc", &json!({"role": "dc"}));
    let dc = create("ConfigMap", std::mem::take(&mut dc)).await;
    create("ConfigMap", owned("ConfigMap", "dc-child", &[(&dc, false)])).await;
    let orphan = json!({"propagationPolicy": "Orphan"});
    let reply = t
        .request(
            "DELETE",
            &format!("{cms}?labelSelector=role%3Ddc"),
            None,
            Some(("application/json", &orphan)),
        )
        .await;
    out.step(
        "deletecollection with a policy",
        json!({"http": reply.status, "kind": reply.body["kind"], "names": names(&reply.body)}),
    );
    let which = ["configmaps/dc", "configmaps/dc-child"];
    let seen = settle(t, ns, &which, |s| absent(s, "configmaps/dc")).await;
    out.step("deletecollection: dependents orphaned", seen);
}

/// Protects controllers that rely on owner references (a `Deployment`'s `ReplicaSet`s, an
/// operator's children): background, foreground and orphan deletion, dangling owners, and
/// the validation of `propagationPolicy`, as kube-controller-manager's garbage collector and
/// kube-apiserver's registry do them. (The embedded server's collector, against the real one.)
async fn garbage_collection(t: &Target, ns: &str) -> Transcript {
    let mut out = Transcript::default();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let keep = t.post(&cms, &configmap("keep", &json!({}))).await.body;
    gc_background_and_foreground(&mut out, t, ns, &keep).await;
    gc_orphans_and_dangling_owners(&mut out, t, ns, &keep).await;

    // Validation.
    for (label, options) in [
        ("unknown policy", json!({"propagationPolicy": "Sideways"})),
        ("both set", json!({"propagationPolicy": "Orphan", "orphanDependents": true})),
    ] {
        let one = t
            .request("DELETE", &format!("{cms}/keep"), None, Some(("application/json", &options)))
            .await;
        out.step(&format!("{label}: delete"), status(&one, false));
        let all = t.request("DELETE", &cms, None, Some(("application/json", &options))).await;
        out.step(&format!("{label}: deletecollection"), status(&all, false));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

macro_rules! scenario_test {
    ($test:ident, $scenario:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            let Some(real) = shared().await else { return };
            conformance(stringify!($scenario), real, $scenario).await;
        }
    };
}

scenario_test!(crud_status_bodies_match, crud);
scenario_test!(bad_input_and_patches_match, bad_input_and_patches);
scenario_test!(paths_and_methods_match, paths_and_methods);
scenario_test!(deletes_and_create_defaults_match, deletes_and_defaults);
scenario_test!(list_pages_and_continue_tokens_match, list_pages);
scenario_test!(resource_version_rules_match, resource_versions);
scenario_test!(label_and_field_selectors_match, selectors);
scenario_test!(watch_event_sequences_match, watch_events);
scenario_test!(streaming_lists_match, streaming_list);
scenario_test!(bookmarks_before_a_watch_times_out_match, bookmarks);
scenario_test!(discovery_documents_match, discovery);
scenario_test!(tables_and_content_types_match, tables);
scenario_test!(custom_resource_lifecycle_matches, custom_resources);
scenario_test!(finalizers_scale_and_eviction_match, toolkit_subresources);
scenario_test!(server_side_apply_and_managed_fields_match, server_side_apply);
scenario_test!(owner_reference_garbage_collection_matches, garbage_collection);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_history_answers_match() {
    let Some(real) = private().await else { return };
    let _alone = PRIVATE_LOCK.lock().await;
    conformance("expired_history", real, expired_history).await;
}

/// The transcript diff itself: equal transcripts give nothing, a difference names the step.
#[test]
fn transcripts_diff_by_step() {
    let mut a = Transcript::default();
    a.step("one", json!(1));
    a.step("two", json!({"x": 1}));
    let mut b = Transcript::default();
    b.step("one", json!(1));
    assert!(diff(&a, &a).is_empty());
    let text = diff(&a, &b);
    assert!(text.contains("step 1 (two)") && text.contains("(no such step)"), "{text}");
    assert_eq!(mask("too old resource version: 12 (345)"), "too old resource version: N (N)");
}
