//! `loom-process run PATH --goal … --workspace DIR --model scripted:FILE [--events OUT.jsonl]
//! [--seed N] [--task TASK.json] [--clock system|manual] [--enable-command-exit-gates]`.
//!
//! Exit codes: 0 the run completed, 1 it did not (partial or failed), 2 usage or IO error or
//! an invalid definition (the validation report is printed).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::exit;
use crate::engine::chat::{ChatModel, DialFetch, config_from_env};
use crate::engine::clock::{Clock, ManualClock, SystemClock};
use crate::engine::event::{summarize, to_jsonl};
use crate::engine::model::{Model, ScriptedModel};
use crate::engine::planner::ModelPlanner;
use crate::engine::policy::{DenyConfirm, TaskConfig};
use crate::engine::tools::{Fetch, ToolOutputs};
use crate::package::dir::LoadedPackage;
use crate::runner::testcase::DETERMINISTIC_START_MS;
use crate::runner::{Env, RunOptions, RunRequest, RunStatus};
use loom_plsp::http::HyperDial;

/// Which clock stamps the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ClockKind {
    /// Wall-clock time.
    #[default]
    System,
    /// The deterministic clock of `test` (2026-01-01T00:00:00Z, +1 ms per reading): the same
    /// inputs and seed give byte-identical events.
    Manual,
}

/// Arguments of `run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A process.yaml file or a package directory.
    pub path: PathBuf,
    /// The goal of the run.
    #[arg(long)]
    pub goal: String,
    /// The workspace directory (created if missing).
    #[arg(long)]
    pub workspace: PathBuf,
    /// The model backend: `scripted:FILE` (a script, see README "Running") or `chat:MODEL`
    /// (OpenAI-compatible; `LOOM_PROCESS_BASE_URL`/`OPENAI_BASE_URL`, `LOOM_PROCESS_API_KEY`/
    /// `OPENAI_API_KEY`).
    #[arg(long)]
    pub model: String,
    /// Write the events as JSONL here.
    #[arg(long)]
    pub events: Option<PathBuf>,
    /// Seed of the run and event ids.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// A loop-engine Task Config JSON file (budget, riskPolicy).
    #[arg(long)]
    pub task: Option<PathBuf>,
    /// Event timestamps and wall-clock budgets from this clock.
    #[arg(long, value_enum, default_value_t = ClockKind::System)]
    pub clock: ClockKind,
    /// Run `command_exit` gates (the guide's runtime flag
    /// `execution.enable_iteration_command_exit_gate`; off by default).
    #[arg(long)]
    pub enable_command_exit_gates: bool,
    /// Run the package's bundled tools with this Python instead of the declared one.
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// Do not run the package's bundled tools (`tool.call` is refused; `tool_metric` gates
    /// read only the attempt's own calls and scripted outputs).
    #[arg(long)]
    pub no_bundled_tools: bool,
}

/// Loads and validates a package, printing the report when it is invalid.
pub fn load(path: &Path, out: &mut dyn Write) -> std::io::Result<Option<LoadedPackage>> {
    match crate::package::dir::load_dir(path) {
        Ok(p) => Ok(Some(p)),
        Err(report) => {
            write!(out, "{}", report.to_text(&path.display().to_string()))?;
            Ok(None)
        }
    }
}

/// Largest HTTP response body the CLI accepts (model replies, fetched pages).
const MAX_HTTP_BODY: usize = 8 << 20;

/// A model backend and, for the scripted one, its scripted bundled-tool outputs.
type Backend = (Arc<dyn Model>, Option<Arc<dyn ToolOutputs>>);

/// Parses `--model`; `env` reads environment variables (only for `chat:`).
pub fn model_from_spec(
    spec: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Backend, String> {
    model_from_spec_in(spec, None, env)
}

/// [`model_from_spec`] for a package at `package_root`: a `scripted:FILE` inside the package
/// is named by its package-relative path in events (`scripted:scripts/smoke.yaml`), however
/// FILE was typed; a script outside the package keeps FILE as typed.
pub fn model_from_spec_in(
    spec: &str,
    package_root: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Backend, String> {
    match spec.split_once(':') {
        Some(("scripted", file)) if !file.is_empty() => {
            let path = Path::new(file);
            let shown = package_root
                .and_then(|root| {
                    let root = root.canonicalize().ok()?;
                    let rel = path
                        .canonicalize()
                        .ok()?
                        .strip_prefix(&root)
                        .ok()?
                        .to_owned();
                    Some(rel.display().to_string())
                })
                .unwrap_or_else(|| file.to_owned());
            let m = Arc::new(ScriptedModel::from_file_named(path, &shown).map_err(|e| e.0)?);
            Ok((m.clone(), Some(m)))
        }
        Some(("chat", name)) if !name.is_empty() => {
            // Model-tier escalation: `LOOM_PROCESS_MODEL_TIER_<1..3>` names the model a tier
            // asks for; tiers without one use MODEL.
            let tiers: std::collections::BTreeMap<u8, String> = (1..=3u8)
                .filter_map(|t| env(&format!("LOOM_PROCESS_MODEL_TIER_{t}")).map(|m| (t, m)))
                .collect();
            let config = config_from_env(name, env)?;
            let dial = Arc::new(HyperDial::new(MAX_HTTP_BODY));
            Ok((
                Arc::new(ChatModel::new(config, dial)?.with_tier_models(tiers)),
                None,
            ))
        }
        _ => Err(format!(
            "--model {spec:?}: expected scripted:FILE or chat:MODEL (README \"Running\")"
        )),
    }
}

/// Reads a Task Config JSON file (loop-engine "Task Config Schema").
pub fn read_task(path: &Path) -> Result<TaskConfig, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: {e} (loop-engine \"Task Config Schema\")",
            path.display()
        )
    })
}

/// Runs the package and prints a summary.
pub fn run(args: &Args, out: &mut dyn Write) -> std::io::Result<i32> {
    let Some(pkg) = load(&args.path, out)? else {
        return Ok(exit::USAGE);
    };
    let (model, tool_outputs) =
        match model_from_spec_in(&args.model, Some(&pkg.root), |k| std::env::var(k).ok()) {
            Ok(m) => m,
            Err(e) => {
                writeln!(out, "error: {e}")?;
                return Ok(exit::USAGE);
            }
        };
    let mut task = match &args.task {
        Some(p) => match read_task(p) {
            Ok(t) => t,
            Err(e) => {
                writeln!(out, "error: {e}")?;
                return Ok(exit::USAGE);
            }
        },
        None => TaskConfig::default(),
    };
    task.goal = args.goal.clone();
    task.workspace = args.workspace.display().to_string();
    // The binary's entry point: the only place the wall clock is chosen.
    let clock: Arc<dyn Clock> = match args.clock {
        ClockKind::System => Arc::new(SystemClock),
        ClockKind::Manual => Arc::new(ManualClock::ticking(DETERMINISTIC_START_MS, 1)),
    };
    let fetch: Option<Arc<dyn Fetch>> = if task.risk_policy.allow_network {
        match DialFetch::new(Arc::new(HyperDial::new(MAX_HTTP_BODY))) {
            Ok(f) => Some(Arc::new(f)),
            Err(e) => {
                writeln!(out, "error: {e}")?;
                return Ok(exit::USAGE);
            }
        }
    } else {
        None
    };
    let options = RunOptions {
        enable_command_exit_gates: args.enable_command_exit_gates,
        bundled_tools: !args.no_bundled_tools,
        python: args.python.clone(),
        ..RunOptions::default()
    };
    // The binary's entry point: the only place the environment is read for credentials.
    let auth_env = crate::runner::declared_auth_env(&pkg.process, |k| std::env::var(k).ok());
    let env = Env {
        planner: Some(Arc::new(ModelPlanner(model.clone()))),
        model,
        clock,
        confirm: Arc::new(DenyConfirm),
        fetch,
        tool_outputs,
        bundled: crate::runner::bundled_for(&pkg.root, &options, &auth_env),
        auth_env,
    };
    let req = RunRequest {
        goal: args.goal.clone(),
        workspace: args.workspace.clone(),
        seed: args.seed,
        task,
        options,
    };
    let outcome = match crate::runner::run(&pkg.process, &env, &req) {
        Ok(o) => o,
        Err(e) => {
            writeln!(out, "error: {e}")?;
            return Ok(exit::USAGE);
        }
    };
    if let Some(path) = &args.events
        && let Err(e) = std::fs::write(path, to_jsonl(&outcome.events))
    {
        writeln!(out, "error: cannot write {}: {e}", path.display())?;
        return Ok(exit::USAGE);
    }
    write!(out, "{}", summarize(&outcome.events))?;
    if let Some(path) = &args.events {
        writeln!(out, "events: {}", path.display())?;
    }
    Ok(if outcome.status == RunStatus::Completed {
        exit::OK
    } else {
        exit::INVALID
    })
}
