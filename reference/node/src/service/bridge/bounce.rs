//! Bounces back to receipts (v1.1 §20.8 "failed (DSN-like)", §21.3, §24.2): a delivery
//! status notification (RFC 3464) sent to the reverse path of one of our messages — a VERP
//! address naming the envelope and, under a keyed tag, the recipient
//! (`loom_bridge::bounce`) — marks that recipient's mail row failed and tells the sender
//! with `receipt.failed@v1` / `BRIDGE_DELIVERY_FAILED`, as a refusal at send time would.
//!
//! Accepted only from the null reverse path (RFC 5321 §4.5.5: DSNs are sent with `MAIL
//! FROM:<>`), only at addresses whose tag verifies for a mail row of that envelope (checked
//! at `RCPT`), and only when the report says `Action: failed`; a repeated or late report for
//! a row already failed changes nothing.

use super::Bridge;
use super::inbound::verdict;
use crate::service::Service;
use crate::store::federation::{self as queue_store, OutboxItem, Queue};
use loom_bridge::bounce;
use loom_bridge::outbound::email_of;
use loom_bridge::smtp::session::{Transaction, Verdict};
use loom_protocol::Address;

/// `address` (`local@domain`) is a bounce address of ours (syntax only).
pub fn is_bounce_address(address: &str) -> bool {
    address
        .rsplit_once('@')
        .is_some_and(|(local, _)| bounce::parse_local(local).is_some())
}

impl Service {
    /// The mail row a bounce address stands for, with its state, when its tag verifies.
    pub(crate) fn bounce_item(
        &self,
        b: &Bridge,
        (envelope_id, tag): (&str, &str),
    ) -> Option<(OutboxItem, String)> {
        let rows = queue_store::items_for(&self.store.read(), Queue::Mail, envelope_id).ok()?;
        rows.into_iter().find_map(|(item, state)| {
            let recipient = item
                .recipients
                .first()
                .and_then(|r| Address::parse_wire(r).ok())?;
            bounce::verify(&b.verp_key, envelope_id, &email_of(&recipient), tag)
                .then_some((item, state))
        })
    }

    /// One transaction to bounce addresses (module docs); the verdict is the reply to DATA.
    pub(crate) async fn bridge_bounce(&self, b: &Bridge, tx: &Transaction) -> Verdict {
        if !tx.mail_from.is_empty() {
            return verdict(
                550,
                [5, 7, 1],
                "bounce addresses take delivery status notifications only, from the null reverse path (RFC 5321 §4.5.5, RFC 3464)",
            );
        }
        let mut items = Vec::new();
        for r in &tx.rcpt_to {
            let found = r
                .rsplit_once('@')
                .and_then(|(local, _)| bounce::parse_local(local))
                .and_then(|tagged| self.bounce_item(b, tagged));
            match found {
                Some(f) => items.push(f),
                None => {
                    return verdict(
                        550,
                        [5, 5, 1],
                        format!(
                            "{r}: a delivery status notification goes to bounce addresses only"
                        ),
                    );
                }
            }
        }
        let Some(report) = bounce::parse_dsn(&tx.data) else {
            return verdict(
                250,
                [2, 6, 0],
                "not a delivery status notification (RFC 3464); nothing recorded",
            );
        };
        let Some(failed) = report.iter().find(|r| r.action == "failed") else {
            return verdict(
                250,
                [2, 6, 0],
                "no failed recipient in the report; nothing recorded",
            );
        };
        let why = format!(
            "bounced: {} {}",
            failed.status,
            failed.diagnostic.as_deref().unwrap_or("")
        );
        let mut recorded = 0;
        for (item, state) in items {
            if state == "failed" {
                continue;
            }
            match self
                .give_up_mail(&item, item.attempts, why.trim(), "bridge.outbound.bounced")
                .await
            {
                Ok(()) => recorded += 1,
                Err(e) => {
                    tracing::warn!(target: "loom::bridge", error = %e, "recording a bounce failed");
                    return verdict(
                        451,
                        [4, 3, 0],
                        "the bounce could not be recorded; try again",
                    );
                }
            }
        }
        verdict(
            250,
            [2, 0, 0],
            format!("bounce recorded for {recorded} recipient(s)"),
        )
    }
}
