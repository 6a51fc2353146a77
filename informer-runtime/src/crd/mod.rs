//! `CustomResourceDefinition` manifests of `#[derive(Informer)]` types: what `Foo::try_crd()`
//! fails with, and [`merge`], one CRD with every version of a kind from the structs of its
//! versions (kube-rs's `merge_crds`).
//!
//! **Who it is for.** Authors of `#[derive(Informer)]` kinds, to install their CRDs (from a
//! program, a test or an `xtask`) and to serve several versions of one kind. Generated code and
//! programs that only watch never call it.
//!
//! A derived struct describes one version of its kind: `Foo::crd()` is a CRD with that version
//! alone. A kind served in several versions has a struct per version, all with the same group,
//! kind and names, and exactly one of them the storage version (`storage` is the default, so
//! the others say `storage = false`); [`merge`] puts their versions into one CRD, checking that
//! they agree:
//!
//! ```
//! mod v1 {
//!     use informer_derive::Informer;
//!     use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//!     use serde::{Deserialize, Serialize};
//!
//!     /// A widget, as v1 has it: still served, no longer stored.
//!     #[derive(Clone, Debug, Deserialize, Informer)]
//!     #[informer(group = "example.com", version = "v1", storage = false, deprecated)]
//!     pub struct Widget {
//!         pub metadata: ObjectMeta,
//!         pub spec: WidgetSpec,
//!     }
//!
//!     #[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
//!     pub struct WidgetSpec {
//!         pub size: i32,
//!     }
//! }
//!
//! mod v2 {
//!     # use informer_derive::Informer;
//!     # use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//!     # use serde::{Deserialize, Serialize};
//!     /// A widget, as v2 has it: the storage version.
//!     #[derive(Clone, Debug, Deserialize, Informer)]
//!     #[informer(group = "example.com", version = "v2")]
//!     pub struct Widget {
//!         pub metadata: ObjectMeta,
//!         pub spec: WidgetSpec,
//!     }
//!
//!     #[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
//!     pub struct WidgetSpec {
//!         pub size: i32,
//!         pub color: Option<String>,
//!     }
//! }
//!
//! let crd = informer_runtime::crd::merge([v1::Widget::crd(), v2::Widget::crd()])?;
//! let versions: Vec<(&str, bool, bool)> =
//!     crd.spec.versions.iter().map(|v| (v.name.as_str(), v.served, v.storage)).collect();
//! assert_eq!(versions, [("v1", true, false), ("v2", true, true)]);
//!
//! // Two storage versions are refused, naming them.
//! let error = informer_runtime::crd::merge([v2::Widget::crd(), v2::Widget::crd()]).unwrap_err();
//! assert!(error.to_string().contains("version v2 is given twice"), "{error}");
//! # Ok::<(), informer_runtime::crd::Error>(())
//! ```
//!
//! The API server stores objects in the storage version and converts between versions with the
//! CRD's conversion strategy, `None` unless set: only `apiVersion` changes, so the versions'
//! schemas must accept each other's objects (or set `spec.conversion` to a webhook on the
//! merged CRD). Informers of each version are typed by that version's struct.

mod merge;
mod structural;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

pub use merge::merge;

/// Why a CRD could not be made: from `Foo::try_crd()` ([`Recursive`](Error::Recursive),
/// [`Manifest`](Error::Manifest)) or [`merge`] (the others). Each message names the type or the
/// versions concerned and what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A type in the schema contains itself: schemars can only refer to it, and a
    /// `CustomResourceDefinition`'s schema cannot hold references.
    #[error(
        "the schema of {kind} cannot be written out: `{type_name}` contains itself ({}) at \
         `{path}`, and a CustomResourceDefinition's schema cannot refer to a type; break the \
         cycle, hold the nested part as `serde_json::Value` (its schema keeps any fields), or \
         give the field that recurses #[schemars(schema_with = \"...\")] returning \
         {{\"type\": \"object\", \"x-kubernetes-preserve-unknown-fields\": true}}",
        cycle.join(" → ")
    )]
    Recursive {
        /// The kind whose schema it is.
        kind: String,
        /// The recursive type.
        type_name: String,
        /// The types through which it contains itself, from it back to it (`Node → Node`,
        /// `A → B → A`).
        cycle: Vec<String>,
        /// Where in the object the recursion is (`.spec.children[*]`).
        path: String,
    },
    /// k8s-openapi could not read the manifest: a bug in `informer-derive` or schemars.
    #[error(
        "the CustomResourceDefinition of {kind} does not decode as k8s-openapi's type (a bug in \
         informer-derive or schemars; please report it): {source}"
    )]
    Manifest {
        /// The kind whose CRD it is.
        kind: String,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// [`merge`] was given no CRD.
    #[error("merging CustomResourceDefinitions needs at least one: pass every version's `crd()`")]
    Empty,
    /// Two CRDs to merge disagree on what a CRD has once for all its versions.
    #[error(transparent)]
    Mismatch(Box<Mismatch>),
    /// A version is in two of the CRDs to merge.
    #[error(
        "version {version} is given twice in the CustomResourceDefinitions to merge into {crd}: \
         pass each version's `crd()` once, and give each version's struct its own \
         #[informer(version = ...)]"
    )]
    DuplicateVersion {
        /// The merged CRD's name.
        crd: String,
        /// The version given twice.
        version: String,
    },
    /// Not exactly one version is the storage version.
    #[error(
        "{crd} needs exactly one storage version, and the CustomResourceDefinitions to merge \
         have {}: {}",
        if storage.is_empty() { "none".to_owned() } else { storage.join(", ") },
        if storage.is_empty() {
            format!("remove `storage = false` from the #[informer(...)] of one of {}", versions.join(", "))
        } else {
            "keep `storage` on one and write `storage = false` in the #[informer(...)] of the others".to_owned()
        }
    )]
    StorageVersion {
        /// The merged CRD's name.
        crd: String,
        /// The versions marked as storage version.
        storage: Vec<String>,
        /// Every version.
        versions: Vec<String>,
    },
}

/// What [`Error::Mismatch`] says: which field two of the CRDs to [`merge`] disagree on.
#[derive(Debug, thiserror::Error)]
#[error(
    "the CustomResourceDefinitions to merge into {crd} differ in {field}: version \
     {first_version} has {first}, version {version} has {value}; give every version's struct \
     the same {attribute}"
)]
#[non_exhaustive]
pub struct Mismatch {
    /// The merged CRD's name (the first one's).
    pub crd: String,
    /// The field that differs (`spec.group`, `spec.names.kind`, `metadata.labels["team"]`, ...).
    pub field: String,
    /// What to make the same (`#[informer(group = ...)]`, ...).
    pub attribute: &'static str,
    /// The first CRD's versions.
    pub first_version: String,
    /// The first CRD's value, as JSON.
    pub first: String,
    /// The versions of the CRD that differs.
    pub version: String,
    /// Its value, as JSON.
    pub value: String,
}

/// The result of this module's functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What `#[derive(Informer)]`'s `try_crd()` calls: the `openAPIV3Schema` of `kind` from
/// schemars' schema of the struct's fields (less `metadata`), made structural, with
/// `apiVersion`, `kind` and `metadata` added. Not a public API.
///
/// # Errors
///
/// [`Error::Recursive`] if a type in the schema is recursive.
#[doc(hidden)]
pub fn __derived_schema(kind: &str, mut schema: Value) -> Result<Value> {
    let definitions = structural::take_definitions(&mut schema);
    structural::rewrite(&mut schema);
    if let Some(found) = structural::find_recursion(&schema, &definitions) {
        return Err(Error::Recursive {
            kind: kind.to_owned(),
            type_name: found.type_name,
            cycle: found.cycle,
            path: found.path,
        });
    }
    if let Value::Object(root) = &mut schema {
        root.remove("title");
        root.insert("type".into(), json!("object"));
        let properties =
            root.entry("properties").or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Value::Object(properties) = properties {
            properties.insert("apiVersion".into(), json!({ "type": "string" }));
            properties.insert("kind".into(), json!({ "type": "string" }));
            properties.insert("metadata".into(), json!({ "type": "object" }));
        }
    }
    Ok(schema)
}

/// What `#[derive(Informer)]`'s `try_crd()` calls: the manifest of `kind` as k8s-openapi's type.
/// Not a public API.
///
/// # Errors
///
/// [`Error::Manifest`] if k8s-openapi cannot read it.
#[doc(hidden)]
pub fn __manifest(kind: &str, manifest: Value) -> Result<CustomResourceDefinition> {
    serde_json::from_value(manifest)
        .map_err(|source| Error::Manifest { kind: kind.to_owned(), source })
}
