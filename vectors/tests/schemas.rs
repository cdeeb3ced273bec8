//! Every vector file validates against its JSON Schema (draft 2020-12), every schema file is
//! what the generator writes, and every request carries the inputs its area requires.

use loom_vectors::generate::{all_areas, schema_for, schema_text};
use loom_vectors::{load_all, vectors_dir};
use serde_json::Value;

fn schema_dir() -> std::path::PathBuf {
    vectors_dir().parent().unwrap().join("schema")
}

#[test]
fn every_vector_file_validates_against_its_schema() {
    let files = load_all(&vectors_dir()).unwrap();
    assert!(!files.is_empty());
    for f in &files {
        let path = schema_dir().join(format!("{}.schema.json", f.area));
        let schema: Value = serde_json::from_str(
            &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        )
        .unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let text = std::fs::read_to_string(vectors_dir().join(format!("{}.json", f.area))).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .take(10)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}:\n{}", f.area, errors.join("\n"));
    }
}

#[test]
fn schemas_reject_what_they_should() {
    let schema: Value = serde_json::from_str(&schema_text("ids").unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let good: Value =
        serde_json::from_str(&std::fs::read_to_string(vectors_dir().join("ids.json")).unwrap())
            .unwrap();
    assert!(validator.is_valid(&good));
    let mutate = |f: &dyn Fn(&mut Value)| {
        let mut d = good.clone();
        f(&mut d);
        validator.is_valid(&d)
    };
    assert!(!mutate(
        &|d| d["groups"][0]["tests"][0]["surprise"] = 1.into()
    ));
    assert!(!mutate(
        &|d| d["groups"][0]["tests"][0]["id_type"] = "nonsense".into()
    ));
    assert!(!mutate(
        &|d| d["groups"][0]["tests"][0]["result"] = "acceptable".into()
    ));
    assert!(!mutate(&|d| {
        let t = &mut d["groups"][0]["tests"][0];
        t["result"] = "invalid".into();
    }));
    assert!(!mutate(
        &|d| d["groups"][0]["tests"][1]["expected_error"] = "NOT_A_CODE".into()
    ));
    assert!(!mutate(&|d| d["area"] = "addresses".into()));
}

#[test]
fn schema_files_are_current() {
    for area in all_areas() {
        let path = schema_dir().join(format!("{area}.schema.json"));
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == schema_text(area).unwrap(),
            "{} is stale; run `cargo run -p loom-vectors -- generate`",
            path.display()
        );
    }
}

#[test]
fn every_request_carries_the_required_inputs() {
    for f in load_all(&vectors_dir()).unwrap() {
        let schema = schema_for(&f.area).unwrap_or_else(|| panic!("{} has no schema", f.area));
        for (_, req) in f.requests() {
            for name in &schema.required {
                assert!(
                    req.input.contains_key(*name),
                    "{}/{}: no input {name}",
                    f.area,
                    req.id
                );
            }
            assert!(
                schema.kinds.contains(&req.kind.as_str()),
                "{}/{}",
                f.area,
                req.id
            );
        }
    }
}
