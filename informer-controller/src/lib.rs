//! Controllers on typed Kubernetes informers: client-go's work queue, controller pattern,
//! leader election and Events, and controller-runtime's reconcile loop, driven by the
//! informers of [`informer_runtime`].
//!
//! A [`Controller`](controller::Controller) watches a primary resource and the resources it
//! owns through one `SharedInformerFactory`; their changes become keys in a
//! [`WorkQueue`](workqueue::WorkQueue), whose workers call your `reconcile` with the object as
//! the cache holds it. One replica of several leads through a Lease
//! ([`leader_election`]); [`events`] records what a controller did, as `kubectl describe`
//! shows it; [`finalizer`] runs a cleanup before the API server deletes an object. All three
//! write through [`ApiWriter`], which this project's
//! `Client` (feature `client`, on by default) and kube-rs's `kube::Client` (feature `kube`,
//! which needs Rust 1.89, kube-rs 5's minimum; the rest of the crate needs 1.88) implement.
//! A reconcile function keeps its object's status conditions with [`conditions`], and marks
//! what it creates as its object's with [`owner_references`].
//!
//! ```no_run
//! use informer_controller::controller::{Action, Controller, stop_on_signal};
//! use informer_runtime::SharedInformerFactory;
//! use informer_client::{Client, ClientError};
//! use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let factory = SharedInformerFactory::new(Client::try_default()?);
//! Controller::<Deployment, _>::new(&factory)
//!     .owns::<ReplicaSet>()
//!     .run(
//!         |request| async move {
//!             let Some(deployment) = request.object else { return Ok(Action::Done) };
//!             // ... compare with the listers' ReplicaSets, write through a client ...
//!             # let _ = deployment;
//!             Ok::<_, ClientError>(Action::Done)
//!         },
//!         stop_on_signal(),
//!     )
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! # The data flow
//!
//! After an informer's handlers (`informer_runtime`'s `shared_informer/handler.rs`):
//!
//! ```text
//!    ─▶ filter.rs                           which events a controller hears (optional)
//!    ─▶ workqueue/enqueue.rs                handlers that turn events into keys
//!    ─▶ workqueue/mod.rs                    keys, once each, to workers; delays and backoff
//!    ─▶ controller/mod.rs                   workers: your reconcile, its result to the queue
//! ```
//!
//! # Layers
//!
//! From the bottom up; a module imports only from its own line or the lines above, and never
//! in a circle. Everything here stands on `informer_runtime`, which imports nothing of this
//! crate.
//!
//! - `write`, `filter`: the writes of the layer (`ApiWriter`), for any client; which of an
//!   informer's events a handler hears
//! - `conditions`, `owner_references`: helpers for reconcile functions: status conditions,
//!   owner references (and the owner rule `workqueue` and `controller` match by)
//! - `workqueue`: keys to workers, with delays and rate limits
//! - `controller`, `leader_election`, `events`: reconcile loops, leases, Events
//! - `finalizer`: cleanup before deletion, inside a reconcile
//! - `manager`: several controllers and tasks of a program on one factory, behind one Lease,
//!   with probes
//! - `wait`: test support
//!
//! # Metrics
//!
//! With the `metrics` feature, work queues and controllers record client-go's and
//! controller-runtime's metrics into the runtime's `informer_runtime::metrics::Metrics`, beside
//! the informers' (`WorkQueueBuilder::metrics`, `Controller::metrics`).

#![cfg_attr(docsrs, feature(doc_cfg))]
pub mod conditions;
pub mod controller;
pub mod events;
pub mod filter;
pub mod finalizer;
pub mod leader_election;
pub mod manager;
pub mod owner_references;
pub mod workqueue;
pub mod write;

#[cfg(test)]
mod wait;

/// The stop signal every `run` takes, re-exported so that a program needs no tokio-util dependency
/// to name it.
pub use tokio_util::sync::CancellationToken;
pub use write::{ApiWriter, WriteError};

// The README is the crate's registry page: its examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
