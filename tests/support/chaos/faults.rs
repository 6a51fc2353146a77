//! The fault injector: a table of fault kinds, each a name, a weight and what it does to the
//! server. A new kind of fault is one more row.
//!
//! Faults that last (slow responses, a short history) stay in force until the next injection
//! or until [`Injector::quiesce`], which the scenario calls before it waits for quiescence.
//! Failures are aimed at lists and watches, the informers' requests, never at the churn's
//! writes (which go through [`ServerHandle`] directly anyway).

use std::collections::BTreeMap;
use std::time::Duration;

use embedded_apiserver::{Disruption, Failure, ServerHandle};

/// The server's history while no fault shortens it: enough that a dropped watch resumes.
pub(crate) const HISTORY_LIMIT: usize = 10_000;

/// The `Retry-After` of throttled requests (whole seconds on the wire).
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Bursts of writes between two faults: drawn in this range, so that a run of N bursts has at
/// least N / 45 faults (a CI-sized epoch of about 600 bursts, 13 or more: every kind, since the
/// first round draws each once), where a fault drawn with odds of one in 30 after each burst
/// left some kinds out of one run in a hundred.
const BURSTS_BETWEEN_FAULTS: std::ops::RangeInclusive<u32> = 15..=45;

/// The name of the stall, which [`Injector::quiesce`] injects too.
const STALL: &str = "stalled watches";

/// One kind of fault.
struct Fault {
    /// The report's name for it.
    name: &'static str,
    /// How often it is drawn, relative to the others.
    weight: u32,
    inject: fn(&ServerHandle, &mut fastrand::Rng),
}

/// Every fault kind.
const FAULTS: &[Fault] = &[
    Fault { name: "dropped watches", weight: 3, inject: drop_watches },
    Fault { name: STALL, weight: 2, inject: stall_watches },
    Fault { name: "compaction (410)", weight: 2, inject: compact },
    Fault { name: "short history (410)", weight: 1, inject: short_history },
    Fault { name: "429 burst", weight: 2, inject: too_many_requests },
    Fault { name: "500 burst", weight: 2, inject: internal_errors },
    Fault { name: "slow responses", weight: 2, inject: slow_responses },
    Fault { name: "truncated bodies", weight: 2, inject: truncated_bodies },
    Fault { name: "stalled lists", weight: 1, inject: stalled_lists },
    Fault { name: "cut streaming lists", weight: 1, inject: cut_streaming_lists },
    Fault { name: "server restart", weight: 1, inject: restart },
];

fn drop_watches(server: &ServerHandle, _: &mut fastrand::Rng) {
    server.drop_watches();
}

/// Only the client's idle deadline ends these watches.
fn stall_watches(server: &ServerHandle, _: &mut fastrand::Rng) {
    server.stall_watches();
}

/// Open watches go on; the next watch from an older version, or an exact list at one, gets 410.
fn compact(server: &ServerHandle, _: &mut fastrand::Rng) {
    server.compact();
}

/// A watch cache that keeps only a few changes: watches that fall behind get 410 and relist.
fn short_history(server: &ServerHandle, rng: &mut fastrand::Rng) {
    server.set_history_limit(rng.usize(5..50));
    server.drop_watches();
}

fn too_many_requests(server: &ServerHandle, rng: &mut fastrand::Rng) {
    let failure = aim(Failure::too_many_requests(RETRY_AFTER), rng);
    server.fail_next(rng.usize(1..4), failure);
    server.drop_watches();
}

fn internal_errors(server: &ServerHandle, rng: &mut fastrand::Rng) {
    let failure = Failure::internal_error("etcdserver: leader changed").retry_after(RETRY_AFTER);
    server.fail_next(rng.usize(1..4), aim(failure, rng));
    server.drop_watches();
}

/// Every response waits a little (a watch before it opens).
fn slow_responses(server: &ServerHandle, rng: &mut fastrand::Rng) {
    server.set_delay(Some(Duration::from_millis(rng.u64(5..150))));
}

/// The next responses to lists or watches end mid-body, the connection closed without the
/// chunked terminator; the watches open now are dropped so that new ones come.
fn truncated_bodies(server: &ServerHandle, rng: &mut fastrand::Rng) {
    let verb = if rng.bool() { "list" } else { "watch" };
    let cut = aim_at(Disruption::truncate(rng.usize(0..4096)).verb(verb), rng);
    server.disrupt_next(rng.usize(1..4), cut);
    server.compact();
    server.drop_watches();
}

/// The next list sends its headers and part of its body, then nothing: only the client's read
/// idle deadline ends it. Compaction and dropped watches make the informers relist.
fn stalled_lists(server: &ServerHandle, rng: &mut fastrand::Rng) {
    server.disrupt_next(1, aim_at(Disruption::stall(rng.usize(0..2048)).verb("list"), rng));
    server.compact();
    server.drop_watches();
}

/// Streaming lists cut or stalled in their initial events: history is compacted and every
/// watch dropped, so every informer relists (the streaming ones by a streaming list), and the
/// next few watches of config maps or `CronTab`s (the streaming variants' resources, see
/// `variants.rs`) break or stall a few KB in. The first of them are rewatches that get a 410;
/// the streaming list comes next, and its initial events are longer than the cut.
fn cut_streaming_lists(server: &ServerHandle, rng: &mut fastrand::Rng) {
    let after = rng.usize(0..8192);
    let cut = if rng.bool() { Disruption::truncate(after) } else { Disruption::stall(after) };
    let resource = if rng.bool() { "configmaps" } else { "crontabs.stable.example.com" };
    server.disrupt_next(rng.usize(3..6), cut.verb("watch").resource(resource));
    server.compact();
    server.drop_watches();
}

/// The server restarts with its data (etcd intact): every connection is cut, connections are
/// refused for a moment, and watches from before get 410 and relist.
fn restart(server: &ServerHandle, rng: &mut fastrand::Rng) {
    let (server, down_for) = (server.clone(), Duration::from_millis(rng.u64(20..300)));
    tokio::spawn(async move {
        if let Err(e) = server.restart(down_for).await {
            panic!("chaos: the server did not come back from a restart: {e}");
        }
    });
}

/// Aims `failure` at lists or watches, of one resource or of all.
fn aim(failure: Failure, rng: &mut fastrand::Rng) -> Failure {
    let failure = failure.verb(if rng.bool() { "list" } else { "watch" });
    match rng.u32(0..4) {
        0 => failure.resource("pods"),
        1 => failure.resource("configmaps"),
        2 => failure.resource("crontabs.stable.example.com"),
        _ => failure,
    }
}

/// Aims `disruption` at one resource, or at all.
fn aim_at(disruption: Disruption, rng: &mut fastrand::Rng) -> Disruption {
    match rng.u32(0..4) {
        0 => disruption.resource("pods"),
        1 => disruption.resource("configmaps"),
        2 => disruption.resource("crontabs.stable.example.com"),
        _ => disruption,
    }
}

/// Draws and injects faults, and counts them by kind.
pub(crate) struct Injector {
    rng: fastrand::Rng,
    /// Kinds not injected yet, in a random order: each run injects every kind at least once
    /// before drawing by weight.
    first_round: Vec<usize>,
    /// Bursts of writes until the next fault.
    until_next: u32,
    counts: BTreeMap<&'static str, u64>,
}

impl Injector {
    pub(crate) fn new(seed: u64) -> Self {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut first_round: Vec<usize> = (0..FAULTS.len()).collect();
        rng.shuffle(&mut first_round);
        let until_next = rng.u32(BURSTS_BETWEEN_FAULTS);
        Self { rng, first_round, until_next, counts: BTreeMap::new() }
    }

    /// Called after each burst of writes: injects a fault when its turn has come.
    pub(crate) fn after_burst(&mut self, server: &ServerHandle) {
        self.until_next = self.until_next.saturating_sub(1);
        if self.until_next == 0 {
            self.until_next = self.rng.u32(BURSTS_BETWEEN_FAULTS);
            self.inject(server);
        }
    }

    /// Ends the lasting faults, then injects one more.
    fn inject(&mut self, server: &ServerHandle) {
        calm(server);
        let fault = &FAULTS[self.first_round.pop().unwrap_or_else(|| self.draw())];
        (fault.inject)(server, &mut self.rng);
        *self.counts.entry(fault.name).or_default() += 1;
    }

    fn draw(&mut self) -> usize {
        let total: u32 = FAULTS.iter().map(|f| f.weight).sum();
        let mut roll = self.rng.u32(0..total);
        FAULTS
            .iter()
            .position(|f| {
                let hit = roll < f.weight;
                roll = roll.saturating_sub(f.weight);
                hit
            })
            .unwrap_or(0)
    }

    /// Ends every fault (lasting ones, and failures not yet consumed), then stalls every open
    /// watch: the changes written after this reach the informers only once the client's idle
    /// deadline has ended the stalled watches, so every quiescence tests it. The stall counts
    /// as one.
    pub(crate) fn quiesce(&mut self, server: &ServerHandle) {
        calm(server);
        server.clear_failures();
        server.clear_disruptions();
        stall_watches(server, &mut self.rng);
        *self.counts.entry(STALL).or_default() += 1;
    }

    /// Faults injected, by kind (every kind listed, zero included).
    pub(crate) fn counts(&self) -> BTreeMap<&'static str, u64> {
        FAULTS.iter().map(|f| (f.name, self.counts.get(f.name).copied().unwrap_or(0))).collect()
    }
}

/// Ends the faults that last.
fn calm(server: &ServerHandle) {
    server.set_delay(None);
    server.set_history_limit(HISTORY_LIMIT);
}
