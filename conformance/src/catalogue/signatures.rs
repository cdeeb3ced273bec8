//! Envelope signatures (v1.1 §7.1–§7.3, §16.1): the context prefix and its legacy fallback,
//! every signed member, the key a signature is checked with, the base64url value and the
//! RFC 8785 form the signature covers.

use super::envelopes::stored;
use crate::case::{Case, Mutant, Need, Strength, Verdict};
use crate::ctx::data::MESSAGE_INTENT;
use crate::ctx::{Ctx, Ident};
use crate::finding::setup_step;
use loom_protocol::envelope::{sign_envelope, sign_envelope_legacy};
use loom_protocol::id::{KeyId, KeyKind};
use loom_protocol::keys::b64url_encode;
use serde_json::{Value, json};

const P: &[Need] = &[Need::Provisioning];

/// Alice and Bob, and an unsigned message from Alice to Bob in a fresh thread.
async fn setup(cx: &mut Ctx) -> Result<(Ident, Ident, Value), crate::case::Finding> {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let t = cx.data.thread_id();
    let env = cx.data.message(&alice, &t, None, &[&bob], "signed text");
    Ok((alice, bob, env))
}

/// What every control of this file is: the probe's envelope signed by its sender's key.
const CONTROL: &str = "the same envelope, signed by its sender's registered key";

/// Where a sentence names the code of a signature that is there and fails verification: §24.2
/// "SIGNATURE_INVALID | 401 | Signature verification failed", and the §24.1 example, which
/// reports that very condition as `ENVELOPE_INVALID` ("Envelope signature verification
/// failed", v1.0 §21.1 alike). Either passes (issue 29, item 4).
pub(super) const SIGNATURE_FAILED: &[&str] = &["SIGNATURE_INVALID", "ENVELOPE_INVALID"];

/// Why either code fits a signature that fails verification.
const FAILED_WHY: &str = "§24.2 names SIGNATURE_INVALID for a failed verification and the §24.1 example ENVELOPE_INVALID";

/// `env` must be refused with one of [`SIGNATURE_FAILED`] — its signature is there and fails
/// verification — beside `control`, the same envelope signed properly.
async fn refused(cx: &mut Ctx, from: &Ident, env: &Value, control: &Value) -> Verdict {
    cx.net
        .send_probe_and_control(from, env, control, CONTROL, SIGNATURE_FAILED, FAILED_WHY)
        .await
}

/// `env` must be refused beside `control` with any §24.1 error of the 4xx family: a signature
/// that is absent, malformed or names no key of the sender cannot be verified and breaks the
/// envelope's form, and §24.2 names no code for it (the SHOULD twins `*.code` ask for
/// SIGNATURE_INVALID).
async fn refused_either(cx: &mut Ctx, from: &Ident, env: &Value, control: &Value) -> Verdict {
    cx.net
        .send_probe_and_control(from, env, control, CONTROL, &[], "")
        .await
}

/// `env` signed properly by `from` (a control).
fn signed_by(from: &Ident, env: &Value) -> Value {
    let mut c = env.clone();
    from.sign(&mut c);
    c
}

/// `env` must be accepted (201).
async fn accepted(cx: &mut Ctx, from: &Ident, env: &Value) -> Result<Value, crate::case::Finding> {
    let i = cx.net.send(from, env).await?;
    cx.net.created_body(i)
}

async fn prefixed_accepted(cx: &mut Ctx) -> Verdict {
    let (alice, bob, mut env) = setup(cx).await?;
    alice.sign(&mut env);
    accepted(cx, &alice, &env).await?;
    let path = format!("/v1/envelopes/{}", env["id"].as_str().unwrap_or_default());
    let i = cx.net.get(&path, &bob.token).await?;
    let got = stored(&cx.net.ok_body(i)?);
    cx.net.expect_eq(
        "signature.context of the envelope as the recipient reads it",
        &json!("LOOM-ENVELOPE-SIG-v1"),
        &got["signature"]["context"],
    )
}

async fn legacy_accepted(cx: &mut Ctx) -> Verdict {
    let (alice, _, mut env) = setup(cx).await?;
    let _ = sign_envelope_legacy(&mut env, alice.id.signing_key(), alice.id.key_id_typed());
    accepted(cx, &alice, &env).await.map(|_| ())
}

async fn legacy_claims_context(cx: &mut Ctx) -> Verdict {
    let (alice, _, mut env) = setup(cx).await?;
    let control = signed_by(&alice, &env);
    let _ = sign_envelope_legacy(&mut env, alice.id.signing_key(), alice.id.key_id_typed());
    env["signature"]["context"] = "LOOM-ENVELOPE-SIG-v1".into();
    refused(cx, &alice, &env, &control).await
}

async fn unknown_context(cx: &mut Ctx) -> Verdict {
    let (alice, _, mut env) = setup(cx).await?;
    alice.sign(&mut env);
    let control = env.clone();
    env["signature"]["context"] = "LOOM-ENVELOPE-SIG-v9".into();
    refused_either(cx, &alice, &env, &control).await
}

async fn missing(cx: &mut Ctx) -> Verdict {
    let (alice, _, env) = setup(cx).await?;
    let control = signed_by(&alice, &env);
    refused_either(cx, &alice, &env, &control).await
}

/// The SHOULD twin: the code the harness recommends, SIGNATURE_INVALID alone.
async fn missing_code(cx: &mut Ctx) -> Verdict {
    let (alice, _, env) = setup(cx).await?;
    let control = signed_by(&alice, &env);
    cx.net
        .send_probe_and_control(&alice, &env, &control, CONTROL, &["SIGNATURE_INVALID"], "")
        .await
}

/// Signs, then changes the member at `pointer` to `value`; the result must be refused.
async fn tampered(cx: &mut Ctx, pointer: &str, value: Value) -> Verdict {
    let (alice, _, mut env) = setup(cx).await?;
    prepare_member(cx, &mut env, pointer);
    alice.sign(&mut env);
    // The untampered envelope is good: tamper a copy, send it, then send the original.
    let mut bad = env.clone();
    match bad.pointer_mut(pointer) {
        Some(slot) => *slot = value,
        None => return Err(crate::case::Finding::Error(format!("no member {pointer}"))),
    }
    refused(cx, &alice, &bad, &env).await
}

/// Gives the members the tamper cases change a signed value first.
fn prepare_member(cx: &mut Ctx, env: &mut Value, pointer: &str) {
    if pointer.starts_with("/content/structured") {
        env["content"]["structured"] =
            json!({"intent": MESSAGE_INTENT, "parameters": {"amount": 10, "item": "paper"}});
    }
    if pointer.starts_with("/attachments") {
        let ulid = cx.data.envelope_id()[4..].to_owned();
        env["attachments"] = json!([{
            "id": format!("att_{ulid}"),
            "filename": "report.pdf",
            "mime_type": "application/pdf",
            "size_bytes": 1024,
            "hash": format!("sha256:{}", "ab".repeat(32)),
            "blob_id": format!("blob_{ulid}"),
            "inline": false,
        }]);
    }
    if pointer.starts_with("/labels") {
        env["labels"] = json!(["inbox"]);
    }
}

async fn tamper_id(cx: &mut Ctx) -> Verdict {
    let id = cx.data.envelope_id();
    tampered(cx, "/id", id.into()).await
}

async fn tamper_thread(cx: &mut Ctx) -> Verdict {
    let t = cx.data.thread_id();
    tampered(cx, "/thread_id", t.into()).await
}

async fn tamper_to(cx: &mut Ctx) -> Verdict {
    let carol = cx.identity("carol", "human").await?;
    tampered(
        cx,
        "/to",
        json!([{"identity": carol.address(), "role": "primary"}]),
    )
    .await
}

async fn tamper_created_at(cx: &mut Ctx) -> Verdict {
    // One second earlier than the signed value: a different valid timestamp.
    let shifted = minus_one_second(&cx.data.now());
    tampered(cx, "/created_at", shifted.into()).await
}

/// `2026-03-01T12:00:05.123Z` → a timestamp one second earlier (textual, seconds field).
fn minus_one_second(ts: &str) -> String {
    let (date, rest) = ts.split_at(17.min(ts.len()));
    let secs: u32 = rest.get(..2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let new = if secs == 0 { 1 } else { secs - 1 };
    format!("{date}{new:02}{}", rest.get(2..).unwrap_or("Z"))
}

async fn tamper_display(cx: &mut Ctx) -> Verdict {
    tampered(cx, "/from/display", "Someone Else".into()).await
}

async fn tamper_priority(cx: &mut Ctx) -> Verdict {
    tampered(cx, "/priority", "urgent".into()).await
}

async fn tamper_parameters(cx: &mut Ctx) -> Verdict {
    tampered(cx, "/content/structured/parameters/amount", json!(10_000)).await
}

async fn tamper_attachment(cx: &mut Ctx) -> Verdict {
    tampered(cx, "/attachments/0/filename", "invoice.pdf".into()).await
}

async fn tamper_labels(cx: &mut Ctx) -> Verdict {
    tampered(cx, "/labels/0", "archived".into()).await
}

async fn meta_outside(cx: &mut Ctx) -> Verdict {
    let (alice, _, mut env) = setup(cx).await?;
    env["meta"] = json!({"client_note": "before signing"});
    alice.sign(&mut env);
    env["meta"] = json!({"client_note": "changed after signing", "event_seq": 99});
    accepted(cx, &alice, &env).await.map(|_| ())
}

async fn other_identitys_key(cx: &mut Ctx) -> Verdict {
    let (alice, _, mut env) = setup(cx).await?;
    let mallory = cx.identity("mallory", "human").await?;
    let control = signed_by(&alice, &env);
    let _ = sign_envelope(&mut env, mallory.id.signing_key(), alice.id.key_id_typed());
    refused(cx, &alice, &env, &control).await
}

async fn unknown_key_id(cx: &mut Ctx) -> Verdict {
    let (alice, _, mut env) = setup(cx).await?;
    let Ok(kid) = KeyId::parse("k_sign_never_registered_9", KeyKind::Signing) else {
        return Err(crate::case::Finding::Error("key id".into()));
    };
    let control = signed_by(&alice, &env);
    let _ = sign_envelope(&mut env, alice.id.signing_key(), &kid);
    refused_either(cx, &alice, &env, &control).await
}

async fn revoked_key(cx: &mut Ctx) -> Verdict {
    let (alice, bob, mut env) = setup(cx).await?;
    // A second key for Alice: added, used once, revoked, used again.
    let seed = [0x5a; 32];
    let second = loom_protocol::keys::signing_key_from_seed(&seed);
    let kid_text = format!("{}_rot", alice.id.key_id());
    let Ok(kid) = KeyId::parse(&kid_text, KeyKind::Signing) else {
        return Err(crate::case::Finding::Error(format!("key id {kid_text}")));
    };
    let body = json!({
        "key_id": kid_text,
        "public_key": loom_protocol::keys::public_key_to_b64url(&second.verifying_key()),
    });
    let i = cx
        .net
        .call(
            "POST",
            "/v1/identity/me/keys",
            Some(&alice.token),
            Some(&body),
        )
        .await?;
    cx.net.expect_ok(i).map_err(setup_step(
        "add a signing key with POST /v1/identity/me/keys (v1.1 §16.3)",
    ))?;
    let _ = sign_envelope(&mut env, &second, &kid);
    accepted(cx, &alice, &env).await?;
    let path = format!("/v1/identity/me/keys/{kid_text}");
    let i = cx
        .net
        .call("DELETE", &path, Some(&alice.token), None)
        .await?;
    cx.net.expect_ok(i).map_err(setup_step(
        "revoke the key with DELETE /v1/identity/me/keys/{key_id} (v1.1 §16.3)",
    ))?;
    let t = env["thread_id"].as_str().unwrap_or_default().to_owned();
    let mut next = cx
        .data
        .message(&alice, &t, env["id"].as_str(), &[&bob], "after revocation");
    let control = signed_by(&alice, &next);
    let _ = sign_envelope(&mut next, &second, &kid);
    refused(cx, &alice, &next, &control).await
}

/// Signs properly, then replaces `signature.value` with `value(valid)`; the result must be
/// refused (with SIGNATURE_INVALID when `checkable`, else with either fitting code).
async fn bad_value(cx: &mut Ctx, value: fn(&str) -> String, checkable: bool) -> Verdict {
    let (alice, _, mut env) = setup(cx).await?;
    alice.sign(&mut env);
    let control = env.clone();
    let valid = env["signature"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    env["signature"]["value"] = value(&valid).into();
    if checkable {
        refused(cx, &alice, &env, &control).await
    } else {
        refused_either(cx, &alice, &env, &control).await
    }
}

async fn value_standard_alphabet(cx: &mut Ctx) -> Verdict {
    bad_value(
        cx,
        |v| {
            // The same bytes in the standard alphabet, with at least one '+' or '/' forced in.
            let mut s = v.replace('-', "+").replace('_', "/");
            if !s.contains(['+', '/']) {
                s.replace_range(0..1, "+");
            }
            s
        },
        false,
    )
    .await
}

async fn value_wrong_length(cx: &mut Ctx) -> Verdict {
    bad_value(cx, |_| b64url_encode(&[7u8; 63]), false).await
}

/// Every signature the node cannot verify — an unknown context, an unknown key id, a value in
/// the wrong alphabet or of the wrong length — should be refused with SIGNATURE_INVALID.
async fn unverifiable_code(cx: &mut Ctx) -> Verdict {
    let (alice, _, env) = setup(cx).await?;
    let Ok(unknown) = KeyId::parse("k_sign_never_registered_9", KeyKind::Signing) else {
        return Err(crate::case::Finding::Error("key id".into()));
    };
    let mut variants = Vec::new();
    let mut signed = env.clone();
    alice.sign(&mut signed);
    let mut v = signed.clone();
    v["signature"]["context"] = "LOOM-ENVELOPE-SIG-v9".into();
    variants.push(v);
    let mut v = env.clone();
    let _ = sign_envelope(&mut v, alice.id.signing_key(), &unknown);
    variants.push(v);
    let mut v = signed.clone();
    v["signature"]["value"] = b64url_encode(&[7u8; 63]).into();
    variants.push(v);
    let mut probes = Vec::new();
    for mut v in variants {
        // Each probe its own id, so none is refused as a duplicate.
        v["id"] = cx.data.envelope_id().into();
        let i = cx.net.send(&alice, &v).await?;
        cx.net
            .expect_not_accepted(i, "a refusal with SIGNATURE_INVALID (v1.1 §24.2)")?;
        probes.push(i);
    }
    let c = cx.net.send(&alice, &signed).await?;
    for p in probes {
        cx.net
            .expect_refused_beside(p, c, CONTROL, &["SIGNATURE_INVALID"], "")?;
    }
    Ok(())
}

async fn value_all_zero(cx: &mut Ctx) -> Verdict {
    bad_value(cx, |_| b64url_encode(&[0u8; 64]), true).await
}

/// JSON text with object members in reverse order, newlines and two spaces before colons.
fn reordered_text(v: &Value, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth + 1);
    let end = "  ".repeat(depth);
    match v {
        Value::Object(m) => {
            out.push_str("{\n");
            let n = m.len();
            for (i, (k, x)) in m.iter().rev().enumerate() {
                out.push_str(&pad);
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push_str("  :\t");
                reordered_text(x, depth + 1, out);
                out.push_str(if i + 1 < n { ",\n" } else { "\n" });
            }
            out.push_str(&end);
            out.push('}');
        }
        Value::Array(a) => {
            out.push_str("[ ");
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(" ,\r\n");
                    out.push_str(&pad);
                }
                reordered_text(x, depth + 1, out);
            }
            out.push_str(" ]");
        }
        _ => out.push_str(&serde_json::to_string(v).unwrap_or_default()),
    }
}

async fn json_text_form(cx: &mut Ctx) -> Verdict {
    let (alice, _, mut env) = setup(cx).await?;
    env["content"]["structured"] = json!({"intent": MESSAGE_INTENT, "parameters": {"n": 15}});
    alice.sign(&mut env);
    let mut text = String::new();
    reordered_text(&env, 0, &mut text);
    // The same number, spelled as the JSON text allows: 15 = 1.5E1.
    let text = text.replacen("\"n\"  :\t15", "\"n\"  :\t1.5E1", 1);
    let i = cx
        .net
        .exchange(
            "POST",
            "/v1/envelopes",
            &[],
            Some(text.into_bytes()),
            Some(&alice.token),
        )
        .await?;
    cx.net.expect_created(i)
}

async fn numbers(cx: &mut Ctx) -> Verdict {
    let (alice, _, mut env) = setup(cx).await?;
    env["content"]["structured"] = json!({"intent": MESSAGE_INTENT, "parameters": {
        "whole_double": 15.0, "negative_zero": -0.0, "large": 1e21, "small": 1e-7,
        "fraction": 0.1, "big_int": 9_007_199_254_740_991_u64,
    }});
    alice.sign(&mut env);
    accepted(cx, &alice, &env).await.map(|_| ())
}

async fn key_order_utf16(cx: &mut Ctx) -> Verdict {
    let (alice, _, mut env) = setup(cx).await?;
    // U+E000 sorts before U+1F600 by UTF-8 bytes and code points, after it by UTF-16 code
    // units (a surrogate pair starts 0xD83D), which is RFC 8785's order.
    env["content"]["structured"] = json!({"intent": MESSAGE_INTENT, "parameters": {
        "\u{e000}": "private use", "\u{1f600}": "emoji", "z": 1, "a": 2,
    }});
    alice.sign(&mut env);
    accepted(cx, &alice, &env).await.map(|_| ())
}

const SIG: &[&str] = &["v1.1 §7.3", "v1.1 §16.1", "v1.0 §7.2"];
const TAMPER_COVERS: &[&str] = &["R-7.3-06", "R-7.3-01", "R-16.1-01", "R-24.2-02"];
const BAD: Mutant = Mutant::Quirk("accept-bad-signature");

macro_rules! tamper_case {
    ($id:literal, $member:literal, $f:ident) => {
        Case {
            id: $id,
            level: 1,
            strength: Strength::Must,
            spec: SIG,
            requirement: concat!(
                "A node MUST refuse an envelope whose signed member ",
                $member,
                " changed after signing."
            ),
            covers: TAMPER_COVERS,
            needs: P,
            how: concat!(
                "Sign a message, change ",
                $member,
                " in a copy and POST it: 401 SIGNATURE_INVALID or 400 ENVELOPE_INVALID (§24.2 names the first for a failed verification, the §24.1 example the second); then POST the untouched original: 201."
            ),
            interpretation: None,
            mutant: BAD,
            run: |cx| Box::pin($f(cx)),
        }
    };
}

/// Signature cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.signature.context.prefixed-accepted",
        level: 1,
        strength: Strength::Must,
        spec: SIG,
        requirement: "A node MUST verify a signature carrying signature.context with the LOOM-ENVELOPE-SIG-v1 prefix and accept it.",
        covers: &["R-7.3-02", "R-7.3-05", "R-7.3-07", "R-7.1-01"],
        needs: P,
        how: "POST a message signed over 'LOOM-ENVELOPE-SIG-v1\\0' + JCS with signature.context set; expect it accepted (2xx) and the recipient's GET to show signature.context as signed.",
        interpretation: None,
        mutant: Mutant::Quirk("unprefixed-signatures-only"),
        run: |cx| Box::pin(prefixed_accepted(cx)),
    },
    Case {
        id: "core.signature.context.legacy-fallback",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.3", "v1.0 §7.2"],
        requirement: "A node MUST fall back to legacy (unprefixed) verification for an envelope without signature.context during the migration window.",
        covers: &["R-7.3-08", "R-7.3-09"],
        needs: P,
        how: "POST a message signed over JCS without the prefix and without signature.context; expect 201.",
        interpretation: None,
        mutant: Mutant::Quirk("reject-legacy-signatures"),
        run: |cx| Box::pin(legacy_accepted(cx)),
    },
    Case {
        id: "core.signature.context.legacy-claiming-context",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.3"],
        requirement: "A node MUST verify with the indicated prefix when signature.context is present: an unprefixed signature claiming the context is refused.",
        covers: &["R-7.3-07", "R-24.2-02"],
        needs: P,
        how: "Sign without the prefix, then set signature.context = LOOM-ENVELOPE-SIG-v1; expect 401 SIGNATURE_INVALID or 400 ENVELOPE_INVALID (§24.2 names the first for a failed verification, the §24.1 example the second) (no fallback when the context is present).",
        interpretation: None,
        mutant: BAD,
        run: |cx| Box::pin(legacy_claims_context(cx)),
    },
    Case {
        id: "core.signature.context.unknown",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.3"],
        requirement: "A node MUST verify with the prefix signature.context indicates: a context other than the one signed is refused.",
        covers: &["R-7.3-07", "R-24.2-02"],
        needs: P,
        how: "Sign with the LOOM-ENVELOPE-SIG-v1 prefix, then set signature.context = LOOM-ENVELOPE-SIG-v9; expect a §24.1 4xx error (no sentence names the code) (an unknown context cannot be verified and is not the form §7.3 defines).",
        interpretation: None,
        mutant: BAD,
        run: |cx| Box::pin(unknown_context(cx)),
    },
    Case {
        id: "core.signature.missing",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.1", "v1.1 §8.2", "v1.1 §7.3"],
        requirement: "All envelopes MUST be signed: a node refuses an envelope without signature.",
        covers: &["R-7.1-01", "R-8.2-16", "R-7.3-06", "R-24.2-02"],
        needs: P,
        how: "POST a well-formed message with no signature member; expect a §24.1 4xx error (no sentence names the code) (the exact code is core.signature.missing.code).",
        interpretation: None,
        mutant: BAD,
        run: |cx| Box::pin(missing(cx)),
    },
    Case {
        id: "core.signature.missing.code",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §24.2", "v1.1 §7.3"],
        requirement: "An envelope without signature should be refused with SIGNATURE_INVALID, the code of \"Signature verification failed\".",
        covers: &["R-24.2-02"],
        needs: P,
        how: "POST a well-formed message with no signature member; expect 401 SIGNATURE_INVALID.",
        interpretation: Some(
            "§24.2 names SIGNATURE_INVALID for failed verification and ENVELOPE_INVALID for an envelope that fails the schema; an unsigned envelope is both. The harness recommends SIGNATURE_INVALID (every check of §7.3 fails alike); ENVELOPE_INVALID is also legal, so this is a SHOULD.",
        ),
        mutant: BAD,
        run: |cx| Box::pin(missing_code(cx)),
    },
    tamper_case!("core.signature.tamper.id", "id", tamper_id),
    tamper_case!(
        "core.signature.tamper.thread-id",
        "thread_id",
        tamper_thread
    ),
    tamper_case!("core.signature.tamper.to", "to", tamper_to),
    tamper_case!(
        "core.signature.tamper.created-at",
        "created_at",
        tamper_created_at
    ),
    tamper_case!(
        "core.signature.tamper.from-display",
        "from.display",
        tamper_display
    ),
    tamper_case!(
        "core.signature.tamper.priority",
        "priority",
        tamper_priority
    ),
    tamper_case!(
        "core.signature.tamper.structured-parameters",
        "content.structured.parameters",
        tamper_parameters
    ),
    tamper_case!(
        "core.signature.tamper.attachment",
        "attachments[0].filename",
        tamper_attachment
    ),
    tamper_case!("core.signature.tamper.labels", "labels", tamper_labels),
    Case {
        id: "core.signature.meta-outside",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.2", "v1.1 §7.3"],
        requirement: "meta MUST be excluded from the signed form: changing meta after signing keeps the signature valid.",
        covers: &["R-7.2-09", "R-7.3-01"],
        needs: P,
        how: "Sign a message carrying meta, then replace meta with different members; expect 201.",
        interpretation: None,
        mutant: Mutant::Quirk("sign-over-meta"),
        run: |cx| Box::pin(meta_outside(cx)),
    },
    Case {
        id: "core.signature.key.other-identity",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.3", "v1.1 §16.1"],
        requirement: "A node MUST verify with the key signature.key_id names in the sender's identity: another identity's key under that key id is refused.",
        covers: &["R-7.3-03", "R-7.3-06", "R-16.1-01", "R-24.2-02"],
        needs: P,
        how: "Mallory signs Alice's message with Mallory's key under Alice's key id; Alice POSTs it; expect 401 SIGNATURE_INVALID or 400 ENVELOPE_INVALID (§24.2 names the first for a failed verification, the §24.1 example the second).",
        interpretation: None,
        mutant: BAD,
        run: |cx| Box::pin(other_identitys_key(cx)),
    },
    Case {
        id: "core.signature.key.unknown-id",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.3", "v1.1 §16.1"],
        requirement: "A node MUST refuse an envelope signed under a key id the sender does not have.",
        covers: &["R-7.3-03", "R-16.1-01", "R-24.2-02"],
        needs: P,
        how: "Alice signs with her own key under k_sign_never_registered_9 (from.key_id and signature.key_id); expect a §24.1 4xx error (no sentence names the code).",
        interpretation: None,
        mutant: BAD,
        run: |cx| Box::pin(unknown_key_id(cx)),
    },
    Case {
        id: "core.signature.key.revoked",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.3", "v1.1 §16.3"],
        requirement: "A node MUST refuse an envelope signed with a key its owner revoked.",
        covers: &["R-7.3-03", "R-16.1-01", "R-24.2-02"],
        needs: &[Need::Provisioning, Need::Registration],
        how: "Alice adds a second signing key (POST /v1/identity/me/keys), sends with it (accepted), revokes it (DELETE …/keys/{key_id}) and sends with it again; expect 401 SIGNATURE_INVALID or 400 ENVELOPE_INVALID (§24.2 names the first for a failed verification, the §24.1 example the second). The key routes are setup: a node without them makes the case an error, not a failure.",
        interpretation: None,
        mutant: BAD,
        run: |cx| Box::pin(revoked_key(cx)),
    },
    Case {
        id: "core.signature.value.standard-alphabet",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.3", "v1.1 Appendix D"],
        requirement: "signature.value is base64url: a value in the standard base64 alphabet ('+', '/') is refused.",
        covers: &["R-7.3-04", "R-24.2-02"],
        needs: P,
        how: "Rewrite a valid signature.value in the standard alphabet ('-'→'+', '_'→'/', at least one forced); expect a §24.1 4xx error (no sentence names the code) (RFC 4648 §3.3: characters outside the alphabet are rejected).",
        interpretation: None,
        mutant: BAD,
        run: |cx| Box::pin(value_standard_alphabet(cx)),
    },
    Case {
        id: "core.signature.value.wrong-length",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.1", "v1.1 §7.3"],
        requirement: "An Ed25519 signature is 64 bytes: a 63-byte signature.value is refused.",
        covers: &["R-7.1-01", "R-24.2-02"],
        needs: P,
        how: "Replace signature.value with base64url of 63 bytes; expect a §24.1 4xx error (no sentence names the code).",
        interpretation: None,
        mutant: BAD,
        run: |cx| Box::pin(value_wrong_length(cx)),
    },
    Case {
        id: "core.signature.unverifiable.code",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §24.2", "v1.1 §7.3"],
        requirement: "A signature the node cannot verify (unknown context, unknown key id, malformed value) should be refused with SIGNATURE_INVALID.",
        covers: &["R-24.2-02", "R-7.3-07", "R-7.3-03"],
        needs: P,
        how: "POST a message with signature.context LOOM-ENVELOPE-SIG-v9, one signed under a key id the sender does not have, and one whose signature.value is 63 bytes; expect 401 SIGNATURE_INVALID for each.",
        interpretation: Some(
            "An unverifiable signature fails verification (SIGNATURE_INVALID) and breaks the envelope's form (ENVELOPE_INVALID); §24.2 names neither for it, so the MUST cases take both and this case recommends SIGNATURE_INVALID.",
        ),
        mutant: BAD,
        run: |cx| Box::pin(unverifiable_code(cx)),
    },
    Case {
        id: "core.signature.value.all-zero",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.1", "v1.1 §7.3"],
        requirement: "A well-formed but wrong signature (64 zero bytes) is refused.",
        covers: &["R-7.3-06", "R-24.2-02"],
        needs: P,
        how: "Replace signature.value with base64url of 64 zero bytes; expect 401 SIGNATURE_INVALID or 400 ENVELOPE_INVALID (§24.2 names the first for a failed verification, the §24.1 example the second).",
        interpretation: None,
        mutant: BAD,
        run: |cx| Box::pin(value_all_zero(cx)),
    },
    Case {
        id: "core.signature.canonical.json-text",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.2", "v1.0 §7.2"],
        requirement: "The signature covers the RFC 8785 form of the envelope, not the JSON text: member order, whitespace and number spelling do not matter.",
        covers: &["R-7.2-01", "R-7.2-02", "R-7.2-03", "R-7.2-05", "R-7.2-08"],
        needs: P,
        how: "Sign a message with parameters {n: 15} (intent message.general@v1); send it as raw JSON text with every object's members reversed, newlines, tabs and CRs between tokens, and n written 1.5E1; expect 201. (The self-test's quirk checks a non-JCS serialization, which the number spelling exposes.)",
        interpretation: None,
        mutant: Mutant::Quirk("non-canonical-signing-form"),
        run: |cx| Box::pin(json_text_form(cx)),
    },
    Case {
        id: "core.signature.canonical.numbers",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.2"],
        requirement: "Canonical numbers follow RFC 8785 §3.2.2.3 (-0 as 0, integral doubles without a fraction, ECMAScript exponents).",
        covers: &["R-7.2-05", "R-7.2-01"],
        needs: P,
        how: "Sign a message whose parameters hold 15.0, -0.0, 1e21, 1e-7, 0.1 and 2^53-1 (signed over their RFC 8785 forms 15, 0, 1e+21, 1e-7, 0.1, 9007199254740991); expect 201.",
        interpretation: None,
        mutant: Mutant::Quirk("non-canonical-signing-form"),
        run: |cx| Box::pin(numbers(cx)),
    },
    Case {
        id: "core.signature.canonical.key-order-utf16",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.2"],
        requirement: "Canonical JSON sorts member names by UTF-16 code units (RFC 8785 §3.2.3), at every level.",
        covers: &["R-7.2-02", "R-7.2-04"],
        needs: P,
        how: "Sign a message whose parameters have the keys U+E000 and U+1F600 (opposite orders in UTF-8 and UTF-16); expect 201.",
        interpretation: None,
        mutant: Mutant::Quirk("non-canonical-signing-form"),
        run: |cx| Box::pin(key_order_utf16(cx)),
    },
];
