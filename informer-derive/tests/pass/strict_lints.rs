//! The expansion compiles without a warning under strict lints, in a crate whose users might
//! deny them all.
#![deny(
    warnings,
    missing_docs,
    unused_qualifications,
    unused_results,
    unreachable_pub,
    missing_debug_implementations,
    trivial_casts,
    trivial_numeric_casts,
    unused_import_braces,
    rust_2018_idioms
)]

use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A namespaced kind with a status.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", status, validation = "self.spec.size > 0")]
pub struct Foo {
    /// Metadata.
    pub metadata: ObjectMeta,
    /// Spec.
    pub spec: FooSpec,
    /// Status.
    pub status: Option<FooSpec>,
}

/// A spec.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct FooSpec {
    /// Size.
    pub size: i32,
}

/// A cluster-scoped kind without a schema, private to the crate.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", cluster, schema = "disabled")]
pub(crate) struct Bar {
    metadata: ObjectMeta,
}

fn main() {
    let _ = Foo::crd();
    let _ = Bar::crd();
    let _: Option<FooLister> = None;
    let _: Option<BarLister> = None;
}
