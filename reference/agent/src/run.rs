//! Running a task's work: a process package with `loom-process` (guide "Process test
//! manifest" conventions for a deterministic model; the OpenAI-compatible backend for real
//! use), or a PLSP program with the `loom-plsp` middleware loop (plsp-v0.5 §2) whose `!`
//! actions are LOOM operations ([`LoomOps`]) and whose `>` data lines are posted to the
//! task's thread as they are written.

use crate::journal::WorkOutcome;
use crate::scope;
use loom_plsp::ast::Literal;
use loom_plsp::engine::StateEngine;
use loom_plsp::env::{BoxFuture, Sleeper, TokioSleeper};
use loom_plsp::middleware::actions::{
    ActionHandler, ActionOutcome, ActionRegistry, Notifier, PageHandler, ResolvedAction,
    WaitHandler,
};
use loom_plsp::middleware::sink::{MemorySink, Sink};
use loom_plsp::middleware::{LoopConfig, Middleware};
use loom_plsp::scenario::{Scenario, Script};
use loom_process::package::dir::LoadedPackage;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One process package the agent holds (`[[packages]]` of its config).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackageSpec {
    /// The package directory (or its `process.yaml`).
    pub path: PathBuf,
    /// The model: `derived` (deterministic replies derived from the definition, as
    /// `loom-process test` makes them), `scripted:FILE` (deterministic; FILE relative to the
    /// package) or `chat:MODEL` (OpenAI-compatible, `LOOM_PROCESS_BASE_URL` /
    /// `LOOM_PROCESS_API_KEY`).
    pub model: String,
    /// Run the package's bundled Python tools (`tool.call`, `tool_metric` gates) with its
    /// declared interpreter, as `loom-process run` does; off by default, when a `tool.call` is
    /// refused and a gate reading a tool fails, saying so.
    #[serde(default)]
    pub bundled_tools: bool,
}

/// A package loaded and validated once, with its model backend spec.
#[derive(Debug)]
pub struct Package {
    loaded: LoadedPackage,
    model: String,
    bundled_tools: bool,
}

/// The packages an agent holds, by name.
#[derive(Debug, Default)]
pub struct Packages(BTreeMap<String, Package>);

impl Packages {
    /// Loads and validates every package; an invalid one is an error naming it and its
    /// report (guide "Validation").
    pub fn load(specs: &[PackageSpec]) -> Result<Packages, String> {
        let mut out = BTreeMap::new();
        for (i, s) in specs.iter().enumerate() {
            let loaded = loom_process::package::dir::load_dir(&s.path).map_err(|r| {
                format!(
                    "packages[{i}] {}: invalid package:\n{}",
                    s.path.display(),
                    r.to_text(&s.path.display().to_string())
                )
            })?;
            let model = match s.model.split_once(':') {
                None if s.model == "derived" => s.model.clone(),
                Some(("scripted", f)) if !f.is_empty() => {
                    let file = loaded.root.join(f);
                    if !file.is_file() {
                        return Err(format!(
                            "packages[{i}].model: script {} does not exist",
                            file.display()
                        ));
                    }
                    format!("scripted:{}", file.display())
                }
                Some(("chat", m)) if !m.is_empty() => s.model.clone(),
                _ => {
                    return Err(format!(
                        "packages[{i}].model: {:?}: expected derived, scripted:FILE or chat:MODEL",
                        s.model
                    ));
                }
            };
            let name = loaded.process.name.clone();
            if out.contains_key(&name) {
                return Err(format!("packages[{i}]: a second package named {name:?}"));
            }
            out.insert(
                name,
                Package {
                    loaded,
                    model,
                    bundled_tools: s.bundled_tools,
                },
            );
        }
        Ok(Packages(out))
    }

    /// The names held.
    pub fn names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }

    /// Runs `package` with `goal` in `workspace` (emptied first), deterministically when the
    /// model is scripted (the test clock of `loom-process test`, `seed`).
    pub fn run(&self, package: &str, goal: &str, workspace: &Path, seed: u64) -> RunReport {
        let Some(p) = self.0.get(package) else {
            return RunReport::failed(format!("no process package named {package:?}"));
        };
        let _ = std::fs::remove_dir_all(workspace);
        match run_process(p, goal, workspace, seed) {
            Ok(r) => r,
            Err(e) => RunReport::failed(format!("the run could not start: {e}")),
        }
    }
}

/// What a run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// The outcome the task's final update reports.
    pub outcome: WorkOutcome,
    /// The runner's own event log (process: Loop Engine events JSONL; PLSP: the §7 trace).
    pub events: String,
}

impl RunReport {
    fn failed(summary: String) -> RunReport {
        RunReport {
            outcome: WorkOutcome {
                ok: false,
                result: json!({"error": summary}),
                summary,
            },
            events: String::new(),
        }
    }
}

fn run_process(p: &Package, goal: &str, workspace: &Path, seed: u64) -> Result<RunReport, String> {
    use loom_process::engine::clock::{Clock, ManualClock, SystemClock};
    use loom_process::engine::event::to_jsonl;
    use loom_process::engine::model::Model;
    use loom_process::engine::planner::ModelPlanner;
    use loom_process::engine::policy::{DenyConfirm, TaskConfig};
    use loom_process::engine::tools::ToolOutputs;
    use loom_process::runner::testcase::DETERMINISTIC_START_MS;
    use loom_process::runner::{self, Env, RunOptions, RunRequest, RunStatus};
    let (model, tool_outputs): (Arc<dyn Model>, Option<Arc<dyn ToolOutputs>>) =
        if p.model == "derived" {
            let m = Arc::new(loom_process::runner::derived::DerivedModel::new(
                &p.loaded.process,
            ));
            (m.clone(), Some(m))
        } else {
            loom_process::cli::run::model_from_spec_in(&p.model, Some(&p.loaded.root), |k| {
                std::env::var(k).ok()
            })?
        };
    let deterministic = !p.model.starts_with("chat:");
    let clock: Arc<dyn Clock> = if deterministic {
        Arc::new(ManualClock::ticking(DETERMINISTIC_START_MS, 1))
    } else {
        Arc::new(SystemClock)
    };
    let options = RunOptions {
        bundled_tools: p.bundled_tools,
        ..RunOptions::default()
    };
    // The credentials a package declares (`auth.required[].required_env_keys`), from the
    // agent's environment; values are never logged.
    let auth_env = runner::declared_auth_env(&p.loaded.process, |k| std::env::var(k).ok());
    let env = Env {
        planner: Some(Arc::new(ModelPlanner(model.clone()))),
        model,
        clock,
        confirm: Arc::new(DenyConfirm),
        fetch: None,
        tool_outputs,
        bundled: runner::bundled_for(&p.loaded.root, &options, &auth_env),
        auth_env,
    };
    let task = TaskConfig {
        goal: goal.to_owned(),
        workspace: workspace.display().to_string(),
        ..TaskConfig::default()
    };
    let req = RunRequest {
        goal: goal.to_owned(),
        workspace: workspace.to_owned(),
        seed,
        task,
        options,
    };
    let out = runner::run(&p.loaded.process, &env, &req)?;
    let phases: BTreeMap<&str, Value> = out
        .phases
        .iter()
        .map(|(id, ph)| {
            (
                id.as_str(),
                json!({"status": ph.status.as_str(), "attempts": ph.attempts, "stop_reason": ph.stop_reason}),
            )
        })
        .collect();
    let deliverables = list_files(&out.workspace);
    let ok = out.status == RunStatus::Completed;
    let summary = if ok {
        format!(
            "completed: {} phase(s), {} deliverable(s): {}",
            out.phases.len(),
            deliverables.len(),
            deliverables.join(", ")
        )
    } else {
        // The first cause leads (loom-process's own reading of its event log).
        let cause = loom_process::engine::event::first_cause(&out.events)
            .or_else(|| out.stop_reason.clone())
            .unwrap_or_else(|| "no cause recorded".into());
        format!("{}: {cause}", out.status.as_str())
    };
    let evidence: Vec<Value> = out
        .evidence
        .iter()
        .map(|e| json!({"phase": e.step_id, "attempt": e.iteration, "summary": e.summary, "errors": e.errors}))
        .collect();
    Ok(RunReport {
        outcome: WorkOutcome {
            ok,
            result: json!({
                "package": p.loaded.process.name,
                "status": out.status.as_str(),
                "phases": phases,
                "deliverables": deliverables,
                "evidence": evidence,
            }),
            summary,
        },
        events: to_jsonl(&out.events),
    })
}

/// Files under `dir`, relative, sorted (the run's deliverables as the task reports them).
fn list_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                if !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                {
                    stack.push(p);
                }
            } else if let Ok(rel) = p.strip_prefix(dir) {
                out.push(rel.display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// The LOOM operations a PLSP program's actions map to, in the task's thread.
pub trait LoomOps: Send + Sync + std::fmt::Debug {
    /// Posts a message to the task's creator in the thread (`!send`, `!page`, `>` data);
    /// `data` goes in `content.structured.parameters`. Answers the envelope id.
    fn send(&self, text: String, data: Option<Value>) -> BoxFuture<Result<String, String>>;
    /// The text of the newest message in the thread not sent by the agent (`!read`).
    fn read(&self) -> BoxFuture<Result<Option<String>, String>>;
}

fn refuse<T: Send + 'static>(why: String) -> BoxFuture<Result<T, String>> {
    Box::pin(std::future::ready(Err(why)))
}

fn needs(scopes: &[String], action: &str, scope_name: &str) -> Result<(), String> {
    if scope::allows(scopes, action) {
        Ok(())
    } else {
        Err(format!(
            "refused: this action needs scope {scope_name:?}, which the agent's delegation does not grant (v1.1 §13.2)"
        ))
    }
}

/// `!send,TEXT`: a message in the thread (scope `message.general`).
#[derive(Debug)]
struct SendAction {
    ops: Arc<dyn LoomOps>,
    scopes: Arc<[String]>,
}

impl ActionHandler for SendAction {
    fn run(&self, a: ResolvedAction) -> BoxFuture<Result<ActionOutcome, String>> {
        if let Err(e) = needs(&self.scopes, scope::MESSAGE_INTENT, scope::MESSAGE) {
            return refuse(e);
        }
        let text = match a.params.as_slice() {
            [Literal::Str(s)] => s.clone(),
            [Literal::Num(n)] => n.to_string(),
            _ => return refuse("!send takes one value: the text".into()),
        };
        let sent = self.ops.send(text, None);
        Box::pin(async move {
            sent.await
                .map(|id| ActionOutcome::Done(format!("sent {id}")))
        })
    }
}

/// `!read`: the newest message of the thread from someone else becomes the next cycle's
/// input `thread` (`@fetch:thread,$x`); scope `read.thread`.
#[derive(Debug)]
struct ReadAction {
    ops: Arc<dyn LoomOps>,
    scopes: Arc<[String]>,
}

impl ActionHandler for ReadAction {
    fn run(&self, a: ResolvedAction) -> BoxFuture<Result<ActionOutcome, String>> {
        if let Err(e) = needs(&self.scopes, scope::READ_THREAD, scope::READ_THREAD) {
            return refuse(e);
        }
        if !a.params.is_empty() {
            return refuse("!read takes no parameters".into());
        }
        let read = self.ops.read();
        Box::pin(async move {
            let text = read.await?.unwrap_or_default().replace('"', "'");
            Ok(ActionOutcome::Data {
                source: "thread".into(),
                value: Literal::Str(text),
            })
        })
    }
}

/// `!page,TARGET,MESSAGE`: the loop's notifier, delivered as a message in the thread.
#[derive(Debug)]
struct PageAsMessage {
    ops: Arc<dyn LoomOps>,
    scopes: Arc<[String]>,
}

impl Notifier for PageAsMessage {
    fn page(&self, target: String, message: String) -> BoxFuture<Result<(), String>> {
        if let Err(e) = needs(&self.scopes, scope::MESSAGE_INTENT, scope::MESSAGE) {
            return refuse(e);
        }
        let sent = self.ops.send(
            format!("page for {target}: {message}"),
            Some(json!({"plsp_page": {"target": target, "message": message}})),
        );
        Box::pin(async move { sent.await.map(|_| ()) })
    }
}

/// `>` data lines, handed to the poster as they are written.
struct ChannelSink(tokio::sync::mpsc::UnboundedSender<Value>);

impl Sink for ChannelSink {
    fn write(&mut self, v: &Value) -> std::io::Result<()> {
        self.0
            .send(v.clone())
            .map_err(|_| std::io::Error::other("the data poster stopped"))
    }
}

/// Most `>` data lines of one run posted as envelopes; later ones are counted in the result.
pub const MAX_DATA_POSTS: usize = 64;

/// Runs a PLSP program: `!send`, `!read`, `!page` and `!wait` are LOOM operations through
/// `ops` (each checked against `scopes` first), `>` data lines are posted as they come (at
/// most [`MAX_DATA_POSTS`]). `clock` stamps the trace; waiting is on tokio's timer, so under
/// turmoil the time is simulated.
pub async fn run_plsp(
    program: &Scenario,
    engine: Arc<dyn StateEngine>,
    ops: Arc<dyn LoomOps>,
    scopes: &[String],
    clock: Arc<dyn loom_protocol::clock::Clock>,
) -> RunReport {
    let scopes: Arc<[String]> = scopes.into();
    let sleeper: Arc<dyn Sleeper> = Arc::new(TokioSleeper);
    let actions = ActionRegistry::new()
        .with(
            "wait",
            Arc::new(WaitHandler {
                sleeper: sleeper.clone(),
                max_ms: 600_000,
            }),
        )
        .with(
            "send",
            Arc::new(SendAction {
                ops: ops.clone(),
                scopes: scopes.clone(),
            }),
        )
        .with(
            "read",
            Arc::new(ReadAction {
                ops: ops.clone(),
                scopes: scopes.clone(),
            }),
        )
        .with(
            "page",
            Arc::new(PageHandler {
                notifier: Arc::new(PageAsMessage {
                    ops: ops.clone(),
                    scopes: scopes.clone(),
                }),
                default_target: "creator".into(),
            }),
        );
    let config = LoopConfig {
        seed: program.seed,
        ..program.config
    };
    let mw = Middleware::new(engine, actions, clock, sleeper, config);
    let initial = match loom_plsp::parse(&program.initial) {
        Ok(b) => b,
        Err(e) => return RunReport::failed(format!("initial block: {e}")),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut trace = MemorySink::default();
    let trace_lines = trace.clone();
    let looped = async {
        let mut data = ChannelSink(tx);
        let r = mw
            .run(&mut Script(program), initial, &mut trace, &mut data)
            .await;
        drop(data);
        r
    };
    let poster = async {
        let (mut posted, mut lines, mut errors) = (0usize, 0usize, Vec::new());
        while let Some(line) = rx.recv().await {
            lines += 1;
            if posted >= MAX_DATA_POSTS {
                continue;
            }
            if let Err(e) = needs(&scopes, scope::MESSAGE_INTENT, scope::MESSAGE) {
                errors.push(e);
                continue;
            }
            let text = format!("> {}", line["values"]);
            match ops.send(text, Some(json!({"plsp_data": line}))).await {
                Ok(_) => posted += 1,
                Err(e) => errors.push(e),
            }
        }
        (posted, lines, errors)
    };
    let (result, (posted, lines, errors)) = tokio::join!(looped, poster);
    let events = trace_lines.lines().join("\n");
    match result {
        Ok(summary) if errors.is_empty() => RunReport {
            outcome: WorkOutcome {
                ok: true,
                summary: format!(
                    "completed: {} cycle(s), {lines} data line(s), {posted} posted",
                    summary.cycles
                ),
                result: json!({"cycles": summary.cycles, "last_state": summary.last.to_string(),
                               "data_lines": lines, "data_posted": posted}),
            },
            events,
        },
        Ok(summary) => RunReport {
            outcome: WorkOutcome {
                ok: false,
                summary: format!("failed: posting data: {}", errors[0]),
                result: json!({"cycles": summary.cycles, "errors": errors}),
            },
            events,
        },
        Err(e) => RunReport {
            outcome: WorkOutcome {
                ok: false,
                summary: format!("failed: {e}"),
                result: json!({"error": e.to_string(), "data_lines": lines}),
            },
            events,
        },
    }
}
