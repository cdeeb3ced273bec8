//! The email bridge's steps the bridge quirks break (v1.1 §21), as overrides of
//! loom-bridge's [`BridgeRules`] on the quirk set; every other step is the specification
//! ([`SpecBridge`]).

use super::{Quirk, Quirks};
use loom_bridge::auth::{AuthPolicy, AuthResults, Disposition};
use loom_bridge::inbound::{Mapped, MessageIndex, NoIndex};
use loom_bridge::outbound::{Dkim, MailDraft, RenderError, mail_recipients};
use loom_bridge::rules::{BridgeRules, SpecBridge};
use loom_protocol::{Address, ErrorCode};
use serde_json::{Value, json};

impl BridgeRules for Quirks {
    fn recorded_auth(&self, mut r: AuthResults) -> AuthResults {
        if self.has(Quirk::BridgeSkipDkim) && !r.dkim_signatures.is_empty() {
            // Signatures taken at their word: every one "passes".
            for s in &mut r.dkim_signatures {
                s.result = "pass".into();
                s.reason = None;
            }
            r.dkim = "pass".into();
            r.dkim_aligned = r.dkim_signatures.iter().any(|s| s.domain == r.dmarc_domain);
            if r.dkim_aligned && r.dmarc != "none" {
                r.dmarc = "pass".into();
            }
        }
        if self.has(Quirk::BridgeSkipSpf) {
            r.spf = "pass".into();
        }
        if self.has(Quirk::BridgeSkipDmarc) {
            r.dmarc = "none".into();
            r.dmarc_policy = "unspecified".into();
        }
        r
    }

    fn disposition(&self, auth: &AuthResults, policy: &AuthPolicy) -> Disposition {
        match SpecBridge.disposition(auth, policy) {
            Disposition::Quarantine(_) if self.has(Quirk::BridgeNoQuarantine) => {
                Disposition::Deliver
            }
            d => d,
        }
    }

    fn message_index<'a>(&self, known: &'a dyn MessageIndex) -> &'a dyn MessageIndex {
        if self.has(Quirk::BridgeIgnoreReplyHeaders) {
            return &NoIndex;
        }
        SpecBridge.message_index(known)
    }

    fn mapped(&self, mut m: Mapped) -> Mapped {
        if self.has(Quirk::BridgeDropOriginalHeaders) {
            m.meta_bridge["original_headers"] = json!({});
        }
        if self.has(Quirk::BridgeNoSource)
            && let Some(o) = m.meta_bridge.as_object_mut()
        {
            o.remove("source");
        }
        if self.has(Quirk::BridgeTrustedByDefault) {
            m.meta_bridge["structured_trust"]["authoritative"] = Value::Bool(true);
            m.meta_bridge["structured_trust"]["auto_actuation_allowed"] = Value::Bool(true);
        }
        if self.has(Quirk::BridgeNoOriginalMessageId)
            && let Some(o) = m.meta_bridge.as_object_mut()
        {
            o.remove("original_message_id");
        }
        for e in &mut m.envelopes {
            if self.has(Quirk::BridgeAuthoritativeExtraction)
                && let Some(s) = e
                    .pointer_mut("/content/structured")
                    .and_then(Value::as_object_mut)
            {
                s.remove("extracted");
                s.insert("authoritative".into(), Value::Bool(true));
            }
            if self.has(Quirk::BridgeDropHumanText)
                && let Some(c) = e.get_mut("content").and_then(Value::as_object_mut)
            {
                c.remove("human");
            }
        }
        m
    }

    fn mail_recipients(&self, envelope: &Value) -> Vec<(Address, String)> {
        if !self.has(Quirk::BridgeCopyToAll) {
            return mail_recipients(envelope);
        }
        // Every bridged recipient a bcc-copy lists gets it, the visible ones too.
        envelope["to"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| {
                let a = Address::parse_wire(r["identity"].as_str()?).ok()?;
                a.is_bridge()
                    .then(|| (a, r["role"].as_str().unwrap_or("primary").to_string()))
            })
            .collect()
    }

    fn draft(&self, mut d: MailDraft) -> MailDraft {
        if self.has(Quirk::BridgeOmitLoomHeaders) {
            d.loom_headers.clear();
        }
        if self.has(Quirk::BridgeTextOnly) {
            d.html = None;
        }
        if self.has(Quirk::BridgeNoReplyHeaders) {
            d.threading = Default::default();
        }
        if self.has(Quirk::BridgeDropAttachments) {
            d.attachments.clear();
        }
        d
    }

    fn sign(&self, dkim: &Dkim, raw: Vec<u8>) -> Result<Vec<u8>, RenderError> {
        if self.has(Quirk::BridgeUnsignedMail) {
            return Ok(raw);
        }
        SpecBridge.sign(dkim, raw)
    }

    fn failure_code(&self) -> Option<ErrorCode> {
        if self.has(Quirk::BridgeNoFailureReceipt) {
            return None;
        }
        SpecBridge.failure_code()
    }
}
