//! The worker tasks of a [`Controller`](super::Controller): each takes a key from the queue,
//! reconciles it with the object the cache holds, and tells the queue what became of it.

use std::collections::HashSet;
use std::error::Error as StdError;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::error_policy::{ErrorChain, ErrorPolicy, Failure, Retry, is_conflict};
use super::request::{Action, Request};
use crate::workqueue::WorkQueue;
use informer_runtime::instrument::{ControllerObserver, ReconcileResult};
use informer_runtime::resource::Object;
use informer_runtime::store::ObjectKey;

/// A key being reconciled: in the shutdown report's list and the active-workers gauge until
/// dropped.
struct InFlight<'a> {
    keys: &'a Mutex<HashSet<ObjectKey>>,
    observer: Option<&'a Arc<dyn ControllerObserver>>,
    key: ObjectKey,
}

impl<'a> InFlight<'a> {
    fn new<K, F>(workers: &'a Workers<K, F>, key: ObjectKey) -> Self {
        workers.in_flight.lock().insert(key.clone());
        let observer = workers.observer.as_ref();
        if let Some(observer) = observer {
            observer.active_workers(1);
        }
        Self { keys: &workers.in_flight, observer, key }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.keys.lock().remove(&self.key);
        if let Some(observer) = self.observer {
            observer.active_workers(-1);
        }
    }
}

/// What the worker tasks share.
pub(super) struct Workers<K, F> {
    pub(super) name: String,
    pub(super) queue: WorkQueue<ObjectKey>,
    pub(super) primary: informer_runtime::shared_informer::SharedIndexInformer<K>,
    pub(super) reconcile: F,
    /// What becomes of a key whose reconcile failed; the default without one.
    pub(super) error_policy: Option<ErrorPolicy<K>>,
    /// Keys whose last reconcile ended in a conflict: the next conflict backs off.
    pub(super) conflicted: Mutex<HashSet<ObjectKey>>,
    /// Keys being reconciled, for the shutdown report.
    pub(super) in_flight: Mutex<HashSet<ObjectKey>>,
    /// Reconciles that succeeded and that failed.
    pub(super) counts: Mutex<(u64, u64)>,
    /// Metrics, when asked for.
    pub(super) observer: Option<Arc<dyn ControllerObserver>>,
}

impl<K, F, Fut, E> Workers<K, F>
where
    K: Object,
    F: Fn(Request<K>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: StdError + Send + Sync + 'static,
{
    pub(super) async fn work(&self, stop: CancellationToken) {
        loop {
            let taken = tokio::select! {
                biased;
                () = stop.cancelled() => return,
                taken = self.queue.get() => taken,
            };
            let Some(taken) = taken else { return };
            let key = taken.item().clone();
            let request = Request { object: self.primary.cache().get_by_key(key.as_str()), key };
            // For the error policy, which sees the object the reconcile was given.
            let object = request.object.clone();
            let span =
                tracing::info_span!("reconcile", controller = %self.name, key = %request.key);
            let key = request.key.clone();
            // Undone when the reconcile ends, or when its task is aborted mid-reconcile.
            let in_flight = InFlight::new(self, key.clone());
            let started = std::time::Instant::now();
            // The call inside the future: a panic in the closure's synchronous part (before it
            // returns its future) is caught like one while the future runs, instead of ending
            // this worker's task and dropping the key.
            let reconcile = async { (self.reconcile)(request).await };
            let outcome = AssertUnwindSafe(reconcile).catch_unwind().instrument(span).await;
            drop(in_flight);
            if let Some(observer) = &self.observer {
                let result = match &outcome {
                    Ok(Ok(Action::Done)) => ReconcileResult::Success,
                    Ok(Ok(Action::RequeueAfter(_))) => ReconcileResult::RequeueAfter,
                    Ok(Err(_)) => ReconcileResult::Error,
                    Err(_) => ReconcileResult::Panic,
                };
                observer.reconciled(result, started.elapsed());
            }
            self.settle(&key, object.as_ref(), outcome);
            drop(taken);
        }
    }

    /// Tells the queue what became of `key`.
    fn settle(
        &self,
        key: &ObjectKey,
        object: Option<&Arc<K>>,
        outcome: std::thread::Result<Result<Action, E>>,
    ) {
        match outcome {
            Ok(Ok(action)) => {
                self.counts.lock().0 += 1;
                self.conflicted.lock().remove(key);
                self.queue.forget(key);
                if let Action::RequeueAfter(delay) = action {
                    self.queue.add_after(key.clone(), delay);
                }
            }
            Ok(Err(error)) => {
                self.counts.lock().1 += 1;
                let retries = self.queue.num_requeues(key);
                let retry = self.ask_policy(&Failure::new(key, object, &error, retries));
                if retry != Retry::Default {
                    self.conflicted.lock().remove(key);
                }
                match retry {
                    Retry::Backoff => {
                        tracing::warn!(controller = %self.name, %key, retries, error = %ErrorChain(&error), "reconcile failed; retrying after backoff");
                        self.queue.add_rate_limited(key.clone());
                    }
                    Retry::After(delay) => {
                        tracing::warn!(controller = %self.name, %key, retries, error = %ErrorChain(&error), "reconcile failed; retrying after {delay:?}");
                        self.queue.forget(key);
                        self.queue.add_after(key.clone(), delay);
                    }
                    Retry::GiveUp => {
                        tracing::warn!(controller = %self.name, %key, retries, error = %ErrorChain(&error), "reconcile failed; giving up until the object changes");
                        self.queue.forget(key);
                    }
                    Retry::Default => self.retry_by_default(key, retries, &error),
                }
            }
            Err(panic) => {
                self.counts.lock().1 += 1;
                self.conflicted.lock().remove(key);
                let message = panic_message(panic.as_ref()).unwrap_or_default();
                tracing::error!(controller = %self.name, %key, panic = %message, "reconcile panicked; retrying after backoff");
                self.queue.add_rate_limited(key.clone());
            }
        }
    }

    /// What the error policy says of `failure`: [`Retry::Default`] without a policy, or when
    /// it panics (a policy is user code; its panic must not end the worker).
    fn ask_policy(&self, failure: &Failure<'_, K>) -> Retry {
        let Some(policy) = &self.error_policy else { return Retry::Default };
        std::panic::catch_unwind(AssertUnwindSafe(|| policy(failure))).unwrap_or_else(|_| {
            tracing::error!(controller = %self.name, key = %failure.key, "the error policy panicked; retrying as without one");
            Retry::Default
        })
    }

    /// A conflict at once (the cache was behind), a second in a row and anything else after
    /// backoff.
    fn retry_by_default(&self, key: &ObjectKey, retries: u32, error: &(dyn StdError + 'static)) {
        if is_conflict(error) {
            if self.conflicted.lock().insert(key.clone()) {
                tracing::debug!(controller = %self.name, %key, "conflict: the cache was behind; reconciling again");
                self.queue.add(key.clone());
                return;
            }
            tracing::debug!(controller = %self.name, %key, "conflict again; retrying after backoff");
        } else {
            self.conflicted.lock().remove(key);
            tracing::warn!(controller = %self.name, %key, retries, error = %ErrorChain(error), "reconcile failed; retrying after backoff");
        }
        self.queue.add_rate_limited(key.clone());
    }
}

/// What a panic said, when it said it with a string (as `panic!` with a message does).
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> Option<String> {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
}
