//! The work queue between handlers and workers: client-go's `util/workqueue`, async.
//!
//! **Who it is for.** Controllers that write their own loop;
//! [`Controller`](crate::controller::Controller) runs one for you.
//!
//! Handlers add keys and return at once; workers [`get`](WorkQueue::get) keys, reconcile the
//! object each names (reading it from a lister), and are [done](Taken::done) with it. The queue
//! gives client-go's guarantees:
//!
//! - **Once per change burst.** A key added several times before a worker takes it is handed
//!   out once.
//! - **One worker per key.** A key a worker holds is not handed to another; added meanwhile, it
//!   is handed out again once the first worker is done, so the change is not lost.
//! - **Later, and with backoff.** [`add_after`](WorkQueue::add_after) hands a key out after a
//!   delay (the earliest wins when a key is asked for twice);
//!   [`add_rate_limited`](WorkQueue::add_rate_limited) after the delay its [`RateLimiter`] says
//!   (client-go's default: per-key exponential backoff from 5 ms to 1,000 s, and 10 retries a
//!   second overall); [`forget`](WorkQueue::forget) resets a key's backoff once it succeeded.
//! - **Shutdown.** [`shut_down`](WorkQueue::shut_down) ignores new keys and drops delayed ones;
//!   workers still get the ready keys, then `None`.
//!   [`shut_down_with_drain`](WorkQueue::shut_down_with_drain) also waits until every key
//!   handed out is done.
//!
//! A [`Taken`] key is done when it is dropped, so a worker that returns early, fails or panics
//! never leaves its key stuck as "processing".
//!
//! ```
//! use std::time::Duration;
//! use informer_controller::workqueue::WorkQueue;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let queue = WorkQueue::<String>::new();
//! queue.add("default/web".to_owned());
//! queue.add("default/web".to_owned()); // not yet taken: still one
//! assert_eq!(queue.len(), 1);
//!
//! let worker = queue.clone();
//! let handle = tokio::spawn(async move {
//!     while let Some(key) = worker.get().await {
//!         let failed = false; // reconcile `key` here
//!         if failed {
//!             worker.add_rate_limited(key.item().clone());
//!         } else {
//!             worker.forget(key.item());
//!         }
//!         // `key` dropped: done.
//!     }
//! });
//! queue.shut_down_with_drain().await;
//! handle.await.unwrap();
//! # }
//! ```
//!
//! Memory: the queue holds each key once however often it is added, so its size is bounded by
//! the number of distinct keys (the objects a controller watches); [`len`](WorkQueue::len) and
//! [`delayed`](WorkQueue::delayed) tell how many wait.

mod enqueue;
mod queue;
mod rate_limiter;

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

use informer_runtime::clock::{SharedClock, TokioClock, later};
use informer_runtime::instrument::QueueObserver;
#[cfg(feature = "metrics")]
use informer_runtime::instrument::QueueProbe;

pub use enqueue::{EnqueueMapped, EnqueueObject, EnqueueOwner};
pub use rate_limiter::{
    ExponentialBackoff, FastSlow, InvalidRateLimit, MaxOf, RateLimiter, TokenBucket, WithMaxWait,
    default_controller_rate_limiter,
};

use queue::State;

/// A queue of keys for workers, with client-go's work-queue guarantees (see the
/// [module docs](self)). Cheap to clone: clones share one queue.
#[doc(alias = "RateLimitingInterface")]
#[doc(alias = "TypedRateLimitingInterface")]
pub struct WorkQueue<T> {
    shared: Arc<Shared<T>>,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    /// Metrics, when asked for ([`WorkQueueBuilder::metrics`]).
    observer: Option<Arc<dyn QueueObserver>>,
    /// A key became ready, a delay changed, or the queue shut down: waiting workers look again.
    changed: Notify,
    /// No key is handed out any more: drains look again.
    idle: Notify,
    limiter: Box<dyn RateLimiter<T>>,
    clock: SharedClock,
    name: String,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        Self { shared: Arc::clone(&self.shared) }
    }
}

impl<T> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkQueue").field("name", &self.shared.name).finish_non_exhaustive()
    }
}

/// Options of a [`WorkQueue`], from [`WorkQueue::builder`].
#[must_use]
pub struct WorkQueueBuilder<T> {
    limiter: Option<Box<dyn RateLimiter<T>>>,
    clock: SharedClock,
    name: String,
    #[cfg(feature = "metrics")]
    metrics: Option<informer_runtime::metrics::Metrics>,
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> WorkQueueBuilder<T> {
    /// How [`add_rate_limited`](WorkQueue::add_rate_limited) delays keys; by default
    /// [`default_controller_rate_limiter`].
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<T>) -> Self {
        self.limiter = Some(Box::new(limiter));
        self
    }

    /// The clock delays are measured on; tokio's by default. Tests step a
    /// `testing::FakeClock`.
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// A name for logs (client-go's `QueueConfig.Name`), usually the controller's.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Records client-go's work-queue metrics (`workqueue_depth`, `workqueue_adds_total`,
    /// ...) in `metrics`, labelled with the queue's [name](Self::name).
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics(mut self, metrics: &informer_runtime::metrics::Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// The queue.
    #[must_use]
    pub fn build(self) -> WorkQueue<T> {
        let limiter = self.limiter.unwrap_or_else(|| Box::new(default_controller_rate_limiter()));
        #[cfg(feature = "metrics")]
        let observer = self.metrics.as_ref().map(|m| m.queue_observer(&self.name));
        #[cfg(not(feature = "metrics"))]
        let observer: Option<Arc<dyn QueueObserver>> = None;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(observer.is_some())),
            observer,
            changed: Notify::new(),
            idle: Notify::new(),
            limiter,
            clock: self.clock,
            name: self.name,
        });
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.metrics {
            let probe: std::sync::Weak<dyn QueueProbe> = Arc::downgrade(&shared) as _;
            metrics.watch_queue(&shared.name, probe);
        }
        WorkQueue { shared }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> Default for WorkQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> WorkQueue<T> {
    /// A queue with client-go's default controller rate limiter and tokio's clock.
    #[must_use]
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A queue with other options.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use informer_controller::workqueue::{WorkQueue, ExponentialBackoff};
    /// let queue = WorkQueue::<String>::builder()
    ///     .name("configmapsets")
    ///     .rate_limiter(ExponentialBackoff::new(Duration::from_millis(100), Duration::from_secs(60)))
    ///     .build();
    /// ```
    pub fn builder() -> WorkQueueBuilder<T> {
        WorkQueueBuilder {
            limiter: None,
            clock: Arc::new(TokioClock),
            name: String::new(),
            #[cfg(feature = "metrics")]
            metrics: None,
        }
    }

    /// Marks `item` to be processed: handed to a worker once, however often it is added before
    /// a worker takes it. Ignored once the queue [shuts down](Self::shut_down).
    pub fn add(&self, item: T) {
        let (dirty, ready) = self.shared.state.lock().add(item, self.shared.clock.now());
        if let (true, Some(observer)) = (dirty, &self.shared.observer) {
            observer.added();
        }
        if ready {
            self.shared.changed.notify_one();
        }
    }

    /// Adds `item` once `delay` has passed (at once for a zero delay). A key already waiting
    /// keeps the earlier of its two times. Ignored once the queue shuts down.
    pub fn add_after(&self, item: T, delay: Duration) {
        // client-go counts every delayed add as a retry (`workqueue_retries_total`).
        // (The shutdown check takes the lock: only with metrics.)
        if let Some(observer) = &self.shared.observer
            && !self.is_shutting_down()
        {
            observer.retried();
        }
        if delay.is_zero() {
            return self.add(item);
        }
        let at = later(self.shared.clock.now(), delay);
        let mut state = self.shared.state.lock();
        if state.is_shutting_down() {
            return;
        }
        let earliest = state.delays.next_at().is_none_or(|next| at < next);
        state.delays.insert(item, at);
        drop(state);
        if earliest {
            // Workers sleeping until a later key must wake up for this one.
            self.shared.changed.notify_waiters();
        }
    }

    /// Adds `item` after the delay the queue's [`RateLimiter`] gives it (counting one more
    /// failure of it): how a worker retries a key that failed.
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.shared.limiter.when(&item, self.shared.clock.now());
        self.add_after(item, delay);
    }

    /// Forgets `item`'s failures: its next [`add_rate_limited`](Self::add_rate_limited) waits
    /// as after a first failure. Call it when the key succeeded.
    pub fn forget(&self, item: &T) {
        self.shared.limiter.forget(item);
    }

    /// How often `item` was [rate limited](Self::add_rate_limited) since it was last
    /// forgotten.
    #[must_use]
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.shared.limiter.num_requeues(item)
    }

    /// The next key to process, waiting until there is one; `None` once the queue has shut
    /// down and no key is ready. Keep the [`Taken`] while processing: dropping it marks the key
    /// done.
    ///
    /// Cancel-safe: a `get` dropped before it completes takes no key.
    pub async fn get(&self) -> Option<Taken<T>> {
        loop {
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = self.shared.clock.now();
            let next = {
                let mut state = self.shared.state.lock();
                self.promote_due(&mut state, now);
                if let Some((item, waited)) = state.take(now) {
                    let more = state.ready_len() > 0;
                    drop(state);
                    if more {
                        // Several keys became due at once: wake another worker for the rest.
                        self.shared.changed.notify_one();
                    }
                    self.observe_wait(waited);
                    return Some(Taken { queue: self.clone(), item });
                }
                if state.is_shutting_down() {
                    return None;
                }
                state.delays.next_at()
            };
            match next {
                Some(at) => {
                    let timer = self.shared.clock.sleep(at.saturating_duration_since(now));
                    tokio::select! {
                        () = &mut changed => {}
                        () = timer => {}
                    }
                }
                None => changed.await,
            }
        }
    }

    /// The next ready key, if there is one now.
    #[must_use]
    pub fn try_get(&self) -> Option<Taken<T>> {
        let now = self.shared.clock.now();
        let mut state = self.shared.state.lock();
        self.promote_due(&mut state, now);
        let (item, waited) = state.take(now)?;
        drop(state);
        self.observe_wait(waited);
        Some(Taken { queue: self.clone(), item })
    }

    /// Moves the keys whose delay is over to the ready ones, counting them as adds.
    fn promote_due(&self, state: &mut State<T>, now: std::time::Instant) {
        self.shared.promote_due(state, now);
    }

    fn observe_wait(&self, waited: Option<Duration>) {
        if let (Some(observer), Some(waited)) = (&self.shared.observer, waited) {
            observer.queued_for(waited);
        }
    }

    fn done(&self, item: &T) {
        let mut state = self.shared.state.lock();
        let (ready, worked) = state.done(item, self.shared.clock.now());
        let idle = state.is_drained();
        drop(state);
        if let (Some(observer), Some(worked)) = (&self.shared.observer, worked) {
            observer.worked_for(worked);
        }
        if ready {
            self.shared.changed.notify_one();
        }
        if idle {
            self.shared.idle.notify_waiters();
        }
    }

    /// The number of keys ready for a worker (client-go's `Len`).
    #[must_use]
    pub fn len(&self) -> usize {
        let now = self.shared.clock.now();
        let mut state = self.shared.state.lock();
        self.promote_due(&mut state, now);
        state.ready_len()
    }

    /// Whether no key is ready for a worker.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of keys waiting for a delay.
    #[must_use]
    pub fn delayed(&self) -> usize {
        self.shared.state.lock().delays.len()
    }

    /// The number of keys handed out and not yet done.
    #[must_use]
    pub fn processing(&self) -> usize {
        self.shared.state.lock().processing_len()
    }

    /// Shuts the queue down: keys added from now on are ignored, delayed ones dropped; workers
    /// get the keys already ready, then `None`. Returns at once.
    pub fn shut_down(&self) {
        self.shared.state.lock().shut_down();
        tracing::debug!(queue = %self.shared.name, "work queue shutting down");
        self.shared.changed.notify_waiters();
    }

    /// Shuts the queue down as [`shut_down`](Self::shut_down) does, then waits until the
    /// queue is drained (client-go's `ShutDownWithDrain`): every key handed out is done, and
    /// every key still ready (ready at shutdown, or added while it was processed and so ready
    /// again once done) has been handed out and is done too. The workers must go on asking
    /// until they get `None`, and finish each key; bound the wait with a timeout, since a
    /// worker that never finishes, or no worker at all, keeps it waiting.
    pub async fn shut_down_with_drain(&self) {
        self.shut_down();
        loop {
            let idle = self.shared.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.shared.state.lock().is_drained() {
                return;
            }
            idle.await;
        }
    }

    /// Whether [`shut_down`](Self::shut_down) was called.
    #[must_use]
    pub fn is_shutting_down(&self) -> bool {
        self.shared.state.lock().is_shutting_down()
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> Shared<T> {
    /// Moves the keys whose delay is over to the ready ones, counting them as adds.
    fn promote_due(&self, state: &mut State<T>, now: std::time::Instant) {
        let promoted = state.promote_due(now);
        if let Some(observer) = &self.observer {
            for _ in 0..promoted {
                observer.added();
            }
        }
    }
}

#[cfg(feature = "metrics")]
impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueProbe for Shared<T> {
    fn depth(&self) -> usize {
        // Keys that fell due while every worker was busy are ready: count them.
        let now = self.clock.now();
        let mut state = self.state.lock();
        self.promote_due(&mut state, now);
        state.ready_len()
    }

    fn in_progress(&self) -> (Duration, Duration) {
        self.state.lock().in_progress(self.clock.now())
    }
}

/// A key a worker took from a [`WorkQueue`]; dropping it marks the key done (client-go's
/// `Done`), and so does [`done`](Self::done).
#[must_use = "dropping the key marks it done at once"]
pub struct Taken<T: Clone + Eq + Hash + Send + Sync + 'static> {
    queue: WorkQueue<T>,
    item: T,
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> Taken<T> {
    /// The key.
    #[must_use]
    pub fn item(&self) -> &T {
        &self.item
    }

    /// Marks the key done: added while it was processed, it is ready again.
    pub fn done(self) {
        drop(self);
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> std::ops::Deref for Taken<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.item
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> Drop for Taken<T> {
    fn drop(&mut self) {
        self.queue.done(&self.item);
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + fmt::Debug + 'static> fmt::Debug for Taken<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Taken").field(&self.item).finish()
    }
}

#[cfg(test)]
mod tests;
