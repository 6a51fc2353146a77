use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::*;
use crate::store::{IndexFn, NAMESPACE_INDEX, namespace_index};
use crate::testing::objects::{labeled_pod, namespace, pod};

/// The modes the behaviour tests run in: the default, compact without recent objects (every read
/// decodes), and compact with a few (reads mix decoded and recent objects).
const MODES: [StorageMode; 3] =
    [StorageMode::Decoded, StorageMode::Compact { recent: 0 }, StorageMode::Compact { recent: 8 }];

/// Runs `test` in each of [`MODES`], naming the mode of a failure.
pub(super) fn each_mode(test: impl Fn(StorageMode)) {
    each_mode_of(&MODES, test);
}

/// As [`each_mode`], with each mode on a thread of its own: for the long randomised tests, which
/// would otherwise be the last test of the binary to finish by far.
fn each_mode_at_once(test: impl Fn(StorageMode) + Sync) {
    std::thread::scope(|scope| {
        for mode in MODES {
            let test = &test;
            scope.spawn(move || each_mode_of(&[mode], test));
        }
    });
}

fn each_mode_of(modes: &[StorageMode], test: impl Fn(StorageMode)) {
    struct Report(StorageMode);
    impl Drop for Report {
        fn drop(&mut self) {
            if std::thread::panicking() {
                eprintln!("in storage mode {:?}", self.0);
            }
        }
    }
    for &mode in modes {
        let _report = Report(mode);
        test(mode);
    }
}

/// `store`, converted to `mode`.
pub(super) fn in_mode<K: Object>(store: Indexer<K>, mode: StorageMode) -> Indexer<K> {
    store.set_storage_mode(mode);
    assert_eq!(store.storage_mode(), mode);
    store
}

fn names(objs: &[Arc<Pod>]) -> BTreeSet<String> {
    objs.iter().map(|o| o.metadata.name.clone().unwrap_or_default()).collect()
}

fn label_index(label: &'static str) -> IndexFn<Pod> {
    Arc::new(move |p: &Pod| {
        p.metadata.labels.as_ref().and_then(|l| l.get(label)).cloned().into_iter().collect()
    })
}

// Port of client-go's TestCache (store_test.go): add, update, delete, list, get, replace.
#[test]
fn cache_add_update_delete_list_get_replace() {
    each_mode(|mode| {
        let store = in_mode(Indexer::<Pod>::default(), mode);
        store.add(pod("ns", "a", "1").into());
        store.add(pod("ns", "b", "1").into());
        store.add(pod("ns", "c", "1").into());
        let old = store.update(pod("ns", "a", "2").into());
        assert_eq!(old.unwrap().metadata.resource_version.as_deref(), Some("1"));
        assert_eq!(store.len(), 3);
        assert_eq!(
            store.get_by_key("ns/a").unwrap().metadata.resource_version.as_deref(),
            Some("2"),
            "add and update are the same operation"
        );
        assert!(store.delete(&pod("ns", "b", "")).is_some());
        assert!(store.delete_key("ns/zzz").is_none(), "deleting a missing key is a no-op");
        assert_eq!(names(&store.list()), ["a", "c"].map(String::from).into());
        assert!(store.get(&pod("ns", "c", "")).is_some());
        assert!(store.get(&pod("other", "c", "")).is_none());
        let mut keys = store.list_keys();
        keys.sort();
        assert_eq!(keys, vec![ObjectKey::from("ns/a"), ObjectKey::from("ns/c")]);

        store.replace([pod("ns", "foo", "3").into(), pod("ns", "bar", "3").into()]);
        assert_eq!(names(&store.list()), ["bar", "foo"].map(String::from).into());
    });
}

#[test]
fn reads_share_the_stored_allocation() {
    let store = Indexer::<Pod>::default();
    let obj = Arc::new(pod("ns", "a", "1"));
    store.add(Arc::clone(&obj));
    assert!(Arc::ptr_eq(&obj, &store.get_by_key("ns/a").unwrap()));
}

// Port of client-go's TestIndex (thread_safe_store_test.go / index_test.go): objects by the values
// of a probe object, with a multi-valued index function and deduplication.
#[test]
fn index_by_probe_object_deduplicates() {
    each_mode(|mode| {
        let by_label_values: IndexFn<Pod> = Arc::new(|p: &Pod| {
            p.metadata.labels.as_ref().map(|l| l.values().cloned().collect()).unwrap_or_default()
        });
        let store =
            in_mode(Indexer::new(Indexers::from([("values".to_owned(), by_label_values)])), mode);
        store.add(labeled_pod("ns", "one", &[("a", "x"), ("b", "y")]).into());
        store.add(labeled_pod("ns", "two", &[("a", "y")]).into());
        store.add(labeled_pod("ns", "three", &[("a", "z")]).into());

        let probe = labeled_pod("ns", "probe", &[("a", "x"), ("b", "y")]);
        let found = store.index("values", &probe).unwrap();
        assert_eq!(found.len(), 2, "`one` matches both values and comes back once");
        assert_eq!(names(&found), ["one", "two"].map(String::from).into());
        assert!(
            matches!(store.index("nope", &probe), Err(IndexError::NotFound(name)) if name == "nope")
        );
    });
}

// Port of client-go's TestGetIndexFuncValues: the values with at least one member.
#[test]
fn index_values_lists_values_with_members() {
    each_mode(|mode| {
        let store =
            in_mode(Indexer::new(Indexers::from([("app".to_owned(), label_index("app"))])), mode);
        store.add(labeled_pod("ns", "a", &[("app", "web")]).into());
        store.add(labeled_pod("ns", "b", &[("app", "db")]).into());
        store.add(labeled_pod("ns", "c", &[("app", "web")]).into());
        let mut values = store.index_values("app").unwrap();
        values.sort();
        assert_eq!(values, ["db", "web"]);
        assert!(store.index_values("missing").is_err());
    });
}

// Port of client-go's TestMultiIndexKeys: keys by value are sorted; updates move keys between
// values; an unknown value is an empty answer.
#[test]
fn multi_index_keys() {
    each_mode(|mode| {
        let by_users: IndexFn<Pod> = Arc::new(|p: &Pod| {
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("users"))
                .map(|u| u.split('.').map(String::from).collect())
                .unwrap_or_default()
        });
        let store = in_mode(Indexer::new(Indexers::from([("byUser".to_owned(), by_users)])), mode);
        store.add(labeled_pod("", "one", &[("users", "ernie.bert")]).into());
        store.add(labeled_pod("", "two", &[("users", "bert.oscar")]).into());
        store.add(labeled_pod("", "tre", &[("users", "ernie.elmo")]).into());

        let keys = |v: &str| store.index_keys("byUser", v).unwrap();
        assert_eq!(keys("ernie"), [ObjectKey::from("one"), ObjectKey::from("tre")]);
        assert_eq!(keys("bert"), [ObjectKey::from("one"), ObjectKey::from("two")]);
        assert_eq!(keys("oscar"), [ObjectKey::from("two")]);
        assert!(keys("nobody").is_empty());

        store.update(labeled_pod("", "one", &[("users", "ernie")]).into());
        assert_eq!(keys("bert"), [ObjectKey::from("two")]);
        store.delete_key("tre");
        assert_eq!(keys("elmo"), Vec::<ObjectKey>::new());
        assert_eq!(keys("ernie"), [ObjectKey::from("one")]);
    });
}

// Port of client-go's TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex.
#[test]
fn delete_removes_empty_sets_from_index() {
    each_mode(|mode| {
        let store =
            in_mode(Indexer::new(Indexers::from([("app".to_owned(), label_index("app"))])), mode);
        store.add(labeled_pod("ns", "a", &[("app", "web")]).into());
        store.delete_key("ns/a");
        assert!(store.index_values("app").unwrap().is_empty(), "the empty set for `web` is gone");
        store.add(labeled_pod("ns", "a", &[("app", "web")]).into());
        store.update(labeled_pod("ns", "a", &[("app", "db")]).into());
        assert_eq!(store.index_values("app").unwrap(), ["db"]);
    });
}

// Port of client-go's TestThreadSafeStoreIndexingFunctionsWithMultipleValues.
#[test]
fn indexing_functions_with_multiple_values() {
    each_mode(|mode| {
        let split: IndexFn<Pod> = Arc::new(|p: &Pod| {
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("v"))
                .map(|v| v.split(',').map(String::from).collect())
                .unwrap_or_default()
        });
        let store = in_mode(Indexer::new(Indexers::from([("v".to_owned(), split)])), mode);
        let keys = |v: &str| store.index_keys("v", v).unwrap();
        store.add(labeled_pod("", "k", &[("v", "a.b")]).into());
        store.update(labeled_pod("", "k", &[("v", "a.b")]).into());
        store.update(labeled_pod("", "k", &[("v", "a,b")]).into());
        assert_eq!(keys("a"), [ObjectKey::from("k")]);
        assert_eq!(keys("b"), [ObjectKey::from("k")]);
        assert!(keys("a.b").is_empty());
        store.update(labeled_pod("", "k", &[("v", "b,c")]).into());
        assert!(keys("a").is_empty());
        assert_eq!(keys("c"), [ObjectKey::from("k")]);
        store.update(labeled_pod("", "k", &[("v", "c")]).into());
        assert!(keys("b").is_empty());
        let mut values = store.index_values("v").unwrap();
        values.sort();
        assert_eq!(values, ["c"]);
    });
}

#[test]
fn added_indexer_indexes_existing_objects_and_rejects_clashes() {
    each_mode(|mode| {
        let store = in_mode(Indexer::<Pod>::default(), mode);
        store.add(labeled_pod("ns", "a", &[("app", "web")]).into());
        store.add_indexers(Indexers::from([("app".to_owned(), label_index("app"))])).unwrap();
        assert_eq!(store.index_keys("app", "web").unwrap(), [ObjectKey::from("ns/a")]);

        let clash = store.add_indexers(Indexers::from([
            ("app".to_owned(), label_index("app")),
            ("other".to_owned(), label_index("other")),
        ]));
        assert_eq!(clash, Err(IndexError::Conflict("app".to_owned())));
        assert!(!store.index_names().contains(&"other".to_owned()), "nothing added on a clash");
    });
}

#[test]
fn replace_rebuilds_every_index() {
    each_mode(|mode| {
        let store = in_mode(Indexer::<Pod>::with_namespace_index(), mode);
        store.add(pod("a", "x", "").into());
        store.replace([pod("b", "y", "").into()]);
        assert!(store.by_index(NAMESPACE_INDEX, "a").unwrap().is_empty());
        assert_eq!(names(&store.by_index(NAMESPACE_INDEX, "b").unwrap()), ["y".to_owned()].into());
        assert_eq!(store.index_values(NAMESPACE_INDEX).unwrap(), ["b"]);
    });
}

#[test]
fn cluster_scoped_objects_index_under_empty_namespace() {
    each_mode(|mode| {
        let store = in_mode(
            Indexer::new(Indexers::from([(NAMESPACE_INDEX.to_owned(), namespace_index())])),
            mode,
        );
        store.add(namespace("kube-system").into());
        assert_eq!(
            store.index_keys(NAMESPACE_INDEX, "").unwrap(),
            [ObjectKey::from("kube-system")]
        );
    });
}

// The label index and selector queries. The reference answer is a scan of every object with the
// full selector; the indexed query must give the same objects, each once.

const NAMESPACES: [&str; 3] = ["a", "b", "c"];
const LABEL_KEYS: [&str; 4] = ["app", "tier", "env", "x.io/role"];
const LABEL_VALUES: [&str; 4] = ["1", "2", "3", ""];

fn random_pod(rng: &mut fastrand::Rng) -> Pod {
    let ns = NAMESPACES[rng.usize(..NAMESPACES.len())];
    let name = format!("p{}", rng.usize(..40));
    let mut p = pod(ns, &name, &rng.u32(..).to_string());
    // Unset labels and an empty map must both read as "no labels".
    if rng.usize(..8) > 0 {
        let mut labels = std::collections::BTreeMap::new();
        for key in LABEL_KEYS {
            if rng.bool() {
                let value = LABEL_VALUES[rng.usize(..LABEL_VALUES.len())];
                labels.insert(key.to_owned(), value.to_owned());
            }
        }
        p.metadata.labels = Some(labels);
    }
    p
}

fn random_requirement(rng: &mut fastrand::Rng) -> String {
    let key = LABEL_KEYS[rng.usize(..LABEL_KEYS.len())];
    let mut values: Vec<&str> =
        LABEL_VALUES.iter().copied().filter(|v| !v.is_empty() && rng.bool()).collect();
    if values.is_empty() {
        values.push("1");
    }
    let value = LABEL_VALUES[rng.usize(..LABEL_VALUES.len())];
    let number = ["0", "1", "2", "3"][rng.usize(..4)];
    match rng.usize(..9) {
        0 => format!("{key}={value}"),
        1 => format!("{key}=={value}"),
        2 => format!("{key}!={value}"),
        3 => format!("{key} in ({})", values.join(",")),
        4 => format!("{key} notin ({})", values.join(",")),
        5 => key.to_owned(),
        6 => format!("!{key}"),
        7 => format!("{key}>{number}"),
        _ => format!("{key}<{number}"),
    }
}

fn random_selector(rng: &mut fastrand::Rng) -> LabelSelector {
    let requirements: Vec<String> = (0..rng.usize(0..4)).map(|_| random_requirement(rng)).collect();
    let text = requirements.join(",");
    LabelSelector::parse(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

/// Sorted keys, duplicates kept: a key listed twice is a bug.
fn keys_of(objs: &[Arc<Pod>]) -> Vec<String> {
    let mut keys: Vec<String> = objs.iter().map(|o| ObjectKey::of(&**o).to_string()).collect();
    keys.sort();
    keys
}

fn scan(store: &Indexer<Pod>, namespace: Option<&str>, selector: &LabelSelector) -> Vec<String> {
    let all = store.list();
    let matching: Vec<Arc<Pod>> = all
        .into_iter()
        .filter(|o| namespace.is_none_or(|ns| o.metadata.namespace.as_deref() == Some(ns)))
        .filter(|o| selector.matches_opt(o.metadata.labels.as_ref()))
        .collect();
    keys_of(&matching)
}

/// Checks every index and the label index against the stored entries.
pub(super) fn assert_indices_consistent(store: &Indexer<Pod>) {
    with_table!(&*store.cache.inner.read(), |table| table.assert_consistent());
}

fn has_label_index(store: &Indexer<Pod>) -> bool {
    with_table!(&*store.cache.inner.read(), |table| table.labels.is_some())
}

/// Checks that each of `objs` is the object stored under its key now, not an earlier version:
/// the stored allocation itself in the decoded mode, an equal object in the compact mode.
fn assert_current(store: &Indexer<Pod>, objs: &[Arc<Pod>]) {
    let decoded = store.storage_mode() == StorageMode::Decoded;
    for obj in objs {
        let key = ObjectKey::of(&**obj);
        let stored = store.get_by_key(key.as_str());
        let current =
            stored.is_some_and(|s| if decoded { Arc::ptr_eq(&s, obj) } else { s == *obj });
        assert!(current, "{key}: a stale object");
    }
}

fn assert_queries_match_scan(store: &Indexer<Pod>, selectors: &[LabelSelector]) {
    for selector in selectors {
        let everywhere = store.select(None, selector);
        assert_eq!(keys_of(&everywhere), scan(store, None, selector), "selector {selector}");
        assert_current(store, &everywhere);
        for ns in NAMESPACES.iter().copied().chain(["none"]) {
            let found = store.select(Some(ns), selector);
            assert_eq!(keys_of(&found), scan(store, Some(ns), selector), "{ns}: {selector}");
            assert_current(store, &found);
        }
    }
}

/// The values of every label, duplicates kept: an index function with several values per
/// object, some repeated.
fn label_values(p: &Pod) -> Vec<String> {
    p.metadata.labels.iter().flat_map(|l| l.values().cloned()).collect()
}

/// Checks every index against the stored objects, and that the index queries answer with the
/// stored objects themselves.
fn assert_index_queries_current(store: &Indexer<Pod>) {
    assert_indices_consistent(store);
    for ns in NAMESPACES.iter().copied().chain(["none"]) {
        let found = store.by_index(NAMESPACE_INDEX, ns).unwrap();
        assert_eq!(keys_of(&found), scan(store, Some(ns), &LabelSelector::everything()), "{ns}");
        assert_current(store, &found);
        let keys: Vec<String> = store
            .index_keys(NAMESPACE_INDEX, ns)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(keys, keys_of(&found), "{ns}");
    }
    let all = store.list();
    for probe in &all {
        let found = store.index("values", probe).unwrap();
        let values = label_values(probe);
        let expected: Vec<Arc<Pod>> = all
            .iter()
            .filter(|o| label_values(o).iter().any(|v| values.contains(v)))
            .cloned()
            .collect();
        assert_eq!(keys_of(&found), keys_of(&expected), "objects sharing a value with {probe:?}");
        assert_current(store, &found);
    }
}

#[test]
fn label_index_queries_match_a_scan_through_random_changes() {
    each_mode_at_once(|mode| {
        let mut rng = fastrand::Rng::with_seed(0x01ab_e1ed);
        let store = in_mode(Indexer::<Pod>::with_namespace_index().with_label_index(), mode);
        store.add_indexer("values", label_values).unwrap();
        let mut fixed: Vec<LabelSelector> = [
            "",
            "app",
            "!app",
            "app=1",
            "app=",
            "app in (1,2),tier",
            "app notin (1),tier!=2",
            "app in (1,2,3),app!=2",
            "x.io/role,env=3,tier in (1)",
            "tier>1",
            "tier<3,app=2",
            "nothere",
            "nothere=1,app",
        ]
        .iter()
        .map(|s| LabelSelector::parse(s).unwrap())
        .collect();
        for step in 0..400 {
            match rng.usize(..20) {
                0 => {
                    let pods: Vec<Arc<Pod>> =
                        (0..rng.usize(..30)).map(|_| Arc::new(random_pod(&mut rng))).collect();
                    store.replace(pods);
                }
                1..=5 => {
                    let key = format!("{}/p{}", NAMESPACES[rng.usize(..3)], rng.usize(..40));
                    store.delete_key(&key);
                }
                6..=8 => {
                    // A change that leaves the labels alone, as most updates do.
                    if let Some(old) = store.list().first() {
                        let mut same = Pod::clone(old);
                        same.metadata.resource_version = Some(format!("{step}"));
                        store.update(same.into());
                    }
                }
                _ => {
                    store.add(random_pod(&mut rng).into());
                }
            }
            assert_index_queries_current(&store);
            let mut selectors: Vec<LabelSelector> =
                (0..6).map(|_| random_selector(&mut rng)).collect();
            if step % 20 == 0 {
                selectors.append(&mut fixed.clone());
            }
            assert_queries_match_scan(&store, &selectors);
        }
        fixed.extend((0..200).map(|_| random_selector(&mut rng)));
        assert_queries_match_scan(&store, &fixed);
    });
}

#[test]
fn label_index_can_be_added_and_dropped_at_any_time() {
    each_mode(|mode| {
        let mut rng = fastrand::Rng::with_seed(7);
        let store = in_mode(Indexer::<Pod>::with_namespace_index(), mode);
        for _ in 0..60 {
            store.add(random_pod(&mut rng).into());
        }
        let selectors: Vec<LabelSelector> = (0..100).map(|_| random_selector(&mut rng)).collect();
        // Without the label index, queries scan (every object, or the namespace's).
        assert_queries_match_scan(&store, &selectors);
        let store = store.with_label_index();
        assert_indices_consistent(&store);
        assert_queries_match_scan(&store, &selectors);
        store.set_label_index(false);
        assert!(!has_label_index(&store));
        assert_queries_match_scan(&store, &selectors);
    });
}

#[test]
fn selector_queries_without_namespace_index_scan() {
    each_mode(|mode| {
        let mut rng = fastrand::Rng::with_seed(11);
        let store = in_mode(Indexer::<Pod>::default().with_label_index(), mode);
        for _ in 0..60 {
            store.add(random_pod(&mut rng).into());
        }
        let selectors: Vec<LabelSelector> = (0..100).map(|_| random_selector(&mut rng)).collect();
        assert_queries_match_scan(&store, &selectors);
    });
}

#[test]
fn label_index_shares_the_stored_key_and_forgets_empty_entries() {
    let store = Indexer::<Pod>::with_namespace_index().with_label_index();
    store.add(labeled_pod("ns", "a", &[("app", "web")]).into());
    store.update(labeled_pod("ns", "a", &[("app", "db"), ("tier", "1")]).into());
    with_table!(&*store.cache.inner.read(), |table| {
        let (stored, _) = table.items.get_key_value("ns/a").unwrap();
        let indexed = table.label_keys_of("app", "db");
        assert_eq!(indexed, [ObjectKey::from("ns/a")]);
        assert!(
            std::ptr::eq(stored.as_str(), indexed[0].as_str()),
            "a key added on update is the map's allocation, not a copy"
        );
        assert!(table.label_keys_of("app", "web").is_empty());
    });
    store.delete_key("ns/a");
    assert_indices_consistent(&store);
    with_table!(&*store.cache.inner.read(), |table| assert_eq!(
        format!("{:?}", table.labels),
        "Some(LabelIndex { keys: 0 })"
    ));
}

#[test]
fn selector_query_reads_only_candidates() {
    each_mode(|mode| {
        // A cache where the one matching object is the only one the index offers: the answer must
        // come from the index, not a scan that happens to agree.
        let store = in_mode(Indexer::<Pod>::with_namespace_index().with_label_index(), mode);
        for i in 0..100 {
            store.add(labeled_pod("ns", &format!("p{i}"), &[("app", "bulk")]).into());
        }
        store.add(labeled_pod("ns", "rare", &[("app", "rare"), ("tier", "1")]).into());
        let inner = store.cache.inner.read();
        let plan = |s: &str| {
            let selector = LabelSelector::parse(s).unwrap();
            with_table!(&*inner, |table| {
                let labels = table.labels.as_ref().unwrap();
                labels.candidates(&selector).map(|c| (c.len(), c.satisfied))
            })
        };
        assert_eq!(plan("app=rare"), Some((1, Some(0))));
        assert_eq!(plan("app in (bulk,rare)"), Some((101, Some(0))));
        assert_eq!(plan("app,tier"), Some((1, Some(1))), "the smaller set drives");
        assert_eq!(plan("app=bulk,tier"), Some((1, Some(1))));
        assert_eq!(plan("tier>0"), Some((1, None)), "`>` needs its value checked");
        assert_eq!(plan("app=none,tier"), Some((0, Some(0))));
        assert_eq!(plan("app!=bulk,!tier,app notin (x)"), None, "nothing to narrow by: scan");
        assert_eq!(plan(""), None);
    });
}
