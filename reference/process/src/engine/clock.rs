//! Injected time (DESIGN.md §3): the runtime never reads the wall clock itself. Event `ts`,
//! wall-clock budgets and git commit dates all come from a [`Clock`], so a run driven by a
//! [`ManualClock`] is byte-for-byte reproducible.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// A source of the current time in Unix milliseconds (loop-engine "Event Schema" `ts`).
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now_ms(&self) -> i64 {
        (**self).now_ms()
    }
}

/// Wall-clock time; only the CLI's `main` constructs it.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to (clones share the time). With `tick_ms > 0` every
/// reading advances it by that much, so a deterministic run still sees time pass and
/// wall-clock budgets can run out.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<AtomicI64>,
    tick_ms: i64,
}

impl ManualClock {
    /// A clock standing at `start_ms`.
    pub fn new(start_ms: i64) -> Self {
        ManualClock {
            now: Arc::new(AtomicI64::new(start_ms)),
            tick_ms: 0,
        }
    }

    /// A clock at `start_ms` that advances `tick_ms` after every reading.
    pub fn ticking(start_ms: i64, tick_ms: i64) -> Self {
        ManualClock {
            now: Arc::new(AtomicI64::new(start_ms)),
            tick_ms,
        }
    }

    /// Moves the clock by `ms`.
    pub fn advance_ms(&self, ms: i64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now.fetch_add(self.tick_ms, Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told_and_clones_share_time() {
        let c = ManualClock::new(1_000);
        let d = c.clone();
        assert_eq!(c.now_ms(), 1_000);
        d.advance_ms(5);
        assert_eq!(c.now_ms(), 1_005);
    }

    #[test]
    fn ticking_clock_advances_after_each_reading() {
        let c = ManualClock::ticking(0, 10);
        assert_eq!([c.now_ms(), c.now_ms(), c.now_ms()], [0, 10, 20]);
    }
}
