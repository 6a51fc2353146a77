//! Typed Kubernetes informers: client-go's `tools/cache` as async Rust.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod delta_fifo;
pub mod queue;
pub mod resource;
pub mod store;

#[cfg(test)]
mod test_util;

pub use resource::{GroupVersionResource, Resource};
pub use store::{Cache, Indexer, ObjectKey};
