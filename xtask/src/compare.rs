//! `cargo xtask compare-kopium [--crds DIR] [--out FILE] [--work DIR] [--only NAME]`: informer-gen
//! against kopium on a corpus of CRD files, written as a Markdown table.
//!
//! For each tool and each CRD file it records whether the tool *generates* code (exits 0), whether
//! that code *compiles* (and with how many warnings), and whether it *round-trips* sample objects
//! (deserialise into the root type, serialise back, compare as JSON numbers-aware).
//!
//! Layout of the work directory (default `target/compare-kopium/`):
//!
//! - `kopium/bin/kopium`: kopium, installed there with `cargo install` unless it is on `PATH`;
//! - `samples/crd-<file stem>/<version>/<nnn>-<name>.json`: the sample objects, from
//!   `informer_gen::sample`;
//! - `<tool>/`: a scratch Cargo workspace per tool: one crate per CRD file
//!   (`crates/crd-<file stem>/src/generated.rs` is the tool's output, untouched; `lib.rs` is the
//!   harness from `xtask/compare/crd_lib.rs`), built with `--keep-going` so that one file failing
//!   does not hide the others, and a runner binary (`xtask/compare/runner_main.rs`) over the
//!   crates that compiled; `<tool>/out/` holds what the runner serialised back;
//!   `<tool>/build.jsonl` holds cargo's messages;
//! - `target/`: the `CARGO_TARGET_DIR` of both scratch workspaces.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use informer_gen::sample;
use informer_gen::schema::crd::CustomResourceDefinition;
use serde_json::Value;

const USAGE: &str =
    "usage: cargo xtask compare-kopium [--crds DIR] [--out FILE] [--work DIR] [--only NAME]";

/// The corpus the issue names, relative to the workspace root: copied into the repository so that
/// a plain clone can run the comparison.
const DEFAULT_CRDS: &str = "tests/fixtures/crd-corpus";
/// Where the table goes, relative to the workspace root.
const DEFAULT_OUT: &str = "informer-gen/KOPIUM.md";
/// The scratch directory, relative to the workspace root.
const DEFAULT_WORK: &str = "target/compare-kopium";

/// The harness around one generated file.
const CRD_LIB: &str = include_str!("../compare/crd_lib.rs");
/// The round-trip runner.
const RUNNER_MAIN: &str = include_str!("../compare/runner_main.rs");

/// The Kubernetes version the scratch crates build k8s-openapi for.
const K8S_FEATURE: &str = "v1_35";

/// Longest failure reason kept in a table cell.
const REASON_CHARS: usize = 90;

struct Options {
    crds: PathBuf,
    out: PathBuf,
    work: PathBuf,
    only: Vec<String>,
}

pub fn run(args: &[String]) -> Result<(), String> {
    let root = workspace_root();
    let options = parse_args(args, &root)?;
    let started = Instant::now();
    std::fs::create_dir_all(&options.work)
        .map_err(|e| format!("{}: {e}", options.work.display()))?;
    let work =
        options.work.canonicalize().map_err(|e| format!("{}: {e}", options.work.display()))?;

    let inputs = read_inputs(&options.crds, &options.only)?;
    eprintln!("compare-kopium: {} CRD files from {}", inputs.len(), options.crds.display());
    write_samples(&inputs, &work.join("samples"))?;

    let kopium = Kopium::ensure(&work)?;
    let informer_gen = InformerGen::build(&root);
    let tools: [&dyn Tool; 2] = [&kopium, &informer_gen];
    let mut columns = Vec::new();
    for tool in tools {
        let tool_started = Instant::now();
        let rows = evaluate(tool, &inputs, &work, &root)?;
        eprintln!(
            "compare-kopium: {}: done in {:.0} s",
            tool.name(),
            tool_started.elapsed().as_secs_f64()
        );
        columns.push((tool, rows));
    }

    let report = Report {
        inputs: &inputs,
        columns: &columns,
        crds: &options.crds,
        root: &root,
        seconds: started.elapsed().as_secs_f64(),
    };
    let markdown = report.markdown(args);
    if let Some(parent) = options.out.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(&options.out, markdown)
        .map_err(|e| format!("{}: {e}", options.out.display()))?;
    eprintln!(
        "compare-kopium: wrote {} in {:.0} s",
        options.out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn parse_args(args: &[String], root: &Path) -> Result<Options, String> {
    let mut options = Options {
        crds: root.join(DEFAULT_CRDS),
        out: root.join(DEFAULT_OUT),
        work: root.join(DEFAULT_WORK),
        only: Vec::new(),
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| USAGE.to_owned());
        match flag.as_str() {
            "--crds" => options.crds = PathBuf::from(value?),
            "--out" => options.out = PathBuf::from(value?),
            "--work" => options.work = PathBuf::from(value?),
            "--only" => options.only.push(value?.clone()),
            _ => return Err(USAGE.to_owned()),
        }
    }
    Ok(options)
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map_or_else(PathBuf::new, Path::to_path_buf)
}

// ---------------------------------------------------------------------------------------------
// Inputs and samples

/// One CRD file of the corpus.
struct Input {
    /// The file.
    path: PathBuf,
    /// Its file name, as shown in the table.
    file: String,
    /// A Cargo package name for the crate that holds each tool's output for this file.
    package: String,
    /// The CRD, or why informer-gen could not read it.
    crd: Result<CustomResourceDefinition, String>,
    /// Sample objects, by version.
    samples: BTreeMap<String, Vec<SampleFile>>,
}

/// One sample object, as written to the samples directory.
struct SampleFile {
    /// What the sample exercises, from `informer_gen::sample`.
    name: String,
    /// Its file name without `.json`.
    stem: String,
    /// The object.
    object: Value,
}

fn read_inputs(dir: &Path, only: &[String]) -> Result<Vec<Input>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let is_crd = path.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json");
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        if is_crd && (only.is_empty() || only.iter().any(|o| file.contains(o.as_str()))) {
            paths.push(path);
        }
    }
    paths.sort();
    if paths.is_empty() {
        return Err(format!("no CRD files (*.yaml, *.yml, *.json) in {}", dir.display()));
    }
    Ok(paths.into_iter().map(Input::read).collect())
}

impl Input {
    fn read(path: PathBuf) -> Input {
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let stem = path.file_stem().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let package = format!("crd-{}", sanitize(&stem, '-'));
        let crd = load_crd(&path);
        let samples = match &crd {
            Ok(crd) => crd
                .spec
                .versions
                .iter()
                .map(|v| (v.name.clone(), sample_files(crd, &v.name)))
                .collect(),
            Err(_) => BTreeMap::new(),
        };
        Input { path, file, package, crd, samples }
    }

    /// The version objects are stored in, if the CRD could be read.
    fn storage_version(&self) -> Option<&str> {
        let crd = self.crd.as_ref().ok()?;
        crd.spec.versions.iter().find(|v| v.storage).map(|v| v.name.as_str())
    }
}

/// The one CRD in `path`, read by informer-gen's loader.
fn load_crd(path: &Path) -> Result<CustomResourceDefinition, String> {
    let mut loaded = informer_gen::schema::load(&[path]).map_err(|e| e.to_string())?;
    match loaded.len() {
        1 => Ok(loaded.remove(0).crd),
        n => Err(format!("{n} CRDs in the file, expected one")),
    }
}

/// The samples of one version, named for files.
fn sample_files(crd: &CustomResourceDefinition, version: &str) -> Vec<SampleFile> {
    sample::samples(crd, version)
        .into_iter()
        .enumerate()
        .map(|(i, sample)| {
            let stem = format!("{i:03}-{}", sanitize(&sample.name, '-'));
            SampleFile { name: sample.name, stem, object: sample.object }
        })
        .collect()
}

fn write_samples(inputs: &[Input], dir: &Path) -> Result<(), String> {
    remove_dir(dir)?;
    for input in inputs {
        for (version, samples) in &input.samples {
            let version_dir = dir.join(&input.package).join(version);
            create_dir(&version_dir)?;
            for sample in samples {
                let path = version_dir.join(format!("{}.json", sample.stem));
                let json = serde_json::to_string_pretty(&sample.object)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                write(&path, &json)?;
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Tools

/// A generator under comparison.
trait Tool {
    /// Its name, as shown in the table; also its directory under the work directory.
    fn name(&self) -> &'static str;
    /// Its version and how it is invoked, for the notes under the table.
    fn describe(&self) -> String;
    /// Generates the Rust code for one CRD file.
    fn generate(&self, input: &Input) -> Result<Generated, String>;
    /// The `[dependencies]` of a crate holding its output (besides the harness's own).
    fn dependencies(&self) -> String;
}

/// One tool's output for one CRD file.
struct Generated {
    /// The Rust code, as the tool printed it.
    code: String,
    /// The root type of each version it generated.
    roots: Vec<Root>,
    /// The versions it was to generate but for which no root type was found.
    missing: Vec<String>,
}

/// The type objects of one CRD version deserialise into.
struct Root {
    /// The CRD version (`v1beta1`).
    version: String,
    /// Its path in the generated code (`Certificate`, `cert_manager_io::v1::Certificate`).
    path: String,
}

/// kopium, from `PATH` or installed into the work directory.
struct Kopium {
    bin: PathBuf,
    version: String,
}

impl Kopium {
    /// kopium from `PATH`, else from `<work>/kopium/bin`, installing it there if needed.
    fn ensure(work: &Path) -> Result<Kopium, String> {
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

/// informer-gen's command line, built from this workspace.
enum InformerGen {
    Built { bin: PathBuf },
    Unavailable { reason: String },
}

impl InformerGen {
    /// Builds `informer-gen` (feature `cli`) in the workspace's own target directory.
    fn build(root: &Path) -> InformerGen {
        let args =
            ["build", "--package", "informer-gen", "--features", "cli", "--message-format=json"];
        let output = match cargo_output(&args, root) {
            Ok(output) => output,
            Err(reason) => return InformerGen::Unavailable { reason },
        };
        let executable = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|message| message["target"]["name"] == "informer-gen")
            .find_map(|message| message["executable"].as_str().map(PathBuf::from));
        match executable {
            Some(bin) if output.status.success() => InformerGen::Built { bin },
            _ => InformerGen::Unavailable {
                reason: format!("its CLI does not build: {}", failure_line(&output)),
            },
        }
    }
}

impl Tool for InformerGen {
    fn name(&self) -> &'static str {
        "informer-gen"
    }

    fn describe(&self) -> String {
        let state = match self {
            InformerGen::Built { .. } => "this workspace's `informer-gen`",
            InformerGen::Unavailable { .. } => "this workspace's `informer-gen` (not available)",
        };
        format!(
            "{state}, run as `informer-gen crd FILE` (its root types from \
             `informer-gen crd --list FILE`); it generates every served version of a CRD, and \
             every one is compared. Its crates depend on `informer-runtime` (this \
             workspace's), `k8s-openapi` 0.29 (`{K8S_FEATURE}`), `serde` and `serde_json`."
        )
    }

    fn generate(&self, input: &Input) -> Result<Generated, String> {
        let bin = match self {
            InformerGen::Built { bin } => bin,
            InformerGen::Unavailable { reason } => return Err(reason.clone()),
        };
        let run = |list: bool| {
            let mut command = Command::new(bin);
            command.arg("crd");
            if list {
                command.arg("--list");
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

// ---------------------------------------------------------------------------------------------
// Evaluation

/// How one step went for one tool and one CRD file.
enum Outcome {
    /// It worked; the detail (warnings, samples) may be empty.
    Pass(String),
    /// It did not, and why.
    Fail(String),
    /// An earlier step failed, or there was nothing to check.
    NotRun(String),
}

/// One tool's results for one CRD file.
struct ToolRow {
    generates: Outcome,
    compiles: Outcome,
    /// rustc's warnings, if it compiled.
    warnings: usize,
    roundtrips: Outcome,
}

fn evaluate(
    tool: &dyn Tool,
    inputs: &[Input],
    work: &Path,
    root: &Path,
) -> Result<Vec<ToolRow>, String> {
    let dir = work.join(tool.name());
    let crates_dir = dir.join("crates");
    create_dir(&crates_dir)?;

    // Generate, into one crate per CRD file.
    let mut generated = Vec::new();
    for input in inputs {
        let result = tool.generate(input);
        if let Ok(generated) = &result {
            write_crate(&crates_dir.join(&input.package), input, tool, generated)?;
        }
        generated.push(result);
    }
    let packages: Vec<&str> = inputs
        .iter()
        .zip(&generated)
        .filter(|(_, g)| g.is_ok())
        .map(|(input, _)| input.package.as_str())
        .collect();
    remove_stale_crates(&crates_dir, &packages)?;

    // Compile every crate, then a runner over those that compiled.
    let runner = format!("{}-roundtrip", tool.name());
    write_workspace(&dir, &packages, &runner, root)?;
    let mut builds = build_crates(&dir, work, &packages, &runner)?;
    let compiled: Vec<&str> =
        packages.iter().copied().filter(|p| builds.get(*p).is_some_and(Result::is_ok)).collect();
    write_runner(&dir, &runner, &compiled)?;
    let runner_bin =
        if compiled.is_empty() { None } else { Some(build_runner(&dir, work, &runner)?) };

    let out = dir.join("out");
    remove_dir(&out)?;
    let mut rows = Vec::new();
    for (input, generated) in inputs.iter().zip(generated) {
        let build = builds.remove(&input.package).unwrap_or_else(|| Err("not built".to_owned()));
        let row = match generated {
            Err(why) => ToolRow {
                generates: Outcome::Fail(why),
                compiles: Outcome::NotRun(String::new()),
                warnings: 0,
                roundtrips: Outcome::NotRun(String::new()),
            },
            Ok(generated) => {
                let run = |bin: &Path| roundtrip(bin, input, &generated, work, &out);
                ToolRow {
                    generates: Outcome::Pass(generated.summary()),
                    compiles: match &build {
                        Ok(0) => Outcome::Pass(String::new()),
                        Ok(warnings) => Outcome::Pass(plural(*warnings, "warning")),
                        Err(why) => Outcome::Fail(why.clone()),
                    },
                    warnings: build.as_ref().map_or(0, |w| *w),
                    roundtrips: match (&build, runner_bin.as_deref()) {
                        (Ok(_), Some(bin)) => run(bin),
                        (Ok(_), None) => Outcome::Fail("no runner".to_owned()),
                        (Err(_), _) => Outcome::NotRun(String::new()),
                    },
                }
            }
        };
        // The table shortens reasons; the log keeps them whole.
        for (step, outcome) in
            [("gen", &row.generates), ("build", &row.compiles), ("rt", &row.roundtrips)]
        {
            if let Outcome::Fail(why) = outcome {
                eprintln!("  {} {step} ✗ {}: {why}", tool.name(), input.file);
            }
        }
        rows.push(row);
    }
    Ok(rows)
}

impl Generated {
    /// The versions generated, and those without a root type: `v1, v1beta1 (no root type for v2)`.
    fn summary(&self) -> String {
        let versions: Vec<&str> = self.roots.iter().map(|r| r.version.as_str()).collect();
        let mut summary = versions.join(", ");
        if !self.missing.is_empty() {
            let _ = write!(summary, " (no root type for {})", self.missing.join(", "));
        }
        summary.trim_start().to_owned()
    }
}

fn write_crate(
    dir: &Path,
    input: &Input,
    tool: &dyn Tool,
    generated: &Generated,
) -> Result<(), String> {
    let manifest = format!(
        "[package]\nname = \"{}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\
         description = \"{}'s output for {}\"\n\n[dependencies]\n{}{}",
        input.package,
        tool.name(),
        input.file,
        tool.dependencies(),
        HARNESS_DEPENDENCIES
    );
    let versions: Vec<String> =
        generated.roots.iter().map(|r| format!("{:?}", r.version)).collect();
    let mut arms = String::new();
    for root in &generated.roots {
        let (version, path) = (&root.version, &root.path);
        let _ = writeln!(arms, "        {version:?} => roundtrip_as::<generated::{path}>(json),");
    }
    let lib = CRD_LIB.replace("/*VERSIONS*/", &versions.join(", ")).replace("/*ARMS*/\n", &arms);
    create_dir(&dir.join("src"))?;
    write_if_changed(&dir.join("Cargo.toml"), &manifest)?;
    write_if_changed(&dir.join("src/lib.rs"), &lib)?;
    write_if_changed(&dir.join("src/generated.rs"), &generated.code)
}

/// What the harness itself needs, in every crate.
const HARNESS_DEPENDENCIES: &str = "serde = { version = \"1\", features = [\"derive\"] }\n\
     serde_json = \"1\"\nserde_path_to_error = \"0.1\"\n";

fn remove_stale_crates(dir: &Path, packages: &[&str]) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let name = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        if !packages.contains(&name.as_str()) {
            remove_dir(&path)?;
        }
    }
    Ok(())
}

fn write_workspace(dir: &Path, packages: &[&str], runner: &str, root: &Path) -> Result<(), String> {
    let members: Vec<String> = packages.iter().map(|p| format!("\"crates/{p}\"")).collect();
    let manifest = format!(
        "# Written by `cargo xtask compare-kopium`.\n[workspace]\nresolver = \"3\"\n\
         members = [\"{runner}\", {}]\n\n[profile.dev]\ndebug = false\nincremental = false\n",
        members.join(", ")
    );
    write_if_changed(&dir.join("Cargo.toml"), &manifest)?;
    // Start from the project's lock file: the same versions of shared dependencies, fewer
    // downloads; cargo adds what is missing.
    let lock = dir.join("Cargo.lock");
    if !lock.exists() {
        std::fs::copy(root.join("Cargo.lock"), &lock)
            .map_err(|e| format!("{}: {e}", lock.display()))?;
    }
    write_runner(dir, runner, &[])
}

fn write_runner(dir: &Path, runner: &str, packages: &[&str]) -> Result<(), String> {
    let mut dependencies = String::new();
    let mut crates = String::new();
    for package in packages {
        let lib = package.replace('-', "_");
        let _ = writeln!(dependencies, "{package} = {{ path = \"../crates/{package}\" }}");
        let _ = writeln!(crates, "    ({package:?}, {lib}::VERSIONS, {lib}::roundtrip),");
    }
    let manifest = format!(
        "[package]\nname = \"{runner}\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[dependencies]\n{dependencies}"
    );
    create_dir(&dir.join(runner).join("src"))?;
    write_if_changed(&dir.join(runner).join("Cargo.toml"), &manifest)?;
    write_if_changed(
        &dir.join(runner).join("src/main.rs"),
        &RUNNER_MAIN.replace("/*CRATES*/\n", &crates),
    )
}

/// Builds every generated crate with `--keep-going`: for each package, its warning count or why
/// it did not compile.
fn build_crates(
    dir: &Path,
    work: &Path,
    packages: &[&str],
    runner: &str,
) -> Result<BTreeMap<String, Result<usize, String>>, String> {
    let mut results = BTreeMap::new();
    if packages.is_empty() {
        return Ok(results);
    }
    let target = work.join("target");
    let args =
        ["build", "--workspace", "--exclude", runner, "--keep-going", "--message-format=json"];
    eprintln!("  + cargo {} (in {})", args.join(" "), dir.display());
    let output = scratch_cargo(&args, dir, &target)?;
    write(&dir.join("build.jsonl"), &String::from_utf8_lossy(&output.stdout))?;

    // Messages by package name (the last segment of the manifest path's directory).
    let mut errors: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let mut warnings: BTreeMap<String, usize> = BTreeMap::new();
    let mut built: Vec<String> = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<Value>(line) else { continue };
        let Some(package) = package_of(&message) else { continue };
        if !packages.contains(&package.as_str()) {
            continue;
        }
        match message["reason"].as_str() {
            Some("compiler-artifact") => built.push(package),
            Some("compiler-message") => match diagnostic(&message["message"]) {
                Some(Diagnostic::Error(text)) => {
                    let entry = errors.entry(package).or_insert((0, text));
                    entry.0 += 1;
                }
                Some(Diagnostic::Warning) => *warnings.entry(package).or_default() += 1,
                None => {}
            },
            _ => {}
        }
    }
    for package in packages {
        let result = if let Some((count, first)) = errors.remove(*package) {
            Err(if count == 1 { first } else { format!("{first} (+{} more)", count - 1) })
        } else if built.iter().any(|b| b == package) {
            Ok(warnings.get(*package).copied().unwrap_or_default())
        } else if output.status.success() {
            Ok(0)
        } else {
            Err(format!("not built: {}", failure_line(&output)))
        };
        results.insert((*package).to_owned(), result);
    }
    Ok(results)
}

/// The package a cargo JSON message is about: the directory name of its manifest.
fn package_of(message: &Value) -> Option<String> {
    let manifest = Path::new(message["manifest_path"].as_str()?);
    Some(manifest.parent()?.file_name()?.to_string_lossy().into_owned())
}

enum Diagnostic {
    /// An error: its code, message and primary location.
    Error(String),
    Warning,
}

fn diagnostic(message: &Value) -> Option<Diagnostic> {
    let text = message["message"].as_str().unwrap_or_default();
    // Summaries ("aborting due to 2 previous errors", "3 warnings emitted") have no spans.
    let spans = message["spans"].as_array().map_or(0, Vec::len);
    let summary = spans == 0
        && (text.starts_with("aborting due to")
            || text.ends_with("emitted")
            || text.starts_with("could not compile"));
    if summary {
        return None;
    }
    match message["level"].as_str()? {
        "error" | "error: internal compiler error" => {
            let code =
                message["code"]["code"].as_str().map(|c| format!("{c}: ")).unwrap_or_default();
            let at = message["spans"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|s| s["is_primary"] == true)
                .map(|s| {
                    let file = Path::new(s["file_name"].as_str().unwrap_or_default());
                    let file = file.file_name().map(|f| f.to_string_lossy()).unwrap_or_default();
                    format!(" ({file}:{})", s["line_start"])
                })
                .unwrap_or_default();
            Some(Diagnostic::Error(format!("{code}{text}{at}")))
        }
        "warning" => Some(Diagnostic::Warning),
        _ => None,
    }
}

fn build_runner(dir: &Path, work: &Path, runner: &str) -> Result<PathBuf, String> {
    let args = ["build", "--package", runner, "--message-format=json"];
    eprintln!("  + cargo {} (in {})", args.join(" "), dir.display());
    let output = scratch_cargo(&args, dir, &work.join("target"))?;
    if !output.status.success() {
        return Err(format!("the {runner} runner does not build: {}", failure_line(&output)));
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["target"]["name"] == runner)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("cargo built no {runner} executable"))
}

/// Runs the samples of `versions` of one CRD through the runner and compares what comes back.
fn roundtrip(
    runner: &Path,
    input: &Input,
    generated: &Generated,
    work: &Path,
    out: &Path,
) -> Outcome {
    if !generated.missing.is_empty() {
        return Outcome::Fail(format!("no root type for {}", generated.missing.join(", ")));
    }
    let samples_dir = work.join("samples").join(&input.package);
    let out_dir = out.join(&input.package);
    let status = Command::new(runner)
        .arg(&input.package)
        .arg(&samples_dir)
        .arg(&out_dir)
        .stderr(Stdio::piped())
        .output();
    match status {
        Ok(output) if output.status.success() => {}
        Ok(output) => return Outcome::Fail(format!("runner: {}", failure_line(&output))),
        Err(e) => return Outcome::Fail(format!("could not run the runner: {e}")),
    }
    let mut total = 0;
    for version in generated.roots.iter().map(|r| &r.version) {
        let Some(samples) = input.samples.get(version) else { continue };
        for sample in samples {
            total += 1;
            let base = out_dir.join(version).join(&sample.stem);
            if let Err(why) = check_sample(&base, &sample.object) {
                return Outcome::Fail(format!("{version} {}: {why}", sample.name));
            }
        }
    }
    if total == 0 {
        Outcome::NotRun("no samples".to_owned())
    } else {
        Outcome::Pass(plural(total, "sample"))
    }
}

/// Whether the runner gave `object` back: `<base>.json` holds JSON equal to it, not `<base>.err`.
fn check_sample(base: &Path, object: &Value) -> Result<(), String> {
    if let Ok(why) = std::fs::read_to_string(base.with_extension("err")) {
        return Err(why);
    }
    let json = std::fs::read_to_string(base.with_extension("json"))
        .map_err(|e| format!("no output: {e}"))?;
    let back: Value = serde_json::from_str(&json).map_err(|e| format!("output: {e}"))?;
    match sample::json_diff(object, &back) {
        None => Ok(()),
        Some(difference) => Err(format!("serialised back differently: {difference}")),
    }
}

// ---------------------------------------------------------------------------------------------
// The report

struct Report<'a> {
    inputs: &'a [Input],
    columns: &'a [(&'a dyn Tool, Vec<ToolRow>)],
    crds: &'a Path,
    /// The workspace root: the table names a corpus inside the repository relative to it, so
    /// that no machine's absolute path ends up in a committed file.
    root: &'a Path,
    seconds: f64,
}

impl Report<'_> {
    fn markdown(&self, args: &[String]) -> String {
        let mut md = String::new();
        let tools: Vec<&str> = self.columns.iter().map(|(tool, _)| tool.name()).collect();
        let _ = writeln!(md, "# informer-gen and kopium on the CRD corpus\n");
        let _ = writeln!(
            md,
            "Written by `cargo xtask compare-kopium{}` on {} ({}, {} CPUs) in {:.0} s, from {} \
             CRD files in `{}`. Do not edit: run the command again.\n",
            args.iter().fold(String::new(), |line, arg| line + " " + arg),
            today(),
            machine(),
            std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            self.seconds,
            self.inputs.len(),
            self.crds.strip_prefix(self.root).unwrap_or(self.crds).display(),
        );
        let _ = writeln!(
            md,
            "For each tool and file: **gen** — the tool exits 0; **build** — its output \
             compiles (with its warning count); **rt** — every sample object of the generated \
             versions deserialises into the root type and serialises back to equal JSON \
             (numbers compared by value). A dash means the step did not run.\n"
        );

        let _ = write!(md, "| CRD file |");
        for tool in &tools {
            let _ = write!(md, " {tool} gen | {tool} build | {tool} rt |");
        }
        let _ = write!(md, "\n|---|");
        for _ in &tools {
            md.push_str("---|---|---|");
        }
        md.push('\n');
        for (i, input) in self.inputs.iter().enumerate() {
            let _ = write!(md, "| `{}` |", input.file);
            for (_, rows) in self.columns {
                let row = &rows[i];
                for outcome in [&row.generates, &row.compiles, &row.roundtrips] {
                    let _ = write!(md, " {} |", cell(outcome));
                }
            }
            md.push('\n');
        }
        let _ = write!(md, "| **total** ({}) |", self.inputs.len());
        for (_, rows) in self.columns {
            let count = |step: fn(&ToolRow) -> &Outcome| {
                rows.iter().filter(|r| matches!(step(r), Outcome::Pass(_))).count()
            };
            let warnings: usize = rows.iter().map(|r| r.warnings).sum();
            let _ = write!(
                md,
                " **{}** | **{}** ({}) | **{}** |",
                count(|r| &r.generates),
                count(|r| &r.compiles),
                plural(warnings, "warning"),
                count(|r| &r.roundtrips)
            );
        }
        md.push_str("\n\nNotes:\n\n");
        for (tool, _) in self.columns {
            let _ = writeln!(md, "- **{}**: {}", tool.name(), tool.describe());
        }
        let unread: Vec<String> = self
            .inputs
            .iter()
            .filter_map(|i| i.crd.as_ref().err().map(|e| format!("`{}` ({})", i.file, short(e))))
            .collect();
        let _ = writeln!(
            md,
            "- Samples come from `informer_gen::sample` for every version of each CRD; each \
             tool is judged on the versions it generated. Crates are built in one Cargo \
             workspace per tool with `--keep-going`, one crate per CRD file, so one file's \
             errors do not hide another's; warnings are rustc's defaults (no clippy). \
             Sample values follow the schema alone (see `informer_gen::sample`): a field the \
             schema types as a plain string gets a plain string even where its project always \
             writes, say, a timestamp."
        );
        if !unread.is_empty() {
            let _ = writeln!(md, "- informer-gen could not read: {}.", unread.join(", "));
        }
        md
    }
}

fn cell(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pass(detail) if detail.is_empty() => "✓".to_owned(),
        Outcome::Pass(detail) => format!("✓ {}", escape(detail)),
        Outcome::Fail(why) => format!("✗ {}", escape(&short(why))),
        Outcome::NotRun(why) if why.is_empty() => "–".to_owned(),
        Outcome::NotRun(why) => format!("– {}", escape(why)),
    }
}

/// A reason on one line and at most [`REASON_CHARS`] characters.
fn short(reason: &str) -> String {
    let line = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= REASON_CHARS {
        line
    } else {
        let cut: String = line.chars().take(REASON_CHARS - 1).collect();
        format!("{cut}…")
    }
}

fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('<', "&lt;").replace('>', "&gt;")
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

fn today() -> String {
    command_line("date", &["-u", "+%Y-%m-%d"]).unwrap_or_else(|| "an unknown date".to_owned())
}

fn machine() -> String {
    command_line("uname", &["-m"]).unwrap_or_else(|| std::env::consts::ARCH.to_owned())
}

/// The first line `program args` prints, if it succeeds.
fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    let stdout = String::from_utf8(output.stdout).ok()?;
    output.status.success().then(|| stdout.lines().next().unwrap_or_default().trim().to_owned())
}

// ---------------------------------------------------------------------------------------------
// Processes and files

/// The first line of a failed command's stderr worth showing (`error: ...`, `Error: ...`).
fn failure_line(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines
        .iter()
        .find(|l| l.starts_with("error") || l.starts_with("Error"))
        .or_else(|| lines.last())
        .map_or_else(|| output.status.to_string(), |l| (*l).to_owned())
}

/// `cargo install kopium --locked --root ROOT`, output inherited.
fn cargo_install(root: &Path) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let root = root.display().to_string();
    let args = ["install", "kopium", "--locked", "--root", &root];
    eprintln!("+ cargo {}", args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .status()
        .map_err(|e| format!("could not run {cargo}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo {} failed: {status}", args.join(" ")))
    }
}

/// Runs cargo in `dir`, capturing stdout (JSON messages) and stderr.
fn cargo_output(args: &[&str], dir: &Path) -> Result<Output, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    Command::new(&cargo)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("could not run {cargo}: {e}"))
}

/// Runs cargo on a scratch workspace with its own target directory.
fn scratch_cargo(args: &[&str], dir: &Path, target: &Path) -> Result<Output, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    Command::new(&cargo)
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("RUSTFLAGS")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("could not run {cargo}: {e}"))
}

/// `name` with every character that is not ASCII alphanumeric replaced by `separator`.
fn sanitize(name: &str, separator: char) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { separator })
        .collect()
}

fn create_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

fn remove_dir(dir: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", dir.display())),
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes `text` unless the file already holds it, so that cargo rebuilds only what changed.
fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).is_ok_and(|current| current == text) {
        return Ok(());
    }
    write(path, text)
}
