//! One request's answer: the health paths, or a webhook's review read within the body limit
//! and answered within the deadline.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use tokio::time::Instant;

use super::shared::Inner;
use crate::handler::{Answer, Envelope, Outcome, Webhook, uid_in_prefix};
use crate::status::panic_message;

/// The paths the server answers itself.
pub(super) const OWN_PATHS: [&str; 3] = ["/healthz", "/livez", "/readyz"];

impl Inner {
    /// The answer to `request`.
    pub(super) async fn answer(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path();
        if OWN_PATHS.contains(&path) {
            return match (path, self.certificates.is_loaded()) {
                ("/readyz", false) => {
                    text(StatusCode::SERVICE_UNAVAILABLE, "no serving certificate is loaded yet")
                }
                _ => text(StatusCode::OK, "ok"),
            };
        }
        let Some((path, webhook)) = self.webhooks.get_key_value(path) else {
            return text(StatusCode::NOT_FOUND, "no webhook on this path");
        };
        if request.method() != Method::POST {
            let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "a webhook answers POST");
            response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
            return response;
        }
        let path = Arc::clone(path);
        let started = Instant::now();
        let _in_flight = self.observer.started(&path);
        let answer = self.review(&path, webhook.as_ref(), request, started).await;
        let took = started.elapsed();
        tracing::debug!(webhook = %path, outcome = answer.outcome.as_str(), ?took, "answered");
        self.observer.answered(&path, answer.outcome, took);
        let timed_out = answer.outcome == Outcome::Timeout;
        let mut response = Response::new(Full::new(answer.body));
        if timed_out {
            // A failed call, not a denial: kube-apiserver lets the webhook's `failurePolicy`
            // decide, as when its own deadline passes first (`Ignore` admits). The denied
            // review stays in the body for a caller that reads it.
            *response.status_mut() = StatusCode::GATEWAY_TIMEOUT;
        }
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }

    /// Reads, decodes and answers a review within its deadline.
    async fn review(
        &self,
        path: &Arc<str>,
        webhook: &dyn Webhook,
        request: Request<Incoming>,
        started: Instant,
    ) -> Answer {
        let limits = self.limits;
        let timeout = request
            .uri()
            .query()
            .and_then(|q| q.split('&').find_map(|pair| pair.strip_prefix("timeout=")))
            .and_then(go_duration)
            .map_or(limits.request_timeout, |asked| asked.min(limits.request_timeout));
        let deadline = started + timeout;
        let fail = |envelope: &Envelope, outcome, code, message: String| {
            tracing::warn!(webhook = %path, uid = %envelope.uid, "{message}");
            webhook.failure(envelope, outcome, code, format!("webhook {path}: {message}"))
        };

        let content_type =
            request.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
        let json = content_type
            .and_then(|t| t.split(';').next())
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            let message = format!("content type {content_type:?}: a review is application/json");
            return fail(&Envelope::default(), Outcome::Invalid, 415, message);
        }

        let body = match tokio::time::timeout_at(
            deadline,
            read(request.into_body(), limits.max_body_bytes),
        )
        .await
        {
            Ok(Ok(body)) => body,
            Ok(Err(Read::TooLarge(start))) => {
                let envelope = Envelope { api_version: None, uid: uid_in_prefix(&start) };
                let message =
                    format!("the request body is larger than {} bytes", limits.max_body_bytes);
                return fail(&envelope, Outcome::TooLarge, 413, message);
            }
            Ok(Err(Read::Failed(error))) => {
                return fail(
                    &Envelope::default(),
                    Outcome::Invalid,
                    400,
                    format!("reading the body: {error}"),
                );
            }
            Err(_) => {
                let message = format!("the request body did not arrive within {timeout:?}");
                return fail(&Envelope::default(), Outcome::Timeout, 504, message);
            }
        };

        // A type's `Deserialize` is the user's code too.
        let decoded = std::panic::catch_unwind(AssertUnwindSafe(|| webhook.decode(path, &body)));
        let (envelope, call) = match decoded {
            Ok(Ok(call)) => call,
            Ok(Err(answer)) => {
                tracing::warn!(webhook = %path, "a review that does not decode was denied");
                return answer;
            }
            Err(panic) => {
                let message =
                    format!("decoding the review panicked: {}", panic_message(panic.as_ref()));
                return fail(
                    &Envelope { api_version: None, uid: uid_in_prefix(&body) },
                    Outcome::Panic,
                    500,
                    message,
                );
            }
        };
        if let Ok(answer) = tokio::time::timeout_at(deadline, call).await {
            return answer;
        }
        let message = format!("the handler did not answer within {timeout:?}");
        fail(&envelope, Outcome::Timeout, 504, message)
    }
}

/// Why a body was not read whole.
enum Read {
    /// It is larger than the limit: its start, up to the limit.
    TooLarge(Bytes),
    Failed(hyper::Error),
}

/// How much of a body over the limit is read and dropped before the answer: a connection
/// closed with unread data is reset, and the reset can destroy the answer on its way to the
/// client. Go's `http.Server` reads up to the same 256 KiB after a handler.
const DRAIN_BYTES: usize = 256 * 1024;

/// The body, at most `limit` bytes.
async fn read(mut body: Incoming, limit: usize) -> Result<Bytes, Read> {
    let mut bytes = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(Read::Failed)?.into_data() else { continue };
        if bytes.len() + data.len() > limit {
            let room = limit - bytes.len();
            bytes.extend_from_slice(&data[..room]);
            let mut drained = data.len() - room;
            while drained < DRAIN_BYTES {
                match body.frame().await {
                    Some(Ok(frame)) => drained += frame.data_ref().map_or(0, Bytes::len),
                    Some(Err(_)) | None => break,
                }
            }
            return Err(Read::TooLarge(bytes.freeze()));
        }
        bytes.extend_from_slice(&data);
    }
    Ok(bytes.freeze())
}

fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

/// A duration as Go's `time.Duration.String` writes it (`10s`, `1m30s`, `1.5s`, `500ms`), as
/// client-go's `rest.Request` puts it in `?timeout=`; `None` for anything else.
fn go_duration(text: &str) -> Option<Duration> {
    const UNITS: [(&str, f64); 7] = [
        ("ns", 1e-9),
        ("us", 1e-6),
        ("µs", 1e-6),
        ("ms", 1e-3),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
    ];
    // `%C2%B5` is `µ` as a query escapes it.
    let text = text.replace("%C2%B5", "µ");
    let mut rest = text.as_str();
    let mut seconds = 0.0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end =
            rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        // The longest unit that matches: `ms` before `m`.
        let (unit, scale) = UNITS
            .iter()
            .filter(|(unit, _)| rest.starts_with(unit))
            .max_by_key(|(unit, _)| unit.len())?;
        seconds += number * scale;
        rest = &rest[unit.len()..];
    }
    Duration::try_from_secs_f64(seconds).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_as_client_go_writes_them() {
        assert_eq!(go_duration("10s"), Some(Duration::from_secs(10)));
        assert_eq!(go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(go_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(go_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(go_duration("250%C2%B5s"), Some(Duration::from_micros(250)));
        assert_eq!(go_duration("1h0m0s"), Some(Duration::from_secs(3600)));
        assert_eq!(go_duration(""), None);
        assert_eq!(go_duration("10"), None);
        assert_eq!(go_duration("ten seconds"), None);
    }
}
