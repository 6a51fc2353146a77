//! What the webhook tests share: a server on loopback TLS, a client that speaks HTTP/1.1 or
//! HTTP/2 over a TLS connection it can inspect, the recorded reviews, and a wait on a condition.

#![allow(dead_code, reason = "each test binary uses part of the support")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use informer_webhook::testing::{TestCa, TestCertificate};
use informer_webhook::{CancellationToken, WebhookServer, WebhookServerBuilder};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// A review as kube-apiserver sends it, from `tests/fixtures/`.
pub fn fixture(name: &str) -> Value {
    serde_json::from_str(&fixture_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A fixture's text, its keys in the order kube-apiserver writes them (a `Value` sorts them).
pub fn fixture_text(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A server serving on 127.0.0.1, stopped when dropped.
pub struct Running {
    pub addr: SocketAddr,
    pub server: WebhookServer,
    pub stop: CancellationToken,
    pub served: Option<tokio::task::JoinHandle<()>>,
}

impl Running {
    /// Stops the server and waits for `serve` to return.
    pub async fn shut_down(mut self) {
        self.stop.cancel();
        if let Some(served) = self.served.take() {
            tokio::time::timeout(Duration::from_secs(30), served)
                .await
                .expect("serve returns once stopped")
                .expect("serve does not panic");
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Builds `builder` and serves it on a free loopback port.
pub async fn start(builder: WebhookServerBuilder) -> Running {
    let server = builder.build().expect("the server builds");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let served = tokio::spawn({
        let (server, stop) = (server.clone(), stop.clone());
        async move { server.serve(listener, stop).await }
    });
    Running { addr, server, stop, served: Some(served) }
}

/// A CA and a serving certificate for 127.0.0.1 and localhost.
pub fn pki() -> (TestCa, TestCertificate) {
    let ca = TestCa::new().unwrap();
    let serving = ca.issue(&["127.0.0.1", "localhost"]).unwrap();
    (ca, serving)
}

/// Which HTTP the client speaks (and offers in ALPN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Http {
    One,
    Two,
}

/// A TLS connection to `addr` trusting `ca_pem`, offering `http` in ALPN.
pub async fn connect(
    addr: SocketAddr,
    ca_pem: &str,
    http: Http,
) -> std::io::Result<TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![match http {
        Http::One => b"http/1.1".to_vec(),
        Http::Two => b"h2".to_vec(),
    }];
    let stream = TcpStream::connect(addr).await?;
    let name = ServerName::IpAddress(addr.ip().into());
    TlsConnector::from(Arc::new(config)).connect(name, stream).await
}

/// The serial number of the certificate `stream`'s server presented.
pub fn presented_serial(stream: &TlsStream<TcpStream>) -> u64 {
    let leaf =
        &stream.get_ref().1.peer_certificates().expect("the server presented a certificate")[0];
    let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref()).unwrap();
    cert.raw_serial().iter().fold(0u64, |serial, byte| (serial << 8) | u64::from(*byte))
}

/// A client on one connection.
pub enum Client {
    One(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    Two(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

impl Client {
    /// A client of the server at `addr`, speaking `http`; the connection is checked to have
    /// negotiated it.
    pub async fn new(addr: SocketAddr, ca_pem: &str, http: Http) -> Self {
        let stream = connect(addr, ca_pem, http).await.unwrap();
        let alpn = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        let io = TokioIo::new(stream);
        match http {
            Http::One => {
                assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
                let (sender, connection) = hyper::client::conn::http1::handshake(io).await.unwrap();
                tokio::spawn(connection);
                Self::One(sender)
            }
            Http::Two => {
                assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
                let (sender, connection) =
                    hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await.unwrap();
                tokio::spawn(connection);
                Self::Two(sender)
            }
        }
    }

    /// Sends `method` `path` with `body` (as JSON) and returns the status and the body.
    pub async fn send(&mut self, method: &str, path: &str, body: Bytes) -> (StatusCode, Bytes) {
        let request = Request::builder()
            .method(method)
            .uri(format!("https://127.0.0.1{path}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, */*")
            .body(Full::new(body))
            .unwrap();
        let response = match self {
            Self::One(sender) => {
                sender.ready().await.unwrap();
                sender.send_request(request).await.unwrap()
            }
            Self::Two(sender) => {
                sender.ready().await.unwrap();
                sender.send_request(request).await.unwrap()
            }
        };
        let status = response.status();
        (status, response.into_body().collect().await.unwrap().to_bytes())
    }

    /// Posts `review` to `path` and returns the answer, which must be HTTP 200 JSON.
    pub async fn review(&mut self, path: &str, review: &Value) -> Value {
        let (status, body) =
            self.send("POST", path, Bytes::from(serde_json::to_vec(review).unwrap())).await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).unwrap()
    }
}

/// Waits until `check` returns `true`, asking again and again, for at most `deadline`.
pub async fn eventually<F: Future<Output = bool>>(
    what: &str,
    deadline: Duration,
    check: impl Fn() -> F,
) {
    let start = tokio::time::Instant::now();
    while !check().await {
        assert!(start.elapsed() < deadline, "timed out after {deadline:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
