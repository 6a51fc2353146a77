//! `pods/{name}/log`, and the text it serves: the embedded server's stand-in for the kubelet.
//!
//! kube-apiserver has no logs of its own: it checks the request (the pod exists, the container
//! is one of its containers, the options are valid) and then streams what the kubelet of the
//! pod's node answers. This server has no kubelet, so a test supplies each container's output
//! through [`ServerHandle::append_pod_log`](crate::ServerHandle::append_pod_log), and the
//! server answers as a kubelet would:
//!
//! - `tailLines=N`: the last `N` lines; `sinceSeconds=S`: the lines appended in the last `S`
//!   seconds; `timestamps=true`: each line after the time it was appended (RFC 3339, in
//!   nanoseconds) and a space; `limitBytes=N`: at most `N` bytes, cut wherever they end
//!   (inside a line too).
//! - `follow=true`: after what is there, the text appended later, as it is appended, until
//!   the pod is deleted, `limitBytes` is reached, the client goes or the server stops.
//! - `previous=true`: there is no earlier run of a container here, so the kubelet's
//!   `previous terminated container "c" in pod "p" not found` (400).
//!
//! The checks before are kube-apiserver's own (`pod.LogLocation`, `ValidatePodLogOptions`):
//! 404 for a missing pod; 400 `container c is not valid for pod p`; 400 `a container name
//! must be specified for pod p, choose one of: [a b]` when the pod has several containers and
//! none is named; 422 for a negative `tailLines` or a `limitBytes` or `sinceSeconds` below 1.
//! Unlike kube-apiserver, which answers an empty log for a pod not bound to a node, this server
//! serves the text whether or not the pod has a `spec.nodeName` (it has no scheduler).
//!
//! Logs belong to the pod by its UID: a pod created again under the same name starts empty.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use crate::kubelet_logs::{Line, LogKey, PodLogs};
use crate::query::Query;
use crate::registry::{self, Scope};
use crate::state::{Shared, State};
use crate::status::ApiError;
use crate::storage::meta_str;

/// The most one chunk of a log response holds: a long log goes out in pieces, never copied
/// whole out of the server's state.
const CHUNK: usize = 32 * 1024;

/// How often a follow that has nothing to send looks whether its pod is still there.
const FOLLOW_CHECK: Duration = Duration::from_millis(100);

/// Appends `text` to the log of `container` in `pod`.
///
/// # Errors
///
/// 404 for a missing pod, 400 for a container the pod does not have.
pub(crate) fn append(
    state: &mut State,
    pods: Scope<'_>,
    pod: &str,
    container: &str,
    text: &str,
) -> Result<(), ApiError> {
    let obj = registry::get(state, pods, pod, "")?;
    if !container_names(&obj).iter().any(|c| c == container) {
        return Err(ApiError::bad_request(format!(
            "container {container} is not valid for pod {pod}"
        )));
    }
    let key = key(&obj, container);
    let lines = state.logs.logs.entry(key).or_default();
    let at = now_nanos();
    for piece in text.split_inclusive('\n') {
        let (body, complete) = match piece.strip_suffix('\n') {
            Some(body) => (body, true),
            None => (piece, false),
        };
        match lines.last_mut() {
            Some(last) if !last.complete => {
                last.text.push_str(body);
                last.complete = complete;
            }
            _ => lines.push(Line { at, text: body.to_owned(), complete }),
        }
    }
    state.logs.appended.notify_waiters();
    Ok(())
}

fn key(pod: &Value, container: &str) -> LogKey {
    LogKey {
        namespace: meta_str(pod, "namespace").to_owned(),
        pod: meta_str(pod, "name").to_owned(),
        uid: meta_str(pod, "uid").to_owned(),
        container: container.to_owned(),
    }
}

fn now_nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// The names of a pod's containers, init containers and ephemeral containers, by kind.
fn names_in(pod: &Value, field: &str) -> Vec<String> {
    let list = pod.pointer(&format!("/spec/{field}")).and_then(Value::as_array);
    list.into_iter().flatten().map(|c| meta_like_name(c).to_owned()).collect()
}

fn meta_like_name(container: &Value) -> &str {
    container.get("name").and_then(Value::as_str).unwrap_or_default()
}

fn container_names(pod: &Value) -> Vec<String> {
    let mut names = names_in(pod, "containers");
    names.extend(names_in(pod, "initContainers"));
    names.extend(names_in(pod, "ephemeralContainers"));
    names
}

/// The options of one log request, validated.
struct Options {
    container: String,
    follow: bool,
    since: Option<u128>,
    tail: Option<usize>,
    timestamps: bool,
    limit: Option<u64>,
}

/// `GET pods/{name}/log`: see the [module documentation](self).
pub(crate) fn serve(
    shared: &Arc<Shared>,
    pods: Scope<'_>,
    name: &str,
    query: &Query,
) -> Result<Response, ApiError> {
    let (options, key, start) = {
        let state = shared.state.lock();
        let pod = registry::get(&state, pods, name, "")?;
        let options = options(query, &pod, name)?;
        let key = key(&pod, &options.container);
        let start = start_of(&state.logs, &key, &options);
        (options, key, start)
    };
    let stream = LogStream {
        shared: Arc::clone(shared),
        pods_storage: pods.resource.storage.clone(),
        key,
        cursor: start,
        timestamps: options.timestamps,
        remaining: options.limit,
        follow: options.follow,
        done: false,
    };
    let body = Body::from_stream(futures::stream::unfold(stream, LogStream::next));
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(response)
}

/// Reads and checks the query, and picks the container.
fn options(query: &Query, pod: &Value, name: &str) -> Result<Options, ApiError> {
    let tail = query.int("tailLines")?;
    let limit = query.int("limitBytes")?;
    let since = query.int("sinceSeconds")?;
    let mut errors = Vec::new();
    if let Some(n) = tail.filter(|&n| n < 0) {
        let why = format!("Invalid value: {n}: must be greater than or equal to 0");
        errors.push(("tailLines", "FieldValueInvalid", why));
    }
    if let Some(n) = limit.filter(|&n| n < 1) {
        errors.push((
            "limitBytes",
            "FieldValueInvalid",
            format!("Invalid value: {n}: must be greater than 0"),
        ));
    }
    if let Some(n) = since.filter(|&n| n < 1) {
        errors.push((
            "sinceSeconds",
            "FieldValueInvalid",
            format!("Invalid value: {n}: must be greater than 0"),
        ));
    }
    if since.is_some() && query.get("sinceTime").is_some_and(|t| !t.is_empty()) {
        let why = "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified";
        errors.push(("", "FieldValueForbidden", why.to_owned()));
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid("PodLogOptions", "", name, &errors));
    }
    let container = match query.get("container").filter(|c| !c.is_empty()) {
        Some(container) if container_names(pod).iter().any(|c| c == container) => {
            container.to_owned()
        }
        Some(container) => {
            return Err(ApiError::bad_request(format!(
                "container {container} is not valid for pod {name}"
            )));
        }
        None => {
            let containers = names_in(pod, "containers");
            match containers.as_slice() {
                [only] => only.clone(),
                [] => {
                    return Err(ApiError::bad_request(format!(
                        "a container name must be specified for pod {name}"
                    )));
                }
                _ => {
                    let init = names_in(pod, "initContainers");
                    let mut message = format!(
                        "a container name must be specified for pod {name}, choose one of: [{}]",
                        containers.join(" ")
                    );
                    if !init.is_empty() {
                        message.push_str(" or one of the init containers: [");
                        message.push_str(&init.join(" "));
                        message.push(']');
                    }
                    return Err(ApiError::bad_request(message));
                }
            }
        }
    };
    if query.bool("previous")?.unwrap_or(false) {
        // The kubelet's answer: no container has run before here.
        return Err(ApiError::bad_request(format!(
            "previous terminated container {container:?} in pod {name:?} not found"
        )));
    }
    let now = now_nanos();
    Ok(Options {
        container,
        follow: query.bool("follow")?.unwrap_or(false),
        since: since.map(|s| now.saturating_sub(u128::from(s.unsigned_abs()) * 1_000_000_000)),
        tail: tail.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        timestamps: query.bool("timestamps")?.unwrap_or(false),
        limit: limit.map(i64::unsigned_abs),
    })
}

/// Where a read is: a line, and how much of its rendering (see [`render`]) went out.
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    line: usize,
    sent: usize,
}

/// The first line `options` let through: after `sinceSeconds`, then the last `tailLines`.
fn start_of(logs: &PodLogs, key: &LogKey, options: &Options) -> Cursor {
    let Some(lines) = logs.logs.get(key) else { return Cursor::default() };
    let mut first = options
        .since
        .map_or(0, |since| lines.iter().position(|l| l.at >= since).unwrap_or(lines.len()));
    if let Some(tail) = options.tail {
        first = first.max(lines.len().saturating_sub(tail));
    }
    Cursor { line: first, sent: 0 }
}

/// The body of one log response.
struct LogStream {
    shared: Arc<Shared>,
    pods_storage: crate::status::GroupResource,
    key: LogKey,
    cursor: Cursor,
    timestamps: bool,
    /// What `limitBytes` still allows.
    remaining: Option<u64>,
    follow: bool,
    done: bool,
}

impl LogStream {
    async fn next(mut self) -> Option<(Result<Bytes, std::convert::Infallible>, Self)> {
        loop {
            if self.done || self.remaining == Some(0) {
                return None;
            }
            let (chunk, pod_gone, appended) = {
                let shared = Arc::clone(&self.shared);
                let state = shared.state.lock();
                let appended = Arc::clone(&state.logs.appended);
                let chunk = self.take(&state.logs);
                let key = crate::storage::object_key(&self.key.namespace, &self.key.pod);
                let pod = state.store.get(&self.pods_storage, &key);
                let gone = pod.is_none_or(|p| meta_str(p, "uid") != self.key.uid);
                (chunk, gone, appended)
            };
            if !chunk.is_empty() {
                return Some((Ok(Bytes::from(chunk)), self));
            }
            if !self.follow || pod_gone {
                return None;
            }
            let shutdown = self.shared.shutdown.clone();
            tokio::select! {
                () = appended.notified() => {}
                () = tokio::time::sleep(FOLLOW_CHECK) => {}
                () = shutdown.cancelled() => self.done = true,
            }
        }
    }

    /// The next bytes from the cursor, at most [`CHUNK`] and what `limitBytes` allows.
    fn take(&mut self, logs: &PodLogs) -> Vec<u8> {
        let Some(lines) = logs.logs.get(&self.key) else { return Vec::new() };
        let max = self.remaining.map_or(CHUNK, |r| usize::try_from(r).unwrap_or(CHUNK).min(CHUNK));
        let mut out = Vec::new();
        while out.len() < max {
            let Some(line) = lines.get(self.cursor.line) else { break };
            // A line's rendering only grows at its end (an incomplete line is appended to), so
            // the bytes sent of it stay a prefix of it.
            let rendered = render(line, self.timestamps);
            let rest = rendered.get(self.cursor.sent..).unwrap_or_default();
            let taken = rest.len().min(max - out.len());
            out.extend_from_slice(&rest[..taken]);
            self.cursor.sent += taken;
            if self.cursor.sent < rendered.len() || !line.complete {
                break;
            }
            self.cursor = Cursor { line: self.cursor.line + 1, sent: 0 };
        }
        if let Some(remaining) = &mut self.remaining {
            *remaining = remaining.saturating_sub(out.len() as u64);
        }
        out
    }
}

/// A line as the kubelet writes it: after its timestamp when asked, with its newline once it
/// has one.
fn render(line: &Line, timestamps: bool) -> Vec<u8> {
    let mut rendered = Vec::with_capacity(line.text.len() + 40);
    if timestamps {
        rendered.extend_from_slice(timestamp(line.at).as_bytes());
        rendered.push(b' ');
    }
    rendered.extend_from_slice(line.text.as_bytes());
    if line.complete {
        rendered.push(b'\n');
    }
    rendered
}

/// `time.RFC3339Nano` in UTC, as the kubelet writes it before each line.
fn timestamp(nanos: u128) -> String {
    let secs = i64::try_from(nanos / 1_000_000_000).unwrap_or(i64::MAX);
    let base = crate::util::format_rfc3339(secs);
    let frac = nanos % 1_000_000_000;
    if frac == 0 {
        return base;
    }
    let digits = format!("{frac:09}");
    let digits = digits.trim_end_matches('0');
    match base.strip_suffix('Z') {
        Some(stem) => format!("{stem}.{digits}Z"),
        None => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_with_nanoseconds_as_the_kubelet_writes_them() {
        assert_eq!(timestamp(1_500_000_000), "1970-01-01T00:00:01.5Z");
        assert_eq!(timestamp(2_000_000_000), "1970-01-01T00:00:02Z");
        assert_eq!(timestamp(1_000_000_001), "1970-01-01T00:00:01.000000001Z");
    }

    #[test]
    fn a_line_renders_with_its_stamp_and_its_newline_once_complete() {
        let line = Line { at: 1_500_000_000, text: "ready".into(), complete: false };
        assert_eq!(render(&line, false), b"ready");
        let line = Line { complete: true, ..line };
        assert_eq!(render(&line, true), b"1970-01-01T00:00:01.5Z ready\n");
    }
}
