//! Runs every vector against `loom-protocol`: the reference must pass all of them.

use loom_protocol::Address;
use loom_protocol::id::{
    AttachmentId, BlobId, CapabilityId, EnvelopeId, EventId, KeyId, KeyKind, ThreadId,
};
use loom_protocol::jcs::canonicalize_str;
use loom_vectors::{VectorFile, canonical_error_name, vectors_dir};
use serde_json::Value;

#[test]
fn canonical_json_vectors_pass_against_the_reference() {
    run_area("canonical-json", 60, |t| {
        match canonicalize_str(t["input"].as_str().unwrap()) {
            Ok(out) if t["expected"].as_str() == Some(out.as_str()) => Ok(Value::from(out)),
            Ok(out) => Err(format!("wrong canonical output {out:?}")),
            Err(e) => Err(canonical_error_name(&e.kind).to_owned()),
        }
    });
}

/// Runs every test of `area` through `check`, which returns `Ok(output)` when the
/// implementation accepts and produced the expected output, and `Err(code or reason)`
/// otherwise; every disagreement with the file is collected and reported by test ID.
fn run_area(area: &str, min: usize, check: impl Fn(&Value) -> Result<Value, String>) {
    let file = VectorFile::load(&vectors_dir().join(format!("{area}.json"))).unwrap();
    assert!(
        file.number_of_tests >= min,
        "{area}: {} < {min}",
        file.number_of_tests
    );
    let mut failures = Vec::new();
    for t in file.tests() {
        let got = check(t);
        let ok = match (t["result"].as_str(), &got) {
            (Some("valid"), Ok(_)) => true,
            (Some("invalid"), Err(code)) => t["expected_error"].as_str() == Some(code.as_str()),
            _ => false,
        };
        if !ok {
            failures.push(format!("{}: got {got:?}", t["id"]));
        }
    }
    assert!(
        failures.is_empty(),
        "{area}: {} failing vectors:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn printed<T: std::fmt::Display, E: std::fmt::Display>(r: Result<T, E>) -> Result<String, String> {
    r.map(|v| v.to_string()).map_err(|e| e.to_string())
}

#[test]
fn id_vectors_pass_against_the_reference() {
    run_area("ids", 40, |t| {
        let input = t["input"].as_str().unwrap();
        let parsed = match t["kind"].as_str().unwrap() {
            "envelope" => printed(EnvelopeId::parse(input)),
            "thread" => printed(ThreadId::parse(input)),
            "attachment" => printed(AttachmentId::parse(input)),
            "blob" => printed(BlobId::parse(input)),
            "capability" => printed(CapabilityId::parse(input)),
            "event" => printed(EventId::parse(input)),
            "signing-key" => printed(KeyId::parse(input, KeyKind::Signing)),
            "encryption-key" => printed(KeyId::parse(input, KeyKind::Encryption)),
            "node-signing-key" => printed(KeyId::parse(input, KeyKind::NodeSigning)),
            other => panic!("unknown id kind {other}"),
        };
        match parsed {
            Ok(s) if s == input => Ok(Value::from(s)),
            Ok(s) => Err(format!("parsed but printed back as {s}")),
            Err(_) => Err("ENVELOPE_INVALID".to_owned()),
        }
    });
}

#[test]
fn address_vectors_pass_against_the_reference() {
    run_area("addresses", 60, |t| {
        let input = t["input"].as_str().unwrap();
        let parsed = match t["mode"].as_str().unwrap() {
            "wire" => Address::parse_wire(input).map(|a| (a, None)),
            "lenient" => Address::parse(input).map(|a| (a, None)),
            "deeplink" => Address::parse_with_fragment(input),
            other => panic!("unknown mode {other}"),
        };
        match parsed {
            Ok((a, fragment)) => {
                let canonical = a.to_string();
                if t["canonical"].as_str() != Some(canonical.as_str()) {
                    Err(format!("canonical form {canonical}"))
                } else if t["mode"] == "deeplink" && fragment.as_deref() != t["fragment"].as_str() {
                    Err(format!("fragment {fragment:?}"))
                } else {
                    Ok(Value::from(canonical))
                }
            }
            Err(_) => Err("ENVELOPE_INVALID".to_owned()),
        }
    });
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
