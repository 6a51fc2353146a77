//! What the server has served, by protocol: [`Traffic`], and the counters behind it that
//! every connection (`connection.rs`) adds to.
//!
//! Apart from the connections that count, so that the shared state (`state.rs`), which holds
//! the counters, sits below the code that serves connections and reads that state.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// What the server has served, by protocol: [`ServerHandle::traffic`](crate::ServerHandle::traffic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Traffic {
    /// Requests served over HTTP/1.1 (or 1.0).
    pub http1_requests: u64,
    /// Requests served over HTTP/2.
    pub http2_requests: u64,
    /// Connections whose TLS handshake completed.
    pub tls_connections: u64,
    /// The most requests one connection had in flight at once, over the server's life, as
    /// its handlers saw them: a request is in flight from its head until its response body
    /// is done or dropped (a watch, for as long as it runs). Over HTTP/2 these are streams,
    /// at most [`Config::max_concurrent_streams`](crate::Config::max_concurrent_streams) at
    /// the protocol level; a stream the client has just reset still counts here until its
    /// handler lets go, so the figure can pass the limit by the few streams being reset.
    pub max_open_streams: usize,
    /// Requests refused with `401 Unauthorized` by the server's
    /// [authentication](crate::Config::bearer_tokens).
    pub unauthorized: u64,
}

/// The counts behind [`Traffic`], shared by every connection.
#[derive(Debug, Default)]
pub(crate) struct TrafficCounters {
    pub(crate) http1_requests: AtomicU64,
    pub(crate) http2_requests: AtomicU64,
    pub(crate) tls_connections: AtomicU64,
    pub(crate) max_open_streams: AtomicUsize,
    pub(crate) unauthorized: AtomicU64,
}

impl TrafficCounters {
    pub(crate) fn snapshot(&self) -> Traffic {
        Traffic {
            http1_requests: self.http1_requests.load(Ordering::Relaxed),
            http2_requests: self.http2_requests.load(Ordering::Relaxed),
            tls_connections: self.tls_connections.load(Ordering::Relaxed),
            max_open_streams: self.max_open_streams.load(Ordering::Relaxed),
            unauthorized: self.unauthorized.load(Ordering::Relaxed),
        }
    }
}
