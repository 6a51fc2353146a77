//! Client errors: the API server's `Status` kept typed, transport failures classified.
//!
//! Where failures enter the data flow: every non-2xx answer becomes [`Error::Api`] with the
//! server's `metav1.Status` (or, when the body is not one, the HTTP status and the body's text),
//! so the [reflector](informer_runtime::reflector) can tell 410 from 429 from the rest; a refused connection
//! becomes [`Error::ConnectionRefused`] (retried in place); other transport failures become
//! [`Error::Transport`] with their cause chain. Of an error answer's body, at most
//! [`MAX_ERROR_BODY`] bytes are read. [`ClientError`] wraps these for construction and
//! typed requests, naming the request. [`ConfigError`] (feature `http`), why a configuration
//! could not be loaded, is here too, below `config/` which returns it and the client error
//! which wraps it.

use std::error::Error as StdError;
#[cfg(feature = "http")]
use std::path::PathBuf;
use std::time::Duration;

use http::StatusCode;
use http::header::{HeaderMap, RETRY_AFTER};
use serde::Deserialize;

use super::request::PathSegmentError;
use informer_runtime::listwatch::{Error, Status};

/// `Result` with a [`ClientError`].
pub type Result<T, E = ClientError> = std::result::Result<T, E>;

/// Why a client could not be built, or why one typed request failed.
///
/// Request failures name the method and the URL path; server answers keep the API `Status`
/// ([`ClientError::status`]) so callers can act on `404 NotFound` or `409 Conflict`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The configuration could not be used when the client was built (credentials that fail
    /// later, per request, arrive as [`ClientError::Request`] with a transport error).
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    #[error("client configuration: {0}")]
    Config(#[from] ConfigError),
    /// The TLS settings could not be turned into a TLS client configuration.
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    #[error("tls configuration: {0}")]
    Tls(String),
    /// The HTTP client could not be built (for example an unusable proxy URL).
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    #[error("building the http client: {0}")]
    Http(#[source] reqwest::Error),
    /// The server answered with an error status.
    #[error("{method} {path}: {status}")]
    Api {
        /// The request's method.
        method: &'static str,
        /// The request's URL path.
        path: String,
        /// What the server said: code, reason, message, causes.
        status: Box<Status>,
    },
    /// The request failed without an answer, or the answer could not be decoded.
    #[error("{method} {path}: {source}")]
    Request {
        /// The request's method.
        method: &'static str,
        /// The request's URL path.
        path: String,
        /// The transport or decode error.
        #[source]
        source: Box<Error>,
    },
    /// A namespaced kind was asked for without a namespace.
    #[error("{resource} is namespaced: the request needs a namespace")]
    NamespaceRequired {
        /// The resource, as `plural` or `plural.group`.
        resource: String,
    },
    /// A name, namespace or subresource could not be one segment of the request's path:
    /// empty, `.`, `..`, or holding `/` or `%` (client-go refuses the same). Nothing was sent:
    /// such a value would make the request about another object, or the whole collection.
    #[error(transparent)]
    InvalidPathSegment(#[from] PathSegmentError),
    /// A list read whole ([`Client::list_all`](crate::Client::list_all)) had more objects
    /// than the caller allowed; what was read is dropped.
    #[error(
        "listing {resource}: more than {max_items} objects; raise max_items, narrow the list \
         with selectors, or walk its pages with Client::list_pages"
    )]
    ListTooLarge {
        /// The resource, as `plural` or `plural.group`.
        resource: String,
        /// The bound that was passed.
        max_items: usize,
    },
    /// A log read as text ([`Client::log_text`](crate::Client::log_text)) was longer than
    /// the caller allowed.
    #[error(
        "the log of pod {namespace}/{pod} is longer than {max_bytes} bytes; raise max_bytes, \
         ask for less (LogParams::tail_lines, limit_bytes, since_seconds), or stream it with \
         Client::logs"
    )]
    LogTooLarge {
        /// The pod's namespace.
        namespace: String,
        /// The pod.
        pod: String,
        /// The bound that was passed.
        max_bytes: usize,
    },
}

impl ClientError {
    /// The server's status, when the server answered with an error.
    #[must_use]
    pub fn status(&self) -> Option<&Status> {
        match self {
            Self::Api { status, .. } => Some(status),
            _ => None,
        }
    }

    /// The server answered `404 Not Found`.
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        self.status().is_some_and(|s| s.code == 404)
    }

    /// The server answered `409 Conflict` (a stale `resourceVersion`, or the object exists).
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        self.status().is_some_and(|s| s.code == 409)
    }

    /// The server answered `410 Expired` (or `410 Gone`): the resource version or continue
    /// token asked for is older than what the server keeps (client-go's `IsResourceExpired`,
    /// `IsGone`). A paged list cannot go on: start it again without a continue token.
    #[doc(alias = "IsResourceExpired")]
    #[must_use]
    pub fn is_resource_expired(&self) -> bool {
        self.status().is_some_and(|s| s.code == 410 || s.reason == "Expired" || s.reason == "Gone")
    }

    /// The server answered `429 TooManyRequests`: try again later, after
    /// [`retry_after`](Self::retry_after) when the server said. An eviction a
    /// `PodDisruptionBudget` forbids is answered so ([`Client::evict`](crate::Client::evict)),
    /// as is a request the server's priority and fairness turned away (client-go's
    /// `IsTooManyRequests`).
    #[doc(alias = "IsTooManyRequests")]
    #[must_use]
    pub fn is_too_many_requests(&self) -> bool {
        self.status().is_some_and(Status::is_too_many_requests)
    }

    /// How long the server asked the client to wait before trying again (its
    /// `details.retryAfterSeconds` or `Retry-After` header), when it said.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        self.status().and_then(|s| s.retry_after)
    }

    /// The error of one request, keeping a server status typed.
    pub(crate) fn request(method: &'static str, path: String, error: Error) -> Self {
        match error {
            Error::Api(status) => Self::Api { method, path, status: Box::new(status) },
            source => Self::Request { method, path, source: Box::new(source) },
        }
    }
}

/// A `metav1.Status` as the server writes it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireStatus {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    code: Option<u16>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    details: Option<JsonObject<WireDetails>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireDetails {
    /// A `null` cause is an empty one, as Go reads it.
    #[serde(default)]
    causes: Option<Vec<Option<JsonObject<WireCause>>>>,
    #[serde(default)]
    retry_after_seconds: Option<u64>,
}

/// A `T` read only from a JSON object, as Go reads a struct: serde's derive also reads a
/// struct from an array of its fields in order (`["Status",0]`), which would turn a body that
/// is no `Status` into an empty one and lose its text. An exec plugin's `ExecCredential` is
/// read the same way.
pub(super) struct JsonObject<T>(pub(super) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for JsonObject<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for ObjectVisitor<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(ObjectVisitor(std::marker::PhantomData)).map(JsonObject)
    }
}

#[derive(Deserialize)]
struct WireCause {
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// Parses a `metav1.Status` from JSON; `None` when the text is not one (it needs `kind: Status`
/// or a `code`).
pub(crate) fn parse_status(json: &[u8]) -> Option<Status> {
    let JsonObject(wire) = serde_json::from_slice::<JsonObject<WireStatus>>(json).ok()?;
    if wire.kind.as_deref() != Some("Status") && wire.code.is_none() {
        return None;
    }
    let details = wire.details.map(|JsonObject(details)| details);
    let retry_after = details.as_ref().and_then(|d| d.retry_after_seconds).map(Duration::from_secs);
    let causes = details
        .and_then(|d| d.causes)
        .unwrap_or_default()
        .into_iter()
        .map(|cause| {
            let JsonObject(c) =
                cause.unwrap_or(JsonObject(WireCause { reason: None, message: None }));
            (c.reason.unwrap_or_default(), c.message.unwrap_or_default())
        })
        .collect();
    Some(Status {
        code: wire.code.unwrap_or_default(),
        reason: wire.reason.unwrap_or_default(),
        message: wire.message.unwrap_or_default(),
        causes,
        retry_after,
    })
}

/// The most of a non-2xx body that is read, for its `Status`. A `Status` is a few hundred bytes
/// (a few KiB with many causes); the rest of a larger body is left unread, so an error page of
/// any size, or one that never ends, costs at most this much. A constant, not a setting: no
/// server needs more to say why it failed.
pub(crate) const MAX_ERROR_BODY: usize = 64 * 1024;

/// The longest body text quoted in an error built from a non-`Status` body.
pub(crate) const MAX_BODY_IN_MESSAGE: usize = 1024;

/// The error for a non-2xx answer: the body's `Status`, else the HTTP status and the body text.
/// A `Retry-After` header (seconds form) sets [`Status::retry_after`].
pub(crate) fn status_from_response(code: StatusCode, headers: &HeaderMap, body: &[u8]) -> Status {
    let mut status = parse_status(body).unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        let message = if text.is_empty() {
            code.canonical_reason().unwrap_or("unknown error").to_owned()
        } else {
            truncate(text, MAX_BODY_IN_MESSAGE)
        };
        Status::new(code.as_u16(), reason_for_code(code.as_u16()), message)
    });
    if status.code == 0 {
        status.code = code.as_u16();
    }
    if status.reason.is_empty() {
        reason_for_code(status.code).clone_into(&mut status.reason);
    }
    if let Some(after) = retry_after(headers) {
        status.retry_after = Some(after);
    }
    status
}

/// The `Retry-After` header in its seconds form.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?;
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// The reason client-go's `StatusReasonForCode` gives a bare HTTP status.
fn reason_for_code(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Gone",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// A transport failure: [`Error::ConnectionRefused`] when the connection was refused, else
/// [`Error::Transport`]; both carry the whole cause chain.
pub(crate) fn transport_error(error: &(dyn StdError + 'static)) -> Error {
    let message = cause_chain(error);
    if io_kind_in_chain(error, std::io::ErrorKind::ConnectionRefused) {
        Error::ConnectionRefused(message)
    } else {
        Error::Transport(message)
    }
}

/// Whether an `io::Error` of `kind` is in the chain of `error`.
pub(crate) fn io_kind_in_chain(error: &(dyn StdError + 'static), kind: std::io::ErrorKind) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == kind) {
            return true;
        }
        next = e.source();
    }
    false
}

/// `error: cause: cause ...`, skipping causes whose text the previous one already contains.
pub(crate) fn cause_chain(error: &(dyn StdError + 'static)) -> String {
    let mut message = error.to_string();
    let mut previous = message.clone();
    let mut next = error.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !previous.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        previous = text;
        next = cause.source();
    }
    message
}

/// `serde_json`'s message without its `at line L column C` suffix (callers give a better place).
pub(crate) fn json_error_message(error: &serde_json::Error) -> String {
    let mut text = error.to_string();
    if error.line() != 0
        && let Some(at) = text.rfind(" at line ")
    {
        text.truncate(at);
    }
    text
}

/// The byte offset of `serde_json`'s `line`/`column` position in `text`.
pub(crate) fn byte_offset(text: &[u8], error: &serde_json::Error) -> usize {
    let line_start = if error.line() <= 1 {
        0
    } else {
        text.iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .nth(error.line() - 2)
            .map_or(text.len(), |(i, _)| i + 1)
    };
    (line_start + error.column().saturating_sub(1)).min(text.len())
}

/// A decode error for a response body of `resource`, with the byte offset of the fault.
pub(crate) fn decode_error(
    resource: &str,
    what: &str,
    body: &[u8],
    error: &serde_json::Error,
) -> Error {
    Error::Decode(format!(
        "{resource} {what}: {} (byte {} of {})",
        json_error_message(error),
        byte_offset(body, error),
        body.len()
    ))
}

/// Why a configuration could not be loaded, or credentials could not be obtained.
///
/// Messages name the file and the field at fault. None of them contains a token, a password or a
/// private key. Loading errors are not retryable (fix the file); exec plugin errors may be
/// (a plugin that failed is run again on the next request).
#[cfg(feature = "http")]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A kubeconfig file is not YAML, or not shaped like a kubeconfig.
    #[error("{}: {reason}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The YAML error, starting with the field path, for example
        /// `clusters[0].cluster.server: invalid type: sequence, expected a string at line 7 column 13`.
        reason: String,
    },
    /// A field is missing or has an unusable value.
    #[error("{}: {field}: {reason}", file.display())]
    InvalidField {
        /// The file the field was read from (empty for environment variables).
        file: PathBuf,
        /// The path of the field, for example `users[2].user.client-key-data`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No kubeconfig file exists, and the process is not running in a cluster.
    #[error("no kubeconfig found (tried {}) and not running in a cluster", display_paths(tried))]
    NoConfig {
        /// The kubeconfig files looked for.
        tried: Vec<PathBuf>,
    },
    /// Neither `current-context` nor a context override says which context to use.
    #[error(
        "no context chosen: {} set no current-context and none was requested",
        display_paths(files)
    )]
    NoCurrentContext {
        /// The kubeconfig files read.
        files: Vec<PathBuf>,
    },
    /// A context or cluster named in the kubeconfig or the options does not exist.
    #[error("{kind} `{name}` not found in {}", display_paths(files))]
    NotFound {
        /// `context` or `cluster`.
        kind: &'static str,
        /// The name looked for.
        name: String,
        /// The kubeconfig files read.
        files: Vec<PathBuf>,
    },
    /// A user relies on a legacy `auth-provider` (gcp, azure, oidc), which client-go removed.
    #[error(
        "{}: {field}: the `{name}` auth provider is no longer supported; configure an exec credential plugin (user.exec) instead{}",
        file.display(),
        auth_provider_replacement(name)
    )]
    AuthProvider {
        /// The kubeconfig file.
        file: PathBuf,
        /// The field path, for example `users[0].user.auth-provider`.
        field: String,
        /// The provider's name.
        name: String,
    },
    /// `KUBERNETES_SERVICE_HOST` or `KUBERNETES_SERVICE_PORT` is unset: this process does not
    /// run in a pod.
    #[error(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set"
    )]
    NotInCluster,
    /// A token or password cannot be sent in an HTTP header.
    #[error("the {what} contains characters that cannot be sent in an HTTP header")]
    InvalidHeader {
        /// What it is (`bearer token`, `basic auth credentials`...).
        what: &'static str,
    },
    /// An exec credential plugin is not installed.
    #[error("exec credential plugin `{command}` not found{}", install_hint.as_deref().map(|hint| format!("\n\n{hint}")).unwrap_or_default())]
    ExecNotFound {
        /// The plugin command.
        command: String,
        /// The kubeconfig's `installHint`.
        install_hint: Option<String>,
    },
    /// A setting of a kube-rs `kube::Config` that this crate's client cannot honour (feature
    /// `kube`). The message says what to do: usually, to use the `kube::Client` itself as the
    /// informers' source (`SharedInformerFactory::new(Client::from(kube_client))`), whose own stack honours it.
    #[cfg(feature = "kube")]
    #[error("kube::Config {field}: {reason}")]
    KubeConfig {
        /// The field, for example `auth_info.impersonate`.
        field: &'static str,
        /// Why it cannot be honoured, and what to do instead.
        reason: String,
    },
    /// An exec credential plugin failed or returned something unusable.
    #[error("exec credential plugin `{command}`: {reason}")]
    Exec {
        /// The plugin command.
        command: String,
        /// What went wrong, with the plugin's stderr (truncated) when it failed. Never the
        /// credential itself.
        reason: String,
    },
}

#[cfg(feature = "http")]
fn display_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "no files".to_owned();
    }
    paths.iter().map(|path| path.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// The exec plugin that replaces a legacy auth provider, as a suffix for the error message.
#[cfg(feature = "http")]
fn auth_provider_replacement(name: &str) -> &'static str {
    match name {
        "gcp" => " such as gke-gcloud-auth-plugin",
        "azure" => " such as kubelogin",
        "oidc" => " such as kubelogin (kubectl oidc-login)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::HeaderValue;

    #[test]
    fn status_body_becomes_typed_status() {
        let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"too old resource version: 1 (5)","reason":"Expired","code":410}"#;
        let status = status_from_response(StatusCode::GONE, &HeaderMap::new(), body);
        assert_eq!(status, Status::expired("too old resource version: 1 (5)"));
        assert!(Error::Api(status).is_expired());
    }

    #[test]
    fn status_causes_and_retry_after_seconds() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Too large resource version: 9, current: 5",
            "reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}"#;
        let status = status_from_response(StatusCode::GATEWAY_TIMEOUT, &HeaderMap::new(), body);
        assert_eq!(status.code, 504);
        assert_eq!(
            status.causes,
            vec![("ResourceVersionTooLarge".to_owned(), "Too large resource version".to_owned())]
        );
        assert_eq!(status.retry_after, Some(Duration::from_secs(1)));
        assert!(Error::Api(status).is_resource_version_too_large());
    }

    #[test]
    fn retry_after_header_wins_over_details() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        let body = br#"{"kind":"Status","code":429,"reason":"TooManyRequests","message":"slow down","details":{"retryAfterSeconds":1}}"#;
        let error = Error::Api(status_from_response(StatusCode::TOO_MANY_REQUESTS, &headers, body));
        assert!(error.is_too_many_requests());
        assert!(error.is_watch_retriable());
        assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
    }

    #[test]
    fn retry_after_http_date_form_is_ignored() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        let status = status_from_response(StatusCode::TOO_MANY_REQUESTS, &headers, b"");
        assert_eq!(status.retry_after, None);
        assert_eq!(status.reason, "TooManyRequests");
    }

    #[test]
    fn non_status_body_falls_back_to_http_status_and_text() {
        let status = status_from_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &HeaderMap::new(),
            b"upstream connect error\n",
        );
        assert_eq!(status, Status::new(500, "InternalError", "upstream connect error"));
        let status = status_from_response(StatusCode::FORBIDDEN, &HeaderMap::new(), b"");
        assert_eq!(status, Status::new(403, "Forbidden", "Forbidden"));
        let status = status_from_response(StatusCode::GONE, &HeaderMap::new(), b"{\"a\":1}");
        assert!(Error::Api(status).is_expired());
    }

    #[test]
    fn forbidden_keeps_the_servers_message() {
        let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\"","reason":"Forbidden","details":{"kind":"pods"},"code":403}"#;
        let status = status_from_response(StatusCode::FORBIDDEN, &HeaderMap::new(), body);
        assert_eq!(status.code, 403);
        assert!(status.message.starts_with("pods is forbidden: User \"system:anonymous\""));
    }

    #[test]
    fn status_without_code_takes_the_http_code() {
        let body = br#"{"kind":"Status","message":"boom"}"#;
        let status = status_from_response(StatusCode::SERVICE_UNAVAILABLE, &HeaderMap::new(), body);
        assert_eq!(status, Status::new(503, "ServiceUnavailable", "boom"));
    }

    #[test]
    fn long_bodies_are_truncated_on_a_char_boundary() {
        let body = "é".repeat(MAX_BODY_IN_MESSAGE);
        let status =
            status_from_response(StatusCode::BAD_GATEWAY, &HeaderMap::new(), body.as_bytes());
        assert!(status.message.len() <= MAX_BODY_IN_MESSAGE + '…'.len_utf8());
        assert!(status.message.ends_with('…'));
        assert_eq!(status.reason, "Unknown");
    }

    /// Fuzz target `status_error`, seed 0x93ebe27a0000105c: serde's derive reads a struct from
    /// an array of its fields in order, which Go does not; the body's text was lost.
    #[test]
    fn an_array_of_status_fields_is_no_status() {
        let body = br#"["Status",0]"#;
        assert_eq!(parse_status(body), None);
        let status = status_from_response(StatusCode::BAD_GATEWAY, &HeaderMap::new(), body);
        assert_eq!(status, Status::new(502, "Unknown", r#"["Status",0]"#));
        let nested = br#"{"kind":"Status","code":500,"details":[["a"]]}"#;
        assert_eq!(parse_status(nested), None, "details as an array");
    }

    /// As Go reads a `metav1.Status`: a `null` cause is an empty one, not a body that is no
    /// `Status`.
    #[test]
    fn a_null_cause_is_an_empty_cause() {
        let body = br#"{"kind":"Status","code":500,"message":"m","details":{"causes":[null,{"reason":"R","message":null}]}}"#;
        let status = parse_status(body).expect("a Status");
        assert_eq!(
            status.causes,
            [(String::new(), String::new()), ("R".to_owned(), String::new())]
        );
    }

    #[test]
    fn parse_status_rejects_other_objects() {
        assert_eq!(parse_status(br#"{"kind":"Pod","apiVersion":"v1"}"#), None);
        assert_eq!(parse_status(b"not json"), None);
        assert!(parse_status(br#"{"code":500}"#).is_some());
    }

    #[test]
    fn client_error_keeps_status_and_names_the_request() {
        let error = ClientError::request(
            "GET",
            "/api/v1/namespaces/default/pods/web".to_owned(),
            Error::Api(Status::new(404, "NotFound", "pods \"web\" not found")),
        );
        assert!(error.is_not_found());
        assert!(!error.is_conflict());
        assert_eq!(
            error.to_string(),
            "GET /api/v1/namespaces/default/pods/web: 404 NotFound: pods \"web\" not found"
        );
        let error =
            ClientError::request("PUT", "/x".to_owned(), Error::Transport("reset".to_owned()));
        assert_eq!(error.status(), None);
        assert_eq!(
            StdError::source(&error).map(ToString::to_string).as_deref(),
            Some("transport error: reset")
        );
    }

    #[test]
    fn byte_offset_counts_lines() {
        let text = b"{\n  \"a\": [1,\n  2,, 3]\n}";
        let error = serde_json::from_slice::<serde_json::Value>(text).unwrap_err();
        assert_eq!(error.line(), 3);
        let offset = byte_offset(text, &error);
        assert_eq!((offset, text[offset]), (17, b','));
        assert!(!json_error_message(&error).contains("at line"));
    }

    #[test]
    fn cause_chain_skips_repeated_text() {
        #[derive(Debug, thiserror::Error)]
        #[error("connect failed")]
        struct Outer(#[source] std::io::Error);
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let outer = Outer(io);
        assert_eq!(cause_chain(&outer), "connect failed: refused");
        assert!(io_kind_in_chain(&outer, std::io::ErrorKind::ConnectionRefused));
        assert!(!io_kind_in_chain(&outer, std::io::ErrorKind::UnexpectedEof));
    }
}
