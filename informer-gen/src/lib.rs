//! Code generation for typed informers: from CRD schemas and resource types to Rust types,
//! `FooInformer`, `FooLister`, `FooNamespaceLister` and grouped factory accessors, usable from
//! the command line, from `cargo xtask codegen` and from a `build.rs`.
//!
//! Today it generates the grouped accessors of every k8s-openapi built-in resource that supports
//! list ([`discover`] finds them, [`emit::accessors`] writes the code):
//! `factory.core().v1().pods()`, `factory.apps().v1().deployments()`, … Generated code is a thin
//! layer over the runtime's generic `TypedInformer`, `Lister` and `NamespaceLister`.

pub mod discover;
pub mod emit;
mod spec;

pub use spec::{NEWEST_MINOR, OLDEST_MINOR, ResourceSpec};
