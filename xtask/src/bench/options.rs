//! `cargo xtask bench` options: what to run, how big, how often.

use std::path::PathBuf;

use super::results::Case;

/// The usage line of `cargo xtask bench`.
pub(crate) const USAGE: &str = "usage: cargo xtask bench [--quick] [--runs N] [--counts N,N,...] \
[--variant-counts N,...] [--churn-objects N] [--churn-events N] [--handlers N,N,...] \
[--relist-objects N] [--lister-objects N] [--queries N] [--peers informer,informer-kube,kube-rs,floor,client-go] \
[--scenarios sync,paged,strip,metadata,metadata-strip,view,compact,compact-strip,compact-paged,paged-strip,compact-stream,relist,compact-relist,lister,lister-compact,churn,churn-defaults,compact-churn,reconcile,reconcile-compact,scale] [--out FILE] [--timeout-s N] \
[--rerender RESULTS.json] [--wrap 'PROFILER ARGS'] [--system-allocator] \
[--scale-namespaces N] [--scale-per-namespace N] [--scale-streams N] [--scale-gets N] \
(scale is not in the default scenarios: --scenarios scale runs it alone and rewrites only its section of the report)";

/// The scale scenario (see `super::scale`): not among [`SCENARIOS`], so not run unless asked
/// for, as it needs a TLS server of its own and minutes.
pub(crate) const SCALE: &str = "scale";

/// Every scenario of the default set, in the order they run at one object count.
pub(crate) const SCENARIOS: [&str; 20] = [
    "sync",
    "paged",
    "strip",
    "metadata",
    "metadata-strip",
    "view",
    "compact",
    "compact-strip",
    "compact-paged",
    "paged-strip",
    "compact-stream",
    "relist",
    "compact-relist",
    "lister",
    "lister-compact",
    "churn",
    "churn-defaults",
    "compact-churn",
    "reconcile",
    "reconcile-compact",
];

/// The scenarios that are an initial sync of another kind of object (at `--variant-counts`).
/// `paged`: full pods, from a server that pages even `resourceVersion=0` lists (kube-apiserver
/// answers those from its watch cache in one body). `view`: a few fields of each pod, without
/// managedFields. `compact`, `compact-strip`: this project's informer in compact storage (with
/// and without managedFields), the others as in `sync` and `strip`. `compact-paged`: compact
/// storage without managedFields from the paging server, the others as in `strip` from it;
/// `paged-strip`: this project's decoded cache in the same setting, the reference of
/// `compact-paged`. `compact-stream`: compact storage without managedFields, listed by a
/// streaming list (this project only; its reference is `strip`).
pub(crate) const VARIANTS: [&str; 10] = [
    "paged",
    "strip",
    "metadata",
    "metadata-strip",
    "view",
    "compact",
    "compact-strip",
    "compact-paged",
    "paged-strip",
    "compact-stream",
];

/// The scenarios only this project's informer runs: the others have no compact cache, no
/// streaming list, or would repeat a scenario they run already.
pub(crate) const OURS_ONLY: [&str; 8] = [
    "lister-compact",
    "churn-defaults",
    "paged-strip",
    "compact-stream",
    "compact-relist",
    "compact-churn",
    "reconcile",
    "reconcile-compact",
];

/// Whether `scenario` lists from a server that pages `resourceVersion=0` lists too.
pub(crate) fn paged(scenario: &str) -> bool {
    matches!(scenario, "paged" | "compact-paged" | "paged-strip")
}

/// Whether this project's informer runs `scenario` with a compact cache.
pub(crate) fn compact(scenario: &str) -> bool {
    scenario.starts_with("compact") || matches!(scenario, "lister-compact" | "reconcile-compact")
}

/// Recently read objects a compact cache keeps decoded, in the compact scenarios.
pub(crate) const COMPACT_RECENT: usize = 1024;

/// What to run.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// Repetitions of every peer run (medians are reported).
    pub(crate) runs: usize,
    /// Object counts of the initial-sync scenario.
    pub(crate) counts: Vec<usize>,
    /// Object counts of the [variant](VARIANTS) syncs.
    pub(crate) variant_counts: Vec<usize>,
    /// Pods on the server during churn.
    pub(crate) churn_objects: usize,
    /// Modifications per churn run.
    pub(crate) churn_events: usize,
    /// Handler counts for this project's informer in churn.
    pub(crate) handlers: Vec<usize>,
    /// Pods on the server during the relist scenario.
    pub(crate) relist_objects: usize,
    /// Pods on the server during the lister scenario.
    pub(crate) lister_objects: usize,
    /// Repetitions of each lister query within one run.
    pub(crate) queries: usize,
    /// Peers, by name.
    pub(crate) peers: Vec<String>,
    /// Scenarios, by name (see [`SCENARIOS`]).
    pub(crate) scenarios: Vec<String>,
    /// Where the report goes (the plot goes next to it, `.svg`).
    pub(crate) out: Option<PathBuf>,
    /// How long one peer run may take.
    pub(crate) timeout_s: u64,
    /// Quick mode: small counts, one run, report under `target/bench/`.
    pub(crate) quick: bool,
    /// Re-render the report from this raw results file of an earlier run (given the same
    /// flags), instead of measuring.
    pub(crate) rerender: Option<PathBuf>,
    /// A command every measured peer run starts under (a profiler: `valgrind --tool=callgrind
    /// ...`, `heaptrack -o ...`), split at white space (no quoting: no argument may hold a
    /// space), with `{peer}`, `{scenario}`, `{objects}`, `{handlers}` and `{run}` replaced in
    /// its arguments; empty: none. Its figures are the profiler's, so the report goes to
    /// `target/bench/profiled/` unless `--out` says otherwise.
    pub(crate) wrap: Vec<String>,
    /// `scale`: namespaces on the server, each watched for every kind.
    pub(crate) scale_namespaces: usize,
    /// `scale`: objects of each kind in each namespace.
    pub(crate) scale_per_namespace: usize,
    /// `scale`: the server's HTTP/2 stream limit per connection.
    pub(crate) scale_streams: usize,
    /// `scale`: gets of one object per run, for the latency percentiles.
    pub(crate) scale_gets: usize,
    /// Build the peers with the system allocator (the `system-allocator` feature of
    /// `informer-bench`, in `target/system-allocator/`), for heap profilers that see only
    /// `malloc`; the report then goes to `target/bench/profiled/` too.
    pub(crate) system_allocator: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            runs: 3,
            counts: vec![5_000, 20_000, 80_000],
            variant_counts: vec![5_000, 20_000, 80_000],
            churn_objects: 20_000,
            churn_events: 20_000,
            handlers: vec![1, 3, 10],
            relist_objects: 20_000,
            lister_objects: 100_000,
            queries: 200,
            peers: ["informer", "informer-kube", "kube-rs", "floor", "client-go"]
                .map(str::to_owned)
                .to_vec(),
            scenarios: SCENARIOS.map(str::to_owned).to_vec(),
            out: None,
            timeout_s: 600,
            quick: false,
            rerender: None,
            wrap: Vec::new(),
            // 4 kinds in 500 namespaces: 2,000 watches, as issue 29 asks.
            scale_namespaces: 500,
            scale_per_namespace: 2,
            // kube-apiserver's `--http2-max-streams-per-connection` unset in older releases
            // (Go's server default); 100 is what proxies and newer releases advertise.
            scale_streams: 250,
            scale_gets: 1_000,
            system_allocator: false,
        }
    }
}

impl Options {
    /// The quick (smoke test) settings: every scenario, tiny counts, one run.
    fn quick() -> Self {
        Self {
            runs: 1,
            counts: vec![500, 2_000],
            variant_counts: vec![2_000],
            churn_objects: 2_000,
            churn_events: 2_000,
            handlers: vec![1, 3],
            relist_objects: 2_000,
            lister_objects: 2_000,
            queries: 20,
            timeout_s: 120,
            quick: true,
            ..Self::default()
        }
    }

    /// Parses the command line; `--quick` first sets the quick defaults, which later flags
    /// override.
    pub(crate) fn parse(args: &[String]) -> Result<Self, String> {
        let mut options =
            if args.iter().any(|a| a == "--quick") { Self::quick() } else { Self::default() };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            if flag == "--quick" {
                continue;
            }
            if flag == "--system-allocator" {
                options.system_allocator = true;
                continue;
            }
            if flag == "-h" || flag == "--help" {
                return Err(USAGE.to_owned());
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
            let number = || value.parse::<usize>().map_err(|e| format!("{flag} {value:?}: {e}"));
            let list = || -> Result<Vec<usize>, String> {
                value
                    .split(',')
                    .map(|n| n.trim().parse::<usize>().map_err(|e| format!("{flag} {n:?}: {e}")))
                    .collect()
            };
            let names = || value.split(',').map(|s| s.trim().to_owned()).collect::<Vec<_>>();
            match flag.as_str() {
                "--runs" => options.runs = number()?.max(1),
                "--counts" => options.counts = list()?,
                "--variant-counts" => options.variant_counts = list()?,
                "--churn-objects" => options.churn_objects = number()?,
                "--churn-events" => options.churn_events = number()?,
                "--handlers" => options.handlers = list()?,
                "--relist-objects" => options.relist_objects = number()?,
                "--lister-objects" => options.lister_objects = number()?,
                "--queries" => options.queries = number()?.max(1),
                "--peers" => options.peers = names(),
                "--scenarios" => {
                    options.scenarios = names();
                    if let Some(bad) = options
                        .scenarios
                        .iter()
                        .find(|s| !SCENARIOS.contains(&s.as_str()) && s.as_str() != SCALE)
                    {
                        return Err(format!(
                            "unknown scenario {bad:?}; known: {SCENARIOS:?} and {SCALE:?}"
                        ));
                    }
                }
                "--out" => options.out = Some(PathBuf::from(value)),
                "--rerender" => options.rerender = Some(PathBuf::from(value)),
                "--timeout-s" => options.timeout_s = number()? as u64,
                "--scale-namespaces" => options.scale_namespaces = number()?.max(1),
                "--scale-per-namespace" => options.scale_per_namespace = number()?.max(1),
                "--scale-streams" => options.scale_streams = number()?.max(1),
                "--scale-gets" => options.scale_gets = number()?.max(1),
                "--wrap" => options.wrap = value.split_whitespace().map(str::to_owned).collect(),
                other => return Err(format!("unknown flag {other}\n{USAGE}")),
            }
        }
        Ok(options)
    }

    /// The `--wrap` command for one peer run, placeholders replaced; empty when there is none.
    pub(crate) fn wrap_for(&self, peer: &str, case: &Case, run: usize) -> Vec<String> {
        self.wrap
            .iter()
            .map(|arg| {
                arg.replace("{peer}", peer)
                    .replace("{scenario}", case.scenario)
                    .replace("{objects}", &case.objects.to_string())
                    .replace("{handlers}", &case.handlers.to_string())
                    .replace("{run}", &run.to_string())
            })
            .collect()
    }

    /// Whether the figures are a profiler's or the system allocator's, not the report's.
    pub(crate) fn profiled(&self) -> bool {
        !self.wrap.is_empty() || self.system_allocator
    }

    /// Whether a scenario other than [`SCALE`] is selected: the plain-HTTP server and the
    /// main report are needed.
    pub(crate) fn runs_main(&self) -> bool {
        self.scenarios.iter().any(|s| s != SCALE)
    }

    /// Whether a scenario is selected.
    pub(crate) fn runs_scenario(&self, name: &str) -> bool {
        self.scenarios.iter().any(|s| s == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Options, String> {
        Options::parse(&line.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
    }

    #[test]
    fn quick_sets_small_defaults_that_flags_override() {
        let options = parse("--runs 2 --quick --counts 10,20").unwrap();
        assert!(options.quick);
        assert_eq!((options.runs, options.counts), (2, vec![10, 20]));
        assert_eq!(options.churn_events, 2_000);
        assert_eq!(parse("").unwrap().counts, [5_000, 20_000, 80_000]);
    }

    #[test]
    fn bad_flags_are_named() {
        assert!(parse("--counts 1,x").unwrap_err().contains("\"x\""));
        assert!(parse("--scenarios sync,fly").unwrap_err().contains("fly"));
        let scale = parse("--scenarios scale --scale-namespaces 10").unwrap();
        assert!(scale.runs_scenario(SCALE) && !scale.runs_main());
        assert_eq!(scale.scale_namespaces, 10);
        assert!(!parse("").unwrap().runs_scenario(SCALE), "scale is not in the default set");
        assert!(parse("--runs").unwrap_err().starts_with("--runs needs a value"));
    }

    #[test]
    fn a_wrapper_names_each_run_s_output() {
        let options =
            parse("--system-allocator --wrap x/{peer}-{scenario}-{objects}-{handlers}-{run}")
                .unwrap();
        assert!(options.system_allocator && options.profiled());
        let churn = Case { scenario: "churn", objects: 20_000, handlers: 3 };
        assert_eq!(options.wrap_for("informer", &churn, 2), ["x/informer-churn-20000-3-2"]);
        let options = Options::parse(&[
            "--wrap".to_owned(),
            "valgrind --tool=callgrind --callgrind-out-file={peer}.cg".to_owned(),
        ])
        .unwrap();
        let sync = Case { scenario: "sync", objects: 5_000, handlers: 1 };
        assert_eq!(
            options.wrap_for("floor", &sync, 1),
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=floor.cg"]
        );
        assert!(options.profiled());
        assert!(parse("--system-allocator").unwrap().profiled());
        let plain = parse("").unwrap();
        assert!(plain.wrap_for("floor", &sync, 1).is_empty() && !plain.profiled());
    }
}
