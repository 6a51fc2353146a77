//! The two front ends agree. `Database` is written in Rust with `#[derive(Informer)]`; its
//! manifest, `crds/databases.example.com.json`, went through informer-gen into
//! `generated/databases.rs` (both written by `cargo xtask codegen`). The checked-in manifest is
//! what `Database::crd()` returns now, and every object, whether synthesised from the manifest's
//! schema by `informer_gen::sample` or written by hand, decodes through the derived type and the
//! generated one and encodes back to the JSON it came from.

#![allow(clippy::expect_used, reason = "in a test, a failed expect is a failed assertion")]

use std::collections::BTreeSet;
use std::path::Path;

use example_derive::Database;
use informer_gen::sample::json_diff;
use serde_json::{Value, json};

/// informer-gen's code for the manifest.
mod generated {
    include!("generated/databases.rs");
}

const MANIFEST_PATH: &str = "crds/databases.example.com.json";
const MANIFEST: &str = include_str!("../crds/databases.example.com.json");

#[test]
fn checked_in_manifest_is_current() {
    let checked_in: Value = serde_json::from_str(MANIFEST).expect("the manifest is JSON");
    let now = serde_json::to_value(Database::crd()).expect("a manifest encodes");
    assert!(
        checked_in == now,
        "{MANIFEST_PATH} is not what Database::crd() returns: run `cargo xtask codegen`"
    );
}

/// Decodes `object` as both types and checks that each encodes back to it.
fn round_trip(name: &str, object: &Value) {
    let derived: Database = serde_json::from_value(object.clone())
        .unwrap_or_else(|e| panic!("{name}: the derived type: {e}\n{object:#}"));
    let generated: generated::example::v1::Database = serde_json::from_value(object.clone())
        .unwrap_or_else(|e| panic!("{name}: the generated type: {e}\n{object:#}"));
    let from_derived = serde_json::to_value(&derived).expect("encodes");
    let from_generated = serde_json::to_value(&generated).expect("encodes");
    if let Some(diff) = json_diff(object, &from_derived) {
        panic!("{name}: the derived type changed the object: {diff}");
    }
    if let Some(diff) = json_diff(object, &from_generated) {
        panic!("{name}: the generated type changed the object: {diff}");
    }
}

/// The `openAPIV3Schema` of the manifest.
fn schema() -> Value {
    let manifest: Value = serde_json::from_str(MANIFEST).expect("the manifest is JSON");
    manifest["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
}

/// Makes `object` take one variant of each `oneOf` in `schema`: variant `choice` modulo their
/// number.
///
/// informer-gen's samples fill every property a schema lists, where a serde enum with data holds
/// exactly one variant. The derive writes such an enum as the union of the variants' properties
/// and `oneOf` of what each variant requires, with the tag's value for internally tagged enums
/// (`{required: [type, url], properties: {type: {enum: [dump]}}}`), so the chosen variant keeps
/// its properties, loses those only the others require, and gets its tag's value.
fn one_variant(schema: &Value, object: &mut Value, choice: usize) {
    match object {
        Value::Object(map) => {
            if let Some(variants) = schema["oneOf"].as_array() {
                let required = |v: &Value| -> BTreeSet<String> {
                    v["required"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                };
                let chosen = &variants[choice % variants.len()];
                let keep = required(chosen);
                for other in variants {
                    for name in required(other).difference(&keep) {
                        map.remove(name);
                    }
                }
                for (name, restated) in chosen["properties"].as_object().into_iter().flatten() {
                    if let Some(value) = restated["enum"].get(0) {
                        map.insert(name.clone(), value.clone());
                    }
                }
            }
            for (key, value) in map.iter_mut() {
                let inner = match schema["properties"].get(key) {
                    Some(property) => property,
                    None => &schema["additionalProperties"],
                };
                one_variant(inner, value, choice);
            }
        }
        Value::Array(items) => {
            for item in items {
                one_variant(&schema["items"], item, choice);
            }
        }
        _ => {}
    }
}

#[test]
fn samples_of_the_manifest_round_trip_through_both_types() {
    let loaded = informer_gen::schema::parse_str(Path::new(MANIFEST_PATH), MANIFEST)
        .expect("informer-gen reads the manifest");
    let samples = informer_gen::sample::samples(&loaded[0].crd, "v1");
    let schema = schema();
    let (mut backups, mut sources, mut unknown) = (BTreeSet::new(), BTreeSet::new(), 0);
    for (choice, sample) in samples.iter().enumerate() {
        let mut object = sample.object.clone();
        one_variant(&schema, &mut object, choice);
        round_trip(&sample.name, &object);
        let spec = &object["spec"];
        backups.extend(spec["backup"].as_object().into_iter().flat_map(|b| b.keys().cloned()));
        sources.extend(spec["source"]["type"].as_str().map(str::to_owned));
        unknown += usize::from(spec.get("x-extra").is_some());
    }
    // The samples reach every variant of both enums with data, and a field the schema does not
    // know (kept by `x-kubernetes-preserve-unknown-fields` and the flattened map).
    assert!(samples.len() >= 3, "{} samples", samples.len());
    assert_eq!(backups, BTreeSet::from(["continuous".to_owned(), "scheduled".to_owned()]));
    assert_eq!(sources, ["backup", "dump", "empty"].map(str::to_owned).into());
    assert!(unknown > 0);
}

#[test]
fn hand_written_objects_round_trip_through_both_types() {
    let objects = [
        (
            "minimal",
            json!({
                "apiVersion": "example.com/v1",
                "kind": "Database",
                "metadata": {"name": "minimal", "namespace": "default"},
                "spec": {"engine": "mysql", "version": "8.4", "replicas": 1, "storage": {"size": "1Gi"}},
            }),
        ),
        (
            "a port by name, a unit variant, an unknown setting",
            json!({
                "apiVersion": "example.com/v1",
                "kind": "Database",
                "metadata": {"name": "orders", "namespace": "shop", "labels": {"app": "shop"}},
                "spec": {
                    "engine": "postgres",
                    "version": "16.2",
                    "replicas": 3,
                    "readOnly": false,
                    "cacheRatio": 0.25,
                    "port": "postgres",
                    "storage": {"size": "500Mi", "className": "fast"},
                    "parameters": {"max_connections": "200"},
                    "users": [
                        {"name": "app", "privileges": ["read", "write"],
                         "passwordSecret": {"name": "orders-app", "key": "password"}},
                        {"name": "audit"},
                    ],
                    "backup": {"continuous": {"days": 7}},
                    "source": {"type": "empty"},
                    "podOverrides": {"spec": {"nodeSelector": {"disk": "ssd"}}},
                    "tuning": {"workMem": "64MB", "jit": false},
                },
                "status": {
                    "readyReplicas": 2,
                    "phase": "Running",
                    "selector": "app=orders",
                    "conditions": [{
                        "type": "Ready",
                        "status": "True",
                        "reason": "Serving",
                        "message": "2 of 3 instances serve",
                        "lastTransitionTime": "2025-06-01T12:00:00Z",
                        "observedGeneration": 4,
                    }],
                    "endpoints": {
                        "primary": {"host": "orders-0.shop", "port": 5432},
                        "replica": {"host": "orders.shop", "port": 5432},
                    },
                },
            }),
        ),
        (
            "a port by number, scheduled backups, a dump",
            json!({
                "apiVersion": "example.com/v1",
                "kind": "Database",
                "metadata": {"name": "archive", "namespace": "default"},
                "spec": {
                    "engine": "postgres",
                    "version": "15",
                    "replicas": 1,
                    "port": 5433,
                    "storage": {"size": "2Ti"},
                    "backup": {"scheduled": {"cron": "0 3 * * *", "keep": 14}},
                    "source": {"type": "dump", "url": "https://example.com/archive.sql"},
                },
            }),
        ),
    ];
    for (name, object) in &objects {
        round_trip(name, object);
    }
}
