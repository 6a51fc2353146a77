use informer_derive::Informer;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

// A view has the identity of the type it views and no CRD: names and CRD settings conflict.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(view = Pod, group = "example.com", version = "v1", cluster, status)]
#[informer(shortname = "po", printcolumn(name = "Node", type = "string", json_path = ".spec.nodeName"))]
pub struct PodView {
    metadata: ObjectMeta,
    status: Option<String>,
}

// A view skips what it does not name: `deny_unknown_fields` would refuse every pod.
#[derive(Clone, Debug, Deserialize, Informer)]
#[serde(deny_unknown_fields)]
#[informer(view = Pod)]
pub struct StrictView {
    metadata: ObjectMeta,
    kind: String,
}

// `view` twice, and a value that is not a path.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(view = Pod, view = "Pod")]
pub struct Twice {
    metadata: ObjectMeta,
}

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(view = 7)]
pub struct NotAPath {
    metadata: ObjectMeta,
}

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(projection = Pod)]
pub struct Misnamed {
    metadata: ObjectMeta,
}

fn main() {}
