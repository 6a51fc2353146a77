//! Typed Kubernetes informers: client-go's `tools/cache` as async Rust.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod clock;
mod controller;
pub mod delta_fifo;
pub mod factory;
pub mod informer;
pub mod lister;
pub mod listwatch;
pub mod queue;
pub mod reflector;
pub mod resource;
pub mod selector;
pub mod store;

#[cfg(test)]
mod test_util;

pub use resource::{GroupVersionResource, Resource};
pub use store::{Cache, Indexer, ObjectKey};

#[cfg(any(test, feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;
