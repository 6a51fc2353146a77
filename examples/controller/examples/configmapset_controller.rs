//! The `ConfigMapSet` controller as a program, for a real cluster:
//!
//! ```sh
//! cargo run -p example-controller --example configmapset_controller -- --install-crd
//! ```
//!
//! It reads `KUBECONFIG` (or `~/.kube/config`, or the pod's service account), creates the CRD
//! when asked, serves `/healthz`, `/readyz` and `/metrics` on `--probe-addr` (`127.0.0.1:8080`
//! by default), and runs one replica (named by `POD_NAME`, else `HOSTNAME`) until `SIGTERM` or
//! Ctrl-C. Run it twice to see one lead and the other keep its caches synced, ready to take
//! over.
//!
//! With `--webhook-addr HOST:PORT --cert-dir DIR`, it also serves the validating admission
//! webhook of `ConfigMapSet` (`example_controller::webhook`) over TLS, with `DIR/tls.crt` and
//! `DIR/tls.key` (a `kubernetes.io/tls` Secret's volume, reloaded as cert-manager rotates it);
//! register it with a `ValidatingWebhookConfiguration` from `webhook::configuration`.

use std::net::SocketAddr;

use example_controller::{ConfigMapSet, Settings, webhook};
use informer_client::Client;
use informer_controller::controller::stop_on_signal;
use informer_runtime::metrics::Metrics;
use informer_webhook::WebhookServer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let mut install = false;
    let mut probe_addr: SocketAddr = "127.0.0.1:8080".parse()?;
    let mut webhook_addr: Option<SocketAddr> = None;
    let mut cert_dir: Option<std::path::PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--install-crd" => install = true,
            "--probe-addr" => {
                probe_addr = args.next().ok_or("--probe-addr needs HOST:PORT")?.parse()?;
            }
            "--webhook-addr" => {
                webhook_addr = Some(args.next().ok_or("--webhook-addr needs HOST:PORT")?.parse()?);
            }
            "--cert-dir" => {
                cert_dir = Some(args.next().ok_or("--cert-dir needs a directory")?.into());
            }
            other => {
                return Err(format!(
                    "unknown option {other:?}; use --install-crd, --probe-addr, --webhook-addr, --cert-dir"
                )
                .into());
            }
        }
    }
    let client = Client::try_default()?;
    if install {
        match client.create(None, &ConfigMapSet::crd()).await {
            Err(e) if e.is_conflict() => tracing::info!("the CRD exists already"),
            other => drop(other?),
        }
    }
    let identity = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| format!("configmapset-{}", std::process::id()));
    let mut settings = Settings::new(identity.clone());
    settings.metrics = Some(Metrics::new());
    settings.probes = Some(probe_addr);
    tracing::info!(%probe_addr, %identity, "/healthz, /readyz and /metrics; campaigning");
    let stop = stop_on_signal();
    let webhooks = match (webhook_addr, cert_dir) {
        (Some(addr), Some(dir)) => {
            let server = webhook::webhooks(WebhookServer::builder())
                .certificate_files(dir.join("tls.crt"), dir.join("tls.key"))
                .build()?;
            let listener = tokio::net::TcpListener::bind(addr).await?;
            tracing::info!(%addr, path = webhook::PATH, "validating webhook");
            let stop = stop.clone();
            Some(tokio::spawn(async move { server.serve(listener, stop).await }))
        }
        (None, None) => None,
        _ => return Err("--webhook-addr and --cert-dir go together".into()),
    };
    let outcome = example_controller::run(client, settings, stop.clone()).await?;
    // The controller may stop on its own (leadership lost): the webhook stops with it.
    stop.cancel();
    if let Some(webhooks) = webhooks {
        webhooks.await?;
    }
    tracing::info!(?outcome, "stopped");
    Ok(())
}
