//! Admission webhooks over real TLS, HTTP/1.1 and HTTP/2, with reviews recorded as
//! kube-apiserver sends them (`tests/fixtures/`). Scenarios after controller-runtime's
//! `pkg/webhook/admission/http_test.go` (a body that is not a review, a too large body, the
//! answer's version and uid) and `webhook_test.go` (allow, deny, patch, warnings, panics), and
//! `pkg/webhook/server_test.go` (paths, health).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod support;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use hyper::StatusCode;
use informer_webhook::WebhookServer;
use informer_webhook::admission::{AdmissionRequest, Operation};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use support::{Client, Http, fixture, fixture_text, pki, start};

/// The custom resource the fixtures hold.
#[derive(Clone, Debug, Deserialize, informer_derive::Informer)]
#[informer(group = "example.com", version = "v1")]
struct Widget {
    metadata: ObjectMeta,
    spec: WidgetSpec,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct WidgetSpec {
    size: i32,
    /// Written as `null` when unset: the patch must not add that.
    #[serde(default)]
    color: Option<String>,
}

fn builder() -> (informer_webhook::testing::TestCa, informer_webhook::WebhookServerBuilder) {
    let (ca, serving) = pki();
    let builder = WebhookServer::builder()
        .certificate_pem(serving.cert_pem, serving.key_pem)
        .validating("/validate-widgets", |request: AdmissionRequest<Widget>| async move {
            let Some(widget) = &request.object else { return Ok::<_, Infallible>(request.allow()) };
            Ok(if widget.spec.size > 10 {
                request
                    .deny_with_code(422, format!("spec.size: {} is more than 10", widget.spec.size))
            } else if widget.spec.color.is_none() {
                request.allow().warning("spec.color is not set: widgets are grey by default")
            } else {
                request.allow()
            })
        })
        .mutating("/default-widgets", |request: AdmissionRequest<Widget>| async move {
            let Some(original) = &request.object else { return Ok(request.allow()) };
            let mut widget = original.clone();
            widget.spec.color.get_or_insert_with(|| "grey".to_owned());
            widget
                .metadata
                .labels
                .get_or_insert_default()
                .insert("size".into(), widget.spec.size.to_string());
            request.allow().patch_from(original, &widget)
        });
    (ca, builder)
}

fn with_size(mut review: Value, size: i32) -> Value {
    review["request"]["object"]["spec"]["size"] = json!(size);
    review
}

/// controller-runtime's `webhook_test.go` "should return the response with allowed" / "denied".
#[tokio::test]
async fn a_validating_webhook_allows_and_denies_over_http1_and_http2() {
    let (ca, builder) = builder();
    let running = start(builder).await;
    for http in [Http::One, Http::Two] {
        let mut client = Client::new(running.addr, &ca.ca_pem(), http).await;
        let review = fixture("admission-review-create.json");
        let answer = client.review("/validate-widgets", &review).await;
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1", "{http:?}");
        assert_eq!(answer["kind"], "AdmissionReview");
        assert_eq!(answer["response"]["uid"], review["request"]["uid"]);
        assert_eq!(answer["response"]["allowed"], true);
        assert_eq!(
            answer["response"]["warnings"],
            json!(["spec.color is not set: widgets are grey by default"])
        );
        assert!(answer["response"].get("patch").is_none());

        let answer = client.review("/validate-widgets", &with_size(review, 50)).await;
        assert_eq!(answer["response"]["allowed"], false, "{http:?}");
        let status = &answer["response"]["status"];
        assert_eq!(status["code"], 422);
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["status"], "Failure");
        assert_eq!(status["message"], "spec.size: 50 is more than 10");
    }
    running.shut_down().await;
}

/// controller-runtime's `webhook_test.go` "should return a response with patches": the patch
/// is base64 of RFC 6902 operations that apply to the object as sent.
#[tokio::test]
async fn a_mutating_webhook_answers_a_json_patch_that_applies_to_the_sent_object() {
    let (ca, builder) = builder();
    let running = start(builder).await;
    let mut client = Client::new(running.addr, &ca.ca_pem(), Http::Two).await;
    let review = fixture("admission-review-create.json");
    let answer = client.review("/default-widgets", &review).await;
    let response = &answer["response"];
    assert_eq!(response["allowed"], true);
    assert_eq!(response["uid"], review["request"]["uid"]);
    assert_eq!(response["patchType"], "JSONPatch");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(response["patch"].as_str().unwrap())
        .unwrap();
    let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
    assert_eq!(
        serde_json::to_value(&patch).unwrap(),
        json!([
            {"op": "add", "path": "/metadata/labels", "value": {"size": "3"}},
            {"op": "add", "path": "/spec/color", "value": "grey"},
        ])
    );
    // What the API server does with it: the sent object, managed fields and all, plus the change.
    let mut object = review["request"]["object"].clone();
    json_patch::patch(&mut object, &patch).unwrap();
    let mut expected = review["request"]["object"].clone();
    expected["metadata"]["labels"] = json!({"size": "3"});
    expected["spec"]["color"] = json!("grey");
    assert_eq!(object, expected);

    // Nothing to change: no patch.
    let mut colored = review.clone();
    colored["request"]["object"]["spec"]["color"] = json!("red");
    colored["request"]["object"]["metadata"]["labels"] = json!({"size": "3"});
    let answer = client.review("/default-widgets", &colored).await;
    assert!(answer["response"].get("patch").is_none(), "{answer}");
    assert!(answer["response"].get("patchType").is_none(), "{answer}");
    running.shut_down().await;
}

#[tokio::test]
async fn update_and_delete_reviews_carry_their_objects_and_options() {
    let (ca, serving) = pki();
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let builder = WebhookServer::builder()
        .certificate_pem(serving.cert_pem, serving.key_pem)
        .validating("/validate", {
            let seen = Arc::clone(&seen);
            move |request: AdmissionRequest<Widget>| {
                let seen = Arc::clone(&seen);
                async move {
                    seen.lock().push((
                        request.operation,
                        request.object.as_ref().map(|w| w.spec.size),
                        request.old_object.as_ref().map(|w| w.spec.size),
                        request.sub_resource.clone(),
                        request.dry_run,
                        request.options.as_ref().map(|o| o["kind"].clone()),
                        request.user_info.username.clone(),
                    ));
                    Ok::<_, Infallible>(request.allow())
                }
            }
        });
    let running = start(builder).await;
    let mut client = Client::new(running.addr, &ca.ca_pem(), Http::One).await;
    for name in ["admission-review-update.json", "admission-review-delete.json"] {
        let answer = client.review("/validate", &fixture(name)).await;
        assert_eq!(answer["response"]["allowed"], true, "{name}: {answer}");
    }
    let seen = seen.lock().clone();
    assert_eq!(
        seen[0],
        (
            Operation::Update,
            Some(4),
            Some(3),
            Some("status".to_owned()),
            true,
            Some(json!("UpdateOptions")),
            Some("system:serviceaccount:widgets-system:widgets-controller".to_owned()),
        )
    );
    assert_eq!((seen[1].0, seen[1].1, seen[1].2), (Operation::Delete, None, Some(4)));
    running.shut_down().await;
}

/// controller-runtime's `http_test.go` "should error when request is too large" answers 413
/// inside a review; so does this server, with the uid read from the body's start.
#[tokio::test]
async fn a_body_over_the_limit_is_denied_with_413_and_the_reviews_uid() {
    let (ca, builder) = builder();
    let running = start(builder.max_body_bytes(16 * 1024)).await;
    let mut client = Client::new(running.addr, &ca.ca_pem(), Http::One).await;
    // The recorded text, keys in kube-apiserver's order: the request's uid before its objects.
    let big = format!(r#""annotations": {{"big": "{}", "#, "x".repeat(64 * 1024));
    let body =
        fixture_text("admission-review-create.json").replacen(r#""annotations": {"#, &big, 1);
    let (status, answer) = client.send("POST", "/validate-widgets", Bytes::from(body)).await;
    assert_eq!(status, StatusCode::OK);
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    let response = &answer["response"];
    assert_eq!(response["uid"], "3e6a9c2f-5d3b-4b7e-9f0a-7c1d2e3f4a5b");
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 413);
    assert_eq!(response["status"]["reason"], "RequestEntityTooLarge");
    assert_eq!(
        response["status"]["message"],
        "webhook /validate-widgets: the request body is larger than 16384 bytes"
    );
    // A new connection serves the next review (the unread rest closed the old one).
    let mut client = Client::new(running.addr, &ca.ca_pem(), Http::One).await;
    let answer = client.review("/validate-widgets", &fixture("admission-review-create.json")).await;
    assert_eq!(answer["response"]["allowed"], true);
    running.shut_down().await;
}

#[tokio::test]
async fn a_slow_handler_is_answered_at_the_deadline_or_the_api_servers_timeout() {
    let (ca, serving) = pki();
    let builder = WebhookServer::builder()
        .certificate_pem(serving.cert_pem, serving.key_pem)
        .request_timeout(Duration::from_millis(300))
        .validating("/slow", |request: AdmissionRequest<Value>| async move {
            std::future::pending::<()>().await;
            Ok::<_, Infallible>(request.allow())
        });
    let running = start(builder).await;
    let mut client = Client::new(running.addr, &ca.ca_pem(), Http::Two).await;
    let review = fixture("admission-review-create.json");
    let started = tokio::time::Instant::now();
    let body = Bytes::from(serde_json::to_vec(&review).unwrap());
    let (status, answer) =
        tokio::time::timeout(Duration::from_secs(10), client.send("POST", "/slow", body.clone()))
            .await
            .expect("answered at the deadline, not left hanging");
    assert!(started.elapsed() >= Duration::from_millis(300));
    // A failed call, so that the API server applies the webhook's failurePolicy.
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    let response = &answer["response"];
    assert_eq!(response["uid"], review["request"]["uid"]);
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 504);
    assert_eq!(
        response["status"]["message"],
        "webhook /slow: the handler did not answer within 300ms"
    );

    // kube-apiserver's `?timeout=` (the webhook's timeoutSeconds), when shorter, is the deadline.
    let (status, answer) = client.send("POST", "/slow?timeout=100ms", body).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(
        answer["response"]["status"]["message"],
        "webhook /slow: the handler did not answer within 100ms"
    );
    running.shut_down().await;
}

/// controller-runtime's `webhook_test.go` "should recover from panics" (with
/// `RecoverPanic`): a denial, and the connection serves on.
#[tokio::test]
async fn a_handler_error_or_panic_is_a_denial_and_the_connection_serves_on() {
    let (ca, serving) = pki();
    let calls = Arc::new(AtomicUsize::new(0));
    let builder = WebhookServer::builder()
        .certificate_pem(serving.cert_pem, serving.key_pem)
        .validating("/flaky", {
            let calls = Arc::clone(&calls);
            move |request: AdmissionRequest<Value>| {
                let call = calls.fetch_add(1, Ordering::SeqCst);
                async move {
                    match call {
                        0 => panic!("widget index {call} out of range"),
                        1 => Err("the widget cache is not synced".into()),
                        _ => Ok::<_, informer_webhook::BoxError>(request.allow()),
                    }
                }
            }
        });
    let running = start(builder).await;
    for http in [Http::One, Http::Two] {
        calls.store(0, Ordering::SeqCst);
        let mut client = Client::new(running.addr, &ca.ca_pem(), http).await;
        let review = fixture("admission-review-create.json");
        let answer = client.review("/flaky", &review).await;
        assert_eq!(answer["response"]["uid"], review["request"]["uid"]);
        assert_eq!(answer["response"]["allowed"], false);
        assert_eq!(answer["response"]["status"]["code"], 500);
        assert_eq!(
            answer["response"]["status"]["message"],
            "webhook /flaky panicked: widget index 0 out of range"
        );
        let answer = client.review("/flaky", &review).await;
        assert_eq!(
            answer["response"]["status"]["message"],
            "webhook /flaky failed: the widget cache is not synced"
        );
        let answer = client.review("/flaky", &review).await;
        assert_eq!(answer["response"]["allowed"], true, "{http:?}: the same connection serves on");
    }
    running.shut_down().await;
}

/// controller-runtime's `http_test.go` "should return bad-request when given an empty body" /
/// "when given the wrong content-type" / "when given an undecodable body".
#[tokio::test]
async fn a_body_that_is_not_a_review_is_denied_with_400_naming_the_webhook() {
    let (ca, builder) = builder();
    let running = start(builder).await;
    let mut client = Client::new(running.addr, &ca.ca_pem(), Http::One).await;
    for body in [
        &b""[..],
        b"{not json",
        br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
    ] {
        let (status, answer) =
            client.send("POST", "/validate-widgets", Bytes::from_static(body)).await;
        assert_eq!(status, StatusCode::OK);
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer["response"]["allowed"], false);
        assert_eq!(answer["response"]["status"]["code"], 400);
        let message = answer["response"]["status"]["message"].as_str().unwrap();
        assert!(message.starts_with("webhook /validate-widgets: "), "{message}");
    }
    // An object that is not a Widget: the message names the field and the type.
    let mut review = fixture("admission-review-create.json");
    review["request"]["object"]["spec"] = json!({"size": "three"});
    let answer = client.review("/validate-widgets", &review).await;
    assert_eq!(answer["response"]["uid"], review["request"]["uid"]);
    let message = answer["response"]["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("request.object does not decode as admission_tls::Widget"),
        "{message}"
    );
    running.shut_down().await;
}

#[tokio::test]
async fn unknown_paths_are_404_and_health_and_readiness_answer() {
    let (ca, builder) = builder();
    let running = start(builder).await;
    assert!(running.server.is_ready());
    let mut client = Client::new(running.addr, &ca.ca_pem(), Http::One).await;
    let (status, _) = client.send("POST", "/validate-gadgets", Bytes::new()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = client.send("GET", "/validate-widgets", Bytes::new()).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    for path in ["/healthz", "/livez", "/readyz"] {
        let (status, body) = client.send("GET", path, Bytes::new()).await;
        assert_eq!((status, &body[..]), (StatusCode::OK, &b"ok"[..]), "{path}");
    }
    running.shut_down().await;
}

#[tokio::test]
async fn metrics_count_requests_by_path_and_outcome_beside_the_runtimes() {
    let mut registry = informer_webhook::metrics::Registry::default();
    let webhook_metrics = informer_webhook::metrics::WebhookMetrics::register(&mut registry);
    let metrics = informer_runtime::metrics::Metrics::with_registry(registry);
    let (ca, builder) = builder();
    let running = start(builder.metrics(&webhook_metrics)).await;
    let mut client = Client::new(running.addr, &ca.ca_pem(), Http::One).await;
    let review = fixture("admission-review-create.json");
    client.review("/validate-widgets", &review).await;
    client.review("/validate-widgets", &with_size(review.clone(), 50)).await;
    client.review("/default-widgets", &review).await;
    let text = metrics.encode();
    for line in [
        r#"controller_runtime_webhook_requests_total{webhook="/validate-widgets",code="200"} 2"#,
        r#"webhook_reviews_total{webhook="/validate-widgets",outcome="allowed"} 1"#,
        r#"webhook_reviews_total{webhook="/validate-widgets",outcome="denied"} 1"#,
        r#"webhook_reviews_total{webhook="/default-widgets",outcome="allowed"} 1"#,
        r#"controller_runtime_webhook_latency_seconds_count{webhook="/default-widgets"} 1"#,
        r#"controller_runtime_webhook_requests_in_flight{webhook="/validate-widgets"} 0"#,
    ] {
        assert!(text.contains(line), "{line} is not in\n{text}");
    }
    running.shut_down().await;
}

/// On stop, a request in progress is answered, then `serve` returns.
#[tokio::test]
async fn stopping_lets_the_request_in_progress_finish() {
    let (ca, serving) = pki();
    let entered = Arc::new(tokio::sync::Notify::new());
    let release = Arc::new(tokio::sync::Notify::new());
    let builder = WebhookServer::builder()
        .certificate_pem(serving.cert_pem, serving.key_pem)
        .validating("/held", {
            let (entered, release) = (Arc::clone(&entered), Arc::clone(&release));
            move |request: AdmissionRequest<Value>| {
                let (entered, release) = (Arc::clone(&entered), Arc::clone(&release));
                async move {
                    entered.notify_one();
                    release.notified().await;
                    Ok::<_, Infallible>(request.allow())
                }
            }
        });
    let mut running = start(builder).await;
    let mut client = Client::new(running.addr, &ca.ca_pem(), Http::One).await;
    let review = fixture("admission-review-create.json");
    let answer = tokio::spawn(async move { client.review("/held", &review).await });
    entered.notified().await;
    running.stop.cancel();
    release.notify_one();
    let answer = tokio::time::timeout(Duration::from_secs(10), answer).await.unwrap().unwrap();
    assert_eq!(answer["response"]["allowed"], true);
    let served = running.served.take().unwrap();
    tokio::time::timeout(Duration::from_secs(10), served).await.unwrap().unwrap();
    // Nothing listens any more.
    assert!(support::connect(running.addr, &ca.ca_pem(), Http::One).await.is_err());
}
