//! The machine a benchmark ran on, for the report.

use std::process::Command;

/// What the report says about the machine.
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    pub(crate) cpus: usize,
    pub(crate) cpu_model: String,
    pub(crate) memory_gib: f64,
    pub(crate) kernel: String,
    pub(crate) rustc: String,
    pub(crate) go: Option<String>,
}

impl Machine {
    /// Reads `/proc` and asks `rustc` (and `go`, when the client-go peer runs).
    pub(crate) fn probe(with_go: bool) -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or_else(|| "unknown".to_owned(), |(_, m)| m.trim().to_owned());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_kib: f64 = meminfo
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0.0);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or_else(|_| "unknown".to_owned(), |k| k.trim().to_owned());
        Self {
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            cpu_model,
            memory_gib: memory_kib / 1024.0 / 1024.0,
            kernel,
            rustc: version("rustc", &["--version"]),
            go: with_go.then(|| version("go", &["version"])),
        }
    }
}

fn version(program: &str, args: &[&str]) -> String {
    Command::new(program).args(args).output().ok().filter(|o| o.status.success()).map_or_else(
        || format!("{program}: unknown"),
        |o| String::from_utf8_lossy(&o.stdout).trim().to_owned(),
    )
}
