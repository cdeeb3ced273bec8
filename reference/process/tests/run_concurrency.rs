//! Concurrent waves (README "Scheduling and phase mode"): independent phases really overlap,
//! the event stream stays byte-identical, and two phases writing one path are reported.

mod run_common;
use loom_process::engine::action::ToolAction;
use loom_process::engine::event::to_jsonl;
use loom_process::engine::model::{ModelError, ModelReply};
use loom_process::runner::{PhaseStatus, RunStatus};
use run_common::*;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn write(id: &str, path: &str, content: &str) -> ToolAction {
    ToolAction::FsWrite {
        id: id.into(),
        path: path.into(),
        content: content.into(),
    }
}

fn reply(actions: Vec<ToolAction>) -> ModelReply {
    ModelReply {
        message: "done".into(),
        actions,
        done: true,
        ..Default::default()
    }
}

const TWO_INDEPENDENT: &str = "name: c\nphases:\n  - {id: a, description: A, depends_on: [], deliverables: [a.md]}\n  - {id: b, description: B, depends_on: [], deliverables: [b.md]}\n  - {id: c, description: C, depends_on: [a, b], deliverables: [c.md]}\n";

/// Phase `a`'s model turn waits until phase `b`'s has started. A runner that ran the wave's
/// phases one after another (a first, by id) would time out here and fail `a`.
#[test]
fn independent_phases_of_a_wave_overlap_in_time() {
    let (tx, rx) = mpsc::channel::<()>();
    let tx = Mutex::new(tx);
    let rx = Mutex::new(rx);
    let model = FnModel(Box::new(move |r| match r.phase_id.as_str() {
        "a" => {
            let got = rx
                .lock()
                .map_err(|e| ModelError(e.to_string()))?
                .recv_timeout(Duration::from_secs(5));
            match got {
                Ok(()) => Ok(reply(vec![write("a", "a.md", "a\n")])),
                Err(e) => Err(ModelError(format!(
                    "phase b never started while a was running: {e}"
                ))),
            }
        }
        "b" => {
            tx.lock()
                .map_err(|e| ModelError(e.to_string()))?
                .send(())
                .map_err(|e| ModelError(e.to_string()))?;
            Ok(reply(vec![write("b", "b.md", "b\n")]))
        }
        _ => Ok(reply(vec![write("c", "c.md", "c\n")])),
    }));
    let (out, _d) = quick(&process(TWO_INDEPENDENT), Arc::new(model));
    assert_eq!(
        out.phases["a"].status,
        PhaseStatus::Completed,
        "{:?}",
        out.phases["a"]
    );
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.started, ["a", "b", "c"]);
}

/// Six independent phases with several turns each, finishing in reverse id order (later ids
/// sleep less), then a fan-in phase: every run gives the same bytes.
#[test]
fn concurrent_waves_give_byte_identical_events_run_after_run() {
    let mut yaml = "name: w\nphases:\n".to_owned();
    for i in 0..6 {
        yaml.push_str(&format!(
            "  - {{id: p{i}, description: P, depends_on: [], deliverables: [p{i}.md]}}\n"
        ));
    }
    yaml.push_str(
        "  - {id: z, description: Z, depends_on: [p0, p1, p2, p3, p4, p5], deliverables: [z.md]}\n",
    );
    let p = process(&yaml);
    let model = || {
        FnModel(Box::new(|r| {
            let n: u64 = r.phase_id.trim_start_matches('p').parse().unwrap_or(0);
            std::thread::sleep(Duration::from_millis(6 - n.min(6)));
            let done = r.turn >= 3;
            Ok(ModelReply {
                message: format!("{} turn {}", r.phase_id, r.turn),
                actions: vec![write(
                    &format!("{}-{}", r.phase_id, r.turn),
                    &format!("{}.md", r.phase_id),
                    &format!("turn {}\n", r.turn),
                )],
                done,
                ..Default::default()
            })
        }))
    };
    let (first, _d) = quick(&p, Arc::new(model()));
    assert_eq!(first.status, RunStatus::Completed);
    let golden = to_jsonl(&first.events);
    for _ in 0..20 {
        let (again, _d) = quick(&p, Arc::new(model()));
        assert_eq!(to_jsonl(&again.events), golden);
    }
    // Merged in phase-id order, gapless seq.
    let t = phase_transitions(&first);
    assert_eq!(t[0], "p0:running");
    assert_eq!(t[1], "p0:completed");
    assert_eq!(t[11], "p5:completed");
    for (i, e) in first.events.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1);
    }
    let ids: std::collections::BTreeSet<&str> =
        first.events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.len(), first.events.len(), "event ids are unique");
}

/// Two phases of one wave writing the same path: an `Error` names the path and both phases,
/// and the later phase (by id) fails; the earlier keeps its result.
#[test]
fn a_write_race_between_phases_of_a_wave_is_reported() {
    let model = FnModel(Box::new(|r| {
        let own = format!("{}.md", r.phase_id);
        Ok(reply(vec![
            write(&format!("{}-own", r.phase_id), &own, "x\n"),
            write(&format!("{}-shared", r.phase_id), "shared.txt", &r.phase_id),
        ]))
    }));
    let (out, _d) = quick(&process(TWO_INDEPENDENT), Arc::new(model));
    let races: Vec<_> = out
        .events
        .iter()
        .filter(|e| e.kind.name() == "Error" && e.payload["code"] == "write_race")
        .collect();
    assert_eq!(races.len(), 1, "{races:?}");
    assert_eq!(races[0].payload["path"], "shared.txt");
    assert_eq!(races[0].payload["phases"], serde_json::json!(["a", "b"]));
    assert!(
        races[0].payload["message"]
            .as_str()
            .unwrap()
            .contains("Output coordination")
    );
    assert_eq!(out.phases["a"].status, PhaseStatus::Completed);
    assert_eq!(out.phases["b"].status, PhaseStatus::Failed);
    assert_eq!(out.phases["b"].stop_reason, "write_race");
    assert_eq!(
        phase_transitions(&out),
        [
            "a:running",
            "a:completed",
            "b:running",
            "b:completed",
            "b:failed",
            "c:skipped"
        ]
    );
    let step = out.plan.steps.iter().find(|s| s.id == "b").unwrap();
    assert!(!step.done);
    assert_eq!(out.status, RunStatus::Partial);
}

/// Independent phases that write only their own files do not race.
#[test]
fn phases_with_their_own_outputs_do_not_race() {
    let model = FnModel(Box::new(|r| {
        Ok(reply(vec![write(
            &r.phase_id,
            &format!("{}.md", r.phase_id),
            "x\n",
        )]))
    }));
    let (out, _d) = quick(&process(TWO_INDEPENDENT), Arc::new(model));
    assert_eq!(out.status, RunStatus::Completed);
    assert!(out.events.iter().all(|e| e.kind.name() != "Error"));
}

/// A phase's fs tools see the workspace as it was at wave start: `b` writes `b.md` before `a`
/// looks (forced by a channel), and `a` still neither reads nor finds it.
#[test]
fn a_phase_does_not_see_files_its_siblings_wrote_during_the_wave() {
    let (tx, rx) = mpsc::channel::<()>();
    let tx = Mutex::new(tx);
    let rx = Mutex::new(rx);
    let model = FnModel(Box::new(move |r| match (r.phase_id.as_str(), r.turn) {
        ("a", 1) => {
            rx.lock()
                .map_err(|e| ModelError(e.to_string()))?
                .recv_timeout(Duration::from_secs(5))
                .map_err(|e| ModelError(e.to_string()))?;
            Ok(ModelReply {
                actions: vec![
                    ToolAction::FsRead {
                        id: "ra".into(),
                        path: "b.md".into(),
                    },
                    ToolAction::FsSearch {
                        id: "sa".into(),
                        pattern: "from".into(),
                        paths: vec![".".into()],
                    },
                    write("wa", "a.md", "from a\n"),
                ],
                done: true,
                ..Default::default()
            })
        }
        ("b", 1) => Ok(ModelReply {
            actions: vec![write("wb", "b.md", "from b\n")],
            done: false,
            ..Default::default()
        }),
        ("b", _) => {
            // b.md is on disk now; let a look.
            tx.lock()
                .map_err(|e| ModelError(e.to_string()))?
                .send(())
                .map_err(|e| ModelError(e.to_string()))?;
            Ok(reply(vec![]))
        }
        _ => Ok(reply(vec![write("wc", "c.md", "c\n")])),
    }));
    let (out, _d) = quick(&process(TWO_INDEPENDENT), Arc::new(model));
    assert_eq!(out.status, RunStatus::Completed, "{:?}", out.phases);
    let obs = |id: &str| {
        out.events
            .iter()
            .find(|e| e.kind.name() == "Observation" && e.payload["toolCallId"] == id)
            .map(|e| e.payload["observation"].clone())
            .unwrap()
    };
    let read = obs("ra");
    assert_eq!(read["ok"], false, "{read}");
    assert!(
        read["summary"]
            .as_str()
            .unwrap()
            .contains("No such file or directory"),
        "{read}"
    );
    let search = obs("sa");
    assert_eq!(search["raw"]["matches"], serde_json::json!([]), "{search}");
}
