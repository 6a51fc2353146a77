//! Secondary indices: named functions from an object to the values it is found under.
//!
//! Three kinds of string meet here, as in client-go's `index.go`:
//! 1. the storage key of an object ([`ObjectKey`], `namespace/name`);
//! 2. the name of an index ([`IndexName`], for example [`NAMESPACE_INDEX`]);
//! 3. an indexed value (a plain `String`, for example the namespace `kube-system`).
//!
//! An index maps each value to the set of keys of the objects that produce it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::ObjectKey;
use crate::resource::Resource;

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
pub fn namespace_index<K: Resource>() -> IndexFn<K> {
    Arc::new(|obj: &K| vec![obj.meta().namespace.clone().unwrap_or_default()])
}

/// One index: its function and the value → keys map it maintains.
pub(super) struct Index<K> {
    func: IndexFn<K>,
    values: HashMap<String, HashSet<ObjectKey>>,
}

impl<K> Index<K> {
    pub(super) fn new(func: IndexFn<K>) -> Self {
        Self { func, values: HashMap::new() }
    }

    /// Moves `key` from the values of `old` to the values of `new`.
    pub(super) fn update(&mut self, key: &ObjectKey, old: Option<&K>, new: Option<&K>) {
        let old_values = old.map(|o| (self.func)(o)).unwrap_or_default();
        let new_values = new.map(|n| (self.func)(n)).unwrap_or_default();
        // The common case: one value, unchanged. Nothing to move.
        if old_values.len() == 1 && new_values.len() == 1 && old_values[0] == new_values[0] {
            return;
        }
        for value in old_values {
            if let Some(keys) = self.values.get_mut(&value) {
                keys.remove(key);
                // client-go once leaked these: an empty set would keep its value listed forever.
                if keys.is_empty() {
                    self.values.remove(&value);
                }
            }
        }
        for value in new_values {
            self.values.entry(value).or_default().insert(key.clone());
        }
    }

    pub(super) fn clear(&mut self) {
        self.values.clear();
    }

    pub(super) fn values_of(&self, obj: &K) -> Vec<String> {
        (self.func)(obj)
    }

    pub(super) fn keys(&self, value: &str) -> Option<&HashSet<ObjectKey>> {
        self.values.get(value)
    }

    pub(super) fn indexed_values(&self) -> impl Iterator<Item = &String> {
        self.values.keys()
    }
}
