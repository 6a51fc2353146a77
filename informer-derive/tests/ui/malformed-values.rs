use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(
    group = "example.com",
    version = "v1",
    annotation("example.com/owner"),
    label = "app",
    schema = "manual",
    printcolumn = "Replicas",
    deprecated = "use v2",
    crates(kube = ::kube)
)]
pub struct Foo {
    metadata: ObjectMeta,
}

fn main() {}
