//! The §25.1 audit log: append-only and hash-chained, so editing or deleting any row breaks
//! the chain at that row. `hash = hex(SHA-256(prev_hash ‖ "\n" ‖ JCS({seq, at, actor, action,
//! subject, details})))`, with `prev_hash` of the first row 64 zeros.

use super::Cached;
use loom_protocol::jcs::to_canonical_bytes;
use rusqlite::{Connection, params};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The `prev_hash` of the first row.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One audit entry before it is chained.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry<'a> {
    /// When (RFC 3339).
    pub at: &'a str,
    /// Who acted (`loom://…`, `node`, or `anonymous`).
    pub actor: &'a str,
    /// What kind of event (`envelope.accepted`, `identity.registered`, …).
    pub action: &'a str,
    /// What it concerned (an id).
    pub subject: &'a str,
    /// Hashes and small facts; never message content (§25.2).
    pub details: Value,
}

fn row_hash(prev: &str, seq: i64, e: &AuditEntry<'_>) -> String {
    let body = json!({"seq": seq, "at": e.at, "actor": e.actor, "action": e.action,
        "subject": e.subject, "details": e.details});
    let mut h = Sha256::new();
    h.update(prev.as_bytes());
    h.update(b"\n");
    h.update(to_canonical_bytes(&body));
    hex::encode(h.finalize())
}

/// The last row of the chain.
pub const SELECT_HEAD: &str =
    "SELECT seq, hash FROM audit_log WHERE seq = (SELECT MAX(seq) FROM audit_log)";
const INSERT: &str =
    "INSERT INTO audit_log (seq, at, actor, action, subject, details, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

/// Appends an entry inside the caller's transaction.
pub fn append(conn: &Connection, e: &AuditEntry<'_>) -> rusqlite::Result<()> {
    let last: Option<(i64, String)> = conn
        .row(SELECT_HEAD, [], |r| Ok((r.get(0)?, r.get(1)?)))
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })?;
    let (seq, prev) = match last {
        Some((s, h)) => (s + 1, h),
        None => (1, GENESIS.to_owned()),
    };
    let hash = row_hash(&prev, seq, e);
    conn.exec(
        INSERT,
        params![
            seq,
            e.at,
            e.actor,
            e.action,
            e.subject,
            e.details.to_string(),
            prev,
            hash
        ],
    )?;
    Ok(())
}

/// What `verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditVerdict {
    /// Every row chains; `rows` entries checked.
    Intact {
        /// Number of rows.
        rows: u64,
    },
    /// The first broken row and why.
    Broken {
        /// Sequence number where the chain breaks.
        seq: i64,
        /// What is wrong there.
        reason: String,
    },
}

/// Walks the whole chain: sequence numbers must be 1, 2, 3, … (a deleted row leaves a gap),
/// each `prev_hash` must equal the previous row's hash, and each hash must recompute.
pub fn verify(conn: &Connection) -> rusqlite::Result<AuditVerdict> {
    let mut stmt = conn.prepare(
        "SELECT seq, at, actor, action, subject, details, prev_hash, hash FROM audit_log ORDER BY seq",
    )?;
    let mut rows = stmt.query([])?;
    let mut expected_seq = 1i64;
    let mut prev = GENESIS.to_owned();
    while let Some(r) = rows.next()? {
        let seq: i64 = r.get(0)?;
        let (at, actor, action, subject): (String, String, String, String) =
            (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
        let details_text: String = r.get(5)?;
        let (prev_hash, hash): (String, String) = (r.get(6)?, r.get(7)?);
        let broken = |reason: String| Ok(AuditVerdict::Broken { seq, reason });
        if seq != expected_seq {
            return broken(format!(
                "expected row {expected_seq}, found {seq}: rows were deleted"
            ));
        }
        if prev_hash != prev {
            return broken("prev_hash does not match the previous row's hash".into());
        }
        let Ok(details) = serde_json::from_str::<Value>(&details_text) else {
            return broken("details are not JSON".into());
        };
        let entry = AuditEntry {
            at: &at,
            actor: &actor,
            action: &action,
            subject: &subject,
            details,
        };
        if row_hash(&prev, seq, &entry) != hash {
            return broken("row content does not match its hash: the row was edited".into());
        }
        prev = hash;
        expected_seq += 1;
    }
    Ok(AuditVerdict::Intact {
        rows: u64::try_from(expected_seq - 1).unwrap_or(0),
    })
}
