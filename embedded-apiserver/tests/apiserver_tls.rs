//! The embedded API server over TLS, as kube-apiserver serves: clients that trust its CA speak
//! HTTP/2 (ALPN `h2`) or HTTP/1.1, kube-rs reads its kubeconfig, and each HTTP/2 connection
//! advertises and enforces its stream limit (`SETTINGS_MAX_CONCURRENT_STREAMS`).

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::time::Duration;

use axum::http::Request;
use embedded_apiserver::testing::eventually;
use embedded_apiserver::{ApiServer, Config};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;
use support::{open_watches, raw_h2, tls_config};
use tokio::io::AsyncReadExt;

/// How long any single wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);
const PODS: &str = "/api/v1/namespaces/default/pods";

async fn start_tls(streams: u32) -> ApiServer {
    Config::default()
        .bookmark_interval(None)
        .tls(true)
        .max_concurrent_streams(streams)
        .start()
        .await
        .expect("the server starts")
}

/// A reqwest client that trusts the server's CA, offering `h2` and `http/1.1` in ALPN (only
/// `http/1.1` when `http1_only`).
fn client(server: &ApiServer, http1_only: bool) -> reqwest::Client {
    let mut tls = tls_config(server);
    tls.alpn_protocols = if http1_only {
        vec![b"http/1.1".to_vec()]
    } else {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    };
    let builder = reqwest::Client::builder().tls_backend_preconfigured(tls);
    let builder = if http1_only { builder.http1_only() } else { builder };
    builder.build().expect("an HTTP client")
}

async fn get(http: &reqwest::Client, url: String) -> (reqwest::Version, u16, Value) {
    let response = tokio::time::timeout(DEADLINE, http.get(url).send())
        .await
        .expect("a timely answer")
        .expect("an HTTPS answer");
    let (version, status) = (response.version(), response.status().as_u16());
    let body = tokio::time::timeout(DEADLINE, response.bytes()).await.expect("a timely body");
    let body = serde_json::from_slice(&body.expect("a whole body")).expect("a JSON body");
    (version, status, body)
}

#[tokio::test]
async fn clients_that_offer_h2_speak_http2_and_the_others_http1_over_tls() {
    let server = start_tls(100).await;
    assert!(server.url().starts_with("https://127.0.0.1:"), "{}", server.url());
    let (version, status, namespaces) =
        get(&client(&server, false), format!("{}/api/v1/namespaces", server.url())).await;
    assert_eq!((version, status), (reqwest::Version::HTTP_2, 200), "{namespaces}");
    assert_eq!(namespaces["kind"], "NamespaceList");
    // HTTP/2 has no Host header: the address clients are told comes from `:authority`.
    let (_, _, api) = get(&client(&server, false), format!("{}/api", server.url())).await;
    let address = &api["serverAddressByClientCIDRs"][0]["serverAddress"];
    assert_eq!(address, &Value::from(server.addr().to_string()), "{api}");
    let traffic = server.traffic();
    assert_eq!((traffic.http1_requests, traffic.http2_requests), (0, 2), "{traffic:?}");

    let (version, status, _) =
        get(&client(&server, true), format!("{}/api/v1/namespaces", server.url())).await;
    assert_eq!((version, status), (reqwest::Version::HTTP_11, 200));
    let traffic = server.traffic();
    assert_eq!((traffic.http1_requests, traffic.http2_requests), (1, 2), "{traffic:?}");
    assert_eq!(traffic.tls_connections, 3, "{traffic:?}");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_plain_server_has_no_ca_and_speaks_http1() {
    let server = Config::default().start().await.unwrap();
    assert!(server.url().starts_with("http://"), "{}", server.url());
    assert_eq!(server.ca_pem(), None);
    assert!(!server.kubeconfig_yaml().contains("certificate-authority"));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (version, status, _) =
        get(&reqwest::Client::new(), format!("{}/api/v1/namespaces", server.url())).await;
    assert_eq!((version, status), (reqwest::Version::HTTP_11, 200));
    let traffic = server.traffic();
    assert_eq!(
        (traffic.http1_requests, traffic.http2_requests, traffic.tls_connections),
        (1, 0, 0)
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn kube_rs_trusts_the_kubeconfig_of_a_tls_server() {
    let server = start_tls(100).await;
    let kubeconfig = Kubeconfig::from_yaml(&server.kubeconfig_yaml()).expect("a valid kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a kube config");
    let client = kube::Client::try_from(config).expect("a kube client");
    let namespaces =
        Api::<Namespace>::all(client).list(&kube::api::ListParams::default()).await.unwrap();
    assert!(namespaces.items.iter().any(|n| n.metadata.name.as_deref() == Some("default")));
    assert!(server.traffic().tls_connections >= 1);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn each_http2_connection_advertises_its_stream_limit() {
    let server = start_tls(4).await;
    let (mut send, _connection) = raw_h2(&server).await;
    // One answered request: the server's SETTINGS came before its answer.
    let request = Request::get(format!("{}/version", server.url())).body(()).unwrap();
    let (response, _) = send.send_request(request, true).unwrap();
    let response = tokio::time::timeout(DEADLINE, response).await.unwrap().unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(send.current_max_send_streams(), 4);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_client_past_the_stream_limit_waits_for_a_stream_to_end() {
    let server = start_tls(4).await;
    let http = client(&server, false);
    let watch = || http.get(format!("{}{PODS}?watch=true", server.url())).send();
    let mut watches = Vec::new();
    for _ in 0..4 {
        let response = tokio::time::timeout(DEADLINE, watch()).await.unwrap().unwrap();
        assert_eq!(response.version(), reqwest::Version::HTTP_2);
        watches.push(response);
    }
    open_watches(&server, 4).await;
    // The fifth goes out on the same connection once a stream is free.
    let fifth = tokio::spawn(watch());
    drop(watches.pop());
    let fifth = tokio::time::timeout(DEADLINE, fifth).await.unwrap().unwrap().unwrap();
    assert_eq!(fifth.status(), 200);
    eventually("the fifth watch to open", DEADLINE, || server.open_watches() == 4).await;
    let traffic = server.traffic();
    assert_eq!(traffic.http2_requests, 5, "{traffic:?}");
    assert_eq!(traffic.tls_connections, 1, "one connection carried them all: {traffic:?}");
    server.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_tls_handshake_that_never_comes_is_given_up_after_32_seconds() {
    let server = start_tls(100).await;
    let mut tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let started = tokio::time::Instant::now();
    let mut byte = [0; 1];
    let read = tokio::time::timeout(Duration::from_secs(120), tcp.read(&mut byte)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "the server closed the connection: {read:?}");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(32) && waited < Duration::from_secs(33), "{waited:?}");
    server.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_http2_connection_is_closed_after_90_idle_seconds_but_not_under_a_watch() {
    let server = start_tls(100).await;
    // A watch holds its connection open past the idle timeout.
    let (mut send, mut connection) = raw_h2(&server).await;
    let watch = Request::get(format!("{}{PODS}?watch=true", server.url()));
    let (watch, _) = send.send_request(watch.body(()).unwrap(), true).unwrap();
    let watch = tokio::time::timeout(DEADLINE, watch).await.unwrap().unwrap();
    assert_eq!(watch.status(), 200);
    let busy = tokio::time::timeout(Duration::from_secs(300), &mut connection).await;
    assert!(busy.is_err(), "a connection with an open watch was closed: {busy:?}");
    // Once the watch ends, the connection is idle: closed 90 s later.
    drop(watch);
    let idle_from = tokio::time::Instant::now();
    let closed = tokio::time::timeout(Duration::from_secs(300), connection).await;
    assert!(closed.is_ok(), "the idle connection is closed");
    let idle = idle_from.elapsed();
    assert!(idle >= Duration::from_secs(90) && idle < Duration::from_secs(91), "{idle:?}");
    server.shutdown().await.unwrap();
}
