//! Admission webhooks: calling the mutating webhooks in turn and the validating ones together,
//! with `AdmissionReview` v1 (or v1beta1) requests, and answering as kube-apiserver answers.
//!
//! This is kube-apiserver's webhook admission (`k8s.io/apiserver/pkg/admission/plugin/webhook`:
//! `mutating/dispatcher.go`, `validating/dispatcher.go`, `request/admissionreview.go`,
//! `errors/statuserror.go`) for one request whose objects the caller hands over; where a write
//! calls it, and on which objects, is `admitted.rs`. What a client gets:
//!
//! - a denial: the webhook's `status` with `admission webhook "NAME" denied the request: MESSAGE`
//!   (its reason when it has no message, `... denied the request without explanation` when it
//!   has neither), and its code if 400 or more, else 400 (`ToStatusErr`);
//! - a webhook that cannot be called, or answers something that is not a valid review:
//!   with `failurePolicy: Fail`, `500 InternalError` `Internal error occurred: failed calling
//!   webhook "NAME": failed to call webhook: Post "URL?timeout=10s": ...` (or `received invalid
//!   webhook response: ...`); with `Ignore`, the request goes on as if it had not been asked;
//! - a `dryRun` request and a webhook whose `sideEffects` are neither `None` nor `NoneOnDryRun`:
//!   `400` `admission webhook "NAME" does not support dry run`, whatever its failure policy;
//! - the warnings of every webhook called, as `Warning: 299 - "TEXT"` headers (deduplicated
//!   and truncated as kube-apiserver's warning recorder does: [`Warnings`]), on the answer
//!   whatever it is.
//!
//! Mutating webhooks run one after the other, each seeing the object as the ones before left
//! it; a JSON patch in the answer is applied (`JSONPatch` is the only patch type). Their
//! `reinvocationPolicy` is not honoured: no webhook is called twice. Validating webhooks are
//! called in parallel, as kube-apiserver calls them; when several deny, the first in call
//! order is the answer (kube-apiserver's is the first to answer).
//!
//! `userInfo` is `system:admin` in `system:masters`: this server authorizes everything, as
//! that user may.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::patch::json_patch;
use crate::status::{ApiError, Cause};
use crate::util::{base64_decode, new_uid};
use crate::webhook_client::{WebhookClient, decode, gvk_of};
use crate::webhook_config::{Attributes, Webhook};

/// One admission request: what kube's `admission.Attributes` carries.
#[derive(Clone, Debug)]
pub(crate) struct Review<'a> {
    pub(crate) attrs: Attributes<'a>,
    /// The kind of the objects (in the attributes' group and version).
    pub(crate) kind: &'a str,
    /// The object's name; empty for a create that asks for a generated name (until the
    /// validating webhooks, which see the generated one), and for the items of a
    /// deletecollection.
    pub(crate) name: String,
    /// The object as it would be written (none for a delete).
    pub(crate) object: Option<Value>,
    /// The object as it is stored (none for a create).
    pub(crate) old_object: Option<Value>,
    /// `CreateOptions`, `UpdateOptions` or `DeleteOptions`.
    pub(crate) options: Value,
    pub(crate) dry_run: bool,
}

/// The webhooks of one request and what matching them needs.
pub(crate) struct Admission<'a> {
    pub(crate) client: &'a WebhookClient,
    /// Every mutating webhook, in call order.
    pub(crate) mutating: &'a [Webhook],
    /// Every validating webhook, in call order.
    pub(crate) validating: &'a [Webhook],
    /// The labels of the request's namespace; `None` when it does not exist.
    pub(crate) namespace_labels: Option<&'a BTreeMap<String, String>>,
}

/// Why a call did not give an answer to act on.
enum Failure {
    /// `ErrCallingWebhook`: the failure policy decides. The text is the error's, after
    /// `failed calling webhook "NAME": `.
    Calling(String),
    /// Anything else: the request fails with it.
    Error(ApiError),
}

impl Admission<'_> {
    fn selects(&self, hook: &Webhook, review: &Review<'_>) -> Result<bool, ApiError> {
        hook.matches(
            &review.attrs,
            self.namespace_labels,
            review.object.as_ref(),
            review.old_object.as_ref(),
        )
    }

    /// Calls the mutating webhooks that ask for `review` in turn, applying their patches to
    /// `review.object` (the mutating dispatcher's `Dispatch`).
    ///
    /// # Errors
    ///
    /// A denial, or a failed call under `failurePolicy: Fail`, as kube-apiserver answers them
    /// (see the [module documentation](self)).
    pub(crate) async fn mutate(
        &self,
        review: &mut Review<'_>,
        warnings: &mut Warnings,
    ) -> Result<(), ApiError> {
        for hook in self.mutating {
            if !self.selects(hook, review)? {
                continue;
            }
            let (answer, said) = call(self.client, hook, review, true).await;
            for text in said {
                warnings.add(&text);
            }
            match answer.and_then(|answer| patched(hook, review, &answer)) {
                Ok(Some(object)) => review.object = Some(object),
                Ok(None) => {}
                Err(Failure::Calling(reason)) => fail(hook, &reason)?,
                Err(Failure::Error(error)) => return Err(error),
            }
        }
        Ok(())
    }

    /// Calls the validating webhooks that ask for `review`, all at once (the validating
    /// dispatcher's `Dispatch`).
    ///
    /// # Errors
    ///
    /// The first denial or failed call under `failurePolicy: Fail`, in call order.
    pub(crate) async fn validate(
        &self,
        review: &Review<'_>,
        warnings: &mut Warnings,
    ) -> Result<(), ApiError> {
        let mut relevant = Vec::new();
        for hook in self.validating {
            if self.selects(hook, review)? {
                relevant.push(hook);
            }
        }
        let calls = relevant.iter().map(|hook| call(self.client, hook, review, false));
        let answers = futures::future::join_all(calls).await;
        let mut first = None;
        for (hook, (answer, said)) in relevant.into_iter().zip(answers) {
            for text in said {
                warnings.add(&text);
            }
            let outcome = match answer {
                Ok(_) => Ok(()),
                Err(Failure::Calling(reason)) => fail(hook, &reason),
                Err(Failure::Error(error)) => Err(error),
            };
            if let Err(error) = outcome {
                first.get_or_insert(error);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// A failed call under the webhook's failure policy: `Ok` to go on (`Ignore`), else
/// `apierrors.NewInternalError` of the `ErrCallingWebhook`.
fn fail(hook: &Webhook, reason: &str) -> Result<(), ApiError> {
    let error = format!("failed calling webhook {:?}: {reason}", hook.name);
    if hook.fail_open {
        let configuration = &hook.configuration;
        tracing::warn!(webhook = %hook.name, %configuration, %error, "failed calling webhook, failing open");
        return Ok(());
    }
    let mut status =
        ApiError::new(500, "InternalError", format!("Internal error occurred: {error}"));
    status.causes = vec![Cause { reason: String::new(), message: error, field: String::new() }];
    Err(status)
}

/// The parts of a webhook's answer that act on the request (`AdmissionResponse`).
struct Answer {
    allowed: bool,
    status: Option<Value>,
    patch: Option<Vec<u8>>,
    patch_type: String,
}

/// Calls one webhook with `review`; returns its checked answer and its warnings.
async fn call(
    client: &WebhookClient,
    hook: &Webhook,
    review: &Review<'_>,
    mutating: bool,
) -> (Result<Answer, Failure>, Vec<String>) {
    if review.dry_run && !matches!(hook.side_effects.as_str(), "None" | "NoneOnDryRun") {
        if hook.side_effects.is_empty() {
            return (Err(Failure::Calling("Webhook SideEffects is nil".to_owned())), Vec::new());
        }
        let message = format!("admission webhook {:?} does not support dry run", hook.name);
        return (Err(Failure::Error(ApiError::bad_request(message))), Vec::new());
    }
    // `CreateAdmissionObjects`: the first version of the webhook's list this server speaks.
    let Some(version) =
        hook.review_versions.iter().find(|v| matches!(v.as_str(), "v1" | "v1beta1"))
    else {
        let reason = "could not create admission objects: webhook does not accept known \
                      AdmissionReview versions (v1, v1beta1)";
        return (Err(Failure::Calling(reason.to_owned())), Vec::new());
    };
    let uid = new_uid();
    let request = admission_review(version, &uid, review);
    let body = request.to_string().into_bytes();
    let reply = match client.post(&hook.client, body, hook.timeout).await {
        Ok(reply) => reply,
        Err(reason) => {
            return (
                Err(Failure::Calling(format!("failed to call webhook: {reason}"))),
                Vec::new(),
            );
        }
    };
    let answer = match decode(&reply) {
        Ok(answer) => answer,
        Err(reason) => {
            return (
                Err(Failure::Calling(format!("failed to call webhook: {reason}"))),
                Vec::new(),
            );
        }
    };
    match verify(version, &uid, mutating, &answer) {
        Ok((answer, warnings)) => {
            if answer.allowed {
                (Ok(answer), warnings)
            } else {
                (Err(Failure::Error(denied(&hook.name, answer.status.as_ref()))), warnings)
            }
        }
        Err(reason) => {
            let reason = format!("received invalid webhook response: {reason}");
            (Err(Failure::Calling(reason)), Vec::new())
        }
    }
}

/// The `AdmissionReview` request of `review` (`CreateV1AdmissionReview`).
fn admission_review(version: &str, uid: &str, review: &Review<'_>) -> Value {
    let attrs = &review.attrs;
    let kind = json!({"group": attrs.group, "version": attrs.version, "kind": review.kind});
    let resource =
        json!({"group": attrs.group, "version": attrs.version, "resource": attrs.resource});
    let mut request = Map::new();
    request.insert("uid".into(), json!(uid));
    request.insert("kind".into(), kind.clone());
    request.insert("resource".into(), resource.clone());
    if !attrs.subresource.is_empty() {
        request.insert("subResource".into(), json!(attrs.subresource));
    }
    request.insert("requestKind".into(), kind);
    request.insert("requestResource".into(), resource);
    if !attrs.subresource.is_empty() {
        request.insert("requestSubResource".into(), json!(attrs.subresource));
    }
    if !review.name.is_empty() {
        request.insert("name".into(), json!(review.name));
    }
    if !attrs.namespace.is_empty() {
        request.insert("namespace".into(), json!(attrs.namespace));
    }
    request.insert("operation".into(), json!(attrs.operation.as_str()));
    request.insert(
        "userInfo".into(),
        json!({"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}),
    );
    request.insert("object".into(), review.object.clone().unwrap_or(Value::Null));
    request.insert("oldObject".into(), review.old_object.clone().unwrap_or(Value::Null));
    request.insert("dryRun".into(), json!(review.dry_run));
    request.insert("options".into(), review.options.clone());
    json!({"kind": "AdmissionReview", "apiVersion": format!("admission.k8s.io/{version}"),
           "request": request})
}

/// `VerifyAdmissionResponse`: the answer's `response`, checked; and its warnings.
fn verify(
    version: &str,
    uid: &str,
    mutating: bool,
    review: &Value,
) -> Result<(Answer, Vec<String>), String> {
    let response = review.get("response").filter(|r| r.is_object());
    let response = response.ok_or_else(|| "webhook response was absent".to_owned())?;
    let text = |key: &str| response.get(key).and_then(Value::as_str);
    let patch = match text("patch") {
        Some(patch) if !patch.is_empty() => {
            Some(base64_decode(patch).ok_or("illegal base64 data in response.patch")?)
        }
        _ => None,
    };
    let patch_type = response.get("patchType").filter(|t| !t.is_null());
    let mut patch_type_text = patch_type.and_then(Value::as_str).unwrap_or_default().to_owned();
    if version == "v1" {
        let got = text("uid").unwrap_or_default();
        if got != uid {
            return Err(format!("expected response.uid={uid:?}, got {got:?}"));
        }
        let gvk = gvk_of(review);
        let expected = "admission.k8s.io/v1, Kind=AdmissionReview";
        if gvk != expected {
            return Err(format!("expected webhook response of {expected}, got {gvk}"));
        }
        if mutating {
            if patch.is_some() && patch_type.is_none() {
                return Err("webhook returned response.patch but not response.patchType".into());
            }
            if patch.is_none() && patch_type.is_some() {
                return Err("webhook returned response.patchType but not response.patch".into());
            }
            if patch_type.is_some() && patch_type_text.is_empty() {
                return Err(format!(
                    "webhook returned invalid response.patchType of {patch_type_text:?}"
                ));
            }
        } else {
            if patch.is_some() {
                return Err("validating webhook may not return response.patch".into());
            }
            if patch_type.is_some() {
                return Err("validating webhook may not return response.patchType".into());
            }
        }
    } else if patch.is_some() {
        // v1beta1 answers were never checked for a patch type: JSON patch is the only one.
        "JSONPatch".clone_into(&mut patch_type_text);
    }
    let warnings = response
        .get("warnings")
        .and_then(Value::as_array)
        .map(|w| w.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let answer = Answer {
        allowed: response.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        status: response.get("status").filter(|s| s.is_object()).cloned(),
        patch: if mutating { patch } else { None },
        patch_type: patch_type_text,
    };
    Ok((answer, warnings))
}

/// The object after an allowing mutating webhook's patch; `None` when it has none.
fn patched(hook: &Webhook, review: &Review<'_>, answer: &Answer) -> Result<Option<Value>, Failure> {
    let Some(patch) = &answer.patch else { return Ok(None) };
    let patch: Value = serde_json::from_slice(patch).map_err(|e| {
        Failure::Calling(format!("received undecodable patch in webhook response: {e}"))
    })?;
    if patch.as_array().is_some_and(Vec::is_empty) {
        return Ok(None);
    }
    let Some(object) = &review.object else {
        let message = format!(
            "Internal error occurred: admission webhook {:?} attempted to modify the object, \
             which is not supported for this operation",
            hook.name
        );
        return Err(Failure::Error(ApiError::new(500, "InternalError", message)));
    };
    if answer.patch_type != "JSONPatch" {
        return Err(Failure::Calling(format!("unsupported patch type {:?}", answer.patch_type)));
    }
    let mut object = object.clone();
    json_patch(&mut object, &patch).map_err(|why| {
        Failure::Error(ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {why}"),
        ))
    })?;
    if !object.is_object() {
        let why = "the patched object is not a JSON object";
        return Err(Failure::Error(ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {why}"),
        )));
    }
    Ok(Some(object))
}

/// `ToStatusErr`: the denial a client gets, from the webhook's `status`.
fn denied(webhook: &str, status: Option<&Value>) -> ApiError {
    let empty = Value::Null;
    let status = status.unwrap_or(&empty);
    let text = |key: &str| status.get(key).and_then(Value::as_str).unwrap_or_default();
    let denied_by = format!("admission webhook {webhook:?} denied the request");
    let message = if !text("message").is_empty() {
        format!("{denied_by}: {}", text("message"))
    } else if !text("reason").is_empty() {
        format!("{denied_by}: {}", text("reason"))
    } else {
        format!("{denied_by} without explanation")
    };
    let code = status.get("code").and_then(Value::as_u64).unwrap_or(0);
    let code = u16::try_from(code).ok().filter(|&c| c >= 400).unwrap_or(400);
    let mut error = ApiError::new(code, text("reason"), message);
    if let Some(details) = status.get("details").filter(|d| d.is_object()) {
        let field =
            |key: &str| details.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        error.details = Some(Box::new((field("name"), field("group"), field("kind"))));
        let causes = details.get("causes").and_then(Value::as_array);
        error.causes = causes
            .into_iter()
            .flatten()
            .map(|c| {
                let field =
                    |key: &str| c.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
                Cause { reason: field("reason"), message: field("message"), field: field("field") }
            })
            .collect();
        let retry = details.get("retryAfterSeconds").and_then(Value::as_u64);
        error.retry_after = retry.and_then(|s| u32::try_from(s).ok());
    }
    error
}

/// Warnings for the answer's `Warning` headers, recorded as kube-apiserver's warning recorder
/// records them (`WithWarningRecorder`, `k8s.io/apiserver/pkg/endpoints/filters/warning.go`):
/// each text once; once their texts pass 4096 characters together, every warning is cut to 256
/// characters and those past the limit are dropped.
#[derive(Debug, Default)]
pub(crate) struct Warnings {
    /// Every text recorded, in order, for deduplication and replay when truncation starts.
    recorded: Vec<String>,
    /// The header values.
    headers: Vec<String>,
    /// Characters of text in `headers`.
    written: usize,
    truncating: bool,
}

/// `truncateAtTotalRunes`.
const TRUNCATE_AT_TOTAL: usize = 4 * 1024;
/// `truncateItemRunes`.
const TRUNCATE_ITEM: usize = 256;

impl Warnings {
    /// Records a warning (`recorder.AddWarning`).
    pub(crate) fn add(&mut self, text: &str) {
        if text.is_empty() || (self.written >= TRUNCATE_AT_TOTAL && self.truncating) {
            return;
        }
        if self.recorded.iter().any(|t| t == text) {
            return;
        }
        self.recorded.push(text.to_owned());
        let mut text: String = text.to_owned();
        let mut length = text.chars().count();
        if self.truncating && length > TRUNCATE_ITEM {
            text = text.chars().take(TRUNCATE_ITEM).collect();
            length = TRUNCATE_ITEM;
        }
        let Some(header) = warning_header(&text) else { return };
        if self.written + length <= TRUNCATE_AT_TOTAL || self.truncating {
            self.written += length;
            self.headers.push(header);
            return;
        }
        self.truncating = true;
        self.written = 0;
        self.headers.clear();
        for text in &self.recorded {
            let text: String = text.chars().take(TRUNCATE_ITEM).collect();
            if let Some(header) = warning_header(&text) {
                self.written += text.chars().count();
                self.headers.push(header);
            }
        }
    }

    /// The `Warning` header values, in order.
    pub(crate) fn headers(&self) -> &[String] {
        &self.headers
    }
}

/// `net.NewWarningHeader(299, "-", text)`: `299 - "TEXT"` with `"` and `\` escaped; `None`
/// for text with control characters, which Go's recorder drops.
fn warning_header(text: &str) -> Option<String> {
    if text.chars().any(char::is_control) {
        return None;
    }
    let mut header = String::with_capacity(text.len() + 8);
    header.push_str("299 - \"");
    for c in text.chars() {
        if matches!(c, '"' | '\\') {
            header.push('\\');
        }
        header.push(c);
    }
    header.push('"');
    Some(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `TestToStatusErr` in kube's `errors/statuserror_test.go`.
    #[test]
    fn denials_read_as_kube_apiserver_words_them() {
        let denial = denied(
            "w.example.com",
            Some(&json!({"message": "no", "code": 403, "reason": "Forbidden"})),
        );
        assert_eq!(
            (denial.code, denial.reason.as_str(), denial.message.as_str()),
            (403, "Forbidden", "admission webhook \"w.example.com\" denied the request: no")
        );
        let reason_only = denied("w", Some(&json!({"reason": "because", "code": 200})));
        assert_eq!(
            (reason_only.code, reason_only.message.as_str()),
            (400, "admission webhook \"w\" denied the request: because")
        );
        assert_eq!(
            denied("w", None).message,
            "admission webhook \"w\" denied the request without explanation"
        );
    }

    /// kube's `TestAddWarning` cases of deduplication and truncation (`warning_test.go`).
    #[test]
    fn warnings_are_deduplicated_escaped_and_truncated() {
        let mut warnings = Warnings::default();
        warnings.add("a \"quoted\" \\ text");
        warnings.add("a \"quoted\" \\ text");
        warnings.add("");
        assert_eq!(warnings.headers(), [r#"299 - "a \"quoted\" \\ text""#]);
        let long = "x".repeat(3000);
        warnings.add(&long);
        assert_eq!(warnings.headers().len(), 2);
        warnings.add(&"y".repeat(3000));
        assert!(warnings.truncating);
        let lengths: Vec<usize> = warnings.headers().iter().map(String::len).collect();
        assert_eq!(lengths, [28, 256 + 8, 256 + 8]);
    }

    #[test]
    fn answers_are_checked_as_verify_admission_response_checks_them() {
        let good = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                          "response": {"uid": "u", "allowed": true, "warnings": ["w"]}});
        let (answer, warnings) = verify("v1", "u", true, &good).unwrap();
        assert!(answer.allowed && warnings == ["w"]);
        let no_kind = json!({"response": {"uid": "u", "allowed": true}});
        assert_eq!(
            verify("v1", "u", true, &no_kind).err().unwrap(),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind="
        );
        let wrong_uid = json!({"response": {"uid": "x", "allowed": true}});
        assert_eq!(
            verify("v1", "u", true, &wrong_uid).err().unwrap(),
            "expected response.uid=\"u\", got \"x\""
        );
        let patching = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                              "response": {"uid": "u", "allowed": true, "patch": "W10="}});
        assert_eq!(
            verify("v1", "u", false, &patching).err().unwrap(),
            "validating webhook may not return response.patch"
        );
        assert_eq!(
            verify("v1", "u", true, &patching).err().unwrap(),
            "webhook returned response.patch but not response.patchType"
        );
        assert_eq!(
            verify("v1", "u", true, &json!({})).err().unwrap(),
            "webhook response was absent"
        );
    }
}
