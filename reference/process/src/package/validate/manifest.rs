//! guide "Process test manifest": "id is required and must be unique per package; mode must
//! be deterministic or live; goal is required; timeout_seconds must be greater than zero".
//! An id also names files (`loom-process test` reads `scripts/<id>.yaml` and writes
//! `<id>.jsonl`), so it must be a safe file-name stem ([`is_safe_test_id`]).

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
        } else if !is_safe_test_id(&case.id) {
            ctx.emit(
                &rules::TESTS_ID_FORMAT,
                format!("{base}.id"),
                format!(
                    "test id {:?} is used as a file name: use lowercase letters, digits, `_`, `.` and `-`, starting with a letter or digit, without `..`",
                    case.id
                ),
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
                if pattern.is_empty() {
                    ctx.emit(
                        &rules::TESTS_ACCEPTANCE_PATTERN_INVALID,
                        format!("{base}.acceptance.verification.forbidden_patterns[{j}]"),
                        "forbidden pattern is empty: an empty regex matches every verification output, so the case could never pass",
                    );
                    continue;
                }
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

/// `^[a-z0-9][a-z0-9_.-]*$` without `..`: a file-name stem that cannot climb out of its
/// directory (`/`, `\`, `..`), hide itself (leading `.`) or differ only by case on a
/// case-insensitive file system. The guide's manifest example uses `smoke`.
pub fn is_safe_test_id(id: &str) -> bool {
    let mut bytes = id.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes.all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'.' | b'-')
        })
        && !id.contains("..")
}

#[cfg(test)]
mod tests {
    use super::is_safe_test_id;

    #[test]
    fn test_ids_are_safe_file_name_stems() {
        for ok in ["smoke", "live-check", "case_2", "v1.2", "0day", "a.b-c_d"] {
            assert!(is_safe_test_id(ok), "{ok}");
        }
        for bad in [
            "",
            ".hidden",
            "../x",
            "a/b",
            "a\\b",
            "a..b",
            "Smoke",
            "-x",
            "_x",
            "a b",
            "caf\u{e9}",
            "x..",
            "a:b",
        ] {
            assert!(!is_safe_test_id(bad), "{bad:?}");
        }
    }
}
