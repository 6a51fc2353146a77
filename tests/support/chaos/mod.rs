//! The chaos scenario: informers over real HTTP against the embedded API server while the
//! server's objects churn and the server misbehaves, then a check that nothing was lost.
//!
//! One [`SharedInformerFactory`] runs informers of pods, config maps and a custom resource
//! (`CronTab`). The pod informer carries several handlers: two plain ones, a slow one, one that
//! is removed mid-run and one added mid-run. A seeded driver creates, updates, deletes and
//! re-creates objects under a fixed pool of names across namespaces, and a seeded injector
//! drops, stalls and expires watches and fails, throttles and slows requests (`faults.rs` has
//! the table). The client's watch idle deadline is short, so stalled watches are found.
//!
//! A run is a number of epochs. In each, half way through, churn pauses until the pod cache
//! equals the server and a new handler is registered (it must first get that cache replayed);
//! three quarters through, the previous late handler (in the first epoch, one registered at
//! start) is removed while churn goes on (it must get nothing after the removal returned). At
//! the end of the epoch, faults stop, every watch is stalled and a last burst is written (only
//! the client's idle deadline can bring it to the informers), churn stops, and the scenario
//! waits, with a deadline, until every cache equals the server's objects and every handler's
//! last state of every object is the server's. What has not converged by then is lost. Handlers check the order of what they
//! receive as it arrives (`recorder.rs`).
//!
//! Beside that factory, three informers take other paths through the runtime over the same
//! objects, each from a factory of its own (`variants.rs`): one whose lists are streaming lists
//! (`sendInitialEvents`), one whose cache is in compact storage, and one restricted to two of
//! the four namespaces (streaming into compact storage). They are checked like the others,
//! the restricted one against the server's objects in its namespaces only; a compact object
//! that does not decode counts as lost. The faults reach them too, streaming lists cut and
//! stalled in their initial events among them.
//!
//! The server speaks plain HTTP/1.1, or TLS with HTTP/2 ([`Settings::tls`]), as a real API
//! server does: the same faults then reach the client as HTTP/2 streams reset mid-body,
//! connections closed under many streams at once, and streams that stall.
//!
//! Beside the informers, two replicas of a controller behind one Lease derive a Secret from
//! every config map, and the leader is stopped or loses its Lease at seeded points
//! (`controller.rs`): the derived
//! Secrets must converge too, and no two replicas may lead or reconcile at the same time.
//!
//! The server authenticates every request, and credentials rotate all through the run
//! (`credentials.rs`): each client reads a token file that is rewritten while the server stops
//! accepting the old token, except the informers' client over TLS, which presents short-lived
//! client certificates from an exec credential plugin, which expire mid-run. A leader's token
//! is revoked at seeded points, so that its renewals fail and it loses the Lease.
//!
//! `tests/chaos.rs` runs a CI-sized scenario over each; `cargo xtask soak --minutes N` runs
//! that test binary in a release build with `INFORMER_CHAOS_MINUTES=N`, an epoch a minute.

mod churn;
mod controller;
mod credentials;
mod faults;
mod objects;
mod recorder;
mod variants;
mod verify;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use embedded_apiserver::{ApiServer, ServerHandle, Traffic};
use informer_client::Client;
use informer_client::Config;
use informer_runtime::reflector::{BackoffConfig, ReflectorConfig};
use informer_runtime::shared_informer::{ResourceEventHandlerRegistration, SharedIndexInformer};
use informer_runtime::{GroupVersionResource, Resource, SharedInformerFactory};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};

pub use self::controller::Counts as ControllerCounts;
pub use self::credentials::Counts as CredentialCounts;
pub use self::objects::CronTab;
pub use self::variants::VariantCounts;

use self::churn::{Churn, Op};
use self::controller::Controllers;
use self::credentials::Credentials;
use self::faults::{HISTORY_LIMIT, Injector};
use self::recorder::Recorder;
use self::variants::Variants;
use self::verify::{Typed, Watched};

/// Replays a run: the seed it printed.
pub const SEED_ENV: &str = "INFORMER_CHAOS_SEED";
/// Runs for this many minutes, an epoch a minute, instead of the CI-sized length.
pub const MINUTES_ENV: &str = "INFORMER_CHAOS_MINUTES";

/// The client ends a watch that receives nothing for this long. Above the server's bookmark
/// interval, so that only stalled watches hit it.
const WATCH_IDLE: Duration = Duration::from_secs(2);
/// The client fails a list (or any other request) whose response sends nothing for this long:
/// what ends a stalled list.
const READ_IDLE: Duration = Duration::from_secs(2);
/// How often the server sends every watch a bookmark.
const BOOKMARK_INTERVAL: Duration = Duration::from_millis(500);
/// Objects written before the informers start, so that the first list has something in it.
const INITIAL_WRITES: u64 = 300;
/// The pause after each burst of writes: the load's shape, not a wait for anything.
const PACE: Duration = Duration::from_millis(15);
/// At most this many writes in a burst.
const BURST: usize = 16;
/// How long an epoch lasts in a timed run.
const EPOCH: Duration = Duration::from_secs(60);
/// The most problems a report describes in full; the rest are counted.
const EXAMPLES: usize = 20;
/// How often a wait for convergence looks again.
const POLL: Duration = Duration::from_millis(20);
/// How long the factory and the server get to shut down.
const SHUTDOWN: Duration = Duration::from_secs(30);

/// How long a run lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    /// `epochs` epochs of `writes` writes each.
    Writes {
        /// Number of epochs.
        epochs: u32,
        /// Writes per epoch.
        writes: u64,
    },
    /// An epoch a minute, for this many minutes.
    Minutes(u64),
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Seeds the churn, the faults and the pacing.
    pub seed: u64,
    /// How long the run lasts.
    pub length: Length,
    /// How long the caches and handlers get to converge once churn and faults stop.
    pub converge_within: Duration,
    /// Whether the server serves TLS, over which the client speaks HTTP/2 (ALPN), instead of
    /// plain HTTP/1.1.
    pub tls: bool,
}

impl Settings {
    /// `length` and a random seed, unless [`SEED_ENV`] gives the seed and [`MINUTES_ENV`] a
    /// number of minutes.
    ///
    /// # Errors
    ///
    /// When either variable is set but not a number.
    pub fn from_env(length: Length) -> Result<Self, String> {
        let number = |name: &str| match std::env::var(name) {
            Ok(value) if !value.trim().is_empty() => value
                .trim()
                .parse::<u64>()
                .map(Some)
                .map_err(|e| format!("{name}={value:?} is not a whole number: {e}")),
            _ => Ok(None),
        };
        let seed = number(SEED_ENV)?.unwrap_or_else(|| fastrand::u64(..));
        let length = number(MINUTES_ENV)?.map_or(length, Length::Minutes);
        Ok(Self { seed, length, converge_within: Duration::from_secs(60), tls: false })
    }
}

/// What a run did and what it lost.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The run's seed.
    pub seed: u64,
    /// Epochs completed.
    pub epochs: u32,
    /// Wall-clock time so far.
    pub elapsed: Duration,
    /// Writes by resource and operation.
    pub writes: BTreeMap<String, u64>,
    /// Faults injected, by kind.
    pub faults: BTreeMap<String, u64>,
    /// List and watch failures the informers reported, by resource.
    pub informer_errors: BTreeMap<String, u64>,
    /// Notifications (and tombstones among them) each handler received.
    pub handler_events: BTreeMap<String, (u64, u64)>,
    /// Notifications that broke a handler's rules (order, a change lost, after removal).
    pub violations: u64,
    /// Reads of compact caches that found an object they could not decode.
    pub decode_failures: u64,
    /// What each informer of `variants.rs` (streaming list, compact, namespace set) did.
    pub variants: BTreeMap<String, VariantCounts>,
    /// Objects or caches that had not converged when the deadline passed.
    pub unconverged: u64,
    /// What the server served, by protocol (whether the client really spoke HTTP/2).
    pub traffic: Traffic,
    /// What the controller with leader election did (`controller.rs`).
    pub controller: ControllerCounts,
    /// Credentials rotated, and requests the server refused (`credentials.rs`).
    pub credentials: CredentialCounts,
    /// The first few violations and unconverged states, described.
    pub examples: Vec<String>,
}

impl Report {
    /// What was lost: violations, unconverged states, compact objects that did not decode,
    /// and reconciles or terms of two leaders at once. Zero for a clean run.
    #[must_use]
    pub fn lost(&self) -> u64 {
        self.violations + self.unconverged + self.decode_failures + self.controller.overlaps()
    }

    fn note(&mut self, problems: impl IntoIterator<Item = String>) {
        for problem in problems {
            if self.examples.len() < EXAMPLES {
                self.examples.push(problem);
            }
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total: u64 = self.writes.values().sum();
        writeln!(
            f,
            "chaos: seed {} | {} epochs in {:.1?} | {total} writes",
            self.seed, self.epochs, self.elapsed
        )?;
        let traffic = &self.traffic;
        writeln!(
            f,
            "  requests: {} over HTTP/1.1, {} over HTTP/2 ({} TLS connections, at most {} \
             requests at once on one)",
            traffic.http1_requests,
            traffic.http2_requests,
            traffic.tls_connections,
            traffic.max_open_streams
        )?;
        let list = |map: &BTreeMap<String, u64>| {
            map.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
        };
        writeln!(f, "  writes: {}", list(&self.writes))?;
        let faults: u64 = self.faults.values().sum();
        writeln!(f, "  faults: {faults} ({})", list(&self.faults))?;
        writeln!(f, "  informer list/watch errors: {}", list(&self.informer_errors))?;
        let handlers: Vec<String> = self
            .handler_events
            .iter()
            .map(|(name, (events, tombstones))| {
                format!("{name} {events} ({tombstones} tombstones)")
            })
            .collect();
        writeln!(f, "  handler events: {}", handlers.join(", "))?;
        for (name, counts) in &self.variants {
            writeln!(f, "  {name}: {counts}")?;
        }
        writeln!(f, "  {}", self.controller)?;
        writeln!(f, "  {}", self.credentials)?;
        write!(
            f,
            "  lost: {} ({} rule violations, {} unconverged, {} decode failures)",
            self.lost(),
            self.violations,
            self.unconverged,
            self.decode_failures
        )?;
        for example in &self.examples {
            write!(f, "\n    {example}")?;
        }
        Ok(())
    }
}

/// The running scenario.
struct Scenario {
    settings: Settings,
    server: ApiServer,
    factory: SharedInformerFactory<Client>,
    /// The informers taking other paths: streaming lists, compact storage, a namespace set.
    variants: Variants,
    /// The churned types, indexed like [`objects::kinds`] and like `informers`.
    kinds: [objects::Kind; 3],
    pods: Arc<Typed<Pod>>,
    informers: Vec<Arc<dyn Watched>>,
    /// Handlers still registered, with the index of their informer.
    active: Vec<(usize, Arc<Recorder>)>,
    /// Handlers removed so far, still checked for notifications after their removal.
    removed: Vec<Arc<Recorder>>,
    /// Pod handlers to remove, oldest first: one registered at start, then each late one.
    doomed: VecDeque<(Arc<Recorder>, ResourceEventHandlerRegistration<Pod>)>,
    /// Late handlers and the pod cache when each was registered.
    late: Vec<(Arc<Recorder>, HashMap<String, u64>)>,
    churn: Churn,
    injector: Injector,
    /// The replicas of a controller behind a Lease.
    controllers: Controllers,
    /// The token files and the exec plugin's certificates, rotating.
    credentials: Credentials,
    pacing: fastrand::Rng,
    started: Instant,
    report: Report,
}

/// Runs the scenario; prints the seed first and the counts after every epoch.
///
/// # Panics
///
/// When the scenario cannot be set up: no free port, the CRD refused, the informers not synced
/// within [`Settings::converge_within`]. Losses are not panics: they are in the report.
pub async fn run(settings: Settings) -> Report {
    let seed = settings.seed;
    let transport = if settings.tls { "TLS (HTTP/2)" } else { "plain HTTP/1.1" };
    println!(
        "chaos: seed {seed} (replay with {SEED_ENV}={seed}), {:?}, over {transport}",
        settings.length
    );
    let mut scenario = Scenario::start(settings).await;
    let epochs = match scenario.settings.length {
        Length::Writes { epochs, .. } => epochs,
        Length::Minutes(minutes) => u32::try_from(minutes).unwrap_or(u32::MAX),
    };
    for _ in 0..epochs {
        scenario.epoch().await;
        scenario.count();
        println!("{}", scenario.report);
    }
    scenario.stop().await
}

/// Seeds of the scenario's independent random streams, derived from the run's seed.
fn stream(seed: u64, salt: u64) -> u64 {
    seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Registers `recorder` with `informer`.
fn register<K: Resource>(
    informer: &SharedIndexInformer<K>,
    recorder: &Arc<Recorder>,
) -> ResourceEventHandlerRegistration<K> {
    informer
        .add_event_handler(Arc::clone(recorder))
        .unwrap_or_else(|e| panic!("chaos: {}: {e}", recorder.name()))
}

/// How far an epoch has come.
enum Progress {
    Writes { from: u64, writes: u64 },
    Time { from: Instant },
}

impl Progress {
    /// Whether at least `quarters` quarters of the epoch are done.
    fn reached(&self, churn: &Churn, quarters: u32) -> bool {
        match *self {
            Self::Writes { from, writes } => {
                (churn.total() - from) * 4 >= writes * u64::from(quarters)
            }
            Self::Time { from } => from.elapsed() * 4 >= EPOCH * quarters,
        }
    }
}

impl Scenario {
    async fn start(settings: Settings) -> Self {
        // Client 0 is the informers' client, client i + 1 replica i.
        let mut credentials = Credentials::new(stream(settings.seed, 5), 1 + controller::REPLICAS);
        let server = ApiServer::builder()
            .bookmark_interval(Some(BOOKMARK_INTERVAL))
            .history_limit(HISTORY_LIMIT)
            .tls(settings.tls)
            .bearer_tokens(credentials.first_tokens())
            .client_certificates(settings.tls)
            .start()
            .await
            .unwrap_or_else(|e| panic!("chaos: the embedded API server did not start: {e}"));
        let crds =
            GroupVersionResource::new("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        let crd = embedded_apiserver::testing::crontab_crd(objects::CRONTAB_GROUP, "Namespaced");
        if let Err(status) = server.create(&crds, crd) {
            panic!("chaos: the CronTab CRD was refused: {status}");
        }
        let kinds = objects::kinds();
        let mut churn = Churn::new(stream(settings.seed, 1), kinds.len());
        for _ in 0..INITIAL_WRITES {
            churn.step(&server, &kinds);
        }

        let url = server.url().parse().unwrap_or_else(|e| panic!("chaos: server URL: {e}"));
        let mut config =
            Config::new(url).watch_idle_timeout(WATCH_IDLE).read_idle_timeout(READ_IDLE);
        config.root_certs_pem = server.ca_pem().map(|pem| pem.as_bytes().to_vec());
        // Each replica reads a token file of its own; the informers present the exec plugin's
        // short-lived certificates over TLS (client certificates need it), else read a token
        // file too.
        credentials.start(&server.handle(), settings.tls);
        let replicas = (0..controller::REPLICAS)
            .map(|i| {
                let mut replica = config.clone();
                replica.auth = credentials.token_auth(i + 1);
                replica
            })
            .collect();
        config.auth =
            if settings.tls { credentials.exec_auth() } else { credentials.token_auth(0) };
        let revoker = credentials.revoker(&server.handle());
        let controllers = Controllers::start(replicas, stream(settings.seed, 4), revoker);
        let client = Client::new(config).unwrap_or_else(|e| panic!("chaos: client: {e}"));
        // Fast retries, so that a run sees many; a Retry-After of a second is still honoured.
        let backoff = BackoffConfig {
            initial: Duration::from_millis(10),
            max: Duration::from_secs(1),
            ..BackoffConfig::default()
        };
        let reflector = ReflectorConfig::default().backoff(backoff);
        let variants = Variants::new(&client, &reflector, &kinds);
        let factory = SharedInformerFactory::builder(client).reflector_config(reflector).build();
        let [pods, config_maps, crontabs] = &kinds;
        let pods = Arc::new(Typed::<Pod>::new(&factory, pods.name, pods.gvr.clone()));
        let config_maps =
            Typed::<ConfigMap>::new(&factory, config_maps.name, config_maps.gvr.clone());
        let crontabs = Typed::<CronTab>::new(&factory, crontabs.name, crontabs.gvr.clone());

        let mut active = Vec::new();
        for recorder in
            [Recorder::new("pods/a"), Recorder::new("pods/b"), Recorder::slow("pods/slow")]
        {
            register(&pods.informer, &recorder);
            active.push((0, recorder));
        }
        let doomed = Recorder::new("pods/removed-at-start");
        let doomed_registration = register(&pods.informer, &doomed);
        active.push((0, Arc::clone(&doomed)));
        let recorder = Recorder::new("configmaps/a");
        register(&config_maps.informer, &recorder);
        active.push((1, recorder));
        let recorder = Recorder::new("crontabs/a");
        register(&crontabs.informer, &recorder);
        active.push((2, recorder));

        factory.start();
        let synced = factory.wait_for_cache_sync(settings.converge_within).await;
        assert!(synced.all_synced(), "chaos: not synced: {:?}", synced.not_synced());
        variants.start(settings.converge_within).await;
        let mut informers: Vec<Arc<dyn Watched>> =
            vec![Arc::clone(&pods) as Arc<dyn Watched>, Arc::new(config_maps), Arc::new(crontabs)];
        for (watched, recorder) in variants.watched() {
            active.push((informers.len(), recorder));
            informers.push(watched);
        }
        let seed = settings.seed;
        Self {
            server,
            factory,
            variants,
            kinds,
            pods,
            informers,
            active,
            removed: Vec::new(),
            doomed: VecDeque::from([(doomed, doomed_registration)]),
            late: Vec::new(),
            churn,
            controllers,
            credentials,
            injector: Injector::new(stream(seed, 2)),
            pacing: fastrand::Rng::with_seed(stream(seed, 3)),
            started: Instant::now(),
            report: Report { seed, ..Report::default() },
            settings,
        }
    }

    fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// Churn and faults, a late handler half way, a removal three quarters of the way, then
    /// quiescence and the check.
    async fn epoch(&mut self) {
        let progress = match self.settings.length {
            Length::Writes { writes, .. } => Progress::Writes { from: self.churn.total(), writes },
            Length::Minutes(_) => Progress::Time { from: Instant::now() },
        };
        let server = self.handle();
        let (mut added, mut removed) = (false, false);
        while !progress.reached(&self.churn, 4) {
            if !added && progress.reached(&self.churn, 2) {
                added = true;
                self.add_late_handler().await;
            }
            if !removed && progress.reached(&self.churn, 3) {
                removed = true;
                self.remove_handler();
            }
            for _ in 0..self.pacing.usize(1..=BURST) {
                self.churn.step(&server, &self.kinds);
            }
            self.controllers.step();
            self.injector.after_burst(&server);
            tokio::time::sleep(PACE).await;
        }
        self.injector.quiesce(&server);
        // The last changes, which the stalled watches do not deliver.
        for _ in 0..BURST {
            self.churn.step(&server, &self.kinds);
        }
        let problems = self.converge().await;
        self.report.unconverged += problems.len() as u64;
        self.report.note(problems);
        self.report.epochs += 1;
    }

    /// Pauses churn until the pod cache equals the server, then registers a handler that must
    /// first get exactly that cache replayed.
    async fn add_late_handler(&mut self) {
        let server = self.handle();
        let deadline = Instant::now() + self.settings.converge_within;
        loop {
            let differences = self.pods.cache_differences(&server);
            if differences.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                self.report.unconverged += differences.len() as u64;
                let before = differences.into_iter().map(|d| format!("before a late handler: {d}"));
                self.report.note(before);
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        let snapshot = self.pods.served_versions(&server);
        let recorder = Recorder::late(format!("pods/late-{}", self.report.epochs + 1));
        let registration = register(&self.pods.informer, &recorder);
        self.active.push((0, Arc::clone(&recorder)));
        self.late.push((Arc::clone(&recorder), snapshot));
        self.doomed.push_back((recorder, registration));
    }

    /// Removes the oldest doomed handler while churn goes on.
    fn remove_handler(&mut self) {
        let Some((recorder, registration)) = self.doomed.pop_front() else { return };
        self.pods.informer.remove_event_handler(&registration);
        recorder.mark_removed();
        self.active.retain(|(_, r)| !Arc::ptr_eq(r, &recorder));
        self.removed.push(recorder);
    }

    /// Waits until every cache equals the server and every registered handler's last states
    /// are the server's; returns what still differs at the deadline.
    async fn converge(&self) -> Vec<String> {
        let deadline = Instant::now() + self.settings.converge_within;
        loop {
            let problems = self.differences();
            if problems.is_empty() || Instant::now() > deadline {
                return problems;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    fn differences(&self) -> Vec<String> {
        let server = self.handle();
        let mut problems = Vec::new();
        for (index, informer) in self.informers.iter().enumerate() {
            problems.extend(informer.cache_differences(&server));
            let versions = informer.served_versions(&server);
            for (_, recorder) in self.active.iter().filter(|(i, _)| *i == index) {
                let differences = recorder.differences(&versions);
                let name = recorder.name();
                problems.extend(differences.into_iter().map(|d| format!("{name}: {d}")));
            }
        }
        for (recorder, snapshot) in self.late.iter().filter(|(r, _)| !r.is_removed()) {
            let replay = recorder.replay_differences(snapshot).unwrap_or_default();
            let name = recorder.name();
            problems.extend(replay.into_iter().map(|d| format!("{name}: {d}")));
        }
        problems.extend(controller::differences(&server));
        problems
    }

    /// Brings the report's counts up to date.
    fn count(&mut self) {
        let report = &mut self.report;
        report.elapsed = self.started.elapsed();
        report.traffic = self.server.traffic();
        report.writes = self
            .churn
            .counts
            .iter()
            .map(|((kind, op), n)| (format!("{kind} {}", op_name(*op)), *n))
            .collect();
        report.faults =
            self.injector.counts().into_iter().map(|(name, n)| (name.to_owned(), n)).collect();
        report.controller = self.controllers.counts();
        report.credentials = self.credentials.counts(&self.server.handle());
        report.informer_errors =
            self.informers.iter().map(|i| (i.name().to_owned(), i.errors())).collect();
        report.decode_failures = self.informers.iter().map(|i| i.decode_failures()).sum();
        report.variants = self.variants.counts();
        // Recorders count their violations from the start: the total replaces, not adds.
        report.violations = 0;
        for recorder in self.active.iter().map(|(_, r)| r).chain(&self.removed) {
            let counts = (recorder.events(), recorder.tombstones());
            report.handler_events.insert(recorder.name().to_owned(), counts);
            let (count, described) = recorder.violations();
            report.violations += count;
            let name = recorder.name();
            let new: Vec<String> = described
                .into_iter()
                .map(|d| format!("{name}: {d}"))
                .filter(|d| !report.examples.contains(d))
                .collect();
            report.note(new);
        }
    }

    async fn stop(mut self) -> Report {
        let late = self.controllers.stop(SHUTDOWN).await;
        self.report.unconverged += late.len() as u64;
        self.report.note(late);
        self.credentials.stop().await;
        self.count();
        if tokio::time::timeout(SHUTDOWN, self.factory.shutdown()).await.is_err() {
            self.report.unconverged += 1;
            self.report.note([format!("the factory did not shut down within {SHUTDOWN:?}")]);
        }
        for name in self.variants.shutdown(SHUTDOWN).await {
            self.report.unconverged += 1;
            self.report.note([format!("{name}'s factory did not shut down within {SHUTDOWN:?}")]);
        }
        match tokio::time::timeout(SHUTDOWN, self.server.shutdown()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.report.note([format!("the server's shutdown failed: {e}")]),
            Err(_) => {
                self.report.note([format!("the server did not shut down within {SHUTDOWN:?}")]);
            }
        }
        self.report
    }
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Create => "creates",
        Op::Recreate => "re-creates",
        Op::Update => "updates",
        Op::Delete => "deletes",
        Op::DeleteAndRecreate => "delete+create",
    }
}
