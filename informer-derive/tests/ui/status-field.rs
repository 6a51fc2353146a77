use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", status = "FooStatus")]
pub struct Foo {
    metadata: ObjectMeta,
}

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", status = "state")]
pub struct Bar {
    metadata: ObjectMeta,
    state: Option<String>,
}

fn main() {}
