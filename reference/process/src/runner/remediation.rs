//! Remediation (guide "Process contract v2": `verification.remediation` "strategy metadata,
//! retry budget, critical-path behavior"; `prompt_contracts.remediation_instructions`,
//! "Migrating v1 to v2" step 4), as this runner applies it:
//!
//! - **Which strategy a retry uses**: the `remediation_mode` of the first failing blocking
//!   rule that names one; else the phase's `iteration.strategy` (`targeted_remediation` when
//!   iterating without one); else `verification.remediation.default_strategy`; else
//!   `default`.
//! - **What the retry is told**: the failing checks' reasons, preceded by the remediation
//!   instructions — a text, or the mapping's entry for the attempt's verifier `reason_code`
//!   (`deliverable_missing`, `rule_failed:<rule name>`), else for the strategy (both
//!   lower-cased), else its `default` (the guide's loader's lookup order).
//! - **Whether to retry at all**: a phase without an iteration loop gets
//!   `verification.remediation.retry_budget.max_attempts` attempts (default 1: no retry); when
//!   every blocking failure comes from rules with `remediation_mode: none`, nothing is retried.
//! - **Hard failures** (for `critical_path_behavior`): a failing blocking deliverable,
//!   finalizer, gate or helper check, a rule with `failure_class: hard_integrity` or
//!   `enforcement: hard`, or an attempt stopped by a model error or write conflict. Only the
//!   other (semantic) failures — `llm` rules, model-judged semantic checks, claim validity —
//!   may be queued as a follow-up instead of blocking the process.

use super::checks::Check;
use crate::package::{
    Enforcement, FailureClass, IterationStrategy, Phase, Process, RemediationMode, VerificationRule,
};

/// The rule a rule check reports on.
fn rule_of<'a>(p: &'a Process, c: &Check) -> Option<&'a VerificationRule> {
    if c.kind != "rule" {
        return None;
    }
    p.verification
        .as_ref()?
        .rules
        .iter()
        .find(|r| r.name == c.name)
}

/// The strategy name a retry after `failed` uses (see the module docs).
pub fn strategy(p: &Process, ph: &Phase, failed: &[&Check]) -> String {
    if let Some(mode) = failed
        .iter()
        .filter_map(|c| rule_of(p, c))
        .filter_map(|r| r.remediation_mode)
        .find(|m| *m != RemediationMode::None)
    {
        return mode.as_str().to_owned();
    }
    if ph.iterates() {
        let s = ph
            .iteration
            .as_ref()
            .and_then(|i| i.strategy)
            .unwrap_or(IterationStrategy::TargetedRemediation);
        return match s {
            IterationStrategy::TargetedRemediation => "targeted_remediation".into(),
            IterationStrategy::FullRerun => "full_rerun".into(),
        };
    }
    p.verification
        .as_ref()
        .and_then(|v| v.remediation.as_ref())
        .and_then(|r| r.default_strategy.clone())
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "default".into())
}

/// The remediation instructions for a retry after the verifier reported `reason_code`
/// under `strategy`, if the process has any (see the module docs).
pub fn instructions(p: &Process, reason_code: &str, strategy: &str) -> Option<String> {
    p.prompt_contracts
        .as_ref()?
        .remediation_instructions
        .as_ref()?
        .for_retry(reason_code, strategy)
}

/// Attempts of a phase without an iteration loop (`retry_budget.max_attempts`, default 1).
pub fn retry_attempts(p: &Process) -> u32 {
    p.verification
        .as_ref()
        .and_then(|v| v.remediation.as_ref())
        .and_then(|r| r.retry_budget.as_ref())
        .and_then(|b| b.max_attempts)
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(1)
        .clamp(1, 6)
}

/// True when every failure is a rule that asks for no remediation (nothing to retry).
pub fn nothing_to_retry(p: &Process, failed: &[&Check]) -> bool {
    !failed.is_empty()
        && failed.iter().all(|c| {
            rule_of(p, c).is_some_and(|r| r.remediation_mode == Some(RemediationMode::None))
        })
}

/// Whether a failing blocking check is a hard-invariant failure (see the module docs).
pub fn is_hard(p: &Process, c: &Check) -> bool {
    match c.kind {
        "rule" => rule_of(p, c).is_none_or(|r| {
            r.failure_class == Some(FailureClass::HardIntegrity)
                || r.enforcement == Some(Enforcement::Hard)
                || r.rule_type() == crate::package::RuleType::Regex && r.failure_class.is_none()
        }),
        "semantic" => c.result.evidence.iter().any(|e| e.starts_with("helper:")),
        "validity" => false,
        _ => true,
    }
}
