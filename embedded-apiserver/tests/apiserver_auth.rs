//! Optional authentication, as kube-apiserver's: a bearer token set replaced while clients are
//! connected refuses the old token with kube-apiserver's `401` `Status`, and a client
//! certificate is checked on every request, so that one that expires while its HTTP/2
//! connection stays open gets `401` over that same connection.

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use embedded_apiserver::{ClientCertificate, Config};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use support::roots;

/// How long any single wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

async fn get(
    http: &reqwest::Client,
    url: &str,
    token: Option<&str>,
) -> (reqwest::Version, u16, Value) {
    let mut request = http.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = tokio::time::timeout(DEADLINE, request.send())
        .await
        .expect("a timely answer")
        .expect("an answer");
    let (version, status) = (response.version(), response.status().as_u16());
    let body = tokio::time::timeout(DEADLINE, response.bytes()).await.expect("a timely body");
    (version, status, serde_json::from_slice(&body.expect("a whole body")).expect("a JSON body"))
}

/// kube-apiserver's answer to a request nobody authenticated.
fn unauthorized() -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Unauthorized", "reason": "Unauthorized", "code": 401
    })
}

#[tokio::test]
async fn a_replaced_token_set_refuses_the_old_token_on_open_connections() {
    let server = Config::default().bearer_tokens(["old"]).start().await.expect("the server starts");
    let url = format!("{}/api/v1/namespaces", server.url());
    // reqwest is built without a crypto provider of its own, even for plain HTTP.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();

    let (_, status, body) = get(&http, &url, Some("old")).await;
    assert_eq!(status, 200, "{body}");
    let (_, status, body) = get(&http, &url, None).await;
    assert_eq!((status, body), (401, unauthorized()));

    server.set_bearer_tokens(["new"]);
    // The same keep-alive connection: the set is read per request.
    let (_, status, body) = get(&http, &url, Some("old")).await;
    assert_eq!((status, body), (401, unauthorized()));
    let (_, status, body) = get(&http, &url, Some("new")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(server.traffic().unauthorized, 2);
    server.shutdown().await.expect("a clean shutdown");
}

/// A client presenting `cert`, over HTTP/2 when the server offers it.
fn presenting(server: &embedded_apiserver::ApiServer, cert: &ClientCertificate) -> reqwest::Client {
    let chain = CertificateDer::pem_slice_iter(cert.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes()).expect("a key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots(server))
        .with_client_auth_cert(chain, key)
        .expect("a client certificate rustls takes");
    tls.alpn_protocols = vec![b"h2".to_vec()];
    reqwest::Client::builder().tls_backend_preconfigured(tls).build().expect("an HTTP client")
}

#[tokio::test]
async fn a_client_certificate_that_expires_on_an_open_http2_connection_gets_401_there() {
    let server = Config::default()
        .tls(true)
        .client_certificates(true)
        .start()
        .await
        .expect("the server starts");
    let url = format!("{}/api/v1/namespaces", server.url());
    let short = server.issue_client_certificate("short-lived", Duration::from_secs(2)).unwrap();
    let http = presenting(&server, &short);

    let (version, status, body) = get(&http, &url, None).await;
    assert_eq!((version, status), (reqwest::Version::HTTP_2, 200), "{body}");
    // Once the certificate's notAfter has passed, the same connection is refused.
    let deadline = Instant::now() + DEADLINE;
    loop {
        let (_, status, body) = get(&http, &url, None).await;
        if status == 401 {
            assert_eq!(body, unauthorized());
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still {status} at {:?} past notAfter",
            short.not_after.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let traffic = server.traffic();
    assert_eq!(traffic.tls_connections, 1, "one connection throughout: {traffic:?}");

    // A fresh certificate of the same CA on a new connection is let in; none is refused.
    let fresh = server.issue_client_certificate("fresh", Duration::from_secs(60)).unwrap();
    let (_, status, body) = get(&presenting(&server, &fresh), &url, None).await;
    assert_eq!(status, 200, "{body}");
    let anonymous = reqwest::Client::builder()
        .tls_backend_preconfigured(support::tls_config(&server))
        .build()
        .unwrap();
    let (_, status, _) = get(&anonymous, &url, None).await;
    assert_eq!(status, 401);
    server.shutdown().await.expect("a clean shutdown");
}

#[tokio::test]
async fn client_certificates_without_tls_are_refused_at_start() {
    let error =
        Config::default().client_certificates(true).start().await.err().map(|e| e.to_string());
    assert!(error.as_deref().is_some_and(|e| e.contains("Config::tls(true)")), "{error:?}");
}
