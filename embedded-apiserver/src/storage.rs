//! Storage, in etcd's role: objects as JSON, one global resourceVersion, a bounded history.
//!
//! Every write, of any resource, takes the next resourceVersion (etcd's revision) and is kept
//! in one history window shared by all types. The window serves watch replay and consistent
//! list snapshots (continue tokens, `resourceVersionMatch=Exact`); what falls out of it is
//! *compacted*: a request that needs it gets `410 Expired`, as after etcd compaction.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::status::GroupResource;

/// A stored object. Lists, watch events and history share one allocation.
pub(crate) type Object = Arc<Value>;

/// What a change did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChangeKind {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was removed.
    Deleted,
}

impl ChangeKind {
    /// The watch event type.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One committed write.
#[derive(Debug)]
pub(crate) struct Change {
    /// The resourceVersion the write took.
    pub(crate) rv: u64,
    /// Which store it changed.
    pub(crate) storage: GroupResource,
    /// The object's key: `namespace/name`, or `name`.
    pub(crate) key: String,
    pub(crate) kind: ChangeKind,
    /// The new state; for a deletion, the last state stamped with the deletion's version.
    pub(crate) obj: Object,
    /// The state before the write.
    pub(crate) prev: Option<Object>,
}

/// The storage of every resource.
#[derive(Debug)]
pub(crate) struct Store {
    /// The last resourceVersion handed out.
    rv: u64,
    /// Every change after this version is in `history`; older versions are compacted.
    compacted: u64,
    history: VecDeque<Arc<Change>>,
    history_limit: usize,
    tables: HashMap<GroupResource, BTreeMap<String, Object>>,
}

/// The key of an object in its store.
pub(crate) fn object_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() { name.to_owned() } else { format!("{namespace}/{name}") }
}

/// `metadata.<field>` of a JSON object, or `""`.
pub(crate) fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or_default()
}

/// `metadata` of a JSON object, created if missing (or not an object).
pub(crate) fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let Value::Object(map) = obj else { unreachable!("made an object above") };
    let meta = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    match meta {
        Value::Object(meta) => meta,
        _ => unreachable!("made an object above"),
    }
}

/// Sets `metadata.resourceVersion`.
pub(crate) fn stamp(obj: &mut Value, rv: u64) {
    metadata_mut(obj).insert("resourceVersion".into(), Value::String(rv.to_string()));
}

impl Store {
    /// An empty store at resourceVersion `initial`, keeping at most `history_limit` changes.
    pub(crate) fn new(initial: u64, history_limit: usize) -> Self {
        Self {
            rv: initial,
            compacted: initial,
            history: VecDeque::new(),
            history_limit: history_limit.max(1),
            tables: HashMap::new(),
        }
    }

    /// The last resourceVersion handed out.
    pub(crate) fn resource_version(&self) -> u64 {
        self.rv
    }

    /// The oldest version a watch or a snapshot read may start from.
    pub(crate) fn compacted(&self) -> u64 {
        self.compacted
    }

    /// The stored object with `key`.
    pub(crate) fn get(&self, storage: &GroupResource, key: &str) -> Option<&Object> {
        self.tables.get(storage)?.get(key)
    }

    /// The current objects of a store from `start` on (inclusive), in key order.
    pub(crate) fn range<'s>(
        &'s self,
        storage: &GroupResource,
        start: &str,
    ) -> impl Iterator<Item = (&'s String, &'s Object)> + 's {
        let table = self.tables.get(storage);
        let start = start.to_owned();
        table.into_iter().flat_map(move |t| t.range::<String, _>(start.clone()..))
    }

    /// The stores that hold objects.
    pub(crate) fn storages(&self) -> Vec<GroupResource> {
        self.tables.keys().cloned().collect()
    }

    /// The keys of a store that start with `prefix`.
    pub(crate) fn keys_with_prefix(&self, storage: &GroupResource, prefix: &str) -> Vec<String> {
        self.range(storage, prefix)
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// The objects of a store as they were at version `at`, in key order.
    ///
    /// `at` must not be older than [`compacted`](Self::compacted): the caller answers 410
    /// then. Versions at or after the current one read the current state.
    pub(crate) fn snapshot(&self, storage: &GroupResource, at: u64) -> Vec<(String, Object)> {
        let current = self.range(storage, "").map(|(k, o)| (k.clone(), Arc::clone(o)));
        if at >= self.rv {
            return current.collect();
        }
        // Undo the changes after `at`, newest first, so the oldest undo of a key wins.
        let mut undo: BTreeMap<&str, Option<&Object>> = BTreeMap::new();
        for change in self.history.iter().rev().take_while(|c| c.rv > at) {
            if &change.storage == storage {
                undo.insert(&change.key, change.prev.as_ref());
            }
        }
        let mut state: BTreeMap<String, Object> = current.collect();
        for (key, prev) in undo {
            match prev {
                Some(prev) => state.insert(key.to_owned(), Arc::clone(prev)),
                None => state.remove(key),
            };
        }
        state.into_iter().collect()
    }

    /// Commits a write at the next resourceVersion, which it stamps on `obj`.
    ///
    /// For [`ChangeKind::Deleted`], `obj` is the object's last state and the key is removed.
    pub(crate) fn write(
        &mut self,
        storage: &GroupResource,
        key: &str,
        kind: ChangeKind,
        mut obj: Value,
    ) -> Arc<Change> {
        self.rv += 1;
        stamp(&mut obj, self.rv);
        let obj = Arc::new(obj);
        let table = self.tables.entry(storage.clone()).or_default();
        let prev = match kind {
            ChangeKind::Deleted => table.remove(key),
            ChangeKind::Added | ChangeKind::Modified => {
                table.insert(key.to_owned(), Arc::clone(&obj))
            }
        };
        if table.is_empty() {
            self.tables.remove(storage);
        }
        let change = Arc::new(Change {
            rv: self.rv,
            storage: storage.clone(),
            key: key.to_owned(),
            kind,
            obj,
            prev,
        });
        self.history.push_back(Arc::clone(&change));
        self.trim();
        change
    }

    /// The kept changes after version `rv`, oldest first.
    pub(crate) fn changes_after(&self, rv: u64) -> impl Iterator<Item = &Arc<Change>> {
        let skip = self.history.partition_point(|c| c.rv <= rv);
        self.history.iter().skip(skip)
    }

    /// Compacts like etcd: forgets every change, so that only the current version can be
    /// watched from or read exactly.
    pub(crate) fn compact(&mut self) {
        self.compacted = self.rv;
        self.history.clear();
    }

    /// Keeps at most `limit` changes (at least one).
    pub(crate) fn set_history_limit(&mut self, limit: usize) {
        self.history_limit = limit.max(1);
        self.trim();
    }

    fn trim(&mut self) {
        while self.history.len() > self.history_limit {
            if let Some(change) = self.history.pop_front() {
                self.compacted = self.compacted.max(change.rv);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(objects: &[(String, Object)]) -> Vec<String> {
        objects.iter().map(|(k, o)| format!("{k}@{}", meta_str(o, "resourceVersion"))).collect()
    }

    #[test]
    fn snapshots_undo_later_changes() {
        let pods = GroupResource::new("", "pods");
        let cms = GroupResource::new("", "configmaps");
        let mut store = Store::new(0, 100);
        store.write(&pods, "ns/a", ChangeKind::Added, json!({}));
        store.write(&pods, "ns/b", ChangeKind::Added, json!({}));
        store.write(&cms, "ns/a", ChangeKind::Added, json!({}));
        store.write(&pods, "ns/a", ChangeKind::Modified, json!({}));
        store.write(&pods, "ns/c", ChangeKind::Added, json!({}));
        store.write(&pods, "ns/b", ChangeKind::Deleted, json!({}));
        assert_eq!(store.resource_version(), 6);
        assert_eq!(names(&store.snapshot(&pods, 6)), ["ns/a@4", "ns/c@5"]);
        assert_eq!(names(&store.snapshot(&pods, 3)), ["ns/a@1", "ns/b@2"]);
        assert_eq!(names(&store.snapshot(&pods, 0)), Vec::<String>::new());
        assert_eq!(store.changes_after(4).map(|c| c.rv).collect::<Vec<_>>(), [5, 6]);
        assert_eq!(store.keys_with_prefix(&cms, "ns/"), ["ns/a"]);
    }

    #[test]
    fn trimming_history_raises_the_compaction_point() {
        let pods = GroupResource::new("", "pods");
        let mut store = Store::new(10, 2);
        for name in ["a", "b", "c"] {
            store.write(&pods, name, ChangeKind::Added, json!({"metadata": {"name": name}}));
        }
        assert_eq!(store.compacted(), 11);
        store.compact();
        assert_eq!(store.compacted(), 13);
        assert_eq!(store.changes_after(0).count(), 0);
        assert_eq!(meta_str(store.get(&pods, "c").unwrap(), "resourceVersion"), "13");
    }
}
