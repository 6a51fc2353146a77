//! `cargo xtask soak --minutes N [--seed S]`: the chaos scenario for N minutes, in a release
//! build.
//!
//! It runs the chaos tests themselves (`tests/chaos.rs`, over `informer_tests::chaos`) with
//! `INFORMER_CHAOS_MINUTES=N`: N epochs of a minute of churn and faults, each ending in a check
//! that every cache and handler converged, over plain HTTP/1.1 and then over TLS and HTTP/2
//! (one test at a time, so that each has the machine to itself: 2N minutes in all). Besides
//! the main factory's informers, each run has an informer listing by streaming lists, one with
//! a cache in compact storage, and one restricted to a set of namespaces
//! (`tests/support/chaos/variants.rs`), and a controller with leader election whose leader is
//! stopped or has its token revoked at seeded points, while tokens and client certificates
//! rotate (`controller.rs`, `credentials.rs`). The test prints the counts (writes, faults by
//! kind, informer errors, handler events, per such informer its events, errors, plain and
//! streaming lists and decode failures, the controller's terms and handovers, the
//! credentials rotated, what was lost) after every epoch and fails if anything was lost;
//! this command then fails with the seed and the command that replays it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use informer_tests::chaos::{MINUTES_ENV, SEED_ENV};

/// The test binary.
const TEST: &str = "chaos";

/// How many tests it runs, one after the other: one per transport.
const TESTS: u32 = 2;

/// What one epoch may take at worst, beyond its minute of churn: the wait before its late
/// handler and the wait for convergence (a minute each at most), and shutdown.
const EPOCH_WORST: Duration = Duration::from_secs(4 * 60);

struct Options {
    minutes: u64,
    seed: u64,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut minutes = None;
    let mut seed = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<u64, String> {
            let value = args.next().ok_or(format!("{name} needs a value"))?;
            value.parse().map_err(|e| format!("{name} {value:?}: {e}"))
        };
        match arg.as_str() {
            "--minutes" => minutes = Some(number("--minutes")?),
            "--seed" => seed = Some(number("--seed")?),
            other => return Err(format!("unknown soak option {other:?}; {USAGE}")),
        }
    }
    let minutes =
        minutes.filter(|&m| m > 0).ok_or(format!("--minutes N (N >= 1) is needed; {USAGE}"))?;
    Ok(Options { minutes, seed: seed.unwrap_or_else(|| fastrand::u64(..)) })
}

const USAGE: &str = "usage: cargo xtask soak --minutes N [--seed S]";

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let options = parse(args)?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new("."));
    let binary = build(root)?;
    let Options { minutes, seed } = options;
    let replay = format!("cargo xtask soak --minutes {minutes} --seed {seed}");
    eprintln!(
        "+ {} --nocapture --test-threads 1  ({MINUTES_ENV}={minutes} {SEED_ENV}={seed})",
        binary.display()
    );
    let started = Instant::now();
    let mut child = Command::new(&binary)
        .args(["--nocapture", "--test-threads", "1"])
        .env(MINUTES_ENV, minutes.to_string())
        .env(SEED_ENV, seed.to_string())
        .current_dir(root.join("tests"))
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("could not run {}: {e}", binary.display()))?;
    let epochs = u32::try_from(minutes).unwrap_or(u32::MAX);
    let deadline = Duration::from_secs(60)
        .saturating_add(EPOCH_WORST)
        .saturating_mul(epochs)
        .saturating_mul(TESTS);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the soak did not finish within {deadline:?} and was stopped; seed {seed}: {replay}"
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => return Err(format!("waiting for {}: {e}", binary.display())),
        }
    };
    if status.success() {
        println!(
            "soak: OK: {minutes} minutes over each transport, nothing lost, in {:.0?} (seed {seed})",
            started.elapsed()
        );
        Ok(())
    } else {
        Err(format!("the soak failed ({status}); seed {seed}: {replay}"))
    }
}

/// Builds the chaos test in release and returns its executable.
fn build(root: &Path) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let args = ["test", "--release", "-p", "informer-tests", "--test", TEST, "--no-run"];
    eprintln!("+ cargo {}", args.join(" "));
    let mut command = Command::new(&cargo);
    command
        .args(args)
        .arg("--message-format=json-render-diagnostics")
        .current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    crate::without_package_variables(&mut command);
    let output = command.output().map_err(|e| format!("could not run {cargo}: {e}"))?;
    if !output.status.success() {
        return Err(format!("building the chaos test failed: {}", output.status));
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| {
            message["reason"] == "compiler-artifact" && message["target"]["name"] == TEST
        })
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("cargo built no executable for the {TEST} test"))
}
