//! The §25.1 audit log: append-only and hash-chained, so editing or deleting any row breaks
//! the chain at that row. `hash = hex(SHA-256(prev_hash ‖ "\n" ‖ JCS({seq, at, actor, action,
//! subject, details})))`, with `prev_hash` of the first row 64 zeros.
//!
//! A chain alone cannot show rows cut from its end (issue 19), so it is anchored twice:
//! the high-water mark (`audit_anchor`, raised with every append: sequence numbers are never
//! reused, and rows missing above the last one show) and a [`Checkpoint`] the node signs with
//! its node key at intervals and on shutdown, kept in a file beside the database
//! ([`CHECKPOINT_FILE`]; node README, "Audit log").

use super::Cached;
use ed25519_dalek::SigningKey;
use loom_protocol::jcs::to_canonical_bytes;
use loom_protocol::keys::{SigContext, public_key_from_b64url, sign_b64url, signature_from_b64url};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::Path;

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

const HIGH_WATER: &str = "SELECT high_water FROM audit_anchor WHERE id = 1";
const RAISE_HIGH_WATER: &str = "UPDATE audit_anchor SET high_water = ?1 WHERE id = 1";

/// Appends an entry inside the caller's transaction. Its sequence number is one above both
/// the last row and the high-water mark, so numbers of deleted rows are never handed out again.
pub fn append(conn: &Connection, e: &AuditEntry<'_>) -> rusqlite::Result<()> {
    let last: Option<(i64, String)> = conn
        .row(SELECT_HEAD, [], |r| Ok((r.get(0)?, r.get(1)?)))
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })?;
    let high_water: i64 = conn.row(HIGH_WATER, [], |r| r.get(0))?;
    let (seq, prev) = match last {
        Some((s, h)) => (s.max(high_water) + 1, h),
        None => (high_water + 1, GENESIS.to_owned()),
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
    conn.exec(RAISE_HIGH_WATER, [seq])?;
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

/// Verifies the log against the database's own anchors: [`walk`] the chain, then the
/// high-water mark must equal the last row (higher: rows were cut from the end), and every
/// stored envelope must have its `envelope.accepted` row.
pub fn verify(conn: &Connection) -> rusqlite::Result<AuditVerdict> {
    let verdict = walk(conn)?;
    let AuditVerdict::Intact { .. } = verdict else {
        return Ok(verdict);
    };
    let last: i64 = conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM audit_log", [], |r| {
        r.get(0)
    })?;
    let high_water: i64 = conn.query_row(HIGH_WATER, [], |r| r.get(0))?;
    if high_water > last {
        return Ok(AuditVerdict::Broken {
            seq: last + 1,
            reason: format!(
                "rows {}..={high_water} are missing from the end of the log (tail truncation): \
                 the high-water mark is {high_water}",
                last + 1
            ),
        });
    }
    if high_water < last {
        return Ok(AuditVerdict::Broken {
            seq: last,
            reason: format!(
                "the high-water mark {high_water} is below the last row {last}: the anchor was edited"
            ),
        });
    }
    let unaudited: Option<String> = conn
        .query_row(
            "SELECT e.id FROM envelopes e WHERE NOT EXISTS (SELECT 1 FROM audit_log a
                 WHERE a.subject = e.id AND a.action = 'envelope.accepted') ORDER BY e.id LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = unaudited {
        return Ok(AuditVerdict::Broken {
            seq: 0,
            reason: format!("envelope {id} is stored but has no envelope.accepted audit row"),
        });
    }
    Ok(verdict)
}

/// Walks the whole chain: sequence numbers must be 1, 2, 3, … (a deleted row leaves a gap),
/// each `prev_hash` must equal the previous row's hash, and each hash must recompute.
pub fn walk(conn: &Connection) -> rusqlite::Result<AuditVerdict> {
    walk_from(conn, 0, GENESIS)
}

/// [`walk`] over the rows after row `after`, whose hash is `after_hash`; `Intact { rows }`
/// counts the rows walked.
fn walk_from(conn: &Connection, after: i64, after_hash: &str) -> rusqlite::Result<AuditVerdict> {
    let mut stmt = conn.prepare(
        "SELECT seq, at, actor, action, subject, details, prev_hash, hash FROM audit_log
             WHERE seq > ?1 ORDER BY seq",
    )?;
    let mut rows = stmt.query([after])?;
    let mut expected_seq = after + 1;
    let mut prev = after_hash.to_owned();
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
        rows: u64::try_from(expected_seq - 1 - after).unwrap_or(0),
    })
}

/// The checkpoint file beside `loom.db`.
pub const CHECKPOINT_FILE: &str = "audit-checkpoint.json";
/// The `type` of a checkpoint.
pub const CHECKPOINT_TYPE: &str = "loom.audit.checkpoint@v1";
/// Domain separation for checkpoint signatures (as v1.1 §7.3 does for envelopes).
pub const CHECKPOINT_CONTEXT: SigContext = SigContext("LOOM-AUDIT-CHECKPOINT-v1");

/// A signed statement of the log's head: "row `seq` has hash `head_hash` and the log held
/// `rows` rows at `at`", signed with the node key `key_id` over the RFC 8785 form of every
/// other member, under [`CHECKPOINT_CONTEXT`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// [`CHECKPOINT_TYPE`].
    #[serde(rename = "type")]
    pub kind: String,
    /// The node's domain.
    pub node_id: String,
    /// The last row's sequence number (0: empty log).
    pub seq: i64,
    /// Its hash ([`GENESIS`] for an empty log).
    pub head_hash: String,
    /// Rows in the log.
    pub rows: i64,
    /// When it was made (RFC 3339, the node's clock).
    pub at: String,
    /// The node key that signed.
    pub key_id: String,
    /// base64url Ed25519 signature.
    pub signature: String,
}

impl Checkpoint {
    /// The signed bytes: RFC 8785 form without `signature`.
    fn payload(&self) -> Vec<u8> {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(o) = v.as_object_mut() {
            o.remove("signature");
        }
        to_canonical_bytes(&v)
    }

    /// The head of the log in `conn`, signed.
    pub fn sign(
        conn: &Connection,
        node_id: &str,
        at: &str,
        key_id: &str,
        key: &SigningKey,
    ) -> rusqlite::Result<Checkpoint> {
        let head: Option<(i64, String)> = conn
            .row(SELECT_HEAD, [], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let rows: i64 = conn.query_row("SELECT COUNT(*) FROM audit_log", [], |r| r.get(0))?;
        let (seq, head_hash) = head.unwrap_or((0, GENESIS.to_owned()));
        let mut c = Checkpoint {
            kind: CHECKPOINT_TYPE.into(),
            node_id: node_id.into(),
            seq,
            head_hash,
            rows,
            at: at.into(),
            key_id: key_id.into(),
            signature: String::new(),
        };
        c.signature = sign_b64url(key, Some(CHECKPOINT_CONTEXT), &c.payload());
        Ok(c)
    }

    /// Reads `dir`'s checkpoint; `Ok(None)` when there is none.
    pub fn read(dir: &Path) -> Result<Option<Checkpoint>, String> {
        let path = dir.join(CHECKPOINT_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| format!("{}: not a checkpoint: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// Replaces `dir`'s checkpoint atomically (temporary file, fsync, rename, fsync of the
    /// directory): a crash leaves the old checkpoint or the new one.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        use std::io::Write;
        let tmp = dir.join(format!("{CHECKPOINT_FILE}.tmp"));
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
        std::fs::rename(&tmp, dir.join(CHECKPOINT_FILE))?;
        std::fs::File::open(dir)?.sync_all()
    }
}

/// [`verify_at_start`] for the store in `dir`, as the node runs it before it starts: `Err`
/// with what is wrong, the section and the commands to inspect and, after review, re-anchor.
pub fn check_at_start(store: &super::Store, dir: &Path) -> Result<(), String> {
    let cp = Checkpoint::read(dir)?;
    let verdict = verify_at_start(&store.read(), cp.as_ref())
        .map_err(|e| format!("cannot read the audit log in {}: {e}", dir.display()))?;
    match verdict {
        AuditVerdict::Intact { .. } => Ok(()),
        AuditVerdict::Broken { seq, reason } => {
            let at = if seq > 0 {
                format!(" at row {seq}")
            } else {
                String::new()
            };
            Err(format!(
                "the audit log in {dir} does not match its signed checkpoint{at}: {reason} \
                 (v1.1 §25.1). The node will not start and sign a new checkpoint over it. \
                 Inspect it with `loom-node audit verify --data {dir}`; after review, \
                 `loom-node audit anchor --data {dir}` records the re-anchoring in the log and \
                 signs its head as it is.",
                dir = dir.display()
            ))
        }
    }
}

/// `loom-node audit anchor`: the operator's explicit re-anchoring of the log in `dir` after
/// reviewing why the node refused it. The chain must still walk (an edited or deleted row is
/// not re-anchored); an `audit.reanchored` entry naming the checkpoint it replaces goes into
/// the log, so the re-anchoring itself stays on record, then the head is signed with the
/// store's node key. `domain`: the checkpoint's `node_id` when there is no previous one.
pub fn reanchor(
    store: &super::Store,
    dir: &Path,
    domain: Option<&str>,
    at: &str,
) -> Result<Checkpoint, String> {
    let previous = Checkpoint::read(dir)?;
    let node_id = domain
        .map(str::to_owned)
        .or_else(|| previous.as_ref().map(|p| p.node_id.clone()))
        .ok_or("no checkpoint to take the node's domain from: pass --domain")?;
    let e = |e: rusqlite::Error| format!("the audit log in {}: {e}", dir.display());
    if let AuditVerdict::Broken { seq, reason } = walk(&store.read()).map_err(e)? {
        return Err(format!(
            "the chain itself is broken at row {seq}: {reason}; a log with edited or deleted \
             rows is not re-anchored (v1.1 §25.1)"
        ));
    }
    let (key_id, seed) = super::node_keys::active(store)
        .map_err(e)?
        .ok_or("the store has no active node key")?;
    let seed: [u8; 32] = hex::decode(&seed)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or("the stored node key seed is corrupt")?;
    let key = loom_protocol::keys::signing_key_from_seed(&seed);
    let tx = store.begin().map_err(e)?;
    let replaced = previous
        .as_ref()
        .map(|p| json!({"seq": p.seq, "head_hash": p.head_hash, "rows": p.rows, "at": p.at}));
    // Rows cut from the end leave the high-water mark above the last row; the chain goes on
    // from the log as it is, and the entry below says which anchor it replaced.
    tx.execute(
        "UPDATE audit_anchor SET high_water = (SELECT COALESCE(MAX(seq), 0) FROM audit_log) WHERE id = 1",
        [],
    )
    .map_err(e)?;
    append(
        &tx,
        &AuditEntry {
            at,
            actor: "operator",
            action: "audit.reanchored",
            subject: CHECKPOINT_FILE,
            details: json!({"replaces": replaced}),
        },
    )
    .map_err(e)?;
    tx.commit().map_err(e)?;
    let cp = Checkpoint::sign(&store.read(), &node_id, at, &key_id, &key).map_err(e)?;
    cp.write(dir)
        .map_err(|err| format!("{}: {err}", dir.join(CHECKPOINT_FILE).display()))?;
    Ok(cp)
}

impl super::Store {
    /// The log's head signed as a [`Checkpoint`] (read through a read connection).
    pub fn sign_audit_head(
        &self,
        node_id: &str,
        at: &str,
        key_id: &str,
        key: &SigningKey,
    ) -> rusqlite::Result<Checkpoint> {
        Checkpoint::sign(&self.read(), node_id, at, key_id, key)
    }
}

/// [`verify`], then the log against a signed checkpoint: the signature must verify with the
/// node key it names (from `node_keys`), the row it names must still be there with the same
/// hash (missing: rows were cut from the end; different: the log was rewritten), and the
/// rows up to it must number what it says.
pub fn verify_anchored(
    conn: &Connection,
    checkpoint: &Checkpoint,
) -> rusqlite::Result<AuditVerdict> {
    if let Some(broken) = checkpoint_unsigned(conn, checkpoint)? {
        return Ok(broken);
    }
    let verdict = walk(conn)?;
    let AuditVerdict::Intact { .. } = verdict else {
        return Ok(verdict);
    };
    if let Some(broken) = checkpoint_mismatch(conn, checkpoint)? {
        return Ok(broken);
    }
    verify(conn)
}

/// Why `cp` is not a checkpoint of this store, if it is not: its signature must verify with
/// the node key it names (from `node_keys`).
fn checkpoint_unsigned(
    conn: &Connection,
    cp: &Checkpoint,
) -> rusqlite::Result<Option<AuditVerdict>> {
    let broken = |seq: i64, reason: String| Ok(Some(AuditVerdict::Broken { seq, reason }));
    let public: Option<String> = conn
        .query_row(
            "SELECT public_key FROM node_keys WHERE key_id = ?1",
            [&cp.key_id],
            |r| r.get(0),
        )
        .optional()?;
    let signed = public
        .as_deref()
        .and_then(|p| public_key_from_b64url(p).ok())
        .zip(signature_from_b64url(&cp.signature).ok())
        .is_some_and(|(k, sig)| {
            k.verify_strict(&CHECKPOINT_CONTEXT.message(&cp.payload()), &sig)
                .is_ok()
        });
    if cp.kind != CHECKPOINT_TYPE || !signed {
        return broken(
            cp.seq,
            format!(
                "the checkpoint of {} is not signed by node key {} of this store",
                cp.at, cp.key_id
            ),
        );
    }
    Ok(None)
}

/// Why the log in `conn` does not match the signed checkpoint `cp`, if it does not: the row it
/// names must still be there with the same hash (missing: rows were cut from the end;
/// different: the log was rewritten), and the rows up to it must number what it says.
fn checkpoint_mismatch(
    conn: &Connection,
    cp: &Checkpoint,
) -> rusqlite::Result<Option<AuditVerdict>> {
    let broken = |seq: i64, reason: String| Ok(Some(AuditVerdict::Broken { seq, reason }));
    let last: i64 = conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM audit_log", [], |r| {
        r.get(0)
    })?;
    if last < cp.seq {
        return broken(
            last + 1,
            format!(
                "the signed checkpoint of {} names row {}, but the log ends at row {last}: \
                 rows were cut from the end (tail truncation)",
                cp.at, cp.seq
            ),
        );
    }
    if cp.seq > 0 {
        let hash: Option<String> = conn
            .query_row("SELECT hash FROM audit_log WHERE seq = ?1", [cp.seq], |r| {
                r.get(0)
            })
            .optional()?;
        if hash.as_deref() != Some(cp.head_hash.as_str()) {
            return broken(
                cp.seq,
                format!(
                    "row {} differs from the signed checkpoint of {}: the log was rewritten",
                    cp.seq, cp.at
                ),
            );
        }
    }
    let rows: i64 = conn.query_row(
        "SELECT COUNT(*) FROM audit_log WHERE seq <= ?1",
        [cp.seq],
        |r| r.get(0),
    )?;
    if rows != cp.rows {
        return broken(
            cp.seq,
            format!(
                "{rows} rows up to row {}, the signed checkpoint of {} says {}",
                cp.seq, cp.at, cp.rows
            ),
        );
    }
    Ok(None)
}

/// What a node checks before it starts on a durable store (v1.1 §25.1; issue 36): the log
/// matches its last signed checkpoint `cp` and every row after it chains on, up to the
/// high-water mark. A non-empty log without a checkpoint is refused: nothing anchors it.
/// Costs the rows after the checkpoint, not the whole log; rows before it are bound by the
/// signed head (`loom-node audit verify` walks them all).
pub fn verify_at_start(
    conn: &Connection,
    cp: Option<&Checkpoint>,
) -> rusqlite::Result<AuditVerdict> {
    let rows: i64 = conn.query_row("SELECT COUNT(*) FROM audit_log", [], |r| r.get(0))?;
    let Some(cp) = cp else {
        if rows == 0 {
            return Ok(AuditVerdict::Intact { rows: 0 });
        }
        return Ok(AuditVerdict::Broken {
            seq: 0,
            reason: format!(
                "the log holds {rows} rows but there is no signed checkpoint ({CHECKPOINT_FILE}) \
                 to anchor them"
            ),
        });
    };
    if let Some(broken) = checkpoint_unsigned(conn, cp)?.or(checkpoint_mismatch(conn, cp)?) {
        return Ok(broken);
    }
    let tail = walk_from(conn, cp.seq, &cp.head_hash)?;
    let AuditVerdict::Intact { .. } = tail else {
        return Ok(tail);
    };
    let last: i64 = conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM audit_log", [], |r| {
        r.get(0)
    })?;
    let high_water: i64 = conn.query_row(HIGH_WATER, [], |r| r.get(0))?;
    if high_water != last {
        return Ok(AuditVerdict::Broken {
            seq: last.min(high_water) + 1,
            reason: format!(
                "the high-water mark is {high_water} and the last row is {last}: rows were cut \
                 from the end or the anchor was edited"
            ),
        });
    }
    Ok(AuditVerdict::Intact {
        rows: u64::try_from(rows).unwrap_or(0),
    })
}
