//! The event recorder over real HTTP against the embedded API server, in virtual time: repeats
//! fold into one Event's series, written at once for the first repeat, at a flush, and when the
//! series ends after 6 quiet minutes; a hot loop about one object is held back.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::sync::Arc;
use std::time::Duration;

use embedded_apiserver::ApiServer;
use embedded_apiserver::testing::eventually;
use informer_client::{Client, Config};
use informer_controller::events::{EventRecorder, EventType};
use informer_runtime::GroupVersionResource;
use informer_runtime::testing::FakeClock;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

const DEADLINE: Duration = Duration::from_secs(20);

struct Setup {
    server: ApiServer,
    clock: FakeClock,
    recorder: EventRecorder,
    configmap: ConfigMap,
}

async fn setup() -> Setup {
    let server = ApiServer::start().await.unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let configmap = ConfigMap {
        metadata: ObjectMeta { name: Some("settings".to_owned()), ..ObjectMeta::default() },
        ..ConfigMap::default()
    };
    let configmap = client.create(Some("default"), &configmap).await.unwrap();
    let clock = FakeClock::new();
    let recorder = EventRecorder::with_clock(
        client,
        "example.com/settings-controller",
        "replica-1",
        Arc::new(clock.clone()),
    );
    Setup { server, clock, recorder, configmap }
}

fn events(server: &ApiServer) -> Vec<Value> {
    server.objects(&GroupVersionResource::of::<Event>())
}

#[tokio::test]
async fn repeats_fold_into_one_event_with_a_series_until_it_goes_quiet() {
    let s = setup().await;
    s.recorder.publish(&s.configmap, EventType::Normal, "Synced", "Sync", "synced 3 keys");
    s.recorder.flush().await;
    let written = events(&s.server);
    assert_eq!(written.len(), 1);
    let event = &written[0];
    assert_eq!(event["metadata"]["namespace"], "default");
    assert_eq!(event["type"], "Normal");
    assert_eq!(
        (event["reason"].as_str(), event["action"].as_str()),
        (Some("Synced"), Some("Sync"))
    );
    assert_eq!(event["note"], "synced 3 keys");
    assert_eq!(event["regarding"]["kind"], "ConfigMap");
    assert_eq!(event["regarding"]["uid"], s.configmap.metadata.uid.as_deref().unwrap());
    assert_eq!(event["reportingController"], "example.com/settings-controller");
    assert_eq!(event["reportingInstance"], "replica-1");
    assert!(event["eventTime"].is_string());
    assert!(event.get("series").is_none());

    // The series count of the configmap's event (one until the series ends).
    let count = |server: &ApiServer| {
        let events = events(server);
        let event = events.into_iter().find(|e| e["regarding"]["kind"] == "ConfigMap");
        event.map(|e| e["series"]["count"].clone())
    };
    for _ in 0..10 {
        s.recorder.publish(&s.configmap, EventType::Normal, "Synced", "Sync", "synced 3 keys");
    }
    // The first repeat is written at once; the others are counted.
    eventually("the first repeat to be written", DEADLINE, || count(&s.server) == Some(2.into()))
        .await;
    assert_eq!(events(&s.server).len(), 1, "repeats are not new events");
    s.recorder.flush().await;
    assert_eq!(count(&s.server), Some(11.into()), "a flush writes the counted repeats");

    // Four more, then 6 quiet minutes: the series ends with its last count written. (An event
    // about another object, published after them, shows they were handled: in order.)
    for _ in 0..4 {
        s.recorder.publish(&s.configmap, EventType::Normal, "Synced", "Sync", "synced 3 keys");
    }
    let marker = Namespace {
        metadata: ObjectMeta { name: Some("marker".to_owned()), ..ObjectMeta::default() },
        ..Namespace::default()
    };
    s.recorder.publish(&marker, EventType::Normal, "Marked", "Mark", "after the repeats");
    eventually("the repeats to be handled", DEADLINE, || events(&s.server).len() == 2).await;
    assert_eq!(count(&s.server), Some(11.into()), "counted, not written yet");
    s.clock.step(Duration::from_secs(6 * 60));
    eventually("the ended series' count to be written", DEADLINE, || {
        count(&s.server) == Some(15.into())
    })
    .await;
    s.recorder.publish(&s.configmap, EventType::Normal, "Synced", "Sync", "synced 3 keys");
    s.recorder.flush().await;
    assert_eq!(events(&s.server).len(), 3, "after the series ended, a new event");
    assert_eq!(s.recorder.dropped(), 0);
}

#[tokio::test]
async fn a_hot_loop_about_one_object_is_held_back_and_others_are_not() {
    let s = setup().await;
    for i in 0..100 {
        let note = format!("attempt {i} failed");
        s.recorder.publish(&s.configmap, EventType::Warning, "Failed", "Reconcile", &note);
    }
    s.recorder.flush().await;
    assert_eq!(events(&s.server).len(), 25, "a burst of 25 per object");
    assert_eq!(s.recorder.dropped(), 75);

    // Another object has a bucket of its own; a cluster-scoped one's events go to "default".
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some("apps".to_owned()),
            uid: Some("ns-uid".to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    s.recorder.publish(&namespace, EventType::Normal, "Seen", "Observe", "a namespace");
    s.recorder.flush().await;
    let written = events(&s.server);
    assert_eq!(written.len(), 26);
    assert!(
        written
            .iter()
            .any(|e| e["regarding"]["kind"] == "Namespace"
                && e["metadata"]["namespace"] == "default")
    );

    // One more token every 5 minutes.
    s.clock.step(Duration::from_secs(5 * 60));
    s.recorder.publish(
        &s.configmap,
        EventType::Warning,
        "Failed",
        "Reconcile",
        "attempt 100 failed",
    );
    s.recorder.publish(
        &s.configmap,
        EventType::Warning,
        "Failed",
        "Reconcile",
        "attempt 101 failed",
    );
    s.recorder.flush().await;
    assert_eq!(events(&s.server).len(), 27);
    assert_eq!(s.recorder.dropped(), 76);
}

/// A flush waits for a deadline, not for every queued write's own timeouts: against a server
/// that accepts connections and never answers (hours of waiting for a full queue before), it
/// returns at its deadline and says how many events it gave up.
#[tokio::test]
async fn a_flush_gives_up_at_its_deadline_when_the_server_never_answers() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // Accepts, holds every connection open, answers nothing.
    let _silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((connection, _)) = listener.accept().await {
            held.push(connection);
        }
    });
    let client = Client::new(Config::new(url.parse().unwrap())).unwrap();
    let recorder = EventRecorder::new(client, "example.com/settings-controller", "replica-1");
    for i in 0..20 {
        let configmap = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("settings-{i}")),
                namespace: Some("default".to_owned()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        recorder.publish(&configmap, EventType::Normal, "Synced", "Sync", "synced");
    }
    let started = std::time::Instant::now();
    let report = tokio::time::timeout(
        Duration::from_secs(5),
        recorder.flush_within(Duration::from_millis(300)),
    )
    .await
    .expect("the flush returns at its deadline");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    // The write under way, abandoned, and the 19 behind it, dropped without being tried (each
    // would have waited for the client's timeouts).
    assert!(!report.complete, "{report:?}");
    assert_eq!(report.given_up, 20, "{report:?}");
    assert_eq!(recorder.dropped(), 20);
}
