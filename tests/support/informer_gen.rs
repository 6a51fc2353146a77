//! The `informer-gen` binary, for the workspace's tests that run it on the CRD corpus and
//! against an API server (`tests/crd_corpus_gen.rs`, `tests/informer_gen_cluster.rs`).
//!
//! `env!("CARGO_BIN_EXE_…")` names only the binaries of the test's own package, so the binary is
//! built here, once per test process, by the cargo that runs the tests:
//! `cargo build -p informer-gen --bin informer-gen`, whose JSON messages name the executable.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long building the binary may take: a build of its dependencies from nothing, on a busy
/// machine, fits.
pub const BUILD_DEADLINE: Duration = Duration::from_secs(900);

/// The path of the `informer-gen` binary, built on the first call.
///
/// # Panics
///
/// If cargo cannot be run, fails, names no `informer-gen` executable, or has not finished
/// within [`BUILD_DEADLINE`] (it is then killed): the test that needs the binary cannot run.
#[must_use]
pub fn informer_gen() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(build).clone()
}

fn build() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // Quiet, with the compiler's errors rendered on standard error and the messages, which
    // name the executable, as JSON on standard output.
    let args = [
        "build",
        "--quiet",
        "-p",
        "informer-gen",
        "--bin",
        "informer-gen",
        "--message-format=json-render-diagnostics",
    ];
    let mut child = Command::new(&cargo)
        .args(args)
        .current_dir(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("{cargo} {}: {e}", args.join(" ")));
    let Some(stdout) = child.stdout.take() else { panic!("{cargo}: no standard output") };
    // One message per line; only the executable's path is kept, so memory stays bounded
    // however many messages the build prints.
    let reader = std::thread::spawn(move || {
        let mut executable = None;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
            let built = message["reason"] == "compiler-artifact"
                && message["target"]["name"] == "informer-gen";
            if let Some(path) = message["executable"].as_str().filter(|_| built) {
                executable = Some(PathBuf::from(path));
            }
        }
        executable
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() < BUILD_DEADLINE => {
                std::thread::sleep(Duration::from_millis(100));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{cargo} {} did not finish within {BUILD_DEADLINE:?}", args.join(" "));
            }
            Err(e) => panic!("{cargo} {}: {e}", args.join(" ")),
        }
    };
    assert!(status.success(), "{cargo} {}: {status} (its errors are above)", args.join(" "));
    let executable = reader.join().unwrap_or_else(|_| panic!("reading {cargo}'s messages"));
    executable.unwrap_or_else(|| panic!("{cargo} {} named no informer-gen binary", args.join(" ")))
}
