//! Conversion over HTTPS, as kube-apiserver calls a CRD's conversion webhook: a recorded
//! `ConversionReview` of derived kinds, converted through the hub and back. Scenarios after
//! controller-runtime's `pkg/webhook/conversion/conversion_test.go` ("should convert spoke to
//! hub successfully", "should return error when dest/src are unknown") over its HTTP handler.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod support;

use informer_webhook::WebhookServer;
use informer_webhook::conversion::ConversionRequest;
use informer_webhook::convert::{Conversions, Converter};
use serde_json::{Value, json};
use support::{Client, Http, fixture, pki, start};

mod v1 {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::{Deserialize, Serialize};

    #[derive(Clone, Debug, Deserialize, informer_derive::Informer)]
    #[informer(group = "example.com", version = "v1", storage = false)]
    pub struct Widget {
        pub metadata: ObjectMeta,
        pub spec: WidgetSpec,
    }

    #[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
    pub struct WidgetSpec {
        pub size: i32,
    }
}

mod v2 {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde::{Deserialize, Serialize};

    /// The hub: size became a quantity with a unit, and a color came.
    #[derive(Clone, Debug, Deserialize, informer_derive::Informer)]
    #[informer(group = "example.com", version = "v2")]
    pub struct Widget {
        pub metadata: ObjectMeta,
        pub spec: WidgetSpec,
    }

    #[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct WidgetSpec {
        pub size: Size,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub color: Option<String>,
    }

    #[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
    pub struct Size {
        pub value: i64,
        pub unit: String,
    }
}

impl From<v2::Widget> for v1::Widget {
    fn from(hub: v2::Widget) -> Self {
        let size = i32::try_from(hub.spec.size.value).unwrap_or(i32::MAX);
        Self { metadata: hub.metadata, spec: v1::WidgetSpec { size } }
    }
}

impl From<v1::Widget> for v2::Widget {
    fn from(spoke: v1::Widget) -> Self {
        let size = v2::Size { value: spoke.spec.size.into(), unit: "cm".to_owned() };
        Self { metadata: spoke.metadata, spec: v2::WidgetSpec { size, color: None } }
    }
}

fn review(uid: &str, desired: &str, objects: Vec<Value>) -> Value {
    json!({
        "kind": "ConversionReview",
        "apiVersion": "apiextensions.k8s.io/v1",
        "request": ConversionRequest::new(uid, desired, objects),
    })
}

#[tokio::test]
async fn objects_convert_to_the_hub_and_back_over_https_losing_nothing() {
    let (ca, serving) = pki();
    let conversions = Conversions::new().kind(Converter::<v2::Widget>::new().spoke::<v1::Widget>());
    let builder = WebhookServer::builder()
        .certificate_pem(serving.cert_pem, serving.key_pem)
        .conversion("/convert", conversions);
    let running = start(builder).await;
    for http in [Http::One, Http::Two] {
        let mut client = Client::new(running.addr, &ca.ca_pem(), http).await;

        // v1 → v2 → v1: field for field.
        let recorded = fixture("conversion-review.json");
        let answer = client.review("/convert", &recorded).await;
        assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(answer["kind"], "ConversionReview");
        let response = &answer["response"];
        assert_eq!(response["uid"], recorded["request"]["uid"]);
        assert_eq!(response["result"]["status"], "Success");
        let v2 = response["convertedObjects"].as_array().unwrap().clone();
        assert_eq!(v2.len(), 2);
        assert_eq!(v2[0]["apiVersion"], "example.com/v2");
        assert_eq!(v2[0]["spec"], json!({"size": {"value": 4, "unit": "cm"}}));
        assert_eq!(v2[0]["metadata"], recorded["request"]["objects"][0]["metadata"]);
        let answer = client.review("/convert", &review("back", "example.com/v1", v2.clone())).await;
        assert_eq!(
            answer["response"]["convertedObjects"], recorded["request"]["objects"],
            "{http:?}"
        );

        // v2 → v1 → v2: what v1 cannot hold (the unit, the color) comes back.
        let mut hub = v2[1].clone();
        hub["spec"] = json!({"size": {"value": 40, "unit": "in"}, "color": "red"});
        let answer =
            client.review("/convert", &review("down", "example.com/v1", vec![hub.clone()])).await;
        let v1 = answer["response"]["convertedObjects"][0].clone();
        assert_eq!(v1["spec"], json!({"size": 40}));
        assert!(v1["metadata"]["annotations"]["example.com/conversion-data"].is_string(), "{v1}");
        let answer = client.review("/convert", &review("up", "example.com/v2", vec![v1])).await;
        assert_eq!(answer["response"]["convertedObjects"], json!([hub]), "{http:?}");
    }
    running.shut_down().await;
}

#[tokio::test]
async fn a_request_for_an_unknown_version_fails_with_a_status_naming_it() {
    let (ca, serving) = pki();
    let conversions = Conversions::new().kind(Converter::<v2::Widget>::new().spoke::<v1::Widget>());
    let builder = WebhookServer::builder()
        .certificate_pem(serving.cert_pem, serving.key_pem)
        .conversion("/convert", conversions);
    let running = start(builder).await;
    let mut client = Client::new(running.addr, &ca.ca_pem(), Http::Two).await;
    let mut recorded = fixture("conversion-review.json");
    recorded["request"]["desiredAPIVersion"] = json!("example.com/v3");
    let answer = client.review("/convert", &recorded).await;
    let response = &answer["response"];
    assert_eq!(response["uid"], recorded["request"]["uid"]);
    assert_eq!(response["convertedObjects"], json!([]));
    assert_eq!(response["result"]["status"], "Failure");
    let message = response["result"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "converting object 0 (default/small example.com/v1 Widget) to example.com/v3: \
             example.com/v3 is not a version of Widget this webhook converts"
        ),
        "{message}"
    );
    running.shut_down().await;
}

#[tokio::test]
async fn a_conversion_handler_of_ones_own_and_its_errors() {
    let (ca, serving) = pki();
    let builder = WebhookServer::builder()
        .certificate_pem(serving.cert_pem, serving.key_pem)
        .conversion("/relabel", |request: ConversionRequest| async move {
            let objects = request
                .objects
                .iter()
                .map(|o| {
                    let mut o = o.clone();
                    o["apiVersion"] = json!(request.desired_api_version);
                    o
                })
                .collect();
            Ok::<_, std::convert::Infallible>(request.success(objects))
        })
        .conversion("/broken", |_request: ConversionRequest| async move {
            Err::<informer_webhook::conversion::ConversionResponse, _>(
                "the schema registry is down",
            )
        });
    let running = start(builder).await;
    let mut client = Client::new(running.addr, &ca.ca_pem(), Http::One).await;
    let recorded = fixture("conversion-review.json");
    let answer = client.review("/relabel", &recorded).await;
    assert_eq!(answer["response"]["convertedObjects"][1]["apiVersion"], "example.com/v2");
    let answer = client.review("/broken", &recorded).await;
    assert_eq!(answer["response"]["uid"], recorded["request"]["uid"]);
    assert_eq!(answer["response"]["result"]["status"], "Failure");
    assert_eq!(
        answer["response"]["result"]["message"],
        "webhook /broken failed: the schema registry is down"
    );
    running.shut_down().await;
}
