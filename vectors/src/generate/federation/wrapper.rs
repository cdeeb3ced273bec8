//! Kind `parse-delivery-wrapper`: the receiver reads the raw body of `POST
//! /v1/federation/deliver` whose `X-LOOM-Node` is `header_node`, at `now`. Valid output:
//! `{sender_node (normalized), delivery_id (or null), envelope_count}`.

use super::{E1, NOW, TS, case, env};
use crate::generate::{Case, FileBuilder};
use serde_json::{Map, Value, json};

const S154: &[&str] = &["v1.1 §15.4"];
const S155: &[&str] = &["v1.1 §15.5", "v1.1 §15.4"];
const SENDER: &[&str] = &["v1.1 §15.4", "v1.1 §15.3"];
const BAD: &str = "ENVELOPE_INVALID";
const SIG: &str = "SIGNATURE_INVALID";
const TOO_LARGE: &str = "PAYLOAD_TOO_LARGE";

fn base() -> Map<String, Value> {
    json!({"loom": "1.1", "sender_node": "a.test", "delivery_id": "fdel_01JN0000000000000000000000",
        "timestamp": TS, "envelopes": [env(E1, "loom://alice@a.test")]})
    .as_object()
    .cloned()
    .unwrap_or_default()
}

fn with(name: &str, v: Value) -> String {
    let mut m = base();
    m.insert(name.into(), v);
    Value::Object(m).to_string()
}

fn without(name: &str) -> String {
    let mut m = base();
    m.remove(name);
    Value::Object(m).to_string()
}

fn envs(n: usize) -> Value {
    Value::Array(
        (0..n)
            .map(|i| {
                env(
                    &format!("env_01JN00000000000000000{i:05}"),
                    "loom://alice@a.test",
                )
            })
            .collect(),
    )
}

fn ok(id: &str, comment: &str, spec: &[&str], flags: &[&str], body: String, out: Value) -> Case {
    case(id, comment, spec, flags)
        .input("body", body)
        .valid_with(out)
}

fn bad(id: &str, comment: &str, spec: &[&str], flags: &[&str], body: String, code: &str) -> Case {
    case(id, comment, spec, flags)
        .input("body", body)
        .invalid(code)
}

fn out(sender: &str, delivery_id: Option<&str>, count: usize) -> Value {
    json!({"sender_node": sender, "delivery_id": delivery_id, "envelope_count": count})
}

const DLV: Option<&str> = Some("fdel_01JN0000000000000000000000");

fn valid() -> Vec<Case> {
    let w = &["Wrapper"];
    vec![
        ok(
            "wrapper.valid.basic",
            "the §15.4 members with one envelope, sender_node equal to X-LOOM-Node",
            S154,
            w,
            Value::Object(base()).to_string(),
            out("a.test", DLV, 1),
        ),
        ok(
            "wrapper.valid.no-delivery-id",
            "§15.4's example body has no delivery_id; it is optional",
            S154,
            &["Wrapper", "Interpretation"],
            without("delivery_id"),
            out("a.test", None, 1),
        ),
        ok(
            "wrapper.valid.delivery-id-null",
            "a null delivery_id reads as absent",
            S154,
            &["Wrapper", "Interpretation"],
            with("delivery_id", Value::Null),
            out("a.test", None, 1),
        ),
        ok(
            "wrapper.valid.hundred-envelopes",
            "100 envelopes: the largest wrapper the existing node sends",
            S154,
            &["Wrapper", "Interpretation"],
            with("envelopes", envs(100)),
            out("a.test", DLV, 100),
        ),
        ok(
            "wrapper.valid.sender-node-case",
            "sender_node \"A.Test.\" names the same node as X-LOOM-Node a.test (DNS names are case-insensitive; the trailing dot is the root)",
            SENDER,
            &["SenderMismatch"],
            with("sender_node", "A.Test.".into()),
            out("a.test", DLV, 1),
        ),
        case(
            "wrapper.valid.header-node-case",
            "X-LOOM-Node \"A.TEST\" against sender_node a.test",
            SENDER,
            &["SenderMismatch"],
        )
        .input("header_node", "A.TEST")
        .input("body", Value::Object(base()).to_string())
        .valid_with(out("a.test", DLV, 1)),
        ok(
            "wrapper.valid.timestamp-5min-past",
            "a wrapper timestamp exactly 5 minutes old is fresh (±5 minutes, bounds inclusive)",
            S155,
            &["Freshness"],
            with("timestamp", "2026-03-01T11:55:00.000Z".into()),
            out("a.test", DLV, 1),
        ),
        ok(
            "wrapper.valid.timestamp-5min-future",
            "a wrapper timestamp exactly 5 minutes ahead is fresh",
            S155,
            &["Freshness"],
            with("timestamp", "2026-03-01T12:05:00.000Z".into()),
            out("a.test", DLV, 1),
        ),
        ok(
            "wrapper.valid.timestamp-offset",
            "a timestamp with a numeric offset naming now",
            S155,
            &["Freshness"],
            with("timestamp", "2026-03-01T13:00:00+01:00".into()),
            out("a.test", DLV, 1),
        ),
        ok(
            "wrapper.valid.old-envelope",
            "an envelope created three days ago (store-and-forward): freshness applies to the wrapper, not to created_at (§15.5)",
            S155,
            &["Freshness"],
            with(
                "envelopes",
                json!([{"id": E1, "from": {"identity": "loom://alice@a.test"}, "created_at": "2026-02-26T12:00:00Z"}]),
            ),
            out("a.test", DLV, 1),
        ),
        ok(
            "wrapper.valid.unknown-members",
            "members §15.4 does not define (v1.0's wrapper signature) are ignored",
            S154,
            &["Wrapper", "Interpretation"],
            with("signature", "sig_EdDSA_x".into()),
            out("a.test", DLV, 1),
        ),
    ]
}

fn invalid() -> Vec<Case> {
    let w = &["Wrapper"];
    let dup = format!(
        r#"{{"loom":"1.1","sender_node":"a.test","sender_node":"b.test","timestamp":"{TS}","envelopes":[{{}}]}}"#
    );
    let lone = format!(
        r#"{{"loom":"1.1","sender_node":"a.test","delivery_id":"fdel_\ud800","timestamp":"{TS}","envelopes":[{{}}]}}"#
    );
    vec![
        bad(
            "wrapper.body.not-json",
            "the body is not JSON",
            S154,
            w,
            "loom=1.1".into(),
            BAD,
        ),
        bad(
            "wrapper.body.array",
            "the body is a JSON array, not an object",
            S154,
            w,
            json!([base()]).to_string(),
            BAD,
        ),
        bad(
            "wrapper.body.duplicate-member",
            "sender_node appears twice; a strict reader refuses (one check must not read a.test and another b.test)",
            S154,
            &["Wrapper", "SenderMismatch"],
            dup,
            BAD,
        ),
        bad(
            "wrapper.body.lone-surrogate",
            "a string holds an unpaired \\ud800 escape, which is not Unicode text (v1.1 §7.2)",
            &["v1.1 §15.4", "v1.1 §7.2"],
            w,
            lone,
            BAD,
        ),
        bad(
            "wrapper.loom.missing",
            "loom is missing",
            S154,
            w,
            without("loom"),
            BAD,
        ),
        bad(
            "wrapper.loom.other-version",
            "loom \"1.0\": this is a v1.1 endpoint",
            S154,
            w,
            with("loom", "1.0".into()),
            BAD,
        ),
        bad(
            "wrapper.loom.number",
            "loom 1.1 as a number",
            S154,
            w,
            with("loom", json!(1.1)),
            BAD,
        ),
        bad(
            "wrapper.sender.missing",
            "sender_node is missing",
            S154,
            w,
            without("sender_node"),
            BAD,
        ),
        bad(
            "wrapper.sender.not-string",
            "sender_node is a number",
            S154,
            w,
            with("sender_node", json!(7)),
            BAD,
        ),
        bad(
            "wrapper.sender.with-port",
            "a node name is a DNS name; a.test:8443 is not one",
            S154,
            &["Wrapper", "Interpretation"],
            with("sender_node", "a.test:8443".into()),
            BAD,
        ),
        bad(
            "wrapper.sender.differs",
            "sender_node b.test, X-LOOM-Node a.test",
            SENDER,
            &["SenderMismatch"],
            with("sender_node", "b.test".into()),
            SIG,
        ),
        bad(
            "wrapper.sender.subdomain",
            "sender_node mail.a.test is another node than a.test",
            SENDER,
            &["SenderMismatch"],
            with("sender_node", "mail.a.test".into()),
            SIG,
        ),
        bad(
            "wrapper.delivery-id.newline",
            "a delivery_id with a line break would shift the lines of the signed receipt",
            S154,
            &["Wrapper", "Interpretation"],
            with("delivery_id", "fdel_1\nb.test".into()),
            BAD,
        ),
        bad(
            "wrapper.delivery-id.empty",
            "an empty delivery_id",
            S154,
            &["Wrapper", "Interpretation"],
            with("delivery_id", "".into()),
            BAD,
        ),
        bad(
            "wrapper.delivery-id.number",
            "delivery_id is a number",
            S154,
            w,
            with("delivery_id", json!(1)),
            BAD,
        ),
        bad(
            "wrapper.delivery-id.too-long",
            "a delivery_id of 257 characters",
            S154,
            &["Wrapper", "Interpretation"],
            with("delivery_id", "d".repeat(257).into()),
            BAD,
        ),
        bad(
            "wrapper.timestamp.missing",
            "timestamp is missing",
            S155,
            w,
            without("timestamp"),
            BAD,
        ),
        bad(
            "wrapper.timestamp.no-zone",
            "a timestamp without a zone (v1.1 Appendix D: ISO 8601 with timezone)",
            &["v1.1 §15.4", "v1.1 Appendix D"],
            w,
            with("timestamp", "2026-03-01T12:00:00".into()),
            BAD,
        ),
        bad(
            "wrapper.timestamp.stale",
            "the wrapper timestamp is 5 minutes and 1 ms old",
            S155,
            &["Freshness"],
            with("timestamp", "2026-03-01T11:54:59.999Z".into()),
            SIG,
        ),
        bad(
            "wrapper.timestamp.future",
            "the wrapper timestamp is 5 minutes and 1 ms ahead",
            S155,
            &["Freshness"],
            with("timestamp", "2026-03-01T12:05:00.001Z".into()),
            SIG,
        ),
        bad(
            "wrapper.envelopes.missing",
            "envelopes is missing",
            S154,
            w,
            without("envelopes"),
            BAD,
        ),
        bad(
            "wrapper.envelopes.empty",
            "an empty envelopes list delivers nothing",
            S154,
            &["Wrapper", "Interpretation"],
            with("envelopes", json!([])),
            BAD,
        ),
        bad(
            "wrapper.envelopes.object",
            "envelopes is an object, not a list",
            S154,
            w,
            with("envelopes", env(E1, "loom://alice@a.test")),
            BAD,
        ),
        bad(
            "wrapper.envelopes.item-not-object",
            "the second envelope is a string",
            S154,
            w,
            with(
                "envelopes",
                json!([
                    env(E1, "loom://alice@a.test"),
                    "env_01JN0000000000000000000002"
                ]),
            ),
            BAD,
        ),
        bad(
            "wrapper.envelopes.101",
            "101 envelopes: more than one wrapper may carry (size limits exceeded, §24.2 PAYLOAD_TOO_LARGE)",
            &["v1.1 §15.4", "v1.1 §24.2"],
            &["Wrapper", "Interpretation"],
            with("envelopes", envs(101)),
            TOO_LARGE,
        ),
    ]
}

/// Adds the `parse-delivery-wrapper` group.
pub fn add(f: FileBuilder) -> FileBuilder {
    f.group(
        "parse-delivery-wrapper",
        json!({"now": NOW, "header_node": "a.test"}),
    )
    .tests(valid().into_iter().chain(invalid()))
}
