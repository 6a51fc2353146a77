//! Code generation for typed informers: from CRD schemas and resource types to Rust types,
//! `FooInformer`, `FooLister`, `FooNamespaceLister` and grouped factory accessors, usable from
//! the command line, from `cargo xtask codegen` and from a `build.rs`.
//!
//! The generator has not landed yet; the runtime it targets (`informer_runtime`) is usable by
//! hand today: `SharedInformerFactory::informer::<K>()` and `lister::<K>()` give the same
//! informers and listers for any k8s-openapi type.
