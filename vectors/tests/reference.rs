//! Runs every vector against `loom-protocol`: the reference must pass all of them.

use loom_protocol::jcs::canonicalize_str;
use loom_vectors::{VectorFile, canonical_error_name, vectors_dir};
use serde_json::Value;

#[test]
fn canonical_json_vectors_pass_against_the_reference() {
    let file = VectorFile::load(&vectors_dir().join("canonical-json.json")).unwrap();
    assert!(file.number_of_tests >= 60, "{}", file.number_of_tests);
    let mut failures = Vec::new();
    for t in file.tests() {
        let id = t["id"].as_str().unwrap();
        let input = t["input"].as_str().unwrap();
        let got = canonicalize_str(input);
        let ok = match (t["result"].as_str(), &got) {
            (Some("valid"), Ok(out)) => Some(out.as_str()) == t["expected"].as_str(),
            (Some("invalid"), Err(e)) => {
                t["expected_error"].as_str() == Some(canonical_error_name(&e.kind))
            }
            _ => false,
        };
        if !ok {
            failures.push(format!("{id}: got {got:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing vectors:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn malformed_files_are_reported() {
    let dir = std::env::temp_dir().join(format!("loom-vectors-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, v: Value| {
        let p = dir.join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p
    };
    let base = |tests: Value, n: usize| {
        serde_json::json!({"schema": "s", "version": "1.0.0", "area": "x", "description": "d", "number_of_tests": n,
            "notes": {"F": {"description": "d", "bug_class": "b", "effect": "e"}},
            "groups": [{"kind": "canonicalize", "tests": tests}]})
    };
    let t = |id: &str| serde_json::json!({"id": id, "comment": "c", "flags": ["F"], "spec": [], "result": "valid"});
    assert!(VectorFile::load(&write("x.json", base(serde_json::json!([t("a")]), 1))).is_ok());
    let e = VectorFile::load(&write(
        "x.json",
        base(serde_json::json!([t("a"), t("a")]), 2),
    ))
    .unwrap_err();
    assert!(e.0.contains("duplicate test id a"), "{e}");
    let e = VectorFile::load(&write("x.json", base(serde_json::json!([t("a")]), 2))).unwrap_err();
    assert!(e.0.contains("number_of_tests"), "{e}");
    let e = VectorFile::load(&write("y.json", base(serde_json::json!([t("a")]), 1))).unwrap_err();
    assert!(e.0.contains("file name"), "{e}");
    let mut bad_flag = t("a");
    bad_flag["flags"] = serde_json::json!(["G"]);
    let e = VectorFile::load(&write("x.json", base(serde_json::json!([bad_flag]), 1))).unwrap_err();
    assert!(e.0.contains("not defined"), "{e}");
    let mut invalid = t("a");
    invalid["result"] = "invalid".into();
    let e = VectorFile::load(&write("x.json", base(serde_json::json!([invalid]), 1))).unwrap_err();
    assert!(e.0.contains("expected_error"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
