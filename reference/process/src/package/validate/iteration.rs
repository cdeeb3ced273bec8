//! guide "Phase iteration loops": required fields when enabled, caps and budgets, and every
//! "Loader-enforced MVP constraint" on gates.

use super::Ctx;
use crate::package::command::{CommandProblem, check_argv};
use crate::package::model::{ArtifactTarget, Gate, GateCommand, GateType, Iteration, Process};
use crate::package::rules;

pub(super) fn check(ctx: &mut Ctx<'_>, p: &Process) {
    for (i, phase) in p.phases.iter().enumerate() {
        let Some(it) = &phase.iteration else { continue };
        let base = format!("phases[{i}].iteration");
        // The policy table's constraints are "Required when iteration.enabled=true" and
        // "Loader-enforced MVP constraints"; the guide's loader checks none of them for a loop
        // that is off (`_validate_iteration_policy` returns early), and neither does this: an
        // off loop never runs, so its values are only read for their YAML types.
        match it.enabled {
            Some(true) => {
                required(ctx, &base, it);
                loop_constraints(ctx, &base, it);
            }
            Some(false) => continue,
            None => {
                ctx.emit(
                    &rules::ITERATION_DISABLED,
                    base.clone(),
                    "iteration block without `enabled: true` is off",
                );
                continue;
            }
        }
        values(ctx, &base, it);
        let mut ids = std::collections::BTreeSet::new();
        for (k, gate) in it.gates.iter().enumerate() {
            let gbase = format!("{base}.gates[{k}]");
            check_gate(ctx, &gbase, gate);
            if let Some(id) = gate.id.as_deref().filter(|id| !id.trim().is_empty())
                && !ids.insert(id.trim())
            {
                ctx.emit(
                    &rules::ITERATION_GATE_ID_DUPLICATE,
                    format!("{gbase}.id"),
                    format!("gate id {id:?} is used twice in this iteration block"),
                );
            }
            if gate.gate_type == GateType::ArtifactRegex
                && gate.target == Some(ArtifactTarget::Deliverables)
                && phase.deliverables.is_empty()
            {
                ctx.emit(
                    &rules::ITERATION_GATE_TARGET_NO_DELIVERABLES,
                    format!("{gbase}.target"),
                    format!(
                        "gate targets deliverables but phase {:?} declares no deliverables",
                        phase.id
                    ),
                );
            }
            if gate.gate_type.is_deterministic() && gate.blocking.is_none() {
                ctx.emit(
                    &rules::ITERATION_GATE_BLOCKING_IMPLICIT,
                    format!("{gbase}.blocking"),
                    "gate has no `blocking`: it does not block (the guide's loader's default); write blocking: true to make it a retry condition, or blocking: false",
                );
            }
        }
    }
}

/// "Required when iteration.enabled=true" column of the iteration policy table.
fn required(ctx: &mut Ctx<'_>, base: &str, it: &Iteration) {
    let mut missing = Vec::new();
    if it.max_attempts.is_none() {
        missing.push("max_attempts".to_string());
    }
    if it.max_total_runner_invocations.is_none() {
        missing.push("max_total_runner_invocations".to_string());
    }
    match &it.iteration_budget {
        None => missing.push("iteration_budget".to_string()),
        Some(b) => {
            for (field, v) in [
                ("max_wall_clock_seconds", b.max_wall_clock_seconds),
                ("max_tokens", b.max_tokens),
                ("max_tool_calls", b.max_tool_calls),
            ] {
                if v.is_none() {
                    missing.push(format!("iteration_budget.{field}"));
                }
            }
        }
    }
    if it.gates.is_empty() {
        missing.push("gates".to_string());
    }
    for field in missing {
        let message = if field == "gates" {
            "iteration.enabled is true: at least one gate is required".to_string()
        } else {
            format!("iteration.enabled is true: `{field}` is required")
        };
        ctx.emit(
            &rules::ITERATION_FIELD_REQUIRED,
            format!("{base}.{field}"),
            message,
        );
    }
}

/// MVP constraints 1 and 3, which concern the loop as a whole.
fn loop_constraints(ctx: &mut Ctx<'_>, base: &str, it: &Iteration) {
    let has_deterministic_blocking = it
        .gates
        .iter()
        .any(|g| g.gate_type.is_deterministic() && g.is_blocking());
    if !it.gates.is_empty() && !has_deterministic_blocking {
        ctx.emit(
            &rules::ITERATION_DETERMINISTIC_BLOCKING,
            format!("{base}.gates"),
            "iteration requires at least one deterministic blocking gate (tool_metric, artifact_regex or command_exit)",
        );
    }
    if let (Some(stop), Some(max)) = (it.stop_on_no_improvement_attempts, it.max_attempts)
        && stop > 0
        && (1..=6).contains(&max)
        && stop >= max
    {
        ctx.emit(
            &rules::ITERATION_STOP_RANGE,
            format!("{base}.stop_on_no_improvement_attempts"),
            format!(
                "stop_on_no_improvement_attempts {stop} must be < max_attempts ({max}); at {stop} it can never stop the loop"
            ),
        );
    }
    let score_gate = it.gates.iter().position(is_score_like);
    let stop = it.stop_on_no_improvement_attempts.unwrap_or(0);
    if let Some(k) = score_gate
        && stop <= 0
    {
        ctx.emit(
            &rules::ITERATION_SCORE_REQUIRES_STOP,
            format!("{base}.stop_on_no_improvement_attempts"),
            format!("gate gates[{k}] is score-like: stop_on_no_improvement_attempts must be > 0"),
        );
    }
}

/// A gate is "score-like" when it compares a metric with an ordering operator (`gte`,
/// `lte`): a `tool_metric` or `verifier_field` gate. The guide does not define the term;
/// its example is `tool_metric` `gte 80` ("score >= 80"). `command_exit` compares an exit
/// code and `artifact_regex` a match, neither of which is a score.
pub fn is_score_like(gate: &Gate) -> bool {
    matches!(
        gate.gate_type,
        GateType::ToolMetric | GateType::VerifierField
    ) && gate.operator.is_some_and(|o| o.is_ordering())
}

fn values(ctx: &mut Ctx<'_>, base: &str, it: &Iteration) {
    if let Some(n) = it.max_attempts
        && !(1..=6).contains(&n)
    {
        ctx.emit(
            &rules::ITERATION_MAX_ATTEMPTS_RANGE,
            format!("{base}.max_attempts"),
            format!("iteration.max_attempts must be between 1 and 6, found {n}"),
        );
    }
    if let Some(total) = it.max_total_runner_invocations {
        let floor = it.max_attempts.unwrap_or(1).max(1);
        if total < floor {
            ctx.emit(
                &rules::ITERATION_INVOCATIONS_RANGE,
                format!("{base}.max_total_runner_invocations"),
                format!("max_total_runner_invocations {total} must be >= max_attempts ({floor})"),
            );
        }
    }
    for (field, v) in [
        (
            "stop_on_no_improvement_attempts",
            it.stop_on_no_improvement_attempts,
        ),
        (
            "max_replans_after_exhaustion",
            it.max_replans_after_exhaustion,
        ),
    ] {
        if let Some(n) = v
            && n < 0
        {
            ctx.emit(
                &rules::ITERATION_COUNT_RANGE,
                format!("{base}.{field}"),
                format!("{field} {n} is negative"),
            );
        }
    }
    if let Some(b) = &it.iteration_budget {
        for (field, v) in [
            ("max_wall_clock_seconds", b.max_wall_clock_seconds),
            ("max_tokens", b.max_tokens),
            ("max_tool_calls", b.max_tool_calls),
        ] {
            if let Some(n) = v
                && n <= 0
            {
                ctx.emit(
                    &rules::ITERATION_BUDGET_POSITIVE,
                    format!("{base}.iteration_budget.{field}"),
                    format!("iteration_budget.{field} must be > 0, found {n}"),
                );
            }
        }
    }
}

fn check_gate(ctx: &mut Ctx<'_>, base: &str, gate: &Gate) {
    key_fields(ctx, base, gate);
    value_type(ctx, base, gate);
    if gate.gate_type == GateType::VerifierField && gate.blocking == Some(true) {
        ctx.emit(
            &rules::ITERATION_VERIFIER_BLOCKING,
            format!("{base}.blocking"),
            "verifier_field gates are advisory-only in the MVP and cannot be blocking",
        );
    }
    if gate.gate_type == GateType::ArtifactRegex
        && let Some(pattern) = &gate.pattern
    {
        if pattern.is_empty() {
            // An empty regex matches every text: with expect_match true the gate always
            // passes, with false it always fails. The guide's loader reports it as missing
            // (`gate_pattern_missing`), so it is the key field's rule here.
            ctx.emit(
                &rules::ITERATION_GATE_FIELD_REQUIRED,
                format!("{base}.pattern"),
                format!(
                    "artifact_regex gate `pattern` is empty: an empty regex matches every text, so the gate would always {}; write the text that must {}appear",
                    if gate.expect_match.unwrap_or(true) { "pass" } else { "fail" },
                    if gate.expect_match.unwrap_or(true) { "" } else { "not " }
                ),
            );
        } else {
            super::check_pattern(
                ctx,
                pattern,
                format!("{base}.pattern"),
                &rules::ITERATION_GATE_PATTERN_INVALID,
                &rules::ITERATION_GATE_PATTERN_TOO_LARGE,
                "invalid regex",
            );
        }
    }
    if gate.gate_type == GateType::CommandExit {
        command(ctx, base, gate);
    }
}

/// The gate table's "Key fields" per type. Defaults cover the rest: `artifact_regex.target`
/// `auto` and `expect_match` true; `command_exit` `operator: eq`, `value: 0`.
fn key_fields(ctx: &mut Ctx<'_>, base: &str, gate: &Gate) {
    let needed: &[(&str, bool)] = match gate.gate_type {
        GateType::ToolMetric => &[
            ("tool", gate.tool.is_some()),
            ("metric_path", gate.metric_path.is_some()),
            ("operator", gate.operator.is_some()),
            ("value", gate.value.is_some()),
        ],
        GateType::ArtifactRegex => &[("pattern", gate.pattern.is_some())],
        GateType::CommandExit => &[("command", gate.command.is_some())],
        GateType::VerifierField => &[
            ("field", gate.field.is_some()),
            ("operator", gate.operator.is_some()),
            ("value", gate.value.is_some()),
        ],
    };
    let type_name = gate_type_name(gate.gate_type);
    for (field, present) in needed {
        if !present {
            ctx.emit(
                &rules::ITERATION_GATE_FIELD_REQUIRED,
                format!("{base}.{field}"),
                format!("{type_name} gate requires `{field}`"),
            );
        }
    }
}

/// The gate table's `value` compared against: for `command_exit` an exit code, so an
/// integer; for an ordering comparison (`gte`, `lte`) of a `tool_metric` or
/// `verifier_field`, a number. Nothing is coerced (`"0"` is not 0).
fn value_type(ctx: &mut Ctx<'_>, base: &str, gate: &Gate) {
    let Some(value) = &gate.value else { return };
    let problem = match gate.gate_type {
        GateType::CommandExit if !value.is_i64() => Some("an integer exit code"),
        GateType::ToolMetric | GateType::VerifierField
            if gate.operator.is_some_and(|o| o.is_ordering()) && !value.is_number() =>
        {
            Some("a number (the operator is an ordering comparison)")
        }
        _ => None,
    };
    if let Some(want) = problem {
        ctx.emit(
            &rules::ITERATION_GATE_VALUE_TYPE,
            format!("{base}.value"),
            format!(
                "{} gate `value` must be {want}, found {value}",
                gate_type_name(gate.gate_type)
            ),
        );
    }
}

fn command(ctx: &mut Ctx<'_>, base: &str, gate: &Gate) {
    if let Some(t) = gate.timeout_seconds
        && t <= 0
    {
        ctx.emit(
            &rules::ITERATION_GATE_TIMEOUT_POSITIVE,
            format!("{base}.timeout_seconds"),
            format!("timeout_seconds must be > 0, found {t}"),
        );
    }
    let argv = match &gate.command {
        None => return,
        Some(GateCommand::Line(line)) => {
            ctx.emit(
                &rules::ITERATION_COMMAND_ARGV,
                format!("{base}.command"),
                format!("command {line:?} is a command line; use a list of argv tokens"),
            );
            return;
        }
        Some(GateCommand::Argv(argv)) => argv,
    };
    // `["pytest -q"]`: a command line in one token. Later tokens may hold spaces (there is no
    // shell: `-k "not slow"`), but the program token never does.
    if argv
        .first()
        .is_some_and(|p| p.contains(char::is_whitespace))
    {
        ctx.emit(
            &rules::ITERATION_COMMAND_ARGV,
            format!("{base}.command[0]"),
            format!(
                "argv token {:?} is a shell command line; split it into argv tokens ({:?})",
                argv[0],
                argv[0].split_whitespace().collect::<Vec<_>>()
            ),
        );
        return;
    }
    match check_argv(argv, &ctx.opts.command_allowlist) {
        Ok(()) => {}
        Err(CommandProblem::Empty) => ctx.emit(
            &rules::ITERATION_COMMAND_ARGV,
            format!("{base}.command"),
            "command has no argv tokens",
        ),
        Err(CommandProblem::Metacharacter { index, ch }) => ctx.emit(
            &rules::ITERATION_COMMAND_METACHAR,
            format!("{base}.command[{index}]"),
            format!("argv token {:?} contains the shell metacharacter {ch:?}", argv[index]),
        ),
        Err(CommandProblem::NotAllowlisted) => ctx.emit(
            &rules::ITERATION_COMMAND_ALLOWLIST,
            format!("{base}.command"),
            format!(
                "command is not allowlisted for MVP command_exit gates: {:?} starts with no allowlisted prefix",
                argv.join(" ")
            ),
        ),
    }
}

fn gate_type_name(t: GateType) -> &'static str {
    match t {
        GateType::ToolMetric => "tool_metric",
        GateType::ArtifactRegex => "artifact_regex",
        GateType::CommandExit => "command_exit",
        GateType::VerifierField => "verifier_field",
    }
}
