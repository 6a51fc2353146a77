//! Several controllers of one program on one [`SharedInformerFactory`], behind one Lease, with
//! the probes a Deployment's manifest points at (controller-runtime's `manager.Manager`).
//!
//! Where it sits: above [`Controller`], [`LeaderElection`] and the factory. A program builds its
//! controllers (and the listers its reconcile functions read) on one factory, hands them to a
//! [`Manager`], and calls [`run`](Manager::run) with a stop signal.
//!
//! # Warm standby
//!
//! Every replica starts the factory's informers at once and keeps their caches in sync,
//! leading or not; only the work that needs the Lease ([`Placement::Leader`]: every controller)
//! waits for it. A replica that takes over starts reconciling from caches already synced,
//! instead of listing every resource first: failover costs the Lease's expiry, not a list of
//! the cluster. The price is each standby's watches and memory; where that is too much,
//! [`Standby::Cold`] starts the informers only on taking the Lease (`cargo xtask
//! demo-controller` times a failover of each).
//!
//! # Probes
//!
//! With [`probes`](Manager::probes), one HTTP port answers:
//!
//! | path | `200` when | for |
//! |---|---|---|
//! | `/healthz`, `/livez` | no task failed | the liveness probe |
//! | `/readyz` | every informer synced, none failing its lists and watches for longer than [`watch_failure_grace`](Manager::watch_failure_grace), not shutting down, and leading if [`ready_when_leading`](Manager::ready_when_leading) | the readiness probe |
//! | `/metrics` | always (feature `metrics`, with [`metrics`](Manager::metrics)) | Prometheus |
//!
//! Each answer lists its checks, `[+]name ok` or `[-]name failed: why`, as kube-apiserver's
//! verbose health checks do. The port serves at most 16 connections at once; a request's
//! headers must arrive within 10 seconds and a connection ends after 30.
//!
//! # Failures and shutdown
//!
//! A task that fails (a controller whose handlers cannot be registered, a task of yours that
//! returns an error, any that panics) is logged and stops the manager, which then returns
//! [`ManagerError::TaskFailed`]: the program exits and Kubernetes restarts it, rather than
//! going on without the controller. A lost Lease stops it too ([`ManagerError::LeadershipLost`]),
//! as client-go's controllers exit then. On `stop`, every task is told to stop and given
//! [`shutdown_timeout`](Manager::shutdown_timeout) to return; then the informers stop and the
//! Lease is released.

mod probes;

use std::error::Error as StdError;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use informer_runtime::{ListWatchSource, Object, SharedInformerFactory};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;
use tracing::Instrument;

use crate::controller::{Action, Controller, Request, panic_message};
use crate::leader_election::{LeaderElection, Leadership};
use probes::{Probes, State};

/// A task's error, as [`Manager::add_task`] takes it.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// When a replica behind a Lease starts the factory's informers; see
/// [warm standby](self#warm-standby).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Standby {
    /// At once, on every replica: a new leader reconciles from caches already synced.
    #[default]
    Warm,
    /// On taking the Lease: a standby holds no cache and makes no watch, and a new leader
    /// lists everything before its first reconcile. `/readyz` then checks only the informers
    /// started.
    Cold,
}

/// Which replicas run a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Only the replica holding the Lease, while it does (every controller added with
    /// [`Manager::add`]); every replica when the manager has no leader election.
    Leader,
    /// Every replica, from the start: a webhook server, a cache warmer, an HTTP API.
    EveryReplica,
}

/// Why [`Manager::run`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// A task returned an error; the others were stopped.
    #[error("manager: task {task} failed, so every task was stopped: {source}")]
    TaskFailed {
        /// The task's name (a controller's [`name`](Controller::name)).
        task: String,
        /// What it returned.
        #[source]
        source: BoxError,
    },
    /// A task panicked; the others were stopped.
    #[error("manager: task {task} panicked, so every task was stopped: {message}")]
    TaskPanicked {
        /// The task's name.
        task: String,
        /// The panic's message.
        message: String,
    },
    /// Renewals of the Lease failed for its renew deadline: another replica may lead now.
    /// Exit and start afresh, as client-go's controllers do.
    #[error(
        "manager: the Lease could not be renewed, so this replica stopped leading; exit and \
         start again to campaign afresh"
    )]
    LeadershipLost,
}

/// How a [`Manager::run`] that was stopped ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct ManagerReport {
    /// How leadership ended (`None` without leader election).
    pub leadership: Option<Leadership>,
    /// Tasks that had not returned when the shutdown timeout ran out, and were dropped.
    pub unfinished: Vec<String>,
}

/// Runs a program's controllers and tasks on one factory; see the [module docs](self).
///
/// ```no_run
/// use informer_client::{Client, ClientError};
/// use informer_controller::controller::{Action, Controller, stop_on_signal};
/// use informer_controller::leader_election::LeaderElection;
/// use informer_controller::manager::Manager;
/// use informer_runtime::SharedInformerFactory;
/// use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
/// use k8s_openapi::api::core::v1::Pod;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = Client::try_default()?;
/// let factory = SharedInformerFactory::new(client.clone());
/// let pods = factory.lister::<Pod>(); // started with the rest, on every replica
/// let identity = std::env::var("POD_NAME")?;
/// let election = LeaderElection::builder(client, "my-operator", "my-operator", identity).build()?;
/// let probes = tokio::net::TcpListener::bind("0.0.0.0:8081").await?;
/// Manager::new(&factory)
///     .leader_election(election)
///     .probes(probes)
///     .add(Controller::<Deployment, _>::new(&factory), move |request| {
///         let _pods = pods.clone();
///         async move { Ok::<_, ClientError>(Action::Done) }
///     })
///     .add(Controller::<StatefulSet, _>::new(&factory), |_request| async {
///         Ok::<_, ClientError>(Action::Done)
///     })
///     .run(stop_on_signal())
///     .await?;
/// # Ok(())
/// # }
/// ```
#[must_use]
pub struct Manager<S: ListWatchSource> {
    factory: SharedInformerFactory<S>,
    election: Option<LeaderElection>,
    standby: Standby,
    probes: Option<TcpListener>,
    #[cfg(feature = "metrics")]
    metrics: Option<informer_runtime::metrics::Metrics>,
    shutdown_timeout: Duration,
    watch_failure_grace: Duration,
    ready_when_leading: bool,
    tasks: Vec<Task>,
}

/// A task not started yet.
struct Task {
    name: String,
    placement: Placement,
    start: Box<dyn FnOnce(Start) -> BoxFuture<'static, Result<(), BoxError>> + Send>,
}

/// What a task is started with.
struct Start {
    stop: CancellationToken,
    #[cfg_attr(not(feature = "metrics"), allow(dead_code, reason = "metrics are all it holds"))]
    extras: Extras,
}

/// What the manager gives every task besides its stop signal.
#[derive(Clone, Default)]
struct Extras {
    /// The manager's metrics, for the controllers that chose none.
    #[cfg(feature = "metrics")]
    metrics: Option<informer_runtime::metrics::Metrics>,
}

/// How a task ended, as the manager hears of it.
struct Ended {
    task: String,
    outcome: Result<(), Failure>,
}

enum Failure {
    Error(BoxError),
    Panic(String),
}

impl<S: ListWatchSource> Manager<S> {
    /// A manager of tasks on `factory`, without leader election (every replica runs every
    /// task) or probes.
    pub fn new(factory: &SharedInformerFactory<S>) -> Self {
        Self {
            factory: factory.clone(),
            election: None,
            standby: Standby::Warm,
            probes: None,
            #[cfg(feature = "metrics")]
            metrics: None,
            shutdown_timeout: Duration::from_secs(30),
            watch_failure_grace: Duration::from_secs(60),
            ready_when_leading: false,
            tasks: Vec::new(),
        }
    }

    /// Runs [`Placement::Leader`] tasks only while `election` holds its Lease; the informers
    /// run on every replica all the same (see [warm standby](self#warm-standby)).
    pub fn leader_election(mut self, election: LeaderElection) -> Self {
        self.election = Some(election);
        self
    }

    /// When the informers start on a replica behind the Lease: at once ([`Standby::Warm`], the
    /// default) or on taking it ([`Standby::Cold`]). Without leader election they start at
    /// once.
    pub fn standby(mut self, standby: Standby) -> Self {
        self.standby = standby;
        self
    }

    /// Serves `/healthz`, `/livez`, `/readyz` and `/metrics` on `listener` (see
    /// [probes](self#probes)) while the manager runs.
    pub fn probes(mut self, listener: TcpListener) -> Self {
        self.probes = Some(listener);
        self
    }

    /// Serves `metrics` on the probes' port at `/metrics`.
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics(mut self, metrics: &informer_runtime::metrics::Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// How long tasks get to return after `stop` (30 seconds by default; a controller's own
    /// [`shutdown_timeout`](Controller::shutdown_timeout) should be shorter). Those that have
    /// not returned by then are dropped and named in [`ManagerReport::unfinished`].
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// How long an informer's lists and watches may fail before `/readyz` says so (60
    /// seconds by default): a watch broken for a moment, which the informer mends on its own,
    /// must not take a replica out of its Service.
    pub fn watch_failure_grace(mut self, grace: Duration) -> Self {
        self.watch_failure_grace = grace;
        self
    }

    /// Whether `/readyz` also asks that this replica leads (off by default): for a Service
    /// that must reach the leader only.
    pub fn ready_when_leading(mut self, ready_when_leading: bool) -> Self {
        self.ready_when_leading = ready_when_leading;
        self
    }

    /// Runs `controller` with `reconcile` while this replica leads ([`Placement::Leader`]),
    /// under its [`name`](Controller::name). Its informers run from the start on every
    /// replica, so that a new leader starts with synced caches.
    pub fn add<K, F, Fut, E>(mut self, controller: Controller<K, S>, reconcile: F) -> Self
    where
        K: Object,
        F: Fn(Request<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: StdError + Send + Sync + 'static,
    {
        let name = controller.controller_name().to_owned();
        let start = move |start: Start| -> BoxFuture<'static, Result<(), BoxError>> {
            #[cfg(feature = "metrics")]
            let controller = controller.metrics_unless_set(start.extras.metrics.as_ref());
            Box::pin(async move {
                let report = controller.run(reconcile, start.stop).await?;
                if !report.unfinished.is_empty() {
                    tracing::warn!(unfinished = ?report.unfinished, "reconciles cut short by the shutdown");
                }
                Ok(())
            })
        };
        self.tasks.push(Task { name, placement: Placement::Leader, start: Box::new(start) });
        self
    }

    /// Runs `task` on the replicas `placement` says, with a token cancelled when it must
    /// stop. A task that returns `Ok` before that has finished; one that returns an error
    /// stops the manager (see [failures](self#failures-and-shutdown)).
    pub fn add_task<F, Fut, E>(
        mut self,
        name: impl Into<String>,
        placement: Placement,
        task: F,
    ) -> Self
    where
        F: FnOnce(CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Into<BoxError>,
    {
        let start = move |start: Start| -> BoxFuture<'static, Result<(), BoxError>> {
            Box::pin(task(start.stop).map(|r| r.map_err(Into::into)))
        };
        self.tasks.push(Task { name: name.into(), placement, start: Box::new(start) });
        self
    }

    /// Starts the informers, the probes and the tasks, and runs until `stop`, a task's
    /// failure or a lost Lease; then stops every task (within the
    /// [shutdown timeout](Self::shutdown_timeout)) and the informers.
    ///
    /// # Errors
    ///
    /// [`ManagerError::TaskFailed`] and [`ManagerError::TaskPanicked`] for a task that
    /// failed, [`ManagerError::LeadershipLost`] when the Lease was lost.
    pub async fn run(self, stop: CancellationToken) -> Result<ManagerReport, ManagerError> {
        let state = Arc::new(State::new(self.election.is_none()));
        let extras = Extras {
            #[cfg(feature = "metrics")]
            metrics: self.metrics.clone(),
        };
        let probe_stop = CancellationToken::new();
        let probe_task = self.probes.map(|listener| {
            let factory = self.factory.clone();
            let probes = Probes {
                health: Box::new(move || factory.health()),
                state: Arc::clone(&state),
                watch_failure_grace: self.watch_failure_grace,
                ready_when_leading: self.ready_when_leading,
                #[cfg(feature = "metrics")]
                metrics: self.metrics,
            };
            // Aborted if this future is dropped: the port closes with the manager.
            AbortOnDropHandle::new(tokio::spawn(probes::serve(
                listener,
                Arc::new(probes),
                probe_stop.clone(),
            )))
        });
        // Every informer asked for so far, on every replica: the warm standby. A cold one
        // starts them on taking the Lease (`campaign`).
        let cold = self.standby == Standby::Cold && self.election.is_some();
        if !cold {
            self.factory.start();
        }

        // Each task says how it ended here, once: the channel never holds more than all.
        let (ended, endings) = mpsc::channel(self.tasks.len().max(1));
        let everything = stop.child_token();
        let (leader_tasks, replica_tasks): (Vec<Task>, Vec<Task>) =
            self.tasks.into_iter().partition(|t| t.placement == Placement::Leader);
        let names = replica_tasks.iter().chain(&leader_tasks).map(|t| t.name.clone()).collect();
        let mut running = JoinSet::new();
        for task in replica_tasks {
            let start = Start { stop: everything.child_token(), extras: extras.clone() };
            running.spawn(supervised(task, start, ended.clone()));
        }
        // Aborted if this future is dropped (a process's manager killed without a word, or
        // a test's): no Lease is renewed after.
        let leading = AbortOnDropHandle::new(tokio::spawn(campaign(
            self.election,
            leader_tasks,
            everything.clone(),
            ended,
            Arc::clone(&state),
            extras,
            cold.then(|| self.factory.clone()),
        )));
        let mut run =
            Running { endings, leading: Some(leading), replicas: running, names, done: Vec::new() };
        let (failure, leadership) = run.until_the_end(&stop).await;

        // Shutting down: not ready from here on.
        state.set_stopping();
        if let Some((task, error)) = &failure {
            let message = match error {
                Failure::Error(e) => e.to_string(),
                Failure::Panic(m) => format!("panicked: {m}"),
            };
            state.set_failed(task, &message);
            tracing::error!(task, error = %message, "a task failed: stopping every task");
            run.done.push(task.clone());
        }
        everything.cancel();
        let (wound_down, unfinished) = run.wind_down(self.shutdown_timeout).await;
        self.factory.shutdown().await;
        probe_stop.cancel();
        if let Some(task) = probe_task {
            let _ = task.await;
        }
        match (failure, wound_down.or(leadership)) {
            (Some((task, Failure::Error(source))), _) => {
                Err(ManagerError::TaskFailed { task, source })
            }
            (Some((task, Failure::Panic(message))), _) => {
                Err(ManagerError::TaskPanicked { task, message })
            }
            (None, Some(Leadership::Lost)) => Err(ManagerError::LeadershipLost),
            (None, leadership) => Ok(ManagerReport { leadership, unfinished }),
        }
    }
}

/// The tasks of a [`Manager::run`], running.
struct Running {
    endings: mpsc::Receiver<Ended>,
    /// The leader election and the leader's tasks ([`campaign`]), until it returns.
    leading: Option<AbortOnDropHandle<Option<Leadership>>>,
    /// Every replica's tasks.
    replicas: JoinSet<()>,
    /// Every task's name.
    names: Vec<String>,
    /// The tasks known to have ended.
    done: Vec<String>,
}

impl Running {
    /// Waits for `stop`, a task's failure or a lost Lease; says which failure, and how
    /// leadership ended if it did.
    async fn until_the_end(
        &mut self,
        stop: &CancellationToken,
    ) -> (Option<(String, Failure)>, Option<Leadership>) {
        let mut leadership = None;
        loop {
            tokio::select! {
                () = stop.cancelled() => return (None, leadership),
                Some(end) = self.endings.recv() => match end.outcome {
                    Ok(()) => {
                        tracing::info!(task = %end.task, "task finished");
                        self.done.push(end.task);
                    }
                    Err(error) => return (Some((end.task, error)), leadership),
                },
                outcome = async {
                    match self.leading.as_mut() {
                        Some(leading) => leading.await,
                        None => std::future::pending().await,
                    }
                }, if self.leading.is_some() => {
                    self.leading = None;
                    match outcome {
                        Ok(Some(Leadership::Lost)) => return (None, Some(Leadership::Lost)),
                        Ok(other) => leadership = other,
                        Err(e) => tracing::error!(error = %e, "the leader election task ended abnormally"),
                    }
                }
            }
        }
    }

    /// Waits up to `timeout` for every task, told to stop, to return; drops the rest. Says
    /// how leadership ended, if it ended now, and which tasks were dropped.
    async fn wind_down(&mut self, timeout: Duration) -> (Option<Leadership>, Vec<String>) {
        let mut leadership = None;
        let wound_down = tokio::time::timeout(timeout, async {
            if let Some(leading) = self.leading.as_mut()
                && let Ok(outcome) = leading.await
            {
                leadership = outcome;
            }
            while self.replicas.join_next().await.is_some() {}
        })
        .await;
        if wound_down.is_ok() {
            return (leadership, Vec::new());
        }
        while let Ok(end) = self.endings.try_recv() {
            self.done.push(end.task);
        }
        let unfinished: Vec<String> =
            self.names.iter().filter(|name| !self.done.contains(name)).cloned().collect();
        tracing::warn!(?unfinished, ?timeout, "tasks did not stop in time: dropped");
        self.replicas.abort_all();
        if let Some(leading) = self.leading.take() {
            leading.abort();
        }
        (leadership, unfinished)
    }
}

/// Campaigns for the Lease (when there is an election) and runs the leader's tasks while
/// leading; says how leadership ended.
async fn campaign(
    election: Option<LeaderElection>,
    tasks: Vec<Task>,
    stop: CancellationToken,
    ended: mpsc::Sender<Ended>,
    state: Arc<State>,
    extras: Extras,
    start_on_leading: Option<SharedInformerFactory<impl ListWatchSource>>,
) -> Option<Leadership> {
    let Some(election) = election else {
        lead(tasks, stop, ended, extras).await;
        return None;
    };
    let while_leading = Arc::clone(&state);
    let outcome = election
        .run(stop, |leading| async move {
            if let Some(factory) = start_on_leading {
                tracing::info!("leading: starting the informers (cold standby)");
                factory.start();
            }
            while_leading.set_leading(true);
            lead(tasks, leading, ended, extras).await;
            while_leading.set_leading(false);
        })
        .await;
    state.set_leading(false);
    Some(outcome)
}

/// Runs the leader's tasks until each returned (after `stop`, or on their own).
async fn lead(
    tasks: Vec<Task>,
    stop: CancellationToken,
    ended: mpsc::Sender<Ended>,
    extras: Extras,
) {
    let mut running = JoinSet::new();
    for task in tasks {
        let start = Start { stop: stop.child_token(), extras: extras.clone() };
        running.spawn(supervised(task, start, ended.clone()));
    }
    // Dropping this future (a lost Lease) drops the set, which aborts the tasks.
    while running.join_next().await.is_some() {}
}

/// Runs `task`, catching a panic, and says how it ended.
async fn supervised(task: Task, start: Start, ended: mpsc::Sender<Ended>) {
    let span = tracing::info_span!("task", task = %task.name);
    let outcome = AssertUnwindSafe((task.start)(start).instrument(span)).catch_unwind().await;
    let name = task.name;
    let outcome = match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(Failure::Error(error)),
        Err(panic) => Err(Failure::Panic(
            panic_message(panic.as_ref()).unwrap_or_else(|| "a panic without a message".to_owned()),
        )),
    };
    // The manager may have stopped listening (it is shutting down): nothing to tell then.
    let _ = ended.send(Ended { task: name, outcome }).await;
}

impl<S: ListWatchSource> std::fmt::Debug for Manager<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("tasks", &self.tasks.iter().map(|t| (&t.name, t.placement)).collect::<Vec<_>>())
            .field("leader_election", &self.election.is_some())
            .field("probes", &self.probes.as_ref().and_then(|l| l.local_addr().ok()))
            .field("shutdown_timeout", &self.shutdown_timeout)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
