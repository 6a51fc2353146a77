//! A custom resource type written by hand, as any user can before `#[derive(Informer)]` lands:
//! a serde struct plus k8s-openapi's `Resource` and `Metadata` traits make it a
//! `informer_runtime::Resource`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// `widgets.demo.informers.dev/v1`, namespaced.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Widget {
    #[serde(default = "api_version")]
    pub(crate) api_version: String,
    #[serde(default = "kind")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
    #[serde(default)]
    pub(crate) spec: WidgetSpec,
}

/// What a widget is.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct WidgetSpec {
    pub(crate) color: String,
    pub(crate) size: i64,
}

fn api_version() -> String {
    <Widget as k8s_openapi::Resource>::API_VERSION.to_owned()
}

fn kind() -> String {
    <Widget as k8s_openapi::Resource>::KIND.to_owned()
}

impl Widget {
    pub(crate) fn new(namespace: &str, name: &str, color: &str, size: i64) -> Self {
        Self {
            api_version: api_version(),
            kind: kind(),
            metadata: ObjectMeta {
                namespace: Some(namespace.to_owned()),
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            spec: WidgetSpec { color: color.to_owned(), size },
        }
    }
}

impl k8s_openapi::Resource for Widget {
    const API_VERSION: &'static str = "demo.informers.dev/v1";
    const GROUP: &'static str = "demo.informers.dev";
    const KIND: &'static str = "Widget";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "widgets";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for Widget {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The CRD that makes the server serve widgets.
pub(crate) fn crd() -> Result<CustomResourceDefinition, String> {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": "widgets.demo.informers.dev" },
        "spec": {
            "group": "demo.informers.dev",
            "scope": "Namespaced",
            "names": { "plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList" },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": { "spec": { "type": "object", "properties": {
                        "color": { "type": "string" }, "size": { "type": "integer" }
                    }}}
                }}
            }]
        }
    }))
    .map_err(|e| format!("the demo CRD does not decode: {e}"))
}
