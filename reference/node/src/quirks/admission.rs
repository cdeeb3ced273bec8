//! The acceptance steps the envelope-path quirks break: [`QuirkRules`] implements
//! loom-protocol's [`Rules`], overriding one step per quirk and running the specification
//! ([`SpecRules`]) otherwise.

use super::{Quirk, Quirks};
use crate::env::Env;
use loom_protocol::accept::{Acceptance, Directory, Effect, Facts, Rules, SpecRules, Structured};
use loom_protocol::clock::FixedClock;
use loom_protocol::delegation::{ChainPolicy, verify_delegation_chain};
use loom_protocol::e2ee::{PayloadHead, ReplayMode, ReplayState};
use loom_protocol::envelope::validate::{CORE_TYPES, THREAD_OP_NAMESPACES};
use loom_protocol::envelope::{
    Priority, SignatureMode, validate_envelope, validate_envelope_all,
    verify_envelope_signature_over,
};
use loom_protocol::http_sig::FRESHNESS_MS;
use loom_protocol::id::{EnvelopeId, ThreadId};
use loom_protocol::jcs::{to_canonical_bytes, to_canonical_bytes_without};
use loom_protocol::policy::{AudienceOf, check_bcc_copy};
use loom_protocol::task::{TaskRole, TaskState};
use loom_protocol::thread::{ParticipantRole, ThreadDag, ThreadLimits, ThreadOp, ThreadState};
use loom_protocol::{Address, ErrorCode, ProtocolError, Timestamp};
use serde_json::Value;
use sha2::Digest as _;
use std::cell::RefCell;

/// Admission with the quirks' broken steps (the self-test shim of
/// [`loom_protocol::accept::Rules`]).
#[derive(Debug)]
pub struct QuirkRules<'a> {
    quirks: &'a Quirks,
    env: &'a Env,
    caller: &'a Address,
    /// A peer delivered the envelope (§15.4): the delivery-only quirks apply.
    delivered: bool,
    /// `skip-envelope-validation`: the envelope with its head members filled in, stored
    /// instead of the one received.
    filled: RefCell<Option<Value>>,
}

impl<'a> QuirkRules<'a> {
    /// The shim for `caller`'s submission, or a peer's delivery (`delivered`); `env` draws
    /// the ids a lenient node invents and the time.
    pub fn new(quirks: &'a Quirks, env: &'a Env, caller: &'a Address, delivered: bool) -> Self {
        QuirkRules {
            quirks,
            env,
            caller,
            delivered,
            filled: RefCell::new(None),
        }
    }

    fn q(&self, q: Quirk) -> bool {
        self.quirks.has(q)
    }

    /// Structural rules that belong to a check a quirk turns off: the §13.5 chain presence
    /// rule is part of the delegation check, the self-parent rule part of the cycle check.
    fn waived(&self, e: &ProtocolError) -> bool {
        (e.code == ErrorCode::DelegationInvalid && self.q(Quirk::SkipDelegationCheck))
            || (e.field == "parent_id"
                && e.rule.contains("own parent")
                && self.q(Quirk::AllowDagCycles))
            || (e.code == ErrorCode::SignatureInvalid && self.q(Quirk::AcceptBadSignature))
            || (e.field == "parent_id"
                && e.rule.starts_with("a single parent")
                && self.q(Quirk::AcceptParentIdArray))
            || (e.field.starts_with("attachments[")
                && e.field.ends_with("].id")
                && self.q(Quirk::AcceptAnyAttachmentId))
    }

    /// Structure with the validation quirks' leniency (`skip-envelope-validation` fills the
    /// head members in; the waived rules pass).
    fn lenient_structure(&self, env: &Value) -> Result<Facts, ProtocolError> {
        if self.q(Quirk::SkipEnvelopeValidation) {
            let filled = self.fill_head_members(env);
            let facts = lenient_facts(&filled, false);
            *self.filled.borrow_mut() = Some(filled);
            return facts;
        }
        let typed = match validate_envelope_all(env)
            .into_iter()
            .find(|e| !self.waived(e))
        {
            Some(e) => return Err(e),
            None => validate_envelope(env).ok(),
        };
        check_bcc_copy(env)?;
        if self.q(Quirk::RejectUnknownTypes)
            && let Some(kind) = env.get("type").and_then(Value::as_str)
            && !CORE_TYPES.contains(&kind)
        {
            return Err(ProtocolError::invalid(
                "type",
                format!("unknown envelope type {kind:?}"),
                "v1.1 §9.1",
            ));
        }
        match typed {
            Some(t) => Facts::with_encryption(&t, env),
            None => lenient_facts(env, self.q(Quirk::AcceptParentIdArray)),
        }
    }

    /// `env` with a missing or malformed `id`, `thread_id`, `from.identity` or
    /// `created_at` filled in instead of refused (v1.1 §8.2).
    fn fill_head_members(&self, env: &Value) -> Value {
        let mut env = env.clone();
        let s = |env: &Value, p: &str| env.pointer(p).and_then(Value::as_str).map(str::to_owned);
        if s(&env, "/id")
            .and_then(|s| EnvelopeId::parse(&s).ok())
            .is_none()
        {
            env["id"] = self.env.ids().envelope().to_string().into();
        }
        if s(&env, "/thread_id")
            .and_then(|s| ThreadId::parse(&s).ok())
            .is_none()
        {
            env["thread_id"] = self.env.ids().thread().to_string().into();
        }
        if s(&env, "/from/identity")
            .and_then(|s| Address::parse_wire(&s).ok())
            .is_none()
        {
            if !env.get("from").is_some_and(Value::is_object) {
                env["from"] = serde_json::json!({});
            }
            env["from"]["identity"] = self.caller.to_string().into();
        }
        if s(&env, "/created_at")
            .and_then(|s| Timestamp::parse(&s).ok())
            .is_none()
        {
            env["created_at"] = self.env.now().to_string().into();
        }
        env
    }
}

/// The facts of an envelope that did not pass (all of) validation: the head members must
/// parse, everything else is read as far as it goes. `multi_parent` threads a `parent_id`
/// list under its first entry.
fn lenient_facts(env: &Value, multi_parent: bool) -> Result<Facts, ProtocolError> {
    let s = |p: &str| env.pointer(p).and_then(Value::as_str);
    let bad = |f: &str| {
        ProtocolError::invalid(
            f.to_owned(),
            format!("{f} is missing or malformed"),
            "v1.1 §8.2",
        )
    };
    let parent = match env.get("parent_id") {
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
    };
    let audience = AudienceOf::read(env);
    Ok(Facts {
        id: s("/id")
            .and_then(|s| EnvelopeId::parse(s).ok())
            .ok_or_else(|| bad("id"))?,
        thread: s("/thread_id")
            .and_then(|s| ThreadId::parse(s).ok())
            .ok_or_else(|| bad("thread_id"))?,
        parent,
        kind: s("/type").ok_or_else(|| bad("type"))?.to_owned(),
        structured: s("/content/structured/intent").map(|intent| Structured {
            intent: intent.to_owned(),
            parameters: env.pointer("/content/structured/parameters").cloned(),
            preconditions: env.pointer("/content/structured/preconditions").cloned(),
        }),
        sender: s("/from/identity")
            .and_then(|s| Address::parse_wire(s).ok())
            .ok_or_else(|| bad("from.identity"))?,
        sender_type: s("/from/type").unwrap_or("").to_owned(),
        key_id: s("/from/key_id").unwrap_or("").to_owned(),
        created_at: s("/created_at")
            .and_then(|s| Timestamp::parse(s).ok())
            .ok_or_else(|| bad("created_at"))?,
        visible_recipients: audience.visible_recipients.clone(),
        audience,
        encrypted: env.pointer("/content/encrypted") == Some(&Value::Bool(true)),
        // Lenient quirks accept what the structure refuses; encrypted content they let
        // through is taken as it parses, or as cleartext-shaped when it does not.
        encryption: env
            .get("content")
            .and_then(|c| loom_protocol::e2ee::EncryptedContent::parse(c, "content").ok())
            .map(|c| c.head()),
        device_id: s("/from/device_id").map(str::to_owned),
        priority: s("/priority")
            .and_then(Priority::parse)
            .unwrap_or(Priority::Normal),
        human_text: s("/content/human/text").map(str::to_owned),
    })
}

/// The steps the envelope-path quirks break, each an override of one [`Rules`] step that
/// otherwise runs the specification ([`SpecRules`]).
impl Rules for QuirkRules<'_> {
    fn check_size(&self, len: usize, limit: usize) -> Result<(), ProtocolError> {
        if self.q(Quirk::IgnoreSizeLimit) {
            return Ok(());
        }
        SpecRules.check_size(len, limit)
    }

    fn check_local_sender(&self, facts: &Facts, caller: &Address) -> Result<(), ProtocolError> {
        if self.q(Quirk::AllowSenderSpoofing) {
            return Ok(());
        }
        SpecRules.check_local_sender(facts, caller)
    }

    fn check_delivering_node(&self, facts: &Facts, node: &str) -> Result<(), ProtocolError> {
        if self.delivered && self.q(Quirk::AcceptForeignSender) {
            return Ok(());
        }
        SpecRules.check_delivering_node(facts, node)
    }

    fn check_sender_type(&self, facts: &Facts, registered: &str) -> Result<(), ProtocolError> {
        if self.q(Quirk::SkipEnvelopeValidation) {
            return Ok(());
        }
        SpecRules.check_sender_type(facts, registered)
    }

    fn check_signature(
        &self,
        envelope: &Value,
        payload: &[u8],
        facts: &Facts,
        key: Option<ed25519_dalek::VerifyingKey>,
    ) -> Result<(), ProtocolError> {
        if self.q(Quirk::AcceptBadSignature) {
            return Ok(());
        }
        match key {
            Some(key) => self.verify_signature(envelope, payload, &key),
            None => SpecRules.check_signature(envelope, payload, facts, None),
        }
    }

    fn check_delegation(
        &self,
        envelope: &Value,
        directory: &dyn Directory,
        now: Timestamp,
    ) -> Result<(), ProtocolError> {
        if self.q(Quirk::SkipDelegationCheck) {
            return Ok(());
        }
        verify_delegation_chain(envelope, directory, &self.chain_policy(), &FixedClock(now))
    }

    fn check_new_id(&self, facts: &Facts, stored: bool) -> Result<(), ProtocolError> {
        // `allow-duplicate-ids` answers in front of the router (`front`): the core still
        // refuses, and the shim replays the stored envelope instead of the 409.
        SpecRules.check_new_id(facts, stored)
    }

    fn check_may_start_thread(&self, facts: &Facts) -> Result<(), ProtocolError> {
        if self.q(Quirk::BootstrapThreadFromOp) {
            return Ok(());
        }
        SpecRules.check_may_start_thread(facts)
    }

    fn is_operation(&self, facts: &Facts) -> bool {
        // With validation skipped, a `thread_op` outside the §9.2 families is stored inert.
        let in_family = facts
            .intent()
            .is_some_and(|i| THREAD_OP_NAMESPACES.iter().any(|ns| i.starts_with(ns)));
        SpecRules.is_operation(facts) && (in_family || !self.q(Quirk::SkipEnvelopeValidation))
    }

    fn reply_needs_capability(&self, facts: &Facts, state: &ThreadState, fresh: bool) -> bool {
        !self.q(Quirk::SkipCapabilityCheck) && SpecRules.reply_needs_capability(facts, state, fresh)
    }

    fn operation_needs_capability(&self, facts: &Facts, state: &ThreadState) -> bool {
        !self.q(Quirk::SkipCapabilityCheck) && SpecRules.operation_needs_capability(facts, state)
    }

    fn check_unlocked(&self, facts: &Facts, state: &ThreadState) -> Result<(), ProtocolError> {
        if self.q(Quirk::AcceptIntoLockedThread) {
            return Ok(());
        }
        SpecRules.check_unlocked(facts, state)
    }

    fn check_dag(
        &self,
        dag: &ThreadDag,
        facts: &Facts,
        limits: &ThreadLimits,
    ) -> Result<(), ProtocolError> {
        if self.q(Quirk::AllowDagCycles) {
            return Ok(());
        }
        let limits = if self.q(Quirk::IgnoreThreadLimits) {
            &ThreadLimits::UNLIMITED
        } else {
            limits
        };
        SpecRules.check_dag(dag, facts, limits)
    }

    fn check_pending_parent(&self, facts: &Facts, pending: bool) -> Result<(), ProtocolError> {
        if pending && self.q(Quirk::RejectMissingParent) {
            return Err(ProtocolError::invalid(
                "parent_id",
                "the parent is not in the thread",
                "v1.1 §10.2",
            ));
        }
        SpecRules.check_pending_parent(facts, pending)
    }

    fn apply_operation(
        &self,
        next: &mut ThreadState,
        event_seq: u64,
        op: &ThreadOp,
    ) -> Result<(), ProtocolError> {
        let unapplied = match op.intent.as_str() {
            // `ignore-delivered-lock`: the delivered lock is stored, not applied.
            "thread.lock@v1" => self.delivered && self.q(Quirk::IgnoreDeliveredLock),
            "thread.delegate@v1" => self.q(Quirk::IgnoreThreadDelegate),
            "thread.fork@v1" => self.q(Quirk::ForkWithoutEntry),
            "thread.merge@v1" => self.q(Quirk::IgnoreThreadMerge),
            "thread.link@v1" => self.q(Quirk::IgnoreThreadLink),
            _ => false,
        };
        if unapplied {
            return Ok(());
        }
        let mut op = std::borrow::Cow::Borrowed(op);
        if self.q(Quirk::IgnoreOpPreconditions) {
            op.to_mut().preconditions = None;
        }
        let epoch_before = next.key_epoch;
        let bridge_joins = self.q(Quirk::BridgeJoinsE2ee)
            && next.encryption_enabled
            && op.intent == "thread.add_participant@v1"
            && op
                .parameters
                .get("identity")
                .and_then(Value::as_str)
                .is_some_and(|a| a.starts_with("bridge://"));
        if bridge_joins {
            next.encryption_enabled = false;
        }
        let applied = SpecRules.apply_operation(next, event_seq, &op);
        if bridge_joins {
            next.encryption_enabled = true;
        }
        if self.q(Quirk::NoEpochBump) && !op.intent.starts_with("encryption.") {
            next.key_epoch = epoch_before;
        }
        match applied {
            Err(e)
                if e.code == ErrorCode::StateTransitionInvalid
                    && self.q(Quirk::AllowInvalidStateTransition) =>
            {
                Ok(())
            }
            other => other,
        }
    }

    fn check_encryption_required(
        &self,
        facts: &Facts,
        state: &ThreadState,
    ) -> Result<(), ProtocolError> {
        if self.q(Quirk::SkipEncryptionRequired) {
            return Ok(());
        }
        SpecRules.check_encryption_required(facts, state)
    }

    fn check_encrypted_payload(
        &self,
        facts: &Facts,
        content: &PayloadHead,
        state: &ThreadState,
        mode: ReplayMode,
    ) -> Result<Option<(String, ReplayState)>, ProtocolError> {
        if state.encryption_enabled && self.q(Quirk::RefuseEncryptedPayloads) {
            return Err(ProtocolError::invalid(
                "content",
                "encrypted payloads are not taken here",
                "v1.1 §7.4",
            ));
        }
        let mut seen = std::borrow::Cow::Borrowed(state);
        let stale = self.q(Quirk::AcceptStaleEpoch) && content.epoch < state.key_epoch;
        if stale {
            seen.to_mut().key_epoch = content.epoch;
            seen.to_mut().replay.clear();
        }
        if self.q(Quirk::AcceptReplayedCounter) {
            let key =
                loom_protocol::e2ee::thread::replay_key(&facts.sender, facts.device_id.as_deref());
            seen.to_mut().replay.remove(&key);
        }
        let decided = SpecRules.check_encrypted_payload(facts, content, &seen, mode)?;
        // A stale payload taken leaves the sender's replay state as it was.
        Ok(if stale { None } else { decided })
    }

    fn workflow_definition(
        &self,
        facts: &loom_protocol::accept::Facts,
    ) -> Result<loom_protocol::workflow::Definition, ProtocolError> {
        if self.q(Quirk::RefuseWorkflows) {
            return Err(ProtocolError::invalid(
                "content.structured.intent",
                "workflows are refused (quirk refuse-workflows)",
                "v1.1 §19",
            ));
        }
        SpecRules.workflow_definition(facts)
    }

    fn apply_workflow_update(
        &self,
        run: &loom_protocol::workflow::WorkflowRun,
        update: &loom_protocol::workflow::Update,
        actor: loom_protocol::workflow::Actor<'_>,
        envelope: &str,
        now: loom_protocol::Timestamp,
    ) -> Result<loom_protocol::workflow::WorkflowRun, ProtocolError> {
        if self.q(Quirk::RefuseWorkflowUpdates) {
            return Err(ProtocolError::invalid(
                "content.structured.intent",
                "workflow updates are refused (quirk refuse-workflow-updates)",
                "v1.1 §19.2",
            ));
        }
        match SpecRules.apply_workflow_update(run, update, actor, envelope, now) {
            Err(_) if self.q(Quirk::AnyWorkflowTransition) => Ok(run.clone()),
            r => r,
        }
    }

    fn check_task_move(
        &self,
        from: TaskState,
        to: TaskState,
        roles: &[TaskRole],
    ) -> Result<(), ProtocolError> {
        match SpecRules.check_task_move(from, to, roles) {
            Err(e)
                if e.code == ErrorCode::StateTransitionInvalid
                    && self.q(Quirk::AllowInvalidStateTransition) =>
            {
                Ok(())
            }
            Err(e) if e.code == ErrorCode::CapabilityDenied && self.q(Quirk::AllowAnyTaskActor) => {
                Ok(())
            }
            other => other,
        }
    }

    fn accepted(&self, a: &mut Acceptance) {
        let thread = a.facts.thread;
        let intent = a.facts.intent().unwrap_or_default().to_owned();
        if self.q(Quirk::OmitEventSeq) {
            super::front::remove_members(&mut a.envelope["meta"], &["event_seq"]);
        }
        if self.q(Quirk::OmitOriginEventSeq) {
            super::front::remove_members(&mut a.envelope["meta"], &["origin_event_seq"]);
        }
        if self.q(Quirk::RestampCreatedAt) {
            restamp_created_at(a);
        }
        if self.q(Quirk::SkipThreadSearchIndex) {
            a.effects
                .retain(|e| !matches!(e, Effect::SearchThread { .. }));
        }
        if self.q(Quirk::IndexEncryptedContent)
            && let Some(text) = a
                .envelope
                .pointer("/content/ciphertext")
                .and_then(Value::as_str)
        {
            let text = text.to_owned();
            a.effects.push(Effect::IndexEnvelope {
                text,
                intent: String::new(),
                parameters: String::new(),
            });
        }
        if self.q(Quirk::SkipEnvelopeSearchIndex) {
            a.effects
                .retain(|e| !matches!(e, Effect::IndexEnvelope { .. }));
        }
        if self.q(Quirk::OmitCapabilitySpentEvent) {
            a.effects
                .retain(|e| !matches!(e, Effect::Event(ev) if ev.kind == "capability.spent"));
        }
        let omitted: &[(Quirk, &[&str])] = &[
            (Quirk::OmitThreadUpdatedEvent, &["thread.updated"]),
            (
                Quirk::OmitMembershipEvents,
                &["participant.joined", "participant.left"],
            ),
            (Quirk::OmitForkEvents, &["thread.fork", "thread.merged"]),
            (
                Quirk::OmitReceiptEvents,
                &["receipt.delivered", "receipt.read", "receipt.failed"],
            ),
            (Quirk::OmitCapabilityRevokedEvent, &["capability.revoked"]),
        ];
        for (quirk, kinds) in omitted {
            if self.q(*quirk) {
                a.effects
                    .retain(|e| !matches!(e, Effect::Event(ev) if kinds.contains(&ev.kind)));
            }
        }
        if self.q(Quirk::SkipObserverDelivery) && a.facts.kind == "thread_op" {
            skip_observers(a);
        }
        // The fork or merged thread's own effects: dropped when the operation is not
        // applied to it, or when the merge leaves the fork open.
        let fork = intent == "thread.fork@v1";
        let merge = intent == "thread.merge@v1";
        if (fork && self.q(Quirk::ForkWithoutEntry))
            || (merge && (self.q(Quirk::IgnoreThreadMerge) || self.q(Quirk::MergeLeavesForkOpen)))
        {
            a.effects
                .retain_mut(|e| other_thread_state(e, thread).is_none());
        }
        if fork && self.q(Quirk::ForkWithoutParentLink) {
            for state in a
                .effects
                .iter_mut()
                .filter_map(|e| other_thread_state(e, thread))
            {
                state
                    .linked_threads
                    .retain(|l| !(l.thread_id == thread && l.relation == "parent"));
            }
        }
    }

    fn chain_policy(&self) -> ChainPolicy {
        ChainPolicy {
            accept_context_in_payload: !self.q(Quirk::OneDelegationReading),
            ..ChainPolicy::default()
        }
    }

    fn structure(&self, env: &Value) -> Result<Facts, ProtocolError> {
        let mut facts = self.lenient_structure(env)?;
        if self.delivered && self.q(Quirk::RejectOldEnvelopes) {
            refuse_old_envelope(env, self.env.now())?;
        }
        if self.delivered && self.q(Quirk::OrphanDeliveredReplies) {
            facts.parent = None;
        }
        Ok(facts)
    }

    fn verify_signature(
        &self,
        env: &Value,
        payload: &[u8],
        key: &ed25519_dalek::VerifyingKey,
    ) -> Result<(), ProtocolError> {
        let mutant = self.q(Quirk::UnprefixedSignaturesOnly)
            || self.q(Quirk::NonCanonicalSigningForm)
            || self.q(Quirk::SignOverMeta);
        if !mutant {
            let mode = verify_envelope_signature_over(env, payload, key)?;
            if mode == SignatureMode::Legacy && self.q(Quirk::RejectLegacySignatures) {
                return Err(ProtocolError::new(
                    ErrorCode::SignatureInvalid,
                    "signature.value",
                    "legacy (unprefixed) signatures are not accepted",
                    "v1.1 §7.3",
                ));
            }
            return Ok(());
        }
        // Deliberately wrong verifiers.
        let bad = || {
            ProtocolError::new(
                ErrorCode::SignatureInvalid,
                "signature.value",
                "Ed25519 signature mismatch",
                "v1.1 §7.3",
            )
        };
        let sig = env
            .pointer("/signature/value")
            .and_then(Value::as_str)
            .and_then(|v| loom_protocol::keys::signature_from_b64url(v).ok())
            .ok_or_else(bad)?;
        let mut unsigned = env.clone();
        if let Some(o) = unsigned.as_object_mut() {
            o.remove("signature");
            if !self.q(Quirk::SignOverMeta) {
                o.remove("meta");
            }
        }
        let payload = if self.q(Quirk::NonCanonicalSigningForm) {
            serde_json::to_vec(&unsigned).unwrap_or_default()
        } else {
            to_canonical_bytes(&unsigned)
        };
        let context = (!self.q(Quirk::UnprefixedSignaturesOnly))
            .then_some(loom_protocol::keys::SigContext::ENVELOPE);
        if loom_protocol::keys::verify(key, context, &payload, &sig) {
            Ok(())
        } else {
            Err(bad())
        }
    }

    fn stored_form(&self, env: &mut Value) -> bool {
        let mut changed = false;
        if let Some(filled) = self.filled.borrow_mut().take() {
            changed |= *env != filled;
            *env = filled;
        }
        if self.q(Quirk::DropNullMembers) {
            changed |= drop_nulls(env);
        }
        changed
    }
}

/// `reject-old-envelopes`: refuses `env` when its `created_at` is more than the
/// §15.5 freshness window before `now`. §15.5 bounds the
/// request and wrapper timestamps only, a queued envelope may be days old.
fn refuse_old_envelope(env: &Value, now: Timestamp) -> Result<(), ProtocolError> {
    let created = env
        .get("created_at")
        .and_then(Value::as_str)
        .and_then(|s| Timestamp::parse(s).ok());
    match created {
        Some(c) if now.unix_ms() - c.unix_ms() > FRESHNESS_MS => Err(ProtocolError::invalid(
            "created_at",
            format!("created_at {c} is more than {FRESHNESS_MS} ms old"),
            "v1.1 §15.5",
        )),
        _ => Ok(()),
    }
}

/// The state an effect writes for a thread other than `thread` (a fork or merged thread,
/// §11.4), if it writes one.
fn other_thread_state(e: &mut Effect, thread: ThreadId) -> Option<&mut ThreadState> {
    match e {
        Effect::PutOtherThread { state, .. }
        | Effect::IndexThread { state, .. }
        | Effect::SearchThread { state, .. } => (state.id != thread).then_some(state),
        _ => None,
    }
}

/// `restamp-created-at`: the signed `created_at` overwritten with the receipt time, and the
/// stored form's hash (`PutEnvelope`, the audit entry) with it.
fn restamp_created_at(a: &mut Acceptance) {
    a.envelope["created_at"] = a.envelope["meta"]["received_at"].clone();
    let canonical = to_canonical_bytes_without(&a.envelope, &["meta"]).unwrap_or_default();
    let hash = hex::encode(sha2::Sha256::digest(&canonical));
    for e in &mut a.effects {
        match e {
            Effect::PutEnvelope { signed_hash, .. } => *signed_hash = hash.clone(),
            Effect::Audit(d) if d.action == "envelope.accepted" => {
                d.details["sha256"] = hash.clone().into();
            }
            _ => {}
        }
    }
}

/// `skip-observer-delivery`: an operation's readers (the envelope and its event) without
/// the thread's observers, the sender kept.
fn skip_observers(a: &mut Acceptance) {
    let sender = a.facts.sender.clone();
    let next = &a.next_state;
    let keep = |r: &Address| {
        *r == sender
            || next
                .participants
                .get(r)
                .is_none_or(|p| p.role != ParticipantRole::Observer)
    };
    let id = a.facts.id;
    for e in &mut a.effects {
        match e {
            Effect::PutEnvelope { readers, .. } => readers.retain(|r| keep(r)),
            Effect::Event(ev) if ev.envelope == Some(id) && ev.kind == "thread.updated" => {
                ev.readers.retain(|r| keep(r));
            }
            _ => {}
        }
    }
}

/// Removes every `null` member, recursively (the `drop-null-members` quirk); true when one
/// was removed.
fn drop_nulls(v: &mut Value) -> bool {
    match v {
        Value::Object(o) => {
            let before = o.len();
            o.retain(|_, m| !m.is_null());
            let mut changed = o.len() != before;
            for m in o.values_mut() {
                changed |= drop_nulls(m);
            }
            changed
        }
        Value::Array(a) => a.iter_mut().fold(false, |c, m| drop_nulls(m) | c),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Admission re-canonicalizes the stored form only when `stored_form` says it changed.
    #[test]
    fn drop_nulls_reports_whether_it_removed_a_member() {
        let mut v = serde_json::json!({"a": 1, "b": [{"c": "x"}], "d": {"e": false}});
        let before = v.clone();
        assert!(!drop_nulls(&mut v));
        assert_eq!(v, before);
        let mut v = serde_json::json!({"a": 1, "b": [{"c": null}], "d": {"e": false}});
        assert!(drop_nulls(&mut v));
        assert_eq!(v, serde_json::json!({"a": 1, "b": [{}], "d": {"e": false}}));
    }
}
