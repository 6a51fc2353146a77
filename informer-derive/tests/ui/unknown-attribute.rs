use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", shortnames = "fo", colour = "red")]
#[informer(printcolumn(name = "A", type = "string", json_path = ".spec.a", width = 3))]
pub struct Foo {
    metadata: ObjectMeta,
}

fn main() {}
