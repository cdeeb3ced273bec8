//! Runs every vector file against `loom-protocol` in-process: the reference must pass all of
//! them, and each area must hold at least its minimum number of vectors.

use loom_vectors::protocol::Judgement;
use loom_vectors::{AREA_MINIMUMS, VectorFile, load_all, reference, vectors_dir};
use serde_json::Value;

fn failures(file: &VectorFile) -> Vec<String> {
    file.check(reference::answer)
        .into_iter()
        .filter(|o| o.judgement != Judgement::Pass)
        .map(|o| format!("{}: {:?}", o.id, o.judgement))
        .collect()
}

#[test]
fn every_vector_passes_against_the_reference() {
    let files = load_all(&vectors_dir()).unwrap();
    let mut all = Vec::new();
    for f in &files {
        all.extend(failures(f).into_iter().map(|m| format!("{}/{m}", f.area)));
    }
    assert!(
        all.is_empty(),
        "{} failing vectors:\n{}",
        all.len(),
        all.join("\n")
    );
}

#[test]
fn every_present_area_meets_its_minimum() {
    for f in load_all(&vectors_dir()).unwrap() {
        let min = AREA_MINIMUMS
            .iter()
            .find(|(a, _)| *a == f.area)
            .unwrap_or_else(|| panic!("area {} has no minimum in AREA_MINIMUMS", f.area))
            .1;
        assert!(
            f.number_of_tests >= min,
            "{}: {} < {min}",
            f.area,
            f.number_of_tests
        );
    }
}

#[test]
fn generated_files_are_current() {
    // LOOM_VECTORS_REGENERATE=1 rewrites them instead (the same as `loom-vectors generate`).
    let regenerate = std::env::var_os("LOOM_VECTORS_REGENERATE").is_some();
    for area in loom_vectors::generate::GENERATED {
        let text = (area.build)().render();
        let path = vectors_dir().join(format!("{}.json", area.area));
        if regenerate {
            std::fs::write(&path, &text).unwrap();
        } else {
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                committed == text,
                "{} is not what the generator writes; run `cargo run -p loom-vectors -- generate`",
                path.display()
            );
        }
    }
}

#[test]
fn a_wrong_answer_fails_its_vector_with_expected_and_actual() {
    let file = VectorFile::load(&vectors_dir().join("canonical-json.json")).unwrap();
    let outcomes = file.check(|req| {
        let mut a = reference::answer(req);
        if req.id == "rfc8785.sample.arrays" {
            a.output = Some(Value::from("[]"));
        }
        a
    });
    let bad: Vec<_> = outcomes
        .iter()
        .filter(|o| o.judgement != Judgement::Pass)
        .collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].id, "rfc8785.sample.arrays");
    let Judgement::Fail(why) = &bad[0].judgement else {
        panic!()
    };
    assert!(
        why.contains("expected output") && why.contains("got \"[]\""),
        "{why}"
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

/// The federation vectors catch broken receivers: an implementation that forgets its nonce
/// cache, or ignores its federation policy, fails exactly the vectors for those rules.
#[test]
fn federation_vectors_catch_a_receiver_without_replay_cache_or_policy() {
    let file = VectorFile::load(&vectors_dir().join("federation.json")).unwrap();
    let failing = |strip: &str| -> Vec<String> {
        file.check(|req| {
            let mut req = req.clone();
            if req.kind == "verify-delivery-request" {
                req.input.remove(strip);
            }
            reference::answer(&req)
        })
        .into_iter()
        .filter(|o| o.judgement != Judgement::Pass)
        .map(|o| o.id)
        .collect()
    };
    assert_eq!(
        failing("seen_nonces"),
        vec![
            "request.replay.under-15min",
            "request.replay.node-respelled"
        ]
    );
    assert_eq!(
        failing("policy"),
        vec![
            "request.policy.quarantine",
            "request.policy.blocked",
            "request.policy.unlisted",
            "request.policy.wildcard-not-apex"
        ]
    );
}
