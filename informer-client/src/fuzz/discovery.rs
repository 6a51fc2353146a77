//! `discovery_documents`: what the client reads of discovery documents (the body parsed by
//! [`parse_document`]; an `APIResourceList` by [`resources_of`] and what `Client::resolve`
//! matches on it, [`DiscoveredResource::answers_to`]; an `APIGroupList` by [`groups_of`]; an
//! `APIGroup` by [`versions_of`]), on documents in kube-apiserver's shape (the core group with
//! its subresources, `apps/v1`, a custom resource's group) mutated, re-laid out, or replaced by
//! random bytes.
//!
//! Properties:
//! - a body that is not JSON is an error that names the document;
//! - of an `APIResourceList` that is JSON, every entry of `resources` that Go's
//!   `encoding/json` reads into an `APIResource` (the fields read here of their type, or `null`,
//!   which Go reads as the zero value) is found, in order, with what Go reads, unless it is a
//!   subresource (`pods/log`); an entry Go fails to read (which fails the whole document in
//!   client-go) is skipped, and so is one that is not an object or has no name;
//! - a resource found answers to its plural, singular, kind and short names, in any case, and
//!   becomes an `ApiResource` of the group version asked for;
//! - of an `APIGroupList`, every group with a name is listed (only the one asked for, when one
//!   is), in order, with its preferred version first, then its other versions in order, each
//!   once;
//! - of an `APIGroup`, its versions are listed in order.

use fastrand::Rng;
use informer_fuzz::json::{self, Layout};
use informer_fuzz::{Unstructured, arbitrary, bytes};
use serde_json::{Map, Value, json};

use crate::parsers::{DiscoveredResource, groups_of, parse_document, resources_of, versions_of};

/// What a document is, and the path it is read from.
#[derive(Clone, Copy)]
enum Document {
    Resources,
    Groups,
    Group,
}

fn resource_lists() -> Vec<Value> {
    let resource = |name: &str, singular: &str, namespaced: bool, kind: &str, short: &[&str]| {
        let mut r = json!({"name": name, "singularName": singular, "namespaced": namespaced,
            "kind": kind, "verbs": ["create","delete","deletecollection","get","list","patch","update","watch"],
            "storageVersionHash": "xPOwRZ+Yhw8="});
        if !short.is_empty() {
            r["shortNames"] = json!(short);
        }
        r
    };
    let subresource = |name: &str, kind: &str| {
        json!({"name": name, "singularName": "", "namespaced": true, "kind": kind,
            "verbs": ["get","patch","update"]})
    };
    vec![
        json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            resource("configmaps", "configmap", true, "ConfigMap", &["cm"]),
            resource("events", "event", true, "Event", &["ev"]),
            resource("namespaces", "namespace", false, "Namespace", &["ns"]),
            subresource("namespaces/status", "Namespace"),
            resource("nodes", "node", false, "Node", &["no"]),
            resource("pods", "pod", true, "Pod", &["po"]),
            subresource("pods/log", "Pod"),
            subresource("pods/status", "Pod"),
            {"group": "policy", "version": "v1", "name": "pods/eviction", "singularName": "",
                "namespaced": true, "kind": "Eviction", "verbs": ["create"]},
            resource("secrets", "secret", true, "Secret", &[]),
            resource("services", "service", true, "Service", &["svc"]),
        ]}),
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1", "resources": [
            resource("deployments", "deployment", true, "Deployment", &["deploy"]),
            subresource("deployments/scale", "Scale"),
            subresource("deployments/status", "Deployment"),
            resource("statefulsets", "statefulset", true, "StatefulSet", &["sts"]),
        ]}),
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "example.com/v1",
            "resources": [
                {"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget",
                    "verbs": ["get","list","watch"], "shortNames": ["wd","wdg"], "categories": ["all"]},
                {"name": "clusterwidgets", "singularName": "", "namespaced": false, "kind": "ClusterWidget",
                    "verbs": ["get"]},
        ]}),
    ]
}

fn group_lists() -> Vec<Value> {
    let group = |name: &str, versions: &[&str]| {
        let versions: Vec<Value> = versions
            .iter()
            .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
            .collect();
        json!({"name": name, "preferredVersion": versions[0].clone(), "versions": versions})
    };
    vec![
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            group("apps", &["v1"]),
            group("autoscaling", &["v2", "v1"]),
            group("storage.k8s.io", &["v1", "v1beta1", "v1alpha1"]),
            group("example.com", &["v1", "v1alpha1"]),
        ]}),
        json!({"kind": "APIGroup", "apiVersion": "v1", "name": "autoscaling",
            "versions": [{"groupVersion": "autoscaling/v2", "version": "v2"},
                         {"groupVersion": "autoscaling/v1", "version": "v1"}],
            "preferredVersion": {"groupVersion": "autoscaling/v2", "version": "v2"}}),
    ]
}

/// A document's body, and whether it is exactly the JSON of a value (no repeated member, no
/// byte changed), which the references below can read.
fn body(
    u: &mut Unstructured<'_>,
    rng: &mut Rng,
    seeds: &[Value],
) -> arbitrary::Result<(Vec<u8>, bool)> {
    let mode = u.int_in_range(0..=4)?;
    if mode == 0 {
        return Ok((u.bytes(u.len())?.to_vec(), false));
    }
    let mut value = seeds[rng.usize(0..seeds.len())].clone();
    if mode >= 2 {
        let ops = rng.usize(1..=6);
        json::mutate(rng, &mut value, seeds, ops);
    }
    let duplicates = mode >= 3 && rng.bool();
    let mut body = Vec::new();
    json::write(rng, &value, Layout { newlines: true, duplicates, reorder: true }, &mut body);
    if mode == 4 {
        let raw: Vec<Vec<u8>> = seeds.iter().map(|s| s.to_string().into_bytes()).collect();
        let raw: Vec<&[u8]> = raw.iter().map(Vec::as_slice).collect();
        let ops = rng.usize(1..=4);
        bytes::mutate(rng, &mut body, &raw, bytes::JSON_TOKENS, ops);
        return Ok((body, false));
    }
    Ok((body, !duplicates))
}

pub(super) fn property(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut rng = Rng::with_seed(u.arbitrary()?);
    let document = match u.int_in_range(0..=2)? {
        0 => Document::Resources,
        1 => Document::Groups,
        _ => Document::Group,
    };
    let seeds = match document {
        Document::Resources => resource_lists(),
        Document::Groups | Document::Group => group_lists(),
    };
    let (body, exact) = body(u, &mut rng, &seeds)?;
    informer_fuzz::note("discovery.json", &body);
    let path = match document {
        Document::Resources => "/apis/example.com/v1",
        Document::Groups => "/apis",
        Document::Group => "/apis/example.com",
    };
    let value = match parse_document(path, &body) {
        Ok(value) => value,
        Err(error) => {
            let message = error.to_string();
            assert!(message.contains(path), "the error does not name the document: {message}");
            return Ok(());
        }
    };
    // A value's JSON that `Value` cannot read was cut off (past 4 MiB), or nests deeper than its
    // limit of 128 (Go's is 10,000, and members not read here are skipped at any depth): no
    // claim then.
    let exact = exact && serde_json::from_slice::<Value>(&body).is_ok();
    match document {
        Document::Resources => check_resources(&value, exact, &mut rng),
        Document::Groups => {
            let names: Vec<&str> = value["groups"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|g| g["name"].as_str())
                .collect();
            let filter = match rng.u8(0..3) {
                0 if !names.is_empty() => Some(names[rng.usize(0..names.len())].to_owned()),
                1 => Some("nope.example.com".to_owned()),
                _ => None,
            };
            check_groups(&value, filter.as_deref());
        }
        Document::Group => check_versions(&value),
    }
    Ok(())
}

/// What Go reads of one `resources` entry, in the fields read here; `None` when Go fails
/// (a field of another type) or the entry is not an object.
fn reference(entry: &Value) -> Option<(String, String, bool, String, Vec<String>)> {
    let object = entry.as_object()?;
    let string = |key: &str| match object.get(key) {
        None | Some(Value::Null) => Some(String::new()),
        Some(Value::String(text)) => Some(text.clone()),
        Some(_) => None,
    };
    let namespaced = match object.get("namespaced") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => return None,
    };
    let short_names = match object.get("shortNames") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::Null => Some(String::new()),
                Value::String(text) => Some(text.clone()),
                _ => None,
            })
            .collect::<Option<_>>()?,
        Some(_) => return None,
    };
    let name = string("name")?;
    // Go reads an entry without a name as one named ""; it names nothing that can be asked
    // for, and no path: skipped here.
    if name.is_empty() {
        return None;
    }
    Some((name, string("singularName")?, namespaced, string("kind")?, short_names))
}

fn fields(r: &DiscoveredResource) -> (String, String, bool, String, Vec<String>) {
    (r.name.clone(), r.singular_name.clone(), r.namespaced, r.kind.clone(), r.short_names.clone())
}

fn check_resources(value: &Value, exact: bool, rng: &mut Rng) {
    let found: Vec<DiscoveredResource> = resources_of(value).collect();
    if exact {
        let expected: Vec<_> = value["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(reference)
            .filter(|r| !r.0.contains('/'))
            .collect();
        let found: Vec<_> = found.iter().map(fields).collect();
        assert_eq!(found, expected, "the resources are not those Go reads");
    }
    for resource in found {
        assert!(!resource.name.contains('/'), "a subresource: {}", resource.name);
        let mut names = vec![&resource.name, &resource.singular_name, &resource.kind];
        names.extend(&resource.short_names);
        for name in names {
            let cased: String = name
                .chars()
                .map(|c| if rng.bool() { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() })
                .collect();
            assert!(
                resource.answers_to(&cased),
                "{:?} does not answer to {cased:?}",
                resource.name
            );
        }
        let (plural, kind, namespaced) =
            (resource.name.clone(), resource.kind.clone(), resource.namespaced);
        let api = resource.into_api_resource("example.com", "v1");
        assert_eq!(
            (api.group.as_str(), api.version.as_str(), api.plural, api.kind, api.namespaced),
            ("example.com", "v1", plural, kind, namespaced)
        );
    }
}

fn check_groups(value: &Value, filter: Option<&str>) {
    let groups = groups_of(value, filter);
    let entries: Vec<&Map<String, Value>> = value["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .filter(|g| {
            g.get("name").and_then(Value::as_str).is_some_and(|n| filter.is_none_or(|f| f == n))
        })
        .collect();
    assert_eq!(groups.len(), entries.len(), "not every named group is listed");
    for ((name, versions), entry) in groups.iter().zip(entries) {
        assert_eq!(Some(name.as_str()), entry["name"].as_str());
        let preferred = entry.get("preferredVersion").and_then(|p| p["version"].as_str());
        let listed: Vec<&str> = entry
            .get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v["version"].as_str())
            .filter(|v| Some(*v) != preferred)
            .collect();
        let expected: Vec<&str> = preferred.into_iter().chain(listed).collect();
        assert_eq!(versions, &expected, "the versions of {name:?}");
    }
}

fn check_versions(value: &Value) {
    let expected: Vec<&str> = match value.get("versions") {
        Some(Value::Array(items)) => {
            items.iter().filter_map(|v| v.get("version")?.as_str()).collect()
        }
        _ => Vec::new(),
    };
    assert_eq!(versions_of(value), expected, "the versions of a group");
}
