// Two versions of one kind marked as the hub, each naming the other as its spoke: each
// implements `KindHub` for both types, which rustc refuses.
mod v1 {
    use informer_derive::Informer;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::Deserialize;

    #[derive(Clone, Debug, Deserialize, Informer)]
    #[informer(group = "example.com", version = "v1", storage = false, hub(super::v2::Widget))]
    pub struct Widget {
        pub metadata: ObjectMeta,
    }
}

mod v2 {
    use informer_derive::Informer;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::Deserialize;

    #[derive(Clone, Debug, Deserialize, Informer)]
    #[informer(group = "example.com", version = "v2", hub(super::v1::Widget))]
    pub struct Widget {
        pub metadata: ObjectMeta,
    }
}

impl From<v1::Widget> for v2::Widget {
    fn from(w: v1::Widget) -> Self {
        Self { metadata: w.metadata }
    }
}

impl From<v2::Widget> for v1::Widget {
    fn from(w: v2::Widget) -> Self {
        Self { metadata: w.metadata }
    }
}

fn main() {}
