//! An in-process fake API server: the [`ListWatchSource`] that tests run informers against.
//!
//! [`FakeSource`] generalises client-go's `FakeControllerSource` to any number of resource types
//! and serves the list/watch protocol faithfully, with faults to inject. It sits where the HTTP
//! client sits in the data flow: the reflector lists and watches it through
//! [`FakeSource::lister_watcher`].
//!
//! ```
//! use futures::StreamExt;
//! use informer_runtime::listwatch::{Error, ListOptions, WatchEvent, WatchOptions};
//! use informer_runtime::testing::FakeSource;
//! use k8s_openapi::api::core::v1::Pod;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Error> {
//! let source = FakeSource::new();
//! let name = Some("web-0".to_owned());
//! let pod = source.add(Pod { metadata: ObjectMeta { name, ..ObjectMeta::default() }, ..Pod::default() });
//!
//! let lw = source.lister_watcher::<Pod>(None);
//! let list = lw.list(&ListOptions::default()).await?;
//! assert_eq!((list.items.len(), list.resource_version.as_str()), (1, "1"));
//!
//! let options = WatchOptions { resource_version: list.resource_version, ..WatchOptions::default() };
//! let mut events = lw.watch(&options).await?;
//! source.delete(&*pod);
//! assert!(matches!(events.next().await, Some(Ok(WatchEvent::Deleted(_)))));
//!
//! source.reset_watch(); // the connection breaks: the stream ends ...
//! assert!(events.next().await.is_none());
//! let mut events = lw.watch(&options).await?; // ... and version 1 is gone: relist
//! assert!(matches!(events.next().await, Some(Ok(WatchEvent::Error(s))) if s.is_expired()));
//! # Ok(())
//! # }
//! ```

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::marker::PhantomData;
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

use futures::StreamExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc};

use crate::listwatch::{
    Bookmark, Error, ListOptions, ListWatchSource, ListerWatcher, ObjectList, ResourceVersionMatch,
    Status, WatchEvent, WatchOptions, WatchStream,
};
use crate::resource::{Resource, is_namespaced};
use crate::selector::LabelSelector;
use crate::store::ObjectKey;

/// How many changes per type are kept for watch replay unless
/// [`set_history_limit`](FakeSource::set_history_limit) says otherwise.
const DEFAULT_HISTORY_LIMIT: usize = 10_000;

/// An in-process API server for tests, holding objects of any number of resource types.
///
/// Like client-go's `FakeControllerSource`, a test changes objects with [`add`](Self::add),
/// [`modify`](Self::modify) and [`delete`](Self::delete), loses events with the `…_drop_watch`
/// variants, and breaks connections with [`reset_watch`](Self::reset_watch); informers see it
/// through [`lister_watcher`](Self::lister_watcher) (or as a [`ListWatchSource`] for a factory).
/// Unlike it, the protocol is served faithfully:
///
/// - **Versions.** One resourceVersion counter for all types (as etcd has), starting at 0;
///   every change increments it and stamps the stored copy. Lists report the counter.
/// - **Lists** honour namespace, label and field selectors (`metadata.name`,
///   `metadata.namespace`; `=`, `==`, `!=`), `resourceVersion` and `resourceVersionMatch`, and
///   `limit`/`continue` (items in key order; every page reports the first page's version; a
///   continue token older than the compaction point gets `410 Expired`).
/// - **Watches** from `""`/`"0"` start with a synthetic `ADDED` per object; from a version `N`
///   they replay the kept changes after `N`, or send one `ERROR` event (`410 Expired`) when `N`
///   is older than the compaction point; with `send_initial_events` they end the initial
///   `ADDED` events with an initial-events-end bookmark. Events are filtered as the API
///   server's watch cache does: an object that stops matching a selector arrives as `DELETED`,
///   one that starts matching as `ADDED`.
/// - **Compaction.** Each type keeps a bounded history of changes. The compaction point of a
///   type is the oldest version a watch may start from; it rises when history is trimmed
///   ([`set_history_limit`](Self::set_history_limit)), when an event is lost on purpose, and on
///   [`compact`](Self::compact) and [`reset_watch`](Self::reset_watch) (for all types).
/// - **Validation** as the API server's: bad selectors and versions get `400 BadRequest`,
///   forbidden option combinations `422 Invalid`.
///
/// Not simulated: watch timeouts (`WatchOptions::timeout` is recorded, not enforced; end
/// watches with [`drop_watches`](Self::drop_watches)), conflicts (`add` of an existing object
/// replaces it, `modify` of a missing one creates it, as in client-go's fake), and list
/// snapshots (an `Exact` list of an older version gets `410`).
///
/// Like the HTTP client, lists and watches hand out objects without `metadata.managedFields`
/// unless their options' `keep_managed_fields` is set (an informer's
/// [`ReflectorConfig::keep_managed_fields`](crate::reflector::ReflectorConfig::keep_managed_fields)).
///
/// Objects are stored and handed out as `Arc<K>`: lists and events share the stored allocation
/// (an object with `managedFields` is handed out as a copy without them, unless they are kept).
/// Clones of a `FakeSource` share its state.
#[derive(Clone)]
#[doc(alias = "FakeControllerSource")]
pub struct FakeSource {
    state: Arc<Mutex<State>>,
    /// Signalled whenever a watch opens.
    watch_opened: Arc<Notify>,
}

struct State {
    server: Server,
    /// One [`Table<K>`] per resource type, keyed by `TypeId::of::<K>()`.
    tables: HashMap<TypeId, Box<dyn ErasedTable>>,
}

/// The state shared by all types.
#[derive(Default)]
struct Server {
    /// The last resourceVersion handed out.
    rv: u64,
    /// The compaction point a newly seen type starts with (raised by `compact`/`reset_watch`).
    floor: u64,
    history_limit: usize,
    list_error: Option<Error>,
    fail_lists: Option<(usize, Error)>,
    fail_watches: Option<(usize, Error)>,
}

/// Everything the server holds for one resource type.
struct Table<K> {
    objects: BTreeMap<ObjectKey, Arc<K>>,
    /// Changes after `compacted`, oldest first.
    history: VecDeque<Change<K>>,
    /// The oldest version a watch or a continue token may start from.
    compacted: u64,
    watchers: Vec<Watcher<K>>,
    lists: Vec<ListOptions>,
    watches: Vec<WatchOptions>,
}

#[derive(Clone, Copy)]
enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One change as stored in history.
struct Change<K> {
    rv: u64,
    kind: ChangeKind,
    /// The new state; for a deletion the last state, stamped with the deletion's version.
    obj: Arc<K>,
    /// The state before the change, if there was one.
    prev: Option<Arc<K>>,
    /// `prev` stamped with `rv`: what a watch gets as `DELETED` when the object stops matching
    /// its selectors. Made once, on first need, and shared by every watch.
    prev_at_rv: OnceLock<Arc<K>>,
}

/// One open watch.
struct Watcher<K> {
    tx: mpsc::UnboundedSender<Result<WatchEvent<K>, Error>>,
    filter: Filter,
    bookmarks: bool,
}

type ListResult<K> = Result<ObjectList<K>, Error>;
type WatchResult<K> = Result<WatchStream<K>, Error>;

/// The operations on a table that do not need to know its type.
trait ErasedTable: Send + Sync {
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Ends every open watch stream.
    fn close_watches(&mut self);
    /// Forgets the changes up to `upto` and makes it the oldest version to watch from.
    fn compact(&mut self, upto: u64);
    /// Keeps at most `limit` changes.
    fn limit_history(&mut self, limit: usize);
}

impl<K: Resource> ErasedTable for Table<K> {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn close_watches(&mut self) {
        self.watchers.clear();
    }

    fn compact(&mut self, upto: u64) {
        self.compacted = self.compacted.max(upto);
        while self.history.front().is_some_and(|c| c.rv <= self.compacted) {
            self.history.pop_front();
        }
    }

    fn limit_history(&mut self, limit: usize) {
        while self.history.len() > limit {
            if let Some(change) = self.history.pop_front() {
                self.compacted = self.compacted.max(change.rv);
            }
        }
    }
}

impl<K: Resource> Table<K> {
    fn new(compacted: u64) -> Self {
        Self {
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            compacted,
            watchers: Vec::new(),
            lists: Vec::new(),
            watches: Vec::new(),
        }
    }

    /// Applies one change at the next version; `broadcast: false` loses the event on purpose.
    fn apply(&mut self, server: &mut Server, kind: ChangeKind, obj: K, broadcast: bool) -> Arc<K> {
        server.rv += 1;
        let rv = server.rv;
        let obj = stamp(obj, rv);
        let key = ObjectKey::of(&*obj);
        let prev = match kind {
            ChangeKind::Deleted => self.objects.remove(&key),
            ChangeKind::Added | ChangeKind::Modified => self.objects.insert(key, Arc::clone(&obj)),
        };
        let change = Change { rv, kind, obj: Arc::clone(&obj), prev, prev_at_rv: OnceLock::new() };
        if broadcast {
            self.watchers.retain(|w| !w.tx.is_closed());
            for watcher in &self.watchers {
                if let Some(event) = change.event_for(&watcher.filter) {
                    // A receiver dropped since the retain above is pruned next time.
                    let _ = watcher.tx.send(Ok(event));
                }
            }
            self.history.push_back(change);
            self.limit_history(server.history_limit);
        } else {
            // A watch from before `rv` would miss this change: only a relist recovers it.
            self.compact(rv);
        }
        obj
    }

    fn open_watches(&mut self) -> usize {
        self.watchers.retain(|w| !w.tx.is_closed());
        self.watchers.len()
    }

    fn list(&self, current: u64, filter: &Filter, options: &ListOptions) -> ListResult<K> {
        let (list_rv, after) = match options.continue_token.as_deref().filter(|t| !t.is_empty()) {
            Some(token) => self.continue_from(current, token, options)?,
            None => (list_version(options, current)?, None),
        };
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        let limit = options.limit.filter(|&l| l > 0).map(|l| l as usize);
        let range = self.objects.range::<str, _>((start, Bound::Unbounded));
        let mut matching = range.filter(|(_, obj)| filter.matches(&***obj));
        let mut items = Vec::new();
        let mut continue_token = None;
        for (key, obj) in matching.by_ref() {
            items.push(Arc::clone(obj));
            if limit.is_some_and(|l| items.len() >= l) {
                // Only when more items follow.
                continue_token = matching.next().map(|_| format!("{list_rv}:{key}"));
                break;
            }
        }
        let resource_version = list_rv.to_string();
        Ok(ObjectList { items, resource_version, continue_token })
    }

    /// Validates a continue token (`"{list version}:{last key}"`) and returns its parts.
    fn continue_from<'t>(
        &self,
        current: u64,
        token: &'t str,
        options: &ListOptions,
    ) -> Result<(u64, Option<&'t str>), Error> {
        if !matches!(options.resource_version.as_str(), "" | "0") {
            let message = "specifying resource version is not allowed when using continue";
            return Err(bad_request(message));
        }
        if options.resource_version_match.is_some() {
            return Err(invalid("resourceVersionMatch is forbidden when continue is provided"));
        }
        let (rv, key) = token
            .split_once(':')
            .and_then(|(rv, key)| Some((rv.parse::<u64>().ok()?, key)))
            .filter(|&(rv, _)| rv <= current)
            .ok_or_else(|| bad_request(format!("continue key is not valid: {token:?}")))?;
        if rv < self.compacted {
            return Err(Error::Api(Status::expired(
                "The provided continue parameter is too old to display a consistent list result. \
                 You can start a new list without the continue parameter.",
            )));
        }
        Ok((rv, Some(key)))
    }

    fn watch(&mut self, current: u64, filter: Filter, options: &WatchOptions) -> WatchResult<K> {
        validate_watch(options)?;
        let since = match options.resource_version.as_str() {
            "" | "0" => None,
            rv => Some(parse_version(rv)?),
        };
        if let Some(n) = since.filter(|&n| n > current) {
            return Err(too_large(n, current));
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        match since {
            Some(n) if !options.send_initial_events => {
                if n < self.compacted {
                    // The API server opens the watch (HTTP 200) and ends it with an ERROR event.
                    let message = format!("too old resource version: {n} ({})", self.compacted);
                    let event = Ok(WatchEvent::Error(Status::expired(message)));
                    return Ok(futures::stream::iter([event]).boxed());
                }
                for change in self.history.iter().filter(|c| c.rv > n) {
                    if let Some(event) = change.event_for(&filter) {
                        let _ = tx.send(Ok(event));
                    }
                }
            }
            _ => {
                for obj in self.objects.values().filter(|obj| filter.matches(&***obj)) {
                    let _ = tx.send(Ok(WatchEvent::Added(Arc::clone(obj))));
                }
                if options.send_initial_events {
                    let _ = tx.send(Ok(bookmark(current, true)));
                }
            }
        }
        let bookmarks = options.allow_watch_bookmarks;
        self.watchers.push(Watcher { tx, filter, bookmarks });
        Ok(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed())
    }
}

impl<K: Resource> Change<K> {
    /// The event a watch with `filter` gets for this change, as the watch cache filters.
    fn event_for(&self, filter: &Filter) -> Option<WatchEvent<K>> {
        let now = filter.matches(&*self.obj);
        let obj = || Arc::clone(&self.obj);
        match self.kind {
            ChangeKind::Added => now.then(|| WatchEvent::Added(obj())),
            ChangeKind::Deleted => now.then(|| WatchEvent::Deleted(obj())),
            ChangeKind::Modified => match (self.prev.as_deref(), now) {
                (Some(prev), false) if filter.matches(prev) => {
                    // The last state that matched, at the version where it stopped matching.
                    let last = self.prev_at_rv.get_or_init(|| stamp(prev.clone(), self.rv));
                    Some(WatchEvent::Deleted(Arc::clone(last)))
                }
                (Some(prev), true) if !filter.matches(prev) => Some(WatchEvent::Added(obj())),
                (_, now) => now.then(|| WatchEvent::Modified(obj())),
            },
        }
    }
}

impl State {
    /// Runs `f` on the server state and the table of `K`, creating the table on first use.
    fn with<K: Resource, R>(&mut self, f: impl FnOnce(&mut Server, &mut Table<K>) -> R) -> R {
        let floor = self.server.floor;
        let slot = self.tables.entry(TypeId::of::<K>());
        let slot = slot.or_insert_with(|| Box::new(Table::<K>::new(floor)));
        if let Some(table) = slot.as_any_mut().downcast_mut::<Table<K>>() {
            return f(&mut self.server, table);
        }
        // Unreachable: a slot always holds the table of its TypeId. Recover instead of panicking.
        let mut table = Table::<K>::new(floor);
        let out = f(&mut self.server, &mut table);
        *slot = Box::new(table);
        out
    }

    fn compact_all(&mut self) {
        let rv = self.server.rv;
        self.server.floor = rv;
        for table in self.tables.values_mut() {
            table.compact(rv);
        }
    }
}

/// Consumes one injected failure, if any is left.
fn take_failure(slot: &mut Option<(usize, Error)>) -> Result<(), Error> {
    let Some((left, error)) = slot else {
        return Ok(());
    };
    let error = error.clone();
    *left = left.saturating_sub(1);
    if *left == 0 {
        *slot = None;
    }
    Err(error)
}

impl Default for FakeSource {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeSource {
    /// An empty source at resourceVersion 0.
    #[must_use]
    #[doc(alias = "NewFakeControllerSource")]
    pub fn new() -> Self {
        let history_limit = DEFAULT_HISTORY_LIMIT;
        let server = Server { history_limit, ..Server::default() };
        let state = Arc::new(Mutex::new(State { server, tables: HashMap::new() }));
        Self { state, watch_opened: Arc::new(Notify::new()) }
    }

    /// A lister-watcher for `K` served by this source, limited to `namespace` when given and
    /// `K` is namespaced (`None` or `""`: all namespaces).
    #[must_use]
    pub fn lister_watcher<K: Resource>(
        &self,
        namespace: Option<&str>,
    ) -> Arc<dyn ListerWatcher<K>> {
        let namespace = namespace.filter(|ns| !ns.is_empty() && is_namespaced::<K>());
        let namespace = namespace.map(str::to_owned);
        Arc::new(FakeListerWatcher::<K> { source: self.clone(), namespace, _kind: PhantomData })
    }

    /// Creates `obj` (or replaces the object with its key) at the next resourceVersion and
    /// sends `ADDED` to the matching watches, as client-go's `Add`.
    ///
    /// Returns the stored object, its `metadata.resourceVersion` set to the new version (any
    /// version the caller set is overwritten).
    pub fn add<K: Resource>(&self, obj: K) -> Arc<K> {
        self.apply(ChangeKind::Added, obj, true)
    }

    /// Replaces the object with the key of `obj` (or creates it) at the next resourceVersion
    /// and sends `MODIFIED` to the matching watches, as client-go's `Modify`.
    ///
    /// Returns the stored object, stamped with the new version.
    pub fn modify<K: Resource>(&self, obj: K) -> Arc<K> {
        self.apply(ChangeKind::Modified, obj, true)
    }

    /// Deletes the object with the key of `obj` at the next resourceVersion and sends `DELETED`
    /// with its last stored state, stamped with the new version, as client-go's `Delete`.
    ///
    /// Returns that last state, or `None` (and changes nothing) when no such object exists.
    pub fn delete<K: Resource>(&self, obj: &K) -> Option<Arc<K>> {
        self.remove(obj, true)
    }

    /// [`add`](Self::add) whose event is lost: no watch sees it and it is not kept in history,
    /// so a watch from an older version gets `410 Expired` and only a relist recovers it.
    /// Mirrors client-go's `AddDropWatch`.
    pub fn add_drop_watch<K: Resource>(&self, obj: K) -> Arc<K> {
        self.apply(ChangeKind::Added, obj, false)
    }

    /// [`modify`](Self::modify) whose event is lost, as [`add_drop_watch`](Self::add_drop_watch).
    /// Mirrors client-go's `ModifyDropWatch`.
    pub fn modify_drop_watch<K: Resource>(&self, obj: K) -> Arc<K> {
        self.apply(ChangeKind::Modified, obj, false)
    }

    /// [`delete`](Self::delete) whose event is lost, as [`add_drop_watch`](Self::add_drop_watch).
    /// Mirrors client-go's `DeleteDropWatch`.
    pub fn delete_drop_watch<K: Resource>(&self, obj: &K) -> Option<Arc<K>> {
        self.remove(obj, false)
    }

    fn apply<K: Resource>(&self, kind: ChangeKind, obj: K, broadcast: bool) -> Arc<K> {
        self.with(|server, table| table.apply(server, kind, obj, broadcast))
    }

    fn remove<K: Resource>(&self, obj: &K, broadcast: bool) -> Option<Arc<K>> {
        let key = ObjectKey::of(obj);
        self.with(|server, table: &mut Table<K>| {
            let last = K::clone(table.objects.get(&key)?);
            Some(table.apply(server, ChangeKind::Deleted, last, broadcast))
        })
    }

    /// Ends every open watch stream of every type, cleanly: each stream yields the events
    /// already sent, then ends. History is kept, so watches can resume where they were.
    pub fn drop_watches(&self) {
        for table in self.state.lock().tables.values_mut() {
            table.close_watches();
        }
    }

    /// Simulates a broken connection followed by compaction, as client-go's `ResetWatch`: ends
    /// every open watch and forgets all history, so that a watch or a continue token older than
    /// the current version gets `410 Expired` and the client must relist.
    pub fn reset_watch(&self) {
        let mut state = self.state.lock();
        for table in state.tables.values_mut() {
            table.close_watches();
        }
        state.compact_all();
    }

    /// Compacts like etcd: forgets all history, so that a watch or a continue token older than
    /// the current version gets `410 Expired`. Open watches keep running.
    pub fn compact(&self) {
        self.state.lock().compact_all();
    }

    /// Keeps at most `limit` changes per type for watch replay (10 000 by default, as a
    /// generous watch cache). Trimmed changes raise the compaction point of their type.
    pub fn set_history_limit(&self, limit: usize) {
        let mut state = self.state.lock();
        state.server.history_limit = limit;
        for table in state.tables.values_mut() {
            table.limit_history(limit);
        }
    }

    /// Makes every list fail with `error` until called with `None`, as client-go's `ListError`
    /// field. Lists are still recorded.
    #[doc(alias = "ListError")]
    pub fn set_list_error(&self, error: Option<Error>) {
        self.state.lock().server.list_error = error;
    }

    /// Makes the next `n` lists, of any type, fail with `error` (replacing an earlier
    /// `fail_next_lists`; `n == 0` cancels it). Lists are still recorded.
    pub fn fail_next_lists(&self, n: usize, error: Error) {
        self.state.lock().server.fail_lists = (n > 0).then_some((n, error));
    }

    /// Makes the next `n` watch requests, of any type, fail to open with `error` (replacing
    /// an earlier `fail_next_watches`; `n == 0` cancels it). Watches are still recorded.
    pub fn fail_next_watches(&self, n: usize, error: Error) {
        self.state.lock().server.fail_watches = (n > 0).then_some((n, error));
    }

    /// Sends a `BOOKMARK` at the current resourceVersion to the open watches of `K` that asked
    /// for bookmarks, as the API server does periodically.
    pub fn send_bookmarks<K: Resource>(&self) {
        self.with(|server, table: &mut Table<K>| {
            table.watchers.retain(|w| !w.tx.is_closed());
            for watcher in table.watchers.iter().filter(|w| w.bookmarks) {
                let _ = watcher.tx.send(Ok(bookmark(server.rv, false)));
            }
        });
    }

    /// The stored objects of type `K`, in key order.
    #[must_use]
    pub fn items<K: Resource>(&self) -> Vec<Arc<K>> {
        self.with(|_, table: &mut Table<K>| table.objects.values().cloned().collect())
    }

    /// The stored object of type `K` with key `key` (`namespace/name`, or `name`).
    #[must_use]
    pub fn get<K: Resource>(&self, key: &str) -> Option<Arc<K>> {
        self.with(|_, table: &mut Table<K>| table.objects.get(key).cloned())
    }

    /// The current resourceVersion: the number of changes so far, across all types.
    #[must_use]
    pub fn resource_version(&self) -> u64 {
        self.state.lock().server.rv
    }

    /// Every list request for `K` so far, oldest first (failed ones included).
    #[must_use]
    pub fn list_requests<K: Resource>(&self) -> Vec<ListOptions> {
        self.with(|_, table: &mut Table<K>| table.lists.clone())
    }

    /// Every watch request for `K` so far, oldest first (failed ones included).
    #[must_use]
    pub fn watch_requests<K: Resource>(&self) -> Vec<WatchOptions> {
        self.with(|_, table: &mut Table<K>| table.watches.clone())
    }

    /// The number of open watches of `K` (a watch whose stream was dropped is closed).
    #[must_use]
    pub fn open_watches<K: Resource>(&self) -> usize {
        self.with(|_, table: &mut Table<K>| table.open_watches())
    }

    /// Completes once at least `n` watches of `K` are open.
    pub async fn wait_for_watches<K: Resource>(&self, n: usize) {
        loop {
            let opened = self.watch_opened.notified();
            tokio::pin!(opened);
            opened.as_mut().enable();
            if self.open_watches::<K>() >= n {
                return;
            }
            opened.await;
        }
    }

    /// Runs `f` on the server state and the table of `K`, under the lock.
    fn with<K: Resource, R>(&self, f: impl FnOnce(&mut Server, &mut Table<K>) -> R) -> R {
        self.state.lock().with(f)
    }

    fn list<K: Resource>(&self, namespace: Option<&str>, options: &ListOptions) -> ListResult<K> {
        self.with(|server, table: &mut Table<K>| {
            table.lists.push(options.clone());
            take_failure(&mut server.fail_lists)?;
            if let Some(error) = &server.list_error {
                return Err(error.clone());
            }
            let (labels, fields) = (&options.label_selector, &options.field_selector);
            let filter = Filter::new(namespace, labels.as_deref(), fields.as_deref())?;
            table.list(server.rv, &filter, options)
        })
    }

    fn watch<K: Resource>(
        &self,
        namespace: Option<&str>,
        options: &WatchOptions,
    ) -> WatchResult<K> {
        let stream = self.with(|server, table: &mut Table<K>| {
            table.watches.push(options.clone());
            take_failure(&mut server.fail_watches)?;
            let (labels, fields) = (&options.label_selector, &options.field_selector);
            let filter = Filter::new(namespace, labels.as_deref(), fields.as_deref())?;
            table.watch(server.rv, filter, options)
        })?;
        self.watch_opened.notify_waiters();
        Ok(stream)
    }
}

impl ListWatchSource for FakeSource {
    fn lister_watcher<K: Resource>(&self, namespace: Option<&str>) -> Arc<dyn ListerWatcher<K>> {
        FakeSource::lister_watcher(self, namespace)
    }
}

impl fmt::Debug for FakeSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("FakeSource")
            .field("resource_version", &state.server.rv)
            .field("types", &state.tables.len())
            .finish_non_exhaustive()
    }
}

/// The lister-watcher of one type (and namespace) of a [`FakeSource`].
struct FakeListerWatcher<K> {
    source: FakeSource,
    namespace: Option<String>,
    _kind: PhantomData<fn() -> K>,
}

impl<K: Resource> ListerWatcher<K> for FakeListerWatcher<K> {
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, ListResult<K>> {
        let mut result = self.source.list(self.namespace.as_deref(), options);
        if let (Ok(list), false) = (&mut result, options.keep_managed_fields) {
            for item in &mut list.items {
                without_managed_fields(item);
            }
        }
        Box::pin(futures::future::ready(result))
    }

    fn watch(&self, options: &WatchOptions) -> BoxFuture<'_, WatchResult<K>> {
        let result = self.source.watch(self.namespace.as_deref(), options);
        let result = match result {
            Ok(stream) if !options.keep_managed_fields => Ok(stream
                .map(|event| {
                    event.map(|mut event| {
                        if let WatchEvent::Added(obj)
                        | WatchEvent::Modified(obj)
                        | WatchEvent::Deleted(obj) = &mut event
                        {
                            without_managed_fields(obj);
                        }
                        event
                    })
                })
                .boxed()),
            other => other,
        };
        Box::pin(futures::future::ready(result))
    }
}

/// What the HTTP client's decoding does unless asked to keep `managedFields`, so that tests see
/// the objects a real informer caches. Only objects that have it are copied; the rest stay
/// shared with the source.
fn without_managed_fields<K: Resource>(obj: &mut Arc<K>) {
    if obj.meta().managed_fields.is_some() {
        Arc::make_mut(obj).meta_mut().managed_fields = None;
    }
}

/// Which objects a request sees: its namespace and selectors.
struct Filter {
    namespace: Option<String>,
    labels: Option<LabelSelector>,
    /// `(field is metadata.name (else metadata.namespace), operator is "=", value)`.
    fields: Vec<(bool, bool, String)>,
}

impl Filter {
    /// Parses the selectors of a request.
    fn new(
        namespace: Option<&str>,
        labels: Option<&str>,
        fields: Option<&str>,
    ) -> Result<Self, Error> {
        let labels = labels.filter(|s| !s.trim().is_empty()).map(|s| {
            LabelSelector::parse(s)
                .map_err(|e| bad_request(format!("unable to parse label selector {s:?}: {e}")))
        });
        let fields = fields.map_or(Ok(Vec::new()), parse_field_selector)?;
        let namespace = namespace.map(str::to_owned);
        Ok(Self { namespace, labels: labels.transpose()?, fields })
    }

    fn matches<K: Resource>(&self, obj: &K) -> bool {
        let meta = obj.meta();
        let namespace = meta.namespace.as_deref().unwrap_or_default();
        let name = meta.name.as_deref().unwrap_or_default();
        let labels = meta.labels.as_ref();
        self.namespace.as_deref().is_none_or(|ns| ns == namespace)
            && self.labels.as_ref().is_none_or(|s| s.matches_opt(labels))
            && self.fields.iter().all(|(is_name, equal, value)| {
                (if *is_name { name } else { namespace } == value) == *equal
            })
    }
}

/// Parses a field selector: comma-separated `field=value`, `field==value`, `field!=value`, where
/// the field is `metadata.name` or `metadata.namespace` (the fields every kind supports).
fn parse_field_selector(selector: &str) -> Result<Vec<(bool, bool, String)>, Error> {
    let fail = |why: String| bad_request(format!("invalid field selector {selector:?}: {why}"));
    let mut requirements = Vec::new();
    for term in selector.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let equals = term.split_once("==").or_else(|| term.split_once('='));
        let (field, equal, value) = match (term.split_once("!="), equals) {
            (Some((field, value)), _) => (field, false, value),
            (None, Some((field, value))) => (field, true, value),
            (None, None) => return Err(fail(format!("{term:?} has no =, == or !="))),
        };
        let is_name = match field.trim() {
            "metadata.name" => true,
            "metadata.namespace" => false,
            other => return Err(fail(format!("field label not supported: {other}"))),
        };
        requirements.push((is_name, equal, value.trim().to_owned()));
    }
    Ok(requirements)
}

/// The version a first list page is served at, checking `resourceVersion(Match)`.
fn list_version(options: &ListOptions, current: u64) -> Result<u64, Error> {
    let (rv, exact) = (options.resource_version.as_str(), options.resource_version_match);
    let exact = exact == Some(ResourceVersionMatch::Exact);
    match rv {
        "" if options.resource_version_match.is_some() => {
            Err(invalid("resourceVersionMatch is forbidden unless resourceVersion is provided"))
        }
        "0" if exact => {
            Err(invalid("resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\""))
        }
        "" | "0" => Ok(current),
        _ => match parse_version(rv)? {
            n if n > current => Err(too_large(n, current)),
            // No snapshots are kept: only the current version can be served exactly.
            n if exact && n != current => Err(Error::Api(Status::expired(
                "The resourceVersion for the provided list is too old.",
            ))),
            _ => Ok(current),
        },
    }
}

/// The API server's validation of watch options.
fn validate_watch(options: &WatchOptions) -> Result<(), Error> {
    let not_older = options.resource_version_match == Some(ResourceVersionMatch::NotOlderThan);
    let why = match (options.send_initial_events, not_older, options.allow_watch_bookmarks) {
        (true, false, _) => {
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        }
        (true, true, false) => "sendInitialEvents requires setting allowWatchBookmarks to true",
        (false, ..) if options.resource_version_match.is_some() => {
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
        }
        _ => return Ok(()),
    };
    Err(invalid(why))
}

fn parse_version(rv: &str) -> Result<u64, Error> {
    rv.parse().map_err(|_| bad_request(format!("invalid resource version {rv:?}")))
}

fn too_large(requested: u64, current: u64) -> Error {
    let message = format!("Too large resource version: {requested}, current: {current}");
    Error::Api(Status::resource_version_too_large(message))
}

fn bad_request(message: impl Into<String>) -> Error {
    Error::Api(Status::new(400, "BadRequest", message))
}

/// `422 Invalid`: options the API server's validation rejects.
fn invalid(message: &str) -> Error {
    Error::Api(Status::new(422, "Invalid", format!("invalid options: {message}")))
}

fn bookmark<K>(rv: u64, initial_events_end: bool) -> WatchEvent<K> {
    WatchEvent::Bookmark(Bookmark { resource_version: rv.to_string(), initial_events_end })
}

/// `obj` with `metadata.resourceVersion` set to `rv`, shared.
fn stamp<K: Resource>(mut obj: K, rv: u64) -> Arc<K> {
    obj.meta_mut().resource_version = Some(rv.to_string());
    Arc::new(obj)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::{Namespace, Pod};

    use super::*;
    use crate::testing::objects::{labeled_pod, namespace, pod};

    /// The next event of `stream`, shown as `WatchEvent`'s `Debug` (`Added(ns/a@3)`), or `None`
    /// when the stream ended. Fails the test instead of hanging.
    async fn next<K: Resource>(stream: &mut WatchStream<K>) -> Option<String> {
        let item = tokio::time::timeout(Duration::from_secs(1), stream.next())
            .await
            .expect("watch stalled");
        item.map(|event| format!("{:?}", event.expect("watch error")))
    }

    /// Every remaining event, after closing the watches.
    async fn rest<K: Resource>(source: &FakeSource, mut stream: WatchStream<K>) -> Vec<String> {
        source.drop_watches();
        let mut events = Vec::new();
        while let Some(event) = next(&mut stream).await {
            events.push(event);
        }
        events
    }

    fn list_opts(rv: &str) -> ListOptions {
        ListOptions { resource_version: rv.to_owned(), ..ListOptions::default() }
    }

    fn watch_opts(rv: &str) -> WatchOptions {
        WatchOptions { resource_version: rv.to_owned(), ..WatchOptions::default() }
    }

    fn keys<K: Resource>(list: &ObjectList<K>) -> Vec<String> {
        list.items.iter().map(|o| ObjectKey::of(&**o).to_string()).collect()
    }

    fn status<T>(result: Result<T, Error>) -> Status {
        match result {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.status().cloned().expect("an API status"),
        }
    }

    #[tokio::test]
    async fn managed_fields_are_handed_out_only_when_kept() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

        let source = FakeSource::new();
        let plain = source.add(pod("ns", "plain", ""));
        let mut managed = pod("ns", "managed", "");
        managed.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
        source.add(managed.clone());
        let lw = source.lister_watcher::<Pod>(None);
        let has = |o: &Arc<Pod>| o.metadata.managed_fields.is_some();

        let pruned = lw.list(&list_opts("")).await.unwrap();
        assert!(pruned.items.iter().all(|o| !has(o)));
        assert!(pruned.items.iter().any(|o| Arc::ptr_eq(o, &plain)), "still shared");
        let kept = ListOptions { keep_managed_fields: true, ..list_opts("") };
        assert_eq!(lw.list(&kept).await.unwrap().items.iter().filter(|o| has(o)).count(), 1);

        let mut pruned = lw.watch(&watch_opts("2")).await.unwrap();
        let kept = WatchOptions { keep_managed_fields: true, ..watch_opts("2") };
        let mut kept = lw.watch(&kept).await.unwrap();
        source.modify(managed);
        let object = |event: Option<Result<WatchEvent<Pod>, Error>>| match event {
            Some(Ok(WatchEvent::Modified(obj))) => obj,
            _ => panic!("expected a modification"),
        };
        assert!(!has(&object(pruned.next().await)));
        assert!(has(&object(kept.next().await)));
    }

    #[tokio::test]
    async fn resource_versions_count_across_types() {
        let source = FakeSource::new();
        assert_eq!(source.resource_version(), 0);
        let a = source.add(pod("ns", "a", "99"));
        let ns = source.add(namespace("ns"));
        let a2 = source.modify(pod("ns", "a", ""));
        assert_eq!(crate::resource::resource_version(&*a), "1");
        assert_eq!(crate::resource::resource_version(&*ns), "2");
        assert_eq!(crate::resource::resource_version(&*a2), "3");
        assert_eq!(source.resource_version(), 3);
        assert!(Arc::ptr_eq(&source.get::<Pod>("ns/a").unwrap(), &a2));
        assert_eq!(source.items::<Namespace>().len(), 1);

        let pods = source.lister_watcher::<Pod>(None);
        let list = pods.list(&ListOptions::default()).await.unwrap();
        assert_eq!(list.resource_version, "3");
        assert!(Arc::ptr_eq(&list.items[0], &a2), "lists share the stored objects");

        let gone = source.delete(&pod("ns", "a", "")).unwrap();
        assert_eq!(crate::resource::resource_version(&*gone), "4");
        assert!(source.delete(&pod("ns", "a", "")).is_none());
        assert_eq!(source.resource_version(), 4);
        assert!(source.items::<Pod>().is_empty());
    }

    #[tokio::test]
    async fn list_paginates_in_key_order_and_keeps_first_version() {
        let source = FakeSource::new();
        for name in ["e", "b", "d", "a", "c"] {
            source.add(pod("ns", name, ""));
        }
        let lw = source.lister_watcher::<Pod>(None);
        let first = lw.list(&ListOptions { limit: Some(2), ..list_opts("0") }).await.unwrap();
        assert_eq!(keys(&first), ["ns/a", "ns/b"]);
        assert_eq!(first.resource_version, "5");
        source.add(pod("ns", "bb", ""));
        let token = first.continue_token.clone();
        let second = lw.list(&ListOptions {
            limit: Some(2),
            continue_token: token,
            ..ListOptions::default()
        });
        let second = second.await.unwrap();
        assert_eq!(keys(&second), ["ns/bb", "ns/c"]);
        assert_eq!(second.resource_version, "5");
        let token = second.continue_token.clone();
        let third = lw.list(&ListOptions {
            limit: Some(2),
            continue_token: token,
            ..ListOptions::default()
        });
        let third = third.await.unwrap();
        assert_eq!(keys(&third), ["ns/d", "ns/e"]);
        assert_eq!(third.continue_token, None, "no token after the last item");
        assert_eq!(source.list_requests::<Pod>().len(), 3);

        let with_rv = ListOptions { continue_token: first.continue_token, ..list_opts("5") };
        assert_eq!(status(lw.list(&with_rv).await).code, 400);
        let bogus = ListOptions { continue_token: Some("x".into()), ..ListOptions::default() };
        assert_eq!(status(lw.list(&bogus).await).code, 400);
    }

    #[tokio::test]
    async fn continue_token_expires_after_compaction() {
        let source = FakeSource::new();
        source.add(pod("ns", "a", ""));
        source.add(pod("ns", "b", ""));
        let lw = source.lister_watcher::<Pod>(None);
        let first =
            lw.list(&ListOptions { limit: Some(1), ..ListOptions::default() }).await.unwrap();
        let next_page =
            ListOptions { continue_token: first.continue_token, ..ListOptions::default() };
        source.compact();
        assert_eq!(
            keys(&lw.list(&next_page).await.unwrap()),
            ["ns/b"],
            "compaction at the list's version"
        );
        source.add(pod("ns", "c", ""));
        source.reset_watch();
        let expired = status(lw.list(&next_page).await);
        assert!(expired.is_expired());
        assert!(expired.message.contains("continue parameter is too old"), "{expired}");
    }

    #[tokio::test]
    async fn list_resource_version_rules() {
        let source = FakeSource::new();
        source.add(pod("ns", "a", ""));
        source.add(pod("ns", "b", ""));
        let lw = source.lister_watcher::<Pod>(None);
        for rv in ["", "0", "1", "2"] {
            assert_eq!(lw.list(&list_opts(rv)).await.unwrap().resource_version, "2", "rv {rv:?}");
        }
        let not_older = ListOptions {
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            ..list_opts("1")
        };
        assert_eq!(lw.list(&not_older).await.unwrap().items.len(), 2);
        let exact = |rv| ListOptions {
            resource_version_match: Some(ResourceVersionMatch::Exact),
            ..list_opts(rv)
        };
        assert_eq!(lw.list(&exact("2")).await.unwrap().resource_version, "2");
        assert!(status(lw.list(&exact("1")).await).is_expired());
        assert!(lw.list(&list_opts("3")).await.unwrap_err().is_resource_version_too_large());
        assert_eq!(status(lw.list(&list_opts("abc")).await).code, 400);
        assert_eq!(status(lw.list(&exact("")).await).code, 422);
    }

    #[tokio::test]
    async fn watch_replays_history_after_a_version_then_goes_live() {
        let source = FakeSource::new();
        source.add(pod("ns", "a", ""));
        source.add(pod("ns", "b", ""));
        source.modify(pod("ns", "a", ""));
        source.add(namespace("other-type"));
        let lw = source.lister_watcher::<Pod>(None);
        let mut w = lw.watch(&watch_opts("1")).await.unwrap();
        assert_eq!(next(&mut w).await.unwrap(), "Added(ns/b@2)");
        assert_eq!(next(&mut w).await.unwrap(), "Modified(ns/a@3)");
        source.delete(&pod("ns", "b", ""));
        assert_eq!(rest(&source, w).await, ["Deleted(ns/b@5)"]);

        let w = lw.watch(&watch_opts("")).await.unwrap();
        source.add(pod("ns", "c", ""));
        assert_eq!(rest(&source, w).await, ["Added(ns/a@3)", "Added(ns/c@6)"]);

        let err = lw.watch(&watch_opts("7")).await.err().unwrap();
        assert!(err.is_resource_version_too_large());
        assert_eq!(status(lw.watch(&watch_opts("x")).await).code, 400);
        assert_eq!(source.watch_requests::<Pod>().len(), 4);
    }

    #[tokio::test]
    async fn reset_watch_ends_streams_and_expires_old_versions() {
        let source = FakeSource::new();
        source.add(pod("ns", "a", ""));
        let lw = source.lister_watcher::<Pod>(None);
        let mut w = lw.watch(&watch_opts("1")).await.unwrap();
        source.wait_for_watches::<Pod>(1).await;
        source.add(pod("ns", "b", ""));
        source.reset_watch();
        assert_eq!(next(&mut w).await.unwrap(), "Added(ns/b@2)", "queued events are delivered");
        assert_eq!(next(&mut w).await, None);
        assert_eq!(source.open_watches::<Pod>(), 0);

        let mut old = lw.watch(&watch_opts("1")).await.unwrap();
        let event = next(&mut old).await.unwrap();
        assert!(event.contains("410 Expired: too old resource version: 1 (2)"), "{event}");
        assert_eq!(next(&mut old).await, None);
        assert_eq!(source.open_watches::<Pod>(), 0);

        // A type first seen after the reset is compacted too.
        let namespaces = source.lister_watcher::<Namespace>(None);
        let mut old = namespaces.watch(&watch_opts("1")).await.unwrap();
        assert!(next(&mut old).await.unwrap().contains("410"));

        let w = lw.watch(&watch_opts("2")).await.unwrap();
        source.modify(pod("ns", "a", ""));
        assert_eq!(rest(&source, w).await, ["Modified(ns/a@3)"]);
    }

    #[tokio::test]
    async fn drop_watch_changes_are_lost_until_a_relist() {
        let source = FakeSource::new();
        let lw = source.lister_watcher::<Pod>(None);
        let w = lw.watch(&watch_opts("0")).await.unwrap();
        source.add(pod("ns", "a", ""));
        source.add_drop_watch(pod("ns", "b", ""));
        source.modify_drop_watch(pod("ns", "a", ""));
        source.add(pod("ns", "c", ""));
        assert!(source.delete_drop_watch(&pod("ns", "c", "")).is_some());
        source.add(pod("ns", "d", ""));
        assert_eq!(rest(&source, w).await, ["Added(ns/a@1)", "Added(ns/c@4)", "Added(ns/d@6)"]);

        let list = lw.list(&ListOptions::default()).await.unwrap();
        assert_eq!(keys(&list), ["ns/a", "ns/b", "ns/d"]);
        assert_eq!(crate::resource::resource_version(&*list.items[0]), "3");

        let mut old = lw.watch(&watch_opts("4")).await.unwrap();
        assert!(next(&mut old).await.unwrap().contains("too old resource version: 4 (5)"));
        let w = lw.watch(&watch_opts("5")).await.unwrap();
        assert_eq!(rest(&source, w).await, ["Added(ns/d@6)"]);
    }

    #[tokio::test]
    async fn history_limit_raises_the_compaction_point() {
        let source = FakeSource::new();
        for name in ["a", "b", "c", "d"] {
            source.add(pod("ns", name, ""));
        }
        source.set_history_limit(2);
        let lw = source.lister_watcher::<Pod>(None);
        let mut old = lw.watch(&watch_opts("1")).await.unwrap();
        assert!(next(&mut old).await.unwrap().contains("410"));
        let w = lw.watch(&watch_opts("2")).await.unwrap();
        assert_eq!(rest(&source, w).await, ["Added(ns/c@3)", "Added(ns/d@4)"]);
    }

    #[tokio::test]
    async fn streaming_list_ends_initial_events_with_a_bookmark() {
        let source = FakeSource::new();
        source.add(pod("ns", "a", ""));
        source.add(pod("ns", "b", ""));
        let lw = source.lister_watcher::<Pod>(None);
        let options = WatchOptions {
            send_initial_events: true,
            allow_watch_bookmarks: true,
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            ..watch_opts("")
        };
        let w = lw.watch(&options).await.unwrap();
        source.delete(&pod("ns", "a", ""));
        let events = rest(&source, w).await;
        assert_eq!(events[..2], ["Added(ns/a@1)", "Added(ns/b@2)"]);
        assert_eq!(
            events[2],
            format!("{:?}", Bookmark { resource_version: "2".into(), initial_events_end: true })
        );
        assert_eq!(events[3], "Deleted(ns/a@3)");

        let no_match = WatchOptions { resource_version_match: None, ..options.clone() };
        assert_eq!(status(lw.watch(&no_match).await).code, 422);
        let no_bookmarks = WatchOptions { allow_watch_bookmarks: false, ..options };
        assert_eq!(status(lw.watch(&no_bookmarks).await).code, 422);
    }

    #[tokio::test]
    async fn bookmarks_go_to_watches_that_asked() {
        let source = FakeSource::new();
        source.add(pod("ns", "a", ""));
        let lw = source.lister_watcher::<Pod>(None);
        let asked = lw
            .watch(&WatchOptions { allow_watch_bookmarks: true, ..watch_opts("1") })
            .await
            .unwrap();
        let silent = lw.watch(&watch_opts("1")).await.unwrap();
        source.send_bookmarks::<Pod>();
        let bookmark = Bookmark { resource_version: "1".into(), initial_events_end: false };
        assert_eq!(rest(&source, asked).await, [format!("{bookmark:?}")]);
        assert!(rest(&source, silent).await.is_empty());
    }

    #[tokio::test]
    async fn selectors_and_namespaces_filter_lists_and_watches() {
        let source = FakeSource::new();
        source.add(labeled_pod("a", "web", &[("app", "web")]));
        source.add(labeled_pod("a", "db", &[("app", "db")]));
        source.add(labeled_pod("b", "web", &[("app", "web")]));
        source.add(namespace("a"));
        let all = source.lister_watcher::<Pod>(None);
        let in_a = source.lister_watcher::<Pod>(Some("a"));
        let labels =
            |s: &str| ListOptions { label_selector: Some(s.into()), ..ListOptions::default() };
        let fields =
            |s: &str| ListOptions { field_selector: Some(s.into()), ..ListOptions::default() };
        assert_eq!(keys(&all.list(&labels("app=web")).await.unwrap()), ["a/web", "b/web"]);
        assert_eq!(keys(&in_a.list(&labels("app=web")).await.unwrap()), ["a/web"]);
        assert_eq!(
            keys(&all.list(&fields("metadata.name=web,metadata.namespace!=a")).await.unwrap()),
            ["b/web"]
        );
        assert_eq!(keys(&all.list(&fields("metadata.name==db")).await.unwrap()), ["a/db"]);
        let namespaces = source.lister_watcher::<Namespace>(Some("b"));
        assert_eq!(
            keys(&namespaces.list(&ListOptions::default()).await.unwrap()),
            ["a"],
            "cluster-scoped"
        );

        let bad = status(all.list(&labels("app in (web")).await);
        assert!(bad.code == 400 && bad.message.contains("app in (web"), "{bad}");
        let bad = status(all.list(&fields("spec.nodeName=n1")).await);
        assert!(bad.code == 400 && bad.message.contains("spec.nodeName=n1"), "{bad}");
        assert_eq!(status(all.list(&fields("metadata.name")).await).code, 400);

        let options = WatchOptions { label_selector: Some("app=web".into()), ..watch_opts("4") };
        let w = in_a.watch(&options).await.unwrap();
        source.modify(labeled_pod("a", "web", &[("app", "other")]));
        source.modify(labeled_pod("a", "db", &[("app", "web")]));
        source.modify(labeled_pod("b", "web", &[("app", "web"), ("x", "y")]));
        source.modify(labeled_pod("a", "db", &[("app", "web"), ("x", "y")]));
        let events = rest(&source, w).await;
        assert_eq!(events, ["Deleted(a/web@5)", "Added(a/db@6)", "Modified(a/db@8)"]);
        let bad = WatchOptions { field_selector: Some("nope".into()), ..watch_opts("") };
        assert_eq!(status(all.watch(&bad).await).code, 400);
    }

    #[tokio::test]
    async fn injected_errors_fail_requests_that_are_still_recorded() {
        let source = FakeSource::new();
        let lw = source.lister_watcher::<Pod>(None);
        source.fail_next_lists(2, Error::Transport("boom".into()));
        assert!(matches!(lw.list(&ListOptions::default()).await, Err(Error::Transport(_))));
        assert!(matches!(lw.list(&ListOptions::default()).await, Err(Error::Transport(_))));
        assert!(lw.list(&ListOptions::default()).await.is_ok());

        source.set_list_error(Some(Error::Api(Status::too_many_requests("slow down", None))));
        assert!(lw.list(&ListOptions::default()).await.unwrap_err().is_too_many_requests());
        assert!(lw.list(&ListOptions::default()).await.unwrap_err().is_too_many_requests());
        source.set_list_error(None);
        assert!(lw.list(&ListOptions::default()).await.is_ok());
        assert_eq!(source.list_requests::<Pod>().len(), 6);

        source.fail_next_watches(1, Error::ConnectionRefused("down".into()));
        assert!(lw.watch(&watch_opts("0")).await.err().unwrap().is_watch_retriable());
        assert!(lw.watch(&watch_opts("0")).await.is_ok());
        assert_eq!(source.watch_requests::<Pod>().len(), 2);
    }

    #[tokio::test]
    async fn wait_for_watches_resolves_when_enough_are_open() {
        let source = FakeSource::new();
        let waiter = tokio::spawn({
            let source = source.clone();
            async move { source.wait_for_watches::<Pod>(2).await }
        });
        let lw = source.lister_watcher::<Pod>(None);
        let first = lw.watch(&watch_opts("")).await.unwrap();
        let _second = lw.watch(&watch_opts("")).await.unwrap();
        tokio::time::timeout(Duration::from_secs(1), waiter).await.unwrap().unwrap();
        assert_eq!(source.open_watches::<Pod>(), 2);
        assert_eq!(source.open_watches::<Namespace>(), 0);
        drop(first);
        assert_eq!(source.open_watches::<Pod>(), 1, "a dropped stream closes its watch");
    }
}
