//! Starting and stopping the server: [`Config`], [`ApiServer`] and [`serve`].

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::auth::{Authentication, Authenticator};
use crate::catalog::{ApiResource, Catalog, ResourceType};
use crate::error::{Error, Result};
use crate::faults::Faults;
use crate::handle::ServerHandle;
use crate::kubelet_logs::PodLogs;
use crate::registry::{self, Scope};
use crate::router::router;
use crate::serving;
use crate::state::{Settings, Shared, State};
use crate::storage::Store;
use crate::tls::ServingTls;
use crate::traffic::TrafficCounters;
use crate::watch_hub::WatchHub;
use crate::webhook_client::WebhookClient;

/// How to start an [`ApiServer`]: public fields, or the chained setters.
///
/// ```
/// use std::time::Duration;
/// use embedded_apiserver::{Config, ResourceType};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), embedded_apiserver::Error> {
/// let server = Config::default()
///     .history_limit(100)
///     .bookmark_interval(None)
///     .resource(ResourceType::new("example.com", "v1", "Widget", "widgets", true))
///     .start()
///     .await?;
/// assert!(server.url().starts_with("http://127.0.0.1:"));
/// server.shutdown().await
/// # }
/// ```
#[derive(Clone, Debug)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent switches of a builder, each with its own method"
)]
pub struct Config {
    /// Where to listen.
    pub addr: SocketAddr,
    /// How many changes (of all types together) are kept for watch replay and list
    /// snapshots; older versions get `410 Expired`.
    pub history_limit: usize,
    /// How often watches that asked for bookmarks get one; `None` for never (send them with
    /// [`ServerHandle::send_bookmarks`]).
    pub bookmark_interval: Option<Duration>,
    /// Namespaced objects can only be created in existing namespaces (the `NamespaceLifecycle`
    /// admission plugin).
    pub require_namespaces: bool,
    /// Namespaces that exist from the start.
    pub namespaces: Vec<String>,
    /// Resource types served besides the built-ins (CRDs need not be declared: create them).
    pub resources: Vec<ResourceType>,
    /// How many events each watch may have waiting to be sent; a watch whose client reads
    /// too slowly for that is closed, as kube-apiserver closes unresponsive watchers (its
    /// client resumes from the last event it read). Events are shared with storage, so a
    /// full buffer costs a pointer per event, plus the old versions it keeps alive.
    pub watch_buffer: usize,
    /// How many watches may be open at once; one more gets `429 TooManyRequests` with
    /// `Retry-After: 1`.
    pub max_watches: usize,
    /// Whether lists served from the watch cache (`resourceVersion=0`, with no match or
    /// `NotOlderThan`) honour `limit`: pages of the current state, cut and continued as every
    /// other paginated list is (see [`paginate_cached_lists`](Self::paginate_cached_lists)).
    /// Off by default, as in kube-apiserver; [`ServerHandle::set_paginate_cached_lists`]
    /// switches it on a running server.
    pub paginate_cached_lists: bool,
    /// Whether to serve TLS, with ALPN offering HTTP/2 and HTTP/1.1 as kube-apiserver does,
    /// instead of plain HTTP/1.1 (see [`tls`](Self::tls)).
    pub tls: bool,
    /// The most streams (requests at once: watches count for as long as they run) a client
    /// may open on one HTTP/2 connection, advertised in its `SETTINGS_MAX_CONCURRENT_STREAMS`
    /// (see [`max_concurrent_streams`](Self::max_concurrent_streams)).
    pub max_concurrent_streams: u32,
    /// Who may make requests: nobody is refused by default (see
    /// [`bearer_tokens`](Self::bearer_tokens) and
    /// [`client_certificates`](Self::client_certificates)).
    pub authentication: Authentication,
    /// Whether the server collects the dependents of deleted owners and objects whose owners
    /// are all absent, as kube-controller-manager's garbage collector does (see
    /// [`garbage_collector`](Self::garbage_collector)). On by default.
    pub garbage_collector: bool,
    /// Where the services that webhooks name (`clientConfig.service`, by namespace and name)
    /// listen: a cluster would route to their pods (see
    /// [`webhook_service_address`](Self::webhook_service_address)).
    pub webhook_services: HashMap<(String, String), SocketAddr>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            // Loopback, any free port: tests run in parallel.
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            // A generous watch cache; the real one keeps 100 events per type, growing with load.
            history_limit: 10_000,
            // The API server sends a bookmark about once a minute; tests need them sooner.
            bookmark_interval: Some(Duration::from_secs(5)),
            // kube-apiserver enforces it, but most tests do not bother creating namespaces.
            require_namespaces: false,
            // What a new cluster has.
            namespaces: ["default", "kube-system", "kube-public", "kube-node-lease"]
                .map(str::to_owned)
                .to_vec(),
            resources: Vec::new(),
            // As many events as the default history holds: a client this far behind can still
            // resume from history. kube-apiserver's buffers are smaller (10 to 1000 events),
            // but it can make a writer wait a little for a slow watcher, and this server
            // cannot (a write holds the state lock).
            watch_buffer: 10_000,
            // Generous for any test; the bound is what matters to a hostile client.
            max_watches: 10_000,
            // kube-apiserver's watch cache ignores `limit` on `resourceVersion=0` lists, while
            // it pages the other lists it serves (`computeListLimit` in its cacher).
            paginate_cached_lists: false,
            // Plain HTTP: what every test wrote so far expects, and cheaper to serve.
            tls: false,
            // kube-apiserver's when `--http2-max-streams-per-connection` is 0 (its default) in
            // current releases: the 100 Go's clients assume before the server's SETTINGS
            // arrive (older releases made it 250, Go's server default).
            max_concurrent_streams: 100,
            // Tests that do not test credentials should not need any.
            authentication: Authentication::default(),
            // A cluster runs kube-controller-manager's collector.
            garbage_collector: true,
            // No services: a webhook that names one fails as for a service that does not
            // exist, until a test says where it listens.
            webhook_services: HashMap::new(),
        }
    }
}

impl Config {
    /// Listens on `addr` (`127.0.0.1:0` by default).
    #[must_use]
    pub fn addr(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// Keeps at most `limit` changes for replay (10 000 by default).
    #[must_use]
    pub fn history_limit(mut self, limit: usize) -> Self {
        self.history_limit = limit;
        self
    }

    /// Sends periodic bookmarks this often (`None`: never).
    #[must_use]
    pub fn bookmark_interval(mut self, interval: Option<Duration>) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// Requires namespaces to exist before objects are created in them.
    #[must_use]
    pub fn require_namespaces(mut self, yes: bool) -> Self {
        self.require_namespaces = yes;
        self
    }

    /// Sets the namespaces that exist from the start.
    #[must_use]
    pub fn namespaces(mut self, namespaces: &[&str]) -> Self {
        self.namespaces = namespaces.iter().map(|&n| n.to_owned()).collect();
        self
    }

    /// Serves another resource type.
    #[must_use]
    pub fn resource(mut self, ty: ResourceType) -> Self {
        self.resources.push(ty);
        self
    }

    /// Closes a watch once `events` events wait to be sent to it (10 000 by default; at
    /// least 1).
    #[must_use]
    pub fn watch_buffer(mut self, events: usize) -> Self {
        self.watch_buffer = events;
        self
    }

    /// Serves at most `watches` open watches at once (10 000 by default).
    #[must_use]
    pub fn max_watches(mut self, watches: usize) -> Self {
        self.max_watches = watches;
        self
    }

    /// Makes `resourceVersion=0` lists (with no `resourceVersionMatch` or with
    /// `NotOlderThan`) honour `limit`: off by default.
    ///
    /// kube-apiserver serves those lists from its watch cache and ignores their `limit`
    /// (`computeListLimit` in its cacher), so a client gets every object in one body. The
    /// same cache does page the other lists it serves (`resourceVersion=""`, `N` with
    /// `NotOlderThan`), and since 1.33 (`ListFromCacheSnapshot`, KEP-4988; on by default from
    /// 1.34) it serves their continue tokens too, from B-tree snapshots of itself kept for
    /// as long as its watch history. With this option `resourceVersion=0` lists are paged
    /// the same way, for clients that list at `"0"` with a page size to meet a server that
    /// pages them:
    ///
    /// - a page is cut after `limit` items when more objects follow, as any other page is;
    /// - every page carries the resourceVersion the first one was served at, and its continue
    ///   token (the API server's format, with that version) reads the state at that version,
    ///   whatever changed since; once [compacted](ServerHandle::compact), it gets
    ///   `410 Expired`, as every continue token does;
    /// - `remainingItemCount` is set as on other pages (lists without selectors).
    ///
    /// A list at `"0"` without `limit` is still served whole.
    ///
    /// ```
    /// use embedded_apiserver::Config;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), embedded_apiserver::Error> {
    /// let server = Config::default().paginate_cached_lists(true).start().await?;
    /// // GET /api/v1/pods?resourceVersion=0&limit=500 now answers at most 500 pods and a
    /// // continue token; switch back while it runs:
    /// server.set_paginate_cached_lists(false);
    /// server.shutdown().await
    /// # }
    /// ```
    #[doc(alias = "ListFromCacheSnapshot")]
    #[must_use]
    pub fn paginate_cached_lists(mut self, yes: bool) -> Self {
        self.paginate_cached_lists = yes;
        self
    }

    /// Whether owner-reference garbage collection runs (on by default): off, as in a cluster
    /// whose kube-controller-manager runs with `--controllers=*,-garbagecollector`, objects
    /// whose owners are absent stay, and deletion's `foregroundDeletion` and `orphan`
    /// finalizers are never removed. For objects recorded from a cluster whose owners the
    /// test does not create (a pod naming its `ReplicaSet`), which the collector would delete.
    ///
    /// ```
    /// # async fn demo() -> Result<(), embedded_apiserver::Error> {
    /// let server = embedded_apiserver::ApiServer::builder().garbage_collector(false).start().await?;
    /// # server.shutdown().await }
    /// ```
    #[must_use]
    pub fn garbage_collector(mut self, yes: bool) -> Self {
        self.garbage_collector = yes;
        self
    }

    /// Serves TLS instead of plain HTTP, as kube-apiserver does: ALPN offers `h2` then
    /// `http/1.1`, so HTTP/2 clients (client-go, kube-rs, informer-client's `Client`) speak
    /// HTTP/2, with [`max_concurrent_streams`](Self::max_concurrent_streams) streams per
    /// connection. Off by default.
    ///
    /// The server makes a new CA and a serving certificate for `localhost`, `127.0.0.1`, `::1`
    /// and the address it listens on; [`ServerHandle::url`] is then `https://...`, and clients
    /// trust [`ServerHandle::ca_pem`] (the [kubeconfig](ServerHandle::kubeconfig_yaml)
    /// carries it). Bounds as kube-apiserver's: a TLS handshake must finish within 32 s, an
    /// HTTP/2 connection without a stream for 90 s is closed (`GOAWAY`), and the HTTP/1.1
    /// bounds of plain connections hold for HTTP/1.1 over TLS.
    ///
    /// ```
    /// use embedded_apiserver::Config;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), embedded_apiserver::Error> {
    /// let server = Config::default().tls(true).max_concurrent_streams(10).start().await?;
    /// assert!(server.url().starts_with("https://127.0.0.1:"));
    /// assert!(server.ca_pem().is_some_and(|pem| pem.starts_with("-----BEGIN CERTIFICATE-----")));
    /// assert!(server.kubeconfig_yaml().contains("certificate-authority-data: "));
    /// server.shutdown().await
    /// # }
    /// ```
    #[doc(alias = "https")]
    #[doc(alias = "http2")]
    #[must_use]
    pub fn tls(mut self, yes: bool) -> Self {
        self.tls = yes;
        self
    }

    /// Lets a client open at most `streams` streams at once on one HTTP/2 connection (100 by
    /// default, as kube-apiserver's `--http2-max-streams-per-connection` unset; at least 1).
    ///
    /// The server advertises the limit in its `SETTINGS` frame and refuses streams past it;
    /// a client at the limit waits for a stream to end or opens another connection. A watch
    /// holds its stream for as long as it runs, so a client with more watches than this on
    /// one connection can stall its other requests: set it low to test that. Only TLS
    /// connections speak HTTP/2 ([`tls`](Self::tls)).
    #[doc(alias = "http2-max-streams-per-connection")]
    #[doc(alias = "SETTINGS_MAX_CONCURRENT_STREAMS")]
    #[must_use]
    pub fn max_concurrent_streams(mut self, streams: u32) -> Self {
        self.max_concurrent_streams = streams;
        self
    }

    /// Refuses every request that carries none of `tokens` as its bearer token (`Authorization:
    /// Bearer ...`) with kube-apiserver's `401 Unauthorized` `Status`, unless a client
    /// certificate lets it in ([`client_certificates`](Self::client_certificates)). Off by
    /// default: the server authenticates nobody.
    ///
    /// [`ServerHandle::set_bearer_tokens`] replaces the set while the server runs: a token
    /// that rotates, or one revoked. [`Traffic::unauthorized`](crate::Traffic::unauthorized)
    /// counts the refusals. (The [kubeconfig](ServerHandle::kubeconfig_yaml) still names its
    /// own token: give clients one of these.)
    ///
    /// ```
    /// use embedded_apiserver::Config;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), embedded_apiserver::Error> {
    /// let server = Config::default().bearer_tokens(["first"]).start().await?;
    /// // `Authorization: Bearer first` is let in; anything else gets 401.
    /// server.set_bearer_tokens(["second"]); // now only `second`
    /// assert_eq!(server.traffic().unauthorized, 0);
    /// server.shutdown().await
    /// # }
    /// ```
    #[doc(alias = "token-auth-file")]
    #[must_use]
    pub fn bearer_tokens(mut self, tokens: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.authentication.tokens = Some(tokens.into_iter().map(Into::into).collect());
        self
    }

    /// Over [TLS](Self::tls), lets in requests whose connection presented a client certificate
    /// signed by a client CA the server makes ([`ServerHandle::client_ca_pem`]; certificates
    /// from [`ServerHandle::issue_client_certificate`]), and refuses the others with `401`
    /// unless a [bearer token](Self::bearer_tokens) lets them in. Off by default.
    ///
    /// As kube-apiserver's x509 authenticator, the certificate's chain and validity are checked
    /// on every request, not only at the handshake: a certificate that expires while its
    /// HTTP/2 connection stays open gets `401` on that connection's next request.
    ///
    /// ```
    /// use std::time::Duration;
    /// use embedded_apiserver::Config;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), embedded_apiserver::Error> {
    /// let server = Config::default().tls(true).client_certificates(true).start().await?;
    /// let alice = server.issue_client_certificate("alice", Duration::from_secs(60))?;
    /// assert!(alice.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    /// server.shutdown().await
    /// # }
    /// ```
    #[doc(alias = "client-ca-file")]
    #[must_use]
    pub fn client_certificates(mut self, yes: bool) -> Self {
        self.authentication.client_certificates = yes;
        self
    }

    /// Sends the calls of webhooks that name the service `namespace/name` in their
    /// `clientConfig.service` (admission webhooks, CRD conversion webhooks) to `addr`, where a
    /// test's webhook server listens: the embedded server has no pods to route a service to.
    ///
    /// The call is otherwise the one kube-apiserver makes: to
    /// `https://NAME.NAMESPACE.svc:PORT/PATH`, verifying that the webhook's certificate is
    /// valid for `NAME.NAMESPACE.svc` and signed by the configuration's `caBundle`. A webhook
    /// naming a service that has no address fails as for a missing service
    /// (`service "NAME" not found`). [`ServerHandle::set_webhook_service_address`] adds or
    /// changes one while the server runs.
    ///
    /// ```
    /// use std::net::SocketAddr;
    /// use embedded_apiserver::Config;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), embedded_apiserver::Error> {
    /// let webhook: SocketAddr = "127.0.0.1:9443".parse().expect("an address");
    /// let server = Config::default()
    ///     .webhook_service_address("webhooks", "widget-webhook", webhook)
    ///     .start()
    ///     .await?;
    /// server.shutdown().await
    /// # }
    /// ```
    #[doc(alias = "ServiceResolver")]
    #[must_use]
    pub fn webhook_service_address(
        mut self,
        namespace: &str,
        name: &str,
        addr: SocketAddr,
    ) -> Self {
        self.webhook_services.insert((namespace.to_owned(), name.to_owned()), addr);
        self
    }

    /// Binds the address and starts serving, on the current tokio runtime.
    ///
    /// # Errors
    ///
    /// [`Error::Bind`] if the address cannot be bound, [`Error::Tls`] if TLS was asked for
    /// and its certificates cannot be made, or client certificates were asked for without
    /// TLS.
    pub async fn start(self) -> Result<ApiServer> {
        let listener = tokio::net::TcpListener::bind(self.addr)
            .await
            .map_err(|source| Error::Bind { addr: self.addr, source })?;
        let addr =
            listener.local_addr().map_err(|source| Error::Bind { addr: self.addr, source })?;
        if !addr.ip().is_loopback() && !self.authentication.is_enabled() {
            // No authentication: whoever reaches the address reads and writes it all.
            tracing::warn!(
                %addr,
                "the embedded API server listens beyond loopback and has no authentication: \
                 anyone who reaches {addr} can read and change every object; bind 127.0.0.1 \
                 unless that is meant"
            );
        }
        let auth = Authenticator::new(&self.authentication, self.tls)?;
        let mut catalog = Catalog::builtin();
        for ty in self.resources {
            catalog.add(ApiResource::custom(ty));
        }
        let settings = Settings {
            require_namespaces: self.require_namespaces,
            bookmark_interval: self.bookmark_interval,
            watch_buffer: self.watch_buffer.max(1),
            max_watches: self.max_watches,
            tls: if self.tls {
                Some(ServingTls::generate(addr, auth.handshake_verifier())?)
            } else {
                None
            },
            max_concurrent_streams: self.max_concurrent_streams.max(1),
        };
        let mut state = State {
            store: Store::new(0, self.history_limit),
            catalog,
            hub: WatchHub::default(),
            faults: Faults::default(),
            paginate_cached_lists: self.paginate_cached_lists,
            logs: PodLogs::default(),
            gc_wake: Arc::default(),
        };
        if let Some(namespaces) = state.catalog.find("", "v1", "namespaces") {
            for name in &self.namespaces {
                let scope = Scope { resource: &namespaces, namespace: None };
                let namespace = json!({"metadata": {"name": name}});
                if let Err(error) = registry::create(&mut state, &settings, scope, namespace, false)
                {
                    tracing::warn!(%name, %error, "initial namespace not created");
                }
            }
        }
        // One restart at a time; a second waits for the first.
        let (restarts, restart_requests) = mpsc::channel(1);
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            settings,
            shutdown: CancellationToken::new(),
            watch_opened: Notify::new(),
            restarts,
            traffic: TrafficCounters::default(),
            auth,
            webhooks: Arc::new(WebhookClient::new(self.webhook_services)),
        });
        let app = router(Arc::clone(&shared));
        if self.garbage_collector {
            // Ends when the server shuts down.
            tokio::spawn(crate::garbage_collector::run(Arc::clone(&shared)));
        }
        let task =
            tokio::spawn(serving::run(listener, addr, app, Arc::clone(&shared), restart_requests));
        // A zero interval would make tokio's interval panic: it means "no periodic bookmarks".
        let bookmarks = shared.settings.bookmark_interval.filter(|d| !d.is_zero()).map(|every| {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let mut ticks =
                    tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                loop {
                    tokio::select! {
                        () = shared.shutdown.cancelled() => return,
                        _ = ticks.tick() => {
                            let mut state = shared.state.lock();
                            let rv = state.store.resource_version();
                            state.hub.bookmark(rv);
                        }
                    }
                }
            })
        });
        let handle = ServerHandle { shared, addr };
        tracing::info!(url = %handle.url(), "embedded API server listening");
        Ok(ApiServer { handle, task: Some(task), bookmarks })
    }
}

/// An embedded, protocol-faithful Kubernetes API server, running on the tokio runtime that
/// started it.
///
/// It derefs to its [`ServerHandle`] (URL, kubeconfig, faults, inspection); clone that handle
/// to use it from other tasks. Dropping the server stops it; [`shutdown`](Self::shutdown)
/// also waits until it has stopped.
///
/// ```
/// use embedded_apiserver::ApiServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), embedded_apiserver::Error> {
/// let server = ApiServer::start().await?;
/// std::fs::write(std::env::temp_dir().join("embedded.kubeconfig"), server.kubeconfig_yaml())
///     .expect("a writable temp dir");
/// // KUBECONFIG=.../embedded.kubeconfig kubectl get namespaces
/// server.shutdown().await
/// # }
/// ```
#[doc(alias = "kube-apiserver")]
#[derive(Debug)]
pub struct ApiServer {
    handle: ServerHandle,
    task: Option<JoinHandle<Result<()>>>,
    bookmarks: Option<JoinHandle<()>>,
}

impl ApiServer {
    /// Starts a server with the default [`Config`] on `127.0.0.1` and a free port.
    ///
    /// # Errors
    ///
    /// [`Error::Bind`] if no port can be bound.
    pub async fn start() -> Result<Self> {
        Config::default().start().await
    }

    /// The default [`Config`], to adjust before [`Config::start`].
    #[must_use]
    pub fn builder() -> Config {
        Config::default()
    }

    /// A handle that other tasks can keep.
    #[must_use]
    pub fn handle(&self) -> ServerHandle {
        self.handle.clone()
    }

    /// Stops accepting connections, ends every open watch, and waits for the server to stop.
    ///
    /// # Errors
    ///
    /// [`Error::Bind`] if a [restart](ServerHandle::restart) could not listen again, and
    /// [`Error::Task`] if the server task panicked.
    pub async fn shutdown(mut self) -> Result<()> {
        self.stop();
        if let Some(bookmarks) = self.bookmarks.take() {
            bookmarks.await.map_err(Error::Task)?;
        }
        match self.task.take() {
            Some(task) => task.await.map_err(Error::Task)?,
            None => Ok(()),
        }
    }

    /// Serves until the server fails (or forever): the body of `cargo xtask serve`.
    ///
    /// # Errors
    ///
    /// [`Error::Bind`] if a [restart](ServerHandle::restart) cannot listen again, and
    /// [`Error::Task`] if the server task panics.
    pub async fn run(mut self) -> Result<()> {
        match self.task.take() {
            Some(task) => task.await.map_err(Error::Task)?,
            None => Ok(()),
        }
    }

    fn stop(&self) {
        self.handle.shared.shutdown.cancel();
        self.handle.shared.state.lock().hub.drop_all();
    }
}

impl Deref for ApiServer {
    type Target = ServerHandle;

    fn deref(&self) -> &ServerHandle {
        &self.handle
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Serves a fresh server with the default [`Config`] on `addr` until the process ends or the
/// future is dropped: what `cargo xtask serve --addr 127.0.0.1:PORT` runs.
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), embedded_apiserver::Error> {
/// let addr = "127.0.0.1:8080".parse().expect("an address");
/// embedded_apiserver::serve(addr).await
/// # }
/// ```
///
/// # Errors
///
/// [`Error::Bind`] if `addr` cannot be bound.
pub async fn serve(addr: SocketAddr) -> Result<()> {
    Config::default().addr(addr).start().await?.run().await
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A log sink for one subscriber.
    #[derive(Clone, Default)]
    struct Logs(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Logs {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The warnings logged while a server starts with `config` and shuts down.
    fn warnings_when_started(config: Config) -> Vec<String> {
        let logs = Logs::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer({
                let logs = logs.clone();
                move || logs.clone()
            })
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                let server = config.start().await.unwrap();
                server.shutdown().await.unwrap();
            });
        });
        let text = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
        text.lines().filter(|line| line.contains(" WARN ")).map(str::to_owned).collect()
    }

    /// `cargo xtask serve --addr 0.0.0.0:…` and a test that binds every interface are told,
    /// once, that the server takes anyone's writes; loopback, the default, and a server that
    /// authenticates are not noise.
    #[test]
    fn a_server_bound_beyond_loopback_without_authentication_warns_once() {
        let everywhere = SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0));
        let open = warnings_when_started(ApiServer::builder().addr(everywhere));
        assert_eq!(open.len(), 1, "{open:#?}");
        assert!(open[0].contains("listens beyond loopback"), "{open:#?}");
        assert!(open[0].contains("0.0.0.0:"), "names the address: {open:#?}");

        let loopback = warnings_when_started(ApiServer::builder());
        assert!(loopback.is_empty(), "{loopback:#?}");

        let guarded =
            warnings_when_started(ApiServer::builder().addr(everywhere).bearer_tokens(["t"]));
        assert!(guarded.is_empty(), "{guarded:#?}");
    }
}
