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

/// A view of `Foo`, and a private view of pods.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(view = Foo)]
pub struct FooView {
    /// Metadata.
    pub metadata: ObjectMeta,
}

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(view = "k8s_openapi::api::core::v1::Pod")]
struct PodView {
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Option<FooSpec>,
}

/// The grouped accessors.
pub mod informers {
    informer_derive::informers!(super::Foo, crate::Bar);
}

/// Grouped accessors in a private module, for a private struct.
mod private {
    #[derive(Clone, Debug, serde::Deserialize, informer_derive::Informer)]
    #[informer(group = "private.example.com", version = "v1", schema = "disabled")]
    struct Hidden {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    }

    mod informers {
        informer_derive::informers!(super::Hidden);
    }

    pub(crate) fn use_them(
        factory: &informer_runtime::SharedInformerFactory<informer_client::Client>,
    ) {
        use informers::CustomResourceInformers as _;
        let _ = factory.private().v1().hiddens();
    }
}

fn main() {
    use informers::CustomResourceInformers as _;
    fn accessors(factory: &informer_runtime::SharedInformerFactory<informer_client::Client>) {
        let _: FooInformer<'_, informer_client::Client> = factory.example().v1().foos();
        let _ = factory.example().v1().bars().lister();
        factory.register_custom_resources();
        private::use_them(factory);
    }
    let _ = accessors;
    let _ = Foo::crd();
    let _ = Bar::crd();
    let _: Option<FooLister> = None;
    let _: Option<BarLister> = None;
    let _: Option<FooViewNamespaceLister> = None;
    let _: Option<PodViewLister> = None;
    let _: Option<PodViewInformer<'_, informer_client::Client>> = None;
}
