//! What embedded-apiserver's integration tests share: a server that sends only what a test
//! causes, and waiting for its watches to open. (Helpers users' tests can use too are public,
//! in `embedded_apiserver::testing`.)

#![allow(dead_code, reason = "each test file uses a different part")]

use std::time::Duration;

use embedded_apiserver::{ApiServer, Config};

/// How long a server may take to see the watches a test opened (kubectl's take longest).
const WATCHES_OPEN: Duration = Duration::from_secs(30);

/// A server without periodic bookmarks, so that watches see only what a test causes.
pub async fn start() -> ApiServer {
    Config::default().bookmark_interval(None).start().await.expect("the server starts")
}

/// Waits until `n` watches are open on the server, within the deadline.
pub async fn open_watches(server: &ApiServer, n: usize) {
    tokio::time::timeout(WATCHES_OPEN, server.wait_for_watches(n))
        .await
        .expect("the watches open in time");
}
