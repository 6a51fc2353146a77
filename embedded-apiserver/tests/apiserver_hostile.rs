//! The embedded API server against hostile clients, over real HTTP: a watcher that stops
//! reading, bodies, selectors and patches built to exhaust it, more watches than it serves, and
//! a seeded stream of random malformed requests. Every request must get an HTTP answer, no
//! panic may reach a client, and the server must go on serving. Each runs over plain HTTP/1.1
//! (`over_http1::*`) and over TLS, where the client speaks HTTP/2 (`over_tls::*`); the watcher
//! that stops reading has a version for each protocol's flow control.
//!
//! `HOSTILE_SEED=N` replays one run of the randomised test; `HOSTILE_CASES=N` sets how many
//! requests it sends (300 by default, which is what CI runs).

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::fmt::Write as _;
use std::time::Duration;

use axum::http::Request;
use embedded_apiserver::testing::{crontab_crd, eventually, pod};
use embedded_apiserver::{ApiServer, Config};
use informer_runtime::GroupVersionResource;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};
use support::{open_watches, raw_h2};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long any single wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);
const PODS: &str = "/api/v1/namespaces/default/pods";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// What the tests run over: each runs over both (`over_http1::*`, `over_tls::*`).
#[derive(Clone, Copy, Debug)]
enum Over {
    /// Plain HTTP/1.1.
    Http1,
    /// TLS, where the client speaks HTTP/2 (ALPN `h2`), as to kube-apiserver.
    Tls,
}

/// `config` without periodic bookmarks (watches see only what a test causes), started over
/// `over`.
async fn start_over(over: Over, config: Config) -> ApiServer {
    let config = config.bookmark_interval(None).tls(matches!(over, Over::Tls));
    config.start().await.expect("the server starts")
}

/// Runs each named test (an `async fn(Over)`) over plain HTTP/1.1 and over TLS and HTTP/2.
macro_rules! over_both {
    ($($name:ident),* $(,)?) => {
        mod over_http1 {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Over::Http1).await;
                }
            )*
        }
        mod over_tls {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Over::Tls).await;
                }
            )*
        }
    };
}

over_both!(
    a_generation_at_the_largest_integer_saturates_instead_of_overflowing,
    a_pod_table_with_restart_counts_that_overflow_renders,
    request_bodies_over_three_mebibytes_get_413_with_a_status,
    open_watches_beyond_the_cap_get_429_with_retry_after,
    pathological_selectors_and_limits_get_400_not_cpu,
    json_patches_cannot_grow_an_object_without_bound,
    hostile_requests_all_get_answers_and_the_server_keeps_serving,
);

/// A client for `server`: over TLS, one that trusts its CA and offers `h2` first, as client-go
/// and informer-runtime's `Client` do.
fn http(server: &ApiServer) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // No pooled connections: each request stands alone, so a connection the server closed
    // after one answer cannot fail the next request.
    let builder = reqwest::Client::builder().pool_max_idle_per_host(0);
    let builder = match server.ca_pem() {
        None => builder,
        Some(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes()) {
                roots.add(cert.expect("a PEM certificate")).expect("a CA certificate");
            }
            let mut tls =
                rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
            tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            builder.tls_backend_preconfigured(tls)
        }
    };
    builder.build().expect("an HTTP client")
}

/// Status, headers and JSON body (a JSON string when the body is not JSON).
struct Reply {
    status: u16,
    retry_after: Option<String>,
    body: Value,
}

async fn send(request: reqwest::RequestBuilder) -> Reply {
    let response = tokio::time::timeout(DEADLINE, request.send())
        .await
        .expect("a timely answer")
        .expect("an HTTP answer");
    let status = response.status().as_u16();
    let retry_after =
        response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let bytes = tokio::time::timeout(DEADLINE, response.bytes())
        .await
        .expect("a timely body")
        .expect("a whole body");
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    Reply { status, retry_after, body }
}

fn configmaps() -> GroupVersionResource {
    GroupVersionResource::new("", "v1", "configmaps")
}

/// A config map of about `size` bytes.
fn big_configmap(name: &str, size: usize) -> Value {
    json!({"metadata": {"name": name, "namespace": "default"}, "data": {"blob": "x".repeat(size)}})
}

async fn a_generation_at_the_largest_integer_saturates_instead_of_overflowing(over: Over) {
    let server = start_over(over, Config::default()).await;
    let (http, base) = (http(&server), server.url());
    let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "max", "generation": i64::MAX}, "data": {"a": "1"}});
    let created = send(
        http.post(format!("{base}{CONFIGMAPS}"))
            .header("content-type", "application/json")
            .body(cm.to_string()),
    )
    .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    cm["data"]["a"] = json!("2");
    let updated = send(
        http.put(format!("{base}{CONFIGMAPS}/max"))
            .header("content-type", "application/json")
            .body(cm.to_string()),
    )
    .await;
    assert_eq!(updated.status, 200, "{:?}", updated.body);
    assert_eq!(updated.body["metadata"]["generation"], json!(i64::MAX));
    server.shutdown().await.unwrap();
}

async fn a_pod_table_with_restart_counts_that_overflow_renders(over: Over) {
    let server = start_over(over, Config::default()).await;
    let (http, base) = (http(&server), server.url());
    let pods = GroupVersionResource::new("", "v1", "pods");
    server.create(&pods, pod("default", "web-0", "web")).unwrap();
    // A client may write any status: two containers restarted i64::MAX times each.
    let mut web = send(http.get(format!("{base}{PODS}/web-0"))).await.body;
    let status = json!({"restartCount": i64::MAX, "ready": true, "name": "c"});
    web["status"] = json!({"phase": "Running", "containerStatuses": [status, status]});
    let put = http
        .put(format!("{base}{PODS}/web-0/status"))
        .header("content-type", "application/json")
        .body(web.to_string());
    assert_eq!(send(put).await.status, 200);
    let table = http
        .get(format!("{base}{PODS}"))
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io");
    let table = send(table).await;
    assert_eq!(table.status, 200, "{table:?}");
    assert_eq!(table.body["rows"][0]["cells"][3], i64::MAX.to_string(), "restarts saturate");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_stops_reading_is_closed_and_its_buffer_stays_bounded() {
    const BUFFER: usize = 16;
    const EVENTS: usize = 400;
    let server = Config::default()
        .bookmark_interval(None)
        .watch_buffer(BUFFER)
        .start()
        .await
        .expect("the server starts");
    // A client that sends a watch request and never reads the response.
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    let request = format!("GET {CONFIGMAPS}?watch=true HTTP/1.1\r\nHost: test\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    open_watches(&server, 1).await;
    // 64 KiB events: more than the socket buffers on both sides can hold.
    for i in 0..EVENTS {
        server.create(&configmaps(), big_configmap(&format!("cm-{i}"), 64 * 1024)).unwrap();
        let buffered = server.buffered_watch_events();
        assert!(buffered <= BUFFER, "{buffered} events buffered after {i} writes");
        tokio::task::yield_now().await;
    }
    eventually("the unresponsive watch to be closed", DEADLINE, || server.open_watches() == 0)
        .await;
    // What the client reads once it wakes up: a prefix of the events, then the response's end.
    let mut received = Vec::new();
    let read_all = async {
        let mut chunk = vec![0; 1 << 16];
        while !received.ends_with(b"\r\n0\r\n\r\n") {
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the server closed the connection instead of ending the response");
            received.extend_from_slice(&chunk[..n]);
        }
    };
    tokio::time::timeout(DEADLINE, read_all).await.expect("the response ends");
    let text = String::from_utf8_lossy(&received);
    let events = text.matches(r#"{"type":"ADDED""#).count();
    assert!(events < EVENTS, "all {events} events were sent: the watch was never closed");
    // A well-behaved client is served as before.
    let list = send(http(&server).get(format!("{}{CONFIGMAPS}", server.url()))).await;
    assert_eq!(list.body["items"].as_array().map(Vec::len), Some(EVENTS));
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_stops_reading_over_http2_is_closed_and_its_buffer_stays_bounded() {
    const BUFFER: usize = 16;
    const EVENTS: usize = 400;
    let config = Config::default().watch_buffer(BUFFER);
    let server = start_over(Over::Tls, config).await;
    // A client that opens a watch stream and never reads it: HTTP/2 flow control stops the
    // server's writes once the stream's window (64 KiB) is full.
    let (mut send, _connection) = raw_h2(&server).await;
    let request = Request::get(format!("{}{CONFIGMAPS}?watch=true", server.url()));
    let (response, _) = send.send_request(request.body(()).unwrap(), true).unwrap();
    let response = tokio::time::timeout(DEADLINE, response).await.unwrap().unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    open_watches(&server, 1).await;
    for i in 0..EVENTS {
        server.create(&configmaps(), big_configmap(&format!("cm-{i}"), 64 * 1024)).unwrap();
        let buffered = server.buffered_watch_events();
        assert!(buffered <= BUFFER, "{buffered} events buffered after {i} writes");
        tokio::task::yield_now().await;
    }
    eventually("the unresponsive watch to be closed", DEADLINE, || server.open_watches() == 0)
        .await;
    // What the client reads once it wakes up: a prefix of the events, then the stream's end.
    let mut received = Vec::new();
    let read_all = async {
        while let Some(chunk) = body.data().await {
            let chunk = chunk.expect("the stream ends cleanly, not reset");
            body.flow_control().release_capacity(chunk.len()).unwrap();
            received.extend_from_slice(&chunk);
        }
    };
    tokio::time::timeout(DEADLINE, read_all).await.expect("the response ends");
    let text = String::from_utf8_lossy(&received);
    let events = text.matches(r#"{"type":"ADDED""#).count();
    assert!(events < EVENTS, "all {events} events were sent: the watch was never closed");
    // The connection serves on.
    let list = Request::get(format!("{}{CONFIGMAPS}?limit=1", server.url()));
    let (list, _) = send.send_request(list.body(()).unwrap(), true).unwrap();
    let list = tokio::time::timeout(DEADLINE, list).await.unwrap().unwrap();
    assert_eq!(list.status(), 200);
    server.shutdown().await.unwrap();
}

async fn request_bodies_over_three_mebibytes_get_413_with_a_status(over: Over) {
    let server = start_over(over, Config::default()).await;
    let (http, base) = (http(&server), server.url());
    let huge = big_configmap("huge", 4 * 1024 * 1024);
    let refused = send(
        http.post(format!("{base}{CONFIGMAPS}"))
            .header("content-type", "application/json")
            .body(huge.to_string()),
    )
    .await;
    assert_eq!(refused.status, 413, "{:?}", refused.body);
    assert_eq!(refused.body["kind"], "Status");
    assert_eq!(refused.body["reason"], "RequestEntityTooLarge");
    assert_eq!(refused.body["message"], "Request entity too large: limit is 3145728");
    // Just under the limit is served.
    let fits = big_configmap("fits", 3 * 1024 * 1024 - 1024);
    assert_eq!(
        send(
            http.post(format!("{base}{CONFIGMAPS}"))
                .header("content-type", "application/json")
                .body(fits.to_string())
        )
        .await
        .status,
        201
    );
    server.shutdown().await.unwrap();
}

async fn open_watches_beyond_the_cap_get_429_with_retry_after(over: Over) {
    let server = start_over(over, Config::default().max_watches(2)).await;
    let (http, base) = (http(&server), server.url());
    let watch = || http.get(format!("{base}{PODS}?watch=true")).send();
    let first = watch().await.unwrap();
    let second = watch().await.unwrap();
    assert_eq!((first.status().as_u16(), second.status().as_u16()), (200, 200));
    open_watches(&server, 2).await;
    let refused = send(http.get(format!("{base}{PODS}?watch=true"))).await;
    assert_eq!((refused.status, refused.retry_after.as_deref()), (429, Some("1")));
    assert_eq!(refused.body["reason"], "TooManyRequests");
    // Lists are not watches.
    assert_eq!(send(http.get(format!("{base}{PODS}"))).await.status, 200);
    drop(first);
    eventually("a watch slot to free up", DEADLINE, || server.open_watches() < 2).await;
    assert_eq!(watch().await.unwrap().status().as_u16(), 200);
    server.shutdown().await.unwrap();
}

async fn pathological_selectors_and_limits_get_400_not_cpu(over: Over) {
    let server = start_over(over, Config::default()).await;
    let (http, base) = (http(&server), server.url());
    server.create(&configmaps(), big_configmap("a", 1)).unwrap();
    let get = |query: String| http.get(format!("{base}{CONFIGMAPS}?{query}"));
    // Thousands of requirements.
    let many: Vec<String> = (0..5000).map(|i| format!("k{i}=v")).collect();
    let many = get(format!("labelSelector={}", many.join(",")));
    let refused = send(many).await;
    assert_eq!(refused.status, 400, "{:?}", refused.body);
    assert!(refused.body["message"].as_str().unwrap().contains("labelSelector"), "{refused:?}");
    // A huge selector.
    let huge = send(get(format!("labelSelector=a+in+({})", "v,".repeat(20_000)))).await;
    assert_eq!(huge.status, 400, "{:?}", huge.body);
    let fields: Vec<String> = (0..1000).map(|i| format!("metadata.name!%3Dn{i}")).collect();
    assert_eq!(send(get(format!("fieldSelector={}", fields.join(",")))).await.status, 400);
    // Ordinary selectors are served.
    assert_eq!(send(get("labelSelector=app%3Dweb,tier+in+(a,b)".into())).await.status, 200);
    // Limits: not a number is 400; zero, negative and huge ones list everything.
    assert_eq!(send(get("limit=99999999999999999999".into())).await.status, 400);
    for limit in ["0", "-5", "9223372036854775807"] {
        let all = send(get(format!("limit={limit}"))).await;
        assert_eq!(all.body["items"].as_array().map(Vec::len), Some(1), "limit={limit}");
    }
    server.shutdown().await.unwrap();
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status, self.body)
    }
}

async fn json_patches_cannot_grow_an_object_without_bound(over: Over) {
    let server = start_over(over, Config::default()).await;
    let (http, base) = (http(&server), server.url());
    server.create(&configmaps(), big_configmap("bomb", 1024)).unwrap();
    let patch = |ops: &Value| {
        http.patch(format!("{base}{CONFIGMAPS}/bomb"))
            .header("content-type", "application/json-patch+json")
            .body(ops.to_string())
    };
    // Each copy doubles the object: 40 of them would ask for a terabyte.
    let doubling: Vec<Value> = (0..40)
        .map(|i| json!({"op": "copy", "from": "/data", "path": format!("/data{i}")}))
        .chain((0..40).map(|i| json!({"op": "copy", "from": "", "path": format!("/x{i}")})))
        .collect();
    let refused = send(patch(&Value::Array(doubling))).await;
    // kube-apiserver's answer to any JSON patch that does not apply: 422 Invalid, whatever
    // the reason (here the copy limit), word for word.
    assert_eq!(refused.status, 422, "{refused:?}");
    assert_eq!(refused.body["reason"], "Invalid", "{refused:?}");
    // More operations than kube-apiserver takes.
    let tests: Vec<Value> = (0..10_001).map(|_| json!({"op": "test", "path": ""})).collect();
    let refused = send(patch(&Value::Array(tests))).await;
    assert_eq!(refused.status, 413, "{refused:?}");
    // Nesting added a level at a time, past what a JSON decoder reads back.
    let mut path = String::from("/data");
    let mut deep = json!({});
    for _ in 0..100 {
        deep = json!({"d": deep});
    }
    let mut last = 0;
    for _ in 0..5 {
        let reply = send(patch(&json!([{"op": "add", "path": path, "value": deep}]))).await;
        last = reply.status;
        if reply.status != 200 {
            assert_eq!(reply.status, 422, "{reply:?}");
            break;
        }
        path.push_str(&"/d".repeat(100));
    }
    assert_eq!(last, 422, "nesting grew without bound");
    let list = send(http.get(format!("{base}{CONFIGMAPS}"))).await;
    assert_eq!(list.status, 200);
    server.shutdown().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// The randomised hostile client.

/// One request the randomised test sends, as it prints it.
struct Hostile {
    method: String,
    path: String,
    headers: Vec<(&'static str, String)>,
    body: Option<Vec<u8>>,
}

impl std::fmt::Display for Hostile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.path.chars().take(300).collect::<String>())?;
        for (name, value) in &self.headers {
            write!(f, " [{name}: {}]", value.chars().take(100).collect::<String>())?;
        }
        if let Some(body) = &self.body {
            let shown = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
            write!(f, " body ({} bytes): {shown}", body.len())?;
        }
        Ok(())
    }
}

fn pick<'a, T>(rng: &mut fastrand::Rng, items: &'a [T]) -> &'a T {
    &items[rng.usize(..items.len())]
}

/// A path segment a client should never send (or might, by mistake).
fn odd_segment(rng: &mut fastrand::Rng) -> String {
    match rng.u8(..12) {
        0 => "..".into(),
        1 => ".".into(),
        2 => "%2F".into(),
        3 => "%00".into(),
        4 => "%zz".into(),
        5 => "x".repeat(rng.usize(1..5000)),
        6 => "%E2%98%83%F0%9F%92%A9".into(),
        7 => "watch".into(),
        8 => "status".into(),
        9 => "namespaces".into(),
        10 => String::new(),
        _ => {
            let mut s = String::new();
            for _ in 0..rng.usize(1..20) {
                let _ = write!(s, "%{:02X}", rng.u8(..));
            }
            s
        }
    }
}

fn hostile_path(rng: &mut fastrand::Rng) -> String {
    const BASES: &[&str] = &[
        "/api/v1/namespaces/default/pods",
        "/api/v1/namespaces/default/pods/web-0",
        "/api/v1/namespaces/default/pods/web-0/status",
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/configmaps/cm-0",
        "/api/v1/namespaces",
        "/api/v1/namespaces/default",
        "/api/v1/pods",
        "/api/v1/watch/namespaces/default/pods",
        "/api/v1/nodes",
        "/apis/apps/v1/namespaces/default/deployments",
        "/apis/apps/v1/deployments",
        "/apis/stable.example.com/v1/namespaces/default/crontabs",
        "/apis/stable.example.com/v1beta1/crontabs",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        "/api",
        "/api/v1",
        "/apis",
        "/apis/apps",
        "/version",
        "/openapi/v3",
        "/openapi/v3/api/v1",
        "/openapi/v3/apis/apps/v1",
        "/healthz",
        "/",
    ];
    let mut path = (*pick(rng, BASES)).to_owned();
    for _ in 0..rng.usize(..3) {
        match rng.u8(..4) {
            0 => {
                path.push('/');
                path.push_str(&odd_segment(rng));
            }
            1 => path = path.replacen('/', "//", 1),
            2 => {
                if let Some(cut) = path.rfind('/') {
                    path.truncate(cut.max(1));
                }
            }
            _ => {
                let segments: Vec<&str> = path.split('/').collect();
                let at = rng.usize(..segments.len());
                let odd = odd_segment(rng);
                path = segments
                    .iter()
                    .enumerate()
                    .map(|(i, s)| if i == at && i > 0 { odd.as_str() } else { s })
                    .collect::<Vec<_>>()
                    .join("/");
            }
        }
    }
    if !path.starts_with('/') {
        path.insert(0, '/');
    }
    path
}

fn hostile_value(rng: &mut fastrand::Rng) -> String {
    match rng.u8(..16) {
        0 => String::new(),
        1 => "0".into(),
        2 => "-1".into(),
        3 => i64::MAX.to_string(),
        4 => "99999999999999999999999".into(),
        5 => "true".into(),
        6 => "maybe".into(),
        7 => "%zz%".into(),
        8 => "x".repeat(rng.usize(1..20_000)),
        9 => "app%3Dweb%2Ctier+in+(a,b)".into(),
        10 => "a+in+(".into(),
        11 => (0..rng.usize(1..300)).map(|i| format!("k{i}%3Dv")).collect::<Vec<_>>().join(","),
        12 => "metadata.name%3Dx,spec.nodeName!%3Dy".into(),
        13 => "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTUsInN0YXJ0IjoiLi4vLi4ifQ".into(),
        14 => rng.u64(..).to_string(),
        _ => "NotOlderThan".into(),
    }
}

fn hostile_query(rng: &mut fastrand::Rng) -> String {
    const PARAMS: &[&str] = &[
        "watch",
        "labelSelector",
        "fieldSelector",
        "resourceVersion",
        "resourceVersionMatch",
        "limit",
        "continue",
        "timeoutSeconds",
        "allowWatchBookmarks",
        "sendInitialEvents",
        "dryRun",
        "fieldManager",
        "includeObject",
        "propagationPolicy",
        "gracePeriodSeconds",
        "pretty",
        "%00",
        "",
    ];
    let mut pairs = Vec::new();
    for _ in 0..rng.usize(..6) {
        let name = pick(rng, PARAMS);
        pairs.push(format!("{name}={}", hostile_value(rng)));
    }
    if rng.u8(..8) == 0 {
        pairs.push("&&==&".into());
    }
    pairs.join("&")
}

fn nested(depth: usize) -> Vec<u8> {
    let mut body = Vec::new();
    for _ in 0..depth {
        body.extend_from_slice(br#"{"a":"#);
    }
    body.extend_from_slice(b"1");
    body.extend(std::iter::repeat_n(b'}', depth));
    body
}

fn hostile_body(rng: &mut fastrand::Rng) -> Option<Vec<u8>> {
    const SCOPES: &[&str] = &["Namespaced", "Cluster", "Bogus"];
    let object = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "default", "generation": i64::MAX,
                            "resourceVersion": "7", "finalizers": ["x/y"], "labels": {"a": "b"}},
               "data": {"k": "v"}})
    };
    let doubling = json!([{"op": "copy", "from": "", "path": "/x"},
                          {"op": "copy", "from": "", "path": "/y"}]);
    let odd_ops = json!([{"op": "add", "path": "/data/0/1/2", "value": 1},
                         {"op": "remove", "path": "/metadata/name"},
                         {"op": "move", "from": "/data", "path": "/data/k"},
                         {"op": "add", "path": "/items/99999999999", "value": 1}]);
    let directives = json!({"metadata": {"name": "x"}, "$patch": "replace",
                            "spec": {"containers": [{"name": "c", "$patch": "delete"}]}});
    let options = json!({"kind": "DeleteOptions", "propagationPolicy": "Foreground",
                         "preconditions": {"uid": 5, "resourceVersion": [1]}});
    let generated = json!({"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"generateName": "x".repeat(300)},
                           "spec": {"containers": [{"name": "c"}]}});
    // Numbers at the edges, where a server adding them up would overflow.
    let huge = json!([{"restartCount": i64::MAX}, {"restartCount": i64::MAX},
                      {"restartCount": u64::MAX}, {"restartCount": 1e308}]);
    let numbers = json!({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "web-0", "namespace": "default", "generation": -1},
                         "spec": {"containers": [{"name": "c"}]},
                         "status": {"phase": "Running", "containerStatuses": huge}});
    let json = |value: Value| value.to_string().into_bytes();
    Some(match rng.u8(..19) {
        0 => return None,
        1 => Vec::new(),
        2 => json(object("cm-0")),
        3 => json(object(&odd_segment(rng))),
        4 => b"{\"metadata\": {".to_vec(),
        5 => b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml\n".to_vec(),
        6 => vec![b'x'; 4 * 1024 * 1024 + rng.usize(..1024)],
        7 => nested(rng.usize(100..3000)),
        8 => (0..rng.usize(1..2000)).map(|_| rng.u8(..)).collect(),
        9 => b"[1, 2, 3]".to_vec(),
        10 => b"\"a string\"".to_vec(),
        11 => b"null".to_vec(),
        12 => json(doubling),
        13 => json(odd_ops),
        14 => json(directives),
        15 => {
            let group = format!("g{}.example.com", rng.u8(..4));
            let scope: &&str = pick(rng, SCOPES);
            json(crontab_crd(&group, scope))
        }
        16 => json(options),
        17 => json(numbers),
        _ => json(generated),
    })
}

fn hostile_request(rng: &mut fastrand::Rng) -> Hostile {
    const METHODS: &[&str] =
        &["GET", "GET", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "BREW"];
    const ACCEPT: &[&str] = &[
        "application/json",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        "application/json;as=Table;v=v9;g=meta.k8s.io",
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
        "application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io",
        "application/vnd.kubernetes.protobuf",
        "*/*;q=banana",
        ";;;,,,=",
        "",
    ];
    const CONTENT_TYPE: &[&str] = &[
        "application/json",
        "application/yaml",
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
        "text/plain",
        "application/vnd.kubernetes.protobuf",
        "garbage;;=",
    ];
    // Writes aimed at objects that exist, a third of the time, so that hostile bodies get
    // stored (and then rendered) rather than only refused.
    const WRITES: &[(&str, &str, &str)] = &[
        ("PUT", "/api/v1/namespaces/default/pods/web-0/status", "application/json"),
        ("PUT", "/api/v1/namespaces/default/pods/web-0", "application/json"),
        ("PATCH", "/api/v1/namespaces/default/pods/web-0/status", "application/merge-patch+json"),
        ("PATCH", "/api/v1/namespaces/default/configmaps/cm-0", "application/json-patch+json"),
        (
            "PATCH",
            "/api/v1/namespaces/default/configmaps/cm-0",
            "application/strategic-merge-patch+json",
        ),
        ("POST", "/api/v1/namespaces/default/configmaps", "application/json"),
        ("PUT", "/api/v1/namespaces/default/configmaps/cm-0", "application/json"),
        ("POST", "/api/v1/namespaces/default/pods", "application/json"),
        ("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json"),
    ];
    if rng.u8(..3) == 0 {
        let (method, path, content_type) = *pick(rng, WRITES);
        let headers = vec![("content-type", content_type.to_owned())];
        let body = hostile_body(rng);
        return Hostile { method: method.to_owned(), path: path.to_owned(), headers, body };
    }
    let method = (*pick(rng, METHODS)).to_owned();
    let mut path = hostile_path(rng);
    let query = hostile_query(rng);
    if !query.is_empty() {
        path.push('?');
        path.push_str(&query);
    }
    let mut headers = Vec::new();
    if rng.bool() {
        headers.push(("accept", (*pick(rng, ACCEPT)).to_owned()));
    }
    if rng.bool() {
        headers.push(("content-type", (*pick(rng, CONTENT_TYPE)).to_owned()));
    }
    let body = hostile_body(rng);
    Hostile { method, path, headers, body }
}

/// Whether a 5xx answer is one the server gives on purpose, as kube-apiserver does: a
/// resourceVersion that is not a number reaching the storage layer (500 without a reason), or
/// one from the future (504 `Timeout`).
fn deliberate(status: u16, body: &Value) -> bool {
    let message = body["message"].as_str().unwrap_or_default();
    match status {
        500 => body["reason"].is_null() && message.contains("resourceVersion: Invalid value"),
        504 => body["reason"] == "Timeout",
        _ => false,
    }
}

/// Lists what the hostile requests may have written, as JSON, tables and metadata: each must
/// be served whole.
async fn read_back(http: &reqwest::Client, base: &str, replay: &str) {
    const COLLECTIONS: &[&str] =
        &[PODS, CONFIGMAPS, "/apis/stable.example.com/v1/namespaces/default/crontabs"];
    const ACCEPT: &[&str] = &[
        "application/json",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    ];
    for collection in COLLECTIONS {
        for accept in ACCEPT {
            let request = http.get(format!("{base}{collection}")).header("accept", *accept);
            let reply = match tokio::time::timeout(DEADLINE, request.send()).await {
                Ok(Ok(response)) => response,
                failed => {
                    panic!("no answer to {collection} as {accept} ({failed:?}) after {replay}")
                }
            };
            let status = reply.status().as_u16();
            let body = tokio::time::timeout(DEADLINE, reply.bytes()).await;
            assert!(
                matches!(body, Ok(Ok(_))) && (status < 500 || status == 404),
                "{status} for {collection} as {accept} after {replay}"
            );
        }
    }
}

async fn hostile_requests_all_get_answers_and_the_server_keeps_serving(over: Over) {
    let seed = std::env::var("HOSTILE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    let cases: usize =
        std::env::var("HOSTILE_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(300);
    println!("hostile requests: HOSTILE_SEED={seed} HOSTILE_CASES={cases}");
    let mut rng = fastrand::Rng::with_seed(seed);
    let server = start_over(over, Config::default()).await;
    let (http, base) = (http(&server), server.url());
    // Something for the requests to find.
    let crd = GroupVersionResource::new("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    server.create(&crd, crontab_crd("stable.example.com", "Namespaced")).unwrap();
    let pods = GroupVersionResource::new("", "v1", "pods");
    for i in 0..3 {
        server.create(&pods, pod("default", &format!("web-{i}"), "web")).unwrap();
        server.create(&configmaps(), big_configmap(&format!("cm-{i}"), 10)).unwrap();
    }
    for case in 0..cases {
        let hostile = hostile_request(&mut rng);
        let replay = format!("case {case} of HOSTILE_SEED={seed}: {hostile}");
        let method = reqwest::Method::from_bytes(hostile.method.as_bytes()).unwrap();
        let mut request = http.request(method, format!("{base}{}", hostile.path));
        for (name, value) in &hostile.headers {
            request = request.header(*name, value.as_str());
        }
        if let Some(body) = hostile.body.clone() {
            request = request.body(body);
        }
        let response = match tokio::time::timeout(DEADLINE, request.send()).await {
            Err(elapsed) => panic!("no answer ({elapsed}): {replay}"),
            Ok(Err(error)) => panic!("no HTTP answer ({error:?}): {replay}"),
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        // A watch streams until its timeout: its first bytes are enough.
        let body = match tokio::time::timeout(Duration::from_secs(2), response.bytes()).await {
            Ok(Ok(bytes)) => bytes.to_vec(),
            Ok(Err(error)) => panic!("{status} with a broken body ({error:?}): {replay}"),
            Err(_) => {
                assert!(
                    status == 200 && hostile.path.contains("watch"),
                    "{status} whose body never ended: {replay}"
                );
                continue;
            }
        };
        let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        assert!(
            status < 500 || deliberate(status, &json),
            "{status} {}: {replay}",
            String::from_utf8_lossy(&body[..body.len().min(500)])
        );
        if hostile.method != "GET" && (200..300).contains(&status) {
            // Whatever the server stored, it can serve, in every representation.
            read_back(&http, &base, &replay).await;
        }
    }
    // Still serving: a normal list, a write and a watch.
    let list = send(http.get(format!("{base}{PODS}"))).await;
    assert_eq!(list.status, 200, "after HOSTILE_SEED={seed}: {list:?}");
    assert!(list.body["items"].is_array(), "after HOSTILE_SEED={seed}: {list:?}");
    let created = send(
        http.post(format!("{base}{CONFIGMAPS}"))
            .header("content-type", "application/json")
            .body(big_configmap("after", 1).to_string()),
    )
    .await;
    assert!(matches!(created.status, 201 | 409), "after HOSTILE_SEED={seed}: {created:?}");
    let watch = http.get(format!("{base}{PODS}?watch=true&timeoutSeconds=1")).send().await;
    assert_eq!(watch.unwrap().status().as_u16(), 200, "after HOSTILE_SEED={seed}");
    if let Over::Tls = over {
        let traffic = server.traffic();
        assert_eq!(traffic.http1_requests, 0, "{traffic:?}");
        assert!(traffic.http2_requests > cases as u64, "{traffic:?}");
    }
    server.shutdown().await.unwrap();
}
