//! Applying an [`Acceptance`] (loom-protocol's decision) inside the writer's transaction,
//! and the [`AcceptView`] the decision reads: the writer's connection (which sees the
//! batch's earlier envelopes) plus the thread runtimes the writer holds.

use super::audit::{self, AuditEntry};
use super::batch::Deferred;
use super::resolvers::StoreResolver;
use super::{Cached, envelopes, events, threads};
use ed25519_dalek::VerifyingKey;
use loom_protocol::Address;
use loom_protocol::accept::{AcceptView, Acceptance, Effect, TaskRecord, ThreadRuntime};
use loom_protocol::capability::CapabilityResolver;
use loom_protocol::id::{CapabilityId, EnvelopeId, ThreadId};
use loom_protocol::task::TaskState;
use loom_protocol::thread::ThreadState;
use rusqlite::{Connection, OptionalExtension, params};

/// Marks a single-use token spent.
pub const SPEND_CAPABILITY: &str = "UPDATE capabilities SET spent_at = ?2 WHERE id = ?1";
const INSERT_SPENT_CAPABILITY: &str = "INSERT INTO capabilities (id, thread_id, issued_by, issued_to, epoch, single_use, document, created_at, spent_at) VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?7)";
/// Marks a token revoked.
pub const REVOKE_CAPABILITY: &str =
    "UPDATE capabilities SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL";
/// The holder of a stored token.
pub const CAPABILITY_HOLDER: &str = "SELECT issued_to FROM capabilities WHERE id = ?1";
/// Marks a delegation link revoked.
pub const REVOKE_DELEGATION: &str =
    "UPDATE delegations SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL";
const REVOKE_DELEGATION_PAIR: &str = "INSERT OR REPLACE INTO delegation_revocations (delegator, delegate, revoked_at) VALUES (?1, ?2, ?3)";
const INSERT_TASK: &str = "INSERT INTO tasks (id, thread_id, creator, assignee, state, updated_at) VALUES (?1, ?2, ?3, ?4, 'created', ?5)";
/// A task by id.
pub const SELECT_TASK: &str = "SELECT thread_id, creator, assignee, state FROM tasks WHERE id = ?1";
/// Moves a task.
pub const UPDATE_TASK: &str =
    "UPDATE tasks SET state = ?2, assignee = ?3, updated_at = ?4 WHERE id = ?1";

/// Applies every effect of `a` in order. `now`: the receipt time; `event_id`: a fresh event
/// id for each appended event; search rows go to `search`, for the group to write after its
/// last savepoint ([`Deferred`]). Returns the stored document's text (its `body` row) when
/// `a` stored the envelope.
pub fn apply(
    conn: &Connection,
    a: &Acceptance,
    now: &str,
    event_id: &mut dyn FnMut() -> String,
    search: &mut Deferred,
) -> rusqlite::Result<Option<String>> {
    let f = &a.facts;
    let mut stored = None;
    let seq = i64::try_from(a.event_seq).unwrap_or(i64::MAX);
    for effect in &a.effects {
        match effect {
            Effect::CapabilitySpent {
                id,
                thread,
                issued_by,
                issued_to,
                epoch,
                token,
            } => {
                // §12.5: spent on first use, whether or not the token was ever stored here.
                if conn.exec(SPEND_CAPABILITY, params![id, now])? == 0 {
                    conn.exec(
                        INSERT_SPENT_CAPABILITY,
                        params![
                            id,
                            thread.to_string(),
                            issued_by,
                            issued_to,
                            epoch,
                            token.to_string(),
                            now
                        ],
                    )?;
                }
            }
            Effect::CapabilityRevoked { id } => {
                conn.exec(REVOKE_CAPABILITY, params![id, now])?;
            }
            Effect::DelegationRevoked { id, pair } => {
                if let Some(id) = id {
                    conn.exec(REVOKE_DELEGATION, params![id, now])?;
                }
                if let Some((delegator, delegate)) = pair {
                    conn.exec(REVOKE_DELEGATION_PAIR, params![delegator, delegate, now])?;
                }
            }
            Effect::PutOtherThread { state, create } => {
                threads::put_other(conn, state, *create, now)?
            }
            Effect::TaskCreated {
                id,
                thread,
                creator,
                assignee,
            } => {
                conn.exec(
                    INSERT_TASK,
                    params![
                        id.to_string(),
                        thread.to_string(),
                        creator.to_string(),
                        assignee,
                        now
                    ],
                )?;
            }
            Effect::TaskMoved {
                id,
                state,
                assignee,
            } => {
                conn.exec(UPDATE_TASK, params![id, state.as_str(), assignee, now])?;
            }
            Effect::PutWorkflow { run, fresh } => super::workflows::put(conn, run, *fresh, now)?,
            Effect::PutThread {
                state,
                fresh,
                state_changed,
            } => threads::put(conn, state, *fresh, *state_changed, seq, now)?,
            Effect::IndexThread { state, fresh } => threads::index(conn, state, *fresh, now)?,
            Effect::SearchThread { state, fresh } => search.thread(state, *fresh),
            Effect::PutEnvelope {
                readers,
                signed_hash,
            } => {
                let text = a.envelope.to_string();
                envelopes::insert(
                    conn,
                    &envelopes::NewEnvelope {
                        id: &f.id,
                        thread: &f.thread,
                        event_seq: seq,
                        parent: f.parent.as_ref(),
                        kind: &f.kind,
                        intent: f.intent(),
                        sender: &f.sender,
                        created_at: a.envelope.get("created_at").and_then(|v| v.as_str()),
                        received_at: now,
                        body: &text,
                        body_sha256: signed_hash,
                    },
                    readers,
                )?;
                stored = Some(text);
            }
            Effect::IndexEnvelope {
                text,
                intent,
                parameters,
            } => search.envelope(f.id, f.thread, text, intent, parameters),
            Effect::Event(e) => {
                let id = event_id();
                events::append(
                    conn,
                    &events::NewEvent {
                        id: &id,
                        kind: e.kind,
                        thread: e.thread.as_ref(),
                        envelope: e.envelope.as_ref(),
                        payload: &e.payload,
                        at: now,
                        readers: &e.readers,
                    },
                )?;
            }
            Effect::Audit(e) => audit::append(
                conn,
                &AuditEntry {
                    at: now,
                    actor: &e.actor,
                    action: e.action,
                    subject: &e.subject,
                    details: e.details.clone(),
                },
            )?,
        }
    }
    Ok(stored)
}

/// What the writer knows: its connection inside the batch transaction and the runtime of
/// the envelope's thread (`None`: the thread does not exist).
#[derive(Debug)]
pub struct WriterView<'a> {
    /// The writer connection (inside the batch transaction).
    pub conn: &'a Connection,
    /// The thread the envelope names, as the writer holds it.
    pub thread: Option<&'a ThreadRuntime>,
}

impl WriterView<'_> {
    fn resolver(&self) -> StoreResolver<'_> {
        StoreResolver {
            conn: self.conn,
            thread: None,
        }
    }
}

impl CapabilityResolver for WriterView<'_> {
    fn signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.resolver().signing_key(identity, key_id)
    }
    fn pop_key(&self, holder: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.resolver().pop_key(holder, key_id)
    }
    fn may_issue(&self, _issuer: &Address, _thread: &ThreadId) -> bool {
        false
    }
    fn is_revoked(&self, id: &CapabilityId) -> bool {
        CapabilityResolver::is_revoked(&self.resolver(), id)
    }
    fn is_spent(&self, id: &CapabilityId) -> bool {
        self.resolver().is_spent(id)
    }
}

impl AcceptView for WriterView<'_> {
    fn is_stored(&self, id: &EnvelopeId) -> bool {
        // A failed lookup reads as "stored": the envelope is refused, never duplicated.
        envelopes::exists(self.conn, id).unwrap_or(true)
    }

    fn thread(&self, id: &ThreadId) -> Option<&ThreadRuntime> {
        self.thread.filter(|rt| rt.state.id == *id)
    }

    fn stored_thread(&self, id: &ThreadId) -> Option<ThreadState> {
        threads::stored_state(self.conn, id).ok().flatten()
    }

    fn task(&self, id: &str) -> Option<TaskRecord> {
        let row: Option<(String, String, Option<String>, String)> = self
            .conn
            .row(SELECT_TASK, [id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()
            .ok()
            .flatten();
        let (thread, creator, assignee, state) = row?;
        Some(TaskRecord {
            thread: ThreadId::parse(&thread).ok()?,
            creator,
            assignee,
            state: TaskState::parse(&state)?,
        })
    }

    fn workflow(&self, id: &str) -> Option<loom_protocol::workflow::WorkflowRun> {
        super::workflows::get(self.conn, id).ok().flatten()
    }

    fn capability_holder(&self, id: &str) -> Option<String> {
        self.conn
            .row(CAPABILITY_HOLDER, [id], |r| r.get(0))
            .optional()
            .ok()
            .flatten()
    }
}
