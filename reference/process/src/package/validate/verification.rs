//! guide "Verification rules", plus `verification.policy` (guide "Process contract v2") and
//! the `passed` output-contract field (guide "Migrating v1 to v2", step 3).

use std::collections::BTreeSet;

use super::Ctx;
use crate::package::helpers;
use crate::package::model::{Process, RuleType, Verification, VerificationRule};
use crate::package::rules;

pub(super) fn check(ctx: &mut Ctx<'_>, p: &Process) {
    let Some(v) = &p.verification else { return };
    let mut names = BTreeSet::new();
    for (i, rule) in v.rules.iter().enumerate() {
        let base = format!("verification.rules[{i}]");
        if rule.name.trim().is_empty() {
            ctx.emit(
                &rules::VERIFICATION_RULE_FIELD_REQUIRED,
                format!("{base}.name"),
                "rule `name` is empty",
            );
        } else if !names.insert(rule.name.as_str()) {
            ctx.emit(
                &rules::VERIFICATION_RULE_NAME_DUPLICATE,
                format!("{base}.name"),
                format!("rule name {:?} is used twice", rule.name),
            );
        }
        if rule.check.trim().is_empty() {
            ctx.emit(
                &rules::VERIFICATION_RULE_FIELD_REQUIRED,
                format!("{base}.check"),
                "rule `check` is empty",
            );
        } else if rule.rule_type() == RuleType::Regex {
            super::check_pattern(
                ctx,
                &rule.check,
                format!("{base}.check"),
                &rules::VERIFICATION_RULE_REGEX_INVALID,
                &rules::VERIFICATION_RULE_REGEX_TOO_LARGE,
                &format!("invalid regex in verification rule {:?}", rule.name),
            );
        }
        scoping(ctx, p, &base, rule);
    }
    semantic_checks(ctx, v);
    let contract = v.policy.as_ref().and_then(|p| p.output_contract.as_ref());
    if let Some(c) = contract
        && !c.required_fields.iter().any(|f| f == "passed")
    {
        ctx.emit(
            &rules::VERIFICATION_OUTPUT_CONTRACT_PASSED,
            "verification.policy.output_contract.required_fields",
            "verifier output_contract.required_fields must include `passed`",
        );
    }
}

/// The loader's rule scoping checks: `applies_to_phases` names existing phases (or `"*"`),
/// `min_count` is a count.
fn scoping(ctx: &mut Ctx<'_>, p: &Process, base: &str, rule: &VerificationRule) {
    if let Some(list) = &rule.applies_to_phases {
        let many = matches!(list, crate::package::model::PhaseList::Many(_));
        for (j, id) in list.ids().into_iter().enumerate() {
            if id != "*" && p.phase(id).is_none() {
                let path = if many {
                    format!("{base}.applies_to_phases[{j}]")
                } else {
                    format!("{base}.applies_to_phases")
                };
                ctx.emit(
                    &rules::VERIFICATION_RULE_APPLIES_TO_UNKNOWN,
                    path,
                    format!(
                        "rule {:?}: applies_to_phases names phase {id:?}, which does not exist (use \"*\" for all phases)",
                        rule.name
                    ),
                );
            }
        }
    }
    if let Some(n) = rule.min_count
        && n < 0
    {
        ctx.emit(
            &rules::VERIFICATION_RULE_MIN_COUNT_RANGE,
            format!("{base}.min_count"),
            format!("rule {:?}: min_count {n} must be >= 0", rule.name),
        );
    }
}

/// `verification.policy.semantic_checks`: a named helper must be registered and support a
/// declared (known) capability, as the guide's loader checks.
fn semantic_checks(ctx: &mut Ctx<'_>, v: &Verification) {
    let Some(policy) = &v.policy else { return };
    for (i, c) in policy.semantic_checks.iter().enumerate() {
        let base = format!("verification.policy.semantic_checks[{i}]");
        let Some(helper) = c.helper.as_deref().filter(|h| !h.trim().is_empty()) else {
            continue;
        };
        match helpers::lookup(helper) {
            None => ctx.emit(
                &rules::SEMANTIC_CHECK_HELPER_UNREGISTERED,
                format!("{base}.helper"),
                format!(
                    "verification helper {helper:?} is not registered (registered: {})",
                    helpers::BUILTIN
                        .iter()
                        .map(|h| h.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            Some(spec) => {
                let cap = c
                    .capability
                    .as_deref()
                    .map(|c| c.trim().to_lowercase())
                    .filter(|c| helpers::CAPABILITIES.contains(&c.as_str()));
                if let Some(cap) = cap
                    && !spec.capabilities.contains(&cap.as_str())
                {
                    ctx.emit(
                        &rules::SEMANTIC_CHECK_HELPER_CAPABILITY,
                        format!("{base}.capability"),
                        format!(
                            "helper {:?} does not support capability {cap:?}; supported: {}",
                            spec.name,
                            spec.capabilities.join(", ")
                        ),
                    );
                }
            }
        }
    }
}
