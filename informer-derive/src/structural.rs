//! The code that makes schemars' output a Kubernetes *structural* schema, emitted into each
//! expansion because a proc-macro crate cannot export functions (it belongs in the runtime: see
//! the crate docs). It runs when `crd()` is called, on the JSON of the schema:
//!
//! - `$schema`, `$defs`, `definitions` and `additionalProperties: false` go (pruning does what
//!   the last did);
//! - an `allOf` of one schema (a `$ref` with siblings, once inlined) is merged into its parent;
//! - `null` variants of `anyOf`/`oneOf`, and `null` in `enum`, become `nullable: true`;
//! - `oneOf`/`anyOf` of string enums (unit enum variants with docs) become one string enum;
//! - `oneOf`/`anyOf` of objects (enums with data) have their properties hoisted into the parent,
//!   which becomes `type: object`; each variant keeps only its `required` list and its tag's
//!   value (`properties: {type: {enum: [git]}}`, for internally tagged enums); a property in
//!   several variants keeps the first variant's schema, except string enums (the tag of an
//!   internally tagged enum), whose values are merged; what every variant requires, the parent
//!   requires;
//! - a schema that says nothing about its value (`serde_json::Value`) gets
//!   `x-kubernetes-preserve-unknown-fields: true`, and an `enum` of strings without a type gets
//!   `type: string`.
//!
//! - `properties` with `additionalProperties` (a flattened map beside fields) becomes
//!   `properties` with `x-kubernetes-preserve-unknown-fields: true`.
//!
//! Unions of mixed kinds are left as they are; the API server's message then says which field.
//! A `$ref` left over (schemars' way to write a recursive type, which it cannot inline) is an
//! error from `try_crd()` naming the type: the derive sees only the root struct's fields, so the
//! recursion, in some nested type, is not known before schemars runs.

use proc_macro2::TokenStream;
use quote::quote;

/// `fn __informer_structural(schema: &mut serde_json::Value)` and
/// `fn __informer_find_ref(schema: &serde_json::Value) -> Option<String>`, the name of the first
/// type referred to by `$ref`.
#[allow(clippy::too_many_lines, reason = "one quoted function, read top to bottom")]
pub(crate) fn rewriter(j: &syn::Path) -> TokenStream {
    quote! {
        #[allow(clippy::all, clippy::pedantic)]
        fn __informer_find_ref(schema: &#j::Value) -> ::core::option::Option<::std::string::String> {
            match schema {
                #j::Value::Object(map) => {
                    if let ::core::option::Option::Some(#j::Value::String(target)) = map.get("$ref") {
                        // `#/$defs/Node` → `Node`
                        let name = target.rsplit('/').next().unwrap_or(target);
                        return ::core::option::Option::Some(::std::string::ToString::to_string(name));
                    }
                    map.values().find_map(__informer_find_ref)
                }
                #j::Value::Array(list) => list.iter().find_map(__informer_find_ref),
                _ => ::core::option::Option::None,
            }
        }

        #[allow(clippy::all, clippy::pedantic)]
        fn __informer_structural(schema: &mut #j::Value) {
            use #j::Value;

            fn is_null(v: &Value) -> bool {
                v.get("type").and_then(Value::as_str) == ::core::option::Option::Some("null")
                    // `{"enum": [null]}`, or what this function made of it in the variant itself.
                    || (v.get("type").is_none()
                        && v.get("enum").and_then(Value::as_array).is_some_and(|e| e.iter().all(Value::is_null)))
            }
            fn is_string_enum(v: &Value) -> bool {
                v.get("type").is_none_or(|t| t == "string")
                    && v.get("enum").and_then(Value::as_array).is_some_and(|e| e.iter().all(Value::is_string))
            }
            fn is_object(v: &Value) -> bool {
                v.get("type").and_then(Value::as_str) == ::core::option::Option::Some("object")
                    || (v.get("type").is_none() && v.get("properties").is_some())
            }

            let Value::Object(map) = schema else { return };
            if let ::core::option::Option::Some(Value::Object(properties)) = map.get_mut("properties") {
                for value in properties.values_mut() {
                    __informer_structural(value);
                }
            }
            for key in ["items", "additionalProperties", "not"] {
                if let ::core::option::Option::Some(value) = map.get_mut(key) {
                    __informer_structural(value);
                }
            }
            for key in ["allOf", "anyOf", "oneOf"] {
                if let ::core::option::Option::Some(Value::Array(list)) = map.get_mut(key) {
                    for value in list {
                        __informer_structural(value);
                    }
                }
            }
            for key in ["$schema", "$defs", "definitions"] {
                map.remove(key);
            }
            if map.get("additionalProperties") == ::core::option::Option::Some(&Value::Bool(false)) {
                map.remove("additionalProperties");
            }
            if map.get("allOf").and_then(Value::as_array).is_some_and(|l| l.len() == 1) {
                if let ::core::option::Option::Some(Value::Array(mut list)) = map.remove("allOf") {
                    if let ::core::option::Option::Some(Value::Object(inner)) = list.pop() {
                        for (key, value) in inner {
                            map.entry(key).or_insert(value);
                        }
                    }
                }
            }
            for key in ["oneOf", "anyOf"] {
                let ::core::option::Option::Some(Value::Array(variants)) = map.remove(key) else { continue };
                let (nulls, mut variants): (::std::vec::Vec<Value>, ::std::vec::Vec<Value>) =
                    variants.into_iter().partition(is_null);
                if !nulls.is_empty() {
                    map.insert("nullable".into(), Value::Bool(true));
                }
                if variants.len() == 1 {
                    if let ::core::option::Option::Some(Value::Object(inner)) = variants.pop() {
                        for (key, value) in inner {
                            map.entry(key).or_insert(value);
                        }
                    }
                } else if !variants.is_empty() && variants.iter().all(is_string_enum) {
                    let values: ::std::vec::Vec<Value> = variants
                        .iter()
                        .filter_map(|v| v.get("enum").and_then(Value::as_array))
                        .flatten()
                        .cloned()
                        .collect();
                    map.insert("type".into(), Value::from("string"));
                    map.insert("enum".into(), Value::Array(values));
                } else if !variants.is_empty() && variants.iter().all(is_object) {
                    map.insert("type".into(), Value::from("object"));
                    let mut required = ::std::vec::Vec::new();
                    for variant in &mut variants {
                        let ::core::option::Option::Some(variant) = variant.as_object_mut() else { continue };
                        // The variant's tag (a string enum of one value, for an internally tagged
                        // enum) stays in the variant: without it a variant whose required fields
                        // are a subset of another's (a unit variant: just the tag) would match
                        // the other's objects too, and `oneOf` would refuse them.
                        let mut tags = #j::Map::new();
                        if let ::core::option::Option::Some(Value::Object(properties)) = variant.get("properties") {
                            for (name, property) in properties {
                                let values = property.get("enum").and_then(Value::as_array);
                                if is_string_enum(property) && values.is_some_and(|v| v.len() == 1) {
                                    let mut only = #j::Map::new();
                                    only.insert("enum".into(), property["enum"].clone());
                                    tags.insert(name.clone(), Value::Object(only));
                                }
                            }
                        }
                        if let ::core::option::Option::Some(Value::Object(properties)) = variant.remove("properties") {
                            let parent = map
                                .entry("properties")
                                .or_insert_with(|| Value::Object(#j::Map::new()));
                            if let ::core::option::Option::Some(parent) = parent.as_object_mut() {
                                for (name, property) in properties {
                                    match parent.get_mut(&name) {
                                        // A tag (`#[serde(tag = "type")]`): each variant's value.
                                        ::core::option::Option::Some(existing) if is_string_enum(existing) && is_string_enum(&property) => {
                                            let more = property.get("enum").and_then(Value::as_array).cloned().unwrap_or_default();
                                            if let ::core::option::Option::Some(Value::Array(values)) = existing.get_mut("enum") {
                                                for value in more {
                                                    if !values.contains(&value) {
                                                        values.push(value);
                                                    }
                                                }
                                            }
                                        }
                                        ::core::option::Option::Some(_) => {}
                                        ::core::option::Option::None => {
                                            parent.insert(name, property);
                                        }
                                    }
                                }
                            }
                        }
                        let mut kept = #j::Map::new();
                        if let ::core::option::Option::Some(names) = variant.remove("required") {
                            kept.insert("required".into(), names);
                        }
                        if !tags.is_empty() {
                            kept.insert("properties".into(), Value::Object(tags));
                        }
                        required.push(Value::Object(kept));
                    }
                    // What every variant requires, the parent requires.
                    let lists: ::std::vec::Vec<::std::vec::Vec<Value>> = required
                        .iter()
                        .map(|r| r.get("required").and_then(Value::as_array).cloned().unwrap_or_default())
                        .collect();
                    if let ::core::option::Option::Some((first, rest)) = lists.split_first() {
                        let common: ::std::vec::Vec<Value> =
                            first.iter().filter(|n| rest.iter().all(|l| l.contains(n))).cloned().collect();
                        if !common.is_empty() {
                            let parent = map.entry("required").or_insert_with(|| Value::Array(::std::vec::Vec::new()));
                            if let ::core::option::Option::Some(parent) = parent.as_array_mut() {
                                for name in common {
                                    if !parent.contains(&name) {
                                        parent.push(name);
                                    }
                                }
                            }
                        }
                    }
                    if required.iter().any(|r| r.as_object().is_some_and(|r| !r.is_empty())) {
                        map.insert(key.into(), Value::Array(required));
                    }
                } else if !variants.is_empty() {
                    map.insert(key.into(), Value::Array(variants));
                }
            }
            // A flattened map beside fields: `properties` with `additionalProperties`, which a
            // structural schema cannot have together. The API server then keeps the fields it
            // does not know, which is what the flattened map reads.
            if map.contains_key("properties") && map.remove("additionalProperties").is_some() {
                map.insert("x-kubernetes-preserve-unknown-fields".into(), Value::Bool(true));
            }
            if let ::core::option::Option::Some(Value::Array(values)) = map.get_mut("enum") {
                let before = values.len();
                values.retain(|v| !v.is_null());
                if values.len() != before {
                    map.insert("nullable".into(), Value::Bool(true));
                }
            }
            if !map.contains_key("type")
                && map.get("enum").and_then(Value::as_array).is_some_and(|e| !e.is_empty() && e.iter().all(Value::is_string))
            {
                map.insert("type".into(), Value::from("string"));
            }
            let says_something = [
                "type",
                "enum",
                "allOf",
                "anyOf",
                "oneOf",
                "not",
                "x-kubernetes-int-or-string",
                "x-kubernetes-preserve-unknown-fields",
            ]
            .iter()
            .any(|k| map.contains_key(*k));
            if !says_something && !map.contains_key("required") {
                map.insert("x-kubernetes-preserve-unknown-fields".into(), Value::Bool(true));
            }
        }
    }
}
