//! `cargo xtask fuzz [--minutes N] [--target NAME]`: every fuzz target for its share of N
//! minutes, built optimised (the `fuzz` profile: release, with overflow checks and debug
//! assertions), with a report per target.
//!
//! The targets are the `#[test]`s of the crates' fuzz modules (see the `informer-fuzz` crate for
//! the harness). Each runs in its own process with `INFORMER_FUZZ_SECONDS` set to its share and
//! `INFORMER_FUZZ_KEEP_GOING`, so it counts every failure instead of stopping at the first. A
//! process that dies (a stack overflow aborts it) is started again for the time left; the input
//! that killed it is named by its thread, and counted as a failure. What the processes write to
//! standard error is kept in `target/fuzz-logs/NAME.log`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: cargo xtask fuzz [--minutes N] [--target NAME]";

/// Where a target's test is: a package, its library's unit tests or an integration test, and
/// the test's path.
struct Spec {
    name: &'static str,
    package: &'static str,
    /// `None` for the library's unit tests, else the integration test's name.
    test_binary: Option<&'static str>,
    test: &'static str,
}

const TARGETS: [Spec; 12] = [
    Spec {
        name: "watch_decoder",
        package: "informer-client",
        test_binary: None,
        test: "fuzz::watch_decoder",
    },
    Spec {
        name: "list_splitter",
        package: "informer-client",
        test_binary: None,
        test: "fuzz::list_splitter",
    },
    Spec {
        name: "list_page_decoder",
        package: "informer-client",
        test_binary: None,
        test: "fuzz::list_page_decoder",
    },
    Spec {
        name: "object_decoder",
        package: "informer-runtime",
        test_binary: None,
        test: "fuzz::object_decoder",
    },
    Spec {
        name: "label_selector",
        package: "informer-runtime",
        test_binary: None,
        test: "fuzz::label_selector",
    },
    Spec {
        name: "kubeconfig_loader",
        package: "informer-client",
        test_binary: None,
        test: "fuzz::kubeconfig_loader",
    },
    Spec {
        name: "status_error",
        package: "informer-client",
        test_binary: None,
        test: "fuzz::status_error",
    },
    Spec {
        name: "discovery_documents",
        package: "informer-client",
        test_binary: None,
        test: "fuzz::discovery_documents",
    },
    Spec {
        name: "exec_credential",
        package: "informer-client",
        test_binary: None,
        test: "fuzz::exec_credential",
    },
    Spec {
        name: "compact_form",
        package: "informer-runtime",
        test_binary: None,
        test: "fuzz::compact_form",
    },
    Spec {
        name: "field_selector",
        package: "embedded-apiserver",
        test_binary: None,
        test: "fuzz::field_selector",
    },
    Spec {
        name: "crd_schema_reader",
        package: "informer-gen",
        test_binary: Some("fuzz"),
        test: "crd_schema_reader",
    },
];

/// How long past its budget a target's process may run before it is killed (one input may
/// take up to the harness's 60 s limit, and a hang is reported after it).
const GRACE: Duration = Duration::from_secs(120);

pub fn run(args: &[String]) -> Result<(), String> {
    let mut minutes = 10.0_f64;
    let mut only: Option<String> = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--minutes" => {
                let value = args.next().ok_or(USAGE)?;
                minutes =
                    value.parse().ok().filter(|m: &f64| m.is_finite() && *m > 0.0).ok_or_else(
                        || format!("--minutes {value:?}: expected a positive number"),
                    )?;
            }
            "--target" => only = Some(args.next().ok_or(USAGE)?.clone()),
            "-h" | "--help" => {
                println!("{USAGE}\ntargets: {}", names().join(", "));
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let targets: Vec<&Spec> =
        TARGETS.iter().filter(|t| only.as_deref().is_none_or(|n| n == t.name)).collect();
    if targets.is_empty() {
        return Err(format!(
            "no fuzz target {:?}; the targets are {}",
            only.unwrap_or_default(),
            names().join(", ")
        ));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut executables = BTreeMap::new();
    for target in &targets {
        if let std::collections::btree_map::Entry::Vacant(entry) =
            executables.entry((target.package, target.test_binary))
        {
            entry.insert(build(&root, target)?);
        }
    }
    let logs = target_dir(&root).join("fuzz-logs");
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    let share = Duration::from_secs_f64(
        minutes * 60.0 / f64::from(u32::try_from(targets.len()).unwrap_or(1)),
    );
    eprintln!("fuzzing {} targets for {share:.0?} each; logs in {}", targets.len(), logs.display());
    let mut summaries = Vec::new();
    for target in &targets {
        let exe = &executables[&(target.package, target.test_binary)];
        let summary =
            fuzz_target(&root, exe, target, share, &logs.join(format!("{}.log", target.name)))?;
        println!("{}", summary.line(target));
        for failure in summary.distinct.values() {
            println!(
                "  {} at {}: {}\n    replay: ARBTEST_SEED={} cargo test -p {} {} {} -- --exact",
                failure.kind,
                failure.at,
                failure.message,
                failure.seed,
                target.package,
                target.test_binary.map_or("--lib".to_owned(), |t| format!("--test {t}")),
                target.test
            );
        }
        summaries.push(summary);
    }
    let inputs: u64 = summaries.iter().map(|s| s.inputs).sum();
    let failures: u64 = summaries.iter().map(|s| s.failures).sum();
    let distinct: usize = summaries.iter().map(|s| s.distinct.len()).sum();
    println!(
        "total: {inputs} inputs, {failures} failures ({distinct} distinct), {} targets",
        targets.len()
    );
    if failures > 0 {
        Err(format!("{distinct} distinct failures; replay each with its seed"))
    } else {
        Ok(())
    }
}

fn names() -> Vec<&'static str> {
    TARGETS.iter().map(|t| t.name).collect()
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// Builds the test binary of `target` in the `fuzz` profile; its path.
fn build(root: &Path, target: &Spec) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut args = vec!["test", "--profile", "fuzz", "--package", target.package, "--no-run"];
    args.extend(["--message-format", "json-render-diagnostics"]);
    match target.test_binary {
        Some(test) => args.extend(["--test", test]),
        None => args.push("--lib"),
    }
    eprintln!("+ cargo {}", args.join(" "));
    let output = Command::new(&cargo)
        .args(&args)
        .current_dir(root)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not run {cargo}: {e}"))?;
    if !output.status.success() {
        return Err(format!("cargo {} failed: {}", args.join(" "), output.status));
    }
    let crate_name = target.package.replace('-', "_");
    let wanted = target.test_binary.unwrap_or(&crate_name);
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| {
            m["reason"] == "compiler-artifact"
                && m["profile"]["test"] == true
                && m["target"]["name"] == wanted
        })
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("cargo built no test executable for {} ({wanted})", target.package))
}

/// One distinct failure of a target.
#[derive(Clone, Debug)]
struct Failure {
    kind: &'static str,
    at: String,
    message: String,
    /// The first input that failed so.
    seed: String,
}

/// What one process of a target has said so far.
#[derive(Clone, Copy, Default)]
struct Progress {
    inputs: u64,
    failures: u64,
    reported: bool,
}

#[derive(Default)]
struct Summary {
    inputs: u64,
    failures: u64,
    /// By where it happened and what it said (numbers and quoted values taken out).
    distinct: BTreeMap<String, Failure>,
    seconds: f64,
    restarts: u32,
}

impl Summary {
    fn line(&self, target: &Spec) -> String {
        format!(
            "{}: {} inputs in {:.0} s, {} failures ({} distinct){}",
            target.name,
            self.inputs,
            self.seconds,
            self.failures,
            self.distinct.len(),
            if self.restarts > 0 { format!(", {} crashes", self.restarts) } else { String::new() }
        )
    }

    fn add(&mut self, failure: Failure) {
        let key = format!("{} {}", failure.at, shape(&failure.message));
        self.distinct.entry(key).or_insert(failure);
    }
}

/// A message without its numbers and quoted values, which differ between inputs of one failure.
fn shape(message: &str) -> String {
    let digitless: String = message.chars().filter(|c| !c.is_ascii_digit()).collect();
    digitless.split(['"', '`']).step_by(2).collect()
}

/// The value of `key=` in a report line (up to the next space, or the rest for `message`).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!(" {key}="))? + key.len() + 2;
    let rest = &line[start..];
    if key == "message" { Some(rest) } else { rest.split(' ').next() }
}

/// Runs one target's test for `budget`, again after each crash, until the budget is spent.
fn fuzz_target(
    root: &Path,
    exe: &Path,
    target: &Spec,
    budget: Duration,
    log: &Path,
) -> Result<Summary, String> {
    let started = Instant::now();
    let summary = Arc::new(Mutex::new(Summary::default()));
    let _ = std::fs::remove_file(log);
    loop {
        let left = budget.saturating_sub(started.elapsed());
        if left < Duration::from_secs(1) {
            break;
        }
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let package_dir = root.join(match target.package {
            "informer-runtime" => "informer-runtime",
            "informer-client" => "informer-client",
            "embedded-apiserver" => "embedded-apiserver",
            _ => "informer-gen",
        });
        let mut child = Command::new(exe)
            .args([target.test, "--exact", "--nocapture", "--test-threads=1"])
            .env("INFORMER_FUZZ_SECONDS", format!("{:.1}", left.as_secs_f64()))
            .env("INFORMER_FUZZ_KEEP_GOING", "1")
            .env("RUST_BACKTRACE", "0")
            .env_remove("ARBTEST_SEED")
            .env_remove("INFORMER_FUZZ_MINIMIZE")
            .current_dir(package_dir)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("could not run {}: {e}", exe.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        // This run's latest counts: inputs, failures, and whether it reported at its end.
        let progress = Arc::new(Mutex::new(Progress::default()));
        let reader = {
            let (summary, progress, name) =
                (Arc::clone(&summary), Arc::clone(&progress), target.name);
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    read_line(&line, name, &summary, &progress);
                }
            })
        };
        let deadline = Instant::now() + left + GRACE;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() > deadline => {
                    let _ = child.kill();
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(100)),
                Err(e) => return Err(format!("waiting for {}: {e}", target.name)),
            }
        };
        let _ = reader.join();
        let progress = *progress.lock().map_err(|_| "poisoned")?;
        let mut summary = summary.lock().map_err(|_| "poisoned")?;
        summary.inputs += progress.inputs;
        summary.failures += progress.failures;
        if progress.reported {
            break;
        }
        // The process died before its report: a crash. Its log names the input's thread.
        summary.restarts += 1;
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let overflow = text.lines().rev().find_map(|l| {
            let name = l.strip_prefix("thread 'fuzz-input ")?;
            let (name, rest) = name.split_once('\'')?;
            rest.contains("has overflowed its stack").then(|| name.to_owned())
        });
        let (kind, seed, message) = match overflow {
            Some(name) => (
                "stack overflow",
                name.rsplit(' ').next().unwrap_or("?").to_owned(),
                "the stack overflowed".to_owned(),
            ),
            None => (
                "crash",
                "?".to_owned(),
                format!("the process ended with {status} (see {})", log.display()),
            ),
        };
        summary.inputs += 1;
        summary.failures += 1;
        summary.add(Failure { kind, at: kind.to_owned(), message, seed });
    }
    let mut summary = Arc::try_unwrap(summary)
        .map_err(|_| "reader still running")?
        .into_inner()
        .map_err(|_| "poisoned")?;
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// Takes one line of a target's output: progress, a failure, or its report.
fn read_line(line: &str, name: &str, summary: &Mutex<Summary>, progress: &Mutex<Progress>) {
    let target = field(line, "target");
    if target != Some(name) {
        return;
    }
    let number = |key| field(line, key).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    if let Ok(mut progress) = progress.lock() {
        if line.starts_with("fuzz-progress ") {
            progress.inputs = number("inputs");
        } else if line.starts_with("fuzz-failure ") {
            // Only the first of each kind is printed; the report has them all.
            progress.failures += 1;
        } else if line.starts_with("fuzz-report ") {
            *progress =
                Progress { inputs: number("inputs"), failures: number("failures"), reported: true };
        }
    }
    if line.starts_with("fuzz-failure ")
        && let Ok(mut summary) = summary.lock()
    {
        let at = field(line, "at").unwrap_or("?").to_owned();
        let kind = if at == "(hang)" { "hang" } else { "panic" };
        summary.add(Failure {
            kind,
            at,
            message: field(line, "message").unwrap_or_default().to_owned(),
            seed: field(line, "seed").unwrap_or("?").to_owned(),
        });
    }
}
