//! The size of each tool's output for the whole corpus: the lines and types it generated, and the
//! time its crates take to compile (their dependencies built beforehand), so that the report can
//! put informer-gen with and without Kubernetes' own types beside kopium.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use super::process::{failure_line, scratch_cargo};

/// One tool's output over the corpus.
pub(super) struct Size {
    /// CRD files it generated code for.
    pub(super) files: usize,
    /// Lines of the code it printed, summed over those files.
    pub(super) lines: usize,
    /// `struct` and `enum` definitions in that code: the types a user of it gets.
    pub(super) types: usize,
    /// The compile time of its crates, or why it was not measured.
    pub(super) compile: Result<CompileTime, String>,
}

/// The time to compile one tool's crates, dependencies excluded.
pub(super) struct CompileTime {
    /// Crates compiled: one per file it generated code for, those that fail included.
    pub(super) crates: usize,
    /// CPU seconds (user and system) of cargo and the compilers it ran; `None` where the
    /// operating system does not say (it is read from Linux's `/proc`).
    pub(super) cpu_seconds: Option<f64>,
    /// Wall-clock seconds, which depend on the machine's other load.
    pub(super) wall_seconds: f64,
}

/// The `struct` and `enum` items `code` defines (one per line that starts one, visibility
/// included): how many types a user of the generated code meets.
pub(super) fn count_types(code: &str) -> usize {
    code.lines().filter(|line| defines_type(line)).count()
}

fn defines_type(line: &str) -> bool {
    let mut rest = line.trim_start();
    if let Some(after) = rest.strip_prefix("pub") {
        rest = after.trim_start();
        // `pub(crate)`, `pub(super)`, `pub(in path)`.
        if let Some(after) = rest.strip_prefix('(') {
            let Some(end) = after.find(')') else { return false };
            rest = after[end + 1..].trim_start();
        }
    }
    let Some(name) = rest.strip_prefix("struct ").or_else(|| rest.strip_prefix("enum ")) else {
        return false;
    };
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
}

/// Removes what cargo built for `packages` of the scratch workspace in `dir`, so that the next
/// build compiles them however often the comparison ran before, and only them.
pub(super) fn clean(dir: &Path, target: &Path, packages: &[&str]) -> Result<(), String> {
    let mut args = vec!["clean"];
    args.extend(packages.iter().flat_map(|p| ["--package", p]));
    let output = scratch_cargo(&args, dir, target)?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("cargo clean failed: {}", failure_line(&output)))
    }
}

/// Times what runs between [`Stopwatch::start`] and [`Stopwatch::stop`]: wall-clock time, and
/// the CPU time of the child processes waited for in between.
pub(super) struct Stopwatch {
    started: Instant,
    cpu: Option<f64>,
}

impl Stopwatch {
    pub(super) fn start() -> Stopwatch {
        Stopwatch { started: Instant::now(), cpu: children_cpu_seconds() }
    }

    /// The time since [`Stopwatch::start`], for `crates` crates.
    pub(super) fn stop(&self, crates: usize) -> CompileTime {
        let wall_seconds = self.started.elapsed().as_secs_f64();
        let cpu_seconds =
            children_cpu_seconds().zip(self.cpu).map(|(after, before)| after - before);
        CompileTime { crates, cpu_seconds, wall_seconds }
    }
}

/// The CPU seconds (user and system) of this process's children that have been waited for,
/// theirs included: fields 16 and 17 (`cutime`, `cstime`) of `/proc/self/stat`, in clock ticks.
fn children_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; the fields after it are numbers.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // `fields[0]` is field 3 (the state).
    let ticks = |field: usize| fields.get(field - 3)?.parse::<f64>().ok();
    Some((ticks(16)? + ticks(17)?) / clock_ticks_per_second())
}

/// `getconf CLK_TCK`, or 100, its value on every Linux machine of the last decades.
fn clock_ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .and_then(|text| text.trim().parse::<f64>().ok())
        .filter(|ticks| *ticks > 0.0)
        .unwrap_or(100.0)
}

#[cfg(test)]
mod tests {
    use super::{Stopwatch, count_types};

    #[test]
    fn the_stopwatch_counts_the_cpu_time_of_children_waited_for() {
        let stopwatch = Stopwatch::start();
        // A child that spends some CPU time (a shell loop), waited for.
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(status.success());
        let time = stopwatch.stop(1);
        assert_eq!(time.crates, 1);
        assert!(time.wall_seconds > 0.0);
        if cfg!(target_os = "linux") {
            let cpu = time.cpu_seconds.unwrap();
            assert!(cpu > 0.0 && cpu <= time.wall_seconds * 2.0 + 0.1, "{cpu}");
        }
    }

    #[test]
    fn counts_struct_and_enum_items_of_any_visibility() {
        let code = "pub struct A {\n}\n    pub(crate) enum B { X }\nstruct C;\n\
                    pub(in crate::x) struct D;\n// struct E in a comment\n\
                    pub type F = A;\nlet structure = 1;\n";
        assert_eq!(count_types(code), 4);
    }
}
