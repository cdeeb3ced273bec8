//! `mail-in-once`: every inbound message the bridge accepted became exactly one envelope,
//! labelled `sys.quarantine` exactly when it was not authenticated (v1.1 §21.2, §21.5); a
//! message it refused was forged and is stored nowhere; a message never answered for good is
//! stored at most once (the sender's retries are deduplicated by Message-ID).

use super::{Found, Run};
use crate::trace::{MailKind, MailOutcome};
use serde_json::Value;

pub(super) fn check(run: &Run<'_>, found: &mut Found) {
    let Some(view) = run.views.get(&run.mail.node) else {
        return;
    };
    for m in &run.mail.sent {
        let stored: Vec<&Value> = view
            .envelopes
            .iter()
            .filter_map(|e| e.body.as_ref())
            .filter(|b| {
                b.pointer("/meta/bridge/original_message_id")
                    .and_then(Value::as_str)
                    == Some(m.message_id.as_str())
            })
            .collect();
        let quarantined = |b: &&Value| {
            b["labels"]
                .as_array()
                .is_some_and(|l| l.iter().any(|x| x == "sys.quarantine"))
        };
        let problem = match (&m.outcome, m.kind, stored.len()) {
            (MailOutcome::Refused(_), MailKind::Forged, 0) => None,
            (MailOutcome::Refused(r), kind, _) if kind != MailKind::Forged => Some(format!(
                "{kind:?} mail was refused ({r}): only mail failing DMARC p=reject is refused, the rest is delivered or quarantined (v1.1 §21.5)"
            )),
            (MailOutcome::Accepted, MailKind::Forged, _) => Some(
                "forged mail (From example.net, DMARC p=reject, sent from elsewhere) was accepted"
                    .into(),
            ),
            (_, MailKind::Forged, n) if n > 0 => {
                Some(format!("forged mail is stored as {n} envelope(s)"))
            }
            (MailOutcome::Accepted, _, n) if n != 1 => Some(format!(
                "accepted with 250 but stored as {n} envelopes (exactly one, v1.1 §21.2)"
            )),
            (MailOutcome::GaveUp, _, n) if n > 1 => Some(format!(
                "stored as {n} envelopes although the sender's retries carry one Message-ID"
            )),
            (_, MailKind::Authentic, _) if stored.iter().any(quarantined) => {
                Some("authenticated mail (SPF and DMARC pass) is labelled sys.quarantine".into())
            }
            (_, MailKind::Unknown, _) if !stored.iter().all(quarantined) => {
                Some("unauthenticated mail is not labelled sys.quarantine (v1.1 §21.5)".into())
            }
            _ => None,
        };
        if let Some(p) = problem {
            found.push(
                "mail-in-once",
                format!(
                    "{}: message {} ({:?}, {} attempt(s), {:?}): {p}",
                    run.mail.node, m.message_id, m.kind, m.attempts, m.outcome
                ),
            );
        }
    }
}
