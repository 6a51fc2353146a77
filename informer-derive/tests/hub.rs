//! `#[informer(..., hub(...))]`: a kind of two versions converted through the hub by the
//! handler the derive generates (informer-webhook's `Hub`), and its CRD with the conversion
//! webhook in one call.
//!
//! Scenarios after controller-runtime's `pkg/webhook/conversion/conversion_test.go` ("should
//! convert spoke to hub successfully", "should convert hub to spoke successfully", several
//! objects in one review) and Cluster API's conversion round trips
//! (`util/conversion/conversion.go`'s `FuzzTestFunc`: spoke → hub → spoke and hub → spoke →
//! hub lose nothing, the hub's extra fields kept in `<group>/conversion-data`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use informer_webhook::conversion::{ConversionRequest, ConversionReview};
use informer_webhook::convert::{Conversions, Hub, KindHub};
use informer_webhook::crd::WebhookTarget;
use serde_json::{Value, json};

/// v1: one `image` string (`repository:tag`) and `replicas`.
mod v1 {
    use informer_derive::Informer;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::{Deserialize, Serialize};

    /// A spoke, served and not stored.
    #[derive(Clone, Debug, PartialEq, Deserialize, Informer)]
    #[informer(group = "example.com", version = "v1", kind = "Widget", storage = false)]
    pub struct Widget {
        pub metadata: ObjectMeta,
        pub spec: WidgetSpec,
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    pub struct WidgetSpec {
        pub image: String,
        pub replicas: i32,
    }
}

/// v2, the hub: `image` split into repository and tag, `replicas` renamed `count`, and a
/// `color` v1 does not know.
mod v2 {
    use informer_derive::Informer;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::{Deserialize, Serialize};

    /// The hub and storage version.
    #[derive(Clone, Debug, PartialEq, Deserialize, Informer)]
    #[informer(group = "example.com", version = "v2", kind = "Widget", hub(super::v1::Widget))]
    pub struct Widget {
        pub metadata: ObjectMeta,
        pub spec: WidgetSpec,
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct WidgetSpec {
        pub repository: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub tag: Option<String>,
        pub count: i32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub color: Option<String>,
    }
}

impl From<v1::Widget> for v2::Widget {
    fn from(spoke: v1::Widget) -> Self {
        let (repository, tag) = match spoke.spec.image.rsplit_once(':') {
            Some((repository, tag)) => (repository.to_owned(), Some(tag.to_owned())),
            None => (spoke.spec.image, None),
        };
        let spec = v2::WidgetSpec { repository, tag, count: spoke.spec.replicas, color: None };
        Self { metadata: spoke.metadata, spec }
    }
}

impl From<v2::Widget> for v1::Widget {
    fn from(hub: v2::Widget) -> Self {
        let image = match hub.spec.tag {
            Some(tag) => format!("{}:{tag}", hub.spec.repository),
            None => hub.spec.repository,
        };
        Self { metadata: hub.metadata, spec: v1::WidgetSpec { image, replicas: hub.spec.count } }
    }
}

const ANNOTATION: &str = "example.com/conversion-data";

fn conversions() -> Conversions {
    Conversions::new().hub::<v2::Widget>()
}

/// Converts `objects` to `desired` as the API server asks, through the generated handler.
fn convert(conversions: &Conversions, desired: &str, objects: Vec<Value>) -> Vec<Value> {
    let request = ConversionRequest::new("uid", desired, objects);
    let response = conversions.convert(&request);
    assert!(response.is_success(), "{response:?}");
    response.converted_objects
}

fn v1_object(name: &str, image: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"image": image, "replicas": replicas},
    })
}

// controller-runtime: "should convert spoke to hub successfully", and back.
#[test]
fn v1_to_v2_and_back_is_lossless_through_the_generated_handler() {
    let conversions = conversions();
    let v1 = v1_object("web", "nginx:1.27", 3);
    let v2 = convert(&conversions, "example.com/v2", vec![v1.clone()]).remove(0);
    assert_eq!(v2["apiVersion"], "example.com/v2");
    assert_eq!(v2["spec"], json!({"repository": "nginx", "tag": "1.27", "count": 3}));
    // The hub holds all of v1: nothing lost, no annotation.
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");
    let back = convert(&conversions, "example.com/v1", vec![v2]).remove(0);
    assert_eq!(back, v1);
}

// Cluster API: hub → spoke → hub keeps the hub's fields the spoke cannot hold.
#[test]
fn a_field_only_v2_knows_survives_a_round_trip_through_v1_in_the_annotation() {
    let conversions = conversions();
    let v2 = json!({
        "apiVersion": "example.com/v2", "kind": "Widget",
        "metadata": {"name": "web", "namespace": "default", "uid": "1", "labels": {"app": "web"}},
        "spec": {"repository": "nginx", "tag": "1.27", "count": 3, "color": "red"},
    });
    let v1 = convert(&conversions, "example.com/v1", vec![v2.clone()]).remove(0);
    assert_eq!(v1["spec"], json!({"image": "nginx:1.27", "replicas": 3}));
    let data: Value =
        serde_json::from_str(v1["metadata"]["annotations"][ANNOTATION].as_str().unwrap()).unwrap();
    assert_eq!(
        data,
        json!({"hub": "example.com/v2", "lost": [{"path": "/spec/color", "value": "red"}]})
    );
    // Read back as v2, field for field, the annotation gone.
    let back = convert(&conversions, "example.com/v2", vec![v1.clone()]).remove(0);
    assert_eq!(back, v2);

    // A v1 client changes what v1 knows: its change is kept, and so is the color.
    let mut edited = v1;
    edited["spec"]["replicas"] = json!(5);
    edited["spec"]["image"] = json!("nginx:1.28");
    let back = convert(&conversions, "example.com/v2", vec![edited]).remove(0);
    assert_eq!(
        back["spec"],
        json!({"repository": "nginx", "tag": "1.28", "count": 5, "color": "red"})
    );
}

// controller-runtime's handler test, with several objects: each is converted, in order.
#[test]
fn a_conversion_review_with_several_objects_converts_each_in_order() {
    let review = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "desiredAPIVersion": "example.com/v2",
            "objects": [
                v1_object("a", "nginx:1.27", 1),
                v1_object("b", "redis", 2),
                // Already in the desired version: returned as it is.
                {"apiVersion": "example.com/v2", "kind": "Widget",
                 "metadata": {"name": "c", "uid": "uid-c"},
                 "spec": {"repository": "busybox", "count": 3, "color": "blue"}},
            ],
        },
    });
    let review: ConversionReview = serde_json::from_value(review).unwrap();
    let request = review.request.unwrap();
    let answer = ConversionReview::answer(conversions().convert(&request));
    let answer = serde_json::to_value(&answer).unwrap();
    let response = &answer["response"];
    assert_eq!(response["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_eq!(response["result"]["status"], "Success");
    let objects = response["convertedObjects"].as_array().unwrap();
    let names: Vec<&str> =
        objects.iter().map(|o| o["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(objects.iter().all(|o| o["apiVersion"] == "example.com/v2"));
    let specs: Vec<&Value> = objects.iter().map(|o| &o["spec"]).collect();
    assert_eq!(
        specs,
        [
            &json!({"repository": "nginx", "tag": "1.27", "count": 1}),
            &json!({"repository": "redis", "count": 2}),
            &json!({"repository": "busybox", "count": 3, "color": "blue"}),
        ]
    );
}

// controller-runtime: "should return error when dest/src are unknown".
#[test]
fn a_version_the_hub_does_not_name_fails_the_review_naming_it() {
    let request = ConversionRequest::new("u", "example.com/v3", vec![v1_object("a", "x", 1)]);
    let response = conversions().convert(&request);
    assert!(!response.is_success());
    let message = serde_json::to_value(&response).unwrap()["result"]["message"].to_string();
    assert!(message.contains("example.com/v3"), "{message}");
    assert!(message.contains("example.com/v1, example.com/v2"), "{message}");
}

#[test]
fn every_version_knows_its_hub() {
    fn hub_of<K: KindHub>() -> &'static str {
        <K::Hub as k8s_openapi::Resource>::API_VERSION
    }
    assert_eq!(hub_of::<v1::Widget>(), "example.com/v2");
    assert_eq!(hub_of::<v2::Widget>(), "example.com/v2");
    let converter = v2::Widget::converter();
    assert_eq!(converter.annotation(), ANNOTATION);
}

#[test]
fn the_crd_with_conversion_merges_the_versions_and_names_the_webhook() {
    let target = WebhookTarget::url("https://127.0.0.1:9443/convert");
    let crd = v2::Widget::crd_with_conversion(&target, b"PEM");
    let json = serde_json::to_value(&crd).unwrap();
    let versions: Vec<(&str, bool)> = json["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v["storage"].as_bool().unwrap()))
        .collect();
    // The hub's first, then its spokes in the order `hub(...)` names them.
    assert_eq!(versions, [("v2", true), ("v1", false)]);
    assert_eq!(
        json["spec"]["conversion"],
        json!({
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": {"url": "https://127.0.0.1:9443/convert", "caBundle": "UEVN"},
                "conversionReviewVersions": ["v1"],
            },
        })
    );
    // The same, fallible, through a Service.
    let target = WebhookTarget::service("widgets-system", "widgets-webhook").path("/convert");
    let crd = v2::Widget::try_crd_with_conversion(&target, b"PEM").unwrap();
    let service = crd.spec.conversion.unwrap().webhook.unwrap().client_config.unwrap().service;
    assert_eq!(service.unwrap().name, "widgets-webhook");
}
