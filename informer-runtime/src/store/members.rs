//! The entry of an index under one value: the objects found there, by key.
//!
//! Both kinds of index ([`Index`](super::index::Index) and
//! [`LabelIndex`](super::labels::LabelIndex)) hold the stored entries themselves (another `Arc`
//! of the stored object, or of its compact form: see [`Storage`](super::storage::Storage)), not
//! only their keys, so that a query reads its answer straight from the index:
//! looking each key up in the store would cost a hash of the key and two cache misses per
//! object, several times what the rest of the query costs. The price is refreshing those `Arc`s
//! when an object changes but the values it is indexed under do not.

use super::ObjectKey;
use std::collections::HashMap;

/// The entries (`E`, a [`Storage`](super::storage::Storage)'s entry) under one indexed value,
/// by key.
///
/// Many values are carried by a single object (`statefulset.kubernetes.io/pod-name`, per-object
/// hashes, an index by UID); a table per such value would cost an allocation of four buckets.
pub(super) enum Members<E> {
    One(ObjectKey, E),
    Many(HashMap<ObjectKey, E>),
}

impl<E: Clone> Members<E> {
    /// A value with one object.
    pub(super) fn new(key: &ObjectKey, obj: &E) -> Self {
        Self::One(key.clone(), obj.clone())
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Self::One(..) => 1,
            Self::Many(map) => map.len(),
        }
    }

    pub(super) fn contains(&self, key: &ObjectKey) -> bool {
        match self {
            Self::One(only, _) => only == key,
            Self::Many(map) => map.contains_key(key),
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &E)> {
        let (one, many) = match self {
            Self::One(key, obj) => (Some((key, obj)), None),
            Self::Many(map) => (None, Some(map)),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// Adds or refreshes `key`; whether it was absent.
    pub(super) fn insert(&mut self, key: &ObjectKey, obj: &E) -> bool {
        match self {
            Self::One(only, current) if only == key => {
                *current = obj.clone();
                false
            }
            Self::One(only, current) => {
                let map =
                    HashMap::from([(only.clone(), current.clone()), (key.clone(), obj.clone())]);
                *self = Self::Many(map);
                true
            }
            Self::Many(map) => {
                // Look up first: a refresh, the common case, then neither clones nor rehashes
                // the key a second time.
                if let Some(current) = map.get_mut(key) {
                    *current = obj.clone();
                    false
                } else {
                    map.insert(key.clone(), obj.clone());
                    true
                }
            }
        }
    }

    /// Removes `key`; whether it was present, and whether no key is left.
    pub(super) fn remove(&mut self, key: &ObjectKey) -> (bool, bool) {
        let map = match self {
            Self::One(only, _) => {
                let found = only == key;
                return (found, found);
            }
            Self::Many(map) => map,
        };
        let found = map.remove(key).is_some();
        let empty = map.is_empty();
        if map.len() == 1 {
            // Back to the compact form, so that a value's memory follows its current members.
            let last = map.drain().next();
            if let Some((key, obj)) = last {
                *self = Self::One(key, obj);
            }
        }
        (found, empty)
    }

    /// Whether the form matches the size: no empty entry, no table of one.
    #[cfg(test)]
    pub(super) fn is_compact(&self) -> bool {
        match self {
            Self::One(..) => true,
            Self::Many(map) => map.len() >= 2,
        }
    }
}
