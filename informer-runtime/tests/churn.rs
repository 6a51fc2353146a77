//! 10,000 objects through the whole data flow, under churn and disruption.
//!
//! A seeded random driver interleaves adds, updates and deletes against the in-process
//! `FakeSource`, drops every watch now and then, loses events on purpose (changes the watch never
//! delivers) and forces a 410 reset that makes the informer relist. Three handlers record what
//! they see. At the end, for every object, each handler saw an ordered sequence of states that
//! ends in the object's final state on the server, and the cache equals the source.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use informer_runtime::factory::SharedInformerFactory;
use informer_runtime::reflector::{BackoffConfig, ReflectorConfig};
use informer_runtime::selector::LabelSelector;
use informer_runtime::shared_informer::{DeletedObject, ResourceEventHandler, SharedIndexInformer};
use informer_runtime::testing::FakeSource;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use parking_lot::Mutex;
use tokio::sync::Notify;

const OBJECTS: usize = 10_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Present(u64),
    Deleted(u64),
}

/// Per object key, what one handler saw, in order.
#[derive(Clone, Default)]
struct History {
    events: Arc<Mutex<HashMap<String, Vec<Seen>>>>,
    tombstones: Arc<AtomicUsize>,
    changed: Arc<Notify>,
}

fn key(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or(""),
        p.metadata.name.as_deref().unwrap_or("")
    )
}

fn rv(p: &Pod) -> u64 {
    p.metadata.resource_version.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0)
}

impl History {
    fn record(&self, key: String, seen: Seen) {
        self.events.lock().entry(key).or_default().push(seen);
        self.changed.notify_waiters();
    }
}

impl ResourceEventHandler<Pod> for History {
    fn on_add(&self, obj: Arc<Pod>, _: bool) {
        self.record(key(&obj), Seen::Present(rv(&obj)));
    }

    fn on_update(&self, _: Arc<Pod>, new: Arc<Pod>) {
        self.record(key(&new), Seen::Present(rv(&new)));
    }

    fn on_delete(&self, obj: DeletedObject<Pod>) {
        if obj.is_final_state_unknown() {
            self.tombstones.fetch_add(1, Ordering::Relaxed);
        }
        let last = obj.object().map_or(0, |o| rv(o));
        self.record(obj.key().to_string(), Seen::Deleted(last));
    }
}

fn pod(ns: usize, name: usize, generation: u64) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some(format!("ns-{ns}")),
            name: Some(format!("pod-{name}")),
            labels: Some([("generation".to_owned(), generation.to_string())].into()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

/// The final state each handler must reach: present at a version, or gone.
fn expected(source: &FakeSource, touched: &[String]) -> HashMap<String, Option<u64>> {
    let items: HashMap<String, u64> =
        source.items::<Pod>().iter().map(|p| (key(p), rv(p))).collect();
    touched.iter().map(|k| (k.clone(), items.get(k).copied())).collect()
}

fn converged(history: &History, expected: &HashMap<String, Option<u64>>) -> bool {
    let events = history.events.lock();
    expected.iter().all(|(k, want)| match (events.get(k).and_then(|e| e.last()), want) {
        (Some(Seen::Present(got)), Some(want)) => got == want,
        // (None, None): created and deleted while the watch was not looking.
        (Some(Seen::Deleted(_)) | None, None) => true,
        _ => false,
    })
}

/// The per-object rules a handler relies on: versions never go back; an add comes first or
/// right after a delete; never two deletes in a row.
fn assert_ordered(name: &str, history: &History) {
    for (key, seen) in history.events.lock().iter() {
        let mut last_rv = 0;
        let mut present = false;
        for s in seen {
            match *s {
                Seen::Present(rv) => {
                    assert!(rv >= last_rv, "{name}: {key} went back in time: {seen:?}");
                    last_rv = rv;
                    present = true;
                }
                Seen::Deleted(rv) => {
                    assert!(present, "{name}: {key} deleted twice or before any add: {seen:?}");
                    assert!(
                        rv == 0 || rv >= last_rv,
                        "{name}: {key} deleted at an older version: {seen:?}"
                    );
                    present = false;
                }
            }
        }
    }
}

/// A change the watch never sees, then a compaction that closes every watch: the informer's
/// version is now older than the history, so its next watch gets 410 and it relists.
fn force_relist(source: &FakeSource, generation: u64) {
    source.add_drop_watch(pod(0, OBJECTS, generation));
    source.reset_watch();
}

/// Interleaved adds, updates and deletes up to `OBJECTS` objects, with lost events, dropped
/// watches and a forced 410 half way; returns every key touched and the last generation.
async fn drive(source: &FakeSource, informer: &SharedIndexInformer<Pod>) -> (Vec<String>, u64) {
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    let mut live: Vec<usize> = (0..1_000).collect();
    let mut next = 1_000;
    let mut generation = 1;
    let mut touched: Vec<String> = (0..1_000).map(|i| key(&pod(i % 7, i, 0))).collect();
    let mut step = 0usize;
    let mut visible = 0u64; // the newest version a watch was sent
    while next < OBJECTS || step < 30_000 {
        step += 1;
        generation += 1;
        let roll = rng.u32(0..100);
        if next < OBJECTS && (roll < 40 || live.is_empty()) {
            let p = pod(next % 7, next, generation);
            touched.push(key(&p));
            if roll < 2 {
                source.add_drop_watch(p);
            } else {
                visible = rv(&source.add(p));
            }
            live.push(next);
            next += 1;
        } else if roll < 80 && !live.is_empty() {
            let i = live[rng.usize(0..live.len())];
            let p = pod(i % 7, i, generation);
            if roll < 42 {
                source.modify_drop_watch(p);
            } else {
                visible = rv(&source.modify(p));
            }
        } else if !live.is_empty() {
            let i = live.swap_remove(rng.usize(0..live.len()));
            let p = pod(i % 7, i, generation);
            if roll > 98 {
                source.delete_drop_watch(&p);
            } else {
                source.delete(&p);
                visible = source.resource_version();
            }
        }
        if step.is_multiple_of(2_500) {
            source.drop_watches(); // a clean close: the informer watches again from its last version
        }
        if step == 15_000 {
            force_relist(source, generation);
        }
        if step.is_multiple_of(500) {
            // Interleave: let the informer catch up with what its watch was sent so far.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while informer.last_sync_resource_version().parse::<u64>().unwrap_or(0) < visible {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the informer stalled at step {step}"
                );
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    }
    (touched, generation)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_objects_with_churn_dropped_watches_and_a_410_reset() {
    let source = FakeSource::new();
    // Fast backoff: the test relists often and its time is real.
    let backoff = BackoffConfig {
        initial: Duration::from_millis(5),
        max: Duration::from_millis(50),
        ..BackoffConfig::default()
    };
    let factory = SharedInformerFactory::builder(source.clone())
        .reflector_config(ReflectorConfig::default().backoff(backoff))
        .build();
    let informer = factory.informer::<Pod>();
    let handlers = [History::default(), History::default(), History::default()];
    let registrations: Vec<_> =
        handlers.iter().map(|h| informer.add_event_handler(h.clone()).unwrap()).collect();
    // A first batch exists before the informer starts: it arrives as the initial list.
    for i in 0..1_000 {
        source.add(pod(i % 7, i, 0));
    }
    factory.start();
    assert!(factory.wait_for_cache_sync(Duration::from_secs(30)).await.all_synced());
    for r in &registrations {
        assert!(r.wait_for_sync().await);
    }
    source.wait_for_watches::<Pod>(1).await;

    let (mut touched, generation) = drive(&source, &informer).await;
    // Events lost on purpose are only recovered by a relist: force one at the end.
    force_relist(&source, generation + 1);
    touched.push(key(&pod(0, OBJECTS, 0)));

    let want = expected(&source, &touched);
    for (i, h) in handlers.iter().enumerate() {
        let wait = async {
            loop {
                let changed = h.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if converged(h, &want) {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(120), wait)
            .await
            .unwrap_or_else(|_| panic!("handler {i} did not converge"));
        assert_ordered(&format!("handler {i}"), h);
        assert!(
            h.tombstones.load(Ordering::Relaxed) > 0,
            "deletes the watch lost came back as tombstones"
        );
    }
    let lists = source.list_requests::<Pod>();
    assert!(lists.len() >= 3, "the resets made the informer relist: {} lists", lists.len());
    let mut first_pages = lists[1..].iter().filter(|l| l.continue_token.is_none());
    assert!(first_pages.clone().count() >= 2, "relisted {} times", first_pages.clone().count());
    assert!(
        first_pages.all(|l| !l.resource_version.is_empty()),
        "relists at the last version, not \"\""
    );

    let cache: HashMap<String, u64> = informer
        .lister()
        .list(&LabelSelector::everything())
        .iter()
        .map(|p| (key(p), rv(p)))
        .collect();
    let server: HashMap<String, u64> =
        source.items::<Pod>().iter().map(|p| (key(p), rv(p))).collect();
    assert_eq!(cache.len(), server.len());
    assert!(cache == server, "the cache equals the source");
    assert!(server.len() > 1_000, "churn left a real population ({})", server.len());
    factory.shutdown().await;
}
