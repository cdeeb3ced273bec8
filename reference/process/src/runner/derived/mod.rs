//! Replies derived from the process definition: the model of a `mode: deterministic` test
//! case that has no script (guide "Process test manifest": "mode: deterministic runs with a
//! scripted model backend for reproducible CI checks").
//!
//! The guide's loader scripts such a run from the definition itself
//! (`loom.processes.testing`): each phase writes each of its deliverables with content made
//! from the phase and then reports itself complete, model verification is off, and the
//! acceptance block is checked. [`DerivedModel`] does the same on this runner:
//!
//! - **Act**: turn 1 writes the phase's deliverables ([`content`]: canonical paths, or under
//!   `<intermediate_root>/<phase>/` for a fan-in worker) with neutral texts plus the samples
//!   that the phase's gates and regex rules require; the last turn says `Completed <phase>.`
//!   (with the samples that `output` / `summary` checks read). Every attempt gets the same
//!   replies: a retry repeats what failed.
//! - **Judge** (`llm` rules, model-judged semantic checks): `pass`, with a reason saying the
//!   rule was not judged (the guide's loader turns model verification off in deterministic
//!   tests); [`DerivedModel::unjudged`] lists them for the report.
//! - **Fact check**: no verdict, so every extracted claim stays `insufficient_evidence`:
//!   derived replies have no evidence (their own texts make no claim).
//! - **Memory**: none. **Replan**: declined.
//! - **Tool outputs** ([`ToolOutputs`]): for a tool the package does not bundle, a stand-in
//!   output satisfying the phase's `tool_metric` gates; [`DerivedModel::stand_ins`] lists the
//!   tools that were asked. Bundled tools run for real and commands (`command_exit` gates,
//!   helpers) run as they are: nothing here makes them pass.
//!
//! What the definition requires but derived replies cannot give (a pattern no text can be
//! derived for, a forbidden pattern the derived text matches, conflicting gates) is listed by
//! [`DerivedModel::notes`]: the check then fails in the run, and the report says why.

pub mod content;
pub mod sample;

use crate::engine::action::ToolAction;
use crate::engine::model::{Model, ModelError, ModelReply, ModelRequest, Purpose};
use crate::engine::tools::ToolOutputs;
use crate::package::Process;
use content::PhaseReplies;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// The model name in events.
pub const NAME: &str = "derived:process.yaml";

/// Replies derived from a process definition (see the module docs).
#[derive(Debug)]
pub struct DerivedModel {
    phases: BTreeMap<String, PhaseReplies>,
    /// `(phase, tool)` → stand-in output.
    tools: BTreeMap<(String, String), Json>,
    notes: Vec<String>,
    unjudged: Mutex<BTreeSet<String>>,
    stand_ins: Mutex<BTreeSet<String>>,
}

impl DerivedModel {
    /// Derives the replies of every phase of `process`.
    pub fn new(process: &Process) -> Self {
        let mut phases = BTreeMap::new();
        let mut tools = BTreeMap::new();
        let mut notes = Vec::new();
        for ph in &process.phases {
            let (replies, n) = content::phase_replies(process, ph);
            notes.extend(n);
            phases.insert(ph.id.clone(), replies);
            let (outs, n) = content::tool_outputs(ph);
            notes.extend(n);
            for (tool, data) in outs {
                tools.insert((ph.id.clone(), tool), data);
            }
        }
        DerivedModel {
            phases,
            tools,
            notes,
            unjudged: Mutex::new(BTreeSet::new()),
            stand_ins: Mutex::new(BTreeSet::new()),
        }
    }

    /// What the definition requires that derived replies cannot give, one line each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The `llm` rules and model-judged checks answered `pass` without judgement so far.
    pub fn unjudged(&self) -> Vec<String> {
        self.unjudged
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The tools (not bundled) whose `tool_metric` gates read a derived stand-in output.
    pub fn stand_ins(&self) -> Vec<String> {
        self.stand_ins
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn record(set: &Mutex<BTreeSet<String>>, item: String) {
        if let Ok(mut s) = set.lock() {
            s.insert(item);
        }
    }
}

impl ToolOutputs for DerivedModel {
    fn output(&self, tool: &str, phase: &str, _attempt: u32) -> Option<Json> {
        let data = self
            .tools
            .get(&(phase.to_owned(), tool.to_owned()))?
            .clone();
        Self::record(&self.stand_ins, tool.to_owned());
        Some(data)
    }
}

impl Model for DerivedModel {
    fn name(&self) -> String {
        NAME.to_owned()
    }

    fn reply(&self, req: &ModelRequest) -> Result<ModelReply, ModelError> {
        match &req.purpose {
            Purpose::Act => {
                let Some(p) = self.phases.get(&req.phase_id) else {
                    return Err(ModelError(format!(
                        "{NAME}: the definition has no phase {:?}",
                        req.phase_id
                    )));
                };
                let final_turn = if p.writes.is_empty() { 1 } else { 2 };
                match req.turn {
                    1 if final_turn == 2 => Ok(ModelReply {
                        message: format!("Writing the deliverables of {}.", req.phase_id),
                        actions: p
                            .writes
                            .iter()
                            .enumerate()
                            .map(|(k, (path, content))| ToolAction::FsWrite {
                                id: format!("derived-{}", k + 1),
                                path: path.clone(),
                                content: content.clone(),
                            })
                            .collect(),
                        ..Default::default()
                    }),
                    t if t == final_turn => Ok(ModelReply {
                        message: p.final_message.clone(),
                        done: true,
                        ..Default::default()
                    }),
                    t => Err(ModelError(format!(
                        "{NAME}: phase {:?} attempt {} has {final_turn} derived turns, turn {t} was asked for",
                        req.phase_id, req.attempt
                    ))),
                }
            }
            Purpose::Judge { rule, .. } => {
                Self::record(&self.unjudged, rule.clone());
                Ok(ModelReply {
                    message: "pass: not judged".into(),
                    done: true,
                    verdict: Some(true),
                    reasons: vec![
                        "not judged: derived replies have no model (the guide's loader turns model verification off in deterministic tests)".into(),
                    ],
                    ..Default::default()
                })
            }
            Purpose::FactCheck { claims, .. } => Ok(ModelReply {
                message: format!(
                    "derived replies decide none of {} claims: each stays insufficient_evidence",
                    claims.len()
                ),
                done: true,
                ..Default::default()
            }),
            Purpose::Memory { .. } => Ok(ModelReply {
                message: "derived replies extract no memory".into(),
                done: true,
                ..Default::default()
            }),
            Purpose::Replan(ctx) => Ok(ModelReply {
                message: format!(
                    "{NAME}: derived replies do not replan (replan {} of phase {:?} declined)",
                    ctx.replan, req.phase_id
                ),
                done: true,
                ..Default::default()
            }),
        }
    }
}
