//! The bridge's rules as steps with the specification as their default, the shape of
//! `loom_protocol::accept::Rules`: a node runs [`SpecBridge`]; a conformance self-test
//! overrides one step to break one rule (a quirk) and proves a case notices. The bridge's
//! main path reads no flags.

use crate::auth::{AuthPolicy, AuthResults, Disposition};
use crate::inbound::{Mapped, MessageIndex};
use crate::outbound::{Dkim, MailDraft, RenderError};
use loom_protocol::{Address, ErrorCode};
use serde_json::Value;

/// The steps of the bridge (v1.1 §21).
pub trait BridgeRules: Send + Sync + std::fmt::Debug {
    /// §21.2 "Verify SPF/DKIM/DMARC; store results in `meta.bridge.auth_results`": the
    /// results as recorded, from the results `mail-auth` computed.
    fn recorded_auth(&self, computed: AuthResults) -> AuthResults {
        computed
    }

    /// §21.2, §21.5: deliver, quarantine or refuse under the operator's policy.
    fn disposition(&self, auth: &AuthResults, policy: &AuthPolicy) -> Disposition {
        auth.disposition(policy)
    }

    /// §21.2 "map Message-ID / References / In-Reply-To to thread_id/parent_id": the
    /// conversations a reply is looked up in.
    fn message_index<'a>(&self, known: &'a dyn MessageIndex) -> &'a dyn MessageIndex {
        known
    }

    /// §21.2: the finished mapping (envelope drafts and `meta.bridge`), before signing.
    fn mapped(&self, m: Mapped) -> Mapped {
        m
    }

    /// §21.3, §20.6: the `bridge://` recipients of an envelope that get mail.
    fn mail_recipients(&self, envelope: &Value) -> Vec<(Address, String)> {
        crate::outbound::mail_recipients(envelope)
    }

    /// §21.3: one outgoing message before it becomes MIME.
    fn draft(&self, d: MailDraft) -> MailDraft {
        d
    }

    /// §21.3 "DKIM-sign … for bridge domain".
    fn sign(&self, dkim: &Dkim, raw: Vec<u8>) -> Result<Vec<u8>, RenderError> {
        dkim.sign(raw)
    }

    /// §24.2, §20.8: the code of the `receipt.failed@v1` a sender gets when mail cannot be
    /// delivered (`None`: no receipt).
    fn failure_code(&self) -> Option<ErrorCode> {
        Some(ErrorCode::BridgeDeliveryFailed)
    }
}

/// The specification's bridge.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpecBridge;

impl BridgeRules for SpecBridge {}
