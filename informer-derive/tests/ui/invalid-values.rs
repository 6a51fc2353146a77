use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(
    group = "example",
    version = "1",
    kind = "foo",
    plural = "Foos",
    shortname = "f_o",
    selectable = "spec.size",
    printcolumn(name = "Size", type = "text", json_path = ".spec.size"),
    printcolumn(name = "Age"),
    scale(spec_replicas_path = ".spec.replicas")
)]
pub struct Foo {
    metadata: ObjectMeta,
}

fn main() {}
