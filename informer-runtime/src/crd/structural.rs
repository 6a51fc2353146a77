//! schemars' output → a Kubernetes *structural* schema, for `#[derive(Informer)]`'s `crd()`
//! (the derive emits a call; a proc-macro crate cannot export the function itself). In order,
//! on each schema, children first:
//!
//! - `$schema`, `$defs`, `definitions`, `components` and `additionalProperties: false` go
//!   (pruning does what the last did);
//! - an `allOf` of one schema (a `$ref` with siblings, once inlined) is merged into its parent;
//! - `null` variants of `anyOf`/`oneOf`, and `null` in `enum`, become `nullable: true`;
//! - `oneOf`/`anyOf` of string enums (unit enum variants with docs) become one string enum;
//! - `oneOf`/`anyOf` of objects (enums with data) have their properties hoisted into the parent,
//!   which becomes `type: object`; each variant keeps only its `required` list and its tag's
//!   value (`properties: {type: {enum: [git]}}`, for internally tagged enums); a property in
//!   several variants keeps the first variant's schema, except string enums (the tag of an
//!   internally tagged enum), whose values are merged; what every variant requires, the parent
//!   requires; a variant that keeps unknown fields (a flattened map) makes the parent keep them,
//!   as a structural schema allows the extension nowhere inside `oneOf`;
//! - `properties` with `additionalProperties` (a flattened map beside fields) becomes
//!   `properties` with `x-kubernetes-preserve-unknown-fields: true`: a structural schema cannot
//!   have both, and the API server then keeps the fields it does not know, which is what the
//!   flattened map reads;
//! - a schema that says nothing about its value (`serde_json::Value`) gets
//!   `x-kubernetes-preserve-unknown-fields: true`, and an `enum` of strings without a type gets
//!   `type: string`.
//!
//! Unions of mixed kinds are left as they are; the API server's message then says which field.
//! A `$ref` left over is schemars' way to write a recursive type, which it cannot inline: see
//! [`find_recursion`].

use serde_json::{Map, Value};

/// The extension that keeps unknown fields.
const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";

/// Rewrites `schema` in place to be structural (see the module docs).
pub(crate) fn rewrite(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        properties.values_mut().for_each(rewrite);
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(value) = map.get_mut(key) {
            rewrite(value);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = map.get_mut(key) {
            list.iter_mut().for_each(rewrite);
        }
    }
    for key in ["$schema", "$defs", "definitions", "components"] {
        map.remove(key);
    }
    if map.get("additionalProperties") == Some(&Value::Bool(false)) {
        map.remove("additionalProperties");
    }
    if map.get("allOf").and_then(Value::as_array).is_some_and(|l| l.len() == 1)
        && let Some(Value::Array(mut list)) = map.remove("allOf")
        && let Some(Value::Object(inner)) = list.pop()
    {
        merge_missing(map, inner);
    }
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(variants)) = map.remove(key) else { continue };
        let (nulls, mut variants): (Vec<Value>, Vec<Value>) =
            variants.into_iter().partition(is_null);
        if !nulls.is_empty() {
            map.insert("nullable".into(), Value::Bool(true));
        }
        if variants.len() == 1 {
            if let Some(Value::Object(inner)) = variants.pop() {
                merge_missing(map, inner);
            }
        } else if !variants.is_empty() && variants.iter().all(is_string_enum) {
            let values: Vec<Value> = variants
                .iter()
                .filter_map(|v| v.get("enum").and_then(Value::as_array))
                .flatten()
                .cloned()
                .collect();
            map.insert("type".into(), Value::from("string"));
            map.insert("enum".into(), Value::Array(values));
        } else if !variants.is_empty() && variants.iter().all(is_object) {
            hoist_variants(map, key, variants);
        } else if !variants.is_empty() {
            map.insert(key.into(), Value::Array(variants));
        }
    }
    if map.contains_key("properties") && map.remove("additionalProperties").is_some() {
        map.insert(PRESERVE.into(), Value::Bool(true));
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        let before = values.len();
        values.retain(|v| !v.is_null());
        if values.len() != before {
            map.insert("nullable".into(), Value::Bool(true));
        }
    }
    if !map.contains_key("type")
        && map
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty() && e.iter().all(Value::is_string))
    {
        map.insert("type".into(), Value::from("string"));
    }
    let says_something =
        ["type", "enum", "allOf", "anyOf", "oneOf", "not", "x-kubernetes-int-or-string", PRESERVE]
            .iter()
            .any(|k| map.contains_key(*k));
    if !says_something && !map.contains_key("required") {
        map.insert(PRESERVE.into(), Value::Bool(true));
    }
}

/// Adds the entries of `inner` that `map` does not have.
fn merge_missing(map: &mut Map<String, Value>, inner: Map<String, Value>) {
    for (key, value) in inner {
        map.entry(key).or_insert(value);
    }
}

fn is_null(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("null")
        // `{"enum": [null]}`, or what `rewrite` made of it in the variant itself.
        || (v.get("type").is_none()
            && v.get("enum").and_then(Value::as_array).is_some_and(|e| e.iter().all(Value::is_null)))
}

fn is_string_enum(v: &Value) -> bool {
    v.get("type").is_none_or(|t| t == "string")
        && v.get("enum").and_then(Value::as_array).is_some_and(|e| e.iter().all(Value::is_string))
}

fn is_object(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("object")
        || (v.get("type").is_none() && v.get("properties").is_some())
}

/// The variants of an enum with data, `key` (`oneOf` or `anyOf`) of `map`: their properties go
/// to `map`, and each keeps only what tells it apart (its required fields and its tag).
fn hoist_variants(map: &mut Map<String, Value>, key: &str, mut variants: Vec<Value>) {
    map.insert("type".into(), Value::from("object"));
    let mut kept_variants = Vec::new();
    for variant in &mut variants {
        let Some(variant) = variant.as_object_mut() else { continue };
        // The variant's tag (a string enum of one value, for an internally tagged enum) stays
        // in the variant: without it a variant whose required fields are a subset of another's
        // (a unit variant: just the tag) would match the other's objects too, and `oneOf`
        // would refuse them.
        let mut tags = Map::new();
        if let Some(Value::Object(properties)) = variant.get("properties") {
            for (name, property) in properties {
                let values = property.get("enum").and_then(Value::as_array);
                if is_string_enum(property) && values.is_some_and(|v| v.len() == 1) {
                    let mut only = Map::new();
                    only.insert("enum".into(), property["enum"].clone());
                    tags.insert(name.clone(), Value::Object(only));
                }
            }
        }
        if variant.get(PRESERVE) == Some(&Value::Bool(true)) {
            map.insert(PRESERVE.into(), Value::Bool(true));
        }
        if let Some(Value::Object(properties)) = variant.remove("properties") {
            let parent = map.entry("properties").or_insert_with(|| Value::Object(Map::new()));
            if let Some(parent) = parent.as_object_mut() {
                hoist_properties(parent, properties);
            }
        }
        let mut kept = Map::new();
        if let Some(names) = variant.remove("required") {
            kept.insert("required".into(), names);
        }
        if !tags.is_empty() {
            kept.insert("properties".into(), Value::Object(tags));
        }
        kept_variants.push(Value::Object(kept));
    }
    // What every variant requires, the parent requires.
    let lists: Vec<Vec<Value>> = kept_variants
        .iter()
        .map(|r| r.get("required").and_then(Value::as_array).cloned().unwrap_or_default())
        .collect();
    if let Some((first, rest)) = lists.split_first() {
        let common: Vec<Value> =
            first.iter().filter(|n| rest.iter().all(|l| l.contains(n))).cloned().collect();
        if !common.is_empty() {
            let parent = map.entry("required").or_insert_with(|| Value::Array(Vec::new()));
            if let Some(parent) = parent.as_array_mut() {
                for name in common {
                    if !parent.contains(&name) {
                        parent.push(name);
                    }
                }
            }
        }
    }
    if kept_variants.iter().any(|r| r.as_object().is_some_and(|r| !r.is_empty())) {
        map.insert(key.into(), Value::Array(kept_variants));
    }
}

/// A variant's `properties` into its parent's: the first schema of a name wins, except the
/// values of a tag (`#[serde(tag = "type")]`), which are merged.
fn hoist_properties(parent: &mut Map<String, Value>, properties: Map<String, Value>) {
    for (name, property) in properties {
        match parent.get_mut(&name) {
            Some(existing) if is_string_enum(existing) && is_string_enum(&property) => {
                let more =
                    property.get("enum").and_then(Value::as_array).cloned().unwrap_or_default();
                if let Some(Value::Array(values)) = existing.get_mut("enum") {
                    for value in more {
                        if !values.contains(&value) {
                            values.push(value);
                        }
                    }
                }
            }
            Some(_) => {}
            None => {
                parent.insert(name, property);
            }
        }
    }
}

/// Where a schema still refers to a type instead of holding it: schemars inlines every type
/// but the recursive ones, which it writes once under `components/schemas` (`$defs` in its
/// other settings) and refers to with `$ref`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Recursion {
    /// The type referred to.
    pub(crate) type_name: String,
    /// The types through which it contains itself, from it back to it (`A → B → A`), when the
    /// definitions say so.
    pub(crate) cycle: Vec<String>,
    /// The JSON path in the object where the reference is (`.spec.children[*]`).
    pub(crate) path: String,
}

/// The first `$ref` left in `schema` (rewritten, without its definitions), with the cycle it
/// closes according to `definitions` (schemars' `components/schemas`, `$defs` or
/// `definitions`, taken before the rewrite removes them).
pub(crate) fn find_recursion(
    schema: &Value,
    definitions: &Map<String, Value>,
) -> Option<Recursion> {
    let mut path = String::new();
    let type_name = first_ref(schema, &mut path)?;
    let cycle = cycle(&type_name, definitions);
    Some(Recursion { type_name, cycle, path })
}

/// schemars' definitions in `schema`, wherever its settings put them.
pub(crate) fn take_definitions(schema: &mut Value) -> Map<String, Value> {
    let Value::Object(root) = schema else { return Map::new() };
    let mut out = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = root.remove(key) {
            out.extend(defs);
        }
    }
    if let Some(Value::Object(mut components)) = root.remove("components")
        && let Some(Value::Object(schemas)) = components.remove("schemas")
    {
        out.extend(schemas);
    }
    out
}

/// The type name of `$ref: "#/components/schemas/Node"`.
fn ref_name(target: &str) -> String {
    target.rsplit('/').next().unwrap_or(target).to_owned()
}

/// The first `$ref` in `schema`, with `path` extended to where it is.
fn first_ref(schema: &Value, path: &mut String) -> Option<String> {
    let Value::Object(map) = schema else { return None };
    if let Some(Value::String(target)) = map.get("$ref") {
        return Some(ref_name(target));
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (name, property) in properties {
            let len = path.len();
            path.push('.');
            path.push_str(name);
            if let Some(found) = first_ref(property, path) {
                return Some(found);
            }
            path.truncate(len);
        }
    }
    for (key, segment) in [("items", "[*]"), ("additionalProperties", ".*")] {
        if let Some(child) = map.get(key) {
            let len = path.len();
            path.push_str(segment);
            if let Some(found) = first_ref(child, path) {
                return Some(found);
            }
            path.truncate(len);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = map.get(key)
            && let Some(found) = list.iter().find_map(|v| first_ref(v, path))
        {
            return Some(found);
        }
    }
    map.get("not").and_then(|v| first_ref(v, path))
}

/// Every type `schema` refers to, in order, once each.
fn refs(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                let name = ref_name(target);
                if !out.contains(&name) {
                    out.push(name);
                }
            }
            map.values().for_each(|v| refs(v, out));
        }
        Value::Array(list) => list.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// The shortest way from `start` back to itself through the definitions' references, as the
/// list of types (`[A, B, A]`); `[start]` when the definitions do not say.
fn cycle(start: &str, definitions: &Map<String, Value>) -> Vec<String> {
    // Breadth first, remembering where each type was reached from.
    let mut from: Vec<(String, usize)> = vec![(start.to_owned(), usize::MAX)];
    let mut next = 0;
    while next < from.len() {
        let name = from[next].0.clone();
        let mut targets = Vec::new();
        if let Some(definition) = definitions.get(&name) {
            refs(definition, &mut targets);
        }
        for target in targets {
            if target == start {
                let mut chain = vec![start.to_owned()];
                let mut at = next;
                while at != usize::MAX {
                    chain.push(from[at].0.clone());
                    at = from[at].1;
                }
                chain.reverse();
                return chain;
            }
            if !from.iter().any(|(seen, _)| *seen == target) {
                from.push((target, next));
            }
        }
        next += 1;
    }
    vec![start.to_owned()]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rewritten(mut schema: Value) -> Value {
        rewrite(&mut schema);
        schema
    }

    #[test]
    fn a_flattened_map_beside_fields_keeps_unknown_fields() {
        let schema = rewritten(json!({
            "type": "object",
            "properties": {"size": {"type": "integer"}},
            "additionalProperties": {"type": "string"},
        }));
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {"size": {"type": "integer"}},
                "x-kubernetes-preserve-unknown-fields": true,
            })
        );
    }

    #[test]
    fn a_map_alone_keeps_its_value_schema() {
        let map = json!({"type": "object", "additionalProperties": {"type": "string"}});
        assert_eq!(rewritten(map.clone()), map);
    }

    #[test]
    fn a_variant_with_a_flattened_map_makes_the_parent_keep_unknown_fields() {
        let schema = rewritten(json!({
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"type": {"type": "string", "enum": ["A"]}, "x": {"type": "integer"}},
                    "additionalProperties": true,
                    "required": ["type", "x"],
                },
                {
                    "type": "object",
                    "properties": {"type": {"type": "string", "enum": ["B"]}},
                    "required": ["type"],
                },
            ],
        }));
        assert_eq!(schema[PRESERVE], true, "{schema}");
        assert_eq!(schema["properties"]["type"]["enum"], json!(["A", "B"]));
        for variant in schema["oneOf"].as_array().unwrap() {
            assert!(variant.get(PRESERVE).is_none(), "{variant}");
        }
    }

    #[test]
    fn nulls_become_nullable() {
        let schema = rewritten(json!({"anyOf": [{"type": "integer"}, {"type": "null"}]}));
        assert_eq!(schema, json!({"type": "integer", "nullable": true}));
    }

    #[test]
    fn a_recursion_names_its_cycle_and_path() {
        // What schemars writes for `struct Spec { a: Option<A> }`, `struct A { b: Map<B> }`,
        // `struct B { a: Option<Box<A>> }`, inlined as far as it goes.
        let mut schema = json!({
            "type": "object",
            "properties": {"a": {"type": "object", "properties": {"b": {
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {
                    "a": {"anyOf": [{"$ref": "#/components/schemas/A"}, {"type": "null"}]},
                }},
            }}}},
            "components": {"schemas": {
                "A": {"type": "object", "properties": {"b": {
                    "type": "object", "additionalProperties": {"$ref": "#/components/schemas/B"},
                }}},
                "B": {"type": "object", "properties": {"a": {
                    "anyOf": [{"$ref": "#/components/schemas/A"}, {"type": "null"}],
                }}},
            }},
        });
        let definitions = take_definitions(&mut schema);
        rewrite(&mut schema);
        let found = find_recursion(&schema, &definitions).unwrap();
        assert_eq!(
            found,
            Recursion {
                type_name: "A".into(),
                cycle: vec!["A".into(), "B".into(), "A".into()],
                path: ".a.b.*.a".into(),
            }
        );
    }

    #[test]
    fn a_type_that_holds_itself_is_its_own_cycle() {
        let mut schema = json!({
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            "$defs": {"Node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            }}},
        });
        let definitions = take_definitions(&mut schema);
        rewrite(&mut schema);
        let found = find_recursion(&schema, &definitions).unwrap();
        assert_eq!(found.cycle, ["Node", "Node"]);
        assert_eq!(found.path, ".children[*]");
    }
}
