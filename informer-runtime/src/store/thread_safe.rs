//! The locked map of objects and its indices: [`Indexer`] writes, [`Cache`] reads.
//!
//! TL;DR caveats: objects come out as `Arc<K>` shared with the cache and every handler. They are
//! read-only; to change one, clone it (`K::clone(&obj)`) and send the change to the server.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Deref;
use std::sync::Arc;

use parking_lot::RwLock;

use super::index::{Index, IndexFn, Indexers, Reindex};
use super::labels::LabelIndex;
use super::members::Members;
use super::{KnownObjects, NAMESPACE_INDEX, ObjectKey};
use crate::resource::Resource;
use crate::selector::{LabelSelector, Requirement};

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
    /// Kept apart from `indices`: it is not an [`IndexFn`], and only selector queries read it.
    labels: Option<LabelIndex<K>>,
}

/// What an object without labels is matched against.
static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

fn labels<K: Resource>(obj: &K) -> Option<&BTreeMap<String, String>> {
    obj.meta().labels.as_ref()
}

impl<K> Inner<K> {
    fn index(&self, name: &str) -> Result<&Index<K>, IndexError> {
        self.indices.get(name).ok_or_else(|| IndexError::NotFound(name.to_owned()))
    }
}

/// The objects of one index entry.
fn objects<K>(members: &Members<K>) -> Vec<Arc<K>> {
    members.iter().map(|(_, obj)| Arc::clone(obj)).collect()
}

impl<K: Resource> Inner<K> {
    fn reindex(&mut self, key: &ObjectKey, old: Option<&K>, new: Option<&Arc<K>>) {
        for index in self.indices.values_mut() {
            index.update(key, old, new);
        }
        if let Some(label_index) = &mut self.labels {
            label_index.update(key, old, new);
        }
    }

    /// Empties every index and indexes each stored object again.
    fn rebuild_indices(&mut self) {
        let Self { items, indices, labels: label_index } = self;
        for index in indices.values_mut() {
            index.rebuild(items);
        }
        if let Some(label_index) = label_index {
            label_index.rebuild(items);
        }
    }

    /// The `candidates` whose labels meet every requirement of `selector` but the `satisfied`
    /// one.
    fn matching<'a>(
        candidates: impl Iterator<Item = &'a Arc<K>>,
        selector: &LabelSelector,
        satisfied: Option<usize>,
        capacity: usize,
    ) -> Vec<Arc<K>> {
        let requirements = selector.requirements();
        // An answer that is the candidates exactly never reads an object's labels: a cache miss
        // or more per object, the most of what a query costs.
        let check = requirements.len() > usize::from(satisfied.is_some());
        let mut out = Vec::with_capacity(if check { 0 } else { capacity });
        for obj in candidates {
            let meets = |(position, requirement): (usize, &Requirement)| {
                Some(position) == satisfied
                    || requirement.matches(labels(&**obj).unwrap_or(&NO_LABELS))
            };
            if !check || requirements.iter().enumerate().all(meets) {
                out.push(Arc::clone(obj));
            }
        }
        out
    }

    fn scan(&self, mut keep: impl FnMut(&K) -> bool) -> Vec<Arc<K>> {
        self.items.values().filter(|o| keep(o)).cloned().collect()
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

    /// The objects whose labels match `selector`, only those of `namespace` if given; unordered.
    ///
    /// The query reads only candidates where it can: those the label index offers for the most
    /// selective requirement it can answer (`key=value`, `key in (…)`, `key`, and `key>n`/`key<n`
    /// through `key`), or the namespace's objects if fewer; other requirements and the
    /// namespace are then checked on the candidates. A selector of only `!=`, `notin` and `!key`
    /// requirements, or a cache without the label index, reads the namespace or every object.
    pub(crate) fn select(&self, namespace: Option<&str>, selector: &LabelSelector) -> Vec<Arc<K>> {
        let inner = self.inner.read();
        if selector.is_everything() && namespace.is_none() {
            return inner.items.values().cloned().collect();
        }
        let in_namespace = match namespace.map(|ns| (ns, inner.indices.get(NAMESPACE_INDEX))) {
            None => None,
            Some((ns, Some(index))) => match index.members(ns) {
                Some(members) => Some(members),
                None => return Vec::new(),
            },
            Some((ns, None)) => {
                return inner.scan(|o| {
                    o.meta().namespace.as_deref() == Some(ns) && selector.matches_opt(labels(o))
                });
            }
        };
        let candidates = inner.labels.as_ref().and_then(|l| l.candidates(selector));
        match (in_namespace, candidates) {
            (Some(in_namespace), Some(candidates)) if candidates.len() < in_namespace.len() => {
                let satisfied = candidates.satisfied;
                let objs = candidates
                    .into_iter()
                    .filter_map(|(k, o)| in_namespace.contains(k).then_some(o));
                Inner::matching(objs, selector, satisfied, 0)
            }
            (Some(in_namespace), _) => {
                let objs = in_namespace.iter().map(|(_, o)| o);
                Inner::matching(objs, selector, None, in_namespace.len())
            }
            (None, Some(candidates)) => {
                let (satisfied, len) = (candidates.satisfied, candidates.len());
                Inner::matching(candidates.into_iter().map(|(_, o)| o), selector, satisfied, len)
            }
            (None, None) => inner.scan(|o| selector.matches_opt(labels(o))),
        }
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
            return Ok(index.members(value).map(objects).unwrap_or_default());
        }
        // An object under several of the values is listed under each: keep the first.
        let mut seen = HashSet::new();
        let found = values.iter().filter_map(|v| index.members(v)).flat_map(Members::iter);
        Ok(found.filter(|(key, _)| seen.insert(*key)).map(|(_, obj)| Arc::clone(obj)).collect())
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
        Ok(inner.index(index_name)?.members(value).map(objects).unwrap_or_default())
    }

    /// The keys indexed under `value` in index `index_name`, sorted.
    ///
    /// # Errors
    ///
    /// [`IndexError::NotFound`] for an unknown index.
    #[doc(alias = "IndexKeys")]
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        let inner = self.inner.read();
        let members = inner.index(index_name)?.members(value);
        let mut keys: Vec<ObjectKey> =
            members.into_iter().flat_map(Members::iter).map(|(k, _)| k.clone()).collect();
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
            index.rebuild(&inner.items);
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
        let inner = Inner { items: HashMap::new(), indices, labels: None };
        Self { cache: Cache { inner: Arc::new(RwLock::new(inner)) } }
    }

    /// An empty store with the [`NAMESPACE_INDEX`](super::NAMESPACE_INDEX).
    ///
    /// Informers also keep the [label index](Self::with_label_index).
    #[must_use]
    pub fn with_namespace_index() -> Self {
        Self::new(Indexers::from([(NAMESPACE_INDEX.to_owned(), super::namespace_index())]))
    }

    /// Also keeps the label index, objects by label key and value, which lets a
    /// [`Lister`](crate::lister::Lister)'s label selector queries read only the objects that can
    /// match; objects already stored are indexed at once.
    ///
    /// It costs memory for each label of each object (a table slot with the object's key and a
    /// second `Arc` of it; each distinct label key and value is stored once), and a table lookup
    /// per label on each change of an object. Informers keep it unless told not to
    /// ([`without_label_index`](crate::shared_informer::SharedIndexInformer::without_label_index)).
    ///
    /// ```
    /// # use informer_runtime::{Indexer, lister::Lister, selector::LabelSelector};
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    /// let indexer = Indexer::<Pod>::with_namespace_index().with_label_index();
    /// indexer.add(Pod {
    ///     metadata: ObjectMeta {
    ///         namespace: Some("default".into()),
    ///         name: Some("web-0".into()),
    ///         labels: Some([("app".to_owned(), "web".to_owned())].into()),
    ///         ..ObjectMeta::default()
    ///     },
    ///     ..Pod::default()
    /// }.into());
    /// // Reads the one object labelled app=web, not the whole cache.
    /// let web = Lister::new(indexer.cache()).list(&LabelSelector::parse("app=web").unwrap());
    /// assert_eq!(web.len(), 1);
    /// ```
    #[must_use]
    pub fn with_label_index(self) -> Self {
        self.set_label_index(true);
        self
    }

    /// Builds the label index from the stored objects, or drops it.
    pub(crate) fn set_label_index(&self, enabled: bool) {
        let mut inner = self.cache.inner.write();
        if enabled && inner.labels.is_none() {
            let mut label_index = LabelIndex::default();
            label_index.rebuild(&inner.items);
            inner.labels = Some(label_index);
        } else if !enabled {
            inner.labels = None;
        }
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
        // The map keeps the key it has: index it under that one too, so that one allocation per
        // object serves the map and every index.
        let (key, old) = match inner.items.get_key_value(&key) {
            Some((stored, old)) => (stored.clone(), Some(Arc::clone(old))),
            None => (key, None),
        };
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
        inner.items = items;
        inner.rebuild_indices();
    }
}

// The unknown index function is a closure; print the shape, not the content.
impl<K> std::fmt::Debug for Cache<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.read();
        f.debug_struct("Cache")
            .field("len", &inner.items.len())
            .field("indices", &inner.indices.keys().collect::<Vec<_>>())
            .field("label_index", &inner.labels.is_some())
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
