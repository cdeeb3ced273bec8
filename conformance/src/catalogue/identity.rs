//! Identity (v1.1 §6.1–§6.3 addresses and identity documents, §16.3 endpoints; registration
//! as DESIGN.md §9 describes it).
//!
//! §6.2 gives an identity document by example: the harness reads its signing keys from
//! `public_keys.signing[]` (as the example has them, `public_key` base64url) or from
//! `signing_keys[]` (as registration sends them, `public_key_pem` or `public_key`), and takes a
//! key without `status` as active.

use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::provision::{self, pem, sign_registration, token_request};
use crate::ctx::shapes::challenge_id as challenge_id_of;
use crate::ctx::{Ctx, Ex, Ident};
use crate::finding::setup_step;
use ed25519_dalek::{SigningKey, VerifyingKey};
use loom_client::Identity;
use loom_client::api::encode_component;
use loom_protocol::keys::signing_key_from_seed;
use serde_json::{Value, json};

/// A fresh, unregistered identity on the target's domain (`name-<hex>`, key from the case seed).
pub(super) fn fresh(cx: &mut Ctx, name: &str) -> Result<Identity, Finding> {
    let seed = cx.data.seed32();
    let address = format!(
        "loom://{name}-{}@{}",
        hex::encode(&seed[..6]),
        cx.target.domain
    );
    Identity::from_seed(&address, &seed)
        .map_err(|e| Finding::Error(format!("identity {address}: {e}")))
}

/// `POST {path}` (`/v1/identity/challenge` or `/v1/auth/challenge`) for `identity` and
/// `key_id`; returns the exchange and its body.
pub(super) async fn challenge(
    cx: &mut Ctx,
    path: &str,
    identity: &str,
    key_id: &str,
) -> Result<(Ex, Value), Finding> {
    let i = cx
        .net
        .call(
            "POST",
            path,
            None,
            Some(&json!({"identity": identity, "key_id": key_id})),
        )
        .await?;
    let body = cx
        .net
        .ok_body(i)
        .map_err(crate::finding::setup_step(
            "the challenge (DESIGN.md §9 form: {identity, key_id}; a node that registers differently is provisioned by the profile)",
        ))?;
    Ok((i, body))
}

/// The challenge id of a challenge body (`challenge_id`, or `challenge`).
pub(super) fn challenge_id(body: &Value) -> String {
    challenge_id_of(body)
}

/// Registers `id` with the profile's registration extras (challenge, then the signed
/// document); returns the deciding exchange (the challenge when it was refused).
pub(super) async fn register(cx: &mut Ctx, id: &Identity) -> Result<Ex, Finding> {
    cx.register(id).await
}

/// Registers the hand-built document `doc` of `identity` (proof by `key`/`key_id`) with the
/// profile's registration extras: challenge for `challenge_for`, then `POST /v1/identity`.
/// Returns the deciding exchange (the challenge when the node refused it).
pub(super) async fn register_document(
    cx: &mut Ctx,
    mut doc: Value,
    challenge_for: &str,
    key: &SigningKey,
    key_id: &str,
) -> Result<Ex, Finding> {
    let i = cx
        .net
        .call(
            "POST",
            "/v1/identity/challenge",
            None,
            Some(&json!({"identity": challenge_for, "key_id": key_id})),
        )
        .await?;
    if !cx.net.transcript(i).is_success() {
        return Ok(i);
    }
    let ch = cx.net.json(i);
    if let Some(o) = doc.as_object_mut() {
        for (k, v) in &cx.target.registration_extra {
            o.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    let req = sign_registration(
        doc,
        challenge_for,
        key,
        key_id,
        &challenge_id(&ch),
        ch["nonce"].as_str().unwrap_or(""),
    );
    cx.net.call("POST", "/v1/identity", None, Some(&req)).await
}

/// `/v1/identity/{percent-encoded loom uri}`.
pub(super) fn resolve_path(address: &str) -> String {
    format!("/v1/identity/{}", encode_component(address))
}

/// A signing key as an identity document lists it.
#[derive(Debug)]
pub(super) struct ListedKey {
    /// `key_id`.
    pub key_id: String,
    /// The Ed25519 key, when it parses (base64url `public_key` or SPKI `public_key_pem`).
    pub key: Option<VerifyingKey>,
    /// `status` (`active` when absent).
    pub status: String,
}

/// The signing keys of an identity document (`public_keys.signing[]` or `signing_keys[]`).
pub(super) fn listed_keys(doc: &Value) -> Vec<ListedKey> {
    let list = doc
        .pointer("/public_keys/signing")
        .or_else(|| doc.get("signing_keys"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    list.iter()
        .map(|k| {
            let raw = k["public_key"]
                .as_str()
                .and_then(|p| loom_protocol::keys::b64url_decode(p).ok())
                .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
                .and_then(|b| VerifyingKey::from_bytes(&b).ok());
            let from_pem = k["public_key_pem"]
                .as_str()
                .and_then(|p| loom_protocol::keys::public_key_from_spki_pem(p).ok());
            ListedKey {
                key_id: k["key_id"].as_str().unwrap_or_default().to_owned(),
                key: raw.or(from_pem),
                status: k["status"].as_str().unwrap_or("active").to_owned(),
            }
        })
        .collect()
}

/// The document `doc` must be `who`'s, with its registered signing key active.
fn expect_own_document(cx: &Ctx, doc: &Value, who: &Ident) -> Verdict {
    cx.net.expect_eq("id", &json!(who.address()), &doc["id"])?;
    cx.net
        .expect_eq("type", &json!(who.id.kind()), &doc["type"])?;
    let want = who.id.signing_key().verifying_key();
    let keys = listed_keys(doc);
    let key = keys.iter().find(|k| k.key_id == who.id.key_id());
    cx.net.expect_that(
        key.is_some_and(|k| k.key == Some(want) && k.status == "active"),
        format!(
            "the document lists {} with the registered public key, active (v1.1 §6.2, §6.3)",
            who.id.key_id()
        ),
        format!(
            "keys = {}",
            crate::show::compact(
                doc.pointer("/public_keys")
                    .or_else(|| doc.get("signing_keys"))
                    .unwrap_or(&Value::Null)
            )
        ),
    )
}

async fn resolve_registered(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let i = cx
        .net
        .get(&resolve_path(alice.address()), &alice.token)
        .await?;
    let doc = cx.net.ok_body(i)?;
    expect_own_document(cx, &doc, &alice)
}

async fn resolve_unknown(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let nobody = fresh(cx, "nobody")?;
    let i = cx
        .net
        .get(&resolve_path(nobody.address()), &alice.token)
        .await?;
    // The control: the same route for a registered identity (so a 404 is about the identity,
    // not a missing route).
    let c = cx
        .net
        .get(&resolve_path(alice.address()), &alice.token)
        .await?;
    cx.net.expect_refused_beside(
        i,
        c,
        "resolving a registered identity",
        &["IDENTITY_NOT_FOUND"],
        "",
    )
}

async fn me(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let i = cx.net.get("/v1/identity/me", &alice.token).await?;
    let doc = cx.net.ok_body(i)?;
    expect_own_document(cx, &doc, &alice)
}

/// The identity `address` must not resolve (nothing was created).
pub(super) async fn expect_not_registered(cx: &mut Ctx, address: &str) -> Verdict {
    let observer = cx.identity("observer", "human").await?;
    let i = cx.net.get(&resolve_path(address), &observer.token).await?;
    cx.net.expect_status(i, 404)
}

async fn register_bad_proof(cx: &mut Ctx) -> Verdict {
    let id = fresh(cx, "mallory")?;
    let (_, ch) = challenge(cx, "/v1/identity/challenge", id.address(), id.key_id()).await?;
    // The proof signs the registration text for another nonce.
    let nonce = format!("{}-not-the-nonce", ch["nonce"].as_str().unwrap_or(""));
    let extra = cx.target.registration_extra.clone();
    let req = provision::registration_request(&id, &extra, &challenge_id(&ch), &nonce);
    let i = cx
        .net
        .call("POST", "/v1/identity", None, Some(&req))
        .await?;
    cx.net
        .expect_not_accepted(i, "a refusal of a registration whose proof does not verify")?;
    expect_not_registered(cx, id.address()).await?;
    // The control: the same identity registered with a proof over its own challenge.
    let c = register(cx, &id).await?;
    cx.net.expect_refused_beside(
        i,
        c,
        "the same registration with a proof over the challenge's nonce",
        &[],
        "",
    )
}

async fn register_duplicate(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let seed = cx.data.seed32();
    let usurper =
        Identity::from_seed(alice.address(), &seed).map_err(|e| Finding::Error(e.to_string()))?;
    // The refusal may come at the challenge or at the registration (DESIGN.md §9).
    let p = register(cx, &usurper).await?;
    // Any §24.1 4xx error: the 409 is the existing node's (DESIGN.md §9), not a sentence's.
    cx.net
        .expect_not_accepted(p, "a refusal of a second registration of a held address")?;
    let i = cx
        .net
        .get(&resolve_path(alice.address()), &alice.token)
        .await?;
    let doc = cx.net.ok_body(i)?;
    expect_own_document(cx, &doc, &alice)?;
    // The control: the same registration for an address nobody holds.
    let free = fresh(cx, "alice")?;
    let c = register(cx, &free).await?;
    cx.net
        .expect_refused_beside(p, c, "the same registration of a free address", &[], "")
}

async fn register_mixed_case(cx: &mut Ctx) -> Verdict {
    let id = fresh(cx, "carol")?;
    let lower = id.address().to_owned();
    let mixed = lower.replacen("loom://c", "loom://C", 1).replacen(
        &format!("@{}", cx.target.domain),
        &format!("@{}", cx.target.domain.to_uppercase()),
        1,
    );
    let mut doc = id.registration_document();
    doc["id"] = mixed.clone().into();
    doc["signing_keys"][0]["public_key_pem"] = pem(&id.signing_key().verifying_key()).into();
    let i = register_document(cx, doc, &lower, id.signing_key(), id.key_id()).await?;
    let status = cx.net.status(i);
    if (400..500).contains(&status) {
        cx.net.expect_error_shape(i)?;
        return expect_not_registered(cx, &lower).await;
    }
    cx.net.expect_that(
        cx.net.transcript(i).is_success(),
        format!("the registration of {mixed} refused (4xx) or accepted"),
        format!("HTTP {status}"),
    )?;
    // Accepted: every document must spell the address in canonical lowercase.
    let observer = cx.identity("observer", "human").await?;
    let i = cx.net.get(&resolve_path(&lower), &observer.token).await?;
    let doc = cx.net.ok_body(i)?;
    cx.net.expect_eq(
        "id (canonical lowercase, v1.1 §6.1)",
        &json!(lower),
        &doc["id"],
    )
}

/// Adds a second signing key to `who` (a setup step); returns (key, key id).
async fn add_second_key(cx: &mut Ctx, who: &Ident) -> Result<(SigningKey, String), Finding> {
    let (key, kid) = second_key(cx, who);
    let i = cx
        .net
        .call(
            "POST",
            "/v1/identity/me/keys",
            Some(&who.token),
            Some(&json!({"key_id": kid, "public_key_pem": pem(&key.verifying_key())})),
        )
        .await?;
    cx.net.expect_ok(i).map_err(setup_step(&format!(
        "add {kid} with POST /v1/identity/me/keys (v1.1 §16.3)"
    )))?;
    Ok((key, kid))
}

/// A second signing key for `who`: (key, key id).
fn second_key(cx: &mut Ctx, who: &Ident) -> (SigningKey, String) {
    let key = signing_key_from_seed(&cx.data.seed32());
    (key, format!("{}_dev2", who.id.key_id()))
}

async fn add_and_revoke_key(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let (key, kid) = add_second_key(cx, &alice).await?;
    let (control, _) = token_request(&mut cx.net, alice.address(), &key, &kid).await?;
    cx.net
        .expect_ok(control)
        .map_err(setup_step("log in with the added key (control)"))?;
    let path = format!("/v1/identity/me/keys/{}", encode_component(&kid));
    let i = cx
        .net
        .call("DELETE", &path, Some(&alice.token), None)
        .await?;
    cx.net.expect_ok(i)?;
    let i = cx
        .net
        .get(&resolve_path(alice.address()), &alice.token)
        .await?;
    let doc = cx.net.ok_body(i)?;
    let keys = listed_keys(&doc);
    let k = keys.iter().find(|k| k.key_id == kid);
    cx.net.expect_that(
        k.is_none_or(|k| k.status != "active"),
        format!("{kid} is no longer an active signing key"),
        format!("{k:?}"),
    )?;
    let (i, _) = token_request(&mut cx.net, alice.address(), &key, &kid).await?;
    cx.net.expect_refused_beside(
        i,
        control,
        &format!("the same login with {kid} before its revocation"),
        &[],
        "",
    )
}

async fn last_key_kept(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let path = format!(
        "/v1/identity/me/keys/{}",
        encode_component(alice.id.key_id())
    );
    let p = cx
        .net
        .call("DELETE", &path, Some(&alice.token), None)
        .await?;
    cx.net.expect_not_accepted(
        p,
        "a refusal to revoke the last active signing key (v1.1 §6.3)",
    )?;
    let i = cx
        .net
        .get(&resolve_path(alice.address()), &alice.token)
        .await?;
    let doc = cx.net.ok_body(i)?;
    expect_own_document(cx, &doc, &alice)?;
    // The control: with a second key added, revoking that one (not the last) is accepted.
    let (_, kid) = add_second_key(cx, &alice).await?;
    let c = cx
        .net
        .call(
            "DELETE",
            &format!("/v1/identity/me/keys/{}", encode_component(&kid)),
            Some(&alice.token),
            None,
        )
        .await?;
    cx.net
        .expect_refused_beside(p, c, "revoking a key that is not the last", &[], "")
}

/// Identity cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.identity.resolve.registered",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.2", "v1.1 §16.3", "v1.1 §6.1", "v1.0 §6.2"],
        requirement: "A registered identity MUST resolve through GET /v1/identity/{loom_uri} to its identity document, with its id in lowercase and its signing key.",
        covers: &["R-6.2-01", "R-6.1-06", "R-6.3-01"],
        needs: &[Need::Provisioning],
        how: "Register alice; GET /v1/identity/{percent-encoded address}; expect the document with id, type and alice's key (same public key, active) in public_keys.signing or signing_keys.",
        interpretation: None,
        mutant: Mutant::Quirk("identity-document-without-keys"),
        run: |cx| Box::pin(resolve_registered(cx)),
    },
    Case {
        id: "core.identity.resolve.unknown",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §24.2", "v1.1 §16.3"],
        requirement: "Resolving an identity that does not exist MUST fail with 404 IDENTITY_NOT_FOUND.",
        covers: &["R-24.2-08"],
        needs: &[Need::Provisioning],
        how: "GET /v1/identity/{address never registered}; expect 404 IDENTITY_NOT_FOUND with a §24.1 body.",
        interpretation: None,
        mutant: Mutant::Quirk("bare-error-bodies"),
        run: |cx| Box::pin(resolve_unknown(cx)),
    },
    Case {
        id: "core.identity.me.document",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §16.3", "v1.1 §6.2"],
        requirement: "GET /v1/identity/me should return the authenticated identity's document with its signing key.",
        covers: &["R-16.3-01", "R-6.2-01"],
        needs: &[Need::Provisioning, Need::IdentityMe],
        how: "GET /v1/identity/me with alice's token; expect alice's document: id, type and her active signing key. Unsupported when the node has no /v1/identity/me (found by probing).",
        interpretation: Some(
            "§16.3 lists GET /v1/identity/me in a table without a requirement keyword, and the §27.2 minimum node does not name it: a SHOULD, tested only where the route exists.",
        ),
        mutant: Mutant::Quirk("identity-document-without-keys"),
        run: |cx| Box::pin(me(cx)),
    },
    Case {
        id: "core.identity.register.bad-proof",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.2", "DESIGN.md §9"],
        requirement: "A registration whose proof-of-key signature does not verify MUST be refused and create nothing.",
        covers: &["R-14.2-01", "R-24.2-02"],
        needs: &[Need::Registration],
        how: "Ask a registration challenge, sign the registration text with another nonce, POST /v1/identity; expect a 4xx §24.1 refusal (401 SIGNATURE_INVALID is usual; registration is DESIGN.md §9's, no code is fixed), then GET the address: 404.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-bad-registration-proof"),
        run: |cx| Box::pin(register_bad_proof(cx)),
    },
    Case {
        id: "core.identity.register.duplicate",
        level: 1,
        strength: Strength::Must,
        spec: &["DESIGN.md §9", "v1.1 §14.2"],
        requirement: "Registering an address that is already registered MUST be refused and MUST NOT replace the identity's keys.",
        covers: &["R-14.2-01"],
        needs: &[Need::Registration],
        how: "Register alice; register her address again with a different key and a valid proof; expect a §24.1 4xx error (409 is usual, DESIGN.md §9; no sentence names the code), at the challenge or at the registration, beside the same registration of a free address, and alice's document still lists her original key.",
        interpretation: None,
        mutant: Mutant::Quirk("allow-duplicate-registration"),
        run: |cx| Box::pin(register_duplicate(cx)),
    },
    Case {
        id: "core.identity.register.mixed-case",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.1"],
        requirement: "Addresses MUST be serialized in canonical lowercase in identity documents: a mixed-case registration is refused, or stored lowercase.",
        covers: &["R-6.1-06"],
        needs: &[Need::Registration],
        how: "Register loom://Carol-…@DOMAIN (mixed case, valid proof over the lowercase challenge); expect a 4xx §24.1 refusal and no identity, or, if accepted, the resolved document's id in lowercase.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-non-canonical-address"),
        run: |cx| Box::pin(register_mixed_case(cx)),
    },
    Case {
        id: "core.identity.keys.add-revoke",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.3", "v1.1 §14.2"],
        requirement: "A key added with POST /v1/identity/me/keys can log in; once revoked with DELETE /v1/identity/me/keys/{key_id} it MUST no longer be active or log in.",
        covers: &["R-14.2-06", "R-16.3-01"],
        // Changes the identity's keys: it needs identities no concurrent case shares.
        needs: &[Need::Registration],
        how: "Add a second signing key and log in with it (setup), revoke it (2xx), resolve the document (key not active) and log in with it again (4xx).",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-key-revocation"),
        run: |cx| Box::pin(add_and_revoke_key(cx)),
    },
    Case {
        id: "core.identity.keys.last-key-kept",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.3", "v1.1 §16.3"],
        requirement: "A human identity MUST keep at least one signing key: revoking its only signing key is refused.",
        covers: &["R-6.3-01"],
        // Changes the identity's keys: it needs identities no concurrent case shares.
        needs: &[Need::Registration],
        how: "DELETE /v1/identity/me/keys/{alice's only key}; expect a 4xx §24.1 refusal, and the document still lists the key as active.",
        interpretation: None,
        mutant: Mutant::Quirk("allow-revoking-last-key"),
        run: |cx| Box::pin(last_key_kept(cx)),
    },
];
