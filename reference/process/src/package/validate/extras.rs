//! guide "Process contract v2" (prompt contracts), "Memory types" and "Planner examples".

use std::collections::BTreeSet;

use super::Ctx;
use crate::package::model::{PhaseList, Process};
use crate::package::rules;

pub(super) fn check(ctx: &mut Ctx<'_>, p: &Process) {
    prompt_contracts(ctx, p);
    memory(ctx, p);
    planner_examples(ctx, p);
}

fn prompt_contracts(ctx: &mut Ctx<'_>, p: &Process) {
    let Some(pc) = &p.prompt_contracts else {
        return;
    };
    let Some(ec) = &pc.evidence_contract else {
        return;
    };
    let Some(list) = &ec.applies_to_phases else {
        return;
    };
    let many = matches!(list, PhaseList::Many(_));
    for (i, id) in list.ids().into_iter().enumerate() {
        if id != "*" && p.phase(id).is_none() {
            let path = if many {
                format!("prompt_contracts.evidence_contract.applies_to_phases[{i}]")
            } else {
                "prompt_contracts.evidence_contract.applies_to_phases".to_string()
            };
            ctx.emit(
                &rules::PROMPT_CONTRACTS_UNKNOWN_PHASE,
                path,
                format!("phase {id:?} does not exist (use \"*\" for all phases)"),
            );
        }
    }
}

fn memory(ctx: &mut Ctx<'_>, p: &Process) {
    let Some(m) = &p.memory else { return };
    let mut seen = BTreeSet::new();
    for (i, t) in m.extract_types.iter().enumerate() {
        let path = format!("memory.extract_types[{i}].type");
        if t.memory_type.trim().is_empty() {
            ctx.emit(
                &rules::MEMORY_TYPE_REQUIRED,
                path,
                "memory type name is empty: the entry is skipped",
            );
        } else if !seen.insert(t.memory_type.as_str()) {
            ctx.emit(
                &rules::MEMORY_TYPE_DUPLICATE,
                path,
                format!("memory type {:?} is declared twice", t.memory_type),
            );
        }
    }
}

fn planner_examples(ctx: &mut Ctx<'_>, p: &Process) {
    for (i, ex) in p.planner_examples.iter().enumerate() {
        if ex.goal.trim().is_empty() {
            ctx.emit(
                &rules::PLANNER_FIELD_REQUIRED,
                format!("planner_examples[{i}].goal"),
                "example `goal` is empty",
            );
        }
        for (j, st) in ex.subtasks.iter().enumerate() {
            let base = format!("planner_examples[{i}].subtasks[{j}]");
            if p.phase(&st.id).is_none() {
                ctx.emit(
                    &rules::PLANNER_SUBTASK_UNKNOWN_PHASE,
                    format!("{base}.id"),
                    format!("subtask {:?} does not mirror a phase id", st.id),
                );
            }
            if let Some(t) = st.model_tier
                && !(1..=3).contains(&t)
            {
                ctx.emit(
                    &rules::PLANNER_MODEL_TIER_RANGE,
                    format!("{base}.model_tier"),
                    format!("model_tier {t} is outside 1..3"),
                );
            }
        }
    }
}
