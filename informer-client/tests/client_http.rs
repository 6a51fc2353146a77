//! The HTTP client against a scripted local server: list pages and their prefetch, watch
//! streams over chunked bodies, error mapping, typed requests, credentials.

// Every test here runs this crate's own HTTP client (`Client::new`, `Config`), which the
// `http` feature builds.
#![cfg(feature = "http")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod client_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use client_support::{End, Reply, Server, within};
use futures::StreamExt;
use informer_client::{Auth, Client, ClientError, Config, ExecConfig, Patch, PatchParams};
use informer_runtime::listwatch::{
    Error, ListIntake, ListOptions, ListWatchSource, WatchEvent, WatchOptions,
};
use informer_runtime::{LabelSelector, SharedInformerFactory};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;

fn pod_json(name: &str, rv: u32) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"default","resourceVersion":"{rv}","labels":{{"app":"web"}}}},"spec":{{"containers":[{{"name":"c","image":"nginx"}}]}}}}"#
    )
}

/// A pod list page of `names`, at version 100, with `next` as its continue token.
fn page(names: &[String], next: Option<&str>) -> String {
    let items: Vec<String> = names.iter().map(|n| pod_json(n, 50)).collect();
    let token = next.map(|t| format!(r#","continue":"{t}""#)).unwrap_or_default();
    format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"100"{token}}},"items":[{}]}}"#,
        items.join(",")
    )
}

fn names(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}-{i}")).collect()
}

fn client(server: &Server) -> Client {
    Client::new(Config::new(server.url("http"))).unwrap()
}

/// Three pages: no token, `p2`, `p3`.
fn three_pages(request: &client_support::Request) -> Reply {
    match request.param("continue").as_deref() {
        None => Reply::json(200, page(&names("a", 2), Some("p2"))),
        Some("p2") => Reply::json(200, page(&names("b", 2), Some("p3"))),
        _ => Reply::json(200, page(&names("c", 1), None)),
    }
}

fn first_page_options() -> ListOptions {
    ListOptions { resource_version: "0".to_owned(), limit: Some(2), ..ListOptions::default() }
}

/// The options the reflector sends for the page after one with `token`.
fn next_page_options(token: &str) -> ListOptions {
    ListOptions { continue_token: Some(token.to_owned()), limit: Some(2), ..ListOptions::default() }
}

#[tokio::test]
async fn the_next_page_is_fetched_while_this_one_is_decoded() {
    let server = Server::start(three_pages).await;
    let pods = client(&server).lister_watcher::<Pod>(Some("default"));

    let first = within(pods.list(&first_page_options())).await.unwrap();
    assert_eq!(first.items.len(), 2);
    assert_eq!(first.continue_token.as_deref(), Some("p2"));
    // The second page was asked for without a second call.
    let requests = server.wait_for_requests(2).await;
    assert_eq!(requests[0].target, "/api/v1/namespaces/default/pods?limit=2&resourceVersion=0");
    assert_eq!(requests[1].target, "/api/v1/namespaces/default/pods?limit=2&continue=p2");

    let second = within(pods.list(&next_page_options("p2"))).await.unwrap();
    assert_eq!(second.items[0].metadata.name.as_deref(), Some("b-0"));
    let third = within(pods.list(&next_page_options("p3"))).await.unwrap();
    assert_eq!((third.items.len(), third.continue_token), (1, None));
    assert_eq!(server.requests().len(), 3, "every page was fetched once");
}

#[tokio::test]
async fn a_prefetched_page_that_is_not_asked_for_is_dropped() {
    let server = Server::start(three_pages).await;
    let pods = client(&server).lister_watcher::<Pod>(None);
    within(pods.list(&first_page_options())).await.unwrap();
    server.wait_for_requests(2).await;
    // Other options (another page size): fetched afresh.
    let other = ListOptions { limit: Some(3), ..next_page_options("p2") };
    within(pods.list(&other)).await.unwrap();
    let requests = server.wait_for_requests(3).await;
    assert_eq!(requests[2].param("limit").as_deref(), Some("3"));
}

#[tokio::test]
async fn large_pages_decode_off_the_runtime_thread() {
    let big = names("pod-with-a-rather-long-name-to-fill-the-page", 1500);
    let body = page(&big, None);
    assert!(body.len() > 64 * 1024);
    let server = Server::start(move |_| Reply::json(200, body.clone())).await;
    let pods = client(&server).lister_watcher::<Pod>(None);
    let listed = within(pods.list(&ListOptions::default())).await.unwrap();
    assert_eq!(listed.items.len(), 1500);
    assert_eq!(listed.resource_version, "100");
}

/// A list body in chunks of `size`, as a server that streams its answer sends it (no length).
fn chunked_list(body: &str, size: usize, end: End) -> Reply {
    Reply::Chunked { status: 200, chunks: cut(body, size), end }
}

#[tokio::test(flavor = "current_thread")]
async fn a_list_is_decoded_while_its_chunks_arrive() {
    let body = page(&names("streamed", 1500), Some("next"));
    assert!(body.len() > 64 * 1024);
    for size in [7, 1000, 64 * 1024] {
        let reply = chunked_list(&body, size, End::Clean);
        let server = Server::start(move |_| reply.clone()).await;
        let pods = client(&server).lister_watcher::<Pod>(None);
        let listed = within(pods.list(&ListOptions::default())).await.unwrap();
        let names: Vec<_> = listed.items.iter().map(|p| p.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, self::names("streamed", 1500), "chunks of {size}");
        assert_eq!(listed.resource_version, "100");
        assert_eq!(listed.continue_token.as_deref(), Some("next"));
    }
}

#[tokio::test]
async fn a_list_cut_off_mid_body_is_a_transport_error() {
    let body = page(&names("cut", 1500), None);
    let reply = chunked_list(&body[..body.len() / 2], 4096, End::Cut);
    let server = Server::start(move |_| reply.clone()).await;
    let pods = client(&server).lister_watcher::<Pod>(None);
    let error = within(pods.list(&ListOptions::default())).await.unwrap_err();
    assert!(matches!(error, Error::Transport(_)), "{error}");
}

#[tokio::test]
async fn a_streamed_list_that_is_not_a_list_names_the_item_and_byte() {
    let good = page(&names("good", 1000), None);
    // The 501st item has a number for a name.
    let bad = good.replacen(r#""name":"good-500""#, r#""name":500"#, 1);
    let at = bad.find(r#""name":500"#).unwrap() + r#""name":"#.len();
    let reply = chunked_list(&bad, 333, End::Clean);
    let server = Server::start(move |_| reply.clone()).await;
    let pods = client(&server).lister_watcher::<Pod>(None);
    let Error::Decode(message) = within(pods.list(&ListOptions::default())).await.unwrap_err()
    else {
        panic!("expected a decode error");
    };
    assert!(message.starts_with("pods list: item 500: invalid type: integer `500`"), "{message}");
    // serde_json places the fault at or just after the number.
    let byte: usize =
        message.rsplit("(byte ").next().unwrap().trim_end_matches(')').parse().unwrap();
    assert!((at..=at + 3).contains(&byte), "{message}: the number is at byte {at}");
}

/// An intake that finds held objects for every other item of `known`, and takes none.
struct Reusing(Arc<std::collections::HashMap<String, Arc<Pod>>>);

impl ListIntake<Pod> for Reusing {
    fn unchanged(&self, listed: &Pod) -> Option<Arc<Pod>> {
        let name = listed.metadata.name.as_deref()?;
        let index: usize = name.rsplit('-').next()?.parse().ok()?;
        index.is_multiple_of(2).then(|| Arc::clone(&self.0[name]))
    }

    fn take(&self, item: Arc<Pod>) -> Option<Arc<Pod>> {
        Some(item)
    }
}

#[tokio::test]
async fn listing_reuses_the_objects_it_is_given_for_unchanged_items() {
    let body = page(&names("kept", 300), None);
    let reply = chunked_list(&body, 512, End::Clean);
    let server = Server::start(move |_| reply.clone()).await;
    let pods = client(&server).lister_watcher::<Pod>(None);
    let first = within(pods.list(&ListOptions::default())).await.unwrap();
    // Every other item is known at the version it is listed at; the rest at another version.
    let known: Arc<std::collections::HashMap<String, Arc<Pod>>> = Arc::new(
        first.items.iter().map(|p| (p.metadata.name.clone().unwrap(), Arc::clone(p))).collect(),
    );
    let reuse = Reusing(Arc::clone(&known));
    let second = within(pods.list_into(&ListOptions::default(), Arc::new(reuse))).await.unwrap();
    assert_eq!(second.items.len(), 300);
    for (i, pod) in second.items.iter().enumerate() {
        let held = &known[pod.metadata.name.as_deref().unwrap()];
        assert_eq!(Arc::ptr_eq(pod, held), i % 2 == 0, "item {i}");
        assert_eq!(**pod, **held);
    }
}

/// An intake that takes every item.
#[derive(Default)]
struct Taking(parking_lot::Mutex<Vec<Arc<Pod>>>);

impl ListIntake<Pod> for Taking {
    fn unchanged(&self, _: &Pod) -> Option<Arc<Pod>> {
        None
    }

    fn take(&self, item: Arc<Pod>) -> Option<Arc<Pod>> {
        self.0.lock().push(item);
        None
    }
}

/// Items that come before the body says it is a list of pods at a version are held in the
/// page and checked with it, never handed on: a body that is not such a list never reaches the
/// cache.
#[tokio::test]
async fn items_before_the_kind_and_version_stay_in_the_page() {
    let items: Vec<String> = names("early", 3).iter().map(|n| pod_json(n, 50)).collect();
    let body = format!(
        r#"{{"items":[{}],"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"100"}}}}"#,
        items.join(",")
    );
    let server = Server::start(move |_| Reply::json(200, body.clone())).await;
    let pods = client(&server).lister_watcher::<Pod>(None);
    let taking = Arc::new(Taking::default());
    let held = within(pods.list_into(&ListOptions::default(), Arc::clone(&taking) as _)).await;
    assert_eq!(held.unwrap().items.len(), 3);
    assert!(taking.0.lock().is_empty());

    // In the usual order, every item is taken as soon as it is decoded.
    let body = page(&names("usual", 3), None);
    let server = Server::start(move |_| Reply::json(200, body.clone())).await;
    let pods = client(&server).lister_watcher::<Pod>(None);
    let held = within(pods.list_into(&ListOptions::default(), Arc::clone(&taking) as _)).await;
    assert_eq!(held.unwrap().items.len(), 0);
    assert_eq!(taking.0.lock().len(), 3);
    taking.0.lock().clear();

    let wrong = page_of_kind("ConfigMapList");
    let server = Server::start(move |_| Reply::json(200, wrong.clone())).await;
    let pods = client(&server).lister_watcher::<Pod>(None);
    let listed = within(pods.list_into(&ListOptions::default(), Arc::clone(&taking) as _)).await;
    assert!(listed.is_err(), "a ConfigMapList is not a list of pods");
    assert!(taking.0.lock().is_empty(), "nothing of a ConfigMapList reaches the intake");
}

fn page_of_kind(kind: &str) -> String {
    page(&names("other", 3), None).replace("PodList", kind)
}

#[tokio::test(flavor = "current_thread")]
async fn an_informer_syncs_every_page_over_http() {
    let server = Server::start(|request| {
        if request.param("watch").is_some() {
            return Reply::Chunked { status: 200, chunks: vec![], end: End::Stall };
        }
        three_pages(request)
    })
    .await;
    let factory = SharedInformerFactory::builder(client(&server)).build();
    let informer = factory.informer::<Pod>();
    factory.start();
    assert!(within(factory.wait_for_cache_sync(Duration::from_secs(10))).await.all_synced());
    let all = factory.lister::<Pod>().list(&LabelSelector::everything());
    assert_eq!(all.len(), 5);
    let watch = server.wait_for_requests(4).await.pop().unwrap();
    assert_eq!(watch.param("watch").as_deref(), Some("true"));
    assert_eq!(watch.param("resourceVersion").as_deref(), Some("100"));
    assert_eq!(watch.param("allowWatchBookmarks").as_deref(), Some("true"));
    assert!(watch.param("timeoutSeconds").is_some());
    drop(informer);
    within(factory.shutdown()).await;
}

/// issue 17: a relist answered 200 with a body that is not a pod list (`{}`, a `Status`, an
/// object of another kind) used to decode as an empty list, and the reflector replaced the
/// cache with nothing: every handler got a delete for every pod. Now the list is an error, the
/// reflector backs off and lists again, and the cache and the handlers never see the gap.
#[tokio::test]
async fn a_relist_answered_with_something_else_than_a_list_leaves_the_cache_alone() {
    let bad_bodies = [
        "{}".to_owned(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"etcd is down","reason":"InternalError","code":500}"#.to_owned(),
        r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","resourceVersion":"4"}}"#.to_owned(),
    ];
    let lists = Arc::new(AtomicUsize::new(0));
    let watches = Arc::new(AtomicUsize::new(0));
    let server = Server::start({
        let (lists, watches) = (Arc::clone(&lists), Arc::clone(&watches));
        move |request| {
            if request.param("watch").is_some() {
                if watches.fetch_add(1, Ordering::SeqCst) == 0 {
                    // History compacted: the reflector must relist.
                    let expired = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 100 (200)","reason":"Expired","code":410}}"#;
                    return Reply::Chunked {
                        status: 200,
                        chunks: vec![format!("{expired}\n").into_bytes()],
                        end: End::Clean,
                    };
                }
                return Reply::Chunked { status: 200, chunks: vec![], end: End::Stall };
            }
            // The first list and every one after the three refused ones are good.
            match lists.fetch_add(1, Ordering::SeqCst) {
                n @ 1..=3 => Reply::json(200, bad_bodies[n - 1].clone()),
                _ => Reply::json(200, page(&names("a", 2), None)),
            }
        }
    })
    .await;
    let fast = informer_runtime::reflector::BackoffConfig {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(50),
        ..informer_runtime::reflector::BackoffConfig::default()
    };
    let factory = SharedInformerFactory::builder(client(&server))
        .reflector_config(informer_runtime::reflector::ReflectorConfig::default().backoff(fast))
        .build();
    let informer = factory.informer::<Pod>();
    let errors = Arc::new(parking_lot::Mutex::new(Vec::new()));
    informer
        .set_watch_error_handler({
            let errors = Arc::clone(&errors);
            move |error| errors.lock().push(error.to_string())
        })
        .unwrap();
    let deletes = Arc::new(AtomicUsize::new(0));
    informer
        .add_event_handler(informer_runtime::HandlerFuncs::new().on_delete({
            let deletes = Arc::clone(&deletes);
            move |_| {
                deletes.fetch_add(1, Ordering::SeqCst);
            }
        }))
        .unwrap();
    factory.start();
    assert!(within(factory.wait_for_cache_sync(Duration::from_secs(10))).await.all_synced());
    // The first list, the three refused ones, and the good one after them; or, as before the
    // fix, a delete reported for a pod the server still has.
    within(async {
        while lists.load(Ordering::SeqCst) < 5 && deletes.load(Ordering::SeqCst) == 0 {
            server.wait_for_requests(server.requests().len() + 1).await;
        }
    })
    .await;
    assert_eq!(deletes.load(Ordering::SeqCst), 0, "no handler may hear of a delete");
    let errors = errors.lock().clone();
    for expected in ["has no `kind`", "a Status instead of a PodList", "a ConfigMap instead"] {
        assert!(errors.iter().any(|e| e.contains(expected)), "{expected:?} in {errors:#?}");
    }
    assert_eq!(factory.lister::<Pod>().list(&LabelSelector::everything()).len(), 2);
    within(factory.shutdown()).await;
}

fn event(kind: &str, name: &str, rv: u32) -> String {
    format!(
        r#"{{"type":"{kind}","object":{{"kind":"Pod","apiVersion":"v1",{}}}"#,
        &pod_json(name, rv)[1..]
    ) + "\n"
}

/// The chunks of `events` cut every `size` bytes.
fn cut(events: &str, size: usize) -> Vec<Vec<u8>> {
    events.as_bytes().chunks(size).map(<[u8]>::to_vec).collect()
}

fn watch_options() -> WatchOptions {
    WatchOptions {
        resource_version: "100".to_owned(),
        label_selector: Some("app=web".to_owned()),
        timeout: Some(Duration::from_secs(300)),
        allow_watch_bookmarks: true,
        ..WatchOptions::default()
    }
}

async fn collect(server: &Server) -> Vec<Result<WatchEvent<Pod>, Error>> {
    let pods = client(server).lister_watcher::<Pod>(Some("default"));
    let watch = within(pods.watch(&watch_options())).await.unwrap();
    within(watch.collect::<Vec<_>>()).await
}

/// issue 17: a watch timeout near `Duration::MAX` made the idle deadline overflow (`Instant +
/// Duration`) at the first chunk, a panic inside the watch. The deadline saturates instead.
#[tokio::test]
async fn a_watch_timeout_near_duration_max_saturates_instead_of_panicking() {
    let events = event("ADDED", "a", 101) + &event("DELETED", "a", 102);
    let server = Server::start(move |_| Reply::Chunked {
        status: 200,
        chunks: cut(&events, 50),
        end: End::Clean,
    })
    .await;
    let pods = client(&server).lister_watcher::<Pod>(Some("default"));
    let options = WatchOptions { timeout: Some(Duration::MAX), ..watch_options() };
    let watch = within(pods.watch(&options)).await.unwrap();
    let shown: Vec<String> =
        within(watch.collect::<Vec<_>>()).await.iter().map(|e| format!("{e:?}")).collect();
    assert_eq!(shown, ["Ok(Added(default/a@101))", "Ok(Deleted(default/a@102))"]);
}

#[tokio::test]
async fn watch_events_split_across_chunks() {
    let events = event("ADDED", "a", 101)
        + &event("MODIFIED", "a", 102)
        + "\r\n"
        + r#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"103"},"spec":{"containers":null}}}"#
        + "\n"
        + &event("DELETED", "a", 104);
    let server = Server::start(move |_| Reply::Chunked {
        status: 200,
        chunks: cut(&events, 37),
        end: End::Clean,
    })
    .await;
    let shown: Vec<String> = collect(&server).await.iter().map(|e| format!("{e:?}")).collect();
    assert_eq!(
        shown,
        [
            "Ok(Added(default/a@101))",
            "Ok(Modified(default/a@102))",
            r#"Ok(Bookmark { resource_version: "103", initial_events_end: false })"#,
            "Ok(Deleted(default/a@104))",
        ]
    );
    let request = &server.requests()[0];
    assert_eq!(
        request.target,
        "/api/v1/namespaces/default/pods?watch=true&resourceVersion=100&labelSelector=app%3Dweb&allowWatchBookmarks=true&timeoutSeconds=300"
    );
}

#[tokio::test]
async fn a_watch_cut_between_events_ends_quietly() {
    let events = event("ADDED", "a", 101);
    let server = Server::start(move |_| Reply::Chunked {
        status: 200,
        chunks: cut(&events, 1000),
        end: End::Cut,
    })
    .await;
    let events = collect(&server).await;
    assert_eq!(events.len(), 1);
    assert!(events[0].is_ok());
}

#[tokio::test]
async fn a_watch_cut_inside_an_event_is_an_error() {
    let events = event("ADDED", "a", 101) + &event("ADDED", "b", 102)[..40];
    let server = Server::start(move |_| Reply::Chunked {
        status: 200,
        chunks: cut(&events, 1000),
        end: End::Cut,
    })
    .await;
    let events = collect(&server).await;
    assert_eq!(events.len(), 2);
    assert!(
        matches!(&events[1], Err(Error::Transport(m)) if m.contains("cut off")),
        "{:?}",
        events[1]
    );
}

#[tokio::test]
async fn a_watch_error_event_is_a_status() {
    let events = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 100 (200)","reason":"Expired","code":410}}"#.to_owned() + "\n";
    let server = Server::start(move |_| Reply::Chunked {
        status: 200,
        chunks: cut(&events, 7),
        end: End::Clean,
    })
    .await;
    let events = collect(&server).await;
    let [Ok(WatchEvent::Error(status))] = &events[..] else { panic!("{events:?}") };
    assert!(Error::Api(status.clone()).is_expired());
}

const EXPIRED: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"The provided continue parameter is too old","reason":"Expired","code":410}"#;

async fn list_error(reply: Reply) -> Error {
    let server = Server::start(move |_| reply.clone()).await;
    let pods = client(&server).lister_watcher::<Pod>(None);
    within(pods.list(&ListOptions::default())).await.unwrap_err()
}

#[tokio::test]
async fn list_errors_keep_the_servers_status() {
    let error = list_error(Reply::json(410, EXPIRED)).await;
    assert!(error.is_expired(), "{error}");
    assert_eq!(error.status().unwrap().message, "The provided continue parameter is too old");

    let error = list_error(
        Reply::json(
            429,
            r#"{"kind":"Status","code":429,"reason":"TooManyRequests","message":"slow down"}"#,
        )
        .with_header("Retry-After", "3"),
    )
    .await;
    assert!(error.is_too_many_requests() && error.is_watch_retriable());
    assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));

    let error = list_error(Reply::Full {
        status: 502,
        headers: vec![],
        body: b"bad gateway from the proxy".to_vec(),
    })
    .await;
    assert_eq!(error.status().unwrap().code, 502);
    assert_eq!(error.status().unwrap().message, "bad gateway from the proxy");

    let error = list_error(Reply::json(
        401,
        r#"{"kind":"Status","code":401,"reason":"Unauthorized","message":"Unauthorized"}"#,
    ))
    .await;
    assert_eq!(error.status().unwrap().code, 401);
}

#[tokio::test]
async fn watch_open_errors_keep_the_servers_status() {
    let server = Server::start(|_| Reply::json(410, EXPIRED)).await;
    let pods = client(&server).lister_watcher::<Pod>(None);
    let Err(error) = within(pods.watch(&watch_options())).await else {
        panic!("expected an error")
    };
    assert!(error.is_expired());
}

#[tokio::test]
async fn a_malformed_page_is_a_decode_error_naming_the_resource() {
    let error =
        list_error(Reply::json(200, r#"{"metadata":{},"items":[{"metadata":{"name":1}}]}"#)).await;
    let Error::Decode(message) = error else { panic!("{error:?}") };
    assert!(message.starts_with("pods list: item 0: invalid type"), "{message}");
}

#[tokio::test]
async fn connection_refused_is_retriable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let client = Client::new(Config::new(format!("http://{addr}").parse().unwrap())).unwrap();
    let pods = client.lister_watcher::<Pod>(None);
    let error = within(pods.list(&ListOptions::default())).await.unwrap_err();
    assert!(matches!(error, Error::ConnectionRefused(_)), "{error:?}");
    assert!(error.is_watch_retriable());
    let Err(error) = within(pods.watch(&watch_options())).await else {
        panic!("expected an error")
    };
    assert!(matches!(error, Error::ConnectionRefused(_)), "{error:?}");
}

const CONFIG_MAP: &str = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"settings","namespace":"apps","resourceVersion":"9"},"data":{"a":"1"}}"#;

#[tokio::test]
async fn typed_requests_use_the_right_method_path_and_body() {
    let server = Server::start(|request| match request.method.as_str() {
        "DELETE" => Reply::json(200, r#"{"kind":"Status","apiVersion":"v1","status":"Success"}"#),
        _ => Reply::json(200, CONFIG_MAP),
    })
    .await;
    let client = client(&server);
    let cm: ConfigMap = within(client.get(Some("apps"), "settings")).await.unwrap();
    assert_eq!(cm.data.as_ref().unwrap()["a"], "1");
    within(client.create(Some("apps"), &cm)).await.unwrap();
    within(client.replace(Some("apps"), "settings", &cm)).await.unwrap();
    let patch = serde_json::json!({"data": {"b": "2"}});
    within(client.patch_merge::<ConfigMap>(Some("apps"), "settings", &patch)).await.unwrap();
    within(client.delete::<ConfigMap>(Some("apps"), "settings")).await.unwrap();

    let requests = server.requests();
    let seen: Vec<(&str, &str, Option<&str>)> = requests
        .iter()
        .map(|r| (r.method.as_str(), r.target.as_str(), r.header("content-type")))
        .collect();
    assert_eq!(
        seen,
        [
            ("GET", "/api/v1/namespaces/apps/configmaps/settings", None),
            ("POST", "/api/v1/namespaces/apps/configmaps", Some("application/json")),
            ("PUT", "/api/v1/namespaces/apps/configmaps/settings", Some("application/json")),
            (
                "PATCH",
                "/api/v1/namespaces/apps/configmaps/settings",
                Some("application/merge-patch+json")
            ),
            ("DELETE", "/api/v1/namespaces/apps/configmaps/settings", None),
        ]
    );
    let created: serde_json::Value = serde_json::from_slice(&requests[1].body).unwrap();
    assert_eq!(created["kind"], "ConfigMap");
    assert_eq!(requests[3].body, br#"{"data":{"b":"2"}}"#);
    assert!(requests.iter().all(|r| r.header("accept") == Some("application/json")));
    assert!(
        requests
            .iter()
            .all(|r| r.header("user-agent").is_some_and(|ua| ua.starts_with("informer-runtime/")))
    );
}

#[tokio::test]
async fn controller_writes_send_their_format_parameters_and_subresource() {
    let server = Server::start(|request| match request.method.as_str() {
        "DELETE" => Reply::json(200, r#"{"kind":"Status","apiVersion":"v1","status":"Success"}"#),
        _ => Reply::json(200, CONFIG_MAP),
    })
    .await;
    let client = client(&server);
    let body = serde_json::json!({"data": {"b": "2"}});
    let ns = Some("apps");
    let apply = PatchParams::apply("ctrl").force();
    within(client.patch::<ConfigMap, _>(ns, "settings", &Patch::Apply(&body), &apply))
        .await
        .unwrap();
    let merge = PatchParams::default().field_manager("ctrl").dry_run();
    within(client.patch::<ConfigMap, _>(ns, "settings", &Patch::Merge(&body), &merge))
        .await
        .unwrap();
    let plain = PatchParams::default();
    within(client.patch::<ConfigMap, _>(ns, "settings", &Patch::Strategic(&body), &plain))
        .await
        .unwrap();
    let ops = serde_json::json!([{"op": "remove", "path": "/data/b"}]);
    within(client.patch_status::<ConfigMap, _>(ns, "settings", &Patch::Json(&ops), &plain))
        .await
        .unwrap();
    let cm: ConfigMap = serde_json::from_str(CONFIG_MAP).unwrap();
    within(client.replace_status(ns, "settings", &cm)).await.unwrap();
    let options = DeleteOptions {
        propagation_policy: Some("Foreground".to_owned()),
        ..DeleteOptions::default()
    };
    within(client.delete_with::<ConfigMap>(ns, "settings", &options)).await.unwrap();

    let requests = server.requests();
    let seen: Vec<(&str, &str, Option<&str>)> = requests
        .iter()
        .map(|r| (r.method.as_str(), r.target.as_str(), r.header("content-type")))
        .collect();
    let path = "/api/v1/namespaces/apps/configmaps/settings";
    assert_eq!(
        seen,
        [
            (
                "PATCH",
                &*format!("{path}?fieldManager=ctrl&force=true"),
                Some("application/apply-patch+yaml")
            ),
            (
                "PATCH",
                &*format!("{path}?fieldManager=ctrl&dryRun=All"),
                Some("application/merge-patch+json")
            ),
            ("PATCH", path, Some("application/strategic-merge-patch+json")),
            ("PATCH", &*format!("{path}/status"), Some("application/json-patch+json")),
            ("PUT", &*format!("{path}/status"), Some("application/json")),
            ("DELETE", path, Some("application/json")),
        ]
    );
    assert_eq!(requests[0].body, br#"{"data":{"b":"2"}}"#);
    assert_eq!(requests[3].body, br#"[{"op":"remove","path":"/data/b"}]"#);
    assert_eq!(requests[5].body, br#"{"propagationPolicy":"Foreground"}"#);
}

#[tokio::test]
async fn typed_request_errors_name_the_request() {
    let server = Server::start(|_| {
        Reply::json(404, r#"{"kind":"Status","code":404,"reason":"NotFound","message":"namespaces \"nope\" not found"}"#)
    })
    .await;
    let client = client(&server);
    let error = within(client.get::<Namespace>(None, "nope")).await.unwrap_err();
    assert!(error.is_not_found());
    assert_eq!(
        error.to_string(),
        "GET /api/v1/namespaces/nope: 404 NotFound: namespaces \"nope\" not found"
    );

    let error = within(client.get::<Pod>(None, "web")).await.unwrap_err();
    assert!(matches!(error, ClientError::NamespaceRequired { .. }), "{error:?}");
    assert_eq!(error.to_string(), "pods is namespaced: the request needs a namespace");
}

#[tokio::test]
async fn the_bearer_token_is_sent_and_never_shown() {
    let server = Server::start(|_| Reply::json(200, CONFIG_MAP)).await;
    let mut config = Config::new(server.url("http"));
    config.auth = Auth::Bearer("s3cr3t-token".to_owned().into());
    let client = Client::new(config).unwrap();
    within(client.get::<ConfigMap>(Some("apps"), "settings")).await.unwrap();
    assert_eq!(server.requests()[0].header("authorization"), Some("Bearer s3cr3t-token"));
    assert!(!format!("{client:?}").contains("s3cr3t"));
}

#[tokio::test]
async fn credentials_in_the_url_are_never_sent_or_shown() {
    let server = Server::start(|_| Reply::json(200, CONFIG_MAP)).await;
    let mut url = server.url("http");
    url.set_username("admin").unwrap();
    url.set_password(Some("hunter2")).unwrap();
    let client = Client::new(Config::new(url)).unwrap();
    within(client.get::<ConfigMap>(Some("apps"), "settings")).await.unwrap();
    assert_eq!(server.requests()[0].header("authorization"), None);
    assert!(!format!("{client:?}").contains("hunter2"));
}

#[tokio::test]
async fn the_client_is_a_list_watch_source() {
    fn source<S: ListWatchSource>(s: &S) -> S {
        s.clone()
    }
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    let server = Server::start(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Reply::json(200, page(&names("x", 1), None))
    })
    .await;
    let client = source(&client(&server));
    let lw = ListWatchSource::lister_watcher::<Pod>(&client, Some("default"));
    within(lw.list(&ListOptions::default())).await.unwrap();
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn after_a_401_the_next_request_uses_the_rotated_token() {
    let dir = std::env::temp_dir().join(format!("client-http-401-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token_file = dir.join("token");
    std::fs::write(&token_file, "old-token\n").unwrap();
    let server = Server::start(|request| match request.header("authorization") {
        Some("Bearer new-token") => Reply::json(200, CONFIG_MAP),
        _ => Reply::json(
            401,
            r#"{"kind":"Status","code":401,"reason":"Unauthorized","message":"Unauthorized"}"#,
        ),
    })
    .await;
    let mut config = Config::new(server.url("http"));
    config.auth = Auth::TokenFile(token_file.clone());
    let client = Client::new(config).unwrap();

    let error = within(client.get::<ConfigMap>(Some("apps"), "settings")).await.unwrap_err();
    assert_eq!(error.status().map(|s| s.code), Some(401));
    std::fs::write(&token_file, "new-token\n").unwrap();
    within(client.get::<ConfigMap>(Some("apps"), "settings")).await.unwrap();
    let sent: Vec<_> =
        server.requests().iter().map(|r| r.header("authorization").map(str::to_owned)).collect();
    assert_eq!(sent, [Some("Bearer old-token".to_owned()), Some("Bearer new-token".to_owned())]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A token from an exec plugin that is due for a refresh (inside the refresh margin) but has
/// not expired is sent at once, while the one refresh that hangs runs beside the requests.
#[tokio::test]
async fn requests_with_a_valid_token_do_not_wait_for_a_hung_exec_plugin() {
    use std::os::unix::fs::PermissionsExt as _;
    use std::time::SystemTime;

    let dir = std::env::temp_dir().join(format!("client-http-exec-hang-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plugin = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kubeconfig/exec-plugin.sh");
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = Server::start(|request| match request.header("authorization") {
        Some("Bearer exec-token-1") => Reply::json(200, CONFIG_MAP),
        _ => Reply::json(
            401,
            r#"{"kind":"Status","code":401,"reason":"Unauthorized","message":"Unauthorized"}"#,
        ),
    })
    .await;

    // The first run's token is valid for 8 s; every later run hangs.
    let expiry = SystemTime::now() + Duration::from_secs(8);
    let exec = ExecConfig::new("client.authentication.k8s.io/v1", plugin.to_string_lossy())
        .env("COUNTER_FILE", dir.join("runs").to_string_lossy())
        .env("EXPIRY", jiff::Timestamp::try_from(expiry).unwrap().to_string())
        .env("MODE_AFTER_FIRST", "hang")
        .env("PID_FILE", dir.join("pid").to_string_lossy());
    // Far beyond the test's deadline: a request that waited for the plugin fails the test.
    let mut config = Config::new(server.url("http")).exec_timeout(Duration::from_secs(300));
    config.auth = Auth::Exec(exec);
    let client = Client::new(config).unwrap();
    // The first request runs the plugin once (building the client runs nothing).
    within(client.get::<ConfigMap>(Some("apps"), "settings")).await.unwrap();
    let cached_at = SystemTime::now();

    // The token is refreshed once half its lifetime has passed: wait for that instant (the
    // behaviour under test starts there; nothing else is waited for).
    let due = cached_at + expiry.duration_since(cached_at).unwrap() / 2;
    tokio::time::sleep(due.duration_since(SystemTime::now()).unwrap_or_default()).await;
    within(client.get::<ConfigMap>(Some("apps"), "settings")).await.unwrap();
    within(async {
        while !dir.join("pid").exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await; // the refresh has started, and hangs
    for _ in 0..3 {
        within(client.get::<ConfigMap>(Some("apps"), "settings")).await.unwrap();
    }
    assert!(SystemTime::now() < expiry, "the test ran too slowly to check anything");
    let sent: Vec<_> =
        server.requests().iter().map(|r| r.header("authorization").map(str::to_owned)).collect();
    assert_eq!(sent, vec![Some("Bearer exec-token-1".to_owned()); 5]);
    let runs = std::fs::read_to_string(dir.join("runs")).unwrap().lines().count();
    assert_eq!(runs, 2, "one refresh at a time");
    std::fs::remove_dir_all(&dir).unwrap();
}

// issue 17: lists have an idle deadline, and what a response may make the client buffer is
// bounded (one object, an error body).

/// The error of `result`, which must be one (without printing a huge success).
fn failed<T, E>(result: Result<T, E>, what: &str) -> E {
    match result {
        Ok(_) => panic!("{what}: succeeded"),
        Err(error) => error,
    }
}

fn bounded_client(server: &Server, idle: Duration, max_object: usize) -> Client {
    let config =
        Config::new(server.url("http")).read_idle_timeout(idle).max_object_size(max_object);
    Client::new(config).unwrap()
}

/// A list whose answer stops coming, at any point, used to hang the reflector forever.
#[tokio::test]
async fn a_list_that_stops_answering_fails_at_the_read_idle_timeout() {
    let idle = Duration::from_millis(300);
    let big = page(&names("stalled", 1000), None);
    let small = page(&names("stalled", 2), None);
    let cases = [
        ("no answer at all", Reply::Hang),
        ("a streamed body that stops", chunked_list(&big[..big.len() / 2], 4096, End::Stall)),
        (
            "a small body shorter than its length",
            Reply::Stalled {
                status: 200,
                length: small.len(),
                body: small.as_bytes()[..small.len() / 2].to_vec(),
            },
        ),
    ];
    for (what, reply) in cases {
        let server = Server::start(move |_| reply.clone()).await;
        let pods = bounded_client(&server, idle, 1 << 20).lister_watcher::<Pod>(None);
        let started = std::time::Instant::now();
        let error = failed(within(pods.list(&ListOptions::default())).await, what);
        let Error::Transport(message) = &error else { panic!("{what}: {error:?}") };
        // The headers' wait names the request, the body's the list.
        assert!(
            message.starts_with("pods list: ") || message.starts_with("GET /api/v1/pods: "),
            "{what}: {message}"
        );
        assert!(
            message.contains("300ms") && message.contains("read_idle_timeout"),
            "{what}: {message}"
        );
        assert!(started.elapsed() >= idle, "{what}: failed before the deadline");
    }
}

#[tokio::test]
async fn a_prefetched_page_that_stops_answering_fails_at_the_read_idle_timeout() {
    let server = Server::start(|request| match request.param("continue").as_deref() {
        None => Reply::json(200, page(&names("a", 2), Some("p2"))),
        _ => Reply::Hang,
    })
    .await;
    let pods =
        bounded_client(&server, Duration::from_millis(300), 1 << 20).lister_watcher::<Pod>(None);
    within(pods.list(&first_page_options())).await.unwrap();
    let error = failed(within(pods.list(&next_page_options("p2"))).await, "a failed page");
    assert!(matches!(&error, Error::Transport(m) if m.contains("read_idle_timeout")), "{error:?}");
}

/// A pod of about `size` bytes of JSON, named `name`.
fn pod_of_size(name: &str, size: usize) -> String {
    let padding = "x".repeat(size);
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"default","resourceVersion":"5","annotations":{{"pad":"{padding}"}}}}}}"#
    )
}

#[tokio::test]
async fn a_list_item_over_max_object_size_fails_the_list_naming_the_limit() {
    let items = [pod_of_size("small", 100), pod_of_size("huge", 10_000)].join(",");
    let body = format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"9"}},"items":[{items}]}}"#
    );
    for reply in [Reply::json(200, body.clone()), chunked_list(&body, 512, End::Clean)] {
        let server = Server::start(move |_| reply.clone()).await;
        let pods =
            bounded_client(&server, Duration::from_secs(10), 4096).lister_watcher::<Pod>(None);
        let error = failed(within(pods.list(&ListOptions::default())).await, "a failed list");
        let Error::Decode(message) = &error else { panic!("{error:?}") };
        assert!(message.starts_with("pods list: item 1"), "{message}");
        assert!(message.contains("4096 bytes") && message.contains("max_object_size"), "{message}");
    }
}

#[tokio::test]
async fn a_watch_event_over_max_object_size_is_an_error_naming_the_limit() {
    let huge = pod_of_size("huge", 10_000);
    let events = event("ADDED", "a", 101)
        + r#"{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","#
        + &huge[1..]
        + "}\n";
    for size in [100, 1 << 20] {
        let chunks = cut(&events, size);
        let server = Server::start(move |_| Reply::Chunked {
            status: 200,
            chunks: chunks.clone(),
            end: End::Clean,
        })
        .await;
        let pods = bounded_client(&server, Duration::from_secs(10), 4096)
            .lister_watcher::<Pod>(Some("default"));
        let watch = within(pods.watch(&watch_options())).await.unwrap();
        let events: Vec<_> = within(watch.collect::<Vec<_>>()).await;
        assert!(events[0].is_ok(), "{:?}", events[0]);
        let Some(Err(Error::Decode(message))) = events.get(1) else { panic!("{events:?}") };
        assert!(message.contains("line 2"), "{message}");
        assert!(message.contains("4096 bytes") && message.contains("max_object_size"), "{message}");
    }
}

#[tokio::test]
async fn a_typed_response_over_max_object_size_is_an_error_naming_the_limit() {
    let server = Server::start(|_| Reply::json(200, pod_of_size("huge", 10_000))).await;
    let client = bounded_client(&server, Duration::from_secs(10), 4096);
    let error = failed(within(client.get::<Pod>(Some("default"), "huge")).await, "a failed get");
    let message = error.to_string();
    assert!(message.starts_with("GET /api/v1/namespaces/default/pods/huge: "), "{message}");
    assert!(message.contains("4096 bytes") && message.contains("max_object_size"), "{message}");
}

/// An error answer's body is read for its `Status` only up to a bound: a proxy's endless (or
/// stalled) error page used to be read whole, or forever.
#[tokio::test]
async fn a_huge_error_body_is_read_only_in_part() {
    // 1 MiB of text and then nothing: only the bound ends the read before the idle deadline.
    let chunks = vec![vec![b'x'; 16 * 1024]; 64];
    let reply = Reply::Chunked { status: 503, chunks, end: End::Stall };
    let error = list_error(reply).await;
    let status = error.status().unwrap();
    assert_eq!((status.code, status.reason.as_str()), (503, "ServiceUnavailable"));
    assert!(
        status.message.starts_with("xxxx") && status.message.len() < 2048,
        "{}",
        status.message
    );

    // A real Status at the start of an oversized body still classifies the answer.
    let mut body = r#"{"kind":"Status","code":429,"reason":"TooManyRequests","message":"slow down"}"#
        .as_bytes()
        .to_vec();
    body.resize(4 * 1024 * 1024, b' ');
    let error = list_error(Reply::json(429, body).with_header("Retry-After", "2")).await;
    assert!(error.is_too_many_requests(), "{error}");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
}

/// A prefetched page is held whole only up to 8 MiB: a larger one is dropped, fetched again
/// when asked for (and streamed), and the rest of its list is not prefetched.
#[tokio::test]
async fn a_page_too_large_to_prefetch_is_fetched_again_when_asked_for() {
    // Nine pods of 1 MiB each: 9 MiB.
    let big: Vec<String> = (0..9).map(|i| pod_of_size(&format!("big-{i}"), 1 << 20)).collect();
    let second = format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"100","continue":"p3"}},"items":[{}]}}"#,
        big.join(",")
    );
    let server = Server::start(move |request| match request.param("continue").as_deref() {
        None => Reply::json(200, page(&names("a", 2), Some("p2"))),
        Some("p2") => Reply::json(200, second.clone()),
        _ => Reply::json(200, page(&names("c", 1), None)),
    })
    .await;
    let pods = client(&server).lister_watcher::<Pod>(None);
    within(pods.list(&first_page_options())).await.unwrap();
    server.wait_for_requests(2).await;
    let listed = within(pods.list(&next_page_options("p2"))).await.unwrap();
    assert_eq!(listed.items.len(), 9);
    assert_eq!(listed.continue_token.as_deref(), Some("p3"));
    let asked: Vec<Option<String>> =
        server.requests().iter().map(|r| r.param("continue")).collect();
    assert_eq!(asked, [None, Some("p2".to_owned()), Some("p2".to_owned())], "no prefetch of p3");
    within(pods.list(&next_page_options("p3"))).await.unwrap();
    assert_eq!(server.requests().len(), 4);
}
