//! The server's shared state: storage, catalog, open watches and faults behind one lock.
//!
//! One lock orders everything as etcd and the watch cache would: a write takes the next
//! resourceVersion and reaches every open watch before the next write starts, so each watch
//! sees changes in resourceVersion order.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::auth::Authenticator;
use crate::catalog::Catalog;
use crate::error::Result;
use crate::faults::Faults;
use crate::kubelet_logs::PodLogs;
use crate::propagation::concerns_the_collector;
use crate::status::GroupResource;
use crate::storage::{Change, ChangeKind, Store};
use crate::tls::ServingTls;
use crate::traffic::TrafficCounters;
use crate::watch_hub::WatchHub;
use crate::webhook_client::WebhookClient;

/// Settings fixed when the server starts.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// Namespaced objects may only be created in existing namespaces.
    pub(crate) require_namespaces: bool,
    /// How often watches that asked for bookmarks get one; `None` for never.
    pub(crate) bookmark_interval: Option<Duration>,
    /// How many frames each watch buffers before it is closed as unresponsive.
    pub(crate) watch_buffer: usize,
    /// How many watches may be open at once.
    pub(crate) max_watches: usize,
    /// Serve TLS (HTTP/2 or HTTP/1.1 by ALPN) instead of plain HTTP/1.1.
    pub(crate) tls: Option<ServingTls>,
    /// The `SETTINGS_MAX_CONCURRENT_STREAMS` each HTTP/2 connection advertises.
    pub(crate) max_concurrent_streams: u32,
}

/// Everything behind the lock.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) store: Store,
    pub(crate) catalog: Catalog,
    pub(crate) hub: WatchHub,
    pub(crate) faults: Faults,
    /// Whether lists the watch cache serves (`resourceVersion=0`) honour `limit`
    /// ([`Config::paginate_cached_lists`](crate::Config::paginate_cached_lists)). Here and not
    /// in [`Settings`] because [`ServerHandle`](crate::ServerHandle) switches it while the
    /// server runs.
    pub(crate) paginate_cached_lists: bool,
    /// The containers' log text, which the kubelet would serve (see `pod_logs`).
    pub(crate) logs: PodLogs,
    /// Wakes the garbage collector's task (`garbage_collector.rs`) after each write it may
    /// have work from.
    pub(crate) gc_wake: Arc<Notify>,
}

impl State {
    /// A state with the built-in types and nothing stored, keeping `history` changes, for the
    /// unit tests of the verbs and the collector.
    #[cfg(test)]
    pub(crate) fn for_tests(history: usize) -> Self {
        Self {
            store: Store::new(0, history),
            catalog: Catalog::builtin(),
            hub: WatchHub::default(),
            faults: Faults::default(),
            paginate_cached_lists: false,
            logs: PodLogs::default(),
            gc_wake: Arc::default(),
        }
    }

    /// Commits a write and sends it to the matching watches.
    pub(crate) fn commit(
        &mut self,
        storage: &GroupResource,
        key: &str,
        kind: ChangeKind,
        obj: Value,
    ) -> Arc<Change> {
        // The collector has work only after a deletion (dependents may now have no owner) or
        // a write of an object that names owners or waits for the collector: woken by every
        // write, it would walk the whole store once per write.
        let collectable = kind == ChangeKind::Deleted || concerns_the_collector(&obj);
        let change = self.store.write(storage, key, kind, obj);
        self.hub.broadcast(&change);
        if collectable {
            self.gc_wake.notify_one();
        }
        change
    }
}

/// What every request handler and the server handle share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) settings: Settings,
    /// Cancelled when the server shuts down: ends every watch.
    pub(crate) shutdown: CancellationToken,
    /// Signalled whenever a watch opens.
    pub(crate) watch_opened: Notify,
    /// Asks the accept loop to restart (`serving.rs`).
    pub(crate) restarts: mpsc::Sender<Restart>,
    /// Requests and connections by protocol (`traffic.rs`, counted in `connection.rs`).
    pub(crate) traffic: TrafficCounters,
    /// Who may make requests (`auth.rs`).
    pub(crate) auth: Authenticator,
    /// Calls admission and conversion webhooks (`webhook_client.rs`); shared with the watches
    /// that convert their events.
    pub(crate) webhooks: Arc<WebhookClient>,
}

/// A restart asked for through [`ServerHandle::restart`](crate::ServerHandle::restart), which
/// the accept loop (`serving.rs`) carries out.
#[derive(Debug)]
pub(crate) struct Restart {
    /// How long new connections are refused.
    pub(crate) down_for: Duration,
    /// Told once the server serves again (or cannot).
    pub(crate) done: oneshot::Sender<Result<()>>,
}
