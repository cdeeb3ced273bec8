//! Readings the spec leaves open, detected on the target instead of imposed (issue 29): where a
//! sentence allows two forms, the harness sends a control in each, records which the target
//! accepts, and builds that area's requests in an accepted form. The run reports what it found,
//! so an implementer learns which choice their node made.
//!
//! Detected now:
//! - whether a delegation link's signature covers its `signature_context` member (v1.1
//!   §13.3.1 is silent; DESIGN.md §9: the existing node's verifier includes it), here;
//! - which form of a remote identity document's `node_signature` the target verifies (Level 2,
//!   DESIGN.md §9: the registration form, or the full-key form older peers signed), by the
//!   federation kit's first fresh peer;
//! - the encoding of the node document's keys (`core.discovery.node-document.signing-keys`);
//! - whether search finds an intent through `q` or an `intent` filter
//!   (`core.search.envelope.intent`);
//! - whether the node or the client mints the id of an issued capability
//!   (`core.capability.endpoints`).

use crate::ctx::{Ctx, Ident};
use crate::finding::Finding;
use loom_protocol::delegation::{delegation_signing_payload_with_context, sign_delegation_link};
use loom_protocol::federation::identity::NodeSignatureForm;
use loom_protocol::keys::{SigContext, sign_b64url};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Where a delegation link's `signature_context` member stands relative to the signed bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkContext {
    /// Left out of the signed JCS, as an envelope's `signature.context` is (§7.2).
    Outside,
    /// Inside the signed JCS (only `signature` left out).
    Inside,
}

impl LinkContext {
    /// In words, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            LinkContext::Outside => "signature_context outside the signed bytes",
            LinkContext::Inside => "signature_context inside the signed bytes",
        }
    }
}

/// Signs `link` in place as its delegator (`key`, `key_id`) in the `reading`: the context
/// prefix always (§13.3.1), `signature_context` set, and covered by the signature or not.
pub fn sign_link(
    link: &mut Value,
    key: &ed25519_dalek::SigningKey,
    key_id: &loom_protocol::id::KeyId,
    reading: LinkContext,
) {
    let _ = sign_delegation_link(link, key, key_id);
    if reading == LinkContext::Inside {
        let payload = delegation_signing_payload_with_context(link).unwrap_or_default();
        link["signature"] = sign_b64url(key, Some(SigContext::DELEGATION), &payload).into();
    }
}

/// What the run found, shared by every case of the run.
#[derive(Debug, Default)]
pub struct Readings {
    link: tokio::sync::OnceCell<LinkContext>,
    /// The identity-document form, detected by the federation kit on the first Level 2 case.
    pub(crate) identity_form: tokio::sync::OnceCell<NodeSignatureForm>,
    found: Mutex<BTreeMap<&'static str, String>>,
}

impl Readings {
    /// The detected delegation-link reading ([`Ctx::link_reading`] runs the detection), or
    /// the form our signers use when none was detected yet.
    pub fn link_context(&self) -> LinkContext {
        self.link.get().copied().unwrap_or(LinkContext::Outside)
    }

    /// Every reading found so far: `(what, which)`, in name order.
    pub fn found(&self) -> Vec<(&'static str, String)> {
        self.found
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect()
    }

    /// The reading found for `what`, if any yet.
    pub fn get(&self, what: &str) -> Option<String> {
        self.found
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(what)
            .cloned()
    }

    pub(crate) fn record(&self, what: &'static str, which: String) {
        self.found
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(what, which);
    }
}

/// The name the identity-document reading is reported under.
pub const IDENTITY_FORM_READING: &str = "identity document node_signature (Level 2, DESIGN.md §9)";

/// The name the capability id reading is reported under.
pub const CAPABILITY_ID_READING: &str = "issued capability id (v1.1 §12.1, §16.4)";

/// The name the key encoding reading is reported under.
pub const KEY_ENCODING_READING: &str = "node-document key encoding (v1.1 §15.2)";

/// The name the intent search reading is reported under.
pub const INTENT_SEARCH_READING: &str = "search by intent (v1.1 §16.6)";

/// The name the delegation-link reading is reported under.
pub const LINK_READING: &str = "delegation link signature (v1.1 §13.3.1)";

impl Ctx {
    /// The form of delegation-link signature the target verifies, detected once per run: an
    /// agent's envelope under a valid link signed in each form; the first accepted is used.
    /// A target that accepts neither is an `error` naming both forms tried.
    pub async fn link_reading(&mut self) -> Result<LinkContext, Finding> {
        let readings = self.target.readings.clone();
        readings
            .link
            .get_or_try_init(|| detect_link_reading(self, &readings))
            .await
            .copied()
    }
}

/// The controls a detection sent, one per legal form: which the target accepted, and what it
/// answered the others.
#[derive(Debug)]
pub(crate) struct Tries<F> {
    accepted: Vec<F>,
    refused: Vec<String>,
}

impl<F: Copy> Tries<F> {
    /// No control sent yet.
    pub(crate) fn new() -> Tries<F> {
        Tries {
            accepted: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// The control in `form` (`named` in reports) got `t`; `accepted` says whether it took it.
    pub(crate) fn note(
        &mut self,
        form: F,
        named: &str,
        t: &loom_client::Transcript,
        accepted: bool,
    ) {
        if accepted {
            self.accepted.push(form);
        } else {
            self.refused.push(format!(
                "{named}: HTTP {}{}",
                t.status,
                crate::show::error_summary(t)
            ));
        }
    }

    /// The first accepted form, recorded under `what` ("both forms accepted" or "… only",
    /// with `named` for the form); an `error` naming every refused form when none was
    /// accepted (`none` says what was refused).
    pub(crate) fn conclude(
        self,
        readings: &Readings,
        what: &'static str,
        named: impl Fn(F) -> &'static str,
        none: &str,
    ) -> Result<F, Finding> {
        let Some(first) = self.accepted.first().copied() else {
            return Err(Finding::Error(format!(
                "{none}: {}",
                self.refused.join("; ")
            )));
        };
        let which = if self.refused.is_empty() && self.accepted.len() > 1 {
            "both forms accepted".to_owned()
        } else {
            format!("{} only", named(first))
        };
        readings.record(what, which);
        Ok(first)
    }
}

async fn detect_link_reading(cx: &mut Ctx, readings: &Readings) -> Result<LinkContext, Finding> {
    let alice = cx.identity("reading", "human").await?;
    let bot = cx.identity("reading-bot", "agent").await?;
    let mut tries = Tries::new();
    for reading in [LinkContext::Outside, LinkContext::Inside] {
        let i = agent_message(cx, &alice, &bot, reading).await?;
        let t = cx.net.transcript(i);
        tries.note(reading, reading.describe(), t, t.is_success());
    }
    tries.conclude(
        readings,
        LINK_READING,
        LinkContext::describe,
        "the target accepted an agent's envelope under a valid delegation link in neither \
         reading of v1.1 §13.3.1",
    )
}

/// `bot` sends `alice` a message under a fresh link from her signed in `reading`.
async fn agent_message(
    cx: &mut Ctx,
    alice: &Ident,
    bot: &Ident,
    reading: LinkContext,
) -> Result<crate::finding::Ex, Finding> {
    let now = cx.data.now();
    let mut link = json!({
        "delegator": alice.address(),
        "delegate": bot.address(),
        "scope": ["message.*"],
        "created_at": now,
        "expires_at": cx.data.now_plus_days(1),
        "revocable": true,
        "allow_sub_delegation": false,
    });
    sign_link(
        &mut link,
        alice.id.signing_key(),
        alice.id.key_id_typed(),
        reading,
    );
    let t = cx.data.thread_id();
    let mut env = cx
        .data
        .message(bot, &t, None, &[alice], "which reading of §13.3.1");
    env["from"]["delegation_chain"] = json!([link]);
    bot.sign(&mut env);
    cx.net.send(bot, &env).await
}
