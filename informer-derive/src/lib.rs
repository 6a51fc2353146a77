//! `#[derive(Informer)]` for custom resource structs.
//!
//! This crate will turn a Rust struct with `metadata: ObjectMeta` into everything
//! `informer-gen` produces from CRD YAML (resource identity, typed informer, lister and factory
//! accessors) plus the CRD manifest. It has no macro yet: until it does, implement
//! `k8s_openapi::Resource` and `k8s_openapi::Metadata` for your type by hand and use it with
//! `informer_runtime` directly.
