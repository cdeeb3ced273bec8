//! Delegation chain verification (v1.1 §13.3) from a self-contained request: the chain, a
//! directory of identities, revocations, the policy, `now`, the sender and the action.

use super::{BadRequest, Input};
use crate::protocol::Answer;
use ed25519_dalek::VerifyingKey;
use loom_protocol::delegation::{
    ChainPolicy, DelegationResolver, LinkRef, RevocationList, verify_delegation_chain,
};
use loom_protocol::envelope::SenderType;
use loom_protocol::keys::public_key_from_b64url;
use loom_protocol::{Address, FixedClock, Timestamp};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One identity of the request's directory.
pub type DirectoryEntry = (Option<SenderType>, Vec<(String, VerifyingKey)>);

/// The `identities` member: address → (type, signing keys by key id).
pub fn directory(input: Input<'_>) -> Result<BTreeMap<Address, DirectoryEntry>, BadRequest> {
    let bad = |m: &str| format!("identities: {m}");
    let mut out = BTreeMap::new();
    for (a, entry) in input
        .value("identities")?
        .as_object()
        .ok_or_else(|| bad("must be an object"))?
    {
        let address = Address::parse(a).map_err(|_| bad("keys are addresses"))?;
        let kind = entry["type"].as_str().and_then(SenderType::parse);
        let keys = entry["signing_keys"]
            .as_object()
            .ok_or_else(|| bad("signing_keys must be an object"))?
            .iter()
            .map(|(kid, k)| {
                k.as_str()
                    .and_then(|k| public_key_from_b64url(k).ok())
                    .map(|k| (kid.clone(), k))
                    .ok_or_else(|| bad("signing keys are base64url Ed25519 keys"))
            })
            .collect::<Result<_, _>>()?;
        out.insert(address, (kind, keys));
    }
    Ok(out)
}

/// A timestamp member.
pub fn timestamp(v: &Value, name: &str) -> Result<Timestamp, BadRequest> {
    v.as_str()
        .and_then(|s| Timestamp::parse(s).ok())
        .ok_or_else(|| format!("{name} must be an ISO 8601 timestamp"))
}

struct World {
    ids: BTreeMap<Address, DirectoryEntry>,
    revoked: RevocationList,
}

impl DelegationResolver for World {
    fn signing_keys(&self, identity: &Address) -> Option<Vec<(String, VerifyingKey)>> {
        self.ids.get(identity).map(|(_, k)| k.clone())
    }
    fn identity_type(&self, identity: &Address) -> Option<SenderType> {
        self.ids.get(identity).and_then(|(t, _)| *t)
    }
    fn is_revoked(&self, link: &LinkRef<'_>) -> bool {
        self.revoked.contains(link)
    }
}

fn revocations(v: &Value) -> Result<RevocationList, BadRequest> {
    let mut list = RevocationList::default();
    let at = Timestamp::from_unix_ms(0);
    for id in v["ids"]
        .as_array()
        .ok_or("revocations.ids must be an array")?
    {
        list.revoke_id(id.as_str().ok_or("revocation ids are strings")?, at);
    }
    for p in v["pairs"]
        .as_array()
        .ok_or("revocations.pairs must be an array")?
    {
        let a = |k: &str| {
            p[k].as_str()
                .and_then(|s| Address::parse(s).ok())
                .ok_or_else(|| format!("revocations.pairs[].{k} must be an address"))
        };
        list.revoke_pair(
            a("delegator")?,
            a("delegate")?,
            timestamp(&p["revoked_at"], "revoked_at")?,
        );
    }
    Ok(list)
}

fn policy(v: &Value) -> Result<ChainPolicy, BadRequest> {
    let bad = |k: &str| format!("policy.{k} is missing or mistyped");
    Ok(ChainPolicy {
        max_chain_length: v["max_chain_length"]
            .as_u64()
            .ok_or_else(|| bad("max_chain_length"))? as usize,
        enforce_root_delegator_type: v["enforce_root_delegator_type"]
            .as_bool()
            .ok_or_else(|| bad("enforce_root_delegator_type"))?,
        max_created_at_future_skew_ms: v["max_created_at_future_skew_ms"]
            .as_i64()
            .ok_or_else(|| bad("max_created_at_future_skew_ms"))?,
        accept_legacy_signatures: v["accept_legacy_signatures"]
            .as_bool()
            .ok_or_else(|| bad("accept_legacy_signatures"))?,
        // Both readings of §13.3.1 are legal (DESIGN.md §9); the vectors hold no switch.
        accept_context_in_payload: true,
    })
}

/// `verify-delegation-chain`: is `chain` a valid delegation for `sender` to perform `action`?
pub fn verify_chain(input: Input<'_>) -> Result<Answer, BadRequest> {
    let world = World {
        ids: directory(input)?,
        revoked: revocations(input.value("revocations")?)?,
    };
    let policy = policy(input.value("policy")?)?;
    let clock = FixedClock(timestamp(input.value("now")?, "now")?);
    let action = input.str("action")?;
    if !loom_protocol::envelope::validate::is_versioned_intent(action) {
        return Err(format!(
            "action {action:?} must be a versioned intent name@vN"
        ));
    }
    // The chain as an agent envelope carries it (v1.1 §13.3 step 2); the action is its intent.
    let envelope = json!({
        "type": "message",
        "from": {"identity": input.str("sender")?, "type": "agent", "delegation_chain": input.value("chain")?},
        "content": {"structured": {"intent": action, "parameters": {}}, "encrypted": false}
    });
    Ok(
        match verify_delegation_chain(&envelope, &world, &policy, &clock) {
            Ok(()) => Answer::accepted(),
            Err(e) => Answer::invalid(e.code.as_str(), e.to_string()),
        },
    )
}
