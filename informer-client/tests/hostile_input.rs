//! Hostile input over HTTP (issue 17): a real informer (`SharedIndexInformer` over `Client`)
//! against a scripted server that answers a watch or a relist with something broken, huge,
//! malformed or endless. For every case, the error must reach the watch-error handler, the cache
//! must keep its last good state meanwhile, nothing may panic, and once the server answers well
//! again the informer must recover on its own (rewatch or relist with backoff) and apply it.
//!
//! The cases run over plain HTTP/1.1 and over TLS with HTTP/2, where a body cut short is a
//! reset stream and a stalled one leaves its connection serving other streams.
//!
//! Everything runs on one thread with a 2 MiB stack (and so does tokio's blocking pool, where
//! large list pages are decoded), so input nested 100,000 deep proves that no decoder recurses
//! once per level.

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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use client_support::{DEADLINE, End, Reply, Request, Server};
use informer_client::{Client, Config};
use informer_runtime::reflector::{BackoffConfig, ReflectorConfig};
use informer_runtime::{HandlerFuncs, LabelSelector, SharedInformerFactory, StorageMode};
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;

/// The stack of every thread the cases run on: a normal thread's.
const STACK: usize = 2 * 1024 * 1024;

/// How deep the nested cases nest.
const DEPTH: usize = 100_000;

/// The client's limits in these tests: small enough for the cases to cross quickly.
const IDLE: Duration = Duration::from_secs(1);
const MAX_OBJECT: usize = 1024 * 1024;

/// How the scripted server speaks: what kube-apiserver speaks to a client over plain HTTP, or
/// over TLS (where a cut body is a reset stream, and a stall leaves the connection serving).
#[derive(Clone, Copy, Debug)]
enum Transport {
    Http1,
    Http2,
}

/// A server configuration for `127.0.0.1` and the PEM of the CA that signed it.
fn tls() -> (rustls::ServerConfig, Vec<u8>) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    let leaf = leaf.signed_by(&key, &ca).unwrap();
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key.into())
        .unwrap();
    (config, ca.pem().into_bytes())
}

impl Case {
    /// What the error says over `transport`. Over HTTP/2 a body cut short is a reset stream,
    /// which the client reports as such ("stream error received: unexpected internal error
    /// encountered"), without the "(the last event was cut off)" it adds to a connection
    /// closed inside an event.
    ///
    /// A compact cache's reflector keeps each list item as the server sent it and decodes it
    /// when the cache takes it, so an item of the wrong type fails the list there, with an
    /// error that names the item by its key and quotes none of its data.
    fn expect_in(&self, storage: StorageMode, transport: Transport) -> &'static str {
        match (storage, transport, self.expect) {
            (_, Transport::Http2, "cut off") => "stream error received",
            (StorageMode::Compact { .. }, _, "pods list: item 1: invalid type: sequence") => {
                "pods list: the item default/d: its JSON does not decode: a value of a type it \
                 does not take"
            }
            (_, _, expect) => expect,
        }
    }
}

/// Where the hostile answer goes.
#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Every watch until recovery: the informer lists (well), then watches into it.
    Watch,
    /// Every relist until recovery: the first list is good, its watch ends with a 410, and the
    /// relists that follow get it.
    List,
}

struct Case {
    name: &'static str,
    phase: Phase,
    /// What the server answers, given the request (continue tokens matter to some).
    reply: fn(&Request) -> Reply,
    /// What the error at the watch-error handler says.
    expect: &'static str,
}

fn pod(name: &str, rv: u32) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"default","resourceVersion":"{rv}"}},"spec":{{"containers":[{{"name":"c","image":"nginx"}}]}}}}"#
    )
}

/// A pod list at `rv` of `items` (raw JSON), with `next` as its continue token.
fn list(rv: u32, items: &[String], next: Option<&str>) -> String {
    let token = next.map(|t| format!(r#","continue":"{t}""#)).unwrap_or_default();
    format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"{token}}},"items":[{}]}}"#,
        items.join(",")
    )
}

fn good_list() -> String {
    list(100, &[pod("a", 50), pod("b", 60)], None)
}

fn recovered_list() -> String {
    list(200, &[pod("a", 50), pod("b", 60), pod("c", 150)], None)
}

/// A watch body of `lines` (each given its newline), ended by `end`.
fn watch_of(lines: &[&[u8]], end: End) -> Reply {
    let chunks = lines.iter().map(|line| [*line, b"\n"].concat()).collect();
    Reply::Chunked { status: 200, chunks, end }
}

fn stalled() -> Reply {
    Reply::Chunked { status: 200, chunks: vec![], end: End::Stall }
}

fn event(kind: &str, object: &str) -> Vec<u8> {
    format!(r#"{{"type":"{kind}","object":{object}}}"#).into_bytes()
}

fn pod_object(name: &str, rv: u32) -> String {
    format!(r#"{{"kind":"Pod","apiVersion":"v1",{}"#, &pod(name, rv)[1..])
}

fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// 1 MiB of text in an error answer, then nothing, ever.
fn endless_error(status: u16) -> Reply {
    Reply::Chunked { status, chunks: vec![vec![b'x'; 64 * 1024]; 16], end: End::Stall }
}

const STATUS_500: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"etcd leader changed","reason":"InternalError","code":500}"#;

#[allow(clippy::too_many_lines, reason = "a table, one entry per case")]
fn cases() -> Vec<Case> {
    vec![
        // Watches.
        Case {
            name: "a watch line cut off by the connection",
            phase: Phase::Watch,
            reply: |_| Reply::Chunked {
                status: 200,
                chunks: vec![event("ADDED", &pod_object("x", 101))[..40].to_vec()],
                end: End::Cut,
            },
            expect: "cut off",
        },
        Case {
            name: "a watch body ending inside a line",
            phase: Phase::Watch,
            reply: |_| Reply::Chunked {
                status: 200,
                chunks: vec![event("ADDED", &pod_object("x", 101))[..40].to_vec()],
                end: End::Clean,
            },
            expect: "stream ended inside line 1",
        },
        Case {
            name: "a watch line that is not JSON",
            phase: Phase::Watch,
            reply: |_| watch_of(&[b"{\"type\":\"ADDED\",\"object\":{nope}}"], End::Clean),
            expect: "line 1 (byte 26): not a watch event: key must be a string",
        },
        Case {
            name: "an unknown event type",
            phase: Phase::Watch,
            reply: |_| watch_of(&[&event("SURPRISE", &pod_object("x", 101))], End::Clean),
            expect: "unknown watch event type \"SURPRISE\"",
        },
        Case {
            name: "an object of another kind",
            phase: Phase::Watch,
            reply: |_| {
                let config_map = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"default","resourceVersion":"101"}}"#;
                watch_of(&[&event("ADDED", config_map)], End::Clean)
            },
            expect: "expected v1/Pod, got v1/ConfigMap",
        },
        Case {
            name: "an object of another version",
            phase: Phase::Watch,
            reply: |_| {
                let object =
                    pod_object("x", 101).replace(r#""apiVersion":"v1""#, r#""apiVersion":"v2""#);
                watch_of(&[&event("MODIFIED", &object)], End::Clean)
            },
            expect: "expected v1/Pod, got v2/Pod",
        },
        Case {
            name: "a Status as an event's object",
            phase: Phase::Watch,
            reply: |_| watch_of(&[&event("ADDED", STATUS_500)], End::Clean),
            expect: "expected v1/Pod, got v1/Status",
        },
        Case {
            name: "a Status where an event was expected",
            phase: Phase::Watch,
            reply: |_| watch_of(&[STATUS_500.as_bytes()], End::Clean),
            expect: "500 InternalError: etcd leader changed",
        },
        Case {
            name: "an ERROR event whose object is not a Status",
            phase: Phase::Watch,
            reply: |_| watch_of(&[&event("ERROR", &pod_object("x", 101))], End::Clean),
            expect: "ERROR event whose object is not a Status",
        },
        Case {
            name: "a huge watch event",
            phase: Phase::Watch,
            reply: |_| {
                let huge = pod_object("x", 101).replace(
                    r#""name":"x""#,
                    &format!(
                        r#""name":"x","annotations":{{"pad":"{}"}}"#,
                        "p".repeat(2 * MAX_OBJECT)
                    ),
                );
                watch_of(&[&event("ADDED", &huge)], End::Clean)
            },
            expect: "larger than the maximum object size, 1048576 bytes",
        },
        Case {
            name: "a watch event nested 100,000 deep",
            phase: Phase::Watch,
            reply: |_| {
                let deep = pod_object("x", 101).replace(
                    r#""name":"x""#,
                    &format!(r#""name":"x","labels":{{"l":{}}}"#, nested(DEPTH)),
                );
                watch_of(&[&event("ADDED", &deep)], End::Clean)
            },
            expect: "invalid type: sequence, expected a string",
        },
        Case {
            name: "an event that is an array nested 100,000 deep",
            phase: Phase::Watch,
            reply: |_| watch_of(&[&event("ADDED", &nested(DEPTH))], End::Clean),
            expect: "object: invalid type: sequence",
        },
        Case {
            name: "invalid UTF-8 in a watch event",
            phase: Phase::Watch,
            reply: |_| {
                let line = event("ADDED", &pod_object("x\u{1}", 101));
                let line: Vec<u8> = line.iter().map(|&b| if b == 1 { 0xff } else { b }).collect();
                watch_of(&[&line], End::Clean)
            },
            expect: "not a watch event",
        },
        Case {
            name: "a watch that never answers",
            phase: Phase::Watch,
            reply: |_| Reply::Hang,
            expect: "no response within 1s (Config::read_idle_timeout)",
        },
        Case {
            name: "an endless error answer to a watch",
            phase: Phase::Watch,
            reply: |_| endless_error(503),
            expect: "503 ServiceUnavailable: xxxx",
        },
        // Relists.
        Case {
            name: "invalid JSON in a list page",
            phase: Phase::List,
            reply: |_| Reply::json(200, list(300, &[pod("a", 50), "nope".to_owned()], None)),
            expect: "pods list: item 1: expected ident",
        },
        Case {
            name: "invalid UTF-8 in a list page",
            phase: Phase::List,
            reply: |_| {
                let body = list(300, &[pod("a\u{1}", 50)], None);
                Reply::json(
                    200,
                    body.bytes().map(|b| if b == 1 { 0xff } else { b }).collect::<Vec<_>>(),
                )
            },
            expect: "pods list: item 0",
        },
        Case {
            name: "a list item nested 100,000 deep",
            phase: Phase::List,
            reply: |_| {
                let deep = pod("d", 70).replace(
                    r#""name":"d""#,
                    &format!(r#""name":"d","labels":{{"l":{}}}"#, nested(DEPTH)),
                );
                Reply::json(200, list(300, &[pod("a", 50), deep], None))
            },
            expect: "pods list: item 1: invalid type: sequence",
        },
        Case {
            name: "a list page cut off",
            phase: Phase::List,
            reply: |_| {
                let body = list(300, &vec![pod("p", 1); 100], None);
                Reply::Chunked {
                    status: 200,
                    chunks: vec![body.as_bytes()[..body.len() / 2].to_vec()],
                    end: End::Cut,
                }
            },
            expect: "failed to list pods: transport error",
        },
        Case {
            name: "a list page that stalls",
            phase: Phase::List,
            reply: |_| {
                let body = list(300, &vec![pod("p", 1); 100], None);
                Reply::Chunked {
                    status: 200,
                    chunks: vec![body.as_bytes()[..body.len() / 2].to_vec()],
                    end: End::Stall,
                }
            },
            expect: "pods list: the server sent nothing for 1s (Config::read_idle_timeout)",
        },
        Case {
            name: "a list that never answers",
            phase: Phase::List,
            reply: |_| Reply::Hang,
            expect: "no response within 1s",
        },
        Case {
            name: "a huge list item",
            phase: Phase::List,
            reply: |_| {
                let huge = pod("h", 70).replace(
                    r#""name":"h""#,
                    &format!(
                        r#""name":"h","annotations":{{"pad":"{}"}}"#,
                        "p".repeat(2 * MAX_OBJECT)
                    ),
                );
                Reply::json(200, list(300, &[pod("a", 50), huge], None))
            },
            expect: "is larger than the maximum object size, 1048576 bytes (Config::max_object_size)",
        },
        Case {
            name: "a Status answered with 200",
            phase: Phase::List,
            reply: |_| Reply::json(200, STATUS_500),
            expect: "a Status instead of a PodList (InternalError: etcd leader changed)",
        },
        Case {
            name: "a list of another kind",
            phase: Phase::List,
            reply: |_| {
                Reply::json(
                    200,
                    r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"300"},"items":[]}"#,
                )
            },
            expect: "a ConfigMapList instead of a PodList",
        },
        Case {
            name: "an endless error answer to a list",
            phase: Phase::List,
            reply: |_| endless_error(502),
            expect: "failed to list pods: api error: 502 Unknown: xxxx",
        },
        Case {
            name: "a continue token handed back unchanged",
            phase: Phase::List,
            reply: |_| Reply::json(200, list(300, &[pod("a", 50)], Some("again"))),
            expect: "continue token",
        },
        Case {
            name: "continue tokens in a cycle",
            phase: Phase::List,
            reply: |request| {
                let next = match request.param("continue").as_deref() {
                    None | Some("three") => "one",
                    Some("one") => "two",
                    Some(_) => "three",
                };
                Reply::json(200, list(300, &[pod("a", 50)], Some(next)))
            },
            expect: "continue token",
        },
    ]
}

/// What the server of one case has done and is told.
#[derive(Default)]
struct Script {
    /// Answer well from now on.
    recovered: AtomicBool,
    lists: AtomicUsize,
}

impl Script {
    fn answer(&self, case: &Case, request: &Request) -> Reply {
        let recovered = self.recovered.load(Ordering::SeqCst);
        if request.param("watch").is_some() {
            return match (recovered, case.phase) {
                (true, _) => stalled(),
                (false, Phase::Watch) => (case.reply)(request),
                // History compacted: the informer must relist, into the hostile answer.
                (false, Phase::List) => {
                    let expired = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 100 (200)","reason":"Expired","code":410}}"#;
                    watch_of(&[expired.as_bytes()], End::Clean)
                }
            };
        }
        let first = self.lists.fetch_add(1, Ordering::SeqCst) == 0;
        match (recovered, case.phase) {
            (true, _) => Reply::json(200, recovered_list()),
            (false, Phase::Watch) => Reply::json(200, good_list()),
            (false, Phase::List) if first => Reply::json(200, good_list()),
            (false, Phase::List) => (case.reply)(request),
        }
    }
}

/// The cached pods as `name@rv`, sorted.
fn cached(factory: &SharedInformerFactory<Client>) -> Vec<String> {
    let mut pods: Vec<String> = factory
        .lister::<Pod>()
        .list(&LabelSelector::everything())
        .iter()
        .map(|p| {
            let meta = &p.metadata;
            format!(
                "{}@{}",
                meta.name.as_deref().unwrap_or(""),
                meta.resource_version.as_deref().unwrap_or("")
            )
        })
        .collect();
    pods.sort();
    pods
}

/// Polls `cond` until it holds, under the test deadline; `what` says what was awaited.
async fn until(what: &str, mut cond: impl FnMut() -> bool) -> Result<(), String> {
    let waited = tokio::time::timeout(DEADLINE, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    waited.map_err(|_| format!("{what}: not within {DEADLINE:?}"))
}

/// Runs one case against an informer whose cache is held in `storage`; what went wrong, if
/// anything.
async fn run_case(case: Case, storage: StorageMode, transport: Transport) -> Result<(), String> {
    let name = case.name;
    let script = Arc::new(Script::default());
    let case = Arc::new(case);
    let answer = {
        let (script, case) = (Arc::clone(&script), Arc::clone(&case));
        move |request: &Request| script.answer(&case, request)
    };
    let (server, scheme, ca) = match transport {
        Transport::Http1 => (Server::start(answer).await, "http", None),
        Transport::Http2 => {
            let (config, ca) = tls();
            (Server::start_http2(config, answer).await, "https", Some(ca))
        }
    };
    let mut config =
        Config::new(server.url(scheme)).read_idle_timeout(IDLE).max_object_size(MAX_OBJECT);
    config.root_certs_pem = ca;
    let fast = BackoffConfig {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(100),
        ..BackoffConfig::default()
    };
    let mut factory = SharedInformerFactory::builder(Client::new(config).unwrap())
        .reflector_config(ReflectorConfig::default().backoff(fast));
    if let StorageMode::Compact { recent } = storage {
        factory = factory.compact_storage(recent);
    }
    let factory = factory.build();
    let informer = factory.informer::<Pod>();
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    informer
        .set_watch_error_handler({
            let errors = Arc::clone(&errors);
            move |error| errors.lock().push(error.to_string())
        })
        .unwrap();
    let deletes = Arc::new(AtomicUsize::new(0));
    informer
        .add_event_handler(HandlerFuncs::new().on_delete({
            let deletes = Arc::clone(&deletes);
            move |_| {
                deletes.fetch_add(1, Ordering::SeqCst);
            }
        }))
        .unwrap();
    factory.start();
    let outcome = async {
        if !factory.wait_for_cache_sync(DEADLINE).await.all_synced() {
            return Err("no sync".to_owned());
        }
        let expect = case.expect_in(storage, transport);
        let reported = until(&format!("an error saying {expect:?} at the handler"), || {
            errors.lock().iter().any(|e| e.contains(expect))
        })
        .await;
        if let Err(missing) = reported {
            let seen: Vec<String> =
                errors.lock().iter().take(3).map(|e| e.chars().take(300).collect()).collect();
            return Err(format!("{missing}; the handler got {seen:#?}"));
        }
        // Meanwhile, the cache kept what the last good answer said, and no handler heard
        // otherwise.
        let held = cached(&factory);
        if held != ["a@50", "b@60"] {
            return Err(format!("the cache did not hold its last good state: {held:?}"));
        }
        // The server answers well again: the informer finds out by itself.
        script.recovered.store(true, Ordering::SeqCst);
        until("recovery", || cached(&factory) == ["a@50", "b@60", "c@150"]).await?;
        let http2 = matches!(transport, Transport::Http2);
        if server.requests().iter().any(|r| r.http2 != http2) {
            return Err(format!("a request came over another protocol than {transport:?}"));
        }
        match deletes.load(Ordering::SeqCst) {
            0 => Ok(()),
            n => Err(format!("handlers heard of {n} deletes")),
        }
    }
    .await;
    // Shut down whatever happened: a stuck informer fails here.
    if tokio::time::timeout(DEADLINE, factory.shutdown()).await.is_err() {
        return Err(format!("{name} ({storage:?}): the factory did not shut down"));
    }
    outcome.map_err(|e| format!("{name} ({storage:?}, {transport:?}): {e}"))
}

/// Runs every case over `transport`, on one thread with a normal stack; returns the failures,
/// and fails if anything panicked.
fn run_all(transport: Transport) -> Vec<String> {
    static PANICS: AtomicUsize = AtomicUsize::new(0);
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
    let cases = std::thread::Builder::new()
        .name(format!("hostile-input-{transport:?}"))
        .stack_size(STACK)
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .thread_stack_size(STACK)
                .build()
                .unwrap();
            // Concurrently: each case waits on backoffs and deadlines far more than it works.
            // The list cases run against a compact cache too, which holds a list in compact
            // form until it is complete (issue 18): a broken list must change nothing there
            // either.
            let runs =
                cases().into_iter().map(|case| run_case(case, StorageMode::Decoded, transport));
            let compact = cases()
                .into_iter()
                .filter(|case| matches!(case.phase, Phase::List))
                .map(|case| run_case(case, StorageMode::Compact { recent: 1 }, transport));
            let outcomes = runtime.block_on(futures::future::join_all(runs.chain(compact)));
            outcomes.into_iter().filter_map(Result::err).collect::<Vec<String>>()
        })
        .unwrap()
        .join();
    let failed = cases.expect("the cases' thread ran to its end");
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "something panicked (see above)");
    failed
}

#[test]
fn hostile_input_reaches_the_error_handler_and_the_informer_recovers() {
    let failed = run_all(Transport::Http1);
    assert!(failed.is_empty(), "{} cases failed:\n{}", failed.len(), failed.join("\n"));
}

#[test]
fn hostile_input_over_http2_reaches_the_error_handler_and_the_informer_recovers() {
    let failed = run_all(Transport::Http2);
    assert!(failed.is_empty(), "{} cases failed:\n{}", failed.len(), failed.join("\n"));
}
