//! The reconcile loop over a `FakeSource`: what reconcile sees, what its results do to the
//! key, and shutdown.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStatus};
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
    let attempts = conflicts_under(conflict, None).await;
    assert_eq!(attempts, 2, "the first conflict was retried at once");
}

/// Runs a controller whose every reconcile fails with a write error wrapping `conflict()`,
/// with `policy` if given, until a retry waits for its (hour-long) backoff; returns how many
/// reconciles there were by then.
async fn conflicts_under<E>(
    conflict: fn() -> E,
    policy: Option<fn(&Failure<'_, ConfigMap>) -> Retry>,
) -> u32
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
    let mut controller = Controller::<ConfigMap, _>::new(&factory).queue(queue.clone());
    if let Some(policy) = policy {
        controller = controller.error_policy(policy);
    }
    let run = tokio::spawn(controller.run(reconcile, stop.clone()));
    until("a conflict waits for its backoff", || queue.delayed() == 1).await;
    let attempts = attempts.load(Ordering::SeqCst);
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert_eq!(report.failed, u64::from(attempts));
    attempts
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

// --- Filters -----------------------------------------------------------------------------

/// A Deployment `default/name` at `generation`, with `replicas`.
fn deployment(name: &str, generation: i64, replicas: i32) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            generation: Some(generation),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec { replicas: Some(replicas), ..DeploymentSpec::default() },
        ..Deployment::default()
    }
}

/// Whether the queue has nothing ready, delayed or being reconciled.
fn idle(queue: &WorkQueue<ObjectKey>) -> bool {
    queue.is_empty() && queue.delayed() == 0 && queue.processing() == 0
}

/// What a Deployment reconcile saw: the key and the object's generation (`None`: gone).
type SeenGenerations = Arc<Mutex<Vec<(String, Option<i64>)>>>;

fn recording_generations(
    seen: &SeenGenerations,
) -> impl Fn(Request<Deployment>) -> BoxFuture<'static, Result<Action, std::io::Error>>
+ Send
+ Sync
+ 'static {
    let seen = Arc::clone(seen);
    move |request: Request<Deployment>| {
        let generation = request.object.as_ref().map(|d| d.metadata.generation.unwrap_or(0));
        seen.lock().push((request.key.to_string(), generation));
        Box::pin(async { Ok(Action::Done) })
    }
}

/// controller-runtime's `GenerationChangedPredicate` on a controller's primary resource: status
/// and label writes keep the generation and are not reconciled; a spec change and a deletion
/// are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generation_filter_reconciles_spec_changes_and_deletions_not_status_or_labels() {
    let source = FakeSource::new();
    source.add(deployment("web", 1, 1));
    let factory = SharedInformerFactory::new(source.clone());
    let queue = fast_queue();
    let seen = SeenGenerations::default();
    let stop = CancellationToken::new();
    let controller = Controller::<Deployment, _>::new(&factory)
        .queue(queue.clone())
        .filter(crate::filter::GenerationChanged);
    let run = tokio::spawn(controller.run(recording_generations(&seen), stop.clone()));
    let count = |key: &str| seen.lock().iter().filter(|(k, _)| k == key).count();
    until("web is reconciled once", || count("default/web") == 1).await;

    let mut status_only = deployment("web", 1, 1);
    status_only.status =
        Some(DeploymentStatus { observed_generation: Some(1), ..Default::default() });
    source.modify(status_only.clone());
    let mut labels_only = status_only;
    labels_only.metadata.labels = Some(BTreeMap::from([("tier".to_owned(), "web".to_owned())]));
    source.modify(labels_only);
    // The handler hears of a new object after the two updates: once it is reconciled, and the
    // one worker has nothing left, anything the updates enqueued was reconciled too.
    source.add(deployment("sentinel", 1, 1));
    until("the sentinel is reconciled, and nothing else waits", || {
        count("default/sentinel") == 1 && idle(&queue)
    })
    .await;
    assert_eq!(count("default/web"), 1, "status and label writes are filtered out");

    source.modify(deployment("web", 2, 3));
    until("the spec change is reconciled", || {
        seen.lock().contains(&("default/web".to_owned(), Some(2)))
    })
    .await;
    source.delete(&deployment("web", 2, 3));
    until("the deletion is reconciled", || seen.lock().contains(&("default/web".to_owned(), None)))
        .await;
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert!(report.is_clean());
    assert_eq!(factory.informer::<Deployment>().handler_count(), 0, "its handler is removed");
}

/// The use the filter is for, over HTTP: a controller that writes the status of each
/// Deployment through `/status` (which bumps no generation on the API server) is not handed
/// the Deployment back after its own write; a spec change bumps the generation and is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_generation_changed_a_controller_does_not_hear_its_own_status_writes() {
    use informer_client::{Client, Config, Patch, PatchParams};

    let server = embedded_apiserver::ApiServer::start().await.expect("the server starts");
    let client = Client::new(Config::new(server.url().parse().expect("a url"))).expect("a client");
    let factory = SharedInformerFactory::new(client.clone());
    let create = |name: &str| {
        let labels = BTreeMap::from([("app".to_owned(), name.to_owned())]);
        serde_json::from_value::<Deployment>(serde_json::json!({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                },
            },
        }))
        .expect("a deployment")
    };
    client.create(Some("default"), &create("web")).await.expect("web is created");
    let queue = fast_queue();
    let seen = SeenGenerations::default();
    let reconcile = {
        let (seen, client) = (Arc::clone(&seen), client.clone());
        move |request: Request<Deployment>| {
            let (seen, client) = (Arc::clone(&seen), client.clone());
            async move {
                let Some(deployment) = request.object else { return Ok(Action::Done) };
                let generation = deployment.metadata.generation;
                seen.lock().push((request.key.to_string(), generation));
                let status = serde_json::json!({"status": {"observedGeneration": generation}});
                let name = deployment.metadata.name.as_deref().unwrap_or_default();
                client
                    .patch_status::<Deployment, _>(
                        Some("default"),
                        name,
                        &Patch::Merge(&status),
                        &PatchParams::default(),
                    )
                    .await?;
                Ok::<_, informer_client::ClientError>(Action::Done)
            }
        }
    };
    let stop = CancellationToken::new();
    let controller = Controller::<Deployment, _>::new(&factory)
        .queue(queue.clone())
        .filter(crate::filter::GenerationChanged);
    let run = tokio::spawn(controller.run(reconcile, stop.clone()));
    let cache = factory.informer::<Deployment>().cache();
    let observed = |name: &str| {
        let key = format!("default/{name}");
        cache.get_by_key(&key).and_then(|d| d.status.as_ref()?.observed_generation)
    };
    let count = |key: &str| seen.lock().iter().filter(|(k, _)| k == key).count();
    until("web's status is written and cached", || observed("web") == Some(1)).await;

    let labels = serde_json::json!({"metadata": {"labels": {"tier": "frontend"}}});
    let relabeled: Deployment =
        client.patch_merge(Some("default"), "web", &labels).await.expect("web is relabeled");
    assert_eq!(relabeled.metadata.generation, Some(1), "a label write keeps the generation");
    client.create(Some("default"), &create("sentinel")).await.expect("the sentinel is created");
    until("the sentinel's status is written, and nothing else waits", || {
        observed("sentinel") == Some(1) && idle(&queue)
    })
    .await;
    assert_eq!(count("default/web"), 1, "neither the status write nor the labels came back");

    let scale = serde_json::json!({"spec": {"replicas": 3}});
    let scaled: Deployment =
        client.patch_merge(Some("default"), "web", &scale).await.expect("web is scaled");
    assert_eq!(scaled.metadata.generation, Some(2), "a spec write bumps the generation");
    until("the spec change is reconciled and its status written", || observed("web") == Some(2))
        .await;
    until("nothing else waits", || idle(&queue)).await;
    assert_eq!(count("default/web"), 2);
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert_eq!(report.failed, 0, "{report:?}");
}

/// controller-runtime's `Owns(obj, WithPredicates(...))`: only the owned object's changes
/// the filter passes reconcile its owner; the owner's own events are not filtered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owns_filtered_reconciles_the_owner_for_the_changes_its_filter_passes_only() {
    let source = FakeSource::new();
    source.add(configmap("parent", "1"));
    source.add(configmap("other", "1"));
    let factory = SharedInformerFactory::new(source.clone());
    let queue = fast_queue();
    let seen = Seen::default();
    let stop = CancellationToken::new();
    let controller = Controller::<ConfigMap, _>::new(&factory)
        .queue(queue.clone())
        .owns_filtered::<Secret>(crate::filter::LabelsChanged);
    let run = tokio::spawn(controller.run(recording(&seen), stop.clone()));
    let count = |key: &str| seen.lock().iter().filter(|(k, _)| k == key).count();
    until("both are reconciled", || count("default/parent") == 1 && count("default/other") == 1)
        .await;

    // A secret `name` owned by the configmap `owner`.
    let child = |name: &str, owner: &str, label: &str, data: &str| Secret {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: owner.into(),
                uid: format!("uid-{owner}"),
                controller: Some(true),
                ..OwnerReference::default()
            }]),
            labels: Some(BTreeMap::from([("a".to_owned(), label.to_owned())])),
            ..ObjectMeta::default()
        },
        string_data: Some(BTreeMap::from([("data".to_owned(), data.to_owned())])),
        ..Secret::default()
    };
    source.add(child("child", "parent", "1", "x"));
    until("the child's add reconciles the parent", || count("default/parent") >= 2 && idle(&queue))
        .await;
    let before = count("default/parent");
    source.modify(child("child", "parent", "1", "y"));
    // A secret the same informer delivers after the change: once its owner is reconciled and
    // nothing waits, the change was handled, and enqueued nothing.
    source.add(child("sentinel", "other", "1", "x"));
    until("the sentinel's owner is reconciled, and nothing else waits", || {
        count("default/other") >= 2 && idle(&queue)
    })
    .await;
    assert_eq!(count("default/parent"), before, "a data change of the child is filtered out");
    source.modify(child("child", "parent", "2", "y"));
    until("the child's label change reconciles the parent", || count("default/parent") > before)
        .await;
    let before = count("default/parent");
    source.modify(configmap("parent", "2"));
    until("the parent's own change is not filtered", || count("default/parent") > before).await;
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert!(report.is_clean());
}

/// `filter` called twice: an event must pass both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_filters_on_the_primary_must_both_pass() {
    use crate::filter::Matching;

    let source = FakeSource::new();
    for name in ["a-1", "a-2", "b-1"] {
        source.add(configmap(name, "1"));
    }
    let factory = SharedInformerFactory::new(source.clone());
    let seen = Seen::default();
    let stop = CancellationToken::new();
    let named = |prefix: &'static str| {
        Matching(move |cm: &ConfigMap| {
            cm.metadata.name.as_deref().is_some_and(|n| n.starts_with(prefix))
        })
    };
    let ends_in_1 =
        Matching(|cm: &ConfigMap| cm.metadata.name.as_deref().is_some_and(|n| n.ends_with('1')));
    let controller =
        Controller::<ConfigMap, _>::new(&factory).workers(1).filter(named("a")).filter(ends_in_1);
    let run = tokio::spawn(controller.run(recording(&seen), stop.clone()));
    until("a-1 is reconciled", || !seen.lock().is_empty()).await;
    // A third object that passes both, added last: once it is reconciled, so is every other
    // key the initial list enqueued.
    source.add(configmap("a-21", "1"));
    until("a-21 is reconciled", || seen.lock().iter().any(|(k, _)| k == "default/a-21")).await;
    let keys: Vec<String> = seen.lock().iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(keys, ["default/a-1", "default/a-21"]);
    stop.cancel();
    let _ = tokio::time::timeout(DEADLINE, run).await.expect("ends");
}

// --- Error policy -------------------------------------------------------------------------

/// A `409 Conflict` from a write, as an `ApiWriter` reports it.
fn write_conflict() -> crate::write::WriteError {
    let status = informer_runtime::listwatch::Status::new(409, "Conflict", "modified");
    crate::write::WriteError::with_status(status, "PUT /x: 409")
}

/// The default behaviour, asked for by a policy, is the one without a policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_policy_answering_default_keeps_the_conflict_handling() {
    let attempts = conflicts_under(write_conflict, Some(|_| Retry::Default)).await;
    assert_eq!(attempts, 2, "the first conflict was retried at once, the second backs off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_policy_answering_backoff_backs_off_a_conflict_too() {
    let attempts = conflicts_under(write_conflict, Some(|_| Retry::Backoff)).await;
    assert_eq!(attempts, 1, "the first conflict waits for its backoff");
}

/// The usual policy: a few retries after backoff, then give up until the object changes. The
/// policy sees the key, the object, the error and the retries so far; giving up forgets them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_policy_that_gives_up_after_two_retries_stops_until_the_object_changes() {
    let source = FakeSource::new();
    source.add(configmap("broken", "1"));
    let factory = SharedInformerFactory::new(source.clone());
    let queue = fast_queue();
    let attempts = Arc::new(AtomicU32::new(0));
    // What the policy saw: the key, the object's value, the error, the retries.
    let failures = Arc::new(Mutex::new(Vec::<(String, Option<String>, String, u32)>::new()));
    let stop = CancellationToken::new();
    let reconcile = {
        let attempts = Arc::clone(&attempts);
        move |_: Request<ConfigMap>| {
            attempts.fetch_add(1, Ordering::SeqCst);
            async { Err::<Action, _>(std::io::Error::other("invalid spec")) }
        }
    };
    let policy = {
        let failures = Arc::clone(&failures);
        move |failure: &Failure<'_, ConfigMap>| {
            failures.lock().push((
                failure.key.to_string(),
                failure.object.map(|o| value(o)),
                failure.error.to_string(),
                failure.retries,
            ));
            if failure.retries >= 2 { Retry::GiveUp } else { Retry::Backoff }
        }
    };
    let controller =
        Controller::<ConfigMap, _>::new(&factory).queue(queue.clone()).error_policy(policy);
    let run = tokio::spawn(controller.run(reconcile, stop.clone()));
    until("three attempts, then nothing waits", || {
        attempts.load(Ordering::SeqCst) == 3 && idle(&queue)
    })
    .await;
    let key = ObjectKey::new(Some("default"), "broken");
    assert_eq!(queue.num_requeues(&key), 0, "giving up forgets the backoff");
    let expected = |retries| {
        ("default/broken".to_owned(), Some("1".to_owned()), "invalid spec".to_owned(), retries)
    };
    assert_eq!(*failures.lock(), [expected(0), expected(1), expected(2)]);

    source.modify(configmap("broken", "2"));
    until("a change is reconciled again", || attempts.load(Ordering::SeqCst) >= 4).await;
    until("its failure reaches the policy", || failures.lock().len() >= 4).await;
    assert_eq!(failures.lock()[3].3, 0, "from a forgotten backoff");
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert!(report.failed >= 4, "{report:?}");
}

/// `Retry::After(d)`: the key comes back after `d` rather than after its backoff (1 ms here),
/// and its backoff is forgotten: the next failure counts no retries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_policy_answering_after_retries_after_its_delay_and_forgets_the_backoff() {
    const DELAY: Duration = Duration::from_millis(100);
    let source = FakeSource::new();
    source.add(configmap("flaky", "1"));
    let factory = SharedInformerFactory::new(source.clone());
    let attempts = Arc::new(Mutex::new(Vec::<std::time::Instant>::new()));
    let retries = Arc::new(Mutex::new(Vec::<u32>::new()));
    let stop = CancellationToken::new();
    let reconcile = {
        let attempts = Arc::clone(&attempts);
        move |_: Request<ConfigMap>| {
            let attempt = {
                let mut attempts = attempts.lock();
                attempts.push(std::time::Instant::now());
                attempts.len()
            };
            async move {
                if attempt < 4 {
                    Err(std::io::Error::other(format!("attempt {attempt} fails")))
                } else {
                    Ok(Action::Done)
                }
            }
        }
    };
    // Backoff, then After, then Backoff again.
    let policy = {
        let retries = Arc::clone(&retries);
        move |failure: &Failure<'_, ConfigMap>| {
            let mut retries = retries.lock();
            retries.push(failure.retries);
            if retries.len() == 2 { Retry::After(DELAY) } else { Retry::Backoff }
        }
    };
    let controller =
        Controller::<ConfigMap, _>::new(&factory).queue(fast_queue()).error_policy(policy);
    let run = tokio::spawn(controller.run(reconcile, stop.clone()));
    until("the fourth attempt", || attempts.lock().len() == 4).await;
    let attempts = attempts.lock().clone();
    let waited = attempts[2] - attempts[1];
    assert!(waited >= DELAY, "the retry after `After` came after {waited:?}");
    assert_eq!(*retries.lock(), [0, 1, 0], "`After` forgot the retry before it");
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert_eq!((report.failed, report.succeeded), (3, 1), "{report:?}");
}

/// A panic is not an error the policy can judge: it backs off as always. A policy that panics
/// itself counts as `Retry::Default`, and the worker lives on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panics_back_off_without_the_policy_and_a_panicking_policy_is_the_default() {
    let source = FakeSource::new();
    source.add(configmap("panics", "1"));
    source.add(configmap("fails", "1"));
    let factory = SharedInformerFactory::new(source.clone());
    let attempts = Arc::new(Mutex::new(BTreeMap::<String, u32>::new()));
    let asked = Arc::new(AtomicU32::new(0));
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
            async move {
                match (key.as_str(), attempt) {
                    ("default/panics", 1) => panic!("the reconcile panics"),
                    ("default/fails", 1) => Err(std::io::Error::other("fails once")),
                    _ => Ok(Action::Done),
                }
            }
        }
    };
    let policy = {
        let asked = Arc::clone(&asked);
        move |_: &Failure<'_, ConfigMap>| -> Retry {
            asked.fetch_add(1, Ordering::SeqCst);
            panic!("the policy panics")
        }
    };
    let controller = Controller::<ConfigMap, _>::new(&factory)
        .queue(fast_queue())
        .workers(1)
        .error_policy(policy);
    let run = tokio::spawn(controller.run(reconcile, stop.clone()));
    let count = |key: &str| attempts.lock().get(key).copied().unwrap_or(0);
    until("both keys are retried", || count("default/panics") == 2 && count("default/fails") == 2)
        .await;
    assert_eq!(asked.load(Ordering::SeqCst), 1, "asked for the error, not for the panic");
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert_eq!((report.failed, report.succeeded), (2, 2), "{report:?}");
}

// --- Reconciling every object ---------------------------------------------------------------

/// kube-rs's `reconcile_all_on`: each item of the trigger reconciles every cached object; the
/// trigger is dropped when `run` ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_all_on_reconciles_every_object_on_each_item_and_ends_with_run() {
    let source = FakeSource::new();
    for name in ["a", "b", "c"] {
        source.add(configmap(name, "1"));
    }
    let factory = SharedInformerFactory::new(source.clone());
    let seen = Seen::default();
    let stop = CancellationToken::new();
    let (trigger, triggered) = futures::channel::mpsc::unbounded::<()>();
    let controller = Controller::<ConfigMap, _>::new(&factory)
        // A filter that drops every event: the trigger enqueues past it.
        .filter(crate::filter::Matching(|_: &ConfigMap| false))
        .reconcile_all_on(triggered);
    let run = tokio::spawn(controller.run(recording(&seen), stop.clone()));
    let each = |times: usize| {
        let seen = seen.lock();
        ["default/a", "default/b", "default/c"]
            .iter()
            .all(|key| seen.iter().filter(|(k, _)| k == key).count() == times)
    };
    // The caches sync (nothing is reconciled: the filter drops the initial list), then the
    // trigger is read.
    until("the caches sync", || factory.informer::<ConfigMap>().has_synced()).await;
    trigger.unbounded_send(()).expect("the controller reads its trigger");
    until("every object is reconciled", || each(1)).await;
    trigger.unbounded_send(()).expect("the controller reads its trigger");
    until("every object is reconciled again", || each(2)).await;
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert!(report.is_clean());
    assert!(trigger.is_closed(), "the trigger is dropped when run ends");
}

/// A controller's own resync (controller-runtime's `SyncPeriod`, per controller): every period,
/// every key, each after a delay of at most a tenth of the period on the queue's clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_reconciles_every_object_each_period_spread_over_a_tenth_of_it() {
    const PERIOD: Duration = Duration::from_millis(200);
    let source = FakeSource::new();
    for name in ["a", "b", "c"] {
        source.add(configmap(name, "1"));
    }
    let factory = SharedInformerFactory::new(source.clone());
    let clock = informer_runtime::testing::FakeClock::new();
    let queue = WorkQueue::builder().clock(Arc::new(clock.clone())).build();
    let seen = Seen::default();
    let stop = CancellationToken::new();
    let controller =
        Controller::<ConfigMap, _>::new(&factory).queue(queue.clone()).workers(3).resync(PERIOD);
    let run = tokio::spawn(controller.run(recording(&seen), stop.clone()));
    until("every object is reconciled once", || seen.lock().len() == 3).await;
    // A period later (tokio's time), the keys wait on the queue's clock, which stands still.
    until("every key waits for its delay", || queue.delayed() == 3).await;
    assert_eq!(seen.lock().len(), 3);
    clock.step(PERIOD / 10);
    until("every object is reconciled again", || seen.lock().len() == 6).await;
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, run).await.expect("ends").expect("task").expect("runs");
    assert!(report.is_clean());
}
