//! Ports of client-go's `reflector_test.go` and `reflector_watchlist_test.go` scenarios.
//!
//! They run in tokio's paused time: backoffs and deadlines pass instantly and deterministically,
//! and nothing sleeps in real time.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::clock::Clock;
use crate::listwatch::{Bookmark, ListOptions, ObjectList, Status};
use crate::store::Indexer;
use crate::testing::objects::pod;

type ListFn = Box<dyn Fn(&ListOptions) -> Result<ObjectList<Pod>, Error> + Send + Sync>;
type WatchFn = Box<dyn Fn(&WatchOptions) -> Result<WatchStream<Pod>, Error> + Send + Sync>;

/// client-go's `testLW`: list and watch answered by closures, every request recorded.
struct ScriptedLw {
    list: ListFn,
    watch: WatchFn,
    lists: Mutex<Vec<ListOptions>>,
    watches: Mutex<Vec<WatchOptions>>,
}

impl ScriptedLw {
    fn new(
        list: impl Fn(&ListOptions) -> Result<ObjectList<Pod>, Error> + Send + Sync + 'static,
        watch: impl Fn(&WatchOptions) -> Result<WatchStream<Pod>, Error> + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            list: Box::new(list),
            watch: Box::new(watch),
            lists: Mutex::default(),
            watches: Mutex::default(),
        })
    }

    fn list_rvs(&self) -> Vec<String> {
        self.lists.lock().iter().map(|o| o.resource_version.clone()).collect()
    }

    fn watch_rvs(&self) -> Vec<String> {
        self.watches.lock().iter().map(|o| o.resource_version.clone()).collect()
    }
}

impl ListerWatcher<Pod> for ScriptedLw {
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, Result<ObjectList<Pod>, Error>> {
        self.lists.lock().push(options.clone());
        let result = (self.list)(options);
        Box::pin(async move { result })
    }

    fn watch(&self, options: &WatchOptions) -> BoxFuture<'_, Result<WatchStream<Pod>, Error>> {
        self.watches.lock().push(options.clone());
        let result = (self.watch)(options);
        Box::pin(async move { result })
    }
}

#[allow(clippy::unnecessary_wraps, reason = "scripted list answers are Results")]
fn list_of(rv: &str, pods: &[Pod]) -> Result<ObjectList<Pod>, Error> {
    Ok(ObjectList {
        items: pods.iter().cloned().map(Arc::new).collect(),
        resource_version: rv.to_owned(),
        continue_token: None,
    })
}

fn p(name: &str, rv: u32) -> Pod {
    pod("ns", name, &rv.to_string())
}

/// A stream that plays `events` and then ends (a closed watch).
fn stream_of(events: Vec<WatchEvent<Pod>>) -> WatchStream<Pod> {
    Box::pin(futures::stream::iter(events.into_iter().map(Ok)))
}

/// A stream that plays `events` and then stays open, silent.
fn open_stream_of(events: Vec<WatchEvent<Pod>>) -> WatchStream<Pod> {
    Box::pin(futures::stream::iter(events.into_iter().map(Ok)).chain(futures::stream::pending()))
}

fn added(pod: Pod) -> WatchEvent<Pod> {
    WatchEvent::Added(Arc::new(pod))
}

fn bookmark(rv: &str, end: bool) -> WatchEvent<Pod> {
    WatchEvent::Bookmark(Bookmark { resource_version: rv.to_owned(), initial_events_end: end })
}

type EventSender = mpsc::UnboundedSender<Result<WatchEvent<Pod>, Error>>;

/// Watch streams the test feeds by hand, one channel per watch request.
struct ManualWatches {
    created: Mutex<VecDeque<EventSender>>,
    notify: tokio::sync::Notify,
}

impl ManualWatches {
    fn new() -> Arc<Self> {
        Arc::new(Self { created: Mutex::default(), notify: tokio::sync::Notify::new() })
    }

    fn open(&self) -> WatchStream<Pod> {
        let (tx, rx) = mpsc::unbounded();
        self.created.lock().push_back(tx);
        self.notify.notify_waiters();
        Box::pin(rx)
    }

    async fn next(&self) -> EventSender {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(tx) = self.created.lock().pop_front() {
                return tx;
            }
            notified.await;
        }
    }
}

fn names_and_rvs(store: &Indexer<Pod>) -> Vec<String> {
    let mut v: Vec<String> = store
        .list()
        .iter()
        .map(|p| format!("{}@{}", p.metadata.name.as_deref().unwrap_or(""), resource_version(&**p)))
        .collect();
    v.sort();
    v
}

async fn pop_all(fifo: &crate::delta_fifo::DeltaFifo<Pod>, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        let newest = fifo
            .pop(|deltas, _| {
                let o = deltas.last().and_then(|d| d.object().cloned()).expect("object");
                format!("{}@{}", o.metadata.name.as_deref().unwrap_or(""), resource_version(&*o))
            })
            .await
            .expect("open");
        out.push(newest);
    }
    out
}

/// Waits, in tokio's paused time, until `cond` holds; fails after a virtual hour.
async fn eventually(cond: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3600);
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "condition not met within a virtual hour");
        // Idle the runtime so paused time can advance to the next timer.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A clock that records every sleep it is asked for, on tokio's (paused) time.
#[derive(Default)]
struct RecordingClock(Mutex<Vec<Duration>>);

impl Clock for RecordingClock {
    fn now(&self) -> std::time::Instant {
        TokioClock.now()
    }

    fn sleep(&self, d: Duration) -> BoxFuture<'static, ()> {
        self.0.lock().push(d);
        TokioClock.sleep(d)
    }
}

fn reflector(
    lw: Arc<ScriptedLw>,
    store: Arc<dyn ReflectorStore<Pod>>,
    config: ReflectorConfig,
) -> Reflector<Pod> {
    Reflector::new(lw, store, config).with_random(Random::fixed(0.0))
}

/// Runs rounds of `list_and_watch` on one reflector; `cancel_round()` in a closure ends the
/// current round (client-go's tests cancel their context from inside the fake list-watch).
#[derive(Clone, Default)]
struct Rounds(Arc<Mutex<CancellationToken>>);

impl Rounds {
    fn cancel_round(&self) {
        self.0.lock().cancel();
    }

    async fn run(&self, r: &Reflector<Pod>) -> Result<(), ReflectorError> {
        let token = CancellationToken::new();
        *self.0.lock() = token.clone();
        r.list_and_watch(&token).await
    }

    /// A watch that ends the round as soon as it is opened.
    fn cancelling_watch(
        &self,
    ) -> impl Fn(&WatchOptions) -> Result<WatchStream<Pod>, Error> + Send + Sync + 'static {
        let rounds = self.clone();
        move |_| {
            rounds.cancel_round();
            Ok(open_stream_of(vec![]))
        }
    }

    /// A stream that plays `events`, then ends the round.
    fn then_cancel(&self, events: Vec<WatchEvent<Pod>>) -> WatchStream<Pod> {
        let rounds = self.clone();
        let end = futures::stream::once(async move {
            rounds.cancel_round();
            futures::future::pending::<Result<WatchEvent<Pod>, Error>>().await
        });
        Box::pin(futures::stream::iter(events.into_iter().map(Ok)).chain(end))
    }
}

// TestReflectorListAndWatch: list once at "0" with limit 500, watch from the list's version; a
// watch that closes after events is re-opened from the last version without a relist.
#[tokio::test(start_paused = true)]
async fn list_and_watch() {
    let watches = ManualWatches::new();
    let w = Arc::clone(&watches);
    let lw = ScriptedLw::new(|_| list_of("1", &[]), move |_| Ok(w.open()));
    let fifo = Arc::new(crate::delta_fifo::DeltaFifo::<Pod>::new());
    let r = Arc::new(reflector(Arc::clone(&lw), fifo.clone(), ReflectorConfig::default()));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (r, cancel) = (Arc::clone(&r), cancel.clone());
        async move { r.run(cancel).await }
    });

    let mut sender = None;
    for (rv, name) in (2..).zip(["foo", "bar", "baz", "qux", "zoo"]) {
        if sender.is_none() {
            sender = Some(watches.next().await);
        }
        let tx = sender.as_ref().unwrap();
        tx.unbounded_send(Ok(added(p(name, rv)))).unwrap();
        if rv == 3 {
            tx.close_channel(); // a clean close: watch again from "3"
            sender = None;
        }
    }
    assert_eq!(pop_all(&fifo, 5).await, ["foo@2", "bar@3", "baz@4", "qux@5", "zoo@6"]);
    assert_eq!(lw.list_rvs(), ["0"]);
    assert_eq!(lw.lists.lock()[0].limit, Some(500));
    assert_eq!(lw.watch_rvs(), ["1", "3"]);
    assert!(lw.watches.lock().iter().all(|o| o.allow_watch_bookmarks && o.timeout.is_some()));
    cancel.cancel();
    run.await.unwrap();
}

// TestReflectorListAndWatchWithErrors: each round's list replaces the store; a list error and a
// watch-open error come back from list_and_watch, wrapped and naming the resource.
#[tokio::test(start_paused = true)]
async fn list_and_watch_with_errors() {
    type Row = (Result<ObjectList<Pod>, Error>, Vec<WatchEvent<Pod>>, Option<Error>);
    let rows: Vec<(Vec<&str>, Row)> = vec![
        (vec![], (list_of("1", &[]), vec![added(p("foo", 2)), added(p("bar", 3))], None)),
        (
            vec!["bar@3", "foo@2"],
            (
                list_of("3", &[p("foo", 2), p("bar", 3)]),
                vec![WatchEvent::Deleted(Arc::new(p("foo", 4))), added(p("qux", 5))],
                None,
            ),
        ),
        (vec!["bar@3", "qux@5"], (Err(Error::Transport("a list error".into())), vec![], None)),
        (
            vec!["bar@3", "qux@5"],
            (
                list_of("5", &[p("bar", 3), p("qux", 5)]),
                vec![],
                Some(Error::Transport("a watch error".into())),
            ),
        ),
        (
            vec!["bar@3", "qux@5"],
            (list_of("5", &[p("bar", 3), p("qux", 5)]), vec![added(p("baz", 6))], None),
        ),
    ];
    let store = Indexer::<Pod>::default();
    for (before, (list, events, watch_err)) in rows {
        assert_eq!(names_and_rvs(&store), before);
        let rounds = Rounds::default();
        let list = Mutex::new(Some(list));
        let watch = Mutex::new(Some((events, watch_err)));
        let r2 = rounds.clone();
        let lw = ScriptedLw::new(
            move |_| {
                list.lock().take().unwrap_or_else(|| Err(Error::Transport("second list".into())))
            },
            move |_| match watch.lock().take() {
                Some((_, Some(err))) => Err(err),
                Some((events, None)) => Ok(r2.then_cancel(events)),
                None => Err(Error::Transport("second watch".into())),
            },
        );
        let r = reflector(lw, Arc::new(store.clone()), ReflectorConfig::default());
        match rounds.run(&r).await {
            Err(ReflectorError::List { resource, source }) => {
                assert_eq!(resource, "pods");
                assert!(source.to_string().contains("a list error"), "{source}");
            }
            Err(ReflectorError::Watch { source, .. }) => {
                assert!(source.to_string().contains("a watch error"), "{source}");
            }
            Ok(()) => {}
        }
    }
    assert_eq!(names_and_rvs(&store), ["bar@3", "baz@6", "qux@5"]);
}

fn pods(n: u32) -> Vec<Pod> {
    (0..n).map(|i| p(&format!("pod-{i}"), 1)).collect()
}

// TestReflectorResyncWithResourceVersion: the first list is at "0", a relist at the last version.
#[tokio::test(start_paused = true)]
async fn resync_with_resource_version() {
    let rounds = Rounds::default();
    let lw = ScriptedLw::new(
        |o| match o.resource_version.as_str() {
            "0" => list_of("10", &pods(4)),
            "10" => list_of("11", &pods(8)),
            other => Err(Error::Transport(format!("unexpected list rv {other}"))),
        },
        rounds.cancelling_watch(),
    );
    let store = Indexer::<Pod>::default();
    let r = reflector(Arc::clone(&lw), Arc::new(store.clone()), ReflectorConfig::default());
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 4);
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 8);
    assert_eq!(lw.list_rvs(), ["0", "10"]);
}

// TestReflectorExpiredExactResourceVersion: a relist answered 410 is retried at once with "".
#[tokio::test(start_paused = true)]
async fn expired_exact_resource_version() {
    let rounds = Rounds::default();
    let lw = ScriptedLw::new(
        |o| match o.resource_version.as_str() {
            "0" => list_of("10", &pods(4)),
            "10" => Err(Error::Api(Status::expired("the resourceVersion is too old"))),
            "" => list_of("11", &pods(8)),
            other => Err(Error::Transport(format!("unexpected list rv {other}"))),
        },
        rounds.cancelling_watch(),
    );
    let store = Indexer::<Pod>::default();
    let r = reflector(Arc::clone(&lw), Arc::new(store.clone()), ReflectorConfig::default());
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 4);
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 8);
    assert_eq!(lw.list_rvs(), ["0", "10", ""]);
    assert_eq!(r.last_sync_resource_version(), "11");
}

// TestReflectorFullListIfExpired: a continue page that expires falls back to one unpaginated
// list at the version first asked for.
#[tokio::test(start_paused = true)]
async fn full_list_if_expired() {
    let rounds = Rounds::default();
    let lw = ScriptedLw::new(
        |o| match (o.resource_version.as_str(), o.continue_token.as_deref(), o.limit) {
            ("0", None, Some(4)) => list_of("10", &pods(4)),
            ("10", None, Some(4)) => {
                let mut page = list_of("11", &pods(4))?;
                page.continue_token = Some("C1".into());
                Ok(page)
            }
            ("", Some("C1"), Some(4)) => Err(Error::Api(Status::expired("continue token expired"))),
            ("10", None, None) => list_of("11", &pods(8)),
            other => Err(Error::Transport(format!("unexpected list {other:?}"))),
        },
        rounds.cancelling_watch(),
    );
    let store = Indexer::<Pod>::default();
    let config = ReflectorConfig::default().page_size(4);
    let r = reflector(Arc::clone(&lw), Arc::new(store.clone()), config);
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 4);
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 8);
    assert_eq!(lw.list_rvs(), ["0", "10", "", "10"]);
}

// TestReflectorFullListIfTooLarge: the three formats of "too large resource version" all
// trigger an immediate consistent relist.
#[tokio::test(start_paused = true)]
async fn full_list_if_too_large() {
    let rounds = Rounds::default();
    let version = Mutex::new(30);
    let lw = ScriptedLw::new(
        move |o| match o.resource_version.as_str() {
            "0" => list_of("20", &[]),
            "20" => Err(Error::Api(Status::resource_version_too_large(
                "Too large resource version: 20, current: 10",
            ))),
            "30" => Err(Error::Api(Status {
                causes: vec![(String::new(), "Too large resource version".into())],
                ..Status::new(504, "Timeout", "timeout")
            })),
            "40" => Err(Error::Api(Status::new(504, "Timeout", "Too large resource version"))),
            "" => {
                let mut v = version.lock();
                let rv = v.to_string();
                *v += 10;
                list_of(&rv, &[])
            }
            other => Err(Error::Transport(format!("unexpected list rv {other}"))),
        },
        rounds.cancelling_watch(),
    );
    let r =
        reflector(Arc::clone(&lw), Arc::new(Indexer::<Pod>::default()), ReflectorConfig::default());
    for _ in 0..4 {
        rounds.run(&r).await.unwrap();
    }
    assert_eq!(lw.list_rvs(), ["0", "20", "", "30", "", "40", ""]);
}

// TestBackoffOnTooManyRequests: 429 when opening and 429 inside the stream both back off and
// watch again; never relist. A watch that then closes at once with no events ends the round.
#[tokio::test(start_paused = true)]
async fn backoff_on_too_many_requests() {
    let calls = Mutex::new(0);
    let lw = ScriptedLw::new(
        |_| list_of("1", &[]),
        move |_| {
            let mut n = calls.lock();
            *n += 1;
            let too_many = Status::too_many_requests("too many requests", None);
            match *n {
                1 => Err(Error::Api(too_many)),
                2 => Ok(stream_of(vec![WatchEvent::Error(too_many)])),
                _ => Ok(stream_of(vec![])),
            }
        },
    );
    let clock = Arc::new(RecordingClock::default());
    let r =
        reflector(Arc::clone(&lw), Arc::new(Indexer::<Pod>::default()), ReflectorConfig::default())
            .with_clock(Arc::clone(&clock) as SharedClock);
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    let backoffs: Vec<Duration> =
        clock.0.lock().iter().copied().filter(|d| *d < Duration::from_secs(60)).collect();
    assert_eq!(backoffs, [Duration::from_millis(800), Duration::from_millis(1600)]);
    assert_eq!(lw.list_rvs(), ["0"]);
    assert_eq!(lw.watch_rvs(), ["1", "1", "1"]);
}

// TestNoRelistOnTooManyRequests.
#[tokio::test(start_paused = true)]
async fn no_relist_on_too_many_requests() {
    let calls = Mutex::new(0);
    let lw = ScriptedLw::new(
        |_| list_of("1", &[]),
        move |_| {
            let mut n = calls.lock();
            *n += 1;
            if *n <= 4 {
                Err(Error::Api(Status::too_many_requests(
                    "slow down",
                    Some(Duration::from_secs(3)),
                )))
            } else {
                Ok(stream_of(vec![]))
            }
        },
    );
    let clock = Arc::new(RecordingClock::default());
    let r =
        reflector(Arc::clone(&lw), Arc::new(Indexer::<Pod>::default()), ReflectorConfig::default())
            .with_clock(Arc::clone(&clock) as SharedClock);
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    assert_eq!(lw.lists.lock().len(), 1);
    assert_eq!(lw.watches.lock().len(), 5);
    let backoffs: Vec<u128> =
        clock.0.lock().iter().filter(|d| d.as_secs() < 60).map(Duration::as_millis).collect();
    assert_eq!(backoffs, [3000, 3000, 3200, 6400], "Retry-After is honoured as a floor");
}

/// A store that counts resyncs and ends the round at the second, like client-go's `FakeCustomStore`.
struct CountingStore {
    resyncs: Mutex<u32>,
    rounds: Rounds,
}

impl ReflectorStore<Pod> for CountingStore {
    fn add(&self, _: Arc<Pod>) {}
    fn update(&self, _: Arc<Pod>) {}
    fn delete(&self, _: Arc<Pod>) {}
    fn replace(&self, _: Vec<Arc<Pod>>, _: &str) {}
    fn resync(&self) {
        let mut n = self.resyncs.lock();
        *n += 1;
        if *n == 2 {
            self.rounds.cancel_round();
        }
    }
}

// TestReflectorResync: the cache is replayed every resync period while watching.
#[tokio::test(start_paused = true)]
async fn resync() {
    let rounds = Rounds::default();
    let store = Arc::new(CountingStore { resyncs: Mutex::new(0), rounds: rounds.clone() });
    let lw = ScriptedLw::new(|_| list_of("0", &[]), |_| Ok(open_stream_of(vec![])));
    let config = ReflectorConfig::default().resync_period(Duration::from_millis(1));
    let r = reflector(lw, store.clone(), config);
    rounds.run(&r).await.unwrap();
    assert_eq!(*store.resyncs.lock(), 2);
}

#[tokio::test(start_paused = true)]
async fn resync_asks_should_resync() {
    let rounds = Rounds::default();
    let store = Arc::new(CountingStore { resyncs: Mutex::new(0), rounds: rounds.clone() });
    let lw = ScriptedLw::new(|_| list_of("0", &[]), |_| Ok(open_stream_of(vec![])));
    let asked = Arc::new(Mutex::new(0));
    let a = Arc::clone(&asked);
    let r2 = rounds.clone();
    let config = ReflectorConfig::default().resync_period(Duration::from_secs(1));
    let r = reflector(lw, store.clone(), config).with_should_resync(Arc::new(move || {
        let mut n = a.lock();
        *n += 1;
        if *n == 3 {
            r2.cancel_round();
        }
        false
    }));
    rounds.run(&r).await.unwrap();
    assert_eq!(*asked.lock(), 3);
    assert_eq!(*store.resyncs.lock(), 0, "no handler due: nothing replayed");
}

// TestWatchTimeout: the server timeout is random in [min, 2 min), min at least 5 minutes.
#[tokio::test(start_paused = true)]
async fn watch_timeout() {
    for (min, expected_min) in [(0, 300), (1, 300), (1800, 1800)] {
        for random in [0.0, 0.5, 0.999] {
            let rounds = Rounds::default();
            let lw = ScriptedLw::new(|_| list_of("10", &[]), rounds.cancelling_watch());
            let config = ReflectorConfig::default().min_watch_timeout(Duration::from_secs(min));
            let r = Reflector::new(
                Arc::clone(&lw) as Arc<dyn ListerWatcher<Pod>>,
                Arc::new(Indexer::default()),
                config,
            )
            .with_random(Random::fixed(random));
            rounds.run(&r).await.unwrap();
            let timeout = lw.watches.lock()[0].timeout.unwrap().as_secs();
            assert!(
                timeout >= expected_min && timeout <= 2 * expected_min,
                "{timeout} for min {min}"
            );
        }
    }
}

// TestReflectorWatchHandler: events apply to the store; an object of the wrong kind is skipped;
// the last seen version is the last event's, not the largest.
#[tokio::test(start_paused = true)]
async fn watch_handler() {
    let rounds = Rounds::default();
    let r2 = rounds.clone();
    let lw = ScriptedLw::new(
        |_| list_of("1", &[p("foo", 1), p("bar", 1)]),
        move |_| {
            let wrong_kind =
                Err(Error::UnexpectedKind { expected: "Pod".into(), got: "Service".into() });
            let events = vec![
                wrong_kind,
                Ok(WatchEvent::Deleted(Arc::new(p("foo", 1)))),
                Ok(WatchEvent::Modified(Arc::new(p("bar", 55)))),
                Ok(added(p("baz", 32))),
            ];
            let r2 = r2.clone();
            let end = futures::stream::once(async move {
                r2.cancel_round();
                futures::future::pending::<Result<WatchEvent<Pod>, Error>>().await
            });
            Ok(Box::pin(futures::stream::iter(events).chain(end)))
        },
    );
    let store = Indexer::<Pod>::default();
    let r = reflector(lw, Arc::new(store.clone()), ReflectorConfig::default());
    rounds.run(&r).await.unwrap();
    assert_eq!(names_and_rvs(&store), ["bar@55", "baz@32"]);
    assert_eq!(r.last_sync_resource_version(), "32");
}

// TestReflectorStopWatch: a stopped reflector returns at once.
#[tokio::test(start_paused = true)]
async fn stop_watch() {
    let lw = ScriptedLw::new(|_| list_of("1", &[]), |_| Ok(open_stream_of(vec![])));
    let r =
        reflector(Arc::clone(&lw), Arc::new(Indexer::<Pod>::default()), ReflectorConfig::default());
    let cancel = CancellationToken::new();
    cancel.cancel();
    r.list_and_watch(&cancel).await.unwrap();
    r.run(cancel).await;
    assert!(lw.watches.lock().is_empty());
}

// TestReflectorReplacesStoreOnUnsafeDelete: an error event ends the watch; the relist at the last
// version replaces the store, dropping the object the watch had added.
#[tokio::test(start_paused = true)]
async fn replaces_store_on_unsafe_delete() {
    let ns_pods = || vec![p("foo-1", 1), p("foo-2", 2), p("foo-3", 3)];
    let lists = Mutex::new(VecDeque::from([list_of("3", &ns_pods()), list_of("5", &ns_pods())]));
    let sent = Mutex::new(false);
    let lw = ScriptedLw::new(
        move |_| lists.lock().pop_front().unwrap_or_else(|| list_of("5", &ns_pods())),
        move |_| {
            if std::mem::replace(&mut *sent.lock(), true) {
                return Ok(open_stream_of(vec![]));
            }
            let corrupt = Status::new(500, "StoreReadError", "corrupt object has been deleted");
            Ok(stream_of(vec![added(p("foo", 4)), WatchEvent::Error(corrupt)]))
        },
    );
    let store = Indexer::<Pod>::default();
    let r =
        Arc::new(reflector(Arc::clone(&lw), Arc::new(store.clone()), ReflectorConfig::default()));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (r, cancel) = (Arc::clone(&r), cancel.clone());
        async move { r.run(cancel).await }
    });
    eventually(|| r.last_sync_resource_version() == "5").await;
    assert_eq!(names_and_rvs(&store), ["foo-1@1", "foo-2@2", "foo-3@3"]);
    assert_eq!(lw.list_rvs(), ["0", "4"], "relist at the last version seen, not \"\"");
    cancel.cancel();
    run.await.unwrap();
}

// A half-open connection: a watch that never sends nor closes ends at the client-side deadline
// (server timeout + margin) and is re-opened from the same version, without a relist.
#[tokio::test(start_paused = true)]
async fn silent_watch_ends_at_client_deadline() {
    let rounds = Rounds::default();
    let calls = Mutex::new(0);
    let r2 = rounds.clone();
    let lw = ScriptedLw::new(
        |_| list_of("7", &[]),
        move |_| {
            let mut n = calls.lock();
            *n += 1;
            if *n == 2 {
                r2.cancel_round();
            }
            Ok(open_stream_of(vec![]))
        },
    );
    let started = tokio::time::Instant::now();
    let r =
        reflector(Arc::clone(&lw), Arc::new(Indexer::<Pod>::default()), ReflectorConfig::default());
    rounds.run(&r).await.unwrap();
    assert_eq!(lw.watch_rvs(), ["7", "7"]);
    assert_eq!(lw.lists.lock().len(), 1);
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(300 + 30),
        "timeout 300 s (random 0) + 30 s margin"
    );
}

// An ERROR 410 inside the stream: back off, relist at the last version (not "").
#[tokio::test(start_paused = true)]
async fn expired_watch_relists_at_last_version() {
    let rounds = Rounds::default();
    let lw = ScriptedLw::new(
        |o| match o.resource_version.as_str() {
            "0" => list_of("5", &[]),
            "6" => list_of("9", &[]),
            other => Err(Error::Transport(format!("unexpected rv {other}"))),
        },
        |o| {
            if o.resource_version == "5" {
                Ok(stream_of(vec![added(p("a", 6)), WatchEvent::Error(Status::expired("too old"))]))
            } else {
                Ok(open_stream_of(vec![]))
            }
        },
    );
    let r = Arc::new(reflector(
        Arc::clone(&lw),
        Arc::new(Indexer::<Pod>::default()),
        ReflectorConfig::default(),
    ));
    rounds.run(&r).await.unwrap();
    let r2 = Arc::clone(&r);
    let _ = r2;
    let lw2 = Arc::clone(&lw);
    let round2 = rounds.clone();
    let watch_after = tokio::spawn(async move {
        eventually(|| lw2.watches.lock().len() >= 2).await;
        round2.cancel_round();
    });
    rounds.run(&r).await.unwrap();
    watch_after.await.unwrap();
    assert_eq!(lw.list_rvs(), ["0", "6"]);
    assert_eq!(lw.watch_rvs(), ["5", "9"]);
}

fn is_streaming(o: &WatchOptions) -> bool {
    o.send_initial_events
        && o.allow_watch_bookmarks
        && o.resource_version_match == Some(ResourceVersionMatch::NotOlderThan)
        && o.timeout.is_some()
}

fn streaming_config() -> ReflectorConfig {
    ReflectorConfig::default().streaming_list(true)
}

// TestWatchList, "prove that the reflector is synced after receiving a bookmark event" and
// "check if Updates and Deletes events are propagated during streaming".
#[tokio::test(start_paused = true)]
async fn watch_list_syncs_at_initial_events_end_and_keeps_the_stream() {
    let rounds = Rounds::default();
    let r2 = rounds.clone();
    let lw = ScriptedLw::new(
        |_| Err(Error::Transport("no list expected".into())),
        move |_| {
            let mut modified = p("p1", 3);
            modified.spec = Some(k8s_openapi::api::core::v1::PodSpec::default());
            Ok(r2.then_cancel(vec![
                added(p("p1", 1)),
                added(p("p2", 2)),
                WatchEvent::Modified(Arc::new(modified)),
                added(p("p3", 4)),
                WatchEvent::Deleted(Arc::new(p("p3", 5))),
                bookmark("5", true),
                added(p("p4", 6)),
            ]))
        },
    );
    let store = Indexer::<Pod>::default();
    let r = reflector(Arc::clone(&lw), Arc::new(store.clone()), streaming_config());
    rounds.run(&r).await.unwrap();
    assert_eq!(names_and_rvs(&store), ["p1@3", "p2@2", "p4@6"]);
    assert!(lw.lists.lock().is_empty());
    let watches = lw.watches.lock().clone();
    assert_eq!(watches.len(), 1, "the stream goes on as the watch");
    assert!(is_streaming(&watches[0]) && watches[0].resource_version.is_empty());
    assert_eq!(r.last_sync_resource_version(), "6");
}

// TestWatchList, "prove that the reflector is checking the value of the initialEventsEnd
// annotation" and "the reflector won't be synced if the bookmark event hasn't been received".
#[tokio::test(start_paused = true)]
async fn watch_list_without_initial_events_end_does_not_sync() {
    let rounds = Rounds::default();
    let r2 = rounds.clone();
    let lw = ScriptedLw::new(
        |_| Err(Error::Transport("no list expected".into())),
        move |_| Ok(r2.then_cancel(vec![added(p("p1", 1)), bookmark("1", false)])),
    );
    let store = Indexer::<Pod>::default();
    let r = reflector(Arc::clone(&lw), Arc::new(store.clone()), streaming_config());
    rounds.run(&r).await.unwrap();
    assert!(store.is_empty());
    assert_eq!(r.last_sync_resource_version(), "");
}

// TestWatchList, "returning any other error than apierrors.NewInvalid forces fallback" and
// "can fall back to old LIST/WATCH semantics when a server doesn't support streaming".
#[tokio::test(start_paused = true)]
async fn watch_list_falls_back_to_list_on_error() {
    for error in [
        Error::Transport("dummy error".into()),
        Error::Api(Status::new(422, "Invalid", "sendInitialEvents unsupported")),
    ] {
        let rounds = Rounds::default();
        let r2 = rounds.clone();
        let error = Mutex::new(Some(error));
        let lw = ScriptedLw::new(
            |_| list_of("1", &[p("p1", 1)]),
            move |o| match error.lock().take() {
                Some(e) if o.send_initial_events => Err(e),
                _ => Ok(r2.then_cancel(vec![added(p("p2", 2))])),
            },
        );
        let store = Indexer::<Pod>::default();
        let r = reflector(Arc::clone(&lw), Arc::new(store.clone()), streaming_config());
        rounds.run(&r).await.unwrap();
        assert_eq!(names_and_rvs(&store), ["p1@1", "p2@2"]);
        let watches = lw.watches.lock().clone();
        assert_eq!(watches.len(), 2);
        assert!(is_streaming(&watches[0]));
        assert!(!watches[1].send_initial_events && watches[1].resource_version == "1");
        assert_eq!(lw.list_rvs(), ["0"]);
    }
}

// TestWatchList, "checks if the reflector retries 429".
#[tokio::test(start_paused = true)]
async fn watch_list_retries_too_many_requests() {
    let rounds = Rounds::default();
    let r2 = rounds.clone();
    let calls = Mutex::new(0);
    let lw = ScriptedLw::new(
        |_| Err(Error::Transport("no list expected".into())),
        move |_| {
            let mut n = calls.lock();
            *n += 1;
            if *n <= 2 {
                Err(Error::Api(Status::too_many_requests("later", None)))
            } else {
                Ok(r2.then_cancel(vec![added(p("p1", 1)), bookmark("2", true)]))
            }
        },
    );
    let store = Indexer::<Pod>::default();
    let r = reflector(Arc::clone(&lw), Arc::new(store.clone()), streaming_config());
    rounds.run(&r).await.unwrap();
    assert_eq!(names_and_rvs(&store), ["p1@1"]);
    assert!(lw.watches.lock().iter().all(is_streaming));
    assert_eq!(lw.watches.lock().len(), 3);
}

// TestWatchList, "check if stopping a watcher before sync results in creating a new watch-list
// request" and "stopping a watcher after synchronization results in creating a new watch request".
#[tokio::test(start_paused = true)]
async fn watch_list_stopped_before_and_after_sync() {
    let rounds = Rounds::default();
    let r2 = rounds.clone();
    let calls = Mutex::new(0);
    let lw = ScriptedLw::new(
        |_| Err(Error::Transport("no list expected".into())),
        move |_| {
            let mut n = calls.lock();
            *n += 1;
            match *n {
                1 => Ok(stream_of(vec![added(p("p1", 1))])),
                2 => Ok(stream_of(vec![
                    added(p("p1", 1)),
                    added(p("p2", 2)),
                    bookmark("2", true),
                    added(p("p3", 3)),
                ])),
                _ => Ok(r2.then_cancel(vec![added(p("p4", 4))])),
            }
        },
    );
    let store = Indexer::<Pod>::default();
    let r = reflector(Arc::clone(&lw), Arc::new(store.clone()), streaming_config());
    rounds.run(&r).await.unwrap();
    assert_eq!(names_and_rvs(&store), ["p1@1", "p2@2", "p3@3", "p4@4"]);
    let watches = lw.watches.lock().clone();
    assert_eq!(watches.len(), 3);
    assert!(is_streaming(&watches[0]) && watches[0].resource_version.is_empty());
    assert!(
        is_streaming(&watches[1]) && watches[1].resource_version.is_empty(),
        "nothing synced yet"
    );
    assert!(!watches[2].send_initial_events && watches[2].resource_version == "3");
}

// Our bound on the wait for the initial-events-end bookmark (client-go waits forever): a stream
// that never delivers it falls back to a plain list.
#[tokio::test(start_paused = true)]
async fn watch_list_gives_up_waiting_and_lists() {
    let rounds = Rounds::default();
    let r2 = rounds.clone();
    let lw = ScriptedLw::new(
        |_| list_of("3", &[p("p1", 1)]),
        move |o| {
            if o.send_initial_events {
                Ok(open_stream_of(vec![added(p("p1", 1))]))
            } else {
                Ok(r2.then_cancel(vec![]))
            }
        },
    );
    let store = Indexer::<Pod>::default();
    let config = streaming_config().streaming_list_timeout(Duration::from_secs(10));
    let started = tokio::time::Instant::now();
    let r = reflector(Arc::clone(&lw), Arc::new(store.clone()), config);
    rounds.run(&r).await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    assert_eq!(names_and_rvs(&store), ["p1@1"]);
    assert_eq!(lw.list_rvs(), ["0"]);
    assert_eq!(lw.watch_rvs(), ["", "3"]);
}

// The watch-error handler gets list errors; the reflector keeps retrying with backoff.
#[tokio::test(start_paused = true)]
async fn watch_error_handler_gets_list_errors_and_run_retries() {
    let calls = Mutex::new(0);
    let lw = ScriptedLw::new(
        move |_| {
            let mut n = calls.lock();
            *n += 1;
            if *n < 3 {
                Err(Error::Api(Status::new(403, "Forbidden", "Access Denied")))
            } else {
                list_of("1", &[p("a", 1)])
            }
        },
        |_| Ok(open_stream_of(vec![])),
    );
    let errors = Arc::new(Mutex::new(Vec::new()));
    let e2 = Arc::clone(&errors);
    let store = Indexer::<Pod>::default();
    let r = Arc::new(
        reflector(Arc::clone(&lw), Arc::new(store.clone()), ReflectorConfig::default())
            .with_watch_error_handler(Arc::new(move |e: &ReflectorError| {
                e2.lock().push(e.to_string());
            })),
    );
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (r, cancel) = (Arc::clone(&r), cancel.clone());
        async move { r.run(cancel).await }
    });
    eventually(|| !store.is_empty()).await;
    cancel.cancel();
    run.await.unwrap();
    let errors = errors.lock().clone();
    assert_eq!(errors.len(), 2);
    assert!(
        errors[0].contains("failed to list pods") && errors[0].contains("Access Denied"),
        "{}",
        errors[0]
    );
}

// What a readiness probe reads: a reflector that keeps failing says since when and why, and
// says nothing once a list completes.
#[tokio::test(start_paused = true)]
async fn health_says_how_long_lists_have_failed_until_one_completes() {
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let lw = ScriptedLw::new(
        {
            let failing = Arc::clone(&failing);
            move |_| {
                if failing.load(std::sync::atomic::Ordering::SeqCst) {
                    Err(Error::Api(Status::new(403, "Forbidden", "Access Denied")))
                } else {
                    list_of("1", &[p("a", 1)])
                }
            }
        },
        |_| Ok(open_stream_of(vec![])),
    );
    let store = Indexer::<Pod>::default();
    let r = Arc::new(
        reflector(Arc::clone(&lw), Arc::new(store.clone()), ReflectorConfig::default())
            .with_watch_error_handler(Arc::new(|_: &ReflectorError| {})),
    );
    assert_eq!(r.health(), WatchHealth::default(), "nothing failed before it runs");
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (r, cancel) = (Arc::clone(&r), cancel.clone());
        async move { r.run(cancel).await }
    });
    eventually(|| r.health().failing_for.is_some_and(|d| d >= Duration::from_secs(5))).await;
    let health = r.health();
    let error = health.last_error.unwrap_or_default();
    assert!(error.contains("failed to list pods") && error.contains("Access Denied"), "{error}");

    failing.store(false, std::sync::atomic::Ordering::SeqCst);
    eventually(|| !store.is_empty()).await;
    assert_eq!(r.health(), WatchHealth::default(), "a completed list ends the failure");
    cancel.cancel();
    run.await.unwrap();
}

// Connection refused when opening a watch: back off and watch again, never relist.
#[tokio::test(start_paused = true)]
async fn connection_refused_rewatches_without_relist() {
    let rounds = Rounds::default();
    let calls = Mutex::new(0);
    let r2 = rounds.clone();
    let lw = ScriptedLw::new(
        |_| list_of("4", &[]),
        move |_| {
            let mut n = calls.lock();
            *n += 1;
            if *n <= 3 {
                Err(Error::ConnectionRefused(
                    "dial tcp 127.0.0.1:6443: connect: connection refused".into(),
                ))
            } else {
                r2.cancel_round();
                Ok(open_stream_of(vec![]))
            }
        },
    );
    let r =
        reflector(Arc::clone(&lw), Arc::new(Indexer::<Pod>::default()), ReflectorConfig::default());
    rounds.run(&r).await.unwrap();
    assert_eq!(lw.list_rvs(), ["0"]);
    assert_eq!(lw.watch_rvs(), ["4", "4", "4", "4"]);
}

// issue 17: a server whose continue tokens come round again (the same token, or a cycle) was
// paged through forever, the list never done. Now the list fails, the store is left alone,
// and the error names the token.
#[tokio::test(start_paused = true)]
async fn a_continue_token_that_comes_round_again_fails_the_list() {
    let cycles: [&'static [&'static str]; 2] = [&["same"], &["one", "two", "three"]];
    for cycle in cycles {
        let lw = ScriptedLw::new(
            move |options| {
                let at = options
                    .continue_token
                    .as_deref()
                    .and_then(|token| cycle.iter().position(|known| *known == token));
                let next = cycle[at.map_or(0, |i| (i + 1) % cycle.len())];
                Ok(ObjectList {
                    items: vec![Arc::new(p("a", 1))],
                    resource_version: "5".to_owned(),
                    continue_token: Some(next.to_owned()),
                })
            },
            |_| Ok(open_stream_of(vec![])),
        );
        let store = Indexer::<Pod>::default();
        let r = reflector(Arc::clone(&lw), Arc::new(store.clone()), ReflectorConfig::default());
        let Err(ReflectorError::List { source, .. }) =
            r.list_and_watch(&CancellationToken::new()).await
        else {
            panic!("{cycle:?}: the list must fail")
        };
        let message = source.to_string();
        assert!(
            message.contains(&format!("continue token {:?} a second time", cycle[0])),
            "{message}"
        );
        assert_eq!(lw.lists.lock().len(), cycle.len() + 1, "{cycle:?}");
        assert!(store.is_empty(), "{cycle:?}");
    }
}

// issue 17: an object of another kind in a watch is skipped, and the watch-error handler hears
// of it; a stream that fails with a decode error is reported too, then relisted.
#[tokio::test(start_paused = true)]
async fn skipped_events_and_failed_streams_reach_the_watch_error_handler() {
    let lw = ScriptedLw::new(
        |_| list_of("1", &[p("a", 1)]),
        |_| {
            let skipped = Err(Error::UnexpectedKind {
                expected: "v1/Pod".to_owned(),
                got: "v1/ConfigMap".to_owned(),
            });
            let broken = Err(Error::Decode("pods watch, line 3: not a watch event".to_owned()));
            let events = vec![skipped, Ok(added(p("b", 2))), broken];
            Ok(Box::pin(futures::stream::iter(events)) as WatchStream<Pod>)
        },
    );
    let errors = Arc::new(Mutex::new(Vec::new()));
    let store = Indexer::<Pod>::default();
    let r = reflector(Arc::clone(&lw), Arc::new(store.clone()), ReflectorConfig::default())
        .with_watch_error_handler({
            let errors = Arc::clone(&errors);
            Arc::new(move |e: &ReflectorError| errors.lock().push(e.to_string()))
        });
    let Err(error) = r.list_and_watch(&CancellationToken::new()).await else {
        panic!("the broken stream ends the round with its error")
    };
    assert_eq!(
        error.to_string(),
        "failed to watch pods: decode error: pods watch, line 3: not a watch event"
    );
    assert_eq!(
        *errors.lock(),
        ["failed to watch pods: unexpected object kind in watch: expected v1/Pod, got \
             v1/ConfigMap"]
    );
    // The event after the skipped one was applied.
    assert_eq!(names_and_rvs(&store), ["a@1", "b@2"]);
}

// A burst of watch events waits in the connection, not in memory: with the queue at its bound,
// the reflector reads no further event until pops bring the queue down to half of it; every
// event still arrives, in order. (No client-go scenario: its DeltaFIFO is unbounded.)
#[tokio::test(start_paused = true)]
async fn a_full_queue_holds_the_watch_back() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    let read = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&read);
    let lw = ScriptedLw::new(
        |_| list_of("1", &[]),
        move |_| {
            let counter = Arc::clone(&counter);
            let burst = (0..100u32).map(|i| added(p(&format!("pod-{i:03}"), i + 2)));
            let counted = futures::stream::iter(burst).map(move |event| {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(event)
            });
            Ok(Box::pin(counted.chain(futures::stream::pending())) as WatchStream<Pod>)
        },
    );
    let fifo = Arc::new(crate::delta_fifo::DeltaFifo::<Pod>::new().with_max_queued_deltas(10));
    let r = Arc::new(reflector(Arc::clone(&lw), fifo.clone(), ReflectorConfig::default()));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (r, cancel) = (Arc::clone(&r), cancel.clone());
        async move { r.run(cancel).await }
    });

    eventually(|| fifo.queued_deltas() == 10).await;
    // The reflector is parked on the full queue (the timers of paused time ran meanwhile).
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(read.load(Ordering::SeqCst), 10, "events read past the bound");

    // Four pops leave six queued, above half: still held back.
    let first = pop_all(&fifo, 4).await;
    assert_eq!(first, ["pod-000@2", "pod-001@3", "pod-002@4", "pod-003@5"]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(read.load(Ordering::SeqCst), 10);

    // One more pop reaches half: the reflector reads up to the bound again.
    pop_all(&fifo, 1).await;
    eventually(|| read.load(Ordering::SeqCst) == 15).await;
    assert_eq!(fifo.queued_deltas(), 10);

    let rest = pop_all(&fifo, 95).await;
    let expected: Vec<String> = (5..100u32).map(|i| format!("pod-{i:03}@{}", i + 2)).collect();
    assert_eq!(rest, expected);
    assert_eq!(read.load(Ordering::SeqCst), 100);
    cancel.cancel();
    run.await.unwrap();
}

/// The informer's queue as the reflector sees it for a cache in compact storage.
struct CompactQueue(Arc<crate::delta_fifo::DeltaFifo<Pod>>);

impl ReflectorStore<Pod> for CompactQueue {
    fn add(&self, obj: Arc<Pod>) {
        self.0.add(obj);
    }
    fn update(&self, obj: Arc<Pod>) {
        self.0.update(obj);
    }
    fn delete(&self, obj: Arc<Pod>) {
        self.0.delete(obj);
    }
    fn replace(&self, list: Vec<Arc<Pod>>, _: &str) {
        self.0.replace(list);
    }
    fn start_replace(&self) {
        self.0.start_replace();
    }
    fn replace_item(&self, obj: Arc<Pod>) -> Option<Arc<Pod>> {
        self.0.replace_item(obj);
        None
    }
    fn finish_replace(&self, rest: Vec<Arc<Pod>>, _: &str) {
        self.0.finish_replace(rest);
    }
    fn resync(&self) {}
    fn poll_ready(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        self.0.poll_ready(cx)
    }
    fn compact_lists(&self) -> bool {
        true
    }
}

// For a compact cache (issue 18), a list waits whole in compact form: nothing of a list whose
// continue token expired reaches the queue, the full list that follows does, once complete,
// and it is decoded into the queue only as fast as the queue drains.
#[tokio::test(start_paused = true)]
async fn a_compact_list_enters_the_queue_only_whole_and_as_it_drains() {
    let rounds = Rounds::default();
    let lw = ScriptedLw::new(
        |o| match (o.resource_version.as_str(), o.continue_token.as_deref(), o.limit) {
            ("0", None, Some(4)) => {
                let mut page = list_of("10", &[p("early", 1)])?;
                page.continue_token = Some("C1".into());
                Ok(page)
            }
            ("", Some("C1"), Some(4)) => Err(Error::Api(Status::expired("continue token expired"))),
            ("0", None, None) => list_of("11", &pods(10)),
            other => Err(Error::Transport(format!("unexpected list {other:?}"))),
        },
        |_| Ok(open_stream_of(vec![])),
    );
    let fifo = Arc::new(crate::delta_fifo::DeltaFifo::<Pod>::new().with_max_queued_deltas(3));
    let store = Arc::new(CompactQueue(Arc::clone(&fifo)));
    let r = Arc::new(reflector(Arc::clone(&lw), store, ReflectorConfig::default().page_size(4)));
    let round = tokio::spawn({
        let (r, rounds) = (Arc::clone(&r), rounds.clone());
        async move { rounds.run(&r).await }
    });
    eventually(|| fifo.queued_deltas() == 3).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(fifo.queued_deltas(), 3, "decoded into the queue past its bound");
    assert!(!fifo.has_synced());
    let popped = pop_all(&fifo, 10).await;
    let expected: Vec<String> = (0..10).map(|i| format!("pod-{i}@1")).collect();
    assert_eq!(popped, expected, "the full list, once, without the page whose token expired");
    assert!(fifo.has_synced());
    assert_eq!(lw.list_rvs(), ["0", "", "0"]);
    eventually(|| !lw.watch_rvs().is_empty()).await;
    assert_eq!(lw.watch_rvs(), ["11"]);
    rounds.cancel_round();
    round.await.unwrap().unwrap();
}

// The streaming list for a compact cache: its initial events wait in compact form, and reach
// the queue at the initial-events-end bookmark, item by item; the watch goes on after them.
#[tokio::test(start_paused = true)]
async fn a_compact_streaming_list_enters_the_queue_at_the_bookmark() {
    let lw = ScriptedLw::new(
        |_| Err(Error::Transport("no list expected".into())),
        move |_| {
            Ok(open_stream_of(vec![
                added(p("p1", 1)),
                added(p("p2", 2)),
                WatchEvent::Modified(Arc::new(p("p1", 3))),
                bookmark("3", true),
                added(p("p4", 6)),
            ]))
        },
    );
    let fifo = Arc::new(crate::delta_fifo::DeltaFifo::<Pod>::new());
    let store = Arc::new(CompactQueue(Arc::clone(&fifo)));
    let r = Arc::new(reflector(Arc::clone(&lw), store, streaming_config()));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (r, cancel) = (Arc::clone(&r), cancel.clone());
        async move { r.run(cancel).await }
    });
    eventually(|| fifo.len() == 3).await;
    let mut popped = pop_all(&fifo, 3).await;
    popped[..2].sort();
    assert_eq!(popped, ["p1@3", "p2@2", "p4@6"]);
    assert!(fifo.has_synced());
    cancel.cancel();
    run.await.unwrap();
}

/// Pages whose items the lister-watcher holds back from the intake until the page is checked
/// whole, as the HTTP one does for a server that writes `items` before `kind` and `metadata`;
/// it notes which of the objects it made are still alive when the next page is asked for.
struct HeldBackPages {
    made: Mutex<Vec<std::sync::Weak<Pod>>>,
    alive_at_second_page: Mutex<Option<usize>>,
}

impl ListerWatcher<Pod> for HeldBackPages {
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, Result<ObjectList<Pod>, Error>> {
        let second = options.continue_token.is_some();
        Box::pin(async move {
            if second {
                let alive = self.made.lock().iter().filter(|w| w.upgrade().is_some()).count();
                *self.alive_at_second_page.lock() = Some(alive);
            }
            let names = if second { 10..20 } else { 0..10 };
            let items: Vec<Arc<Pod>> = names.map(|i| Arc::new(p(&format!("pod-{i}"), 1))).collect();
            self.made.lock().extend(items.iter().map(Arc::downgrade));
            Ok(ObjectList {
                items,
                resource_version: "5".into(),
                continue_token: (!second).then(|| "C1".to_owned()),
            })
        })
    }

    fn watch(&self, _: &WatchOptions) -> BoxFuture<'_, Result<WatchStream<Pod>, Error>> {
        Box::pin(async { Ok(open_stream_of(vec![])) })
    }

    // Every item back in the page, none to the intake as it comes.
    fn list_into(
        &self,
        options: &ListOptions,
        _intake: Arc<dyn crate::listwatch::ListIntake<Pod>>,
    ) -> BoxFuture<'_, Result<ObjectList<Pod>, Error>> {
        self.list(options)
    }
}

// A page whose items were held back until it was checked whole goes to a compact cache's
// intake as soon as it is (issue 33): the list waits decoded one page at most, never whole,
// whatever order the server writes a list's members in.
#[tokio::test(start_paused = true)]
async fn a_compact_list_holds_at_most_one_page_decoded() {
    let lw =
        Arc::new(HeldBackPages { made: Mutex::default(), alive_at_second_page: Mutex::default() });
    let fifo = Arc::new(crate::delta_fifo::DeltaFifo::<Pod>::new());
    let store = Arc::new(CompactQueue(Arc::clone(&fifo)));
    let r = Reflector::new(Arc::clone(&lw) as _, store, ReflectorConfig::default().page_size(10));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move { r.run(cancel).await }
    });
    let popped = pop_all(&fifo, 20).await;
    assert_eq!(popped.len(), 20, "both pages, whole: {popped:?}");
    assert_eq!(*lw.alive_at_second_page.lock(), Some(0), "the first page waits compact");
    cancel.cancel();
    run.await.unwrap();
}
