//! Injected time (DESIGN.md §3): the runtime never reads the wall clock itself. Event `ts`,
//! wall-clock budgets and git commit dates all come from a [`Clock`], so a run driven by a
//! [`ManualClock`] is byte-for-byte reproducible.
//!
//! Phases of one dependency wave run concurrently (README "Scheduling and phase mode"), each
//! on its own [`Clock::fork`]; after the wave the run's clock is brought forward to the
//! latest fork ([`Clock::join`]), so a deterministic clock stays deterministic under
//! concurrency: a fork's readings depend on its own phase's work only.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// A source of the current time in Unix milliseconds (loop-engine "Event Schema" `ts`).
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
    /// The current reading without side effects (a ticking [`ManualClock`] does not
    /// advance); used to bring a parent forward to its forks.
    fn peek_ms(&self) -> i64 {
        self.now_ms()
    }
    /// An independent clock for one concurrently running phase, starting at this clock's
    /// reading. Real time forks to itself.
    fn fork(&self) -> Arc<dyn Clock>;
    /// Brings this clock forward to `fork`'s reading if it is behind (never backwards).
    /// Real time needs nothing.
    fn join(&self, fork: &dyn Clock) {
        let _ = fork;
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now_ms(&self) -> i64 {
        (**self).now_ms()
    }
    fn peek_ms(&self) -> i64 {
        (**self).peek_ms()
    }
    fn fork(&self) -> Arc<dyn Clock> {
        (**self).fork()
    }
    fn join(&self, fork: &dyn Clock) {
        (**self).join(fork);
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
    fn fork(&self) -> Arc<dyn Clock> {
        Arc::new(SystemClock)
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
    fn peek_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
    /// A clock with its own time, starting at this clock's reading, ticking alike.
    fn fork(&self) -> Arc<dyn Clock> {
        Arc::new(ManualClock {
            now: Arc::new(AtomicI64::new(self.peek_ms())),
            tick_ms: self.tick_ms,
        })
    }
    fn join(&self, fork: &dyn Clock) {
        self.now.fetch_max(fork.peek_ms(), Ordering::SeqCst);
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
    fn forks_start_at_the_parent_run_alone_and_join_moves_the_parent_forward_only() {
        let c = ManualClock::ticking(100, 1);
        let (f, g) = (c.fork(), c.fork());
        assert_eq!([f.now_ms(), f.now_ms(), f.now_ms()], [100, 101, 102]);
        assert_eq!(g.now_ms(), 100, "forks do not share time");
        assert_eq!(c.peek_ms(), 100, "the parent did not move");
        c.join(f.as_ref());
        assert_eq!(c.peek_ms(), 103);
        c.join(g.as_ref());
        assert_eq!(c.peek_ms(), 103, "join never moves a clock backwards");
    }

    #[test]
    fn ticking_clock_advances_after_each_reading() {
        let c = ManualClock::ticking(0, 10);
        assert_eq!([c.now_ms(), c.now_ms(), c.now_ms()], [0, 10, 20]);
    }
}
