//! Issue 35, item 4 (validation): gate operators the guide's loader does not evaluate, a
//! `depends_on` key written without a value, and empty patterns are errors naming the field,
//! the rule and the guide section.

use loom_process::package::report::Diagnostic;
use loom_process::package::validate_str;

const HEAD: &str = "name: fidelity\nschema_version: 2\nrisk_level: low\n";

/// A phase with an enabled loop whose second gate is `gate` (flow mapping).
fn with_gate(gate: &str) -> String {
    format!(
        "{HEAD}phases:\n  - id: draft\n    description: Write.\n    depends_on: []\n    deliverables: [draft.md]\n    iteration:\n      enabled: true\n      max_attempts: 3\n      stop_on_no_improvement_attempts: 1\n      max_total_runner_invocations: 3\n      iteration_budget: {{max_wall_clock_seconds: 60, max_tokens: 1000, max_tool_calls: 5}}\n      gates:\n        - {{id: clean, type: artifact_regex, blocking: true, target: deliverables, pattern: TBD, expect_match: false}}\n        - {gate}\n"
    )
}

fn errors(yaml: &str) -> Vec<Diagnostic> {
    validate_str(yaml).errors().cloned().collect()
}

fn only_error(yaml: &str) -> Diagnostic {
    let e = errors(yaml);
    assert_eq!(e.len(), 1, "{yaml}\n{e:#?}");
    e.into_iter().next().unwrap()
}

#[test]
fn the_five_operators_of_the_guides_loader_are_accepted() {
    for (op, value) in [
        ("gte", "80"),
        ("lte", "4"),
        ("eq", "0"),
        ("contains", "indemnification"),
        ("not_contains", "\"governing law\""),
    ] {
        let yaml = with_gate(&format!(
            "{{id: score, type: tool_metric, blocking: true, tool: t, metric_path: m, operator: {op}, value: {value}}}"
        ));
        assert!(errors(&yaml).is_empty(), "{op}: {:#?}", errors(&yaml));
    }
}

/// `gt`, `lt`, `ne` (and its alias `neq`) were accepted silently; the guide's loader cannot
/// evaluate them (an unevaluable blocking gate never passes there).
#[test]
fn other_operators_are_errors_naming_the_allowed_values_and_the_portable_spelling() {
    for (op, hint) in [
        ("gt", "`gte` with the next value"),
        ("GT", "`gte` with the next value"),
        ("lt", "`lte` with the previous value"),
        ("ne", "there is no not-equal operator"),
        ("neq", "there is no not-equal operator"),
        ("between", "one of gte, lte, eq, contains, not_contains"),
    ] {
        let d = only_error(&with_gate(&format!(
            "{{id: score, type: tool_metric, blocking: true, tool: t, metric_path: m, operator: {op}, value: 79}}"
        )));
        assert_eq!(
            (d.rule, d.path.as_str(), d.section),
            (
                "iteration.gate.operator.value",
                "phases[0].iteration.gates[1].operator",
                "Phase iteration loops"
            ),
            "{op}"
        );
        assert!(
            d.message.contains(&format!(
                "`{op}` is not an operator the guide's loader evaluates"
            )),
            "{op}: {}",
            d.message
        );
        assert!(
            d.message.contains("gte, lte, eq, contains, not_contains"),
            "{}",
            d.message
        );
        assert!(d.message.contains(hint), "{op}: {}", d.message);
        let text = d.render();
        assert!(
            text.contains("iteration.gate.operator.value")
                && text.contains("guide \"Phase iteration loops\""),
            "{text}"
        );
    }
    // command_exit and verifier_field gates read the same operator list.
    let d = only_error(&with_gate(
        "{id: tests, type: command_exit, blocking: true, command: [pytest], operator: ne, value: 1}",
    ));
    assert_eq!(d.rule, "iteration.gate.operator.value");
}

#[test]
fn depends_on_without_a_value_is_an_error_and_an_empty_list_is_a_root_phase() {
    for written in ["depends_on:", "depends_on: ~", "depends_on: null"] {
        let yaml = format!(
            "{HEAD}phases:\n  - id: draft\n    description: Write.\n    depends_on: []\n  - id: review\n    description: Review.\n    {written}\n"
        );
        let d = only_error(&yaml);
        assert_eq!(
            (d.rule, d.path.as_str(), d.section),
            ("phases.field.required", "phases[1].depends_on", "Phases"),
            "{written}"
        );
        assert!(
            d.message.contains("`depends_on` has no value") && d.message.contains("depends_on: []"),
            "{}",
            d.message
        );
        // Located on the depends_on line, at (or right after) the key.
        assert_eq!(d.line, 10, "{written}");
        assert!(d.column >= 15, "{written}: {d:?}");
    }
    let explicit =
        format!("{HEAD}phases:\n  - id: draft\n    description: Write.\n    depends_on: []\n");
    assert!(validate_str(&explicit).diagnostics.is_empty());
    // A missing key stays a warning (the guide's own iteration example omits it).
    let missing = format!("{HEAD}phases:\n  - id: draft\n    description: Write.\n");
    let r = validate_str(&missing);
    assert!(r.is_valid());
    let w: Vec<_> = r.warnings().map(|d| d.rule).collect();
    assert_eq!(w, ["phases.depends_on.implicit"]);
}

#[test]
fn an_empty_gate_pattern_is_an_error_naming_the_field() {
    for (expect, says) in [("true", "always pass"), ("false", "always fail")] {
        let d = only_error(&with_gate(&format!(
            "{{id: sources, type: artifact_regex, blocking: true, target: deliverables, pattern: \"\", expect_match: {expect}}}"
        )));
        assert_eq!(
            (d.rule, d.path.as_str(), d.section),
            (
                "iteration.gate.field.required",
                "phases[0].iteration.gates[1].pattern",
                "Phase iteration loops"
            )
        );
        assert!(
            d.message.contains("`pattern` is empty") && d.message.contains(says),
            "{}",
            d.message
        );
    }
    // A pattern of one space is a pattern (it matches a space).
    assert!(
        errors(&with_gate(
            "{id: sources, type: artifact_regex, blocking: true, pattern: \" \"}"
        ))
        .is_empty()
    );
}

#[test]
fn empty_regexes_elsewhere_are_errors_too() {
    let rule = format!(
        "{HEAD}phases:\n  - {{id: draft, description: Write., depends_on: []}}\nverification:\n  rules:\n    - {{name: r, check: \"\", type: regex, severity: error}}\n"
    );
    let d = only_error(&rule);
    assert_eq!(
        (d.rule, d.path.as_str()),
        (
            "verification.rule.field.required",
            "verification.rules[0].check"
        )
    );
    let manifest = format!(
        "{HEAD}phases:\n  - {{id: draft, description: Write., depends_on: []}}\ntests:\n  - id: smoke\n    goal: g\n    acceptance:\n      verification:\n        forbidden_patterns: [x, \"\"]\n"
    );
    let d = only_error(&manifest);
    assert_eq!(
        (d.rule, d.path.as_str(), d.section),
        (
            "tests.acceptance.pattern.invalid",
            "tests[0].acceptance.verification.forbidden_patterns[1]",
            "Process test manifest"
        )
    );
    assert!(d.message.contains("empty"), "{}", d.message);
}
