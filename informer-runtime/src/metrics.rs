//! Prometheus metrics of informers, work queues and controllers (feature `metrics`), with
//! client-go's and controller-runtime's names, through the Prometheus project's
//! `prometheus-client` crate.
//!
//! **Who it is for.** Operators that export Prometheus metrics: one registry for the informers of
//! the factory and the work queues and controllers of `informer-controller`.
//!
//! One [`Metrics`] per program: pass it to the factory
//! ([`FactoryBuilder::metrics`](crate::factory::FactoryBuilder::metrics)), and to the work
//! queues and controllers of the `informer-controller` crate (`WorkQueueBuilder::metrics`,
//! `Controller::metrics`); serve [`encode`](Metrics::encode) from your HTTP server, or with
//! [`serve`](Metrics::serve).
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `workqueue_depth` | `name` | keys ready for a worker |
//! | `workqueue_adds_total` | `name` | keys added (a key already waiting is not added again) |
//! | `workqueue_queue_duration_seconds` | `name` | histogram: from a key's add until a worker takes it |
//! | `workqueue_work_duration_seconds` | `name` | histogram: from a worker taking a key until it is done |
//! | `workqueue_unfinished_work_seconds` | `name` | seconds the keys being processed have been held, summed |
//! | `workqueue_longest_running_processor_seconds` | `name` | the longest of those |
//! | `workqueue_retries_total` | `name` | keys added with a delay: rate limited, or `RequeueAfter` |
//! | `informer_events_total` | `resource`, `type` | watch events: `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` |
//! | `informer_lists_total` | `resource`, `kind` | lists completed: `initial`, `relist` |
//! | `informer_watch_restarts_total` | `resource`, `reason` | watches ended: `closed`, `timeout`, `expired` (410), `throttled` (429), `error` |
//! | `informer_pending_notifications` | `resource`, `handler` | notifications a handler has not handled yet |
//! | `informer_last_sync_resource_version` | `resource` | the last version seen (API servers' versions are integers) |
//! | `informer_sync_duration_seconds` | `resource` | from the informer's start to its first sync |
//! | `informer_cache_decode_failures_total` | `resource` | reads of a [compact](crate::Indexer::with_compact_storage) cache that found an object it could not decode (each is also logged, with the object's key) |
//! | `controller_runtime_reconcile_total` | `controller`, `result` | reconciles: `success`, `requeue_after`, `error`, `panic` |
//! | `controller_runtime_reconcile_errors_total` | `controller` | reconciles that failed or panicked |
//! | `controller_runtime_reconcile_time_seconds` | `controller` | histogram: reconcile durations |
//! | `controller_runtime_active_workers` | `controller` | workers reconciling now |
//!
//! ```
//! use std::time::Duration;
//! use informer_runtime::SharedInformerFactory;
//! use informer_runtime::metrics::Metrics;
//! use informer_runtime::testing::FakeSource;
//! use k8s_openapi::api::core::v1::Pod;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let metrics = Metrics::new();
//! let factory = SharedInformerFactory::builder(FakeSource::new()).metrics(&metrics).build();
//! factory.informer::<Pod>();
//! factory.start();
//! assert!(factory.wait_for_cache_sync(Duration::from_secs(10)).await.all_synced());
//! let text = metrics.encode();
//! assert!(text.contains(r#"informer_lists_total{resource="pods",kind="initial"} 1"#));
//! # }
//! ```

use std::convert::Infallible;
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeGaugeValue, EncodeLabelSet, EncodeMetric,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::instrument::{
    ControllerObserver, InformerObserver, InformerProbe, QueueObserver, QueueProbe,
    ReconcileResult, WatchRestart,
};

/// The content type of [`Metrics::encode`]'s text (the `OpenMetrics` format, which
/// Prometheus scrapes).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// How many scrapes [`Metrics::serve`] answers at once; more wait for a slot.
const MAX_CONNECTIONS: usize = 64;

/// How long [`Metrics::serve`] waits for a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long [`Metrics::serve`] keeps a connection: a scrape takes milliseconds (Prometheus'
/// own `scrape_timeout` is 10 s by default), and a client that sends requests and never reads
/// the answers must not hold one of the 64 slots for good.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);

/// The bounds of [`Metrics::serve`], apart so that tests can shrink them.
#[derive(Clone, Copy, Debug)]
struct ServeLimits {
    connections: usize,
    header: Duration,
    connection: Duration,
}

const SERVE_LIMITS: ServeLimits = ServeLimits {
    connections: MAX_CONNECTIONS,
    header: HEADER_TIMEOUT,
    connection: CONNECTION_TIMEOUT,
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabels {
    resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabels {
    resource: String,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ListLabels {
    resource: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RestartLabels {
    resource: String,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HandlerLabels {
    resource: String,
    handler: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: &'static str,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// client-go's work-queue latency buckets: 10 ns to 10 s, by tens.
fn queue_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 10))
}

/// controller-runtime's reconcile-time buckets, 5 ms to 60 s.
fn reconcile_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ])
}

#[derive(Clone)]
struct Families {
    adds: Family<QueueLabels, Counter>,
    retries: Family<QueueLabels, Counter>,
    queue_duration: HistogramFamily<QueueLabels>,
    work_duration: HistogramFamily<QueueLabels>,
    events: Family<EventLabels, Counter>,
    lists: Family<ListLabels, Counter>,
    watch_restarts: Family<RestartLabels, Counter>,
    sync_duration: Family<ResourceLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    reconciles: Family<ResultLabels, Counter>,
    reconcile_errors: Family<ControllerLabels, Counter>,
    reconcile_time: HistogramFamily<ControllerLabels>,
    active_workers: Family<ControllerLabels, Gauge>,
}

/// Parts to read when scraped.
#[derive(Default)]
struct Probes {
    queues: Vec<(String, Weak<dyn QueueProbe>)>,
    informers: Vec<(String, Weak<dyn InformerProbe>)>,
}

/// The metrics of one program; see the [module docs](self). Cheap to clone: clones share
/// one registry.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    families: Families,
    probes: Arc<Mutex<Probes>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let probes = self.inner.probes.lock();
        f.debug_struct("Metrics")
            .field("queues", &probes.queues.len())
            .field("informers", &probes.informers.len())
            .finish_non_exhaustive()
    }
}

impl Metrics {
    /// Metrics in a registry of their own.
    #[must_use]
    pub fn new() -> Self {
        Self::with_registry(Registry::default())
    }

    /// Metrics added to `registry`, next to the program's own metrics already in it:
    /// [`encode`](Self::encode) writes them all.
    #[must_use]
    pub fn with_registry(mut registry: Registry) -> Self {
        let families = Families {
            adds: Family::default(),
            retries: Family::default(),
            queue_duration: Family::new_with_constructor(queue_histogram),
            work_duration: Family::new_with_constructor(queue_histogram),
            events: Family::default(),
            lists: Family::default(),
            watch_restarts: Family::default(),
            sync_duration: Family::default(),
            reconciles: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_time: Family::new_with_constructor(reconcile_histogram),
            active_workers: Family::default(),
        };
        let f = &families;
        registry.register("workqueue_adds", "Keys added to the work queue", f.adds.clone());
        registry.register(
            "workqueue_retries",
            "Keys rate limited by the work queue",
            f.retries.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long a key waits in the work queue before a worker takes it",
            f.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long a worker holds a key of the work queue",
            f.work_duration.clone(),
        );
        registry.register("informer_events", "Watch events an informer received", f.events.clone());
        registry.register("informer_lists", "Lists an informer completed", f.lists.clone());
        registry.register(
            "informer_watch_restarts",
            "Watches of an informer that ended, by reason",
            f.watch_restarts.clone(),
        );
        registry.register(
            "informer_sync_duration_seconds",
            "From an informer's start to its first sync",
            f.sync_duration.clone(),
        );
        registry.register(
            "controller_runtime_reconcile",
            "Reconciles, by result",
            f.reconciles.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Reconciles that failed or panicked",
            f.reconcile_errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "How long reconciles take",
            f.reconcile_time.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Workers reconciling now",
            f.active_workers.clone(),
        );
        let probes = Arc::new(Mutex::new(Probes::default()));
        registry.register_collector(Box::new(ProbeCollector(Arc::clone(&probes))));
        Self { inner: Arc::new(Inner { registry, families, probes }) }
    }

    /// Every metric in the text format Prometheus scrapes ([`CONTENT_TYPE`]).
    #[must_use]
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.inner.registry) {
            // Writing to a String does not fail; a metric's own encoder could.
            tracing::warn!("encoding metrics: {e}");
        }
        text
    }

    /// Answers `GET /metrics` on `listener` with [`encode`](Self::encode) until `stop` is
    /// cancelled (HTTP/1.1; other paths get 404). At most 64 connections are served at once
    /// (more wait for a slot), a request's headers must arrive within 10 seconds, and a
    /// connection is closed after 30 seconds, whatever it is doing: a client that stops
    /// reading frees its slot then (scrapers connect again; Prometheus does at its next scrape).
    ///
    /// # Errors
    ///
    /// When accepting connections fails.
    pub async fn serve(
        &self,
        listener: TcpListener,
        stop: CancellationToken,
    ) -> std::io::Result<()> {
        self.serve_within(listener, stop, SERVE_LIMITS).await
    }

    async fn serve_within(
        &self,
        listener: TcpListener,
        stop: CancellationToken,
        limits: ServeLimits,
    ) -> std::io::Result<()> {
        let slots = Arc::new(tokio::sync::Semaphore::new(limits.connections));
        loop {
            let (stream, _) = tokio::select! {
                accepted = listener.accept() => accepted?,
                () = stop.cancelled() => return Ok(()),
            };
            let Ok(slot) = Arc::clone(&slots).acquire_owned().await else { return Ok(()) };
            let metrics = self.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let metrics = metrics.clone();
                    async move { Ok::<_, Infallible>(metrics.answer(&request)) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(limits.header)
                    .serve_connection(TokioIo::new(stream), service);
                tokio::select! {
                    served = tokio::time::timeout(limits.connection, connection) => match served {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => tracing::debug!("metrics connection: {e}"),
                        Err(_) => tracing::debug!(
                            "metrics connection closed after {:?} (a client that does not read?)",
                            limits.connection
                        ),
                    },
                    () = stop.cancelled() => {}
                }
                drop(slot);
            });
        }
    }

    fn answer(&self, request: &Request<Incoming>) -> Response<Full<Bytes>> {
        let mut response = Response::new(Full::new(Bytes::new()));
        if request.uri().path() != "/metrics" {
            *response.status_mut() = StatusCode::NOT_FOUND;
            return response;
        }
        if request.method() != hyper::Method::GET && request.method() != hyper::Method::HEAD {
            *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
            return response;
        }
        *response.body_mut() = Full::new(Bytes::from(self.encode()));
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static(CONTENT_TYPE),
        );
        response
    }

    /// For `informer-controller` (see the `instrument` module); not a user API.
    #[doc(hidden)]
    #[must_use]
    pub fn queue_observer(&self, name: &str) -> Arc<dyn QueueObserver> {
        let f = &self.inner.families;
        let labels = QueueLabels { name: name.to_owned() };
        Arc::new(QueueMetrics {
            adds: f.adds.get_or_create(&labels).clone(),
            retries: f.retries.get_or_create(&labels).clone(),
            queue_duration: f.queue_duration.get_or_create(&labels).clone(),
            work_duration: f.work_duration.get_or_create(&labels).clone(),
        })
    }

    /// For `informer-controller` (see the `instrument` module); not a user API.
    #[doc(hidden)]
    pub fn watch_queue(&self, name: &str, probe: Weak<dyn QueueProbe>) {
        let mut probes = self.inner.probes.lock();
        probes.queues.retain(|(_, p)| p.strong_count() > 0);
        probes.queues.push((name.to_owned(), probe));
    }

    pub(crate) fn informer_observer(&self, resource: &str) -> Arc<dyn InformerObserver> {
        Arc::new(InformerMetrics {
            resource: resource.to_owned(),
            families: self.inner.families.clone(),
        })
    }

    pub(crate) fn watch_informer(&self, resource: &str, probe: Weak<dyn InformerProbe>) {
        let mut probes = self.inner.probes.lock();
        probes.informers.retain(|(_, p)| p.strong_count() > 0);
        probes.informers.push((resource.to_owned(), probe));
    }

    /// For `informer-controller` (see the `instrument` module); not a user API.
    #[doc(hidden)]
    #[must_use]
    pub fn controller_observer(&self, controller: &str) -> Arc<dyn ControllerObserver> {
        let f = &self.inner.families;
        let labels = ControllerLabels { controller: controller.to_owned() };
        Arc::new(ControllerMetrics {
            controller: controller.to_owned(),
            families: f.clone(),
            errors: f.reconcile_errors.get_or_create(&labels).clone(),
            time: f.reconcile_time.get_or_create(&labels).clone(),
            active: f.active_workers.get_or_create(&labels).clone(),
        })
    }
}

struct QueueMetrics {
    adds: Counter,
    retries: Counter,
    queue_duration: Histogram,
    work_duration: Histogram,
}

impl QueueObserver for QueueMetrics {
    fn added(&self) {
        self.adds.inc();
    }

    fn retried(&self) {
        self.retries.inc();
    }

    fn queued_for(&self, waited: Duration) {
        self.queue_duration.observe(waited.as_secs_f64());
    }

    fn worked_for(&self, worked: Duration) {
        self.work_duration.observe(worked.as_secs_f64());
    }
}

struct InformerMetrics {
    resource: String,
    families: Families,
}

impl InformerObserver for InformerMetrics {
    fn event(&self, kind: &'static str) {
        let labels = EventLabels { resource: self.resource.clone(), r#type: kind };
        self.families.events.get_or_create(&labels).inc();
    }

    fn listed(&self, relist: bool) {
        let kind = if relist { "relist" } else { "initial" };
        self.families
            .lists
            .get_or_create(&ListLabels { resource: self.resource.clone(), kind })
            .inc();
    }

    fn watch_restarted(&self, reason: WatchRestart) {
        let labels = RestartLabels { resource: self.resource.clone(), reason: reason.as_str() };
        self.families.watch_restarts.get_or_create(&labels).inc();
    }

    fn synced(&self, after: Duration) {
        let labels = ResourceLabels { resource: self.resource.clone() };
        self.families.sync_duration.get_or_create(&labels).set(after.as_secs_f64());
    }
}

struct ControllerMetrics {
    controller: String,
    families: Families,
    errors: Counter,
    time: Histogram,
    active: Gauge,
}

impl ControllerObserver for ControllerMetrics {
    fn reconciled(&self, result: ReconcileResult, took: Duration) {
        let result = match result {
            ReconcileResult::Success => "success",
            ReconcileResult::RequeueAfter => "requeue_after",
            ReconcileResult::Error => "error",
            ReconcileResult::Panic => "panic",
        };
        let labels = ResultLabels { controller: self.controller.clone(), result };
        self.families.reconciles.get_or_create(&labels).inc();
        if matches!(result, "error" | "panic") {
            self.errors.inc();
        }
        self.time.observe(took.as_secs_f64());
    }

    fn active_workers(&self, delta: i64) {
        self.active.inc_by(delta);
    }
}

/// Reads the probes when scraped.
struct ProbeCollector(Arc<Mutex<Probes>>);

impl fmt::Debug for ProbeCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProbeCollector")
    }
}

impl Collector for ProbeCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), fmt::Error> {
        let (queues, informers): (Vec<_>, Vec<_>) = {
            let probes = self.0.lock();
            (
                probes.queues.iter().filter_map(|(n, p)| Some((n.clone(), p.upgrade()?))).collect(),
                probes
                    .informers
                    .iter()
                    .filter_map(|(r, p)| Some((r.clone(), p.upgrade()?)))
                    .collect(),
            )
        };
        let queue_stats: Vec<_> = queues
            .iter()
            .map(|(name, probe)| {
                let (unfinished, longest) = probe.in_progress();
                (QueueLabels { name: name.clone() }, probe.depth(), unfinished, longest)
            })
            .collect();
        gauges(
            &mut encoder,
            "workqueue_depth",
            "Keys ready for a worker",
            queue_stats.iter().map(|(l, depth, ..)| (l, i64::try_from(*depth).unwrap_or(i64::MAX))),
        )?;
        gauges(
            &mut encoder,
            "workqueue_unfinished_work_seconds",
            "Seconds the keys being processed have been held, summed",
            queue_stats.iter().map(|(l, _, unfinished, _)| (l, unfinished.as_secs_f64())),
        )?;
        gauges(
            &mut encoder,
            "workqueue_longest_running_processor_seconds",
            "Seconds the longest-held key being processed has been held",
            queue_stats.iter().map(|(l, _, _, longest)| (l, longest.as_secs_f64())),
        )?;
        let pending: Vec<_> = informers
            .iter()
            .flat_map(|(resource, probe)| {
                probe.pending().into_iter().map(|(id, pending)| {
                    (
                        HandlerLabels { resource: resource.clone(), handler: id.to_string() },
                        i64::try_from(pending).unwrap_or(i64::MAX),
                    )
                })
            })
            .collect();
        gauges(
            &mut encoder,
            "informer_pending_notifications",
            "Notifications a handler has not handled yet",
            pending.iter().map(|(l, v)| (l, *v)),
        )?;
        let versions: Vec<_> = informers
            .iter()
            .filter_map(|(resource, probe)| {
                let version = probe.last_sync_resource_version().parse::<i64>().ok()?;
                Some((ResourceLabels { resource: resource.clone() }, version))
            })
            .collect();
        gauges(
            &mut encoder,
            "informer_last_sync_resource_version",
            "The resource version of an informer's last list or event",
            versions.iter().map(|(l, v)| (l, *v)),
        )?;
        let mut failures = encoder.encode_descriptor(
            "informer_cache_decode_failures",
            "Reads of an informer's compact cache that found an object it could not decode",
            None,
            MetricType::Counter,
        )?;
        for (resource, probe) in &informers {
            let labels = ResourceLabels { resource: resource.clone() };
            ConstCounter::new(probe.cache_decode_failures())
                .encode(failures.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

/// One gauge family, one sample per label set.
fn gauges<'a, L: EncodeLabelSet + 'a, N: EncodeGaugeValue>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    samples: impl Iterator<Item = (&'a L, N)>,
) -> Result<(), fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in samples {
        ConstGauge::new(value).encode(family.encode_family(labels)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    const SCRAPE: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: metrics\r\n\r\n";

    /// A client that asks and never reads holds its connection's slot only until the
    /// connection's deadline: the next scraper is answered then. Before the deadline, a body
    /// larger than the socket buffers kept the slot for as long as that client lived.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_never_reads_frees_its_slot_at_the_connection_deadline() {
        let metrics = Metrics::new();
        // Some megabytes of text: more than the kernel buffers on both sides hold, so the
        // server's write blocks on a client that does not read.
        for i in 0..6000 {
            let queue = metrics.queue_observer(&format!("queue-with-a-long-name-{i:05}"));
            queue.queued_for(Duration::from_millis(3));
            queue.worked_for(Duration::from_millis(7));
        }
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let limits = ServeLimits {
            connections: 1,
            header: HEADER_TIMEOUT,
            connection: Duration::from_millis(500),
        };
        let server = tokio::spawn({
            let (metrics, stop) = (metrics.clone(), stop.clone());
            async move { metrics.serve_within(listener, stop, limits).await }
        });

        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stalled = socket.connect(addr).await.unwrap();
        stalled.write_all(SCRAPE).await.unwrap();

        let scrape = async {
            let mut next = tokio::net::TcpStream::connect(addr).await.unwrap();
            next.write_all(SCRAPE).await.unwrap();
            let mut head = [0; 12];
            next.read_exact(&mut head).await.unwrap();
            head
        };
        let head = tokio::time::timeout(Duration::from_secs(10), scrape)
            .await
            .expect("the next scrape is answered once the stalled connection's deadline passed");
        assert_eq!(&head, b"HTTP/1.1 200");
        drop(stalled);
        stop.cancel();
        server.await.unwrap().unwrap();
    }
}
