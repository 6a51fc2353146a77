//! Helpers for tests that talk to an API server: waiting on a condition with a deadline,
//! reading a raw watch body as JSON events, and test objects (a pod body, a `CronTab` CRD).
//!
//! The workspace's own tests use them, and so can yours: none needs more than this crate's
//! dependencies, and none sleeps to let things settle.

use std::fmt::{Debug, Display};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use serde_json::{Value, json};

/// How often [`eventually`] looks again.
const POLL: Duration = Duration::from_millis(10);

/// What a check passed to [`eventually`] returns: `bool`, or `Result<(), E>` whose error
/// describes the state that is not yet right (the failure message shows the last one).
pub trait Outcome {
    /// `None` when the condition holds, else what to say if it never does.
    fn failure(self) -> Option<String>;
}

impl Outcome for bool {
    fn failure(self) -> Option<String> {
        (!self).then(String::new)
    }
}

impl<E: Debug> Outcome for Result<(), E> {
    fn failure(self) -> Option<String> {
        self.err().map(|state| format!(": {state:?}"))
    }
}

/// Polls `check` until it holds; panics naming `what` (and the last state, when `check`
/// returns a `Result`) once `deadline` has passed.
///
/// For conditions nothing announces (a lister catching up with writes made elsewhere); where
/// a handler or a channel can say when something changed, wait on that instead.
///
/// ```
/// use std::time::Duration;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let start = tokio::time::Instant::now();
/// let later = || start.elapsed() > Duration::from_millis(20);
/// embedded_apiserver::testing::eventually("20ms to pass", Duration::from_secs(5), later).await;
/// # }
/// ```
///
/// # Panics
///
/// When `check` still fails after `deadline`: that fails the calling test.
pub async fn eventually<O: Outcome>(what: &str, deadline: Duration, check: impl Fn() -> O) {
    let start = tokio::time::Instant::now();
    loop {
        let Some(state) = check().failure() else { return };
        assert!(
            start.elapsed() < deadline,
            "timed out after {deadline:?} waiting for {what}{state}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// A raw watch body (or any newline-delimited JSON stream) read line by line, as a client
/// that speaks HTTP itself reads it.
///
/// Made from the body's chunks, e.g. `reqwest::Response::bytes_stream()`:
///
/// ```
/// use embedded_apiserver::testing::WatchLines;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let chunks = [r#"{"type":"ADDED","object":{}}"#, "\n"].map(|c| Ok::<_, String>(c.as_bytes()));
/// let mut watch = WatchLines::new(futures::stream::iter(chunks));
/// assert_eq!(watch.next_event().await.unwrap()["type"], "ADDED");
/// assert!(watch.next_event().await.is_none());
/// # }
/// ```
pub struct WatchLines {
    stream: BoxStream<'static, Result<Vec<u8>, String>>,
    buf: Vec<u8>,
}

impl WatchLines {
    /// Reads the chunks of `body`.
    pub fn new<C, E>(body: impl Stream<Item = Result<C, E>> + Send + 'static) -> Self
    where
        C: AsRef<[u8]>,
        E: Display,
    {
        let stream =
            body.map(|chunk| chunk.map(|c| c.as_ref().to_vec()).map_err(|e| e.to_string()));
        Self { stream: stream.boxed(), buf: Vec::new() }
    }

    /// The next line, without its newline; `None` when the body ended (without waiting: wrap
    /// in a timeout).
    ///
    /// # Panics
    ///
    /// When the body breaks, or ends in the middle of a line.
    pub async fn next_line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=end).collect();
                line.pop();
                return Some(line);
            }
            match self.stream.next().await {
                Some(Ok(chunk)) => self.buf.extend(chunk),
                Some(Err(error)) => panic!("the watch broke: {error}"),
                None => {
                    assert!(self.buf.is_empty(), "a partial event at the end");
                    return None;
                }
            }
        }
    }

    /// The next line as JSON; `None` when the body ended.
    ///
    /// # Panics
    ///
    /// As [`next_line`](Self::next_line), and when a line is not JSON.
    pub async fn next_event(&mut self) -> Option<Value> {
        let line = self.next_line().await?;
        let event = serde_json::from_slice(&line);
        Some(event.unwrap_or_else(|e| panic!("each line is one JSON event: {e}")))
    }
}

/// A core/v1 pod to create: `namespace/name`, labelled `app: <app>`, with one container and
/// `managedFields` (which metadata-only clients must receive too).
#[must_use]
pub fn pod(namespace: &str, name: &str, app: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": namespace, "labels": {"app": app},
            "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]
        },
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    })
}

/// The `CronTab` CRD of the Kubernetes documentation, in `group` (`crontabs.<group>`), with
/// `scope` (`"Namespaced"` or `"Cluster"`): versions `v1` (stored, with the status subresource
/// and `Spec` and `Replicas` printer columns) and `v1beta1`, any fields, short name `ct`.
#[must_use]
pub fn crontab_crd(group: &str, scope: &str) -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("crontabs.{group}")},
        "spec": {
            "group": group, "scope": scope,
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}, "schema": schema,
                 "additionalPrinterColumns": [{"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                                              {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}]},
                {"name": "v1beta1", "served": true, "storage": false, "schema": schema}
            ]
        }
    })
}
