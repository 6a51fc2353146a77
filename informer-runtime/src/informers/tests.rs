use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::factory::SharedInformerFactory;
use crate::informers::{apps, core};
use crate::resource::GroupVersionResource;
use crate::selector::LabelSelector;
use crate::testing::FakeSource;

fn meta(namespace: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        ..ObjectMeta::default()
    }
}

#[tokio::test]
async fn grouped_accessors_sync_and_list() {
    let source = FakeSource::new();
    source.add(Pod { metadata: meta("default", "web"), ..Pod::default() });
    source.add(Deployment { metadata: meta("prod", "api"), ..Deployment::default() });
    let factory = SharedInformerFactory::new(source);
    let pods: core::v1::PodInformer<'_, FakeSource> = factory.core().v1().pods();
    let deployments = factory.apps().v1().deployments();
    let _ = pods.informer();
    let _ = deployments.informer();
    factory.start();
    assert!(factory.wait_for_cache_sync(Duration::from_secs(30)).await.all_synced());
    assert!(pods.informer().has_synced());

    let lister: core::v1::PodLister = pods.lister();
    assert_eq!(lister.list(&LabelSelector::everything()).len(), 1);
    let in_default: core::v1::PodNamespaceLister = lister.namespace("default");
    assert_eq!(in_default.get("web").unwrap().metadata.name.as_deref(), Some("web"));
    let deployments: apps::v1::DeploymentLister = deployments.lister();
    assert!(deployments.namespace("prod").get("api").is_ok());
    assert!(deployments.namespace("default").get("api").is_err());
    factory.shutdown().await;
}

#[tokio::test]
async fn register_builtins_makes_every_builtin_known() {
    let factory = SharedInformerFactory::new(FakeSource::new());
    let jobs = GroupVersionResource::new("batch", "v1", "jobs");
    assert!(factory.for_resource(&jobs).is_err());
    factory.register_builtins();
    let informer = factory.for_resource(&jobs).unwrap();
    assert_eq!(informer.resource(), jobs);
    assert!(informer.downcast::<Job>().is_some());
    assert!(factory.for_resource(&GroupVersionResource::new("apps", "v1", "deployments")).is_ok());
    factory.shutdown().await;
}
