//! guide "Validity contract (claim and evidence rigor)": value ranges, the high/critical
//! no-weakening rule, and synthesis hardening notes.

use super::Ctx;
use crate::package::model::{Process, ValidityContract};
use crate::package::rules;
use crate::package::validity::{effective_risk, high_risk_weakenings, resolve};

pub(super) fn check(ctx: &mut Ctx<'_>, p: &Process) {
    let (risk, _) = effective_risk(p);
    let mut contracts: Vec<(String, &ValidityContract)> = Vec::new();
    if let Some(c) = &p.validity_contract {
        contracts.push(("validity_contract".into(), c));
    }
    for (i, phase) in p.phases.iter().enumerate() {
        if let Some(c) = &phase.validity_contract {
            contracts.push((format!("phases[{i}].validity_contract"), c));
        }
    }
    for (base, c) in &contracts {
        ranges(ctx, base, c);
        if risk.is_high() {
            for w in high_risk_weakenings(c) {
                ctx.emit(
                    w.rule,
                    format!("{base}.{}", w.field),
                    format!("{} (risk_level {})", w.message, risk.as_str()),
                );
            }
        }
    }
    synthesis(ctx, p);
}

fn ranges(ctx: &mut Ctx<'_>, base: &str, c: &ValidityContract) {
    let gate = c.final_gate.as_ref();
    let ratios = [
        ("min_supported_ratio", c.min_supported_ratio),
        ("max_unverified_ratio", c.max_unverified_ratio),
        (
            "final_gate.critical_claim_support_ratio",
            gate.and_then(|g| g.critical_claim_support_ratio),
        ),
    ];
    for (field, value) in ratios {
        if let Some(r) = value
            && !(0.0..=1.0).contains(&r)
        {
            ctx.emit(
                &rules::VALIDITY_RATIO_RANGE,
                format!("{base}.{field}"),
                format!("{field} {r} is outside 0..1"),
            );
        }
    }
    let temporal = gate.and_then(|g| g.temporal_consistency.as_ref());
    let counts = [
        ("max_contradicted_count", c.max_contradicted_count),
        (
            "final_gate.temporal_consistency.max_source_age_days",
            temporal.and_then(|t| t.max_source_age_days),
        ),
    ];
    for (field, value) in counts {
        if let Some(n) = value
            && n < 0
        {
            ctx.emit(
                &rules::VALIDITY_COUNT_RANGE,
                format!("{base}.{field}"),
                format!("{field} {n} is negative"),
            );
        }
    }
    // guide field table: "int (>=1)". No upper bound: a minimum above every phase's tier is
    // reported per synthesis phase (`validity.synthesis.tier_below_min`).
    if let Some(t) = gate.and_then(|g| g.synthesis_min_verification_tier)
        && t < 1
    {
        ctx.emit(
            &rules::VALIDITY_SYNTHESIS_TIER_RANGE,
            format!("{base}.final_gate.synthesis_min_verification_tier"),
            format!("synthesis_min_verification_tier {t} must be >= 1"),
        );
    }
}

/// Step 4 of the merge order forces `enforce_verified_context_only` for synthesis phases; an
/// explicit `false` there is overridden, and a synthesis phase below the resolved minimum
/// verification tier does not meet its own final gate.
fn synthesis(ctx: &mut Ctx<'_>, p: &Process) {
    for (i, phase) in p
        .phases
        .iter()
        .enumerate()
        .filter(|(_, ph)| ph.is_synthesis)
    {
        let explicit_false = phase
            .validity_contract
            .as_ref()
            .and_then(|c| c.final_gate.as_ref())
            .and_then(|g| g.enforce_verified_context_only)
            == Some(false);
        if explicit_false {
            ctx.emit(
                &rules::VALIDITY_SYNTHESIS_CONTEXT_HARDENED,
                format!("phases[{i}].validity_contract.final_gate.enforce_verified_context_only"),
                format!("phase {:?} is a synthesis phase: enforce_verified_context_only is forced to true", phase.id),
            );
        }
        let resolved = resolve(p, Some(phase));
        if phase.verification_tier() < resolved.synthesis_min_verification_tier {
            let path = if phase.verification_tier.is_some() {
                format!("phases[{i}].verification_tier")
            } else {
                format!("phases[{i}]")
            };
            ctx.emit(
                &rules::VALIDITY_SYNTHESIS_TIER_BELOW_MIN,
                path,
                format!(
                    "synthesis phase {:?} has verification_tier {} below synthesis_min_verification_tier {}",
                    phase.id,
                    phase.verification_tier(),
                    resolved.synthesis_min_verification_tier
                ),
            );
        }
    }
}
