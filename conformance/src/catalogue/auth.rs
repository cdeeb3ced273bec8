//! Authentication (v1.1 §14.2): proof-of-key challenge, tokens, refresh. §14.2 fixes no token
//! format (the existing node's `at_…`/`rt_…` are DESIGN.md §9's), so tokens are opaque
//! strings here. A token is judged through `GET /v1/threads`, the most basic authenticated
//! route a Level 1 node has (§27.2: "threads + listing"). Expiry needs time travel and is not
//! tested over the wire.

use super::identity::{challenge, challenge_id, fresh, register};
use crate::case::{Case, Mutant, Need, Strength, Verdict};
use crate::ctx::Ctx;
use crate::ctx::provision::token_request;
use loom_protocol::Timestamp;
use loom_protocol::keys::sign_b64url;
use serde_json::json;

async fn challenge_nonce_expiry(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let (_, ch) = challenge(cx, "/v1/auth/challenge", alice.address(), alice.id.key_id()).await?;
    cx.net.expect_that(
        ch["nonce"].as_str().is_some_and(|n| !n.is_empty()),
        "the challenge carries a nonce (v1.1 §14.2)",
        format!("nonce = {}", ch["nonce"]),
    )?;
    cx.net.expect_that(
        !challenge_id(&ch).is_empty(),
        "the challenge carries its id (challenge_id or challenge)",
        crate::show::compact(&ch),
    )?;
    cx.net.expect_that(
        ch["expires_at"]
            .as_str()
            .is_some_and(|t| Timestamp::parse(t).is_ok()),
        "the challenge carries its expiry expires_at as an RFC 3339 timestamp (v1.1 §14.2)",
        format!("expires_at = {}", ch["expires_at"]),
    )
}

/// The route tokens are judged through: listing threads, which every Level 1 node serves to
/// an authenticated caller (v1.1 §16.2, §27.2).
const PROBE: &str = "/v1/threads";

async fn token_issued(cx: &mut Ctx) -> Verdict {
    let id = fresh(cx, "alice")?;
    let i = register(cx, &id).await?;
    cx.net
        .expect_created(i)
        .map_err(crate::finding::setup_step(
            "register the identity (DESIGN.md §9)",
        ))?;
    let (i, _) = token_request(&mut cx.net, id.address(), id.signing_key(), id.key_id()).await?;
    let t = cx.net.ok_body(i)?;
    let access = t["access_token"].as_str().unwrap_or("").to_owned();
    let refresh = t["refresh_token"].as_str().unwrap_or("").to_owned();
    cx.net.expect_that(
        !access.is_empty(),
        "an access_token (a non-empty string; v1.1 §14.2)",
        format!("access_token = {}", t["access_token"]),
    )?;
    cx.net.expect_that(
        !refresh.is_empty() && refresh != access,
        "a refresh_token, another non-empty string (v1.1 §14.2)",
        format!("refresh_token = {}", t["refresh_token"]),
    )?;
    if let Some(ttl) = t.get("expires_in").filter(|v| !v.is_null()) {
        cx.net.expect_that(
            ttl.as_u64().is_some_and(|s| s > 0 && s <= 3600),
            "a short-lived access token: expires_in at most 3600 s (v1.1 §14.2)",
            format!("expires_in = {ttl}"),
        )?;
    }
    let i = cx.net.get(PROBE, &access).await?;
    cx.net.expect_ok(i)
}

async fn wrong_signature(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let (_, ch) = challenge(cx, "/v1/auth/challenge", alice.address(), alice.id.key_id()).await?;
    let wrong = format!("{}.tampered", ch["nonce"].as_str().unwrap_or(""));
    let sig = sign_b64url(alice.id.signing_key(), None, wrong.as_bytes());
    let i = cx
        .net.call(
            "POST",
            "/v1/auth/token",
            None,
            Some(&json!({"identity": alice.address(), "key_id": alice.id.key_id(), "challenge_id": challenge_id(&ch), "challenge": challenge_id(&ch), "signature": sig})),
        )
        .await?;
    cx.net
        .expect_not_accepted(i, "401 SIGNATURE_INVALID (v1.1 §14.2, §24.2)")?;
    // The control: a login signing its challenge's nonce.
    let (c, _) = token_request(
        &mut cx.net,
        alice.address(),
        alice.id.signing_key(),
        alice.id.key_id(),
    )
    .await?;
    cx.net.expect_refused_beside(
        i,
        c,
        "a login whose signature covers the challenge's nonce",
        &["SIGNATURE_INVALID"],
        "",
    )
}

async fn challenge_single_use(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let (_, ch) = challenge(cx, "/v1/auth/challenge", alice.address(), alice.id.key_id()).await?;
    let sig = sign_b64url(
        alice.id.signing_key(),
        None,
        ch["nonce"].as_str().unwrap_or("").as_bytes(),
    );
    let body = json!({"identity": alice.address(), "key_id": alice.id.key_id(), "challenge_id": challenge_id(&ch), "challenge": challenge_id(&ch), "signature": sig});
    let c = cx
        .net
        .call("POST", "/v1/auth/token", None, Some(&body))
        .await?;
    cx.net.expect_control(
        c,
        "the first use of the challenge (DESIGN.md §9 login form)",
    )?;
    let i = cx
        .net
        .call("POST", "/v1/auth/token", None, Some(&body))
        .await?;
    cx.net.expect_not_accepted(
        i,
        "a challenge answered once cannot be answered again (4xx)",
    )?;
    cx.net
        .expect_refused_beside(i, c, "the first answer to the challenge", &[], "")
}

/// `ex` (a request to [`PROBE`]) must be refused beside the same request with alice's valid
/// bearer token: any §24.1 4xx error, since no LOOM sentence names the status or code (401 is
/// HTTP's, a SHOULD of RFC 6750 §3.1: `core.auth.bearer.status-401`).
async fn unauthenticated(cx: &mut Ctx, ex: crate::case::Ex) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let c = cx.net.get(PROBE, &alice.token).await?;
    cx.net
        .expect_refused_beside(ex, c, "the same request with a valid bearer token", &[], "")
}

async fn bearer_status_401(cx: &mut Ctx) -> Verdict {
    let i = cx.net.call("GET", PROBE, None, None).await?;
    unauthenticated(cx, i).await?;
    cx.net.expect_status(i, 401)
}

async fn bearer_missing(cx: &mut Ctx) -> Verdict {
    let i = cx.net.call("GET", PROBE, None, None).await?;
    unauthenticated(cx, i).await
}

async fn bearer_bogus(cx: &mut Ctx) -> Verdict {
    let bogus = format!("at_{}", hex::encode(cx.data.seed32()));
    let i = cx.net.get(PROBE, &bogus).await?;
    unauthenticated(cx, i).await
}

/// `POST /v1/auth/refresh` with `token` as the refresh token (v1.1 §14.2).
async fn refresh(cx: &mut Ctx, token: &str) -> Result<crate::case::Ex, crate::case::Finding> {
    cx.net
        .call(
            "POST",
            "/v1/auth/refresh",
            None,
            Some(&json!({"refresh_token": token})),
        )
        .await
}

async fn refresh_new_access(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let i = refresh(cx, &alice.refresh).await?;
    let t = cx.net.ok_body(i)?;
    let access = t["access_token"].as_str().unwrap_or("").to_owned();
    cx.net.expect_that(
        !access.is_empty() && access != alice.token,
        "a new access_token (v1.1 §14.2)",
        format!("access_token = {}", t["access_token"]),
    )?;
    let c = cx.net.get(PROBE, &access).await?;
    cx.net.expect_ok(c)?;
    // The refresh token is not an access token.
    let refresh = t["refresh_token"]
        .as_str()
        .map_or(alice.refresh.clone(), str::to_owned);
    let i = cx.net.get(PROBE, &refresh).await?;
    cx.net
        .expect_refused_beside(i, c, "the same request with the new access token", &[], "")
}

async fn access_as_refresh(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let i = refresh(cx, &alice.token).await?;
    cx.net
        .expect_not_accepted(i, "a refusal: an access token is not a refresh token")?;
    let c = refresh(cx, &alice.refresh).await?;
    cx.net
        .expect_refused_beside(i, c, "the same request with the refresh token", &[], "")
}

/// Auth cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.auth.challenge.nonce-expiry",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.2", "v1.0 §13.3"],
        requirement: "POST /v1/auth/challenge {identity, key_id} MUST return a nonce and its expiry.",
        covers: &["R-14.2-03", "R-14.2-02"],
        needs: &[Need::Provisioning],
        how: "POST /v1/auth/challenge for alice's key; expect 200 with nonce, challenge id and an RFC 3339 expires_at.",
        interpretation: None,
        mutant: Mutant::Quirk("challenge-without-expiry"),
        run: |cx| Box::pin(challenge_nonce_expiry(cx)),
    },
    Case {
        id: "core.auth.token.issued",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.2"],
        requirement: "POST /v1/auth/token with a signed challenge MUST return a short-lived access_token and a long-lived refresh_token; the access token authenticates.",
        covers: &["R-14.2-07", "R-14.2-05", "R-14.2-08", "R-14.2-01"],
        needs: &[Need::Registration],
        how: "Register (setup), sign the challenge nonce, POST /v1/auth/token; expect an access_token and a different refresh_token (strings of any form; expires_in ≤ 3600 when given), and GET /v1/threads with the access token to succeed.",
        interpretation: None,
        mutant: Mutant::Quirk("omit-refresh-token"),
        run: |cx| Box::pin(token_issued(cx)),
    },
    Case {
        id: "core.auth.token.wrong-signature",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.2", "v1.1 §24.2"],
        requirement: "A node MUST verify the challenge signature against the identity's key before issuing tokens.",
        covers: &["R-14.2-06", "R-24.2-02"],
        needs: &[Need::Provisioning],
        how: "Sign a different text than the nonce; POST /v1/auth/token; expect 401 SIGNATURE_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-bad-login-signature"),
        run: |cx| Box::pin(wrong_signature(cx)),
    },
    Case {
        id: "core.auth.challenge.single-use",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.2"],
        requirement: "A login challenge MUST NOT be usable twice (the proof-of-key is over a fresh nonce).",
        covers: &["R-14.2-01", "R-14.2-06"],
        needs: &[Need::Provisioning],
        how: "Answer a challenge (200), then send the same answer again; expect a 4xx §24.1 refusal.",
        interpretation: None,
        mutant: Mutant::Quirk("allow-challenge-reuse"),
        run: |cx| Box::pin(challenge_single_use(cx)),
    },
    Case {
        id: "core.auth.bearer.missing",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.2", "v1.1 §24.1"],
        requirement: "An authenticated endpoint called without a bearer token MUST be refused with a §24.1 body.",
        covers: &["R-14.2-01", "R-24.1-01"],
        needs: &[],
        how: "GET /v1/threads without Authorization; expect a §24.1 4xx error beside the same request with a valid token (the 401 status is core.auth.bearer.status-401).",
        interpretation: None,
        mutant: Mutant::Quirk("bare-error-bodies"),
        run: |cx| Box::pin(bearer_missing(cx)),
    },
    Case {
        id: "core.auth.bearer.bogus",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.2", "v1.1 §24.1"],
        requirement: "A bearer token the node never issued MUST be refused with a §24.1 body.",
        covers: &["R-14.2-01", "R-24.1-01"],
        needs: &[],
        how: "GET /v1/threads with Authorization: Bearer at_<random>; expect a §24.1 4xx error beside the same request with a valid token.",
        interpretation: None,
        mutant: Mutant::Quirk("bare-error-bodies"),
        run: |cx| Box::pin(bearer_bogus(cx)),
    },
    Case {
        id: "core.auth.bearer.status-401",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §14.2", "RFC 6750 §3.1"],
        requirement: "A request without a bearer token SHOULD be answered 401 (RFC 6750 §3.1; RFC 9110 §15.5.2); LOOM names no status for it.",
        covers: &["R-14.2-01"],
        needs: &[],
        how: "GET /v1/threads without Authorization; refused beside the same request with a valid token, with status 401.",
        interpretation: Some(
            "R-14.2-01 makes the refusal a MUST (core.auth.bearer.missing); LOOM names no status or code for it, so the 401 HTTP gives an absent credential (RFC 9110 §15.5.2, RFC 6750 §3.1) is recommended, not required.",
        ),
        mutant: Mutant::NotApplicable("a SHOULD of HTTP's, not a LOOM MUST"),
        run: |cx| Box::pin(bearer_status_401(cx)),
    },
    Case {
        id: "core.auth.refresh.new-access-token",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.2"],
        requirement: "The refresh token MUST buy a new working access token, and MUST NOT itself work as an access token.",
        covers: &["R-14.2-07", "R-14.2-08"],
        needs: &[Need::Provisioning],
        how: "POST /v1/auth/refresh {refresh_token}; expect a new access_token that works on GET /v1/threads; the refresh token as bearer gets a §24.1 4xx error.",
        interpretation: None,
        mutant: Mutant::Quirk("token-kind-unchecked"),
        run: |cx| Box::pin(refresh_new_access(cx)),
    },
    Case {
        id: "core.auth.refresh.access-token-refused",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.2"],
        requirement: "An access token MUST NOT be accepted as a refresh token.",
        covers: &["R-14.2-07"],
        needs: &[Need::Provisioning],
        how: "POST /v1/auth/refresh with the access token as refresh_token; expect a 4xx refusal with a §24.1 body (401 is usual).",
        interpretation: None,
        mutant: Mutant::Quirk("token-kind-unchecked"),
        run: |cx| Box::pin(access_as_refresh(cx)),
    },
];
