//! Area `envelope-signature`: Ed25519 envelope signatures (v1.1 §7.1–§7.3, §8; v1.0 §7.2).
//!
//! Every envelope is built here from one base message, signed with a key from a fixed seed,
//! then changed by one mutation. Each expectation is a literal in the case tables below,
//! decided from v1.1 §7.3: the signed bytes are `LOOM-ENVELOPE-SIG-v1 ‖ 0x00 ‖ JCS(envelope
//! without signature and meta)`; a present `context` selects the prefix; an absent one tries
//! the prefixed form, then the legacy (v1.0 §7.2, unprefixed) form "during migration window".

use super::keys::{public_b64url, signing_key};
use super::schema::{AreaSchema, string};
use super::{Case, FileBuilder};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::Signer as _;
use loom_protocol::envelope::envelope_signing_payload;
use serde_json::{Value, json};

/// The sender's signing key ID in its identity document.
pub const ALICE_KEY_ID: &str = "k_sign_alice_1";
/// The envelope context of v1.1 §7.3.
pub const ENVELOPE_CTX: &str = "LOOM-ENVELOPE-SIG-v1";
const DELEGATION_CTX: &str = "LOOM-DELEGATION-SIG-v1";
const POP_CTX: &str = "LOOM-CAPABILITY-POP-v1";

/// The base message: every optional member of v1.1 §8.1 that signing covers is present.
pub fn base_envelope() -> Value {
    json!({
        "loom": "1.1",
        "id": "env_01JMKB7X9Q2RVHF3KN4TYZPG00",
        "thread_id": "thr_01JMKB7W8P1QSGF2JM3SXYZR00",
        "parent_id": null,
        "type": "message",
        "from": {
            "identity": "loom://alice@node.test",
            "display": "Alice",
            "key_id": ALICE_KEY_ID,
            "type": "human"
        },
        "to": [{"identity": "loom://bob@node.test", "role": "primary"}],
        "audience": {"mode": "thread"},
        "created_at": "2026-03-01T12:00:00Z",
        "expires_at": null,
        "priority": "normal",
        "content": {
            "human": {"text": "Can you send the Q1 invoice?", "format": "markdown", "locale": "en"},
            "structured": {"intent": "message.general@v1", "parameters": {"topic": "q1-invoice", "count": 1}},
            "encrypted": false
        },
        "attachments": [{
            "id": "att_01JMKB8A6D3NMHG5KP6VWBTK00",
            "filename": "invoice.pdf",
            "mime_type": "application/pdf",
            "size_bytes": 1024,
            "hash": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "blob_id": "blob_01JMKB8A6D3NMHG5KP6VWBTK01",
            "inline": false
        }],
        "references": {
            "in_reply_to": null,
            "linked_envelopes": ["env_01JMKB7X9Q2RVHF3KN4TYZPG01"],
            "linked_threads": [],
            "external": [{"type": "url", "ref": "https://example.test/q1"}]
        },
        "capabilities": ["reply", "forward"],
        "labels": ["finance"],
        "meta": {"node_id": "node.test", "received_at": "2026-03-01T12:00:01Z", "event_seq": 7}
    })
}

/// Sets (`Some`) or removes (`None`) the member at JSON pointer `ptr` (its parent must exist;
/// an array index replaces that element, `-` appends).
pub fn set(v: &mut Value, ptr: &str, new: Option<Value>) {
    if ptr.is_empty() {
        *v = new.unwrap_or(Value::Null);
        return;
    }
    let (parent, key) = ptr.rsplit_once('/').expect("pointer starts with /");
    let target = v
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("no parent for {ptr}"));
    match (target, new) {
        (Value::Object(m), Some(n)) => {
            m.insert(key.to_owned(), n);
        }
        (Value::Object(m), None) => {
            m.remove(key);
        }
        (Value::Array(a), Some(n)) if key == "-" => a.push(n),
        (Value::Array(a), Some(n)) => a[key.parse::<usize>().expect("index")] = n,
        (Value::Array(a), None) => {
            a.remove(key.parse::<usize>().expect("index"));
        }
        _ => panic!("bad pointer {ptr}"),
    }
}

/// How a signature is made: the bytes before the canonical payload.
#[derive(Debug, Clone, Copy)]
pub enum Prefix {
    /// `name ‖ 0x00 ‖ payload` (v1.1 §7.3 step 2 with the named context).
    Context(&'static str),
    /// The bare payload (v1.0 §7.2, legacy).
    Legacy,
    /// `name ‖ payload`, the separator forgotten.
    NoNul(&'static str),
}

/// The raw Ed25519 signature by `signer` over `prefix ‖ payload`.
pub fn raw_signature(signer: &str, prefix: Prefix, payload: &[u8]) -> [u8; 64] {
    let mut msg = Vec::new();
    match prefix {
        Prefix::Context(c) => {
            msg.extend_from_slice(c.as_bytes());
            msg.push(0);
        }
        Prefix::NoNul(c) => msg.extend_from_slice(c.as_bytes()),
        Prefix::Legacy => {}
    }
    msg.extend_from_slice(payload);
    signing_key(signer).sign(&msg).to_bytes()
}

/// Signs `env` in place: `signature = {algorithm, key_id, value[, context]}` where `key_id` is
/// `from.key_id` when that is a string (else [`ALICE_KEY_ID`]); `context` is written for
/// `Prefix::Context`. `from.key_id` itself is left as it is.
pub fn sign(env: &mut Value, signer: &str, prefix: Prefix) {
    if let Some(o) = env.as_object_mut() {
        o.remove("signature");
    }
    let Some(payload) = envelope_signing_payload(env) else {
        return;
    };
    let value = URL_SAFE_NO_PAD.encode(raw_signature(signer, prefix, &payload));
    let key_id = env
        .pointer("/from/key_id")
        .and_then(Value::as_str)
        .unwrap_or(ALICE_KEY_ID)
        .to_owned();
    let mut sig = json!({"algorithm": "Ed25519", "key_id": key_id, "value": value});
    if let Prefix::Context(c) = prefix {
        sig["context"] = c.into();
    }
    env["signature"] = sig;
}

/// The base envelope after `edit`, signed by alice with the envelope context.
pub fn signed(edit: impl FnOnce(&mut Value)) -> Value {
    let mut env = base_envelope();
    edit(&mut env);
    sign(&mut env, "alice", Prefix::Context(ENVELOPE_CTX));
    env
}

const PREFIXED: &str = "context-prefixed";
const LEGACY: &str = "legacy";
const SIG: &str = "SIGNATURE_INVALID";
const ENV: &str = "ENVELOPE_INVALID";

/// The expectation of one case.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Valid(&'static str),
    Invalid(&'static str),
}
use Expect::{Invalid, Valid};

/// A case over an envelope object, verified with alice's published key `k_sign_alice_1`
/// unless `verifier` names another key.
struct SigCase {
    id: &'static str,
    comment: &'static str,
    spec: &'static [&'static str],
    flags: &'static [&'static str],
    env: Value,
    expect: Expect,
}

fn finish(c: Case, expect: Expect) -> Case {
    match expect {
        Valid(mode) => c.valid_with(json!({ "mode": mode })),
        Invalid(code) => c.invalid(code),
    }
}

impl SigCase {
    fn case(self, verifier: &str, key_id: &str) -> Case {
        let c = Case::new(self.id, self.comment, self.spec)
            .flags(self.flags)
            .input("envelope", self.env)
            .input("public_key", public_b64url(verifier))
            .input("key_id", key_id);
        finish(c, self.expect)
    }
}

fn c(
    id: &'static str,
    comment: &'static str,
    spec: &'static [&'static str],
    flags: &'static [&'static str],
    env: Value,
    expect: Expect,
) -> SigCase {
    SigCase {
        id,
        comment,
        spec,
        flags,
        env,
        expect,
    }
}

const S73: &[&str] = &["v1.1 §7.3"];
const S72: &[&str] = &["v1.1 §7.2", "v1.1 §7.3", "v1.0 §8.4"];
const SLEG: &[&str] = &["v1.1 §7.3", "v1.0 §7.2"];

/// The base envelope signed by alice with `prefix`, then changed by `after`.
fn signed_then(prefix: Prefix, after: impl FnOnce(&mut Value)) -> Value {
    let mut env = base_envelope();
    sign(&mut env, "alice", prefix);
    after(&mut env);
    env
}

fn ctx() -> Prefix {
    Prefix::Context(ENVELOPE_CTX)
}

/// Signed correctly, then the member at `ptr` set (or removed).
fn tampered(ptr: &str, v: Option<Value>) -> Value {
    signed_then(ctx(), |e| set(e, ptr, v))
}

fn with_sig_value(value: Value) -> Value {
    signed_then(ctx(), |e| e["signature"]["value"] = value)
}

fn sig_bytes() -> [u8; 64] {
    let env = signed(|_| {});
    let v = URL_SAFE_NO_PAD
        .decode(env["signature"]["value"].as_str().unwrap_or_default())
        .unwrap_or_default();
    v.try_into().unwrap_or([0; 64])
}

/// `S + L` (little-endian) for the base signature: the same point equation, a non-canonical
/// scalar that RFC 8032 §5.1.7 requires verifiers to reject.
fn high_s() -> String {
    const L: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
        0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];
    let mut sig = sig_bytes();
    let mut carry = 0u16;
    for (i, l) in L.iter().enumerate() {
        let s = u16::from(sig[32 + i]) + u16::from(*l) + carry;
        sig[32 + i] = (s & 0xff) as u8;
        carry = s >> 8;
    }
    URL_SAFE_NO_PAD.encode(sig)
}

fn nfc() -> &'static str {
    "Caf\u{e9} invoice"
}

fn nfd() -> &'static str {
    "Cafe\u{301} invoice"
}

fn valid_cases() -> Vec<SigCase> {
    let legacy = |after: fn(&mut Value)| signed_then(Prefix::Legacy, after);
    vec![
        c(
            "prefixed.valid",
            "context-prefixed signature over the full message, context member set",
            S73,
            &["ValidSignature"],
            signed(|_| {}),
            Valid(PREFIXED),
        ),
        c(
            "prefixed.valid.context-absent",
            "context-prefixed signature without a context member: §7.3 tries the prefixed form first",
            S73,
            &["ValidSignature", "MigrationFallback"],
            signed_then(ctx(), |e| set(e, "/signature/context", None)),
            Valid(PREFIXED),
        ),
        c(
            "prefixed.valid.context-null",
            "context null is treated as absent (loom-protocol sign.rs: §7.3 distinguishes present from absent, null carries no context)",
            S73,
            &["ValidSignature", "Interpretation"],
            signed_then(ctx(), |e| e["signature"]["context"] = Value::Null),
            Valid(PREFIXED),
        ),
        c(
            "prefixed.valid.minimal",
            "only the members v1.1 §8.2 requires, signed",
            &["v1.1 §7.3", "v1.1 §8.2"],
            &["ValidSignature"],
            signed(|e| {
                for k in [
                    "parent_id",
                    "audience",
                    "expires_at",
                    "priority",
                    "attachments",
                    "references",
                    "capabilities",
                    "labels",
                    "meta",
                ] {
                    set(e, &format!("/{k}"), None)
                }
            }),
            Valid(PREFIXED),
        ),
        c(
            "prefixed.valid.agent",
            "agent sender with a delegation chain: the chain is signed as part of from",
            &["v1.1 §7.3", "v1.1 §13.5"],
            &["ValidSignature"],
            signed(|e| {
                e["from"]["type"] = "agent".into();
                e["from"]["delegation_chain"] = json!([{"delegator": "loom://carol@node.test", "delegate": "loom://alice@node.test", "scope": ["*"], "created_at": "2026-02-01T00:00:00Z", "signature": "AAAA"}]);
            }),
            Valid(PREFIXED),
        ),
        c(
            "prefixed.valid.nfd-text",
            "text in NFD signed as NFD: verifiers do not normalize, the bytes verify as sent",
            &["v1.1 §7.2", "v1.1 §7.3"],
            &["ValidSignature", "NoNormalization"],
            signed(|e| e["content"]["human"]["text"] = nfd().into()),
            Valid(PREFIXED),
        ),
        c(
            "prefixed.valid.non-ascii",
            "non-ASCII text and label (UTF-8 in the canonical form)",
            S72,
            &["ValidSignature"],
            signed(|e| {
                e["content"]["human"]["text"] =
                    "\u{1F4B6} Zahlung f\u{fc}r \u{65e5}\u{672c}".into();
                e["labels"] = json!(["\u{e9}t\u{e9}"]);
            }),
            Valid(PREFIXED),
        ),
        c(
            "prefixed.valid.numbers",
            "parameters hold numbers whose JCS form differs from naive printing (1e21, 0.1, -0)",
            S72,
            &["ValidSignature"],
            signed(|e| {
                e["content"]["structured"]["parameters"] =
                    json!({"big": 1e21, "small": 0.000001, "tenth": 0.1, "neg_zero": -0.0})
            }),
            Valid(PREFIXED),
        ),
        c(
            "unsigned.meta-changed",
            "meta is excluded from the signed bytes: changing it keeps the signature valid",
            S72,
            &["ValidSignature", "UnsignedMembers"],
            tampered("/meta/event_seq", Some(json!(8))),
            Valid(PREFIXED),
        ),
        c(
            "unsigned.meta-removed",
            "meta removed after signing: still valid",
            S72,
            &["ValidSignature", "UnsignedMembers"],
            tampered("/meta", None),
            Valid(PREFIXED),
        ),
        c(
            "unsigned.meta-added",
            "meta added to an envelope signed without one: still valid",
            S72,
            &["ValidSignature", "UnsignedMembers"],
            {
                let mut e = signed(|e| set(e, "/meta", None));
                e["meta"] = json!({"node_id": "relay.test"});
                e
            },
            Valid(PREFIXED),
        ),
        c(
            "unsigned.signature-extra-member",
            "an extra member inside signature is not signed (the whole signature object is excluded)",
            S72,
            &["ValidSignature", "UnsignedMembers"],
            tampered("/signature/note", Some(json!("relayed"))),
            Valid(PREFIXED),
        ),
        c(
            "legacy.valid",
            "unprefixed (v1.0) signature, no context member: accepted by the §7.3 fallback during the migration window",
            SLEG,
            &["ValidSignature", "MigrationFallback"],
            legacy(|_| {}),
            Valid(LEGACY),
        ),
        c(
            "legacy.valid.context-null",
            "legacy signature with context null, treated as absent (loom-protocol sign.rs)",
            SLEG,
            &["ValidSignature", "MigrationFallback", "Interpretation"],
            legacy(|e| e["signature"]["context"] = Value::Null),
            Valid(LEGACY),
        ),
        c(
            "legacy.valid.meta-changed",
            "legacy signature: meta excluded in v1.0 too (v1.0 §8.4 item 6)",
            SLEG,
            &["ValidSignature", "MigrationFallback", "UnsignedMembers"],
            legacy(|e| e["meta"]["event_seq"] = json!(99)),
            Valid(LEGACY),
        ),
    ]
}

fn context_cases() -> Vec<SigCase> {
    let with_ctx = |prefix: Prefix, context: Option<Value>| {
        signed_then(prefix, |e| set(e, "/signature/context", context))
    };
    vec![
        c(
            "legacy.context-claimed",
            "legacy signature but context LOOM-ENVELOPE-SIG-v1 present: only the prefixed form may be tried",
            SLEG,
            &["ContextMismatch"],
            with_ctx(Prefix::Legacy, Some(ENVELOPE_CTX.into())),
            Invalid(SIG),
        ),
        c(
            "legacy.tampered.text",
            "legacy signature, text changed after signing",
            SLEG,
            &["TamperedField", "MigrationFallback"],
            signed_then(Prefix::Legacy, |e| {
                e["content"]["human"]["text"] = "Send it to me instead".into()
            }),
            Invalid(SIG),
        ),
        c(
            "legacy.signed-with-meta",
            "legacy signer included meta in the signed bytes (v1.0 §8.4 excludes it)",
            SLEG,
            &["UnsignedMembers", "MigrationFallback"],
            {
                let mut e = base_envelope();
                let sig = raw_signature(
                    "alice",
                    Prefix::Legacy,
                    &loom_protocol::jcs::to_canonical_bytes(&e),
                );
                e["signature"] = json!({"algorithm": "Ed25519", "key_id": ALICE_KEY_ID, "value": URL_SAFE_NO_PAD.encode(sig)});
                e
            },
            Invalid(SIG),
        ),
        c(
            "context.delegation-prefix.envelope-claimed",
            "signed under LOOM-DELEGATION-SIG-v1 but context says LOOM-ENVELOPE-SIG-v1 (cross-protocol replay)",
            &["v1.1 §7.3", "v1.1 §13.3.1"],
            &["WrongContext"],
            with_ctx(Prefix::Context(DELEGATION_CTX), Some(ENVELOPE_CTX.into())),
            Invalid(SIG),
        ),
        c(
            "context.delegation-prefix.delegation-claimed",
            "signed under and labelled LOOM-DELEGATION-SIG-v1: not the envelope context",
            &["v1.1 §7.3", "v1.1 §13.3.1"],
            &["WrongContext"],
            with_ctx(Prefix::Context(DELEGATION_CTX), Some(DELEGATION_CTX.into())),
            Invalid(SIG),
        ),
        c(
            "context.delegation-prefix.absent",
            "signed under LOOM-DELEGATION-SIG-v1, no context: neither the envelope prefix nor the legacy form verifies",
            &["v1.1 §7.3", "v1.1 §13.3.1"],
            &["WrongContext", "MigrationFallback"],
            with_ctx(Prefix::Context(DELEGATION_CTX), None),
            Invalid(SIG),
        ),
        c(
            "context.pop-prefix",
            "signed under LOOM-CAPABILITY-POP-v1, labelled as an envelope signature",
            &["v1.1 §7.3", "v1.1 §12.6"],
            &["WrongContext"],
            with_ctx(Prefix::Context(POP_CTX), Some(ENVELOPE_CTX.into())),
            Invalid(SIG),
        ),
        c(
            "context.unknown-version",
            "context LOOM-ENVELOPE-SIG-v2, signed with that prefix: not a context v1.1 defines",
            S73,
            &["WrongContext"],
            with_ctx(
                Prefix::Context("LOOM-ENVELOPE-SIG-v2"),
                Some("LOOM-ENVELOPE-SIG-v2".into()),
            ),
            Invalid(SIG),
        ),
        c(
            "context.lowercase",
            "context in lowercase, signed with the lowercase prefix: the prefix is case-sensitive bytes",
            S73,
            &["WrongContext"],
            with_ctx(
                Prefix::Context("loom-envelope-sig-v1"),
                Some("loom-envelope-sig-v1".into()),
            ),
            Invalid(SIG),
        ),
        c(
            "context.trailing-nul",
            "context member includes the NUL separator: the member names the context without it",
            S73,
            &["WrongContext"],
            with_ctx(ctx(), Some("LOOM-ENVELOPE-SIG-v1\u{0}".into())),
            Invalid(SIG),
        ),
        c(
            "context.empty",
            "context is the empty string: present, so it selects a prefix, and no empty prefix is defined",
            S73,
            &["WrongContext"],
            with_ctx(ctx(), Some("".into())),
            Invalid(SIG),
        ),
        c(
            "context.not-string",
            "context is a number",
            S73,
            &["WrongContext"],
            with_ctx(ctx(), Some(json!(1))),
            Invalid(SIG),
        ),
        c(
            "context.no-nul-separator",
            "signed over LOOM-ENVELOPE-SIG-v1 ‖ payload without the 0x00 byte",
            S73,
            &["WrongContext"],
            with_ctx(Prefix::NoNul(ENVELOPE_CTX), Some(ENVELOPE_CTX.into())),
            Invalid(SIG),
        ),
        c(
            "context.no-nul-separator.absent",
            "signed without the 0x00 byte, no context: neither form verifies",
            S73,
            &["WrongContext", "MigrationFallback"],
            with_ctx(Prefix::NoNul(ENVELOPE_CTX), None),
            Invalid(SIG),
        ),
        c(
            "context.signed-with-meta",
            "context-prefixed signature computed over bytes that include meta",
            S72,
            &["UnsignedMembers"],
            {
                let mut e = base_envelope();
                let sig =
                    raw_signature("alice", ctx(), &loom_protocol::jcs::to_canonical_bytes(&e));
                e["signature"] = json!({"algorithm": "Ed25519", "key_id": ALICE_KEY_ID, "value": URL_SAFE_NO_PAD.encode(sig), "context": ENVELOPE_CTX});
                e
            },
            Invalid(SIG),
        ),
        c(
            "context.signed-non-canonical",
            "signature over serde's sorted-but-pretty JSON instead of the RFC 8785 form",
            S72,
            &["NonCanonicalPayload"],
            {
                let mut e = base_envelope();
                set(&mut e, "/meta", None);
                let text = serde_json::to_string_pretty(&e).unwrap_or_default();
                let sig = raw_signature("alice", ctx(), text.as_bytes());
                e["signature"] = json!({"algorithm": "Ed25519", "key_id": ALICE_KEY_ID, "value": URL_SAFE_NO_PAD.encode(sig), "context": ENVELOPE_CTX});
                e
            },
            Invalid(SIG),
        ),
    ]
}

/// One signed member changed after signing: each is covered by the signature (v1.1 §7.2
/// excludes only `signature`, `meta` and explicitly ephemeral fields).
fn tamper_cases() -> Vec<SigCase> {
    let t = |id, comment, ptr: &str, v: Option<Value>| {
        c(
            id,
            comment,
            S72,
            &["TamperedField"],
            tampered(ptr, v),
            Invalid(SIG),
        )
    };
    vec![
        t(
            "tampered.loom",
            "loom version changed from 1.1 to 1.0",
            "/loom",
            Some(json!("1.0")),
        ),
        t(
            "tampered.id",
            "envelope id changed",
            "/id",
            Some(json!("env_01JMKB7X9Q2RVHF3KN4TYZPG09")),
        ),
        t(
            "tampered.thread-id",
            "thread_id changed (envelope moved to another thread)",
            "/thread_id",
            Some(json!("thr_01JMKB7W8P1QSGF2JM3SXYZR09")),
        ),
        t(
            "tampered.parent-id",
            "parent_id changed from null to an envelope",
            "/parent_id",
            Some(json!("env_01JMKB7X9Q2RVHF3KN4TYZPG01")),
        ),
        t(
            "tampered.parent-id-removed",
            "parent_id null removed: null members are part of the canonical form",
            "/parent_id",
            None,
        ),
        t(
            "tampered.expires-at-added",
            "expires_at set after signing",
            "/expires_at",
            Some(json!("2026-03-02T12:00:00Z")),
        ),
        t(
            "tampered.type",
            "type changed from message to notification",
            "/type",
            Some(json!("notification")),
        ),
        t(
            "tampered.from-identity",
            "from.identity changed (sender spoofing)",
            "/from/identity",
            Some(json!("loom://mallory@node.test")),
        ),
        t(
            "tampered.from-display",
            "from.display changed",
            "/from/display",
            Some(json!("Alice (CEO)")),
        ),
        t(
            "tampered.from-type",
            "from.type changed from human to service",
            "/from/type",
            Some(json!("service")),
        ),
        t(
            "tampered.to-identity",
            "primary recipient changed",
            "/to/0/identity",
            Some(json!("loom://mallory@node.test")),
        ),
        t(
            "tampered.to-role",
            "recipient role changed from primary to cc",
            "/to/0/role",
            Some(json!("cc")),
        ),
        t(
            "tampered.to-added",
            "a recipient added after signing",
            "/to/-",
            Some(json!({"identity": "loom://mallory@node.test", "role": "bcc"})),
        ),
        t(
            "tampered.audience",
            "audience mode narrowed from thread to recipients",
            "/audience/mode",
            Some(json!("recipients")),
        ),
        t(
            "tampered.created-at",
            "created_at moved one second",
            "/created_at",
            Some(json!("2026-03-01T12:00:01Z")),
        ),
        t(
            "tampered.created-at-same-instant",
            "created_at rewritten as the same instant with milliseconds: the signed string differs",
            "/created_at",
            Some(json!("2026-03-01T12:00:00.000Z")),
        ),
        t(
            "tampered.priority",
            "priority raised to urgent",
            "/priority",
            Some(json!("urgent")),
        ),
        t(
            "tampered.content-text",
            "content.human.text changed",
            "/content/human/text",
            Some(json!("Send the Q1 invoice to mallory")),
        ),
        t(
            "tampered.content-format",
            "content.human.format changed",
            "/content/human/format",
            Some(json!("html")),
        ),
        t(
            "tampered.content-intent",
            "content.structured.intent changed",
            "/content/structured/intent",
            Some(json!("message.question@v1")),
        ),
        t(
            "tampered.content-parameter",
            "a structured parameter changed",
            "/content/structured/parameters/topic",
            Some(json!("q2-invoice")),
        ),
        t(
            "tampered.content-number",
            "integer parameter 1 changed to 1.5",
            "/content/structured/parameters/count",
            Some(json!(1.5)),
        ),
        t(
            "tampered.content-encrypted",
            "content.encrypted false removed",
            "/content/encrypted",
            None,
        ),
        t(
            "tampered.attachment-hash",
            "attachment hash changed (blob substitution)",
            "/attachments/0/hash",
            Some(json!(
                "sha256:0000000000000000000000000000000000000000000000000000000000000000"
            )),
        ),
        t(
            "tampered.attachment-size",
            "attachment size_bytes changed",
            "/attachments/0/size_bytes",
            Some(json!(2048)),
        ),
        t(
            "tampered.attachments-removed",
            "attachments removed",
            "/attachments",
            None,
        ),
        t(
            "tampered.references",
            "references.in_reply_to set",
            "/references/in_reply_to",
            Some(json!("env_01JMKB7X9Q2RVHF3KN4TYZPG01")),
        ),
        t(
            "tampered.capabilities",
            "capability added (recipient grants itself delegate)",
            "/capabilities/-",
            Some(json!("delegate")),
        ),
        t(
            "tampered.labels",
            "labels changed",
            "/labels/0",
            Some(json!("spam")),
        ),
        t(
            "tampered.unknown-member-added",
            "an unknown top-level member added: it is signed like any other",
            "/x_vendor",
            Some(json!({"k": 1})),
        ),
        c(
            "tampered.nfc-to-nfd",
            "signed with NFC text, delivered with the NFD form of the same text: no normalization, different bytes",
            &["v1.1 §7.2", "v1.1 §7.3"],
            &["TamperedField", "NoNormalization"],
            {
                let mut e = signed(|e| e["content"]["human"]["text"] = nfc().into());
                e["content"]["human"]["text"] = nfd().into();
                e
            },
            Invalid(SIG),
        ),
        c(
            "tampered.nfd-to-nfc",
            "signed with NFD text, delivered NFC-normalized by a relay",
            &["v1.1 §7.2", "v1.1 §7.3"],
            &["TamperedField", "NoNormalization"],
            {
                let mut e = signed(|e| e["content"]["human"]["text"] = nfd().into());
                e["content"]["human"]["text"] = nfc().into();
                e
            },
            Invalid(SIG),
        ),
    ]
}

fn encoding_cases() -> Vec<SigCase> {
    let good = signed(|_| {})["signature"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        good.contains(['-', '_']),
        "the base signature needs a - or _ to test the standard alphabet"
    );
    let bytes = sig_bytes();
    let enc = |b: &[u8]| Value::from(URL_SAFE_NO_PAD.encode(b));
    let mut flipped = bytes;
    flipped[0] ^= 1;
    let mut flipped_s = bytes;
    flipped_s[40] ^= 0x80;
    let mut long = bytes.to_vec();
    long.push(0);
    // 64 bytes = 85 full base64 characters + 1 carrying 4 data bits and 2 bits that must be 0.
    let last = good.chars().last().unwrap_or('A');
    let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let pos = alphabet.find(last).unwrap_or(0);
    let stray = format!(
        "{}{}",
        &good[..good.len() - 1],
        alphabet.chars().nth(pos | 1).unwrap_or('B')
    );
    let e = &["v1.1 §7.3", "v1.1 Appendix D"];
    let bad = |id, comment, v: Value, flags: &'static [&'static str]| {
        c(id, comment, e, flags, with_sig_value(v), Invalid(SIG))
    };
    vec![
        bad(
            "value.padded",
            "base64url with '=' padding: LOOM binary fields are unpadded base64url (loom-protocol keys.rs)",
            format!("{good}==").into(),
            &["MalformedSignature", "Interpretation"],
        ),
        bad(
            "value.standard-alphabet",
            "the same bytes in the standard alphabet ('+' and '/' instead of '-' and '_')",
            STANDARD.encode(bytes).trim_end_matches('=').into(),
            &["MalformedSignature"],
        ),
        bad(
            "value.63-bytes",
            "63-byte value (last byte dropped)",
            enc(&bytes[..63]),
            &["MalformedSignature"],
        ),
        bad(
            "value.65-bytes",
            "65-byte value (a zero byte appended)",
            enc(&long),
            &["MalformedSignature"],
        ),
        bad(
            "value.truncated-char",
            "85 characters: not a whole number of bytes",
            good[..85].into(),
            &["MalformedSignature"],
        ),
        bad(
            "value.stray-bits",
            "last character has its two unused low bits set: non-canonical base64url of the same 64 bytes (RFC 4648 §3.5, strict decoding)",
            stray.into(),
            &["MalformedSignature", "Interpretation"],
        ),
        bad(
            "value.whitespace",
            "a newline inside the value",
            format!("{}\n{}", &good[..43], &good[43..]).into(),
            &["MalformedSignature"],
        ),
        bad(
            "value.empty",
            "empty value",
            "".into(),
            &["MalformedSignature"],
        ),
        bad(
            "value.all-zero",
            "64 zero bytes (R is a small-order point, S is 0)",
            enc(&[0; 64]),
            &["MalformedSignature"],
        ),
        bad(
            "value.not-string",
            "value is a number",
            json!(0),
            &["MalformedSignature"],
        ),
        bad(
            "value.bit-flip-r",
            "one bit of R flipped",
            enc(&flipped),
            &["MalformedSignature"],
        ),
        bad(
            "value.bit-flip-s",
            "one bit of S flipped",
            enc(&flipped_s),
            &["MalformedSignature"],
        ),
        bad(
            "value.high-s",
            "S replaced by S + L: the same signature equation, but RFC 8032 §5.1.7 requires S < L (malleability)",
            high_s().into(),
            &["MalformedSignature", "Malleability"],
        ),
        c(
            "value.missing",
            "signature without value",
            e,
            &["MalformedSignature"],
            tampered("/signature/value", None),
            Invalid(SIG),
        ),
        c(
            "algorithm.missing",
            "signature without algorithm",
            &["v1.1 §7.1", "v1.1 §8.1"],
            &["MalformedSignature"],
            tampered("/signature/algorithm", None),
            Invalid(SIG),
        ),
        c(
            "algorithm.lowercase",
            "algorithm ed25519: the registry value is exactly Ed25519 (loom-protocol compares exactly)",
            &["v1.1 §7.1", "v1.1 §8.1"],
            &["MalformedSignature", "Interpretation"],
            tampered("/signature/algorithm", Some(json!("ed25519"))),
            Invalid(SIG),
        ),
        c(
            "algorithm.other",
            "algorithm EdDSA: not the §7.1 algorithm name",
            &["v1.1 §7.1", "v1.1 §8.1"],
            &["MalformedSignature"],
            tampered("/signature/algorithm", Some(json!("EdDSA"))),
            Invalid(SIG),
        ),
        c(
            "signature.missing",
            "no signature member: all envelopes MUST be signed",
            &["v1.1 §7.1", "v1.1 §8.2"],
            &["MissingSignature"],
            tampered("/signature", None),
            Invalid(SIG),
        ),
        c(
            "signature.not-object",
            "signature is the bare value string",
            &["v1.1 §7.3", "v1.1 §8.1"],
            &["MissingSignature"],
            {
                let mut e = signed(|_| {});
                e["signature"] = e["signature"]["value"].clone();
                e
            },
            Invalid(SIG),
        ),
        c(
            "envelope.not-object",
            "the envelope is an array, not a JSON object",
            &["v1.1 §8.1"],
            &["NotAnEnvelope"],
            json!([signed(|_| {})]),
            Invalid(ENV),
        ),
    ]
}

fn key_cases() -> Vec<Case> {
    vec![
        c("key.other-signer", "signed by mallory's key, verified with alice's published key", S73, &["WrongKey"], { let mut e = base_envelope(); sign(&mut e, "mallory", ctx()); e }, Invalid(SIG)).case("alice", ALICE_KEY_ID),
        c("key.verifier-mismatch", "signed by alice, the resolved key is bob's", S73, &["WrongKey"], signed(|_| {}), Invalid(SIG)).case("bob", ALICE_KEY_ID),
        c("key.other-signer-legacy", "legacy signature by mallory: the fallback also uses alice's key", SLEG, &["WrongKey", "MigrationFallback"], { let mut e = base_envelope(); sign(&mut e, "mallory", Prefix::Legacy); e }, Invalid(SIG)).case("alice", ALICE_KEY_ID),
        c("key.unknown-key-id", "signature.key_id k_sign_alice_2 (from.key_id too) is not the key the identity document publishes", &["v1.1 §7.3", "v1.0 §7.2"], &["WrongKey"], signed(|e| e["from"]["key_id"] = "k_sign_alice_2".into()), Invalid(SIG)).case("alice", ALICE_KEY_ID),
        c("key.from-key-id-differs", "signature.key_id names the published key but from.key_id (the sender's signing key reference, signed) names another (loom-protocol validate.rs: they must agree)", &["v1.1 §7.3", "v1.1 §8.2"], &["WrongKey", "Interpretation"], { let mut e = base_envelope(); e["from"]["key_id"] = "k_sign_alice_2".into(); sign(&mut e, "alice", ctx()); e["signature"]["key_id"] = ALICE_KEY_ID.into(); e }, Invalid(SIG)).case("alice", ALICE_KEY_ID),
        c("key.from-key-id-tampered", "from.key_id changed after signing", S72, &["TamperedField", "WrongKey"], tampered("/from/key_id", Some(json!("k_sign_alice_2"))), Invalid(SIG)).case("alice", ALICE_KEY_ID),
        c("key.other-key-id-valid", "a different published key ID, used consistently everywhere, verifies", S73, &["ValidSignature"], signed(|e| e["from"]["key_id"] = "k_sign_dev_01JMKBA2F6GSNKJ9NR0WYDM0".into()), Valid(PREFIXED)).case("alice", "k_sign_dev_01JMKBA2F6GSNKJ9NR0WYDM0"),
    ]
}

/// The envelope JSON text as sent: each of these changes the text, never the canonical form.
fn text_cases() -> Vec<Case> {
    let env = signed(|_| {});
    let compact = serde_json::to_string(&env).unwrap_or_default();
    let canonical = loom_protocol::jcs::to_canonical_string(&env);
    let pretty = serde_json::to_string_pretty(&env).unwrap_or_default();
    let reordered = reversed_text(&env);
    let text = env["content"]["human"]["text"].as_str().unwrap_or_default();
    let ascii_escaped = compact.replacen(text, &text.replace('C', "\\u0043"), 1);
    let count_forms = compact.replacen("\"count\":1", "\"count\":1.0e0", 1);
    let solidus = compact.replacen("https://", "https:\\/\\/", 1);
    let dup = compact.replacen(
        "{\"attachments\"",
        "{\"priority\":\"low\",\"attachments\"",
        1,
    );
    let nfc_env = signed(|e| e["content"]["human"]["text"] = nfc().into());
    let nfc_compact = serde_json::to_string(&nfc_env).unwrap_or_default();
    let nfc_escaped = nfc_compact.replacen(nfc(), "Caf\\u00e9 invoice", 1);
    let nfd_escaped = nfc_compact.replacen(nfc(), "Cafe\\u0301 invoice", 1);
    let lone = compact.replacen(text, "\\ud800", 1);
    let t = |id,
             comment,
             spec: &'static [&'static str],
             flags: &'static [&'static str],
             s: String,
             expect| {
        finish(
            Case::new(id, comment, spec)
                .flags(flags)
                .input("envelope_text", s)
                .input("public_key", public_b64url("alice"))
                .input("key_id", ALICE_KEY_ID),
            expect,
        )
    };
    assert!(dup.len() > compact.len() && count_forms != compact && solidus != compact);
    vec![
        t(
            "text.canonical",
            "the envelope text is already in RFC 8785 form",
            S72,
            &["ValidSignature"],
            canonical,
            Valid(PREFIXED),
        ),
        t(
            "text.pretty",
            "pretty-printed with newlines and indentation: whitespace is not in the canonical form",
            S72,
            &["ValidSignature", "TextForm"],
            pretty,
            Valid(PREFIXED),
        ),
        t(
            "text.reordered",
            "every object's members in reverse order: JCS sorts them",
            S72,
            &["ValidSignature", "TextForm"],
            reordered,
            Valid(PREFIXED),
        ),
        t(
            "text.escaped-ascii",
            "a letter of the text written as \\u0043: the decoded string is unchanged",
            S72,
            &["ValidSignature", "TextForm"],
            ascii_escaped,
            Valid(PREFIXED),
        ),
        t(
            "text.escaped-non-ascii",
            "é written as \\u00e9: the canonical form carries the UTF-8 character",
            S72,
            &["ValidSignature", "TextForm"],
            nfc_escaped,
            Valid(PREFIXED),
        ),
        t(
            "text.escaped-solidus",
            "'/' written as \\/ in a URL",
            S72,
            &["ValidSignature", "TextForm"],
            solidus,
            Valid(PREFIXED),
        ),
        t(
            "text.number-form",
            "integer 1 written as 1.0e0: the same double, canonical 1",
            S72,
            &["ValidSignature", "TextForm"],
            count_forms,
            Valid(PREFIXED),
        ),
        t(
            "text.escaped-nfd",
            "the NFC text written with an escaped combining accent (e\\u0301): a different string",
            &["v1.1 §7.2", "v1.1 §7.3"],
            &["TamperedField", "NoNormalization"],
            nfd_escaped,
            Invalid(SIG),
        ),
        t(
            "text.duplicate-member",
            "a duplicate top-level member name: RFC 8785 input must be I-JSON, and the two readings sign differently",
            &["v1.1 §7.2"],
            &["MalformedJson"],
            dup,
            Invalid(ENV),
        ),
        t(
            "text.lone-surrogate",
            "the text holds a lone surrogate escape \\ud800",
            &["v1.1 §7.2"],
            &["MalformedJson"],
            lone,
            Invalid(ENV),
        ),
        t(
            "text.trailing-garbage",
            "a second value after the envelope",
            &["v1.1 §7.2"],
            &["MalformedJson"],
            format!("{compact} {{}}"),
            Invalid(ENV),
        ),
    ]
}

/// `v` with every object's members written in reverse order.
fn reversed_text(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let members: Vec<String> = m
                .iter()
                .rev()
                .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), reversed_text(v)))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(reversed_text).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// Builds the file.
pub fn build() -> FileBuilder {
    let object_cases: Vec<Case> = [
        valid_cases(),
        context_cases(),
        tamper_cases(),
        encoding_cases(),
    ]
    .into_iter()
    .flatten()
    .map(|s| s.case("alice", ALICE_KEY_ID))
    .chain(key_cases())
    .collect();
    notes(FileBuilder::new(
        "envelope-signature",
        "Envelope signatures (v1.1 §7.1-§7.3; v1.0 §7.2): the signed bytes are LOOM-ENVELOPE-SIG-v1, 0x00, then the RFC 8785 form of the envelope without signature and meta. 'public_key' (base64url, 32 bytes) is the sender's key published under 'key_id'; keys come from fixed seeds (vectors/src/generate/keys.rs). The output names how the signature was made: context-prefixed or legacy (v1.0, accepted by the §7.3 migration fallback only when signature.context is absent).",
    ))
    .group("verify-envelope-signature", Value::Null)
    .tests(object_cases)
    .group("verify-envelope-signature-text", Value::Null)
    .tests(text_cases())
}

fn notes(f: FileBuilder) -> FileBuilder {
    f.note("ValidSignature", "A correctly signed envelope that must verify.", "over-strict verification", "Legitimate mail is rejected.")
        .note("MigrationFallback", "The v1.1 §7.3 rule for an absent signature.context: try the prefixed form, then the legacy unprefixed form.", "missing or unconditional legacy fallback", "Pre-v1.1 senders are rejected, or the fallback is taken when a context is present.")
        .note("Interpretation", "The spec is silent on this detail; the expectation pins loom-protocol's documented interpretation, named in the comment.", "divergent reading of an underspecified rule", "Two conforming nodes disagree on the same envelope.")
        .note("UnsignedMembers", "signature and meta are excluded from the signed bytes (v1.1 §7.2); nothing else is.", "wrong signing payload", "Relays that annotate meta break signatures, or meta is forged into signed data.")
        .note("NoNormalization", "Strings are signed as their exact code points: no Unicode normalization (RFC 8785 §3.2.2.2).", "normalizing before hashing", "Two different texts share one signature, or relayed text fails to verify.")
        .note("ContextMismatch", "A present context is authoritative: the legacy fallback must not be tried.", "downgrade to the legacy form", "An attacker strips the domain separation the context announces.")
        .note("WrongContext", "The signature was made under another domain-separation prefix (or none where one is claimed).", "missing domain separation", "A delegation or PoP signature is replayed as an envelope signature.")
        .note("NonCanonicalPayload", "The signature covers a serialization other than RFC 8785.", "wrong canonicalization", "Signatures do not interoperate across implementations.")
        .note("TamperedField", "A signed member changed after signing.", "incomplete signature coverage", "An attacker alters routing or content without detection.")
        .note("MalformedSignature", "The signature object or its value is malformed: wrong encoding, length or bytes.", "lenient decoding", "Signature malleability or acceptance of garbage.")
        .note("Malleability", "A non-canonical scalar S >= L (RFC 8032 §5.1.7).", "non-strict Ed25519 verification", "One envelope has several valid signature strings, breaking dedupe by signature.")
        .note("MissingSignature", "No usable signature object.", "unsigned envelope accepted", "Anyone can send as anyone.")
        .note("NotAnEnvelope", "The input is not a JSON object.", "type confusion", "Crashes or undefined behaviour on hostile input.")
        .note("WrongKey", "The signature does not match the key the sender's identity document publishes under signature.key_id.", "key confusion", "Sender impersonation.")
        .note("TextForm", "The JSON text differs from the canonical form only in whitespace, member order, escapes or number spelling.", "signing the received bytes instead of the canonical form", "Valid envelopes fail after a relay re-serializes them.")
        .note("MalformedJson", "The envelope text is not I-JSON, so it has no canonical form (v1.1 §7.2).", "lenient JSON parsing", "Parser differentials let two nodes see different envelopes under one signature.")
}

/// The inputs and outputs of the file.
pub fn schema() -> AreaSchema {
    AreaSchema {
        kinds: vec![
            "verify-envelope-signature",
            "verify-envelope-signature-text",
        ],
        inputs: vec![
            (
                "envelope",
                json!({"description": "the envelope as a JSON value (normally an object)"}),
            ),
            (
                "envelope_text",
                json!({"type": "string", "description": "the envelope as JSON text, parsed strictly (I-JSON)"}),
            ),
            (
                "public_key",
                json!({"type": "string", "pattern": "^[A-Za-z0-9_-]{43}$"}),
            ),
            ("key_id", string()),
        ],
        required: vec!["public_key", "key_id"],
        expected: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["mode"],
            "properties": {"mode": {"enum": [PREFIXED, LEGACY]}}
        }),
        errors: vec![SIG, ENV],
    }
}
