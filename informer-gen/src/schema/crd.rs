//! A `CustomResourceDefinition` (`apiextensions.k8s.io/v1`), as far as code generation needs it.

use serde::Deserialize;

use super::openapi::Schema;

/// The `apiVersion` of the CRDs the generator accepts. (Here, with the CRD's types, and not in
/// the loader, so that the v1beta1 conversion the loader calls can name it too.)
pub(crate) const API_VERSION: &str = "apiextensions.k8s.io/v1";

/// A `CustomResourceDefinition` document.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceDefinition {
    /// `apiVersion`; only `apiextensions.k8s.io/v1` is accepted.
    pub api_version: String,
    /// `kind`; must be `CustomResourceDefinition`.
    pub kind: String,
    /// `spec`.
    pub spec: CrdSpec,
}

/// `spec` of a `CustomResourceDefinition`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdSpec {
    /// API group of the resource (`cert-manager.io`).
    pub group: String,
    /// Names of the resource.
    pub names: CrdNames,
    /// `Namespaced` or `Cluster`.
    pub scope: String,
    /// The versions served, each with its schema.
    pub versions: Vec<CrdVersion>,
    /// `preserveUnknownFields`: pruning is off, every field of every object is kept. Only CRDs
    /// created as `apiextensions.k8s.io/v1beta1` can still have it; their schemas need not be
    /// structural.
    #[serde(default)]
    pub preserve_unknown_fields: bool,
}

/// `spec.names`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdNames {
    /// Kind (`Certificate`).
    pub kind: String,
    /// Plural resource name, as in URLs (`certificates`).
    pub plural: String,
    /// Kind of lists (`CertificateList`); defaults to the kind + `List`.
    #[serde(default)]
    pub list_kind: Option<String>,
    /// Singular name (`certificate`).
    #[serde(default)]
    pub singular: Option<String>,
    /// Short names (`cert`).
    #[serde(default)]
    pub short_names: Vec<String>,
}

/// One entry of `spec.versions`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdVersion {
    /// Version name (`v1`, `v1beta1`).
    pub name: String,
    /// Whether the version is served.
    pub served: bool,
    /// Whether objects are stored in this version (exactly one is).
    pub storage: bool,
    /// Whether the version is deprecated.
    #[serde(default)]
    pub deprecated: bool,
    /// The warning returned to clients of a deprecated version.
    #[serde(default)]
    pub deprecation_warning: Option<String>,
    /// The version's schema; required by `apiextensions.k8s.io/v1`.
    #[serde(default)]
    pub schema: Option<CrdValidation>,
    /// Subresources (`status`, `scale`).
    #[serde(default)]
    pub subresources: Option<CrdSubresources>,
}

/// `spec.versions[*].schema`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdValidation {
    /// The structural schema of the version's objects.
    #[serde(rename = "openAPIV3Schema", default)]
    pub open_api_v3_schema: Option<Schema>,
}

/// `spec.versions[*].subresources`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdSubresources {
    /// Present when the `status` subresource is enabled.
    #[serde(default)]
    pub status: Option<serde_json::Value>,
    /// Present when the `scale` subresource is enabled.
    #[serde(default)]
    pub scale: Option<serde_json::Value>,
}

impl CustomResourceDefinition {
    /// Whether objects live in namespaces.
    #[must_use]
    pub fn namespaced(&self) -> bool {
        self.spec.scope != "Cluster"
    }
}
