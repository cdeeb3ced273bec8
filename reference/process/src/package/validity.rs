//! Validity contract resolution (guide "Validity contract (claim and evidence rigor)" and
//! "Risk level and rigor floors"): risk default floor → process-level contract → phase-level
//! contract → synthesis hardening. The validator uses the floors to reject weakened
//! high/critical contracts; the runner uses [`resolve`] for each phase's effective policy.

use super::model::{FinalGate, Phase, Process, PruneMode, RiskLevel, ValidityContract};
use super::rules::{self, Level, Rule};

/// Name/tag tokens from which Loom "may infer high-risk intent" when `risk_level` is omitted
/// (guide "Risk level and rigor floors": "for example investment, financial, medical, legal,
/// compliance"). The guide's examples are a sample; these are the 11 tokens its loader uses
/// (`_HIGH_RISK_INTENT_TOKENS`), matched whole after splitting the lower-cased name and tags
/// on non-alphanumerics.
pub const HIGH_RISK_TOKENS: &[&str] = &[
    "investment",
    "investing",
    "finance",
    "financial",
    "medical",
    "medicine",
    "healthcare",
    "health",
    "legal",
    "law",
    "compliance",
];

/// Where the effective risk level came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RiskSource {
    /// `risk_level` was set.
    Explicit,
    /// Omitted; inferred high from a name or tag token.
    Inferred,
    /// Omitted and nothing to infer from: `medium` (the guide gives no default; low and
    /// medium share the floor profile, so the choice does not change any floor).
    Default,
}

/// The effective risk level of a process and where it came from.
pub fn effective_risk(process: &Process) -> (RiskLevel, RiskSource) {
    if let Some(level) = process.risk_level {
        return (level, RiskSource::Explicit);
    }
    let tokens = process
        .name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .chain(
            process
                .tags
                .iter()
                .flat_map(|t| t.split(|c: char| !c.is_ascii_alphanumeric())),
        )
        .map(str::to_ascii_lowercase);
    for token in tokens {
        if HIGH_RISK_TOKENS.contains(&token.as_str()) {
            return (RiskLevel::High, RiskSource::Inferred);
        }
    }
    (RiskLevel::Medium, RiskSource::Default)
}

/// A fully resolved validity policy for one phase.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedValidity {
    /// Master switch.
    pub enabled: bool,
    /// Claim extraction switch.
    pub claim_extraction_enabled: bool,
    /// Claim categories with stricter floors.
    pub critical_claim_types: Vec<String>,
    /// Minimum supported/extracted ratio.
    pub min_supported_ratio: f64,
    /// Maximum unresolved/extracted ratio.
    pub max_unverified_ratio: f64,
    /// Maximum contradicted claims.
    pub max_contradicted_count: i64,
    /// Prune behaviour.
    pub prune_mode: PruneMode,
    /// Fact checker required before synthesis passes.
    pub require_fact_checker_for_synthesis: bool,
    /// Exclude unresolved claims from synthesis input.
    pub enforce_verified_context_only: bool,
    /// Minimum verification tier for synthesis phases.
    pub synthesis_min_verification_tier: i64,
    /// Required support ratio for critical claim types.
    pub critical_claim_support_ratio: f64,
    /// Temporal gate switch.
    pub temporal_enabled: bool,
    /// Require as-of alignment.
    pub require_as_of_alignment: bool,
    /// Cross-claim date conflict check.
    pub enforce_cross_claim_date_conflict_check: bool,
    /// Stale-source age limit in days (0 = none).
    pub max_source_age_days: i64,
    /// Explicit reporting date (`""` = none).
    pub as_of: String,
}

impl ResolvedValidity {
    /// Step 1, the risk-based default floor (guide "Risk level and rigor floors" table).
    ///
    /// Only the ratios and the temporal gate are given by the floor table. For the other
    /// fields the guide gives no default; we take the values its "Suggested policy baselines"
    /// and canonical structure use: pipeline and claim extraction on, `max_contradicted_count:
    /// 0`, `prune_mode: rewrite_uncertainty` ("generally safer"), `synthesis_min_verification_tier:
    /// 2` and `critical_claim_support_ratio: 1.0`, no fact-checker requirement, and
    /// `enforce_verified_context_only: false` (step 4 turns it on for synthesis phases).
    pub fn floor(risk: RiskLevel) -> Self {
        let high = risk.is_high();
        ResolvedValidity {
            enabled: true,
            claim_extraction_enabled: true,
            critical_claim_types: Vec::new(),
            min_supported_ratio: if high { 0.8 } else { 0.65 },
            max_unverified_ratio: if high { 0.2 } else { 0.35 },
            max_contradicted_count: 0,
            prune_mode: PruneMode::RewriteUncertainty,
            require_fact_checker_for_synthesis: false,
            enforce_verified_context_only: false,
            synthesis_min_verification_tier: 2,
            critical_claim_support_ratio: 1.0,
            temporal_enabled: high,
            require_as_of_alignment: high,
            enforce_cross_claim_date_conflict_check: high,
            max_source_age_days: 0,
            as_of: String::new(),
        }
    }

    /// Steps 2 and 3: overlay the fields an explicit contract sets.
    pub fn merge(&mut self, c: &ValidityContract) {
        set(&mut self.enabled, c.enabled);
        if let Some(ce) = &c.claim_extraction {
            set(&mut self.claim_extraction_enabled, ce.enabled);
        }
        if let Some(types) = &c.critical_claim_types {
            self.critical_claim_types = types.clone();
        }
        set(&mut self.min_supported_ratio, c.min_supported_ratio);
        set(&mut self.max_unverified_ratio, c.max_unverified_ratio);
        set(&mut self.max_contradicted_count, c.max_contradicted_count);
        set(&mut self.prune_mode, c.prune_mode);
        set(
            &mut self.require_fact_checker_for_synthesis,
            c.require_fact_checker_for_synthesis,
        );
        if let Some(g) = &c.final_gate {
            self.merge_final_gate(g);
        }
    }

    fn merge_final_gate(&mut self, g: &FinalGate) {
        set(
            &mut self.enforce_verified_context_only,
            g.enforce_verified_context_only,
        );
        set(
            &mut self.synthesis_min_verification_tier,
            g.synthesis_min_verification_tier,
        );
        set(
            &mut self.critical_claim_support_ratio,
            g.critical_claim_support_ratio,
        );
        if let Some(t) = &g.temporal_consistency {
            set(&mut self.temporal_enabled, t.enabled);
            set(&mut self.require_as_of_alignment, t.require_as_of_alignment);
            set(
                &mut self.enforce_cross_claim_date_conflict_check,
                t.enforce_cross_claim_date_conflict_check,
            );
            set(&mut self.max_source_age_days, t.max_source_age_days);
            if let Some(as_of) = &t.as_of {
                self.as_of = as_of.clone();
            }
        }
    }
}

fn set<T: Clone>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

/// The effective validity policy of `phase` (or of the process when `phase` is `None`):
/// risk floor, then the process contract, then the phase contract, then synthesis hardening
/// (`enforce_verified_context_only = true` for synthesis phases).
pub fn resolve(process: &Process, phase: Option<&Phase>) -> ResolvedValidity {
    let (risk, _) = effective_risk(process);
    let mut v = ResolvedValidity::floor(risk);
    if let Some(c) = &process.validity_contract {
        v.merge(c);
    }
    if let Some(phase) = phase {
        if let Some(c) = &phase.validity_contract {
            v.merge(c);
        }
        if phase.is_synthesis {
            v.enforce_verified_context_only = true;
        }
    }
    v
}

/// One way an explicit high/critical contract is looser than the high/critical floor.
#[derive(Debug, Clone, PartialEq)]
pub struct Weakening {
    /// Path of the field inside the contract, e.g. `max_contradicted_count`.
    pub field: &'static str,
    /// What the override does and what the floor requires.
    pub message: String,
    /// The rule it breaks: [`rules::VALIDITY_HIGH_RISK_WEAKENED`] (error) for the guide's
    /// explicit rejection, [`rules::VALIDITY_HIGH_RISK_BELOW_BASELINE`] (warning) otherwise.
    pub rule: &'static Rule,
}

impl Weakening {
    /// True when the weakening rejects the definition.
    pub fn is_error(&self) -> bool {
        self.rule.level == Level::Error
    }
}

/// What an explicit contract loosens relative to the high/critical floor.
///
/// guide "Validity contract (claim and evidence rigor)": "High-risk and critical processes
/// cannot weaken core safety constraints in explicit overrides (for example
/// max_contradicted_count > 0 is rejected)". The guide gives one example and does not list
/// the set; its loader (`ProcessLoader._validate_high_risk_validity_override`) rejects nine
/// explicit values, and that set is the error here: `enabled`, `claim_extraction.enabled`,
/// `require_fact_checker_for_synthesis`, `final_gate.enforce_verified_context_only` and the
/// three `final_gate.temporal_consistency` switches written `false`, a
/// `max_contradicted_count` above 0 and a `final_gate.synthesis_min_verification_tier` below 2. The remaining fields of the
/// guide's "Suggested policy baselines" (min_supported_ratio 0.8, max_unverified_ratio 0.2,
/// critical_claim_support_ratio 1.0) are "starting thresholds" the loader does not reject:
/// a warning.
pub fn high_risk_weakenings(c: &ValidityContract) -> Vec<Weakening> {
    let floor = ResolvedValidity::floor(RiskLevel::High);
    let mut out = Vec::new();
    let mut push = |field: &'static str, rule: &'static Rule, message: String| {
        out.push(Weakening {
            field,
            message,
            rule,
        })
    };
    let warn = &rules::VALIDITY_HIGH_RISK_BELOW_BASELINE;
    let weakened = &rules::VALIDITY_HIGH_RISK_WEAKENED;
    if let Some(n) = c.max_contradicted_count.filter(|n| *n > 0) {
        push(
            "max_contradicted_count",
            weakened,
            format!("max_contradicted_count {n} > 0 is rejected for high/critical risk"),
        );
    }
    if let Some(r) = c
        .min_supported_ratio
        .filter(|r| *r < floor.min_supported_ratio)
    {
        push(
            "min_supported_ratio",
            warn,
            format!("min_supported_ratio {r} is below the high/critical baseline 0.8"),
        );
    }
    if let Some(r) = c
        .max_unverified_ratio
        .filter(|r| *r > floor.max_unverified_ratio)
    {
        push(
            "max_unverified_ratio",
            warn,
            format!("max_unverified_ratio {r} is above the high/critical baseline 0.2"),
        );
    }
    let off = |v: Option<bool>| v == Some(false);
    if off(c.enabled) {
        push(
            "enabled",
            weakened,
            "the validity pipeline is switched off for a high/critical process".into(),
        );
    }
    if off(c.claim_extraction.as_ref().and_then(|e| e.enabled)) {
        push(
            "claim_extraction.enabled",
            weakened,
            "claim extraction is switched off for a high/critical process".into(),
        );
    }
    if off(c.require_fact_checker_for_synthesis) {
        push(
            "require_fact_checker_for_synthesis",
            weakened,
            "require_fact_checker_for_synthesis is false; the high/critical floor requires the fact checker before synthesis".into(),
        );
    }
    let Some(gate) = &c.final_gate else {
        return out;
    };
    if off(gate.enforce_verified_context_only) {
        push(
            "final_gate.enforce_verified_context_only",
            weakened,
            "final_gate.enforce_verified_context_only is false; the final-synthesis baseline is true".into(),
        );
    }
    if let Some(t) = gate
        .synthesis_min_verification_tier
        .filter(|t| *t < floor.synthesis_min_verification_tier)
    {
        push(
            "final_gate.synthesis_min_verification_tier",
            weakened,
            format!(
                "final_gate.synthesis_min_verification_tier {t} is below the final-synthesis baseline 2"
            ),
        );
    }
    if let Some(r) = gate
        .critical_claim_support_ratio
        .filter(|r| *r < floor.critical_claim_support_ratio)
    {
        push(
            "final_gate.critical_claim_support_ratio",
            warn,
            format!(
                "final_gate.critical_claim_support_ratio {r} is below the high/critical final-synthesis baseline 1.0"
            ),
        );
    }
    if let Some(t) = &gate.temporal_consistency {
        let fields = [
            ("final_gate.temporal_consistency.enabled", t.enabled),
            (
                "final_gate.temporal_consistency.require_as_of_alignment",
                t.require_as_of_alignment,
            ),
            (
                "final_gate.temporal_consistency.enforce_cross_claim_date_conflict_check",
                t.enforce_cross_claim_date_conflict_check,
            ),
        ];
        for (field, value) in fields {
            if off(value) {
                push(
                    field,
                    weakened,
                    format!(
                        "{field} is false; the high/critical baseline enables the temporal gate with as-of and cross-claim checks"
                    ),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::package::model::{ClaimExtraction, FinalGate};

    fn process(yaml: &str) -> Process {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn floors_follow_the_risk_table() {
        let low = ResolvedValidity::floor(RiskLevel::Low);
        assert_eq!(
            (low.min_supported_ratio, low.max_unverified_ratio),
            (0.65, 0.35)
        );
        assert!(!low.temporal_enabled);
        let crit = ResolvedValidity::floor(RiskLevel::Critical);
        assert_eq!(
            (crit.min_supported_ratio, crit.max_unverified_ratio),
            (0.8, 0.2)
        );
        assert!(crit.temporal_enabled && crit.require_as_of_alignment);
        assert!(crit.enforce_cross_claim_date_conflict_check);
    }

    #[test]
    fn merge_order_is_floor_process_phase_then_synthesis_hardening() {
        let p = process(
            "name: x\nrisk_level: low\nvalidity_contract:\n  min_supported_ratio: 0.7\n  max_unverified_ratio: 0.3\n  final_gate: {enforce_verified_context_only: false}\nphases:\n  - id: s\n    description: d\n    depends_on: []\n    is_synthesis: true\n    validity_contract: {min_supported_ratio: 0.9}\n",
        );
        let top = resolve(&p, None);
        assert_eq!(top.min_supported_ratio, 0.7);
        assert!(!top.enforce_verified_context_only);
        let s = resolve(&p, Some(&p.phases[0]));
        assert_eq!(s.min_supported_ratio, 0.9);
        assert_eq!(s.max_unverified_ratio, 0.3);
        assert!(s.enforce_verified_context_only);
    }

    #[test]
    fn risk_is_inferred_from_name_and_tag_tokens_only_when_omitted() {
        assert_eq!(
            effective_risk(&process("name: financial-review\n")),
            (RiskLevel::High, RiskSource::Inferred)
        );
        assert_eq!(
            effective_risk(&process("name: x\ntags: [Legal]\n")),
            (RiskLevel::High, RiskSource::Inferred)
        );
        assert_eq!(
            effective_risk(&process("name: financialish\n")),
            (RiskLevel::Medium, RiskSource::Default)
        );
        assert_eq!(
            effective_risk(&process("name: medical-notes\nrisk_level: low\n")),
            (RiskLevel::Low, RiskSource::Explicit)
        );
    }

    #[test]
    fn weakenings_name_each_core_field() {
        let c = ValidityContract {
            enabled: Some(false),
            claim_extraction: Some(ClaimExtraction {
                enabled: Some(false),
            }),
            min_supported_ratio: Some(0.79),
            max_unverified_ratio: Some(0.2),
            max_contradicted_count: Some(1),
            final_gate: Some(FinalGate::default()),
            ..ValidityContract::default()
        };
        let fields: Vec<_> = high_risk_weakenings(&c)
            .iter()
            .map(|w| (w.field, w.is_error()))
            .collect();
        assert_eq!(
            fields,
            [
                ("max_contradicted_count", true),
                ("min_supported_ratio", false),
                ("enabled", true),
                ("claim_extraction.enabled", true)
            ]
        );
        let gate = ValidityContract {
            final_gate: Some(FinalGate {
                enforce_verified_context_only: Some(false),
                synthesis_min_verification_tier: Some(1),
                critical_claim_support_ratio: Some(0.9),
                temporal_consistency: None,
            }),
            ..ValidityContract::default()
        };
        let fields: Vec<_> = high_risk_weakenings(&gate)
            .iter()
            .map(|w| (w.field, w.is_error()))
            .collect();
        assert_eq!(
            fields,
            [
                ("final_gate.enforce_verified_context_only", true),
                ("final_gate.synthesis_min_verification_tier", true),
                ("final_gate.critical_claim_support_ratio", false)
            ]
        );
    }
}
