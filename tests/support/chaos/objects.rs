//! What the chaos scenario churns: pods, config maps and `CronTab` custom resources, in a few
//! namespaces, under a fixed pool of names so that deleted objects come back under the same name.

use informer_runtime::GroupVersionResource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Where the `CronTab` CRD lives.
pub const CRONTAB_GROUP: &str = "stable.example.com";

/// A `CronTab` of the CRD [`embedded_apiserver::testing::crontab_crd`] installs: any spec.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CronTab {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Whatever the object holds (`cronSpec` and `replicas` here).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub spec: Value,
}

informer_runtime::impl_resource!(
    CronTab,
    group = "stable.example.com",
    version = "v1",
    kind = "CronTab",
    plural = "crontabs",
    namespaced
);

/// Namespaces the objects are spread over.
pub(crate) const NAMESPACES: usize = 4;
/// Names per namespace and type: the pool that creates draw from, so re-creates are common.
pub(crate) const NAMES: usize = 40;

/// One churned resource type: how to address it and what its objects look like.
pub(crate) struct Kind {
    /// The plural, as reports name it.
    pub(crate) name: &'static str,
    pub(crate) gvr: GroupVersionResource,
    /// The body of object `name` in `namespace` at `generation` (which every update changes).
    body: fn(namespace: &str, name: &str, generation: u64) -> Value,
}

impl Kind {
    /// The body of the object at `slot` (namespace, name index) at `generation`.
    pub(crate) fn object(&self, slot: (usize, usize), generation: u64) -> Value {
        let (namespace, name) = self.address(slot);
        (self.body)(&namespace, &name, generation)
    }

    /// The namespace and name of `slot`.
    pub(crate) fn address(&self, (namespace, name): (usize, usize)) -> (String, String) {
        let prefix = self.name.trim_end_matches('s');
        (format!("chaos-{namespace}"), format!("{prefix}-{name}"))
    }
}

/// The churned types; the driver and the checks index this table the same way.
pub(crate) fn kinds() -> [Kind; 3] {
    [
        Kind { name: "pods", gvr: GroupVersionResource::new("", "v1", "pods"), body: pod },
        Kind {
            name: "configmaps",
            gvr: GroupVersionResource::new("", "v1", "configmaps"),
            body: config_map,
        },
        Kind {
            name: "crontabs",
            gvr: GroupVersionResource::new(CRONTAB_GROUP, "v1", "crontabs"),
            body: crontab,
        },
    ]
}

fn pod(namespace: &str, name: &str, generation: u64) -> Value {
    let mut pod = embedded_apiserver::testing::pod(namespace, name, "chaos");
    pod["metadata"]["labels"]["generation"] = generation.to_string().into();
    pod
}

fn config_map(namespace: &str, name: &str, generation: u64) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"generation": generation.to_string()}
    })
}

fn crontab(namespace: &str, name: &str, generation: u64) -> Value {
    json!({
        "apiVersion": format!("{CRONTAB_GROUP}/v1"), "kind": "CronTab",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"cronSpec": "*/5 * * * *", "replicas": generation}
    })
}
