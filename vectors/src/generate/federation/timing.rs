//! Store-and-forward timing (v1.1 §15.6, v1.0 §14.4) and §11.6 bookkeeping.
//!
//! - `backoff-bounds`: `{retry_policy, failures}` → `{min_ms, max_ms}` of the jittered delay
//!   after the `failures`-th failed attempt.
//! - `retry-after-failure`: `{retry_policy, queued_at, now, failures, last_failure, draw}` →
//!   `{retry_at}`, or invalid with the `receipt.failed` reason once the TTL has ended.
//! - `classify-delivery-response`: `{status, error_code?}` → `"delivered"` or `"retry"`, or
//!   invalid with the code the failure receipt carries when the answer ends the item.
//! - `federated-meta`: `{received_meta, event_seq}` → the `meta` a receiving node stores.
//!
//! The spec fixes "exponential backoff" and the 72-hour default TTL; base, cap and the
//! jitter formula are inputs or `Interpretation`-flagged, so an implementation with other
//! defaults can still run the bounds vectors with the given policy.

use super::case;
use crate::generate::{Case, FileBuilder};
use serde_json::{Value, json};

const S156: &[&str] = &["v1.1 §15.6", "v1.0 §14.4"];
const QUEUED: &str = "2026-03-01T00:00:00Z";
const HOUR: i64 = 3_600_000;

fn policy() -> Value {
    json!({"base_delay_ms": 30_000, "max_delay_ms": 3_600_000, "ttl_ms": 72 * HOUR})
}

fn bounds() -> Vec<Case> {
    let t = |n: u32, lo: i64, hi: i64, comment: &str| {
        case(&format!("backoff.failure-{n}"), comment, S156, &["Backoff"])
            .input("failures", n)
            .valid_with(json!({"min_ms": lo, "max_ms": hi}))
    };
    vec![
        t(
            1,
            15_000,
            30_000,
            "after the first failure: nominal 30 s, jittered into [15 s, 30 s]",
        ),
        t(2, 30_000, 60_000, "doubles: nominal 60 s"),
        t(3, 60_000, 120_000, "nominal 120 s"),
        t(5, 240_000, 480_000, "nominal 8 min"),
        t(7, 960_000, 1_920_000, "nominal 32 min"),
        t(8, 1_800_000, 3_600_000, "nominal 64 min is capped at 1 h"),
        t(
            40,
            1_800_000,
            3_600_000,
            "far past the cap: still 1 h, no overflow",
        ),
        case(
            "backoff.odd-nominal",
            "an odd nominal delay: the floor of half is subtracted",
            S156,
            &["Backoff", "Interpretation"],
        )
        .input(
            "retry_policy",
            json!({"base_delay_ms": 1_001, "max_delay_ms": 1_000_000, "ttl_ms": 72 * HOUR}),
        )
        .input("failures", 1)
        .valid_with(json!({"min_ms": 501, "max_ms": 1_001})),
    ]
}

/// `QUEUED` + `ms` as the vectors write it.
fn after(ms: i64) -> String {
    loom_protocol::Timestamp::parse(QUEUED)
        .map(|t| t.plus_ms(ms).to_rfc3339())
        .unwrap_or_default()
}

fn retries() -> Vec<Case> {
    let t = |id: &str,
             comment: &str,
             flags: &[&str],
             now_ms: i64,
             failures: u32,
             last: &str,
             draw: u64| {
        case(id, comment, S156, flags)
            .input("queued_at", QUEUED)
            .input("now", after(now_ms))
            .input("failures", failures)
            .input("last_failure", last)
            .input("draw", draw)
    };
    let ttl = 72 * HOUR;
    vec![
        t("retry.first-min", "first failure, draw 0: the shortest jittered delay, 15 s", &["Backoff", "Interpretation"], 0, 1, "unreachable", 0)
            .valid_with(json!({"retry_at": "2026-03-01T00:00:15.000Z"})),
        t("retry.first-max", "first failure, draw 15000: the longest, 30 s", &["Backoff", "Interpretation"], 0, 1, "unreachable", 15_000)
            .valid_with(json!({"retry_at": "2026-03-01T00:00:30.000Z"})),
        t("retry.draw-wraps", "draw 15001 wraps to the shortest delay (draw mod 15001)", &["Backoff", "Interpretation"], 0, 1, "timeout", 15_001)
            .valid_with(json!({"retry_at": "2026-03-01T00:00:15.000Z"})),
        t("retry.third", "third failure at 10 min, draw 1000: 60 s + 1 s", &["Backoff", "Interpretation"], 600_000, 3, "http-503", 1_000)
            .valid_with(json!({"retry_at": "2026-03-01T00:11:01.000Z"})),
        t("retry.capped-by-ttl", "1 s before the TTL ends: the next attempt is moved to the deadline, where the item fails", &["Backoff", "Ttl"], ttl - 1_000, 30, "http-503", 0)
            .valid_with(json!({"retry_at": "2026-03-04T00:00:00.000Z"})),
        t("retry.last-ms", "1 ms before 72 h: not yet expired", &["Ttl"], ttl - 1, 60, "unreachable", 7)
            .valid_with(json!({"retry_at": "2026-03-04T00:00:00.000Z"})),
        t("retry.ttl-unreachable", "exactly 72 h after queueing, last attempt could not connect: NODE_UNREACHABLE", &["Ttl"], ttl, 60, "unreachable", 0)
            .invalid("NODE_UNREACHABLE"),
        t("retry.ttl-timeout", "72 h, last attempt reached the node but got no answer in time: DELIVERY_TIMEOUT", &["Ttl", "Interpretation"], ttl, 60, "timeout", 0)
            .invalid("DELIVERY_TIMEOUT"),
        t("retry.ttl-503", "72 h, last answer 503: the node was reachable, DELIVERY_TIMEOUT", &["Ttl", "Interpretation"], ttl, 60, "http-503", 0)
            .invalid("DELIVERY_TIMEOUT"),
        t("retry.ttl-429", "72 h, last answer 429: DELIVERY_TIMEOUT", &["Ttl", "Interpretation"], ttl, 60, "http-429", 0)
            .invalid("DELIVERY_TIMEOUT"),
        t("retry.past-ttl", "a day after the TTL ended", &["Ttl"], ttl + 24 * HOUR, 61, "unreachable", 0)
            .invalid("NODE_UNREACHABLE"),
        case("retry.short-ttl", "a node configured with a 1-hour TTL (configurable, §15.6) gives up after 1 h", S156, &["Ttl"])
            .input("retry_policy", json!({"base_delay_ms": 30_000, "max_delay_ms": 3_600_000, "ttl_ms": HOUR}))
            .input("queued_at", QUEUED).input("now", after(HOUR)).input("failures", 5).input("last_failure", "timeout").input("draw", 0)
            .invalid("DELIVERY_TIMEOUT"),
    ]
}

fn responses() -> Vec<Case> {
    let t = |id: &str, comment: &str, flags: &[&str], status: u16, code: Option<&str>| {
        let c = case(id, comment, &["v1.1 §15.6", "v1.1 §24.2"], flags).input("status", status);
        match code {
            Some(code) => c.input("error_code", code),
            None => c,
        }
    };
    let rc = &["ResponseClass"];
    let i = &["ResponseClass", "Interpretation"];
    vec![
        t(
            "response.202",
            "202 with a receipt: delivered",
            rc,
            202,
            None,
        )
        .valid_with("delivered"),
        t(
            "response.409-duplicate",
            "409 ENVELOPE_DUPLICATE: the peer has it already (an earlier answer was lost)",
            i,
            409,
            Some("ENVELOPE_DUPLICATE"),
        )
        .valid_with("delivered"),
        t("response.503", "503: try again", rc, 503, None).valid_with("retry"),
        t(
            "response.502-unreachable",
            "502 NODE_UNREACHABLE from a proxy in front of the node: try again",
            rc,
            502,
            Some("NODE_UNREACHABLE"),
        )
        .valid_with("retry"),
        t(
            "response.429",
            "429 RATE_LIMIT_EXCEEDED: the peer's §14.3 limit; try again later",
            rc,
            429,
            Some("RATE_LIMIT_EXCEEDED"),
        )
        .valid_with("retry"),
        t("response.408", "408: try again", rc, 408, None).valid_with("retry"),
        t(
            "response.401",
            "401 SIGNATURE_INVALID: the same request fails again; stop",
            i,
            401,
            Some("SIGNATURE_INVALID"),
        )
        .invalid("SIGNATURE_INVALID"),
        t(
            "response.403-policy",
            "403 CAPABILITY_DENIED (the peer's policy refuses us): stop",
            i,
            403,
            Some("CAPABILITY_DENIED"),
        )
        .invalid("CAPABILITY_DENIED"),
        t(
            "response.400-no-body",
            "400 without a §24.1 body: ENVELOPE_INVALID",
            i,
            400,
            None,
        )
        .invalid("ENVELOPE_INVALID"),
        t(
            "response.404",
            "404: the peer has no delivery endpoint; NODE_UNREACHABLE",
            i,
            404,
            None,
        )
        .invalid("NODE_UNREACHABLE"),
        t(
            "response.413",
            "413 PAYLOAD_TOO_LARGE: stop (a smaller batch is another delivery)",
            i,
            413,
            Some("PAYLOAD_TOO_LARGE"),
        )
        .invalid("PAYLOAD_TOO_LARGE"),
        t(
            "response.409-locked",
            "409 THREAD_LOCKED: a real refusal, not a duplicate",
            i,
            409,
            Some("THREAD_LOCKED"),
        )
        .invalid("THREAD_LOCKED"),
    ]
}

fn metas() -> Vec<Case> {
    let spec = &["v1.1 §11.6"];
    let t = |id: &str, comment: &str, flags: &[&str], received: Value, seq: u64| {
        case(id, comment, spec, flags)
            .input("received_meta", received)
            .input("event_seq", seq)
    };
    let es = &["EventSeq"];
    vec![
        t("meta.preserve-origin", "origin_event_seq 7 is preserved; event_seq is this node's 42", es, json!({"event_seq": 7, "origin_event_seq": 7}), 42)
            .valid_with(json!({"event_seq": 42, "origin_event_seq": 7})),
        t("meta.no-origin", "no origin_event_seq received: none is invented", es, json!({"event_seq": 7}), 3)
            .valid_with(json!({"event_seq": 3})),
        t("meta.absent", "no meta at all", es, Value::Null, 1).valid_with(json!({"event_seq": 1})),
        t("meta.sender-bookkeeping-dropped", "the sender's other meta members are unsigned local bookkeeping and are not kept", &["EventSeq", "Interpretation"], json!({"origin_event_seq": 5, "quarantined": false, "received_at": "2026-03-01T12:00:00Z"}), 9)
            .valid_with(json!({"event_seq": 9, "origin_event_seq": 5})),
        t("meta.bad-origin", "origin_event_seq -1 is not a sequence number", &["EventSeq", "Interpretation"], json!({"origin_event_seq": -1}), 9).invalid("ENVELOPE_INVALID"),
        t("meta.string-origin", "origin_event_seq \"7\" is a string", &["EventSeq", "Interpretation"], json!({"origin_event_seq": "7"}), 9).invalid("ENVELOPE_INVALID"),
    ]
}

/// Adds the timing and bookkeeping groups.
pub fn add(f: FileBuilder) -> FileBuilder {
    f.group("backoff-bounds", json!({"retry_policy": policy()}))
        .tests(bounds())
        .group("retry-after-failure", json!({"retry_policy": policy()}))
        .tests(retries())
        .group("classify-delivery-response", Value::Null)
        .tests(responses())
        .group("federated-meta", Value::Null)
        .tests(metas())
}
