//! What the reflector writes to: [`ReflectorStore`], the subset of a store that list and watch
//! need, owned here by its one caller (client-go's `ReflectorStore`).
//!
//! Implemented below for the two stores a reflector feeds: a [`DeltaFifo`] (the informer's path,
//! which the shared informer wraps to also wake its sync waiters) and an [`Indexer`] (a cache
//! fed directly).

use std::sync::Arc;
use std::task::{Context, Poll};

use crate::delta_fifo::DeltaFifo;
use crate::resource::Resource;
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
    /// Replays what is already known, so that handlers asking for periodic resync get it.
    fn resync(&self);

    /// The object held for `listed`'s key, if it has `listed`'s resource version and so is the
    /// same object: lists hold it in place of `listed` (see
    /// [`ListerWatcher::list_reusing`](crate::listwatch::ListerWatcher::list_reusing)), so that
    /// a relist of unchanged objects costs no second copy of them. The default finds none.
    fn unchanged(&self, listed: &K) -> Option<Arc<K>> {
        let _ = listed;
        None
    }

    /// Whether the store takes another watch event now. When it does not (a bounded queue is
    /// full), it keeps `cx`'s waker and wakes it once it has room again. The reflector reads
    /// the watch no faster than this allows, so that a burst of events waits in the connection
    /// (and on the server) rather than as decoded objects in memory. The default is always
    /// ready.
    fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        let _ = cx;
        Poll::Ready(())
    }
}

impl<K: Resource> ReflectorStore<K> for DeltaFifo<K> {
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

impl<K: Resource> ReflectorStore<K> for Indexer<K> {
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
