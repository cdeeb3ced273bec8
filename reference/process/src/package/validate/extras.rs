//! guide "Process contract v2" (prompt contracts), "Memory types" and "Planner examples".

use std::collections::BTreeSet;

use super::Ctx;
use crate::package::model::{PhaseList, Process, RemediationInstructions};
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
    if let Some(RemediationInstructions::ByStrategy(map)) = &pc.remediation_instructions {
        let known = selectable_strategies(p);
        for key in map.keys() {
            let k = key.trim().to_lowercase();
            if k != "default" && !known.contains(&k) {
                ctx.emit(
                    &rules::PROMPT_CONTRACTS_REMEDIATION_KEY,
                    format!("prompt_contracts.remediation_instructions.{key}"),
                    format!(
                        "key {key:?} is never selected: a retry looks up its strategy ({}) and falls back to `default`",
                        known.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                );
            }
        }
    }
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

/// Strategy names a retry can look up in a remediation instruction mapping: the iteration
/// strategies, the rules' remediation modes, and the declared remediation strategies
/// (`default_strategy`, `strategies[].id`), lower-cased.
pub(crate) fn selectable_strategies(p: &Process) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = ["targeted_remediation", "full_rerun"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if let Some(v) = &p.verification {
        for r in &v.rules {
            if let Some(m) = r.remediation_mode {
                out.insert(m.as_str().to_string());
            }
        }
        if let Some(rem) = &v.remediation {
            out.extend(rem.default_strategy.iter().map(|s| s.trim().to_lowercase()));
            out.extend(
                rem.strategies
                    .iter()
                    .filter_map(|s| s.id.as_deref())
                    .map(|s| s.trim().to_lowercase()),
            );
        }
    }
    out
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
                "memory type name is empty",
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
