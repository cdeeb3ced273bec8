//! The `loom-vectors` binary end to end: `verify` against our own `adapter` passes every
//! vector, and names the vector with expected vs. actual when the adapter answers wrongly,
//! hangs, dies or speaks garbage.

use std::process::Command;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_loom-vectors")
}

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(bin()).args(args).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

fn adapter_cmd(extra: &str) -> String {
    format!("'{}' adapter {extra}", bin())
}

#[test]
fn verify_against_the_reference_adapter_passes_everything() {
    let (code, out) = run(&["verify", "--impl", &adapter_cmd("")]);
    assert_eq!(code, 0, "{out}");
    let last = out.lines().last().unwrap();
    assert!(
        last.ends_with(" failed, 0 unsupported") && last.contains(" passed, 0 failed"),
        "{last}"
    );
    let passed: usize = last.split(' ').next().unwrap().parse().unwrap();
    assert!(passed >= 249, "{last}");
}

#[test]
fn a_deliberately_wrong_answer_is_reported_per_vector() {
    let (code, out) = run(&[
        "verify",
        "--area",
        "canonical-json",
        "--area",
        "ids",
        "--impl",
        &adapter_cmd("--sabotage rfc8785.sample.arrays --sabotage envelope.valid"),
    ]);
    assert_eq!(code, 1, "{out}");
    let fails: Vec<&str> = out.lines().filter(|l| l.contains("FAIL")).collect();
    assert_eq!(fails.len(), 2, "{out}");
    assert!(
        fails[0].contains(
            "canonical-json/rfc8785.sample.arrays: expected valid, got invalid with error SABOTAGED"
        ),
        "{}",
        fails[0]
    );
    assert!(
        fails[1].contains("ids/envelope.valid: expected valid"),
        "{}",
        fails[1]
    );
    assert!(out.contains("2 failed"), "{out}");
}

#[test]
fn an_adapter_that_dies_fails_the_remaining_vectors_without_hanging() {
    // Answers the first two requests correctly, then exits.
    let cmd = format!("head -n 2 | {}", adapter_cmd(""));
    let (code, out) = run(&["verify", "--area", "ids", "--timeout", "5", "--impl", &cmd]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("2 passed, 81 failed"), "{out}");
    assert!(
        out.contains("adapter closed its output before answering"),
        "{out}"
    );
}

#[test]
fn garbage_from_an_adapter_is_a_clear_failure() {
    // Garbage from the start: the preflight refuses the adapter before judging anything
    // (issue 18), one message and exit 2, not a FAIL line per vector.
    let (code, out) = run(&[
        "verify",
        "--area",
        "ids",
        "--impl",
        "while read l; do echo 'not json'; done",
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("answered the first request with a line that is not an adapter answer"),
        "{out}"
    );
    assert!(!out.contains("FAIL"), "{out}");
    // Garbage after a good first answer: every later vector fails with the reason.
    let cmd = format!(
        "read l; echo \"$l\" | {}; while read l; do echo 'not json'; done",
        adapter_cmd("")
    );
    let (code, out) = run(&["verify", "--area", "ids", "--impl", &cmd]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("answer is not a valid adapter answer"),
        "{out}"
    );
    assert!(out.contains("1 passed, 82 failed"), "{out}");
}

#[test]
fn an_adapter_that_does_not_start_is_one_clear_error() {
    let (code, out) = run(&["verify", "--impl", "nosuchcmd-loom-vectors-test"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("ended before answering the first request")
            && out.contains("check that the command exists"),
        "{out}"
    );
    assert!(!out.contains("FAIL"), "{out}");
    assert!(
        out.lines().count() <= 3,
        "one message, not a line per vector:\n{out}"
    );
}

#[test]
fn summary_prints_counts_per_area_without_listing_vectors() {
    let unsupported = "while read l; do id=$(printf '%s' \"$l\" | sed 's/.*\"id\":\"\\([^\"]*\\)\".*/\\1/'); \
         printf '{\"id\":\"%s\",\"result\":\"unsupported\",\"detail\":\"no\"}\\n' \"$id\"; done";
    let (code, full) = run(&["verify", "--area", "ids", "--impl", unsupported]);
    assert_eq!(code, 1, "{full}");
    assert!(full.contains("  unsupported ids/"), "{full}");
    let (code, out) = run(&[
        "verify",
        "--area",
        "ids",
        "--summary",
        "--impl",
        unsupported,
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(!out.contains("  unsupported ids/"), "{out}");
    assert!(
        out.contains("ids") && out.contains("83 unsupported"),
        "{out}"
    );
    assert_eq!(
        out.lines().last(),
        Some("0 passed, 0 failed, 83 unsupported"),
        "{out}"
    );
}

#[test]
fn the_adapter_survives_malformed_requests() {
    use std::io::Write;
    let mut child = Command::new(bin())
        .arg("adapter")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let req = r#"{"v":1,"id":"x","area":"ids","kind":"parse-id","input":{"input":"env_01JMKB7X9Q2RVHF3KN4TYZPG00","id_type":"envelope"}}"#;
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{{not json").unwrap();
    writeln!(
        stdin,
        r#"{{"v":1,"id":"y","area":"ids","kind":"parse-id","input":{{}}}}"#
    )
    .unwrap();
    writeln!(
        stdin,
        r#"{{"v":1,"id":"z","area":"ids","kind":"no-such-kind","input":{{}}}}"#
    )
    .unwrap();
    writeln!(stdin, "{req}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["result"], "unsupported");
    assert!(
        lines[0]["detail"]
            .as_str()
            .unwrap()
            .contains("malformed request line")
    );
    assert_eq!(lines[1]["result"], "unsupported");
    assert!(
        lines[1]["detail"]
            .as_str()
            .unwrap()
            .contains("\"input\" is missing")
    );
    assert!(
        lines[2]["detail"]
            .as_str()
            .unwrap()
            .contains("unknown kind")
    );
    assert_eq!(lines[3]["result"], "valid");
    assert_eq!(lines[3]["output"], "env_01JMKB7X9Q2RVHF3KN4TYZPG00");
}

#[test]
fn stats_lists_every_area_with_counts() {
    let (_, out) = run(&["stats"]);
    for area in [
        "canonical-json",
        "ids",
        "addresses",
        "envelope-signature",
        "http-signature",
        "federation",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(area)),
            "{area} missing:\n{out}"
        );
    }
    assert!(
        out.lines()
            .any(|l| l.starts_with("canonical-json") && l.contains(" 101 ")),
        "{out}"
    );
    assert!(out.contains("\ntotal"), "{out}");
}

#[test]
fn generate_check_finds_nothing_stale() {
    let (code, out) = run(&["generate", "--check"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn usage_errors_exit_2() {
    let (code, out) = run(&["verify", "--impl", "true", "--area", "no-such-area"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no vector file matches"), "{out}");
}
