//! `apiextensions.k8s.io/v1beta1` CRDs read as `v1`, the way the API server converts them.
//!
//! v1beta1 was removed in Kubernetes 1.22, but projects still publish CRD files in it, and the
//! CRDs created from them before then are still served (as v1, with pruning off and schemas
//! that need not be structural). The conversion moves what v1beta1 gave once for the whole CRD
//! (`validation`, `subresources`, `additionalPrinterColumns`, the single `version`) into each
//! version, renames the printer columns' `JSONPath`, nests the conversion webhook's settings
//! under `webhook`, and makes v1beta1's default explicit: `preserveUnknownFields: true`, no
//! pruning.

use serde_json::{Map, Value, json};

/// The `apiVersion` converted from.
pub(crate) const API_VERSION: &str = "apiextensions.k8s.io/v1beta1";

/// Converts a v1beta1 CRD `object` to v1 in place (its `apiVersion` included).
pub(crate) fn to_v1(object: &mut Map<String, Value>) {
    object.insert("apiVersion".to_owned(), Value::from(super::crd::API_VERSION));
    let Some(Value::Object(spec)) = object.get_mut("spec") else { return };
    // Given once for the whole CRD in v1beta1 (`validation` is v1's `schema`), per version in
    // v1; a version's own wins.
    let shared = [
        ("schema", spec.remove("validation")),
        ("subresources", spec.remove("subresources")),
        ("additionalPrinterColumns", spec.remove("additionalPrinterColumns")),
    ];
    let single = spec.remove("version");
    if !matches!(spec.get("versions"), Some(Value::Array(versions)) if !versions.is_empty()) {
        let name = single.unwrap_or(Value::Null);
        spec.insert(
            "versions".to_owned(),
            json!([{"name": name, "served": true, "storage": true}]),
        );
    }
    let Some(Value::Array(versions)) = spec.get_mut("versions") else { return };
    for version in versions.iter_mut() {
        let Value::Object(version) = version else { continue };
        for (field, value) in &shared {
            if let Some(value) = value
                && !version.contains_key(*field)
            {
                version.insert((*field).to_owned(), value.clone());
            }
        }
        if let Some(Value::Array(columns)) = version.get_mut("additionalPrinterColumns") {
            for column in columns {
                if let Value::Object(column) = column
                    && let Some(path) = column.remove("JSONPath")
                {
                    column.insert("jsonPath".to_owned(), path);
                }
            }
        }
    }
    if let Some(Value::Object(conversion)) = spec.get_mut("conversion") {
        let client = conversion.remove("webhookClientConfig");
        let review = conversion.remove("conversionReviewVersions");
        if client.is_some() {
            let mut webhook = Map::new();
            webhook.insert("clientConfig".to_owned(), client.unwrap_or(Value::Null));
            // v1beta1's default; v1 requires the list.
            webhook.insert(
                "conversionReviewVersions".to_owned(),
                review.unwrap_or(json!(["v1beta1"])),
            );
            conversion.insert("webhook".to_owned(), Value::Object(webhook));
        }
    }
    spec.entry("preserveUnknownFields").or_insert(Value::Bool(true));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::to_v1;

    #[test]
    fn shared_settings_move_into_each_version_and_pruning_stays_off() {
        let mut crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1beta1",
            "kind": "CustomResourceDefinition",
            "spec": {
                "group": "example.com",
                "version": "v1",
                "names": {"kind": "Widget", "plural": "widgets"},
                "scope": "Namespaced",
                "validation": {"openAPIV3Schema": {"properties": {"spec": {"type": "object"}}}},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Age", "type": "date", "JSONPath": ".metadata.creationTimestamp"}],
                "conversion": {"strategy": "Webhook", "webhookClientConfig": {"url": "https://x"}}
            }
        });
        to_v1(crd.as_object_mut().unwrap());
        assert_eq!(
            crd,
            json!({
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "spec": {
                    "group": "example.com",
                    "names": {"kind": "Widget", "plural": "widgets"},
                    "scope": "Namespaced",
                    "preserveUnknownFields": true,
                    "versions": [{
                        "name": "v1",
                        "served": true,
                        "storage": true,
                        "schema": {"openAPIV3Schema": {"properties": {"spec": {"type": "object"}}}},
                        "subresources": {"status": {}},
                        "additionalPrinterColumns": [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
                    }],
                    "conversion": {
                        "strategy": "Webhook",
                        "webhook": {"clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v1beta1"]}
                    }
                }
            })
        );
    }

    #[test]
    fn a_version_keeps_its_own_settings_and_an_explicit_pruning() {
        let mut crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1beta1",
            "spec": {
                "preserveUnknownFields": false,
                "validation": {"openAPIV3Schema": {"type": "object"}},
                "versions": [
                    {"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "x-own": 1}}},
                    {"name": "v1", "served": true, "storage": false}
                ]
            }
        });
        to_v1(crd.as_object_mut().unwrap());
        let spec = &crd["spec"];
        assert_eq!(spec["preserveUnknownFields"], false);
        assert_eq!(spec["versions"][0]["schema"]["openAPIV3Schema"]["x-own"], 1);
        assert_eq!(spec["versions"][1]["schema"], json!({"openAPIV3Schema": {"type": "object"}}));
        assert!(spec.get("validation").is_none());
    }
}
