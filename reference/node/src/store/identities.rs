//! Identities and their keys (v1.1 §6, §16.3): the registered document, its type, and one
//! row per key with its purpose and status. Every change goes through a [`Tx`] and marks
//! the identity stale in the authentication cache ([`super::cache`]); [`Store::identity_keys`]
//! is the cached read.

use super::cache::{IdentityKeys, Stale};
use super::{Cached, Connection, Store, StoreResult, Tx};
use ed25519_dalek::VerifyingKey;
use loom_protocol::Address;
use loom_protocol::id::KeyKind;
use loom_protocol::keys::public_key_from_b64url;
use rusqlite::{OptionalExtension, params};
use serde_json::Value;

/// The active signing keys of an identity, by key id.
pub const SIGNING_KEYS: &str = "SELECT key_id, public_key FROM identity_keys WHERE identity = ?1 AND purpose = 'signing' AND status = 'active' ORDER BY key_id";
/// The signing key `key_id` of `identity` when it is active.
pub const ACTIVE_SIGNING_KEY: &str = "SELECT public_key FROM identity_keys WHERE identity = ?1 AND key_id = ?2 AND purpose = 'signing' AND status = 'active'";
/// The registered type of an identity.
pub const IDENTITY_TYPE: &str = "SELECT type FROM identities WHERE id = ?1";
const EXISTS: &str = "SELECT 1 FROM identities WHERE id = ?1";
const INSERT: &str = "INSERT INTO identities (id, type, display_name, document, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)";
const DELETE_KEYS: &str = "DELETE FROM identity_keys WHERE identity = ?1";
const DELETE: &str = "DELETE FROM identities WHERE id = ?1";
const DOCUMENT: &str = "SELECT document FROM identities WHERE id = ?1";
const UPDATE_DOCUMENT: &str =
    "UPDATE identities SET document = ?2, display_name = ?3, updated_at = ?4 WHERE id = ?1";
const INSERT_KEY: &str = "INSERT INTO identity_keys (identity, key_id, purpose, public_key, status, created_at) VALUES (?1, ?2, ?3, ?4, 'active', ?5)";
const KEYS: &str = "SELECT key_id, purpose, public_key, status FROM identity_keys WHERE identity = ?1 ORDER BY created_at, key_id";
const KEY: &str = "SELECT key_id, purpose, public_key, status FROM identity_keys WHERE identity = ?1 AND key_id = ?2";
const ACTIVE_SIGNING_COUNT: &str = "SELECT COUNT(*) FROM identity_keys WHERE identity = ?1 AND purpose = 'signing' AND status = 'active'";
const REVOKE_KEY: &str = "UPDATE identity_keys SET status = 'revoked', revoked_at = ?3 WHERE identity = ?1 AND key_id = ?2";

/// The stored spelling of a key's purpose.
fn purpose(kind: KeyKind) -> &'static str {
    if kind == KeyKind::Encryption {
        "encryption"
    } else {
        "signing"
    }
}

fn bad_row(e: impl std::error::Error + Send + Sync + 'static) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
}

/// A new identity row.
#[derive(Debug, Clone, Copy)]
pub struct NewIdentity<'a> {
    /// The address.
    pub id: &'a Address,
    /// The type as registered.
    pub kind: &'a str,
    /// Display name.
    pub display_name: Option<&'a str>,
    /// The published document.
    pub document: &'a Value,
    /// Registration time.
    pub at: &'a str,
}

/// One stored key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRow {
    /// Key id.
    pub key_id: String,
    /// Signing or encryption.
    pub kind: KeyKind,
    /// base64url raw public key.
    pub public_key: String,
    /// `active` or `revoked`.
    pub status: String,
}

impl KeyRow {
    /// Whether the key is active.
    pub fn is_active(&self) -> bool {
        self.status == "active"
    }
}

fn key_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<KeyRow> {
    let purpose: String = r.get(1)?;
    Ok(KeyRow {
        key_id: r.get(0)?,
        kind: if purpose == "signing" {
            KeyKind::Signing
        } else {
            KeyKind::Encryption
        },
        public_key: r.get(2)?,
        status: r.get(3)?,
    })
}

/// Whether `id` is registered.
pub fn exists(conn: &Connection, id: &Address) -> StoreResult<bool> {
    Ok(conn
        .row(EXISTS, [id.to_string()], |_| Ok(()))
        .optional()?
        .is_some())
}

/// The registered type of `id`.
pub fn registered_type(conn: &Connection, id: &Address) -> StoreResult<Option<String>> {
    conn.row(IDENTITY_TYPE, [id.to_string()], |r| r.get(0))
        .optional()
}

/// The stored document of `id`.
pub fn document(conn: &Connection, id: &Address) -> StoreResult<Option<Value>> {
    let doc: Option<String> = conn
        .row(DOCUMENT, [id.to_string()], |r| r.get(0))
        .optional()?;
    doc.map(|d| serde_json::from_str(&d).map_err(bad_row))
        .transpose()
}

/// Registers an identity.
pub fn insert(tx: &Tx<'_>, n: &NewIdentity<'_>) -> StoreResult<()> {
    tx.exec(
        INSERT,
        params![
            n.id.to_string(),
            n.kind,
            n.display_name,
            n.document.to_string(),
            n.at
        ],
    )?;
    tx.stale(Stale::Identity(n.id.to_string()));
    Ok(())
}

/// Removes an identity and its keys (a re-registration replacing it).
pub fn remove(tx: &Tx<'_>, id: &Address) -> StoreResult<()> {
    tx.exec(DELETE_KEYS, [id.to_string()])?;
    tx.exec(DELETE, [id.to_string()])?;
    tx.stale(Stale::Identity(id.to_string()));
    Ok(())
}

/// Replaces the document (its `display_name` column follows it).
pub fn update_document(tx: &Tx<'_>, id: &Address, doc: &Value, at: &str) -> StoreResult<()> {
    tx.exec(
        UPDATE_DOCUMENT,
        params![
            id.to_string(),
            doc.to_string(),
            doc["display_name"].as_str(),
            at
        ],
    )?;
    tx.stale(Stale::Identity(id.to_string()));
    Ok(())
}

/// Adds an active key.
pub fn insert_key(
    tx: &Tx<'_>,
    id: &Address,
    key_id: &str,
    kind: KeyKind,
    public_key: &str,
    at: &str,
) -> StoreResult<()> {
    tx.exec(
        INSERT_KEY,
        params![id.to_string(), key_id, purpose(kind), public_key, at],
    )?;
    tx.stale(Stale::Identity(id.to_string()));
    Ok(())
}

/// Every key of `id`, in the order they were added.
pub fn keys(conn: &Connection, id: &Address) -> StoreResult<Vec<KeyRow>> {
    let mut stmt = conn.prepare_cached(KEYS)?;
    let rows = stmt.query_map([id.to_string()], key_row)?;
    rows.collect()
}

/// The key `key_id` of `id`, whatever its status.
pub fn key(conn: &Connection, id: &Address, key_id: &str) -> StoreResult<Option<KeyRow>> {
    conn.row(KEY, params![id.to_string(), key_id], key_row)
        .optional()
}

/// How many active signing keys `id` has.
pub fn active_signing_count(conn: &Connection, id: &Address) -> StoreResult<i64> {
    conn.row(ACTIVE_SIGNING_COUNT, [id.to_string()], |r| r.get(0))
}

/// Marks a key revoked (the tokens it backs: [`super::tokens::revoke_for_key`]).
pub fn revoke_key(tx: &Tx<'_>, id: &Address, key_id: &str, at: &str) -> StoreResult<()> {
    tx.exec(REVOKE_KEY, params![id.to_string(), key_id, at])?;
    tx.stale(Stale::Identity(id.to_string()));
    Ok(())
}

/// The active signing keys of `id` as `(key_id, key)`, by key id (unreadable keys skipped).
pub fn active_signing_keys(
    conn: &Connection,
    id: &Address,
) -> StoreResult<Vec<(String, VerifyingKey)>> {
    let mut stmt = conn.prepare_cached(SIGNING_KEYS)?;
    let rows = stmt.query_map([id.to_string()], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (kid, pk) = row?;
        if let Ok(k) = public_key_from_b64url(&pk) {
            out.push((kid, k));
        }
    }
    Ok(out)
}

/// The type and active signing keys of `id` as the database has them.
fn load_keys(conn: &Connection, id: &Address) -> StoreResult<Option<IdentityKeys>> {
    let Some(kind) = registered_type(conn, id)? else {
        return Ok(None);
    };
    Ok(Some(IdentityKeys {
        kind,
        signing: active_signing_keys(conn, id)?,
    }))
}

impl Store {
    /// The registered type and active signing keys of `id` (`None` when not registered
    /// here), through the authentication cache. Not for use inside a [`Tx`].
    pub fn identity_keys(&self, id: &Address) -> StoreResult<Option<IdentityKeys>> {
        let key = id.to_string();
        if let Some(hit) = self.cache.identities.get(&key) {
            return Ok(Some(hit));
        }
        let generation = self.cache.identities.generation();
        let loaded = load_keys(&self.read(), id)?;
        if let Some(keys) = &loaded {
            self.cache.identities.fill(generation, &key, keys.clone());
        }
        Ok(loaded)
    }
}
