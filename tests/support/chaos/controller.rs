//! A controller with leader election under the scenario's churn and faults: two replicas, each
//! with its own [`Client`] and [`LeaderElection`] on one Lease, reconcile every churned config
//! map into a derived Secret of the same name and namespace. The Secret is owned by its source
//! (an owner reference with `controller: true`, so [`Controller::owns`] brings a new leader the
//! Secrets of sources deleted while nobody led) and its annotations carry the source's uid and
//! resourceVersion: once churn stops, the server must hold a Secret for every config map, at
//! the config map's current version, and no other.
//!
//! The leader is disturbed at seeded points ([`Controllers::step`], a countdown in bursts drawn
//! from the seed), in one of two ways, drawn from the seed too: it is stopped, so it releases
//! the Lease, and campaigns again once another replica leads; or the server revokes its token
//! (`credentials.rs`), so its renewals fail with `401` until it gives up the lead at its renew
//! deadline, and another replica takes over once the Lease has expired; its token is accepted
//! again once another leads. Either way leadership changes hands. Every leadership term and every reconcile
//! is recorded by the replica doing it, with its start and end on the process's clock; two
//! records of different replicas that overlap in time are an overlap, which the guarantee of
//! leader election forbids.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use embedded_apiserver::ServerHandle;
use informer_client::{ClientError, Config};

use super::credentials::Revoker;
use informer_client::Client;
use informer_controller::controller::{Action, Controller, Request};
use informer_controller::leader_election::{LeaderElection, Leadership};
use informer_runtime::reflector::{BackoffConfig, ReflectorConfig};
use informer_runtime::{GroupVersionResource, Lister, SharedInformerFactory};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    DeleteOptions, ObjectMeta, OwnerReference, Preconditions,
};
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The Lease the replicas campaign for.
const LEASE: &str = "chaos-derive";
/// Where the Lease is.
const LEASE_NAMESPACE: &str = "default";
/// Lease duration, renew deadline and retry period: short, so that a run sees many terms, yet
/// long enough for the slowest injected responses (150 ms) and restarts (300 ms).
const LEASE_DURATION: Duration = Duration::from_secs(3);
const RENEW_DEADLINE: Duration = Duration::from_secs(2);
const RETRY_PERIOD: Duration = Duration::from_millis(250);
/// Reconciles in flight when a leader stops get this long: well within the second between the
/// renew deadline and the Lease's expiry, after which the work is dropped.
const STOP_RECONCILES: Duration = Duration::from_millis(500);
/// Workers per leader.
const WORKERS: usize = 2;
/// The leader is disturbed after a number of bursts drawn from this range (an epoch of the CI
/// length has about 600 bursts, a minute several thousand).
const DISTURB_EVERY: std::ops::Range<u32> = 100..300;
/// The annotation carrying the source's uid.
const SOURCE_UID: &str = "chaos.example.com/source-uid";
/// The annotation carrying the source's resourceVersion.
const SOURCE_VERSION: &str = "chaos.example.com/source-resource-version";
/// How many replicas campaign.
pub(crate) const REPLICAS: usize = 2;

/// What the controller did, for the report.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Leadership terms started.
    pub terms: u64,
    /// Terms that started on another replica than the term before.
    pub handovers: u64,
    /// Leaders stopped on purpose (the Lease released).
    pub stops: u64,
    /// Leaders whose token the server revoked (their renewals refused).
    pub revocations: u64,
    /// How [`LeaderElection::run`] ended, by outcome.
    pub outcomes: BTreeMap<String, u64>,
    /// Reconciles started.
    pub reconciles: u64,
    /// Reconciles that returned an error (retried by the controller).
    pub failed: u64,
    /// Writes the reconciles made, by verb.
    pub writes: BTreeMap<&'static str, u64>,
    /// Records of two replicas that overlap in time: terms, and reconciles.
    pub overlapping_terms: u64,
    /// Reconciles of one replica that overlap one of another replica.
    pub overlapping_reconciles: u64,
}

impl Counts {
    /// Overlaps of any kind: zero when leader election kept its promise.
    #[must_use]
    pub fn overlaps(&self) -> u64 {
        self.overlapping_terms + self.overlapping_reconciles
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list<K: fmt::Display>(map: &BTreeMap<K, u64>) -> String {
            map.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
        }
        write!(
            f,
            "controller: {} terms, {} handovers, {} leaders stopped, {} revoked (runs ended: \
             {}); {} \
             reconciles ({} failed), writes: {}; overlaps: {} terms, {} reconciles",
            self.terms,
            self.handovers,
            self.stops,
            self.revocations,
            list(&self.outcomes),
            self.reconciles,
            self.failed,
            list(&self.writes),
            self.overlapping_terms,
            self.overlapping_reconciles,
        )
    }
}

/// A span of time one replica did something in; `end` is `None` while it goes on.
#[derive(Clone, Copy)]
struct Span {
    replica: usize,
    start: Instant,
    end: Option<Instant>,
}

/// What the replicas record of themselves.
#[derive(Default)]
struct Records {
    inner: Mutex<Recorded>,
}

#[derive(Default)]
struct Recorded {
    terms: Vec<Span>,
    reconciles: Vec<Span>,
    failed: u64,
    writes: BTreeMap<&'static str, u64>,
    outcomes: BTreeMap<String, u64>,
}

/// Ends its span when dropped: a term or a reconcile ends however its future ends.
struct SpanGuard {
    records: Arc<Records>,
    term: bool,
    index: usize,
}

impl Drop for SpanGuard {
    fn drop(&mut self) {
        let mut inner = self.records.inner.lock();
        let spans = if self.term { &mut inner.terms } else { &mut inner.reconciles };
        spans[self.index].end = Some(Instant::now());
    }
}

impl Records {
    fn begin(self: &Arc<Self>, replica: usize, term: bool) -> SpanGuard {
        let mut inner = self.inner.lock();
        let spans = if term { &mut inner.terms } else { &mut inner.reconciles };
        spans.push(Span { replica, start: Instant::now(), end: None });
        SpanGuard { records: Arc::clone(self), term, index: spans.len() - 1 }
    }

    fn wrote(&self, verb: &'static str) {
        *self.inner.lock().writes.entry(verb).or_default() += 1;
    }
}

/// Spans that overlap a span of another replica: sorted by start, each is compared with the
/// latest end of every other replica's earlier spans (a span still open ends at `now`).
fn overlaps(spans: &[Span], now: Instant) -> u64 {
    let mut sorted = spans.to_vec();
    sorted.sort_by_key(|s| s.start);
    let mut latest_end: HashMap<usize, Instant> = HashMap::new();
    let mut count = 0;
    for span in sorted {
        if latest_end.iter().any(|(&r, &end)| r != span.replica && end > span.start) {
            count += 1;
        }
        let end = span.end.unwrap_or(now);
        let latest = latest_end.entry(span.replica).or_insert(end);
        *latest = (*latest).max(end);
    }
    count
}

/// One replica: its election, and its campaign while it runs.
struct Replica {
    client: Client,
    election: LeaderElection,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

/// The replicas, and the seeded disturbances of their leader.
pub(crate) struct Controllers {
    replicas: Vec<Replica>,
    records: Arc<Records>,
    rng: fastrand::Rng,
    /// Bursts left before the leader is disturbed.
    countdown: u32,
    /// A leader disturbed, how, and when: it is let go on once another one leads.
    disturbed: Option<(usize, Disturbance, Instant)>,
    stops: u64,
    revocations: u64,
    revoker: Revoker,
}

/// What is done to a leader.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Disturbance {
    /// Stopped: it releases the Lease.
    Stopped,
    /// Its token revoked: its renewals fail.
    Revoked,
}

impl Controllers {
    /// Starts a replica for each of `configs`, each with a client of its own; `revoker`
    /// revokes replica `i`'s token as client `i + 1`.
    pub(crate) fn start(configs: Vec<Config>, seed: u64, revoker: Revoker) -> Self {
        let records = Arc::new(Records::default());
        let replicas = configs
            .into_iter()
            .enumerate()
            .map(|(i, config)| {
                let client = Client::new(config)
                    .unwrap_or_else(|e| panic!("chaos: replica {i}'s client: {e}"));
                let election =
                    LeaderElection::builder(client.clone(), LEASE_NAMESPACE, LEASE, identity(i))
                        .lease_duration(LEASE_DURATION)
                        .renew_deadline(RENEW_DEADLINE)
                        .retry_period(RETRY_PERIOD)
                        .build()
                        .unwrap_or_else(|e| panic!("chaos: replica {i}: {e}"));
                let mut replica =
                    Replica { client, election, stop: CancellationToken::new(), task: None };
                campaign(i, &mut replica, &records);
                replica
            })
            .collect();
        let mut rng = fastrand::Rng::with_seed(seed);
        let countdown = rng.u32(DISTURB_EVERY);
        Self {
            replicas,
            records,
            rng,
            countdown,
            disturbed: None,
            stops: 0,
            revocations: 0,
            revoker,
        }
    }

    /// Called after every burst of churn: counts down to the next disturbance of the leader,
    /// and lets a disturbed replica go on once another one leads.
    pub(crate) fn step(&mut self) {
        if let Some((i, how, at)) = self.disturbed {
            let other_leads =
                self.records.inner.lock().terms.iter().any(|t| t.start > at && t.replica != i);
            let finished = self.replicas[i].task.as_ref().is_none_or(JoinHandle::is_finished);
            match how {
                Disturbance::Stopped if other_leads && finished => {
                    let replica = &mut self.replicas[i];
                    replica.stop = CancellationToken::new();
                    campaign(i, replica, &self.records);
                }
                Disturbance::Revoked if other_leads => self.revoker.restore(),
                _ => return,
            }
            self.disturbed = None;
            return;
        }
        self.countdown = self.countdown.saturating_sub(1);
        if self.countdown > 0 {
            return;
        }
        // Nobody leads just now (a handover under way): try again after the next burst.
        let Some(leader) = self.replicas.iter().position(|r| r.election.is_leader()) else {
            return;
        };
        let how = if self.rng.bool() { Disturbance::Stopped } else { Disturbance::Revoked };
        match how {
            Disturbance::Stopped => {
                self.replicas[leader].stop.cancel();
                self.stops += 1;
            }
            Disturbance::Revoked => {
                self.revoker.revoke(leader + 1);
                self.revocations += 1;
            }
        }
        self.disturbed = Some((leader, how, Instant::now()));
        self.countdown = self.rng.u32(DISTURB_EVERY);
    }

    /// The counts so far.
    pub(crate) fn counts(&self) -> Counts {
        let now = Instant::now();
        let inner = self.records.inner.lock();
        let mut terms = inner.terms.clone();
        terms.sort_by_key(|t| t.start);
        let handovers = terms.windows(2).filter(|w| w[0].replica != w[1].replica).count();
        Counts {
            terms: terms.len() as u64,
            handovers: handovers as u64,
            stops: self.stops,
            revocations: self.revocations,
            outcomes: inner.outcomes.clone(),
            reconciles: inner.reconciles.len() as u64,
            failed: inner.failed,
            writes: inner.writes.clone(),
            overlapping_terms: overlaps(&inner.terms, now),
            overlapping_reconciles: overlaps(&inner.reconciles, now),
        }
    }

    /// Stops every replica and waits for each, at most `within`; returns those that did not
    /// stop in time.
    pub(crate) async fn stop(&mut self, within: Duration) -> Vec<String> {
        let mut late = Vec::new();
        self.revoker.restore();
        for replica in &self.replicas {
            replica.stop.cancel();
        }
        for (i, replica) in self.replicas.iter_mut().enumerate() {
            let Some(task) = replica.task.take() else { continue };
            if tokio::time::timeout(within, task).await.is_err() {
                late.push(format!("controller: replica {i} did not stop within {within:?}"));
            }
        }
        late
    }
}

/// Where the derived Secrets on the server differ from what its config maps require.
pub(crate) fn differences(server: &ServerHandle) -> Vec<String> {
    let sources: BTreeMap<String, (String, String)> = server
        .objects(&GroupVersionResource::new("", "v1", "configmaps"))
        .iter()
        .filter_map(|cm| {
            let meta = &cm["metadata"];
            let key = format!("{}/{}", meta["namespace"].as_str()?, meta["name"].as_str()?);
            let uid = meta["uid"].as_str()?.to_owned();
            Some((key, (uid, meta["resourceVersion"].as_str()?.to_owned())))
        })
        .collect();
    let mut derived: BTreeMap<String, (String, String)> = server
        .objects(&GroupVersionResource::new("", "v1", "secrets"))
        .iter()
        .filter_map(|secret| {
            let meta = &secret["metadata"];
            let annotations = &meta["annotations"];
            let key = format!("{}/{}", meta["namespace"].as_str()?, meta["name"].as_str()?);
            let uid = annotations[SOURCE_UID].as_str()?.to_owned();
            Some((key, (uid, annotations[SOURCE_VERSION].as_str()?.to_owned())))
        })
        .collect();
    let mut out = Vec::new();
    for (key, source) in sources {
        match derived.remove(&key) {
            None => out.push(format!("controller: no Secret derived from config map {key}")),
            Some(secret) if secret != source => out.push(format!(
                "controller: Secret {key} derived from {secret:?}, the config map is {source:?} \
                 (uid, resourceVersion)"
            )),
            Some(_) => {}
        }
    }
    out.extend(
        derived
            .into_keys()
            .map(|key| format!("controller: Secret {key} left after its config map was deleted")),
    );
    out
}

fn identity(replica: usize) -> String {
    format!("chaos-replica-{replica}")
}

/// Starts `replica`'s campaign: leads whenever it wins the Lease, campaigns again after
/// losing it, until its `stop` token is cancelled.
fn campaign(index: usize, replica: &mut Replica, records: &Arc<Records>) {
    let (election, client, stop) =
        (replica.election.clone(), replica.client.clone(), replica.stop.clone());
    let records = Arc::clone(records);
    replica.task = Some(tokio::spawn(async move {
        while !stop.is_cancelled() {
            let outcome = election
                .run(stop.clone(), |leading| {
                    lead(index, client.clone(), Arc::clone(&records), leading)
                })
                .await;
            *records.inner.lock().outcomes.entry(format!("{outcome:?}")).or_default() += 1;
            if outcome == Leadership::NotAcquired {
                break;
            }
        }
    }));
}

/// What reconciles of one term share.
struct Context {
    replica: usize,
    client: Client,
    secrets: Lister<Secret>,
    records: Arc<Records>,
}

/// One term of leadership: a factory and a controller of its own, until `leading` is cancelled.
async fn lead(replica: usize, client: Client, records: Arc<Records>, leading: CancellationToken) {
    let _term = records.begin(replica, true);
    let backoff = BackoffConfig {
        initial: Duration::from_millis(10),
        max: Duration::from_secs(1),
        ..BackoffConfig::default()
    };
    let factory = SharedInformerFactory::builder(client.clone())
        .reflector_config(ReflectorConfig::default().backoff(backoff))
        .build();
    let context = Arc::new(Context {
        replica,
        client,
        secrets: factory.lister::<Secret>(),
        records: Arc::clone(&records),
    });
    let report = Controller::<ConfigMap, _>::new(&factory)
        .name(format!("chaos-derive-{replica}"))
        .owns::<Secret>()
        .workers(WORKERS)
        .shutdown_timeout(STOP_RECONCILES)
        .run(
            move |request| {
                let context = Arc::clone(&context);
                async move { reconcile(&context, request).await }
            },
            leading,
        )
        .await;
    factory.shutdown().await;
    match report {
        Ok(report) => records.inner.lock().failed += report.failed,
        Err(e) => panic!("chaos: replica {replica}'s controller did not run: {e}"),
    }
}

/// Makes the Secret derived from one config map what the config map requires: present with
/// the config map's uid and resourceVersion while it exists, gone once it does not.
async fn reconcile(cx: &Context, request: Request<ConfigMap>) -> Result<Action, ClientError> {
    let _span = cx.records.begin(cx.replica, false);
    let (namespace, name) = match request.key.split() {
        Ok((namespace, name)) => (namespace.to_owned(), name.to_owned()),
        Err(e) => panic!("chaos: a config map's key {}: {e}", request.key),
    };
    let current = cx.secrets.namespace(&namespace).get(&name).ok();
    let Some(source) = request.object else {
        if let Some(secret) = current {
            let options = DeleteOptions {
                preconditions: Some(Preconditions {
                    uid: secret.metadata.uid.clone(),
                    ..Preconditions::default()
                }),
                ..DeleteOptions::default()
            };
            match cx.client.delete_with::<Secret>(Some(&namespace), &name, &options).await {
                Ok(()) => cx.records.wrote("deletes"),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        return Ok(Action::Done);
    };
    let (uid, version) = (
        source.metadata.uid.clone().unwrap_or_default(),
        source.metadata.resource_version.clone().unwrap_or_default(),
    );
    let annotations = BTreeMap::from([
        (SOURCE_UID.to_owned(), uid.clone()),
        (SOURCE_VERSION.to_owned(), version),
    ]);
    let owner = OwnerReference {
        api_version: "v1".to_owned(),
        kind: "ConfigMap".to_owned(),
        name: name.clone(),
        uid,
        controller: Some(true),
        block_owner_deletion: None,
    };
    match current {
        Some(secret)
            if secret.metadata.annotations.as_ref() == Some(&annotations)
                && secret.metadata.owner_references.as_deref()
                    == Some(std::slice::from_ref(&owner)) => {}
        Some(secret) => {
            // The cached version goes with the update: a stale cache gets a 409, retried at once.
            let mut updated = (*secret).clone();
            updated.metadata.annotations = Some(annotations);
            updated.metadata.owner_references = Some(vec![owner]);
            cx.client.replace(Some(&namespace), &name, &updated).await?;
            cx.records.wrote("updates");
        }
        None => {
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(namespace.clone()),
                    annotations: Some(annotations),
                    owner_references: Some(vec![owner]),
                    ..ObjectMeta::default()
                },
                ..Secret::default()
            };
            // A 409 AlreadyExists: the cache is behind; retried at once.
            cx.client.create(Some(&namespace), &secret).await?;
            cx.records.wrote("creates");
        }
    }
    Ok(Action::Done)
}
