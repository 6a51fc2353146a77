//! `DeltaFIFO`: the queue of per-object changes between the reflector and the controller.
//!
//! A [`DeltaFifo`] is like a FIFO of keys, with two differences: it keeps, for each key, every
//! change ([`Delta`]) since the key was last popped, instead of only the newest object; and it
//! turns relists into deletions of what disappeared, as [`DeletedFinalStateUnknown`] tombstones.
//!
//! Use it when you need to
//! - process every object at most once per pop, however many changes it went through;
//! - see deletions, including those a broken watch missed;
//! - resync periodically (replay known objects as [`Delta::Sync`]).
//!
//! The reflector is the producer ([`DeltaFifo::add`], [`update`](DeltaFifo::update),
//! [`delete`](DeltaFifo::delete), [`replace`](DeltaFifo::replace) and
//! [`resync`](DeltaFifo::resync), through its
//! [`ReflectorStore`](crate::reflector::ReflectorStore) trait); the shared informer's process
//! loop is the consumer ([`DeltaFifo::pop`]). All methods take `&self` and are safe to call from any thread.
//!
//! This follows client-go v0.32's contract (`delta_fifo.go`), without `ErrRequeue`.
//!
//! **Who it is for.** Programs use it through a [`SharedIndexInformer`](crate::SharedIndexInformer),
//! which runs one, and meet only [`DeletedFinalStateUnknown`] (in a handler's
//! [`DeletedObject`]) and [`TransformFn`]. It is public for those who build an informer loop
//! of their own on the same contract, as client-go's `NewDeltaFIFO` is.
//!
//! # One queue, one reflector per namespace
//!
//! An informer over a set of namespaces (controller-runtime's multi-namespace cache, with one
//! cache instead of one per namespace) runs a reflector per namespace into one queue. Each
//! reflector's relist is the truth about its own namespace only, so it goes through
//! [`DeltaFifo::namespace`]: its tombstones are for keys of that namespace, never for objects
//! another namespace's reflector delivered. A queue made [`with_namespaces`](DeltaFifo::with_namespaces)
//! has synced once the first list of every one of them has finished and been popped.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::resource::Object;
use crate::store::{KnownObjects, ObjectKey};

/// Changes every object entering the queue (from add, update, delete or replace) exactly once,
/// before it reaches the cache; for example to drop fields the program never reads.
///
/// It must be idempotent, and it never sees tombstones or resync replays.
#[doc(alias = "TransformFunc")]
pub type TransformFn<K> = Arc<dyn Fn(&mut K) + Send + Sync>;

/// The kind of a [`Delta`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// A watch reported the object as added.
    Added,
    /// A watch reported the object as modified.
    Updated,
    /// The object is gone: reported by a watch, or missing from a relist.
    Deleted,
    /// A relist returned the object (it may or may not have changed).
    Replaced,
    /// A periodic resync replayed the cached object.
    Sync,
}

/// One change to one object. It holds the state after the change; for a deletion, the last
/// state known before it.
pub enum Delta<K> {
    /// See [`DeltaType::Added`].
    Added(Arc<K>),
    /// See [`DeltaType::Updated`].
    Updated(Arc<K>),
    /// See [`DeltaType::Deleted`].
    Deleted(DeletedObject<K>),
    /// See [`DeltaType::Replaced`].
    Replaced(Arc<K>),
    /// See [`DeltaType::Sync`].
    Sync(Arc<K>),
}

impl<K> Delta<K> {
    /// The kind of change.
    #[must_use]
    pub fn kind(&self) -> DeltaType {
        match self {
            Self::Added(_) => DeltaType::Added,
            Self::Updated(_) => DeltaType::Updated,
            Self::Deleted(_) => DeltaType::Deleted,
            Self::Replaced(_) => DeltaType::Replaced,
            Self::Sync(_) => DeltaType::Sync,
        }
    }

    /// The object: after the change, or the last known state for a deletion (if any).
    #[must_use]
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Self::Added(o) | Self::Updated(o) | Self::Replaced(o) | Self::Sync(o) => Some(o),
            Self::Deleted(d) => d.object(),
        }
    }
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Added(o) => Self::Added(Arc::clone(o)),
            Self::Updated(o) => Self::Updated(Arc::clone(o)),
            Self::Deleted(d) => Self::Deleted(d.clone()),
            Self::Replaced(o) => Self::Replaced(Arc::clone(o)),
            Self::Sync(o) => Self::Sync(Arc::clone(o)),
        }
    }
}

impl<K: Object> fmt::Debug for Delta<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Deleted(d) => write!(f, "Deleted({d:?})"),
            other => {
                let obj = other.object().map(|o| &**o);
                write!(f, "{:?}({})", other.kind(), ObjectDisplay(obj))
            }
        }
    }
}

/// What a deletion carries: the deleted object, or a tombstone when the final state is unknown.
///
/// Handlers get this from `on_delete`. Match on it instead of forgetting the tombstone case: it
/// happens whenever a watch missed the deletion and a relist found the object gone.
pub enum DeletedObject<K> {
    /// The object's last state, as reported by the watch.
    Object(Arc<K>),
    /// The object vanished between two lists; its last state is whatever was known then.
    FinalStateUnknown(DeletedFinalStateUnknown<K>),
}

impl<K> DeletedObject<K> {
    /// The last known state of the object, if any.
    #[must_use]
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Self::Object(o) => Some(o),
            Self::FinalStateUnknown(t) => t.obj.as_ref(),
        }
    }

    /// Whether this is a [`DeletedFinalStateUnknown`] tombstone.
    #[must_use]
    pub fn is_final_state_unknown(&self) -> bool {
        matches!(self, Self::FinalStateUnknown(_))
    }
}

impl<K: Object> DeletedObject<K> {
    /// The key of the deleted object.
    #[must_use]
    pub fn key(&self) -> ObjectKey {
        match self {
            Self::Object(o) => ObjectKey::of(&**o),
            Self::FinalStateUnknown(t) => t.key.clone(),
        }
    }
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Object(o) => Self::Object(Arc::clone(o)),
            Self::FinalStateUnknown(t) => Self::FinalStateUnknown(t.clone()),
        }
    }
}

impl<K: Object> fmt::Debug for DeletedObject<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Object(o) => write!(f, "Object({})", ObjectDisplay(Some(&**o))),
            Self::FinalStateUnknown(t) => t.fmt(f),
        }
    }
}

/// A tombstone: the object with this key was deleted while the watch was not looking, so its
/// final state is unknown. `obj` is the last state that was known (queued or cached), if any.
pub struct DeletedFinalStateUnknown<K> {
    /// The key the object was stored under.
    pub key: ObjectKey,
    /// The last known state of the object.
    pub obj: Option<Arc<K>>,
}

impl<K> Clone for DeletedFinalStateUnknown<K> {
    fn clone(&self) -> Self {
        Self { key: self.key.clone(), obj: self.obj.clone() }
    }
}

impl<K: Object> fmt::Debug for DeletedFinalStateUnknown<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FinalStateUnknown({:?}, {})", self.key, ObjectDisplay(self.obj.as_deref()))
    }
}

/// Objects print as `key@resourceVersion`: full objects would drown a test failure.
struct ObjectDisplay<'a, K>(Option<&'a K>);

impl<K: Object> fmt::Display for ObjectDisplay<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(o) => write!(f, "{}@{}", ObjectKey::of(o), crate::resource::resource_version(o)),
            None => f.write_str("<none>"),
        }
    }
}

struct State<K> {
    /// Deltas per key, oldest first. A key is here exactly when it is in `queue`.
    items: HashMap<ObjectKey, Vec<Delta<K>>>,
    /// Keys in pop order, without duplicates.
    queue: VecDeque<ObjectKey>,
    /// Whether anything was added, updated, deleted or replaced yet.
    populated: bool,
    /// Items of the first replace not popped yet.
    initial_population_count: usize,
    /// Per namespace whose first list has finished: its items and tombstones not popped yet
    /// (see [`DeltaFifo::with_namespaces`]). A namespace leaves at zero.
    initial_by_namespace: HashMap<String, usize>,
    /// The namespaces of [`DeltaFifo::with_namespaces`] whose first list has not finished.
    unlisted: HashSet<String>,
    /// Deltas queued, over every key: what [`DeltaFifo::poll_ready`] bounds.
    queued_deltas: usize,
    /// The producers waiting in [`DeltaFifo::poll_ready`] for room: one per reflector (a queue
    /// fed per namespace has several).
    producers: Vec<Waker>,
    /// The keys of each list being replaced item by item ([`DeltaFifo::replace_item`]), until
    /// [`DeltaFifo::finish_replace`] ends it: at most one per namespace (`Some`), or one of
    /// every key (`None`).
    listed: Vec<(Option<String>, HashSet<ObjectKey>)>,
    closed: bool,
}

impl<K> State<K> {
    fn has_synced(&self) -> bool {
        self.populated
            && self.initial_population_count == 0
            && self.unlisted.is_empty()
            && self.initial_by_namespace.is_empty()
    }

    /// Whether `key`'s deltas belong to the first list the queue was filled with: while the
    /// queue has not synced; in a queue fed per namespace, while `key`'s namespace has not
    /// (a watch event of a namespace whose first list has popped is not part of it, however
    /// long another namespace takes to list).
    fn is_in_initial_list(&self, key: &ObjectKey) -> bool {
        if self.has_synced() {
            return false;
        }
        if self.unlisted.is_empty() && self.initial_by_namespace.is_empty() {
            return true;
        }
        key.split().is_ok_and(|(namespace, _)| {
            self.unlisted.contains(namespace) || self.initial_by_namespace.contains_key(namespace)
        })
    }

    /// The keys listed so far by the item-by-item list of `scope`, taken out.
    fn take_listed(&mut self, scope: Option<&str>) -> Option<HashSet<ObjectKey>> {
        let at = self.listed.iter().position(|(s, _)| s.as_deref() == scope)?;
        Some(self.listed.swap_remove(at).1)
    }

    /// A pop of `key`: one fewer of the first list's items (of its namespace's first list, in a
    /// queue fed per namespace) left to pop.
    fn popped_initial(&mut self, key: &ObjectKey) {
        if self.initial_population_count > 0 {
            self.initial_population_count -= 1;
        } else if !self.initial_by_namespace.is_empty() {
            let Ok((namespace, _)) = key.split() else { return };
            if let Some(left) = self.initial_by_namespace.get_mut(namespace) {
                *left = left.saturating_sub(1);
                if *left == 0 {
                    self.initial_by_namespace.remove(namespace);
                }
            }
        }
    }
}

/// Whether `key` belongs to a list of `scope`: every key for `None`, else the keys of that
/// namespace.
fn in_scope(key: &ObjectKey, scope: Option<&str>) -> bool {
    scope.is_none_or(|namespace| key.split().is_ok_and(|(ns, _)| ns == namespace))
}

/// The most deltas a bounded queue holds while a list is handed over item by item (see
/// [`DeltaFifo::with_max_queued_deltas`]).
pub const HANDOVER_BOUND: usize = 64;

/// A queue of per-object deltas; see the [module documentation](self).
#[doc(alias = "DeltaFIFO")]
pub struct DeltaFifo<K> {
    state: Mutex<State<K>>,
    not_empty: Notify,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
    transform: Option<TransformFn<K>>,
    /// Above this many queued deltas, [`poll_ready`](Self::poll_ready) holds the producer back.
    max_queued_deltas: usize,
}

impl<K: Object> Default for DeltaFifo<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Object> DeltaFifo<K> {
    /// An empty queue that knows no objects: a deletion of a key that is not queued is dropped,
    /// and resync does nothing.
    #[must_use]
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State {
                items: HashMap::new(),
                queue: VecDeque::new(),
                populated: false,
                initial_population_count: 0,
                initial_by_namespace: HashMap::new(),
                unlisted: HashSet::new(),
                queued_deltas: 0,
                producers: Vec::new(),
                listed: Vec::new(),
                closed: false,
            }),
            not_empty: Notify::new(),
            known_objects: None,
            transform: None,
            max_queued_deltas: usize::MAX,
        }
    }

    /// Consults `known` (normally the informer's cache) for deletions, relists and resyncs.
    #[must_use]
    pub fn with_known_objects(mut self, known: Arc<dyn KnownObjects<K>>) -> Self {
        self.known_objects = Some(known);
        self
    }

    /// A queue fed by one producer per namespace of `namespaces`, each replacing through
    /// [`namespace`](Self::namespace): it has [synced](Self::has_synced) once the first list of
    /// every one of them has finished and its items and tombstones have been popped (as
    /// client-go's `HasSynced` of one informer per namespace, all of them). Duplicates count
    /// once. A [`replace`](Self::replace) of every key counts as the first list of them all.
    #[must_use]
    pub fn with_namespaces(
        mut self,
        namespaces: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.state.get_mut().unlisted = namespaces.into_iter().map(Into::into).collect();
        self
    }

    /// Applies `transform` once to every object entering the queue; see [`TransformFn`].
    #[must_use]
    pub fn with_transform(mut self, transform: TransformFn<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// Bounds what a producer that asks [`poll_ready`](Self::poll_ready) before each delta
    /// (the reflector, before each watch event it reads and each item of a compact list it
    /// hands over) may queue: once `max` deltas are queued, it waits until pops have brought
    /// them down to half of that. Default: no bound, as client-go's. `max` is at least 1.
    ///
    /// So a burst of watch events costs at most about `max` decoded objects beyond the cache,
    /// and the rest waits in the connection (and on the server); a list that waits in compact
    /// form is decoded no faster than the cache takes it, and at most
    /// [`HANDOVER_BOUND`] of its items wait decoded here. A list held decoded is in memory
    /// already when it is queued, and a resync replays objects the cache holds: neither is
    /// bounded. The shared informer sets it
    /// ([`with_max_queued_deltas`](crate::shared_informer::SharedIndexInformer::with_max_queued_deltas)).
    #[must_use]
    pub fn with_max_queued_deltas(mut self, max: usize) -> Self {
        self.max_queued_deltas = max.max(1);
        self
    }

    /// Whether a producer may queue another delta now: fewer than the
    /// [bound](Self::with_max_queued_deltas) are queued, or the queue is closed. If not, `cx`'s
    /// waker is woken once pops have brought the queue down to half the bound. Every producer
    /// waiting (one reflector per namespace) is woken then.
    pub fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.state.lock();
        if state.queued_deltas < self.bound(&state) || state.closed {
            state.producers.retain(|waker| !waker.will_wake(cx.waker()));
            return Poll::Ready(());
        }
        if !state.producers.iter().any(|waker| waker.will_wake(cx.waker())) {
            state.producers.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// The bound [`poll_ready`](Self::poll_ready) holds the producer to now: while a list is
    /// handed over [item by item](Self::replace_item), at most [`HANDOVER_BOUND`], since each
    /// of its items is decoded only to wait here, and a few dozen keep the consumer busy.
    fn bound(&self, state: &State<K>) -> usize {
        if state.listed.is_empty() {
            self.max_queued_deltas
        } else {
            self.max_queued_deltas.min(HANDOVER_BOUND)
        }
    }

    /// Deltas queued, over every key.
    #[must_use]
    pub fn queued_deltas(&self) -> usize {
        self.state.lock().queued_deltas
    }

    /// Number of keys queued.
    #[must_use]
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Whether no key is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.state.lock().queue.is_empty()
    }

    /// The queued keys, in pop order.
    #[must_use]
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.state.lock().queue.iter().cloned().collect()
    }

    /// The deltas queued for `key`, oldest first.
    #[must_use]
    pub fn deltas(&self, key: &str) -> Option<Vec<Delta<K>>> {
        self.state.lock().items.get(key).cloned()
    }

    /// Whether [`close`](Self::close) was called.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    fn transformed(&self, mut obj: Arc<K>) -> Arc<K> {
        if let Some(transform) = &self.transform {
            // Unique when it came off the wire: changed in place. Shared (a fake source, a user
            // keeping a copy): cloned once, so the holder's copy stays as it was.
            transform(Arc::make_mut(&mut obj));
        }
        obj
    }

    /// Appends `delta` to its key's deltas, merging a repeated deletion, and queues the key if
    /// it was not queued.
    fn queue_action(&self, state: &mut State<K>, key: ObjectKey, delta: Delta<K>) {
        let queued = if let Some(deltas) = state.items.get_mut(&key) {
            let before = deltas.len();
            deltas.push(delta);
            dedup_deltas(deltas);
            // One more, or as many as before when a deletion merged.
            let added = deltas.len() - before;
            state.queued_deltas += added;
            true
        } else {
            state.items.insert(key.clone(), vec![delta]);
            state.queued_deltas += 1;
            false
        };
        if !queued {
            state.queue.push_back(key);
            self.not_empty.notify_waiters();
        }
    }

    fn add_or_update(&self, obj: Arc<K>, updated: bool) {
        let key = ObjectKey::of(&*obj);
        let obj = self.transformed(obj);
        let mut state = self.state.lock();
        state.populated = true;
        let delta = if updated { Delta::Updated(obj) } else { Delta::Added(obj) };
        self.queue_action(&mut state, key, delta);
    }
}

/// Merges the last two deltas when both are deletions: keep the older unless it is a tombstone.
/// Only deletions merge; `Added, Updated, Updated` stays three deltas.
fn dedup_deltas<K>(deltas: &mut Vec<Delta<K>>) {
    let n = deltas.len();
    if n < 2 {
        return;
    }
    if let (Delta::Deleted(older), Delta::Deleted(_)) = (&deltas[n - 2], &deltas[n - 1]) {
        if older.is_final_state_unknown() {
            deltas.swap(n - 2, n - 1);
        }
        deltas.truncate(n - 1);
    }
}

/// The producer's side: what the reflector writes.
impl<K: Object> DeltaFifo<K> {
    /// Queues an [`Added`](Delta::Added) delta for `obj` (watch `ADDED`).
    pub fn add(&self, obj: Arc<K>) {
        self.add_or_update(obj, false);
    }

    /// Queues an [`Updated`](Delta::Updated) delta for `obj` (watch `MODIFIED`).
    pub fn update(&self, obj: Arc<K>) {
        self.add_or_update(obj, true);
    }

    /// Queues a [`Deleted`](Delta::Deleted) delta with `obj`, its last state (watch `DELETED`);
    /// dropped when the key is neither queued nor known, since a relist already reported it.
    pub fn delete(&self, obj: Arc<K>) {
        let key = ObjectKey::of(&*obj);
        let mut state = self.state.lock();
        state.populated = true;
        let queued = state.items.contains_key(&key);
        let known = match &self.known_objects {
            Some(known) => known.contains_key(key.as_str()),
            None => false,
        };
        // Neither queued nor cached: a relist already reported this deletion.
        if !queued && !known {
            return;
        }
        let obj = self.transformed(obj);
        self.queue_action(&mut state, key, Delta::Deleted(DeletedObject::Object(obj)));
    }

    /// A list replaced everything: queues a [`Replaced`](Delta::Replaced) delta per listed
    /// object, and a [`DeletedFinalStateUnknown`] tombstone for every queued or known key the
    /// list does not hold.
    ///
    /// The same as [`start_replace`](Self::start_replace), a [`replace_item`](Self::replace_item)
    /// per object and [`finish_replace`](Self::finish_replace), in one step.
    #[doc(alias = "Replace")]
    pub fn replace(&self, list: Vec<Arc<K>>) {
        self.replace_in(None, list);
    }

    fn replace_in(&self, scope: Option<&str>, list: Vec<Arc<K>>) {
        let list = self.keyed(list);
        let mut state = self.state.lock();
        state.take_listed(scope);
        self.finish_replace_locked(&mut state, scope, list);
    }

    /// Starts replacing everything with a complete list, item by item: each listed object is
    /// queued by [`replace_item`](Self::replace_item) (and may be popped before the last one is
    /// queued), and [`finish_replace`](Self::finish_replace) ends the list with the tombstones
    /// of what it did not hold. The reflector does this for a compact cache, decoding each item
    /// only when the queue has room. What an earlier unfinished replace queued stays queued; its
    /// keys no longer count as listed.
    ///
    /// Until the first such list has finished, the queue has not [synced](Self::has_synced),
    /// and what it pops is part of the initial list.
    pub fn start_replace(&self) {
        self.start_replace_in(None);
    }

    fn start_replace_in(&self, scope: Option<&str>) {
        let mut state = self.state.lock();
        state.take_listed(scope);
        state.listed.push((scope.map(str::to_owned), HashSet::new()));
    }

    /// Queues a [`Replaced`](Delta::Replaced) delta for `obj`, an item of the list being
    /// replaced (see [`start_replace`](Self::start_replace), which this starts if no list is).
    pub fn replace_item(&self, obj: Arc<K>) {
        self.replace_item_in(None, obj);
    }

    fn replace_item_in(&self, scope: Option<&str>, obj: Arc<K>) {
        let key = ObjectKey::of(&*obj);
        let obj = self.transformed(obj);
        let mut state = self.state.lock();
        match state.listed.iter_mut().find(|(s, _)| s.as_deref() == scope) {
            Some((_, keys)) => {
                keys.insert(key.clone());
            }
            None => state.listed.push((scope.map(str::to_owned), HashSet::from([key.clone()]))),
        }
        self.queue_action(&mut state, key, Delta::Replaced(obj));
    }

    /// Ends the list being replaced: queues `rest`, its items not queued yet, as
    /// [`replace`](Self::replace) does, and a tombstone for every queued or known key that no
    /// item of the list had.
    pub fn finish_replace(&self, rest: Vec<Arc<K>>) {
        self.finish_replace_in(None, rest);
    }

    fn finish_replace_in(&self, scope: Option<&str>, rest: Vec<Arc<K>>) {
        let rest = self.keyed(rest);
        let mut state = self.state.lock();
        self.finish_replace_locked(&mut state, scope, rest);
    }

    /// The replace side of one namespace, for a queue fed by one reflector per namespace: its
    /// lists are the truth about `namespace` only, so they tombstone only its keys; see the
    /// [module documentation](self#one-queue-one-reflector-per-namespace).
    #[must_use]
    pub fn namespace<'a>(&'a self, namespace: &'a str) -> NamespaceReplace<'a, K> {
        NamespaceReplace { fifo: self, namespace }
    }

    fn keyed(&self, list: Vec<Arc<K>>) -> Vec<(ObjectKey, Arc<K>)> {
        list.into_iter().map(|obj| (ObjectKey::of(&*obj), self.transformed(obj))).collect()
    }

    /// Queues `rest` and the tombstones of the list of `scope` (every key, or one namespace's).
    fn finish_replace_locked(
        &self,
        state: &mut State<K>,
        scope: Option<&str>,
        rest: Vec<(ObjectKey, Arc<K>)>,
    ) {
        let mut keys = state.take_listed(scope).unwrap_or_default();
        keys.reserve(rest.len());
        for (key, obj) in rest {
            keys.insert(key.clone());
            self.queue_action(state, key, Delta::Replaced(obj));
        }

        // Queued keys missing from the list: deleted while the watch was down.
        let mut tombstones = Vec::new();
        for (key, deltas) in &state.items {
            // Another namespace's keys are its reflector's to delete.
            if keys.contains(key) || !in_scope(key, scope) {
                continue;
            }
            let last = deltas.last().and_then(|d| d.object().cloned());
            tombstones.push(DeletedFinalStateUnknown { key: key.clone(), obj: last });
        }
        // Cached keys missing from the list and not queued: the same, known only to the cache.
        if let Some(known) = &self.known_objects {
            for key in known.list_keys() {
                if keys.contains(&key) || state.items.contains_key(&key) || !in_scope(&key, scope) {
                    continue;
                }
                let obj = known.get_by_key(key.as_str());
                tombstones.push(DeletedFinalStateUnknown { key, obj });
            }
        }
        for tombstone in tombstones {
            let key = tombstone.key.clone();
            let delta = Delta::Deleted(DeletedObject::FinalStateUnknown(tombstone));
            self.queue_action(state, key, delta);
        }

        match scope {
            None => {
                // A list of every key is the first list of every namespace too.
                state.unlisted.clear();
                if !state.populated {
                    state.populated = true;
                    // What is queued now is the first list's, as client-go counts it (its items
                    // and tombstones); items an item-by-item list queued and were popped are
                    // synced already.
                    state.initial_population_count = state.queue.len();
                }
            }
            Some(namespace) => {
                // A queue not told its namespaces syncs with the first list of any, as above.
                let first = state.unlisted.remove(namespace) || !state.populated;
                if first {
                    state.populated = true;
                    // The same count, of this namespace's keys: they pop before any of its keys
                    // queued later, so the next this many pops of its keys are its first list.
                    let queued = state.queue.iter().filter(|k| in_scope(k, scope)).count();
                    if queued > 0 {
                        state.initial_by_namespace.insert(namespace.to_owned(), queued);
                    }
                }
            }
        }
    }

    /// The known object with `listed`'s key and resource version, for a relist to keep in place
    /// of `listed` (see [`ReflectorStore::unchanged`](crate::reflector::ReflectorStore::unchanged)).
    ///
    /// Only without a transform: the cache holds transformed objects, and one of those in place
    /// of a listed object would be transformed twice.
    #[must_use]
    pub fn unchanged(&self, listed: &K) -> Option<Arc<K>> {
        if self.transform.is_some() {
            return None;
        }
        self.known_objects.as_ref()?.unchanged(listed)
    }

    /// Queues a [`Sync`](Delta::Sync) delta for every known object that has no queued delta.
    #[doc(alias = "Resync")]
    pub fn resync(&self) {
        let Some(known) = &self.known_objects else { return };
        let mut state = self.state.lock();
        for key in known.list_keys() {
            // A queued delta is newer than the cache: replaying the cache would go back in time.
            if state.items.get(&key).is_some_and(|d| !d.is_empty()) {
                continue;
            }
            if let Some(obj) = known.get_by_key(key.as_str()) {
                self.queue_action(&mut state, key, Delta::Sync(obj));
            }
        }
    }
}

/// The consumer's side: what the shared informer's process loop calls.
impl<K: Object> DeltaFifo<K> {
    /// Waits for the oldest queued key, and runs `process` on all its deltas before the next pop
    /// can start. `process` gets `is_in_initial_list`: whether these deltas belong to the first
    /// list the queue was filled with.
    ///
    /// # Errors
    ///
    /// [`QueueClosed`] once the queue is closed and every queued key was popped.
    #[doc(alias = "Pop")]
    pub async fn pop<R, F>(&self, process: F) -> Result<R, QueueClosed>
    where
        F: FnOnce(Vec<Delta<K>>, bool) -> R + Send,
        R: Send,
    {
        loop {
            let notified = self.not_empty.notified();
            tokio::pin!(notified);
            // Registered before looking, so that a push between the look and the wait wakes us.
            notified.as_mut().enable();
            {
                let mut state = self.state.lock();
                while let Some(key) = state.queue.pop_front() {
                    let is_in_initial_list = state.is_in_initial_list(&key);
                    state.popped_initial(&key);
                    let Some(deltas) = state.items.remove(&key) else {
                        tracing::error!(%key, "DeltaFIFO invariant broken: queued key has no deltas");
                        continue;
                    };
                    state.queued_deltas = state.queued_deltas.saturating_sub(deltas.len());
                    // Woken at half the bound, not just below it: the producer then queues a
                    // batch before it waits again, instead of waking at every pop.
                    if state.queued_deltas <= self.bound(&state) / 2 {
                        for producer in state.producers.drain(..) {
                            producer.wake();
                        }
                    }
                    // Processing under the lock keeps a relist or resync from interleaving with
                    // the cache update this pop makes.
                    return Ok(process(deltas, is_in_initial_list));
                }
                if state.closed {
                    return Err(QueueClosed);
                }
            }
            notified.await;
        }
    }

    /// Whether the first batch of items the queue received has been popped.
    #[doc(alias = "HasSynced")]
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.state.lock().has_synced()
    }

    /// Closes the queue: queued keys still pop, then [`pop`](Self::pop) reports [`QueueClosed`].
    pub fn close(&self) {
        let producers = {
            let mut state = self.state.lock();
            state.closed = true;
            std::mem::take(&mut state.producers)
        };
        for producer in producers {
            producer.wake();
        }
        self.not_empty.notify_waiters();
    }
}

/// One namespace's replace side of a [`DeltaFifo`] fed by one reflector per namespace; see
/// [`DeltaFifo::namespace`]. Each method is its queue's namesake, for the keys of this
/// namespace: what the list holds is queued as [`Replaced`](Delta::Replaced), and only this
/// namespace's queued or known keys missing from it get tombstones.
pub struct NamespaceReplace<'a, K> {
    fifo: &'a DeltaFifo<K>,
    namespace: &'a str,
}

impl<K: Object> NamespaceReplace<'_, K> {
    /// [`DeltaFifo::replace`] for this namespace.
    pub fn replace(&self, list: Vec<Arc<K>>) {
        self.fifo.replace_in(Some(self.namespace), list);
    }

    /// [`DeltaFifo::start_replace`] for this namespace; another namespace's list being
    /// replaced item by item meanwhile goes on.
    pub fn start_replace(&self) {
        self.fifo.start_replace_in(Some(self.namespace));
    }

    /// [`DeltaFifo::replace_item`] for this namespace.
    pub fn replace_item(&self, obj: Arc<K>) {
        self.fifo.replace_item_in(Some(self.namespace), obj);
    }

    /// [`DeltaFifo::finish_replace`] for this namespace.
    pub fn finish_replace(&self, rest: Vec<Arc<K>>) {
        self.fifo.finish_replace_in(Some(self.namespace), rest);
    }
}

impl<K> fmt::Debug for NamespaceReplace<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceReplace")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// The queue ended: closed and drained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("queue is closed")]
#[doc(alias = "ErrFIFOClosed")]
pub struct QueueClosed;

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("DeltaFifo")
            .field("queued", &state.queue.len())
            .field("populated", &state.populated)
            .field("closed", &state.closed)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod namespaces_tests;
#[cfg(test)]
mod tests;
