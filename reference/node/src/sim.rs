//! Simulator support (feature `sim`, DESIGN.md §3): a [`SimClock`] that reads turmoil's
//! virtual time, so a node running as a turmoil host stamps requests, tokens and IDs from
//! simulated time and the same seed gives the same bytes; and [`disk`], the simulated disk
//! under the nodes' SQLite files (storage faults).

pub mod disk;

use loom_protocol::Timestamp;
use loom_protocol::clock::Clock;

/// Wall-clock time inside a turmoil simulation: a fixed epoch plus the simulation's elapsed
/// virtual time ([`turmoil::sim_elapsed`]). Outside a simulation it stands at the epoch.
#[derive(Debug, Clone, Copy)]
pub struct SimClock {
    epoch: Timestamp,
}

impl SimClock {
    /// A clock that reads `epoch` when the simulation starts.
    pub fn new(epoch: Timestamp) -> SimClock {
        SimClock { epoch }
    }
}

impl Clock for SimClock {
    fn now(&self) -> Timestamp {
        let elapsed = turmoil::sim_elapsed().unwrap_or_default();
        let ms = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
        Timestamp::from_unix_ms(self.epoch.unix_ms().saturating_add(ms))
    }
}
