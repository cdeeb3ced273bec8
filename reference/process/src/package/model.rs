//! The typed model of a process definition (`process.yaml`), field for field as the package
//! guide documents it (guide "process.yaml reference" and the sections it links).
//!
//! Deserializing gives the *shape*; the rules the guide states about values (ranges, DAG,
//! allowlists, risk floors) live in the validator (`package::validate`), so a [`Process`]
//! obtained through [`crate::package::load_str`] or [`crate::package::load_dir`] has passed
//! every rule. Optional fields the guide gives a default for expose it through a method
//! (`Phase::model_tier()` …) so the default is written in one place.
//!
//! Where the guide names a block but does not spell out all of its keys
//! (`verification.policy`, `verification.remediation`, `evidence`, `prompt_contracts`), the
//! documented keys are typed and other keys are accepted without a warning (lenient reading;
//! see `rules::LENIENT_BLOCKS`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A whole `process.yaml` (guide "process.yaml reference").
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Process {
    /// Kebab-case name, `^[a-z0-9][a-z0-9-]*$` (guide "Metadata").
    pub name: String,
    /// Version string, e.g. `"1.0"` (guide "Metadata").
    #[serde(default)]
    pub version: Option<String>,
    /// Process contract version: 1 (legacy) or 2 (guide "Process contract v2"). Absent means
    /// a legacy v1 definition (guide "Migrating v1 to v2").
    #[serde(default)]
    pub schema_version: Option<i64>,
    /// What the process does (guide "Metadata").
    #[serde(default)]
    pub description: Option<String>,
    /// Author (guide "Metadata").
    #[serde(default)]
    pub author: Option<String>,
    /// Discovery tags; also used to infer high-risk intent (guide "Risk level and rigor floors").
    #[serde(default)]
    pub tags: Vec<String>,
    /// Second-person persona text (guide "Persona").
    #[serde(default)]
    pub persona: Option<String>,
    /// Free-text tool instructions (guide "Tool guidance").
    #[serde(default)]
    pub tool_guidance: Option<String>,
    /// Required/excluded tools (guide "Tool guidance").
    #[serde(default)]
    pub tools: Option<Tools>,
    /// Auth resources resolved before execution (guide "Auth requirements").
    #[serde(default)]
    pub auth: Option<Auth>,
    /// How binding the phase order is (guide "Phase mode"); see [`Process::phase_mode`].
    #[serde(default)]
    pub phase_mode: Option<PhaseMode>,
    /// Risk level selecting the validity floor (guide "Risk level and rigor floors").
    #[serde(default)]
    pub risk_level: Option<RiskLevel>,
    /// Canonical deliverable ownership (guide "Output coordination").
    #[serde(default)]
    pub output_coordination: Option<OutputCoordination>,
    /// Python dependencies installed by `loom install` (guide "Dependencies").
    #[serde(default)]
    pub dependencies: Vec<String>,
    /// Process-level validity contract (guide "Validity contract (claim and evidence rigor)").
    #[serde(default)]
    pub validity_contract: Option<ValidityContract>,
    /// The phase DAG (guide "Phases").
    #[serde(default)]
    pub phases: Vec<Phase>,
    /// Verification rules, policy and remediation (guide "Verification rules").
    #[serde(default)]
    pub verification: Option<Verification>,
    /// Evidence record schema and extraction (guide "Process contract v2").
    #[serde(default)]
    pub evidence: Option<Evidence>,
    /// Process-specific prompt instructions (guide "Process contract v2").
    #[serde(default)]
    pub prompt_contracts: Option<PromptContracts>,
    /// Memory types to extract (guide "Memory types").
    #[serde(default)]
    pub memory: Option<Memory>,
    /// What to look for in the workspace before planning (guide "Workspace analysis").
    #[serde(default)]
    pub workspace_analysis: Option<WorkspaceAnalysis>,
    /// Few-shot planner examples (guide "Planner examples").
    #[serde(default)]
    pub planner_examples: Vec<PlannerExample>,
    /// When and how to re-plan (guide "Replanning").
    #[serde(default)]
    pub replanning: Option<Replanning>,
    /// Embedded test contracts (guide "Process test manifest").
    #[serde(default)]
    pub tests: Vec<TestCase>,
}

impl Process {
    /// The effective phase mode. The guide gives no default; `guided` is the mode it
    /// recommends "for most analytical workflows" (guide "Choosing a phase mode").
    pub fn phase_mode(&self) -> PhaseMode {
        self.phase_mode.unwrap_or(PhaseMode::Guided)
    }

    /// The contract version; absent means legacy v1 (guide "Migrating v1 to v2").
    pub fn schema_version(&self) -> i64 {
        self.schema_version.unwrap_or(1)
    }

    /// The phase with this id, if declared.
    pub fn phase(&self, id: &str) -> Option<&Phase> {
        self.phases.iter().find(|p| p.id == id)
    }
}

/// `tools:` (guide "Tool guidance").
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct Tools {
    /// Tool guidance written inside `tools:` (the guide's loader reads it when the top-level
    /// `tool_guidance` is absent; its built-in packages use it).
    #[serde(default)]
    pub guidance: Option<String>,
    /// Tools that must be available; Loom fails fast if one is missing.
    #[serde(default)]
    pub required: Vec<String>,
    /// Tools the model should not use; must not overlap `required`.
    #[serde(default)]
    pub excluded: Vec<String>,
}

/// `auth:` (guide "Auth requirements").
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct Auth {
    /// Required auth resources for preflight.
    #[serde(default)]
    pub required: Vec<AuthRequirement>,
}

/// One `auth.required[]` entry (guide "Auth requirements").
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct AuthRequirement {
    /// Provider key; optional when `resource_ref` or `resource_id` is supplied.
    #[serde(default)]
    pub provider: Option<String>,
    /// `api` or `mcp` (the guide lists it without "optional").
    pub source: AuthSource,
    /// Stable selector: `mcp:<alias>`, `api_integration:<name>` or `tool:<name>`.
    #[serde(default)]
    pub resource_ref: Option<String>,
    /// Workspace-specific immutable resource id.
    #[serde(default)]
    pub resource_id: Option<String>,
    /// Allowed credential modes.
    #[serde(default)]
    pub modes: Vec<AuthMode>,
    /// OAuth scopes the credential must carry (the guide's loader reads them; the guide's
    /// field list does not show them).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Env keys that must be present in the profile env.
    #[serde(default)]
    pub required_env_keys: Vec<String>,
    /// MCP alias constraint; only valid when `source: mcp`.
    #[serde(default)]
    pub mcp_server: Option<String>,
}

/// `auth.required[].source` (guide "Auth requirements").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthSource {
    /// An HTTP API integration.
    Api,
    /// An MCP server.
    Mcp,
}

/// `auth.required[].modes[]` (guide "Auth requirements").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMode {
    /// A static API key.
    ApiKey,
    /// OAuth 2 with PKCE.
    Oauth2Pkce,
    /// OAuth 2 device flow.
    Oauth2Device,
    /// Credentials passed through the environment.
    EnvPassthrough,
    /// Credentials from a CLI's own login.
    CliPassthrough,
}

/// `phase_mode` (guide "Phase mode").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseMode {
    /// Phases execute in dependency order; no skipping.
    Strict,
    /// Phases are recommended but can be reordered or skipped.
    Guided,
    /// Phases are hints; the planner is free to restructure.
    Suggestive,
}

/// `risk_level` (guide "Risk level and rigor floors").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RiskLevel {
    /// Low risk: 0.65 / 0.35 floor, temporal gate off.
    Low,
    /// Medium risk: same floor as low.
    Medium,
    /// High risk: 0.8 / 0.2 floor, temporal gate on; core constraints cannot be weakened.
    High,
    /// Critical risk: same floor as high.
    Critical,
}

impl RiskLevel {
    /// True for `high` and `critical`, the levels with the strict floor profile.
    pub fn is_high(self) -> bool {
        matches!(self, RiskLevel::High | RiskLevel::Critical)
    }

    /// The YAML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RiskLevel::Low => "low",
            RiskLevel::Medium => "medium",
            RiskLevel::High => "high",
            RiskLevel::Critical => "critical",
        }
    }
}

/// `output_coordination:` (guide "Output coordination").
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct OutputCoordination {
    /// Canonical deliverable ownership: `direct` or `fan_in`.
    #[serde(default)]
    pub strategy: Option<OutputStrategy>,
    /// Normalized workspace-relative root for intermediate artifacts.
    #[serde(default)]
    pub intermediate_root: Option<String>,
    /// Whether a canonical deliverable may have only one writer.
    #[serde(default)]
    pub enforce_single_writer: Option<bool>,
    /// Fan-in finalizer publish behaviour.
    #[serde(default)]
    pub publish_mode: Option<PublishMode>,
    /// What to do when canonical deliverable writers conflict.
    #[serde(default)]
    pub conflict_policy: Option<ConflictPolicy>,
    /// Whether fan-in finalizers need every worker's artifacts.
    #[serde(default)]
    pub finalizer_input_policy: Option<FinalizerInputPolicy>,
}

impl OutputCoordination {
    /// The default intermediate root shown by the guide (guide "Output coordination").
    pub const DEFAULT_INTERMEDIATE_ROOT: &'static str = ".loom/phase-artifacts";
}

/// `output_coordination.strategy` and `phases[].output_strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputStrategy {
    /// Workers write canonical deliverables directly.
    Direct,
    /// Workers write intermediates; a `<phase>__finalize_output` finalizer publishes.
    FanIn,
}

/// `output_coordination.publish_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PublishMode {
    /// Staged writes + commit.
    Transactional,
    /// Publish what can be published.
    BestEffort,
}

/// `output_coordination.conflict_policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConflictPolicy {
    /// Defer conflicting writers, first in first out.
    DeferFifo,
    /// Fail on the first conflict.
    FailFast,
}

/// `finalizer_input_policy` (process level and phase override).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinalizerInputPolicy {
    /// The finalizer needs artifacts from every worker.
    RequireAllWorkers,
    /// The finalizer may continue with partial worker coverage.
    AllowPartial,
}

/// One entry of `phases:` (guide "Phases", field table).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Phase {
    /// Unique, kebab-case identifier (required).
    pub id: String,
    /// What the phase accomplishes and how (required).
    pub description: String,
    /// Phase ids that must complete first; `[]` for root phases. The field table says
    /// required, but the guide's "Phase iteration loops" example omits it: absent reads as
    /// `[]` and the validator warns (`phases.depends_on.implicit`).
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// 1 (fast) .. 3 (powerful); default 2. See [`Phase::model_tier`].
    #[serde(default)]
    pub model_tier: Option<i64>,
    /// 1 (light) .. 2 (thorough); default 1. See [`Phase::verification_tier`].
    #[serde(default)]
    pub verification_tier: Option<i64>,
    /// If true, failure here blocks the entire process. Default false.
    #[serde(default)]
    pub is_critical_path: bool,
    /// If true, a final phase combining prior work. Default false.
    #[serde(default)]
    pub is_synthesis: bool,
    /// Phase override of `output_coordination.strategy`.
    #[serde(default)]
    pub output_strategy: Option<OutputStrategy>,
    /// Phase override of `output_coordination.finalizer_input_policy`.
    #[serde(default)]
    pub finalizer_input_policy: Option<FinalizerInputPolicy>,
    /// Concrete completion criteria.
    #[serde(default)]
    pub acceptance_criteria: Option<String>,
    /// Expected output files, `"filename.md — description"`; see [`deliverable_filename`].
    #[serde(default)]
    pub deliverables: Vec<String>,
    /// Phase-level validity override (merged with process defaults).
    #[serde(default)]
    pub validity_contract: Option<ValidityContract>,
    /// Gate-driven loop policy (guide "Phase iteration loops").
    #[serde(default)]
    pub iteration: Option<Iteration>,
}

impl Phase {
    /// Default model tier (guide "Phases": "Default 2").
    pub const DEFAULT_MODEL_TIER: i64 = 2;
    /// Default verification tier (guide "Phases": "Default 1").
    pub const DEFAULT_VERIFICATION_TIER: i64 = 1;

    /// The effective model tier.
    pub fn model_tier(&self) -> i64 {
        self.model_tier.unwrap_or(Self::DEFAULT_MODEL_TIER)
    }

    /// The effective verification tier.
    pub fn verification_tier(&self) -> i64 {
        self.verification_tier
            .unwrap_or(Self::DEFAULT_VERIFICATION_TIER)
    }

    /// The exact deliverable filenames (the part of each entry before its description).
    pub fn deliverable_filenames(&self) -> Vec<&str> {
        self.deliverables
            .iter()
            .map(|d| deliverable_filename(d))
            .collect()
    }

    /// The phase's effective output strategy given the process-level coordination.
    pub fn output_strategy(&self, process: Option<&OutputCoordination>) -> OutputStrategy {
        self.output_strategy
            .or_else(|| process.and_then(|c| c.strategy))
            .unwrap_or(OutputStrategy::Direct)
    }

    /// True when the iteration loop is switched on.
    pub fn iterates(&self) -> bool {
        self.iteration
            .as_ref()
            .is_some_and(|i| i.enabled == Some(true))
    }
}

/// The filename part of a deliverable entry (guide "Phases": deliverables are
/// `"filename.md — description"` and "enforced by exact filename").
///
/// The guide always separates the two with a spaced em dash; we also accept a spaced en dash
/// or hyphen (` – `, ` - `) and treat an entry without a separator as a bare filename.
pub fn deliverable_filename(entry: &str) -> &str {
    const SEPARATORS: [&str; 3] = [" — ", " – ", " - "];
    let cut = SEPARATORS
        .iter()
        .filter_map(|sep| entry.find(sep))
        .min()
        .unwrap_or(entry.len());
    entry[..cut].trim()
}

/// `validity_contract:` at process or phase level; every field optional so that levels can be
/// merged (guide "Validity contract (claim and evidence rigor)"). The resolved, concrete form
/// is `package::validity::ResolvedValidity`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct ValidityContract {
    /// Master switch for the validity pipeline.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Claim extraction switch.
    #[serde(default)]
    pub claim_extraction: Option<ClaimExtraction>,
    /// Claim categories with stricter support floors.
    #[serde(default)]
    pub critical_claim_types: Option<Vec<String>>,
    /// Minimum supported/extracted ratio, 0..1.
    #[serde(default)]
    pub min_supported_ratio: Option<f64>,
    /// Maximum unresolved/extracted ratio, 0..1.
    #[serde(default)]
    pub max_unverified_ratio: Option<f64>,
    /// Maximum contradicted claims, >= 0.
    #[serde(default)]
    pub max_contradicted_count: Option<i64>,
    /// `drop` or `rewrite_uncertainty`.
    #[serde(default)]
    pub prune_mode: Option<PruneMode>,
    /// Requires fact checker use before synthesis passes.
    #[serde(default)]
    pub require_fact_checker_for_synthesis: Option<bool>,
    /// Final synthesis gate.
    #[serde(default)]
    pub final_gate: Option<FinalGate>,
}

/// `validity_contract.claim_extraction`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct ClaimExtraction {
    /// Enables claim extraction and claim lifecycle tracking.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// `validity_contract.prune_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PruneMode {
    /// Remove unresolved claims.
    Drop,
    /// Keep uncertainty notes, exclude unresolved claims from synthesis context.
    RewriteUncertainty,
}

/// `validity_contract.final_gate`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct FinalGate {
    /// Excludes unresolved claims from synthesis input.
    #[serde(default)]
    pub enforce_verified_context_only: Option<bool>,
    /// Minimum verification tier for synthesis phases, >= 1.
    #[serde(default)]
    pub synthesis_min_verification_tier: Option<i64>,
    /// Required support ratio for critical claim types, 0..1.
    #[serde(default)]
    pub critical_claim_support_ratio: Option<f64>,
    /// Temporal checks.
    #[serde(default)]
    pub temporal_consistency: Option<TemporalConsistency>,
}

/// `validity_contract.final_gate.temporal_consistency`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct TemporalConsistency {
    /// Temporal gate switch.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Require claims to align with `as_of`.
    #[serde(default)]
    pub require_as_of_alignment: Option<bool>,
    /// Check cross-claim date conflicts.
    #[serde(default)]
    pub enforce_cross_claim_date_conflict_check: Option<bool>,
    /// Stale-source age limit in days; 0 means no limit (the guide's default value).
    #[serde(default)]
    pub max_source_age_days: Option<i64>,
    /// Explicit reporting date; `""` means none.
    #[serde(default)]
    pub as_of: Option<String>,
}

/// `phases[].iteration` (guide "Phase iteration loops").
///
/// The guide lists which fields are required *when `enabled: true`*; they are therefore
/// optional here and checked by the validator. An `iteration` block without `enabled` is
/// off (the guide gives no default; off is the lenient reading).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Iteration {
    /// Loop switch.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Loop attempt cap, 1..6.
    #[serde(default)]
    pub max_attempts: Option<i64>,
    /// `targeted_remediation` or `full_rerun`.
    #[serde(default)]
    pub strategy: Option<IterationStrategy>,
    /// Stop when score-like gates do not improve for N attempts.
    #[serde(default)]
    pub stop_on_no_improvement_attempts: Option<i64>,
    /// Hard cap across loop + retry churn, >= `max_attempts`.
    #[serde(default)]
    pub max_total_runner_invocations: Option<i64>,
    /// Bounded replans after loop exhaustion.
    #[serde(default)]
    pub max_replans_after_exhaustion: Option<i64>,
    /// If false, terminate instead of requesting a replan.
    #[serde(default)]
    pub replan_on_exhaustion: Option<bool>,
    /// Per-loop budgets.
    #[serde(default)]
    pub iteration_budget: Option<IterationBudget>,
    /// Gates evaluated after each attempt.
    #[serde(default)]
    pub gates: Vec<Gate>,
}

/// `iteration.strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IterationStrategy {
    /// Retry with remediation aimed at the failing gates.
    TargetedRemediation,
    /// Re-run the whole phase.
    FullRerun,
}

/// `iteration.iteration_budget` (all three required and > 0 when iteration is enabled).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct IterationBudget {
    /// Per-loop wall-clock cap in seconds.
    #[serde(default)]
    pub max_wall_clock_seconds: Option<i64>,
    /// Per-loop token cap.
    #[serde(default)]
    pub max_tokens: Option<i64>,
    /// Per-loop tool call cap.
    #[serde(default)]
    pub max_tool_calls: Option<i64>,
}

/// One `iteration.gates[]` entry (guide "Phase iteration loops", gate table).
///
/// One struct for all four types (the guide lists "key fields" per type); the validator
/// checks that each type has its key fields. Use [`Gate::kind`] for a typed view.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Gate {
    /// Gate id (the guide's examples always give one; not listed as a key field).
    #[serde(default)]
    pub id: Option<String>,
    /// Gate type.
    #[serde(rename = "type")]
    pub gate_type: GateType,
    /// Whether a failing gate blocks; see [`Gate::is_blocking`] for the default.
    #[serde(default)]
    pub blocking: Option<bool>,
    /// `tool_metric`: tool whose structured output is read.
    #[serde(default)]
    pub tool: Option<String>,
    /// `tool_metric`: dotted path into the tool's output data.
    #[serde(default)]
    pub metric_path: Option<String>,
    /// `tool_metric`, `command_exit`, `verifier_field`: comparison operator.
    #[serde(default)]
    pub operator: Option<Operator>,
    /// `tool_metric`, `command_exit`, `verifier_field`: the value compared against.
    #[serde(default)]
    pub value: Option<Value>,
    /// `artifact_regex`: what the pattern runs over.
    #[serde(default)]
    pub target: Option<ArtifactTarget>,
    /// `artifact_regex`: the regex.
    #[serde(default)]
    pub pattern: Option<String>,
    /// `artifact_regex`: whether the pattern must match (default true) or must not.
    #[serde(default)]
    pub expect_match: Option<bool>,
    /// `command_exit`: argv tokens.
    #[serde(default)]
    pub command: Option<GateCommand>,
    /// `command_exit`: timeout in seconds, > 0.
    #[serde(default)]
    pub timeout_seconds: Option<i64>,
    /// `verifier_field`: the verifier output field compared.
    #[serde(default)]
    pub field: Option<String>,
}

impl Gate {
    /// Whether the gate blocks. The guide gives no default; its loader reads a gate without
    /// `blocking` as non-blocking (`blocking: bool = False`), and so do we (the validator
    /// warns about a deterministic gate that leaves it out, `iteration.gate.blocking.implicit`).
    pub fn is_blocking(&self) -> bool {
        self.blocking.unwrap_or(false)
    }

    /// A typed view of the gate's key fields; `None` if one is missing or a `command_exit`
    /// `value` is not an integer (the validator reports both, so a loaded process always has
    /// `Some`).
    pub fn kind(&self) -> Option<GateKind<'_>> {
        Some(match self.gate_type {
            GateType::ToolMetric => GateKind::ToolMetric {
                tool: self.tool.as_deref()?,
                metric_path: self.metric_path.as_deref()?,
                operator: self.operator?,
                value: self.value.as_ref()?,
            },
            GateType::ArtifactRegex => GateKind::ArtifactRegex {
                target: self.target.unwrap_or(ArtifactTarget::Auto),
                pattern: self.pattern.as_deref()?,
                expect_match: self.expect_match.unwrap_or(true),
            },
            GateType::CommandExit => GateKind::CommandExit {
                argv: match self.command.as_ref()? {
                    GateCommand::Argv(argv) => argv,
                    GateCommand::Line(_) => return None,
                },
                operator: self.operator.unwrap_or(Operator::Eq),
                // Absent means the guide's default exit code 0; a present value must be an
                // integer (never coerced: `"1"` or `1.5` make the gate invalid).
                value: match &self.value {
                    None => 0,
                    Some(v) => v.as_i64()?,
                },
                timeout_seconds: self.timeout_seconds,
            },
            GateType::VerifierField => GateKind::VerifierField {
                field: self.field.as_deref()?,
                operator: self.operator?,
                value: self.value.as_ref()?,
            },
        })
    }
}

/// Typed view of a gate (see [`Gate::kind`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GateKind<'a> {
    /// Compare a structured tool output metric.
    ToolMetric {
        /// Tool name.
        tool: &'a str,
        /// Dotted metric path.
        metric_path: &'a str,
        /// Operator.
        operator: Operator,
        /// Threshold.
        value: &'a Value,
    },
    /// Regex over files or output text.
    ArtifactRegex {
        /// Target (default `auto`).
        target: ArtifactTarget,
        /// Pattern.
        pattern: &'a str,
        /// Must match (true) or must not match (false).
        expect_match: bool,
    },
    /// Run an allowlisted command and compare its exit code (default `eq 0`).
    CommandExit {
        /// argv tokens.
        argv: &'a [String],
        /// Operator.
        operator: Operator,
        /// Expected exit code.
        value: i64,
        /// Timeout.
        timeout_seconds: Option<i64>,
    },
    /// Compare a structured verifier field (advisory only).
    VerifierField {
        /// Field name.
        field: &'a str,
        /// Operator.
        operator: Operator,
        /// Value.
        value: &'a Value,
    },
}

/// `gates[].type` (guide "Phase iteration loops", gate table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateType {
    /// Compare structured tool output metric.
    ToolMetric,
    /// Regex check over files or output text.
    ArtifactRegex,
    /// Run allowlisted command and compare exit code.
    CommandExit,
    /// Compare structured verifier fields.
    VerifierField,
}

impl GateType {
    /// Deterministic gate types, the ones that can satisfy "at least one deterministic
    /// blocking gate" (guide "Phase iteration loops", MVP constraint 1).
    pub fn is_deterministic(self) -> bool {
        !matches!(self, GateType::VerifierField)
    }
}

/// Gate comparison operator (guide "Phase iteration loops": the gate table's `operator`).
///
/// The guide names no operator list; its examples use only `gte`. Its loader evaluates
/// exactly `gte`, `lte`, `eq`, `contains` and `not_contains` (`IterationGateEvaluator
/// ._OPERATORS`): any other operator makes a `tool_metric` / `verifier_field` gate
/// unevaluable there (a blocking gate can never pass) and a `command_exit` gate's operator is
/// silently read as `eq`. So those five are the operators; `gt`, `lt`, `ne` (`neq`) and the
/// rest are `iteration.gate.operator.value` errors whose message names the portable spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    /// Equal.
    Eq,
    /// Greater than or equal.
    Gte,
    /// Less than or equal.
    Lte,
    /// The measured value, as text (JSON with sorted keys for lists and mappings), contains the
    /// expected value as text (the guide's loader's reading).
    Contains,
    /// The measured value as text does not contain the expected value as text.
    NotContains,
}

impl Operator {
    /// The operators the guide's loader evaluates, as written in a package.
    pub const NAMES: [&'static str; 5] = ["gte", "lte", "eq", "contains", "not_contains"];

    /// True for ordering comparisons, which make a gate "score-like".
    pub fn is_ordering(self) -> bool {
        matches!(self, Operator::Gte | Operator::Lte)
    }

    /// The operator as written in a package.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Eq => "eq",
            Operator::Gte => "gte",
            Operator::Lte => "lte",
            Operator::Contains => "contains",
            Operator::NotContains => "not_contains",
        }
    }

    /// For an operator the guide's loader does not evaluate (`gt`, `lt`, `ne`, …), the
    /// portable way to write the same gate; `None` for an operator that is one of [`Self::NAMES`].
    pub fn portable_spelling(written: &str) -> Option<&'static str> {
        let w = written.trim().to_lowercase();
        if Self::NAMES.contains(&w.as_str()) {
            return None;
        }
        Some(match w.as_str() {
            "gt" | ">" => "`gte` with the next value (`gt 79` is `gte 80` for whole numbers)",
            "lt" | "<" => "`lte` with the previous value (`lt 5` is `lte 4` for whole numbers)",
            "ge" | ">=" => "`gte`",
            "le" | "<=" => "`lte`",
            "==" | "equals" => "`eq`",
            "ne" | "neq" | "!=" => {
                "`not_contains` for text, or `eq` with the expected value (there is no not-equal operator)"
            }
            _ => "one of gte, lte, eq, contains, not_contains",
        })
    }
}

/// `artifact_regex.target` (guide "Phase iteration loops", MVP constraint 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactTarget {
    /// Let the runtime choose.
    Auto,
    /// The phase's declared deliverables.
    Deliverables,
    /// Files changed in the attempt.
    ChangedFiles,
    /// The phase summary.
    Summary,
    /// The phase's text output.
    Output,
}

/// `command_exit.command`: argv tokens (the only valid form) or a single command line, which
/// the validator rejects (guide "Phase iteration loops", MVP constraint 5).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum GateCommand {
    /// Tokenized argv list.
    Argv(Vec<String>),
    /// A shell-style command line (rejected).
    Line(String),
}

/// `verification:` (guide "Verification rules").
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Verification {
    /// Runtime verification policy (v2).
    #[serde(default)]
    pub policy: Option<VerificationPolicy>,
    /// Remediation metadata (v2).
    #[serde(default)]
    pub remediation: Option<Remediation>,
    /// Regex and LLM rules.
    #[serde(default)]
    pub rules: Vec<VerificationRule>,
}

/// `verification.policy` (guide "Process contract v2": "LLM-first/static-first mode, static
/// safety checks, semantic checks, verifier output contract").
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct VerificationPolicy {
    /// `llm_first` or `static_first`.
    #[serde(default)]
    pub mode: Option<PolicyMode>,
    /// Static safety check settings (shape not specified by the guide).
    #[serde(default)]
    pub static_checks: Option<Value>,
    /// Semantic checks: a model prompt, or a registered verification helper.
    #[serde(default)]
    pub semantic_checks: Vec<SemanticCheck>,
    /// Verifier output contract.
    #[serde(default)]
    pub output_contract: Option<OutputContract>,
    /// Pass/fail/partial behaviour thresholds (shape not specified by the guide).
    #[serde(default)]
    pub outcome_policy: Option<Value>,
}

/// One `verification.policy.semantic_checks[]` entry. The guide names the block without its
/// keys; these are the keys its loader and built-in packages use. An entry with a `helper`
/// runs that registered verification helper (`runner::helpers`); one without asks the model
/// to judge its `check` text.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct SemanticCheck {
    /// Check id (built-in packages use `id`).
    #[serde(default)]
    pub id: Option<String>,
    /// Check name (the loader's contracts use `name`).
    #[serde(default)]
    pub name: Option<String>,
    /// The natural-language check, for a model-judged check.
    #[serde(default)]
    pub check: Option<String>,
    /// What the check is for.
    #[serde(default)]
    pub description: Option<String>,
    /// `error` blocks, `warning` is recorded (default `error` for a helper, as its result is
    /// deterministic; `warning` for a model-judged check, like a rule).
    #[serde(default)]
    pub severity: Option<Severity>,
    /// `hard` (blocks whatever the severity) or `advisory` (never blocks); the guide's loader
    /// does not check this key here, so other values are read as "by severity".
    #[serde(default)]
    pub enforcement: Option<String>,
    /// `phase` or `global` (not checked by the loader; informational).
    #[serde(default)]
    pub scope: Option<String>,
    /// Phases it applies to (`"*"` = all).
    #[serde(default)]
    pub applies_to_phases: Option<PhaseList>,
    /// A registered verification helper (`run_test_suite`, `http_assert`, ...).
    #[serde(default)]
    pub helper: Option<String>,
    /// The verifier capability the check needs (`command_execution`, ...).
    #[serde(default)]
    pub capability: Option<String>,
    /// Free-form kind label.
    #[serde(default)]
    pub kind: Option<String>,
    /// What the helper targets (a URL, a path).
    #[serde(default)]
    pub target: Option<String>,
    /// An optional check whose capability is missing is skipped instead of failing.
    #[serde(default)]
    pub optional: Option<bool>,
    /// Helper arguments (for `run_test_suite`/`run_build_check`: `command` argv).
    #[serde(default)]
    pub args: Option<Value>,
}

impl SemanticCheck {
    /// Whether the check applies to `phase` (same reading as a rule's `applies_to_phases`).
    pub fn applies_to(&self, phase: &str) -> bool {
        match self.applies_to_phases.as_ref().map(PhaseList::ids) {
            Some(ids) if !ids.is_empty() => ids.iter().any(|p| *p == "*" || *p == phase),
            _ => true,
        }
    }

    /// The check's label: `id`, else `name`, else `semantic-<n>` (1-based).
    pub fn label(&self, index: usize) -> String {
        self.id
            .clone()
            .or_else(|| self.name.clone())
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| format!("semantic-{}", index + 1))
    }
}

/// `applies_to_phases`: a list of phase ids, or one id written as a string (`"*"`), which the
/// guide's loader reads as a one-element list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum PhaseList {
    /// A list of phase ids (or `"*"`).
    Many(Vec<String>),
    /// One phase id (or `"*"`).
    One(String),
}

impl PhaseList {
    /// The ids, trimmed, empty ones dropped.
    pub fn ids(&self) -> Vec<&str> {
        let all: Vec<&str> = match self {
            PhaseList::Many(v) => v.iter().map(String::as_str).collect(),
            PhaseList::One(s) => vec![s.as_str()],
        };
        all.into_iter()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect()
    }
}

/// A rule's or semantic check's `enforcement` (the guide's loader: `hard` | `advisory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// Failing it fails the attempt, whatever the severity.
    Hard,
    /// Failing it is recorded only, whatever the severity.
    Advisory,
}

/// A rule's `scope` (the guide's loader: `phase` | `global`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleScope {
    /// Checks the phase being run.
    Phase,
    /// Applies to every phase.
    Global,
}

/// A rule's `failure_class` (the guide's loader).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// An integrity failure: never pruned or queued, always blocks a critical path.
    HardIntegrity,
    /// A placeholder that a retry can fill.
    RecoverablePlaceholder,
    /// A semantic (judgement) failure.
    Semantic,
}

/// A rule's `remediation_mode` (the guide's loader), the remediation strategy a failure of
/// the rule asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RemediationMode {
    /// No remediation: the failure stands.
    None,
    /// Confirm the finding or prune the unverified material.
    ConfirmOrPrune,
    /// Retry aimed at the failure.
    TargetedRemediation,
    /// Do not retry now; queue a follow-up.
    QueueFollowUp,
    /// Remediate and retry.
    RemediateAndRetry,
}

impl RemediationMode {
    /// The YAML spelling (also the key looked up in a remediation instruction mapping).
    pub fn as_str(self) -> &'static str {
        match self {
            RemediationMode::None => "none",
            RemediationMode::ConfirmOrPrune => "confirm_or_prune",
            RemediationMode::TargetedRemediation => "targeted_remediation",
            RemediationMode::QueueFollowUp => "queue_follow_up",
            RemediationMode::RemediateAndRetry => "remediate_and_retry",
        }
    }
}

/// `verification.policy.mode` ("LLM-first/static-first mode").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyMode {
    /// LLM verification first.
    LlmFirst,
    /// Static checks first.
    StaticFirst,
}

/// `verification.policy.output_contract`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct OutputContract {
    /// Fields the verifier output must carry; must include `passed` (guide "Migrating v1 to v2").
    #[serde(default)]
    pub required_fields: Vec<String>,
    /// Process-specific fields inside `metadata` (the guide's loader then requires `metadata`).
    #[serde(default)]
    pub metadata_fields: Vec<String>,
    /// Process-specific counters inside `metadata`.
    #[serde(default)]
    pub counters: Vec<String>,
    /// Process-specific flags inside `metadata`.
    #[serde(default)]
    pub flags: Vec<String>,
}

/// `verification.remediation` (guide "Process contract v2": "strategy metadata, retry
/// budget, critical-path behavior").
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Remediation {
    /// Declared remediation strategies.
    #[serde(default)]
    pub strategies: Vec<RemediationStrategy>,
    /// Default remediation strategy name, e.g. `targeted-remediation`.
    #[serde(default)]
    pub default_strategy: Option<String>,
    /// What a failed critical-path phase does: `block` (default), `confirm_or_prune_then_queue`
    /// or `queue_follow_up`.
    #[serde(default)]
    pub critical_path_behavior: Option<CriticalPathBehavior>,
    /// Retries of a phase without an iteration loop.
    #[serde(default)]
    pub retry_budget: Option<RetryBudget>,
    /// Transient-error retry settings (shape not specified by the guide).
    #[serde(default)]
    pub transient_retry_policy: Option<Value>,
}

impl Remediation {
    /// The effective critical-path behaviour (the guide's loader: `block` unless set).
    pub fn critical_path_behavior(&self) -> CriticalPathBehavior {
        self.critical_path_behavior
            .unwrap_or(CriticalPathBehavior::Block)
    }
}

/// One `verification.remediation.strategies[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct RemediationStrategy {
    /// Strategy id (what `default_strategy` and instruction mappings name).
    #[serde(default)]
    pub id: Option<String>,
    /// The retry strategy it maps to.
    #[serde(default)]
    pub retry_strategy: Option<String>,
    /// What it does.
    #[serde(default)]
    pub description: Option<String>,
}

/// `verification.remediation.retry_budget`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct RetryBudget {
    /// Total attempts of a phase without an iteration loop when a blocking check fails
    /// (1 = no retry).
    #[serde(default)]
    pub max_attempts: Option<i64>,
}

/// `verification.remediation.critical_path_behavior` (the guide's loader's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CriticalPathBehavior {
    /// A failed critical-path phase blocks the whole process (the guide's "Phases" reading).
    Block,
    /// Prune unverified claims and re-judge; a remaining non-integrity failure is queued as a
    /// follow-up and the run goes on.
    ConfirmOrPruneThenQueue,
    /// A non-integrity failure is queued as a follow-up and the run goes on.
    QueueFollowUp,
}

impl CriticalPathBehavior {
    /// The YAML spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CriticalPathBehavior::Block => "block",
            CriticalPathBehavior::ConfirmOrPruneThenQueue => "confirm_or_prune_then_queue",
            CriticalPathBehavior::QueueFollowUp => "queue_follow_up",
        }
    }
}

/// One `verification.rules[]` entry (guide "Verification rules"), with the scoping keys the
/// guide's loader reads (`enforcement`, `failure_class`, `remediation_mode`, `scope`,
/// `applies_to_phases`, `requires_exact_cardinality`, `min_count`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct VerificationRule {
    /// Rule name.
    pub name: String,
    /// What the rule checks.
    #[serde(default)]
    pub description: Option<String>,
    /// Regex pattern (`type: regex`) or natural-language prompt (`type: llm`).
    pub check: String,
    /// `error` rejects the phase result; `warning` is noted. See [`VerificationRule::severity`].
    #[serde(default)]
    pub severity: Option<Severity>,
    /// `regex` or `llm`; see [`VerificationRule::rule_type`] for the default.
    #[serde(rename = "type", default)]
    pub rule_type: Option<RuleType>,
    /// `output` (default) or `deliverables`.
    #[serde(default)]
    pub target: Option<RuleTarget>,
    /// `hard` (blocks whatever the severity) or `advisory` (never blocks).
    #[serde(default)]
    pub enforcement: Option<Enforcement>,
    /// What kind of failure this rule reports.
    #[serde(default)]
    pub failure_class: Option<FailureClass>,
    /// The remediation a failure asks for.
    #[serde(default)]
    pub remediation_mode: Option<RemediationMode>,
    /// `phase` or `global`.
    #[serde(default)]
    pub scope: Option<RuleScope>,
    /// The phases the rule judges (`"*"` = all); empty = by `scope`.
    #[serde(default)]
    pub applies_to_phases: Option<PhaseList>,
    /// The regex must match exactly `min_count` times (regex rules).
    #[serde(default)]
    pub requires_exact_cardinality: Option<bool>,
    /// Minimum matches a regex rule needs (turns it into a required pattern), >= 0.
    #[serde(default)]
    pub min_count: Option<i64>,
}

impl VerificationRule {
    /// Effective type. The guide lists `type` on every example; its loader defaults it to
    /// `llm`, and so do we.
    pub fn rule_type(&self) -> RuleType {
        self.rule_type.unwrap_or(RuleType::Llm)
    }

    /// Whether the rule judges `phase` (the guide's loader's scoping, with its default
    /// "global" reading of a rule without scope metadata): an explicit `applies_to_phases`
    /// list decides (`"*"` = all); otherwise `scope: phase` and `scope: global` and no scope
    /// all apply to the phase being run.
    pub fn applies_to(&self, phase: &str) -> bool {
        match self.applies_to_phases.as_ref().map(PhaseList::ids) {
            Some(ids) if !ids.is_empty() => ids.iter().any(|p| *p == "*" || *p == phase),
            _ => true,
        }
    }

    /// Whether a failure blocks the attempt: `enforcement: hard` always, `advisory` never,
    /// otherwise by severity (`error` blocks).
    pub fn is_blocking(&self) -> bool {
        match self.enforcement {
            Some(Enforcement::Hard) => true,
            Some(Enforcement::Advisory) => false,
            None => self.severity() == Severity::Error,
        }
    }

    /// Effective severity. The guide gives no default; `warning` ("noted but does not
    /// block") is the lenient reading.
    pub fn severity(&self) -> Severity {
        self.severity.unwrap_or(Severity::Warning)
    }

    /// Effective target (guide: "Target (optional, defaults to output)").
    pub fn target(&self) -> RuleTarget {
        self.target.unwrap_or(RuleTarget::Output)
    }
}

/// Verification rule severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Verification fails; the phase result is rejected.
    Error,
    /// Noted but does not block.
    Warning,
}

/// Verification rule type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleType {
    /// Deterministic regular expression.
    Regex,
    /// Natural-language prompt evaluated by a model.
    Llm,
}

/// Verification rule target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleTarget {
    /// The phase's text output.
    Output,
    /// The delivered files.
    Deliverables,
}

/// `evidence:` (guide "Process contract v2": record schema, extraction mappings,
/// summarization controls).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Evidence {
    /// Evidence record schema.
    #[serde(default)]
    pub record_schema: Option<EvidenceRecordSchema>,
    /// Extraction mappings (shape not specified by the guide).
    #[serde(default)]
    pub extraction: Option<Value>,
}

/// `evidence.record_schema`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct EvidenceRecordSchema {
    /// Fields every evidence record must carry.
    #[serde(default)]
    pub required_fields: Vec<String>,
    /// Facets records are indexed by.
    #[serde(default)]
    pub facets: Vec<String>,
}

/// `prompt_contracts:` (guide "Process contract v2", "Migrating v1 to v2").
///
/// The guide says "executor/verifier/remediation instructions"; its loader and built-in
/// packages spell the first two `executor_constraints` / `verifier_constraints`. Both
/// spellings are read ([`PromptContracts::executor`], [`PromptContracts::verifier`]).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct PromptContracts {
    /// Process-specific executor instructions.
    #[serde(default)]
    pub executor_instructions: Option<String>,
    /// The loader's name for the executor instructions.
    #[serde(default)]
    pub executor_constraints: Option<String>,
    /// Process-specific verifier instructions.
    #[serde(default)]
    pub verifier_instructions: Option<String>,
    /// The loader's name for the verifier instructions.
    #[serde(default)]
    pub verifier_constraints: Option<String>,
    /// Remediation wording (moved here from v1 verification text): one text, or a mapping
    /// from strategy name to text with a `default` entry.
    #[serde(default)]
    pub remediation_instructions: Option<RemediationInstructions>,
    /// Evidence-contract activation.
    #[serde(default)]
    pub evidence_contract: Option<EvidenceContract>,
}

impl PromptContracts {
    /// The executor instructions (both spellings, joined when both are given).
    pub fn executor(&self) -> String {
        join_texts(&[&self.executor_instructions, &self.executor_constraints])
    }

    /// The verifier instructions (both spellings, joined when both are given).
    pub fn verifier(&self) -> String {
        join_texts(&[&self.verifier_instructions, &self.verifier_constraints])
    }
}

fn join_texts(parts: &[&Option<String>]) -> String {
    parts
        .iter()
        .filter_map(|p| p.as_deref())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// `prompt_contracts.remediation_instructions`: the guide's migration step 4 moves
/// remediation wording here; its loader takes a text or a mapping (`default: |` plus one
/// entry per strategy).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum RemediationInstructions {
    /// One text for every retry.
    Text(String),
    /// Verifier reason code or strategy name (lower-case) → text; `default` is used for
    /// anything else.
    ByStrategy(std::collections::BTreeMap<String, String>),
}

impl RemediationInstructions {
    /// The text for a retry after a verifier reported `reason_code` and the retry uses
    /// `strategy`: the guide's loader's order (its remediation prompt looks up the normalized
    /// reason code first, then the strategy, then `default`).
    pub fn for_retry(&self, reason_code: &str, strategy: &str) -> Option<String> {
        if let RemediationInstructions::ByStrategy(m) = self
            && let Some(t) = m
                .get(&reason_code.trim().to_lowercase())
                .map(|t| t.trim())
                .filter(|t| !t.is_empty())
        {
            return Some(t.to_owned());
        }
        self.for_strategy(strategy)
    }

    /// The text for a retry under `strategy` (the loader's rule: the strategy's own entry,
    /// else `default`, else nothing), trimmed.
    pub fn for_strategy(&self, strategy: &str) -> Option<String> {
        let text = match self {
            RemediationInstructions::Text(t) => Some(t.as_str()),
            RemediationInstructions::ByStrategy(m) => m
                .get(&strategy.trim().to_lowercase())
                .filter(|t| !t.trim().is_empty())
                .or_else(|| m.get("default"))
                .map(String::as_str),
        };
        text.map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
    }
}

/// `prompt_contracts.evidence_contract`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct EvidenceContract {
    /// Switch.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Phase ids it applies to, or `"*"` for all (a single string is one id).
    #[serde(default)]
    pub applies_to_phases: Option<PhaseList>,
}

/// `memory:` (guide "Memory types").
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct Memory {
    /// Memory types the extraction model pulls from each phase's output.
    #[serde(default)]
    pub extract_types: Vec<MemoryType>,
    /// Extraction guidance text.
    #[serde(default)]
    pub extraction_guidance: Option<String>,
}

/// One `memory.extract_types[]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct MemoryType {
    /// Type name, e.g. `evidence_finding`.
    #[serde(rename = "type")]
    pub memory_type: String,
    /// What the type captures.
    #[serde(default)]
    pub description: Option<String>,
}

/// `workspace_analysis:` (guide "Workspace analysis").
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct WorkspaceAnalysis {
    /// Patterns shown to the planner, `"*.csv — description"`.
    #[serde(default)]
    pub scan_for: Vec<String>,
    /// Guidance injected into the system prompt.
    #[serde(default)]
    pub guidance: Option<String>,
}

/// One `planner_examples[]` entry (guide "Planner examples").
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct PlannerExample {
    /// One-sentence goal.
    pub goal: String,
    /// Subtasks mirroring the phase ids.
    #[serde(default)]
    pub subtasks: Vec<PlannerSubtask>,
}

/// One planner example subtask.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct PlannerSubtask {
    /// Subtask id (should be a phase id).
    pub id: String,
    /// Scenario-specific description.
    #[serde(default)]
    pub description: Option<String>,
    /// Subtask ids this depends on.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Model tier 1..3.
    #[serde(default)]
    pub model_tier: Option<i64>,
}

/// `replanning:` (guide "Replanning").
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct Replanning {
    /// When to re-plan.
    #[serde(default)]
    pub triggers: Option<String>,
    /// How to adapt.
    #[serde(default)]
    pub guidance: Option<String>,
}

/// One `tests[]` entry (guide "Process test manifest").
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct TestCase {
    /// Unique per package (required).
    pub id: String,
    /// `deterministic` (scripted model backend) or `live`. The guide gives no default;
    /// absent means `deterministic`, the CI mode. See [`TestCase::mode`].
    #[serde(default)]
    pub mode: Option<TestMode>,
    /// The goal the run is given (required).
    pub goal: String,
    /// Timeout in seconds, > 0.
    #[serde(default)]
    pub timeout_seconds: Option<i64>,
    /// Whether the case needs network access.
    #[serde(default)]
    pub requires_network: Option<bool>,
    /// Tools the case needs.
    #[serde(default)]
    pub requires_tools: Vec<String>,
    /// What a passing run looks like.
    #[serde(default)]
    pub acceptance: Option<TestAcceptance>,
}

impl TestCase {
    /// Effective mode.
    pub fn mode(&self) -> TestMode {
        self.mode.unwrap_or(TestMode::Deterministic)
    }
}

/// `tests[].mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TestMode {
    /// Scripted model backend, reproducible.
    Deterministic,
    /// Real providers and external tools.
    Live,
}

/// `tests[].acceptance`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct TestAcceptance {
    /// Phase expectations.
    #[serde(default)]
    pub phases: Option<AcceptancePhases>,
    /// Deliverable expectations.
    #[serde(default)]
    pub deliverables: Option<AcceptanceDeliverables>,
    /// Verification expectations.
    #[serde(default)]
    pub verification: Option<AcceptanceVerification>,
}

/// `tests[].acceptance.phases`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct AcceptancePhases {
    /// Phase ids the run must include.
    #[serde(default)]
    pub must_include: Vec<String>,
}

/// `tests[].acceptance.deliverables`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct AcceptanceDeliverables {
    /// Files that must exist after the run.
    #[serde(default)]
    pub must_exist: Vec<String>,
}

/// `tests[].acceptance.verification`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct AcceptanceVerification {
    /// Regexes that must not appear in verification output.
    #[serde(default)]
    pub forbidden_patterns: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deliverable_filename_cuts_at_the_spaced_dash() {
        assert_eq!(deliverable_filename("report.md — the report"), "report.md");
        assert_eq!(deliverable_filename("data.csv - rows"), "data.csv");
        assert_eq!(deliverable_filename("plain.txt"), "plain.txt");
        assert_eq!(deliverable_filename("a-b.md — x - y"), "a-b.md");
    }

    /// The guide's loader's lookup: the verifier's reason code, then the strategy, then
    /// `default`; a text answers every retry.
    #[test]
    fn remediation_instructions_look_up_reason_code_then_strategy_then_default() {
        let map = RemediationInstructions::ByStrategy(
            [
                ("default", "Fix what failed."),
                ("deliverable_missing", " Write every deliverable. "),
                ("targeted_remediation", "Patch only the failing parts."),
                ("full_rerun", "  "),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        );
        let got = |reason: &str, strategy: &str| map.for_retry(reason, strategy);
        assert_eq!(
            got("DELIVERABLE_MISSING", "targeted_remediation").as_deref(),
            Some("Write every deliverable.")
        );
        assert_eq!(
            got("rule_failed:x", "targeted_remediation").as_deref(),
            Some("Patch only the failing parts.")
        );
        // A blank entry falls through to `default`.
        assert_eq!(got("ok", "full_rerun").as_deref(), Some("Fix what failed."));
        let text = RemediationInstructions::Text("Retry carefully.".into());
        assert_eq!(
            text.for_retry("deliverable_missing", "full_rerun")
                .as_deref(),
            Some("Retry carefully.")
        );
    }

    #[test]
    fn gate_blocking_defaults_by_type() {
        let gate = |t| Gate {
            id: None,
            gate_type: t,
            blocking: None,
            tool: None,
            metric_path: None,
            operator: None,
            value: None,
            target: None,
            pattern: None,
            expect_match: None,
            command: None,
            timeout_seconds: None,
            field: None,
        };
        // The guide's loader: a gate without `blocking` does not block, whatever its type.
        assert!(!gate(GateType::ToolMetric).is_blocking());
        assert!(!gate(GateType::VerifierField).is_blocking());
    }

    /// The guide's quick-start definition plus its iteration example deserialize as-is.
    #[test]
    fn guide_examples_deserialize() {
        let yaml = r#"
name: my-process
version: "1.0"
schema_version: 2
risk_level: medium
phase_mode: guided
phases:
  - id: rewrite
    description: Improve draft quality.
    depends_on: []
    deliverables:
      - "draft.md — rewritten draft"
    iteration:
      enabled: true
      max_attempts: 4
      strategy: targeted_remediation
      stop_on_no_improvement_attempts: 2
      max_total_runner_invocations: 6
      max_replans_after_exhaustion: 2
      replan_on_exhaustion: true
      iteration_budget: {max_wall_clock_seconds: 600, max_tokens: 100000, max_tool_calls: 20}
      gates:
        - id: score
          type: tool_metric
          blocking: true
          tool: humanize_writing
          metric_path: report.humanization_score
          operator: gte
          value: 80
        - id: tests
          type: command_exit
          command: [cargo, test]
verification:
  policy:
    mode: llm_first
    static_checks: [x]
tests:
  - id: smoke
    goal: "Analyze"
"#;
        let p: Process = serde_saphyr::from_str(yaml).expect("guide example");
        assert_eq!(p.phases[0].deliverable_filenames(), vec!["draft.md"]);
        let it = p.phases[0].iteration.as_ref().unwrap();
        assert_eq!(it.max_attempts, Some(4));
        assert!(matches!(
            it.gates[1].kind(),
            Some(GateKind::CommandExit {
                value: 0,
                operator: Operator::Eq,
                ..
            })
        ));
        assert_eq!(
            p.verification.unwrap().policy.unwrap().mode,
            Some(PolicyMode::LlmFirst)
        );
        assert_eq!(p.tests[0].mode(), TestMode::Deterministic);
        assert_eq!(p.phases[0].model_tier(), 2);
    }
}
