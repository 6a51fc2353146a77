use informer_derive::Informer;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(view = Pod)]
pub struct PodView {
    metadata: ObjectMeta,
}

// The grouped accessors `factory.core().v1().pods()` are Pod's: a view has none.
mod informers {
    informer_derive::informers!(super::PodView);
}

fn main() {}
