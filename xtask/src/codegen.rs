//! `cargo xtask codegen [--check]`: the generated grouped accessors of the built-in resources
//! (`informer-runtime/src/informers/generated.rs`), from the k8s-openapi the workspace uses.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the generated accessors live, relative to the workspace root.
const GENERATED: &str = "informer-runtime/src/informers/generated.rs";

pub fn run(args: &[String]) -> Result<(), String> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => return Err("usage: cargo xtask codegen [--check]".to_owned()),
    };
    let root = workspace_root();
    let specs = informer_gen::discover::builtin_resources(&k8s_openapi_dir()?)?;
    let code = informer_gen::emit::accessors(&specs, "crate")?;
    let path = root.join(GENERATED);
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current == code {
        println!("{GENERATED} is up to date ({} resources)", specs.len());
        return Ok(());
    }
    if check {
        return Err(format!(
            "{GENERATED} is out of date with informer-gen and k8s-openapi: run `cargo xtask codegen` and commit the result"
        ));
    }
    std::fs::write(&path, code).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("wrote {GENERATED} ({} resources)", specs.len());
    Ok(())
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
