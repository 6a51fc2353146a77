//! The report: the Markdown table of every tool's outcome on every CRD file, with totals and
//! notes.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use super::evaluate::{Outcome, ToolRow, plural};
use super::inputs::Input;
use super::size::Size;
use super::tools::Tool;

/// Longest failure reason kept in a table cell.
const REASON_CHARS: usize = 90;

pub(super) struct Report<'a> {
    pub(super) inputs: &'a [Input],
    pub(super) columns: &'a [(&'a dyn Tool, Vec<ToolRow>, Size)],
    pub(super) crds: &'a Path,
    /// The workspace root: the table names a corpus inside the repository relative to it, so
    /// that no machine's absolute path ends up in a committed file.
    pub(super) root: &'a Path,
    pub(super) seconds: f64,
}

impl Report<'_> {
    pub(super) fn markdown(&self, args: &[String]) -> String {
        let mut md = String::new();
        let tools: Vec<&str> = self.columns.iter().map(|(tool, _, _)| tool.name()).collect();
        let _ = writeln!(md, "# informer-gen and kopium on the CRD corpus\n");
        let _ = writeln!(
            md,
            "Written by `cargo xtask compare-kopium{}` on {} ({}, {} CPUs) in {:.0} s, from {} \
             CRD files in `{}`. Do not edit: run the command again.\n",
            args.iter().fold(String::new(), |line, arg| line + " " + arg),
            today(),
            machine(),
            std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            self.seconds,
            self.inputs.len(),
            self.crds.strip_prefix(self.root).unwrap_or(self.crds).display(),
        );
        self.sizes(&mut md);
        let _ = writeln!(md, "## Each CRD file\n");
        let _ = writeln!(
            md,
            "For each tool and file: **gen** — the tool exits 0; **build** — its output \
             compiles (with its warning count); **rt** — every sample object of the generated \
             versions deserialises into the root type and serialises back to equal JSON \
             (numbers compared by value). A dash means the step did not run.\n"
        );

        let _ = write!(md, "| CRD file |");
        for tool in &tools {
            let _ = write!(md, " {tool} gen | {tool} build | {tool} rt |");
        }
        let _ = write!(md, "\n|---|");
        for _ in &tools {
            md.push_str("---|---|---|");
        }
        md.push('\n');
        for (i, input) in self.inputs.iter().enumerate() {
            let _ = write!(md, "| `{}` |", input.file);
            for (_, rows, _) in self.columns {
                let row = &rows[i];
                for outcome in [&row.generates, &row.compiles, &row.roundtrips] {
                    let _ = write!(md, " {} |", cell(outcome));
                }
            }
            md.push('\n');
        }
        let _ = write!(md, "| **total** ({}) |", self.inputs.len());
        for (_, rows, _) in self.columns {
            let count = |step: fn(&ToolRow) -> &Outcome| {
                rows.iter().filter(|r| matches!(step(r), Outcome::Pass(_))).count()
            };
            let warnings: usize = rows.iter().map(|r| r.warnings).sum();
            let _ = write!(
                md,
                " **{}** | **{}** ({}) | **{}** |",
                count(|r| &r.generates),
                count(|r| &r.compiles),
                plural(warnings, "warning"),
                count(|r| &r.roundtrips)
            );
        }
        md.push_str("\n\nNotes:\n\n");
        for (tool, _, _) in self.columns {
            let _ = writeln!(md, "- **{}**: {}", tool.name(), tool.describe());
        }
        let unread: Vec<String> = self
            .inputs
            .iter()
            .filter_map(|i| i.crd.as_ref().err().map(|e| format!("`{}` ({})", i.file, short(e))))
            .collect();
        let _ = writeln!(
            md,
            "- Samples come from `informer_gen::sample` for every version of each CRD; each \
             tool is judged on the versions it generated. Crates are built in one Cargo \
             workspace per tool with `--keep-going`, one crate per CRD file, so one file's \
             errors do not hide another's; warnings are rustc's defaults (no clippy). \
             Sample values follow the schema alone (see `informer_gen::sample`): a field the \
             schema types as a plain string gets a plain string even where its project always \
             writes, say, a timestamp."
        );
        if !unread.is_empty() {
            let _ = writeln!(md, "- informer-gen could not read: {}.", unread.join(", "));
        }
        md
    }
}

impl Report<'_> {
    /// The size table: each tool's generated lines, types and compile time over the corpus, and
    /// how informer-gen's output changes with Kubernetes' own types (before: `--no-k8s-types`).
    fn sizes(&self, md: &mut String) {
        let _ = writeln!(md, "## The generated code, before and after Kubernetes' own types\n");
        let _ = writeln!(
            md,
            "The whole corpus, in one run. **lines** and **types** (`struct` and `enum` \
             definitions) count each tool's output for every CRD file it generated; \
             **compile** is the time to build the crates holding that output once their \
             dependencies are built (cleaned and built again, timed alone): CPU seconds (user \
             and system, of cargo and every rustc it ran), and wall-clock seconds, which the \
             machine's other load sways. **Before** is informer-gen with `--no-k8s-types` (a \
             struct for every object schema); **after** its default, where a schema that is \
             one of Kubernetes' own types becomes k8s-openapi's type. kopium generates the \
             storage version alone, informer-gen every served version.\n"
        );
        let _ = writeln!(
            md,
            "| tool | files generated | lines | types | crates compiled | compile CPU s | \
             compile wall s |\n|---|---|---|---|---|---|---|"
        );
        for (tool, _, size) in self.columns {
            let label = match tool.slug() {
                "informer-gen" => format!("{} (after)", tool.name()),
                "informer-gen-no-k8s-types" => format!("{} (before)", tool.name()),
                _ => tool.name().to_owned(),
            };
            let (crates, cpu, wall) = match &size.compile {
                Ok(time) => (
                    time.crates.to_string(),
                    time.cpu_seconds.map_or_else(|| "–".to_owned(), |s| format!("{s:.0}")),
                    format!("{:.0}", time.wall_seconds),
                ),
                Err(why) => (format!("✗ {}", escape(&short(why))), "–".to_owned(), "–".to_owned()),
            };
            let _ = writeln!(
                md,
                "| {label} | {} | {} | {} | {crates} | {cpu} | {wall} |",
                size.files,
                thousands(size.lines),
                thousands(size.types)
            );
        }
        let size_of = |slug: &str| {
            self.columns.iter().find(|(tool, _, _)| tool.slug() == slug).map(|(_, _, s)| s)
        };
        if let (Some(before), Some(after)) =
            (size_of("informer-gen-no-k8s-types"), size_of("informer-gen"))
        {
            let cpu = |size: &Size| size.compile.as_ref().ok().and_then(|t| t.cpu_seconds);
            #[allow(clippy::cast_precision_loss, reason = "counts far below 2^52")]
            let mut changes = vec![
                format!("lines {}", change(before.lines as f64, after.lines as f64)),
                format!("types {}", change(before.types as f64, after.types as f64)),
            ];
            if let (Some(b), Some(a)) = (cpu(before), cpu(after)) {
                changes.push(format!("compile CPU time {}", change(b, a)));
            }
            let _ = writeln!(md, "\nAfter against before: {}.", changes.join(", "));
        }
        md.push('\n');
    }
}

/// The change from `before` to `after` in percent, signed (`−38 %`).
fn change(before: f64, after: f64) -> String {
    if before <= 0.0 {
        return "–".to_owned();
    }
    let percent = (after - before) / before * 100.0;
    let sign = if percent < 0.0 { "−" } else { "+" };
    format!("{sign}{:.0} %", percent.abs())
}

/// `n` with a thin space between groups of three digits (`196 186`).
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{202f}');
        }
        out.push(c);
    }
    out
}

fn cell(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Pass(detail) if detail.is_empty() => "✓".to_owned(),
        Outcome::Pass(detail) => format!("✓ {}", escape(detail)),
        Outcome::Fail(why) => format!("✗ {}", escape(&short(why))),
        Outcome::NotRun(why) if why.is_empty() => "–".to_owned(),
        Outcome::NotRun(why) => format!("– {}", escape(why)),
    }
}

/// A reason on one line and at most [`REASON_CHARS`] characters.
fn short(reason: &str) -> String {
    let line = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= REASON_CHARS {
        line
    } else {
        let cut: String = line.chars().take(REASON_CHARS - 1).collect();
        format!("{cut}…")
    }
}

fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('<', "&lt;").replace('>', "&gt;")
}

fn today() -> String {
    command_line("date", &["-u", "+%Y-%m-%d"]).unwrap_or_else(|| "an unknown date".to_owned())
}

fn machine() -> String {
    command_line("uname", &["-m"]).unwrap_or_else(|| std::env::consts::ARCH.to_owned())
}

/// The first line `program args` prints, if it succeeds.
fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    let stdout = String::from_utf8(output.stdout).ok()?;
    output.status.success().then(|| stdout.lines().next().unwrap_or_default().trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::{change, thousands};

    #[test]
    fn changes_are_signed_percentages_of_the_before() {
        assert_eq!(change(200.0, 150.0), "−25 %");
        assert_eq!(change(100.0, 123.0), "+23 %");
        assert_eq!(change(0.0, 5.0), "–");
    }

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(1_000), "1\u{202f}000");
        assert_eq!(thousands(196_186), "196\u{202f}186");
        assert_eq!(thousands(1_234_567), "1\u{202f}234\u{202f}567");
    }
}
