//! The `scale` scenario: one client, a watch per kind and namespace (2,000 by default: 4 kinds
//! in 500 namespaces), against `bench-server` serving TLS and HTTP/2 with a stream limit per
//! connection, as kube-apiserver does.
//!
//! The server holds, in each namespace `scale-000` .., `--per-namespace` objects of each of
//! [`KINDS`] (made by [`object`]). A peer runs in one of three [`ScaleWatch`] modes:
//!
//! - `namespaced`: an informer per kind, each watching every namespace on its own (this
//!   project: one `SharedInformerFactory` with `.namespaces(..)`, one watch per namespace
//!   into one cache per kind; client-go: a factory `WithNamespace` per namespace);
//! - `cluster`: one cluster-wide informer per kind, of the same objects;
//! - `none`: the client alone.
//!
//! Once synced it prints `synced`, waits `--settle-ms`, reads its RSS, then gets the config
//! map `--get` `--queries` times in a row while its watches stay open, and reports the time
//! to sync (`sync_ms`), `rss_kib`, `peak_rss_kib`, and the get's median and 99th percentile
//! (`get_p50_us`, `get_p99_us`). The orchestrator counts the connections the peer opened
//! (the server's TLS handshakes) and the requests it sent over each protocol.

// Counts, sizes and durations of a benchmark are far below 2^52: `as f64` is exact here.
#![allow(clippy::cast_precision_loss)]

use std::time::{Duration, Instant};

use informer_client::Client;
use informer_runtime::SharedInformerFactory;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use serde_json::{Value, json};

use crate::args::ScaleWatch;
use crate::pods::Templates;
use crate::{PeerArgs, Report, memory, report};

/// The kinds the server holds and each peer watches: resource names of core/v1.
pub const KINDS: [&str; 4] = ["pods", "configmaps", "secrets", "services"];

/// The namespace of number `n`.
#[must_use]
pub fn namespace(n: usize) -> String {
    format!("scale-{n:03}")
}

/// The `i`-th object of `kind` in namespace number `n`, as the server stores it: pods from
/// the real templates (7 to 32 KB of JSON), config maps and secrets with a few keys of about
/// 1 KB, services with two ports.
#[must_use]
pub fn object(templates: &Templates, kind: &str, n: usize, i: usize) -> Value {
    let namespace = namespace(n);
    let name = format!("{}-{i}", kind.trim_end_matches('s'));
    let labels = json!({"app": format!("app-{:02}", n % 20)});
    let text = |key: &str| format!("{key}-{n}-{i}: {}", "x".repeat(300));
    match kind {
        "pods" => {
            let mut pod = templates.pod(n * 16 + i);
            pod["metadata"]["name"] = json!(name);
            pod["metadata"]["namespace"] = json!(namespace);
            pod
        }
        "configmaps" => json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "data": {"a.conf": text("a"), "b.conf": text("b"), "c.conf": text("c")},
        }),
        "secrets" => json!({
            "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            // Base64 of the text, as a Secret's data is.
            "data": {"token": base64(text("token").as_bytes()), "ca.crt": base64(text("ca").as_bytes())},
        }),
        _ => json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {
                "type": "ClusterIP",
                "clusterIP": format!("10.{}.{}.{}", 96 + n / 256, n % 256, i % 256),
                "selector": labels,
                "ports": [
                    {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                    {"name": "metrics", "port": 9090, "targetPort": 9090, "protocol": "TCP"},
                ],
            },
        }),
    }
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let byte = |k: usize| usize::from(chunk.get(k).copied().unwrap_or(0));
        let n = (byte(0) << 16) | (byte(1) << 8) | byte(2);
        for (k, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            out.push(if k <= chunk.len() { char::from(ALPHABET[(n >> shift) & 63]) } else { '=' });
        }
    }
    out
}

/// The median and the 99th percentile (nearest rank) of `samples`, in microseconds.
#[must_use]
pub fn percentiles(samples: &mut [Duration]) -> Option<(f64, f64)> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_unstable();
    let rank = |percent: usize| {
        let rank = (percent * samples.len()).div_ceil(100).clamp(1, samples.len());
        samples[rank - 1].as_secs_f64() * 1e6
    };
    Some((rank(50), rank(99)))
}

/// Runs this project's peer in the `scale` scenario over `client`.
///
/// # Errors
///
/// What failed, for the peer's stderr; a successful run prints its report and exits.
pub async fn run(peer: &'static str, args: PeerArgs, client: Client) -> Result<(), String> {
    let (get_namespace, get_name) = args.get_pair()?;
    let started = Instant::now();
    let factory = match args.watch {
        ScaleWatch::None => None,
        ScaleWatch::Cluster => Some(SharedInformerFactory::builder(client.clone())),
        ScaleWatch::Namespaced => Some(
            SharedInformerFactory::builder(client.clone())
                .namespaces((0..args.namespaces).map(namespace)),
        ),
    }
    // Whole objects, managedFields too, as client-go keeps them.
    .map(|builder| builder.keep_managed_fields(true).build());
    let mut cached = 0;
    if let Some(factory) = &factory {
        let informers = (
            factory.informer::<Pod>(),
            factory.informer::<ConfigMap>(),
            factory.informer::<Secret>(),
            factory.informer::<Service>(),
        );
        factory.start();
        if !factory.wait_for_cache_sync(args.timeout).await.all_synced() {
            return Err(format!("the caches did not sync within {:?}", args.timeout));
        }
        cached = informers.0.cache().len()
            + informers.1.cache().len()
            + informers.2.cache().len()
            + informers.3.cache().len();
    }
    let sync = started.elapsed();
    if cached != args.objects {
        return Err(format!("synced with {cached} objects, expected {}", args.objects));
    }
    let after_sync = report::synced()?;
    tokio::time::sleep(args.settle).await;
    let settled = memory::read()?;

    let mut latencies = Vec::with_capacity(args.queries);
    for _ in 0..args.queries {
        let asked = Instant::now();
        let got = tokio::time::timeout(
            args.timeout,
            client.get::<ConfigMap>(Some(get_namespace), get_name),
        )
        .await
        .map_err(|_| format!("get {}: no answer within {:?}", args.get, args.timeout))?
        .map_err(|e| format!("get {}: {e}", args.get))?;
        latencies.push(asked.elapsed());
        std::hint::black_box(got);
    }
    let (p50, p99) = percentiles(&mut latencies).unwrap_or_default();

    let mut out = Report::new(peer, &args);
    out.set("watch", args.watch.as_str()).set("namespaces", args.namespaces);
    out.set_ms("sync_ms", sync).set("cached", cached).set("peak_rss_kib", after_sync.peak_kib);
    out.set("rss_kib", settled.rss_kib).set("get_p50_us", p50).set("get_p99_us", p99);
    out.set("gets", args.queries);
    Err(out.emit_and_exit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads_as_the_standard_does() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let mut samples: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentiles(&mut samples), Some((50.0, 99.0)));
        assert_eq!(percentiles(&mut []), None);
        assert_eq!(percentiles(&mut [Duration::from_micros(7)]), Some((7.0, 7.0)));
    }

    #[test]
    fn every_kind_decodes_into_its_type() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../informer-runtime/tests/fixtures");
        let templates = Templates::load(&dir)
            .unwrap_or_else(|e| panic!("the pod templates in {}: {e}", dir.display()));
        let pod: Pod = serde_json::from_value(object(&templates, "pods", 3, 1)).unwrap();
        assert_eq!(pod.metadata.namespace.as_deref(), Some("scale-003"));
        assert_eq!(pod.metadata.name.as_deref(), Some("pod-1"));
        let cm: ConfigMap = serde_json::from_value(object(&templates, "configmaps", 3, 1)).unwrap();
        assert_eq!(cm.metadata.name.as_deref(), Some("configmap-1"));
        let secret: Secret = serde_json::from_value(object(&templates, "secrets", 3, 1)).unwrap();
        assert!(secret.data.is_some_and(|d| d.contains_key("token")));
        let svc: Service = serde_json::from_value(object(&templates, "services", 3, 1)).unwrap();
        assert_eq!(svc.spec.and_then(|s| s.ports).map(|p| p.len()), Some(2));
    }
}
