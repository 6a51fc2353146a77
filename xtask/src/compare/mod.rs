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
//!
//! One file per job: `inputs.rs` (the corpus and its samples), `tools.rs` (the generators),
//! `evaluate.rs` (build and round-trip), `size.rs` (lines, types and compile time of each tool's
//! output), `report.rs` (the tables), `process.rs` (processes and files).
//!
//! informer-gen runs twice: with Kubernetes' own types mapped to k8s-openapi's (its default, the
//! report's "after") and with `--no-k8s-types` ("before").

mod evaluate;
mod inputs;
mod process;
mod report;
mod size;
mod tools;

use std::path::{Path, PathBuf};
use std::time::Instant;

use self::evaluate::evaluate;
use self::inputs::{read_inputs, write_samples};
use self::process::workspace_root;
use self::report::Report;
use self::tools::{InformerGen, Kopium, Tool};

const USAGE: &str =
    "usage: cargo xtask compare-kopium [--crds DIR] [--out FILE] [--work DIR] [--only NAME]";

/// The corpus the issue names, relative to the workspace root: copied into the repository so that
/// a plain clone can run the comparison.
const DEFAULT_CRDS: &str = "tests/fixtures/crd-corpus";
/// Where the table goes, relative to the workspace root.
const DEFAULT_OUT: &str = "informer-gen/KOPIUM.md";
/// The scratch directory, relative to the workspace root.
const DEFAULT_WORK: &str = "target/compare-kopium";

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
    let without_k8s_types = informer_gen.without_k8s_types();
    let tools: [&dyn Tool; 3] = [&kopium, &without_k8s_types, &informer_gen];
    let mut columns = Vec::new();
    for tool in tools {
        let tool_started = Instant::now();
        let (rows, size) = evaluate(tool, &inputs, &work, &root)?;
        eprintln!(
            "compare-kopium: {}: done in {:.0} s",
            tool.name(),
            tool_started.elapsed().as_secs_f64()
        );
        columns.push((tool, rows, size));
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
