//! Delegation links and chain verification (v1.1 §13; v1.0 §12).
//!
//! A link is signed by its delegator over
//! `LOOM-DELEGATION-SIG-v1 ‖ 0x00 ‖ JCS(link − signature − signature_context)` (§13.3.1; the
//! existing v1.1 node's published delegation vector verifies only with `signature_context`
//! left out, which matches how `signature.context` sits outside an envelope's signed form,
//! §7.2). §13.3.1 does not say whether the `signature_context` member is inside the signed
//! bytes, and the existing node's verifier includes it (DESIGN.md §9), so a verifier accepts
//! both readings — the member outside or inside the JCS, the context prefix always
//! ([`ChainPolicy::accept_context_in_payload`]). Legacy unprefixed signatures are accepted when
//! `signature_context` is absent, as for envelopes (§7.3). The signing key is named by the link's `key_id` (the existing
//! v1.1 node also reads `signature_key_id`); without one the delegator must have exactly
//! one signing key. Chains are verified in the order of §13.3 and every failure is
//! `DELEGATION_INVALID` naming the link and member.

use crate::address::Address;
use crate::clock::Clock;
use crate::envelope::SenderType;
use crate::envelope::validate::is_versioned_intent;
use crate::error::{ErrorCode, ProtocolError};
use crate::id::KeyId;
use crate::jcs::to_canonical_bytes_without;
use crate::keys::{SigContext, sign_b64url, signature_from_b64url, verify};
use crate::scope::{check_scope_syntax, is_scope_subset, scopes_allow};
use crate::time::Timestamp;
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Chain verification limits (v1.1 §13.3 steps 3–5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainPolicy {
    /// `maxChainLength`: most links a chain may have (default 10).
    pub max_chain_length: usize,
    /// `enforceRootDelegatorType`: the root delegator must not be an agent (default on).
    pub enforce_root_delegator_type: bool,
    /// `maxCreatedAtFutureSkewMs`: how far in the future `created_at` may be (default 5 min).
    pub max_created_at_future_skew_ms: i64,
    /// Accept unprefixed (legacy) link signatures during the migration window (§13.3.1).
    pub accept_legacy_signatures: bool,
    /// Also verify the reading of §13.3.1 in which `signature_context` is inside the signed
    /// bytes (the spec is silent; the existing node verifies that way, DESIGN.md §9).
    pub accept_context_in_payload: bool,
}

impl Default for ChainPolicy {
    fn default() -> Self {
        ChainPolicy {
            max_chain_length: 10,
            enforce_root_delegator_type: true,
            max_created_at_future_skew_ms: 5 * 60 * 1000,
            accept_legacy_signatures: true,
            accept_context_in_payload: true,
        }
    }
}

/// What chain verification needs to know about the world.
pub trait DelegationResolver {
    /// The active signing keys of `identity` as `(key_id, key)`; `None` if it is unknown.
    fn signing_keys(&self, identity: &Address) -> Option<Vec<(String, VerifyingKey)>>;
    /// The registered type of `identity`; `None` if it is unknown.
    fn identity_type(&self, identity: &Address) -> Option<SenderType>;
    /// Whether this link has been revoked (§13.4).
    fn is_revoked(&self, link: &LinkRef<'_>) -> bool;
}

/// The parts of a link a revocation check looks at.
#[derive(Debug, Clone, Copy)]
pub struct LinkRef<'a> {
    /// Link `id`, if it has one.
    pub id: Option<&'a str>,
    /// Delegator.
    pub delegator: &'a Address,
    /// Delegate.
    pub delegate: &'a Address,
    /// When the link was made.
    pub created_at: Timestamp,
}

/// A revocation list (v1.1 §13.4): by link id, and by (delegator, delegate) pair as the
/// `delegation.revoked@v1` notice carries them (v1.0 §12.5). A pair revocation voids links
/// created at or before `revoked_at`, so a fresh delegation made afterwards is valid again.
#[derive(Debug, Clone, Default)]
pub struct RevocationList {
    by_id: BTreeMap<String, Timestamp>,
    by_pair: BTreeMap<(Address, Address), Timestamp>,
}

impl RevocationList {
    /// Records the revocation of one link by id.
    pub fn revoke_id(&mut self, id: &str, at: Timestamp) {
        self.by_id.insert(id.to_owned(), at);
    }

    /// Records a `delegation.revoked@v1` for a delegator/delegate pair.
    pub fn revoke_pair(&mut self, delegator: Address, delegate: Address, revoked_at: Timestamp) {
        let e = self
            .by_pair
            .entry((delegator, delegate))
            .or_insert(revoked_at);
        *e = (*e).max(revoked_at);
    }

    /// Whether `link` is revoked.
    pub fn contains(&self, link: &LinkRef<'_>) -> bool {
        link.id.is_some_and(|id| self.by_id.contains_key(id))
            || self
                .by_pair
                .get(&(link.delegator.clone(), link.delegate.clone()))
                .is_some_and(|at| link.created_at <= *at)
    }
}

/// Members of a link outside its signed form (§13.3.1).
pub const UNSIGNED_LINK_MEMBERS: [&str; 2] = ["signature", "signature_context"];

/// Canonical bytes of a link for signing: JCS of the link without `signature` and
/// `signature_context` (§13.3.1).
pub fn delegation_signing_payload(link: &Value) -> Option<Vec<u8>> {
    to_canonical_bytes_without(link, &UNSIGNED_LINK_MEMBERS)
}

/// The other reading of §13.3.1: JCS of the link without `signature` only, so that
/// `signature_context` is signed (how the existing node verifies, DESIGN.md §9).
pub fn delegation_signing_payload_with_context(link: &Value) -> Option<Vec<u8>> {
    to_canonical_bytes_without(link, &["signature"])
}

/// Signs a delegation link in place: sets `key_id`, `signature_context` and `signature`.
pub fn sign_delegation_link(
    link: &mut Value,
    key: &SigningKey,
    key_id: &KeyId,
) -> Result<(), ProtocolError> {
    sign_link_with(link, key, key_id, Some(SigContext::DELEGATION))
}

/// Signs a link in the legacy form (no prefix, no `signature_context`), for migration tests.
pub fn sign_delegation_link_legacy(
    link: &mut Value,
    key: &SigningKey,
    key_id: &KeyId,
) -> Result<(), ProtocolError> {
    sign_link_with(link, key, key_id, None)
}

fn sign_link_with(
    link: &mut Value,
    key: &SigningKey,
    key_id: &KeyId,
    context: Option<SigContext>,
) -> Result<(), ProtocolError> {
    let obj = link.as_object_mut().ok_or_else(|| {
        ProtocolError::new(
            ErrorCode::DelegationInvalid,
            "$",
            "a delegation link is a JSON object",
            "v1.1 §13.1",
        )
    })?;
    obj.remove("signature");
    obj.remove("signature_context");
    obj.insert("key_id".into(), Value::String(key_id.to_string()));
    if let Some(ctx) = context {
        obj.insert("signature_context".into(), Value::String(ctx.0.into()));
    }
    let payload = delegation_signing_payload(link).unwrap_or_default();
    link["signature"] = Value::String(sign_b64url(key, context, &payload));
    Ok(())
}

/// The action an envelope performs, for the leaf-scope check of §13.3 step 6: its
/// structured intent when it has one in cleartext (`task.create@v1`; the intent is what the
/// envelope asks to be done, §18.1), otherwise `{type}.send@v1` (plain or encrypted content).
pub fn envelope_action(envelope: &Value) -> String {
    let intent = envelope
        .pointer("/content/structured/intent")
        .and_then(Value::as_str)
        .filter(|i| is_versioned_intent(i));
    match intent {
        Some(i) => i.to_owned(),
        None => {
            let kind = envelope
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("message");
            format!("{kind}.send@v1")
        }
    }
}

fn deny(field: impl Into<String>, rule: impl Into<String>, section: &'static str) -> ProtocolError {
    ProtocolError::new(ErrorCode::DelegationInvalid, field, rule, section)
}

/// A link after its own checks, for the cross-link checks.
struct CheckedLink {
    delegator: Address,
    delegate: Address,
    scope: Vec<String>,
    allow_sub_delegation: bool,
    max_sub_delegation_depth: Option<u64>,
}

/// Verifies `from.delegation_chain` of an agent envelope (v1.1 §13.3 steps 2–7).
/// The envelope's own signature (step 1) is checked by the caller beforehand.
pub fn verify_delegation_chain(
    envelope: &Value,
    resolver: &dyn DelegationResolver,
    policy: &ChainPolicy,
    clock: &dyn Clock,
) -> Result<(), ProtocolError> {
    let sender = envelope
        .pointer("/from/identity")
        .and_then(Value::as_str)
        .and_then(|s| Address::parse_wire(s).ok())
        .ok_or_else(|| {
            deny(
                "from.identity",
                "sender identity is required to verify a delegation chain",
                "v1.1 §13.3",
            )
        })?;
    let chain = envelope
        .pointer("/from/delegation_chain")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            deny(
                "from.delegation_chain",
                "agent envelopes must include the full delegation chain",
                "v1.1 §13.5",
            )
        })?;
    if chain.len() > policy.max_chain_length {
        return Err(deny(
            "from.delegation_chain",
            format!(
                "chain has {} links; at most {} are allowed (maxChainLength)",
                chain.len(),
                policy.max_chain_length
            ),
            "v1.1 §13.3",
        ));
    }
    let now = clock.now();
    let mut links: Vec<CheckedLink> = Vec::with_capacity(chain.len());
    for (i, raw) in chain.iter().enumerate() {
        let link = verify_link(raw, i, resolver, policy, now)?;
        let path = format!("from.delegation_chain[{i}]");
        if i == 0
            && link.scope.iter().any(|s| s == "*")
            && resolver.identity_type(&link.delegator) != Some(SenderType::Human)
        {
            return Err(deny(
                format!("{path}.scope"),
                "'*' is only valid for a root human→agent delegation",
                "v1.1 §13.2",
            ));
        }
        if i == 0 && policy.enforce_root_delegator_type {
            match resolver.identity_type(&link.delegator) {
                Some(SenderType::Agent) => {
                    return Err(deny(
                        format!("{path}.delegator"),
                        "the root delegator must not be an agent identity",
                        "v1.1 §13.3",
                    ));
                }
                None => {
                    return Err(deny(
                        format!("{path}.delegator"),
                        "the root delegator identity cannot be resolved",
                        "v1.1 §13.3",
                    ));
                }
                Some(_) => {}
            }
        }
        if let Some(prev) = links.last() {
            if prev.delegate != link.delegator {
                return Err(deny(
                    format!("{path}.delegator"),
                    "each link's delegator must be the previous link's delegate",
                    "v1.1 §13.3",
                ));
            }
            if !prev.allow_sub_delegation {
                return Err(deny(
                    path.to_string(),
                    "the previous link forbids sub-delegation (allow_sub_delegation: false)",
                    "v1.1 §13.1",
                ));
            }
            if !is_scope_subset(&link.scope, &prev.scope) {
                return Err(deny(
                    format!("{path}.scope"),
                    "sub-delegation scope must be a subset of the parent scope",
                    "v1.1 §13.2",
                ));
            }
        }
        // Every earlier link bounds how many links may follow it.
        for (j, earlier) in links.iter().enumerate() {
            if let Some(max) = earlier.max_sub_delegation_depth
                && (i - j) as u64 > max
            {
                return Err(deny(
                    format!("from.delegation_chain[{j}].max_sub_delegation_depth"),
                    format!("link {j} allows {max} sub-delegation level(s); the chain has more"),
                    "v1.1 §13.1",
                ));
            }
        }
        links.push(link);
    }
    let Some(leaf) = links.last() else {
        return Err(deny(
            "from.delegation_chain",
            "the delegation chain is empty",
            "v1.1 §13.5",
        ));
    };
    if leaf.delegate != sender {
        return Err(deny(
            format!("from.delegation_chain[{}].delegate", links.len() - 1),
            "the leaf delegate must be the envelope sender (from.identity)",
            "v1.1 §13.3",
        ));
    }
    let action = envelope_action(envelope);
    if !scopes_allow(&leaf.scope, &action) {
        return Err(deny(
            format!("from.delegation_chain[{}].scope", links.len() - 1),
            format!("the leaf scope does not permit the envelope action {action}"),
            "v1.1 §13.3",
        ));
    }
    Ok(())
}

fn address_member(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Address, ProtocolError> {
    obj.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            deny(
                format!("{path}.{key}"),
                format!("{key} is required"),
                "v1.1 §13.1",
            )
        })
        .and_then(|s| {
            Address::parse_wire(s).map_err(|e| deny(format!("{path}.{key}"), e.reason, "v1.1 §6.1"))
        })
}

fn timestamp_member(
    obj: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<Timestamp>, ProtocolError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Timestamp::parse(s)
            .map(Some)
            .map_err(|e| deny(format!("{path}.{key}"), e.to_string(), "v1.1 §13.3")),
        Some(_) => Err(deny(
            format!("{path}.{key}"),
            format!("{key} must be an ISO 8601 string"),
            "v1.1 §13.3",
        )),
    }
}

/// The per-link checks of v1.1 §13.3 step 5 (and the shape of §13.1).
fn verify_link(
    raw: &Value,
    i: usize,
    resolver: &dyn DelegationResolver,
    policy: &ChainPolicy,
    now: Timestamp,
) -> Result<CheckedLink, ProtocolError> {
    let path = format!("from.delegation_chain[{i}]");
    let obj = raw.as_object().ok_or_else(|| {
        deny(
            path.clone(),
            "a delegation link is a JSON object",
            "v1.1 §13.1",
        )
    })?;
    let delegator = address_member(obj, "delegator", &path)?;
    let delegate = address_member(obj, "delegate", &path)?;
    let scope: Vec<String> = match obj.get("scope") {
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|s| s.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                deny(
                    format!("{path}.scope"),
                    "scope entries must be strings",
                    "v1.1 §13.2",
                )
            })?,
        _ => {
            return Err(deny(
                format!("{path}.scope"),
                "scope must be a non-empty array of scope strings",
                "v1.1 §13.1",
            ));
        }
    };
    for (k, s) in scope.iter().enumerate() {
        check_scope_syntax(s)
            .map_err(|e| deny(format!("{path}.scope[{k}]"), e.to_string(), "v1.1 §13.2"))?;
        if s == "*" && i > 0 {
            return Err(deny(
                format!("{path}.scope[{k}]"),
                "'*' is only valid on the root human→agent delegation",
                "v1.1 §13.2",
            ));
        }
    }
    let created_at = timestamp_member(obj, "created_at", &path)?.ok_or_else(|| {
        deny(
            format!("{path}.created_at"),
            "created_at is required",
            "v1.1 §13.3",
        )
    })?;
    if created_at.unix_ms() > now.unix_ms() + policy.max_created_at_future_skew_ms {
        return Err(deny(
            format!("{path}.created_at"),
            format!(
                "created_at is more than {} ms in the future",
                policy.max_created_at_future_skew_ms
            ),
            "v1.1 §13.3",
        ));
    }
    let expires_at = timestamp_member(obj, "expires_at", &path)?;
    // "not expired (`expires_at` not in the past)": valid up to and including the instant.
    if expires_at.is_some_and(|e| e < now) {
        return Err(deny(
            format!("{path}.expires_at"),
            "the delegation has expired",
            "v1.1 §13.3",
        ));
    }
    verify_link_signature(raw, obj, &delegator, &path, resolver, policy)?;
    let id = obj.get("id").and_then(Value::as_str);
    if resolver.is_revoked(&LinkRef {
        id,
        delegator: &delegator,
        delegate: &delegate,
        created_at,
    }) {
        return Err(deny(path, "the delegation has been revoked", "v1.1 §13.4"));
    }
    // Fail closed: a link that does not say it may be sub-delegated may not be (§13.1).
    let allow_sub_delegation = match obj.get("allow_sub_delegation") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(deny(
                format!("{path}.allow_sub_delegation"),
                "allow_sub_delegation must be a boolean",
                "v1.1 §13.1",
            ));
        }
    };
    let max_sub_delegation_depth = match obj.get("max_sub_delegation_depth") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            deny(
                format!("{path}.max_sub_delegation_depth"),
                "max_sub_delegation_depth must be a non-negative integer",
                "v1.1 §13.1",
            )
        })?),
    };
    Ok(CheckedLink {
        delegator,
        delegate,
        scope,
        allow_sub_delegation,
        max_sub_delegation_depth,
    })
}

/// Signature check of one link (v1.1 §13.3 step 5, §13.3.1).
fn verify_link_signature(
    raw: &Value,
    obj: &Map<String, Value>,
    delegator: &Address,
    path: &str,
    resolver: &dyn DelegationResolver,
    policy: &ChainPolicy,
) -> Result<(), ProtocolError> {
    let field = |m: &str| format!("{path}.{m}");
    let sig = link_signature(obj).map_err(|f| match f {
        LinkSignatureFailure::Missing => deny(field("signature"), f.rule(), "v1.1 §13.1"),
        f => deny(field("signature"), f.rule(), "v1.1 §13.3.1"),
    })?;
    let keys = resolver.signing_keys(delegator).ok_or_else(|| {
        deny(
            field("delegator"),
            "delegator identity not found",
            "v1.1 §13.3",
        )
    })?;
    verify_link_with(raw, obj, &sig, &keys, policy).map_err(|f| match f {
        LinkSignatureFailure::UnknownKey | LinkSignatureFailure::KeyIdRequired => {
            deny(field("key_id"), f.rule(), "v1.1 §13.3")
        }
        LinkSignatureFailure::UnknownContext => {
            deny(field("signature_context"), f.rule(), "v1.1 §13.3.1")
        }
        f => deny(field("signature"), f.rule(), "v1.1 §13.3.1"),
    })
}

/// Why a link's signature cannot be checked or does not verify (§13.3.1). Chain
/// verification and link storage report it with their own codes and field paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkSignatureFailure {
    /// `signature` is absent.
    Missing,
    /// `signature` is not a base64url Ed25519 signature.
    Malformed(String),
    /// `key_id` (or `signature_key_id`) is not an active signing key of the delegator.
    UnknownKey,
    /// No `key_id`, and the delegator does not have exactly one signing key.
    KeyIdRequired,
    /// `signature_context` names another context.
    UnknownContext,
    /// The signature does not verify.
    Mismatch,
}

impl LinkSignatureFailure {
    /// The rule broken, in words.
    pub fn rule(&self) -> String {
        match self {
            LinkSignatureFailure::Missing => "signature (base64url) is required".into(),
            LinkSignatureFailure::Malformed(reason) => reason.clone(),
            LinkSignatureFailure::UnknownKey => {
                "key_id is not an active signing key of the delegator".into()
            }
            LinkSignatureFailure::KeyIdRequired => {
                "key_id is required when the delegator has several signing keys".into()
            }
            LinkSignatureFailure::UnknownContext => {
                "unknown signature context; only LOOM-DELEGATION-SIG-v1 is defined".into()
            }
            LinkSignatureFailure::Mismatch => {
                "Ed25519 signature of the delegator does not verify".into()
            }
        }
    }
}

/// The link's `signature` member, decoded (§13.1).
pub fn link_signature(
    obj: &Map<String, Value>,
) -> Result<ed25519_dalek::Signature, LinkSignatureFailure> {
    let sig = obj
        .get("signature")
        .and_then(Value::as_str)
        .ok_or(LinkSignatureFailure::Missing)?;
    signature_from_b64url(sig).map_err(|e| LinkSignatureFailure::Malformed(e.reason.to_string()))
}

/// §13.3.1 with the delegator's active signing `keys` (`(key_id, key)`): the key named by
/// `key_id` (or `signature_key_id`), else the delegator's only key; the prefixed form (with
/// `signature_context` outside the signed bytes, or inside them when the policy accepts that
/// reading), or the legacy form when `signature_context` is absent and the policy accepts
/// legacy signatures (§7.3 migration).
pub fn verify_link_with(
    raw: &Value,
    obj: &Map<String, Value>,
    sig: &ed25519_dalek::Signature,
    keys: &[(String, VerifyingKey)],
    policy: &ChainPolicy,
) -> Result<(), LinkSignatureFailure> {
    let key_id = obj
        .get("key_id")
        .or_else(|| obj.get("signature_key_id"))
        .and_then(Value::as_str);
    let key = match key_id {
        Some(id) => keys
            .iter()
            .find(|(k, _)| k == id)
            .map(|(_, key)| *key)
            .ok_or(LinkSignatureFailure::UnknownKey)?,
        None if keys.len() == 1 => keys[0].1,
        None => return Err(LinkSignatureFailure::KeyIdRequired),
    };
    let payload = delegation_signing_payload(raw).unwrap_or_default();
    let prefixed = |payload: &[u8]| verify(&key, Some(SigContext::DELEGATION), payload, sig);
    let ok = match obj.get("signature_context") {
        Some(Value::String(c)) if c == SigContext::DELEGATION.0 => {
            prefixed(&payload)
                || (policy.accept_context_in_payload
                    && prefixed(&delegation_signing_payload_with_context(raw).unwrap_or_default()))
        }
        Some(_) => return Err(LinkSignatureFailure::UnknownContext),
        None => {
            prefixed(&payload)
                || (policy.accept_legacy_signatures && verify(&key, None, &payload, sig))
        }
    };
    if ok {
        Ok(())
    } else {
        Err(LinkSignatureFailure::Mismatch)
    }
}

/// The delegator of a link submitted for storage: the authenticated caller, whether it is
/// a human (only a human may delegate `*`, §13.2) and its active signing keys.
#[derive(Debug, Clone, Copy)]
pub struct Delegator<'a> {
    /// The authenticated identity.
    pub identity: &'a Address,
    /// Whether it is registered as `human`.
    pub is_human: bool,
    /// Its active signing keys, `(key_id, key)`.
    pub keys: &'a [(String, VerifyingKey)],
}

/// A delegation link checked for storage ([`check_new_link`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLink {
    /// The link's own `id`, if it carries one.
    pub id: Option<String>,
    /// Delegator (the caller).
    pub delegator: Address,
    /// Delegate.
    pub delegate: Address,
    /// Scopes (§13.2).
    pub scope: Vec<String>,
    /// The link's `created_at`.
    pub created_at: Timestamp,
    /// The link's `expires_at`.
    pub expires_at: Timestamp,
}

fn link_invalid(field: impl Into<String>, rule: impl Into<String>) -> ProtocolError {
    ProtocolError::invalid(field, rule, "v1.1 §13.1")
}

fn new_link_time(o: &Map<String, Value>, k: &str) -> Result<Option<Timestamp>, ProtocolError> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Timestamp::parse(s)
            .map(Some)
            .map_err(|e| link_invalid(k, e.to_string())),
        Some(_) => Err(link_invalid(k, format!("{k} must be an ISO 8601 string"))),
    }
}

fn valid_link_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A link a delegator submits for storage (`POST /v1/delegations`, §16.5), at `now`: the
/// §13.1 shape (malformed members are `ENVELOPE_INVALID`), delegator = the caller
/// (`CAPABILITY_DENIED`), no self-delegation, §13.2 scope syntax with `*` only from a human,
/// `created_at` at most [`ChainPolicy::default`]'s skew ahead and `expires_at` in the future
/// (`DELEGATION_INVALID`, §13.3), an optional `id` of 1–64 `[A-Za-z0-9_-]`, and the
/// delegator's signature (§13.3.1; legacy accepted when `signature_context` is absent).
pub fn check_new_link(
    link: &Value,
    caller: Delegator<'_>,
    now: Timestamp,
) -> Result<NewLink, ProtocolError> {
    let o = link
        .as_object()
        .ok_or_else(|| link_invalid("$body", "a delegation link is a JSON object"))?;
    let addr = |k: &str| {
        o.get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| link_invalid(k, format!("{k} is required (a LOOM address)")))
            .and_then(|s| {
                Address::parse_wire(s).map_err(|e| {
                    ProtocolError::invalid(k, format!("not a LOOM address: {e}"), "v1.1 §6.1")
                })
            })
    };
    let delegator = addr("delegator")?;
    let delegate = addr("delegate")?;
    if delegator != *caller.identity {
        return Err(ProtocolError::new(
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
        return Err(link_invalid(
            "delegate",
            "an identity cannot delegate to itself",
        ));
    }
    let scope = o
        .get("scope")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| link_invalid("scope", "scope must be a non-empty array of scopes"))?;
    let mut scopes = Vec::with_capacity(scope.len());
    for (i, s) in scope.iter().enumerate() {
        let field = format!("scope[{i}]");
        let s = s
            .as_str()
            .ok_or_else(|| link_invalid(field.clone(), "scope entries are strings"))?;
        check_scope_syntax(s)
            .map_err(|e| ProtocolError::invalid(field.clone(), e.to_string(), "v1.1 §13.2"))?;
        if s == "*" && !caller.is_human {
            return Err(ProtocolError::invalid(
                field,
                "'*' is only valid for a root human→agent delegation",
                "v1.1 §13.2",
            ));
        }
        scopes.push(s.to_owned());
    }
    let skew = ChainPolicy::default().max_created_at_future_skew_ms;
    let created_at = new_link_time(o, "created_at")?
        .ok_or_else(|| link_invalid("created_at", "created_at is required"))?;
    if created_at.unix_ms() > now.unix_ms() + skew {
        return Err(deny(
            "created_at",
            format!("created_at is more than {skew} ms in the future"),
            "v1.1 §13.3",
        ));
    }
    let expires_at = new_link_time(o, "expires_at")?
        .ok_or_else(|| link_invalid("expires_at", "expires_at is required"))?;
    if expires_at <= now {
        return Err(deny(
            "expires_at",
            "the delegation has already expired",
            "v1.1 §13.3",
        ));
    }
    for k in ["revocable", "allow_sub_delegation"] {
        if o.get(k).is_some_and(|v| !v.is_boolean() && !v.is_null()) {
            return Err(link_invalid(k, format!("{k} must be a boolean")));
        }
    }
    if o.get("max_sub_delegation_depth")
        .is_some_and(|v| !v.is_null() && v.as_u64().is_none())
    {
        return Err(link_invalid(
            "max_sub_delegation_depth",
            "max_sub_delegation_depth must be a non-negative integer",
        ));
    }
    let id = match o.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if valid_link_id(s) => Some(s.clone()),
        Some(_) => return Err(link_invalid("id", "id must be 1-64 of [A-Za-z0-9_-]")),
    };
    let sig = link_signature(o).map_err(|f| link_invalid("signature", f.rule()))?;
    verify_link_with(link, o, &sig, caller.keys, &ChainPolicy::default()).map_err(|f| match f {
        LinkSignatureFailure::UnknownKey => deny("key_id", f.rule(), "v1.1 §13.3"),
        LinkSignatureFailure::KeyIdRequired => link_invalid("key_id", f.rule()),
        LinkSignatureFailure::UnknownContext => link_invalid("signature_context", f.rule()),
        f => deny("signature", f.rule(), "v1.1 §13.3.1"),
    })?;
    Ok(NewLink {
        id,
        delegator,
        delegate,
        scope: scopes,
        created_at,
        expires_at,
    })
}

/// The lifecycle status of a stored link (§13.3, §13.4): `revoked`, `expired` (its
/// `expires_at` has passed at `now`) or `active`.
pub fn link_status(link: &Value, revoked: bool, now: Timestamp) -> &'static str {
    let expired = link
        .get("expires_at")
        .and_then(Value::as_str)
        .and_then(|s| Timestamp::parse(s).ok())
        .is_some_and(|e| e < now);
    if revoked {
        "revoked"
    } else if expired {
        "expired"
    } else {
        "active"
    }
}

/// A link signed with `revocable: false` cannot be revoked (§13.1).
pub fn check_revocable(link: &Value) -> Result<(), ProtocolError> {
    if link.get("revocable") == Some(&Value::Bool(false)) {
        return Err(ProtocolError::new(
            ErrorCode::StateTransitionInvalid,
            "delegation_id",
            "the link was signed with revocable: false",
            "v1.1 §13.1",
        ));
    }
    Ok(())
}
