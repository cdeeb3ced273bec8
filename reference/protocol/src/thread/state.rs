//! Thread state and the authoritative operation log (v1.1 §10.4–§10.6, §11).
//!
//! [`ThreadState`] is a pure reducer: a node feeds it every accepted `thread_op` in
//! `meta.event_seq` order and it either applies the operation or rejects it without changing
//! anything. That one rule gives §11.7 conflict resolution: an operation whose
//! preconditions (§11.3) are unmet is rejected, and among valid operations the one with the
//! later event sequence wins, whatever the wall clock said.

use crate::address::Address;
use crate::error::{ErrorCode, ProtocolError};
use crate::id::{EnvelopeId, ThreadId};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Thread states (v1.1 §10.1; `merged` applies to forks, §11.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// Open for activity.
    Active,
    /// Resolved.
    Resolved,
    /// Archived (after resolution).
    Archived,
    /// Locked: no new envelopes except operations.
    Locked,
    /// A fork merged back into its parent.
    Merged,
}

impl ThreadStatus {
    /// Every status.
    pub const ALL: [ThreadStatus; 5] = [
        ThreadStatus::Active,
        ThreadStatus::Resolved,
        ThreadStatus::Archived,
        ThreadStatus::Locked,
        ThreadStatus::Merged,
    ];

    /// Wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            ThreadStatus::Active => "active",
            ThreadStatus::Resolved => "resolved",
            ThreadStatus::Archived => "archived",
            ThreadStatus::Locked => "locked",
            ThreadStatus::Merged => "merged",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        ThreadStatus::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// The state-changing operations of the §10.4 state machine.
pub const STATE_OPS: [&str; 4] = [
    "thread.resolve@v1",
    "thread.archive@v1",
    "thread.lock@v1",
    "thread.reopen@v1",
];

/// The state a state-changing operation leads to from `from` (v1.1 §10.4), or
/// `STATE_TRANSITION_INVALID`. `None` for intents that do not change the state.
pub fn state_transition(
    from: ThreadStatus,
    intent: &str,
) -> Option<Result<ThreadStatus, ProtocolError>> {
    use ThreadStatus::*;
    let to = match intent {
        "thread.resolve@v1" => (from == Active).then_some(Resolved),
        "thread.archive@v1" => (from == Resolved).then_some(Archived),
        "thread.lock@v1" => matches!(from, Active | Resolved).then_some(Locked),
        "thread.reopen@v1" => matches!(from, Resolved | Locked).then_some(Active),
        _ => return None,
    };
    Some(to.ok_or_else(|| {
        ProtocolError::new(
            ErrorCode::StateTransitionInvalid,
            "content.structured.intent",
            format!("{intent} is not allowed from state {}", from.as_str()),
            "v1.1 §10.4",
        )
    }))
}

/// Participant roles in a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParticipantRole {
    /// Owns the thread (the root's sender, or whoever it was delegated to).
    Owner,
    /// Ordinary participant.
    Participant,
    /// Read-only observer.
    Observer,
}

impl ParticipantRole {
    /// The wire name (§10.1), as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ParticipantRole::Owner => "owner",
            ParticipantRole::Participant => "participant",
            ParticipantRole::Observer => "observer",
        }
    }
}

/// One participant record (v1.1 §10.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Participant {
    /// Role.
    pub role: ParticipantRole,
    /// When they joined.
    pub joined_at: Timestamp,
    /// When they left, if they did.
    pub left_at: Option<Timestamp>,
}

/// A `forks[]` entry (v1.1 §10.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fork {
    /// The fork thread.
    pub fork_id: ThreadId,
    /// The envelope it forked from.
    pub forked_from: Option<EnvelopeId>,
    /// `active`, `resolved` or `merged`.
    pub state: ThreadStatus,
}

/// A `linked_threads[]` entry (v1.1 §10.1).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LinkedThread {
    /// The other thread.
    pub thread_id: ThreadId,
    /// `related`, `blocks`, `blocked_by`, `parent`, `child` or `merged_from`.
    pub relation: String,
}

/// Relations a `thread.link@v1` may record (v1.1 §10.1).
pub const LINK_RELATIONS: [&str; 6] = [
    "related",
    "blocks",
    "blocked_by",
    "parent",
    "child",
    "merged_from",
];

/// A thread operation as the reducer needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadOp {
    /// The operation envelope.
    pub envelope_id: EnvelopeId,
    /// Who signed it.
    pub actor: Address,
    /// `content.structured.intent`.
    pub intent: String,
    /// `content.structured.parameters` (an empty object when absent).
    pub parameters: Map<String, Value>,
    /// Preconditions (§11.3), from `content.structured.preconditions` or
    /// `parameters.preconditions`.
    pub preconditions: Option<Value>,
    /// Envelope `created_at`.
    pub created_at: Timestamp,
}

impl ThreadOp {
    /// Reads a `thread_op` envelope. Call after envelope validation.
    pub fn from_envelope(envelope: &Value) -> Result<ThreadOp, ProtocolError> {
        let field = |f: &str| {
            ProtocolError::invalid(
                f.to_owned(),
                format!("{f} is required for a thread_op"),
                "v1.1 §11.1",
            )
        };
        let envelope_id = envelope
            .get("id")
            .and_then(Value::as_str)
            .and_then(|s| EnvelopeId::parse(s).ok())
            .ok_or_else(|| field("id"))?;
        let actor = envelope
            .pointer("/from/identity")
            .and_then(Value::as_str)
            .and_then(|s| Address::parse_wire(s).ok())
            .ok_or_else(|| field("from.identity"))?;
        let structured = envelope
            .pointer("/content/structured")
            .ok_or_else(|| field("content.structured"))?;
        let intent = structured
            .get("intent")
            .and_then(Value::as_str)
            .ok_or_else(|| field("content.structured.intent"))?;
        let parameters = structured
            .get("parameters")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let preconditions = structured
            .get("preconditions")
            .or_else(|| parameters.get("preconditions"))
            .filter(|p| !p.is_null())
            .cloned();
        let created_at = envelope
            .get("created_at")
            .and_then(Value::as_str)
            .and_then(|s| Timestamp::parse(s).ok())
            .ok_or_else(|| field("created_at"))?;
        Ok(ThreadOp {
            envelope_id,
            actor,
            intent: intent.to_owned(),
            parameters,
            preconditions,
            created_at,
        })
    }
}

/// The replicated state of one thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadState {
    /// Thread id.
    pub id: ThreadId,
    /// State.
    pub state: ThreadStatus,
    /// Subject.
    pub subject: Option<String>,
    /// Labels.
    pub labels: BTreeSet<String>,
    /// Participants by identity.
    pub participants: BTreeMap<Address, Participant>,
    /// Capability epoch (v1.1 §12.3).
    pub cap_epoch: u64,
    /// Forks.
    pub forks: Vec<Fork>,
    /// Linked threads.
    pub linked_threads: BTreeSet<LinkedThread>,
    /// Whether E2EE is enabled (v1.1 §10.6).
    pub encryption_enabled: bool,
    /// E2EE key epoch.
    pub key_epoch: u64,
    /// The E2EE profile set by the last `encryption.epoch@v1` (its canonical id; v1.1 §11.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption_profile: Option<String>,
    /// Replay state per sender and device ([`crate::e2ee::thread::replay_key`], v1.1 §23.1).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replay: BTreeMap<String, crate::e2ee::ReplayState>,
    /// The last `event_seq` applied.
    pub last_event_seq: u64,
}

fn bad_param(name: &str, rule: &str) -> ProtocolError {
    ProtocolError::invalid(
        format!("content.structured.parameters.{name}"),
        rule.to_owned(),
        "v1.1 §11.2",
    )
}

fn param_address(op: &ThreadOp, name: &str) -> Result<Address, ProtocolError> {
    op.parameters
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| bad_param(name, "required: a loom:// or bridge:// address"))
        .and_then(|s| Address::parse_wire(s).map_err(|e| bad_param(name, e.reason)))
}

fn param_thread(op: &ThreadOp, name: &str) -> Result<ThreadId, ProtocolError> {
    op.parameters
        .get(name)
        .and_then(Value::as_str)
        .and_then(|s| ThreadId::parse(s).ok())
        .ok_or_else(|| bad_param(name, "required: a thr_ ID"))
}

impl ThreadState {
    /// A new thread created by `owner` at `at` (the bootstrap exception of §10.5: the root's
    /// sender becomes owner and its recipients become participants).
    pub fn new(id: ThreadId, owner: Address, recipients: &[Address], at: Timestamp) -> Self {
        let mut participants = BTreeMap::new();
        for r in recipients {
            participants.insert(
                r.clone(),
                Participant {
                    role: ParticipantRole::Participant,
                    joined_at: at,
                    left_at: None,
                },
            );
        }
        participants.insert(
            owner,
            Participant {
                role: ParticipantRole::Owner,
                joined_at: at,
                left_at: None,
            },
        );
        ThreadState {
            id,
            state: ThreadStatus::Active,
            subject: None,
            labels: BTreeSet::new(),
            participants,
            cap_epoch: 0,
            forks: Vec::new(),
            linked_threads: BTreeSet::new(),
            encryption_enabled: false,
            key_epoch: 0,
            encryption_profile: None,
            replay: BTreeMap::new(),
            last_event_seq: 0,
        }
    }

    /// The current (not departed) participants.
    pub fn active_participants(&self) -> std::collections::BTreeSet<Address> {
        self.participants
            .iter()
            .filter(|(_, p)| p.left_at.is_none())
            .map(|(a, _)| a.clone())
            .collect()
    }

    /// Whether `who` is a current (not departed) participant.
    pub fn is_active_participant(&self, who: &Address) -> bool {
        self.participants
            .get(who)
            .is_some_and(|p| p.left_at.is_none())
    }

    /// Whether `who` is a current owner.
    pub fn is_owner(&self, who: &Address) -> bool {
        self.participants
            .get(who)
            .is_some_and(|p| p.left_at.is_none() && p.role == ParticipantRole::Owner)
    }

    /// Whether a non-operation envelope may be posted (v1.1 §24.2 `THREAD_LOCKED`).
    pub fn check_accepts_envelope(&self, envelope_type: &str) -> Result<(), ProtocolError> {
        if self.state == ThreadStatus::Locked && envelope_type != "thread_op" {
            return Err(ProtocolError::new(
                ErrorCode::ThreadLocked,
                "thread_id",
                "the thread is locked; only thread operations are accepted",
                "v1.1 §10.4",
            ));
        }
        Ok(())
    }

    /// Checks the preconditions of §11.3 against the current state.
    pub fn check_preconditions(&self, op: &ThreadOp) -> Result<(), ProtocolError> {
        let Some(pre) = &op.preconditions else {
            return Ok(());
        };
        let unmet = |field: &str, rule: String| {
            ProtocolError::new(
                ErrorCode::StateTransitionInvalid,
                format!("content.structured.preconditions.{field}"),
                rule,
                "v1.1 §11.3",
            )
        };
        let pre = pre
            .as_object()
            .ok_or_else(|| unmet("", "preconditions must be an object".into()))?;
        if let Some(states) = pre.get("thread_state_in") {
            let states = states.as_array().ok_or_else(|| {
                unmet(
                    "thread_state_in",
                    "thread_state_in must be an array of states".into(),
                )
            })?;
            if !states
                .iter()
                .any(|s| s.as_str() == Some(self.state.as_str()))
            {
                return Err(unmet(
                    "thread_state_in",
                    format!("thread state is {}", self.state.as_str()),
                ));
            }
        }
        if let Some(epoch) = pre.get("cap_epoch") {
            let epoch = epoch.as_u64().ok_or_else(|| {
                unmet(
                    "cap_epoch",
                    "cap_epoch must be a non-negative integer".into(),
                )
            })?;
            if epoch != self.cap_epoch {
                return Err(unmet(
                    "cap_epoch",
                    format!("thread cap_epoch is {}", self.cap_epoch),
                ));
            }
        }
        Ok(())
    }

    /// Applies one operation with its `event_seq`, or rejects it and changes nothing
    /// (v1.1 §11.2, §11.3, §11.6, §11.7).
    pub fn apply(&mut self, event_seq: u64, op: &ThreadOp) -> Result<(), ProtocolError> {
        if event_seq <= self.last_event_seq {
            return Err(ProtocolError::new(
                ErrorCode::InternalError,
                "meta.event_seq",
                format!(
                    "event_seq {event_seq} is not after {} (operations apply in event order)",
                    self.last_event_seq
                ),
                "v1.1 §11.6",
            ));
        }
        self.check_preconditions(op)?;
        let mut next = self.clone();
        next.apply_intent(op)?;
        next.last_event_seq = event_seq;
        *self = next;
        Ok(())
    }

    /// Applies a batch in `event_seq` order; returns each operation's outcome (§11.7).
    pub fn replay<'a>(
        &mut self,
        ops: impl IntoIterator<Item = (u64, &'a ThreadOp)>,
    ) -> Vec<(u64, Result<(), ProtocolError>)> {
        let mut ops: Vec<_> = ops.into_iter().collect();
        ops.sort_by_key(|(seq, _)| *seq);
        ops.into_iter()
            .map(|(seq, op)| (seq, self.apply(seq, op)))
            .collect()
    }

    fn apply_intent(&mut self, op: &ThreadOp) -> Result<(), ProtocolError> {
        if let Some(t) = state_transition(self.state, &op.intent) {
            self.state = t?;
            return Ok(());
        }
        // A lock stops conversation and membership changes (§10.4); revocations and key
        // distribution must still be recorded (§12.3, §13.4, §11.8).
        let bookkeeping = op.intent.starts_with("capability.")
            || op.intent.starts_with("encryption.")
            || op.intent == "delegation.revoked@v1";
        if self.state == ThreadStatus::Locked && !bookkeeping {
            return Err(ProtocolError::new(
                ErrorCode::ThreadLocked,
                "content.structured.intent",
                "the thread is locked; reopen it before other operations",
                "v1.1 §10.4",
            ));
        }
        match op.intent.as_str() {
            "thread.add_participant@v1" => {
                let who = param_address(op, "identity")?;
                crate::e2ee::thread::check_may_join(self, &who)?;
                let role = match op.parameters.get("role").and_then(Value::as_str) {
                    None | Some("participant") => ParticipantRole::Participant,
                    Some("observer") => ParticipantRole::Observer,
                    Some(_) => {
                        return Err(bad_param("role", "role must be participant or observer"));
                    }
                };
                match self.participants.get_mut(&who) {
                    // Re-adding a current member changes only a non-owner's role; it never
                    // demotes an owner or resets when they joined.
                    Some(p) if p.left_at.is_none() => {
                        if p.role != ParticipantRole::Owner {
                            p.role = role;
                        }
                    }
                    _ => {
                        let joined_at = op.created_at;
                        self.participants.insert(
                            who,
                            Participant {
                                role,
                                joined_at,
                                left_at: None,
                            },
                        );
                        self.membership_changed();
                    }
                }
            }
            "thread.remove_participant@v1" => {
                let who = param_address(op, "identity")?;
                if self.is_owner(&who)
                    && self
                        .participants
                        .values()
                        .filter(|p| p.role == ParticipantRole::Owner && p.left_at.is_none())
                        .count()
                        == 1
                {
                    return Err(ProtocolError::new(
                        ErrorCode::StateTransitionInvalid,
                        "content.structured.parameters.identity",
                        "the last owner cannot be removed; delegate ownership first",
                        "v1.1 §11.2",
                    ));
                }
                match self.participants.get_mut(&who) {
                    Some(p) if p.left_at.is_none() => p.left_at = Some(op.created_at),
                    _ => return Err(bad_param("identity", "not a current participant")),
                }
                self.membership_changed();
            }
            "thread.update@v1" => {
                if let Some(s) = op.parameters.get("subject") {
                    self.subject = match s {
                        Value::Null => None,
                        Value::String(s) => Some(s.clone()),
                        _ => return Err(bad_param("subject", "subject must be a string or null")),
                    };
                }
                if let Some(l) = op.parameters.get("labels") {
                    let labels = l
                        .as_array()
                        .and_then(|a| {
                            a.iter()
                                .map(|x| x.as_str().map(str::to_owned))
                                .collect::<Option<BTreeSet<_>>>()
                        })
                        .ok_or_else(|| bad_param("labels", "labels must be an array of strings"))?;
                    self.labels = labels;
                }
            }
            "thread.delegate@v1" => {
                let to = param_address(op, "identity").or_else(|_| param_address(op, "to"))?;
                for p in self
                    .participants
                    .values_mut()
                    .filter(|p| p.role == ParticipantRole::Owner)
                {
                    p.role = ParticipantRole::Participant;
                }
                let joins = !self.is_active_participant(&to);
                let entry = self.participants.entry(to).or_insert(Participant {
                    role: ParticipantRole::Owner,
                    joined_at: op.created_at,
                    left_at: None,
                });
                entry.role = ParticipantRole::Owner;
                if entry.left_at.is_some() {
                    entry.left_at = None;
                    entry.joined_at = op.created_at;
                }
                if joins {
                    self.membership_changed();
                }
            }
            "thread.fork@v1" => {
                let fork_id = param_thread(op, "fork_thread_id")?;
                if fork_id == self.id {
                    return Err(bad_param(
                        "fork_thread_id",
                        "a fork is a new thread, not the thread itself (§11.4)",
                    ));
                }
                let forked_from = op
                    .parameters
                    .get("forked_from")
                    .and_then(Value::as_str)
                    .and_then(|s| EnvelopeId::parse(s).ok());
                if forked_from.is_none() {
                    return Err(bad_param(
                        "forked_from",
                        "required: the env_ ID the fork starts from (§11.4)",
                    ));
                }
                if !self.forks.iter().any(|f| f.fork_id == fork_id) {
                    self.forks.push(Fork {
                        fork_id,
                        forked_from,
                        state: ThreadStatus::Active,
                    });
                }
            }
            "thread.merge@v1" => {
                let fork_id = param_thread(op, "fork_thread_id")?;
                let fork = self
                    .forks
                    .iter_mut()
                    .find(|f| f.fork_id == fork_id)
                    .ok_or_else(|| bad_param("fork_thread_id", "not a fork of this thread"))?;
                if fork.state == ThreadStatus::Merged {
                    return Err(ProtocolError::new(
                        ErrorCode::StateTransitionInvalid,
                        "content.structured.parameters.fork_thread_id",
                        "the fork is already merged",
                        "v1.1 §11.4",
                    ));
                }
                fork.state = ThreadStatus::Merged;
                self.linked_threads.insert(LinkedThread {
                    thread_id: fork_id,
                    relation: "merged_from".into(),
                });
            }
            "thread.link@v1" => {
                let thread_id = param_thread(op, "thread_id")?;
                let relation = op
                    .parameters
                    .get("relation")
                    .and_then(Value::as_str)
                    .unwrap_or("related");
                if !LINK_RELATIONS.contains(&relation) {
                    return Err(bad_param(
                        "relation",
                        "relation must be related, blocks, blocked_by, parent, child or merged_from",
                    ));
                }
                self.linked_threads.insert(LinkedThread {
                    thread_id,
                    relation: relation.to_owned(),
                });
            }
            "capability.revoked@v1" => self.cap_epoch += 1,
            "capability.spent@v1" | "delegation.revoked@v1" => {}
            "encryption.epoch@v1" => {
                let params = crate::e2ee::thread::check_epoch_operation(self, &op.parameters)?;
                self.encryption_enabled = true;
                self.key_epoch = params.epoch;
                self.encryption_profile = Some(params.profile.id().to_owned());
            }
            "encryption.rotate@v1" => {
                self.encryption_enabled = true;
                self.key_epoch += 1;
            }
            other => {
                return Err(ProtocolError::invalid(
                    "content.structured.intent",
                    format!("unsupported thread operation {other}"),
                    "v1.1 §11.2",
                ));
            }
        }
        Ok(())
    }

    /// Membership changes of an E2EE thread move the key epoch (v1.1 §10.6).
    fn membership_changed(&mut self) {
        if self.encryption_enabled {
            self.key_epoch += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ParticipantRole;

    #[test]
    fn a_role_is_stored_under_its_wire_name() {
        for role in [
            ParticipantRole::Owner,
            ParticipantRole::Participant,
            ParticipantRole::Observer,
        ] {
            assert_eq!(
                serde_json::to_value(role).unwrap(),
                serde_json::Value::from(role.as_str())
            );
        }
    }
}
