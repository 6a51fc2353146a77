//! `peer-floor`: the decode floor — no informer at all. It GETs list pages (500 a page, no
//! resourceVersion, as a paginated client does), decodes each into k8s-openapi's `List<Pod>`
//! and keeps the pods in a `HashMap` keyed `namespace/name`; then it watches from the list's
//! version, decoding each event line into `WatchEvent<Pod>`, and relists into a new map on
//! `410 Expired`. What any typed cache over the same server must at least spend.
//! The protocol is in [`informer_bench`]'s crate docs.

// Counts, sizes and durations of a benchmark are far below 2^52: `as f64` is exact here.
#![allow(clippy::cast_precision_loss)]

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use futures::StreamExt;
use informer_bench::{PeerArgs, Report, Scenario, memory, report};
use k8s_openapi::List;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::WatchEvent;

const PEER: &str = "floor";
const PAGE_SIZE: u32 = 500;

fn main() -> ExitCode {
    informer_bench::main(PEER, run)
}

/// The cache: pods by `namespace/name`, and the version it reflects.
struct Floor {
    http: reqwest::Client,
    pods_url: String,
    strip_managed_fields: bool,
    pods: HashMap<String, Pod>,
    resource_version: String,
}

/// What a watch ended with.
enum WatchEnd {
    /// The server closed it: watch again from the last version.
    Closed,
    /// `410 Expired`: relist.
    Expired,
    /// The caller's condition holds.
    Done,
}

impl Floor {
    /// Lists every pod, page by page, into a new map that then replaces the old one.
    async fn list(&mut self) -> Result<(), String> {
        let mut pods = HashMap::new();
        let mut token: Option<String> = None;
        loop {
            let mut query = vec![("limit", PAGE_SIZE.to_string())];
            if let Some(token) = &token {
                query.push(("continue", token.clone()));
            }
            let body = self.get(&query).await?;
            let page: List<Pod> = serde_json::from_slice(&body)
                .map_err(|e| format!("decoding a pod list page: {e}"))?;
            drop(body);
            for pod in page.items {
                insert(&mut pods, self.strip_managed_fields, pod);
            }
            self.resource_version = page.metadata.resource_version.unwrap_or_default();
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() {
                break;
            }
        }
        self.pods = pods;
        Ok(())
    }

    fn url(&self, query: &[(&str, String)]) -> Result<url::Url, String> {
        let mut url =
            url::Url::parse(&self.pods_url).map_err(|e| format!("{}: {e}", self.pods_url))?;
        url.query_pairs_mut().extend_pairs(query);
        Ok(url)
    }

    async fn get(&self, query: &[(&str, String)]) -> Result<bytes::Bytes, String> {
        let response = self
            .http
            .get(self.url(query)?)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| format!("GET {}: {e}", self.pods_url))?;
        response.bytes().await.map_err(|e| format!("reading {}: {e}", self.pods_url))
    }

    /// Watches from the current version, applying events, until the server closes the watch,
    /// answers `410`, or `done(event)` says so.
    async fn watch(
        &mut self,
        mut done: impl FnMut(&WatchEvent<Pod>) -> bool,
    ) -> Result<WatchEnd, String> {
        let query = [
            ("watch", "true".to_owned()),
            ("resourceVersion", self.resource_version.clone()),
            ("allowWatchBookmarks", "true".to_owned()),
            ("timeoutSeconds", "300".to_owned()),
        ];
        let response = self
            .http
            .get(self.url(&query)?)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| format!("watch {}: {e}", self.pods_url))?;
        let mut body = response.bytes_stream();
        let mut buffer: Vec<u8> = Vec::new();
        while let Some(chunk) = body.next().await {
            let Ok(chunk): Result<bytes::Bytes, _> = chunk else { return Ok(WatchEnd::Closed) };
            buffer.extend_from_slice(&chunk);
            let mut start = 0;
            while let Some(end) = buffer[start..].iter().position(|&b| b == b'\n') {
                let line = &buffer[start..start + end];
                start += end + 1;
                let event: WatchEvent<Pod> = serde_json::from_slice(line)
                    .map_err(|e| format!("decoding a watch event: {e}"))?;
                let finished = done(&event);
                match event {
                    WatchEvent::Added(pod) | WatchEvent::Modified(pod) => {
                        self.resource_version =
                            pod.metadata.resource_version.clone().unwrap_or_default();
                        insert(&mut self.pods, self.strip_managed_fields, pod);
                    }
                    WatchEvent::Deleted(pod) => {
                        self.resource_version =
                            pod.metadata.resource_version.clone().unwrap_or_default();
                        self.pods.remove(&key(&pod));
                    }
                    WatchEvent::Bookmark { resource_version, .. } => {
                        self.resource_version = resource_version;
                    }
                    WatchEvent::ErrorStatus(status) if status.code == Some(410) => {
                        return Ok(WatchEnd::Expired);
                    }
                    WatchEvent::ErrorStatus(status) => {
                        return Err(format!("watch error: {:?}", status.message));
                    }
                    WatchEvent::ErrorOther(_) => return Err("watch error".to_owned()),
                }
                if finished {
                    return Ok(WatchEnd::Done);
                }
            }
            buffer.drain(..start);
        }
        Ok(WatchEnd::Closed)
    }
}

fn insert(pods: &mut HashMap<String, Pod>, strip_managed_fields: bool, mut pod: Pod) {
    if strip_managed_fields {
        pod.metadata.managed_fields = None;
    }
    pods.insert(key(&pod), pod);
}

fn key(pod: &Pod) -> String {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    format!("{namespace}/{}", pod.metadata.name.as_deref().unwrap_or_default())
}

async fn run(args: PeerArgs) -> Result<(), String> {
    if args.metadata_only || args.view || args.scenario == Scenario::Scale {
        return report::unsupported("the floor decodes full pods only");
    }
    // reqwest is built without a default TLS provider in this workspace; plain HTTP still needs
    // one installed before a client is built.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder().build().map_err(|e| format!("HTTP client: {e}"))?;
    let pods_url = format!("{}/api/v1/pods", args.server.trim_end_matches('/'));
    let mut floor = Floor {
        http,
        pods_url,
        strip_managed_fields: args.strip_managed_fields,
        pods: HashMap::new(),
        resource_version: String::new(),
    };
    let started = Instant::now();
    tokio::time::timeout(args.timeout, floor.list())
        .await
        .map_err(|_| format!("no complete list within {:?}", args.timeout))??;
    let sync = started.elapsed();
    let after_sync = memory::read()?;
    let cached = floor.pods.len();
    if cached != args.objects {
        return Err(format!("synced with {cached} pods, expected {}", args.objects));
    }

    let mut out = Report::new(PEER, &args);
    out.set_ms("sync_ms", sync).set("cached", cached).set("peak_rss_kib", after_sync.peak_kib);
    match args.scenario {
        Scenario::Sync => {
            tokio::time::sleep(args.settle).await;
            out.set("rss_kib", memory::read()?.rss_kib);
        }
        Scenario::Churn => churn(&mut floor, &args, &mut out).await?,
        Scenario::Relist => {
            let steady = report::steady(args.settle).await?;
            let relisted = Instant::now();
            let marker = format!("{}/{}", informer_bench::pods::namespace(0), args.marker);
            let relist = async {
                while !floor.pods.contains_key(&marker) {
                    if let WatchEnd::Expired = floor.watch(|_| false).await? {
                        floor.list().await?;
                    }
                }
                Ok::<_, String>(())
            };
            tokio::time::timeout(args.timeout, relist)
                .await
                .map_err(|_| format!("no relist with {marker} within {:?}", args.timeout))??;
            out.set_ms("relist_ms", relisted.elapsed());
            out.set("rss_kib", steady.rss_kib);
            out.set("relist_peak_rss_kib", memory::read()?.peak_kib);
        }
        // Turned away before the sync (`scale` runs elsewhere, or not at all).
        Scenario::Scale => return Err("the scale scenario is not run here".to_owned()),
        Scenario::Lister => {
            let (label, value) = args.selector_pair()?;
            let namespace = args.namespace.as_str();
            let (per_query, hits) = time_queries(args.queries, &floor.pods, |pod| {
                pod.metadata.namespace.as_deref() == Some(namespace)
            });
            out.set("namespace_query_us", per_query).set("namespace_hits", hits);
            let (per_query, hits) = time_queries(args.queries, &floor.pods, |pod| {
                pod.metadata.labels.as_ref().and_then(|l| l.get(label)).map(String::as_str)
                    == Some(value)
            });
            out.set("selector_query_us", per_query).set("selector_hits", hits);
            let keys = report::get_order(floor.pods.keys().cloned().collect());
            let (per_get, hits) = report::time_gets(&keys, |ns, name| {
                floor.pods.get(&format!("{ns}/{name}")).map(std::hint::black_box).is_some()
            });
            out.set("get_us", per_get).set("get_hits", hits);
        }
    }
    Err(out.emit_and_exit())
}

/// Counts `--events` modifications through the watch (re-watching when the server ends it).
async fn churn(floor: &mut Floor, args: &PeerArgs, out: &mut Report) -> Result<(), String> {
    let steady = report::steady(args.settle).await?;
    let mut seen = 0;
    let mut first = None;
    let events = args.events;
    let churn = async {
        while seen < events {
            let end = floor
                .watch(|event| {
                    if matches!(event, WatchEvent::Modified(_)) {
                        first.get_or_insert_with(Instant::now);
                        seen += 1;
                    }
                    seen >= events
                })
                .await?;
            if matches!(end, WatchEnd::Expired) {
                return Err("410 during churn: the server's history is too short".to_owned());
            }
        }
        Ok(())
    };
    tokio::time::timeout(args.timeout, churn)
        .await
        .map_err(|_| format!("modifications not all seen within {:?}", args.timeout))??;
    out.set("done_unix_us", report::unix_us());
    let elapsed = first.map_or(Duration::ZERO, |first| first.elapsed());
    out.set("handlers", 1).set("events", events).set_ms("churn_ms", elapsed);
    out.set("events_per_s", events as f64 / elapsed.as_secs_f64().max(1e-9));
    out.set("rss_kib", steady.rss_kib);
    out.set("churn_peak_rss_kib", memory::read()?.peak_kib);
    Ok(())
}

/// Scans the map `n` times; microseconds per scan, and how many pods the last one matched.
fn time_queries(
    n: usize,
    pods: &HashMap<String, Pod>,
    matches: impl Fn(&Pod) -> bool,
) -> (f64, usize) {
    let started = Instant::now();
    let mut hits = 0;
    for _ in 0..n {
        hits = std::hint::black_box(pods.values().filter(|pod| matches(pod)).count());
    }
    (started.elapsed().as_secs_f64() * 1e6 / n as f64, hits)
}
