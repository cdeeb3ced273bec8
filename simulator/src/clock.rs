//! Simulated wall-clock time with a per-node skew (DESIGN.md §3): a fixed epoch plus
//! turmoil's elapsed virtual time plus the node's current skew. The skew is shared with the
//! fault schedule, which changes it while the node runs.

use loom_protocol::Timestamp;
use loom_protocol::clock::Clock;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// The epoch every run starts at.
pub const EPOCH: &str = "2026-03-01T12:00:00Z";

/// A node's clock: epoch + simulated elapsed time + skew.
#[derive(Debug, Clone)]
pub struct SkewClock {
    epoch_ms: i64,
    skew_ms: Arc<AtomicI64>,
}

impl SkewClock {
    /// A clock at [`EPOCH`] reading the shared `skew_ms`.
    pub fn new(skew_ms: Arc<AtomicI64>) -> SkewClock {
        let epoch_ms = Timestamp::parse(EPOCH).map(|t| t.unix_ms()).unwrap_or(0);
        SkewClock { epoch_ms, skew_ms }
    }
}

impl Clock for SkewClock {
    fn now(&self) -> Timestamp {
        let elapsed = turmoil::sim_elapsed().unwrap_or_default();
        let ms = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
        Timestamp::from_unix_ms(
            self.epoch_ms
                .saturating_add(ms)
                .saturating_add(self.skew_ms.load(Ordering::Relaxed)),
        )
    }
}
