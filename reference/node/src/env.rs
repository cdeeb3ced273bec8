//! The node's environment (DESIGN.md §3): injected time and seeded randomness. Only `main`
//! builds one from the system clock; tests and the simulator pass their own, so the same seed
//! gives the same IDs, tokens and bytes.

use loom_protocol::Timestamp;
use loom_protocol::clock::Clock;
use loom_protocol::id::IdGenerator;
use loom_protocol::keys::b64url_encode;
use std::sync::{Arc, Mutex, MutexGuard};

/// Time and randomness for one node.
#[derive(Debug, Clone)]
pub struct Env {
    clock: Arc<dyn Clock>,
    ids: Arc<Mutex<IdGenerator<Arc<dyn Clock>>>>,
}

impl Env {
    /// An environment reading `clock` and drawing randomness from a ChaCha20 RNG seeded `seed`.
    pub fn new(clock: Arc<dyn Clock>, seed: u64) -> Env {
        Env {
            ids: Arc::new(Mutex::new(IdGenerator::new(clock.clone(), seed))),
            clock,
        }
    }

    /// The current time.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The clock, for protocol functions that take one.
    pub fn clock(&self) -> &dyn Clock {
        &*self.clock
    }

    /// The ID generator (ULIDs from this clock and RNG).
    pub fn ids(&self) -> MutexGuard<'_, IdGenerator<Arc<dyn Clock>>> {
        self.ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh secret: `prefix` + base64url of 32 random bytes (tokens, nonces).
    pub fn secret(&self, prefix: &str) -> String {
        format!("{prefix}{}", b64url_encode(&self.ids().bytes32()))
    }

    /// A request id `req_<ULID>` (v1.1 §24.1).
    pub fn request_id(&self) -> String {
        format!("req_{}", self.ids().ulid())
    }
}
