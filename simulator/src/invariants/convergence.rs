//! `convergence`: an envelope stored on several nodes has the same body hash, thread and parent
//! everywhere; nodes holding the same operations of a thread agree on its status, and nodes
//! holding the same envelopes of a thread agree on its active participants (with roles).

use super::{Found, Run};
use loom_node::inspect::StoredEnvelope;
use std::collections::{BTreeMap, BTreeSet};

pub(super) fn check(run: &Run<'_>, found: &mut Found) {
    shared_envelopes_agree(run, found);
    thread_state_agrees(run, found);
}

fn shared_envelopes_agree(run: &Run<'_>, found: &mut Found) {
    let mut seen: BTreeMap<&str, (&str, &StoredEnvelope)> = BTreeMap::new();
    for (d, v) in &run.views {
        for e in &v.envelopes {
            let id = e.id.as_str();
            match seen.get(id) {
                None => {
                    seen.insert(id, (d.as_str(), e));
                }
                Some((d0, e0)) => {
                    if e0.body_sha256 != e.body_sha256
                        || e0.thread != e.thread
                        || e0.parent != e.parent
                    {
                        found.push(
                            "convergence",
                            format!(
                                "envelope {id} differs between {d0} and {d} (body hash, thread or parent)"
                            ),
                        );
                    }
                }
            }
        }
    }
}

/// Thread state is a function of the thread's envelopes (v1.1 §10.4, §11): nodes that hold
/// the same operations of a thread agree on its status, nodes that hold the same envelopes
/// agree on its participants too. (A node that joined late or refused an operation holds
/// fewer, and may legitimately differ: §11.5 delivers operations to the participants of the
/// moment, and an operation on a thread unknown to a node is `THREAD_NOT_FOUND`.)
fn thread_state_agrees(run: &Run<'_>, found: &mut Found) {
    type Key = (String, BTreeSet<String>);
    let mut by_ops: BTreeMap<Key, (&str, &str)> = BTreeMap::new();
    let mut by_all: BTreeMap<Key, (&str, String)> = BTreeMap::new();
    for (d, v) in &run.views {
        let mut all: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        let mut ops: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for e in &v.envelopes {
            all.entry(e.thread.as_str())
                .or_default()
                .insert(e.id.clone());
            let o = ops.entry(e.thread.as_str()).or_default();
            if e.kind == "thread_op" {
                o.insert(e.id.clone());
            }
        }
        for (t, view) in &v.threads {
            let (status, participants) = (&view.status, &view.participants);
            let Some(all) = all.get(t.as_str()) else {
                continue;
            };
            let ops = ops.get(t.as_str()).cloned().unwrap_or_default();
            let key = (t.clone(), ops);
            match by_ops.get(&key) {
                None => {
                    by_ops.insert(key, (d.as_str(), status.as_str()));
                }
                Some((d0, s0)) if *s0 != status.as_str() => found.push(
                    "convergence",
                    format!(
                        "thread {t} is {s0} on {d0} but {status} on {d}, though both hold the same {} operations (v1.1 §10.4, §11)",
                        key.1.len()
                    ),
                ),
                Some(_) => {}
            }
            let list: Vec<&String> = participants.iter().collect();
            let summary = format!("{list:?}");
            let key = (t.clone(), all.clone());
            match by_all.get(&key) {
                None => {
                    by_all.insert(key, (d.as_str(), summary));
                }
                Some((d0, p0)) if *p0 != summary => found.push(
                    "convergence",
                    format!(
                        "thread {t}: participants {p0} on {d0} but {summary} on {d}, though both hold the same {} envelopes (v1.1 §11.2, §11.5)",
                        key.1.len()
                    ),
                ),
                Some(_) => {}
            }
        }
    }
}
