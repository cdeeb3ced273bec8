//! Envelopes (v1.1 §16.1): submission with every acceptance rule, retrieval under audience
//! rules (§8.3) and retraction (§20.7, §25.2–§25.3).
//!
//! Submission order: size → structure → sender → signature → delegation chain, all before
//! the store is touched (the expensive Ed25519 work runs outside any lock); then, inside one
//! transaction: duplicate id, thread membership, lock state, encryption, DAG and limits,
//! thread operation authorization and state, task transitions, `meta.event_seq`, storage,
//! readers, search index, event log and audit log. Any failure rolls everything back.

use super::resolvers::StoreResolver;
use super::{Caller, Service};
use crate::error::{ApiError, ApiResult};
use crate::quirks::Quirk;
use crate::store::Cached;
use loom_protocol::capability::{
    CapabilityRequest, PopProof, authorize_capability, grant_for_intent,
};
use loom_protocol::delegation::{ChainPolicy, verify_delegation_chain};
use loom_protocol::envelope::{
    Priority, SignatureMode, validate_envelope, validate_envelope_all, verify_envelope_signature,
};
use loom_protocol::id::{EnvelopeId, ThreadId};
use loom_protocol::jcs::{to_canonical_bytes, to_canonical_bytes_without};
use loom_protocol::policy::{
    check_audience, check_bcc_copy, check_deletable, check_encryption_required,
};
use loom_protocol::task::{TaskRole, TaskState, check_task_transition};
use loom_protocol::thread::{
    LinkedThread, ThreadDag, ThreadLimits, ThreadOp, ThreadState, ThreadStatus,
};
use loom_protocol::{Address, ErrorCode, ProtocolError, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// The in-memory view of one thread: its DAG and replicated state. Rebuilt from the store
/// on first use; changed only after the transaction that changes the store commits.
#[derive(Debug, Clone)]
pub struct ThreadRuntime {
    /// The envelope DAG (§10.2).
    pub dag: ThreadDag,
    /// The operation-log state (§10.1, §11).
    pub state: ThreadState,
    /// The last `meta.event_seq` assigned in this thread (§11.6).
    pub last_event_seq: u64,
}

/// Cache of thread runtimes.
#[derive(Debug, Default)]
pub struct ThreadCache(pub(crate) Mutex<BTreeMap<ThreadId, ThreadRuntime>>);

fn str_at<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

fn hash_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The essentials of a validated envelope.
struct Head {
    id: EnvelopeId,
    thread: ThreadId,
    parent: Option<EnvelopeId>,
    kind: String,
    intent: Option<String>,
    sender: Address,
    created_at: Timestamp,
}

/// The members the node acts on; `multi_parent` (a quirk) reads the first of a `parent_id`
/// list instead of refusing it (v1.1 §10.2).
fn head(env: &Value, multi_parent: bool) -> ApiResult<Head> {
    let bad =
        |f: &str| ApiError::bad_request(f, format!("{f} is missing or malformed"), "v1.1 §8.2");
    Ok(Head {
        id: str_at(env, "/id")
            .and_then(|s| EnvelopeId::parse(s).ok())
            .ok_or_else(|| bad("id"))?,
        thread: str_at(env, "/thread_id")
            .and_then(|s| ThreadId::parse(s).ok())
            .ok_or_else(|| bad("thread_id"))?,
        parent: match env.get("parent_id") {
            None | Some(Value::Null) => None,
            Some(Value::Array(list)) if multi_parent => list
                .first()
                .and_then(Value::as_str)
                .and_then(|s| EnvelopeId::parse(s).ok()),
            Some(v) => Some(
                v.as_str()
                    .and_then(|s| EnvelopeId::parse(s).ok())
                    .ok_or_else(|| bad("parent_id"))?,
            ),
        },
        kind: str_at(env, "/type").ok_or_else(|| bad("type"))?.to_owned(),
        intent: str_at(env, "/content/structured/intent").map(str::to_owned),
        sender: str_at(env, "/from/identity")
            .and_then(|s| Address::parse_wire(s).ok())
            .ok_or_else(|| bad("from.identity"))?,
        created_at: str_at(env, "/created_at")
            .and_then(|s| Timestamp::parse(s).ok())
            .ok_or_else(|| bad("created_at"))?,
    })
}

/// Non-bcc recipients.
fn visible_recipients(env: &Value) -> Vec<Address> {
    env.get("to")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| r.get("role").and_then(Value::as_str) != Some("bcc"))
        .filter_map(|r| r.get("identity").and_then(Value::as_str))
        .filter_map(|s| Address::parse_wire(s).ok())
        .collect()
}

/// Who may read `env` once stored (§8.3, §11.5): the reader set written to the event log.
fn readers(
    env: &Value,
    sender: &Address,
    state: &ThreadState,
    op_subjects: &[Address],
) -> BTreeSet<Address> {
    let mut out = BTreeSet::new();
    out.insert(sender.clone());
    match str_at(env, "/audience/mode") {
        Some("custom") => {
            out.extend(
                env.pointer("/audience/identities")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .filter_map(|s| Address::parse_wire(s).ok()),
            );
        }
        Some("recipients") => out.extend(visible_recipients(env)),
        _ => {
            out.extend(visible_recipients(env));
            out.extend(
                state
                    .participants
                    .iter()
                    .filter(|(_, p)| p.left_at.is_none())
                    .map(|(a, _)| a.clone()),
            );
            out.extend(op_subjects.iter().cloned());
        }
    }
    out
}

impl Service {
    /// `POST /v1/envelopes` (§16.1): checks every rule, assigns `meta.event_seq`, stores the
    /// envelope and returns it as stored.
    pub fn submit_envelope(&self, caller: &Caller, mut env: Value) -> ApiResult<Value> {
        let limit = self.config.limits.max_envelope_bytes;
        if limit != 0 && !self.quirk(Quirk::IgnoreSizeLimit) {
            let len = to_canonical_bytes_without(&env, &["meta"]).map_or(0, |b| b.len());
            if len > limit {
                return Err(ApiError::new(
                    ErrorCode::PayloadTooLarge,
                    "$body",
                    format!(
                        "the envelope is {len} bytes in canonical form; this node accepts at most {limit}"
                    ),
                    "v1.1 §24.2",
                ));
            }
        }
        if !self.quirk(Quirk::SkipEnvelopeValidation) {
            if self.quirk(Quirk::SkipDelegationCheck)
                || self.quirk(Quirk::AllowDagCycles)
                || self.quirk(Quirk::AcceptBadSignature)
                || self.quirk(Quirk::AcceptAnyAttachmentId)
                || self.quirk(Quirk::AcceptParentIdArray)
            {
                let first = validate_envelope_all(&env)
                    .into_iter()
                    .find(|e| !self.waived_by_quirk(e));
                if let Some(e) = first {
                    return Err(e.into());
                }
            } else {
                validate_envelope(&env)?;
            }
            check_bcc_copy(&env)?;
        }
        if self.quirk(Quirk::RejectUnknownTypes)
            && let Some(kind) = str_at(&env, "/type")
            && !loom_protocol::envelope::validate::CORE_TYPES.contains(&kind)
        {
            return Err(ApiError::bad_request(
                "type",
                format!("unknown envelope type {kind:?}"),
                "v1.1 §9.1",
            ));
        }
        let (h, filled) = if self.quirk(Quirk::SkipEnvelopeValidation) {
            let filled = self.fill_head_members(&env, caller);
            (head(&filled, false)?, Some(filled))
        } else {
            (head(&env, self.quirk(Quirk::AcceptParentIdArray))?, None)
        };
        if h.sender != caller.identity && !self.quirk(Quirk::AllowSenderSpoofing) {
            return Err(ApiError::new(
                ErrorCode::CapabilityDenied,
                "from.identity",
                format!(
                    "the authenticated identity is {}; it cannot send as {}",
                    caller.identity, h.sender
                ),
                "v1.1 §16.1",
            ));
        }
        self.check_sender_and_signature(&env, &h)?;
        if let Some(filled) = filled {
            env = filled;
        }
        if self.quirk(Quirk::DropNullMembers) {
            drop_nulls(&mut env);
        }
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        let exists = tx
            .row(
                "SELECT body FROM envelopes WHERE id = ?1",
                [h.id.to_string()],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()?;
        if let Some(stored) = exists {
            if self.quirk(Quirk::AllowDuplicateIds) {
                return Ok(stored
                    .and_then(|s| serde_json::from_str(&s).ok())
                    .unwrap_or(env));
            }
            return Err(ApiError::new(
                ErrorCode::EnvelopeDuplicate,
                "id",
                format!("{} is already stored", h.id),
                "v1.1 §8.4, §24.2",
            ));
        }
        let mut cache = self.threads.0.lock().unwrap_or_else(|p| p.into_inner());
        if !cache.contains_key(&h.thread)
            && let Some(rt) = self.load_thread(&tx, &h.thread)?
        {
            cache.insert(h.thread, rt);
        }
        let fresh = !cache.contains_key(&h.thread);
        if fresh {
            if h.kind == "thread_op" && !self.quirk(Quirk::BootstrapThreadFromOp) {
                return Err(ApiError::not_found(
                    ErrorCode::ThreadNotFound,
                    "thread_id",
                    h.thread,
                ));
            }
            // §10.5 bootstrap: the root's sender owns the thread, its recipients participate.
            let recipients = visible_recipients(&env);
            let state = ThreadState::new(h.thread, h.sender.clone(), &recipients, h.created_at);
            cache.insert(
                h.thread,
                ThreadRuntime {
                    dag: ThreadDag::new(),
                    state,
                    last_event_seq: 0,
                },
            );
        }
        let rt = cache
            .get(&h.thread)
            .ok_or_else(|| ApiError::internal("thread cache"))?;
        let outcome = self.accept_into_thread(&tx, &mut env, &h, rt, fresh);
        let (next_state, event_seq, pending) = match outcome {
            Ok(o) => o,
            Err(e) => {
                if fresh {
                    cache.remove(&h.thread);
                }
                return Err(e);
            }
        };
        tx.commit()?;
        if let Some(fork) = fork_thread_of(&env, &h) {
            cache.remove(&fork);
        }
        let rt = cache
            .get_mut(&h.thread)
            .ok_or_else(|| ApiError::internal("thread cache"))?;
        let _ = rt.dag.insert(
            h.id,
            h.parent,
            h.created_at,
            &ThreadLimits {
                max_envelopes_per_thread: 0,
                max_pending_parents: 0,
            },
        );
        rt.state = next_state;
        rt.last_event_seq = event_seq;
        let _ = pending;
        Ok(env)
    }

    /// For a node that skips structural validation: `env` with a missing or malformed `id`,
    /// `thread_id`, `from.identity` or `created_at` filled in instead of refused (v1.1 §8.2).
    fn fill_head_members(&self, env: &Value, caller: &Caller) -> Value {
        let mut env = env.clone();
        if str_at(&env, "/id")
            .and_then(|s| EnvelopeId::parse(s).ok())
            .is_none()
        {
            env["id"] = self.env.ids().envelope().to_string().into();
        }
        if str_at(&env, "/thread_id")
            .and_then(|s| ThreadId::parse(s).ok())
            .is_none()
        {
            env["thread_id"] = self.env.ids().thread().to_string().into();
        }
        if str_at(&env, "/from/identity")
            .and_then(|s| Address::parse_wire(s).ok())
            .is_none()
        {
            if !env.get("from").is_some_and(Value::is_object) {
                env["from"] = serde_json::json!({});
            }
            env["from"]["identity"] = caller.identity.to_string().into();
        }
        if str_at(&env, "/created_at")
            .and_then(|s| Timestamp::parse(s).ok())
            .is_none()
        {
            env["created_at"] = self.env.now().to_string().into();
        }
        env
    }

    /// Structural rules that belong to a check a quirk turns off: the §13.5 chain presence
    /// rule is part of the delegation check, the self-parent rule part of the cycle check.
    fn waived_by_quirk(&self, e: &ProtocolError) -> bool {
        (e.code == ErrorCode::DelegationInvalid && self.quirk(Quirk::SkipDelegationCheck))
            || (e.field == "parent_id"
                && e.rule.contains("own parent")
                && self.quirk(Quirk::AllowDagCycles))
            || (e.code == ErrorCode::SignatureInvalid && self.quirk(Quirk::AcceptBadSignature))
            || (e.field == "parent_id"
                && e.rule.starts_with("a single parent")
                && self.quirk(Quirk::AcceptParentIdArray))
            || (e.field.starts_with("attachments[")
                && e.field.ends_with("].id")
                && self.quirk(Quirk::AcceptAnyAttachmentId))
    }

    /// Registered sender, matching type, active key and a verifying signature (§7.3, §8.1,
    /// §16.1), then the delegation chain for agents (§13.3, §18.2).
    fn check_sender_and_signature(&self, env: &Value, h: &Head) -> ApiResult<()> {
        let Some(registered) = self.identity_type(&h.sender)? else {
            return Err(ApiError::not_found(
                ErrorCode::IdentityNotFound,
                "from.identity",
                &h.sender,
            ));
        };
        let from_type = str_at(env, "/from/type").unwrap_or("");
        if from_type != registered && !self.quirk(Quirk::SkipEnvelopeValidation) {
            return Err(ApiError::bad_request(
                "from.type",
                format!(
                    "{} is registered as {registered}, not {from_type:?}",
                    h.sender
                ),
                "v1.1 §6.3, §8.1",
            ));
        }
        let key_id = str_at(env, "/from/key_id").unwrap_or("");
        if !self.quirk(Quirk::AcceptBadSignature) {
            let key = self.active_signing_key(&h.sender, key_id)?.ok_or_else(|| {
                ApiError::new(
                    ErrorCode::SignatureInvalid,
                    "from.key_id",
                    format!("{key_id} is not an active signing key of {}", h.sender),
                    "v1.1 §7.3",
                )
            })?;
            self.verify_signature(env, &key)?;
        }
        if registered == "agent" && !self.quirk(Quirk::SkipDelegationCheck) {
            let conn = self.store.conn();
            let resolver = StoreResolver {
                conn: &conn,
                thread: None,
            };
            verify_delegation_chain(env, &resolver, &ChainPolicy::default(), self.env.clock())?;
        }
        Ok(())
    }

    /// §7.3 verification of an envelope's signature with the sender's key `key`: the context
    /// prefix when `signature.context` says so, the legacy form as the migration fallback.
    fn verify_signature(&self, env: &Value, key: &ed25519_dalek::VerifyingKey) -> ApiResult<()> {
        let quirked = self.quirk(Quirk::UnprefixedSignaturesOnly)
            || self.quirk(Quirk::NonCanonicalSigningForm)
            || self.quirk(Quirk::SignOverMeta);
        if !quirked {
            let mode = verify_envelope_signature(env, key)?;
            if mode == SignatureMode::Legacy && self.quirk(Quirk::RejectLegacySignatures) {
                return Err(ApiError::new(
                    ErrorCode::SignatureInvalid,
                    "signature.value",
                    "legacy (unprefixed) signatures are not accepted",
                    "v1.1 §7.3",
                ));
            }
            return Ok(());
        }
        // Deliberately wrong verifiers for the conformance self-test.
        let bad = || {
            ApiError::new(
                ErrorCode::SignatureInvalid,
                "signature.value",
                "Ed25519 signature mismatch",
                "v1.1 §7.3",
            )
        };
        let sig = str_at(env, "/signature/value")
            .and_then(|v| loom_protocol::keys::signature_from_b64url(v).ok())
            .ok_or_else(bad)?;
        let mut unsigned = env.clone();
        if let Some(o) = unsigned.as_object_mut() {
            o.remove("signature");
            if !self.quirk(Quirk::SignOverMeta) {
                o.remove("meta");
            }
        }
        let payload = if self.quirk(Quirk::NonCanonicalSigningForm) {
            serde_json::to_vec(&unsigned).map_err(ApiError::internal)?
        } else {
            to_canonical_bytes(&unsigned)
        };
        let context = (!self.quirk(Quirk::UnprefixedSignaturesOnly))
            .then_some(loom_protocol::keys::SigContext::ENVELOPE);
        if loom_protocol::keys::verify(key, context, &payload, &sig) {
            Ok(())
        } else {
            Err(bad())
        }
    }

    /// Rebuilds a thread's runtime from the store.
    pub(crate) fn load_thread(
        &self,
        conn: &Connection,
        id: &ThreadId,
    ) -> ApiResult<Option<ThreadRuntime>> {
        let row: Option<(String, i64)> = conn
            .row(
                "SELECT state, last_event_seq FROM threads WHERE id = ?1",
                [id.to_string()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((state, last)) = row else {
            return Ok(None);
        };
        let state: ThreadState = serde_json::from_str(&state).map_err(ApiError::internal)?;
        let mut dag = ThreadDag::new();
        let off = ThreadLimits {
            max_envelopes_per_thread: 0,
            max_pending_parents: 0,
        };
        let mut stmt = conn.prepare_cached("SELECT id, parent_id, created_at FROM envelopes WHERE thread_id = ?1 ORDER BY event_seq")?;
        let rows = stmt.query_map([id.to_string()], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        for row in rows {
            let (eid, parent, created) = row?;
            let (Ok(eid), Ok(created)) = (EnvelopeId::parse(&eid), Timestamp::parse(&created))
            else {
                continue;
            };
            let parent = parent.and_then(|p| EnvelopeId::parse(&p).ok());
            let _ = dag.insert(eid, parent, created, &off);
        }
        Ok(Some(ThreadRuntime {
            dag,
            state,
            last_event_seq: u64::try_from(last).unwrap_or(0),
        }))
    }

    /// The in-transaction part of submission; returns the next thread state, the assigned
    /// `event_seq` and whether the parent is pending.
    fn accept_into_thread(
        &self,
        tx: &Connection,
        env: &mut Value,
        h: &Head,
        rt: &ThreadRuntime,
        fresh: bool,
    ) -> ApiResult<(ThreadState, u64, bool)> {
        let state = &rt.state;
        // Without structural validation (quirk), an out-of-family thread_op intent (v1.1 §9.2)
        // is stored as an inert envelope instead of refused.
        let out_of_family = !h.intent.as_deref().is_some_and(|i| {
            loom_protocol::envelope::validate::THREAD_OP_NAMESPACES
                .iter()
                .any(|ns| i.starts_with(ns))
        });
        let is_op =
            h.kind == "thread_op" && !(out_of_family && self.quirk(Quirk::SkipEnvelopeValidation));
        if !fresh && !state.is_active_participant(&h.sender) && !is_op {
            self.authorize_non_participant(tx, env, h, rt)?;
        }
        if !self.quirk(Quirk::AcceptIntoLockedThread) {
            state.check_accepts_envelope(&h.kind)?;
        }
        check_encryption_required(env, state.encryption_enabled)?;
        let limits = ThreadLimits {
            max_envelopes_per_thread: usize::try_from(self.config.limits.max_envelopes_per_thread)
                .unwrap_or(usize::MAX),
            max_pending_parents: usize::try_from(self.config.limits.max_pending_parents)
                .unwrap_or(usize::MAX),
        };
        let limits = if self.quirk(Quirk::IgnoreThreadLimits) {
            ThreadLimits {
                max_envelopes_per_thread: 0,
                max_pending_parents: 0,
            }
        } else {
            limits
        };
        if !self.quirk(Quirk::AllowDagCycles) {
            rt.dag.check(&h.id, h.parent.as_ref(), &limits)?;
        }
        let pending = h.parent.is_some_and(|p| !rt.dag.contains(&p));
        if pending && !fresh && self.quirk(Quirk::RejectMissingParent) {
            return Err(ApiError::bad_request(
                "parent_id",
                "the parent is not in the thread",
                "v1.1 §10.2",
            ));
        }
        let event_seq = rt.last_event_seq + 1;
        let mut next = state.clone();
        let mut op_subjects = Vec::new();
        if is_op {
            let mut op = ThreadOp::from_envelope(env)?;
            if self.quirk(Quirk::IgnoreOpPreconditions) {
                op.preconditions = None;
            }
            self.authorize_op(tx, env, h, &op, rt)?;
            let unapplied = match op.intent.as_str() {
                "thread.delegate@v1" => self.quirk(Quirk::IgnoreThreadDelegate),
                "thread.fork@v1" => self.quirk(Quirk::ForkWithoutEntry),
                "thread.merge@v1" => self.quirk(Quirk::IgnoreThreadMerge),
                "thread.link@v1" => self.quirk(Quirk::IgnoreThreadLink),
                _ => false,
            };
            match if unapplied {
                Ok(())
            } else {
                next.apply(event_seq, &op)
            } {
                Ok(()) => {}
                Err(e)
                    if e.code == ErrorCode::StateTransitionInvalid
                        && self.quirk(Quirk::AllowInvalidStateTransition) => {}
                Err(e) => return Err(e.into()),
            }
            // §11.5: a removed participant still receives the removal.
            op_subjects.extend(
                state
                    .participants
                    .keys()
                    .filter(|a| !next.is_active_participant(a))
                    .cloned(),
            );
            self.record_op_side_effects(tx, &op, h, &next)?;
        }
        self.apply_task(tx, env, h, state)?;
        let now = self.env.now().to_rfc3339();
        let mut meta = json!({
            "node_id": self.config.domain,
            "received_at": now,
            "event_seq": event_seq,
            "origin_event_seq": event_seq,
            "pending_parent": pending,
        });
        if self.quirk(Quirk::OmitEventSeq) {
            meta.as_object_mut().map(|m| m.remove("event_seq"));
        }
        if self.quirk(Quirk::OmitOriginEventSeq) {
            meta.as_object_mut().map(|m| m.remove("origin_event_seq"));
        }
        env["meta"] = meta;
        if self.quirk(Quirk::RestampCreatedAt) {
            env["created_at"] = now.into();
        }
        self.store_envelope(tx, env, h, &next, event_seq, fresh, &op_subjects)?;
        Ok((next, event_seq, pending))
    }

    /// A non-participant may post only with a token granting the action (§10.5, §12.2).
    fn authorize_non_participant(
        &self,
        tx: &Connection,
        env: &Value,
        h: &Head,
        rt: &ThreadRuntime,
    ) -> ApiResult<()> {
        if self.quirk(Quirk::SkipCapabilityCheck) {
            return Ok(());
        }
        let Some(token) = env.pointer("/content/structured/parameters/capability_token") else {
            return Err(ApiError::new(
                ErrorCode::CapabilityDenied,
                "from.identity",
                format!(
                    "{} is not a participant of {} and presents no capability token",
                    h.sender, h.thread
                ),
                "v1.1 §10.5, §12.4",
            ));
        };
        self.check_capability(
            tx,
            env,
            h,
            rt,
            token,
            loom_protocol::capability::Grant::Reply,
        )
    }

    /// Thread operations need the owner, or a capability token for the operation's grant
    /// (§12.4). The owner is the authority tokens derive from (§12.1 `issued_by`), so an
    /// owner's own operations need none.
    fn authorize_op(
        &self,
        tx: &Connection,
        env: &Value,
        h: &Head,
        op: &ThreadOp,
        rt: &ThreadRuntime,
    ) -> ApiResult<()> {
        if rt.state.is_owner(&h.sender) || self.quirk(Quirk::SkipCapabilityCheck) {
            return Ok(());
        }
        let Some(token) = op.parameters.get("capability_token") else {
            return Err(ApiError::new(
                ErrorCode::CapabilityDenied,
                "content.structured.parameters.capability_token",
                "a thread_op from anyone but the owner must carry a capability token",
                "v1.1 §12.4",
            ));
        };
        self.check_capability(tx, env, h, rt, token, grant_for_intent(&op.intent))
    }

    /// Checks `token` for `required` and marks a single-use token spent (§12.5). This is the
    /// one place tokens are spent, so it also broadcasts the spend: a `capability.spent` event
    /// (§17.3 style, in the same transaction) to the thread's current participants, the
    /// sender and the holder. §12.5 names a `capability.spent@v1` thread_op, but a node
    /// cannot sign a thread_op on a user's behalf, so the event is the broadcast (README,
    /// "Choices where the spec is silent").
    fn check_capability(
        &self,
        tx: &Connection,
        env: &Value,
        h: &Head,
        rt: &ThreadRuntime,
        token: &Value,
        required: loom_protocol::capability::Grant,
    ) -> ApiResult<()> {
        let params = env.pointer("/content/structured/parameters");
        let pop = match (
            params
                .and_then(|p| p.get("pop_signature"))
                .and_then(Value::as_str),
            params
                .and_then(|p| p.get("pop_timestamp"))
                .and_then(Value::as_str),
        ) {
            (Some(signature), Some(timestamp)) => Some(PopProof {
                signature,
                timestamp,
            }),
            _ => None,
        };
        let priority = str_at(env, "/priority")
            .and_then(Priority::parse)
            .unwrap_or(Priority::Normal);
        let depth = h.parent.map(|p| rt.dag.depth(&p) + 1).or(Some(0));
        let req = CapabilityRequest {
            actor: &h.sender,
            thread_id: &h.thread,
            thread_cap_epoch: rt.state.cap_epoch,
            required,
            envelope_id: &h.id,
            envelope_type: &h.kind,
            intent: h.intent.as_deref(),
            priority,
            depth,
            pop,
        };
        let resolver = StoreResolver {
            conn: tx,
            thread: Some(&rt.state),
        };
        let ok = authorize_capability(token, &req, &resolver, self.env.clock())?;
        if ok.single_use {
            // §12.5: spent on first use, whether or not the token was ever stored here.
            let now = self.env.now().to_rfc3339();
            let spent = tx.exec(
                "UPDATE capabilities SET spent_at = ?2 WHERE id = ?1",
                params![ok.id.to_string(), now],
            )?;
            if spent == 0 {
                let to = token
                    .get("issued_to")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let epoch = token
                    .get("epoch")
                    .and_then(Value::as_i64)
                    .unwrap_or_default();
                tx.exec(
                    "INSERT INTO capabilities (id, thread_id, issued_by, issued_to, epoch, single_use, document, created_at, spent_at) VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?7)",
                    params![ok.id.to_string(), h.thread.to_string(), ok.issued_by.to_string(), to, epoch, token.to_string(), now],
                )?;
            }
            if !self.quirk(Quirk::OmitCapabilitySpentEvent) {
                let holder = token
                    .get("issued_to")
                    .and_then(Value::as_str)
                    .and_then(|a| Address::parse_wire(a).ok());
                let mut readers = super::capabilities::active_participants(&rt.state);
                readers.insert(h.sender.clone());
                readers.extend(holder.clone());
                let payload = json!({"capability_id": ok.id.to_string(), "thread_id": h.thread.to_string(), "issued_to": holder.map(|a| a.to_string()), "spent_at": now, "envelope_id": h.id.to_string()});
                self.append_event(
                    tx,
                    "capability.spent",
                    Some(&h.thread),
                    Some(&h.id),
                    payload,
                    &readers,
                )?;
            }
        }
        Ok(())
    }

    /// Revocations carried by operations take effect in the store (§12.3, §13.4) and emit
    /// their §17.3 events in the same transaction as the operation.
    fn record_op_side_effects(
        &self,
        tx: &Connection,
        op: &ThreadOp,
        h: &Head,
        next: &ThreadState,
    ) -> ApiResult<()> {
        let now = self.env.now().to_rfc3339();
        let param = |k: &str| op.parameters.get(k).and_then(Value::as_str);
        let mut readers = super::capabilities::active_participants(next);
        readers.insert(h.sender.clone());
        match op.intent.as_str() {
            "capability.revoked@v1" => {
                let Some(id) = param("capability_id").or(param("token_id")) else {
                    return Ok(());
                };
                tx.exec(
                    "UPDATE capabilities SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
                    params![id, now],
                )?;
                let holder: Option<String> = tx
                    .row(
                        "SELECT issued_to FROM capabilities WHERE id = ?1",
                        [id],
                        |r| r.get(0),
                    )
                    .optional()?;
                readers.extend(holder.as_deref().and_then(|a| Address::parse_wire(a).ok()));
                let payload = json!({"capability_id": id, "thread_id": h.thread.to_string(), "issued_to": holder, "revoked_at": now, "cap_epoch": next.cap_epoch});
                self.append_event(
                    tx,
                    "capability.revoked",
                    Some(&h.thread),
                    Some(&h.id),
                    payload.clone(),
                    &readers,
                )?;
                self.audit(tx, &h.sender.to_string(), "capability.revoked", id, payload)?;
            }
            "thread.fork@v1" if !self.quirk(Quirk::ForkWithoutEntry) => {
                if let Some(fork) = param("fork_thread_id").and_then(|f| ThreadId::parse(f).ok()) {
                    self.materialize_fork(tx, next, fork, op.created_at)?;
                }
            }
            "thread.merge@v1" if !self.quirk(Quirk::IgnoreThreadMerge) => {
                if let Some(fork) = param("fork_thread_id").and_then(|f| ThreadId::parse(f).ok()) {
                    if self.quirk(Quirk::MergeMovesEnvelopes) {
                        tx.exec(
                            "UPDATE envelopes SET thread_id = ?2, event_seq = event_seq + 1000000, body = json_set(body, '$.thread_id', ?2) WHERE thread_id = ?1",
                            params![fork.to_string(), h.thread.to_string()],
                        )?;
                    }
                    if !self.quirk(Quirk::MergeLeavesForkOpen) {
                        self.mark_fork_merged(tx, fork)?;
                    }
                }
            }
            "delegation.revoked@v1" => {
                if let Some(id) = param("delegation_id") {
                    tx.exec("UPDATE delegations SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL", params![id, now])?;
                }
                // §13.4 / v1.0 §12.5: a notice may name the pair instead of a link id.
                if let (Some(delegator), Some(delegate)) = (param("delegator"), param("delegate")) {
                    tx.exec(
                        "INSERT OR REPLACE INTO delegation_revocations (delegator, delegate, revoked_at) VALUES (?1, ?2, ?3)",
                        params![delegator, delegate, now],
                    )?;
                }
                let payload = json!({"delegation_id": param("delegation_id"), "delegator": param("delegator"), "delegate": param("delegate"), "revoked_at": now});
                self.append_event(
                    tx,
                    "delegation.revoked",
                    Some(&h.thread),
                    Some(&h.id),
                    payload.clone(),
                    &readers,
                )?;
                self.audit(
                    tx,
                    &h.sender.to_string(),
                    "delegation.revoked",
                    param("delegation_id").unwrap_or("pair"),
                    payload,
                )?;
            }
            _ => {}
        }
        Ok(())
    }

    /// `thread.fork@v1` creates the fork thread (§11.4): it starts with the parent's
    /// participants and subject and a `linked_threads[]` entry with relation `parent`. A fork
    /// id naming an existing thread gets the `parent` link added. The thread cache is evicted
    /// for the fork after commit ([`fork_thread_of`]).
    fn materialize_fork(
        &self,
        tx: &Connection,
        parent: &ThreadState,
        fork: ThreadId,
        at: Timestamp,
    ) -> ApiResult<()> {
        let now = self.env.now().to_rfc3339();
        let link = LinkedThread {
            thread_id: parent.id,
            relation: "parent".into(),
        };
        let existing = self.stored_thread_state(tx, &fork)?;
        let mut state = match existing {
            Some(s) => s,
            None => {
                let mut s = parent.clone();
                s.id = fork;
                s.state = ThreadStatus::Active;
                s.forks.clear();
                s.linked_threads.clear();
                s.last_event_seq = 0;
                for p in s.participants.values_mut().filter(|p| p.left_at.is_none()) {
                    p.joined_at = at;
                }
                s
            }
        };
        if !self.quirk(Quirk::ForkWithoutParentLink) {
            state.linked_threads.insert(link);
        }
        let state_json = serde_json::to_string(&state).map_err(ApiError::internal)?;
        tx.exec(
            "INSERT INTO threads (id, state, status, subject, created_at, updated_at, last_event_seq, envelope_count) VALUES (?1, ?2, ?3, ?4, ?5, ?5, 0, 0)
             ON CONFLICT(id) DO UPDATE SET state = ?2, status = ?3, updated_at = ?5",
            params![fork.to_string(), state_json, state.state.as_str(), state.subject, now],
        )?;
        self.sync_thread_index(tx, &state)
    }

    /// `thread.merge@v1` marks the fork thread's state `merged` (§11.4) when it lives here.
    fn mark_fork_merged(&self, tx: &Connection, fork: ThreadId) -> ApiResult<()> {
        let Some(mut state) = self.stored_thread_state(tx, &fork)? else {
            return Ok(());
        };
        state.state = ThreadStatus::Merged;
        let state_json = serde_json::to_string(&state).map_err(ApiError::internal)?;
        tx.exec(
            "UPDATE threads SET state = ?2, status = ?3, updated_at = ?4 WHERE id = ?1",
            params![
                fork.to_string(),
                state_json,
                state.state.as_str(),
                self.env.now().to_rfc3339()
            ],
        )?;
        self.sync_thread_index(tx, &state)
    }

    /// The thread state as stored (not cached), inside `tx`.
    fn stored_thread_state(
        &self,
        tx: &Connection,
        id: &ThreadId,
    ) -> ApiResult<Option<ThreadState>> {
        let row: Option<String> = tx
            .row(
                "SELECT state FROM threads WHERE id = ?1",
                [id.to_string()],
                |r| r.get(0),
            )
            .optional()?;
        row.map(|s| serde_json::from_str(&s).map_err(ApiError::internal))
            .transpose()
    }

    /// Tasks (§18.3): `task.create@v1` starts one; `task.state_update@v1` moves it by the
    /// v1.0 §17.3 table, by an actor with a role that may trigger the move.
    fn apply_task(
        &self,
        tx: &Connection,
        env: &Value,
        h: &Head,
        state: &ThreadState,
    ) -> ApiResult<()> {
        let params = env.pointer("/content/structured/parameters");
        let param = |k: &str| params.and_then(|p| p.get(k)).and_then(Value::as_str);
        let now = self.env.now().to_rfc3339();
        match h.intent.as_deref() {
            Some("task.create@v1") => {
                let assignee = param("assignee");
                tx.exec(
                    "INSERT INTO tasks (id, thread_id, creator, assignee, state, updated_at) VALUES (?1, ?2, ?3, ?4, 'created', ?5)",
                    params![h.id.to_string(), h.thread.to_string(), h.sender.to_string(), assignee, now],
                )?;
            }
            Some("task.state_update@v1") => {
                let bad = |f: &str, r: &str| {
                    ApiError::bad_request(
                        format!("content.structured.parameters.{f}"),
                        r,
                        "v1.1 §18.3",
                    )
                };
                let task_id = param("task_id").ok_or_else(|| {
                    bad(
                        "task_id",
                        "the task_id of the task.create envelope is required",
                    )
                })?;
                let to = param("state")
                    .and_then(TaskState::parse)
                    .ok_or_else(|| bad("state", "one of the §18.3 task states is required"))?;
                let row: Option<(String, String, Option<String>, String)> = tx
                    .row(
                        "SELECT thread_id, creator, assignee, state FROM tasks WHERE id = ?1",
                        [task_id],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                    )
                    .optional()?;
                let Some((thread, creator, assignee, from)) =
                    row.filter(|r| r.0 == h.thread.to_string())
                else {
                    return Err(bad("task_id", "no task with this id in this thread"));
                };
                let from = TaskState::parse(&from)
                    .ok_or_else(|| ApiError::internal("stored task state"))?;
                let me = h.sender.to_string();
                let mut roles = Vec::new();
                if state.is_owner(&h.sender) {
                    roles.push(TaskRole::ThreadOwner);
                }
                if creator == me {
                    roles.push(TaskRole::Creator);
                }
                if assignee.as_deref() == Some(&me) {
                    roles.push(TaskRole::Assignee);
                }
                match check_task_transition(from, to, &roles) {
                    Err(e)
                        if e.code == ErrorCode::StateTransitionInvalid
                            && self.quirk(Quirk::AllowInvalidStateTransition) => {}
                    Err(e)
                        if e.code == ErrorCode::CapabilityDenied
                            && self.quirk(Quirk::AllowAnyTaskActor) => {}
                    Err(e) => return Err(e.into()),
                    Ok(()) => {}
                }
                let new_assignee = param("assignee").map(str::to_owned).or(assignee);
                tx.exec(
                    "UPDATE tasks SET state = ?2, assignee = ?3, updated_at = ?4 WHERE id = ?1",
                    params![task_id, to.as_str(), new_assignee, now],
                )?;
                let _ = thread;
            }
            _ => {}
        }
        Ok(())
    }

    /// Writes the envelope, its readers, thread row, participants, search index, event and
    /// audit entry.
    #[allow(clippy::too_many_arguments)]
    fn store_envelope(
        &self,
        tx: &Connection,
        env: &Value,
        h: &Head,
        next: &ThreadState,
        event_seq: u64,
        fresh: bool,
        op_subjects: &[Address],
    ) -> ApiResult<()> {
        let now = self.env.now().to_rfc3339();
        let seq = i64::try_from(event_seq).map_err(ApiError::internal)?;
        let changed = fresh || h.kind == "thread_op";
        if fresh {
            let state_json = serde_json::to_string(next).map_err(ApiError::internal)?;
            tx.exec(
                "INSERT INTO threads (id, state, status, subject, created_at, updated_at, last_event_seq, envelope_count) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, 1)",
                params![h.thread.to_string(), state_json, next.state.as_str(), next.subject, now, seq],
            )?;
        } else if changed {
            let state_json = serde_json::to_string(next).map_err(ApiError::internal)?;
            tx.exec(
                "UPDATE threads SET state = ?2, status = ?3, subject = ?4, updated_at = ?5, last_event_seq = ?6, envelope_count = envelope_count + 1 WHERE id = ?1",
                params![h.thread.to_string(), state_json, next.state.as_str(), next.subject, now, seq],
            )?;
        } else {
            // Only operations change the replicated state (§11); other envelopes move the
            // sequence and the counters.
            tx.exec(
                "UPDATE threads SET updated_at = ?2, last_event_seq = ?3, envelope_count = envelope_count + 1 WHERE id = ?1",
                params![h.thread.to_string(), now, seq],
            )?;
        }
        if changed {
            self.sync_thread_index(tx, next)?;
        }
        let signed_hash = hash_hex(&to_canonical_bytes_without(env, &["meta"]).unwrap_or_default());
        tx.exec(
            "INSERT INTO envelopes (id, thread_id, event_seq, parent_id, type, intent, sender, created_at, received_at, body, body_sha256) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                h.id.to_string(), h.thread.to_string(), seq, h.parent.map(|p| p.to_string()), h.kind, h.intent,
                h.sender.to_string(), str_at(env, "/created_at"), now, env.to_string(), signed_hash
            ],
        )?;
        let mut who = readers(env, &h.sender, next, op_subjects);
        if h.kind == "thread_op" && self.quirk(Quirk::SkipObserverDelivery) {
            who.retain(|a| {
                *a == h.sender
                    || next
                        .participants
                        .get(a)
                        .is_none_or(|p| p.role != loom_protocol::thread::ParticipantRole::Observer)
            });
        }
        for r in &who {
            tx.exec(
                "INSERT OR IGNORE INTO envelope_readers (envelope_id, identity, role) VALUES (?1, ?2, ?3)",
                params![h.id.to_string(), r.to_string(), if *r == h.sender { "sender" } else { "reader" }],
            )?;
        }
        if env.pointer("/content/encrypted") != Some(&Value::Bool(true))
            && !self.quirk(Quirk::SkipEnvelopeSearchIndex)
        {
            let params_text = env
                .pointer("/content/structured/parameters")
                .map(|p| p.to_string())
                .unwrap_or_default();
            tx.exec(
                "INSERT INTO envelope_search (envelope_id, thread_id, text, intent, parameters) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![h.id.to_string(), h.thread.to_string(), str_at(env, "/content/human/text").unwrap_or(""), h.intent.as_deref().unwrap_or(""), params_text],
            )?;
        }
        let event_type = if h.kind == "thread_op" {
            "thread.updated"
        } else {
            "envelope.new"
        };
        self.append_event(tx, event_type, Some(&h.thread), Some(&h.id), json!({"envelope_id": h.id.to_string(), "thread_id": h.thread.to_string(), "event_seq": event_seq, "type": h.kind}), &who)?;
        self.audit(tx, &h.sender.to_string(), "envelope.accepted", &h.id.to_string(), json!({"thread_id": h.thread.to_string(), "event_seq": event_seq, "type": h.kind, "sha256": signed_hash}))?;
        Ok(())
    }

    /// Keeps the participants, labels and thread search rows equal to the thread state.
    pub(crate) fn sync_thread_index(&self, tx: &Connection, state: &ThreadState) -> ApiResult<()> {
        let id = state.id.to_string();
        tx.exec(
            "DELETE FROM thread_participants WHERE thread_id = ?1",
            [&id],
        )?;
        for (a, p) in &state.participants {
            tx.exec(
                "INSERT INTO thread_participants (thread_id, identity, role, active) VALUES (?1, ?2, ?3, ?4)",
                params![id, a.to_string(), serde_json::to_value(p.role).ok().and_then(|v| v.as_str().map(str::to_owned)), p.left_at.is_none()],
            )?;
        }
        tx.exec("DELETE FROM thread_labels WHERE thread_id = ?1", [&id])?;
        for l in &state.labels {
            tx.exec(
                "INSERT INTO thread_labels (thread_id, label) VALUES (?1, ?2)",
                params![id, l],
            )?;
        }
        tx.exec("DELETE FROM thread_search WHERE thread_id = ?1", [&id])?;
        if self.quirk(Quirk::SkipThreadSearchIndex) {
            return Ok(());
        }
        let participants: Vec<String> = state.participants.keys().map(|a| a.to_string()).collect();
        let labels: Vec<&str> = state.labels.iter().map(String::as_str).collect();
        tx.exec(
            "INSERT INTO thread_search (thread_id, subject, labels, participants) VALUES (?1, ?2, ?3, ?4)",
            params![id, state.subject.as_deref().unwrap_or(""), labels.join(" "), participants.join(" ")],
        )?;
        Ok(())
    }

    /// Appends to the event log (§16.8, §17.3) with the identities allowed to see it.
    pub(crate) fn append_event(
        &self,
        tx: &Connection,
        kind: &str,
        thread: Option<&ThreadId>,
        envelope: Option<&EnvelopeId>,
        payload: Value,
        readers: &BTreeSet<Address>,
    ) -> ApiResult<String> {
        let id = if self.quirk(Quirk::UnprefixedEventIds) {
            self.env.ids().ulid().to_string()
        } else {
            self.env.ids().event().to_string()
        };
        tx.exec(
            "INSERT INTO events (id, type, thread_id, envelope_id, payload, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![id, kind, thread.map(|t| t.to_string()), envelope.map(|e| e.to_string()), payload.to_string(), self.env.now().to_rfc3339()],
        )?;
        let seq = tx.last_insert_rowid();
        for r in readers {
            tx.exec(
                "INSERT OR IGNORE INTO event_readers (event_seq, identity) VALUES (?1, ?2)",
                params![seq, r.to_string()],
            )?;
        }
        Ok(id)
    }

    /// The thread state as cached or stored.
    pub(crate) fn thread_state(
        &self,
        conn: &Connection,
        id: &ThreadId,
    ) -> ApiResult<Option<ThreadState>> {
        if let Some(rt) = self
            .threads
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
        {
            return Ok(Some(rt.state.clone()));
        }
        self.stored_thread_state(conn, id)
    }

    /// `GET /v1/envelopes/{id}` under the audience rules (§8.3).
    pub fn get_envelope(&self, caller: &Caller, id: &str) -> ApiResult<Value> {
        let eid = EnvelopeId::parse(id)
            .map_err(|e| ApiError::bad_request("id", e.to_string(), "v1.1 §8.4"))?;
        let conn = self.store.conn();
        type Row = (String, Option<String>, Option<String>, Option<String>);
        let row: Option<Row> = conn
            .row(
                "SELECT thread_id, body, erased_at, retracted_at FROM envelopes WHERE id = ?1",
                [eid.to_string()],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let Some((thread, body, erased, retracted)) = row else {
            return Err(ApiError::not_found(ErrorCode::EnvelopeNotFound, "id", eid));
        };
        let tid = ThreadId::parse(&thread).map_err(ApiError::internal)?;
        let state = self
            .thread_state(&conn, &tid)?
            .ok_or_else(|| ApiError::internal("thread of stored envelope"))?;
        let Some(body) = body else {
            return Ok(
                json!({"id": eid.to_string(), "thread_id": thread, "erased": true, "erased_at": erased, "retracted_at": retracted}),
            );
        };
        let env: Value = serde_json::from_str(&body).map_err(ApiError::internal)?;
        self.check_visible(&env, caller, &state)?;
        Ok(env)
    }

    /// Audience enforcement for one stored envelope.
    pub(crate) fn check_visible(
        &self,
        env: &Value,
        caller: &Caller,
        state: &ThreadState,
    ) -> Result<(), ProtocolError> {
        if self.quirk(Quirk::IgnoreAudience) {
            return Ok(());
        }
        let as_recipients;
        let env = if self.quirk(Quirk::OmittedAudienceAsRecipients)
            && env.get("audience").is_none_or(Value::is_null)
        {
            as_recipients = {
                let mut e = env.clone();
                e["audience"] = serde_json::json!({"mode": "recipients"});
                e
            };
            &as_recipients
        } else {
            env
        };
        check_audience(
            env,
            &caller.identity,
            state.is_active_participant(&caller.identity),
        )
    }

    /// `DELETE /v1/envelopes/{id}` (§20.7 retract, §25.2 erasure): only the sender, within
    /// the retract window, never under legal hold (§25.3). The content is erased; an audit
    /// skeleton (id, hashes, actor, time) stays.
    pub fn retract_envelope(&self, caller: &Caller, id: &str) -> ApiResult<Value> {
        let eid = EnvelopeId::parse(id)
            .map_err(|e| ApiError::bad_request("id", e.to_string(), "v1.1 §8.4"))?;
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        let row: Option<(String, String, Option<String>, String, String)> = tx
            .row("SELECT thread_id, sender, body, received_at, body_sha256 FROM envelopes WHERE id = ?1", [eid.to_string()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .optional()?;
        let Some((thread, sender, body, received, sha)) = row else {
            return Err(ApiError::not_found(ErrorCode::EnvelopeNotFound, "id", eid));
        };
        let Some(body) = body else {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "id",
                "the envelope was already retracted or erased",
                "v1.1 §20.7",
            ));
        };
        if sender != caller.identity.to_string() {
            return Err(ApiError::new(
                ErrorCode::CapabilityDenied,
                "id",
                "only the sender may retract an envelope",
                "v1.1 §20.7",
            ));
        }
        let env: Value = serde_json::from_str(&body).map_err(ApiError::internal)?;
        let tid = ThreadId::parse(&thread).map_err(ApiError::internal)?;
        let state = self
            .thread_state(&tx, &tid)?
            .ok_or_else(|| ApiError::internal("thread"))?;
        let env_labels = env
            .get("labels")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str);
        if !self.quirk(Quirk::IgnoreLegalHold) {
            check_deletable(env_labels.chain(state.labels.iter().map(String::as_str)))?;
        }
        let window = i64::try_from(self.config.retract_window_secs)
            .unwrap_or(i64::MAX)
            .saturating_mul(1000);
        let received = Timestamp::parse(&received).map_err(ApiError::internal)?;
        if window == 0 || self.env.now().unix_ms() > received.unix_ms().saturating_add(window) {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "id",
                format!(
                    "the retract window of {} s has passed",
                    self.config.retract_window_secs
                ),
                "v1.1 §20.7",
            ));
        }
        let now = self.env.now().to_rfc3339();
        if self.quirk(Quirk::RetractKeepsContent) {
            tx.exec(
                "UPDATE envelopes SET retracted_at = ?2 WHERE id = ?1",
                params![eid.to_string(), now],
            )?;
        } else {
            tx.exec(
                "UPDATE envelopes SET body = NULL, erased_at = ?2, retracted_at = ?2 WHERE id = ?1",
                params![eid.to_string(), now],
            )?;
        }
        tx.exec(
            "DELETE FROM envelope_search WHERE envelope_id = ?1",
            [eid.to_string()],
        )?;
        let who = readers(&env, &caller.identity, &state, &[]);
        if !self.quirk(Quirk::OmitRetractedEvent) {
            self.append_event(
                &tx,
                "envelope.retracted",
                Some(&tid),
                Some(&eid),
                json!({"envelope_id": eid.to_string(), "thread_id": thread}),
                &who,
            )?;
        }
        self.audit(
            &tx,
            &caller.identity.to_string(),
            "envelope.retracted",
            &eid.to_string(),
            json!({"sha256": sha, "thread_id": thread}),
        )?;
        tx.commit()?;
        Ok(
            json!({"id": eid.to_string(), "thread_id": thread, "retracted": true, "retracted_at": now}),
        )
    }
}

/// Hex SHA-256 of a request body, for idempotency comparisons.
pub fn request_hash(raw: &[u8]) -> String {
    hash_hex(raw)
}

/// Canonical bytes, re-exported for callers hashing envelopes.
pub fn canonical(env: &Value) -> Vec<u8> {
    to_canonical_bytes(env)
}

/// Removes every `null` member, recursively (the `drop-null-members` quirk).
fn drop_nulls(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.retain(|_, m| !m.is_null());
            o.values_mut().for_each(drop_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// The other thread a fork or merge operation changed (§11.4), whose cached runtime is stale.
fn fork_thread_of(env: &Value, h: &Head) -> Option<ThreadId> {
    if h.kind != "thread_op"
        || !matches!(
            h.intent.as_deref(),
            Some("thread.fork@v1" | "thread.merge@v1")
        )
    {
        return None;
    }
    str_at(env, "/content/structured/parameters/fork_thread_id")
        .and_then(|f| ThreadId::parse(f).ok())
        .filter(|f| *f != h.thread)
}
