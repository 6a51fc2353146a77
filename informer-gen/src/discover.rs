//! The built-in resources, found by reading k8s-openapi's source.
//!
//! Every file under `src/v1_XX/` with `impl crate::ListableResource for T` is a resource; its
//! group, version, kind, plural and scope come from `impl crate::Resource for T` in the same file,
//! its Rust path from the file's module path (k8s-openapi re-exports the selected version at its
//! root). Subresources are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::spec::{NEWEST_MINOR, OLDEST_MINOR, ResourceSpec};

/// Every listable built-in resource of the k8s-openapi crate whose root directory (the one with
/// `Cargo.toml`) is `crate_dir`, sorted by Rust path.
///
/// # Errors
///
/// A directory that cannot be read, a resource impl that cannot be parsed, or a set of version
/// directories other than `v1_{OLDEST_MINOR}` ..= `v1_{NEWEST_MINOR}`.
pub fn builtin_resources(crate_dir: &Path) -> Result<Vec<ResourceSpec>, String> {
    let src = crate_dir.join("src");
    let mut minors = BTreeSet::new();
    for entry in fs::read_dir(&src).map_err(|e| format!("{}: {e}", src.display()))? {
        let entry = entry.map_err(|e| format!("{}: {e}", src.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(minor) = name.strip_prefix("v1_").and_then(|m| m.parse::<u32>().ok()) {
            minors.insert(minor);
        }
    }
    let expected: BTreeSet<u32> = (OLDEST_MINOR..=NEWEST_MINOR).collect();
    if minors != expected {
        return Err(format!(
            "k8s-openapi at {} offers Kubernetes 1.{minors:?}; informer-gen expects \
             1.{OLDEST_MINOR}..=1.{NEWEST_MINOR}: update OLDEST_MINOR / NEWEST_MINOR",
            crate_dir.display()
        ));
    }
    let mut found: BTreeMap<String, (ResourceSpec, BTreeSet<u32>)> = BTreeMap::new();
    for &minor in &minors {
        let root = src.join(format!("v1_{minor}"));
        let mut files = Vec::new();
        rust_files(&root, &mut files)?;
        files.sort();
        for file in files {
            let text = fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            for spec in resources_in(&root, &file, &text)? {
                found
                    .entry(spec.rust_path.clone())
                    .or_insert_with(|| (spec, BTreeSet::new()))
                    .1
                    .insert(minor);
            }
        }
    }
    Ok(found
        .into_values()
        .map(|(mut spec, in_minors)| {
            if in_minors != expected {
                let first = in_minors.first().copied().unwrap_or(OLDEST_MINOR);
                let last = in_minors.last().copied().unwrap_or(NEWEST_MINOR);
                spec.versions = Some((first, last));
            }
            spec
        })
        .collect())
}

/// The catalog of k8s-openapi's types that informer-gen maps CRD schemas to (checked in as
/// `informer-gen/src/k8s_types/catalog.tsv`, which `cargo xtask codegen` writes with this), for
/// the k8s-openapi package whose root directory (the one with `Cargo.toml`) is `crate_dir`:
/// every type of every Kubernetes version it offers, read from its source.
///
/// # Errors
///
/// A file that cannot be read or lexed, or a schema, impl or type the catalog cannot describe
/// (a k8s-openapi release that generates different code: extend the reader).
pub fn k8s_type_catalog(crate_dir: &Path) -> Result<String, String> {
    crate::k8s_types::extract::catalog(crate_dir)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    for entry in fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The listable resources defined in one file of k8s-openapi's `src/v1_XX/` (`root`).
fn resources_in(root: &Path, file: &Path, text: &str) -> Result<Vec<ResourceSpec>, String> {
    let mut specs = Vec::new();
    for line in text.lines() {
        let Some(ty) = line
            .trim()
            .strip_prefix("impl crate::ListableResource for ")
            .and_then(|rest| rest.strip_suffix('{'))
            .map(str::trim)
        else {
            continue;
        };
        let err = |what: &str| format!("{}: {ty}: {what}", file.display());
        let header = format!("impl crate::Resource for {ty} {{");
        let start = text.find(&header).ok_or_else(|| err("no impl crate::Resource"))?;
        let body = &text[start + header.len()..];
        let body = &body[..body.find('}').ok_or_else(|| err("unterminated impl"))?];
        let constant = |name: &str| -> Result<String, String> {
            let prefix = format!("const {name}: &'static str = \"");
            body.lines()
                .find_map(|l| l.trim().strip_prefix(prefix.as_str()))
                .and_then(|rest| rest.strip_suffix("\";"))
                .map(str::to_owned)
                .ok_or_else(|| err(&format!("no const {name}")))
        };
        let scope = body
            .lines()
            .find_map(|l| l.trim().strip_prefix("type Scope = "))
            .ok_or_else(|| err("no type Scope"))?;
        let namespaced = match scope.trim_end_matches(';') {
            "crate::NamespaceResourceScope" => true,
            "crate::ClusterResourceScope" => false,
            _ => continue,
        };
        let module = file
            .strip_prefix(root)
            .map_err(|_| err("outside the version directory"))?
            .parent()
            .into_iter()
            .flat_map(Path::components)
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("::");
        specs.push(ResourceSpec {
            group: constant("GROUP")?,
            version: constant("VERSION")?,
            kind: constant("KIND")?,
            plural: constant("URL_PATH_SEGMENT")?,
            rust_path: format!("::k8s_openapi::{module}::{ty}"),
            namespaced,
            versions: None,
        });
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_resource_file() {
        let text = r#"
pub struct Pod {}
impl crate::Resource for Pod {
    const API_VERSION: &'static str = "v1";
    const GROUP: &'static str = "";
    const KIND: &'static str = "Pod";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "pods";
    type Scope = crate::NamespaceResourceScope;
}

impl crate::ListableResource for Pod {
    const LIST_KIND: &'static str = "PodList";
}
"#;
        let root = Path::new("/k/src/v1_37");
        let specs = resources_in(root, &root.join("api/core/v1/pod.rs"), text).unwrap();
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].rust_path, "::k8s_openapi::api::core::v1::Pod");
        assert_eq!((specs[0].group.as_str(), specs[0].plural.as_str()), ("", "pods"));
        assert!(specs[0].namespaced);
    }
}
