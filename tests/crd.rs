//! Generated code for custom resources, end to end: `build.rs` runs `informer_gen::Builder` on
//! the CRDs it lists; here the generated types decode objects recorded from a real cluster, and
//! the generated informers and listers sync from the embedded API server over HTTP, where the
//! CRD was created through the API as `kubectl apply` would.

#![allow(clippy::expect_used, reason = "in a test, a failed expect is a failed assertion")]

use std::sync::Arc;
use std::time::Duration;

use embedded_apiserver::ApiServer;
use informer_client::{Client, Config};
use informer_runtime::{HandlerFuncs, LabelSelector, SharedInformerFactory};
use informer_tests::eventually;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use parking_lot::Mutex;

/// The generated code, as a user includes it.
mod crds {
    include!(concat!(env!("OUT_DIR"), "/custom_resources.rs"));
}

/// The same generator with `Visibility::Crate` and docs off.
mod private_crds {
    include!(concat!(env!("OUT_DIR"), "/custom_resources_private.rs"));
}

use crds::CustomResourceInformers as _;
use crds::cert_manager::v1::{Certificate, CertificateSpecPrivateKeyAlgorithm};
use crds::k8s_openapi_tests_custom_resource_definition::v1::{FooBar, FooBarSpec};

const DEADLINE: Duration = Duration::from_secs(30);
const FOOBAR_CRD: &str = include_str!("../informer-derive/tests/fixtures/foobar.json");
const FOOBAR_LIST: &str =
    include_str!("../informer-client/tests/fixtures/kind-v1-36-foobar-cr-list.compact.json");
const FOOBAR_WATCH: &str =
    include_str!("../informer-client/tests/fixtures/kind-v1-36-foobar-watch.events.jsonl");

/// `json` decoded as `T` and encoded again, compared with the original as JSON values.
fn assert_round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(
    json: &serde_json::Value,
) -> T {
    let typed: T = serde_json::from_str(&json.to_string()).expect("decodes");
    assert_eq!(&serde_json::to_value(&typed).expect("encodes"), json);
    typed
}

#[test]
fn recorded_foobars_decode_and_encode_back_unchanged() {
    let list: serde_json::Value = serde_json::from_str(FOOBAR_LIST).expect("a list");
    let items = list["items"].as_array().expect("items");
    assert!(!items.is_empty());
    for item in items {
        let foobar: FooBar = assert_round_trip(item);
        let spec = foobar.spec.expect("a spec");
        assert!(matches!(spec.prop4, IntOrString::Int(_) | IntOrString::String(_)));
    }
    let mut events = 0;
    for line in FOOBAR_WATCH.lines() {
        let event: serde_json::Value = serde_json::from_str(line).expect("an event");
        let foobar: FooBar = assert_round_trip(&event["object"]);
        assert_eq!(foobar.metadata.namespace.as_deref(), Some("default"));
        events += 1;
    }
    assert_eq!(events, 2);
}

#[test]
fn crate_private_output_decodes_the_same_objects() {
    let list: serde_json::Value = serde_json::from_str(FOOBAR_LIST).expect("a list");
    for item in list["items"].as_array().expect("items") {
        let _: private_crds::k8s_openapi_tests_custom_resource_definition::v1::FooBar =
            assert_round_trip(item);
    }
}

#[test]
fn an_enum_value_the_schema_does_not_list_is_kept() {
    let json = serde_json::json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {
            "secretName": "s",
            "issuerRef": {"name": "ca"},
            "privateKey": {"algorithm": "Ed448"},
        },
    });
    let cert: Certificate = assert_round_trip(&json);
    let algorithm = cert.spec.and_then(|s| s.private_key).and_then(|k| k.algorithm);
    assert_eq!(algorithm, Some(CertificateSpecPrivateKeyAlgorithm::Other("Ed448".to_owned())));
    assert_eq!(CertificateSpecPrivateKeyAlgorithm::from("ECDSA").as_str(), "ECDSA");
}

/// The `FooBar` CRD as `kubectl apply` creates it: the recorded one without what the server set.
fn foobar_crd() -> CustomResourceDefinition {
    let crd: CustomResourceDefinition = serde_json::from_str(FOOBAR_CRD).expect("the CRD");
    CustomResourceDefinition {
        metadata: ObjectMeta { name: crd.metadata.name, ..ObjectMeta::default() },
        spec: crd.spec,
        status: None,
    }
}

fn foobar(name: &str, prop1: &str) -> FooBar {
    FooBar {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            labels: Some([("app".to_owned(), "demo".to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(FooBarSpec {
            prop1: prop1.to_owned(),
            prop2: vec![true, false],
            prop3: Some(3),
            prop4: IntOrString::Int(4),
            prop5: IntOrString::String("5".to_owned()),
        }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_informers_sync_from_the_embedded_api_server() {
    let server = ApiServer::start().await.expect("server starts");
    let client = Client::new(Config::new(server.url().parse().expect("a url"))).expect("client");
    client.create(None, &foobar_crd()).await.expect("the CRD is created");
    client.create(Some("default"), &foobar("fb1", "one")).await.expect("fb1 is created");

    let factory = SharedInformerFactory::new(client.clone());
    let foobars = factory.k8s_openapi_tests_custom_resource_definition().v1().foo_bars();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = Arc::clone(&seen);
    let log2 = Arc::clone(&seen);
    let registration = foobars
        .informer()
        .add_event_handler(
            HandlerFuncs::new()
                .on_add(move |fb: Arc<FooBar>, _| {
                    log.lock()
                        .push(format!("add {}", fb.metadata.name.clone().unwrap_or_default()));
                })
                .on_update(move |_, fb: Arc<FooBar>| {
                    let prop1 = fb.spec.as_ref().map(|s| s.prop1.clone()).unwrap_or_default();
                    log2.lock().push(format!("update {prop1}"));
                }),
        )
        .expect("a handler");
    factory.start();
    assert!(factory.wait_for_cache_sync(DEADLINE).await.all_synced());
    assert!(registration.wait_for_sync().await);

    let lister: crds::k8s_openapi_tests_custom_resource_definition::v1::FooBarLister =
        foobars.lister();
    let namespaced: crds::k8s_openapi_tests_custom_resource_definition::v1::FooBarNamespaceLister =
        lister.namespace("default");
    assert_eq!(
        namespaced.get("fb1").expect("cached").spec.as_ref().map(|s| s.prop3),
        Some(Some(3))
    );

    client.create(Some("default"), &foobar("fb2", "two")).await.expect("fb2 is created");
    client
        .patch_merge::<FooBar>(
            Some("default"),
            "fb1",
            &serde_json::json!({"spec": {"prop1": "changed"}}),
        )
        .await
        .expect("fb1 is patched");
    eventually("both objects in the lister", DEADLINE, || {
        lister.list(&LabelSelector::parse("app=demo").expect("a selector")).len() == 2
    })
    .await;
    eventually("the handler to see the add and the update", DEADLINE, || {
        let seen = seen.lock();
        seen.contains(&"add fb2".to_owned()) && seen.contains(&"update changed".to_owned())
    })
    .await;
    assert!(seen.lock().contains(&"add fb1".to_owned()));

    // The generic path finds the type too, once registered.
    factory.register_custom_resources();
    let gvr = informer_runtime::GroupVersionResource::new(
        "k8s-openapi-tests-custom-resource-definition.com",
        "v1",
        "foobars",
    );
    assert_eq!(
        factory
            .for_resource(&gvr)
            .expect("registered")
            .lister()
            .list(&LabelSelector::everything())
            .len(),
        2
    );

    factory.shutdown().await;
    server.shutdown().await.expect("a clean stop");
}

/// A resource the server does not serve: the error says why, from discovery, and an informer
/// syncs once its CRD is installed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_not_served_is_an_error_that_says_why_and_syncs_once_installed() {
    use informer_runtime::Resource as _;
    use informer_runtime::listwatch::ListOptions;
    use k8s_openapi::api::core::v1::ReplicationController;

    let server = ApiServer::start().await.expect("server starts");
    let client = Client::new(Config::new(server.url().parse().expect("a url"))).expect("client");
    let list = ListOptions::default();

    let error = client.lister_watcher::<FooBar>(None).list(&list).await.expect_err("not served");
    let message = error.to_string();
    let what = format!(
        "foobars.{} ({}) is not served by the API server",
        FooBar::GROUP,
        FooBar::API_VERSION
    );
    assert!(message.contains(&what), "{message}");
    assert!(
        message.contains(&format!("the server does not know the group {}", FooBar::GROUP)),
        "{message}"
    );
    assert!(message.contains("install the CustomResourceDefinition"), "{message}");
    assert_eq!(error.status().map(|s| s.code), Some(404), "still a 404 for the reflector");

    // A core kind the embedded server does not have: its group and version are served.
    let error = client
        .lister_watcher::<ReplicationController>(None)
        .watch(&informer_runtime::listwatch::WatchOptions::default())
        .await
        .err()
        .expect("not served");
    assert!(
        error.to_string().contains("v1 is served, but has no resource replicationcontrollers"),
        "{error}"
    );

    let factory = SharedInformerFactory::new(client.clone());
    let informer = factory.informer::<FooBar>();
    factory.start();
    client.create(None, &foobar_crd()).await.expect("the CRD is created");
    client.create(Some("default"), &foobar("late", "one")).await.expect("late is created");
    eventually("the informer to sync once the CRD is served", DEADLINE, || informer.has_synced())
        .await;
    eventually("the object in its cache", DEADLINE, || informer.cache().len() == 1).await;
    factory.shutdown().await;
}
