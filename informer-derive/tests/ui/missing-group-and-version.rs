use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(kind = "Foo")]
pub struct Foo {
    metadata: ObjectMeta,
}

#[derive(Clone, Debug, Deserialize, Informer)]
pub struct Bar {
    metadata: ObjectMeta,
}

fn main() {}
