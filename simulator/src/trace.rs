//! The record of one run, shared by every host of the simulation (turmoil runs them on one
//! thread, one after the other, so the order of lines is deterministic): the JSONL trace,
//! the acknowledged envelopes the invariants check, the directory of client keys, recorded
//! federation requests for replay faults, and violations found while the run goes on.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// An envelope a node acknowledged with 201.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    /// The node that acknowledged it.
    pub node: String,
    /// Envelope id.
    pub id: String,
    /// Thread id.
    pub thread: String,
    /// Parent id.
    pub parent: Option<String>,
    /// Sender address.
    pub sender: String,
    /// Recipient addresses (`to[]`).
    pub to: Vec<String>,
    /// `message` or `thread_op`.
    pub kind: String,
}

/// One listing of a thread by a client (`GET /v1/threads/{id}/envelopes`, v1.1 §16.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The node read.
    pub node: String,
    /// The reading user.
    pub user: String,
    /// Thread id.
    pub thread: String,
    /// Simulated ms when the request was sent.
    pub at_ms: u64,
    /// What the user knew it had written: the envelopes of the thread the node acknowledged
    /// to it (201) before the request, less those it retracted.
    pub expected: Vec<String>,
    /// The envelope ids listed, in the order listed.
    pub seen: Vec<String>,
}

/// A capability token (v1.1 §12.1) waiting for its holder to use it.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    /// `issued_to`.
    pub holder: String,
    /// `scope.thread_id`.
    pub thread: String,
    /// The signed token.
    pub token: Value,
    /// Addresses the holder should not add (the issuer and the thread's first recipients).
    pub exclude: Vec<String>,
    /// `issued_by`.
    pub issuer: String,
    /// The node the token was registered on (the issuer's).
    pub node: String,
    /// `single_use` (§12.1): one accepted use spends it.
    pub single_use: bool,
    /// A single-use token already used once (201): the next use must be refused (§12.3).
    pub spent: bool,
    /// Revoked by its issuer (§12.3, `DELETE /v1/capabilities/{id}`): a use must be refused.
    pub revoked: bool,
}

/// A violation found while the run goes on (or at quiescence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Invariant name (`delivered-once-or-failed`, …).
    pub invariant: String,
    /// The turmoil step at which it was seen.
    pub step: u64,
    /// Simulated milliseconds at which it was seen.
    pub at_ms: u64,
    /// What is wrong.
    pub detail: String,
}

/// A federation request as written on the wire, kept for replay faults.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The sending node.
    pub from: String,
    /// The host dialled (address literal).
    pub to: String,
    /// The request bytes.
    pub bytes: Vec<u8>,
}

/// What every host of one run shares.
#[derive(Debug, Default)]
pub struct Record {
    lines: Vec<String>,
    /// Acknowledged envelopes in acknowledgement order.
    pub acks: Vec<Ack>,
    /// Client identities: address → verifying key.
    pub keys: BTreeMap<String, ed25519_dalek::VerifyingKey>,
    /// Recorded deliveries (bounded).
    pub captured: Vec<Captured>,
    /// Envelopes their sender retracted (200 to `DELETE /v1/envelopes/{id}`).
    pub retracted: std::collections::BTreeSet<String>,
    /// Capability tokens issued and not yet used, handed from the issuing client host to
    /// the holder's (out of band, as a token travels by mail or chat).
    pub grants: Vec<Grant>,
    /// Thread id → its `cap_epoch` as the owner's revocations advanced it (§12.3): tokens
    /// issued later carry it as `epoch`.
    pub cap_epochs: BTreeMap<String, u64>,
    /// The email scenario's record (`[mail]`): what the outside mail host sent and received.
    pub mail: MailRecord,
    /// What each WebSocket watcher (`[realtime]`) received.
    pub watchers: Vec<WatchRecord>,
    /// What the agents and their human did (`[agents]`).
    pub agents: crate::agents::AgentsRecord,
    /// Nodes that crashed at least once during the run.
    pub crashed: std::collections::BTreeSet<String>,
    /// Thread listings the clients read (`[workload] read_ratio`), for `history`.
    pub reads: Vec<Read>,
    /// Nodes whose last boot refused to start while their disk had a fault switched on:
    /// the controller starts them again once the disk is healthy.
    pub refused_boots: std::collections::BTreeSet<String>,
    /// Violations seen during the run.
    pub violations: Vec<Violation>,
    /// The current turmoil step (the controller updates it).
    pub step: u64,
}

/// What the outside mail host meant an inbound message to be (v1.1 §21.2, §21.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailKind {
    /// From the authenticated domain: delivered, not quarantined.
    Authentic,
    /// From a `p=reject` domain it cannot authenticate for: refused.
    Forged,
    /// From a domain without records: delivered labelled `sys.quarantine`.
    Unknown,
}

/// How the bridge answered an inbound message in the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MailOutcome {
    /// `250` to DATA.
    Accepted,
    /// A `5xx` (the reply line).
    Refused(String),
    /// No final answer after every attempt (connection lost, timeouts, `4xx`).
    GaveUp,
}

/// One message the outside mail host sent to the bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailIn {
    /// Its Message-ID (without brackets).
    pub message_id: String,
    /// What it is.
    pub kind: MailKind,
    /// The local recipients it was sent to (`loom://` addresses).
    pub to: Vec<String>,
    /// The final answer.
    pub outcome: MailOutcome,
    /// SMTP attempts made.
    pub attempts: u32,
}

/// One message the outside mail host's sink received from the bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailArrived {
    /// The SMTP recipient.
    pub rcpt: String,
    /// Its Message-ID.
    pub message_id: String,
    /// Its `X-LOOM-Envelope-ID`.
    pub envelope_id: String,
}

/// The email scenario's record.
#[derive(Debug, Clone, Default)]
pub struct MailRecord {
    /// The node running the bridge (empty without `[mail]`).
    pub node: String,
    /// Inbound messages in the order sent.
    pub sent: Vec<MailIn>,
    /// Outbound messages the sink accepted, in arrival order.
    pub arrived: Vec<MailArrived>,
}

/// What one WebSocket watcher saw (v1.1 §17).
#[derive(Debug, Clone, Default)]
pub struct WatchRecord {
    /// The watcher's host name.
    pub host: String,
    /// Its node's domain.
    pub node: String,
    /// The identity it watched as.
    pub identity: String,
    /// The position its first subscription started after (the `cursor` of its first
    /// `subscribed` frame).
    pub start: Option<i64>,
    /// Every event frame received, in arrival order: (event_id, cursor, thread).
    pub frames: Vec<(String, i64, Option<String>)>,
    /// How many times it connected.
    pub sessions: u64,
}

/// Most recorded deliveries kept for replays.
pub const MAX_CAPTURED: usize = 64;

impl Record {
    /// Appends a trace line `{t, kind, …fields}`.
    pub fn line(&mut self, kind: &str, mut fields: Value) {
        let t = turmoil::sim_elapsed()
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        self.line_at(t, kind, &mut fields);
    }

    /// Appends a trace line at simulated time `t_ms` (the controller's view).
    pub fn line_at(&mut self, t_ms: u64, kind: &str, fields: &mut Value) {
        let mut obj = json!({"t": t_ms, "step": self.step, "kind": kind});
        if let (Some(o), Some(f)) = (obj.as_object_mut(), fields.as_object_mut()) {
            o.append(f);
        }
        self.lines.push(obj.to_string());
    }

    /// Records a violation (and a trace line for it).
    pub fn violation(&mut self, invariant: &str, at_ms: u64, detail: String) {
        let mut f = json!({"invariant": invariant, "detail": detail});
        self.line_at(at_ms, "violation", &mut f);
        self.violations.push(Violation {
            invariant: invariant.into(),
            step: self.step,
            at_ms,
            detail,
        });
    }

    /// The trace as JSONL.
    pub fn jsonl(&self) -> String {
        let mut out = String::new();
        for l in &self.lines {
            out.push_str(l);
            out.push('\n');
        }
        out
    }

    /// Lines so far.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether the trace is empty.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// The hex SHA-256 of a trace.
pub fn trace_hash(jsonl: &str) -> String {
    hex::encode(Sha256::digest(jsonl.as_bytes()))
}

/// A short hex digest of bytes (trace lines carry digests, not bodies).
pub fn short_hash(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..8])
}

/// What a client exchange records in the trace: the status and a digest of the answer, or
/// status 0 and the transport error.
pub fn outcome<E: std::fmt::Display>(
    exchange: &Result<loom_client::Transcript, E>,
) -> (u16, String) {
    match exchange {
        Ok(t) => (t.status, short_hash(&t.response_body)),
        Err(e) => (0, e.to_string()),
    }
}

/// The shared record.
#[derive(Debug, Clone, Default)]
pub struct Shared(Arc<Mutex<Record>>);

impl Shared {
    /// Locks the record (a poisoned lock still holds a usable record).
    pub fn lock(&self) -> MutexGuard<'_, Record> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
