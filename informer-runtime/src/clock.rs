//! Time, injectable: everything that waits (backoff, resync, watch deadlines) asks a [`Clock`].
//!
//! **Who it is for.** Tests that run informers, queues and leader election in virtual time
//! (`testing::FakeClock`), and the crates built on this one. A program never sets one.
//!
//! Production code uses [`TokioClock`] (which also follows tokio's paused test time). Tests that
//! want to step time by hand use `FakeClock` from the `testing` module.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

/// A source of time and timers.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Instant;
    /// Completes once `duration` has passed on this clock.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// The real clock, through `tokio::time`.
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// About thirty years: what "later" means when a setting asks for more than an `Instant` can
/// hold (tokio's timers use the same bound for their far future).
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// `now + period`, or thirty years from `now` where that overflows: a resync period or a watch
/// timeout near `Duration::MAX` means "never", not a panic.
// Public for informer-client's deadlines (the runtime's clock arithmetic, one definition for
// both crates), not for users: hidden from the docs.
#[doc(hidden)]
#[inline]
#[must_use]
pub fn later(now: Instant, period: Duration) -> Instant {
    now.checked_add(period).unwrap_or_else(|| now + FAR_FUTURE)
}

/// A shared clock handle.
pub type SharedClock = Arc<dyn Clock>;

/// A source of uniformly distributed numbers in `[0, 1)`, for jitter and random timeouts.
#[derive(Clone)]
pub struct Random(Arc<dyn Fn() -> f64 + Send + Sync>);

impl Random {
    /// Randomness from `f`, which must return values in `[0, 1)`.
    pub fn new(f: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Always `value`: deterministic jitter for tests.
    #[must_use]
    pub fn fixed(value: f64) -> Self {
        Self::new(move || value)
    }

    /// The next number.
    #[must_use]
    pub fn next_f64(&self) -> f64 {
        (self.0)().clamp(0.0, 1.0)
    }
}

impl Default for Random {
    fn default() -> Self {
        Self::new(fastrand::f64)
    }
}

impl fmt::Debug for Random {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Random")
    }
}
