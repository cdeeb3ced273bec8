//! Deliberate defects (DESIGN.md §4): each quirk breaks exactly one MUST-level rule, so the
//! conformance harness can prove that the case for that rule fails against a node that
//! breaks it. This module tree is the self-test shim (rustls' BoGo style) and exists only
//! with the `quirks` feature; a node built without it has no defect to switch on.
//!
//! Adding a quirk is one variant in [`quirks!`] below — its doc comment is the reason,
//! with its section — and one override where the rule lives:
//! - an acceptance step: a [`loom_protocol::accept::Rules`] method of
//!   [`admission::QuirkRules`];
//! - what a client or peer sees on the wire: [`front`], the layer in front of the router;
//! - any other service behaviour: its row in [`Quirks::deviations`];
//! - TLS and start-up: [`Quirks::tls`] and [`Quirks::on_start`].
//!
//! [`Quirk::ALL`] is derived from the list.

mod admission;
mod bridge;
mod federation;
mod front;
mod registration;
mod session;

pub use admission::QuirkRules;

use crate::config::NodeConfig;
use crate::env::Env;
use crate::rules::{
    ApiDeviations, Deviations, FederationDeviations, IdentityDeviations, NodeRules, ReadDeviations,
    RealtimeDeviations,
};
use crate::service::Service;
use crate::store::Store;
use loom_protocol::Address;
use loom_protocol::accept::Rules;
use loom_protocol::federation::InboundRules;
use loom_protocol::registration::RegistrationRules;
use loom_protocol::session::SessionRules;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Declares [`Quirk`] and derives [`Quirk::ALL`] and [`Quirk::reason`] from one list.
macro_rules! quirks {
    ($( $(#[doc = $doc:expr])+ $name:ident, )+) => {
        /// One switch per MUST-level rule.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Quirk {
            $( $(#[doc = $doc])+ $name, )+
        }

        impl Quirk {
            /// Every quirk, in declaration order; the federation quirks come last, from
            /// `AcceptUnsignedDelivery` on (the node tests take them as that tail).
            pub const ALL: [Quirk; <[()]>::len(&[$( quirks!(@unit $name) ),+])] =
                [$( Quirk::$name ),+];

            /// The rule it breaks, with its section (the variant's doc comment).
            pub fn reason(self) -> &'static str {
                match self {
                    $( Quirk::$name => concat!($( $doc ),+).trim_ascii(), )+
                }
            }
        }
    };
    (@unit $name:ident) => { () };
}

quirks! {
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
    /// Accept the WebSocket access token only in `Authorization`, refusing `?token=` (v1.1 §17 "wss://{node_domain}/ws?token={access_token}").
    WsHeaderTokenOnly,
    /// Open WebSocket connections without a valid access token, as an anonymous reader (v1.1 §17, §8.3).
    WsAcceptWithoutToken,
    /// Take `subscribe` without ever pushing an event (v1.1 §17.1).
    WsIgnoreSubscribe,
    /// Push events without `event_id` and `cursor` (v1.1 §17.2 "Each event MUST contain `event_id` and `cursor`").
    WsOmitEventIds,
    /// Drop the first event after `since` when a subscription resumes (v1.1 §17.1 resume, §17.2 at-least-once).
    WsDropEventOnResume,
    /// Close the connection on `ack` (v1.1 §17.2 "Clients SHOULD ack progress").
    WsCloseOnAck,
    /// Never answer `ping` (v1.1 §17.4 "server responds `pong`").
    WsNoPong,
    /// Apply thread operations without the `thread.updated` event (v1.1 §17.3).
    OmitThreadUpdatedEvent,
    /// Add and remove participants without `participant.joined` / `participant.left` (v1.1 §17.3).
    OmitMembershipEvents,
    /// Fork and merge without `thread.fork` / `thread.merged` (v1.1 §17.3).
    OmitForkEvents,
    /// Accept receipt envelopes without `receipt.delivered` / `read` / `failed` events (v1.1 §17.3).
    OmitReceiptEvents,
    /// Revoke capability tokens without the `capability.revoked` event (v1.1 §17.3).
    OmitCapabilityRevokedEvent,
    /// Take `typing.start` / `typing.stop` without pushing them (v1.1 §17.3).
    DropTypingEvents,
    /// Take `presence.update` without pushing it (v1.1 §17.5, §28.1 Level 4 presence).
    DropPresence,
    /// Push presence to every connected identity, not only co-participants (v1.1 §17.5 SHOULD restrict).
    PresenceToEveryone,
    /// Refuse every `workflow.execute@v1` definition (v1.1 §19).
    RefuseWorkflows,
    /// Refuse every `workflow.step_complete@v1` / `failed@v1` / `complete@v1` (v1.1 §19.2).
    RefuseWorkflowUpdates,
    /// Accept any workflow update without checking it against the run (v1.1 §19.2 state tracking).
    AnyWorkflowTransition,
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
    /// Record `dkim=pass` for every DKIM signature without verifying it (v1.1 §21.2 "Verify
    /// SPF/DKIM/DMARC; store results in `meta.bridge.auth_results`").
    BridgeSkipDkim,
    /// Record `spf=pass` without evaluating SPF (v1.1 §21.2 "Verify SPF/DKIM/DMARC").
    BridgeSkipSpf,
    /// Record `dmarc=none` without evaluating the From domain's DMARC policy, and deliver
    /// (v1.1 §21.2 "Verify SPF/DKIM/DMARC").
    BridgeSkipDmarc,
    /// Store bridged envelopes with empty `meta.bridge.original_headers` (v1.1 §21.2
    /// "`meta.bridge.original_headers` preserved").
    BridgeDropOriginalHeaders,
    /// Leave `meta.bridge.original_message_id` off bridged envelopes (v1.0 §19.2
    /// "`meta.bridge.original_message_id`: email Message-ID for threading").
    BridgeNoOriginalMessageId,
    /// Deliver unauthenticated mail from unknown senders without the `sys.quarantine` label
    /// (v1.1 §21.5 SHOULD "label inbound bridged mail from unknown senders as
    /// `sys.quarantine`").
    BridgeNoQuarantine,
    /// Leave `meta.bridge.source` off bridged envelopes (v1.1 §21.2
    /// "`meta.bridge.source="email"`").
    BridgeNoSource,
    /// Mark bridged `structured_trust` authoritative and auto-actuating (v1.1 §21.2
    /// "`authoritative=false`", loom-core-1 "Bridged sender envelopes are non-actuating by
    /// default").
    BridgeTrustedByDefault,
    /// Mark extracted `content.structured` authoritative and not extracted (v1.1 §21.2
    /// "`extracted=true`", "`authoritative=false`").
    BridgeAuthoritativeExtraction,
    /// Leave `content.human` off bridged envelopes (v1.1 §21.2 "`content.human`: body
    /// converted to markdown where possible").
    BridgeDropHumanText,
    /// Start a new thread for every mail, ignoring In-Reply-To and References (v1.1 §21.2
    /// "map Message-ID / References / In-Reply-To to thread_id/parent_id").
    BridgeIgnoreReplyHeaders,
    /// Send mail without the `X-LOOM-*` headers (v1.1 §21.3 "Include headers").
    BridgeOmitLoomHeaders,
    /// Send mail with a text/plain body only (v1.1 §21.3 "Render `content.human` to HTML +
    /// plaintext").
    BridgeTextOnly,
    /// Send replies without In-Reply-To and References (v1.1 §21.3 "Preserve threading via
    /// In-Reply-To/References mapped from parent/thread ids").
    BridgeNoReplyHeaders,
    /// Send mail without the envelope's attachments (v1.1 §21.3 "Attach blobs as MIME
    /// attachments").
    BridgeDropAttachments,
    /// Send mail without a DKIM signature (v1.1 §21.3 "DKIM-sign and align SPF/DMARC for
    /// bridge domain").
    BridgeUnsignedMail,
    /// Mail a bcc-copy to every bridged recipient it lists, so the visible recipients learn
    /// of the Bcc (v1.1 §21.3 "If sending BCC, MUST send separate SMTP messages without
    /// revealing BCC", §20.6).
    BridgeCopyToAll,
    /// Tell the sender nothing when outbound mail fails for good (v1.1 §20.8 receipts
    /// "failed (DSN-like)", §24.2 `BRIDGE_DELIVERY_FAILED`, §24.3).
    BridgeNoFailureReceipt,
    /// Take cleartext payloads into an end-to-end encrypted thread (v1.1 §10.6, §24.2
    /// `ENCRYPTION_REQUIRED`).
    SkipEncryptionRequired,
    /// Refuse every encrypted payload of an E2EE thread, however well formed (v1.1 §7.4:
    /// payloads of an E2EE thread are encrypted; a node that cannot take them has no E2EE).
    RefuseEncryptedPayloads,
    /// Leave the key epoch where it is when an E2EE thread's membership changes (v1.1 §10.6
    /// "Any membership change MUST increment `thread.encryption.key_epoch`").
    NoEpochBump,
    /// Take a payload sealed at an epoch the thread has left behind (v1.1 §10.6: the epoch
    /// moved because the membership it was sealed for changed).
    AcceptStaleEpoch,
    /// Take a replay counter its sender and device already used in that epoch (v1.1 §23.1
    /// replay counters per sender identity, device and epoch).
    AcceptReplayedCounter,
    /// Index the ciphertext of encrypted payloads for search, so a search returns them by
    /// their encrypted content (v1.1 §16.6 "For E2EE threads, nodes MUST NOT claim decrypted
    /// content search").
    IndexEncryptedContent,
    /// Let a bridge identity join an E2EE thread (v1.1 §21.4 "Bridge identities … cannot
    /// participate in E2EE threads").
    BridgeJoinsE2ee,
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
    /// Answer 201 before the commit is durable: the writer runs with `synchronous = OFF`, so
    /// a commit returns once its pages are handed to the operating system and a power loss
    /// takes acknowledged envelopes with it (v1.1 §4 "Store and index envelopes durably",
    /// §16.1).
    AckBeforeSync,
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

/// The set of quirks a node runs with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quirks {
    set: BTreeSet<Quirk>,
}

impl Quirks {
    /// No quirks: a correct node.
    pub fn none() -> Quirks {
        Quirks::default()
    }

    /// The same set plus `q`.
    pub fn with(mut self, q: Quirk) -> Quirks {
        self.set.insert(q);
        self
    }

    /// Is `q` on?
    pub fn has(&self, q: Quirk) -> bool {
        self.set.contains(&q)
    }

    /// The set admission of federated envelopes runs with: the delivery quirks that break
    /// an envelope check stand for the local quirk breaking the same check.
    fn for_delivery(&self) -> Quirks {
        let mut q = self.clone();
        for (delivery, local) in [
            (Quirk::SkipDelegationOnDelivery, Quirk::SkipDelegationCheck),
            (
                Quirk::SkipEnvelopeSignatureOnDelivery,
                Quirk::AcceptBadSignature,
            ),
            (Quirk::SkipCapabilityOnDelivery, Quirk::SkipCapabilityCheck),
        ] {
            if self.has(delivery) {
                q.set.insert(local);
            }
        }
        q
    }
}

/// The shim: the quirks in force, with the delivery set derived once.
#[derive(Debug, Clone)]
pub struct QuirkNode {
    local: Quirks,
    delivered: Quirks,
    /// The configured body limit, before `ignore-body-limit` lifted it.
    advertised_body_limit: std::sync::OnceLock<usize>,
}

impl QuirkNode {
    /// The node behaviour for `quirks`.
    pub fn new(quirks: Quirks) -> QuirkNode {
        QuirkNode {
            delivered: quirks.for_delivery(),
            local: quirks,
            advertised_body_limit: std::sync::OnceLock::new(),
        }
    }

    /// The quirks in force.
    pub fn quirks(&self) -> &Quirks {
        &self.local
    }
}

impl NodeRules for QuirkNode {
    fn admission<'a>(
        &'a self,
        env: &'a Env,
        caller: &'a Address,
        delivered: bool,
    ) -> Box<dyn Rules + 'a> {
        let set = if delivered {
            &self.delivered
        } else {
            &self.local
        };
        Box::new(QuirkRules::new(set, env, caller, delivered))
    }

    fn session(&self) -> &dyn SessionRules {
        &self.local
    }

    fn registration(&self) -> &dyn RegistrationRules {
        &self.local
    }

    fn inbound(&self) -> &dyn InboundRules {
        &self.local
    }

    fn bridge(&self) -> &dyn loom_bridge::rules::BridgeRules {
        &self.local
    }

    fn deviations(&self) -> Deviations {
        self.local.deviations()
    }

    fn config(&self, mut config: NodeConfig) -> NodeConfig {
        let configured = front::config(&self.local, &mut config);
        let _ = self.advertised_body_limit.set(configured);
        config
    }

    fn front(&self, router: axum::Router, service: Arc<Service>) -> axum::Router {
        let advertised = self
            .advertised_body_limit
            .get()
            .copied()
            .unwrap_or(service.config.limits.max_body_bytes);
        front::layer(router, self.local.clone(), service, advertised)
    }

    fn tls(&self, config: rustls::ServerConfig) -> Result<rustls::ServerConfig, rustls::Error> {
        self.local.tls(config)
    }

    fn on_start(&self, store: &Store, config: &NodeConfig) -> Result<(), rusqlite::Error> {
        self.local.on_start(store, config)
    }

    fn names(&self) -> Vec<String> {
        Quirk::ALL
            .into_iter()
            .filter(|q| self.local.has(*q))
            .map(Quirk::name)
            .collect()
    }
}

impl Quirks {
    /// The deviations of the service outside acceptance: the one table from quirk to
    /// setting.
    fn deviations(&self) -> Deviations {
        use Quirk as Q;
        let q = |x| self.has(x);
        Deviations {
            identity: IdentityDeviations {
                allow_duplicate_registration: q(Q::AllowDuplicateRegistration),
                ignore_key_revocation: q(Q::IgnoreKeyRevocation),
                allow_revoking_last_key: q(Q::AllowRevokingLastKey),
            },
            reads: ReadDeviations {
                ignore_audience: q(Q::IgnoreAudience),
                omitted_audience_as_recipients: q(Q::OmittedAudienceAsRecipients),
                ignore_events_since: q(Q::IgnoreEventsSince),
                ignore_event_audience: q(Q::IgnoreEventAudience),
                skip_blob_read_check: q(Q::SkipBlobReadCheck),
            },
            api: ApiDeviations {
                ignore_idempotency_key: q(Q::IgnoreIdempotencyKey),
                disable_rate_limit: q(Q::DisableRateLimit),
                omit_delegation_revoked_event: q(Q::OmitDelegationRevokedEvent),
                accept_any_capability_id: q(Q::AcceptAnyCapabilityId),
                unprefixed_event_ids: q(Q::UnprefixedEventIds),
                ignore_legal_hold: q(Q::IgnoreLegalHold),
                omit_retracted_event: q(Q::OmitRetractedEvent),
            },
            realtime: RealtimeDeviations {
                header_token_only: q(Q::WsHeaderTokenOnly),
                accept_without_token: q(Q::WsAcceptWithoutToken),
                ignore_subscribe: q(Q::WsIgnoreSubscribe),
                omit_event_ids: q(Q::WsOmitEventIds),
                drop_event_on_resume: q(Q::WsDropEventOnResume),
                close_on_ack: q(Q::WsCloseOnAck),
                no_pong: q(Q::WsNoPong),
                drop_typing: q(Q::DropTypingEvents),
                drop_presence: q(Q::DropPresence),
                presence_to_everyone: q(Q::PresenceToEveryone),
            },
            federation: FederationDeviations {
                reject_identical_redelivery: q(Q::RejectIdenticalRedelivery),
                unsigned_receipt: q(Q::UnsignedReceipt),
                unsigned_outbound: q(Q::UnsignedOutbound),
                no_retry: q(Q::NoRetry),
                linear_backoff: q(Q::LinearBackoff),
                no_failure_receipt: q(Q::NoFailureReceipt),
                wrong_failure_reason: q(Q::WrongFailureReason),
                no_refetch_on_unknown_key: q(Q::NoRefetchOnUnknownKey),
                drop_origin_event_seq: q(Q::DropOriginEventSeq),
                drop_delivered_envelopes: q(Q::DropDeliveredEnvelopes),
                no_receipt: q(Q::NoReceipt),
                store_redelivered_twice: q(Q::StoreRedeliveredTwice),
                full_key_node_signature: q(Q::FullKeyNodeSignature),
                top_level_receipt: q(Q::TopLevelReceipt),
                duplicate_rejection_is_failure: q(Q::DuplicateRejectionIsFailure),
                no_refetch_on_signature_failure: q(Q::NoRefetchOnSignatureFailure),
            },
        }
    }

    /// The TLS mutants (v1.1 §14.1): [`Quirk::AllowTls12`] also accepts TLS 1.2,
    /// [`Quirk::NoHttp2`] offers only `http/1.1` in ALPN.
    fn tls(&self, mut config: rustls::ServerConfig) -> Result<rustls::ServerConfig, rustls::Error> {
        if self.has(Quirk::AllowTls12) {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
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

    /// The start-up defects: queued deliveries forgotten (§15.6), the newest local envelope
    /// lost (§16.1 durability), the oldest audit row pruned (§25.1), commits no longer
    /// synced (§4 durability).
    fn on_start(&self, store: &Store, config: &NodeConfig) -> Result<(), rusqlite::Error> {
        use crate::store::mutants;
        let tx = store.begin()?;
        if self.has(Quirk::DropOutboxOnRestart) {
            mutants::drop_queued_deliveries(&tx)?;
        }
        if self.has(Quirk::ForgetLastEnvelopeOnRestart) {
            mutants::forget_newest_local_envelope(&tx, &config.domain)?;
        }
        if self.has(Quirk::PruneAuditOnRestart) {
            mutants::prune_oldest_audit_row(&tx)?;
        }
        tx.commit()?;
        if self.has(Quirk::AckBeforeSync) {
            mutants::skip_commit_sync(&store.conn())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_every_quirk_has_a_reason_with_a_section() {
        for q in Quirk::ALL {
            assert_eq!(Quirk::parse(&q.name()), Some(q));
            assert!(q.reason().contains('§'), "{q:?}: {}", q.reason());
        }
        assert_eq!(Quirk::AcceptBadSignature.name(), "accept-bad-signature");
        let distinct: BTreeSet<Quirk> = Quirk::ALL.into_iter().collect();
        assert_eq!(distinct.len(), Quirk::ALL.len());
    }
}
