//! `loom-process validate | rules | review`: output format and exit codes (0 valid, 1 invalid,
//! 2 usage/IO).

use std::path::Path;
use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_loom-process"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn a_valid_package_exits_0() {
    let (code, out) = run(&["validate", "examples/research-report"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("valid (0 errors, 0 warnings)\n"), "{out}");
}

#[test]
fn warnings_do_not_fail_validation() {
    let (code, out) = run(&["validate", "examples/legacy-notes/process.yaml"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("warning[schema_version.legacy_v1] schema_version (line 4, col 17): "),
        "{out}"
    );
}

#[test]
fn an_invalid_file_exits_1_with_rule_path_position_and_section() {
    let (code, out) = run(&["validate", "examples/invalid/unknown-dependency.yaml"]);
    assert_eq!(code, 1);
    assert!(
        out.starts_with("error[phases.depends_on.unknown] phases[1].depends_on[0] (line 11, col 18): unknown dependency: phase \"draftt\" does not exist (guide \"Phases\")\n"),
        "{out}"
    );
}

#[test]
fn json_output_carries_every_diagnostic_field() {
    let (code, out) = run(&[
        "validate",
        "examples/invalid/iteration-max-attempts.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["valid"], false);
    let d = &v["diagnostics"][0];
    assert_eq!(d["severity"], "error");
    assert_eq!(d["rule"], "iteration.max_attempts.range");
    assert_eq!(d["path"], "phases[0].iteration.max_attempts");
    assert_eq!(d["section"], "Phase iteration loops");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(11), Some(21))
    );
}

#[test]
fn missing_files_and_bad_usage_exit_2() {
    assert_eq!(run(&["validate", "no/such/file.yaml"]).0, 2);
    assert_eq!(run(&["validate"]).0, 2);
    assert_eq!(run(&["frobnicate"]).0, 2);
    assert!(
        !Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("no/such/file.yaml")
            .exists()
    );
}

#[test]
fn rules_lists_every_rule_once() {
    let (code, out) = run(&["rules"]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), loom_process::package::rules::ALL.len());
    assert!(out.contains("phases.depends_on.cycle"));
}

#[test]
fn review_prints_the_guide_layout() {
    let (code, out) = run(&[
        "review",
        "examples/financial-analysis",
        "--install-root",
        "/opt/loom",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("Package: financial-analysis v1.0.3\nAuthor:  LOOM Conformance Kit\n"),
        "{out}"
    );
    assert!(out.contains("Target:  /opt/loom/financial-analysis\n"));
    assert!(out.contains("Dependencies (2):\n  pandas==2.2.2\n"));
    assert!(
        out.ends_with("Risk: MEDIUM — dependencies present\n"),
        "{out}"
    );
}

/// An existing process.yaml that is not UTF-8 is an encoding error (exit 1), not "missing".
#[test]
fn a_non_utf8_process_yaml_is_an_encoding_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("process.yaml"),
        b"name: caf\xe9\nphases: []\n",
    )
    .unwrap();
    let path = dir.path().to_str().unwrap();
    let (code, out) = run(&["validate", path]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("error[yaml.encoding] "), "{out}");
    assert!(out.contains("not UTF-8"), "{out}");
    let (code, out) = run(&[
        "validate",
        dir.path().join("process.yaml").to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}");
    let err = loom_process::package::load_dir(dir.path()).unwrap_err();
    assert_eq!(err.diagnostics[0].rule, "yaml.encoding");
    // A directory without the file is still "missing" (exit 2).
    let empty = tempfile::tempdir().unwrap();
    let (code, out) = run(&["validate", empty.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        out.starts_with("error[package.process_yaml.missing] "),
        "{out}"
    );
}
