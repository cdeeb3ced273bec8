//! The invariants (issue 16 Build 4), checked at quiescence against the stores the nodes
//! left behind (read-only SQLite connections to each node's directory) and the record of
//! what the nodes acknowledged. `skew-window` and `replay-refused` are checked while the run
//! goes on ([`crate::dial`], [`crate::workload::run_replayer`]).
//!
//! | invariant | rule |
//! |---|---|
//! | `acked-durable` | every envelope a node answered 201 for is in its store after every crash |
//! | `delivered-once-or-failed` | per remote recipient: delivered (one outbox row, `delivered`, the envelope on the recipient's node) or failed with a `receipt.failed@v1` to the sender — never both, never neither (v1.1 §15.6) |
//! | `event-seq` | per node and thread, in commit order: `event_seq` is 1, 2, 3, … and `meta.event_seq` says the same (v1.1 §11.6) |
//! | `signatures` | every stored envelope's signature verifies with its sender's key (v1.1 §7.3) |
//! | `audit-chain` | every node's audit log verifies (v1.1 §25.1; `loom-node audit verify`) |
//! | `convergence` | an envelope stored on several nodes has the same body hash, thread and parent everywhere, and nodes holding the same operations of a thread agree on its status, and nodes holding the same envelopes of a thread agree on its active participants (with roles) |
//! | `quiescence` | no outbox still holds a queued delivery once the network healed and `settle_secs` passed |

use crate::trace::Shared;
use ed25519_dalek::VerifyingKey;
use loom_node::store::audit::{AuditVerdict, verify};
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Most details reported per invariant.
const MAX_DETAILS: usize = 3;

fn open(dir: &Path) -> Option<Connection> {
    let path = dir.join("loom.db");
    if !path.exists() {
        return None;
    }
    Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()
}

/// A cheap look at the world while it settles.
#[derive(Debug, Clone, Default)]
pub struct Probe {
    /// Queued outbox rows on all nodes.
    pub queued: i64,
    /// Row counts that change while anything still happens.
    pub digest: String,
}

/// Read-only connections kept open across probes (opening one parses the whole schema).
#[derive(Default)]
pub struct Prober {
    conns: BTreeMap<PathBuf, Connection>,
}

impl std::fmt::Debug for Prober {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prober")
            .field("stores", &self.conns.len())
            .finish()
    }
}

impl Prober {
    /// The read-only connection to the store in `dir`, opened on first use.
    fn conn(&mut self, dir: &Path) -> Option<&Connection> {
        if !self.conns.contains_key(dir)
            && let Some(c) = open(dir)
        {
            self.conns.insert(dir.to_path_buf(), c);
        }
        self.conns.get(dir)
    }

    /// Counts queued deliveries and stored envelopes on every node.
    pub fn probe(&mut self, dirs: &[PathBuf]) -> Probe {
        let mut p = Probe::default();
        for d in dirs {
            let Some(c) = self.conn(d) else {
                p.digest.push_str("absent;");
                continue;
            };
            let q: i64 = c
                .prepare_cached("SELECT COUNT(*) FROM federation_outbox WHERE state = 'queued'")
                .and_then(|mut s| s.query_row([], |r| r.get(0)))
                .unwrap_or(-1);
            let n: i64 = c
                .prepare_cached("SELECT COUNT(*) FROM envelopes")
                .and_then(|mut s| s.query_row([], |r| r.get(0)))
                .unwrap_or(-1);
            p.queued += q.max(0);
            if q < 0 {
                p.queued += 1;
            }
            p.digest.push_str(&format!("{q}/{n};"));
        }
        p
    }
}

struct Stored {
    thread: String,
    event_seq: i64,
    parent: Option<String>,
    sha: String,
    body: Option<Value>,
    kind: String,
}

struct NodeView {
    /// Envelopes in commit order (rowid).
    envelopes: Vec<(String, Stored)>,
    by_id: BTreeMap<String, usize>,
    /// (destination, envelope id) → (state, last failure).
    outbox: BTreeMap<(String, String), (String, Option<String>)>,
    /// Thread id → (status, active participants as `identity/role`).
    threads: BTreeMap<String, (String, BTreeSet<String>)>,
    node_keys: Vec<VerifyingKey>,
    audit: Result<AuditVerdict, String>,
}

fn load(c: &Connection) -> rusqlite::Result<NodeView> {
    let mut envelopes = Vec::new();
    let mut stmt = c.prepare(
        "SELECT id, thread_id, event_seq, parent_id, body_sha256, body, type FROM envelopes ORDER BY rowid",
    )?;
    let rows = stmt.query_map([], |r| {
        let body: Option<String> = r.get(5)?;
        Ok((
            r.get::<_, String>(0)?,
            Stored {
                thread: r.get(1)?,
                event_seq: r.get(2)?,
                parent: r.get(3)?,
                sha: r.get(4)?,
                body: body.and_then(|b| serde_json::from_str(&b).ok()),
                kind: r.get(6)?,
            },
        ))
    })?;
    for row in rows {
        envelopes.push(row?);
    }
    let by_id = envelopes
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (id.clone(), i))
        .collect();
    let mut outbox = BTreeMap::new();
    let mut stmt =
        c.prepare("SELECT destination, envelope_id, state, last_failure FROM federation_outbox")?;
    let rows = stmt.query_map([], |r| Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?))))?;
    for row in rows {
        let (k, v) = row?;
        outbox.insert(k, v);
    }
    let mut threads: BTreeMap<String, (String, BTreeSet<String>)> = BTreeMap::new();
    let mut stmt = c.prepare("SELECT id, status FROM threads")?;
    for row in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))? {
        let (id, status) = row?;
        threads.insert(id, (status, BTreeSet::new()));
    }
    let mut stmt =
        c.prepare("SELECT thread_id, identity, role FROM thread_participants WHERE active = 1")?;
    for row in stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })? {
        let (t, who, role) = row?;
        if let Some(e) = threads.get_mut(&t) {
            e.1.insert(format!("{who}/{role}"));
        }
    }
    let mut node_keys = Vec::new();
    let mut stmt = c.prepare("SELECT public_key FROM node_keys")?;
    for k in stmt.query_map([], |r| r.get::<_, String>(0))? {
        if let Ok(k) = loom_protocol::keys::public_key_from_any(&k?) {
            node_keys.push(k);
        }
    }
    Ok(NodeView {
        envelopes,
        by_id,
        outbox,
        threads,
        node_keys,
        audit: verify(c).map_err(|e| e.to_string()),
    })
}

fn domain_of(address: &str) -> &str {
    address.rsplit_once('@').map(|(_, d)| d).unwrap_or("")
}

/// Every end-of-run invariant; `(invariant, detail)` in the table's order. Reads through
/// `prober`'s connections (each new read transaction sees the last commit; opening a
/// connection parses the whole schema, so the settle probes' connections are reused).
pub fn check_all(
    shared: &Shared,
    prober: &mut Prober,
    dirs: &BTreeMap<String, PathBuf>,
    permanently_down: &BTreeSet<String>,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut views = BTreeMap::new();
    for (d, dir) in dirs {
        match prober.conn(dir).map(load) {
            Some(Ok(v)) => {
                views.insert(d.clone(), v);
            }
            Some(Err(e)) => out.push(("store-readable".into(), format!("{d}: {e}"))),
            None => out.push((
                "store-readable".into(),
                format!("{d}: no store in {}", dir.display()),
            )),
        }
    }
    let (acks, keys, retracted) = {
        let rec = shared.lock();
        (rec.acks.clone(), rec.keys.clone(), rec.retracted.clone())
    };
    let push = |name: &str, detail: String, out: &mut Vec<(String, String)>| {
        if out.iter().filter(|(n, _)| n == name).count() < MAX_DETAILS {
            out.push((name.into(), detail));
        }
    };

    // acked-durable
    for a in &acks {
        if !views
            .get(&a.node)
            .is_some_and(|v| v.by_id.contains_key(&a.id))
        {
            push(
                "acked-durable",
                format!(
                    "{} acknowledged {} (201) but does not have it",
                    a.node, a.id
                ),
                &mut out,
            );
        }
    }

    // delivered-once-or-failed
    let mut failure_receipts: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for (d, v) in &views {
        let node_id = format!("loom://loom-node@{d}");
        let set = failure_receipts.entry(d.clone()).or_default();
        for (_, e) in &v.envelopes {
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
    for a in &acks {
        let mut remote: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
        for r in &a.to {
            let d = domain_of(r);
            if d != a.node {
                remote.entry(d).or_default().push(r);
            }
        }
        for (dest, recipients) in remote {
            if permanently_down.contains(dest) {
                continue;
            }
            let row = views
                .get(&a.node)
                .and_then(|v| v.outbox.get(&(dest.to_owned(), a.id.clone())));
            let there = views.get(dest).is_some_and(|v| v.by_id.contains_key(&a.id));
            let receipted = recipients.iter().all(|r| {
                failure_receipts
                    .get(&a.node)
                    .is_some_and(|s| s.contains(&(a.id.clone(), (*r).clone())))
            });
            let state = row.map(|(s, _)| s.as_str());
            // Retracted before it left: nothing to deliver and nobody to tell (§20.7).
            let erased = row.is_some_and(|(_, f)| f.as_deref() == Some("erased"))
                && retracted.contains(&a.id);
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
                push("delivered-once-or-failed", v, &mut out);
            }
        }
    }

    // event-seq
    for (d, v) in &views {
        let mut last: BTreeMap<&str, i64> = BTreeMap::new();
        for (id, e) in &v.envelopes {
            let prev = last.get(e.thread.as_str()).copied().unwrap_or(0);
            let meta = e
                .body
                .as_ref()
                .and_then(|b| b.pointer("/meta/event_seq"))
                .and_then(Value::as_i64);
            if e.event_seq != prev + 1 {
                push(
                    "event-seq",
                    format!(
                        "{d}: thread {} envelope {id} has event_seq {} after {prev} (v1.1 §11.6: last + 1)",
                        e.thread, e.event_seq
                    ),
                    &mut out,
                );
            } else if e.body.is_some() && meta != Some(e.event_seq) {
                push(
                    "event-seq",
                    format!(
                        "{d}: envelope {id} stored with event_seq {} but its meta.event_seq is {meta:?} (v1.1 §11.6)",
                        e.event_seq
                    ),
                    &mut out,
                );
            }
            last.insert(e.thread.as_str(), e.event_seq);
        }
    }

    // signatures
    for (d, v) in &views {
        for (id, e) in &v.envelopes {
            let Some(b) = &e.body else { continue };
            let from = b
                .pointer("/from/identity")
                .and_then(Value::as_str)
                .unwrap_or("");
            let candidates: Vec<VerifyingKey> = if let Some(k) = keys.get(from) {
                vec![*k]
            } else if let Some(node) = from.strip_prefix("loom://loom-node@") {
                views
                    .get(node)
                    .map(|n| n.node_keys.clone())
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            let ok = candidates
                .iter()
                .any(|k| loom_protocol::envelope::verify_envelope_signature(b, k).is_ok());
            if !ok {
                push(
                    "signatures",
                    format!(
                        "{d}: envelope {id} from {from} does not verify with the sender's key (v1.1 §7.3)"
                    ),
                    &mut out,
                );
            }
        }
    }

    // audit-chain
    for (d, v) in &views {
        match &v.audit {
            Ok(AuditVerdict::Intact { .. }) => {}
            Ok(AuditVerdict::Broken { seq, reason }) => {
                push(
                    "audit-chain",
                    format!("{d}: audit chain broken at row {seq}: {reason} (v1.1 §25.1)"),
                    &mut out,
                );
            }
            Err(e) => push(
                "audit-chain",
                format!("{d}: cannot read the audit log: {e}"),
                &mut out,
            ),
        }
    }

    // convergence: shared envelopes agree; threads on several nodes agree on their state.
    let mut seen: BTreeMap<&str, (&str, &Stored)> = BTreeMap::new();
    for (d, v) in &views {
        for (id, e) in &v.envelopes {
            match seen.get(id.as_str()) {
                None => {
                    seen.insert(id.as_str(), (d.as_str(), e));
                }
                Some((d0, e0)) => {
                    if e0.sha != e.sha || e0.thread != e.thread || e0.parent != e.parent {
                        push(
                            "convergence",
                            format!(
                                "envelope {id} differs between {d0} and {d} (body hash, thread or parent)"
                            ),
                            &mut out,
                        );
                    }
                }
            }
        }
    }
    // Thread state is a function of the thread's envelopes (v1.1 §10.4, §11): nodes that hold
    // the same operations of a thread agree on its status, nodes that hold the same envelopes
    // agree on its participants too. (A node that joined late or refused an operation holds
    // fewer, and may legitimately differ: §11.5 delivers operations to the participants of
    // the moment, and an operation on a thread unknown to a node is `THREAD_NOT_FOUND`.)
    type Key = (String, BTreeSet<String>);
    let mut by_ops: BTreeMap<Key, (&str, &str)> = BTreeMap::new();
    let mut by_all: BTreeMap<Key, (&str, String)> = BTreeMap::new();
    for (d, v) in &views {
        let mut all: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        let mut ops: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for (id, e) in &v.envelopes {
            all.entry(e.thread.as_str()).or_default().insert(id.clone());
            let o = ops.entry(e.thread.as_str()).or_default();
            if e.kind == "thread_op" {
                o.insert(id.clone());
            }
        }
        for (t, (status, participants)) in &v.threads {
            let Some(all) = all.get(t.as_str()) else {
                continue;
            };
            let ops = ops.get(t.as_str()).cloned().unwrap_or_default();
            let key = (t.clone(), ops);
            match by_ops.get(&key) {
                None => {
                    by_ops.insert(key, (d.as_str(), status.as_str()));
                }
                Some((d0, s0)) if *s0 != status.as_str() => push(
                    "convergence",
                    format!(
                        "thread {t} is {s0} on {d0} but {status} on {d}, though both hold the same {} operations (v1.1 §10.4, §11)",
                        key.1.len()
                    ),
                    &mut out,
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
                Some((d0, p0)) if *p0 != summary => push(
                    "convergence",
                    format!(
                        "thread {t}: participants {p0} on {d0} but {summary} on {d}, though both hold the same {} envelopes (v1.1 §11.2, §11.5)",
                        key.1.len()
                    ),
                    &mut out,
                ),
                Some(_) => {}
            }
        }
    }
    out
}
