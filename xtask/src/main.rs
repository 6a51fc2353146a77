//! `cargo xtask`: the project's tasks.
//!
//! - `cargo xtask demo [--objects N] [--kubeconfig PATH [--seconds N]]`: the informer machinery
//!   end to end over HTTP on the embedded API server, or read-only against a real cluster.
//! - `cargo xtask serve [--addr 127.0.0.1:PORT]`: the embedded API server alone, for any client.
//! - `cargo xtask ci`: what CI checks (format, clippy, docs, tests, every Kubernetes version).

mod demo;
mod widget;

use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <demo [--objects N] [--kubeconfig PATH] [--seconds N] | serve [--addr HOST:PORT] | ci>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("demo") => demo::run(&args[1..]),
        Some("serve") => serve(&args[1..]),
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

fn serve(args: &[String]) -> Result<(), String> {
    let addr = match args {
        [] => "127.0.0.1:8080".to_owned(),
        [flag, addr] if flag == "--addr" => addr.clone(),
        _ => return Err("usage: cargo xtask serve [--addr HOST:PORT]".to_owned()),
    };
    let addr: std::net::SocketAddr = addr.parse().map_err(|e| format!("--addr {addr:?}: {e}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("could not start the tokio runtime: {e}"))?;
    println!("serving the embedded API server on http://{addr}");
    println!("  kubectl --server http://{addr} get namespaces");
    runtime
        .block_on(informer_runtime::testing::apiserver::serve(addr))
        .map_err(|e| format!("serve {addr}: {e}"))
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
    cargo(&["xtask", "demo", "--objects", "1000"], &[("KUBECONFIG", "")])
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
