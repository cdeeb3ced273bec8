//! guide "Phases" (fields, dependency rules, deliverables) and the reserved finalizer ids of
//! guide "Output coordination".

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::Regex;

use super::Ctx;
use crate::package::model::{OutputStrategy, Process, deliverable_filename};
use crate::package::paths::workspace_relative_problem;
use crate::package::rules;

/// guide "Phases": "Unique, kebab-case".
static KEBAB: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9]+(-[a-z0-9]+)*$").expect("static regex"));

/// guide "Output coordination": "Loom reserves the deterministic phase-finalizer ID
/// <phase_id>__finalize_output".
pub const FINALIZER_SUFFIX: &str = "__finalize_output";

pub(super) fn check(ctx: &mut Ctx<'_>, p: &Process) {
    if p.phases.is_empty() {
        ctx.emit(
            &rules::PHASES_EMPTY,
            "phases",
            "the process declares no phases",
        );
    }
    ids(ctx, p);
    finalizer_ids(ctx, p);
    dependencies(ctx, p);
    cycles(ctx, p);
    tiers(ctx, p);
    deliverables(ctx, p);
}

fn ids(ctx: &mut Ctx<'_>, p: &Process) {
    let mut first: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, phase) in p.phases.iter().enumerate() {
        let path = format!("phases[{i}].id");
        if let Some(j) = first.get(phase.id.as_str()) {
            ctx.emit(
                &rules::PHASES_ID_DUPLICATE,
                path.clone(),
                format!(
                    "duplicate phase id {:?} (first declared at phases[{j}])",
                    phase.id
                ),
            );
        } else {
            first.insert(&phase.id, i);
        }
        if !KEBAB.is_match(&phase.id) {
            ctx.emit(
                &rules::PHASES_ID_KEBAB_CASE,
                path,
                format!("phase id {:?} is not kebab-case", phase.id),
            );
        }
    }
}

fn finalizer_ids(ctx: &mut Ctx<'_>, p: &Process) {
    let reserved: BTreeMap<String, &str> = p
        .phases
        .iter()
        .filter(|ph| {
            !ph.deliverables.is_empty()
                && ph.output_strategy(p.output_coordination.as_ref()) == OutputStrategy::FanIn
        })
        .map(|ph| (format!("{}{FINALIZER_SUFFIX}", ph.id), ph.id.as_str()))
        .collect();
    for (i, phase) in p.phases.iter().enumerate() {
        let path = format!("phases[{i}].id");
        if let Some(owner) = reserved.get(&phase.id) {
            ctx.emit(
                &rules::PHASES_FINALIZER_ID_RESERVED,
                path,
                format!(
                    "phase id {:?} is reserved for the fan-in finalizer of phase {owner:?}",
                    phase.id
                ),
            );
        } else if phase.id.ends_with(FINALIZER_SUFFIX) {
            ctx.emit(
                &rules::PHASES_FINALIZER_SUFFIX,
                path,
                format!(
                    "phase id {:?} uses the reserved {FINALIZER_SUFFIX} suffix",
                    phase.id
                ),
            );
        }
    }
}

fn dependencies(ctx: &mut Ctx<'_>, p: &Process) {
    let ids: BTreeSet<&str> = p.phases.iter().map(|ph| ph.id.as_str()).collect();
    for (i, phase) in p.phases.iter().enumerate() {
        let mut seen = BTreeSet::new();
        for (j, dep) in phase.depends_on.iter().enumerate() {
            let path = format!("phases[{i}].depends_on[{j}]");
            if !ids.contains(dep.as_str()) {
                ctx.emit(
                    &rules::PHASES_DEPENDS_ON_UNKNOWN,
                    path.clone(),
                    format!("unknown dependency: phase {dep:?} does not exist"),
                );
            }
            if !seen.insert(dep) {
                ctx.emit(
                    &rules::PHASES_DEPENDS_ON_DUPLICATE,
                    path,
                    format!("phase {dep:?} is listed twice"),
                );
            }
        }
    }
}

/// Cycles, each reported once at the dependency edge leaving its earliest-declared phase,
/// named from that phase along `depends_on` edges (`a -> b -> a`: a depends on b, b on a).
fn cycles(ctx: &mut Ctx<'_>, p: &Process) {
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, ph) in p.phases.iter().enumerate() {
        index.entry(ph.id.as_str()).or_insert(i);
    }
    let edges: Vec<Vec<usize>> = p
        .phases
        .iter()
        .map(|ph| {
            ph.depends_on
                .iter()
                .filter_map(|d| index.get(d.as_str()).copied())
                .collect()
        })
        .collect();
    let mut found: BTreeSet<Vec<usize>> = BTreeSet::new();
    let mut state = vec![0u8; p.phases.len()]; // 0 new, 1 on stack, 2 done
    let mut stack = Vec::new();
    for start in 0..p.phases.len() {
        if state[start] == 0 {
            dfs(start, &edges, &mut state, &mut stack, &mut found);
        }
    }
    for cycle in found {
        let from = cycle[0];
        let to = cycle.get(1).copied().unwrap_or(from);
        let to_id = &p.phases[to].id;
        let j = p.phases[from]
            .depends_on
            .iter()
            .position(|d| d == to_id)
            .unwrap_or(0);
        let mut names: Vec<&str> = cycle.iter().map(|&k| p.phases[k].id.as_str()).collect();
        names.push(&p.phases[from].id);
        ctx.emit(
            &rules::PHASES_DEPENDS_ON_CYCLE,
            format!("phases[{from}].depends_on[{j}]"),
            format!("dependency cycle detected: {}", names.join(" -> ")),
        );
    }
}

fn dfs(
    at: usize,
    edges: &[Vec<usize>],
    state: &mut [u8],
    stack: &mut Vec<usize>,
    found: &mut BTreeSet<Vec<usize>>,
) {
    state[at] = 1;
    stack.push(at);
    for &next in &edges[at] {
        match state[next] {
            0 => dfs(next, edges, state, stack, found),
            1 => {
                let start = stack.iter().position(|&k| k == next).unwrap_or(0);
                let mut cycle = stack[start..].to_vec();
                let min = cycle
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, k)| **k)
                    .map_or(0, |(i, _)| i);
                cycle.rotate_left(min);
                found.insert(cycle);
            }
            _ => {}
        }
    }
    stack.pop();
    state[at] = 2;
}

fn tiers(ctx: &mut Ctx<'_>, p: &Process) {
    for (i, phase) in p.phases.iter().enumerate() {
        if let Some(t) = phase.model_tier
            && !(1..=3).contains(&t)
        {
            ctx.emit(
                &rules::PHASES_MODEL_TIER_RANGE,
                format!("phases[{i}].model_tier"),
                format!("model_tier {t} is outside 1..3"),
            );
        }
        if let Some(t) = phase.verification_tier
            && !(1..=2).contains(&t)
        {
            ctx.emit(
                &rules::PHASES_VERIFICATION_TIER_RANGE,
                format!("phases[{i}].verification_tier"),
                format!("verification_tier {t} is outside 1..2"),
            );
        }
    }
}

fn deliverables(ctx: &mut Ctx<'_>, p: &Process) {
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    for (i, phase) in p.phases.iter().enumerate() {
        for (j, entry) in phase.deliverables.iter().enumerate() {
            let path = format!("phases[{i}].deliverables[{j}]");
            let file = deliverable_filename(entry);
            if let Some(problem) = workspace_relative_problem(file) {
                ctx.emit(
                    &rules::PHASES_DELIVERABLE_PATH,
                    path,
                    format!("deliverable filename {file:?} {problem}"),
                );
                continue;
            }
            if let Some(first) = owner.get(file) {
                ctx.emit(
                    &rules::PHASES_DELIVERABLE_DUPLICATE,
                    path,
                    format!("duplicate deliverable {file:?} (already declared by phase {first:?})"),
                );
            } else {
                owner.insert(file, &phase.id);
            }
        }
    }
}
