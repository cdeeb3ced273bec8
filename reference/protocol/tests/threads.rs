//! Thread DAG (v1.1 §10.2), rendering order (§10.3), state machine (§10.4), operations
//! (§11.2–§11.4, §11.7) and size limits (§10.7).

mod common;

use common::*;
use loom_protocol::id::{EnvelopeId, ThreadId};
use loom_protocol::thread::{
    ThreadDag, ThreadLimits, ThreadOp, ThreadState, ThreadStatus, rendering_order, state_transition,
};
use loom_protocol::{Address, ErrorCode, Timestamp};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use ulid::Ulid;

fn eid(n: u128) -> EnvelopeId {
    EnvelopeId::from_ulid(Ulid(n))
}

fn t(ms: i64) -> Timestamp {
    Timestamp::from_unix_ms(1_771_000_000_000 + ms)
}

const NO_LIMITS: ThreadLimits = ThreadLimits {
    max_envelopes_per_thread: 0,
    max_pending_parents: 0,
};

#[test]
fn out_of_order_parents_are_pending_then_resolved() {
    let mut dag = ThreadDag::new();
    let child = dag
        .insert(eid(2), Some(eid(1)), t(2), &ThreadLimits::default())
        .unwrap();
    assert!(child.pending_parent);
    assert_eq!(dag.pending_parent_count(), 1);
    let root = dag
        .insert(eid(1), None, t(1), &ThreadLimits::default())
        .unwrap();
    assert!(!root.pending_parent);
    assert_eq!(root.resolved_children, vec![eid(2)]);
    assert_eq!(dag.pending_parent_count(), 0);
    assert_eq!(dag.depth(&eid(2)), 1);
}

#[test]
fn duplicates_self_parents_and_cycles_are_rejected_without_change() {
    let mut dag = ThreadDag::new();
    dag.insert(eid(1), None, t(1), &NO_LIMITS).unwrap();
    let e = dag.insert(eid(1), None, t(1), &NO_LIMITS).unwrap_err();
    assert_eq!(e.code, ErrorCode::EnvelopeDuplicate);
    let e = dag
        .insert(eid(5), Some(eid(5)), t(1), &NO_LIMITS)
        .unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (ErrorCode::EnvelopeInvalid, "parent_id")
    );
    // 3 arrives pointing at missing 4; then 4 arrives pointing at 3: a cycle.
    dag.insert(eid(3), Some(eid(4)), t(3), &NO_LIMITS).unwrap();
    let before = dag.len();
    let e = dag
        .insert(eid(4), Some(eid(3)), t(4), &NO_LIMITS)
        .unwrap_err();
    assert_eq!(
        (e.code, e.rule.contains("cycle")),
        (ErrorCode::EnvelopeInvalid, true)
    );
    assert_eq!(dag.len(), before);
    assert!(!dag.contains(&eid(4)));
    // A longer cycle: 6 → missing 8, 7 → 6, then 8 → 7.
    dag.insert(eid(6), Some(eid(8)), t(6), &NO_LIMITS).unwrap();
    dag.insert(eid(7), Some(eid(6)), t(7), &NO_LIMITS).unwrap();
    assert!(dag.insert(eid(8), Some(eid(7)), t(8), &NO_LIMITS).is_err());
}

#[test]
fn size_limits_reject_and_zero_disables() {
    let limits = ThreadLimits {
        max_envelopes_per_thread: 3,
        max_pending_parents: 1,
    };
    let mut dag = ThreadDag::new();
    dag.insert(eid(1), None, t(1), &limits).unwrap();
    dag.insert(eid(2), Some(eid(100)), t(2), &limits).unwrap();
    let e = dag
        .insert(eid(3), Some(eid(101)), t(3), &limits)
        .unwrap_err();
    assert_eq!(
        (e.code, e.section),
        (ErrorCode::EnvelopeInvalid, "v1.1 §10.7")
    );
    dag.insert(eid(3), Some(eid(1)), t(3), &limits).unwrap();
    let e = dag.insert(eid(4), Some(eid(1)), t(4), &limits).unwrap_err();
    assert_eq!(
        (e.code, e.section),
        (ErrorCode::EnvelopeInvalid, "v1.1 §10.7")
    );
    let mut big = ThreadDag::new();
    for i in 0..50 {
        big.insert(eid(1000 + i), Some(eid(5000 + i)), t(i as i64), &NO_LIMITS)
            .unwrap();
    }
    assert_eq!(big.pending_parent_count(), 50);
    assert_eq!(
        ThreadLimits::default(),
        ThreadLimits {
            max_envelopes_per_thread: 10_000,
            max_pending_parents: 500
        }
    );
}

#[test]
fn rendering_order_is_topological_then_created_at_then_id() {
    let mut dag = ThreadDag::new();
    // root(1) at t0; replies 3 (t5) and 2 (t5, smaller id) and 4 (t1); 5 replies to 4 at t2;
    // 6 is an orphan at t3; 7 replies to 3 but claims an earlier time than its parent.
    dag.insert(eid(1), None, t(0), &NO_LIMITS).unwrap();
    dag.insert(eid(3), Some(eid(1)), t(5), &NO_LIMITS).unwrap();
    dag.insert(eid(2), Some(eid(1)), t(5), &NO_LIMITS).unwrap();
    dag.insert(eid(4), Some(eid(1)), t(1), &NO_LIMITS).unwrap();
    dag.insert(eid(5), Some(eid(4)), t(2), &NO_LIMITS).unwrap();
    dag.insert(eid(6), Some(eid(99)), t(3), &NO_LIMITS).unwrap();
    dag.insert(eid(7), Some(eid(3)), t(-1), &NO_LIMITS).unwrap();
    assert_eq!(
        rendering_order(&dag),
        vec![eid(1), eid(4), eid(5), eid(6), eid(2), eid(3), eid(7)]
    );
}

proptest! {
    /// For any insertion order of a random tree, the rendering order is the same, contains
    /// every envelope once and never puts a child before its parent.
    #[test]
    fn rendering_order_is_stable_and_topological(
        parents in prop::collection::vec(any::<prop::sample::Index>(), 1..40),
        times in prop::collection::vec(0i64..5, 40),
        shuffle in any::<u64>(),
    ) {
        let n = parents.len();
        let spec: Vec<(EnvelopeId, Option<EnvelopeId>, Timestamp)> = (0..n)
            .map(|i| (eid(i as u128 + 1), (i > 0).then(|| eid(parents[i].index(i) as u128 + 1)), t(times[i])))
            .collect();
        let mut a = ThreadDag::new();
        for (id, p, at) in &spec {
            a.insert(*id, *p, *at, &NO_LIMITS).unwrap();
        }
        let mut order: Vec<usize> = (0..n).collect();
        let mut s = shuffle;
        for i in (1..n).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            order.swap(i, (s >> 33) as usize % (i + 1));
        }
        let mut b = ThreadDag::new();
        for &i in &order {
            let (id, p, at) = spec[i];
            b.insert(id, p, at, &NO_LIMITS).unwrap();
        }
        let ra = rendering_order(&a);
        prop_assert_eq!(&ra, &rendering_order(&b));
        prop_assert_eq!(ra.len(), n);
        let pos = |id: &EnvelopeId| ra.iter().position(|x| x == id).unwrap();
        for (id, p, _) in &spec {
            if let Some(p) = p {
                prop_assert!(pos(p) < pos(id));
            }
        }
    }
}

#[test]
fn every_state_and_operation_pair_follows_section_10_4() {
    use ThreadStatus::*;
    let allowed = [
        (Active, "thread.resolve@v1", Resolved),
        (Resolved, "thread.archive@v1", Archived),
        (Active, "thread.lock@v1", Locked),
        (Resolved, "thread.lock@v1", Locked),
        (Resolved, "thread.reopen@v1", Active),
        (Locked, "thread.reopen@v1", Active),
    ];
    let mut count = 0;
    for from in ThreadStatus::ALL {
        for op in [
            "thread.resolve@v1",
            "thread.archive@v1",
            "thread.lock@v1",
            "thread.reopen@v1",
        ] {
            let got = state_transition(from, op).expect("state op");
            match allowed.iter().find(|(f, o, _)| *f == from && *o == op) {
                Some((_, _, to)) => {
                    assert_eq!(got.unwrap(), *to);
                    count += 1;
                }
                None => assert_eq!(
                    got.unwrap_err().code,
                    ErrorCode::StateTransitionInvalid,
                    "{from:?} {op}"
                ),
            }
        }
    }
    assert_eq!(count, 6);
    assert!(state_transition(Active, "thread.update@v1").is_none());
}

fn addr(s: &str) -> Address {
    Address::parse(s).unwrap()
}

fn thread() -> ThreadState {
    ThreadState::new(
        ThreadId::parse(THR_ID).unwrap(),
        addr(ALICE),
        &[addr(BOB)],
        t(0),
    )
}

fn op(intent: &str, params: Value) -> ThreadOp {
    let parameters: Map<String, Value> = params.as_object().cloned().unwrap_or_default();
    let preconditions = parameters.get("preconditions").cloned();
    ThreadOp {
        envelope_id: eid(1),
        actor: addr(ALICE),
        intent: intent.into(),
        parameters,
        preconditions,
        created_at: t(10),
    }
}

#[test]
fn operations_change_membership_metadata_and_links() {
    let mut th = thread();
    assert!(th.is_owner(&addr(ALICE)));
    th.apply(
        1,
        &op(
            "thread.add_participant@v1",
            json!({"identity": CAROL, "role": "observer"}),
        ),
    )
    .unwrap();
    assert!(th.is_active_participant(&addr(CAROL)));
    th.apply(
        2,
        &op("thread.remove_participant@v1", json!({"identity": CAROL})),
    )
    .unwrap();
    assert!(!th.is_active_participant(&addr(CAROL)));
    let e = th
        .apply(
            3,
            &op("thread.remove_participant@v1", json!({"identity": CAROL})),
        )
        .unwrap_err();
    assert_eq!(e.field, "content.structured.parameters.identity");
    let e = th
        .apply(
            3,
            &op("thread.remove_participant@v1", json!({"identity": ALICE})),
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::StateTransitionInvalid);
    th.apply(
        3,
        &op(
            "thread.update@v1",
            json!({"subject": "Q1 Invoice", "labels": ["finance", "q1"]}),
        ),
    )
    .unwrap();
    assert_eq!(th.subject.as_deref(), Some("Q1 Invoice"));
    assert_eq!(th.labels.len(), 2);
    th.apply(4, &op("thread.delegate@v1", json!({"identity": BOB})))
        .unwrap();
    assert!(th.is_owner(&addr(BOB)) && !th.is_owner(&addr(ALICE)));
    let fork = "thr_01JMKB7W8P1QSGF2JM3SXYZR01";
    th.apply(
        5,
        &op(
            "thread.fork@v1",
            json!({"fork_thread_id": fork, "forked_from": ENV_ID}),
        ),
    )
    .unwrap();
    assert_eq!(th.forks.len(), 1);
    th.apply(6, &op("thread.merge@v1", json!({"fork_thread_id": fork})))
        .unwrap();
    assert_eq!(th.forks[0].state, ThreadStatus::Merged);
    assert!(
        th.linked_threads
            .iter()
            .any(|l| l.relation == "merged_from")
    );
    assert_eq!(
        th.apply(7, &op("thread.merge@v1", json!({"fork_thread_id": fork})))
            .unwrap_err()
            .code,
        ErrorCode::StateTransitionInvalid
    );
    th.apply(
        7,
        &op(
            "thread.link@v1",
            json!({"thread_id": fork, "relation": "blocks"}),
        ),
    )
    .unwrap();
    assert!(
        th.apply(
            8,
            &op(
                "thread.link@v1",
                json!({"thread_id": fork, "relation": "friends"})
            )
        )
        .is_err()
    );
    th.apply(8, &op("capability.revoked@v1", json!({})))
        .unwrap();
    assert_eq!(th.cap_epoch, 1);
    let e = th
        .apply(9, &op("thread.teleport@v1", json!({})))
        .unwrap_err();
    assert_eq!(
        (e.code, e.section),
        (ErrorCode::EnvelopeInvalid, "v1.1 §11.2")
    );
    assert_eq!(th.last_event_seq, 8, "rejected operations change nothing");
}

#[test]
fn locked_threads_accept_only_operations_and_only_reopen_changes_them() {
    let mut th = thread();
    th.apply(1, &op("thread.lock@v1", json!({}))).unwrap();
    assert_eq!(
        th.check_accepts_envelope("message").unwrap_err().code,
        ErrorCode::ThreadLocked
    );
    assert!(th.check_accepts_envelope("thread_op").is_ok());
    let e = th
        .apply(
            2,
            &op("thread.add_participant@v1", json!({"identity": CAROL})),
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ThreadLocked);
    th.apply(2, &op("thread.reopen@v1", json!({}))).unwrap();
    assert_eq!(th.state, ThreadStatus::Active);
}

/// `encryption.epoch@v1` parameters wrapping a key for `members` (v1.1 §11.8).
fn epoch_params(epoch: u64, members: &[&str]) -> Value {
    use loom_protocol::e2ee::crypto::{Sealing, public_key};
    use loom_protocol::e2ee::{AadKind, Profile, Recipient, seal_with_rng};
    let recipients: Vec<Recipient> = members
        .iter()
        .enumerate()
        .map(|(i, m)| Recipient {
            to: (*m).to_owned(),
            key_id: format!("k_enc_member_{i}"),
            public: public_key(&[i as u8 + 1; 32]),
        })
        .collect();
    let s = Sealing {
        profile: Profile::V1,
        epoch,
        replay_counter: 0,
        kind: AadKind::Payload,
    };
    let mut rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(epoch);
    let c = seal_with_rng(&s, b"epoch secret", &recipients, &mut rng).unwrap();
    json!({"profile": "loom-e2ee-1", "epoch": epoch, "wrapped_keys": c.to_value()["wrapped_keys"]})
}

#[test]
fn encrypted_threads_rekey_on_membership_change() {
    let mut th = thread();
    th.apply(
        1,
        &op("encryption.epoch@v1", epoch_params(1, &[ALICE, BOB])),
    )
    .unwrap();
    th.apply(
        2,
        &op("thread.add_participant@v1", json!({"identity": CAROL})),
    )
    .unwrap();
    assert_eq!(
        th.key_epoch, 2,
        "membership change moves the key epoch (§10.6)"
    );
    // The encryption.epoch that distributes the new epoch's secret is accepted...
    th.apply(
        3,
        &op("encryption.epoch@v1", epoch_params(2, &[ALICE, BOB, CAROL])),
    )
    .unwrap();
    // ...but the epoch never goes back.
    let e = th
        .apply(
            4,
            &op("encryption.epoch@v1", epoch_params(1, &[ALICE, BOB, CAROL])),
        )
        .unwrap_err();
    assert_eq!(e.field, "content.structured.parameters.epoch");
    // Ownership delegated to a newcomer is a membership change too.
    th.apply(
        4,
        &op(
            "thread.delegate@v1",
            json!({"identity": "loom://dave@node.test"}),
        ),
    )
    .unwrap();
    assert_eq!(th.key_epoch, 3);
    // Re-adding a current member is not.
    th.apply(
        5,
        &op("thread.add_participant@v1", json!({"identity": CAROL})),
    )
    .unwrap();
    assert_eq!(th.key_epoch, 3);
    // Revocations and key distribution are still recorded on a locked thread.
    th.apply(6, &op("thread.lock@v1", json!({}))).unwrap();
    th.apply(7, &op("encryption.rotate@v1", json!({}))).unwrap();
    th.apply(8, &op("delegation.revoked@v1", json!({})))
        .unwrap();
    assert_eq!(th.key_epoch, 4);
}

#[test]
fn re_adding_the_owner_does_not_demote_them() {
    let mut th = thread();
    th.apply(
        1,
        &op(
            "thread.add_participant@v1",
            json!({"identity": ALICE, "role": "observer"}),
        ),
    )
    .unwrap();
    assert!(th.is_owner(&addr(ALICE)));
    assert_eq!(th.participants[&addr(ALICE)].joined_at, t(0));
    th.apply(
        2,
        &op(
            "thread.add_participant@v1",
            json!({"identity": BOB, "role": "observer"}),
        ),
    )
    .unwrap();
    assert_eq!(
        th.participants[&addr(BOB)].role,
        loom_protocol::thread::ParticipantRole::Observer
    );
}

#[test]
fn preconditions_and_conflict_resolution_by_event_order() {
    let mut th = thread();
    let resolve_if_active = op(
        "thread.resolve@v1",
        json!({"preconditions": {"thread_state_in": ["active"]}}),
    );
    let lock_if_active = op(
        "thread.lock@v1",
        json!({"preconditions": {"thread_state_in": ["active"], "cap_epoch": 0}}),
    );
    // Two concurrent operations, both conditioned on `active`: event order decides, the
    // second one's precondition is unmet and it is rejected.
    let outcomes = th.replay([(2, &lock_if_active), (1, &resolve_if_active)]);
    assert!(outcomes[0].1.is_ok());
    let e = outcomes[1].1.as_ref().unwrap_err();
    assert_eq!(
        (e.code, e.section),
        (ErrorCode::StateTransitionInvalid, "v1.1 §11.3")
    );
    assert_eq!(th.state, ThreadStatus::Resolved);
    // Without preconditions, the last valid operation wins by event order, not by clock.
    let mut th = thread();
    let mut early = op("thread.update@v1", json!({"subject": "late clock"}));
    early.created_at = t(1000);
    let mut late = op("thread.update@v1", json!({"subject": "early clock"}));
    late.created_at = t(1);
    th.replay([(2, &late), (1, &early)]);
    assert_eq!(th.subject.as_deref(), Some("early clock"));
    // cap_epoch precondition.
    let mut th = thread();
    let e = th
        .apply(
            1,
            &op(
                "thread.resolve@v1",
                json!({"preconditions": {"cap_epoch": 3}}),
            ),
        )
        .unwrap_err();
    assert_eq!(e.field, "content.structured.preconditions.cap_epoch");
    // Event sequence must increase.
    th.apply(5, &op("thread.resolve@v1", json!({}))).unwrap();
    assert!(th.apply(5, &op("thread.reopen@v1", json!({}))).is_err());
}

#[test]
fn thread_op_is_read_from_an_envelope() {
    let mut env = message();
    env["type"] = json!("thread_op");
    env["content"] = json!({"structured": {"intent": "thread.resolve@v1", "parameters": {}, "preconditions": {"thread_state_in": ["active"]}}});
    let op = ThreadOp::from_envelope(&env).unwrap();
    assert_eq!(op.intent, "thread.resolve@v1");
    assert!(op.preconditions.is_some());
    env["content"] = json!({"human": {"text": "x"}});
    assert_eq!(
        ThreadOp::from_envelope(&env).unwrap_err().field,
        "content.structured"
    );
}
