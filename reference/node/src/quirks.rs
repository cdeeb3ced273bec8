//! Deliberate defects (DESIGN.md §4): each quirk turns off exactly one MUST-level check, so
//! the conformance harness can prove that the case for that rule fails against a node that
//! breaks it. Quirks exist only with the `quirks` feature; without it [`Quirks::has`] is
//! always false and the checks cannot be turned off.
//!
//! This module is the self-test shim (rustls BoGo style): the node's main path never asks
//! "is quirk X on?". The set becomes data once, when the service starts, and each layer
//! receives the part it needs:
//!
//! - [`Quirks::deviations`]: loom-protocol's acceptance [`Deviations`] (the envelope path),
//!   with [`QuirkRules`] substituting the deliberately broken admission steps (lenient
//!   structure, wrong signature verifiers, altered stored forms) through
//!   [`loom_protocol::accept::Rules`];
//! - [`Quirks::settings`]: a [`Settings`] with loom-protocol's session and registration
//!   deviations, the node's [`IdentityDeviations`], [`ReadDeviations`], [`ApiDeviations`]
//!   and [`HttpDeviations`] (each field names the rule it breaks), and the [`Edit`]s that
//!   trim responses the node built correctly ([`Settings::shape`]);
//! - [`Quirks::tls_config`]: the TLS mutants.
//!
//! Each quirk's reason is its doc comment below; [`Quirks::settings`] is the one table
//! that maps it to the setting it flips. Only `service/envelopes.rs` still asks
//! [`Quirks::has`] directly (owned by the write-path work; see the node README).

use crate::env::Env;
use axum::body::Bytes;
use loom_protocol::accept::{Deviations, Facts, Rules, Structured};
use loom_protocol::delegation::ChainPolicy;
use loom_protocol::envelope::validate::CORE_TYPES;
use loom_protocol::envelope::{
    Priority, SignatureMode, validate_envelope, validate_envelope_all,
    verify_envelope_signature_over,
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
    /// Accept federation deliveries without LOOM-HTTP-SIG-1: missing or wrong headers, keys and signatures are not checked (v1.1 §15.3, §15.4 "verify request signature").
    AcceptUnsignedDelivery,
    /// Neither check nor record delivery nonces, so a replayed request is accepted (v1.1 §15.3 "nonce replay prevented (cache 15 min)", §23.2).
    SkipNonceCache,
    /// Skip the ±5 minute freshness check of the delivery request and wrapper timestamps (v1.1 §15.5).
    AcceptStaleTimestamp,
    /// Accept a wrapper whose `sender_node` differs from `X-LOOM-Node` (v1.1 §15.4, DESIGN.md §9).
    IgnoreSenderNodeMismatch,
    /// Verify delivery signatures with a node key the peer's document lists as retired or revoked (v1.1 §15.3, v1.0 §7.4).
    AcceptInactiveNodeKey,
    /// Accept delivered envelopes whose sender is not an identity of the delivering node (loom-core-1 sender authority, v1.1 §15.4).
    AcceptForeignSender,
    /// Accept deliveries from blocked or unlisted peers and deliver to blocked ones (v1.1 §15.2, §23.1).
    IgnoreFederationPolicy,
    /// Accept delivery wrappers with more than 100 envelopes (v1.1 §15.4, DESIGN.md §9).
    IgnoreWrapperLimit,
    /// Store delivered envelopes without verifying their signatures (v1.1 §15.4 "verify envelope signatures").
    SkipEnvelopeSignatureOnDelivery,
    /// Store delivered agent envelopes without checking their delegation chain (v1.1 §15.4 "enforce delegation chains").
    SkipDelegationOnDelivery,
    /// Store delivered envelopes and operations without the capability checks (v1.1 §15.4 "enforce … capability rules", §12.4).
    SkipCapabilityOnDelivery,
    /// Refuse an identical re-delivery of a stored envelope as `ENVELOPE_DUPLICATE` instead of accepting it again without storing it twice (v1.1 §23.2, §15.6 store-and-forward).
    RejectIdenticalRedelivery,
    /// Answer deliveries with a receipt that has no `signature` (v1.1 §15.4 "generate receipts", DESIGN.md §9).
    UnsignedReceipt,
    /// Send deliveries without the LOOM-HTTP-SIG-1 headers (v1.1 §15.3).
    UnsignedOutbound,
    /// Give up after the first failed delivery attempt instead of queueing with backoff (v1.1 §15.6).
    NoRetry,
    /// Retry at a constant delay instead of an exponentially growing one (v1.1 §15.6 "exponential backoff").
    LinearBackoff,
    /// Forget queued outbound deliveries when the node restarts (v1.1 §15.6 store-and-forward).
    DropOutboxOnRestart,
    /// Drop an expired outbound delivery without the `receipt.failed` envelope to its sender (v1.1 §15.6).
    NoFailureReceipt,
    /// Give expired deliveries a failure reason other than `NODE_UNREACHABLE`/`DELIVERY_TIMEOUT` (v1.1 §15.6).
    WrongFailureReason,
    /// Do not re-fetch a peer's node document, nor a remote sender's identity document, when a delivery names a key id the cached one does not list (v1.0 §7.4).
    NoRefetchOnUnknownKey,
    /// Drop `meta.origin_event_seq` of delivered envelopes instead of preserving it (v1.1 §11.6 SHOULD).
    DropOriginEventSeq,
    /// Answer a valid delivery 202 with a receipt naming its envelopes as accepted, but store none of them (v1.1 §15.4 "Store envelopes").
    DropDeliveredEnvelopes,
    /// Answer a valid delivery 2xx with an empty body: no receipt (v1.1 §15.4 "generate receipts").
    NoReceipt,
    /// Refuse a delivered envelope whose `created_at` is older than the ±5 minute freshness window, which applies to the request and wrapper timestamps only (v1.1 §15.5 store-and-forward).
    RejectOldEnvelopes,
    /// Store an identical re-delivery of a stored envelope a second time, as a second row of the thread under a key of its own, so the recipient reads it twice (v1.1 §23.2).
    StoreRedeliveredTwice,
    /// Lose the newest envelope a local user submitted when the node restarts, as a node that
    /// answers 201 before its commit is durable loses it in a crash (v1.1 §16.1, §4 "Store
    /// and index envelopes durably").
    ForgetLastEnvelopeOnRestart,
    /// Delete the oldest audit row when the node restarts (a log rotation that cuts the head
    /// of the hash chain), so the chain no longer verifies (v1.1 §25.1 tamper-evident log).
    PruneAuditOnRestart,
    /// Store a delivered reply without its parent link (the stored row's parent is empty), so
    /// the receiving node's thread DAG differs from the sender's (v1.1 §10.2, §15.4 "Store
    /// envelopes").
    OrphanDeliveredReplies,
    /// Store a delivered `thread.lock@v1` without applying it, so the thread stays open on
    /// this node while the nodes that applied the lock hold it locked (v1.1 §10.4 lock,
    /// §11.5 operations are replicated to the participants' nodes, §15.4 "Store envelopes").
    IgnoreDeliveredLock,
    /// Refuse a delivery whose valid five-line LOOM-HTTP-SIG-1 signature comes with an
    /// `X-LOOM-Trust-Epoch` header, insisting on the six-line form (v1.1 §15.3 defines only
    /// the five lines; the existing v1.1 node sends them beside the header, DESIGN.md §9).
    RequireSignedTrustEpoch,
    /// Sign served identity documents' `node_signature` over whole key entries (our older
    /// form) instead of the registration form other nodes verify (DESIGN.md §9, v1.1 §15.4).
    FullKeyNodeSignature,
    /// Answer a delivery with the receipt's members at the top level instead of under
    /// `receipt`, where the existing v1.1 node reads it (DESIGN.md §9, v1.1 §15.4).
    TopLevelReceipt,
    /// Take a peer receipt's per-envelope `ENVELOPE_DUPLICATE` as a refusal: give the envelope
    /// up and send its sender `receipt.failed@v1` although the peer holds it (v1.1 §15.4,
    /// §15.6, §23.2; DESIGN.md §9).
    DuplicateRejectionIsFailure,
    /// Verify delegation links only with `signature_context` outside the signed bytes,
    /// refusing the other reading of the silent §13.3.1 (DESIGN.md §9).
    OneDelegationReading,
    /// Never re-fetch a peer's node document when a delivery's signature fails under a key id
    /// it publishes, so a peer that rotated its key under the same id is refused for good
    /// (v1.1 §15.3, v1.0 §7.4; DESIGN.md §9).
    NoRefetchOnSignatureFailure,
}

impl Quirk {
    /// Every quirk, in declaration order; the federation quirks come last, from
    /// `AcceptUnsignedDelivery` on (the node tests take them as that tail).
    pub const ALL: [Quirk; 121] = [
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
        Quirk::AcceptUnsignedDelivery,
        Quirk::SkipNonceCache,
        Quirk::AcceptStaleTimestamp,
        Quirk::IgnoreSenderNodeMismatch,
        Quirk::AcceptInactiveNodeKey,
        Quirk::AcceptForeignSender,
        Quirk::IgnoreFederationPolicy,
        Quirk::IgnoreWrapperLimit,
        Quirk::SkipEnvelopeSignatureOnDelivery,
        Quirk::SkipDelegationOnDelivery,
        Quirk::SkipCapabilityOnDelivery,
        Quirk::RejectIdenticalRedelivery,
        Quirk::UnsignedReceipt,
        Quirk::UnsignedOutbound,
        Quirk::NoRetry,
        Quirk::LinearBackoff,
        Quirk::DropOutboxOnRestart,
        Quirk::NoFailureReceipt,
        Quirk::WrongFailureReason,
        Quirk::NoRefetchOnUnknownKey,
        Quirk::DropOriginEventSeq,
        Quirk::DropDeliveredEnvelopes,
        Quirk::NoReceipt,
        Quirk::RejectOldEnvelopes,
        Quirk::StoreRedeliveredTwice,
        Quirk::ForgetLastEnvelopeOnRestart,
        Quirk::PruneAuditOnRestart,
        Quirk::OrphanDeliveredReplies,
        Quirk::IgnoreDeliveredLock,
        Quirk::RequireSignedTrustEpoch,
        Quirk::FullKeyNodeSignature,
        Quirk::TopLevelReceipt,
        Quirk::DuplicateRejectionIsFailure,
        Quirk::OneDelegationReading,
        Quirk::NoRefetchOnSignatureFailure,
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
    /// The set admission of federated envelopes runs with: the delivery quirks that break
    /// an envelope check stand for the local quirk breaking the same check.
    pub fn for_delivery(&self) -> Quirks {
        #[cfg(feature = "quirks")]
        {
            let mut q = self.clone();
            if self.has(Quirk::SkipDelegationOnDelivery) {
                q.set.insert(Quirk::SkipDelegationCheck);
            }
            if self.has(Quirk::SkipEnvelopeSignatureOnDelivery) {
                q.set.insert(Quirk::AcceptBadSignature);
            }
            q
        }
        #[cfg(not(feature = "quirks"))]
        {
            self.clone()
        }
    }

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
            Q::OneDelegationReading,
        ]
        .into_iter()
        .any(|x| self.has(x))
    }
}

/// Every deviation of the node outside the acceptance core, per layer (all off on a real
/// node: [`Settings::default`]).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// §14.2 challenges and tokens (loom-protocol).
    pub session: loom_protocol::session::Deviations,
    /// Registration (loom-protocol).
    pub registration: loom_protocol::registration::Deviations,
    /// Identity storage and key management.
    pub identity: IdentityDeviations,
    /// Reads under the audience rules.
    pub reads: ReadDeviations,
    /// Other API behaviour.
    pub api: ApiDeviations,
    /// The HTTP shell.
    pub http: HttpDeviations,
    /// Federation (v1.1 §15).
    pub federation: FederationDeviations,
    /// Responses to trim after they were built ([`Settings::shape`]).
    pub edits: Vec<Edit>,
}

/// Deviations of federation (v1.1 §15, §23, §11.6): loom-protocol's receiving checks and
/// the node's delivery, outbox and receipt behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FederationDeviations {
    /// The receiving checks of `POST /v1/federation/deliver` (loom-protocol).
    pub inbound: loom_protocol::federation::InboundDeviations,
    /// Skip envelope signatures of delivered envelopes (§15.4).
    pub skip_envelope_signature: bool,
    /// Skip delegation chains of delivered envelopes (§15.4).
    pub skip_delegation: bool,
    /// Skip capability checks of delivered envelopes (§15.4, §12.4).
    pub skip_capability: bool,
    /// Refuse identical re-deliveries (§23.2).
    pub reject_identical_redelivery: bool,
    /// Receipts without `signature` (§15.4).
    pub unsigned_receipt: bool,
    /// Outbound deliveries without LOOM-HTTP-SIG-1 (§15.3).
    pub unsigned_outbound: bool,
    /// No retry after a failed attempt (§15.6).
    pub no_retry: bool,
    /// Constant retry delay (§15.6).
    pub linear_backoff: bool,
    /// Queued deliveries dropped at start-up (§15.6).
    pub drop_outbox_on_restart: bool,
    /// No `receipt.failed` on expiry (§15.6).
    pub no_failure_receipt: bool,
    /// A failure reason outside `NODE_UNREACHABLE`/`DELIVERY_TIMEOUT` (§15.6).
    pub wrong_failure_reason: bool,
    /// No node-document re-fetch on an unknown key id (v1.0 §7.4).
    pub no_refetch_on_unknown_key: bool,
    /// Received `meta.origin_event_seq` dropped (§11.6).
    pub drop_origin_event_seq: bool,
    /// Delivered envelopes receipted as accepted but not stored (§15.4).
    pub drop_delivered_envelopes: bool,
    /// 2xx answers to deliveries without a receipt (§15.4).
    pub no_receipt: bool,
    /// Delivered envelopes refused when their `created_at` is older than the freshness
    /// window (§15.5).
    pub reject_old_envelopes: bool,
    /// Identical re-deliveries stored a second time (§23.2).
    pub store_redelivered_twice: bool,
    /// The newest locally submitted envelope lost at start-up (§16.1 durability).
    pub forget_last_envelope_on_restart: bool,
    /// The oldest audit row deleted at start-up (§25.1).
    pub prune_audit_on_restart: bool,
    /// Delivered replies stored without their parent (§10.2, §15.4).
    pub orphan_delivered_replies: bool,
    /// Delivered `thread.lock@v1` operations stored but not applied (§10.4, §11.5).
    pub ignore_delivered_lock: bool,
    /// Identity documents signed over whole key entries (DESIGN.md §9 registration form).
    pub full_key_node_signature: bool,
    /// Delivery answers with the receipt at the top level, not under `receipt` (DESIGN.md §9).
    pub top_level_receipt: bool,
    /// A peer's per-envelope `ENVELOPE_DUPLICATE` taken as a refusal (§15.4, §23.2).
    pub duplicate_rejection_is_failure: bool,
    /// No node-document re-fetch when a signature fails under a known key id (§15.3).
    pub no_refetch_on_signature_failure: bool,
}

/// Deviations of identity storage and key management (v1.1 §6, §16.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IdentityDeviations {
    /// A second registration of a registered address replaces it (DESIGN.md §9: 409).
    pub allow_duplicate_registration: bool,
    /// Answer a key revocation without revoking the key (§16.3).
    pub ignore_key_revocation: bool,
    /// Allow revoking the last active signing key (§6.3).
    pub allow_revoking_last_key: bool,
}

/// Deviations of reads (v1.1 §8.3, §16.7, §16.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadDeviations {
    /// Serve threads and their envelopes to non-participants (§8.3).
    pub ignore_audience: bool,
    /// Ignore `since` on event catch-up (§16.8).
    pub ignore_events_since: bool,
    /// Return every identity's events on catch-up (§8.3).
    pub ignore_event_audience: bool,
    /// Serve blobs without the read check (§16.7).
    pub skip_blob_read_check: bool,
}

/// Deviations of other API behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ApiDeviations {
    /// Ignore `Idempotency-Key` (§14.4).
    pub ignore_idempotency_key: bool,
    /// Never answer 429 (§14.3).
    pub disable_rate_limit: bool,
    /// Revoke delegations without the `delegation.revoked` event (§13.4, §17.3).
    pub omit_delegation_revoked_event: bool,
    /// Store capability tokens whose id lacks the `cap_` prefix (§8.4).
    pub accept_any_capability_id: bool,
}

/// Deviations of the HTTP shell (v1.1 §7.2, §14.1, §16.7, §24).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HttpDeviations {
    /// Take request bodies of any content type as JSON (§14.1: 415).
    pub accept_any_content_type: bool,
    /// Read bodies of any size (§24.2: 413).
    pub ignore_body_limit: bool,
    /// How JSON bodies are read.
    pub json: JsonReading,
    /// Label JSON `application/json` without `charset=utf-8` (§14.1).
    pub no_json_charset: bool,
    /// Answer errors without the §24.1 body.
    pub bare_error_bodies: bool,
    /// Serve blob downloads without an access token (§16.7).
    pub anonymous_blob_download: bool,
    /// Resolve identities by the address exactly as written (§6.1: case-insensitive).
    pub case_sensitive_address_lookup: bool,
}

/// How the HTTP shell reads a JSON body: strictly (RFC 8259 + I-JSON,
/// `loom_protocol::jcs::parse_strict_bytes`), or with a quirk's leniency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JsonReading {
    /// Read lone surrogate escapes as U+FFFD instead of refusing them (§7.2).
    pub lone_surrogates_as_replacement: bool,
    /// Take duplicate member names, the last one winning (§7.2 I-JSON).
    pub duplicate_keys_last_wins: bool,
}

impl JsonReading {
    /// Parses `body`; returns the value and the bytes it was read from.
    pub fn read(&self, body: Bytes) -> Result<(Value, Bytes), String> {
        let body = if self.lone_surrogates_as_replacement {
            Bytes::from(lone_surrogates_as_replacement(&body))
        } else {
            body
        };
        let value = if self.duplicate_keys_last_wins {
            serde_json::from_slice(&body).map_err(|e| e.to_string())?
        } else {
            loom_protocol::jcs::parse_strict_bytes(&body).map_err(|e| e.to_string())?
        };
        Ok((value, body))
    }
}

/// JSON text with every lone `\uD800`–`\uDFFF` escape replaced by `\ufffd` (a correct node
/// refuses such text, v1.1 §7.2).
fn lone_surrogates_as_replacement(body: &[u8]) -> Vec<u8> {
    let hex = |b: &[u8]| {
        std::str::from_utf8(b)
            .ok()
            .and_then(|s| u16::from_str_radix(s, 16).ok())
    };
    let escape_at = |i: usize| {
        (body.get(i) == Some(&b'\\') && body.get(i + 1) == Some(&b'u'))
            .then(|| body.get(i + 2..i + 6).and_then(hex))
            .flatten()
    };
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i] == b'\\' {
            match escape_at(i) {
                Some(0xD800..=0xDBFF) if matches!(escape_at(i + 6), Some(0xDC00..=0xDFFF)) => {
                    out.extend_from_slice(&body[i..i + 12]);
                    i += 12;
                }
                Some(0xD800..=0xDFFF) => {
                    out.extend_from_slice(b"\\ufffd");
                    i += 6;
                }
                _ => {
                    out.extend_from_slice(&body[i..(i + 2).min(body.len())]);
                    i += 2;
                }
            }
        } else {
            out.push(body[i]);
            i += 1;
        }
    }
    out
}

/// A response a quirk trims after the node built it correctly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// `POST /v1/auth/challenge`.
    AuthChallenge,
    /// A token pair (`POST /v1/auth/token`, `/refresh`).
    TokenPair,
    /// `GET /.well-known/loom.json`.
    NodeDocument,
    /// `GET /v1/threads/{id}`.
    Thread,
    /// A resolved identity document.
    IdentityDocument,
    /// A page of `GET /v1/events`.
    EventsPage,
}

/// One trim: the quirk it stands for, the response and the change.
#[derive(Clone, Copy)]
pub struct Edit {
    /// The quirk (its doc comment is the reason).
    pub quirk: Quirk,
    /// The response it trims.
    pub output: Output,
    apply: fn(&mut Value, &Env),
}

impl std::fmt::Debug for Edit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Edit")
            .field("quirk", &self.quirk)
            .field("output", &self.output)
            .finish_non_exhaustive()
    }
}

fn remove_members(v: &mut Value, members: &[&str]) {
    if let Some(o) = v.as_object_mut() {
        for m in members {
            o.remove(*m);
        }
    }
}

/// The trims, one per response-shape quirk.
const EDITS: [Edit; 6] = [
    Edit {
        quirk: Quirk::ChallengeWithoutExpiry,
        output: Output::AuthChallenge,
        apply: |v, _| remove_members(v, &["expires_at"]),
    },
    Edit {
        quirk: Quirk::OmitRefreshToken,
        output: Output::TokenPair,
        apply: |v, _| remove_members(v, &["refresh_token", "refresh_expires_in"]),
    },
    Edit {
        quirk: Quirk::IncompleteNodeDocument,
        output: Output::NodeDocument,
        apply: |v, _| {
            if let Some(o) = v.as_object_mut() {
                o.retain(|k, _| k == "loom" || k == "domain");
            }
        },
    },
    Edit {
        quirk: Quirk::IncompleteThreadObject,
        output: Output::Thread,
        apply: |v, _| remove_members(v, &["cap_epoch", "subject", "labels"]),
    },
    Edit {
        quirk: Quirk::IdentityDocumentWithoutKeys,
        output: Output::IdentityDocument,
        apply: |v, _| {
            if let Some(keys) = v.pointer_mut("/public_keys/signing") {
                *keys = Value::Array(Vec::new());
            }
            if let Some(keys) = v.get_mut("signing_keys") {
                *keys = Value::Array(Vec::new());
            }
        },
    },
    Edit {
        quirk: Quirk::UnstableEventIds,
        output: Output::EventsPage,
        apply: |v, env| {
            for e in v
                .get_mut("events")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                e["id"] = env.ids().event().to_string().into();
            }
        },
    },
];

impl Settings {
    /// Applies the trims for `output` (none on a real node).
    pub fn shape(&self, output: Output, v: &mut Value, env: &Env) {
        for e in self.edits.iter().filter(|e| e.output == output) {
            (e.apply)(v, env);
        }
    }
}

impl Quirks {
    /// The deviations of every layer outside the acceptance core: the one table from quirk
    /// to setting.
    pub fn settings(&self) -> Settings {
        use Quirk as Q;
        let q = |x| self.has(x);
        Settings {
            session: loom_protocol::session::Deviations {
                allow_challenge_reuse: q(Q::AllowChallengeReuse),
                accept_expired_token: q(Q::AcceptExpiredToken),
                token_kind_unchecked: q(Q::TokenKindUnchecked),
                accept_bad_login_signature: q(Q::AcceptBadLoginSignature),
            },
            registration: loom_protocol::registration::Deviations {
                accept_any_local_part: q(Q::AcceptAnyLocalPart),
                accept_non_canonical_address: q(Q::AcceptNonCanonicalAddress),
                allow_bridge_registration: q(Q::AllowBridgeRegistration),
                accept_any_signing_key_id: q(Q::AcceptAnySigningKeyId),
                accept_any_encryption_key_id: q(Q::AcceptAnyEncryptionKeyId),
                accept_bad_registration_proof: q(Q::AcceptBadRegistrationProof),
                accept_agent_without_delegator: q(Q::AcceptAgentWithoutDelegator),
                accept_unbounded_agent_scope: q(Q::AcceptUnboundedAgentScope),
                accept_incomplete_agent_document: q(Q::AcceptIncompleteAgentDocument),
                accept_agent_members_on_other_types: q(Q::AcceptAgentMembersOnOtherTypes),
                accept_team_without_members: q(Q::AcceptTeamWithoutMembers),
                accept_team_without_routing_policy: q(Q::AcceptTeamWithoutRoutingPolicy),
                accept_service_without_operator: q(Q::AcceptServiceWithoutOperator),
            },
            identity: IdentityDeviations {
                allow_duplicate_registration: q(Q::AllowDuplicateRegistration),
                ignore_key_revocation: q(Q::IgnoreKeyRevocation),
                allow_revoking_last_key: q(Q::AllowRevokingLastKey),
            },
            reads: ReadDeviations {
                ignore_audience: q(Q::IgnoreAudience),
                ignore_events_since: q(Q::IgnoreEventsSince),
                ignore_event_audience: q(Q::IgnoreEventAudience),
                skip_blob_read_check: q(Q::SkipBlobReadCheck),
            },
            api: ApiDeviations {
                ignore_idempotency_key: q(Q::IgnoreIdempotencyKey),
                disable_rate_limit: q(Q::DisableRateLimit),
                omit_delegation_revoked_event: q(Q::OmitDelegationRevokedEvent),
                accept_any_capability_id: q(Q::AcceptAnyCapabilityId),
            },
            http: HttpDeviations {
                accept_any_content_type: q(Q::AcceptAnyContentType),
                ignore_body_limit: q(Q::IgnoreBodyLimit),
                json: JsonReading {
                    lone_surrogates_as_replacement: q(Q::AcceptLoneSurrogates),
                    duplicate_keys_last_wins: q(Q::AcceptDuplicateJsonKeys),
                },
                no_json_charset: q(Q::NoJsonCharset),
                bare_error_bodies: q(Q::BareErrorBodies),
                anonymous_blob_download: q(Q::AnonymousBlobDownload),
                case_sensitive_address_lookup: q(Q::CaseSensitiveAddressLookup),
            },
            federation: FederationDeviations {
                inbound: loom_protocol::federation::InboundDeviations {
                    accept_unsigned: q(Q::AcceptUnsignedDelivery),
                    skip_nonce_cache: q(Q::SkipNonceCache),
                    accept_stale_timestamp: q(Q::AcceptStaleTimestamp),
                    ignore_sender_node_mismatch: q(Q::IgnoreSenderNodeMismatch),
                    accept_inactive_node_key: q(Q::AcceptInactiveNodeKey),
                    accept_foreign_sender: q(Q::AcceptForeignSender),
                    ignore_policy: q(Q::IgnoreFederationPolicy),
                    ignore_wrapper_limit: q(Q::IgnoreWrapperLimit),
                    require_signed_trust_epoch: q(Q::RequireSignedTrustEpoch),
                },
                skip_envelope_signature: q(Q::SkipEnvelopeSignatureOnDelivery),
                skip_delegation: q(Q::SkipDelegationOnDelivery),
                skip_capability: q(Q::SkipCapabilityOnDelivery),
                reject_identical_redelivery: q(Q::RejectIdenticalRedelivery),
                unsigned_receipt: q(Q::UnsignedReceipt),
                unsigned_outbound: q(Q::UnsignedOutbound),
                no_retry: q(Q::NoRetry),
                linear_backoff: q(Q::LinearBackoff),
                drop_outbox_on_restart: q(Q::DropOutboxOnRestart),
                no_failure_receipt: q(Q::NoFailureReceipt),
                wrong_failure_reason: q(Q::WrongFailureReason),
                no_refetch_on_unknown_key: q(Q::NoRefetchOnUnknownKey),
                drop_origin_event_seq: q(Q::DropOriginEventSeq),
                drop_delivered_envelopes: q(Q::DropDeliveredEnvelopes),
                no_receipt: q(Q::NoReceipt),
                reject_old_envelopes: q(Q::RejectOldEnvelopes),
                store_redelivered_twice: q(Q::StoreRedeliveredTwice),
                forget_last_envelope_on_restart: q(Q::ForgetLastEnvelopeOnRestart),
                prune_audit_on_restart: q(Q::PruneAuditOnRestart),
                orphan_delivered_replies: q(Q::OrphanDeliveredReplies),
                ignore_delivered_lock: q(Q::IgnoreDeliveredLock),
                full_key_node_signature: q(Q::FullKeyNodeSignature),
                top_level_receipt: q(Q::TopLevelReceipt),
                duplicate_rejection_is_failure: q(Q::DuplicateRejectionIsFailure),
                no_refetch_on_signature_failure: q(Q::NoRefetchOnSignatureFailure),
            },
            edits: EDITS.into_iter().filter(|e| q(e.quirk)).collect(),
        }
    }

    /// The TLS mutants (v1.1 §14.1): [`Quirk::AllowTls12`] also accepts TLS 1.2,
    /// [`Quirk::NoHttp2`] offers only `http/1.1` in ALPN. `config` unchanged without them.
    pub fn tls_config(
        &self,
        mut config: rustls::ServerConfig,
    ) -> Result<rustls::ServerConfig, rustls::Error> {
        if self.has(Quirk::AllowTls12) {
            let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
            let resolver = config.cert_resolver.clone();
            let alpn = std::mem::take(&mut config.alpn_protocols);
            config = rustls::ServerConfig::builder_with_provider(provider)
                .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
                .with_no_client_auth()
                .with_cert_resolver(resolver);
            config.alpn_protocols = alpn;
        }
        if self.has(Quirk::NoHttp2) {
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
        }
        Ok(config)
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

    fn chain_policy(&self) -> ChainPolicy {
        ChainPolicy {
            accept_context_in_payload: !self.q(Quirk::OneDelegationReading),
            ..ChainPolicy::default()
        }
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

    #[test]
    fn names_round_trip() {
        for q in Quirk::ALL {
            assert_eq!(Quirk::parse(&q.name()), Some(q));
        }
        assert_eq!(Quirk::AcceptBadSignature.name(), "accept-bad-signature");
    }

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
