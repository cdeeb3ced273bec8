//! Memory extraction (guide "Memory types": "Memory types tell the extraction model what
//! kinds of knowledge to pull from each phase's output"). After a phase completes, the model
//! (`Purpose::Memory`; the scripted backend's `memory:` section) is given the declared
//! `memory.extract_types`, the `extraction_guidance` and the phase's output (its deliverable
//! files, else its messages). Entries of undeclared types are dropped and named. The result
//! is one `Observation` `{phase, attempt, toolCallId: "memory:<phase>", observation: {ok,
//! summary, raw: {memory: [{type, content}], dropped}}}`; this runner keeps no long-term
//! store, the event stream is the record.

use super::RunState;
use crate::engine::event::EventType;
use crate::engine::model::{MemoryKind, ModelRequest, Purpose};
use crate::package::Phase;
use serde_json::json;

/// Extracts the memory of completed phase `ph` (final attempt `attempt`), if the process
/// declares memory types.
pub(crate) fn extract(st: &mut RunState<'_>, ph: &Phase, attempt: u32) {
    let Some(memory) = st.process.memory.clone() else {
        return;
    };
    if memory.extract_types.is_empty() {
        return;
    }
    // An entry without a type name (warned `memory.type.required`) names no kind: skipped.
    let types: Vec<MemoryKind> = memory
        .extract_types
        .iter()
        .filter(|t| !t.memory_type.trim().is_empty())
        .map(|t| MemoryKind {
            name: t.memory_type.clone(),
            description: t.description.clone().unwrap_or_default(),
        })
        .collect();
    let subject: String = ph
        .deliverable_filenames()
        .into_iter()
        .filter_map(|f| crate::engine::tools::read_workspace_file(st.exec.workspace(), f))
        .collect::<Vec<_>>()
        .join("\n");
    let req = ModelRequest {
        purpose: Purpose::Memory {
            types: types.clone(),
            guidance: memory.extraction_guidance.clone().unwrap_or_default(),
            subject,
        },
        system: String::new(),
        goal: st.req.goal.clone(),
        phase_id: ph.id.clone(),
        phase_description: ph.description.clone(),
        attempt,
        turn: 1,
        observations: Vec::new(),
        feedback: Vec::new(),
        model_tier: 1,
    };
    let call_id = format!("memory:{}", ph.id);
    let observation = match st.env.model.reply(&req) {
        Err(e) => {
            json!({"ok": false, "summary": format!("memory extraction failed: {}", e.0), "artifacts": {}, "raw": {}})
        }
        Ok(reply) => {
            st.run_budget.tokens = st.run_budget.tokens.saturating_add(reply.tokens.total());
            let (kept, dropped): (Vec<_>, Vec<_>) = reply
                .memory
                .into_iter()
                .partition(|m| types.iter().any(|t| t.name == m.kind));
            json!({"ok": true,
                   "summary": format!("{} memory entries of {} declared types", kept.len(), types.len()),
                   "artifacts": {},
                   "raw": {"memory": kept, "dropped": dropped.iter().map(|m| format!("{}: undeclared memory type", m.kind)).collect::<Vec<_>>()}})
        }
    };
    st.emit(
        EventType::Observation,
        json!({"phase": ph.id, "attempt": attempt, "toolCallId": call_id, "observation": observation}),
    );
}
