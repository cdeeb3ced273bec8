//! The validation rules: one entry per rule, with its stable id, severity, the guide section
//! it implements and a one-line summary. Every diagnostic points at one of these constants,
//! `loom-process rules` prints the table, and the vectors use the ids.

/// Diagnostic severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The definition is rejected.
    Error,
    /// Accepted; the author should look.
    Warning,
}

impl Level {
    /// `error` / `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
        }
    }
}

/// One validation rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Stable id, e.g. `phases.depends_on.unknown`.
    pub id: &'static str,
    /// Whether breaking it is an error or a warning.
    pub level: Level,
    /// The guide section title it implements (`guide "<section>"`).
    pub section: &'static str,
    /// One-line summary.
    pub summary: &'static str,
}

macro_rules! rules {
    ($($name:ident = $id:literal, $level:ident, $section:literal, $summary:literal;)*) => {
        $(
            #[doc = $summary]
            pub const $name: Rule = Rule {
                id: $id,
                level: Level::$level,
                section: $section,
                summary: $summary,
            };
        )*
        /// Every rule, in guide order.
        pub const ALL: &[Rule] = &[$($name),*];
    };
}

rules! {
    YAML_SYNTAX = "yaml.syntax", Error, "process.yaml reference", "the file is not well-formed YAML";
    YAML_ENCODING = "yaml.encoding", Error, "process.yaml reference", "process.yaml exists but is not UTF-8 text";
    YAML_DUPLICATE_KEY = "yaml.duplicate_key", Error, "process.yaml reference", "a mapping repeats a key";
    YAML_TYPE = "yaml.type", Error, "process.yaml reference", "a value has the wrong YAML type (string, number, list, mapping)";
    YAML_UNKNOWN_KEY = "yaml.unknown_key", Warning, "process.yaml reference", "a key the guide does not document (ignored)";
    YAML_BOOL_YAML11 = "yaml.bool_yaml11", Warning, "process.yaml reference", "a boolean field holds a YAML 1.1 spelling (yes/no/on/off): read as true/false, as the guide's loader (PyYAML, YAML 1.1) reads it; write true or false";
    YAML_ENUM_CASE = "yaml.enum_case", Warning, "process.yaml reference", "an enum value in another letter case (HIGH, Fan_In): read as its lowercase value, as the guide's loader lower-cases it; write the lowercase value";
    METADATA_NAME_REQUIRED = "metadata.name.required", Error, "Metadata", "`name` is required";
    METADATA_NAME_FORMAT = "metadata.name.format", Error, "Metadata", "`name` must match ^[a-z0-9][a-z0-9-]*$";
    METADATA_VERSION_FORMAT = "metadata.version.format", Warning, "Metadata", "`version` should be a semver-like string such as \"1.0\" or \"1.2.3\"";
    SCHEMA_VERSION_UNSUPPORTED = "schema_version.unsupported", Error, "Process contract v2 (recommended)", "`schema_version` must be 1 or 2";
    SCHEMA_VERSION_LEGACY_V1 = "schema_version.legacy_v1", Warning, "Migrating v1 to v2", "v1 (or absent) schema_version is accepted but legacy; the package guide set June 30, 2026 as the end of v1 compatibility";
    RISK_LEVEL_VALUE = "risk_level.value", Error, "Risk level and rigor floors", "`risk_level` must be low, medium, high or critical";
    RISK_LEVEL_ALIAS = "risk_level.alias", Warning, "Risk level and rigor floors", "a risk_level alias (normal, med, mid, std, standard): read as medium, as the guide's loader maps it; write medium";
    RISK_LEVEL_MISSING = "risk_level.missing", Warning, "Risk level and rigor floors", "`risk_level` is optional but strongly recommended";
    RISK_LEVEL_INFERRED_HIGH = "risk_level.inferred_high", Warning, "Risk level and rigor floors", "no `risk_level`, and name/tags carry a high-risk token: the high floor profile applies";
    DEPENDENCIES_INVALID = "dependencies.invalid", Error, "Dependencies", "a dependency is not a PEP 508 requirement specifier (name, extras, version constraints or `@ URL`, marker) or a pip VCS URL with #egg=<name>";
    DEPENDENCIES_UNPINNED = "dependencies.unpinned", Warning, "Dependencies", "a dependency has no version constraint, direct URL or VCS revision (flagged as a security risk at install)";
    TOOLS_OVERLAP = "tools.overlap", Error, "Tool guidance", "a tool is both in tools.required and tools.excluded";
    TOOLS_DUPLICATE = "tools.duplicate", Warning, "Tool guidance", "a tool is listed twice in the same list";
    AUTH_SOURCE_VALUE = "auth.source.value", Error, "Auth requirements", "`source` is required and must be api or mcp";
    AUTH_MODE_VALUE = "auth.mode.value", Error, "Auth requirements", "`modes` entries must be api_key, oauth2_pkce, oauth2_device, env_passthrough or cli_passthrough";
    AUTH_SELECTOR_MISSING = "auth.selector.missing", Error, "Auth requirements", "an auth requirement needs `provider`, `resource_ref` or `resource_id`";
    AUTH_RESOURCE_REF_FORMAT = "auth.resource_ref.format", Error, "Auth requirements", "`resource_ref` must be mcp:<alias>, api_integration:<name> or tool:<name>";
    AUTH_MCP_SERVER_SOURCE = "auth.mcp_server.source", Error, "Auth requirements", "`mcp_server` is only valid when `source: mcp`";
    AUTH_ENV_KEY_FORMAT = "auth.required_env_keys.format", Error, "Auth requirements", "a required_env_keys entry must be an environment variable name, ^[A-Za-z_][A-Za-z0-9_]*$";
    PHASE_MODE_VALUE = "phase_mode.value", Error, "Phase mode", "`phase_mode` must be strict, guided or suggestive";
    OUTPUT_COORDINATION_VALUE = "output_coordination.value", Error, "Output coordination", "an output_coordination enum has a value the guide does not list";
    OUTPUT_COORDINATION_ROOT_PATH = "output_coordination.intermediate_root.path", Error, "Output coordination", "`intermediate_root` must be a workspace-relative path (not empty, absolute, home-relative, with `..` or a backslash)";
    OUTPUT_COORDINATION_ROOT_NOT_NORMALIZED = "output_coordination.intermediate_root.not_normalized", Warning, "Output coordination", "`intermediate_root` has `.` or empty segments or a trailing `/`: read in normalized form, as the guide's loader normalizes it; write the normalized path";
    PHASES_FINALIZER_ID_RESERVED = "phases.id.reserved_finalizer", Error, "Output coordination", "a phase id equals the reserved <phase_id>__finalize_output of a fan-in phase with deliverables";
    PHASES_FINALIZER_SUFFIX = "phases.id.finalizer_suffix", Warning, "Output coordination", "a phase id ends in the reserved __finalize_output suffix";
    PHASES_EMPTY = "phases.empty", Warning, "Phases", "the process declares no phases";
    PHASES_FIELD_REQUIRED = "phases.field.required", Error, "Phases", "a phase needs a non-empty `id` and `description`, and `depends_on` written without a value is no list (write `[]` for a root phase)";
    PHASES_ID_DUPLICATE = "phases.id.duplicate", Error, "Phases", "phase ids must be unique";
    PHASES_ID_KEBAB_CASE = "phases.id.kebab_case", Warning, "Phases", "phase ids should be kebab-case";
    PHASES_DEPENDS_ON_UNKNOWN = "phases.depends_on.unknown", Error, "Phases", "`depends_on` names a phase that does not exist";
    PHASES_DEPENDS_ON_CYCLE = "phases.depends_on.cycle", Error, "Phases", "the phase dependencies contain a cycle (must be a DAG)";
    PHASES_DEPENDS_ON_DUPLICATE = "phases.depends_on.duplicate", Warning, "Phases", "`depends_on` lists the same phase twice";
    PHASES_DEPENDS_ON_IMPLICIT = "phases.depends_on.implicit", Warning, "Phases", "a phase has no `depends_on` (required by the field table; the guide's own iteration example omits it): read as [] (a root phase)";
    PHASES_MODEL_TIER_RANGE = "phases.model_tier.range", Error, "Phases", "`model_tier` must be 1, 2 or 3";
    PHASES_VERIFICATION_TIER_RANGE = "phases.verification_tier.range", Error, "Phases", "`verification_tier` must be 1 or 2";
    PHASES_OUTPUT_OVERRIDE_VALUE = "phases.output_override.value", Error, "Phases", "`output_strategy` must be direct or fan_in; `finalizer_input_policy` require_all_workers or allow_partial";
    PHASES_DELIVERABLE_DUPLICATE = "phases.deliverables.duplicate", Error, "Phases", "deliverable filenames must be unique across all phases";
    PHASES_DELIVERABLE_PATH = "phases.deliverables.path", Error, "Phases", "a deliverable filename must stay inside the workspace (not absolute, no `..` segment, no backslash)";
    PHASES_DELIVERABLE_NOT_NORMALIZED = "phases.deliverables.not_normalized", Warning, "Phases", "a deliverable filename inside the workspace is not in normalized form (`./x`, `a//b`, trailing `/`); the exact filename is enforced as written";
    VALIDITY_RATIO_RANGE = "validity.ratio.range", Error, "Validity contract (claim and evidence rigor)", "ratios must lie in 0..1";
    VALIDITY_COUNT_RANGE = "validity.count.range", Error, "Validity contract (claim and evidence rigor)", "counts and ages must be >= 0";
    VALIDITY_SYNTHESIS_TIER_RANGE = "validity.synthesis_tier.range", Error, "Validity contract (claim and evidence rigor)", "`final_gate.synthesis_min_verification_tier` must be an integer >= 1";
    VALIDITY_PRUNE_MODE_VALUE = "validity.prune_mode.value", Error, "Validity contract (claim and evidence rigor)", "`prune_mode` must be drop or rewrite_uncertainty";
    VALIDITY_HIGH_RISK_WEAKENED = "validity.high_risk.weakened", Error, "Validity contract (claim and evidence rigor)", "high/critical processes cannot weaken core safety constraints in explicit overrides: max_contradicted_count > 0, synthesis_min_verification_tier < 2, or false for enabled, claim_extraction.enabled, require_fact_checker_for_synthesis, enforce_verified_context_only or a temporal_consistency switch (the guide's loader's set)";
    VALIDITY_HIGH_RISK_BELOW_BASELINE = "validity.high_risk.below_baseline", Warning, "Building process YAMLs for reliability (detailed)", "a high/critical explicit override sets a ratio looser than the suggested high/critical or final-synthesis baseline (min_supported_ratio 0.8, max_unverified_ratio 0.2, critical_claim_support_ratio 1.0)";
    VALIDITY_SYNTHESIS_CONTEXT_HARDENED = "validity.synthesis.context_hardened", Warning, "Validity contract (claim and evidence rigor)", "a synthesis phase sets enforce_verified_context_only: false; synthesis hardening forces true";
    VALIDITY_SYNTHESIS_TIER_BELOW_MIN = "validity.synthesis.tier_below_min", Warning, "Validity contract (claim and evidence rigor)", "a synthesis phase's verification_tier is below final_gate.synthesis_min_verification_tier";
    ITERATION_DISABLED = "iteration.disabled", Warning, "Phase iteration loops", "an `iteration` block without `enabled: true` is off (the loop rules apply only to an enabled loop, as in the guide's loader)";
    ITERATION_FIELD_REQUIRED = "iteration.field.required", Error, "Phase iteration loops", "with enabled: true, max_attempts, max_total_runner_invocations, the three budgets and gates are required";
    ITERATION_MAX_ATTEMPTS_RANGE = "iteration.max_attempts.range", Error, "Phase iteration loops", "`max_attempts` must be between 1 and 6";
    ITERATION_INVOCATIONS_RANGE = "iteration.max_total_runner_invocations.range", Error, "Phase iteration loops", "`max_total_runner_invocations` must be >= max_attempts";
    ITERATION_BUDGET_POSITIVE = "iteration.budget.positive", Error, "Phase iteration loops", "iteration budgets must be > 0";
    ITERATION_COUNT_RANGE = "iteration.count.range", Error, "Phase iteration loops", "stop_on_no_improvement_attempts and max_replans_after_exhaustion must be >= 0";
    ITERATION_STRATEGY_VALUE = "iteration.strategy.value", Error, "Phase iteration loops", "`strategy` must be targeted_remediation or full_rerun";
    ITERATION_DETERMINISTIC_BLOCKING = "iteration.gates.deterministic_blocking", Error, "Phase iteration loops", "at least one deterministic blocking gate (tool_metric, artifact_regex or command_exit) is required";
    ITERATION_VERIFIER_BLOCKING = "iteration.gate.verifier_field_blocking", Error, "Phase iteration loops", "verifier_field gates are advisory-only and cannot be blocking";
    ITERATION_SCORE_REQUIRES_STOP = "iteration.gate.score_requires_stop", Error, "Phase iteration loops", "score-like gates require stop_on_no_improvement_attempts > 0";
    ITERATION_GATE_TYPE_VALUE = "iteration.gate.type.value", Error, "Phase iteration loops", "gate `type` is required and must be tool_metric, artifact_regex, command_exit or verifier_field";
    ITERATION_GATE_OPERATOR_VALUE = "iteration.gate.operator.value", Error, "Phase iteration loops", "gate `operator` must be one the guide's loader evaluates: gte, lte, eq, contains or not_contains (`gt`, `lt`, `ne` are not)";
    ITERATION_GATE_TARGET_VALUE = "iteration.gate.target.value", Error, "Phase iteration loops", "artifact_regex.target must be auto, deliverables, changed_files, summary or output";
    ITERATION_GATE_FIELD_REQUIRED = "iteration.gate.field.required", Error, "Phase iteration loops", "a gate lacks one of its type's key fields (an empty artifact_regex `pattern` counts as missing: it matches every text)";
    ITERATION_GATE_VALUE_TYPE = "iteration.gate.value.type", Error, "Phase iteration loops", "command_exit `value` must be an integer exit code; tool_metric/verifier_field `value` must be a number with gte or lte";
    ITERATION_GATE_PATTERN_INVALID = "iteration.gate.pattern.invalid", Error, "Phase iteration loops", "artifact_regex.pattern is not a valid regular expression";
    ITERATION_GATE_PATTERN_TOO_LARGE = "iteration.gate.pattern.too_large", Error, "Phase iteration loops", "artifact_regex.pattern compiles past the pattern size limit";
    ITERATION_GATE_ID_DUPLICATE = "iteration.gate.id.duplicate", Error, "Phase iteration loops", "gate ids must be unique within a phase's iteration block";
    ITERATION_GATE_BLOCKING_IMPLICIT = "iteration.gate.blocking.implicit", Warning, "Phase iteration loops", "a deterministic gate without `blocking` does not block (the guide's loader's default); write blocking: true or blocking: false";
    ITERATION_GATE_TARGET_NO_DELIVERABLES = "iteration.gate.target.no_deliverables", Error, "Phase iteration loops", "an artifact_regex gate with target: deliverables on a phase that declares no deliverables has nothing to read";
    ITERATION_STOP_RANGE = "iteration.stop_on_no_improvement.range", Error, "Phase iteration loops", "stop_on_no_improvement_attempts, when > 0, must be < max_attempts (otherwise it can never stop the loop)";
    ITERATION_GATE_TIMEOUT_POSITIVE = "iteration.gate.timeout.positive", Error, "Phase iteration loops", "command_exit.timeout_seconds must be > 0";
    ITERATION_COMMAND_ARGV = "iteration.gate.command.argv", Error, "Phase iteration loops", "command_exit.command must be a non-empty list of argv tokens, not a command line";
    ITERATION_COMMAND_METACHAR = "iteration.gate.command.metacharacter", Error, "Phase iteration loops", "command_exit argv tokens must not contain shell metacharacters";
    ITERATION_COMMAND_ALLOWLIST = "iteration.gate.command.allowlist", Error, "Phase iteration loops", "command_exit must start with an allowlisted command prefix";
    VERIFICATION_RULE_FIELD_REQUIRED = "verification.rule.field.required", Error, "Verification rules", "a verification rule needs `name` and `check` (`type` defaults to llm, as in the guide's loader)";
    VERIFICATION_RULE_TYPE_VALUE = "verification.rule.type.value", Error, "Verification rules", "rule `type` must be regex or llm";
    VERIFICATION_RULE_SEVERITY_VALUE = "verification.rule.severity.value", Error, "Verification rules", "rule `severity` must be error or warning";
    VERIFICATION_RULE_TARGET_VALUE = "verification.rule.target.value", Error, "Verification rules", "rule `target` must be output or deliverables";
    VERIFICATION_RULE_REGEX_INVALID = "verification.rule.regex.invalid", Error, "Verification rules", "a regex rule's `check` is not a valid regular expression";
    VERIFICATION_RULE_REGEX_TOO_LARGE = "verification.rule.regex.too_large", Error, "Verification rules", "a regex rule's `check` compiles past the pattern size limit";
    VERIFICATION_RULE_ENFORCEMENT_VALUE = "verification.rule.enforcement.value", Error, "Verification rules", "rule `enforcement` must be hard or advisory";
    VERIFICATION_RULE_FAILURE_CLASS_VALUE = "verification.rule.failure_class.value", Error, "Verification rules", "rule `failure_class` must be hard_integrity, recoverable_placeholder or semantic";
    VERIFICATION_RULE_REMEDIATION_MODE_VALUE = "verification.rule.remediation_mode.value", Error, "Verification rules", "rule `remediation_mode` must be none, confirm_or_prune, targeted_remediation, queue_follow_up or remediate_and_retry";
    VERIFICATION_RULE_SCOPE_VALUE = "verification.rule.scope.value", Error, "Verification rules", "rule `scope` must be phase or global";
    VERIFICATION_RULE_APPLIES_TO_UNKNOWN = "verification.rule.applies_to_phases.unknown", Error, "Verification rules", "`applies_to_phases` names a phase that does not exist (use \"*\" for all phases)";
    VERIFICATION_RULE_MIN_COUNT_RANGE = "verification.rule.min_count.range", Error, "Verification rules", "rule `min_count` must be >= 0";
    VERIFICATION_RULE_NAME_DUPLICATE = "verification.rule.name.duplicate", Warning, "Verification rules", "two verification rules share a name";
    VERIFICATION_POLICY_MODE_VALUE = "verification.policy.mode.value", Error, "Process contract v2 (recommended)", "`verification.policy.mode` must be llm_first or static_first";
    SEMANTIC_CHECK_HELPER_UNREGISTERED = "verification.policy.semantic_checks.helper", Error, "Process contract v2 (recommended)", "a semantic check names a verification helper that is not registered (`loom-process helpers` lists them)";
    SEMANTIC_CHECK_HELPER_CAPABILITY = "verification.policy.semantic_checks.capability", Error, "Process contract v2 (recommended)", "a semantic check's helper does not support the capability it declares";
    CRITICAL_PATH_BEHAVIOR_VALUE = "verification.remediation.critical_path_behavior.value", Error, "Process contract v2 (recommended)", "`critical_path_behavior` must be block, confirm_or_prune_then_queue or queue_follow_up";
    VERIFICATION_OUTPUT_CONTRACT_PASSED = "verification.policy.output_contract.passed", Error, "Migrating v1 to v2", "output_contract.required_fields must include `passed`";
    PROMPT_CONTRACTS_UNKNOWN_PHASE = "prompt_contracts.applies_to_phases.unknown", Warning, "Process contract v2 (recommended)", "evidence_contract.applies_to_phases names a phase that does not exist (use \"*\" for all)";
    MEMORY_TYPE_REQUIRED = "memory.type.required", Warning, "Memory types", "an extract_types entry without `type` names no kind of memory and is skipped (the guide shows no rule; its loader accepts it)";
    MEMORY_TYPE_DUPLICATE = "memory.type.duplicate", Warning, "Memory types", "two memory types share a name";
    PLANNER_FIELD_REQUIRED = "planner_examples.field.required", Warning, "Planner examples", "an example without `goal` or a subtask without `id` is an incomplete few-shot example (the guide shows no rule; its loader accepts it)";
    PLANNER_SUBTASK_UNKNOWN_PHASE = "planner_examples.subtask.unknown_phase", Warning, "Planner examples", "a subtask id does not mirror a phase id";
    PLANNER_MODEL_TIER_RANGE = "planner_examples.model_tier.range", Error, "Planner examples", "a subtask `model_tier` must be 1, 2 or 3";
    TESTS_ID_REQUIRED = "tests.id.required", Error, "Process test manifest", "a test case needs `id`";
    TESTS_ID_FORMAT = "tests.id.format", Error, "Process test manifest", "a test `id` names files (`scripts/<id>.yaml`, `<id>.jsonl`): it must match ^[a-z0-9][a-z0-9_.-]*$ and contain no `..`";
    TESTS_ID_DUPLICATE = "tests.id.duplicate", Error, "Process test manifest", "test ids must be unique per package";
    TESTS_MODE_VALUE = "tests.mode.value", Error, "Process test manifest", "`mode` must be deterministic or live";
    TESTS_GOAL_REQUIRED = "tests.goal.required", Error, "Process test manifest", "a test case needs a non-empty `goal`";
    TESTS_TIMEOUT_POSITIVE = "tests.timeout_seconds.positive", Error, "Process test manifest", "`timeout_seconds` must be greater than zero";
    TESTS_ACCEPTANCE_UNKNOWN_PHASE = "tests.acceptance.unknown_phase", Warning, "Process test manifest", "acceptance.phases.must_include names a phase that does not exist";
    TESTS_ACCEPTANCE_PATTERN_INVALID = "tests.acceptance.pattern.invalid", Error, "Process test manifest", "a forbidden_patterns entry is empty or not a valid regular expression";
    TESTS_ACCEPTANCE_PATTERN_TOO_LARGE = "tests.acceptance.pattern.too_large", Error, "Process test manifest", "a forbidden_patterns entry compiles past the pattern size limit";
    PACKAGE_PROCESS_YAML_MISSING = "package.process_yaml.missing", Error, "Package structure", "a package directory must contain process.yaml";
    PACKAGE_IO = "package.io", Error, "Package structure", "the package could not be read";
}

/// Blocks the guide names without listing all their keys: unknown keys directly inside them
/// are accepted silently (guide "Process contract v2 (recommended)": "static safety checks,
/// semantic checks", "retry budget, critical-path behavior", "summarization controls").
pub const LENIENT_BLOCKS: &[&str] = &[
    "verification.policy",
    "verification.policy.semantic_checks[*]",
    "verification.remediation",
    "verification.remediation.strategies[*]",
    "verification.remediation.retry_budget",
    "evidence",
    "evidence.extraction",
    "prompt_contracts",
];

/// The rule with this id.
pub fn by_id(id: &str) -> Option<&'static Rule> {
    ALL.iter().find(|r| r.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_well_formed() {
        let re = regex::Regex::new(r"^[a-z_]+(\.[a-z0-9_]+)+$").unwrap();
        let mut seen = std::collections::BTreeSet::new();
        for rule in ALL {
            assert!(re.is_match(rule.id), "{}", rule.id);
            assert!(seen.insert(rule.id), "duplicate {}", rule.id);
        }
        assert_eq!(
            by_id("phases.depends_on.cycle"),
            Some(&PHASES_DEPENDS_ON_CYCLE)
        );
    }
}
