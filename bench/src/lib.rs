//! Benchmark peers for `cargo xtask bench`, and what they share.
//!
//! `cargo xtask bench` (in `xtask/src/bench/`) starts `bench-server` (the embedded API server with
//! generated pods, in its own process so its memory is not counted), then runs each peer as its
//! own process against it, several times per scenario, and writes `BENCHMARKS.md`. Before each
//! peer run, `prime-memory` fills and frees about as much heap as the peer will use, so that
//! every peer starts with the machine's free memory in the same state (see that binary).
//!
//! # The peer protocol
//!
//! A peer is any executable (Rust here; a Go client-go peer plugs in the same way) that takes
//!
//! ```text
//! PEER --server URL --scenario sync|churn|relist|lister|scale --objects N
//!      [--events N] [--handlers N] [--transform strip-managed-fields] [--metadata-only]
//!      [--view] [--compact-storage RECENT] [--streaming-list] [--reconcile]
//!      [--marker NAME] [--namespace NS] [--selector KEY=VALUE] [--queries N]
//!      [--settle-ms N] [--timeout-s N]
//!      [--ca-file PEM] [--watch namespaced|cluster|none] [--namespaces N] [--get NS/NAME]
//! ```
//!
//! and prints JSON lines on stdout (anything else goes to stderr):
//!
//! - `{"phase":"synced", ...}` once its cache holds the initial list (`churn` and `relist`): the
//!   orchestrator then makes the server churn, or compact and drop the watch;
//! - `{"phase":"result", ...}` with its figures, as the last line, then exits 0;
//! - `{"phase":"unsupported","reason":"..."}` instead, when the peer cannot run this variant
//!   (for example a metadata-only informer its library lacks), then exits 0.
//!
//! The figures (`sync_ms`, `peak_rss_kib`, `rss_kib`, `events_per_s`, ... see [`Report`]) are
//! measured by the peer itself; memory is the process's own, from `/proc/self/status`
//! ([`memory`]).
//!
//! # The scenarios
//!
//! - `sync`: list and watch all pods until the cache holds `--objects` of them; time, peak RSS,
//!   and RSS after `--settle-ms`.
//! - `churn`: sync, print `synced`, then count `--events` modifications (every one of
//!   `--handlers` handlers must see each); events per second from the first to the last.
//!   With `--reconcile`, each handler hands each modified pod's key to a worker thread that
//!   reads the pod back from the lister before the event counts (a controller's reconcile
//!   loop; `peer-informer` only).
//! - `relist`: sync, settle, print `synced` with the steady RSS, reset the peak; the server then
//!   creates the pod `--marker`, compacts its history and ends the watch, so the peer gets
//!   `410 Expired` and relists; once the marker is in the cache, the peak RSS of the relist.
//! - `lister`: sync, then `--queries` times list one `--namespace`, and the pods matching
//!   `--selector` in all namespaces, from the cache; microseconds per query. Then get every
//!   cached pod once by key, in [`report::get_order`]: microseconds per get.
//! - `scale`: one client, a watch per kind and namespace over TLS and HTTP/2 (`--ca-file`,
//!   `--watch`, `--namespaces`, `--get`); time to sync, memory, and the latency of a get while
//!   the watches run ([`scale`]). Only `peer-informer` and the client-go peer run it.

pub mod args;
pub mod informer_peer;
pub mod memory;
pub mod pods;
pub mod report;
pub mod scale;
pub mod view;

pub use args::{PeerArgs, ScaleWatch, Scenario};
pub use report::Report;

/// Every Rust peer allocates through mimalloc: memory figures then compare the libraries, not
/// allocators, and mimalloc returns freed pages to the OS promptly, so RSS after a sync is
/// close to what the cache holds. The `system-allocator` feature swaps in the system allocator,
/// for heap profilers that see only `malloc`.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The error type of the peers: a message that says what failed, with its context.
pub type Error = String;

/// Runs a peer's `main`: parses its arguments, builds a tokio runtime (multi-threaded, one
/// worker per core, as every peer), runs `body`, and turns an error into exit code 1 with the
/// peer's name and scenario on stderr.
pub fn main<F, Fut>(peer: &str, body: F) -> std::process::ExitCode
where
    F: FnOnce(PeerArgs) -> Fut,
    Fut: Future<Output = Result<(), Error>>,
{
    let args = match PeerArgs::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{peer}: {message}\n{}", args::USAGE);
            return std::process::ExitCode::FAILURE;
        }
    };
    let scenario = args.scenario;
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("{peer}: cannot start the tokio runtime: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(body(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{peer} ({scenario}): {message}");
            std::process::ExitCode::FAILURE
        }
    }
}
