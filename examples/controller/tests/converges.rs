//! The `ConfigMapSet` controller end to end against the embedded API server, written on its test
//! kit (`embedded_apiserver::scenario`): two replicas behind a Lease, sets created, changed and
//! deleted while the server fails and conflicts writes, drops watches, compacts its history,
//! restarts, and the leader is killed; the world converges to what the sets ask for. And the
//! controller's filter at work: its own status writes do not come back as reconciles.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::time::Duration;

use embedded_apiserver::ApiServer;
use embedded_apiserver::scenario::Scenario;
use embedded_apiserver::testing::eventually;
use example_controller::{ConfigMapSet, ConfigMapSetSpec, Settings, difference};
use informer_client::{Client, Config};
use informer_controller::leader_election::Leadership;
use informer_runtime::GroupVersionResource;
use informer_runtime::metrics::Metrics;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio_util::sync::CancellationToken;

const DEADLINE: Duration = Duration::from_secs(60);

fn set(name: &str, namespaces: &[&str], data: &[(&str, &str)]) -> ConfigMapSet {
    ConfigMapSet {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        spec: ConfigMapSetSpec {
            namespaces: namespaces.iter().map(|&n| n.to_owned()).collect(),
            data: data.iter().map(|&(k, v)| (k.to_owned(), v.to_owned())).collect(),
        },
        status: None,
    }
}

fn namespace(name: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        ..Namespace::default()
    }
}

/// Every object of `K` the server holds.
fn all<K: informer_runtime::Resource>(server: &ApiServer) -> Vec<K> {
    let objects = server.objects(&GroupVersionResource::of::<K>());
    objects.into_iter().map(|o| serde_json::from_value(o).unwrap()).collect()
}

/// Whether the world is what the sets ask for, or where it differs.
fn converged(server: &ApiServer) -> Result<(), String> {
    let sets: Vec<ConfigMapSet> = all(server);
    difference(&sets, &all::<ConfigMap>(server), &all::<Namespace>(server)).map_or(Ok(()), Err)
}

/// Writes `object` into the server directly: the test's changes meet none of the faults.
fn put<K: informer_runtime::Resource + serde::Serialize>(server: &ApiServer, object: &K) {
    let gvr = GroupVersionResource::of::<K>();
    let value = serde_json::to_value(object).unwrap();
    let name = object.meta().name.clone().unwrap_or_default();
    let namespace = object.meta().namespace.clone().unwrap_or_default();
    match server.get(&gvr, &namespace, &name) {
        Some(current) => {
            let mut value = value;
            value["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
            if let Some(status) = current.get("status") {
                value["status"] = status.clone();
            }
            server.update(&gvr, value).unwrap();
        }
        None => {
            server.create(&gvr, value).unwrap();
        }
    }
}

/// A change the test makes to the world, and what it is called.
type Change = (&'static str, fn(&ApiServer));

// The controller's contract, under the test kit's seeded faults: two replicas behind a Lease;
// sets created, changed and deleted, a config map tampered with and a namespace created, each
// followed by a round of faults (500s and 409s on the controller's writes, dropped watches,
// compacted history, a server restart, the leader killed); after each, the world converges to
// what the sets ask for. A failure prints the seed; `EMBEDDED_APISERVER_SEED` replays it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_converges_through_a_seeded_schedule_of_faults() {
    let server = ApiServer::start().await.unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    client.create(None, &ConfigMapSet::crd()).await.unwrap();
    for ns in ["shop", "blog", "docs"] {
        put(&server, &namespace(ns));
    }
    let metrics = Metrics::new();
    let mut scenario = Scenario::new(&server)
        .leader_lease("default", example_controller::CONTROLLER)
        .faults_on(["configmaps", "configmapsets.sets.example.com"])
        .deadline(DEADLINE)
        .replicas(2, {
            let metrics = metrics.clone();
            move |replica| {
                let mut settings = Settings::new(replica.name());
                settings.lease =
                    (Duration::from_secs(3), Duration::from_secs(2), Duration::from_millis(250));
                settings.metrics = Some(metrics.clone());
                async move {
                    let client = Client::new(Config::new(replica.url().parse().unwrap())).unwrap();
                    example_controller::run(client, settings, replica.stop()).await.unwrap();
                }
            }
        })
        .start();

    put(&server, &set("web", &["shop", "blog"], &[("mode", "fast")]));
    put(&server, &set("api", &["blog", "docs", "later"], &[("tier", "1")]));
    // The events too, before the first fault: a replica publishes `NamespaceMissing` once, when
    // the condition turns (as Kubernetes' controllers do), and a leader killed before its
    // recorder wrote it takes it along; no later reconcile publishes it again.
    scenario
        .converge("the sets in place", || {
            converged(&server)?;
            let events = server.objects(&GroupVersionResource::of::<Event>());
            for reason in ["Created", "NamespaceMissing"] {
                if !events.iter().any(|e| e["reason"] == reason) {
                    return Err(format!("no {reason} event yet"));
                }
            }
            Ok(())
        })
        .await;

    let changes: [Change; 5] = [
        ("a config map tampered with", |server| {
            let gvr = GroupVersionResource::of::<ConfigMap>();
            let mut tampered = server.get(&gvr, "blog", "api").unwrap();
            tampered["data"] = serde_json::json!({"tier": "9"});
            server.update(&gvr, tampered).unwrap();
        }),
        ("web's data and namespaces changed", |server| {
            put(server, &set("web", &["shop", "docs"], &[("mode", "slow")]));
        }),
        ("namespace later created", |server| put(server, &namespace("later"))),
        ("api deleted (its finalizer)", |server| {
            let gvr = GroupVersionResource::of::<ConfigMapSet>();
            server.delete(&gvr, "", "api").unwrap();
        }),
        ("web down to docs", |server| put(server, &set("web", &["docs"], &[("mode", "slow")]))),
    ];
    for (what, change) in changes {
        let faults = scenario.round().await;
        change(&server);
        scenario.converge(&format!("{what}, after {faults:?}"), || converged(&server)).await;
    }
    scenario
        .converge("api gone once its finalizer ran", || all::<ConfigMapSet>(&server).len() == 1)
        .await;
    let report = scenario.finish().await;
    println!("{report}");
    assert!(report.faults.values().sum::<usize>() >= 5, "a fault a round: {report}");

    let text = metrics.encode();
    for metric in
        ["controller_runtime_reconcile_total", "workqueue_adds_total", "informer_lists_total"]
    {
        assert!(text.contains(metric), "{metric} in the replicas' metrics");
    }
    let events = server.objects(&GroupVersionResource::of::<Event>());
    assert!(events.iter().any(|e| e["reason"] == "Created"), "events of what was created");
    assert!(events.iter().any(|e| e["reason"] == "NamespaceMissing"), "and of what was missing");
}

/// How many reconciles each key had: the controller's `reconcile` spans, counted by their `key`.
#[derive(Clone, Default)]
struct Reconciles(std::sync::Arc<parking_lot::Mutex<BTreeMap<String, usize>>>);

impl Reconciles {
    fn of(&self, key: &str) -> usize {
        self.0.lock().get(key).copied().unwrap_or(0)
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Reconciles {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        struct Key(Option<String>);
        impl tracing::field::Visit for Key {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "key" {
                    self.0 = Some(format!("{value:?}"));
                }
            }
        }
        if attrs.metadata().name() != "reconcile" {
            return;
        }
        let mut key = Key(None);
        attrs.record(&mut key);
        if let Some(key) = key.0 {
            *self.0.lock().entry(key).or_default() += 1;
        }
    }
}

/// Waits until the set `name` has the status of its current generation.
async fn status_written(server: &ApiServer, name: &str) {
    eventually(&format!("the status of set {name}"), DEADLINE, || {
        let set: ConfigMapSet = all(server)
            .into_iter()
            .find(|s: &ConfigMapSet| s.metadata.name.as_deref() == Some(name))
            .ok_or("no such set")?;
        let observed = set.status.and_then(|s| s.observed_generation);
        if observed.is_some() && observed == set.metadata.generation {
            Ok(())
        } else {
            Err(format!("status of generation {observed:?}, not {:?}", set.metadata.generation))
        }
    })
    .await;
}

// The controller's filter: a spec change is reconciled once, and the status the reconcile
// writes (through `/status`, no new generation) does not come back as work. The count is made
// exact by sentinels: with one worker, a key enqueued before a sentinel set's add event is
// reconciled before it, and a key re-queued after its own reconcile (an event that arrived
// while it ran) before the second sentinel.
#[tokio::test(flavor = "current_thread")]
async fn a_status_write_of_its_own_does_not_come_back_as_work() {
    let reconciles = Reconciles::default();
    // The process's subscriber, not this thread's: a callsite first hit on a thread without
    // one (the other test's) would otherwise stay disabled here. Only this test sets one, and
    // it counts the key of this test's set alone.
    tracing::subscriber::set_global_default(tracing_subscriber::layer::SubscriberExt::with(
        tracing_subscriber::registry(),
        reconciles.clone(),
    ))
    .expect("the only global subscriber of this test binary");
    let server = ApiServer::start().await.unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    client.create(None, &ConfigMapSet::crd()).await.unwrap();
    let mut settings = Settings::new("replica-a");
    settings.workers = 1;
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (client, stop) = (client.clone(), stop.clone());
        async move { example_controller::run(client, settings, stop).await.expect("valid settings") }
    });

    // Listed namespaces that do not exist: no config maps, whose events would enqueue the set.
    client.create(None, &set("quiet", &["nowhere"], &[])).await.unwrap();
    status_written(&server, "quiet").await;
    for sentinel in ["mark-1", "mark-2"] {
        client.create(None, &set(sentinel, &[], &[])).await.unwrap();
        status_written(&server, sentinel).await;
    }
    let before = reconciles.of("quiet");

    let mut changed: ConfigMapSet = client.get(None, "quiet").await.unwrap();
    changed.spec.namespaces = vec!["elsewhere".to_owned()];
    client.replace(None, "quiet", &changed).await.unwrap();
    status_written(&server, "quiet").await;
    for sentinel in ["mark-3", "mark-4"] {
        client.create(None, &set(sentinel, &[], &[])).await.unwrap();
        status_written(&server, sentinel).await;
    }
    assert_eq!(
        reconciles.of("quiet") - before,
        1,
        "one reconcile for the spec change, none for the status it wrote"
    );

    stop.cancel();
    let outcome = tokio::time::timeout(DEADLINE, task).await.unwrap().unwrap();
    assert_eq!(outcome, Leadership::Released);
}
