use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::*;
use crate::store::{NAMESPACE_INDEX, namespace_index};
use crate::test_util::{labeled_pod, namespace, pod};

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
    let store = Indexer::<Pod>::default();
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
    let by_label_values: IndexFn<Pod> = Arc::new(|p: &Pod| {
        p.metadata.labels.as_ref().map(|l| l.values().cloned().collect()).unwrap_or_default()
    });
    let store = Indexer::new(Indexers::from([("values".to_owned(), by_label_values)]));
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
}

// Port of client-go's TestGetIndexFuncValues: the values with at least one member.
#[test]
fn index_values_lists_values_with_members() {
    let store = Indexer::new(Indexers::from([("app".to_owned(), label_index("app"))]));
    store.add(labeled_pod("ns", "a", &[("app", "web")]).into());
    store.add(labeled_pod("ns", "b", &[("app", "db")]).into());
    store.add(labeled_pod("ns", "c", &[("app", "web")]).into());
    let mut values = store.index_values("app").unwrap();
    values.sort();
    assert_eq!(values, ["db", "web"]);
    assert!(store.index_values("missing").is_err());
}

// Port of client-go's TestMultiIndexKeys: keys by value are sorted; updates move keys between
// values; an unknown value is an empty answer.
#[test]
fn multi_index_keys() {
    let by_users: IndexFn<Pod> = Arc::new(|p: &Pod| {
        p.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("users"))
            .map(|u| u.split('.').map(String::from).collect())
            .unwrap_or_default()
    });
    let store = Indexer::new(Indexers::from([("byUser".to_owned(), by_users)]));
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
}

// Port of client-go's TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex.
#[test]
fn delete_removes_empty_sets_from_index() {
    let store = Indexer::new(Indexers::from([("app".to_owned(), label_index("app"))]));
    store.add(labeled_pod("ns", "a", &[("app", "web")]).into());
    store.delete_key("ns/a");
    assert!(store.index_values("app").unwrap().is_empty(), "the empty set for `web` is gone");
    store.add(labeled_pod("ns", "a", &[("app", "web")]).into());
    store.update(labeled_pod("ns", "a", &[("app", "db")]).into());
    assert_eq!(store.index_values("app").unwrap(), ["db"]);
}

// Port of client-go's TestThreadSafeStoreIndexingFunctionsWithMultipleValues.
#[test]
fn indexing_functions_with_multiple_values() {
    let split: IndexFn<Pod> = Arc::new(|p: &Pod| {
        p.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("v"))
            .map(|v| v.split(',').map(String::from).collect())
            .unwrap_or_default()
    });
    let store = Indexer::new(Indexers::from([("v".to_owned(), split)]));
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
}

#[test]
fn added_indexer_indexes_existing_objects_and_rejects_clashes() {
    let store = Indexer::<Pod>::default();
    store.add(labeled_pod("ns", "a", &[("app", "web")]).into());
    store.add_indexers(Indexers::from([("app".to_owned(), label_index("app"))])).unwrap();
    assert_eq!(store.index_keys("app", "web").unwrap(), [ObjectKey::from("ns/a")]);

    let clash = store.add_indexers(Indexers::from([
        ("app".to_owned(), label_index("app")),
        ("other".to_owned(), label_index("other")),
    ]));
    assert_eq!(clash, Err(IndexError::Conflict("app".to_owned())));
    assert!(!store.index_names().contains(&"other".to_owned()), "nothing added on a clash");
}

#[test]
fn replace_rebuilds_every_index() {
    let store = Indexer::<Pod>::with_namespace_index();
    store.add(pod("a", "x", "").into());
    store.replace([pod("b", "y", "").into()]);
    assert!(store.by_index(NAMESPACE_INDEX, "a").unwrap().is_empty());
    assert_eq!(names(&store.by_index(NAMESPACE_INDEX, "b").unwrap()), ["y".to_owned()].into());
    assert_eq!(store.index_values(NAMESPACE_INDEX).unwrap(), ["b"]);
}

#[test]
fn cluster_scoped_objects_index_under_empty_namespace() {
    let store = Indexer::new(Indexers::from([(NAMESPACE_INDEX.to_owned(), namespace_index())]));
    store.add(namespace("kube-system").into());
    assert_eq!(store.index_keys(NAMESPACE_INDEX, "").unwrap(), [ObjectKey::from("kube-system")]);
}
