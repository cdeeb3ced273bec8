//! A read-only view of a node's store for observers (issue 31): the simulator's invariant
//! checkers and tests read a node through this, never through its schema. Everything here
//! opens the store read-only and changes nothing; the SQL lives in `store::inspect`.

use crate::store::audit::AuditVerdict;
use crate::store::inspect as q;
use ed25519_dalek::VerifyingKey;
use rusqlite::Connection;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A read-only handle on the store in a node's data directory. Each call reads the last
/// commit (a new read transaction); keep the handle to avoid re-parsing the schema.
pub struct Inspector {
    conn: Connection,
}

impl std::fmt::Debug for Inspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inspector").finish_non_exhaustive()
    }
}

/// A stored envelope as an observer sees it.
#[derive(Debug, Clone)]
pub struct StoredEnvelope {
    /// `env_…`.
    pub id: String,
    /// `thr_…`.
    pub thread: String,
    /// The thread's event sequence number it was stored with (v1.1 §11.6).
    pub event_seq: i64,
    /// `parent_id`, if any.
    pub parent: Option<String>,
    /// Hex SHA-256 of the stored body.
    pub body_sha256: String,
    /// The stored body (absent once its content was erased, §25.2).
    pub body: Option<Value>,
    /// `type`.
    pub kind: String,
}

/// One federation outbox row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRow {
    /// `queued`, `delivered` or `failed`.
    pub state: String,
    /// The last failure's reason, if any.
    pub last_failure: Option<String>,
}

/// A thread's status and its active participants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadView {
    /// `active`, `resolved`, …
    pub status: String,
    /// Active participants as `identity/role`.
    pub participants: BTreeSet<String>,
}

/// Everything an end-of-run checker reads of one node.
#[derive(Debug)]
pub struct Snapshot {
    /// Envelopes in commit order.
    pub envelopes: Vec<StoredEnvelope>,
    /// Envelope id → index in [`Snapshot::envelopes`].
    pub by_id: BTreeMap<String, usize>,
    /// (destination, envelope id) → its outbox row.
    pub outbox: BTreeMap<(String, String), OutboxRow>,
    /// (`bridge://` recipient, envelope id) → its outbound mail row (v1.1 §21.3).
    pub mail_outbox: BTreeMap<(String, String), OutboxRow>,
    /// Thread id → its view.
    pub threads: BTreeMap<String, ThreadView>,
    /// The node's signing keys.
    pub node_keys: Vec<VerifyingKey>,
    /// The audit log verified against the store's anchors, or why it could not be read.
    pub audit: Result<AuditVerdict, String>,
}

impl Inspector {
    /// Opens the store in `dir` read-only; `None` when there is none.
    pub fn open(dir: &Path) -> Option<Inspector> {
        q::open_read_only(dir).map(|conn| Inspector { conn })
    }

    /// (queued outbox deliveries, stored envelopes); `-1` for a count that could not be read.
    pub fn counts(&self) -> (i64, i64) {
        q::counts(&self.conn)
    }

    /// What SQLite's `PRAGMA integrity_check` finds wrong with the store (empty: sound).
    pub fn integrity(&self) -> Result<Vec<String>, String> {
        q::integrity(&self.conn).map_err(|e| e.to_string())
    }

    /// The events `identity` may read at positions `(after, upto]` of the event log (v1.1
    /// §16.8, §17): `(position, event id, thread)`, in order.
    pub fn events_for(
        &self,
        identity: &str,
        after: i64,
        upto: i64,
    ) -> Result<Vec<(i64, String, Option<String>)>, String> {
        q::events_for(&self.conn, identity, after, upto).map_err(|e| e.to_string())
    }

    /// Reads everything the invariant checkers need.
    pub fn snapshot(&self) -> Result<Snapshot, String> {
        let c = &self.conn;
        let e = |e: rusqlite::Error| e.to_string();
        let envelopes: Vec<StoredEnvelope> = q::envelopes(c)
            .map_err(e)?
            .into_iter()
            .map(
                |(id, thread, event_seq, parent, sha, body, kind)| StoredEnvelope {
                    id,
                    thread,
                    event_seq,
                    parent,
                    body_sha256: sha,
                    body: body.and_then(|b| serde_json::from_str(&b).ok()),
                    kind,
                },
            )
            .collect();
        let by_id = envelopes
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.clone(), i))
            .collect();
        let rows = |v: Vec<q::OutboxRow>| -> BTreeMap<(String, String), OutboxRow> {
            v.into_iter()
                .map(|(d, id, state, last_failure)| {
                    (
                        (d, id),
                        OutboxRow {
                            state,
                            last_failure,
                        },
                    )
                })
                .collect()
        };
        let mail_outbox = rows(q::mail_outbox(c).map_err(e)?);
        let outbox = rows(q::outbox(c).map_err(e)?);
        let mut threads: BTreeMap<String, ThreadView> = q::threads(c)
            .map_err(e)?
            .into_iter()
            .map(|(id, status)| {
                (
                    id,
                    ThreadView {
                        status,
                        participants: BTreeSet::new(),
                    },
                )
            })
            .collect();
        for (t, who, role) in q::active_participants(c).map_err(e)? {
            if let Some(v) = threads.get_mut(&t) {
                v.participants.insert(format!("{who}/{role}"));
            }
        }
        let node_keys = q::node_public_keys(c)
            .map_err(e)?
            .iter()
            .filter_map(|k| loom_protocol::keys::public_key_from_any(k).ok())
            .collect();
        Ok(Snapshot {
            envelopes,
            by_id,
            outbox,
            mail_outbox,
            threads,
            node_keys,
            audit: q::audit(c).map_err(e),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Storage;
    use crate::store::Store;

    #[test]
    fn a_directory_without_a_store_has_nothing_to_inspect() {
        let dir = std::env::temp_dir().join(format!("loom-inspect-none-{}", std::process::id()));
        assert!(Inspector::open(&dir).is_none());
    }

    #[test]
    fn a_fresh_store_reads_empty_and_intact() {
        let dir = std::env::temp_dir().join(format!("loom-inspect-fresh-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&Storage::Dir(dir.clone())).expect("store");
        let i = Inspector::open(&dir).expect("a store");
        assert_eq!(i.counts(), (0, 0));
        let s = i.snapshot().expect("snapshot");
        assert!(s.envelopes.is_empty() && s.outbox.is_empty() && s.threads.is_empty());
        assert!(
            matches!(s.audit, Ok(AuditVerdict::Intact { .. })),
            "{:?}",
            s.audit
        );
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
