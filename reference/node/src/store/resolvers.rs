//! The store seen through `loom-protocol`'s lookup traits: keys, identity types, revocations
//! and spent tokens for delegation chains (§13.3) and capability tokens (§12).

use super::Cached;
use ed25519_dalek::VerifyingKey;
use loom_protocol::Address;
use loom_protocol::accept::Directory;
use loom_protocol::capability::CapabilityResolver;
use loom_protocol::delegation::{DelegationResolver, LinkRef};
use loom_protocol::envelope::SenderType;
use loom_protocol::id::{CapabilityId, ThreadId};
use loom_protocol::keys::public_key_from_b64url;
use loom_protocol::thread::ThreadState;
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex};

pub use super::identities::{ACTIVE_SIGNING_KEY, IDENTITY_TYPE, SIGNING_KEYS};

/// `LINK_REVOKED_BY_CONTENT`.
pub const LINK_REVOKED_BY_CONTENT: &str = "SELECT 1 FROM delegations WHERE delegator = ?1 AND delegate = ?2 AND link_created_at = ?3 AND revoked_at IS NOT NULL LIMIT 1";

/// `LINK_REVOKED_BY_ID`.
pub const LINK_REVOKED_BY_ID: &str =
    "SELECT 1 FROM delegations WHERE id = ?1 AND revoked_at IS NOT NULL";

/// `PAIR_REVOKED`.
pub const PAIR_REVOKED: &str = "SELECT 1 FROM delegation_revocations WHERE delegator = ?1 AND delegate = ?2 AND revoked_at >= ?3";

/// `CAPABILITY_REVOKED`.
pub const CAPABILITY_REVOKED: &str =
    "SELECT 1 FROM capabilities WHERE id = ?1 AND revoked_at IS NOT NULL";

/// `CAPABILITY_SPENT`.
pub const CAPABILITY_SPENT: &str =
    "SELECT 1 FROM capabilities WHERE id = ?1 AND spent_at IS NOT NULL";

/// Lookups against the store inside the current transaction.
#[derive(Debug)]
pub struct StoreResolver<'a> {
    /// The connection (inside the caller's transaction).
    pub conn: &'a Connection,
    /// The thread being acted on, for issuer authority.
    pub thread: Option<&'a ThreadState>,
}

impl StoreResolver<'_> {
    fn keys(&self, identity: &Address, key_id: Option<&str>) -> Vec<(String, VerifyingKey)> {
        let mut stmt = match self.conn.prepare_cached(SIGNING_KEYS) {
            Ok(s) => s,
            Err(_) => return Vec::new(),
        };
        let rows = stmt.query_map([identity.to_string()], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        });
        rows.map(|rows| {
            rows.filter_map(Result::ok)
                .filter(|(kid, _)| key_id.is_none_or(|k| k == kid))
                .filter_map(|(kid, pk)| public_key_from_b64url(&pk).ok().map(|k| (kid, k)))
                .collect()
        })
        .unwrap_or_default()
    }
}

impl DelegationResolver for StoreResolver<'_> {
    fn signing_keys(&self, identity: &Address) -> Option<Vec<(String, VerifyingKey)>> {
        self.identity_type(identity)?;
        Some(self.keys(identity, None))
    }

    fn identity_type(&self, identity: &Address) -> Option<SenderType> {
        SenderType::parse(&self.registered(identity).ok()??)
    }

    fn is_revoked(&self, link: &LinkRef<'_>) -> bool {
        // A link carried without an id is the stored link with the same delegator, delegate
        // and creation time (the node assigns ids beside links, never inside them).
        let by_content = self
            .conn
            .row(
                LINK_REVOKED_BY_CONTENT,
                params![
                    link.delegator.to_string(),
                    link.delegate.to_string(),
                    link.created_at.to_rfc3339()
                ],
                |_| Ok(()),
            )
            .optional()
            .ok()
            .flatten()
            .is_some();
        let by_id = link.id.is_some_and(|id| {
            self.conn
                .row(LINK_REVOKED_BY_ID, [id], |_| Ok(()))
                .optional()
                .ok()
                .flatten()
                .is_some()
        });
        let by_pair = self
            .conn
            .row(
                PAIR_REVOKED,
                params![
                    link.delegator.to_string(),
                    link.delegate.to_string(),
                    link.created_at.to_rfc3339()
                ],
                |_| Ok(()),
            )
            .optional()
            .ok()
            .flatten()
            .is_some();
        by_content || by_id || by_pair
    }
}

impl StoreResolver<'_> {
    /// The registered type as stored (`human`, `agent`, …).
    pub fn registered(&self, identity: &Address) -> rusqlite::Result<Option<String>> {
        self.conn
            .row(IDENTITY_TYPE, [identity.to_string()], |r| r.get(0))
            .optional()
    }

    /// The active signing key `key_id` of `identity`.
    pub fn active_key(
        &self,
        identity: &Address,
        key_id: &str,
    ) -> rusqlite::Result<Option<VerifyingKey>> {
        let pk: Option<String> = self
            .conn
            .row(
                ACTIVE_SIGNING_KEY,
                params![identity.to_string(), key_id],
                |r| r.get(0),
            )
            .optional()?;
        Ok(pk.and_then(|p| decode_key(&p)))
    }
}

/// Most decoded keys [`decode_key`] keeps; beyond it the memo starts over.
const KEY_MEMO_CAPACITY: usize = 8192;

/// Decoded public keys by their stored base64url text. Decoding decompresses a curve point
/// (a field exponentiation, ~3 µs) and every envelope needs its sender's key (§7.3); the
/// text is the key itself, so a memo entry can never go stale (revocation is decided by the
/// query that returned the text, not here).
static KEY_MEMO: LazyLock<Mutex<BTreeMap<String, VerifyingKey>>> =
    LazyLock::new(|| Mutex::new(BTreeMap::new()));

/// `public_key_from_b64url`, remembered.
fn decode_key(text: &str) -> Option<VerifyingKey> {
    let mut memo = KEY_MEMO.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(k) = memo.get(text) {
        return Some(*k);
    }
    let key = public_key_from_b64url(text).ok()?;
    if memo.len() >= KEY_MEMO_CAPACITY {
        memo.clear();
    }
    memo.insert(text.to_owned(), key);
    Some(key)
}

impl Directory for StoreResolver<'_> {
    fn registered_type(&self, identity: &Address) -> Option<String> {
        self.registered(identity).ok().flatten()
    }

    fn active_signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.active_key(identity, key_id).ok().flatten()
    }
}

impl StoreResolver<'_> {
    /// The active key `key_id` of a remote identity resolved earlier from its home node
    /// (node-signed document, `service::federation`): tokens are "portable across
    /// federation … verifiable offline" (v1.1 §12), so a token issued on another node is
    /// checked with the issuer's keys as its home node vouched for them.
    fn remote_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        let remote = super::federation::remote_identity(self.conn, &identity.to_string())
            .ok()
            .flatten()?;
        remote
            .keys
            .iter()
            .find(|(k, _)| k == key_id)
            .and_then(|(_, pk)| public_key_from_b64url(pk).ok())
    }
}

impl CapabilityResolver for StoreResolver<'_> {
    /// A local identity's active key, else a resolved remote identity's (v1.1 §12).
    fn signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.keys(identity, Some(key_id))
            .into_iter()
            .next()
            .map(|(_, k)| k)
            .or_else(|| self.remote_key(identity, key_id))
    }

    fn pop_key(&self, holder: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.signing_key(holder, key_id)
    }

    fn may_issue(&self, issuer: &Address, thread: &ThreadId) -> bool {
        self.thread
            .is_some_and(|t| &t.id == thread && t.is_owner(issuer))
    }

    fn is_revoked(&self, id: &CapabilityId) -> bool {
        self.conn
            .row(CAPABILITY_REVOKED, [id.to_string()], |_| Ok(()))
            .optional()
            .ok()
            .flatten()
            .is_some()
    }

    fn is_spent(&self, id: &CapabilityId) -> bool {
        self.conn
            .row(CAPABILITY_SPENT, [id.to_string()], |_| Ok(()))
            .optional()
            .ok()
            .flatten()
            .is_some()
    }
}

/// The identity directory of admission (`loom_protocol::accept::Directory`) through the
/// authentication cache ([`super::cache`]): registered types and active signing keys for
/// the request tasks that admit envelopes without holding the writer. It answers as
/// [`StoreResolver`] over a read connection does, and an envelope signed with a key
/// revoked a request earlier is refused (`tests/node/auth_cache.rs`).
#[derive(Debug, Clone, Copy)]
pub struct CachedDirectory<'a>(pub &'a super::Store);

impl Directory for CachedDirectory<'_> {
    fn registered_type(&self, identity: &Address) -> Option<String> {
        self.0
            .identity_keys(identity)
            .ok()
            .flatten()
            .map(|k| k.kind)
    }

    fn active_signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.0
            .identity_keys(identity)
            .ok()
            .flatten()
            .and_then(|k| k.key(key_id))
    }
}

impl DelegationResolver for CachedDirectory<'_> {
    fn signing_keys(&self, identity: &Address) -> Option<Vec<(String, VerifyingKey)>> {
        // As [`StoreResolver`]: only identities of a sender type have keys to offer.
        self.identity_type(identity)?;
        self.0
            .identity_keys(identity)
            .ok()
            .flatten()
            .map(|k| k.signing)
    }

    fn identity_type(&self, identity: &Address) -> Option<SenderType> {
        SenderType::parse(&self.registered_type(identity)?)
    }

    fn is_revoked(&self, link: &LinkRef<'_>) -> bool {
        let conn = self.0.read();
        DelegationResolver::is_revoked(
            &StoreResolver {
                conn: &conn,
                thread: None,
            },
            link,
        )
    }
}

/// The local identity directory of admission (submitted envelopes, federated deliveries,
/// the node's own receipts): [`CachedDirectory`].
pub type LocalDirectory<'a> = CachedDirectory<'a>;

/// The [`LocalDirectory`] of `store`.
pub fn local_directory(store: &super::Store) -> LocalDirectory<'_> {
    CachedDirectory(store)
}
