//! Evaluating one tool on the corpus: its output for each CRD file in a crate of a scratch
//! workspace, built with `--keep-going`, then a runner over the crates that compiled, which
//! round-trips the samples.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use informer_gen::sample;
use serde_json::Value;

use super::inputs::Input;
use super::process::{
    create_dir, failure_line, remove_dir, scratch_cargo, write, write_if_changed,
};
use super::size::{CompileTime, Size, Stopwatch, clean, count_types};
use super::tools::{Generated, Tool};

/// The harness around one generated file.
const CRD_LIB: &str = include_str!("../../compare/crd_lib.rs");
/// The round-trip runner.
const RUNNER_MAIN: &str = include_str!("../../compare/runner_main.rs");

/// How one step went for one tool and one CRD file.
pub(super) enum Outcome {
    /// It worked; the detail (warnings, samples) may be empty.
    Pass(String),
    /// It did not, and why.
    Fail(String),
    /// An earlier step failed, or there was nothing to check.
    NotRun(String),
}

/// One tool's results for one CRD file.
pub(super) struct ToolRow {
    pub(super) generates: Outcome,
    pub(super) compiles: Outcome,
    /// rustc's warnings, if it compiled.
    pub(super) warnings: usize,
    pub(super) roundtrips: Outcome,
}

/// Runs `tool` on every input: a row per input, and the size of its output over all of them.
pub(super) fn evaluate(
    tool: &dyn Tool,
    inputs: &[Input],
    work: &Path,
    root: &Path,
) -> Result<(Vec<ToolRow>, Size), String> {
    let dir = work.join(tool.slug());
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
    let runner = format!("{}-roundtrip", tool.slug());
    let deps = format!("{}-dependencies", tool.slug());
    write_workspace(&dir, &packages, (&runner, &deps), tool, root)?;
    let (mut builds, compile_time) = build_crates(&dir, work, &packages, (&runner, &deps))?;
    let compiled: Vec<&str> =
        packages.iter().copied().filter(|p| builds.get(*p).is_some_and(Result::is_ok)).collect();
    let size = Size {
        files: packages.len(),
        lines: generated.iter().flatten().map(|g| g.code.lines().count()).sum(),
        types: generated.iter().flatten().map(|g| count_types(&g.code)).sum(),
        compile: compile_time,
    };
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
    Ok((rows, size))
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

/// The scratch workspace: the crates, the runner, and a crate with the crates' dependencies and
/// no code of its own, built first so that the crates' build times their code alone.
fn write_workspace(
    dir: &Path,
    packages: &[&str],
    (runner, deps): (&str, &str),
    tool: &dyn Tool,
    root: &Path,
) -> Result<(), String> {
    let members: Vec<String> = packages.iter().map(|p| format!("\"crates/{p}\"")).collect();
    let manifest = format!(
        "# Written by `cargo xtask compare-kopium`.\n[workspace]\nresolver = \"3\"\n\
         members = [\"{runner}\", \"{deps}\", {}]\n\n[profile.dev]\ndebug = false\n\
         incremental = false\n",
        members.join(", ")
    );
    let deps_manifest = format!(
        "[package]\nname = \"{deps}\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[dependencies]\n{}{HARNESS_DEPENDENCIES}",
        tool.dependencies()
    );
    create_dir(&dir.join(deps).join("src"))?;
    write_if_changed(&dir.join(deps).join("Cargo.toml"), &deps_manifest)?;
    write_if_changed(&dir.join(deps).join("src/lib.rs"), "")?;
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

/// Builds every generated crate with `--keep-going`, timed: for each package, its warning count
/// or why it did not compile; and how long they took, their dependencies built beforehand.
fn build_crates(
    dir: &Path,
    work: &Path,
    packages: &[&str],
    (runner, deps): (&str, &str),
) -> Result<(CrateBuilds, Result<CompileTime, String>), String> {
    let mut results = BTreeMap::new();
    if packages.is_empty() {
        return Ok((results, Err("nothing generated".to_owned())));
    }
    let target = work.join("target");
    let args = ["build", "--package", deps];
    eprintln!("  + cargo {} (in {})", args.join(" "), dir.display());
    let output = scratch_cargo(&args, dir, &target)?;
    if !output.status.success() {
        return Err(format!("the crates' dependencies do not build: {}", failure_line(&output)));
    }
    clean(dir, &target, packages)?;
    let args = [
        "build",
        "--workspace",
        "--exclude",
        runner,
        "--exclude",
        deps,
        "--keep-going",
        "--message-format=json",
    ];
    eprintln!("  + cargo {} (timed, in {})", args.join(" "), dir.display());
    let stopwatch = Stopwatch::start();
    let output = scratch_cargo(&args, dir, &target)?;
    let compile_time = Ok(stopwatch.stop(packages.len()));
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
    Ok((results, compile_time))
}

/// For each package, its warning count or why it did not compile.
type CrateBuilds = BTreeMap<String, Result<usize, String>>;

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

/// `n what`, with the plural `what`s unless `n` is 1.
pub(super) fn plural(n: usize, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}
