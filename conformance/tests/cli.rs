//! The command line: listing, explaining, the traceability matrix, usage errors (exit 2 with
//! a message that says what is wrong), and an unreachable target (exit 3 with a message that
//! says what to configure).

use loom_conformance::{catalogue, requirements};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_loom-conformance");

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the binary runs")
}

/// `run` with the terminal `columns` wide (`COLUMNS`, which the layout module reads first).
fn run_at(columns: usize, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("COLUMNS", columns.to_string())
        .output()
        .expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scratch(name: &str, contents: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("loom-conf-cli-{}-{name}", std::process::id()));
    std::fs::write(&p, contents).expect("temp file");
    p
}

#[test]
fn list_prints_every_case_and_filters() {
    let o = run(&["list"]);
    assert_eq!(o.status.code(), Some(0));
    let n = catalogue::all().len();
    assert!(stdout(&o).contains(&format!("{n} cases")), "{}", stdout(&o));

    let o = run(&["list", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("list --json is JSON");
    let ids: Vec<&str> = v
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    let want: Vec<&str> = catalogue::all().iter().map(|c| c.id).collect();
    assert_eq!(ids, want, "catalogue order");

    let area = catalogue::all()[0].area();
    let o = run(&["list", "--json", "--area", area, "--strength", "must"]);
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let want = catalogue::all()
        .iter()
        .filter(|c| c.area() == area && c.strength == loom_conformance::Strength::Must)
        .count();
    assert_eq!(v.as_array().map(Vec::len), Some(want));
    for c in v.as_array().into_iter().flatten() {
        assert_eq!(c["area"], Value::from(area));
        assert_eq!(c["strength"], Value::from("MUST"));
    }

    // An unknown area is a usage error that lists the areas (issue 18), like `run --only`
    // matching nothing.
    let o = run(&["list", "--area", "no-such-area"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no-such-area") && stderr(&o).contains(area),
        "{}",
        stderr(&o)
    );
    let o = run(&["list", "--only", "nomatch*"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn explain_shows_a_case_and_rejects_unknown_ids() {
    let c = catalogue::all()[0];
    // Wide: the requirement on one line; at 80 columns it wraps under its label.
    let o = run_at(1000, &["explain", c.id]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains(c.requirement));
    let o = run_at(80, &["explain", c.id]);
    let text = stdout(&o);
    let words: Vec<&str> = text.split_whitespace().collect();
    assert!(words.join(" ").contains(c.requirement), "{text}");
    let o = run(&["explain", "core.no.such.case"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("core.no.such.case") && stderr(&o).contains("list"));
}

#[test]
fn matrix_lists_requirements_uncovered_and_not_testable() {
    let o = run(&["matrix"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("Uncovered testable requirements"));
    assert!(text.contains("Not testable over the wire"));
    // The matrix lists MUST and SHOULD requirements; MAY ones are covered but not listed.
    let reqs = requirements::all().expect("the requirements file parses");
    let listed = |id: &str| reqs.iter().any(|r| r.id == id && r.strength != "MAY");
    for c in catalogue::all() {
        for r in c.covers.iter().filter(|r| listed(r)) {
            assert!(text.contains(r), "{r} missing from the matrix");
        }
    }
    let o = run(&["matrix", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("matrix --json is JSON");
    assert!(v["requirements"].as_array().is_some_and(|a| !a.is_empty()));
    assert!(v["uncovered"].is_array() && v["not_testable"].is_array());
    assert!(
        v["requirements"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|r| r["strength"] != "MAY"),
        "the matrix holds MUST and SHOULD requirements"
    );
}

#[test]
fn every_must_case_quotes_the_sentence_it_enforces() {
    let reqs = requirements::all().expect("the requirements file parses");
    let m = requirements::Matrix::build(&reqs, &catalogue::all());
    assert!(
        m.unquoted_must_cases().is_empty(),
        "MUST cases whose first `covers` is not a quoted MUST requirement: {:?}",
        m.unquoted_must_cases()
    );
    // Wide enough that no sentence wraps: each case's line is compared whole.
    let text = stdout(&run_at(1000, &["matrix"]));
    let must: Vec<_> = catalogue::all()
        .into_iter()
        .filter(|c| c.strength == loom_conformance::Strength::Must)
        .collect();
    assert_eq!(m.enforced.len(), must.len());
    for c in must {
        let r = reqs
            .iter()
            .find(|r| r.id == c.covers[0])
            .expect("a requirement");
        let quote = r.quote.as_deref().expect("a quote");
        let shown = format!(
            "  {}\n      {} ({}): \"{quote}\"",
            c.id,
            r.id,
            r.quote_source()
        );
        assert!(text.contains(&shown), "matrix does not show {shown:?}");
    }
    // SHOULD cases that read the spec where it leaves room say so.
    for c in catalogue::all()
        .into_iter()
        .filter(|c| c.strength != loom_conformance::Strength::Must)
    {
        let first = reqs.iter().find(|r| r.id == c.covers[0]);
        assert!(
            c.interpretation.is_some() || first.is_some_and(|r| r.strength != "MUST"),
            "{} is {} but covers the MUST {} without an interpretation note",
            c.id,
            c.strength,
            c.covers[0]
        );
    }
}

#[test]
fn every_covers_id_names_a_requirement() {
    let reqs = requirements::all().expect("the requirements file parses");
    let known: std::collections::BTreeSet<&str> = reqs.iter().map(|r| r.id.as_str()).collect();
    let mut missing = Vec::new();
    for c in catalogue::all() {
        assert!(!c.covers.is_empty(), "{} covers no requirement", c.id);
        for r in c.covers {
            if !known.contains(r) {
                missing.push(format!("{} covers {r}", c.id));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "unknown requirement IDs:\n{}",
        missing.join("\n")
    );
}

#[test]
fn usage_errors_exit_2_with_a_clear_message() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--report", "pdf=x"], "expected json=PATH"),
        (&["run", "--report", "json="], "expected json=PATH"),
        (&["run", "--level", "9"], "--level"),
        (&["run", "--timeout-scale", "0"], "--timeout-scale"),
        (&["run", "--only", "nothing.matches.*"], "no case matches"),
        (&["list", "--strength", "sometimes"], "MUST, SHOULD or MAY"),
        (&["frobnicate"], "frobnicate"),
        (&["report", "merge"], "<REPORTS>"),
    ];
    for (args, needle) in cases {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(needle),
            "{args:?}: {needle:?} not in {}",
            stderr(&o)
        );
    }
}

#[test]
fn bad_input_files_are_usage_errors_not_panics() {
    let id = catalogue::all()[0].id;
    let unknown = scratch(
        "skips-unknown.json",
        r#"[{"id":"core.typo.case","reason":"r","issue_url":"https://x/1"}]"#,
    );
    let garbage = scratch("skips-garbage.json", "{not json");
    let empty_reason = scratch(
        "skips-empty.json",
        &format!(r#"[{{"id":"{id}","reason":" ","issue_url":"https://x/1"}}]"#),
    );
    let profile = scratch("profile-bad.toml", "[target]\nbogus_key = 1\n");
    let profile_neg = scratch(
        "profile-neg.toml",
        "[target]\nreadiness_timeout_secs = -1.0\n",
    );
    let merge_garbage = scratch("merge.json", "[1, 2");
    let checks: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "run".into(),
                "--skips".into(),
                unknown.display().to_string(),
            ],
            "core.typo.case",
        ),
        (
            vec![
                "run".into(),
                "--skips".into(),
                garbage.display().to_string(),
            ],
            "skip file",
        ),
        (
            vec![
                "run".into(),
                "--skips".into(),
                empty_reason.display().to_string(),
            ],
            "reason",
        ),
        (
            vec![
                "run".into(),
                "--skips".into(),
                "/nonexistent/skips.json".into(),
            ],
            "/nonexistent/skips.json",
        ),
        (
            vec![
                "run".into(),
                "--profile".into(),
                profile.display().to_string(),
            ],
            "bogus_key",
        ),
        (
            vec![
                "run".into(),
                "--profile".into(),
                profile_neg.display().to_string(),
            ],
            "readiness_timeout_secs",
        ),
        (
            vec![
                "report".into(),
                "merge".into(),
                merge_garbage.display().to_string(),
                "--json".into(),
                "/tmp/unused.json".into(),
            ],
            "not JSON",
        ),
    ];
    for (args, needle) in checks {
        let o = Command::new(BIN).args(&args).output().expect("runs");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
    }
    for p in [
        unknown,
        garbage,
        empty_reason,
        profile,
        profile_neg,
        merge_garbage,
    ] {
        let _ = std::fs::remove_file(p);
    }
}

#[test]
fn an_unreachable_target_exits_3_and_says_what_to_configure() {
    let profile = scratch(
        "profile-fast.toml",
        "[target]\nreadiness_timeout_secs = 0.3\n",
    );
    let o = run(&[
        "run",
        "--target",
        "http://127.0.0.1:9",
        "--profile",
        &profile.display().to_string(),
    ]);
    let _ = std::fs::remove_file(&profile);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("http://127.0.0.1:9"), "{err}");
    assert!(err.contains("readiness_timeout_secs"), "{err}");
    assert!(err.contains("/.well-known/loom.json"), "{err}");
}
