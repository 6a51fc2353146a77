//! A complete list waiting in compact form for its handover to a compact cache.
//!
//! A cache in compact storage must never hold a whole list decoded: that would be its peak,
//! as large as a decoded cache's. So the items of a list (from its pages, or from the initial
//! events of a streaming list) wait here as their [compact forms](crate::store::compact), each
//! made as soon as the item is decoded, until the list is complete; the reflector then decodes
//! them one at a time, as the informer's queue has room ([`Reflector::hand_over`]).
//!
//! Each item is encoded once. The forms are made with the cache's own [`Codec`] (its
//! dictionary) when the reflector has it, and each is handed to the codec with the object
//! decoded from it ([`Codec::prepare`]), so that the cache stores that form as it is rather than
//! encoding the object again. A store of another kind gets forms of a codec of the list's own,
//! which only this list reads.
//!
//! [`Reflector::hand_over`]: super::Reflector::hand_over

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::ReflectorStore;
use crate::resource::{Object, ObjectKey};
use crate::store::compact::{Codec, Undecodable};

/// The items of one list, in compact form, in the order they came; see the
/// [module documentation](self).
pub(super) struct StagedList<K> {
    codec: Arc<Codec<K>>,
    /// Whether `codec` is the cache's, which takes the forms back.
    shared: bool,
    items: Mutex<Items>,
}

/// The forms, in arrival order, and where each key's is (a streaming list's later events
/// replace or delete an item it sent earlier).
#[derive(Default)]
struct Items {
    forms: Vec<Option<Box<[u8]>>>,
    at: HashMap<ObjectKey, usize>,
}

impl<K: Object> StagedList<K> {
    /// Items encoded with `codec`, the cache's, or with a codec of their own when `None`.
    pub(super) fn new(codec: Option<Arc<Codec<K>>>) -> Self {
        let shared = codec.is_some();
        Self { codec: codec.unwrap_or_default(), shared, items: Mutex::default() }
    }

    /// Keeps `obj` in compact form, in place of an earlier item with its key. `false` when it
    /// cannot be encoded (a `Serialize` impl that refuses): the caller keeps it decoded.
    pub(super) fn stage(&self, obj: &K) -> bool {
        let Ok(form) = self.codec.encode(obj) else { return false };
        let key = ObjectKey::of(obj);
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
    pub(super) fn take(&self) -> Vec<Box<[u8]>> {
        let items = std::mem::take(&mut *self.items.lock());
        items.forms.into_iter().flatten().collect()
    }

    /// The object of one of [`take`](Self::take)'s forms; the cache's codec gets the form back
    /// with it, to store as it is.
    ///
    /// # Errors
    ///
    /// [`Undecodable`]: only a type whose serde does not round-trip gets here.
    pub(super) fn unstage(&self, form: Box<[u8]>) -> Result<Arc<K>, Undecodable> {
        let obj = Arc::new(self.codec.decode(&form)?);
        if self.shared {
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
