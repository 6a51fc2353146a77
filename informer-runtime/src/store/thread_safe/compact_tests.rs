//! Tests of the compact storage mode: what it reads back, the bound on its recent objects, the
//! old objects it gives back, and that every query answers as the decoded mode's does. The
//! behaviour tests of `tests.rs` run in both modes as well.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::tests::{assert_indices_consistent, in_mode};
use super::*;
use crate::store::storage::Slot;
use crate::testing::objects::{holds, labeled_pod, pod, secret};

fn compact(recent: usize) -> Indexer<Pod> {
    in_mode(
        Indexer::<Pod>::with_namespace_index().with_label_index(),
        StorageMode::Compact { recent },
    )
}

fn recent_len<K: Object>(store: &Indexer<K>) -> usize {
    match &*store.cache.inner.read() {
        Inner::Compact(table) => table.storage.recent_len(),
        Inner::Decoded(_) => 0,
    }
}

/// Every pod of the crate's recorded fixtures (kind's and the every-field pod).
fn fixture_pods() -> Vec<Pod> {
    let pods: Vec<Pod> = crate::test_fixtures::recorded_pods()
        .into_iter()
        .map(|(name, body)| serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{name}: {e}")))
        .collect();
    assert!(pods.len() >= 5, "the pod fixtures are there");
    pods
}

/// Every byte a compact store holds: its entries' compact forms, its dictionary and its
/// decoders' buffers.
fn held_bytes<K: Object>(store: &Indexer<K>) -> Vec<u8> {
    match &*store.cache.inner.read() {
        Inner::Compact(table) => {
            let mut held = table.storage.held_bytes();
            for entry in table.items.values() {
                if let Slot::Encoded(encoded) = entry {
                    held.extend_from_slice(encoded.bytes());
                }
            }
            held
        }
        Inner::Decoded(_) => unreachable!("a compact store"),
    }
}

/// Replaces the compact form of `key` with a truncated copy, as corrupted memory would.
fn corrupt<K: Object>(store: &Indexer<K>, key: &str) {
    match &mut *store.cache.inner.write() {
        Inner::Compact(table) => {
            let Some(Slot::Encoded(encoded)) = table.items.get_mut(key) else {
                panic!("{key} is held encoded")
            };
            let bytes = encoded.bytes();
            let truncated = bytes[..bytes.len() / 2].to_vec().into_boxed_slice();
            *encoded = Arc::new(encoded.with_bytes(truncated));
        }
        Inner::Decoded(_) => unreachable!("a compact store"),
    }
}

/// What a test's thread logs, as text.
#[derive(Clone, Default)]
struct Logs(Arc<parking_lot::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_deleted_secrets_data_is_in_no_bytes_the_cache_holds() {
    let store = in_mode(
        Indexer::<Secret>::with_namespace_index().with_label_index(),
        StorageMode::Compact { recent: 4 },
    );
    let value = |i: usize| format!("hunter2-{i:04}-s3cr3t");
    for i in 0..300 {
        store.add(secret("vault", &format!("db-{i}"), &value(i)).into());
    }
    // Reads of objects not among the recent ones decode, through the pooled buffers.
    for i in (0..300).step_by(7) {
        assert!(store.get_by_key(&format!("vault/db-{i}")).is_some());
    }
    // A rotation: each secret replaced by one with a new value, then every one deleted.
    for i in 0..300 {
        store.update(secret("vault", &format!("db-{i}"), &format!("rotated-{i:04}")).into());
    }
    for i in 0..300 {
        assert!(store.delete_key(&format!("vault/db-{i}")).is_some());
    }
    store.add(secret("vault", "kept", "still-here").into());
    assert_eq!(*store.get_by_key("vault/kept").unwrap(), secret("vault", "kept", "still-here"));
    let held = held_bytes(&store);
    for i in 0..300 {
        assert!(!holds(&held, &value(i)), "secret {i}'s first value is still held");
        assert!(
            !holds(&held, &format!("rotated-{i:04}")),
            "secret {i}'s rotated value is still held"
        );
    }
}

#[test]
fn a_compact_form_that_does_not_decode_is_an_error_the_caller_sees_and_is_counted() {
    let logs = Logs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer({
            let logs = logs.clone();
            move || logs.clone()
        })
        .with_ansi(false)
        .finish();
    let _subscriber = tracing::subscriber::set_default(subscriber);

    let store = compact(0);
    store.add(labeled_pod("ns", "a", &[("app", "web-s3cr3t")]).into());
    store.add(pod("ns", "b", "1").into());
    corrupt(&store, "ns/a");
    assert_eq!(store.decode_failures(), 0);

    let error = store.try_get_by_key("ns/a").expect_err("a corrupt object is an error");
    assert_eq!(error.key, ObjectKey::from("ns/a"));
    let message = error.to_string();
    assert!(message.contains("ns/a") && message.contains("compact form"), "{message}");
    assert_eq!(store.decode_failures(), 1);
    assert!(store.get_by_key("ns/a").is_none(), "get_by_key reads it as absent");
    assert_eq!(store.decode_failures(), 2, "every failed decode counts");
    assert!(store.contains_key("ns/a"), "still listed under its key");
    let b = store.try_get_by_key("ns/b").unwrap().expect("ns/b reads");
    assert_eq!(b.metadata.name.as_deref(), Some("b"));
    assert!(store.try_get_by_key("ns/c").unwrap().is_none(), "absent is not an error");
    assert_eq!(store.decode_failures(), 2);

    let logged = String::from_utf8_lossy(&logs.0.lock()).into_owned();
    assert_eq!(logged.matches("could not be decoded").count(), 2, "{logged}");
    assert!(logged.contains("ns/a"), "the log names the key: {logged}");
    assert!(!logged.contains("s3cr3t"), "the log quotes no data: {logged}");

    // Its next change replaces it.
    store.add(pod("ns", "a", "2").into());
    assert_eq!(
        store.try_get_by_key("ns/a").unwrap().unwrap().metadata.resource_version.as_deref(),
        Some("2")
    );
    assert_indices_consistent(&store);
}

#[test]
fn reads_equal_what_was_written() {
    let pods = fixture_pods();
    for recent in [0, 4] {
        let store = compact(recent);
        for p in &pods {
            store.add(Arc::new(p.clone()));
        }
        with_table!(&*store.cache.inner.read(), |table| {
            for entry in table.items.values() {
                let slot: &dyn std::any::Any = entry;
                assert!(
                    matches!(slot.downcast_ref::<Slot<Pod>>(), Some(Slot::Encoded(_))),
                    "every fixture pod is held encoded"
                );
            }
        });
        for p in &pods {
            let key = ObjectKey::of(p);
            let read = store.get_by_key(key.as_str()).unwrap_or_else(|| panic!("{key} reads"));
            assert_eq!(*read, *p, "{key} reads back as written");
        }
        let mut listed: Vec<Pod> = store.list().iter().map(|p| Pod::clone(p)).collect();
        let mut written: Vec<Pod> = pods.clone();
        let by_key = |p: &Pod| ObjectKey::of(p);
        listed.sort_by_key(by_key);
        written.sort_by_key(by_key);
        written.dedup_by_key(|p| ObjectKey::of(p));
        assert_eq!(listed, written);
        assert_indices_consistent(&store);
    }
}

#[test]
fn the_recent_objects_stay_within_their_bound() {
    for recent in [0, 1, 7, 100, 300, 1000] {
        let store = compact(recent);
        let mut rng = fastrand::Rng::with_seed(recent as u64);
        for i in 0..600 {
            store.add(pod("ns", &format!("p{i}"), "1").into());
            assert!(recent_len(&store) <= recent, "{} > {recent} after an add", recent_len(&store));
        }
        for _ in 0..3000 {
            // Mostly a hot set of 50, sometimes any object, now and then a whole namespace.
            let key = match rng.usize(..100) {
                0..=9 => format!("ns/p{}", rng.usize(..600)),
                10 => {
                    assert_eq!(store.list().len(), 600);
                    continue;
                }
                _ => format!("ns/p{}", rng.usize(..50)),
            };
            assert!(store.get_by_key(&key).is_some());
            assert!(recent_len(&store) <= recent, "{} > {recent} after reads", recent_len(&store));
        }
        store.delete_key("ns/p1");
        store.replace([pod("ns", "only", "1").into()]);
        assert!(recent_len(&store) <= recent.min(1));
    }
}

#[test]
fn a_recent_object_is_read_without_decoding() {
    let store = compact(8);
    let written = Arc::new(pod("ns", "a", "1"));
    store.add(Arc::clone(&written));
    let read = store.get_by_key("ns/a").unwrap();
    assert!(Arc::ptr_eq(&read, &written), "the newest object seeds the recent objects");
    assert!(Arc::ptr_eq(&store.get_by_key("ns/a").unwrap(), &read));

    let uncached = compact(0);
    uncached.add(Arc::clone(&written));
    let (first, second) =
        (uncached.get_by_key("ns/a").unwrap(), uncached.get_by_key("ns/a").unwrap());
    assert!(!Arc::ptr_eq(&first, &second), "without recent objects each read decodes");
    assert_eq!(first, second);
    assert_eq!(recent_len(&uncached), 0);
}

#[test]
fn writes_return_the_object_they_replace() {
    for recent in [0, 8] {
        let store = compact(recent);
        store.add(labeled_pod("ns", "a", &[("app", "web")]).into());
        // Push `a` out of the recent objects, where there are any.
        for i in 0..40 {
            store.add(pod("ns", &format!("fill{i}"), "1").into());
        }
        let mut v2 = labeled_pod("ns", "a", &[("app", "db")]);
        v2.metadata.resource_version = Some("2".to_owned());
        let old = store.update(v2.clone().into()).expect("an old object");
        assert_eq!(*old, labeled_pod("ns", "a", &[("app", "web")]), "recent = {recent}");
        assert_eq!(*store.get_by_key("ns/a").unwrap(), v2, "never the old version once replaced");
        assert!(store.by_index(NAMESPACE_INDEX, "ns").unwrap().contains(&Arc::new(v2.clone())));
        let web = LabelSelector::parse("app=web").unwrap();
        assert!(store.select(None, &web).is_empty());
        let gone = store.delete_key("ns/a").expect("the deleted object");
        assert_eq!(*gone, v2);
        assert!(store.get_by_key("ns/a").is_none());
        assert_indices_consistent(&store);
    }
}

#[test]
fn storing_the_stored_object_again_keeps_its_entry() {
    // A resync hands the cache's own object back to it.
    let store = compact(8);
    store.add(pod("ns", "a", "1").into());
    let read = store.get_by_key("ns/a").unwrap();
    let entry = |store: &Indexer<Pod>| match &*store.cache.inner.read() {
        Inner::Compact(table) => table.items["ns/a"].clone(),
        Inner::Decoded(_) => unreachable!("a compact store"),
    };
    let before = entry(&store);
    let old = store.update(Arc::clone(&read)).unwrap();
    assert!(Arc::ptr_eq(&old, &read));
    let after = entry(&store);
    assert!(matches!((before, after), (Slot::Encoded(a), Slot::Encoded(b)) if Arc::ptr_eq(&a, &b)));
    assert_indices_consistent(&store);
}

#[test]
fn known_objects_answer_without_decoding_where_they_can() {
    let store = compact(8);
    store.add(pod("ns", "a", "1").into());
    let known: &dyn KnownObjects<Pod> = &store.cache();
    assert!(known.contains_key("ns/a"));
    assert!(!known.contains_key("ns/b"));
    let same = known.unchanged(&pod("ns", "a", "1")).expect("a recent object at that version");
    assert!(Arc::ptr_eq(&same, &store.get_by_key("ns/a").unwrap()));
    assert!(known.unchanged(&pod("ns", "a", "2")).is_none(), "another version");
    assert!(known.unchanged(&pod("ns", "b", "1")).is_none());

    // Not among the recent objects: decoding one to drop the listed one would save nothing.
    let cold = compact(0);
    cold.add(pod("ns", "a", "1").into());
    assert!(KnownObjects::unchanged(&cold.cache(), &pod("ns", "a", "1")).is_none());
    assert_eq!(
        KnownObjects::get_by_key(&cold.cache(), "ns/a").unwrap().metadata.name.as_deref(),
        Some("a")
    );
}

#[test]
fn switching_modes_keeps_objects_and_indices() {
    let store = Indexer::<Pod>::with_namespace_index().with_label_index();
    store
        .add_indexer("app", |p: &Pod| {
            p.metadata.labels.as_ref().and_then(|l| l.get("app")).cloned().into_iter().collect()
        })
        .unwrap();
    for i in 0..20 {
        store.add(
            labeled_pod(["a", "b"][i % 2], &format!("p{i}"), &[("app", ["x", "y", "z"][i % 3])])
                .into(),
        );
    }
    let snapshot = |store: &Indexer<Pod>| {
        let mut all: Vec<Pod> = store.list().iter().map(|p| Pod::clone(p)).collect();
        all.sort_by_key(ObjectKey::of);
        (
            all,
            store.index_keys("app", "x").unwrap(),
            store.index_keys(NAMESPACE_INDEX, "a").unwrap(),
        )
    };
    let decoded = snapshot(&store);
    let store = store.with_compact_storage(4);
    assert_eq!(store.storage_mode(), StorageMode::Compact { recent: 4 });
    assert_indices_consistent(&store);
    assert_eq!(snapshot(&store), decoded);
    store.set_storage_mode(StorageMode::Decoded);
    assert_indices_consistent(&store);
    assert_eq!(snapshot(&store), decoded);
    assert!(format!("{:?}", store.cache()).contains("storage: Decoded"));
}

// A type whose serde does not round-trip: `required` is never written, and cannot be read
// without. The "cannot happen" of a compact store, provoked.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Lossy {
    metadata: ObjectMeta,
    #[serde(skip_serializing)]
    required: u32,
}
crate::impl_resource!(
    Lossy,
    group = "example.com",
    version = "v1",
    kind = "Lossy",
    plural = "lossies",
    namespaced
);

// A type whose `Serialize` refuses: JSON map keys must be strings.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Unencodable {
    metadata: ObjectMeta,
    #[serde(default)]
    by_pair: BTreeMap<(u8, u8), u8>,
}
crate::impl_resource!(
    Unencodable,
    group = "example.com",
    version = "v1",
    kind = "Unencodable",
    plural = "unencodables",
    namespaced
);

fn meta(name: &str, app: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: Some("ns".to_owned()),
        name: Some(name.to_owned()),
        labels: Some([("app".to_owned(), app.to_owned())].into()),
        ..ObjectMeta::default()
    }
}

#[test]
fn an_object_that_cannot_be_decoded_reads_as_absent_and_leaves_no_index_entry() {
    let store = in_mode(
        Indexer::<Lossy>::with_namespace_index().with_label_index(),
        StorageMode::Compact { recent: 0 },
    );
    store.add(Lossy { metadata: meta("a", "web"), required: 1 }.into());
    assert!(store.contains_key("ns/a"), "stored");
    assert!(store.get_by_key("ns/a").is_none(), "unreadable: absent, no panic");
    assert!(store.list().is_empty());
    assert!(store.by_index(NAMESPACE_INDEX, "ns").unwrap().is_empty());
    assert!(store.select(None, &LabelSelector::parse("app=web").unwrap()).is_empty());
    assert_eq!(store.index_keys(NAMESPACE_INDEX, "ns").unwrap(), [ObjectKey::from("ns/a")]);

    // Its old state is unknown: an update reports none, and takes it out of every index.
    let old = store.update(Lossy { metadata: meta("a", "db"), required: 2 }.into());
    assert!(old.is_none());
    let cache = store.cache();
    let lister = crate::lister::Lister::new(cache);
    assert!(lister.list(&LabelSelector::parse("app=web").unwrap()).is_empty());
    with_table!(&*store.cache.inner.read(), |table| {
        assert_eq!(table.label_keys_of("app", "db"), [ObjectKey::from("ns/a")]);
        assert!(table.label_keys_of("app", "web").is_empty());
    });
    assert_eq!(store.index_values(NAMESPACE_INDEX).unwrap(), ["ns"]);
    assert!(store.delete_key("ns/a").is_none(), "deleted, but unreadable");
    assert!(!store.contains_key("ns/a"));
    assert!(store.index_values(NAMESPACE_INDEX).unwrap().is_empty());
    with_table!(&*store.cache.inner.read(), |table| assert!(
        table.label_keys_of("app", "db").is_empty()
    ));
}

#[test]
fn an_object_that_cannot_be_encoded_is_kept_decoded() {
    let store = in_mode(
        Indexer::<Unencodable>::with_namespace_index().with_label_index(),
        StorageMode::Compact { recent: 0 },
    );
    let obj = Arc::new(Unencodable { metadata: meta("a", "web"), by_pair: [((1, 2), 3)].into() });
    store.add(Arc::clone(&obj));
    assert!(Arc::ptr_eq(&store.get_by_key("ns/a").unwrap(), &obj));
    assert_eq!(store.select(None, &LabelSelector::parse("app=web").unwrap()).len(), 1);
    assert!(Arc::ptr_eq(&store.delete_key("ns/a").unwrap(), &obj));
}

// The same random changes, applied to a decoded and a compact store, must give the same answer
// to every query. `INFORMER_COMPACT_SEED=0x…` replays a failure.

/// Keys and contents of `objs`, sorted by key, duplicates kept.
fn contents(objs: &[Arc<Pod>]) -> Vec<(String, Pod)> {
    let mut out: Vec<(String, Pod)> =
        objs.iter().map(|o| (ObjectKey::of(&**o).to_string(), Pod::clone(o))).collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn random_labeled_pod(rng: &mut fastrand::Rng, step: usize) -> Pod {
    const KEYS: [&str; 4] = ["app", "tier", "env", "x.io/role"];
    const VALUES: [&str; 4] = ["1", "2", "3", ""];
    let ns = ["a", "b", "c"][rng.usize(..3)];
    let mut p = pod(ns, &format!("p{}", rng.usize(..40)), &step.to_string());
    if rng.usize(..8) > 0 {
        let mut labels = BTreeMap::new();
        for key in KEYS {
            if rng.bool() {
                labels.insert(key.to_owned(), VALUES[rng.usize(..4)].to_owned());
            }
        }
        p.metadata.labels = Some(labels);
    }
    p
}

fn random_selector(rng: &mut fastrand::Rng) -> LabelSelector {
    let key = ["app", "tier", "env", "x.io/role", "none"];
    let parts: Vec<String> = (0..rng.usize(0..4))
        .map(|_| {
            let k = key[rng.usize(..key.len())];
            let v = ["1", "2", "3", ""][rng.usize(..4)];
            match rng.usize(..8) {
                0 => format!("{k}={v}"),
                1 => format!("{k}!={v}"),
                2 => format!("{k} in (1,2)"),
                3 => format!("{k} notin (3)"),
                4 => k.to_owned(),
                5 => format!("!{k}"),
                6 => format!("{k}>1"),
                _ => format!("{k}<3"),
            }
        })
        .collect();
    LabelSelector::parse(&parts.join(",")).unwrap_or_else(|e| panic!("{parts:?}: {e}"))
}

fn label_values(p: &Pod) -> Vec<String> {
    p.metadata.labels.iter().flat_map(|l| l.values().cloned()).collect()
}

fn assert_same_answers(decoded: &Indexer<Pod>, compact: &Indexer<Pod>, rng: &mut fastrand::Rng) {
    assert_eq!(contents(&decoded.list()), contents(&compact.list()), "list");
    let mut keys = decoded.list_keys();
    let mut compact_keys = compact.list_keys();
    keys.sort();
    compact_keys.sort();
    assert_eq!(keys, compact_keys, "keys");
    for key in keys.iter().take(10) {
        assert_eq!(decoded.get_by_key(key.as_str()), compact.get_by_key(key.as_str()), "{key}");
    }
    for ns in ["a", "b", "c", "none"] {
        for index in [NAMESPACE_INDEX, "values"] {
            let (d, c) =
                (decoded.by_index(index, ns).unwrap(), compact.by_index(index, ns).unwrap());
            assert_eq!(contents(&d), contents(&c), "by_index {index} {ns}");
            assert_eq!(decoded.index_keys(index, ns), compact.index_keys(index, ns));
        }
    }
    for value in ["1", "2", "3", ""] {
        let (d, c) = (
            decoded.by_index("values", value).unwrap(),
            compact.by_index("values", value).unwrap(),
        );
        assert_eq!(contents(&d), contents(&c), "by_index values {value:?}");
    }
    for index in [NAMESPACE_INDEX, "values"] {
        let (mut d, mut c) =
            (decoded.index_values(index).unwrap(), compact.index_values(index).unwrap());
        d.sort();
        c.sort();
        assert_eq!(d, c, "index_values {index}");
    }
    for probe in decoded.list().iter().take(5) {
        let (d, c) =
            (decoded.index("values", probe).unwrap(), compact.index("values", probe).unwrap());
        assert_eq!(contents(&d), contents(&c), "index by probe {probe:?}");
    }
    for _ in 0..8 {
        let selector = random_selector(rng);
        for ns in [None, Some("a"), Some("b"), Some("none")] {
            let (d, c) = (decoded.select(ns, &selector), compact.select(ns, &selector));
            assert_eq!(contents(&d), contents(&c), "select {ns:?} {selector}");
        }
    }
}

/// Prints the seed of a failing randomised test, on the way out of its panic.
struct Report(u64);

impl Drop for Report {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("replay with INFORMER_COMPACT_SEED={:#x}", self.0);
        }
    }
}

#[test]
fn compact_queries_answer_as_decoded_ones_through_random_changes() {
    let seed = std::env::var("INFORMER_COMPACT_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or_else(|| fastrand::u64(..));
    let _report = Report(seed);
    let mut rng = fastrand::Rng::with_seed(seed);
    let make = |mode| {
        let store = in_mode(Indexer::<Pod>::with_namespace_index().with_label_index(), mode);
        store.add_indexer("values", label_values).unwrap();
        store
    };
    let decoded = make(StorageMode::Decoded);
    let compact = make(StorageMode::Compact { recent: rng.usize(0..12) });
    for step in 0..300 {
        match rng.usize(..20) {
            0 => {
                let pods: Vec<Pod> =
                    (0..rng.usize(..30)).map(|_| random_labeled_pod(&mut rng, step)).collect();
                decoded.replace(pods.iter().cloned().map(Arc::new));
                compact.replace(pods.into_iter().map(Arc::new));
            }
            1..=5 => {
                let key = format!("{}/p{}", ["a", "b", "c"][rng.usize(..3)], rng.usize(..40));
                let (d, c) = (decoded.delete_key(&key), compact.delete_key(&key));
                assert_eq!(d, c, "the deleted object of {key}");
            }
            6..=7 => {
                // A resync: the store's own object back into it.
                if let Some(key) = decoded.list_keys().first() {
                    let (d, c) =
                        (decoded.get_by_key(key.as_str()), compact.get_by_key(key.as_str()));
                    let (d, c) =
                        (d.and_then(|d| decoded.update(d)), c.and_then(|c| compact.update(c)));
                    assert_eq!(d, c, "the old object of a resync");
                }
            }
            _ => {
                let p = random_labeled_pod(&mut rng, step);
                let (d, c) = (decoded.add(Arc::new(p.clone())), compact.add(Arc::new(p)));
                assert_eq!(d, c, "the old object of an add");
            }
        }
        assert_indices_consistent(&compact);
        assert_same_answers(&decoded, &compact, &mut rng);
    }
    let names: BTreeSet<String> =
        compact.list().iter().filter_map(|p| p.metadata.name.clone()).collect();
    assert!(names.len() <= 40);
}

/// Where the cache's entry for `key` keeps its compact form.
fn form_address<K: Object>(store: &Indexer<K>, key: &str) -> *const u8 {
    match &*store.cache.inner.read() {
        Inner::Compact(table) => match table.items.get(key) {
            Some(Slot::Encoded(encoded)) => encoded.bytes().as_ptr(),
            _ => panic!("{key} is held encoded"),
        },
        Inner::Decoded(_) => unreachable!("a compact store"),
    }
}

// A listed object is encoded once (issue 33): the reflector stages each item of a list with the
// cache's codec and hands the form over with the object it decodes from it; the cache stores
// that very form. Any other object, such as the one a transform made in its place, is encoded
// by the cache itself, and reads back as what was stored.
#[test]
fn a_prepared_form_is_stored_as_it_is_and_only_for_its_own_object() {
    let store = compact(0);
    let codec = store.compact_codec().expect("a compact store has a codec");
    let listed = labeled_pod("default", "web-0", &[("app", "web")]);
    let form = codec.encode(&listed).unwrap();
    let staged_at = form.as_ptr();
    let obj = Arc::new(codec.decode(&form).unwrap());
    codec.prepare(&obj, Arc::new(Encoded::new(&*obj, form)));
    store.add(Arc::clone(&obj));
    assert_eq!(form_address(&store, "default/web-0"), staged_at, "the staged form, not a new one");
    assert_eq!(*store.get_by_key("default/web-0").unwrap(), listed);

    // A transform's object in place of the prepared one: the cache encodes it.
    let other = labeled_pod("default", "web-1", &[("app", "web")]);
    let form = codec.encode(&other).unwrap();
    let staged_at = form.as_ptr();
    let decoded = Arc::new(codec.decode(&form).unwrap());
    codec.prepare(&decoded, Arc::new(Encoded::new(&*decoded, form)));
    let mut transformed = (*decoded).clone();
    transformed.metadata.annotations = Some([("t".to_owned(), "x".to_owned())].into());
    store.add(Arc::new(transformed.clone()));
    assert_ne!(form_address(&store, "default/web-1"), staged_at);
    assert_eq!(*store.get_by_key("default/web-1").unwrap(), transformed);
    // A compact store without a codec of another's: the decoded mode has none.
    assert!(in_mode(Indexer::<Pod>::default(), StorageMode::Decoded).compact_codec().is_none());
}

// A list's items do not join the recent objects (issue 33): 20,000 of them would flush the
// recent set to keep the list's last few, and pin memory among the list's freed objects. A
// watched change does, and so does a read.
#[test]
fn listed_objects_do_not_join_the_recent_ones_until_read() {
    let store = compact(64);
    for i in 0..100 {
        let pod = labeled_pod("default", &format!("web-{i}"), &[("app", "web")]);
        store.insert_listed(ObjectKey::of(&pod), Arc::new(pod));
    }
    assert_eq!(recent_len(&store), 0, "no listed object is kept decoded");
    assert!(store.get_by_key("default/web-7").is_some());
    assert_eq!(recent_len(&store), 1, "a read keeps it");
    let changed = labeled_pod("default", "web-8", &[("app", "db")]);
    store.add(Arc::new(changed));
    assert_eq!(recent_len(&store), 2, "a watched change joins them");
}

// A controller's worker reads each changed object back once, some changes after its handler
// was told of it. With `quick_cache`'s default split (3 % for the queue new objects enter), an
// object 64 writes behind was decoded again on every such read once the cache was full; and
// after lists of more objects than the recent ones, read again and again, the keys `quick_cache`
// remembered from them took the queue's places one by one, until none was left.
#[test]
fn a_worker_behind_its_handler_reads_each_changed_object_decoded() {
    let recent = 1024;
    let behind = recent / 8;
    let store = compact(recent);
    let scanned = recent + recent / 4;
    for i in 0..scanned {
        let listed = pod("listed", &format!("pod-{i}"), "1");
        store.insert_listed(ObjectKey::of(&listed), Arc::new(listed));
    }
    for _ in 0..10 {
        let listed = store.by_index(crate::store::NAMESPACE_INDEX, "listed").unwrap();
        assert_eq!(listed.len(), scanned);
    }
    let mut written = Vec::new();
    let mut decoded_again = Vec::new();
    for i in 0..4 * recent {
        let changed = Arc::new(pod("ns", &format!("pod-{i}"), "2"));
        store.add(Arc::clone(&changed));
        written.push(changed);
        if let Some(j) = i.checked_sub(behind) {
            let read = store.get_by_key(&format!("ns/pod-{j}")).unwrap();
            if !Arc::ptr_eq(&read, &written[j]) {
                decoded_again.push(j);
            }
        }
    }
    assert!(decoded_again.is_empty(), "decoded again, {behind} writes behind: {decoded_again:?}");
    assert!(recent_len(&store) <= recent);
}

// The other half of the recent objects keeps those read again and again while lists of whole
// namespaces, each object read once, pass through the queue, and so do changed objects a
// worker reads back.
#[test]
fn objects_read_again_and_again_stay_decoded_through_scans_and_changes() {
    let recent = 1024;
    let store = compact(recent);
    for i in 0..10_000 {
        let pod = pod(&format!("ns-{}", i % 5), &format!("pod-{i}"), "1");
        store.insert_listed(ObjectKey::of(&pod), Arc::new(pod));
    }
    let key = |i: usize| format!("ns-{}/pod-{i}", i % 5);
    // Other objects, each read once, fill the half for objects read again (while it has room,
    // new objects go there) and then the queue.
    for i in 5_000..5_000 + recent {
        store.get_by_key(&key(i)).unwrap();
    }
    let working_set: Vec<String> = (0..recent / 8).map(|i| key(i * 7)).collect();
    let read_all = || working_set.iter().map(|key| store.get_by_key(key).unwrap()).collect();
    // Read twice while in the queue: moved to the other half when the queue pushes them out.
    let _: Vec<Arc<Pod>> = read_all();
    let first: Vec<Arc<Pod>> = read_all();
    for round in 0..20 {
        let scanned = store.by_index(crate::store::NAMESPACE_INDEX, &format!("ns-{}", round % 5));
        assert_eq!(scanned.unwrap().len(), 2_000);
        for i in 0..64 {
            let changed = Arc::new(pod("changed", &format!("pod-{round}-{i}"), "1"));
            store.add(Arc::clone(&changed));
            let read = store.get_by_key(&format!("changed/pod-{round}-{i}")).unwrap();
            assert!(Arc::ptr_eq(&read, &changed), "a changed object read back at once");
        }
        let again: Vec<Arc<Pod>> = read_all();
        let decoded_again = first.iter().zip(&again).filter(|(a, b)| !Arc::ptr_eq(a, b)).count();
        assert_eq!(decoded_again, 0, "after scan {round}");
    }
}
