//! Remote identities (node-signed documents, DESIGN.md §9) and the directory a delivery's
//! acceptance reads: local identities from the authentication cache, remote ones as resolved.

use super::Peer;
use crate::error::{ApiError, ApiResult};
use crate::service::Service;
use crate::store::federation::{self as fed_store, RemoteIdentity};
use crate::store::resolvers::LocalDirectory;
use ed25519_dalek::VerifyingKey;
use loom_protocol::accept::Directory;
use loom_protocol::capability::presented_token_issuer;
use loom_protocol::delegation::{DelegationResolver, LinkRef};
use loom_protocol::envelope::SenderType;
use loom_protocol::federation::node_document::identity_url;
use loom_protocol::federation::{RetiredKey, verify_identity_document};
use loom_protocol::keys::{public_key_from_b64url, public_key_to_b64url};
use loom_protocol::{Address, ErrorCode, Timestamp};
use serde_json::Value;
use std::collections::BTreeMap;

/// Local identities from the authentication cache, remote ones as resolved for this
/// delivery (`loom_protocol::accept::Directory`).
pub(super) struct FedDirectory<'a> {
    pub(super) local: LocalDirectory<'a>,
    pub(super) remote: &'a BTreeMap<Address, RemoteIdentity>,
}

impl FedDirectory<'_> {
    fn remote_keys(&self, identity: &Address) -> Option<Vec<(String, VerifyingKey)>> {
        let r = self.remote.get(identity)?;
        Some(
            r.keys
                .iter()
                .filter_map(|(k, pk)| public_key_from_b64url(pk).ok().map(|v| (k.clone(), v)))
                .collect(),
        )
    }
}

impl Directory for FedDirectory<'_> {
    fn registered_type(&self, identity: &Address) -> Option<String> {
        self.local
            .registered_type(identity)
            .or_else(|| self.remote.get(identity)?.kind.clone())
    }

    fn active_signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.local.active_signing_key(identity, key_id).or_else(|| {
            self.remote_keys(identity)?
                .into_iter()
                .find(|(k, _)| k == key_id)
                .map(|(_, v)| v)
        })
    }

    /// A remote sender's key its home node lists as `retired` (v1.0 §7.4); local
    /// identities have none (their keys are active or revoked).
    fn retired_signing_key(&self, identity: &Address, key_id: &str) -> Option<RetiredKey> {
        let (kid, pk, at) = self
            .remote
            .get(identity)?
            .retired
            .iter()
            .find(|(k, _, _)| k == key_id)?;
        let retired_at = match at {
            None => None,
            // Stored only after the document verified; a value that no longer parses is
            // treated as the document's rule would be: the key cannot be judged, so unused.
            Some(t) => Some(Timestamp::parse(t).ok()?),
        };
        Some(RetiredKey {
            key_id: kid.clone(),
            key: public_key_from_b64url(pk).ok()?,
            retired_at,
        })
    }
}

impl DelegationResolver for FedDirectory<'_> {
    fn signing_keys(&self, identity: &Address) -> Option<Vec<(String, VerifyingKey)>> {
        self.local
            .signing_keys(identity)
            .or_else(|| self.remote_keys(identity))
    }

    fn identity_type(&self, identity: &Address) -> Option<SenderType> {
        SenderType::parse(&self.registered_type(identity)?)
    }

    fn is_revoked(&self, link: &LinkRef<'_>) -> bool {
        self.local.is_revoked(link)
    }
}

impl Service {
    /// Resolves the remote `who` from its home node `peer` (or the store's earlier answer),
    /// re-fetching when `key_id` is not among its keys. Beside the identity: why the home
    /// node's answer was refused, when it served a document that does not verify — a
    /// `node_signature` in neither form, or a document for someone else (§15.4, DESIGN.md
    /// §9) — so the refusal names it instead of calling the identity unknown. Each such
    /// refusal is logged (§23.2 "log security events").
    pub(super) async fn remote_identity(
        &self,
        who: &Address,
        peer: &Peer,
        key_id: &str,
    ) -> ApiResult<(Option<RemoteIdentity>, Option<ApiError>)> {
        let id = who.to_string();
        let stored = fed_store::remote_identity(&self.store.read(), &id)?;
        if let Some(r) = &stored {
            let fresh_enough = !self.may_refetch(Timestamp::parse(&r.fetched_at).ok());
            if r.lists_key(key_id)
                || fresh_enough
                || self.deviations.federation.no_refetch_on_unknown_key
            {
                return Ok((stored, None));
            }
        }
        let url = identity_url(&peer.identity_template, &id);
        let Ok(reply) = self.fed.client.request("GET", &url, &[], Vec::new()).await else {
            return Ok((stored, None));
        };
        if reply.status != 200 {
            return Ok((stored, None));
        }
        let Ok(doc) = loom_protocol::jcs::parse_strict_bytes(&reply.body) else {
            return Ok((stored, None));
        };
        let refused = |field: &str, why: String| {
            tracing::warn!(peer = %peer.keys.node, identity = %id, %url, field, reason = %why,
                "federation: remote identity document refused");
            ApiError::new(
                ErrorCode::SignatureInvalid,
                field,
                format!(
                    "the identity document of {id} served by node {}: {why}",
                    peer.keys.node
                ),
                "v1.1 §15.4; DESIGN.md §9",
            )
        };
        let v = match verify_identity_document(&doc, &peer.keys) {
            Ok(v) => v,
            Err(e) => {
                let field = if e.field.starts_with("node_signature") {
                    "node_signature".to_owned()
                } else {
                    format!("node_signature ({})", e.field)
                };
                return Ok((stored, Some(refused(&field, e.rule))));
            }
        };
        if v.id != *who {
            let why = format!("the document is for {}", v.id);
            return Ok((stored, Some(refused("id", why))));
        }
        let ident = RemoteIdentity {
            kind: v.kind,
            keys: v
                .signing_keys
                .iter()
                .map(|(k, pk)| (k.clone(), public_key_to_b64url(pk)))
                .collect(),
            retired: v
                .retired_keys
                .iter()
                .map(|k| {
                    (
                        k.key_id.clone(),
                        public_key_to_b64url(&k.key),
                        k.retired_at.map(|t| t.to_rfc3339()),
                    )
                })
                .collect(),
            fetched_at: self.env.now().to_rfc3339(),
        };
        self.put_remote_identity(&id, &peer.keys.node, &ident, &doc)?;
        Ok((Some(ident), None))
    }

    /// Resolves the issuer of the capability token `env` presents (v1.1 §12.4) when it is a
    /// remote identity, from its home node as remote senders are (node-signed document,
    /// cached in the store), so that the writer's capability check — which reads keys from
    /// the store (`store::resolvers`) — can verify a token issued on another node (§12:
    /// "portable across federation … verifiable offline"). Nothing to do for a local or
    /// bridged issuer, or an envelope without a token. When the issuer cannot be resolved
    /// (home node unreachable, or its document does not verify) and nothing is cached, the
    /// envelope is refused here with `CAPABILITY_DENIED` naming why; nothing is stored.
    pub(crate) async fn resolve_token_issuer(&self, env: &Value) -> ApiResult<()> {
        let Some((issuer, key_id)) = presented_token_issuer(env) else {
            return Ok(());
        };
        if self.is_local(&issuer) || issuer.is_bridge() {
            return Ok(());
        }
        let home = issuer.domain().to_ascii_lowercase();
        let denied = |why: String| {
            ApiError::new(
                ErrorCode::CapabilityDenied,
                "content.structured.parameters.capability_token.issued_by",
                format!("the token's issuer {issuer} cannot be verified: {why}"),
                "v1.1 §12.1, §15.2",
            )
        };
        let peer = self.peer(&home).await.map_err(|e| {
            denied(format!(
                "its home node {home} could not be reached: {}",
                e.reason
            ))
        })?;
        match self.remote_identity(&issuer, &peer, &key_id).await? {
            (Some(_), _) => Ok(()),
            (None, Some(refused)) => Err(denied(refused.reason)),
            (None, None) => Err(denied(format!(
                "its home node {home} did not answer with a verifiable identity document"
            ))),
        }
    }

    fn put_remote_identity(
        &self,
        id: &str,
        node: &str,
        ident: &RemoteIdentity,
        doc: &Value,
    ) -> ApiResult<()> {
        let tx = self.store.begin()?;
        fed_store::put_remote_identity(&tx, id, node, ident, doc)?;
        tx.commit()?;
        Ok(())
    }
}
