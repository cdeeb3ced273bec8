//! What an accepted envelope changes, as data: the store applies [`Effect`]s in order, in
//! the same transaction as the envelope, and the events are what a WebSocket hub or a
//! federation outbox will consume.

use crate::address::Address;
use crate::id::{EnvelopeId, ThreadId};
use crate::task::TaskState;
use crate::thread::ThreadState;
use serde_json::Value;
use std::collections::BTreeSet;

/// An event for the §16.8 log (and live delivery, §17), readable by `readers`.
#[derive(Debug, Clone, PartialEq)]
pub struct EventDraft {
    /// `envelope.new`, `thread.updated`, `capability.spent`, …
    pub kind: &'static str,
    /// The thread it concerns.
    pub thread: Option<ThreadId>,
    /// The envelope it concerns.
    pub envelope: Option<EnvelopeId>,
    /// The event payload.
    pub payload: Value,
    /// Who may read it (§8.3 in delivery).
    pub readers: BTreeSet<Address>,
}

/// A §25.1 audit entry (hashes and small facts, never content).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditDraft {
    /// Who acted.
    pub actor: String,
    /// What happened.
    pub action: &'static str,
    /// What it concerned.
    pub subject: String,
    /// Details.
    pub details: Value,
}

/// One change to durable state, in the order acceptance decided it.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A single-use token was spent (§12.5): mark it, or record it spent if never stored.
    CapabilitySpent {
        /// Token id.
        id: String,
        /// Its thread.
        thread: ThreadId,
        /// Issuer.
        issued_by: String,
        /// Holder as written in the token.
        issued_to: String,
        /// Token epoch as written.
        epoch: i64,
        /// The token document.
        token: Value,
    },
    /// A token was revoked by `capability.revoked@v1` (§12.3).
    CapabilityRevoked {
        /// Token id.
        id: String,
    },
    /// A delegation was revoked by `delegation.revoked@v1` (§13.4): by link id and/or by
    /// (delegator, delegate) pair.
    DelegationRevoked {
        /// Link id, when named.
        id: Option<String>,
        /// (delegator, delegate), when named.
        pair: Option<(String, String)>,
    },
    /// Another thread's state was written (a fork created or linked, a fork merged; §11.4).
    PutOtherThread {
        /// The new state.
        state: ThreadState,
        /// Create the thread row when missing.
        create: bool,
    },
    /// `task.create@v1` (§18.3).
    TaskCreated {
        /// The task (= envelope) id.
        id: EnvelopeId,
        /// Its thread.
        thread: ThreadId,
        /// The sender.
        creator: Address,
        /// `parameters.assignee`.
        assignee: Option<String>,
    },
    /// A workflow defined (`fresh`) or moved by an update envelope (§19.2).
    PutWorkflow {
        /// The run after this envelope.
        run: Box<crate::workflow::WorkflowRun>,
        /// Whether `workflow.execute@v1` defined it now.
        fresh: bool,
    },
    /// `task.state_update@v1` (§18.3).
    TaskMoved {
        /// The task id.
        id: String,
        /// The new state.
        state: TaskState,
        /// The assignee after the move.
        assignee: Option<String>,
    },
    /// The envelope's own thread row: created (`fresh`), or its counters moved, and its
    /// state stored when it changed.
    PutThread {
        /// The thread's state after the envelope.
        state: ThreadState,
        /// A new thread.
        fresh: bool,
        /// The state changed (a new thread or a `thread_op`): store it and re-index.
        state_changed: bool,
    },
    /// The envelope row (§16.1) with its readers (§8.3).
    PutEnvelope {
        /// Who may read it.
        readers: BTreeSet<Address>,
        /// hex SHA-256 of `JCS(envelope − meta)` (kept after erasure, §25.2).
        signed_hash: String,
    },
    /// The §16.6 search row of a cleartext envelope.
    IndexEnvelope {
        /// `content.human.text`.
        text: String,
        /// `content.structured.intent`.
        intent: String,
        /// `content.structured.parameters` as JSON text.
        parameters: String,
    },
    /// Keep participants and labels equal to `state` (§16.2).
    IndexThread {
        /// The state to index.
        state: ThreadState,
        /// The thread was created by this envelope: it has no index rows yet.
        fresh: bool,
    },
    /// Keep the thread's search row (subject, labels, participants) equal to `state`
    /// (§16.6).
    SearchThread {
        /// The state to index.
        state: ThreadState,
        /// The thread was created by this envelope: it has no search row yet.
        fresh: bool,
    },
    /// Append an event.
    Event(EventDraft),
    /// Append an audit entry.
    Audit(AuditDraft),
}

/// An accepted envelope: everything the node must apply, in one transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Acceptance {
    /// The envelope as stored (with `meta`).
    pub envelope: Value,
    /// Its facts.
    pub facts: super::Facts,
    /// The assigned `meta.event_seq` (§11.6).
    pub event_seq: u64,
    /// The parent is not (yet) in the thread (§10.2).
    pub pending_parent: bool,
    /// The changes, in order.
    pub effects: Vec<Effect>,
    /// Threads whose cached runtime is stale after this envelope (fork targets, §11.4).
    pub evict: Vec<ThreadId>,
    /// The thread's state after the envelope.
    pub next_state: ThreadState,
}

impl Acceptance {
    /// Moves a thread runtime past this envelope (after the store applied the effects).
    pub fn advance(&self, rt: &mut super::ThreadRuntime) {
        let _ = rt.dag.insert(
            self.facts.id,
            self.facts.parent,
            self.facts.created_at,
            &crate::thread::ThreadLimits::UNLIMITED,
        );
        rt.state = self.next_state.clone();
        rt.last_event_seq = self.event_seq;
    }

    /// The events this envelope emits, in order.
    pub fn events(&self) -> impl Iterator<Item = &EventDraft> {
        self.effects.iter().filter_map(|e| match e {
            Effect::Event(ev) => Some(ev),
            _ => None,
        })
    }
}
