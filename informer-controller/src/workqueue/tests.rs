//! The work queue's guarantees, in client-go's scenarios (`util/workqueue/queue_test.go`,
//! `delaying_queue_test.go`, `rate_limiting_queue_test.go`), delays in virtual time.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use parking_lot::Mutex;

use super::*;
use crate::wait::until;
use informer_runtime::ObjectKey;
use informer_runtime::delta_fifo::DeletedFinalStateUnknown;
use informer_runtime::shared_informer::{DeletedObject, ResourceEventHandler};
use informer_runtime::testing::FakeClock;

const MS: Duration = Duration::from_millis(1);
/// How long a test waits for a condition before it fails (real time; nothing here sleeps).
const DEADLINE: Duration = Duration::from_secs(10);

fn queue_on(clock: &FakeClock) -> WorkQueue<&'static str> {
    WorkQueue::builder()
        .clock(Arc::new(clock.clone()))
        .rate_limiter(ExponentialBackoff::new(MS, Duration::from_secs(1)))
        .build()
}

// client-go: TestBasic. Producers add overlapping keys while consumers process them; every key
// is processed, and never by two workers at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn producers_and_consumers_process_every_key_never_twice_at_once() {
    let queue = WorkQueue::<u32>::new();
    let in_flight = Arc::new(Mutex::new(HashSet::new()));
    let processed = Arc::new(Mutex::new(HashSet::new()));
    let producers: Vec<_> = (0..50)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move {
                for key in 0..50 {
                    queue.add(key);
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let consumers: Vec<_> = (0..10)
        .map(|_| {
            let (queue, in_flight, processed) =
                (queue.clone(), Arc::clone(&in_flight), Arc::clone(&processed));
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    assert!(in_flight.lock().insert(*key), "key {} taken twice at once", *key);
                    tokio::task::yield_now().await;
                    processed.lock().insert(*key);
                    in_flight.lock().remove(&*key);
                }
            })
        })
        .collect();
    for producer in producers {
        producer.await.expect("producer");
    }
    tokio::time::timeout(DEADLINE, queue.shut_down_with_drain()).await.expect("drained");
    for consumer in consumers {
        tokio::time::timeout(DEADLINE, consumer).await.expect("consumer ends").expect("consumer");
    }
    assert_eq!(processed.lock().len(), 50);
    assert!(queue.is_empty());
}

// client-go: TestAddWhileProcessing. A key added while it is processed is processed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_added_while_processed_is_processed_again() {
    let queue = WorkQueue::<u32>::new();
    let counts = Arc::new(Mutex::new(HashMap::<u32, u32>::new()));
    for key in 0..50 {
        queue.add(key);
    }
    let consumers: Vec<_> = (0..10)
        .map(|_| {
            let (queue, counts) = (queue.clone(), Arc::clone(&counts));
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    let seen = {
                        let mut counts = counts.lock();
                        let count = counts.entry(*key).or_default();
                        *count += 1;
                        *count
                    };
                    if seen < 2 {
                        queue.add(*key);
                    }
                }
            })
        })
        .collect();
    until("every key is processed twice", || {
        let counts = counts.lock();
        counts.len() == 50 && counts.values().all(|&c| c == 2)
    })
    .await;
    queue.shut_down();
    for consumer in consumers {
        tokio::time::timeout(DEADLINE, consumer).await.expect("consumer ends").expect("consumer");
    }
    assert!(counts.lock().values().all(|&c| c == 2), "{:?}", counts.lock());
}

// client-go: TestLen
#[test]
fn len_counts_each_ready_key_once() {
    let queue = WorkQueue::new();
    queue.add("foo");
    assert_eq!(queue.len(), 1);
    queue.add("bar");
    assert_eq!(queue.len(), 2);
    queue.add("foo"); // already there
    assert_eq!(queue.len(), 2);
}

// client-go: TestReinsert
#[test]
fn a_key_added_while_taken_is_ready_once_done() {
    let queue = WorkQueue::new();
    queue.add("foo");
    let taken = queue.try_get().expect("foo is ready");
    assert_eq!(*taken, "foo");
    queue.add("foo");
    assert!(queue.try_get().is_none(), "not handed out twice at once");
    assert_eq!(queue.len(), 0);
    taken.done();
    assert_eq!(queue.len(), 1);
    let again = queue.try_get().expect("foo again");
    assert_eq!(*again, "foo");
    drop(again);
    assert_eq!((queue.len(), queue.processing()), (0, 0));
}

// client-go: TestQueueDrainageUsingShutDownWithDrain
#[tokio::test]
async fn a_drain_waits_for_the_keys_in_flight() {
    let queue = WorkQueue::new();
    queue.add("foo");
    queue.add("bar");
    let (foo, bar) = (queue.try_get().expect("foo"), queue.try_get().expect("bar"));
    let drain = tokio::spawn({
        let queue = queue.clone();
        async move { queue.shut_down_with_drain().await }
    });
    until("the queue shuts down", || queue.is_shutting_down()).await;
    queue.add("baz");
    assert_eq!(queue.len(), 0, "keys added during shutdown are ignored");
    foo.done();
    tokio::task::yield_now().await;
    assert!(!drain.is_finished(), "bar is still in flight");
    drop(bar);
    tokio::time::timeout(DEADLINE, drain).await.expect("drained").expect("drain");
    assert!(queue.get().await.is_none());
}

// client-go: TestNoQueueDrainageUsingShutDown
#[tokio::test]
async fn a_plain_shutdown_returns_while_keys_are_in_flight() {
    let queue = WorkQueue::new();
    queue.add("foo");
    let foo = queue.try_get().expect("foo");
    queue.shut_down();
    assert!(queue.is_shutting_down());
    assert_eq!(queue.processing(), 1);
    assert!(queue.get().await.is_none(), "nothing ready: workers stop");
    foo.done();
}

// client-go: TestQueueDrainageUsingShutDownWithDrainWithDirtyItem
#[tokio::test]
async fn a_drain_waits_for_a_key_added_while_in_flight_to_be_processed_again() {
    let queue = WorkQueue::new();
    queue.add("foo");
    let first = queue.try_get().expect("foo");
    queue.add("foo");
    let drain = tokio::spawn({
        let queue = queue.clone();
        async move { queue.shut_down_with_drain().await }
    });
    until("the queue shuts down", || queue.is_shutting_down()).await;
    first.done();
    let second = queue.get().await.expect("foo, added while in flight, is handed out again");
    tokio::task::yield_now().await;
    assert!(!drain.is_finished(), "foo is in flight again");
    drop(second);
    tokio::time::timeout(DEADLINE, drain).await.expect("drained").expect("drain");
}

/// The drain's promise holds whatever order the tasks run in: a key added while in flight is
/// back among the ready ones when its worker is done, with nothing in flight for a moment, and
/// the drain must not take that moment for the end.
#[tokio::test]
async fn a_drain_does_not_end_while_a_key_added_in_flight_waits_to_be_handed_out_again() {
    let queue = WorkQueue::new();
    queue.add("foo");
    let first = queue.try_get().expect("foo");
    queue.add("foo");
    let drain = tokio::spawn({
        let queue = queue.clone();
        async move { queue.shut_down_with_drain().await }
    });
    until("the queue shuts down", || queue.is_shutting_down()).await;
    first.done();
    // The drain task runs now, before any worker takes foo again.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!drain.is_finished(), "foo waits to be processed again");
    let second = queue.try_get().expect("foo, added while in flight");
    second.done();
    tokio::time::timeout(DEADLINE, drain).await.expect("drained").expect("drain");
    assert!(queue.get().await.is_none());
}

#[tokio::test]
async fn shutdown_hands_out_the_ready_keys_then_none_and_drops_the_delayed() {
    let clock = FakeClock::new();
    let queue = queue_on(&clock);
    queue.add("ready");
    queue.add_after("later", 10 * MS);
    let waiting = tokio::spawn({
        let queue = queue.clone();
        async move {
            let first = queue.get().await.map(|t| *t);
            let second = queue.get().await.map(|t| *t);
            (first, second)
        }
    });
    until("the worker took the ready key", || queue.is_empty() && queue.processing() == 0).await;
    queue.shut_down();
    assert_eq!(queue.delayed(), 0);
    queue.add_after("ignored", 10 * MS);
    queue.add_rate_limited("ignored");
    assert_eq!(queue.delayed(), 0);
    let (first, second) =
        tokio::time::timeout(DEADLINE, waiting).await.expect("worker ends").expect("worker");
    assert_eq!((first, second), (Some("ready"), None));
}

#[tokio::test]
async fn a_key_whose_worker_panics_is_done_and_can_be_processed_again() {
    let queue = WorkQueue::new();
    queue.add("foo");
    let worker = tokio::spawn({
        let queue = queue.clone();
        async move {
            let _key = queue.get().await;
            panic!("reconcile failed badly");
        }
    });
    assert!(worker.await.is_err());
    assert_eq!(queue.processing(), 0);
    queue.add("foo");
    assert_eq!(queue.try_get().map(|t| *t), Some("foo"));
}

#[tokio::test]
async fn a_get_that_is_cancelled_takes_no_key() {
    let queue = WorkQueue::new();
    tokio::select! {
        biased;
        _ = queue.get() => panic!("nothing is ready"),
        () = tokio::task::yield_now() => {}
    }
    queue.add("foo");
    assert_eq!(queue.processing(), 0);
    assert_eq!(queue.get().await.map(|t| *t), Some("foo"));
}

// client-go: TestSimpleQueue (delaying queue)
#[tokio::test]
async fn a_delayed_key_is_handed_out_once_its_time_has_come() {
    let clock = FakeClock::new();
    let queue = queue_on(&clock);
    queue.add_after("foo", 50 * MS);
    assert_eq!((queue.len(), queue.delayed()), (0, 1));
    let worker = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await.map(|t| *t) }
    });
    clock.wait_for_waiters(1).await;
    assert_eq!(clock.pending_timers(), [50 * MS], "the worker sleeps until foo is due");
    clock.step(49 * MS);
    tokio::task::yield_now().await;
    assert!(!worker.is_finished());
    clock.step(MS);
    let got = tokio::time::timeout(DEADLINE, worker).await.expect("worker wakes").expect("worker");
    assert_eq!(got, Some("foo"));
    assert_eq!((queue.len(), queue.delayed()), (0, 0));
}

// client-go: TestDeduping
#[test]
fn a_key_delayed_twice_waits_once_until_the_earlier_time() {
    let clock = FakeClock::new();
    let queue = queue_on(&clock);
    queue.add_after("foo", 50 * MS);
    queue.add_after("foo", 70 * MS);
    assert_eq!(queue.delayed(), 1);
    clock.step(60 * MS);
    assert_eq!(queue.len(), 1, "due at 50 ms, the earlier of the two");
    assert_eq!(queue.try_get().map(|t| *t), Some("foo"));
    assert!(queue.try_get().is_none());

    queue.add_after("foo", 70 * MS);
    queue.add_after("foo", 50 * MS); // earlier: replaces the later
    assert_eq!(queue.delayed(), 1);
    clock.step(60 * MS);
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.delayed(), 0);
}

// client-go: TestAddTwoFireEarly
#[tokio::test]
async fn a_sleeping_worker_wakes_for_a_key_delayed_less_than_the_one_it_waits_for() {
    let clock = FakeClock::new();
    let queue = queue_on(&clock);
    queue.add_after("foo", Duration::from_secs(1));
    let worker = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await.map(|t| *t) }
    });
    clock.wait_for_waiters(1).await;
    queue.add_after("bar", 50 * MS);
    until("the worker sleeps until bar is due", || {
        clock.pending_timers().first() == Some(&(50 * MS))
    })
    .await;
    clock.step(60 * MS);
    let got = tokio::time::timeout(DEADLINE, worker).await.expect("worker wakes").expect("worker");
    assert_eq!(got, Some("bar"));
    queue.add_after("foo", 20 * MS); // earlier than its 1 s
    clock.step(20 * MS);
    assert_eq!(queue.try_get().map(|t| *t), Some("foo"));
}

// client-go: TestCopyShifting
#[test]
fn delayed_keys_come_out_in_the_order_they_are_due() {
    let clock = FakeClock::new();
    let queue = queue_on(&clock);
    queue.add_after("foo", 3 * MS);
    queue.add_after("bar", 2 * MS);
    queue.add_after("baz", MS);
    clock.step(3 * MS);
    let order: Vec<_> = std::iter::from_fn(|| queue.try_get().map(|t| *t)).collect();
    assert_eq!(order, ["baz", "bar", "foo"]);
}

// client-go: TestRateLimitingQueue
#[test]
fn a_rate_limited_key_waits_its_backoff_and_forget_resets_it() {
    let clock = FakeClock::new();
    let queue = queue_on(&clock);
    queue.add_rate_limited("one");
    assert_eq!((queue.len(), queue.delayed(), queue.num_requeues(&"one")), (0, 1, 1));
    clock.step(MS);
    assert_eq!(queue.try_get().map(|t| *t), Some("one"));
    queue.add_rate_limited("one");
    assert_eq!(queue.num_requeues(&"one"), 2);
    clock.step(MS);
    assert!(queue.try_get().is_none(), "the second failure waits 2 ms");
    clock.step(MS);
    assert_eq!(queue.try_get().map(|t| *t), Some("one"));
    queue.forget(&"one");
    assert_eq!(queue.num_requeues(&"one"), 0);
    queue.add_rate_limited("one");
    clock.step(MS);
    assert_eq!(queue.try_get().map(|t| *t), Some("one"), "after forget: 1 ms again");
}

#[test]
fn a_delay_past_what_an_instant_holds_waits_instead_of_panicking() {
    let clock = FakeClock::new();
    let queue = queue_on(&clock);
    queue.add_after("never", Duration::MAX);
    assert_eq!((queue.len(), queue.delayed()), (0, 1));
}

fn pod(name: &str, owners: Vec<OwnerReference>) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            namespace: Some("apps".into()),
            name: Some(name.into()),
            owner_references: Some(owners),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    })
}

fn owner(api_version: &str, kind: &str, name: &str, controller: bool) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        controller: Some(controller),
        ..OwnerReference::default()
    }
}

fn drain_keys(queue: &WorkQueue<ObjectKey>) -> Vec<String> {
    let mut keys: Vec<_> =
        std::iter::from_fn(|| queue.try_get().map(|t| t.as_str().to_owned())).collect();
    keys.sort();
    keys
}

#[test]
fn enqueue_object_adds_the_key_of_every_change() {
    let queue = WorkQueue::new();
    let handler = EnqueueObject::new(queue.clone());
    handler.on_add(pod("a", vec![]), true);
    handler.on_update(pod("b", vec![]), pod("b", vec![]));
    handler.on_delete(DeletedObject::Object(pod("c", vec![])));
    handler.on_delete(DeletedObject::<Pod>::FinalStateUnknown(DeletedFinalStateUnknown {
        key: ObjectKey::new(Some("apps"), "d"),
        obj: None,
    }));
    assert_eq!(drain_keys(&queue), ["apps/a", "apps/b", "apps/c", "apps/d"]);
}

#[test]
fn enqueue_owner_adds_the_owners_of_its_kind_before_and_after_an_update() {
    let queue = WorkQueue::new();
    let handler = EnqueueOwner::<ReplicaSet>::new(queue.clone());
    let before = pod(
        "web-1",
        vec![
            owner("apps/v1", "ReplicaSet", "web", true),
            owner("v1", "ReplicaSet", "core-group-is-not-apps", false),
            owner("apps/v1", "Deployment", "not-a-replicaset", false),
        ],
    );
    let after = pod("web-1", vec![owner("apps/v1beta2", "ReplicaSet", "adopted", false)]);
    handler.on_update(before, after);
    assert_eq!(drain_keys(&queue), ["apps/adopted", "apps/web"]);

    let controller_only = EnqueueOwner::<ReplicaSet>::new(queue.clone()).only_controller();
    controller_only.on_add(
        pod(
            "web-2",
            vec![
                owner("apps/v1", "ReplicaSet", "web", true),
                owner("apps/v1", "ReplicaSet", "other", false),
            ],
        ),
        false,
    );
    controller_only.on_delete(DeletedObject::<Pod>::FinalStateUnknown(DeletedFinalStateUnknown {
        key: ObjectKey::new(Some("apps"), "gone"),
        obj: None,
    }));
    assert_eq!(drain_keys(&queue), ["apps/web"]);
}

#[test]
fn enqueue_owner_keys_a_cluster_scoped_owner_without_namespace() {
    let queue = WorkQueue::new();
    EnqueueOwner::<Namespace>::new(queue.clone())
        .on_add(pod("p", vec![owner("v1", "Namespace", "apps", true)]), false);
    assert_eq!(drain_keys(&queue), ["apps"]);
}

// controller-runtime `pkg/handler/eventhandler_test.go` "EnqueueRequestForOwner" ("should
// enqueue a Request with the Owner of the object", "should not enqueue ... if the OwnerType
// Group/Kind does not match"), for an owner type known only at run time, and a dynamic child.
#[test]
fn enqueue_owner_of_a_dynamic_resource_matches_its_group_kind_and_scope() {
    use informer_runtime::ApiResource;
    use informer_runtime::dynamic::DynamicObject;

    let resource = |kind: &str, namespaced| ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
        namespaced,
    };
    let queue = WorkQueue::new();
    let widgets =
        EnqueueOwner::<DynamicObject>::for_resource(queue.clone(), &resource("Widget", true));
    widgets.on_add(
        pod(
            "p",
            vec![
                owner("example.com/v1", "Widget", "w", true),
                // Any version of the group.
                owner("example.com/v2", "Widget", "w2", false),
                owner("other.com/v1", "Widget", "other-group", true),
                owner("example.com/v1", "Gadget", "other-kind", true),
            ],
        ),
        false,
    );
    assert_eq!(drain_keys(&queue), ["apps/w", "apps/w2"]);

    // A cluster-scoped owner is keyed without a namespace; the child is dynamic too.
    let clusters =
        EnqueueOwner::<DynamicObject>::for_resource(queue.clone(), &resource("Cluster", false))
            .only_controller();
    let mut child = DynamicObject::new("c", &ApiResource::of::<Pod>());
    child.metadata.namespace = Some("apps".into());
    child.metadata.owner_references = Some(vec![
        owner("example.com/v1", "Cluster", "east", true),
        owner("example.com/v1", "Cluster", "west", false),
    ]);
    clusters.on_add(Arc::new(child), false);
    assert_eq!(drain_keys(&queue), ["east"]);
}

#[test]
fn enqueue_mapped_adds_what_the_object_maps_to_before_and_after() {
    let queue = WorkQueue::new();
    let handler = EnqueueMapped::new(queue.clone(), |pod: &Pod| {
        pod.spec.as_ref().and_then(|s| s.node_name.clone()).map(|n| ObjectKey::new(None, &n))
    });
    let on = |node: &str| {
        let mut pod = (*pod("p", vec![])).clone();
        pod.spec = Some(k8s_openapi::api::core::v1::PodSpec {
            node_name: Some(node.into()),
            ..Default::default()
        });
        Arc::new(pod)
    };
    handler.on_update(on("node-a"), on("node-b"));
    handler.on_add(pod("unscheduled", vec![]), false);
    assert_eq!(drain_keys(&queue), ["node-a", "node-b"]);
    handler.on_delete(DeletedObject::Object(on("node-c")));
    assert_eq!(drain_keys(&queue), ["node-c"]);
}

#[cfg(feature = "metrics")]
#[test]
fn a_delayed_key_that_fell_due_counts_in_the_depth_and_its_wait_from_its_due_time() {
    let clock = FakeClock::new();
    let metrics = informer_runtime::metrics::Metrics::new();
    let queue =
        WorkQueue::builder().name("q").clock(Arc::new(clock.clone())).metrics(&metrics).build();
    queue.add_after("later", 10 * MS);
    clock.step(10 * MS);
    // No worker asked: the scrape itself sees the key ready.
    let text = metrics.encode();
    assert!(text.contains(r#"workqueue_depth{name="q"} 1"#), "{text}");
    assert!(text.contains(r#"workqueue_retries_total{name="q"} 1"#), "{text}");
    clock.step(5 * MS);
    drop(queue.try_get());
    let text = metrics.encode();
    // Waited 5 ms since it fell due: in the 10 ms bucket, not the 1 ms one.
    assert!(
        text.contains(r#"workqueue_queue_duration_seconds_bucket{le="0.001",name="q"} 0"#),
        "{text}"
    );
    assert!(
        text.contains(r#"workqueue_queue_duration_seconds_bucket{le="0.01",name="q"} 1"#),
        "{text}"
    );
}
