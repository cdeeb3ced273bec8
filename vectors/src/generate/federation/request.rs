//! Kinds `federation-signing-string` and `verify-delivery-request`.
//!
//! `verify-delivery-request`: the receiver's checks of `POST /v1/federation/deliver` in
//! order (loom_protocol::federation::inbound): headers, policy, key, freshness, signature
//! (five- or six-line), nonce, wrapper, sender authority per envelope. Valid output:
//! `{form, trust_epoch, sender_node, policy, envelope_errors}`, where `envelope_errors` holds,
//! per envelope in wrapper order, `null` or the code that keeps it from acceptance.

use super::{E1, E2, NOW, TS, case, env, node_key, sign};
use crate::generate::{Case, FileBuilder};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

const NONCE: &str = "bm9uY2UtMDAwMDAwMDE";
const DELIVER: &str = "/v1/federation/deliver";
const SIG: &[&str] = &["v1.1 §15.3"];
const FRESH: &[&str] = &["v1.1 §15.5", "v1.1 §15.3"];
const REPLAY: &[&str] = &["v1.1 §15.3", "v1.1 §23.2"];
const KEYS: &[&str] = &["v1.1 §15.3", "v1.1 §15.2", "v1.0 §7.4"];
const POLICY: &[&str] = &["v1.1 §15.2", "v1.1 §23.1"];
const AUTH: &[&str] = &["loom-core-1 §Core 5", "v1.1 §15.4"];
const BAD_SIG: &str = "SIGNATURE_INVALID";

/// `METHOD\npath\nhex(sha256(body))\ntimestamp\nnonce[\nepoch]`, built here.
fn text(
    method: &str,
    path: &str,
    body: &str,
    ts: &str,
    nonce: &str,
    epoch: Option<&str>,
) -> String {
    let hash = hex::encode(Sha256::digest(body.as_bytes()));
    let five = format!("{method}\n{path}\n{hash}\n{ts}\n{nonce}");
    match epoch {
        Some(e) => format!("{five}\n{e}"),
        None => five,
    }
}

fn wrapper(sender: &str, ts: &str, envelopes: Vec<Value>) -> String {
    json!({"loom": "1.1", "sender_node": sender, "delivery_id": "fdel_01JN0000000000000000000000",
        "timestamp": ts, "envelopes": envelopes})
    .to_string()
}

fn alice() -> Value {
    env(E1, "loom://alice@a.test")
}

/// A request as the sender builds it; `signed` computes the signature and headers.
#[derive(Debug, Clone)]
struct Req {
    body: String,
    node: String,
    ts: String,
    nonce: String,
    key_id: String,
    key: &'static str,
    /// What the sixth line holds (`None`: five lines are signed).
    signed_epoch: Option<String>,
    headers: Vec<(String, String)>,
    extra: Vec<(&'static str, Value)>,
}

fn base() -> Req {
    Req {
        body: wrapper("a.test", TS, vec![alice()]),
        node: "a.test".into(),
        ts: TS.into(),
        nonce: NONCE.into(),
        key_id: "k_node_sign_a_2".into(),
        key: "fed-node-a-2",
        signed_epoch: None,
        headers: vec![],
        extra: vec![],
    }
}

impl Req {
    fn signed(mut self) -> Req {
        let t = text(
            "POST",
            DELIVER,
            &self.body,
            &self.ts,
            &self.nonce,
            self.signed_epoch.as_deref(),
        );
        self.headers = vec![
            ("X-LOOM-Node".into(), self.node.clone()),
            ("X-LOOM-Timestamp".into(), self.ts.clone()),
            ("X-LOOM-Nonce".into(), self.nonce.clone()),
            ("X-LOOM-Key-Id".into(), self.key_id.clone()),
            ("X-LOOM-Signature".into(), sign(self.key, t.as_bytes())),
        ];
        self
    }
    /// Signs the six-line form and sends the epoch header.
    fn with_epoch(mut self, e: &str) -> Req {
        self.signed_epoch = Some(e.into());
        let mut r = self.signed();
        r.headers.push(("X-LOOM-Trust-Epoch".into(), e.into()));
        r
    }
    fn header(mut self, name: &str, value: &str) -> Req {
        match self.headers.iter_mut().find(|h| h.0 == name) {
            Some(h) => h.1 = value.into(),
            None => self.headers.push((name.into(), value.into())),
        }
        self
    }
    fn without(mut self, name: &str) -> Req {
        self.headers.retain(|h| h.0 != name);
        self
    }
    fn seen(mut self, node: &str, nonce: &str, at: &str) -> Req {
        self.extra.push((
            "seen_nonces",
            json!([{"node": node, "nonce": nonce, "at": at}]),
        ));
        self
    }
    fn policy(mut self, p: Value) -> Req {
        self.extra.push(("policy", p));
        self
    }
    fn case(self, id: &str, comment: &str, spec: &[&str], flags: &[&str]) -> Case {
        let headers: Map<String, Value> = self
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        let mut c = case(id, comment, spec, flags)
            .input("method", "POST")
            .input("path", DELIVER)
            .input("body", self.body.as_str())
            .input("headers", Value::Object(headers));
        for (k, v) in self.extra {
            c = c.input(k, v);
        }
        c
    }
}

fn at(ts: &str) -> Req {
    Req {
        ts: ts.into(),
        ..base()
    }
}

fn out(form: &str, epoch: Option<&str>, policy: &str, errors: Value) -> Value {
    json!({"form": form, "trust_epoch": epoch, "sender_node": "a.test", "policy": policy, "envelope_errors": errors})
}

fn v1() -> Value {
    out("v1", None, "accept", json!([null]))
}

fn valid() -> Vec<Case> {
    let empty_sixth = Req {
        signed_epoch: Some(String::new()),
        ..base()
    }
    .signed();
    let two = Req {
        body: wrapper("a.test", TS, vec![alice(), env(E2, "loom://carol@c.test")]),
        ..base()
    };
    let bridged = Req {
        body: wrapper("a.test", TS, vec![env(E1, "bridge://alice@mail.test")]),
        ..base()
    };
    let agent = Req {
        body: wrapper("a.test", TS, vec![env(E1, "loom://assistant.alice@a.test")]),
        ..base()
    };
    vec![
        base().signed().case("request.valid.v1", "a.test signs the five-line string with its active key k_node_sign_a_2", SIG, &["SigningString"]).valid_with(v1()),
        base().with_epoch("7").case("request.valid.v2-epoch", "six-line string with X-LOOM-Trust-Epoch 7, header sent", SIG, &["SigningString", "TrustEpoch"]).valid_with(out("v2", Some("7"), "accept", json!([null]))),
        empty_sixth.case("request.valid.v2-empty-epoch-no-header", "six lines whose last is empty and no epoch header: what the existing node signs without an epoch", SIG, &["TrustEpoch", "Interpretation"]).valid_with(out("v2", None, "accept", json!([null]))),
        base().signed().header("X-LOOM-Node", "A.Test.").case("request.valid.node-respelled", "X-LOOM-Node A.Test. names a.test; keys and sender_node compare case-insensitively", KEYS, &["SenderMismatch"]).valid_with(v1()),
        at("2026-03-01T11:55:00.000Z").signed().case("request.fresh.past-edge", "X-LOOM-Timestamp exactly 5 minutes old", FRESH, &["Freshness"]).valid_with(v1()),
        at("2026-03-01T12:05:00.000Z").signed().case("request.fresh.future-edge", "X-LOOM-Timestamp exactly 5 minutes ahead", FRESH, &["Freshness"]).valid_with(v1()),
        base().signed().seen("a.test", NONCE, "2026-03-01T11:45:00Z").case("request.replay.exactly-15min", "the nonce was recorded exactly 15 minutes ago and has left the cache", REPLAY, &["Replay", "Interpretation"]).valid_with(v1()),
        base().signed().seen("b.test", NONCE, "2026-03-01T11:59:00Z").case("request.replay.other-node", "b.test used the same nonce; the cache is per node", REPLAY, &["Replay"]).valid_with(v1()),
        two.signed().case("request.authority.foreign-sender", "the second envelope's sender is carol@c.test: only that envelope is kept from acceptance", AUTH, &["SenderAuthority"]).valid_with(out("v1", None, "accept", json!([null, "CAPABILITY_DENIED"]))),
        bridged.signed().case("request.authority.bridged-sender", "a bridge:// sender is owned by no node (our reading)", AUTH, &["SenderAuthority", "Interpretation"]).valid_with(out("v1", None, "accept", json!(["CAPABILITY_DENIED"]))),
        agent.signed().case("request.authority.agent-of-node", "an agent address at a.test is a.test's identity", AUTH, &["SenderAuthority"]).valid_with(v1()),
        base().signed().policy(json!({"mode": "quarantine", "allow": ["b.test"]})).case("request.policy.quarantine", "policy quarantine, a.test not listed: accepted into quarantine", POLICY, &["Policy"]).valid_with(out("v1", None, "quarantine", json!([null]))),
        base().signed().policy(json!({"mode": "allowlist", "allow": ["*.corp.test", "a.test"]})).case("request.policy.allowlisted", "policy allowlist lists a.test", POLICY, &["Policy"]).valid_with(v1()),
    ]
}

fn invalid() -> Vec<Case> {
    let retired = Req {
        key_id: "k_node_sign_a_1".into(),
        key: "fed-node-a-1",
        ..base()
    };
    let revoked = Req {
        key_id: "k_node_sign_a_0".into(),
        key: "fed-node-a-0",
        ..base()
    };
    let b_key = Req {
        key_id: "k_node_sign_b_1".into(),
        key: "fed-node-b-1",
        ..base()
    };
    let v2 = base().with_epoch("3");
    let smuggled = {
        // Signed as six lines (nonce N, epoch 5), presented as five lines with nonce "N\n5".
        let r = base().with_epoch("5");
        let nonce = format!("{NONCE}\n5");
        r.without("X-LOOM-Trust-Epoch")
            .header("X-LOOM-Nonce", &nonce)
    };
    let long_nonce = Req {
        nonce: "n".repeat(257),
        ..base()
    }
    .signed();
    let claims_b = Req {
        body: wrapper("b.test", TS, vec![alice()]),
        ..base()
    };
    let stale_wrapper = Req {
        body: wrapper("a.test", "2026-03-01T11:54:00.000Z", vec![alice()]),
        ..base()
    };
    let not_json = Req {
        body: "{\"loom\":\"1.1\",".into(),
        ..base()
    };
    let many = Req {
        body: wrapper(
            "a.test",
            TS,
            (0..101)
                .map(|i| {
                    env(
                        &format!("env_01JN00000000000000000{i:05}"),
                        "loom://alice@a.test",
                    )
                })
                .collect(),
        ),
        ..base()
    };
    vec![
        base().signed().without("X-LOOM-Signature").case("request.missing.signature", "X-LOOM-Signature is absent", SIG, &["SigningString"]).invalid(BAD_SIG),
        base().signed().without("X-LOOM-Node").case("request.missing.node", "X-LOOM-Node is absent", SIG, &["SigningString"]).invalid(BAD_SIG),
        retired.signed().case("request.key.retired", "signed with k_node_sign_a_1, which a.test's document marks retired", KEYS, &["KeyRotation"]).invalid(BAD_SIG),
        revoked.signed().case("request.key.revoked", "signed with k_node_sign_a_0, marked revoked", KEYS, &["KeyRotation"]).invalid(BAD_SIG),
        base().signed().header("X-LOOM-Key-Id", "k_node_sign_a_9").case("request.key.unknown-id", "a.test publishes no key k_node_sign_a_9 (after a re-fetch)", KEYS, &["KeyRotation"]).invalid(BAD_SIG),
        b_key.signed().case("request.key.other-nodes-key", "X-LOOM-Node a.test but b.test's key id and signature", KEYS, &["KeyRotation"]).invalid(BAD_SIG),
        base().signed().header("X-LOOM-Node", "c.test").case("request.key.unknown-node", "no node document is known for c.test", KEYS, &["KeyRotation"]).invalid(BAD_SIG),
        base().signed().header("X-LOOM-Trust-Epoch", "3").case("request.v2.epoch-not-signed", "a valid five-line signature beside an X-LOOM-Trust-Epoch header, as the existing node sends it: §15.3 defines only the five lines, so it verifies, and the unsigned epoch is treated as absent", SIG, &["TrustEpoch", "SigningString"]).valid_with(out("v1", None, "accept", json!([null]))),
        v2.clone().header("X-LOOM-Trust-Epoch", "4").case("request.v2.epoch-changed", "signed with epoch 3, sent with epoch 4", SIG, &["TrustEpoch", "Tampered"]).invalid(BAD_SIG),
        v2.clone().without("X-LOOM-Trust-Epoch").case("request.v2.epoch-dropped", "signed with epoch 3, header removed", SIG, &["TrustEpoch", "Tampered"]).invalid(BAD_SIG),
        base().with_epoch("three").case("request.v2.epoch-not-decimal", "X-LOOM-Trust-Epoch is not a decimal integer", SIG, &["TrustEpoch", "Interpretation"]).invalid(BAD_SIG),
        smuggled.case("request.nonce.line-break", "a six-line signature presented as five lines whose nonce holds the line break", SIG, &["NonceText", "Replay"]).invalid(BAD_SIG),
        long_nonce.case("request.nonce.too-long", "a 257-character nonce", SIG, &["NonceText", "Interpretation"]).invalid(BAD_SIG),
        at("2026-03-01T11:54:59.999Z").signed().case("request.fresh.stale", "X-LOOM-Timestamp 5 minutes and 1 ms old", FRESH, &["Freshness"]).invalid(BAD_SIG),
        at("2026-03-01T12:05:00.001Z").signed().case("request.fresh.future", "X-LOOM-Timestamp 5 minutes and 1 ms ahead", FRESH, &["Freshness"]).invalid(BAD_SIG),
        base().signed().seen("a.test", NONCE, "2026-03-01T11:45:00.001Z").case("request.replay.under-15min", "a.test used this nonce 14:59.999 ago", REPLAY, &["Replay"]).invalid(BAD_SIG),
        base().signed().header("X-LOOM-Node", "A.TEST").seen("a.test", NONCE, "2026-03-01T11:59:00Z").case("request.replay.node-respelled", "the unsigned X-LOOM-Node respelled does not open a fresh cache slot", REPLAY, &["Replay", "Interpretation"]).invalid(BAD_SIG),
        base().signed().header("X-LOOM-Signature", &sign("fed-node-a-2", b"something else")).case("request.tampered.signature", "a valid signature over other text", SIG, &["Tampered"]).invalid(BAD_SIG),
        claims_b.signed().case("request.wrapper.sender-differs", "a.test signs a wrapper whose sender_node is b.test", &["v1.1 §15.4", "v1.1 §15.3"], &["SenderMismatch"]).invalid(BAD_SIG),
        stale_wrapper.signed().case("request.wrapper.stale", "fresh request headers around a wrapper timestamped 6 minutes ago", &["v1.1 §15.5"], &["Freshness"]).invalid(BAD_SIG),
        not_json.signed().case("request.wrapper.not-json", "a correctly signed body that is not JSON", &["v1.1 §15.4"], &["Wrapper"]).invalid("ENVELOPE_INVALID"),
        many.signed().case("request.wrapper.101-envelopes", "a correctly signed wrapper with 101 envelopes", &["v1.1 §15.4", "v1.1 §24.2"], &["Wrapper", "Interpretation"]).invalid("PAYLOAD_TOO_LARGE"),
        base().signed().policy(json!({"mode": "open", "block": ["a.test"]})).case("request.policy.blocked", "a.test is on the blocklist", POLICY, &["Policy"]).invalid("CAPABILITY_DENIED"),
        base().signed().policy(json!({"mode": "allowlist", "allow": ["b.test"], "block": []})).case("request.policy.unlisted", "policy allowlist without a.test", POLICY, &["Policy"]).invalid("CAPABILITY_DENIED"),
        base().signed().policy(json!({"mode": "allowlist", "allow": ["*.a.test"]})).case("request.policy.wildcard-not-apex", "*.a.test matches subdomains of a.test, not a.test itself", POLICY, &["Policy", "Interpretation"]).invalid("CAPABILITY_DENIED"),
    ]
}

/// `(id, comment, method, path, body, timestamp, nonce, trust_epoch, expected)`.
type StringCase = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
    &'static str,
);

/// The body hashes in `expected` were computed with `sha256sum`.
const STRINGS: &[StringCase] = &[
    (
        "string.v1.deliver",
        "five lines joined by \\n, no trailing newline",
        "POST",
        "/v1/federation/deliver",
        r#"{"loom":"1.1"}"#,
        "2026-03-01T12:00:00.000Z",
        "bm9uY2U",
        None,
        "POST\n/v1/federation/deliver\n8a35fa7d54f28de9998c23b79f309b530ec364fa48254fcb4388b3de70cf8fa8\n2026-03-01T12:00:00.000Z\nbm9uY2U",
    ),
    (
        "string.v1.method-uppercased",
        "the method is written uppercase",
        "post",
        "/v1/federation/deliver",
        r#"{"loom":"1.1"}"#,
        "2026-03-01T12:00:00.000Z",
        "bm9uY2U",
        None,
        "POST\n/v1/federation/deliver\n8a35fa7d54f28de9998c23b79f309b530ec364fa48254fcb4388b3de70cf8fa8\n2026-03-01T12:00:00.000Z\nbm9uY2U",
    ),
    (
        "string.v1.query-dropped",
        "the query string is not part of the signed path",
        "POST",
        "/v1/federation/deliver?via=relay",
        r#"{"loom":"1.1"}"#,
        "2026-03-01T12:00:00.000Z",
        "bm9uY2U",
        None,
        "POST\n/v1/federation/deliver\n8a35fa7d54f28de9998c23b79f309b530ec364fa48254fcb4388b3de70cf8fa8\n2026-03-01T12:00:00.000Z\nbm9uY2U",
    ),
    (
        "string.v2.epoch",
        "six lines: the trust epoch after the nonce",
        "POST",
        "/v1/federation/deliver",
        r#"{"loom":"1.1"}"#,
        "2026-03-01T12:00:00.000Z",
        "bm9uY2U",
        Some("12"),
        "POST\n/v1/federation/deliver\n8a35fa7d54f28de9998c23b79f309b530ec364fa48254fcb4388b3de70cf8fa8\n2026-03-01T12:00:00.000Z\nbm9uY2U\n12",
    ),
    (
        "string.v2.empty-epoch",
        "six lines with an empty epoch end in a newline",
        "GET",
        "/v1/federation/hello",
        "",
        "2026-03-01T12:00:00+01:00",
        "x-y_z",
        Some(""),
        "GET\n/v1/federation/hello\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n2026-03-01T12:00:00+01:00\nx-y_z\n",
    ),
];

fn string_case(
    &(id, comment, method, path, body, ts, nonce, epoch, expected): &StringCase,
) -> Case {
    let mut flags = vec!["SigningString"];
    if epoch.is_some() {
        flags.push("TrustEpoch");
    }
    if id.contains("query") {
        flags.push("Interpretation");
    }
    let mut c = case(id, comment, SIG, &flags)
        .input("method", method)
        .input("path", path)
        .input("body", body)
        .input("timestamp", ts)
        .input("nonce", nonce);
    if let Some(e) = epoch {
        c = c.input("trust_epoch", e);
    }
    c.valid_with(expected)
}

fn node_keys() -> Value {
    json!([
        node_key("a.test", "k_node_sign_a_0", "fed-node-a-0", Some("revoked")),
        node_key("a.test", "k_node_sign_a_1", "fed-node-a-1", Some("retired")),
        node_key("a.test", "k_node_sign_a_2", "fed-node-a-2", None),
        node_key("b.test", "k_node_sign_b_1", "fed-node-b-1", Some("active")),
    ])
}

/// Adds the `federation-signing-string` and `verify-delivery-request` groups.
pub fn add(f: FileBuilder) -> FileBuilder {
    f.group("federation-signing-string", Value::Null)
        .tests(STRINGS.iter().map(string_case))
        .group(
            "verify-delivery-request",
            json!({"now": NOW, "node_keys": node_keys()}),
        )
        .tests(valid().into_iter().chain(invalid()))
}
