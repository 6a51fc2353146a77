//! A kube-rs program, as its authors write one, that adds this crate's informers: its
//! `kube::Client` comes from `kube::Client::try_default()` (`KUBECONFIG`, or the in-cluster
//! service account) and is the factory's source through the `kube` feature.
//!
//! Run by `tests/kube_client_source.rs` and `tests/kube_apiserver.rs` with `KUBECONFIG` set:
//! it caches the pods and the widgets (a kube-derive custom resource) of the namespace given as
//! its argument, prints `synced pods=N widgets=M`, then waits for a widget named `late` to
//! reach its handler, prints `saw late`, and exits. Any failure exits non-zero with the reason.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use informer_runtime::{HandlerFuncs, SharedInformerFactory, impl_resource};
use k8s_openapi::api::core::v1::Pod;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

/// The program's custom resource.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    /// How many.
    pub size: i32,
}

impl_resource!(
    Widget,
    group = "example.com",
    version = "v1",
    kind = "Widget",
    plural = "widgets",
    namespaced
);

/// How long any step may take.
const DEADLINE: Duration = Duration::from_secs(60);

async fn run(namespace: &str) -> Result<(), Box<dyn std::error::Error>> {
    let kube_client = kube::Client::try_default().await?;
    let factory = SharedInformerFactory::builder(informer_client::Client::from(kube_client))
        .namespace(namespace)
        .build();
    let pods = factory.informer::<Pod>();
    let widgets = factory.informer::<Widget>();
    let late = Arc::new(Notify::new());
    let seen = Arc::clone(&late);
    widgets.add_event_handler(HandlerFuncs::new().on_add(move |w: Arc<Widget>, _| {
        if w.metadata.name.as_deref() == Some("late") {
            seen.notify_one();
        }
    }))?;
    factory.start();
    if !factory.wait_for_cache_sync(DEADLINE).await.all_synced() {
        return Err("the caches did not sync".into());
    }
    println!("synced pods={} widgets={}", pods.cache().len(), widgets.cache().len());
    tokio::time::timeout(DEADLINE, late.notified()).await.map_err(|_| "no widget `late`")?;
    println!("saw late");
    factory.shutdown().await;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let Some(namespace) = std::env::args().nth(1) else {
        eprintln!("usage: kube-program NAMESPACE");
        return ExitCode::from(2);
    };
    match run(&namespace).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kube-program: {error}");
            ExitCode::FAILURE
        }
    }
}
