//! Output coordination (guide "Output coordination"): who may write a phase's canonical
//! deliverables, and the fan-in finalizer.
//!
//! Readings (README "Running"; this runner has one worker per phase):
//! - `strategy: direct` (default): the phase writes its deliverables at their canonical paths.
//! - `strategy: fan_in` (process default or phase `output_strategy`) for a phase with
//!   deliverables: the worker writes them under `<intermediate_root>/<phase>/<file>`
//!   (`intermediate_root` default `.loom/phase-artifacts`; the prompt says so), and after each
//!   attempt the reserved finalizer `<phase>__finalize_output` publishes them to the canonical
//!   paths. `finalizer_input_policy` (phase override, then process; default
//!   `require_all_workers`): with `require_all_workers` a missing intermediate publishes
//!   nothing; with `allow_partial` the present ones are published. `publish_mode` (default
//!   `transactional`): transactional writes all files or, if one write fails, restores the
//!   ones already written; `best_effort` writes what it can.
//! - `enforce_single_writer: true`: a canonical deliverable has one writer — its own phase
//!   (or, under fan-in, that phase's finalizer). A model write to another phase's canonical
//!   deliverable, or a fan-in worker's direct write to its own, is a conflict:
//!   `conflict_policy: defer_fifo` (default) refuses (defers) the write and the turn goes on;
//!   `fail_fast` refuses it and fails the attempt at once (stop reason `write_conflict`).

use super::RunState;
use crate::engine::action::{Observation, ToolAction};
use crate::engine::event::EventType;
use crate::engine::tools::{normalize, read_workspace_bytes, read_workspace_file};
use crate::package::{
    ConflictPolicy, FinalizerInputPolicy, OutputCoordination, OutputStrategy, Phase, Process,
    PublishMode,
};
use serde_json::json;

/// The finalizer id of a fan-in phase (guide "Output coordination").
pub fn finalizer_id(phase: &str) -> String {
    format!("{phase}__finalize_output")
}

fn coordination<'a>(st: &'a RunState<'_>) -> Option<&'a OutputCoordination> {
    st.process.output_coordination.as_ref()
}

/// Whether `phase` of `process` publishes through a fan-in finalizer.
pub fn phase_is_fan_in(process: &Process, phase: &Phase) -> bool {
    !phase.deliverables.is_empty()
        && phase.output_strategy(process.output_coordination.as_ref()) == OutputStrategy::FanIn
}

/// `<intermediate_root>/<phase>` of `process`: where a fan-in worker writes its deliverables.
pub fn phase_intermediate_dir(process: &Process, phase: &Phase) -> String {
    let root = process
        .output_coordination
        .as_ref()
        .and_then(|c| c.intermediate_root.clone())
        .unwrap_or_else(|| OutputCoordination::DEFAULT_INTERMEDIATE_ROOT.to_owned());
    format!("{}/{}", normalize(&root), phase.id)
}

/// Whether `phase` publishes through a fan-in finalizer.
pub(crate) fn is_fan_in(st: &RunState<'_>, phase: &Phase) -> bool {
    phase_is_fan_in(st.process, phase)
}

/// `<intermediate_root>/<phase>`.
pub(crate) fn intermediate_dir(st: &RunState<'_>, phase: &Phase) -> String {
    phase_intermediate_dir(st.process, phase)
}

/// A refused write: the reason, and whether the attempt must stop (`fail_fast`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// Why the write is refused.
    pub reason: String,
    /// `conflict_policy: fail_fast`.
    pub fail_fast: bool,
}

/// Checks a model action of `phase` against `enforce_single_writer`.
pub(crate) fn check_write(
    st: &RunState<'_>,
    phase: &Phase,
    action: &ToolAction,
) -> Option<Conflict> {
    let coord = coordination(st)?;
    if coord.enforce_single_writer != Some(true) {
        return None;
    }
    let path = match action {
        ToolAction::FsWrite { path, .. } | ToolAction::FsApplyPatch { path, .. } => normalize(path),
        _ => return None,
    };
    let owner = st.process.phases.iter().find(|p| {
        p.deliverable_filenames()
            .iter()
            .any(|f| normalize(f) == path)
    })?;
    let reason = if owner.id != phase.id {
        format!(
            "enforce_single_writer: {path} is a canonical deliverable of phase {}, not {}",
            owner.id, phase.id
        )
    } else if is_fan_in(st, phase) {
        format!(
            "enforce_single_writer: {path} is published by {}; write it to {}/{path}",
            finalizer_id(&phase.id),
            intermediate_dir(st, phase)
        )
    } else {
        return None;
    };
    let fail_fast = coord.conflict_policy == Some(ConflictPolicy::FailFast);
    Some(Conflict {
        reason: format!(
            "{reason} (conflict_policy {}, guide \"Output coordination\")",
            if fail_fast {
                "fail_fast"
            } else {
                "defer_fifo: write deferred to the owner"
            }
        ),
        fail_fast,
    })
}

/// Runs the fan-in finalizer of `phase` after attempt `attempt`, with its events. Returns
/// the reasons it failed (empty when it published what its policy requires).
pub(crate) fn finalize(st: &mut RunState<'_>, phase: &Phase, attempt: u32) -> Vec<String> {
    let fid = finalizer_id(&phase.id);
    let dir = intermediate_dir(st, phase);
    let input_policy = phase
        .finalizer_input_policy
        .or_else(|| coordination(st).and_then(|c| c.finalizer_input_policy))
        .unwrap_or(FinalizerInputPolicy::RequireAllWorkers);
    let publish = coordination(st)
        .and_then(|c| c.publish_mode)
        .unwrap_or(PublishMode::Transactional);
    st.emit(
        EventType::StateChanged,
        json!({"scope": "finalizer", "phase": fid, "of": phase.id, "attempt": attempt, "from": "pending", "to": "running"}),
    );
    let mut staged = Vec::new();
    let mut reasons = Vec::new();
    for f in phase.deliverable_filenames() {
        let src = format!("{dir}/{}", normalize(f));
        match read_workspace_file(st.exec.workspace(), &src) {
            Some(content) => staged.push((normalize(f), content)),
            None => reasons.push(format!("finalizer_input_missing: {src} not found")),
        }
    }
    if !reasons.is_empty() && input_policy == FinalizerInputPolicy::RequireAllWorkers {
        reasons.push("finalizer_input_policy require_all_workers: nothing published".into());
        staged.clear();
    } else {
        reasons.clear();
    }
    let mut written: Vec<(String, Option<Vec<u8>>)> = Vec::new();
    for (path, content) in &staged {
        let previous = read_workspace_bytes(st.exec.workspace(), path);
        let action = ToolAction::FsWrite {
            id: format!("finalize:{}#{attempt}:{path}", phase.id),
            path: path.clone(),
            content: content.clone(),
        };
        let obs = runner_write(st, &fid, attempt, &action);
        if obs.ok {
            written.push((path.clone(), previous));
        } else {
            reasons.push(format!("publish {path}: {}", obs.summary));
            if publish == PublishMode::Transactional {
                for (p, prev) in written.drain(..).rev() {
                    // Through the write path policy: never through a symlink or into .git.
                    let undo = st.exec.restore_file(&p, prev.as_deref());
                    if let Err(e) = undo {
                        reasons.push(format!("rollback {p}: {e}"));
                    }
                }
                reasons.push("publish_mode transactional: rolled back".into());
                break;
            }
        }
    }
    st.emit(
        EventType::StateChanged,
        json!({"scope": "finalizer", "phase": fid, "of": phase.id, "attempt": attempt, "from": "running",
               "to": if reasons.is_empty() { "completed" } else { "failed" }, "published": written.iter().map(|(p, _)| p).collect::<Vec<_>>(), "reasons": reasons}),
    );
    reasons
}

fn runner_write(
    st: &mut RunState<'_>,
    fid: &str,
    attempt: u32,
    action: &ToolAction,
) -> Observation {
    let call = json!({"phase": fid, "attempt": attempt, "toolCallId": action.id(), "type": action.type_name(), "origin": "finalizer"});
    st.emit(EventType::ToolCallStarted, call.clone());
    let obs = st.exec.execute(action);
    let mut fin = call;
    fin["ok"] = json!(obs.ok);
    st.emit(EventType::ToolCallFinished, fin);
    st.emit(
        EventType::Observation,
        json!({"phase": fid, "attempt": attempt, "toolCallId": action.id(), "observation": obs}),
    );
    obs
}
