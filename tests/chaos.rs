//! Nothing lost over HTTP under random churn and faults: the chaos scenario of
//! `informer_tests::chaos`, CI-sized.
//!
//! Every run has a new seed, printed first and in the failure message; `INFORMER_CHAOS_SEED=S`
//! replays one. `INFORMER_CHAOS_MINUTES=N` runs N one-minute epochs instead (what
//! `cargo xtask soak --minutes N` does, in a release build).

use informer_tests::chaos::{self, Length, SEED_ENV, Settings};

/// Two epochs: each adds a late handler and removes one.
const CI: Length = Length::Writes { epochs: 2, writes: 5_000 };

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_over_http_lose_nothing_under_churn_and_faults() {
    let settings = Settings::from_env(CI).unwrap_or_else(|e| panic!("{e}"));
    let seed = settings.seed;
    let report = chaos::run(settings).await;
    assert_eq!(report.lost(), 0, "{report}\nreplay with {SEED_ENV}={seed}");
    assert!(
        report.faults.values().all(|&n| n > 0),
        "every kind of fault was injected: {:?} (seed {seed})",
        report.faults
    );
}
