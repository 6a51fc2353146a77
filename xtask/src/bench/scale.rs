//! The scale scenario of `cargo xtask bench --scenarios scale`: one client, a watch per kind and
//! namespace (2,000 by default), against `bench-server` serving TLS and HTTP/2 with
//! kube-apiserver's stream limit; this project's informer and client-go, in the same run. The
//! peers' side is `informer_bench::scale`.
//!
//! Its section of `BENCHMARKS.md` sits between two markers; a run that leaves `scale` out keeps
//! the section as it was, and a run of `scale` alone rewrites only that section ([`splice`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::options::Options;
use super::process::{Outcome, PeerCommand, Server, prime_memory, run_peer};
use super::report::{CLIENT_GO, Context, OURS};
use super::results::{Case, Cell, Results, Sample};

/// The cases of the scenario: each peer with a watch per kind and namespace, with one
/// cluster-wide watch per kind of the same objects, and with no watch (the client alone).
pub(crate) const CASES: [&str; 3] = ["scale", "scale-cluster", "scale-none"];

/// The kinds every peer watches (`informer_bench::scale::KINDS`).
const KINDS: usize = 4;

/// The peers that run the scenario; the others say why not, once.
const PEERS: [&str; 2] = [OURS, CLIENT_GO];

/// The markers around the section in `BENCHMARKS.md`.
const BEGIN: &str = "<!-- scale: begin (cargo xtask bench --scenarios scale rewrites this section; other runs keep it) -->";
const END: &str = "<!-- scale: end -->";

/// The config map every peer gets, in the middle of the namespaces.
fn get_target(options: &Options) -> String {
    format!("scale-{:03}/configmap-0", options.scale_namespaces / 2)
}

/// Objects on the server: of every kind, in every namespace.
fn objects(options: &Options) -> usize {
    options.scale_namespaces * options.scale_per_namespace * KINDS
}

/// Watches a peer opens in `case`.
fn watches(options: &Options, case: &str) -> usize {
    match case {
        "scale" => options.scale_namespaces * KINDS,
        "scale-cluster" => KINDS,
        _ => 0,
    }
}

/// Starts the TLS server, loads it, and runs every case, every peer, `--runs` times.
pub(crate) fn measure(
    options: &Options,
    peers: &[(String, PathBuf)],
    release: &Path,
    objects_dir: &Path,
    target: &Path,
    results: &mut Results,
) -> Result<(), String> {
    let long = Duration::from_secs(options.timeout_s.max(600));
    let ca = target.join("bench/scale-ca.pem");
    if let Some(dir) = ca.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let extra = [
        "--tls".to_owned(),
        "--max-streams".to_owned(),
        options.scale_streams.to_string(),
        "--ca-out".to_owned(),
        ca.display().to_string(),
    ];
    let history = objects(options) + 10_000;
    let mut server = Server::start(&release.join("bench-server"), objects_dir, history, &extra)?;
    eprintln!("xtask bench: scale server at {} ({} streams)", server.url, options.scale_streams);
    let loaded = server.command(
        &format!("load-scale {} {}", options.scale_namespaces, options.scale_per_namespace),
        long,
    )?;
    eprintln!("xtask bench: {} objects loaded in {} ms", loaded["objects"], loaded["ms"]);
    let primer = release.join("prime-memory");
    for run in 1..=options.runs {
        for scenario in CASES {
            let case = Case { scenario, objects: objects(options), handlers: 1 };
            for (peer, exe) in peers {
                if !PEERS.contains(&peer.as_str()) && (run > 1 || scenario != "scale") {
                    continue;
                }
                let outcome = run_one(options, &mut server, &primer, (peer, exe), &case, &ca)?;
                eprintln!("  {scenario} run {run}: {peer}: {}", summary(&outcome));
                results.samples.push(Sample { case: case.clone(), peer: peer.clone(), outcome });
            }
        }
    }
    Ok(())
}

/// One peer run; the outer error is the server's (the benchmark stops), the inner the peer's.
fn run_one(
    options: &Options,
    server: &mut Server,
    primer: &Path,
    (peer, exe): (&String, &PathBuf),
    case: &Case,
    ca: &Path,
) -> Result<Result<Outcome, String>, String> {
    let long = Duration::from_secs(options.timeout_s.max(600));
    let open = watches(options, case.scenario);
    let expected = if open == 0 { 0 } else { case.objects };
    let mode = match case.scenario {
        "scale" => "namespaced",
        "scale-cluster" => "cluster",
        _ => "none",
    };
    let args: Vec<String> = vec![
        "--server".into(),
        server.url.clone(),
        "--scenario".into(),
        "scale".into(),
        "--objects".into(),
        expected.to_string(),
        "--timeout-s".into(),
        options.timeout_s.to_string(),
        "--ca-file".into(),
        ca.display().to_string(),
        "--watch".into(),
        mode.into(),
        "--namespaces".into(),
        options.scale_namespaces.to_string(),
        "--get".into(),
        get_target(options),
        "--queries".into(),
        options.scale_gets.to_string(),
    ];
    prime_memory(primer, case.objects)?;
    let before = server.command("traffic", long)?;
    let command = PeerCommand { name: peer, exe, args: &args, wrap: &[] };
    let timeout = Duration::from_secs(options.timeout_s);
    let outcome = run_peer(&command, timeout, || {
        if open == 0 {
            Ok(Value::Null)
        } else {
            // Every watch open on the server: what the peer holds, not only what it synced.
            server.command(&format!("wait-watches {open}"), long)
        }
    });
    let after = server.command("traffic", long)?;
    let delta = |key: &str| {
        after[key].as_u64().unwrap_or_default().saturating_sub(before[key].as_u64().unwrap_or(0))
    };
    Ok(outcome.map(|outcome| match outcome {
        Outcome::Result(mut value) => {
            value["connections"] = json!(delta("tls_connections"));
            value["http2_requests"] = json!(delta("http2_requests"));
            value["http1_requests"] = json!(delta("http1_requests"));
            value["watches_open"] = value["server"]["watches"].clone();
            Outcome::Result(value)
        }
        unsupported @ Outcome::Unsupported(_) => unsupported,
    }))
}

fn summary(outcome: &Result<Outcome, String>) -> String {
    match outcome {
        Ok(Outcome::Result(v)) => [
            "sync_ms",
            "rss_kib",
            "get_p50_us",
            "get_p99_us",
            "connections",
            "http2_requests",
            "watches_open",
        ]
        .iter()
        .filter_map(|k| v[*k].as_f64().map(|x| format!("{k}={x:.1}")))
        .collect::<Vec<_>>()
        .join(" "),
        Ok(Outcome::Unsupported(why)) => format!("unsupported ({why})"),
        Err(error) => format!("FAILED: {error}"),
    }
}

/// The medians of one run's scale cases.
struct Figures<'a> {
    results: &'a Results,
    /// Every case: a watch per kind and namespace.
    many: Case,
    /// One cluster-wide watch per kind.
    cluster: Case,
    /// The client alone.
    none: Case,
    /// Watches in `many`.
    watches: usize,
}

impl Figures<'_> {
    fn median(&self, case: &Case, peer: &str, metric: &str) -> Option<f64> {
        self.results.median(case, peer, metric)
    }

    /// KiB of RSS per watch beyond the objects: against one cluster-wide watch per kind.
    fn beyond(&self, peer: &str) -> Option<f64> {
        let many = self.median(&self.many, peer, "rss_kib")?;
        let cluster = self.median(&self.cluster, peer, "rss_kib")?;
        Some((many - cluster) / (self.watches - KINDS) as f64)
    }

    /// KiB of RSS per watch, objects included: against the client alone.
    fn all_in(&self, peer: &str) -> Option<f64> {
        let many = self.median(&self.many, peer, "rss_kib")?;
        let none = self.median(&self.none, peer, "rss_kib")?;
        Some((many - none) / self.watches as f64)
    }
}

/// The section, between its markers.
pub(crate) fn render(cx: &Context<'_>) -> String {
    let options = cx.options;
    let machine = cx.machine;
    let watches = options.scale_namespaces * KINDS;
    let mut out = String::new();
    let _ = writeln!(out, "{BEGIN}\n");
    let _ = writeln!(
        out,
        "## Scale: one client, {watches} watches ({KINDS} kinds in {} namespaces) over HTTP/2\n",
        options.scale_namespaces
    );
    let _ = writeln!(out, "```sh\n{}\n```\n", cx.command);
    let _ = writeln!(
        out,
        "Machine: {} CPUs ({}), {:.1} GiB RAM, Linux {}; {}{}. Medians of {} run(s) per peer \
         and case; every ratio is between figures of this same run.\n",
        machine.cpus,
        machine.cpu_model,
        machine.memory_gib,
        machine.kernel,
        machine.rustc,
        machine.go.as_deref().map(|g| format!("; {g}")).unwrap_or_default(),
        options.runs
    );
    method(&mut out, options);
    let case = |scenario| Case { scenario, objects: objects(options), handlers: 1 };
    let figures = Figures {
        results: cx.results,
        many: case("scale"),
        cluster: case("scale-cluster"),
        none: case("scale-none"),
        watches,
    };
    let skipped = table(&mut out, options, &figures);
    let _ = writeln!(
        out,
        "Connections counts every TLS handshake of the run, connections a client dials while \
         its first ones are still in their handshake and then drops included. The stream limit \
         alone asks for {ours} (this project: a connection per 50 watches, one for the other \
         requests) and {go} (client-go: {watches} ÷ {streams}).\n",
        ours = watches.div_ceil(50) + 1,
        go = watches.div_ceil(options.scale_streams),
        streams = options.scale_streams,
    );
    ratios(&mut out, &figures);
    for line in skipped {
        let _ = writeln!(out, "Not run: {line}.\n");
    }
    for (peer, why) in cx.skipped {
        let _ = writeln!(out, "Peer `{peer}` did not run: {why}.\n");
    }
    let _ = writeln!(out, "{END}");
    out
}

/// How it is measured.
fn method(out: &mut String, options: &Options) {
    let watches = options.scale_namespaces * KINDS;
    let _ = writeln!(
        out,
        "- **Server.** `bench-server` over TLS, HTTP/2 by ALPN as kube-apiserver, advertising \
         and enforcing {streams} streams per connection (`SETTINGS_MAX_CONCURRENT_STREAMS`; \
         kube-apiserver's `--http2-max-streams-per-connection`). In each namespace `scale-000` \
         .. {per} pods (from the kind templates, with managedFields), {per} config maps and \
         {per} secrets (three 300-byte keys or two), {per} services: {objects} objects.\n\
         - **Peers**, one client each: `informer` = this project's `Client` (`Config::new` and \
         the server's CA; its default of 50 watches per connection) under one \
         `SharedInformerFactory` with `.namespaces(..)` of all {ns} namespaces and \
         `keep_managed_fields(true)`, and informers of `Pod`, `ConfigMap`, `Secret` and \
         `Service`: {KINDS} informers, one watch per namespace each; `client-go` = one \
         clientset (QPS unlimited, as in every scenario here) shared by {ns} \
         `SharedInformerFactory`s `WithNamespace`, each with the same {KINDS} informers \
         (`bench/client-go/scale.go`). kube-rs is not run: its client speaks HTTP/1.1, a \
         connection per watch, so no stream limit applies.\n\
         - **Sync**: from the start until every cache is synced; then the server must count \
         {watches} open watches (else the run fails). **RSS** 1 s after sync. **Per watch**: \
         (RSS with {watches} watches − RSS of the same peer with one cluster-wide watch per \
         kind of the same objects) ÷ {beyond}: what a watch costs beyond the objects it \
         caches; and (RSS − RSS of the same peer with no watch, the client alone) ÷ \
         {watches}: all of it, objects included. **Get**: {gets} gets in a row of the config \
         map `{get}` while the watches are open and idle; median and 99th percentile of each \
         run (the client alone: the same gets with no watch). **Connections**: TLS handshakes \
         the server accepted during the peer's run, one per TCP connection.\n",
        streams = options.scale_streams,
        per = options.scale_per_namespace,
        objects = objects(options),
        ns = options.scale_namespaces,
        beyond = watches - KINDS,
        gets = options.scale_gets,
        get = get_target(options),
    );
}

/// The figures, a row per peer; returns the peers that could not run the scenario, and why.
fn table(out: &mut String, options: &Options, f: &Figures<'_>) -> Vec<String> {
    let _ = writeln!(
        out,
        "| peer | sync time | watches open | RSS after sync | peak RSS | RSS, {KINDS} cluster-wide \
         watches | RSS, no watch | per watch beyond its objects | per watch, all in | get p50 \
         | get p99 | get p50 / p99, no watch | connections | HTTP/2 requests |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let mut skipped = Vec::new();
    for peer in &options.peers {
        let cell = f.results.cell(&f.many, peer);
        let failed = match &cell {
            Cell::Missing => continue,
            Cell::Unsupported(why) => {
                skipped.push(format!("`{peer}`: {why}"));
                continue;
            }
            Cell::Failed(error) => {
                let _ =
                    writeln!(out, "| {peer} | failed: {} |{}", one_line(error), " |".repeat(12));
                continue;
            }
            Cell::Measured { failed, runs } if *failed > 0 => {
                format!(" ({failed} of {} runs failed)", failed + runs)
            }
            Cell::Measured { .. } => String::new(),
        };
        let (many, cluster, none) = (&f.many, &f.cluster, &f.none);
        let _ = writeln!(
            out,
            "| {peer}{failed} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} | {} |",
            seconds(f.median(many, peer, "sync_ms")),
            whole(f.median(many, peer, "watches_open")),
            mib(f.median(many, peer, "rss_kib")),
            mib(f.median(many, peer, "peak_rss_kib")),
            mib(f.median(cluster, peer, "rss_kib")),
            mib(f.median(none, peer, "rss_kib")),
            kib(f.beyond(peer)),
            kib(f.all_in(peer)),
            micros(f.median(many, peer, "get_p50_us")),
            micros(f.median(many, peer, "get_p99_us")),
            micros(f.median(none, peer, "get_p50_us")),
            micros(f.median(none, peer, "get_p99_us")),
            whole(f.median(many, peer, "connections")),
            whole(f.median(many, peer, "http2_requests")),
        );
    }
    out.push('\n');
    skipped
}

/// This project's figures over client-go's, in the same run.
fn ratios(out: &mut String, f: &Figures<'_>) {
    let ratio = |ours: Option<f64>, theirs: Option<f64>| match (ours, theirs) {
        (Some(ours), Some(theirs)) if theirs > 0.0 => format!("{:.2}×", ours / theirs),
        _ => "–".to_owned(),
    };
    let row = |label: &str, metric: &str| {
        let (ours, theirs) =
            (f.median(&f.many, OURS, metric), f.median(&f.many, CLIENT_GO, metric));
        format!("| {label} | {} |\n", ratio(ours, theirs))
    };
    let _ = write!(
        out,
        "This project ÷ client-go, same run (below 1: less time, memory or connections):\n\n\
         | figure | informer ÷ client-go |\n|---|---:|\n{}{}{}| per watch beyond its objects | {} |\n\
         | per watch, all in | {} |\n{}{}{}\n",
        row("sync time", "sync_ms"),
        row("RSS after sync", "rss_kib"),
        row("peak RSS", "peak_rss_kib"),
        ratio(f.beyond(OURS), f.beyond(CLIENT_GO)),
        ratio(f.all_in(OURS), f.all_in(CLIENT_GO)),
        row("get p50 while the watches run", "get_p50_us"),
        row("get p99 while the watches run", "get_p99_us"),
        row("connections", "connections"),
    );
}

fn one_line(text: &str) -> String {
    let line = text.replace('\n', " ").replace('|', "/");
    line.chars().take(200).collect()
}

fn seconds(ms: Option<f64>) -> String {
    ms.map_or("–".to_owned(), |ms| format!("{:.2} s", ms / 1e3))
}

fn mib(kib: Option<f64>) -> String {
    kib.map_or("–".to_owned(), |kib| format!("{:.0} MiB", kib / 1024.0))
}

fn kib(kib: Option<f64>) -> String {
    kib.map_or("–".to_owned(), |kib| format!("{kib:.1} KiB"))
}

fn whole(n: Option<f64>) -> String {
    n.map_or("–".to_owned(), |n| format!("{n:.0}"))
}

fn micros(us: Option<f64>) -> String {
    us.map_or("–".to_owned(), |us| {
        if us >= 1000.0 { format!("{:.2} ms", us / 1e3) } else { format!("{us:.0} µs") }
    })
}

/// The report from what is there and what this run rendered: the main part (`main`, or the
/// existing file's without its scale section), then the scale section (`scale`, or the
/// existing one, or none).
pub(crate) fn splice(
    existing: Option<&str>,
    main: Option<String>,
    scale: Option<String>,
) -> String {
    let (old_main, old_scale) = match existing {
        Some(text) => match (text.find(BEGIN), text.find(END)) {
            (Some(begin), Some(end)) if end > begin => {
                let section = &text[begin..end + END.len()];
                let rest = format!("{}{}", &text[..begin], &text[end + END.len()..]);
                (Some(rest), Some(format!("{section}\n")))
            }
            _ => (Some(text.to_owned()), None),
        },
        None => (None, None),
    };
    let main = main.or(old_main).unwrap_or_else(|| "# Benchmarks\n".to_owned());
    match scale.or(old_scale) {
        Some(section) => format!("{}\n\n{section}", main.trim_end()),
        None => main,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(body: &str) -> String {
        format!("{BEGIN}\n{body}\n{END}\n")
    }

    #[test]
    fn a_run_keeps_the_part_it_did_not_measure() {
        let old = format!("# Benchmarks\n\nold main\n\n{}", section("old scale"));
        // Scale alone: the main part stays as it was.
        let new = splice(Some(&old), None, Some(section("new scale")));
        assert_eq!(new, format!("# Benchmarks\n\nold main\n\n{}", section("new scale")));
        // Without scale: the scale section stays.
        let new = splice(Some(&old), Some("# Benchmarks\n\nnew main\n".into()), None);
        assert_eq!(new, format!("# Benchmarks\n\nnew main\n\n{}", section("old scale")));
        // A first scale run appends its section; no file at all gets a title.
        let new = splice(Some("# Benchmarks\n\nmain\n"), None, Some(section("s")));
        assert_eq!(new, format!("# Benchmarks\n\nmain\n\n{}", section("s")));
        assert_eq!(splice(None, None, None), "# Benchmarks\n");
    }
}
