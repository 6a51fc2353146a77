//! How the cache holds its objects: decoded (`Arc<K>`, the default) or compact (the object's
//! JSON, compressed, decoded again when read, with a bounded cache of recently read objects).
//!
//! The store's table and its indices are written once, generically over a [`Storage`]: what an
//! entry is, how an entry is made from a new object, and how an object is had back from an
//! entry. [`Decoded`] makes the entry the object itself, so the default cache pays nothing for
//! the choice (its entries, indices and queries compile to what they were before there was a
//! choice); [`Compact`] is the other mode, chosen per cache with
//! [`StorageMode::Compact`].
//!
//! The compact form is the object's JSON, LZ4-compressed ([`compact`](super::compact) says
//! why). An entry that cannot be decoded is a [`DecodeError`] for
//! [`Cache::try_get_by_key`](super::Cache::try_get_by_key), and absent for the reads that return
//! objects without a `Result`; each failed decode is logged, with the key, and counted
//! ([`Cache::decode_failures`](super::Cache::decode_failures)).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use quick_cache::sync::Cache as RecentCache;

use super::ObjectKey;
use super::compact::{Codec, Encoded, FlatLabels};
use crate::resource::Object;

pub(super) use super::compact::Labels;

/// What an object without labels has.
static NO_LABELS: Labels = Labels::new();

/// An entry's labels, as its storage holds them: a decoded object's map, or a compact entry's
/// [`FlatLabels`]. Both are in key order.
#[derive(Clone, Copy)]
pub(super) enum LabelsRef<'a> {
    /// A decoded object's `metadata.labels`.
    Map(&'a Labels),
    /// A compact entry's copy.
    Flat(&'a FlatLabels),
}

impl<'a> LabelsRef<'a> {
    /// The labels of an object whose `metadata.labels` is `labels`.
    pub(super) fn of(labels: Option<&'a Labels>) -> Self {
        Self::Map(labels.unwrap_or(&NO_LABELS))
    }

    /// No labels.
    pub(super) fn none() -> Self {
        Self::Map(&NO_LABELS)
    }

    /// The value of the label `key`.
    pub(super) fn get(self, key: &str) -> Option<&'a str> {
        match self {
            Self::Map(map) => map.get(key).map(String::as_str),
            Self::Flat(flat) => flat.get(key),
        }
    }

    /// Every label, key and value, in key order.
    pub(super) fn iter(self) -> impl Iterator<Item = (&'a str, &'a str)> {
        let (map, flat) = match self {
            Self::Map(map) => (Some(map), None),
            Self::Flat(flat) => (None, Some(flat)),
        };
        let map = map.into_iter().flatten().map(|(k, v)| (k.as_str(), v.as_str()));
        let flat = flat.into_iter().flat_map(|flat| (0..flat.len()).map(|i| flat.at(i)));
        map.chain(flat)
    }
}

/// How a cache holds its objects; see [`Indexer::with_compact_storage`](super::Indexer::with_compact_storage).
///
/// ```
/// # use informer_runtime::store::{Indexer, StorageMode};
/// # use k8s_openapi::api::core::v1::Pod;
/// let indexer = Indexer::<Pod>::with_namespace_index().with_compact_storage(256);
/// assert_eq!(indexer.storage_mode(), StorageMode::Compact { recent: 256 });
/// assert_eq!(Indexer::<Pod>::default().storage_mode(), StorageMode::Decoded);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum StorageMode {
    /// Objects are held decoded, as `Arc<K>`: a read clones an `Arc`. The default.
    #[default]
    Decoded,
    /// Objects are held as their JSON, compressed, with their labels decoded beside it; a read
    /// decodes the object, unless it is among the `recent` objects read or written last, which are kept
    /// decoded (zero keeps none).
    Compact {
        /// How many recently read or written objects are kept decoded, at most.
        recent: usize,
    },
}

/// A cached object that could not be decoded from its compact form (see
/// [`Indexer::with_compact_storage`]): what [`Cache::try_get_by_key`](super::Cache::try_get_by_key)
/// returns instead of reading it as absent.
///
/// The object stays cached under its key (it is listed, and its index entries stay) until its
/// next change or deletion replaces it, or a relist does. Only a type whose `Serialize` and
/// `Deserialize` do not round-trip, or memory that was corrupted, gets here: report it, with
/// the type, as a bug.
///
/// [`Indexer::with_compact_storage`]: super::Indexer::with_compact_storage
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the cached {kind} {key} could not be decoded from its compact form ({reason}); it stays \
     unreadable until its next change, its deletion or a relist replaces it"
)]
pub struct DecodeError {
    /// The object's key.
    pub key: ObjectKey,
    /// The object's Rust type.
    pub kind: &'static str,
    /// Why it could not be decoded: the decompressor's or decoder's message. It never quotes
    /// the object's data.
    pub reason: String,
}

/// What the store's table and indices hold per object, and how it is made and read.
///
/// Every method runs under the store's lock (reads under the read lock, writes under the write
/// lock), which is what keeps a [`Compact`] store's cache of recent objects in step with its
/// table: a read can only put back an object it decoded from the entry that is current.
pub(super) trait Storage<K>: Send + Sync {
    /// An object as the table and each index entry hold it. Cloned into every index an object
    /// is under, so it must be cheap to clone (an `Arc`).
    type Entry: Clone + Send + Sync;

    /// The entry for `obj`, which is being stored under `key`.
    fn entry(&self, key: &ObjectKey, obj: &Arc<K>) -> Self::Entry;

    /// The labels of an entry, which selectors are matched against.
    fn labels(entry: &Self::Entry) -> LabelsRef<'_>;

    /// The namespace of an entry stored under `key`, for a selector query without the
    /// namespace index.
    fn namespace<'a>(key: &'a ObjectKey, entry: &'a Self::Entry) -> Option<&'a str>;

    /// Whether two entries hold the same allocation (the index tests check that every index
    /// holds the stored entry itself).
    #[cfg(test)]
    fn same(a: &Self::Entry, b: &Self::Entry) -> bool;

    /// The object of `entry`, for a read: counts as a use for the cache of recent objects.
    ///
    /// # Errors
    ///
    /// [`DecodeError`] when the entry cannot be decoded (logged and counted).
    fn load(&self, key: &ObjectKey, entry: &Self::Entry) -> Result<Arc<K>, DecodeError>;

    /// The object of `entry` for the store's own bulk work (rebuilding an index, replaying the
    /// cache): decodes without filling the cache of recent objects with what nobody asked for.
    /// `None` only when the entry cannot be decoded (logged and counted).
    fn load_quietly(&self, key: &ObjectKey, entry: &Self::Entry) -> Option<Arc<K>>;

    /// The object of `entry`, which is leaving the table (replaced or deleted): forgets it as a
    /// recent object. `None` only when it cannot be decoded (logged and counted).
    fn evict(&self, key: &ObjectKey, entry: &Self::Entry) -> Option<Arc<K>>;

    /// The object of `key` if it can be had without decoding.
    fn peek(&self, key: &ObjectKey, entry: &Self::Entry) -> Option<Arc<K>>;

    /// Whether `obj` comes with `entry` itself as its form: a relist found the object
    /// unchanged and handed the cache's own form back with it (see `staged_list`), so the
    /// entry and its index values stand as they are. The form is taken if so.
    fn is_prepared_entry(&self, entry: &Self::Entry, obj: &Arc<K>) -> bool;

    /// `obj` was just stored under `key` by a watched change: the newest version, which
    /// handlers are about to read too, seeds the cache of recent objects. (A list's items do
    /// not: see `Indexer::insert_listed`.)
    fn stored(&self, key: &ObjectKey, obj: Arc<K>);

    /// The table was emptied.
    fn clear(&self);

    /// How many decodes of an entry failed so far.
    fn decode_failures(&self) -> u64;
}

/// The default: entries are the objects themselves.
#[derive(Debug, Default)]
pub(super) struct Decoded;

impl<K: Object> Storage<K> for Decoded {
    type Entry = Arc<K>;

    #[inline]
    fn entry(&self, _key: &ObjectKey, obj: &Arc<K>) -> Arc<K> {
        Arc::clone(obj)
    }

    #[inline]
    fn labels(entry: &Arc<K>) -> LabelsRef<'_> {
        LabelsRef::of(entry.meta().labels.as_ref())
    }

    fn namespace<'a>(_key: &'a ObjectKey, entry: &'a Arc<K>) -> Option<&'a str> {
        entry.meta().namespace.as_deref()
    }

    #[cfg(test)]
    fn same(a: &Arc<K>, b: &Arc<K>) -> bool {
        Arc::ptr_eq(a, b)
    }

    #[inline]
    fn load(&self, _key: &ObjectKey, entry: &Arc<K>) -> Result<Arc<K>, DecodeError> {
        Ok(Arc::clone(entry))
    }

    #[inline]
    fn load_quietly(&self, _key: &ObjectKey, entry: &Arc<K>) -> Option<Arc<K>> {
        Some(Arc::clone(entry))
    }

    #[inline]
    fn evict(&self, _key: &ObjectKey, entry: &Arc<K>) -> Option<Arc<K>> {
        Some(Arc::clone(entry))
    }

    #[inline]
    fn peek(&self, _key: &ObjectKey, entry: &Arc<K>) -> Option<Arc<K>> {
        Some(Arc::clone(entry))
    }

    #[inline]
    fn is_prepared_entry(&self, _entry: &Arc<K>, _obj: &Arc<K>) -> bool {
        false
    }

    #[inline]
    fn stored(&self, _key: &ObjectKey, _obj: Arc<K>) {}

    fn clear(&self) {}

    fn decode_failures(&self) -> u64 {
        0
    }
}

impl Decoded {
    /// The mode this storage implements.
    #[allow(clippy::unused_self, reason = "called as `table.storage.mode()` in either mode")]
    pub(super) fn mode(&self) -> StorageMode {
        StorageMode::Decoded
    }
}

/// An entry of a [`Compact`] store.
pub(super) enum Slot<K> {
    /// The object's JSON: what nearly every entry is.
    Encoded(Arc<Encoded>),
    /// An object whose serialisation failed (a `Serialize` impl that can refuse, such as a map
    /// with non-string keys), kept decoded rather than lost; logged when stored.
    Decoded(Arc<K>),
}

impl<K> Clone for Slot<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Encoded(encoded) => Self::Encoded(Arc::clone(encoded)),
            Self::Decoded(obj) => Self::Decoded(Arc::clone(obj)),
        }
    }
}

/// Objects held in compact form, decoded on read, with a bounded cache of recently used ones.
///
/// The cache of recent objects is [`quick_cache`]'s (S3-FIFO eviction, concurrent reads), split
/// in two halves ([`HOT_SHARE`]): an object written or read enters the first, a queue (the
/// second while it has room, as when the cache starts), where it stays while fewer than about
/// `recent / 2` others enter after it, long enough for a controller's worker to read back what
/// its handler was told of; one used twice while there (written then read, or read twice)
/// moves to the second when it leaves the queue, where an object stays while it is read again
/// within about two turns of that half. So an object read once, as by a lister's `list` of a
/// whole namespace, is evicted before one read again and again, and a scan does not flush the
/// objects a controller keeps reading. Its entries are replaced or dropped under the store's
/// write lock whenever the stored object changes, so it never answers with an old version.
pub(super) struct Compact<K> {
    recent: Option<RecentCache<ObjectKey, Arc<K>>>,
    capacity: usize,
    /// The dictionary every entry's compact form may refer to (the shape of this cache's
    /// objects), the decoders, and the forms the reflector made ahead.
    codec: Arc<Codec<K>>,
    /// How many decodes of an entry failed.
    failures: AtomicU64,
}

impl<K: Object> Compact<K> {
    pub(super) fn new(recent: usize) -> Self {
        Self {
            recent: (recent > 0).then(|| recent_cache(recent)),
            capacity: recent,
            codec: Arc::default(),
            failures: AtomicU64::new(0),
        }
    }

    /// The codec of this store's forms.
    pub(super) fn codec(&self) -> &Arc<Codec<K>> {
        &self.codec
    }

    /// The form of `entry` if it holds the object at `resource_version`.
    pub(super) fn form_at(entry: &Slot<K>, resource_version: &str) -> Option<Arc<Encoded>> {
        match entry {
            Slot::Encoded(form) if form.is_at(resource_version) => Some(Arc::clone(form)),
            _ => None,
        }
    }

    /// The object of `encoded`, decoded; a failure is logged (the key and why, never the
    /// object's data) and counted.
    fn decode(&self, key: &ObjectKey, encoded: &Encoded) -> Result<Arc<K>, DecodeError> {
        match self.codec.decode(encoded.bytes()) {
            Ok(obj) => Ok(Arc::new(obj)),
            Err(undecodable) => {
                // Bytes this store encoded from a valid object: only a type whose serde does not
                // round-trip, or corrupted memory, gets here. Never a panic on a read.
                self.failures.fetch_add(1, Ordering::Relaxed);
                let kind = std::any::type_name::<K>();
                tracing::error!(
                    kind,
                    %key,
                    reason = %undecodable,
                    "a cached object could not be decoded from its compact form"
                );
                Err(DecodeError { key: key.clone(), kind, reason: undecodable.to_string() })
            }
        }
    }

    /// How many objects the cache of recent objects holds now.
    #[cfg(test)]
    pub(super) fn recent_len(&self) -> usize {
        self.recent.as_ref().map_or(0, RecentCache::len)
    }
}

/// The share of the recent objects kept for those used twice while in the queue (written then
/// read, or read twice); the rest is the queue that every object written or read enters first.
///
/// `quick_cache`'s default, 97 %, suits caches whose reads repeat; a controller's do not: its
/// worker reads each changed object once, shortly after the change was written to the store
/// (and entered the queue). With a queue of 3 % (two objects in each shard of 64), an object
/// 16 writes behind was still decoded for about half the reads, 64 behind for none once the
/// cache was full, whatever `recent` was. Half and half keeps an object for its first read
/// while up to about `recent / 2` others enter after it (`examples/compact_reads.rs`, 20,000
/// pods, `recent` 1,024, each read 200 writes behind: 1.5–2.3 µs a read, against 36 µs without
/// recent objects; 62 µs before), and the objects read again and again through scans while
/// they fit in the other half (a working set of 400 re-read between lists of 2,000: 99.8 % of
/// its reads answered decoded; one of 700: 83 %). What it gives up: a list of more than
/// `recent / 2` objects read again and again, each once a list, is decoded on every list (the
/// example's 1,000 pods of `app=app-00`: 71–81 ms a list, against 43–50 ms; these times vary
/// by ±20 % from run to run on the machine they were taken on).
const HOT_SHARE: f64 = 0.5;

/// A cache of recent objects that never holds more than `capacity`.
///
/// `quick_cache` splits its capacity between shards (each with its own lock, for concurrent
/// readers), rounding each shard's share up; a capacity that is a multiple of the shard count
/// keeps the sum at `capacity` exactly. Shards of at least 64 objects, at most 16 of them.
fn recent_cache<K: Object>(capacity: usize) -> RecentCache<ObjectKey, Arc<K>> {
    let mut shards = 1;
    while shards < 16 && capacity / (shards * 2) >= 64 {
        shards *= 2;
    }
    let capacity = capacity - capacity % shards;
    let options = quick_cache::OptionsBuilder::new()
        .estimated_items_capacity(capacity)
        .weight_capacity(capacity as u64)
        .hot_allocation(HOT_SHARE)
        // No ghosts: `quick_cache` remembers keys it evicted from the queue and inserts such a
        // key straight into the other half without evicting from that half, so each ghost
        // read again took a place from the queue, not given back while no queued object was
        // read. Lists read again and again make them by the hundred: a cache read through
        // lists, then by key behind its writes, ended with a queue of almost nothing, where no
        // written object stayed until its read (0 of 19,800 reads 200 writes behind in
        // `examples/compact_reads.rs`). Without them, an object enters the other half only by
        // being used twice while in the queue.
        .ghost_allocation(0.0)
        .shards(shards)
        .build();
    match options {
        Ok(options) => RecentCache::with_options(
            options,
            quick_cache::UnitWeighter,
            quick_cache::DefaultHashBuilder::default(),
            quick_cache::sync::DefaultLifecycle::default(),
        ),
        // Every option is set above; should quick_cache ever refuse them, its defaults will do.
        Err(_) => RecentCache::new(capacity),
    }
}

impl<K: Object> Storage<K> for Compact<K> {
    type Entry = Slot<K>;

    fn entry(&self, key: &ObjectKey, obj: &Arc<K>) -> Slot<K> {
        // The form the reflector made of this very object as its list arrived, if it did.
        if let Some(prepared) = self.codec.take_prepared(obj) {
            return Slot::Encoded(prepared);
        }
        match self.codec.encode(obj) {
            Ok(json) => Slot::Encoded(Arc::new(Encoded::new(&**obj, json))),
            Err(error) => {
                tracing::warn!(
                    kind = std::any::type_name::<K>(),
                    %key,
                    %error,
                    "an object could not be encoded for the compact cache; it is kept decoded"
                );
                Slot::Decoded(Arc::clone(obj))
            }
        }
    }

    fn labels(entry: &Slot<K>) -> LabelsRef<'_> {
        match entry {
            Slot::Encoded(encoded) => LabelsRef::Flat(encoded.labels()),
            Slot::Decoded(obj) => LabelsRef::of(obj.meta().labels.as_ref()),
        }
    }

    fn namespace<'a>(key: &'a ObjectKey, entry: &'a Slot<K>) -> Option<&'a str> {
        match entry {
            // The key is `namespace/name` exactly when the object has a namespace.
            Slot::Encoded(_) => key.as_str().split_once('/').map(|(namespace, _)| namespace),
            Slot::Decoded(obj) => obj.meta().namespace.as_deref(),
        }
    }

    #[cfg(test)]
    fn same(a: &Slot<K>, b: &Slot<K>) -> bool {
        match (a, b) {
            (Slot::Encoded(a), Slot::Encoded(b)) => Arc::ptr_eq(a, b),
            (Slot::Decoded(a), Slot::Decoded(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    fn load(&self, key: &ObjectKey, entry: &Slot<K>) -> Result<Arc<K>, DecodeError> {
        let encoded = match entry {
            Slot::Encoded(encoded) => encoded,
            Slot::Decoded(obj) => return Ok(Arc::clone(obj)),
        };
        let Some(recent) = &self.recent else { return self.decode(key, encoded) };
        if let Some(obj) = recent.get(key) {
            return Ok(obj);
        }
        let obj = self.decode(key, encoded)?;
        recent.insert(key.clone(), Arc::clone(&obj));
        Ok(obj)
    }

    fn load_quietly(&self, key: &ObjectKey, entry: &Slot<K>) -> Option<Arc<K>> {
        match entry {
            Slot::Encoded(encoded) => {
                self.peek(key, entry).or_else(|| self.decode(key, encoded).ok())
            }
            Slot::Decoded(obj) => Some(Arc::clone(obj)),
        }
    }

    fn evict(&self, key: &ObjectKey, entry: &Slot<K>) -> Option<Arc<K>> {
        let recent = self.recent.as_ref().and_then(|r| r.remove(key)).map(|(_, obj)| obj);
        match entry {
            Slot::Encoded(encoded) => recent.or_else(|| self.decode(key, encoded).ok()),
            Slot::Decoded(obj) => Some(Arc::clone(obj)),
        }
    }

    fn peek(&self, key: &ObjectKey, entry: &Slot<K>) -> Option<Arc<K>> {
        match entry {
            Slot::Encoded(_) => self.recent.as_ref().and_then(|r| r.peek(key)),
            Slot::Decoded(obj) => Some(Arc::clone(obj)),
        }
    }

    fn is_prepared_entry(&self, entry: &Slot<K>, obj: &Arc<K>) -> bool {
        match entry {
            Slot::Encoded(held) => self.codec.take_prepared_if(obj, held),
            Slot::Decoded(_) => false,
        }
    }

    fn stored(&self, key: &ObjectKey, obj: Arc<K>) {
        if let Some(recent) = &self.recent {
            recent.insert(key.clone(), obj);
        }
    }

    fn clear(&self) {
        if let Some(recent) = &self.recent {
            recent.clear();
        }
    }

    fn decode_failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }
}

impl<K> Compact<K> {
    /// The mode this storage implements.
    pub(super) fn mode(&self) -> StorageMode {
        StorageMode::Compact { recent: self.capacity }
    }
}

#[cfg(test)]
impl<K: Object> Compact<K> {
    /// Every byte this storage holds besides its entries: the dictionary and the decoders'
    /// buffers.
    pub(super) fn held_bytes(&self) -> Vec<u8> {
        self.codec.held_bytes()
    }
}
