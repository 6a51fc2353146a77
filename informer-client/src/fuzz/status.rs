//! `status_error`: the error of a non-2xx answer ([`status_from_response`], with
//! [`parse_status`] underneath, which the watch decoder shares for `ERROR` events), on `Status`
//! bodies as kube-apiserver writes them (conflicts, expired versions, throttling with causes
//! and `retryAfterSeconds`, forbidden), mutated, re-laid out, or replaced by random bytes or
//! text (an HTML error page of a proxy), with any HTTP status and `Retry-After` header.
//!
//! Properties:
//! - a body that is a JSON object is read as a `metav1.Status` exactly when Go's
//!   `encoding/json` would read it into one (its known fields of their type, or `null`, which Go
//!   reads as the zero value; a cause that is `null` is an empty cause) and it says
//!   `kind: Status` or has a `code`: the error then carries its code (else the HTTP status's),
//!   reason (else the one client-go gives the code), message and causes. Where we are stricter
//!   than Go, on purpose: a `code` outside `0..=65535` or a negative `retryAfterSeconds` (no
//!   server sends either) make the body not a `Status`;
//! - any other body gives the HTTP status, client-go's reason for it, and the body's text
//!   (trimmed, at most [`MAX_BODY_IN_MESSAGE`] bytes and an ellipsis) or the status's name;
//! - a `Retry-After` header in seconds sets the delay, whatever the body says; one in another
//!   form leaves the body's;
//! - the reason is never empty, and the code is never 0.

use std::time::Duration;

use fastrand::Rng;
use http::StatusCode;
use http::header::{HeaderMap, HeaderValue, RETRY_AFTER};
use informer_fuzz::json::{self, Layout};
use informer_fuzz::{Unstructured, arbitrary, bytes};
use serde_json::{Value, json};

use crate::parsers::{MAX_BODY_IN_MESSAGE, parse_status, status_from_response};
use informer_runtime::listwatch::Status;

/// `Status` bodies as kube-apiserver writes them.
fn seeds() -> Vec<Value> {
    vec![
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"Operation cannot be fulfilled on pods \"web\": the object has been modified; please apply your changes to the latest version and try again",
            "reason":"Conflict","details":{"name":"web","kind":"pods"},"code":409}),
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"too old resource version: 1 (5)","reason":"Expired","code":410}),
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"Too large resource version: 9, current: 5","reason":"Timeout",
            "details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],
                "retryAfterSeconds":1},"code":504}),
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"the server has received too many requests and has asked us to try again later",
            "reason":"TooManyRequests","details":{"causes":[{"reason":"UnexpectedServerResponse","message":"unknown"}],
                "retryAfterSeconds":3},"code":429}),
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\" in API group \"\" at the cluster scope",
            "reason":"Forbidden","details":{"kind":"pods"},"code":403}),
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"Pod \"web\" is invalid: spec.containers[0].image: Required value",
            "reason":"Invalid","details":{"name":"web","kind":"Pod","causes":[
                {"reason":"FieldValueRequired","message":"Required value","field":"spec.containers[0].image"},
                {"reason":"FieldValueInvalid","message":"Invalid value","field":"metadata.name"}]},"code":422}),
        json!({"kind":"Status","message":"boom"}),
        json!({"code":500,"message":"upstream failed"}),
    ]
}

/// Bodies that are not a `Status`: what proxies and load balancers answer.
const TEXTS: &[&str] = &[
    "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>\r\n",
    "upstream connect error or disconnect/reset before headers. reset reason: connection failure",
    "404 page not found\n",
    "",
    "  \n\t ",
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}",
];

/// HTTP statuses of error answers, and odd ones.
const CODES: &[u16] = &[400, 401, 403, 404, 405, 409, 410, 413, 422, 429, 500, 502, 503, 504, 599];

/// `Retry-After` values: seconds, with spaces, the date form, and what is neither.
const RETRY_AFTER_VALUES: &[&str] = &[
    "5",
    " 7 ",
    "0",
    "-1",
    "1.5",
    "18446744073709551615",
    "18446744073709551616",
    "Wed, 21 Oct 2015 07:28:00 GMT",
    "",
];

/// A body, and whether it is exactly the JSON of a value (no repeated member, no byte
/// changed), which the reference below can read the way Go does.
fn body(u: &mut Unstructured<'_>, rng: &mut Rng) -> arbitrary::Result<(Vec<u8>, bool)> {
    let mode = u.int_in_range(0..=5)?;
    let seeds = seeds();
    match mode {
        0 => return Ok((u.bytes(u.len())?.to_vec(), false)),
        1 => {
            let mut text = TEXTS[rng.usize(0..TEXTS.len())].as_bytes().to_vec();
            let ops = rng.usize(0..=3);
            bytes::mutate(rng, &mut text, &[], bytes::INVALID_UTF8, ops);
            if rng.bool() {
                // Longer than what a message quotes.
                let times = rng.usize(1..=40);
                text = text.repeat(times);
            }
            return Ok((text, false));
        }
        _ => {}
    }
    let mut value = seeds[rng.usize(0..seeds.len())].clone();
    if mode >= 3 {
        let ops = rng.usize(1..=4);
        json::mutate(rng, &mut value, &seeds, ops);
    }
    let duplicates = mode >= 4 && rng.bool();
    let layout = Layout { newlines: true, duplicates, reorder: true };
    let mut body = Vec::new();
    json::write(rng, &value, layout, &mut body);
    if mode == 5 {
        let raw: Vec<Vec<u8>> = seeds.iter().map(|s| s.to_string().into_bytes()).collect();
        let raw: Vec<&[u8]> = raw.iter().map(Vec::as_slice).collect();
        let ops = rng.usize(1..=4);
        bytes::mutate(rng, &mut body, &raw, bytes::JSON_TOKENS, ops);
        return Ok((body, false));
    }
    Ok((body, !duplicates))
}

/// A string member as Go reads it (absent or `null`: empty); `None` if it is not a string.
fn go_string(object: &serde_json::Map<String, Value>, key: &str) -> Option<String> {
    match object.get(key) {
        None | Some(Value::Null) => Some(String::new()),
        Some(Value::String(text)) => Some(text.clone()),
        Some(_) => None,
    }
}

/// The `Status` in `value` as Go's `encoding/json` reads a `metav1.Status` (within the ranges
/// the module documentation gives), if it is one; `None` when Go would fail to read it or it is
/// no `Status`.
fn reference(value: &Value) -> Option<Status> {
    let object = value.as_object()?;
    let kind = go_string(object, "kind")?;
    let code = match object.get("code") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(u16::try_from(n.as_u64()?).ok()?),
        Some(_) => return None,
    };
    let reason = go_string(object, "reason")?;
    let message = go_string(object, "message")?;
    let mut causes = Vec::new();
    let mut retry_after = None;
    match object.get("details") {
        None | Some(Value::Null) => {}
        Some(Value::Object(details)) => {
            match details.get("causes") {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) => {
                    for item in items {
                        causes.push(match item {
                            Value::Null => (String::new(), String::new()),
                            Value::Object(cause) => {
                                (go_string(cause, "reason")?, go_string(cause, "message")?)
                            }
                            _ => return None,
                        });
                    }
                }
                Some(_) => return None,
            }
            retry_after = match details.get("retryAfterSeconds") {
                None | Some(Value::Null) => None,
                Some(Value::Number(n)) => Some(Duration::from_secs(n.as_u64()?)),
                Some(_) => return None,
            };
        }
        Some(_) => return None,
    }
    if kind != "Status" && code.is_none() {
        return None;
    }
    Some(Status { code: code.unwrap_or_default(), reason, message, causes, retry_after })
}

pub(super) fn property(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut rng = Rng::with_seed(u.arbitrary()?);
    let (body, exact) = body(u, &mut rng)?;
    let code =
        if rng.u8(0..4) == 0 { rng.u16(100..=999) } else { CODES[rng.usize(0..CODES.len())] };
    let code = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut headers = HeaderMap::new();
    let header =
        (rng.u8(0..3) == 0).then(|| RETRY_AFTER_VALUES[rng.usize(0..RETRY_AFTER_VALUES.len())]);
    if let Some(value) = header {
        headers.insert(RETRY_AFTER, HeaderValue::from_static(value));
    }
    informer_fuzz::note("body", &body);
    check(code, header, &headers, &body, exact);
    Ok(())
}

/// The properties, for one answer.
pub(super) fn check(
    code: StatusCode,
    header: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
    exact: bool,
) {
    let parsed = parse_status(body);
    // A value's JSON that `Value` cannot read was cut off (past 4 MiB), or nests deeper than its
    // limit of 128 (Go's is 10,000, and members not read here are skipped at any depth): no
    // claim then.
    if exact && let Ok(value) = serde_json::from_slice::<Value>(body) {
        let expected = reference(&value);
        assert_eq!(parsed, expected, "the body is read other than Go reads a metav1.Status");
    }
    let status = status_from_response(code, headers, body);
    assert!(!status.reason.is_empty(), "an empty reason: {status:?}");
    assert_ne!(status.code, 0, "code 0: {status:?}");
    let header_delay = header.and_then(|h| h.trim().parse::<u64>().ok()).map(Duration::from_secs);
    if let Some(parsed) = &parsed {
        let expected_code = if parsed.code == 0 { code.as_u16() } else { parsed.code };
        assert_eq!(status.code, expected_code, "the code");
        if !parsed.reason.is_empty() {
            assert_eq!(status.reason, parsed.reason, "the reason");
        }
        assert_eq!(status.message, parsed.message, "the message");
        assert_eq!(status.causes, parsed.causes, "the causes");
        assert_eq!(status.retry_after, header_delay.or(parsed.retry_after), "the delay");
    } else {
        assert_eq!(status.code, code.as_u16(), "the code of a body that is no Status");
        assert!(status.causes.is_empty(), "causes of a body that is no Status");
        assert_eq!(status.retry_after, header_delay, "the delay of a body that is no Status");
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        if text.is_empty() {
            assert!(!status.message.is_empty(), "an empty message for an empty body");
        } else if text.len() <= MAX_BODY_IN_MESSAGE {
            assert_eq!(status.message, text, "the message of a short body");
        } else {
            let quoted = status
                .message
                .strip_suffix('…')
                .unwrap_or_else(|| panic!("a long body's message does not end in an ellipsis"));
            assert!(quoted.len() <= MAX_BODY_IN_MESSAGE, "{} bytes quoted", quoted.len());
            assert!(quoted.len() + 4 > MAX_BODY_IN_MESSAGE, "{} bytes quoted", quoted.len());
            assert!(text.starts_with(quoted), "the message is not the body's start");
        }
    }
}
