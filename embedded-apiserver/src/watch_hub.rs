//! The open watches of every resource, and what each is sent: the watch cache's dispatcher.
//!
//! A write reaches every [`Watcher`] of its resource under the state lock, through its own
//! bounded channel, filtered as the watch cache filters (an object that stops matching a
//! selector arrives as `DELETED` with its last matching state, one that starts matching as
//! `ADDED`). The HTTP side of a watch (its start, timeout and encoding) is `watch.rs`, which
//! reads the state this hub lives in; the hub itself knows nothing of the state, so that the
//! state can hold it.
//!
//! # Watchers that stop reading
//!
//! kube-apiserver's cacher gives each watcher a bounded buffer, and when an event does not fit
//! it waits a little (its `blockTimeout`, from a shared budget) and then closes that watcher:
//! "Forcing watcher close due to unresponsiveness" (`cacheWatcher.add` in
//! `k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go`). Here a write cannot wait (it holds
//! the state lock), so a watcher whose buffer is full is closed at once, with the same
//! warning. The client reads the events already buffered, then the end of the response, and
//! resumes from the last version it saw, as after any closed watch. A buffer is what
//! [`Config::watch_buffer`](crate::Config::watch_buffer) says, so memory stays bounded
//! however many events a client leaves unread. Bookmarks that do not fit are skipped, as the
//! cacher skips them, without closing the watch.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;
use tokio::sync::mpsc::{self, error::TrySendError};

use crate::query::Filter;
use crate::status::{ApiError, GroupResource};
use crate::storage::{Change, ChangeKind, Object, stamp};

/// One thing a watch sends.
#[derive(Debug)]
pub(crate) enum Frame {
    /// `ADDED`, `MODIFIED` or `DELETED`.
    Event(ChangeKind, Object),
    /// `BOOKMARK` at a version.
    Bookmark { rv: u64, initial_events_end: bool },
    /// `ERROR`; the watch ends after it. Boxed: buffers hold many frames, few of them errors.
    Error(Box<ApiError>),
}

/// One open watch.
#[derive(Debug)]
pub(crate) struct Watcher {
    pub(crate) storage: GroupResource,
    pub(crate) filter: Filter,
    pub(crate) bookmarks: bool,
    /// Only changes after this version are sent: a watch from a version the server has not
    /// reached yet waits for it.
    pub(crate) after: u64,
    /// The watch's buffer: bounded, see the [module documentation](self).
    pub(crate) tx: mpsc::Sender<Frame>,
    /// Set when the watch is stalled: its stream then ignores its timeout.
    pub(crate) stalled: Arc<AtomicBool>,
}

impl Watcher {
    /// How many frames wait in its buffer.
    fn buffered(&self) -> usize {
        self.tx.max_capacity().saturating_sub(self.tx.capacity())
    }
}

/// The open watches of every resource.
#[derive(Debug, Default)]
pub(crate) struct WatchHub {
    watchers: Vec<Watcher>,
    /// Stalled watches: kept open, sent nothing.
    stalled: Vec<Watcher>,
    /// The oldest version a watch can start from, as the watch cache's window starts where it
    /// was initialized: 0 until the server restarts (see [`restart`](Self::restart)).
    since: u64,
}

impl WatchHub {
    /// Adds a watch, once its first events are queued: from now on it gets every change.
    pub(crate) fn add(&mut self, watcher: Watcher) {
        self.watchers.push(watcher);
    }

    /// Sends a committed change to the watches of its resource that it concerns; closes those
    /// whose buffer is full.
    pub(crate) fn broadcast(&mut self, change: &Change) {
        self.watchers.retain(|watcher| {
            if watcher.storage != change.storage || change.rv <= watcher.after {
                return !watcher.tx.is_closed();
            }
            let Some(frame) = event_for(change, &watcher.filter) else {
                return !watcher.tx.is_closed();
            };
            match watcher.tx.try_send(frame) {
                Ok(()) => true,
                Err(TrySendError::Closed(_)) => false,
                Err(TrySendError::Full(_)) => {
                    // kube-apiserver logs this at V(1); a test wants to know.
                    tracing::warn!(
                        resource = %watcher.storage,
                        namespace = watcher.filter.namespace.as_deref().unwrap_or(""),
                        buffered = watcher.buffered(),
                        rv = change.rv,
                        "forcing watcher close due to unresponsiveness: its buffer is full"
                    );
                    false
                }
            }
        });
    }

    /// Sends a bookmark at `rv` to every watch that asked for bookmarks and has room for it.
    pub(crate) fn bookmark(&mut self, rv: u64) {
        self.watchers.retain(|w| !w.tx.is_closed());
        // A bookmark never takes a watch back before where it started.
        for watcher in self.watchers.iter().filter(|w| w.bookmarks && rv >= w.after) {
            // A full buffer skips the bookmark: the events in it carry versions anyway.
            let _ = watcher.tx.try_send(Frame::Bookmark { rv, initial_events_end: false });
        }
    }

    /// Ends the watches of `storage` (stalled ones too) cleanly, after what their buffers hold:
    /// what kube-apiserver does to the watches of a custom resource whose CRD is deleted (its
    /// storage, and with it its watch cache, is destroyed).
    pub(crate) fn drop_storage(&mut self, storage: &GroupResource) {
        self.watchers.retain(|w| w.storage != *storage);
        self.stalled.retain(|w| w.storage != *storage);
    }

    /// Ends every open watch (stalled ones too) cleanly; returns how many there were.
    pub(crate) fn drop_all(&mut self) -> usize {
        let n = self.open();
        self.watchers.clear();
        self.stalled.clear();
        n
    }

    /// Forgets every watch and starts the window of versions watches can start from at `rv`,
    /// as a restarted API server's watch cache does: it is initialized from a list at the
    /// current version and holds no older history (KEP-1904, "Efficient watch resumption
    /// after kube-apiserver reboot", which shows the 410 that a watch from before gets).
    pub(crate) fn restart(&mut self, rv: u64) {
        self.drop_all();
        self.since = self.since.max(rv);
    }

    /// The oldest version a watch can start from (see [`restart`](Self::restart)).
    pub(crate) fn since(&self) -> u64 {
        self.since
    }

    /// Stalls every open watch: it stays open and receives nothing more until it is dropped.
    /// Returns how many were stalled.
    pub(crate) fn stall_all(&mut self) -> usize {
        self.watchers.retain(|w| !w.tx.is_closed());
        for watcher in &self.watchers {
            watcher.stalled.store(true, Ordering::SeqCst);
        }
        let n = self.watchers.len();
        self.stalled.append(&mut self.watchers);
        n
    }

    /// The number of open watches, stalled ones included.
    pub(crate) fn open(&mut self) -> usize {
        self.watchers.retain(|w| !w.tx.is_closed());
        self.stalled.retain(|w| !w.tx.is_closed());
        self.watchers.len() + self.stalled.len()
    }

    /// How many frames wait in the buffers of the open watches.
    pub(crate) fn buffered(&self) -> usize {
        self.watchers.iter().chain(&self.stalled).map(Watcher::buffered).sum()
    }
}

/// The event a watch with `filter` gets for `change` (`cacheWatcher.convertToWatchEvent`).
pub(crate) fn event_for(change: &Change, filter: &Filter) -> Option<Frame> {
    let now = change.kind != ChangeKind::Deleted && filter.matches(&change.obj);
    let before = change.prev.as_deref().is_some_and(|prev| filter.matches(prev));
    match (now, before) {
        (false, false) => None,
        (true, false) => Some(Frame::Event(ChangeKind::Added, Arc::clone(&change.obj))),
        (true, true) => Some(Frame::Event(ChangeKind::Modified, Arc::clone(&change.obj))),
        (false, true) if change.kind == ChangeKind::Deleted => {
            Some(Frame::Event(ChangeKind::Deleted, Arc::clone(&change.obj)))
        }
        (false, true) => {
            // The last state that matched, at the version where it stopped matching.
            let mut last = change.prev.as_deref().cloned().unwrap_or(Value::Null);
            stamp(&mut last, change.rv);
            Some(Frame::Event(ChangeKind::Deleted, Arc::new(last)))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::Catalog;
    use crate::query::{ListParams, Query};
    use crate::storage::meta_str;

    fn change(kind: ChangeKind, prev: Option<Value>, obj: Value) -> Change {
        Change {
            rv: 9,
            storage: GroupResource::new("", "pods"),
            key: "ns/a".into(),
            kind,
            obj: Arc::new(obj),
            prev: prev.map(Arc::new),
        }
    }

    #[test]
    fn events_are_filtered_as_the_watch_cache_filters() {
        let pods = Catalog::builtin().find("", "v1", "pods").unwrap();
        let params =
            ListParams::parse(&Query::parse(Some("labelSelector=app%3Dweb")), &pods, true).unwrap();
        let filter = Filter::new(None, &params);
        let web =
            json!({"metadata": {"name": "a", "labels": {"app": "web"}, "resourceVersion": "8"}});
        let db = json!({"metadata": {"name": "a", "labels": {"app": "db"}}});
        let kind = |f: Option<Frame>| match f {
            Some(Frame::Event(k, o)) => {
                format!("{}@{}", k.as_str(), meta_str(&o, "resourceVersion"))
            }
            _ => "none".into(),
        };
        assert_eq!(
            kind(event_for(&change(ChangeKind::Modified, Some(web.clone()), db.clone()), &filter)),
            "DELETED@9"
        );
        assert_eq!(
            kind(event_for(&change(ChangeKind::Modified, Some(db.clone()), web.clone()), &filter)),
            "ADDED@8"
        );
        assert_eq!(
            kind(event_for(&change(ChangeKind::Modified, Some(db.clone()), db.clone()), &filter)),
            "none"
        );
        assert_eq!(
            kind(event_for(&change(ChangeKind::Deleted, Some(web.clone()), web), &filter)),
            "DELETED@8"
        );
        assert_eq!(
            kind(event_for(&change(ChangeKind::Deleted, Some(db.clone()), db), &filter)),
            "none"
        );
    }
}
