//! Replay counters per (sender identity, device, epoch) (v1.1 §23.1): "configurable … with
//! strict-monotonic or sliding-window (64-entry) mode". The spec does not say where a
//! sender's counter starts in a new epoch, so any first value is taken.

use super::E2eeError;
use serde::{Deserialize, Serialize};

/// How a node judges a sender's replay counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayMode {
    /// Every counter must exceed the last accepted one.
    #[default]
    Strict,
    /// A counter is accepted once if it is among the 64 values ending at the highest seen.
    SlidingWindow,
}

/// Window size of [`ReplayMode::SlidingWindow`].
pub const WINDOW: u64 = 64;

/// What a node remembers of one (sender, device): the epoch it last sent in, the highest
/// counter seen there, and which of the 64 counters ending at it were seen (bit 0 = highest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayState {
    /// The epoch of the last accepted counter.
    pub epoch: u64,
    /// The highest counter accepted in that epoch.
    pub highest: u64,
    /// Seen counters `highest - i` for bit `i`.
    pub seen: u64,
}

/// Why a counter was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayVerdict {
    /// The epoch is older than the one the sender already used.
    EpochRolledBack,
    /// This counter was accepted before.
    Replayed,
    /// Strict mode: not above the highest counter.
    NotIncreasing,
    /// Window mode: more than 63 below the highest counter.
    BelowWindow,
}

impl ReplayState {
    /// The state after a sender's first counter in `epoch`.
    pub fn first(epoch: u64, counter: u64) -> ReplayState {
        ReplayState {
            epoch,
            highest: counter,
            seen: 1,
        }
    }

    /// Judges `counter` in `epoch`: the state to store when it is accepted, or why not.
    pub fn accept(
        self,
        mode: ReplayMode,
        epoch: u64,
        counter: u64,
    ) -> Result<ReplayState, ReplayVerdict> {
        if epoch < self.epoch {
            return Err(ReplayVerdict::EpochRolledBack);
        }
        if epoch > self.epoch {
            return Ok(ReplayState::first(epoch, counter));
        }
        if counter > self.highest {
            let shift = counter - self.highest;
            let seen = if shift >= WINDOW {
                0
            } else {
                self.seen << shift
            };
            return Ok(ReplayState {
                epoch,
                highest: counter,
                seen: seen | 1,
            });
        }
        let behind = self.highest - counter;
        match mode {
            ReplayMode::Strict if behind == 0 => Err(ReplayVerdict::Replayed),
            ReplayMode::Strict => Err(ReplayVerdict::NotIncreasing),
            ReplayMode::SlidingWindow if behind >= WINDOW => Err(ReplayVerdict::BelowWindow),
            ReplayMode::SlidingWindow if self.seen & (1 << behind) != 0 => {
                Err(ReplayVerdict::Replayed)
            }
            ReplayMode::SlidingWindow => Ok(ReplayState {
                seen: self.seen | (1 << behind),
                ..self
            }),
        }
    }
}

impl ReplayVerdict {
    /// The refusal as an error on `content.replay_counter` (or `content.epoch`).
    pub fn error(self, counter: u64, state: &ReplayState) -> E2eeError {
        let (field, reason) = match self {
            ReplayVerdict::EpochRolledBack => (
                "content.epoch",
                format!(
                    "this sender already sent in epoch {}; epochs do not go back",
                    state.epoch
                ),
            ),
            ReplayVerdict::Replayed => (
                "content.replay_counter",
                format!(
                    "counter {counter} was already used by this sender and device in this epoch"
                ),
            ),
            ReplayVerdict::NotIncreasing => (
                "content.replay_counter",
                format!(
                    "counter {counter} does not exceed {} (strict-monotonic mode)",
                    state.highest
                ),
            ),
            ReplayVerdict::BelowWindow => (
                "content.replay_counter",
                format!(
                    "counter {counter} is more than {} below {} (64-entry sliding window)",
                    WINDOW - 1,
                    state.highest
                ),
            ),
        };
        E2eeError::new(field, reason, "v1.1 §23.1")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_mode_takes_only_increasing_counters() {
        let s = ReplayState::first(0, 5);
        assert_eq!(
            s.accept(ReplayMode::Strict, 0, 5),
            Err(ReplayVerdict::Replayed)
        );
        assert_eq!(
            s.accept(ReplayMode::Strict, 0, 4),
            Err(ReplayVerdict::NotIncreasing)
        );
        let s = s.accept(ReplayMode::Strict, 0, 9).unwrap();
        assert_eq!(s.highest, 9);
        assert_eq!(s.accept(ReplayMode::Strict, 1, 0).unwrap().epoch, 1);
        let s1 = s.accept(ReplayMode::Strict, 1, 0).unwrap();
        assert_eq!(
            s1.accept(ReplayMode::Strict, 0, 100),
            Err(ReplayVerdict::EpochRolledBack)
        );
    }

    #[test]
    fn window_mode_takes_each_counter_once_within_64() {
        let mut s = ReplayState::first(0, 0);
        s = s.accept(ReplayMode::SlidingWindow, 0, 10).unwrap();
        s = s.accept(ReplayMode::SlidingWindow, 0, 7).unwrap();
        assert_eq!(
            s.accept(ReplayMode::SlidingWindow, 0, 7),
            Err(ReplayVerdict::Replayed)
        );
        assert_eq!(
            s.accept(ReplayMode::SlidingWindow, 0, 0),
            Err(ReplayVerdict::Replayed)
        );
        assert_eq!(
            s.accept(ReplayMode::SlidingWindow, 0, 10),
            Err(ReplayVerdict::Replayed)
        );
        s = s.accept(ReplayMode::SlidingWindow, 0, 73).unwrap();
        assert_eq!(
            s.accept(ReplayMode::SlidingWindow, 0, 9),
            Err(ReplayVerdict::BelowWindow)
        );
        assert!(
            s.accept(ReplayMode::SlidingWindow, 0, 10).is_err(),
            "still remembered"
        );
        assert!(
            s.accept(ReplayMode::SlidingWindow, 0, 11).is_ok(),
            "in the window, unseen"
        );
        let far = s.accept(ReplayMode::SlidingWindow, 0, 1000).unwrap();
        assert_eq!(far.seen, 1);
    }
}
