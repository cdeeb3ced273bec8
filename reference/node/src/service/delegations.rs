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
//!
//! The link rules are loom-protocol's ([`check_new_link`], sharing the §13.3.1 signature
//! check with chain verification; [`link_status`], [`check_revocable`]).

use super::{Caller, Service};
use crate::error::{ApiError, ApiResult};
use crate::store::delegations::{self, StoredLink};
use loom_protocol::delegation::{Delegator, check_new_link, check_revocable, link_status};
use loom_protocol::{Address, ErrorCode, Timestamp};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The API view of a stored link.
fn view(id: &str, link: Value, stored_at: &str, revoked_at: Option<&str>, now: Timestamp) -> Value {
    let status = link_status(&link, revoked_at.is_some(), now);
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
    /// `POST /v1/delegations` (§16.5): the link must pass
    /// [`loom_protocol::delegation::check_new_link`] with the caller as delegator (its type
    /// and active signing keys from the store); then it is stored.
    pub fn create_delegation(&self, caller: &Caller, link: Value) -> ApiResult<Value> {
        let id = link
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_owned();
        let created = self.create_checked(caller, link);
        if let Err(e) = &created {
            self.security_event("delegation", &caller.identity.to_string(), &id, e);
        }
        created
    }

    fn create_checked(&self, caller: &Caller, link: Value) -> ApiResult<Value> {
        let now = self.env.now();
        let me = self.store.identity_keys(&caller.identity)?;
        let keys = me.as_ref().map(|k| k.signing.clone()).unwrap_or_default();
        let checked = check_new_link(
            &link,
            Delegator {
                identity: &caller.identity,
                is_human: me.as_ref().is_some_and(|k| k.kind == "human"),
                keys: &keys,
            },
            now,
        )?;
        let id = checked
            .id
            .clone()
            .unwrap_or_else(|| format!("dlg_{}", self.env.ids().ulid()));
        let tx = self.store.begin()?;
        if delegations::exists(&tx, &id)? {
            return Err(ApiError::new(
                ErrorCode::EnvelopeDuplicate,
                "id",
                format!("a delegation {id} is already stored"),
                "v1.1 §24.2",
            ));
        }
        let stored_at = now.to_rfc3339();
        delegations::insert(
            &tx,
            &delegations::NewLink {
                id: &id,
                delegator: &checked.delegator,
                delegate: &checked.delegate,
                link: &link,
                stored_at: &stored_at,
                expires_at: checked.expires_at,
                created_at: checked.created_at,
            },
        )?;
        self.audit(
            &tx,
            &caller.identity.to_string(),
            "delegation.created",
            &id,
            json!({"delegate": checked.delegate.to_string(), "scope": checked.scope, "expires_at": checked.expires_at.to_rfc3339()}),
        )?;
        tx.commit()?;
        Ok(view(&id, link, &stored_at, None, now))
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
        let rows = delegations::of_identity(
            &self.store.read(),
            &caller.identity,
            as_delegator,
            as_delegate,
        )?;
        let now = self.env.now();
        let out: Vec<Value> = rows
            .into_iter()
            .map(|r| view(&r.id, r.link, &r.stored_at, r.revoked_at.as_deref(), now))
            .collect();
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
        let tx = self.store.begin()?;
        let me = caller.identity.to_string();
        let Some(StoredLink {
            delegator,
            delegate,
            link,
            stored_at,
            revoked_at,
            ..
        }) = delegations::get(&tx, id)?.filter(|r| r.delegator == me || r.delegate == me)
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
        if revoked_at.is_some() {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "delegation_id",
                "the delegation is already revoked",
                "v1.1 §13.4",
            ));
        }
        check_revocable(&link)?;
        let now = self.env.now();
        delegations::mark_revoked(&tx, id, &now.to_rfc3339())?;
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
        if !self.deviations.api.omit_delegation_revoked_event {
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
        Ok(view(id, link, &stored_at, Some(&now.to_rfc3339()), now))
    }
}
