//! Deliberate defects (DESIGN.md §4): each quirk turns off exactly one MUST-level check, so
//! the conformance harness can prove that the case for that rule fails against a node that
//! breaks it. Quirks exist only with the `quirks` feature; without it [`Quirks::has`] is
//! always false and the checks cannot be turned off.
//!
//! This module is the self-test shim (rustls BoGo style): the envelope path never asks
//! "is quirk X on?". [`Quirks::deviations`] turns the set into loom-protocol's
//! [`Deviations`] (data the acceptance core reads, each field naming the rule it breaks),
//! and [`QuirkRules`] substitutes the deliberately broken admission steps (lenient
//! structure, wrong signature verifiers, altered stored forms) through
//! [`loom_protocol::accept::Rules`]. Each quirk's reason is its doc comment below.

use crate::env::Env;
use loom_protocol::accept::{Deviations, Facts, Rules, Structured};
use loom_protocol::envelope::validate::CORE_TYPES;
use loom_protocol::envelope::{
    Priority, SignatureMode, validate_envelope, validate_envelope_all, verify_envelope_signature,
};
use loom_protocol::id::{EnvelopeId, ThreadId};
use loom_protocol::jcs::to_canonical_bytes;
use loom_protocol::policy::{AudienceOf, check_bcc_copy};
use loom_protocol::{Address, ErrorCode, ProtocolError, Timestamp};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeSet;

/// One switch per MUST-level check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Quirk {
    /// Store envelopes whose signature is missing, malformed or does not verify (v1.1 §7.3,
    /// §16.1).
    AcceptBadSignature,
    /// Accept an envelope whose id is already stored (v1.1 §8.4, §24.2 `ENVELOPE_DUPLICATE`).
    AllowDuplicateIds,
    /// Skip structural envelope validation (v1.1 §8.1–§8.2).
    SkipEnvelopeValidation,
    /// Accept `from.identity` other than the authenticated identity (v1.1 §16.1 "validate authorization").
    AllowSenderSpoofing,
    /// Do not assign `meta.event_seq` (v1.1 §11.6, §16.1).
    OmitEventSeq,
    /// Serve envelopes to identities outside their audience (v1.1 §8.3).
    IgnoreAudience,
    /// Accept envelopes into locked threads (v1.1 §10.4, §24.2 `THREAD_LOCKED`).
    AcceptIntoLockedThread,
    /// Accept invalid thread state transitions (v1.1 §10.4).
    AllowInvalidStateTransition,
    /// Accept agent envelopes without a valid delegation chain (v1.1 §13.3).
    SkipDelegationCheck,
    /// Accept thread operations without a valid capability token (v1.1 §12.4).
    SkipCapabilityCheck,
    /// Replay a different result for a repeated `Idempotency-Key` (v1.1 §14.4).
    IgnoreIdempotencyKey,
    /// Accept expired access tokens (v1.1 §14.2).
    AcceptExpiredToken,
    /// Never answer 429 (v1.1 §14.3).
    DisableRateLimit,
    /// Answer errors without the §24.1 body.
    BareErrorBodies,
    /// Allow deleting content under `sys.legal_hold` (v1.1 §25.3).
    IgnoreLegalHold,
    /// Accept envelopes whose parent makes a cycle or is itself (v1.1 §10.2).
    AllowDagCycles,
    /// Accept envelopes over the size limit (v1.1 §24.2 `PAYLOAD_TOO_LARGE`).
    IgnoreSizeLimit,
    /// Serve a node document with only `loom` and `domain`: every other §15.2 member
    /// (`node_id`, `api_url`, `websocket_url`, `federation`, `signing_keys`,
    /// `supported_versions`, `supported_profiles`) is left out (v1.1 §15.2).
    IncompleteNodeDocument,
    /// Refuse legacy (unprefixed) envelope signatures: no §7.3 migration-window fallback.
    RejectLegacySignatures,
    /// Verify envelope signatures only in the unprefixed v1.0 form, ignoring the
    /// `LOOM-ENVELOPE-SIG-v1` context (v1.1 §7.3 "If `signature.context` is present, verify
    /// using the indicated context prefix").
    UnprefixedSignaturesOnly,
    /// Verify envelope signatures over the plain serde_json serialization (UTF-8 key order,
    /// Rust number formatting) instead of the RFC 8785 canonical form (v1.1 §7.2).
    NonCanonicalSigningForm,
    /// Include `meta` in the signed form of an envelope (v1.1 §7.2 excludes it).
    SignOverMeta,
    /// Refuse envelopes whose `type` is not in the core registry (v1.1 §9.1: nodes MUST
    /// accept unknown types).
    RejectUnknownTypes,
    /// Drop `null` members from an envelope after verifying it, so the stored copy no longer
    /// verifies (v1.1 §7.2 "`null` values included").
    DropNullMembers,
    /// Serve the §10.1 thread object without `cap_epoch`, `subject` and `labels` (v1.1 §10.1, §12.3).
    IncompleteThreadObject,
    /// Overwrite the signed `created_at` with the receipt time (v1.1 §10.3: envelopes carry
    /// `created_at` as signed).
    RestampCreatedAt,
    /// Reject envelopes whose parent is missing (v1.1 §10.2 out-of-order acceptance).
    RejectMissingParent,
    /// Do not enforce `max_envelopes_per_thread` / `max_pending_parents` (v1.1 §10.7).
    IgnoreThreadLimits,
    /// Ignore the `preconditions` of thread operations (v1.1 §11.3).
    IgnoreOpPreconditions,
    /// Let anyone trigger any valid task transition (v1.1 §18.3, v1.0 §17.3 "who can trigger").
    AllowAnyTaskActor,
    /// Start a new thread from a `thread_op` naming an unknown thread instead of answering
    /// `THREAD_NOT_FOUND` (v1.1 §24.2).
    BootstrapThreadFromOp,
    /// Revoke delegations without the `delegation.revoked` notification (v1.1 §13.4, §17.3).
    OmitDelegationRevokedEvent,
    /// Leave envelopes out of the search index (v1.1 §16.6: text, intent, parameters).
    SkipEnvelopeSearchIndex,
    /// Leave thread metadata out of the search index (v1.1 §16.6: subject, labels, participants).
    SkipThreadSearchIndex,
    /// Serve blob downloads without an access token (v1.1 §16.7).
    AnonymousBlobDownload,
    /// Serve blob downloads to identities without read access (v1.1 §16.7).
    SkipBlobReadCheck,
    /// Give events a fresh id on every catch-up read (v1.1 §16.8 stable event ids).
    UnstableEventIds,
    /// Ignore `since` on event catch-up and start from the beginning (v1.1 §16.8).
    IgnoreEventsSince,
    /// Return every identity's events on catch-up (v1.1 §8.3 audience in delivery).
    IgnoreEventAudience,
    /// Answer retraction without erasing the content (v1.1 §25.2).
    RetractKeepsContent,
    /// Retract without the `envelope.retracted` event (v1.1 §20.7).
    OmitRetractedEvent,
    /// Accept TLS 1.2 handshakes besides TLS 1.3 (v1.1 §14.1 "TLS 1.2 and below MUST be rejected").
    AllowTls12,
    /// Offer only `http/1.1` in ALPN, never `h2` (v1.1 §14.1 "HTTP/2 over TLS 1.3").
    NoHttp2,
    /// Label JSON responses `application/json` without `charset=utf-8` (v1.1 §14.1).
    NoJsonCharset,
    /// Accept request bodies of any content type as JSON (v1.1 §14.1).
    AcceptAnyContentType,
    /// Parse JSON bodies leniently: duplicate member names, last one wins (v1.1 §7.2 I-JSON).
    AcceptDuplicateJsonKeys,
    /// Read request bodies of any size (v1.1 §24.2 `PAYLOAD_TOO_LARGE`, `limits.max_body_bytes`).
    IgnoreBodyLimit,
    /// Answer an auth challenge without `expires_at` (v1.1 §14.2 "nonce + expiry").
    ChallengeWithoutExpiry,
    /// Issue tokens without a `refresh_token` (v1.1 §14.2).
    OmitRefreshToken,
    /// Issue tokens without verifying the signature over the challenge nonce (v1.1 §14.2).
    AcceptBadLoginSignature,
    /// Let a challenge be answered more than once (v1.1 §14.2 proof-of-key, DESIGN.md §9).
    AllowChallengeReuse,
    /// Accept an access token where a refresh token is required and vice versa (v1.1 §14.2).
    TokenKindUnchecked,
    /// Register identities without verifying the registration proof (DESIGN.md §9, v1.1 §14.2).
    AcceptBadRegistrationProof,
    /// Let a second registration of a registered address replace it (DESIGN.md §9 "duplicate id → 409").
    AllowDuplicateRegistration,
    /// Register non-canonical (mixed-case) addresses, keeping the given spelling in the
    /// identity document (v1.1 §6.1 "canonical lowercase form in identity documents").
    AcceptNonCanonicalAddress,
    /// Resolve identity documents without their signing keys (v1.1 §6.2, §6.3).
    IdentityDocumentWithoutKeys,
    /// Answer a key revocation without revoking the key (v1.1 §16.3).
    IgnoreKeyRevocation,
    /// Allow revoking an identity's last active signing key (v1.1 §6.3 "human MUST have at least one signing key").
    AllowRevokingLastKey,
    /// Accept `thread.delegate@v1` without handing ownership over (v1.1 §11.2).
    IgnoreThreadDelegate,
    /// Accept `thread.fork@v1` without adding the parent's `forks[]` entry (v1.1 §11.4).
    ForkWithoutEntry,
    /// Accept `thread.merge@v1` without marking the fork merged or linking `merged_from` (v1.1 §11.4).
    IgnoreThreadMerge,
    /// Move the fork's envelopes into the parent thread on `thread.merge@v1` (v1.1 §11.4 "does not move envelopes").
    MergeMovesEnvelopes,
    /// Accept `thread.link@v1` without adding the `linked_threads[]` entry (v1.1 §11.4).
    IgnoreThreadLink,
    /// Leave observers out of the readers of thread operations (v1.1 §11.5).
    SkipObserverDelivery,
    /// Mark a single-use token spent without emitting the `capability.spent` event (v1.1 §12.5).
    OmitCapabilitySpentEvent,
    /// Treat an envelope without `audience` as mode `recipients` instead of `thread` (v1.1
    /// §8.2 "When `audience` is omitted, nodes MUST treat it as mode `thread`").
    OmittedAudienceAsRecipients,
    /// Read lone UTF-16 surrogate escapes in JSON bodies as U+FFFD instead of refusing the
    /// body (v1.1 §7.2 "Lone surrogate code points MUST be rejected").
    AcceptLoneSurrogates,
    /// Issue event ids as bare ULIDs without the `evt_` prefix (v1.1 §8.4).
    UnprefixedEventIds,
    /// Accept envelope attachment ids without the `att_` prefix (v1.1 §8.4).
    AcceptAnyAttachmentId,
    /// Accept signing key ids without the `k_sign_` prefix at registration (v1.1 §8.4).
    AcceptAnySigningKeyId,
    /// Accept encryption key ids without the `k_enc_` prefix at registration (v1.1 §8.4).
    AcceptAnyEncryptionKeyId,
    /// Register `agent` identities without a `delegator` (v1.1 §6.3).
    AcceptAgentWithoutDelegator,
    /// Register agents with an empty or malformed `delegation_scope`, or an expired `delegation_expires` (v1.1 §6.3 "bounded scope").
    AcceptUnboundedAgentScope,
    /// Register agents without `agent_info` or `delegation_signature`, and skip verifying the delegator's signature (v1.1 §6.4).
    AcceptIncompleteAgentDocument,
    /// Register documents carrying agent members (`delegator`, …) under a type other than `agent` (v1.1 §6.4).
    AcceptAgentMembersOnOtherTypes,
    /// Register `team` identities without a members list (v1.1 §6.3).
    AcceptTeamWithoutMembers,
    /// Register `team` identities without a routing policy (v1.1 §6.3).
    AcceptTeamWithoutRoutingPolicy,
    /// Register `service` identities without an `operator` (v1.1 §6.3).
    AcceptServiceWithoutOperator,
    /// Create the fork thread of `thread.fork@v1` without its `linked_threads[]` `parent` entry (v1.1 §11.4).
    ForkWithoutParentLink,
    /// Apply `thread.merge@v1` to the parent but leave the fork thread's state unchanged (v1.1 §11.4).
    MergeLeavesForkOpen,
    /// Register addresses whose local part breaks `[a-z0-9][a-z0-9._-]{0,63}` (v1.1 §6.1).
    AcceptAnyLocalPart,
    /// Resolve identities by the address exactly as written, so a mixed-case lookup finds nothing (v1.1 §6.1: addresses compare case-insensitively).
    CaseSensitiveAddressLookup,
    /// Register `bridge://` addresses through the identity API (v1.1 §6.1: the scheme is reserved for bridged identities).
    AllowBridgeRegistration,
    /// Issue capability tokens whose id lacks the `cap_` prefix (v1.1 §8.4).
    AcceptAnyCapabilityId,
    /// Accept a `parent_id` list, threading under its first entry (v1.1 §10.2: a single parent).
    AcceptParentIdArray,
    /// Leave `meta.origin_event_seq` off locally created envelopes (v1.1 §11.6 SHOULD).
    OmitOriginEventSeq,
}

impl Quirk {
    /// Every quirk, in declaration order.
    pub const ALL: [Quirk; 86] = [
        Quirk::AcceptBadSignature,
        Quirk::AllowDuplicateIds,
        Quirk::SkipEnvelopeValidation,
        Quirk::AllowSenderSpoofing,
        Quirk::OmitEventSeq,
        Quirk::IgnoreAudience,
        Quirk::AcceptIntoLockedThread,
        Quirk::AllowInvalidStateTransition,
        Quirk::SkipDelegationCheck,
        Quirk::SkipCapabilityCheck,
        Quirk::IgnoreIdempotencyKey,
        Quirk::AcceptExpiredToken,
        Quirk::DisableRateLimit,
        Quirk::BareErrorBodies,
        Quirk::IgnoreLegalHold,
        Quirk::AllowDagCycles,
        Quirk::IgnoreSizeLimit,
        Quirk::IncompleteNodeDocument,
        Quirk::RejectLegacySignatures,
        Quirk::UnprefixedSignaturesOnly,
        Quirk::NonCanonicalSigningForm,
        Quirk::SignOverMeta,
        Quirk::RejectUnknownTypes,
        Quirk::DropNullMembers,
        Quirk::IncompleteThreadObject,
        Quirk::RestampCreatedAt,
        Quirk::RejectMissingParent,
        Quirk::IgnoreThreadLimits,
        Quirk::IgnoreOpPreconditions,
        Quirk::AllowAnyTaskActor,
        Quirk::BootstrapThreadFromOp,
        Quirk::OmitDelegationRevokedEvent,
        Quirk::SkipEnvelopeSearchIndex,
        Quirk::SkipThreadSearchIndex,
        Quirk::AnonymousBlobDownload,
        Quirk::SkipBlobReadCheck,
        Quirk::UnstableEventIds,
        Quirk::IgnoreEventsSince,
        Quirk::IgnoreEventAudience,
        Quirk::RetractKeepsContent,
        Quirk::OmitRetractedEvent,
        Quirk::AllowTls12,
        Quirk::NoHttp2,
        Quirk::NoJsonCharset,
        Quirk::AcceptAnyContentType,
        Quirk::AcceptDuplicateJsonKeys,
        Quirk::IgnoreBodyLimit,
        Quirk::ChallengeWithoutExpiry,
        Quirk::OmitRefreshToken,
        Quirk::AcceptBadLoginSignature,
        Quirk::AllowChallengeReuse,
        Quirk::TokenKindUnchecked,
        Quirk::AcceptBadRegistrationProof,
        Quirk::AllowDuplicateRegistration,
        Quirk::AcceptNonCanonicalAddress,
        Quirk::IdentityDocumentWithoutKeys,
        Quirk::IgnoreKeyRevocation,
        Quirk::AllowRevokingLastKey,
        Quirk::IgnoreThreadDelegate,
        Quirk::ForkWithoutEntry,
        Quirk::IgnoreThreadMerge,
        Quirk::MergeMovesEnvelopes,
        Quirk::IgnoreThreadLink,
        Quirk::SkipObserverDelivery,
        Quirk::OmitCapabilitySpentEvent,
        Quirk::OmittedAudienceAsRecipients,
        Quirk::AcceptLoneSurrogates,
        Quirk::UnprefixedEventIds,
        Quirk::AcceptAnyAttachmentId,
        Quirk::AcceptAnySigningKeyId,
        Quirk::AcceptAnyEncryptionKeyId,
        Quirk::AcceptAgentWithoutDelegator,
        Quirk::AcceptUnboundedAgentScope,
        Quirk::AcceptIncompleteAgentDocument,
        Quirk::AcceptAgentMembersOnOtherTypes,
        Quirk::AcceptTeamWithoutMembers,
        Quirk::AcceptTeamWithoutRoutingPolicy,
        Quirk::AcceptServiceWithoutOperator,
        Quirk::ForkWithoutParentLink,
        Quirk::MergeLeavesForkOpen,
        Quirk::AcceptAnyLocalPart,
        Quirk::CaseSensitiveAddressLookup,
        Quirk::AllowBridgeRegistration,
        Quirk::AcceptAnyCapabilityId,
        Quirk::AcceptParentIdArray,
        Quirk::OmitOriginEventSeq,
    ];

    /// The kebab-case name used on the command line and in reports.
    pub fn name(self) -> String {
        let s = format!("{self:?}");
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if c.is_ascii_uppercase() {
                if i > 0 {
                    out.push('-');
                }
                out.push(c.to_ascii_lowercase());
            } else {
                out.push(c);
            }
        }
        out
    }

    /// The quirk called `name`.
    pub fn parse(name: &str) -> Option<Quirk> {
        Quirk::ALL.into_iter().find(|q| q.name() == name)
    }
}

/// The set of quirks a node runs with (empty in every real deployment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quirks {
    #[cfg_attr(not(feature = "quirks"), allow(dead_code))]
    set: BTreeSet<Quirk>,
}

impl Quirks {
    /// No quirks: a correct node.
    pub fn none() -> Quirks {
        Quirks::default()
    }

    /// The same set plus `q` (only with the `quirks` feature).
    #[cfg(feature = "quirks")]
    pub fn with(mut self, q: Quirk) -> Quirks {
        self.set.insert(q);
        self
    }

    /// Is `q` on? Always false without the `quirks` feature.
    pub fn has(&self, q: Quirk) -> bool {
        #[cfg(feature = "quirks")]
        {
            self.set.contains(&q)
        }
        #[cfg(not(feature = "quirks"))]
        {
            let _ = q;
            false
        }
    }
}

impl Quirks {
    /// The acceptance deviations these quirks stand for ([`Deviations::NONE`] without
    /// quirks): one field per envelope-path quirk.
    pub fn deviations(&self) -> Deviations {
        use Quirk as Q;
        let q = |x| self.has(x);
        Deviations {
            ignore_size_limit: q(Q::IgnoreSizeLimit),
            allow_sender_spoofing: q(Q::AllowSenderSpoofing),
            ignore_sender_type: q(Q::SkipEnvelopeValidation),
            skip_signature: q(Q::AcceptBadSignature),
            skip_delegation_chain: q(Q::SkipDelegationCheck),
            allow_duplicate_ids: q(Q::AllowDuplicateIds),
            bootstrap_thread_from_op: q(Q::BootstrapThreadFromOp),
            skip_capability_check: q(Q::SkipCapabilityCheck),
            accept_into_locked_thread: q(Q::AcceptIntoLockedThread),
            ignore_thread_limits: q(Q::IgnoreThreadLimits),
            allow_dag_cycles: q(Q::AllowDagCycles),
            reject_missing_parent: q(Q::RejectMissingParent),
            ignore_op_preconditions: q(Q::IgnoreOpPreconditions),
            allow_invalid_state_transition: q(Q::AllowInvalidStateTransition),
            allow_any_task_actor: q(Q::AllowAnyTaskActor),
            ignore_thread_delegate: q(Q::IgnoreThreadDelegate),
            fork_without_entry: q(Q::ForkWithoutEntry),
            fork_without_parent_link: q(Q::ForkWithoutParentLink),
            ignore_thread_merge: q(Q::IgnoreThreadMerge),
            merge_moves_envelopes: q(Q::MergeMovesEnvelopes),
            merge_leaves_fork_open: q(Q::MergeLeavesForkOpen),
            ignore_thread_link: q(Q::IgnoreThreadLink),
            skip_observer_delivery: q(Q::SkipObserverDelivery),
            omit_capability_spent_event: q(Q::OmitCapabilitySpentEvent),
            omit_event_seq: q(Q::OmitEventSeq),
            omit_origin_event_seq: q(Q::OmitOriginEventSeq),
            restamp_created_at: q(Q::RestampCreatedAt),
            skip_envelope_search_index: q(Q::SkipEnvelopeSearchIndex),
            skip_thread_search_index: q(Q::SkipThreadSearchIndex),
            inert_out_of_family_ops: q(Q::SkipEnvelopeValidation),
        }
    }

    /// Whether any quirk replaces an admission step (so the node needs [`QuirkRules`]).
    pub fn alter_admission(&self) -> bool {
        use Quirk as Q;
        [
            Q::SkipEnvelopeValidation,
            Q::SkipDelegationCheck,
            Q::AllowDagCycles,
            Q::AcceptBadSignature,
            Q::AcceptAnyAttachmentId,
            Q::AcceptParentIdArray,
            Q::RejectUnknownTypes,
            Q::RejectLegacySignatures,
            Q::UnprefixedSignaturesOnly,
            Q::NonCanonicalSigningForm,
            Q::SignOverMeta,
            Q::DropNullMembers,
        ]
        .into_iter()
        .any(|x| self.has(x))
    }
}

/// Admission with the quirks' broken steps (the self-test shim of
/// [`loom_protocol::accept::Rules`]).
#[derive(Debug)]
pub struct QuirkRules<'a> {
    quirks: &'a Quirks,
    deviations: Deviations,
    env: &'a Env,
    caller: &'a Address,
    /// `skip-envelope-validation`: the envelope with its head members filled in, stored
    /// instead of the one received.
    filled: RefCell<Option<Value>>,
}

impl<'a> QuirkRules<'a> {
    /// The shim for `caller`'s submission; `env` draws the ids a lenient node invents.
    pub fn new(quirks: &'a Quirks, env: &'a Env, caller: &'a Address) -> Self {
        QuirkRules {
            quirks,
            deviations: quirks.deviations(),
            env,
            caller,
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
        priority: s("/priority")
            .and_then(Priority::parse)
            .unwrap_or(Priority::Normal),
        human_text: s("/content/human/text").map(str::to_owned),
    })
}

impl Rules for QuirkRules<'_> {
    fn deviations(&self) -> &Deviations {
        &self.deviations
    }

    fn structure(&self, env: &Value) -> Result<Facts, ProtocolError> {
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
            Some(t) => Ok(Facts::of(&t)),
            None => lenient_facts(env, self.q(Quirk::AcceptParentIdArray)),
        }
    }

    fn verify_signature(
        &self,
        env: &Value,
        key: &ed25519_dalek::VerifyingKey,
    ) -> Result<(), ProtocolError> {
        let mutant = self.q(Quirk::UnprefixedSignaturesOnly)
            || self.q(Quirk::NonCanonicalSigningForm)
            || self.q(Quirk::SignOverMeta);
        if !mutant {
            let mode = verify_envelope_signature(env, key)?;
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

    fn stored_form(&self, env: &mut Value) {
        if let Some(filled) = self.filled.borrow_mut().take() {
            *env = filled;
        }
        if self.q(Quirk::DropNullMembers) {
            drop_nulls(env);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for q in Quirk::ALL {
            assert_eq!(Quirk::parse(&q.name()), Some(q));
        }
        assert_eq!(Quirk::AcceptBadSignature.name(), "accept-bad-signature");
    }
}
