//! Bearer tokens (v1.1 §14.2): only the SHA-256 of each token is stored, with its kind,
//! identity, key and expiry. Revocations go through a [`Tx`] and mark the cached records
//! stale ([`super::cache`]); [`Store::token`] is the cached read every authenticated request
//! makes.

use super::cache::Stale;
use super::{Cached, Connection, Store, StoreResult, Tx};
use loom_protocol::Timestamp;
use loom_protocol::session::{TokenKind, TokenRecord};
use rusqlite::{OptionalExtension, params};
use sha2::{Digest, Sha256};

const INSERT: &str = "INSERT INTO tokens (token_hash, kind, identity, key_id, expires_at, family) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
const FAMILY: &str = "SELECT family FROM tokens WHERE token_hash = ?1";
const LIVE_IN_FAMILY: &str =
    "SELECT token_hash FROM tokens WHERE family = ?1 AND revoked = 0 AND (?2 IS NULL OR kind = ?2)";
const REVOKE_IN_FAMILY: &str =
    "UPDATE tokens SET revoked = 1 WHERE family = ?1 AND revoked = 0 AND (?2 IS NULL OR kind = ?2)";
/// A token by its hash.
pub const SELECT: &str =
    "SELECT kind, identity, key_id, expires_at, revoked FROM tokens WHERE token_hash = ?1";
const REVOKE: &str = "UPDATE tokens SET revoked = 1 WHERE token_hash = ?1";
const REVOKE_FOR_KEY: &str = "UPDATE tokens SET revoked = 1 WHERE identity = ?1 AND key_id = ?2";

/// The stored form of a bearer token: hex SHA-256.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A token to store.
#[derive(Debug, Clone, Copy)]
pub struct NewToken<'a> {
    /// The bearer token itself (only its hash is stored).
    pub token: &'a str,
    /// Access or refresh.
    pub kind: TokenKind,
    /// The identity it is issued to (wire form).
    pub identity: &'a str,
    /// The key that proved possession.
    pub key_id: &'a str,
    /// Expiry.
    pub expires_at: Timestamp,
    /// The login it belongs to ([`family_of`]).
    pub family: &'a str,
}

/// The family of a login whose refresh token is `refresh`: its hash (no randomness drawn).
pub fn new_family(refresh: &str) -> String {
    token_hash(refresh)
}

/// Stores a token.
pub fn insert(tx: &Tx<'_>, t: &NewToken<'_>) -> StoreResult<()> {
    tx.exec(
        INSERT,
        params![
            token_hash(t.token),
            t.kind.as_str(),
            t.identity,
            t.key_id,
            t.expires_at.to_rfc3339(),
            t.family
        ],
    )?;
    Ok(())
}

/// The stored record of `token`, read from the database.
pub fn get(conn: &Connection, token: &str) -> StoreResult<Option<TokenRecord>> {
    read(conn, &token_hash(token))
}

fn read(conn: &Connection, hash: &str) -> StoreResult<Option<TokenRecord>> {
    conn.row(SELECT, [hash], |r| {
        Ok(TokenRecord {
            kind: TokenKind::parse(&r.get::<_, String>(0)?),
            identity: r.get(1)?,
            key_id: r.get(2)?,
            expires_at: Timestamp::parse(&r.get::<_, String>(3)?).ok(),
            revoked: r.get::<_, i64>(4)? != 0,
        })
    })
    .optional()
}

/// Revokes one token (refresh rotation).
pub fn revoke(tx: &Tx<'_>, token: &str) -> StoreResult<()> {
    let hash = token_hash(token);
    tx.exec(REVOKE, [&hash])?;
    tx.stale(Stale::Token(hash));
    Ok(())
}

/// The family (login) of `token`; `None` for an unknown token or one stored before families.
pub fn family_of(conn: &Connection, token: &str) -> StoreResult<Option<String>> {
    Ok(conn
        .row(FAMILY, [token_hash(token)], |r| {
            r.get::<_, Option<String>>(0)
        })
        .optional()?
        .flatten())
}

/// Revokes the live tokens of `family` — only those of `kind` when given (a refresh revokes
/// the family's access tokens; a reused refresh token revokes all) — and marks exactly those
/// cached records stale. Returns how many were revoked.
pub fn revoke_family(tx: &Tx<'_>, family: &str, kind: Option<TokenKind>) -> StoreResult<usize> {
    let kind = kind.map(TokenKind::as_str);
    let hashes = tx
        .prepare_cached(LIVE_IN_FAMILY)?
        .query_map(params![family, kind], |r| r.get::<_, String>(0))?
        .collect::<StoreResult<Vec<String>>>()?;
    tx.exec(REVOKE_IN_FAMILY, params![family, kind])?;
    let n = hashes.len();
    for hash in hashes {
        tx.stale(Stale::Token(hash));
    }
    Ok(n)
}

/// Revokes every token backed by `(identity, key_id)` (key revocation, §16.3).
pub fn revoke_for_key(tx: &Tx<'_>, identity: &str, key_id: &str) -> StoreResult<()> {
    tx.exec(REVOKE_FOR_KEY, params![identity, key_id])?;
    tx.stale(Stale::TokensOfKey(identity.to_owned(), key_id.to_owned()));
    Ok(())
}

impl Store {
    /// The stored record of `token` through the authentication cache (module docs of
    /// [`super::cache`]). Not for use inside a [`Tx`].
    pub fn token(&self, token: &str) -> StoreResult<Option<TokenRecord>> {
        let hash = token_hash(token);
        if let Some(hit) = self.cache.tokens.get(&hash) {
            return Ok(Some(hit));
        }
        let generation = self.cache.tokens.generation();
        let loaded = read(&self.read(), &hash)?;
        if let Some(t) = &loaded {
            self.cache.tokens.fill(generation, &hash, t.clone());
        }
        Ok(loaded)
    }
}
