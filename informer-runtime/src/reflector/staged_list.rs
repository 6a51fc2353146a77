//! A complete list waiting in compact form for its handover to a compact cache.
//!
//! A cache in compact storage must never hold a whole list decoded: that would be its peak,
//! as large as a decoded cache's. So the items of a list (from its pages, or from the initial
//! events of a streaming list) wait here as their [compact forms](crate::store::compact), each
//! made as soon as the item is decoded, until the list is complete; the reflector then decodes
//! them one at a time, as the informer's queue has room ([`Reflector::hand_over`]).
//!
//! An item of a list read over HTTP is kept as the server sent it: its JSON (without
//! `managedFields`, unless the informer keeps them) is compressed as it arrives, never decoded
//! before the handover, where it is decoded once ([`stage_json`](StagedList::stage_json),
//! [`RawItem`]). Its type is then checked only at the handover: an item that does not decode
//! there fails the list, as it would have failed it when it arrived, though the items before it
//! have entered the queue by then (as their current versions; the list's deletions have not).
//! What never reaches the handover is never decoded, so never checked: an item a later item of
//! the same list replaces (a server that lists one key twice), one the cache holds at the same
//! resource version (the cache keeps its own form), and the `managedFields` cut from an item's
//! bytes. Only where the informer's type holds all the server sends for an object: a view
//! (which holds a part) gets its items decoded on arrival and encoded from the object, so that
//! its cache never keeps what it leaves out.
//! Items that arrive decoded (from a lister-watcher of another transport, the initial events of
//! a streaming list) are encoded from the object.
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
use super::raw_item::RawItem;
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
    /// Where an item's JSON is written before it is compressed, kept from one item to the
    /// next; dropped with the list, as its forms are.
    scratch: Mutex<Vec<u8>>,
}

/// One item of the list, in compact form.
pub(super) enum Staged {
    /// A form made for this list from a decoded object.
    New(Box<[u8]>),
    /// A form made for this list from an item's JSON as the server sent it, never decoded.
    Listed(Box<[u8]>),
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
        let (codec, cache) = match cache.as_ref().and_then(Indexer::compact_codec) {
            Some(codec) => (codec, cache),
            None => (Arc::default(), None),
        };
        Self { codec, cache, items: Mutex::default(), scratch: Mutex::default() }
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
        self.keep(key, form);
        true
    }

    /// Keeps `json`, one item of a list as the server sent it, compressed without decoding it
    /// (see the [module documentation](self)), with `apiVersion` and `kind` from `served` where
    /// it leaves them out, and without `managedFields` unless `keep_managed_fields`. `false`
    /// when it cannot be read without decoding it ([`RawItem::read`]): the caller decodes it.
    pub(super) fn stage_json(
        &self,
        json: &[u8],
        served: (&str, &str),
        keep_managed_fields: bool,
    ) -> bool {
        let Some(item) = RawItem::read(json) else { return false };
        let key = item.key().clone();
        let held = self.cache.as_ref().and_then(|c| c.held_form(&key, item.resource_version()));
        let form = if let Some(held) = held {
            Staged::Held(held)
        } else {
            let mut scratch = self.scratch.lock();
            item.write_json(served, keep_managed_fields, &mut scratch);
            match self.codec.encode_json(&scratch) {
                Ok(form) => Staged::Listed(form),
                Err(_) => return false,
            }
        };
        self.keep(key, form);
        true
    }

    /// Keeps `form` under `key`, in place of an earlier item with that key.
    fn keep(&self, key: ObjectKey, form: Staged) {
        let mut items = self.items.lock();
        let Items { forms, at } = &mut *items;
        if let Some(&i) = at.get(&key) {
            forms[i] = Some(form);
        } else {
            at.insert(key, forms.len());
            forms.push(Some(form));
        }
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

    /// The items' keys and forms, in the order they came; the list is left empty.
    pub(super) fn take(&self) -> Vec<(ObjectKey, Staged)> {
        let Items { forms, at } = std::mem::take(&mut *self.items.lock());
        let mut keys: Vec<Option<ObjectKey>> = Vec::new();
        keys.resize_with(forms.len(), || None);
        for (key, i) in at {
            keys[i] = Some(key);
        }
        keys.into_iter().zip(forms).filter_map(|(key, form)| Some((key?, form?))).collect()
    }

    /// The object of one of [`take`](Self::take)'s forms; the cache's codec gets the form back
    /// with it, to store as it is.
    ///
    /// # Errors
    ///
    /// [`Unstaged::Listed`]: an item kept as the server sent it does not decode (as it would
    /// not have when it arrived); [`Unstaged::Encoded`]: a form made from an object does not,
    /// which only a type whose serde does not round-trip gets.
    pub(super) fn unstage(&self, staged: Staged) -> Result<Arc<K>, Unstaged> {
        let failed = match staged {
            Staged::Listed(_) => Unstaged::Listed,
            Staged::New(_) | Staged::Held(_) => Unstaged::Encoded,
        };
        let (obj, form) = match staged {
            Staged::New(form) | Staged::Listed(form) => {
                let obj = Arc::new(self.codec.decode(&form).map_err(failed)?);
                let form = Arc::new(Encoded::new(&*obj, form));
                (obj, form)
            }
            Staged::Held(form) => {
                (Arc::new(self.codec.decode(form.bytes()).map_err(failed)?), form)
            }
        };
        if self.cache.is_some() {
            self.codec.prepare(&obj, form);
        }
        Ok(obj)
    }
}

/// Why a staged item did not decode at the handover.
#[derive(Debug)]
pub(super) enum Unstaged {
    /// An item kept as the server sent it: the list fails, as it would have on its arrival.
    Listed(Undecodable),
    /// A form encoded from an object of this very type: left out of the list, logged.
    Encoded(Undecodable),
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
        assert!(matches!(items[0].1, Staged::Held(_)), "the cache's own form");
        assert!(matches!(items[1].1, Staged::New(_)), "a form of its own");
        for (_, item) in items {
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

    /// The recorded pods as the server sent them (pretty-printed, with `managedFields`), and
    /// compact without `apiVersion` and `kind`, as items of a list of built-in kinds come.
    fn listed_items() -> Vec<Vec<u8>> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
        let mut items = Vec::new();
        for name in [
            "kind-v1-36-pod-coredns.json",
            "kind-v1-36-pod-etcd.json",
            "kind-v1-36-pod-kube-apiserver.json",
            "k8s-api-allfields-core.v1.Pod.json",
        ] {
            let body = std::fs::read(format!("{dir}/{name}")).unwrap();
            let mut value: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let map = value.as_object_mut().unwrap();
            map.remove("apiVersion");
            map.remove("kind");
            items.push(serde_json::to_vec(&value).unwrap());
            items.push(body);
        }
        items
    }

    // Issue 33: an item kept as the server sent it (managedFields cut from its bytes, the type
    // filled in) decodes at the handover to what decoding it on arrival gave, for a typed and
    // a dynamic informer, with managedFields and without.
    #[test]
    fn an_item_kept_as_sent_decodes_as_it_would_have_on_arrival() {
        use crate::dynamic::DynamicObject;

        for keep in [false, true] {
            for json in listed_items() {
                let mut expected: Pod = serde_json::from_slice(&json).unwrap();
                let mut dynamic: DynamicObject = serde_json::from_slice(&json).unwrap();
                dynamic.fill_type("v1", "Pod");
                if !keep {
                    expected.metadata.managed_fields = None;
                    dynamic.metadata.managed_fields = None;
                }
                let cache = Indexer::<Pod>::default().with_compact_storage(0);
                let staged = StagedList::new(Some(cache));
                assert!(staged.stage_json(&json, ("v1", "Pod"), keep));
                let (key, item) = staged.take().pop().unwrap();
                assert_eq!(key, ObjectKey::of(&expected));
                assert!(matches!(item, Staged::Listed(_)));
                assert_eq!(*staged.unstage(item).unwrap(), expected);

                let staged = StagedList::<DynamicObject>::new(None);
                assert!(staged.stage_json(&json, ("v1", "Pod"), keep));
                let (_, item) = staged.take().pop().unwrap();
                assert_eq!(*staged.unstage(item).unwrap(), dynamic);
            }
        }
    }

    // Issue 33: an item of the wrong type is kept as sent, and found at the handover, where it
    // fails the list (`Unstaged::Listed`), with a message that quotes none of its data.
    #[test]
    fn an_item_of_the_wrong_type_is_found_at_the_handover() {
        let staged = StagedList::<Pod>::new(None);
        let json = br#"{"metadata":{"name":"a","namespace":"ns"},"spec":{"containers":"secret"}}"#;
        assert!(staged.stage_json(json, ("v1", "Pod"), false));
        let (key, item) = staged.take().pop().unwrap();
        assert_eq!(key.as_str(), "ns/a");
        let Err(Unstaged::Listed(error)) = staged.unstage(item) else { panic!("decoded") };
        assert!(!error.to_string().contains("secret"), "{error}");
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
        let objs: Vec<Arc<Pod>> =
            items.into_iter().map(|(_, i)| staged.unstage(i).unwrap()).collect();
        assert_eq!(*objs[0], pod("ns", "a", "2"));
        assert!(staged.is_empty());
    }
}
