//! Delegations over the API (v1.1 §16.5, §13): storing a link the caller signed as
//! delegator, listing the caller's links, and revoking one (§13.4).
//!
//! A stored link is what agents then carry in `from.delegation_chain`; the node's revocation
//! list is the `revoked_at` column, which chain verification reads (`StoreResolver`), so a
//! revoked link fails §13.3 step 5 with `DELEGATION_INVALID` from then on.
//!
//! Choices where the spec is silent:
//! - The link's own `id` is kept when present (1–64 of `[A-Za-z0-9_-]`); otherwise the node
//!   assigns `dlg_<ULID>`. An assigned id is *not* written into the link — the signature
//!   covers every member but `signature` and `signature_context` (§13.3.1) — so the response
//!   carries `id` next to the link exactly as signed. Revocation reaches links without an id
//!   by (delegator, delegate) pair for links made up to the revocation (v1.0 §12.5).
//! - `expires_at` is required (fail closed: §13.3 checks expiry on every link).
//! - A link with `revocable: false` cannot be revoked (409 `STATE_TRANSITION_INVALID`).
//! - Codes: malformed members are `ENVELOPE_INVALID` (400); a delegator other than the
//!   caller is `CAPABILITY_DENIED`; an expired link or a signature that does not verify is
//!   `DELEGATION_INVALID` (§13.3 step 7). The registry has no code for an unknown link:
//!   `ENVELOPE_NOT_FOUND` (404) with field `delegation_id` stands in.

use super::{Caller, Service, parse_address};
use crate::error::{ApiError, ApiResult};
use loom_protocol::delegation::delegation_signing_payload;
use loom_protocol::keys::{SigContext, signature_from_b64url, verify};
use loom_protocol::scope::check_scope_syntax;
use loom_protocol::{Address, ErrorCode, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// How far `created_at` may be in the future (§13.3 `maxCreatedAtFutureSkewMs` default).
const MAX_CREATED_AT_SKEW_MS: i64 = 5 * 60 * 1000;

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::EnvelopeInvalid, field, reason, "v1.1 §13.1")
}

fn link_denied(field: &str, reason: impl Into<String>, section: &'static str) -> ApiError {
    ApiError::new(ErrorCode::DelegationInvalid, field, reason, section)
}

fn timestamp_member(o: &Map<String, Value>, k: &str) -> ApiResult<Option<Timestamp>> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Timestamp::parse(s)
            .map(Some)
            .map_err(|e| invalid(k, e.to_string())),
        Some(_) => Err(invalid(k, format!("{k} must be an ISO 8601 string"))),
    }
}

fn valid_link_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The API view of a stored link.
fn view(id: &str, link: Value, stored_at: &str, revoked_at: Option<&str>, now: Timestamp) -> Value {
    let expired = link
        .get("expires_at")
        .and_then(Value::as_str)
        .and_then(|s| Timestamp::parse(s).ok())
        .is_some_and(|e| e < now);
    let status = if revoked_at.is_some() {
        "revoked"
    } else if expired {
        "expired"
    } else {
        "active"
    };
    json!({
        "id": id,
        "delegator": link.get("delegator"),
        "delegate": link.get("delegate"),
        "scope": link.get("scope"),
        "created_at": link.get("created_at"),
        "expires_at": link.get("expires_at"),
        "status": status,
        "stored_at": stored_at,
        "revoked_at": revoked_at,
        "link": link,
    })
}

impl Service {
    /// `POST /v1/delegations` (§16.5): checks the §13.1 shape, delegator = caller, the
    /// §13.2 scope syntax (`*` only from a human delegator), `created_at` not too far ahead,
    /// `expires_at` in the future and the delegator's signature (§13.3.1: prefixed, or legacy
    /// when `signature_context` is absent); stores the link.
    pub fn create_delegation(&self, caller: &Caller, link: Value) -> ApiResult<Value> {
        let now = self.env.now();
        let o = link
            .as_object()
            .ok_or_else(|| invalid("$body", "a delegation link is a JSON object"))?;
        let addr = |k: &str| {
            o.get(k)
                .and_then(Value::as_str)
                .ok_or_else(|| invalid(k, format!("{k} is required (a LOOM address)")))
                .and_then(|s| parse_address(k, s))
        };
        let delegator = addr("delegator")?;
        let delegate = addr("delegate")?;
        if delegator != caller.identity {
            return Err(ApiError::new(
                ErrorCode::CapabilityDenied,
                "delegator",
                format!(
                    "the authenticated identity is {}; it cannot delegate as {delegator}",
                    caller.identity
                ),
                "v1.1 §13.1, §16.5",
            ));
        }
        if delegate == delegator {
            return Err(invalid("delegate", "an identity cannot delegate to itself"));
        }
        let scope = o
            .get("scope")
            .and_then(Value::as_array)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| invalid("scope", "scope must be a non-empty array of scopes"))?;
        for (i, s) in scope.iter().enumerate() {
            let field = format!("scope[{i}]");
            let s = s
                .as_str()
                .ok_or_else(|| invalid(field.clone(), "scope entries are strings"))?;
            check_scope_syntax(s)
                .map_err(|e| ApiError::bad_request(field.clone(), e.to_string(), "v1.1 §13.2"))?;
            if s == "*" && self.identity_type(&delegator)?.as_deref() != Some("human") {
                return Err(ApiError::bad_request(
                    field,
                    "'*' is only valid for a root human→agent delegation",
                    "v1.1 §13.2",
                ));
            }
        }
        let created_at = timestamp_member(o, "created_at")?
            .ok_or_else(|| invalid("created_at", "created_at is required"))?;
        if created_at.unix_ms() > now.unix_ms() + MAX_CREATED_AT_SKEW_MS {
            return Err(link_denied(
                "created_at",
                format!("created_at is more than {MAX_CREATED_AT_SKEW_MS} ms in the future"),
                "v1.1 §13.3",
            ));
        }
        let expires_at = timestamp_member(o, "expires_at")?
            .ok_or_else(|| invalid("expires_at", "expires_at is required"))?;
        if expires_at <= now {
            return Err(link_denied(
                "expires_at",
                "the delegation has already expired",
                "v1.1 §13.3",
            ));
        }
        for k in ["revocable", "allow_sub_delegation"] {
            if o.get(k).is_some_and(|v| !v.is_boolean() && !v.is_null()) {
                return Err(invalid(k, format!("{k} must be a boolean")));
            }
        }
        if o.get("max_sub_delegation_depth")
            .is_some_and(|v| !v.is_null() && v.as_u64().is_none())
        {
            return Err(invalid(
                "max_sub_delegation_depth",
                "max_sub_delegation_depth must be a non-negative integer",
            ));
        }
        let given_id = match o.get("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if valid_link_id(s) => Some(s.clone()),
            Some(_) => return Err(invalid("id", "id must be 1-64 of [A-Za-z0-9_-]")),
        };
        self.check_link_signature(&link, o, &delegator)?;
        let id = given_id.unwrap_or_else(|| format!("dlg_{}", self.env.ids().ulid()));
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        let exists = tx
            .query_row("SELECT 1 FROM delegations WHERE id = ?1", [&id], |_| Ok(()))
            .optional()?;
        if exists.is_some() {
            return Err(ApiError::new(
                ErrorCode::EnvelopeDuplicate,
                "id",
                format!("a delegation {id} is already stored"),
                "v1.1 §24.2",
            ));
        }
        let stored_at = now.to_rfc3339();
        let link_created_at = created_at.to_rfc3339();
        tx.execute(
            "INSERT INTO delegations (id, delegator, delegate, document, created_at, expires_at, link_created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![id, delegator.to_string(), delegate.to_string(), link.to_string(), stored_at, expires_at.to_rfc3339(), link_created_at],
        )?;
        self.audit(
            &tx,
            &caller.identity.to_string(),
            "delegation.created",
            &id,
            json!({"delegate": delegate.to_string(), "scope": scope, "expires_at": expires_at.to_rfc3339()}),
        )?;
        tx.commit()?;
        Ok(view(&id, link, &stored_at, None, now))
    }

    /// The delegator's signature over the link (§13.3.1), with the key named by `key_id`
    /// (or `signature_key_id`), or the delegator's only active key.
    fn check_link_signature(
        &self,
        link: &Value,
        o: &Map<String, Value>,
        delegator: &Address,
    ) -> ApiResult<()> {
        let sig = o
            .get("signature")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("signature", "signature (base64url) is required"))?;
        let sig = signature_from_b64url(sig).map_err(|e| invalid("signature", e.reason))?;
        let key_id = o
            .get("key_id")
            .or_else(|| o.get("signature_key_id"))
            .and_then(Value::as_str);
        let key = match key_id {
            Some(k) => self.active_signing_key(delegator, k)?,
            None => {
                let conn = self.store.conn();
                let keys: Vec<String> = conn
                    .prepare_cached("SELECT key_id FROM identity_keys WHERE identity = ?1 AND purpose = 'signing' AND status = 'active' ORDER BY key_id")?
                    .query_map([delegator.to_string()], |r| r.get(0))?
                    .collect::<Result<_, _>>()?;
                drop(conn);
                match keys.as_slice() {
                    [only] => self.active_signing_key(delegator, only)?,
                    _ => {
                        return Err(invalid(
                            "key_id",
                            "key_id is required when the delegator has several signing keys",
                        ));
                    }
                }
            }
        }
        .ok_or_else(|| {
            link_denied(
                "key_id",
                "key_id is not an active signing key of the delegator",
                "v1.1 §13.3",
            )
        })?;
        let payload = delegation_signing_payload(link).unwrap_or_default();
        let ok = match o.get("signature_context") {
            None => {
                verify(&key, Some(SigContext::DELEGATION), &payload, &sig)
                    || verify(&key, None, &payload, &sig)
            }
            Some(Value::String(c)) if c == SigContext::DELEGATION.0 => {
                verify(&key, Some(SigContext::DELEGATION), &payload, &sig)
            }
            Some(_) => {
                return Err(invalid(
                    "signature_context",
                    "unknown signature context; only LOOM-DELEGATION-SIG-v1 is defined",
                ));
            }
        };
        if ok {
            Ok(())
        } else {
            Err(link_denied(
                "signature",
                "Ed25519 signature of the delegator does not verify",
                "v1.1 §13.3.1",
            ))
        }
    }

    /// `GET /v1/delegations[?role=delegator|delegate]` (§16.5): the caller's links, as
    /// delegator, delegate or (default) either, in the order they were stored.
    pub fn list_delegations(&self, caller: &Caller, role: Option<&str>) -> ApiResult<Value> {
        let (as_delegator, as_delegate) = match role {
            None => (true, true),
            Some("delegator") => (true, false),
            Some("delegate") => (false, true),
            Some(_) => {
                return Err(ApiError::bad_request(
                    "role",
                    "role must be delegator or delegate",
                    "v1.1 §16.5",
                ));
            }
        };
        let conn = self.store.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT id, document, created_at, revoked_at FROM delegations WHERE (?2 AND delegator = ?1) OR (?3 AND delegate = ?1) ORDER BY rowid",
        )?;
        let now = self.env.now();
        let rows: Vec<(String, String, String, Option<String>)> = stmt
            .query_map(
                params![caller.identity.to_string(), as_delegator, as_delegate],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )?
            .collect::<Result<_, _>>()?;
        let mut out = Vec::new();
        for (id, doc, stored, revoked) in rows {
            let link: Value = serde_json::from_str(&doc).map_err(ApiError::internal)?;
            out.push(view(&id, link, &stored, revoked.as_deref(), now));
        }
        Ok(json!({"delegations": out}))
    }

    /// `DELETE /v1/delegations/{id}` (§16.5, §13.4): the delegator revokes a link. Sets
    /// `revoked_at` (the revocation list chain verification reads), sends a
    /// `delegation.revoked` event (§17.3) to delegator and delegate with delegator, delegate,
    /// time and reason, and writes the audit log (§25.1).
    pub fn revoke_delegation(
        &self,
        caller: &Caller,
        id: &str,
        reason: Option<&str>,
    ) -> ApiResult<Value> {
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        let row = load(&tx, id)?;
        let me = caller.identity.to_string();
        let Some((delegator, delegate, doc, stored, revoked)) =
            row.filter(|r| r.0 == me || r.1 == me)
        else {
            return Err(ApiError::not_found(
                ErrorCode::EnvelopeNotFound,
                "delegation_id",
                id,
            ));
        };
        if delegator != me {
            return Err(ApiError::new(
                ErrorCode::CapabilityDenied,
                "delegation_id",
                "only the delegator may revoke a delegation",
                "v1.1 §13.4, §16.5",
            ));
        }
        if revoked.is_some() {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "delegation_id",
                "the delegation is already revoked",
                "v1.1 §13.4",
            ));
        }
        let link: Value = serde_json::from_str(&doc).map_err(ApiError::internal)?;
        if link.get("revocable") == Some(&Value::Bool(false)) {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "delegation_id",
                "the link was signed with revocable: false",
                "v1.1 §13.1",
            ));
        }
        let now = self.env.now();
        tx.execute(
            "UPDATE delegations SET revoked_at = ?2 WHERE id = ?1",
            params![id, now.to_rfc3339()],
        )?;
        let payload = json!({
            "delegation_id": id,
            "delegator": delegator,
            "delegate": delegate,
            "revoked_at": now.to_rfc3339(),
            "reason": reason,
        });
        let readers: BTreeSet<Address> = [&delegator, &delegate]
            .into_iter()
            .filter_map(|a| Address::parse_wire(a).ok())
            .collect();
        if !self.quirk(crate::quirks::Quirk::OmitDelegationRevokedEvent) {
            self.append_event(
                &tx,
                "delegation.revoked",
                None,
                None,
                payload.clone(),
                &readers,
            )?;
        }
        self.audit(&tx, &me, "delegation.revoked", id, payload)?;
        tx.commit()?;
        Ok(view(id, link, &stored, Some(&now.to_rfc3339()), now))
    }
}

type LinkRow = (String, String, String, String, Option<String>);

fn load(conn: &Connection, id: &str) -> ApiResult<Option<LinkRow>> {
    Ok(conn
        .query_row(
            "SELECT delegator, delegate, document, created_at, revoked_at FROM delegations WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .optional()?)
}
