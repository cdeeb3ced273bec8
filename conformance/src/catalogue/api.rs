//! API surface (v1.1 §16, §14.1): JSON bodies and their content type, malformed, duplicate-key
//! and non-UTF-8 bodies, oversized bodies, unknown routes and wrong methods — each answered
//! with the §24.1 error body and the §24.2 code.

use super::discovery::is_json_utf8;
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ex, Ident, skip};
use serde_json::json;

/// A signed message from a fresh alice to herself, serialized.
async fn signed_message_bytes(cx: &mut Ctx, text: &str) -> Result<(Ident, Vec<u8>), Finding> {
    let alice = cx.identity("alice", "human").await?;
    let t = cx.data.thread_id();
    let env = cx.data.signed_message(&alice, &t, None, &[&alice], text);
    let bytes = serde_json::to_vec(&env).map_err(|e| Finding::Error(e.to_string()))?;
    Ok((alice, bytes))
}

async fn post_envelope_bytes(
    cx: &mut Ctx,
    who: &Ident,
    body: Vec<u8>,
    content_type: &str,
) -> Result<Ex, Finding> {
    cx.net
        .exchange(
            "POST",
            "/v1/envelopes",
            &[("content-type", content_type)],
            Some(body),
            Some(&who.token),
        )
        .await
}

const JSON: &str = "application/json; charset=utf-8";

async fn json_charset(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let ok = cx.net.get("/v1/threads", &alice.token).await?;
    let err = cx.net.call("GET", "/v1/threads", None, None).await?;
    for i in [ok, err] {
        let ct = cx
            .net
            .transcript(i)
            .header("content-type")
            .unwrap_or("")
            .to_owned();
        if !is_json_utf8(&ct) {
            return Err(Finding::Fail {
                expected: "Content-Type: application/json; charset=utf-8 on JSON responses, successes and errors (v1.1 §14.1)".into(),
                actual: format!("HTTP {} with Content-Type: {ct:?}", cx.net.transcript(i).status),
                decisive: Some(i),
            });
        }
    }
    Ok(())
}

/// Posts the `probe` bytes as `content_type`, which must not be accepted, then `control` — the
/// valid signed envelope the probe was made from, as JSON — and credits the refusal beside it.
#[allow(clippy::too_many_arguments)]
async fn bytes_refused(
    cx: &mut Ctx,
    alice: &Ident,
    probe: Vec<u8>,
    content_type: &str,
    control: Vec<u8>,
    what: &str,
    codes: &[&str],
    why: &str,
) -> Verdict {
    let p = post_envelope_bytes(cx, alice, probe, content_type).await?;
    cx.net
        .expect_not_accepted(p, "a refusal: 4xx with a §24.1 error body")?;
    let c = post_envelope_bytes(cx, alice, control, JSON).await?;
    cx.net.expect_refused_beside(p, c, what, codes, why)
}

const SAME_AS_JSON: &str = "the same signed envelope as well-formed JSON";

async fn wrong_content_type(cx: &mut Ctx) -> Verdict {
    let (alice, body) = signed_message_bytes(cx, "sent as text/plain").await?;
    let probe = body.clone();
    let what = "the same bytes sent as application/json";
    bytes_refused(
        cx,
        &alice,
        probe,
        "text/plain; charset=utf-8",
        body,
        what,
        &[],
        "",
    )
    .await
}

async fn malformed_json(cx: &mut Ctx) -> Verdict {
    let (alice, body) = signed_message_bytes(cx, "cut short").await?;
    // The envelope's own text, cut off in the middle.
    let probe = body[..body.len() / 2].to_vec();
    // §24.2 has no code for a body that is not JSON: any §24.1 4xx error.
    let codes = &[];
    bytes_refused(cx, &alice, probe, JSON, body, SAME_AS_JSON, codes, "").await
}

async fn duplicate_keys(cx: &mut Ctx) -> Verdict {
    let (alice, body) = signed_message_bytes(cx, "duplicate member").await?;
    // `{"type":"message", …rest of a valid signed envelope that has "type" too}`.
    let mut dup = br#"{"type":"message","#.to_vec();
    dup.extend_from_slice(&body[1..]);
    // §7.2 refuses duplicate names and names no code: any §24.1 4xx error.
    let codes = &[];
    bytes_refused(cx, &alice, dup, JSON, body, SAME_AS_JSON, codes, "").await
}

/// A signed envelope serialized, and a copy with two bytes of its text replaced by 0xFF 0xFE.
async fn not_utf8(cx: &mut Ctx) -> Result<(Ident, Vec<u8>, Vec<u8>), Finding> {
    let (alice, body) = signed_message_bytes(cx, "invalid-UTF8-HERE").await?;
    let marker = b"HERE";
    let at = body
        .windows(marker.len())
        .position(|w| w == marker)
        .ok_or_else(|| Finding::Error("marker not found in the serialized envelope".into()))?;
    let mut bad = body.clone();
    bad[at] = 0xff;
    bad[at + 1] = 0xfe;
    Ok((alice, bad, body))
}

async fn invalid_utf8(cx: &mut Ctx) -> Verdict {
    let (alice, bad, good) = not_utf8(cx).await?;
    bytes_refused(
        cx,
        &alice,
        bad,
        JSON,
        good,
        SAME_AS_JSON,
        // §24.2 names no code for bytes that are not UTF-8: any §24.1 4xx error (the SHOULD
        // twin asks for ENVELOPE_INVALID).
        &[],
        "",
    )
    .await
}

async fn invalid_utf8_code(cx: &mut Ctx) -> Verdict {
    let (alice, bad, good) = not_utf8(cx).await?;
    let codes = &["ENVELOPE_INVALID"];
    bytes_refused(cx, &alice, bad, JSON, good, SAME_AS_JSON, codes, "").await
}

/// The largest request body the harness sends to test a body limit (64 MiB).
const MAX_TESTED_BODY: usize = 64 * 1024 * 1024;

async fn too_large(cx: &mut Ctx) -> Verdict {
    let Some(max) = cx
        .target
        .capability("/limits/max_body_bytes")
        .and_then(serde_json::Value::as_u64)
    else {
        return skip(
            "the target does not advertise limits.max_body_bytes in /v1/protocol/capabilities",
        );
    };
    // One byte over a limit the harness can send: a target advertising more than
    // MAX_TESTED_BODY is not sent a body that large.
    let Some(over) = usize::try_from(max)
        .ok()
        .filter(|m| *m < MAX_TESTED_BODY)
        .map(|m| m + 1)
    else {
        return skip(format!(
            "the target advertises limits.max_body_bytes = {max}; the harness sends bodies of at most {MAX_TESTED_BODY} bytes"
        ));
    };
    let alice = cx.identity("alice", "human").await?;
    let body = |pad: usize| json!({"identity": alice.address(), "key_id": alice.id.key_id(), "pad": "x".repeat(pad)});
    let p = cx
        .net
        .call("POST", "/v1/auth/challenge", None, Some(&body(over)))
        .await?;
    cx.net
        .expect_not_accepted(p, "413 PAYLOAD_TOO_LARGE (v1.1 §24.2)")?;
    // The control: the same request with a short pad, far under the limit.
    let c = cx
        .net
        .call("POST", "/v1/auth/challenge", None, Some(&body(16)))
        .await?;
    cx.net.expect_refused_beside(
        p,
        c,
        "the same request under the advertised limit",
        &["PAYLOAD_TOO_LARGE"],
        "",
    )
}

async fn unknown_route(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let path = format!(
        "/v1/no-such-surface-{}",
        hex::encode(&cx.data.seed32()[..4])
    );
    let i = cx.net.get(&path, &alice.token).await?;
    cx.net.expect_status(i, 404)?;
    cx.net.expect_error_shape(i)
}

async fn wrong_method(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let i = cx
        .net
        .call("PUT", "/v1/envelopes", Some(&alice.token), None)
        .await?;
    cx.net.expect_status(i, 405)?;
    cx.net.expect_error_shape(i)
}

/// API cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.api.content-type.json-charset",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.1", "v1.0 §13.1"],
        requirement: "JSON responses MUST use the content type application/json; charset=utf-8, errors included.",
        covers: &["R-14.1-04"],
        needs: &[Need::Provisioning],
        how: "GET /v1/threads with a token (a success) and without (401); both Content-Type headers must be application/json with charset utf-8 (compared case-insensitively).",
        interpretation: None,
        mutant: Mutant::Quirk("no-json-charset"),
        run: |cx| Box::pin(json_charset(cx)),
    },
    Case {
        id: "core.api.content-type.wrong-refused",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.1", "v1.1 §24.1"],
        requirement: "A request body that is not sent as application/json MUST NOT be accepted as JSON.",
        covers: &["R-14.1-04"],
        needs: &[Need::Provisioning],
        how: "POST a valid signed envelope to /v1/envelopes with Content-Type: text/plain; expect a 4xx refusal with a §24.1 body (415 and 400 are usual; no status is named).",
        interpretation: None,
        mutant: Mutant::Quirk("accept-any-content-type"),
        run: |cx| Box::pin(wrong_content_type(cx)),
    },
    Case {
        id: "core.api.json.malformed",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §24.2", "v1.1 §24.1"],
        requirement: "A malformed JSON envelope body MUST be refused.",
        covers: &["R-24.2-01", "R-24.1-01"],
        needs: &[Need::Provisioning],
        how: "POST a truncated JSON object to /v1/envelopes; expect a §24.1 4xx error (§24.2 has no code for a body that is not JSON).",
        interpretation: None,
        mutant: Mutant::Quirk("bare-error-bodies"),
        run: |cx| Box::pin(malformed_json(cx)),
    },
    Case {
        id: "core.api.json.duplicate-keys",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.2", "v1.1 §24.2"],
        requirement: "An envelope body with a duplicate member name is not valid (I-JSON) and MUST be refused.",
        covers: &["R-24.2-01"],
        needs: &[Need::Provisioning],
        how: "Serialize a valid signed envelope and prepend a second \"type\":\"message\" member; POST it; expect a §24.1 4xx error (§7.2 names no code).",
        interpretation: None,
        mutant: Mutant::Quirk("accept-duplicate-json-keys"),
        run: |cx| Box::pin(duplicate_keys(cx)),
    },
    Case {
        id: "core.api.json.invalid-utf8",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.2", "v1.1 §14.1", "v1.1 §24.2"],
        requirement: "A body that is not UTF-8 MUST be refused.",
        covers: &["R-7.2-04", "R-24.2-01"],
        needs: &[Need::Provisioning],
        how: "Replace two bytes of a signed envelope's text with 0xFF 0xFE; POST it; expect a §24.1 4xx error (no sentence names the code; the SHOULD twin core.api.json.invalid-utf8.code asks for one).",
        interpretation: None,
        mutant: Mutant::Quirk("bare-error-bodies"),
        run: |cx| Box::pin(invalid_utf8(cx)),
    },
    Case {
        id: "core.api.json.invalid-utf8.code",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §24.2", "v1.1 §7.2"],
        requirement: "A body that is not UTF-8 should be refused with 400 ENVELOPE_INVALID.",
        covers: &["R-24.2-01", "R-7.2-04"],
        needs: &[Need::Provisioning],
        how: "Replace two bytes of a signed envelope's text with 0xFF 0xFE; POST it; expect 400 ENVELOPE_INVALID.",
        interpretation: Some(
            "§24.2 names ENVELOPE_INVALID for an envelope that fails the schema; a node may as well say the bytes cannot be a signed canonical form (SIGNATURE_INVALID). The harness recommends ENVELOPE_INVALID: the body is not even JSON text (RFC 8259 §8.1).",
        ),
        mutant: Mutant::Quirk("bare-error-bodies"),
        run: |cx| Box::pin(invalid_utf8_code(cx)),
    },
    Case {
        id: "core.api.body.too-large",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §24.2"],
        requirement: "A request body over the node's advertised limit MUST be refused with 413 PAYLOAD_TOO_LARGE.",
        covers: &["R-24.2-15"],
        needs: &[Need::Provisioning],
        how: "POST /v1/auth/challenge with a JSON body one byte over limits.max_body_bytes; expect 413 PAYLOAD_TOO_LARGE.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-body-limit"),
        run: |cx| Box::pin(too_large(cx)),
    },
    Case {
        id: "core.api.route.unknown",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16", "v1.1 §24.1"],
        requirement: "A path the node does not serve MUST be answered 404 with a §24.1 error body.",
        covers: &["R-24.1-01", "R-24.1-02"],
        needs: &[Need::Provisioning],
        how: "GET /v1/no-such-surface-<random> with a token; expect 404 with a §24.1 body.",
        interpretation: None,
        mutant: Mutant::Quirk("bare-error-bodies"),
        run: |cx| Box::pin(unknown_route(cx)),
    },
    Case {
        id: "core.api.route.wrong-method",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §16", "v1.1 §24.1"],
        requirement: "A known path with a method it does not serve should be answered 405 with a §24.1 error body.",
        covers: &["R-24.1-01"],
        needs: &[Need::Provisioning],
        how: "PUT /v1/envelopes; expect 405 with a §24.1 body.",
        interpretation: Some(
            "§24.1 requires the error body, not a status for a known route with an unknown method; 405 is HTTP's (RFC 9110 §15.5.6) and recommended here.",
        ),
        mutant: Mutant::Quirk("bare-error-bodies"),
        run: |cx| Box::pin(wrong_method(cx)),
    },
];
