//! Single-use challenges of login and registration (v1.1 §14.2, DESIGN.md §9).

use super::{Cached, Store, StoreResult, Tx};
use loom_protocol::Timestamp;
use loom_protocol::session::ChallengeRecord;
use rusqlite::{OptionalExtension, params};

const INSERT: &str = "INSERT INTO challenges (challenge_id, purpose, identity, key_id, nonce, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
const SELECT: &str = "SELECT purpose, identity, key_id, nonce, expires_at, used FROM challenges WHERE challenge_id = ?1";
const MARK_USED: &str = "UPDATE challenges SET used = 1 WHERE challenge_id = ?1";

/// A challenge to store.
#[derive(Debug, Clone, Copy)]
pub struct NewChallenge<'a> {
    /// `ch_` id.
    pub id: &'a str,
    /// `auth` or `identity.register@v1`.
    pub purpose: &'a str,
    /// The identity (wire form).
    pub identity: &'a str,
    /// The key that is to sign.
    pub key_id: &'a str,
    /// The nonce.
    pub nonce: &'a str,
    /// Expiry.
    pub expires_at: Timestamp,
}

/// Stores a challenge (one statement on the writer).
pub fn insert(store: &Store, c: &NewChallenge<'_>) -> StoreResult<()> {
    store.conn().exec(
        INSERT,
        params![
            c.id,
            c.purpose,
            c.identity,
            c.key_id,
            c.nonce,
            c.expires_at.to_rfc3339()
        ],
    )?;
    Ok(())
}

/// The challenge `id`.
pub fn get(tx: &Tx<'_>, id: &str) -> StoreResult<Option<ChallengeRecord>> {
    tx.row(SELECT, [id], |r| {
        Ok(ChallengeRecord {
            purpose: r.get(0)?,
            identity: r.get(1)?,
            key_id: r.get(2)?,
            nonce: r.get(3)?,
            expires_at: r.get(4)?,
            used: r.get::<_, i64>(5)? != 0,
        })
    })
    .optional()
}

/// Marks the challenge used.
pub fn mark_used(tx: &Tx<'_>, id: &str) -> StoreResult<()> {
    tx.exec(MARK_USED, [id])?;
    Ok(())
}
