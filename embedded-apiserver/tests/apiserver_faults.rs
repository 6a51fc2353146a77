//! The faults a chaos test injects, over real HTTP: responses cut short, stalled or slowed
//! part way ([`Disruption`]), a restart that keeps the data, and 429/500 bursts aimed at lists
//! or watches alone. What a client sees is read off the wire, chunked framing included.
//!
//! Nothing sleeps to let things settle: every wait is for an event or a condition, bounded by
//! a deadline; a stall is checked by the silence it must keep for a while.

// Helpers outside the `#[test]` functions fail the test on a broken expectation, too.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use embedded_apiserver::testing::{WatchLines, pod};
use embedded_apiserver::{ApiServer, Disruption, Failure};
use futures::StreamExt;
use informer_runtime::GroupVersionResource;
use serde_json::Value;
use support::{open_watches, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long any single wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(10);
const PODS: &str = "/api/v1/namespaces/default/pods";

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().pool_max_idle_per_host(0).build().expect("an HTTP client")
}

fn pods() -> GroupVersionResource {
    GroupVersionResource::new("", "v1", "pods")
}

async fn with_pods(n: usize) -> ApiServer {
    let server = start().await;
    for i in 0..n {
        server.create(&pods(), pod("default", &format!("web-{i}"), "web")).unwrap();
    }
    server
}

/// A response as it came off the wire.
struct Raw {
    head: String,
    /// The body, chunked framing removed.
    body: Vec<u8>,
    /// The chunked terminator arrived.
    complete: bool,
    /// The server closed the connection.
    closed: bool,
}

/// Sends `GET path` on a connection of its own and reads the response until it is complete
/// or the connection closes.
async fn raw_get(server: &ApiServer, path: &str) -> Raw {
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let read = async {
        let mut buf = vec![0; 1 << 16];
        loop {
            if let Some(raw) = decode(&received, false)
                && raw.complete
            {
                return raw;
            }
            let n = stream.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                return decode(&received, true).expect("a status line and headers");
            }
            received.extend_from_slice(&buf[..n]);
        }
    };
    tokio::time::timeout(DEADLINE, read).await.expect("the response ends, one way or another")
}

/// Decodes a response read so far (chunked, or with a `Content-Length`); `None` before its
/// head is whole.
fn decode(bytes: &[u8], closed: bool) -> Option<Raw> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
    let mut rest = &bytes[end + 4..];
    let length = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse::<usize>().ok())?
    });
    if let Some(length) = length {
        let body = rest[..rest.len().min(length)].to_vec();
        return Some(Raw { head, complete: body.len() == length, body, closed });
    }
    assert!(head.to_ascii_lowercase().contains("transfer-encoding: chunked"), "{head}");
    let mut body = Vec::new();
    let mut complete = false;
    while let Some(line_end) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).ok()?, 16).ok()?;
        let data = &rest[line_end + 2..];
        if size == 0 {
            complete = data.starts_with(b"\r\n");
            break;
        }
        let take = size.min(data.len());
        body.extend_from_slice(&data[..take]);
        if data.len() < size + 2 {
            break;
        }
        rest = &data[size + 2..];
    }
    Some(Raw { head, body, complete, closed })
}

#[tokio::test]
async fn truncated_lists_and_watches_end_mid_body_without_the_terminator() {
    let server = with_pods(3).await;
    server.disrupt_next(1, Disruption::truncate(50).verb("list").resource("pods"));
    let cut = raw_get(&server, PODS).await;
    assert!(cut.head.starts_with("HTTP/1.1 200"), "{}", cut.head);
    assert_eq!((cut.body.len(), cut.complete, cut.closed), (50, false, true));
    // Only one list was disrupted, and other resources never were.
    let whole = raw_get(&server, PODS).await;
    assert!(whole.complete);
    let list: Value = serde_json::from_slice(&whole.body).unwrap();
    assert_eq!(list["items"].as_array().map(Vec::len), Some(3));
    assert_eq!(&whole.body[..50], &cut.body[..], "the cut body is the list's beginning");

    // A cut longer than a whole body still leaves its last byte out.
    server.disrupt_next(1, Disruption::truncate(usize::MAX).verb("list"));
    let almost = raw_get(&server, PODS).await;
    assert_eq!((almost.body.len(), almost.complete), (whole.body.len() - 1, false));

    // A watch cut in the middle of its initial events.
    server.disrupt_next(1, Disruption::truncate(700).verb("watch").resource("pods"));
    let watch = raw_get(&server, &format!("{PODS}?watch=true")).await;
    assert_eq!((watch.body.len(), watch.complete, watch.closed), (700, false, true));
    assert!(watch.body.starts_with(br#"{"type":"ADDED""#));

    // What an HTTP client makes of it: the headers, then an error instead of the body.
    server.disrupt_next(1, Disruption::truncate(10).verb("list"));
    let response = http().get(format!("{}{PODS}", server.url())).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.bytes().await.is_err(), "an incomplete body is an error");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn stalled_lists_send_headers_then_nothing_until_cleared() {
    let server = with_pods(3).await;
    let http = http();
    server.disrupt_next(1, Disruption::stall(20).verb("list").resource("pods"));
    let response =
        tokio::time::timeout(DEADLINE, http.get(format!("{}{PODS}", server.url())).send())
            .await
            .expect("the headers arrive")
            .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let mut body = response.bytes_stream();
    let mut received = Vec::new();
    while received.len() < 20 {
        let chunk = tokio::time::timeout(DEADLINE, body.next()).await.expect("the first bytes");
        received.extend_from_slice(&chunk.expect("a chunk").unwrap());
    }
    assert_eq!(received.len(), 20, "nothing past the stall");
    let silent = tokio::time::timeout(Duration::from_millis(500), body.next()).await.is_err();
    assert!(silent, "a stalled list sends nothing more");
    // Other requests are served meanwhile.
    let other = http.get(format!("{}{PODS}", server.url())).send().await.unwrap();
    assert_eq!(other.bytes().await.map(|b| b.len()).ok().map(|n| n > 0), Some(true));
    server.clear_disruptions();
    let rest = async {
        while let Some(chunk) = body.next().await {
            received.extend_from_slice(&chunk.unwrap());
        }
    };
    tokio::time::timeout(DEADLINE, rest).await.expect("the rest of the list once released");
    let list: Value = serde_json::from_slice(&received).unwrap();
    assert_eq!(list["items"].as_array().map(Vec::len), Some(3));

    // A stalled watch: headers only, then its events once released.
    server.disrupt_next(1, Disruption::stall(0).verb("watch"));
    let watch = http.get(format!("{}{PODS}?watch=true", server.url())).send().await.unwrap();
    let mut lines = WatchLines::new(watch.bytes_stream());
    assert!(tokio::time::timeout(Duration::from_millis(500), lines.next_event()).await.is_err());
    server.clear_disruptions();
    let first = tokio::time::timeout(DEADLINE, lines.next_event()).await.expect("an event");
    assert_eq!(first.expect("an event")["type"], "ADDED");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn slow_disruptions_delay_every_chunk() {
    let server = with_pods(3).await;
    let per_chunk = Duration::from_millis(150);
    server.disrupt_next(1, Disruption::slow(per_chunk).verb("watch"));
    let started = Instant::now();
    let watch = http().get(format!("{}{PODS}?watch=true", server.url())).send().await.unwrap();
    let mut lines = WatchLines::new(watch.bytes_stream());
    for _ in 0..3 {
        let event = tokio::time::timeout(DEADLINE, lines.next_event()).await.expect("an event");
        assert_eq!(event.expect("an event")["type"], "ADDED");
    }
    assert!(started.elapsed() >= per_chunk * 3, "{:?} for 3 events", started.elapsed());
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_the_data_and_closes_every_connection() {
    let server = with_pods(3).await;
    let http = http();
    let before = server.resource_version();
    let objects = server.objects(&pods());
    let watch = http
        .get(format!("{}{PODS}?watch=true&resourceVersion={before}", server.url()))
        .send()
        .await
        .unwrap();
    let mut events = watch.bytes_stream();
    open_watches(&server, 1).await;
    server.create(&pods(), pod("default", "web-3", "web")).unwrap();
    let first = tokio::time::timeout(DEADLINE, events.next()).await.expect("an event");
    assert!(first.expect("a chunk").is_ok());
    let last_seen = server.resource_version();

    let handle = server.handle();
    let restart = tokio::spawn(async move { handle.restart(Duration::from_millis(500)).await });
    // The open watch ends abruptly: an error, not a clean end.
    let ended = tokio::time::timeout(DEADLINE, events.next()).await.expect("the watch ends");
    assert!(matches!(ended, Some(Err(_))), "the watch broke off: {ended:?}");
    // Meanwhile, nothing listens.
    let refused = TcpStream::connect(server.addr()).await;
    assert_eq!(refused.err().map(|e| e.kind()), Some(std::io::ErrorKind::ConnectionRefused));
    tokio::time::timeout(DEADLINE, restart).await.expect("serving again").unwrap().unwrap();

    // Same address, same objects, same versions.
    assert_eq!(server.resource_version(), last_seen);
    let list: Value = serde_json::from_slice(
        &http.get(format!("{}{PODS}", server.url())).send().await.unwrap().bytes().await.unwrap(),
    )
    .unwrap();
    assert_eq!(list["metadata"]["resourceVersion"], last_seen.to_string());
    assert_eq!(list["items"].as_array().map(Vec::len), Some(objects.len() + 1));
    // etcd's history survived: an exact list at an old version still reads it.
    let exact =
        format!("{}{PODS}?resourceVersion={before}&resourceVersionMatch=Exact", server.url());
    let old: Value =
        serde_json::from_slice(&http.get(exact).send().await.unwrap().bytes().await.unwrap())
            .unwrap();
    assert_eq!(old["items"].as_array().map(Vec::len), Some(objects.len()));
    // The watch cache did not: a watch from before the restart gets 410 and must relist.
    let old_watch = http
        .get(format!("{}{PODS}?watch=true&resourceVersion={before}", server.url()))
        .send()
        .await
        .unwrap();
    let mut lines = WatchLines::new(old_watch.bytes_stream());
    let expired = tokio::time::timeout(DEADLINE, lines.next_event()).await.unwrap().unwrap();
    assert_eq!(expired["type"], "ERROR");
    assert_eq!(expired["object"]["code"], 410);
    assert_eq!(
        expired["object"]["message"],
        format!("too old resource version: {before} ({last_seen})")
    );
    // A watch from the current version is served, and sees new writes.
    let fresh = http
        .get(format!("{}{PODS}?watch=true&resourceVersion={last_seen}", server.url()))
        .send()
        .await
        .unwrap();
    let mut lines = WatchLines::new(fresh.bytes_stream());
    open_watches(&server, 1).await;
    server.create(&pods(), pod("default", "web-4", "web")).unwrap();
    let added = tokio::time::timeout(DEADLINE, lines.next_event()).await.unwrap().unwrap();
    assert_eq!(added["object"]["metadata"]["name"], "web-4");
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn failure_bursts_aim_at_watches_or_lists_and_send_retry_after() {
    let server = with_pods(1).await;
    let http = http();
    let get = |path: String| http.get(format!("{}{path}", server.url())).send();
    server.fail_next(2, Failure::too_many_requests(Duration::from_secs(2)).verb("watch"));
    server.fail_next(
        1,
        Failure::internal_error("etcd").retry_after(Duration::from_millis(1)).verb("list"),
    );
    let list = get(PODS.to_owned()).await.unwrap();
    let header = |r: &reqwest::Response| {
        r.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned)
    };
    assert_eq!((list.status().as_u16(), header(&list).as_deref()), (500, Some("1")));
    for _ in 0..2 {
        let watch = get(format!("{PODS}?watch=true")).await.unwrap();
        assert_eq!((watch.status().as_u16(), header(&watch).as_deref()), (429, Some("2")));
        let status: Value = serde_json::from_slice(&watch.bytes().await.unwrap()).unwrap();
        assert_eq!(status["details"]["retryAfterSeconds"], 2);
        // Lists are served meanwhile.
        assert_eq!(get(PODS.to_owned()).await.unwrap().status().as_u16(), 200);
    }
    let watch = get(format!("{PODS}?watch=true&timeoutSeconds=1")).await.unwrap();
    assert_eq!(watch.status().as_u16(), 200, "the burst is over");
    server.shutdown().await.unwrap();
}
