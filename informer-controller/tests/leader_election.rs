//! Leader election over real HTTP against the embedded API server, in virtual time: one of
//! three candidates leads; when its renewals fail it stops before another takes over; a killed
//! leader is replaced once its lease expires; a leader that stops releases the lease.
//!
//! Every candidate measures time on one `FakeClock` that the test steps by the retry period
//! (jitter off), and after each step the test waits until every candidate has finished its
//! request and sleeps again: the virtual times below are exact.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use embedded_apiserver::{ApiServer, Failure};
use informer_client::{Client, Config};
use informer_controller::leader_election::{LeaderElection, LeaderElectionError, Leadership};
use informer_runtime::clock::{Clock, Random};
use informer_runtime::testing::FakeClock;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const LEASE: Duration = Duration::from_secs(15);
/// A leader whose renewal is in flight waits for its deadline too: 7 s left after a renewal, more
/// than a candidate sleeping until its next try (at most the retry period) ever waits.
const RENEW: Duration = Duration::from_secs(9);
const RETRY: Duration = Duration::from_secs(2);
/// Real time a test may wait for the candidates' requests.
const DEADLINE: Duration = Duration::from_secs(20);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Event {
    Started(&'static str),
    Stopped(&'static str),
}

struct Harness {
    server: ApiServer,
    clock: FakeClock,
    start: Instant,
    log: Arc<Mutex<Vec<(Event, Duration)>>>,
    /// Candidates whose `run` has not returned.
    running: Arc<AtomicUsize>,
}

struct Candidate {
    election: LeaderElection,
    stop: CancellationToken,
    task: JoinHandle<Leadership>,
}

impl Harness {
    async fn new() -> Self {
        let clock = FakeClock::new();
        Self {
            server: ApiServer::start().await.unwrap(),
            start: clock.now(),
            clock,
            log: Arc::default(),
            running: Arc::default(),
        }
    }

    fn now(&self) -> Duration {
        self.clock.now().saturating_duration_since(self.start)
    }

    fn candidate(&self, identity: &'static str) -> Candidate {
        let client = Client::new(Config::new(self.server.url().parse().unwrap())).unwrap();
        let election = LeaderElection::builder(client, "default", "the-controller", identity)
            .lease_duration(LEASE)
            .renew_deadline(RENEW)
            .retry_period(RETRY)
            .clock(Arc::new(self.clock.clone()))
            .random(Random::fixed(0.0))
            .build()
            .unwrap();
        let stop = CancellationToken::new();
        let (log, clock, start) = (Arc::clone(&self.log), self.clock.clone(), self.start);
        let running = Arc::clone(&self.running);
        running.fetch_add(1, Ordering::SeqCst);
        let task = tokio::spawn({
            let (election, stop) = (election.clone(), stop.clone());
            async move {
                let outcome = election
                    .run(stop, |leading| async move {
                        log.lock().push((
                            Event::Started(identity),
                            clock.now().saturating_duration_since(start),
                        ));
                        leading.cancelled().await;
                        log.lock().push((
                            Event::Stopped(identity),
                            clock.now().saturating_duration_since(start),
                        ));
                    })
                    .await;
                running.fetch_sub(1, Ordering::SeqCst);
                outcome
            }
        });
        Candidate { election, stop, task }
    }

    /// Waits until every running candidate sleeps until its next try (one timer each, of at most
    /// the retry period), with nothing in flight.
    async fn idle(&self) {
        let idle = || {
            let timers = self.clock.pending_timers();
            timers.len() == self.running.load(Ordering::SeqCst)
                && timers.iter().all(|t| *t <= RETRY)
        };
        let wait = async {
            while !idle() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        };
        tokio::time::timeout(DEADLINE, wait).await.unwrap_or_else(|_| {
            panic!(
                "candidates not idle: timers {:?}, log {:?}",
                self.clock.pending_timers(),
                self.log.lock()
            )
        });
    }

    /// Steps `times` retry periods.
    async fn step(&self, times: usize) {
        for _ in 0..times {
            self.clock.step(RETRY);
            self.idle().await;
        }
    }

    /// Steps until `found` finds an event in the log (at most `limit` periods); returns when
    /// it happened.
    async fn step_until(&self, limit: usize, found: impl Fn(&Event) -> bool) -> Duration {
        for _ in 0..=limit {
            if let Some((_, at)) = self.log.lock().iter().find(|(e, _)| found(e)) {
                return *at;
            }
            self.clock.step(RETRY);
            self.idle().await;
        }
        panic!("not within {limit} periods: {:?}", self.log.lock());
    }

    fn leaders(&self) -> Vec<&'static str> {
        self.log
            .lock()
            .iter()
            .filter_map(|(e, _)| match e {
                Event::Started(id) => Some(*id),
                Event::Stopped(_) => None,
            })
            .collect()
    }
}

/// Three candidates, one leader.
async fn three(h: &Harness) -> Vec<Candidate> {
    let candidates: Vec<_> = ["a", "b", "c"].into_iter().map(|id| h.candidate(id)).collect();
    h.idle().await;
    assert_eq!(h.leaders().len(), 1, "{:?}", h.log.lock());
    candidates
}

/// Takes the leader out of `candidates`.
fn take_leader(h: &Harness, candidates: &mut Vec<Candidate>) -> Candidate {
    let leader = h.leaders()[0];
    let index = candidates.iter().position(|c| c.election.identity() == leader).unwrap();
    candidates.remove(index)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_of_three_candidates_leads_and_the_others_see_it() {
    let h = Harness::new().await;
    let candidates = three(&h).await;
    h.step(10).await; // 20 s: renewals keep it
    let leaders = h.leaders();
    assert_eq!(leaders.len(), 1, "one leader, never replaced: {:?}", h.log.lock());
    for candidate in &candidates {
        assert_eq!(candidate.election.leader().borrow().as_deref(), Some(leaders[0]));
        assert_eq!(candidate.election.is_leader(), candidate.election.identity() == leaders[0]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_renewals_fail_stops_before_another_takes_over() {
    let h = Harness::new().await;
    let mut candidates = three(&h).await;
    h.step(3).await;
    let old = take_leader(&h, &mut candidates);
    let old_id = old.election.identity().to_owned();
    // Only the leader writes the lease while it holds it: failing updates fails its renewals.
    let failing = h.now();
    h.server.fail_next(
        usize::MAX,
        Failure::internal_error("etcd is unavailable")
            .verb("update")
            .resource("leases.coordination.k8s.io"),
    );
    let stopped = h.step_until(10, |e| matches!(e, Event::Stopped(id) if *id == old_id)).await;
    h.server.clear_failures();
    let outcome = tokio::time::timeout(DEADLINE, old.task).await.expect("its run ends").unwrap();
    assert_eq!(outcome, Leadership::Lost);
    // Its last renewal was when the failures began: it stopped within the renew deadline of
    // it (checked every period).
    assert!(
        stopped <= failing + RENEW + RETRY,
        "stopped at {stopped:?}, failures from {failing:?}"
    );

    let started = h.step_until(20, |e| matches!(e, Event::Started(id) if *id != old_id)).await;
    assert!(
        stopped < started,
        "the old leader stopped ({stopped:?}) before the new one started ({started:?})"
    );
    assert!(
        started >= (failing + LEASE).saturating_sub(RETRY),
        "the others waited for the lease to expire: started at {started:?}, failures from {failing:?}"
    );
    drop(candidates);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_is_replaced_once_its_lease_expires() {
    let h = Harness::new().await;
    let mut candidates = three(&h).await;
    h.step(2).await;
    let killed = take_leader(&h, &mut candidates);
    let killed_id = killed.election.identity().to_owned();
    killed.task.abort();
    let _ = killed.task.await;
    h.running.fetch_sub(1, Ordering::SeqCst);
    let at_kill = h.now();
    h.idle().await;
    let started = h.step_until(20, |e| matches!(e, Event::Started(id) if *id != killed_id)).await;
    let waited = started.saturating_sub(at_kill);
    assert!(
        waited >= LEASE.saturating_sub(RETRY) && waited <= LEASE + 2 * RETRY,
        "a new leader {waited:?} after the kill; the lease lasts {LEASE:?}"
    );
    drop(candidates);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_stops_releases_the_lease_and_another_takes_over_at_once() {
    let h = Harness::new().await;
    let mut candidates = three(&h).await;
    h.step(1).await;
    let leader = take_leader(&h, &mut candidates);
    let leader_id = leader.election.identity().to_owned();
    leader.stop.cancel();
    let outcome = tokio::time::timeout(DEADLINE, leader.task).await.expect("ends").unwrap();
    assert_eq!(outcome, Leadership::Released);
    let at_stop = h.now();
    h.idle().await;
    let started = h.step_until(5, |e| matches!(e, Event::Started(id) if *id != leader_id)).await;
    let taken_over = started.saturating_sub(at_stop);
    assert!(taken_over <= RETRY, "taken over {taken_over:?} after the release");
    for candidate in candidates {
        candidate.stop.cancel();
        let outcome = tokio::time::timeout(DEADLINE, candidate.task).await.expect("ends").unwrap();
        assert!(matches!(outcome, Leadership::Released | Leadership::NotAcquired), "{outcome:?}");
    }
}

#[tokio::test]
async fn settings_that_leave_no_time_to_stop_are_refused() {
    let server = ApiServer::start().await.unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let build = |lease: u64, renew: u64, retry: u64, id: &str| {
        LeaderElection::builder(client.clone(), "default", "lease", id)
            .lease_duration(Duration::from_secs(lease))
            .renew_deadline(Duration::from_secs(renew))
            .retry_period(Duration::from_secs(retry))
            .build()
    };
    assert!(build(15, 10, 2, "me").is_ok());
    for (lease, renew, retry, rule) in [
        (10, 10, 2, "lease_duration must be greater than renew_deadline"),
        (15, 10, 9, "renew_deadline must be greater than 1.2 × retry_period"),
        (15, 10, 0, "retry_period must be positive"),
    ] {
        let error = build(lease, renew, retry, "me").unwrap_err();
        assert!(error.to_string().contains(rule), "{error}");
        assert!(error.to_string().contains("default/lease"), "{error}");
    }
    assert!(matches!(build(15, 10, 2, ""), Err(LeaderElectionError::EmptyIdentity { .. })));
}
