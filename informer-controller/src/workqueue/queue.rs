//! The queue's bookkeeping, without locks or waiting: which keys are ready, which are being
//! processed, which were added again meanwhile, and which wait for a delay (client-go's
//! `Typed[T]` in `util/workqueue/queue.go` and the heap of `delaying_queue.go`).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::time::{Duration, Instant};

/// What a work queue holds, under its lock.
///
/// Three sets, as client-go keeps them: `dirty` (must be processed, once), `processing` (taken
/// by a worker), and `ready` (dirty and not processing, in order). A key in both `dirty` and
/// `processing` was added while a worker held it: it goes back to `ready` when that worker is
/// done, so one key is never processed by two workers at once and never lost.
///
/// Every collection holds each key at most once (the heap aside, see [`Delays`]): their sizes
/// are bounded by the number of distinct keys, which is the number of objects a controller
/// watches.
pub(super) struct State<T> {
    ready: VecDeque<T>,
    dirty: HashSet<T>,
    processing: HashSet<T>,
    pub(super) delays: Delays<T>,
    shutting_down: bool,
    /// When each dirty key was added and each processing key taken: kept for metrics only.
    timing: Option<Timing<T>>,
}

/// The times metrics need, per key (client-go's `addTimes` and `processingStartTimes`).
struct Timing<T> {
    added: HashMap<T, Instant>,
    taken: HashMap<T, Instant>,
}

impl<T: Clone + Eq + Hash> State<T> {
    /// An empty queue; `timed` keeps the times metrics need.
    pub(super) fn new(timed: bool) -> Self {
        Self {
            ready: VecDeque::new(),
            dirty: HashSet::new(),
            processing: HashSet::new(),
            delays: Delays::new(),
            shutting_down: false,
            timing: timed.then(|| Timing { added: HashMap::new(), taken: HashMap::new() }),
        }
    }

    /// Marks `item` to be processed, `now`. Returns whether it became dirty (it was not
    /// waiting to be processed already) and whether it became ready for a worker (nor being
    /// processed).
    pub(super) fn add(&mut self, item: T, now: Instant) -> (bool, bool) {
        if self.shutting_down || self.dirty.contains(&item) {
            return (false, false);
        }
        if let Some(timing) = &mut self.timing {
            timing.added.entry(item.clone()).or_insert(now);
        }
        if self.processing.contains(&item) {
            self.dirty.insert(item);
            return (true, false);
        }
        self.dirty.insert(item.clone());
        self.ready.push_back(item);
        (true, true)
    }

    /// Hands the first ready key to a worker, `now`; with how long it waited, when timed.
    pub(super) fn take(&mut self, now: Instant) -> Option<(T, Option<Duration>)> {
        let item = self.ready.pop_front()?;
        self.dirty.remove(&item);
        self.processing.insert(item.clone());
        let waited = self.timing.as_mut().and_then(|timing| {
            timing.taken.insert(item.clone(), now);
            timing.added.remove(&item).map(|at| now.saturating_duration_since(at))
        });
        Some((item, waited))
    }

    /// A worker is done with `item`, `now`. Returns whether it became ready again (it was added
    /// while processed), and how long it was held, when timed.
    pub(super) fn done(&mut self, item: &T, now: Instant) -> (bool, Option<Duration>) {
        if !self.processing.remove(item) {
            return (false, None);
        }
        let worked = self.timing.as_mut().and_then(|timing| {
            timing.taken.remove(item).map(|at| now.saturating_duration_since(at))
        });
        if self.dirty.contains(item) {
            self.ready.push_back(item.clone());
            return (true, worked);
        }
        (false, worked)
    }

    /// How long the keys being processed have been held, summed, and the longest (zero when
    /// not timed).
    #[cfg(any(test, feature = "metrics"))]
    pub(super) fn in_progress(&self, now: Instant) -> (Duration, Duration) {
        let Some(timing) = &self.timing else { return (Duration::ZERO, Duration::ZERO) };
        timing
            .taken
            .values()
            .map(|at| now.saturating_duration_since(*at))
            .fold((Duration::ZERO, Duration::ZERO), |(sum, longest), held| {
                (sum.saturating_add(held), longest.max(held))
            })
    }

    /// Moves the delayed keys whose time has come to the ready ones. Returns how many became
    /// dirty.
    pub(super) fn promote_due(&mut self, now: Instant) -> usize {
        let mut promoted = 0;
        // Added when it fell due, as client-go's waiting loop adds it then: its wait in the
        // queue counts from there, not from whenever a worker happened to look.
        while let Some((item, due)) = self.delays.pop_due(now) {
            promoted += usize::from(self.add(item, due).0);
        }
        promoted
    }

    /// Stops taking keys: adds are ignored from now on and the delayed keys are dropped; the
    /// ready ones are still handed out.
    pub(super) fn shut_down(&mut self) {
        self.shutting_down = true;
        self.delays = Delays::new();
        if let Some(timing) = &mut self.timing {
            // Dirty keys that are not ready (being processed) keep their add time until done.
            timing.added.retain(|item, _| self.dirty.contains(item));
        }
    }

    /// Nothing is handed out, and nothing is ready to be: what a drain waits for. A key added
    /// while processed is ready again when done, so `processing` alone can be empty for a
    /// moment before the key's second round.
    pub(super) fn is_drained(&self) -> bool {
        self.processing.is_empty() && self.ready.is_empty()
    }

    pub(super) fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    pub(super) fn ready_len(&self) -> usize {
        self.ready.len()
    }

    pub(super) fn processing_len(&self) -> usize {
        self.processing.len()
    }
}

/// Keys waiting for a time, each once, at the earliest time asked for (client-go's
/// `waitForPriorityQueue` with its `knownEntries`).
///
/// A key asked for earlier again gets a second heap entry; the first becomes stale and is skipped
/// when it comes up. So that stale entries cannot pile up (a key re-added earlier and earlier in a
/// hot loop), the heap is rebuilt from the live entries once it holds twice as many as there are
/// keys.
pub(super) struct Delays<T> {
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
    /// The live entry of each key: its time and the sequence number of its heap entry.
    entries: HashMap<T, (Instant, u64)>,
    /// Sequence numbers of heap entries, to find a key's and to keep keys of one instant in the
    /// order they were added.
    by_seq: HashMap<u64, T>,
    next_seq: u64,
}

impl<T: Clone + Eq + Hash> Delays<T> {
    fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            entries: HashMap::new(),
            by_seq: HashMap::new(),
            next_seq: 0,
        }
    }

    /// Makes `item` due at `at`, or keeps its earlier time if it already waits.
    pub(super) fn insert(&mut self, item: T, at: Instant) {
        if let Some(&(known, seq)) = self.entries.get(&item) {
            if known <= at {
                return;
            }
            self.by_seq.remove(&seq);
        }
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.heap.push(Reverse((at, seq)));
        self.by_seq.insert(seq, item.clone());
        self.entries.insert(item, (at, seq));
        if self.heap.len() > 2 * self.entries.len() + 64 {
            self.heap = self.entries.values().map(|&(at, seq)| Reverse((at, seq))).collect();
        }
    }

    /// The first key due at `now` or before, removed, with when it fell due.
    fn pop_due(&mut self, now: Instant) -> Option<(T, Instant)> {
        loop {
            let &Reverse((at, seq)) = self.heap.peek()?;
            if at > now {
                return None;
            }
            self.heap.pop();
            // A stale entry (its key was asked for earlier since, or already promoted): skip.
            if let Some(item) = self.by_seq.remove(&seq) {
                self.entries.remove(&item);
                return Some((item, at));
            }
        }
    }

    /// When the next key is due.
    pub(super) fn next_at(&mut self) -> Option<Instant> {
        while let Some(&Reverse((at, seq))) = self.heap.peek() {
            if self.by_seq.contains_key(&seq) {
                return Some(at);
            }
            self.heap.pop();
        }
        None
    }

    /// The number of keys waiting.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_key_waits_once_at_the_earliest_time_asked() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let mut delays = Delays::new();
        delays.insert("a", at(50));
        delays.insert("a", at(100)); // later: ignored
        delays.insert("a", at(10)); // earlier: wins
        assert_eq!(delays.len(), 1);
        assert_eq!(delays.next_at(), Some(at(10)));
        assert_eq!(delays.pop_due(at(9)), None);
        assert_eq!(delays.pop_due(at(10)), Some(("a", at(10))));
        assert_eq!(delays.pop_due(at(1000)), None, "the stale entry at 50 ms is skipped");
        assert_eq!(delays.next_at(), None);
    }

    #[test]
    fn keys_due_at_one_instant_come_out_in_the_order_they_were_added() {
        let at = Instant::now();
        let mut delays = Delays::new();
        for key in ["c", "a", "b"] {
            delays.insert(key, at);
        }
        let out: Vec<_> = std::iter::from_fn(|| delays.pop_due(at).map(|(k, _)| k)).collect();
        assert_eq!(out, ["c", "a", "b"]);
    }

    #[test]
    fn stale_entries_do_not_pile_up_when_a_key_is_asked_for_earlier_and_earlier() {
        let start = Instant::now();
        let mut delays = Delays::new();
        for ms in (0..10_000).rev() {
            delays.insert("hot", start + Duration::from_millis(ms));
        }
        assert!(delays.heap.len() <= 2 + 64, "heap of {} entries for one key", delays.heap.len());
        assert_eq!(delays.pop_due(start).map(|(k, _)| k), Some("hot"));
    }

    #[test]
    fn a_key_added_while_processed_is_ready_again_when_done() {
        let now = Instant::now();
        let mut state = State::new(false);
        assert_eq!(state.add("a", now), (true, true));
        assert_eq!(state.take(now), Some(("a", None)));
        assert_eq!(state.add("a", now), (true, false), "not ready while a worker holds it");
        assert_eq!(state.take(now), None);
        assert_eq!(state.done(&"a", now), (true, None));
        assert_eq!(state.take(now), Some(("a", None)));
        assert_eq!(state.done(&"a", now), (false, None));
        assert_eq!((state.ready_len(), state.processing_len()), (0, 0));
    }

    #[test]
    fn a_timed_queue_measures_the_wait_from_the_first_add_and_the_work_until_done() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let mut state = State::new(true);
        state.add("a", at(0));
        state.add("a", at(5)); // already dirty: the wait counts from the first add
        assert_eq!(state.take(at(10)), Some(("a", Some(Duration::from_millis(10)))));
        state.add("b", at(10));
        state.take(at(12));
        assert_eq!(
            state.in_progress(at(20)),
            (Duration::from_millis(18), Duration::from_millis(10)),
            "a held 10 ms, b 8 ms"
        );
        assert_eq!(state.done(&"a", at(30)), (false, Some(Duration::from_millis(20))));
        assert_eq!(state.in_progress(at(30)).1, Duration::from_millis(18));
    }
}
