//! Report formats: the JSON report validates against `schema/report-1.schema.json` (a real run
//! of the binary and a synthetic report with failures and transcripts), the JUnit XML parses
//! with one testcase per case, and the HTML certificate has an index and case pages with
//! everything from the target escaped.

use loom_client::Transcript;
use loom_conformance::report::{RunReport, html, json, junit, merge};
use loom_conformance::{CaseResult, Outcome, catalogue};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_loom-conformance");

fn schema() -> jsonschema::Validator {
    let text = include_str!("../schema/report-1.schema.json");
    let v: Value = serde_json::from_str(text).expect("the schema is JSON");
    jsonschema::validator_for(&v).expect("the schema is a valid draft 2020-12 schema")
}

fn assert_valid(report: &Value) {
    let errors: Vec<String> = schema()
        .iter_errors(report)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "schema violations:\n{}",
        errors.join("\n")
    );
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("loom-conf-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// A report in which the first case failed on a response whose body holds markup, the second
/// was skipped, and the rest errored, passed unexpectedly or passed.
fn synthetic() -> RunReport {
    let cases = catalogue::all();
    let hostile = Transcript {
        method: "POST".into(),
        path: "/v1/envelopes?x=<b>".into(),
        version: "HTTP/2".into(),
        request_headers: vec![
            ("content-type".into(), "application/json".into()),
            ("authorization".into(), "Bearer secret-token".into()),
        ],
        request_body: br#"{"content":"<script>alert(1)</script>"}"#.to_vec(),
        status: 200,
        response_headers: vec![("x-evil".into(), "<img src=x>".into())],
        response_body: b"<html>accepted & stored</html>".to_vec(),
        elapsed: Duration::from_millis(12),
    };
    let binary = Transcript {
        response_body: vec![0xff, 0x00, 0x3c],
        ..hostile.clone()
    };
    let outcomes = [
        Outcome::Fail,
        Outcome::Skipped,
        Outcome::Error,
        Outcome::UnexpectedPass,
    ];
    let results = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let outcome = outcomes.get(i).copied().unwrap_or(Outcome::Pass);
            let failed = outcome == Outcome::Fail;
            let errored = outcome == Outcome::Error;
            let r = CaseResult {
                id: c.id,
                outcome,
                message: (outcome != Outcome::Pass).then(|| format!("why <{i}>")),
                expected: failed.then(|| "400 SIGNATURE_INVALID <per §7.3>".to_owned()),
                actual: failed.then(|| "200 <accepted>".to_owned()),
                decisive: failed.then_some(0),
                transcripts: if failed {
                    vec![hostile.clone(), binary.clone()]
                } else if errored {
                    vec![hostile.clone()]
                } else {
                    Vec::new()
                },
                refusals: Vec::new(),
                duration: Duration::from_millis(5),
            };
            (*c, r)
        })
        .collect();
    RunReport {
        target: "http://127.0.0.1:1".into(),
        embedded: false,
        level: 1,
        strict: false,
        seed: 7,
        started_at: "2026-01-01T00:00:00Z".into(),
        duration: Duration::from_millis(42),
        node: "example.test".into(),
        results,
        partial: Vec::new(),
    }
}

#[test]
fn synthetic_json_report_validates_against_the_schema() {
    let r = synthetic();
    let v = json::render(&r);
    assert_valid(&v);
    assert_eq!(v["summary"]["passed"], Value::Bool(false));
    assert_eq!(
        v["cases"][0]["transcripts"].as_array().map(Vec::len),
        Some(2)
    );
    let hexed = v["cases"][0]["transcripts"][1]["response_body"]
        .as_str()
        .unwrap_or("");
    assert!(hexed.starts_with("hex:"), "{hexed}");
}

#[test]
fn the_schema_requires_exchanges_on_fail_and_error() {
    let r = synthetic();
    let fail = r
        .results
        .iter()
        .position(|(_, x)| x.outcome == Outcome::Fail)
        .expect("a failure");
    let error = r
        .results
        .iter()
        .position(|(_, x)| x.outcome == Outcome::Error)
        .expect("an error");
    assert_valid(&json::render(&r));
    for (i, what) in [(fail, "fail"), (error, "error")] {
        let mut v = json::render(&r);
        v["cases"][i]["transcripts"] = Value::Array(Vec::new());
        assert!(
            !schema().is_valid(&v),
            "a {what} without exchanges must not validate"
        );
    }
    let mut v = json::render(&r);
    v["cases"][fail]["decisive"] = Value::Null;
    assert!(!schema().is_valid(&v), "a fail names its deciding exchange");
}

#[test]
fn a_real_setup_error_carries_its_exchanges_and_says_why() {
    let dir = scratch("error");
    let profile = dir.join("pool.toml");
    // A pool identity the node never registered: logging it in fails, so the case errors.
    std::fs::write(
        &profile,
        format!(
            "[provisioning]\nmode = \"pool\"\n[[provisioning.identity]]\naddress = \"loom://ghost@conformance.test\"\nkey_id = \"k_sign_ghost_1\"\nseed_hex = \"{}\"\n",
            "11".repeat(32)
        ),
    )
    .expect("profile");
    let json_path = dir.join("report.json");
    let out = Command::new(BIN)
        .args(["run", "--quiet", "--no-fail", "--plain-http", "--seed", "4"])
        .args(["--only", "core.envelope.sig.tampered-body", "--profile"])
        .arg(&profile)
        .arg("--report")
        .arg(format!("json={}", json_path.display()))
        .output()
        .expect("the harness runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("json")).expect("json");
    assert_valid(&v);
    assert_eq!(v["run"]["seed"], Value::from(4));
    let case = &v["cases"][0];
    assert_eq!(case["outcome"], Value::from("error"), "{case}");
    let message = case["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("loom://ghost@conformance.test"),
        "{message}"
    );
    let exchanges = case["transcripts"].as_array().expect("transcripts");
    assert!(
        exchanges.iter().any(|t| t["path"] == "/v1/auth/challenge"),
        "the failed login is shown: {exchanges:?}"
    );
    assert!(case["decisive"].is_u64());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn schema_rejects_what_the_report_never_writes() {
    let mut v = json::render(&synthetic());
    v["cases"][0]["outcome"] = Value::from("sort-of");
    assert!(!schema().is_valid(&v));
    let mut v = json::render(&synthetic());
    v["surprise"] = Value::from(1);
    assert!(!schema().is_valid(&v));
}

fn run_embedded(dir: &Path) -> (Value, String) {
    let json_path = dir.join("report.json");
    let junit_path = dir.join("junit.xml");
    let html_dir = dir.join("cert");
    let out = Command::new(BIN)
        .args(["run", "--quiet", "--level", "1", "--report"])
        .arg(format!("json={}", json_path.display()))
        .arg("--report")
        .arg(format!("junit={}", junit_path.display()))
        .arg("--report")
        .arg(format!("html={}", html_dir.display()))
        .output()
        .expect("the harness runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("json written"))
            .expect("the report is JSON");
    let xml = std::fs::read_to_string(&junit_path).expect("junit written");
    assert!(html_dir.join("index.html").is_file());
    (v, xml)
}

/// `(testsuites, testcases, failures, skipped)` of a JUnit document.
fn junit_counts(xml: &str) -> (usize, usize, usize, usize) {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let (mut suites, mut cases, mut failures, mut skipped) = (0, 0, 0, 0);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) => match e.name().as_ref() {
                b"testsuite" => suites += 1,
                b"testcase" => cases += 1,
                b"failure" | b"error" => failures += 1,
                b"skipped" => skipped += 1,
                _ => {}
            },
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("JUnit XML does not parse: {e}"),
        }
    }
    (suites, cases, failures, skipped)
}

#[test]
fn a_real_run_writes_valid_json_junit_and_html() {
    let dir = scratch("reports");
    let (v, xml) = run_embedded(&dir);
    assert_valid(&v);
    // `--level 1`: the Level 1 cases only (the README's main job, every level, is run by
    // readme_examples.rs).
    let level1: Vec<_> = catalogue::all()
        .into_iter()
        .filter(|c| c.level == 1)
        .collect();
    let n = level1.len();
    assert_eq!(v["cases"].as_array().map(Vec::len), Some(n));
    assert_eq!(v["summary"]["level_achieved"], Value::from(1));
    let areas: std::collections::BTreeSet<&str> = level1.iter().map(|c| c.area()).collect();
    let (suites, cases, failures, _) = junit_counts(&xml);
    assert_eq!((suites, cases, failures), (areas.len(), n, 0));
    let first = catalogue::all()[0].id;
    assert!(
        dir.join("cert/cases")
            .join(html::case_file(first))
            .is_file()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn junit_marks_failures_and_skips() {
    let r = synthetic();
    let xml = junit::render(&r).expect("renders");
    assert!(
        xml.contains(r#"<property name="seed" value="7"/>"#),
        "{xml}"
    );
    let (_, cases, failures, skipped) = junit_counts(&xml);
    assert_eq!(cases, r.results.len());
    let want_fail = r
        .results
        .iter()
        .filter(|(_, x)| x.outcome.fails_run())
        .count();
    let want_skip = r
        .results
        .iter()
        .filter(|(_, x)| {
            matches!(
                x.outcome,
                Outcome::Skipped | Outcome::Unsupported | Outcome::ExpectedFail
            )
        })
        .count();
    assert_eq!((failures, skipped), (want_fail, want_skip));
    if r.results.len() > 1 {
        assert!(xml.contains("deciding exchange"), "{xml}");
    }
}

#[test]
fn html_certificate_escapes_everything_from_the_target() {
    let r = synthetic();
    let dir = scratch("html");
    html::write(&r, &dir).expect("writes");
    let index = std::fs::read_to_string(dir.join("index.html")).expect("index");
    assert!(index.contains("not achieved"), "the verdict banner says so");
    assert!(
        index.contains("How to read this:") && index.contains("--seed 7"),
        "the first screen says how to read it and how to reproduce the run"
    );
    assert!(!index.contains("<script") && !index.contains("src=\"http"));
    let (case, _) = &r.results[0];
    let page = std::fs::read_to_string(dir.join("cases").join(html::case_file(case.id)))
        .expect("case page");
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{page}"
    );
    assert!(page.contains("&lt;img src=x&gt;"));
    assert!(page.contains("&lt;html&gt;accepted &amp; stored&lt;/html&gt;"));
    assert!(page.contains("&lt;per §7.3&gt;"));
    assert!(!page.contains("<script") && !page.contains("<img"));
    assert!(!page.contains("secret-token"), "bearer tokens are redacted");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn merge_builds_one_matrix_and_rejects_foreign_schemas() {
    let dir = scratch("merge");
    let a = dir.join("a.json");
    let b = dir.join("b.json");
    let bad = dir.join("bad.json");
    let text = serde_json::to_string(&json::render(&synthetic())).expect("json");
    std::fs::write(&a, &text).expect("write");
    std::fs::write(&b, &text).expect("write");
    std::fs::write(
        &bad,
        text.replace("loom-conformance-report/1", "loom-conformance-report/9"),
    )
    .expect("write");
    let html_dir = dir.join("matrix");
    let json_out = dir.join("matrix.json");
    let out = Command::new(BIN)
        .args(["report", "merge"])
        .args([&a, &b])
        .arg("--html")
        .arg(&html_dir)
        .arg("--json")
        .arg(&json_out)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_out).expect("json")).expect("parses");
    assert_eq!(m["schema"], Value::from(merge::MATRIX_SCHEMA));
    assert_eq!(m["runs"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        m["cases"].as_array().map(Vec::len),
        Some(catalogue::all().len())
    );
    assert!(html_dir.join("index.html").is_file());
    let out = Command::new(BIN)
        .args(["report", "merge"])
        .args([&a, &bad])
        .arg("--json")
        .arg(&json_out)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("loom-conformance-report/9"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
