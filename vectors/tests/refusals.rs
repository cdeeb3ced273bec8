//! Vectors say where they choose (issue 29): every refusing vector names the spec rule it
//! rests on, and a refusal that rests on a reading the spec does not state carries the
//! `Interpretation` flag, explained in its kind's doc.

use loom_vectors::VectorFile;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn v1() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("v1")
}

fn test_of<'a>(file: &'a VectorFile, id: &str) -> &'a Value {
    file.tests()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no vector {id} in {}", file.area))
}

#[test]
fn readings_the_spec_does_not_state_are_flagged_and_explained() {
    let file = VectorFile::load(&v1().join("capability-token.json")).expect("loads");
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("kinds/capability-token.md"),
    )
    .expect("kind doc");
    for id in ["grant.unknown", "pop.cnf-malformed"] {
        let t = test_of(&file, id);
        assert_eq!(t["result"], "invalid", "{id}");
        assert!(
            t["flags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "Interpretation"),
            "{id} rests on a reading and must say so"
        );
        assert!(
            doc.contains(&format!("`{id}`")),
            "the kind doc explains {id}"
        );
    }
}

/// A file holding one refusing vector with `spec` and `flags` as given.
fn one_refusal(spec: Value, flags: Value) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loom-vectors-refusal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("capability-token.json");
    let file = json!({
        "schema": "loom-vectors/v1/capability-token.schema.json", "version": "1.0.0", "area": "capability-token",
        "description": "one refusal", "number_of_tests": 1,
        "notes": {"Grant": {"description": "d", "bug_class": "b", "effect": "e"}},
        "groups": [{"kind": "authorize-capability", "tests": [{"id": "x", "comment": "c", "flags": flags, "spec": spec,
            "result": "invalid", "expected_error": "CAPABILITY_DENIED"}]}]
    });
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    path
}

#[test]
fn a_refusal_naming_no_rule_or_no_flag_does_not_load() {
    let ok = VectorFile::load(&one_refusal(json!(["v1.1 §12.2"]), json!(["Grant"])));
    assert!(ok.is_ok(), "{ok:?}");
    for (spec, flags, rule) in [
        (json!([]), json!(["Grant"]), "spec rule"),
        (json!([" "]), json!(["Grant"]), "spec rule"),
        (json!(["v1.1 §12.2"]), json!([]), "flag"),
    ] {
        let e = VectorFile::load(&one_refusal(spec.clone(), flags.clone())).unwrap_err();
        assert!(e.0.contains(rule), "{spec} {flags}: {e}");
    }
}
