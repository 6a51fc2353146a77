//! One queue fed by one reflector per namespace (issue 20): each namespace's relist tombstones
//! its own keys only, and the queue has synced once every namespace's first list has popped.
//!
//! The scenario is controller-runtime's multi-namespace cache (`pkg/cache/multi_namespace_cache.go`),
//! which keeps one informer, and so one `HasSynced`, per namespace; here they share one queue
//! and one cache, so the queue must keep their lists apart.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Wake, Waker};

use k8s_openapi::api::core::v1::Pod;

use super::tests::{drain, known, pop};
use super::*;
use crate::testing::objects::pod;

fn obj(ns: &str, name: &str, rv: u32) -> Arc<Pod> {
    Arc::new(pod(ns, name, &rv.to_string()))
}

// The bug a naive design has: namespace a's relist (after a 410, say) sees only a's objects, so
// a plain `replace` of it tombstones every object b's reflector delivered. Through
// `namespace("a")` only a's missing keys get tombstones, queued or known.
#[tokio::test]
async fn a_namespace_relist_tombstones_only_its_own_keys() {
    let cached = [obj("a", "gone", 1), obj("a", "kept", 2), obj("b", "b1", 3), obj("b", "b2", 4)];
    let relist = || vec![obj("a", "kept", 2), obj("a", "new", 5)];

    // What a naive design does: the other namespace's objects are deleted.
    let naive = DeltaFifo::new().with_known_objects(known(&cached));
    naive.add(obj("b", "b3", 6));
    naive.replace(relist());
    let popped = drain(&naive).await;
    assert!(popped.iter().flatten().any(|d| d.contains("\"b/b1\"")), "{popped:?}");

    let f = DeltaFifo::new().with_known_objects(known(&cached)).with_namespaces(["a", "b"]);
    f.add(obj("b", "b3", 6)); // queued by b's watch, not in a's list
    f.add(obj("a", "queued", 7)); // queued by a's watch, then gone by a's relist
    f.namespace("a").replace(relist());
    assert_eq!(
        drain(&f).await,
        [
            vec!["Added(a/queued@7)", "Deleted(FinalStateUnknown(\"a/queued\", a/queued@7))"],
            vec!["Added(b/b3@6)"],
            vec!["Deleted(FinalStateUnknown(\"a/gone\", a/gone@1))"],
            vec!["Replaced(a/kept@2)"],
            vec!["Replaced(a/new@5)"],
        ]
    );
}

// The same, handed over item by item (a compact cache), with the two namespaces' lists
// interleaved: each keeps its own listed keys, and a restart of one forgets only its own.
#[tokio::test]
async fn item_by_item_replaces_of_two_namespaces_interleave() {
    let cached = [obj("a", "a0", 1), obj("b", "b0", 2)];
    let f = DeltaFifo::new().with_known_objects(known(&cached)).with_namespaces(["a", "b"]);
    let (a, b) = (f.namespace("a"), f.namespace("b"));
    a.start_replace();
    b.start_replace();
    a.replace_item(obj("a", "a1", 3));
    b.replace_item(obj("b", "b1", 4));
    b.start_replace(); // b's list restarts: b1 no longer counts as listed
    b.replace_item(obj("b", "b2", 5));
    a.finish_replace(vec![obj("a", "a2", 6)]);
    b.finish_replace(Vec::new());
    assert_eq!(
        drain(&f).await,
        [
            vec!["Deleted(FinalStateUnknown(\"a/a0\", a/a0@1))"],
            vec!["Deleted(FinalStateUnknown(\"b/b0\", b/b0@2))"],
            vec!["Replaced(a/a1@3)"],
            vec!["Replaced(a/a2@6)"],
            vec!["Replaced(b/b1@4)", "Deleted(FinalStateUnknown(\"b/b1\", b/b1@4))"],
            vec!["Replaced(b/b2@5)"],
        ]
    );
}

// client-go's HasSynced for one informer per namespace, all of them (controller-runtime's
// multiNamespaceInformer.HasSynced): not before every namespace has listed, and then only once
// each first list's items have popped, counted per namespace. A watch event of a, queued before
// b's list, is not part of b's first list, nor of a's (handlers are told it is not initial).
#[tokio::test]
async fn has_synced_waits_for_the_first_list_of_every_namespace() {
    let f = DeltaFifo::new().with_known_objects(known(&[])).with_namespaces(["a", "b", "b"]);
    assert!(!f.has_synced());
    f.namespace("a").replace(vec![obj("a", "a1", 1), obj("a", "a2", 2)]);
    f.add(obj("a", "a3", 3));
    assert_eq!(pop(&f).await, (vec!["Replaced(a/a1@1)".to_owned()], true));
    f.namespace("b").replace(vec![obj("b", "b1", 4), obj("b", "b2", 5)]);
    // a2, a3, b1: b's first list is not all popped yet. a3, a watch event after a's first
    // list, is not part of any first list.
    for initial in [true, false, true] {
        assert_eq!(pop(&f).await.1, initial);
        assert!(!f.has_synced());
    }
    assert!(pop(&f).await.1, "b2 is the last of b's first list");
    assert!(f.has_synced());
    f.add(obj("b", "b3", 6));
    assert_eq!(pop(&f).await, (vec!["Added(b/b3@6)".to_owned()], false));

    // An empty first list syncs its namespace at once; a list of every key syncs them all.
    let f = DeltaFifo::<Pod>::new().with_namespaces(["a", "b"]);
    f.namespace("a").replace(Vec::new());
    assert!(!f.has_synced());
    f.namespace("b").replace(Vec::new());
    assert!(f.has_synced());
    let f = DeltaFifo::<Pod>::new().with_namespaces(["a", "b"]);
    f.replace(Vec::new());
    assert!(f.has_synced());
}

/// A waker that counts its wakes.
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

// Every reflector of a queue fed per namespace may wait for room at once: each is woken when
// the queue drains, not only the last to ask (which would leave the others' watches unread
// forever).
#[tokio::test]
async fn every_producer_waiting_for_room_is_woken() {
    let f = DeltaFifo::<Pod>::new().with_max_queued_deltas(2);
    f.add(obj("a", "a1", 1));
    f.add(obj("b", "b1", 2));
    let counters = [0, 1].map(|_| Arc::new(CountingWaker(AtomicUsize::new(0))));
    for counter in &counters {
        let waker = Waker::from(Arc::clone(counter));
        assert!(f.poll_ready(&mut Context::from_waker(&waker)).is_pending());
    }
    pop(&f).await;
    assert_eq!(counters.each_ref().map(|c| c.0.load(Ordering::SeqCst)), [1, 1]);
}
