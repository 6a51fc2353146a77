//! The test kit's own contract: a seed draws the same faults in the same order, every kind
//! before any twice, and a failure names the seed to replay.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::collections::BTreeSet;

use embedded_apiserver::ApiServer;
use embedded_apiserver::scenario::{Fault, Scenario};

/// The faults of `rounds` rounds of a scenario with `seed` and no replicas.
async fn drawn(seed: u64, rounds: usize) -> Vec<Vec<Fault>> {
    let server = ApiServer::start().await.unwrap();
    let mut scenario = Scenario::new(&server).seed(seed).start();
    let mut faults = Vec::new();
    for _ in 0..rounds {
        faults.push(scenario.round().await);
    }
    let report = scenario.finish().await;
    assert_eq!(report.seed, seed);
    assert_eq!(report.faults.values().sum::<usize>(), faults.iter().map(Vec::len).sum::<usize>());
    faults
}

#[tokio::test]
async fn a_seed_draws_the_same_faults_and_every_kind_before_any_twice() {
    let first = drawn(42, 4).await;
    assert_eq!(first, drawn(42, 4).await, "replayed");
    // Without a Lease no leader is killed; the five other kinds come first, once each.
    let flat: Vec<Fault> = first.into_iter().flatten().collect();
    let head: BTreeSet<Fault> = flat.iter().take(5).copied().collect();
    assert!(flat.len() < 5 || head.len() == 5, "each once before any twice: {flat:?}");
    assert!(!flat.contains(&Fault::LeaderKilled), "no Lease, no leader to kill: {flat:?}");
}

#[tokio::test]
#[should_panic(expected = "replica replica-0 panicked: lost my way")]
async fn a_replica_that_panics_fails_the_scenario() {
    let server = ApiServer::start().await.unwrap();
    let mut scenario = Scenario::new(&server)
        .seed(7)
        .replicas(1, |_replica| async { panic!("lost my way") })
        .start();
    scenario.converge("something that never holds", || false).await;
}

#[tokio::test]
#[should_panic(expected = "replay with EMBEDDED_APISERVER_SEED=7")]
async fn a_scenario_that_does_not_converge_names_its_seed() {
    let server = ApiServer::start().await.unwrap();
    let mut scenario =
        Scenario::new(&server).seed(7).deadline(std::time::Duration::from_millis(100)).start();
    scenario.converge("something that never holds", || Err::<(), _>("still not")).await;
}
