//! A kind with a derived struct per version, end to end on the embedded API server: the CRD
//! `informer_runtime::crd::merge` makes of them is accepted with every version and its flags,
//! an object created in one version reads in the other (the `None` conversion: `apiVersion`
//! changes, the fields stay), an unserved version is not served, and typed informers of both
//! served versions, by the factory and by `informers!`'s accessors, cache the same objects.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "in a test, a failed unwrap is a failed assertion"
)]

use std::time::Duration;

use embedded_apiserver::ApiServer;
use embedded_apiserver::testing::eventually;
use informer_client::{Client, Config};
use informer_runtime::{LabelSelector, SharedInformerFactory};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const DEADLINE: Duration = Duration::from_secs(30);

/// The first version: still served, no longer stored.
mod v1 {
    use informer_derive::Informer;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// A widget, as v1 has it.
    #[derive(Clone, Debug, PartialEq, Deserialize, Informer)]
    #[informer(group = "example.com", version = "v1", storage = false, shortname = "wd")]
    pub struct Widget {
        /// Standard object metadata.
        pub metadata: ObjectMeta,
        /// The desired state.
        pub spec: WidgetSpec,
    }

    /// v1's spec.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub struct WidgetSpec {
        /// How big.
        pub size: i32,
    }
}

/// The storage version, with a field v1 does not have.
mod v2 {
    use informer_derive::Informer;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// A widget, as v2 has it.
    #[derive(Clone, Debug, PartialEq, Deserialize, Informer)]
    #[informer(group = "example.com", version = "v2", shortname = "wd")]
    pub struct Widget {
        /// Standard object metadata.
        pub metadata: ObjectMeta,
        /// The desired state.
        pub spec: WidgetSpec,
    }

    /// v2's spec.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub struct WidgetSpec {
        /// How big.
        pub size: i32,
        /// Its color, new in v2.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub color: Option<String>,
    }
}

/// An early version, no longer served.
mod v1alpha1 {
    use informer_derive::Informer;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::Deserialize;

    /// A widget, as v1alpha1 had it.
    #[derive(Clone, Debug, Deserialize, Informer)]
    #[informer(group = "example.com", version = "v1alpha1", served = false, storage = false)]
    #[informer(schema = "disabled")]
    pub struct Widget {
        /// Standard object metadata.
        pub metadata: ObjectMeta,
    }
}

/// The grouped accessors of both served versions.
mod informers {
    informer_derive::informers!(super::v1::Widget, super::v2::Widget);
}

use informers::CustomResourceInformers as _;

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some("default".to_owned()),
        ..ObjectMeta::default()
    }
}

fn merged()
-> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    informer_runtime::crd::merge([v1alpha1::Widget::crd(), v1::Widget::crd(), v2::Widget::crd()])
        .expect("the versions agree")
}

#[test]
fn the_merged_crd_has_every_version_with_its_flags() {
    let crd = merged();
    let versions: Vec<(&str, bool, bool)> =
        crd.spec.versions.iter().map(|v| (v.name.as_str(), v.served, v.storage)).collect();
    assert_eq!(versions, [("v1alpha1", false, false), ("v1", true, false), ("v2", true, true)]);
    assert_eq!(crd.spec.names.short_names, Some(vec!["wd".to_owned()]));
    // Each version keeps its own schema.
    let properties = |i: usize| {
        let schema =
            crd.spec.versions[i].schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref());
        let spec = schema.and_then(|s| s.properties.as_ref()).and_then(|p| p.get("spec")).cloned();
        spec.and_then(|s| s.properties).unwrap_or_default().into_keys().collect::<Vec<_>>()
    };
    assert_eq!(properties(1), ["size"]);
    assert_eq!(properties(2), ["color", "size"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_of_derived_structs_serve_one_kind() {
    let server = ApiServer::start().await.unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();

    // One version's CRD alone has no storage version, and the server says so.
    let alone = client.create(None, &v1::Widget::crd()).await.unwrap_err();
    assert!(alone.to_string().contains("exactly one version marked as storage"), "{alone}");
    client.create(None, &merged()).await.expect("the merged CRD is accepted");

    // Created in v1, read in v2: the same object, in the version asked for.
    let made = v1::Widget { metadata: meta("small"), spec: v1::WidgetSpec { size: 1 } };
    client.create(Some("default"), &made).await.unwrap();
    let read: v2::Widget = client.get(Some("default"), "small").await.unwrap();
    assert_eq!(read.spec, v2::WidgetSpec { size: 1, color: None });
    let raw: serde_json::Value = serde_json::to_value(&read).unwrap();
    assert_eq!(raw["apiVersion"], "example.com/v2");

    // Created in v2 with a field v1 does not know: v1 reads what it knows.
    let spec = v2::WidgetSpec { size: 2, color: Some("red".to_owned()) };
    client.create(Some("default"), &v2::Widget { metadata: meta("red"), spec }).await.unwrap();
    let red: v1::Widget = client.get(Some("default"), "red").await.unwrap();
    assert_eq!(red.spec, v1::WidgetSpec { size: 2 });

    // Not served: not found under its version.
    let unserved = client.get::<v1alpha1::Widget>(Some("default"), "red").await.unwrap_err();
    assert!(unserved.is_not_found(), "{unserved}");

    let factory = SharedInformerFactory::new(client.clone());
    let old: v1::WidgetInformer<'_, Client> = factory.example().v1().widgets();
    let new: v2::WidgetInformer<'_, Client> = factory.example().v2().widgets();
    old.informer();
    new.informer();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    let all = LabelSelector::everything();
    assert_eq!(old.lister().list(&all).len(), 2);
    assert_eq!(
        new.lister().namespace("default").get("red").unwrap().spec.color.as_deref(),
        Some("red")
    );

    // A change in one version reaches the informers of both.
    let spec = v2::WidgetSpec { size: 3, color: Some("blue".to_owned()) };
    client.create(Some("default"), &v2::Widget { metadata: meta("blue"), spec }).await.unwrap();
    let (old_lister, new_lister) = (old.lister(), new.lister());
    eventually("the new widget in both versions' listers", DEADLINE, || {
        old_lister.namespace("default").get("blue").is_ok_and(|w| w.spec.size == 3)
            && new_lister.namespace("default").get("blue").is_ok_and(|w| w.spec.size == 3)
    })
    .await;
    let in_v1 = old_lister.namespace("default").get("blue").unwrap();
    assert_eq!(serde_json::to_value(&*in_v1).unwrap()["apiVersion"], "example.com/v1");

    factory.shutdown().await;
    server.shutdown().await.unwrap();
}
