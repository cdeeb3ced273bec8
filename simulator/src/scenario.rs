//! Scenario files (TOML, `simulator/scenarios/*.toml`): the world (nodes, users), the
//! federation timing the nodes run with, the workload mix and the fault schedule. Unknown
//! keys are errors that name the key.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The scenarios shipped with the simulator, by name (compiled in, so the binary runs
/// anywhere).
pub const SHIPPED: [(&str, &str); 10] = [
    (
        "three-node-federation",
        include_str!("../scenarios/three-node-federation.toml"),
    ),
    (
        "partition-heal",
        include_str!("../scenarios/partition-heal.toml"),
    ),
    (
        "crash-restart",
        include_str!("../scenarios/crash-restart.toml"),
    ),
    (
        "ttl-expiry-72h",
        include_str!("../scenarios/ttl-expiry-72h.toml"),
    ),
    ("clock-skew", include_str!("../scenarios/clock-skew.toml")),
    (
        "email-bridge",
        include_str!("../scenarios/email-bridge.toml"),
    ),
    (
        "storage-faults",
        include_str!("../scenarios/storage-faults.toml"),
    ),
    ("clock-jumps", include_str!("../scenarios/clock-jumps.toml")),
    (
        "websocket-resume",
        include_str!("../scenarios/websocket-resume.toml"),
    ),
    (
        "agents-on-two-nodes",
        include_str!("../scenarios/agents-on-two-nodes.toml"),
    ),
];

/// One simulation setup.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name used in replay commands.
    pub name: String,
    /// What the scenario proves (one paragraph).
    #[serde(default)]
    pub description: String,
    /// Node domains (each is a turmoil host named after its domain).
    pub nodes: Vec<String>,
    /// Users registered on every node.
    #[serde(default = "two")]
    pub users_per_node: usize,
    /// Simulated time per turmoil step, in milliseconds.
    #[serde(default = "ten")]
    pub tick_ms: u64,
    /// Upper bound of simulated network latency per message, in milliseconds.
    #[serde(default = "fifty")]
    pub max_latency_ms: u64,
    /// Simulated seconds before the workload starts (registration and login happen then).
    #[serde(default = "five")]
    pub setup_secs: u64,
    /// Longest simulated time allowed after the workload and the faults ended for every
    /// outbox to drain (quiescence); a queued delivery after it is a violation.
    pub settle_secs: u64,
    /// Federation timing of every node.
    #[serde(default)]
    pub federation: Federation,
    /// What the clients do.
    pub workload: Workload,
    /// Faults.
    #[serde(default)]
    pub faults: Faults,
    /// Host slots (`[[hosts]]`): extra hosts beside the nodes and their clients — the
    /// bridge, an external mail host, agents — filled at run time by a
    /// [`crate::hosts::HostSlot`] of the same name; scripted link faults may name them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<SlotDecl>,
    /// `[mail]`: one node runs the email bridge (v1.1 §21) and an outside mail host sends it
    /// mail and receives its outbound mail ([`crate::mail`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail: Option<Mail>,
    /// `[realtime]`: WebSocket watchers (v1.1 §17) that disconnect and resume under the
    /// faults ([`crate::realtime`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime: Option<Realtime>,
    /// `[agents]`: a process-runner and a PLSP agent take tasks from a human under the
    /// faults ([`crate::agents`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<crate::agents::Agents>,
    /// How the scenario was named when loaded ([`Scenario::load`]): a shipped name or the
    /// file path; replay commands use it. Not part of the file.
    #[serde(skip)]
    pub source: Option<String>,
}

/// `[realtime]`: WebSocket watchers. Each is a turmoil host logged in as one of its node's
/// users, subscribed to `all_threads`; it drops its connection after a random time, waits, and
/// resumes from the last `event_id` it saw (v1.1 §17.1), until `watch_secs` of simulated
/// time have passed since the start.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Realtime {
    /// Watchers per node (the node's first users, in order).
    pub watchers_per_node: usize,
    /// How long one connection lives before the watcher drops it, in milliseconds
    /// (uniform in the range).
    pub session_ms: [u64; 2],
    /// Pause between a drop and the next connection, in milliseconds (uniform).
    pub pause_ms: [u64; 2],
    /// Simulated seconds from the start after which a watcher stops.
    pub watch_secs: u64,
}

/// `[federation]`: the node's `FederationConfig` timing (v1.1 §15.6).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Federation {
    /// Store-and-forward TTL in seconds.
    pub ttl_secs: u64,
    /// First retry delay in milliseconds.
    pub retry_base_ms: u64,
    /// Longest retry delay in milliseconds.
    pub retry_max_ms: u64,
    /// Timeout of one outbound request in milliseconds.
    pub request_timeout_ms: u64,
    /// Longest sleep of a node's outbox worker between passes (`worker_idle_ms` of the
    /// node's `FederationConfig`; the node wakes earlier when a row is queued or falls due).
    pub worker_idle_ms: u64,
    /// Least time between two purges of a node's expired nonces (`nonce_purge_ms`).
    pub nonce_purge_ms: u64,
    /// Seconds between a node's signed audit checkpoints (`audit_checkpoint_secs`).
    pub audit_checkpoint_secs: u64,
}

impl Default for Federation {
    fn default() -> Self {
        Federation {
            ttl_secs: 72 * 3600,
            retry_base_ms: 500,
            retry_max_ms: 10_000,
            request_timeout_ms: 3_000,
            worker_idle_ms: 1_000,
            nonce_purge_ms: 60_000,
            audit_checkpoint_secs: 60,
        }
    }
}

/// `[workload]`: per client host (one per node), drawn from the seeded RNG.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Actions each node's client performs.
    pub actions: usize,
    /// Mean simulated gap between two actions, in milliseconds (uniform in 0..2×mean).
    pub mean_gap_ms: u64,
    /// Share of new messages addressed to a user of another node.
    pub remote_ratio: f64,
    /// Share of actions that reply to an envelope the user can read (building a DAG).
    pub reply_ratio: f64,
    /// Share of actions that are thread operations (v1.1 §11) by the owner of a thread the
    /// user started: add a participant (local or remote), remove one it added, lock, reopen.
    #[serde(default)]
    pub op_ratio: f64,
    /// Share of actions that retract one of the user's own messages (`DELETE
    /// /v1/envelopes/{id}`, v1.1 §20.7, within the node's retract window).
    #[serde(default)]
    pub retract_ratio: f64,
    /// Share of actions that use a capability token (v1.1 §12): the owner of a thread
    /// issues one (`POST /v1/capabilities`, §16.4) granting `add_participant` to a
    /// participant of the thread, local or remote; the holder's next such action adds a
    /// participant with it through its own node (§12.4), which federates the operation.
    #[serde(default)]
    pub capability_ratio: f64,
    /// Share of actions sent by an agent identity (one per node, registered with a §6.4
    /// delegation from the node's first user) under a §13 delegation chain: a new message
    /// to a local or remote user, carrying `from.delegation_chain`.
    #[serde(default)]
    pub agent_ratio: f64,
    /// Share of issued capability tokens that are `single_use` (§12.1): after the holder's
    /// first accepted use, its next capability action uses the token again, which the node
    /// must refuse (§12.3, op `capability.reuse`).
    #[serde(default)]
    pub single_use_ratio: f64,
    /// Share of capability actions in which an owner revokes a token it issued that its
    /// holder has not used yet (`DELETE /v1/capabilities/{id}` with the signed
    /// `capability.revoked@v1` operation, §12.3, §16.4); the holder still tries it, which
    /// must be refused. Later tokens on the thread carry the advanced `cap_epoch`.
    #[serde(default)]
    pub revoke_ratio: f64,
    /// Share of actions after which the user also lists one of its threads on its node
    /// (`GET /v1/threads/{id}/envelopes`, v1.1 §16.2): the `history` invariant checks each
    /// listing against what the node acknowledged and against the other listings.
    #[serde(default)]
    pub read_ratio: f64,
}

impl Workload {
    /// Whether the action mix draws the special-action number (operations, retractions,
    /// capabilities, agents); a mix without any keeps the older random stream.
    pub fn has_special(&self) -> bool {
        self.op_ratio + self.retract_ratio + self.capability_ratio + self.agent_ratio > 0.0
    }
}

/// `[mail]`: the email bridge and the outside world's mail host.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Mail {
    /// The node that runs the bridge (SMTP on port 25; its domain is the mail domain).
    pub node: String,
    /// Messages the outside host sends to the bridge's users.
    pub inbound: usize,
    /// Envelopes a user of the node sends to mail recipients.
    pub outbound: usize,
    /// Mean simulated gap between two of the outside host's actions, ms (uniform 0..2×).
    #[serde(default = "mail_gap")]
    pub mean_gap_ms: u64,
    /// Share of inbound mail forged: From the `p=reject` domain, sent from elsewhere.
    #[serde(default)]
    pub forged_ratio: f64,
    /// Share of inbound mail from a domain that publishes no records.
    #[serde(default)]
    pub unknown_ratio: f64,
    /// Share of outbound recipients the outside host refuses (`550`).
    #[serde(default)]
    pub refused_ratio: f64,
    /// SMTP attempts the outside host makes per inbound message.
    #[serde(default = "mail_attempts")]
    pub send_attempts: u32,
    /// The bridge's first retry delay (doubling), seconds.
    #[serde(default = "mail_retry")]
    pub retry_base_secs: u64,
    /// The bridge's attempts per outbound recipient.
    #[serde(default = "mail_attempts")]
    pub max_attempts: u32,
}

fn mail_gap() -> u64 {
    1500
}
fn mail_attempts() -> u32 {
    8
}
fn mail_retry() -> u64 {
    2
}

/// One `[[hosts]]` entry: a host slot the scenario expects.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SlotDecl {
    /// Host name (a DNS-like name: lowercase letters, digits, `-` and `.`; not a node
    /// domain, not `client.*`, not `replayer`).
    pub name: String,
    /// What the slot is for (documentation only, e.g. `bridge`, `mail`, `agent`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub role: String,
    /// A run without a host for this slot proceeds without it instead of failing.
    #[serde(default, skip_serializing_if = "is_false")]
    pub optional: bool,
}

/// `[faults]`: a seeded random schedule plus scripted faults.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Faults {
    /// Random link partitions between two nodes during the workload.
    pub partitions: usize,
    /// Random link holds (messages queued, not lost) between two nodes.
    pub holds: usize,
    /// Random node crashes, each followed by a restart.
    pub crashes: usize,
    /// How long a random fault lasts, `[min, max]` seconds.
    pub duration_secs: [u64; 2],
    /// Static clock skew per node, drawn uniformly in `[-max, +max]` seconds.
    pub skew_max_secs: u64,
    /// Replays of recorded federation deliveries (a network duplicate; §15.3 nonce cache).
    pub replays: usize,
    /// Random slow links between two nodes (every message on the link takes a fixed
    /// latency drawn from `slow_ms`), each restored after `duration_secs`.
    pub slow_links: usize,
    /// Latency of a random slow link, `[min, max]` milliseconds.
    pub slow_ms: [u64; 2],
    /// A crash is a power loss: each write no `fsync` made durable is kept, lost or torn,
    /// as the seed draws (`loom_node::sim::disk`). Otherwise a crash kills only the process
    /// and every write stays.
    pub power_loss: bool,
    /// Random windows (`duration_secs` long) in which every `fsync` of one node's store
    /// fails with EIO.
    pub fsync_errors: usize,
    /// Random windows (`duration_secs` long) in which one node's disk is full: a write
    /// that would grow a file of its store fails with ENOSPC.
    pub disk_full: usize,
    /// Random clock jumps on running nodes: a node's clock steps forward or back by a
    /// magnitude drawn from `jump_secs` and steps back `duration_secs` later (an NTP step
    /// and its correction); the node's clients share its clock.
    pub clock_jumps: usize,
    /// Magnitude of a clock jump, `[min, max]` seconds.
    pub jump_secs: [u64; 2],
    /// Scripted faults.
    pub script: Vec<Scripted>,
}

/// One scripted fault.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scripted {
    /// Seconds after the workload started.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub at_secs: u64,
    /// Milliseconds after the workload started (instead of `at_secs`; `loom-sim shrink`
    /// prints this form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    /// `partition`, `repair`, `hold`, `release`, `slow`, `fast`, `crash`, `restart`, `skew`,
    /// `jump`, `replay`, `fsync-fail`, `fsync-ok`, `disk-full`, `disk-free`.
    pub kind: String,
    /// The node (crash, restart, skew) or one end of the link (empty for `replay`).
    #[serde(default)]
    pub a: String,
    /// The other end of the link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<String>,
    /// The skew or the jump in seconds (`skew`, `jump`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub secs: i64,
    /// Milliseconds: the skew or jump (`skew`, `jump`, instead of `secs`) or the link
    /// latency (`slow`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ms: i64,
    /// Not undone when the network heals (e.g. a peer that never comes back).
    #[serde(default, skip_serializing_if = "is_false")]
    pub permanent: bool,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

impl Scripted {
    /// When, in ms after the workload started.
    pub fn at(&self) -> u64 {
        self.at_ms.unwrap_or(self.at_secs.saturating_mul(1000))
    }
}

fn two() -> usize {
    2
}
fn ten() -> u64 {
    10
}
fn fifty() -> u64 {
    50
}
fn five() -> u64 {
    5
}

impl Scenario {
    /// Parses and checks a scenario.
    pub fn from_toml(text: &str) -> Result<Scenario, String> {
        let s: Scenario = toml::from_str(text).map_err(|e| format!("scenario: {e}"))?;
        s.check()?;
        Ok(s)
    }

    /// A shipped scenario by name, or a TOML file by path.
    pub fn load(name_or_path: &str) -> Result<Scenario, String> {
        if let Some((_, text)) = SHIPPED.iter().find(|(n, _)| *n == name_or_path) {
            return Scenario::from_toml(text);
        }
        let path = Path::new(name_or_path);
        if path.exists() {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let mut s = Scenario::from_toml(&text)?;
            s.source = Some(name_or_path.to_owned());
            return Ok(s);
        }
        let names: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
        Err(format!(
            "no scenario {name_or_path:?}: give a file path or one of {}",
            names.join(", ")
        ))
    }

    /// How a replay command names this scenario: the path it was loaded from, else its name.
    pub fn reference(&self) -> &str {
        self.source.as_deref().unwrap_or(&self.name)
    }

    /// Checks what serde cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.nodes.is_empty() {
            return Err("scenario: nodes must name at least one domain".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        for n in &self.nodes {
            if !seen.insert(n) {
                return Err(format!("scenario: node {n:?} is listed twice"));
            }
        }
        if self.users_per_node == 0 {
            return Err("scenario: users_per_node must be at least 1".into());
        }
        if let Some(a) = &self.agents {
            for (field, n) in [
                ("agents.human_node", &a.human_node),
                ("agents.process_node", &a.process_node),
                ("agents.plsp_node", &a.plsp_node),
            ] {
                if !self.nodes.contains(n) {
                    return Err(format!("scenario: {field} {n:?} is not one of nodes"));
                }
            }
            if a.tasks == 0 {
                return Err("scenario: agents.tasks must be at least 1".into());
            }
            if !(0.0..=1.0).contains(&a.beyond_scope_ratio) {
                return Err(format!(
                    "scenario: agents.beyond_scope_ratio must be within 0..=1, not {}",
                    a.beyond_scope_ratio
                ));
            }
            if a.gap_ms[0] > a.gap_ms[1] {
                return Err("scenario: agents.gap_ms must be [min, max] with min <= max".into());
            }
        }
        if self.tick_ms == 0 {
            return Err("scenario: tick_ms must be at least 1".into());
        }
        for (field, v) in [
            ("workload.remote_ratio", self.workload.remote_ratio),
            ("workload.reply_ratio", self.workload.reply_ratio),
            ("workload.op_ratio", self.workload.op_ratio),
            ("workload.retract_ratio", self.workload.retract_ratio),
            ("workload.capability_ratio", self.workload.capability_ratio),
            ("workload.agent_ratio", self.workload.agent_ratio),
            ("workload.single_use_ratio", self.workload.single_use_ratio),
            ("workload.revoke_ratio", self.workload.revoke_ratio),
            ("workload.read_ratio", self.workload.read_ratio),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("scenario: {field} must be within 0..=1, not {v}"));
            }
        }
        if self.workload.op_ratio + self.workload.retract_ratio > 1.0 {
            return Err(
                "scenario: workload.op_ratio + workload.retract_ratio must be at most 1".into(),
            );
        }
        if self.faults.slow_ms[0] > self.faults.slow_ms[1] {
            return Err("scenario: faults.slow_ms must be [min, max] with min <= max".into());
        }
        if self.faults.duration_secs[0] > self.faults.duration_secs[1] {
            return Err("scenario: faults.duration_secs must be [min, max] with min <= max".into());
        }
        if self.faults.jump_secs[0] > self.faults.jump_secs[1] {
            return Err("scenario: faults.jump_secs must be [min, max] with min <= max".into());
        }
        if self.faults.clock_jumps > 0 && self.faults.jump_secs[1] == 0 {
            return Err(
                "scenario: faults.clock_jumps needs faults.jump_secs = [min, max] with max > 0"
                    .into(),
            );
        }
        if let Some(m) = &self.mail {
            if !self.nodes.contains(&m.node) {
                return Err(format!(
                    "scenario: mail.node {:?} is not one of nodes",
                    m.node
                ));
            }
            for (field, v) in [
                ("mail.forged_ratio", m.forged_ratio),
                ("mail.unknown_ratio", m.unknown_ratio),
                ("mail.refused_ratio", m.refused_ratio),
            ] {
                if !(0.0..=1.0).contains(&v) {
                    return Err(format!("scenario: {field} must be within 0..=1, not {v}"));
                }
            }
            if m.forged_ratio + m.unknown_ratio > 1.0 {
                return Err(
                    "scenario: mail.forged_ratio + mail.unknown_ratio must be at most 1".into(),
                );
            }
            if m.send_attempts == 0 || m.max_attempts == 0 {
                return Err(
                    "scenario: mail.send_attempts and mail.max_attempts must be at least 1".into(),
                );
            }
        }
        let mut slots = std::collections::BTreeSet::new();
        for (i, h) in self.hosts.iter().enumerate() {
            let n = h.name.as_str();
            let well_formed = !n.is_empty()
                && n.len() <= 253
                && n.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'
                })
                && !n.starts_with(['.', '-'])
                && !n.ends_with(['.', '-'])
                && !n.contains("..");
            if !well_formed {
                return Err(format!(
                    "scenario: hosts[{i}].name {n:?} is not a host name (lowercase letters, digits, '-' and '.', no empty label)"
                ));
            }
            if self.nodes.iter().any(|d| d == n) {
                return Err(format!(
                    "scenario: hosts[{i}].name {n:?} is a node domain; a slot needs its own host name"
                ));
            }
            if n.starts_with("client.") || n == "replayer" {
                return Err(format!(
                    "scenario: hosts[{i}].name {n:?} is reserved (client.* and replayer are the simulator's own hosts)"
                ));
            }
            if !slots.insert(n) {
                return Err(format!("scenario: hosts[{i}].name {n:?} is declared twice"));
            }
        }
        // `[agents]` hosts can be crashed and restarted (a shrunk agents seed names them).
        let agent_hosts: Vec<String> = self
            .agents
            .as_ref()
            .map(|a| vec![crate::agents::process_host(a), crate::agents::plsp_host(a)])
            .unwrap_or_default();
        for (i, f) in self.faults.script.iter().enumerate() {
            let link_kind = matches!(
                f.kind.as_str(),
                "partition" | "repair" | "hold" | "release" | "slow" | "fast"
            );
            let process_kind = matches!(f.kind.as_str(), "crash" | "restart");
            let node = |n: &str| {
                if self.nodes.iter().any(|d| d == n)
                    || (link_kind && slots.contains(n))
                    || (process_kind && agent_hosts.iter().any(|h| h == n))
                {
                    Ok(())
                } else if slots.contains(n) {
                    Err(format!(
                        "scenario: faults.script[{i}] ({}) names host slot {n:?}; only link faults may name a slot, {} needs a node",
                        f.kind, f.kind
                    ))
                } else {
                    Err(format!(
                        "scenario: faults.script[{i}] names unknown node {n:?}"
                    ))
                }
            };
            if f.kind != "replay" {
                node(&f.a)?;
            }
            match f.kind.as_str() {
                "slow" if f.ms <= 0 => {
                    return Err(format!(
                        "scenario: faults.script[{i}] (slow) needs ms > 0, the link latency"
                    ));
                }
                "partition" | "repair" | "hold" | "release" | "slow" | "fast" => {
                    let b = f.b.as_deref().ok_or_else(|| {
                        format!("scenario: faults.script[{i}] ({}) needs b", f.kind)
                    })?;
                    node(b)?;
                }
                "crash" | "restart" | "skew" | "jump" | "replay" | "fsync-fail" | "fsync-ok"
                | "disk-full" | "disk-free" => {}
                other => {
                    return Err(format!(
                        "scenario: faults.script[{i}].kind {other:?} is not one of partition, repair, hold, release, slow, fast, crash, restart, skew, jump, replay, fsync-fail, fsync-ok, disk-full, disk-free"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_scenario_parses() {
        for (name, text) in SHIPPED {
            let s = Scenario::from_toml(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(s.name, name);
            assert!(!s.description.is_empty(), "{name} says what it proves");
        }
    }

    #[test]
    fn unknown_keys_and_bad_faults_are_named() {
        let base = SHIPPED[0].1;
        let e = Scenario::from_toml(&format!("{base}\nbogus = 1\n")).unwrap_err();
        assert!(e.contains("bogus"), "{e}");
        let e = Scenario::from_toml(&format!(
            "{base}\n[[faults.script]]\nat_secs = 1\nkind = \"melt\"\na = \"a.test\"\n"
        ))
        .unwrap_err();
        assert!(e.contains("melt"), "{e}");
        let e = Scenario::from_toml(&format!(
            "{base}\n[[faults.script]]\nat_secs = 1\nkind = \"crash\"\na = \"z.test\"\n"
        ))
        .unwrap_err();
        assert!(e.contains("z.test"), "{e}");
    }

    #[test]
    fn agents_are_checked_and_their_hosts_can_be_crashed_by_script() {
        let agents = include_str!("../scenarios/agents-on-two-nodes.toml");
        let crash = "[[faults.script]]\nat_secs = 1\nkind = \"crash\"\na = \"runner.b.test\"\n";
        let s = Scenario::from_toml(&format!("{agents}\n{crash}")).unwrap();
        assert_eq!(s.faults.script.len(), 1);
        // Only crash and restart may name an agent host, and only in a scenario with agents.
        let e = Scenario::from_toml(&format!("{}\n{crash}", SHIPPED[0].1)).unwrap_err();
        assert!(e.contains("runner.b.test"), "{e}");
        let skew =
            "[[faults.script]]\nat_secs = 1\nkind = \"skew\"\na = \"runner.b.test\"\nsecs = 5\n";
        let e = Scenario::from_toml(&format!("{agents}\n{skew}")).unwrap_err();
        assert!(e.contains("runner.b.test"), "{e}");
        for (from, to, field) in [
            (
                "human_node = \"a.test\"",
                "human_node = \"c.test\"",
                "agents.human_node",
            ),
            ("tasks = 6", "tasks = 0", "agents.tasks"),
            (
                "beyond_scope_ratio = 0.34",
                "beyond_scope_ratio = 1.5",
                "agents.beyond_scope_ratio",
            ),
            (
                "gap_ms = [500, 3000]",
                "gap_ms = [3000, 500]",
                "agents.gap_ms",
            ),
        ] {
            let e = Scenario::from_toml(&agents.replace(from, to)).unwrap_err();
            assert!(e.contains(field), "{e} should name {field}");
        }
    }

    #[test]
    fn host_slots_are_checked_with_the_field_named() {
        let base = SHIPPED[0].1;
        let with = |hosts: &str| Scenario::from_toml(&format!("{base}\n{hosts}"));
        let ok = with(
            "[[hosts]]\nname = \"bridge.test\"\nrole = \"bridge\"\n[[hosts]]\nname = \"mail.test\"\noptional = true\n",
        )
        .unwrap();
        assert_eq!(ok.hosts.len(), 2);
        assert_eq!(ok.hosts[0].role, "bridge");
        assert!(ok.hosts[1].optional);
        for (hosts, needle) in [
            (
                "[[hosts]]\nname = \"Bridge!\"\n",
                "hosts[0].name \"Bridge!\" is not a host name",
            ),
            (
                "[[hosts]]\nname = \"\"\n",
                "hosts[0].name \"\" is not a host name",
            ),
            (
                "[[hosts]]\nname = \"a.test\"\n",
                "hosts[0].name \"a.test\" is a node domain",
            ),
            (
                "[[hosts]]\nname = \"client.x\"\n",
                "hosts[0].name \"client.x\" is reserved",
            ),
            (
                "[[hosts]]\nname = \"b.x\"\n[[hosts]]\nname = \"b.x\"\n",
                "hosts[1].name \"b.x\" is declared twice",
            ),
            ("[[hosts]]\nnom = \"b.x\"\n", "nom"),
            (
                "[[hosts]]\nname = \"b.x\"\n[[faults.script]]\nat_secs = 1\nkind = \"crash\"\na = \"b.x\"\n",
                "only link faults may name a slot",
            ),
        ] {
            let e = with(hosts).unwrap_err();
            assert!(e.contains(needle), "{hosts}: {e}");
        }
        // A link fault may name a declared slot, not an undeclared host.
        with("[[hosts]]\nname = \"b.x\"\n[[faults.script]]\nat_secs = 1\nkind = \"slow\"\na = \"a.test\"\nb = \"b.x\"\nms = 300\n").unwrap();
        let e = with("[[faults.script]]\nat_secs = 1\nkind = \"slow\"\na = \"a.test\"\nb = \"b.x\"\nms = 300\n").unwrap_err();
        assert!(e.contains("unknown node \"b.x\""), "{e}");
    }
}
