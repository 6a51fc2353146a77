//! CRDs whose schemas are not structural (`tests/fixtures/crd-non-structural`): they generate,
//! with a warning naming each spot and each key that is no schema keyword (an error in strict
//! mode), and their types keep whatever an object held: free JSON where the schema says nothing,
//! unknown fields where the API server keeps them, a number in a quantity as a number and a
//! string as a string.

mod support;

use informer_crd_corpus::NON_STRUCTURAL_RESOURCES;
use informer_crd_corpus::non_structural::{beta, legacy, loose};
use informer_gen::{Error, Generator};
use serde_json::json;

fn fixtures() -> std::path::PathBuf {
    support::fixtures("crd-non-structural")
}

#[test]
fn every_spot_is_a_warning_naming_file_and_path_and_strict_mode_refuses_them() {
    let crds = informer_gen::schema::load(&[fixtures()]).unwrap();
    let output = Generator::new().generate(&crds).unwrap();
    let warnings: Vec<String> = output.warnings().iter().map(ToString::to_string).collect();
    let spec = "spec.versions[0].schema.openAPIV3Schema.properties.spec.properties";
    let beta = "spec.versions[0].schema.openAPIV3Schema.properties";
    for expected in [
        "beta-doohickey.yaml: apiVersion: apiextensions.k8s.io/v1beta1 (removed in Kubernetes \
         1.22) read as apiextensions.k8s.io/v1"
            .to_owned(),
        "beta-doohickey.yaml: spec.preserveUnknownFields: pruning is off".to_owned(),
        format!("beta-doohickey.yaml: {beta}.spec: no `type` beside `properties`"),
        format!("beta-doohickey.yaml: {beta}.spec.properties.tags: an array without `items`"),
        format!("beta-doohickey.yaml: {beta}.status: no `type` beside `properties`"),
        "legacy-widget.yaml: spec.preserveUnknownFields: pruning is off".to_owned(),
        format!("legacy-widget.yaml: {spec}.args.items: no `type`"),
        format!("legacy-widget.yaml: {spec}.hooks: an array without `items`"),
        format!("legacy-widget.yaml: {spec}.selector: no `type` beside `properties`"),
        format!("legacy-widget.yaml: {spec}.source.anyOf[1].properties.inline: property"),
        format!("legacy-widget.yaml: {spec}.config: no `type`"),
        format!("loose-gadget.yaml: {spec}.pair.items: `items` is a list of schemas"),
        format!("loose-gadget.yaml: {spec}.ports: no `type` beside `items`"),
        format!("loose-gadget.yaml: {spec}.flags: `properties` beside `additionalProperties`"),
        format!("loose-gadget.yaml: {spec}.timeout.type: unknown type \"duration\""),
        format!(
            "loose-gadget.yaml: {spec}.flags.verbose: \"verbose\" is no schema keyword: the API \
             server drops it (or refuses the CRD under strict field validation, kubectl's \
             default), and so does the generator; is it a property outside `properties`, or a \
             keyword indented one level off?"
        ),
        // Published ones: Istio's Sidecar and Jaeger's CRD of their v1beta1 days, and Litmus',
        // which holds `allowEmptyValue` (an OpenAPI keyword) and a quantity without a type.
        "istio-legacy-sidecar.yaml: spec.preserveUnknownFields: pruning is off".to_owned(),
        "jaeger-operator-jaeger.yaml: apiVersion: apiextensions.k8s.io/v1beta1".to_owned(),
        format!(
            "litmus-chaosengine.yaml: {spec}.experiments.items.properties.spec.properties.\
             components.properties.experimentannotation.additionalProperties.properties.key.\
             allowEmptyValue: \"allowEmptyValue\" is a keyword of OpenAPI or JSON Schema that \
             CRD schemas do not have"
        ),
        format!(
            "litmus-chaosengine.yaml: {spec}.experiments.items.properties.spec.properties.\
             components.properties.env.items.properties.valueFrom.properties.resourceFieldRef.\
             properties.divisor: no `type`"
        ),
    ] {
        assert!(
            warnings.iter().any(|w| w.contains(&expected)),
            "no warning {expected:?} among\n{}",
            warnings.join("\n")
        );
    }
    assert_eq!(warnings.len(), 25, "{}", warnings.join("\n"));
    match Generator::new().strict(true).generate(&crds) {
        Err(Error::NotStructural { warnings: listed }) => assert_eq!(listed, output.warnings()),
        other => panic!("strict mode generated: {:?}", other.map(|o| o.resources().len())),
    }
}

#[test]
fn every_generated_resource_round_trips_its_samples() {
    let (checked, failures) = support::round_trip_samples(&fixtures(), NON_STRUCTURAL_RESOURCES);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 4, "{checked} samples");
}

#[test]
fn free_json_unknown_fields_and_quantities_survive_exactly() {
    let widget = json!({
        "apiVersion": "legacy.example.com/v1alpha1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "addedLater": {"by": "a newer controller"},
        "spec": {
            "size": 3,
            "args": ["--verbose", 2, {"nested": [true, null]}],
            "hooks": [{"exec": "true"}, "pre-stop"],
            "selector": {"matchLabels": {"app": "w"}, "matchNames": ["w"]},
            "source": {"inline": "kind: Config", "sha": "abc"},
            "resources": {"cpu": 2, "memory": "1Gi"},
            "config": [1, "two"],
            "unknown": 1.5
        },
        "status": {"phase": "", "ready": true, "observed": 7, "conditions": [{"type": "Ready", "status": "True", "reason": "Up"}]}
    });
    let parsed: legacy::v1alpha1::Widget = serde_json::from_value(widget.clone()).unwrap();
    let spec = parsed.spec.as_ref().unwrap();
    let resources = spec.resources.as_ref().unwrap();
    assert_eq!(resources.cpu, Some(informer_runtime::quantity::NumberOrQuantity::from(2)));
    assert_eq!(resources.memory.as_ref().map(ToString::to_string).as_deref(), Some("1Gi"));
    assert_eq!(serde_json::to_value(&parsed).unwrap(), widget);

    let gadget = json!({
        "apiVersion": "loose.example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {
            "pair": ["a", 1],
            "ports": [80, "http", null],
            "weights": {"a": 0.5, "b": null},
            "flags": {"debug": true, "trace": false},
            "timeout": "30s",
            "template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}},
            "limits": {"cpu": 1, "memory": "512Mi", "huge": 9_007_199_254_740_993_u64},
            "extra": {"known": "k", "other": {"deep": [1]}}
        }
    });
    let parsed: loose::v1::Gadget = serde_json::from_value(gadget.clone()).unwrap();
    assert_eq!(serde_json::to_value(&parsed).unwrap(), gadget);

    // v1beta1, read as v1: pruning off, so unknown fields survive at every level.
    let doohickey = json!({
        "apiVersion": "beta.example.com/v1beta1",
        "kind": "Doohickey",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"app": "d"}, "tags": ["a", 1], "paused": false},
        "status": {"phase": "Running", "observedGeneration": 3}
    });
    let parsed: beta::v1beta1::Doohickey = serde_json::from_value(doohickey.clone()).unwrap();
    assert_eq!(serde_json::to_value(&parsed).unwrap(), doohickey);
    let crd = beta::v1beta1::Doohickey::crd();
    assert_eq!(crd.spec.versions[0].name, "v1beta1");
    assert_eq!(crd.spec.preserve_unknown_fields, Some(true));
}
