//! Agents in the simulation (`[agents]`, issue 35 Build 2): the `loom-agent` host runs as
//! turmoil hosts — a process-runner agent and a PLSP agent, each an `agent` identity enrolled
//! by its node's first user with a delegation scoped to its work (v1.1 §6.4, §13) — and a
//! human on another node gives them tasks (§18.3) while the schedule partitions the nodes,
//! crashes them, and crashes and restarts the agents (their journal survives, as a disk
//! would). What the agents did goes into the run's record ([`AgentsRecord`]); the
//! `agent-tasks` invariant compares it with the nodes' stores.
//!
//! Work the agents are given: the process agent holds `market-sizing` and `legacy-notes`
//! (both on replies derived from their definitions) but is delegated only
//! `process.run.market-sizing`, so a `legacy-notes` task is beyond its scope and must be
//! declined; the PLSP agent runs a program that `!send`s, `!read`s and `!wait`s in the
//! task's thread and posts its `>` data.

use crate::clock::SkewClock;
use crate::scenario::Scenario;
use crate::trace::Shared;
use crate::workload::identity;
use loom_agent::encoding::{Cost, Encoding};
use loom_agent::enroll::{Enrolment, enroll};
use loom_agent::host::{AgentEvent, Host, Observer, Setup};
use loom_agent::journal::MemoryJournal;
use loom_agent::run::{PackageSpec, Packages};
use loom_client::{Client, EnvelopeFactory, MessageDraft, SimDial};
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `[agents]` of a scenario.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Agents {
    /// The node of the human who gives the tasks (its last user).
    pub human_node: String,
    /// The node of the process-runner agent (`loom://runner@…`).
    pub process_node: String,
    /// The node of the PLSP agent (`loom://plsp@…`).
    pub plsp_node: String,
    /// Tasks the human gives, alternately to the process agent and the PLSP agent.
    pub tasks: usize,
    /// Time between two tasks, in milliseconds (uniform in the range).
    pub gap_ms: [u64; 2],
    /// Share of the process agent's tasks that ask for work beyond its delegation.
    pub beyond_scope_ratio: f64,
    /// Crash-and-restart faults of agent hosts (each down for `faults.duration_secs`).
    #[serde(default)]
    pub crashes: usize,
    /// The documented timeout: how long after its last task the human waits for every task
    /// to reach a terminal state, in simulated seconds.
    pub task_timeout_secs: u64,
    /// How the agents write their results.
    #[serde(default)]
    pub encoding: Encoding,
}

/// The process agent's host name.
pub fn process_host(a: &Agents) -> String {
    format!("runner.{}", a.process_node)
}

/// The PLSP agent's host name.
pub fn plsp_host(a: &Agents) -> String {
    format!("plsp.{}", a.plsp_node)
}

/// The human's client host name.
pub fn human_host(a: &Agents) -> String {
    format!("human.{}", a.human_node)
}

/// A task the human gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedTask {
    /// The task id (its `task.create@v1` envelope).
    pub task_id: String,
    /// Its thread.
    pub thread_id: String,
    /// The assignee.
    pub agent: String,
    /// The scope the work needs (`process.run.…`, `plsp.run`).
    pub work_scope: String,
}

/// An enrolled agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Enrolled {
    /// Its node.
    pub node: String,
    /// Its delegator.
    pub delegator: String,
    /// The delegator's key id and key.
    pub delegator_key: (String, ed25519_dalek::VerifyingKey),
    /// The chain it sends under.
    pub chain: Value,
    /// The leaf scope.
    pub scope: Vec<String>,
}

/// A run an agent started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSeen {
    /// The agent.
    pub agent: String,
    /// The task.
    pub task_id: String,
    /// 1-based.
    pub attempt: u32,
    /// `Some(ok)` once it ended.
    pub finished: Option<bool>,
}

/// What the agents and the human did.
#[derive(Debug, Clone, Default)]
pub struct AgentsRecord {
    /// Tasks given, in order.
    pub tasks: Vec<PlannedTask>,
    /// Agents by address.
    pub enrolled: BTreeMap<String, Enrolled>,
    /// Runs, in the order they started.
    pub runs: Vec<RunSeen>,
    /// Each agent's journal (shared with its host across restarts).
    pub journals: BTreeMap<String, MemoryJournal>,
    /// What each task's messages cost, JSON vs Loom notation.
    pub costs: BTreeMap<String, Cost>,
}

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../reference/process/examples")
}

/// The packages the process agent holds (loaded once per run).
pub fn process_packages() -> Result<Packages, String> {
    Packages::load(&[
        PackageSpec {
            path: examples().join("market-sizing"),
            model: "derived".into(),
            bundled_tools: false,
        },
        PackageSpec {
            path: examples().join("legacy-notes"),
            model: "derived".into(),
            bundled_tools: false,
        },
    ])
}

/// One agent host.
#[derive(Clone)]
pub struct AgentPlan {
    /// Its host name.
    pub host: String,
    /// Its node's domain and base URL.
    pub domain: String,
    /// The node's URL.
    pub url: String,
    /// The agent's address.
    pub address: String,
    /// Its delegator (the node's first user).
    pub delegator: String,
    /// The scope it is delegated.
    pub scope: Vec<String>,
    /// Its packages.
    pub packages: Arc<Packages>,
    /// It runs PLSP programs.
    pub plsp: bool,
    /// The run seed.
    pub seed: u64,
    /// Simulated seconds of setup before it enrols.
    pub setup_secs: u64,
    /// The run's record.
    pub shared: Shared,
    /// Its journal (outlives a crash).
    pub journal: MemoryJournal,
    /// Its chain once enrolled (outlives a crash).
    pub chain: Arc<Mutex<Option<Value>>>,
    /// Boots so far.
    pub boots: Arc<AtomicU64>,
    /// Where its runs get workspaces.
    pub workdir: PathBuf,
    /// How it writes results.
    pub encoding: Encoding,
    /// Agent quirks by name (`--quirk act-beyond-scope`; feature `quirks`).
    pub quirks: Vec<String>,
}

impl std::fmt::Debug for AgentPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentPlan")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

/// Records an agent's events in the run's record and trace.
#[derive(Debug)]
struct SimObserver {
    shared: Shared,
    agent: String,
    workdir: String,
}

impl Observer for SimObserver {
    fn event(&self, e: &AgentEvent) {
        let mut rec = self.shared.lock();
        let mut line = serde_json::to_value(e).unwrap_or_default();
        // The trace line's own `kind` is "agent"; the event's kind goes in `event`.
        if let Some(o) = line.as_object_mut()
            && let Some(k) = o.remove("kind")
        {
            o.insert("event".into(), k);
        }
        line["agent"] = self.agent.clone().into();
        match e {
            AgentEvent::RunStarted {
                task_id, attempt, ..
            } => rec.agents.runs.push(RunSeen {
                agent: self.agent.clone(),
                task_id: task_id.clone(),
                attempt: *attempt,
                finished: None,
            }),
            AgentEvent::RunFinished {
                task_id,
                attempt,
                ok,
                runner_log,
                ..
            } => {
                if let Some(r) = rec
                    .agents
                    .runs
                    .iter_mut()
                    .rev()
                    .find(|r| r.task_id == *task_id && r.attempt == *attempt)
                {
                    r.finished = Some(*ok);
                }
                // The runner's own event log goes into the trace as a digest: the same seed
                // must give the same log (workspace paths, which differ per run, masked).
                let log = runner_log.replace(&self.workdir, "$WORK");
                line["runner_log"] = json!({
                    "lines": log.lines().count(),
                    "sha256": hex::encode(Sha256::digest(log.as_bytes())),
                });
            }
            AgentEvent::Posted { task_id, cost, .. }
            | AgentEvent::Message { task_id, cost, .. } => {
                rec.agents
                    .costs
                    .entry(task_id.clone())
                    .or_default()
                    .merge(cost);
            }
            _ => {}
        }
        rec.line("agent", line);
    }
}

/// Logs in as `address` and answers the client, retrying while the node is unreachable.
async fn logged_in(url: &str, id: &loom_client::Identity) -> Client<SimDial> {
    loop {
        if let Ok(c) = Client::new(url, SimDial) {
            let mut c = c.with_timeout(Duration::from_secs(10));
            if let Ok(s) = id.login(&mut c).await {
                c.set_token(Some(s.access_token));
                return c;
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Enrols the agent once (its delegator, the node's first user, registers it and its link).
async fn enrolled(plan: &AgentPlan) -> Result<Value, String> {
    if let Some(c) = plan.chain.lock().map_err(|_| "poisoned")?.clone() {
        return Ok(c);
    }
    let human = identity(plan.seed, &plan.delegator)?;
    let agent = identity(plan.seed, &plan.address)?;
    let clock = SkewClock::new(Arc::new(AtomicI64::new(0)));
    loop {
        let mut hc = logged_in(&plan.url, &human).await;
        let mut ac = Client::new(&plan.url, SimDial)
            .map_err(|e| e.to_string())?
            .with_timeout(Duration::from_secs(10));
        let now = loom_protocol::clock::Clock::now(&clock).to_rfc3339();
        let e = Enrolment {
            human: &human,
            agent: &agent,
            scope: &plan.scope,
            created_at: &now,
            expires_at: "2027-01-01T00:00:00Z",
        };
        match enroll(&e, &mut hc, &mut ac).await {
            Ok(chain) => {
                *plan.chain.lock().map_err(|_| "poisoned")? = Some(chain.clone());
                let mut rec = plan.shared.lock();
                rec.keys
                    .insert(plan.address.clone(), agent.signing_key().verifying_key());
                rec.agents.enrolled.insert(
                    plan.address.clone(),
                    Enrolled {
                        node: plan.domain.clone(),
                        delegator: plan.delegator.clone(),
                        delegator_key: (
                            human.key_id().to_owned(),
                            human.signing_key().verifying_key(),
                        ),
                        chain: chain.clone(),
                        scope: plan.scope.clone(),
                    },
                );
                rec.agents
                    .journals
                    .insert(plan.address.clone(), plan.journal.clone());
                rec.line(
                    "agent",
                    json!({"event": "enrolled", "agent": plan.address, "delegator": plan.delegator, "scope": plan.scope}),
                );
                return Ok(chain);
            }
            Err(e) => {
                plan.shared.lock().line(
                    "agent",
                    json!({"event": "enrol_failed", "agent": plan.address, "status": e.status()}),
                );
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Is `name` an agent quirk (`loom-sim --quirk act-beyond-scope`)? Only a build with the
/// `quirks` feature has them.
pub fn is_agent_quirk(name: &str) -> bool {
    #[cfg(feature = "quirks")]
    {
        loom_agent::quirks::AgentQuirk::parse(name).is_some()
    }
    #[cfg(not(feature = "quirks"))]
    {
        let _ = name;
        false
    }
}

/// The rules of an agent with `quirks` (the spec's when there are none).
fn rules(quirks: &[String]) -> Box<dyn loom_agent::core::Rules> {
    #[cfg(feature = "quirks")]
    if let Some(q) = quirks
        .iter()
        .find_map(|n| loom_agent::quirks::AgentQuirk::parse(n))
    {
        return Box::new(loom_agent::quirks::QuirkRules(q));
    }
    let _ = quirks;
    Box::new(loom_agent::core::SpecRules)
}

/// One boot of an agent host: enrol (first boot), then work until the host is crashed.
pub async fn boot(plan: AgentPlan) -> turmoil::Result {
    let boot = plan.boots.fetch_add(1, Ordering::Relaxed);
    if boot == 0 {
        // The node's client host registers its users during setup.
        tokio::time::sleep(Duration::from_secs(plan.setup_secs)).await;
    }
    plan.shared.lock().line(
        "agent",
        json!({"event": "boot", "agent": plan.address, "boot": boot}),
    );
    let chain = enrolled(&plan).await?;
    let observer = Arc::new(SimObserver {
        shared: plan.shared.clone(),
        agent: plan.address.clone(),
        workdir: plan.workdir.display().to_string(),
    });
    let host = Host::new(Setup {
        dial: SimDial,
        url: plan.url.clone(),
        trust: None,
        identity: identity(plan.seed, &plan.address)?,
        chain,
        packages: plan.packages.clone(),
        plsp: plan.plsp.then(|| {
            Arc::new(loom_plsp::engine::reference::ReferenceEngine)
                as Arc<dyn loom_plsp::engine::StateEngine>
        }),
        encoding: plan.encoding,
        workdir: plan.workdir.clone(),
        poll: Duration::from_secs(1),
        seed: crate::derive_seed(plan.seed, &format!("agent/{}/{boot}", plan.host)),
        clock: Arc::new(SkewClock::new(Arc::new(AtomicI64::new(0)))),
        journal: Arc::new(plan.journal.clone()),
        rules: rules(&plan.quirks),
        observer,
        exit_after: None,
    })?;
    host.run(std::future::pending::<()>()).await?;
    Ok(())
}

/// What the human's host needs.
#[derive(Debug, Clone)]
pub struct HumanPlan {
    /// `[agents]`.
    pub agents: Agents,
    /// The human's node URL.
    pub url: String,
    /// The human's address.
    pub human: String,
    /// The process agent's and the PLSP agent's addresses.
    pub process_agent: String,
    /// The PLSP agent.
    pub plsp_agent: String,
    /// The run seed.
    pub seed: u64,
    /// This host's sub-seed.
    pub rng_seed: u64,
    /// Simulated seconds of setup.
    pub setup_secs: u64,
    /// The run's record.
    pub shared: Shared,
}

/// The PLSP program of the PLSP agent's tasks: each cycle reads a temperature, logs it as
/// `>` data, says so in the thread, reads the thread and waits.
fn plsp_program(i: usize) -> Value {
    json!({
        "name": format!("temperature-{i}"),
        "instructions": [
            "INSTR: @fetch:temp,$t;@set:$m=\"reading taken\";@log:\"temp\",$t;@sig:!send,$m;@sig:!read;@sig:!wait,500"
        ],
        "inputs": {"temp": [70, 75 + i, 90]},
        "config": {"max_cycles": 3}
    })
}

/// Sends `env` until the node answers for good (same bytes, `Idempotency-Key`).
async fn post(c: &mut Client<SimDial>, env: &Value) -> bool {
    let id = env["id"].as_str().unwrap_or_default().to_owned();
    for _ in 0..30 {
        match c.send_envelope_idempotent(env, &id).await {
            Ok(_) => return true,
            Err(e) if matches!(e.status(), Some(s) if (400..500).contains(&s) && s != 429 && s != 401) =>
            {
                return false;
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
    false
}

/// The human: gives `tasks` tasks, then waits for each to end (the documented timeout).
pub async fn run_human(plan: HumanPlan) -> Result<(), Box<dyn std::error::Error>> {
    let a = &plan.agents;
    let mut rng = ChaCha20Rng::seed_from_u64(plan.rng_seed);
    tokio::time::sleep(Duration::from_secs(plan.setup_secs)).await;
    // Both agents must exist before a task is addressed to them.
    while plan.shared.lock().agents.enrolled.len() < 2 {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let human = identity(plan.seed, &plan.human)?;
    let mut c = logged_in(&plan.url, &human).await;
    let mut factory = EnvelopeFactory::new(
        SkewClock::new(Arc::new(AtomicI64::new(0))),
        crate::derive_seed(plan.seed, "human/envelopes"),
    );
    for i in 0..a.tasks {
        let (agent, work, scope) = if i % 2 == 0 {
            let beyond = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
                <= a.beyond_scope_ratio
                && a.beyond_scope_ratio > 0.0;
            let package = if beyond {
                "legacy-notes"
            } else {
                "market-sizing"
            };
            (
                plan.process_agent.clone(),
                json!({"kind": "process", "package": package, "goal": format!("task {i}")}),
                loom_agent::scope::process_run(package),
            )
        } else {
            (
                plan.plsp_agent.clone(),
                json!({"kind": "plsp", "program": plsp_program(i)}),
                loom_agent::scope::PLSP_RUN.to_owned(),
            )
        };
        let draft = MessageDraft {
            to: vec![agent.clone()],
            text: format!("task {i}"),
            ..MessageDraft::default()
        };
        let create = factory.task(
            &human,
            &draft,
            "task.create@v1",
            json!({"title": format!("task {i}"), "assignee": agent, "work": work}),
        )?;
        let task_id = create["id"].as_str().unwrap_or_default().to_owned();
        let thread_id = create["thread_id"].as_str().unwrap_or_default().to_owned();
        let assign = factory.task(
            &human,
            &MessageDraft {
                thread_id: Some(thread_id.clone()),
                parent_id: Some(task_id.clone()),
                to: vec![agent.clone()],
                text: "assigned".into(),
            },
            "task.state_update@v1",
            json!({"task_id": task_id, "state": "assigned"}),
        )?;
        let given = post(&mut c, &create).await && post(&mut c, &assign).await;
        {
            let mut rec = plan.shared.lock();
            rec.line(
                "human",
                json!({"op": "task", "task": task_id, "agent": agent, "scope": scope, "given": given}),
            );
            if given {
                rec.agents.tasks.push(PlannedTask {
                    task_id,
                    thread_id,
                    agent,
                    work_scope: scope,
                });
            }
        }
        let [lo, hi] = a.gap_ms;
        let gap = lo + rng.next_u64() % (hi.saturating_sub(lo) + 1);
        tokio::time::sleep(Duration::from_millis(gap)).await;
    }
    // Wait for every task to end, as the human reads its threads.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(a.task_timeout_secs);
    let tasks = plan.shared.lock().agents.tasks.clone();
    loop {
        let mut open = 0;
        for t in &tasks {
            let state = match c.thread_envelopes(&t.thread_id).await {
                Ok(r) => last_state(&r.body["envelopes"], &t.task_id),
                Err(_) => None,
            };
            if !state.as_deref().is_some_and(is_terminal) {
                open += 1;
            }
        }
        if open == 0 || tokio::time::Instant::now() >= deadline {
            plan.shared
                .lock()
                .line("human", json!({"op": "done", "open": open}));
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// A terminal task state (§18.3).
pub fn is_terminal(s: &str) -> bool {
    matches!(s, "completed" | "failed" | "declined" | "cancelled")
}

/// The state of `task` after the last of `envelopes` (a list in thread order) that moves it.
pub fn last_state(envelopes: &Value, task: &str) -> Option<String> {
    envelopes
        .as_array()?
        .iter()
        .filter(|e| {
            e.pointer("/content/structured/intent") == Some(&json!("task.state_update@v1"))
                && e.pointer("/content/structured/parameters/task_id") == Some(&json!(task))
        })
        .filter_map(|e| e.pointer("/content/structured/parameters/state")?.as_str())
        .next_back()
        .map(str::to_owned)
}

/// The agents' crash-and-restart faults: `crashes` of them, each of a random agent host at a
/// random time of the workload, down for `faults.duration_secs`.
pub fn crash_schedule(s: &Scenario, seed: u64) -> Vec<crate::faults::Scheduled> {
    let Some(a) = &s.agents else {
        return Vec::new();
    };
    let mut rng = ChaCha20Rng::seed_from_u64(crate::derive_seed(seed, "agents/crashes"));
    let hosts = [process_host(a), plsp_host(a)];
    let window = (a.tasks as u64).saturating_mul(a.gap_ms[1]).max(1);
    let [dmin, dmax] = s.faults.duration_secs;
    let mut out = Vec::new();
    for _ in 0..a.crashes {
        let host = hosts[usize::try_from(rng.next_u64() % 2).unwrap_or(0)].clone();
        let at = rng.next_u64() % window;
        let span = (dmax.saturating_sub(dmin) * 1000).saturating_add(1);
        let down = dmin * 1000 + rng.next_u64() % span;
        out.push(crate::faults::Scheduled {
            at_ms: at,
            fault: crate::faults::Fault::Crash(host.clone()),
            permanent: false,
        });
        out.push(crate::faults::Scheduled {
            at_ms: at + down,
            fault: crate::faults::Fault::Restart(host),
            permanent: false,
        });
    }
    out
}
