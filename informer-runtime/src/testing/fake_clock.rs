//! A clock that moves only when a test steps it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::{Notify, oneshot};

use crate::clock::Clock;

struct Sleeper {
    deadline: Instant,
    wake: oneshot::Sender<()>,
}

struct State {
    now: Instant,
    sleepers: Vec<Sleeper>,
}

/// A manual clock, like client-go's `testingclock.FakeClock`: time stands still until
/// [`step`](Self::step), which fires every timer that became due.
///
/// ```
/// # use informer_runtime::testing::FakeClock;
/// # use informer_runtime::clock::Clock;
/// # use std::time::Duration;
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let clock = FakeClock::new();
/// let timer = clock.sleep(Duration::from_secs(30));
/// clock.step(Duration::from_secs(30));
/// timer.await; // due: completes at once
/// # }
/// ```
#[derive(Clone)]
pub struct FakeClock {
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
}

impl Default for FakeClock {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeClock {
    /// A clock at the current real time, standing still.
    #[must_use]
    pub fn new() -> Self {
        Self {
            state: Arc::new(Mutex::new(State { now: Instant::now(), sleepers: Vec::new() })),
            changed: Arc::new(Notify::new()),
        }
    }

    /// Moves time forward by `by` and fires the timers that became due.
    pub fn step(&self, by: Duration) {
        let mut state = self.state.lock();
        state.now += by;
        let now = state.now;
        let (due, waiting) =
            std::mem::take(&mut state.sleepers).into_iter().partition(|s| s.deadline <= now);
        state.sleepers = waiting;
        drop(state);
        for sleeper in due {
            let _ = sleeper.wake.send(());
        }
    }

    /// Number of timers waiting (dropped timers are not counted).
    #[must_use]
    pub fn waiters(&self) -> usize {
        let mut state = self.state.lock();
        state.sleepers.retain(|s| !s.wake.is_closed());
        state.sleepers.len()
    }

    /// Whether any timer is waiting.
    #[must_use]
    pub fn has_waiters(&self) -> bool {
        self.waiters() > 0
    }

    /// The durations until each waiting timer fires, shortest first.
    #[must_use]
    pub fn pending_timers(&self) -> Vec<Duration> {
        let mut state = self.state.lock();
        state.sleepers.retain(|s| !s.wake.is_closed());
        let now = state.now;
        let mut left: Vec<Duration> =
            state.sleepers.iter().map(|s| s.deadline.saturating_duration_since(now)).collect();
        left.sort();
        left
    }

    /// Waits until at least `n` timers are waiting.
    pub async fn wait_for_waiters(&self, n: usize) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.waiters() >= n {
                return;
            }
            changed.await;
        }
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        self.state.lock().now
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        let (wake, fired) = oneshot::channel();
        {
            let mut state = self.state.lock();
            let deadline = crate::clock::later(state.now, duration);
            if duration.is_zero() {
                let _ = wake.send(());
            } else {
                state.sleepers.push(Sleeper { deadline, wake });
            }
        }
        self.changed.notify_waiters();
        Box::pin(async move {
            let _ = fired.await;
        })
    }
}

impl std::fmt::Debug for FakeClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeClock").field("waiters", &self.state.lock().sleepers.len()).finish()
    }
}
