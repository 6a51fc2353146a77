//! What a release needs (issue 31), checked on every CI run so that a crate that cannot be
//! packaged, a registry page that does not build or a minimum Rust version that is only claimed
//! fails here, not at `cargo publish`. Part of `cargo xtask ci`; `cargo xtask release-check`
//! runs it alone.
//!
//! - **Packages**: `cargo package` of every crate meant for users (the workspace members whose
//!   `publish` is not `false`), each built from its own tarball as the registry will have it.
//! - **The README's crate**: a crate outside the workspace made of the root README's
//!   `[dependencies]` block and its first Rust example, built against those tarballs through
//!   `[patch.crates-io]`: what a new user copies works with what we would publish.
//! - **`cargo install informer-gen`**: the CLI installed from its unpacked tarball (the crates
//!   it depends on patched to theirs, as the registry would serve them), then run on a CRD of
//!   the corpus.
//! - **docs.rs**: each crate's docs built as docs.rs builds them (`--cfg docsrs`, the features
//!   and targets of its `[package.metadata.docs.rs]`), warnings denied.
//! - **MSRV**: each crate checked with the Rust its `rust-version` names, installed by rustup,
//!   with every feature but `kube` (kube-rs 5 needs a newer compiler; its features say so).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::cargo;

/// Features left out of the MSRV check: they enable kube-rs, whose minimum is higher than ours
/// (documented on the features themselves).
const NEWER_RUST_FEATURES: [&str; 1] = ["kube"];

/// A workspace crate meant for users, as `cargo metadata` describes it.
struct Crate {
    name: String,
    version: String,
    rust_version: Option<String>,
    /// Features the crate has, but `default`.
    features: Vec<String>,
    /// Whether k8s-openapi is a required dependency: such a crate builds only with a
    /// Kubernetes version feature, which a library never enables itself.
    needs_k8s_version: bool,
    /// `[package.metadata.docs.rs]`: features and targets.
    docs_features: Vec<String>,
}

/// Every check of this module, in the order a release would meet them.
pub(crate) fn check() -> Result<(), String> {
    let (crates, target_dir) = published_crates()?;
    let package_dir = target_dir.join("package-check");
    package(&crates, &package_dir)?;
    let tarballs = package_dir.join("package");
    readme_crate(&crates, &target_dir, &tarballs)?;
    install_gen(&crates, &target_dir)?;
    docs_rs(&crates)?;
    msrv(&crates)
}

/// Removes what [`check`] built beside the workspace's own target directory (the packages'
/// verification, the README's crate, the installed informer-gen: 4 GB or so). They make a
/// rerun on the same machine cheaper; `cargo xtask ci` removes them before the tests, which
/// need the room on a CI machine's disk.
pub(crate) fn forget_builds() -> Result<(), String> {
    let (_, target_dir) = published_crates()?;
    for built in [
        "package-check",
        "readme-crate",
        "readme-crate-build",
        "install-check",
        "install-check-build",
        "install-check-out",
    ] {
        remove(&target_dir.join(built))?;
    }
    remove(&unpacked_dir())
}

/// `cargo package` with verification, crate by crate in one invocation (cargo orders them by
/// their dependencies and resolves each against the tarballs packaged before it).
///
/// A library enables no Kubernetes version of k8s-openapi, whose build script then stops; the
/// variable k8s-openapi documents for builds without dev-dependencies names one, the newest.
///
/// Cargo takes a crate of a registry as immutable once it has it: the verification build
/// resolves each crate's workspace dependencies from a local registry of the tarballs just
/// made, extracts them under `$CARGO_HOME/registry/src` only if no copy of that name and
/// version is there, and reuses a build of them whose version matches. Our versions stay
/// `0.1.0` while their code changes, so a machine that ran this check before would verify
/// against the code of that run. Both are forgotten first; the builds go to a target
/// directory of their own (`package_dir`), so that nothing else's is touched.
fn package(crates: &[Crate], package_dir: &Path) -> Result<(), String> {
    forget_extracted(crates)?;
    forget_built(crates, package_dir)?;
    let target = package_dir.display().to_string();
    let mut args = vec!["package", "--target-dir", &target];
    for krate in crates {
        args.extend(["-p", &krate.name]);
    }
    cargo(&args, &[("K8S_OPENAPI_ENABLED_VERSION", &newest_kubernetes())])
}

/// Removes our crates' extracted sources and cached tarballs from every registry cargo keeps
/// under `$CARGO_HOME` (the local registries of earlier verifications among them). A crate of
/// crates.io with one of these names would only be extracted again from its download.
fn forget_extracted(crates: &[Crate]) -> Result<(), String> {
    let home = match std::env::var_os("CARGO_HOME") {
        Some(home) => PathBuf::from(home),
        None => std::env::home_dir().ok_or("neither CARGO_HOME nor HOME is set")?.join(".cargo"),
    };
    for (kind, suffix) in [("src", ""), ("cache", ".crate")] {
        let registries = home.join("registry").join(kind);
        let Ok(entries) = std::fs::read_dir(&registries) else { continue };
        for registry in entries.flatten() {
            for krate in crates {
                let stale =
                    registry.path().join(format!("{}-{}{suffix}", krate.name, krate.version));
                remove(&stale)?;
            }
        }
    }
    Ok(())
}

/// Removes the fingerprints of our crates' builds in `package_dir`, so that the verification
/// compiles each again from its new tarball.
fn forget_built(crates: &[Crate], package_dir: &Path) -> Result<(), String> {
    for profile in ["debug", "release"] {
        let fingerprints = package_dir.join(profile).join(".fingerprint");
        let Ok(entries) = std::fs::read_dir(&fingerprints) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            // `informer-client-1a2b...`: the crate's name, then a hash without dashes.
            let ours = name
                .rsplit_once('-')
                .is_some_and(|(krate, _)| crates.iter().any(|c| c.name == krate));
            if ours {
                remove(&entry.path())?;
            }
        }
    }
    Ok(())
}

/// Removes a file or a directory tree; nothing there is not an error.
fn remove(path: &Path) -> Result<(), String> {
    let removed = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else if path.exists() {
        std::fs::remove_file(path)
    } else {
        return Ok(());
    };
    removed.map_err(|e| format!("removing {}: {e}", path.display()))
}

/// The newest Kubernetes version k8s-openapi offers, as `1.NN`.
fn newest_kubernetes() -> String {
    let newest = crate::K8S_VERSIONS[crate::K8S_VERSIONS.len() - 1];
    newest.trim_start_matches('v').replace('_', ".")
}

/// Builds the root README's first example, with its `[dependencies]`, as a crate of its own
/// against the packaged tarballs (in `tarballs`).
fn readme_crate(crates: &[Crate], target_dir: &Path, tarballs: &Path) -> Result<(), String> {
    let readme = std::fs::read_to_string("README.md").map_err(|e| format!("README.md: {e}"))?;
    let (dependencies, example) = readme_example(&readme)?;
    let dir = target_dir.join("readme-crate");
    let unpacked = unpacked_dir();
    for old in [&dir, &unpacked] {
        remove(old)?;
    }
    std::fs::create_dir_all(dir.join("src")).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::create_dir_all(&unpacked).map_err(|e| format!("{}: {e}", unpacked.display()))?;
    let mut patch = String::from("[patch.crates-io]\n");
    for krate in crates {
        let tarball = tarballs.join(format!("{}-{}.crate", krate.name, krate.version));
        // `-m`: the files get the time they were unpacked, not the tarball's, so that the
        // builds below, which keep their target directories between runs, see them as new.
        run(Command::new("tar").arg("-xzmf").arg(&tarball).arg("-C").arg(&unpacked))?;
        let path = unpacked.join(format!("{}-{}", krate.name, krate.version));
        // A TOML basic string: Rust's debug quoting agrees with it for a path.
        let path = path.display().to_string();
        writeln!(patch, "{} = {{ path = {path:?} }}", krate.name)
            .map_err(|e| format!("the [patch.crates-io] table: {e}"))?;
    }
    let manifest = format!(
        "# The root README's [dependencies] and first example, built by `cargo xtask ci` against\n\
         # the packaged crates (target/package-check/package/*.crate).\n\
         [package]\nname = \"readme-first-hour\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[workspace]\n\n{dependencies}\n{patch}"
    );
    write(&dir.join("Cargo.toml"), &manifest)?;
    write(&dir.join("src/main.rs"), &example)?;
    // The workspace's lock file: the same dependency versions the tests ran with (cargo drops
    // what this crate does not use and adds the tarballs' entries).
    std::fs::copy("Cargo.lock", dir.join("Cargo.lock")).map_err(|e| format!("Cargo.lock: {e}"))?;
    let manifest_path = dir.join("Cargo.toml").display().to_string();
    // A target directory that outlives `dir`, which each run makes anew: the dependencies
    // are built once per machine, and only the tarballs' crates (path sources) again.
    let build = target_dir.join("readme-crate-build").display().to_string();
    cargo(&["build", "--manifest-path", &manifest_path, "--target-dir", &build], &[])
}

/// `cargo install` of informer-gen from its unpacked tarball (which [`readme_crate`] left in
/// [`unpacked_dir`]), then the installed binary on cert-manager's Certificate CRD.
/// A debug build, in a target directory kept between runs: what is checked is that the
/// package installs and runs, not its speed.
fn install_gen(crates: &[Crate], target_dir: &Path) -> Result<(), String> {
    let unpacked = unpacked_dir();
    let root = target_dir.join("install-check");
    let mut args = vec!["install".to_owned(), "--debug".to_owned(), "--force".to_owned()];
    for krate in crates {
        let path = unpacked.join(format!("{}-{}", krate.name, krate.version));
        if krate.name == "informer-gen" {
            args.extend(["--path".to_owned(), path.display().to_string()]);
        } else {
            // A TOML basic string: Rust's debug quoting agrees with it for a path.
            let path = path.display().to_string();
            args.extend([
                "--config".to_owned(),
                format!("patch.crates-io.{}.path={path:?}", krate.name),
            ]);
        }
    }
    args.extend(["--root".to_owned(), root.display().to_string()]);
    // Without it cargo installs from a new temporary directory, building every dependency
    // again on each run.
    let build = target_dir.join("install-check-build").display().to_string();
    args.extend(["--target-dir".to_owned(), build]);
    cargo(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[])?;
    let out = target_dir.join("install-check-out");
    remove(&out)?;
    let binary = root.join("bin").join("informer-gen");
    let crd = "tests/fixtures/crd-corpus/cert-manager-certificate.yaml";
    run(Command::new(&binary).args(["crd", crd, "--out"]).arg(&out))?;
    let module = out.join("mod.rs");
    let written =
        std::fs::read_to_string(&module).map_err(|e| format!("{}: {e}", module.display()))?;
    if written.contains("cert_manager") {
        Ok(())
    } else {
        Err(format!(
            "the installed informer-gen wrote {} without cert-manager's group in it",
            module.display()
        ))
    }
}

/// Where the packaged crates are unpacked: outside this workspace (whose target directory is
/// inside it) and outside the README's crate, either of which would claim them as members.
fn unpacked_dir() -> PathBuf {
    std::env::temp_dir().join("informer-release-check")
}

/// The README's first TOML block with a `[dependencies]` table and the first Rust block after
/// it, its hidden lines (`# `) shown, as rustdoc compiles it.
fn readme_example(readme: &str) -> Result<(String, String), String> {
    let blocks = fenced_blocks(readme);
    let toml = blocks
        .iter()
        .position(|(info, body)| info == "toml" && body.contains("[dependencies]"))
        .ok_or("README.md has no ```toml block with a [dependencies] table")?;
    let rust = blocks[toml + 1..]
        .iter()
        .find(|(info, _)| info.split(',').next() == Some("rust"))
        .ok_or("README.md has no ```rust block after its [dependencies] block")?;
    let example = rust
        .1
        .lines()
        .map(|line| match line {
            "#" => "",
            _ => line.strip_prefix("# ").unwrap_or(line),
        })
        .collect::<Vec<_>>()
        .join("\n");
    Ok((blocks[toml].1.clone(), example + "\n"))
}

/// The fenced code blocks of a Markdown text: each block's info string and its body.
fn fenced_blocks(markdown: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in markdown.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => blocks.extend(open.take()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks
}

/// Each crate's docs as docs.rs builds them: the nightly `doc_cfg` feature under `--cfg docsrs`
/// (allowed on a stable compiler by `RUSTC_BOOTSTRAP`, so that CI needs no nightly), the
/// features its metadata names, warnings denied.
fn docs_rs(crates: &[Crate]) -> Result<(), String> {
    for krate in crates {
        let features = krate.docs_features.join(",");
        let mut args = vec!["doc", "-p", &krate.name, "--no-deps", "--lib"];
        if !features.is_empty() {
            args.extend(["--features", &features]);
        }
        cargo(&args, &[("RUSTC_BOOTSTRAP", "1"), ("RUSTDOCFLAGS", "--cfg docsrs -D warnings")])?;
    }
    Ok(())
}

/// Checks each crate (library and binaries) with the Rust its `rust-version` names.
fn msrv(crates: &[Crate]) -> Result<(), String> {
    for krate in crates {
        let Some(version) = &krate.rust_version else {
            return Err(format!("{} has no rust-version in its Cargo.toml", krate.name));
        };
        // `1.88` means 1.88.0: the oldest compiler the claim admits.
        let toolchain = if version.matches('.').count() == 1 {
            format!("{version}.0")
        } else {
            version.clone()
        };
        install_toolchain(&toolchain)?;
        let mut features: Vec<String> = krate
            .features
            .iter()
            .filter(|feature| !NEWER_RUST_FEATURES.contains(&feature.as_str()))
            .cloned()
            .collect();
        if krate.needs_k8s_version {
            features.push("k8s-openapi/latest".to_owned());
        }
        let mut command = Command::new("rustup");
        command.args(["run", &toolchain, "cargo", "check", "--locked", "-p", &krate.name]);
        command.args(["--lib", "--bins"]);
        if !features.is_empty() {
            command.args(["--features", &features.join(",")]);
        }
        for name in ["CARGO", "RUSTC", "RUSTDOC", "RUSTUP_TOOLCHAIN"] {
            command.env_remove(name);
        }
        crate::without_package_variables(&mut command);
        eprintln!("+ rustup run {toolchain} cargo check -p {} (MSRV)", krate.name);
        run(&mut command)?;
    }
    Ok(())
}

/// Installs a toolchain with rustup's minimal profile unless it is there already.
fn install_toolchain(toolchain: &str) -> Result<(), String> {
    let installed = Command::new("rustup")
        .args(["run", toolchain, "rustc", "--version"])
        .output()
        .is_ok_and(|output| output.status.success());
    if installed {
        return Ok(());
    }
    eprintln!("+ rustup toolchain install {toolchain} --profile minimal");
    run(Command::new("rustup").args(["toolchain", "install", toolchain, "--profile", "minimal"]))
}

/// The crates meant for users, in the workspace's member order, and the target directory.
fn published_crates() -> Result<(Vec<Crate>, PathBuf), String> {
    let printed = crate::cargo_stdout(&["metadata", "--format-version", "1", "--no-deps"])?;
    let metadata: Value = serde_json::from_str(&printed)
        .map_err(|e| format!("cargo metadata printed what is not JSON: {e}"))?;
    let target_dir = metadata["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or("cargo metadata names no target_directory")?;
    let packages = metadata["packages"].as_array().ok_or("cargo metadata lists no packages")?;
    let crates = packages
        .iter()
        // `publish = false` is an empty list of registries.
        .filter(|package| package["publish"].as_array().is_none_or(|to| !to.is_empty()))
        .map(|package| Crate {
            name: package["name"].as_str().unwrap_or_default().to_owned(),
            version: package["version"].as_str().unwrap_or_default().to_owned(),
            rust_version: package["rust_version"].as_str().map(str::to_owned),
            features: package["features"]
                .as_object()
                .into_iter()
                .flat_map(|features| features.keys())
                .filter(|name| *name != "default")
                .cloned()
                .collect(),
            needs_k8s_version: package["dependencies"].as_array().into_iter().flatten().any(
                |dependency| {
                    dependency["name"] == "k8s-openapi"
                        && dependency["kind"].is_null()
                        && dependency["optional"] == false
                },
            ),
            docs_features: package["metadata"]["docs"]["rs"]["features"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        })
        .collect();
    Ok((crates, target_dir))
}

fn write(path: &Path, contents: &str) -> Result<(), String> {
    std::fs::write(path, contents).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs a command to its end, failing with the command line when it fails.
fn run(command: &mut Command) -> Result<(), String> {
    let line = format!("{command:?}");
    let status = command.status().map_err(|e| format!("could not run {line}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{line} failed: {status}")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_example_is_its_dependencies_and_the_first_rust_block_after_them() {
        let readme = "intro\n```sh\ncargo test\n```\n```toml\n[dependencies]\nfoo = \"1\"\n```\n\
                      ```rust,no_run\n# use foo::Bar;\n#\nfn main() {}\n```\n```rust\nlater\n```\n";
        let (dependencies, example) = readme_example(readme).unwrap();
        assert_eq!(dependencies, "[dependencies]\nfoo = \"1\"\n");
        assert_eq!(example, "use foo::Bar;\n\nfn main() {}\n");
    }

    #[test]
    fn a_readme_without_dependencies_is_named() {
        let error = readme_example("```rust\nfn main() {}\n```\n").unwrap_err();
        assert!(error.contains("[dependencies]"), "{error}");
    }
}
