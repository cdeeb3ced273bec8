//! Loop Engine runtime (`docs/specs/loop-engine-protocols.md`, cited as `loop-engine "Section"`).
//!
//! The contracts are plain data plus small executors, with time and randomness injected:
//! - [`clock`]: the injected [`clock::Clock`] (manual for tests, system for the CLI);
//! - [`event`]: loop-engine "Event Schema" and the JSONL [`event::EventLog`];
//! - [`action`]: loop-engine "Tool Action Schema (v1)" and the [`action::Observation`];
//! - [`policy`]: loop-engine "Task Config Schema" (`riskPolicy`, budgets);
//! - [`patch`]: the strict unified-diff applier behind `fs.applyPatch`;
//! - [`tools`]: executes tool actions in a workspace under the policy;
//! - [`model`]: the [`model::Model`] seam and its scripted backend;
//! - [`planner`]: the [`planner::Planner`] seam asked for a revised step after an exhausted
//!   iteration loop;
//! - [`bundled`]: a package's bundled Python tools, run with its declared interpreter;
//! - [`chat`]: an OpenAI-compatible chat-completions model over `loom-plsp`'s HTTP seam;
//! - [`judge`]: loop-engine "Judge Rules + Result";
//! - [`evidence`]: loop-engine "Evidence Pack (per iteration)";
//! - [`plan`]: loop-engine "Plan Schema";
//! - [`budget`]: loop-engine "Task Config Schema" `budget` plus token budgets;
//! - [`wave_view`]: the wave-start view of the workspace that concurrent phases read.

pub mod action;
pub mod budget;
pub mod bundled;
pub mod chat;
pub mod clock;
pub mod event;
pub mod evidence;
pub mod judge;
pub mod model;
pub mod patch;
pub mod plan;
pub mod planner;
pub mod policy;
pub mod tools;
pub mod wave_view;
