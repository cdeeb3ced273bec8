//! Per-node limits of federation: the §14.3 rate class "Federation deliveries: 1000/min per
//! node" (v1.0 §13.4 "Federation relay 1000/minute per node") and the queue-depth bound of
//! v1.0 §14.4 ("Nodes SHOULD support a configurable queue depth to prevent resource
//! exhaustion"), as pure structures on the injected clock.
//!
//! The rate class counts delivery requests (wrappers) per sending node in fixed one-minute
//! windows. A receiver counts a request only after its signature verified, so a forger
//! cannot spend another node's allowance by writing its name in `X-LOOM-Node`; a sender
//! paces itself with the same limiter keyed by destination.

use crate::error::{ErrorCode, ProtocolError};
use crate::time::Timestamp;
use std::collections::BTreeMap;

/// §14.3's suggested default for federation deliveries per node and minute.
pub const FEDERATION_DELIVERIES_PER_MINUTE: u32 = 1000;
/// The rate window.
pub const RATE_WINDOW_MS: i64 = 60_000;

/// A limiter decision, with what the `X-LOOM-RateLimit-*` headers report (§14.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    /// Whether the request may proceed.
    pub allowed: bool,
    /// `X-LOOM-RateLimit-Limit`.
    pub limit: u32,
    /// `X-LOOM-RateLimit-Remaining`.
    pub remaining: u32,
    /// `X-LOOM-RateLimit-Reset`: when the window ends.
    pub reset_at: Timestamp,
}

/// Fixed-window counters per key, bounded in the number of keys.
#[derive(Debug, Clone)]
pub struct NodeRateLimiter {
    limit: u32,
    max_keys: usize,
    windows: BTreeMap<String, (i64, u32)>,
}

impl NodeRateLimiter {
    /// `limit` requests per key and minute; at most `max_keys` keys tracked at once.
    pub fn new(limit: u32, max_keys: usize) -> NodeRateLimiter {
        NodeRateLimiter {
            limit,
            max_keys,
            windows: BTreeMap::new(),
        }
    }

    /// The §14.3 federation class (1000/min per node), tracking up to 10,000 nodes.
    pub fn federation() -> NodeRateLimiter {
        Self::new(FEDERATION_DELIVERIES_PER_MINUTE, 10_000)
    }

    /// Counts one request by `key` at `now`. When the key table is full even after dropping
    /// ended windows, a new key is refused (fail closed) rather than forgetting a live count.
    pub fn check(&mut self, key: &str, now: Timestamp) -> RateDecision {
        let ms = now.unix_ms();
        let window = ms - ms.rem_euclid(RATE_WINDOW_MS);
        let reset_at = Timestamp::from_unix_ms(window + RATE_WINDOW_MS);
        if !self.windows.contains_key(key) && self.windows.len() >= self.max_keys {
            self.windows.retain(|_, (w, _)| *w == window);
            if self.windows.len() >= self.max_keys {
                return RateDecision {
                    allowed: false,
                    limit: self.limit,
                    remaining: 0,
                    reset_at,
                };
            }
        }
        let entry = self.windows.entry(key.to_owned()).or_insert((window, 0));
        if entry.0 != window {
            *entry = (window, 0);
        }
        let allowed = entry.1 < self.limit;
        if allowed {
            entry.1 += 1;
        }
        RateDecision {
            allowed,
            limit: self.limit,
            remaining: self.limit - entry.1,
            reset_at,
        }
    }

    /// Keys currently tracked.
    pub fn tracked(&self) -> usize {
        self.windows.len()
    }
}

/// The `RATE_LIMIT_EXCEEDED` error for a refused decision (§14.3, §24.2: 429).
pub fn rate_limited(decision: &RateDecision, node: &str) -> ProtocolError {
    ProtocolError::new(
        ErrorCode::RateLimitExceeded,
        "X-LOOM-Node",
        format!(
            "node {node:?} sent more than {} deliveries this minute; retry after {}",
            decision.limit,
            decision.reset_at.to_rfc3339()
        ),
        "v1.1 §14.3",
    )
}

/// Outbox bounds (v1.0 §14.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLimits {
    /// Items queued for one destination node.
    pub per_node: usize,
    /// Items queued in all.
    pub total: usize,
}

impl Default for QueueLimits {
    fn default() -> Self {
        QueueLimits {
            per_node: 10_000,
            total: 100_000,
        }
    }
}

/// Whether `adding` more items for one node fit, given the current depths. A full queue
/// refuses the submission with `RATE_LIMIT_EXCEEDED` (429: the sender may retry later)
/// instead of dropping queued mail.
pub fn admit_to_queue(
    depth_for_node: usize,
    depth_total: usize,
    adding: usize,
    limits: &QueueLimits,
) -> Result<(), ProtocolError> {
    let full = |what: &str, limit: usize| {
        ProtocolError::new(
            ErrorCode::RateLimitExceeded,
            "to",
            format!("the federation outbox for {what} is full ({limit} items)"),
            "v1.0 §14.4",
        )
    };
    if depth_for_node.saturating_add(adding) > limits.per_node {
        return Err(full("this node", limits.per_node));
    }
    if depth_total.saturating_add(adding) > limits.total {
        return Err(full("all nodes", limits.total));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_unix_ms(1_772_366_400_000 + ms)
    }

    #[test]
    fn a_thousand_per_minute_per_node() {
        let mut l = NodeRateLimiter::federation();
        for i in 0..1000 {
            assert!(l.check("a.test", t(i)).allowed, "{i}");
        }
        let d = l.check("a.test", t(59_999));
        assert!(!d.allowed);
        assert_eq!((d.limit, d.remaining, d.reset_at), (1000, 0, t(60_000)));
        assert!(l.check("b.test", t(59_999)).allowed);
        let d = l.check("a.test", t(60_000));
        assert!(d.allowed);
        assert_eq!(d.remaining, 999);
        assert_eq!(rate_limited(&d, "a.test").code.http_status(), 429);
    }

    #[test]
    fn the_key_table_is_bounded_and_fails_closed() {
        let mut l = NodeRateLimiter::new(5, 2);
        assert!(l.check("a", t(0)).allowed);
        assert!(l.check("b", t(0)).allowed);
        assert!(!l.check("c", t(1)).allowed);
        assert!(l.check("a", t(1)).allowed);
        // Next window: ended windows are dropped and c gets a slot.
        assert!(l.check("c", t(60_000)).allowed);
        assert!(l.tracked() <= 2);
    }

    #[test]
    fn queue_depth() {
        let q = QueueLimits {
            per_node: 3,
            total: 5,
        };
        assert!(admit_to_queue(2, 2, 1, &q).is_ok());
        assert!(admit_to_queue(3, 3, 1, &q).is_err());
        assert!(admit_to_queue(0, 5, 1, &q).is_err());
        assert_eq!(
            admit_to_queue(0, 5, 1, &q).unwrap_err().code,
            ErrorCode::RateLimitExceeded
        );
    }
}
