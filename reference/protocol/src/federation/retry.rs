//! Store-and-forward timing (v1.1 §15.6; v1.0 §14.4) as pure functions of the injected
//! clock and a caller-supplied random draw:
//! - "Sending node queues with exponential backoff": after the n-th failed attempt the next
//!   one waits `min(base · 2^(n-1), max)` ms with equal jitter, i.e. a delay drawn from
//!   `[nominal - ⌊nominal/2⌋, nominal]` ([`backoff_delay_ms`]); the draw comes from the
//!   caller's seeded RNG so a run is reproducible;
//! - "Default TTL 72 hours (configurable)": an item expires `ttl` after it was queued, the
//!   instant itself included; retries are never scheduled past that instant;
//! - "On TTL expiry: generate `receipt.failed` with reason `NODE_UNREACHABLE` or
//!   `DELIVERY_TIMEOUT`": `NODE_UNREACHABLE` when the last attempt could not reach the node
//!   (name resolution, connection or TLS failed), `DELIVERY_TIMEOUT` when the node was
//!   reached but the delivery did not complete (no answer in time, 5xx, 429) or no attempt
//!   was made (our reading of the two §24.2 descriptions).
//!
//! Answers that retrying cannot change (a 4xx other than 408/425/429) end the item at once;
//! its failure receipt carries the peer's error code. A 409 `ENVELOPE_DUPLICATE` means the
//! peer already has the envelope (an earlier attempt whose answer was lost): delivered.

use crate::address::Address;
use crate::error::ErrorCode;
use crate::time::Timestamp;
use serde_json::{Value, json};

/// §15.6's default time-to-live: 72 hours.
pub const DEFAULT_TTL_MS: i64 = 72 * 3_600_000;

/// Retry timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Delay after the first failure, before jitter.
    pub base_delay_ms: i64,
    /// Longest delay, before jitter.
    pub max_delay_ms: i64,
    /// Time-to-live from queueing (§15.6, default 72 h).
    pub ttl_ms: i64,
}

impl Default for RetryPolicy {
    /// 30 s doubling to 1 h, 72 h TTL.
    fn default() -> Self {
        RetryPolicy {
            base_delay_ms: 30_000,
            max_delay_ms: 3_600_000,
            ttl_ms: DEFAULT_TTL_MS,
        }
    }
}

/// Why an attempt failed, for the retry decision and the failure reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The node could not be reached: name resolution, connection or TLS failed.
    Unreachable,
    /// The node was reached but no answer came in time.
    Timeout,
    /// The node answered with a status worth retrying (408, 425, 429, 5xx, 1xx, 3xx).
    Transient(u16),
}

/// What one delivery attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    /// The peer has the envelopes (2xx, or 409 `ENVELOPE_DUPLICATE`).
    Delivered,
    /// Try again later.
    Retry(FailureKind),
    /// The peer refused for good, with this code.
    Rejected(ErrorCode),
}

/// Classifies an HTTP answer: `status` and the §24.1 `error.code` of its body, if any.
pub fn classify_response(status: u16, error_code: Option<&str>) -> AttemptResult {
    let code = error_code.and_then(ErrorCode::parse);
    match status {
        200..=299 => AttemptResult::Delivered,
        409 if code == Some(ErrorCode::EnvelopeDuplicate) => AttemptResult::Delivered,
        408 | 425 | 429 => AttemptResult::Retry(FailureKind::Transient(status)),
        400..=499 => AttemptResult::Rejected(code.unwrap_or(match status {
            401 => ErrorCode::SignatureInvalid,
            403 => ErrorCode::CapabilityDenied,
            404 => ErrorCode::NodeUnreachable,
            409 => ErrorCode::EnvelopeDuplicate,
            413 => ErrorCode::PayloadTooLarge,
            _ => ErrorCode::EnvelopeInvalid,
        })),
        _ => AttemptResult::Retry(FailureKind::Transient(status)),
    }
}

/// The reason a `receipt.failed` gives when the TTL ends (§15.6), from the last failure.
pub fn expiry_reason(last: Option<FailureKind>) -> ErrorCode {
    match last {
        Some(FailureKind::Unreachable) => ErrorCode::NodeUnreachable,
        _ => ErrorCode::DeliveryTimeout,
    }
}

/// The delay after the `failures`-th failure (≥ 1) before jitter: `min(base · 2^(n-1), max)`.
pub fn nominal_delay_ms(failures: u32, policy: &RetryPolicy) -> i64 {
    let shift = failures.saturating_sub(1).min(62);
    policy
        .base_delay_ms
        .max(0)
        .checked_mul(1i64 << shift)
        .unwrap_or(i64::MAX)
        .min(policy.max_delay_ms.max(0))
}

/// The `[min, max]` a jittered delay after the `failures`-th failure falls in.
pub fn backoff_bounds(failures: u32, policy: &RetryPolicy) -> (i64, i64) {
    let d = nominal_delay_ms(failures, policy);
    (d - d / 2, d)
}

/// The jittered delay: `nominal - ⌊nominal/2⌋ + draw mod (⌊nominal/2⌋ + 1)`, where `draw`
/// is the next `u64` of the caller's seeded RNG.
pub fn backoff_delay_ms(failures: u32, policy: &RetryPolicy, draw: u64) -> i64 {
    let d = nominal_delay_ms(failures, policy);
    let half = d / 2;
    let span = u64::try_from(half).unwrap_or(0) + 1;
    d - half + i64::try_from(draw % span).unwrap_or(0)
}

/// The instant an item queued at `queued_at` expires.
pub fn deadline(queued_at: Timestamp, policy: &RetryPolicy) -> Timestamp {
    queued_at.plus_ms(policy.ttl_ms)
}

/// The next step for a queued item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// Attempt again at this instant (the deadline itself means: wake then to give up).
    RetryAt(Timestamp),
    /// Stop and emit `receipt.failed` with this reason.
    GiveUp(ErrorCode),
}

/// What to do after an attempt failed (`failures` counts it) at `now`.
pub fn after_failure(
    queued_at: Timestamp,
    failures: u32,
    last: FailureKind,
    now: Timestamp,
    policy: &RetryPolicy,
    draw: u64,
) -> NextStep {
    let end = deadline(queued_at, policy);
    if now >= end {
        return NextStep::GiveUp(expiry_reason(Some(last)));
    }
    let next = now.plus_ms(backoff_delay_ms(failures, policy, draw));
    NextStep::RetryAt(next.min(end))
}

/// Before an attempt at `now`: `Some(reason)` when the item has expired and must fail
/// instead (`last` is the last failure, `None` if it was never attempted).
pub fn expired(
    queued_at: Timestamp,
    last: Option<FailureKind>,
    now: Timestamp,
    policy: &RetryPolicy,
) -> Option<ErrorCode> {
    (now >= deadline(queued_at, policy)).then(|| expiry_reason(last))
}

/// The `content` of the `receipt.failed@v1` receipt envelope (v1.1 §15.6, §24.3, Appendix
/// B; parameters after v1.0 §21.3) that tells the sender its envelope did not reach
/// `recipient`. `reason` is the §24.2 code; it is written as `reason` (v1.1 §15.6's word)
/// and `failure_reason` (v1.0 §21.3's member).
pub fn failed_receipt_content(
    envelope_id: &str,
    recipient: &Address,
    reason: ErrorCode,
    at: Timestamp,
) -> Value {
    json!({
        "human": {
            "text": format!("Delivery of {envelope_id} to {recipient} failed: {reason}"),
            "format": "plaintext",
        },
        "structured": {
            "intent": "receipt.failed@v1",
            "parameters": {
                "envelope_id": envelope_id,
                "recipient": recipient.to_string(),
                "status": "failed",
                "reason": reason.as_str(),
                "failure_reason": reason.as_str(),
                "timestamp": at.to_rfc3339(),
            }
        },
        "encrypted": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_unix_ms(1_772_366_400_000 + ms)
    }

    #[test]
    fn the_schedule_doubles_to_the_cap() {
        let p = RetryPolicy::default();
        let nominal: Vec<i64> = (1..=9).map(|n| nominal_delay_ms(n, &p)).collect();
        assert_eq!(
            nominal,
            vec![
                30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000, 3_600_000
            ]
        );
        assert_eq!(nominal_delay_ms(0, &p), 30_000);
        assert_eq!(nominal_delay_ms(u32::MAX, &p), 3_600_000);
        assert_eq!(backoff_bounds(1, &p), (15_000, 30_000));
        assert_eq!(backoff_delay_ms(1, &p, 0), 15_000);
        assert_eq!(backoff_delay_ms(1, &p, 15_000), 30_000);
        assert_eq!(backoff_delay_ms(1, &p, 15_001), 15_000);
    }

    #[test]
    fn the_ttl_ends_at_72_hours_with_the_right_reason() {
        let p = RetryPolicy::default();
        let end = DEFAULT_TTL_MS;
        assert_eq!(expired(t(0), None, t(end - 1), &p), None);
        assert_eq!(
            expired(t(0), None, t(end), &p),
            Some(ErrorCode::DeliveryTimeout)
        );
        assert_eq!(
            expired(t(0), Some(FailureKind::Unreachable), t(end), &p),
            Some(ErrorCode::NodeUnreachable)
        );
        assert_eq!(
            after_failure(t(0), 3, FailureKind::Transient(503), t(end), &p, 0),
            NextStep::GiveUp(ErrorCode::DeliveryTimeout)
        );
        // A retry that would land after the deadline is moved to it.
        assert_eq!(
            after_failure(t(0), 20, FailureKind::Unreachable, t(end - 1000), &p, 0),
            NextStep::RetryAt(t(end))
        );
    }

    #[test]
    fn answers_are_classified() {
        assert_eq!(classify_response(202, None), AttemptResult::Delivered);
        assert_eq!(
            classify_response(409, Some("ENVELOPE_DUPLICATE")),
            AttemptResult::Delivered
        );
        assert_eq!(
            classify_response(409, Some("THREAD_LOCKED")),
            AttemptResult::Rejected(ErrorCode::ThreadLocked)
        );
        assert_eq!(
            classify_response(503, None),
            AttemptResult::Retry(FailureKind::Transient(503))
        );
        assert_eq!(
            classify_response(429, Some("RATE_LIMIT_EXCEEDED")),
            AttemptResult::Retry(FailureKind::Transient(429))
        );
        assert_eq!(
            classify_response(401, None),
            AttemptResult::Rejected(ErrorCode::SignatureInvalid)
        );
        assert_eq!(
            classify_response(400, Some("NOT_A_CODE")),
            AttemptResult::Rejected(ErrorCode::EnvelopeInvalid)
        );
        assert_eq!(
            classify_response(302, None),
            AttemptResult::Retry(FailureKind::Transient(302))
        );
    }

    #[test]
    fn the_failed_receipt_names_intent_and_reason() {
        let c = failed_receipt_content(
            "env_01JN0000000000000000000001",
            &Address::parse("loom://bob@b.test").unwrap(),
            ErrorCode::NodeUnreachable,
            t(0),
        );
        assert_eq!(c["structured"]["intent"], "receipt.failed@v1");
        assert_eq!(c["structured"]["parameters"]["reason"], "NODE_UNREACHABLE");
        assert_eq!(
            c["structured"]["parameters"]["recipient"],
            "loom://bob@b.test"
        );
    }

    proptest! {
        /// Every jittered delay is within its bounds, bounds never exceed the cap, and no
        /// retry is scheduled after the deadline.
        #[test]
        fn delays_stay_in_bounds(n in 0u32..200, draw in any::<u64>(), base in 0i64..100_000, cap in 0i64..10_000_000, now in 0i64..DEFAULT_TTL_MS) {
            let p = RetryPolicy { base_delay_ms: base, max_delay_ms: cap, ..RetryPolicy::default() };
            let (lo, hi) = backoff_bounds(n, &p);
            let d = backoff_delay_ms(n, &p, draw);
            prop_assert!(lo <= d && d <= hi && hi <= cap.max(0));
            match after_failure(t(0), n, FailureKind::Timeout, t(now), &p, draw) {
                NextStep::RetryAt(at) => prop_assert!(at <= deadline(t(0), &p) && at >= t(now)),
                NextStep::GiveUp(_) => prop_assert!(false, "gave up before the deadline"),
            }
        }
    }
}
