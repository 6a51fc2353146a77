//! Prometheus metrics of the webhook server (feature `metrics`), with controller-runtime's
//! names where it has one, through the Prometheus project's `prometheus-client` crate.
//!
//! [`WebhookMetrics::register`] adds them to a [`Registry`]; give that registry to
//! `informer_runtime::metrics::Metrics::with_registry`, and one scrape has the webhooks' metrics
//! beside the informers', work queues' and controllers' (the same `prometheus-client` version,
//! so the same `Registry` type):
//!
//! ```
//! use informer_webhook::WebhookServer;
//! use informer_webhook::metrics::{Registry, WebhookMetrics};
//!
//! let mut registry = Registry::default();
//! let webhook_metrics = WebhookMetrics::register(&mut registry);
//! let metrics = informer_runtime::metrics::Metrics::with_registry(registry);
//! let server = WebhookServer::builder().metrics(&webhook_metrics);
//! // ... the factory, work queues and controllers get `metrics`; the manager serves it.
//! # let _ = (server, metrics);
//! ```
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `controller_runtime_webhook_requests_total` | `webhook`, `code` | requests to a webhook's path, by HTTP status code |
//! | `controller_runtime_webhook_latency_seconds` | `webhook` | histogram: from a request's headers to its answer |
//! | `controller_runtime_webhook_requests_in_flight` | `webhook` | requests being answered |
//! | `controller_runtime_webhook_panics_total` | | handlers that panicked |
//! | `webhook_reviews_total` | `webhook`, `outcome` | reviews by outcome: `allowed`, `denied`, `converted`, `conversion_failed`; and the server's own failure answers: `invalid` (did not decode), `too_large`, `timeout`, `error` (the handler's), `panic` |
//! | `certwatcher_read_certificate_total` | | reads of the certificate files |
//! | `certwatcher_read_certificate_errors_total` | | reads that failed to load |
//!
//! `webhook` is the path a webhook was registered on; requests to other paths are not counted.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
pub use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    webhook: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    webhook: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    webhook: String,
    outcome: &'static str,
}

/// controller-runtime's webhook latency buckets: 10 ns to 1,000 s, by tens.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 12))
}

/// The metrics of the webhook servers of one program; see the [module docs](self). Cheap to
/// clone: clones record into the same metrics.
#[derive(Clone)]
pub struct WebhookMetrics {
    inner: Arc<Families>,
}

struct Families {
    requests: Family<CodeLabels, Counter>,
    latency: Family<WebhookLabels, Histogram, fn() -> Histogram>,
    in_flight: Family<WebhookLabels, Gauge>,
    panics: Counter,
    outcomes: Family<OutcomeLabels, Counter>,
    certificate_reads: Counter,
    certificate_read_errors: Counter,
}

impl std::fmt::Debug for WebhookMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookMetrics").finish_non_exhaustive()
    }
}

impl WebhookMetrics {
    /// The webhook metrics, added to `registry`.
    #[must_use]
    pub fn register(registry: &mut Registry) -> Self {
        let families = Families {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            in_flight: Family::default(),
            panics: Counter::default(),
            outcomes: Family::default(),
            certificate_reads: Counter::default(),
            certificate_read_errors: Counter::default(),
        };
        let f = &families;
        registry.register(
            "controller_runtime_webhook_requests",
            "Requests to a webhook, by HTTP status code",
            f.requests.clone(),
        );
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "How long a webhook took to answer a request",
            f.latency.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Requests a webhook is answering",
            f.in_flight.clone(),
        );
        registry.register(
            "controller_runtime_webhook_panics",
            "Webhook handlers that panicked",
            f.panics.clone(),
        );
        registry.register(
            "webhook_reviews",
            "Reviews a webhook answered, by outcome",
            f.outcomes.clone(),
        );
        registry.register(
            "certwatcher_read_certificate",
            "Reads of the serving certificate's files",
            f.certificate_reads.clone(),
        );
        registry.register(
            "certwatcher_read_certificate_errors",
            "Reads of the serving certificate's files that did not load",
            f.certificate_read_errors.clone(),
        );
        Self { inner: Arc::new(families) }
    }

    /// A request to `webhook` started; the gauge goes down when the guard drops.
    pub(crate) fn started(&self, webhook: &str) -> InFlight {
        let gauge = self
            .inner
            .in_flight
            .get_or_create(&WebhookLabels { webhook: webhook.to_owned() })
            .clone();
        gauge.inc();
        InFlight(gauge)
    }

    /// A request to `webhook` was answered with HTTP `code` and `outcome` after `took`.
    pub(crate) fn answered(&self, webhook: &str, code: u16, outcome: &'static str, took: Duration) {
        let f = &self.inner;
        let webhook = webhook.to_owned();
        f.requests
            .get_or_create(&CodeLabels { webhook: webhook.clone(), code: code.to_string() })
            .inc();
        f.latency
            .get_or_create(&WebhookLabels { webhook: webhook.clone() })
            .observe(took.as_secs_f64());
        f.outcomes.get_or_create(&OutcomeLabels { webhook, outcome }).inc();
        if outcome == "panic" {
            f.panics.inc();
        }
    }

    /// The certificate files were read; `loaded` is false when they did not load.
    pub(crate) fn certificate_read(&self, loaded: bool) {
        self.inner.certificate_reads.inc();
        if !loaded {
            self.inner.certificate_read_errors.inc();
        }
    }
}

/// One request in flight.
pub(crate) struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}
