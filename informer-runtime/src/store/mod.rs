//! The cache at the end of the data flow: object keys, the thread-safe store and its indices.
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

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

pub use index::{IndexFn, IndexName, Indexers, NAMESPACE_INDEX, namespace_index};
pub use storage::{DecodeError, StorageMode};
pub use thread_safe::{Cache, IndexError, Indexer};

use crate::resource::Object;

/// The storage key of an object: `namespace/name`, or `name` for a cluster-scoped object.
///
/// Keys are reference-counted strings: the store, every index and the queue share one allocation
/// per object.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[doc(alias = "MetaNamespaceKeyFunc")]
pub struct ObjectKey(Arc<str>);

impl ObjectKey {
    /// The key of `obj`, from its metadata.
    ///
    /// ```
    /// # use informer_runtime::ObjectKey;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    /// let pod = Pod {
    ///     metadata: ObjectMeta {
    ///         namespace: Some("default".into()),
    ///         name: Some("web-0".into()),
    ///         ..ObjectMeta::default()
    ///     },
    ///     ..Pod::default()
    /// };
    /// assert_eq!(ObjectKey::of(&pod).as_str(), "default/web-0");
    /// ```
    #[must_use]
    pub fn of<K: Object>(obj: &K) -> Self {
        let meta = obj.meta();
        Self::new(meta.namespace.as_deref(), meta.name.as_deref().unwrap_or_default())
    }

    /// The key for `name` in `namespace` (`None` or `""` for cluster-scoped objects).
    #[must_use]
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        match namespace {
            Some(ns) if !ns.is_empty() => Self(format!("{ns}/{name}").into()),
            _ => Self(name.into()),
        }
    }

    /// The key as a string.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Splits the key into namespace (`""` for cluster-scoped) and name.
    ///
    /// # Errors
    ///
    /// [`KeyError`] when the key has more than one `/`.
    #[doc(alias = "SplitMetaNamespaceKey")]
    pub fn split(&self) -> Result<(&str, &str), KeyError> {
        split_meta_namespace_key(&self.0)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ObjectKey {
    fn from(key: &str) -> Self {
        Self(key.into())
    }
}

impl From<String> for ObjectKey {
    fn from(key: String) -> Self {
        Self(key.into())
    }
}

impl Borrow<str> for ObjectKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ObjectKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A key that is not `name` or `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected key format: {key:?} (want \"name\" or \"namespace/name\")")]
pub struct KeyError {
    /// The offending key.
    pub key: String,
}

/// Splits `namespace/name` into its parts; `name` alone gives `("", name)`.
///
/// # Errors
///
/// [`KeyError`] when the key has more than one `/`.
///
/// ```
/// # use informer_runtime::store::split_meta_namespace_key;
/// assert_eq!(split_meta_namespace_key("kube-system/coredns").unwrap(), ("kube-system", "coredns"));
/// assert_eq!(split_meta_namespace_key("node-1").unwrap(), ("", "node-1"));
/// assert!(split_meta_namespace_key("a/b/c").is_err());
/// ```
pub fn split_meta_namespace_key(key: &str) -> Result<(&str, &str), KeyError> {
    let mut parts = key.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => Ok(("", name)),
        (Some(ns), Some(name), None) => Ok((ns, name)),
        _ => Err(KeyError { key: key.to_owned() }),
    }
}

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
