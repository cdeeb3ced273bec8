//! The federation replay cache (v1.1 §15.3 "nonce replay prevented (cache 15 min)", §23.2
//! "validate federation wrapper replay protection (nonce cache)"): a pure data structure with
//! injected time and bounded size.
//!
//! Entries are keyed by `(node, nonce)`, so the cache is per sending node, and forgotten
//! exactly [`NONCE_TTL_MS`] after they were recorded (an entry 15 minutes old has expired).
//! The size is bounded per node and in total. A full cache refuses new nonces instead of
//! evicting live ones: evicting an unexpired entry would let its request be replayed. The
//! default per-node bound is the §14.3 federation rate class times the cache lifetime
//! (1000/min × 15 min), so a node that stays within its rate limit never meets it.

use crate::time::Timestamp;
use std::collections::{BTreeMap, BTreeSet};

/// How long a nonce stays in the replay cache (v1.1 §15.3).
pub const NONCE_TTL_MS: i64 = 15 * 60 * 1000;

/// The longest nonce accepted, in bytes: an unbounded header would make the cache's memory
/// the attacker's choice (the spec gives no length; 256 is far above any real nonce).
pub const MAX_NONCE_LEN: usize = 256;

/// Bounds of a [`MemoryNonceCache`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NonceCacheLimits {
    /// How long an entry lives, in milliseconds (§15.3: 15 minutes).
    pub ttl_ms: i64,
    /// Live entries one node may hold.
    pub max_per_node: usize,
    /// Live entries in all.
    pub max_total: usize,
}

impl Default for NonceCacheLimits {
    /// 15 minutes; 15,000 per node (§14.3's 1000 deliveries/min for 15 minutes); 250,000 in all.
    fn default() -> Self {
        NonceCacheLimits {
            ttl_ms: NONCE_TTL_MS,
            max_per_node: 15_000,
            max_total: 250_000,
        }
    }
}

/// What the cache says about a nonce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceOutcome {
    /// Not seen within the lifetime: recorded now.
    Fresh,
    /// Seen from the same node within the lifetime: a replay.
    Replayed,
    /// Not seen, but the node's (or the whole cache's) bound is reached: refused, not recorded.
    Full,
}

/// A replay cache for nonces (§15.3): remembers `(node, nonce)` pairs until they expire.
pub trait NonceCache {
    /// Records `(node, nonce)` seen at `now` unless it is a replay or the cache is full.
    fn check_and_insert(&mut self, node: &str, nonce: &str, now: Timestamp) -> NonceOutcome;
}

/// An in-memory [`NonceCache`]: O(log n) per call, expiry by time, bounded size.
#[derive(Debug, Clone, Default)]
pub struct MemoryNonceCache {
    limits: NonceCacheLimits,
    /// `(node, nonce)` → when it was recorded (ms).
    seen: BTreeMap<(String, String), i64>,
    /// The same entries ordered by time, for eviction.
    by_time: BTreeSet<(i64, String, String)>,
    /// Live entries per node.
    per_node: BTreeMap<String, usize>,
}

impl MemoryNonceCache {
    /// An empty cache with the given bounds.
    pub fn with_limits(limits: NonceCacheLimits) -> Self {
        MemoryNonceCache {
            limits,
            ..Self::default()
        }
    }

    /// The bounds.
    pub fn limits(&self) -> NonceCacheLimits {
        self.limits
    }

    /// Live entries (as of the last call).
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// True when no entry is held.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Live entries held for `node` (as of the last call).
    pub fn len_for(&self, node: &str) -> usize {
        self.per_node.get(node).copied().unwrap_or(0)
    }

    /// Forgets every entry recorded at least `ttl_ms` before `now`.
    pub fn evict_expired(&mut self, now: Timestamp) {
        let cutoff = now.unix_ms().saturating_sub(self.limits.ttl_ms);
        while let Some(first) = self.by_time.first() {
            if first.0 > cutoff {
                break;
            }
            let Some((_, node, nonce)) = self.by_time.pop_first() else {
                break;
            };
            self.seen.remove(&(node.clone(), nonce));
            if let Some(n) = self.per_node.get_mut(&node) {
                *n -= 1;
                if *n == 0 {
                    self.per_node.remove(&node);
                }
            }
        }
    }
}

impl NonceCache for MemoryNonceCache {
    fn check_and_insert(&mut self, node: &str, nonce: &str, now: Timestamp) -> NonceOutcome {
        self.evict_expired(now);
        let key = (node.to_owned(), nonce.to_owned());
        if self.seen.contains_key(&key) {
            return NonceOutcome::Replayed;
        }
        if self.len_for(node) >= self.limits.max_per_node || self.len() >= self.limits.max_total {
            return NonceOutcome::Full;
        }
        let at = now.unix_ms();
        self.by_time.insert((at, key.0.clone(), key.1.clone()));
        *self.per_node.entry(key.0.clone()).or_insert(0) += 1;
        self.seen.insert(key, at);
        NonceOutcome::Fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_unix_ms(1_772_366_400_000 + ms)
    }

    #[test]
    fn an_entry_lives_exactly_fifteen_minutes() {
        let mut c = MemoryNonceCache::default();
        assert_eq!(c.check_and_insert("a.test", "n", t(0)), NonceOutcome::Fresh);
        assert_eq!(
            c.check_and_insert("a.test", "n", t(NONCE_TTL_MS - 1)),
            NonceOutcome::Replayed
        );
        assert_eq!(
            c.check_and_insert("a.test", "n", t(NONCE_TTL_MS)),
            NonceOutcome::Fresh
        );
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn the_cache_is_per_node() {
        let mut c = MemoryNonceCache::default();
        assert_eq!(c.check_and_insert("a.test", "n", t(0)), NonceOutcome::Fresh);
        assert_eq!(c.check_and_insert("b.test", "n", t(0)), NonceOutcome::Fresh);
        assert_eq!(c.len_for("a.test"), 1);
        assert_eq!(c.len_for("b.test"), 1);
    }

    #[test]
    fn a_full_node_is_refused_without_evicting_live_entries() {
        let mut c = MemoryNonceCache::with_limits(NonceCacheLimits {
            max_per_node: 2,
            max_total: 3,
            ..NonceCacheLimits::default()
        });
        assert_eq!(c.check_and_insert("a", "1", t(0)), NonceOutcome::Fresh);
        assert_eq!(c.check_and_insert("a", "2", t(1)), NonceOutcome::Fresh);
        assert_eq!(c.check_and_insert("a", "3", t(2)), NonceOutcome::Full);
        // The refused nonce was not recorded, the live ones still are.
        assert_eq!(c.check_and_insert("a", "1", t(3)), NonceOutcome::Replayed);
        assert_eq!(c.check_and_insert("b", "1", t(3)), NonceOutcome::Fresh);
        assert_eq!(c.check_and_insert("c", "1", t(3)), NonceOutcome::Full);
        // Once the first entry expires, "a" has room again.
        assert_eq!(
            c.check_and_insert("a", "3", t(NONCE_TTL_MS)),
            NonceOutcome::Fresh
        );
        assert_eq!(c.len_for("a"), 2);
    }

    proptest! {
        /// Eviction by time: a nonce is a replay exactly while younger than the lifetime,
        /// whatever else happened in between, and the bounds always hold.
        #[test]
        fn replay_iff_younger_than_ttl(
            ops in proptest::collection::vec((0u8..3, 0u8..4, 0i64..2_000_000), 1..200),
        ) {
            let limits = NonceCacheLimits { max_per_node: 3, max_total: 6, ..NonceCacheLimits::default() };
            let mut c = MemoryNonceCache::with_limits(limits);
            let mut model: BTreeMap<(u8, u8), i64> = BTreeMap::new();
            let mut now = 0i64;
            for (node, nonce, step) in ops {
                now += step;
                model.retain(|_, at| now - *at < NONCE_TTL_MS);
                let out = c.check_and_insert(&node.to_string(), &nonce.to_string(), t(now));
                let per_node = model.keys().filter(|k| k.0 == node).count();
                let expected = if model.contains_key(&(node, nonce)) {
                    NonceOutcome::Replayed
                } else if per_node >= 3 || model.len() >= 6 {
                    NonceOutcome::Full
                } else {
                    model.insert((node, nonce), now);
                    NonceOutcome::Fresh
                };
                prop_assert_eq!(out, expected);
                prop_assert_eq!(c.len(), model.len());
                prop_assert!(c.len() <= 6);
                prop_assert!(c.len_for(&node.to_string()) <= 3);
            }
        }
    }
}
