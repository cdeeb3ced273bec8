//! LOOM addresses (v1.1 §6.1): the local-part syntax, case-insensitive comparison and the
//! reserved `bridge://` scheme, observed through registration and resolution.

use super::identity::{expect_not_registered, register, register_document, resolve_path};
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::provision::pem;
use crate::ctx::{Ctx, Ex, TestData};
use loom_protocol::keys::signing_key_from_seed;
use serde_json::json;

/// Tries to register exactly `address` (a human with a fresh key): challenge, then the
/// signed registration with the profile's extras. Returns the deciding exchange: the challenge
/// when it is refused, otherwise the registration.
async fn try_register(cx: &mut Ctx, address: &str) -> Result<Ex, Finding> {
    let seed = cx.data.seed32();
    let key = signing_key_from_seed(&seed);
    // A key id of its own per attempt: a node may keep key ids unique (DESIGN.md §9).
    let key_id = &format!("k_sign_addr_{}", &hex::encode(seed)[..16]);
    let doc = json!({
        "id": address,
        "type": "human",
        "display_name": "address probe",
        "signing_keys": [{"key_id": key_id, "public_key_pem": pem(&key.verifying_key())}],
    });
    register_document(cx, doc, address, &key, key_id).await
}

/// `address` cannot be registered: a 4xx §24.1 refusal at the challenge or the registration,
/// beside `control`, an accepted registration of a valid address.
async fn expect_unregistrable(cx: &mut Ctx, address: &str, why: &str, control: Ex) -> Verdict {
    let i = try_register(cx, address).await?;
    let what = "the registration of a valid address";
    cx.net
        .expect_refused_beside(i, control, what, &[], "")
        .map_err(|f| match f {
            Finding::Fail {
                actual, decisive, ..
            } => Finding::Fail {
                expected: format!("registering {address} refused (4xx with a §24.1 body): {why}"),
                actual,
                decisive,
            },
            f => f,
        })
}

async fn local_part_syntax(cx: &mut Ctx) -> Verdict {
    let base = cx.fresh_identity("lp", "human")?;
    let local = base.address()["loom://".len()..]
        .split('@')
        .next()
        .unwrap_or_default()
        .to_owned();
    let domain = cx.target.domain.clone();
    // The longest valid local part (64 characters) registers.
    let longest = format!("{local}{}", "x".repeat(64usize.saturating_sub(local.len())));
    let id =
        loom_client::Identity::from_seed(&format!("loom://{longest}@{domain}"), &cx.data.seed32())
            .map_err(|e| Finding::Error(e.to_string()))?;
    let control = register(cx, &id).await?;
    cx.net
        .expect_control(control, "the registration of the longest valid local part")?;
    for (bad, why) in [
        (format!("-{local}"), "a local part starts with [a-z0-9]"),
        (
            format!("{local}+tag"),
            "a local part holds only [a-z0-9._-]",
        ),
        (
            format!("{longest}y"),
            "a local part is at most 64 characters",
        ),
    ] {
        let address = format!("loom://{bad}@{domain}");
        expect_unregistrable(cx, &address, why, control).await?;
    }
    Ok(())
}

async fn compare_case_insensitive(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let lower = alice.address().to_owned();
    let mixed = TestData::upper_case_address(&lower);
    let i = cx.net.get(&resolve_path(&mixed), &alice.token).await?;
    let doc = cx.net.ok_body(i)?;
    cx.net.expect_eq(
        "id of the identity resolved by its upper-case spelling",
        &json!(lower),
        &doc["id"],
    )
}

async fn bridge_reserved(cx: &mut Ctx) -> Verdict {
    let probe = cx.fresh_identity("bridged", "human")?;
    let local = probe.address()["loom://".len()..].to_owned();
    let address = format!("bridge://{local}");
    let i = try_register(cx, &address).await?;
    cx.net
        .expect_not_accepted(i, "a refusal: bridge:// is reserved for the Email Bridge")?;
    expect_not_registered(cx, &address).await?;
    // The control: the same local part under loom://.
    let c = register(cx, &probe).await?;
    cx.net
        .expect_refused_beside(i, c, "the same registration under loom://", &[], "")
}

const R: &[Need] = &[Need::Registration];

/// Address cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.address.local-part.syntax",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.1", "v1.0 §6.1"],
        requirement: "Local parts of LOOM addresses MUST match [a-z0-9][a-z0-9._-]{0,63}.",
        covers: &["R-6.1-01"],
        needs: R,
        how: "A 64-character local part registers (201); local parts starting with '-', holding '+', or 65 characters long are refused (4xx §24.1 at the challenge or the registration).",
        interpretation: None,
        mutant: Mutant::Quirk("accept-any-local-part"),
        run: |cx| Box::pin(local_part_syntax(cx)),
    },
    Case {
        id: "core.address.compare.case-insensitive",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.1"],
        requirement: "Nodes MUST compare LOOM addresses case-insensitively.",
        covers: &["R-6.1-04"],
        needs: R,
        how: "Register alice; GET /v1/identity/{her address in upper case, percent-encoded}: 200 with her canonical lowercase id.",
        interpretation: None,
        mutant: Mutant::Quirk("case-sensitive-address-lookup"),
        run: |cx| Box::pin(compare_case_insensitive(cx)),
    },
    Case {
        id: "core.address.bridge.reserved",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.1", "loom-core-profile"],
        requirement: "The bridge:// scheme is reserved for bridged identities: it cannot be registered through the identity API.",
        covers: &["R-6.1-07"],
        needs: R,
        how: "Register bridge://{fresh local}@{target domain} as a human with a valid proof; expect a 4xx §24.1 refusal and the address not resolvable (404).",
        interpretation: None,
        mutant: Mutant::Quirk("allow-bridge-registration"),
        run: |cx| Box::pin(bridge_reserved(cx)),
    },
];
