//! The kube-rs bridge (feature `kube`): a `kube::Client` as the carrier of this client's
//! requests, and a `kube::Config` as this client's `Config` (with the `http` feature).
//!
//! - `source`: a `kube::Client` as the transport of a [`Client`](crate::Client)
//!   (`Client::from(kube_client)`, an informer source as any `Client` is):
//!   the same request core and read path as over this crate's own HTTP stack, with kube-rs's
//!   tower stack carrying the bytes;
//! - `from_config` (with the `http` feature too): kube-rs's `kube::Config` mapped onto this
//!   crate's `Config` (`Client::try_from(kube_config)`). Not the kubeconfig file format, which
//!   is `config/kubeconfig.rs`.
//!
//! It lives in the HTTP client, not beside the list/watch seam, because both halves are
//! adapters of the client: the source is the client's lister-watcher over another transport, and
//! the configuration becomes the client's `Config`.

// A `Config` is the `http` feature's: without it there is nothing to map a `kube::Config` onto.
#[cfg(feature = "http")]
mod from_config;
mod source;
