//! Mail out (v1.1 §21.3): queueing in the writer's transaction, and the worker that
//! renders, signs and sends each queued recipient, retries on the injected clock, and tells
//! the sender `BRIDGE_DELIVERY_FAILED` (§24.2) in a `receipt.failed@v1` when it gives up.

use super::Bridge;
use crate::error::{ApiError, ApiResult};
use crate::service::Service;
use crate::store::federation::{self as queue_store, NewOutboxItem, OutboxItem, Queue};
use crate::store::{blobs, bridge as bridge_store, envelopes};
use loom_bridge::outbound::{
    AttachmentBytes, Outgoing, Threading, build, email_of, envelope_drafts, message_id_of,
};
use loom_bridge::smtp::client::{self, RecipientOutcome, SendError};
use loom_protocol::accept::Acceptance;
use loom_protocol::id::{BlobId, EnvelopeId};
use loom_protocol::{Address, ErrorCode, Timestamp};
use rusqlite::Connection;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Most queued recipients one pass sends.
const MAX_PER_PASS: usize = 64;
/// Longest wait between retries.
const MAX_BACKOFF_SECS: u64 = 3600;
/// One SMTP exchange's timeout.
const SMTP_STEP: Duration = Duration::from_secs(30);

/// What one outbound pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MailReport {
    /// Recipients delivered.
    pub delivered: usize,
    /// Recipients to try again.
    pub retried: usize,
    /// Recipients given up on (`BRIDGE_DELIVERY_FAILED`).
    pub failed: usize,
}

/// `bridge://carol@b.test` → `carol@b.test`.
impl Service {
    /// Queues one mail row per `bridge://` recipient of an envelope the writer just
    /// accepted from a local sender, inside its transaction (nothing when no bridge runs).
    pub(crate) fn queue_mail_recipients(&self, c: &Connection, a: &Acceptance) -> ApiResult<()> {
        let Some(b) = &self.bridge else {
            return Ok(());
        };
        let recipients = self.rules.bridge().mail_recipients(&a.envelope);
        if recipients.is_empty() {
            return Ok(());
        }
        let now = self.env.now();
        let at = now.to_rfc3339();
        let id = a.facts.id.to_string();
        let sender = a.facts.sender.to_string();
        for (r, _) in &recipients {
            queue_store::queue(
                c,
                Queue::Mail,
                &NewOutboxItem {
                    destination: r.domain(),
                    envelope_id: &id,
                    sender: &sender,
                    recipients: &[r.to_string()],
                    queued_at: &at,
                    queued_ms: now.unix_ms(),
                },
            )?;
        }
        b.wake.notify_one();
        Ok(())
    }

    /// Every outbound mail row, in queue order (tests, operators).
    pub fn mail_outbox(&self) -> ApiResult<Vec<queue_store::OutboxRow>> {
        Ok(queue_store::outbox(&self.store.read(), Queue::Mail)?)
    }

    /// One pass over the due mail rows.
    pub async fn bridge_tick(&self) -> ApiResult<MailReport> {
        let mut report = MailReport::default();
        let Some(b) = &self.bridge else {
            return Ok(report);
        };
        let _one_at_a_time = b.tick.lock().await;
        let now = self.env.now();
        let due = queue_store::due(&self.store.read(), Queue::Mail, now.unix_ms(), MAX_PER_PASS)?;
        for item in due {
            self.send_mail_item(b, &item, &mut report).await?;
        }
        Ok(report)
    }

    async fn send_mail_item(
        &self,
        b: &Bridge,
        item: &OutboxItem,
        report: &mut MailReport,
    ) -> ApiResult<()> {
        let Some(recipient) = item
            .recipients
            .first()
            .and_then(|r| Address::parse_wire(r).ok())
        else {
            return self.mail_failed(item, "no recipient", report).await;
        };
        let outgoing = match self.render_for(b, item, &recipient) {
            Ok(Some(m)) => m,
            Ok(None) => return self.mail_failed(item, "envelope erased", report).await,
            Err(e) => return self.mail_failed(item, &e.reason, report).await,
        };
        let email = email_of(&recipient);
        let result = self.smtp_send(b, &outgoing, &email).await;
        let (kind, why) = match result {
            Ok(outcomes) => match outcomes.into_iter().find(|(r, _)| *r == email) {
                Some((_, RecipientOutcome::Delivered)) => {
                    return self.mail_delivered(item, &outgoing, report);
                }
                Some((_, RecipientOutcome::Deferred(why))) => ("deferred", why),
                Some((_, RecipientOutcome::Failed(why))) => ("refused", why),
                None => ("deferred", "no answer for the recipient".to_string()),
            },
            Err(e) if e.is_permanent() => ("refused", e.to_string()),
            Err(e) => ("deferred", e.to_string()),
        };
        let attempts = item.attempts.saturating_add(1);
        if kind == "refused" || attempts >= b.config.max_attempts {
            return self
                .mail_failed(item, &format!("{kind}: {why}"), report)
                .await;
        }
        let delay = b
            .config
            .retry_base_secs
            .saturating_mul(1u64 << (attempts - 1).min(20))
            .min(MAX_BACKOFF_SECS);
        let next = self.env.now().unix_ms() + i64::try_from(delay * 1000).unwrap_or(i64::MAX / 2);
        let tx = self.store.begin()?;
        queue_store::mark_retry(
            &tx,
            Queue::Mail,
            item.id,
            attempts,
            &format!("{kind}: {why}"),
            next,
        )?;
        tx.commit()?;
        report.retried += 1;
        Ok(())
    }

    /// The message for `recipient` of the queued envelope (`None`: the envelope is gone).
    fn render_for(
        &self,
        b: &Bridge,
        item: &OutboxItem,
        recipient: &Address,
    ) -> ApiResult<Option<Outgoing>> {
        let conn = self.store.read();
        let Ok(eid) = EnvelopeId::parse(&item.envelope_id) else {
            return Ok(None);
        };
        let Some(envelope) = envelopes::body(&conn, &eid)? else {
            return Ok(None);
        };
        let email = email_of(recipient);
        let mail = self.rules.bridge().mail_recipients(&envelope);
        let parent = envelope["parent_id"].as_str();
        let threading = Threading {
            in_reply_to: parent.map(|p| {
                bridge_store::message_id_of(&conn, p)
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| message_id_of(p, &b.domain))
            }),
            references: parent
                .map(|p| {
                    vec![
                        bridge_store::message_id_of(&conn, p)
                            .ok()
                            .flatten()
                            .unwrap_or_else(|| message_id_of(p, &b.domain)),
                    ]
                })
                .unwrap_or_default(),
        };
        let mut attachments = Vec::new();
        for a in envelope["attachments"].as_array().into_iter().flatten() {
            let Some(id) = a["blob_id"].as_str().and_then(|i| BlobId::parse(i).ok()) else {
                continue;
            };
            attachments.push(AttachmentBytes {
                filename: a["filename"].as_str().unwrap_or("attachment").to_string(),
                mime_type: a["mime_type"]
                    .as_str()
                    .unwrap_or("application/octet-stream")
                    .to_string(),
                bytes: blobs::content(&conn, &id)?,
            });
        }
        let drafts = envelope_drafts(&envelope, &mail, &threading, &attachments, &b.domain)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let Some(mut draft) = drafts
            .into_iter()
            .find(|d| d.rcpt_to.iter().any(|r| r.eq_ignore_ascii_case(&email)))
        else {
            return Ok(None);
        };
        draft.mail_from =
            loom_bridge::bounce::address(&b.verp_key, &item.envelope_id, &email, &b.domain);
        let rules = self.rules.bridge();
        let mut draft = rules.draft(draft);
        draft.rcpt_to = vec![email];
        let raw = build(&draft).map_err(|e| ApiError::internal(e.to_string()))?;
        let data = rules
            .sign(&b.dkim, raw)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(Some(Outgoing {
            mail_from: draft.mail_from,
            rcpt_to: draft.rcpt_to,
            data,
            message_id: draft.message_id,
        }))
    }

    /// One SMTP transaction to the smarthost or the recipient domain's MX.
    async fn smtp_send(
        &self,
        b: &Bridge,
        m: &Outgoing,
        email: &str,
    ) -> Result<Vec<(String, RecipientOutcome)>, SendError> {
        let (host, port) = match &b.config.smarthost {
            Some(h) => {
                let (host, port) = h.rsplit_once(':').unwrap_or((h.as_str(), "25"));
                (host.to_string(), port.parse().unwrap_or(25))
            }
            None => {
                let domain = email.rsplit_once('@').map_or("", |(_, d)| d);
                let mx = b.verifier.mx(domain).await;
                let host = mx.into_iter().next().unwrap_or_else(|| domain.to_string());
                (host, 25)
            }
        };
        let stream = tokio::time::timeout(SMTP_STEP, self.fed.client.dial().dial(&host, port))
            .await
            .map_err(|_| SendError::Io(std::io::ErrorKind::TimedOut.into()))?
            .map_err(SendError::Io)?;
        client::send(
            stream,
            &client::Envelope {
                helo: &b.hostname,
                mail_from: &m.mail_from,
                rcpt_to: &m.rcpt_to,
                data: &m.data,
            },
            SMTP_STEP,
        )
        .await
    }

    fn mail_delivered(
        &self,
        item: &OutboxItem,
        m: &Outgoing,
        report: &mut MailReport,
    ) -> ApiResult<()> {
        let at = self.env.now().to_rfc3339();
        let thread = EnvelopeId::parse(&item.envelope_id)
            .ok()
            .map(|id| envelopes::read(&self.store.read(), &id))
            .transpose()?
            .flatten()
            .map(|r| r.thread.to_string())
            .unwrap_or_default();
        let tx = self.store.begin()?;
        queue_store::mark_delivered(&tx, Queue::Mail, item.id, &at)?;
        bridge_store::record(
            &tx,
            &bridge_store::MessageRow {
                message_id: &m.message_id,
                direction: bridge_store::Direction::Out,
                sender: &item.sender,
                thread_id: &thread,
                envelope_id: &item.envelope_id,
                at: &at,
            },
        )?;
        self.audit(
            &tx,
            &item.sender,
            "bridge.outbound",
            &item.envelope_id,
            json!({"recipient": item.recipients, "message_id": m.message_id}),
        )?;
        tx.commit()?;
        report.delivered += 1;
        Ok(())
    }

    /// Gives up on `item` after its last attempt or a 5xx (§21.3).
    async fn mail_failed(
        &self,
        item: &OutboxItem,
        why: &str,
        report: &mut MailReport,
    ) -> ApiResult<()> {
        let attempts = item.attempts.saturating_add(1);
        self.give_up_mail(item, attempts, why, "bridge.outbound.failed")
            .await?;
        report.failed += 1;
        Ok(())
    }

    /// Marks `item` failed for good (`why`, after `attempts`), writes the audit entry
    /// `action`, and the sender gets `receipt.failed@v1` with `BRIDGE_DELIVERY_FAILED`
    /// (§21.3, §20.8, §24.2): after the last attempt, a 5xx, or a bounce.
    pub(super) async fn give_up_mail(
        &self,
        item: &OutboxItem,
        attempts: u32,
        why: &str,
        action: &str,
    ) -> ApiResult<()> {
        {
            let tx = self.store.begin()?;
            queue_store::mark_failed(
                &tx,
                Queue::Mail,
                item.id,
                attempts,
                why,
                ErrorCode::BridgeDeliveryFailed.as_str(),
                &self.env.now().to_rfc3339(),
            )?;
            self.audit(
                &tx,
                &item.sender,
                action,
                &item.envelope_id,
                json!({"recipient": item.recipients, "reason": why, "attempts": attempts}),
            )?;
            tx.commit()?;
        }
        tracing::info!(target: "loom::bridge", envelope = %item.envelope_id, %why, %action, "outbound mail failed");
        let Some(code) = self.rules.bridge().failure_code() else {
            return Ok(());
        };
        for r in &item.recipients {
            if let Ok(recipient) = Address::parse_wire(r) {
                self.failure_receipt(item, &recipient, code).await?;
            }
        }
        Ok(())
    }

    /// When the next queued mail is due.
    pub fn next_mail_due(&self) -> ApiResult<Option<Timestamp>> {
        Ok(queue_store::next_due(&self.store.read(), Queue::Mail)?.map(Timestamp::from_unix_ms))
    }
}

/// The outbound worker: a pass whenever mail is queued or a retry falls due.
pub async fn run_worker(svc: Arc<Service>) {
    let Some(b) = svc.bridge() else {
        return;
    };
    let pacing = crate::service::worker::Pacing {
        name: "outbound mail",
        wake: &b.wake,
        idle_ms: 60_000,
        pause_ms: 1_000,
    };
    loop {
        let pass = svc.bridge_tick().await.map(drop);
        let next = || svc.next_mail_due().ok().flatten().map(|t| t.unix_ms());
        let wait = crate::service::worker::wait_after(&pacing, pass, next, svc.env.now().unix_ms());
        crate::service::worker::pause(&pacing, wait).await;
    }
}
