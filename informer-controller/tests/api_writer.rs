//! `ApiWriter` for both clients, over real HTTP to the embedded API server: the answers leader
//! election and Events act on (a missing Lease is `404`, a stale write `409`) arrive as the
//! same `WriteError`s whether this project's `Client` or kube-rs's `kube::Client` sent them,
//! and a leader is elected through either.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

#[path = "support/clients.rs"]
mod clients;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clients::{kube_client, our_client};
use embedded_apiserver::ApiServer;
use informer_controller::leader_election::{LeaderElection, Leadership};
use informer_controller::{ApiWriter, WriteError};
use informer_runtime::GroupVersionResource;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio_util::sync::CancellationToken;

/// How long a test waits for an election (real time) before it fails.
const DEADLINE: Duration = Duration::from_secs(20);

fn lease(name: &str, holder: &str) -> Lease {
    Lease {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        spec: Some(LeaseSpec { holder_identity: Some(holder.to_owned()), ..LeaseSpec::default() }),
    }
}

fn status_code(error: &WriteError) -> Option<u16> {
    error.status().map(|s| s.code)
}

/// Every write of the trait, and the answers the layer decides on.
async fn writes_as_the_server_answers(writer: impl ApiWriter, server: &ApiServer) {
    let missing = writer.get_lease("default", "lock").await.unwrap_err();
    assert!(missing.is_not_found(), "a missing Lease is 404: {missing}");

    let created = writer.create_lease("default", &lease("lock", "a")).await.unwrap();
    let again = writer.create_lease("default", &lease("lock", "b")).await.unwrap_err();
    assert_eq!(status_code(&again), Some(409), "a second create is 409 AlreadyExists: {again}");
    assert!(!again.to_string().is_empty());

    let read = writer.get_lease("default", "lock").await.unwrap();
    assert_eq!(read.metadata.resource_version, created.metadata.resource_version);
    let mut taken = read.clone();
    taken.spec.as_mut().unwrap().holder_identity = Some("b".to_owned());
    writer.replace_lease("default", "lock", &taken).await.unwrap();
    // `read` carries the version before that replace: a candidate that lost the race.
    let stale = writer.replace_lease("default", "lock", &read).await.unwrap_err();
    assert!(stale.is_conflict(), "a write at a stale resourceVersion is 409 Conflict: {stale}");
    assert_eq!(stale.status().map(|s| s.reason.as_str()), Some("Conflict"));

    let event = Event {
        metadata: ObjectMeta { name: Some("lock.1".to_owned()), ..ObjectMeta::default() },
        reason: Some("Elected".to_owned()),
        action: Some("Elect".to_owned()),
        note: Some("a took the lock".to_owned()),
        event_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        )),
        reporting_controller: Some("example.com/c".to_owned()),
        reporting_instance: Some("replica-1".to_owned()),
        type_: Some("Normal".to_owned()),
        ..Event::default()
    };
    writer.create_event("default", &event).await.unwrap();
    let patch = serde_json::json!({ "series": { "count": 2, "lastObservedTime": "2026-01-01T00:00:00.000000Z" } });
    let patched = writer.merge_patch_event("default", "lock.1", &patch).await.unwrap();
    assert_eq!(patched.series.map(|s| s.count), Some(2));
    let stored = server.get(&GroupVersionResource::of::<Event>(), "default", "lock.1").unwrap();
    assert_eq!(stored["series"]["count"], 2, "the merge patch reached the server");

    let absent = writer.merge_patch_event("default", "nothing", &patch).await.unwrap_err();
    assert!(absent.is_not_found(), "{absent}");
}

#[tokio::test]
async fn this_projects_client_writes_as_the_server_answers() {
    let server = ApiServer::start().await.unwrap();
    writes_as_the_server_answers(our_client(&server), &server).await;
}

#[tokio::test]
async fn a_kube_client_writes_as_the_server_answers() {
    let server = ApiServer::start().await.unwrap();
    writes_as_the_server_answers(kube_client(&server).await, &server).await;
}

/// A kube-rs program elects its leader through the client it has: the candidate takes the
/// Lease, works, and on stop releases it.
#[tokio::test]
async fn a_leader_is_elected_through_a_kube_client() {
    let server = ApiServer::start().await.unwrap();
    let election = LeaderElection::builder(kube_client(&server).await, "default", "lock", "a")
        .build()
        .unwrap();
    let stop = CancellationToken::new();
    let led = Arc::new(AtomicBool::new(false));
    let outcome = tokio::time::timeout(DEADLINE, {
        let (stop, led) = (stop.clone(), Arc::clone(&led));
        election.run(stop.clone(), move |leading| async move {
            led.store(true, Ordering::SeqCst);
            stop.cancel();
            leading.cancelled().await;
        })
    })
    .await
    .expect("the candidate leads and stops within the deadline");
    assert!(led.load(Ordering::SeqCst), "the work ran while leading");
    assert_eq!(outcome, Leadership::Released);
    let lease = server
        .get(&GroupVersionResource::of::<Lease>(), "default", "lock")
        .expect("the Lease was created");
    assert!(
        lease["spec"].get("holderIdentity").is_none_or(serde_json::Value::is_null),
        "a stopped leader releases the Lease: {lease}"
    );
}
