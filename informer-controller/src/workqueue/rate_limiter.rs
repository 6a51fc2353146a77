//! How long a key waits before it is retried: client-go's `util/workqueue/default_rate_limiters.go`.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Decides how long a key waits before its next try, and counts its failures.
///
/// [`WorkQueue::add_rate_limited`](super::WorkQueue::add_rate_limited) asks
/// [`when`](Self::when) once per failure; [`WorkQueue::forget`](super::WorkQueue::forget) calls
/// [`forget`](Self::forget) once the key succeeded. A limiter that counts per key holds one
/// entry per key that failed and was not forgotten yet: as many as the controller has failing
/// objects.
#[doc(alias = "TypedRateLimiter")]
pub trait RateLimiter<T>: Send + Sync + 'static {
    /// How long `item` waits before it is processed again, `now`; counts one more failure.
    fn when(&self, item: &T, now: Instant) -> Duration;
    /// Forgets `item`'s failures: its next failure waits as if it were the first.
    fn forget(&self, item: &T);
    /// How many failures of `item` were counted since it was last forgotten.
    fn num_requeues(&self, item: &T) -> u32;
}

impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<L> {
    fn when(&self, item: &T, now: Instant) -> Duration {
        (**self).when(item, now)
    }

    fn forget(&self, item: &T) {
        (**self).forget(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

/// A rate limit that cannot be enforced.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum InvalidRateLimit {
    /// The rate of a token bucket is zero, negative or not a number.
    #[error(
        "token bucket rate {0} per second: it must be a positive number (client-go's default is 10)"
    )]
    Rate(f64),
    /// The burst of a token bucket is zero.
    #[error("token bucket burst 0: it must be at least 1 (client-go's default is 100)")]
    Burst,
}

/// Per-key failure counts, behind a lock.
struct Failures<T>(Mutex<HashMap<T, u32>>);

impl<T: Clone + Eq + Hash> Failures<T> {
    fn new() -> Self {
        Self(Mutex::new(HashMap::new()))
    }

    /// Counts one more failure of `item`; returns the count before it.
    fn record(&self, item: &T) -> u32 {
        let mut failures = self.0.lock();
        let count = failures.entry(item.clone()).or_insert(0);
        let before = *count;
        *count = count.saturating_add(1);
        before
    }

    fn forget(&self, item: &T) {
        self.0.lock().remove(item);
    }

    fn get(&self, item: &T) -> u32 {
        self.0.lock().get(item).copied().unwrap_or(0)
    }
}

/// Waits `base × 2^failures` for a key, at most `max`: the per-key backoff of client-go's
/// default controller rate limiter (5 ms to 1,000 s there).
#[doc(alias = "ItemExponentialFailureRateLimiter")]
pub struct ExponentialBackoff<T> {
    base: Duration,
    max: Duration,
    failures: Failures<T>,
}

impl<T: Clone + Eq + Hash> ExponentialBackoff<T> {
    /// Starts at `base`, doubles with each failure of the same key, stops growing at `max`.
    #[must_use]
    pub fn new(base: Duration, max: Duration) -> Self {
        Self { base, max, failures: Failures::new() }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> RateLimiter<T> for ExponentialBackoff<T> {
    fn when(&self, item: &T, _now: Instant) -> Duration {
        let exponent = self.failures.record(item);
        // Past 2^31, or where the product overflows a `Duration`: max.
        let factor = 1u32.checked_shl(exponent);
        factor.and_then(|f| self.base.checked_mul(f)).map_or(self.max, |d| d.min(self.max))
    }

    fn forget(&self, item: &T) {
        self.failures.forget(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.get(item)
    }
}

/// Waits `fast` for a key's first `fast_attempts` failures, then `slow` (client-go's
/// `ItemFastSlowRateLimiter`).
#[doc(alias = "ItemFastSlowRateLimiter")]
pub struct FastSlow<T> {
    fast: Duration,
    slow: Duration,
    fast_attempts: u32,
    failures: Failures<T>,
}

impl<T: Clone + Eq + Hash> FastSlow<T> {
    /// `fast` for the first `fast_attempts` failures of a key, `slow` after.
    #[must_use]
    pub fn new(fast: Duration, slow: Duration, fast_attempts: u32) -> Self {
        Self { fast, slow, fast_attempts, failures: Failures::new() }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> RateLimiter<T> for FastSlow<T> {
    fn when(&self, item: &T, _now: Instant) -> Duration {
        if self.failures.record(item) < self.fast_attempts { self.fast } else { self.slow }
    }

    fn forget(&self, item: &T) {
        self.failures.forget(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.get(item)
    }
}

/// A token bucket over all keys: `rate` retries a second on average, `burst` at once (client-go's
/// `BucketRateLimiter` over `golang.org/x/time/rate`, 10 a second and 100 at once in its default
/// controller rate limiter). It counts no failures per key.
///
/// Each retry takes a token, whether one is there or not: the bucket goes into debt, and the
/// retry waits until the debt is paid back at `rate`. So a burst of failures spreads out instead
/// of being refused.
#[doc(alias = "BucketRateLimiter")]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    state: Mutex<Option<Bucket>>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

impl TokenBucket {
    /// `rate` tokens a second, up to `burst` saved; the bucket starts full.
    ///
    /// # Errors
    ///
    /// [`InvalidRateLimit`] when `rate` is not a positive finite number or `burst` is 0.
    pub fn new(rate: f64, burst: u32) -> Result<Self, InvalidRateLimit> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(InvalidRateLimit::Rate(rate));
        }
        if burst == 0 {
            return Err(InvalidRateLimit::Burst);
        }
        Ok(Self::checked(rate, f64::from(burst)))
    }

    /// A bucket of settings already known to be valid.
    fn checked(rate: f64, burst: f64) -> Self {
        Self { rate, burst, state: Mutex::new(None) }
    }
}

impl<T> RateLimiter<T> for TokenBucket {
    fn when(&self, _item: &T, now: Instant) -> Duration {
        let mut state = self.state.lock();
        let bucket = state.get_or_insert(Bucket { tokens: self.burst, at: now });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.rate).min(self.burst) - 1.0;
        bucket.at = bucket.at.max(now);
        if bucket.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::try_from_secs_f64(-bucket.tokens / self.rate).unwrap_or(Duration::MAX)
        }
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// The longest wait of several limiters, each of which counts every failure (client-go's
/// `MaxOfRateLimiter`).
#[doc(alias = "MaxOfRateLimiter")]
pub struct MaxOf<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOf<T> {
    /// The longest wait of `limiters`; none: no wait.
    #[must_use]
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T: 'static> RateLimiter<T> for MaxOf<T> {
    fn when(&self, item: &T, now: Instant) -> Duration {
        // Every limiter is asked, so that each counts the failure, not only the longest.
        self.limiters.iter().map(|l| l.when(item, now)).fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, item: &T) {
        for limiter in &self.limiters {
            limiter.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters.iter().map(|l| l.num_requeues(item)).max().unwrap_or(0)
    }
}

/// Another limiter's wait, at most `max` (client-go's `WithMaxWaitRateLimiter`).
#[doc(alias = "WithMaxWaitRateLimiter")]
pub struct WithMaxWait<L> {
    limiter: L,
    max: Duration,
}

impl<L> WithMaxWait<L> {
    /// `limiter`'s waits, cut to `max`.
    #[must_use]
    pub fn new(limiter: L, max: Duration) -> Self {
        Self { limiter, max }
    }
}

impl<T, L: RateLimiter<T>> RateLimiter<T> for WithMaxWait<L> {
    fn when(&self, item: &T, now: Instant) -> Duration {
        self.limiter.when(item, now).min(self.max)
    }

    fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }
}

/// client-go's `DefaultControllerRateLimiter`: the longer of a per-key exponential backoff from
/// 5 ms to 1,000 s and a token bucket of 10 retries a second, 100 at once, over all keys.
#[doc(alias = "DefaultControllerRateLimiter")]
#[must_use]
pub fn default_controller_rate_limiter<T: Clone + Eq + Hash + Send + Sync + 'static>() -> MaxOf<T> {
    MaxOf::new(vec![
        Box::new(ExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000))),
        Box::new(TokenBucket::checked(10.0, 100.0)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    // client-go: TestItemExponentialFailureRateLimiter
    #[test]
    fn exponential_backoff_doubles_per_key_up_to_its_max_and_forget_resets_it() {
        let limiter = ExponentialBackoff::new(MS, Duration::from_secs(1));
        let now = Instant::now();
        let waits: Vec<_> = (0..5).map(|_| limiter.when(&"one", now)).collect();
        assert_eq!(waits, [MS, 2 * MS, 4 * MS, 8 * MS, 16 * MS]);
        assert_eq!(limiter.num_requeues(&"one"), 5);
        assert_eq!(limiter.when(&"two", now), MS, "each key counts alone");
        assert_eq!(limiter.when(&"two", now), 2 * MS);
        assert_eq!(limiter.num_requeues(&"two"), 2);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one", now), MS);
    }

    // client-go: TestItemExponentialFailureRateLimiterOverFlow
    #[test]
    fn exponential_backoff_stops_at_its_max_instead_of_overflowing() {
        let now = Instant::now();
        let limiter = ExponentialBackoff::new(MS, Duration::from_secs(1000));
        for _ in 0..5 {
            limiter.when(&"one", now);
        }
        assert_eq!(limiter.when(&"one", now), 32 * MS);
        for _ in 0..1000 {
            limiter.when(&"overflow", now);
        }
        assert_eq!(limiter.when(&"overflow", now), Duration::from_secs(1000));

        let limiter = ExponentialBackoff::new(Duration::from_secs(60 * 60), Duration::MAX);
        let waits: Vec<_> = (0..3).map(|_| limiter.when(&"hours", now)).collect();
        assert_eq!(waits, [1, 2, 4].map(|h| Duration::from_secs(h * 60 * 60)));
        for _ in 0..100 {
            limiter.when(&"hours", now);
        }
        assert_eq!(limiter.when(&"hours", now), Duration::MAX);
    }

    // client-go: TestItemFastSlowRateLimiter
    #[test]
    fn fast_slow_is_fast_for_the_first_attempts_of_each_key() {
        let limiter = FastSlow::new(5 * MS, 10 * Duration::from_secs(1), 3);
        let now = Instant::now();
        let waits: Vec<_> = (0..5).map(|_| limiter.when(&"one", now)).collect();
        assert_eq!(
            waits,
            [5 * MS, 5 * MS, 5 * MS, Duration::from_secs(10), Duration::from_secs(10)]
        );
        assert_eq!(limiter.num_requeues(&"one"), 5);
        assert_eq!(limiter.when(&"two", now), 5 * MS);
        limiter.forget(&"one");
        assert_eq!(limiter.when(&"one", now), 5 * MS);
    }

    // client-go: TestMaxOfRateLimiter
    #[test]
    fn max_of_waits_the_longest_and_every_limiter_counts() {
        let limiter: MaxOf<&str> = MaxOf::new(vec![
            Box::new(FastSlow::new(5 * MS, Duration::from_secs(3), 3)),
            Box::new(ExponentialBackoff::new(MS, Duration::from_secs(1))),
        ]);
        let now = Instant::now();
        let waits: Vec<_> = (0..5).map(|_| limiter.when(&"one", now)).collect();
        assert_eq!(waits, [5 * MS, 5 * MS, 5 * MS, Duration::from_secs(3), Duration::from_secs(3)]);
        assert_eq!(limiter.num_requeues(&"one"), 5);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one", now), 5 * MS);
    }

    // client-go: TestWithMaxWaitRateLimiter
    #[test]
    fn with_max_wait_cuts_the_wait() {
        let limiter = WithMaxWait::new(
            ExponentialBackoff::new(Duration::from_secs(60), Duration::from_secs(3600)),
            Duration::from_secs(90),
        );
        let now = Instant::now();
        assert_eq!(limiter.when(&"one", now), Duration::from_secs(60));
        assert_eq!(limiter.when(&"one", now), Duration::from_secs(90));
        assert_eq!(limiter.num_requeues(&"one"), 2);
    }

    #[test]
    fn a_token_bucket_lets_a_burst_through_then_spaces_retries_at_its_rate() {
        let bucket = TokenBucket::new(10.0, 3).expect("valid");
        let start = Instant::now();
        let waits: Vec<_> = (0..5).map(|_| RateLimiter::<()>::when(&bucket, &(), start)).collect();
        assert_eq!(waits, [Duration::ZERO, Duration::ZERO, Duration::ZERO, 100 * MS, 200 * MS]);
        // One second later the debt of two is paid and a token more saved, up to the burst.
        let later = start + Duration::from_secs(1);
        let waits: Vec<_> = (0..4).map(|_| RateLimiter::<()>::when(&bucket, &(), later)).collect();
        assert_eq!(waits[..3], [Duration::ZERO; 3]);
        assert!(waits[3] > Duration::ZERO);
        assert_eq!(RateLimiter::<()>::num_requeues(&bucket, &()), 0);
    }

    #[test]
    fn a_token_bucket_refuses_settings_it_cannot_enforce() {
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(TokenBucket::new(rate, 1), Err(InvalidRateLimit::Rate(_))));
        }
        assert_eq!(TokenBucket::new(1.0, 0).err(), Some(InvalidRateLimit::Burst));
        let message = TokenBucket::new(0.0, 1).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("token bucket rate 0"), "{message}");
    }

    // client-go: TestDefaultControllerRateLimiter (its per-key half; the bucket: above)
    #[test]
    fn the_default_controller_rate_limiter_backs_off_from_5_ms() {
        let limiter = default_controller_rate_limiter::<&str>();
        let now = Instant::now();
        let waits: Vec<_> = (0..3).map(|_| limiter.when(&"one", now)).collect();
        assert_eq!(waits, [5 * MS, 10 * MS, 20 * MS]);
        assert_eq!(limiter.num_requeues(&"one"), 3);
        limiter.forget(&"one");
        assert_eq!(limiter.when(&"one", now), 5 * MS);
    }
}
