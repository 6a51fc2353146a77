use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

// The schema of the CRD comes from schemars: the spec's type must implement JsonSchema.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FooSpec {
    replicas: i32,
}

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1")]
pub struct Foo {
    metadata: ObjectMeta,
    spec: FooSpec,
}

fn main() {}
