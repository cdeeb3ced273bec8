//! The node's own signing key (LOOM-HTTP-SIG-1, v1.1 §15.2), created on first start.

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
