//! Leader election through a `coordination.k8s.io/v1` Lease: client-go's
//! `tools/leaderelection`, so that of several replicas of a controller one works at a time.
//!
//! **Who it is for.** Controllers run in several replicas for availability, which must not act
//! twice on one object.
//!
//! Every candidate tries to take the Lease every `retry_period` (jittered). The holder renews
//! it every `retry_period`; the others consider it held while they have seen it change within
//! `lease_duration`, measured on their own clocks from when they saw it change (never by the
//! times written in it: the candidates' clocks need not agree). Writes are conditional on the
//! Lease's `resourceVersion`, so two candidates racing for it cannot both win.
//!
//! **The guarantee.** A leader that cannot renew for `renew_deadline` stops leading: its
//! `lead` future is told to stop (its token is cancelled) and is dropped if it has not returned
//! by the time another candidate could take over. Since `renew_deadline < lease_duration`, and
//! the others wait `lease_duration` from their last sight of a renewal, the old leader's work
//! has stopped before a new leader's starts, as long as the clocks run at the same rate (not
//! the same time). A leader stopped on purpose releases the Lease (unless told not to), so
//! another candidate takes over at its next try instead of waiting for the Lease to expire.
//!
//! ```no_run
//! use std::time::Duration;
//! use informer_client::Client;
//! use informer_controller::controller::stop_on_signal;
//! use informer_controller::leader_election::{LeaderElection, Leadership};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::try_default()?;
//! let identity = std::env::var("POD_NAME")?; // unique per replica
//! let election = LeaderElection::builder(client, "kube-system", "my-controller", identity).build()?;
//! let outcome = election
//!     .run(stop_on_signal(), |leading| async move {
//!         // Work until `leading` is cancelled, e.g. Controller::run(reconcile, leading).
//!         leading.cancelled().await;
//!     })
//!     .await;
//! if outcome == Leadership::Lost {
//!     std::process::exit(1); // as client-go's controllers do: restart and campaign again
//! }
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use informer_runtime::clock::{Random, SharedClock, TokioClock};

use crate::write::ApiWriter;

/// client-go's `JitterFactor`: a candidate waits `retry_period × (1 + 1.2 × random)` between
/// two tries to acquire.
const JITTER_FACTOR: f64 = 1.2;

/// Settings a leader election cannot work with.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaderElectionError {
    /// The durations do not leave a leader time to stop before another takes over.
    #[error(
        "leader election {lease}: {problem} (lease_duration {lease_duration:?}, renew_deadline \
         {renew_deadline:?}, retry_period {retry_period:?}; client-go's defaults are 15 s, 10 s, 2 s)"
    )]
    Durations {
        /// `namespace/name` of the Lease.
        lease: String,
        /// Which rule they break.
        problem: &'static str,
        /// The lease duration asked for.
        lease_duration: Duration,
        /// The renew deadline asked for.
        renew_deadline: Duration,
        /// The retry period asked for.
        retry_period: Duration,
    },
    /// The identity is empty: it is what the Lease names as holder.
    #[error(
        "leader election {lease}: the identity is empty; use something unique per replica, such as the pod's name"
    )]
    EmptyIdentity {
        /// `namespace/name` of the Lease.
        lease: String,
    },
}

/// How [`LeaderElection::run`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leadership {
    /// `stop` came before this candidate acquired the Lease.
    NotAcquired,
    /// `stop` came while leading: the work was told to stop and returned, and the Lease was
    /// released (unless [`release_on_cancel`](LeaderElectionBuilder::release_on_cancel) is off).
    Released,
    /// The `lead` future returned on its own; the Lease was released as for `Released`.
    Finished,
    /// Renewals failed for `renew_deadline`: the work was told to stop, and dropped if it had
    /// not returned before another candidate could take over. client-go's controllers exit then,
    /// to start afresh.
    Lost,
}

/// Options of a [`LeaderElection`], from [`LeaderElection::builder`].
#[must_use]
pub struct LeaderElectionBuilder {
    client: Arc<dyn ApiWriter>,
    namespace: String,
    name: String,
    identity: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    release_on_cancel: bool,
    clock: SharedClock,
    random: Random,
}

impl LeaderElectionBuilder {
    /// How long the others wait from their last sight of a renewal before they take the Lease
    /// (15 s by default, as client-go's controllers).
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// How long a leader keeps leading without a successful renewal (10 s by default); less
    /// than the lease duration.
    pub fn renew_deadline(mut self, deadline: Duration) -> Self {
        self.renew_deadline = deadline;
        self
    }

    /// How often the leader renews and the others try to acquire (2 s by default).
    pub fn retry_period(mut self, period: Duration) -> Self {
        self.retry_period = period;
        self
    }

    /// Whether a leader that stops on purpose empties the Lease, so that another candidate
    /// takes over at once (true by default; client-go's `ReleaseOnCancel`).
    pub fn release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// The clock the durations are measured on; tokio's by default. Tests step a
    /// `testing::FakeClock`.
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The source of the retry jitter.
    pub fn random(mut self, random: Random) -> Self {
        self.random = random;
        self
    }

    /// The election, its settings checked as client-go checks them.
    ///
    /// # Errors
    ///
    /// [`LeaderElectionError`] when `lease_duration ≤ renew_deadline`, when
    /// `renew_deadline ≤ 1.2 × retry_period`, when a duration is zero or the lease duration is
    /// not a whole number of seconds of at least one (the Lease holds seconds), or when the
    /// identity is empty.
    pub fn build(self) -> Result<LeaderElection, LeaderElectionError> {
        let lease = format!("{}/{}", self.namespace, self.name);
        let problem = if self.retry_period.is_zero() {
            Some("retry_period must be positive")
        } else if self.lease_duration <= self.renew_deadline {
            Some("lease_duration must be greater than renew_deadline")
        } else if self.renew_deadline.as_secs_f64()
            <= JITTER_FACTOR * self.retry_period.as_secs_f64()
        {
            Some("renew_deadline must be greater than 1.2 × retry_period")
        } else if self.lease_duration.subsec_nanos() != 0
            || i32::try_from(self.lease_duration.as_secs()).is_err()
        {
            Some("lease_duration must be a whole number of seconds that fits a Lease")
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(LeaderElectionError::Durations {
                lease,
                problem,
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
            });
        }
        if self.identity.is_empty() {
            return Err(LeaderElectionError::EmptyIdentity { lease });
        }
        let (leader, _) = watch::channel(None);
        Ok(LeaderElection {
            inner: Arc::new(Inner {
                client: self.client,
                namespace: self.namespace,
                name: self.name,
                identity: self.identity,
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
                release_on_cancel: self.release_on_cancel,
                clock: self.clock,
                random: self.random,
                observed: Mutex::new(None),
                leader,
            }),
        })
    }
}

/// One candidate in the election for one Lease; see the [module docs](self).
#[derive(Clone)]
pub struct LeaderElection {
    inner: Arc<Inner>,
}

struct Inner {
    client: Arc<dyn ApiWriter>,
    namespace: String,
    name: String,
    identity: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    release_on_cancel: bool,
    clock: SharedClock,
    random: Random,
    /// The Lease as last seen, and when (on this candidate's clock).
    observed: Mutex<Option<Observed>>,
    /// The holder as last seen.
    leader: watch::Sender<Option<String>>,
}

/// What a candidate knows of the Lease.
#[derive(Clone)]
struct Observed {
    holder: Option<String>,
    lease_duration: Duration,
    transitions: i32,
    acquired: Option<MicroTime>,
    renewed: Option<MicroTime>,
    /// When this candidate saw the record above change.
    at: Instant,
}

impl Observed {
    fn of(spec: Option<&LeaseSpec>, at: Instant) -> Self {
        let spec = spec.cloned().unwrap_or_default();
        Self {
            holder: spec.holder_identity.filter(|h| !h.is_empty()),
            lease_duration: Duration::from_secs(
                u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0),
            ),
            transitions: spec.lease_transitions.unwrap_or(0),
            acquired: spec.acquire_time,
            renewed: spec.renew_time,
            at,
        }
    }

    /// The same record, whenever it was seen.
    fn same_record(&self, other: &Self) -> bool {
        (&self.holder, self.lease_duration, self.transitions, &self.acquired, &self.renewed)
            == (
                &other.holder,
                other.lease_duration,
                other.transitions,
                &other.acquired,
                &other.renewed,
            )
    }
}

impl LeaderElection {
    /// A candidate named `identity` for the Lease `namespace/name` (created when missing).
    pub fn builder(
        client: impl ApiWriter,
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> LeaderElectionBuilder {
        LeaderElectionBuilder {
            client: Arc::new(client),
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: true,
            clock: Arc::new(TokioClock),
            random: Random::default(),
        }
    }

    /// This candidate's identity.
    #[must_use]
    pub fn identity(&self) -> &str {
        &self.inner.identity
    }

    /// The holder of the Lease as this candidate last saw it (client-go's `OnNewLeader`): wait
    /// on [`changed`](watch::Receiver::changed) to hear of each new leader.
    #[must_use]
    pub fn leader(&self) -> watch::Receiver<Option<String>> {
        self.inner.leader.subscribe()
    }

    /// Whether this candidate holds the Lease, as it last saw it.
    #[must_use]
    pub fn is_leader(&self) -> bool {
        self.inner.observed.lock().as_ref().and_then(|o| o.holder.as_deref())
            == Some(self.inner.identity.as_str())
    }

    /// Campaigns until this candidate leads, then runs `lead` while it leads; returns when
    /// `stop` is cancelled, when `lead` returns, or when leadership is lost. See [`Leadership`].
    ///
    /// `lead` gets a token cancelled when it must stop: return soon after. One that has not
    /// returned by the time another candidate could take over is dropped.
    pub async fn run<F, Fut>(&self, stop: CancellationToken, lead: F) -> Leadership
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()>,
    {
        let lease = self.lease_name();
        let Some(acquired) = self.acquire(&stop).await else { return Leadership::NotAcquired };
        let renewed = Mutex::new(acquired);
        tracing::info!(lease, identity = %self.inner.identity, "acquired the lease: leading");
        let leading = CancellationToken::new();
        let work = lead(leading.clone());
        tokio::pin!(work);
        let renewals = self.keep_renewing(acquired, &renewed);
        tokio::pin!(renewals);
        let mut outcome = tokio::select! {
            () = &mut work => Leadership::Finished,
            () = stop.cancelled() => Leadership::Released,
            () = &mut renewals => Leadership::Lost,
        };
        leading.cancel();
        if outcome == Leadership::Released {
            // Keep renewing while the work winds down: the lease stays ours until it is done.
            tokio::select! {
                () = &mut work => {}
                () = &mut renewals => outcome = Leadership::Lost,
            }
        }
        if outcome == Leadership::Lost {
            tracing::error!(lease, identity = %self.inner.identity, "could not renew the lease: stopping");
            // Another candidate may take over `lease_duration` after it last saw a renewal, which
            // was no earlier than ours: the work must be gone by then.
            let left = self.time_left_before_takeover(*renewed.lock());
            if self.sleep_or(left, &mut work).await {
                tracing::error!(lease, "the work did not stop in time: dropped");
            }
            // No longer ours, whatever was seen last.
            *self.inner.observed.lock() = None;
            self.inner.leader.send_replace(None);
        } else if self.inner.release_on_cancel {
            self.release().await;
        }
        outcome
    }

    fn lease_name(&self) -> String {
        format!("{}/{}", self.inner.namespace, self.inner.name)
    }

    /// Tries to acquire every `retry_period` (jittered) until it does, then returns when the
    /// successful try started (the lease it wrote is at least that recent); `None` on `stop`.
    async fn acquire(&self, stop: &CancellationToken) -> Option<Instant> {
        loop {
            if stop.is_cancelled() {
                return None;
            }
            let started = self.inner.clock.now();
            let attempt = tokio::select! {
                acquired = self.try_acquire_or_renew() => acquired,
                () = stop.cancelled() => return None,
            };
            if attempt {
                return Some(started);
            }
            let jitter = 1.0 + JITTER_FACTOR * self.inner.random.next_f64();
            let wait = self.inner.retry_period.mul_f64(jitter);
            tokio::select! {
                () = self.inner.clock.sleep(wait) => {}
                () = stop.cancelled() => return None,
            }
        }
    }

    /// Renews every `retry_period`, from `renewed` (when the write that won the lease
    /// started); returns, with when the last successful renewal started, once no renewal
    /// succeeded for `renew_deadline`. Checked at the deadline itself, not a period after.
    async fn keep_renewing(&self, mut renewed: Instant, last: &Mutex<Instant>) {
        let clock = &self.inner.clock;
        let (deadline, period) = (self.inner.renew_deadline, self.inner.retry_period);
        let left = |renewed: Instant| {
            deadline.saturating_sub(clock.now().saturating_duration_since(renewed))
        };
        loop {
            clock.sleep(period.min(left(renewed))).await;
            if left(renewed).is_zero() {
                return;
            }
            // The write others see happens after this instant: time the lease from here.
            let started = clock.now();
            let attempt = tokio::select! {
                ok = self.try_acquire_or_renew() => ok,
                () = clock.sleep(left(renewed)) => false,
            };
            if attempt {
                renewed = started;
                *last.lock() = started;
            } else if left(renewed).is_zero() {
                return;
            } else {
                tracing::debug!(lease = self.lease_name(), "renewal failed; retrying");
            }
        }
    }

    /// How long others may still consider the lease ours: `lease_duration` from when our last
    /// successful write started, and nothing if the lease was seen held by someone else.
    fn time_left_before_takeover(&self, renewed: Instant) -> Duration {
        let ours = self.is_leader();
        let held = self.inner.clock.now().saturating_duration_since(renewed);
        if ours { self.inner.lease_duration.saturating_sub(held) } else { Duration::ZERO }
    }

    /// Waits for `work` at most `limit`; true when it had to be given up.
    async fn sleep_or<W: Future<Output = ()>>(
        &self,
        limit: Duration,
        work: &mut std::pin::Pin<&mut W>,
    ) -> bool {
        tokio::select! {
            () = work.as_mut() => false,
            () = self.inner.clock.sleep(limit) => true,
        }
    }

    /// One try (client-go's `tryAcquireOrRenew`): creates the Lease if it is missing, takes it
    /// if it is free or expired, renews it if it is ours.
    async fn try_acquire_or_renew(&self) -> bool {
        let inner = &self.inner;
        let (namespace, name) = (inner.namespace.as_str(), inner.name.as_str());
        let now = Timestamp::now();
        let seconds = i32::try_from(inner.lease_duration.as_secs()).unwrap_or(i32::MAX);
        let lease = match inner.client.get_lease(namespace, name).await {
            Ok(lease) => lease,
            Err(e) if e.is_not_found() => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(inner.name.clone()),
                        namespace: Some(inner.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(inner.identity.clone()),
                        lease_duration_seconds: Some(seconds),
                        acquire_time: Some(MicroTime(now)),
                        renew_time: Some(MicroTime(now)),
                        lease_transitions: Some(0),
                        ..LeaseSpec::default()
                    }),
                };
                return match inner.client.create_lease(namespace, &lease).await {
                    Ok(created) => {
                        self.observe(&created);
                        true
                    }
                    Err(e) => {
                        tracing::debug!(lease = self.lease_name(), error = %e, "creating the lease failed");
                        false
                    }
                };
            }
            Err(e) => {
                tracing::debug!(lease = self.lease_name(), error = %e, "reading the lease failed");
                return false;
            }
        };
        let seen = self.observe(&lease);
        let ours = seen.holder.as_deref() == Some(inner.identity.as_str());
        let expired = inner.clock.now().saturating_duration_since(seen.at) >= seen.lease_duration;
        if seen.holder.is_some() && !ours && !expired {
            return false;
        }
        let mut update = lease;
        update.spec = Some(LeaseSpec {
            holder_identity: Some(inner.identity.clone()),
            lease_duration_seconds: Some(seconds),
            acquire_time: if ours { seen.acquired.clone() } else { Some(MicroTime(now)) },
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(if ours {
                seen.transitions
            } else {
                seen.transitions.saturating_add(1)
            }),
            ..update.spec.unwrap_or_default()
        });
        // Conditional on the version read: of two candidates racing, one gets a 409.
        match inner.client.replace_lease(namespace, name, &update).await {
            Ok(updated) => {
                self.observe(&updated);
                true
            }
            Err(e) => {
                tracing::debug!(lease = self.lease_name(), error = %e, "updating the lease failed");
                false
            }
        }
    }

    /// Records the Lease as seen now (keeping when it was first seen if it did not change).
    fn observe(&self, lease: &Lease) -> Observed {
        let inner = &self.inner;
        let fresh = Observed::of(lease.spec.as_ref(), inner.clock.now());
        let mut observed = inner.observed.lock();
        let seen = match observed.as_ref() {
            Some(old) if old.same_record(&fresh) => old.clone(),
            _ => fresh,
        };
        *observed = Some(seen.clone());
        drop(observed);
        inner.leader.send_if_modified(|leader| {
            let changed = *leader != seen.holder;
            if changed {
                leader.clone_from(&seen.holder);
            }
            changed
        });
        seen
    }

    /// Empties the Lease if this candidate holds it, so that another takes over at once.
    async fn release(&self) {
        let inner = &self.inner;
        let (namespace, name) = (inner.namespace.as_str(), inner.name.as_str());
        let Ok(mut lease) = inner.client.get_lease(namespace, name).await else { return };
        let holder = lease.spec.as_ref().and_then(|s| s.holder_identity.as_deref());
        if holder != Some(inner.identity.as_str()) {
            return;
        }
        let now = Timestamp::now();
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.acquire_time = Some(MicroTime(now));
        spec.renew_time = Some(MicroTime(now));
        match inner.client.replace_lease(namespace, name, &lease).await {
            Ok(released) => {
                self.observe(&released);
                tracing::info!(lease = self.lease_name(), "released the lease");
            }
            Err(e) => {
                tracing::warn!(lease = self.lease_name(), error = %e, "releasing the lease failed; it expires on its own");
            }
        }
    }
}

impl fmt::Debug for LeaderElection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElection")
            .field("lease", &self.lease_name())
            .field("identity", &self.inner.identity)
            .finish_non_exhaustive()
    }
}
