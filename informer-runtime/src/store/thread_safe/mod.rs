//! The locked map of objects and its indices: [`Indexer`] writes, [`Cache`] reads.
//!
//! TL;DR caveats: objects come out as `Arc<K>` shared with the cache and every handler. They are
//! read-only; to change one, clone it (`K::clone(&obj)`) and send the change to the server.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::Arc;

use parking_lot::RwLock;

use super::compact::{Codec, Encoded};
use super::index::{IndexError, IndexFn, Indexers};
use super::storage::{Compact, DecodeError, Decoded, Slot, StorageMode};
use super::table::Table;
use super::{KnownObjects, NAMESPACE_INDEX, ObjectKey};
use crate::resource::Object;
use crate::selector::LabelSelector;

/// The table in the mode the cache was given: one `match` per call, so that each mode's table
/// is compiled for its own entries (the decoded mode's exactly as if it were the only one).
enum Inner<K> {
    Decoded(Table<K, Decoded, Arc<K>>),
    Compact(Table<K, Compact<K>, Slot<K>>),
}

/// Runs `$body` with `$table` bound to the cache's table, whatever its mode.
macro_rules! with_table {
    ($inner:expr, |$table:ident| $body:expr) => {
        match $inner {
            Inner::Decoded($table) => $body,
            Inner::Compact($table) => $body,
        }
    };
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

impl<K: Object> Cache<K> {
    /// The object stored under `key` (`namespace/name` or `name`).
    ///
    /// In [compact storage](Indexer::with_compact_storage), an object that cannot be decoded
    /// reads as absent here (logged and counted); [`try_get_by_key`](Self::try_get_by_key)
    /// tells it apart.
    #[must_use]
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.try_get_by_key(key).ok().flatten()
    }

    /// The object stored under `key`, or why it cannot be read: in
    /// [compact storage](Indexer::with_compact_storage), a [`DecodeError`] for an object that
    /// could not be decoded, where [`get_by_key`](Self::get_by_key) reads it as absent.
    ///
    /// # Errors
    ///
    /// [`DecodeError`] when the object is stored but cannot be decoded (logged and counted in
    /// [`decode_failures`](Self::decode_failures)).
    pub fn try_get_by_key(&self, key: &str) -> Result<Option<Arc<K>>, DecodeError> {
        with_table!(&*self.inner.read(), |table| table.get(key))
    }

    /// How many reads of this cache found an object that could not be decoded from its
    /// compact form, since compact storage was chosen (zero for a decoded cache).
    #[must_use]
    pub fn decode_failures(&self) -> u64 {
        with_table!(&*self.inner.read(), |table| table.decode_failures())
    }

    /// The stored object with the same key as `probe`.
    #[must_use]
    pub fn get(&self, probe: &K) -> Option<Arc<K>> {
        self.get_by_key(ObjectKey::of(probe).as_str())
    }

    /// Every stored object, in no particular order.
    #[must_use]
    pub fn list(&self) -> Vec<Arc<K>> {
        with_table!(&*self.inner.read(), |table| table.list())
    }

    /// Every stored key, in no particular order.
    #[must_use]
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        with_table!(&*self.inner.read(), |table| table.items.keys().cloned().collect())
    }

    /// Number of stored objects.
    #[must_use]
    pub fn len(&self) -> usize {
        with_table!(&*self.inner.read(), |table| table.items.len())
    }

    /// Whether the cache holds no object.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        with_table!(&*self.inner.read(), |table| table.items.is_empty())
    }

    /// Calls `f` on each stored object under one read lock, without collecting them.
    ///
    /// In [compact storage](Indexer::with_compact_storage) each object is decoded for the call
    /// (those among the recent objects excepted), and not kept among the recent objects.
    pub fn for_each(&self, mut f: impl FnMut(&Arc<K>)) {
        with_table!(&*self.inner.read(), |table| table.for_each(&mut f));
    }

    /// How this cache holds its objects.
    #[must_use]
    pub fn storage_mode(&self) -> StorageMode {
        with_table!(&*self.inner.read(), |table| table.storage.mode())
    }

    /// Whether the cache holds an object under `key`, without reading it.
    #[must_use]
    pub fn contains_key(&self, key: &str) -> bool {
        with_table!(&*self.inner.read(), |table| table.contains_key(key))
    }

    /// The stored object with `listed`'s key and resource version, for a relist to keep in
    /// place of `listed`; see [`KnownObjects::unchanged`].
    pub(crate) fn unchanged(&self, listed: &K) -> Option<Arc<K>> {
        with_table!(&*self.inner.read(), |table| table.unchanged(listed))
    }

    /// The objects whose labels match `selector`, only those of `namespace` if given; unordered.
    ///
    /// The query reads only candidates where it can: those the label index offers for the most
    /// selective requirement it can answer (`key=value`, `key in (…)`, `key`, and `key>n`/`key<n`
    /// through `key`), or the namespace's objects if fewer; other requirements and the
    /// namespace are then checked on the candidates. A selector of only `!=`, `notin` and `!key`
    /// requirements, or a cache without the label index, reads the namespace or every object.
    pub(crate) fn select(&self, namespace: Option<&str>, selector: &LabelSelector) -> Vec<Arc<K>> {
        with_table!(&*self.inner.read(), |table| table.select(namespace, selector))
    }

    /// The objects found under any of the values that index `index_name` gives `probe`,
    /// each once.
    ///
    /// # Errors
    ///
    /// [`IndexError::NotFound`] for an unknown index.
    pub fn index(&self, index_name: &str, probe: &K) -> Result<Vec<Arc<K>>, IndexError> {
        with_table!(&*self.inner.read(), |table| table.index_by_probe(index_name, probe))
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
        with_table!(&*self.inner.read(), |table| table.by_index(index_name, value))
    }

    /// The keys indexed under `value` in index `index_name`, sorted.
    ///
    /// # Errors
    ///
    /// [`IndexError::NotFound`] for an unknown index.
    #[doc(alias = "IndexKeys")]
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        with_table!(&*self.inner.read(), |table| table.index_keys(index_name, value))
    }

    /// Every value of index `index_name` that at least one object is indexed under.
    ///
    /// # Errors
    ///
    /// [`IndexError::NotFound`] for an unknown index.
    #[doc(alias = "ListIndexFuncValues")]
    pub fn index_values(&self, index_name: &str) -> Result<Vec<String>, IndexError> {
        with_table!(&*self.inner.read(), |table| table.index_values(index_name))
    }

    /// The names of the indices this cache maintains.
    #[must_use]
    pub fn index_names(&self) -> Vec<String> {
        with_table!(&*self.inner.read(), |table| table.indices.keys().cloned().collect())
    }

    /// Adds indices; each one indexes every object already stored before this returns.
    ///
    /// # Errors
    ///
    /// [`IndexError::Conflict`] if a name is already taken; then nothing is added.
    #[doc(alias = "AddIndexers")]
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), IndexError> {
        with_table!(&mut *self.inner.write(), |table| table.add_indexers(indexers))
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

impl<K: Object> KnownObjects<K> for Cache<K> {
    fn list_keys(&self) -> Vec<ObjectKey> {
        Cache::list_keys(self)
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        Cache::get_by_key(self, key)
    }

    fn contains_key(&self, key: &str) -> bool {
        Cache::contains_key(self, key)
    }

    fn unchanged(&self, listed: &K) -> Option<Arc<K>> {
        Cache::unchanged(self, listed)
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

impl<K: Object> Default for Indexer<K> {
    fn default() -> Self {
        Self::new(Indexers::new())
    }
}

impl<K: Object> Deref for Indexer<K> {
    type Target = Cache<K>;

    fn deref(&self) -> &Cache<K> {
        &self.cache
    }
}

impl<K: Object> Indexer<K> {
    /// An empty store with the given indices.
    #[must_use]
    pub fn new(indexers: Indexers<K>) -> Self {
        let inner = Inner::Decoded(Table::new(Decoded, indexers));
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
        with_table!(&mut *self.cache.inner.write(), |table| table.set_label_index(enabled));
    }

    /// Holds the objects in a compact form: each as its JSON, LZ4-compressed, with its labels
    /// decoded beside it, and the `recent` objects read or changed (by a watched event) last
    /// kept decoded too (zero keeps none; an informer's listed objects do not join them until
    /// read: a list would flush them all to keep its last few). Objects already stored are
    /// converted at once.
    ///
    /// Reads hand out `Arc<K>` as before, decoded from the compact form on each read of an
    /// object that is not among the recent ones. Indices and the label index are computed on
    /// the decoded object when it is stored, so every query answers exactly as in the default
    /// mode; only the objects it returns are decoded, never the ones it passes over.
    ///
    /// # When to choose it
    ///
    /// When memory matters more than the cost of a read. A decoded k8s-openapi object takes
    /// several times its JSON (a pod: about 26 KB of heap for 7 KB of JSON, since every optional
    /// sub-struct is held inline), and the JSON compresses about 2.5 times, so a compact cache
    /// takes about an eighth of the memory (20,000 recorded pods: 82 MiB against 690 MiB,
    /// `examples/compact_reads.rs`). In exchange a read of an object not among the recent ones
    /// costs a decompression and a decode (about 22 µs for such a pod, with the `client`
    /// feature's simd-json decoder, against 0.6 µs), and so does each object a `list` returns:
    /// the mode suits large caches read mostly through handler notifications and by key within
    /// a working set, not controllers that list whole namespaces in a hot loop. A recent object
    /// reads as fast as in the default mode; each one kept costs a decoded object. Half of
    /// `recent` is a queue every object written (by a watched event) or read first enters,
    /// where it stays while about `recent / 2` others enter after it: a worker that reads back each changed object within that many changes reads it decoded. The other
    /// half keeps the objects used twice while in the queue (written then read back, or read
    /// twice), and a scan (a `list` of a whole namespace) does not flush them. So choose
    /// `recent` at about twice the larger of the number of objects read repeatedly (the objects
    /// of one reconcile) and how far a worker may fall behind its handler.
    ///
    /// Writes cost more too: each stored object is encoded (an informer's listed objects once,
    /// as their list arrives, the form then stored as it is), and an update or delete decodes the
    /// object it replaces (for the handlers' `old` and to take it out of the indices) unless it
    /// is among the recent ones. A resync decodes every object. Handlers still get
    /// `Arc<K>`s, and hold them as long as they like.
    ///
    /// The type's `Serialize` and `Deserialize` must round-trip (k8s-openapi's types,
    /// `informer-gen`'s and kube-rs's do). An object that cannot be encoded is kept decoded (a
    /// warning is logged). One whose compact form cannot be decoded is a [`DecodeError`] for
    /// [`try_get_by_key`](Cache::try_get_by_key), and absent for the reads that return objects
    /// without a `Result` (`get_by_key`, `list`, listers); each failed decode is logged with the
    /// object's key (never its data) and counted ([`decode_failures`](Cache::decode_failures),
    /// and the `informer_cache_decode_failures_total` metric).
    ///
    /// No object's data outlives the object: the compression dictionary a compact cache learns
    /// holds the shape of its first objects (field names and punctuation), never their values,
    /// and the buffers reads decode through are wiped after each read.
    ///
    /// An informer with a compact cache never holds a whole list decoded either: each listed
    /// object waits in compact form until the list is complete, then is decoded again as the
    /// informer's queue has room for it (see [`ReflectorStore::compact_lists`](crate::reflector::ReflectorStore::compact_lists)).
    ///
    /// ```
    /// # use informer_runtime::{Indexer, lister::Lister, selector::LabelSelector};
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    /// let indexer = Indexer::<Pod>::with_namespace_index()
    ///     .with_label_index()
    ///     .with_compact_storage(128);
    /// indexer.add(Pod {
    ///     metadata: ObjectMeta {
    ///         namespace: Some("default".into()),
    ///         name: Some("web-0".into()),
    ///         labels: Some([("app".to_owned(), "web".to_owned())].into()),
    ///         ..ObjectMeta::default()
    ///     },
    ///     ..Pod::default()
    /// }.into());
    /// let lister = Lister::new(indexer.cache());
    /// let web_0 = lister.namespace("default").get("web-0").unwrap(); // an Arc<Pod>, as ever
    /// assert_eq!(web_0.metadata.name.as_deref(), Some("web-0"));
    /// assert_eq!(lister.list(&LabelSelector::parse("app=web").unwrap()).len(), 1);
    /// ```
    #[must_use]
    pub fn with_compact_storage(self, recent: usize) -> Self {
        self.set_storage_mode(StorageMode::Compact { recent });
        self
    }

    /// Converts the stored objects to `mode`, keeping every index; nothing when the cache is
    /// in that mode already.
    pub(crate) fn set_storage_mode(&self, mode: StorageMode) {
        let mut inner = self.cache.inner.write();
        let current = with_table!(&*inner, |table| table.storage.mode());
        if current == mode {
            return;
        }
        let converted = match mode {
            StorageMode::Decoded => {
                Inner::Decoded(with_table!(&*inner, |table| table.convert(Decoded)))
            }
            StorageMode::Compact { recent } => Inner::Compact(with_table!(&*inner, |table| {
                table.convert(Compact::new(recent))
            })),
        };
        *inner = converted;
    }

    /// The codec of this cache's compact forms, when it is in compact storage: what its
    /// reflector encodes a list's items with, so that the cache takes their forms as they are.
    pub(crate) fn compact_codec(&self) -> Option<Arc<Codec<K>>> {
        match &*self.cache.inner.read() {
            Inner::Decoded(_) => None,
            Inner::Compact(table) => Some(Arc::clone(table.storage.codec())),
        }
    }

    /// The compact form of the object cached under `key`, if it is at `resource_version`
    /// (never for an empty one): what a relist stages for an unchanged object instead of a
    /// new form. `None` in the decoded mode.
    pub(crate) fn held_form(
        &self,
        key: &ObjectKey,
        resource_version: &str,
    ) -> Option<Arc<Encoded>> {
        match &*self.cache.inner.read() {
            Inner::Decoded(_) => None,
            Inner::Compact(table) => {
                table.items.get(key).and_then(|entry| Compact::form_at(entry, resource_version))
            }
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
        with_table!(&mut *self.cache.inner.write(), |table| table.insert(key, obj, true))
    }

    /// [`insert`](Self::insert) for an item of a list: in compact storage it does not join the
    /// recent objects. A list's items would flush them all, object after object, to leave the
    /// last few of the list, whose reads are no likelier than the others'; and each one kept
    /// for a while holds on to memory among the list's freed objects. Its handlers get the
    /// object in their notification; a read of it later decodes it once, and keeps it.
    pub(crate) fn insert_listed(&self, key: ObjectKey, obj: Arc<K>) -> Option<Arc<K>> {
        with_table!(&mut *self.cache.inner.write(), |table| table.insert(key, obj, false))
    }

    /// Removes the object stored under `key`; returns it, or `None` if there was none (or, in
    /// [compact storage](Self::with_compact_storage), if it could not be decoded: see there).
    #[allow(clippy::must_use_candidate, reason = "the removed object is optional information")]
    pub fn delete_key(&self, key: &str) -> Option<Arc<K>> {
        with_table!(&mut *self.cache.inner.write(), |table| table.delete(key))
    }

    /// Removes the object with the same key as `obj`.
    pub fn delete(&self, obj: &K) -> Option<Arc<K>> {
        self.delete_key(ObjectKey::of(obj).as_str())
    }

    /// Swaps the whole content for `list` and rebuilds every index.
    pub fn replace(&self, list: impl IntoIterator<Item = Arc<K>>) {
        let items: HashMap<ObjectKey, Arc<K>> =
            list.into_iter().map(|obj| (ObjectKey::of(&*obj), obj)).collect();
        with_table!(&mut *self.cache.inner.write(), |table| table.replace(items));
    }
}

// The unknown index function is a closure; print the shape, not the content.
impl<K> std::fmt::Debug for Cache<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.inner.read();
        with_table!(&*inner, |table| f
            .debug_struct("Cache")
            .field("len", &table.items.len())
            .field("indices", &table.indices.keys().collect::<Vec<_>>())
            .field("label_index", &table.labels.is_some())
            .field("storage", &table.storage.mode())
            .finish())
    }
}

impl<K> std::fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Indexer").field(&self.cache).finish()
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod compact_tests;
