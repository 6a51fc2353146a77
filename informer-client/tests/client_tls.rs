//! The client's TLS against a real local TLS server with generated certificates: trusted and
//! unknown CAs, insecure mode, `tls_server_name`, and client certificates.

// Every test here runs this crate's own HTTP client (`Client::new`, `Config`), which the
// `http` feature builds.
#![cfg(feature = "http")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod client_support;

use client_support::pki::{Ca, server_config};
use client_support::{Reply, Server, within};
use informer_client::{Client, ClientError, Config};
use informer_runtime::listwatch::Error;
use k8s_openapi::api::core::v1::Namespace;
use secrecy::ExposeSecret;

const NAMESPACE: &str = r#"{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"kube-system","resourceVersion":"7"}}"#;

async fn namespace_server(config: rustls::ServerConfig) -> Server {
    Server::start_tls(config, |_| Reply::json(200, NAMESPACE)).await
}

async fn get_namespace(config: Config) -> Result<Namespace, ClientError> {
    let client = Client::new(config)?;
    within(client.get::<Namespace>(None, "kube-system")).await
}

fn config(server: &Server, ca: Option<&Ca>) -> Config {
    let mut config = Config::new(server.url("https"));
    config.root_certs_pem = ca.map(Ca::pem);
    config
}

/// The transport error's text, or a panic naming what came instead.
fn transport_failure(result: Result<Namespace, ClientError>) -> String {
    match result {
        Err(ClientError::Request { source, .. }) => match *source {
            Error::Transport(message) => message,
            other => panic!("expected a transport error, got {other:?}"),
        },
        other => panic!("expected a transport error, got {other:?}"),
    }
}

#[tokio::test]
async fn trusted_ca_is_accepted() {
    let ca = Ca::new("cluster ca");
    let server = namespace_server(server_config(&ca.leaf(&["localhost", "127.0.0.1"]), None)).await;
    let ns = get_namespace(config(&server, Some(&ca))).await.unwrap();
    assert_eq!(ns.metadata.name.as_deref(), Some("kube-system"));
    let requests = server.requests();
    assert_eq!(requests[0].path(), "/api/v1/namespaces/kube-system");
    // An IP address is never sent as SNI.
    assert_eq!(requests[0].sni, None);
}

#[tokio::test]
async fn unknown_ca_is_rejected() {
    let (ca, other) = (Ca::new("cluster ca"), Ca::new("someone else"));
    let server = namespace_server(server_config(&ca.leaf(&["127.0.0.1"]), None)).await;
    let message = transport_failure(get_namespace(config(&server, Some(&other))).await);
    assert!(message.contains("UnknownIssuer"), "{message}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn insecure_skip_verify_accepts_an_unknown_ca() {
    let ca = Ca::new("self-signed");
    let server = namespace_server(server_config(&ca.leaf(&["somewhere.else"]), None)).await;
    let mut config = config(&server, None);
    config.accept_invalid_certs = true;
    get_namespace(config).await.unwrap();
}

#[tokio::test]
async fn name_mismatch_is_rejected() {
    let ca = Ca::new("cluster ca");
    let server = namespace_server(server_config(&ca.leaf(&["kubernetes"]), None)).await;
    let message = transport_failure(get_namespace(config(&server, Some(&ca))).await);
    assert!(message.contains("certificate not valid for name"), "{message}");
}

#[tokio::test]
async fn tls_server_name_is_sent_as_sni_and_verified() {
    let ca = Ca::new("cluster ca");
    let server = namespace_server(server_config(&ca.leaf(&["kubernetes"]), None)).await;
    let mut config = config(&server, Some(&ca));
    config.tls_server_name = Some("kubernetes".to_owned());
    get_namespace(config).await.unwrap();
    let requests = server.requests();
    assert_eq!(requests[0].sni.as_deref(), Some("kubernetes"));
}

#[tokio::test]
async fn wrong_tls_server_name_is_rejected() {
    let ca = Ca::new("cluster ca");
    let server =
        namespace_server(server_config(&ca.leaf(&["kubernetes", "127.0.0.1"]), None)).await;
    let mut config = config(&server, Some(&ca));
    config.tls_server_name = Some("not-kubernetes".to_owned());
    let message = transport_failure(get_namespace(config).await);
    assert!(message.contains("certificate not valid for name"), "{message}");
}

#[tokio::test]
async fn tls_server_name_that_is_an_ip_address_is_verified_without_sni() {
    let ca = Ca::new("cluster ca");
    // The certificate names another address than the one connected to.
    let server = namespace_server(server_config(&ca.leaf(&["10.96.0.1"]), None)).await;
    let mut config = config(&server, Some(&ca));
    config.tls_server_name = Some("10.96.0.1".to_owned());
    get_namespace(config).await.unwrap();
    assert_eq!(server.requests()[0].sni, None);
}

#[tokio::test]
async fn client_certificate_is_required_and_presented() {
    let (ca, client_ca) = (Ca::new("cluster ca"), Ca::new("client ca"));
    let leaf = ca.leaf(&["127.0.0.1"]);
    let server = namespace_server(server_config(&leaf, Some(&client_ca))).await;

    let without = get_namespace(config(&server, Some(&ca))).await;
    assert!(matches!(without, Err(ClientError::Request { .. })), "{without:?}");

    let mut with = config(&server, Some(&ca));
    with.identity = Some(client_ca.leaf(&["admin"]).identity());
    get_namespace(with).await.unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].client_cert);
}

#[tokio::test]
async fn client_certificate_from_an_unknown_ca_is_refused() {
    let (ca, client_ca, stranger) =
        (Ca::new("cluster ca"), Ca::new("client ca"), Ca::new("stranger"));
    let server = namespace_server(server_config(&ca.leaf(&["127.0.0.1"]), Some(&client_ca))).await;
    let mut config = config(&server, Some(&ca));
    config.identity = Some(stranger.leaf(&["admin"]).identity());
    assert!(get_namespace(config).await.is_err());
    assert!(server.requests().is_empty());
}

#[test]
fn debug_output_redacts_the_client_key() {
    let ca = Ca::new("client ca");
    let identity = ca.leaf(&["admin"]).identity();
    let mut config = Config::new("https://127.0.0.1:6443".parse().unwrap());
    config.root_certs_pem = Some(Ca::new("cluster").pem());
    config.identity = Some(identity.clone());
    let client = Client::new(config).unwrap();
    let shown = format!("{client:?}");
    assert!(shown.contains("https://127.0.0.1:6443"), "{shown}");
    let key = identity.key_pem.expose_secret();
    let key_body = key.lines().nth(1).unwrap();
    assert!(!shown.contains(key_body), "{shown}");
}

/// What a test's tracing subscriber wrote.
#[derive(Clone, Default)]
struct Logs(std::sync::Arc<parking_lot::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The logs of `build`, run with a subscriber of its own.
fn logs_of(build: impl FnOnce()) -> String {
    let logs = Logs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, build);
    String::from_utf8_lossy(&logs.0.lock()).into_owned()
}

#[test]
fn a_client_that_skips_verification_says_so_once_when_built() {
    let mut insecure = Config::new("https://10.0.0.1:6443".parse().unwrap());
    insecure.accept_invalid_certs = true;
    let logs = logs_of(|| {
        let client = Client::new(insecure).unwrap();
        drop(client.clone());
    });
    let warnings: Vec<_> = logs.lines().filter(|line| line.contains(" WARN ")).collect();
    assert_eq!(warnings.len(), 1, "{logs}");
    assert!(warnings[0].contains("server certificate is not verified"), "{logs}");
    assert!(warnings[0].contains("https://10.0.0.1:6443"), "{logs}");

    let mut verified = Config::new("https://10.0.0.1:6443".parse().unwrap());
    verified.root_certs_pem = Some(Ca::new("cluster ca").pem());
    let logs = logs_of(|| drop(Client::new(verified).unwrap()));
    assert!(!logs.contains(" WARN "), "{logs}");
}
