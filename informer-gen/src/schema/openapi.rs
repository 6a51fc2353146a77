//! The `OpenAPI` v3 subset a CRD's `openAPIV3Schema` is written in (apiextensions' `JSONSchemaProps`).
//!
//! What shapes Rust types or their docs is kept, and of the validation-only keywords those that
//! [`crate::sample`] needs to build valid objects (`pattern`, `minimum`, `maxLength`, …); the
//! others (CEL rules, `uniqueItems`, …) are skipped by serde. Properties are held in a
//! `BTreeMap`, so generated fields come out in a deterministic (alphabetical) order.
//!
//! A key that is no keyword of `JSONSchemaProps` at all is dropped by serde, as the API server's
//! decoder drops it (or refuses the CRD under strict field validation); `unknown_keywords` finds
//! them in the document, since one is most often a property written outside `properties` or a
//! keyword indented one level off.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One schema node (apiextensions' `JSONSchemaProps`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[allow(clippy::struct_excessive_bools, reason = "mirrors the Kubernetes schema's flags")]
pub struct Schema {
    /// `type`: `object`, `array`, `string`, `integer`, `number` or `boolean`; absent for
    /// int-or-string and for some preserve-unknown-fields nodes.
    #[serde(rename = "type")]
    pub type_: Option<String>,
    /// `format`: `int32`, `int64`, `date-time`, `byte`, …
    pub format: Option<String>,
    /// `description`, rendered as doc comments.
    pub description: Option<String>,
    /// `properties` of an object.
    pub properties: BTreeMap<String, Schema>,
    /// `required` property names of an object.
    pub required: Vec<String>,
    /// `items` of an array.
    pub items: Option<Box<Items>>,
    /// `additionalProperties`: a schema for map values, or `true`/`false`.
    pub additional_properties: Option<Box<AdditionalProperties>>,
    /// `enum`: the allowed values.
    #[serde(rename = "enum")]
    pub enum_: Option<Vec<serde_json::Value>>,
    /// `default`, applied by the API server; mentioned in docs.
    pub default: Option<serde_json::Value>,
    /// `nullable`: `null` is a valid value.
    pub nullable: bool,
    /// `pattern`, used to recognise quantities among int-or-string values.
    pub pattern: Option<String>,
    /// `minimum` of a number or integer (inclusive unless `exclusiveMinimum`).
    pub minimum: Option<f64>,
    /// `maximum` of a number or integer (inclusive unless `exclusiveMaximum`).
    pub maximum: Option<f64>,
    /// `exclusiveMinimum`: `minimum` itself is not allowed (a boolean, as in Kubernetes schemas).
    pub exclusive_minimum: bool,
    /// `exclusiveMaximum`: `maximum` itself is not allowed (a boolean, as in Kubernetes schemas).
    pub exclusive_maximum: bool,
    /// `multipleOf` of a number or integer.
    pub multiple_of: Option<f64>,
    /// `minLength` of a string, in characters.
    pub min_length: Option<u64>,
    /// `maxLength` of a string, in characters.
    pub max_length: Option<u64>,
    /// `minItems` of an array.
    pub min_items: Option<u64>,
    /// `maxItems` of an array.
    pub max_items: Option<u64>,
    /// `minProperties` of an object or map.
    pub min_properties: Option<u64>,
    /// `maxProperties` of an object or map.
    pub max_properties: Option<u64>,
    /// `oneOf`: validation-only alternatives (structural schemas keep the shape outside them).
    pub one_of: Vec<Schema>,
    /// `anyOf`: validation-only alternatives.
    pub any_of: Vec<Schema>,
    /// `allOf`: validation-only conjunction.
    pub all_of: Vec<Schema>,
    /// `not`: validation only.
    pub not: Option<Box<Schema>>,
    /// `x-kubernetes-int-or-string`: an integer or a string.
    #[serde(rename = "x-kubernetes-int-or-string")]
    pub int_or_string: bool,
    /// `x-kubernetes-preserve-unknown-fields`: fields not in `properties` are kept.
    #[serde(rename = "x-kubernetes-preserve-unknown-fields")]
    pub preserve_unknown_fields: Option<bool>,
    /// `x-kubernetes-embedded-resource`: an object with `apiVersion`, `kind` and `metadata`.
    #[serde(rename = "x-kubernetes-embedded-resource")]
    pub embedded_resource: bool,
    /// `x-kubernetes-list-type`: `atomic`, `set` or `map`.
    #[serde(rename = "x-kubernetes-list-type")]
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys` of a `map` list.
    #[serde(rename = "x-kubernetes-list-map-keys")]
    pub list_map_keys: Vec<String>,
}

/// `items`: one schema, or the tuple form (a list of schemas) that structural schemas forbid.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant, reason = "always held in a Box")]
pub enum Items {
    /// One schema for every item.
    Schema(Schema),
    /// One schema per position (JSON Schema's tuple form).
    Tuple(Vec<Schema>),
}

/// `additionalProperties`: a schema for the values, or whether any value is allowed.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant, reason = "always held in a Box")]
pub enum AdditionalProperties {
    /// `true` (any value) or `false` (none).
    Allowed(bool),
    /// The schema every value has.
    Schema(Schema),
}

impl Schema {
    /// Whether `x-kubernetes-preserve-unknown-fields: true` is set.
    #[must_use]
    pub fn preserves_unknown_fields(&self) -> bool {
        self.preserve_unknown_fields == Some(true)
    }

    /// Whether the node has the resource quantity pattern (a `pattern` containing `[KMGTPE]i`),
    /// which controller-gen writes on every `resource.Quantity` field.
    pub(crate) fn is_quantity(&self) -> bool {
        self.pattern.as_deref().is_some_and(|pattern| pattern.contains("[KMGTPE]i"))
    }

    /// The branches of `oneOf`, `anyOf`, `allOf` and `not`, each with its keyword and its path
    /// segment (`oneOf[1]`, `not`).
    pub(crate) fn junctions(&self) -> impl Iterator<Item = (&'static str, String, &Schema)> {
        let lists = [("oneOf", &self.one_of), ("anyOf", &self.any_of), ("allOf", &self.all_of)];
        let listed = lists.into_iter().flat_map(|(keyword, list)| {
            list.iter()
                .enumerate()
                .map(move |(i, branch)| (keyword, format!("{keyword}[{i}]"), branch))
        });
        listed.chain(self.not.as_deref().map(|branch| ("not", "not".to_owned(), branch)))
    }
}

/// Every key of apiextensions' `JSONSchemaProps` (Kubernetes 1.37), sorted.
const KEYWORDS: [&str; 44] = [
    "$ref",
    "$schema",
    "additionalItems",
    "additionalProperties",
    "allOf",
    "anyOf",
    "default",
    "definitions",
    "dependencies",
    "description",
    "enum",
    "example",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "externalDocs",
    "format",
    "id",
    "items",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "multipleOf",
    "not",
    "nullable",
    "oneOf",
    "pattern",
    "patternProperties",
    "properties",
    "required",
    "title",
    "type",
    "uniqueItems",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
];

/// Keywords of `OpenAPI` 3 and of later JSON Schema drafts that `JSONSchemaProps` lacks, sorted:
/// published CRDs hold some (`allowEmptyValue`, `readOnly`), copied from `OpenAPI` documents.
const FOREIGN_KEYWORDS: [&str; 32] = [
    "$anchor",
    "$comment",
    "$defs",
    "$dynamicAnchor",
    "$dynamicRef",
    "$id",
    "$recursiveAnchor",
    "$recursiveRef",
    "$vocabulary",
    "allowEmptyValue",
    "const",
    "contains",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "dependentRequired",
    "dependentSchemas",
    "deprecated",
    "discriminator",
    "else",
    "examples",
    "if",
    "maxContains",
    "minContains",
    "prefixItems",
    "propertyNames",
    "readOnly",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
    "writeOnly",
    "xml",
];

/// Whether `key` is a keyword of `OpenAPI` 3 or of a later JSON Schema draft that Kubernetes'
/// schemas do not have.
pub(crate) fn is_foreign_keyword(key: &str) -> bool {
    FOREIGN_KEYWORDS.binary_search(&key).is_ok()
}

/// Every key in the schema `node` and the schemas nested in it that is no `JSONSchemaProps`
/// keyword, as the path of its schema (`{path}.properties.spec`) and the key (`replica`), in no
/// particular order (a `serde_json::Map` may or may not keep the document's).
///
/// Values that are data rather than schemas (`default`, `enum`, `example`, `externalDocs`,
/// CEL rules) are not entered.
pub(crate) fn unknown_keywords(node: &Value, path: &str, found: &mut Vec<(String, String)>) {
    let Value::Object(keys) = node else { return };
    for (key, value) in keys {
        let here = format!("{path}.{}", path_segment(key));
        match key.as_str() {
            "properties" | "patternProperties" | "definitions" | "dependencies" => {
                // `dependencies` maps to a schema or to a list of property names.
                for (name, schema) in value.as_object().into_iter().flatten() {
                    unknown_keywords(schema, &format!("{here}.{}", path_segment(name)), found);
                }
            }
            "allOf" | "anyOf" | "oneOf" | "items" if value.is_array() => {
                for (i, schema) in value.as_array().into_iter().flatten().enumerate() {
                    unknown_keywords(schema, &format!("{here}[{i}]"), found);
                }
            }
            // `additionalProperties` and `additionalItems` may be booleans: nothing to enter.
            "items" | "not" | "additionalProperties" | "additionalItems" => {
                unknown_keywords(value, &here, found);
            }
            known if KEYWORDS.binary_search(&known).is_ok() => {}
            _ => found.push((path.to_owned(), key.clone())),
        }
    }
}

/// A property name or keyword as one segment of a schema path: as it is when it is made of
/// letters, digits, `_` and `-`, else quoted (`properties."app.kubernetes.io/name"`).
pub(crate) fn path_segment(name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') && !name.is_empty() {
        name.to_owned()
    } else {
        format!("{name:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::{FOREIGN_KEYWORDS, KEYWORDS, unknown_keywords};

    #[test]
    fn keywords_are_sorted_for_binary_search() {
        assert!(KEYWORDS.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(FOREIGN_KEYWORDS.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(FOREIGN_KEYWORDS.iter().all(|k| KEYWORDS.binary_search(k).is_err()));
    }

    #[test]
    fn unknown_keywords_are_found_in_every_nested_schema_but_not_in_data() {
        let schema = serde_json::json!({
            "type": "object",
            "replicas": {"type": "integer"},
            "properties": {
                "spec": {
                    "type": "object",
                    "descripton": "a typo",
                    "default": {"anything": 1},
                    "enum": [{"goes": true}],
                    "example": {"here": 2},
                    "x-kubernetes-validations": [{"rule": "self.a > 0", "message": "m"}],
                    "properties": {"app.kubernetes.io/name": {"type": "string", "min": 1}},
                    "additionalProperties": false,
                },
                "list": {"type": "array", "items": {"type": "string", "maxlength": 3}},
                "tuple": {"items": [{"type": "string"}, {"typ": "string"}]},
                "map": {"additionalProperties": {"type": "string", "format ": "byte"}},
                "choice": {"oneOf": [{"required": ["a"]}, {"requires": ["b"]}], "not": {"x": 1}},
                "deps": {"dependencies": {"a": ["b"], "c": {"requird": ["d"]}}},
            },
        });
        let mut found = Vec::new();
        unknown_keywords(&schema, "root", &mut found);
        found.sort();
        let found: Vec<String> = found.iter().map(|(at, key)| format!("{at} {key}")).collect();
        assert_eq!(
            found,
            [
                "root replicas",
                "root.properties.choice.not x",
                "root.properties.choice.oneOf[1] requires",
                "root.properties.deps.dependencies.c requird",
                "root.properties.list.items maxlength",
                "root.properties.map.additionalProperties format ",
                "root.properties.spec descripton",
                "root.properties.spec.properties.\"app.kubernetes.io/name\" min",
                "root.properties.tuple.items[1] typ",
            ]
        );
    }
}
