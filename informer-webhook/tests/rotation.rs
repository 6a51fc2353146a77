//! The serving certificate read from a Secret volume and rotated as the kubelet rotates it:
//! the new files written beside the old ones and the `..data` symlink swapped to them. Scenarios
//! after controller-runtime's `pkg/certwatcher/certwatcher_test.go` ("should reload currentCert
//! when changed", "should not reload when the new certificate is invalid"); each waits on a
//! handshake or a metric, with a deadline, never on a fixed sleep.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod support;

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use informer_webhook::WebhookServer;
use informer_webhook::admission::AdmissionRequest;
use informer_webhook::metrics::{Registry, WebhookMetrics};
use informer_webhook::testing::{TestCa, TestCertificate};
use serde_json::Value;
use support::{Client, Http, connect, eventually, fixture, presented_serial, start};

const DEADLINE: Duration = Duration::from_secs(20);

/// A directory laid out as the kubelet lays out a Secret volume.
struct SecretVolume {
    dir: PathBuf,
    generation: usize,
}

static VOLUMES: AtomicUsize = AtomicUsize::new(0);

impl SecretVolume {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "informer-webhook-rotation-{}-{}",
            std::process::id(),
            VOLUMES.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self { dir, generation: 0 }
    }

    fn cert(&self) -> PathBuf {
        self.dir.join("tls.crt")
    }

    fn key(&self) -> PathBuf {
        self.dir.join("tls.key")
    }

    /// Writes a new generation and swaps `..data` to it at once, as the kubelet's atomic
    /// writer does; `tls.crt` and `tls.key` are links through `..data`.
    fn write(&mut self, cert_pem: &str, key_pem: &str) {
        self.generation += 1;
        let generation = format!("..gen_{}", self.generation);
        let target = self.dir.join(&generation);
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(target.join("tls.crt"), cert_pem).unwrap();
        std::fs::write(target.join("tls.key"), key_pem).unwrap();
        let staged = self.dir.join("..data_tmp");
        let _ = std::fs::remove_file(&staged);
        std::os::unix::fs::symlink(&generation, &staged).unwrap();
        std::fs::rename(&staged, self.dir.join("..data")).unwrap();
        for name in ["tls.crt", "tls.key"] {
            let link = self.dir.join(name);
            if std::fs::symlink_metadata(&link).is_err() {
                std::os::unix::fs::symlink(Path::new("..data").join(name), &link).unwrap();
            }
        }
        if self.generation > 1 {
            let _ =
                std::fs::remove_dir_all(self.dir.join(format!("..gen_{}", self.generation - 1)));
        }
    }

    fn serve(&mut self, certificate: &TestCertificate) {
        self.write(&certificate.cert_pem, &certificate.key_pem);
    }
}

impl Drop for SecretVolume {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn server(
    volume: &SecretVolume,
    metrics: &WebhookMetrics,
) -> informer_webhook::WebhookServerBuilder {
    WebhookServer::builder()
        .certificate_files(volume.cert(), volume.key())
        .reload_interval(Duration::from_millis(50))
        .metrics(metrics)
        .validating("/validate", |request: AdmissionRequest<Value>| async move {
            Ok::<_, Infallible>(request.allow())
        })
}

/// The serial of the certificate a new handshake gets, or `None` when it fails.
async fn serial(addr: std::net::SocketAddr, ca: &TestCa) -> Option<u64> {
    connect(addr, &ca.ca_pem(), Http::One).await.ok().map(|stream| presented_serial(&stream))
}

fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

/// controller-runtime's certwatcher test "should reload currentCert when changed".
#[tokio::test]
async fn a_rotated_certificate_is_presented_by_the_next_handshake() {
    let ca = TestCa::new().unwrap();
    let (first, second) = (ca.issue(&["127.0.0.1"]).unwrap(), ca.issue(&["127.0.0.1"]).unwrap());
    let mut volume = SecretVolume::new();
    volume.serve(&first);
    let mut registry = Registry::default();
    let metrics = WebhookMetrics::register(&mut registry);
    let running = start(server(&volume, &metrics)).await;
    assert_eq!(serial(running.addr, &ca).await, Some(first.serial));
    // A connection opened before the rotation keeps its certificate, and serves on.
    let mut before = Client::new(running.addr, &ca.ca_pem(), Http::Two).await;

    volume.serve(&second);
    let (addr, ca_ref, wanted) = (running.addr, &ca, second.serial);
    eventually("a handshake presenting the new certificate", DEADLINE, || async move {
        serial(addr, ca_ref).await == Some(wanted)
    })
    .await;
    let answer = before.review("/validate", &fixture("admission-review-create.json")).await;
    assert_eq!(answer["response"]["allowed"], true);
    assert!(running.server.is_ready());
    running.shut_down().await;
}

/// controller-runtime's certwatcher tests of invalid certificates: the old pair serves on.
#[tokio::test]
async fn a_broken_new_certificate_keeps_the_old_one_until_a_good_one_comes() {
    let ca = TestCa::new().unwrap();
    let (first, other, third) = (
        ca.issue(&["127.0.0.1"]).unwrap(),
        ca.issue(&["127.0.0.1"]).unwrap(),
        ca.issue(&["127.0.0.1"]).unwrap(),
    );
    let mut volume = SecretVolume::new();
    volume.serve(&first);
    let mut registry = Registry::default();
    let metrics = WebhookMetrics::register(&mut registry);
    let encoded = informer_runtime::metrics::Metrics::with_registry(registry);
    let running = start(server(&volume, &metrics)).await;
    assert_eq!(serial(running.addr, &ca).await, Some(first.serial));

    let errors = || metric(&encoded.encode(), "certwatcher_read_certificate_errors_total");
    let errors = &errors;
    let broken: [(&str, String, String); 3] = [
        ("not PEM", "garbage".to_owned(), first.key_pem.clone()),
        ("a key of another certificate", other.cert_pem.clone(), first.key_pem.clone()),
        ("an empty key", first.cert_pem.clone(), String::new()),
    ];
    for (what, cert, key) in broken {
        let before = errors();
        volume.write(&cert, &key);
        eventually(
            &format!("a failed reload of {what}"),
            DEADLINE,
            || async move { errors() > before },
        )
        .await;
        assert_eq!(
            serial(running.addr, &ca).await,
            Some(first.serial),
            "{what}: the old one serves on"
        );
        assert!(running.server.is_ready());
    }

    volume.serve(&third);
    let (addr, ca_ref, wanted) = (running.addr, &ca, third.serial);
    eventually("a handshake presenting the good new certificate", DEADLINE, || async move {
        serial(addr, ca_ref).await == Some(wanted)
    })
    .await;
    running.shut_down().await;
}

#[tokio::test]
async fn without_a_certificate_handshakes_fail_until_one_is_written() {
    let ca = TestCa::new().unwrap();
    let certificate = ca.issue(&["127.0.0.1"]).unwrap();
    let mut volume = SecretVolume::new();
    let mut registry = Registry::default();
    let metrics = WebhookMetrics::register(&mut registry);
    let running = start(server(&volume, &metrics)).await;
    assert!(!running.server.is_ready());
    assert_eq!(serial(running.addr, &ca).await, None);

    volume.serve(&certificate);
    let server = &running.server;
    eventually("the server to be ready", DEADLINE, || async move { server.is_ready() }).await;
    assert_eq!(serial(running.addr, &ca).await, Some(certificate.serial));
    let mut client = Client::new(running.addr, &ca.ca_pem(), Http::One).await;
    let (status, body) = client.send("GET", "/readyz", bytes::Bytes::new()).await;
    assert_eq!((status.as_u16(), &body[..]), (200, &b"ok"[..]));
    running.shut_down().await;
}
