//! informer-gen on the repository's corpus of real CRDs (`tests/fixtures/crd-corpus`, 128
//! files from 70 projects): every file loads, the quirks of real files load as the API server
//! reads them, the samples of every version respect their schema and hold every enum value, and
//! the `informer-gen` binary generates a module tree for the whole corpus that parses.
//!
//! The corpus (25 MB) is the workspace's, in `tests/fixtures/crd-corpus` at the root; these
//! tests are not in informer-gen's package, which holds only its library.
//!
//! The binary's run over the whole corpus takes about a minute on 2 cores in a debug build, so
//! it belongs to the full gate (`cargo xtask ci`); a plain `cargo test` skips it with one line.

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::unwrap_used)]

#[path = "support/output.rs"]
mod output;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use informer_gen::sample::{check_samples, samples};
use informer_gen::schema::{Loaded, load, parse_str};
use output::tree;

/// How long one run of the binary on the whole corpus may take before the test fails.
const RUN_DEADLINE: Duration = Duration::from_secs(300);

/// The repository's CRD corpus: a missing directory fails the test, naming the path.
fn corpus_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/crd-corpus");
    assert!(dir.is_dir(), "the CRD corpus {} is absent", dir.display());
    dir
}

/// The corpus, loaded.
fn corpus() -> Vec<Loaded> {
    let dir = corpus_dir();
    load(&[&dir]).unwrap_or_else(|e| panic!("loading {}: {e}", dir.display()))
}

#[test]
fn every_corpus_file_loads() {
    let dir = corpus_dir();
    let loaded = corpus();
    let yaml_files = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|entry| entry.as_ref().unwrap().path().extension().is_some_and(|e| e == "yaml"))
        .count();
    assert_eq!(loaded.len(), yaml_files, "one CRD per file");
    for crd in &loaded {
        assert_eq!(crd.crd.kind, "CustomResourceDefinition");
        assert!(!crd.crd.spec.versions.is_empty(), "{}", crd.file.display());
    }
    let names: Vec<_> = loaded.iter().map(|crd| crd.file.file_name().unwrap()).collect();
    assert!(names.is_sorted(), "files are read in name order");
}

#[test]
fn the_corpus_equals_sign_enum_loads_as_a_string() {
    let dir = corpus_dir();
    let text =
        std::fs::read_to_string(dir.join("prometheus-operator-alertmanagerconfig.yaml")).unwrap();
    assert!(text.contains("\n                            - =\n"), "the quirk is still in the file");
    let loaded = parse_str(Path::new("alertmanagerconfig.yaml"), &text).unwrap();
    let debug = format!("{:?}", loaded[0].crd);
    assert!(debug.contains(r#"String("=")"#));
}

#[test]
fn every_corpus_version_has_valid_samples_covering_every_enum_value() {
    let loaded = corpus();
    let mut count = 0;
    for loaded in &loaded {
        for version in &loaded.crd.spec.versions {
            if let Err(problem) = check_samples(&loaded.file, &loaded.crd, &version.name) {
                panic!("{problem}");
            }
            count += 1;
        }
    }
    assert!(count >= 45);
}

#[test]
fn samples_of_the_whole_corpus_are_quick_and_deterministic() {
    let loaded = corpus();
    let start = Instant::now();
    let (mut versions, mut objects, mut values) = (0, 0, 0);
    for loaded in &loaded {
        for version in &loaded.crd.spec.versions {
            let samples = samples(&loaded.crd, &version.name);
            versions += 1;
            objects += samples.len();
            values += samples
                .iter()
                .filter(|sample| sample.name == "all-fields")
                .map(|sample| count(&sample.object))
                .sum::<usize>();
        }
    }
    let elapsed = start.elapsed();
    println!(
        "{objects} samples of {versions} CRD versions ({values} JSON values in the all-fields \
         ones): {elapsed:?}"
    );
    // A generous bound, to catch exponential growth, not to measure.
    assert!(elapsed.as_secs() < 20, "{elapsed:?}");
    let argo =
        loaded.iter().find(|loaded| loaded.file.ends_with("argo-workflows-workflow.yaml")).unwrap();
    assert_eq!(samples(&argo.crd, "v1alpha1"), samples(&argo.crd, "v1alpha1"));
}

/// The number of JSON values in `value`, itself included.
fn count(value: &serde_json::Value) -> usize {
    1 + match value {
        serde_json::Value::Array(items) => items.iter().map(count).sum(),
        serde_json::Value::Object(object) => object.values().map(count).sum(),
        _ => 0,
    }
}

/// Every CRD of the repository's corpus: `--out` with `--list`, every file parses.
#[tokio::test]
async fn corpus_generates_a_tree_that_parses() {
    // The workspace's tests name this variable as `informer_tests::full_gate::ENV`.
    if std::env::var_os("INFORMER_FULL_GATE").is_none_or(|v| v != "1") {
        let _ = writeln!(
            std::io::stderr(),
            "skipping informer-gen's run over the whole CRD corpus: `cargo xtask ci` runs it \
             (or set INFORMER_FULL_GATE=1)"
        );
        return;
    }
    let corpus = corpus_dir();
    let temp = tempfile::tempdir().unwrap();
    let out = temp.path().join("out");
    let args = ["crd", "--list", "--out", out.to_str().unwrap(), corpus.to_str().unwrap()];
    let output = run(temp.path(), &args).await;
    assert!(
        output.status.success(),
        "status {}, stderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let list = String::from_utf8(output.stdout).unwrap();
    assert!(list.lines().count() > 10, "{list}");
    for line in list.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields.len(), 7, "{line}");
        assert!(["namespaced", "cluster"].contains(&fields[4]), "{line}");
        assert!(Path::new(fields[6]).starts_with(&corpus), "{line}");
    }
    for (path, code) in tree(&out) {
        if let Err(error) = syn::parse_file(&code) {
            panic!("{} does not parse: {error}\n{code}", path.display());
        }
    }
}

/// Runs the binary in `dir`, failing the test if it has not finished within [`RUN_DEADLINE`]
/// (it is then killed).
async fn run(dir: &Path, args: &[&str]) -> Output {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_informer-gen"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(RUN_DEADLINE, run)
        .await
        .unwrap_or_else(|_| panic!("informer-gen {args:?} did not finish within {RUN_DEADLINE:?}"))
        .unwrap_or_else(|e| panic!("informer-gen {args:?}: {e}"))
}
