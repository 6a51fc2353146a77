//! The cache at the end of the data flow: object keys, the thread-safe store and its indices.
//!
//! **Who it is for.** Programs read the cache through a [`Cache`] or a lister, add indices
//! ([`Indexers`]) and choose compact storage for large caches; the [`Indexer`] itself is the
//! informer's.
//!
//! The controller applies each popped delta to an [`Indexer`]; listers and users read it through
//! a [`Cache`]. Objects are stored as `Arc<K>` and handed out as clones of that `Arc`: readers
//! share the allocation and must treat it as read-only. Opt-in, a cache holds them in a compact
//! form instead and decodes them on read ([`Indexer::with_compact_storage`]); reads still hand
//! out `Arc<K>`.

pub(crate) mod compact;
mod index;
mod labels;
mod members;
mod storage;
mod table;
mod thread_safe;

use std::sync::Arc;

pub use index::{IndexError, IndexFn, IndexName, Indexers, NAMESPACE_INDEX, namespace_index};
pub use storage::{DecodeError, StorageMode};
pub use thread_safe::{Cache, Indexer};

// Keys are defined beside the objects they name, below the store, so that the list/watch
// seam can name them without depending on the store.
pub use crate::resource::{KeyError, ObjectKey, split_meta_namespace_key};

use crate::resource::Object;

/// The objects the consumer of a queue already knows: what the `DeltaFIFO` consults to tell real
/// deletions from repeated ones and to find what a relist or a resync must cover.
///
/// This is the subset of the [`Indexer`] that the queue uses.
#[doc(alias = "KeyListerGetter")]
pub trait KnownObjects<K>: Send + Sync {
    /// Every key in the cache.
    fn list_keys(&self) -> Vec<ObjectKey>;
    /// The cached object for `key`.
    fn get_by_key(&self, key: &str) -> Option<Arc<K>>;

    /// Whether the cache holds an object under `key`; reads no object (a compact cache would
    /// decode it).
    fn contains_key(&self, key: &str) -> bool {
        self.get_by_key(key).is_some()
    }

    /// The cached object with `listed`'s key and resource version, for a relist to keep in
    /// place of `listed` so that an unchanged object is held once. `None` is always correct:
    /// `listed` is then kept. A compact cache answers only from its decoded recent objects,
    /// since decoding another copy would save nothing.
    fn unchanged(&self, listed: &K) -> Option<Arc<K>>
    where
        K: Object,
    {
        crate::resource::same_version(self.get_by_key(ObjectKey::of(listed).as_str()), listed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Port of client-go's TestSplitMetaNamespaceKey.
    #[test]
    fn split_keys() {
        assert_eq!(split_meta_namespace_key("a").unwrap(), ("", "a"));
        assert_eq!(split_meta_namespace_key("a/b").unwrap(), ("a", "b"));
        assert_eq!(split_meta_namespace_key("/b").unwrap(), ("", "b"));
        let err = split_meta_namespace_key("a/b/c").unwrap_err();
        assert_eq!(err.key, "a/b/c");
        assert!(err.to_string().contains("a/b/c"));
    }

    #[test]
    fn keys_of_scopes() {
        assert_eq!(ObjectKey::new(Some("ns"), "n").as_str(), "ns/n");
        assert_eq!(ObjectKey::new(Some(""), "n").as_str(), "n");
        assert_eq!(ObjectKey::new(None, "n").split().unwrap(), ("", "n"));
    }
}
