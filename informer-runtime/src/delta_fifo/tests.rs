//! Ports of client-go's `delta_fifo_test.go` scenarios (v0.32 contract).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::Pod;

use super::*;
use crate::store::{Indexer, StorageMode};
use crate::testing::objects::pod;

/// A cluster-less pod keyed `name`, whose resource version plays client-go's `testFifoObject.val`.
fn obj(name: &str, val: u32) -> Arc<Pod> {
    Arc::new(pod("", name, &val.to_string()))
}

thread_local! {
    /// How [`known`] stores its objects: decoded, but for the scenarios replayed by
    /// `scenarios_with_known_objects_in_compact_storage`.
    static KNOWN_MODE: std::cell::Cell<StorageMode> = const { std::cell::Cell::new(StorageMode::Decoded) };
}

pub(super) fn known(objs: &[Arc<Pod>]) -> Arc<dyn KnownObjects<Pod>> {
    let indexer = Indexer::<Pod>::default();
    indexer.set_storage_mode(KNOWN_MODE.get());
    for o in objs {
        indexer.add(Arc::clone(o));
    }
    Arc::new(indexer.cache())
}

fn show(deltas: &[Delta<Pod>]) -> Vec<String> {
    deltas.iter().map(|d| format!("{d:?}")).collect()
}

pub(super) async fn pop(f: &DeltaFifo<Pod>) -> (Vec<String>, bool) {
    f.pop(|deltas, initial| (show(&deltas), initial)).await.expect("queue open")
}

async fn pop_newest(f: &DeltaFifo<Pod>) -> String {
    f.pop(|deltas, _| {
        let newest = deltas.last().and_then(|d| d.object().cloned()).expect("an object");
        format!(
            "{}@{}",
            ObjectKey::of(&*newest),
            newest.metadata.resource_version.clone().unwrap_or_default()
        )
    })
    .await
    .expect("queue open")
}

// TestDeltaFIFO_basic: items pop in the order they were added.
#[tokio::test]
async fn basic() {
    let f = DeltaFifo::new();
    for i in 0..10 {
        f.add(obj(&format!("a{i}"), i));
    }
    for i in 0..10 {
        assert_eq!(pop_newest(&f).await, format!("a{i}@{i}"));
    }
    assert!(f.is_empty());
}

// TestDeltaFIFO_detectLineJumpers: a key already queued keeps its place.
#[tokio::test]
async fn detect_line_jumpers() {
    let f = DeltaFifo::new();
    f.add(obj("foo", 10));
    f.add(obj("bar", 1));
    f.add(obj("foo", 11));
    f.add(obj("foo", 13));
    f.add(obj("zab", 30));
    assert_eq!(pop_newest(&f).await, "foo@13");
    f.add(obj("foo", 14)); // ensure foo doesn't jump back in line
    assert_eq!(pop_newest(&f).await, "bar@1");
    assert_eq!(pop_newest(&f).await, "zab@30");
    assert_eq!(pop_newest(&f).await, "foo@14");
}

// TestDeltaFIFO_addUpdate: every change is kept, oldest first.
#[tokio::test]
async fn add_update() {
    let f = DeltaFifo::new();
    f.add(obj("foo", 10));
    f.update(obj("foo", 12));
    f.delete(obj("foo", 15));
    assert_eq!(f.keys(), [ObjectKey::from("foo")]);
    let (deltas, _) = pop(&f).await;
    assert_eq!(deltas, ["Added(foo@10)", "Updated(foo@12)", "Deleted(Object(foo@15))"]);
}

// TestDeltaFIFO_addUpdate, the dedup rule: only deletions merge.
#[tokio::test]
async fn only_deletions_merge() {
    let f = DeltaFifo::new();
    f.add(obj("foo", 1));
    f.update(obj("foo", 2));
    f.update(obj("foo", 2));
    assert_eq!(pop(&f).await.0, ["Added(foo@1)", "Updated(foo@2)", "Updated(foo@2)"]);
}

// TestDeltaFIFO_enqueueingNoLister: without known objects, deleting an unqueued key is dropped.
#[tokio::test]
async fn enqueueing_no_lister() {
    let f = DeltaFifo::new();
    f.add(obj("foo", 10));
    f.update(obj("bar", 15));
    f.add(obj("qux", 17));
    f.delete(obj("qux", 18));
    f.delete(obj("baz", 20)); // baz was never queued: nothing to report
    for expected in ["foo@10", "bar@15", "qux@18"] {
        assert_eq!(pop_newest(&f).await, expected);
    }
    assert!(f.is_empty());
}

// TestDeltaFIFO_enqueueingWithLister: with known objects, deleting a cached key is queued.
#[tokio::test]
async fn enqueueing_with_lister() {
    let f =
        DeltaFifo::new().with_known_objects(known(&[obj("foo", 5), obj("bar", 6), obj("baz", 7)]));
    f.add(obj("foo", 10));
    f.update(obj("bar", 15));
    f.delete(obj("baz", 20)); // baz is cached: its deletion must reach the consumer
    f.delete(obj("zzz", 21)); // neither queued nor known
    for expected in ["foo@10", "bar@15", "baz@20"] {
        assert_eq!(pop_newest(&f).await, expected);
    }
    assert!(f.is_empty());
}

// TestDeltaFIFO_DeleteExistingNonPropagated: a second delete of the same key merges.
#[tokio::test]
async fn delete_existing_non_propagated() {
    let f = DeltaFifo::new();
    f.add(obj("foo", 5));
    f.delete(obj("foo", 6));
    f.delete(obj("foo", 6));
    assert_eq!(pop(&f).await.0, ["Added(foo@5)", "Deleted(Object(foo@6))"]);
}

// TestDeltaFIFO_addReplace: a relist after an add leaves one key whose newest state is the list's.
#[tokio::test]
async fn add_replace() {
    let f = DeltaFifo::new();
    f.add(obj("foo", 10));
    f.replace(vec![obj("foo", 15)]);
    let (deltas, _) = pop(&f).await;
    assert_eq!(deltas, ["Added(foo@10)", "Replaced(foo@15)"]);
    assert!(f.is_empty(), "no second pop");
}

// TestDeltaFIFO_ResyncNonExisting: resync skips a key with a queued delta.
#[tokio::test]
async fn resync_non_existing() {
    let f = DeltaFifo::new().with_known_objects(known(&[obj("foo", 5)]));
    f.delete(obj("foo", 10));
    f.resync();
    assert_eq!(pop(&f).await.0, ["Deleted(Object(foo@10))"]);
    assert!(f.is_empty());
}

// TestDeltaFIFO_UpdateResyncRace: resync must not queue an older cached state behind an update.
#[tokio::test]
async fn update_resync_race() {
    let f = DeltaFifo::new().with_known_objects(known(&[obj("foo", 5)]));
    f.update(obj("foo", 6));
    f.resync();
    assert_eq!(pop(&f).await.0, ["Updated(foo@6)"]);
    assert!(f.is_empty());
}

#[tokio::test]
async fn resync_replays_known_objects_as_sync() {
    let f = DeltaFifo::new().with_known_objects(known(&[obj("foo", 5)]));
    f.resync();
    assert_eq!(pop(&f).await.0, ["Sync(foo@5)"]);
    assert!(DeltaFifo::<Pod>::new().is_empty(), "without known objects resync does nothing");
}

// TestDeltaFIFO_ReplaceMakesDeletions: three starting points, one relist each.
#[tokio::test]
async fn replace_makes_deletions() {
    let knowns = || known(&[obj("foo", 5), obj("bar", 6), obj("baz", 7)]);

    // A pre-existing delete in the queue merges with the relist's tombstone: the real one wins.
    let f = DeltaFifo::new().with_known_objects(knowns());
    f.delete(obj("baz", 10));
    f.replace(vec![obj("foo", 5)]);
    let mut popped = vec![pop(&f).await.0, pop(&f).await.0, pop(&f).await.0];
    popped.sort();
    assert_eq!(
        popped,
        [
            vec!["Deleted(FinalStateUnknown(\"bar\", bar@6))"],
            vec!["Deleted(Object(baz@10))"],
            vec!["Replaced(foo@5)"],
        ]
    );

    // A queued add followed by a relist without the object: the tombstone carries the queued state.
    let f = DeltaFifo::new().with_known_objects(knowns());
    f.add(obj("baz", 10));
    f.replace(vec![obj("foo", 5)]);
    let mut popped = vec![pop(&f).await.0, pop(&f).await.0, pop(&f).await.0];
    popped.sort();
    assert_eq!(
        popped,
        [
            vec!["Added(baz@10)", "Deleted(FinalStateUnknown(\"baz\", baz@10))"],
            vec!["Deleted(FinalStateUnknown(\"bar\", bar@6))"],
            vec!["Replaced(foo@5)"],
        ]
    );

    // Deleted and re-created in the queue, then gone from the list.
    let f = DeltaFifo::new().with_known_objects(knowns());
    f.delete(obj("bar", 6));
    f.add(obj("bar", 7));
    f.replace(vec![obj("foo", 5)]);
    let mut popped = vec![pop(&f).await.0, pop(&f).await.0, pop(&f).await.0];
    popped.sort();
    assert_eq!(
        popped,
        [
            vec!["Deleted(FinalStateUnknown(\"baz\", baz@7))"],
            vec![
                "Deleted(Object(bar@6))",
                "Added(bar@7)",
                "Deleted(FinalStateUnknown(\"bar\", bar@7))"
            ],
            vec!["Replaced(foo@5)"],
        ]
    );
}

// TestDeltaFIFO_ReplaceMakesDeletions, cases 4 and 5: an object only in a relist, then gone from
// the next; and a queue without known objects.
#[tokio::test]
async fn replace_makes_deletions_across_two_relists() {
    let f =
        DeltaFifo::new().with_known_objects(known(&[obj("foo", 5), obj("bar", 6), obj("baz", 7)]));
    f.replace(vec![obj("bar", 100), obj("foo", 5)]);
    f.replace(vec![obj("foo", 5)]);
    let mut popped = vec![pop(&f).await.0, pop(&f).await.0, pop(&f).await.0];
    popped.sort();
    assert_eq!(
        popped,
        [
            vec!["Deleted(FinalStateUnknown(\"baz\", baz@7))"],
            vec!["Replaced(bar@100)", "Deleted(FinalStateUnknown(\"bar\", bar@100))"],
            vec!["Replaced(foo@5)", "Replaced(foo@5)"],
        ]
    );

    let f = DeltaFifo::new();
    f.add(obj("baz", 10));
    f.replace(vec![obj("foo", 5)]);
    let mut popped = vec![pop(&f).await.0, pop(&f).await.0];
    popped.sort();
    assert_eq!(
        popped,
        [
            vec!["Added(baz@10)", "Deleted(FinalStateUnknown(\"baz\", baz@10))"],
            vec!["Replaced(foo@5)"]
        ]
    );
}

// TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue, its table: each case with and
// without known objects, one pop, nothing left.
#[tokio::test]
async fn replace_makes_deletions_for_objects_only_in_queue_table() {
    type Op = fn(&DeltaFifo<Pod>);
    let cases: [(&str, Op, &[&str]); 5] = [
        (
            "added object is deleted on replace",
            |f| {
                f.add(obj("foo", 2));
                f.replace(vec![]);
            },
            &["Added(foo@2)", "Deleted(FinalStateUnknown(\"foo\", foo@2))"],
        ),
        (
            "replaced object gets a single delete",
            |f| {
                f.add(obj("foo", 2));
                f.replace(vec![obj("foo", 2)]);
                f.replace(vec![]);
            },
            &["Added(foo@2)", "Replaced(foo@2)", "Deleted(FinalStateUnknown(\"foo\", foo@2))"],
        ),
        (
            "deleted object gets no tombstone",
            |f| {
                f.add(obj("foo", 2));
                f.delete(obj("foo", 2));
                f.replace(vec![]);
            },
            &["Added(foo@2)", "Deleted(Object(foo@2))"],
        ),
        (
            "added object gets a single delete on multiple replaces",
            |f| {
                f.add(obj("foo", 2));
                f.replace(vec![]);
                f.replace(vec![]);
            },
            &["Added(foo@2)", "Deleted(FinalStateUnknown(\"foo\", foo@2))"],
        ),
        (
            "added, deleted and added again is deleted with the newest state",
            |f| {
                f.add(obj("foo", 2));
                f.delete(obj("foo", 2));
                f.add(obj("foo", 3));
                f.replace(vec![]);
            },
            &[
                "Added(foo@2)",
                "Deleted(Object(foo@2))",
                "Added(foo@3)",
                "Deleted(FinalStateUnknown(\"foo\", foo@3))",
            ],
        ),
    ];
    for (name, op, want) in cases {
        for with_known in [false, true] {
            let f = if with_known {
                DeltaFifo::new().with_known_objects(known(&[]))
            } else {
                DeltaFifo::new()
            };
            op(&f);
            assert_eq!(pop(&f).await.0, want, "{name} (known objects: {with_known})");
            assert!(f.is_empty(), "{name}");
        }
    }
}

// TestDeltaFIFO_requeueOnPop is not ported: requeueing on error (ErrRequeue) was removed in
// client-go v0.33 and this project decided against it (it moves the informer back in time).

// TestDeltaFIFO_ReplaceMakesDeletionsForObjectsOnlyInQueue: no known objects, tombstones from the queue.
#[tokio::test]
async fn replace_makes_deletions_for_objects_only_in_queue() {
    let f = DeltaFifo::new();
    f.add(obj("foo", 2));
    f.add(obj("bar", 3));
    f.replace(vec![obj("foo", 5)]);
    let mut popped = vec![pop(&f).await.0, pop(&f).await.0];
    popped.sort();
    assert_eq!(
        popped,
        [
            vec!["Added(bar@3)", "Deleted(FinalStateUnknown(\"bar\", bar@3))"],
            vec!["Added(foo@2)", "Replaced(foo@5)"],
        ]
    );
}

// TestDeltaFIFO_replaceWithDeleteDeltaIn: a relist re-adds an object whose last delta was a delete.
#[tokio::test]
async fn replace_with_delete_delta_in() {
    let f = DeltaFifo::new().with_known_objects(known(&[obj("foo", 5)]));
    f.delete(obj("foo", 6));
    f.replace(vec![obj("foo", 6)]);
    assert_eq!(pop(&f).await.0, ["Deleted(Object(foo@6))", "Replaced(foo@6)"]);
}

// TestDeltaFIFO_HasSynced: the table of first operations.
#[tokio::test]
async fn has_synced() {
    // Nothing happened yet.
    assert!(!DeltaFifo::<Pod>::new().has_synced());

    // A first add, update or delete: synced at once.
    for first in ["add", "update", "delete"] {
        let f = DeltaFifo::new().with_known_objects(known(&[obj("a", 1)]));
        match first {
            "add" => f.add(obj("a", 2)),
            "update" => f.update(obj("a", 2)),
            _ => f.delete(obj("a", 2)),
        }
        assert!(f.has_synced(), "first op {first}");
    }

    // Replace([]) is synced at once.
    let f = DeltaFifo::<Pod>::new();
    f.replace(vec![]);
    assert!(f.has_synced());

    // A first replace: synced once all its items are popped; a duplicate key counts once.
    let f = DeltaFifo::new();
    f.replace(vec![obj("a", 1), obj("b", 2), obj("a", 3)]);
    assert!(!f.has_synced());
    pop(&f).await;
    assert!(!f.has_synced());
    pop(&f).await;
    assert!(f.has_synced());

    // Adds after the first replace do not delay sync; a second replace does not reset it.
    let f = DeltaFifo::new();
    f.replace(vec![obj("a", 1)]);
    f.add(obj("b", 2));
    pop(&f).await;
    assert!(f.has_synced());
    f.replace(vec![obj("c", 3)]);
    assert!(f.has_synced());
}

// TestDeltaFIFO_HasSyncedCorrectOnDeletion: the first replace's tombstones count, and pop with
// is_in_initial_list = true.
#[tokio::test]
async fn has_synced_correct_on_deletion() {
    let f =
        DeltaFifo::new().with_known_objects(known(&[obj("foo", 5), obj("bar", 6), obj("baz", 7)]));
    f.replace(vec![obj("foo", 5)]);
    let mut popped = Vec::new();
    for _ in 0..3 {
        assert!(!f.has_synced());
        let (deltas, initial) = pop(&f).await;
        assert!(initial, "{deltas:?} belongs to the initial list");
        popped.push(deltas);
    }
    assert!(f.has_synced());
    popped.sort();
    assert_eq!(
        popped,
        [
            vec!["Deleted(FinalStateUnknown(\"bar\", bar@6))"],
            vec!["Deleted(FinalStateUnknown(\"baz\", baz@7))"],
            vec!["Replaced(foo@5)"],
        ]
    );
}

#[tokio::test]
async fn is_in_initial_list_only_for_the_first_replace() {
    let f = DeltaFifo::new();
    f.replace(vec![obj("a", 1), obj("b", 1)]);
    f.add(obj("c", 2));
    assert!(pop(&f).await.1);
    assert!(pop(&f).await.1);
    assert!(!pop(&f).await.1, "c came after the initial list");
}

// TestDeltaFIFO_transformer: once per entering object; never on tombstones or Sync.
#[tokio::test]
async fn transformer() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let transform: TransformFn<Pod> = Arc::new(move |p: &mut Pod| {
        counter.fetch_add(1, Ordering::SeqCst);
        let labels = p.metadata.labels.get_or_insert_with(Default::default);
        let n = labels.get("transformed").map_or(0, |v| v.parse::<u32>().unwrap_or(0));
        labels.insert("transformed".into(), (n + 1).to_string());
    });
    let cache = Indexer::<Pod>::default();
    cache.add(obj("known", 1));
    let f = DeltaFifo::new().with_known_objects(Arc::new(cache.cache())).with_transform(transform);

    let source = obj("foo", 1);
    f.add(Arc::clone(&source));
    f.update(obj("foo", 2));
    f.delete(obj("foo", 3));
    f.replace(vec![obj("bar", 4)]); // + a tombstone for "known" (not transformed)
    f.resync(); // nothing: every known key is queued
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert!(
        source.metadata.labels.is_none(),
        "a shared object is copied, not changed under its holder"
    );

    let mut seen = Vec::new();
    while !f.is_empty() {
        f.pop(|deltas, _| {
            for d in &deltas {
                let mark = d
                    .object()
                    .and_then(|o| o.metadata.labels.as_ref())
                    .and_then(|l| l.get("transformed"))
                    .cloned();
                seen.push((format!("{:?}", d.kind()), d.object().is_some(), mark));
            }
        })
        .await
        .unwrap();
    }
    for (kind, _, mark) in &seen {
        if kind == "Deleted" && mark.is_none() {
            continue; // the tombstone of "known": its cached object was never transformed here
        }
        assert_eq!(mark.as_deref(), Some("1"), "{kind} transformed exactly once");
    }

    // Sync deltas replay the cache as it is.
    let cache = Indexer::<Pod>::default();
    cache.add(obj("k", 1));
    let f = DeltaFifo::new()
        .with_known_objects(Arc::new(cache.cache()))
        .with_transform(Arc::new(|_: &mut Pod| panic!("a Sync delta must not be transformed")));
    f.resync();
    assert_eq!(pop(&f).await.0, ["Sync(k@1)"]);
}

// TestDeltaFIFO_KeyOf: a tombstone is keyed by its recorded key.
#[tokio::test]
async fn key_of_tombstone_is_its_recorded_key() {
    let tombstone = DeletedObject::FinalStateUnknown(DeletedFinalStateUnknown::<Pod> {
        key: ObjectKey::from("ns/gone"),
        obj: Some(Arc::new(pod("other", "name", ""))),
    });
    assert_eq!(tombstone.key().as_str(), "ns/gone");
    assert_eq!(DeletedObject::Object(Arc::new(pod("ns", "x", ""))).key().as_str(), "ns/x");
}

// TestDeltaFIFO_PopShouldUnblockWhenClosed.
#[tokio::test]
async fn pop_should_unblock_when_closed() {
    let f = Arc::new(DeltaFifo::<Pod>::new());
    let popper = {
        let f = Arc::clone(&f);
        tokio::spawn(async move { f.pop(|_, _| ()).await })
    };
    tokio::task::yield_now().await;
    f.close();
    let result = tokio::time::timeout(std::time::Duration::from_secs(5), popper).await;
    assert_eq!(result.expect("pop returned").expect("task ok"), Err(QueueClosed));
}

#[tokio::test]
async fn close_drains_queued_items_first() {
    let f = DeltaFifo::new();
    f.add(obj("a", 1));
    f.add(obj("b", 1));
    f.close();
    assert_eq!(pop_newest(&f).await, "a@1");
    assert_eq!(pop_newest(&f).await, "b@1");
    assert_eq!(f.pop(|_, _| ()).await, Err(QueueClosed));
}

#[tokio::test]
async fn pop_waits_for_an_add() {
    let f = Arc::new(DeltaFifo::<Pod>::new());
    let popper = {
        let f = Arc::clone(&f);
        tokio::spawn(async move { pop_newest(&f).await })
    };
    tokio::task::yield_now().await;
    f.add(obj("late", 7));
    let got = tokio::time::timeout(std::time::Duration::from_secs(5), popper).await;
    assert_eq!(got.expect("pop returned").expect("task ok"), "late@7");
}

// Not a client-go scenario: lists hold the cached object in place of an unchanged listed one.
#[test]
fn unchanged_finds_the_cached_object_of_the_same_version_unless_transforming() {
    let cached = obj("foo", 5);
    let f = DeltaFifo::new().with_known_objects(known(&[Arc::clone(&cached), obj("bar", 6)]));
    let found = f.unchanged(&obj("foo", 5)).expect("same key and version");
    assert!(Arc::ptr_eq(&found, &cached));
    assert!(f.unchanged(&obj("foo", 6)).is_none(), "another version");
    assert!(f.unchanged(&obj("baz", 5)).is_none(), "not cached");
    let unversioned = Arc::new(pod("", "foo", ""));
    assert!(f.unchanged(&unversioned).is_none(), "no version to compare");
    assert!(DeltaFifo::<Pod>::new().unchanged(&cached).is_none(), "no known objects");

    // The cache holds transformed objects: one in place of a listed one would be transformed
    // twice.
    let transforming = DeltaFifo::new()
        .with_known_objects(known(&[Arc::clone(&cached)]))
        .with_transform(Arc::new(|_: &mut Pod| {}));
    assert!(transforming.unchanged(&cached).is_none());
}

/// A waker that counts its wakes.
struct CountingWaker(AtomicUsize);

impl std::task::Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

// The bound counts deltas over every key (not keys), merged deletions once; a waiting producer is
// woken when pops bring the queue down to half the bound, and when the queue closes. Lists and
// resyncs are not held back. (No client-go scenario: its DeltaFIFO is unbounded.)
#[tokio::test]
async fn a_bounded_queue_holds_its_producer_back_until_half_empty() {
    let f = DeltaFifo::<Pod>::new().with_known_objects(known(&[])).with_max_queued_deltas(4);
    let wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
    let waker = std::task::Waker::from(Arc::clone(&wakes));
    let mut cx = Context::from_waker(&waker);

    f.add(obj("a", 1));
    f.update(obj("a", 2));
    f.delete(obj("a", 3));
    f.delete(obj("a", 4)); // merged into the deletion before it
    assert_eq!((f.len(), f.queued_deltas()), (1, 3));
    assert!(f.poll_ready(&mut cx).is_ready());
    f.add(obj("b", 5));
    assert_eq!(f.queued_deltas(), 4);
    assert!(f.poll_ready(&mut cx).is_pending());

    // Popping "a" (three deltas) leaves one: at or below half, so the producer is woken.
    pop(&f).await;
    assert_eq!((f.queued_deltas(), wakes.0.load(Ordering::SeqCst)), (1, 1));
    assert!(f.poll_ready(&mut cx).is_ready());

    // A list goes past the bound (b: added, then gone from the list); the producer then waits
    // for the pops.
    f.replace(vec![obj("c", 6), obj("d", 7), obj("e", 8), obj("f", 9)]);
    assert_eq!(f.queued_deltas(), 6);
    assert!(f.poll_ready(&mut cx).is_pending());
    pop(&f).await; // b's two deltas
    pop(&f).await; // c: three left, above half
    assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
    f.close();
    assert_eq!(wakes.0.load(Ordering::SeqCst), 2, "closing wakes the producer");
    assert!(f.poll_ready(&mut cx).is_ready(), "a closed queue holds nothing back");
}

#[test]
fn an_unbounded_queue_is_always_ready() {
    let f = DeltaFifo::<Pod>::new();
    let mut cx = Context::from_waker(std::task::Waker::noop());
    for i in 0..10_000 {
        f.add(obj(&format!("p{i}"), i));
    }
    assert!(f.poll_ready(&mut cx).is_ready());
    assert_eq!(DeltaFifo::<Pod>::new().with_max_queued_deltas(0).max_queued_deltas, 1);
}

// Every scenario that consults known objects, again with the known objects in compact storage:
// the queue reads the cache through `KnownObjects` only, and must see the same objects. (Each
// `#[tokio::test]` function runs its own runtime on this thread, where `KNOWN_MODE` is set.)
#[test]
fn scenarios_with_known_objects_in_compact_storage() {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            KNOWN_MODE.set(StorageMode::Decoded);
        }
    }
    let _reset = Reset;
    for recent in [0, 16] {
        KNOWN_MODE.set(StorageMode::Compact { recent });
        enqueueing_with_lister();
        delete_existing_non_propagated();
        resync_non_existing();
        update_resync_race();
        resync_replays_known_objects_as_sync();
        replace_makes_deletions();
        replace_makes_deletions_across_two_relists();
        replace_makes_deletions_for_objects_only_in_queue_table();
        replace_makes_deletions_for_objects_only_in_queue();
        replace_with_delete_delta_in();
        has_synced_correct_on_deletion();
        a_bounded_queue_holds_its_producer_back_until_half_empty();
    }
    // The recent objects hold the cached allocation itself: a relist keeps it.
    unchanged_finds_the_cached_object_of_the_same_version_unless_transforming();
}

/// How a test hands a list to the queue.
#[derive(Clone, Copy, Debug)]
enum Handover {
    /// `replace(list)`.
    Whole,
    /// `start_replace`, `replace_item` for all but the last, `finish_replace([last])`.
    ItemByItem,
}

fn hand_over(f: &DeltaFifo<Pod>, handover: Handover, mut list: Vec<Arc<Pod>>) {
    match handover {
        Handover::Whole => f.replace(list),
        Handover::ItemByItem => {
            let last = list.pop();
            f.start_replace();
            for item in list {
                f.replace_item(item);
            }
            f.finish_replace(last.into_iter().collect());
        }
    }
}

pub(super) async fn drain(f: &DeltaFifo<Pod>) -> Vec<Vec<String>> {
    let mut popped = Vec::new();
    while !f.is_empty() {
        popped.push(pop(f).await.0);
    }
    popped.sort();
    popped
}

// A replace handed over item by item (what the reflector does for a compact cache, issue 18)
// queues what one `replace` of the same list queues: the same tombstones for queued and known
// keys the list lacks (TestDeltaFIFO_ReplaceMakesDeletions' starting points).
#[tokio::test]
async fn an_item_by_item_replace_makes_the_same_deletions() {
    let knowns = || known(&[obj("foo", 5), obj("bar", 6), obj("baz", 7)]);
    let list = || vec![obj("foo", 5), obj("qux", 1)];
    let mut outcomes = Vec::new();
    for handover in [Handover::Whole, Handover::ItemByItem] {
        let f = DeltaFifo::new().with_known_objects(knowns());
        f.add(obj("baz", 10));
        hand_over(&f, handover, list());
        let popped = drain(&f).await;
        assert_eq!(
            popped,
            [
                vec!["Added(baz@10)", "Deleted(FinalStateUnknown(\"baz\", baz@10))"],
                vec!["Deleted(FinalStateUnknown(\"bar\", bar@6))"],
                vec!["Replaced(foo@5)"],
                vec!["Replaced(qux@1)"],
            ],
            "{handover:?}"
        );
        let f = DeltaFifo::new().with_known_objects(knowns());
        f.delete(obj("baz", 10));
        hand_over(&f, handover, list());
        outcomes.push(drain(&f).await);
    }
    assert_eq!(outcomes[0], outcomes[1]);
}

// Items handed over one by one may pop before the list ends. Until it ends, the queue has not
// synced and what pops belongs to the initial list; at the end, what is still queued (items and
// tombstones) is the rest of the initial list, as client-go counts it.
#[tokio::test]
async fn an_item_by_item_first_replace_syncs_once_its_queued_rest_has_popped() {
    let f = DeltaFifo::new();
    f.start_replace();
    f.replace_item(obj("a", 1));
    f.replace_item(obj("b", 1));
    assert_eq!(pop(&f).await, (vec!["Replaced(a@1)".to_owned()], true));
    assert!(!f.has_synced(), "the list has not ended");
    f.replace_item(obj("c", 1));
    f.finish_replace(vec![obj("d", 1)]);
    assert!(!f.has_synced());
    for expected in ["Replaced(b@1)", "Replaced(c@1)"] {
        assert_eq!(pop(&f).await, (vec![expected.to_owned()], true));
        assert!(!f.has_synced());
    }
    assert_eq!(pop(&f).await, (vec!["Replaced(d@1)".to_owned()], true));
    assert!(f.has_synced());
    f.add(obj("e", 2));
    assert_eq!(pop(&f).await, (vec!["Added(e@2)".to_owned()], false));

    // An empty list handed over item by item syncs at its end.
    let f = DeltaFifo::<Pod>::new();
    f.start_replace();
    assert!(!f.has_synced());
    f.finish_replace(Vec::new());
    assert!(f.has_synced());
}

// A handover that was abandoned (the reflector was stopped) leaves what it queued queued, and
// the next replace lists its own keys only: what the abandoned one queued and the next one
// lacks gets a tombstone.
#[tokio::test]
async fn a_restarted_replace_counts_only_its_own_items_as_listed() {
    let f = DeltaFifo::new();
    f.start_replace();
    f.replace_item(obj("gone", 1));
    f.replace_item(obj("kept", 1));
    f.start_replace();
    f.replace_item(obj("kept", 2));
    f.finish_replace(Vec::new());
    assert_eq!(
        drain(&f).await,
        [
            vec!["Replaced(gone@1)", "Deleted(FinalStateUnknown(\"gone\", gone@1))"],
            vec!["Replaced(kept@1)", "Replaced(kept@2)"],
        ]
    );
}

// The bound holds back an item-by-item handover as it holds back watch events, and during a
// handover it is at most HANDOVER_BOUND: those items are decoded only to wait in the queue.
#[tokio::test]
async fn a_bounded_queue_holds_an_item_by_item_replace_back() {
    let f = DeltaFifo::<Pod>::new().with_max_queued_deltas(1000);
    let wakes = Arc::new(CountingWaker(AtomicUsize::new(0)));
    let waker = std::task::Waker::from(Arc::clone(&wakes));
    let mut cx = Context::from_waker(&waker);
    f.start_replace();
    for i in 0..HANDOVER_BOUND {
        assert!(f.poll_ready(&mut cx).is_ready(), "item {i}");
        f.replace_item(obj(&format!("p{i}"), 1));
    }
    assert!(f.poll_ready(&mut cx).is_pending(), "the handover's bound");
    for _ in 0..HANDOVER_BOUND / 2 {
        pop(&f).await;
    }
    assert_eq!(wakes.0.load(Ordering::SeqCst), 1, "woken at half the handover's bound");
    f.finish_replace(Vec::new());
    for i in 0..100 {
        f.add(obj(&format!("w{i}"), 2));
    }
    assert!(f.poll_ready(&mut cx).is_ready(), "watch events have the whole bound again");

    let f = DeltaFifo::<Pod>::new().with_max_queued_deltas(2);
    f.start_replace();
    f.replace_item(obj("a", 1));
    assert!(f.poll_ready(&mut cx).is_ready());
    f.replace_item(obj("b", 1));
    assert!(f.poll_ready(&mut cx).is_pending());
    pop(&f).await;
    assert!(f.poll_ready(&mut cx).is_ready());
}
