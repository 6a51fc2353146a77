//! The manager's HTTP port: `/healthz` and `/livez`, `/readyz`, `/metrics`; see the
//! [manager's docs](super#probes).
//!
//! Where it sits: beside the manager's tasks, reading what they share ([`State`]) and the
//! factory's [`health`](informer_runtime::SharedInformerFactory::health). It waits for nothing
//! and writes nothing: a probe's answer costs a look at a few flags and each informer's state.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use informer_runtime::factory::InformerHealth;
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Connections served at once; more wait to be accepted. Probes are few: the kubelet's and a
/// scraper's.
const CONNECTIONS: usize = 16;
/// How long a request's headers may take to arrive.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection lives, whatever it does: one that stops reading frees its slot then.
const CONNECTION_DEADLINE: Duration = Duration::from_secs(30);

/// What the manager's tasks tell the probes.
pub(super) struct State {
    leading: AtomicBool,
    stopping: AtomicBool,
    /// The task that failed, and why.
    failed: Mutex<Option<(String, String)>>,
}

impl State {
    pub(super) fn new(leading: bool) -> Self {
        Self {
            leading: AtomicBool::new(leading),
            stopping: AtomicBool::new(false),
            failed: Mutex::new(None),
        }
    }

    pub(super) fn set_leading(&self, leading: bool) {
        self.leading.store(leading, Ordering::Relaxed);
    }

    pub(super) fn set_stopping(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }

    pub(super) fn set_failed(&self, task: &str, why: &str) {
        *self.failed.lock() = Some((task.to_owned(), why.to_owned()));
    }
}

/// What the probes read.
pub(super) struct Probes {
    /// The factory's [`health`](informer_runtime::SharedInformerFactory::health).
    pub(super) health: Box<dyn Fn() -> Vec<InformerHealth> + Send + Sync>,
    pub(super) state: Arc<State>,
    pub(super) watch_failure_grace: Duration,
    pub(super) ready_when_leading: bool,
    #[cfg(feature = "metrics")]
    pub(super) metrics: Option<informer_runtime::metrics::Metrics>,
}

/// One check's verdict: `Err` says why it failed.
type Check = (String, Result<(), String>);

impl Probes {
    /// Liveness: no task failed.
    fn healthz(&self) -> Vec<Check> {
        let failed = self.state.failed.lock().clone();
        let verdict = match failed {
            Some((task, why)) => Err(format!("task {task} failed: {why}")),
            None => Ok(()),
        };
        vec![("tasks".to_owned(), verdict)]
    }

    /// Readiness: caches synced, watches working, not stopping, leading if asked.
    fn readyz(&self) -> Vec<Check> {
        let mut checks = self.healthz();
        let stopping = self.state.stopping.load(Ordering::Relaxed);
        checks.push((
            "shutdown".to_owned(),
            if stopping { Err("shutting down".to_owned()) } else { Ok(()) },
        ));
        if self.ready_when_leading {
            let leading = self.state.leading.load(Ordering::Relaxed);
            checks.push((
                "leader".to_owned(),
                if leading { Ok(()) } else { Err("not leading".to_owned()) },
            ));
        }
        let mut informers = (self.health)();
        informers.sort_by(|a, b| a.resource.cmp(&b.resource));
        for informer in informers {
            // kubectl's `resource.version.group`: one word per informer in the answer.
            let gvr = &informer.resource;
            let name = if gvr.group.is_empty() {
                format!("informer {}.{}", gvr.resource, gvr.version)
            } else {
                format!("informer {}.{}.{}", gvr.resource, gvr.version, gvr.group)
            };
            let verdict = match (informer.synced, informer.watch.failing_for) {
                (false, _) => Err(match &informer.watch.last_error {
                    Some(error) => format!("not synced: {error}"),
                    None => "not synced".to_owned(),
                }),
                (true, Some(failing)) if failing > self.watch_failure_grace => Err(format!(
                    "lists and watches failing for {}s: {}",
                    failing.as_secs(),
                    informer.watch.last_error.as_deref().unwrap_or("no message")
                )),
                (true, _) => Ok(()),
            };
            checks.push((name, verdict));
        }
        checks
    }

    fn answer(&self, request: &Request<Incoming>) -> Response<Full<Bytes>> {
        if request.method() != Method::GET && request.method() != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n".to_owned());
        }
        match request.uri().path() {
            "/healthz" | "/livez" => verdict("healthz", &self.healthz()),
            "/readyz" => verdict("readyz", &self.readyz()),
            #[cfg(feature = "metrics")]
            "/metrics" if self.metrics.is_some() => {
                let body = self
                    .metrics
                    .as_ref()
                    .map(informer_runtime::metrics::Metrics::encode)
                    .unwrap_or_default();
                let mut response = text(StatusCode::OK, body);
                response.headers_mut().insert(
                    hyper::header::CONTENT_TYPE,
                    hyper::header::HeaderValue::from_static(
                        informer_runtime::metrics::CONTENT_TYPE,
                    ),
                );
                response
            }
            _ => text(
                StatusCode::NOT_FOUND,
                "not found: /healthz, /livez, /readyz, /metrics\n".to_owned(),
            ),
        }
    }
}

/// kube-apiserver's verbose health answer: a line per check, then the verdict.
fn verdict(probe: &str, checks: &[Check]) -> Response<Full<Bytes>> {
    let mut body = String::new();
    let mut passed = true;
    for (name, verdict) in checks {
        match verdict {
            Ok(()) => {
                let _ = writeln!(body, "[+]{name} ok");
            }
            Err(why) => {
                passed = false;
                let _ = writeln!(body, "[-]{name} failed: {why}");
            }
        }
    }
    if passed {
        let _ = writeln!(body, "{probe} check passed");
        text(StatusCode::OK, body)
    } else {
        let _ = writeln!(body, "{probe} check failed");
        text(StatusCode::SERVICE_UNAVAILABLE, body)
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Answers on `listener` until `stop`.
pub(super) async fn serve(listener: TcpListener, probes: Arc<Probes>, stop: CancellationToken) {
    let slots = Arc::new(Semaphore::new(CONNECTIONS));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot,
            () = stop.cancelled() => break,
        };
        let Ok(slot) = slot else { break };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of file descriptors, most likely: wait a moment, as Go's server does.
                    tracing::warn!(%error, "probes: accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let probes = Arc::clone(&probes);
        let stop = stop.clone();
        // Reap the finished ones, so that the set holds at most `CONNECTIONS`.
        while connections.try_join_next().is_some() {}
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let probes = Arc::clone(&probes);
                async move { Ok::<_, Infallible>(probes.answer(&request)) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                served = tokio::time::timeout(CONNECTION_DEADLINE, connection) => {
                    if let Ok(Err(error)) = served {
                        tracing::debug!(%error, "probes: connection");
                    }
                }
                () = stop.cancelled() => {}
            }
            drop(slot);
        });
    }
    connections.abort_all();
}
