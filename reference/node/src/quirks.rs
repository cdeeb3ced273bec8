//! Deliberate defects (DESIGN.md §4): each quirk turns off exactly one MUST-level check, so
//! the conformance harness can prove that the case for that rule fails against a node that
//! breaks it. Quirks exist only with the `quirks` feature; without it [`Quirks::has`] is
//! always false and the checks cannot be turned off.

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
