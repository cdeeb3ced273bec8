//! Issue 18, items 1 and 4:
//! - at 80 columns (`COLUMNS=80`, which the layout module and clap read) no line of `list`,
//!   `selftest`, `matrix`, a `run` summary or any `--help` of `loom-conformance`,
//!   `loom-vectors`, `loom`, `loom-node` or `loom-plsp` is wider than 80;
//! - a filtered run certifies nothing in any format (terminal, JSON, JUnit, HTML) and exits 4;
//!   a skip file listing a MUST case makes a run partial too.

mod support;

use loom_conformance::skips::SkipFile;
use serde_json::Value;
use std::process::Command;
use support::CONFORMANCE;

/// `(stdout, stderr, exit code)` of `bin args` at 80 columns.
fn at_80(bin: &str, args: &[&str]) -> (String, String, Option<i32>) {
    let out = Command::new(bin)
        .args(args)
        .env("COLUMNS", "80")
        .output()
        .expect("the binary runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

/// The lines wider than 80 columns.
fn too_wide(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.chars().count() > 80)
        .map(str::to_owned)
        .collect()
}

fn assert_fits(what: &str, text: &str) {
    let wide = too_wide(text);
    assert!(
        wide.is_empty(),
        "{what}: {} line(s) wider than 80:\n{}",
        wide.len(),
        wide.join("\n")
    );
}

/// Every `--help` of `bin`: the top level and each subcommand it lists (one level down, and
/// the subcommands of those).
fn every_help(bin: &str) -> usize {
    let mut seen = 0;
    let mut queue: Vec<Vec<String>> = vec![vec![]];
    while let Some(path) = queue.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let (out, err, code) = at_80(bin, &args);
        assert_eq!(code, Some(0), "{bin} {args:?}: {err}");
        assert_fits(&format!("{bin} {}", args.join(" ")), &out);
        seen += 1;
        if path.len() >= 2 {
            continue;
        }
        let mut in_commands = false;
        for line in out.lines() {
            if line.starts_with("Commands:") {
                in_commands = true;
                continue;
            }
            if in_commands && !line.starts_with("  ") {
                in_commands = false;
            }
            if in_commands
                && let Some(name) = line.split_whitespace().next()
                && name != "help"
                && line.starts_with(&format!("  {name}"))
            {
                let mut sub = path.clone();
                sub.push(name.to_owned());
                queue.push(sub);
            }
        }
    }
    seen
}

#[test]
fn every_help_fits_80_columns() {
    let mut n = every_help(CONFORMANCE);
    assert!(
        n >= 7,
        "loom-conformance has run, list, explain, matrix, selftest, report: {n}"
    );
    for (package, bin, features) in [
        ("loom-vectors", "loom-vectors", &[][..]),
        ("loom-client", "loom", &[][..]),
        ("loom-plsp", "loom-plsp", &[][..]),
        ("loom-agent", "loom-agent", &[][..]),
    ] {
        n += every_help(
            support::built(package, bin, features)
                .to_str()
                .expect("path"),
        );
    }
    n += every_help(support::loom_node().to_str().expect("path"));
    assert!(n >= 28, "{n} help screens");
}

#[test]
fn list_matrix_explain_and_selftest_fit_80_columns() {
    for args in [
        &["list"][..],
        &["list", "--area", "envelope"],
        &["matrix"],
        &["explain", "core.envelope.sig.tampered-body"],
    ] {
        let (out, err, code) = at_80(CONFORMANCE, args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(out.lines().count() > 5, "{args:?}: {out}");
        assert_fits(&format!("{args:?}"), &out);
        assert_fits(&format!("{args:?} (stderr)"), &err);
    }
    // The self-test's tables, on a slice of the catalogue and of the variants.
    let (out, err, _) = at_80(
        CONFORMANCE,
        &[
            "selftest",
            "--only",
            "core.auth.*",
            "--variant",
            "success-200",
        ],
    );
    assert!(out.contains("mutation coverage"), "{out}\n{err}");
    assert_fits("selftest", &out);
    assert_fits("selftest (stderr)", &err);
}

#[test]
fn a_filtered_run_certifies_nothing_in_any_format() {
    let dir = support::scratch("partial");
    let json = dir.join("r.json");
    let junit = dir.join("j.xml");
    let html = dir.join("cert");
    let (out, err, code) = at_80(
        CONFORMANCE,
        &[
            "run",
            "--plain-http",
            "--only",
            "core.auth.*",
            "--report",
            &format!("json={}", json.display()),
            "--report",
            &format!("junit={}", junit.display()),
            "--report",
            &format!("html={}", html.display()),
        ],
    );
    assert_eq!(code, Some(4), "a clean partial run exits 4:\n{out}\n{err}");
    // Terminal: the verdict says partial, never "achieved"; progress and summary fit.
    assert!(out.contains("Partial run — no level certified"), "{out}");
    assert!(out.contains("filtered with --only core.auth.*"), "{out}");
    assert!(!out.contains("achieved"), "{out}");
    assert_fits("run summary", &out);
    assert_fits("run progress", &err);
    // JSON.
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("JSON");
    assert_eq!(v["summary"]["level_achieved"], Value::Null);
    assert_eq!(v["summary"]["partial"], Value::Bool(true));
    assert_eq!(v["run"]["complete"], Value::Bool(false));
    assert_eq!(v["summary"]["verdict"], "Partial run — no level certified");
    assert!(
        v["summary"]["partial_reasons"][0]
            .as_str()
            .is_some_and(|r| r.contains("--only core.auth.*")),
        "{}",
        v["summary"]
    );
    // JUnit.
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(
        xml.contains(r#"<property name="level-achieved" value="none"/>"#)
            && xml.contains(r#"<property name="partial-run" value="no level certified: filtered with --only core.auth.*"/>"#),
        "{xml}"
    );
    // HTML banner.
    let index = std::fs::read_to_string(html.join("index.html")).expect("html");
    assert!(
        index.contains("<div class=\"banner partial\">"),
        "the banner is not green"
    );
    assert!(index.contains("Partial run — no level certified"));
    assert!(!index.contains("achieved"), "no level is named as achieved");

    // --exclude is a filter too, and --no-fail changes the exit code, not the verdict.
    let (out, err, code) = at_80(
        CONFORMANCE,
        &[
            "run",
            "--plain-http",
            "--quiet",
            "--no-fail",
            "--only",
            "core.auth.*",
            "--exclude",
            "core.auth.refresh.*",
        ],
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("Partial run") && !out.contains("achieved"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_skip_file_listing_a_must_case_makes_the_run_partial() {
    let dir = support::scratch("partial-skips");
    let path = dir.join("skips.json");
    std::fs::write(
        &path,
        r#"[{"id": "core.envelope.sig.tampered-body", "reason": "lands in 0.9", "issue_url": "https://tracker.example/1"}]"#,
    )
    .expect("skip file");
    let skips = SkipFile::load(&path, &|id| loom_conformance::catalogue::find(id).is_some())
        .expect("the skip file loads");
    let why = loom_conformance::cli::run::partial_reasons(&[], &[], &skips);
    assert_eq!(
        why,
        ["the skip file lists 1 MUST case(s) as expected failures"],
        "{why:?}"
    );
    assert!(loom_conformance::cli::run::partial_reasons(&[], &[], &SkipFile::default()).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
