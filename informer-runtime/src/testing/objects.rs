//! Objects for the unit tests of this crate (pods, namespaces, labels), built in one line each.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A pod `ns/name` at resource version `rv` (none when `rv` is empty).
pub(crate) fn pod(ns: &str, name: &str, rv: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some(ns.to_owned()),
            name: Some(name.to_owned()),
            resource_version: (!rv.is_empty()).then(|| rv.to_owned()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

/// `pod` with labels.
pub(crate) fn labeled_pod(ns: &str, name: &str, labels: &[(&str, &str)]) -> Pod {
    let mut p = pod(ns, name, "");
    p.metadata.labels = Some(
        labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>(),
    );
    p
}

/// A Secret `ns/name` whose `data` and `stringData` each hold `value` under `password`.
pub(crate) fn secret(ns: &str, name: &str, value: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            namespace: Some(ns.to_owned()),
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some([("password".to_owned(), ByteString(value.as_bytes().to_vec()))].into()),
        string_data: Some([("password".to_owned(), value.to_owned())].into()),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    }
}

/// Whether `value` occurs in `bytes`, as itself or base64-encoded as a Secret's `data` holds
/// it: what a test of leftover object data looks for.
pub(crate) fn holds(bytes: &[u8], value: &str) -> bool {
    let encoded = serde_json::to_string(&ByteString(value.as_bytes().to_vec())).unwrap_or_default();
    let base64 = encoded.trim_matches('"');
    [value, base64].iter().any(|needle| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
}

/// A cluster-scoped object.
pub(crate) fn namespace(name: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        ..Namespace::default()
    }
}

/// Waits until the runtime counts at most `baseline` live tasks, or five seconds passed; returns
/// the count. The runtime's count lags a task's completion by a scheduler tick.
pub(crate) async fn settle_alive_tasks(baseline: usize) -> usize {
    let metrics = tokio::runtime::Handle::current().metrics();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while metrics.num_alive_tasks() > baseline && std::time::Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
    metrics.num_alive_tasks()
}

/// A gate that handlers block on while a test holds it closed: a handler that blocks, on
/// purpose, for as long as the test says.
#[derive(Clone, Default)]
pub(crate) struct Gate(Arc<(parking_lot::Mutex<bool>, parking_lot::Condvar)>);

impl Gate {
    /// Makes `pass` block from now on.
    pub(crate) fn close(&self) {
        *self.0.0.lock() = true;
    }

    /// Lets every blocked `pass` return.
    pub(crate) fn open(&self) {
        *self.0.0.lock() = false;
        self.0.1.notify_all();
    }

    /// Returns once the gate is open.
    pub(crate) fn pass(&self) {
        let mut closed = self.0.0.lock();
        while *closed {
            self.0.1.wait(&mut closed);
        }
    }
}

/// Opens the gate when dropped, so that a failing test releases its blocked threads.
pub(crate) struct OpenOnDrop(pub(crate) Gate);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}
