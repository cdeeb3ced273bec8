//! Runner fixes from the security review: fan-in intermediates under `full_rerun`, gate
//! commands and the tool-call budget, evidence hashing of binary files.

mod run_common;
use loom_process::engine::action::ToolAction;
use loom_process::engine::model::ModelReply;
use loom_process::engine::policy::{RiskPolicy, TaskConfig};
use loom_process::runner::{PhaseStatus, RunOptions};
use run_common::*;
use std::sync::Arc;

fn write(id: &str, path: &str, content: &str) -> ToolAction {
    ToolAction::FsWrite {
        id: id.into(),
        path: path.into(),
        content: content.into(),
    }
}

/// Attempt 1 writes a draft intermediate (published, then failed by the gate); attempt 2
/// writes nothing. The retry must not publish attempt 1's stale intermediate.
#[test]
fn full_rerun_clears_fan_in_intermediates_before_a_retry() {
    let yaml = "name: f\nphases:\n  - id: p\n    description: P\n    depends_on: []\n    deliverables: [out.md]\n    output_strategy: fan_in\n    iteration:\n      enabled: true\n      max_attempts: 2\n      strategy: full_rerun\n      gates:\n        - {id: done, type: artifact_regex, blocking: true, target: deliverables, pattern: DONE, expect_match: true}\n";
    let model = FnModel(Box::new(|r| {
        let actions = if r.attempt == 1 {
            vec![write("w1", ".loom/phase-artifacts/p/out.md", "draft\n")]
        } else {
            vec![]
        };
        Ok(ModelReply {
            actions,
            done: true,
            ..Default::default()
        })
    }));
    let (out, dir) = quick(&process(yaml), Arc::new(model));
    assert_eq!(out.phases["p"].attempts, 2);
    assert_eq!(out.phases["p"].status, PhaseStatus::Failed);
    assert!(
        !dir.path().join("out.md").exists(),
        "the stale draft was published again"
    );
    assert!(
        !dir.path().join(".loom/phase-artifacts/p/out.md").exists(),
        "the intermediate survived the reset"
    );
    let finalizer_2: Vec<_> = kinds(&out)
        .into_iter()
        .filter(|(k, p)| k == "JudgeResult" && p["kind"] == "finalizer" && p["attempt"] == 2)
        .collect();
    assert_eq!(finalizer_2.len(), 1);
    assert_eq!(finalizer_2[0].1["status"], "fail");
    assert!(
        finalizer_2[0].1["reasons"][0]
            .as_str()
            .unwrap()
            .starts_with("finalizer_input_missing"),
        "{:?}",
        finalizer_2[0].1
    );
}

fn gated(max_tool_calls: u32) -> String {
    format!(
        "name: g\nphases:\n  - id: p\n    description: P\n    depends_on: []\n    deliverables: [out.md]\n    iteration:\n      enabled: true\n      max_attempts: 1\n      iteration_budget: {{max_tool_calls: {max_tool_calls}}}\n      gates:\n        - {{id: check, type: command_exit, blocking: true, command: [make, test, --version], operator: eq, value: 0}}\n"
    )
}

fn writes_out() -> FnModel {
    FnModel(Box::new(|_| {
        Ok(ModelReply {
            actions: vec![write("w", "out.md", "x")],
            done: true,
            ..Default::default()
        })
    }))
}

fn gate_runs() -> RunOptions {
    RunOptions {
        enable_command_exit_gates: true,
        ..RunOptions::default()
    }
}

/// A gate command whose call would exceed the loop's tool-call budget is not run; one that
/// runs reports `origin: gate` on both its Started and Finished events. Gates keep the
/// guide's allowlist (`make test`) although model commands have none by default.
#[test]
fn gate_commands_respect_the_budget_and_carry_their_origin() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        dir.path(),
        &process(&gated(1)),
        &env(Arc::new(writes_out()), 1),
        TaskConfig::default(),
        gate_runs(),
    );
    let ev = kinds(&out);
    assert!(
        !ev.iter()
            .any(|(k, p)| k == "ToolCallStarted" && p["origin"] == "gate"),
        "the gate command ran past the budget"
    );
    let gate = ev
        .iter()
        .find(|(k, p)| k == "JudgeResult" && p["name"] == "check")
        .unwrap();
    assert_eq!(gate.1["status"], "error");
    assert!(
        gate.1["reasons"][0]
            .as_str()
            .unwrap()
            .contains("tool-call budget is used up"),
        "{:?}",
        gate.1
    );

    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        dir.path(),
        &process(&gated(5)),
        &env(Arc::new(writes_out()), 1),
        TaskConfig::default(),
        gate_runs(),
    );
    let ev = kinds(&out);
    for kind in ["ToolCallStarted", "ToolCallFinished"] {
        let n = ev
            .iter()
            .filter(|(k, p)| k == kind && p["origin"] == "gate")
            .count();
        assert_eq!(n, 1, "{kind}");
    }
    let obs = ev
        .iter()
        .find(|(k, p)| k == "Observation" && p["toolCallId"] == "gate:p#1:check")
        .unwrap();
    assert!(
        !obs.1["observation"]["summary"]
            .as_str()
            .unwrap()
            .contains("commandPolicy"),
        "the guide's allowlist admits gate commands: {:?}",
        obs.1
    );
}

/// The evidence `diff` hashes the bytes of what an attempt wrote, binary files included.
#[test]
fn evidence_diff_ids_hash_binary_contents() {
    let run_with = |byte: &'static str| {
        let model = FnModel(Box::new(move |_| {
            Ok(ModelReply {
                actions: vec![
                    write("w", "out.md", "x"),
                    ToolAction::TerminalRun {
                        id: "bin".into(),
                        program: "sh".into(),
                        args: vec!["-c".into(), format!("printf '\\{byte}' > out.md")],
                        cwd: None,
                    },
                ],
                done: true,
                ..Default::default()
            })
        }));
        let task = TaskConfig {
            risk_policy: RiskPolicy {
                command_allowlist: vec!["sh".into()],
                ..RiskPolicy::default()
            },
            ..TaskConfig::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let yaml = "name: e\nphases:\n  - {id: p, description: P, depends_on: [], deliverables: [out.md]}\n";
        let out = run_in(
            dir.path(),
            &process(yaml),
            &env(Arc::new(model), 1),
            task,
            RunOptions::default(),
        );
        assert_eq!(std::fs::read(dir.path().join("out.md")).unwrap().len(), 1);
        out.evidence[0].diff.clone().unwrap()
    };
    assert_ne!(run_with("377"), run_with("376"));
}
