//! Webhooks as the server runs them: a review's bytes in, the answer's bytes out, whatever
//! happens in between.
//!
//! Each webhook reads what it can of a review first (its `apiVersion` and `uid`), so that every
//! failure is answered as the API server expects: HTTP 200 with a review of the same
//! `apiVersion` and `uid`, an admission denied (`allowed: false`) or a conversion failed
//! (`result.status: Failure`), with a status message naming the webhook's path and what failed
//! (as controller-runtime answers). That is a body that does not decode, a handler's error, a
//! handler's panic, and (from the server) a body too large or a handler past its deadline.
//! A review whose `uid` could not be read is answered with an empty one: the API server then
//! treats the call as failed and applies the webhook's `failurePolicy`.

use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;

use crate::admission::{self, AdmissionRequest, AdmissionResponse, ReviewOnTheWire};
use crate::conversion::{self, ConversionRequest, ConversionResponse, ConversionReview};
use crate::convert::Conversions;
use crate::status::panic_message;

/// An error a handler returns.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A conversion webhook's handler: a [`Conversions`], or an async function (closure) from a
/// [`ConversionRequest`] to a [`ConversionResponse`].
///
/// An error, or a panic, is answered with a failed conversion naming it.
pub trait ConversionHandler: Send + Sync + 'static {
    /// Converts `request`'s objects.
    fn convert(
        &self,
        request: ConversionRequest,
    ) -> BoxFuture<'static, Result<ConversionResponse, BoxError>>;
}

impl<F, Fut, E> ConversionHandler for F
where
    F: Fn(ConversionRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ConversionResponse, E>> + Send + 'static,
    E: Into<BoxError>,
{
    fn convert(
        &self,
        request: ConversionRequest,
    ) -> BoxFuture<'static, Result<ConversionResponse, BoxError>> {
        let converted = self(request);
        Box::pin(async move { converted.await.map_err(Into::into) })
    }
}

impl ConversionHandler for Conversions {
    fn convert(
        &self,
        request: ConversionRequest,
    ) -> BoxFuture<'static, Result<ConversionResponse, BoxError>> {
        let response = Conversions::convert(self, &request);
        Box::pin(async move { Ok(response) })
    }
}

/// How an answer came about, for metrics and logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Allowed,
    Denied,
    Converted,
    ConversionFailed,
    /// The body did not decode.
    Invalid,
    TooLarge,
    Timeout,
    /// The handler returned an error.
    Error,
    Panic,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Denied => "denied",
            Self::Converted => "converted",
            Self::ConversionFailed => "conversion_failed",
            Self::Invalid => "invalid",
            Self::TooLarge => "too_large",
            Self::Timeout => "timeout",
            Self::Error => "error",
            Self::Panic => "panic",
        }
    }
}

/// A review's answer: its JSON, and how it came about.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) body: Bytes,
    pub(crate) outcome: Outcome,
}

/// What could be read of a review before its handler runs: enough to answer it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Envelope {
    /// The review's `apiVersion` (the answer's too); the webhook's own when unknown.
    pub(crate) api_version: Option<String>,
    pub(crate) uid: String,
}

/// A review decoded, with the handler's call ready to run.
pub(crate) type Call = (Envelope, BoxFuture<'static, Answer>);

/// A webhook of any kind, as the server runs it.
pub(crate) trait Webhook: Send + Sync + 'static {
    /// Decodes `body`: the envelope and the handler's call, or the answer to a body that does
    /// not decode. `path` names the webhook in messages.
    fn decode(&self, path: &Arc<str>, body: &[u8]) -> Result<Call, Answer>;

    /// The failure answer for the review of `envelope`, with HTTP `code` for its status.
    fn failure(&self, envelope: &Envelope, outcome: Outcome, code: u16, message: String) -> Answer;
}

/// An admission handler with its types erased.
pub(crate) type AdmitFn<K> = dyn Fn(AdmissionRequest<K>) -> BoxFuture<'static, Result<AdmissionResponse, BoxError>>
    + Send
    + Sync;

/// A validating or mutating webhook whose objects decode into `K`.
pub(crate) struct Admission<K> {
    pub(crate) handler: Arc<AdmitFn<K>>,
    /// Whether its answers may patch: a validating webhook's may not (the API server fails
    /// such a call).
    pub(crate) mutating: bool,
    pub(crate) objects: PhantomData<fn() -> K>,
}

/// The `apiVersion`s of `AdmissionReview` answered: v1, and v1beta1, whose fields are the
/// same (an API server before 1.16 sends it).
const ADMISSION_VERSIONS: [&str; 2] = [admission::API_VERSION, "admission.k8s.io/v1beta1"];

impl<K: DeserializeOwned + Send + 'static> Webhook for Admission<K> {
    fn decode(&self, path: &Arc<str>, body: &[u8]) -> Result<Call, Answer> {
        let invalid = |envelope: &Envelope, message: String| {
            self.failure(envelope, Outcome::Invalid, 400, format!("webhook {path}: {message}"))
        };
        let review: ReviewOnTheWire = match serde_json::from_slice(body) {
            Ok(review) => review,
            Err(e) => {
                let envelope = Envelope { api_version: None, uid: uid_in_prefix(body) };
                return Err(invalid(&envelope, format!("the body is not an AdmissionReview: {e}")));
            }
        };
        let envelope = Envelope {
            api_version: Some(review.api_version.clone()),
            uid: review.request.as_ref().map(|r| r.uid.clone()).unwrap_or_default(),
        };
        if !ADMISSION_VERSIONS.contains(&review.api_version.as_str()) {
            let message = format!(
                "apiVersion {:?} is not an AdmissionReview version this webhook answers ({}): list \
                 \"v1\" in the webhook configuration's admissionReviewVersions",
                review.api_version,
                ADMISSION_VERSIONS.join(", ")
            );
            let envelope = Envelope { api_version: None, ..envelope };
            return Err(invalid(&envelope, message));
        }
        let Some(request) = review.request else {
            return Err(invalid(&envelope, "the AdmissionReview has no request".to_owned()));
        };
        let request = AdmissionRequest::<K>::try_from(request)
            .map_err(|e| invalid(&envelope, e.to_string()))?;
        let (handler, mutating, path, answering) =
            (Arc::clone(&self.handler), self.mutating, Arc::clone(path), envelope.clone());
        let call = async move {
            let called =
                AssertUnwindSafe(async move { handler(request).await }).catch_unwind().await;
            match called {
                Ok(Ok(mut response)) => {
                    if !mutating && response.patch.is_some() {
                        let message = format!(
                            "webhook {path}: the validating webhook's handler returned a patch, \
                             which the API server refuses; register it with .mutating()"
                        );
                        tracing::error!(webhook = %path, uid = %answering.uid, "{message}");
                        return admission_failure(&answering, Outcome::Error, 500, message);
                    }
                    // Made from the request, it has its uid; a handler cannot make one otherwise.
                    response.uid.clone_from(&answering.uid);
                    let outcome = if response.allowed { Outcome::Allowed } else { Outcome::Denied };
                    Answer { body: admission_body(&answering, response), outcome }
                }
                Ok(Err(error)) => {
                    tracing::warn!(webhook = %path, uid = %answering.uid, "the handler failed: {error}");
                    let message = format!("webhook {path} failed: {error}");
                    admission_failure(&answering, Outcome::Error, 500, message)
                }
                Err(panic) => {
                    let panic = panic_message(panic.as_ref());
                    tracing::error!(webhook = %path, uid = %answering.uid, "the handler panicked: {panic}");
                    let message = format!("webhook {path} panicked: {panic}");
                    admission_failure(&answering, Outcome::Panic, 500, message)
                }
            }
        };
        Ok((envelope, Box::pin(call)))
    }

    fn failure(&self, envelope: &Envelope, outcome: Outcome, code: u16, message: String) -> Answer {
        admission_failure(envelope, outcome, code, message)
    }
}

fn admission_failure(envelope: &Envelope, outcome: Outcome, code: u16, message: String) -> Answer {
    let response = AdmissionResponse::failure(envelope.uid.clone(), code, message);
    Answer { body: admission_body(envelope, response), outcome }
}

fn admission_body(envelope: &Envelope, response: AdmissionResponse) -> Bytes {
    let mut review = admission::AdmissionReview::answer(response);
    if let Some(version) =
        envelope.api_version.as_ref().filter(|v| ADMISSION_VERSIONS.contains(&v.as_str()))
    {
        review.api_version.clone_from(version);
    }
    json_bytes(&review)
}

/// A conversion webhook.
pub(crate) struct Conversion {
    pub(crate) handler: Arc<dyn ConversionHandler>,
}

impl Webhook for Conversion {
    fn decode(&self, path: &Arc<str>, body: &[u8]) -> Result<Call, Answer> {
        let invalid = |envelope: &Envelope, message: String| {
            self.failure(envelope, Outcome::Invalid, 400, format!("webhook {path}: {message}"))
        };
        let review: ConversionReview = match serde_json::from_slice(body) {
            Ok(review) => review,
            Err(e) => {
                let envelope = Envelope { api_version: None, uid: uid_in_prefix(body) };
                return Err(invalid(&envelope, format!("the body is not a ConversionReview: {e}")));
            }
        };
        let envelope = Envelope {
            api_version: Some(review.api_version.clone()),
            uid: review.request.as_ref().map(|r| r.uid.clone()).unwrap_or_default(),
        };
        if review.api_version != conversion::API_VERSION {
            let message = format!(
                "apiVersion {:?} is not a ConversionReview version this webhook answers ({}): list \
                 \"v1\" in the CRD's conversionReviewVersions",
                review.api_version,
                conversion::API_VERSION
            );
            return Err(invalid(&Envelope { api_version: None, ..envelope }, message));
        }
        let Some(request) = review.request else {
            return Err(invalid(&envelope, "the ConversionReview has no request".to_owned()));
        };
        let (handler, path, answering) =
            (Arc::clone(&self.handler), Arc::clone(path), envelope.clone());
        let call = async move {
            let objects = request.objects.len();
            let called = AssertUnwindSafe(async move { handler.convert(request).await })
                .catch_unwind()
                .await;
            let failure =
                |outcome, message: String| conversion_failure(&answering, outcome, message);
            match called {
                Ok(Ok(mut response)) => {
                    response.uid.clone_from(&answering.uid);
                    if !response.is_success() {
                        let message = response.result.message.as_deref().unwrap_or("");
                        tracing::debug!(webhook = %path, uid = %answering.uid, "conversion failed: {message}");
                        return Answer {
                            body: json_bytes(&ConversionReview::answer(response)),
                            outcome: Outcome::ConversionFailed,
                        };
                    }
                    if response.converted_objects.len() != objects {
                        let message = format!(
                            "webhook {path}: the handler converted {} objects of {objects}: the API \
                             server needs every one, in order",
                            response.converted_objects.len()
                        );
                        tracing::error!(webhook = %path, uid = %answering.uid, "{message}");
                        return failure(Outcome::Error, message);
                    }
                    Answer {
                        body: json_bytes(&ConversionReview::answer(response)),
                        outcome: Outcome::Converted,
                    }
                }
                Ok(Err(error)) => {
                    tracing::warn!(webhook = %path, uid = %answering.uid, "the handler failed: {error}");
                    failure(Outcome::Error, format!("webhook {path} failed: {error}"))
                }
                Err(panic) => {
                    let panic = panic_message(panic.as_ref());
                    tracing::error!(webhook = %path, uid = %answering.uid, "the handler panicked: {panic}");
                    failure(Outcome::Panic, format!("webhook {path} panicked: {panic}"))
                }
            }
        };
        Ok((envelope, Box::pin(call)))
    }

    fn failure(
        &self,
        envelope: &Envelope,
        outcome: Outcome,
        _code: u16,
        message: String,
    ) -> Answer {
        // A conversion result's code is not read: `status: Failure` and the message are.
        conversion_failure(envelope, outcome, message)
    }
}

fn conversion_failure(envelope: &Envelope, outcome: Outcome, message: String) -> Answer {
    let response = ConversionResponse::failure(envelope.uid.clone(), message);
    Answer { body: json_bytes(&ConversionReview::answer(response)), outcome }
}

/// `value` as JSON. The reviews always serialise (strings, numbers, maps of strings and JSON
/// values); were one not to, the API server gets `{}`, which it reports as a webhook failure.
fn json_bytes(value: &impl serde::Serialize) -> Bytes {
    serde_json::to_vec(value).map_or_else(
        |e| {
            tracing::error!("a review's answer does not serialise: {e}");
            Bytes::from_static(b"{}")
        },
        Bytes::from,
    )
}

/// The request's `uid` from the start of a review that did not decode (or was cut at the size
/// limit), if it is there: the string value of key `uid` of the object under the top-level key
/// `request`, read by a scan that follows JSON's nesting and strings (so the `uid` of an
/// object's metadata is not taken for it). kube-apiserver writes `request` with `uid` first,
/// before the objects, so a review cut anywhere in its objects still has it. At most 128
/// characters; empty when not found.
pub(crate) fn uid_in_prefix(body: &[u8]) -> String {
    /// The end of the string that starts at `start` (its opening quote), past its closing one.
    fn string_end(body: &[u8], start: usize) -> Option<usize> {
        let mut i = start + 1;
        while i < body.len() {
            match body[i] {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    }
    let skip_space = |mut i: usize| {
        while body.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    let (mut depth, mut i) = (0usize, 0usize);
    // Where the object under `request` opens, once its key was read.
    let mut request_opens_at = None;
    let mut in_request = false;
    while i < body.len() {
        match body[i] {
            b'"' => {
                let Some(end) = string_end(body, i) else { return String::new() };
                let key = &body[i + 1..end - 1];
                let after = skip_space(end);
                if body.get(after) != Some(&b':') {
                    i = end;
                    continue;
                }
                let value = skip_space(after + 1);
                if depth == 1 && key == b"request" {
                    request_opens_at = Some(value);
                } else if in_request && depth == 2 && key == b"uid" {
                    if body.get(value) != Some(&b'"') {
                        return String::new();
                    }
                    let Some(uid_end) = string_end(body, value) else { return String::new() };
                    let uid = &body[value + 1..uid_end - 1];
                    if uid.len() > 128 || uid.contains(&b'\\') {
                        return String::new();
                    }
                    return String::from_utf8(uid.to_vec()).unwrap_or_default();
                }
                i = value;
            }
            b'{' | b'[' => {
                depth += 1;
                in_request |= request_opens_at == Some(i) && body[i] == b'{';
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if in_request && depth < 2 {
                    return String::new();
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    String::new()
}

/// An admission review of a `ConfigMap` create holding `object`, for this module's tests.
#[cfg(test)]
fn admission_review(uid: &str, object: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "operation": "CREATE",
            "userInfo": {"username": "admin"},
            "object": object,
        },
    }))
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn admission<K: DeserializeOwned + Send + 'static>(
        mutating: bool,
        handler: impl Fn(AdmissionRequest<K>) -> Result<AdmissionResponse, BoxError>
        + Send
        + Sync
        + 'static,
    ) -> Admission<K> {
        let handler = Arc::new(handler);
        Admission {
            handler: Arc::new(move |request| {
                let handler = Arc::clone(&handler);
                Box::pin(async move { handler(request) })
            }),
            mutating,
            objects: PhantomData,
        }
    }

    async fn run(webhook: &dyn Webhook, body: &[u8]) -> (Value, Outcome) {
        let path: Arc<str> = Arc::from("/validate");
        let answer = match webhook.decode(&path, body) {
            Ok((_, call)) => call.await,
            Err(answer) => answer,
        };
        (serde_json::from_slice(&answer.body).unwrap(), answer.outcome)
    }

    #[tokio::test]
    async fn a_body_that_does_not_decode_is_denied_with_the_uid_found_in_it() {
        let webhook = admission::<Value>(false, |r| Ok(r.allow()));
        let mut body = admission_review("2f0a-11", &json!({"a": 1}));
        body.truncate(body.len() - 10);
        let (answer, outcome) = run(&webhook, &body).await;
        assert_eq!(outcome, Outcome::Invalid);
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(answer["response"]["uid"], "2f0a-11");
        assert_eq!(answer["response"]["allowed"], false);
        assert_eq!(answer["response"]["status"]["code"], 400);
        let message = answer["response"]["status"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("webhook /validate: the body is not an AdmissionReview"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn an_object_that_does_not_fit_the_type_is_denied_naming_it() {
        let webhook = admission::<k8s_openapi::api::core::v1::ConfigMap>(false, |r| Ok(r.allow()));
        let (answer, outcome) =
            run(&webhook, &admission_review("u-1", &json!({"data": [1]}))).await;
        assert_eq!(outcome, Outcome::Invalid);
        assert_eq!(answer["response"]["uid"], "u-1");
        let message = answer["response"]["status"]["message"].as_str().unwrap();
        assert!(message.contains("request.object does not decode as"), "{message}");
    }

    #[tokio::test]
    async fn a_handler_error_or_panic_is_denied_naming_it() {
        let failing = admission::<Value>(false, |_| Err("the cache is not synced".into()));
        let (answer, outcome) = run(&failing, &admission_review("u-2", &json!({}))).await;
        assert_eq!(outcome, Outcome::Error);
        assert_eq!(answer["response"]["uid"], "u-2");
        assert_eq!(
            answer["response"]["status"]["message"],
            "webhook /validate failed: the cache is not synced"
        );

        let panicking = admission::<Value>(false, |_| panic!("index out of bounds"));
        let (answer, outcome) = run(&panicking, &admission_review("u-3", &json!({}))).await;
        assert_eq!(outcome, Outcome::Panic);
        assert_eq!(answer["response"]["allowed"], false);
        assert_eq!(
            answer["response"]["status"]["message"],
            "webhook /validate panicked: index out of bounds"
        );
    }

    #[tokio::test]
    async fn a_validating_webhook_may_not_patch() {
        let patching = admission::<Value>(false, |r| {
            let original = r.object.clone().unwrap_or_default();
            Ok(r.allow().patch_from(&original, &json!({"changed": true}))?)
        });
        let (answer, outcome) = run(&patching, &admission_review("u-4", &json!({}))).await;
        assert_eq!(outcome, Outcome::Error);
        let message = answer["response"]["status"]["message"].as_str().unwrap();
        assert!(message.contains("register it with .mutating()"), "{message}");
    }

    #[tokio::test]
    async fn an_unknown_review_version_is_refused_naming_the_versions_answered() {
        let webhook = admission::<Value>(false, |r| Ok(r.allow()));
        let mut review: Value =
            serde_json::from_slice(&admission_review("u-5", &json!({}))).unwrap();
        review["apiVersion"] = json!("admission.k8s.io/v2");
        let (answer, _) = run(&webhook, &serde_json::to_vec(&review).unwrap()).await;
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
        let message = answer["response"]["status"]["message"].as_str().unwrap();
        assert!(
            message.contains("\"admission.k8s.io/v2\" is not an AdmissionReview version"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn a_v1beta1_review_is_answered_as_v1beta1() {
        let webhook = admission::<Value>(false, |r| Ok(r.allow()));
        let mut review: Value =
            serde_json::from_slice(&admission_review("u-6", &json!({}))).unwrap();
        review["apiVersion"] = json!("admission.k8s.io/v1beta1");
        let (answer, outcome) = run(&webhook, &serde_json::to_vec(&review).unwrap()).await;
        assert_eq!(outcome, Outcome::Allowed);
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1beta1");
    }

    #[tokio::test]
    async fn a_conversion_handler_that_drops_objects_fails_the_review() {
        let webhook = Conversion {
            handler: Arc::new(|request: ConversionRequest| async move {
                Ok::<_, BoxError>(request.success(Vec::new()))
            }),
        };
        let body = serde_json::to_vec(&json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "c-1", "desiredAPIVersion": "example.com/v2", "objects": [{}]},
        }))
        .unwrap();
        let (answer, outcome) = run(&webhook, &body).await;
        assert_eq!(outcome, Outcome::Error);
        assert_eq!(answer["response"]["uid"], "c-1");
        assert_eq!(answer["response"]["result"]["status"], "Failure");
        let message = answer["response"]["result"]["message"].as_str().unwrap();
        assert!(message.contains("converted 0 objects of 1"), "{message}");
    }

    #[test]
    fn the_uid_is_found_in_a_prefix_only_where_the_request_has_it() {
        let body = br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid" : "0c9a8d74-9cb7","kind":{"#;
        assert_eq!(uid_in_prefix(body), "0c9a8d74-9cb7");
        // Keys in another order: the object's metadata.uid is not the request's.
        let sorted = br#"{"request":{"kind":{"kind":"Pod"},"object":{"metadata":{"uid":"object-uid"}},"uid":"request-uid"}}"#;
        assert_eq!(uid_in_prefix(sorted), "request-uid");
        let cut =
            br#"{"request":{"object":{"metadata":{"uid":"object-uid","annotations":{"a":"x\"}{"#;
        assert_eq!(uid_in_prefix(cut), "");
        // A string that looks like a key is not one.
        let quoted = br#"{"note":"\"request\":{\"uid\":\"fake\"}","request":{"uid":"real"}}"#;
        assert_eq!(uid_in_prefix(quoted), "real");
        assert_eq!(uid_in_prefix(br#"{"metadata":{"uid":"x"}}"#), "");
        assert_eq!(uid_in_prefix(br#"{"request":{"uid":"not closed"#), "");
        let long = format!(r#"{{"request":{{"uid":"{}"}}}}"#, "a".repeat(200));
        assert_eq!(uid_in_prefix(long.as_bytes()), "");
    }
}
