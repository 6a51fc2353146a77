use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

// Only a resource type can be viewed.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(view = String)]
pub struct StringView {
    metadata: ObjectMeta,
}

// A view needs `metadata`, as every resource type.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(view = k8s_openapi::api::core::v1::Pod)]
pub struct NoMetadata {
    spec: Option<String>,
}

fn main() {}
