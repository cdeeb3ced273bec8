//! Shared helpers of the runner tests (included with `mod run_common;` by the `run*` tests).
#![allow(dead_code)]

use loom_process::engine::clock::ManualClock;
use loom_process::engine::model::{Model, ModelError, ModelReply, ModelRequest, ScriptedModel};
use loom_process::engine::policy::{DenyConfirm, TaskConfig};
use loom_process::package::Process;
use loom_process::runner::{Env, RunOptions, RunOutcome, RunRequest, run};
use serde_json::Value as Json;
use std::sync::Arc;

/// The closure behind a [`FnModel`].
pub type ReplyFn = dyn Fn(&ModelRequest) -> Result<ModelReply, ModelError> + Send + Sync;

/// A model answering through a closure.
pub struct FnModel(pub Box<ReplyFn>);

impl std::fmt::Debug for FnModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnModel")
    }
}

impl Model for FnModel {
    fn name(&self) -> String {
        "fn".into()
    }
    fn reply(&self, req: &ModelRequest) -> Result<ModelReply, ModelError> {
        (self.0)(req)
    }
}

pub fn process(yaml: &str) -> Process {
    serde_saphyr::from_str(yaml).expect("test process parses")
}

pub fn scripted(yaml: &str) -> Arc<dyn Model> {
    Arc::new(ScriptedModel::parse("scripted:test", yaml).expect("test script parses"))
}

pub fn env(model: Arc<dyn Model>, tick_ms: i64) -> Env {
    Env {
        model,
        clock: Arc::new(ManualClock::ticking(1_767_225_600_000, tick_ms)),
        confirm: Arc::new(DenyConfirm),
        fetch: None,
        tool_outputs: None,
        planner: None,
        bundled: None,
        auth_env: Default::default(),
    }
}

pub fn run_in(
    dir: &std::path::Path,
    p: &Process,
    env: &Env,
    task: TaskConfig,
    options: RunOptions,
) -> RunOutcome {
    let req = RunRequest {
        goal: "test goal".into(),
        workspace: dir.to_path_buf(),
        seed: 42,
        task,
        options,
    };
    run(p, env, &req).expect("run starts")
}

pub fn quick(p: &Process, model: Arc<dyn Model>) -> (RunOutcome, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        dir.path(),
        p,
        &env(model, 1),
        TaskConfig::default(),
        RunOptions::default(),
    );
    (out, dir)
}

/// `(type, payload)` of every event.
pub fn kinds(out: &RunOutcome) -> Vec<(String, Json)> {
    out.events
        .iter()
        .map(|e| (e.kind.name().to_owned(), e.payload.clone()))
        .collect()
}

/// Phase state transitions `phase:to` in order.
pub fn phase_transitions(out: &RunOutcome) -> Vec<String> {
    kinds(out)
        .into_iter()
        .filter(|(k, p)| k == "StateChanged" && p["scope"] == "phase")
        .map(|(_, p)| {
            format!(
                "{}:{}",
                p["phase"].as_str().unwrap(),
                p["to"].as_str().unwrap()
            )
        })
        .collect()
}
