//! The reflector's exponential backoff with jitter and reset, on an injectable clock.

use std::time::{Duration, Instant};

use crate::clock::{Random, SharedClock};

/// Backoff between failed list/watch attempts.
///
/// The defaults are client-go's (`NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0)`):
/// waits of 0.8 s, 1.6 s, 3.2 s ... capped at 30 s, each stretched by a random factor in
/// `[1, 1 + jitter)`, so a capped wait lies in [30 s, 60 s) (about 0.02 requests per second per
/// informer). After `reset_after` without any backoff the server is assumed healthy and the
/// sequence starts over.
#[derive(Clone, Debug, PartialEq)]
pub struct BackoffConfig {
    /// The first wait.
    pub initial: Duration,
    /// The largest wait before jitter.
    pub max: Duration,
    /// Time without a backoff after which the wait drops back to `initial`.
    pub reset_after: Duration,
    /// How much each wait grows.
    pub factor: f64,
    /// Up to this fraction of the wait is added at random.
    pub jitter: f64,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            reset_after: Duration::from_secs(120),
            factor: 2.0,
            jitter: 1.0,
        }
    }
}

/// The backoff state: the next base duration and when the last backoff started.
pub(crate) struct Backoff {
    config: BackoffConfig,
    next: Duration,
    last_backoff_start: Instant,
    clock: SharedClock,
    random: Random,
}

impl Backoff {
    pub(crate) fn new(config: BackoffConfig, clock: SharedClock, random: Random) -> Self {
        let last_backoff_start = clock.now();
        Self { next: config.initial, config, last_backoff_start, clock, random }
    }

    /// The next wait.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let now = self.clock.now();
        if now.saturating_duration_since(self.last_backoff_start) > self.config.reset_after {
            self.next = self.config.initial;
        }
        self.last_backoff_start = now;
        let base = self.next;
        // The cap applies to the base, before jitter, as in client-go.
        self.next = scale(base, self.config.factor).min(self.config.max);
        if self.config.jitter > 0.0 {
            base.saturating_add(scale(base, self.random.next_f64() * self.config.jitter))
        } else {
            base
        }
    }
}

/// `d × factor`, saturating instead of panicking on a huge or negative factor.
fn scale(d: Duration, factor: f64) -> Duration {
    Duration::try_from_secs_f64(d.as_secs_f64() * factor.max(0.0)).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::testing::FakeClock;

    fn backoff(clock: &FakeClock, random: f64) -> Backoff {
        Backoff::new(BackoffConfig::default(), Arc::new(clock.clone()), Random::fixed(random))
    }

    #[test]
    fn doubles_from_800ms_to_a_30s_cap() {
        let clock = FakeClock::new();
        let mut b = backoff(&clock, 0.0);
        let waits: Vec<u128> = (0..8).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(waits, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
    }

    #[test]
    fn jitter_stretches_up_to_twice_the_base() {
        let clock = FakeClock::new();
        let mut b = backoff(&clock, 0.5);
        assert_eq!(b.next_delay(), Duration::from_millis(1200));
        let mut b = backoff(&clock, 0.999);
        for _ in 0..10 {
            b.next_delay();
        }
        let capped = b.next_delay();
        assert!(
            capped >= Duration::from_secs(30) && capped < Duration::from_secs(60),
            "{capped:?}"
        );
    }

    #[test]
    fn resets_after_two_minutes_without_backoff() {
        let clock = FakeClock::new();
        let mut b = backoff(&clock, 0.0);
        for _ in 0..5 {
            b.next_delay();
        }
        clock.step(Duration::from_secs(119));
        assert_eq!(b.next_delay(), Duration::from_millis(25600), "119 s is not long enough");
        clock.step(Duration::from_secs(121));
        assert_eq!(b.next_delay(), Duration::from_millis(800));
    }
}
