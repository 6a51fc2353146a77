//! `cargo xtask bench`: this project's informer against kube-rs and a decode floor (and
//! client-go, when Go is installed), each in its own process, on the embedded API server over
//! loopback HTTP; medians, ratios from the same run, `BENCHMARKS.md` and a plot.
//!
//! The peers and the server are the binaries of the `informer-bench` crate (`bench/`), built
//! `--release`; the peer protocol is in that crate's docs. The server holds pods made from the
//! templates in `informer-runtime/tests/fixtures`, loaded in increasing counts: at each count the
//! scenarios that need it run (sync, the stripping and metadata-only syncs, relist, lister, then
//! churn, which modifies pods), every peer in turn, `--runs` times.
//!
//! `--scenarios scale` (not in the default set) runs [`scale`] instead, against a TLS and
//! HTTP/2 server of its own, and rewrites only its section of the report.

// Counts, sizes and durations of a benchmark are far below 2^52: `as f64` is exact here.
#![allow(clippy::cast_precision_loss)]

mod machine;
mod options;
mod plot;
mod process;
mod report;
mod results;
mod scale;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use self::options::{COMPACT_RECENT, Options, VARIANTS};
use self::process::{Outcome, PeerCommand, Server, prime_memory, run_peer};
use self::results::{Case, Results, Sample};

/// The pod templates, relative to the workspace root.
const OBJECTS: &str = "informer-runtime/tests/fixtures";
/// A template the benchmark cannot do without.
const TEMPLATE: &str = "kind-v1-36-pod-coredns.json";

/// Runs `cargo xtask bench ARGS`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let options = Options::parse(args)?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("xtask has no parent directory")?
        .to_path_buf();
    let objects = root.join(OBJECTS);
    if !objects.join(TEMPLATE).exists() {
        return Err(format!(
            "{} is absent (the repository's fixtures are incomplete): the benchmark makes its \
             pods from the real pod templates there; nothing was run",
            objects.join(TEMPLATE).display()
        ));
    }
    if let Some(raw) = options.rerender.clone() {
        return rerender(&options, args, &root, &raw);
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    // The system allocator's peers get a target directory of their own, so that switching
    // back and forth never rebuilds the measured ones.
    let peers_target =
        if options.system_allocator { target.join("system-allocator") } else { target.clone() };
    let release = peers_target.join("release");
    build_rust_peers(&root, options.system_allocator.then_some(&*peers_target))?;
    let mut skipped = Vec::new();
    let mut peers: Vec<(String, PathBuf)> = Vec::new();
    for peer in &options.peers {
        let exe = match peer.as_str() {
            "informer" => Ok(release.join("peer-informer")),
            // The same informer, over kube-rs's client as its source.
            "informer-kube" => Ok(release.join("peer-informer-kube")),
            "kube-rs" => Ok(release.join("peer-kube")),
            "floor" => Ok(release.join("peer-floor")),
            "client-go" => build_client_go(&root, &release),
            other => Err(format!(
                "unknown peer (known: informer, informer-kube, kube-rs, floor, client-go): \
                     {other}"
            )),
        };
        match exe {
            Ok(exe) => peers.push((peer.clone(), exe)),
            Err(why) => {
                eprintln!("xtask bench: peer {peer} skipped: {why}");
                skipped.push((peer.clone(), why));
            }
        }
    }
    let mut options = options;
    options.peers.retain(|p| peers.iter().any(|(name, _)| name == p));

    let machine = machine::Machine::probe(peers.iter().any(|(p, _)| p == "client-go"));
    let mut results = Results::default();
    let mut measured = Ok(());
    if options.runs_main() {
        let history = options.churn_events + 10_000;
        let mut server = Server::start(&release.join("bench-server"), &objects, history, &[])?;
        eprintln!("xtask bench: server at {}", server.url);
        let primer = release.join("prime-memory");
        measured = measure(&options, &peers, &primer, &mut server, &mut results);
    }
    if measured.is_ok() && options.runs_scenario(options::SCALE) {
        measured = scale::measure(&options, &peers, &release, &objects, &target, &mut results);
    }
    if let Err(error) = &measured {
        eprintln!("xtask bench: stopped early, reporting what was measured: {error}");
    }

    let report_path = write_report(&options, args, &root, &machine, &results, &skipped)?;
    let raw = write_raw(&options, &target, &results);
    eprintln!("xtask bench: wrote {} (raw runs: {})", report_path.display(), raw.display());
    measured.map_err(|e| format!("the benchmark stopped early ({e}); partial report written"))?;
    let failed = results.samples.iter().filter(|s| s.outcome.is_err()).count();
    if failed > 0 {
        return Err(format!("{failed} peer run(s) failed; see {}", report_path.display()));
    }
    Ok(())
}

/// Writes the report and its plot; returns the report's path.
fn write_report(
    options: &Options,
    args: &[String],
    root: &Path,
    machine: &machine::Machine,
    results: &Results,
    skipped: &[(String, String)],
) -> Result<PathBuf, String> {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let (report_path, plot_path) = outputs(options, root, &target);
    if let Some(dir) = report_path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let plot_name = plot_path.file_name().and_then(|n| n.to_str()).unwrap_or("BENCHMARKS.svg");
    let panels = sync_panels(options, results);
    let plotted = panels.iter().any(|p| p.series.iter().any(|s| !s.points.is_empty()));
    if plotted {
        std::fs::write(&plot_path, plot::svg(&panels))
            .map_err(|e| format!("{}: {e}", plot_path.display()))?;
    }
    let flags: Vec<&str> =
        args.iter().map(String::as_str).take_while(|a| *a != "--rerender").collect();
    let command = format!("cargo xtask bench {}", flags.join(" ")).trim_end().to_owned();
    let context = report::Context {
        options,
        command: &command,
        machine,
        results,
        plot: plotted.then_some(plot_name),
        skipped,
    };
    // A run of some scenarios rewrites only their part: the main report, the scale section.
    let existing = std::fs::read_to_string(&report_path).ok();
    let main = options.runs_main().then(|| report::render(&context));
    let scale = options.runs_scenario(options::SCALE).then(|| scale::render(&context));
    std::fs::write(&report_path, scale::splice(existing.as_deref(), main, scale))
        .map_err(|e| format!("{}: {e}", report_path.display()))?;
    Ok(report_path)
}

/// `--rerender FILE`: the report of an earlier run from its raw results, for a report whose
/// layout changed since; the flags must be those of that run (they name its settings).
fn rerender(options: &Options, args: &[String], root: &Path, raw: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(raw).map_err(|e| format!("{}: {e}", raw.display()))?;
    let samples: Vec<serde_json::Value> =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", raw.display()))?;
    let mut results = Results::default();
    for sample in samples {
        let scenario = options::SCENARIOS
            .into_iter()
            .chain(scale::CASES)
            .find(|s| sample["scenario"] == *s)
            .ok_or_else(|| format!("{}: unknown scenario in {sample}", raw.display()))?;
        let number = |key: &str| {
            sample[key].as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or_default()
        };
        let case = Case { scenario, objects: number("objects"), handlers: number("handlers") };
        let outcome = &sample["outcome"];
        let outcome = if let Some(error) = outcome["error"].as_str() {
            Err(error.to_owned())
        } else if let Some(why) = outcome["unsupported"].as_str() {
            Ok(Outcome::Unsupported(why.to_owned()))
        } else {
            Ok(Outcome::Result(outcome.clone()))
        };
        let peer = sample["peer"].as_str().unwrap_or_default().to_owned();
        results.samples.push(Sample { case, peer, outcome });
    }
    let mut options = options.clone();
    options.peers.retain(|p| results.samples.iter().any(|s| &s.peer == p));
    let with_go = options.peers.iter().any(|p| p == "client-go");
    let machine = machine::Machine::probe(with_go);
    let report = write_report(&options, args, root, &machine, &results, &[])?;
    eprintln!("xtask bench: re-rendered {} from {}", report.display(), raw.display());
    Ok(())
}

/// Writes every run's figures as JSON under `target/bench/` (a profiled run's under
/// `target/bench/profiled/`, apart from the last measured run's, which `--rerender` reads), for
/// a look beyond the medians.
fn write_raw(options: &Options, target: &Path, results: &Results) -> PathBuf {
    let raw = if options.profiled() {
        target.join("bench/profiled/results.json")
    } else {
        target.join("bench/results.json")
    };
    let samples: Vec<serde_json::Value> = results
        .samples
        .iter()
        .map(|s| {
            let outcome = match &s.outcome {
                Ok(Outcome::Result(value)) => value.clone(),
                Ok(Outcome::Unsupported(why)) => json!({"unsupported": why}),
                Err(error) => json!({"error": error}),
            };
            json!({"scenario": s.case.scenario, "objects": s.case.objects,
                   "handlers": s.case.handlers, "peer": s.peer, "outcome": outcome})
        })
        .collect();
    if let Some(dir) = raw.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(&raw, serde_json::to_string_pretty(&samples).unwrap_or_default());
    raw
}

/// Where the report and the plot go: `--out`, else `BENCHMARKS.md` at the root (quick mode:
/// under `target/bench/`, and a profiled run's under `target/bench/profiled/`, so that neither
/// touches the committed report).
fn outputs(options: &Options, root: &Path, target: &Path) -> (PathBuf, PathBuf) {
    let report = match (&options.out, options.quick) {
        (Some(out), _) => out.clone(),
        (None, _) if options.profiled() => target.join("bench/profiled/BENCHMARKS.md"),
        (None, true) => target.join("bench/BENCHMARKS.md"),
        (None, false) => root.join("BENCHMARKS.md"),
    };
    let plot = report.with_extension("svg");
    (report, plot)
}

/// Builds the Rust peers `--release`; with `system_allocator_target`, with the system allocator
/// into that target directory.
fn build_rust_peers(root: &Path, system_allocator_target: Option<&Path>) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut args = vec!["build", "--release", "-p", "informer-bench", "--bins"];
    let target_dir;
    if let Some(target) = system_allocator_target {
        target_dir = target.display().to_string();
        args.extend(["--features", "system-allocator", "--target-dir", &target_dir]);
    }
    eprintln!("+ cargo {}", args.join(" "));
    let mut command = Command::new(&cargo);
    command.args(&args).current_dir(root);
    crate::without_package_variables(&mut command);
    let status = command.status().map_err(|e| format!("could not run {cargo}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("building the peers failed: {status}")) }
}

/// Builds the client-go peer if its module and a Go toolchain are there.
fn build_client_go(root: &Path, release: &Path) -> Result<PathBuf, String> {
    let module = root.join("bench/client-go");
    if !module.join("go.mod").exists() {
        return Err(format!("{} is absent", module.join("go.mod").display()));
    }
    let exe = release.join("peer-client-go");
    eprintln!("+ go build -o {} . (in {})", exe.display(), module.display());
    let status = Command::new("go")
        .args(["build", "-o"])
        .arg(&exe)
        .arg(".")
        .current_dir(&module)
        .env("GOTOOLCHAIN", "local")
        .status()
        .map_err(|e| format!("no Go toolchain (go build): {e}"))?;
    if status.success() { Ok(exe) } else { Err(format!("go build failed: {status}")) }
}

/// Every object count the server must hold, in increasing order, with the cases run there.
fn plan(options: &Options) -> Vec<(usize, Vec<Case>)> {
    let mut counts: Vec<usize> = Vec::new();
    let wants = |name: &str| options.runs_scenario(name);
    if wants("sync") {
        counts.extend(&options.counts);
    }
    if VARIANTS.iter().any(|v| wants(v)) {
        counts.extend(&options.variant_counts);
    }
    if CHURNS.iter().any(|c| wants(c)) {
        counts.push(options.churn_objects);
    }
    if wants("relist") || wants("compact-relist") {
        counts.push(options.relist_objects);
    }
    if wants("lister") || wants("lister-compact") {
        counts.push(options.lister_objects);
    }
    counts.sort_unstable();
    counts.dedup();
    counts
        .into_iter()
        .map(|objects| {
            let case = |scenario, handlers| Case { scenario, objects, handlers };
            let mut cases = Vec::new();
            if wants("sync") && options.counts.contains(&objects) {
                cases.push(case("sync", 1));
            }
            for variant in VARIANTS {
                if wants(variant) && options.variant_counts.contains(&objects) {
                    cases.push(case(variant, 1));
                }
            }
            for relist in RELISTS {
                if wants(relist) && options.relist_objects == objects {
                    cases.push(case(relist, 1));
                }
            }
            for lister in ["lister", "lister-compact"] {
                if wants(lister) && options.lister_objects == objects {
                    cases.push(case(lister, 1));
                }
            }
            // Last: it modifies the pods.
            for churn in CHURNS {
                if wants(churn) && options.churn_objects == objects {
                    let mut handlers = options.handlers.clone();
                    handlers.sort_unstable();
                    handlers.dedup();
                    if !handlers.contains(&1) {
                        handlers.insert(0, 1);
                    }
                    cases.extend(handlers.into_iter().map(|h| case(churn, h)));
                }
            }
            (objects, cases)
        })
        .collect()
}

/// The churn scenarios: every peer with full objects (`churn`; this project keeping
/// managedFields), and this project's informer as configured by default, skipping them while
/// decoding (`churn-defaults`; the others' defaults keep them, which `churn` measures).
/// `compact-churn`: this project's informer in compact storage, skipping managedFields.
/// `reconcile`, `reconcile-compact`: `churn-defaults` and `compact-churn` with a reconcile
/// loop behind each handler, which reads every modified pod back from the lister by its key
/// (`--reconcile`): what a controller's reads cost in compact storage.
pub(crate) const CHURNS: [&str; 5] =
    ["churn", "churn-defaults", "compact-churn", "reconcile", "reconcile-compact"];

/// The relist scenarios: every peer (`relist`), and this project's informer in compact storage
/// (`compact-relist`).
pub(crate) const RELISTS: [&str; 2] = ["relist", "compact-relist"];

/// Peers that register handlers, and so run churn once per handler count.
fn has_handlers(peer: &str) -> bool {
    matches!(peer, "informer" | "informer-kube" | "client-go")
}

/// Runs every case; what was measured stays in `results` when the server fails half-way.
fn measure(
    options: &Options,
    peers: &[(String, PathBuf)],
    primer: &Path,
    server: &mut Server,
    results: &mut Results,
) -> Result<(), String> {
    let long = Duration::from_secs(options.timeout_s.max(600));
    let timeout = Duration::from_secs(options.timeout_s);
    let mut marker = 0;
    for (objects, cases) in plan(options) {
        let loaded = server.command(&format!("load {objects}"), long)?;
        server.command("warm", long)?;
        eprintln!("xtask bench: {objects} pods loaded in {} ms", loaded["ms"]);
        for case in &cases {
            // Pages of `resourceVersion=0` lists too, for this case only.
            let paged = options::paged(case.scenario);
            if paged {
                server.command("paginate on", long)?;
            }
            for run in 1..=options.runs {
                for (peer, exe) in peers {
                    if case.handlers != 1 && !has_handlers(peer) {
                        continue;
                    }
                    marker += 1;
                    let marker_name = format!("bench-marker-{marker}");
                    // Only this project's informer has a compact cache to list from, or differs
                    // by default from what `churn` runs.
                    let ours_only = options::OURS_ONLY.contains(&case.scenario);
                    if ours_only && peer != report::OURS {
                        continue;
                    }
                    let args = peer_args(options, server, case, peer, &marker_name);
                    prime_memory(primer, case.objects)?;
                    let wrap = options.wrap_for(peer, case, run);
                    let command = PeerCommand { name: peer, exe, args: &args, wrap: &wrap };
                    let outcome = run_peer(&command, timeout, || match case.scenario {
                        "churn" | "churn-defaults" | "compact-churn" | "reconcile"
                        | "reconcile-compact" => {
                            server.command("wait-watches 1", long)?;
                            server.command(&format!("churn {}", options.churn_events), long)
                        }
                        "relist" | "compact-relist" => {
                            server.command("wait-watches 1", long)?;
                            server.command(&format!("relist {marker_name}"), long)
                        }
                        _ => Ok(serde_json::Value::Null),
                    });
                    let outcome = outcome.map(|o| churn_rate(o, options.churn_events));
                    if RELISTS.contains(&case.scenario) {
                        server.command(&format!("unmark {marker_name}"), long)?;
                    }
                    let handlers = if CHURNS.contains(&case.scenario) {
                        format!(" {} handler(s)", case.handlers)
                    } else {
                        String::new()
                    };
                    eprintln!(
                        "  {} {} pods{handlers} run {run}: {peer}: {}",
                        case.scenario,
                        case.objects,
                        summary(&outcome)
                    );
                    let sample = Sample { case: case.clone(), peer: peer.clone(), outcome };
                    results.samples.push(sample);
                }
            }
            if paged {
                server.command("paginate off", long)?;
            }
        }
        if cases.iter().any(|c| CHURNS.contains(&c.scenario)) {
            // The ceiling of every churn figure: the server replaying the last churn's events
            // (still in its history now, not after a larger load) to a reader that does not
            // decode them.
            let case = Case { scenario: "churn", objects, handlers: 0 };
            for _ in 0..options.runs {
                let outcome = server
                    .command(&format!("replay {}", options.churn_events), long)
                    .map(Outcome::Result);
                eprintln!("  churn replay to a raw reader: {}", summary(&outcome));
                let peer = SERVER_REPLAY.to_owned();
                results.samples.push(Sample { case: case.clone(), peer, outcome });
            }
        }
    }
    Ok(())
}

/// The pseudo-peer of the server's raw replay rate.
pub(crate) const SERVER_REPLAY: &str = "server replay";

/// Churn events/s from the end of the server's stalled watch (its clock) to the moment the
/// peer's handlers had seen every event (the peer's clock; one machine, one wall clock). This
/// counts what a peer's first-to-last figure cannot: events queued before its first handler
/// call.
fn churn_rate(outcome: Outcome, events: usize) -> Outcome {
    let Outcome::Result(mut value) = outcome else { return outcome };
    let (Some(done), Some(dropped)) =
        (value["done_unix_us"].as_f64(), value["server"]["dropped_unix_us"].as_f64())
    else {
        return Outcome::Result(value);
    };
    let seconds = ((done - dropped) / 1e6).max(1e-9);
    value["first_to_last_ms"] = value["churn_ms"].clone();
    value["churn_ms"] = json!(seconds * 1e3);
    value["events_per_s"] = json!(events as f64 / seconds);
    Outcome::Result(value)
}

fn peer_args(
    options: &Options,
    server: &Server,
    case: &Case,
    peer: &str,
    marker: &str,
) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "--server".into(),
        server.url.clone(),
        "--scenario".into(),
        (match case.scenario {
            s if VARIANTS.contains(&s) => "sync",
            "lister-compact" => "lister",
            "churn-defaults" | "compact-churn" | "reconcile" | "reconcile-compact" => "churn",
            "compact-relist" => "relist",
            s => s,
        })
        .into(),
        "--objects".into(),
        case.objects.to_string(),
        "--timeout-s".into(),
        options.timeout_s.to_string(),
        "--handlers".into(),
        case.handlers.to_string(),
    ];
    let strip = || ["--transform".to_owned(), "strip-managed-fields".to_owned()];
    let lister_queries = || {
        [
            "--namespace".to_owned(),
            "ns-000".to_owned(),
            "--selector".to_owned(),
            "app=app-00".to_owned(),
            "--queries".to_owned(),
            options.queries.to_string(),
        ]
    };
    let extra: Vec<String> = match case.scenario {
        "strip" | "compact-strip" | "compact-paged" | "paged-strip" => strip().into(),
        "compact-stream" => ["--streaming-list".to_owned()].into_iter().chain(strip()).collect(),
        "metadata" => vec!["--metadata-only".into()],
        "metadata-strip" => ["--metadata-only".to_owned()].into_iter().chain(strip()).collect(),
        "view" => ["--view".to_owned()].into_iter().chain(strip()).collect(),
        "churn" => vec!["--events".into(), options.churn_events.to_string()],
        "churn-defaults" | "compact-churn" => {
            ["--events".to_owned(), options.churn_events.to_string()]
                .into_iter()
                .chain(strip())
                .collect()
        }
        "reconcile" | "reconcile-compact" => {
            ["--events".to_owned(), options.churn_events.to_string(), "--reconcile".to_owned()]
                .into_iter()
                .chain(strip())
                .collect()
        }
        "relist" => vec!["--marker".into(), marker.to_owned()],
        "compact-relist" => {
            ["--marker".to_owned(), marker.to_owned()].into_iter().chain(strip()).collect()
        }
        "lister" => lister_queries().into(),
        // Compact storage's read targets (issue 33) are for a pod of about 7 KB of JSON,
        // without managedFields: decoding those into `serde_json::Value` trees took about a
        // third of each compact read.
        "lister-compact" => lister_queries().into_iter().chain(strip()).collect(),
        _ => Vec::new(),
    };
    args.extend(extra);
    if options::compact(case.scenario) && peer == report::OURS {
        args.extend(["--compact-storage".to_owned(), COMPACT_RECENT.to_string()]);
    }
    args
}

fn summary(outcome: &Result<Outcome, String>) -> String {
    match outcome {
        Ok(Outcome::Result(v)) => {
            let keys = [
                "sync_ms",
                "peak_rss_kib",
                "rss_kib",
                "events_per_s",
                "relist_peak_rss_kib",
                "namespace_query_us",
                "selector_query_us",
                "get_us",
            ];
            keys.iter()
                .filter_map(|k| v[*k].as_f64().map(|x| format!("{k}={x:.1}")))
                .collect::<Vec<_>>()
                .join(" ")
        }
        Ok(Outcome::Unsupported(why)) => format!("unsupported ({why})"),
        Err(error) => format!("FAILED: {error}"),
    }
}

/// The plot's data: sync time and peak RSS of full-pod syncs, per peer.
fn sync_panels(options: &Options, results: &Results) -> Vec<plot::Panel> {
    let cases = results.cases("sync");
    let series = |metric: &str, scale: f64| -> Vec<plot::Series> {
        options
            .peers
            .iter()
            .map(|peer| plot::Series {
                peer: peer.clone(),
                points: cases
                    .iter()
                    .filter_map(|c| {
                        results.median(c, peer, metric).map(|v| (c.objects as f64, v / scale))
                    })
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    vec![
        plot::Panel {
            title: "Initial sync time".into(),
            unit: "seconds".into(),
            series: series("sync_ms", 1e3),
        },
        plot::Panel {
            title: "Peak RSS during sync".into(),
            unit: "MiB".into(),
            series: series("peak_rss_kib", 1024.0),
        },
    ]
}
