//! Capability tokens (v1.1 §12; v1.0 §11): portable, self-contained, signed grants for
//! actions on a thread, and the proof-of-possession hardening of §12.6.
//!
//! A token is signed by its issuer over `JCS(token − signature)` (§12.1 gives no context
//! prefix for tokens). Authorization checks, in order: shape, issuer signature, thread,
//! holder, expiry, epoch against the thread's `cap_epoch` (§12.3), revocation, single use
//! (§12.5), grant (`admin` is a superset, §12.2), the `scope` limits (envelope types, depth,
//! priority) and, for sensitive intents of a token bound to a key, the PoP proof.

use crate::address::Address;
use crate::clock::Clock;
use crate::envelope::Priority;
use crate::error::{ErrorCode, ProtocolError};
use crate::id::{CapabilityId, EnvelopeId, KeyId, KeyKind, ThreadId};
use crate::jcs::{to_canonical_bytes, to_canonical_bytes_without};
use crate::keys::{SigContext, sign_b64url, signature_from_b64url, verify};
use crate::time::Timestamp;
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::{Map, Value, json};

/// The grants of v1.1 §12.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Grant {
    /// Read envelopes in thread.
    Read,
    /// Send envelopes to thread.
    Reply,
    /// Share thread/envelope externally.
    Forward,
    /// Transfer thread ownership.
    Delegate,
    /// Create forks.
    Fork,
    /// Merge forks.
    Merge,
    /// Invite participants.
    AddParticipant,
    /// Remove participants.
    RemoveParticipant,
    /// Raise priority / route to a supervisor.
    Escalate,
    /// Resolve thread.
    Resolve,
    /// Archive thread.
    Archive,
    /// Lock thread.
    Lock,
    /// Add/remove labels.
    Label,
    /// Superset of all grants.
    Admin,
}

impl Grant {
    /// Every grant, in registry order.
    pub const ALL: [Grant; 14] = [
        Grant::Read,
        Grant::Reply,
        Grant::Forward,
        Grant::Delegate,
        Grant::Fork,
        Grant::Merge,
        Grant::AddParticipant,
        Grant::RemoveParticipant,
        Grant::Escalate,
        Grant::Resolve,
        Grant::Archive,
        Grant::Lock,
        Grant::Label,
        Grant::Admin,
    ];

    /// Wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Grant::Read => "read",
            Grant::Reply => "reply",
            Grant::Forward => "forward",
            Grant::Delegate => "delegate",
            Grant::Fork => "fork",
            Grant::Merge => "merge",
            Grant::AddParticipant => "add_participant",
            Grant::RemoveParticipant => "remove_participant",
            Grant::Escalate => "escalate",
            Grant::Resolve => "resolve",
            Grant::Archive => "archive",
            Grant::Lock => "lock",
            Grant::Label => "label",
            Grant::Admin => "admin",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Grant> {
        Grant::ALL.into_iter().find(|g| g.as_str() == s)
    }

    /// Does holding `self` permit an action that needs `required`? (`admin` covers all, §12.2.)
    pub fn covers(self, required: Grant) -> bool {
        self == Grant::Admin || self == required
    }
}

/// The grant a thread operation needs (v1.1 §11.2 operations, §12.2 grants). Operations
/// without a grant of their own (`reopen`, encryption and capability bookkeeping) need `admin`.
pub fn grant_for_intent(intent: &str) -> Grant {
    match intent {
        "thread.add_participant@v1" => Grant::AddParticipant,
        "thread.remove_participant@v1" => Grant::RemoveParticipant,
        "thread.update@v1" => Grant::Label,
        "thread.resolve@v1" => Grant::Resolve,
        "thread.archive@v1" => Grant::Archive,
        "thread.lock@v1" => Grant::Lock,
        "thread.delegate@v1" => Grant::Delegate,
        "thread.fork@v1" => Grant::Fork,
        "thread.merge@v1" => Grant::Merge,
        "thread.link@v1" => Grant::Forward,
        _ => Grant::Admin,
    }
}

/// Intents that need a PoP proof when the token is bound to a key (v1.1 §12.6).
pub const POP_REQUIRED_INTENTS: [&str; 4] = [
    "delegation.revoked@v1",
    "encryption.epoch@v1",
    "encryption.rotate@v1",
    "capability.revoked@v1",
];

/// Canonical bytes of a token for signing: JCS of the token without `signature`.
pub fn capability_signing_payload(token: &Value) -> Option<Vec<u8>> {
    to_canonical_bytes_without(token, &["signature"])
}

/// Signs a token in place with the issuer's key, setting `signature {algorithm, key_id, value}`.
pub fn sign_capability_token(
    token: &mut Value,
    key: &SigningKey,
    key_id: &KeyId,
) -> Result<(), ProtocolError> {
    if !token.is_object() {
        return Err(deny(
            "$",
            "a capability token is a JSON object",
            "v1.1 §12.1",
        ));
    }
    token.as_object_mut().map(|o| o.remove("signature"));
    let payload = capability_signing_payload(token).unwrap_or_default();
    token["signature"] = json!({
        "algorithm": "Ed25519",
        "key_id": key_id.as_str(),
        "value": sign_b64url(key, None, &payload),
    });
    Ok(())
}

/// The PoP payload `{capability_id, envelope_id, timestamp}` of v1.1 §12.6, canonicalized.
pub fn pop_payload(capability_id: &str, envelope_id: &str, timestamp: &str) -> Vec<u8> {
    to_canonical_bytes(&json!({
        "capability_id": capability_id,
        "envelope_id": envelope_id,
        "timestamp": timestamp,
    }))
}

/// Makes a PoP signature (base64url) with the key named by the token's `cnf.key_id`.
pub fn sign_pop(
    key: &SigningKey,
    capability_id: &str,
    envelope_id: &str,
    timestamp: &str,
) -> String {
    sign_b64url(
        key,
        Some(SigContext::CAPABILITY_POP),
        &pop_payload(capability_id, envelope_id, timestamp),
    )
}

/// Verifies a PoP signature (v1.1 §12.6 "PoP verification").
pub fn verify_pop(
    key: &VerifyingKey,
    capability_id: &str,
    envelope_id: &str,
    timestamp: &str,
    signature: &str,
) -> bool {
    signature_from_b64url(signature).is_ok_and(|sig| {
        verify(
            key,
            Some(SigContext::CAPABILITY_POP),
            &pop_payload(capability_id, envelope_id, timestamp),
            &sig,
        )
    })
}

/// What token checks need to know about the world.
pub trait CapabilityResolver {
    /// The active signing key `key_id` of `identity`, if there is one.
    fn signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey>;
    /// The holder's key that a `cnf.key_id` names (v1.1 §12.6), if known. Key IDs are only
    /// unique per identity, so the lookup is scoped to `issued_to`.
    fn pop_key(&self, holder: &Address, key_id: &str) -> Option<VerifyingKey>;
    /// Whether `issuer` may grant capabilities on `thread` (a current owner, or a holder of
    /// `admin`; v1.0 §11.3 "Creation"). A self-signed token from anyone else is worthless.
    fn may_issue(&self, issuer: &Address, thread: &ThreadId) -> bool;
    /// Whether the token was revoked.
    fn is_revoked(&self, id: &CapabilityId) -> bool;
    /// Whether a single-use token was already spent (§12.5).
    fn is_spent(&self, id: &CapabilityId) -> bool;
}

/// A PoP proof as presented next to the token (`pop_signature`, `pop_timestamp`).
#[derive(Debug, Clone, Copy)]
pub struct PopProof<'a> {
    /// base64url signature.
    pub signature: &'a str,
    /// The timestamp that was signed.
    pub timestamp: &'a str,
}

/// The action a token is presented for.
#[derive(Debug, Clone, Copy)]
pub struct CapabilityRequest<'a> {
    /// Who presents the token (the envelope sender).
    pub actor: &'a Address,
    /// The thread acted on.
    pub thread_id: &'a ThreadId,
    /// The thread's current `cap_epoch`.
    pub thread_cap_epoch: u64,
    /// The grant the action needs.
    pub required: Grant,
    /// The envelope carrying the action.
    pub envelope_id: &'a EnvelopeId,
    /// Its `type`.
    pub envelope_type: &'a str,
    /// Its structured intent, if any.
    pub intent: Option<&'a str>,
    /// Its priority (`normal` when absent).
    pub priority: Priority,
    /// Its depth in the thread DAG (root = 0), if known.
    pub depth: Option<u64>,
    /// PoP proof, if presented.
    pub pop: Option<PopProof<'a>>,
}

/// A token that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizedCapability {
    /// Token id.
    pub id: CapabilityId,
    /// Issuer.
    pub issued_by: Address,
    /// Whether it must now be marked spent (§12.5).
    pub single_use: bool,
}

fn deny(field: impl Into<String>, rule: impl Into<String>, section: &'static str) -> ProtocolError {
    ProtocolError::new(ErrorCode::CapabilityDenied, field, rule, section)
}

/// A token whose signature fails is an invalid capability: `CAPABILITY_DENIED` ("missing or
/// invalid capability", v1.1 §24.2), the code §12.6 also uses for a failed PoP signature.
/// `SIGNATURE_INVALID` stays the envelope's own signature failing (§7.3).
fn bad_sig(field: impl Into<String>, rule: impl Into<String>) -> ProtocolError {
    ProtocolError::new(
        ErrorCode::CapabilityDenied,
        field,
        rule,
        "v1.1 §12.1, §24.2",
    )
}

fn str_member<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a str, ProtocolError> {
    obj.get(key).and_then(Value::as_str).ok_or_else(|| {
        deny(
            format!("capability_token.{key}"),
            format!("{key} is required (a string)"),
            "v1.1 §12.1",
        )
    })
}

fn address_member(obj: &Map<String, Value>, key: &str) -> Result<Address, ProtocolError> {
    Address::parse_wire(str_member(obj, key)?)
        .map_err(|e| deny(format!("capability_token.{key}"), e.reason, "v1.1 §6.1"))
}

/// Where an envelope presents a capability token (v1.1 §12.4, the preferred form):
/// `content.structured.parameters.capability_token`.
pub const PRESENTED_TOKEN_POINTER: &str = "/content/structured/parameters/capability_token";

/// The issuer of the token `envelope` presents ([`PRESENTED_TOKEN_POINTER`]) and the key id
/// its signature names: the identity whose key verifying the token needs. Tokens are
/// "portable across federation: self-contained, signed, and verifiable offline" (v1.1 §12),
/// so a node checking a token issued on another node resolves this identity from the
/// issuer's home node first, as it resolves remote senders (§15.4). `None` when there is no
/// token or it names no parsable issuer (then [`authorize_capability`] refuses it).
pub fn presented_token_issuer(envelope: &Value) -> Option<(Address, String)> {
    let token = envelope.pointer(PRESENTED_TOKEN_POINTER)?;
    let issuer = Address::parse_wire(token.get("issued_by")?.as_str()?).ok()?;
    let key_id = token
        .pointer("/signature/key_id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    Some((issuer, key_id))
}

/// Checks a presented token against an action (v1.1 §12.1–§12.6).
pub fn authorize_capability(
    token: &Value,
    req: &CapabilityRequest<'_>,
    resolver: &dyn CapabilityResolver,
    clock: &dyn Clock,
) -> Result<AuthorizedCapability, ProtocolError> {
    let obj = token.as_object().ok_or_else(|| {
        deny(
            "capability_token",
            "the capability token is a JSON object",
            "v1.1 §12.4",
        )
    })?;
    let id = CapabilityId::parse(str_member(obj, "id")?)
        .map_err(|e| deny("capability_token.id", e.to_string(), "v1.1 §8.4"))?;
    let issued_by = address_member(obj, "issued_by")?;
    let issued_to = address_member(obj, "issued_to")?;
    let epoch = obj.get("epoch").and_then(Value::as_u64).ok_or_else(|| {
        deny(
            "capability_token.epoch",
            "tokens must carry a non-negative integer epoch",
            "v1.1 §12.3",
        )
    })?;
    let grants = obj
        .get("grants")
        .and_then(Value::as_array)
        .filter(|g| !g.is_empty())
        .ok_or_else(|| {
            deny(
                "capability_token.grants",
                "grants must be a non-empty array",
                "v1.1 §12.1",
            )
        })?;
    let grants: Vec<Grant> = grants
        .iter()
        .enumerate()
        .map(|(i, g)| {
            g.as_str().and_then(Grant::parse).ok_or_else(|| {
                deny(
                    format!("capability_token.grants[{i}]"),
                    "unknown grant",
                    "v1.1 §12.2",
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let scope = obj.get("scope").and_then(Value::as_object).ok_or_else(|| {
        deny(
            "capability_token.scope",
            "scope must be an object naming the thread",
            "v1.1 §12.1",
        )
    })?;
    let scope_thread = scope
        .get("thread_id")
        .and_then(Value::as_str)
        .and_then(|s| ThreadId::parse(s).ok())
        .ok_or_else(|| {
            deny(
                "capability_token.scope.thread_id",
                "scope.thread_id must be a thr_ ID",
                "v1.1 §12.1",
            )
        })?;

    // Signature by the issuer.
    let sig = obj
        .get("signature")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            bad_sig(
                "capability_token.signature",
                "tokens are signed: signature object required",
            )
        })?;
    if sig.get("algorithm").and_then(Value::as_str) != Some("Ed25519") {
        return Err(bad_sig(
            "capability_token.signature.algorithm",
            "algorithm must be \"Ed25519\"",
        ));
    }
    let key_id = sig
        .get("key_id")
        .and_then(Value::as_str)
        .filter(|k| KeyId::parse_any(k).is_ok_and(|k| k.kind() != KeyKind::Encryption))
        .ok_or_else(|| {
            bad_sig(
                "capability_token.signature.key_id",
                "key_id must name a signing key",
            )
        })?;
    let value = sig
        .get("value")
        .and_then(Value::as_str)
        .ok_or_else(|| bad_sig("capability_token.signature.value", "value is required"))?;
    let signature = signature_from_b64url(value)
        .map_err(|e| bad_sig("capability_token.signature.value", e.reason))?;
    let key = resolver.signing_key(&issued_by, key_id).ok_or_else(|| {
        bad_sig(
            "capability_token.signature.key_id",
            "key_id is not a signing key of the issuer",
        )
    })?;
    let payload = capability_signing_payload(token).unwrap_or_default();
    if !verify(&key, None, &payload, &signature) {
        return Err(bad_sig(
            "capability_token.signature.value",
            "Ed25519 signature of the issuer does not verify",
        ));
    }

    if !resolver.may_issue(&issued_by, &scope_thread) {
        return Err(deny(
            "capability_token.issued_by",
            "the issuer has no authority to grant capabilities on this thread",
            "v1.1 §12.4",
        ));
    }
    if scope_thread != *req.thread_id {
        return Err(deny(
            "capability_token.scope.thread_id",
            "the token is scoped to another thread",
            "v1.1 §12.1",
        ));
    }
    if issued_to != *req.actor {
        return Err(deny(
            "capability_token.issued_to",
            "the token was issued to another identity",
            "v1.1 §12.1",
        ));
    }
    let now = clock.now();
    match obj.get("expires_at") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => {
            let exp = Timestamp::parse(s)
                .map_err(|e| deny("capability_token.expires_at", e.to_string(), "v1.1 §12.1"))?;
            // Valid up to and including `expires_at`, as for delegations (§13.3).
            if exp < now {
                return Err(deny(
                    "capability_token.expires_at",
                    "the token has expired",
                    "v1.1 §12.1",
                ));
            }
        }
        Some(_) => {
            return Err(deny(
                "capability_token.expires_at",
                "expires_at must be an ISO 8601 string or null",
                "v1.1 §12.1",
            ));
        }
    }
    if epoch != req.thread_cap_epoch {
        return Err(deny(
            "capability_token.epoch",
            format!(
                "token epoch {epoch} does not equal the thread's cap_epoch {}",
                req.thread_cap_epoch
            ),
            "v1.1 §12.3",
        ));
    }
    if resolver.is_revoked(&id) {
        return Err(deny(
            "capability_token.id",
            "the token has been revoked",
            "v1.1 §12.3",
        ));
    }
    let single_use = match obj.get("single_use") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(deny(
                "capability_token.single_use",
                "single_use must be a boolean",
                "v1.1 §12.1",
            ));
        }
    };
    if single_use && resolver.is_spent(&id) {
        return Err(deny(
            "capability_token.single_use",
            "the single-use token was already spent",
            "v1.1 §12.5",
        ));
    }
    if !grants.iter().any(|g| g.covers(req.required)) {
        return Err(deny(
            "capability_token.grants",
            format!(
                "the action needs the {} grant (or admin)",
                req.required.as_str()
            ),
            "v1.1 §12.2",
        ));
    }
    check_scope_limits(scope, req)?;
    let cnf_key_id = match obj.get("cnf") {
        None | Some(Value::Null) => None,
        Some(cnf) => Some(cnf.get("key_id").and_then(Value::as_str).ok_or_else(|| {
            deny(
                "capability_token.cnf.key_id",
                "cnf must be an object naming the holder's key_id",
                "v1.1 §12.6",
            )
        })?),
    };
    if let Some(intent) = req.intent
        && POP_REQUIRED_INTENTS.contains(&intent)
        && let Some(cnf_key_id) = cnf_key_id
    {
        let proof = req.pop.ok_or_else(|| {
            deny(
                "content.structured.parameters.pop_signature",
                "this intent needs a PoP proof for a key-bound token",
                "v1.1 §12.6",
            )
        })?;
        let key = resolver.pop_key(&issued_to, cnf_key_id).ok_or_else(|| {
            deny(
                "capability_token.cnf.key_id",
                "the PoP key is unknown",
                "v1.1 §12.6",
            )
        })?;
        if !verify_pop(
            &key,
            &id.to_string(),
            &req.envelope_id.to_string(),
            proof.timestamp,
            proof.signature,
        ) {
            return Err(deny(
                "content.structured.parameters.pop_signature",
                "PoP signature does not verify",
                "v1.1 §12.6",
            ));
        }
    }
    Ok(AuthorizedCapability {
        id,
        issued_by,
        single_use,
    })
}

/// The optional limits in `scope` (v1.1 §12.1): envelope types, DAG depth, priority.
fn check_scope_limits(
    scope: &Map<String, Value>,
    req: &CapabilityRequest<'_>,
) -> Result<(), ProtocolError> {
    if let Some(types) = scope.get("envelope_types").filter(|v| !v.is_null()) {
        let types = types.as_array().ok_or_else(|| {
            deny(
                "capability_token.scope.envelope_types",
                "envelope_types must be an array",
                "v1.1 §12.1",
            )
        })?;
        if !types.iter().any(|t| t.as_str() == Some(req.envelope_type)) {
            return Err(deny(
                "capability_token.scope.envelope_types",
                format!(
                    "envelope type {:?} is outside the token's scope",
                    req.envelope_type
                ),
                "v1.1 §12.1",
            ));
        }
    }
    if let Some(max) = scope.get("max_depth").filter(|v| !v.is_null()) {
        let max = max.as_u64().ok_or_else(|| {
            deny(
                "capability_token.scope.max_depth",
                "max_depth must be a non-negative integer",
                "v1.1 §12.1",
            )
        })?;
        if req.depth.is_some_and(|d| d > max) {
            return Err(deny(
                "capability_token.scope.max_depth",
                format!("the envelope is deeper than max_depth {max}"),
                "v1.1 §12.1",
            ));
        }
    }
    if let Some(max) = scope.get("max_priority").filter(|v| !v.is_null()) {
        let max = max.as_str().and_then(Priority::parse).ok_or_else(|| {
            deny(
                "capability_token.scope.max_priority",
                "max_priority must be low, normal, high or urgent",
                "v1.1 §12.1",
            )
        })?;
        if req.priority > max {
            return Err(deny(
                "capability_token.scope.max_priority",
                "the envelope priority exceeds max_priority",
                "v1.1 §12.1",
            ));
        }
    }
    Ok(())
}

/// The members of a capability token a node reads when storing it (v1.1 §16.4), after the
/// §12.1 shape check of [`TokenShape::parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenShape {
    /// `cap_` id.
    pub id: CapabilityId,
    /// Issuer.
    pub issued_by: Address,
    /// Holder.
    pub issued_to: Address,
    /// `scope.thread_id`.
    pub thread: ThreadId,
    /// Capability epoch (§12.3).
    pub epoch: u64,
    /// Single use (§12.5).
    pub single_use: bool,
    /// Expiry, if any.
    pub expires_at: Option<Timestamp>,
    /// The issuer's key that signed.
    pub key_id: String,
    /// base64url signature.
    pub signature: String,
}

fn shape_invalid(field: impl Into<String>, reason: impl Into<String>) -> ProtocolError {
    ProtocolError::invalid(field, reason, "v1.1 §12.1")
}

fn shape_str<'a>(o: &'a Map<String, Value>, k: &str) -> Result<&'a str, ProtocolError> {
    o.get(k)
        .and_then(Value::as_str)
        .ok_or_else(|| shape_invalid(k, format!("{k} is required (a string)")))
}

fn shape_address(o: &Map<String, Value>, k: &str) -> Result<Address, ProtocolError> {
    Address::parse_wire(shape_str(o, k)?)
        .map_err(|e| ProtocolError::invalid(k, format!("not a LOOM address: {e}"), "v1.1 §6.1"))
}

fn shape_timestamp(o: &Map<String, Value>, k: &str) -> Result<Option<Timestamp>, ProtocolError> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Timestamp::parse(s)
            .map(Some)
            .map_err(|e| shape_invalid(k, e.to_string())),
        Some(_) => Err(shape_invalid(
            k,
            format!("{k} must be an ISO 8601 string or null"),
        )),
    }
}

impl TokenShape {
    /// The §12.1 token structure of a token submitted for storage (§16.4): every member
    /// present with its type, grants from §12.2, not yet expired at `now`. Failures are
    /// `ENVELOPE_INVALID` naming the member ("fails schema"). `any_id_prefix` accepts an id
    /// with another prefix than `cap_`, keeping its ULID (a conformance self-test waiver).
    pub fn parse(
        token: &Value,
        now: Timestamp,
        any_id_prefix: bool,
    ) -> Result<TokenShape, ProtocolError> {
        let o = token
            .as_object()
            .ok_or_else(|| shape_invalid("$body", "a capability token is a JSON object"))?;
        if o.get("loom").and_then(Value::as_str) != Some("1.1") {
            return Err(shape_invalid("loom", "loom must be \"1.1\""));
        }
        let raw_id = shape_str(o, "id")?;
        let id = CapabilityId::parse(raw_id)
            .or_else(|e| {
                let ulid = raw_id.rsplit('_').next().unwrap_or_default();
                if any_id_prefix {
                    CapabilityId::parse(&format!("cap_{ulid}")).map_err(|_| e)
                } else {
                    Err(e)
                }
            })
            .map_err(|e| shape_invalid("id", e.to_string()))?;
        let issued_by = shape_address(o, "issued_by")?;
        let issued_to = shape_address(o, "issued_to")?;
        shape_timestamp(o, "created_at")?
            .ok_or_else(|| shape_invalid("created_at", "created_at is required"))?;
        let expires_at = shape_timestamp(o, "expires_at")?;
        if expires_at.is_some_and(|e| e < now) {
            return Err(shape_invalid("expires_at", "the token has already expired"));
        }
        let single_use = match o.get("single_use") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(shape_invalid("single_use", "single_use must be a boolean")),
        };
        let epoch = o.get("epoch").and_then(Value::as_u64).ok_or_else(|| {
            shape_invalid("epoch", "epoch must be a non-negative integer (§12.3)")
        })?;
        let grants = o
            .get("grants")
            .and_then(Value::as_array)
            .filter(|g| !g.is_empty())
            .ok_or_else(|| shape_invalid("grants", "grants must be a non-empty array"))?;
        for (i, g) in grants.iter().enumerate() {
            if g.as_str().and_then(Grant::parse).is_none() {
                return Err(ProtocolError::invalid(
                    format!("grants[{i}]"),
                    "not a grant of the §12.2 registry",
                    "v1.1 §12.2",
                ));
            }
        }
        let scope = o
            .get("scope")
            .and_then(Value::as_object)
            .ok_or_else(|| shape_invalid("scope", "scope must be an object naming the thread"))?;
        let thread = scope
            .get("thread_id")
            .and_then(Value::as_str)
            .ok_or_else(|| shape_invalid("scope.thread_id", "scope.thread_id is required"))
            .and_then(|s| {
                ThreadId::parse(s).map_err(|e| {
                    ProtocolError::invalid("scope.thread_id", e.to_string(), "v1.1 §8.4")
                })
            })?;
        if let Some(t) = scope.get("envelope_types").filter(|v| !v.is_null())
            && !t.as_array().is_some_and(|a| a.iter().all(Value::is_string))
        {
            return Err(shape_invalid(
                "scope.envelope_types",
                "envelope_types must be an array of strings",
            ));
        }
        if let Some(d) = scope.get("max_depth").filter(|v| !v.is_null())
            && d.as_u64().is_none()
        {
            return Err(shape_invalid(
                "scope.max_depth",
                "max_depth must be a non-negative integer",
            ));
        }
        if let Some(p) = scope.get("max_priority").filter(|v| !v.is_null())
            && p.as_str().and_then(Priority::parse).is_none()
        {
            return Err(shape_invalid(
                "scope.max_priority",
                "max_priority must be a priority",
            ));
        }
        if let Some(x) = scope.get("external_domains").filter(|v| !v.is_null())
            && !matches!(x.as_str(), Some("deny" | "allow"))
        {
            return Err(shape_invalid(
                "scope.external_domains",
                "external_domains must be \"deny\" or \"allow\"",
            ));
        }
        let sig = o
            .get("signature")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                shape_invalid("signature", "tokens are signed: signature object required")
            })?;
        if sig.get("algorithm").and_then(Value::as_str) != Some("Ed25519") {
            return Err(shape_invalid(
                "signature.algorithm",
                "algorithm must be \"Ed25519\"",
            ));
        }
        let key_id = sig
            .get("key_id")
            .and_then(Value::as_str)
            .filter(|k| KeyId::parse_any(k).is_ok_and(|k| k.kind() != KeyKind::Encryption))
            .ok_or_else(|| shape_invalid("signature.key_id", "key_id must name a signing key"))?;
        let value = sig
            .get("value")
            .and_then(Value::as_str)
            .ok_or_else(|| shape_invalid("signature.value", "value is required"))?;
        Ok(TokenShape {
            id,
            issued_by,
            issued_to,
            thread,
            epoch,
            single_use,
            expires_at,
            key_id: key_id.to_owned(),
            signature: value.to_owned(),
        })
    }

    /// Whether the issuer's signature over `JCS(token − signature)` verifies with `key`
    /// (§12.1; no context prefix for tokens).
    pub fn signature_verifies(&self, token: &Value, key: &VerifyingKey) -> bool {
        signature_from_b64url(&self.signature).is_ok_and(|sig| {
            verify(
                key,
                None,
                &capability_signing_payload(token).unwrap_or_default(),
                &sig,
            )
        })
    }
}

/// What a node reads back from a token it stored (§16.4 listings, §16.7 downloads): its
/// expiry and grants, read leniently (a stored token passed [`TokenShape::parse`] or
/// [`authorize_capability`] when it was stored; a member that no longer reads counts as
/// absent).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoredToken {
    /// `expires_at`, if any.
    pub expires_at: Option<Timestamp>,
    /// The §12.2 grants it carries.
    pub grants: Vec<Grant>,
}

/// The lifecycle status of a stored token, as `GET /v1/capabilities` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenStatus {
    /// Usable.
    Active,
    /// Revoked (§12.3).
    Revoked,
    /// A single-use token already spent (§12.5).
    Spent,
    /// Issued under an older `cap_epoch` (§12.3).
    StaleEpoch,
    /// Past `expires_at`.
    Expired,
}

impl TokenStatus {
    /// Wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            TokenStatus::Active => "active",
            TokenStatus::Revoked => "revoked",
            TokenStatus::Spent => "spent",
            TokenStatus::StaleEpoch => "stale_epoch",
            TokenStatus::Expired => "expired",
        }
    }
}

impl StoredToken {
    /// Reads a stored token document.
    pub fn read(token: &Value) -> StoredToken {
        StoredToken {
            expires_at: token
                .get("expires_at")
                .and_then(Value::as_str)
                .and_then(|s| Timestamp::parse(s).ok()),
            grants: token
                .get("grants")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter_map(Grant::parse)
                .collect(),
        }
    }

    /// Its status, given what the node recorded (revoked, spent, the epoch it was issued
    /// under) and the thread's current `cap_epoch`, at `now`; the first that applies of
    /// revoked, spent, stale epoch, expired.
    pub fn status(
        &self,
        revoked: bool,
        spent: bool,
        epoch: u64,
        cap_epoch: u64,
        now: Timestamp,
    ) -> TokenStatus {
        if revoked {
            TokenStatus::Revoked
        } else if spent {
            TokenStatus::Spent
        } else if epoch != cap_epoch {
            TokenStatus::StaleEpoch
        } else if self.expires_at.is_some_and(|e| e < now) {
            TokenStatus::Expired
        } else {
            TokenStatus::Active
        }
    }

    /// Whether one of its grants covers `required` (`admin` covers all, §12.2).
    pub fn covers(&self, required: Grant) -> bool {
        self.grants.iter().any(|g| g.covers(required))
    }
}

/// The intent of the operation that revokes a token (§12.3).
pub const REVOKE_INTENT: &str = "capability.revoked@v1";

/// Checks that `op`, the body of `DELETE /v1/capabilities/{id}` (§16.4 "Revoke (creates
/// thread_op)"), is the `capability.revoked@v1` thread operation for token `id` in its
/// thread `thread`: `type`, intent, `thread_id`, then `parameters.capability_id`, each
/// refused as `ENVELOPE_INVALID` naming the member. Signature, authority and the
/// revocation itself are the acceptance core's ([`crate::accept`]).
pub fn check_revocation_op(
    op: &Value,
    thread: &ThreadId,
    id: &CapabilityId,
) -> Result<(), ProtocolError> {
    let bad = |field: &str, rule: String| ProtocolError::invalid(field, rule, "v1.1 §12.3, §16.4");
    if op.get("type").and_then(Value::as_str) != Some("thread_op") {
        return Err(bad(
            "type",
            format!("the body must be the signed {REVOKE_INTENT} thread_op"),
        ));
    }
    if op
        .pointer("/content/structured/intent")
        .and_then(Value::as_str)
        != Some(REVOKE_INTENT)
    {
        return Err(bad(
            "content.structured.intent",
            format!("must be {REVOKE_INTENT}"),
        ));
    }
    if op.get("thread_id").and_then(Value::as_str) != Some(&thread.to_string()) {
        return Err(bad(
            "thread_id",
            format!("must be {thread}, the token's thread"),
        ));
    }
    if op
        .pointer("/content/structured/parameters/capability_id")
        .and_then(Value::as_str)
        != Some(&id.to_string())
    {
        return Err(bad(
            "content.structured.parameters.capability_id",
            format!("must be {id}, the token in the path"),
        ));
    }
    Ok(())
}
