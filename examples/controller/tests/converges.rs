//! The `ConfigMapSet` controller end to end against the embedded API server: two replicas behind
//! a Lease, sets created, changed and deleted while the server drops watches, compacts its
//! history (410 and a relist), fails updates with 500 and 409, and the leader is killed; the
//! world converges to what the sets ask for, and the leader's metrics say what it did.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::time::Duration;

use embedded_apiserver::testing::eventually;
use embedded_apiserver::{ApiServer, Failure};
use example_controller::{ConfigMapSet, ConfigMapSetSpec, Settings, difference};
use informer_client::{Client, Config};
use informer_controller::leader_election::Leadership;
use informer_runtime::GroupVersionResource;
use informer_runtime::metrics::Metrics;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::task::JoinHandle;
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

struct Replica {
    stop: CancellationToken,
    task: JoinHandle<Leadership>,
    metrics: Metrics,
}

fn replica(client: &Client, identity: &str) -> Replica {
    let metrics = Metrics::new();
    let mut settings = Settings::new(identity);
    settings.lease = (Duration::from_secs(3), Duration::from_secs(2), Duration::from_millis(250));
    settings.metrics = Some(metrics.clone());
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (client, stop) = (client.clone(), stop.clone());
        async move { example_controller::run(client, settings, stop).await.expect("valid settings") }
    });
    Replica { stop, task, metrics }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_converges_through_faults_and_a_leader_change() {
    let server = ApiServer::start().await.unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    client.create(None, &ConfigMapSet::crd()).await.unwrap();
    for ns in ["shop", "blog", "docs"] {
        client.create(None, &namespace(ns)).await.unwrap();
    }
    let replicas = [replica(&client, "replica-a"), replica(&client, "replica-b")];

    let web =
        client.create(None, &set("web", &["shop", "blog"], &[("mode", "fast")])).await.unwrap();
    client.create(None, &set("api", &["blog", "docs", "later"], &[("tier", "1")])).await.unwrap();
    eventually("the sets to be in place", DEADLINE, || converged(&server)).await;

    // A config map changed behind the controller's back is put back.
    let mut tampered: ConfigMap = client.get(Some("blog"), "api").await.unwrap();
    tampered.data = Some(BTreeMap::from([("tier".to_owned(), "9".to_owned())]));
    client.replace(Some("blog"), "api", &tampered).await.unwrap();
    // Faults: failed and conflicting updates, dropped watches, compacted history.
    server.fail_next(
        3,
        Failure::internal_error("etcd timeout").verb("update").resource("configmaps"),
    );
    server.fail_next(
        2,
        Failure::new(409, "Conflict", "the object has been modified")
            .verb("update")
            .resource("configmaps"),
    );
    let mut changed = web.clone();
    changed.spec.data.insert("mode".to_owned(), "slow".to_owned());
    changed.spec.namespaces = vec!["shop".to_owned(), "docs".to_owned()];
    changed.metadata.resource_version = None;
    let current: ConfigMapSet = client.get(None, "web").await.unwrap();
    changed.metadata = current.metadata.clone();
    changed.status = current.status.clone();
    client.replace(None, "web", &changed).await.unwrap();
    server.drop_watches();
    server.compact();
    client.create(None, &namespace("later")).await.unwrap();
    eventually("the changes to be in place", DEADLINE, || converged(&server)).await;

    // The leader dies without a word; the other replica takes over.
    let leader = server
        .get(
            &GroupVersionResource::of::<k8s_openapi::api::coordination::v1::Lease>(),
            "default",
            example_controller::CONTROLLER,
        )
        .and_then(|lease| lease["spec"]["holderIdentity"].as_str().map(str::to_owned))
        .expect("a leader");
    let [a, b] = replicas;
    let (killed, survivor) = if leader == "replica-a" { (a, b) } else { (b, a) };
    killed.task.abort();
    let _ = killed.task.await;
    client.delete::<ConfigMapSet>(None, "api").await.unwrap();
    let mut docs_only = set("web", &["docs"], &[("mode", "slow")]);
    let current: ConfigMapSet = client.get(None, "web").await.unwrap();
    docs_only.metadata = current.metadata;
    docs_only.status = current.status;
    client.replace(None, "web", &docs_only).await.unwrap();
    eventually("the new leader to finish the work", DEADLINE, || {
        let sets = server.objects(&GroupVersionResource::of::<ConfigMapSet>());
        if sets.len() != 1 {
            return Err(format!("{} sets; api still has its finalizer", sets.len()));
        }
        converged(&server)
    })
    .await;

    let text = survivor.metrics.encode();
    for metric in
        ["controller_runtime_reconcile_total", "workqueue_adds_total", "informer_lists_total"]
    {
        assert!(text.contains(metric), "{metric} in the survivor's metrics");
    }
    let events = server.objects(&GroupVersionResource::of::<k8s_openapi::api::events::v1::Event>());
    assert!(events.iter().any(|e| e["reason"] == "Created"), "events of what was created");
    assert!(events.iter().any(|e| e["reason"] == "NamespaceMissing"), "and of what was missing");
    survivor.stop.cancel();
    let outcome = tokio::time::timeout(DEADLINE, survivor.task).await.unwrap().unwrap();
    assert_eq!(outcome, Leadership::Released);
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
