//! Metrics end to end: a controller over the embedded API server, its informer and work queue
//! recording into one `Metrics`, scraped over HTTP from `Metrics::serve` and parsed as the
//! text format Prometheus reads, with client-go's and controller-runtime's names.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use embedded_apiserver::ApiServer;
use informer_client::{Client, Config};
use informer_controller::controller::{Action, Controller, Request};
use informer_runtime::SharedInformerFactory;
use informer_runtime::metrics::{CONTENT_TYPE, Metrics};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio_util::sync::CancellationToken;

const DEADLINE: Duration = Duration::from_secs(20);

/// One sample: its metric name, labels and value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses the text exposition format (`OpenMetrics` and Prometheus 0.0.4 alike): every line a
/// `# HELP`, `# TYPE`, `# UNIT` or `# EOF` comment or a sample of a family declared before it,
/// with a numeric value. Returns the samples and each family's type.
fn parse(text: &str) -> (Vec<Sample>, HashMap<String, String>) {
    let mut types = HashMap::new();
    let mut samples = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(comment) = line.strip_prefix("# ") {
            let mut parts = comment.splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("TYPE"), Some(name), Some(kind)) => {
                    types.insert(name.to_owned(), kind.to_owned());
                }
                (Some("HELP" | "UNIT"), Some(_), _) => {}
                (Some("EOF"), None, None) => assert!(lines.peek().is_none(), "text after # EOF"),
                _ => panic!("malformed comment line: {line:?}"),
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("no value: {line:?}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("bad value in {line:?}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => {
                let body =
                    rest.strip_suffix('}').unwrap_or_else(|| panic!("unclosed labels: {line:?}"));
                let labels = body
                    .split("\",")
                    .filter(|pair| !pair.is_empty())
                    .map(|pair| {
                        let (key, value) = pair
                            .split_once("=\"")
                            .unwrap_or_else(|| panic!("bad label in {line:?}"));
                        (key.to_owned(), value.trim_end_matches('"').to_owned())
                    })
                    .collect();
                (name.to_owned(), labels)
            }
            None => (series.to_owned(), BTreeMap::new()),
        };
        let family = ["_total", "_bucket", "_count", "_sum", "_created"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix).filter(|f| types.contains_key(*f)))
            .unwrap_or(&name);
        assert!(types.contains_key(family), "a sample of an undeclared family: {line:?}");
        samples.push(Sample { name, labels, value });
    }
    (samples, types)
}

/// The value of the one sample of `name` whose labels include `labels`.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<_> = samples
        .iter()
        .filter(|s| s.name == name)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v)))
        .collect();
    assert_eq!(found.len(), 1, "{name} {labels:?}: {found:?}");
    found[0].value
}

/// Whether `actual` is `expected` (metric values are integers here, sent as floats).
fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!((actual - expected).abs() < 1e-9, "{what}: {actual}, expected {expected}");
}

/// `GET path` over a plain HTTP/1.1 connection: the status, the content type and the body.
async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(DEADLINE, stream.read_to_string(&mut response)).await.unwrap().unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let content_type =
        head.lines().find_map(|l| l.strip_prefix("content-type: ")).unwrap_or_default().to_owned();
    (status, content_type, body.to_owned())
}

/// Scrapes until `done` holds for the samples (within [`DEADLINE`]); returns the last scrape.
async fn scrape_until(
    addr: std::net::SocketAddr,
    what: &str,
    done: impl Fn(&[Sample]) -> bool,
) -> (Vec<Sample>, HashMap<String, String>) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let (status, content_type, body) = get(addr, "/metrics").await;
        assert_eq!((status, content_type.as_str()), (200, CONTENT_TYPE));
        let (samples, types) = parse(&body);
        if done(&samples) {
            return (samples, types);
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn has(samples: &[Sample], name: &str, label: (&str, &str)) -> bool {
    samples
        .iter()
        .any(|s| s.name == name && s.labels.get(label.0).map(String::as_str) == Some(label.1))
}

/// Every family, with its type.
fn assert_families(types: &HashMap<String, String>) {
    for (family, kind) in [
        ("workqueue_depth", "gauge"),
        ("workqueue_adds", "counter"),
        ("workqueue_queue_duration_seconds", "histogram"),
        ("workqueue_work_duration_seconds", "histogram"),
        ("workqueue_unfinished_work_seconds", "gauge"),
        ("workqueue_longest_running_processor_seconds", "gauge"),
        ("workqueue_retries", "counter"),
        ("informer_events", "counter"),
        ("informer_lists", "counter"),
        ("informer_watch_restarts", "counter"),
        ("informer_pending_notifications", "gauge"),
        ("informer_last_sync_resource_version", "gauge"),
        ("informer_sync_duration_seconds", "gauge"),
        ("informer_cache_decode_failures", "counter"),
        ("controller_runtime_reconcile", "counter"),
        ("controller_runtime_reconcile_errors", "counter"),
        ("controller_runtime_reconcile_time_seconds", "histogram"),
        ("controller_runtime_active_workers", "gauge"),
    ] {
        assert_eq!(types.get(family).map(String::as_str), Some(kind), "{family}");
    }
}

fn configmap(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        ..ConfigMap::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controllers_metrics_are_served_in_the_prometheus_text_format() {
    let server = ApiServer::start().await.unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    for name in ["a", "b", "flaky"] {
        client.create(Some("default"), &configmap(name)).await.unwrap();
    }
    let metrics = Metrics::new();
    let factory = SharedInformerFactory::builder(client.clone()).metrics(&metrics).build();
    let failed_once = Arc::new(AtomicBool::new(false));
    let reconcile = {
        let failed_once = Arc::clone(&failed_once);
        move |request: Request<ConfigMap>| {
            let fail = request.key.as_str() == "default/flaky"
                && !failed_once.swap(true, Ordering::SeqCst);
            async move {
                if fail {
                    Err(std::io::Error::other("the first try of flaky fails"))
                } else {
                    Ok(Action::Done)
                }
            }
        }
    };
    let stop = CancellationToken::new();
    let controller = Controller::<ConfigMap, _>::new(&factory).name("configmaps").metrics(&metrics);
    let run = tokio::spawn(controller.run(reconcile, stop.clone()));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn({
        let (metrics, stop) = (metrics.clone(), stop.clone());
        async move { metrics.serve(listener, stop).await }
    });

    scrape_until(addr, "four reconciles", |samples| {
        let reconciles = samples.iter().filter(|s| s.name == "controller_runtime_reconcile_total");
        reconciles.map(|s| s.value).sum::<f64>() >= 4.0
    })
    .await;
    // A change after the sync (a watch event), then a watch the server drops (a restart).
    client.create(Some("default"), &configmap("late")).await.unwrap();
    scrape_until(addr, "an ADDED event", |s| has(s, "informer_events_total", ("type", "ADDED")))
        .await;
    assert!(server.drop_watches() > 0);
    let (samples, types) = scrape_until(addr, "a watch restart", |s| {
        has(s, "informer_watch_restarts_total", ("reason", "closed"))
    })
    .await;
    assert_families(&types);

    let queue = [("name", "configmaps")];
    let at = |name: &str, labels: &[(&str, &str)]| value(&samples, name, labels);
    assert!(at("workqueue_adds_total", &queue) >= 5.0, "4 keys, flaky twice");
    assert_close(at("workqueue_retries_total", &queue), 1.0, "retries");
    assert!(at("workqueue_queue_duration_seconds_count", &queue) >= 5.0);
    assert!(at("workqueue_work_duration_seconds_count", &queue) >= 5.0);
    assert!(at("workqueue_depth", &queue) >= 0.0);
    assert!(at("workqueue_longest_running_processor_seconds", &queue) >= 0.0);
    let controller = ("controller", "configmaps");
    assert_close(
        at("controller_runtime_reconcile_total", &[controller, ("result", "error")]),
        1.0,
        "errors",
    );
    assert!(at("controller_runtime_reconcile_total", &[controller, ("result", "success")]) >= 4.0);
    assert_close(at("controller_runtime_reconcile_errors_total", &[controller]), 1.0, "errors");
    assert!(at("controller_runtime_reconcile_time_seconds_count", &[controller]) >= 5.0);
    let resource = ("resource", "configmaps");
    assert_close(at("informer_lists_total", &[resource, ("kind", "initial")]), 1.0, "lists");
    assert!(at("informer_sync_duration_seconds", &[resource]) > 0.0);
    assert!(at("informer_last_sync_resource_version", &[resource]) > 0.0);
    assert_close(at("informer_cache_decode_failures_total", &[resource]), 0.0, "decode failures");
    let handlers = samples.iter().filter(|s| s.name == "informer_pending_notifications").count();
    assert_eq!(handlers, 1, "the controller's one handler");

    assert_eq!(get(addr, "/other").await.0, 404);
    stop.cancel();
    let report = tokio::time::timeout(DEADLINE, run).await.unwrap().unwrap().unwrap();
    assert!(report.is_clean());
    tokio::time::timeout(DEADLINE, serving).await.unwrap().unwrap().unwrap();
}
