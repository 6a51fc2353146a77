//! The containers' log text, which a pod's kubelet would serve: what `pods/{name}/log`
//! (`pod_logs`) reads and a test appends to. Held in the server's state, below the verbs.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::Notify;

/// Every container's log text, by pod (namespace, name, UID) and container.
#[derive(Debug, Default)]
pub(crate) struct PodLogs {
    pub(crate) logs: HashMap<LogKey, Vec<Line>>,
    /// Woken at every append, for the follows.
    pub(crate) appended: Arc<Notify>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct LogKey {
    pub(crate) namespace: String,
    pub(crate) pod: String,
    pub(crate) uid: String,
    pub(crate) container: String,
}

/// One line of a log; only the last may be incomplete (no newline yet).
#[derive(Clone, Debug)]
pub(crate) struct Line {
    /// When the line's first byte was appended, in nanoseconds since the Unix epoch.
    pub(crate) at: u128,
    pub(crate) text: String,
    pub(crate) complete: bool,
}
