//! Conversion through the hub, with derived types of three versions. Scenarios after
//! controller-runtime's `pkg/webhook/conversion/conversion_test.go` (hub and spoke, spoke to
//! spoke, unknown versions) and Cluster API's conversion-data round trips
//! (`util/conversion`'s fuzz tests: spoke → hub → spoke and hub → spoke → hub lose nothing).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::*;
use crate::conversion::ConversionRequest;

mod v1alpha1 {
    use informer_derive::Informer;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::{Deserialize, Serialize};

    /// The oldest: a size as text.
    #[derive(Clone, Debug, Deserialize, Informer)]
    #[informer(group = "example.com", version = "v1alpha1", storage = false)]
    pub struct Widget {
        pub metadata: ObjectMeta,
        pub spec: WidgetSpec,
    }

    #[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
    pub struct WidgetSpec {
        pub size: String,
    }
}

mod v1 {
    use informer_derive::Informer;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::{Deserialize, Serialize};

    /// A spoke: a 32-bit size, no color, a field the hub renamed.
    #[derive(Clone, Debug, Deserialize, Informer)]
    #[informer(group = "example.com", version = "v1", storage = false)]
    pub struct Widget {
        pub metadata: ObjectMeta,
        pub spec: WidgetSpec,
    }

    #[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct WidgetSpec {
        pub size: i32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub owner_email: Option<String>,
    }
}

mod v2 {
    use informer_derive::Informer;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::{Deserialize, Serialize};

    /// The hub.
    #[derive(Clone, Debug, Deserialize, Informer)]
    #[informer(group = "example.com", version = "v2")]
    pub struct Widget {
        pub metadata: ObjectMeta,
        pub spec: WidgetSpec,
    }

    #[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct WidgetSpec {
        pub size: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub color: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub owner: Option<Owner>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub ports: Vec<Port>,
    }

    #[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
    pub struct Owner {
        pub email: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub team: Option<String>,
    }

    #[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
    pub struct Port {
        pub port: i32,
    }
}

impl From<v2::Widget> for v1::Widget {
    fn from(hub: v2::Widget) -> Self {
        let size = i32::try_from(hub.spec.size).unwrap_or(i32::MAX);
        let owner_email = hub.spec.owner.map(|o| o.email);
        // Metadata left out on purpose: the converter keeps the object's own.
        Self { metadata: ObjectMeta::default(), spec: v1::WidgetSpec { size, owner_email } }
    }
}

impl From<v1::Widget> for v2::Widget {
    fn from(spoke: v1::Widget) -> Self {
        let owner = spoke.spec.owner_email.map(|email| v2::Owner { email, team: None });
        let spec = v2::WidgetSpec { size: spoke.spec.size.into(), owner, ..Default::default() };
        Self { metadata: spoke.metadata, spec }
    }
}

/// The text size must be a number to reach the hub: a `TryFrom` whose error the user sees.
impl TryFrom<v1alpha1::Widget> for v2::Widget {
    type Error = String;

    fn try_from(spoke: v1alpha1::Widget) -> Result<Self, String> {
        let size =
            spoke.spec.size.parse().map_err(|e| {
                format!("spec.size {:?} is not a whole number: {e}", spoke.spec.size)
            })?;
        Ok(Self { metadata: spoke.metadata, spec: v2::WidgetSpec { size, ..Default::default() } })
    }
}

impl From<v2::Widget> for v1alpha1::Widget {
    fn from(hub: v2::Widget) -> Self {
        Self {
            metadata: hub.metadata,
            spec: v1alpha1::WidgetSpec { size: hub.spec.size.to_string() },
        }
    }
}

fn converter() -> Converter<v2::Widget> {
    Converter::<v2::Widget>::new().spoke::<v1::Widget>().spoke::<v1alpha1::Widget>()
}

/// As a derive would emit it for the hub.
impl Hub for v2::Widget {
    fn converter() -> Converter<Self> {
        converter()
    }
}

fn conversions() -> Conversions {
    Conversions::new().hub::<v2::Widget>()
}

fn hub_object() -> Value {
    json!({
        "apiVersion": "example.com/v2",
        "kind": "Widget",
        "metadata": {
            "name": "w", "namespace": "default", "uid": "6b0c3c1e", "resourceVersion": "7",
            "labels": {"app": "w"},
            "annotations": {"note": "kept"},
        },
        "spec": {
            "size": 1_099_511_627_776_i64,
            "color": "red",
            "owner": {"email": "a@example.com", "team": "blue"},
            "ports": [{"port": 80}],
        },
    })
}

fn convert(object: &Value, to: &str) -> Value {
    converter().convert(object.clone(), to).unwrap()
}

#[test]
fn v1_to_v2_to_v1_round_trip_loses_nothing() {
    let v1 = json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "uid": "6b0c3c1e", "labels": {"app": "w"}},
        "spec": {"size": 3, "ownerEmail": "a@example.com"},
    });
    let v2 = convert(&v1, "example.com/v2");
    assert_eq!(v2["apiVersion"], "example.com/v2");
    assert_eq!(v2["spec"], json!({"size": 3, "owner": {"email": "a@example.com"}}));
    assert!(v2["metadata"].get("annotations").is_none(), "the hub holds everything: no data");
    assert_eq!(convert(&v2, "example.com/v1"), v1);
}

#[test]
fn v2_to_v1_to_v2_round_trip_restores_what_v1_cannot_hold() {
    let hub = hub_object();
    let v1 = convert(&hub, "example.com/v1");
    assert_eq!(v1["apiVersion"], "example.com/v1");
    assert_eq!(v1["spec"], json!({"size": i32::MAX, "ownerEmail": "a@example.com"}));
    // The object's own metadata, though the conversion dropped it, and the user's annotation
    // beside the conversion data.
    assert_eq!(v1["metadata"]["uid"], "6b0c3c1e");
    assert_eq!(v1["metadata"]["resourceVersion"], "7");
    assert_eq!(v1["metadata"]["annotations"]["note"], "kept");
    let data: Value = serde_json::from_str(
        v1["metadata"]["annotations"]["example.com/conversion-data"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(data["hub"], "example.com/v2");
    assert_eq!(convert(&v1, "example.com/v2"), hub);
}

#[test]
fn a_change_made_through_the_spoke_wins_over_the_recorded_value() {
    let hub = hub_object();
    let mut v1 = convert(&hub, "example.com/v1");
    // A v1 client sets the size (which v1 held lossily) and another owner.
    v1["spec"]["size"] = json!(5);
    v1["spec"]["ownerEmail"] = json!("b@example.com");
    let back = convert(&v1, "example.com/v2");
    assert_eq!(back["spec"]["size"], 5);
    assert_eq!(back["spec"]["owner"]["email"], "b@example.com");
    // What v1 cannot see is still there.
    assert_eq!(back["spec"]["color"], "red");
    assert_eq!(back["spec"]["owner"]["team"], "blue");
    assert_eq!(back["spec"]["ports"], json!([{"port": 80}]));
}

#[test]
fn spoke_to_spoke_goes_through_the_hub_and_keeps_what_either_loses() {
    let hub = hub_object();
    let v1 = convert(&hub, "example.com/v1");
    let alpha = convert(&v1, "example.com/v1alpha1");
    assert_eq!(alpha["apiVersion"], "example.com/v1alpha1");
    assert_eq!(alpha["spec"]["size"], "1099511627776", "restored on the way through the hub");
    assert_eq!(convert(&alpha, "example.com/v1"), v1);
    assert_eq!(convert(&alpha, "example.com/v2"), hub);
}

#[test]
fn an_object_already_in_the_desired_version_is_returned_as_it_is() {
    let hub = hub_object();
    assert_eq!(convert(&hub, "example.com/v2"), hub);
}

#[test]
fn a_request_for_an_unknown_version_fails_with_a_status_naming_it() {
    let request = ConversionRequest::new("u-1", "example.com/v9", vec![hub_object()]);
    let response = conversions().convert(&request);
    assert!(!response.is_success());
    assert!(response.converted_objects.is_empty());
    assert_eq!(response.uid, "u-1");
    assert_eq!(response.result.status.as_deref(), Some("Failure"));
    let message = response.result.message.unwrap();
    assert!(message.contains("example.com/v9 is not a version of Widget"), "{message}");
    assert!(message.contains("example.com/v1, example.com/v1alpha1, example.com/v2"), "{message}");
    assert!(message.contains("object 0 (default/w example.com/v2 Widget)"), "{message}");

    // An object in a version nobody registered, too.
    let mut v3 = hub_object();
    v3["apiVersion"] = json!("example.com/v3");
    let request = ConversionRequest::new("u-2", "example.com/v1", vec![v3]);
    let message = conversions().convert(&request).result.message.unwrap();
    assert!(message.contains("example.com/v3 is not a version of Widget"), "{message}");
}

#[test]
fn a_kind_without_a_converter_or_a_failed_try_from_fails_the_whole_review() {
    let gadget =
        json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}});
    let request = ConversionRequest::new("u", "example.com/v2", vec![hub_object(), gadget]);
    let message = conversions().convert(&request).result.message.unwrap();
    assert!(message.contains("object 1 (g example.com/v1 Gadget)"), "{message}");
    assert!(message.contains("no conversion for kind Gadget"), "{message}");
    assert!(message.contains("Widget.example.com"), "{message}");

    let alpha = json!({
        "apiVersion": "example.com/v1alpha1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": "big"},
    });
    let request = ConversionRequest::new("u", "example.com/v2", vec![alpha]);
    let message = conversions().convert(&request).result.message.unwrap();
    assert!(
        message.contains(
            "converting example.com/v1alpha1 to example.com/v2 failed: spec.size \"big\""
        ),
        "{message}"
    );
}

#[test]
fn an_object_that_does_not_decode_names_its_version_and_type() {
    let mut hub = hub_object();
    hub["spec"]["size"] = json!("three");
    let error = converter().convert(hub, "example.com/v1").unwrap_err().to_string();
    assert!(error.contains("does not decode as example.com/v2 Widget"), "{error}");
}

#[test]
fn unreadable_conversion_data_fails_naming_the_annotation() {
    let mut v1 = convert(&hub_object(), "example.com/v1");
    v1["metadata"]["annotations"]["example.com/conversion-data"] = json!("{not json");
    let error = converter().convert(v1, "example.com/v2").unwrap_err().to_string();
    assert!(error.contains("the annotation example.com/conversion-data"), "{error}");
}

#[test]
fn data_recorded_for_another_hub_is_not_restored() {
    let mut v1 = convert(&hub_object(), "example.com/v1");
    let annotation = &mut v1["metadata"]["annotations"]["example.com/conversion-data"];
    let mut data: Value = serde_json::from_str(annotation.as_str().unwrap()).unwrap();
    data["hub"] = json!("example.com/v3");
    *annotation = json!(data.to_string());
    let back = convert(&v1, "example.com/v2");
    assert!(back["spec"].get("color").is_none());
    assert!(back["metadata"]["annotations"].get("example.com/conversion-data").is_none());
}

#[test]
#[should_panic(expected = "is not a version of")]
fn a_spoke_of_another_kind_is_a_mistake_found_at_once() {
    #[derive(Clone, Debug, serde::Deserialize, informer_derive::Informer)]
    #[informer(group = "example.com", version = "v1")]
    struct Gadget {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    }
    impl From<v2::Widget> for Gadget {
        fn from(w: v2::Widget) -> Self {
            Self { metadata: w.metadata }
        }
    }
    impl From<Gadget> for v2::Widget {
        fn from(g: Gadget) -> Self {
            Self { metadata: g.metadata, spec: v2::WidgetSpec::default() }
        }
    }
    let _ = Converter::<v2::Widget>::new().spoke::<Gadget>();
}
