//! The finalizer helper over real HTTP to the embedded API server, writing through both
//! clients (this project's `Client` and kube-rs's `kube::Client`): the states of
//! kube-runtime's `finalizer` (its "Expected Flow": add, apply, delete, cleanup, remove), the
//! `test`-guarded patches against another controller's concurrent change, and a cleanup that
//! fails.
//!
//! kube-runtime has no tests of its finalizer helper (its `mock_tests.rs` keeps only a comment
//! of one); the scenarios follow the steps and guarantees its documentation lists, each named
//! in a comment.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "support/clients.rs"]
mod clients;

use std::error::Error as StdError;
use std::future::{Ready, ready};
use std::sync::Arc;
use std::time::Duration;

use clients::{kube_client, our_client};
use embedded_apiserver::ApiServer;
use embedded_apiserver::testing::eventually;
use informer_controller::controller::{Action, Controller};
use informer_controller::finalizer::{Event, FinalizerError, finalizer};
use informer_controller::{ApiWriter, WriteError};
use informer_runtime::{GroupVersionResource, Object, SharedInformerFactory};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// How long a test waits for a controller (real time) before it fails.
const DEADLINE: Duration = Duration::from_secs(20);
const OURS: &str = "example.com/cleanup";
/// What the recording reconcile answers to `Apply`: passed through as it is.
const APPLIED: Action = Action::RequeueAfter(Duration::from_secs(300));

/// Each scenario twice: writing through this project's client, and through kube-rs's.
macro_rules! with_both_clients {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn through_this_projects_client() {
                let server = embedded_apiserver::ApiServer::start().await.unwrap();
                let writer = std::sync::Arc::new(super::our_client(&server));
                super::$scenario(writer, &server).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn through_a_kube_client() {
                let server = embedded_apiserver::ApiServer::start().await.unwrap();
                let writer = std::sync::Arc::new(super::kube_client(&server).await);
                super::$scenario(writer, &server).await;
            }
        }
    )*};
}

with_both_clients!(
    the_first_reconcile_adds_the_finalizer_and_applies,
    a_deletion_runs_cleanup_once_and_the_object_goes,
    a_concurrent_finalizer_change_is_a_conflict_not_a_lost_finalizer,
    a_failed_cleanup_keeps_the_finalizer_and_the_object,
    a_cluster_scoped_object_is_finalized_the_same_way,
    a_controller_adds_applies_cleans_up_once_and_the_object_goes,
);

/// The reconcile's error, on purpose.
#[derive(Debug, thiserror::Error)]
#[error("{0} failed on purpose")]
struct Failed(&'static str);

/// What the recording reconcile saw: `apply` or `cleanup`, and the object's finalizers.
type Seen = Arc<Mutex<Vec<String>>>;

/// A reconcile that records each event and fails on `fail_on` (`"apply"`, `"cleanup"`).
fn recording<K: Object>(
    seen: &Seen,
    fail_on: Option<&'static str>,
) -> impl FnOnce(Event<K>) -> Ready<Result<Action, Failed>> + Send + 'static {
    let seen = Arc::clone(seen);
    move |event| {
        let (what, object, action) = match &event {
            Event::Apply(object) => ("apply", object, APPLIED),
            Event::Cleanup(object) => ("cleanup", object, Action::Done),
        };
        let finalizers = object.meta().finalizers.clone().unwrap_or_default();
        seen.lock().push(format!("{what} [{}]", finalizers.join(",")));
        ready(if fail_on == Some(what) { Err(Failed(what)) } else { Ok(action) })
    }
}

fn config_maps() -> GroupVersionResource {
    GroupVersionResource::of::<ConfigMap>()
}

/// Creates the config map `default/name` with `finalizers`.
fn create(server: &ApiServer, name: &str, finalizers: &[&str]) {
    let mut object = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"namespace": "default", "name": name}, "data": {"k": "v"}});
    if !finalizers.is_empty() {
        object["metadata"]["finalizers"] = json!(finalizers);
    }
    server.create(&config_maps(), object).unwrap();
}

/// The stored config map `default/name`, as a reconcile gets it; `None` once it is gone.
fn read(server: &ApiServer, name: &str) -> Option<Arc<ConfigMap>> {
    let stored = server.get(&config_maps(), "default", name)?;
    Some(Arc::new(serde_json::from_value(stored).unwrap()))
}

fn finalizers_of(server: &ApiServer, name: &str) -> Option<Vec<String>> {
    read(server, name).map(|o| o.metadata.finalizers.clone().unwrap_or_default())
}

/// Another controller sets the finalizers of `default/name` on the server.
fn set_finalizers(server: &ApiServer, name: &str, finalizers: &[&str]) {
    let mut stored = server.get(&config_maps(), "default", name).unwrap();
    stored["metadata"]["finalizers"] = json!(finalizers);
    server.update(&config_maps(), stored).unwrap();
}

/// Marks `default/name` for deletion; returns it as the reconcile then gets it.
fn delete(server: &ApiServer, name: &str) -> Arc<ConfigMap> {
    server.delete(&config_maps(), "default", name).unwrap();
    let deleting = read(server, name).expect("kept while it has finalizers");
    assert!(deleting.metadata.deletion_timestamp.is_some());
    deleting
}

/// What the controller checks (its `is_conflict`): a `WriteError` with `409 Conflict` in the
/// error's source chain.
fn is_conflict(error: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        let status = e.downcast_ref::<WriteError>().and_then(WriteError::status);
        if status.is_some_and(|s| s.code == 409 && s.reason == "Conflict") {
            return true;
        }
        next = e.source();
    }
    false
}

/// kube-runtime's "Expected Flow", steps 1 to 8: the finalizer is added before anything is
/// applied; here `Apply` runs at once on the patched object (kube-runtime waits for the next
/// event), then on each later reconcile without another write.
async fn the_first_reconcile_adds_the_finalizer_and_applies(
    writer: Arc<dyn ApiWriter>,
    server: &ApiServer,
) {
    let seen = Seen::default();
    create(server, "web", &[]);
    let object = read(server, "web").unwrap();
    let action = finalizer(&*writer, OURS, object, recording(&seen, None)).await.unwrap();
    assert_eq!(action, APPLIED, "the reconcile's own action");
    assert_eq!(*seen.lock(), [format!("apply [{OURS}]")], "Apply got the patched object");
    assert_eq!(finalizers_of(server, "web").unwrap(), [OURS]);

    // The reconcile the patch's update event causes: Apply again, nothing written.
    let added = read(server, "web").unwrap();
    let version = added.metadata.resource_version.clone();
    finalizer(&*writer, OURS, added, recording(&seen, None)).await.unwrap();
    assert_eq!(seen.lock().len(), 2);
    assert_eq!(read(server, "web").unwrap().metadata.resource_version, version);

    // Another controller's finalizer stays: ours goes after it.
    create(server, "shared", &["other.example/keep"]);
    let shared = read(server, "shared").unwrap();
    finalizer(&*writer, OURS, shared, recording(&seen, None)).await.unwrap();
    assert_eq!(finalizers_of(server, "shared").unwrap(), ["other.example/keep", OURS]);

    // An object with no name cannot be patched: nothing runs.
    let unnamed = Arc::new(ConfigMap::default());
    let error = finalizer(&*writer, OURS, unnamed, recording(&seen, None)).await.unwrap_err();
    assert!(matches!(error, FinalizerError::UnnamedObject), "{error}");
    assert_eq!(seen.lock().len(), 3);
}

/// kube-runtime's "Expected Flow", steps 9 to 13: the deletion marks the object, `Cleanup`
/// runs once, the finalizer is removed and the API server deletes the object. An object being
/// deleted without our finalizer (removed already, or never added) runs nothing.
async fn a_deletion_runs_cleanup_once_and_the_object_goes(
    writer: Arc<dyn ApiWriter>,
    server: &ApiServer,
) {
    let seen = Seen::default();
    create(server, "web", &[OURS]);
    let deleting = delete(server, "web");
    let action = finalizer(&*writer, OURS, deleting.clone(), recording(&seen, None)).await;
    assert_eq!(action.unwrap(), Action::Done, "the cleanup's own action");
    assert_eq!(*seen.lock(), [format!("cleanup [{OURS}]")]);
    assert!(read(server, "web").is_none(), "no finalizer left: the object is gone");

    // A late event of the object being deleted, without our finalizer: nothing runs.
    let mut late = (*deleting).clone();
    late.metadata.finalizers = None;
    let action = finalizer(&*writer, OURS, Arc::new(late), recording(&seen, None)).await;
    assert_eq!(action.unwrap(), Action::Done);
    assert_eq!(seen.lock().len(), 1, "cleanup ran once");

    // Another controller's finalizer keeps the object after ours is removed.
    create(server, "shared", &[OURS, "other.example/keep"]);
    let deleting = delete(server, "shared");
    finalizer(&*writer, OURS, deleting, recording(&seen, None)).await.unwrap();
    assert_eq!(finalizers_of(server, "shared").unwrap(), ["other.example/keep"]);
    let kept = read(server, "shared").unwrap();
    assert!(kept.metadata.deletion_timestamp.is_some());
    finalizer(&*writer, OURS, kept, recording(&seen, None)).await.unwrap();
    assert_eq!(seen.lock().len(), 2, "ours is gone: nothing more runs");
}

/// kube-runtime's `Test` operations ("we fail instead of deleting someone else's finalizer";
/// "Kubernetes doesn't automatically deduplicate finalizers"): a patch built from an object
/// read before another controller changed the finalizers changes nothing and is a conflict,
/// which the controller retries at once from the current object.
async fn a_concurrent_finalizer_change_is_a_conflict_not_a_lost_finalizer(
    writer: Arc<dyn ApiWriter>,
    server: &ApiServer,
) {
    let seen = Seen::default();

    // Adding the first finalizer while another controller adds its own.
    create(server, "first", &[]);
    let stale = read(server, "first").unwrap();
    set_finalizers(server, "first", &["other.example/x"]);
    let error = finalizer(&*writer, OURS, stale, recording(&seen, None)).await.unwrap_err();
    assert!(matches!(error, FinalizerError::AddFinalizer(_)), "{error}");
    assert!(is_conflict(&error), "{error:?}");
    assert_eq!(finalizers_of(server, "first").unwrap(), ["other.example/x"], "theirs kept");
    assert!(seen.lock().is_empty(), "nothing is applied without the finalizer");
    let current = read(server, "first").unwrap();
    finalizer(&*writer, OURS, current, recording(&seen, None)).await.unwrap();
    assert_eq!(finalizers_of(server, "first").unwrap(), ["other.example/x", OURS]);

    // Adding to a list another controller changed.
    create(server, "changed", &["other.example/x"]);
    let stale = read(server, "changed").unwrap();
    set_finalizers(server, "changed", &["other.example/x", "other.example/y"]);
    let error = finalizer(&*writer, OURS, stale, recording(&seen, None)).await.unwrap_err();
    assert!(is_conflict(&error), "{error:?}");
    assert_eq!(
        finalizers_of(server, "changed").unwrap(),
        ["other.example/x", "other.example/y"],
        "no duplicate, none lost"
    );

    // Removing ours after another controller removed theirs, which moved ours to index 0.
    create(server, "moved", &["other.example/x", OURS]);
    let stale = delete(server, "moved");
    set_finalizers(server, "moved", &[OURS]);
    let error = finalizer(&*writer, OURS, stale, recording(&seen, None)).await.unwrap_err();
    assert!(matches!(error, FinalizerError::RemoveFinalizer(_)), "{error}");
    assert!(is_conflict(&error), "{error:?}");
    assert_eq!(finalizers_of(server, "moved").unwrap(), [OURS], "the object waits for us");
    let current = read(server, "moved").unwrap();
    finalizer(&*writer, OURS, current, recording(&seen, None)).await.unwrap();
    assert!(read(server, "moved").is_none());
    let cleanups = seen.lock().iter().filter(|s| s.starts_with("cleanup")).count();
    assert_eq!(cleanups, 2, "the cleanup runs again after the conflict (it is idempotent)");
}

/// kube-runtime: "Short-circuit, so that we keep the finalizer if cleanup fails"; and a
/// failed `Apply` keeps the finalizer it was added after.
async fn a_failed_cleanup_keeps_the_finalizer_and_the_object(
    writer: Arc<dyn ApiWriter>,
    server: &ApiServer,
) {
    let seen = Seen::default();
    create(server, "web", &[]);
    let object = read(server, "web").unwrap();
    let error = finalizer(&*writer, OURS, object, recording(&seen, Some("apply"))).await;
    let error = error.unwrap_err();
    assert!(matches!(&error, FinalizerError::ApplyFailed(Failed("apply"))), "{error}");
    assert!(!is_conflict(&error));
    assert_eq!(finalizers_of(server, "web").unwrap(), [OURS], "added before Apply ran");

    let deleting = delete(server, "web");
    let error = finalizer(&*writer, OURS, deleting, recording(&seen, Some("cleanup"))).await;
    let error = error.unwrap_err();
    assert!(matches!(&error, FinalizerError::CleanupFailed(Failed("cleanup"))), "{error}");
    let source = error.source().unwrap();
    assert_eq!(source.to_string(), "cleanup failed on purpose");
    assert_eq!(finalizers_of(server, "web").unwrap(), [OURS], "the finalizer stays");
    let retried = read(server, "web").unwrap();
    finalizer(&*writer, OURS, retried, recording(&seen, None)).await.unwrap();
    assert!(read(server, "web").is_none(), "gone once a cleanup succeeded");
}

/// A cluster-scoped kind: its patches carry no namespace.
async fn a_cluster_scoped_object_is_finalized_the_same_way(
    writer: Arc<dyn ApiWriter>,
    server: &ApiServer,
) {
    let seen = Seen::default();
    let nodes = GroupVersionResource::of::<Node>();
    server
        .create(&nodes, json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}))
        .unwrap();
    let read_node = || -> Option<Arc<Node>> {
        let stored: Value = server.get(&nodes, "", "n1")?;
        Some(Arc::new(serde_json::from_value(stored).unwrap()))
    };
    finalizer(&*writer, OURS, read_node().unwrap(), recording(&seen, None)).await.unwrap();
    assert_eq!(read_node().unwrap().metadata.finalizers.as_deref(), Some(&[OURS.to_owned()][..]));
    server.delete(&nodes, "", "n1").unwrap();
    finalizer(&*writer, OURS, read_node().unwrap(), recording(&seen, None)).await.unwrap();
    assert!(read_node().is_none());
    assert_eq!(*seen.lock(), [format!("apply [{OURS}]"), format!("cleanup [{OURS}]")]);
}

/// The whole flow under a `Controller`: the first reconcile adds the finalizer and applies,
/// the deletion's reconcile cleans up once, and the object goes; the reconcile's error type is
/// `FinalizerError`.
async fn a_controller_adds_applies_cleans_up_once_and_the_object_goes(
    writer: Arc<dyn ApiWriter>,
    server: &ApiServer,
) {
    let seen = Seen::default();
    let factory = SharedInformerFactory::new(our_client(server));
    let stop = CancellationToken::new();
    let reconcile = {
        let seen = Arc::clone(&seen);
        move |request: informer_controller::controller::Request<ConfigMap>| {
            let (writer, seen) = (Arc::clone(&writer), Arc::clone(&seen));
            async move {
                let Some(object) = request.object else { return Ok(Action::Done) };
                finalizer(&*writer, OURS, object, recording(&seen, None)).await
            }
        }
    };
    let run = tokio::spawn(Controller::<ConfigMap, _>::new(&factory).run(reconcile, stop.clone()));
    create(server, "web", &[]);
    eventually("the finalizer is added and applied", DEADLINE, || {
        finalizers_of(server, "web").is_some_and(|f| f == [OURS])
            && seen.lock().iter().any(|s| s.starts_with("apply"))
    })
    .await;
    server.delete(&config_maps(), "default", "web").unwrap();
    eventually("the object is gone", DEADLINE, || read(server, "web").is_none()).await;
    let cleanups = || seen.lock().iter().filter(|s| s.starts_with("cleanup")).count();
    assert_eq!(cleanups(), 1);
    stop.cancel();
    let report = tokio::time::timeout(DEADLINE, run).await.unwrap().unwrap().unwrap();
    assert_eq!(report.failed, 0, "no reconcile failed: {report:?}");
    assert_eq!(cleanups(), 1, "cleanup ran once");
}
