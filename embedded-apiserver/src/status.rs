//! Failed requests as the API server reports them: a `metav1.Status` body and its HTTP code.
//!
//! Every error the embedded server answers with goes through [`ApiError`], whose constructors
//! are apimachinery's `errors.New…` functions with their exact message formats, so that
//! clients' string matching (kubectl's, client-go's) works unchanged.

use std::fmt;
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use informer_runtime::Status;
use serde_json::{Map, Value, json};

/// A group and a resource, printed as apimachinery's `schema.GroupResource` (`pods`,
/// `deployments.apps`), the way messages name a resource.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct GroupResource {
    pub(crate) group: String,
    pub(crate) resource: String,
}

impl GroupResource {
    pub(crate) fn new(group: &str, resource: &str) -> Self {
        Self { group: group.to_owned(), resource: resource.to_owned() }
    }
}

impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// One `StatusCause`: why a field was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cause {
    pub(crate) reason: String,
    pub(crate) message: String,
    pub(crate) field: String,
}

/// A `metav1.Status` with `status: Failure`: the body and code of a failed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub(crate) code: u16,
    pub(crate) reason: String,
    pub(crate) message: String,
    /// `details.name`, `details.group`, `details.kind` (apimachinery puts the resource there).
    pub(crate) details: Option<Box<(String, String, String)>>,
    pub(crate) causes: Vec<Cause>,
    /// `details.retryAfterSeconds`, and the `Retry-After` header.
    pub(crate) retry_after: Option<u32>,
    /// `metadata.continue`: the token to resume an expired list from the current snapshot.
    pub(crate) continue_token: Option<String>,
}

impl ApiError {
    /// A status with a code, a reason and a message, and nothing else.
    pub(crate) fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.to_owned(),
            message: message.into(),
            details: None,
            causes: Vec::new(),
            retry_after: None,
            continue_token: None,
        }
    }

    fn with_details(mut self, resource: &GroupResource, name: &str) -> Self {
        self.details =
            Some(Box::new((name.to_owned(), resource.group.clone(), resource.resource.clone())));
        self
    }

    /// `errors.NewNotFound`: `pods "x" not found`.
    pub(crate) fn not_found(resource: &GroupResource, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{resource} {name:?} not found"))
            .with_details(resource, name)
    }

    /// A path the server has no handler for.
    pub(crate) fn path_not_found() -> Self {
        let mut error =
            Self::new(404, "NotFound", "the server could not find the requested resource");
        error.details = Some(Box::default());
        error
    }

    /// `errors.NewAlreadyExists`: `pods "x" already exists`.
    pub(crate) fn already_exists(resource: &GroupResource, name: &str) -> Self {
        Self::new(409, "AlreadyExists", format!("{resource} {name:?} already exists"))
            .with_details(resource, name)
    }

    /// `errors.NewConflict`: `Operation cannot be fulfilled on pods "x": <why>`.
    pub(crate) fn conflict(resource: &GroupResource, name: &str, why: &str) -> Self {
        let message = format!("Operation cannot be fulfilled on {resource} {name:?}: {why}");
        Self::new(409, "Conflict", message).with_details(resource, name)
    }

    /// The conflict of an update from a stale resourceVersion.
    pub(crate) fn stale(resource: &GroupResource, name: &str) -> Self {
        Self::conflict(
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and \
             try again",
        )
    }

    /// A plain error the API server did not classify: 500 with neither a reason nor details
    /// (`responsewriters.ErrorToAPIStatus` of a non-`APIStatus` error).
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "", message)
    }

    /// `errors.NewBadRequest`.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// `errors.NewInvalid`: `Pod "x" is invalid: <field>: <why>` (422), with one cause per
    /// `(field, cause type, message)`.
    pub(crate) fn invalid(
        kind: &str,
        group: &str,
        name: &str,
        errors: &[(&str, &str, String)],
    ) -> Self {
        let qualified = if group.is_empty() { kind.to_owned() } else { format!("{kind}.{group}") };
        let joined: Vec<String> = errors.iter().map(|(f, _, m)| format!("{f}: {m}")).collect();
        let joined = match joined.len() {
            0 => String::new(),
            1 => format!(": {}", joined[0]),
            _ => format!(": [{}]", joined.join(", ")),
        };
        let mut error =
            Self::new(422, "Invalid", format!("{qualified} {name:?} is invalid{joined}"));
        error.details = Some(Box::new((name.to_owned(), group.to_owned(), kind.to_owned())));
        error.causes = errors
            .iter()
            .map(|(field, reason, message)| Cause {
                reason: (*reason).to_owned(),
                message: message.clone(),
                field: (*field).to_owned(),
            })
            .collect();
        error
    }

    /// The answer to a method the path has no route for (`errors.NewMethodNotSupported`'s
    /// generic form, with empty details).
    pub(crate) fn method_not_allowed() -> Self {
        let mut error = Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        );
        error.details = Some(Box::default());
        error
    }

    /// `errors.NewResourceExpired` (410 Expired).
    pub(crate) fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// `storage.NewTooLargeResourceVersionError`: 504 Timeout, cause `ResourceVersionTooLarge`.
    pub(crate) fn too_large_resource_version(requested: u64, current: u64) -> Self {
        let message =
            format!("Timeout: Too large resource version: {requested}, current: {current}");
        let mut error = Self::new(504, "Timeout", message);
        error.details = Some(Box::default());
        error.retry_after = Some(1);
        error.causes = vec![Cause {
            reason: "ResourceVersionTooLarge".to_owned(),
            message: "Too large resource version".to_owned(),
            field: String::new(),
        }];
        error
    }

    /// 406: none of the `Accept`ed media types can be served.
    pub(crate) fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    /// 415: a body in a format the server does not take
    /// (`negotiation.NewUnsupportedMediaTypeError`).
    pub(crate) fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    /// 415 for a PATCH whose `Content-Type` is no patch format: the HTTP router's answer,
    /// `415: Unsupported Media Type` with empty details.
    pub(crate) fn unsupported_patch_type() -> Self {
        let mut error = Self::unsupported_media_type("415: Unsupported Media Type");
        error.details = Some(Box::default());
        error
    }

    /// The body a client receives.
    pub(crate) fn to_json(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        let metadata = match &self.continue_token {
            Some(token) => json!({ "continue": token }),
            None => json!({}),
        };
        status.insert("metadata".into(), metadata);
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.message));
        if !self.reason.is_empty() {
            status.insert("reason".into(), json!(self.reason));
        }
        let has_details =
            self.details.is_some() || !self.causes.is_empty() || self.retry_after.is_some();
        if has_details {
            let mut details = Map::new();
            if let Some(details_triple) = &self.details {
                let (name, group, kind) = &**details_triple;
                for (key, value) in [("name", name), ("group", group), ("kind", kind)] {
                    if !value.is_empty() {
                        details.insert(key.into(), json!(value));
                    }
                }
            }
            if !self.causes.is_empty() {
                let causes = self.causes.iter().map(|c| {
                    let mut cause = Map::new();
                    for (key, value) in
                        [("reason", &c.reason), ("message", &c.message), ("field", &c.field)]
                    {
                        if !value.is_empty() {
                            cause.insert(key.into(), json!(value));
                        }
                    }
                    Value::Object(cause)
                });
                details.insert("causes".into(), Value::Array(causes.collect()));
            }
            if let Some(seconds) = self.retry_after.filter(|&s| s > 0) {
                details.insert("retryAfterSeconds".into(), json!(seconds));
            }
            status.insert("details".into(), Value::Object(details));
        }
        status.insert("code".into(), json!(self.code));
        Value::Object(status)
    }

    /// This error as the crate's [`Status`], for callers of the server handle.
    pub(crate) fn to_status(&self) -> Status {
        Status {
            code: self.code,
            reason: self.reason.clone(),
            message: self.message.clone(),
            causes: self.causes.iter().map(|c| (c.reason.clone(), c.message.clone())).collect(),
            retry_after: self.retry_after.map(|s| Duration::from_secs(u64::from(s))),
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = self.to_json().to_string();
        let mut response = (code, body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(seconds) = self.retry_after.filter(|&s| s > 0) {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_apimachinery() {
        let pods = GroupResource::new("", "pods");
        let deployments = GroupResource::new("apps", "deployments");
        assert_eq!(ApiError::not_found(&pods, "x").message, "pods \"x\" not found");
        assert_eq!(
            ApiError::already_exists(&deployments, "x").message,
            "deployments.apps \"x\" already exists"
        );
        assert_eq!(
            ApiError::stale(&pods, "x").message,
            "Operation cannot be fulfilled on pods \"x\": the object has been modified; please \
             apply your changes to the latest version and try again"
        );
        let body = ApiError::not_found(&deployments, "x").to_json();
        assert_eq!(
            body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "deployments.apps \"x\" not found", "reason": "NotFound",
                   "details": {"name": "x", "group": "apps", "kind": "deployments"}, "code": 404})
        );
        let invalid = ApiError::invalid(
            "Pod",
            "",
            "",
            &[(
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required".into(),
            )],
        );
        assert_eq!(
            invalid.message,
            "Pod \"\" is invalid: metadata.name: Required value: name or generateName is required"
        );
        let too_large = ApiError::too_large_resource_version(9, 5);
        assert!(too_large.to_status().is_resource_version_too_large());
        assert_eq!(too_large.to_json()["details"]["retryAfterSeconds"], 1);
    }
}
