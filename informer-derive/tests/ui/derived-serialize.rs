use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

// Informer writes Serialize (with apiVersion and kind): deriving it too conflicts.
#[derive(Clone, Debug, Deserialize, serde::Serialize, Informer)]
#[informer(group = "example.com", version = "v1")]
pub struct Foo {
    metadata: ObjectMeta,
}

// The same in a derive attribute of its own, after Informer's.
#[derive(Clone, Debug, Deserialize, Informer)]
#[derive(serde::Serialize)]
#[informer(group = "example.com", version = "v1")]
pub struct Bar {
    metadata: ObjectMeta,
}

fn main() {}
