//! `cargo xtask codegen [--check]`: the generated code checked into the workspace.
//!
//! - The grouped accessors of the built-in resources
//!   (`informer-runtime/src/informers/generated.rs`), from the k8s-openapi the workspace uses.
//! - The catalog of k8s-openapi's types that informer-gen maps CRD schemas to
//!   (`informer-gen/src/k8s_types/catalog.tsv`), from the source of the same k8s-openapi: every
//!   Kubernetes version it offers.
//! - The round trip between the two front ends: the manifest of the example derived resource
//!   (`examples/derive/crds/databases.example.com.json`, what `Database::crd()` returns) and
//!   informer-gen's code for that manifest (`examples/derive/tests/generated/databases.rs`),
//!   which `examples/derive/tests/round_trip.rs` compares with the derived type.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the generated accessors live, relative to the workspace root.
const GENERATED: &str = "informer-runtime/src/informers/generated.rs";
/// informer-gen's catalog of k8s-openapi's types.
const K8S_TYPES: &str = "informer-gen/src/k8s_types/catalog.tsv";
/// The example derived resource's manifest.
const EXAMPLE_MANIFEST: &str = "examples/derive/crds/databases.example.com.json";
/// informer-gen's code for [`EXAMPLE_MANIFEST`].
const EXAMPLE_GENERATED: &str = "examples/derive/tests/generated/databases.rs";

pub fn run(args: &[String]) -> Result<(), String> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => return Err("usage: cargo xtask codegen [--check]".to_owned()),
    };
    let k8s_openapi = k8s_openapi_dir()?;
    let specs = informer_gen::discover::builtin_resources(&k8s_openapi)?;
    let accessors = informer_gen::emit::accessors(&specs, "crate")?;
    let summary = format!("{} resources", specs.len());
    let mut stale: Vec<String> =
        update(GENERATED, &accessors, &summary, check)?.into_iter().collect();
    let catalog = informer_gen::discover::k8s_type_catalog(&k8s_openapi)?;
    let summary = format!("{} types", catalog.lines().filter(|l| l.starts_with("T\t")).count());
    stale.extend(update(K8S_TYPES, &catalog, &summary, check)?);

    // Generated in order: the manifest from the derived type, then the code from the manifest.
    let manifest = example_manifest()?;
    stale.extend(update(EXAMPLE_MANIFEST, &manifest, "Database::crd()", check)?);
    let code = generate_from_manifest(&manifest)?;
    stale.extend(update(EXAMPLE_GENERATED, &code, "informer-gen", check)?);

    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "out of date: {}; run `cargo xtask codegen` and commit the result",
            stale.join(", ")
        ))
    }
}

/// Writes `contents` to `path` (relative to the workspace root) if it differs; with `check`,
/// only reports it. Returns the path if it was out of date under `check`.
fn update(path: &str, contents: &str, what: &str, check: bool) -> Result<Option<String>, String> {
    let full = workspace_root().join(path);
    let current = std::fs::read_to_string(&full).unwrap_or_default();
    if current == contents {
        println!("{path} is up to date ({what})");
        return Ok(None);
    }
    if check {
        eprintln!("{path} is out of date ({what})");
        return Ok(Some(path.to_owned()));
    }
    if let Some(dir) = full.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(&full, contents).map_err(|e| format!("{}: {e}", full.display()))?;
    println!("wrote {path} ({what})");
    Ok(None)
}

/// `Database::crd()` as pretty JSON, printed by the example crate's `manifest` example (the
/// derive's code runs in the crate that derives, so it is asked rather than linked here).
fn example_manifest() -> Result<String, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["run", "--quiet", "--package", "example-derive", "--example", "manifest"])
        .current_dir(workspace_root())
        .output()
        .map_err(|e| format!("could not run cargo run --example manifest: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo run -p example-derive --example manifest failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    String::from_utf8(output.stdout).map_err(|e| format!("the manifest is not UTF-8: {e}"))
}

/// informer-gen's code for the manifest, as one file (what a build script would `include!`).
fn generate_from_manifest(manifest: &str) -> Result<String, String> {
    let crds = informer_gen::schema::parse_str(Path::new(EXAMPLE_MANIFEST), manifest)
        .map_err(|e| e.to_string())?;
    let output = informer_gen::Generator::new().generate(&crds).map_err(|e| e.to_string())?;
    Ok(output.to_file_string())
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map_or_else(PathBuf::new, Path::to_path_buf)
}

/// The directory of the k8s-openapi package the workspace builds with, from `cargo metadata`.
fn k8s_openapi_dir() -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(workspace_root())
        .output()
        .map_err(|e| format!("could not run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("cargo metadata output: {e}"))?;
    metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "k8s-openapi")
        .and_then(|p| p["manifest_path"].as_str())
        .and_then(|m| Path::new(m).parent())
        .map(Path::to_path_buf)
        .ok_or_else(|| "cargo metadata lists no k8s-openapi package".to_owned())
}
