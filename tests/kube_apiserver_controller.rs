//! The example controller (`examples/controller`: a manager with warm standby behind a Lease,
//! the finalizer helper, owner references, status conditions, event filters) against a real
//! kube-apiserver and etcd (`tests/kube-apiserver/`): a set is put in place, changed, its
//! leader killed, and deleted through its finalizer, and the world converges each time as the
//! embedded server's test (`examples/controller/tests/converges.rs`) says it does there.
//!
//! The real server is shared with the other tests of the process, so everything here is named
//! for this run: its namespaces, its sets, its Lease's namespace. Without Go this test prints
//! one line and passes (see `informer_tests::kube_apiserver`).

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "in a test, a failed expect is a failed assertion"
)]

use std::time::Duration;

use example_controller::{ConfigMapSet, ConfigMapSetSpec, Settings, difference};
use informer_client::Client;
use informer_controller::leader_election::Leadership;
use informer_runtime::listwatch::ListOptions;
use informer_tests::kube_apiserver::KubeApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long any convergence may take: the real server is slower than the embedded one.
const DEADLINE: Duration = Duration::from_secs(90);

fn named(name: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() }
}

/// The sets of this run (those named `prefix-...`), every config map and every namespace, as
/// the server has them; and where they differ from what the sets ask for.
async fn converged(client: &Client, prefix: &str) -> Result<(), String> {
    let all = ListOptions::default();
    let sets: Vec<ConfigMapSet> = objects(client.list_all(None, &all, 10_000).await)?
        .into_iter()
        .filter(|s: &ConfigMapSet| {
            s.metadata.name.as_deref().is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    let configmaps: Vec<ConfigMap> = objects(client.list_all(None, &all, 100_000).await)?;
    let namespaces: Vec<Namespace> = objects(client.list_all(None, &all, 10_000).await)?;
    difference(&sets, &configmaps, &namespaces).map_or(Ok(()), Err)
}

/// The objects of a list, owned.
fn objects<K: Clone>(
    list: Result<informer_runtime::listwatch::ObjectList<K>, informer_client::ClientError>,
) -> Result<Vec<K>, String> {
    let list = list.map_err(|e| e.to_string())?;
    Ok(list.items.iter().map(|o| (**o).clone()).collect())
}

async fn converge(client: &Client, prefix: &str, what: &str) {
    let start = tokio::time::Instant::now();
    loop {
        match converged(client, prefix).await {
            Ok(()) => return,
            Err(left) => assert!(
                start.elapsed() < DEADLINE,
                "not converged to {what} within {DEADLINE:?}: {left}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

struct Replica {
    stop: CancellationToken,
    task: JoinHandle<Leadership>,
}

fn replica(client: &Client, identity: &str, lease_namespace: &str) -> Replica {
    let mut settings = Settings::new(identity);
    lease_namespace.clone_into(&mut settings.lease_namespace);
    settings.lease = (Duration::from_secs(3), Duration::from_secs(2), Duration::from_millis(250));
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (client, stop) = (client.clone(), stop.clone());
        async move { example_controller::run(client, settings, stop).await.expect("it runs") }
    });
    Replica { stop, task }
}

/// The holder of the run's Lease.
async fn leader(client: &Client, namespace: &str) -> Option<String> {
    let lease: k8s_openapi::api::coordination::v1::Lease =
        client.get(Some(namespace), example_controller::CONTROLLER).await.ok()?;
    lease.spec?.holder_identity
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_controller_converges_on_kube_apiserver() {
    let Some(server) =
        tokio::task::spawn_blocking(KubeApiServer::shared).await.expect("the harness thread")
    else {
        return;
    };
    let client = server.client("cert");
    let run = format!("ex{:06x}", fastrand::u32(..0x100_0000));
    match client.create(None, &ConfigMapSet::crd()).await {
        Err(e) if e.is_conflict() || e.status().is_some_and(|s| s.reason == "AlreadyExists") => {}
        other => drop(other.expect("the CRD is created")),
    }
    let (shop, blog, missing) =
        (format!("{run}-shop"), format!("{run}-blog"), format!("{run}-later"));
    for ns in [&shop, &blog] {
        let namespace = Namespace { metadata: named(ns), ..Namespace::default() };
        client.create(None, &namespace).await.expect("the namespace is created");
    }
    // The CRD is served a moment after it is created.
    let start = tokio::time::Instant::now();
    while client.list::<ConfigMapSet>(None, &ListOptions::default()).await.is_err() {
        assert!(start.elapsed() < DEADLINE, "the CRD is not served");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let replicas = [replica(&client, "replica-a", &shop), replica(&client, "replica-b", &shop)];

    let name = format!("{run}-web");
    let spec = ConfigMapSetSpec {
        namespaces: vec![shop.clone(), blog.clone(), missing],
        data: [("mode".to_owned(), "fast".to_owned())].into(),
    };
    let set = ConfigMapSet { metadata: named(&name), spec, status: None };
    client.create(None, &set).await.expect("the set is created");
    converge(&client, &run, "the set in place (one namespace missing)").await;
    let stored: ConfigMapSet = client.get(None, &name).await.unwrap();
    let ready =
        stored.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"));
    assert_eq!(
        ready.map(|c| (c.status.as_str(), c.reason.as_str())),
        Some(("False", "NamespaceMissing"))
    );
    assert_eq!(
        stored.metadata.finalizers.as_deref(),
        Some(&[example_controller::FINALIZER.to_owned()][..])
    );

    let mut changed = stored.clone();
    changed.spec.data.insert("mode".to_owned(), "slow".to_owned());
    changed.spec.namespaces.retain(|ns| *ns != blog);
    client.replace(None, &name, &changed).await.expect("the set is changed");
    converge(&client, &run, "the changed set").await;

    // The leader dies without releasing its Lease; the standby takes over.
    let holder = leader(&client, &shop).await.expect("a leader");
    let [a, b] = replicas;
    let (killed, survivor) = if holder == "replica-a" { (a, b) } else { (b, a) };
    killed.task.abort();
    let _ = killed.task.await;
    client.delete::<ConfigMapSet>(None, &name).await.expect("the set is deleted");
    let start = tokio::time::Instant::now();
    loop {
        let gone = client.get::<ConfigMapSet>(None, &name).await.is_err_and(|e| e.is_not_found());
        let owned = client
            .list_all::<ConfigMap>(Some(&shop), &ListOptions::default(), 10_000)
            .await
            .unwrap()
            .items
            .iter()
            .filter(|cm| cm.metadata.name.as_deref() == Some(name.as_str()))
            .count();
        if gone && owned == 0 {
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "the new leader did not clean up and release the set: gone {gone}, {owned} config maps left"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_ne!(leader(&client, &shop).await.as_deref(), Some(holder.as_str()), "leadership moved");
    survivor.stop.cancel();
    let outcome = tokio::time::timeout(DEADLINE, survivor.task).await.unwrap().unwrap();
    assert_eq!(outcome, Leadership::Released);
}
