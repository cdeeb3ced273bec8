//! `delivered-once-or-failed`: per remote recipient, delivered (one outbox row, `delivered`,
//! the envelope on the recipient's node) or failed with a `receipt.failed@v1` to the sender —
//! never both, never neither (v1.1 §15.6).

use super::{Found, Run, domain_of};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Per node: the (envelope id, recipient) pairs its own `receipt.failed@v1` envelopes name.
pub(super) fn failure_receipts(run: &Run<'_>) -> BTreeMap<String, BTreeSet<(String, String)>> {
    let mut out: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for (d, v) in &run.views {
        let node_id = format!("loom://loom-node@{d}");
        let set = out.entry(d.clone()).or_default();
        for e in &v.envelopes {
            let Some(b) = &e.body else { continue };
            if e.kind != "receipt"
                || b.pointer("/from/identity").and_then(Value::as_str) != Some(node_id.as_str())
            {
                continue;
            }
            let p = b.pointer("/content/structured/parameters");
            let get = |k: &str| {
                p.and_then(|p| p.get(k))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            if b.pointer("/content/structured/intent")
                .and_then(Value::as_str)
                == Some("receipt.failed@v1")
            {
                set.insert((get("envelope_id"), get("recipient")));
            }
        }
    }
    out
}

pub(super) fn check(run: &Run<'_>, found: &mut Found) {
    let failure_receipts = failure_receipts(run);
    for a in run.acks {
        let mut remote: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
        // Mail recipients are `mail-out-once-or-failed`'s (§21.3), not federation's.
        for r in a.to.iter().filter(|r| !r.starts_with("bridge://")) {
            let d = domain_of(r);
            if d != a.node {
                remote.entry(d).or_default().push(r);
            }
        }
        for (dest, recipients) in remote {
            if run.permanently_down.contains(dest) {
                continue;
            }
            let row = run
                .views
                .get(&a.node)
                .and_then(|v| v.outbox.get(&(dest.to_owned(), a.id.clone())));
            let there = run
                .views
                .get(dest)
                .is_some_and(|v| v.by_id.contains_key(&a.id));
            let receipted = recipients.iter().all(|r| {
                failure_receipts
                    .get(&a.node)
                    .is_some_and(|s| s.contains(&(a.id.clone(), (*r).clone())))
            });
            let state = row.map(|r| r.state.as_str());
            // Retracted before it left: nothing to deliver and nobody to tell (§20.7).
            let erased = row.is_some_and(|r| r.last_failure.as_deref() == Some("erased"))
                && run.retracted.contains(&a.id);
            let verdict = match (state, there, receipted) {
                (Some("delivered"), true, false) => None,
                (Some("failed"), false, true) => None,
                (Some("failed"), false, false) if erased => None,
                (None, _, _) => Some(format!(
                    "{} accepted {} for {dest} but has no outbox row for it: the delivery was lost (v1.1 §15.6 store-and-forward)",
                    a.node, a.id
                )),
                (Some(s), there, receipted) => Some(format!(
                    "{} → {dest}: {} is {s} in the outbox, {} on {dest}, failure receipt to the sender {} (v1.1 §15.6: delivered exactly once or a receipt.failed@v1)",
                    a.node,
                    a.id,
                    if there { "stored" } else { "absent" },
                    if receipted { "present" } else { "absent" }
                )),
            };
            if let Some(v) = verdict {
                found.push("delivered-once-or-failed", v);
            }
        }
    }
}
