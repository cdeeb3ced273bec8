//! guide "Phases" (fields, dependency rules, deliverables) and the reserved finalizer ids of
//! guide "Output coordination".

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::Regex;

use super::Ctx;
use crate::package::model::{OutputStrategy, Process, deliverable_filename};
use crate::package::paths::{PathProblem, path_problem};
use crate::package::rules;
use crate::package::yaml_pos::NodeKind;

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
    required(ctx, p);
    ids(ctx, p);
    finalizer_ids(ctx, p);
    dependencies(ctx, p);
    cycles(ctx, p);
    tiers(ctx, p);
    deliverables(ctx, p);
}

/// guide "Phases" field table: `id` and `description` are required, so an empty or
/// whitespace-only value is no value. `depends_on` is required too, but the guide's own
/// "Phase iteration loops" example omits it: a missing key reads as `[]` with a warning. A key
/// written without a value (`depends_on:`) breaks the required rule, like `id:` does (the
/// guide's loader would iterate over `None` and fail); `depends_on: []` is a root phase.
fn required(ctx: &mut Ctx<'_>, p: &Process) {
    for (i, phase) in p.phases.iter().enumerate() {
        for (field, value) in [("id", &phase.id), ("description", &phase.description)] {
            if value.trim().is_empty() {
                ctx.emit(
                    &rules::PHASES_FIELD_REQUIRED,
                    format!("phases[{i}].{field}"),
                    format!("phase `{field}` is empty; a phase needs a non-empty {field}"),
                );
            }
        }
        let path = format!("phases[{i}].depends_on");
        // None: no key; Some(true): the key without a value.
        let without_value = ctx
            .node
            .get(&path)
            .map(|n| matches!(n.kind, NodeKind::Null));
        if without_value == Some(true) {
            // `depends_on:` (or `~`, `null`): the key is there, its value is not. Reading it
            // as [] would make the phase a root that silently stops waiting.
            ctx.emit(
                &rules::PHASES_FIELD_REQUIRED,
                path,
                format!(
                    "phase {:?}: `depends_on` has no value; a required key needs one: list the phases it waits for, or write `depends_on: []` for a root phase",
                    phase.id
                ),
            );
        } else if without_value.is_none() {
            ctx.emit(
                &rules::PHASES_DEPENDS_ON_IMPLICIT,
                path,
                format!(
                    "phase {:?} has no `depends_on`; read as [] (a root phase). Write `depends_on: []` to say so",
                    phase.id
                ),
            );
        }
    }
}

fn ids(ctx: &mut Ctx<'_>, p: &Process) {
    let mut first: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, phase) in p.phases.iter().enumerate() {
        let path = format!("phases[{i}].id");
        if phase.id.trim().is_empty() {
            continue;
        }
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

/// The longest cycle path named in a message; longer cycles end in `… (+N more)`.
pub const CYCLE_PATH_CAP: usize = 16;

/// Cycles: each strongly connected component that contains a cycle (more than one phase, or
/// a phase depending on itself) is reported once, at the dependency edge leaving its
/// earliest-declared phase along one concrete shortest cycle, named from that phase along
/// `depends_on` edges (`a -> b -> a`: a depends on b, b on a) and capped at
/// [`CYCLE_PATH_CAP`] phases. Iterative throughout, so deep chains cannot overflow the stack
/// and a graph with thousands of cycles through one phase gives one finding.
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
    let mut components = strongly_connected(&edges);
    components.retain(|c| c.len() > 1 || edges[c[0]].contains(&c[0]));
    for comp in &mut components {
        comp.sort_unstable();
    }
    components.sort();
    for comp in components {
        let from = comp[0];
        let cycle = shortest_cycle(from, &comp, &edges);
        let to = cycle.get(1).copied().unwrap_or(from);
        let to_id = &p.phases[to].id;
        let j = p.phases[from]
            .depends_on
            .iter()
            .position(|d| d == to_id)
            .unwrap_or(0);
        ctx.emit(
            &rules::PHASES_DEPENDS_ON_CYCLE,
            format!("phases[{from}].depends_on[{j}]"),
            format!(
                "dependency cycle detected: {}{}",
                cycle_path(p, &cycle),
                if comp.len() > cycle.len() {
                    format!(" ({} phases are on cycles with each other)", comp.len())
                } else {
                    String::new()
                }
            ),
        );
    }
}

/// `a -> b -> a`, at most [`CYCLE_PATH_CAP`] phases before `… (+N more)`.
fn cycle_path(p: &Process, cycle: &[usize]) -> String {
    let mut names: Vec<&str> = cycle.iter().map(|&k| p.phases[k].id.as_str()).collect();
    names.push(&p.phases[cycle[0]].id);
    if names.len() > CYCLE_PATH_CAP {
        let more = names.len() - CYCLE_PATH_CAP;
        names.truncate(CYCLE_PATH_CAP);
        format!("{} -> … (+{more} more)", names.join(" -> "))
    } else {
        names.join(" -> ")
    }
}

/// Tarjan's strongly connected components, iterative (explicit call stack).
fn strongly_connected(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let n = edges.len();
    let mut order = vec![UNSEEN; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    let mut next = 0usize;
    // (node, index of the next edge to look at)
    let mut calls: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if order[root] != UNSEEN {
            continue;
        }
        calls.push((root, 0));
        order[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(top) = calls.last_mut() {
            let v = top.0;
            if let Some(&w) = edges[v].get(top.1) {
                top.1 += 1;
                if order[w] == UNSEEN {
                    order[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(order[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == order[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(comp);
            }
        }
    }
    out
}

/// One shortest cycle through `from` inside its component (breadth-first over the
/// component's edges), as the list of phases starting at `from`.
fn shortest_cycle(from: usize, comp: &[usize], edges: &[Vec<usize>]) -> Vec<usize> {
    if edges[from].contains(&from) {
        return vec![from];
    }
    let inside: BTreeSet<usize> = comp.iter().copied().collect();
    let mut parent: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([from]);
    while let Some(v) = queue.pop_front() {
        for &w in &edges[v] {
            if w == from {
                let mut path = vec![v];
                let mut at = v;
                while at != from {
                    at = parent[&at];
                    path.push(at);
                }
                path.reverse();
                return path;
            }
            if inside.contains(&w) && !parent.contains_key(&w) {
                parent.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    vec![from]
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
            // guide "Phases": deliverables are "enforced by exact filename"; an escape from the
            // workspace is an error, a non-normalized spelling inside it only a warning (the
            // guide states normalization for `intermediate_root` only).
            match path_problem(file) {
                Some(PathProblem::Escape(problem)) => {
                    ctx.emit(
                        &rules::PHASES_DELIVERABLE_PATH,
                        path,
                        format!("deliverable filename {file:?} {problem}"),
                    );
                    continue;
                }
                Some(PathProblem::NotNormalized(problem)) => ctx.emit(
                    &rules::PHASES_DELIVERABLE_NOT_NORMALIZED,
                    path.clone(),
                    format!(
                        "deliverable filename {file:?} {problem}; it is enforced exactly as written"
                    ),
                ),
                None => {}
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

#[cfg(test)]
mod tests {
    use crate::package::validate_str;

    fn phase(id: &str, deps: &[String]) -> String {
        format!(
            "  - {{id: {id}, description: d, depends_on: [{}]}}\n",
            deps.join(", ")
        )
    }

    fn doc(phases: impl Iterator<Item = String>) -> String {
        let mut y = String::from("name: big\nschema_version: 2\nrisk_level: low\nphases:\n");
        y.extend(phases);
        y
    }

    /// A 50,000-phase chain closed into one cycle: no stack overflow, one finding, and the
    /// named path is capped.
    #[test]
    fn a_fifty_thousand_phase_cycle_is_one_bounded_finding() {
        let n = 50_000;
        let yaml = doc((0..n).map(|i| phase(&format!("p{i}"), &[format!("p{}", (i + 1) % n)])));
        let report = validate_str(&yaml);
        let errors: Vec<_> = report.errors().collect();
        assert_eq!(errors.len(), 1, "{:?}", errors.first());
        let d = errors[0];
        assert_eq!(
            (d.rule, d.path.as_str()),
            ("phases.depends_on.cycle", "phases[0].depends_on[0]")
        );
        assert!(d.message.contains("p0 -> p1 -> p2"), "{}", d.message);
        assert!(d.message.contains("(+49985 more)"), "{}", d.message);
        assert!(d.message.len() < 300, "{}", d.message.len());
        // The same chain without the closing edge is a valid DAG.
        let open = doc((0..n).map(|i| {
            let deps = if i + 1 < n {
                vec![format!("p{}", i + 1)]
            } else {
                vec![]
            };
            phase(&format!("p{i}"), &deps)
        }));
        assert!(validate_str(&open).is_valid());
    }

    /// 8,000 phases where the last depends on all others and each depends on the last: one
    /// strongly connected component, one finding, bounded output.
    #[test]
    fn an_eight_thousand_phase_fan_in_cycle_is_one_finding() {
        let n = 8_000;
        let last = format!("p{}", n - 1);
        let all: Vec<String> = (0..n - 1).map(|i| format!("p{i}")).collect();
        let yaml = doc((0..n - 1)
            .map(|i| phase(&format!("p{i}"), std::slice::from_ref(&last)))
            .chain(std::iter::once(phase(&last, &all))));
        let report = validate_str(&yaml);
        assert_eq!(
            report.diagnostics.len(),
            1,
            "{:?}",
            report.diagnostics.first()
        );
        let d = &report.diagnostics[0];
        assert_eq!(
            (d.rule, d.path.as_str()),
            ("phases.depends_on.cycle", "phases[0].depends_on[0]")
        );
        assert_eq!(
            d.message,
            format!(
                "dependency cycle detected: p0 -> {last} -> p0 ({n} phases are on cycles with each other)"
            )
        );
        let bytes: usize = report.diagnostics.iter().map(|d| d.message.len()).sum();
        assert!(bytes < 200, "{bytes}");
    }

    #[test]
    fn separate_cycles_are_reported_separately_and_self_loops_count() {
        let yaml = doc([
            phase("a", &["b".into()]),
            phase("b", &["a".into()]),
            phase("c", &["c".into()]),
            phase("d", &["a".into()]),
        ]
        .into_iter());
        let report = validate_str(&yaml);
        let found: Vec<_> = report
            .errors()
            .map(|d| (d.path.as_str(), d.message.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "phases[0].depends_on[0]",
                    "dependency cycle detected: a -> b -> a"
                ),
                (
                    "phases[2].depends_on[0]",
                    "dependency cycle detected: c -> c"
                ),
            ]
        );
    }
}
