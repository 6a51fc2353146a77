//! `cargo xtask`: the project's tasks.
//!
//! - `cargo xtask demo [--objects N]`: the informer machinery end to end, with progress.
//! - `cargo xtask ci`: what CI checks (format, clippy, docs, tests, every Kubernetes version).

mod demo;

use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <demo [--objects N] | ci>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("demo") => demo::run(&args[1..]),
        Some("ci") => ci(),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The Kubernetes versions k8s-openapi 0.29 offers; the library must build under each.
const K8S_VERSIONS: [&str; 5] = ["v1_33", "v1_34", "v1_35", "v1_36", "v1_37"];

fn ci() -> Result<(), String> {
    cargo(&["fmt", "--all", "--", "--check"], &[])?;
    cargo(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"], &[])?;
    cargo(&["doc", "--workspace", "--no-deps"], &[("RUSTDOCFLAGS", "-D warnings")])?;
    for version in K8S_VERSIONS {
        let feature = format!("k8s-openapi/{version}");
        cargo(&["check", "--package", "informer-runtime", "--features", &feature], &[])?;
    }
    cargo(&["test", "--workspace"], &[])?;
    cargo(&["xtask", "demo", "--objects", "2000"], &[])
}

fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!("+ cargo {}", args.join(" "));
    let status = Command::new(&cargo)
        .args(args)
        .envs(env.iter().copied())
        .status()
        .map_err(|e| format!("could not run {cargo}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo {} failed: {status}", args.join(" ")))
    }
}
