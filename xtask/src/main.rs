//! `cargo xtask`: the project's tasks.
//!
//! - `cargo xtask demo [--objects N] [--kubeconfig PATH [--seconds N]]`: the informer machinery
//!   end to end over HTTP on the embedded API server, or read-only against a real cluster.
//! - `cargo xtask demo-controller [--sets N]`: the `ConfigMapSet` controller of
//!   `examples/controller` on the embedded API server, two replicas behind a Lease, through
//!   faults and a killed leader, with progress lines; its validating webhook refuses an
//!   invalid set first.
//! - `cargo xtask serve [--addr 127.0.0.1:PORT] [--tls] [--max-streams N]`: the embedded API
//!   server alone, for any client; over TLS and HTTP/2 with `--tls` (it writes a kubeconfig
//!   with its CA and prints the path).
//! - `cargo xtask codegen [--check]`: regenerate (or check) the generated typed accessors.
//! - `cargo xtask compare-kopium [--crds DIR] [--out FILE] [--work DIR] [--only NAME]`: the table
//!   comparing informer-gen with kopium on a corpus of CRDs (`informer-gen/KOPIUM.md`).
//! - `cargo xtask kube-apiserver [--dir DIR]`: a real kube-apiserver and etcd on loopback, built
//!   from Kubernetes' Go modules (`tests/kube-apiserver/`); prints its kubeconfig.
//! - `cargo xtask bench [--quick] [--runs N] [--counts N,...] ...`: this project's informer
//!   against kube-rs and a decode floor on the embedded API server; writes `BENCHMARKS.md`.
//! - `cargo xtask soak --minutes N [--seed S]`: the chaos test (informers over HTTP under churn
//!   and faults) for N minutes in a release build; prints what was driven, injected and lost.
//! - `cargo xtask fuzz [--minutes N] [--target NAME]`: the fuzz targets (decoders, selectors,
//!   kubeconfig, error bodies, discovery, exec credentials, compact forms, CRD reader), built
//!   optimised, each for its share of N minutes.
//! - `cargo xtask release-check`: what a release needs: every crate meant for users packaged and
//!   built from its tarball, the README's first example built against those tarballs, docs as
//!   docs.rs builds them, and each crate checked with the Rust its `rust-version` names.
//! - `cargo xtask feature-sets [--check]`: writes (or checks) the README's table of the feature
//!   sets a program chooses between and how many crates each compiles, from `cargo tree`.
//! - `cargo xtask ci`: what CI checks (format, clippy, docs, tests, every Kubernetes version,
//!   a kube-rs program's build without informer-client's own HTTP stack, and `release-check`).

mod bench;
mod codegen;
mod compare;
mod demo;
mod demo_controller;
mod feature_sets;
mod fuzz;
mod kube_apiserver;
mod kube_only;
mod release;
mod soak;
mod widget;

use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <demo [--objects N] [--kubeconfig PATH] [--seconds N] | demo-controller [--sets N] | serve [--addr HOST:PORT] [--tls] [--max-streams N] | codegen [--check] | compare-kopium [--crds DIR] [--out FILE] [--work DIR] [--only NAME] | kube-apiserver [--dir DIR] | bench [--quick] [--runs N] [--counts N,...] (see bench --help) | soak --minutes N [--seed S] | fuzz [--minutes N] [--target NAME] | release-check | feature-sets [--check] | ci>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("demo") => demo::run(&args[1..]),
        Some("demo-controller") => demo_controller::run(&args[1..]),
        Some("serve") => serve(&args[1..]),
        Some("codegen") => codegen::run(&args[1..]),
        Some("compare-kopium") => compare::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("kube-apiserver") => kube_apiserver::run(&args[1..]),
        Some("soak") => soak::run(&args[1..]),
        Some("release-check") => release::check(),
        Some("feature-sets") => feature_sets::run(&args[1..]),
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

const SERVE_USAGE: &str = "usage: cargo xtask serve [--addr HOST:PORT] [--tls] [--max-streams N]";

fn serve(args: &[String]) -> Result<(), String> {
    let mut addr = "127.0.0.1:8080".to_owned();
    let mut config = embedded_apiserver::Config::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().cloned().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--addr" => addr = value("--addr")?,
            "--tls" => config = config.tls(true),
            "--max-streams" => {
                let n = value("--max-streams")?;
                let n = n.parse().map_err(|e| format!("--max-streams {n:?}: {e}"))?;
                config = config.max_concurrent_streams(n);
            }
            other => return Err(format!("unknown serve option {other:?}; {SERVE_USAGE}")),
        }
    }
    let addr: std::net::SocketAddr = addr.parse().map_err(|e| format!("--addr {addr:?}: {e}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("could not start the tokio runtime: {e}"))?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "warning: {addr} is reachable beyond this machine, and the embedded API server has \
             no authentication: anyone who reaches it can read and change every object"
        );
    }
    runtime.block_on(async {
        let server = config.addr(addr).start().await.map_err(|e| format!("serve {addr}: {e}"))?;
        println!("serving the embedded API server on {}", server.url());
        if server.ca_pem().is_some() {
            // The CA is new for each run: clients need this run's kubeconfig.
            let path = std::env::temp_dir().join(format!("xtask-serve-{}.kubeconfig", addr.port()));
            std::fs::write(&path, server.kubeconfig_yaml())
                .map_err(|e| format!("could not write {}: {e}", path.display()))?;
            println!("  kubeconfig (with the server's CA): {}", path.display());
            println!("  KUBECONFIG={} kubectl get namespaces", path.display());
        } else {
            println!("  kubectl --server {} get namespaces", server.url());
        }
        server.run().await.map_err(|e| format!("serve {addr}: {e}"))
    })
}

/// The Kubernetes versions k8s-openapi 0.29 offers; the libraries must build under each.
const K8S_VERSIONS: [&str; 5] = ["v1_33", "v1_34", "v1_35", "v1_36", "v1_37"];

fn ci() -> Result<(), String> {
    cargo(&["fmt", "--all", "--", "--check"], &[])?;
    cargo(&["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"], &[])?;
    cargo(&["doc", "--workspace", "--no-deps"], &[("RUSTDOCFLAGS", "-D warnings")])?;
    for version in K8S_VERSIONS {
        let feature = format!("k8s-openapi/{version}");
        let packages = [
            "--package",
            "informer-runtime",
            "--package",
            "informer-client",
            "--package",
            "informer-controller",
            "--package",
            "embedded-apiserver",
            "--package",
            "informer-webhook",
        ];
        cargo(&[&["check"][..], &packages, &["--features", &feature]].concat(), &[])?;
    }
    // A kube-rs program's build: no HTTP stack of informer-client's own.
    kube_only::check()?;
    // The README's table of feature sets and the crates each compiles.
    feature_sets::run(&["--check".to_owned()])?;
    // Packages, the README's crate from them, docs as docs.rs builds them, the MSRV.
    release::check()?;
    release::forget_builds()?;
    cargo(&["xtask", "codegen", "--check"], &[])?;
    // Before the tests: `cargo test --workspace` may relink this very binary.
    serve_smoke()?;
    // One real API server for the whole test run; it stops when `server` drops.
    let (server, endpoints) = kube_apiserver::start_for_tests()?;
    let tested = cargo(
        &["test", "--workspace"],
        &[
            (informer_tests::kube_apiserver::ENDPOINTS_ENV, &endpoints),
            (informer_tests::full_gate::ENV, "1"),
        ],
    );
    drop(server);
    tested?;
    cargo(&["xtask", "demo", "--objects", "1000"], &[("KUBECONFIG", "")])?;
    cargo(&["xtask", "demo-controller"], &[])
}

/// `cargo xtask serve` as a user runs it, checked by kubectl: the protocol tests cover the
/// server in depth; this proves the command itself serves it.
fn serve_smoke() -> Result<(), String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let addr = format!("127.0.0.1:{port}");
    let exe = std::env::current_exe().map_err(|e| format!("current exe: {e}"))?;
    // If cargo relinked this binary meanwhile, Linux names the running one "... (deleted)";
    // the path itself holds the new build of the same sources.
    let exe = exe
        .to_str()
        .and_then(|path| path.strip_suffix(" (deleted)"))
        .map_or(exe.clone(), std::path::PathBuf::from);
    eprintln!("+ xtask serve --addr {addr} (kubectl smoke test)");
    let mut server = Command::new(exe)
        .args(["serve", "--addr", &addr])
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("could not start xtask serve: {e}"))?;
    let result = kubectl_against(&addr);
    let _ = server.kill();
    let _ = server.wait();
    result
}

fn kubectl_against(addr: &str) -> Result<(), String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(addr).is_err() {
        if std::time::Instant::now() > deadline {
            return Err(format!("xtask serve did not listen on {addr} within 30 s"));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let server = format!("--server=http://{addr}");
    let pod =
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"smoke","namespace":"default"}}"#;
    let dir = std::env::temp_dir().join(format!("xtask-serve-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let manifest = dir.join("pod.json");
    std::fs::write(&manifest, pod).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let manifest = manifest.display().to_string();
    let cache = format!("--cache-dir={}", dir.join("cache").display());
    let steps: [&[&str]; 5] = [
        &["get", "namespaces"],
        &["create", "-f", &manifest],
        &["get", "pods", "-o", "json"],
        &[
            "patch",
            "pod",
            "smoke",
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"labels":{"smoke":"yes"}}}"#,
        ],
        &["delete", "pod", "smoke"],
    ];
    for step in steps {
        let output = Command::new("kubectl")
            .arg(&server)
            .arg(&cache)
            .args(step)
            .env("KUBECONFIG", "/dev/null")
            .output()
            .map_err(|e| format!("could not run kubectl: {e}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(format!("kubectl {} failed: {stderr}", step.join(" ")));
        }
        eprintln!("  kubectl {}: ok ({} lines)", step.join(" "), stdout.lines().count());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Runs a cargo command that builds nothing (`metadata`, `tree`) and returns what it printed on
/// standard output; a failure carries the command line and cargo's standard error.
pub(crate) fn cargo_stdout(args: &[&str]) -> Result<String, String> {
    let cargo_bin = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(&cargo_bin);
    command.args(args);
    without_package_variables(&mut command);
    let output = command.output().map_err(|e| format!("could not run {cargo_bin}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo {} failed: {}\n{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
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

/// Removes the package variables `cargo run` gave this process from a cargo `command`: build
/// scripts (ring's, through cc) rerun when those change, so a plain `cargo build` and the
/// command would keep rebuilding each other's dependencies.
pub(crate) fn without_package_variables(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || matches!(&*name, "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE")
        {
            command.env_remove(&*name);
        }
    }
}
