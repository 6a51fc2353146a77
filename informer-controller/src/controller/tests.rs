//! The reconcile loop over a `FakeSource`: what reconcile sees, what its results do to the
//! key, and shutdown.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::wait::until;
use crate::workqueue::ExponentialBackoff;
use informer_runtime::testing::FakeSource;

/// How long a test waits for a condition before it fails.
const DEADLINE: Duration = Duration::from_secs(10);

fn configmap(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("value".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

fn value(cm: &ConfigMap) -> String {
    cm.data.as_ref().and_then(|d| d.get("value")).cloned().unwrap_or_default()
}

/// A queue that retries after 1 ms (doubling), so that tests of retries run at once.
fn fast_queue() -> WorkQueue<ObjectKey> {
    WorkQueue::builder()
        .rate_limiter(ExponentialBackoff::new(Duration::from_millis(1), Duration::from_millis(50)))
        .build()
}

/// What reconcile saw: the key and the object's value, or `None` once it was gone.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

fn recording(
    seen: &Seen,
) -> impl Fn(Request<ConfigMap>) -> BoxFuture<'static, Result<Action, std::io::Error>>
+ Send
+ Sync
+ 'static {
    let seen = Arc::clone(seen);
    move |request: Request<ConfigMap>| {
        seen.lock().push((request.key.to_string(), request.object.as_deref().map(value)));
        Box::pin(async { Ok(Action::Done) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_is_reconciled_with_its_cached_state_and_again_when_it_changes() {
    let source = FakeSource::new();
    source.add(configmap("a", "1"));
    source.add(configmap("b", "1"));
    let factory = SharedInformerFactory::new(source.clone());
    let seen = Seen::default();
    let stop = CancellationToken::new();
    let run = tokio::spawn(
        Controller::<ConfigMap, _>::new(&factory).workers(2).run(recording(&seen), stop.clone()),
    );
    let has = |entry: (&str, Option<&str>)| {
        let seen = seen.lock();
        seen.iter().any(|(k, v)| (k.as_str(), v.as_deref()) == entry)
    };
    until("a and b are reconciled", || {
        has(("default/a", Some("1"))) && has(("default/b", Some("1")))
    })
    .await;
    source.modify(configmap("a", "2"));
    until("a is reconciled again", || has(("default/a", Some("2")))).await;
    source.delete(&configmap("b", "1"));
    until("b is reconciled once gone", || has(("default/b", None))).await;
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert!(report.synced && report.is_clean(), "{report:?}");
    assert_eq!(report.failed, 0);
    assert!(report.succeeded >= 4, "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_an_owned_or_watched_object_reconciles_its_primary() {
    let source = FakeSource::new();
    source.add(configmap("parent", "1"));
    source.add(configmap("named", "1"));
    let factory = SharedInformerFactory::new(source.clone());
    let seen = Seen::default();
    let stop = CancellationToken::new();
    let controller = Controller::<ConfigMap, _>::new(&factory)
        .owns::<Secret>()
        // A secret names the configmap that reads it in its `reader` label.
        .watches(|secret: &Secret| {
            let meta = &secret.metadata;
            let reader = meta.labels.as_ref().and_then(|l| l.get("reader")).cloned();
            reader.map(|name| ObjectKey::new(meta.namespace.as_deref(), &name))
        });
    let run = tokio::spawn(controller.run(recording(&seen), stop.clone()));
    let count = |key: &str| seen.lock().iter().filter(|(k, _)| k == key).count();
    until("both are reconciled once", || {
        count("default/parent") == 1 && count("default/named") == 1
    })
    .await;

    let owned = Secret {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some("child".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "parent".into(),
                uid: "uid-parent".into(),
                controller: Some(true),
                ..OwnerReference::default()
            }]),
            labels: Some(BTreeMap::from([("reader".to_owned(), "named".to_owned())])),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    };
    source.add(owned);
    until("the owner and the reader are reconciled again", || {
        count("default/parent") == 2 && count("default/named") == 2
    })
    .await;
    assert_eq!(count("default/child"), 0, "a secret's own key is not a configmap's");
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert!(report.is_clean());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_reconcile_is_retried_after_its_backoff_and_a_success_forgets_it() {
    let source = FakeSource::new();
    source.add(configmap("flaky", "1"));
    let factory = SharedInformerFactory::new(source.clone());
    let queue = fast_queue();
    let attempts = Arc::new(AtomicU32::new(0));
    let stop = CancellationToken::new();
    let reconcile = {
        let attempts = Arc::clone(&attempts);
        move |_: Request<ConfigMap>| {
            let attempt = attempts.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                match attempt {
                    1 | 2 => Err(std::io::Error::other(format!("attempt {attempt} fails"))),
                    3 => panic!("attempt 3 panics"),
                    _ => Ok(Action::Done),
                }
            }
        }
    };
    let run = tokio::spawn(
        Controller::<ConfigMap, _>::new(&factory).queue(queue.clone()).run(reconcile, stop.clone()),
    );
    until("the fourth attempt succeeds", || attempts.load(Ordering::SeqCst) == 4).await;
    until("the key is forgotten", || {
        queue.num_requeues(&ObjectKey::new(Some("default"), "flaky")) == 0
    })
    .await;
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert_eq!((report.failed, report.succeeded), (3, 1), "{report:?}");
}

/// A panic before the reconcile's future exists (in the closure's synchronous part) is a
/// failed reconcile like any other: the key comes back after its backoff, and the only worker
/// lives on to reconcile every other key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_the_synchronous_part_of_reconcile_keeps_the_worker_and_the_key() {
    let source = FakeSource::new();
    source.add(configmap("panics-once", "1"));
    source.add(configmap("other", "1"));
    let factory = SharedInformerFactory::new(source.clone());
    let queue = fast_queue();
    let attempts = Arc::new(Mutex::new(BTreeMap::<String, u32>::new()));
    let stop = CancellationToken::new();
    let reconcile = {
        let attempts = Arc::clone(&attempts);
        move |request: Request<ConfigMap>| {
            let key = request.key.as_str().to_owned();
            let attempt = {
                let mut attempts = attempts.lock();
                let n = attempts.entry(key.clone()).or_default();
                *n += 1;
                *n
            };
            assert!(!(key == "default/panics-once" && attempt == 1), "the synchronous part panics");
            async { Ok::<_, std::io::Error>(Action::Done) }
        }
    };
    let run = tokio::spawn(
        Controller::<ConfigMap, _>::new(&factory)
            .queue(queue.clone())
            .workers(1)
            .run(reconcile, stop.clone()),
    );
    let count = |key: &str| attempts.lock().get(key).copied().unwrap_or(0);
    until("the panicking key is reconciled again, and the other key too", || {
        count("default/panics-once") == 2 && count("default/other") >= 1
    })
    .await;
    // The one worker is alive: a new change is reconciled.
    source.modify(configmap("other", "2"));
    until("a change after the panic is reconciled", || count("default/other") >= 2).await;
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert_eq!(report.failed, 1, "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeue_after_reconciles_again_without_a_change() {
    let source = FakeSource::new();
    source.add(configmap("periodic", "1"));
    let factory = SharedInformerFactory::new(source.clone());
    let attempts = Arc::new(AtomicU32::new(0));
    let stop = CancellationToken::new();
    let reconcile = {
        let attempts = Arc::clone(&attempts);
        move |_: Request<ConfigMap>| {
            attempts.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, std::io::Error>(Action::RequeueAfter(Duration::from_millis(5))) }
        }
    };
    let run = tokio::spawn(Controller::<ConfigMap, _>::new(&factory).run(reconcile, stop.clone()));
    until("three reconciles of one unchanged object", || attempts.load(Ordering::SeqCst) >= 3)
        .await;
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert_eq!(report.failed, 0);
}

/// Runs a controller whose every reconcile fails with a write error wrapping `conflict()` (a
/// `409 Conflict`), and checks that the first conflict is retried at once and the second waits
/// for the rate limiter's backoff.
async fn a_conflict_is_retried_at_once_then_backs_off<E>(conflict: fn() -> E)
where
    E: std::error::Error + Send + Sync + 'static,
{
    #[derive(Debug, thiserror::Error)]
    #[error("writing the status")]
    struct WriteFailed<E>(#[source] E);

    let source = FakeSource::new();
    source.add(configmap("contended", "1"));
    let factory = SharedInformerFactory::new(source.clone());
    // A backoff of an hour: a retry that waits for it does not come within the test.
    let queue = WorkQueue::builder()
        .rate_limiter(ExponentialBackoff::new(Duration::from_secs(3600), Duration::from_secs(3600)))
        .build();
    let attempts = Arc::new(AtomicU32::new(0));
    let stop = CancellationToken::new();
    let reconcile = {
        let attempts = Arc::clone(&attempts);
        move |_: Request<ConfigMap>| {
            attempts.fetch_add(1, Ordering::SeqCst);
            async move { Err::<Action, _>(WriteFailed(conflict())) }
        }
    };
    let run = tokio::spawn(
        Controller::<ConfigMap, _>::new(&factory).queue(queue.clone()).run(reconcile, stop.clone()),
    );
    until("the second conflict waits for its backoff", || queue.delayed() == 1).await;
    assert_eq!(attempts.load(Ordering::SeqCst), 2, "the first conflict was retried at once");
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert_eq!(report.failed, 2);
}

#[cfg(feature = "client")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_is_retried_at_once_and_a_second_one_backs_off() {
    use informer_client::ClientError;
    use informer_runtime::listwatch::Status;

    a_conflict_is_retried_at_once_then_backs_off(|| {
        let status = Status::new(409, "Conflict", "the object has been modified");
        ClientError::Api { method: "PUT", path: "/x".into(), status: Box::new(status) }
    })
    .await;
}

/// The conflict a write through any `ApiWriter` (kube-rs's client included) reports counts
/// as the client's does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_from_an_api_writer_is_retried_at_once() {
    use crate::write::WriteError;
    use informer_runtime::listwatch::Status;

    a_conflict_is_retried_at_once_then_backs_off(|| {
        let status = Status::new(409, "Conflict", "the object has been modified");
        WriteError::with_status(status, "PUT /x: 409")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_taking_keys_and_reports_reconciles_that_outlive_its_timeout() {
    let source = FakeSource::new();
    source.add(configmap("slow", "1"));
    let factory = SharedInformerFactory::new(source.clone());
    let started = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let stop = CancellationToken::new();
    let reconcile = {
        let (started, release) = (Arc::clone(&started), Arc::clone(&release));
        move |_: Request<ConfigMap>| {
            let (started, release) = (Arc::clone(&started), Arc::clone(&release));
            async move {
                started.notify_one();
                release.notified().await;
                Ok::<_, std::io::Error>(Action::Done)
            }
        }
    };
    let run = tokio::spawn(
        Controller::<ConfigMap, _>::new(&factory)
            .shutdown_timeout(Duration::from_millis(20))
            .run(reconcile, stop.clone()),
    );
    tokio::time::timeout(DEADLINE, started.notified()).await.expect("the reconcile starts");
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert_eq!(report.unfinished, [ObjectKey::new(Some("default"), "slow")]);
    assert!(!report.is_clean());
    release.notify_one();
}

#[tokio::test]
async fn a_stop_before_the_caches_sync_reconciles_nothing() {
    let source = FakeSource::new();
    source
        .fail_next_lists(usize::MAX, informer_runtime::listwatch::Error::Transport("down".into()));
    let factory = SharedInformerFactory::new(source.clone());
    let stop = CancellationToken::new();
    stop.cancel();
    let seen = Seen::default();
    let report = tokio::time::timeout(
        DEADLINE,
        Controller::<ConfigMap, _>::new(&factory).run(recording(&seen), stop),
    )
    .await
    .expect("ends")
    .expect("runs");
    assert!(!report.synced);
    assert!(seen.lock().is_empty());
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_run_cancels_the_reconciles_in_flight() {
    /// Sets its flag when dropped: the reconcile future it lives in was cancelled.
    struct Dropped(Arc<std::sync::atomic::AtomicBool>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let source = FakeSource::new();
    source.add(configmap("busy", "1"));
    let factory = SharedInformerFactory::new(source.clone());
    let started = Arc::new(Notify::new());
    let cancelled = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reconcile = {
        let (started, cancelled) = (Arc::clone(&started), Arc::clone(&cancelled));
        move |_: Request<ConfigMap>| {
            let (started, guard) = (Arc::clone(&started), Dropped(Arc::clone(&cancelled)));
            async move {
                let _guard = guard;
                started.notify_one();
                std::future::pending::<()>().await;
                Ok::<_, std::io::Error>(Action::Done)
            }
        }
    };
    let run = tokio::spawn(
        Controller::<ConfigMap, _>::new(&factory).run(reconcile, CancellationToken::new()),
    );
    tokio::time::timeout(DEADLINE, started.notified()).await.expect("the reconcile starts");
    run.abort();
    let _ = run.await;
    until("the reconcile in flight is dropped", || cancelled.load(Ordering::SeqCst)).await;
    assert_eq!(factory.informer::<ConfigMap>().handler_count(), 0, "its handler is removed too");
}
