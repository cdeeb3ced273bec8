//! The model seam: the runner asks a [`Model`] for the next turn of a phase (or for a verdict
//! on an `llm` rule) and gets a message, proposed tool actions and token usage back.
//!
//! [`ScriptedModel`] answers from a script file, which is what `mode: deterministic` package
//! tests use (guide "Process test manifest"). Script format (YAML or JSON, README "Running"):
//!
//! ```yaml
//! phases:
//!   research:                 # phase id
//!     - attempt: 1            # iteration attempt (1-based)
//!       turns:                # one entry per model turn, in order
//!         - message: "Writing the notes."
//!           tokens: {prompt: 120, completion: 40}
//!           actions:
//!             - {id: w1, type: fs.write, path: notes.md, content: "..."}
//!         - message: "Done."  # the attempt ends after its last scripted turn
//! judges:
//!   claims-sourced:           # llm rule name (verification rule or judge rule id)
//!     - phase: research       # optional: only for this phase
//!       attempt: 1            # optional: only for this attempt
//!       verdict: pass         # pass | fail
//!       reasons: ["every claim cites a source"]
//!       tokens: {prompt: 50, completion: 10}
//! tools:                      # outputs of tools that are not bundled with the package (a
//!   humanize_writing:         # package's own tools/*.py run for real, `engine::bundled`)
//!     - phase: synthesize     # optional filters, first match wins
//!       attempt: 1
//!       data: {report: {humanization_score: 84}}
//! fact_checks:                # the fact checker's verdicts on extracted claims
//!   - phase: research         # optional filters; `match` is a regex on the claim text
//!     match: "4-day week"
//!     verdict: supported      # supported | contradicted | insufficient_evidence
//!     source: "E1"            # optional evidence reference
//! memory:                     # memory extraction per phase (guide "Memory types")
//!   research:
//!     - {type: evidence_finding, content: "..."}
//! planner:                    # replans after an exhausted iteration loop, per phase
//!   fix:
//!     - replan: 1             # 1-based replan number
//!       instructions: "Split the change into two smaller patches."
//!       criteria: ["diff under 200 lines"]   # optional: replaces the plan step's criteria
//! ```
//!
//! A claim no `fact_checks` entry matches gets `insufficient_evidence`; a phase without
//! `memory` entries extracts nothing; a replan the `planner` section does not script is
//! declined (the phase then fails as exhausted).
//!
//! Lookups are stateless (by phase, attempt and turn), so concurrent or repeated runs see the
//! same replies. Asking past the end of a script is an error naming the phase, attempt and
//! turn.

use super::action::{Observation, ToolAction};
use super::tools::ToolOutputs;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// Token usage of one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenUsage {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt: u64,
    /// Completion tokens.
    #[serde(default)]
    pub completion: u64,
}

impl TokenUsage {
    /// Prompt plus completion.
    pub fn total(&self) -> u64 {
        self.prompt.saturating_add(self.completion)
    }
}

/// One claim sent to the fact checker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClaimText {
    /// `CLM-…` id.
    pub id: String,
    /// The claim sentence.
    pub text: String,
}

/// A memory type to extract (guide "Memory types").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryKind {
    /// Type name.
    #[serde(rename = "type")]
    pub name: String,
    /// What it captures.
    pub description: String,
}

/// What the planner is told when an iteration loop is exhausted (guide "Replanning",
/// "Planner examples", "Phase iteration loops": `replan_on_exhaustion`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplanContext {
    /// 1-based replan number for this phase.
    pub replan: u32,
    /// The failures of the loop's last attempt.
    pub failures: Vec<String>,
    /// `replanning.triggers`.
    pub triggers: String,
    /// `replanning.guidance`.
    pub guidance: String,
    /// `planner_examples` as JSON (goal + subtasks).
    pub examples: Json,
    /// The current plan step's criteria.
    pub criteria: Vec<String>,
}

/// What the runner asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Purpose {
    /// The next turn of a phase.
    Act,
    /// A verdict on an `llm` rule: its name and its natural-language check.
    Judge {
        /// Rule name.
        rule: String,
        /// The check text.
        check: String,
        /// The text under judgement (phase output or deliverables).
        subject: String,
    },
    /// Verdicts on claims extracted from the phase's output (guide "Validity contract").
    FactCheck {
        /// The claims.
        claims: Vec<ClaimText>,
        /// The text they were extracted from.
        subject: String,
    },
    /// Memory entries of the declared types from the phase's output (guide "Memory types").
    Memory {
        /// The declared types.
        types: Vec<MemoryKind>,
        /// `memory.extraction_guidance`.
        guidance: String,
        /// The phase's output.
        subject: String,
    },
    /// A revised step after an exhausted iteration loop (guide "Replanning").
    Replan(ReplanContext),
}

/// One request to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// Act or judge.
    pub purpose: Purpose,
    /// The system prompt: persona, tool guidance, phase instructions.
    pub system: String,
    /// The run's goal.
    pub goal: String,
    /// Phase id.
    pub phase_id: String,
    /// Phase description.
    pub phase_description: String,
    /// Iteration attempt, 1-based.
    pub attempt: u32,
    /// Turn within the attempt, 1-based.
    pub turn: u32,
    /// Observations of this attempt's tool calls so far.
    pub observations: Vec<Observation>,
    /// Feedback from failed gates or rules of the previous attempt.
    pub feedback: Vec<String>,
    /// The model tier asked for: the phase's `model_tier` (1 fast .. 3 powerful), raised by
    /// one per retry (capped at 3).
    pub model_tier: u8,
}

/// One reply.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelReply {
    /// The message text.
    pub message: String,
    /// Proposed tool actions, in order.
    pub actions: Vec<ToolAction>,
    /// Token usage.
    pub tokens: TokenUsage,
    /// The model considers this attempt finished after these actions.
    pub done: bool,
    /// For judge requests: the verdict (`true` = pass).
    pub verdict: Option<bool>,
    /// For judge requests: the reasons.
    pub reasons: Vec<String>,
    /// For fact checks: one verdict per claim the checker decided.
    pub claims: Vec<ClaimVerdict>,
    /// For memory extraction: the entries.
    pub memory: Vec<MemoryEntry>,
    /// For replans: the revised step, or `None` when the planner declines.
    pub replan: Option<Replan>,
}

/// A fact checker's verdict on one claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimVerdict {
    /// The claim id.
    pub id: String,
    /// `supported`, `contradicted` or `insufficient_evidence`.
    pub verdict: String,
    /// Evidence reference, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// One extracted memory entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryEntry {
    /// A declared memory type.
    #[serde(rename = "type")]
    pub kind: String,
    /// The knowledge to keep.
    pub content: String,
}

/// A planner's revised step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replan {
    /// Instructions for the phase's next loop (added to its prompt).
    pub instructions: String,
    /// Replacement completion criteria for the plan step (empty: keep).
    #[serde(default)]
    pub criteria: Vec<String>,
}

/// A model call that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError(pub String);

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelError {}

/// A model backend.
#[cfg_attr(test, mockall::automock)]
pub trait Model: Send + Sync + std::fmt::Debug {
    /// A short name for events (`scripted:FILE`, `chat:MODEL`).
    fn name(&self) -> String;
    /// The reply to `req`.
    fn reply(&self, req: &ModelRequest) -> Result<ModelReply, ModelError>;
}

/// One scripted turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    /// Message text.
    #[serde(default)]
    pub message: String,
    /// Actions as Tool Action v1 JSON (parsed strictly when the script is loaded).
    #[serde(default)]
    pub actions: Vec<Json>,
    /// Token usage.
    #[serde(default)]
    pub tokens: TokenUsage,
}

/// The turns of one attempt.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptAttempt {
    /// 1-based attempt.
    pub attempt: u32,
    /// Turns, in order.
    pub turns: Vec<ScriptTurn>,
}

/// A scripted verdict for an `llm` rule.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptVerdict {
    /// Only for this phase.
    #[serde(default)]
    pub phase: Option<String>,
    /// Only for this attempt.
    #[serde(default)]
    pub attempt: Option<u32>,
    /// `pass` or `fail`.
    pub verdict: String,
    /// Reasons.
    #[serde(default)]
    pub reasons: Vec<String>,
    /// Token usage.
    #[serde(default)]
    pub tokens: TokenUsage,
}

/// A script file.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Turns by phase id.
    #[serde(default)]
    pub phases: BTreeMap<String, Vec<ScriptAttempt>>,
    /// Verdicts by rule name.
    #[serde(default)]
    pub judges: BTreeMap<String, Vec<ScriptVerdict>>,
    /// Structured outputs of tools that are not bundled with the package, by tool name, for
    /// `tool_metric` gates.
    #[serde(default)]
    pub tools: BTreeMap<String, Vec<ScriptToolOutput>>,
    /// Fact-check verdicts, first match wins per claim.
    #[serde(default)]
    pub fact_checks: Vec<ScriptFactCheck>,
    /// Memory entries by phase id.
    #[serde(default)]
    pub memory: BTreeMap<String, Vec<MemoryEntry>>,
    /// Replans by phase id.
    #[serde(default)]
    pub planner: BTreeMap<String, Vec<ScriptReplan>>,
}

/// A scripted fact-check verdict.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptFactCheck {
    /// Only for this phase.
    #[serde(default)]
    pub phase: Option<String>,
    /// Only for this attempt.
    #[serde(default)]
    pub attempt: Option<u32>,
    /// Regex (Python `re`) searched in the claim text.
    #[serde(rename = "match")]
    pub pattern: String,
    /// `supported`, `contradicted` or `insufficient_evidence`.
    pub verdict: String,
    /// Evidence reference.
    #[serde(default)]
    pub source: Option<String>,
}

/// A scripted replan.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptReplan {
    /// 1-based replan number.
    pub replan: u32,
    /// Instructions for the next loop.
    pub instructions: String,
    /// Replacement criteria.
    #[serde(default)]
    pub criteria: Vec<String>,
}

/// The verdicts a fact checker may give (guide "Validity contract": the claim states
/// besides `extracted` and `pruned`).
pub const CLAIM_VERDICTS: [&str; 3] = ["supported", "contradicted", "insufficient_evidence"];

/// A scripted tool output.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolOutput {
    /// Only for this phase.
    #[serde(default)]
    pub phase: Option<String>,
    /// Only for this attempt.
    #[serde(default)]
    pub attempt: Option<u32>,
    /// The tool's structured data (`ToolResult.ok(..., data=...)`).
    pub data: Json,
}

/// A scripted turn with its actions parsed.
type ParsedTurn = (ScriptTurn, Vec<ToolAction>);

/// The scripted backend.
#[derive(Debug, Clone)]
pub struct ScriptedModel {
    name: String,
    /// (phase, attempt) -> parsed turns.
    turns: BTreeMap<(String, u32), Vec<ParsedTurn>>,
    judges: BTreeMap<String, Vec<ScriptVerdict>>,
    tools: BTreeMap<String, Vec<ScriptToolOutput>>,
    fact_checks: Vec<(ScriptFactCheck, crate::package::pattern::Pattern)>,
    memory: BTreeMap<String, Vec<MemoryEntry>>,
    planner: BTreeMap<String, Vec<ScriptReplan>>,
}

impl ScriptedModel {
    /// Parses a script (YAML; JSON is YAML too). `name` labels the backend in events.
    pub fn parse(name: &str, text: &str) -> Result<Self, ModelError> {
        let script: Script =
            serde_saphyr::from_str(text).map_err(|e| ModelError(format!("script {name}: {e}")))?;
        let mut turns = BTreeMap::new();
        for (phase, attempts) in &script.phases {
            for a in attempts {
                if a.attempt == 0 {
                    return Err(ModelError(format!(
                        "script {name}: phases.{phase}: attempt numbers start at 1"
                    )));
                }
                let mut parsed = Vec::new();
                for (ti, t) in a.turns.iter().enumerate() {
                    let mut actions = Vec::new();
                    for (ai, v) in t.actions.iter().enumerate() {
                        let act = ToolAction::from_json(v).map_err(|e| {
                            ModelError(format!(
                                "script {name}: phases.{phase} attempt {} turns[{ti}].actions[{ai}]: {e}",
                                a.attempt
                            ))
                        })?;
                        actions.push(act);
                    }
                    parsed.push((t.clone(), actions));
                }
                if turns.insert((phase.clone(), a.attempt), parsed).is_some() {
                    return Err(ModelError(format!(
                        "script {name}: phases.{phase}: attempt {} is scripted twice",
                        a.attempt
                    )));
                }
            }
        }
        for (rule, verdicts) in &script.judges {
            for (i, v) in verdicts.iter().enumerate() {
                if v.verdict != "pass" && v.verdict != "fail" {
                    return Err(ModelError(format!(
                        "script {name}: judges.{rule}[{i}].verdict must be pass or fail, got {:?}",
                        v.verdict
                    )));
                }
            }
        }
        let mut fact_checks = Vec::new();
        for (i, f) in script.fact_checks.iter().enumerate() {
            if !CLAIM_VERDICTS.contains(&f.verdict.as_str()) {
                return Err(ModelError(format!(
                    "script {name}: fact_checks[{i}].verdict must be one of {}, got {:?}",
                    CLAIM_VERDICTS.join(", "),
                    f.verdict
                )));
            }
            let re = crate::package::pattern::Pattern::compile(&f.pattern)
                .map_err(|e| ModelError(format!("script {name}: fact_checks[{i}].match: {e}")))?;
            fact_checks.push((f.clone(), re));
        }
        for (phase, replans) in &script.planner {
            if replans.iter().any(|r| r.replan == 0) {
                return Err(ModelError(format!(
                    "script {name}: planner.{phase}: replan numbers start at 1"
                )));
            }
        }
        Ok(ScriptedModel {
            name: name.to_owned(),
            turns,
            judges: script.judges,
            tools: script.tools,
            fact_checks,
            memory: script.memory,
            planner: script.planner,
        })
    }

    /// Reads and parses a script file, named `scripted:<path as given>`.
    pub fn from_file(path: &std::path::Path) -> Result<Self, ModelError> {
        Self::from_file_named(path, &path.display().to_string())
    }

    /// Reads and parses a script file, named `scripted:<shown>` in events (the test runner
    /// and `run` pass the package-relative path, so the name does not depend on how the
    /// package directory was typed).
    pub fn from_file_named(path: &std::path::Path, shown: &str) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError(format!("cannot read script {}: {e}", path.display())))?;
        ScriptedModel::parse(&format!("scripted:{shown}"), &text)
    }
}

impl ToolOutputs for ScriptedModel {
    fn output(&self, tool: &str, phase: &str, attempt: u32) -> Option<Json> {
        self.tools.get(tool)?.iter().find_map(|t| {
            (t.phase.as_deref().is_none_or(|p| p == phase)
                && t.attempt.is_none_or(|a| a == attempt))
            .then(|| t.data.clone())
        })
    }
}

impl Model for ScriptedModel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn reply(&self, req: &ModelRequest) -> Result<ModelReply, ModelError> {
        match &req.purpose {
            Purpose::Act => {
                let key = (req.phase_id.clone(), req.attempt);
                let Some(turns) = self.turns.get(&key) else {
                    return Err(ModelError(format!(
                        "{}: the script has no turns for phase {:?} attempt {}",
                        self.name, req.phase_id, req.attempt
                    )));
                };
                let idx = req.turn.saturating_sub(1) as usize;
                let Some((turn, actions)) = turns.get(idx) else {
                    return Err(ModelError(format!(
                        "{}: the script ran out: phase {:?} attempt {} has {} turns, turn {} was asked for",
                        self.name,
                        req.phase_id,
                        req.attempt,
                        turns.len(),
                        req.turn
                    )));
                };
                Ok(ModelReply {
                    message: turn.message.clone(),
                    actions: actions.clone(),
                    tokens: turn.tokens,
                    done: idx + 1 == turns.len(),
                    ..Default::default()
                })
            }
            Purpose::Judge { rule, .. } => {
                let found = self.judges.get(rule).and_then(|vs| {
                    vs.iter().find(|v| {
                        v.phase.as_ref().is_none_or(|p| *p == req.phase_id)
                            && v.attempt.is_none_or(|a| a == req.attempt)
                    })
                });
                let Some(v) = found else {
                    return Err(ModelError(format!(
                        "{}: the script has no verdict for rule {rule:?} in phase {:?} attempt {}",
                        self.name, req.phase_id, req.attempt
                    )));
                };
                Ok(ModelReply {
                    message: format!("{}: {}", v.verdict, v.reasons.join("; ")),
                    tokens: v.tokens,
                    done: true,
                    verdict: Some(v.verdict == "pass"),
                    reasons: v.reasons.clone(),
                    ..Default::default()
                })
            }
            Purpose::FactCheck { claims, .. } => {
                let mut out = Vec::new();
                for c in claims {
                    let hit = self.fact_checks.iter().find(|(f, re)| {
                        f.phase.as_ref().is_none_or(|p| *p == req.phase_id)
                            && f.attempt.is_none_or(|a| a == req.attempt)
                            && re.is_match(&c.text).unwrap_or(false)
                    });
                    if let Some((f, _)) = hit {
                        out.push(ClaimVerdict {
                            id: c.id.clone(),
                            verdict: f.verdict.clone(),
                            source: f.source.clone(),
                        });
                    }
                }
                Ok(ModelReply {
                    message: format!("{} of {} claims decided", out.len(), claims.len()),
                    done: true,
                    claims: out,
                    ..Default::default()
                })
            }
            Purpose::Memory { .. } => Ok(ModelReply {
                done: true,
                memory: self.memory.get(&req.phase_id).cloned().unwrap_or_default(),
                ..Default::default()
            }),
            Purpose::Replan(ctx) => {
                let found = self
                    .planner
                    .get(&req.phase_id)
                    .and_then(|rs| rs.iter().find(|r| r.replan == ctx.replan));
                Ok(ModelReply {
                    message: match found {
                        Some(_) => format!("replan {} of phase {}", ctx.replan, req.phase_id),
                        None => format!(
                            "{}: the script has no replan {} for phase {:?}: declined",
                            self.name, ctx.replan, req.phase_id
                        ),
                    },
                    done: true,
                    replan: found.map(|r| Replan {
                        instructions: r.instructions.clone(),
                        criteria: r.criteria.clone(),
                    }),
                    ..Default::default()
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = r#"
phases:
  research:
    - attempt: 1
      turns:
        - message: "writing"
          tokens: {prompt: 10, completion: 5}
          actions:
            - {id: w1, type: fs.write, path: notes.md, content: "hello"}
        - message: "done"
judges:
  claims-sourced:
    - phase: other
      verdict: fail
    - verdict: pass
      reasons: [cited]
"#;

    fn req(phase: &str, attempt: u32, turn: u32) -> ModelRequest {
        ModelRequest {
            purpose: Purpose::Act,
            system: String::new(),
            goal: "g".into(),
            phase_id: phase.into(),
            phase_description: String::new(),
            attempt,
            turn,
            observations: Vec::new(),
            feedback: Vec::new(),
            model_tier: 2,
        }
    }

    #[test]
    fn fact_checks_memory_and_replans_come_from_the_script() {
        let m = ScriptedModel::parse(
            "t",
            "fact_checks:\n  - {phase: a, match: \"grew \\\\d+%\", verdict: supported, source: E1}\n  - {match: revenue, verdict: contradicted}\nmemory:\n  a: [{type: finding, content: c}]\nplanner:\n  a: [{replan: 1, instructions: narrow it}]\n",
        )
        .unwrap();
        let mut r = req("a", 1, 1);
        r.purpose = Purpose::FactCheck {
            claims: vec![
                ClaimText {
                    id: "CLM-1".into(),
                    text: "Sales grew 12% in 2025.".into(),
                },
                ClaimText {
                    id: "CLM-2".into(),
                    text: "The revenue fell.".into(),
                },
                ClaimText {
                    id: "CLM-3".into(),
                    text: "The team has 4 people.".into(),
                },
            ],
            subject: String::new(),
        };
        let v = m.reply(&r).unwrap().claims;
        assert_eq!(v.len(), 2, "an unmatched claim gets no verdict");
        assert_eq!(
            (v[0].verdict.as_str(), v[0].source.as_deref()),
            ("supported", Some("E1"))
        );
        assert_eq!(
            (v[1].id.as_str(), v[1].verdict.as_str()),
            ("CLM-2", "contradicted")
        );
        r.purpose = Purpose::Memory {
            types: vec![],
            guidance: String::new(),
            subject: String::new(),
        };
        assert_eq!(m.reply(&r).unwrap().memory.len(), 1);
        let ctx = ReplanContext {
            replan: 1,
            failures: vec![],
            triggers: String::new(),
            guidance: String::new(),
            examples: Json::Null,
            criteria: vec![],
        };
        r.purpose = Purpose::Replan(ctx.clone());
        assert_eq!(
            m.reply(&r).unwrap().replan.unwrap().instructions,
            "narrow it"
        );
        r.purpose = Purpose::Replan(ReplanContext { replan: 2, ..ctx });
        assert!(
            m.reply(&r).unwrap().replan.is_none(),
            "an unscripted replan is declined"
        );
        assert!(
            ScriptedModel::parse("t", "fact_checks:\n  - {match: x, verdict: maybe}\n")
                .unwrap_err()
                .0
                .contains("verdict must be one of")
        );
    }

    #[test]
    fn replies_by_phase_attempt_and_turn() {
        let m = ScriptedModel::parse("t", SCRIPT).unwrap();
        let r1 = m.reply(&req("research", 1, 1)).unwrap();
        assert_eq!(r1.actions.len(), 1);
        assert_eq!(r1.actions[0].type_name(), "fs.write");
        assert_eq!(r1.tokens.total(), 15);
        assert!(!r1.done);
        let r2 = m.reply(&req("research", 1, 2)).unwrap();
        assert!(r2.done && r2.actions.is_empty());
        let err = m.reply(&req("research", 1, 3)).unwrap_err().to_string();
        assert!(
            err.contains("ran out")
                && err.contains("\"research\" attempt 1")
                && err.contains("turn 3"),
            "{err}"
        );
        let err = m.reply(&req("research", 2, 1)).unwrap_err().to_string();
        assert!(err.contains("attempt 2"), "{err}");
    }

    #[test]
    fn judge_verdicts_match_phase_filters_in_order() {
        let m = ScriptedModel::parse("t", SCRIPT).unwrap();
        let mut r = req("research", 1, 1);
        r.purpose = Purpose::Judge {
            rule: "claims-sourced".into(),
            check: String::new(),
            subject: String::new(),
        };
        assert_eq!(m.reply(&r).unwrap().verdict, Some(true));
        r.phase_id = "other".into();
        assert_eq!(m.reply(&r).unwrap().verdict, Some(false));
        r.purpose = Purpose::Judge {
            rule: "nope".into(),
            check: String::new(),
            subject: String::new(),
        };
        assert!(
            m.reply(&r)
                .unwrap_err()
                .0
                .contains("no verdict for rule \"nope\"")
        );
    }

    #[test]
    fn tool_outputs_match_filters_in_order() {
        let m = ScriptedModel::parse(
            "t",
            "tools:\n  score:\n    - {phase: a, attempt: 2, data: {v: 2}}\n    - {data: {v: 1}}\n",
        )
        .unwrap();
        assert_eq!(m.output("score", "a", 2), Some(serde_json::json!({"v": 2})));
        assert_eq!(m.output("score", "a", 1), Some(serde_json::json!({"v": 1})));
        assert_eq!(m.output("other", "a", 1), None);
    }

    #[test]
    fn bad_scripts_are_rejected_with_their_location() {
        let bad_action = "phases:\n  a:\n    - attempt: 1\n      turns:\n        - actions: [{id: x, type: fs.nuke}]\n";
        let err = ScriptedModel::parse("t", bad_action).unwrap_err().0;
        assert!(
            err.contains("phases.a attempt 1 turns[0].actions[0]") && err.contains("fs.nuke"),
            "{err}"
        );
        let unknown = "phases:\n  a:\n    - attempt: 1\n      turns: []\n      extra: 1\n";
        assert!(
            ScriptedModel::parse("t", unknown)
                .unwrap_err()
                .0
                .contains("extra")
        );
        let dup = "phases:\n  a:\n    - {attempt: 1, turns: []}\n    - {attempt: 1, turns: []}\n";
        assert!(
            ScriptedModel::parse("t", dup)
                .unwrap_err()
                .0
                .contains("scripted twice")
        );
        let verdict = "judges:\n  r:\n    - verdict: maybe\n";
        assert!(
            ScriptedModel::parse("t", verdict)
                .unwrap_err()
                .0
                .contains("pass or fail")
        );
    }
}
