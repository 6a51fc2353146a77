//! Admission and conversion webhooks, called over real HTTPS by the embedded server: a webhook
//! server in the test (rustls with its own CA, which the configurations name in `caBundle`),
//! the server over plain HTTP, and the answers a client sees compared word for word with
//! kube-apiserver's.
//!
//! The scenarios are kube's end-to-end ones (`test/e2e/apimachinery/webhook.go` and
//! `crd_conversion_webhook.go`), named on each test; the messages are those of the kube-apiserver
//! sources each module of the server names.

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use base64::Engine as _;
use base64::prelude::BASE64_STANDARD;
use embedded_apiserver::testing::WatchLines;
use embedded_apiserver::{ApiServer, Config};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, SanType};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use support::start;

/// How long any single wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// What the test's webhook does with a review.
enum Answer {
    /// Answers this JSON.
    Json(Value),
    /// Never answers (until the caller gives up).
    Hang,
}

type Handler = dyn Fn(&str, &Value) -> Answer + Send + Sync;

/// A webhook server over HTTPS on loopback, with its own CA: every review it receives is
/// recorded with its path.
struct WebhookServer {
    addr: SocketAddr,
    /// The CA's PEM in base64: a configuration's `caBundle`.
    ca_bundle: String,
    reviews: Arc<Mutex<Vec<(String, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WebhookServer {
    /// Serves `handler`; the certificate is valid for `127.0.0.1` and for the service
    /// `widget-webhook.webhooks.svc`.
    async fn start(handler: impl Fn(&str, &Value) -> Answer + Send + Sync + 'static) -> Self {
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let mut leaf =
            CertificateParams::new(vec!["widget-webhook.webhooks.svc".to_owned()]).unwrap();
        leaf.subject_alt_names.push(SanType::IpAddress([127, 0, 0, 1].into()));
        let key = KeyPair::generate().unwrap();
        let cert = leaf.signed_by(&key, &ca).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let reviews = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let recorded = Arc::clone(&reviews);
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, handler, recorded) =
                    (acceptor.clone(), Arc::clone(&handler), Arc::clone(&recorded));
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = hyper::service::service_fn(move |request| {
                        serve(Arc::clone(&handler), Arc::clone(&recorded), request)
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self { addr, ca_bundle: BASE64_STANDARD.encode(ca.pem()), reviews, task }
    }

    fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// The reviews posted to `path` so far.
    fn reviews(&self, path: &str) -> Vec<Value> {
        self.reviews.lock().iter().filter(|(p, _)| p == path).map(|(_, r)| r.clone()).collect()
    }
}

async fn serve(
    handler: Arc<Handler>,
    recorded: Arc<Mutex<Vec<(String, Value)>>>,
    request: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Body>, std::convert::Infallible> {
    let path = request.uri().path().to_owned();
    let body =
        axum::body::to_bytes(Body::new(request.into_body()), 1 << 24).await.unwrap_or_default();
    let review: Value = serde_json::from_slice(&body).unwrap_or_default();
    recorded.lock().push((path.clone(), review.clone()));
    match handler(&path, &review) {
        Answer::Json(answer) => Ok(hyper::Response::builder()
            .header("content-type", "application/json")
            .body(Body::from(answer.to_string()))
            .unwrap()),
        Answer::Hang => std::future::pending().await,
    }
}

/// An `AdmissionReview` answer to `review` with `response` (its `uid` added).
fn admission_answer(review: &Value, mut response: Value) -> Answer {
    response["uid"] = review["request"]["uid"].clone();
    Answer::Json(json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                        "response": response}))
}

fn allow(review: &Value) -> Answer {
    admission_answer(review, json!({"allowed": true}))
}

/// A webhook of a configuration: `rules` on `url`, trusting `ca_bundle`, with `extra` fields.
fn webhook(name: &str, client_config: Value, rules: Value, extra: &Value) -> Value {
    let mut hook = json!({"name": name, "sideEffects": "None", "admissionReviewVersions": ["v1"]});
    hook["clientConfig"] = client_config;
    hook["rules"] = rules;
    for (key, value) in extra.as_object().into_iter().flatten() {
        hook[key] = value.clone();
    }
    hook
}

fn url_config(server: &WebhookServer, path: &str) -> Value {
    json!({"url": server.url(path), "caBundle": server.ca_bundle})
}

fn configmap_rules(operations: &[&str]) -> Value {
    json!([{"operations": operations, "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["configmaps"]}])
}

/// HTTP to the embedded server.
struct Client {
    http: reqwest::Client,
    base: String,
}

/// An answer: code, `Warning` headers, JSON body.
#[derive(Debug)]
struct Reply {
    status: u16,
    warnings: Vec<String>,
    body: Value,
}

impl Client {
    fn new(server: &ApiServer) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self { http: reqwest::Client::new(), base: server.url() }
    }

    async fn request(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Option<&Value>,
    ) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.header("content-type", content_type).body(body.to_string());
        }
        let response =
            tokio::time::timeout(DEADLINE, request.send()).await.expect("a timely answer").unwrap();
        let status = response.status().as_u16();
        let warnings = response
            .headers()
            .get_all("warning")
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        let bytes = response.bytes().await.unwrap();
        let body = serde_json::from_slice(&bytes).unwrap_or_default();
        Reply { status, warnings, body }
    }

    async fn get(&self, path: &str) -> Reply {
        self.request("GET", path, "", None).await
    }

    async fn post(&self, path: &str, body: &Value) -> Reply {
        self.request("POST", path, "application/json", Some(body)).await
    }

    async fn put(&self, path: &str, body: &Value) -> Reply {
        self.request("PUT", path, "application/json", Some(body)).await
    }

    async fn delete(&self, path: &str) -> Reply {
        self.request("DELETE", path, "", None).await
    }

    /// Creates a configuration (`kind` is `VALIDATING` or `MUTATING`).
    async fn configure(&self, kind: &str, name: &str, hooks: Vec<Value>) {
        let configuration = json!({"metadata": {"name": name}, "webhooks": hooks});
        let reply = self.post(kind, &configuration).await;
        assert_eq!(reply.status, 201, "{reply:?}");
    }
}

fn configmap(name: &str, labels: Value) -> Value {
    let mut configmap = json!({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": name}, "data": {"a": "1"}});
    configmap["metadata"]["labels"] = labels;
    configmap
}

/// kube's e2e "should be able to deny pod and configmap creation" (`webhook.go`): a denial
/// reaches the client as `admission webhook "NAME" denied the request: MESSAGE`, with the
/// webhook's code (400 when it gives none below 400), its reason and its causes.
#[tokio::test]
async fn a_denial_reaches_the_client_with_the_webhooks_message_and_code() {
    let hooks = WebhookServer::start(|path, review| {
        let labels = &review["request"]["object"]["metadata"]["labels"];
        match (path, labels["webhook-e2e-test"].as_str()) {
            ("/forbid", Some("webhook-disallow")) => admission_answer(
                review,
                json!({
                "allowed": false,
                "status": {"code": 403, "reason": "Forbidden",
                           "message": "the configmap contains unwanted key and value",
                           "details": {"causes": [{"field": "data", "message": "unwanted"}]}}}),
            ),
            ("/quiet", Some("quiet")) => admission_answer(review, json!({"allowed": false})),
            _ => allow(review),
        }
    })
    .await;
    let server = start().await;
    let api = Client::new(&server);
    let rules = configmap_rules(&["CREATE"]);
    let extra = json!({});
    api.configure(
        VALIDATING,
        "deny-configmaps",
        vec![
            webhook(
                "deny-unwanted.example.com",
                url_config(&hooks, "/forbid"),
                rules.clone(),
                &extra,
            ),
            webhook("quiet.example.com", url_config(&hooks, "/quiet"), rules, &extra),
        ],
    )
    .await;

    let denied = api
        .post(CONFIGMAPS, &configmap("bad", json!({"webhook-e2e-test": "webhook-disallow"})))
        .await;
    assert_eq!(denied.status, 403);
    assert_eq!(
        denied.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "admission webhook \"deny-unwanted.example.com\" denied the request: \
                           the configmap contains unwanted key and value",
               "reason": "Forbidden",
               "details": {"causes": [{"message": "unwanted", "field": "data"}]},
               "code": 403})
    );
    let quiet =
        api.post(CONFIGMAPS, &configmap("quiet", json!({"webhook-e2e-test": "quiet"}))).await;
    assert_eq!(
        (quiet.status, quiet.body["message"].as_str()),
        (
            400,
            Some("admission webhook \"quiet.example.com\" denied the request without explanation")
        )
    );
    let allowed = api.post(CONFIGMAPS, &configmap("good", json!({}))).await;
    assert_eq!(allowed.status, 201, "{allowed:?}");
    assert_eq!(
        api.get(&format!("{CONFIGMAPS}/bad")).await.status,
        404,
        "a denied object is not stored"
    );

    // What the validating webhook saw: the object as it would be stored, with its uid.
    let review = &hooks.reviews("/forbid")[2]["request"];
    assert_eq!(
        (&review["operation"], &review["name"], &review["namespace"], &review["kind"]),
        (
            &json!("CREATE"),
            &json!("good"),
            &json!("default"),
            &json!({"group": "", "version": "v1", "kind": "ConfigMap"})
        )
    );
    assert!(review["object"]["metadata"]["uid"].is_string(), "{review}");
    assert_eq!(review["oldObject"], Value::Null);
    assert_eq!(review["options"], json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}));
}

/// kube's e2e "should mutate configmap" (`webhook.go`): a mutating webhook's JSON patch is
/// applied before the object is stored, the validating webhooks see the patched object, and
/// each webhook's warnings come back as `Warning` headers (`299 - "TEXT"`).
#[tokio::test]
async fn a_mutating_webhook_patches_the_object_and_warnings_come_back() {
    let hooks = WebhookServer::start(|path, review| match path {
        "/mutate" => {
            let patch = json!([{"op": "add", "path": "/data/mutation-stage-1", "value": "yes"}]);
            admission_answer(
                review,
                json!({
                "allowed": true, "patchType": "JSONPatch",
                "patch": BASE64_STANDARD.encode(patch.to_string()),
                "warnings": ["mutated: a \"quoted\" word"]}),
            )
        }
        _ => admission_answer(
            review,
            json!({"allowed": true, "warnings": ["validated", "validated"]}),
        ),
    })
    .await;
    let server = start().await;
    let api = Client::new(&server);
    let rules = configmap_rules(&["CREATE", "UPDATE"]);
    api.configure(
        MUTATING,
        "mutate-configmaps",
        vec![webhook(
            "adding-configmap-data-stage-1.example.com",
            url_config(&hooks, "/mutate"),
            rules.clone(),
            &json!({}),
        )],
    )
    .await;
    api.configure(
        VALIDATING,
        "see-configmaps",
        vec![webhook("see.example.com", url_config(&hooks, "/validate"), rules, &json!({}))],
    )
    .await;

    let created = api.post(CONFIGMAPS, &configmap("to-be-mutated", json!({}))).await;
    assert_eq!(created.status, 201, "{created:?}");
    assert_eq!(created.body["data"], json!({"a": "1", "mutation-stage-1": "yes"}));
    assert_eq!(
        created.warnings,
        [r#"299 - "mutated: a \"quoted\" word""#, r#"299 - "validated""#],
        "one header per distinct warning, in call order"
    );
    let stored = api.get(&format!("{CONFIGMAPS}/to-be-mutated")).await;
    assert_eq!(stored.body["data"]["mutation-stage-1"], "yes");
    let seen = &hooks.reviews("/validate")[0]["request"]["object"];
    assert_eq!(seen["data"]["mutation-stage-1"], "yes", "the validating webhook saw the patch");
    let mutating_saw = &hooks.reviews("/mutate")[0]["request"]["object"];
    assert_eq!(mutating_saw["metadata"].get("uid"), None, "mutating webhooks see the request");

    // An update is mutated too: the old object comes along.
    let mut update = stored.body.clone();
    update["data"] = json!({"b": "2"});
    let updated = api.put(&format!("{CONFIGMAPS}/to-be-mutated"), &update).await;
    assert_eq!(updated.body["data"], json!({"b": "2", "mutation-stage-1": "yes"}));
    let review = &hooks.reviews("/mutate")[1]["request"];
    assert_eq!(
        (&review["operation"], &review["oldObject"]["data"]["a"]),
        (&json!("UPDATE"), &json!("1"))
    );

    // A patch is admitted as the update it makes, on the patched object.
    let path = format!("{CONFIGMAPS}/to-be-mutated");
    let merge = json!({"data": {"c": "3", "mutation-stage-1": null}});
    let patched = api.request("PATCH", &path, "application/merge-patch+json", Some(&merge)).await;
    assert_eq!(patched.body["data"], json!({"b": "2", "c": "3", "mutation-stage-1": "yes"}));
    let review = &hooks.reviews("/mutate")[2]["request"];
    assert_eq!(
        (&review["operation"], &review["object"]["data"]["c"]),
        (&json!("UPDATE"), &json!("3"))
    );

    // An apply that creates is admitted as a create, with `CreateOptions`.
    let apply = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"},
                       "data": {"d": "4"}});
    let applied = api
        .request(
            "PATCH",
            &format!("{CONFIGMAPS}/applied?fieldManager=test"),
            "application/apply-patch+yaml",
            Some(&apply),
        )
        .await;
    assert_eq!((applied.status, &applied.body["data"]["mutation-stage-1"]), (201, &json!("yes")));
    let review = &hooks.reviews("/mutate")[3]["request"];
    assert_eq!(
        (&review["operation"], &review["options"]),
        (
            &json!("CREATE"),
            &json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "test"})
        )
    );

    // A dry run calls the webhooks (their `sideEffects` are `None`) and stores nothing.
    let dry = api.post(&format!("{CONFIGMAPS}?dryRun=All"), &configmap("dry", json!({}))).await;
    assert_eq!((dry.status, &dry.body["data"]["mutation-stage-1"]), (201, &json!("yes")));
    assert_eq!(api.get(&format!("{CONFIGMAPS}/dry")).await.status, 404);
    let review = &hooks.reviews("/validate").last().cloned().unwrap_or_default()["request"];
    assert_eq!((&review["dryRun"], &review["options"]["dryRun"]), (&json!(true), &json!(["All"])));
}

/// kube's e2e "should honor timeout" and "should unconditionally reject operations on fail
/// closed webhook" (`webhook.go`): a webhook that does not answer within its `timeoutSeconds`,
/// or cannot be reached, fails the request under `failurePolicy: Fail` with kube-apiserver's
/// `500` and admits it under `Ignore`.
#[tokio::test]
async fn failing_webhooks_fail_closed_or_open_by_their_policy() {
    let hooks = WebhookServer::start(|_, _| Answer::Hang).await;
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let unreachable = closed.local_addr().unwrap();
    drop(closed);
    let server = start().await;
    let api = Client::new(&server);
    let slow = |policy: &str, label: &str| {
        let mut hook = webhook(
            &format!("slow-{}.example.com", policy.to_lowercase()),
            url_config(&hooks, "/slow"),
            configmap_rules(&["CREATE"]),
            &json!({"timeoutSeconds": 1, "failurePolicy": policy,
                    "objectSelector": {"matchLabels": {"case": label}}}),
        );
        hook["name"] = json!(format!("{label}.example.com"));
        hook
    };
    let down = json!({"url": format!("https://{unreachable}/down"), "caBundle": hooks.ca_bundle});
    api.configure(
        VALIDATING,
        "failing",
        vec![
            slow("Fail", "slow-fail"),
            slow("Ignore", "slow-ignore"),
            webhook(
                "down.example.com",
                down,
                configmap_rules(&["CREATE"]),
                &json!({"objectSelector": {"matchLabels": {"case": "down"}}}),
            ),
        ],
    )
    .await;

    let timed_out = api.post(CONFIGMAPS, &configmap("a", json!({"case": "slow-fail"}))).await;
    let message = format!(
        "failed calling webhook \"slow-fail.example.com\": failed to call webhook: Post \
         \"https://{}/slow?timeout=1s\": context deadline exceeded",
        hooks.addr
    );
    assert_eq!(
        timed_out.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": format!("Internal error occurred: {message}"),
               "reason": "InternalError", "details": {"causes": [{"message": message}]},
               "code": 500})
    );
    let ignored = api.post(CONFIGMAPS, &configmap("b", json!({"case": "slow-ignore"}))).await;
    assert_eq!(ignored.status, 201, "failurePolicy Ignore admits: {ignored:?}");
    let refused = api.post(CONFIGMAPS, &configmap("c", json!({"case": "down"}))).await;
    assert_eq!(
        (refused.status, refused.body["message"].as_str().unwrap_or_default()),
        (500, format!(
            "Internal error occurred: failed calling webhook \"down.example.com\": failed to call \
             webhook: Post \"https://{unreachable}/down?timeout=10s\": dial tcp {unreachable}: \
             connect: connection refused"
        ).as_str())
    );
}

/// kube's e2e "should be able to deny pod and configmap creation" selects by namespace label,
/// and "should mutate configmap" by operation: a webhook whose rules, namespace selector or
/// object selector do not select a request is not called (counted at the webhook), a rule for
/// `configmaps` does not see a subresource, and cluster-scoped objects pass every namespace
/// selector.
#[tokio::test]
async fn rules_and_selectors_decide_which_requests_a_webhook_sees() {
    let hooks = WebhookServer::start(|path, review| match path {
        "/no-deletes" => {
            admission_answer(review, json!({"allowed": false, "status": {"message": "kept"}}))
        }
        _ => allow(review),
    })
    .await;
    let server = start().await;
    let api = Client::new(&server);
    for (name, team) in [("team-a", "a"), ("team-b", "b")] {
        let ns = json!({"metadata": {"name": name, "labels": {"team": team}}});
        assert_eq!(api.post("/api/v1/namespaces", &ns).await.status, 201);
    }
    let team_a = json!({"namespaceSelector": {"matchLabels": {"team": "a"}},
                        "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}});
    let node_rules = json!([{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                             "resources": ["nodes"], "scope": "Cluster"}]);
    let status_rules = json!([{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                               "resources": ["namespaces/status"]}]);
    api.configure(
        VALIDATING,
        "selective",
        vec![
            webhook(
                "creates.example.com",
                url_config(&hooks, "/creates"),
                configmap_rules(&["CREATE"]),
                &team_a,
            ),
            webhook(
                "no-deletes.example.com",
                url_config(&hooks, "/no-deletes"),
                configmap_rules(&["DELETE"]),
                &json!({}),
            ),
            webhook("nodes.example.com", url_config(&hooks, "/nodes"), node_rules, &team_a),
            webhook("status.example.com", url_config(&hooks, "/status"), status_rules, &json!({})),
        ],
    )
    .await;

    let in_a = "/api/v1/namespaces/team-a/configmaps";
    assert_eq!(api.post(in_a, &configmap("one", json!({}))).await.status, 201);
    assert_eq!(api.post(in_a, &configmap("skipped", json!({"skip": "yes"}))).await.status, 201);
    let in_b = "/api/v1/namespaces/team-b/configmaps";
    assert_eq!(api.post(in_b, &configmap("other", json!({}))).await.status, 201);
    let mut one = api.get(&format!("{in_a}/one")).await.body;
    one["data"] = json!({"changed": "yes"});
    assert_eq!(api.put(&format!("{in_a}/one"), &one).await.status, 200);
    assert_eq!(hooks.reviews("/creates").len(), 1, "only the create in team-a without `skip`");

    let deleted = api.delete(&format!("{in_b}/other")).await;
    assert_eq!(
        (deleted.status, deleted.body["message"].as_str()),
        (400, Some("admission webhook \"no-deletes.example.com\" denied the request: kept"))
    );
    let review = &hooks.reviews("/no-deletes")[0]["request"];
    assert_eq!(
        (&review["object"], &review["oldObject"]["metadata"]["name"]),
        (&Value::Null, &json!("other"))
    );

    let node = json!({"metadata": {"name": "n1"}});
    assert_eq!(api.post("/api/v1/nodes", &node).await.status, 201);
    assert_eq!(hooks.reviews("/nodes").len(), 1, "cluster-scoped objects pass namespace selectors");

    // A deletecollection admits each object it deletes, with an empty name.
    let collection = api.delete(in_b).await;
    assert_eq!(collection.status, 400, "{collection:?}");
    let review = &hooks.reviews("/no-deletes").last().cloned().unwrap_or_default()["request"];
    assert_eq!(
        (review.get("name"), &review["namespace"], &review["oldObject"]["metadata"]["name"]),
        (None, &json!("team-b"), &json!("other"))
    );

    let mut namespace = api.get("/api/v1/namespaces/team-a").await.body;
    namespace["metadata"]["labels"]["more"] = json!("yes");
    assert_eq!(api.put("/api/v1/namespaces/team-a", &namespace).await.status, 200);
    assert!(hooks.reviews("/status").is_empty(), "`namespaces/status` is not `namespaces`");
    namespace = api.get("/api/v1/namespaces/team-a").await.body;
    namespace["status"]["phase"] = json!("Active");
    let status = api.put("/api/v1/namespaces/team-a/status", &namespace).await;
    assert_eq!(status.status, 200, "{status:?}");
    let review = &hooks.reviews("/status")[0]["request"];
    assert_eq!(
        (&review["subResource"], &review["namespace"]),
        (&json!("status"), &json!("team-a"))
    );
}

/// A webhook reached through `clientConfig.service`: the call goes to the address the test
/// maps the service to, verified against the name `NAME.NAMESPACE.svc`, and messages name the
/// service's URL; an unmapped service fails as a missing one.
#[tokio::test]
async fn services_are_reached_at_the_addresses_a_test_gives() {
    let hooks = WebhookServer::start(|_, review| {
        admission_answer(
            review,
            json!({"allowed": false, "status": {"message": "via the service"}}),
        )
    })
    .await;
    let server = Config::default()
        .bookmark_interval(None)
        .webhook_service_address("webhooks", "widget-webhook", hooks.addr)
        .start()
        .await
        .unwrap();
    let api = Client::new(&server);
    let service = |name: &str| {
        json!({"service": {"namespace": "webhooks", "name": name, "path": "/v", "port": 8443},
                                     "caBundle": hooks.ca_bundle})
    };
    let only = |label: &str| json!({"objectSelector": {"matchLabels": {"to": label}}});
    api.configure(
        VALIDATING,
        "services",
        vec![
            webhook(
                "mapped.example.com",
                service("widget-webhook"),
                configmap_rules(&["CREATE"]),
                &only("mapped"),
            ),
            webhook(
                "unmapped.example.com",
                service("nowhere"),
                configmap_rules(&["CREATE"]),
                &only("unmapped"),
            ),
        ],
    )
    .await;
    let mapped = api.post(CONFIGMAPS, &configmap("a", json!({"to": "mapped"}))).await;
    assert_eq!(
        mapped.body["message"],
        "admission webhook \"mapped.example.com\" denied the request: via the service"
    );
    let unmapped = api.post(CONFIGMAPS, &configmap("b", json!({"to": "unmapped"}))).await;
    assert_eq!(
        unmapped.body["message"],
        "Internal error occurred: failed calling webhook \"unmapped.example.com\": failed to call \
         webhook: Post \"https://nowhere.webhooks.svc:8443/v?timeout=10s\": service \"nowhere\" not found"
    );
    server.set_webhook_service_address("webhooks", "nowhere", hooks.addr);
    let now_mapped = api.post(CONFIGMAPS, &configmap("c", json!({"to": "unmapped"}))).await;
    assert_eq!(
        now_mapped.body["message"],
        "Internal error occurred: failed calling webhook \"unmapped.example.com\": failed to call \
         webhook: Post \"https://nowhere.webhooks.svc:8443/v?timeout=10s\": tls: failed to verify \
         certificate: x509: certificate is valid for widget-webhook.webhooks.svc, not \
         nowhere.webhooks.svc"
    );
}

/// A `Widget` CRD stored as `v1` (`spec.size`) and served as `v2` too (`spec.dimensions.size`),
/// converted by the test's webhook at `path`.
fn widget_crd(conversion: Value) -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    let mut crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": schema},
            ],
        }
    });
    crd["spec"]["conversion"] = conversion;
    crd
}

fn webhook_conversion(client_config: Value) -> Value {
    let mut conversion =
        json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}});
    conversion["webhook"]["clientConfig"] = client_config;
    conversion
}

/// The test's conversion webhook: `spec.size` (v1) to and from `spec.dimensions.size` (v2).
fn convert_widgets(review: &Value) -> Answer {
    let to = review["request"]["desiredAPIVersion"].as_str().unwrap_or_default().to_owned();
    let objects: Vec<Value> = review["request"]["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|object| {
            let mut converted = object.clone();
            converted["apiVersion"] = json!(to);
            converted["spec"] = if to.ends_with("/v2") {
                json!({"dimensions": {"size": object["spec"]["size"]}})
            } else {
                json!({"size": object["spec"]["dimensions"]["size"]})
            };
            converted
        })
        .collect();
    Answer::Json(json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": review["request"]["uid"], "result": {"status": "Success"},
                     "convertedObjects": objects}}))
}

/// kube's e2e "should be able to convert from CR v1 to CR v2" and "should be able to convert a
/// non homogeneous list of CRs" (`crd_conversion_webhook.go`): objects stored as v1 are read
/// as v2 by get, list (in one review) and watch, objects written as v2 are stored as v1, and
/// v1 reads call no webhook.
#[tokio::test]
async fn a_conversion_webhook_converts_reads_and_writes() {
    let hooks = WebhookServer::start(|_, review| convert_widgets(review)).await;
    let server = start().await;
    let api = Client::new(&server);
    let crd = api.post(CRDS, &widget_crd(webhook_conversion(url_config(&hooks, "/convert")))).await;
    assert_eq!(crd.status, 201, "{crd:?}");
    let v1 = "/apis/example.com/v1/namespaces/default/widgets";
    let v2 = "/apis/example.com/v2/namespaces/default/widgets";
    let written_v1 = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                            "metadata": {"name": "w1", "labels": {"from": "v1"}}, "spec": {"size": 3}});
    assert_eq!(api.post(v1, &written_v1).await.status, 201);
    assert!(
        hooks.reviews("/convert").is_empty(),
        "a write in the storage version converts nothing"
    );

    let read = api.get(&format!("{v2}/w1")).await;
    assert_eq!(
        (&read.body["apiVersion"], &read.body["spec"], &read.body["metadata"]["labels"]),
        (&json!("example.com/v2"), &json!({"dimensions": {"size": 3}}), &json!({"from": "v1"}))
    );
    let review = &hooks.reviews("/convert")[0];
    assert_eq!(
        (&review["apiVersion"], &review["kind"], &review["request"]["desiredAPIVersion"]),
        (&json!("apiextensions.k8s.io/v1"), &json!("ConversionReview"), &json!("example.com/v2"))
    );

    let written_v2 = json!({"apiVersion": "example.com/v2", "kind": "Widget",
                            "metadata": {"name": "w2"}, "spec": {"dimensions": {"size": 5}}});
    let created = api.post(v2, &written_v2).await;
    assert_eq!((created.status, &created.body["spec"]), (201, &json!({"dimensions": {"size": 5}})));
    let stored = api.get(&format!("{v1}/w2")).await;
    assert_eq!(
        (&stored.body["apiVersion"], &stored.body["spec"]),
        (&json!("example.com/v1"), &json!({"size": 5})),
        "stored in the storage version"
    );

    let before = hooks.reviews("/convert").len();
    let list = api.get(v2).await;
    let sizes: Vec<&Value> = list.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| &w["spec"]["dimensions"]["size"])
        .collect();
    assert_eq!(sizes, [&json!(3), &json!(5)]);
    let reviews = hooks.reviews("/convert");
    assert_eq!(reviews.len(), before + 1, "a list is converted in one review");
    assert_eq!(reviews[before]["request"]["objects"].as_array().map(Vec::len), Some(2));

    let response = reqwest::Client::new()
        .get(format!("{}{v2}?watch=true&resourceVersion=0", server.url()))
        .send()
        .await
        .unwrap();
    let mut watch = WatchLines::new(response.bytes_stream());
    for name in ["w1", "w2"] {
        let event = tokio::time::timeout(DEADLINE, watch.next_event()).await.unwrap().unwrap();
        assert_eq!(
            (&event["type"], &event["object"]["metadata"]["name"], &event["object"]["apiVersion"]),
            (&json!("ADDED"), &json!(name), &json!("example.com/v2"))
        );
        assert!(event["object"]["spec"]["dimensions"].is_object(), "{event}");
    }
    let mut w1 = api.get(&format!("{v1}/w1")).await.body;
    w1["spec"]["size"] = json!(4);
    assert_eq!(api.put(&format!("{v1}/w1"), &w1).await.status, 200);
    let event = tokio::time::timeout(DEADLINE, watch.next_event()).await.unwrap().unwrap();
    assert_eq!(
        (&event["type"], &event["object"]["spec"]),
        (&json!("MODIFIED"), &json!({"dimensions": {"size": 4}}))
    );

    // A patch in v2 applies to the object in v2, and is stored in v1.
    let merge = json!({"spec": {"dimensions": {"size": 7}}});
    let patched = api
        .request("PATCH", &format!("{v2}/w2"), "application/merge-patch+json", Some(&merge))
        .await;
    assert_eq!((patched.status, &patched.body["spec"]), (200, &json!({"dimensions": {"size": 7}})));
    assert_eq!(api.get(&format!("{v1}/w2")).await.body["spec"], json!({"size": 7}));
}

/// A conversion webhook that fails, or cannot be reached: reads in the other version fail with
/// kube-apiserver's `500` (no reason) and the converter's message; the storage version is still
/// served.
#[tokio::test]
async fn a_failing_conversion_webhook_fails_reads_in_other_versions() {
    let hooks = WebhookServer::start(|_, review| {
        Answer::Json(json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": review["request"]["uid"],
                         "result": {"status": "Failure", "message": "size is not convertible"}}}))
    })
    .await;
    let server = start().await;
    let api = Client::new(&server);
    assert_eq!(
        api.post(CRDS, &widget_crd(webhook_conversion(url_config(&hooks, "/convert"))))
            .await
            .status,
        201
    );
    let v1 = "/apis/example.com/v1/namespaces/default/widgets";
    let widget = json!({"metadata": {"name": "w"}, "spec": {"size": 1}});
    assert_eq!(api.post(v1, &widget).await.status, 201);
    let failed = api.get("/apis/example.com/v2/namespaces/default/widgets/w").await;
    assert_eq!(
        failed.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "conversion webhook for example.com/v1, Kind=Widget failed: size is not convertible",
               "code": 500})
    );
    assert_eq!(
        api.get(&format!("{v1}/w")).await.status,
        200,
        "the storage version needs no webhook"
    );

    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let unreachable = closed.local_addr().unwrap();
    drop(closed);
    let mut crd = api.get(&format!("{CRDS}/widgets.example.com")).await.body;
    crd["spec"]["conversion"]["webhook"]["clientConfig"]["url"] =
        json!(format!("https://{unreachable}/convert"));
    assert_eq!(api.put(&format!("{CRDS}/widgets.example.com"), &crd).await.status, 200);
    let v2 = json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "x"},
                    "spec": {"dimensions": {"size": 2}}});
    let refused = api.post("/apis/example.com/v2/namespaces/default/widgets", &v2).await;
    assert_eq!(
        (refused.status, refused.body["message"].as_str().unwrap_or_default()),
        (
            500,
            format!(
                "conversion webhook for example.com/v2, Kind=Widget failed: Post \
             \"https://{unreachable}/convert?timeout=30s\": dial tcp {unreachable}: connect: \
             connection refused"
            )
            .as_str()
        )
    );
}

/// Webhook configurations are served as the built-ins they are, defaulted as kube-apiserver
/// defaults them, and validated with its messages.
#[tokio::test]
async fn webhook_configurations_are_defaulted_and_validated() {
    let server = start().await;
    let api = Client::new(&server);
    let hook = webhook(
        "a.example.com",
        json!({"url": "https://127.0.0.1:1/a"}),
        configmap_rules(&["CREATE"]),
        &json!({}),
    );
    api.configure(MUTATING, "defaults", vec![hook]).await;
    let stored = api.get(&format!("{MUTATING}/defaults")).await.body;
    let hook = &stored["webhooks"][0];
    assert_eq!(
        json!([
            hook["failurePolicy"],
            hook["matchPolicy"],
            hook["timeoutSeconds"],
            hook["reinvocationPolicy"],
            hook["namespaceSelector"],
            hook["rules"][0]["scope"]
        ]),
        json!(["Fail", "Equivalent", 10, "Never", {}, "*"])
    );
    assert_eq!(stored["metadata"]["generation"], 1);
    let bad = json!({"metadata": {"name": "bad"}, "webhooks": [
        {"name": "b.example.com", "clientConfig": {"url": "https://127.0.0.1:1/b"},
         "admissionReviewVersions": ["v1"], "sideEffects": "Some"}]});
    let refused = api.post(VALIDATING, &bad).await;
    assert_eq!(
        (refused.status, refused.body["message"].as_str()),
        (
            422,
            Some(
                "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad\" is invalid: \
                    webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \
                    \"None\", \"NoneOnDryRun\""
            )
        )
    );
    let discovery = api.get("/apis/admissionregistration.k8s.io/v1").await.body;
    let names: Vec<&str> = discovery["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"]);
}
