//! The acceptance core on its own (no store, no HTTP): an in-memory world implements the
//! lookups, applies each decision's effects the way a node does, and the tests check the
//! order of the §16.1 steps, the effects and the invariants of `meta.event_seq`.

mod common;

use common::{ALICE, BOB, CAROL, key, key_id};
use ed25519_dalek::VerifyingKey;
use loom_protocol::accept::{
    Acceptance, Admitted, Context, Directory, Effect, EnvelopeLimits, Origin, Rules, SpecRules,
    admit, decide,
};
use loom_protocol::delegation::{DelegationResolver, LinkRef};
use loom_protocol::e2ee::crypto::{Sealing, public_key};
use loom_protocol::e2ee::{AadKind, Profile, Recipient, ReplayMode, seal_with_rng};
use loom_protocol::envelope::{SenderType, sign_envelope};
use loom_protocol::fuzzing::world::World;
use loom_protocol::id::ThreadId;
use loom_protocol::thread::ThreadLimits;
use loom_protocol::{Address, ErrorCode, Timestamp};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const NOW: &str = "2026-02-16T17:00:00Z";

/// The default per-envelope bounds with a 64 KiB size limit.
fn limits() -> EnvelopeLimits {
    EnvelopeLimits {
        max_envelope_bytes: 64 * 1024,
        ..EnvelopeLimits::default()
    }
}

/// The kit's one in-memory world (the fuzz bodies' too: alice, bob and carol registered with
/// their fixed-seed keys), and the events a node would emit.
#[derive(Default)]
struct Node {
    world: World,
    events: Vec<(ThreadId, u64)>,
    replay_mode: ReplayMode,
}

impl std::ops::Deref for Node {
    type Target = World;
    fn deref(&self) -> &World {
        &self.world
    }
}

impl std::ops::DerefMut for Node {
    fn deref_mut(&mut self) -> &mut World {
        &mut self.world
    }
}

impl Node {
    fn with_people() -> Node {
        Node::default()
    }

    /// Takes `who` out of the directory.
    fn unregister(&mut self, who: &str) {
        self.world
            .unregistered
            .insert(Address::parse_wire(who).unwrap());
    }

    /// Admits and decides like a node: applies an accepted envelope's effects.
    fn submit(
        &mut self,
        env: Value,
        rules: &dyn Rules,
    ) -> Result<Acceptance, loom_protocol::ProtocolError> {
        let caller = Address::parse_wire(env["from"]["identity"].as_str().unwrap()).unwrap();
        self.submit_as(env, Origin::Local { caller: &caller }, rules)
    }

    fn submit_as(
        &mut self,
        env: Value,
        origin: Origin<'_>,
        rules: &dyn Rules,
    ) -> Result<Acceptance, loom_protocol::ProtocolError> {
        let now = Timestamp::parse(NOW).unwrap();
        let admitted: Admitted = admit(env, origin, &self.world, rules, &limits(), now)?;
        let ctx = Context {
            now,
            node_id: "node.test",
            limits: ThreadLimits::default(),
            replay_mode: self.replay_mode,
            rules,
        };
        let a = decide(&admitted, origin, &self.world, &ctx)?;
        self.world.apply(&a);
        self.events.push((a.facts.thread, a.event_seq));
        Ok(a)
    }
}

fn seed_of(from: &str) -> (u8, &'static str) {
    match from {
        ALICE => (1, "alice_1"),
        BOB => (2, "bob_1"),
        _ => (3, "carol_1"),
    }
}

fn id(prefix: &str, n: u32) -> String {
    format!("{prefix}_01JMKB7X9Q2RVHF3KN4TYZ{n:04}")
}

/// A signed message `n` in thread `t` from `from` to `to`, replying to `parent`.
fn msg(n: u32, t: u32, from: &str, to: &str, parent: Option<u32>) -> Value {
    let mut env = json!({
        "loom": "1.1",
        "id": id("env", n),
        "thread_id": id("thr", t),
        "parent_id": parent.map(|p| id("env", p)),
        "type": "message",
        "from": {"identity": from, "key_id": "k_sign_x", "type": "human"},
        "to": [{"identity": to, "role": "primary"}],
        "created_at": "2026-02-16T16:37:00Z",
        "content": {"human": {"text": format!("hello {n}")}, "structured": {"intent": "message.general@v1"}},
    });
    let (seed, kid) = seed_of(from);
    sign_envelope(&mut env, &key(seed), &key_id(kid)).unwrap();
    env
}

fn op(n: u32, t: u32, from: &str, intent: &str, parameters: Value) -> Value {
    let mut env = json!({
        "loom": "1.1",
        "id": id("env", n),
        "thread_id": id("thr", t),
        "parent_id": null,
        "type": "thread_op",
        "from": {"identity": from, "key_id": "k_sign_x", "type": "human"},
        "to": [{"identity": from, "role": "primary"}],
        "created_at": "2026-02-16T16:38:00Z",
        "content": {"structured": {"intent": intent, "parameters": parameters}},
    });
    let (seed, kid) = seed_of(from);
    sign_envelope(&mut env, &key(seed), &key_id(kid)).unwrap();
    env
}

const NONE: SpecRules = SpecRules;

#[test]
fn a_root_bootstraps_its_thread_and_lists_every_effect_in_order() {
    let mut w = Node::with_people();
    let a = w.submit(msg(1, 1, ALICE, BOB, None), &NONE).unwrap();
    assert_eq!(a.event_seq, 1);
    assert!(!a.pending_parent);
    assert_eq!(a.envelope["meta"]["event_seq"], 1);
    assert_eq!(a.envelope["meta"]["origin_event_seq"], 1);
    assert_eq!(a.envelope["meta"]["node_id"], "node.test");
    assert_eq!(
        a.envelope["meta"]["received_at"],
        "2026-02-16T17:00:00.000Z"
    );
    let kinds: Vec<&str> = a
        .effects
        .iter()
        .map(|e| match e {
            Effect::PutThread { fresh: true, .. } => "thread(new)",
            Effect::IndexThread { .. } => "index-thread",
            Effect::SearchThread { .. } => "search-thread",
            Effect::PutEnvelope { .. } => "envelope",
            Effect::IndexEnvelope { .. } => "index-envelope",
            Effect::Event(_) => "event",
            Effect::Audit(_) => "audit",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "thread(new)",
            "index-thread",
            "search-thread",
            "envelope",
            "index-envelope",
            "event",
            "audit"
        ]
    );
    let ev = a.events().next().unwrap();
    assert_eq!(ev.kind, "envelope.new");
    let readers: Vec<String> = ev.readers.iter().map(|a| a.to_string()).collect();
    assert_eq!(readers, [ALICE, BOB]);
    assert!(a.next_state.is_owner(&Address::parse_wire(ALICE).unwrap()));
}

#[test]
fn replies_take_the_next_event_seq_and_a_missing_parent_is_pending() {
    let mut w = Node::with_people();
    w.submit(msg(1, 1, ALICE, BOB, None), &NONE).unwrap();
    let b = w.submit(msg(2, 1, BOB, ALICE, Some(1)), &NONE).unwrap();
    assert_eq!((b.event_seq, b.pending_parent), (2, false));
    let c = w.submit(msg(3, 1, ALICE, BOB, Some(99)), &NONE).unwrap();
    assert_eq!((c.event_seq, c.pending_parent), (3, true));
    assert_eq!(c.envelope["meta"]["pending_parent"], true);
    assert!(matches!(
        c.effects[0],
        Effect::PutThread {
            fresh: false,
            state_changed: false,
            ..
        }
    ));
}

#[test]
fn duplicates_are_refused_and_change_nothing() {
    let mut w = Node::with_people();
    w.submit(msg(1, 1, ALICE, BOB, None), &NONE).unwrap();
    let before = (w.stored.len(), w.events.len());
    let e = w.submit(msg(1, 1, ALICE, BOB, None), &NONE).unwrap_err();
    assert_eq!(e.code, ErrorCode::EnvelopeDuplicate);
    assert_eq!((w.stored.len(), w.events.len()), before);
}

/// A shim that breaks §10.4 `THREAD_LOCKED` and nothing else: the override of one step.
struct LockIgnored;

impl Rules for LockIgnored {
    fn check_unlocked(
        &self,
        _facts: &loom_protocol::accept::Facts,
        _state: &loom_protocol::thread::ThreadState,
    ) -> Result<(), loom_protocol::ProtocolError> {
        Ok(())
    }
}

#[test]
fn admission_checks_run_in_the_documented_order() {
    let mut w = Node::with_people();
    // Step 3 before step 4: a spoofed sender is refused before the lookup.
    let carol = Address::parse_wire(CAROL).unwrap();
    let e = w
        .submit_as(
            msg(1, 1, ALICE, BOB, None),
            Origin::Local { caller: &carol },
            &NONE,
        )
        .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (ErrorCode::CapabilityDenied, "from.identity")
    );
    // Step 4: unknown sender.
    w.unregister(BOB);
    let e = w.submit(msg(2, 2, BOB, ALICE, None), &NONE).unwrap_err();
    assert_eq!(e.code, ErrorCode::IdentityNotFound);
    // Step 5: a signature by another key.
    let mut forged = msg(3, 3, ALICE, CAROL, None);
    let carol_signed = msg(3, 3, CAROL, ALICE, None);
    forged["signature"] = carol_signed["signature"].clone();
    let e = w.submit(forged, &NONE).unwrap_err();
    assert_eq!(e.code, ErrorCode::SignatureInvalid);
    // Step 1 before everything: size.
    let mut big = msg(4, 4, ALICE, CAROL, None);
    big["content"]["human"]["text"] = "x".repeat(70 * 1024).into();
    assert_eq!(
        w.submit(big, &NONE).unwrap_err().code,
        ErrorCode::PayloadTooLarge
    );
    // Step 2: structure names the field.
    let mut bad = msg(5, 5, ALICE, CAROL, None);
    bad["to"] = json!([]);
    let e = w.submit(bad, &NONE).unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (ErrorCode::EnvelopeInvalid, "to")
    );
    assert!(w.stored.is_empty(), "no refused envelope is stored");
}

/// Issue 19 item 4: the per-envelope bounds are step 1, before the identity lookup, the
/// signature and any per-recipient work; the refusal names the limit and leaves no trace.
#[test]
fn per_envelope_bounds_refuse_first_and_name_the_limit() {
    let mut w = Node::with_people();
    let at_limit = limits().max_recipients;
    let many = |n: usize| -> Value {
        (0..n)
            .map(|i| json!({"identity": format!("loom://u{i}@example.org"), "role": if i == 0 { "primary" } else { "cc" }}))
            .collect()
    };
    // An unknown sender and an unsigned body: step 1 answers before steps 4 and 5.
    w.unregister(BOB);
    let mut env = msg(1, 1, BOB, ALICE, None);
    env["to"] = many(at_limit + 1);
    let e = w.submit(env, &NONE).unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (ErrorCode::PayloadTooLarge, "to")
    );
    assert!(
        e.rule.contains(&format!("max_recipients = {at_limit}")),
        "{e}"
    );
    assert!(e.rule.contains(&format!("has {}", at_limit + 1)), "{e}");
    // Extension data: a 100,000-element array anywhere is refused by its path.
    let mut ext = msg(2, 2, ALICE, CAROL, None);
    ext["extensions"] = json!({"x": vec![0; 100_000]});
    let e = w.submit(ext, &NONE).unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (ErrorCode::PayloadTooLarge, "extensions.x")
    );
    assert!(e.rule.contains("max_array_len"), "{e}");
    assert!(w.stored.is_empty(), "no refused envelope is stored");
    // At the limit the bounds pass and the envelope is accepted.
    let mut ok = msg(3, 3, ALICE, CAROL, None);
    ok["to"] = many(at_limit);
    let (seed, kid) = seed_of(ALICE);
    sign_envelope(&mut ok, &key(seed), &key_id(kid)).unwrap();
    let d = w.submit(ok, &NONE);
    assert!(d.is_ok(), "{d:?}");
}

#[test]
fn thread_rules_refuse_unknown_threads_outsiders_and_locked_threads() {
    let mut w = Node::with_people();
    let e = w
        .submit(op(1, 1, ALICE, "thread.resolve@v1", json!({})), &NONE)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ThreadNotFound);
    w.submit(msg(2, 1, ALICE, BOB, None), &NONE).unwrap();
    let e = w
        .submit(msg(3, 1, CAROL, ALICE, Some(2)), &NONE)
        .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (ErrorCode::CapabilityDenied, "from.identity")
    );
    let lock = w
        .submit(op(4, 1, ALICE, "thread.lock@v1", json!({})), &NONE)
        .unwrap();
    assert_eq!(lock.events().next().unwrap().kind, "thread.updated");
    let e = w.submit(msg(5, 1, BOB, ALICE, Some(2)), &NONE).unwrap_err();
    assert_eq!(e.code, ErrorCode::ThreadLocked);
    assert!(
        w.submit(msg(5, 1, BOB, ALICE, Some(2)), &LockIgnored)
            .is_ok()
    );
}

#[test]
fn operations_need_the_owner_and_change_the_state() {
    let mut w = Node::with_people();
    w.submit(msg(1, 1, ALICE, BOB, None), &NONE).unwrap();
    let e = w
        .submit(op(2, 1, BOB, "thread.resolve@v1", json!({})), &NONE)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::CapabilityDenied);
    let add = w
        .submit(
            op(
                3,
                1,
                ALICE,
                "thread.add_participant@v1",
                json!({"identity": CAROL}),
            ),
            &NONE,
        )
        .unwrap();
    assert!(
        add.next_state
            .is_active_participant(&Address::parse_wire(CAROL).unwrap())
    );
    assert!(matches!(
        add.effects[0],
        Effect::PutThread {
            state_changed: true,
            ..
        }
    ));
    let e = w
        .submit(op(4, 1, ALICE, "thread.archive@v1", json!({})), &NONE)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::StateTransitionInvalid);
}

#[test]
fn tasks_move_by_the_table_and_only_for_the_roles_that_may() {
    let mut w = Node::with_people();
    let mut create = msg(1, 1, ALICE, BOB, None);
    create["content"]["structured"] =
        json!({"intent": "task.create@v1", "parameters": {"assignee": BOB}});
    let (s, k) = seed_of(ALICE);
    sign_envelope(&mut create, &key(s), &key_id(k)).unwrap();
    let a = w.submit(create, &NONE).unwrap();
    assert!(
        a.effects
            .iter()
            .any(|e| matches!(e, Effect::TaskCreated { .. }))
    );
    let update = |n: u32, from: &str, state: &str| {
        let mut e = msg(n, 1, from, ALICE, Some(1));
        e["content"]["structured"] = json!({"intent": "task.state_update@v1", "parameters": {"task_id": id("env", 1), "state": state}});
        let (s, k) = seed_of(from);
        sign_envelope(&mut e, &key(s), &key_id(k)).unwrap();
        e
    };
    assert!(w.submit(update(2, ALICE, "assigned"), &NONE).is_ok());
    let e = w.submit(update(3, ALICE, "accepted"), &NONE).unwrap_err();
    assert_eq!(
        e.code,
        ErrorCode::CapabilityDenied,
        "only the assignee accepts"
    );
    assert!(w.submit(update(4, BOB, "accepted"), &NONE).is_ok());
    let e = w.submit(update(5, BOB, "created"), &NONE).unwrap_err();
    assert_eq!(e.code, ErrorCode::StateTransitionInvalid);
}

#[test]
fn federated_delivery_binds_the_sender_to_the_delivering_node_and_keeps_its_seq() {
    let mut w = Node::with_people();
    let e = w
        .submit_as(
            msg(1, 1, ALICE, BOB, None),
            Origin::Federated {
                node: "other.test",
                origin_event_seq: Some(7),
            },
            &NONE,
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::CapabilityDenied);
    let a = w
        .submit_as(
            msg(1, 1, ALICE, BOB, None),
            Origin::Federated {
                node: "NODE.test",
                origin_event_seq: Some(7),
            },
            &NONE,
        )
        .unwrap();
    assert_eq!(a.envelope["meta"]["event_seq"], 1);
    assert_eq!(a.envelope["meta"]["origin_event_seq"], 7);
}

proptest! {
    /// Any sequence of replies (to existing, missing or fresh parents, in any of three
    /// threads, by any of three people): every accepted envelope takes its thread's last
    /// `event_seq` + 1, its readers include its sender, and a refused one changes nothing.
    #[test]
    fn event_seq_is_dense_per_thread(steps in proptest::collection::vec((0u32..3, 0usize..3, 0usize..3, 0u32..40), 1..40)) {
        let people = [ALICE, BOB, CAROL];
        let mut w = Node::with_people();
        let mut last: BTreeMap<ThreadId, u64> = BTreeMap::new();
        for (n, (t, from, to, parent)) in steps.into_iter().enumerate() {
            let n = n as u32 + 1;
            let env = msg(n, t, people[from], people[to], (parent < n).then_some(parent));
            let before = (w.stored.len(), w.events.len());
            match w.submit(env, &NONE) {
                Ok(a) => {
                    let prev = last.get(&a.facts.thread).copied().unwrap_or(0);
                    prop_assert_eq!(a.event_seq, prev + 1);
                    last.insert(a.facts.thread, a.event_seq);
                    prop_assert!(a.events().all(|e| e.readers.contains(&a.facts.sender)));
                }
                Err(e) => {
                    prop_assert_eq!(e.code, ErrorCode::CapabilityDenied, "only outsiders are refused here: {}", e);
                    prop_assert_eq!((w.stored.len(), w.events.len()), before);
                }
            }
        }
    }
}

/// alice rotated: `k_sign_alice_2` is active, `k_sign_alice_1` (seed 1, which [`msg`] signs
/// with) is kept as `retired`, retired at `retired_at` (v1.0 §7.4).
struct Rotated {
    retired_at: Option<Timestamp>,
}

impl DelegationResolver for Rotated {
    fn signing_keys(&self, _: &Address) -> Option<Vec<(String, VerifyingKey)>> {
        None
    }
    fn identity_type(&self, _: &Address) -> Option<SenderType> {
        Some(SenderType::Human)
    }
    fn is_revoked(&self, _: &LinkRef<'_>) -> bool {
        false
    }
}

impl Directory for Rotated {
    fn registered_type(&self, _: &Address) -> Option<String> {
        Some("human".into())
    }
    fn active_signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        (identity.to_string() == ALICE && key_id == "k_sign_alice_2")
            .then(|| key(21).verifying_key())
    }
    fn retired_signing_key(
        &self,
        identity: &Address,
        key_id: &str,
    ) -> Option<loom_protocol::federation::RetiredKey> {
        (identity.to_string() == ALICE && key_id == "k_sign_alice_1").then(|| {
            loom_protocol::federation::RetiredKey {
                key_id: key_id.into(),
                key: key(1).verifying_key(),
                retired_at: self.retired_at,
            }
        })
    }
}

#[test]
fn a_retired_key_verifies_delivered_historical_envelopes_only() {
    let now = Timestamp::parse(NOW).unwrap();
    let fed = Origin::Federated {
        node: "node.test",
        origin_event_seq: None,
    };
    let alice = Address::parse_wire(ALICE).unwrap();
    let local = Origin::Local { caller: &alice };
    let at = |s: &str| Some(Timestamp::parse(s).unwrap());
    let run = |dir: &Rotated, env: Value, origin| {
        admit(env, origin, dir, &SpecRules, &limits(), now).map(|_| ())
    };
    // msg() is created at 16:37 and signed with the since-retired k_sign_alice_1.
    let retired_later = Rotated {
        retired_at: at("2026-02-16T16:40:00Z"),
    };
    let no_time = Rotated { retired_at: None };
    let retired_before = Rotated {
        retired_at: at("2026-02-16T16:36:59Z"),
    };
    assert_eq!(
        run(&retired_later, msg(1, 1, ALICE, BOB, None), fed),
        Ok(())
    );
    assert_eq!(run(&no_time, msg(1, 1, ALICE, BOB, None), fed), Ok(()));
    // Created after the retirement: not historical.
    let e = run(&retired_before, msg(1, 1, ALICE, BOB, None), fed).unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (ErrorCode::SignatureInvalid, "from.key_id")
    );
    // A local submission is a new envelope: a retired key never signs one.
    let e = run(&retired_later, msg(1, 1, ALICE, BOB, None), local).unwrap_err();
    assert_eq!(e.field, "from.key_id");
    // A key the document does not list is still unknown.
    let mut other = msg(1, 1, ALICE, BOB, None);
    sign_envelope(&mut other, &key(9), &key_id("alice_9")).unwrap();
    let e = run(&retired_later, other, fed).unwrap_err();
    assert_eq!(e.code, ErrorCode::SignatureInvalid);
    // The retired key does not verify what another key signed under its id.
    let mut forged = msg(1, 1, ALICE, BOB, None);
    sign_envelope(&mut forged, &key(9), &key_id("alice_1")).unwrap();
    assert!(run(&retired_later, forged, fed).is_err());
}

/// The X25519 key of a test identity (its `k_enc_` key).
fn enc_recipient(who: &str) -> Recipient {
    let (seed, name) = seed_of(who);
    Recipient {
        to: who.to_owned(),
        key_id: format!("k_enc_{name}"),
        public: public_key(&[seed + 10; 32]),
    }
}

fn sealed(profile: Profile, epoch: u64, counter: u64, to: &[&str]) -> Value {
    let recipients: Vec<Recipient> = to.iter().map(|w| enc_recipient(w)).collect();
    let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(counter);
    let s = Sealing {
        profile,
        epoch,
        replay_counter: counter,
        kind: AadKind::Payload,
    };
    seal_with_rng(&s, br#"{"human":{"text":"secret"}}"#, &recipients, &mut rng)
        .unwrap()
        .to_value()
}

/// Message `n` of thread `t` with `content` (re-signed), optionally from a device.
fn with_content(
    n: u32,
    t: u32,
    from: &str,
    to: &str,
    content: Value,
    device: Option<&str>,
) -> Value {
    let mut env = msg(n, t, from, to, None);
    env["content"] = content;
    if let Some(d) = device {
        env["from"]["device_id"] = json!(d);
    }
    let (seed, kid) = seed_of(from);
    sign_envelope(&mut env, &key(seed), &key_id(kid)).unwrap();
    env
}

fn epoch_op(n: u32, t: u32, epoch: u64, members: &[&str]) -> Value {
    let content = sealed(Profile::V1, epoch, 0, members);
    op(
        n,
        t,
        ALICE,
        "encryption.epoch@v1",
        json!({"profile": "loom-e2ee-x25519-xchacha20-v1", "epoch": epoch, "wrapped_keys": content["wrapped_keys"]}),
    )
}

#[test]
fn an_e2ee_thread_takes_only_current_epoch_payloads_with_fresh_counters() {
    let mut w = Node::with_people();
    w.submit(msg(1, 1, ALICE, BOB, None), &NONE).unwrap();
    // The epoch operation must wrap the key for every current participant (§10.6).
    let e = w.submit(epoch_op(2, 1, 1, &[ALICE]), &NONE).unwrap_err();
    assert_eq!(e.field, "content.structured.parameters.wrapped_keys");
    w.submit(epoch_op(3, 1, 1, &[ALICE, BOB]), &NONE).unwrap();
    let e = w.submit(msg(4, 1, ALICE, BOB, Some(1)), &NONE).unwrap_err();
    assert_eq!(e.code, ErrorCode::EncryptionRequired);
    let ok = w
        .submit(
            with_content(
                5,
                1,
                ALICE,
                BOB,
                sealed(Profile::V1, 1, 0, &[ALICE, BOB]),
                None,
            ),
            &NONE,
        )
        .unwrap();
    assert!(
        !ok.effects
            .iter()
            .any(|e| matches!(e, Effect::IndexEnvelope { .. })),
        "encrypted content is never indexed (§16.6)"
    );
    assert!(
        matches!(
            ok.effects[0],
            Effect::PutThread {
                state_changed: true,
                ..
            }
        ),
        "the replay state is stored"
    );
    let replayed = sealed(Profile::V1, 1, 0, &[ALICE, BOB]);
    let e = w
        .submit(with_content(6, 1, ALICE, BOB, replayed, None), &NONE)
        .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (ErrorCode::EnvelopeInvalid, "content.replay_counter")
    );
    // Another device of the same sender has counters of its own (§8.2 device_id).
    w.submit(
        with_content(
            7,
            1,
            ALICE,
            BOB,
            sealed(Profile::V1, 1, 0, &[ALICE, BOB]),
            Some("phone"),
        ),
        &NONE,
    )
    .unwrap();
    w.submit(
        with_content(
            8,
            1,
            BOB,
            ALICE,
            sealed(Profile::V1, 1, 0, &[ALICE, BOB]),
            None,
        ),
        &NONE,
    )
    .unwrap();
    for (content, field) in [
        (sealed(Profile::V1, 0, 1, &[ALICE, BOB]), "content.epoch"),
        (sealed(Profile::V1, 2, 1, &[ALICE, BOB]), "content.epoch"),
        (sealed(Profile::V2, 1, 1, &[ALICE, BOB]), "content.profile"),
    ] {
        let e = w
            .submit(with_content(9, 1, ALICE, BOB, content, None), &NONE)
            .unwrap_err();
        assert_eq!(e.field, field);
    }
    // Carol joins: the epoch moves (§10.6) and the old epoch is stale.
    w.submit(
        op(
            10,
            1,
            ALICE,
            "thread.add_participant@v1",
            json!({"identity": CAROL}),
        ),
        &NONE,
    )
    .unwrap();
    let e = w
        .submit(
            with_content(
                11,
                1,
                ALICE,
                BOB,
                sealed(Profile::V1, 1, 1, &[ALICE, BOB]),
                None,
            ),
            &NONE,
        )
        .unwrap_err();
    assert!(e.rule.contains("stale"), "{e:?}");
    let e = w
        .submit(epoch_op(12, 1, 2, &[ALICE, BOB]), &NONE)
        .unwrap_err();
    assert!(e.rule.contains(CAROL), "{e:?}");
    w.submit(epoch_op(13, 1, 2, &[ALICE, BOB, CAROL]), &NONE)
        .unwrap();
    w.submit(
        with_content(
            14,
            1,
            ALICE,
            BOB,
            sealed(Profile::V1, 2, 0, &[ALICE, BOB, CAROL]),
            None,
        ),
        &NONE,
    )
    .unwrap();
    // Bridge identities cannot join an E2EE thread (§21.4).
    let e = w
        .submit(
            op(
                15,
                1,
                ALICE,
                "thread.add_participant@v1",
                json!({"identity": "bridge://m@mail.test"}),
            ),
            &NONE,
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::CapabilityDenied);
}

#[test]
fn replay_counters_follow_the_configured_mode() {
    for (mode, lower_taken) in [
        (ReplayMode::Strict, false),
        (ReplayMode::SlidingWindow, true),
    ] {
        let mut w = Node::with_people();
        w.replay_mode = mode;
        w.submit(msg(1, 1, ALICE, BOB, None), &NONE).unwrap();
        w.submit(epoch_op(2, 1, 0, &[ALICE, BOB]), &NONE).unwrap();
        let send = |w: &mut Node, n: u32, counter: u64| {
            w.submit(
                with_content(
                    n,
                    1,
                    ALICE,
                    BOB,
                    sealed(Profile::V1, 0, counter, &[ALICE, BOB]),
                    None,
                ),
                &NONE,
            )
        };
        send(&mut w, 3, 5).unwrap();
        assert_eq!(send(&mut w, 4, 3).is_ok(), lower_taken, "{mode:?}");
        assert!(send(&mut w, 5, 5).is_err(), "{mode:?}: a replayed counter");
        if lower_taken {
            assert!(send(&mut w, 6, 3).is_err(), "the window remembers 3");
        }
    }
}

#[test]
fn malformed_encrypted_content_is_refused_naming_the_member_even_in_a_plain_thread() {
    let mut w = Node::with_people();
    let mut content = sealed(Profile::V1, 0, 0, &[ALICE, BOB]);
    // A plain thread takes a well-formed encrypted payload (the sender's choice)…
    let ok = w
        .submit(with_content(1, 1, ALICE, BOB, content.clone(), None), &NONE)
        .unwrap();
    assert!(
        !ok.effects
            .iter()
            .any(|e| matches!(e, Effect::IndexEnvelope { .. }))
    );
    // …but not one whose commitment does not match its profile and epoch.
    content["epoch"] = json!(3);
    let e = w
        .submit(with_content(2, 2, ALICE, BOB, content, None), &NONE)
        .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (ErrorCode::EnvelopeInvalid, "content.profile_commitment")
    );
}
