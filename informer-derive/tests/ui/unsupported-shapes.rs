use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

#[derive(Informer)]
#[informer(group = "example.com", version = "v1")]
pub struct Tuple(ObjectMeta);

#[derive(Informer)]
#[informer(group = "example.com", version = "v1")]
pub enum Choice {
    A { metadata: ObjectMeta },
}

#[derive(Informer)]
#[informer(group = "example.com", version = "v1")]
pub struct Generic<T> {
    metadata: ObjectMeta,
    spec: T,
}

fn main() {}
