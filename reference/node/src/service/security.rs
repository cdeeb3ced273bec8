//! Security events: v1.1 §23.2 "Nodes MUST … log security events (signature failures, scope
//! violations)" and §25.1, whose audit log holds "security events". A refused check whose
//! code is a signature failure (`SIGNATURE_INVALID`: forged or replayed federation requests,
//! bad envelope signatures, bogus tokens) or a scope violation (`DELEGATION_INVALID`,
//! `CAPABILITY_DENIED`: spoofed senders, denied operations) becomes one structured log line
//! (target `loom::security`, level `warn`) and one audit row `security.{kind}`.
//!
//! Unauthenticated peers can provoke these at will, so they are rate-limited per (kind,
//! code, source): the first event of each minute is recorded, the rest are counted and reported as
//! `suppressed` with the next one recorded. The table of sources is bounded; beyond it, every
//! new source shares one entry (`*`), so neither memory nor the audit log grows with the
//! number of forged identities.

use super::Service;
use crate::error::ApiError;
use loom_protocol::ErrorCode;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// How long one recorded event stands for its (kind, source).
const WINDOW_MS: i64 = 60_000;
/// Sources tracked at once; beyond, new sources share the `*` entry.
const MAX_SOURCES: usize = 4_096;

/// The rate-limit table.
#[derive(Debug, Default)]
pub(crate) struct SecurityLog {
    windows: Mutex<BTreeMap<(&'static str, &'static str, String), Window>>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start_ms: i64,
    suppressed: u64,
}

impl SecurityLog {
    /// Whether an event of `kind` with `code` from `source` at `now_ms` is recorded; if so,
    /// how many were suppressed since the last recorded one.
    fn admit(
        &self,
        kind: &'static str,
        code: &'static str,
        source: &str,
        now_ms: i64,
    ) -> Option<u64> {
        let mut w = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let known = |w: &BTreeMap<_, _>| w.contains_key(&(kind, code, source.to_owned()));
        if w.len() >= MAX_SOURCES && !known(&w) {
            w.retain(|_, v| now_ms - v.start_ms < WINDOW_MS || v.suppressed > 0);
        }
        let source = if w.len() >= MAX_SOURCES && !known(&w) {
            "*"
        } else {
            source
        };
        match w.get_mut(&(kind, code, source.to_owned())) {
            Some(v) if now_ms - v.start_ms < WINDOW_MS => {
                v.suppressed += 1;
                None
            }
            Some(v) => {
                let suppressed = v.suppressed;
                *v = Window {
                    start_ms: now_ms,
                    suppressed: 0,
                };
                Some(suppressed)
            }
            None => {
                w.insert(
                    (kind, code, source.to_owned()),
                    Window {
                        start_ms: now_ms,
                        suppressed: 0,
                    },
                );
                Some(0)
            }
        }
    }
}

/// Whether `code` is a security event (§23.2: signature failures, scope violations).
fn is_security_event(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::SignatureInvalid | ErrorCode::DelegationInvalid | ErrorCode::CapabilityDenied
    )
}

impl Service {
    /// Records `e`, the refusal of a check of `kind` (`envelope`, `federation`, …) for
    /// `source` (the identity or node that made the request, as claimed) about `subject`,
    /// when it is a security event and its (kind, source) is not rate-limited. Never fails
    /// the request: a recording error is logged.
    pub(crate) fn security_event(
        &self,
        kind: &'static str,
        source: &str,
        subject: &str,
        e: &ApiError,
    ) {
        if !is_security_event(e.code) {
            return;
        }
        let now = self.env.now().unix_ms();
        let Some(suppressed) = self.security.admit(kind, e.code.as_str(), source, now) else {
            return;
        };
        tracing::warn!(
            target: "loom::security",
            kind,
            source,
            subject,
            code = e.code.as_str(),
            field = %e.field,
            section = %e.section,
            suppressed,
            "security event: {}",
            e.reason
        );
        let details = json!({"code": e.code.as_str(), "field": e.field, "reason": e.reason,
            "section": e.section, "suppressed": suppressed});
        let recorded = self.store.begin().map_err(ApiError::from).and_then(|tx| {
            self.audit(&tx, source, &format!("security.{kind}"), subject, details)?;
            tx.commit().map_err(ApiError::from)
        });
        if let Err(err) = recorded {
            tracing::warn!(target: "loom::security", error = %err, "security event not audited");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_event_of_a_window_is_recorded_with_the_count_suppressed_before_it() {
        let log = SecurityLog::default();
        let sig = "SIGNATURE_INVALID";
        assert_eq!(log.admit("federation", sig, "evil.test", 0), Some(0));
        assert_eq!(log.admit("federation", sig, "evil.test", 10), None);
        assert_eq!(log.admit("federation", sig, "evil.test", 20), None);
        assert_eq!(log.admit("federation", sig, "other.test", 20), Some(0));
        assert_eq!(log.admit("envelope", sig, "evil.test", 20), Some(0));
        assert_eq!(
            log.admit("federation", "CAPABILITY_DENIED", "evil.test", 20),
            Some(0)
        );
        assert_eq!(
            log.admit("federation", sig, "evil.test", WINDOW_MS),
            Some(2)
        );
        assert_eq!(
            log.admit("federation", sig, "evil.test", WINDOW_MS + 1),
            None
        );
    }

    #[test]
    fn forged_sources_beyond_the_table_share_one_entry() {
        let log = SecurityLog::default();
        let sig = "SIGNATURE_INVALID";
        for i in 0..MAX_SOURCES {
            assert_eq!(
                log.admit("federation", sig, &format!("n{i}.test"), 0),
                Some(0)
            );
        }
        assert_eq!(log.admit("federation", sig, "late1.test", 1), Some(0));
        assert_eq!(log.admit("federation", sig, "late2.test", 2), None);
        let w = log.windows.lock().unwrap();
        assert!(w.len() <= MAX_SOURCES + 1, "{}", w.len());
        assert!(w.contains_key(&("federation", sig, "*".to_owned())));
    }
}
