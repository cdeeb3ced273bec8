//! Structural errors (wrong type, missing required key, value outside an enum) mapped to the
//! rule of the guide section that defines the field; anything else is `yaml.type`.

use super::strip_indices;
use crate::package::model::Operator;
use crate::package::report::Diagnostic;
use crate::package::rules::{self, Rule};
use crate::package::yaml_pos::{Node, NodeKind, ShapeError, ShapeErrorKind};

/// Enum-valued fields: a value outside the list, or a non-string, breaks the field's rule.
const ENUM_FIELDS: &[(&str, &Rule)] = &[
    ("phase_mode", &rules::PHASE_MODE_VALUE),
    ("risk_level", &rules::RISK_LEVEL_VALUE),
    (
        "output_coordination.strategy",
        &rules::OUTPUT_COORDINATION_VALUE,
    ),
    (
        "output_coordination.publish_mode",
        &rules::OUTPUT_COORDINATION_VALUE,
    ),
    (
        "output_coordination.conflict_policy",
        &rules::OUTPUT_COORDINATION_VALUE,
    ),
    (
        "output_coordination.finalizer_input_policy",
        &rules::OUTPUT_COORDINATION_VALUE,
    ),
    (
        "phases[*].output_strategy",
        &rules::PHASES_OUTPUT_OVERRIDE_VALUE,
    ),
    (
        "phases[*].finalizer_input_policy",
        &rules::PHASES_OUTPUT_OVERRIDE_VALUE,
    ),
    (
        "validity_contract.prune_mode",
        &rules::VALIDITY_PRUNE_MODE_VALUE,
    ),
    (
        "phases[*].validity_contract.prune_mode",
        &rules::VALIDITY_PRUNE_MODE_VALUE,
    ),
    (
        "phases[*].iteration.strategy",
        &rules::ITERATION_STRATEGY_VALUE,
    ),
    (
        "phases[*].iteration.gates[*].type",
        &rules::ITERATION_GATE_TYPE_VALUE,
    ),
    (
        "phases[*].iteration.gates[*].operator",
        &rules::ITERATION_GATE_OPERATOR_VALUE,
    ),
    (
        "phases[*].iteration.gates[*].target",
        &rules::ITERATION_GATE_TARGET_VALUE,
    ),
    (
        "phases[*].iteration.gates[*].command",
        &rules::ITERATION_COMMAND_ARGV,
    ),
    (
        "verification.rules[*].type",
        &rules::VERIFICATION_RULE_TYPE_VALUE,
    ),
    (
        "verification.rules[*].severity",
        &rules::VERIFICATION_RULE_SEVERITY_VALUE,
    ),
    (
        "verification.rules[*].target",
        &rules::VERIFICATION_RULE_TARGET_VALUE,
    ),
    (
        "verification.rules[*].enforcement",
        &rules::VERIFICATION_RULE_ENFORCEMENT_VALUE,
    ),
    (
        "verification.rules[*].failure_class",
        &rules::VERIFICATION_RULE_FAILURE_CLASS_VALUE,
    ),
    (
        "verification.rules[*].remediation_mode",
        &rules::VERIFICATION_RULE_REMEDIATION_MODE_VALUE,
    ),
    (
        "verification.rules[*].scope",
        &rules::VERIFICATION_RULE_SCOPE_VALUE,
    ),
    (
        "verification.remediation.critical_path_behavior",
        &rules::CRITICAL_PATH_BEHAVIOR_VALUE,
    ),
    (
        "verification.policy.mode",
        &rules::VERIFICATION_POLICY_MODE_VALUE,
    ),
    ("auth.required[*].source", &rules::AUTH_SOURCE_VALUE),
    ("auth.required[*].modes[*]", &rules::AUTH_MODE_VALUE),
    ("tests[*].mode", &rules::TESTS_MODE_VALUE),
];

/// Required keys of the model and the rule their absence breaks.
const REQUIRED_FIELDS: &[(&str, &Rule)] = &[
    ("name", &rules::METADATA_NAME_REQUIRED),
    ("phases[*].id", &rules::PHASES_FIELD_REQUIRED),
    ("phases[*].description", &rules::PHASES_FIELD_REQUIRED),
    (
        "phases[*].iteration.gates[*].type",
        &rules::ITERATION_GATE_TYPE_VALUE,
    ),
    ("auth.required[*].source", &rules::AUTH_SOURCE_VALUE),
    (
        "verification.rules[*].name",
        &rules::VERIFICATION_RULE_FIELD_REQUIRED,
    ),
    (
        "verification.rules[*].check",
        &rules::VERIFICATION_RULE_FIELD_REQUIRED,
    ),
    ("memory.extract_types[*].type", &rules::MEMORY_TYPE_REQUIRED),
    ("planner_examples[*].goal", &rules::PLANNER_FIELD_REQUIRED),
    (
        "planner_examples[*].subtasks[*].id",
        &rules::PLANNER_FIELD_REQUIRED,
    ),
    ("tests[*].id", &rules::TESTS_ID_REQUIRED),
    ("tests[*].goal", &rules::TESTS_GOAL_REQUIRED),
];

/// The rule a structural error breaks.
pub(super) fn rule_for(err: &ShapeError) -> &'static Rule {
    let pattern = strip_indices(&err.path);
    let table = match err.kind {
        ShapeErrorKind::MissingField => REQUIRED_FIELDS,
        ShapeErrorKind::UnknownVariant | ShapeErrorKind::WrongType => ENUM_FIELDS,
        // `name:` with no value: a required key without a value breaks the key's own
        // required rule; a null enum value breaks the enum's rule.
        ShapeErrorKind::Null => {
            return REQUIRED_FIELDS
                .iter()
                .chain(ENUM_FIELDS)
                .find(|(p, _)| *p == pattern)
                .map_or(&rules::YAML_TYPE, |(_, rule)| *rule);
        }
    };
    table
        .iter()
        .find(|(p, _)| *p == pattern)
        .map_or(&rules::YAML_TYPE, |(_, rule)| *rule)
}

/// The diagnostic for a structural error; `root` is the document (to describe the node).
pub(super) fn diagnostic(err: &ShapeError, root: &Node) -> Diagnostic {
    let rule = rule_for(err);
    let field = err.path.rsplit('.').next().unwrap_or(&err.path);
    let message = match err.kind {
        _ if err.path.is_empty() => err.message.clone(),
        // A key the guide does not require but a rule still notes (memory types, planner
        // examples: warnings) is "missing", not "required".
        ShapeErrorKind::MissingField if rule.level == rules::Level::Warning => {
            format!("no `{field}` key: {}", rule.summary)
        }
        ShapeErrorKind::MissingField => err.message.clone(),
        ShapeErrorKind::Null => format!("`{field}` has no value; a value is required"),
        // serde's untagged-enum message names a Rust type; say what the guide requires.
        _ if rule.id == rules::ITERATION_COMMAND_ARGV.id => format!(
            "`{field}`: expected a list of argv tokens, found {}",
            root.get(&err.path)
                .map_or("another value", |n| n.kind.type_name())
        ),
        // An operator the guide's loader does not evaluate: say how to write the gate.
        ShapeErrorKind::UnknownVariant if rule.id == rules::ITERATION_GATE_OPERATOR_VALUE.id => {
            let written = match root.get(&err.path).map(|n| &n.kind) {
                Some(NodeKind::Str(s)) => s.clone(),
                _ => String::new(),
            };
            let portable = Operator::portable_spelling(&written)
                .unwrap_or("one of gte, lte, eq, contains, not_contains");
            format!(
                "`{field}`: `{written}` is not an operator the guide's loader evaluates ({}); write {portable}",
                Operator::NAMES.join(", ")
            )
        }
        _ => format!("`{field}`: {}", err.message),
    };
    Diagnostic::new(rule, err.path.clone(), err.pos, message)
}
