//! A check of the samples against the schema they were made from, for tests: what the module
//! docs promise (valid values, every enum value somewhere, `required-only` and `all-fields`).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use serde_json::Value;

use super::{enum_fits, samples};
use crate::schema::crd::CustomResourceDefinition;
use crate::schema::openapi::{AdditionalProperties, Items, Schema};

/// The root schema of `crd`'s `version`, if it has one.
fn root(crd: &CustomResourceDefinition, version: &str) -> Option<Schema> {
    let version = crd.spec.versions.iter().find(|candidate| candidate.name == version)?;
    version.schema.clone()?.open_api_v3_schema
}

/// Checks `value` against the parts of `schema` the samples promise to respect, pushing what
/// is wrong to `errors`, and records enum values seen per schema node.
fn check(
    schema: &Schema,
    value: &Value,
    path: &str,
    seen: &mut HashMap<*const Schema, BTreeSet<String>>,
    errors: &mut Vec<String>,
) {
    let mut error = |message: String| errors.push(format!("{path}: {message} (value {value})"));
    if value.is_null() {
        error("null".to_owned());
        return;
    }
    if let Some(values) = schema.enum_.as_ref().filter(|values| enum_fits(schema, values)) {
        seen.entry(std::ptr::from_ref(schema)).or_default().insert(value.to_string());
        if !values.contains(value) {
            error("not in enum".to_owned());
        }
        return;
    }
    if schema.int_or_string {
        match value {
            Value::String(_) => {}
            Value::Number(number) if number.is_i64() => {}
            _ => error("not an int-or-string".to_owned()),
        }
        return;
    }
    let Some(type_) = schema.type_.as_deref() else { return };
    let matches = match type_ {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.as_f64().is_some_and(|number| number.fract() != 0.0),
        "boolean" => value.is_boolean(),
        _ => true,
    };
    if !matches {
        error(format!("not a {type_}"));
        return;
    }
    if let Some(problem) = scalar_problem(schema, value) {
        error(problem.to_owned());
    }
    if let Value::Array(items) = value {
        let count = u64::try_from(items.len()).unwrap_or(u64::MAX);
        if schema.min_items.is_some_and(|min| count < min)
            || schema.max_items.is_some_and(|max| count > max)
        {
            error("item count out of bounds".to_owned());
        }
        let keys: Vec<Value> = match schema.list_type.as_deref() {
            Some("set") => items.clone(),
            Some("map") => items
                .iter()
                .map(|item| schema.list_map_keys.iter().map(|key| item[key].clone()).collect())
                .collect(),
            _ => Vec::new(),
        };
        if keys.iter().map(Value::to_string).collect::<BTreeSet<_>>().len() != keys.len() {
            error("duplicate items in a set or map list".to_owned());
        }
        if let Some(Items::Schema(item)) = schema.items.as_deref() {
            for (index, value) in items.iter().enumerate() {
                check(item, value, &format!("{path}[{index}]"), seen, errors);
            }
        }
    }
    if let Value::Object(object) = value {
        let header = |key: &str| ["apiVersion", "kind", "metadata"].contains(&key);
        for required in &schema.required {
            let written_by_sample = schema.embedded_resource && header(required);
            if !object.contains_key(required) && !written_by_sample {
                errors.push(format!("{path}: required {required} missing"));
            }
        }
        for (key, value) in object {
            let path = format!("{path}.{key}");
            if schema.embedded_resource && header(key) {
                continue;
            }
            let in_branch =
                || schema.junctions().find_map(|(_, _, branch)| branch.properties.get(key));
            if let Some(property) = schema.properties.get(key).or_else(in_branch) {
                check(property, value, &path, seen, errors);
            } else if let Some(AdditionalProperties::Schema(values)) =
                schema.additional_properties.as_deref()
            {
                check(values, value, &path, seen, errors);
            } else if !schema.preserves_unknown_fields() && schema.additional_properties.is_none() {
                errors.push(format!("{path}: unknown property"));
            }
        }
    }
}

/// What is wrong with a number or string `value` of `schema`: bounds, length, format.
fn scalar_problem(schema: &Schema, value: &Value) -> Option<&'static str> {
    if let Some(number) = value.as_f64() {
        let low = schema.minimum.unwrap_or(f64::NEG_INFINITY);
        let high = schema.maximum.unwrap_or(f64::INFINITY);
        let exclusive = (schema.exclusive_minimum && number <= low)
            || (schema.exclusive_maximum && number >= high);
        if number < low || number > high || exclusive {
            return Some("out of bounds");
        }
    }
    if let Some(text) = value.as_str() {
        let length = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
        if schema.min_length.is_some_and(|min| length < min)
            || schema.max_length.is_some_and(|max| length > max)
        {
            return Some("length out of bounds");
        }
        match schema.format.as_deref() {
            Some("date-time") if text.len() != 20 || !text.ends_with('Z') => {
                return Some("not a second-precision UTC date-time");
            }
            Some("byte") if text.len() % 4 != 0 => return Some("not padded base64"),
            _ => {}
        }
    }
    None
}

/// Every schema node with an enum, reached through properties, items and map values (the
/// root's `apiVersion`, `kind` and `metadata` excepted: the samples write their own).
fn enums<'a>(schema: &'a Schema, root: bool, found: &mut Vec<(&'a Schema, String)>, path: &str) {
    if schema.enum_.as_ref().is_some_and(|values| enum_fits(schema, values)) {
        found.push((schema, path.to_owned()));
    }
    for (name, property) in &schema.properties {
        let header = ["apiVersion", "kind", "metadata"].contains(&name.as_str());
        if !(header && (root || schema.embedded_resource)) {
            enums(property, false, found, &format!("{path}.{name}"));
        }
    }
    if let Some(Items::Schema(item)) = schema.items.as_deref() {
        enums(item, false, found, &format!("{path}[]"));
    }
    if let Some(AdditionalProperties::Schema(values)) = schema.additional_properties.as_deref() {
        enums(values, false, found, &format!("{path}{{}}"));
    }
}

/// Checks the [`samples`] of `crd`'s `version` against its schema: the header each sample
/// writes (`apiVersion`, `kind`, `metadata.name`, a namespace exactly when the resource is
/// namespaced); each value's type, enum, bounds, length and format; no property the schema does
/// not know unless it preserves unknown fields; every enum value in some sample; `required-only`
/// with only required properties and `all-fields` with every one. `file` names the CRD in the
/// messages.
///
/// Public, and hidden from the docs, only for tests: informer-gen's unit tests run it on
/// hand-written schemas, and its integration tests (`tests/corpus.rs`) on every CRD of the
/// repository's corpus, which is outside this crate's folder and so not in its package.
///
/// # Errors
///
/// What is wrong, naming the file, the version and the path in the object (the first ten
/// problems of a sample).
#[doc(hidden)]
pub fn check_samples(
    file: &Path,
    crd: &CustomResourceDefinition,
    version: &str,
) -> Result<(), String> {
    let header = ["apiVersion", "kind", "metadata"];
    let context = format!("{} {version}", file.display());
    let schema = root(crd, version).ok_or_else(|| format!("{context}: no schema"))?;
    // The schema of what follows the header the samples write themselves.
    let mut body_schema = schema.clone();
    body_schema.required.retain(|key| !header.contains(&key.as_str()));
    let samples = samples(crd, version);
    if samples.len() < 2 {
        return Err(format!("{context}: {} samples", samples.len()));
    }
    let mut seen = HashMap::new();
    for sample in &samples {
        let name = &sample.name;
        let object =
            sample.object.as_object().ok_or_else(|| format!("{context}: {name} is no object"))?;
        let api_version = format!("{}/{version}", crd.spec.group);
        let metadata = object.get("metadata").unwrap_or(&Value::Null);
        if object.get("apiVersion").and_then(Value::as_str) != Some(api_version.as_str())
            || object.get("kind").and_then(Value::as_str) != Some(crd.spec.names.kind.as_str())
            || metadata["name"].as_str() != Some(name.as_str())
            || metadata.get("namespace").is_some() != crd.namespaced()
        {
            let written: serde_json::Map<String, Value> = object
                .iter()
                .filter(|(key, _)| header.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect();
            return Err(format!("{context}: {name}: a wrong header: {}", Value::Object(written)));
        }
        let mut body = object.clone();
        body.retain(|key, _| !header.contains(&key.as_str()));
        let mut errors = Vec::new();
        check(&body_schema, &Value::Object(body), name, &mut seen, &mut errors);
        if !errors.is_empty() {
            let first = &errors[..errors.len().min(10)];
            return Err(format!("{context}: {} problems, first: {first:#?}", errors.len()));
        }
    }
    let mut nodes = Vec::new();
    enums(&body_schema, true, &mut nodes, "");
    for (node, path) in nodes {
        let wanted: BTreeSet<String> = node
            .enum_
            .iter()
            .flatten()
            .filter(|value| !value.is_null())
            .map(Value::to_string)
            .collect();
        let got = seen.get(&std::ptr::from_ref(node)).cloned().unwrap_or_default();
        let missing: Vec<_> = wanted.difference(&got).collect();
        if !missing.is_empty() {
            return Err(format!("{context}: {path}: enum values {missing:?} in no sample"));
        }
    }
    let named = |name: &str| {
        samples
            .iter()
            .find(|sample| sample.name == name)
            .and_then(|sample| sample.object.as_object())
            .ok_or_else(|| format!("{context}: no {name} sample"))
    };
    for key in named("required-only")?.keys() {
        if !(header.contains(&key.as_str()) || schema.required.contains(key)) {
            return Err(format!("{context}: required-only has {key}"));
        }
    }
    let all_fields = named("all-fields")?;
    for key in schema.properties.keys() {
        if !all_fields.contains_key(key) {
            return Err(format!("{context}: all-fields lacks {key}"));
        }
    }
    Ok(())
}
