//! The connections of a [`Client`](super::Client) built by [`Client::new`](super::Client::new):
//! one pool for requests that end, and pools of at most
//! [`watches_per_connection`](super::Config::watches_per_connection) watches each.
//!
//! Why: over HTTP/2 every request to one server shares one connection, and a server limits the
//! streams a connection carries at once (`SETTINGS_MAX_CONCURRENT_STREAMS`: kube-apiserver's
//! `--http2-max-streams-per-connection`, 250 unless set; proxies often 100). hyper, under
//! reqwest, queues a request at that limit instead of opening another connection (RFC 9113
//! asks clients not to open more than one; hyperium/hyper#2197). Go's transport, under
//! client-go, opens another connection. A watch holds its stream for minutes, so past the limit
//! every list, get, write, Event and Lease renewal would wait until it timed out, and a leader
//! would lose its Lease.
//!
//! So watches never share a connection with other requests, and at most
//! `watches_per_connection` of them share one: each `reqwest::Client` here is a connection pool
//! of its own (one HTTP/2 connection per pool; over HTTP/1.1 a connection per request anyway).
//! A watch takes a slot of the first pool with room when it starts, and its [`WatchSlot`] gives
//! the slot back when its body ends or is dropped; a new pool is opened when all are full, and
//! an emptied pool other than the first is dropped, closing its connection. Watches end every
//! few minutes (their server-side timeout) and start again in the first pools with room, so
//! watches gather back into few connections after a burst.
//!
//! A new pool lets its first request dial while the others wait for it ([`Pool::send`]): hyper
//! learns that a connection speaks HTTP/2 only once its TLS handshake has agreed on it, and until
//! then every request that finds no connection dials one of its own, keeping one and dropping the
//! rest. At start-up, when an informer per namespace lists and watches at once, that was thousands
//! of TLS handshakes where a few dozen connections were needed.
//!
//! Every pool is built by [`PoolSettings::build`] with the same TLS, proxy, timeouts and HTTP/2
//! pings. The number of watch pools is at most [`MAX_WATCH_CONNECTIONS`]; past it (50,000
//! watches at the default), a watch shares the least loaded pool, with a warning.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::config::tls::PinnedHost;
use super::error::ClientError;

/// Sent as `User-Agent`.
const USER_AGENT: &str = concat!("informer-runtime/", env!("CARGO_PKG_VERSION"));

/// Interval of HTTP/2 pings on an API server connection (client-go's `ReadIdleTimeout`).
const HTTP2_PING_INTERVAL: Duration = Duration::from_secs(30);

/// How long a ping may go unanswered before the connection is dropped (client-go's
/// `PingTimeout`).
const HTTP2_PING_TIMEOUT: Duration = Duration::from_secs(15);

/// TCP keep-alive of API server connections (client-go's dialer uses 30 s).
const TCP_KEEPALIVE: Duration = Duration::from_secs(30);

/// The most watch connections one client opens: 1,000 pools of 50 watches is far past what an
/// API server serves one client (kube-apiserver's default `--max-requests-inflight` does not
/// count watches, but each costs it memory and a goroutine or two). Past it watches share the
/// least loaded connection, and queue there at the server's limit as hyper does.
pub(crate) const MAX_WATCH_CONNECTIONS: usize = 1_000;

/// How long the other requests of a new pool wait for its first one before each dials anyway: the
/// first's answer usually comes sooner (a watch's headers come at once), but a list whose server
/// takes seconds to start answering must not hold the others that long. A TLS handshake is done
/// well within it, and hyper then shares the connection.
const FIRST_DIAL_WAIT: Duration = Duration::from_secs(1);

/// One connection pool (a `reqwest::Client`), and the gate that lets only its first request
/// dial.
#[derive(Clone)]
pub(crate) struct Pool {
    http: reqwest::Client,
    first_dial: Arc<FirstDial>,
}

/// Whether a pool's first request has had its answer (or given up), and who waits for it.
#[derive(Default)]
struct FirstDial {
    /// Taken by the first request.
    taken: AtomicBool,
    /// Set once the first request is answered, failed or dropped.
    done: AtomicBool,
    notify: Notify,
}

/// Opens the gate when the first request ends, however it ends (a dropped future included).
struct OpenOnDrop<'a>(&'a FirstDial);

impl Drop for OpenOnDrop<'_> {
    fn drop(&mut self) {
        self.0.done.store(true, Ordering::Release);
        self.0.notify.notify_waiters();
    }
}

impl Pool {
    fn new(http: reqwest::Client) -> Self {
        Self { http, first_dial: Arc::default() }
    }

    /// The pool, to build a request with.
    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Sends `request`, built with [`http`](Self::http). The pool's first request goes at once;
    /// the others sent before it is answered wait for that (at most [`FIRST_DIAL_WAIT`]), so
    /// that they share the connection it opened instead of each dialling one.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> reqwest::Result<reqwest::Response> {
        let gate = &*self.first_dial;
        if gate.done.load(Ordering::Acquire) {
            return request.send().await;
        }
        if !gate.taken.swap(true, Ordering::AcqRel) {
            let _open = OpenOnDrop(gate);
            return request.send().await;
        }
        let opened = gate.notify.notified();
        tokio::pin!(opened);
        opened.as_mut().enable();
        if !gate.done.load(Ordering::Acquire) {
            // Past the wait, dialling is what would have happened anyway.
            let _ = tokio::time::timeout(FIRST_DIAL_WAIT, opened).await;
        }
        request.send().await
    }
}

/// What every connection pool of a client is built with.
pub(crate) struct PoolSettings {
    /// TLS: trust roots, client certificate, server name verification.
    pub(crate) tls: rustls::ClientConfig,
    /// [`Config::connect_timeout`](super::Config::connect_timeout).
    pub(crate) connect_timeout: Duration,
    /// [`Config::proxy_url`](super::Config::proxy_url), parsed.
    pub(crate) proxy: Option<reqwest::Proxy>,
    /// The resolver that honours `tls_server_name` by name, when that is how it is honoured.
    pub(crate) pinned: Option<Arc<PinnedHost>>,
}

impl PoolSettings {
    /// A new connection pool with these settings.
    ///
    /// # Errors
    ///
    /// [`ClientError::Http`] when reqwest refuses the settings (an unusable proxy, say).
    pub(crate) fn build(&self) -> Result<reqwest::Client, ClientError> {
        let mut builder = reqwest::Client::builder()
            .tls_backend_preconfigured(self.tls.clone())
            .connect_timeout(self.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT)
            .tcp_keepalive(TCP_KEEPALIVE)
            // client-go's HTTP/2 health check: a half-open connection is found within ~45 s
            // instead of hanging lists and watches until TCP gives up.
            .http2_keep_alive_interval(HTTP2_PING_INTERVAL)
            .http2_keep_alive_timeout(HTTP2_PING_TIMEOUT)
            .http2_keep_alive_while_idle(true);
        builder = match &self.proxy {
            Some(proxy) => builder.proxy(proxy.clone()),
            // Unlike client-go, HTTPS_PROXY/NO_PROXY are not read: set `proxy_url` to use a proxy.
            None => builder.no_proxy(),
        };
        if let Some(pinned) = &self.pinned {
            builder = builder.dns_resolver(Arc::clone(pinned));
        }
        builder.build().map_err(ClientError::Http)
    }
}

/// A client's connection pools; see the [module documentation](self).
pub(crate) struct Connections {
    settings: PoolSettings,
    /// Everything but watches.
    requests: Pool,
    watches: Arc<Mutex<WatchPools>>,
    /// At least 1.
    per_connection: usize,
}

/// The watch pools, the first ones first: a watch goes to the first with room.
#[derive(Default)]
struct WatchPools {
    pools: Vec<WatchPool>,
    /// The id of the next pool opened.
    next_id: u64,
    /// Whether [`MAX_WATCH_CONNECTIONS`] was reached and said so.
    warned: bool,
}

struct WatchPool {
    id: u64,
    pool: Pool,
    /// Watches holding a slot.
    open: usize,
}

/// A watch's place in a pool; dropping it gives the place back (and closes the pool's
/// connection when it was the last watch of a pool other than the first).
pub(crate) struct WatchSlot {
    pools: Arc<Mutex<WatchPools>>,
    /// `None` when the watch had to use the requests' pool.
    id: Option<u64>,
}

impl Connections {
    /// The pool for requests, built now; watch pools are built when watches need them.
    ///
    /// # Errors
    ///
    /// As [`PoolSettings::build`].
    pub(crate) fn new(settings: PoolSettings, per_connection: usize) -> Result<Self, ClientError> {
        let requests = Pool::new(settings.build()?);
        Ok(Self {
            settings,
            requests,
            watches: Arc::default(),
            per_connection: per_connection.max(1),
        })
    }

    /// The pool of requests that end.
    pub(crate) fn requests(&self) -> &Pool {
        &self.requests
    }

    /// A pool for one more watch, and the slot it holds there until dropped.
    pub(crate) fn watch(&self) -> (Pool, WatchSlot) {
        let mut state = self.watches.lock();
        let index = match state.pools.iter().position(|pool| pool.open < self.per_connection) {
            Some(index) => Some(index),
            None if state.pools.len() < MAX_WATCH_CONNECTIONS => match self.settings.build() {
                Ok(http) => {
                    let id = state.next_id;
                    state.next_id += 1;
                    state.pools.push(WatchPool { id, pool: Pool::new(http), open: 0 });
                    tracing::debug!(
                        connections = state.pools.len(),
                        per_connection = self.per_connection,
                        "opening another connection for watches"
                    );
                    Some(state.pools.len() - 1)
                }
                Err(e) => {
                    // The same settings built the requests' pool, so this is not expected;
                    // watches still run, queued at the server's limit.
                    tracing::warn!(error = %e, "cannot open another connection for watches");
                    least_loaded(&state.pools)
                }
            },
            None => {
                if !state.warned {
                    state.warned = true;
                    tracing::warn!(
                        connections = MAX_WATCH_CONNECTIONS,
                        per_connection = self.per_connection,
                        "as many watch connections as a client opens; more watches share them \
                         and may wait at the server's stream limit"
                    );
                }
                least_loaded(&state.pools)
            }
        };
        let slot = |id| WatchSlot { pools: Arc::clone(&self.watches), id };
        match index.and_then(|index| state.pools.get_mut(index)) {
            Some(pool) => {
                pool.open += 1;
                (pool.pool.clone(), slot(Some(pool.id)))
            }
            None => (self.requests.clone(), slot(None)),
        }
    }

    /// The open watches of each watch pool, first pool first.
    #[cfg(test)]
    pub(crate) fn watch_pools(&self) -> Vec<usize> {
        self.watches.lock().pools.iter().map(|pool| pool.open).collect()
    }
}

fn least_loaded(pools: &[WatchPool]) -> Option<usize> {
    (0..pools.len()).min_by_key(|&index| pools[index].open)
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        let Some(id) = self.id else { return };
        let mut state = self.pools.lock();
        let Some(index) = state.pools.iter().position(|pool| pool.id == id) else { return };
        let pool = &mut state.pools[index];
        pool.open = pool.open.saturating_sub(1);
        if pool.open == 0 && index > 0 {
            // Its connection closes once the last clone of its client (this watch's) is gone.
            state.pools.remove(index);
            tracing::debug!(connections = state.pools.len(), "closing an idle watch connection");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tls::{self, TlsOptions};

    fn connections(per_connection: usize) -> Connections {
        let tls = tls::client_config(
            &TlsOptions {
                root_certs_pem: None,
                roots: None,
                client_cert: None,
                client_cert_rotates: false,
                accept_invalid_certs: false,
                verify_name: None,
                https: false,
            },
            &tls::provider(),
        )
        .unwrap();
        let settings = PoolSettings {
            tls,
            connect_timeout: Duration::from_secs(1),
            proxy: None,
            pinned: None,
        };
        Connections::new(settings, per_connection).unwrap()
    }

    #[test]
    fn watches_fill_a_connection_then_open_another() {
        let connections = connections(2);
        assert!(connections.watch_pools().is_empty(), "no watch connection before a watch");
        let slots: Vec<_> = (0..5).map(|_| connections.watch().1).collect();
        assert_eq!(connections.watch_pools(), [2, 2, 1]);
        drop(slots);
        assert_eq!(connections.watch_pools(), [0], "emptied connections but the first close");
    }

    #[test]
    fn a_watch_that_ends_frees_its_place_for_the_next() {
        let connections = connections(2);
        let mut slots: Vec<_> = (0..4).map(|_| connections.watch().1).collect();
        assert_eq!(connections.watch_pools(), [2, 2]);
        // The first connection's first watch ends; the next watch takes its place there
        // rather than opening a third connection.
        slots.remove(0);
        assert_eq!(connections.watch_pools(), [1, 2]);
        let newest = connections.watch().1;
        assert_eq!(connections.watch_pools(), [2, 2]);
        // Both watches of the second connection end: it closes.
        slots.truncate(1);
        assert_eq!(connections.watch_pools(), [2]);
        drop(newest);
    }

    #[test]
    fn zero_watches_per_connection_counts_as_one() {
        let connections = connections(0);
        let slots: Vec<_> = (0..2).map(|_| connections.watch().1).collect();
        assert_eq!(connections.watch_pools(), [1, 1]);
        drop(slots);
    }
}
