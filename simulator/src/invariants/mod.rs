//! The invariants (issue 16 Build 4), checked at quiescence against the stores the nodes
//! left behind (read through [`loom_node::inspect`], never the node's schema) and the record
//! of what the nodes acknowledged; one checker per module, as VOPR keeps them. `skew-window` and `replay-refused` are checked while the run
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
//! | `mail-in-once` | every inbound mail the bridge accepted is exactly one envelope, quarantined exactly when unauthenticated; refused mail is forged and stored nowhere (v1.1 §21.2, §21.5) |
//! | `mail-out-once-or-failed` | per mail recipient of an acknowledged envelope: one message at the outside exchanger, or failed with a `receipt.failed@v1` (`BRIDGE_DELIVERY_FAILED`) to the sender — never both, never neither; a second copy only across a crash of the bridge (v1.1 §21.3, §20.8) |
//! | `history` | a thread listing shows every envelope the node acknowledged to the reader in that thread before the read (read-your-writes, across restarts); two listings of the same envelopes list them in one order (v1.1 §10.3); on every node a reply comes after its parent in the thread's event order exactly when it is not marked `meta.pending_parent` (v1.1 §10.2, §11.6) |
//! | `realtime-stream` | after dedupe by `event_id`, every WebSocket watcher (`[realtime]`) saw every event it may read between its first subscription and the newest it saw, across disconnects and resumes, nothing it may not read, in cursor order per thread (v1.1 §17.1, §17.2, §8.3) |
//! | `storage-recovery` | a node starts again on a healthy disk after any crash, power loss or storage fault, and its store passes SQLite's integrity check (`Inspector::integrity`) |
//! | `agent-tasks` *(`[agents]`)* | every task given reaches a terminal state on every node holding it (declined exactly when beyond the agent's delegation), no task runs twice to completion (stored updates, the agent's runs and journal), no run starts beyond the delegation, every agent envelope carries `from.type` agent, its enrolled chain (the link verifying under the delegator's key) and an action within its leaf scope (v1.1 §13.3, §13.5, §18.2, §18.3) |
//! | `quiescence` | no outbox still holds a queued delivery once the network healed and `settle_secs` passed |

use crate::trace::{Ack, MailRecord, Read, Shared};
use ed25519_dalek::VerifyingKey;
use loom_node::inspect::{Inspector, Snapshot};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod acked_durable;
mod agent_tasks;
mod audit_chain;
mod convergence;
mod delivered_once;
mod event_seq;
mod history;
mod mail_in;
mod mail_out;
mod realtime_stream;
mod signatures;
mod storage;

/// Most details reported per invariant.
const MAX_DETAILS: usize = 3;

/// A cheap look at the world while it settles.
#[derive(Debug, Clone, Default)]
pub struct Probe {
    /// Queued outbox rows on all nodes.
    pub queued: i64,
    /// Row counts that change while anything still happens.
    pub digest: String,
}

/// Read-only handles kept open across probes (opening one parses the whole schema).
#[derive(Debug, Default)]
pub struct Prober {
    stores: BTreeMap<PathBuf, Inspector>,
}

impl Prober {
    /// The read-only handle on the store in `dir`, opened on first use.
    fn store(&mut self, dir: &Path) -> Option<&Inspector> {
        if !self.stores.contains_key(dir)
            && let Some(i) = Inspector::open(dir)
        {
            self.stores.insert(dir.to_path_buf(), i);
        }
        self.stores.get(dir)
    }

    /// Counts queued deliveries and stored envelopes on every node.
    pub fn probe(&mut self, dirs: &[PathBuf]) -> Probe {
        let mut p = Probe::default();
        for d in dirs {
            let Some(i) = self.store(d) else {
                p.digest.push_str("absent;");
                continue;
            };
            let (q, n) = i.counts();
            p.queued += q.max(0);
            if q < 0 {
                p.queued += 1;
            }
            p.digest.push_str(&format!("{q}/{n};"));
        }
        p
    }
}

/// What every checker reads: each node's snapshot (by domain) and the run's record.
pub(crate) struct Run<'a> {
    pub views: BTreeMap<String, Snapshot>,
    pub acks: &'a [Ack],
    pub reads: &'a [Read],
    pub keys: &'a BTreeMap<String, VerifyingKey>,
    pub retracted: &'a BTreeSet<String>,
    pub permanently_down: &'a BTreeSet<String>,
    pub mail: &'a MailRecord,
    pub crashed: &'a BTreeSet<String>,
    pub agents: &'a crate::agents::AgentsRecord,
}

impl Run<'_> {
    /// Every stored envelope that has a body, by node: `(domain, envelope id, sender's
    /// address or "" when the body names none, body)`.
    pub fn stored_envelopes(&self) -> impl Iterator<Item = (&str, &str, &str, &serde_json::Value)> {
        self.views.iter().flat_map(|(d, v)| {
            v.envelopes.iter().filter_map(move |e| {
                let b = e.body.as_ref()?;
                let from = b
                    .pointer("/from/identity")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("");
                Some((d.as_str(), e.id.as_str(), from, b))
            })
        })
    }
}

/// The violations found, at most [`MAX_DETAILS`] per invariant, in the order found.
#[derive(Debug, Default)]
pub(crate) struct Found(Vec<(String, String)>);

impl Found {
    /// Records `detail` under `name` unless it already has [`MAX_DETAILS`].
    pub fn push(&mut self, name: &str, detail: String) {
        if self.0.iter().filter(|(n, _)| n == name).count() < MAX_DETAILS {
            self.0.push((name.into(), detail));
        }
    }
}

/// The domain of an address.
pub(crate) fn domain_of(address: &str) -> &str {
    address.rsplit_once('@').map(|(_, d)| d).unwrap_or("")
}

/// Every end-of-run invariant; `(invariant, detail)` in the table's order. Reads through
/// `prober`'s handles (each new read transaction sees the last commit; opening a handle
/// parses the whole schema, so the settle probes' handles are reused).
pub fn check_all(
    shared: &Shared,
    prober: &mut Prober,
    dirs: &BTreeMap<String, PathBuf>,
    permanently_down: &BTreeSet<String>,
) -> Vec<(String, String)> {
    let mut found = Found::default();
    let mut views = BTreeMap::new();
    for (d, dir) in dirs {
        if let Some(store) = prober.store(dir) {
            storage::check(d, store, &mut found);
        }
        match prober.store(dir).map(Inspector::snapshot) {
            Some(Ok(v)) => {
                views.insert(d.clone(), v);
            }
            Some(Err(e)) => found.0.push(("store-readable".into(), format!("{d}: {e}"))),
            None => found.0.push((
                "store-readable".into(),
                format!("{d}: no store in {}", dir.display()),
            )),
        }
    }
    let watchers = shared.lock().watchers.clone();
    for w in &watchers {
        let store = dirs.get(&w.node).and_then(|d| prober.store(d));
        realtime_stream::check(w, store, &mut found);
    }
    let (acks, reads, keys, retracted, mail, crashed, agents) = {
        let rec = shared.lock();
        (
            rec.acks.clone(),
            rec.reads.clone(),
            rec.keys.clone(),
            rec.retracted.clone(),
            rec.mail.clone(),
            rec.crashed.clone(),
            rec.agents.clone(),
        )
    };
    let run = Run {
        views,
        acks: &acks,
        reads: &reads,
        keys: &keys,
        retracted: &retracted,
        permanently_down,
        mail: &mail,
        crashed: &crashed,
        agents: &agents,
    };
    acked_durable::check(&run, &mut found);
    delivered_once::check(&run, &mut found);
    event_seq::check(&run, &mut found);
    signatures::check(&run, &mut found);
    audit_chain::check(&run, &mut found);
    convergence::check(&run, &mut found);
    mail_in::check(&run, &mut found);
    mail_out::check(&run, &mut found);
    history::check(&run, &mut found);
    agent_tasks::check(&run, &mut found);
    found.0
}
