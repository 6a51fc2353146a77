//! The handlers of the chaos scenario: each keeps, per object, the last state it was told of,
//! and checks every notification against it as it arrives, so nothing grows with the length of
//! a run.
//!
//! The rules a handler relies on, per object: an add only when it thinks the object absent, an
//! update whose `old` is exactly the state it last saw and whose `new` is newer, a delete only
//! of a present object, at its last seen version or later (a tombstone: exactly the last seen
//! one). Versions only go up. A handler registered late first gets the cache replayed as
//! initial-list adds; a removed one gets nothing once its removal has returned.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use informer_runtime::resource::resource_version;
use informer_runtime::shared_informer::{DeletedObject, ResourceEventHandler};
use informer_runtime::{ObjectKey, Resource};
use parking_lot::Mutex;

/// How long the slow handler takes per notification.
const SLOW_HANDLER_DELAY: Duration = Duration::from_micros(500);

/// Keeps the slow handler busy for `SLOW_HANDLER_DELAY`, the way a handler doing blocking I/O
/// would. Handlers run on threads of their own, so a plain blocking sleep delays this handler
/// and nothing else (which the test checks: the others converge all the same).
fn slow_down() {
    std::thread::sleep(SLOW_HANDLER_DELAY);
}

/// The most violations a recorder describes in full; the rest are only counted.
const EXAMPLES: usize = 10;

/// What a handler last saw of one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Last {
    Present(u64),
    /// Deleted; the version of the delete's object.
    Gone(u64),
}

/// One notification, reduced to what the checks need.
#[derive(Clone, Copy, Debug)]
enum Seen {
    Add {
        rv: u64,
        initial: bool,
    },
    Update {
        old: u64,
        new: u64,
    },
    /// `rv`: the version of the object delivered, `None` for a tombstone without one.
    Delete {
        rv: Option<u64>,
        tombstone: bool,
    },
}

/// The initial-list adds a late handler received before its first live notification.
#[derive(Default)]
struct Replay {
    adds: HashMap<String, u64>,
    /// A notification other than an initial-list add has arrived: the replay is over.
    over: bool,
}

#[derive(Default)]
struct State {
    last: HashMap<String, Last>,
    events: u64,
    tombstones: u64,
    after_removal: u64,
    violations: u64,
    examples: Vec<String>,
    /// Set for handlers registered late.
    replay: Option<Replay>,
}

impl State {
    fn violation(&mut self, what: String) {
        self.violations += 1;
        if self.examples.len() < EXAMPLES {
            self.examples.push(what);
        }
    }
}

/// A recording handler; register it as `Arc<Recorder>` and keep a clone to read it.
pub(crate) struct Recorder {
    name: String,
    slow: bool,
    removed: AtomicBool,
    state: Mutex<State>,
}

impl Recorder {
    /// A handler registered before the informer starts.
    pub(crate) fn new(name: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            name: name.into(),
            slow: false,
            removed: AtomicBool::new(false),
            state: Mutex::default(),
        })
    }

    /// A handler that takes [`SLOW_HANDLER_DELAY`] per notification.
    pub(crate) fn slow(name: impl Into<String>) -> Arc<Self> {
        Arc::new(Self {
            name: name.into(),
            slow: true,
            removed: AtomicBool::new(false),
            state: Mutex::default(),
        })
    }

    /// A handler registered after start, which must first receive the cache replayed.
    pub(crate) fn late(name: impl Into<String>) -> Arc<Self> {
        let state = State { replay: Some(Replay::default()), ..State::default() };
        Arc::new(Self {
            name: name.into(),
            slow: false,
            removed: AtomicBool::new(false),
            state: Mutex::new(state),
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Called once `remove_event_handler` has returned: any notification that starts later is
    /// a violation.
    pub(crate) fn mark_removed(&self) {
        self.removed.store(true, Ordering::Release);
    }

    pub(crate) fn is_removed(&self) -> bool {
        self.removed.load(Ordering::Acquire)
    }

    /// Notifications received so far.
    pub(crate) fn events(&self) -> u64 {
        self.state.lock().events
    }

    /// Deletes received as tombstones (a relist found the object gone).
    pub(crate) fn tombstones(&self) -> u64 {
        self.state.lock().tombstones
    }

    /// Rule violations, with the first few described.
    pub(crate) fn violations(&self) -> (u64, Vec<String>) {
        let state = self.state.lock();
        (state.violations, state.examples.clone())
    }

    /// The objects whose last state here is not `expected` (key to resourceVersion, for the
    /// objects that exist): present at another version, missing, or present but gone from
    /// `expected`.
    pub(crate) fn differences(&self, expected: &HashMap<String, u64>) -> Vec<String> {
        let state = self.state.lock();
        let mut out = Vec::new();
        for (key, &rv) in expected {
            match state.last.get(key) {
                Some(Last::Present(seen)) if *seen == rv => {}
                other => out.push(format!("{key}: server at {rv}, handler saw {other:?}")),
            }
        }
        for (key, last) in &state.last {
            if matches!(last, Last::Present(_)) && !expected.contains_key(key) {
                out.push(format!("{key}: deleted on the server, handler saw {last:?} last"));
            }
        }
        out
    }

    /// For a late handler: how its replayed adds differ from `snapshot`, the cache when it was
    /// registered (empty when they match). `None` for other handlers.
    pub(crate) fn replay_differences(
        &self,
        snapshot: &HashMap<String, u64>,
    ) -> Option<Vec<String>> {
        let state = self.state.lock();
        let replay = state.replay.as_ref()?;
        let mut out: Vec<String> = snapshot
            .iter()
            .filter(|&(key, rv)| replay.adds.get(key) != Some(rv))
            .map(|(key, rv)| format!("{key}@{rv} not replayed (got {:?})", replay.adds.get(key)))
            .collect();
        out.extend(
            replay
                .adds
                .iter()
                .filter(|&(key, _)| !snapshot.contains_key(key))
                .map(|(key, rv)| format!("{key}@{rv} replayed but not in the cache")),
        );
        Some(out)
    }

    fn record(&self, key: String, seen: Seen) {
        if self.slow {
            slow_down();
        }
        let mut state = self.state.lock();
        state.events += 1;
        if self.is_removed() {
            state.after_removal += 1;
            state.violation(format!("{key}: {seen:?} after the handler was removed"));
        }
        if let Some(replay) = &mut state.replay
            && !replay.over
        {
            match seen {
                Seen::Add { rv, initial: true } => {
                    replay.adds.insert(key.clone(), rv);
                }
                _ => replay.over = true,
            }
        }
        let last = state.last.get(&key).copied();
        let (next, wrong) = match (last, &seen) {
            (None, Seen::Add { rv, .. }) => (Last::Present(*rv), None),
            (Some(Last::Gone(gone)), Seen::Add { rv, .. }) => {
                (Last::Present(*rv), (*rv <= gone).then_some("re-added at an older version"))
            }
            (Some(Last::Present(_)), Seen::Add { rv, .. }) => {
                (Last::Present(*rv), Some("added while present"))
            }
            (Some(Last::Present(was)), Seen::Update { old, new }) => {
                let wrong = if *old != was {
                    Some("update from a state the handler never saw (a change was lost)")
                } else if new <= old {
                    Some("update to an older or equal version")
                } else {
                    None
                };
                (Last::Present(*new), wrong)
            }
            (_, Seen::Update { new, .. }) => {
                (Last::Present(*new), Some("update of an absent object"))
            }
            (Some(Last::Present(was)), Seen::Delete { rv, tombstone }) => {
                let rv = rv.unwrap_or(was);
                let wrong = if *tombstone && rv != was {
                    Some("tombstone not at the last seen version")
                } else if rv < was {
                    Some("deleted at an older version")
                } else {
                    None
                };
                (Last::Gone(rv), wrong)
            }
            (_, Seen::Delete { rv, .. }) => {
                (Last::Gone(rv.unwrap_or(0)), Some("delete of an absent object"))
            }
        };
        if let Seen::Delete { tombstone: true, .. } = seen {
            state.tombstones += 1;
        }
        if let Some(wrong) = wrong {
            state.violation(format!("{key}: {wrong}: last {last:?}, then {seen:?}"));
        }
        state.last.insert(key, next);
    }

    /// The version of `obj`, or a violation when it has none.
    fn version<K: Resource>(&self, obj: &K) -> u64 {
        resource_version(obj).parse().unwrap_or_else(|_| {
            let key = ObjectKey::of(obj);
            self.state.lock().violation(format!("{key}: unparsable resourceVersion"));
            0
        })
    }
}

impl<K: Resource> ResourceEventHandler<K> for Recorder {
    fn on_add(&self, obj: Arc<K>, is_in_initial_list: bool) {
        let rv = self.version(&*obj);
        self.record(
            ObjectKey::of(&*obj).to_string(),
            Seen::Add { rv, initial: is_in_initial_list },
        );
    }

    fn on_update(&self, old: Arc<K>, new: Arc<K>) {
        let seen = Seen::Update { old: self.version(&*old), new: self.version(&*new) };
        self.record(ObjectKey::of(&*new).to_string(), seen);
    }

    fn on_delete(&self, obj: DeletedObject<K>) {
        let rv = obj.object().map(|o| self.version(&**o));
        let seen = Seen::Delete { rv, tombstone: obj.is_final_state_unknown() };
        self.record(obj.key().to_string(), seen);
    }
}
