//! Waiting on a condition with a deadline, never a fixed sleep.

use std::time::Duration;

/// How often [`eventually`] looks again.
const POLL: Duration = Duration::from_millis(10);

/// Polls `check` until it holds; panics naming `what` once `deadline` has passed.
///
/// For conditions nothing announces (a lister catching up with writes made elsewhere); where
/// a handler or a channel can say when something changed, wait on that instead.
///
/// # Panics
///
/// When `check` still fails after `deadline`: that fails the calling test.
pub async fn eventually(what: &str, deadline: Duration, check: impl Fn() -> bool) {
    let start = tokio::time::Instant::now();
    while !check() {
        assert!(start.elapsed() < deadline, "timed out after {deadline:?} waiting for {what}");
        tokio::time::sleep(POLL).await;
    }
}
