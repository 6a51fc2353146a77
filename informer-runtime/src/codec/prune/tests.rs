use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde_json::{Value, json};

use super::*;

/// A real pod (coredns, from a kind cluster) with its `managedFields`.
const COREDNS: &[u8] = include_bytes!("../../../tests/fixtures/kind-v1-36-pod-coredns.json");

fn decode<K: de::DeserializeOwned>(json: &[u8], keep: bool) -> serde_json::Result<K> {
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let value = ObjectSeed::<K>::new(keep).deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

#[test]
fn a_real_pod_loses_only_its_managed_fields() {
    let full: Pod = serde_json::from_slice(COREDNS).unwrap();
    assert!(full.metadata.managed_fields.as_ref().is_some_and(|m| !m.is_empty()));
    let pruned: Pod = decode(COREDNS, false).unwrap();
    assert_eq!(pruned.metadata.managed_fields, None);
    let mut expected = full.clone();
    expected.metadata.managed_fields = None;
    assert_eq!(pruned, expected);
    assert!(pruned.spec.as_ref().is_some_and(|s| !s.containers.is_empty()));
    assert!(pruned.status.is_some());
}

#[test]
fn kept_is_the_plain_decode() {
    let full: Pod = serde_json::from_slice(COREDNS).unwrap();
    assert_eq!(decode::<Pod>(COREDNS, true).unwrap(), full);
}

/// A custom resource with free-form spec, where same-named keys can appear at any depth.
#[derive(Debug, Deserialize, PartialEq)]
struct Custom {
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Value,
}

#[test]
fn managed_fields_elsewhere_are_kept() {
    let object = json!({
        "metadata": {
            "name": "x",
            "annotations": {"managedFields": "an annotation", "note": "managedFields"},
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {
            "managedFields": [1, 2],
            "metadata": {"managedFields": [3]},
            "nested": {"metadata": {"managedFields": {"kept": true}}},
        },
    });
    let bytes = serde_json::to_vec(&object).unwrap();
    let pruned: Custom = decode(&bytes, false).unwrap();
    assert_eq!(pruned.metadata.managed_fields, None);
    let annotations = pruned.metadata.annotations.unwrap();
    assert_eq!(annotations["managedFields"], "an annotation");
    assert_eq!(annotations["note"], "managedFields");
    assert_eq!(pruned.spec, object["spec"], "spec is untouched at every depth");

    // A map of strings at the top level: `data.metadata` is not the object's metadata.
    let cm = json!({
        "metadata": {"name": "c", "managedFields": [{"manager": "m"}]},
        "data": {"metadata": "{\"managedFields\": 1}", "managedFields": "x"},
    });
    let pruned: ConfigMap = decode(&serde_json::to_vec(&cm).unwrap(), false).unwrap();
    assert_eq!(pruned.metadata.managed_fields, None);
    assert_eq!(pruned.data.unwrap().len(), 2);
}

#[test]
fn untyped_targets_go_through_deserialize_any() {
    let bytes = br#"{"metadata":{"name":"a","managedFields":[{"manager":"m"}],"uid":"u"},"spec":{"managedFields":1}}"#;
    let pruned: Value = decode(bytes, false).unwrap();
    assert_eq!(
        pruned,
        json!({"metadata": {"name": "a", "uid": "u"}, "spec": {"managedFields": 1}})
    );
}

#[test]
fn optional_metadata_and_escaped_keys_are_pruned() {
    #[derive(Debug, Deserialize)]
    struct Loose {
        metadata: Option<ObjectMeta>,
    }
    let escaped = br#"{"meta\u0064ata":{"name":"a","managed\u0046ields":[{"manager":"m"}]}}"#;
    let pruned: Loose = decode(escaped, false).unwrap();
    let metadata = pruned.metadata.unwrap();
    assert_eq!((metadata.name.as_deref(), metadata.managed_fields), (Some("a"), None));
    let kept: Loose = decode(escaped, true).unwrap();
    assert!(kept.metadata.unwrap().managed_fields.is_some());
    let null: Loose = decode(br#"{"metadata":null}"#, false).unwrap();
    assert!(null.metadata.is_none());
}

#[test]
fn errors_are_the_same_as_without_pruning() {
    let cases: [&[u8]; 4] = [
        // A bad field after the skipped one.
        br#"{"metadata":{"managedFields":[{"manager":"m"}],"name":7}}"#,
        // Broken JSON inside the skipped value.
        br#"{"metadata":{"managedFields":[{"manager":}],"name":"a"}}"#,
        // A bad type in spec.
        br#"{"metadata":{"managedFields":[]},"spec":{"containers":3}}"#,
        // Cut off.
        br#"{"metadata":{"managedFields":[{"#,
    ];
    for case in cases {
        let plain = serde_json::from_slice::<Pod>(case).unwrap_err();
        let pruned = decode::<Pod>(case, false).unwrap_err();
        let show = |e: &serde_json::Error| (e.to_string(), e.line(), e.column(), e.classify());
        assert_eq!(show(&pruned), show(&plain), "{}", String::from_utf8_lossy(case));
    }
}

#[test]
fn a_managed_fields_value_of_any_shape_is_skipped() {
    for value in ["null", "7", "\"s\"", "{}", "[[[{}]]]"] {
        let bytes = format!(r#"{{"metadata":{{"managedFields":{value},"name":"a"}}}}"#);
        let pruned: Pod = decode(bytes.as_bytes(), false).unwrap();
        assert_eq!(pruned.metadata.name.as_deref(), Some("a"), "{value}");
        assert_eq!(pruned.metadata.managed_fields, None);
    }
}
