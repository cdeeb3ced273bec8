//! Blobs (attachments, v1.1 §16.7): one row per blob with its owner, thread and state, and
//! its numbered parts.

use super::{Cached, Connection, StoreResult, Tx};
use loom_protocol::Address;
use loom_protocol::id::{BlobId, ThreadId};
use rusqlite::{OptionalExtension, params};

const SELECT: &str = "SELECT owner, thread_id, filename, mime_type, declared_size, sha256, status FROM blobs WHERE id = ?1";
const INSERT: &str = "INSERT INTO blobs (id, owner, thread_id, filename, mime_type, declared_size, status, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'uploading', ?7)";
const LAST_PART: &str = "SELECT COALESCE(MAX(n), 0) FROM blob_parts WHERE blob_id = ?1";
const UPLOADED_EXCEPT: &str =
    "SELECT COALESCE(SUM(LENGTH(data)), 0) FROM blob_parts WHERE blob_id = ?1 AND n != ?2";
const PUT_PART: &str = "INSERT OR REPLACE INTO blob_parts (blob_id, n, data) VALUES (?1, ?2, ?3)";
const COMPLETE: &str =
    "UPDATE blobs SET status = 'complete', size = ?2, sha256 = ?3, completed_at = ?4 WHERE id = ?1";
const PARTS: &str = "SELECT data FROM blob_parts WHERE blob_id = ?1 ORDER BY n";

/// A stored blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// Who initiated it (wire form).
    pub owner: String,
    /// The thread whose readers may download it.
    pub thread_id: Option<String>,
    /// File name.
    pub filename: String,
    /// Media type.
    pub mime_type: String,
    /// Declared size.
    pub declared: Option<u64>,
    /// Hex SHA-256 once complete.
    pub sha256: Option<String>,
    /// Complete (immutable).
    pub complete: bool,
}

/// The blob `id`.
pub fn get(conn: &Connection, id: &BlobId) -> StoreResult<Option<Blob>> {
    conn.row(SELECT, [id.to_string()], |r| {
        Ok(Blob {
            owner: r.get(0)?,
            thread_id: r.get(1)?,
            filename: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
            mime_type: r
                .get::<_, Option<String>>(3)?
                .unwrap_or_else(|| "application/octet-stream".into()),
            declared: r
                .get::<_, Option<i64>>(4)?
                .and_then(|d| u64::try_from(d).ok()),
            sha256: r.get(5)?,
            complete: r.get::<_, String>(6)? == "complete",
        })
    })
    .optional()
}

/// A blob to create.
#[derive(Debug, Clone, Copy)]
pub struct NewBlob<'a> {
    /// Id.
    pub id: &'a BlobId,
    /// Owner.
    pub owner: &'a Address,
    /// Thread.
    pub thread: Option<&'a ThreadId>,
    /// File name.
    pub filename: &'a str,
    /// Media type.
    pub mime_type: &'a str,
    /// Declared size.
    pub declared: Option<u64>,
    /// Creation time.
    pub at: &'a str,
}

/// Creates an `uploading` blob.
pub fn insert(tx: &Tx<'_>, b: &NewBlob<'_>) -> StoreResult<()> {
    tx.exec(
        INSERT,
        params![
            b.id.to_string(),
            b.owner.to_string(),
            b.thread.map(|t| t.to_string()),
            b.filename,
            b.mime_type,
            b.declared.map(|s| i64::try_from(s).unwrap_or(i64::MAX)),
            b.at
        ],
    )?;
    Ok(())
}

/// The highest part number uploaded (0 when none).
pub fn last_part(conn: &Connection, id: &BlobId) -> StoreResult<u32> {
    conn.row(LAST_PART, [id.to_string()], |r| r.get(0))
}

/// Bytes uploaded in every part but `except` (0 = none excepted).
pub fn uploaded_bytes(conn: &Connection, id: &BlobId, except: u32) -> StoreResult<u64> {
    let n: i64 = conn.row(UPLOADED_EXCEPT, params![id.to_string(), except], |r| {
        r.get(0)
    })?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Stores part `n` (replacing an earlier upload of it).
pub fn put_part(tx: &Tx<'_>, id: &BlobId, n: u32, bytes: &[u8]) -> StoreResult<()> {
    tx.exec(PUT_PART, params![id.to_string(), n, bytes])?;
    Ok(())
}

/// Marks the blob complete with its size and hash.
pub fn complete(tx: &Tx<'_>, id: &BlobId, size: u64, sha256: &str, at: &str) -> StoreResult<()> {
    tx.exec(
        COMPLETE,
        params![
            id.to_string(),
            i64::try_from(size).unwrap_or(i64::MAX),
            sha256,
            at
        ],
    )?;
    Ok(())
}

/// The parts concatenated in order.
pub fn content(conn: &Connection, id: &BlobId) -> StoreResult<Vec<u8>> {
    let mut stmt = conn.prepare_cached(PARTS)?;
    let mut out = Vec::new();
    let rows = stmt.query_map([id.to_string()], |r| r.get::<_, Vec<u8>>(0))?;
    for part in rows {
        out.extend_from_slice(&part?);
    }
    Ok(out)
}
