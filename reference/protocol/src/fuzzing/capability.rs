//! Capability tokens (v1.1 §12.1–§12.6).
//!
//! An input starting with `{` is a token (raw JSON) read by the §12.1 shape check and
//! presented for a fixed action. Any other input drives a generator: a token signed by the
//! thread's issuer and an action it permits (sign∘authorize must hold), then at most one
//! mutation whose refusal — the member it names — is known in advance.

use super::world::{PEOPLE, World};
use super::{assert_explained, now};
use crate::capability::{
    CapabilityRequest, Grant, PopProof, TokenShape, authorize_capability, sign_capability_token,
    sign_pop,
};
use crate::clock::FixedClock;
use crate::documents::CapabilityToken;
use crate::envelope::Priority;
use crate::error::ErrorCode;
use crate::id::{CapabilityId, EnvelopeId, KeyId, KeyKind, ThreadId};
use crate::jcs::parse_strict_bytes;
use crate::time::Timestamp;
use arbitrary::{Result as ArbResult, Unstructured};
use serde_json::{Value, json};
use ulid::Ulid;

/// See the module docs. Raw tokens: the shape check refuses with `ENVELOPE_INVALID`,
/// authorization with `CAPABILITY_DENIED`, both naming member and section; a token the typed
/// model reads prints back to the same token. Generated tokens: shape, signature and
/// authorization all pass, and each mutation is refused naming the expected member.
pub fn capability_token(data: &[u8]) {
    if data.first() == Some(&b'{') {
        raw(data);
    } else {
        let _ = generated(&mut Unstructured::new(data));
    }
}

const THREAD: &str = "thr_01JMKB7W8P1QSGF2JM3SXYZR00";
const ENVELOPE: &str = "env_01JMKB7X9Q2RVHF3KN4TYZPG00";
const POP_INTENT: &str = "capability.revoked@v1";

fn model_round_trip(token: &Value) {
    if let Ok(typed) = serde_json::from_value::<CapabilityToken>(token.clone()) {
        let printed = serde_json::to_value(&typed).expect("a token serializes");
        let back: CapabilityToken =
            serde_json::from_value(printed).expect("a printed token reads back");
        assert_eq!(back, typed, "parse∘print = id");
    }
}

fn raw(data: &[u8]) {
    let Ok(token) = parse_strict_bytes(data) else {
        return;
    };
    model_round_trip(&token);
    if let Err(e) = TokenShape::parse(&token, now(), false) {
        assert_explained(&e);
        assert_eq!(e.code, ErrorCode::EnvelopeInvalid, "{e:?}");
    }
    let mut world = World::default();
    world.issuers.insert(PEOPLE[0].addr());
    let actor = PEOPLE[1].addr();
    let thread = ThreadId::parse(THREAD).expect("fixture thread");
    let envelope = EnvelopeId::parse(ENVELOPE).expect("fixture envelope");
    let req = CapabilityRequest {
        actor: &actor,
        thread_id: &thread,
        thread_cap_epoch: 0,
        required: Grant::Reply,
        envelope_id: &envelope,
        envelope_type: "message",
        intent: Some(POP_INTENT),
        priority: Priority::Normal,
        depth: Some(1),
        pop: None,
    };
    if let Err(e) = authorize_capability(&token, &req, &world, &FixedClock(now())) {
        assert_explained(&e);
        assert_eq!(e.code, ErrorCode::CapabilityDenied, "{e:?}");
    }
}

const TYPES: [&str; 4] = ["message", "task", "thread_op", "approval"];
const PRIORITIES: [Priority; 4] = [
    Priority::Low,
    Priority::Normal,
    Priority::High,
    Priority::Urgent,
];

fn priority_name(p: Priority) -> &'static str {
    match p {
        Priority::Low => "low",
        Priority::Normal => "normal",
        Priority::High => "high",
        Priority::Urgent => "urgent",
    }
}

fn generated(u: &mut Unstructured<'_>) -> ArbResult<()> {
    let issuer = &PEOPLE[0];
    let holder = &PEOPLE[u.int_in_range(1..=3usize)?];
    let id = CapabilityId::from_ulid(Ulid(u.arbitrary()?));
    let thread = ThreadId::from_ulid(Ulid(u.arbitrary()?));
    let mut grants: Vec<Grant> = Grant::ALL
        .iter()
        .copied()
        .filter(|_| u.ratio(1, 4).unwrap_or(false))
        .collect();
    if grants.is_empty() {
        grants.push(*u.choose(&Grant::ALL)?);
    }
    let required = if grants.contains(&Grant::Admin) {
        *u.choose(&Grant::ALL)?
    } else {
        *u.choose(&grants)?
    };
    let epoch = u.int_in_range(0..=5u64)?;
    let single_use: bool = u.arbitrary()?;
    let t0 = now().unix_ms();
    let mut expires: Option<i64> = if u.arbitrary()? {
        Some(t0 + u.int_in_range(0..=10_000_000_000i64)?)
    } else {
        None
    };
    let envelope_type = *u.choose(&TYPES)?;
    let types: Option<Vec<&str>> = if u.arbitrary()? {
        let mut t: Vec<&str> = TYPES
            .iter()
            .copied()
            .filter(|_| u.ratio(1, 2).unwrap_or(false))
            .collect();
        if !t.contains(&envelope_type) {
            t.push(envelope_type);
        }
        Some(t)
    } else {
        None
    };
    let depth = u.int_in_range(0..=50u64)?;
    let max_depth: Option<u64> = if u.arbitrary()? {
        Some(depth + u.int_in_range(0..=5u64)?)
    } else {
        None
    };
    let priority = *u.choose(&PRIORITIES)?;
    let max_priority: Option<Priority> = if u.arbitrary()? {
        Some(*u.choose(&PRIORITIES[PRIORITIES.iter().position(|p| *p == priority).unwrap_or(0)..])?)
    } else {
        None
    };
    let bound: bool = u.arbitrary()?;
    let pop_intent: bool = u.arbitrary()?;

    let mut world = World::default();
    world.issuers.insert(issuer.addr());
    let mut req_thread = thread;
    let mut req_actor = holder.addr();
    let mut req_epoch = epoch;
    let mut req_required = required;
    let mut req_type = envelope_type;
    let mut req_depth = depth;
    let mut req_priority = priority;
    let mut pop_signer = Some(holder);
    let mut signer = issuer;
    let mut post: Option<(&str, Value)> = None;
    let mut drop_signature = false;
    let mutation = u.int_in_range(0..=16u8)?;
    let field = |m: &str| format!("capability_token.{m}");
    let expected: Option<String> = match mutation {
        1 => {
            post = Some(("epoch", Value::from(epoch + 1)));
            req_epoch = epoch + 1;
            Some(field("signature.value"))
        }
        2 => {
            signer = &PEOPLE[1];
            Some(field("signature.value"))
        }
        3 => {
            world.issuers.clear();
            Some(field("issued_by"))
        }
        4 => {
            req_thread = ThreadId::from_ulid(Ulid(thread.ulid().0 ^ 1));
            Some(field("scope.thread_id"))
        }
        5 => {
            req_actor = PEOPLE[4].addr();
            Some(field("issued_to"))
        }
        6 => {
            expires = Some(t0 - u.int_in_range(1..=10_000_000_000i64)?);
            Some(field("expires_at"))
        }
        7 => {
            req_epoch = epoch + 1;
            Some(field("epoch"))
        }
        8 => {
            world.revoked_caps.insert(id.to_string());
            Some(field("id"))
        }
        9 if single_use => {
            world.spent_caps.insert(id.to_string());
            Some(field("single_use"))
        }
        10 if !grants.contains(&Grant::Admin) => {
            match Grant::ALL.iter().find(|g| !grants.contains(g)) {
                Some(g) => {
                    req_required = *g;
                    Some(field("grants"))
                }
                None => None,
            }
        }
        11 if types.is_some() => {
            req_type = "not-a-listed-type";
            Some(field("scope.envelope_types"))
        }
        12 if max_depth.is_some() => {
            req_depth = max_depth.unwrap_or(0) + 1;
            Some(field("scope.max_depth"))
        }
        13 if max_priority.is_some_and(|m| m != Priority::Urgent) => {
            req_priority = Priority::Urgent;
            Some(field("scope.max_priority"))
        }
        14 if bound && pop_intent => {
            pop_signer = None;
            Some("content.structured.parameters.pop_signature".to_owned())
        }
        15 if bound && pop_intent => {
            pop_signer = Some(&PEOPLE[2 - usize::from(holder.seed == 3)]);
            Some("content.structured.parameters.pop_signature".to_owned())
        }
        16 => {
            drop_signature = true;
            Some(field("signature"))
        }
        _ => None,
    };

    let mut token = json!({
        "loom": "1.1",
        "id": id.to_string(),
        "issued_by": issuer.address,
        "issued_to": holder.address,
        "created_at": Timestamp::from_unix_ms(t0 - 60_000).to_rfc3339(),
        "expires_at": expires.map(|t| Timestamp::from_unix_ms(t).to_rfc3339()),
        "single_use": single_use,
        "epoch": epoch,
        "grants": grants.iter().map(|g| g.as_str()).collect::<Vec<_>>(),
        "scope": {"thread_id": thread.to_string()},
    });
    if let Some(t) = &types {
        token["scope"]["envelope_types"] = json!(t);
    }
    if let Some(d) = max_depth {
        token["scope"]["max_depth"] = json!(d);
    }
    if let Some(p) = max_priority {
        token["scope"]["max_priority"] = json!(priority_name(p));
    }
    if bound {
        token["cnf"] = json!({"key_id": holder.key_id});
    }
    let kid = KeyId::parse(issuer.key_id, KeyKind::Signing).expect("fixture key id");
    sign_capability_token(&mut token, &signer.key(), &kid).expect("a token object signs");
    if let Some((k, v)) = post {
        token[k] = v;
    }
    if drop_signature {
        token.as_object_mut().map(|o| o.remove("signature"));
    }

    if expected.is_none() {
        let shape = TokenShape::parse(&token, now(), false)
            .unwrap_or_else(|e| panic!("a generated token fails the shape check: {e:?}"));
        assert!(shape.signature_verifies(&token, &issuer.key().verifying_key()));
        assert_eq!(shape.id, id);
        model_round_trip(&token);
    }

    let envelope = EnvelopeId::parse(ENVELOPE).expect("fixture envelope");
    let pop_ts = now().to_rfc3339();
    let pop_sig = pop_signer.map(|p| sign_pop(&p.key(), &id.to_string(), ENVELOPE, &pop_ts));
    let req = CapabilityRequest {
        actor: &req_actor,
        thread_id: &req_thread,
        thread_cap_epoch: req_epoch,
        required: req_required,
        envelope_id: &envelope,
        envelope_type: req_type,
        intent: pop_intent.then_some(POP_INTENT),
        priority: req_priority,
        depth: Some(req_depth),
        pop: pop_sig.as_deref().map(|signature| PopProof {
            signature,
            timestamp: &pop_ts,
        }),
    };
    let got = authorize_capability(&token, &req, &world, &FixedClock(now()));
    match (&expected, got) {
        (None, Ok(a)) => {
            assert_eq!(a.id, id);
            assert_eq!(a.issued_by, issuer.addr());
            assert_eq!(a.single_use, single_use);
        }
        (None, Err(e)) => panic!("a token valid by construction is refused: {e:?}"),
        (Some(f), Ok(_)) => panic!("mutation {mutation} accepted; expected {f}"),
        (Some(f), Err(e)) => {
            assert_explained(&e);
            assert_eq!(e.code, ErrorCode::CapabilityDenied, "{e:?}");
            assert_eq!(&e.field, f, "mutation {mutation}: {e:?}");
        }
    }
    Ok(())
}
