//! The `OpenAPI` v3 subset a CRD's `openAPIV3Schema` is written in (apiextensions' `JSONSchemaProps`).
//!
//! What shapes Rust types or their docs is kept, and of the validation-only keywords those that
//! [`crate::sample`] needs to build valid objects (`pattern`, `minimum`, `maxLength`, …); the
//! others (CEL rules, `uniqueItems`, …) are skipped by serde. Properties are held in a
//! `BTreeMap`, so generated fields come out in a deterministic (alphabetical) order.

use std::collections::BTreeMap;

use serde::Deserialize;

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
