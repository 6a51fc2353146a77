//! The HTTP client for real API servers: list, get, watch and writes over reqwest and rustls.
//!
//! Where it sits in the data flow: a [`Client`] is a [`ListWatchSource`](crate::ListWatchSource), the seam between the
//! API server and the [reflector](crate::reflector). Give it to a
//! [`SharedInformerFactory`](crate::SharedInformerFactory) and every informer lists and watches
//! over HTTP. It also has the few typed requests a controller needs ([`Client::get`],
//! [`Client::create`], [`Client::replace`], [`Client::patch_merge`], [`Client::delete`]).
//!
//! - Requests: `api_client` holds the [`Client`] and its typed requests, `request` builds URLs,
//!   `error` keeps the server's `Status` typed, `tls` builds the rustls configuration.
//! - Reads, in the order bytes travel: `body` bounds every response but watches (an idle
//!   deadline, a cap on what is kept); `http_lister_watcher` implements the lister-watcher
//!   (list pages with prefetch, watch streams with an idle deadline); `list_page` and
//!   `list_split` decode list bodies, `watch_decode` watch streams, both through
//!   `object_decoder` (and `prune`, which skips `managedFields`).
//! - [`Config`] says where the server is and how to authenticate; its loaders live in
//!   `config`, and the credentials are produced per request by `auth`.
//!
//! ```no_run
//! use informer_runtime::SharedInformerFactory;
//! use informer_runtime::client::{Client, Config};
//! use k8s_openapi::api::core::v1::Pod;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
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

mod api_client;
mod auth;
mod body;
mod config;
mod error;
mod files;
mod http_lister_watcher;
#[cfg(feature = "kube")]
mod kube_config;
#[cfg(feature = "kube")]
mod kube_source;
mod kubeconfig;
pub(crate) mod list_page;
pub(crate) mod list_split;
mod not_served;
pub(crate) mod object_decoder;
pub(crate) mod prune;
mod request;
mod tls;
mod transport;
pub(crate) mod watch_decode;

pub use config::{
    Auth, Config, ConfigError, ExecConfig, Identity, InClusterOptions, KubeconfigOptions,
};
pub use error::{ClientError, Result};

pub use api_client::{Client, Patch, PatchParams};
