//! Webhooks as a cluster calls them: the real kube-apiserver (`tests/kube-apiserver/`) and the
//! embedded API server, side by side, call `informer-webhook` servers on loopback TLS (their CA
//! given as `caBundle`) for admission and CRD conversion. Each scenario runs the same requests
//! against both servers with the same assertions (kube-apiserver's answers, written out here),
//! and then checks that the two servers' transcripts are equal, as `tests/conformance.rs` does
//! for the protocol.
//!
//! The scenarios are kube's end-to-end ones (`test/e2e/apimachinery/webhook.go` and
//! `crd_conversion_webhook.go`), named on each test. Every webhook configuration selects the
//! test's own namespace alone (`namespaceSelector` on `kubernetes.io/metadata.name`) so that
//! tests sharing the real server never see each other's webhooks, and is deleted at the end.
//! kube-apiserver loads a new configuration asynchronously: each carries a *sentinel* webhook
//! that denies objects labelled for it, and a test starts once a dry-run probe is denied by it.
//!
//! Without Go the real server is not run here (see `informer_tests::kube_apiserver`): the
//! scenarios then run against the embedded server alone.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "in a test, a failed expect is a failed assertion"
)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use embedded_apiserver::{ApiServer, Config};
use informer_client::ClientError;
use informer_tests::kube_apiserver::KubeApiServer;
use informer_webhook::admission::AdmissionRequest;
use informer_webhook::conversion::ConversionRequest;
use informer_webhook::convert::{Conversions, Converter};
use informer_webhook::crd::{WebhookTarget, with_conversion_webhook};
use informer_webhook::testing::TestCa;
use informer_webhook::{CancellationToken, WebhookServer, WebhookServerBuilder};
use k8s_openapi::api::core::v1::ConfigMap;
use parking_lot::Mutex;
use serde_json::{Value, json};

/// How long any single answer or condition may take: the real server is slower.
const DEADLINE: Duration = Duration::from_secs(60);
/// How often a condition is checked again.
const POLL: Duration = Duration::from_millis(100);
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
/// The label a sentinel probe carries; the other webhooks leave such objects alone.
const SENTINEL: &str = "webhooks.informer.test/sentinel";

// ---------------------------------------------------------------------------------------------
// The two servers
// ---------------------------------------------------------------------------------------------

/// Which server a [`Target`] talks to.
enum Server {
    /// An embedded server of the scenario's own, kept running while the target lives.
    Embedded { _server: ApiServer },
    /// The real kube-apiserver the test process shares.
    Real(&'static KubeApiServer),
}

/// One of the two servers a scenario runs against, and an HTTP client for it.
struct Target {
    server: Server,
    base: String,
    http: reqwest::Client,
}

/// An HTTP answer: its status, `Warning` headers and body.
#[derive(Debug)]
struct Reply {
    status: u16,
    warnings: Vec<String>,
    body: Value,
}

/// The servers a scenario runs against: the real one when this test run has it, and an
/// embedded one configured as kube-apiserver behaves (namespaces must exist).
async fn targets() -> Vec<Target> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut targets = Vec::new();
    let real =
        tokio::task::spawn_blocking(KubeApiServer::shared).await.expect("the harness thread");
    if let Some(real) = real {
        targets.push(Target::real(real));
    }
    let embedded =
        Config::default().require_namespaces(true).start().await.expect("the embedded server");
    let base = embedded.url();
    targets.push(Target {
        server: Server::Embedded { _server: embedded },
        base,
        http: reqwest::Client::new(),
    });
    targets
}

impl Target {
    /// The real server, reached with the bearer token of the harness's kubeconfig, trusting
    /// its CA.
    fn real(server: &'static KubeApiServer) -> Self {
        let base = server.endpoints().server.clone();
        Self { server: Server::Real(server), base, http: server.https_client() }
    }

    fn name(&self) -> &'static str {
        match self.server {
            Server::Embedded { .. } => "embedded",
            Server::Real(_) => "kube-apiserver",
        }
    }

    /// This project's client for the server: how a controller meets the server's answers.
    fn client(&self) -> informer_client::Client {
        match &self.server {
            Server::Real(server) => server.client("cert"),
            Server::Embedded { .. } => {
                let url = self.base.parse().expect("the embedded server's URL");
                informer_client::Client::new(informer_client::Config::new(url))
                    .expect("a client for the embedded server")
            }
        }
    }

    async fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("a method");
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body.to_string());
        }
        let response = tokio::time::timeout(DEADLINE, request.send())
            .await
            .unwrap_or_else(|_| panic!("{}: no answer to {path} in time", self.name()))
            .unwrap_or_else(|e| panic!("{}: {path}: {e}", self.name()));
        let status = response.status().as_u16();
        let warnings = response
            .headers()
            .get_all("warning")
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        let bytes = tokio::time::timeout(DEADLINE, response.bytes())
            .await
            .unwrap_or_else(|_| panic!("{}: the body of {path} did not end in time", self.name()))
            .expect("a body");
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).trim().to_owned()));
        Reply { status, warnings, body }
    }

    async fn get(&self, path: &str) -> Reply {
        self.request("GET", path, None).await
    }

    async fn post(&self, path: &str, body: &Value) -> Reply {
        self.request("POST", path, Some(body)).await
    }

    async fn put(&self, path: &str, body: &Value) -> Reply {
        self.request("PUT", path, Some(body)).await
    }

    async fn delete(&self, path: &str) -> Reply {
        self.request("DELETE", path, None).await
    }

    /// Creates `namespace` (which kube-apiserver labels `kubernetes.io/metadata.name`).
    async fn namespace(&self, namespace: &str) {
        let reply =
            self.post("/api/v1/namespaces", &json!({"metadata": {"name": namespace}})).await;
        assert_eq!(reply.status, 201, "{}: creating namespace {namespace}: {reply:?}", self.name());
    }

    /// Creates the webhook configuration `configuration` at `kind` (`VALIDATING` or
    /// `MUTATING`), and returns once a dry-run probe in `namespace` is denied by its sentinel:
    /// from then on the server calls its webhooks.
    async fn configure(&self, kind: &str, configuration: &Value, namespace: &str) {
        let name = configuration["metadata"]["name"].as_str().expect("a named configuration");
        let reply = self.post(kind, configuration).await;
        assert_eq!(reply.status, 201, "{}: creating {name}: {reply:?}", self.name());
        let sentinel = format!("admission webhook \"{}\" denied the request", sentinel_name(name));
        let probe = configmap(namespace, "sentinel-probe", &[(SENTINEL, name)], &[]);
        let path = &format!("{}?dryRun=All", configmaps(namespace));
        let (probe, sentinel) = (&probe, &sentinel);
        until(self, &format!("{name} to be in force"), || async move {
            let reply = self.post(path, probe).await;
            let message = reply.body["message"].as_str().unwrap_or_default();
            message.starts_with(sentinel.as_str()).then_some(()).ok_or(reply)
        })
        .await;
    }

    /// Deletes the configuration `name` at `kind`.
    async fn unconfigure(&self, kind: &str, name: &str) {
        let reply = self.delete(&format!("{kind}/{name}")).await;
        assert_eq!(reply.status, 200, "{}: deleting {name}: {reply:?}", self.name());
    }
}

/// Calls `check` until it returns `Ok`, every [`POLL`], failing the test with its last `Err`
/// after [`DEADLINE`].
async fn until<T, E: std::fmt::Debug, F: Future<Output = Result<T, E>>>(
    target: &Target,
    what: &str,
    check: impl Fn() -> F,
) -> T {
    let start = tokio::time::Instant::now();
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) => assert!(
                start.elapsed() < DEADLINE,
                "{}: timed out after {DEADLINE:?} waiting for {what}; last: {last:?}",
                target.name()
            ),
        }
        tokio::time::sleep(POLL).await;
    }
}

/// A name no other test (or earlier run on the same server) uses.
fn unique(prefix: &str) -> String {
    format!("{prefix}-{:08x}", fastrand::u32(..))
}

fn configmaps(namespace: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/configmaps")
}

fn configmap(namespace: &str, name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> Value {
    let labels: BTreeMap<_, _> = labels.iter().copied().collect();
    let data: BTreeMap<_, _> = data.iter().copied().collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": namespace, "labels": labels},
           "data": data})
}

/// What a scenario observed on one server, to compare with the other's.
type Transcript = Vec<(String, Value)>;

/// Fails unless every server's transcript is the first one's.
fn same_transcripts(transcripts: &[(&'static str, Transcript)]) {
    let Some(((first, expected), rest)) = transcripts.split_first() else { return };
    for (name, transcript) in rest {
        for (step, ((what, want), (_, got))) in expected.iter().zip(transcript).enumerate() {
            assert_eq!(
                got, want,
                "step {step} ({what}): {name} answered differently from {first}\n\
                 {name}: {got:#}\n{first}: {want:#}"
            );
        }
        assert_eq!(expected.len(), transcript.len(), "{name} and {first} took different steps");
    }
}

// ---------------------------------------------------------------------------------------------
// The webhook server
// ---------------------------------------------------------------------------------------------

/// An `informer-webhook` server on loopback TLS, with its test CA, stopped on drop.
struct Hooks {
    ca: TestCa,
    port: u16,
    stop: CancellationToken,
}

impl Drop for Hooks {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Hooks {
    /// Serves `builder`'s webhooks and the sentinel (`/sentinel`, which denies everything it
    /// is asked), with a certificate for `127.0.0.1`.
    async fn start(builder: WebhookServerBuilder) -> Self {
        let ca = TestCa::new().expect("a test CA");
        let serving = ca.issue(&["127.0.0.1"]).expect("a serving certificate");
        let server = builder
            .validating("/sentinel", |request: AdmissionRequest<Value>| async move {
                Ok::<_, std::convert::Infallible>(request.deny("the sentinel denies its probes"))
            })
            .certificate_pem(serving.cert_pem, serving.key_pem)
            .build()
            .expect("the webhook server");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let port = listener.local_addr().expect("its address").port();
        let stop = CancellationToken::new();
        tokio::spawn({
            let stop = stop.clone();
            async move { server.serve(listener, stop).await }
        });
        Self { ca, port, stop }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The `clientConfig` of a webhook at `path`: its URL, and the CA as `caBundle`.
    fn client_config(&self, path: &str) -> Value {
        let config =
            WebhookTarget::url(self.url(path)).admission_client_config(self.ca.ca_pem().as_bytes());
        serde_json::to_value(config).expect("a client config")
    }

    /// A webhook configuration `name` whose `hooks` (each with its rules, client config and
    /// policies) apply in `namespace` alone, to objects not labelled [`SENTINEL`]; and the
    /// sentinel, which denies those that are, labelled with this configuration's name.
    fn configuration(&self, name: &str, namespace: &str, hooks: Vec<Value>) -> Value {
        let in_namespace = json!({"matchLabels": {"kubernetes.io/metadata.name": namespace}});
        let mut webhooks: Vec<Value> = hooks
            .into_iter()
            .map(|mut hook| {
                hook["namespaceSelector"] = in_namespace.clone();
                let object_selector =
                    hook["objectSelector"].as_object().cloned().unwrap_or_default();
                let mut expressions = object_selector
                    .get("matchExpressions")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                expressions.push(json!({"key": SENTINEL, "operator": "DoesNotExist"}));
                hook["objectSelector"]["matchExpressions"] = json!(expressions);
                hook["sideEffects"] = json!("None");
                hook["admissionReviewVersions"] = json!(["v1"]);
                hook
            })
            .collect();
        webhooks.push(json!({
            "name": sentinel_name(name),
            "clientConfig": self.client_config("/sentinel"),
            "rules": configmap_rules(&["CREATE"]),
            "namespaceSelector": in_namespace,
            "objectSelector": {"matchLabels": {SENTINEL: name}},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "failurePolicy": "Fail",
        }));
        json!({"metadata": {"name": name}, "webhooks": webhooks})
    }

    /// A webhook `name` on `path` for `rules`, with `extra` fields (policies, timeouts).
    fn webhook(&self, name: &str, path: &str, rules: Value, extra: &Value) -> Value {
        let mut hook = json!({"name": name, "clientConfig": self.client_config(path)});
        hook["rules"] = rules;
        for (key, value) in extra.as_object().into_iter().flatten() {
            hook[key] = value.clone();
        }
        hook
    }
}

fn sentinel_name(configuration: &str) -> String {
    format!("sentinel.{configuration}.webhooks.informer.test")
}

fn configmap_rules(operations: &[&str]) -> Value {
    json!([{"operations": operations, "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["configmaps"], "scope": "Namespaced"}])
}

// ---------------------------------------------------------------------------------------------
// Admission
// ---------------------------------------------------------------------------------------------

/// kube's e2e "should be able to deny pod and configmap creation" (`webhook.go`): a create
/// that a validating webhook denies reaches the client as the API server's error, carrying the
/// webhook's message, code and reason; nothing is stored; a create it allows goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_create_reaches_the_client_with_the_webhooks_message() {
    let hooks = Hooks::start(WebhookServer::builder().validating(
        "/deny",
        |request: AdmissionRequest<ConfigMap>| async move {
            let data = request.object.as_ref().and_then(|c| c.data.as_ref());
            Ok::<_, std::convert::Infallible>(match data {
                Some(data) if data.contains_key("forbidden") => {
                    request.deny("the configmap holds the key \"forbidden\"")
                }
                Some(data) if data.contains_key("invalid") => {
                    request.deny_with_code(422, "the key \"invalid\" is not valid here")
                }
                _ => request.allow(),
            })
        },
    ))
    .await;
    let mut transcripts = Vec::new();
    for target in targets().await {
        let namespace = unique("webhook-deny");
        target.namespace(&namespace).await;
        let configuration = unique("deny-configmaps");
        let hook = hooks.webhook(
            "deny.webhooks.informer.test",
            "/deny",
            configmap_rules(&["CREATE"]),
            &json!({"failurePolicy": "Fail"}),
        );
        target
            .configure(
                VALIDATING,
                &hooks.configuration(&configuration, &namespace, vec![hook]),
                &namespace,
            )
            .await;
        let mut transcript = Transcript::new();

        let denied = target
            .post(
                &configmaps(&namespace),
                &configmap(&namespace, "bad", &[], &[("forbidden", "x")]),
            )
            .await;
        assert_eq!(
            (denied.status, &denied.body),
            (
                403,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Failure",
                        "message": "admission webhook \"deny.webhooks.informer.test\" denied \
                                    the request: the configmap holds the key \"forbidden\"",
                        "reason": "Forbidden", "code": 403})
            ),
            "{}",
            target.name()
        );
        transcript.push(("denied".into(), json!([denied.status, denied.body])));
        denied_through_the_client(&target, &namespace).await;

        let invalid = target
            .post(
                &configmaps(&namespace),
                &configmap(&namespace, "invalid", &[], &[("invalid", "x")]),
            )
            .await;
        assert_eq!(
            (invalid.status, &invalid.body),
            (
                422,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Failure",
                        "message": "admission webhook \"deny.webhooks.informer.test\" denied \
                                    the request: the key \"invalid\" is not valid here",
                        "reason": "Invalid", "code": 422})
            ),
            "{}",
            target.name()
        );
        transcript.push(("denied with 422".into(), json!([invalid.status, invalid.body])));

        let stored = target.get(&format!("{}/bad", configmaps(&namespace))).await;
        assert_eq!(stored.status, 404, "{}: a denied object is not stored", target.name());
        transcript.push(("not stored".into(), json!(stored.status)));

        let allowed = target
            .post(&configmaps(&namespace), &configmap(&namespace, "good", &[], &[("fine", "x")]))
            .await;
        assert_eq!(allowed.status, 201, "{}: {allowed:?}", target.name());
        transcript.push(("allowed".into(), json!([allowed.status, allowed.body["data"]])));

        target.unconfigure(VALIDATING, &configuration).await;
        transcripts.push((target.name(), transcript));
    }
    same_transcripts(&transcripts);
}

/// The denial of the validating scenario through this project's client, as a controller meets
/// it: the API server's `Status`, with the webhook's message.
async fn denied_through_the_client(target: &Target, namespace: &str) {
    let typed: ConfigMap =
        serde_json::from_value(configmap(namespace, "bad-typed", &[], &[("forbidden", "x")]))
            .expect("a ConfigMap");
    match target.client().create(Some(namespace), &typed).await {
        Err(ClientError::Api { status, .. }) => assert_eq!(
            (status.code, status.reason.as_str(), status.message.as_str()),
            (
                403,
                "Forbidden",
                "admission webhook \"deny.webhooks.informer.test\" denied the request: \
                 the configmap holds the key \"forbidden\""
            ),
            "{}",
            target.name()
        ),
        other => panic!("{}: the denied create answered {other:?}", target.name()),
    }
}

/// kube's e2e "should mutate configmap" (`webhook.go`): a mutating webhook's change (a label
/// and a data key, sent back as the JSON patch `patch_from` computes) is in the object the
/// create answers and in the stored object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutating_webhooks_change_is_stored() {
    let hooks = Hooks::start(WebhookServer::builder().mutating(
        "/mutate",
        |request: AdmissionRequest<ConfigMap>| async move {
            let Some(original) = &request.object else { return Ok(request.allow()) };
            let mut changed = original.clone();
            changed
                .metadata
                .labels
                .get_or_insert_default()
                .insert("mutated-by".into(), "informer-webhook".into());
            changed.data.get_or_insert_default().insert("mutation-stage-1".into(), "yes".into());
            request.allow().warning("mutated by the test").patch_from(original, &changed)
        },
    ))
    .await;
    let mut transcripts = Vec::new();
    for target in targets().await {
        let namespace = unique("webhook-mutate");
        target.namespace(&namespace).await;
        let configuration = unique("mutate-configmaps");
        let hook = hooks.webhook(
            "mutate.webhooks.informer.test",
            "/mutate",
            configmap_rules(&["CREATE", "UPDATE"]),
            &json!({"failurePolicy": "Fail", "reinvocationPolicy": "Never"}),
        );
        target
            .configure(
                MUTATING,
                &hooks.configuration(&configuration, &namespace, vec![hook]),
                &namespace,
            )
            .await;
        let mut transcript = Transcript::new();

        let created = target
            .post(
                &configmaps(&namespace),
                &configmap(&namespace, "to-be-mutated", &[("app", "demo")], &[("a", "1")]),
            )
            .await;
        assert_eq!(created.status, 201, "{}: {created:?}", target.name());
        let want_labels = json!({"app": "demo", "mutated-by": "informer-webhook"});
        let want_data = json!({"a": "1", "mutation-stage-1": "yes"});
        assert_eq!(
            (&created.body["metadata"]["labels"], &created.body["data"]),
            (&want_labels, &want_data),
            "{}",
            target.name()
        );
        assert_eq!(created.warnings, [r#"299 - "mutated by the test""#], "{}", target.name());
        transcript.push((
            "created".into(),
            json!([created.body["metadata"]["labels"], created.body["data"], created.warnings]),
        ));

        let stored = target.get(&format!("{}/to-be-mutated", configmaps(&namespace))).await;
        assert_eq!(
            (&stored.body["metadata"]["labels"], &stored.body["data"]),
            (&want_labels, &want_data),
            "{}: the stored object has the mutation",
            target.name()
        );
        transcript.push((
            "stored".into(),
            json!([stored.body["metadata"]["labels"], stored.body["data"]]),
        ));

        // An update that drops the label gets it back.
        let mut update = stored.body.clone();
        update["metadata"]["labels"] = json!({"app": "demo"});
        update["data"] = json!({"b": "2"});
        let updated =
            target.put(&format!("{}/to-be-mutated", configmaps(&namespace)), &update).await;
        assert_eq!(updated.status, 200, "{}: {updated:?}", target.name());
        assert_eq!(
            (&updated.body["metadata"]["labels"], &updated.body["data"]),
            (&want_labels, &json!({"b": "2", "mutation-stage-1": "yes"})),
            "{}",
            target.name()
        );
        transcript.push((
            "updated".into(),
            json!([updated.body["metadata"]["labels"], updated.body["data"]]),
        ));

        target.unconfigure(MUTATING, &configuration).await;
        transcripts.push((target.name(), transcript));
    }
    same_transcripts(&transcripts);
}

/// kube's e2e "should honor timeout" (`webhook.go`): a webhook slower than its
/// `timeoutSeconds` refuses the write under `failurePolicy: Fail`, in kube-apiserver's words,
/// and is passed over under `Ignore`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_that_times_out_fails_closed_or_open_by_its_policy() {
    let calls = Arc::new(AtomicUsize::new(0));
    let hooks = Hooks::start(WebhookServer::builder().validating("/slow", {
        let calls = Arc::clone(&calls);
        move |request: AdmissionRequest<Value>| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move {
                // Past the webhook's `timeoutSeconds: 1`. The server stops waiting for this
                // handler at the request's `?timeout=1s` too and answers HTTP 504 then: should
                // that answer arrive before the API server's own deadline passes, it is a
                // failed call all the same, and the policy decides.
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok::<_, std::convert::Infallible>(request.allow())
            }
        }
    }))
    .await;
    let mut transcripts = Vec::new();
    for target in targets().await {
        let namespace = unique("webhook-timeout");
        target.namespace(&namespace).await;
        let configuration = unique("slow-configmaps");
        let slow = |policy: &str| {
            hooks.webhook(
                &format!("slow-{}.webhooks.informer.test", policy.to_lowercase()),
                "/slow",
                configmap_rules(&["CREATE"]),
                &json!({"failurePolicy": policy, "timeoutSeconds": 1,
                        "objectSelector": {"matchLabels": {"policy": policy}}}),
            )
        };
        let hooks_of_both = vec![slow("Fail"), slow("Ignore")];
        target
            .configure(
                VALIDATING,
                &hooks.configuration(&configuration, &namespace, hooks_of_both),
                &namespace,
            )
            .await;
        let mut transcript = Transcript::new();

        let before = calls.load(Ordering::SeqCst);
        let refused = target
            .post(
                &configmaps(&namespace),
                &configmap(&namespace, "closed", &[("policy", "Fail")], &[]),
            )
            .await;
        let url = hooks.url("/slow?timeout=1s");
        let error = format!(
            "failed calling webhook \"slow-fail.webhooks.informer.test\": failed to call webhook: \
             Post \"{url}\": context deadline exceeded"
        );
        assert_eq!(
            (refused.status, &refused.body),
            (
                500,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Failure",
                        "message": format!("Internal error occurred: {error}"),
                        "reason": "InternalError",
                        "details": {"causes": [{"message": error}]},
                        "code": 500})
            ),
            "{}",
            target.name()
        );
        assert!(calls.load(Ordering::SeqCst) > before, "{}: the webhook was called", target.name());
        let stored = target.get(&format!("{}/closed", configmaps(&namespace))).await;
        assert_eq!(stored.status, 404, "{}: a refused object is not stored", target.name());
        let port = format!(":{}/", hooks.port);
        let normalised = refused.body.to_string().replace(&port, ":PORT/");
        transcript.push(("fail closed".into(), json!([refused.status, normalised, stored.status])));

        let before = calls.load(Ordering::SeqCst);
        let passed = target
            .post(
                &configmaps(&namespace),
                &configmap(&namespace, "open", &[("policy", "Ignore")], &[]),
            )
            .await;
        assert_eq!(passed.status, 201, "{}: {passed:?}", target.name());
        assert!(calls.load(Ordering::SeqCst) > before, "{}: the webhook was called", target.name());
        let stored = target.get(&format!("{}/open", configmaps(&namespace))).await;
        assert_eq!(stored.status, 200, "{}: {stored:?}", target.name());
        transcript
            .push(("fail open".into(), json!([passed.status, passed.warnings, stored.status])));

        target.unconfigure(VALIDATING, &configuration).await;
        transcripts.push((target.name(), transcript));
    }
    same_transcripts(&transcripts);
}

// ---------------------------------------------------------------------------------------------
// Conversion
// ---------------------------------------------------------------------------------------------

/// v1 of the kind: where the service is, as one `host:port` string, and how many replicas.
mod v1 {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::{Deserialize, Serialize};

    #[derive(Clone, Debug, Deserialize, informer_derive::Informer)]
    #[informer(group = "conversion.webhooks.informer.test", version = "v1")]
    pub struct Gadget {
        pub metadata: ObjectMeta,
        pub spec: GadgetSpec,
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    pub struct GadgetSpec {
        pub address: String,
        pub replicas: i32,
    }
}

/// v2, the hub: the address split into host and port, replicas renamed instances, and a
/// protocol v1 cannot hold.
mod v2 {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::{Deserialize, Serialize};

    #[derive(Clone, Debug, Deserialize, informer_derive::Informer)]
    #[informer(group = "conversion.webhooks.informer.test", version = "v2", storage = false)]
    pub struct Gadget {
        pub metadata: ObjectMeta,
        pub spec: GadgetSpec,
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    pub struct GadgetSpec {
        pub host: String,
        pub port: i32,
        pub instances: i32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub protocol: Option<String>,
    }
}

impl From<v2::Gadget> for v1::Gadget {
    fn from(hub: v2::Gadget) -> Self {
        let spec = v1::GadgetSpec {
            address: format!("{}:{}", hub.spec.host, hub.spec.port),
            replicas: hub.spec.instances,
        };
        Self { metadata: hub.metadata, spec }
    }
}

impl From<v1::Gadget> for v2::Gadget {
    fn from(spoke: v1::Gadget) -> Self {
        let (host, port) =
            spoke.spec.address.rsplit_once(':').unwrap_or((&spoke.spec.address, "0"));
        let spec = v2::GadgetSpec {
            host: host.to_owned(),
            port: port.parse().unwrap_or(0),
            instances: spoke.spec.replicas,
            protocol: None,
        };
        Self { metadata: spoke.metadata, spec }
    }
}

const GROUP: &str = "conversion.webhooks.informer.test";
const CRD_NAME: &str = "gadgets.conversion.webhooks.informer.test";

fn gadgets(version: &str, namespace: &str) -> String {
    format!("/apis/{GROUP}/{version}/namespaces/{namespace}/gadgets")
}

/// What a request for conversion asked: the version, and the names of the objects.
type Asked = Arc<Mutex<Vec<(String, Vec<String>)>>>;

/// kube's e2e "should be able to convert from CR v1 to CR v2" and "should be able to convert
/// a non homogeneous list of CRs" (`crd_conversion_webhook.go`), with controller-runtime's hub
/// and spoke: objects written as v1 read as v2 and back field for field; an object written as
/// v2 keeps through v1 what v1 cannot hold; once the CRD's storage version moves from v1 to v2,
/// every object stays readable in both versions, old and new.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_version_kind_converts_through_the_webhook_and_survives_a_storage_move() {
    let asked: Asked = Arc::default();
    let hooks = conversion_hooks(&asked).await;
    let merged = informer_runtime::crd::merge([v1::Gadget::crd(), v2::Gadget::crd()])
        .expect("the versions merge");
    let crd = with_conversion_webhook(
        merged,
        &WebhookTarget::url(hooks.url("/convert")),
        hooks.ca.ca_pem().as_bytes(),
    );
    let crd = serde_json::to_value(&crd).expect("the CRD as JSON");

    let mut transcripts = Vec::new();
    for target in targets().await {
        let namespace = unique("webhook-convert");
        target.namespace(&namespace).await;
        install(&target, &crd, &namespace).await;
        let mut transcript = Transcript::new();

        // Written as v1, read as v2 and back.
        let written: Vec<Value> = [("alpha", "alpha.example:8080", 3), ("beta", "10.0.0.7:443", 1)]
            .into_iter()
            .map(|(name, address, replicas)| {
                json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Gadget",
                       "metadata": {"name": name, "namespace": namespace},
                       "spec": {"address": address, "replicas": replicas}})
            })
            .collect();
        for gadget in &written {
            let created = target.post(&gadgets("v1", &namespace), gadget).await;
            assert_eq!(created.status, 201, "{}: {created:?}", target.name());
            assert_eq!(created.body["spec"], gadget["spec"], "{}", target.name());
        }
        let alpha = target.get(&format!("{}/alpha", gadgets("v2", &namespace))).await;
        assert_eq!(alpha.status, 200, "{}: {alpha:?}", target.name());
        assert_eq!(
            (&alpha.body["apiVersion"], &alpha.body["spec"]),
            (
                &json!(format!("{GROUP}/v2")),
                &json!({"host": "alpha.example", "port": 8080, "instances": 3})
            ),
            "{}",
            target.name()
        );
        assert_eq!(alpha.body["metadata"].get("annotations"), None, "{}", target.name());
        transcript
            .push(("v1 read as v2".into(), json!([alpha.body["apiVersion"], alpha.body["spec"]])));
        let list = target.get(&gadgets("v2", &namespace)).await;
        let specs: Vec<&Value> =
            list.body["items"].as_array().into_iter().flatten().map(|o| &o["spec"]).collect();
        assert_eq!(
            specs,
            [
                &json!({"host": "alpha.example", "port": 8080, "instances": 3}),
                &json!({"host": "10.0.0.7", "port": 443, "instances": 1})
            ],
            "{}: the list as v2",
            target.name()
        );
        transcript.push(("listed as v2".into(), json!(specs)));

        // Back to v1 through a v2 write: the update is stored as v1 and reads as written.
        let mut update = alpha.body.clone();
        update["spec"]["instances"] = json!(5);
        let updated = target.put(&format!("{}/alpha", gadgets("v2", &namespace)), &update).await;
        assert_eq!(updated.status, 200, "{}: {updated:?}", target.name());
        let alpha_v1 = target.get(&format!("{}/alpha", gadgets("v1", &namespace))).await;
        assert_eq!(
            alpha_v1.body["spec"],
            json!({"address": "alpha.example:8080", "replicas": 5}),
            "{}",
            target.name()
        );
        assert_eq!(alpha_v1.body["metadata"].get("annotations"), None, "{}", target.name());
        transcript.push(("v2 update read as v1".into(), alpha_v1.body["spec"].clone()));

        let gamma = written_as_v2_kept_through_v1(&target, &namespace, &mut transcript).await;

        // The storage version moves to v2: new writes are converted to v2 to be stored.
        move_storage_to_v2(&target, &asked, &namespace).await;
        let delta = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Gadget",
                           "metadata": {"name": "delta", "namespace": namespace},
                           "spec": {"address": "delta.example:9", "replicas": 4}});
        let created = target.post(&gadgets("v1", &namespace), &delta).await;
        assert_eq!(created.status, 201, "{}: {created:?}", target.name());

        // Every object, stored as v1 or as v2, reads the same in both versions.
        readable_in_both_versions(&target, &namespace, &gamma["spec"], &mut transcript).await;

        uninstall(&target).await;
        transcripts.push((target.name(), transcript));
    }
    same_transcripts(&transcripts);
}

/// The conversion webhook at `/convert`: the kind's hub-and-spoke [`Conversions`], recording
/// in `asked` each request's desired version and objects' names.
async fn conversion_hooks(asked: &Asked) -> Hooks {
    let conversions =
        Arc::new(Conversions::new().kind(Converter::<v2::Gadget>::new().spoke::<v1::Gadget>()));
    Hooks::start(WebhookServer::builder().conversion("/convert", {
        let asked = Arc::clone(asked);
        move |request: ConversionRequest| {
            let names = request
                .objects
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap_or_default().to_owned())
                .collect();
            asked.lock().push((request.desired_api_version.clone(), names));
            let response = conversions.convert(&request);
            async move { Ok::<_, std::convert::Infallible>(response) }
        }
    }))
    .await
}

/// An object written as v2 with what v1 cannot hold (its protocol), stored as v1: it reads
/// as v1 with what was lost kept in the conversion-data annotation, and as v2 whole. Returns it.
async fn written_as_v2_kept_through_v1(
    target: &Target,
    namespace: &str,
    transcript: &mut Transcript,
) -> Value {
    let gamma = json!({"apiVersion": format!("{GROUP}/v2"), "kind": "Gadget",
                       "metadata": {"name": "gamma", "namespace": namespace},
                       "spec": {"host": "gamma.example", "port": 53, "instances": 2,
                                "protocol": "UDP"}});
    let created = target.post(&gadgets("v2", namespace), &gamma).await;
    assert_eq!(created.status, 201, "{}: {created:?}", target.name());
    assert_eq!(created.body["spec"], gamma["spec"], "{}", target.name());
    let gamma_v1 = target.get(&format!("{}/gamma", gadgets("v1", namespace))).await;
    assert_eq!(
        gamma_v1.body["spec"],
        json!({"address": "gamma.example:53", "replicas": 2}),
        "{}",
        target.name()
    );
    let lost = &gamma_v1.body["metadata"]["annotations"][format!("{GROUP}/conversion-data")];
    assert!(lost.is_string(), "{}: {gamma_v1:?}", target.name());
    let gamma_v2 = target.get(&format!("{}/gamma", gadgets("v2", namespace))).await;
    assert_eq!(gamma_v2.body["spec"], gamma["spec"], "{}", target.name());
    assert_eq!(gamma_v2.body["metadata"].get("annotations"), None, "{}", target.name());
    transcript.push((
        "v2 through v1 storage".into(),
        json!([gamma_v1.body["spec"], lost, gamma_v2.body["spec"]]),
    ));
    gamma
}

/// Checks that every object of the conversion scenario (`gamma` written as v2 with `gamma`'s
/// spec, the others as v1), whatever version it was stored in, reads as expected in v1 and v2,
/// one by one and listed.
async fn readable_in_both_versions(
    target: &Target,
    namespace: &str,
    gamma: &Value,
    transcript: &mut Transcript,
) {
    let expected = [
        (
            "alpha",
            json!({"address": "alpha.example:8080", "replicas": 5}),
            json!({"host": "alpha.example", "port": 8080, "instances": 5}),
        ),
        (
            "beta",
            json!({"address": "10.0.0.7:443", "replicas": 1}),
            json!({"host": "10.0.0.7", "port": 443, "instances": 1}),
        ),
        (
            "delta",
            json!({"address": "delta.example:9", "replicas": 4}),
            json!({"host": "delta.example", "port": 9, "instances": 4}),
        ),
        ("gamma", json!({"address": "gamma.example:53", "replicas": 2}), gamma.clone()),
    ];
    for version in ["v1", "v2"] {
        let list = target.get(&gadgets(version, namespace)).await;
        assert_eq!(list.status, 200, "{}: {list:?}", target.name());
        let got: Vec<(&Value, &Value, &Value)> = list.body["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| (&o["metadata"]["name"], &o["apiVersion"], &o["spec"]))
            .collect();
        let want: Vec<(Value, Value, &Value)> = expected
            .iter()
            .map(|(name, v1, v2)| {
                (
                    json!(name),
                    json!(format!("{GROUP}/{version}")),
                    if version == "v1" { v1 } else { v2 },
                )
            })
            .collect();
        let want: Vec<(&Value, &Value, &Value)> = want.iter().map(|(a, b, c)| (a, b, *c)).collect();
        assert_eq!(got, want, "{}: every object as {version}", target.name());
        for (name, v1_spec, v2_spec) in &expected {
            let one = target.get(&format!("{}/{name}", gadgets(version, namespace))).await;
            let spec = if version == "v1" { v1_spec } else { v2_spec };
            assert_eq!(&one.body["spec"], spec, "{}: {name} as {version}", target.name());
        }
        transcript.push((format!("after the move, as {version}"), json!(got)));
    }
}

/// Installs the CRD `crd` (replacing one an earlier run left), and returns once both its
/// versions are served in `namespace`.
async fn install(target: &Target, crd: &Value, namespace: &str) {
    let existing = target.get(&format!("{CRDS}/{CRD_NAME}")).await;
    let reply = if existing.status == 200 {
        let mut crd = crd.clone();
        crd["metadata"]["resourceVersion"] = existing.body["metadata"]["resourceVersion"].clone();
        target.put(&format!("{CRDS}/{CRD_NAME}"), &crd).await
    } else {
        target.post(CRDS, crd).await
    };
    assert!(matches!(reply.status, 200 | 201), "{}: installing the CRD: {reply:?}", target.name());
    for version in ["v1", "v2"] {
        let path = &gadgets(version, namespace);
        until(target, &format!("{GROUP}/{version} to be served"), || async move {
            let reply = target.get(path).await;
            (reply.status == 200).then_some(()).ok_or(reply)
        })
        .await;
    }
}

/// Makes v2 the CRD's storage version, and returns once a write as v1 is converted to v2 to be
/// stored: kube-apiserver takes a CRD's change up asynchronously.
async fn move_storage_to_v2(target: &Target, asked: &Asked, namespace: &str) {
    let mut crd = target.get(&format!("{CRDS}/{CRD_NAME}")).await.body;
    for version in crd["spec"]["versions"].as_array_mut().expect("the CRD's versions") {
        version["storage"] = json!(version["name"] == "v2");
    }
    let reply = target.put(&format!("{CRDS}/{CRD_NAME}"), &crd).await;
    assert_eq!(reply.status, 200, "{}: moving the storage version: {reply:?}", target.name());
    assert_eq!(reply.body["status"]["storedVersions"], json!(["v1", "v2"]), "{}", target.name());
    let probes = &AtomicUsize::new(0);
    until(target, "writes to be stored as v2", || async move {
        let name = format!("storage-probe-{}", probes.fetch_add(1, Ordering::SeqCst));
        let probe = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Gadget",
                           "metadata": {"name": name},
                           "spec": {"address": "probe:1", "replicas": 0}});
        let reply = target.post(&format!("{}?dryRun=All", gadgets("v1", namespace)), &probe).await;
        let stored_as_v2 = asked
            .lock()
            .iter()
            .any(|(version, names)| version == &format!("{GROUP}/v2") && names.contains(&name));
        (reply.status == 201 && stored_as_v2).then_some(()).ok_or(reply)
    })
    .await;
}

/// Deletes the CRD (and with it its objects) and returns once it is gone.
async fn uninstall(target: &Target) {
    let path = format!("{CRDS}/{CRD_NAME}");
    let reply = target.delete(&path).await;
    assert!(matches!(reply.status, 200 | 202), "{}: deleting the CRD: {reply:?}", target.name());
    let path = &path;
    until(target, "the CRD to be gone", || async move {
        let reply = target.get(path).await;
        (reply.status == 404).then_some(()).ok_or(reply)
    })
    .await;
}
