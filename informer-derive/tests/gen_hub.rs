//! informer-gen's conversion hubs (`Generator::conversion_hubs`): a kind of two versions
//! generated with its storage version as the hub, compiled here with the `From` conversions a
//! user writes, and converted through the generated `Hub` impl as `#[derive(Informer)]`'s
//! `hub(...)` is (`tests/hub.rs`). The generated file is checked in
//! (`fixtures/widget_hub.rs`) and compared with what informer-gen writes now; set
//! `INFORMER_BLESS=1` to rewrite it after a change to the generator.
//!
//! Scenario after controller-runtime's `pkg/webhook/conversion/conversion_test.go` ("should
//! convert spoke to hub successfully", and back).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::path::Path;

use informer_webhook::conversion::ConversionRequest;
use informer_webhook::convert::{Conversions, KindHub};
use serde_json::json;

#[allow(clippy::all, clippy::pedantic, missing_docs, reason = "generated code")]
mod generated {
    include!("fixtures/widget_hub.rs");
}

use generated::example::{v1, v2};

impl From<v1::Widget> for v2::Widget {
    fn from(w: v1::Widget) -> Self {
        let spec = w.spec.map(|s| v2::WidgetSpec { count: s.replicas, color: None });
        Self { metadata: w.metadata, spec }
    }
}

impl From<v2::Widget> for v1::Widget {
    fn from(w: v2::Widget) -> Self {
        let spec = w.spec.map(|s| v1::WidgetSpec { replicas: s.count });
        Self { metadata: w.metadata, spec }
    }
}

#[test]
fn the_checked_in_output_is_what_informer_gen_writes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let crds = informer_gen::schema::load(&[dir.join("widget-hub.yaml")]).unwrap();
    let output = informer_gen::Generator::new()
        .types_only(true)
        .conversion_hubs(true)
        .generate(&crds)
        .unwrap();
    let code = output.to_file_string();
    let fixture = dir.join("widget_hub.rs");
    if std::env::var_os("INFORMER_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&fixture, &code).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(&fixture).unwrap(),
        code,
        "fixtures/widget_hub.rs is stale: run with INFORMER_BLESS=1 and review the diff"
    );
}

#[test]
fn the_generated_hub_is_the_storage_version_and_converts_both_ways() {
    fn hub_of<K: KindHub>() -> &'static str {
        <K::Hub as k8s_openapi::Resource>::API_VERSION
    }
    assert_eq!(hub_of::<v1::Widget>(), "example.com/v2");
    let conversions = Conversions::new().hub::<v2::Widget>();
    let v2 = json!({
        "apiVersion": "example.com/v2", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"count": 3, "color": "red"},
    });
    let to_v1 = ConversionRequest::new("1", "example.com/v1", vec![v2.clone()]);
    let v1 = conversions.convert(&to_v1).converted_objects.remove(0);
    assert_eq!(v1["spec"], json!({"replicas": 3}));
    let to_v2 = ConversionRequest::new("2", "example.com/v2", vec![v1]);
    assert_eq!(conversions.convert(&to_v2).converted_objects, [v2]);
}
