//! Mail in (v1.1 §21.2): RCPT checks against local identities, then per transaction:
//! authenticate → refuse, quarantine or deliver → map → create the `bridge://` identity →
//! store attachment blobs → sign and commit each envelope through the writer → index the
//! Message-ID → audit. The SMTP reply says what happened; nothing is stored for mail that
//! is refused.

use super::Bridge;
use crate::error::{ApiError, ApiResult};
use crate::service::Caller;
use crate::service::Service;
use crate::service::write_group::Submitter;
use crate::store::{blobs, bridge as bridge_store, identities};
use loom_bridge::auth::{Connection, Disposition};
use loom_bridge::inbound::{InboundSettings, Mapped, MessageIndex, NoIndex, Received, map_message};
use loom_bridge::smtp::server::Handler;
use loom_bridge::smtp::session::{RecipientVerdict, Recipients, Transaction, Verdict};
use loom_protocol::accept::{Origin, admit};
use loom_protocol::envelope::sign::sign_envelope;
use loom_protocol::id::{BlobId, KeyKind, ThreadId};
use loom_protocol::registration::public_key_entry;
use loom_protocol::{Address, ErrorCode, KeyId};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

/// The SMTP handler of a node's bridge.
#[derive(Debug, Clone)]
pub struct SmtpHandler(pub Arc<Service>);

impl Recipients for SmtpHandler {
    fn check(&self, address: &str) -> RecipientVerdict {
        self.0.bridge_recipient(address)
    }
}

impl Handler for SmtpHandler {
    fn deliver(
        &self,
        peer: SocketAddr,
        tx: Transaction,
    ) -> Pin<Box<dyn Future<Output = Verdict> + Send + '_>> {
        Box::pin(self.0.bridge_receive(peer, tx))
    }
}

/// The node's Message-ID index as the mapping reads it.
struct StoreIndex<'a>(&'a Service);

impl MessageIndex for StoreIndex<'_> {
    fn find(&self, message_id: &str) -> Option<(String, String)> {
        bridge_store::find(&self.0.store.read(), message_id)
            .ok()
            .flatten()
    }
}

pub(super) fn verdict(code: u16, status: [u8; 3], text: impl Into<String>) -> Verdict {
    Verdict {
        code,
        status,
        text: text.into(),
    }
}

/// A LOOM refusal as an SMTP reply: the node's own trouble is temporary (`451`), anything
/// about the message permanent (`554 5.6.0`), both naming the §24.2 code.
fn refusal(e: &ApiError) -> Verdict {
    let text = format!("{}: {} ({})", e.code.as_str(), e.reason, e.field);
    if e.code == ErrorCode::InternalError {
        verdict(451, [4, 3, 0], text)
    } else if e.code == ErrorCode::PayloadTooLarge {
        verdict(552, [5, 3, 4], text)
    } else {
        verdict(554, [5, 6, 0], text)
    }
}

impl Service {
    /// The bridge, when `[bridge]` is configured.
    pub fn bridge(&self) -> Option<&Bridge> {
        self.bridge.as_ref()
    }

    /// `RCPT TO` (v1.1 §21.2): `local@{mail domain}` is accepted when `loom://local@{node}`
    /// is a registered identity that is not itself bridged.
    pub fn bridge_recipient(&self, email: &str) -> RecipientVerdict {
        let Some(b) = &self.bridge else {
            return RecipientVerdict::NotLocal;
        };
        let Some((local, domain)) = email.rsplit_once('@') else {
            return RecipientVerdict::Unknown;
        };
        if !domain.eq_ignore_ascii_case(&b.domain) {
            return RecipientVerdict::NotLocal;
        }
        if let Some(bounce) = loom_bridge::bounce::parse_local(local) {
            return if self.bounce_item(b, bounce).is_some() {
                RecipientVerdict::Accept
            } else {
                RecipientVerdict::Unknown
            };
        }
        let Ok(id) = Address::parse_wire(&format!("loom://{local}@{}", self.config.domain)) else {
            return RecipientVerdict::Unknown;
        };
        match identities::registered_type(&self.store.read(), &id) {
            Ok(Some(t)) if t != "bridge" => RecipientVerdict::Accept,
            _ => RecipientVerdict::Unknown,
        }
    }

    /// One received transaction (module docs); the verdict is the reply to DATA.
    pub async fn bridge_receive(&self, peer: SocketAddr, tx: Transaction) -> Verdict {
        let Some(b) = &self.bridge else {
            return verdict(554, [5, 3, 0], "this node runs no email bridge");
        };
        if tx
            .rcpt_to
            .iter()
            .any(|r| super::bounce::is_bounce_address(r))
        {
            return self.bridge_bounce(b, &tx).await;
        }
        let rules = self.rules.bridge();
        let computed = b
            .verifier
            .verify(
                &tx.data,
                Connection {
                    ip: peer.ip(),
                    helo: &tx.helo,
                    mail_from: &tx.mail_from,
                },
            )
            .await;
        let auth = rules.recorded_auth(computed);
        let disposition = rules.disposition(&auth, &b.config.policy);
        if let Disposition::Refuse(why) = &disposition {
            let _ = self.bridge_audit(
                &format!("bridge://{}", tx.mail_from.to_ascii_lowercase()),
                "bridge.inbound.refused",
                &tx.mail_from,
                json!({"reason": why, "auth_results": auth.to_json(), "client_ip": peer.ip().to_string()}),
            );
            tracing::info!(target: "loom::bridge", mail_from = %tx.mail_from, %why, "inbound mail refused");
            return verdict(550, [5, 7, 1], format!("{why} (v1.1 §21.2)"));
        }
        let mut recipients = Vec::new();
        for email in &tx.rcpt_to {
            let local = email.rsplit_once('@').map_or(email.as_str(), |(l, _)| l);
            match Address::parse_wire(&format!("loom://{local}@{}", self.config.domain)) {
                Ok(a) => recipients.push(a),
                Err(e) => return verdict(550, [5, 1, 3], format!("{email}: {e}")),
            }
        }
        let received_at = self.env.now().to_rfc3339();
        let received = Received {
            raw: &tx.data,
            mail_from: &tx.mail_from,
            recipients: &recipients,
            recipient_emails: &tx.rcpt_to,
            received_at: &received_at,
        };
        match self
            .bridge_store_mail(b, &received, &auth, &disposition)
            .await
        {
            Ok(ids) => verdict(250, [2, 0, 0], format!("stored as {}", ids.join(" "))),
            Err(v) => v,
        }
    }

    /// Maps and commits; on a thread the sender may not post to (a forged or stale
    /// In-Reply-To), the mail starts a thread of its own instead.
    async fn bridge_store_mail(
        &self,
        b: &Bridge,
        received: &Received<'_>,
        auth: &loom_bridge::auth::AuthResults,
        disposition: &Disposition,
    ) -> Result<Vec<String>, Verdict> {
        let settings = InboundSettings {
            auto_actuation: b.config.auto_actuation,
            ..InboundSettings::new(b.key_id.clone())
        };
        let rules = self.rules.bridge();
        let map = |index: &dyn MessageIndex| {
            map_message(received, auth, disposition, index, &settings, &mut || {
                self.env.ids().ulid().to_string()
            })
            .map(|m| rules.mapped(m))
            .map_err(|e| verdict(554, [5, 6, 0], e.to_string()))
        };
        let known = StoreIndex(self);
        let mapped = map(rules.message_index(&known))?;
        if mapped.sender.domain().eq_ignore_ascii_case(&b.domain) {
            // This bridge's own users write through LOOM; by SMTP their address is forged.
            return Err(verdict(
                550,
                [5, 7, 1],
                format!(
                    "mail from {} arrives through LOOM, not through this bridge (v1.1 §21.2)",
                    b.domain
                ),
            ));
        }
        let sender = mapped.sender.to_string();
        if let Some(mid) = &mapped.message_id
            && let Ok(Some(env)) = bridge_store::received(&self.store.read(), mid, &sender)
        {
            return Ok(vec![format!("{env} (already received)")]);
        }
        match self.bridge_commit(b, &mapped).await {
            Ok(ids) => Ok(ids),
            Err(e)
                if mapped.joined.is_some()
                    && matches!(
                        e.code,
                        ErrorCode::CapabilityDenied
                            | ErrorCode::ThreadNotFound
                            | ErrorCode::ThreadLocked
                            | ErrorCode::AudienceDenied
                    ) =>
            {
                let fresh = map(&NoIndex)?;
                self.bridge_commit(b, &fresh).await.map_err(|e| refusal(&e))
            }
            Err(e) => Err(refusal(&e)),
        }
    }

    /// Creates the sender identity, stores the blobs, then signs and commits every
    /// envelope of `m` (the visible one first); returns their ids.
    async fn bridge_commit(&self, b: &Bridge, m: &Mapped) -> ApiResult<Vec<String>> {
        self.ensure_bridge_identity(b, &m.sender, &m.display)?;
        let thread = m
            .envelopes
            .first()
            .and_then(|e| e["thread_id"].as_str())
            .and_then(|t| ThreadId::parse(t).ok());
        self.store_mail_blobs(&m.sender, thread.as_ref(), m)?;
        let (_, key) = self.node_key();
        let key_id = KeyId::parse(&b.key_id, KeyKind::Signing).map_err(ApiError::internal)?;
        let caller = Caller {
            identity: m.sender.clone(),
            key_id: b.key_id.clone(),
        };
        let mut ids = Vec::new();
        for draft in &m.envelopes {
            let mut env = draft.clone();
            sign_envelope(&mut env, key, &key_id)?;
            let admitted = {
                let directory = crate::store::resolvers::local_directory(&self.store);
                let rules = self.admission(&m.sender, false);
                admit(
                    env,
                    Origin::Bridge {
                        meta: &m.meta_bridge,
                    },
                    &directory,
                    &*rules,
                    &self.config.limits.envelope(),
                    self.env.now(),
                )?
            };
            let id = admitted.facts.id.to_string();
            self.commit_from(
                admitted,
                Submitter::Bridge {
                    caller: caller.clone(),
                    meta: m.meta_bridge.clone(),
                    // The visible envelope carries the Message-ID (and the audit entry).
                    message_id: if ids.is_empty() {
                        Some(m.message_id.clone().unwrap_or_default())
                    } else {
                        None
                    },
                },
            )
            .await?;
            ids.push(id);
        }
        Ok(ids)
    }

    /// §21.2 "Create sender identity: `bridge://{email}`": type `bridge`, signing key the
    /// node's bridge key (added when the node key rotated since).
    fn ensure_bridge_identity(&self, b: &Bridge, id: &Address, display: &str) -> ApiResult<()> {
        let public = loom_protocol::keys::public_key_to_b64url(&self.node_key().1.verifying_key());
        let tx = self.store.begin()?;
        let now = self.env.now().to_rfc3339();
        if !identities::exists(&tx, id)? {
            let doc = json!({
                "loom": "1.1",
                "id": id.to_string(),
                "type": "bridge",
                "node": self.config.domain,
                "created_at": now,
                "display_name": display,
                "public_keys": {
                    "signing": [public_key_entry(KeyKind::Signing, &b.key_id, &public, "active")],
                    "encryption": [],
                },
            });
            identities::insert(
                &tx,
                &identities::NewIdentity {
                    id,
                    kind: "bridge",
                    display_name: Some(display),
                    document: &doc,
                    at: &now,
                },
            )?;
            self.audit(
                &tx,
                &id.to_string(),
                "identity.bridged",
                &id.to_string(),
                json!({"type": "bridge"}),
            )?;
        }
        if identities::key(&tx, id, &b.key_id)?.is_none() {
            identities::insert_key(&tx, id, &b.key_id, KeyKind::Signing, &public, &now)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Attachments as complete blobs owned by the sender, in the envelope's thread.
    fn store_mail_blobs(
        &self,
        owner: &Address,
        thread: Option<&ThreadId>,
        m: &Mapped,
    ) -> ApiResult<()> {
        if m.attachments.is_empty() {
            return Ok(());
        }
        let tx = self.store.begin()?;
        let now = self.env.now().to_rfc3339();
        for a in &m.attachments {
            let id = BlobId::parse(&a.blob_id).map_err(ApiError::internal)?;
            blobs::insert(
                &tx,
                &blobs::NewBlob {
                    id: &id,
                    owner,
                    thread,
                    filename: &a.filename,
                    mime_type: &a.mime_type,
                    declared: Some(a.bytes.len() as u64),
                    at: &now,
                },
            )?;
            blobs::put_part(&tx, &id, 1, &a.bytes)?;
            blobs::complete(
                &tx,
                &id,
                a.bytes.len() as u64,
                &hex::encode(Sha256::digest(&a.bytes)),
                &now,
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// In the writer's transaction of a bridged envelope: its Message-ID in the index (the
    /// visible envelope's) and the `bridge.inbound` audit entry (§25.1), so a mail is stored,
    /// indexed and audited at once or not at all.
    pub(crate) fn record_bridged(
        &self,
        c: &rusqlite::Connection,
        a: &loom_protocol::accept::Acceptance,
        at: &str,
        sender: &Caller,
        meta: &Value,
        message_id: Option<&str>,
    ) -> ApiResult<()> {
        let Some(message_id) = message_id else {
            return Ok(());
        };
        if !message_id.is_empty() {
            bridge_store::record(
                c,
                &bridge_store::MessageRow {
                    message_id,
                    direction: bridge_store::Direction::In,
                    sender: &sender.identity.to_string(),
                    thread_id: &a.facts.thread.to_string(),
                    envelope_id: &a.facts.id.to_string(),
                    at,
                },
            )?;
        }
        self.audit(
            c,
            &sender.identity.to_string(),
            "bridge.inbound",
            if message_id.is_empty() {
                "-"
            } else {
                message_id
            },
            json!({
                "envelope": a.facts.id.to_string(),
                "auth_results": meta["auth_results"],
                "quarantine": meta.get("quarantine"),
            }),
        )
    }

    /// A §25.1 audit entry of the bridge, in its own transaction.
    pub(crate) fn bridge_audit(
        &self,
        actor: &str,
        action: &str,
        subject: &str,
        details: Value,
    ) -> ApiResult<()> {
        let tx = self.store.begin()?;
        self.audit(&tx, actor, action, subject, details)?;
        tx.commit()?;
        Ok(())
    }
}
