//! The locked map of objects and its indices: [`Indexer`] writes, [`Cache`] reads.
//!
//! TL;DR caveats: objects come out as `Arc<K>` shared with the cache and every handler. They are
//! read-only; to change one, clone it (`K::clone(&obj)`) and send the change to the server.

use std::collections::{HashMap, HashSet};
use std::ops::Deref;
use std::sync::Arc;

use parking_lot::RwLock;

use super::index::{Index, IndexFn, Indexers};
use super::{KnownObjects, ObjectKey};
use crate::resource::Resource;

/// An error from an index query or from adding indexers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// The query named an index that was never added.
    #[error("index with name {0:?} does not exist")]
    NotFound(String),
    /// [`Cache::add_indexers`] was given a name that is already taken; nothing was added.
    #[error("indexer conflict: index {0:?} already exists")]
    Conflict(String),
}

struct Inner<K> {
    items: HashMap<ObjectKey, Arc<K>>,
    indices: HashMap<String, Index<K>>,
}

impl<K> Inner<K> {
    fn reindex(&mut self, key: &ObjectKey, old: Option<&K>, new: Option<&K>) {
        for index in self.indices.values_mut() {
            index.update(key, old, new);
        }
    }

    fn index(&self, name: &str) -> Result<&Index<K>, IndexError> {
        self.indices.get(name).ok_or_else(|| IndexError::NotFound(name.to_owned()))
    }

    fn objects<'a>(&self, keys: impl IntoIterator<Item = &'a ObjectKey>) -> Vec<Arc<K>> {
        keys.into_iter().filter_map(|k| self.items.get(k).cloned()).collect()
    }
}

/// A read handle on a thread-safe, indexed cache of objects.
///
/// Cloning is cheap and every clone reads the same cache. What a read returns may already be
/// stale: the informer keeps applying changes while you hold it.
#[doc(alias = "ThreadSafeStore")]
#[doc(alias = "Store")]
pub struct Cache<K> {
    inner: Arc<RwLock<Inner<K>>>,
}

impl<K> Clone for Cache<K> {
    fn clone(&self) -> Self {
        Self { inner: Arc::clone(&self.inner) }
    }
}

impl<K: Resource> Cache<K> {
    /// The object stored under `key` (`namespace/name` or `name`).
    #[must_use]
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.inner.read().items.get(key).cloned()
    }

    /// The stored object with the same key as `probe`.
    #[must_use]
    pub fn get(&self, probe: &K) -> Option<Arc<K>> {
        self.get_by_key(ObjectKey::of(probe).as_str())
    }

    /// Every stored object, in no particular order.
    #[must_use]
    pub fn list(&self) -> Vec<Arc<K>> {
        self.inner.read().items.values().cloned().collect()
    }

    /// Every stored key, in no particular order.
    #[must_use]
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.inner.read().items.keys().cloned().collect()
    }

    /// Number of stored objects.
    #[must_use]
    pub fn len(&self) -> usize {
        self.inner.read().items.len()
    }

    /// Whether the cache holds no object.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.inner.read().items.is_empty()
    }

    /// Calls `f` on each stored object under one read lock, without collecting them.
    pub fn for_each(&self, mut f: impl FnMut(&Arc<K>)) {
        self.inner.read().items.values().for_each(&mut f);
    }

    /// The objects found under any of the values that index `index_name` gives `probe`,
    /// each once.
    ///
    /// # Errors
    ///
    /// [`IndexError::NotFound`] for an unknown index.
    pub fn index(&self, index_name: &str, probe: &K) -> Result<Vec<Arc<K>>, IndexError> {
        let inner = self.inner.read();
        let index = inner.index(index_name)?;
        let values = index.values_of(probe);
        if let [value] = values.as_slice() {
            return Ok(index.keys(value).map(|keys| inner.objects(keys)).unwrap_or_default());
        }
        let keys: HashSet<&ObjectKey> =
            values.iter().filter_map(|v| index.keys(v)).flatten().collect();
        Ok(inner.objects(keys))
    }

    /// The objects indexed under `value` in index `index_name`.
    ///
    /// ```
    /// # use informer_runtime::store::{Indexer, NAMESPACE_INDEX};
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    /// # fn pod(ns: &str, name: &str) -> Pod {
    /// #     Pod { metadata: ObjectMeta { namespace: Some(ns.into()), name: Some(name.into()), ..Default::default() }, ..Default::default() }
    /// # }
    /// let indexer = Indexer::<Pod>::with_namespace_index();
    /// indexer.add(pod("a", "x").into());
    /// indexer.add(pod("b", "y").into());
    /// let in_a = indexer.by_index(NAMESPACE_INDEX, "a").unwrap();
    /// assert_eq!(in_a.len(), 1);
    /// assert!(indexer.by_index(NAMESPACE_INDEX, "c").unwrap().is_empty());
    /// ```
    ///
    /// # Errors
    ///
    /// [`IndexError::NotFound`] for an unknown index; an unknown value is an empty answer.
    #[doc(alias = "ByIndex")]
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<K>>, IndexError> {
        let inner = self.inner.read();
        let index = inner.index(index_name)?;
        Ok(index.keys(value).map(|keys| inner.objects(keys)).unwrap_or_default())
    }

    /// The keys indexed under `value` in index `index_name`, sorted.
    ///
    /// # Errors
    ///
    /// [`IndexError::NotFound`] for an unknown index.
    #[doc(alias = "IndexKeys")]
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        let inner = self.inner.read();
        let mut keys: Vec<ObjectKey> =
            inner.index(index_name)?.keys(value).into_iter().flatten().cloned().collect();
        keys.sort_unstable();
        Ok(keys)
    }

    /// Every value of index `index_name` that at least one object is indexed under.
    ///
    /// # Errors
    ///
    /// [`IndexError::NotFound`] for an unknown index.
    #[doc(alias = "ListIndexFuncValues")]
    pub fn index_values(&self, index_name: &str) -> Result<Vec<String>, IndexError> {
        Ok(self.inner.read().index(index_name)?.indexed_values().cloned().collect())
    }

    /// The names of the indices this cache maintains.
    #[must_use]
    pub fn index_names(&self) -> Vec<String> {
        self.inner.read().indices.keys().cloned().collect()
    }

    /// Adds indices; each one indexes every object already stored before this returns.
    ///
    /// # Errors
    ///
    /// [`IndexError::Conflict`] if a name is already taken; then nothing is added.
    #[doc(alias = "AddIndexers")]
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), IndexError> {
        let mut inner = self.inner.write();
        if let Some(name) = indexers.keys().find(|name| inner.indices.contains_key(*name)) {
            return Err(IndexError::Conflict(name.clone()));
        }
        for (name, func) in indexers {
            let mut index = Index::new(func);
            for (key, obj) in &inner.items {
                index.update(key, None, Some(obj));
            }
            inner.indices.insert(name, index);
        }
        Ok(())
    }

    /// Adds one index; see [`add_indexers`](Self::add_indexers).
    ///
    /// # Errors
    ///
    /// [`IndexError::Conflict`] if the name is already taken.
    pub fn add_indexer(
        &self,
        name: impl Into<String>,
        func: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Result<(), IndexError> {
        let func: IndexFn<K> = Arc::new(func);
        self.add_indexers(Indexers::from([(name.into(), func)]))
    }
}

impl<K: Resource> KnownObjects<K> for Cache<K> {
    fn list_keys(&self) -> Vec<ObjectKey> {
        Cache::list_keys(self)
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        Cache::get_by_key(self, key)
    }
}

/// A thread-safe, indexed cache of objects that can be written: the informer's store.
///
/// It dereferences to [`Cache`] for reads. `add` and `update` are the same operation; deleting a
/// missing key does nothing.
#[doc(alias = "NewIndexer")]
pub struct Indexer<K> {
    cache: Cache<K>,
}

impl<K> Clone for Indexer<K> {
    fn clone(&self) -> Self {
        Self { cache: self.cache.clone() }
    }
}

impl<K: Resource> Default for Indexer<K> {
    fn default() -> Self {
        Self::new(Indexers::new())
    }
}

impl<K: Resource> Deref for Indexer<K> {
    type Target = Cache<K>;

    fn deref(&self) -> &Cache<K> {
        &self.cache
    }
}

impl<K: Resource> Indexer<K> {
    /// An empty store with the given indices.
    #[must_use]
    pub fn new(indexers: Indexers<K>) -> Self {
        let indices = indexers.into_iter().map(|(name, f)| (name, Index::new(f))).collect();
        let inner = Inner { items: HashMap::new(), indices };
        Self { cache: Cache { inner: Arc::new(RwLock::new(inner)) } }
    }

    /// An empty store with the [`NAMESPACE_INDEX`](super::NAMESPACE_INDEX), as informers have.
    #[must_use]
    pub fn with_namespace_index() -> Self {
        Self::new(Indexers::from([(super::NAMESPACE_INDEX.to_owned(), super::namespace_index())]))
    }

    /// A read-only handle on this store.
    #[must_use]
    pub fn cache(&self) -> Cache<K> {
        self.cache.clone()
    }

    /// Inserts or replaces `obj` under its key; returns the object it replaced.
    pub fn add(&self, obj: Arc<K>) -> Option<Arc<K>> {
        let key = ObjectKey::of(&*obj);
        self.insert(key, obj)
    }

    /// Same as [`add`](Self::add).
    pub fn update(&self, obj: Arc<K>) -> Option<Arc<K>> {
        self.add(obj)
    }

    /// Inserts or replaces `obj` under `key`; returns the object it replaced.
    pub(crate) fn insert(&self, key: ObjectKey, obj: Arc<K>) -> Option<Arc<K>> {
        let mut inner = self.cache.inner.write();
        let old = inner.items.get(&key).cloned();
        inner.reindex(&key, old.as_deref(), Some(&obj));
        inner.items.insert(key, obj);
        old
    }

    /// Removes the object stored under `key`; returns it, or `None` if there was none.
    #[allow(clippy::must_use_candidate, reason = "the removed object is optional information")]
    pub fn delete_key(&self, key: &str) -> Option<Arc<K>> {
        let mut inner = self.cache.inner.write();
        let (key, old) = inner.items.remove_entry(key)?;
        inner.reindex(&key, Some(&old), None);
        Some(old)
    }

    /// Removes the object with the same key as `obj`.
    pub fn delete(&self, obj: &K) -> Option<Arc<K>> {
        self.delete_key(ObjectKey::of(obj).as_str())
    }

    /// Swaps the whole content for `list` and rebuilds every index.
    pub fn replace(&self, list: impl IntoIterator<Item = Arc<K>>) {
        let items: HashMap<ObjectKey, Arc<K>> =
            list.into_iter().map(|obj| (ObjectKey::of(&*obj), obj)).collect();
        let mut inner = self.cache.inner.write();
        let Inner { items: old_items, indices } = &mut *inner;
        *old_items = items;
        for index in indices.values_mut() {
            index.clear();
            for (key, obj) in old_items.iter() {
                index.update(key, None, Some(obj));
            }
        }
    }
}

// The unknown index function is a closure; print the shape, not the content.
impl<K> std::fmt::Debug for Cache<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.read();
        f.debug_struct("Cache")
            .field("len", &inner.items.len())
            .field("indices", &inner.indices.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<K> std::fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Indexer").field(&self.cache).finish()
    }
}

#[cfg(test)]
mod tests;
