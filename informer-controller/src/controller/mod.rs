//! The reconcile loop: informers feed a [work queue](crate::workqueue), workers reconcile each
//! key (client-go's controller pattern; controller-runtime's `Controller`, kube-rs's
//! `Controller`).
//!
//! **Who it is for.** Operators: the loop most controllers are, on the factory's shared informers.
//! A program that only needs a queue of keys uses [`workqueue`](crate::workqueue) alone.
//!
//! A [`Controller`] watches one primary resource, and any number of resources it owns (their
//! owner references name it as controller) or that point to it (through a function), all through
//! one [`SharedInformerFactory`]. Every change becomes the key of a primary object; `workers`
//! tasks take keys from the queue and call your `reconcile` with the key and the object as the
//! cache holds it (`None` once deleted). Reads come from listers, never the server; writes go
//! through a client (`informer_client::Client`, or kube-rs's). What `reconcile` returns decides what happens next:
//!
//! | result | the key |
//! |---|---|
//! | `Ok(Action::Done)` | forgotten: its backoff starts over; it comes back with the next change |
//! | `Ok(Action::RequeueAfter(d))` | forgotten, and handed out again after `d` (periodic checks) |
//! | `Err(e)`, a `409 Conflict` in its [source chain](std::error::Error::source) | handed out again at once (the cache was behind the server); a second conflict in a row backs off as below |
//! | `Err(e)`, anything else, or a panic | handed out again after its backoff (the queue's [rate limiter](crate::workqueue::RateLimiter): 5 ms doubling to 1,000 s a key by default, 10 retries a second overall) |
//!
//! One key is never reconciled by two workers at once, and a key whose object changes while it
//! is reconciled is reconciled again afterwards: `reconcile` may be written as if it were the only
//! one looking at its object.
//!
//! [`run`](Controller::run) starts the factory's informers, waits for their caches, runs the
//! workers until `stop` is cancelled, then stops taking keys and gives the reconciles in flight
//! [`shutdown_timeout`](Controller::shutdown_timeout) to finish; dropping its future stops the
//! workers at once (so does a [leader election](crate::leader_election) that loses its lease
//! and gives up waiting). [`stop_on_signal`] gives a
//! token cancelled by `SIGTERM` or Ctrl-C.
//!
//! ```no_run
//! use std::sync::Arc;
//! use informer_client::Client;
//! use informer_controller::controller::{Action, Controller, stop_on_signal};
//! use informer_runtime::SharedInformerFactory;
//! use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::try_default()?;
//! let factory = SharedInformerFactory::new(client.clone());
//! let report = Controller::<Deployment, _>::new(&factory)
//!     .owns::<ReplicaSet>()
//!     .workers(4)
//!     .run(
//!         move |request| {
//!             let client = client.clone();
//!             async move {
//!                 let Some(deployment) = request.object else { return Ok(Action::Done) };
//!                 // ... compare with the listers' ReplicaSets, write through `client` ...
//!                 # let _ = (deployment, client);
//!                 Ok::<_, informer_client::ClientError>(Action::Done)
//!             }
//!         },
//!         stop_on_signal(),
//!     )
//!     .await?;
//! assert!(report.is_clean());
//! # Ok(())
//! # }
//! ```
//!
//! # kube-rs
//!
//! A kube-rs program needs no `kube::runtime::Controller` beside this crate's informers: this
//! `Controller` is its counterpart (kube-rs's `owns` and `watches` are [`owns`](Controller::owns)
//! and [`watches`](Controller::watches); its `Action::requeue` is [`Action::RequeueAfter`];
//! its error policy is the queue's rate limiter, above), and it reads from the informers the
//! program already has, where kube-rs's would run a second watch of each type into caches of its
//! own. With the `kube` feature the factory's source is the program's `kube::Client`, and the
//! reconcile writes through it as before, with kube-rs's `Api`:
//!
//! ```no_run
//! # #[cfg(feature = "kube")]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use informer_client::Client;
//! use informer_runtime::SharedInformerFactory;
//! use informer_controller::controller::{Action, Controller, stop_on_signal};
//! use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//!
//! let kube_client = kube::Client::try_default().await?;
//! let factory = SharedInformerFactory::new(Client::from(kube_client.clone()));
//! Controller::<Deployment, _>::new(&factory)
//!     .owns::<ReplicaSet>()
//!     .run(
//!         move |request| {
//!             let kube_client = kube_client.clone();
//!             async move {
//!                 let Some(deployment) = request.object else { return Ok(Action::Done) };
//!                 let namespace = deployment.metadata.namespace.as_deref().unwrap_or("default");
//!                 let deployments = kube::Api::<Deployment>::namespaced(kube_client, namespace);
//!                 // ... compare with the listers' ReplicaSets, write through `deployments` ...
//!                 # let _ = (deployment, deployments);
//!                 Ok::<_, kube::Error>(Action::Done)
//!             }
//!         },
//!         stop_on_signal(),
//!     )
//!     .await?;
//! # Ok(())
//! # }
//! ```

use std::collections::HashSet;
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::workqueue::{EnqueueMapped, EnqueueObject, EnqueueOwner, WorkQueue};
use informer_runtime::SharedInformerFactory;
use informer_runtime::instrument::{ControllerObserver, ReconcileResult};
use informer_runtime::listwatch::ListWatchSource;
use informer_runtime::resource::Resource;
use informer_runtime::shared_informer::{InformerError, ResourceEventHandler};
use informer_runtime::store::ObjectKey;

/// What a reconcile asks for next; see the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing until the object (or one it owns or watches) changes again.
    Done,
    /// Reconcile again after this long, changes or not.
    RequeueAfter(Duration),
}

/// One key to reconcile.
#[derive(Debug)]
#[non_exhaustive]
pub struct Request<K> {
    /// The key of the primary object: `namespace/name`, or `name` for cluster-scoped kinds.
    pub key: ObjectKey,
    /// The object as the cache holds it when the key was taken; `None` when it is gone.
    pub object: Option<Arc<K>>,
}

impl<K> Request<K> {
    /// A request for `key`, for tests of a reconcile function.
    #[must_use]
    pub fn new(key: ObjectKey, object: Option<Arc<K>>) -> Self {
        Self { key, object }
    }
}

/// Why a controller could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControllerError {
    /// A handler could not be registered: the factory's informers were shut down before the
    /// controller ran. Build the controller on a factory that is still running.
    #[error("controller {controller}: registering its handlers: {source}")]
    Register {
        /// The controller's name.
        controller: String,
        /// The informer's error.
        #[source]
        source: InformerError,
    },
}

/// How a controller's run ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct ControllerReport {
    /// Whether the caches synced (`false`: `stop` came first, and no key was reconciled).
    pub synced: bool,
    /// Reconciles that returned `Ok`.
    pub succeeded: u64,
    /// Reconciles that returned an error or panicked.
    pub failed: u64,
    /// Keys whose reconcile was still running when the shutdown timeout ran out.
    pub unfinished: Vec<ObjectKey>,
}

impl ControllerReport {
    /// Whether every reconcile that started also finished.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.unfinished.is_empty()
    }
}

type Registration = Box<
    dyn FnOnce(&WorkQueue<ObjectKey>) -> Result<Box<dyn FnOnce() + Send>, InformerError> + Send,
>;
type SyncWait = Box<dyn Fn() -> BoxFuture<'static, bool> + Send + Sync>;

/// A reconcile loop for the primary resource `K`; see the [module docs](self).
#[must_use]
pub struct Controller<K: Resource, S: ListWatchSource> {
    factory: SharedInformerFactory<S>,
    name: String,
    workers: usize,
    queue: Option<WorkQueue<ObjectKey>>,
    shutdown_timeout: Duration,
    registrations: Vec<Registration>,
    syncs: Vec<SyncWait>,
    #[cfg(feature = "metrics")]
    metrics: Option<informer_runtime::metrics::Metrics>,
    primary: std::marker::PhantomData<fn() -> K>,
}

impl<K: Resource, S: ListWatchSource> Controller<K, S> {
    /// A controller of `K` over `factory`'s informers, named after `K`'s resource, with one
    /// worker.
    pub fn new(factory: &SharedInformerFactory<S>) -> Self {
        let this = Self {
            factory: factory.clone(),
            name: informer_runtime::resource::resource_name::<K>(),
            workers: 1,
            queue: None,
            shutdown_timeout: Duration::from_secs(30),
            registrations: Vec::new(),
            syncs: Vec::new(),
            #[cfg(feature = "metrics")]
            metrics: None,
            primary: std::marker::PhantomData,
        };
        this.watch_with::<K>(|queue| Arc::new(EnqueueObject::new(queue.clone())))
    }

    /// Also reconciles the owner of each `C` whose owner reference to a `K` says
    /// `controller: true` (what this controller creates), on every change of that `C`.
    pub fn owns<C: Resource>(self) -> Self {
        self.watch_with::<C>(|queue| {
            Arc::new(EnqueueOwner::<K>::new(queue.clone()).only_controller())
        })
    }

    /// Also reconciles the keys of `K` objects `map` gives for each changed `C` (a Secret the
    /// primary objects name, a Node their pods run on). For an update, the keys of the old and
    /// the new object both.
    pub fn watches<C, I>(self, map: impl Fn(&C) -> I + Send + Sync + 'static) -> Self
    where
        C: Resource,
        I: IntoIterator<Item = ObjectKey> + 'static,
    {
        let map = Arc::new(map);
        self.watch_with::<C>(move |queue| {
            let map = Arc::clone(&map);
            Arc::new(EnqueueMapped::new(queue.clone(), move |c: &C| map(c)))
        })
    }

    fn watch_with<C: Resource>(
        mut self,
        handler: impl FnOnce(&WorkQueue<ObjectKey>) -> Arc<dyn ResourceEventHandler<C>> + Send + 'static,
    ) -> Self {
        let informer = self.factory.informer::<C>();
        let synced = informer.clone();
        self.syncs.push(Box::new(move || {
            let informer = synced.clone();
            Box::pin(async move { informer.wait_for_sync().await })
        }));
        self.registrations.push(Box::new(move |queue| {
            let registration = informer.add_event_handler(handler(queue))?;
            Ok(Box::new(move || informer.remove_event_handler(&registration))
                as Box<dyn FnOnce() + Send>)
        }));
        self
    }

    /// How many keys are reconciled at once (at least one; client-go's controllers take it as
    /// a flag, 1 to 50 in kube-controller-manager).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// The name in logs and spans; by default the primary resource's, `deployments.apps`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The work queue, for another rate limiter or clock, or to add keys from elsewhere; by
    /// default one with client-go's default controller rate limiter.
    pub fn queue(mut self, queue: WorkQueue<ObjectKey>) -> Self {
        self.queue = Some(queue);
        self
    }

    /// Records controller-runtime's reconcile metrics (`controller_runtime_reconcile_total`,
    /// ...) and its work queue's (`workqueue_*`) in `metrics`, labelled with the controller's
    /// [name](Self::name). A [queue](Self::queue) given here keeps its own metrics setting.
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics(mut self, metrics: &informer_runtime::metrics::Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// How long reconciles in flight may take to finish once `stop` is cancelled (30 s by
    /// default); those still running after it are reported and cancelled (dropped at their
    /// next `.await`). Dropping the future of [`run`](Self::run) cancels them at once.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Runs the controller until `stop` is cancelled: starts the factory's informers, waits for
    /// their caches, then reconciles.
    ///
    /// # Errors
    ///
    /// [`ControllerError::Register`] when the factory's informers were already shut down.
    pub async fn run<F, Fut, E>(
        self,
        reconcile: F,
        stop: CancellationToken,
    ) -> Result<ControllerReport, ControllerError>
    where
        F: Fn(Request<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: StdError + Send + Sync + 'static,
    {
        #[cfg(feature = "metrics")]
        let (observer, queue_builder) = match &self.metrics {
            Some(metrics) => (
                Some(metrics.controller_observer(&self.name)),
                WorkQueue::builder().name(self.name.clone()).metrics(metrics),
            ),
            None => (None, WorkQueue::builder().name(self.name.clone())),
        };
        #[cfg(not(feature = "metrics"))]
        let (observer, queue_builder): (Option<Arc<dyn ControllerObserver>>, _) =
            (None, WorkQueue::builder().name(self.name.clone()));
        let Self { factory, name, workers, queue, shutdown_timeout, registrations, syncs, .. } =
            self;
        let queue = queue.unwrap_or_else(|| queue_builder.build());
        let mut removals = Vec::with_capacity(registrations.len());
        for register in registrations {
            match register(&queue) {
                Ok(remove) => removals.push(remove),
                Err(source) => {
                    for remove in removals {
                        remove();
                    }
                    return Err(ControllerError::Register { controller: name, source });
                }
            }
        }
        // However `run` ends, returned or dropped: the handlers go, and the queue shuts down.
        let _cleanup = Cleanup { removals, queue: queue.clone() };
        factory.start();
        let mut report = ControllerReport::default();
        let synced = futures::future::join_all(syncs.iter().map(|wait| wait()));
        tokio::select! {
            all = synced => report.synced = all.into_iter().all(|s| s),
            () = stop.cancelled() => {}
        }
        if report.synced {
            tracing::info!(controller = %name, workers, "caches synced; reconciling");
            let shared = Arc::new(Workers {
                name,
                queue: queue.clone(),
                primary: factory.informer::<K>(),
                reconcile,
                conflicted: Mutex::new(HashSet::new()),
                in_flight: Mutex::new(HashSet::new()),
                counts: Mutex::new((0, 0)),
                observer,
            });
            // A set of tasks aborted when dropped: if this future is dropped (a leader that
            // lost its lease drops its work), no worker goes on writing.
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..workers {
                let (shared, stop) = (Arc::clone(&shared), stop.clone());
                tasks.spawn(async move { shared.work(stop).await });
            }
            stop.cancelled().await;
            let finished = async { while tasks.join_next().await.is_some() {} };
            if tokio::time::timeout(shutdown_timeout, finished).await.is_err() {
                let mut unfinished: Vec<_> = shared.in_flight.lock().iter().cloned().collect();
                unfinished.sort();
                tracing::warn!(
                    controller = %shared.name,
                    keys = ?unfinished.iter().map(ObjectKey::as_str).collect::<Vec<_>>(),
                    "reconciles still running after the shutdown timeout of {shutdown_timeout:?}"
                );
                report.unfinished = unfinished;
                tasks.abort_all();
                // Aborted tasks end at their next poll: wait for that, so that nothing of
                // this controller runs once `run` has returned.
                while tasks.join_next().await.is_some() {}
            }
            (report.succeeded, report.failed) = *shared.counts.lock();
        }
        Ok(report)
    }
}

impl<K: Resource, S: ListWatchSource> fmt::Debug for Controller<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("workers", &self.workers)
            .field("watches", &self.registrations.len())
            .finish_non_exhaustive()
    }
}

/// Unregisters the controller's handlers and shuts its queue down when dropped.
struct Cleanup {
    removals: Vec<Box<dyn FnOnce() + Send>>,
    queue: WorkQueue<ObjectKey>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        self.queue.shut_down();
        for remove in self.removals.drain(..) {
            remove();
        }
    }
}

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
struct Workers<K, F> {
    name: String,
    queue: WorkQueue<ObjectKey>,
    primary: informer_runtime::shared_informer::SharedIndexInformer<K>,
    reconcile: F,
    /// Keys whose last reconcile ended in a conflict: the next conflict backs off.
    conflicted: Mutex<HashSet<ObjectKey>>,
    /// Keys being reconciled, for the shutdown report.
    in_flight: Mutex<HashSet<ObjectKey>>,
    /// Reconciles that succeeded and that failed.
    counts: Mutex<(u64, u64)>,
    /// Metrics, when asked for.
    observer: Option<Arc<dyn ControllerObserver>>,
}

impl<K, F, Fut, E> Workers<K, F>
where
    K: Resource,
    F: Fn(Request<K>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: StdError + Send + Sync + 'static,
{
    async fn work(&self, stop: CancellationToken) {
        loop {
            let taken = tokio::select! {
                biased;
                () = stop.cancelled() => return,
                taken = self.queue.get() => taken,
            };
            let Some(taken) = taken else { return };
            let key = taken.item().clone();
            let request = Request { object: self.primary.cache().get_by_key(key.as_str()), key };
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
            self.settle(&key, outcome);
            drop(taken);
        }
    }

    /// Tells the queue what became of `key`.
    fn settle(&self, key: &ObjectKey, outcome: std::thread::Result<Result<Action, E>>) {
        let conflicted = |queue: &WorkQueue<ObjectKey>| {
            if self.conflicted.lock().insert(key.clone()) {
                queue.add(key.clone());
            } else {
                queue.add_rate_limited(key.clone());
            }
        };
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
                if is_conflict(&error) {
                    tracing::debug!(controller = %self.name, %key, "conflict: the cache was behind; reconciling again");
                    conflicted(&self.queue);
                } else {
                    self.conflicted.lock().remove(key);
                    tracing::warn!(
                        controller = %self.name,
                        %key,
                        retries = self.queue.num_requeues(key),
                        error = %ErrorChain(&error),
                        "reconcile failed; retrying after backoff"
                    );
                    self.queue.add_rate_limited(key.clone());
                }
            }
            Err(panic) => {
                self.counts.lock().1 += 1;
                self.conflicted.lock().remove(key);
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(controller = %self.name, %key, panic = %message, "reconcile panicked; retrying after backoff");
                self.queue.add_rate_limited(key.clone());
            }
        }
    }
}

/// Whether a `409 Conflict` from the client (reason `Conflict`: a stale version, not an
/// `AlreadyExists`) is in `error`'s source chain: a [`WriteError`](crate::write::WriteError),
/// or this project's `ClientError` (feature `client`). A wrapper with thiserror's
/// `#[error(transparent)]` forwards `source()` past the client's error and hides it: wrap it
/// with `#[from]` or `#[source]`.
fn is_conflict(error: &(dyn StdError + 'static)) -> bool {
    let conflict = |s: &informer_runtime::Status| s.code == 409 && s.reason == "Conflict";
    let mut next = Some(error);
    while let Some(e) = next {
        if e.downcast_ref::<crate::write::WriteError>()
            .and_then(|w| w.status())
            .is_some_and(conflict)
        {
            return true;
        }
        #[cfg(feature = "client")]
        if e.downcast_ref::<informer_client::ClientError>()
            .and_then(|c| c.status())
            .is_some_and(conflict)
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// An error and its sources, `: `-separated, for one log line.
struct ErrorChain<'a>(&'a (dyn StdError + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = self.0.source();
        while let Some(e) = next {
            write!(f, ": {e}")?;
            next = e.source();
        }
        Ok(())
    }
}

/// A token cancelled when the process gets `SIGTERM` (what Kubernetes sends a pod it stops) or
/// Ctrl-C (`SIGINT`): pass it to [`Controller::run`].
///
/// # Panics
///
/// Outside a Tokio runtime.
#[must_use]
pub fn stop_on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            match signal(SignalKind::terminate()) {
                Ok(mut term) => {
                    tokio::select! {
                        _ = term.recv() => tracing::info!("SIGTERM: stopping"),
                        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: stopping"),
                    }
                }
                Err(e) => {
                    tracing::warn!("cannot listen for SIGTERM ({e}); stopping on Ctrl-C only");
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        cancel.cancel();
    });
    token
}

#[cfg(test)]
mod tests;
