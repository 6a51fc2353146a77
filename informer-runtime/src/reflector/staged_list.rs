//! A complete list waiting in compact form for its handover to a compact cache.
//!
//! A cache in compact storage must never hold a whole list decoded: that would be its peak,
//! as large as a decoded cache's. So the items of a list (from its pages, or from the initial
//! events of a streaming list) wait here as their [compact forms](crate::store::compact), each
//! made as soon as the item is decoded, until the list is complete; the reflector then decodes
//! them one at a time, as the informer's queue has room ([`Reflector::hand_over`]).
//!
//! Each item is encoded once. The forms are made with the cache's own [`Codec`] (its
//! dictionary) when the reflector has the cache, and each is handed to the codec with the
//! object decoded from it ([`Codec::prepare`]), so that the cache stores that form as it is
//! rather than encoding the object again. An item the cache holds at the same resource version
//! (a relist of unchanged objects) is not encoded at all: the list holds the cache's own form,
//! and the cache keeps its entry as it is. A store of another kind gets forms of a codec of the
//! list's own, which only this list reads.
//!
//! [`Reflector::hand_over`]: super::Reflector::hand_over

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::ReflectorStore;
use crate::resource::{Object, ObjectKey, resource_version};
use crate::store::Indexer;
use crate::store::compact::{Codec, Encoded, Undecodable};

/// The items of one list, in compact form, in the order they came; see the
/// [module documentation](self).
pub(super) struct StagedList<K> {
    codec: Arc<Codec<K>>,
    /// The compact cache the list is for, whose codec `codec` is; `None`: `codec` is the
    /// list's own.
    cache: Option<Indexer<K>>,
    items: Mutex<Items>,
}

/// One item of the list, in compact form.
pub(super) enum Staged {
    /// A form made for this list.
    New(Box<[u8]>),
    /// The cache's own form of the object, which it holds at the listed version.
    Held(Arc<Encoded>),
}

/// The forms, in arrival order, and where each key's is (a streaming list's later events
/// replace or delete an item it sent earlier).
#[derive(Default)]
struct Items {
    forms: Vec<Option<Staged>>,
    at: HashMap<ObjectKey, usize>,
}

impl<K: Object> StagedList<K> {
    /// Items for `cache`, a compact cache, encoded with its codec; with a codec of their own
    /// when `None` (or when the cache is not compact).
    pub(super) fn new(cache: Option<Indexer<K>>) -> Self {
        match cache.as_ref().and_then(Indexer::compact_codec) {
            Some(codec) => Self { codec, cache, items: Mutex::default() },
            None => Self { codec: Arc::default(), cache: None, items: Mutex::default() },
        }
    }

    /// Keeps `obj` in compact form, in place of an earlier item with its key. `false` when it
    /// cannot be encoded (a `Serialize` impl that refuses): the caller keeps it decoded.
    pub(super) fn stage(&self, obj: &K) -> bool {
        let key = ObjectKey::of(obj);
        let held = self.cache.as_ref().and_then(|c| c.held_form(&key, resource_version(obj)));
        let form = match held {
            Some(held) => Staged::Held(held),
            None => match self.codec.encode(obj) {
                Ok(form) => Staged::New(form),
                Err(_) => return false,
            },
        };
        let mut items = self.items.lock();
        let Items { forms, at } = &mut *items;
        if let Some(&i) = at.get(&key) {
            forms[i] = Some(form);
        } else {
            at.insert(key, forms.len());
            forms.push(Some(form));
        }
        true
    }

    /// Forgets the item with `obj`'s key.
    fn remove(&self, obj: &K) {
        let mut items = self.items.lock();
        let Items { forms, at } = &mut *items;
        if let Some(i) = at.remove(&ObjectKey::of(obj)) {
            forms[i] = None;
        }
    }

    /// Forgets every item: the list starts again.
    pub(super) fn clear(&self) {
        *self.items.lock() = Items::default();
    }

    /// Whether no item waits.
    pub(super) fn is_empty(&self) -> bool {
        self.items.lock().at.is_empty()
    }

    /// How many items wait.
    pub(super) fn len(&self) -> usize {
        self.items.lock().at.len()
    }

    /// The items' forms, in the order they came; the list is left empty.
    pub(super) fn take(&self) -> Vec<Staged> {
        let items = std::mem::take(&mut *self.items.lock());
        items.forms.into_iter().flatten().collect()
    }

    /// The object of one of [`take`](Self::take)'s forms; the cache's codec gets the form back
    /// with it, to store as it is.
    ///
    /// # Errors
    ///
    /// [`Undecodable`]: only a type whose serde does not round-trip gets here.
    pub(super) fn unstage(&self, staged: Staged) -> Result<Arc<K>, Undecodable> {
        let (obj, form) = match staged {
            Staged::New(form) => {
                let obj = Arc::new(self.codec.decode(&form)?);
                let form = Arc::new(Encoded::new(&*obj, form));
                (obj, form)
            }
            Staged::Held(form) => (Arc::new(self.codec.decode(form.bytes())?), form),
        };
        if self.cache.is_some() {
            self.codec.prepare(&obj, form);
        }
        Ok(obj)
    }
}

/// A streaming list's temporary store: its initial events wait here until the bookmark that
/// ends them.
impl<K: Object> ReflectorStore<K> for StagedList<K> {
    fn add(&self, obj: Arc<K>) {
        if !self.stage(&obj) {
            tracing::warn!(
                kind = std::any::type_name::<K>(),
                key = %ObjectKey::of(&*obj),
                "an object of a streaming list could not be encoded; it is left out of this list"
            );
        }
    }

    fn update(&self, obj: Arc<K>) {
        ReflectorStore::add(self, obj);
    }

    fn delete(&self, obj: Arc<K>) {
        self.remove(&obj);
    }

    fn replace(&self, list: Vec<Arc<K>>, _resource_version: &str) {
        self.clear();
        for obj in list {
            ReflectorStore::add(self, obj);
        }
    }

    fn resync(&self) {}
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a failed unwrap is a failed test")]

    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::testing::objects::pod;

    fn held_at(cache: &Indexer<Pod>, key: &str, rv: &str) -> Option<*const Encoded> {
        cache.held_form(&ObjectKey::from(key), rv).map(|form| Arc::as_ptr(&form))
    }

    // A relist of a compact cache (issue 33): an object the cache holds at the listed version
    // is not encoded again, and the cache keeps its entry as it was; a changed one gets the
    // form the list made for it.
    #[test]
    fn a_relist_keeps_the_cache_s_own_form_of_an_unchanged_object() {
        let cache = Indexer::<Pod>::default().with_compact_storage(0);
        cache.add(Arc::new(pod("ns", "same", "1")));
        cache.add(Arc::new(pod("ns", "changed", "1")));
        let before = held_at(&cache, "ns/same", "1").unwrap();

        let staged = StagedList::new(Some(cache.clone()));
        assert!(staged.stage(&pod("ns", "same", "1")));
        assert!(staged.stage(&pod("ns", "changed", "2")));
        let items = staged.take();
        assert!(matches!(items[0], Staged::Held(_)), "the cache's own form");
        assert!(matches!(items[1], Staged::New(_)), "a form of its own");
        for item in items {
            let obj = staged.unstage(item).unwrap();
            let old = cache.insert_listed(ObjectKey::of(&*obj), obj).unwrap();
            assert_eq!(old.metadata.resource_version.as_deref(), Some("1"));
        }
        assert_eq!(held_at(&cache, "ns/same", "1"), Some(before), "the same entry");
        assert!(held_at(&cache, "ns/changed", "2").is_some());
        assert_eq!(*cache.get_by_key("ns/changed").unwrap(), pod("ns", "changed", "2"));
        assert_eq!(*cache.get_by_key("ns/same").unwrap(), pod("ns", "same", "1"));
        assert_eq!(cache.decode_failures(), 0);
    }

    // A list for a store that is not a compact cache stages forms of its own, which read back.
    #[test]
    fn a_list_without_a_compact_cache_reads_back_its_own_forms() {
        let staged = StagedList::<Pod>::new(Some(Indexer::default()));
        assert!(staged.stage(&pod("ns", "a", "1")));
        assert!(staged.stage(&pod("ns", "a", "2")));
        ReflectorStore::delete(&staged, Arc::new(pod("ns", "b", "1")));
        assert_eq!(staged.len(), 1, "the later item of a key replaces the earlier");
        let items = staged.take();
        let objs: Vec<Arc<Pod>> = items.into_iter().map(|i| staged.unstage(i).unwrap()).collect();
        assert_eq!(*objs[0], pod("ns", "a", "2"));
        assert!(staged.is_empty());
    }
}
