//! The injected environment (DESIGN.md §3): futures, sleeping and time. Libraries never read
//! the wall clock; the CLI's `main` picks a clock.

use loom_protocol::clock::{Clock, ManualClock};
use loom_protocol::time::Timestamp;
use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future: the return type of the loop's async traits (dyn-compatible and
/// mockable).
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// How the middleware waits (`!wait`, retry backoff).
#[cfg_attr(test, mockall::automock)]
pub trait Sleeper: Send + Sync + std::fmt::Debug {
    /// Waits `ms` milliseconds.
    fn sleep(&self, ms: u64) -> BoxFuture<()>;
}

/// Sleeps on tokio's timer, so under turmoil or `start_paused` tests time is simulated.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, ms: u64) -> BoxFuture<()> {
        Box::pin(tokio::time::sleep(std::time::Duration::from_millis(ms)))
    }
}

/// "Sleeps" by moving a [`ManualClock`] forward and returning at once: scenario runs take no
/// real time and are byte-for-byte reproducible.
#[derive(Debug, Clone)]
pub struct ManualSleeper(pub ManualClock);

impl Sleeper for ManualSleeper {
    fn sleep(&self, ms: u64) -> BoxFuture<()> {
        self.0.advance_ms(i64::try_from(ms).unwrap_or(i64::MAX));
        Box::pin(std::future::ready(()))
    }
}

/// A clock that reads tokio's (possibly paused) timer: `base` plus the time elapsed since
/// construction. Pairs with [`TokioSleeper`].
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    base: Timestamp,
    start: tokio::time::Instant,
}

impl TokioClock {
    /// A clock reading `base` now. Must be created inside a tokio runtime.
    pub fn new(base: Timestamp) -> Self {
        TokioClock {
            base,
            start: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        let ms = i64::try_from(self.start.elapsed().as_millis()).unwrap_or(i64::MAX);
        self.base.plus_ms(ms)
    }
}
