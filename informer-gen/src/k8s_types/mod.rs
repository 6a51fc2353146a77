//! k8s-openapi's own types inside CRDs: a schema node that is one of Kubernetes' types (a
//! `Probe`, an `Affinity`, a list of `Condition`s) becomes that type
//! (`::k8s_openapi::api::core::v1::Probe`) instead of a struct of its own.
//!
//! Most large CRDs embed Kubernetes' types, whose schemas controller-gen wrote from the same Go
//! types k8s-openapi mirrors. Using k8s-openapi's types lets users pass them to code written for
//! Kubernetes (informer-controller's condition helpers, for one), and generates and compiles
//! less. [`Generator::k8s_types`](crate::Generator::k8s_types) turns it off.
//!
//! # Where the types come from
//!
//! From k8s-openapi's source, through a catalog checked into this crate (`catalog.tsv`, written
//! by `cargo xtask codegen` with [`extract`]): for every type and every Kubernetes version
//! k8s-openapi 0.29 offers (1.33 to 1.37), the JSON schema of its `schemars::JsonSchema` impl
//! (field names, types and formats, `required`, the types it refers to), the list types of its
//! `DeepMerge` impl (k8s-openapi's rendering of `x-kubernetes-list-type`), whether it derives
//! `Default`, and whether it is a resource. That source is the truth here because it is the code
//! that decodes and encodes: where k8s-openapi departs from the Kubernetes API (it makes
//! `LocalObjectReference.name` required, and writes it back as `""` when it was absent), the
//! catalog says what k8s-openapi does. The alternatives were worse: schemars at generation time
//! would make informer-gen (a build dependency) depend on k8s-openapi, whose build fails
//! without a version feature a library must not pick, and would know one version only; the
//! Kubernetes `OpenAPI` documents have list types and map keys k8s-openapi lacks, but are not
//! what decodes, and are not in the crates Cargo fetches.
//!
//! # Which version
//!
//! A match must hold for the Kubernetes version the generated code is compiled against: a field
//! added in 1.36 is missing from the type in 1.35. [`Builder`](crate::Builder) reads the version
//! the consumer's k8s-openapi was built for from the `DEP_K8S_OPENAPI_*_VERSION` variable its
//! build script gets (k8s-openapi publishes it for that purpose);
//! [`Generator::k8s_version`](crate::Generator::k8s_version) (`--k8s-version`) names one. Without
//! either, a match must hold in every version of the catalog.
//!
//! # The rules
//!
//! A node maps only where decoding any object valid for the CRD into the type, and encoding it
//! back, gives the same JSON: [`Matcher::check`](matcher::Matcher::check) lists the rules, and
//! [`Matcher::identify`](matcher::Matcher::identify) how one type is chosen among those that
//! fit. Nested nodes of a matched node are the types of the matched type's fields; a node that
//! does not match is generated as before, and its nested nodes are matched on their own. Every
//! match, and every near miss with its reason, is listed in
//! [`Output::type_mappings`](crate::Output::type_mappings).

pub(crate) mod catalog;
pub(crate) mod extract;
pub(crate) mod matcher;

use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;

use catalog::{Catalog, Minors};
use matcher::Matcher;

use crate::error::{Error, Result};

/// The catalog text, written by `cargo xtask codegen`.
const CATALOG: &str = include_str!("catalog.tsv");

/// A schema node that is one of k8s-openapi's types, or nearly is: an entry of
/// [`Output::type_mappings`](crate::Output::type_mappings).
///
/// Displayed as `file: path -> ::k8s_openapi::api::core::v1::Probe` for a mapped node, and as
/// `file: path: not ::k8s_openapi::api::core::v1::Container: reason` for a near miss, which was
/// generated as a struct of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeMapping {
    /// The CRD file.
    pub file: PathBuf,
    /// The index of the document in a multi-document YAML file (0 for the first).
    pub document: usize,
    /// Where in the document
    /// (`spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.probe`).
    pub path: String,
    /// The k8s-openapi type, by absolute path (`::k8s_openapi::api::core::v1::Probe`).
    pub rust_type: String,
    /// `None` where the node is that type; otherwise why it is not (the first rule it breaks,
    /// with the path below the node where that is nested: `.resources.limits.*: a quantity:
    /// ...`).
    pub miss: Option<String>,
}

impl fmt::Display for TypeMapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let TypeMapping { file, document, path, rust_type, miss } = self;
        let suffix =
            if *document == 0 { String::new() } else { format!(" (document {})", document + 1) };
        match miss {
            None => write!(f, "{}{suffix}: {path} -> {rust_type}", file.display()),
            Some(reason) => {
                write!(f, "{}{suffix}: {path}: not {rust_type}: {reason}", file.display())
            }
        }
    }
}

/// The catalog, read once.
fn catalog() -> Result<&'static Catalog> {
    static PARSED: OnceLock<std::result::Result<Catalog, String>> = OnceLock::new();
    PARSED.get_or_init(|| Catalog::parse(CATALOG)).as_ref().map_err(|message| {
        Error::Config(format!(
            "informer-gen's catalog of k8s-openapi's types does not read (a bug in \
             informer-gen; turn the mapping off with Generator::k8s_types(false) or \
             --no-k8s-types): {message}"
        ))
    })
}

/// A matcher for Kubernetes `1.minor`, or every version of the catalog.
pub(crate) fn matcher(minor: Option<u32>) -> Result<Matcher<'static>> {
    let catalog = catalog()?;
    let minors = match minor {
        None => catalog.minors,
        Some(minor) if catalog.minors.contains(minor) => Minors::one(minor),
        Some(minor) => {
            return Err(Error::Config(format!(
                "Kubernetes 1.{minor} is not among the versions informer-gen knows k8s-openapi's \
                 types of ({}): name one of those, or none to match in all of them",
                catalog.minors.iter().map(|m| format!("1.{m}")).collect::<Vec<_>>().join(", ")
            )));
        }
    };
    Ok(Matcher::new(catalog, minors))
}

#[cfg(test)]
mod tests;
