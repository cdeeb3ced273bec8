//! One run (issue 16 Build 1, 3, 5): the world of node hosts, client hosts and the replay
//! host on one turmoil simulation, driven step by step so the fault schedule lands at exact
//! simulated times; then the network heals, the world runs until every outbox is drained
//! (quiescence) and the invariants are checked against the stores the nodes left behind.
//!
//! **Durable stores.** Each node's store is a directory the world creates (on `/dev/shm`
//! when present: SQLite's fsyncs cost nothing there) and removes after the run. A crash
//! (`Sim::crash`) drops the host's software and with it the node's connections; what was
//! committed is in the directory, and a restart (`Sim::bounce`) opens it again — the same
//! thing `loom-node --data DIR` does after a kill.

use crate::clock::SkewClock;
use crate::derive_seed;
use crate::dial::{Topology, TracingDial};
use crate::faults::{Fault, Scheduled, schedule};
use crate::invariants;
use crate::scenario::Scenario;
use crate::trace::{Shared, Violation, trace_hash};
use crate::workload::{ClientPlan, PORT, run_client, run_replayer};
use loom_node::config::{FederationConfig, RateLimits};
use loom_node::sim::disk;
use loom_node::{Env, Node, NodeConfig, Storage};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The rules the nodes run: the specification, or deliberate defects (`From<Quirks>`, with
/// the `quirks` feature).
#[derive(Clone)]
pub struct NodeRules(pub Arc<dyn loom_node::rules::NodeRules>);

impl Default for NodeRules {
    fn default() -> Self {
        NodeRules(Arc::new(loom_node::rules::Spec))
    }
}

impl std::fmt::Debug for NodeRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("NodeRules").field(&self.0.names()).finish()
    }
}

#[cfg(feature = "quirks")]
impl From<loom_node::Quirks> for NodeRules {
    fn from(quirks: loom_node::Quirks) -> Self {
        NodeRules(Arc::new(loom_node::quirks::QuirkNode::new(quirks)))
    }
}

/// How a run is made.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The rules the nodes run (deliberate defects only with the `quirks` feature).
    pub rules: NodeRules,
    /// Keep the full trace in the report (otherwise only its hash and length).
    pub keep_trace: bool,
    /// Run this fault schedule instead of the one the seed draws (`loom-sim shrink`).
    pub schedule: Option<Vec<Scheduled>>,
    /// Extra hosts beside the nodes and their clients ([`crate::hosts`]).
    pub hosts: Vec<crate::hosts::HostSlot>,
    /// Deliberate defects of the agents (`[agents]`; [`crate::agents`], feature `quirks`).
    pub agent_quirks: Vec<String>,
}

/// What a run found.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Scenario name.
    pub scenario: String,
    /// Seed.
    pub seed: u64,
    /// Violations, first one first.
    pub violations: Vec<Violation>,
    /// Hex SHA-256 of the JSONL trace.
    pub trace_hash: String,
    /// Number of trace lines.
    pub trace_lines: usize,
    /// The trace (when asked for).
    pub trace: Option<String>,
    /// Simulated milliseconds the run covered.
    pub simulated_ms: u64,
    /// turmoil steps.
    pub steps: u64,
    /// Envelopes acknowledged by the nodes.
    pub acknowledged: usize,
    /// The scenario as a replay command names it (its file path, or the shipped name).
    pub scenario_ref: String,
    /// Names of the quirks the nodes ran with (`--quirk NAME` each).
    pub quirks: Vec<String>,
    /// Whether the run used a fault schedule given in [`RunOptions::schedule`] instead of
    /// the seed's (a shrink step): the replay command then reproduces the seed's own
    /// schedule, not this one (`loom-sim shrink` writes a scenario that does).
    pub custom_schedule: bool,
}

impl RunReport {
    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }

    /// The command that replays this run: the scenario as it was loaded (a file path or a
    /// shipped name), the seed, and `--features quirks` with every `--quirk` the nodes ran
    /// with.
    pub fn replay_command(&self) -> String {
        replay_command(&self.scenario_ref, self.seed, &self.quirks)
    }
}

/// The command that replays `seed` of `scenario` (a shipped name or a file path) with the
/// quirks named in `quirks`.
pub fn replay_command(scenario: &str, seed: u64, quirks: &[String]) -> String {
    let q: String = quirks.iter().map(|q| format!(" --quirk {q}")).collect();
    format!(
        "cargo run --release -p loom-sim{} -- run --scenario {scenario} --seed {seed}{q} --trace trace-{seed}.jsonl",
        if quirks.is_empty() {
            ""
        } else {
            " --features quirks"
        }
    )
}

static RUN_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A scratch directory for one run's stores, removed on drop.
#[derive(Debug)]
struct Scratch(PathBuf);

impl Scratch {
    fn new(seed: u64) -> Scratch {
        let base = crate::template::scratch_base();
        let n = RUN_COUNTER.fetch_add(1, Ordering::Relaxed);
        Scratch(base.join(format!("loom-sim-{}-{n}-{seed}", std::process::id())))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The host name of a node's client.
fn client_host(domain: &str) -> String {
    format!("client.{domain}")
}

struct NodeSlot {
    dir: PathBuf,
    /// `dir` as the simulated disk knows it ([`disk::attach`]).
    disk: PathBuf,
    skew: Arc<AtomicI64>,
}

/// Stops modelling the run's disks when the run ends, however it ends.
#[derive(Default)]
struct Attached(Vec<PathBuf>);

impl Drop for Attached {
    fn drop(&mut self) {
        for d in &self.0 {
            disk::detach(d);
        }
    }
}

fn node_config(
    s: &Scenario,
    domain: &str,
    dir: PathBuf,
    peers: BTreeMap<String, String>,
    bridge: Option<loom_node::config::BridgeConfig>,
) -> NodeConfig {
    NodeConfig {
        bridge,
        domain: domain.into(),
        storage: Storage::Dir(dir),
        rate_limits: RateLimits::unlimited(),
        federation: FederationConfig {
            peers,
            allow_private_http: true,
            ttl_secs: s.federation.ttl_secs,
            retry_base_ms: s.federation.retry_base_ms,
            retry_max_ms: s.federation.retry_max_ms,
            request_timeout_ms: s.federation.request_timeout_ms,
            worker_idle_ms: s.federation.worker_idle_ms,
            nonce_purge_ms: s.federation.nonce_purge_ms,
            ..FederationConfig::default()
        },
        audit_checkpoint_secs: s.federation.audit_checkpoint_secs,
        ..NodeConfig::default()
    }
}

/// Everything a node host needs to boot (and boot again after a crash): turmoil calls the
/// host's closure on every start, each time with a clone of this.
#[derive(Clone)]
struct NodeHostSpec {
    seed: u64,
    domain: String,
    dir: PathBuf,
    /// `dir` as the simulated disk knows it.
    disk: PathBuf,
    skew: Arc<AtomicI64>,
    scenario: Scenario,
    shared: Shared,
    topology: Arc<RwLock<Topology>>,
    /// Every node's base URL by domain (filled in once all hosts are placed).
    peers: Arc<RwLock<BTreeMap<String, String>>>,
    rules: NodeRules,
    /// Boots so far (each draws fresh randomness, as a real start-up would).
    boots: Arc<AtomicU64>,
    /// `[bridge]` for the mail scenario's bridge node (filled once the outside hosts have
    /// their addresses).
    bridge: Arc<RwLock<Option<loom_node::config::BridgeConfig>>>,
}

impl NodeHostSpec {
    /// One boot of the node: its config and environment, then serving until the host stops.
    async fn boot(self) -> turmoil::Result {
        let d = self.domain;
        let boot = self.boots.fetch_add(1, Ordering::Relaxed);
        let peers: BTreeMap<String, String> = self
            .peers
            .read()
            .map(|p| {
                p.iter()
                    .filter(|(k, _)| **k != d)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let bridge = self.bridge.read().ok().and_then(|b| b.clone());
        let bridged = bridge.is_some();
        let config = node_config(&self.scenario, &d, self.dir, peers, bridge);
        let faulty = disk::mode(&self.disk) != disk::Mode::default();
        // Each boot draws fresh randomness, as a real start-up would (OS entropy).
        let env = Env::new(
            Arc::new(SkewClock::new(self.skew)),
            derive_seed(self.seed, &format!("node/{d}/{boot}")),
        );
        let dial = TracingDial {
            node: d.clone(),
            shared: self.shared.clone(),
            topology: self.topology,
        };
        let node = match Node::builder(config, env)
            .rules(self.rules.0)
            .dial(Arc::new(dial))
            .build()
        {
            Ok(node) => node,
            Err(e) => {
                // Refusing to start on a failing disk is allowed (the controller starts the
                // node again once the disk is healthy); on a healthy disk it means the
                // store was left in a state the node cannot open (issue 36, Build 8).
                let mut rec = self.shared.lock();
                rec.line(
                    "boot-refused",
                    json!({"node": d, "boot": boot, "disk_faulty": faulty, "error": e.to_string()}),
                );
                if faulty {
                    rec.refused_boots.insert(d);
                } else {
                    let at = turmoil::sim_elapsed()
                        .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX))
                        .unwrap_or(0);
                    rec.violation(
                        "storage-recovery",
                        at,
                        format!("{d} refused to start on a healthy disk (boot {boot}): {e}"),
                    );
                }
                return Ok(());
            }
        };
        self.shared
            .lock()
            .line("boot", json!({"node": d, "boot": boot}));
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
        let http = node.serve(listener, None, std::future::pending::<()>());
        if bridged {
            let (served, smtp) = tokio::join!(http, crate::mail::serve_node_smtp(&node));
            served?;
            smtp?;
        } else {
            http.await?;
        }
        Ok(())
    }
}

/// The `[agents]` hosts: the process-runner and PLSP agents (restartable turmoil hosts) and
/// the human's client host ([`crate::agents`]).
#[allow(clippy::too_many_arguments)]
fn start_agents(
    sim: &mut turmoil::Sim<'_>,
    scenario: &Scenario,
    a: &crate::agents::Agents,
    seed: u64,
    peers_of: &Arc<RwLock<BTreeMap<String, String>>>,
    users: &BTreeMap<String, Vec<String>>,
    scratch: &Scratch,
    shared: &Shared,
    opts: &RunOptions,
) -> Result<(), String> {
    use crate::agents::{self, AgentPlan, HumanPlan};
    let url = |d: &str| {
        peers_of
            .read()
            .map(|p| p.get(d).cloned().unwrap_or_default())
            .unwrap_or_default()
    };
    let first = |d: &str| {
        users
            .get(d)
            .and_then(|u| u.first())
            .cloned()
            .ok_or_else(|| format!("[agents]: node {d} has no users"))
    };
    let packages = Arc::new(agents::process_packages()?);
    let process_agent = format!("loom://runner@{}", a.process_node);
    let plsp_agent = format!("loom://plsp@{}", a.plsp_node);
    for (host, domain, address, scope, plsp) in [
        (
            agents::process_host(a),
            &a.process_node,
            process_agent.clone(),
            loom_agent::scope::needed_for(&["market-sizing".to_owned()], false),
            false,
        ),
        (
            agents::plsp_host(a),
            &a.plsp_node,
            plsp_agent.clone(),
            loom_agent::scope::needed_for(&[], true),
            true,
        ),
    ] {
        let plan = AgentPlan {
            workdir: scratch.0.join("agents").join(&host),
            host: host.clone(),
            domain: domain.clone(),
            url: url(domain),
            address,
            delegator: first(domain)?,
            scope,
            packages: if plsp {
                Arc::new(loom_agent::run::Packages::default())
            } else {
                packages.clone()
            },
            plsp,
            seed,
            setup_secs: scenario.setup_secs,
            shared: shared.clone(),
            journal: Default::default(),
            chain: Arc::default(),
            boots: Arc::default(),
            encoding: a.encoding,
            quirks: opts.agent_quirks.clone(),
        };
        sim.host(host.as_str(), move || agents::boot(plan.clone()));
    }
    let human = users
        .get(&a.human_node)
        .and_then(|u| u.last())
        .cloned()
        .ok_or_else(|| format!("[agents]: human_node {} has no users", a.human_node))?;
    let host = agents::human_host(a);
    let plan = HumanPlan {
        agents: a.clone(),
        url: url(&a.human_node),
        human,
        process_agent,
        plsp_agent,
        seed,
        rng_seed: derive_seed(seed, &format!("host/{host}")),
        setup_secs: scenario.setup_secs,
        shared: shared.clone(),
    };
    sim.client(host.as_str(), agents::run_human(plan));
    Ok(())
}

/// Runs `scenario` with `seed`.
pub fn run(scenario: &Scenario, seed: u64, opts: &RunOptions) -> Result<RunReport, String> {
    // Before any store opens: the writer's VFS wraps whatever is the default then.
    disk::install()?;
    let scratch = Scratch::new(seed);
    let mut attached = Attached::default();
    let shared = Shared::default();
    let topology: Arc<RwLock<Topology>> = Arc::default();
    let tick = Duration::from_millis(scenario.tick_ms);
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .tick_duration(tick)
        .min_message_latency(Duration::ZERO)
        .max_message_latency(Duration::from_millis(scenario.max_latency_ms))
        .simulation_duration(Duration::from_secs(u64::MAX / 4_000))
        .build();

    let mut slots = BTreeMap::new();
    let peers_of: Arc<RwLock<BTreeMap<String, String>>> = Arc::default();
    let bridge_slot: Arc<RwLock<Option<loom_node::config::BridgeConfig>>> = Arc::default();
    for domain in &scenario.nodes {
        let dir = scratch.0.join(domain);
        crate::template::seed_store(&dir, &crate::template::scratch_base())?;
        let slot = NodeSlot {
            disk: disk::attach(&dir)?,
            dir,
            skew: Arc::new(AtomicI64::new(0)),
        };
        attached.0.push(slot.disk.clone());
        let spec = NodeHostSpec {
            seed,
            domain: domain.clone(),
            dir: slot.dir.clone(),
            disk: slot.disk.clone(),
            skew: slot.skew.clone(),
            scenario: scenario.clone(),
            shared: shared.clone(),
            topology: topology.clone(),
            peers: peers_of.clone(),
            rules: opts.rules.clone(),
            boots: Arc::new(AtomicU64::new(0)),
            bridge: bridge_slot.clone(),
        };
        sim.host(domain.as_str(), move || spec.clone().boot());
        slots.insert(domain.clone(), slot);
    }
    {
        let mut peers = peers_of.write().map_err(|_| "peer map poisoned")?;
        let mut topo = topology.write().map_err(|_| "topology poisoned")?;
        for (domain, slot) in &slots {
            let ip = sim.lookup(domain.as_str()).to_string();
            peers.insert(domain.clone(), format!("http://{ip}:{PORT}"));
            topo.domains.insert(ip, domain.clone());
            topo.skews.insert(domain.clone(), slot.skew.clone());
        }
    }
    let users: BTreeMap<String, Vec<String>> = scenario
        .nodes
        .iter()
        .map(|d| {
            let list = (0..scenario.users_per_node)
                .map(|i| format!("loom://u{i}@{d}"))
                .collect();
            (d.clone(), list)
        })
        .collect();
    let sched = opts
        .schedule
        .clone()
        .unwrap_or_else(|| schedule(scenario, seed));
    let start_ms = scenario.setup_secs * 1000;
    for domain in &scenario.nodes {
        let url = peers_of
            .read()
            .map(|p| p.get(domain).cloned().unwrap_or_default())
            .unwrap_or_default();
        let plan = ClientPlan {
            domain: domain.clone(),
            url,
            users: users.get(domain).cloned().unwrap_or_default(),
            remote_users: users
                .iter()
                .filter(|(d, _)| *d != domain)
                .flat_map(|(_, u)| u.iter().cloned())
                .collect(),
            seed,
            rng_seed: derive_seed(seed, &format!("client/{domain}")),
            workload: scenario.workload.clone(),
            setup_secs: scenario.setup_secs,
            clock: SkewClock::new(slots[domain].skew.clone()),
            shared: shared.clone(),
        };
        sim.client(client_host(domain).as_str(), run_client(plan));
    }
    if let Some(m) = &scenario.mail {
        shared.lock().mail.node = m.node.clone();
        let shared_mx = shared.clone();
        sim.host(crate::mail::MX, move || {
            crate::mail::run_mx(shared_mx.clone())
        });
        let plan = crate::mail::MtaPlan {
            domain: m.node.clone(),
            url: peers_of
                .read()
                .map(|p| p.get(&m.node).cloned().unwrap_or_default())
                .unwrap_or_default(),
            users: users.get(&m.node).cloned().unwrap_or_default(),
            seed,
            rng_seed: derive_seed(seed, "host/mta"),
            mail: m.clone(),
            setup_secs: scenario.setup_secs,
            clock: SkewClock::new(slots[&m.node].skew.clone()),
            shared: shared.clone(),
        };
        sim.client(crate::mail::MTA, crate::mail::run_mta(plan));
        let mta_ip = sim.lookup(crate::mail::MTA);
        *bridge_slot.write().map_err(|_| "bridge config poisoned")? =
            Some(crate::mail::bridge_config(m, &m.node, mta_ip));
    }
    if let Some(r) = &scenario.realtime {
        for domain in &scenario.nodes {
            let url = peers_of
                .read()
                .map(|p| p.get(domain).cloned().unwrap_or_default())
                .unwrap_or_default();
            let mine = users.get(domain).cloned().unwrap_or_default();
            for (k, user) in mine.iter().take(r.watchers_per_node).enumerate() {
                let host = crate::realtime::host_name(domain, k);
                let plan = crate::realtime::WatcherPlan {
                    host: host.clone(),
                    domain: domain.clone(),
                    url: url.clone(),
                    user: user.clone(),
                    seed,
                    rng_seed: derive_seed(seed, &format!("host/{host}")),
                    realtime: r.clone(),
                    setup_secs: scenario.setup_secs,
                    shared: shared.clone(),
                };
                sim.client(host.as_str(), crate::realtime::run_watcher(plan));
            }
        }
    }
    if let Some(a) = &scenario.agents {
        start_agents(
            &mut sim, scenario, a, seed, &peers_of, &users, &scratch, &shared, opts,
        )?;
    }
    let replays: Vec<u64> = sched
        .iter()
        .filter(|f| f.fault == Fault::Replay)
        .map(|f| start_ms + f.at_ms)
        .collect();
    if !replays.is_empty() {
        sim.client("replayer", run_replayer(replays, shared.clone()));
    }
    let node_urls: BTreeMap<String, String> = peers_of
        .read()
        .map(|p| p.clone())
        .map_err(|_| "peer map poisoned")?;
    for (i, decl) in scenario.hosts.iter().enumerate() {
        if !decl.optional && !opts.hosts.iter().any(|h| h.name == decl.name) {
            return Err(format!(
                "scenario {} declares host slot {:?} (hosts[{i}].name) but the run provides no host for it (RunOptions::hosts); mark it `optional = true` to run without it",
                scenario.name, decl.name
            ));
        }
    }
    for slot in &opts.hosts {
        if scenario.nodes.contains(&slot.name)
            || slot.name.starts_with("client.")
            || slot.name == "replayer"
        {
            return Err(format!(
                "host slot {:?} clashes with a node or client host name",
                slot.name
            ));
        }
        let env = crate::hosts::HostEnv {
            name: slot.name.clone(),
            nodes: node_urls.clone(),
            seed,
            rng_seed: derive_seed(seed, &format!("host/{}", slot.name)),
            shared: shared.clone(),
        };
        sim.client(slot.name.as_str(), (slot.run)(env));
    }

    // The controller: faults at their times, heal when the workload is done, then settle.
    let world = World {
        shared: &shared,
        slots: &slots,
        max_latency: Duration::from_millis(scenario.max_latency_ms),
        seed,
        loss: if scenario.faults.power_loss {
            disk::Loss::Power
        } else {
            disk::Loss::Process
        },
    };
    let mut pending: std::collections::VecDeque<Scheduled> = sched.into_iter().collect();
    let mut st = Faulted::default();
    let mut permanent_down: BTreeSet<String> = BTreeSet::new();
    let mut permanent_links: BTreeSet<(String, String)> = BTreeSet::new();
    let mut healed_at: Option<u64> = None;
    let check_every =
        (1000 / scenario.tick_ms).max(1) * if scenario.tick_ms >= 1000 { 60 } else { 1 };
    let mut quiet_checks = 0u32;
    let mut last_probe = String::new();
    let mut prober = invariants::Prober::default();
    let mut steps = 0u64;
    let mut settled = false;
    let elapsed_ms =
        |sim: &turmoil::Sim<'_>| u64::try_from(sim.elapsed().as_millis()).unwrap_or(u64::MAX);
    loop {
        let now = elapsed_ms(&sim);
        while pending.front().is_some_and(|f| start_ms + f.at_ms <= now) {
            let Some(f) = pending.pop_front() else { break };
            apply(&mut sim, &world, &f, now, &mut st);
            if f.permanent {
                match &f.fault {
                    Fault::Crash(n) => {
                        permanent_down.insert(n.clone());
                    }
                    Fault::Partition(a, b) | Fault::Hold(a, b) | Fault::Slow(a, b, _) => {
                        permanent_links.insert(ordered(a, b));
                    }
                    _ => {}
                }
            }
        }
        restart_refused_boots(&mut sim, &world, now);
        shared.lock().step = steps;
        let clients_done = sim.step().map_err(|e| format!("simulation failed: {e}"))?;
        steps += 1;
        let now = elapsed_ms(&sim);
        if healed_at.is_none() && clients_done && pending.is_empty() {
            // Heal: every non-permanent fault is undone, crashed nodes start again.
            let temporary = |set: &BTreeSet<(String, String)>| -> Vec<(String, String)> {
                set.iter()
                    .filter(|l| !permanent_links.contains(*l))
                    .cloned()
                    .collect()
            };
            let mut undo: Vec<Fault> = Vec::new();
            undo.extend(
                temporary(&st.cut)
                    .into_iter()
                    .map(|(a, b)| Fault::Repair(a, b)),
            );
            undo.extend(
                temporary(&st.held)
                    .into_iter()
                    .map(|(a, b)| Fault::Release(a, b)),
            );
            undo.extend(
                temporary(&st.slow)
                    .into_iter()
                    .map(|(a, b)| Fault::Fast(a, b)),
            );
            undo.extend(
                st.down
                    .iter()
                    .filter(|n| !permanent_down.contains(*n))
                    .map(|n| Fault::Restart(n.clone())),
            );
            for fault in undo {
                let f = Scheduled {
                    at_ms: 0,
                    fault,
                    permanent: false,
                };
                apply(&mut sim, &world, &f, now, &mut st);
            }
            shared.lock().line_at(now, "healed", &mut json!({}));
            healed_at = Some(now);
        }
        if let Some(h) = healed_at {
            if steps.is_multiple_of(check_every) {
                let probe =
                    prober.probe(&slots.values().map(|s| s.dir.clone()).collect::<Vec<_>>());
                if probe.queued == 0 && probe.digest == last_probe {
                    quiet_checks += 1;
                } else {
                    quiet_checks = 0;
                }
                last_probe = probe.digest;
                if quiet_checks >= 2 {
                    settled = true;
                    break;
                }
            }
            if now > h + scenario.settle_secs * 1000 {
                break;
            }
        }
    }
    let simulated_ms = elapsed_ms(&sim);
    drop(sim);
    let f = &scenario.faults;
    if f.power_loss || f.fsync_errors + f.disk_full > 0 {
        let mut rec = shared.lock();
        for (d, slot) in &slots {
            let c = disk::counts(&slot.disk);
            rec.line_at(
                simulated_ms,
                "disk",
                &mut json!({"node": d, "syncs": c.syncs, "failed_syncs": c.failed_syncs,
                            "full_writes": c.full_writes, "dead_ops": c.dead_ops}),
            );
        }
    }
    drop(attached);
    let dirs: BTreeMap<String, PathBuf> = slots
        .iter()
        .map(|(d, s)| (d.clone(), s.dir.clone()))
        .collect();
    let end_checks = invariants::check_all(&shared, &mut prober, &dirs, &st.down);
    let mut rec = shared.lock();
    rec.step = steps;
    if !settled {
        rec.violation(
            "quiescence",
            simulated_ms,
            format!(
                "outboxes still held queued deliveries {} s after the network healed (settle_secs)",
                scenario.settle_secs
            ),
        );
    }
    for (name, detail) in end_checks {
        rec.violation(&name, simulated_ms, detail);
    }
    let mut summary = json!({"acknowledged": rec.acks.len(), "steps": steps});
    rec.line_at(simulated_ms, "end", &mut summary);
    let jsonl = rec.jsonl();
    let mut violations = rec.violations.clone();
    violations.sort_by_key(|v| v.step);
    Ok(RunReport {
        scenario: scenario.name.clone(),
        seed,
        violations,
        trace_hash: trace_hash(&jsonl),
        trace_lines: rec.len(),
        trace: opts.keep_trace.then_some(jsonl),
        simulated_ms,
        steps,
        acknowledged: rec.acks.len(),
        scenario_ref: scenario.reference().to_owned(),
        quirks: opts
            .rules
            .0
            .names()
            .into_iter()
            .chain(opts.agent_quirks.iter().cloned())
            .collect(),
        custom_schedule: opts.schedule.is_some(),
    })
}

fn ordered(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.into(), b.into())
    } else {
        (b.into(), a.into())
    }
}

/// What the schedule has done to the world so far (undone at the heal).
#[derive(Debug, Default)]
struct Faulted {
    down: BTreeSet<String>,
    cut: BTreeSet<(String, String)>,
    held: BTreeSet<(String, String)>,
    slow: BTreeSet<(String, String)>,
    /// Crashes so far per node (each power loss draws from its own sub-seed).
    crashes: BTreeMap<String, u64>,
}

/// What applying a fault needs besides the simulation.
struct World<'a> {
    shared: &'a Shared,
    slots: &'a BTreeMap<String, NodeSlot>,
    max_latency: Duration,
    seed: u64,
    /// What a crash does to unsynced writes (`[faults] power_loss`).
    loss: disk::Loss,
}

/// Starts again every node whose boot was refused while its disk was failing, once the disk
/// is healthy (an operator restarting it after freeing space or replacing the disk).
fn restart_refused_boots(sim: &mut turmoil::Sim<'_>, w: &World<'_>, now: u64) {
    let refused: Vec<String> = w.shared.lock().refused_boots.iter().cloned().collect();
    for n in refused {
        let Some(slot) = w.slots.get(&n) else {
            continue;
        };
        if disk::mode(&slot.disk) == disk::Mode::default() {
            let mut rec = w.shared.lock();
            rec.refused_boots.remove(&n);
            rec.line_at(
                now,
                "restart",
                &mut json!({"node": n, "reason": "disk healthy again"}),
            );
            drop(rec);
            sim.bounce(n.as_str());
        }
    }
}

/// Switches one disk fault of node `n` on or off.
fn set_disk(w: &World<'_>, n: &str, change: impl FnOnce(&mut disk::Mode)) {
    if let Some(slot) = w.slots.get(n) {
        let mut mode = disk::mode(&slot.disk);
        change(&mut mode);
        disk::set_mode(&slot.disk, mode);
    }
}

fn apply(sim: &mut turmoil::Sim<'_>, w: &World<'_>, f: &Scheduled, now: u64, st: &mut Faulted) {
    let (shared, slots, max_latency) = (w.shared, w.slots, w.max_latency);
    let mut applied = true;
    match &f.fault {
        Fault::Partition(a, b) => {
            sim.partition(a.as_str(), b.as_str());
            st.cut.insert(ordered(a, b));
        }
        Fault::Repair(a, b) => {
            sim.repair(a.as_str(), b.as_str());
            st.cut.remove(&ordered(a, b));
        }
        Fault::Hold(a, b) => {
            sim.hold(a.as_str(), b.as_str());
            st.held.insert(ordered(a, b));
        }
        Fault::Release(a, b) => {
            sim.release(a.as_str(), b.as_str());
            st.held.remove(&ordered(a, b));
        }
        Fault::Slow(a, b, ms) => {
            // Every message on the link takes exactly `ms` (turmoil per-link latency).
            sim.set_link_latency(a.as_str(), b.as_str(), Duration::from_millis(*ms));
            st.slow.insert(ordered(a, b));
        }
        Fault::Fast(a, b) => {
            sim.set_link_latency(a.as_str(), b.as_str(), Duration::ZERO);
            sim.set_link_max_message_latency(a.as_str(), b.as_str(), max_latency);
            st.slow.remove(&ordered(a, b));
        }
        Fault::Crash(n) => {
            if st.down.insert(n.clone()) {
                shared.lock().crashed.insert(n.clone());
                crash(sim, w, n, now, st);
            } else {
                applied = false;
            }
        }
        Fault::Restart(n) => {
            if st.down.remove(n) {
                sim.bounce(n.as_str());
            } else {
                applied = false;
            }
        }
        Fault::Skew(n, ms) => {
            if let Some(s) = slots.get(n) {
                s.skew.store(*ms, Ordering::Relaxed);
            }
        }
        Fault::Jump(n, ms) => {
            if let Some(s) = slots.get(n) {
                s.skew.fetch_add(*ms, Ordering::Relaxed);
            }
        }
        Fault::FsyncFail(n) => set_disk(w, n, |m| m.fsync_fails = true),
        Fault::FsyncOk(n) => set_disk(w, n, |m| m.fsync_fails = false),
        Fault::DiskFull(n) => set_disk(w, n, |m| m.full = true),
        Fault::DiskFree(n) => set_disk(w, n, |m| m.full = false),
        Fault::Replay => {}
    }
    let mut line = f.fault.to_json();
    line["applied"] = applied.into();
    shared.lock().line_at(now, "fault", &mut line);
}

/// A crash of node `n`: the process dies (its files refuse every write from here on, so
/// nothing a graceful close would do reaches them), the host's software is dropped, and the
/// disk keeps what the crash kind leaves of the unsynced writes ([`disk::Loss`]).
fn crash(sim: &mut turmoil::Sim<'_>, w: &World<'_>, n: &str, now: u64, st: &mut Faulted) {
    let Some(slot) = w.slots.get(n) else {
        sim.crash(n);
        return;
    };
    let k = st.crashes.entry(n.to_owned()).or_default();
    *k += 1;
    disk::kill(&slot.disk);
    sim.crash(n);
    w.shared.lock().refused_boots.remove(n);
    let seed = derive_seed(w.seed, &format!("disk/{n}/{k}"));
    let mut line = match disk::recover(&slot.disk, w.loss, seed) {
        Ok(r) if w.loss == disk::Loss::Power => json!({
            "node": n, "files": r.files, "kept": r.kept, "lost": r.lost, "torn": r.torn
        }),
        Ok(_) => return,
        Err(e) => json!({"node": n, "error": e}),
    };
    w.shared.lock().line_at(now, "power-loss", &mut line);
}
