//! The `loom-plsp` binary end to end: `check` (canonical form, error position, §5 drops),
//! `run` on the committed temperature-monitor scenario, and `replay` accepting its own trace
//! and refusing a tampered one.

use std::process::Command;

fn plsp(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_loom-plsp"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn example() -> String {
    format!(
        "{}/examples/temperature-monitor.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn check_prints_the_canonical_form_or_points_at_the_error() {
    let (code, out, _) = plsp(&["check", "S{ $a : 1 ; $b:\"x\" }S"]);
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "S{$a:1;$b:\"x\";}S");
    let (code, _, err) = plsp(&["check", "S{$a:1;"]);
    assert_eq!(code, 1);
    assert!(err.contains("byte 7") && err.contains("}S"), "{err}");
    let (code, _, err) = plsp(&["check", "S{$a:1;}S", "--previous", "S{$a:1;$b:2;}S"]);
    assert_eq!(code, 1, "dropping $b must be reported (§5)");
    assert!(err.contains("$b"), "{err}");
}

#[test]
fn run_then_replay_its_trace_and_catch_tampering() {
    let dir = std::env::temp_dir().join(format!("loom-plsp-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace.jsonl");
    let data = dir.join("data.jsonl");
    let (code, out, err) = plsp(&[
        "run",
        "--script",
        &example(),
        "--trace",
        trace.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(format!("{out}{err}").contains("6 cycles"), "{out}{err}");
    let (code, out, err) = plsp(&["replay", trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(format!("{out}{err}").contains("0 problems"), "{out}{err}");
    // Change one recorded thing at a time: replay must notice each.
    let text = std::fs::read_to_string(&trace).unwrap();
    let tamper = |field: &str| -> String {
        let mut lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let cycle = lines
            .iter_mut()
            .rev()
            .find(|l| l["type"] == "cycle")
            .unwrap();
        match field {
            "next" => {
                cycle["next"] = cycle["next"]
                    .as_str()
                    .unwrap()
                    .replace("$l:96", "$l:97")
                    .into()
            }
            "output" => {
                cycle["attempts"][0]["output"] = cycle["attempts"][0]["output"]
                    .as_str()
                    .unwrap()
                    .replace("$l:96", "$l:97")
                    .into()
            }
            _ => unreachable!(),
        }
        lines.iter().map(|l| l.to_string() + "\n").collect()
    };
    for field in ["next", "output"] {
        let t = tamper(field);
        assert_ne!(t, text, "{field}: nothing was changed");
        std::fs::write(&trace, t).unwrap();
        let (code, out, err) = plsp(&["replay", trace.to_str().unwrap()]);
        assert_ne!(
            code, 0,
            "a trace with a tampered {field} replayed clean: {out}{err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn usage_errors_exit_2() {
    let (code, _, _) = plsp(&["run", "--script", "/nonexistent/scenario.json"]);
    assert!(code == 1 || code == 2, "{code}");
    let (code, _, _) = plsp(&["frobnicate"]);
    assert_eq!(code, 2);
}
