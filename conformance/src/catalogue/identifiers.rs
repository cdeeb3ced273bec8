//! Typed ID prefixes (v1.1 §8.4): capability token ids at issue, attachment ids in envelopes and key ids at registration.

use super::identity::{fresh, register_document};
use super::thread_kit::{Grant, token};
use crate::case::{Case, Mutant, Need, Strength, Verdict};
use crate::ctx::Ctx;
use crate::ctx::provision::pem;
use serde_json::{Value, json};

const P: &[Need] = &[Need::Provisioning];
const R: &[Need] = &[Need::Registration];

/// §8.4: a capability token whose id is not `cap_` + ULID is refused at issue; the same
/// token with a `cap_` id is accepted and listed under that id.
async fn capability_wrong_prefix(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, _) = cx.start_thread(&alice, &[&bob]).await?;
    let grants: &[&str] = &["label"];
    let mut tok = token(cx, &alice, &bob, &Grant::new(&t, grants));
    let good_id = tok["id"].as_str().unwrap_or_default().to_owned();
    tok["id"] = good_id.replacen("cap_", "tok_", 1).into();
    let _ = loom_protocol::capability::sign_capability_token(
        &mut tok,
        alice.id.signing_key(),
        alice.id.key_id_typed(),
    );
    let p = cx
        .net
        .call("POST", "/v1/capabilities", Some(&alice.token), Some(&tok))
        .await?;
    cx.net
        .expect_not_accepted(p, "a refusal of a capability id without the cap_ prefix")?;
    let tok = token(cx, &alice, &bob, &Grant::new(&t, grants));
    let c = cx
        .net
        .call("POST", "/v1/capabilities", Some(&alice.token), Some(&tok))
        .await?;
    cx.net
        .expect_refused_beside(p, c, "the same token with a cap_ id", &[], "")
}

async fn attachment_wrong_prefix(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let t = cx.data.thread_id();
    let env = cx
        .data
        .message(&alice, &t, None, &[&bob], "with an attachment");
    let ulid = cx.data.envelope_id().replacen("env_", "", 1);
    let with_id = |id: String| {
        let mut e = env.clone();
        e["attachments"] = json!([{
            "id": id,
            "blob_id": format!("blob_{ulid}"),
            "hash": format!("sha256:{}", "0".repeat(64)),
            "size_bytes": 5,
            "filename": "a.txt",
            "mime_type": "text/plain",
        }]);
        alice.sign(&mut e);
        e
    };
    let (probe, control) = (
        with_id(format!("file_{ulid}")),
        with_id(format!("att_{ulid}")),
    );
    cx.net
        .send_probe_and_control(
            &alice,
            &probe,
            &control,
            "the same attachment with an att_ id",
            &["ENVELOPE_INVALID"],
            "",
        )
        .await
}

/// Registers a fresh identity whose document carries `extra` in `member` (besides its own,
/// correctly prefixed signing key, which signs the proof); expects a §24.1 4xx refusal beside
/// the control: the same registration with `fixed` (the key id correctly prefixed).
async fn register_with_key(cx: &mut Ctx, member: &str, extra: Value, fixed: Value) -> Verdict {
    let id = fresh(cx, "erin")?;
    let mut base = id.registration_document();
    base["signing_keys"][0]["public_key_pem"] = pem(&id.signing_key().verifying_key()).into();
    let with = |key: Value| {
        let mut doc = base.clone();
        match doc[member].as_array_mut() {
            Some(list) => list.push(key),
            None => doc[member] = json!([key]),
        }
        doc
    };
    let address = id.address().to_owned();
    let p = register_document(cx, with(extra), &address, id.signing_key(), id.key_id()).await?;
    cx.net.expect_not_accepted(
        p,
        "a refusal of a key id without its type prefix (v1.1 §8.4)",
    )?;
    let c = register_document(cx, with(fixed), &address, id.signing_key(), id.key_id()).await?;
    cx.net.expect_refused_beside(
        p,
        c,
        "the same registration with the key id prefixed",
        &[],
        "",
    )
}

async fn signing_key_wrong_prefix(cx: &mut Ctx) -> Verdict {
    let key = loom_protocol::keys::signing_key_from_seed(&cx.data.seed32());
    let extra = |kid: &str| json!({"key_id": kid, "public_key_pem": pem(&key.verifying_key())});
    register_with_key(
        cx,
        "signing_keys",
        extra("sign_device_2"),
        extra("k_sign_device_2"),
    )
    .await
}

async fn encryption_key_wrong_prefix(cx: &mut Ctx) -> Verdict {
    let raw = cx.data.seed32();
    let extra = |kid: &str| {
        json!({
            "key_id": kid,
            "public_key": loom_protocol::keys::b64url_encode(&raw),
        })
    };
    register_with_key(
        cx,
        "encryption_keys",
        extra("enc_device_1"),
        extra("k_enc_device_1"),
    )
    .await
}

/// Identifier cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.structure.id.capability-prefix",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §8.4", "v1.1 §12.1", "v1.0 §8.3"],
        requirement: "Capability token IDs MUST use the prefix cap_: a token whose id has another prefix is refused.",
        covers: &["R-8.4-06"],
        needs: P,
        how: "Alice signs a §12.1 token for Bob with id tok_<ULID> and POSTs it to /v1/capabilities: 4xx §24.1; the same token with id cap_<ULID> is issued (2xx).",
        interpretation: None,
        mutant: Mutant::Quirk("accept-any-capability-id"),
        run: |cx| Box::pin(capability_wrong_prefix(cx)),
    },
    Case {
        id: "core.structure.id.attachment-prefix",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §8.4", "v1.0 §8.3"],
        requirement: "Attachment IDs MUST use the prefix att_; a node refuses an envelope whose attachment id has another prefix.",
        covers: &["R-8.4-04"],
        needs: P,
        how: "Send a signed message with one attachment whose id is file_<ULID> (blob_id, hash otherwise well-formed); expect 400 ENVELOPE_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-any-attachment-id"),
        run: |cx| Box::pin(attachment_wrong_prefix(cx)),
    },
    Case {
        id: "core.structure.id.signing-key-prefix",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §8.4", "v1.0 §8.3"],
        requirement: "Signing key IDs MUST use the prefix k_sign_; a registration listing a signing key id without it is refused.",
        covers: &["R-8.4-08"],
        needs: R,
        how: "Register a fresh identity whose signing_keys add a second Ed25519 key with id sign_device_2 (proof signed by the first, correctly prefixed key); expect a 4xx with a §24.1 body.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-any-signing-key-id"),
        run: |cx| Box::pin(signing_key_wrong_prefix(cx)),
    },
    Case {
        id: "core.structure.id.encryption-key-prefix",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §8.4", "v1.0 §8.3"],
        requirement: "Encryption key IDs MUST use the prefix k_enc_; a registration listing an encryption key id without it is refused.",
        covers: &["R-8.4-09"],
        needs: R,
        how: "Register a fresh identity with encryption_keys holding a 32-byte X25519 key with id enc_device_1; expect a 4xx with a §24.1 body.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-any-encryption-key-id"),
        run: |cx| Box::pin(encryption_key_wrong_prefix(cx)),
    },
];
