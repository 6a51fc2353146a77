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

/// Plurals that differ only in a dash make one accessor, `foo_bars()`.
#[derive(Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", schema = "disabled")]
pub struct FooBar {
    metadata: ObjectMeta,
}

#[derive(Deserialize, Informer)]
#[informer(group = "example.com", version = "v1", kind = "FooBarX", plural = "foo-bars", schema = "disabled")]
pub struct FooBarX {
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

mod same_accessor {
    informer_derive::informers!(super::FooBar, super::FooBarX);
}

mod not_derived {
    informer_derive::informers!(super::NotDerived);
}

fn main() {}
