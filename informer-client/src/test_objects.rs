//! Objects of this crate's unit tests and fuzz targets.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The custom resource of the recorded `foobar` watch and list fixtures. Its resource
/// implementation is written directly, as for a kube-rs `#[derive(CustomResource)]` root, so
/// the decoders are exercised without k8s-openapi's traits.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
pub(crate) struct FooBar {
    pub(crate) metadata: ObjectMeta,
    #[serde(default)]
    pub(crate) spec: serde_json::Map<String, serde_json::Value>,
}

informer_runtime::impl_resource!(
    FooBar,
    group = "k8s-openapi-tests-custom-resource-definition.com",
    version = "v1",
    kind = "FooBar",
    plural = "foobars",
    namespaced
);
