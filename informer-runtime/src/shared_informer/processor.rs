//! The fan-out: one listener per registered handler, each with its own unbounded buffer and task.
//!
//! `distribute` runs on the informer's processing path and never blocks: it appends to every
//! listener's buffer. Each handler listener drains its buffer on a task of its own, so a slow
//! handler delays nobody but itself. Per listener, notifications keep their order.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::handler::{Notification, ResourceEventHandler};
use crate::clock::{SharedClock, later};

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
        let sender = self.sender.lock();
        let Some(sender) = sender.as_ref() else { return };
        if matches!(notification, Notification::Add { is_in_initial_list: true, .. }) {
            self.initial_pending.fetch_add(1, Ordering::AcqRel);
        }
        self.pending.fetch_add(1, Ordering::AcqRel);
        // A closed receiver means the listener is going away; the notification is moot.
        let _ = sender.send(notification);
    }

    /// Marks one notification as handled.
    pub(crate) fn done(&self, was_initial: bool) {
        self.pending.fetch_sub(1, Ordering::AcqRel);
        if was_initial && self.initial_pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.progressed.notify_waiters();
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
    state: Mutex<RunState<K>>,
    tasks: TaskTracker,
    clock: SharedClock,
}

static NEXT_LISTENER_ID: AtomicU64 = AtomicU64::new(1);

impl<K: Send + Sync + 'static> Processor<K> {
    pub(crate) fn new(clock: SharedClock) -> Self {
        Self {
            listeners: RwLock::new(Vec::new()),
            state: Mutex::new(RunState::NotStarted(Vec::new())),
            tasks: TaskTracker::new(),
            clock,
        }
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
        });
        (listener, receiver)
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
                self.tasks
                    .spawn_on(run_listener(Arc::clone(&listener), receiver, handler), runtime);
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

    /// Spawns the tasks of the handlers registered so far on `runtime`.
    pub(crate) fn run(&self, runtime: &tokio::runtime::Handle) {
        let mut state = self.state.lock();
        if let RunState::NotStarted(waiting) =
            std::mem::replace(&mut *state, RunState::Running(runtime.clone()))
        {
            for (listener, receiver, handler) in waiting {
                self.tasks.spawn_on(run_listener(listener, receiver, handler), runtime);
            }
        }
    }

    /// Stops every listener and waits for their tasks to end.
    pub(crate) async fn stop(&self) {
        *self.state.lock() = RunState::Stopped;
        let listeners = std::mem::take(&mut *self.listeners.write());
        for listener in listeners {
            listener.close();
        }
        self.tasks.close();
        self.tasks.wait().await;
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

/// A handler's task: handle buffered notifications in order until stopped.
async fn run_listener<K: Send + Sync + 'static>(
    listener: Arc<Listener<K>>,
    mut receiver: mpsc::UnboundedReceiver<Notification<K>>,
    handler: Arc<dyn ResourceEventHandler<K>>,
) {
    loop {
        let notification = tokio::select! {
            biased;
            () = listener.stop.cancelled() => break,
            next = receiver.recv() => match next {
                Some(n) => n,
                None => break,
            },
        };
        let initial = matches!(notification, Notification::Add { is_in_initial_list: true, .. });
        let outcome =
            std::panic::catch_unwind(AssertUnwindSafe(|| notification.dispatch(&*handler)));
        listener.done(initial);
        if let Err(payload) = outcome {
            listener.panics.fetch_add(1, Ordering::Relaxed);
            let message = payload
                .downcast_ref::<&str>()
                .map(ToString::to_string)
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_owned());
            tracing::error!(listener = listener.id, panic = %message, "event handler panicked; notification skipped");
        }
    }
}
