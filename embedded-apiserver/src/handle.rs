//! [`ServerHandle`]: what a test does to a running server besides HTTP: inject faults, inspect
//! and change objects directly.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::prelude::BASE64_STANDARD;
use informer_runtime::{GroupVersionResource, Status};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::auth::ClientCertificate;
use crate::catalog::{ApiResource, ResourceType};
use crate::faults::{Disruption, Failure};
use crate::registry::{self, Deleted, Part, Scope};
use crate::served::served;
use crate::state::{Restart, Settings, Shared, State};
use crate::status::ApiError;
use crate::storage::{meta_str, object_key};
use crate::traffic::Traffic;

/// A cloneable, thread-safe handle on a running [`ApiServer`](crate::ApiServer): faults,
/// inspection and direct writes.
///
/// Direct writes go through the same code as HTTP requests (validation, resourceVersion,
/// watch events), so a watch sees them exactly as it would see a client's.
///
/// ```
/// use informer_runtime::GroupVersionResource;
/// use embedded_apiserver::{ApiServer, Failure};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = ApiServer::start().await?;
/// let pods = GroupVersionResource::new("", "v1", "pods");
/// let pod = json!({"metadata": {"name": "web-0", "namespace": "default"}});
/// let pod = server.create(&pods, pod).map_err(|status| status.to_string())?;
/// assert_eq!(pod["metadata"]["resourceVersion"], server.resource_version().to_string());
///
/// server.fail_next(2, Failure::too_many_requests(std::time::Duration::from_secs(1)).verb("list"));
/// server.compact(); // a watch from an older version now gets 410 Expired
/// server.shutdown().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ServerHandle {
    pub(crate) shared: Arc<Shared>,
    pub(crate) addr: SocketAddr,
}

impl ServerHandle {
    /// The server's base URL: `http://127.0.0.1:PORT`, or `https://127.0.0.1:PORT` when it
    /// serves [TLS](crate::Config::tls).
    #[must_use]
    pub fn url(&self) -> String {
        let scheme = if self.shared.settings.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The address the server listens on.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The PEM certificate of the CA that signed the server's certificate, for clients to
    /// trust; `None` for a plain-HTTP server. A new CA for each server.
    #[doc(alias = "certificate-authority")]
    #[must_use]
    pub fn ca_pem(&self) -> Option<&str> {
        self.shared.settings.tls.as_ref().map(|tls| tls.ca_pem.as_str())
    }

    /// What the server has served so far, by protocol: whether clients really spoke HTTP/2,
    /// and how many streams one connection had open at once.
    #[must_use]
    pub fn traffic(&self) -> Traffic {
        self.shared.traffic.snapshot()
    }

    /// Replaces the bearer tokens the server accepts ([`Config::bearer_tokens`](crate::Config::bearer_tokens)):
    /// requests with any other token get `401` from now on, over connections already open as
    /// over new ones. On a server started without authentication, this turns token
    /// authentication on.
    pub fn set_bearer_tokens(&self, tokens: impl IntoIterator<Item = impl Into<String>>) {
        self.shared.auth.set_tokens(tokens.into_iter().map(Into::into).collect());
    }

    /// A client certificate for `user` (its common name) from the server's client CA, valid
    /// from a second ago for `valid_for` ([`Config::client_certificates`](crate::Config::client_certificates)).
    ///
    /// # Errors
    ///
    /// [`Error::Tls`](crate::Error::Tls) when the server has no client CA, or the certificate
    /// cannot be made.
    pub fn issue_client_certificate(
        &self,
        user: &str,
        valid_for: Duration,
    ) -> crate::Result<ClientCertificate> {
        self.shared.auth.issue(user, valid_for)
    }

    /// Sends the calls of webhooks naming the service `namespace/name` to `addr` from now on
    /// (see [`Config::webhook_service_address`](crate::Config::webhook_service_address)): for
    /// a webhook server that can only start once the API server runs.
    #[doc(alias = "ServiceResolver")]
    pub fn set_webhook_service_address(&self, namespace: &str, name: &str, addr: SocketAddr) {
        self.shared.webhooks.set_service(namespace, name, addr);
    }

    /// The PEM certificate of the CA whose client certificates the server accepts; `None`
    /// without [`Config::client_certificates`](crate::Config::client_certificates).
    #[must_use]
    pub fn client_ca_pem(&self) -> Option<String> {
        self.shared.auth.client_ca_pem()
    }

    /// A kubeconfig for this server (namespace `default`), for kubectl, kube-rs or
    /// informer-client's `Client`.
    ///
    /// Over plain HTTP the user has no credentials. Over [TLS](crate::Config::tls) the cluster
    /// carries the server's CA as `certificate-authority-data`, and the user a bearer token,
    /// `embedded-apiserver`, which the server ignores unless it was started with
    /// [authentication](crate::Config::bearer_tokens) (then give clients a token it accepts): kubectl asks
    /// for a username and password on a TLS connection when the user has no credentials.
    #[must_use]
    pub fn kubeconfig_yaml(&self) -> String {
        let (ca, user) = match self.ca_pem() {
            Some(pem) => (
                format!("\n    certificate-authority-data: {}", BASE64_STANDARD.encode(pem)),
                "\n    token: embedded-apiserver",
            ),
            None => (String::new(), " {}"),
        };
        format!(
            "apiVersion: v1\n\
             kind: Config\n\
             clusters:\n\
             - name: informer-runtime\n  cluster:\n    server: {url}{ca}\n\
             contexts:\n\
             - name: informer-runtime\n  context:\n    cluster: informer-runtime\n    user: informer-runtime\n    namespace: default\n\
             current-context: informer-runtime\n\
             users:\n\
             - name: informer-runtime\n  user:{user}\n\
             preferences: {{}}\n",
            url = self.url()
        )
    }

    /// Ends every open watch cleanly (the response ends after the events already sent), as a
    /// dropped connection or an API server restart would. History is kept: clients can resume
    /// from their last version. Returns how many watches were open.
    #[allow(clippy::must_use_candidate)] // The count is informational; the drop is the point.
    pub fn drop_watches(&self) -> usize {
        self.shared.state.lock().hub.drop_all()
    }

    /// Stalls every open watch: the connection stays open and nothing more is sent, not even
    /// the end at its timeout, until [`drop_watches`](Self::drop_watches) or shutdown. Watches
    /// opened later are not stalled. Returns how many were stalled.
    #[allow(clippy::must_use_candidate)] // The count is informational; the stall is the point.
    pub fn stall_watches(&self) -> usize {
        self.shared.state.lock().hub.stall_all()
    }

    /// Sends a `BOOKMARK` at the current resourceVersion to every watch that asked for
    /// bookmarks, as the API server does periodically.
    pub fn send_bookmarks(&self) {
        let mut state = self.shared.state.lock();
        let rv = state.store.resource_version();
        state.hub.bookmark(rv);
    }

    /// Compacts history like etcd: a watch from, an exact list at, or a continue token of
    /// any version older than the current one gets `410 Expired`. Open watches keep running.
    pub fn compact(&self) {
        self.shared.state.lock().store.compact();
    }

    /// Keeps at most `limit` changes (of all types together) for watch replay and list
    /// snapshots; older ones are compacted.
    pub fn set_history_limit(&self, limit: usize) {
        self.shared.state.lock().store.set_history_limit(limit);
    }

    /// Switches [`Config::paginate_cached_lists`](crate::Config::paginate_cached_lists) on or
    /// off: whether `resourceVersion=0` lists honour `limit` from now on. A list under way is
    /// not affected, and continue tokens already given out read their snapshot either way
    /// (a continuation is paged whatever the switch says, as it always is).
    pub fn set_paginate_cached_lists(&self, yes: bool) {
        self.shared.state.lock().paginate_cached_lists = yes;
    }

    /// Makes the next `n` resource requests that `failure` matches fail with its status. Rules
    /// queue up: each request consumes the first pending rule it matches.
    pub fn fail_next(&self, n: usize, failure: Failure) {
        self.shared.state.lock().faults.add(n, failure);
    }

    /// Forgets the failures not yet consumed.
    pub fn clear_failures(&self) {
        self.shared.state.lock().faults.clear();
    }

    /// Delays every response by `delay` (`None`: no delay). A watch is delayed before it opens.
    /// To slow the body of a response instead (each watch event, each part of a list), see
    /// [`Disruption::slow`].
    pub fn set_delay(&self, delay: Option<Duration>) {
        self.shared.state.lock().faults.delay = delay;
    }

    /// Makes the next `n` resource responses that `disruption` matches suffer it once their
    /// status and headers are sent: cut short ([`Disruption::truncate`]), stalled
    /// ([`Disruption::stall`]) or slowed ([`Disruption::slow`]). Rules queue up: each request
    /// consumes the first pending rule it matches, after the pending [`Failure`]s (a request
    /// that fails is not also disrupted).
    ///
    /// ```
    /// use embedded_apiserver::{ApiServer, Disruption};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = ApiServer::start().await?;
    /// // The next two lists of pods end after 100 bytes, the connection closed mid-body.
    /// server.disrupt_next(2, Disruption::truncate(100).verb("list").resource("pods"));
    /// // The next watch sends its headers and then nothing, until released.
    /// server.disrupt_next(1, Disruption::stall(0).verb("watch"));
    /// server.clear_disruptions(); // forgets both, and lets stalled responses go on
    /// server.shutdown().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn disrupt_next(&self, n: usize, disruption: Disruption) {
        self.shared.state.lock().faults.add_disruption(n, disruption);
    }

    /// Forgets the disruptions not yet consumed, and lets every response stalled by one go on
    /// (a stalled watch resumes with what it buffered meanwhile, or ends if it was closed for
    /// falling too far behind).
    pub fn clear_disruptions(&self) {
        self.shared.state.lock().faults.clear_disruptions();
    }

    /// Restarts the server as an API server process restarts with etcd intact: every open
    /// connection is closed at once (watches end without their terminating chunk, responses
    /// in flight are cut off, requests waiting for an answer get none), new connections are
    /// refused for `down_for`, and then the server serves again on the same address, with the
    /// same objects and resourceVersions. Completes once it serves again.
    ///
    /// What survives is etcd's part: objects, versions, the history that lists and continue
    /// tokens read, and the faults still pending. What does not is the watch cache's: a
    /// restarted kube-apiserver fills its watch cache from a list at the current version, so
    /// a watch from any older version gets `410 Expired` (`too old resource version`) and its
    /// client relists (KEP-1904, "Efficient watch resumption after kube-apiserver reboot").
    /// This server answers the same, so that a restart exercises the relist a real one
    /// causes; watches from the current version on, or from `""`/`"0"`, are served as usual.
    ///
    /// # Errors
    ///
    /// [`Error::Stopped`](crate::Error::Stopped) if the server shuts down first, and
    /// [`Error::Bind`](crate::Error::Bind) if it cannot listen on its address again within
    /// ten seconds (another process took the port): it has stopped then.
    pub async fn restart(&self, down_for: Duration) -> Result<(), crate::Error> {
        let (done, restarted) = oneshot::channel();
        let request = Restart { down_for, done };
        self.shared.restarts.send(request).await.map_err(|_| crate::Error::Stopped)?;
        restarted.await.map_err(|_| crate::Error::Stopped)?
    }

    /// The current resourceVersion: the number of writes so far, across all types.
    #[must_use]
    pub fn resource_version(&self) -> u64 {
        self.shared.state.lock().store.resource_version()
    }

    /// The number of open watches, of all types (stalled ones included).
    #[must_use]
    pub fn open_watches(&self) -> usize {
        self.shared.state.lock().hub.open()
    }

    /// How many events wait in the buffers of the open watches, all together: what clients
    /// that read slowly (or not at all) cost the server. Each watch buffers at most
    /// [`Config::watch_buffer`](crate::Config::watch_buffer) events, and is closed when it
    /// would need more.
    #[must_use]
    pub fn buffered_watch_events(&self) -> usize {
        self.shared.state.lock().hub.buffered()
    }

    /// Completes once at least `n` watches are open.
    pub async fn wait_for_watches(&self, n: usize) {
        loop {
            let opened = self.shared.watch_opened.notified();
            tokio::pin!(opened);
            opened.as_mut().enable();
            if self.open_watches() >= n {
                return;
            }
            opened.await;
        }
    }

    /// Serves another resource type (from now on, for every client).
    pub fn register(&self, ty: ResourceType) {
        self.shared.state.lock().catalog.add(ApiResource::custom(ty));
    }

    /// The objects of a resource in key order (namespace, then name), as served at its version;
    /// empty for a resource the server does not serve.
    #[must_use]
    pub fn objects(&self, gvr: &GroupVersionResource) -> Vec<Value> {
        let state = self.shared.state.lock();
        let Some(resource) = state.catalog.find(&gvr.group, &gvr.version, &gvr.resource) else {
            return Vec::new();
        };
        let objects = state.store.range(&resource.storage, "");
        objects.map(|(_, obj)| served(obj, &resource).into_owned()).collect()
    }

    /// One object (`namespace` is `""` for cluster-scoped resources).
    #[must_use]
    pub fn get(&self, gvr: &GroupVersionResource, namespace: &str, name: &str) -> Option<Value> {
        let state = self.shared.state.lock();
        let resource = state.catalog.find(&gvr.group, &gvr.version, &gvr.resource)?;
        let namespace = if resource.ty.namespaced { namespace } else { "" };
        let obj = state.store.get(&resource.storage, &object_key(namespace, name))?;
        Some(served(obj, &resource).into_owned())
    }

    /// Creates an object, as a POST would (its namespace is `metadata.namespace`).
    ///
    /// # Errors
    ///
    /// The `Status` the API server would answer with: 404 for an unknown resource, 409 if the
    /// object exists, 422 for an invalid name, 400 for a body of another kind.
    pub fn create(&self, gvr: &GroupVersionResource, obj: Value) -> Result<Value, Status> {
        self.write(gvr, obj, |state, settings, scope, _, obj| {
            registry::create(state, settings, scope, obj, false)
        })
    }

    /// Replaces an object, as a PUT would (with optimistic concurrency when
    /// `metadata.resourceVersion` is set).
    ///
    /// # Errors
    ///
    /// The `Status` the API server would answer with: 404 if there is no such object, 409 if
    /// `metadata.resourceVersion` is stale.
    pub fn update(&self, gvr: &GroupVersionResource, obj: Value) -> Result<Value, Status> {
        self.write(gvr, obj, |state, _, scope, name, obj| {
            registry::update(state, scope, name, obj, Part::Main, false)
        })
    }

    /// Deletes an object, as a DELETE would; returns its last state (an object with
    /// finalizers is only marked for deletion).
    ///
    /// # Errors
    ///
    /// The `Status` the API server would answer with: 404 if there is no such object.
    pub fn delete(
        &self,
        gvr: &GroupVersionResource,
        namespace: &str,
        name: &str,
    ) -> Result<Value, Status> {
        let obj = serde_json::json!({"metadata": {"namespace": namespace, "name": name}});
        let last = self.get(gvr, namespace, name);
        self.write(gvr, obj, |state, _, scope, name, _| {
            match registry::delete(state, scope, name, &serde_json::json!({}), false)? {
                Deleted::Object(obj) => Ok(obj),
                Deleted::Status(_) => Ok(last.unwrap_or_default()),
            }
        })
    }

    /// Appends `text` to the log of `container` in the pod `namespace/pod`: the embedded
    /// server's stand-in for the kubelet, which on a cluster holds what containers write and
    /// which kube-apiserver asks for `pods/{name}/log`.
    ///
    /// The text is served to `GET .../pods/{pod}/log` as the kubelet would serve it: by lines
    /// (`tailLines`, `sinceSeconds` and `timestamps` count each line from when its first byte
    /// was appended), cut at `limitBytes`, and to a `follow=true` request as it is appended,
    /// until the pod is deleted. A line is complete once a `\n` ends it; text without one
    /// continues the line with the next append. The log belongs to this pod (by UID): one
    /// created again under the same name starts empty.
    ///
    /// # Errors
    ///
    /// 404 when there is no such pod; 400 (`container c is not valid for pod p`) when the pod
    /// has no container, init container or ephemeral container of that name.
    ///
    /// ```
    /// use informer_runtime::GroupVersionResource;
    /// use embedded_apiserver::ApiServer;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = ApiServer::start().await?;
    /// let pods = GroupVersionResource::new("", "v1", "pods");
    /// let pod = json!({"metadata": {"name": "web-0", "namespace": "default"},
    ///                  "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
    /// server.create(&pods, pod).map_err(|status| status.to_string())?;
    /// server.append_pod_log("default", "web-0", "app", "started\nlistening on :8080\n")
    ///     .map_err(|status| status.to_string())?;
    /// let url = format!("{}/api/v1/namespaces/default/pods/web-0/log?tailLines=1", server.url());
    /// // GET url answers "listening on :8080\n".
    /// # drop(url);
    /// server.shutdown().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn append_pod_log(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        text: &str,
    ) -> Result<(), Status> {
        let mut state = self.shared.state.lock();
        let pods = state.catalog.find("", "v1", "pods");
        let pods = pods.ok_or_else(|| ApiError::path_not_found().to_status())?;
        let scope = Scope { resource: &pods, namespace: Some(namespace) };
        crate::pod_logs::append(&mut state, scope, pod, container, text).map_err(|e| e.to_status())
    }

    fn write(
        &self,
        gvr: &GroupVersionResource,
        obj: Value,
        op: impl FnOnce(&mut State, &Settings, Scope<'_>, &str, Value) -> Result<Value, ApiError>,
    ) -> Result<Value, Status> {
        let mut state = self.shared.state.lock();
        let resource = state.catalog.find(&gvr.group, &gvr.version, &gvr.resource);
        let resource = resource.ok_or_else(|| ApiError::path_not_found().to_status())?;
        let namespace = meta_str(&obj, "namespace").to_owned();
        let namespace = resource.ty.namespaced.then_some(namespace.as_str());
        if namespace == Some("") {
            return Err(
                ApiError::bad_request("a namespaced object needs metadata.namespace").to_status()
            );
        }
        let scope = Scope { resource: &resource, namespace };
        let name = meta_str(&obj, "name").to_owned();
        let settings = &self.shared.settings;
        let written = op(&mut state, settings, scope, &name, obj).map_err(|e| e.to_status())?;
        Ok(served(&written, &resource).into_owned())
    }
}

impl fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerHandle")
            .field("url", &self.url())
            .field("resource_version", &self.resource_version())
            .finish_non_exhaustive()
    }
}
