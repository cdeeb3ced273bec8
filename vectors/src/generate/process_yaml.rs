//! Area `process-yaml`: validation of `process.yaml` process definitions as the package guide
//! (`docs/specs/loom-process-packages.md`) says. Kind `process-yaml.validate`, input `{yaml}`.
//!
//! A valid case expects the warnings as `[{rule, path}]` sorted by path, then rule; an invalid
//! case expects exactly one error: its rule id (`expected_error`) and the path of the offending
//! node (`expected_error_path`). Rule ids are listed in `vectors/kinds/process-yaml.md`.
//!
//! Most documents are the small valid [`base`] definition with one change, so each case's YAML
//! differs from a known-good document in exactly the way its comment says. Every expectation
//! is a literal below, decided by reading the cited guide section.

use super::schema::AreaSchema;
use super::{Case, FileBuilder};
use serde_json::{Value, json};

/// The valid definition most cases modify: explicit v2 contract and risk, two phases
/// (`gather` → `report`, the latter a synthesis phase at verification tier 2). No warnings.
const BASE: &str = r#"name: vector-process
version: "1.0"
schema_version: 2
description: A two-phase research process used by the process-yaml vectors.
risk_level: medium
phase_mode: guided
phases:
  - id: gather
    description: Gather and normalize sources.
    depends_on: []
    model_tier: 2
    deliverables:
      - "notes.md — source notes"
  - id: report
    description: Write the final report from verified notes.
    depends_on: [gather]
    model_tier: 3
    verification_tier: 2
    is_synthesis: true
    deliverables:
      - "report.md — final report"
"#;

/// A valid enabled iteration block for phase 0 (`gather`), indented for insertion after its
/// `deliverables`. Cases change one line of it.
const ITERATION: &str = r#"    iteration:
      enabled: true
      max_attempts: 3
      strategy: targeted_remediation
      stop_on_no_improvement_attempts: 1
      max_total_runner_invocations: 4
      iteration_budget:
        max_wall_clock_seconds: 600
        max_tokens: 100000
        max_tool_calls: 20
      gates:
        - id: no-placeholders
          type: artifact_regex
          blocking: true
          target: deliverables
          pattern: "\\[TBD\\]"
          expect_match: false
"#;

/// The base document.
fn base() -> String {
    BASE.to_owned()
}

/// The base document with `from` replaced by `to` (which must occur).
fn edit(from: &str, to: &str) -> String {
    edit_in(&base(), from, to)
}

fn edit_in(doc: &str, from: &str, to: &str) -> String {
    assert!(doc.contains(from), "{from:?} not in document");
    doc.replacen(from, to, 1)
}

/// The base document with top-level `block` appended.
fn with(block: &str) -> String {
    format!("{}{block}", base())
}

/// The base document with the iteration block on phase 0, after applying `edits`.
fn iterating(edits: &[(&str, &str)]) -> String {
    let mut it = ITERATION.to_owned();
    for (from, to) in edits {
        it = edit_in(&it, from, to);
    }
    edit(
        "      - \"notes.md — source notes\"\n",
        &format!("      - \"notes.md — source notes\"\n{it}"),
    )
}

/// The base document with extra gates appended to the iteration block (after `edits`).
fn with_gates(edits: &[(&str, &str)], gates: &str) -> String {
    let doc = iterating(edits);
    edit_in(
        &doc,
        "          expect_match: false\n",
        &format!("          expect_match: false\n{gates}"),
    )
}

/// A command_exit gate running `argv` (a YAML flow sequence or scalar).
fn command_gate(argv: &str) -> String {
    format!(
        "        - id: tests\n          type: command_exit\n          blocking: true\n          command: {argv}\n"
    )
}

const S_META: &str = "guide \"Metadata\"";
const S_CONTRACT: &str = "guide \"Process contract v2 (recommended)\"";
const S_MIGRATE: &str = "guide \"Migrating v1 to v2\"";
const S_RISK: &str = "guide \"Risk level and rigor floors\"";
const S_DEPS: &str = "guide \"Dependencies\"";
const S_TOOLS: &str = "guide \"Tool guidance\"";
const S_AUTH: &str = "guide \"Auth requirements\"";
const S_MODE: &str = "guide \"Phase mode\"";
const S_OUTPUT: &str = "guide \"Output coordination\"";
const S_PHASES: &str = "guide \"Phases\"";
const S_VALIDITY: &str = "guide \"Validity contract (claim and evidence rigor)\"";
const S_ITER: &str = "guide \"Phase iteration loops\"";
const S_VERIFY: &str = "guide \"Verification rules\"";
const S_TESTS: &str = "guide \"Process test manifest\"";
const S_MEMORY: &str = "guide \"Memory types\"";
const S_PLANNER: &str = "guide \"Planner examples\"";
const S_WORKSPACE: &str = "guide \"Workspace analysis\"";
const S_REPLAN: &str = "guide \"Replanning\"";
const S_REFERENCE: &str = "guide \"process.yaml reference\"";
const S_VALIDATION: &str = "guide \"Validation\"";

/// A valid case expecting exactly `warnings` (`(rule, path)`, written sorted by path, rule).
fn ok(
    id: &str,
    comment: &str,
    spec: &[&str],
    flags: &[&str],
    yaml: String,
    warnings: &[(&str, &str)],
) -> Case {
    let expected: Vec<Value> = warnings
        .iter()
        .map(|(rule, path)| json!({"rule": rule, "path": path}))
        .collect();
    Case::new(id, comment, spec)
        .flags(flags)
        .input("yaml", yaml)
        .valid_with(Value::Array(expected))
}

/// An invalid case whose only error is `rule` at `path`.
fn bad(
    id: &str,
    comment: &str,
    spec: &[&str],
    flags: &[&str],
    yaml: String,
    rule: &str,
    path: &str,
) -> Case {
    Case::new(id, comment, spec)
        .flags(flags)
        .input("yaml", yaml)
        .invalid_at(rule, path)
}

fn valid_cases() -> Vec<Case> {
    let quickstart = r#"name: my-process
version: "1.0"
schema_version: 2
description: >
  One-paragraph description of what this process does and when to use it.
author: "Your Name"
tags: [domain, keywords]
persona: |
  You are a [role description]. You [approach description].
phase_mode: guided
risk_level: medium
validity_contract:
  enabled: true
  claim_extraction:
    enabled: true
  critical_claim_types: [numeric, date, entity_fact]
  min_supported_ratio: 0.75
  max_unverified_ratio: 0.25
  max_contradicted_count: 0
  prune_mode: rewrite_uncertainty
  final_gate:
    enforce_verified_context_only: true
    synthesis_min_verification_tier: 2
    critical_claim_support_ratio: 1.0
phases:
  - id: research
    description: >
      What this phase accomplishes and how.
    depends_on: []
    model_tier: 2
    verification_tier: 1
    acceptance_criteria: >
      Concrete, measurable criteria for phase completion.
    deliverables:
      - "research-notes.md — description of this deliverable"
  - id: synthesize
    description: >
      Synthesize research into actionable output.
    depends_on: [research]
    model_tier: 3
    verification_tier: 2
    acceptance_criteria: >
      Criteria for the synthesis phase.
    deliverables:
      - "final-report.md — the main output document"
"#;
    let anchors = r#"name: anchored
schema_version: 2
risk_level: low
defaults: &tier
  model_tier: 2
  depends_on: []
phases:
  - <<: *tier
    id: one
    description: Uses a merged mapping for shared fields.
"#;
    vec![
        ok("valid.guide-quick-start", "the guide's quick-start definition is valid with no warning", &[S_CONTRACT, S_PHASES], &["GuideExample"], quickstart.into(), &[]),
        ok("valid.base", "a small explicit v2 definition with a synthesis phase at tier 2", &[S_META, S_PHASES], &["Baseline"], base(), &[]),
        ok("valid.flow-style", "flow-style YAML is the same document", &[S_REFERENCE], &["Baseline"], "{name: flow, schema_version: 2, risk_level: low, phases: [{id: a, description: d, depends_on: []}]}".into(), &[]),
        ok("valid.yaml-merge-key", "YAML anchors and merge keys resolve before validation", &[S_REFERENCE], &["Baseline"], anchors.into(), &[("yaml.unknown_key", "defaults")]),
        ok("migration.v1-accepted-with-warning", "schema_version 1 is accepted with a migration warning", &[S_MIGRATE], &["Migration"], edit("schema_version: 2", "schema_version: 1"), &[("schema_version.legacy_v1", "schema_version")]),
        ok("migration.absent-schema-version-is-v1", "no schema_version reads as legacy v1 and warns", &[S_MIGRATE, S_CONTRACT], &["Migration", "Interpretation"], edit("schema_version: 2\n", ""), &[("schema_version.legacy_v1", "schema_version")]),
        ok("metadata.version-not-semver-warns", "version is documented as a semver string; a word is flagged, not rejected", &[S_META], &["Interpretation"], edit("version: \"1.0\"", "version: \"first\""), &[("metadata.version.format", "version")]),
        ok("metadata.version-three-part", "a three-part semver version is fine", &[S_META], &["Baseline"], edit("version: \"1.0\"", "version: \"2.3.1-rc.1\""), &[]),
        ok("metadata.name-digits-and-hyphens", "names may start with a digit and contain hyphens", &[S_META], &["Baseline"], edit("name: vector-process", "name: 2nd-pass-review"), &[]),
        ok("risk.missing-warns", "risk_level is optional but strongly recommended", &[S_RISK, S_META], &["RiskFloor"], edit("risk_level: medium\n", ""), &[("risk_level.missing", "risk_level")]),
        ok("risk.inferred-from-name", "no risk_level and a 'financial' name token: high-risk intent is inferred (warned)", &[S_RISK], &["RiskFloor", "Interpretation"], edit("risk_level: medium\n", "").replace("name: vector-process", "name: financial-review"), &[("risk_level.inferred_high", "risk_level")]),
        ok("risk.inferred-from-tag", "a 'medical' tag token infers high risk too", &[S_RISK], &["RiskFloor", "Interpretation"], edit("risk_level: medium\n", "tags: [medical, notes]\n"), &[("risk_level.inferred_high", "risk_level")]),
        ok("risk.token-must-be-whole", "'financialish' is not the token 'financial'", &[S_RISK], &["RiskFloor", "Interpretation"], edit("risk_level: medium\n", "").replace("name: vector-process", "name: financialish"), &[("risk_level.missing", "risk_level")]),
        ok("risk.high-at-floor", "high risk with exactly the 0.8 / 0.2 floor and no contradictions", &[S_RISK, S_VALIDITY], &["RiskFloor"], with("validity_contract:\n  min_supported_ratio: 0.8\n  max_unverified_ratio: 0.2\n  max_contradicted_count: 0\n").replace("risk_level: medium", "risk_level: high"), &[]),
        ok("risk.critical-stricter-than-floor", "critical risk may tighten the floor", &[S_RISK, S_VALIDITY], &["RiskFloor"], with("validity_contract:\n  min_supported_ratio: 0.95\n  max_unverified_ratio: 0.05\n  final_gate:\n    temporal_consistency:\n      enabled: true\n      max_source_age_days: 30\n      as_of: \"2026-03-01\"\n").replace("risk_level: medium", "risk_level: critical"), &[]),
        ok("risk.low-may-loosen", "low risk may set values below the high floor", &[S_RISK, S_VALIDITY], &["RiskFloor"], with("validity_contract:\n  min_supported_ratio: 0.5\n  max_unverified_ratio: 0.5\n  max_contradicted_count: 3\n").replace("risk_level: medium", "risk_level: low"), &[]),
        ok("dependencies.unpinned-flagged", "an unpinned dependency is flagged; a constrained one is not", &[S_DEPS], &["SupplyChain"], with("dependencies:\n  - pyyaml\n  - requests>=2.28\n"), &[("dependencies.unpinned", "dependencies[0]")]),
        ok("dependencies.pinned", "exact pins and extras are fine", &[S_DEPS], &["SupplyChain"], with("dependencies:\n  - requests[socks]==2.31.0\n  - pyyaml>=6,<7\n"), &[]),
        ok("tools.disjoint", "required and excluded tools that do not overlap", &[S_TOOLS], &["Baseline"], with("tool_guidance: Use CSV for tabular data.\ntools:\n  required: [calculator, document_write]\n  excluded: [web_search]\n"), &[]),
        ok("tools.duplicate-warns", "a tool listed twice in one list is noted", &[S_TOOLS], &["Interpretation"], with("tools:\n  required: [calculator, calculator]\n"), &[("tools.duplicate", "tools.required[1]")]),
        ok("auth.guide-example", "the guide's auth.required example", &[S_AUTH], &["GuideExample"], with("auth:\n  required:\n    - provider: notion\n      source: mcp\n      resource_ref: mcp:notion\n      modes: [env_passthrough]\n      required_env_keys: [NOTION_TOKEN]\n      mcp_server: notion\n    - provider: acme_issues\n      source: api\n      resource_ref: api_integration:acme_issues\n      modes: [api_key]\n"), &[]),
        ok("auth.resource-id-without-provider", "provider is optional when resource_id is supplied", &[S_AUTH], &["Baseline"], with("auth:\n  required:\n    - source: api\n      resource_id: res_42\n"), &[]),
        ok("phase-mode.strict", "strict is a phase mode", &[S_MODE], &["Baseline"], edit("phase_mode: guided", "phase_mode: strict"), &[]),
        ok("phase-mode.suggestive", "suggestive is a phase mode", &[S_MODE], &["Baseline"], edit("phase_mode: guided", "phase_mode: suggestive"), &[]),
        ok("output.guide-example", "the guide's output_coordination block", &[S_OUTPUT], &["GuideExample"], with("output_coordination:\n  strategy: direct\n  intermediate_root: .loom/phase-artifacts\n  enforce_single_writer: true\n  publish_mode: transactional\n  conflict_policy: defer_fifo\n  finalizer_input_policy: require_all_workers\n"), &[]),
        ok("output.fan-in-phase-override", "phase overrides output_strategy and finalizer_input_policy", &[S_OUTPUT, S_PHASES], &["Baseline"], edit("    model_tier: 3\n", "    model_tier: 3\n    output_strategy: fan_in\n    finalizer_input_policy: allow_partial\n"), &[]),
        ok("output.finalizer-suffix-without-owner", "a __finalize_output id that no fan-in phase reserves is only warned (and is not kebab-case)", &[S_OUTPUT, S_PHASES], &["ReservedId"], with("").replace("  - id: gather\n", "  - id: extra__finalize_output\n    description: x\n    depends_on: []\n  - id: gather\n"), &[("phases.id.finalizer_suffix", "phases[0].id"), ("phases.id.kebab_case", "phases[0].id")]),
        ok("phases.diamond-dag", "two phases depending on one root, joined by a synthesis phase", &[S_PHASES], &["Dag"], edit("    depends_on: [gather]\n", "    depends_on: [gather, analyze]\n").replace("  - id: report\n", "  - id: analyze\n    description: Analyze.\n    depends_on: [gather]\n  - id: report\n"), &[]),
        ok("phases.declared-out-of-order", "a phase may depend on one declared later", &[S_PHASES], &["Dag"], edit("    depends_on: []\n", "    depends_on: [prep]\n").replace("  - id: report\n", "  - id: prep\n    description: Prepare.\n    depends_on: []\n  - id: report\n"), &[]),
        ok("phases.tier-bounds", "model_tier 1 and 3 and verification_tier 1 and 2 are in range", &[S_PHASES], &["Boundary"], edit("    model_tier: 2\n", "    model_tier: 1\n    verification_tier: 1\n"), &[]),
        ok("phases.deliverable-subdirectory", "a deliverable in a workspace subdirectory", &[S_PHASES, S_OUTPUT], &["PathPolicy"], edit("notes.md — source notes", "notes/sources.md — source notes"), &[]),
        ok("phases.depends-on-twice-warns", "listing the same dependency twice is noted", &[S_PHASES], &["Dag", "Interpretation"], edit("    depends_on: [gather]\n", "    depends_on: [gather, gather]\n"), &[("phases.depends_on.duplicate", "phases[1].depends_on[1]")]),
        ok("phases.id-not-kebab-warns", "phase ids are documented as kebab-case; snake_case is noted", &[S_PHASES], &["Interpretation"], edit("  - id: gather\n", "  - id: gather_sources\n").replace("depends_on: [gather]", "depends_on: [gather_sources]"), &[("phases.id.kebab_case", "phases[0].id")]),
        ok("phases.none-warns", "a definition without phases is noted", &[S_PHASES], &["Interpretation"], "name: empty\nschema_version: 2\nrisk_level: low\nphases: []\n".into(), &[("phases.empty", "phases")]),
        ok("validity.ratio-bounds", "ratios of exactly 0 and 1 are inside 0..1", &[S_VALIDITY], &["Boundary"], with("validity_contract:\n  min_supported_ratio: 0\n  max_unverified_ratio: 1\n  final_gate:\n    critical_claim_support_ratio: 1\n").replace("risk_level: medium", "risk_level: low"), &[]),
        ok("validity.canonical-structure", "the guide's canonical validity_contract at process and phase level", &[S_VALIDITY], &["GuideExample"], with("validity_contract:\n  enabled: true\n  claim_extraction:\n    enabled: true\n  critical_claim_types: [numeric, date, entity_fact]\n  min_supported_ratio: 0.75\n  max_unverified_ratio: 0.25\n  max_contradicted_count: 0\n  prune_mode: rewrite_uncertainty\n  require_fact_checker_for_synthesis: false\n  final_gate:\n    enforce_verified_context_only: true\n    synthesis_min_verification_tier: 2\n    critical_claim_support_ratio: 1.0\n    temporal_consistency:\n      enabled: false\n      require_as_of_alignment: false\n      enforce_cross_claim_date_conflict_check: false\n      max_source_age_days: 0\n      as_of: \"\"\n").replace("    is_synthesis: true\n", "    is_synthesis: true\n    validity_contract:\n      min_supported_ratio: 0.8\n      max_unverified_ratio: 0.2\n      final_gate:\n        synthesis_min_verification_tier: 2\n"), &[]),
        ok("validity.synthesis-tier-below-min-warns", "a synthesis phase at verification tier 1 is below the synthesis minimum (2)", &[S_VALIDITY], &["Interpretation"], edit("    verification_tier: 2\n", "    verification_tier: 1\n"), &[("validity.synthesis.tier_below_min", "phases[1].verification_tier")]),
        ok("validity.synthesis-min-tier-1", "lowering synthesis_min_verification_tier to 1 admits a tier-1 synthesis phase", &[S_VALIDITY], &["Boundary"], with("validity_contract:\n  final_gate:\n    synthesis_min_verification_tier: 1\n").replace("    verification_tier: 2\n", "    verification_tier: 1\n"), &[]),
        ok("validity.synthesis-hardening-overrides", "a synthesis phase cannot turn enforce_verified_context_only off; it is forced on (warned)", &[S_VALIDITY], &["Interpretation"], edit("    is_synthesis: true\n", "    is_synthesis: true\n    validity_contract:\n      final_gate:\n        enforce_verified_context_only: false\n"), &[("validity.synthesis.context_hardened", "phases[1].validity_contract.final_gate.enforce_verified_context_only")]),
        ok("memory.type-missing-warns", "the guide states no required memory-type field and its loader accepts a nameless entry; it is skipped (warned)", &[S_MEMORY], &["Extras", "LoaderForm"], with("memory:\n  extract_types:\n    - description: no type\n"), &[("memory.type.required", "memory.extract_types[0].type")]),
        ok("planner.goal-missing-warns", "the guide states no required planner-example field and its loader accepts an example without goal (warned)", &[S_PLANNER], &["Extras", "LoaderForm"], with("planner_examples:\n  - subtasks: []\n"), &[("planner_examples.field.required", "planner_examples[0].goal")]),
        ok("iteration.valid-loop", "an enabled loop with every required field and a deterministic blocking gate", &[S_ITER], &["IterationMvp"], iterating(&[]), &[]),
        ok("iteration.guide-example", "the guide's rewrite loop: tool_metric gte 80 with stop_on_no_improvement_attempts 2", &[S_ITER], &["GuideExample"], with_gates(&[("stop_on_no_improvement_attempts: 1", "stop_on_no_improvement_attempts: 2"), ("max_total_runner_invocations: 4", "max_total_runner_invocations: 6\n      max_replans_after_exhaustion: 2\n      replan_on_exhaustion: true")], "        - id: score\n          type: tool_metric\n          blocking: true\n          tool: humanize_writing\n          metric_path: report.humanization_score\n          operator: gte\n          value: 80\n"), &[]),
        ok("iteration.attempts-1", "max_attempts 1 is the lower bound (stop_on_no_improvement_attempts 0: at 1 it could never stop the loop)", &[S_ITER], &["Boundary"], iterating(&[("max_attempts: 3", "max_attempts: 1"), ("stop_on_no_improvement_attempts: 1", "stop_on_no_improvement_attempts: 0"), ("max_total_runner_invocations: 4", "max_total_runner_invocations: 1")]), &[]),
        ok("iteration.attempts-6", "max_attempts 6 is the upper bound; invocations may equal it", &[S_ITER], &["Boundary"], iterating(&[("max_attempts: 3", "max_attempts: 6"), ("max_total_runner_invocations: 4", "max_total_runner_invocations: 6")]), &[]),
        ok("iteration.disabled-needs-nothing", "enabled: false needs none of the loop fields", &[S_ITER], &["IterationMvp"], edit("    model_tier: 2\n", "    model_tier: 2\n    iteration:\n      enabled: false\n"), &[]),
        ok("iteration.without-enabled-warns", "an iteration block without enabled is off (warned)", &[S_ITER], &["Interpretation"], iterating(&[("      enabled: true\n", "")]), &[("iteration.disabled", "phases[0].iteration")]),
        ok("iteration.disabled-values-not-checked", "a loop that is off is not checked: out-of-range values under enabled: false load silently (the guide's loader validates only an enabled loop)", &[S_ITER], &["IterationMvp", "LoaderCheck"], iterating(&[("enabled: true", "enabled: false"), ("max_attempts: 3", "max_attempts: 9"), ("max_total_runner_invocations: 4", "max_total_runner_invocations: 0")]), &[]),
        ok("iteration.without-enabled-not-checked", "a block without enabled is off: warned once, its values not checked", &[S_ITER], &["IterationMvp", "LoaderCheck"], iterating(&[("      enabled: true\n", ""), ("max_attempts: 3", "max_attempts: 0")]), &[("iteration.disabled", "phases[0].iteration")]),
        ok("iteration.loader-operators", "the five operators the guide's loader evaluates: gte, lte, eq, contains, not_contains", &[S_ITER], &["LoaderCheck", "IterationMvp"], with_gates(&[], "        - {id: floor, type: tool_metric, blocking: true, tool: t, metric_path: a, operator: gte, value: 80}\n        - {id: ceiling, type: tool_metric, blocking: true, tool: t, metric_path: b, operator: lte, value: 4}\n        - {id: exact, type: tool_metric, blocking: true, tool: t, metric_path: c, operator: eq, value: 0}\n        - {id: has, type: tool_metric, blocking: true, tool: t, metric_path: d, operator: contains, value: indemnification}\n        - {id: lacks, type: tool_metric, blocking: true, tool: t, metric_path: e, operator: not_contains, value: \"governing law\"}\n"), &[]),
        ok("iteration.verifier-field-advisory", "a non-blocking verifier_field gate beside a deterministic blocking gate", &[S_ITER], &["IterationMvp"], with_gates(&[], "        - id: confidence\n          type: verifier_field\n          blocking: false\n          field: confidence\n          operator: gte\n          value: 0.8\n"), &[]),
        ok("iteration.verifier-field-defaults-advisory", "a verifier_field gate without blocking is advisory", &[S_ITER], &["Interpretation"], with_gates(&[], "        - id: confidence\n          type: verifier_field\n          field: confidence\n          operator: gte\n          value: 0.8\n"), &[]),
        ok("iteration.command-pytest", "command_exit with the allowlisted prefix pytest", &[S_ITER], &["ShellPolicy"], with_gates(&[], &command_gate("[pytest, -q, tests/test_report.py]")), &[]),
        ok("iteration.command-uv-run-pytest", "command_exit with the allowlisted prefix uv run pytest", &[S_ITER], &["ShellPolicy"], with_gates(&[], &command_gate("[uv, run, pytest]")), &[]),
        ok("iteration.command-cargo-test", "command_exit with the allowlisted prefix cargo test, extra argv tokens allowed", &[S_ITER], &["ShellPolicy"], with_gates(&[], &command_gate("[cargo, test, --lib, --, --nocapture]")), &[]),
        ok("iteration.command-make-test", "command_exit with the allowlisted prefix make test and a timeout", &[S_ITER], &["ShellPolicy"], with_gates(&[], "        - id: tests\n          type: command_exit\n          blocking: true\n          command: [make, test]\n          operator: eq\n          value: 0\n          timeout_seconds: 120\n"), &[]),
        ok("iteration.command-token-with-space", "an argv token may contain a space: there is no shell", &[S_ITER], &["ShellPolicy"], with_gates(&[], &command_gate("[python3, -m, pytest, -k, \"not slow\"]")), &[]),
        ok("verification.guide-rules", "the guide's regex and llm verification rules with policy and remediation", &[S_VERIFY, S_CONTRACT], &["GuideExample"], with("verification:\n  policy:\n    mode: llm_first\n    output_contract:\n      required_fields: [passed, outcome, reason_code, severity_class, confidence, feedback, issues, metadata]\n  remediation:\n    default_strategy: targeted-remediation\n  rules:\n    - name: no-placeholders\n      description: \"No placeholder text in deliverables\"\n      check: \"\\\\[TBD\\\\]|\\\\[TODO\\\\]|\\\\[INSERT\\\\]|\\\\[PLACEHOLDER\\\\]|XX%\"\n      severity: error\n      type: regex\n    - name: claims-sourced\n      description: \"All factual claims must cite sources\"\n      check: >\n        Scan for factual claims. Each must have an inline citation.\n      severity: warning\n      type: llm\n      target: deliverables\n"), &[]),
        ok("verification.llm-check-is-not-a-regex", "an llm rule's check is a prompt, so '[TBD' is fine there", &[S_VERIFY], &["Baseline"], with("verification:\n  rules:\n    - name: prose\n      check: \"Flag any [TBD marker\"\n      severity: warning\n      type: llm\n"), &[]),
        ok("verification.duplicate-rule-name-warns", "two rules with one name are noted", &[S_VERIFY], &["Interpretation"], with("verification:\n  rules:\n    - {name: r, check: a, type: regex, severity: error}\n    - {name: r, check: b, type: regex, severity: error}\n"), &[("verification.rule.name.duplicate", "verification.rules[1].name")]),
        ok("verification.policy-unspecified-keys", "keys the guide names without a shape (static checks) are accepted in verification.policy", &[S_CONTRACT], &["Interpretation"], with("verification:\n  policy:\n    mode: static_first\n    static_checks: [placeholders]\n"), &[]),
        ok("contract.v2-blocks", "the guide's minimal v2 evidence and prompt_contracts blocks", &[S_CONTRACT], &["GuideExample"], with("evidence:\n  record_schema:\n    required_fields: [evidence_id, tool, source_url, created_at, quality]\n    facets: [target, entity, subject, region, category]\nprompt_contracts:\n  remediation_instructions: Fix the failing claims.\n  evidence_contract:\n    enabled: true\n    applies_to_phases: [\"*\"]\n"), &[]),
        ok("contract.applies-to-unknown-phase-warns", "evidence_contract.applies_to_phases naming no phase is noted", &[S_CONTRACT], &["Interpretation"], with("prompt_contracts:\n  evidence_contract:\n    enabled: true\n    applies_to_phases: [gather, reveiw]\n"), &[("prompt_contracts.applies_to_phases.unknown", "prompt_contracts.evidence_contract.applies_to_phases[1]")]),
        ok("extras.memory-workspace-planner-replanning", "the guide's memory, workspace_analysis, planner_examples and replanning blocks", &[S_MEMORY, S_WORKSPACE, S_PLANNER, S_REPLAN], &["GuideExample"], with("memory:\n  extract_types:\n    - type: evidence_finding\n      description: \"Specific fact or data point with source and credibility\"\n  extraction_guidance: Prioritize findings that answer the question.\nworkspace_analysis:\n  scan_for:\n    - \"*.csv — data files with metrics or evidence\"\n  guidance: Look for existing data files.\nplanner_examples:\n  - goal: \"Summarize vendor pricing\"\n    subtasks:\n      - id: gather\n        description: Collect pricing pages\n        depends_on: []\n        model_tier: 2\n      - id: report\n        description: Compare vendors\n        depends_on: [gather]\n        model_tier: 3\nreplanning:\n  triggers: |\n    - Research question is too broad\n  guidance: Narrow scope and restart evidence gathering.\n"), &[]),
        ok("planner.subtask-not-a-phase-warns", "planner subtasks should mirror phase ids", &[S_PLANNER], &["Interpretation"], with("planner_examples:\n  - goal: \"Summarize\"\n    subtasks:\n      - id: collect\n        depends_on: []\n"), &[("planner_examples.subtask.unknown_phase", "planner_examples[0].subtasks[0].id")]),
        ok("tests.guide-manifest", "the guide's test manifest shape with a deterministic case", &[S_TESTS], &["TestManifest"], with("tests:\n  - id: smoke\n    mode: deterministic\n    goal: \"Summarize the sources\"\n    timeout_seconds: 900\n    requires_network: false\n    requires_tools: [write_file]\n    acceptance:\n      phases:\n        must_include: [gather]\n      deliverables:\n        must_exist: [report.md]\n      verification:\n        forbidden_patterns: [\"deliverable_.* not found\"]\n  - id: live-check\n    mode: live\n    goal: \"Same, against real providers\"\n"), &[]),
        ok("tests.mode-defaults", "a case without mode or timeout is accepted", &[S_TESTS], &["Interpretation"], with("tests:\n  - id: smoke\n    goal: g\n"), &[]),
        ok("tests.timeout-1", "timeout_seconds 1 is greater than zero", &[S_TESTS], &["Boundary"], with("tests:\n  - id: smoke\n    goal: g\n    timeout_seconds: 1\n"), &[]),
        ok("tests.must-include-unknown-phase-warns", "acceptance naming a phase that does not exist is noted", &[S_TESTS], &["Interpretation"], with("tests:\n  - id: smoke\n    goal: g\n    acceptance:\n      phases:\n        must_include: [gathr]\n"), &[("tests.acceptance.unknown_phase", "tests[0].acceptance.phases.must_include[0]")]),
        ok("yaml.unknown-key-warns", "an undocumented top-level key is ignored with a warning", &[S_REFERENCE], &["Interpretation"], with("favourite_colour: teal\n"), &[("yaml.unknown_key", "favourite_colour")]),
        ok("yaml.unknown-phase-key-warns", "a misspelt optional phase key is ignored with a warning", &[S_REFERENCE, S_PHASES], &["Interpretation"], edit("    model_tier: 2\n", "    modle_tier: 2\n"), &[("yaml.unknown_key", "phases[0].modle_tier")]),
        // Review fixes (defects found after the first release of these vectors)
        ok("metadata.name-plain-number-is-text", "a plain scalar in a string field is its source text: name 42 is \"42\", which matches the name pattern", &[S_META, S_REFERENCE], &["Interpretation"], edit("name: vector-process", "name: 42"), &[]),
        ok("yaml.plain-scalars-in-string-fields", "version: 1.0 is \"1.0\" and tags: [2024, true] are strings, not type errors", &[S_META, S_REFERENCE], &["Interpretation"], edit("version: \"1.0\"", "version: 1.0\ntags: [2024, true]"), &[]),
        ok("yaml.yaml-1.2-booleans", "YAML 1.2: yes/no/on/off/y/n are strings, so they can be phase ids", &[S_REFERENCE, S_PHASES], &["Interpretation"], with("").replace("  - id: report\n", "  - id: yes\n    description: Y.\n    depends_on: []\n  - id: off\n    description: Off.\n    depends_on: [yes]\n  - id: report\n").replace("    depends_on: [gather]\n", "    depends_on: [gather, off, yes]\n"), &[]),
        ok("phases.depends-on-missing-warns", "depends_on is in the required column, but the guide's own iteration example omits it: absent reads as [] (warned)", &[S_PHASES, S_ITER], &["PhaseFields", "Interpretation"], edit("    depends_on: []\n", ""), &[("phases.depends_on.implicit", "phases[0].depends_on")]),
        ok("guide.iteration-example", "the guide's \"Phase iteration loops\" example verbatim (it omits depends_on, schema_version and risk_level)", &[S_ITER, S_PHASES], &["GuideExample"], "name: guide-iteration-example\nphases:\n  - id: rewrite\n    description: Improve draft quality.\n    deliverables:\n      - \"draft.md — rewritten draft\"\n    iteration:\n      enabled: true\n      max_attempts: 4\n      strategy: targeted_remediation       # targeted_remediation | full_rerun\n      stop_on_no_improvement_attempts: 2\n      max_total_runner_invocations: 6\n      max_replans_after_exhaustion: 2\n      replan_on_exhaustion: true\n      iteration_budget:\n        max_wall_clock_seconds: 600\n        max_tokens: 100000\n        max_tool_calls: 20\n      gates:\n        - id: score\n          type: tool_metric\n          blocking: true\n          tool: humanize_writing\n          metric_path: report.humanization_score\n          operator: gte\n          value: 80\n        - id: no-placeholders\n          type: artifact_regex\n          blocking: true\n          target: deliverables             # auto | deliverables | changed_files | summary | output\n          pattern: \"\\\\[TBD\\\\]|\\\\[TODO\\\\]|\\\\[PLACEHOLDER\\\\]\"\n          expect_match: false\n".into(), &[("phases.depends_on.implicit", "phases[0].depends_on"), ("risk_level.missing", "risk_level"), ("schema_version.legacy_v1", "schema_version")]),
        ok("guide.migration-step-3", "the guide's Migration Step 3 contract under Step 1's risk_level: medium loads without a warning (under high risk its temporal_consistency switches written false are refused: validity.high-risk-temporal-*)", &[S_VALIDITY, S_MIGRATE], &["GuideExample"], with("validity_contract:\n  enabled: true\n  claim_extraction: { enabled: true }\n  critical_claim_types: [numeric, date, entity_fact]\n  min_supported_ratio: 0.75\n  max_unverified_ratio: 0.25\n  max_contradicted_count: 0\n  prune_mode: rewrite_uncertainty\n  final_gate:\n    enforce_verified_context_only: true\n    synthesis_min_verification_tier: 2\n    critical_claim_support_ratio: 1.0\n    temporal_consistency:\n      enabled: false\n      require_as_of_alignment: false\n      enforce_cross_claim_date_conflict_check: false\n      max_source_age_days: 0\n"), &[]),
        ok("guide.minimal-verification-rules", "the guide's \"Writing verification rules\" minimum (no-placeholders with N/A)", &[S_VERIFY], &["GuideExample"], with("verification:\n  rules:\n    - name: no-placeholders\n      description: \"No placeholder text in deliverables\"\n      check: \"\\\\[TBD\\\\]|\\\\[TODO\\\\]|\\\\[INSERT\\\\]|\\\\[PLACEHOLDER\\\\]|XX%|N/A\"\n      severity: error\n      type: regex\n"), &[]),
        ok("validity.high-risk-min-supported-below-baseline-warns", "high risk below the 0.8 supported baseline is warned, not rejected", &[S_VALIDITY, S_RISK], &["RiskFloor", "Interpretation"], with("validity_contract:\n  min_supported_ratio: 0.79\n").replace("risk_level: medium", "risk_level: high"), &[("validity.high_risk.below_baseline", "validity_contract.min_supported_ratio")]),
        ok("validity.high-risk-unverified-above-baseline-warns", "high risk above the 0.2 unverified baseline is warned", &[S_VALIDITY, S_RISK], &["RiskFloor", "Interpretation"], with("validity_contract:\n  max_unverified_ratio: 0.21\n").replace("risk_level: medium", "risk_level: high"), &[("validity.high_risk.below_baseline", "validity_contract.max_unverified_ratio")]),
        ok("validity.high-risk-synthesis-tier-2", "synthesis_min_verification_tier 2 is the high-risk lower bound", &[S_VALIDITY, S_RISK], &["RiskFloor", "Boundary"], with("validity_contract:\n  final_gate:\n    synthesis_min_verification_tier: 2\n").replace("risk_level: medium", "risk_level: high"), &[]),
        ok("validity.high-risk-switches-on", "writing every high-risk switch true, as in the built-in investment-analysis package, loads", &[S_VALIDITY, S_RISK], &["RiskFloor", "Baseline"], with("validity_contract:\n  enabled: true\n  claim_extraction:\n    enabled: true\n  require_fact_checker_for_synthesis: true\n  final_gate:\n    enforce_verified_context_only: true\n    temporal_consistency:\n      enabled: true\n      require_as_of_alignment: true\n      enforce_cross_claim_date_conflict_check: true\n").replace("risk_level: medium", "risk_level: high"), &[]),
        ok("validity.high-risk-final-gate-below-baseline-warns", "a critical_claim_support_ratio below the high/critical final-synthesis baseline 1.0 is warned, not rejected (the guide's loader does not reject ratios)", &[S_VALIDITY, S_RISK], &["RiskFloor", "Interpretation"], with("validity_contract:\n  final_gate:\n    critical_claim_support_ratio: 0.9\n").replace("risk_level: medium", "risk_level: high"), &[("validity.high_risk.below_baseline", "validity_contract.final_gate.critical_claim_support_ratio")]),
        ok("validity.synthesis-min-tier-3", "synthesis_min_verification_tier is \"int (>=1)\"; 3 is accepted and the tier-2 synthesis phase falls below it (warned)", &[S_VALIDITY], &["Boundary", "Interpretation"], with("validity_contract:\n  final_gate:\n    synthesis_min_verification_tier: 3\n"), &[("validity.synthesis.tier_below_min", "phases[1].verification_tier")]),
        ok("phases.deliverable-dot-slash-warns", "./notes.md stays inside the workspace: not normalized, warned", &[S_PHASES], &["PathPolicy", "Interpretation"], edit("notes.md — source notes", "./notes.md — source notes"), &[("phases.deliverables.not_normalized", "phases[0].deliverables[0]")]),
        ok("phases.deliverable-trailing-slash-warns", "a trailing / is not normalized, warned", &[S_PHASES], &["PathPolicy", "Interpretation"], edit("notes.md — source notes", "notes/ — source notes"), &[("phases.deliverables.not_normalized", "phases[0].deliverables[0]")]),
        ok("phases.deliverable-tilde-name", "~notes.md is a relative name, not a home directory", &[S_PHASES], &["PathPolicy", "Interpretation"], edit("notes.md — source notes", "~notes.md — source notes"), &[]),
        ok("dependencies.pep-508-forms", "PEP 508: parenthesized constraints, direct URL references, markers and pinned VCS URLs are pinned", &[S_DEPS], &["SupplyChain", "Interpretation"], with("dependencies:\n  - requests (>=2.28)\n  - pip @ https://github.com/pypa/pip/archive/22.0.2.zip\n  - \"tomli>=2; python_version < '3.11'\"\n  - git+https://github.com/org/repo.git@v1.2.0#egg=repo\n"), &[]),
        ok("dependencies.vcs-without-revision-unpinned", "a VCS URL without @<rev> and a marker-only requirement are unpinned", &[S_DEPS], &["SupplyChain", "Interpretation"], with("dependencies:\n  - git+https://github.com/org/repo.git#egg=repo\n  - \"tomli; python_version < '3.11'\"\n"), &[("dependencies.unpinned", "dependencies[0]"), ("dependencies.unpinned", "dependencies[1]")]),
        ok("verification.python-regex-lookaround", "regex rules use Python re: look-behind and look-ahead compile", &[S_VERIFY], &["Verification", "Interpretation"], with("verification:\n  rules:\n    - name: bare-numbers\n      check: \"(?<!\\\\$)\\\\b\\\\d{4,}\\\\b(?! USD)\"\n      severity: warning\n      type: regex\n"), &[]),
        ok("verification.python-regex-backreferences", "numbered and named backreferences ((?P<w>…)(?P=w)) compile", &[S_VERIFY, S_ITER], &["Verification", "Interpretation"], with_gates(&[], "        - id: no-doubled-words\n          type: artifact_regex\n          blocking: false\n          target: output\n          pattern: \"\\\\b(?P<w>\\\\w+) (?P=w)\\\\b|\\\\b(\\\\w+)-\\\\2\\\\b\"\n          expect_match: false\n"), &[]),
        ok("tests.id-safe-characters", "lowercase letters, digits, `_`, `.` and `-` make a safe test id (it names scripts/<id>.yaml and <id>.jsonl)", &[S_TESTS], &["TestManifest", "Interpretation"], with("tests:\n  - id: case_2\n    goal: g\n  - id: v1.2-final\n    goal: g\n  - id: 0-day\n    goal: g\n"), &[]),
        ok("tests.forbidden-pattern-lookahead", "forbidden_patterns use Python re too", &[S_TESTS], &["TestManifest", "Interpretation"], with("tests:\n  - id: smoke\n    goal: g\n    acceptance:\n      verification:\n        forbidden_patterns: [\"deliverable_(?!optional).* not found\"]\n"), &[]),
        // Forms the guide's loader reads (issue 17, class 1): accepted, with a warning naming the portable form where the form is not portable
        ok("forms.intermediate-root-normalizable", "'./artifacts' and '.loom//x/./y' stay inside the workspace: read in normalized form, as the guide's loader normalizes them (warned)", &[S_OUTPUT], &["LoaderForm", "PathPolicy", "Interpretation"], with("output_coordination:\n  intermediate_root: .loom//phase-artifacts/./telecom\n"), &[("output_coordination.intermediate_root.not_normalized", "output_coordination.intermediate_root")]),
        ok("forms.intermediate-root-dot-prefix", "'./artifacts' is read as 'artifacts' (warned)", &[S_OUTPUT], &["LoaderForm", "PathPolicy", "Interpretation"], with("output_coordination:\n  intermediate_root: ./artifacts\n"), &[("output_coordination.intermediate_root.not_normalized", "output_coordination.intermediate_root")]),
        ok("forms.remediation-instructions-mapping", "remediation_instructions as a mapping (default plus one entry per strategy), as migration step 4 and the guide's loader take it", &[S_MIGRATE, S_CONTRACT], &["LoaderForm"], with("verification:\n  remediation:\n    default_strategy: targeted-remediation\nprompt_contracts:\n  remediation_instructions:\n    default: |\n      Perform targeted remediation only for failing checks.\n    targeted-remediation: Keep validated work.\n"), &[]),
        ok("forms.remediation-instructions-text", "remediation_instructions as one text", &[S_MIGRATE, S_CONTRACT], &["LoaderForm"], with("prompt_contracts:\n  remediation_instructions: Fix the failing claims only.\n"), &[]),
        ok("forms.remediation-instructions-reason-code-key", "a mapping key other than default or a strategy is looked up by the verifier's reason_code first (the guide's loader's order), so it is not warned", &[S_MIGRATE], &["LoaderForm"], with("prompt_contracts:\n  remediation_instructions:\n    default: Fix what failed.\n    deliverable_missing: Write every declared deliverable.\n"), &[]),
        ok("forms.yaml11-booleans-in-boolean-fields", "plain yes/on/On in boolean fields are YAML 1.1 booleans, as PyYAML (the guide's loader) reads them (warned each)", &[S_REFERENCE, S_VALIDITY], &["LoaderForm", "Interpretation"], with("validity_contract:\n  enabled: yes\n  claim_extraction:\n    enabled: on\n").replace("    is_synthesis: true\n", "    is_synthesis: On\n"), &[("yaml.bool_yaml11", "phases[1].is_synthesis"), ("yaml.bool_yaml11", "validity_contract.claim_extraction.enabled"), ("yaml.bool_yaml11", "validity_contract.enabled")]),
        ok("forms.yaml11-false-spellings", "no/off/False read as false (warned)", &[S_REFERENCE, S_OUTPUT], &["LoaderForm", "Interpretation"], with("output_coordination:\n  enforce_single_writer: off\n"), &[("yaml.bool_yaml11", "output_coordination.enforce_single_writer")]),
        ok("forms.risk-level-upper-case", "risk_level HIGH is read as high (the guide's loader lower-cases it; warned)", &[S_RISK], &["LoaderForm", "RiskFloor"], edit("risk_level: medium", "risk_level: HIGH"), &[("yaml.enum_case", "risk_level")]),
        ok("forms.risk-level-alias-standard", "risk_level standard is the loader's alias of medium (warned)", &[S_RISK], &["LoaderForm", "RiskFloor"], edit("risk_level: medium", "risk_level: standard"), &[("risk_level.alias", "risk_level")]),
        ok("forms.risk-level-alias-normal-upper", "NORMAL folds to normal, an alias of medium (warned)", &[S_RISK], &["LoaderForm", "RiskFloor"], edit("risk_level: medium", "risk_level: NORMAL"), &[("risk_level.alias", "risk_level")]),
        ok("forms.enum-case-strategy-and-operator", "lower-cased enums of the loader: output strategy Fan_In and gate operator GTE (warned each)", &[S_OUTPUT, S_ITER], &["LoaderForm", "Interpretation"], with_gates(&[], "        - id: score\n          type: tool_metric\n          blocking: true\n          tool: t\n          metric_path: report.score\n          operator: GTE\n          value: 80\n").replace("    model_tier: 3\n", "    model_tier: 3\n    output_strategy: Fan_In\n"), &[("yaml.enum_case", "phases[0].iteration.gates[1].operator"), ("yaml.enum_case", "phases[1].output_strategy")]),
        ok("forms.rule-type-defaults-to-llm", "a rule without type is an llm rule (the loader's default), so its check is a prompt, not a regex", &[S_VERIFY], &["LoaderForm"], with("verification:\n  rules:\n    - name: sourced\n      check: \"Every claim in [brackets cites a source\"\n      severity: warning\n"), &[]),
        ok("forms.rule-scoping-keys", "the loader's rule scoping keys: applies_to_phases (list or \"*\"), scope, enforcement, failure_class, remediation_mode, min_count", &[S_VERIFY], &["LoaderForm"], with("verification:\n  rules:\n    - name: no-placeholders\n      check: \"\\\\[TBD\\\\]\"\n      type: regex\n      severity: error\n      applies_to_phases: \"*\"\n      failure_class: recoverable_placeholder\n      remediation_mode: targeted_remediation\n    - name: sourced\n      check: Every claim cites a source.\n      type: llm\n      applies_to_phases: [report]\n      scope: phase\n      enforcement: advisory\n      failure_class: semantic\n    - name: sections\n      check: \"(?m)^## \"\n      type: regex\n      target: deliverables\n      min_count: 2\n      requires_exact_cardinality: false\n      enforcement: hard\n"), &[]),
        ok("forms.gate-without-blocking-warns", "a deterministic gate without blocking does not block (the loader's default; warned) beside a blocking one", &[S_ITER], &["LoaderForm", "IterationMvp", "Interpretation"], with_gates(&[], "        - id: no-todo\n          type: artifact_regex\n          target: output\n          pattern: TODO\n          expect_match: false\n"), &[("iteration.gate.blocking.implicit", "phases[0].iteration.gates[1].blocking")]),
        ok("forms.gate-operators-contains", "contains and not_contains are gate operators of the guide's loader", &[S_ITER], &["LoaderForm", "IterationMvp"], with_gates(&[], "        - id: mentions\n          type: tool_metric\n          blocking: true\n          tool: t\n          metric_path: report.labels\n          operator: contains\n          value: ok\n        - id: no-error\n          type: verifier_field\n          field: feedback\n          operator: not_contains\n          value: error\n"), &[]),
        ok("forms.semantic-checks-builtin-shape", "semantic checks as the loader's built-in packages write them (id/check/severity/enforcement/scope) and one naming a registered helper", &[S_CONTRACT], &["LoaderForm"], with("verification:\n  policy:\n    mode: llm_first\n    static_checks:\n      tool_success_policy: safety_integrity_only\n    semantic_checks:\n      - id: process-rules\n        check: \"Apply process-defined verification rules and acceptance criteria.\"\n        severity: error\n        enforcement: hard\n        scope: phase\n      - id: tests\n        helper: Run_Test_Suite\n        capability: command_execution\n        args: {command: [pytest, -q]}\n    outcome_policy:\n      pass_states: [pass, pass_with_warnings]\n  remediation:\n    strategies:\n      - id: targeted-remediation\n        retry_strategy: unconfirmed_data\n    default_strategy: targeted-remediation\n    critical_path_behavior: QUEUE_FOLLOW_UP\n    retry_budget:\n      max_attempts: 2\n"), &[("yaml.enum_case", "verification.remediation.critical_path_behavior")]),
        ok("forms.prompt-contract-constraint-names", "executor_constraints / verifier_constraints (the loader's names) and applies_to_phases as one string", &[S_CONTRACT], &["LoaderForm"], with("prompt_contracts:\n  executor_constraints: Keep claims traceable.\n  verifier_constraints: Judge the acceptance criteria.\n  evidence_contract:\n    enabled: true\n    applies_to_phases: \"*\"\n"), &[]),
        ok("forms.tools-guidance", "tool guidance written inside tools: (the loader's legacy-compatible place, used by its built-in packages)", &[S_TOOLS], &["LoaderForm"], with("tools:\n  guidance: Use CSV for tables.\n  required: [spreadsheet]\n  excluded: [shell_execute]\n"), &[]),
        ok("forms.auth-scopes", "auth.required entries may carry scopes (the loader reads them)", &[S_AUTH], &["LoaderForm"], with("auth:\n  required:\n    - provider: notion\n      source: api\n      modes: [oauth2_pkce]\n      scopes: [read_content]\n      required_env_keys: [_NOTION_TOKEN2]\n"), &[]),
        ok("risk.inferred-from-finance-token", "finance is one of the loader's 11 high-risk tokens (warned: inferred high)", &[S_RISK], &["LoaderCheck", "RiskFloor"], edit("risk_level: medium\n", "").replace("name: vector-process", "name: finance-digest"), &[("risk_level.inferred_high", "risk_level")]),
        ok("risk.inferred-from-law-tag", "a law tag infers high risk (one of the loader's 11 tokens)", &[S_RISK], &["LoaderCheck", "RiskFloor"], edit("risk_level: medium\n", "tags: [Law, contracts]\n"), &[("risk_level.inferred_high", "risk_level")]),
        ok("risk.inferred-from-healthcare-and-investing", "healthcare and investing are tokens too", &[S_RISK], &["LoaderCheck", "RiskFloor"], edit("risk_level: medium\n", "tags: [healthcare-investing]\n"), &[("risk_level.inferred_high", "risk_level")]),
        ok("risk.token-lawful-is-not-law", "'lawful' is not the token 'law'", &[S_RISK], &["LoaderCheck", "RiskFloor", "Interpretation"], edit("risk_level: medium\n", "tags: [lawful]\n"), &[("risk_level.missing", "risk_level")]),
    ]
}

fn invalid_cases() -> Vec<Case> {
    vec![
        // YAML structure
        bad("yaml.syntax-unclosed-flow", "an unclosed flow sequence is not YAML", &[S_REFERENCE], &["YamlStructure"], "name: x\nphases: [\n".into(), "yaml.syntax", ""),
        bad("yaml.duplicate-top-level-key", "a mapping may not repeat a key", &[S_REFERENCE], &["YamlStructure"], edit("phase_mode: guided\n", "phase_mode: guided\nphase_mode: strict\n"), "yaml.duplicate_key", "phase_mode"),
        bad("yaml.duplicate-phase-key", "a duplicated key inside a phase is located by index", &[S_REFERENCE], &["YamlStructure"], edit("    model_tier: 3\n", "    model_tier: 3\n    model_tier: 2\n"), "yaml.duplicate_key", "phases[1].model_tier"),
        bad("yaml.root-not-mapping", "a process definition is a mapping, not a list", &[S_REFERENCE], &["YamlStructure"], "- name: x\n".into(), "yaml.type", ""),
        bad("yaml.tags-not-a-list", "tags is a list", &[S_META], &["YamlStructure"], edit("risk_level: medium\n", "risk_level: medium\ntags: finance\n"), "yaml.type", "tags"),
        bad("yaml.model-tier-word", "model_tier is an integer", &[S_PHASES], &["YamlStructure"], edit("    model_tier: 2\n", "    model_tier: high\n"), "yaml.type", "phases[0].model_tier"),
        bad("yaml.schema-version-string", "schema_version is an integer, not a string", &[S_CONTRACT], &["YamlStructure", "Interpretation"], edit("schema_version: 2", "schema_version: \"2\""), "yaml.type", "schema_version"),
        // Metadata
        bad("metadata.name-missing", "name is required", &[S_META], &["Metadata"], edit("name: vector-process\n", ""), "metadata.name.required", "name"),
        bad("metadata.name-uppercase", "no uppercase in names", &[S_META, S_VALIDATION], &["Metadata"], edit("name: vector-process", "name: Vector-Process"), "metadata.name.format", "name"),
        bad("metadata.name-underscore", "no underscores in names", &[S_META], &["Metadata"], edit("name: vector-process", "name: vector_process"), "metadata.name.format", "name"),
        bad("metadata.name-leading-hyphen", "a name starts with a letter or digit", &[S_META], &["Metadata"], edit("name: vector-process", "name: -vector"), "metadata.name.format", "name"),
        bad("metadata.name-empty", "the empty string does not match the name pattern", &[S_META], &["Metadata"], edit("name: vector-process", "name: \"\""), "metadata.name.format", "name"),
        bad("contract.schema-version-3", "only contract versions 1 and 2 exist", &[S_CONTRACT, S_MIGRATE], &["Migration"], edit("schema_version: 2", "schema_version: 3"), "schema_version.unsupported", "schema_version"),
        bad("risk.unknown-level", "risk_level is low, medium, high or critical", &[S_RISK], &["RiskFloor"], edit("risk_level: medium", "risk_level: extreme"), "risk_level.value", "risk_level"),
        bad("dependencies.malformed", "'requests>>2' is not a requirement specifier", &[S_DEPS], &["SupplyChain", "Interpretation"], with("dependencies:\n  - requests>>2\n"), "dependencies.invalid", "dependencies[0]"),
        // Tools and auth
        bad("tools.overlap", "a tool cannot be both required and excluded", &[S_TOOLS, S_VALIDATION], &["ToolPolicy"], with("tools:\n  required: [calculator, spreadsheet]\n  excluded: [spreadsheet]\n"), "tools.overlap", "tools.excluded[0]"),
        bad("auth.source-missing", "each auth requirement names its source", &[S_AUTH], &["Auth"], with("auth:\n  required:\n    - provider: notion\n"), "auth.source.value", "auth.required[0].source"),
        bad("auth.source-unknown", "source is api or mcp", &[S_AUTH], &["Auth"], with("auth:\n  required:\n    - provider: notion\n      source: http\n"), "auth.source.value", "auth.required[0].source"),
        bad("auth.mode-unknown", "modes are the five documented credential modes", &[S_AUTH], &["Auth"], with("auth:\n  required:\n    - provider: notion\n      source: api\n      modes: [api_key, password]\n"), "auth.mode.value", "auth.required[0].modes[1]"),
        bad("auth.no-selector", "provider is optional only when resource_ref or resource_id is given", &[S_AUTH], &["Auth"], with("auth:\n  required:\n    - source: api\n      modes: [api_key]\n"), "auth.selector.missing", "auth.required[0]"),
        bad("auth.resource-ref-format", "resource_ref is mcp:<alias>, api_integration:<name> or tool:<name>", &[S_AUTH], &["Auth"], with("auth:\n  required:\n    - source: api\n      resource_ref: notion\n"), "auth.resource_ref.format", "auth.required[0].resource_ref"),
        bad("auth.resource-ref-empty-name", "a selector needs a name after its prefix", &[S_AUTH], &["Auth"], with("auth:\n  required:\n    - source: mcp\n      resource_ref: \"mcp:\"\n"), "auth.resource_ref.format", "auth.required[0].resource_ref"),
        bad("auth.mcp-server-with-api-source", "mcp_server is only valid when source is mcp", &[S_AUTH], &["Auth"], with("auth:\n  required:\n    - provider: notion\n      source: api\n      mcp_server: notion\n"), "auth.mcp_server.source", "auth.required[0].mcp_server"),
        // Phase mode, output coordination
        bad("phase-mode.unknown", "phase_mode is strict, guided or suggestive", &[S_MODE], &["Enum"], edit("phase_mode: guided", "phase_mode: loose"), "phase_mode.value", "phase_mode"),
        bad("output.strategy-unknown", "strategy is direct or fan_in", &[S_OUTPUT], &["Enum"], with("output_coordination:\n  strategy: broadcast\n"), "output_coordination.value", "output_coordination.strategy"),
        bad("output.publish-mode-unknown", "publish_mode is transactional or best_effort", &[S_OUTPUT], &["Enum"], with("output_coordination:\n  publish_mode: eventually\n"), "output_coordination.value", "output_coordination.publish_mode"),
        bad("output.conflict-policy-unknown", "conflict_policy is defer_fifo or fail_fast", &[S_OUTPUT], &["Enum"], with("output_coordination:\n  conflict_policy: last_wins\n"), "output_coordination.value", "output_coordination.conflict_policy"),
        bad("output.root-absolute", "intermediate_root may not be absolute", &[S_OUTPUT], &["PathPolicy"], with("output_coordination:\n  intermediate_root: /tmp/artifacts\n"), "output_coordination.intermediate_root.path", "output_coordination.intermediate_root"),
        bad("output.root-dotdot", "intermediate_root may not contain .. segments", &[S_OUTPUT], &["PathPolicy"], with("output_coordination:\n  intermediate_root: .loom/../../escape\n"), "output_coordination.intermediate_root.path", "output_coordination.intermediate_root"),
        bad("output.root-backslash", "a backslash path is not a normalized workspace-relative path", &[S_OUTPUT], &["PathPolicy", "Interpretation"], with("output_coordination:\n  intermediate_root: \"..\\\\escape\"\n"), "output_coordination.intermediate_root.path", "output_coordination.intermediate_root"),
        bad("output.reserved-finalizer-id", "a fan-in phase with deliverables reserves <id>__finalize_output", &[S_OUTPUT], &["ReservedId"], with("output_coordination:\n  strategy: fan_in\n").replace("  - id: report\n", "  - id: gather__finalize_output\n    description: Collides with the finalizer.\n    depends_on: []\n  - id: report\n"), "phases.id.reserved_finalizer", "phases[1].id"),
        bad("output.reserved-finalizer-phase-override", "a phase-level fan_in override reserves the finalizer id too", &[S_OUTPUT, S_PHASES], &["ReservedId"], edit("    model_tier: 2\n", "    model_tier: 2\n    output_strategy: fan_in\n").replace("  - id: report\n", "  - id: gather__finalize_output\n    description: Collides.\n    depends_on: []\n  - id: report\n"), "phases.id.reserved_finalizer", "phases[1].id"),
        // Phases
        bad("phases.description-missing", "description is a required phase field", &[S_PHASES], &["PhaseFields"], edit("    description: Gather and normalize sources.\n", ""), "phases.field.required", "phases[0].description"),
        bad("phases.id-missing", "id is a required phase field", &[S_PHASES], &["PhaseFields"], edit("  - id: gather\n    description:", "  - description:").replace("depends_on: [gather]", "depends_on: []"), "phases.field.required", "phases[0].id"),
        bad("phases.duplicate-id", "phase ids are unique", &[S_PHASES, S_VALIDATION], &["Dag"], edit("  - id: report\n", "  - id: gather\n    description: Again.\n    depends_on: []\n  - id: report\n"), "phases.id.duplicate", "phases[1].id"),
        bad("phases.unknown-dependency", "depends_on names an existing phase", &[S_PHASES, S_VALIDATION], &["Dag"], edit("    depends_on: [gather]\n", "    depends_on: [gathr]\n"), "phases.depends_on.unknown", "phases[1].depends_on[0]"),
        bad("phases.self-dependency", "a phase depending on itself is a cycle", &[S_PHASES], &["Dag"], edit("    depends_on: []\n", "    depends_on: [gather]\n"), "phases.depends_on.cycle", "phases[0].depends_on[0]"),
        bad("phases.two-cycle", "gather -> report -> gather is rejected at load time", &[S_PHASES, S_VALIDATION], &["Dag"], edit("    depends_on: []\n", "    depends_on: [report]\n"), "phases.depends_on.cycle", "phases[0].depends_on[0]"),
        bad("phases.three-cycle", "a -> b -> c -> a through later phases", &[S_PHASES], &["Dag"], edit("    depends_on: []\n", "    depends_on: [check]\n").replace("  - id: report\n", "  - id: check\n    description: Check.\n    depends_on: [report]\n  - id: report\n"), "phases.depends_on.cycle", "phases[0].depends_on[0]"),
        bad("phases.model-tier-0", "model_tier is 1..3", &[S_PHASES], &["Boundary"], edit("    model_tier: 2\n", "    model_tier: 0\n"), "phases.model_tier.range", "phases[0].model_tier"),
        bad("phases.model-tier-4", "model_tier is 1..3", &[S_PHASES], &["Boundary"], edit("    model_tier: 3\n", "    model_tier: 4\n"), "phases.model_tier.range", "phases[1].model_tier"),
        bad("phases.verification-tier-3", "verification_tier is 1..2", &[S_PHASES], &["Boundary"], edit("    verification_tier: 2\n", "    verification_tier: 3\n"), "phases.verification_tier.range", "phases[1].verification_tier"),
        bad("phases.verification-tier-0", "verification_tier is 1..2", &[S_PHASES], &["Boundary"], edit("    model_tier: 2\n", "    model_tier: 2\n    verification_tier: 0\n"), "phases.verification_tier.range", "phases[0].verification_tier"),
        bad("phases.output-strategy-unknown", "a phase output_strategy is direct or fan_in", &[S_PHASES], &["Enum"], edit("    model_tier: 2\n", "    model_tier: 2\n    output_strategy: scatter\n"), "phases.output_override.value", "phases[0].output_strategy"),
        bad("phases.finalizer-policy-unknown", "a phase finalizer_input_policy is require_all_workers or allow_partial", &[S_PHASES], &["Enum"], edit("    model_tier: 2\n", "    model_tier: 2\n    finalizer_input_policy: any\n"), "phases.output_override.value", "phases[0].finalizer_input_policy"),
        bad("phases.duplicate-deliverable-across-phases", "deliverable filenames are unique across all phases", &[S_PHASES, S_VALIDATION], &["Deliverables"], edit("report.md — final report", "notes.md — the notes again"), "phases.deliverables.duplicate", "phases[1].deliverables[0]"),
        bad("phases.duplicate-deliverable-same-file-other-description", "uniqueness is by exact filename, not the description", &[S_PHASES], &["Deliverables"], edit("      - \"report.md — final report\"\n", "      - \"report.md — final report\"\n      - \"report.md — appendix\"\n"), "phases.deliverables.duplicate", "phases[1].deliverables[1]"),
        bad("phases.deliverable-absolute", "a deliverable stays inside the workspace", &[S_PHASES, S_OUTPUT], &["PathPolicy", "Interpretation"], edit("report.md — final report", "/etc/report.md — final report"), "phases.deliverables.path", "phases[1].deliverables[0]"),
        bad("phases.deliverable-dotdot", "a deliverable may not climb out of the workspace", &[S_PHASES, S_OUTPUT], &["PathPolicy", "Interpretation"], edit("report.md — final report", "../report.md — final report"), "phases.deliverables.path", "phases[1].deliverables[0]"),
        // Validity contract
        bad("validity.min-supported-above-1", "min_supported_ratio is in 0..1", &[S_VALIDITY], &["Boundary"], with("validity_contract:\n  min_supported_ratio: 1.5\n"), "validity.ratio.range", "validity_contract.min_supported_ratio"),
        bad("validity.max-unverified-negative", "max_unverified_ratio is in 0..1", &[S_VALIDITY], &["Boundary"], with("validity_contract:\n  max_unverified_ratio: -0.1\n"), "validity.ratio.range", "validity_contract.max_unverified_ratio"),
        bad("validity.critical-support-above-1", "critical_claim_support_ratio is in 0..1", &[S_VALIDITY], &["Boundary"], with("validity_contract:\n  final_gate:\n    critical_claim_support_ratio: 1.01\n"), "validity.ratio.range", "validity_contract.final_gate.critical_claim_support_ratio"),
        bad("validity.contradicted-negative", "max_contradicted_count is >= 0", &[S_VALIDITY], &["Boundary"], with("validity_contract:\n  max_contradicted_count: -1\n"), "validity.count.range", "validity_contract.max_contradicted_count"),
        bad("validity.source-age-negative", "max_source_age_days cannot be negative", &[S_VALIDITY], &["Boundary", "Interpretation"], with("validity_contract:\n  final_gate:\n    temporal_consistency:\n      max_source_age_days: -7\n"), "validity.count.range", "validity_contract.final_gate.temporal_consistency.max_source_age_days"),
        bad("validity.synthesis-min-tier-0", "synthesis_min_verification_tier is >= 1", &[S_VALIDITY], &["Boundary"], with("validity_contract:\n  final_gate:\n    synthesis_min_verification_tier: 0\n"), "validity.synthesis_tier.range", "validity_contract.final_gate.synthesis_min_verification_tier"),
        bad("validity.prune-mode-unknown", "prune_mode is drop or rewrite_uncertainty", &[S_VALIDITY], &["Enum"], with("validity_contract:\n  prune_mode: keep\n"), "validity.prune_mode.value", "validity_contract.prune_mode"),
        bad("validity.phase-prune-mode-unknown", "a phase-level prune_mode is checked too", &[S_VALIDITY], &["Enum"], edit("    is_synthesis: true\n", "    is_synthesis: true\n    validity_contract:\n      prune_mode: erase\n"), "validity.prune_mode.value", "phases[1].validity_contract.prune_mode"),
        bad("validity.high-risk-contradictions", "high risk rejects max_contradicted_count > 0 (the guide's example)", &[S_VALIDITY, S_RISK], &["RiskFloor"], with("validity_contract:\n  max_contradicted_count: 1\n").replace("risk_level: medium", "risk_level: high"), "validity.high_risk.weakened", "validity_contract.max_contradicted_count"),
        bad("validity.critical-temporal-disabled", "critical risk may not switch the temporal gate off in an explicit override (the guide's loader rejects it)", &[S_VALIDITY, S_RISK], &["RiskFloor", "LoaderCheck"], with("validity_contract:\n  final_gate:\n    temporal_consistency:\n      enabled: false\n").replace("risk_level: medium", "risk_level: critical"), "validity.high_risk.weakened", "validity_contract.final_gate.temporal_consistency.enabled"),
        bad("validity.high-risk-pipeline-disabled", "high risk may not switch the validity pipeline off (the guide's loader: \"must not disable validity enforcement\")", &[S_VALIDITY, S_RISK], &["RiskFloor", "LoaderCheck"], with("validity_contract:\n  enabled: false\n").replace("risk_level: medium", "risk_level: high"), "validity.high_risk.weakened", "validity_contract.enabled"),
        bad("validity.high-risk-claim-extraction-off", "high risk may not switch claim extraction off", &[S_VALIDITY, S_RISK], &["RiskFloor", "LoaderCheck"], with("validity_contract:\n  claim_extraction:\n    enabled: false\n").replace("risk_level: medium", "risk_level: high"), "validity.high_risk.weakened", "validity_contract.claim_extraction.enabled"),
        bad("validity.high-risk-fact-checker-off", "high risk may not drop the fact checker before synthesis", &[S_VALIDITY, S_RISK], &["RiskFloor", "LoaderCheck"], with("validity_contract:\n  require_fact_checker_for_synthesis: false\n").replace("risk_level: medium", "risk_level: high"), "validity.high_risk.weakened", "validity_contract.require_fact_checker_for_synthesis"),
        bad("validity.high-risk-verified-context-off", "high risk may not let unresolved claims into synthesis input", &[S_VALIDITY, S_RISK], &["RiskFloor", "LoaderCheck"], with("validity_contract:\n  final_gate:\n    enforce_verified_context_only: false\n").replace("risk_level: medium", "risk_level: high"), "validity.high_risk.weakened", "validity_contract.final_gate.enforce_verified_context_only"),
        bad("validity.high-risk-synthesis-tier-1", "high risk may not lower synthesis_min_verification_tier below 2 (the tier-2 synthesis phase still meets it)", &[S_VALIDITY, S_RISK], &["RiskFloor", "LoaderCheck", "Boundary"], with("validity_contract:\n  final_gate:\n    synthesis_min_verification_tier: 1\n").replace("risk_level: medium", "risk_level: high"), "validity.high_risk.weakened", "validity_contract.final_gate.synthesis_min_verification_tier"),
        bad("validity.high-risk-temporal-as-of-off", "high risk may not switch as-of alignment off", &[S_VALIDITY, S_RISK], &["RiskFloor", "LoaderCheck"], with("validity_contract:\n  final_gate:\n    temporal_consistency:\n      require_as_of_alignment: false\n").replace("risk_level: medium", "risk_level: high"), "validity.high_risk.weakened", "validity_contract.final_gate.temporal_consistency.require_as_of_alignment"),
        bad("validity.high-risk-temporal-cross-claim-off", "high risk may not switch the cross-claim date check off", &[S_VALIDITY, S_RISK], &["RiskFloor", "LoaderCheck"], with("validity_contract:\n  final_gate:\n    temporal_consistency:\n      enforce_cross_claim_date_conflict_check: false\n").replace("risk_level: medium", "risk_level: high"), "validity.high_risk.weakened", "validity_contract.final_gate.temporal_consistency.enforce_cross_claim_date_conflict_check"),
        bad("validity.high-risk-phase-override", "phase overrides may not weaken core constraints either", &[S_VALIDITY, S_RISK], &["RiskFloor"], edit("    is_synthesis: true\n", "    is_synthesis: true\n    validity_contract:\n      max_contradicted_count: 2\n").replace("risk_level: medium", "risk_level: critical"), "validity.high_risk.weakened", "phases[1].validity_contract.max_contradicted_count"),
        bad("validity.inferred-high-risk-contradictions", "an inferred high risk (financial name) also rejects contradictions", &[S_VALIDITY, S_RISK], &["RiskFloor", "Interpretation"], with("validity_contract:\n  max_contradicted_count: 1\n").replace("risk_level: medium\n", "").replace("name: vector-process", "name: financial-review"), "validity.high_risk.weakened", "validity_contract.max_contradicted_count"),
        // Iteration
        bad("iteration.attempts-0", "max_attempts must be between 1 and 6", &[S_ITER, S_VALIDATION], &["IterationMvp", "Boundary"], iterating(&[("max_attempts: 3", "max_attempts: 0")]), "iteration.max_attempts.range", "phases[0].iteration.max_attempts"),
        bad("iteration.attempts-7", "max_attempts must be between 1 and 6", &[S_ITER, S_VALIDATION], &["IterationMvp", "Boundary"], iterating(&[("max_attempts: 3", "max_attempts: 7"), ("max_total_runner_invocations: 4", "max_total_runner_invocations: 9")]), "iteration.max_attempts.range", "phases[0].iteration.max_attempts"),
        bad("iteration.invocations-below-attempts", "max_total_runner_invocations must be >= max_attempts", &[S_ITER], &["IterationMvp", "Boundary"], iterating(&[("max_total_runner_invocations: 4", "max_total_runner_invocations: 2")]), "iteration.max_total_runner_invocations.range", "phases[0].iteration.max_total_runner_invocations"),
        bad("iteration.attempts-missing", "max_attempts is required when enabled", &[S_ITER], &["IterationMvp"], iterating(&[("      max_attempts: 3\n", "")]), "iteration.field.required", "phases[0].iteration.max_attempts"),
        bad("iteration.invocations-missing", "max_total_runner_invocations is required when enabled", &[S_ITER], &["IterationMvp"], iterating(&[("      max_total_runner_invocations: 4\n", "")]), "iteration.field.required", "phases[0].iteration.max_total_runner_invocations"),
        bad("iteration.budget-missing", "iteration_budget is required when enabled", &[S_ITER], &["IterationMvp"], iterating(&[("      iteration_budget:\n        max_wall_clock_seconds: 600\n        max_tokens: 100000\n        max_tool_calls: 20\n", "")]), "iteration.field.required", "phases[0].iteration.iteration_budget"),
        bad("iteration.budget-tokens-missing", "each of the three budgets is required", &[S_ITER], &["IterationMvp"], iterating(&[("        max_tokens: 100000\n", "")]), "iteration.field.required", "phases[0].iteration.iteration_budget.max_tokens"),
        bad("iteration.gates-empty", "at least one gate is required", &[S_ITER], &["IterationMvp"], iterating(&[("      gates:\n", "      gates: []\n"), ("        - id: no-placeholders\n          type: artifact_regex\n          blocking: true\n          target: deliverables\n          pattern: \"\\\\[TBD\\\\]\"\n          expect_match: false\n", "")]), "iteration.field.required", "phases[0].iteration.gates"),
        bad("iteration.wall-clock-0", "max_wall_clock_seconds must be > 0", &[S_ITER], &["IterationMvp", "Boundary"], iterating(&[("max_wall_clock_seconds: 600", "max_wall_clock_seconds: 0")]), "iteration.budget.positive", "phases[0].iteration.iteration_budget.max_wall_clock_seconds"),
        bad("iteration.tokens-0", "max_tokens must be > 0", &[S_ITER], &["IterationMvp", "Boundary"], iterating(&[("max_tokens: 100000", "max_tokens: 0")]), "iteration.budget.positive", "phases[0].iteration.iteration_budget.max_tokens"),
        bad("iteration.tool-calls-negative", "max_tool_calls must be > 0", &[S_ITER], &["IterationMvp", "Boundary"], iterating(&[("max_tool_calls: 20", "max_tool_calls: -1")]), "iteration.budget.positive", "phases[0].iteration.iteration_budget.max_tool_calls"),
        bad("iteration.replans-negative", "max_replans_after_exhaustion is a count", &[S_ITER], &["Boundary", "Interpretation"], iterating(&[("max_total_runner_invocations: 4", "max_total_runner_invocations: 4\n      max_replans_after_exhaustion: -1")]), "iteration.count.range", "phases[0].iteration.max_replans_after_exhaustion"),
        bad("iteration.strategy-unknown", "strategy is targeted_remediation or full_rerun", &[S_ITER], &["Enum"], iterating(&[("strategy: targeted_remediation", "strategy: random_restart")]), "iteration.strategy.value", "phases[0].iteration.strategy"),
        bad("iteration.no-blocking-gate", "a loop whose only deterministic gate is non-blocking has no deterministic blocking gate", &[S_ITER, S_VALIDATION], &["IterationMvp"], iterating(&[("          blocking: true\n", "          blocking: false\n")]), "iteration.gates.deterministic_blocking", "phases[0].iteration.gates"),
        bad("iteration.only-verifier-gate", "an advisory verifier_field gate does not satisfy the deterministic blocking requirement", &[S_ITER], &["IterationMvp"], iterating(&[("        - id: no-placeholders\n          type: artifact_regex\n          blocking: true\n          target: deliverables\n          pattern: \"\\\\[TBD\\\\]\"\n          expect_match: false\n", "        - id: confidence\n          type: verifier_field\n          field: confidence\n          operator: eq\n          value: high\n")]), "iteration.gates.deterministic_blocking", "phases[0].iteration.gates"),
        bad("iteration.verifier-field-blocking", "verifier_field gates are advisory-only and cannot be blocking", &[S_ITER], &["IterationMvp"], with_gates(&[], "        - id: confidence\n          type: verifier_field\n          blocking: true\n          field: confidence\n          operator: eq\n          value: high\n"), "iteration.gate.verifier_field_blocking", "phases[0].iteration.gates[1].blocking"),
        bad("iteration.score-gate-without-stop", "a score-like gate requires stop_on_no_improvement_attempts > 0", &[S_ITER], &["IterationMvp"], with_gates(&[("      stop_on_no_improvement_attempts: 1\n", "")], "        - id: score\n          type: tool_metric\n          tool: humanize_writing\n          metric_path: report.score\n          operator: gte\n          value: 80\n"), "iteration.gate.score_requires_stop", "phases[0].iteration.stop_on_no_improvement_attempts"),
        bad("iteration.score-gate-stop-0", "stop_on_no_improvement_attempts 0 is not > 0", &[S_ITER], &["IterationMvp", "Boundary"], with_gates(&[("stop_on_no_improvement_attempts: 1", "stop_on_no_improvement_attempts: 0")], "        - id: score\n          type: tool_metric\n          tool: humanize_writing\n          metric_path: report.score\n          operator: gte\n          value: 80\n"), "iteration.gate.score_requires_stop", "phases[0].iteration.stop_on_no_improvement_attempts"),
        bad("iteration.target-unknown", "artifact_regex.target is auto, deliverables, changed_files, summary or output", &[S_ITER], &["IterationMvp", "Enum"], iterating(&[("target: deliverables", "target: workspace")]), "iteration.gate.target.value", "phases[0].iteration.gates[0].target"),
        bad("iteration.gate-type-unknown", "gate type is one of the four documented types", &[S_ITER], &["Enum"], iterating(&[("type: artifact_regex", "type: llm_judge")]), "iteration.gate.type.value", "phases[0].iteration.gates[0].type"),
        bad("iteration.gate-type-missing", "a gate needs a type", &[S_ITER], &["Enum"], iterating(&[("          type: artifact_regex\n", "")]), "iteration.gate.type.value", "phases[0].iteration.gates[0].type"),
        bad("iteration.operator-unknown", "operators are the five the guide's loader evaluates (gte, lte, eq, contains, not_contains)", &[S_ITER], &["Enum", "Interpretation"], with_gates(&[], "        - id: score\n          type: tool_metric\n          tool: t\n          metric_path: m\n          operator: about\n          value: 1\n"), "iteration.gate.operator.value", "phases[0].iteration.gates[1].operator"),
        bad("iteration.operator-gt-not-evaluated", "gt is not an operator the guide's loader evaluates (a blocking gt gate is unevaluable there): write gte with the next value", &[S_ITER], &["LoaderCheck", "Enum"], with_gates(&[], "        - id: score\n          type: tool_metric\n          blocking: true\n          tool: humanize_writing\n          metric_path: report.score\n          operator: gt\n          value: 79\n"), "iteration.gate.operator.value", "phases[0].iteration.gates[1].operator"),
        bad("iteration.operator-lt-not-evaluated", "lt is not an operator the guide's loader evaluates: write lte", &[S_ITER], &["LoaderCheck", "Enum"], with_gates(&[], "        - id: diff\n          type: tool_metric\n          blocking: true\n          tool: ck_diff_stats\n          metric_path: diff.changed_lines\n          operator: lt\n          value: 5\n"), "iteration.gate.operator.value", "phases[0].iteration.gates[1].operator"),
        bad("iteration.operator-ne-not-evaluated", "ne (or neq) is not an operator the guide's loader evaluates; a command_exit gate's ne would be read as eq there", &[S_ITER], &["LoaderCheck", "Enum"], with_gates(&[], "        - id: tests\n          type: command_exit\n          blocking: true\n          command: [pytest]\n          operator: ne\n          value: 1\n"), "iteration.gate.operator.value", "phases[0].iteration.gates[1].operator"),
        bad("iteration.regex-pattern-empty", "an empty artifact_regex pattern matches every text (a gate that always passes or always fails); the guide's loader reports it as missing", &[S_ITER], &["LoaderCheck", "IterationMvp"], iterating(&[("pattern: \"\\\\[TBD\\\\]\"", "pattern: \"\"")]), "iteration.gate.field.required", "phases[0].iteration.gates[0].pattern"),
        bad("iteration.tool-metric-missing-path", "a tool_metric gate needs tool, metric_path, operator and value", &[S_ITER], &["IterationMvp"], with_gates(&[], "        - id: score\n          type: tool_metric\n          tool: humanize_writing\n          operator: gte\n          value: 80\n"), "iteration.gate.field.required", "phases[0].iteration.gates[1].metric_path"),
        bad("iteration.regex-pattern-missing", "an artifact_regex gate needs a pattern", &[S_ITER], &["IterationMvp"], iterating(&[("          pattern: \"\\\\[TBD\\\\]\"\n", "")]), "iteration.gate.field.required", "phases[0].iteration.gates[0].pattern"),
        bad("iteration.regex-pattern-invalid", "an artifact_regex pattern must compile", &[S_ITER], &["IterationMvp"], iterating(&[("pattern: \"\\\\[TBD\\\\]\"", "pattern: \"[TBD\"")]), "iteration.gate.pattern.invalid", "phases[0].iteration.gates[0].pattern"),
        bad("iteration.command-string", "command_exit takes argv tokens, not a command line", &[S_ITER, S_VALIDATION], &["ShellPolicy"], with_gates(&[], &command_gate("\"pytest -q\"")), "iteration.gate.command.argv", "phases[0].iteration.gates[1].command"),
        bad("iteration.command-empty", "an empty argv runs nothing", &[S_ITER], &["ShellPolicy"], with_gates(&[], &command_gate("[]")), "iteration.gate.command.argv", "phases[0].iteration.gates[1].command"),
        bad("iteration.command-semicolon", "a ';' inside an argv token is a shell metacharacter", &[S_ITER], &["ShellPolicy"], with_gates(&[], &command_gate("[pytest, \"tests; rm -rf .\"]")), "iteration.gate.command.metacharacter", "phases[0].iteration.gates[1].command[1]"),
        bad("iteration.command-pipe", "a '|' inside an argv token is a shell metacharacter", &[S_ITER], &["ShellPolicy"], with_gates(&[], &command_gate("[cargo, test, \"|\", tee, log]")), "iteration.gate.command.metacharacter", "phases[0].iteration.gates[1].command[2]"),
        bad("iteration.command-dollar", "'$' expansion is a shell metacharacter", &[S_ITER], &["ShellPolicy"], with_gates(&[], &command_gate("[pytest, \"$HOME/tests\"]")), "iteration.gate.command.metacharacter", "phases[0].iteration.gates[1].command[1]"),
        bad("iteration.command-backtick", "command substitution is a shell metacharacter", &[S_ITER], &["ShellPolicy"], with_gates(&[], &command_gate("[go, test, \"`id`\"]")), "iteration.gate.command.metacharacter", "phases[0].iteration.gates[1].command[2]"),
        bad("iteration.command-not-allowlisted", "bash is not an allowlisted prefix", &[S_ITER, S_VALIDATION], &["ShellPolicy"], with_gates(&[], &command_gate("[bash, run-tests.sh]")), "iteration.gate.command.allowlist", "phases[0].iteration.gates[1].command"),
        bad("iteration.command-prefix-token-boundary", "'cargo testx' does not match the prefix 'cargo test'", &[S_ITER], &["ShellPolicy"], with_gates(&[], &command_gate("[cargo, testx]")), "iteration.gate.command.allowlist", "phases[0].iteration.gates[1].command"),
        bad("iteration.command-partial-prefix", "'python -m pip' is not 'python -m pytest'", &[S_ITER], &["ShellPolicy"], with_gates(&[], &command_gate("[python, -m, pip, install, evil]")), "iteration.gate.command.allowlist", "phases[0].iteration.gates[1].command"),
        bad("iteration.command-timeout-0", "a command_exit timeout must be > 0", &[S_ITER], &["Boundary", "Interpretation"], with_gates(&[], "        - id: tests\n          type: command_exit\n          command: [npm, test]\n          timeout_seconds: 0\n"), "iteration.gate.timeout.positive", "phases[0].iteration.gates[1].timeout_seconds"),
        // Verification rules
        bad("verification.regex-invalid", "a regex rule's check must be a valid regex", &[S_VERIFY, S_VALIDATION], &["Verification"], with("verification:\n  rules:\n    - name: broken\n      check: \"[TBD\"\n      severity: error\n      type: regex\n"), "verification.rule.regex.invalid", "verification.rules[0].check"),
        bad("verification.severity-unknown", "severity is error or warning", &[S_VERIFY], &["Verification", "Enum"], with("verification:\n  rules:\n    - name: r\n      check: x\n      severity: fatal\n      type: regex\n"), "verification.rule.severity.value", "verification.rules[0].severity"),
        bad("verification.type-unknown", "rule type is regex or llm", &[S_VERIFY], &["Verification", "Enum"], with("verification:\n  rules:\n    - name: r\n      check: x\n      type: script\n"), "verification.rule.type.value", "verification.rules[0].type"),
        bad("verification.target-unknown", "rule target is output or deliverables", &[S_VERIFY], &["Verification", "Enum"], with("verification:\n  rules:\n    - name: r\n      check: x\n      type: regex\n      target: files\n"), "verification.rule.target.value", "verification.rules[0].target"),
        bad("verification.check-missing", "a rule needs its check", &[S_VERIFY], &["Verification"], with("verification:\n  rules:\n    - name: r\n      type: regex\n"), "verification.rule.field.required", "verification.rules[0].check"),
        bad("verification.policy-mode-unknown", "policy mode is llm_first or static_first", &[S_CONTRACT], &["Verification", "Enum"], with("verification:\n  policy:\n    mode: vibes_first\n"), "verification.policy.mode.value", "verification.policy.mode"),
        bad("verification.output-contract-without-passed", "the verifier output contract must include passed", &[S_MIGRATE, S_CONTRACT], &["Verification", "Migration"], with("verification:\n  policy:\n    output_contract:\n      required_fields: [outcome, reason_code]\n"), "verification.policy.output_contract.passed", "verification.policy.output_contract.required_fields"),
        // Test manifest
        bad("tests.id-missing", "a test case needs an id", &[S_TESTS], &["TestManifest"], with("tests:\n  - goal: g\n"), "tests.id.required", "tests[0].id"),
        bad("tests.id-duplicate", "test ids are unique per package", &[S_TESTS], &["TestManifest"], with("tests:\n  - id: smoke\n    goal: a\n  - id: smoke\n    goal: b\n"), "tests.id.duplicate", "tests[1].id"),
        bad("tests.mode-unknown", "mode is deterministic or live", &[S_TESTS], &["TestManifest", "Enum"], with("tests:\n  - id: smoke\n    mode: replay\n    goal: g\n"), "tests.mode.value", "tests[0].mode"),
        bad("tests.goal-missing", "goal is required", &[S_TESTS], &["TestManifest"], with("tests:\n  - id: smoke\n    mode: deterministic\n"), "tests.goal.required", "tests[0].goal"),
        bad("tests.goal-empty", "an empty goal is no goal", &[S_TESTS], &["TestManifest", "Interpretation"], with("tests:\n  - id: smoke\n    goal: \"  \"\n"), "tests.goal.required", "tests[0].goal"),
        bad("tests.timeout-0", "timeout_seconds must be greater than zero", &[S_TESTS], &["TestManifest", "Boundary"], with("tests:\n  - id: smoke\n    goal: g\n    timeout_seconds: 0\n"), "tests.timeout_seconds.positive", "tests[0].timeout_seconds"),
        bad("tests.timeout-negative", "timeout_seconds must be greater than zero", &[S_TESTS], &["TestManifest", "Boundary"], with("tests:\n  - id: smoke\n    goal: g\n    timeout_seconds: -5\n"), "tests.timeout_seconds.positive", "tests[0].timeout_seconds"),
        bad("tests.id-path-traversal", "a test id names files, so `../escape` would climb out of scripts/", &[S_TESTS], &["TestManifest", "PathPolicy", "Interpretation"], with("tests:\n  - id: ../escape\n    goal: g\n"), "tests.id.format", "tests[0].id"),
        bad("tests.id-slash", "a test id is one file-name stem: no `/`", &[S_TESTS], &["TestManifest", "PathPolicy", "Interpretation"], with("tests:\n  - id: smoke/one\n    goal: g\n"), "tests.id.format", "tests[0].id"),
        bad("tests.id-backslash", "a test id is one file-name stem: no `\\`", &[S_TESTS], &["TestManifest", "PathPolicy", "Interpretation"], with("tests:\n  - id: \"smoke\\\\one\"\n    goal: g\n"), "tests.id.format", "tests[0].id"),
        bad("tests.id-leading-dot", "a test id does not start with `.` (hidden file)", &[S_TESTS], &["TestManifest", "PathPolicy", "Interpretation"], with("tests:\n  - id: .smoke\n    goal: g\n"), "tests.id.format", "tests[0].id"),
        bad("tests.id-double-dot", "a test id contains no `..`", &[S_TESTS], &["TestManifest", "PathPolicy", "Interpretation"], with("tests:\n  - id: a..b\n    goal: g\n"), "tests.id.format", "tests[0].id"),
        bad("tests.id-uppercase", "test ids are lowercase (file names must not differ only by case)", &[S_TESTS], &["TestManifest", "PathPolicy", "Interpretation"], with("tests:\n  - id: Smoke\n    goal: g\n"), "tests.id.format", "tests[0].id"),
        bad("tests.id-space", "a test id has no spaces", &[S_TESTS], &["TestManifest", "PathPolicy", "Interpretation"], with("tests:\n  - id: \"smoke test\"\n    goal: g\n"), "tests.id.format", "tests[0].id"),
        bad("tests.forbidden-pattern-invalid", "forbidden_patterns are regexes", &[S_TESTS], &["TestManifest", "Interpretation"], with("tests:\n  - id: smoke\n    goal: g\n    acceptance:\n      verification:\n        forbidden_patterns: [\"(unclosed\"]\n"), "tests.acceptance.pattern.invalid", "tests[0].acceptance.verification.forbidden_patterns[0]"),
        bad("tests.forbidden-pattern-empty", "an empty forbidden pattern matches every verification output: the case could never pass", &[S_TESTS], &["TestManifest", "Interpretation"], with("tests:\n  - id: smoke\n    goal: g\n    acceptance:\n      verification:\n        forbidden_patterns: [\"\"]\n"), "tests.acceptance.pattern.invalid", "tests[0].acceptance.verification.forbidden_patterns[0]"),
        // Memory and planner examples
        bad("planner.model-tier-4", "planner subtask model tiers are 1..3 like phases", &[S_PLANNER, S_PHASES], &["Extras", "Boundary"], with("planner_examples:\n  - goal: g\n    subtasks:\n      - id: gather\n        model_tier: 4\n"), "planner_examples.model_tier.range", "planner_examples[0].subtasks[0].model_tier"),
        // Review fixes
        bad("phases.id-empty", "an empty id is no id", &[S_PHASES], &["PhaseFields", "Interpretation"], edit("  - id: report\n", "  - id: \"\"\n"), "phases.field.required", "phases[1].id"),
        bad("phases.description-blank", "a whitespace-only description is no description", &[S_PHASES], &["PhaseFields", "Interpretation"], edit("    description: Gather and normalize sources.\n", "    description: \"   \"\n"), "phases.field.required", "phases[0].description"),
        bad("metadata.name-null", "`name:` without a value breaks the name's required rule", &[S_META], &["Metadata"], edit("name: vector-process", "name:"), "metadata.name.required", "name"),
        bad("phases.id-null", "`id:` without a value breaks the phase's required-field rule", &[S_PHASES], &["PhaseFields"], edit("  - id: report\n", "  - id:\n"), "phases.field.required", "phases[1].id"),
        bad("phases.depends-on-null", "`depends_on:` without a value breaks the phase's required-field rule (read as [] the phase would stop waiting); `depends_on: []` is a root phase", &[S_PHASES], &["PhaseFields", "Interpretation"], edit("    depends_on: [gather]\n", "    depends_on:\n"), "phases.field.required", "phases[1].depends_on"),
        bad("tests.goal-null", "`goal:` without a value is a missing goal", &[S_TESTS], &["TestManifest"], with("tests:\n  - id: smoke\n    goal:\n"), "tests.goal.required", "tests[0].goal"),
        bad("iteration.command-exit-value-string", "a command_exit value is an integer exit code; \"0\" is not coerced", &[S_ITER], &["IterationMvp", "Interpretation"], with_gates(&[], "        - id: tests\n          type: command_exit\n          command: [pytest]\n          value: \"0\"\n"), "iteration.gate.value.type", "phases[0].iteration.gates[1].value"),
        bad("iteration.command-exit-value-float", "1.5 is not an exit code", &[S_ITER], &["IterationMvp", "Interpretation"], with_gates(&[], "        - id: tests\n          type: command_exit\n          command: [pytest]\n          value: 1.5\n"), "iteration.gate.value.type", "phases[0].iteration.gates[1].value"),
        bad("iteration.tool-metric-ordering-needs-number", "gte compares numbers; \"80\" is a string", &[S_ITER], &["IterationMvp", "Interpretation"], with_gates(&[], "        - id: score\n          type: tool_metric\n          tool: t\n          metric_path: m\n          operator: gte\n          value: \"80\"\n"), "iteration.gate.value.type", "phases[0].iteration.gates[1].value"),
        bad("iteration.command-line-in-one-token", "[\"pytest -q\"] is a shell command line in one argv token", &[S_ITER, S_VALIDATION], &["ShellPolicy", "Interpretation"], with_gates(&[], &command_gate("[\"pytest -q\"]")), "iteration.gate.command.argv", "phases[0].iteration.gates[1].command[0]"),
        bad("verification.regex-unclosed-group", "a truly malformed pattern stays an error", &[S_VERIFY], &["Verification"], with("verification:\n  rules:\n    - name: broken\n      check: \"(\"\n      type: regex\n"), "verification.rule.regex.invalid", "verification.rules[0].check"),
        bad("verification.regex-too-large", "a pattern past the compiled-size limit is its own explicit error", &[S_VERIFY], &["Verification", "Interpretation"], with("verification:\n  rules:\n    - name: huge\n      check: \"(?:\\\\w{50}){1000}\"\n      type: regex\n"), "verification.rule.regex.too_large", "verification.rules[0].check"),
        bad("dependencies.pep-508-malformed-marker", "a marker must be comparisons of marker variables and strings", &[S_DEPS], &["SupplyChain", "Interpretation"], with("dependencies:\n  - \"requests>=2; python_version >=\"\n"), "dependencies.invalid", "dependencies[0]"),
        bad("dependencies.vcs-without-egg", "a VCS URL must name its distribution with #egg=", &[S_DEPS], &["SupplyChain", "Interpretation"], with("dependencies:\n  - git+https://github.com/org/repo.git@v1\n"), "dependencies.invalid", "dependencies[0]"),
        bad("phases.deliverable-home", "~/report.md is a home-directory path", &[S_PHASES, S_OUTPUT], &["PathPolicy", "Interpretation"], edit("report.md — final report", "~/report.md — final report"), "phases.deliverables.path", "phases[1].deliverables[0]"),
        bad("yaml.integer-out-of-range", "an integer beyond 64 bits is out of range", &[S_PHASES], &["YamlStructure"], edit("    model_tier: 2\n", "    model_tier: 99999999999999999999999\n"), "yaml.type", "phases[0].model_tier"),
        // Collect-all: a structural error is reported alone, without the findings its repair would cause
        bad("yaml.max-attempts-word-no-follow-on", "a wrong-typed max_attempts is a type error, not also a missing required field", &[S_ITER], &["YamlStructure", "FollowOn"], iterating(&[("max_attempts: 3", "max_attempts: three")]), "yaml.type", "phases[0].iteration.max_attempts"),
        bad("yaml.enabled-string-no-follow-on", "a wrong-typed enabled is a type error, not also an iteration block that is off", &[S_ITER], &["YamlStructure", "FollowOn", "Interpretation"], iterating(&[("enabled: true", "enabled: \"on\"")]), "yaml.type", "phases[0].iteration.enabled"),
        bad("yaml.provider-list-no-follow-on", "a wrong-typed provider is a type error, not also an entry without a selector", &[S_AUTH], &["YamlStructure", "FollowOn"], with("auth:\n  required:\n    - provider: [notion]\n      source: api\n"), "yaml.type", "auth.required[0].provider"),
        bad("iteration.gate-type-unknown-no-follow-on", "a gate of unknown type gets no rule about its kind (key fields, score-like, blocking)", &[S_ITER], &["Enum", "FollowOn"], with_gates(&[("stop_on_no_improvement_attempts: 1", "stop_on_no_improvement_attempts: 0")], "        - id: score\n          type: toolmetric\n          blocking: true\n          operator: gte\n          value: 80\n"), "iteration.gate.type.value", "phases[0].iteration.gates[1].type"),
        bad("verification.type-unknown-no-follow-on", "a rule of unknown type does not have its check compiled as a regex", &[S_VERIFY], &["Verification", "Enum", "FollowOn"], with("verification:\n  rules:\n    - name: r\n      check: \"(is the claim sourced?\"\n      type: regexp\n"), "verification.rule.type.value", "verification.rules[0].type"),
        bad("auth.source-unknown-no-follow-on", "an entry of unknown source is not also told that mcp_server needs source: mcp", &[S_AUTH], &["Auth", "Enum", "FollowOn"], with("auth:\n  required:\n    - provider: notion\n      source: ftp\n      mcp_server: notion\n"), "auth.source.value", "auth.required[0].source"),
        bad("yaml.non-scalar-key", "a mapping key must be a scalar", &[S_REFERENCE], &["YamlStructure"], with("? [a, b]\n: c\n"), "yaml.syntax", ""),
        // Checks the guide's loader makes (issue 17, class 2)
        bad("verification.applies-to-unknown-phase", "a rule scoped to a phase that does not exist", &[S_VERIFY], &["LoaderCheck", "Verification"], with("verification:\n  rules:\n    - name: sourced\n      check: Every claim cites a source.\n      type: llm\n      applies_to_phases: [gather, reveiw]\n"), "verification.rule.applies_to_phases.unknown", "verification.rules[0].applies_to_phases[1]"),
        bad("verification.applies-to-unknown-phase-string", "applies_to_phases written as one string names one phase", &[S_VERIFY], &["LoaderCheck", "Verification"], with("verification:\n  rules:\n    - name: sourced\n      check: Every claim cites a source.\n      applies_to_phases: summary\n"), "verification.rule.applies_to_phases.unknown", "verification.rules[0].applies_to_phases"),
        bad("iteration.gate-id-duplicate", "gate ids are unique within an iteration block", &[S_ITER], &["LoaderCheck", "IterationMvp"], with_gates(&[], "        - id: no-placeholders\n          type: artifact_regex\n          blocking: true\n          target: output\n          pattern: TODO\n          expect_match: false\n"), "iteration.gate.id.duplicate", "phases[0].iteration.gates[1].id"),
        bad("iteration.target-deliverables-without-deliverables", "target: deliverables on a phase without deliverables has nothing to read", &[S_ITER], &["LoaderCheck", "IterationMvp"], iterating(&[]).replace("    deliverables:\n      - \"notes.md — source notes\"\n", ""), "iteration.gate.target.no_deliverables", "phases[0].iteration.gates[0].target"),
        bad("iteration.stop-equals-attempts", "stop_on_no_improvement_attempts must be < max_attempts", &[S_ITER], &["LoaderCheck", "IterationMvp", "Boundary"], iterating(&[("stop_on_no_improvement_attempts: 1", "stop_on_no_improvement_attempts: 3")]), "iteration.stop_on_no_improvement.range", "phases[0].iteration.stop_on_no_improvement_attempts"),
        bad("iteration.stop-above-attempts", "stop_on_no_improvement_attempts above max_attempts", &[S_ITER], &["LoaderCheck", "IterationMvp", "Boundary"], iterating(&[("stop_on_no_improvement_attempts: 1", "stop_on_no_improvement_attempts: 5")]), "iteration.stop_on_no_improvement.range", "phases[0].iteration.stop_on_no_improvement_attempts"),
        bad("verification.enforcement-soft", "enforcement is hard or advisory; soft is not allowed", &[S_VERIFY], &["LoaderCheck", "Verification", "Enum"], with("verification:\n  rules:\n    - name: r\n      check: Is it sourced?\n      type: llm\n      enforcement: soft\n"), "verification.rule.enforcement.value", "verification.rules[0].enforcement"),
        bad("verification.failure-class-unknown", "failure_class is hard_integrity, recoverable_placeholder or semantic", &[S_VERIFY], &["LoaderCheck", "Verification", "Enum"], with("verification:\n  rules:\n    - {name: r, check: TBD, type: regex, failure_class: cosmetic}\n"), "verification.rule.failure_class.value", "verification.rules[0].failure_class"),
        bad("verification.remediation-mode-unknown", "remediation_mode is one of the loader's five modes", &[S_VERIFY], &["LoaderCheck", "Verification", "Enum"], with("verification:\n  rules:\n    - {name: r, check: TBD, type: regex, remediation_mode: rewrite_everything}\n"), "verification.rule.remediation_mode.value", "verification.rules[0].remediation_mode"),
        bad("verification.scope-unknown", "scope is phase or global", &[S_VERIFY], &["LoaderCheck", "Verification", "Enum"], with("verification:\n  rules:\n    - {name: r, check: TBD, type: regex, scope: run}\n"), "verification.rule.scope.value", "verification.rules[0].scope"),
        bad("verification.min-count-negative", "min_count is >= 0", &[S_VERIFY], &["LoaderCheck", "Verification", "Boundary"], with("verification:\n  rules:\n    - {name: r, check: x, type: regex, min_count: -1}\n"), "verification.rule.min_count.range", "verification.rules[0].min_count"),
        bad("contract.semantic-helper-unregistered", "a semantic check naming an unregistered verification helper", &[S_CONTRACT], &["LoaderCheck", "Verification"], with("verification:\n  policy:\n    semantic_checks:\n      - {id: tests, helper: run_tests, capability: command_execution}\n"), "verification.policy.semantic_checks.helper", "verification.policy.semantic_checks[0].helper"),
        bad("contract.semantic-helper-capability", "a helper asked for a capability it does not have", &[S_CONTRACT], &["LoaderCheck", "Verification"], with("verification:\n  policy:\n    semantic_checks:\n      - {id: ui, helper: run_test_suite, capability: browser_runtime}\n"), "verification.policy.semantic_checks.capability", "verification.policy.semantic_checks[0].capability"),
        bad("contract.critical-path-behavior-unknown", "critical_path_behavior is block, confirm_or_prune_then_queue or queue_follow_up", &[S_CONTRACT], &["LoaderCheck", "Enum"], with("verification:\n  remediation:\n    critical_path_behavior: ignore\n"), "verification.remediation.critical_path_behavior.value", "verification.remediation.critical_path_behavior"),
        bad("auth.env-key-hyphen", "required_env_keys are environment variable names", &[S_AUTH], &["LoaderCheck", "Auth"], with("auth:\n  required:\n    - provider: notion\n      source: api\n      required_env_keys: [NOTION-TOKEN]\n"), "auth.required_env_keys.format", "auth.required[0].required_env_keys[0]"),
        bad("auth.env-key-leading-digit", "an environment variable name does not start with a digit", &[S_AUTH], &["LoaderCheck", "Auth"], with("auth:\n  required:\n    - provider: notion\n      source: api\n      required_env_keys: [OK_KEY, 2FA_SECRET]\n"), "auth.required_env_keys.format", "auth.required[0].required_env_keys[1]"),
        bad("risk.inferred-health-contradictions", "the tag health infers high risk (one of the loader's 11 tokens), which rejects contradicted claims", &[S_RISK, S_VALIDITY], &["LoaderCheck", "RiskFloor"], with("validity_contract:\n  max_contradicted_count: 1\n").replace("risk_level: medium\n", "tags: [health]\n"), "validity.high_risk.weakened", "validity_contract.max_contradicted_count"),
        bad("forms.quoted-yes-is-a-string", "a quoted \"yes\" is a string in YAML 1.1 too, not a boolean", &[S_REFERENCE], &["LoaderForm", "YamlStructure"], with("validity_contract:\n  enabled: \"yes\"\n"), "yaml.type", "validity_contract.enabled"),
        bad("forms.remediation-instructions-list", "remediation_instructions is a text or a mapping, not a list", &[S_MIGRATE], &["LoaderForm", "YamlStructure"], with("prompt_contracts:\n  remediation_instructions: [fix it]\n"), "yaml.type", "prompt_contracts.remediation_instructions"),
        bad("forms.risk-level-unknown-alias", "an alias the loader does not map stays unknown", &[S_RISK], &["LoaderForm", "RiskFloor"], edit("risk_level: medium", "risk_level: moderate"), "risk_level.value", "risk_level"),
        bad("forms.intermediate-root-still-escapes", "normalizing never excuses a .. segment", &[S_OUTPUT], &["LoaderForm", "PathPolicy"], with("output_coordination:\n  intermediate_root: ./a/../../b\n"), "output_coordination.intermediate_root.path", "output_coordination.intermediate_root"),
        // Messages (issue 17, class 5)
        bad("yaml.integer-400-digits", "a 400-digit integer is an integer out of range, not a syntax error", &[S_PHASES, S_REFERENCE], &["YamlStructure"], edit("    model_tier: 2\n", &format!("    model_tier: {}\n", "9".repeat(400))), "yaml.type", "phases[0].model_tier"),
        bad("validity.nan-ratio", ".nan is not a ratio in 0..1 (the field's rule, not a syntax error)", &[S_VALIDITY], &["Boundary", "YamlStructure"], with("validity_contract:\n  min_supported_ratio: .nan\n"), "validity.ratio.range", "validity_contract.min_supported_ratio"),
        bad("validity.infinite-ratio", ".inf is not a ratio in 0..1", &[S_VALIDITY], &["Boundary", "YamlStructure"], with("validity_contract:\n  max_unverified_ratio: .inf\n"), "validity.ratio.range", "validity_contract.max_unverified_ratio"),
        bad("yaml.nesting-too-deep", "a document nested more than 64 levels deep is refused by the parser", &[S_REFERENCE], &["YamlStructure"], with(&format!("favourite: {}{}\n", "[".repeat(70), "]".repeat(70))), "yaml.syntax", ""),
    ]
}

/// The `process-yaml` file.
pub fn build() -> FileBuilder {
    FileBuilder::new(
        "process-yaml",
        "process.yaml validation as the LOOM process package guide says: every valid case lists the warnings it must produce ([{rule, path}] sorted by path, then rule); every invalid case has exactly one error, named by rule id and by the path of the offending node.",
    )
    .note("Baseline", "Well-formed definitions that must load without errors.", "over-strict loader", "valid packages are refused")
    .note("GuideExample", "YAML taken from the guide's own examples.", "over-strict loader", "the guide's examples do not load")
    .note("YamlStructure", "Syntax, duplicate keys and wrong YAML types.", "lenient parser", "malformed definitions are half-read")
    .note("Metadata", "The name rule and required metadata.", "missing metadata check", "unusable install names and --process selectors")
    .note("Migration", "schema_version 1/2 and the v2 migration steps.", "version confusion", "legacy definitions run without a migration notice, or unknown versions run")
    .note("RiskFloor", "Risk levels, floors and the no-weakening rule for high/critical risk.", "policy drift", "high-stakes processes run with loosened claim checks")
    .note("SupplyChain", "Dependency specifiers and pinning.", "supply-chain review gap", "unpinned or malformed dependencies install unnoticed")
    .note("ToolPolicy", "tools.required / tools.excluded consistency.", "contradictory policy", "a tool is both mandatory and forbidden")
    .note("Auth", "auth.required entries.", "auth preflight gap", "runs fail mid-way instead of at preflight")
    .note("Enum", "Values outside a documented enumeration.", "lenient enum parsing", "typos silently select a default behaviour")
    .note("PathPolicy", "Workspace-relative path rules for intermediate roots and deliverables.", "path traversal", "artifacts are written outside the workspace")
    .note("ReservedId", "The reserved <phase>__finalize_output ids.", "id collision", "a declared phase collides with the fan-in finalizer")
    .note("PhaseFields", "Required phase fields.", "missing field check", "phases without ids, descriptions or dependency lists load")
    .note("Dag", "Phase dependency DAG checks.", "graph validation gap", "cycles deadlock the scheduler or unknown dependencies are skipped")
    .note("Deliverables", "Deliverable filename uniqueness.", "ownership conflict", "two phases write the same canonical file")
    .note("Boundary", "Boundary values on both sides of a documented range.", "off-by-one", "limits are enforced one step off")
    .note("IterationMvp", "Phase iteration loops and their loader-enforced MVP constraints.", "unbounded loop", "loops without caps, budgets or deterministic exit criteria")
    .note("ShellPolicy", "command_exit argv tokens and the allowlisted prefixes.", "command injection", "a gate runs arbitrary shell commands")
    .note("Verification", "Verification rules and the verifier output contract.", "broken verification", "rules that cannot run or verifier output that cannot be judged")
    .note("TestManifest", "The embedded tests: manifest.", "manifest validation gap", "process tests that can never run or never pass")
    .note("Extras", "Memory types and planner examples.", "missing field check", "half-specified memory or planner examples")
    .note("FollowOn", "A structural error (wrong type, value outside an enum) whose repair could cause further findings; only the error itself is reported.", "cascading diagnostics", "one typo is reported as several errors, or a made-up default is judged as if the author wrote it")
    .note("LoaderForm", "Forms packages written for the guide's loader use (YAML 1.1 booleans, lower-cased and aliased enums, normalizable paths, remediation mappings, rule scoping keys): accepted, with a warning naming the portable form where the form is not portable; vectors/kinds/process-yaml.md lists each reading.", "over-strict loader", "packages in the wild are refused")
    .note("LoaderCheck", "Checks the guide's loader makes that the guide text only implies (rule scoping, gate ids, helper registry, env key names, the loader's high-risk tokens).", "lenient loader", "a typo silently disables a rule, gate or preflight")
    .note("Interpretation", "Pins a reading where the guide is silent or only advisory; the test comment and vectors/kinds/process-yaml.md give the reasoning.", "different reading", "an implementation with another reading fails these; check the documented interpretation before calling it a bug")
    .group("process-yaml.validate", Value::Null)
    .tests(valid_cases())
    .tests(invalid_cases())
}

/// The schema of the `process-yaml` file.
pub fn schema() -> AreaSchema {
    AreaSchema {
        kinds: vec!["process-yaml.validate"],
        inputs: vec![(
            "yaml",
            json!({"type": "string", "description": "The process.yaml text."}),
        )],
        required: vec!["yaml"],
        expected: json!({
            "type": "array",
            "description": "The warnings, sorted by path then rule.",
            "items": {
                "type": "object",
                "additionalProperties": false,
                "required": ["rule", "path"],
                "properties": {"rule": {"type": "string"}, "path": {"type": "string"}}
            }
        }),
        errors: loom_process::package::rules::ALL
            .iter()
            .filter(|r| r.level == loom_process::package::rules::Level::Error)
            .map(|r| r.id)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each invalid document has exactly one error in the reference (so "the" error is well
    /// defined for any implementation), and each valid one has none.
    #[test]
    fn every_invalid_case_has_exactly_one_error() {
        let file: Value = serde_json::from_str(&build().render()).unwrap();
        for test in file["groups"][0]["tests"].as_array().unwrap() {
            let report = loom_process::package::validate_str(test["yaml"].as_str().unwrap());
            let errors: Vec<_> = report.errors().map(|d| d.render()).collect();
            let want = usize::from(test["result"] == "invalid");
            assert_eq!(errors.len(), want, "{}: {errors:#?}", test["id"]);
        }
    }
}
