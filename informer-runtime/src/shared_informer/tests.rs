//! Ports of client-go's `shared_informer_test.go` scenarios, against the in-process `FakeSource`.
//!
//! Waits are on conditions with a deadline (a notification from the recording handler), never
//! sleeps to let things settle. Resync scenarios step a `FakeClock`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::clock::Random;
use crate::listwatch::{Error, Status};
use crate::testing::objects::{Gate, OpenOnDrop, pod};
use crate::testing::wait::until;
use crate::testing::{FakeClock, FakeSource};

const DEADLINE: Duration = Duration::from_secs(10);

/// client-go's `testListener`: records what it receives and wakes waiters.
#[derive(Clone, Default)]
struct Recorder {
    events: Arc<Mutex<Vec<String>>>,
    changed: Arc<Notify>,
}

impl Recorder {
    fn push(&self, event: String) {
        self.events.lock().push(event);
        self.changed.notify_waiters();
    }

    /// Names received through adds and updates (client-go's testListener ignores deletes).
    fn names(&self) -> BTreeSet<String> {
        self.events
            .lock()
            .iter()
            .filter_map(|e| e.strip_prefix("add:").or_else(|| e.strip_prefix("update:")))
            .map(String::from)
            .collect()
    }

    fn events(&self) -> Vec<String> {
        self.events.lock().clone()
    }

    fn reset(&self) {
        self.events.lock().clear();
    }

    async fn wait_until(&self, cond: impl Fn(&Self) -> bool) {
        let wait = async {
            loop {
                let changed = self.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if cond(self) {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(DEADLINE, wait)
            .await
            .unwrap_or_else(|_| panic!("condition not met; saw {:?}", self.events()));
    }

    async fn wait_for_names(&self, names: &[&str]) {
        let want: BTreeSet<String> = names.iter().map(|n| (*n).to_owned()).collect();
        self.wait_until(|r| r.names() == want).await;
    }
}

fn name(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}

impl ResourceEventHandler<Pod> for Recorder {
    fn on_add(&self, obj: Arc<Pod>, _: bool) {
        self.push(format!("add:{}", name(&obj)));
    }

    fn on_update(&self, _: Arc<Pod>, new: Arc<Pod>) {
        self.push(format!("update:{}", name(&new)));
    }

    fn on_delete(&self, obj: DeletedObject<Pod>) {
        self.push(format!("delete:{}", obj.key()));
    }
}

fn p(name: &str) -> Pod {
    pod("ns", name, "")
}

/// Runs `informer` on a task; stop it with the returned token and await the handle.
fn start(
    informer: &SharedIndexInformer<Pod>,
) -> (CancellationToken, tokio::task::JoinHandle<ShutdownReport>) {
    let stop = CancellationToken::new();
    let handle = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    (stop, handle)
}

async fn stop(stop: CancellationToken, handle: tokio::task::JoinHandle<ShutdownReport>) {
    stop.cancel();
    let report =
        tokio::time::timeout(DEADLINE, handle).await.expect("informer stops").expect("no panic");
    assert!(report.is_clean(), "{report}");
}

fn informer(source: &FakeSource) -> SharedIndexInformer<Pod> {
    SharedIndexInformer::new(source.lister_watcher::<Pod>(None)).with_random(Random::fixed(0.0))
}

/// [`informer`] with its cache in `mode`: the scenarios that read the cache (updates, relists,
/// resyncs, tombstones, late handlers, indexers) run in both storage modes.
fn informer_in(source: &FakeSource, mode: StorageMode) -> SharedIndexInformer<Pod> {
    match mode {
        StorageMode::Decoded => informer(source),
        StorageMode::Compact { recent } => informer(source).with_compact_storage(recent),
    }
}

/// The compact mode the `…_compact` variants run in: no recent objects, so that every read of
/// the cache decodes.
const COMPACT: StorageMode = StorageMode::Compact { recent: 0 };

/// Steps `clock` by `step` until `cond` holds (each step lets the informer's tasks run).
async fn step_until(
    clock: &FakeClock,
    step: Duration,
    recorder: &Recorder,
    cond: impl Fn(&Recorder) -> bool,
) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !cond(recorder) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met; saw {:?}",
            recorder.events()
        );
        clock.step(step);
        let changed = recorder.changed.notified();
        let _ = tokio::time::timeout(Duration::from_millis(20), changed).await;
    }
}

/// issue 17: a resync period near `Duration::MAX` used to panic when the handler was added
/// (`Instant + Duration` overflowed) and again at each resync check. It means "never".
#[tokio::test]
async fn a_resync_period_near_duration_max_means_never_and_never_panics() {
    let source = FakeSource::new();
    source.add(p("a"));
    let clock = FakeClock::new();
    let informer = informer(&source).with_resync(Duration::MAX).with_clock(Arc::new(clock.clone()));
    let recorder = Recorder::default();
    informer.add_event_handler(recorder.clone()).unwrap();
    let late = Recorder::default();
    let (stop_token, handle) = start(&informer);
    recorder.wait_for_names(&["a"]).await;
    informer.add_event_handler_with_resync_period(late.clone(), Duration::MAX).unwrap();
    late.wait_for_names(&["a"]).await;
    // A year later: still no resync, and the informer keeps running.
    clock.step(Duration::from_secs(365 * 86_400));
    source.add(p("b"));
    recorder.wait_for_names(&["a", "b"]).await;
    assert_eq!(recorder.events(), ["add:a", "add:b"]);
    stop(stop_token, handle).await;
}

// TestListenerResyncPeriods: each handler is resynced on its own period.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listener_resync_periods() {
    let source = FakeSource::new();
    source.add(p("pod1"));
    source.add(p("pod2"));
    let clock = FakeClock::new();
    let informer =
        informer(&source).with_resync(Duration::from_secs(1)).with_clock(Arc::new(clock.clone()));
    let (l1, l2, l3) = (Recorder::default(), Recorder::default(), Recorder::default());
    let h1 = informer.add_event_handler_with_resync_period(l1.clone(), Duration::ZERO).unwrap();
    let h2 =
        informer.add_event_handler_with_resync_period(l2.clone(), Duration::from_secs(2)).unwrap();
    let h3 =
        informer.add_event_handler_with_resync_period(l3.clone(), Duration::from_secs(3)).unwrap();
    let (token, handle) = start(&informer);
    for (l, h) in [(&l1, &h1), (&l2, &h2), (&l3, &h3)] {
        l.wait_for_names(&["pod1", "pod2"]).await;
        assert!(h.wait_for_sync().await);
    }
    source.wait_for_watches::<Pod>(1).await;
    clock.wait_for_waiters(1).await;

    for l in [&l1, &l2, &l3] {
        l.reset();
    }
    clock.step(Duration::from_secs(2));
    l2.wait_for_names(&["pod1", "pod2"]).await;
    assert_eq!(l2.events().iter().filter(|e| e.starts_with("update:")).count(), 2);
    assert!(l1.events().is_empty() && l3.events().is_empty());
    assert_eq!((h1.pending(), h3.pending()), (0, 0), "nothing was sent to L1 or L3");

    for l in [&l1, &l2, &l3] {
        l.reset();
    }
    clock.step(Duration::from_secs(1));
    l3.wait_for_names(&["pod1", "pod2"]).await;
    assert!(l1.events().is_empty() && l2.events().is_empty());
    stop(token, handle).await;
}

// TestResyncCheckPeriod: before start, a shorter handler period lowers the check period; each
// handler keeps its own period.
#[tokio::test]
async fn resync_check_period() {
    let source = FakeSource::new();
    let informer = informer(&source).with_resync(Duration::from_secs(12 * 3600));
    let periods = |hs: &[&ResourceEventHandlerRegistration<Pod>]| {
        hs.iter().map(|h| h.resync_period()).collect::<Vec<_>>()
    };
    let h1 =
        informer.add_event_handler_with_resync_period(Recorder::default(), Duration::ZERO).unwrap();
    assert_eq!(informer.resync_check_period(), Duration::from_secs(12 * 3600));
    assert_eq!(periods(&[&h1]), [Duration::ZERO]);
    let h2 = informer
        .add_event_handler_with_resync_period(Recorder::default(), Duration::from_secs(60))
        .unwrap();
    assert_eq!(informer.resync_check_period(), Duration::from_secs(60));
    let h3 = informer
        .add_event_handler_with_resync_period(Recorder::default(), Duration::from_secs(55))
        .unwrap();
    assert_eq!(informer.resync_check_period(), Duration::from_secs(55));
    assert_eq!(
        periods(&[&h1, &h2, &h3]),
        [Duration::ZERO, Duration::from_secs(60), Duration::from_secs(55)]
    );
    let h4 = informer
        .add_event_handler_with_resync_period(Recorder::default(), Duration::from_secs(5))
        .unwrap();
    assert_eq!(informer.resync_check_period(), Duration::from_secs(5));
    assert_eq!(
        periods(&[&h1, &h2, &h3, &h4]),
        [Duration::ZERO, Duration::from_secs(60), Duration::from_secs(55), Duration::from_secs(5)]
    );
    let tiny = informer
        .add_event_handler_with_resync_period(Recorder::default(), Duration::from_millis(10))
        .unwrap();
    assert_eq!(tiny.resync_period(), Duration::from_secs(1), "minimum resync period is 1 s");
}

#[tokio::test]
async fn resync_period_after_start_is_raised_to_check_period() {
    let source = FakeSource::new();
    let informer = informer(&source).with_resync(Duration::from_secs(30));
    let (token, handle) = start(&informer);
    assert!(informer.wait_for_sync().await);
    let h = informer
        .add_event_handler_with_resync_period(Recorder::default(), Duration::from_secs(5))
        .unwrap();
    assert_eq!(h.resync_period(), Duration::from_secs(30));
    assert_eq!(informer.resync_check_period(), Duration::from_secs(30));
    stop(token, handle).await;
}

// TestSharedInformerWatchDisruption: lost events are recovered by the relist that follows a
// reset; unchanged objects reach only the handler due for a resync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_disruption() {
    watch_disruption_in(StorageMode::Decoded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_disruption_compact() {
    watch_disruption_in(COMPACT).await;
}

async fn watch_disruption_in(mode: StorageMode) {
    let source = FakeSource::new();
    source.add(p("pod1"));
    let pod2 = source.add(p("pod2"));
    let clock = FakeClock::new();
    let informer = informer_in(&source, mode)
        .with_resync(Duration::from_secs(1))
        .with_clock(Arc::new(clock.clone()));
    let no_resync = Recorder::default();
    let resync = Recorder::default();
    informer.add_event_handler_with_resync_period(no_resync.clone(), Duration::ZERO).unwrap();
    informer.add_event_handler_with_resync_period(resync.clone(), Duration::from_secs(1)).unwrap();
    let (token, handle) = start(&informer);
    no_resync.wait_for_names(&["pod1", "pod2"]).await;
    resync.wait_for_names(&["pod1", "pod2"]).await;
    source.wait_for_watches::<Pod>(1).await;

    // Changes the watch never delivers.
    source.add_drop_watch(p("pod3"));
    let mut changed = (*pod2).clone();
    changed.metadata.labels = Some([("changed".to_owned(), "yes".to_owned())].into());
    source.modify_drop_watch(changed);
    assert_eq!(no_resync.names(), ["pod1", "pod2"].map(String::from).into());

    no_resync.reset();
    resync.reset();
    clock.wait_for_waiters(1).await;
    clock.step(Duration::from_secs(1)); // the resync round marks `resync` as syncing
    resync.wait_until(|r| r.names().len() == 2).await;
    source.reset_watch(); // the watch breaks; its version is gone: relist after a backoff
    step_until(&clock, Duration::from_millis(100), &no_resync, |r| r.names().len() == 2).await;
    no_resync.wait_for_names(&["pod2", "pod3"]).await;
    resync.wait_for_names(&["pod1", "pod2", "pod3"]).await;
    stop(token, handle).await;
}

// TestSharedInformerErrorHandling: list errors reach the watch-error handler.
#[tokio::test]
async fn error_handling() {
    let source = FakeSource::new();
    source.set_list_error(Some(Error::Api(Status::new(403, "Forbidden", "Access Denied"))));
    let informer = informer(&source);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    informer
        .set_watch_error_handler(move |e| {
            let _ = tx.send(e.to_string());
        })
        .unwrap();
    let (token, handle) = start(&informer);
    let error = tokio::time::timeout(DEADLINE, rx.recv()).await.unwrap().unwrap();
    assert!(error.contains("Access Denied"), "{error}");
    assert!(matches!(
        informer.set_watch_error_handler(|_| {}),
        Err(InformerError::AlreadyStarted(_))
    ));
    stop(token, handle).await;
}

// TestSharedInformerTransformer: the transform applies before the cache and the handlers.
#[tokio::test]
async fn transformer() {
    transformer_in(StorageMode::Decoded).await;
}

#[tokio::test]
async fn transformer_compact() {
    transformer_in(COMPACT).await;
}

async fn transformer_in(mode: StorageMode) {
    let source = FakeSource::new();
    source.add(p("pod1"));
    source.add(p("pod2"));
    let informer = informer_in(&source, mode);
    informer
        .set_transform(|pod: &mut Pod| {
            pod.metadata.name = pod.metadata.name.as_ref().map(|n| n.to_uppercase());
        })
        .unwrap();
    let listener = Recorder::default();
    informer.add_event_handler(listener.clone()).unwrap();
    let (token, handle) = start(&informer);
    listener.wait_for_names(&["POD1", "POD2"]).await;
    assert!(informer.cache().get_by_key("ns/POD1").is_some());
    assert!(matches!(
        informer.set_transform(|_| {}),
        Err(InformerError::AlreadyStarted("transform"))
    ));
    stop(token, handle).await;
}

// TestSharedInformerRemoveHandler and its companions: removal is idempotent, foreign
// registrations are ignored, the same handler may be registered twice.
#[tokio::test]
async fn remove_handler() {
    let source = FakeSource::new();
    let informer = informer(&source);
    let other = self::informer(&source);
    let handler = Arc::new(Recorder::default());
    let h1 = informer.add_event_handler(Recorder::default()).unwrap();
    let h2 = informer.add_event_handler(Recorder::default()).unwrap();
    let foreign = other.add_event_handler(Recorder::default()).unwrap();
    assert_eq!(informer.handler_count(), 2);
    informer.remove_event_handler(&foreign);
    assert_eq!((informer.handler_count(), other.handler_count()), (2, 1));
    informer.remove_event_handler(&h2);
    assert_eq!(informer.handler_count(), 1);
    informer.remove_event_handler(&h2);
    informer.remove_event_handler(&h1);
    assert_eq!(informer.handler_count(), 0);

    let a = informer.add_event_handler(Arc::clone(&handler)).unwrap();
    let b = informer.add_event_handler(handler).unwrap();
    assert_eq!(informer.handler_count(), 2);
    informer.remove_event_handler(&a);
    assert_eq!(informer.handler_count(), 1);
    assert!(!b.is_stopped());
}

/// A handler that blocks while its gate is held, then records.
struct Gated {
    gate: Arc<Mutex<()>>,
    recorder: Recorder,
}

impl ResourceEventHandler<Pod> for Gated {
    fn on_add(&self, obj: Arc<Pod>, initial: bool) {
        drop(self.gate.lock());
        self.recorder.on_add(obj, initial);
    }
}

// TestAddWhileActive: a late handler gets the cache as synthetic adds first, and its handle is
// not synced until it has processed them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_while_active() {
    add_while_active_in(StorageMode::Decoded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_while_active_compact() {
    add_while_active_in(COMPACT).await;
}

async fn add_while_active_in(mode: StorageMode) {
    let source = FakeSource::new();
    let informer = informer_in(&source, mode);
    let l1 = Recorder::default();
    let h1 = informer.add_event_handler(l1.clone()).unwrap();
    assert!(!h1.has_synced());
    let (token, handle) = start(&informer);
    source.wait_for_watches::<Pod>(1).await;
    source.add(p("pod1"));
    l1.wait_for_names(&["pod1"]).await;
    assert!(h1.wait_for_sync().await);

    let gate = Arc::new(Mutex::new(()));
    let held = gate.lock();
    let l2 = Recorder::default();
    let h2 = informer
        .add_event_handler(Gated { gate: Arc::clone(&gate), recorder: l2.clone() })
        .unwrap();
    assert!(!h2.has_synced(), "the synthetic add of pod1 is not processed yet");
    assert_eq!(h2.pending(), 1);
    drop(held);
    source.add(p("pod2"));
    l2.wait_for_names(&["pod1", "pod2"]).await;
    assert!(h2.wait_for_sync().await);
    assert_eq!(l2.events(), ["add:pod1", "add:pod2"], "nothing lost or duplicated");
    l1.wait_for_names(&["pod1", "pod2"]).await;
    stop(token, handle).await;
}

// TestRemoveWhileActive: a removed handler receives nothing more.
#[tokio::test]
async fn remove_while_active() {
    let source = FakeSource::new();
    let informer = informer(&source);
    let l = Recorder::default();
    let h = informer.add_event_handler(l.clone()).unwrap();
    let (token, handle) = start(&informer);
    source.wait_for_watches::<Pod>(1).await;
    source.add(p("pod1"));
    l.wait_for_names(&["pod1"]).await;
    informer.remove_event_handler(&h);
    assert!(h.is_stopped());
    let witness = Recorder::default();
    informer.add_event_handler(witness.clone()).unwrap();
    source.add(p("pod2"));
    witness.wait_for_names(&["pod1", "pod2"]).await;
    assert_eq!(l.events(), ["add:pod1"]);
    stop(token, handle).await;
}

// TestAddOnStoppedSharedInformer, TestRemoveOnStoppedSharedInformer, TestStateSharedInformer.
#[tokio::test]
async fn add_on_stopped_informer() {
    let source = FakeSource::new();
    let informer = informer(&source);
    let h = informer.add_event_handler(Recorder::default()).unwrap();
    assert_eq!((informer.is_started(), informer.is_stopped()), (false, false));
    let (token, handle) = start(&informer);
    assert!(informer.wait_for_sync().await);
    assert_eq!((informer.is_started(), informer.is_stopped()), (true, false));
    stop(token, handle).await;
    assert_eq!((informer.is_started(), informer.is_stopped()), (true, true));
    let err = informer.add_event_handler(Recorder::default()).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("was not added to shared informer because it has stopped already")
    );
    assert!(informer.stream().is_err());
    informer.remove_event_handler(&h);
    assert!(h.is_stopped());
    assert!(!h.wait_for_sync().await || h.has_synced());
}

// TestShutdown: run returns only when every task and handler thread it started has ended
// (`stop` checks the report is clean, which it is only once every handler thread is done); an
// informer that never ran starts none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_joins_every_task() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let baseline = metrics.num_alive_tasks();
    let source = FakeSource::new();
    source.add(p("pod1"));

    let never_run = informer(&source);
    never_run.add_event_handler(Recorder::default()).unwrap();
    assert_eq!(metrics.num_alive_tasks(), baseline, "no-run: nothing spawned");

    let informer = informer(&source);
    let early = informer.add_event_handler(Recorder::default()).unwrap();
    let (token, handle) = start(&informer);
    assert!(early.wait_for_sync().await);
    let late = informer.add_event_handler(Recorder::default()).unwrap();
    assert!(late.wait_for_sync().await);
    assert!(metrics.num_alive_tasks() > baseline, "the run task");
    stop(token, handle).await;
    assert_eq!(
        crate::testing::objects::settle_alive_tasks(baseline).await,
        baseline,
        "every task joined"
    );
    assert!(early.is_stopped() && late.is_stopped());
}

/// Panics on the first add it sees.
struct PanicsOnce {
    panicked: Mutex<bool>,
    recorder: Recorder,
}

impl ResourceEventHandler<Pod> for PanicsOnce {
    fn on_add(&self, obj: Arc<Pod>, initial: bool) {
        assert!(std::mem::replace(&mut *self.panicked.lock(), true), "handler bug");
        self.recorder.on_add(obj, initial);
    }
}

// A panicking handler is contained: reported, its notification skipped, the handler and the
// informer go on (client-go re-panics by default; the contract chose containment).
#[tokio::test]
async fn event_panics_are_contained() {
    let source = FakeSource::new();
    let informer = informer(&source);
    let recorder = Recorder::default();
    let witness = Recorder::default();
    let h = informer
        .add_event_handler(PanicsOnce { panicked: Mutex::new(false), recorder: recorder.clone() })
        .unwrap();
    informer.add_event_handler(witness.clone()).unwrap();
    let (token, handle) = start(&informer);
    source.wait_for_watches::<Pod>(1).await;
    source.add(p("pod1"));
    source.add(p("pod2"));
    witness.wait_for_names(&["pod1", "pod2"]).await;
    recorder.wait_for_names(&["pod2"]).await;
    assert_eq!(h.panics(), 1);
    stop(token, handle).await;
}

// TestIndexer (contract section 5): indexers can be added after start; existing objects are
// indexed at once, and a name clash is an error.
#[tokio::test]
async fn add_indexers_while_running() {
    add_indexers_while_running_in(StorageMode::Decoded).await;
}

#[tokio::test]
async fn add_indexers_while_running_compact() {
    add_indexers_while_running_in(COMPACT).await;
}

async fn add_indexers_while_running_in(mode: StorageMode) {
    let source = FakeSource::new();
    let mut labeled = p("pod1");
    labeled.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
    source.add(labeled);
    source.add(p("pod2"));
    let informer = informer_in(&source, mode);
    let (token, handle) = start(&informer);
    assert!(informer.wait_for_sync().await);
    let by_app: crate::store::IndexFn<Pod> = Arc::new(|p: &Pod| {
        p.metadata.labels.as_ref().and_then(|l| l.get("app")).cloned().into_iter().collect()
    });
    informer.add_indexers([("app".to_owned(), Arc::clone(&by_app))].into()).unwrap();
    let web = informer.cache().by_index("app", "web").unwrap();
    assert_eq!(web.len(), 1);
    assert!(matches!(
        informer.add_indexers([("app".to_owned(), by_app)].into()),
        Err(IndexError::Conflict(_))
    ));
    assert_eq!(informer.cache().by_index(crate::store::NAMESPACE_INDEX, "ns").unwrap().len(), 2);
    stop(token, handle).await;
}

// Deletes reach handlers typed: the object from a watch, a tombstone from a relist.
#[tokio::test]
async fn deletes_are_typed() {
    deletes_are_typed_in(StorageMode::Decoded).await;
}

#[tokio::test]
async fn deletes_are_typed_compact() {
    deletes_are_typed_in(COMPACT).await;
}

async fn deletes_are_typed_in(mode: StorageMode) {
    let source = FakeSource::new();
    let gone = source.add(p("gone"));
    let missed = source.add(p("missed"));
    let informer = informer_in(&source, mode);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let changed = Arc::new(Notify::new());
    let c = Arc::clone(&changed);
    informer
        .add_event_handler(HandlerFuncs::new().on_delete(move |d: DeletedObject<Pod>| {
            s.lock().push((d.key().to_string(), d.is_final_state_unknown()));
            c.notify_waiters();
        }))
        .unwrap();
    let (token, handle) = start(&informer);
    assert!(informer.wait_for_sync().await);
    source.wait_for_watches::<Pod>(1).await;
    let wait = |n: usize| {
        let (seen, changed) = (Arc::clone(&seen), Arc::clone(&changed));
        async move {
            tokio::time::timeout(DEADLINE, async {
                loop {
                    let notified = changed.notified();
                    tokio::pin!(notified);
                    notified.as_mut().enable();
                    if seen.lock().len() >= n {
                        return;
                    }
                    notified.await;
                }
            })
            .await
            .expect("deletes arrive");
        }
    };
    source.delete(&*gone);
    wait(1).await;
    source.delete_drop_watch(&*missed);
    source.reset_watch();
    wait(2).await;
    assert_eq!(*seen.lock(), [("ns/gone".to_owned(), false), ("ns/missed".to_owned(), true)]);
    stop(token, handle).await;
}

// The notification stream: the same deliveries as a handler, as a Stream.
#[tokio::test]
async fn notification_stream() {
    let source = FakeSource::new();
    source.add(p("pod1"));
    let informer = informer(&source);
    let (token, handle) = start(&informer);
    assert!(informer.wait_for_sync().await);
    let mut stream = informer.stream().unwrap();
    assert!(!stream.registration().has_synced(), "the replayed cache is not taken yet");
    let first = tokio::time::timeout(DEADLINE, stream.next()).await.unwrap().unwrap();
    assert!(
        matches!(first, Notification::Add { ref obj, is_in_initial_list: true } if name(obj) == "pod1")
    );
    assert!(stream.registration().has_synced());
    source.wait_for_watches::<Pod>(1).await;
    source.add(p("pod2"));
    let second = tokio::time::timeout(DEADLINE, stream.next()).await.unwrap().unwrap();
    assert!(
        matches!(second, Notification::Add { ref obj, is_in_initial_list: false } if name(obj) == "pod2")
    );
    assert_eq!(informer.handler_count(), 1);
    drop(stream);
    assert_eq!(informer.handler_count(), 0, "dropping the stream unregisters it");
    stop(token, handle).await;
}

// A slow handler delays nobody: the others get everything while its buffer grows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[expect(
    clippy::await_holding_lock,
    reason = "the gate is held on purpose: it stalls the slow handler"
)]
async fn slow_handler_does_not_delay_others() {
    let source = FakeSource::new();
    let informer = informer(&source);
    let gate = Arc::new(Mutex::new(()));
    let held = gate.lock();
    let slow = informer
        .add_event_handler(Gated { gate: Arc::clone(&gate), recorder: Recorder::default() })
        .unwrap();
    let fast = Recorder::default();
    informer.add_event_handler(fast.clone()).unwrap();
    let (token, handle) = start(&informer);
    source.wait_for_watches::<Pod>(1).await;
    for i in 0..50 {
        source.add(p(&format!("pod{i}")));
    }
    fast.wait_until(|r| r.names().len() == 50).await;
    assert!(slow.pending() >= 49, "the slow handler's notifications wait in its own buffer");
    drop(held);
    stop(token, handle).await;
}

/// What a test's thread logs, as text.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn count(&self, needle: &str) -> usize {
        String::from_utf8_lossy(&self.0.lock()).matches(needle).count()
    }
}

/// A handler's buffer stays unbounded (nothing is dropped, nobody waits), but passing the mark
/// logs one warning per crossing: not one per notification, and again only after the handler
/// caught up.
#[tokio::test]
async fn a_handler_backlog_past_the_mark_warns_once_per_crossing() {
    let logs = Logs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .with_ansi(false)
        .finish();
    // The processing path runs on this (current-thread) runtime, so this thread's subscriber
    // sees the warning; the handler's own thread logs the "caught up" line elsewhere.
    let _subscriber = tracing::subscriber::set_default(subscriber);
    let warning = "an event handler is falling behind";

    let source = FakeSource::new();
    source.add(p("a"));
    let informer = informer(&source).with_handler_backlog_warning(5);
    let gate = Gate::default();
    let _open = OpenOnDrop(gate.clone());
    let registration = informer
        .add_event_handler(HandlerFuncs::new().on_update({
            let gate = gate.clone();
            move |_, _| gate.pass()
        }))
        .unwrap();
    let (stop_token, handle) = start(&informer);
    assert!(registration.wait_for_sync().await);

    for round in 1..=2 {
        gate.close();
        for rv in 0..20 {
            source.modify(pod("ns", "a", &format!("{round}-{rv}")));
        }
        until("20 updates wait for the blocked handler", || registration.pending() == 20).await;
        assert_eq!(logs.count(warning), round, "one warning per crossing, round {round}");
        gate.open();
        until("the handler catches up", || registration.pending() == 0).await;
    }
    assert_eq!(registration.panics(), 0);
    stop(stop_token, handle).await;
}

/// A handler that blocks delays only itself: the others and the processing path go on. With
/// more blocked handlers than the runtime has workers, the informer still syncs, another
/// handler still gets every change, and `run` still returns after its shutdown timeout, naming
/// the handlers that did not return.
#[test]
fn blocking_handlers_starve_nothing_and_shutdown_names_them() {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let gate = Gate::default();
    gate.close();
    // Opened before the runtime is dropped, on success and on failure alike.
    let _open = OpenOnDrop(gate.clone());
    let source = FakeSource::new();
    source.add(p("a"));
    let informer = informer(&source).with_shutdown_timeout(Duration::from_millis(200));
    let (entered, entered_rx) = std::sync::mpsc::channel();
    let mut blocked: Vec<u64> = (0..3)
        .map(|_| {
            let (gate, entered) = (gate.clone(), entered.clone());
            let handler = HandlerFuncs::new().on_add(move |_, _| {
                let _ = entered.send(());
                gate.pass();
            });
            informer.add_event_handler(handler).unwrap().id()
        })
        .collect();
    let (seen, seen_by_free_handler) = std::sync::mpsc::channel();
    informer
        .add_event_handler(HandlerFuncs::new().on_add(move |pod: Arc<Pod>, _| {
            let _ = seen.send(name(&pod));
        }))
        .unwrap();
    let stop_token = CancellationToken::new();
    let run = runtime.spawn({
        let (informer, stop_token) = (informer.clone(), stop_token.clone());
        async move { informer.run(stop_token).await }
    });
    let std_deadline = DEADLINE;
    assert_eq!(seen_by_free_handler.recv_timeout(std_deadline).as_deref(), Ok("a"));
    source.add(p("b"));
    assert_eq!(seen_by_free_handler.recv_timeout(std_deadline).as_deref(), Ok("b"));

    for _ in 0..3 {
        entered_rx.recv_timeout(std_deadline).expect("every blocking handler is called");
    }
    stop_token.cancel();
    let report = runtime
        .block_on(async { tokio::time::timeout(DEADLINE, run).await })
        .expect("run returns within the shutdown timeout")
        .expect("no panic");
    let mut unfinished: Vec<u64> = report.unfinished().iter().map(UnfinishedHandler::id).collect();
    unfinished.sort_unstable();
    blocked.sort_unstable();
    assert_eq!(unfinished, blocked, "{report}");
    for handler in report.unfinished() {
        assert_eq!(handler.resource(), "v1, Resource=pods");
        assert!(handler.handling().starts_with("Add(ns/a@"), "{handler}");
    }
}

// A queue bound of one watch event holds the watch back at every event and still delivers every
// change, in order, to every handler. (No client-go scenario: its DeltaFIFO is unbounded.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_bound_of_one_delivers_every_change_in_order() {
    let source = FakeSource::new();
    source.add(p("seed"));
    let informer = informer(&source).with_max_queued_deltas(1);
    let (first, second) = (Recorder::default(), Recorder::default());
    informer.add_event_handler(first.clone()).unwrap();
    informer.add_event_handler(second.clone()).unwrap();
    let (token, handle) = start(&informer);
    first.wait_for_names(&["seed"]).await;

    let changes: Vec<String> = (0..300).map(|i| format!("pod-{:03}", i % 30)).collect();
    for name in &changes {
        let mut pod = p(name);
        pod.metadata.annotations = Some([("step".to_owned(), name.clone())].into());
        source.modify(pod);
    }
    let expected: Vec<String> =
        ["add:seed".to_owned()]
            .into_iter()
            .chain(changes.iter().enumerate().map(|(i, name)| {
                if i < 30 { format!("add:{name}") } else { format!("update:{name}") }
            }))
            .collect();
    for recorder in [&first, &second] {
        recorder.wait_until(|r| r.events().len() >= expected.len()).await;
        assert_eq!(recorder.events(), expected);
    }
    assert_eq!(informer.cache().len(), 31);
    stop(token, handle).await;
}

/// Records what updates carry: old and new resource versions and `app` labels.
#[derive(Clone, Default)]
struct UpdateRecorder(Recorder);

impl ResourceEventHandler<Pod> for UpdateRecorder {
    fn on_add(&self, obj: Arc<Pod>, _: bool) {
        self.0.push(format!("add:{}", name(&obj)));
    }

    fn on_update(&self, old: Arc<Pod>, new: Arc<Pod>) {
        let show = |p: &Pod| {
            let app = p.metadata.labels.as_ref().and_then(|l| l.get("app")).cloned();
            format!(
                "{}@{}",
                app.unwrap_or_default(),
                p.metadata.resource_version.clone().unwrap_or_default()
            )
        };
        self.0.push(format!("update:{}:{}->{}", name(&new), show(&old), show(&new)));
    }

    fn on_delete(&self, obj: DeletedObject<Pod>) {
        self.0.push(format!("delete:{}", obj.key()));
    }
}

// Handlers get the replaced object as `old` and the new one as `new`, in either storage mode
// (the compact one decodes `old` from the cache, or has it among its recent objects), and
// listers read the new one.
async fn updates_carry_the_old_and_new_objects_in(mode: StorageMode) {
    let source = FakeSource::new();
    let labeled = |app: &str| {
        let mut pod = p("pod1");
        pod.metadata.labels = Some([("app".to_owned(), app.to_owned())].into());
        pod
    };
    let v1 = source.add(labeled("v1"));
    for i in 0..20 {
        source.add(p(&format!("other{i}")));
    }
    let informer = informer_in(&source, mode);
    let recorder = UpdateRecorder::default();
    informer.add_event_handler(recorder.clone()).unwrap();
    let (token, handle) = start(&informer);
    assert!(informer.wait_for_sync().await);
    source.wait_for_watches::<Pod>(1).await;
    let rv = |pod: &Pod| pod.metadata.resource_version.clone().unwrap_or_default();
    let v2 = source.modify(labeled("v2"));
    let v3 = source.modify(labeled("v3"));
    let want = [
        format!("update:pod1:v1@{}->v2@{}", rv(&v1), rv(&v2)),
        format!("update:pod1:v2@{}->v3@{}", rv(&v2), rv(&v3)),
    ];
    recorder
        .0
        .wait_until(|r| r.events().iter().filter(|e| e.starts_with("update:")).count() == 2)
        .await;
    let updates: Vec<String> =
        recorder.0.events().into_iter().filter(|e| e.starts_with("update:")).collect();
    assert_eq!(updates, want);
    let lister = informer.lister();
    assert_eq!(lister.namespace("ns").get("pod1").unwrap(), v3);
    let v3_selector = crate::selector::LabelSelector::parse("app=v3").unwrap();
    assert_eq!(lister.list(&v3_selector), [Arc::clone(&v3)]);
    assert!(lister.list(&crate::selector::LabelSelector::parse("app=v1").unwrap()).is_empty());
    source.delete(&*v3);
    recorder.0.wait_until(|r| r.events().contains(&"delete:ns/pod1".to_owned())).await;
    assert!(lister.namespace("ns").get("pod1").is_err());
    assert_eq!(informer.cache().len(), 20);
    stop(token, handle).await;
}

#[tokio::test]
async fn updates_carry_the_old_and_new_objects() {
    updates_carry_the_old_and_new_objects_in(StorageMode::Decoded).await;
}

#[tokio::test]
async fn updates_carry_the_old_and_new_objects_compact() {
    updates_carry_the_old_and_new_objects_in(COMPACT).await;
    updates_carry_the_old_and_new_objects_in(StorageMode::Compact { recent: 4 }).await;
}

/// A lister-watcher that lists as the HTTP client does: each item's JSON is offered to the
/// intake undecoded first ([`ListIntake::take_json`]), and decoded only if refused. Its watches
/// stay open and quiet.
struct JsonLister(Vec<Vec<u8>>);

impl<K: Resource> ListerWatcher<K> for JsonLister {
    fn list(
        &self,
        options: &crate::listwatch::ListOptions,
    ) -> futures::future::BoxFuture<'_, Result<crate::listwatch::ObjectList<K>, Error>> {
        struct Keep;
        impl<K> crate::listwatch::ListIntake<K> for Keep {
            fn unchanged(&self, _: &K) -> Option<Arc<K>> {
                None
            }
            fn take(&self, item: Arc<K>) -> Option<Arc<K>> {
                Some(item)
            }
        }
        self.list_into(options, Arc::new(Keep))
    }

    fn watch(
        &self,
        _: &crate::listwatch::WatchOptions,
    ) -> futures::future::BoxFuture<'_, Result<crate::listwatch::WatchStream<K>, Error>> {
        Box::pin(async { Ok(futures::stream::pending().boxed()) })
    }

    fn list_into(
        &self,
        _: &crate::listwatch::ListOptions,
        intake: Arc<dyn crate::listwatch::ListIntake<K>>,
    ) -> futures::future::BoxFuture<'_, Result<crate::listwatch::ObjectList<K>, Error>> {
        Box::pin(async move {
            let mut items = Vec::new();
            for json in &self.0 {
                if intake.take_json(json, (K::API_VERSION, K::KIND)) {
                    continue;
                }
                let item: K =
                    serde_json::from_slice(json).map_err(|e| Error::Decode(e.to_string()))?;
                let item = intake.unchanged(&item).unwrap_or_else(|| Arc::new(item));
                items.extend(intake.take(item));
            }
            let resource_version = "10".to_owned();
            Ok(crate::listwatch::ObjectList { items, resource_version, continue_token: None })
        })
    }
}

/// A view of Deployments: their metadata only.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct DeploymentMeta {
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
}
crate::impl_resource!(DeploymentMeta, view = k8s_openapi::api::apps::v1::Deployment);

/// Syncs a compact informer of `K` over a [`JsonLister`] of one Deployment, and returns the
/// JSON its cache holds for it.
async fn compact_form_of_a_listed_deployment<K: Resource>() -> String {
    let deployment = serde_json::json!({
        "metadata": { "name": "web", "namespace": "ns", "resourceVersion": "5" },
        "spec": { "replicas": 3, "selector": {}, "template": {} },
        "status": { "fieldOfALaterRelease": 1 },
    });
    let lister = JsonLister(vec![serde_json::to_vec(&deployment).unwrap()]);
    let informer = SharedIndexInformer::<K>::new(Arc::new(lister)).with_compact_storage(0);
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    until("the informer syncs", || informer.has_synced()).await;
    let key = crate::resource::ObjectKey::from("ns/web");
    let form = informer.shared.indexer.held_form(&key, "5").expect("held compactly");
    // One object: the cache's dictionary has not learnt yet, so the form is compressed alone.
    let mut json = Vec::new();
    crate::store::compact::decompress(form.bytes(), None, &mut json).unwrap();
    stop.cancel();
    tokio::time::timeout(DEADLINE, run).await.unwrap().unwrap();
    String::from_utf8(json).unwrap()
}

// Issue 33: a compact cache keeps a listed item as the server sent it, fields its type does not
// know included, but never for a view, whose cache would then keep what the view leaves out.
#[tokio::test]
async fn a_compact_view_keeps_only_what_the_view_holds() {
    let whole = compact_form_of_a_listed_deployment::<k8s_openapi::api::apps::v1::Deployment>();
    let whole = whole.await;
    assert!(whole.contains("replicas") && whole.contains("fieldOfALaterRelease"), "{whole}");
    let view = compact_form_of_a_listed_deployment::<DeploymentMeta>().await;
    assert!(!view.contains("replicas") && !view.contains("fieldOfALaterRelease"), "{view}");
    assert!(view.contains("\"web\""), "{view}");
}
