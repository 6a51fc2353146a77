//! Discovery and `OpenAPI`: what clients read before they touch a resource.
//!
//! Legacy discovery (`/api`, `/apis`, `/api/v1`, `/apis/{group}/{version}`) is served in
//! full. Requests for aggregated discovery (`Accept: ...;g=apidiscovery.k8s.io;...`) get the
//! legacy documents with `Content-Type: application/json`, which client-go (and so kubectl)
//! takes as the signal to fall back to legacy discovery.
//!
//! `OpenAPI` v3 is served as a valid index (`/openapi/v3`) with one small document per group
//! version. Each document declares, for every resource, the PATCH operation with its
//! `x-kubernetes-group-version-kind` and the `fieldValidation` query parameter: that is what
//! kubectl's `create` and `apply` check to decide that the server validates fields itself, so
//! they do not need the (unserved) `OpenAPI` v2 schema for client-side validation. The server
//! accepts `fieldValidation` and does not validate fields.

use serde_json::{Map, Value, json};

use crate::catalog::{ApiResource, Catalog};

/// The Kubernetes version the server claims to be.
pub(crate) const MAJOR: &str = "1";
/// The minor version, as kubectl compares it for version skew.
pub(crate) const MINOR: &str = "32";

/// `/version`.
pub(crate) fn version() -> Value {
    json!({
        "major": MAJOR,
        "minor": MINOR,
        "gitVersion": format!("v{MAJOR}.{MINOR}.0-informer-runtime"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2024-12-11T00:00:00Z",
        "goVersion": "go1.23.4",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `/api`: the core group's versions.
pub(crate) fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    json!({
        "name": group,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map_or(Value::Null, gv),
    })
}

/// `/apis`: every named group.
pub(crate) fn api_group_list(catalog: &Catalog) -> Value {
    let groups: Vec<Value> = catalog
        .groups()
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, versions)| group_json(g, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`.
pub(crate) fn api_group(catalog: &Catalog, group: &str) -> Option<Value> {
    let groups = catalog.groups();
    let (_, versions) = groups.iter().find(|(g, _)| g == group && !g.is_empty())?;
    let mut doc = group_json(group, versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

/// `/api/v1` or `/apis/{group}/{version}`: the resources of a group version, sorted by name
/// as the API server sorts them (a resource before its subresources).
///
/// The core group's list carries no `apiVersion`, only its `kind`, as kube-apiserver writes it.
pub(crate) fn resource_list(catalog: &Catalog, group: &str, version: &str) -> Option<Value> {
    let mut resources = catalog.in_group_version(group, version);
    resources.sort_by(|a, b| a.ty.plural.cmp(&b.ty.plural));
    if resources.is_empty() && !(group.is_empty() && version == "v1") {
        return None;
    }
    let mut entries = Vec::new();
    for r in &resources {
        let mut entry = Map::new();
        entry.insert("name".into(), json!(r.ty.plural));
        entry.insert("singularName".into(), json!(r.ty.singular));
        entry.insert("namespaced".into(), json!(r.ty.namespaced));
        entry.insert("kind".into(), json!(r.ty.kind));
        entry.insert("verbs".into(), json!(r.verbs));
        if !r.ty.short_names.is_empty() {
            entry.insert("shortNames".into(), json!(r.ty.short_names));
        }
        if !r.ty.categories.is_empty() {
            entry.insert("categories".into(), json!(r.ty.categories));
        }
        entries.push(Value::Object(entry));
        entries.extend(subresource_entries(r));
    }
    if group.is_empty() {
        return Some(json!({"kind": "APIResourceList", "groupVersion": version,
                           "resources": entries}));
    }
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": format!("{group}/{version}"), "resources": entries}))
}

/// The discovery entries of a resource's subresources, in kube-apiserver's order (by name):
/// `pods/eviction` and `pods/log`, `{plural}/scale` and `{plural}/status`. A subresource
/// served in another group version (an `Eviction` is `policy/v1`, a `Scale` is
/// `autoscaling/v1`) names it, as kube-apiserver's entries do.
fn subresource_entries(r: &ApiResource) -> Vec<Value> {
    let entry = |sub: &str, kind: &str, verbs: &[&str], gv: Option<(&str, &str)>| {
        let mut entry = json!({
            "name": format!("{}/{sub}", r.ty.plural),
            "singularName": "",
            "namespaced": r.ty.namespaced,
            "kind": kind,
            "verbs": verbs,
        });
        if let Some((group, version)) = gv {
            entry["group"] = json!(group);
            entry["version"] = json!(version);
        }
        entry
    };
    let mut entries = Vec::new();
    if r.builtin && r.ty.group.is_empty() && r.ty.plural == "pods" {
        entries.push(entry("eviction", "Eviction", &["create"], Some(("policy", "v1"))));
        entries.push(entry("log", "Pod", &["get"], None));
    }
    if r.scale.is_some() {
        let verbs = ["get", "patch", "update"];
        entries.push(entry("scale", "Scale", &verbs, Some(("autoscaling", "v1"))));
    }
    if r.ty.status_subresource {
        entries.push(entry("status", &r.ty.kind, &["get", "patch", "update"], None));
    }
    entries
}

/// The `OpenAPI` v3 path of a group version (`api/v1`, `apis/apps/v1`).
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

/// `/openapi/v3`: the index of group version documents, each with a content hash.
pub(crate) fn openapi_index(catalog: &Catalog) -> Value {
    let mut paths = Map::new();
    for (group, versions) in catalog.groups() {
        for version in versions {
            let path = gv_path(&group, &version);
            let hash = openapi_document(catalog, &group, &version)
                .map(|doc| fnv1a(doc.to_string().as_bytes()))
                .unwrap_or_default();
            let url = format!("/openapi/v3/{path}?hash={hash:016X}");
            paths.insert(path, json!({"serverRelativeURL": url}));
        }
    }
    json!({"paths": paths})
}

/// `/openapi/v3/{api/v1 | apis/group/version}`: PATCH operations with their GVK and
/// `fieldValidation`, and an open schema per kind.
pub(crate) fn openapi_document(catalog: &Catalog, group: &str, version: &str) -> Option<Value> {
    let resources = catalog.in_group_version(group, version);
    if resources.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for r in &resources {
        let gvk = json!({"group": group, "version": version, "kind": r.ty.kind});
        let schema_name = schema_name(r);
        let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
        let body_schema =
            json!({"schema": {"$ref": format!("#/components/schemas/{schema_name}")}});
        let patch = json!({
            "operationId": format!("patch{}", r.ty.kind),
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": gvk,
            "parameters": [query("dryRun"), query("fieldManager"), query("fieldValidation"), query("force")],
            "requestBody": {"content": {
                "application/json-patch+json": body_schema,
                "application/merge-patch+json": body_schema,
                "application/apply-patch+yaml": body_schema,
            }, "required": true},
            "responses": {"200": {"description": "OK", "content": {"application/json": body_schema}}},
        });
        let base = format!("/{}", gv_path(group, version));
        let item = if r.ty.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}/{{name}}", r.ty.plural)
        } else {
            format!("{base}/{}/{{name}}", r.ty.plural)
        };
        paths.insert(item, json!({"patch": patch}));
        schemas.insert(
            schema_name,
            json!({
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
                "x-kubernetes-group-version-kind": [gvk],
            }),
        );
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v{MAJOR}.{MINOR}.0")},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// The `OpenAPI` schema name of a kind: the reversed group, the version and the kind
/// (`apps.v1.Deployment`, `com.example.stable.v1.CronTab`).
fn schema_name(r: &ApiResource) -> String {
    let group = if r.ty.group.is_empty() { "core".to_owned() } else { r.ty.group.clone() };
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), r.ty.version, r.ty.kind)
}

/// 64-bit FNV-1a: a content hash for `OpenAPI` URLs (clients cache documents by it).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_documents_describe_the_catalog() {
        let catalog = Catalog::builtin();
        let core = resource_list(&catalog, "", "v1").unwrap();
        let pods =
            core["resources"].as_array().unwrap().iter().find(|r| r["name"] == "pods").unwrap();
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert_eq!(pods["verbs"].as_array().unwrap().len(), 8);
        assert!(core["resources"].as_array().unwrap().iter().any(|r| r["name"] == "pods/status"));
        let groups = api_group_list(&catalog);
        assert!(
            groups["groups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["preferredVersion"]["groupVersion"] == "apps/v1")
        );
        assert!(resource_list(&catalog, "nope", "v1").is_none());
        assert_eq!(api_group(&catalog, "batch").unwrap()["kind"], "APIGroup");
    }

    #[test]
    fn openapi_v3_declares_field_validation_for_patch() {
        let catalog = Catalog::builtin();
        let index = openapi_index(&catalog);
        let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"].as_str().unwrap();
        assert!(url.starts_with("/openapi/v3/apis/apps/v1?hash="), "{url}");
        let doc = openapi_document(&catalog, "apps", "v1").unwrap();
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Deployment");
        assert!(
            patch["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "fieldValidation")
        );
        assert!(doc["components"]["schemas"]["apps.v1.Deployment"].is_object());
    }
}
