//! An informer over a set of namespaces (issue 20): one reflector per namespace into one queue,
//! one cache, one set of handlers, against the in-process `FakeSource`.
//!
//! The scenarios are controller-runtime's multi-namespace cache tests (`pkg/cache/cache_test.go`
//! with `DefaultNamespaces`, over `multi_namespace_cache.go`), which keep one informer per
//! namespace; here one informer must behave as their union.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::clock::Random;
use crate::reflector::BackoffConfig;
use crate::selector::LabelSelector;
use crate::testing::objects::{labeled_pod, pod};
use crate::testing::wait::until;
use crate::testing::{FakeClock, FakeSource};

/// Every notification a handler received, as `add:ns/name`, `update:ns/name`, `delete:ns/name`.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Recorder {
    fn events(&self) -> Vec<String> {
        self.0.lock().clone()
    }

    fn count(&self, event: &str) -> usize {
        self.0.lock().iter().filter(|e| *e == event).count()
    }

    fn with_prefix(&self, prefix: &str) -> Vec<String> {
        let mut events: Vec<String> =
            self.0.lock().iter().filter(|e| e.starts_with(prefix)).cloned().collect();
        events.sort();
        events
    }
}

impl ResourceEventHandler<Pod> for Recorder {
    fn on_add(&self, obj: Arc<Pod>, _: bool) {
        self.0.lock().push(format!("add:{}", ObjectKey::of(&*obj)));
    }

    fn on_update(&self, _: Arc<Pod>, new: Arc<Pod>) {
        self.0.lock().push(format!("update:{}", ObjectKey::of(&*new)));
    }

    fn on_delete(&self, obj: DeletedObject<Pod>) {
        self.0.lock().push(format!("delete:{}", obj.key()));
    }
}

use crate::store::ObjectKey;

const COMPACT: StorageMode = StorageMode::Compact { recent: 0 };

/// An informer of pods over `namespaces`, each namespace's lister-watcher from `source_of` it,
/// its cache in `mode`, backing off for a millisecond.
fn informer_over(
    namespaces: &[&str],
    source_of: impl Fn(&str) -> FakeSource,
    mode: StorageMode,
) -> SharedIndexInformer<Pod> {
    informer_listing(namespaces, source_of, mode, false)
}

/// [`informer_over`], listing by streaming lists when `streaming`.
fn informer_listing(
    namespaces: &[&str],
    source_of: impl Fn(&str) -> FakeSource,
    mode: StorageMode,
    streaming: bool,
) -> SharedIndexInformer<Pod> {
    let lister_watchers = namespaces.iter().map(|ns| (*ns, source_of(ns).lister_watcher(Some(ns))));
    let backoff = BackoffConfig {
        initial: Duration::from_millis(1),
        max: Duration::from_millis(1),
        ..BackoffConfig::default()
    };
    let informer = SharedIndexInformer::<Pod>::for_namespaces(lister_watchers)
        .expect("a valid set")
        .with_random(Random::fixed(0.0))
        .with_reflector_config(
            ReflectorConfig::default().backoff(backoff).streaming_list(streaming),
        );
    match mode {
        StorageMode::Decoded => informer,
        StorageMode::Compact { recent } => informer.with_compact_storage(recent),
    }
}

fn start(informer: &SharedIndexInformer<Pod>) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let stop = CancellationToken::new();
    let handle = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move {
            let report = informer.run(stop).await;
            assert!(report.is_clean(), "{report}");
        }
    });
    (stop, handle)
}

async fn stop(stop: CancellationToken, handle: tokio::task::JoinHandle<()>) {
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .expect("the informer stops")
        .expect("no panic");
}

fn keys(informer: &SharedIndexInformer<Pod>) -> BTreeSet<String> {
    informer.cache().list_keys().into_iter().map(|k| k.as_str().to_owned()).collect()
}

fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|k| (*k).to_owned()).collect()
}

// controller-runtime's "should be able to restrict cache to a namespace by using the global
// DefaultNamespaces setting" and "should support filtering by labels from multiple namespaces"
// (cache_test.go), with a set of two: the one cache holds the objects of a and b, none of c; the
// lister lists them all, by namespace, and by labels across both.
#[tokio::test]
async fn the_cache_holds_exactly_the_objects_of_its_namespaces() {
    for mode in [StorageMode::Decoded, COMPACT] {
        let source = FakeSource::new();
        for ns in ["a", "b", "c"] {
            source.add(labeled_pod(ns, "web", &[("app", "web")]));
            source.add(pod(ns, "db", ""));
        }
        let informer = informer_over(&["a", "b"], |_| source.clone(), mode);
        let (token, handle) = start(&informer);
        assert!(informer.wait_for_sync().await);
        assert_eq!(keys(&informer), set(&["a/db", "a/web", "b/db", "b/web"]), "{mode:?}");
        let lister = informer.lister();
        assert_eq!(lister.list(&LabelSelector::everything()).len(), 4);
        assert_eq!(lister.namespace("a").list(&LabelSelector::everything()).len(), 2);
        assert!(lister.namespace("c").list(&LabelSelector::everything()).is_empty());
        let web = LabelSelector::parse("app=web").expect("a selector");
        let mut in_both: Vec<_> = lister.list(&web).iter().map(|p| ObjectKey::of(&**p)).collect();
        in_both.sort_by(|x, y| x.as_str().cmp(y.as_str()));
        assert_eq!(in_both, [ObjectKey::from("a/web"), ObjectKey::from("b/web")]);
        stop(token, handle).await;
    }
}

/// How many lists `source` served: plain lists and streaming lists.
fn lists(source: &FakeSource) -> usize {
    let streamed = source.watch_requests::<Pod>().iter().filter(|w| w.send_initial_events).count();
    source.list_requests::<Pod>().len() + streamed
}

// The bug a naive design has (issue 20): a's reflector relists after a 410 and its list holds
// only a's pods. Replacing the queue with it would tombstone every pod b's reflector delivered;
// here only a's pod that is gone is deleted, b's stay cached and no handler hears of them.
// client-go's TestSharedInformerWatchDisruption, in one namespace of two; decoded and compact
// caches, plain and streaming lists (TestWatchList).
#[tokio::test]
async fn a_relist_in_one_namespace_keeps_the_other_namespaces_objects() {
    let modes = [StorageMode::Decoded, COMPACT];
    for (mode, streaming) in modes.into_iter().flat_map(|m| [(m, false), (m, true)]) {
        // A source per namespace, so that the disruption reaches a's reflector alone.
        let (a, b) = (FakeSource::new(), FakeSource::new());
        a.add(pod("a", "a1", ""));
        a.add(pod("a", "a2", ""));
        b.add(pod("b", "b1", ""));
        b.add(pod("b", "b2", ""));
        let source_of = |ns: &str| if ns == "a" { a.clone() } else { b.clone() };
        let informer = informer_listing(&["a", "b"], source_of, mode, streaming);
        let recorder = Recorder::default();
        informer.add_event_handler(recorder.clone()).expect("running");
        let (token, handle) = start(&informer);
        assert!(informer.wait_for_sync().await);

        // a2's deletion is lost and a's history forgotten: a's watch ends, its rewatch gets
        // 410 Expired, and a relists.
        a.delete_drop_watch(&pod("a", "a2", ""));
        a.drop_watches();
        until("a's relist deletes a2", || !keys(&informer).contains("a/a2")).await;
        until("a deletion reaches the handler", || recorder.count("delete:a/a2") == 1).await;
        assert_eq!(lists(&a), 2, "a relisted");
        assert_eq!(lists(&b), 1, "b did not");
        assert_eq!(keys(&informer), set(&["a/a1", "b/b1", "b/b2"]), "{mode:?} {streaming}");
        // What happens next in b still flows.
        b.add(pod("b", "b3", ""));
        until("b's watch goes on", || recorder.count("add:b/b3") == 1).await;
        assert_eq!(recorder.with_prefix("delete:"), ["delete:a/a2"], "{mode:?} {streaming}");
        stop(token, handle).await;
    }
}

/// A lister-watcher whose lists fail while `hold` is set: a namespace that has not listed yet.
struct HeldLists {
    inner: Arc<dyn ListerWatcher<Pod>>,
    hold: Arc<std::sync::atomic::AtomicBool>,
}

impl ListerWatcher<Pod> for HeldLists {
    fn list(
        &self,
        options: &crate::listwatch::ListOptions,
    ) -> futures::future::BoxFuture<
        '_,
        Result<crate::listwatch::ObjectList<Pod>, crate::listwatch::Error>,
    > {
        if self.hold.load(std::sync::atomic::Ordering::SeqCst) {
            let status = crate::listwatch::Status::new(503, "ServiceUnavailable", "held");
            return Box::pin(std::future::ready(Err(crate::listwatch::Error::Api(status))));
        }
        self.inner.list(options)
    }

    fn watch(
        &self,
        options: &crate::listwatch::WatchOptions,
    ) -> futures::future::BoxFuture<
        '_,
        Result<crate::listwatch::WatchStream<Pod>, crate::listwatch::Error>,
    > {
        self.inner.watch(options)
    }
}

// controller-runtime's multiNamespaceInformer.HasSynced is true only when every namespace's
// informer has synced (client-go's HasSynced: each first list in the cache). While b cannot
// list, a's pods are cached but neither the informer nor a handler has synced.
#[tokio::test]
async fn has_synced_waits_for_every_namespace() {
    let source = FakeSource::new();
    source.add(pod("a", "a1", ""));
    source.add(pod("b", "b1", ""));
    let hold = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let held: Arc<dyn ListerWatcher<Pod>> =
        Arc::new(HeldLists { inner: source.lister_watcher(Some("b")), hold: Arc::clone(&hold) });
    let informer = SharedIndexInformer::<Pod>::for_namespaces([
        ("a", source.lister_watcher::<Pod>(Some("a"))),
        ("b", held),
    ])
    .expect("a valid set");
    let informer =
        informer.with_reflector_config(ReflectorConfig::default().backoff(BackoffConfig {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(1),
            ..BackoffConfig::default()
        }));
    let recorder = Recorder::default();
    let registration = informer.add_event_handler(recorder.clone()).expect("running");
    informer.set_watch_error_handler(|_| {}).expect("not started");
    let (token, handle) = start(&informer);
    until("a's pod is cached", || keys(&informer).contains("a/a1")).await;
    until("a's pod reaches the handler", || recorder.count("add:a/a1") == 1).await;
    assert!(!informer.has_synced());
    assert!(!registration.has_synced());
    hold.store(false, std::sync::atomic::Ordering::SeqCst);
    assert!(informer.wait_for_sync().await);
    assert!(registration.wait_for_sync().await);
    assert_eq!(keys(&informer), set(&["a/a1", "b/b1"]));
    stop(token, handle).await;
}

// Handlers are registered once and hear of every change in every namespace of the set exactly
// once (adds, updates, deletes, in a and in b), and of nothing in c. A resync replays the cache
// once per period, not once per namespace (client-go's TestListenerResyncPeriods, with the
// informer's reflectors sharing one cache).
#[tokio::test]
async fn handlers_hear_each_change_in_each_namespace_once() {
    let source = FakeSource::new();
    for ns in ["a", "b", "c"] {
        source.add(pod(ns, "p", ""));
    }
    let clock = FakeClock::new();
    let informer = informer_over(&["a", "b"], |_| source.clone(), StorageMode::Decoded)
        .with_resync(Duration::from_secs(1))
        .with_clock(Arc::new(clock.clone()));
    let recorder = Recorder::default();
    informer.add_event_handler(recorder.clone()).expect("running");
    let (token, handle) = start(&informer);
    assert!(informer.wait_for_sync().await);
    // c first: a change of c that reached a handler would be there before b's last one.
    for ns in ["c", "a", "b"] {
        source.add(pod(ns, "q", ""));
        let mut changed = pod(ns, "p", "");
        changed.metadata.labels = Some([("v".to_owned(), "2".to_owned())].into());
        source.modify(changed);
        source.delete(&pod(ns, "q", ""));
    }
    let expected = [
        "add:a/p",
        "add:a/q",
        "add:b/p",
        "add:b/q",
        "delete:a/q",
        "delete:b/q",
        "update:a/p",
        "update:b/p",
    ];
    until("b's last change arrives", || recorder.events().iter().any(|e| e == "delete:b/q")).await;
    until("every change in a and b arrives", || recorder.events().len() >= expected.len()).await;
    let mut events = recorder.events();
    events.sort();
    assert_eq!(events, expected);

    // One resync period: each cached pod replayed once (two reflectors, one replay).
    source.wait_for_watches::<Pod>(2).await;
    clock.wait_for_waiters(3).await;
    clock.step(Duration::from_secs(1));
    until("the resync reaches the handler", || recorder.count("update:b/p") >= 2).await;
    // A change after the resync: the handler has seen everything queued before it.
    source.add(pod("a", "after", ""));
    until("the change after the resync arrives", || recorder.count("add:a/after") == 1).await;
    assert_eq!((recorder.count("update:a/p"), recorder.count("update:b/p")), (2, 2));
    stop(token, handle).await;
}

// controller-runtime keeps one informer per namespace, each resyncing on its own: a namespace
// whose list keeps failing (no RBAC there, say) must not stop the others' resync.
#[tokio::test]
async fn a_namespace_that_cannot_list_does_not_stop_the_others_resync() {
    use crate::listwatch::{Error, Status};
    let forbidden = FakeSource::new();
    forbidden.set_list_error(Some(Error::Api(Status::new(403, "Forbidden", "no RBAC in a"))));
    let source = FakeSource::new();
    source.add(pod("b", "p", ""));
    let clock = FakeClock::new();
    let informer = informer_over(
        &["a", "b"],
        |ns| if ns == "a" { forbidden.clone() } else { source.clone() },
        StorageMode::Decoded,
    )
    .with_resync(Duration::from_secs(1))
    .with_clock(Arc::new(clock.clone()));
    let recorder = Recorder::default();
    informer.add_event_handler(recorder.clone()).expect("running");
    let (token, handle) = start(&informer);
    until("b's pod arrives", || recorder.count("add:b/p") == 1).await;
    assert!(!informer.has_synced(), "a never lists");
    until("b's pod is replayed by a resync", || {
        clock.step(Duration::from_secs(1));
        recorder.count("update:b/p") >= 1
    })
    .await;
    stop(token, handle).await;
}

// A set is a set: none, a namespace twice, "" (every namespace) and a cluster-scoped kind are
// refused, each with an error that says what to do instead.
#[test]
fn an_invalid_set_of_namespaces_is_refused() {
    use k8s_openapi::api::core::v1::Namespace;
    let source = FakeSource::new();
    let lw = |ns: &str| source.lister_watcher::<Pod>(Some(ns));
    let err = |r: Result<SharedIndexInformer<Pod>, InformerError>| r.expect_err("refused");
    let none: [(&str, Arc<dyn ListerWatcher<Pod>>); 0] = [];
    assert_eq!(err(SharedIndexInformer::for_namespaces(none)), InformerError::NoNamespaces);
    assert_eq!(
        err(SharedIndexInformer::for_namespaces([("a", lw("a")), ("a", lw("a"))])),
        InformerError::DuplicateNamespace("a".to_owned())
    );
    let all = err(SharedIndexInformer::for_namespaces([("a", lw("a")), ("", lw(""))]));
    assert_eq!(all, InformerError::AllNamespacesInSet);
    assert!(all.to_string().contains("SharedIndexInformer::new"), "{all}");
    let cluster = SharedIndexInformer::<Namespace>::for_namespaces([(
        "a",
        source.lister_watcher::<Namespace>(Some("a")),
    )]);
    assert_eq!(cluster.expect_err("refused"), InformerError::ClusterScoped("Namespace"));
}
