//! An event recorder: `events.k8s.io/v1` Events about objects, as client-go's
//! `tools/events` writes them, repeats folded into series and floods held back.
//!
//! **Who it is for.** Controllers that tell users what they did to an object, as `kubectl describe`
//! shows it.
//!
//! [`EventRecorder::publish`] never waits: it hands the event to a task that writes it. That
//! task keeps what it wrote:
//!
//! - **Repeats become a series.** An event like one written in the last 6 minutes (same
//!   object, related object, type, reason, action and note) is not written again: the first
//!   repeat patches the Event with `series.count = 2`, the next ones only count, and the count
//!   is written every 30 minutes while the series goes on (client-go's isomorphic events,
//!   `finishTime` and `refreshInterval`). A series quiet for 6 minutes ends, its last count
//!   written; the next occurrence starts a new Event. [`flush`](EventRecorder::flush), and the
//!   last recorder's drop, write every count not written yet.
//! - **Floods are held back.** Each object has a bucket of 25 events, refilled by one every 5
//!   minutes (client-go's `EventSourceObjectSpamFilter`); events of an empty bucket are dropped,
//!   counted in [`dropped`](EventRecorder::dropped). At most 1,000 events wait to be written, and
//!   at most 4,096 series are remembered (the oldest are forgotten first): a hot loop costs
//!   neither the server nor the program's memory.
//! - **A flush has a deadline.** [`flush`](EventRecorder::flush) waits at most 10 seconds
//!   ([`flush_within`](EventRecorder::flush_within) chooses): a program that exits while the
//!   server is unreachable would otherwise wait out every queued write's own timeouts, hours
//!   for a full queue. Past the deadline the writer gives up on what waits, and the
//!   [`FlushReport`] says how much that was. The last recorder's drop writes within the same
//!   10 seconds.
//!
//! Events are best effort, as everywhere in Kubernetes: a failed write is logged and dropped.
//!
//! ```no_run
//! use informer_client::Client;
//! use informer_controller::events::{EventRecorder, EventType};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! # async fn run(client: Client, cm: ConfigMap) {
//! let recorder = EventRecorder::new(client, "example.com/configmapset-controller", "pod-7f9c");
//! recorder.publish(&cm, EventType::Normal, "Created", "Create", "created for set web");
//! let report = recorder.flush().await; // before exiting: what was published is written
//! if !report.complete {
//!     eprintln!("{} events were not written", report.given_up);
//! }
//! # }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use tokio::sync::{mpsc, oneshot};

use informer_runtime::Resource;
use informer_runtime::clock::{SharedClock, TokioClock, later};

use crate::write::ApiWriter;

/// How long after its last occurrence a series goes on (client-go's `finishTime`).
const SERIES_FINISH: Duration = Duration::from_secs(6 * 60);
/// How often a running series' count is written (client-go's `refreshInterval`).
const SERIES_REFRESH: Duration = Duration::from_secs(30 * 60);
/// Events an object may have at once, and how often one more is allowed (client-go's
/// `defaultSpamBurst` and `defaultSpamQPS`).
const SPAM_BURST: f64 = 25.0;
const SPAM_REFILL: Duration = Duration::from_secs(5 * 60);
/// Events waiting to be written; more are dropped (client-go's `maxQueuedEvents`).
const QUEUE: usize = 1000;
/// Series and buckets remembered; the oldest go first.
const REMEMBERED: usize = 4096;
/// How long [`EventRecorder::flush`], and the writes after the last recorder's drop, may take.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long past its deadline a flush waits for the writer to drop what waited (it writes
/// nothing more then, so this takes microseconds) and so to know how much that was.
const FLUSH_GRACE: Duration = Duration::from_secs(1);

/// The `type` of an Event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something may need attention.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// Writes Events for one controller instance; see the [module docs](self). Cheap to clone;
/// the writing task ends when the last clone is dropped, after writing what was published.
#[derive(Clone, Debug)]
pub struct EventRecorder {
    sender: mpsc::Sender<Command>,
    dropped: Arc<AtomicU64>,
    shared: Arc<Shared>,
}

/// What the recorders and the writing task share.
struct Shared {
    clock: SharedClock,
    /// The deadlines of the flushes whose command the writer has not reached: past the
    /// earliest, what it meets before that command is given up, not written.
    deadlines: Mutex<Vec<Instant>>,
    /// Events and series counts given up at a flush's deadline.
    given_up: AtomicU64,
    /// Told when a flush adds a deadline, so that a write under way sees it.
    flushing: tokio::sync::Notify,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared").field("deadlines", &*self.deadlines.lock()).finish_non_exhaustive()
    }
}

/// What a [flush](EventRecorder::flush) achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlushReport {
    /// Every event published before the flush, and every series count, was written (or its
    /// write failed and was logged) within the deadline.
    pub complete: bool,
    /// Events and series counts given up because the deadline passed: a write abandoned
    /// under way, and those waiting behind it, dropped unwritten. Also counted in
    /// [`EventRecorder::dropped`].
    pub given_up: u64,
}

/// What the task is asked to do.
enum Command {
    Publish(Box<Published>),
    /// Answer once everything before is written; the flush's deadline, to take off the list.
    Flush(oneshot::Sender<()>, Instant),
}

struct Published {
    regarding: ObjectReference,
    related: Option<ObjectReference>,
    kind: EventType,
    reason: String,
    action: String,
    note: String,
}

/// What makes two events the same (client-go's `getKey` for isomorphic events).
#[derive(Clone, PartialEq, Eq, Hash)]
struct SeriesKey {
    /// The regarding object, as [`identity`] writes it.
    regarding: String,
    related: Option<String>,
    kind: EventType,
    reason: String,
    action: String,
    note: String,
}

/// An Event written, and its series.
struct Series {
    namespace: String,
    name: String,
    count: i32,
    last_seen: Instant,
    /// When the count was last written (or the Event created).
    written: Instant,
    /// Whether the count moved since it was last written.
    unwritten: bool,
}

impl EventRecorder {
    /// A recorder for `controller` (`reportingController`, such as
    /// `example.com/my-controller`) running as `instance` (`reportingInstance`, such as the
    /// pod's name), writing through `client`.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    #[must_use]
    pub fn new(
        client: impl ApiWriter,
        controller: impl Into<String>,
        instance: impl Into<String>,
    ) -> Self {
        Self::with_clock(client, controller, instance, Arc::new(TokioClock))
    }

    /// As [`new`](Self::new), measuring series and buckets on `clock` (tests step a
    /// `testing::FakeClock`).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    #[must_use]
    pub fn with_clock(
        client: impl ApiWriter,
        controller: impl Into<String>,
        instance: impl Into<String>,
        clock: SharedClock,
    ) -> Self {
        let (sender, receiver) = mpsc::channel(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        let shared = Arc::new(Shared {
            clock: Arc::clone(&clock),
            deadlines: Mutex::new(Vec::new()),
            given_up: AtomicU64::new(0),
            flushing: tokio::sync::Notify::new(),
        });
        let writer = Writer {
            client: Arc::new(client),
            controller: controller.into(),
            instance: instance.into(),
            clock,
            series: HashMap::new(),
            buckets: HashMap::new(),
            dropped: Arc::clone(&dropped),
            shared: Arc::clone(&shared),
        };
        tokio::spawn(writer.run(receiver));
        Self { sender, dropped, shared }
    }

    /// Records an event about `regarding`: its `type`, `reason` (why, `CamelCase`, at most 128
    /// characters), `action` (what was done or failed, at most 128) and `note` (for humans, at
    /// most 1 kB). Returns at once.
    pub fn publish<K: Resource>(
        &self,
        regarding: &K,
        kind: EventType,
        reason: &str,
        action: &str,
        note: &str,
    ) {
        self.publish_related::<K, K>(regarding, None, kind, reason, action, note);
    }

    /// As [`publish`](Self::publish), naming a second object the event is about (the `Pod` a
    /// `ReplicaSet` created, say).
    pub fn publish_related<K: Resource, R: Resource>(
        &self,
        regarding: &K,
        related: Option<&R>,
        kind: EventType,
        reason: &str,
        action: &str,
        note: &str,
    ) {
        let event = Published {
            regarding: reference(regarding),
            related: related.map(reference),
            kind,
            reason: truncate(reason, 128),
            action: truncate(action, 128),
            note: truncate(note, 1024),
        };
        if self.sender.try_send(Command::Publish(Box::new(event))).is_err() {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::warn!(dropped, "event queue full ({QUEUE} waiting): event dropped");
        }
    }

    /// Waits until every event published before it is written (or its write failed), series
    /// counts included, for at most 10 seconds; see [`flush_within`](Self::flush_within).
    pub async fn flush(&self) -> FlushReport {
        self.flush_within(FLUSH_TIMEOUT).await
    }

    /// Waits until every event published before it is written (or its write failed), series
    /// counts included, for at most `timeout` (measured on the recorder's clock). A write
    /// under way at the deadline is abandoned, and what still waits is dropped unwritten: the
    /// report counts both. It returns within a second of the deadline: the writer drops the
    /// rest at once, then answers.
    pub async fn flush_within(&self, timeout: Duration) -> FlushReport {
        let clock = &self.shared.clock;
        let deadline = later(clock.now(), timeout);
        self.shared.deadlines.lock().push(deadline);
        self.shared.flushing.notify_waiters();
        let given_up_before = self.shared.given_up.load(Ordering::Relaxed);
        let (done, wait) = oneshot::channel();
        let mut sent = false;
        let flushed = async {
            // A full queue makes the send wait: under the same bound.
            if self.sender.send(Command::Flush(done, deadline)).await.is_ok() {
                sent = true;
                let _ = wait.await;
            }
        };
        let bound = later(deadline, FLUSH_GRACE).saturating_duration_since(clock.now());
        let answered = tokio::select! {
            () = flushed => true,
            () = clock.sleep(bound) => false,
        };
        if !sent {
            // No command carries the deadline to the writer, which would take it off.
            take_off(&self.shared.deadlines, deadline);
        }
        let given_up = self.shared.given_up.load(Ordering::Relaxed).saturating_sub(given_up_before);
        let complete = answered && given_up == 0;
        if !complete {
            tracing::warn!(
                given_up,
                ?timeout,
                "event flush: the deadline passed before every event was written; the rest were dropped"
            );
        }
        FlushReport { complete, given_up }
    }

    /// Events dropped so far: by the per-object bucket, or because too many waited.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Takes one `deadline` off the list of flushes waiting.
fn take_off(deadlines: &Mutex<Vec<Instant>>, deadline: Instant) {
    let mut deadlines = deadlines.lock();
    if let Some(at) = deadlines.iter().position(|d| *d == deadline) {
        deadlines.swap_remove(at);
    }
}

/// A reference to `obj` for an Event.
fn reference<K: Resource>(obj: &K) -> ObjectReference {
    let meta = obj.meta();
    ObjectReference {
        api_version: Some(K::API_VERSION.to_owned()),
        kind: Some(K::KIND.to_owned()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}

/// What tells objects apart: their kind, namespace, name and UID.
fn identity(reference: &ObjectReference) -> String {
    let part = |s: &Option<String>| s.as_deref().unwrap_or_default().to_owned();
    format!(
        "{}/{}/{}/{}/{}",
        part(&reference.api_version),
        part(&reference.kind),
        part(&reference.namespace),
        part(&reference.name),
        part(&reference.uid)
    )
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn truncate(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// The task that writes.
struct Writer {
    client: Arc<dyn ApiWriter>,
    controller: String,
    instance: String,
    clock: SharedClock,
    series: HashMap<SeriesKey, Series>,
    /// Per object (its UID, or kind/namespace/name): tokens and when they were counted.
    buckets: HashMap<String, (f64, Instant)>,
    dropped: Arc<AtomicU64>,
    shared: Arc<Shared>,
}

/// Why a write did not happen.
struct Expired;

impl Writer {
    async fn run(mut self, mut receiver: mpsc::Receiver<Command>) {
        let clock = Arc::clone(&self.clock);
        // Every 6 minutes (client-go's `finishTime`): end the quiet series, writing their last
        // count, and write the count of running ones every 30 minutes (`refreshInterval`).
        let mut next_tick = later(clock.now(), SERIES_FINISH);
        loop {
            let until = next_tick.saturating_duration_since(clock.now());
            let command = tokio::select! {
                command = receiver.recv() => command,
                () = clock.sleep(until) => {
                    self.tick(false).await;
                    next_tick = later(clock.now(), SERIES_FINISH);
                    continue;
                }
            };
            match command {
                Some(Command::Publish(event)) => self.record(*event).await,
                Some(Command::Flush(done, deadline)) => {
                    self.tick(true).await;
                    let _ = done.send(());
                    // What comes after this flush's command is no longer under its deadline.
                    take_off(&self.shared.deadlines, deadline);
                }
                None => {
                    // The last recorder is gone: what was counted is written, within the
                    // deadline a flush would have.
                    self.shared.deadlines.lock().push(later(clock.now(), FLUSH_TIMEOUT));
                    self.tick(true).await;
                    break;
                }
            }
        }
    }

    /// Runs `write`, unless the deadline of a flush waiting for it has passed; abandons it at
    /// that deadline. Either way, what was not written is counted as given up.
    async fn before_deadline<T>(&self, write: impl Future<Output = T>) -> Result<T, Expired> {
        let mut write = std::pin::pin!(write);
        loop {
            // Registered before the deadlines are read: a flush that adds one meanwhile wakes it.
            let flushing = self.shared.flushing.notified();
            let deadline = self.shared.deadlines.lock().iter().min().copied();
            let expired = async {
                match deadline {
                    Some(deadline) => {
                        self.clock
                            .sleep(deadline.saturating_duration_since(self.clock.now()))
                            .await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = expired => break,
                out = &mut write => return Ok(out),
                () = flushing => {}
            }
        }
        self.shared.given_up.fetch_add(1, Ordering::Relaxed);
        self.dropped.fetch_add(1, Ordering::Relaxed);
        Err(Expired)
    }

    /// Takes a token from the object's bucket; false when it is empty.
    fn allow(&mut self, regarding: &ObjectReference, now: Instant) -> bool {
        let id = identity(regarding);
        if self.buckets.len() >= REMEMBERED && !self.buckets.contains_key(&id) {
            // Forget the object whose bucket was used longest ago.
            if let Some(oldest) =
                self.buckets.iter().min_by_key(|(_, (_, at))| *at).map(|(k, _)| k.clone())
            {
                self.buckets.remove(&oldest);
            }
        }
        let (tokens, at) = self.buckets.entry(id).or_insert((SPAM_BURST, now));
        let refilled = now.saturating_duration_since(*at).as_secs_f64() / SPAM_REFILL.as_secs_f64();
        *tokens = (*tokens + refilled).min(SPAM_BURST);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }

    async fn record(&mut self, event: Published) {
        let now = self.clock.now();
        let key = SeriesKey {
            regarding: identity(&event.regarding),
            related: event.related.as_ref().map(identity),
            kind: event.kind,
            reason: event.reason.clone(),
            action: event.action.clone(),
            note: event.note.clone(),
        };
        if let Some(series) = self.series.get_mut(&key) {
            if now.saturating_duration_since(series.last_seen) < SERIES_FINISH {
                series.count = series.count.saturating_add(1);
                series.last_seen = now;
                series.unwritten = true;
                if series.count == 2 {
                    // The first repeat is written at once; the next ones at the refresh.
                    let (namespace, name) = (series.namespace.clone(), series.name.clone());
                    self.write_series(&key, &namespace, &name, 2).await;
                }
                return;
            }
            // The series ended: its last count is written before a new Event starts.
            let last = series
                .unwritten
                .then(|| (series.namespace.clone(), series.name.clone(), series.count));
            if let Some((namespace, name, count)) = last {
                self.write_series(&key, &namespace, &name, count).await;
            }
            self.series.remove(&key);
        }
        if !self.allow(&event.regarding, now) {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::debug!(
                object = ?event.regarding.name,
                reason = %event.reason,
                dropped,
                "too many events about one object: dropped"
            );
            return;
        }
        let namespace = event
            .regarding
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let name = format!(
            "{}.{:016x}",
            event.regarding.name.as_deref().unwrap_or("unnamed"),
            fastrand::u64(..)
        );
        let written = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(Timestamp::now())),
            type_: Some(event.kind.as_str().to_owned()),
            reason: Some(event.reason),
            action: Some(event.action),
            note: Some(event.note),
            regarding: Some(event.regarding),
            related: event.related,
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Event::default()
        };
        match self.before_deadline(self.client.create_event(&namespace, &written)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::warn!(namespace, name, error = %e, "writing an event failed; dropped");
                return;
            }
            Err(Expired) => return,
        }
        if self.series.len() >= REMEMBERED
            && let Some(oldest) =
                self.series.iter().min_by_key(|(_, s)| s.last_seen).map(|(k, _)| k.clone())
        {
            self.series.remove(&oldest);
        }
        self.series.insert(
            key,
            Series { namespace, name, count: 1, last_seen: now, written: now, unwritten: false },
        );
    }

    /// Writes the counts that are due (every one that moved, with `all`), and forgets the
    /// series that ended.
    async fn tick(&mut self, all: bool) {
        let now = self.clock.now();
        let ended = |s: &Series| now.saturating_duration_since(s.last_seen) >= SERIES_FINISH;
        let due: Vec<_> = self
            .series
            .iter()
            .filter(|(_, s)| s.unwritten && s.count > 1)
            .filter(|(_, s)| {
                all || ended(s) || now.saturating_duration_since(s.written) >= SERIES_REFRESH
            })
            .map(|(k, s)| (k.clone(), s.namespace.clone(), s.name.clone(), s.count))
            .collect();
        for (key, namespace, name, count) in due {
            self.write_series(&key, &namespace, &name, count).await;
        }
        self.series.retain(|_, s| !ended(s));
    }

    async fn write_series(&mut self, key: &SeriesKey, namespace: &str, name: &str, count: i32) {
        let last = self.series.get(key).map(|s| s.last_seen);
        let series = EventSeries { count, last_observed_time: MicroTime(Timestamp::now()) };
        let body = serde_json::json!({ "series": series });
        let write = self.client.merge_patch_event(namespace, name, &body);
        let Ok(result) = self.before_deadline(write).await else { return };
        match result {
            Ok(_) => {
                if let Some(series) = self.series.get_mut(key) {
                    series.written = self.clock.now();
                    // Only if nothing came in meanwhile.
                    if Some(series.last_seen) == last && series.count == count {
                        series.unwritten = false;
                    }
                }
            }
            Err(e) => tracing::warn!(namespace, name, error = %e, "writing an event series failed"),
        }
    }
}
