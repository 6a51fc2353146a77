//! Typed Kubernetes informers: client-go's `tools/cache` as async Rust.
//!
//! An informer keeps an in-memory, indexed cache of one resource type in step with the API
//! server, and tells your handlers about every change. This crate has the whole machinery,
//! generic over the resource type `K`: any k8s-openapi kind, the custom resource types that
//! `informer-gen` and `#[derive(Informer)]` generate, and any other type that implements
//! [`Resource`] (kube-rs's `#[derive(CustomResource)]` roots and kopium's output, with one
//! [`impl_resource!`] line; see the [`resource`] module). For a kind whose `spec` a controller
//! does not read, [`PartialObjectMetadata<K>`] caches only its metadata (see the [`metadata`]
//! module).
//!
//! # Where to start
//!
//! Most programs need only the [`SharedInformerFactory`]: ask it for the informers of the types
//! you care about, register handlers, start it, wait for the caches, read through [listers].
//! See the example in the [`factory`] module.
//!
//! # The data flow
//!
//! Each module is one step; an event travels through them in this order:
//!
//! ```text
//!  API server ──list/watch──▶ listwatch::ListerWatcher      (transport seam: HTTP, FakeSource, …)
//!                                  │
//!                                  ▼
//!                            reflector::Reflector           (list, then watch; relist on 410;
//!                                  │                          backoff; resync timer)
//!                                  ▼
//!                            delta_fifo::DeltaFifo          (per-key deltas; tombstones on relist)
//!                                  │  pop
//!                                  ▼
//!                   controller (process_deltas) ──▶ store::Indexer   (cache + indices)
//!                                  │                    ▲
//!                                  ▼                    │ reads
//!                   informer processor ──▶ handlers     lister::Lister
//!                   (one buffer + task per handler)
//!
//!               factory::SharedInformerFactory owns one informer per resource type
//! ```
//!
//! # Testing your controllers
//!
//! With the `testing` feature, [`testing::FakeSource`] is an in-process API source and
//! [`testing::FakeClock`] a clock you step by hand. For tests over real HTTP, the
//! `embedded-apiserver` crate is an embedded, protocol-faithful API server (kubectl works
//! against it, faults to inject).
//!
//! # Talking to a cluster
//!
//! With the default `client` feature, [`Client`] lists and watches any API server: kubeconfig
//! (`KUBECONFIG`, `~/.kube/config`), in-cluster service accounts, tokens, client certificates
//! and exec credential plugins. `SharedInformerFactory::new(Client::try_default()?)`.
//!
//! [listers]: lister::Lister

#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client;
pub mod clock;
mod controller;
pub mod delta_fifo;
pub mod factory;
pub mod informer;
pub mod informers;
pub mod lister;
pub mod listwatch;
pub mod metadata;
pub mod queue;
pub mod reflector;
pub mod resource;
pub mod selector;
pub mod store;
#[cfg(feature = "client")]
mod watch;

#[cfg(test)]
mod test_util;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

#[cfg(feature = "client")]
pub use client::Client;
pub use factory::SharedInformerFactory;
pub use informer::{
    DeletedObject, HandlerFuncs, ResourceEventHandler, ResourceEventHandlerRegistration,
    SharedIndexInformer,
};
pub use lister::{Lister, NamespaceLister, NotFound};
pub use listwatch::{ListWatchSource, ListerWatcher, Status};
pub use metadata::PartialObjectMetadata;
pub use resource::{GroupVersionResource, Resource, is_namespaced};
pub use selector::LabelSelector;
pub use store::{Cache, Indexer, ObjectKey};

#[doc(hidden)]
pub mod __private {
    //! What [`impl_resource!`](crate::impl_resource) expands to, so that its users need no
    //! direct dependency on k8s-openapi. Not a public API.
    pub use k8s_openapi;
}

// The README's example must compile and run.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
