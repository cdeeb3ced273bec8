//! Envelope acceptance (v1.1 §16.1, [`crate::accept`]) over a small world: a generated
//! sequence of signed envelopes — messages and thread operations from humans and from agents
//! with delegation chains, in two threads, replying to earlier envelopes, to unknown parents
//! or to none — is admitted and decided the way a node does it, applying each acceptance.
//! This reaches signature, delegation-chain, capability, thread-state and DAG code with
//! inputs that pass the JSON and structure checks.

use super::world::{PEOPLE, Person, World};
use super::{assert_explained, now};
use crate::accept::{Context, EnvelopeLimits, Origin, SpecRules, admit, decide};
use crate::address::Address;
use crate::delegation::sign_delegation_link;
use crate::envelope::sign_envelope;
use crate::error::ErrorCode;
use crate::id::{EnvelopeId, KeyId, KeyKind, ThreadId};
use crate::thread::{ThreadLimits, rendering_order};
use crate::time::Timestamp;
use arbitrary::{Result as ArbResult, Unstructured};
use serde_json::{Value, json};
use ulid::Ulid;

/// Properties, per envelope: a refusal names field, rule and section; an envelope changed
/// after signing is refused with `SIGNATURE_INVALID` on `signature.value`; a resubmitted one
/// with `ENVELOPE_DUPLICATE`; a root message from a registered human or a delegated agent is
/// accepted; accepted envelopes take `meta.event_seq` = the thread's last + 1 and join the
/// thread's DAG, whose rendering order lists every envelope once.
pub fn accept(data: &[u8]) {
    let mut stats = Stats::default();
    let _ = run(&mut Unstructured::new(data), &mut stats);
}

/// What one run reached (for the test that the generator gets past admission).
#[derive(Debug, Default)]
struct Stats {
    accepted: usize,
    accepted_ops: usize,
    accepted_from_agents: usize,
    pending_parents: usize,
    refused: std::collections::BTreeMap<ErrorCode, usize>,
}

const BASE_ID: u128 = 0x0195_0000_0000_0000_0000_0000_0000_0000;

fn env_id(n: u128) -> EnvelopeId {
    EnvelopeId::from_ulid(Ulid(BASE_ID + n))
}

fn thread_id(n: u128) -> ThreadId {
    ThreadId::from_ulid(Ulid(BASE_ID + 0x1000 + n))
}

/// The delegation chain of an agent: alice delegates everything (§13.2 `*` at the root).
fn chain_for(agent: &Person, created: &str) -> Value {
    let mut link = json!({
        "id": format!("dlg_{}", agent.key_id),
        "delegator": PEOPLE[0].address,
        "delegate": agent.address,
        "scope": ["*"],
        "created_at": created,
        "allow_sub_delegation": false,
    });
    let kid = KeyId::parse(PEOPLE[0].key_id, KeyKind::Signing).expect("fixture key id");
    sign_delegation_link(&mut link, &PEOPLE[0].key(), &kid).expect("a link object signs");
    json!([link])
}

const OPS: [&str; 11] = [
    "thread.add_participant@v1",
    "thread.remove_participant@v1",
    "thread.update@v1",
    "thread.delegate@v1",
    "thread.resolve@v1",
    "thread.archive@v1",
    "thread.lock@v1",
    "thread.reopen@v1",
    "thread.fork@v1",
    "thread.merge@v1",
    "thread.link@v1",
];

fn op_parameters(u: &mut Unstructured<'_>, other_thread: ThreadId) -> ArbResult<Value> {
    let who = PEOPLE[u.choose_index(PEOPLE.len())?].address;
    Ok(json!({
        "identity": who,
        "role": *u.choose(&["participant", "observer", "owner"])?,
        "subject": u.arbitrary::<String>()?,
        "labels": [u.arbitrary::<String>()?],
        "fork_thread_id": other_thread.to_string(),
        "thread_id": other_thread.to_string(),
        "relation": *u.choose(&["related", "parent", "child"])?,
    }))
}

fn run(u: &mut Unstructured<'_>, stats: &mut Stats) -> ArbResult<()> {
    let mut world = World::default();
    let limits = ThreadLimits::default();
    let steps = u.int_in_range(1..=10usize)?;
    let mut submitted: Vec<Value> = Vec::new();
    let mut accepted_ids: Vec<EnvelopeId> = Vec::new();
    for step in 0..steps {
        let sender = &PEOPLE[u.choose_index(PEOPLE.len())?];
        let t = u.int_in_range(0..=1u128)?;
        let thread = thread_id(t);
        let other_thread = thread_id(1 - t);
        let parent: Option<EnvelopeId> = match u.int_in_range(0..=3u8)? {
            0 => None,
            1 => Some(env_id(1000 + u.int_in_range(0..=5u128)?)), // not (yet) stored
            _ if accepted_ids.is_empty() => None,
            _ => Some(accepted_ids[u.choose_index(accepted_ids.len())?]),
        };
        let is_op = u.ratio(1, 3)?;
        let created = Timestamp::from_unix_ms(now().unix_ms() - u.int_in_range(0..=86_400_000i64)?)
            .to_rfc3339();
        let to: Vec<Value> = PEOPLE
            .iter()
            .filter(|_| u.ratio(1, 2).unwrap_or(false))
            .map(|p| json!({"identity": p.address, "role": "primary"}))
            .collect();
        let to = if to.is_empty() {
            vec![json!({"identity": PEOPLE[1].address, "role": "primary"})]
        } else {
            to
        };
        let mut from = json!({
            "identity": sender.address,
            "key_id": sender.key_id,
            "type": sender.kind.as_str(),
        });
        if sender.kind.as_str() == "agent" {
            from["delegation_chain"] = chain_for(sender, &created);
        }
        let content = if is_op {
            json!({"structured": {
                "intent": *u.choose(&OPS)?,
                "parameters": op_parameters(u, other_thread)?,
            }})
        } else {
            json!({
                "human": {"text": u.arbitrary::<String>()?},
                "structured": {"intent": "message.general@v1"},
            })
        };
        let id = env_id(step as u128);
        let mut env = json!({
            "loom": "1.1",
            "id": id.to_string(),
            "thread_id": thread.to_string(),
            "parent_id": parent.map(|p| p.to_string()),
            "type": if is_op { "thread_op" } else { "message" },
            "from": from,
            "to": to,
            "created_at": created,
            "content": content,
        });
        let kid = KeyId::parse(sender.key_id, KeyKind::Signing).expect("fixture key id");
        sign_envelope(&mut env, &sender.key(), &kid).expect("an object signs");

        // 0: as signed; 1: changed after signing; 2: an earlier envelope again.
        let mode = u.int_in_range(0..=5u8)?;
        let (env, expect) = match mode {
            1 => {
                let mut changed = env;
                changed["created_at"] = Value::from(Timestamp::from_unix_ms(0).to_rfc3339());
                (changed, Some(ErrorCode::SignatureInvalid))
            }
            2 if !submitted.is_empty() => {
                let again = submitted[u.choose_index(submitted.len())?].clone();
                let code = again["id"]
                    .as_str()
                    .and_then(|s| EnvelopeId::parse(s).ok())
                    .filter(|i| accepted_ids.contains(i))
                    .map(|_| ErrorCode::EnvelopeDuplicate);
                (again, code)
            }
            _ => (env, None),
        };
        let must_accept = expect.is_none()
            && mode != 2
            && !is_op
            && parent.is_none()
            && !world.threads.contains_key(&thread);
        let caller = env["from"]["identity"]
            .as_str()
            .and_then(|s| Address::parse_wire(s).ok())
            .unwrap_or_else(|| sender.addr());
        let origin = Origin::Local { caller: &caller };
        let result = admit(
            env.clone(),
            origin,
            &world,
            &SpecRules,
            &EnvelopeLimits::default(),
            now(),
        )
        .and_then(|admitted| {
            let ctx = Context {
                now: now(),
                node_id: "node.test",
                limits,
                replay_mode: Default::default(),
                rules: &SpecRules,
            };
            decide(&admitted, origin, &world, &ctx)
        });
        submitted.push(env);
        let a = match result {
            Err(e) => {
                *stats.refused.entry(e.code).or_default() += 1;
                assert_explained(&e);
                assert!(!must_accept, "a root message is refused: {e:?}");
                if let Some(code) = expect {
                    assert_eq!(e.code, code, "{e:?}");
                    if code == ErrorCode::SignatureInvalid {
                        assert_eq!(e.field, "signature.value");
                    }
                }
                continue;
            }
            Ok(a) => a,
        };
        assert!(
            expect.is_none(),
            "expected {expect:?}, accepted {}",
            a.facts.id
        );
        let last = world
            .threads
            .get(&a.facts.thread)
            .map_or(0, |rt| rt.last_event_seq);
        assert_eq!(a.event_seq, last + 1, "event_seq is the thread's last + 1");
        assert_eq!(a.envelope["meta"]["event_seq"], Value::from(a.event_seq));
        stats.accepted += 1;
        stats.accepted_ops += usize::from(is_op);
        stats.accepted_from_agents += usize::from(sender.kind.as_str() == "agent");
        stats.pending_parents += usize::from(a.pending_parent);
        accepted_ids.push(a.facts.id);
        world.apply(&a);
        let rt = &world.threads[&a.facts.thread];
        assert!(rt.dag.contains(&a.facts.id));
        let order = rendering_order(&rt.dag);
        assert_eq!(
            order.len(),
            rt.dag.len(),
            "rendering order lists each envelope once"
        );
        let mut sorted = order.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), order.len());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::{Rng, SeedableRng};

    /// The generator gets past admission: over a few hundred random inputs, messages and
    /// thread operations from humans and agents are accepted, parents are pending, and the
    /// tampered and resubmitted envelopes are refused with their codes.
    #[test]
    fn generated_sequences_reach_every_stage_of_acceptance() {
        let mut rng = ChaCha20Rng::seed_from_u64(19);
        let mut stats = Stats::default();
        for _ in 0..300 {
            let mut data = vec![0u8; 768];
            rng.fill_bytes(&mut data);
            let _ = run(&mut Unstructured::new(&data), &mut stats);
        }
        assert!(stats.accepted > 50, "{stats:?}");
        assert!(stats.accepted_ops > 0, "{stats:?}");
        assert!(stats.accepted_from_agents > 0, "{stats:?}");
        assert!(stats.pending_parents > 0, "{stats:?}");
        for code in [
            ErrorCode::SignatureInvalid,
            ErrorCode::EnvelopeDuplicate,
            ErrorCode::CapabilityDenied,
        ] {
            assert!(stats.refused.contains_key(&code), "{code:?}: {stats:?}");
        }
    }
}
