//! guide "Process test manifest": "id is required and must be unique per package; mode must
//! be deterministic or live; goal is required; timeout_seconds must be greater than zero".

use std::collections::BTreeMap;

use super::Ctx;
use crate::package::model::Process;
use crate::package::rules;

pub(super) fn check(ctx: &mut Ctx<'_>, p: &Process) {
    let mut first: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, case) in p.tests.iter().enumerate() {
        let base = format!("tests[{i}]");
        if case.id.trim().is_empty() {
            ctx.emit(
                &rules::TESTS_ID_REQUIRED,
                format!("{base}.id"),
                "test `id` is empty",
            );
        } else if let Some(j) = first.get(case.id.as_str()) {
            ctx.emit(
                &rules::TESTS_ID_DUPLICATE,
                format!("{base}.id"),
                format!("test id {:?} is already used by tests[{j}]", case.id),
            );
        } else {
            first.insert(&case.id, i);
        }
        if case.goal.trim().is_empty() {
            ctx.emit(
                &rules::TESTS_GOAL_REQUIRED,
                format!("{base}.goal"),
                "test `goal` is empty",
            );
        }
        if let Some(t) = case.timeout_seconds
            && t <= 0
        {
            ctx.emit(
                &rules::TESTS_TIMEOUT_POSITIVE,
                format!("{base}.timeout_seconds"),
                format!("timeout_seconds must be greater than zero, found {t}"),
            );
        }
        let Some(acceptance) = &case.acceptance else {
            continue;
        };
        if let Some(phases) = &acceptance.phases {
            for (j, id) in phases.must_include.iter().enumerate() {
                if p.phase(id).is_none() {
                    ctx.emit(
                        &rules::TESTS_ACCEPTANCE_UNKNOWN_PHASE,
                        format!("{base}.acceptance.phases.must_include[{j}]"),
                        format!("phase {id:?} does not exist, so the case cannot pass"),
                    );
                }
            }
        }
        if let Some(v) = &acceptance.verification {
            for (j, pattern) in v.forbidden_patterns.iter().enumerate() {
                super::check_pattern(
                    ctx,
                    pattern,
                    format!("{base}.acceptance.verification.forbidden_patterns[{j}]"),
                    &rules::TESTS_ACCEPTANCE_PATTERN_INVALID,
                    &rules::TESTS_ACCEPTANCE_PATTERN_TOO_LARGE,
                    "invalid regex",
                );
            }
        }
    }
}
