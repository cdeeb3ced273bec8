//! Certification integrity against `loom-node` as a separate process (issue 18):
//! - started exactly as the node README's "Certifying a node" section says (its commands are
//!   read from the README), `loom-conformance run --target URL` passes on the first try and
//!   certifies Level 1;
//! - `run --level 2` against that Level-1-only target (no `[federation]` profile section, so
//!   no Level 2 case can pass whatever the catalogue holds) exits 1 and no format says a level
//!   was achieved;
//! - against a node with the default per-IP auth limit, the run stops early with one message
//!   that names the cause and the fix.

mod support;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use support::{CONFORMANCE, repo, scratch, start_node};

/// The `sh` block of the node README's "Certifying a node" section: (node command, run
/// command), each as its words.
fn readme_certification_commands() -> (Vec<String>, Vec<String>) {
    let readme =
        std::fs::read_to_string(repo().join("reference/node/README.md")).expect("node README");
    let section = readme
        .split("\n## Certifying a node\n")
        .nth(1)
        .expect("the node README has a \"Certifying a node\" section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("the section has a sh block");
    let commands: Vec<Vec<String>> = block
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    assert_eq!(commands.len(), 2, "node, then run: {block}");
    assert_eq!(commands[0][0], "loom-node", "{block}");
    assert_eq!(commands[1][..2], ["loom-conformance", "run"], "{block}");
    (commands[0].clone(), commands[1].clone())
}

fn run(args: &[String]) -> Output {
    Command::new(CONFORMANCE)
        .args(args)
        .env("COLUMNS", "80")
        .output()
        .expect("the harness runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report written"))
        .expect("the report is JSON")
}

#[test]
fn a_node_started_as_the_readme_says_is_certified_on_the_first_try() {
    let (node_cmd, run_cmd) = readme_certification_commands();
    let dir = scratch("certification");
    // The README's command, run from the repository root as it says, plus one flag: a free
    // port instead of certify.toml's 8788 (flags override the file; tests run in parallel).
    let mut args = node_cmd[1..].to_vec();
    args.extend(["--listen".into(), "127.0.0.1:0".into()]);
    let (_node, url) = start_node(&repo(), &args);
    let documented = "http://127.0.0.1:8788";
    assert!(run_cmd.iter().any(|a| a == documented), "{run_cmd:?}");
    let mut args: Vec<String> = run_cmd[1..]
        .iter()
        .map(|a| {
            if a == documented {
                url.clone()
            } else {
                a.clone()
            }
        })
        .collect();
    let report = dir.join("l1.json");
    args.extend(["--report".into(), format!("json={}", report.display())]);
    let out = run(&args);
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("Level 1 achieved"), "{stdout}");
    let v = json(&report);
    assert_eq!(v["summary"]["level_achieved"], Value::from(1));
    assert_eq!(v["summary"]["partial"], Value::Bool(false));
    let cases = v["cases"].as_array().expect("cases");
    let mut pass = 0;
    for c in cases {
        match c["outcome"].as_str().unwrap_or_default() {
            "pass" => pass += 1,
            // Plain HTTP: the §14.1 transport cases say why they do not apply.
            "skipped" => assert!(
                c["id"].as_str().is_some_and(|id| id.contains("transport"))
                    && c["message"].is_string(),
                "{c}"
            ),
            other => panic!("{}: {other}: {}", c["id"], c["message"]),
        }
    }
    assert!(
        pass * 10 > cases.len() * 9,
        "{pass} of {} passed",
        cases.len()
    );

    // The same Level-1-only target asked for Level 2: exit 1, and no format claims a level.
    let junit = dir.join("l2.xml");
    let html = dir.join("l2-html");
    let report = dir.join("l2.json");
    let out = run(&[
        "run".into(),
        "--quiet".into(),
        "--level".into(),
        "2".into(),
        "--target".into(),
        url.clone(),
        "--report".into(),
        format!("json={}", report.display()),
        "--report".into(),
        format!("junit={}", junit.display()),
        "--report".into(),
        format!("html={}", html.display()),
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("Level 2 not achieved"), "{stdout}");
    assert!(
        !stdout.contains("achieved:") && !stdout.contains("2 achieved"),
        "{stdout}"
    );
    let v = json(&report);
    assert_eq!(
        v["summary"]["level_achieved"],
        Value::Null,
        "{}",
        v["summary"]
    );
    assert!(
        v["summary"]["verdict"]
            .as_str()
            .is_some_and(|s| s.starts_with("Level 2 not achieved")),
        "{}",
        v["summary"]
    );
    let xml = std::fs::read_to_string(&junit).expect("junit written");
    assert!(
        xml.contains(r#"<property name="level-achieved" value="none"/>"#),
        "{xml}"
    );
    let index = std::fs::read_to_string(html.join("index.html")).expect("html written");
    assert!(
        index.contains("<div class=\"banner bad\">"),
        "the banner is red"
    );
    assert!(!index.contains("Level 2 achieved") && !index.contains("Level 1 achieved"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rate_limited_registration_stops_the_run_with_the_cause_and_the_fix() {
    // The node's defaults: `rate_limits.auth_per_ip = 10`, the §14.3 suggestion.
    let args: Vec<String> = [
        "--memory",
        "--domain",
        "limited.test",
        "--listen",
        "127.0.0.1:0",
    ]
    .map(String::from)
    .to_vec();
    let (_node, url) = start_node(&repo(), &args);
    let out = run(&["run".into(), "--quiet".into(), "--target".into(), url]);
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(3),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr.contains("auth_per_ip"),
        "names the setting: {stderr}"
    );
    assert!(stderr.contains("429"), "names the answer: {stderr}");
    assert!(stdout.contains("Partial run"), "{stdout}");
    assert!(!stdout.contains("achieved"), "{stdout}");
}
