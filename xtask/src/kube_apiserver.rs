//! `cargo xtask kube-apiserver [HARNESS FLAGS]`: a real kube-apiserver and etcd on loopback, by
//! hand, and the one `cargo xtask ci` shares with the test suite.
//!
//! The Go program in `tests/kube-apiserver/` is built with the machine's Go (Go's module and
//! build caches make every build after the first cheap), then run in the foreground: it prints
//! where the server and its kubeconfig are and stops on Ctrl-C or when its stdin closes.

use std::process::Command;
use std::time::Instant;

use informer_tests::kube_apiserver::{self, KubeApiServer};

/// Builds the harness and runs it with `args` (for example `--dir DIR`), in the foreground.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let binary = build()?;
    let status = Command::new(&binary)
        .args(args)
        .status()
        .map_err(|e| format!("running {}: {e}", binary.display()))?;
    if status.success() { Ok(()) } else { Err(format!("{} exited: {status}", binary.display())) }
}

/// Builds the harness (saying how long it took) and starts a server for the test suite.
pub(crate) fn start_for_tests() -> Result<(KubeApiServer, String), String> {
    build()?;
    let started = Instant::now();
    let server = KubeApiServer::start()?;
    eprintln!(
        "  kube-apiserver ready at {} in {:.1} s (log: {})",
        server.endpoints().server,
        started.elapsed().as_secs_f64(),
        server.endpoints().log.display()
    );
    let endpoints = serde_json::to_string(server.endpoints())
        .map_err(|e| format!("encoding the harness's endpoints: {e}"))?;
    Ok((server, endpoints))
}

fn build() -> Result<std::path::PathBuf, String> {
    eprintln!(
        "+ go build tests/kube-apiserver (kube-apiserver and etcd from Kubernetes' Go modules)"
    );
    let started = Instant::now();
    let binary = kube_apiserver::build()?;
    eprintln!("  built {} in {:.1} s", binary.display(), started.elapsed().as_secs_f64());
    Ok(binary)
}
