//! What a peer prints: one JSON object per line on stdout.

use std::io::Write;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::args::PeerArgs;
use crate::memory;

/// A peer's figures, printed as `{"phase":"result", ...}`.
///
/// Keys used by the orchestrator: `sync_ms`, `done_unix_us` (churn: when every handler had seen
/// every modification, from [`unix_us`]), `peak_rss_kib` (peak of the whole run up to the
/// sync), `rss_kib` (after the settle time), `cached`, `events`, `churn_ms`, `events_per_s`,
/// `churn_peak_rss_kib` (peak from the steady state to the end of churn), `relist_peak_rss_kib`, `namespace_query_us`, `selector_query_us`, `namespace_hits`,
/// `selector_hits`.
#[derive(Debug)]
pub struct Report {
    fields: Map<String, Value>,
}

impl Report {
    /// An empty report for `peer` running `args`.
    #[must_use]
    pub fn new(peer: &str, args: &PeerArgs) -> Self {
        let mut fields = Map::new();
        fields.insert("peer".into(), json!(peer));
        fields.insert("scenario".into(), json!(args.scenario.as_str()));
        fields.insert("objects".into(), json!(args.objects));
        Self { fields }
    }

    /// Sets one figure.
    pub fn set(&mut self, key: &str, value: impl Into<Value>) -> &mut Self {
        self.fields.insert(key.to_owned(), value.into());
        self
    }

    /// Sets a duration in milliseconds (fractional).
    pub fn set_ms(&mut self, key: &str, elapsed: Duration) -> &mut Self {
        self.set(key, elapsed.as_secs_f64() * 1e3)
    }

    /// Sets `rss_kib` and `peak_rss_kib` from the process's memory now.
    ///
    /// # Errors
    ///
    /// `/proc/self/status` cannot be read.
    pub fn set_memory(&mut self) -> Result<&mut Self, String> {
        let memory = memory::read()?;
        self.set("rss_kib", memory.rss_kib);
        self.set("peak_rss_kib", memory.peak_kib);
        Ok(self)
    }

    /// Prints the report as the `result` line, then ends the process (exit code 0) without
    /// freeing anything.
    ///
    /// A peer's last act would otherwise be to free its whole cache, seconds of work at 80k
    /// pods that no figure measures but every profile of the peer would count
    /// (`valgrind --tool=callgrind`, `perf record`); the kernel takes the memory back at once.
    ///
    /// It returns only when stdout is closed, with that error, for the peer to fail with.
    #[must_use]
    pub fn emit_and_exit(mut self) -> String {
        self.fields.insert("phase".into(), json!("result"));
        match emit(&Value::Object(std::mem::take(&mut self.fields))) {
            Ok(()) => std::process::exit(0),
            Err(error) => error,
        }
    }
}

/// Prints `{"phase":"synced", "rss_kib":..., "peak_rss_kib":...}`: the cache holds the initial
/// list, the orchestrator may act.
///
/// # Errors
///
/// Stdout is closed, or memory cannot be read.
pub fn synced() -> Result<memory::Memory, String> {
    let memory = memory::read()?;
    emit(&json!({"phase": "synced", "rss_kib": memory.rss_kib, "peak_rss_kib": memory.peak_kib}))?;
    Ok(memory)
}

/// Waits `settle` (what the sync freed goes back to the allocator), resets the peak RSS, and
/// prints the synced line: the churn or relist that follows is measured against the steady
/// state this returns, its peak from here.
///
/// # Errors
///
/// Stdout is closed, or memory cannot be read or its peak reset.
pub async fn steady(settle: Duration) -> Result<memory::Memory, String> {
    tokio::time::sleep(settle).await;
    memory::reset_peak()?;
    synced()
}

/// Prints `{"phase":"unsupported","reason":...}`: the peer's library cannot run this variant.
///
/// # Errors
///
/// Stdout is closed.
pub fn unsupported(reason: &str) -> Result<(), String> {
    emit(&json!({"phase": "unsupported", "reason": reason}))
}

/// Now, in microseconds since the Unix epoch: the clock the server and every peer share, for
/// intervals that start in one process and end in another.
#[must_use]
pub fn unix_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

fn emit(line: &Value) -> Result<(), String> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}").and_then(|()| stdout.flush()).map_err(|e| format!("stdout: {e}"))
}

/// The order in which the `lister` scenario gets every cached key once: `keys` sorted, then
/// visited with a stride that shares no factor with their number, so that neighbours in a
/// namespace are far apart and no read finds the object a read just before it left among a
/// compact cache's recently read ones. The client-go peer (`bench/client-go`) visits its
/// keys the same way.
#[must_use]
pub fn get_order(mut keys: Vec<String>) -> Vec<String> {
    keys.sort_unstable();
    let n = keys.len();
    let mut stride = 7919 % n.max(1);
    while n > 1 && gcd(stride, n) != 1 {
        stride += 1;
    }
    (0..n).map(|i| keys[i.wrapping_mul(stride) % n].clone()).collect()
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Gets each of `keys` (`namespace/name`, in [`get_order`]) through `get`, which says whether
/// it found the object: microseconds per get, and how many were found.
pub fn time_gets(keys: &[String], mut get: impl FnMut(&str, &str) -> bool) -> (f64, usize) {
    let started = std::time::Instant::now();
    let mut hits = 0;
    for key in keys {
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        hits += usize::from(std::hint::black_box(get(namespace, name)));
    }
    // Counts far below 2^52: exact as f64.
    #[allow(clippy::cast_precision_loss)]
    let per_get = started.elapsed().as_secs_f64() * 1e6 / keys.len().max(1) as f64;
    (per_get, hits)
}
