//! Replicating threads across nodes (v1.1 §11.5 operation audience, §11.6 event sequencing):
//! which identities — and therefore which nodes — an envelope or operation goes to, and how
//! `meta.event_seq` / `meta.origin_event_seq` are written on each side.
//!
//! §11.6: every node assigns its own `meta.event_seq`, monotonic per thread; a received
//! envelope never keeps the sender's. `meta.origin_event_seq` "SHOULD be set on envelopes
//! created locally and preserved in federation": the creating node sets it to its own
//! `event_seq`; a receiving node keeps the value it received. `meta` is outside the signed
//! form (v1.1 §7.3), so a receiving node keeps nothing else of the sender's `meta`: its
//! other members are the sender's local bookkeeping, unauthenticated.

use crate::address::Address;
use crate::error::ProtocolError;
use crate::federation::node_name::same_node;
use crate::thread::{ThreadOp, ThreadState};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// `meta` for an envelope created on this node: its `event_seq` and the same value as
/// `origin_event_seq` (§11.6). Other members of `meta` are kept.
pub fn stamp_local_meta(meta: &mut Map<String, Value>, event_seq: u64) {
    meta.insert("event_seq".into(), event_seq.into());
    meta.insert("origin_event_seq".into(), event_seq.into());
}

/// `meta` for an envelope received over federation: this node's `event_seq` and the
/// received `origin_event_seq`, if any (§11.6 "preserved in federation"). A received
/// `origin_event_seq` that is not a non-negative integer is `ENVELOPE_INVALID`.
pub fn stamp_federated_meta(
    received_meta: Option<&Value>,
    event_seq: u64,
) -> Result<Map<String, Value>, ProtocolError> {
    let mut meta = Map::new();
    meta.insert("event_seq".into(), event_seq.into());
    match received_meta.and_then(|m| m.get("origin_event_seq")) {
        None | Some(Value::Null) => {}
        Some(v) => {
            let n = v.as_u64().ok_or_else(|| {
                ProtocolError::invalid(
                    "meta.origin_event_seq",
                    format!("origin_event_seq must be a non-negative integer, not {v}"),
                    "v1.1 §11.6",
                )
            })?;
            meta.insert("origin_event_seq".into(), n.into());
        }
    }
    Ok(meta)
}

/// Who a thread operation is delivered to (§11.5): every current participant, observers
/// included; for `thread.add_participant@v1` also the added identity (a participant once the
/// operation applies); for `thread.remove_participant@v1` also the removed identity ("SHOULD
/// still be delivered … so they can update local state") unless `policy_forbids_notifying_removed`.
pub fn op_audience(
    thread: &ThreadState,
    op: &ThreadOp,
    policy_forbids_notifying_removed: bool,
) -> BTreeSet<Address> {
    let mut out: BTreeSet<Address> = thread
        .participants
        .iter()
        .filter(|(_, p)| p.left_at.is_none())
        .map(|(a, _)| a.clone())
        .collect();
    let named = op
        .parameters
        .get("identity")
        .and_then(Value::as_str)
        .and_then(|s| Address::parse(s).ok());
    match (op.intent.as_str(), named) {
        ("thread.add_participant@v1", Some(who)) => {
            out.insert(who);
        }
        ("thread.remove_participant@v1", Some(who)) => {
            if policy_forbids_notifying_removed {
                out.remove(&who);
            } else {
                out.insert(who);
            }
        }
        _ => {}
    }
    out
}

/// The remote nodes to deliver to and the recipients on each: every `loom://` recipient
/// whose domain is not `local_node`, grouped by domain (sorted, so the outbox order is
/// deterministic). Bridged recipients go to the email bridge, not to a node.
pub fn remote_destinations<'a>(
    recipients: impl IntoIterator<Item = &'a Address>,
    local_node: &str,
) -> BTreeMap<String, BTreeSet<Address>> {
    let mut out: BTreeMap<String, BTreeSet<Address>> = BTreeMap::new();
    for r in recipients {
        if r.is_bridge() || same_node(r.domain(), local_node) {
            continue;
        }
        out.entry(r.domain().to_owned())
            .or_default()
            .insert(r.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::{EnvelopeId, ThreadId};
    use crate::time::Timestamp;
    use serde_json::json;

    fn a(s: &str) -> Address {
        Address::parse(s).unwrap()
    }

    fn thread() -> ThreadState {
        let mut t = ThreadState::new(
            ThreadId::parse("thr_01JN0000000000000000000000").unwrap(),
            a("loom://alice@a.test"),
            &[a("loom://bob@b.test"), a("loom://carol@c.test")],
            Timestamp::from_unix_ms(0),
        );
        if let Some(p) = t.participants.get_mut(&a("loom://carol@c.test")) {
            p.left_at = Some(Timestamp::from_unix_ms(1));
        }
        t
    }

    fn op(intent: &str, who: &str) -> ThreadOp {
        ThreadOp {
            envelope_id: EnvelopeId::parse("env_01JN0000000000000000000001").unwrap(),
            actor: a("loom://alice@a.test"),
            intent: intent.into(),
            parameters: json!({"identity": who}).as_object().unwrap().clone(),
            preconditions: None,
            created_at: Timestamp::from_unix_ms(2),
        }
    }

    #[test]
    fn audiences() {
        let t = thread();
        let names = |s: BTreeSet<Address>| s.iter().map(Address::to_string).collect::<Vec<_>>();
        assert_eq!(
            names(op_audience(&t, &op("thread.update@v1", "x"), false)),
            vec!["loom://alice@a.test", "loom://bob@b.test"]
        );
        assert_eq!(
            names(op_audience(
                &t,
                &op("thread.add_participant@v1", "loom://dan@d.test"),
                false
            )),
            vec![
                "loom://alice@a.test",
                "loom://bob@b.test",
                "loom://dan@d.test"
            ]
        );
        assert_eq!(
            names(op_audience(
                &t,
                &op("thread.remove_participant@v1", "loom://bob@b.test"),
                false
            )),
            vec!["loom://alice@a.test", "loom://bob@b.test"]
        );
        assert_eq!(
            names(op_audience(
                &t,
                &op("thread.remove_participant@v1", "loom://bob@b.test"),
                true
            )),
            vec!["loom://alice@a.test"]
        );
        let dest = remote_destinations(
            op_audience(&t, &op("thread.update@v1", "x"), false).iter(),
            "a.test",
        );
        assert_eq!(dest.keys().collect::<Vec<_>>(), vec!["b.test"]);
        let with_bridge = [
            a("bridge://x@mail.test"),
            a("loom://e@e.test"),
            a("loom://f@e.test"),
        ];
        let dest = remote_destinations(with_bridge.iter(), "a.test");
        assert_eq!(dest.len(), 1);
        assert_eq!(dest["e.test"].len(), 2);
    }

    #[test]
    fn event_seq_stamping() {
        let mut m = Map::new();
        m.insert("received_at".into(), "x".into());
        stamp_local_meta(&mut m, 7);
        assert_eq!(
            Value::Object(m.clone()),
            json!({"event_seq": 7, "origin_event_seq": 7, "received_at": "x"})
        );
        let fed = stamp_federated_meta(
            Some(&json!({"event_seq": 7, "origin_event_seq": 7, "quarantined": false})),
            42,
        )
        .unwrap();
        assert_eq!(
            Value::Object(fed),
            json!({"event_seq": 42, "origin_event_seq": 7})
        );
        assert_eq!(
            Value::Object(stamp_federated_meta(None, 1).unwrap()),
            json!({"event_seq": 1})
        );
        let e = stamp_federated_meta(Some(&json!({"origin_event_seq": -1})), 1).unwrap_err();
        assert_eq!(e.field, "meta.origin_event_seq");
    }
}
