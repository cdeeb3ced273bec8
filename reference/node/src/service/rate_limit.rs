//! Rate limiting (v1.1 §14.3): fixed one-minute windows per (class, key), counted against the
//! injected clock so limits behave the same in tests and the simulator.

use super::Service;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// What a limit is counted per (§14.3's suggested classes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LimitClass {
    /// `POST /v1/envelopes` (and thread ops) per identity.
    Envelopes,
    /// `POST /v1/auth/*` and registration per client IP.
    Auth,
    /// `GET /v1/threads*` per identity.
    ThreadReads,
    /// Federation deliveries per sending node.
    Federation,
    /// WebSocket inbound messages per connection.
    WsMessages,
}

/// The window length.
pub const WINDOW_MS: i64 = 60_000;

/// A limiter decision, with what the `X-LOOM-RateLimit-*` headers report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    /// Whether the request may proceed.
    pub allowed: bool,
    /// The limit per window.
    pub limit: u32,
    /// Requests left in this window.
    pub remaining: u32,
    /// Seconds until the window resets.
    pub reset_secs: i64,
}

/// Window counters.
#[derive(Debug, Default)]
pub struct RateLimiter(Mutex<BTreeMap<(LimitClass, String), (i64, u32)>>);

impl Service {
    /// The configured limit of `class` (0 = off).
    pub fn rate_limit_of(&self, class: LimitClass) -> u32 {
        let r = &self.config.rate_limits;
        match class {
            LimitClass::Envelopes => r.envelopes_per_identity,
            LimitClass::Auth => r.auth_per_ip,
            LimitClass::ThreadReads => r.thread_reads_per_identity,
            LimitClass::Federation => r.federation_per_node,
            LimitClass::WsMessages => r.ws_messages_per_connection,
        }
    }

    /// Counts one request of `class` by `key`; `None` when the class is unlimited.
    pub fn rate_check(&self, class: LimitClass, key: &str) -> Option<RateDecision> {
        let limit = self.rate_limit_of(class);
        if limit == 0 {
            return None;
        }
        let now = self.env.now().unix_ms();
        let window = now - now.rem_euclid(WINDOW_MS);
        let mut map = self
            .rate_limiter
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // Drop windows that ended, so memory stays bounded by active keys.
        if map.len() > 10_000 {
            map.retain(|_, (w, _)| *w == window);
        }
        let entry = map.entry((class, key.to_owned())).or_insert((window, 0));
        if entry.0 != window {
            *entry = (window, 0);
        }
        let allowed = entry.1 < limit || self.deviations.api.disable_rate_limit;
        if entry.1 < limit {
            entry.1 += 1;
        }
        Some(RateDecision {
            allowed,
            limit,
            remaining: limit - entry.1,
            reset_secs: (window + WINDOW_MS - now + 999) / 1000,
        })
    }
}
