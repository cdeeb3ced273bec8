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
//!    domain is the delivering node's (§15.4);
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
//! 15. `meta.event_seq` = the thread's last + 1 (§11.6), `meta` filled in;
//! 16. readers (§8.3, §11.5), the envelope row, search rows (§16.6), the event (§17.3) and
//!     the audit entry (§25.1), as [`Effect`]s.

mod effects;
mod facts;
mod rules;
mod view;

pub use effects::{Acceptance, AuditDraft, Effect, EventDraft};
pub use facts::{Facts, Structured};
pub use rules::{Deviations, Rules, SpecRules};
pub use view::{AcceptView, Directory, Origin, TaskRecord, ThreadRuntime};

use crate::address::Address;
use crate::capability::{
    CapabilityRequest, CapabilityResolver, Grant, PopProof, authorize_capability, grant_for_intent,
};
use crate::clock::FixedClock;
use crate::delegation::verify_delegation_chain;
use crate::envelope::validate::THREAD_OP_NAMESPACES;
use crate::error::{ErrorCode, ProtocolError};
use crate::id::{CapabilityId, ThreadId};
use crate::jcs::{to_canonical_bytes_without, to_canonical_bytes_without_and};
use crate::policy::require_encryption;
use crate::task::{TaskRole, TaskState, check_task_transition};
use crate::thread::{
    LinkedThread, ParticipantRole, ThreadDag, ThreadLimits, ThreadOp, ThreadState, ThreadStatus,
};
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
    let dev = rules.deviations();
    crate::bounds::check(&envelope, limits)?;
    // The stored form (the size limit and `body_sha256`) and the signed form, in one pass.
    let (canonical, signed_form) =
        to_canonical_bytes_without_and(&envelope, &["meta"], "signature").unwrap_or_default();
    if !dev.ignore_size_limit {
        crate::envelope::check_envelope_size(canonical.len(), limits.max_envelope_bytes)?;
    }
    let facts = rules.structure(&envelope)?;
    match origin {
        Origin::Local { caller } => {
            if facts.sender != *caller && !dev.allow_sender_spoofing {
                return Err(ProtocolError::new(
                    ErrorCode::CapabilityDenied,
                    "from.identity",
                    format!(
                        "the authenticated identity is {caller}; it cannot send as {}",
                        facts.sender
                    ),
                    "v1.1 §16.1",
                ));
            }
        }
        Origin::Federated { node, .. } => {
            if !facts.sender.domain().eq_ignore_ascii_case(node) {
                return Err(ProtocolError::new(
                    ErrorCode::CapabilityDenied,
                    "from.identity",
                    format!(
                        "{} is not an identity of the delivering node {node}",
                        facts.sender
                    ),
                    "v1.1 §15.4",
                ));
            }
        }
    }
    let registered = directory
        .registered_type(&facts.sender)
        .ok_or_else(|| not_found(ErrorCode::IdentityNotFound, "from.identity", &facts.sender))?;
    if facts.sender_type != registered && !dev.ignore_sender_type {
        return Err(ProtocolError::invalid(
            "from.type",
            format!(
                "{} is registered as {registered}, not {:?}",
                facts.sender, facts.sender_type
            ),
            "v1.1 §6.3, §8.1",
        ));
    }
    if !dev.skip_signature {
        let key = directory
            .active_signing_key(&facts.sender, &facts.key_id)
            .or_else(|| historical_key(directory, origin, &facts))
            .ok_or_else(|| {
                ProtocolError::new(
                    ErrorCode::SignatureInvalid,
                    "from.key_id",
                    format!(
                        "{} is not an active signing key of {}",
                        facts.key_id, facts.sender
                    ),
                    "v1.1 §7.3",
                )
            })?;
        rules.verify_signature(&envelope, &signed_form, &key)?;
    }
    if registered == "agent" && !dev.skip_delegation_chain {
        verify_delegation_chain(
            &envelope,
            directory,
            &rules.chain_policy(),
            &FixedClock(now),
        )?;
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
        Origin::Local { .. } => None,
        Origin::Federated { .. } => directory
            .retired_signing_key(&facts.sender, &facts.key_id)
            .filter(|k| k.verifies_envelope_created_at(facts.created_at))
            .map(|k| k.key),
    }
}

/// What the node decides for one admitted envelope.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Accepted: apply the effects.
    Accepted(Box<Acceptance>),
    /// The id is stored and [`Deviations::allow_duplicate_ids`] answers with the stored
    /// envelope instead of `ENVELOPE_DUPLICATE`.
    AlreadyStored,
}

/// The node's settings that acceptance reads.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The current time (receipt time, token expiry).
    pub now: Timestamp,
    /// `meta.node_id`: the node's domain.
    pub node_id: &'a str,
    /// §10.7 limits.
    pub limits: ThreadLimits,
    /// Deviations in force ([`Deviations::NONE`] on a real node).
    pub deviations: &'a Deviations,
}

/// Steps 7–16 for `admitted`, against `view` as the writer sees it.
pub fn decide(
    admitted: &Admitted,
    origin: Origin<'_>,
    view: &dyn AcceptView,
    ctx: &Context<'_>,
) -> Result<Decision, ProtocolError> {
    let f = &admitted.facts;
    let dev = ctx.deviations;
    if view.is_stored(&f.id) {
        if dev.allow_duplicate_ids {
            return Ok(Decision::AlreadyStored);
        }
        return Err(ProtocolError::new(
            ErrorCode::EnvelopeDuplicate,
            "id",
            format!("{} is already stored", f.id),
            "v1.1 §8.4, §24.2",
        ));
    }
    let bootstrap;
    let (rt, fresh) = match view.thread(&f.thread) {
        Some(rt) => (rt, false),
        None => {
            if f.kind == "thread_op" && !dev.bootstrap_thread_from_op {
                return Err(not_found(ErrorCode::ThreadNotFound, "thread_id", f.thread));
            }
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
    d.run(admitted, origin, fresh)
        .map(|a| Decision::Accepted(Box::new(a)))
}

struct Decider<'a> {
    f: &'a Facts,
    rt: &'a ThreadRuntime,
    view: &'a dyn AcceptView,
    ctx: &'a Context<'a>,
    effects: Vec<Effect>,
    evict: Vec<ThreadId>,
}

fn active_participants(state: &ThreadState) -> BTreeSet<Address> {
    state
        .participants
        .iter()
        .filter(|(_, p)| p.left_at.is_none())
        .map(|(a, _)| a.clone())
        .collect()
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
        let dev = *self.ctx.deviations;
        let state = &self.rt.state;
        let out_of_family = !f
            .intent()
            .is_some_and(|i| THREAD_OP_NAMESPACES.iter().any(|ns| i.starts_with(ns)));
        let is_op = f.kind == "thread_op" && !(out_of_family && dev.inert_out_of_family_ops);
        if !fresh && !state.is_active_participant(&f.sender) && !is_op && !dev.skip_capability_check
        {
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
        if !dev.accept_into_locked_thread {
            state.check_accepts_envelope(&f.kind)?;
        }
        require_encryption(f.kind == "thread_op", f.encrypted, state.encryption_enabled)?;
        let limits = if dev.ignore_thread_limits {
            ThreadLimits::UNLIMITED
        } else {
            self.ctx.limits
        };
        if !dev.allow_dag_cycles {
            self.rt.dag.check(&f.id, f.parent.as_ref(), &limits)?;
        }
        let pending = f.parent.is_some_and(|p| !self.rt.dag.contains(&p));
        if pending && !fresh && dev.reject_missing_parent {
            return Err(ProtocolError::invalid(
                "parent_id",
                "the parent is not in the thread",
                "v1.1 §10.2",
            ));
        }
        let event_seq = self.rt.last_event_seq + 1;
        let mut next = state.clone();
        let mut op_subjects = Vec::new();
        if is_op {
            let mut op = thread_op(f)?;
            if dev.ignore_op_preconditions {
                op.preconditions = None;
            }
            if !(state.is_owner(&f.sender) || dev.skip_capability_check) {
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
            let unapplied = match op.intent.as_str() {
                "thread.delegate@v1" => dev.ignore_thread_delegate,
                "thread.fork@v1" => dev.fork_without_entry,
                "thread.merge@v1" => dev.ignore_thread_merge,
                "thread.link@v1" => dev.ignore_thread_link,
                _ => false,
            };
            match if unapplied {
                Ok(())
            } else {
                next.apply(event_seq, &op)
            } {
                Ok(()) => {}
                Err(e)
                    if e.code == ErrorCode::StateTransitionInvalid
                        && dev.allow_invalid_state_transition => {}
                Err(e) => return Err(e),
            }
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
        self.task(state)?;
        let now = self.now();
        let mut meta = serde_json::Map::new();
        meta.insert("node_id".into(), self.ctx.node_id.into());
        meta.insert("received_at".into(), now.clone().into());
        if !dev.omit_event_seq {
            meta.insert("event_seq".into(), event_seq.into());
        }
        let origin_seq = match origin {
            Origin::Local { .. } => Some(event_seq),
            Origin::Federated {
                origin_event_seq, ..
            } => origin_event_seq,
        };
        if let Some(o) = origin_seq.filter(|_| !dev.omit_origin_event_seq) {
            meta.insert("origin_event_seq".into(), o.into());
        }
        meta.insert("pending_parent".into(), pending.into());
        let mut envelope = admitted.envelope.clone();
        let mut canonical = std::borrow::Cow::Borrowed(&admitted.canonical);
        if dev.restamp_created_at {
            envelope["created_at"] = now.clone().into();
            canonical = std::borrow::Cow::Owned(
                to_canonical_bytes_without(&envelope, &["meta"]).unwrap_or_default(),
            );
        }
        envelope["meta"] = Value::Object(meta);
        let signed_hash = hex::encode(Sha256::digest(&*canonical));

        let state_changed = fresh || f.kind == "thread_op";
        self.effects.push(Effect::PutThread {
            state: next.clone(),
            fresh,
            state_changed,
        });
        if state_changed {
            self.effects.push(Effect::IndexThread {
                state: next.clone(),
                fresh,
                searchable: !dev.skip_thread_search_index,
            });
        }
        let mut readers = f.audience.readers(
            next.participants
                .iter()
                .filter(|(_, p)| p.left_at.is_none())
                .map(|(a, _)| a),
            &op_subjects,
        );
        if f.kind == "thread_op" && dev.skip_observer_delivery {
            readers.retain(|a| {
                *a == f.sender
                    || next
                        .participants
                        .get(a)
                        .is_none_or(|p| p.role != ParticipantRole::Observer)
            });
        }
        self.effects.push(Effect::PutEnvelope {
            readers: readers.clone(),
            signed_hash: signed_hash.clone(),
        });
        if !f.encrypted && !dev.skip_envelope_search_index {
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
            readers,
        );
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
            if !self.ctx.deviations.omit_capability_spent_event {
                let holder = token
                    .get("issued_to")
                    .and_then(Value::as_str)
                    .and_then(|a| Address::parse_wire(a).ok());
                let mut readers = active_participants(&self.rt.state);
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
        let dev = *self.ctx.deviations;
        let now = self.now();
        let param = |k: &str| {
            op.parameters
                .get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let mut readers = active_participants(next);
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
                if dev.fork_without_entry {
                    return;
                }
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
                if !dev.fork_without_parent_link {
                    state.linked_threads.insert(LinkedThread {
                        thread_id: next.id,
                        relation: "parent".into(),
                    });
                }
                self.other_thread(state, true);
            }
            "thread.merge@v1" => {
                self.evict.extend(fork);
                if dev.ignore_thread_merge {
                    return;
                }
                let Some(fork) = param("fork_thread_id").and_then(|s| ThreadId::parse(&s).ok())
                else {
                    return;
                };
                if dev.merge_moves_envelopes {
                    self.effects.push(Effect::MoveEnvelopes {
                        from: fork,
                        to: f.thread,
                    });
                }
                if !dev.merge_leaves_fork_open
                    && let Some(mut state) = self.view.stored_thread(&fork)
                {
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
        let searchable = !self.ctx.deviations.skip_thread_search_index;
        self.effects.push(Effect::PutOtherThread {
            state: state.clone(),
            create,
        });
        self.effects.push(Effect::IndexThread {
            state,
            fresh: false,
            searchable,
        });
    }

    /// Tasks (§18.3): `task.create@v1` starts one; `task.state_update@v1` moves it by the
    /// v1.0 §17.3 table, by an actor with a role that may trigger the move. `state`: the
    /// thread before this envelope.
    fn task(&mut self, state: &ThreadState) -> Result<(), ProtocolError> {
        let f = self.f;
        let dev = self.ctx.deviations;
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
                match check_task_transition(task.state, to, &roles) {
                    Err(e)
                        if e.code == ErrorCode::StateTransitionInvalid
                            && dev.allow_invalid_state_transition => {}
                    Err(e) if e.code == ErrorCode::CapabilityDenied && dev.allow_any_task_actor => {
                    }
                    Err(e) => return Err(e),
                    Ok(()) => {}
                }
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
