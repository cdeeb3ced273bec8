//! The rule implementations acceptance runs, as settings. [`SpecRules`] is the
//! specification and what every real node uses. A conformance self-test shim (the reference
//! node's `quirks` module) substitutes deliberate defects through [`Rules`] and
//! [`Deviations`] so the harness can prove each of its cases can fail; no other caller
//! should (DESIGN.md §4).

use super::facts::Facts;
use crate::delegation::ChainPolicy;
use crate::envelope::{validate_envelope, verify_envelope_signature_over};
use crate::error::ProtocolError;
use crate::policy::check_bcc_copy;
use ed25519_dalek::VerifyingKey;
use serde_json::Value;

/// Deliberate departures from single MUST-level rules of acceptance. All `false` in
/// [`Deviations::NONE`], the only value a real node uses; each field names the rule it
/// breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Deviations {
    /// Accept envelopes over the size limit (§24.2 `PAYLOAD_TOO_LARGE`).
    pub ignore_size_limit: bool,
    /// Accept `from.identity` other than the authenticated identity (§16.1).
    pub allow_sender_spoofing: bool,
    /// Accept a `from.type` other than the registered type (§6.3, §8.1).
    pub ignore_sender_type: bool,
    /// Skip the sender key lookup and signature verification (§7.3).
    pub skip_signature: bool,
    /// Skip agent delegation chains (§13.3).
    pub skip_delegation_chain: bool,
    /// Accept a stored id again, answering with the stored envelope (§8.4).
    pub allow_duplicate_ids: bool,
    /// Start a thread from a `thread_op` naming an unknown thread (§24.2 `THREAD_NOT_FOUND`).
    pub bootstrap_thread_from_op: bool,
    /// Skip capability tokens for non-participants and operations (§12.4).
    pub skip_capability_check: bool,
    /// Accept envelopes into locked threads (§10.4).
    pub accept_into_locked_thread: bool,
    /// Ignore `max_envelopes_per_thread` / `max_pending_parents` (§10.7).
    pub ignore_thread_limits: bool,
    /// Skip cycle detection (§10.2).
    pub allow_dag_cycles: bool,
    /// Refuse envelopes whose parent is missing (§10.2 requires accepting them).
    pub reject_missing_parent: bool,
    /// Ignore operation preconditions (§11.3).
    pub ignore_op_preconditions: bool,
    /// Accept invalid thread and task transitions (§10.4, §18.3).
    pub allow_invalid_state_transition: bool,
    /// Let anyone trigger a task transition (§18.3).
    pub allow_any_task_actor: bool,
    /// Accept `thread.delegate@v1` without applying it (§11.2).
    pub ignore_thread_delegate: bool,
    /// Accept `thread.fork@v1` without the `forks[]` entry or fork thread (§11.4).
    pub fork_without_entry: bool,
    /// Create fork threads without their `parent` link (§11.4).
    pub fork_without_parent_link: bool,
    /// Accept `thread.merge@v1` without applying it (§11.4).
    pub ignore_thread_merge: bool,
    /// Move a merged fork's envelopes into the parent (§11.4 "does not move envelopes").
    pub merge_moves_envelopes: bool,
    /// Leave a merged fork thread's state unchanged (§11.4).
    pub merge_leaves_fork_open: bool,
    /// Accept `thread.link@v1` without applying it (§11.4).
    pub ignore_thread_link: bool,
    /// Leave observers out of the readers of operations (§11.5).
    pub skip_observer_delivery: bool,
    /// Spend single-use tokens without the `capability.spent` event (§12.5).
    pub omit_capability_spent_event: bool,
    /// Leave `meta.event_seq` out (§11.6).
    pub omit_event_seq: bool,
    /// Leave `meta.origin_event_seq` out (§11.6 SHOULD).
    pub omit_origin_event_seq: bool,
    /// Overwrite the signed `created_at` with the receipt time (§10.3).
    pub restamp_created_at: bool,
    /// Leave envelopes out of the search index (§16.6).
    pub skip_envelope_search_index: bool,
    /// Leave threads out of the search index (§16.6).
    pub skip_thread_search_index: bool,
    /// Store a `thread_op` whose intent is outside the §9.2 families as an inert envelope
    /// (only reachable when structural validation is skipped).
    pub inert_out_of_family_ops: bool,
}

impl Deviations {
    /// The specification: no deviation.
    pub const NONE: Deviations = Deviations {
        ignore_size_limit: false,
        allow_sender_spoofing: false,
        ignore_sender_type: false,
        skip_signature: false,
        skip_delegation_chain: false,
        allow_duplicate_ids: false,
        bootstrap_thread_from_op: false,
        skip_capability_check: false,
        accept_into_locked_thread: false,
        ignore_thread_limits: false,
        allow_dag_cycles: false,
        reject_missing_parent: false,
        ignore_op_preconditions: false,
        allow_invalid_state_transition: false,
        allow_any_task_actor: false,
        ignore_thread_delegate: false,
        fork_without_entry: false,
        fork_without_parent_link: false,
        ignore_thread_merge: false,
        merge_moves_envelopes: false,
        merge_leaves_fork_open: false,
        ignore_thread_link: false,
        skip_observer_delivery: false,
        omit_capability_spent_event: false,
        omit_event_seq: false,
        omit_origin_event_seq: false,
        restamp_created_at: false,
        skip_envelope_search_index: false,
        skip_thread_search_index: false,
        inert_out_of_family_ops: false,
    };
}

/// The steps of admission whose implementation a self-test shim may replace. Every method
/// has the specification as its default.
pub trait Rules {
    /// The deviations in force ([`Deviations::NONE`] for the specification).
    fn deviations(&self) -> &Deviations {
        &Deviations::NONE
    }

    /// Structure (§8.1–§8.4, §9.2) and the bcc-copy form (§8.3, §20.6): the typed facts,
    /// or the first broken rule.
    fn structure(&self, envelope: &Value) -> Result<Facts, ProtocolError> {
        let typed = validate_envelope(envelope)?;
        check_bcc_copy(envelope)?;
        Ok(Facts::of(&typed))
    }

    /// §7.3 verification with the sender's key: the context prefix when
    /// `signature.context` says so, the legacy form as the migration fallback. `payload`:
    /// the signed form, `JCS(envelope − signature − meta)` (§7.2).
    fn verify_signature(
        &self,
        envelope: &Value,
        payload: &[u8],
        key: &VerifyingKey,
    ) -> Result<(), ProtocolError> {
        verify_envelope_signature_over(envelope, payload, key).map(|_| ())
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
}

/// The specification.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpecRules;

impl Rules for SpecRules {}
