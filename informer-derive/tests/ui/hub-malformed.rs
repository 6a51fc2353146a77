use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

// `hub` takes the spokes' paths in parentheses.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v2", hub = "v1::Widget")]
pub struct Widget {
    pub metadata: ObjectMeta,
}

// A spoke without the conversions to and from the hub: named at its path.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", kind = "Gadget", storage = false)]
pub struct GadgetV1 {
    pub metadata: ObjectMeta,
}

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v2", kind = "Gadget", hub(GadgetV1))]
pub struct GadgetV2 {
    pub metadata: ObjectMeta,
}

fn main() {}
