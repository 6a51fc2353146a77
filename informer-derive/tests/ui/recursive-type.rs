use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

/// A tree whose children are trees: its schema would have to refer to itself.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1")]
pub struct Tree {
    metadata: ObjectMeta,
    children: Vec<Tree>,
    parent: Option<Box<Self>>,
}

/// Skipped, or described otherwise: no recursion in the schema.
#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "v1")]
pub struct Described {
    metadata: ObjectMeta,
    #[serde(skip)]
    cached: Option<Box<Described>>,
    other: other::Described,
}

mod other {
    /// Another type of the same name.
    #[derive(Clone, Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
    pub struct Described {
        pub size: i32,
    }
}

fn main() {
    let _ = Tree::crd();
    let _ = Described::crd();
}
