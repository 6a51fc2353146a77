//! Waiting on a condition in the unit tests of this crate, with a deadline instead of a sleep.

use std::time::Duration;

/// How long a unit test waits for a condition (real time) before it fails.
const DEADLINE: Duration = Duration::from_secs(10);

/// Polls `condition` until it holds; fails the test, naming `what`, after 10 seconds.
pub(crate) async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
