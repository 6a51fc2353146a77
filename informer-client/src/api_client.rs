//! [`Client`]: one API server, its connection pool and credentials, and the typed requests a
//! controller makes (get, create, replace, patches and server-side apply, status updates,
//! deletes with preconditions). Lists and watches go through its lister-watcher
//! (`http_lister_watcher`).

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
use serde::Serialize;
use serde::de::DeserializeOwned;
use url::Url;

use super::body::{BodyReader, ReadError};
#[cfg(feature = "http")]
use super::config::Config;
#[cfg(feature = "http")]
use super::config::auth::Authenticator;
#[cfg(feature = "http")]
use super::config::tls::{self, PinnedHost, TlsOptions};
#[cfg(feature = "http")]
use super::connections::{Connections, PoolSettings};
use super::error::{
    ClientError, MAX_ERROR_BODY, Result, decode_error, status_from_response, transport_error,
};
use super::limits::Limits;
use super::request::{JSON, check_segment, collection_url, object_accept, object_url};
#[cfg(feature = "http")]
use super::rotation::{RotatingHttp, TlsRotation};
use super::transport::{Body, Response, Traffic, Transport};
use informer_runtime::listwatch::Error;
use informer_runtime::resource::{Resource, WholeObject, is_namespaced, resource_name};

/// A client for one Kubernetes API server.
///
/// Cheap to clone: clones share their connections and one set of credentials. `Debug` shows
/// the server's URL and default namespace, never credentials.
///
/// # Connections and the server's stream limit
///
/// Over HTTP/2 (what kube-apiserver speaks over TLS) a connection carries many requests at
/// once, up to the limit the server advertises (`--http2-max-streams-per-connection`: 250
/// unless set; proxies and load balancers in front of it often 100). A request past that limit
/// waits for a stream to end, and a watch holds its stream for minutes. So a client built by
/// [`Client::new`] keeps its watches off the connection of its other requests (lists, gets,
/// writes, Events, Lease renewals), which then never wait behind watches, and opens another
/// connection for every [`watches_per_connection`](Config::watches_per_connection) watches (50
/// by default), as client-go's transport opens another connection at the server's limit. A
/// connection whose watches have all ended is closed (the first one stays). Set
/// `watches_per_connection` below the limit of a server or proxy that advertises 50 or less.
///
/// A burst does not multiply connections: requests that find a new connection still dialling
/// wait for it (up to a second) rather than each opening one, so informers for 2,000 namespaces
/// started at once open about 41 connections, not thousands of TLS handshakes.
///
/// A client over a kube-rs `kube::Client` (`Client::from`) speaks HTTP/1.1, with a
/// connection per request, watches included: no stream limit applies.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    /// What carries the requests: this crate's HTTP client and credentials, or a kube-rs client.
    transport: Transport,
    /// The URL requests go to: the cluster URL without credentials, with the TLS server name
    /// as host when that is how `tls_server_name` is honoured.
    base: Url,
    /// The cluster URL as configured, without credentials (for `Debug`); `None` over a kube-rs
    /// client, which does not say.
    cluster_url: Option<Url>,
    default_namespace: String,
    limits: Limits,
    /// [`Config::watch_idle_timeout`].
    watch_idle_timeout: Option<Duration>,
}

/// A patch in one of the API server's formats: what [`Client::patch`] sends. `P` is what the
/// body is serialized from: a `serde_json::Value`, a typed object, a struct of your own.
#[derive(Clone, Debug)]
pub enum Patch<P> {
    /// Server-side apply (`application/apply-patch+yaml`; JSON is YAML): the object as the
    /// [field manager](PatchParams::apply) wants it, with `apiVersion` and `kind`; the
    /// fields it sets are the ones that manager owns, and the ones it owned and no longer sets
    /// are removed.
    Apply(P),
    /// A JSON merge patch, RFC 7386 (`application/merge-patch+json`): the fields to change,
    /// `null` to remove one; lists are replaced whole.
    Merge(P),
    /// A strategic merge patch (`application/strategic-merge-patch+json`): a merge patch that
    /// merges lists by their keys (containers by name). Built-in kinds only.
    Strategic(P),
    /// A JSON patch, RFC 6902 (`application/json-patch+json`): a list of operations, `test`
    /// included.
    Json(P),
}

/// Options of [`Client::patch`]: who changes the fields, and how.
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct PatchParams {
    field_manager: Option<String>,
    force: bool,
    dry_run: bool,
}

impl PatchParams {
    /// The options of a server-side apply by `field_manager` (required for [`Patch::Apply`]:
    /// the name that owns the fields applied, usually the controller's).
    pub fn apply(field_manager: impl Into<String>) -> Self {
        Self::default().field_manager(field_manager)
    }

    /// Records the fields changed as `name`'s (the server's `fieldManager` parameter).
    pub fn field_manager(mut self, name: impl Into<String>) -> Self {
        self.field_manager = Some(name.into());
        self
    }

    /// For an apply: takes over the fields other managers own instead of failing with a
    /// conflict (what a controller that is the source of truth for them does).
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }

    /// Validates and answers with the result without storing it (`dryRun=All`).
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    fn set_query(&self, url: &mut Url) {
        let mut query = url.query_pairs_mut();
        if let Some(manager) = &self.field_manager {
            query.append_pair("fieldManager", manager);
        }
        if self.force {
            query.append_pair("force", "true");
        }
        if self.dry_run {
            query.append_pair("dryRun", "All");
        }
        drop(query);
        if url.query() == Some("") {
            url.set_query(None);
        }
    }
}

#[cfg(feature = "http")]
impl Client {
    /// A client for the server and credentials `config` describes.
    ///
    /// # Errors
    ///
    /// [`ClientError::Config`] when the credentials cannot be set up (for example an exec
    /// plugin that fails), [`ClientError::Tls`] for unusable certificates or keys, or no trust
    /// roots for an `https` URL, and [`ClientError::Http`] for an unusable proxy URL.
    ///
    /// Nothing is run or sent yet: an exec credential plugin runs on the first request. Its
    /// tokens and client certificates are refreshed when they expire or a 401 refuses them;
    /// client certificate and CA files the configuration was read from
    /// ([`Config::identity_files`], [`Config::root_certs_file`]) are read again when they
    /// change. When the certificate or the CA changes, new requests go out over new
    /// connections (requests under way, such as watches, finish on theirs).
    ///
    /// With [`Config::accept_invalid_certs`], a warning says, once, that the server's
    /// certificate is not verified.
    ///
    /// # Examples
    ///
    /// ```
    /// use informer_client::{Client, Config};
    ///
    /// let client = Client::new(Config::new("http://127.0.0.1:8080".parse().unwrap()))?;
    /// assert_eq!(client.default_namespace(), "default");
    /// # Ok::<(), informer_client::ClientError>(())
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub fn new(config: Config) -> Result<Self> {
        let auth = Authenticator::new(&config)?;
        let provider = tls::provider();
        let rotation = TlsRotation::new(&config, &provider)?;
        let mut cluster_url = config.cluster_url.clone();
        // Credentials go in headers, never in URLs (nor in logs and errors that quote them).
        let _ = cluster_url.set_username("");
        let _ = cluster_url.set_password(None);
        let mut base = cluster_url.clone();
        let https = base.scheme() == "https";
        let (pinned, verify_name) = server_name_plan(&config, &base);
        let tls = tls::client_config(
            &TlsOptions {
                root_certs_pem: config.root_certs_pem.as_deref(),
                roots: rotation.roots(),
                client_cert: rotation.resolver(),
                client_cert_rotates: rotation.rotates(),
                accept_invalid_certs: config.accept_invalid_certs,
                verify_name,
                https,
            },
            &provider,
        )?;
        if config.accept_invalid_certs {
            // A man in the middle can read and change everything, credentials included.
            tracing::warn!(url = %cluster_url, "the TLS server certificate is not verified (accept_invalid_certs, insecure-skip-tls-verify): whoever is on the path can read and change the traffic, credentials included; use it only against a test cluster");
        }
        let proxy = match &config.proxy_url {
            Some(proxy) => Some(reqwest::Proxy::all(proxy.as_str()).map_err(ClientError::Http)?),
            None => None,
        };
        let pinned = match pinned {
            Some(pinned) => {
                base.set_host(Some(&pinned.name)).map_err(|e| {
                    ClientError::Tls(format!("tls_server_name {:?}: {e}", pinned.name))
                })?;
                Some(Arc::new(pinned))
            }
            None => None,
        };
        let (connect_timeout, per_connection) =
            (config.connect_timeout, config.watches_per_connection);
        // Built again, with the same settings, each time the TLS credentials rotate: the
        // connections of requests and of watches alike.
        let build = move || {
            let settings = PoolSettings {
                tls: tls.clone(),
                connect_timeout,
                proxy: proxy.clone(),
                pinned: pinned.clone(),
            };
            Connections::new(settings, per_connection)
        };
        let http = RotatingHttp::new(rotation, build)?;
        tracing::debug!(url = %cluster_url, "client ready");
        Ok(Self {
            inner: Arc::new(Inner {
                transport: Transport::Http { http: Box::new(http), auth },
                base,
                cluster_url: Some(cluster_url),
                default_namespace: config.default_namespace,
                limits: Limits {
                    read_idle_timeout: config.read_idle_timeout,
                    max_object_size: config.max_object_size,
                },
                watch_idle_timeout: config.watch_idle_timeout,
            }),
        })
    }
}

impl Client {
    /// A client for the configuration kubectl would use: the kubeconfig files (`KUBECONFIG`, or
    /// `~/.kube/config`) with their current context, else the in-cluster service account (see
    /// [`Config::infer`]).
    ///
    /// # Errors
    ///
    /// [`ClientError::Config`] when no configuration can be found or loaded, and the errors of
    /// [`Client::new`].
    ///
    /// ```no_run
    /// let client = informer_client::Client::try_default()?;
    /// # Ok::<(), informer_client::ClientError>(())
    /// ```
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub fn try_default() -> Result<Self> {
        Self::new(Config::infer()?)
    }

    /// A client whose requests `transport` carries; their URLs are built on `base`. Reads are
    /// bounded by `limits` and watches by `watch_idle_timeout`, as [`Client::new`] sets them
    /// from a [`Config`].
    #[cfg(feature = "kube")]
    pub(crate) fn with_transport(
        transport: Transport,
        base: Url,
        default_namespace: String,
        limits: Limits,
        watch_idle_timeout: Option<Duration>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                transport,
                base,
                cluster_url: None,
                default_namespace,
                limits,
                watch_idle_timeout,
            }),
        }
    }

    /// [`Config::watch_idle_timeout`], for the lister-watchers.
    pub(crate) fn watch_idle_timeout(&self) -> Option<Duration> {
        self.inner.watch_idle_timeout
    }

    /// The namespace of the configuration's context (`default` when it names none).
    #[must_use]
    pub fn default_namespace(&self) -> &str {
        &self.inner.default_namespace
    }

    /// Reads one object.
    ///
    /// `namespace` is required for namespaced kinds and ignored for cluster-scoped ones.
    ///
    /// # Errors
    ///
    /// [`ClientError::Api`] with the server's status (`404 NotFound`: see
    /// [`ClientError::is_not_found`]), [`ClientError::Request`] for transport and decode
    /// failures, [`ClientError::NamespaceRequired`].
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use k8s_openapi::api::core::v1::Namespace;
    /// let ns: Namespace = client.get(None, "kube-system").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get<K: Resource>(&self, namespace: Option<&str>, name: &str) -> Result<K> {
        let url = self.object_url::<K>(namespace, name)?;
        self.request_object(Method::GET, url, None).await
    }

    /// Creates an object; returns it as the server stored it.
    ///
    /// `K` holds whole objects ([`WholeObject`]): a view or
    /// [`PartialObjectMetadata`](informer_runtime::metadata::PartialObjectMetadata) lacks fields, which the
    /// server would then not have.
    ///
    /// # Errors
    ///
    /// As [`Client::get`]; `409 Conflict` ([`ClientError::is_conflict`]) when it exists.
    pub async fn create<K: WholeObject>(&self, namespace: Option<&str>, object: &K) -> Result<K> {
        let url = self.collection_url::<K>(namespace)?;
        let body = encode(&url, object)?;
        self.request_object(Method::POST, url, Some(("application/json", body))).await
    }

    /// Replaces an object (an update); the object's `metadata.resourceVersion`, when set, makes
    /// it conditional.
    ///
    /// `K` holds whole objects ([`WholeObject`]): replacing an object with a view or its
    /// metadata would erase every field they lack. To change some fields of an object whose
    /// view you hold, send a [merge patch](Self::patch_merge).
    ///
    /// ```compile_fail,E0277
    /// # async fn run(
    /// #     client: informer_client::Client,
    /// #     metadata: informer_runtime::PartialObjectMetadata<k8s_openapi::api::core::v1::Pod>,
    /// # ) {
    /// // The metadata of a pod is not a pod: replacing the pod with it would erase its spec.
    /// client.replace(Some("default"), "web-0", &metadata).await;
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Client::get`]; `409 Conflict` when the resource version is stale.
    pub async fn replace<K: WholeObject>(
        &self,
        namespace: Option<&str>,
        name: &str,
        object: &K,
    ) -> Result<K> {
        let url = self.object_url::<K>(namespace, name)?;
        let body = encode(&url, object)?;
        self.request_object(Method::PUT, url, Some(("application/json", body))).await
    }

    /// Applies a JSON merge patch (RFC 7386) to an object; returns the result.
    ///
    /// The patch names the fields it changes, so `K` may be a view: the result is decoded into
    /// it.
    ///
    /// # Errors
    ///
    /// As [`Client::get`].
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use k8s_openapi::api::core::v1::Pod;
    /// let patch = serde_json::json!({"metadata": {"labels": {"tier": "edge"}}});
    /// let pod: Pod = client.patch_merge(Some("default"), "web-0", &patch).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn patch_merge<K: Resource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<K> {
        let url = self.object_url::<K>(namespace, name)?;
        let body = encode(&url, patch)?;
        self.request_object(Method::PATCH, url, Some(("application/merge-patch+json", body))).await
    }

    /// Patches an object, in any of the API server's [formats](Patch); returns the result.
    ///
    /// A patch names the fields it changes, so `K` may be a view: the result is decoded into
    /// it. A `409 Conflict` ([`ClientError::is_conflict`]) means a precondition in the patch
    /// (`metadata.resourceVersion`) failed or, for an apply without
    /// [`force`](PatchParams::force), that another manager owns a field it sets.
    ///
    /// # Errors
    ///
    /// As [`Client::get`]; `415` for a strategic merge patch of a custom resource.
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use informer_client::{Patch, PatchParams};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// // Server-side apply: the controller owns `data.mode` from now on.
    /// let desired = serde_json::json!({
    ///     "apiVersion": "v1", "kind": "ConfigMap",
    ///     "metadata": {"name": "settings", "namespace": "apps"},
    ///     "data": {"mode": "fast"},
    /// });
    /// let params = PatchParams::apply("settings-controller").force();
    /// let cm: ConfigMap = client.patch(Some("apps"), "settings", &Patch::Apply(&desired), &params).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn patch<K: Resource, P: Serialize>(
        &self,
        namespace: Option<&str>,
        name: &str,
        patch: &Patch<P>,
        params: &PatchParams,
    ) -> Result<K> {
        let url = self.object_url::<K>(namespace, name)?;
        self.patch_at(url, patch, params).await
    }

    /// Patches an object's `status` subresource: only its status changes (for kinds that
    /// have one: the rest of the patch is ignored).
    ///
    /// # Errors
    ///
    /// As [`Client::patch`]; `404` for a kind without a status subresource.
    pub async fn patch_status<K: Resource, P: Serialize>(
        &self,
        namespace: Option<&str>,
        name: &str,
        patch: &Patch<P>,
        params: &PatchParams,
    ) -> Result<K> {
        let url = self.subresource_url::<K>(namespace, name, "status")?;
        self.patch_at(url, patch, params).await
    }

    /// Replaces an object's `status` subresource (an update of its status only); the object's
    /// `metadata.resourceVersion`, when set, makes it conditional.
    ///
    /// # Errors
    ///
    /// As [`Client::replace`]; `409 Conflict` when the resource version is stale.
    pub async fn replace_status<K: WholeObject>(
        &self,
        namespace: Option<&str>,
        name: &str,
        object: &K,
    ) -> Result<K> {
        let url = self.subresource_url::<K>(namespace, name, "status")?;
        let body = encode(&url, object)?;
        self.request_object(Method::PUT, url, Some(("application/json", body))).await
    }

    async fn patch_at<K: Resource, P: Serialize>(
        &self,
        url: Url,
        patch: &Patch<P>,
        params: &PatchParams,
    ) -> Result<K> {
        let (url, body) = patch_request(url, patch, params)?;
        self.request_object(Method::PATCH, url, Some(body)).await
    }

    /// Deletes an object. The server may keep it for a while (finalizers, graceful deletion).
    ///
    /// # Errors
    ///
    /// As [`Client::get`].
    pub async fn delete<K: Resource>(&self, namespace: Option<&str>, name: &str) -> Result<()> {
        let url = self.object_url::<K>(namespace, name)?;
        self.delete_at(url, None).await
    }

    /// Deletes an object with `options`: preconditions (the UID or resource version it must
    /// still have; `409 Conflict` otherwise), propagation to its dependents, grace period.
    ///
    /// # Errors
    ///
    /// As [`Client::get`]; `409 Conflict` when a precondition fails.
    ///
    /// ```no_run
    /// # async fn run(client: informer_client::Client) -> informer_client::Result<()> {
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, Preconditions};
    /// let options = DeleteOptions {
    ///     // Only the object this controller saw, not one created since under the same name.
    ///     preconditions: Some(Preconditions { uid: Some("6f1c…".into()), ..Preconditions::default() }),
    ///     propagation_policy: Some("Foreground".into()),
    ///     ..DeleteOptions::default()
    /// };
    /// client.delete_with::<Deployment>(Some("apps"), "web", &options).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn delete_with<K: Resource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<()> {
        let url = self.object_url::<K>(namespace, name)?;
        let body = encode(&url, options)?;
        self.delete_at(url, Some(("application/json", body))).await
    }

    /// A `DELETE` of `url`, with `body` (the `DeleteOptions`) when given.
    pub(crate) async fn delete_at(&self, url: Url, body: Option<Body>) -> Result<()> {
        let path = url.path().to_owned();
        let response = self.send(Method::DELETE, url, body).await;
        // The body (the object or a Status) is not needed; reading it frees the connection for
        // reuse. One too large is dropped unread instead, which closes the connection.
        if let Ok(response) = response {
            let limits = self.inner.limits;
            let mut body = BodyReader::new(response, limits.read_idle_timeout);
            let _ = body.read_prefix(limits.max_object_size).await;
            return Ok(());
        }
        response.map(drop).map_err(|e| ClientError::request("DELETE", path, e))
    }

    pub(crate) fn subresource_url<K: Resource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        subresource: &str,
    ) -> Result<Url> {
        namespace_of::<K>(namespace)?;
        Ok(object_url::<K>(&self.inner.base, namespace, name, Some(subresource))?)
    }

    fn collection_url<K: Resource>(&self, namespace: Option<&str>) -> Result<Url> {
        namespace_of::<K>(namespace)?;
        Ok(collection_url::<K>(&self.inner.base, namespace)?)
    }

    fn object_url<K: Resource>(&self, namespace: Option<&str>, name: &str) -> Result<Url> {
        namespace_of::<K>(namespace)?;
        Ok(object_url::<K>(&self.inner.base, namespace, name, None)?)
    }

    async fn request_object<K: Resource>(
        &self,
        method: Method,
        url: Url,
        body: Option<Body>,
    ) -> Result<K> {
        let accept = object_accept::<K>();
        self.request_decoded(method, url, body, accept, resource_name::<K>, K::KIND).await
    }

    /// One request answered with one object, decoded as `T`; `resource` (`plural[.group]`)
    /// and `kind` name what did not decode in the error.
    pub(crate) async fn request_decoded<T: DeserializeOwned>(
        &self,
        method: Method,
        url: Url,
        body: Option<Body>,
        accept: &'static str,
        resource: impl FnOnce() -> String,
        kind: &str,
    ) -> Result<T> {
        let verb = verb(&method);
        let path = url.path().to_owned();
        let result = async {
            let response = self.send_accepting(method, url, body, accept).await?;
            let bytes = self.read_object(response).await?;
            serde_json::from_slice::<T>(&bytes)
                .map_err(|e| decode_error(&resource(), kind, &bytes, &e))
        };
        result.await.map_err(|e| ClientError::request(verb, path, e))
    }

    /// The body of a response that is one object: at most
    /// [`max_object_size`](Config::max_object_size) bytes.
    async fn read_object(&self, response: Response) -> Result<bytes::Bytes, Error> {
        let Limits { read_idle_timeout: idle, max_object_size: max } = self.inner.limits;
        let mut body = BodyReader::new(response, idle);
        let (bytes, read) = body.read_prefix(max.saturating_add(1)).await;
        match read {
            Ok(_) if bytes.len() > max => Err(Error::Decode(format!(
                "the response is larger than the maximum object size, {max} bytes \
                 (Config::max_object_size); raise max_object_size if the API server serves \
                 objects this large"
            ))),
            Ok(_) => Ok(bytes),
            Err(ReadError::Idle(idle)) => Err(Error::Transport(format!(
                "the response body stopped for {idle:?} (Config::read_idle_timeout)"
            ))),
            Err(ReadError::Failed(e)) => Err(transport_error(e.cause())),
        }
    }

    /// The URL requests are built on.
    pub(crate) fn base_url(&self) -> &Url {
        &self.inner.base
    }

    /// The bounds of this client's reads.
    pub(crate) fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// Sends one request with credentials that accepts JSON; any non-2xx answer becomes
    /// [`Error::Api`].
    ///
    /// A 401 makes the credentials be refreshed for the next request.
    pub(crate) async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<Body>,
    ) -> Result<Response, Error> {
        self.send_accepting(method, url, body, JSON).await
    }

    /// [`send`](Self::send) with the `Accept` header `accept`.
    ///
    /// The response's headers must arrive within the
    /// [`read_idle_timeout`](Config::read_idle_timeout); of an error answer's body, at most
    /// [`MAX_ERROR_BODY`] bytes are read, under the same deadline.
    pub(crate) async fn send_accepting(
        &self,
        method: Method,
        url: Url,
        body: Option<Body>,
        accept: &'static str,
    ) -> Result<Response, Error> {
        self.send_traffic(method, url, body, accept, Traffic::Request).await
    }

    /// A watch: [`send_accepting`](Self::send_accepting) of a `GET`, over a watch connection
    /// (see [Connections](Client#connections-and-the-servers-stream-limit)) held until the
    /// body is dropped.
    pub(crate) async fn send_watch(
        &self,
        url: Url,
        accept: &'static str,
    ) -> Result<Response, Error> {
        self.send_traffic(Method::GET, url, None, accept, Traffic::Watch).await
    }

    async fn send_traffic(
        &self,
        method: Method,
        url: Url,
        body: Option<Body>,
        accept: &'static str,
        traffic: Traffic,
    ) -> Result<Response, Error> {
        tracing::trace!(%method, path = url.path(), ?traffic, "request");
        let path = url.path().to_owned();
        let idle = self.inner.limits.read_idle_timeout;
        let response = self.inner.transport.send(method, url, body, accept, traffic, idle).await?;
        let code = response.status();
        if code.is_success() {
            return Ok(response);
        }
        let headers = response.headers().clone();
        // A `Status` is a few hundred bytes: the rest of a larger body (a proxy's error page, or
        // worse) is not read, and a body that stops coming is taken as far as it came.
        let (body, read) = BodyReader::new(response, idle).read_prefix(MAX_ERROR_BODY).await;
        if !matches!(read, Ok(true)) {
            tracing::debug!(path, read = body.len(), "error body read in part");
        }
        let status = status_from_response(code, &headers, &body);
        tracing::debug!(path, %status, "request failed");
        Err(Error::Api(status))
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("cluster_url", &self.inner.cluster_url.as_ref().map(Url::as_str))
            .field("transport", &self.inner.transport.name())
            .field("default_namespace", &self.inner.default_namespace)
            .finish_non_exhaustive()
    }
}

/// How `tls_server_name` is honoured: by addressing the server by that name (SNI and
/// verification both use it; a resolver maps it to the real host), or, through a proxy or for
/// an IP address, by verifying the certificate against it.
#[cfg(feature = "http")]
fn server_name_plan<'a>(config: &'a Config, base: &Url) -> (Option<PinnedHost>, Option<&'a str>) {
    let Some(name) = config.tls_server_name.as_deref().filter(|n| !n.is_empty()) else {
        return (None, None);
    };
    let Some(host) = base.host() else {
        return (None, Some(name));
    };
    if host.to_string().eq_ignore_ascii_case(name) || base.scheme() != "https" {
        return (None, None);
    }
    if config.proxy_url.is_none() && name.parse::<std::net::IpAddr>().is_err() {
        (Some(PinnedHost { name: name.to_owned(), host: host.to_owned() }), None)
    } else {
        (None, Some(name))
    }
}

/// A request about one object of a namespaced kind (or one created) is in one namespace:
/// not every namespace, which `""` is for a collection.
fn namespace_of<K: Resource>(namespace: Option<&str>) -> Result<()> {
    if !is_namespaced::<K>() {
        return Ok(());
    }
    match namespace {
        None => Err(ClientError::NamespaceRequired { resource: resource_name::<K>() }),
        Some(ns) => Ok(check_segment("namespace", ns)?),
    }
}

/// `patch` as a request: `url` with `params`' query, and the body in the patch's format.
pub(crate) fn patch_request<P: Serialize>(
    mut url: Url,
    patch: &Patch<P>,
    params: &PatchParams,
) -> Result<(Url, Body)> {
    params.set_query(&mut url);
    let (content_type, value) = match patch {
        Patch::Apply(p) => ("application/apply-patch+yaml", p),
        Patch::Merge(p) => ("application/merge-patch+json", p),
        Patch::Strategic(p) => ("application/strategic-merge-patch+json", p),
        Patch::Json(p) => ("application/json-patch+json", p),
    };
    let body = encode(&url, value)?;
    Ok((url, (content_type, body)))
}

/// `value` as a JSON request body for `url`.
pub(crate) fn encode<T: serde::Serialize>(url: &Url, value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| ClientError::Request {
        method: "ENCODE",
        path: url.path().to_owned(),
        source: Box::new(Error::Decode(format!("encoding the request body: {e}"))),
    })
}

fn verb(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        _ => "REQUEST",
    }
}
