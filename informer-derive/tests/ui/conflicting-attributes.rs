use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(
    group = "example.com",
    version = "v1",
    scale(spec_replicas_path = ".spec.replicas", status_replicas_path = ".status.replicas"),
    deprecated = false,
    deprecation_warning = "use v2"
)]
pub struct Foo {
    metadata: ObjectMeta,
    status: Option<String>,
}

fn main() {}
