use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

#[derive(Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", schema = "disabled")]
pub struct Foo {
    metadata: ObjectMeta,
}

/// Another struct for the same resource.
#[derive(Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", kind = "Foo", schema = "disabled")]
pub struct FooAgain {
    metadata: ObjectMeta,
}

pub struct NotDerived {
    pub metadata: ObjectMeta,
}

mod empty {
    informer_derive::informers!();
}

mod twice {
    informer_derive::informers!(super::Foo, super::Foo);
}

mod generic {
    informer_derive::informers!(Vec<super::Foo>);
}

mod same_resource {
    informer_derive::informers!(super::Foo, super::FooAgain);
}

mod not_derived {
    informer_derive::informers!(super::NotDerived);
}

fn main() {}
