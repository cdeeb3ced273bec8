//! guide "Verification rules", plus `verification.policy` (guide "Process contract v2") and
//! the `passed` output-contract field (guide "Migrating v1 to v2", step 3).

use std::collections::BTreeSet;

use super::Ctx;
use crate::package::model::{Process, RuleType};
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
        } else if rule.rule_type == RuleType::Regex {
            super::check_pattern(
                ctx,
                &rule.check,
                format!("{base}.check"),
                &rules::VERIFICATION_RULE_REGEX_INVALID,
                &rules::VERIFICATION_RULE_REGEX_TOO_LARGE,
                &format!("invalid regex in verification rule {:?}", rule.name),
            );
        }
    }
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
