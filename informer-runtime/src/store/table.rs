//! The table of objects and its indices, written once for both [storage modes](super::StorageMode).
//!
//! [`Table`] is what the [`Cache`](super::Cache)'s lock guards: the entries by key, the indices
//! and the label index, all holding entries of one [`Storage`]. Index functions and the label
//! index always run on the decoded object, when it is stored, so what the indices say is exact
//! in either mode; only the objects a query returns are had from the entries, through
//! [`Storage::load`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::index::{Index, IndexError, Indexers, Reindex};
use super::labels::LabelIndex;
use super::members::Members;
use super::storage::{DecodeError, LabelsRef, Storage};
use super::{NAMESPACE_INDEX, ObjectKey};
use crate::resource::{Object, same_version};
use crate::selector::{LabelSelector, Requirement};

/// Entries by key, and the indices over them.
///
/// `E` is `S`'s [`Storage::Entry`]; a parameter of its own so that the type needs no bound.
pub(super) struct Table<K, S, E> {
    pub(super) storage: S,
    pub(super) items: HashMap<ObjectKey, E>,
    pub(super) indices: HashMap<String, Index<K, E>>,
    /// Kept apart from `indices`: it is not an [`IndexFn`](super::IndexFn), and only selector queries read it.
    pub(super) labels: Option<LabelIndex<E>>,
}

impl<K: Object, S: Storage<K>> Table<K, S, S::Entry> {
    pub(super) fn new(storage: S, indexers: Indexers<K>) -> Self {
        let indices = indexers.into_iter().map(|(name, f)| (name, Index::new(f))).collect();
        Self { storage, items: HashMap::new(), indices, labels: None }
    }

    /// The same indices and content in `storage`: what switching a cache's mode builds.
    pub(super) fn convert<T: Storage<K>>(&self, storage: T) -> Table<K, T, T::Entry> {
        let indexers: Indexers<K> = self
            .indices
            .iter()
            .map(|(name, index)| (name.clone(), Arc::clone(index.func())))
            .collect();
        let mut table = Table::new(storage, indexers);
        if self.labels.is_some() {
            table.labels = Some(LabelIndex::default());
        }
        for (key, entry) in &self.items {
            if let Some(obj) = self.storage.load_quietly(key, entry) {
                table.insert(key.clone(), obj, false);
            }
        }
        table.storage.clear();
        table
    }

    fn index(&self, name: &str) -> Result<&Index<K, S::Entry>, IndexError> {
        self.indices.get(name).ok_or_else(|| IndexError::NotFound(name.to_owned()))
    }

    /// The objects of `entries`, for a read.
    fn load<'a>(
        &self,
        entries: impl Iterator<Item = (&'a ObjectKey, &'a S::Entry)>,
        capacity: usize,
    ) -> Vec<Arc<K>>
    where
        S::Entry: 'a,
    {
        let mut out = Vec::with_capacity(capacity);
        // A failed decode is logged and counted where it happens; the answer goes without it.
        out.extend(entries.filter_map(|(key, entry)| self.storage.load(key, entry).ok()));
        out
    }

    pub(super) fn get(&self, key: &str) -> Result<Option<Arc<K>>, DecodeError> {
        match self.items.get_key_value(key) {
            Some((key, entry)) => self.storage.load(key, entry).map(Some),
            None => Ok(None),
        }
    }

    /// How many decodes of an entry failed so far.
    pub(super) fn decode_failures(&self) -> u64 {
        self.storage.decode_failures()
    }

    pub(super) fn contains_key(&self, key: &str) -> bool {
        self.items.contains_key(key)
    }

    /// The stored object with `listed`'s key and resource version, if it can be had without
    /// decoding (see [`Storage::peek`]): a relist keeps it in place of `listed` only to save a
    /// second copy, which decoding one would not.
    pub(super) fn unchanged(&self, listed: &K) -> Option<Arc<K>> {
        let (key, entry) = self.items.get_key_value(ObjectKey::of(listed).as_str())?;
        same_version(self.storage.peek(key, entry), listed)
    }

    pub(super) fn list(&self) -> Vec<Arc<K>> {
        self.load(self.items.iter(), self.items.len())
    }

    pub(super) fn for_each(&self, f: &mut dyn FnMut(&Arc<K>)) {
        for (key, entry) in &self.items {
            if let Some(obj) = self.storage.load_quietly(key, entry) {
                f(&obj);
            }
        }
    }

    /// The `candidates` whose labels meet every requirement of `selector` but the `satisfied`
    /// one.
    fn matching<'a>(
        &self,
        candidates: impl Iterator<Item = (&'a ObjectKey, &'a S::Entry)>,
        selector: &LabelSelector,
        satisfied: Option<usize>,
        capacity: usize,
    ) -> Vec<Arc<K>>
    where
        S::Entry: 'a,
    {
        let requirements = selector.requirements();
        // An answer that is the candidates exactly never reads an object's labels: a cache miss
        // or more per object, the most of what a query costs.
        if requirements.len() <= usize::from(satisfied.is_some()) {
            return self.load(candidates, capacity);
        }
        let meets = |entry: &S::Entry| {
            let labels = S::labels(entry);
            requirements.iter().enumerate().all(|(position, requirement): (usize, &Requirement)| {
                Some(position) == satisfied || requirement.matches_with(|name| labels.get(name))
            })
        };
        self.load(candidates.filter(|(_, entry)| meets(entry)), 0)
    }

    /// Every entry that `keep` accepts, read.
    fn scan(&self, mut keep: impl FnMut(&ObjectKey, &S::Entry) -> bool) -> Vec<Arc<K>> {
        self.load(self.items.iter().filter(|(key, entry)| keep(key, entry)), 0)
    }

    /// See [`Cache::select`](super::Cache::select).
    pub(super) fn select(&self, namespace: Option<&str>, selector: &LabelSelector) -> Vec<Arc<K>> {
        if selector.is_everything() && namespace.is_none() {
            return self.list();
        }
        let in_namespace = match namespace.map(|ns| (ns, self.indices.get(NAMESPACE_INDEX))) {
            None => None,
            Some((ns, Some(index))) => match index.members(ns) {
                Some(members) => Some(members),
                None => return Vec::new(),
            },
            Some((ns, None)) => {
                return self.scan(|key, entry| {
                    S::namespace(key, entry) == Some(ns)
                        && selector.matches_with(|name| S::labels(entry).get(name))
                });
            }
        };
        let candidates = self.labels.as_ref().and_then(|l| l.candidates(selector));
        match (in_namespace, candidates) {
            (Some(in_namespace), Some(candidates)) if candidates.len() < in_namespace.len() => {
                let satisfied = candidates.satisfied;
                let entries = candidates.into_iter().filter(|(k, _)| in_namespace.contains(k));
                self.matching(entries, selector, satisfied, 0)
            }
            (Some(in_namespace), _) => {
                self.matching(in_namespace.iter(), selector, None, in_namespace.len())
            }
            (None, Some(candidates)) => {
                let (satisfied, len) = (candidates.satisfied, candidates.len());
                self.matching(candidates.into_iter(), selector, satisfied, len)
            }
            (None, None) => {
                self.scan(|_, entry| selector.matches_with(|name| S::labels(entry).get(name)))
            }
        }
    }

    /// See [`Cache::index`](super::Cache::index).
    pub(super) fn index_by_probe(&self, name: &str, probe: &K) -> Result<Vec<Arc<K>>, IndexError> {
        let index = self.index(name)?;
        let values = index.values_of(probe);
        if let [value] = values.as_slice() {
            return Ok(self.members(index.members(value)));
        }
        // An object under several of the values is listed under each: keep the first.
        let mut seen = HashSet::new();
        let found = values.iter().filter_map(|v| index.members(v)).flat_map(Members::iter);
        Ok(self.load(found.filter(|(key, _)| seen.insert(*key)), 0))
    }

    fn members(&self, members: Option<&Members<S::Entry>>) -> Vec<Arc<K>> {
        members.map(|m| self.load(m.iter(), m.len())).unwrap_or_default()
    }

    pub(super) fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, IndexError> {
        Ok(self.members(self.index(name)?.members(value)))
    }

    pub(super) fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        let members = self.index(name)?.members(value);
        let mut keys: Vec<ObjectKey> =
            members.into_iter().flat_map(Members::iter).map(|(k, _)| k.clone()).collect();
        keys.sort_unstable();
        Ok(keys)
    }

    pub(super) fn index_values(&self, name: &str) -> Result<Vec<String>, IndexError> {
        Ok(self.index(name)?.indexed_values().cloned().collect())
    }

    pub(super) fn add_indexers(&mut self, indexers: Indexers<K>) -> Result<(), IndexError> {
        if let Some(name) = indexers.keys().find(|name| self.indices.contains_key(*name)) {
            return Err(IndexError::Conflict(name.clone()));
        }
        for (name, func) in indexers {
            let mut index = Index::new(func);
            for (key, entry) in &self.items {
                // A compact store decodes each object once here: index values must be exact.
                if let Some(obj) = self.storage.load_quietly(key, entry) {
                    index.update(key, None, Some((&*obj, entry)));
                }
            }
            self.indices.insert(name, index);
        }
        Ok(())
    }

    /// Builds the label index from the stored entries' labels, or drops it.
    pub(super) fn set_label_index(&mut self, enabled: bool) {
        if enabled && self.labels.is_none() {
            let mut label_index = LabelIndex::default();
            for (key, entry) in &self.items {
                label_index.update_labels(key, LabelsRef::none(), Some((S::labels(entry), entry)));
            }
            self.labels = Some(label_index);
        } else if !enabled {
            self.labels = None;
        }
    }

    fn reindex(&mut self, key: &ObjectKey, old: Option<&K>, new: Option<(&K, &S::Entry)>) {
        for index in self.indices.values_mut() {
            index.update(key, old, new);
        }
        if let Some(label_index) = &mut self.labels {
            label_index.update(key, old, new);
        }
    }

    /// Takes `key` out of every index without its old object, which could not be decoded: the
    /// label index from the entry's labels, the others by looking at every value.
    fn forget(&mut self, key: &ObjectKey, entry: &S::Entry) {
        for index in self.indices.values_mut() {
            index.forget(key);
        }
        if let Some(label_index) = &mut self.labels {
            label_index.update_labels(key, S::labels(entry), None);
        }
    }

    /// Inserts or replaces `obj` under `key`; returns the object it replaced. With `seed`, `obj`
    /// joins a compact store's recent objects (see [`Storage::stored`]).
    pub(super) fn insert(&mut self, key: ObjectKey, obj: Arc<K>, seed: bool) -> Option<Arc<K>> {
        if let Some(entry) = self.items.get(&key)
            && self.storage.is_prepared_entry(entry, &obj)
        {
            // A relist's unchanged object with the cache's own form: entry and indices stand,
            // and nothing is decoded or encoded. `obj` is what was stored, decoded again.
            if seed {
                self.storage.stored(&key, Arc::clone(&obj));
            }
            return Some(obj);
        }
        // The map keeps the key it has: index it under that one too, so that one allocation per
        // object serves the map and every index.
        let (key, old) = match self.items.get_key_value(&key) {
            Some((stored, entry)) => {
                let old = self.storage.evict(stored, entry);
                let key = stored.clone();
                if old.is_none() {
                    let entry = entry.clone();
                    self.forget(&key, &entry);
                }
                (key, old)
            }
            None => (key, None),
        };
        if let Some(old) = &old
            && Arc::ptr_eq(old, &obj)
        {
            // The stored object again (a resync): entry and indices are already right, and a
            // compact store need not encode it again.
            if seed {
                self.storage.stored(&key, obj);
            }
            return Some(Arc::clone(old));
        }
        let entry = self.storage.entry(&key, &obj);
        self.reindex(&key, old.as_deref(), Some((&*obj, &entry)));
        if seed {
            self.storage.stored(&key, obj);
        }
        self.items.insert(key, entry);
        old
    }

    /// Removes the object stored under `key`; returns it (`None` if there was none, or, in a
    /// compact store, if it could not be decoded).
    pub(super) fn delete(&mut self, key: &str) -> Option<Arc<K>> {
        let (key, entry) = self.items.remove_entry(key)?;
        let old = self.storage.evict(&key, &entry);
        match &old {
            Some(old) => self.reindex(&key, Some(old), None),
            None => self.forget(&key, &entry),
        }
        old
    }

    /// Swaps the whole content for `items` and rebuilds every index.
    pub(super) fn replace(&mut self, items: HashMap<ObjectKey, Arc<K>>) {
        self.storage.clear();
        for index in self.indices.values_mut() {
            Reindex::<K, S::Entry>::clear(index);
        }
        if let Some(label_index) = &mut self.labels {
            Reindex::<K, S::Entry>::clear(label_index);
        }
        self.items = HashMap::with_capacity(items.len());
        for (key, obj) in items {
            let entry = self.storage.entry(&key, &obj);
            self.reindex(&key, None, Some((&*obj, &entry)));
            self.items.insert(key, entry);
        }
    }
}

#[cfg(test)]
impl<K: Object, S: Storage<K>> Table<K, S, S::Entry> {
    /// Checks every index against the stored entries: what it would be if built from scratch,
    /// each entry holding the stored entry itself.
    pub(super) fn assert_consistent(&self) {
        let objects: Vec<(ObjectKey, Arc<K>, S::Entry)> = self
            .items
            .iter()
            .filter_map(|(k, e)| Some((k.clone(), self.storage.load_quietly(k, e)?, e.clone())))
            .collect();
        assert_eq!(objects.len(), self.items.len(), "every stored object decodes");
        for index in self.indices.values() {
            index.assert_consistent(&objects, S::same);
        }
        if let Some(label_index) = &self.labels {
            let labels: Vec<(ObjectKey, LabelsRef<'_>, S::Entry)> = objects
                .iter()
                .map(|(k, o, e)| (k.clone(), LabelsRef::of(o.meta().labels.as_ref()), e.clone()))
                .collect();
            label_index.assert_consistent(&labels, S::same);
        }
    }

    /// The label index's keys under `name=value`, sorted.
    pub(super) fn label_keys_of(&self, name: &str, value: &str) -> Vec<ObjectKey> {
        self.labels.as_ref().map(|l| l.keys_of(name, value)).unwrap_or_default()
    }
}
