//! What the reflector writes to: [`ReflectorStore`], the subset of a store that list and watch
//! need, owned here by its one caller (client-go's `ReflectorStore`).
//!
//! Implemented below for the two stores a reflector feeds: a [`DeltaFifo`] (the informer's path,
//! which the shared informer wraps to also wake its sync waiters, and to ask for compact lists
//! when its cache is compact), which takes a complete list item by item, and an [`Indexer`] (a
//! cache fed directly), which takes it whole.

use std::sync::Arc;
use std::task::{Context, Poll};

use crate::delta_fifo::DeltaFifo;
use crate::resource::Object;
use crate::store::{Cache, Indexer};

/// What the reflector writes to: the subset of a store that list and watch need.
///
/// Implemented by [`DeltaFifo`] (the informer's path) and by [`Indexer`] (a reflector feeding a
/// cache directly).
pub trait ReflectorStore<K>: Send + Sync {
    /// An object was added (watch `ADDED`).
    fn add(&self, obj: Arc<K>);
    /// An object changed (watch `MODIFIED`).
    fn update(&self, obj: Arc<K>);
    /// An object was deleted (watch `DELETED`); `obj` is its last state.
    fn delete(&self, obj: Arc<K>);
    /// A list replaced everything: `list` is the whole truth at `resource_version`.
    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str);

    /// A complete list is about to be handed over item by item: each through
    /// [`replace_item`](Self::replace_item), then [`finish_replace`](Self::finish_replace). A
    /// handover that was cancelled ends without a finish; the next one starts afresh. The
    /// default does nothing.
    fn start_replace(&self) {}

    /// An item of the list being handed over: the store takes it (`None`), or gives it back
    /// (`Some`) for [`finish_replace`](Self::finish_replace). The default gives every item
    /// back, so that the store sees one [`replace`](Self::replace).
    fn replace_item(&self, obj: Arc<K>) -> Option<Arc<K>> {
        Some(obj)
    }

    /// The list handed over ends: `rest` holds the items not taken yet, and the whole list was
    /// the truth at `resource_version`. The default is [`replace`](Self::replace) with `rest`.
    fn finish_replace(&self, rest: Vec<Arc<K>>, resource_version: &str) {
        self.replace(rest, resource_version);
    }

    /// Whether a list's items should wait for the end of the list in compact form (their JSON)
    /// rather than decoded. A store that holds its objects compactly says so: a whole list held
    /// decoded would otherwise be its peak. The reflector then hands the items over one by one,
    /// each decoded again only when [`poll_ready`](Self::poll_ready) says the store has room.
    /// The default is `false`.
    fn compact_lists(&self) -> bool {
        false
    }

    /// Replays what is already known, so that handlers asking for periodic resync get it.
    fn resync(&self);

    /// The object held for `listed`'s key, if it has `listed`'s resource version and so is the
    /// same object: lists hold it in place of `listed` (see
    /// [`ListIntake::unchanged`](crate::listwatch::ListIntake::unchanged)), so that
    /// a relist of unchanged objects costs no second copy of them. The default finds none.
    fn unchanged(&self, listed: &K) -> Option<Arc<K>> {
        let _ = listed;
        None
    }

    /// Whether the store takes another watch event, or another item of a compact list, now.
    /// When it does not (a bounded queue is full), it keeps `cx`'s waker and wakes it once it
    /// has room again. The reflector reads the watch no faster than this allows, so that a
    /// burst of events waits in the connection (and on the server) rather than as decoded
    /// objects in memory. The default is always ready.
    fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        let _ = cx;
        Poll::Ready(())
    }
}

impl<K: Object> ReflectorStore<K> for DeltaFifo<K> {
    fn add(&self, obj: Arc<K>) {
        DeltaFifo::add(self, obj);
    }

    fn update(&self, obj: Arc<K>) {
        DeltaFifo::update(self, obj);
    }

    fn delete(&self, obj: Arc<K>) {
        DeltaFifo::delete(self, obj);
    }

    // The queue tracks no version: the reflector does.
    fn replace(&self, list: Vec<Arc<K>>, _resource_version: &str) {
        DeltaFifo::replace(self, list);
    }

    fn start_replace(&self) {
        DeltaFifo::start_replace(self);
    }

    fn replace_item(&self, obj: Arc<K>) -> Option<Arc<K>> {
        DeltaFifo::replace_item(self, obj);
        None
    }

    fn finish_replace(&self, rest: Vec<Arc<K>>, _resource_version: &str) {
        DeltaFifo::finish_replace(self, rest);
    }

    fn resync(&self) {
        DeltaFifo::resync(self);
    }

    fn unchanged(&self, listed: &K) -> Option<Arc<K>> {
        DeltaFifo::unchanged(self, listed)
    }

    fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        DeltaFifo::poll_ready(self, cx)
    }
}

impl<K: Object> ReflectorStore<K> for Indexer<K> {
    fn add(&self, obj: Arc<K>) {
        Indexer::add(self, obj);
    }

    fn update(&self, obj: Arc<K>) {
        Indexer::add(self, obj);
    }

    fn delete(&self, obj: Arc<K>) {
        Indexer::delete(self, &obj);
    }

    fn replace(&self, list: Vec<Arc<K>>, _resource_version: &str) {
        Indexer::replace(self, list);
    }

    // A plain cache has nothing to replay into.
    fn resync(&self) {}

    fn unchanged(&self, listed: &K) -> Option<Arc<K>> {
        Cache::unchanged(self, listed)
    }
}
