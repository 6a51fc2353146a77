//! The generators under comparison: kopium (from `PATH` or installed into the work directory)
//! and this workspace's `informer-gen`, each run on one CRD file at a time.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::inputs::Input;
use super::process::{cargo_install, cargo_output, failure_line, workspace_root};

/// The Kubernetes version the scratch crates build k8s-openapi for.
const K8S_FEATURE: &str = "v1_35";

/// A generator under comparison.
pub(super) trait Tool {
    /// Its name, as shown in the table.
    fn name(&self) -> &'static str;
    /// Its directory under the work directory, and the stem of its runner's package name.
    fn slug(&self) -> &'static str;
    /// Its version and how it is invoked, for the notes under the table.
    fn describe(&self) -> String;
    /// Generates the Rust code for one CRD file.
    fn generate(&self, input: &Input) -> Result<Generated, String>;
    /// The `[dependencies]` of a crate holding its output (besides the harness's own).
    fn dependencies(&self) -> String;
}

/// One tool's output for one CRD file.
pub(super) struct Generated {
    /// The Rust code, as the tool printed it.
    pub(super) code: String,
    /// The root type of each version it generated.
    pub(super) roots: Vec<Root>,
    /// The versions it was to generate but for which no root type was found.
    pub(super) missing: Vec<String>,
}

/// The type objects of one CRD version deserialise into.
pub(super) struct Root {
    /// The CRD version (`v1beta1`).
    pub(super) version: String,
    /// Its path in the generated code (`Certificate`, `cert_manager_io::v1::Certificate`).
    pub(super) path: String,
}

/// kopium, from `PATH` or installed into the work directory.
pub(super) struct Kopium {
    bin: PathBuf,
    version: String,
}

impl Kopium {
    /// kopium from `PATH`, else from `<work>/kopium/bin`, installing it there if needed.
    pub(super) fn ensure(work: &Path) -> Result<Kopium, String> {
        if let Ok(version) = tool_version(Path::new("kopium")) {
            return Ok(Kopium { bin: PathBuf::from("kopium"), version });
        }
        let root = work.join("kopium");
        let bin = root.join("bin/kopium");
        if !bin.is_file() {
            cargo_install(&root)?;
        }
        let version = tool_version(&bin)?;
        Ok(Kopium { bin, version })
    }
}

/// The first line of `bin --version`.
fn tool_version(bin: &Path) -> Result<String, String> {
    let output = Command::new(bin)
        .arg("--version")
        .output()
        .map_err(|e| format!("could not run {}: {e}", bin.display()))?;
    if !output.status.success() {
        return Err(format!("{} --version failed: {}", bin.display(), output.status));
    }
    Ok(String::from_utf8_lossy(&output.stdout).lines().next().unwrap_or_default().trim().to_owned())
}

impl Tool for Kopium {
    fn name(&self) -> &'static str {
        "kopium"
    }

    fn slug(&self) -> &'static str {
        "kopium"
    }

    fn describe(&self) -> String {
        format!(
            "{}, run as `kopium -A --api-version <storage version> -f FILE` (`-A`, as its README \
             recommends: doc comments, `#[derive(JsonSchema)]` and a derived schema). kopium \
             generates one version per run; the storage version is the one compared. For a \
             schema without `spec` it emits the nested types but no root type (its \
             `#[derive(CustomResource)]` is on the spec), so nothing can round-trip. Its crates \
             depend on `kube` 5 (`derive` only), `k8s-openapi` 0.29 (`{K8S_FEATURE}`, \
             `schemars`), `schemars` 1, `serde` and `serde_json`.",
            self.version
        )
    }

    fn generate(&self, input: &Input) -> Result<Generated, String> {
        let mut command = Command::new(&self.bin);
        command.arg("-A");
        if let Some(version) = input.storage_version() {
            command.args(["--api-version", version]);
        }
        command.arg("-f").arg(&input.path);
        let output = command.output().map_err(|e| format!("could not run kopium: {e}"))?;
        if !output.status.success() {
            return Err(failure_line(&output));
        }
        let code = String::from_utf8(output.stdout).map_err(|e| format!("output: {e}"))?;
        // Without a `spec` in the schema kopium emits the nested types but no root type.
        let (roots, missing) = match kube_root(&code) {
            Some(root) => (vec![root], Vec::new()),
            None => (Vec::new(), vec![input.storage_version().unwrap_or("its version").to_owned()]),
        };
        Ok(Generated { code, roots, missing })
    }

    fn dependencies(&self) -> String {
        format!(
            "kube = {{ version = \"5\", default-features = false, features = [\"derive\"] }}\n\
             k8s-openapi = {{ version = \"0.29\", features = [\"{K8S_FEATURE}\", \"schemars\"] }}\n\
             schemars = \"1\"\n"
        )
    }
}

/// The root type kopium's `#[derive(CustomResource)]` generates, from its
/// `#[kube(group = ..., version = ..., kind = ..., root = ...)]` attribute.
fn kube_root(code: &str) -> Option<Root> {
    let attribute = code.lines().map(str::trim).find(|l| l.starts_with("#[kube(group"))?;
    let value = |key: &str| {
        let start = attribute.find(&format!("{key} = \""))? + key.len() + 4;
        let len = attribute[start..].find('"')?;
        Some(attribute[start..start + len].to_owned())
    };
    // `root = "OciRepository"` names the struct when kopium's name differs from the kind.
    let path = value("root").or_else(|| value("kind"))?;
    Some(Root { version: value("version")?, path })
}

/// informer-gen's command line, built from this workspace, with Kubernetes' own types mapped to
/// k8s-openapi's (its default) or not (`--no-k8s-types`): the report's after and before.
pub(super) struct InformerGen {
    bin: Result<PathBuf, String>,
    k8s_types: bool,
}

impl InformerGen {
    /// Builds `informer-gen` (feature `cli`) in the workspace's own target directory.
    pub(super) fn build(root: &Path) -> InformerGen {
        let args =
            ["build", "--package", "informer-gen", "--features", "cli", "--message-format=json"];
        let bin = cargo_output(&args, root).and_then(|output| {
            let executable = String::from_utf8_lossy(&output.stdout)
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .filter(|message| message["target"]["name"] == "informer-gen")
                .find_map(|message| message["executable"].as_str().map(PathBuf::from));
            match executable {
                Some(bin) if output.status.success() => Ok(bin),
                _ => Err(format!("its CLI does not build: {}", failure_line(&output))),
            }
        });
        InformerGen { bin, k8s_types: true }
    }

    /// The same command line with `--no-k8s-types`: every schema node its own generated type.
    pub(super) fn without_k8s_types(&self) -> InformerGen {
        InformerGen { bin: self.bin.clone(), k8s_types: false }
    }
}

impl Tool for InformerGen {
    fn name(&self) -> &'static str {
        if self.k8s_types { "informer-gen" } else { "informer-gen --no-k8s-types" }
    }

    fn slug(&self) -> &'static str {
        if self.k8s_types { "informer-gen" } else { "informer-gen-no-k8s-types" }
    }

    fn describe(&self) -> String {
        let state = match &self.bin {
            Ok(_) => "this workspace's `informer-gen`",
            Err(_) => "this workspace's `informer-gen` (not available)",
        };
        let (run, mapping) = if self.k8s_types {
            (
                "informer-gen crd FILE",
                "Schemas that are Kubernetes' own types become k8s-openapi's types (the \
                 default).",
            )
        } else {
            (
                "informer-gen crd --no-k8s-types FILE",
                "Every schema node becomes a generated type, as before the mapping existed.",
            )
        };
        format!(
            "{state}, run as `{run}` (its root types from `informer-gen crd --list FILE`). \
             {mapping} It generates every served version of a CRD, and every one is compared. \
             Its crates depend on `informer-runtime` (this workspace's), `k8s-openapi` 0.29 \
             (`{K8S_FEATURE}`), `serde` and `serde_json`."
        )
    }

    fn generate(&self, input: &Input) -> Result<Generated, String> {
        let bin = self.bin.as_ref().map_err(Clone::clone)?;
        let run = |list: bool| {
            let mut command = Command::new(bin);
            command.arg("crd");
            if list {
                command.arg("--list");
            }
            if !self.k8s_types {
                command.arg("--no-k8s-types");
            }
            let output = command
                .arg(&input.path)
                .output()
                .map_err(|e| format!("could not run informer-gen: {e}"))?;
            if !output.status.success() {
                return Err(failure_line(&output));
            }
            String::from_utf8(output.stdout).map_err(|e| format!("output: {e}"))
        };
        let code = run(false)?;
        // `--list`: group, version, kind, plural, scope, Rust path, file; one line per root type.
        let roots: Vec<Root> = run(true)?
            .lines()
            .filter_map(|line| {
                let fields: Vec<&str> = line.split('\t').collect();
                let (version, path) = (fields.get(1)?, fields.get(5)?);
                Some(Root { version: (*version).to_owned(), path: (*path).to_owned() })
            })
            .collect();
        // It generates the served versions: any without a root type is missing.
        let crd = input.crd.as_ref().map_err(Clone::clone)?;
        let missing = crd
            .spec
            .versions
            .iter()
            .filter(|v| v.served && !roots.iter().any(|r| r.version == v.name))
            .map(|v| v.name.clone())
            .collect();
        Ok(Generated { code, roots, missing })
    }

    fn dependencies(&self) -> String {
        let runtime = workspace_root().join("informer-runtime");
        format!(
            "informer-runtime = {{ path = {:?} }}\n\
             k8s-openapi = {{ version = \"0.29\", features = [\"{K8S_FEATURE}\"] }}\n",
            runtime.display().to_string()
        )
    }
}
