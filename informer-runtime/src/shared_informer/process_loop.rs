//! The informer's process loop: runs the reflector into the [`DeltaFifo`], pops each key's
//! deltas into the cache, then hands every change to the processor.
//!
//! This is the step between the queue and the handlers. [`QueueSink`] is what the reflector
//! writes to; [`run`] pops; [`Sinks::apply`] is client-go's `processDeltas`: deltas oldest to
//! newest, each applied to the store first, then reported as an add (the key was not cached),
//! an update (it was), or a delete. The pop runs it under the queue's lock, so a relist or
//! resync never interleaves with a half-applied pop.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::handler::Notification;
use super::processor::Processor;
use crate::clock::SharedClock;
use crate::delta_fifo::{Delta, DeltaFifo};
use crate::reflector::{Reflector, ReflectorStore};
use crate::resource::{Object, resource_version};
use crate::store::{Indexer, ObjectKey};

/// The queue as a reflector sees it: also wakes sync waiters after a replace, since an empty
/// first list syncs without any pop, asks for lists in compact form for a compact cache, and,
/// for the reflector of one namespace of several, replaces that namespace's keys only.
pub(super) struct QueueSink<K> {
    queue: Arc<DeltaFifo<K>>,
    progress: Arc<Notify>,
    compact_lists: bool,
    /// The namespace whose keys this reflector's lists replace; `None`: every key.
    namespace: Option<String>,
}

impl<K> QueueSink<K> {
    pub(super) fn new(queue: Arc<DeltaFifo<K>>, progress: Arc<Notify>) -> Self {
        Self { queue, progress, compact_lists: false, namespace: None }
    }

    /// Asks for lists in compact form (for a compact cache).
    pub(super) fn compact_lists(mut self, compact_lists: bool) -> Self {
        self.compact_lists = compact_lists;
        self
    }

    /// Replaces the keys of `namespace` only (for one namespace's reflector of several).
    pub(super) fn namespace(mut self, namespace: Option<String>) -> Self {
        self.namespace = namespace;
        self
    }
}

impl<K: Object> ReflectorStore<K> for QueueSink<K> {
    fn add(&self, obj: Arc<K>) {
        self.queue.add(obj);
    }

    fn update(&self, obj: Arc<K>) {
        self.queue.update(obj);
    }

    fn delete(&self, obj: Arc<K>) {
        self.queue.delete(obj);
    }

    fn replace(&self, list: Vec<Arc<K>>, _resource_version: &str) {
        match &self.namespace {
            Some(namespace) => self.queue.namespace(namespace).replace(list),
            None => self.queue.replace(list),
        }
        self.progress.notify_waiters();
    }

    fn start_replace(&self) {
        match &self.namespace {
            Some(namespace) => self.queue.namespace(namespace).start_replace(),
            None => self.queue.start_replace(),
        }
    }

    fn replace_item(&self, obj: Arc<K>) -> Option<Arc<K>> {
        match &self.namespace {
            Some(namespace) => self.queue.namespace(namespace).replace_item(obj),
            None => self.queue.replace_item(obj),
        }
        None
    }

    fn finish_replace(&self, rest: Vec<Arc<K>>, _resource_version: &str) {
        match &self.namespace {
            Some(namespace) => self.queue.namespace(namespace).finish_replace(rest),
            None => self.queue.finish_replace(rest),
        }
        self.progress.notify_waiters();
    }

    fn compact_lists(&self) -> bool {
        self.compact_lists
    }

    fn resync(&self) {
        self.queue.resync();
    }

    fn unchanged(&self, listed: &K) -> Option<Arc<K>> {
        self.queue.unchanged(listed)
    }

    fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        self.queue.poll_ready(cx)
    }
}

/// Where popped deltas go: the cache first, then the handlers.
pub(super) struct Sinks<'a, K> {
    pub(super) indexer: &'a Indexer<K>,
    pub(super) processor: &'a Processor<K>,
    /// Held while deltas are applied (and, by the informer, while a late handler is given the
    /// cache), so that a late handler sees every change exactly once.
    pub(super) block_deltas: &'a Mutex<()>,
    /// Woken after each pop: the sync state may have changed.
    pub(super) progress: &'a Notify,
}

impl<K: Object> Sinks<'_, K> {
    /// Applies `deltas` to the cache, oldest first, and hands each change to the processor.
    fn apply(&self, deltas: Vec<Delta<K>>, is_in_initial_list: bool) {
        let _block = self.block_deltas.lock();
        for delta in deltas {
            match delta {
                Delta::Deleted(deleted) => {
                    self.indexer.delete_key(deleted.key().as_str());
                    self.processor.distribute(&Notification::Delete(deleted), false);
                }
                Delta::Added(obj) | Delta::Updated(obj) => {
                    self.store(obj, true, is_in_initial_list);
                }
                // A list's items and a resync's replays do not join a compact cache's recent
                // objects (see `Indexer::insert_listed`); a watched change does.
                Delta::Replaced(obj) | Delta::Sync(obj) => {
                    self.store(obj, false, is_in_initial_list);
                }
            }
        }
    }

    /// Stores `obj` and tells the handlers: an add, or an update of the object it replaced.
    fn store(&self, obj: Arc<K>, changed: bool, is_in_initial_list: bool) {
        let key = ObjectKey::of(&*obj);
        // The replaced object comes back for the handlers' `old`: in a compact cache it is
        // decoded for that (the store needs it anyway, to move the key out of the index values
        // it had), unless it is among the recent objects.
        let old = if changed {
            self.indexer.insert(key, Arc::clone(&obj))
        } else {
            self.indexer.insert_listed(key, Arc::clone(&obj))
        };
        match old {
            Some(old) => {
                // Same version: a resync or a relist that found nothing new. Only handlers due
                // for a resync want it.
                let sync = resource_version(&*old) == resource_version(&*obj);
                self.processor.distribute(&Notification::Update { old, new: obj }, sync);
            }
            None => {
                self.processor.distribute(&Notification::Add { obj, is_in_initial_list }, false);
            }
        }
    }
}

/// Runs `reflectors` (one, or one per namespace) and pops `queue` into `sinks` until `stop`
/// fires; then closes the queue, lets the pop loop drain what is queued, and returns.
pub(super) async fn run<K: Object>(
    queue: &DeltaFifo<K>,
    reflectors: &[Arc<Reflector<K>>],
    resync: Option<Resync>,
    stop: CancellationToken,
    sinks: Sinks<'_, K>,
) {
    let reflect = async {
        futures::future::join_all(reflectors.iter().map(|r| r.run(stop.clone()))).await;
        queue.close();
    };
    let pop_loop = async {
        while queue.pop(|deltas, initial| sinks.apply(deltas, initial)).await.is_ok() {
            sinks.progress.notify_waiters();
        }
    };
    let resync_loop = async {
        let Some(resync) = resync else { return };
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = resync.clock.sleep(resync.period) => {}
            }
            if (resync.should)() {
                queue.resync();
            }
        }
    };
    tokio::join!(reflect, pop_loop, resync_loop);
}

/// The resync of an informer over a set of namespaces: one timer of the informer's, whatever
/// each namespace's reflector is doing (a reflector's own resync runs only while it lists and
/// watches, so a namespace that cannot list would stop every other's).
pub(super) struct Resync {
    pub(super) period: Duration,
    pub(super) clock: SharedClock,
    /// Whether any handler is due (the processor's `should_resync`).
    pub(super) should: Box<dyn Fn() -> bool + Send + Sync>,
}
