//! The example resource on a server: its manifest is installed in the embedded API server, and
//! objects created over HTTP reach the cache of the informer from
//! `factory.example().v1().databases()` unchanged.

#![allow(clippy::expect_used, reason = "in a test, a failed expect is a failed assertion")]

use std::time::Duration;

use embedded_apiserver::ApiServer;
use example_derive::informers::CustomResourceInformers as _;
use example_derive::{Backup, Database, DatabaseLister, DatabaseSpec, Engine, Source, Storage};
use informer_client::{Client, Config};
use informer_runtime::{LabelSelector, SharedInformerFactory};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

const DEADLINE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn databases_sync_through_the_grouped_accessor() {
    let server = ApiServer::start().await.expect("a free port");
    let client = Client::new(Config::new(server.url().parse().expect("a URL"))).expect("a client");
    client.create(None, &Database::crd()).await.expect("the CRD is accepted");

    let typed = Database {
        metadata: ObjectMeta {
            name: Some("typed".to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: DatabaseSpec {
            engine: Engine::Postgres,
            version: "16.2".to_owned(),
            replicas: 3,
            read_only: None,
            cache_ratio: None,
            port: None,
            storage: Storage { size: Quantity("10Gi".to_owned()), class_name: None },
            parameters: [("max_connections".to_owned(), "200".to_owned())].into(),
            users: Vec::new(),
            backup: None,
            source: None,
            pod_overrides: None,
            extra: [("tuning".to_owned(), serde_json::json!({"jit": false}))].into(),
        },
        status: None,
    };
    client.create(Some("default"), &typed).await.expect("created");

    let factory = SharedInformerFactory::new(client.clone());
    let databases = factory.example().v1().databases();
    databases.informer();
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    let lister: DatabaseLister = databases.lister();
    assert_eq!(lister.namespace("default").get("typed").expect("cached").spec, typed.spec);

    // Created after the informer started: the watch brings it.
    let mut later = typed.clone();
    later.metadata.name = Some("later".to_owned());
    later.spec.backup = Some(Backup::Continuous { days: 7 });
    later.spec.source = Some(Source::Dump { url: "https://example.com/dump.sql".to_owned() });
    client.create(Some("default"), &later).await.expect("created");
    let everything = LabelSelector::everything();
    let start = tokio::time::Instant::now();
    while lister.list(&everything).len() < 2 {
        assert!(start.elapsed() < DEADLINE, "the watch did not bring `later`");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(lister.namespace("default").get("later").expect("cached").spec, later.spec);
    factory.shutdown().await;
    server.shutdown().await.expect("a clean stop");
}
