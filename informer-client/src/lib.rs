//! The HTTP client of typed Kubernetes informers: list, get, watch and writes over reqwest and
//! rustls (the `http` feature, on by default), or over a kube-rs `kube::Client` (the `kube`
//! feature).
//!
//! Where it sits in the data flow: a [`Client`] is an `informer_runtime::ListWatchSource`, the
//! seam between the API server and the runtime's reflector. Give it to a
//! `SharedInformerFactory` and every informer lists and watches over HTTP. It also has the few
//! typed requests a controller needs ([`Client::get`], [`Client::create`], [`Client::replace`],
//! [`Client::patch_merge`], [`Client::delete`]), lists with selectors and pages
//! ([`Client::list`], [`Client::list_pages`], [`Client::list_all`]), the `scale` and
//! `eviction` subresources ([`Client::get_scale`], [`Client::evict`]), pod logs streamed
//! ([`Client::logs`]), and the same requests for a resource known only at run time
//! ([`Client::dynamic`]).
//!
//! Its folders, by concept (as kube-client lays out its own):
//!
//! - The request core, at the crate's root: `api_client` holds the [`Client`] and its typed
//!   requests, `request` builds URLs, `transport` carries each request (reqwest with this
//!   crate's credentials, or a kube-rs client), `body` bounds every response but watches (an
//!   idle deadline, a cap on what is kept), `error` keeps the server's `Status` typed,
//!   `discovery` finds resources by group, version and resource, `dynamic_api` makes the
//!   typed requests for a resource discovery found, `paging` lists page by page,
//!   `subresources` scales and evicts, `pod_logs` streams logs, `limits` bounds reads; with
//!   the `http` feature, `connections` spreads watches over HTTP/2 connections, and `rotation`
//!   keeps the TLS credentials current (the client certificate and the CA bundle file, with a
//!   new connection pool whenever they change).
//! - `config/` (the `http` feature): [`Config`] says where the server is and how to
//!   authenticate. Its loaders (the kubeconfig file format in `config/kubeconfig.rs`,
//!   in-cluster), the credentials produced per request by `auth` (which runs exec plugins
//!   through `exec`), `tls` (the rustls configuration) and bounded file reads.
//! - `list_watch/`, the read path, in the order bytes travel: `http_lister_watcher` implements
//!   the lister-watcher (list pages with prefetch, watch streams with an idle deadline);
//!   `list_page` decodes list bodies (cut as they arrive by `list_split`) and `watch_decode`
//!   watch streams, both through the runtime's object decoder (`managedFields` pruned).
//! - `kube/` (feature `kube`): the kube-rs bridge. `source` makes a `kube::Client` the
//!   transport of a [`Client`]; `from_config` (with the `http` feature too) maps a
//!   `kube::Config` (kube-rs's, not the kubeconfig file) onto [`Config`].
//!
//! # Features
//!
//! - `http` (on by default): this crate's own HTTP client, reqwest over rustls with HTTP/2;
//!   [`Config`] from the kubeconfig file or the in-cluster service account, exec credential
//!   plugins, TLS credentials read again when their files change; [`Client::new`],
//!   [`Client::try_default`], [`ConfigError`].
//! - `kube`: a kube-rs `kube::Client` as the transport (`Client::from(kube_client)`); with
//!   `http` too, `Client::try_from(kube_config)`.
//!
//! A build needs `http`, `kube` or both: without either, a [`Client`] has nothing to carry its
//! requests and none can be made. The request core, the errors, discovery and the read path
//! are the same under both.
//!
//! # From kube-rs
//!
//! A program that has a `kube::Client` turns this crate's default features off and enables
//! `kube` alone, so that it compiles none of this crate's own HTTP stack (reqwest, rustls, the
//! kubeconfig parser):
//!
//! ```toml
//! informer-client = { version = "0.1", default-features = false, features = ["kube"] }
//! ```
//!
//! The `kube` feature needs Rust 1.89, kube-rs 5's minimum; the rest of the crate needs 1.88.
//!
//! It gives its `kube::Client` to the factory inside a [`Client`]:
//! `SharedInformerFactory::new(Client::from(kube_client))`. Requests then go through kube-rs's
//! tower stack, which adds its cluster URL, TLS, credentials (refreshed as kube-rs refreshes them: token
//! files, exec plugins, its auth providers), proxy, extra headers and impersonation; only
//! the path and query built here are sent. The rest is this crate's, as over [`Client::new`]:
//! a non-2xx answer becomes the API's `Status`, the same list pages (prefetched) and streaming
//! lists, watches with bookmarks and their idle deadline, the same relist on `410`, the 90 s
//! idle deadline on every response and the 16 MiB cap on each object, and list items and watch
//! events decoded by this crate's decoders straight from the body (not by kube-rs's `Api`).
//! What differs is kube-rs's stack:
//!
//! - HTTP/1.1 only (kube-rs's connector enables no HTTP/2), so each watch holds a connection of
//!   its own, where [`Client::new`] multiplexes them over HTTP/2 connections with pings (at most
//!   [`Config::watches_per_connection`] on each, apart from other requests: see
//!   [`Client`](Client#connections-and-the-servers-stream-limit)).
//! - kube-rs retries `429`, `503` and `504` itself (`kube::Config::default_retry`, on by
//!   default) before the reflector sees them, within the 90 s the answer may take; set it to
//!   `false` to leave retries to the reflector's backoff.
//! - Its `connect_timeout`, `read_timeout` and `write_timeout` apply under this crate's idle
//!   deadlines; a `read_timeout` shorter than a watch's quiet periods cuts watches.
//!
//! `Client::from(kube_client)` gives this crate's typed requests over the same client, and
//! (with the `http` feature too) `Client::try_from(kube_config)` a client of this crate's own
//! for the same server and
//! credentials (the kube-rs `Config`'s fields mapped one by one; what it cannot honour, such as
//! impersonation or extra headers, is an error naming the field).
//!
//! ```no_run
//! # #[cfg(all(feature = "kube", feature = "http"))]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use informer_client::Client;
//! use informer_runtime::SharedInformerFactory;
//! use k8s_openapi::api::core::v1::Pod;
//!
//! let config = kube::Config::infer().await?;
//! let kube_client = kube::Client::try_from(config.clone())?;
//! let factory = SharedInformerFactory::new(Client::from(kube_client.clone()));
//! let pods = factory.informer::<Pod>();
//! factory.start();
//!
//! // This crate's typed requests, over the same kube-rs client...
//! let pod: Pod = Client::from(kube_client).get(Some("kube-system"), "etcd-control-plane").await?;
//! // ...or over a client of its own, from the same configuration.
//! let client = Client::try_from(config)?;
//! # drop((pods, pod, client));
//! # Ok(())
//! # }
//! ```
//!
//! ```no_run
//! # #[cfg(feature = "http")]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use informer_client::{Client, Config};
//! use informer_runtime::SharedInformerFactory;
//! use k8s_openapi::api::core::v1::Pod;
//!
//! let config = Config::new("https://127.0.0.1:6443".parse()?);
//! let client = Client::new(config)?;
//! let pod: Pod = client.get(Some("kube-system"), "etcd-control-plane").await?;
//! println!("{:?}", pod.status.and_then(|s| s.phase));
//!
//! let factory = SharedInformerFactory::builder(client).build();
//! let pods = factory.informer::<Pod>();
//! # drop(pods);
//! # Ok(())
//! # }
//! ```

//!
//! # Layers
//!
//! From the bottom up; a module imports only from its own line or the lines above, and never
//! in a circle. Everything here stands on `informer_runtime`, which imports nothing of this
//! crate.
//!
//! - `error`, `request`, `limits`: the errors, with the server's `Status` typed; URLs and
//!   paths; the bounds of reads and their defaults
//! - `config`: where the server is and how to authenticate (the `http` feature)
//! - `body`, `transport`, `connections`, `rotation`: bounded bodies, the carriers, connections
//!   (`connections` and `rotation`: the `http` feature)
//! - `api_client`, `discovery`, `dynamic_api`, `subresources`, `pod_logs`: the `Client` and
//!   its typed requests; resources by name; the requests for a resource known at run time;
//!   scale and eviction; logs
//! - `list_watch`: the read path
//! - `paging`: lists as requests of their own, over the read path
//! - `kube`: the kube-rs bridge (feature `kube`)
//! - `fuzz`, `test_objects`: fuzz targets and test objects

#![cfg_attr(docsrs, feature(doc_cfg))]
// The request core.
mod api_client;
mod body;
#[cfg(feature = "http")]
mod connections;
mod discovery;
mod dynamic_api;
mod error;
mod limits;
mod paging;
mod pod_logs;
pub(crate) mod request;
#[cfg(feature = "http")]
mod rotation;
mod subresources;
mod transport;

// Where the server is and how to authenticate: configuration, credentials, TLS.
#[cfg(feature = "http")]
mod config;
// The read path: list pages and watch streams over HTTP, decoded.
pub(crate) mod list_watch;
// The kube-rs bridge.
#[cfg(feature = "kube")]
mod kube;

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use config::{
    Auth, Config, ExecConfig, Identity, IdentityFiles, InClusterOptions, KubeconfigOptions,
};
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use error::ConfigError;
pub use error::{ClientError, Result};
pub use request::PathSegmentError;

pub use api_client::{Client, Patch, PatchParams};
pub use dynamic_api::DynamicApi;
pub use paging::DEFAULT_PAGE_SIZE;
pub use pod_logs::{LogParams, LogStream};

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod test_objects;

/// The parsers of what servers and plugins send that the fuzz targets (`crate::fuzz`) call
/// directly, without a server or a plugin.
#[cfg(test)]
pub(crate) mod parsers {
    #[cfg(feature = "http")]
    pub(crate) use super::config::exec::parse_credential;
    #[cfg(feature = "http")]
    pub(crate) use super::config::kubeconfig::EXEC_API_VERSIONS;
    pub(crate) use super::discovery::{
        DiscoveredResource, groups_of, parse_document, resources_of, versions_of,
    };
    pub(crate) use super::error::{MAX_BODY_IN_MESSAGE, parse_status, status_from_response};
}

// The README is the crate's registry page: its examples compile as doctests. One runs this
// crate's HTTP client and one gives it a kube::Client, and a reader copies them without a `cfg`,
// so they compile with both features (`cargo test --doc -p informer-client --features kube`;
// the workspace's tests turn `kube` on).
#[cfg(all(doctest, feature = "http", feature = "kube"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
