//! Runner behaviour: phase modes, critical path, iteration loops, gates, budgets, scheduling.

mod run_common;
use loom_process::engine::action::ToolAction;
use loom_process::engine::model::{ModelError, ModelReply, Purpose, TokenUsage};
use loom_process::engine::policy::{CommandPolicy, RiskPolicy, TaskBudget, TaskConfig};
use loom_process::runner::{PhaseStatus, RunOptions, RunStatus};
use proptest::prelude::*;
use run_common::*;
use serde_json::json;
use std::sync::Arc;

fn write(id: &str, path: &str, content: &str) -> ToolAction {
    ToolAction::FsWrite {
        id: id.into(),
        path: path.into(),
        content: content.into(),
    }
}

/// A model that writes `<phase>.md` unless the phase is in `failing` (then it writes nothing).
fn writer(failing: &'static [&'static str]) -> FnModel {
    FnModel(Box::new(move |r| {
        let actions = if failing.contains(&r.phase_id.as_str()) {
            vec![]
        } else {
            vec![write(
                &format!("{}-{}", r.phase_id, r.attempt),
                &format!("{}.md", r.phase_id),
                "ok\n",
            )]
        };
        Ok(ModelReply {
            message: format!("{} attempt {}", r.phase_id, r.attempt),
            actions,
            done: true,
            ..Default::default()
        })
    }))
}

fn dag(mode: &str, critical_b: bool) -> String {
    format!(
        "name: m\nphase_mode: {mode}\nphases:\n  - {{id: a, description: A, depends_on: [], deliverables: [a.md]}}\n  - {{id: b, description: B, depends_on: [a], deliverables: [b.md], is_critical_path: {critical_b}}}\n  - {{id: c, description: C, depends_on: [b], deliverables: [c.md]}}\n  - {{id: d, description: D, depends_on: [], deliverables: [d.md]}}\n"
    )
}

#[test]
fn guided_skips_dependents_of_a_failed_phase_and_goes_on() {
    let (out, _d) = quick(&process(&dag("guided", false)), Arc::new(writer(&["b"])));
    assert_eq!(
        phase_transitions(&out),
        [
            "a:running",
            "a:completed",
            "d:running",
            "d:completed",
            "b:running",
            "b:failed",
            "c:skipped"
        ]
    );
    assert_eq!(out.status, RunStatus::Partial);
    assert!(
        out.phases["c"]
            .stop_reason
            .contains("dependency b did not complete")
    );
    assert_eq!(out.phases["b"].stop_reason, "max_attempts");
}

/// Strict: a failure stops the later waves; `d` shares `a`'s wave, so it ran concurrently with
/// `a` and is not skipped (README "Scheduling and phase mode").
#[test]
fn strict_stops_after_the_first_failure() {
    let (out, _d) = quick(&process(&dag("strict", false)), Arc::new(writer(&["a"])));
    assert_eq!(
        phase_transitions(&out),
        [
            "a:running",
            "a:failed",
            "d:running",
            "d:completed",
            "b:skipped",
            "c:skipped"
        ]
    );
    assert_eq!(out.status, RunStatus::Failed);
    assert!(out.stop_reason.unwrap().contains("phase_mode strict"));
}

#[test]
fn suggestive_runs_every_phase_in_dependency_order() {
    let (out, _d) = quick(
        &process(&dag("suggestive", false)),
        Arc::new(writer(&["b"])),
    );
    assert_eq!(out.started, ["a", "d", "b", "c"]);
    assert_eq!(out.phases["c"].status, PhaseStatus::Completed);
    assert_eq!(out.status, RunStatus::Partial);
}

#[test]
fn a_failed_critical_path_phase_blocks_the_process_in_any_mode() {
    let (out, _d) = quick(&process(&dag("suggestive", true)), Arc::new(writer(&["b"])));
    assert_eq!(out.phases["c"].status, PhaseStatus::Skipped);
    assert_eq!(out.status, RunStatus::Failed);
    assert!(
        out.stop_reason
            .unwrap()
            .contains("critical-path phase b failed")
    );
    assert!(out.plan.step("b").unwrap().hard_stop);
}

fn looping(extra: &str, gates: &str) -> String {
    format!(
        "name: l\nphases:\n  - id: p\n    description: P\n    depends_on: []\n    deliverables: [out.md]\n    iteration:\n      enabled: true\n      max_attempts: 4\n      max_total_runner_invocations: 6\n{extra}      iteration_budget: {{max_wall_clock_seconds: 600, max_tokens: 100000, max_tool_calls: 50}}\n      gates:\n{gates}"
    )
}

const DONE_GATE: &str = "        - {id: done, type: artifact_regex, blocking: true, target: deliverables, pattern: DONE, expect_match: true}\n";

/// Writes `out.md` with "attempt N" and, from attempt `ok_at`, "DONE".
fn converging(ok_at: u32) -> FnModel {
    FnModel(Box::new(move |r| {
        let body = if r.attempt >= ok_at {
            format!("attempt {} DONE\n", r.attempt)
        } else {
            format!("attempt {}\n", r.attempt)
        };
        Ok(ModelReply {
            message: format!("feedback seen: {}", r.feedback.len()),
            actions: vec![write(&format!("w{}", r.attempt), "out.md", &body)],
            done: true,
            tokens: TokenUsage {
                prompt: 10,
                completion: 10,
            },
            ..Default::default()
        })
    }))
}

#[test]
fn iteration_retries_with_feedback_until_gates_pass() {
    let (out, dir) = quick(&process(&looping("", DONE_GATE)), Arc::new(converging(3)));
    assert_eq!(out.phases["p"].attempts, 3);
    assert_eq!(out.phases["p"].status, PhaseStatus::Completed);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.md")).unwrap(),
        "attempt 3 DONE\n"
    );
    let msgs: Vec<String> = kinds(&out)
        .into_iter()
        .filter(|(k, _)| k == "AgentMessage")
        .map(|(_, p)| p["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        msgs,
        ["feedback seen: 0", "feedback seen: 1", "feedback seen: 1"]
    );
    assert_eq!(out.evidence.len(), 3);
    assert!(
        out.evidence[0].errors[0].contains("no match for \"DONE\""),
        "{:?}",
        out.evidence[0]
    );
}

#[test]
fn attempts_are_capped_by_max_attempts_and_by_invocations() {
    let (out, _d) = quick(&process(&looping("", DONE_GATE)), Arc::new(converging(99)));
    assert_eq!(
        (
            out.phases["p"].attempts,
            out.phases["p"].stop_reason.as_str()
        ),
        (4, "max_attempts")
    );
    let yaml = looping("", DONE_GATE).replace(
        "max_total_runner_invocations: 6",
        "max_total_runner_invocations: 2",
    );
    let (out, _d) = quick(&process(&yaml), Arc::new(converging(99)));
    assert_eq!(
        (
            out.phases["p"].attempts,
            out.phases["p"].stop_reason.as_str()
        ),
        (2, "max_total_runner_invocations")
    );
}

#[test]
fn full_rerun_restores_the_workspace_before_each_retry() {
    let yaml = looping("      strategy: full_rerun\n", DONE_GATE);
    let model = FnModel(Box::new(|r| {
        let mut actions = vec![write(
            &format!("s{}", r.attempt),
            &format!("scratch-{}.txt", r.attempt),
            "x",
        )];
        if r.attempt == 2 {
            actions.push(write("w2", "out.md", "DONE\n"));
        }
        Ok(ModelReply {
            actions,
            done: true,
            ..Default::default()
        })
    }));
    let (out, dir) = quick(&process(&yaml), Arc::new(model));
    assert_eq!(out.phases["p"].status, PhaseStatus::Completed);
    assert!(
        !dir.path().join("scratch-1.txt").exists(),
        "attempt 1's files were rolled back"
    );
    assert!(dir.path().join("scratch-2.txt").exists());
    let restores = kinds(&out)
        .into_iter()
        .filter(|(k, p)| {
            k == "ToolCallStarted" && p["type"] == "checkpoint.restore" && p["origin"] == "runner"
        })
        .count();
    assert_eq!(restores, 1);
}

#[test]
fn score_gates_stop_when_they_do_not_improve() {
    // The metric is read from the JSON stdout of the attempt's latest `terminal.run`.
    let gates = "        - {id: score, type: tool_metric, blocking: true, tool: terminal.run, metric_path: report.score, operator: gte, value: 80}\n";
    let yaml = looping("      stop_on_no_improvement_attempts: 1\n", gates);
    let model = FnModel(Box::new(|_r| {
        Ok(ModelReply {
            actions: vec![
                ToolAction::TerminalRun {
                    id: "m".into(),
                    program: "echo".into(),
                    args: vec![r#"{"report": {"score": 50}}"#.into()],
                    cwd: None,
                },
                write("w", "out.md", "x"),
            ],
            done: true,
            ..Default::default()
        })
    }));
    let dir = tempfile::tempdir().unwrap();
    let task = TaskConfig {
        risk_policy: RiskPolicy {
            command_allowlist: vec!["echo".into()],
            ..RiskPolicy::default()
        },
        ..TaskConfig::default()
    };
    let out = run_in(
        dir.path(),
        &process(&yaml),
        &env(Arc::new(model), 1),
        task,
        RunOptions::default(),
    );
    assert_eq!(
        (
            out.phases["p"].attempts,
            out.phases["p"].stop_reason.as_str()
        ),
        (2, "no_improvement")
    );
    let reasons: Vec<String> = kinds(&out)
        .into_iter()
        .filter(|(k, p)| k == "JudgeResult" && p["kind"] == "gate")
        .map(|(_, p)| p["reasons"][0].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(reasons[0], "terminal.run.report.score = 50, needs gte 80");
}

#[test]
fn command_exit_gates_are_skipped_unless_enabled_and_then_follow_the_exit_code() {
    let gates = "        - {id: file, type: command_exit, blocking: true, command: [test, -f, ready.txt], operator: eq, value: 0}\n";
    let yaml = looping("", gates);
    let model = FnModel(Box::new(|r| {
        let mut actions = vec![write("w", "out.md", "x")];
        if r.attempt == 2 {
            actions.push(write("r", "ready.txt", ""));
        }
        Ok(ModelReply {
            actions,
            done: true,
            ..Default::default()
        })
    }));
    let model = Arc::new(model);
    let task = TaskConfig {
        risk_policy: RiskPolicy {
            command_allowlist: vec!["test".into()],
            command_policy: CommandPolicy::Allowlist,
            ..RiskPolicy::default()
        },
        ..TaskConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        dir.path(),
        &process(&yaml),
        &env(model.clone(), 1),
        task.clone(),
        RunOptions::default(),
    );
    assert_eq!(out.phases["p"].attempts, 1, "a skipped gate does not block");
    let skipped = kinds(&out)
        .into_iter()
        .any(|(k, p)| k == "JudgeResult" && p["name"] == "file" && p["status"] == "skipped");
    assert!(skipped);
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        enable_command_exit_gates: true,
        ..RunOptions::default()
    };
    let out = run_in(dir.path(), &process(&yaml), &env(model, 1), task, opts);
    assert_eq!(out.phases["p"].attempts, 2);
    assert_eq!(out.phases["p"].status, PhaseStatus::Completed);
    let started = kinds(&out)
        .into_iter()
        .filter(|(k, p)| k == "ToolCallStarted" && p["origin"] == "gate")
        .count();
    assert_eq!(started, 2);
}

#[test]
fn verifier_field_gates_are_advisory() {
    let gates = format!(
        "{DONE_GATE}        - {{id: v, type: verifier_field, field: severity_class, operator: eq, value: none}}\n"
    );
    let yaml = looping("", &gates)
        + "verification:\n  rules:\n    - {name: warn, check: x, type: regex, severity: warning}\n";
    let model = FnModel(Box::new(|_| {
        Ok(ModelReply {
            message: "x".into(),
            actions: vec![write("w", "out.md", "DONE")],
            done: true,
            ..Default::default()
        })
    }));
    let (out, _d) = quick(&process(&yaml), Arc::new(model));
    assert_eq!(out.phases["p"].status, PhaseStatus::Completed);
    let v = kinds(&out)
        .into_iter()
        .find(|(k, p)| k == "JudgeResult" && p["name"] == "v")
        .unwrap()
        .1;
    assert_eq!(
        (v["status"].as_str(), v["blocking"].as_bool()),
        (Some("fail"), Some(false))
    );
    assert_eq!(
        v["reasons"][0],
        "verifier severity_class = \"warning\", needs eq \"none\""
    );
}

#[test]
fn error_rules_and_missing_deliverables_fail_a_phase_without_iteration() {
    let yaml = "name: r\nphases:\n  - {id: p, description: P, depends_on: [], deliverables: [\"report.md — the report\"]}\nverification:\n  rules:\n    - {name: no-placeholders, check: \"\\\\[TBD\\\\]\", type: regex, severity: error, target: deliverables}\n";
    let model = FnModel(Box::new(|_| {
        Ok(ModelReply {
            actions: vec![write("w", "tesla_report.md", "x")],
            done: true,
            ..Default::default()
        })
    }));
    let (out, _d) = quick(&process(yaml), Arc::new(model));
    assert_eq!(out.phases["p"].status, PhaseStatus::Failed);
    let reasons = &out.evidence[0].errors;
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("deliverable_missing: report.md not found")),
        "{reasons:?}"
    );
    let model = FnModel(Box::new(|_| {
        Ok(ModelReply {
            actions: vec![write("w", "report.md", "[TBD]")],
            done: true,
            ..Default::default()
        })
    }));
    let (out, _d) = quick(&process(yaml), Arc::new(model));
    assert_eq!(out.phases["p"].status, PhaseStatus::Failed);
    assert!(
        out.evidence[0]
            .errors
            .iter()
            .any(|r| r.starts_with("rule no-placeholders: forbidden match file:report.md:1")),
        "{:?}",
        out.evidence[0]
    );
}

#[test]
fn model_errors_and_endless_turns_stop_the_phase() {
    let yaml = looping("", DONE_GATE);
    let (out, _d) = quick(
        &process(&yaml),
        Arc::new(FnModel(Box::new(|_| {
            Err(ModelError("backend down".into()))
        }))),
    );
    assert_eq!(
        (
            out.phases["p"].attempts,
            out.phases["p"].stop_reason.as_str()
        ),
        (1, "model_error")
    );
    let endless = FnModel(Box::new(|r| {
        Ok(ModelReply {
            actions: vec![write(&format!("t{}", r.turn), "out.md", "x")],
            done: false,
            ..Default::default()
        })
    }));
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        max_turns_per_attempt: 3,
        ..RunOptions::default()
    };
    let out = run_in(
        dir.path(),
        &process(&yaml),
        &env(Arc::new(endless), 1),
        TaskConfig::default(),
        opts,
    );
    assert_eq!(
        (
            out.phases["p"].attempts,
            out.phases["p"].stop_reason.as_str()
        ),
        (1, "max_turns")
    );
}

#[test]
fn policy_refusals_reach_the_model_as_observations() {
    let yaml = "name: r\nphases:\n  - {id: p, description: P, depends_on: []}\n";
    let model = FnModel(Box::new(|r| {
        if r.turn == 1 {
            return Ok(ModelReply {
                actions: vec![
                    write("esc", "../escape.txt", "x"),
                    ToolAction::BrowserFetch {
                        id: "net".into(),
                        url: "https://example.org".into(),
                    },
                ],
                ..Default::default()
            });
        }
        assert_eq!(r.observations.len(), 2);
        assert!(r.observations.iter().all(|o| !o.ok));
        Ok(ModelReply {
            message: format!(
                "{} | {}",
                r.observations[0].summary, r.observations[1].summary
            ),
            done: true,
            ..Default::default()
        })
    }));
    let (out, _d) = quick(&process(yaml), Arc::new(model));
    let last = kinds(&out)
        .into_iter()
        .rfind(|(k, _)| k == "AgentMessage")
        .unwrap()
        .1;
    let m = last["message"].as_str().unwrap();
    assert!(
        m.contains("pathPolicy workspace_only") && m.contains("allowNetwork is false"),
        "{m}"
    );
}

#[test]
fn a_run_budget_halts_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let task = TaskConfig {
        budget: TaskBudget {
            max_tool_calls: Some(2),
            ..TaskBudget::default()
        },
        ..TaskConfig::default()
    };
    let out = run_in(
        dir.path(),
        &process(&dag("guided", false)),
        &env(Arc::new(writer(&[])), 1),
        task,
        RunOptions::default(),
    );
    assert_eq!(out.status, RunStatus::Failed);
    assert_eq!(out.stop_reason.as_deref(), Some("run budget_tool_calls"));
    // Wave 1 (a, d) used the two calls; the run halts before wave 2.
    assert_eq!(out.started, ["a", "d"]);
    assert_eq!(out.phases["b"].status, PhaseStatus::Skipped);
    assert_eq!(out.phases["c"].status, PhaseStatus::Skipped);
}

/// The phases of a wave each see the run budget remaining at wave start, so a wave can
/// overshoot it by their concurrent usage; the run halts before the next wave.
#[test]
fn a_wave_can_overshoot_the_run_budget_and_the_run_halts_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let task = TaskConfig {
        budget: TaskBudget {
            max_tool_calls: Some(1),
            ..TaskBudget::default()
        },
        ..TaskConfig::default()
    };
    let out = run_in(
        dir.path(),
        &process(&dag("guided", false)),
        &env(Arc::new(writer(&[])), 1),
        task,
        RunOptions::default(),
    );
    assert_eq!(out.started, ["a", "d"]);
    assert_eq!(out.phases["a"].status, PhaseStatus::Completed);
    assert_eq!(out.phases["d"].status, PhaseStatus::Completed);
    assert_eq!(out.stop_reason.as_deref(), Some("run budget_tool_calls"));
    assert_eq!(out.phases["b"].status, PhaseStatus::Skipped);
    let last = out
        .events
        .iter()
        .rfind(|e| e.payload.get("usage").is_some())
        .unwrap();
    assert_eq!(last.payload["usage"]["toolCalls"], 2, "both calls counted");
}

#[test]
fn llm_rules_go_through_the_model_with_judge_requests() {
    let yaml = "name: r\nphases:\n  - {id: p, description: P, depends_on: [], deliverables: [a.md]}\nverification:\n  rules:\n    - {name: sourced, check: Cite sources., type: llm, severity: error, target: deliverables}\n";
    let model = FnModel(Box::new(|r| match &r.purpose {
        Purpose::Act => Ok(ModelReply {
            actions: vec![write("w", "a.md", "claim")],
            done: true,
            ..Default::default()
        }),
        Purpose::Judge {
            rule,
            check,
            subject,
        } => {
            assert_eq!(
                (rule.as_str(), check.as_str()),
                ("sourced", "Cite sources.")
            );
            assert_eq!(subject, "--- file:a.md\nclaim");
            Ok(ModelReply {
                verdict: Some(false),
                reasons: vec!["uncited claim".into()],
                tokens: TokenUsage {
                    prompt: 7,
                    completion: 0,
                },
                ..Default::default()
            })
        }
        _ => Ok(ModelReply::default()),
    }));
    let (out, _d) = quick(&process(yaml), Arc::new(model));
    assert_eq!(out.phases["p"].status, PhaseStatus::Failed);
    let last = out.events.last().unwrap();
    let task = out
        .events
        .iter()
        .rev()
        .find(|e| e.kind.name() == "TaskUpdated")
        .unwrap();
    assert_eq!(task.payload["usage"]["tokens"], 7);
    assert_eq!(last.payload["to"], "partial");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// No phase starts before all its dependencies have finished (completed), in any DAG.
    #[test]
    fn no_phase_starts_before_its_dependencies(n in 1usize..7, bits in proptest::collection::vec(any::<bool>(), 21), mode in 0usize..3) {
        let mode = ["strict", "guided", "suggestive"][mode];
        let mut yaml = format!("name: g\nphase_mode: {mode}\nphases:\n");
        let mut k = 0;
        for i in 0..n {
            let mut deps = Vec::new();
            for j in 0..i {
                if bits[k] { deps.push(format!("p{j}")); }
                k += 1;
            }
            yaml.push_str(&format!("  - {{id: p{i}, description: x, depends_on: [{}], deliverables: [p{i}.md]}}\n", deps.join(", ")));
        }
        let p = process(&yaml);
        let (out, _d) = quick(&p, Arc::new(writer(&[])));
        prop_assert_eq!(out.status, RunStatus::Completed);
        let t = phase_transitions(&out);
        for ph in &p.phases {
            let start = t.iter().position(|x| *x == format!("{}:running", ph.id)).unwrap();
            for d in &ph.depends_on {
                let done = t.iter().position(|x| *x == format!("{d}:completed")).unwrap();
                prop_assert!(done < start, "{} started before {} completed: {:?}", ph.id, d, t);
                // And in (injected) time: the clock is brought forward past a wave's forks.
                let ts = |s: &str| out.events.iter().find(|e| e.kind.name() == "StateChanged" && e.payload["scope"] == "phase" && format!("{}:{}", e.payload["phase"].as_str().unwrap_or(""), e.payload["to"].as_str().unwrap_or("")) == s).map(|e| e.ts).unwrap();
                let (done_ts, start_ts) = (ts(&format!("{d}:completed")), ts(&format!("{}:running", ph.id)));
                prop_assert!(done_ts < start_ts, "{} started at {} before {} completed at {}", ph.id, start_ts, d, done_ts);
            }
        }
    }

    /// Budgets always stop a loop whose gates never pass and whose model never stops.
    #[test]
    fn budgets_always_stop_loops(tool_calls in 1i64..12, tokens in 1i64..500, wall_s in 1i64..5, attempts in 1i64..7, per_turn in 0u64..60) {
        let yaml = format!(
            "name: b\nphases:\n  - id: p\n    description: P\n    depends_on: []\n    iteration:\n      enabled: true\n      max_attempts: {attempts}\n      max_total_runner_invocations: 6\n      iteration_budget: {{max_wall_clock_seconds: {wall_s}, max_tokens: {tokens}, max_tool_calls: {tool_calls}}}\n      gates:\n        - {{id: never, type: artifact_regex, blocking: true, target: output, pattern: NEVER, expect_match: true}}\n"
        );
        let model = FnModel(Box::new(move |r| Ok(ModelReply {
            message: "again".into(),
            actions: vec![write(&format!("a{}-{}", r.attempt, r.turn), "f.txt", "x")],
            tokens: TokenUsage { prompt: per_turn, completion: 0 },
            done: false,
            ..Default::default()
        })));
        let dir = tempfile::tempdir().unwrap();
        // 100 ms per clock reading: the wall-clock budget matters too.
        let out = run_in(dir.path(), &process(&yaml), &env(Arc::new(model), 100), TaskConfig::default(), RunOptions { max_turns_per_attempt: 1000, ..RunOptions::default() });
        let p = &out.phases["p"];
        prop_assert_eq!(p.status, PhaseStatus::Failed);
        prop_assert!(i64::from(p.attempts) <= attempts.min(6));
        let known = ["budget_tool_calls", "budget_tokens", "budget_wall_time", "max_attempts"];
        prop_assert!(known.contains(&p.stop_reason.as_str()), "{}", p.stop_reason);
        let calls = out.events.iter().filter(|e| e.kind.name() == "ToolCallStarted").count() as i64;
        prop_assert!(calls <= tool_calls);
    }
}

#[test]
fn events_name_the_run_and_count_from_one() {
    let (out, _d) = quick(&process(&dag("guided", false)), Arc::new(writer(&[])));
    let first = &out.events[0];
    assert_eq!(first.seq, 1);
    assert!(out.events.iter().all(|e| e.run_id == first.run_id));
    assert_eq!(
        out.events.last().unwrap().payload,
        json!({"scope": "run", "from": "running", "to": "completed"})
    );
}

fn coordinated(coord: &str, b_extra: &str) -> String {
    format!(
        "name: o\noutput_coordination:\n{coord}phases:\n  - {{id: a, description: A, depends_on: [], deliverables: [a.md]}}\n  - {{id: b, description: B, depends_on: [a], deliverables: [\"report.md — r\", \"data.csv — d\"]{b_extra}}}\n"
    )
}

#[test]
fn fan_in_phases_publish_through_their_finalizer() {
    let yaml = coordinated("  strategy: fan_in\n  intermediate_root: .loom/work\n", "");
    let model = FnModel(Box::new(|r| {
        let actions = match r.phase_id.as_str() {
            "a" => vec![write("a", ".loom/work/a/a.md", "A")],
            _ => {
                assert!(
                    r.system
                        .contains("under .loom/work/b/; the phase finalizer publishes them"),
                    "{}",
                    r.system
                );
                vec![
                    write("r", ".loom/work/b/report.md", "R"),
                    write("d", ".loom/work/b/data.csv", "D"),
                ]
            }
        };
        Ok(ModelReply {
            actions,
            done: true,
            ..Default::default()
        })
    }));
    let (out, dir) = quick(&process(&yaml), Arc::new(model));
    assert_eq!(out.status, RunStatus::Completed, "{:?}", out.phases);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("report.md")).unwrap(),
        "R"
    );
    let fin: Vec<String> = kinds(&out)
        .into_iter()
        .filter(|(k, p)| k == "StateChanged" && p["scope"] == "finalizer")
        .map(|(_, p)| {
            format!(
                "{}:{}",
                p["phase"].as_str().unwrap(),
                p["to"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        fin,
        [
            "a__finalize_output:running",
            "a__finalize_output:completed",
            "b__finalize_output:running",
            "b__finalize_output:completed"
        ]
    );
}

#[test]
fn fan_in_require_all_workers_publishes_nothing_when_an_input_is_missing() {
    let only_report = |r: &loom_process::engine::model::ModelRequest| {
        let actions = match r.phase_id.as_str() {
            "a" => vec![write("a", "a.md", "A")],
            _ => vec![write("r", ".loom/phase-artifacts/b/report.md", "R")],
        };
        Ok(ModelReply {
            actions,
            done: true,
            ..Default::default()
        })
    };
    let yaml = coordinated("  strategy: direct\n", ", output_strategy: fan_in");
    let (out, dir) = quick(&process(&yaml), Arc::new(FnModel(Box::new(only_report))));
    assert_eq!(out.phases["a"].status, PhaseStatus::Completed);
    assert_eq!(out.phases["b"].status, PhaseStatus::Failed);
    assert!(!dir.path().join("report.md").exists());
    assert!(
        out.evidence[1]
            .errors
            .iter()
            .any(|e| e
                .contains("finalizer_input_missing: .loom/phase-artifacts/b/data.csv not found")),
        "{:?}",
        out.evidence[1]
    );
    let yaml = coordinated(
        "  strategy: direct\n",
        ", output_strategy: fan_in, finalizer_input_policy: allow_partial",
    );
    let (out, dir) = quick(&process(&yaml), Arc::new(FnModel(Box::new(only_report))));
    assert!(
        dir.path().join("report.md").exists(),
        "allow_partial publishes what exists"
    );
    assert_eq!(
        out.phases["b"].status,
        PhaseStatus::Failed,
        "data.csv is still a missing deliverable"
    );
}

#[test]
fn single_writer_conflicts_are_deferred_or_fail_fast() {
    let intruder = |r: &loom_process::engine::model::ModelRequest| {
        let actions = match r.phase_id.as_str() {
            "a" => vec![write("steal", "report.md", "mine"), write("a", "a.md", "A")],
            _ => vec![write("r", "report.md", "R"), write("d", "data.csv", "D")],
        };
        Ok(ModelReply {
            actions,
            done: true,
            ..Default::default()
        })
    };
    let yaml = coordinated(
        "  enforce_single_writer: true\n  conflict_policy: defer_fifo\n",
        "",
    );
    let (out, dir) = quick(&process(&yaml), Arc::new(FnModel(Box::new(intruder))));
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("report.md")).unwrap(),
        "R"
    );
    let refused = kinds(&out)
        .into_iter()
        .find(|(k, p)| k == "Observation" && p["toolCallId"] == "steal")
        .unwrap()
        .1;
    assert!(
        refused["observation"]["summary"]
            .as_str()
            .unwrap()
            .starts_with(
                "enforce_single_writer: report.md is a canonical deliverable of phase b, not a"
            )
    );
    let yaml = coordinated(
        "  enforce_single_writer: true\n  conflict_policy: fail_fast\n",
        "",
    );
    let (out, _dir) = quick(&process(&yaml), Arc::new(FnModel(Box::new(intruder))));
    assert_eq!(
        (out.phases["a"].status, out.phases["a"].stop_reason.as_str()),
        (PhaseStatus::Failed, "write_conflict")
    );
}

#[test]
fn excluded_tools_are_refused_and_policy_mode_orders_rules() {
    let yaml = "name: x\ntools:\n  excluded: [terminal.exec]\nphases:\n  - {id: p, description: P, depends_on: []}\nverification:\n  policy: {mode: static_first}\n  rules:\n    - {name: judge, check: ok?, type: llm, severity: warning}\n    - {name: plain, check: NEVER, type: regex, severity: error}\n";
    let model = FnModel(Box::new(|r| match r.purpose {
        Purpose::Act => Ok(ModelReply {
            actions: vec![ToolAction::TerminalExec {
                id: "x".into(),
                cmd: "cargo test".into(),
                cwd: None,
            }],
            done: true,
            ..Default::default()
        }),
        Purpose::Judge { .. } => Ok(ModelReply {
            verdict: Some(true),
            ..Default::default()
        }),
        _ => Ok(ModelReply::default()),
    }));
    let (out, _d) = quick(&process(yaml), Arc::new(model));
    let obs = kinds(&out)
        .into_iter()
        .find(|(k, _)| k == "Observation")
        .unwrap()
        .1;
    assert_eq!(
        obs["observation"]["summary"],
        "tools.excluded: this process does not use terminal.exec (guide \"Tool guidance\")"
    );
    let rules: Vec<String> = kinds(&out)
        .into_iter()
        .filter(|(k, p)| k == "JudgeResult" && p["kind"] == "rule")
        .map(|(_, p)| p["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(rules, ["plain", "judge"]);
}

#[test]
fn with_iteration_loops_disabled_a_phase_gets_one_attempt_and_no_gates() {
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        enable_iteration_loops: false,
        ..RunOptions::default()
    };
    let out = run_in(
        dir.path(),
        &process(&looping("", DONE_GATE)),
        &env(Arc::new(converging(3)), 1),
        TaskConfig::default(),
        opts,
    );
    assert_eq!(
        (out.phases["p"].attempts, out.phases["p"].status),
        (1, PhaseStatus::Completed)
    );
    assert!(
        !kinds(&out)
            .iter()
            .any(|(k, p)| k == "JudgeResult" && p["kind"] == "gate")
    );
}
