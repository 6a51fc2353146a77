//! What the runtime tells its metrics, where something happens: the seams between the data
//! flow and the `metrics` module (feature `metrics`), which implements them.
//!
//! Each part holds an `Option` of its observer: without metrics nothing is recorded and
//! nothing is timed. What is cheaper read when scraped than counted when it happens (queue
//! depth, pending notifications) is read through the probes instead.

use std::time::Duration;

/// What a work queue (`informer-controller`'s) records.
pub trait QueueObserver: Send + Sync {
    /// A key became dirty (client-go's `adds`).
    fn added(&self);
    /// A key was rate limited (client-go's `retries`).
    fn retried(&self);
    /// A key waited this long between its add and a worker taking it.
    fn queued_for(&self, waited: Duration);
    /// A worker held a key this long.
    fn worked_for(&self, worked: Duration);
}

/// What a work queue answers when scraped.
#[cfg(feature = "metrics")]
pub trait QueueProbe: Send + Sync {
    /// Keys ready for a worker.
    fn depth(&self) -> usize;
    /// The time the keys being processed have been held, summed, and the longest.
    fn in_progress(&self) -> (Duration, Duration);
}

/// How a watch ended, for the `reason` of a watch restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WatchRestart {
    /// The server closed it, at its timeout or not.
    Closed,
    /// The client's deadline passed without a close.
    Timeout,
    /// `410 Expired`: history was compacted; a relist follows.
    Expired,
    /// `429`: the server asked to slow down.
    Throttled,
    /// Any other failure; a relist follows.
    Error,
}

#[cfg(feature = "metrics")]
impl WatchRestart {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Timeout => "timeout",
            Self::Expired => "expired",
            Self::Throttled => "throttled",
            Self::Error => "error",
        }
    }
}

/// What an informer's reflector and loop record.
pub(crate) trait InformerObserver: Send + Sync {
    /// A watch event of `kind` (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`) arrived.
    fn event(&self, kind: &'static str);
    /// A list (or streaming list) completed; `relist` for every one after the first.
    fn listed(&self, relist: bool);
    /// A watch ended and another follows (after a relist for some reasons).
    fn watch_restarted(&self, reason: WatchRestart);
    /// The informer synced this long after it started.
    fn synced(&self, after: Duration);
}

/// What an informer answers when scraped.
#[cfg(feature = "metrics")]
pub(crate) trait InformerProbe: Send + Sync {
    /// The resource version of the last list or event.
    fn last_sync_resource_version(&self) -> String;
    /// Each handler's id and its notifications not yet handled.
    fn pending(&self) -> Vec<(u64, usize)>;
    /// How many reads of the informer's cache found an object it could not decode from its
    /// compact form (see [`Cache::decode_failures`](crate::store::Cache::decode_failures)).
    fn cache_decode_failures(&self) -> u64;
}

/// How a reconcile ended, for the `result` of a controller's reconciles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReconcileResult {
    /// `Ok(Action::Done)`.
    Success,
    /// `Ok(Action::RequeueAfter(_))`.
    RequeueAfter,
    /// `Err(_)`.
    Error,
    /// The reconcile panicked.
    Panic,
}

/// What a controller (`informer-controller`'s) records.
pub trait ControllerObserver: Send + Sync {
    /// A reconcile ended after `took`.
    fn reconciled(&self, result: ReconcileResult, took: Duration);
    /// Workers reconciling now, up or down by one.
    fn active_workers(&self, delta: i64);
}
