//! `mail-out-once-or-failed`: per mail recipient of an envelope the bridge node acknowledged,
//! the outside exchanger received it (the mail row `delivered`) or the sender got a
//! `receipt.failed@v1` (the row `failed`) — never both, never neither (v1.1 §21.3, §20.8,
//! §24.2 `BRIDGE_DELIVERY_FAILED`). SMTP hands a message over at least once: a second copy
//! is a violation unless the bridge node crashed during the run (between the exchanger's
//! `250` and the commit of `delivered`, RFC 5321 §6.1's duplicate window).

use super::delivered_once::failure_receipts;
use super::{Found, Run};

pub(super) fn check(run: &Run<'_>, found: &mut Found) {
    let node = &run.mail.node;
    let Some(view) = run.views.get(node) else {
        return;
    };
    let receipts = failure_receipts(run);
    let receipted = |id: &str, r: &str| {
        receipts
            .get(node)
            .is_some_and(|s| s.contains(&(id.to_owned(), r.to_owned())))
    };
    for a in run.acks.iter().filter(|a| &a.node == node) {
        for r in a.to.iter().filter(|r| r.starts_with("bridge://")) {
            let email = r.trim_start_matches("bridge://");
            let copies = run
                .mail
                .arrived
                .iter()
                .filter(|m| m.rcpt.eq_ignore_ascii_case(email) && m.envelope_id == a.id)
                .count();
            let row = view.mail_outbox.get(&(r.clone(), a.id.clone()));
            let state = row.map(|r| r.state.as_str());
            let told = receipted(&a.id, r);
            let problem = match (state, copies, told) {
                (Some("delivered"), 1, false) => None,
                (Some("delivered"), n, false) if n > 1 && run.crashed.contains(node) => None,
                (Some("failed"), 0, true) => None,
                (None, _, _) => Some(format!(
                    "accepted for {r} but no mail row exists: the message was lost (v1.1 §21.3)"
                )),
                (Some(s), n, told) => Some(format!(
                    "the mail row is {s}, the exchanger has {n} cop{} and the sender {} a failure receipt (exactly one delivery or one BRIDGE_DELIVERY_FAILED receipt){}",
                    if n == 1 { "y" } else { "ies" },
                    if told { "got" } else { "got no" },
                    if n > 1 {
                        "; the bridge node never crashed, so nothing explains a duplicate"
                    } else {
                        ""
                    }
                )),
            };
            if let Some(p) = problem {
                found.push(
                    "mail-out-once-or-failed",
                    format!("{node}: envelope {} to {r}: {p}", a.id),
                );
            }
        }
    }
}
