//! Secondary indices: named functions from an object to the values it is found under.
//!
//! Three kinds of string meet here, as in client-go's `index.go`:
//! 1. the storage key of an object ([`ObjectKey`], `namespace/name`);
//! 2. the name of an index ([`IndexName`], for example [`NAMESPACE_INDEX`]);
//! 3. an indexed value (a plain `String`, for example the namespace `kube-system`).
//!
//! An index maps each value to the objects that produce it, by key.

use std::collections::HashMap;
use std::sync::Arc;

use super::ObjectKey;
use super::members::Members;
use crate::resource::Object;

/// An error from an index query or from adding indexers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// The query named an index that was never added.
    #[error("index with name {0:?} does not exist")]
    NotFound(String),
    /// [`Cache::add_indexers`](super::Cache::add_indexers) was given a name that is already
    /// taken; nothing was added.
    #[error("indexer conflict: index {0:?} already exists")]
    Conflict(String),
}

/// The name of an index, such as [`NAMESPACE_INDEX`].
pub type IndexName = String;

/// A function from an object to the values it is indexed under (zero, one or several).
///
/// It must be pure: the store calls it again on the old object when the object changes or goes.
#[doc(alias = "IndexFunc")]
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// Index functions by index name.
pub type Indexers<K> = HashMap<IndexName, IndexFn<K>>;

/// The name of the index every informer keeps: objects by namespace (`""` for cluster-scoped ones).
pub const NAMESPACE_INDEX: &str = "namespace";

/// The index function behind [`NAMESPACE_INDEX`].
#[doc(alias = "MetaNamespaceIndexFunc")]
#[must_use]
pub fn namespace_index<K: Object>() -> IndexFn<K> {
    Arc::new(|obj: &K| vec![obj.meta().namespace.clone().unwrap_or_default()])
}

/// What the store keeps in step with its objects: an [`Index`], or the label index. `E` is the
/// [`Storage`](super::storage::Storage)'s entry, which the index holds beside each key.
pub(super) trait Reindex<K, E> {
    /// Moves `key` from where `old` is indexed to where `new` is (`None`: no object), and makes
    /// every entry of `key` hold `new`'s entry. `new` is the decoded object and its entry.
    fn update(&mut self, key: &ObjectKey, old: Option<&K>, new: Option<(&K, &E)>);

    /// Forgets every object.
    fn clear(&mut self);
}

/// One index: its function and the value → objects map it maintains.
pub(super) struct Index<K, E> {
    func: IndexFn<K>,
    values: HashMap<String, Members<E>>,
}

impl<K, E: Clone> Index<K, E> {
    pub(super) fn new(func: IndexFn<K>) -> Self {
        Self { func, values: HashMap::new() }
    }

    /// The index function, to build the same index over another storage.
    pub(super) fn func(&self) -> &IndexFn<K> {
        &self.func
    }

    pub(super) fn values_of(&self, obj: &K) -> Vec<String> {
        (self.func)(obj)
    }

    /// The objects under `value`.
    pub(super) fn members(&self, value: &str) -> Option<&Members<E>> {
        self.values.get(value)
    }

    pub(super) fn indexed_values(&self) -> impl Iterator<Item = &String> {
        self.values.keys()
    }

    /// Removes `key` from every value, without knowing which it is under: for an object whose
    /// old state cannot be decoded (a compact store's "cannot happen"), so that no entry of it
    /// outlives it. Reads every value's members: slow, and never on a normal path.
    pub(super) fn forget(&mut self, key: &ObjectKey) {
        self.values.retain(|_, members| !members.remove(key).1);
    }

    fn insert(&mut self, key: &ObjectKey, value: &str, entry: &E) {
        // Look up before inserting: the value is copied only when it is new.
        if let Some(members) = self.values.get_mut(value) {
            members.insert(key, entry);
        } else {
            self.values.insert(value.to_owned(), Members::new(key, entry));
        }
    }

    fn remove(&mut self, key: &ObjectKey, value: &str) {
        let Some(members) = self.values.get_mut(value) else { return };
        // client-go once leaked these: an empty entry would keep its value listed forever.
        if members.remove(key).1 {
            self.values.remove(value);
        }
    }
}

impl<K, E: Clone> Reindex<K, E> for Index<K, E> {
    fn update(&mut self, key: &ObjectKey, old: Option<&K>, new: Option<(&K, &E)>) {
        if let (Some(old), Some((new, _))) = (old, new)
            && std::ptr::eq(old, new)
        {
            return;
        }
        let old_values = old.map(|o| (self.func)(o)).unwrap_or_default();
        let new_values = new.map(|(n, _)| (self.func)(n)).unwrap_or_default();
        // The common case, one value that did not change: only the entry needs swapping.
        if let ([old_value], [new_value], Some((_, entry))) = (&*old_values, &*new_values, new)
            && old_value == new_value
        {
            self.insert(key, new_value, entry);
            return;
        }
        for value in &old_values {
            if !new_values.contains(value) {
                self.remove(key, value);
            }
        }
        let Some((_, entry)) = new else { return };
        for value in new_values {
            // Unchanged values too: their entries still hold the old object.
            self.insert(key, &value, entry);
        }
    }

    fn clear(&mut self) {
        self.values.clear();
    }
}

#[cfg(test)]
impl<K, E: Clone> Index<K, E> {
    /// Checks the index against `objects` (key, decoded object, stored entry): what it would be
    /// if built from scratch, with each entry holding the stored entry itself (`same`).
    pub(super) fn assert_consistent(
        &self,
        objects: &[(ObjectKey, Arc<K>, E)],
        same: impl Fn(&E, &E) -> bool,
    ) {
        let mut rebuilt = Self::new(Arc::clone(&self.func));
        let mut stored = HashMap::new();
        for (key, obj, entry) in objects {
            rebuilt.update(key, None, Some((obj, entry)));
            stored.insert(key.clone(), entry.clone());
        }
        let flatten = |index: &Self| {
            let mut entries: Vec<(String, Vec<ObjectKey>)> = Vec::new();
            for (value, members) in &index.values {
                assert!(members.is_compact(), "an empty set or a set of one for {value}");
                for (key, entry) in members.iter() {
                    assert!(same(entry, &stored[key]), "{key} holds a stale object");
                }
                let mut keys: Vec<ObjectKey> = members.iter().map(|(k, _)| k.clone()).collect();
                keys.sort();
                entries.push((value.clone(), keys));
            }
            entries.sort();
            entries
        };
        assert_eq!(flatten(self), flatten(&rebuilt));
    }
}
