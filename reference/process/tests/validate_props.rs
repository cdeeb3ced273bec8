//! Properties: the validator never panics, every diagnostic names a rule from the table with
//! that rule's severity and section, and the same text always gives the same report.

use loom_process::package::rules;
use loom_process::package::validate_str;
use proptest::prelude::*;

const SEED: &str = include_str!("../examples/research-report/process.yaml");

fn check(text: &str) {
    let report = validate_str(text);
    for d in &report.diagnostics {
        let rule = rules::by_id(d.rule).unwrap_or_else(|| panic!("unknown rule {}", d.rule));
        assert_eq!(d.severity, rule.level);
        assert_eq!(d.section, rule.section);
    }
    assert_eq!(report, validate_str(text));
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        check(&text);
    }

    /// Deleting or duplicating one line of a real package keeps the validator well-behaved.
    #[test]
    fn line_edits_of_a_real_package_never_panic(line in 0usize..260, dup in any::<bool>()) {
        let mut lines: Vec<&str> = SEED.lines().collect();
        let i = line % lines.len();
        if dup { lines.insert(i, lines[i]); } else { lines.remove(i); }
        check(&lines.join("\n"));
    }

    /// Replacing one scalar with another type is a located diagnostic, never a panic.
    #[test]
    fn scalar_swaps_never_panic(line in 0usize..260, value in prop_oneof![
        Just("-1"), Just("0"), Just("7"), Just("1.5"), Just("true"), Just("[]"), Just("{}"), Just("\"\""), Just("~")
    ]) {
        let lines: Vec<String> = SEED.lines().map(str::to_owned).collect();
        let i = line % lines.len();
        let mut edited = lines.clone();
        if let Some((key, _)) = lines[i].split_once(": ") {
            edited[i] = format!("{key}: {value}");
        }
        check(&edited.join("\n"));
    }
}
