//! What embedded-apiserver's integration tests share: a server that sends only what a test
//! causes, waiting for its watches to open, and clients of a TLS server. (Helpers users' tests can use too are public,
//! in `embedded_apiserver::testing`.)

#![allow(dead_code, reason = "each test file uses a different part")]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use embedded_apiserver::{ApiServer, Config};
use rustls::pki_types::ServerName;

/// How long a server may take to see the watches a test opened (kubectl's take longest).
const WATCHES_OPEN: Duration = Duration::from_secs(30);

/// A server without periodic bookmarks, so that watches see only what a test causes.
pub async fn start() -> ApiServer {
    Config::default().bookmark_interval(None).start().await.expect("the server starts")
}

/// Waits until `n` watches are open on the server, within the deadline.
pub async fn open_watches(server: &ApiServer, n: usize) {
    tokio::time::timeout(WATCHES_OPEN, server.wait_for_watches(n))
        .await
        .expect("the watches open in time");
}

/// A rustls client configuration that trusts the server's CA.
pub fn tls_config(server: &ApiServer) -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots(server))
        .with_no_client_auth()
}

/// The server's CA as rustls roots.
pub fn roots(server: &ApiServer) -> rustls::RootCertStore {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    let pem = server.ca_pem().expect("a TLS server has a CA").as_bytes();
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        roots.add(cert.expect("a PEM certificate")).expect("a CA certificate");
    }
    roots
}

/// An HTTP/2 connection to `server` made by hand, for what reqwest hides: the SETTINGS, a
/// stream's flow control, the connection's end (the task, which ends with it).
pub async fn raw_h2(
    server: &ApiServer,
) -> (h2::client::SendRequest<Bytes>, tokio::task::JoinHandle<Result<(), h2::Error>>) {
    let mut tls = tls_config(server);
    tls.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let stream = tokio_rustls::TlsConnector::from(Arc::new(tls)).connect(name, tcp).await.unwrap();
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (send, connection) = h2::client::handshake(stream).await.unwrap();
    (send, tokio::spawn(connection))
}
