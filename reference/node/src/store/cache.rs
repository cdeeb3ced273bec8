//! In-memory caches for the read side of authentication (issue 14): bearer token → token
//! record and identity → registered type and active signing keys. Every authenticated
//! request and every admitted envelope needs them; without a cache each is a database read.
//!
//! Exact invalidation: a token or key changes only through the store functions that take a
//! [`Tx`](super::Tx) ([`super::tokens`], [`super::identities`]); each records what it made
//! stale in the transaction, and [`Tx::commit`](super::Tx::commit) drops those entries
//! after `COMMIT` returned and before it releases the writer. A rolled-back transaction
//! drops nothing (nothing changed).
//!
//! Readers race writers, so a fill is conditional: a reader takes the cache's generation
//! before reading the database and fills only if no invalidation happened since
//! ([`Shard::fill`]). A reader that read the old row before a commit therefore cannot put it
//! back after the commit's invalidation; a reader that starts after the invalidation reads
//! the committed row. So once a revocation has been answered, no later request sees the
//! revoked token or key.
//!
//! Bounded: each cache holds at most its capacity, evicting the oldest fill first (FIFO by
//! an insertion counter, so nothing depends on hash order). Only hits are cached: an unknown
//! token or identity is read from the database every time, so guesses cannot fill the cache.
//!
//! Reads inside a write transaction go to the database, never to the cache (a transaction
//! must see its own writes).

use ed25519_dalek::VerifyingKey;
use loom_protocol::session::TokenRecord;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Most bearer tokens kept.
pub const TOKEN_CAPACITY: usize = 4096;
/// Most identities kept.
pub const IDENTITY_CAPACITY: usize = 4096;

/// What the directory knows of one registered identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityKeys {
    /// The registered type (`human`, `agent`, …).
    pub kind: String,
    /// Active signing keys `(key_id, key)`, by key id.
    pub signing: Vec<(String, VerifyingKey)>,
}

impl IdentityKeys {
    /// The active signing key `key_id`.
    pub fn key(&self, key_id: &str) -> Option<VerifyingKey> {
        self.signing
            .iter()
            .find(|(k, _)| k == key_id)
            .map(|(_, key)| *key)
    }
}

/// A change that makes cached entries stale, recorded by a transaction.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stale {
    /// One token (by hash) changed.
    Token(String),
    /// Every token backed by `(identity, key_id)` changed (key revocation).
    TokensOfKey(String, String),
    /// An identity's row or keys changed.
    Identity(String),
}

/// One bounded map with a generation counter.
#[derive(Debug)]
pub struct Shard<V> {
    inner: Mutex<Inner<V>>,
    capacity: usize,
}

#[derive(Debug)]
struct Inner<V> {
    map: BTreeMap<String, (u64, V)>,
    order: BTreeMap<u64, String>,
    next: u64,
    generation: u64,
}

impl<V: Clone> Shard<V> {
    fn new(capacity: usize) -> Shard<V> {
        Shard {
            inner: Mutex::new(Inner {
                map: BTreeMap::new(),
                order: BTreeMap::new(),
                next: 0,
                generation: 0,
            }),
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<V>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached value of `key`.
    pub fn get(&self, key: &str) -> Option<V> {
        self.lock().map.get(key).map(|(_, v)| v.clone())
    }

    /// The generation to pass to [`Shard::fill`]; take it before reading the database.
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// Caches `value` read from the database, unless an invalidation happened since
    /// `generation` was taken (the value may predate a commit).
    pub fn fill(&self, generation: u64, key: &str, value: V) {
        let mut g = self.lock();
        if g.generation != generation {
            return;
        }
        let seq = g.next;
        g.next += 1;
        if let Some((old, _)) = g.map.insert(key.to_owned(), (seq, value)) {
            g.order.remove(&old);
        }
        g.order.insert(seq, key.to_owned());
        while g.map.len() > self.capacity {
            let Some((_, oldest)) = g.order.pop_first() else {
                break;
            };
            g.map.remove(&oldest);
        }
    }

    /// Drops every entry `stale` says, and moves the generation on.
    fn invalidate(&self, stale: impl Fn(&str, &V) -> bool) {
        let mut g = self.lock();
        g.generation += 1;
        let gone: Vec<(String, u64)> = g
            .map
            .iter()
            .filter(|(k, (_, v))| stale(k, v))
            .map(|(k, (seq, _))| (k.clone(), *seq))
            .collect();
        for (k, seq) in gone {
            g.map.remove(&k);
            g.order.remove(&seq);
        }
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The caches of the authentication read side.
#[derive(Debug)]
pub struct AuthCache {
    /// Token hash → record.
    pub tokens: Shard<TokenRecord>,
    /// Identity (wire form) → type and active signing keys.
    pub identities: Shard<IdentityKeys>,
}

impl Default for AuthCache {
    fn default() -> Self {
        AuthCache {
            tokens: Shard::new(TOKEN_CAPACITY),
            identities: Shard::new(IDENTITY_CAPACITY),
        }
    }
}

impl AuthCache {
    /// Applies what a committed transaction made stale.
    pub fn apply(&self, stale: &[Stale]) {
        for s in stale {
            match s {
                Stale::Token(hash) => self.tokens.invalidate(|k, _| k == hash),
                Stale::TokensOfKey(identity, key_id) => self
                    .tokens
                    .invalidate(|_, t| t.identity == *identity && t.key_id == *key_id),
                Stale::Identity(id) => self.identities.invalidate(|k, _| k == id),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fill_that_raced_an_invalidation_is_dropped() {
        let s: Shard<u32> = Shard::new(8);
        let before = s.generation();
        s.invalidate(|k, _| k == "a");
        s.fill(before, "a", 1);
        assert_eq!(
            s.get("a"),
            None,
            "a value read before the commit must not be cached"
        );
        let after = s.generation();
        s.fill(after, "a", 2);
        assert_eq!(s.get("a"), Some(2));
        s.invalidate(|k, _| k == "a");
        assert_eq!(s.get("a"), None);
    }

    #[test]
    fn the_oldest_fill_goes_first_when_full() {
        let s: Shard<u32> = Shard::new(3);
        for (i, k) in ["a", "b", "c", "d"].into_iter().enumerate() {
            let g = s.generation();
            s.fill(g, k, u32::try_from(i).unwrap());
        }
        assert_eq!(s.len(), 3);
        assert_eq!(s.get("a"), None);
        assert_eq!(s.get("d"), Some(3));
        // A refill moves a key to the back.
        let g = s.generation();
        s.fill(g, "b", 9);
        let g = s.generation();
        s.fill(g, "e", 4);
        assert_eq!(s.get("b"), Some(9));
        assert_eq!(s.get("c"), None);
    }

    #[test]
    fn key_revocation_drops_exactly_the_tokens_it_backs() {
        let c = AuthCache::default();
        let rec = |id: &str, key: &str| TokenRecord {
            kind: Some(loom_protocol::session::TokenKind::Access),
            identity: id.into(),
            key_id: key.into(),
            expires_at: None,
            revoked: false,
        };
        for (h, id, key) in [("h1", "a", "k1"), ("h2", "a", "k2"), ("h3", "b", "k1")] {
            let g = c.tokens.generation();
            c.tokens.fill(g, h, rec(id, key));
        }
        c.apply(&[Stale::TokensOfKey("a".into(), "k1".into())]);
        assert_eq!(c.tokens.get("h1"), None);
        assert!(c.tokens.get("h2").is_some());
        assert!(c.tokens.get("h3").is_some());
    }
}
