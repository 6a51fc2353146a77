//! Nothing lost over HTTP under random churn and faults: the chaos scenario of
//! `informer_tests::chaos`, CI-sized, over plain HTTP/1.1 and over TLS with HTTP/2. Each run
//! covers, besides plain lists into decoded caches of every namespace, an informer listing by
//! streaming lists, one whose cache is in compact storage, and one restricted to a set of
//! namespaces; each must have run (streaming lists completed, plain lists where expected).
//! Each run also has a controller's leadership change hands, and rotates the token (and, over
//! TLS, the client certificates) its clients authenticate with.
//!
//! Every run has a new seed, printed first and in the failure message; `INFORMER_CHAOS_SEED=S`
//! replays one. `INFORMER_CHAOS_MINUTES=N` runs N one-minute epochs instead (what
//! `cargo xtask soak --minutes N` does, in a release build, for each transport).
//!
//! A run takes about half a minute on 2 cores, so it belongs to the full gate (`cargo xtask ci`):
//! a plain `cargo test` skips it with one line unless a seed or a length is asked for.

use informer_tests::chaos::{self, Length, Report, SEED_ENV, Settings};
use informer_tests::full_gate;

/// Two epochs: each adds a late handler and removes one.
const CI: Length = Length::Writes { epochs: 2, writes: 5_000 };

/// One epoch over TLS, for CI time: a late handler, a removal, and (at about 20 faults an
/// epoch) every kind of fault at least once, since the injector draws each kind once first.
const CI_TLS: Length = Length::Writes { epochs: 1, writes: 5_000 };

/// Whether this run includes the chaos scenario: the full gate, a replayed seed or a soak.
fn runs() -> bool {
    std::env::var_os(SEED_ENV).is_some()
        || std::env::var_os(chaos::MINUTES_ENV).is_some()
        || full_gate::runs("the chaos scenario")
}

fn check(report: &Report, seed: u64) {
    assert_eq!(report.lost(), 0, "{report}\nreplay with {SEED_ENV}={seed}");
    assert!(
        report.faults.values().all(|&n| n > 0),
        "every kind of fault was injected: {:?} (seed {seed})",
        report.faults
    );
    // Each variant took its path: the streaming ones synced by streaming lists, the compact
    // one listed; and each was told of changes.
    assert_eq!(report.variants.len(), 3, "{report}");
    for (name, counts) in &report.variants {
        assert!(counts.events > 0, "{name} got no notification: {report}");
        if name.starts_with("pods") {
            assert!(counts.plain_lists > 0 && counts.streamed == 0, "{name} lists: {report}");
        } else {
            assert!(counts.completed > 0, "{name} completed no streaming list: {report}");
        }
    }
    assert!(
        report.controller.handovers > 0,
        "leadership of the controller changed hands: {report}\nreplay with {SEED_ENV}={seed}"
    );
    assert!(
        report.credentials.tokens > 1,
        "the tokens were rotated: {report}\nreplay with {SEED_ENV}={seed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_over_http_lose_nothing_under_churn_and_faults() {
    if !runs() {
        return;
    }
    let settings = Settings::from_env(CI).unwrap_or_else(|e| panic!("{e}"));
    let seed = settings.seed;
    let report = chaos::run(settings).await;
    check(&report, seed);
    assert_eq!(report.traffic.http2_requests, 0, "plain HTTP is HTTP/1.1: {report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_over_tls_and_http2_lose_nothing_under_churn_and_faults() {
    if !runs() {
        return;
    }
    let mut settings = Settings::from_env(CI_TLS).unwrap_or_else(|e| panic!("{e}"));
    settings.tls = true;
    let seed = settings.seed;
    let report = chaos::run(settings).await;
    check(&report, seed);
    let traffic = report.traffic;
    assert!(
        traffic.http2_requests > 0 && traffic.http1_requests == 0,
        "the client spoke HTTP/2 only: {report}"
    );
    let credentials = &report.credentials;
    assert!(
        credentials.certificates > 1 && credentials.plugin_runs > 1,
        "client certificates were replaced: {report}\nreplay with {SEED_ENV}={seed}"
    );
}
