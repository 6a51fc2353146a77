//! Realistic pods for the benchmark server, from real templates.
//!
//! The templates are the pods recorded from a kind cluster (`kind-v1-36-pod-*.json`: 7 to 10 KB
//! of compact JSON each, with `managedFields`, owner references and status) and kubernetes/api's
//! every-field pod (`k8s-api-allfields-core.v1.Pod.json`, 32 KB), taken in turn, so one pod in
//! eight is the large one. Each copy gets its own name, namespace, `app` label, node and IP.

use std::path::Path;

use serde_json::{Value, json};

/// How many namespaces the pods are spread over: `ns-000` .. `ns-049`.
pub const NAMESPACES: usize = 50;
/// How many values the `app` label takes: `app-00` .. `app-19`.
pub const APPS: usize = 20;
/// How many nodes the pods run on.
pub const NODES: usize = 500;

/// The files, under the objects directory, that pods are made from.
const TEMPLATE_GLOB_PREFIX: &str = "kind-v1-36-pod-";
const ALL_FIELDS: &str = "k8s-api-allfields-core.v1.Pod.json";

/// The pod templates.
#[derive(Debug)]
pub struct Templates {
    pods: Vec<(String, Value)>,
}

impl Templates {
    /// Loads the templates from `dir` (`informer-runtime/tests/fixtures`, or a directory
    /// of the same layout).
    ///
    /// # Errors
    ///
    /// The directory or a template cannot be read or parsed, or holds no templates.
    pub fn load(dir: &Path) -> Result<Self, String> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut files: Vec<String> = entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| {
                let json = Path::new(name).extension().is_some_and(|e| e == "json");
                name.starts_with(TEMPLATE_GLOB_PREFIX) && json || name == ALL_FIELDS
            })
            .collect();
        files.sort();
        let mut pods = Vec::new();
        for file in files {
            let path = dir.join(&file);
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut pod: Value =
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            let metadata = pod
                .get_mut("metadata")
                .and_then(Value::as_object_mut)
                .ok_or_else(|| format!("{}: a pod without metadata", path.display()))?;
            // The server assigns these; a deletion in progress would make the pod read-only.
            for field in [
                "resourceVersion",
                "uid",
                "selfLink",
                "generateName",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "finalizers",
            ] {
                metadata.remove(field);
            }
            let stem = file
                .trim_start_matches(TEMPLATE_GLOB_PREFIX)
                .trim_end_matches(".json")
                .replace("k8s-api-allfields-core.v1.", "allfields-")
                .to_ascii_lowercase();
            pods.push((stem, pod));
        }
        if pods.is_empty() {
            return Err(format!(
                "{}: no pod templates ({TEMPLATE_GLOB_PREFIX}*.json)",
                dir.display()
            ));
        }
        Ok(Self { pods })
    }

    /// How many templates there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// Whether there are none (never, once loaded).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// Pod number `i`: the `i mod len`-th template in namespace `ns-(i mod 50)`, named
    /// `<template>-<i>`, with `app=app-(i mod 20)`, on node `node-(i mod 500)`.
    #[must_use]
    pub fn pod(&self, i: usize) -> Value {
        let (stem, template) = &self.pods[i % self.pods.len()];
        let mut pod = template.clone();
        pod["metadata"]["name"] = json!(format!("{stem}-{i:06}"));
        pod["metadata"]["namespace"] = json!(namespace(i));
        let labels = &mut pod["metadata"]["labels"];
        if !labels.is_object() {
            *labels = json!({});
        }
        labels["app"] = json!(format!("app-{:02}", i % APPS));
        pod["spec"]["nodeName"] = json!(format!("node-{:03}", i % NODES));
        let ip = format!("10.{}.{}.{}", (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff);
        if pod["status"].is_object() {
            pod["status"]["podIP"] = json!(ip);
            pod["status"]["podIPs"] = json!([{"ip": ip}]);
        }
        pod
    }
}

/// The namespace of pod number `i`.
#[must_use]
pub fn namespace(i: usize) -> String {
    format!("ns-{:03}", i % NAMESPACES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_are_spread_and_named_after_their_template() {
        // The templates are part of the repository, so their absence is a broken checkout.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../informer-runtime/tests/fixtures");
        let templates = Templates::load(&dir)
            .unwrap_or_else(|e| panic!("the pod templates in {}: {e}", dir.display()));
        assert_eq!(templates.len(), 8, "7 kind pods and the every-field pod");
        let pod = templates.pod(57);
        assert_eq!(pod["metadata"]["namespace"], "ns-007");
        assert_eq!(pod["metadata"]["labels"]["app"], "app-17");
        assert_eq!(pod["spec"]["nodeName"], "node-057");
        assert!(pod["metadata"]["name"].as_str().unwrap().ends_with("-000057"));
        assert!(pod["metadata"]["managedFields"].is_array());
        let decoded: k8s_openapi::api::core::v1::Pod = serde_json::from_value(pod).unwrap();
        assert_eq!(decoded.metadata.namespace.as_deref(), Some("ns-007"));
    }
}
