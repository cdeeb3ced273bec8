//! The steps of acceptance a conformance self-test shim may replace, each with the
//! specification as its default. [`SpecRules`] is the specification and what every real
//! node uses; the reference node's `quirks` shim (built only with its `quirks` feature)
//! overrides one step per deliberate defect so the harness can prove each of its cases can
//! fail (DESIGN.md §4). The acceptance core reads no flags: it calls these steps, in the
//! order [`super`] documents.

use super::effects::Acceptance;
use super::facts::Facts;
use super::view::Directory;
use crate::address::Address;
use crate::clock::FixedClock;
use crate::delegation::{ChainPolicy, verify_delegation_chain};
use crate::envelope::{check_envelope_size, validate_envelope, verify_envelope_signature_over};
use crate::error::{ErrorCode, ProtocolError};
use crate::policy::check_bcc_copy;
use crate::task::{TaskRole, TaskState, check_task_transition};
use crate::thread::{ThreadDag, ThreadLimits, ThreadOp, ThreadState};
use crate::time::Timestamp;
use ed25519_dalek::VerifyingKey;
use serde_json::Value;

/// The steps of admission and decision. Every method's default is the rule it names; an
/// implementation other than [`SpecRules`] exists only to break one on purpose.
pub trait Rules {
    /// §24.2 `PAYLOAD_TOO_LARGE`: `len`, the size of `JCS(envelope − meta)`, is within
    /// `limit` (0: no limit).
    fn check_size(&self, len: usize, limit: usize) -> Result<(), ProtocolError> {
        check_envelope_size(len, limit)
    }

    /// Structure (§8.1–§8.4, §9.2) and the bcc-copy form (§8.3, §20.6): the typed facts,
    /// or the first broken rule.
    fn structure(&self, envelope: &Value) -> Result<Facts, ProtocolError> {
        let typed = validate_envelope(envelope)?;
        check_bcc_copy(envelope)?;
        Facts::with_encryption(&typed, envelope)
    }

    /// §16.1 "validate authorization": a local submission's `from.identity` is the
    /// authenticated identity.
    fn check_local_sender(&self, facts: &Facts, caller: &Address) -> Result<(), ProtocolError> {
        if facts.sender == *caller {
            return Ok(());
        }
        Err(ProtocolError::new(
            ErrorCode::CapabilityDenied,
            "from.identity",
            format!(
                "the authenticated identity is {caller}; it cannot send as {}",
                facts.sender
            ),
            "v1.1 §16.1",
        ))
    }

    /// §21.2: a bridged envelope's sender is a `bridge://` identity with `from.type`
    /// `bridge` (the bridge speaks only for mail senders, never for a LOOM identity).
    fn check_bridged_sender(&self, facts: &Facts) -> Result<(), ProtocolError> {
        if facts.sender.is_bridge() && facts.sender_type == "bridge" {
            return Ok(());
        }
        Err(ProtocolError::new(
            ErrorCode::CapabilityDenied,
            "from.identity",
            format!(
                "the email bridge sends only as bridge:// identities of type bridge, not {} ({})",
                facts.sender, facts.sender_type
            ),
            "v1.1 §21.2",
        ))
    }

    /// §15.4: a delivered envelope's sender is an identity of the delivering `node`.
    fn check_delivering_node(&self, facts: &Facts, node: &str) -> Result<(), ProtocolError> {
        if facts.sender.domain().eq_ignore_ascii_case(node) {
            return Ok(());
        }
        Err(ProtocolError::new(
            ErrorCode::CapabilityDenied,
            "from.identity",
            format!(
                "{} is not an identity of the delivering node {node}",
                facts.sender
            ),
            "v1.1 §15.4",
        ))
    }

    /// §6.3, §8.1: `from.type` is the type the sender registered.
    fn check_sender_type(&self, facts: &Facts, registered: &str) -> Result<(), ProtocolError> {
        if facts.sender_type == registered {
            return Ok(());
        }
        Err(ProtocolError::invalid(
            "from.type",
            format!(
                "{} is registered as {registered}, not {:?}",
                facts.sender, facts.sender_type
            ),
            "v1.1 §6.3, §8.1",
        ))
    }

    /// §7.3: the envelope verifies under `key`, the sender's signing key `from.key_id`
    /// (`None`: the sender has no such key). `payload`: the signed form,
    /// `JCS(envelope − signature − meta)` (§7.2).
    fn check_signature(
        &self,
        envelope: &Value,
        payload: &[u8],
        facts: &Facts,
        key: Option<VerifyingKey>,
    ) -> Result<(), ProtocolError> {
        let key = key.ok_or_else(|| {
            ProtocolError::new(
                ErrorCode::SignatureInvalid,
                "from.key_id",
                format!(
                    "{} is not an active signing key of {}",
                    facts.key_id, facts.sender
                ),
                "v1.1 §7.3",
            )
        })?;
        self.verify_signature(envelope, payload, &key)
    }

    /// §7.3 verification with the sender's key: the context prefix when
    /// `signature.context` says so, the legacy form as the migration fallback.
    fn verify_signature(
        &self,
        envelope: &Value,
        payload: &[u8],
        key: &VerifyingKey,
    ) -> Result<(), ProtocolError> {
        verify_envelope_signature_over(envelope, payload, key).map(|_| ())
    }

    /// §13.3, §13.5: an agent's envelope carries a delegation chain that verifies at `now`.
    fn check_delegation(
        &self,
        envelope: &Value,
        directory: &dyn Directory,
        now: Timestamp,
    ) -> Result<(), ProtocolError> {
        verify_delegation_chain(envelope, directory, &self.chain_policy(), &FixedClock(now))
    }

    /// How delegation chains are verified (§13.3; both readings of §13.3.1, DESIGN.md §9).
    fn chain_policy(&self) -> ChainPolicy {
        ChainPolicy::default()
    }

    /// The envelope as it will be stored, after verification (the specification stores it
    /// unaltered, §7.2); true when it changed, so admission re-canonicalizes only then.
    fn stored_form(&self, _envelope: &mut Value) -> bool {
        false
    }

    /// §8.4 `ENVELOPE_DUPLICATE`: `facts.id` is not stored yet (`stored`: it is).
    fn check_new_id(&self, facts: &Facts, stored: bool) -> Result<(), ProtocolError> {
        if !stored {
            return Ok(());
        }
        Err(ProtocolError::new(
            ErrorCode::EnvelopeDuplicate,
            "id",
            format!("{} is already stored", facts.id),
            "v1.1 §8.4, §24.2",
        ))
    }

    /// §10.5, §24.2 `THREAD_NOT_FOUND`: an envelope naming an unknown thread starts it,
    /// except a `thread_op`, which needs the thread to exist.
    fn check_may_start_thread(&self, facts: &Facts) -> Result<(), ProtocolError> {
        if facts.kind != "thread_op" {
            return Ok(());
        }
        Err(ProtocolError::new(
            ErrorCode::ThreadNotFound,
            "thread_id",
            format!("{} does not exist", facts.thread),
            "v1.1 §24.2",
        ))
    }

    /// §9.2, §11: the envelope is an operation on its thread (a `thread_op`).
    fn is_operation(&self, facts: &Facts) -> bool {
        facts.kind == "thread_op"
    }

    /// §10.5, §12.4: a reply from someone who is not an active participant of an existing
    /// thread needs a `reply` capability.
    fn reply_needs_capability(&self, facts: &Facts, state: &ThreadState, fresh: bool) -> bool {
        !fresh && !state.is_active_participant(&facts.sender)
    }

    /// §12.4: an operation from anyone but an owner needs a capability for its grant.
    fn operation_needs_capability(&self, facts: &Facts, state: &ThreadState) -> bool {
        !state.is_owner(&facts.sender)
    }

    /// §10.4 `THREAD_LOCKED`: a locked thread takes only operations.
    fn check_unlocked(&self, facts: &Facts, state: &ThreadState) -> Result<(), ProtocolError> {
        state.check_accepts_envelope(&facts.kind)
    }

    /// §10.2, §10.7: the envelope may join the DAG: not a duplicate, no cycle, within
    /// `limits`.
    fn check_dag(
        &self,
        dag: &ThreadDag,
        facts: &Facts,
        limits: &ThreadLimits,
    ) -> Result<(), ProtocolError> {
        dag.check(&facts.id, facts.parent.as_ref(), limits)
    }

    /// §10.2 out-of-order acceptance: an envelope whose parent is not in its thread
    /// (`pending`) is accepted and marked pending, never refused.
    fn check_pending_parent(&self, _facts: &Facts, _pending: bool) -> Result<(), ProtocolError> {
        Ok(())
    }

    /// §10.6, §24.2 `ENCRYPTION_REQUIRED`: an E2EE thread takes only encrypted payloads
    /// (operations stay cleartext so nodes can authorize them, §12.4).
    fn check_encryption_required(
        &self,
        facts: &Facts,
        state: &ThreadState,
    ) -> Result<(), ProtocolError> {
        crate::policy::require_encryption(
            facts.kind == "thread_op",
            facts.encrypted,
            state.encryption_enabled,
        )
    }

    /// §7.4, §10.6, §21.4, §23.1: an encrypted payload fits its thread (profile, current
    /// epoch, no bridge recipient, an unused replay counter); the replay state to store.
    fn check_encrypted_payload(
        &self,
        facts: &Facts,
        content: &crate::e2ee::PayloadHead,
        state: &ThreadState,
        mode: crate::e2ee::ReplayMode,
    ) -> Result<Option<(String, crate::e2ee::ReplayState)>, ProtocolError> {
        crate::e2ee::thread::check_payload(
            state,
            &facts.sender,
            facts.device_id.as_deref(),
            &facts.visible_recipients,
            content,
            mode,
        )
    }

    /// §10.4, §11: `op` (preconditions §11.3 included) applied to `next`, the thread's
    /// state, as event `event_seq`.
    fn apply_operation(
        &self,
        next: &mut ThreadState,
        event_seq: u64,
        op: &ThreadOp,
    ) -> Result<(), ProtocolError> {
        next.apply(event_seq, op)
    }

    /// §18.3 (v1.0 §17.3): the move `from` → `to` is in the transition table and one of
    /// `roles` may trigger it.
    fn check_task_move(
        &self,
        from: TaskState,
        to: TaskState,
        roles: &[TaskRole],
    ) -> Result<(), ProtocolError> {
        check_task_transition(from, to, roles)
    }

    /// §19: the definition a `workflow.execute@v1` envelope carries, parsed and checked.
    fn workflow_definition(
        &self,
        facts: &Facts,
    ) -> Result<crate::workflow::Definition, ProtocolError> {
        crate::workflow::parse_definition(
            facts
                .structured
                .as_ref()
                .and_then(|s| s.parameters.as_ref()),
        )
    }

    /// §18.5: whether a workflow defined in `state`'s thread is held (a quarantined thread
    /// runs nothing automatically).
    fn workflow_held(&self, state: &ThreadState) -> bool {
        state.labels.contains(crate::workflow::QUARANTINE_LABEL)
    }

    /// §19.2: the run after a recorded transition, or why it is refused.
    fn apply_workflow_update(
        &self,
        run: &crate::workflow::WorkflowRun,
        update: &crate::workflow::Update,
        actor: crate::workflow::Actor<'_>,
        envelope: &str,
        now: crate::time::Timestamp,
    ) -> Result<crate::workflow::WorkflowRun, ProtocolError> {
        run.apply(update, actor, envelope, now)
    }

    /// The decision as the node will apply it (§11.6 `meta`, §8.3 readers, §16.6 search
    /// rows, §17.3 events, §11.4 fork threads); the specification changes nothing.
    fn accepted(&self, _acceptance: &mut Acceptance) {}
}

/// The specification.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpecRules;

impl Rules for SpecRules {}
