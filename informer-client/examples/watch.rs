//! Watches any resource the API server serves, named as kubectl names it, and prints its
//! changes: what `kubectl get -w` does, through a dynamic informer.
//!
//! ```text
//! cargo run -p informer-runtime --example watch -- deployments.apps -n kube-system
//! cargo run -p informer-runtime --example watch -- widgets.example.com -l tier=web
//! cargo run -p informer-runtime --example watch -- nodes --metadata
//! ```
//!
//! The cluster is the one kubectl would use (`KUBECONFIG`, `~/.kube/config`, or the in-cluster
//! service account). The first lines are the objects listed (`ADDED`), then every change as it
//! happens, until Ctrl-C.

use std::process::ExitCode;
use std::sync::Arc;

use informer_client::Client;
use informer_runtime::dynamic::DynamicObject;
use informer_runtime::{HandlerFuncs, SharedInformerFactory};

const USAGE: &str = "usage: watch RESOURCE [-n NAMESPACE] [-l SELECTOR] [--metadata]\n\
    RESOURCE as kubectl takes it: pods, po, deployments.apps, widgets.example.com";

/// The command line.
struct Args {
    resource: String,
    namespace: Option<String>,
    selector: Option<String>,
    metadata_only: bool,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut resource = None;
    let (mut namespace, mut selector, mut metadata_only) = (None, None, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-n" | "--namespace" => namespace = Some(args.next().ok_or("-n needs a namespace")?),
            "-l" | "--selector" => selector = Some(args.next().ok_or("-l needs a selector")?),
            "--metadata" => metadata_only = true,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            flag if flag.starts_with('-') => return Err(format!("unknown flag {flag}\n{USAGE}")),
            _ if resource.is_some() => return Err(format!("one resource only\n{USAGE}")),
            _ => resource = Some(arg),
        }
    }
    let resource = resource.ok_or_else(|| USAGE.to_owned())?;
    Ok(Args { resource, namespace, selector, metadata_only })
}

/// `namespace/name`, or `name` for a cluster-scoped object.
fn key(object: &DynamicObject) -> String {
    let name = object.metadata.name.as_deref().unwrap_or_default();
    match &object.metadata.namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    }
}

fn version(object: &DynamicObject) -> &str {
    object.metadata.resource_version.as_deref().unwrap_or_default()
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::try_default()?;
    let resource = client.resolve(&args.resource).await?;
    eprintln!(
        "watching {resource} ({}, kind {}, {})",
        resource.api_version(),
        resource.kind,
        if resource.namespaced { "namespaced" } else { "cluster-scoped" }
    );
    let mut builder = SharedInformerFactory::builder(client);
    if let Some(namespace) = &args.namespace {
        builder = builder.namespace(namespace);
    }
    if let Some(selector) = &args.selector {
        builder = builder.labels(selector);
    }
    let factory = builder.build();
    let gvr = resource.gvr();
    let informer = if args.metadata_only {
        factory.dynamic_metadata_informer(&gvr)?
    } else {
        factory.dynamic_informer(&gvr)?
    };
    informer.add_event_handler(
        HandlerFuncs::new()
            .on_add(|object: Arc<DynamicObject>, _| {
                println!("ADDED     {} @{}", key(&object), version(&object));
            })
            .on_update(|_, object: Arc<DynamicObject>| {
                println!("MODIFIED  {} @{}", key(&object), version(&object));
            })
            .on_delete(|deleted| println!("DELETED   {}", deleted.key())),
    )?;
    factory.start();
    tokio::signal::ctrl_c().await?;
    factory.shutdown().await;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("watch: {error}");
            ExitCode::FAILURE
        }
    }
}
