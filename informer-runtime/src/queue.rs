//! The queue between the reflector and the controller.
//!
//! The reflector pushes changes through [`ReflectorStore`]; the controller pops them through
//! [`Queue`]. [`DeltaFifo`](crate::delta_fifo::DeltaFifo) is the queue informers use; the trait
//! leaves room for other orderings (for example an in-order FIFO without deltas merging).

use std::future::Future;
use std::sync::Arc;

use crate::delta_fifo::Delta;

/// What the reflector writes to: the subset of a store that list and watch need.
///
/// Implemented by [`DeltaFifo`](crate::delta_fifo::DeltaFifo) (the informer's path) and by
/// [`Indexer`](crate::store::Indexer) (a reflector feeding a cache directly).
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
}

/// `held` if it is the same version of the same object as `listed`.
pub(crate) fn same_version<K: crate::Resource>(held: Option<Arc<K>>, listed: &K) -> Option<Arc<K>> {
    let version = listed.meta().resource_version.as_deref().filter(|v| !v.is_empty())?;
    held.filter(|held| held.meta().resource_version.as_deref() == Some(version))
}

/// The queue ended: closed and drained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("queue is closed")]
#[doc(alias = "ErrFIFOClosed")]
pub struct QueueClosed;

/// A queue of changes the controller pops one key at a time.
pub trait Queue<K>: ReflectorStore<K> {
    /// Waits for the oldest queued key, and runs `process` on all its deltas before the next pop
    /// can start. `process` gets `is_in_initial_list`: whether these deltas belong to the first
    /// list the queue was filled with.
    ///
    /// # Errors
    ///
    /// [`QueueClosed`] once the queue is closed and every queued key was popped.
    fn pop<R, F>(&self, process: F) -> impl Future<Output = Result<R, QueueClosed>> + Send
    where
        F: FnOnce(Vec<Delta<K>>, bool) -> R + Send,
        R: Send;

    /// Whether the first batch of items the queue received has been popped.
    fn has_synced(&self) -> bool;

    /// Closes the queue: queued keys still pop, then pop reports [`QueueClosed`].
    fn close(&self);
}

impl<K: crate::Resource> ReflectorStore<K> for crate::store::Indexer<K> {
    fn add(&self, obj: Arc<K>) {
        crate::store::Indexer::add(self, obj);
    }

    fn update(&self, obj: Arc<K>) {
        crate::store::Indexer::add(self, obj);
    }

    fn delete(&self, obj: Arc<K>) {
        crate::store::Indexer::delete(self, &obj);
    }

    fn replace(&self, list: Vec<Arc<K>>, _resource_version: &str) {
        crate::store::Indexer::replace(self, list);
    }

    // A plain cache has nothing to replay into.
    fn resync(&self) {}

    fn unchanged(&self, listed: &K) -> Option<Arc<K>> {
        let key = crate::store::ObjectKey::of(listed);
        same_version(self.get_by_key(key.as_str()), listed)
    }
}
