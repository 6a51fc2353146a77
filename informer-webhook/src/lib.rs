//! Kubernetes admission and conversion webhooks: the typed reviews kube-apiserver sends, an
//! HTTPS server that answers them (certificates reloaded as cert-manager rotates them, bounded
//! bodies and deadlines, every failure answered as the API server expects), and conversion of a
//! kind served in several versions through one hub version.
//!
//! - [`admission`]: `AdmissionReview` v1, with the request's objects decoded into your type,
//!   and a response that allows, denies, warns, or patches (a JSON patch computed from the
//!   object you changed).
//! - [`conversion`]: `ConversionReview` v1.
//! - [`convert`]: hub-and-spoke conversion of multi-version kinds, keeping the fields a version
//!   does not know in an annotation; [`crd`] sets a CRD's conversion to the webhook.
//! - [`WebhookServer`]: several webhooks on their paths, over rustls, alone or as a task of
//!   `informer-controller`'s `Manager`.
//!
//! ```no_run
//! use informer_webhook::{CancellationToken, WebhookServer};
//! use informer_webhook::admission::AdmissionRequest;
//! use k8s_openapi::api::core::v1::Pod;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = WebhookServer::builder()
//!     .validating("/validate-pods", |request: AdmissionRequest<Pod>| async move {
//!         let Some(pod) = &request.object else { return Ok::<_, std::convert::Infallible>(request.allow()) };
//!         let privileged = pod.spec.iter().flat_map(|s| &s.containers).any(|c| {
//!             c.security_context.as_ref().and_then(|s| s.privileged).unwrap_or(false)
//!         });
//!         Ok(if privileged { request.deny("privileged containers are not allowed here") } else { request.allow() })
//!     })
//!     .mutating("/default-pods", |request: AdmissionRequest<Pod>| async move {
//!         let Some(original) = &request.object else { return Ok(request.allow()) };
//!         let mut pod = original.clone();
//!         pod.metadata.labels.get_or_insert_default().entry("team".into()).or_insert_with(|| "unknown".into());
//!         request.allow().patch_from(original, &pod)
//!     })
//!     // A kubernetes.io/tls Secret (cert-manager's) mounted as a volume.
//!     .certificate_files("/certs/tls.crt", "/certs/tls.key")
//!     .build()?;
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:9443").await?;
//! server.serve(listener, CancellationToken::new()).await;
//! # Ok(())
//! # }
//! ```
//!
// Plain names, not links: the links would break in documentation built without the features.
//! With the `metrics` feature, the server records Prometheus metrics (the `metrics` module)
//! into the registry of the runtime's `informer_runtime::metrics::Metrics`. With `testing`, a
//! throwaway CA issues serving certificates for tests (`testing::TestCa`).
//!
//! # Layers
//!
//! From the bottom up; a module imports only from its own line or the lines above, and never
//! in a circle. Nothing here imports `informer-runtime` or `informer-controller`: the manager
//! runs the server as a task, and neither crate knows this one.
//!
//! - `status`, `patch`: `meta/v1` `Status` values; JSON patches from a changed object
//! - `admission`, `conversion`: the typed reviews
//! - `convert`, `crd`: hub-and-spoke conversion of multi-version kinds; the CRD's conversion
//!   stanza
//! - `tls`, `metrics`, `testing`: the serving certificate from files; Prometheus metrics; a
//!   test CA
//! - `handler`: webhooks from review bytes to answer bytes, every failure answered
//! - `server`: the HTTPS server, its paths, limits and shutdown

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod admission;
pub mod conversion;
pub mod convert;
pub mod crd;
pub mod handler;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
mod patch;
pub mod server;
mod status;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;
pub mod tls;

pub use handler::{BoxError, ConversionHandler};
pub use server::{BuildError, WebhookServer, WebhookServerBuilder};
/// The stop signal [`WebhookServer::serve`] takes, re-exported so that a program needs no
/// tokio-util dependency to name it.
pub use tokio_util::sync::CancellationToken;

// The README is the crate's registry page: its examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
