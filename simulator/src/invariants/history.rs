//! `history`: what clients read agrees with what the nodes acknowledged and with each other
//! (issue 36 Build 8), as a Jepsen-style checker over the run's read record and the stores:
//! - **read-your-writes:** a listing of a thread on a node shows every envelope that node
//!   acknowledged (201) to the reading user in that thread before the read began, crashes
//!   and restarts of the node in between included (v1.1 §4 "store envelopes durably",
//!   §16.2);
//! - **one order per set:** two listings of a thread that hold the same envelopes, on any
//!   nodes at any times, list them in the same order (v1.1 §10.3 canonical rendering order is
//!   a function of the envelopes alone);
//! - **commit order follows the DAG:** on every node, a reply stored in the same thread as
//!   its parent comes after it in the thread's event order unless the node marked it
//!   `meta.pending_parent` (v1.1 §10.2 out-of-order acceptance, §11.6), and a reply so marked
//!   really arrived before its parent.

use super::{Found, Run};
use std::collections::BTreeMap;

pub(super) fn check(run: &Run<'_>, found: &mut Found) {
    read_your_writes(run, found);
    one_order_per_set(run, found);
    commit_order_follows_the_dag(run, found);
}

fn read_your_writes(run: &Run<'_>, found: &mut Found) {
    for r in run.reads {
        for id in &r.expected {
            if !r.seen.contains(id) {
                found.push(
                    "history",
                    format!(
                        "{} acknowledged {id} to {} in thread {}, but the user's listing of the thread at {} ms does not show it (read-your-writes{})",
                        r.node,
                        r.user,
                        r.thread,
                        r.at_ms,
                        if run.crashed.contains(&r.node) {
                            "; the node crashed during the run"
                        } else {
                            ""
                        }
                    ),
                );
            }
        }
    }
}

fn one_order_per_set(run: &Run<'_>, found: &mut Found) {
    // Thread → (the sorted set of ids → the first listing of exactly that set).
    let mut first: BTreeMap<&str, BTreeMap<Vec<&str>, &crate::trace::Read>> = BTreeMap::new();
    for r in run.reads {
        let mut set: Vec<&str> = r.seen.iter().map(String::as_str).collect();
        set.sort_unstable();
        let by_set = first.entry(r.thread.as_str()).or_default();
        match by_set.get(&set) {
            None => {
                by_set.insert(set, r);
            }
            Some(earlier) if earlier.seen != r.seen => found.push(
                "history",
                format!(
                    "thread {}: {} listed {:?} at {} ms, {} listed the same envelopes as {:?} at {} ms (v1.1 §10.3: one canonical order)",
                    r.thread, earlier.node, earlier.seen, earlier.at_ms, r.node, r.seen, r.at_ms
                ),
            ),
            Some(_) => {}
        }
    }
}

fn commit_order_follows_the_dag(run: &Run<'_>, found: &mut Found) {
    for (d, v) in &run.views {
        for e in &v.envelopes {
            let Some(parent) = e.parent.as_deref() else {
                continue;
            };
            let Some(p) = v.by_id.get(parent).map(|i| &v.envelopes[*i]) else {
                continue;
            };
            if p.thread != e.thread {
                continue;
            }
            let Some(pending) = e
                .body
                .as_ref()
                .and_then(|b| b.pointer("/meta/pending_parent"))
                .map(|p| p.as_bool() == Some(true))
            else {
                continue;
            };
            let before = p.event_seq < e.event_seq;
            if pending == before {
                found.push(
                    "history",
                    format!(
                        "{d}: thread {} reply {} has event_seq {} and its parent {} has {}, yet meta.pending_parent is {pending} (v1.1 §10.2, §11.6)",
                        e.thread, e.id, e.event_seq, p.id, p.event_seq
                    ),
                );
            }
        }
    }
}
