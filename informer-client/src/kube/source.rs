//! A kube-rs `kube::Client` as the transport of a [`Client`] (feature `kube`), and so the
//! source of informers.
//!
//! Where it sits in the data flow: at the socket end.
//! `SharedInformerFactory::new(Client::from(kube_client))` lists and watches through the program's own `kube::Client`, whose tower stack carries the
//! bytes (its TLS, credentials, proxy and middleware), while everything above the socket is this
//! crate's: the same lister-watcher as over [`Client::new`](crate::Client::new) (list pages with
//! the next one prefetched, streaming lists, bookmarks, 410s), its decoders, which decode list
//! items and watch events straight from the body without kube-rs's `Api`, and its bounds (an
//! idle deadline on every response and watch, a cap on each object).
//!
//! kube-rs's `kube::Client::send` answers every status as a response; this crate turns a
//! non-2xx one into the API's `Status` exactly as over its own HTTP client.

use crate::api_client::Client;
use crate::limits::Limits;
use crate::limits::{DEFAULT_MAX_OBJECT_SIZE, DEFAULT_READ_IDLE_TIMEOUT};
use crate::transport::Transport;

/// Where the URLs of a client over kube-rs are built: only their path and query are sent, and
/// kube-rs's stack puts its cluster URL (and any path it has) in front of them.
const KUBE_BASE: &str = "http://kube-client.invalid/";

impl From<kube::Client> for Client {
    /// A client whose requests go through `client`: its cluster URL, TLS, credentials (refreshed
    /// as kube-rs refreshes them) and middleware, and its default namespace.
    ///
    /// Reads are bounded as [`Config::new`](crate::Config::new)'s defaults bound them:
    /// headers and each next chunk of a body within 90 seconds, at most 16 MiB per object, a watch
    /// ended after its server timeout plus 30 seconds of silence.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let kube_client = kube::Client::try_default().await?;
    /// let client = informer_client::Client::from(kube_client);
    /// let pod: Pod = client.get(Some("kube-system"), "etcd-control-plane").await?;
    /// # Ok(())
    /// # }
    /// ```
    #[allow(clippy::expect_used, reason = "a constant URL, which parses")]
    fn from(client: kube::Client) -> Self {
        let namespace = client.default_namespace().to_owned();
        let base = url::Url::parse(KUBE_BASE).expect("KUBE_BASE is a URL");
        let limits = Limits {
            read_idle_timeout: DEFAULT_READ_IDLE_TIMEOUT,
            max_object_size: DEFAULT_MAX_OBJECT_SIZE,
        };
        Client::with_transport(Transport::Kube(client), base, namespace, limits, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_of_kube_client_urls_parses_and_has_no_path() {
        let base = url::Url::parse(KUBE_BASE).unwrap();
        assert_eq!(base.path(), "/");
        assert!(base.query().is_none());
    }
}
