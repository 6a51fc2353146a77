//! The HTTPS server kube-apiserver calls: admission and conversion webhooks on their paths,
//! over rustls, HTTP/1.1 or HTTP/2 as the client's ALPN chooses (controller-runtime's
//! `webhook.Server`).
//!
//! Where it sits: the top of the crate. It runs the [handlers](crate::handler) of its paths,
//! serves the [certificate](crate::tls) its files hold, and records metrics (feature
//! `metrics`).
//!
//! # Paths
//!
//! | path | answers |
//! |---|---|
//! | each webhook's | `POST` of its review: the review's answer, HTTP 200 (a failure is a denied or failed review, see below); `405` for other methods |
//! | `/healthz`, `/livez` | `200 ok` while the server serves |
//! | `/readyz` | `200 ok` once a certificate is loaded, `503` before |
//! | any other | `404` |
//!
//! # Limits and failures
//!
//! Every request is bounded, and every failure answered as the API server expects: a review
//! (HTTP 200) of the request's `apiVersion` and `uid`, denied (`allowed: false`) or failed
//! (`result.status: Failure`), with a status message naming the webhook's path and what failed.
//! controller-runtime answers the same way; the API server shows the message to the user, and
//! a denial holds whatever the webhook's `failurePolicy`.
//!
//! - **Body size**: at most [`max_body_bytes`](WebhookServerBuilder::max_body_bytes), 7 MiB by
//!   default (controller-runtime's: an UPDATE's review holds two objects of up to 3 MiB each,
//!   the API server's own request limit, and the rest). A larger body is answered with a
//!   denial of code 413 rather than a bare HTTP 413: the review's `uid`, which `kube-apiserver`
//!   writes before the objects, is read from the body's start, so the denial reaches the user
//!   whatever the `failurePolicy`; a bare 413 would be a failed call, which `failurePolicy:
//!   Ignore` admits.
//! - **Deadline**: a request's body and its handler get
//!   [`request_timeout`](WebhookServerBuilder::request_timeout) (30 seconds by default, the
//!   longest `timeoutSeconds` the API server allows), or the `?timeout=` kube-apiserver adds to
//!   each call when that is shorter: no work goes on after the caller gave up. A handler past
//!   its deadline is dropped and the call answered with HTTP 504 (a review denied with code
//!   504 in its body): the API server counts it a failed call, so the webhook's
//!   `failurePolicy` decides, as when the API server's own deadline passes first.
//! - **Handler errors and panics** are denials with code 500 naming the error or the panic's
//!   message; the connection and the server go on.
//! - **Connections**: at most [`max_connections`](WebhookServerBuilder::max_connections) at once
//!   (more wait in the listener's backlog), each with
//!   [`header_timeout`](WebhookServerBuilder::header_timeout) for its TLS handshake and (HTTP/1.1)
//!   each request's headers; an idle HTTP/1.1 connection is closed after it too. HTTP/2
//!   connections allow 250 concurrent streams (Go's default) and are pinged every 30 seconds, a
//!   peer that does not answer within 20 seconds is dropped.
//!
//! # Certificates
//!
//! From PEM files ([`certificate_files`](WebhookServerBuilder::certificate_files)), read again
//! every [`reload_interval`](WebhookServerBuilder::reload_interval) and swapped in when they
//! changed (see [`tls`](crate::tls)); or from PEM in memory
//! ([`certificate_pem`](WebhookServerBuilder::certificate_pem)). Until a certificate has loaded,
//! handshakes fail and `/readyz` answers `503`.
//!
//! # Stopping
//!
//! [`serve`](WebhookServer::serve) stops accepting when its token is cancelled, lets requests in
//! progress finish (HTTP/1.1 connections close after their current request, HTTP/2 ones are
//! sent `GOAWAY`) within the request timeout, then returns.

mod answer;
mod serve;
mod shared;

use std::collections::HashMap;
use std::future::Future;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::admission::{AdmissionRequest, AdmissionResponse};
use crate::handler::{Admission, BoxError, Conversion, ConversionHandler, Webhook};
#[cfg(feature = "metrics")]
use crate::metrics::WebhookMetrics;
use crate::tls::{CertificateError, Certificates, Source};
use shared::{Inner, Limits, Observer};

/// The body limit by default: controller-runtime's `maxRequestSize`.
const MAX_BODY_BYTES: usize = 7 * 1024 * 1024;

/// Why a [`WebhookServer`] could not be built. Each names what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Neither `certificate_files` nor `certificate_pem` was called.
    #[error(
        "the webhook server has no certificate: call certificate_files(cert, key) with the \
         mounted Secret's tls.crt and tls.key, or certificate_pem"
    )]
    NoCertificate,
    /// A path is not an absolute URL path, or is one of the server's own.
    #[error("webhook path {path:?}: {reason}")]
    Path {
        /// The path given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The in-memory certificate does not load, or the TLS configuration cannot be made.
    #[error("the webhook server's certificate: {0}")]
    Certificate(#[from] CertificateError),
    /// A limit is zero.
    #[error("{0} must be above zero")]
    Limit(&'static str),
}

/// Configures a [`WebhookServer`]: its webhooks and their paths, its certificate, its limits.
#[must_use]
pub struct WebhookServerBuilder {
    webhooks: Vec<(String, Arc<dyn Webhook>)>,
    certificate: Option<Source>,
    reload_interval: Duration,
    limits: Limits,
    #[cfg(feature = "metrics")]
    metrics: Option<WebhookMetrics>,
}

impl std::fmt::Debug for WebhookServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServerBuilder")
            .field("paths", &self.webhooks.iter().map(|(p, _)| p).collect::<Vec<_>>())
            .field("certificate", &self.certificate)
            .field("reload_interval", &self.reload_interval)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl WebhookServerBuilder {
    fn new() -> Self {
        Self {
            webhooks: Vec::new(),
            certificate: None,
            // controller-runtime's certwatcher polls every 10 seconds.
            reload_interval: Duration::from_secs(10),
            limits: Limits {
                max_body_bytes: MAX_BODY_BYTES,
                // The longest `timeoutSeconds` a webhook configuration may set.
                request_timeout: Duration::from_secs(30),
                // As the runtime's metrics endpoint and the manager's probe port.
                header_timeout: Duration::from_secs(10),
                max_connections: 1024,
            },
            #[cfg(feature = "metrics")]
            metrics: None,
        }
    }

    /// A validating admission webhook on `path`: `handler` gets each request with its objects
    /// decoded into `K` and admits or denies it (its response may not patch).
    ///
    /// A handler is an async function (or closure) returning `Result<AdmissionResponse, E>`;
    /// an error is answered with a denial naming it.
    pub fn validating<K, F, Fut, E>(self, path: impl Into<String>, handler: F) -> Self
    where
        K: DeserializeOwned + Send + 'static,
        F: Fn(AdmissionRequest<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AdmissionResponse, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        self.admission(path.into(), false, handler)
    }

    /// A mutating admission webhook on `path`: as [`validating`](Self::validating), and its
    /// response may carry a patch
    /// ([`AdmissionResponse::patch_from`]).
    pub fn mutating<K, F, Fut, E>(self, path: impl Into<String>, handler: F) -> Self
    where
        K: DeserializeOwned + Send + 'static,
        F: Fn(AdmissionRequest<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AdmissionResponse, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        self.admission(path.into(), true, handler)
    }

    fn admission<K, F, Fut, E>(mut self, path: String, mutating: bool, handler: F) -> Self
    where
        K: DeserializeOwned + Send + 'static,
        F: Fn(AdmissionRequest<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AdmissionResponse, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        let handler = move |request| -> futures::future::BoxFuture<'static, _> {
            let answered = handler(request);
            Box::pin(async move { answered.await.map_err(Into::into) })
        };
        let webhook =
            Admission { handler: Arc::new(handler), mutating, objects: PhantomData::<fn() -> K> };
        self.webhooks.push((path, Arc::new(webhook)));
        self
    }

    /// A conversion webhook on `path`: a [`Conversions`](crate::convert::Conversions), or an
    /// async function (closure) of a [`ConversionRequest`](crate::conversion::ConversionRequest)
    /// returning `Result<ConversionResponse, E>`.
    pub fn conversion(mut self, path: impl Into<String>, handler: impl ConversionHandler) -> Self {
        let webhook = Conversion { handler: Arc::new(handler) };
        self.webhooks.push((path.into(), Arc::new(webhook)));
        self
    }

    /// Serves the certificate chain in the PEM file `cert` with the private key in the PEM
    /// file `key` (a `kubernetes.io/tls` Secret's `tls.crt` and `tls.key`), reading them again
    /// every [`reload_interval`](Self::reload_interval).
    pub fn certificate_files(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.certificate = Some(Source::Files { cert: cert.into(), key: key.into() });
        self
    }

    /// Serves the certificate chain and the private key given as PEM, for good (tests, or a
    /// certificate made by the program itself).
    pub fn certificate_pem(mut self, cert: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>) -> Self {
        self.certificate = Some(Source::Pem { cert: cert.into(), key: key.into() });
        self
    }

    /// How often the certificate files are read for a change (10 seconds by default, as
    /// controller-runtime's `certwatcher`): a rotation is served within this time.
    pub fn reload_interval(mut self, interval: Duration) -> Self {
        self.reload_interval = interval;
        self
    }

    /// The largest request body read (7 MiB by default; see
    /// [limits](self#limits-and-failures)).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_body_bytes = bytes;
        self
    }

    /// How long a request's body and its handler may take (30 seconds by default, or less
    /// when the API server's `?timeout=` says so).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.limits.request_timeout = timeout;
        self
    }

    /// How long a TLS handshake and a request's headers may take, and an idle HTTP/1.1
    /// connection may stay open (10 seconds by default).
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_timeout = timeout;
        self
    }

    /// How many connections are served at once (1024 by default); more wait to be accepted.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.limits.max_connections = connections;
        self
    }

    /// Records the webhooks' metrics into `metrics` (feature `metrics`).
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics(mut self, metrics: &WebhookMetrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// The server.
    ///
    /// # Errors
    ///
    /// [`BuildError::NoCertificate`] without a certificate, [`BuildError::Path`] for a path
    /// that does not start with `/`, is given twice or is `/healthz`, `/livez` or `/readyz`,
    /// [`BuildError::Limit`] for a zero limit, and [`BuildError::Certificate`] when a PEM
    /// given in memory does not load.
    pub fn build(self) -> Result<WebhookServer, BuildError> {
        let source = self.certificate.ok_or(BuildError::NoCertificate)?;
        let mut webhooks = HashMap::new();
        for (path, webhook) in self.webhooks {
            let reason = if !path.starts_with('/') {
                Some("it does not start with /")
            } else if answer::OWN_PATHS.contains(&path.as_str()) {
                Some("the server answers it itself (health and readiness)")
            } else if webhooks.contains_key(path.as_str()) {
                Some("it is given twice")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(BuildError::Path { path, reason });
            }
            webhooks.insert(Arc::<str>::from(path), webhook);
        }
        let limits = self.limits;
        for (value, name) in [
            (limits.max_body_bytes, "max_body_bytes"),
            (limits.max_connections, "max_connections"),
            (usize::from(!limits.request_timeout.is_zero()), "request_timeout"),
            (usize::from(!limits.header_timeout.is_zero()), "header_timeout"),
            (usize::from(!self.reload_interval.is_zero()), "reload_interval"),
        ] {
            if value == 0 {
                return Err(BuildError::Limit(name));
            }
        }
        let certificates = Arc::new(Certificates::new(source));
        certificates.load_pem()?;
        let tls = Arc::new(certificates.server_config()?);
        Ok(WebhookServer {
            inner: Arc::new(Inner {
                webhooks,
                certificates,
                tls,
                reload_interval: self.reload_interval,
                limits,
                observer: Observer {
                    #[cfg(feature = "metrics")]
                    metrics: self.metrics,
                },
            }),
        })
    }
}

/// The webhook server; see the [module docs](self) for its paths, limits and failures. Cheap
/// to clone: clones are the same server.
///
/// Alone, on a listener of its own, until a token is cancelled:
///
/// ```no_run
/// use informer_webhook::WebhookServer;
/// use informer_webhook::admission::AdmissionRequest;
/// use informer_webhook::CancellationToken;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = WebhookServer::builder()
///     .validating("/validate-configmaps", |request: AdmissionRequest<ConfigMap>| async move {
///         let too_big = request.object.as_ref().and_then(|c| c.data.as_ref()).is_some_and(|d| d.len() > 100);
///         Ok::<_, std::convert::Infallible>(if too_big {
///             request.deny("a ConfigMap of this team holds at most 100 keys")
///         } else {
///             request.allow()
///         })
///     })
///     .certificate_files("/tmp/k8s-webhook-server/serving-certs/tls.crt", "/tmp/k8s-webhook-server/serving-certs/tls.key")
///     .build()?;
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:9443").await?;
/// server.serve(listener, CancellationToken::new()).await;
/// # Ok(())
/// # }
/// ```
///
/// Or as a task of `informer-controller`'s `Manager`, on every replica (the API server calls
/// whichever replica its Service picks, leading or not), stopped with the manager:
///
/// ```no_run
/// use informer_client::{Client, ClientError};
/// use informer_controller::controller::{Action, Controller, stop_on_signal};
/// use informer_controller::manager::{Manager, Placement};
/// use informer_runtime::SharedInformerFactory;
/// use informer_webhook::WebhookServer;
/// use informer_webhook::admission::AdmissionRequest;
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let factory = SharedInformerFactory::new(Client::try_default()?);
/// let webhooks = WebhookServer::builder()
///     .validating("/validate-deployments", |request: AdmissionRequest<Deployment>| async move {
///         Ok::<_, std::convert::Infallible>(request.allow())
///     })
///     .certificate_files("/certs/tls.crt", "/certs/tls.key")
///     .build()?;
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:9443").await?;
/// Manager::new(&factory)
///     .add(Controller::<Deployment, _>::new(&factory), |_request| async {
///         Ok::<_, ClientError>(Action::Done)
///     })
///     .add_task("webhooks", Placement::EveryReplica, move |stop| async move {
///         webhooks.serve(listener, stop).await;
///         Ok::<_, std::convert::Infallible>(())
///     })
///     .run(stop_on_signal())
///     .await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct WebhookServer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("paths", &self.inner.webhooks.keys().collect::<Vec<_>>())
            .field("certificates", &self.inner.certificates)
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

impl WebhookServer {
    /// A builder with no webhook, no certificate, and the default limits.
    pub fn builder() -> WebhookServerBuilder {
        WebhookServerBuilder::new()
    }

    /// Whether a certificate is loaded, so that handshakes succeed: what `/readyz` answers,
    /// for a probe of your own.
    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.inner.certificates.is_loaded()
    }

    /// Serves on `listener` until `stop` is cancelled, then lets requests in progress finish
    /// (within the request timeout) and returns. Loads the certificate first, and (from files)
    /// reads it again every reload interval meanwhile.
    ///
    /// Failing to accept a connection (too many open files, say) is logged and retried after
    /// a pause of up to a second, as Go's `http.Server` does: it does not end the server.
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        stop: tokio_util::sync::CancellationToken,
    ) {
        serve::serve(Arc::clone(&self.inner), listener, stop).await;
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use serde_json::Value;

    use super::*;

    fn validating(builder: WebhookServerBuilder, path: &str) -> WebhookServerBuilder {
        builder.validating(path, |request: AdmissionRequest<Value>| async move {
            Ok::<_, Infallible>(request.allow())
        })
    }

    fn error(builder: WebhookServerBuilder) -> String {
        builder.build().map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn a_server_without_a_certificate_or_with_a_bad_path_or_limit_is_refused_naming_it() {
        let no_certificate = validating(WebhookServer::builder(), "/v");
        assert!(error(no_certificate).contains("call certificate_files(cert, key)"));
        let files = || WebhookServer::builder().certificate_files("/no/tls.crt", "/no/tls.key");
        assert_eq!(
            error(validating(files(), "validate")),
            r#"webhook path "validate": it does not start with /"#
        );
        assert_eq!(
            error(validating(validating(files(), "/v"), "/v")),
            r#"webhook path "/v": it is given twice"#
        );
        assert!(error(validating(files(), "/healthz")).contains("the server answers it itself"));
        assert_eq!(error(files().max_body_bytes(0)), "max_body_bytes must be above zero");
        assert_eq!(
            error(files().request_timeout(Duration::ZERO)),
            "request_timeout must be above zero"
        );
        // Files are read when the server serves: missing ones do not fail the build.
        assert!(validating(files(), "/v").build().is_ok());
    }

    #[test]
    fn pem_that_does_not_load_is_refused_at_build_naming_what_is_wrong() {
        let message = error(WebhookServer::builder().certificate_pem("not pem", "not pem"));
        assert!(message.contains("the certificate PEM holds no PEM certificate"), "{message}");
    }
}
