use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer]
pub struct Foo {
    metadata: ObjectMeta,
}

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", namespaced = true, served = "yes")]
pub struct Bar {
    metadata: ObjectMeta,
}

fn main() {}
