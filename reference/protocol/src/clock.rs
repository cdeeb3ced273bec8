//! Injected time (DESIGN.md §3): every rule that compares against "now" takes a [`Clock`],
//! so the same inputs give the same verdicts in tests, vectors and the simulator.

use crate::time::Timestamp;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// A source of the current time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

/// Wall-clock time. Construct it only in a binary's `main`; libraries receive a `Clock`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Timestamp::from_unix_ms(since)
    }
}

/// A clock that stands still at one instant.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub Timestamp);

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        self.0
    }
}

/// A clock that moves only when told to; clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A manual clock starting at `start`.
    pub fn new(start: Timestamp) -> Self {
        ManualClock(Arc::new(AtomicI64::new(start.unix_ms())))
    }

    /// Moves the clock forward (or back, for skew tests) by `ms` milliseconds.
    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock to `t`.
    pub fn set(&self, t: Timestamp) {
        self.0.store(t.unix_ms(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_unix_ms(self.0.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_clones_share_time() {
        let c = ManualClock::new(Timestamp::from_unix_ms(1_000));
        let d = c.clone();
        c.advance_ms(500);
        assert_eq!(d.now().unix_ms(), 1_500);
        d.set(Timestamp::from_unix_ms(7));
        assert_eq!(c.now().unix_ms(), 7);
        assert_eq!(FixedClock(Timestamp::from_unix_ms(3)).now().unix_ms(), 3);
    }

    #[test]
    fn system_clock_is_after_2025() {
        assert!(SystemClock.now().unix_ms() > 1_735_689_600_000);
    }
}
