//! Metadata-only informers over real HTTP against the embedded API server: the informer of
//! `PartialObjectMetadata<Pod>` lists, watches, and tells its handlers about updates and
//! deletes, its lister answers by namespace, name and label. (How the server renders
//! `PartialObjectMetadata(List)` is embedded-apiserver's `tests/apiserver_metadata.rs`.)

// Every test here runs this crate's own HTTP client (`Client::new`, `Config`), which the
// `http` feature builds.
#![cfg(feature = "http")]
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use embedded_apiserver::ApiServer;
use embedded_apiserver::testing::pod;
use informer_client::{Client, Config};
use informer_runtime::metadata::PartialObjectMetadata;
use informer_runtime::reflector::ReflectorConfig;
use informer_runtime::{GroupVersionResource, HandlerFuncs, LabelSelector, SharedInformerFactory};
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use tokio::sync::mpsc;

const DEADLINE: Duration = Duration::from_secs(20);

type PodMeta = PartialObjectMetadata<Pod>;

fn pods() -> GroupVersionResource {
    GroupVersionResource::of::<Pod>()
}

async fn next<T>(rx: &mut mpsc::UnboundedReceiver<T>) -> T {
    tokio::time::timeout(DEADLINE, rx.recv()).await.expect("an event in time").expect("open")
}

/// What a handler saw, as `ADD|UPDATE|DELETE ns/name`.
fn recording_handler(tx: mpsc::UnboundedSender<String>) -> HandlerFuncs<PodMeta> {
    let (add, update, delete) = (tx.clone(), tx.clone(), tx);
    let key = |m: &PodMeta| {
        format!(
            "{}/{}",
            m.metadata.namespace.as_deref().unwrap_or(""),
            m.metadata.name.as_deref().unwrap_or("")
        )
    };
    HandlerFuncs::new()
        .on_add(move |m: Arc<PodMeta>, _initial| {
            let _ = add.send(format!("ADD {}", key(&m)));
        })
        .on_update(move |_old, new: Arc<PodMeta>| {
            let labels = new.metadata.labels.clone().unwrap_or_default();
            let _ = update.send(format!("UPDATE {} app={}", key(&new), labels["app"]));
        })
        .on_delete(move |deleted| {
            let _ = delete.send(format!("DELETE {}", deleted.key()));
        })
}

#[tokio::test]
async fn metadata_informers_list_watch_update_delete_and_list_by_label() {
    let server = ApiServer::start().await.unwrap();
    server.create(&pods(), pod("default", "web-0", "web")).unwrap();
    server.create(&pods(), pod("default", "db-0", "db")).unwrap();
    server.create(&pods(), pod("other", "web-1", "web")).unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();

    // Listing then watching, and a streaming list (a watch with sendInitialEvents); each with
    // a decoded cache and a compact one (issue 18), whose lists wait compressed until complete.
    let streamed = || ReflectorConfig::default().streaming_list(true);
    let factories = [
        SharedInformerFactory::new(client.clone()),
        SharedInformerFactory::builder(client.clone()).reflector_config(streamed()).build(),
        SharedInformerFactory::builder(client.clone()).compact_storage(0).build(),
        SharedInformerFactory::builder(client)
            .compact_storage(1)
            .reflector_config(streamed())
            .build(),
    ];
    let mut seen = Vec::new();
    for factory in &factories {
        let (tx, rx) = mpsc::unbounded_channel();
        factory.informer::<PodMeta>().add_event_handler(recording_handler(tx)).unwrap();
        factory.start();
        assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
        seen.push(rx);
    }
    for rx in &mut seen {
        let mut initial = vec![next(rx).await, next(rx).await, next(rx).await];
        initial.sort();
        assert_eq!(initial, ["ADD default/db-0", "ADD default/web-0", "ADD other/web-1"]);
    }

    // Through the watch: an add, an update (a label), a delete.
    server.create(&pods(), pod("default", "web-2", "web")).unwrap();
    let mut web0 = server.get(&pods(), "default", "web-0").unwrap();
    web0["metadata"]["labels"]["app"] = json!("edge");
    server.update(&pods(), web0).unwrap();
    server.delete(&pods(), "default", "db-0").unwrap();
    for rx in &mut seen {
        assert_eq!(next(rx).await, "ADD default/web-2");
        assert_eq!(next(rx).await, "UPDATE default/web-0 app=edge");
        assert_eq!(next(rx).await, "DELETE default/db-0");
    }

    for factory in &factories {
        let lister = factory.lister::<PodMeta>();
        let web = LabelSelector::parse("app=web").unwrap();
        let mut names: Vec<String> =
            lister.list(&web).iter().map(|m| m.metadata.name.clone().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["web-1", "web-2"]);
        assert_eq!(lister.namespace("default").list(&web).len(), 1);
        assert_eq!(lister.namespace("other").list(&LabelSelector::everything()).len(), 1);
        let edge = lister.namespace("default").get("web-0").unwrap();
        assert_eq!(edge.metadata.labels.as_ref().unwrap()["app"], "edge");
        assert!(edge.metadata.uid.is_some() && edge.metadata.resource_version.is_some());
        // managedFields is skipped while decoding, as for whole objects.
        assert!(
            lister
                .list(&LabelSelector::everything())
                .iter()
                .all(|m| m.metadata.managed_fields.is_none())
        );
        assert_eq!(
            lister.namespace("default").get("db-0").unwrap_err().to_string(),
            r#"pod "db-0" not found"#
        );
    }
    for factory in &factories {
        factory.shutdown().await;
    }
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn whole_object_and_metadata_informers_of_one_resource_live_side_by_side() {
    let server = ApiServer::start().await.unwrap();
    server.create(&pods(), pod("default", "web-0", "web")).unwrap();
    let client = Client::new(Config::new(server.url().parse().unwrap())).unwrap();
    let factory = SharedInformerFactory::new(client.clone());
    // Metadata first: `for_resource` still answers with the whole-object informer.
    let metadata = factory.informer::<PodMeta>();
    let full = factory.informer::<Pod>();
    factory.start();
    let report = factory.wait_for_cache_sync(DEADLINE).await;
    assert!(report.all_synced());
    assert_eq!(report.0.len(), 1, "one resource");
    assert!(factory.for_resource(&pods()).unwrap().downcast::<Pod>().is_some());
    assert_eq!((metadata.cache().len(), full.cache().len()), (1, 1));
    assert!(full.cache().list()[0].spec.is_some());
    // A typed get through the client asks for metadata alone, too.
    let got: PodMeta = client.get(Some("default"), "web-0").await.unwrap();
    assert_eq!(got.metadata.name.as_deref(), Some("web-0"));
    factory.shutdown().await;
    server.shutdown().await.unwrap();
}
