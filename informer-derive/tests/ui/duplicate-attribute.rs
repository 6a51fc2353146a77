use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1")]
#[informer(group = "example.org", kind = "Foo", kind = "Bar")]
pub struct Foo {
    metadata: ObjectMeta,
}

fn main() {}
