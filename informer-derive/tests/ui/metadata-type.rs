use informer_derive::Informer;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1")]
pub struct Foo {
    metadata: String,
}

fn main() {}
