//! A test kit for controllers: run a controller's replicas against the embedded API server
//! under a seeded schedule of the faults a cluster deals them, drive changes, and wait until
//! the server's objects are what the controller should make of them.
//!
//! Where it sits: beside the server, in a test. It knows nothing of the controller but how to
//! start a replica (a function of a [`Replica`]: a name, the server's address, a stop signal)
//! and, optionally, the Lease its replicas campaign for; the predicate that says "converged" is
//! the test's, over the server's objects.
//!
//! # The faults
//!
//! Each [`round`](Running::round) draws, from the scenario's seed, one to three of:
//!
//! | fault | what a controller meets |
//! |---|---|
//! | [`Fault::ServerErrors`] | the next 1 to 5 creates, updates, patches or deletes answered `500` |
//! | [`Fault::Conflicts`] | the next 1 to 5 updates or patches answered `409 Conflict` |
//! | [`Fault::DroppedWatches`] | every watch closed: informers watch again from their last version |
//! | [`Fault::Compaction`] | history compacted: watches from old versions get `410 Expired`, informers relist |
//! | [`Fault::Restart`] | the server down for a moment, its connections cut, watches then `410` |
//! | [`Fault::LeaderKilled`] | the replica holding the Lease aborted without a word (no release); a new replica started in its place |
//!
//! Each kind is drawn once before any is drawn twice, so that a few rounds cover them all.
//!
//! The `500`s and `409`s answer whoever writes next over HTTP, the test's own client too.
//! Make the test's changes through the server itself ([`ServerHandle::create`],
//! [`update`](ServerHandle::update), [`delete`](ServerHandle::delete)), which no fault
//! touches, or limit the faults to the controller's own writes with
//! [`faults_on`](Scenario::faults_on).
//!
//! # Replaying
//!
//! The seed comes from `EMBEDDED_APISERVER_SEED` when it is set, else it is random; it is
//! printed when the scenario starts and in every failure message. Rerun the failing test with
//! that variable to draw the same faults in the same order (the controller's own timing still
//! varies, as it does in a cluster).
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use embedded_apiserver::ApiServer;
//! use embedded_apiserver::scenario::Scenario;
//!
//! # async fn my_controller(_url: String, _identity: String, _stop: tokio_util::sync::CancellationToken) {}
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = ApiServer::start().await?;
//! let mut scenario = Scenario::new(&server)
//!     .leader_lease("default", "my-controller")
//!     .replicas(2, |replica| my_controller(replica.url().to_owned(), replica.name().to_owned(), replica.stop()))
//!     .start();
//! // ... create the objects the controller acts on, through any client ...
//! let done = || -> Result<(), String> { Ok(()) /* compare the server's objects with the wanted ones */ };
//! scenario.converge("the first objects", done).await;
//! for _ in 0..5 {
//!     scenario.round().await;
//!     // ... change some objects ...
//!     scenario.converge("after a round of faults", done).await;
//! }
//! let report = scenario.finish().await;
//! println!("{report}");
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use informer_runtime::GroupVersionResource;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::faults::Failure;
use crate::handle::ServerHandle;
use crate::server::ApiServer;

/// The environment variable that replays a scenario's seed.
pub const SEED_ENV: &str = "EMBEDDED_APISERVER_SEED";

/// How often [`Running::converge`] looks again.
const POLL: Duration = Duration::from_millis(20);

/// A kind of fault a [`round`](Running::round) deals; see the [module docs](self#the-faults).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Fault {
    /// Writes answered `500 Internal Server Error`.
    ServerErrors,
    /// Updates and patches answered `409 Conflict`.
    Conflicts,
    /// Every watch closed.
    DroppedWatches,
    /// History compacted: `410 Expired`, relists.
    Compaction,
    /// The server restarted.
    Restart,
    /// The leader aborted without releasing its Lease, and replaced.
    LeaderKilled,
}

impl Fault {
    const ALL: [Self; 6] = [
        Self::ServerErrors,
        Self::Conflicts,
        Self::DroppedWatches,
        Self::Compaction,
        Self::Restart,
        Self::LeaderKilled,
    ];
}

/// One replica, as the function given to [`Scenario::replicas`] gets it.
#[derive(Clone, Debug)]
pub struct Replica {
    name: String,
    url: String,
    kubeconfig: String,
    stop: CancellationToken,
}

impl Replica {
    /// Its name: `replica-0`, `replica-1`, ...; a replica started in place of a killed one
    /// gets the next number. Use it as the replica's identity in the Lease, so that the
    /// scenario can tell which one leads.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's URL.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A kubeconfig for the server, for clients that read one.
    #[must_use]
    pub fn kubeconfig_yaml(&self) -> &str {
        &self.kubeconfig
    }

    /// Cancelled when the replica must stop ([`Running::finish`]); a killed replica is
    /// aborted instead.
    #[must_use]
    pub fn stop(&self) -> CancellationToken {
        self.stop.clone()
    }
}

type Spawn = Arc<dyn Fn(Replica) -> BoxFuture<'static, ()> + Send + Sync>;

/// A scenario before it starts: its replicas, its Lease, its deadline. See the
/// [module docs](self).
#[must_use]
pub struct Scenario {
    server: ServerHandle,
    seed: u64,
    replicas: usize,
    spawn: Option<Spawn>,
    lease: Option<(String, String)>,
    deadline: Duration,
    resources: Vec<String>,
}

impl Scenario {
    /// A scenario on `server`, its seed from [`SEED_ENV`] or random.
    pub fn new(server: &ApiServer) -> Self {
        let seed = std::env::var(SEED_ENV)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| fastrand::u64(..));
        Self {
            server: server.handle(),
            seed,
            replicas: 0,
            spawn: None,
            lease: None,
            deadline: Duration::from_secs(60),
            resources: Vec::new(),
        }
    }

    /// Deals `500`s and `409`s only to writes of these resources (`configmaps`,
    /// `deployments.apps`): the ones the controller writes, and the test does not. Every
    /// write's, by default.
    pub fn faults_on<I, R>(mut self, resources: I) -> Self
    where
        I: IntoIterator<Item = R>,
        R: Into<String>,
    {
        self.resources = resources.into_iter().map(Into::into).collect();
        self
    }

    /// Uses `seed` instead (a test that always replays one).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Runs `count` replicas, each the future `replica` makes of its [`Replica`]; it should
    /// return soon after [`Replica::stop`] is cancelled.
    pub fn replicas<F, Fut>(mut self, count: usize, replica: F) -> Self
    where
        F: Fn(Replica) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.replicas = count;
        self.spawn = Some(Arc::new(move |r| Box::pin(replica(r))));
        self
    }

    /// The Lease the replicas campaign for (`namespace/name`), so that
    /// [`Fault::LeaderKilled`] finds the leader by its holder identity. Without it, that fault
    /// is never drawn.
    pub fn leader_lease(mut self, namespace: impl Into<String>, name: impl Into<String>) -> Self {
        self.lease = Some((namespace.into(), name.into()));
        self
    }

    /// How long [`converge`](Running::converge) and [`finish`](Running::finish) wait (60
    /// seconds by default).
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Starts the replicas, and prints the seed.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn start(self) -> Running {
        println!("scenario seed: {} (replay with {SEED_ENV}={})", self.seed, self.seed);
        let mut running = Running {
            server: self.server,
            seed: self.seed,
            rng: fastrand::Rng::with_seed(self.seed),
            spawn: self.spawn,
            lease: self.lease,
            deadline: self.deadline,
            resources: self.resources,
            replicas: Vec::new(),
            started: 0,
            undrawn: Vec::new(),
            report: Report::default(),
        };
        for _ in 0..self.replicas {
            running.start_replica();
        }
        running
    }
}

impl fmt::Debug for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scenario")
            .field("seed", &self.seed)
            .field("replicas", &self.replicas)
            .field("lease", &self.lease)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// A started scenario: its replicas run; deal faults, wait for convergence, then finish.
#[must_use = "finish it, so that its replicas stop and report"]
pub struct Running {
    server: ServerHandle,
    seed: u64,
    rng: fastrand::Rng,
    spawn: Option<Spawn>,
    lease: Option<(String, String)>,
    deadline: Duration,
    /// Where write faults go; anywhere when empty.
    resources: Vec<String>,
    replicas: Vec<(Replica, JoinHandle<()>)>,
    started: usize,
    /// The kinds not drawn since each was last drawn.
    undrawn: Vec<Fault>,
    report: Report,
}

/// What a scenario did: [`Running::finish`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// The seed.
    pub seed: u64,
    /// The faults dealt, by kind.
    pub faults: BTreeMap<Fault, usize>,
    /// The convergences waited for, and how long each took.
    pub converged: Vec<(String, Duration)>,
    /// Replicas started, those in place of killed ones included.
    pub replicas_started: usize,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seed {}: faults {:?}; {} replicas started",
            self.seed, self.faults, self.replicas_started
        )?;
        for (what, took) in &self.converged {
            write!(f, "; {what} in {} ms", took.as_millis())?;
        }
        Ok(())
    }
}

impl Running {
    /// The seed, for messages of the test's own.
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn start_replica(&mut self) {
        let Some(spawn) = &self.spawn else { return };
        let replica = Replica {
            name: format!("replica-{}", self.started),
            url: self.server.url(),
            kubeconfig: self.server.kubeconfig_yaml(),
            stop: CancellationToken::new(),
        };
        self.started += 1;
        let task = tokio::spawn(spawn(replica.clone()));
        self.replicas.push((replica, task));
    }

    /// Fails the test, naming the seed.
    #[track_caller]
    fn fail(&self, message: &str) -> ! {
        panic!("{message}\nscenario seed {} (replay with {SEED_ENV}={})", self.seed, self.seed)
    }

    /// Fails if a replica ended on its own (it returned or panicked before `finish`).
    async fn check_replicas(&mut self) {
        if let Some(index) = self.replicas.iter().position(|(_, task)| task.is_finished()) {
            let (replica, task) = self.replicas.remove(index);
            let how = match task.await {
                Ok(()) => "returned".to_owned(),
                Err(e) => match e.try_into_panic() {
                    Ok(panic) => format!("panicked: {}", panic_message(panic.as_ref())),
                    Err(e) => format!("was cancelled: {e}"),
                },
            };
            self.fail(&format!("replica {} {how} before the scenario finished", replica.name));
        }
    }

    /// Deals one round of one to three faults, drawn from the seed; returns them.
    ///
    /// # Panics
    ///
    /// When the server cannot restart (its port was taken).
    pub async fn round(&mut self) -> Vec<Fault> {
        let count = self.rng.usize(1..=3);
        let mut dealt = Vec::with_capacity(count);
        for _ in 0..count {
            let fault = self.draw();
            self.deal(fault).await;
            *self.report.faults.entry(fault).or_default() += 1;
            dealt.push(fault);
        }
        dealt
    }

    /// The next kind: each once before any twice.
    fn draw(&mut self) -> Fault {
        if self.undrawn.is_empty() {
            self.undrawn = Fault::ALL
                .into_iter()
                .filter(|f| *f != Fault::LeaderKilled || self.lease.is_some())
                .collect();
        }
        let index = self.rng.usize(..self.undrawn.len());
        self.undrawn.swap_remove(index)
    }

    /// Deals `fault` now.
    ///
    /// # Panics
    ///
    /// When the server cannot restart (its port was taken).
    pub async fn deal(&mut self, fault: Fault) {
        let n = self.rng.usize(1..=5);
        match fault {
            Fault::ServerErrors => {
                let verb = ["create", "update", "patch", "delete"][self.rng.usize(..4)];
                let failure = Failure::internal_error("etcdserver: request timed out").verb(verb);
                self.fail_writes(n, &failure);
            }
            Fault::Conflicts => {
                let verb = ["update", "patch"][self.rng.usize(..2)];
                let message = "the object has been modified; please apply your changes to the \
                               latest version and try again";
                self.fail_writes(n, &Failure::new(409, "Conflict", message).verb(verb));
            }
            Fault::DroppedWatches => {
                self.server.drop_watches();
            }
            Fault::Compaction => self.server.compact(),
            Fault::Restart => {
                let down = Duration::from_millis(self.rng.u64(50..=300));
                if let Err(e) = self.server.restart(down).await {
                    self.fail(&format!("the server did not restart: {e}"));
                }
            }
            Fault::LeaderKilled => self.kill_leader(),
        }
        tracing::info!(?fault, seed = self.seed, "scenario: fault dealt");
    }

    /// The next `n` writes `failure` matches fail, on one of the resources faults go to.
    fn fail_writes(&mut self, n: usize, failure: &Failure) {
        match self.resources.len() {
            0 => self.server.fail_next(n, failure.clone()),
            len => {
                let resource = &self.resources[self.rng.usize(..len)];
                self.server.fail_next(n, failure.clone().resource(resource));
            }
        }
    }

    /// Aborts the replica holding the Lease, and starts another in its place. Nothing when
    /// no replica holds it.
    fn kill_leader(&mut self) {
        let Some((namespace, name)) = &self.lease else { return };
        let gvr = GroupVersionResource::new("coordination.k8s.io", "v1", "leases");
        let holder = self
            .server
            .get(&gvr, namespace, name)
            .and_then(|lease| lease["spec"]["holderIdentity"].as_str().map(str::to_owned));
        let Some(index) = holder.and_then(|h| self.replicas.iter().position(|(r, _)| r.name == h))
        else {
            return;
        };
        let (replica, task) = self.replicas.remove(index);
        task.abort();
        tracing::info!(replica = %replica.name, "scenario: leader killed");
        self.start_replica();
    }

    /// Waits until `check` holds (`Ok`, or `true`), at most the scenario's deadline.
    ///
    /// # Panics
    ///
    /// When the deadline passes first, with `what`, the last state `check` described and the
    /// seed; when a replica ended on its own.
    pub async fn converge<O: crate::testing::Outcome>(
        &mut self,
        what: &str,
        check: impl Fn() -> O,
    ) {
        let start = tokio::time::Instant::now();
        loop {
            self.check_replicas().await;
            let Some(state) = check().failure() else {
                self.report.converged.push((what.to_owned(), start.elapsed()));
                return;
            };
            if start.elapsed() > self.deadline {
                self.fail(&format!("did not converge to {what} within {:?}{state}", self.deadline));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Stops every replica (cancels its stop signal) and waits for each to return, at most
    /// the deadline; says what the scenario did.
    ///
    /// # Panics
    ///
    /// When a replica panicked, or did not return by the deadline.
    pub async fn finish(mut self) -> Report {
        self.check_replicas().await;
        for (replica, _) in &self.replicas {
            replica.stop.cancel();
        }
        let replicas = std::mem::take(&mut self.replicas);
        for (replica, task) in replicas {
            match tokio::time::timeout(self.deadline, task).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    self.fail(&format!("replica {} failed while stopping: {e}", replica.name))
                }
                Err(_) => self.fail(&format!(
                    "replica {} did not stop within {:?} of being told to",
                    replica.name, self.deadline
                )),
            }
        }
        Report { seed: self.seed, replicas_started: self.started, ..self.report.clone() }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A test that failed before `finish`: no replica outlives it.
        for (_, task) in &self.replicas {
            task.abort();
        }
    }
}

impl fmt::Debug for Running {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Running")
            .field("seed", &self.seed)
            .field("replicas", &self.replicas.iter().map(|(r, _)| &r.name).collect::<Vec<_>>())
            .field("report", &self.report)
            .finish_non_exhaustive()
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}
