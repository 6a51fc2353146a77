//! The fan-out: one listener per registered handler, each with its own unbounded buffer and
//! thread.
//!
//! `distribute` runs on the informer's processing path and never blocks: it appends to every
//! listener's buffer. Each handler listener drains its buffer on a thread of its own (client-go
//! gives each listener a goroutine), so a slow or blocking handler delays nobody but itself: not
//! the watch, not the other handlers, not the tokio runtime. Per listener, notifications keep
//! their order.
//!
//! Buffers are unbounded, as client-go's are (the informer must never drop or block on a
//! change), so each one watches its own backlog and warns once each time it passes a mark.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::handler::{Notification, ResourceEventHandler};
use super::shutdown::UnfinishedHandler;
use crate::clock::{SharedClock, later};
use crate::resource::Object;

/// The backlog at which a handler's buffer warns by default: far above what a healthy handler
/// keeps waiting between two events, and still small in memory (a notification holds two
/// `Arc`s), so that the warning comes long before the buffer matters.
pub(crate) const DEFAULT_BACKLOG_WARNING: usize = 10_000;

/// client-go's `minimumResyncPeriod`.
pub(crate) const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// The resync period a listener really gets, given the informer's check period.
pub(crate) fn determine_resync_period(desired: Duration, check: Duration) -> Duration {
    if desired.is_zero() || check.is_zero() {
        // A check period of zero means the informer never resyncs: nobody can.
        return Duration::ZERO;
    }
    desired.max(check)
}

struct Resync {
    requested: Duration,
    period: Duration,
    next: Instant,
}

/// One registered handler (or stream) and its buffer.
pub(crate) struct Listener<K> {
    id: u64,
    sender: Mutex<Option<mpsc::UnboundedSender<Notification<K>>>>,
    /// Notifications buffered and not yet handled.
    pending: AtomicUsize,
    /// Initial-list adds buffered and not yet handled: the handle's sync tracker.
    initial_pending: AtomicUsize,
    /// Whether the current resync round delivers to this listener.
    syncing: AtomicBool,
    resync: Mutex<Resync>,
    stop: CancellationToken,
    panics: AtomicU64,
    /// Woken when `initial_pending` reaches zero.
    pub(crate) progressed: Notify,
    /// The resource, for messages.
    resource: Arc<str>,
    /// A live backlog (initial-list adds aside) this large logs a warning; zero never does.
    backlog_mark: usize,
    /// Whether the backlog passed the mark and has not drained to half of it since.
    over_mark: AtomicBool,
    /// The notification the handler is in, and since when: what shutdown reports if the
    /// handler does not return.
    in_flight: Mutex<Option<(Notification<K>, Instant)>>,
    /// Whether the handler's thread has ended.
    finished: AtomicBool,
}

impl<K> Listener<K> {
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    pub(crate) fn initial_pending(&self) -> usize {
        self.initial_pending.load(Ordering::Acquire)
    }

    pub(crate) fn panics(&self) -> u64 {
        self.panics.load(Ordering::Relaxed)
    }

    pub(crate) fn resync_period(&self) -> Duration {
        self.resync.lock().period
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stop.is_cancelled()
    }

    fn add(&self, notification: Notification<K>) {
        let guard = self.sender.lock();
        let Some(sender) = guard.as_ref() else { return };
        if matches!(notification, Notification::Add { is_in_initial_list: true, .. }) {
            self.initial_pending.fetch_add(1, Ordering::AcqRel);
        }
        let pending = self.pending.fetch_add(1, Ordering::AcqRel) + 1;
        // A closed receiver means the listener is going away; the notification is moot.
        let _ = sender.send(notification);
        drop(guard);
        self.check_backlog(pending);
    }

    /// Warns once when the live backlog reaches the mark. The initial list (and a late
    /// handler's replay) is left out: it is one burst the size of the cache, not a handler
    /// falling behind the event rate.
    fn check_backlog(&self, pending: usize) {
        if self.backlog_mark == 0 {
            return;
        }
        let live = pending.saturating_sub(self.initial_pending());
        if live >= self.backlog_mark && !self.over_mark.swap(true, Ordering::AcqRel) {
            tracing::warn!(
                resource = %self.resource,
                handler = self.id,
                backlog = live,
                mark = self.backlog_mark,
                "an event handler is falling behind: {live} notifications are waiting for it; \
                 its buffer grows until it catches up. Make the handler quicker (hand work to \
                 a work queue), or raise the mark with `handler_backlog_warning`",
            );
        }
    }

    /// Marks one notification as handled.
    pub(crate) fn done(&self, was_initial: bool) {
        let pending = self.pending.fetch_sub(1, Ordering::AcqRel).saturating_sub(1);
        if was_initial && self.initial_pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.progressed.notify_waiters();
        }
        // Re-armed at half the mark, so that a backlog hovering at the mark warns once, not
        // at every step across it.
        if self.over_mark.load(Ordering::Acquire)
            && pending.saturating_sub(self.initial_pending()) <= self.backlog_mark / 2
            && self.over_mark.swap(false, Ordering::AcqRel)
        {
            tracing::info!(resource = %self.resource, handler = self.id, backlog = pending, "the event handler caught up");
        }
    }

    /// Stops delivery: buffered notifications are dropped (a handler) or end the stream.
    pub(crate) fn close(&self) {
        self.sender.lock().take();
        self.stop.cancel();
        self.progressed.notify_waiters();
    }

    fn should_resync(&self, now: Instant) -> bool {
        let mut resync = self.resync.lock();
        let due = !resync.period.is_zero() && now >= resync.next;
        if due {
            resync.next = later(now, resync.period);
        }
        due
    }
}

/// A handler registered before start: its listener, buffer and handler, waiting for a task.
type Waiting<K> = (Arc<Listener<K>>, Receiver<K>, Arc<dyn ResourceEventHandler<K>>);

/// The receiving end of a listener's buffer.
pub(crate) type Receiver<K> = mpsc::UnboundedReceiver<Notification<K>>;

enum RunState<K> {
    /// Handler listeners wait here for `run` to spawn their tasks.
    NotStarted(Vec<Waiting<K>>),
    Running(tokio::runtime::Handle),
    Stopped,
}

/// Every listener of one informer.
pub(crate) struct Processor<K> {
    listeners: RwLock<Vec<Arc<Listener<K>>>>,
    /// Handler listeners whose thread may still run, removed or not: what shutdown waits for.
    threads: Mutex<Vec<Arc<Listener<K>>>>,
    state: Mutex<RunState<K>>,
    tasks: TaskTracker,
    clock: SharedClock,
    resource: Arc<str>,
    backlog_mark: AtomicUsize,
}

static NEXT_LISTENER_ID: AtomicU64 = AtomicU64::new(1);

impl<K: Object> Processor<K> {
    /// A processor of the informer of `resource` (as client-go writes it, `v1, Resource=pods`).
    pub(crate) fn new(clock: SharedClock, resource: Arc<str>) -> Self {
        Self {
            listeners: RwLock::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
            state: Mutex::new(RunState::NotStarted(Vec::new())),
            tasks: TaskTracker::new(),
            clock,
            resource,
            backlog_mark: AtomicUsize::new(DEFAULT_BACKLOG_WARNING),
        }
    }

    /// The resource, as client-go writes it.
    pub(crate) fn resource(&self) -> Arc<str> {
        Arc::clone(&self.resource)
    }

    /// The backlog at which listeners registered from now on warn (zero: never).
    pub(crate) fn set_backlog_mark(&self, mark: usize) {
        self.backlog_mark.store(mark, Ordering::Relaxed);
    }

    pub(crate) fn backlog_mark(&self) -> usize {
        self.backlog_mark.load(Ordering::Relaxed)
    }

    fn new_listener(
        &self,
        requested: Duration,
        period: Duration,
    ) -> (Arc<Listener<K>>, mpsc::UnboundedReceiver<Notification<K>>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let listener = Arc::new(Listener {
            // Unique across informers, so that removing a foreign registration is a no-op.
            id: NEXT_LISTENER_ID.fetch_add(1, Ordering::Relaxed),
            sender: Mutex::new(Some(sender)),
            pending: AtomicUsize::new(0),
            initial_pending: AtomicUsize::new(0),
            syncing: AtomicBool::new(false),
            resync: Mutex::new(Resync { requested, period, next: later(self.clock.now(), period) }),
            stop: CancellationToken::new(),
            panics: AtomicU64::new(0),
            progressed: Notify::new(),
            resource: Arc::clone(&self.resource),
            backlog_mark: self.backlog_mark(),
            over_mark: AtomicBool::new(false),
            in_flight: Mutex::new(None),
            finished: AtomicBool::new(false),
        });
        (listener, receiver)
    }

    /// Starts the thread that feeds `handler` from `receiver`.
    fn spawn(
        &self,
        listener: &Arc<Listener<K>>,
        receiver: Receiver<K>,
        handler: Arc<dyn ResourceEventHandler<K>>,
        runtime: &tokio::runtime::Handle,
    ) {
        {
            let mut threads = self.threads.lock();
            threads.retain(|l| !l.finished.load(Ordering::Acquire));
            threads.push(Arc::clone(listener));
        }
        let token = self.tasks.token();
        let (clock, runtime) = (Arc::clone(&self.clock), runtime.clone());
        let feed = Arc::clone(listener);
        let spawned = std::thread::Builder::new()
            .name(format!("informer-handler-{}", listener.id))
            .spawn(move || {
                let _token = token;
                run_listener(&feed, receiver, &*handler, &clock, &runtime);
                feed.finished.store(true, Ordering::Release);
            });
        if let Err(error) = spawned {
            tracing::error!(resource = %self.resource, handler = listener.id, %error, "could not start the thread of an event handler: it receives nothing");
            listener.finished.store(true, Ordering::Release);
            listener.close();
        }
    }

    /// Registers a handler; its task starts now if the processor runs, else at `run`.
    ///
    /// `replay` is called with the new listener before it receives any live notification; the
    /// informer uses it to queue the synthetic adds of a late handler.
    pub(crate) fn add_handler(
        &self,
        handler: Arc<dyn ResourceEventHandler<K>>,
        requested: Duration,
        period: Duration,
        replay: impl FnOnce(&mut dyn FnMut(Notification<K>)),
    ) -> Option<Arc<Listener<K>>> {
        let (listener, receiver) = self.new_listener(requested, period);
        replay(&mut |n| listener.add(n));
        let mut state = self.state.lock();
        match &mut *state {
            RunState::NotStarted(waiting) => {
                waiting.push((Arc::clone(&listener), receiver, handler));
            }
            RunState::Running(runtime) => {
                self.spawn(&listener, receiver, handler, runtime);
            }
            RunState::Stopped => return None,
        }
        self.listeners.write().push(Arc::clone(&listener));
        Some(listener)
    }

    /// Registers a listener whose buffer the caller drains (a notification stream).
    pub(crate) fn add_stream(
        &self,
        replay: impl FnOnce(&mut dyn FnMut(Notification<K>)),
    ) -> Option<(Arc<Listener<K>>, Receiver<K>)> {
        let (listener, receiver) = self.new_listener(Duration::ZERO, Duration::ZERO);
        replay(&mut |n| listener.add(n));
        if matches!(*self.state.lock(), RunState::Stopped) {
            return None;
        }
        self.listeners.write().push(Arc::clone(&listener));
        Some((listener, receiver))
    }

    /// Each handler's id and pending notifications.
    #[cfg(feature = "metrics")]
    pub(crate) fn pending_by_handler(&self) -> Vec<(u64, usize)> {
        self.listeners.read().iter().map(|l| (l.id(), l.pending())).collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.listeners.read().len()
    }

    /// Sends `notification` to every listener; a sync (same resourceVersion) only to those in a
    /// resync round.
    pub(crate) fn distribute(&self, notification: &Notification<K>, sync: bool) {
        for listener in self.listeners.read().iter() {
            if !sync || listener.syncing.load(Ordering::Acquire) {
                listener.add(notification.clone());
            }
        }
    }

    /// Marks the listeners whose resync is due; true if any is.
    pub(crate) fn should_resync(&self) -> bool {
        let now = self.clock.now();
        let mut any = false;
        for listener in self.listeners.read().iter() {
            let due = listener.should_resync(now);
            listener.syncing.store(due, Ordering::Release);
            any |= due;
        }
        any
    }

    /// The informer's check period changed before start: recompute every listener's period.
    pub(crate) fn resync_check_period_changed(&self, check: Duration) {
        for listener in self.listeners.read().iter() {
            let mut resync = listener.resync.lock();
            resync.period = determine_resync_period(resync.requested, check);
        }
    }

    /// Starts the threads of the handlers registered so far; handlers call into `runtime`.
    pub(crate) fn run(&self, runtime: &tokio::runtime::Handle) {
        let mut state = self.state.lock();
        if let RunState::NotStarted(waiting) =
            std::mem::replace(&mut *state, RunState::Running(runtime.clone()))
        {
            for (listener, receiver, handler) in waiting {
                self.spawn(&listener, receiver, handler, runtime);
            }
        }
    }

    /// Stops every listener and waits up to `timeout` for the handlers in a call to return;
    /// returns those that did not (their threads are left to finish on their own).
    pub(crate) async fn stop(&self, timeout: Duration) -> Vec<UnfinishedHandler> {
        *self.state.lock() = RunState::Stopped;
        let listeners = std::mem::take(&mut *self.listeners.write());
        for listener in listeners {
            listener.close();
        }
        self.tasks.close();
        tokio::select! {
            () = self.tasks.wait() => return Vec::new(),
            () = self.clock.sleep(timeout) => {}
        }
        let now = self.clock.now();
        let unfinished: Vec<UnfinishedHandler> = self
            .threads
            .lock()
            .iter()
            .filter(|l| !l.finished.load(Ordering::Acquire))
            // A thread between two calls ends as soon as it is scheduled: only one in a
            // call is unfinished work.
            .filter_map(|l| {
                let in_flight = l.in_flight.lock();
                let (notification, since) = in_flight.as_ref()?;
                Some(UnfinishedHandler::new(
                    l.resource.to_string(),
                    l.id,
                    format!("{notification:?}"),
                    now.saturating_duration_since(*since),
                ))
            })
            .collect();
        for handler in &unfinished {
            tracing::warn!(resource = %handler.resource(), handler = handler.id(), handling = %handler.handling(), busy_for = ?handler.busy_for(), "an event handler did not return within the shutdown timeout; its thread is left running");
        }
        unfinished
    }
}

impl<K> Processor<K> {
    /// Unregisters a listener; idempotent, and a no-op for a foreign one.
    pub(crate) fn remove(&self, id: u64) {
        let removed = {
            let mut listeners = self.listeners.write();
            let index = listeners.iter().position(|l| l.id == id);
            index.map(|i| listeners.swap_remove(i))
        };
        if let Some(listener) = removed {
            listener.close();
        }
    }
}

/// A handler's thread: handle buffered notifications in order until stopped.
///
/// The thread enters `runtime` around each call, so that handlers can `tokio::spawn` and
/// `Handle::current().block_on(...)` as they would on a goroutine's worth of thread.
fn run_listener<K: Object>(
    listener: &Listener<K>,
    mut receiver: Receiver<K>,
    handler: &dyn ResourceEventHandler<K>,
    clock: &SharedClock,
    runtime: &tokio::runtime::Handle,
) {
    // `None`: the listener was closed and its buffer drained or dropped.
    while let Some(notification) = receiver.blocking_recv() {
        if listener.stop.is_cancelled() {
            // Removed or stopped: what is still buffered is dropped, not delivered.
            break;
        }
        let initial = matches!(notification, Notification::Add { is_in_initial_list: true, .. });
        *listener.in_flight.lock() = Some((notification.clone(), clock.now()));
        let outcome = {
            let _runtime = runtime.enter();
            std::panic::catch_unwind(AssertUnwindSafe(|| notification.dispatch(handler)))
        };
        listener.in_flight.lock().take();
        listener.done(initial);
        if let Err(payload) = outcome {
            listener.panics.fetch_add(1, Ordering::Relaxed);
            let message = payload
                .downcast_ref::<&str>()
                .map(ToString::to_string)
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_owned());
            tracing::error!(resource = %listener.resource, handler = listener.id, panic = %message, "event handler panicked; notification skipped");
        }
    }
}
