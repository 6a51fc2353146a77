//! Processes and files: running cargo and the tools, and writing the work directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The first line of a failed command's stderr worth showing (`error: ...`, `Error: ...`).
pub(super) fn failure_line(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines
        .iter()
        .find(|l| l.starts_with("error") || l.starts_with("Error"))
        .or_else(|| lines.last())
        .map_or_else(|| output.status.to_string(), |l| (*l).to_owned())
}

/// `cargo install kopium --locked --root ROOT`, output inherited.
pub(super) fn cargo_install(root: &Path) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let root = root.display().to_string();
    let args = ["install", "kopium", "--locked", "--root", &root];
    eprintln!("+ cargo {}", args.join(" "));
    // kopium's k8s-openapi picks its own Kubernetes version; the variable set for the
    // workspace's builds may name one it does not know.
    let status = Command::new(&cargo)
        .args(args)
        .env_remove("K8S_OPENAPI_ENABLED_VERSION")
        .status()
        .map_err(|e| format!("could not run {cargo}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo {} failed: {status}", args.join(" ")))
    }
}

/// Runs cargo in `dir`, capturing stdout (JSON messages) and stderr.
pub(super) fn cargo_output(args: &[&str], dir: &Path) -> Result<Output, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    Command::new(&cargo)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run {cargo}: {e}"))
}

/// Runs cargo on a scratch workspace with its own target directory. Its crates pick their
/// Kubernetes version with a k8s-openapi feature, which the variable that overrides it (set for
/// the workspace's own builds) must not contradict.
pub(super) fn scratch_cargo(args: &[&str], dir: &Path, target: &Path) -> Result<Output, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    Command::new(&cargo)
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("RUSTFLAGS")
        .env_remove("K8S_OPENAPI_ENABLED_VERSION")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("could not run {cargo}: {e}"))
}

/// `name` with every character that is not ASCII alphanumeric replaced by `separator`.
pub(super) fn sanitize(name: &str, separator: char) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { separator })
        .collect()
}

pub(super) fn create_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

pub(super) fn remove_dir(dir: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", dir.display())),
    }
}

pub(super) fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes `text` unless the file already holds it, so that cargo rebuilds only what changed.
pub(super) fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).is_ok_and(|current| current == text) {
        return Ok(());
    }
    write(path, text)
}

/// The workspace root: the parent of the xtask crate.
pub(super) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map_or_else(PathBuf::new, Path::to_path_buf)
}
