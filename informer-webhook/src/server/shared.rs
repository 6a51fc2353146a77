//! What every connection of a server shares: its webhooks, certificate and TLS configuration,
//! its limits, and where it records what it does. Below the files that serve connections
//! (`serve.rs`) and answer requests (`answer.rs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::handler::{Outcome, Webhook};
#[cfg(feature = "metrics")]
use crate::metrics::WebhookMetrics;
use crate::tls::Certificates;

/// The bounds of the server; see [limits](super#limits-and-failures).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_body_bytes: usize,
    pub(crate) request_timeout: Duration,
    pub(crate) header_timeout: Duration,
    pub(crate) max_connections: usize,
}

/// What every connection shares.
pub(crate) struct Inner {
    pub(crate) webhooks: HashMap<Arc<str>, Arc<dyn Webhook>>,
    pub(crate) certificates: Arc<Certificates>,
    pub(crate) tls: Arc<rustls::ServerConfig>,
    pub(crate) reload_interval: Duration,
    pub(crate) limits: Limits,
    pub(crate) observer: Observer,
}

/// A request in flight, as the metrics count it: its end when dropped.
pub(crate) struct InFlight {
    #[cfg(feature = "metrics")]
    _gauge: Option<crate::metrics::InFlight>,
}

/// Where the server records what it does: the metrics when there are some.
#[derive(Clone, Default)]
pub(crate) struct Observer {
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<WebhookMetrics>,
}

#[cfg_attr(
    not(feature = "metrics"),
    allow(clippy::unused_self, reason = "without metrics there is nothing to record into")
)]
impl Observer {
    /// A request to `webhook` started; the returned guard marks its end when dropped.
    pub(crate) fn started(&self, webhook: &str) -> InFlight {
        #[cfg(not(feature = "metrics"))]
        let _ = webhook;
        InFlight {
            #[cfg(feature = "metrics")]
            _gauge: self.metrics.as_ref().map(|m| m.started(webhook)),
        }
    }

    pub(crate) fn answered(&self, webhook: &str, outcome: Outcome, took: Duration) {
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.metrics {
            metrics.answered(webhook, 200, outcome.as_str(), took);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (webhook, outcome, took);
    }

    pub(crate) fn certificate_read(&self, loaded: bool) {
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.metrics {
            metrics.certificate_read(loaded);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = loaded;
    }
}
