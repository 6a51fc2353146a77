//! A derive with an attribute error still writes the aliases: the rest of the crate, which names
//! them, adds no error of its own to the one the attribute has.
use informer_derive::Informer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, Informer)]
#[informer(group = "example.com", version = "1")]
pub struct Widget {
    metadata: ObjectMeta,
}

pub fn listers(all: WidgetLister) -> Option<WidgetNamespaceLister> {
    drop(all);
    None
}

pub fn informer<'a, S>(informer: WidgetInformer<'a, S>) -> WidgetInformer<'a, S> {
    informer
}

fn main() {}
