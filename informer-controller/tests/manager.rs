//! The manager over real HTTP to the embedded API server: several controllers on one factory,
//! probes on one port, warm standby behind a Lease (a standby syncs its caches and takes over
//! without listing again), a failed task reported, and a shutdown with a deadline.
//!
//! controller-runtime's manager tests (`pkg/manager/manager_test.go`) run the same cases
//! against envtest: "should return an error if any Components fail to Start", "should wait for
//! runnables to stop" with a graceful shutdown timeout, "should only start leader election
//! runnables after leader election", and the health probes' "should serve readiness/liveness
//! endpoints". Each test below names the case it follows.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "support/clients.rs"]
mod clients;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clients::our_client;
use embedded_apiserver::testing::eventually;
use embedded_apiserver::{ApiServer, Failure};
use informer_client::{Client, ClientError};
use informer_controller::controller::{Action, Controller, Request};
use informer_controller::leader_election::{LeaderElection, Leadership};
use informer_controller::manager::{Manager, ManagerError, ManagerReport, Placement};
use informer_runtime::metrics::Metrics;
use informer_runtime::{GroupVersionResource, SharedInformerFactory};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use parking_lot::Mutex;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long a test waits (real time) before it fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// `GET path` on the probe port: the status code and the body.
async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: probes\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let code = response.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (code, body)
}

async fn probe_listener() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

fn create(server: &ApiServer, plural: &str, kind: &str, name: &str) {
    let gvr = GroupVersionResource::new("", "v1", plural);
    let object = json!({
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
    });
    server.create(&gvr, object).unwrap();
}

/// A reconcile that records `name` of each object it is given, under `tag`.
fn recording<K: informer_runtime::Resource>(
    seen: &Arc<Mutex<Vec<String>>>,
    tag: &'static str,
) -> impl Fn(Request<K>) -> std::future::Ready<Result<Action, ClientError>> + Send + Sync + 'static
{
    let seen = Arc::clone(seen);
    move |request| {
        seen.lock().push(format!("{tag} {}", request.key));
        std::future::ready(Ok(Action::Done))
    }
}

/// The keys `seen` holds under `tag`, each once.
fn keys(seen: &Mutex<Vec<String>>, tag: &str) -> BTreeSet<String> {
    seen.lock()
        .iter()
        .filter_map(|s| s.strip_prefix(&format!("{tag} ")).map(str::to_owned))
        .collect()
}

// controller-runtime: "should serve readiness/liveness endpoints", and two controllers added to
// one manager run on its one factory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_controllers_on_one_factory_and_the_probes_answer() {
    let server = ApiServer::start().await.unwrap();
    for name in ["a", "b"] {
        create(&server, "configmaps", "ConfigMap", name);
        create(&server, "secrets", "Secret", name);
    }
    let metrics = Metrics::new();
    let factory = SharedInformerFactory::builder(our_client(&server)).metrics(&metrics).build();
    let (listener, addr) = probe_listener().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let stop = CancellationToken::new();
    let manager = Manager::new(&factory)
        .probes(listener)
        .metrics(&metrics)
        .add(Controller::<ConfigMap, _>::new(&factory), recording(&seen, "cm"))
        .add(Controller::<Secret, _>::new(&factory), recording(&seen, "secret"));
    let run = tokio::spawn(manager.run(stop.clone()));

    eventually("both controllers to reconcile both objects", DEADLINE, || {
        keys(&seen, "cm").len() == 2 && keys(&seen, "secret").len() == 2
    })
    .await;
    let (code, body) = get(addr, "/readyz").await;
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("[+]informer configmaps.v1 ok") || body.contains("[+]informer"),
        "{body}"
    );
    assert!(body.ends_with("readyz check passed\n"), "{body}");
    assert_eq!(get(addr, "/healthz").await.0, 200);
    assert_eq!(get(addr, "/livez").await.0, 200);
    let (code, text) = get(addr, "/metrics").await;
    assert_eq!(code, 200);
    assert!(text.contains("controller_runtime_reconcile_total"), "{text}");
    assert_eq!(get(addr, "/nothing").await.0, 404);

    stop.cancel();
    let report = tokio::time::timeout(DEADLINE, run).await.unwrap().unwrap().unwrap();
    assert_eq!(report, ManagerReport::default(), "no election, nothing unfinished");
    assert!(TcpStream::connect(addr).await.is_err(), "the probe port closed with the manager");
}

/// Asks `/readyz` until `check` holds of its answer; the last answer.
async fn readyz_until(addr: SocketAddr, what: &str, check: impl Fn(u16, &str) -> bool) -> String {
    let start = tokio::time::Instant::now();
    loop {
        let (code, body) = get(addr, "/readyz").await;
        if check(code, &body) {
            return body;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "timed out waiting for {what}; /readyz said {code}:\n{body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// `/readyz` says which informer is not synced, and why: here a resource the server does not
// serve, whose list fails with 404 for as long as it is missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_names_the_informer_that_cannot_sync() {
    let server = ApiServer::start().await.unwrap();
    let factory = SharedInformerFactory::new(our_client(&server));
    // A dynamic informer of a CRD never installed.
    let missing = GroupVersionResource::new("example.com", "v1", "widgets");
    let _widgets = factory.dynamic_informer(&missing).unwrap();
    let (listener, addr) = probe_listener().await;
    let stop = CancellationToken::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let manager = Manager::new(&factory)
        .probes(listener)
        .watch_failure_grace(Duration::ZERO)
        .add(Controller::<ConfigMap, _>::new(&factory), recording(&seen, "cm"));
    let run = tokio::spawn(manager.run(stop.clone()));
    let body = readyz_until(addr, "readyz to say why widgets did not sync", |code, body| {
        code == 503
            && body.contains("[-]informer widgets.v1.example.com failed: not synced: ")
            && body.contains("[+]informer configmaps.v1 ok")
    })
    .await;
    assert!(body.contains("404") || body.contains("not found"), "the list's error: {body}");
    assert!(body.ends_with("readyz check failed\n"), "{body}");
    assert_eq!(get(addr, "/healthz").await.0, 200, "alive all the same");
    stop.cancel();
    let report = tokio::time::timeout(DEADLINE, run).await.unwrap().unwrap().unwrap();
    assert!(report.unfinished.is_empty());
}

// The readiness probe's two informer checks, over HTTP: not ready before the first sync (the
// lists fail), ready once it synced; not ready while lists and watches fail for longer than
// the grace, ready again once they work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_waits_for_the_sync_and_for_failing_watches_to_mend() {
    let server = ApiServer::start().await.unwrap();
    let failing = |verb: &str| {
        Failure::internal_error("etcdserver: request timed out").verb(verb).resource("configmaps")
    };
    server.fail_next(usize::MAX, failing("list"));
    let factory = SharedInformerFactory::new(our_client(&server));
    let (listener, addr) = probe_listener().await;
    let stop = CancellationToken::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let manager = Manager::new(&factory)
        .probes(listener)
        .watch_failure_grace(Duration::from_millis(300))
        .add(Controller::<ConfigMap, _>::new(&factory), recording(&seen, "cm"));
    let run = tokio::spawn(manager.run(stop.clone()));
    readyz_until(addr, "not ready before the first sync", |code, body| {
        code == 503
            && body.contains("[-]informer configmaps.v1 failed: not synced: ")
            && body.contains("etcdserver: request timed out")
    })
    .await;

    server.clear_failures();
    readyz_until(addr, "ready once synced", |code, _| code == 200).await;

    // Every list and watch fails from here: the informer retries, and after the grace the
    // probe says so.
    server.fail_next(usize::MAX, failing("list"));
    server.fail_next(usize::MAX, failing("watch"));
    server.drop_watches();
    let body = readyz_until(addr, "not ready while the watches fail", |code, body| {
        code == 503
            && body.contains("[-]informer configmaps.v1 failed: lists and watches failing for")
    })
    .await;
    assert!(body.contains("etcdserver: request timed out"), "the last error: {body}");
    assert_eq!(get(addr, "/healthz").await.0, 200, "alive all the same: the informer retries");

    server.clear_failures();
    readyz_until(addr, "ready again once they work", |code, _| code == 200).await;
    stop.cancel();
    let report = tokio::time::timeout(DEADLINE, run).await.unwrap().unwrap().unwrap();
    assert!(report.unfinished.is_empty());
}

/// One replica of a program: its own client, factory, metrics and manager behind the Lease.
struct Replica {
    stop: CancellationToken,
    run: JoinHandle<Result<ManagerReport, ManagerError>>,
    seen: Arc<Mutex<Vec<String>>>,
    metrics: Metrics,
    probes: SocketAddr,
}

async fn replica(client: &Client, identity: &str, ready_when_leading: bool) -> Replica {
    let metrics = Metrics::new();
    let factory = SharedInformerFactory::builder(client.clone()).metrics(&metrics).build();
    let election = LeaderElection::builder(client.clone(), "default", "manager-test", identity)
        .lease_duration(Duration::from_secs(2))
        .renew_deadline(Duration::from_secs(1))
        .retry_period(Duration::from_millis(100))
        .build()
        .unwrap();
    let (listener, probes) = probe_listener().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let stop = CancellationToken::new();
    let manager = Manager::new(&factory)
        .leader_election(election)
        .probes(listener)
        .ready_when_leading(ready_when_leading)
        .add(Controller::<ConfigMap, _>::new(&factory), recording(&seen, "cm"));
    let run = tokio::spawn(manager.run(stop.clone()));
    Replica { stop, run, seen, metrics, probes }
}

/// The lists of config maps a replica's informer completed, `(initial, relist)`.
fn lists(metrics: &Metrics) -> (u64, u64) {
    let text = metrics.encode();
    let count = |kind: &str| {
        let prefix = format!(r#"informer_lists_total{{resource="configmaps",kind="{kind}"}} "#);
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    };
    (count("initial"), count("relist"))
}

// controller-runtime: "should only start leader election runnables after leader election",
// and its warm standby: the standby's caches sync before it leads, and when it takes over it
// reconciles every object from them without listing again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_standby_syncs_first_and_takes_over_without_listing_again() {
    let server = ApiServer::start().await.unwrap();
    let client = our_client(&server);
    let names = ["one", "two", "three"];
    for name in names {
        create(&server, "configmaps", "ConfigMap", name);
    }
    let leader = replica(&client, "replica-a", false).await;
    eventually("the leader to reconcile every config map", DEADLINE, || {
        keys(&leader.seen, "cm").len() == names.len()
    })
    .await;
    let standby = replica(&client, "replica-b", true).await;
    eventually("the standby's caches to sync", DEADLINE, || lists(&standby.metrics) == (1, 0))
        .await;
    let (code, body) = get(standby.probes, "/readyz").await;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("[-]leader failed: not leading"), "{body}");
    assert!(body.contains("[+]informer configmaps"), "synced, though not leading: {body}");
    assert!(standby.seen.lock().is_empty(), "a standby reconciles nothing");

    // The leader dies without releasing the Lease; the standby takes over when it expires.
    leader.run.abort();
    let _ = leader.run.await;
    eventually("the standby to lead and reconcile every config map", DEADLINE, || {
        keys(&standby.seen, "cm").len() == names.len()
    })
    .await;
    assert_eq!(lists(&standby.metrics), (1, 0), "taken over from the synced cache: no list");
    let (code, body) = get(standby.probes, "/readyz").await;
    assert_eq!(code, 200, "{body}");

    standby.stop.cancel();
    let report = tokio::time::timeout(DEADLINE, standby.run).await.unwrap().unwrap().unwrap();
    assert_eq!(report.leadership, Some(Leadership::Released));
    assert!(report.unfinished.is_empty());
}

#[derive(Debug, thiserror::Error)]
#[error("the webhook's certificate is missing")]
struct NoCertificate;

// controller-runtime: "should return an error if any Components fail to Start". The failure
// stops the other tasks, and comes back from `run` with the task's name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_stops_the_manager_and_is_reported() {
    let server = ApiServer::start().await.unwrap();
    let factory = SharedInformerFactory::new(our_client(&server));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let fail = CancellationToken::new();
    let patient_stopped = CancellationToken::new();
    let manager = Manager::new(&factory)
        .add(Controller::<ConfigMap, _>::new(&factory), recording(&seen, "cm"))
        .add_task("patient", Placement::EveryReplica, {
            let stopped = patient_stopped.clone();
            move |stop: CancellationToken| async move {
                stop.cancelled().await;
                stopped.cancel();
                Ok::<_, NoCertificate>(())
            }
        })
        .add_task("webhook", Placement::EveryReplica, {
            let fail = fail.clone();
            move |_stop| async move {
                fail.cancelled().await;
                Err::<(), _>(NoCertificate)
            }
        });
    let run = tokio::spawn(manager.run(CancellationToken::new()));
    create(&server, "configmaps", "ConfigMap", "a");
    eventually("the controller to run", DEADLINE, || !seen.lock().is_empty()).await;
    fail.cancel();
    let error = tokio::time::timeout(DEADLINE, run).await.unwrap().unwrap().unwrap_err();
    assert!(patient_stopped.is_cancelled(), "the other tasks were told to stop");
    match &error {
        ManagerError::TaskFailed { task, source } => {
            assert_eq!(task, "webhook");
            assert!(source.to_string().contains("certificate is missing"), "{source}");
        }
        other => panic!("not a failed task: {other:?}"),
    }
    assert!(error.to_string().contains("task webhook failed"), "{error}");
}

// A panic is a failure too, named, with its message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_panics_stops_the_manager_and_is_reported() {
    let server = ApiServer::start().await.unwrap();
    let factory = SharedInformerFactory::new(our_client(&server));
    let manager = Manager::new(&factory).add_task(
        "cache-warmer",
        Placement::EveryReplica,
        |_stop| async move {
            let empty: Vec<u8> = Vec::new();
            let _ = empty.first().copied().unwrap_or_else(|| panic!("no entries to warm"));
            Ok::<_, NoCertificate>(())
        },
    );
    let error = tokio::time::timeout(DEADLINE, manager.run(CancellationToken::new()))
        .await
        .unwrap()
        .unwrap_err();
    match error {
        ManagerError::TaskPanicked { task, message } => {
            assert_eq!(task, "cache-warmer");
            assert_eq!(message, "no entries to warm");
        }
        other => panic!("not a panic: {other:?}"),
    }
}

// controller-runtime: "should wait for runnables to stop", with `GracefulShutdownTimeout`: a
// task that does not return when told to stop is dropped after the timeout, and named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_does_not_stop_is_dropped_after_the_shutdown_timeout() {
    let server = ApiServer::start().await.unwrap();
    let factory = SharedInformerFactory::new(our_client(&server));
    let started = CancellationToken::new();
    let stop = CancellationToken::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let manager = Manager::new(&factory)
        .shutdown_timeout(Duration::from_millis(300))
        .add(Controller::<ConfigMap, _>::new(&factory), recording(&seen, "cm"))
        .add_task("stubborn", Placement::Leader, {
            let started = started.clone();
            move |_stop| async move {
                started.cancel();
                std::future::pending::<Result<(), NoCertificate>>().await
            }
        });
    let run = tokio::spawn(manager.run(stop.clone()));
    tokio::time::timeout(DEADLINE, started.cancelled()).await.unwrap();
    stop.cancel();
    let report = tokio::time::timeout(DEADLINE, run).await.unwrap().unwrap().unwrap();
    assert_eq!(
        report.unfinished,
        ["stubborn"],
        "the controller stopped; the stubborn task did not"
    );
}
