//! The node's own signing key (LOOM-HTTP-SIG-1, v1.1 §15.2), created on first start, and
//! the keys it replaced: a rotation retires the active key and keeps it, so the node
//! document still lists it (`retired`, v1.0 §7.4) for signatures made before.

use super::{Cached, Store, StoreResult};
use rusqlite::{OptionalExtension, params};

const ACTIVE: &str =
    "SELECT key_id, secret_seed FROM node_keys WHERE status = 'active' ORDER BY created_at LIMIT 1";
const INSERT: &str = "INSERT INTO node_keys (key_id, secret_seed, public_key, status, created_at) VALUES (?1, ?2, ?3, 'active', ?4)";

/// The oldest active key: `(key_id, hex seed)`.
pub fn active(store: &Store) -> StoreResult<Option<(String, String)>> {
    store
        .conn()
        .row(ACTIVE, [], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}

/// Stores a new active key.
pub fn insert(
    store: &Store,
    key_id: &str,
    seed_hex: &str,
    public_key: &str,
    at: &str,
) -> StoreResult<()> {
    store
        .conn()
        .exec(INSERT, params![key_id, seed_hex, public_key, at])?;
    Ok(())
}

const RETIRE: &str = "UPDATE node_keys SET status = 'retired' WHERE status = 'active'";
const RETIRED: &str =
    "SELECT key_id, public_key FROM node_keys WHERE status = 'retired' ORDER BY created_at, key_id";

/// Rotates: every active key becomes `retired`, and the given key is the new active one (one
/// transaction: a crash leaves the old key active, never none).
pub fn rotate(
    store: &Store,
    key_id: &str,
    seed_hex: &str,
    public_key: &str,
    at: &str,
) -> StoreResult<()> {
    let tx = store.begin()?;
    tx.exec(RETIRE, [])?;
    tx.exec(INSERT, params![key_id, seed_hex, public_key, at])?;
    tx.commit()?;
    Ok(())
}

/// The retired keys, oldest first: `(key_id, base64url public key)`.
pub fn retired(store: &Store) -> StoreResult<Vec<(String, String)>> {
    let conn = store.conn();
    let mut stmt = conn.prepare_cached(RETIRED)?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}
