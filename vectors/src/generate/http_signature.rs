//! `http-signature`: LOOM-HTTP-SIG-1 federation request signatures (v1.1 §15.3–§15.5, with the
//! header and signing-string details of DESIGN.md §9). Requests are signed here with keys from
//! fixed seeds over a signing string this module builds itself (not `loom-protocol`'s), then
//! changed per case; every verdict is a literal written from the spec.

use super::keys::{public_b64url, signing_key};
use super::schema::{AreaSchema, PROTOCOL_ERRORS, string};
use super::{Case, FileBuilder};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use ed25519_dalek::Signer as _;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

const NOW: &str = "2026-03-01T12:00:00Z";
const TS: &str = "2026-03-01T12:00:00.000Z";
const NONCE: &str = "q83vEjRWeJCrze8SNFZ4kA";
const DELIVER: &str = "/v1/federation/deliver";
const SIG: &[&str] = &["v1.1 §15.3"];
const FRESH: &[&str] = &["v1.1 §15.5", "v1.1 §15.3"];
const WRAPPER: &[&str] = &["v1.1 §15.4", "v1.1 §15.3"];
const BAD: &str = "SIGNATURE_INVALID";

/// The delivery wrapper (v1.1 §15.4, DESIGN.md §9) sent by `node`.
fn wrapper(node: &str) -> String {
    format!(
        r#"{{"loom":"1.1","sender_node":"{node}","delivery_id":"dlv_01","timestamp":"{TS}","envelopes":[]}}"#
    )
}

/// `METHOD\npath\nhex(sha256(body))\ntimestamp\nnonce` (v1.1 §15.3, DESIGN.md §9).
fn signing_string(method: &str, path: &str, body: &str, ts: &str, nonce: &str) -> String {
    let hash = hex::encode(Sha256::digest(body.as_bytes()));
    format!("{method}\n{path}\n{hash}\n{ts}\n{nonce}")
}

/// What the sender signs and sends.
#[derive(Debug, Clone)]
struct Req {
    method: String,
    path: String,
    body: String,
    node: String,
    ts: String,
    nonce: String,
    key_id: String,
    key: &'static str,
    /// Set after signing: the request as sent.
    headers: Vec<(String, String)>,
    seen: Vec<Value>,
}

/// A POST delivery from a.test, signed with its first key at `NOW`.
fn base() -> Req {
    Req {
        method: "POST".into(),
        path: DELIVER.into(),
        body: wrapper("a.test"),
        node: "a.test".into(),
        ts: TS.into(),
        nonce: NONCE.into(),
        key_id: "k_node_sign_a_1".into(),
        key: "http-node-a-1",
        headers: vec![],
        seen: vec![],
    }
}

fn signature(key: &str, text: &str) -> Vec<u8> {
    signing_key(key).sign(text.as_bytes()).to_bytes().to_vec()
}

impl Req {
    /// Signs the current fields and sets the five headers.
    fn signed(mut self) -> Req {
        let text = signing_string(&self.method, &self.path, &self.body, &self.ts, &self.nonce);
        let sig = URL_SAFE_NO_PAD.encode(signature(self.key, &text));
        self.headers = vec![
            ("X-LOOM-Node".into(), self.node.clone()),
            ("X-LOOM-Timestamp".into(), self.ts.clone()),
            ("X-LOOM-Nonce".into(), self.nonce.clone()),
            ("X-LOOM-Key-Id".into(), self.key_id.clone()),
            ("X-LOOM-Signature".into(), sig),
        ];
        self
    }
    fn header(mut self, name: &str, value: &str) -> Req {
        for h in &mut self.headers {
            if h.0 == name {
                h.1 = value.to_owned();
            }
        }
        self
    }
    fn without(mut self, name: &str) -> Req {
        self.headers.retain(|h| h.0 != name);
        self
    }
    fn sent_method(mut self, m: &str) -> Req {
        self.method = m.into();
        self
    }
    fn sent_path(mut self, p: &str) -> Req {
        self.path = p.into();
        self
    }
    fn sent_body(mut self, b: &str) -> Req {
        self.body = b.into();
        self
    }
    fn seen(mut self, node: &str, nonce: &str, at: &str) -> Req {
        self.seen
            .push(json!({"node": node, "nonce": nonce, "at": at}));
        self
    }
    fn lowercase_names(mut self) -> Req {
        for h in &mut self.headers {
            h.0 = h.0.to_ascii_lowercase();
        }
        self
    }
    fn sig_bytes(&self) -> Vec<u8> {
        let h = self.headers.iter().find(|h| h.0 == "X-LOOM-Signature");
        URL_SAFE_NO_PAD
            .decode(&h.expect("signed").1)
            .expect("own signature")
    }
    /// The test carrying this request as sent.
    fn case(self, id: &str, comment: &str, spec: &[&str]) -> Case {
        let headers: Map<String, Value> = self
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        let c = Case::new(id, comment, spec)
            .input("method", self.method.as_str())
            .input("path", self.path.as_str())
            .input("body", self.body.as_str())
            .input("headers", Value::Object(headers));
        if self.seen.is_empty() {
            c
        } else {
            c.input("seen_nonces", self.seen)
        }
    }
}

fn ok(r: Req, id: &str, comment: &str, spec: &[&str], flags: &[&str]) -> Case {
    r.case(id, comment, spec).flags(flags).valid()
}

fn bad(r: Req, id: &str, comment: &str, spec: &[&str], flags: &[&str]) -> Case {
    r.case(id, comment, spec).flags(flags).invalid(BAD)
}

fn at(ts: &str) -> Req {
    Req {
        ts: ts.into(),
        ..base()
    }
}

fn valid_cases() -> Vec<Case> {
    let a2 = Req {
        key_id: "k_node_sign_a_2".into(),
        key: "http-node-a-2",
        ..base()
    };
    let b = Req {
        node: "b.test".into(),
        key_id: "k_node_sign_b_1".into(),
        key: "http-node-b-1",
        body: wrapper("b.test"),
        ..base()
    };
    let hello = Req {
        method: "GET".into(),
        path: "/v1/federation/hello".into(),
        body: String::new(),
        ..base()
    };
    let utf8 = Req {
        body: wrapper("a.test").replace("dlv_01", "dlv_é_日本_😀"),
        ..base()
    };
    let late = Req {
        body: wrapper("a.test").replace(
            "[]",
            r#"[{"id":"env_01JN0000000000000000000000","created_at":"2026-02-26T08:00:00Z"}]"#,
        ),
        ..base()
    };
    vec![
        ok(
            base().signed(),
            "valid.basic",
            "a.test signs a delivery with its key k_node_sign_a_1 at now",
            SIG,
            &[],
        ),
        ok(
            a2.signed(),
            "valid.second-node-key",
            "a.test's node document lists two keys; the second verifies too",
            SIG,
            &[],
        ),
        ok(
            b.signed(),
            "valid.other-node",
            "b.test signs its own delivery with its own key",
            SIG,
            &[],
        ),
        ok(
            hello.signed(),
            "valid.get-empty-body",
            "GET with an empty body: the hash is SHA-256 of zero bytes",
            SIG,
            &[],
        ),
        ok(
            utf8.signed(),
            "valid.utf8-body",
            "the body hash covers the raw UTF-8 bytes of a non-ASCII body",
            SIG,
            &[],
        ),
        ok(
            late.signed(),
            "valid.envelope-created-days-ago",
            "freshness applies to the request timestamp, not to created_at of envelopes inside",
            &["v1.1 §15.5"],
            &[],
        ),
        ok(
            at("2026-03-01T13:00:00+01:00").signed(),
            "valid.timestamp-with-offset",
            "a timestamp with a numeric offset names the same instant as now",
            &["v1.1 §15.5", "v1.1 Appendix D"],
            &[],
        ),
        ok(
            at("2026-03-01T12:00:00.123Z").signed(),
            "valid.timestamp-with-fraction",
            "fractional seconds are signed as sent",
            &["v1.1 §15.5", "v1.1 Appendix D"],
            &[],
        ),
        ok(
            base().signed().lowercase_names(),
            "valid.header-names-lowercase",
            "HTTP field names are case-insensitive (RFC 9110 §5.1); lowercase names carry the same headers",
            &["v1.1 §15.3", "RFC 9110 §5.1"],
            &["HeaderCase"],
        ),
    ]
}

fn query_cases() -> Vec<Case> {
    let with_query = "/v1/federation/deliver?via=relay";
    let signed_with_query = Req {
        path: with_query.into(),
        ..base()
    };
    vec![
        ok(
            base().signed().sent_path(with_query),
            "query.not-signed",
            "the signed path excludes the query string (DESIGN.md §9 'path'; loom-protocol http_sig)",
            SIG,
            &["Interpretation"],
        ),
        bad(
            signed_with_query.signed(),
            "query.signed-into-path",
            "a signature over path plus query does not verify: the verifier signs the path alone",
            SIG,
            &["Interpretation"],
        ),
    ]
}

fn freshness_cases() -> Vec<Case> {
    vec![
        ok(
            at("2026-03-01T11:55:00.000Z").signed(),
            "fresh.past-exactly-5min",
            "timestamp exactly 5 minutes before now is within ±5 minutes",
            FRESH,
            &["Freshness"],
        ),
        bad(
            at("2026-03-01T11:54:59.999Z").signed(),
            "fresh.past-5min-1ms",
            "timestamp 5 minutes and 1 ms before now is stale",
            FRESH,
            &["Freshness"],
        ),
        ok(
            at("2026-03-01T12:05:00.000Z").signed(),
            "fresh.future-exactly-5min",
            "timestamp exactly 5 minutes after now is within ±5 minutes",
            FRESH,
            &["Freshness"],
        ),
        bad(
            at("2026-03-01T12:05:00.001Z").signed(),
            "fresh.future-5min-1ms",
            "timestamp 5 minutes and 1 ms after now is too far in the future",
            FRESH,
            &["Freshness"],
        ),
        bad(
            at("2026-03-01T11:00:00.000Z").signed(),
            "fresh.past-1h",
            "a request signed an hour ago is stale",
            FRESH,
            &["Freshness"],
        ),
        bad(
            at("2026-03-02T12:00:00.000Z").signed(),
            "fresh.future-1d",
            "a request dated tomorrow is rejected",
            FRESH,
            &["Freshness"],
        ),
        bad(
            at("2026-03-01T12:06:00+00:00").signed(),
            "fresh.future-offset",
            "6 minutes ahead written with an offset is still too far ahead",
            FRESH,
            &["Freshness"],
        ),
    ]
}

fn replay_cases() -> Vec<Case> {
    let seen = |node: &str, nonce: &str, t: &str| base().signed().seen(node, nonce, t);
    vec![
        bad(
            seen("a.test", NONCE, "2026-03-01T11:59:00Z"),
            "replay.same-node",
            "a.test used this nonce a minute ago",
            SIG,
            &["Replay"],
        ),
        ok(
            seen("b.test", NONCE, "2026-03-01T11:59:00Z"),
            "replay.other-node-same-nonce",
            "the nonce cache is per node: b.test's use of the same nonce does not matter",
            SIG,
            &["Replay"],
        ),
        ok(
            seen("a.test", "AAAAAAAAAAAAAAAAAAAAAA", "2026-03-01T11:59:00Z"),
            "replay.other-nonce",
            "a.test used a different nonce before",
            SIG,
            &["Replay"],
        ),
        bad(
            seen("a.test", NONCE, "2026-03-01T11:45:00.001Z"),
            "replay.just-under-15min",
            "the nonce was seen 14:59.999 ago and is still cached",
            SIG,
            &["Replay"],
        ),
        ok(
            seen("a.test", NONCE, "2026-03-01T11:45:00Z"),
            "replay.exactly-15min",
            "an entry exactly 15 minutes old has left the cache (cache 15 min; loom-protocol keeps entries younger than 15 min)",
            SIG,
            &["Replay", "Interpretation"],
        ),
        ok(
            seen("a.test", NONCE, "2026-03-01T11:40:00Z"),
            "replay.older-than-15min",
            "the nonce was seen 20 minutes ago and has left the cache",
            SIG,
            &["Replay"],
        ),
        bad(
            seen("a.test", NONCE, "2026-03-01T11:59:00Z").header("X-LOOM-Node", "A.TEST"),
            "replay.node-respelled",
            "X-LOOM-Node is not signed; the cache keys the domain case-insensitively, so respelling it does not dodge the replay check",
            SIG,
            &["Replay", "Interpretation"],
        ),
    ]
}

fn tamper_cases() -> Vec<Case> {
    let body = wrapper("a.test");
    let spaced = body.replace(',', ", ");
    vec![
        bad(
            base().signed().sent_body(&body.replace("dlv_01", "dlv_02")),
            "tamper.body-byte",
            "one byte of the body changed after signing",
            SIG,
            &["Tampered"],
        ),
        bad(
            base().signed().sent_body(&spaced),
            "tamper.body-reserialized",
            "the same JSON with added whitespace: the hash is over raw bytes, not canonical JSON",
            SIG,
            &["Tampered"],
        ),
        bad(
            base().signed().sent_body(""),
            "tamper.body-removed",
            "the body was dropped after signing",
            SIG,
            &["Tampered"],
        ),
        bad(
            base().signed().sent_path("/v1/federation/deliver2"),
            "tamper.path",
            "the request went to another path than was signed",
            SIG,
            &["Tampered"],
        ),
        bad(
            base().signed().sent_path("/v1/federation/deliver/"),
            "tamper.path-trailing-slash",
            "a trailing slash makes a different path",
            SIG,
            &["Tampered"],
        ),
        bad(
            base().signed().sent_method("PUT"),
            "tamper.method",
            "signed as POST, sent as PUT",
            SIG,
            &["Tampered"],
        ),
        bad(
            base()
                .signed()
                .header("X-LOOM-Nonce", "AAAAAAAAAAAAAAAAAAAAAA"),
            "tamper.nonce",
            "the nonce header differs from the signed nonce",
            SIG,
            &["Tampered"],
        ),
        bad(
            base()
                .signed()
                .header("X-LOOM-Timestamp", "2026-03-01T12:00:01.000Z"),
            "tamper.timestamp",
            "the timestamp header was moved by one second (still fresh)",
            SIG,
            &["Tampered"],
        ),
        bad(
            base()
                .signed()
                .header("X-LOOM-Timestamp", "2026-03-01T12:00:00Z"),
            "tamper.timestamp-respelled",
            "the same instant spelled differently: the signature covers the header text as sent",
            SIG,
            &["Tampered"],
        ),
    ]
}

fn key_cases() -> Vec<Case> {
    let other_key = Req {
        key_id: "k_node_sign_b_1".into(),
        key: "http-node-b-1",
        ..base()
    };
    let wrong_key = Req {
        key: "http-node-a-2",
        ..base()
    };
    let spec = &["v1.1 §15.3", "v1.1 §15.2"];
    vec![
        bad(
            base().signed().header("X-LOOM-Key-Id", "k_node_sign_a_9"),
            "key.unknown-key-id",
            "a.test's node document has no key k_node_sign_a_9",
            spec,
            &["KeyResolution"],
        ),
        bad(
            other_key.signed(),
            "key.other-nodes-key",
            "X-LOOM-Node is a.test but the key id and signature are b.test's: keys come from the sender's own node document",
            spec,
            &["KeyResolution"],
        ),
        bad(
            base().signed().header("X-LOOM-Node", "c.test"),
            "key.unknown-node",
            "no node document is known for c.test",
            spec,
            &["KeyResolution"],
        ),
        bad(
            wrong_key.signed(),
            "key.wrong-key-for-id",
            "signed with k_node_sign_a_2 but the header names k_node_sign_a_1",
            spec,
            &["KeyResolution"],
        ),
    ]
}

fn sender_cases() -> Vec<Case> {
    let claims_b = Req {
        body: wrapper("b.test"),
        ..base()
    };
    let b_claims_a = Req {
        node: "b.test".into(),
        key_id: "k_node_sign_b_1".into(),
        key: "http-node-b-1",
        ..base()
    };
    vec![
        bad(
            claims_b.signed(),
            "sender.wrapper-names-other-node",
            "a.test signs a wrapper whose sender_node is b.test (DESIGN.md §9: sender_node must equal X-LOOM-Node)",
            WRAPPER,
            &["SenderMismatch", "Interpretation"],
        ),
        bad(
            b_claims_a.signed(),
            "sender.header-differs-from-wrapper",
            "b.test signs a wrapper claiming sender_node a.test",
            WRAPPER,
            &["SenderMismatch", "Interpretation"],
        ),
    ]
}

fn header_cases() -> Vec<Case> {
    let names = [
        ("node", "X-LOOM-Node"),
        ("timestamp", "X-LOOM-Timestamp"),
        ("nonce", "X-LOOM-Nonce"),
        ("key-id", "X-LOOM-Key-Id"),
        ("signature", "X-LOOM-Signature"),
    ];
    let missing = names.iter().map(|(short, name)| {
        let comment = format!("{name} is one of the five required headers and is absent");
        bad(
            base().signed().without(name),
            &format!("missing.{short}"),
            &comment,
            SIG,
            &["MissingHeader"],
        )
    });
    let empty = [
        bad(
            base().signed().header("X-LOOM-Nonce", ""),
            "empty.nonce",
            "an empty X-LOOM-Nonce is no nonce",
            SIG,
            &["MissingHeader"],
        ),
        bad(
            base().signed().header("X-LOOM-Signature", ""),
            "empty.signature",
            "an empty X-LOOM-Signature is no signature",
            SIG,
            &["MissingHeader"],
        ),
    ];
    missing.chain(empty).collect()
}

fn encoding_cases() -> Vec<Case> {
    let r = base().signed();
    let sig = r.sig_bytes();
    let std = STANDARD_NO_PAD.encode(&sig);
    assert_ne!(
        std,
        URL_SAFE_NO_PAD.encode(&sig),
        "pick a signature with - or _"
    );
    let with = |v: &str| base().signed().header("X-LOOM-Signature", v);
    let spec = &["v1.1 §15.3", "v1.1 Appendix D"];
    vec![
        bad(
            with("not*base64url!"),
            "sig.not-base64url",
            "the signature header is not base64url",
            spec,
            &["SignatureEncoding"],
        ),
        bad(
            with(&URL_SAFE.encode(&sig)),
            "sig.padded",
            "the right signature with '=' padding: LOOM base64url is unpadded (loom-protocol keys.rs)",
            spec,
            &["SignatureEncoding", "Interpretation"],
        ),
        bad(
            with(&std),
            "sig.standard-alphabet",
            "the right signature in the standard base64 alphabet (+ and /), not base64url",
            spec,
            &["SignatureEncoding"],
        ),
        bad(
            with(&URL_SAFE_NO_PAD.encode(&sig[..63])),
            "sig.truncated",
            "63 bytes: an Ed25519 signature is 64",
            spec,
            &["SignatureEncoding"],
        ),
        bad(
            with(&URL_SAFE_NO_PAD.encode([0u8; 64])),
            "sig.all-zero",
            "64 zero bytes do not verify",
            spec,
            &["SignatureEncoding"],
        ),
    ]
}

fn timestamp_cases() -> Vec<Case> {
    let spec = &["v1.1 §15.3", "v1.1 Appendix D"];
    vec![
        bad(
            at("2026-03-01T12:00:00").signed(),
            "ts.no-zone",
            "ISO 8601 without a zone is not a LOOM timestamp (Appendix D: with timezone)",
            spec,
            &["TimestampFormat"],
        ),
        bad(
            at("yesterday").signed(),
            "ts.not-a-date",
            "the timestamp is not a date",
            spec,
            &["TimestampFormat"],
        ),
        bad(
            at("1772366400").signed(),
            "ts.unix-seconds",
            "Unix seconds are not ISO 8601",
            spec,
            &["TimestampFormat"],
        ),
    ]
}

/// `(id, comment, method, path, body, timestamp, nonce, expected)`.
type StringCase = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

/// Signing strings; the body hashes in `expected` were computed with `sha256sum`.
const STRINGS: &[StringCase] = &[
    (
        "string.deliver",
        "a POST delivery: five lines joined by \\n, no trailing newline",
        "POST",
        "/v1/federation/deliver",
        r#"{"loom":"1.1"}"#,
        "2026-03-01T12:00:00.000Z",
        "bm9uY2U",
        "POST\n/v1/federation/deliver\n8a35fa7d54f28de9998c23b79f309b530ec364fa48254fcb4388b3de70cf8fa8\n2026-03-01T12:00:00.000Z\nbm9uY2U",
    ),
    (
        "string.query-dropped",
        "the query string is not part of the signed path (Interpretation)",
        "POST",
        "/v1/federation/deliver?via=relay",
        r#"{"loom":"1.1"}"#,
        "2026-03-01T12:00:00.000Z",
        "bm9uY2U",
        "POST\n/v1/federation/deliver\n8a35fa7d54f28de9998c23b79f309b530ec364fa48254fcb4388b3de70cf8fa8\n2026-03-01T12:00:00.000Z\nbm9uY2U",
    ),
    (
        "string.empty-body",
        "an empty body hashes to SHA-256 of zero bytes",
        "GET",
        "/v1/federation/hello",
        "",
        "2026-03-01T12:00:00+01:00",
        "x-y_z",
        "GET\n/v1/federation/hello\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n2026-03-01T12:00:00+01:00\nx-y_z",
    ),
];

fn string_case(&(id, comment, method, path, body, ts, nonce, expected): &StringCase) -> Case {
    let flags: &[&str] = if id == "string.query-dropped" {
        &["SigningString", "Interpretation"]
    } else {
        &["SigningString"]
    };
    Case::new(id, comment, SIG)
        .flags(flags)
        .input("method", method)
        .input("path", path)
        .input("body", body)
        .input("timestamp", ts)
        .input("nonce", nonce)
        .valid_with(expected)
}

fn node_keys() -> Value {
    let key = |node: &str, id: &str, name: &str| json!({"node": node, "key_id": id, "public_key": public_b64url(name)});
    json!([
        key("a.test", "k_node_sign_a_1", "http-node-a-1"),
        key("a.test", "k_node_sign_a_2", "http-node-a-2"),
        key("b.test", "k_node_sign_b_1", "http-node-b-1"),
    ])
}

/// Builds `http-signature.json`.
pub fn build() -> FileBuilder {
    let cases = [
        valid_cases(),
        query_cases(),
        freshness_cases(),
        replay_cases(),
        tamper_cases(),
        key_cases(),
        sender_cases(),
        header_cases(),
        encoding_cases(),
        timestamp_cases(),
    ];
    FileBuilder::new(
        "http-signature",
        "LOOM-HTTP-SIG-1 federation request signatures (v1.1 §15.3-§15.5; header and signing-string details per DESIGN.md §9). \
         Kind verify-http-signature: the receiver checks a request (method, path, raw body, headers) at 'now' against the senders' node keys \
         ('node_keys', as their node documents publish them) and the nonces it has already seen ('seen_nonces', optional). \
         Every rejection is SIGNATURE_INVALID (v1.1 §24.2, 401): the spec defines no other code for a request that fails authentication. \
         Kind http-signature-string: the exact signed text, for debugging a signer.",
    )
    .note("Freshness", "The request timestamp must be within ±5 minutes of now, both bounds inclusive (v1.1 §15.5).", "replay window", "Captured requests can be replayed late, or valid requests from slightly skewed clocks are refused.")
    .note("Replay", "A nonce may be used once per sending node within 15 minutes (v1.1 §15.3).", "replay cache", "Replayed deliveries are accepted twice, or unrelated nodes block each other's nonces.")
    .note("Tampered", "Method, path, body, nonce and timestamp are all covered by the signature.", "incomplete signing string", "An attacker alters a signed request in flight.")
    .note("KeyResolution", "The key is the one named by X-LOOM-Key-Id in the node document of X-LOOM-Node (v1.1 §15.2, §15.3).", "key confusion", "One node can sign requests that are accepted as another node's.")
    .note("SenderMismatch", "The wrapper's sender_node must equal X-LOOM-Node (DESIGN.md §9).", "identity confusion", "A node delivers under another node's name.")
    .note("MissingHeader", "All five LOOM-HTTP-SIG-1 headers are required (v1.1 §15.3).", "missing check", "Unsigned or partly signed requests are accepted.")
    .note("SignatureEncoding", "X-LOOM-Signature is an unpadded base64url Ed25519 signature of 64 bytes (v1.1 Appendix D).", "lenient decoding", "Implementations disagree about which signatures are well formed.")
    .note("TimestampFormat", "X-LOOM-Timestamp is ISO 8601 with a zone (v1.1 Appendix D).", "lenient parsing", "Freshness is judged on a misread time.")
    .note("HeaderCase", "HTTP field names are case-insensitive (RFC 9110 §5.1).", "header lookup", "Requests through proxies that lowercase names (HTTP/2 always does) are refused.")
    .note("SigningString", "The exact text that is signed.", "signing string", "No signature from this implementation verifies at a peer.")
    .note("Interpretation", "The spec is silent; the vector pins loom-protocol's documented reading (its comment says which).", "interpretation", "Implementations that read the spec differently disagree on these requests.")
    .group("verify-http-signature", json!({"now": NOW, "node_keys": node_keys()}))
    .tests(cases.into_iter().flatten())
    .group("http-signature-string", Value::Null)
    .tests(STRINGS.iter().map(string_case))
}

/// The inputs and outputs of `http-signature.json`.
pub fn schema() -> AreaSchema {
    let key = json!({"type": "object", "additionalProperties": false, "required": ["node", "key_id", "public_key"],
        "properties": {"node": string(), "key_id": string(), "public_key": string()}});
    let seen = json!({"type": "object", "additionalProperties": false, "required": ["node", "nonce", "at"],
        "properties": {"node": string(), "nonce": string(), "at": string()}});
    AreaSchema {
        kinds: vec!["verify-http-signature", "http-signature-string"],
        inputs: vec![
            ("method", string()),
            ("path", string()),
            ("body", string()),
            (
                "headers",
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
            ),
            ("now", string()),
            ("node_keys", json!({"type": "array", "items": key})),
            ("seen_nonces", json!({"type": "array", "items": seen})),
            ("timestamp", string()),
            ("nonce", string()),
        ],
        required: vec!["method", "path", "body"],
        expected: string(),
        errors: PROTOCOL_ERRORS
            .iter()
            .copied()
            .filter(|e| *e == "SIGNATURE_INVALID")
            .collect(),
    }
}
