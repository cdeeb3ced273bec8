//! Envelope acceptance (v1.1 §16.1, §15.4) as pure functions, shaped like quinn-proto's
//! `Endpoint::handle(now, …) -> events`: given what the node knows (a read-only view) and
//! an envelope, decide — and return the decision as data for the node to apply.
//!
//! Local submission and federated delivery (an [`Origin`]) run the same steps; a node runs
//! [`admit`] where no lock is held (it needs only identities and keys, and does the
//! Ed25519 work) and [`decide`] in its single writer, in the order envelopes commit (it needs
//! thread state and assigns `meta.event_seq`). This is the one place the order of the
//! acceptance rules is written:
//!
//! [`admit`]:
//! 1. the per-envelope bounds of [`crate::bounds`] (fan-out: recipients, their domains,
//!    audience, attachments, references; JSON depth, array length, value count), then the
//!    size of the RFC 8785 form without `meta`, each ≤ the node's limit (§24.2
//!    `PAYLOAD_TOO_LARGE`) — before any per-recipient or per-element work;
//! 2. structure (§8.1–§8.4, §9.2, §6.1) and the bcc-copy form (§8.3, §20.6) → typed [`Facts`];
//! 3. origin: a local sender is the authenticated identity (§16.1); a federated sender's
//!    domain is the delivering node's (§15.4); a bridged sender is a `bridge://` identity
//!    (§21.2);
//! 4. the sender is known with the same `from.type` (§6.3, §8.1; `IDENTITY_NOT_FOUND`);
//! 5. the signature verifies with the sender's active `from.key_id` (§7.3);
//! 6. agents: the delegation chain (§13.3, §13.5).
//!
//! [`decide`]:
//! 7. duplicate id (§8.4 `ENVELOPE_DUPLICATE`);
//! 8. the thread exists, or the envelope bootstraps it (§10.5); a `thread_op` never does
//!    (`THREAD_NOT_FOUND`);
//! 9. a non-participant needs a `reply` capability (§10.5, §12.4);
//! 10. a locked thread takes only operations (§10.4 `THREAD_LOCKED`);
//! 11. an E2EE thread takes only encrypted payloads (§10.6 `ENCRYPTION_REQUIRED`);
//! 12. DAG: no cycle, §10.7 limits; a missing parent is pending, never refused (§10.2);
//! 13. `thread_op`: the owner, or a capability for the operation's grant (§12.4, single-use
//!     tokens spent §12.5), then the §10.4/§11 reducer and its side effects (revocations
//!     §12.3/§13.4, forks and merges §11.4);
//! 14. tasks: the §18.3 transition table and who may trigger it (v1.0 §17.3);
//! 15. workflows: a `workflow` envelope's definition (§19), an update's transition and
//!     sender checked against the run (§19.2), runs held in quarantined threads (§18.5);
//! 16. `meta.event_seq` = the thread's last + 1 (§11.6), `meta` filled in;
//! 17. readers (§8.3, §11.5), the envelope row, search rows (§16.6), the events (§17.3:
//!     `envelope.new` or `thread.updated`, and `participant.*`, `thread.fork`,
//!     `thread.merged`, `receipt.*` where they apply) and the audit entry (§25.1), as
//!     [`Effect`]s (task and workflow rows after their thread's row).
//!
//! Each rule a conformance self-test may break is a step of [`Rules`] with the
//! specification as its default ([`SpecRules`]); the steps run in this order and the core
//! reads no flags. [`Rules::accepted`] sees the finished decision last.

mod effects;
mod facts;
mod rules;
mod view;

pub use effects::{Acceptance, AuditDraft, Effect, EventDraft};
pub use facts::{Facts, Structured};
pub use rules::{Rules, SpecRules};
pub use view::{AcceptView, Directory, Origin, TaskRecord, ThreadRuntime};

use crate::address::Address;
use crate::capability::{
    CapabilityRequest, CapabilityResolver, Grant, PopProof, authorize_capability, grant_for_intent,
};
use crate::clock::FixedClock;
use crate::error::{ErrorCode, ProtocolError};
use crate::id::{CapabilityId, ThreadId};
use crate::jcs::{to_canonical_bytes_without, to_canonical_bytes_without_and};
use crate::task::{TaskRole, TaskState};
use crate::thread::{LinkedThread, ThreadDag, ThreadLimits, ThreadOp, ThreadState, ThreadStatus};
use crate::time::Timestamp;
use ed25519_dalek::VerifyingKey;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// An envelope that passed [`admit`].
#[derive(Debug, Clone, PartialEq)]
pub struct Admitted {
    /// The envelope as it will be stored (before `meta`).
    pub envelope: Value,
    /// Its facts.
    pub facts: Facts,
    /// The sender's registered identity type.
    pub registered_type: String,
    /// `JCS(envelope − meta)`: the size the limit judged and the bytes `body_sha256` hashes.
    pub canonical: Vec<u8>,
}

pub use crate::bounds::EnvelopeLimits;

fn not_found(code: ErrorCode, field: &str, what: impl std::fmt::Display) -> ProtocolError {
    ProtocolError::new(code, field, format!("{what} does not exist"), "v1.1 §24.2")
}

/// Steps 1–6: everything that needs no thread state. `now` judges delegation expiry.
pub fn admit(
    mut envelope: Value,
    origin: Origin<'_>,
    directory: &dyn Directory,
    rules: &dyn Rules,
    limits: &EnvelopeLimits,
    now: Timestamp,
) -> Result<Admitted, ProtocolError> {
    crate::bounds::check(&envelope, limits)?;
    // The stored form (the size limit and `body_sha256`) and the signed form, in one pass.
    let (canonical, signed_form) =
        to_canonical_bytes_without_and(&envelope, &["meta"], "signature").unwrap_or_default();
    rules.check_size(canonical.len(), limits.max_envelope_bytes)?;
    let facts = rules.structure(&envelope)?;
    match origin {
        Origin::Local { caller } => rules.check_local_sender(&facts, caller)?,
        Origin::Federated { node, .. } => rules.check_delivering_node(&facts, node)?,
        Origin::Bridge { .. } => rules.check_bridged_sender(&facts)?,
    }
    let registered = directory
        .registered_type(&facts.sender)
        .ok_or_else(|| not_found(ErrorCode::IdentityNotFound, "from.identity", &facts.sender))?;
    rules.check_sender_type(&facts, &registered)?;
    let key = directory
        .active_signing_key(&facts.sender, &facts.key_id)
        .or_else(|| historical_key(directory, origin, &facts));
    rules.check_signature(&envelope, &signed_form, &facts, key)?;
    if registered == "agent" {
        rules.check_delegation(&envelope, directory, now)?;
    }
    let canonical = if rules.stored_form(&mut envelope) {
        to_canonical_bytes_without(&envelope, &["meta"]).unwrap_or_default()
    } else {
        canonical
    };
    Ok(Admitted {
        envelope,
        facts,
        registered_type: registered,
        canonical,
    })
}

/// Step 5 for an envelope another node delivered: the sender's `retired` key `from.key_id`,
/// when v1.0 §7.4 lets it verify this envelope — a historical one, created before the key
/// was retired ([`crate::federation::RetiredKey::verifies_envelope_created_at`]), which
/// store-and-forward (§15.5, §15.6) can deliver after the sender rotated. A local submission
/// is a new envelope: only active keys sign those.
fn historical_key(
    directory: &dyn Directory,
    origin: Origin<'_>,
    facts: &Facts,
) -> Option<VerifyingKey> {
    match origin {
        Origin::Local { .. } | Origin::Bridge { .. } => None,
        Origin::Federated { .. } => directory
            .retired_signing_key(&facts.sender, &facts.key_id)
            .filter(|k| k.verifies_envelope_created_at(facts.created_at))
            .map(|k| k.key),
    }
}

/// The node's settings that acceptance reads.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    /// The current time (receipt time, token expiry).
    pub now: Timestamp,
    /// `meta.node_id`: the node's domain.
    pub node_id: &'a str,
    /// §10.7 limits.
    pub limits: ThreadLimits,
    /// How replay counters of encrypted payloads are judged (§23.1).
    pub replay_mode: crate::e2ee::ReplayMode,
    /// The steps of acceptance ([`SpecRules`] on a real node).
    pub rules: &'a dyn Rules,
}

impl std::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("now", &self.now)
            .field("node_id", &self.node_id)
            .field("limits", &self.limits)
            .field("replay_mode", &self.replay_mode)
            .finish_non_exhaustive()
    }
}

/// Steps 7–16 for `admitted`, against `view` as the writer sees it.
pub fn decide(
    admitted: &Admitted,
    origin: Origin<'_>,
    view: &dyn AcceptView,
    ctx: &Context<'_>,
) -> Result<Acceptance, ProtocolError> {
    let f = &admitted.facts;
    let rules = ctx.rules;
    rules.check_new_id(f, view.is_stored(&f.id))?;
    let bootstrap;
    let (rt, fresh) = match view.thread(&f.thread) {
        Some(rt) => (rt, false),
        None => {
            rules.check_may_start_thread(f)?;
            // §10.5 bootstrap: the root's sender owns the thread, its recipients participate.
            bootstrap = ThreadRuntime {
                dag: ThreadDag::new(),
                state: ThreadState::new(
                    f.thread,
                    f.sender.clone(),
                    &f.visible_recipients,
                    f.created_at,
                ),
                last_event_seq: 0,
            };
            (&bootstrap, true)
        }
    };
    let mut d = Decider {
        f,
        rt,
        view,
        ctx,
        effects: Vec::new(),
        evict: Vec::new(),
    };
    let mut acceptance = d.run(admitted, origin, fresh)?;
    rules.accepted(&mut acceptance);
    Ok(acceptance)
}

struct Decider<'a> {
    f: &'a Facts,
    rt: &'a ThreadRuntime,
    view: &'a dyn AcceptView,
    ctx: &'a Context<'a>,
    effects: Vec<Effect>,
    evict: Vec<ThreadId>,
}

/// The §17.3 events an accepted envelope causes beside `envelope.new` / `thread.updated`:
/// `participant.joined` / `participant.left` (a removed participant hears of it too),
/// `thread.fork`, `thread.merged`, and `receipt.delivered` / `receipt.read` /
/// `receipt.failed` for receipt envelopes (§13-style `receipt.*@v1` intents, v1.1 §17.3).
/// Each is `(type, payload, readers beyond the envelope's)`. A new thread's first members
/// arrive with its first envelope, not as joins.
fn specific_events(
    f: &Facts,
    before: &ThreadState,
    after: &ThreadState,
    fresh: bool,
) -> Vec<(&'static str, Value, BTreeSet<Address>)> {
    let thread = f.thread.to_string();
    let envelope = f.id.to_string();
    let mut out = Vec::new();
    let was = before.active_participants();
    let now = after.active_participants();
    for who in now.difference(&was).filter(|_| !fresh) {
        out.push((
            "participant.joined",
            json!({"thread_id": thread, "envelope_id": envelope, "identity": who.to_string()}),
            BTreeSet::new(),
        ));
    }
    for who in was.difference(&now) {
        out.push((
            "participant.left",
            json!({"thread_id": thread, "envelope_id": envelope, "identity": who.to_string()}),
            BTreeSet::from([who.clone()]),
        ));
    }
    for fork in &after.forks {
        let old = before.forks.iter().find(|b| b.fork_id == fork.fork_id);
        if old.is_none() {
            out.push((
                "thread.fork",
                json!({"thread_id": thread, "envelope_id": envelope, "fork_thread_id": fork.fork_id.to_string(),
                       "forked_from": fork.forked_from.map(|e| e.to_string())}),
                BTreeSet::new(),
            ));
        }
        if fork.state == ThreadStatus::Merged
            && old.is_some_and(|o| o.state != ThreadStatus::Merged)
        {
            out.push((
                "thread.merged",
                json!({"thread_id": thread, "envelope_id": envelope, "fork_thread_id": fork.fork_id.to_string()}),
                BTreeSet::new(),
            ));
        }
    }
    if f.kind == "receipt" {
        let kind = match f.intent() {
            Some("receipt.delivered@v1") => Some("receipt.delivered"),
            Some("receipt.read@v1") => Some("receipt.read"),
            Some("receipt.failed@v1") => Some("receipt.failed"),
            _ => None,
        };
        if let Some(kind) = kind {
            let about = f
                .structured
                .as_ref()
                .and_then(|s| s.parameters.as_ref())
                .and_then(|p| p.get("envelope_id"))
                .cloned()
                .unwrap_or(Value::Null);
            out.push((
                kind,
                json!({"thread_id": thread, "envelope_id": envelope, "identity": f.sender.to_string(), "receipt_for": about}),
                BTreeSet::new(),
            ));
        }
    }
    out
}

impl Decider<'_> {
    fn now(&self) -> String {
        self.ctx.now.to_rfc3339()
    }

    fn event(&mut self, kind: &'static str, payload: Value, readers: BTreeSet<Address>) {
        self.effects.push(Effect::Event(EventDraft {
            kind,
            thread: Some(self.f.thread),
            envelope: Some(self.f.id),
            payload,
            readers,
        }));
    }

    fn audit(&mut self, action: &'static str, subject: String, details: Value) {
        self.effects.push(Effect::Audit(AuditDraft {
            actor: self.f.sender.to_string(),
            action,
            subject,
            details,
        }));
    }

    fn run(
        &mut self,
        admitted: &Admitted,
        origin: Origin<'_>,
        fresh: bool,
    ) -> Result<Acceptance, ProtocolError> {
        let f = self.f;
        let rules = self.ctx.rules;
        let state = &self.rt.state;
        let is_op = rules.is_operation(f);
        if !is_op && rules.reply_needs_capability(f, state, fresh) {
            let Some(token) = f.parameter("capability_token") else {
                return Err(ProtocolError::new(
                    ErrorCode::CapabilityDenied,
                    "from.identity",
                    format!(
                        "{} is not a participant of {} and presents no capability token",
                        f.sender, f.thread
                    ),
                    "v1.1 §10.5, §12.4",
                ));
            };
            self.check_capability(token, Grant::Reply)?;
        }
        rules.check_unlocked(f, state)?;
        rules.check_encryption_required(f, state)?;
        rules.check_dag(&self.rt.dag, f, &self.ctx.limits)?;
        let pending = f.parent.is_some_and(|p| !self.rt.dag.contains(&p));
        rules.check_pending_parent(f, pending && !fresh)?;
        let event_seq = self.rt.last_event_seq + 1;
        let mut next = state.clone();
        if !is_op
            && let Some(content) = &f.encryption
            && let Some((key, replay)) =
                rules.check_encrypted_payload(f, content, state, self.ctx.replay_mode)?
        {
            next.replay.insert(key, replay);
        }
        let mut op_subjects = Vec::new();
        if is_op {
            let op = thread_op(f)?;
            if rules.operation_needs_capability(f, state) {
                let Some(token) = op.parameters.get("capability_token") else {
                    return Err(ProtocolError::new(
                        ErrorCode::CapabilityDenied,
                        "content.structured.parameters.capability_token",
                        "a thread_op from anyone but the owner must carry a capability token",
                        "v1.1 §12.4",
                    ));
                };
                let token = token.clone();
                self.check_capability(&token, grant_for_intent(&op.intent))?;
            }
            rules.apply_operation(&mut next, event_seq, &op)?;
            // §11.5: a removed participant still receives the removal.
            op_subjects.extend(
                state
                    .participants
                    .keys()
                    .filter(|a| !next.is_active_participant(a))
                    .cloned(),
            );
            self.op_side_effects(&op, &next);
        }
        // Task and workflow rows refer to their thread: they are applied after its row.
        let mark = self.effects.len();
        self.task(state)?;
        self.workflow(state)?;
        let thread_children: Vec<Effect> = self.effects.drain(mark..).collect();
        let now = self.now();
        let mut meta = serde_json::Map::new();
        meta.insert("node_id".into(), self.ctx.node_id.into());
        meta.insert("received_at".into(), now.clone().into());
        meta.insert("event_seq".into(), event_seq.into());
        let origin_seq = match origin {
            Origin::Local { .. } | Origin::Bridge { .. } => Some(event_seq),
            Origin::Federated {
                origin_event_seq, ..
            } => origin_event_seq,
        };
        if let Some(o) = origin_seq {
            meta.insert("origin_event_seq".into(), o.into());
        }
        if let Origin::Bridge { meta: bridge } = origin {
            meta.insert("bridge".into(), bridge.clone());
        }
        meta.insert("pending_parent".into(), pending.into());
        let mut envelope = admitted.envelope.clone();
        envelope["meta"] = Value::Object(meta);
        let signed_hash = hex::encode(Sha256::digest(&admitted.canonical));

        let membership_or_state = fresh || f.kind == "thread_op";
        self.effects.push(Effect::PutThread {
            state: next.clone(),
            fresh,
            // A replay counter moved (§23.1) is state too, but re-indexes nothing.
            state_changed: membership_or_state || next.replay != state.replay,
        });
        if membership_or_state {
            self.index_thread(next.clone(), fresh);
        }
        self.effects.extend(thread_children);
        let readers = f.audience.readers(
            next.participants
                .iter()
                .filter(|(_, p)| p.left_at.is_none())
                .map(|(a, _)| a),
            &op_subjects,
        );
        self.effects.push(Effect::PutEnvelope {
            readers: readers.clone(),
            signed_hash: signed_hash.clone(),
        });
        if !f.encrypted {
            self.effects.push(Effect::IndexEnvelope {
                text: f.human_text.clone().unwrap_or_default(),
                intent: f.intent().unwrap_or_default().to_owned(),
                parameters: f
                    .structured
                    .as_ref()
                    .and_then(|s| s.parameters.as_ref())
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
            });
        }
        let kind = if f.kind == "thread_op" {
            "thread.updated"
        } else {
            "envelope.new"
        };
        self.event(
            kind,
            json!({"envelope_id": f.id.to_string(), "thread_id": f.thread.to_string(), "event_seq": event_seq, "type": f.kind}),
            readers.clone(),
        );
        for (kind, payload, also) in specific_events(f, state, &next, fresh) {
            let mut to = readers.clone();
            to.extend(also);
            self.event(kind, payload, to);
        }
        self.audit(
            "envelope.accepted",
            f.id.to_string(),
            json!({"thread_id": f.thread.to_string(), "event_seq": event_seq, "type": f.kind, "sha256": signed_hash}),
        );
        Ok(Acceptance {
            envelope,
            facts: f.clone(),
            event_seq,
            pending_parent: pending,
            effects: std::mem::take(&mut self.effects),
            evict: std::mem::take(&mut self.evict),
            next_state: next,
        })
    }

    /// Checks a presented token for `required` (§12.1–§12.6) and spends a single-use one
    /// (§12.5): the spend is broadcast as a `capability.spent` event to the thread's current
    /// participants, the sender and the holder (a node cannot sign the `capability.spent@v1`
    /// operation for a user; README "Choices where the spec is silent").
    fn check_capability(&mut self, token: &Value, required: Grant) -> Result<(), ProtocolError> {
        let f = self.f;
        let pop = match (
            f.str_parameter("pop_signature"),
            f.str_parameter("pop_timestamp"),
        ) {
            (Some(signature), Some(timestamp)) => Some(PopProof {
                signature,
                timestamp,
            }),
            _ => None,
        };
        let depth = f.parent.map(|p| self.rt.dag.depth(&p) + 1).or(Some(0));
        let req = CapabilityRequest {
            actor: &f.sender,
            thread_id: &f.thread,
            thread_cap_epoch: self.rt.state.cap_epoch,
            required,
            envelope_id: &f.id,
            envelope_type: &f.kind,
            intent: f.intent(),
            priority: f.priority,
            depth,
            pop,
        };
        let issuers = IssuerAuthority {
            view: self.view,
            thread: &self.rt.state,
        };
        let ok = authorize_capability(token, &req, &issuers, &FixedClock(self.ctx.now))?;
        if ok.single_use {
            self.effects.push(Effect::CapabilitySpent {
                id: ok.id.to_string(),
                thread: f.thread,
                issued_by: ok.issued_by.to_string(),
                issued_to: token
                    .get("issued_to")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                epoch: token
                    .get("epoch")
                    .and_then(Value::as_i64)
                    .unwrap_or_default(),
                token: token.clone(),
            });
            {
                let holder = token
                    .get("issued_to")
                    .and_then(Value::as_str)
                    .and_then(|a| Address::parse_wire(a).ok());
                let mut readers = self.rt.state.active_participants();
                readers.insert(f.sender.clone());
                readers.extend(holder.clone());
                let payload = json!({"capability_id": ok.id.to_string(), "thread_id": f.thread.to_string(), "issued_to": holder.map(|a| a.to_string()), "spent_at": self.now(), "envelope_id": f.id.to_string()});
                self.event("capability.spent", payload, readers);
            }
        }
        Ok(())
    }

    /// Revocations carried by operations (§12.3, §13.4) and the fork threads of §11.4.
    fn op_side_effects(&mut self, op: &ThreadOp, next: &ThreadState) {
        let f = self.f;
        let now = self.now();
        let param = |k: &str| {
            op.parameters
                .get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let mut readers = next.active_participants();
        readers.insert(f.sender.clone());
        let fork = param("fork_thread_id")
            .and_then(|s| ThreadId::parse(&s).ok())
            .filter(|t| *t != f.thread);
        match op.intent.as_str() {
            "capability.revoked@v1" => {
                let Some(id) = param("capability_id").or_else(|| param("token_id")) else {
                    return;
                };
                self.effects
                    .push(Effect::CapabilityRevoked { id: id.clone() });
                let holder = self.view.capability_holder(&id);
                readers.extend(holder.as_deref().and_then(|a| Address::parse_wire(a).ok()));
                let payload = json!({"capability_id": id, "thread_id": f.thread.to_string(), "issued_to": holder, "revoked_at": now, "cap_epoch": next.cap_epoch});
                self.event("capability.revoked", payload.clone(), readers);
                self.audit("capability.revoked", id, payload);
            }
            "thread.fork@v1" => {
                self.evict.extend(fork);
                let Some(fork) = param("fork_thread_id").and_then(|s| ThreadId::parse(&s).ok())
                else {
                    return;
                };
                // The fork starts with the parent's participants and subject (§11.4); a fork
                // id naming an existing thread gets the `parent` link added.
                let mut state = self.view.stored_thread(&fork).unwrap_or_else(|| {
                    let mut s = next.clone();
                    s.id = fork;
                    s.state = ThreadStatus::Active;
                    s.forks.clear();
                    s.linked_threads.clear();
                    s.last_event_seq = 0;
                    for p in s.participants.values_mut().filter(|p| p.left_at.is_none()) {
                        p.joined_at = op.created_at;
                    }
                    s
                });
                state.linked_threads.insert(LinkedThread {
                    thread_id: next.id,
                    relation: "parent".into(),
                });
                self.other_thread(state, true);
            }
            "thread.merge@v1" => {
                self.evict.extend(fork);
                let Some(fork) = param("fork_thread_id").and_then(|s| ThreadId::parse(&s).ok())
                else {
                    return;
                };
                if let Some(mut state) = self.view.stored_thread(&fork) {
                    state.state = ThreadStatus::Merged;
                    self.other_thread(state, false);
                }
            }
            "delegation.revoked@v1" => {
                let id = param("delegation_id");
                // §13.4 / v1.0 §12.5: a notice may name the pair instead of a link id.
                let pair = param("delegator").zip(param("delegate"));
                self.effects.push(Effect::DelegationRevoked {
                    id: id.clone(),
                    pair,
                });
                let payload = json!({"delegation_id": id, "delegator": param("delegator"), "delegate": param("delegate"), "revoked_at": now});
                self.event("delegation.revoked", payload.clone(), readers);
                self.audit(
                    "delegation.revoked",
                    id.unwrap_or_else(|| "pair".into()),
                    payload,
                );
            }
            _ => {}
        }
    }

    fn other_thread(&mut self, state: ThreadState, create: bool) {
        self.effects.push(Effect::PutOtherThread {
            state: state.clone(),
            create,
        });
        self.index_thread(state, false);
    }

    /// Participants and labels (§16.2), then the search row (§16.6), of `state`.
    fn index_thread(&mut self, state: ThreadState, fresh: bool) {
        self.effects.push(Effect::IndexThread {
            state: state.clone(),
            fresh,
        });
        self.effects.push(Effect::SearchThread { state, fresh });
    }

    /// Tasks (§18.3): `task.create@v1` starts one; `task.state_update@v1` moves it by the
    /// v1.0 §17.3 table, by an actor with a role that may trigger the move. `state`: the
    /// thread before this envelope.
    fn task(&mut self, state: &ThreadState) -> Result<(), ProtocolError> {
        let f = self.f;
        match f.intent() {
            Some("task.create@v1") => {
                self.effects.push(Effect::TaskCreated {
                    id: f.id,
                    thread: f.thread,
                    creator: f.sender.clone(),
                    assignee: f.str_parameter("assignee").map(str::to_owned),
                });
            }
            Some("task.state_update@v1") => {
                let bad = |field: &str, rule: &str| {
                    ProtocolError::invalid(
                        format!("content.structured.parameters.{field}"),
                        rule,
                        "v1.1 §18.3",
                    )
                };
                let task_id = f.str_parameter("task_id").ok_or_else(|| {
                    bad(
                        "task_id",
                        "the task_id of the task.create envelope is required",
                    )
                })?;
                let to = f
                    .str_parameter("state")
                    .and_then(TaskState::parse)
                    .ok_or_else(|| bad("state", "one of the §18.3 task states is required"))?;
                let task = self
                    .view
                    .task(task_id)
                    .filter(|t| t.thread == f.thread)
                    .ok_or_else(|| bad("task_id", "no task with this id in this thread"))?;
                let me = f.sender.to_string();
                let mut roles = Vec::new();
                if state.is_owner(&f.sender) {
                    roles.push(TaskRole::ThreadOwner);
                }
                if task.creator == me {
                    roles.push(TaskRole::Creator);
                }
                if task.assignee.as_deref() == Some(&me) {
                    roles.push(TaskRole::Assignee);
                }
                self.ctx.rules.check_task_move(task.state, to, &roles)?;
                self.effects.push(Effect::TaskMoved {
                    id: task_id.to_owned(),
                    state: to,
                    assignee: f
                        .str_parameter("assignee")
                        .map(str::to_owned)
                        .or(task.assignee),
                });
            }
            _ => {}
        }
        Ok(())
    }
}

impl Decider<'_> {
    /// Workflows (§19): a `workflow` envelope defines one (`workflow.execute@v1`); the
    /// `workflow.step_complete@v1` / `failed@v1` / `complete@v1` updates move its run, each
    /// checked against the definition and who sent it. Encrypted content is opaque to the
    /// node, so it tracks no run from it. `state`: the thread before this envelope.
    fn workflow(&mut self, state: &ThreadState) -> Result<(), ProtocolError> {
        use crate::workflow::{self as wf, Actor, WorkflowRun};
        let f = self.f;
        if f.encrypted {
            return Ok(());
        }
        let intent = f.intent();
        let update =
            intent.is_some_and(|i| [wf::STEP_COMPLETE, wf::FAILED, wf::COMPLETE].contains(&i));
        if (f.kind == "workflow" && !update) || intent == Some(wf::EXECUTE) {
            if f.kind != "workflow" {
                return Err(ProtocolError::invalid(
                    "type",
                    "workflow.execute@v1 is carried by an envelope of type workflow",
                    "v1.1 §19",
                ));
            }
            if intent != Some(wf::EXECUTE) {
                return Err(ProtocolError::invalid(
                    "content.structured.intent",
                    "a workflow envelope carries workflow.execute@v1 or a §19.2 transition intent",
                    "v1.1 §19",
                ));
            }
            let def = self.ctx.rules.workflow_definition(f)?;
            if self.view.workflow(&def.workflow_id).is_some() {
                return Err(ProtocolError::invalid(
                    "content.structured.parameters.workflow_id",
                    format!("{} already names a workflow on this node", def.workflow_id),
                    "v1.1 §19",
                ));
            }
            let held = self.ctx.rules.workflow_held(state);
            let run = WorkflowRun::start(
                def,
                f.thread.to_string(),
                f.sender.to_string(),
                f.id.to_string(),
                self.ctx.now,
                held,
            );
            self.effects.push(Effect::PutWorkflow {
                run: Box::new(run),
                fresh: true,
            });
            return Ok(());
        }
        let parameters = f.structured.as_ref().and_then(|s| s.parameters.as_ref());
        let Some(parsed) = intent.and_then(|i| wf::parse_update(i, parameters)) else {
            return Ok(());
        };
        let (id, update) = parsed?;
        let run = self
            .view
            .workflow(&id)
            .filter(|r| r.thread == f.thread.to_string())
            .ok_or_else(|| {
                ProtocolError::invalid(
                    "content.structured.parameters.workflow_id",
                    format!("no workflow {id} in this thread"),
                    "v1.1 §19.2",
                )
            })?;
        let actor = Actor {
            identity: &f.sender,
            thread_owner: state.is_owner(&f.sender),
        };
        let next = self.ctx.rules.apply_workflow_update(
            &run,
            &update,
            actor,
            &f.id.to_string(),
            self.ctx.now,
        )?;
        self.effects.push(Effect::PutWorkflow {
            run: Box::new(next),
            fresh: false,
        });
        Ok(())
    }
}

/// The operation a `thread_op` carries (§11.1), from its facts.
fn thread_op(f: &Facts) -> Result<ThreadOp, ProtocolError> {
    let s = f.structured.as_ref().ok_or_else(|| {
        ProtocolError::invalid(
            "content.structured",
            "content.structured is required for a thread_op",
            "v1.1 §11.1",
        )
    })?;
    let parameters = f.parameter_object();
    let preconditions = s
        .preconditions
        .clone()
        .or_else(|| parameters.get("preconditions").cloned())
        .filter(|p| !p.is_null());
    Ok(ThreadOp {
        envelope_id: f.id,
        actor: f.sender.clone(),
        intent: s.intent.clone(),
        parameters,
        preconditions,
        created_at: f.created_at,
    })
}

/// The view's capability lookups with issuer authority from the thread: the thread's
/// current owners issue tokens (§12.1 `issued_by`, §12.4).
struct IssuerAuthority<'a> {
    view: &'a dyn AcceptView,
    thread: &'a ThreadState,
}

impl CapabilityResolver for IssuerAuthority<'_> {
    fn signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.view.signing_key(identity, key_id)
    }
    fn pop_key(&self, holder: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.view.pop_key(holder, key_id)
    }
    fn may_issue(&self, issuer: &Address, thread: &ThreadId) -> bool {
        self.thread.id == *thread && self.thread.is_owner(issuer)
    }
    fn is_revoked(&self, id: &CapabilityId) -> bool {
        self.view.is_revoked(id)
    }
    fn is_spent(&self, id: &CapabilityId) -> bool {
        self.view.is_spent(id)
    }
}
