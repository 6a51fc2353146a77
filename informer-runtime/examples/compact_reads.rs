//! What a lister read costs in each storage mode of the cache (issue 18): the decoded default
//! and the compact mode, with and without recent objects. Prints microseconds per query and
//! per object, what the objects take, and what a worker pays to read back each changed object
//! `BEHIND` changes after it was written (`behind`).
//!
//! ```sh
//! cargo run --release -p informer-runtime --features k8s-openapi/latest --example compact_reads -- 20000
//! ```
//!
//! Each mode runs in a process of its own (the program starts itself again, with the mode as a
//! second argument), so that the resident memory one mode grew is not reused by the next.
//!
//! Pods are copies of the 7 pods of a recorded kind cluster (its control-plane and system
//! pods), as this crate's fixtures `tests/fixtures/kind-v1-36-pod-*.json` hold them, without
//! `managedFields` (the informers' default), spread over 50 namespaces and 20 `app` labels, as
//! in `cargo xtask bench`. A figure, not a test: nothing here asserts a time.

#![allow(clippy::cast_precision_loss, reason = "figures for a person, of counts far below 2^52")]

use std::sync::Arc;
use std::time::Instant;

use informer_runtime::{Indexer, LabelSelector, Lister, StorageMode};
use k8s_openapi::api::core::v1::Pod;

/// The recorded pods, from the crate's own fixtures (an example reads nothing outside its crate,
/// which is all a packaged crate has).
fn fixtures() -> Vec<Pod> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| {
            let json = std::path::Path::new(name).extension().is_some_and(|e| e == "json");
            name.starts_with("kind-v1-36-pod-") && json
        })
        .collect();
    names.sort();
    names
        .iter()
        .map(|name| {
            let path = format!("{dir}/{name}");
            let body = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let mut pod: Pod =
                serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{path}: {e}"));
            pod.metadata.managed_fields = None;
            pod
        })
        .collect()
}

/// How many changes behind the writes the reads of the `behind` figure are.
const BEHIND: usize = 200;

fn pod(templates: &[Pod], i: usize) -> Pod {
    let mut pod = templates[i % templates.len()].clone();
    pod.metadata.namespace = Some(format!("ns-{:02}", i % 50));
    pod.metadata.name = Some(format!("pod-{i}"));
    pod.metadata.resource_version = Some(format!("{}", i + 1));
    let labels = pod.metadata.labels.get_or_insert_default();
    labels.insert("app".to_owned(), format!("app-{:02}", i % 20));
    pod
}

/// Resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Microseconds per call of `f`, over `runs` calls.
fn time(runs: usize, mut f: impl FnMut(usize) -> usize) -> (f64, usize) {
    let start = Instant::now();
    let mut returned = 0;
    for run in 0..runs {
        returned += std::hint::black_box(f(run));
    }
    (start.elapsed().as_secs_f64() * 1e6 / runs as f64, returned / runs)
}

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let templates = fixtures();
    let modes = [
        ("compact, recent 0", StorageMode::Compact { recent: 0 }),
        ("compact, recent 1024", StorageMode::Compact { recent: 1024 }),
        ("decoded (default)", StorageMode::Decoded),
    ];
    let Some(chosen) = std::env::args().nth(2) else {
        let json_bytes: usize = (0..count)
            .map(|i| serde_json::to_vec(&pod(&templates, i)).map_or(0, |j| j.len()))
            .sum();
        println!(
            "{count} pods, {:.1} KB of JSON each on average (without managedFields)",
            json_bytes as f64 / count as f64 / 1000.0
        );
        println!(
            "{:<22} {:>9} {:>12} {:>16} {:>16} {:>14} {:>14} {:>12}",
            "mode",
            "fill s",
            "RSS +MiB",
            "namespace µs",
            "app=app-00 µs",
            "get cold µs",
            "get hot µs",
            "behind µs"
        );
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
        for index in 0..modes.len() {
            let status = std::process::Command::new(&exe)
                .args([count.to_string(), index.to_string()])
                .status()
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(status.success(), "{status}");
        }
        return;
    };
    let index: usize = chosen.parse().unwrap_or_else(|e| panic!("{chosen}: {e}"));
    let (label, mode) = modes[index];
    let before = rss_kib();
    let start = Instant::now();
    let indexer = Indexer::<Pod>::with_namespace_index().with_label_index();
    let indexer = match mode {
        StorageMode::Compact { recent } => indexer.with_compact_storage(recent),
        StorageMode::Decoded => indexer,
    };
    for i in 0..count {
        indexer.add(Arc::new(pod(&templates, i)));
    }
    let fill = start.elapsed().as_secs_f64();
    let grown = (rss_kib().saturating_sub(before)) as f64 / 1024.0;
    let lister = Lister::new(indexer.cache());
    let everything = LabelSelector::everything();
    let app = LabelSelector::parse("app=app-00").unwrap_or_else(|e| panic!("{e}"));
    // Enough runs for a figure above the clock's resolution, in each mode.
    let runs = if mode == StorageMode::Decoded { 5_000 } else { 100 };
    let (namespace, n) =
        time(runs, |run| lister.namespace(&format!("ns-{:02}", run % 50)).list(&everything).len());
    let (selector, s) = time(runs / 2, |_| lister.list(&app).len());
    // Cold: every read a different pod, more than any recent set holds.
    let (cold, _) = time(20_000, |run| {
        let i = (run * 7919) % count;
        let ns = format!("ns-{:02}", i % 50);
        usize::from(lister.namespace(&ns).get(&format!("pod-{i}")).is_ok())
    });
    // Hot: the same 100 pods again and again (a controller's working set).
    let (hot, _) = time(20_000, |run| {
        let i = run % 100;
        let ns = format!("ns-{:02}", i % 50);
        usize::from(lister.namespace(&ns).get(&format!("pod-{i}")).is_ok())
    });
    // Behind: each pod changed once (as a watched event writes it), and read back by a worker
    // `BEHIND` changes after it was written, as a controller's worker behind its handler.
    let changes = count.min(20_000);
    let mut reading = std::time::Duration::ZERO;
    for i in 0..changes {
        let mut changed = pod(&templates, i);
        changed.metadata.resource_version = Some(format!("{}", count + i + 1));
        indexer.update(Arc::new(changed));
        if let Some(j) = i.checked_sub(BEHIND) {
            let ns = format!("ns-{:02}", j % 50);
            let started = Instant::now();
            let _ = std::hint::black_box(lister.namespace(&ns).get(&format!("pod-{j}")));
            reading += started.elapsed();
        }
    }
    let behind = reading.as_secs_f64() * 1e6 / changes.saturating_sub(BEHIND).max(1) as f64;
    println!(
        "{label:<22} {fill:>9.2} {grown:>12.0} {:>16} {:>16} {cold:>14.2} {hot:>14.2} {behind:>12.2}",
        format!("{namespace:.1} ({n})"),
        format!("{selector:.1} ({s})"),
    );
    println!(
        "{:<22} {:>9} {:>12} {:>16} {:>16}",
        "  per object",
        "",
        "",
        format!("{:.3}", namespace / n.max(1) as f64),
        format!("{:.3}", selector / s.max(1) as f64),
    );
}
