//! Issue 35, item 4: `loom-process test` runs a package's `tests:` manifest on replies
//! derived from the definition (no script), and reports each case against its acceptance
//! block honestly: the example packages' cases that derived replies can satisfy pass, the ones
//! whose gates read a bundled tool's real output over content only a script supplies fail
//! with their first cause, and a package broken so that its definition cannot be met fails.

use loom_process::engine::event::{Event, read_jsonl};
use loom_process::engine::policy::DenyConfirm;
use loom_process::package::dir::load_dir;
use loom_process::runner::RunOptions;
use loom_process::runner::testcase::{CaseReport, CaseStatus, Replies, run_case_with};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn derived(dir: &Path) -> Vec<CaseReport> {
    let pkg = load_dir(dir).unwrap_or_else(|r| panic!("{}", r.to_text("pkg")));
    pkg.process
        .tests
        .iter()
        .map(|c| {
            run_case_with(
                &pkg.process,
                &pkg.root,
                c,
                &RunOptions::default(),
                Arc::new(DenyConfirm),
                Replies::Derived,
            )
        })
        .collect()
}

fn have_python() -> bool {
    Command::new("python3")
        .arg("-c")
        .arg("import sys")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn events(r: &CaseReport) -> Vec<Event> {
    read_jsonl(&r.events_jsonl).unwrap()
}

/// The ids of the derived write actions of `phase` in a case's events.
fn derived_writes(events: &[Event], phase: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.kind.name() == "AgentActionProposed" && e.payload["phase"] == phase)
        .filter(|e| e.payload["action"]["type"] == "fs.write")
        .map(|e| {
            e.payload["action"]["path"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

/// Every `tests:` case of the ten example packages on derived replies: which pass, which fail
/// and why (README "`test`: derived replies" keeps the same table).
#[test]
fn every_example_case_runs_on_derived_replies_against_its_acceptance() {
    // (package, case, expected status, text the first note must contain)
    let expected: &[(&str, &str, CaseStatus, &str)] = &[
        ("code-fix", "smoke", CaseStatus::Pass, "run completed"),
        (
            "contract-review",
            "smoke",
            CaseStatus::Fail,
            "first cause: clause-extraction#1 gate:has-indemnification fail: clause_scan.clauses = [], needs contains \"indemnification\"",
        ),
        (
            "financial-analysis",
            "smoke",
            CaseStatus::Pass,
            "run completed",
        ),
        (
            "financial-analysis",
            "contradicted-claims-blocked",
            CaseStatus::Pass,
            "run completed",
        ),
        (
            "incident-postmortem",
            "smoke",
            CaseStatus::Pass,
            "run completed",
        ),
        ("legacy-notes", "smoke", CaseStatus::Pass, "run completed"),
        ("market-sizing", "smoke", CaseStatus::Pass, "run completed"),
        (
            "market-sizing",
            "unsupported-synthesis",
            CaseStatus::Pass,
            "run completed",
        ),
        (
            "release-readiness",
            "smoke",
            CaseStatus::Pass,
            "run completed",
        ),
        (
            "research-report",
            "smoke",
            CaseStatus::Pass,
            "run completed",
        ),
        (
            "research-report",
            "live-smoke",
            CaseStatus::Skipped,
            "mode live",
        ),
        (
            "survey-synthesis",
            "smoke",
            CaseStatus::Pass,
            "run completed",
        ),
        (
            "web-analytics-audit",
            "smoke",
            CaseStatus::Fail,
            "first cause: funnel-analysis#1 gate:funnel-math fail: no funnel.consistency_error_pct from tool wa_metrics",
        ),
        (
            "web-analytics-audit",
            "missing-credentials",
            CaseStatus::Pass,
            "run failed, first cause: auth:analytics_export fail",
        ),
    ];
    let python = have_python();
    let mut seen = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(examples())
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("process.yaml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 10, "{names:?}");
    for name in &names {
        let dir = examples().join(name);
        let bundled = dir.join("tools").is_dir() || name == "release-readiness";
        for r in derived(&dir) {
            seen.push((name.clone(), r.id.clone()));
            let Some((_, _, status, note)) =
                expected.iter().find(|(p, c, _, _)| p == name && *c == r.id)
            else {
                panic!("{name}/{}: not in the expected table", r.id);
            };
            if !python && bundled {
                continue; // bundled tools (or py_compile) need Python: skipped, saying why
            }
            assert_eq!(
                r.status, *status,
                "{name}/{}: {:?} {:?}",
                r.id, r.notes, r.failures
            );
            assert!(r.notes[0].contains(note), "{name}/{}: {:?}", r.id, r.notes);
            if r.status == CaseStatus::Skipped {
                continue;
            }
            assert!(
                r.notes
                    .iter()
                    .any(|n| n == "replies derived from the definition"),
                "{name}/{}: {:?}",
                r.id,
                r.notes
            );
            assert!(
                r.notes
                    .iter()
                    .any(|n| n.starts_with("scripts/") && n.ends_with(" not used")),
                "{name}/{}: the ignored script is named: {:?}",
                r.id,
                r.notes
            );
            let ev = events(&r);
            assert!(
                ev[0].payload["model"] == "derived:process.yaml",
                "{name}/{}",
                r.id
            );
            // Every phase that ran and declares deliverables had them written by the derived
            // replies (at the canonical path or under the fan-in intermediate root).
            let pkg = load_dir(&dir).unwrap();
            for ph in &pkg.process.phases {
                let started = ev.iter().any(|e| {
                    e.kind.name() == "StateChanged"
                        && e.payload["scope"] == "phase"
                        && e.payload["phase"] == ph.id.as_str()
                        && e.payload["to"] == "running"
                });
                if !started {
                    continue;
                }
                let writes = derived_writes(&ev, &ph.id);
                for f in ph.deliverable_filenames() {
                    assert!(
                        writes
                            .iter()
                            .any(|w| w == f || w.ends_with(&format!("/{}/{f}", ph.id))),
                        "{name}/{}: phase {} did not write {f}: {writes:?}",
                        r.id,
                        ph.id
                    );
                }
            }
            // A passing case's acceptance was checked against this run: its deliverables are
            // among the files the run wrote or published.
            if r.status == CaseStatus::Pass {
                let case = pkg.process.tests.iter().find(|c| c.id == r.id).unwrap();
                let must = case
                    .acceptance
                    .as_ref()
                    .and_then(|a| a.deliverables.as_ref())
                    .map(|d| d.must_exist.clone())
                    .unwrap_or_default();
                for f in must {
                    assert!(
                        r.events_jsonl.contains(&format!("\"path\":\"{f}\""))
                            || r.events_jsonl.contains(&format!("{f}\"")),
                        "{name}/{}: {f} never written",
                        r.id
                    );
                }
            }
        }
    }
    assert_eq!(seen.len(), expected.len(), "{seen:?}");
}

/// Derived replies are a function of the definition: the same case gives the same bytes.
#[test]
fn derived_runs_are_byte_identical() {
    let dir = examples().join("research-report");
    let a = derived(&dir);
    let b = derived(&dir);
    assert_eq!(a[0].events_jsonl, b[0].events_jsonl);
    assert!(a[0].events_jsonl.contains("\"origin\":\"gate\""));
    assert!(
        a[0].notes
            .iter()
            .any(|n| n == "stand-in output of tools not bundled: humanize_writing"),
        "{:?}",
        a[0].notes
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// A package whose definition derived replies cannot meet fails, and the report says why: a
/// regex rule forbids the text derived replies write, and a gate needs a pattern no text can be
/// derived for. Without the breakage the same package passes.
#[test]
fn a_deliberately_broken_package_fails_on_derived_replies_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("market-sizing");
    copy_dir(&examples().join("market-sizing"), &pkg);
    std::fs::remove_dir_all(pkg.join("scripts")).unwrap();
    let smoke = |pkg: &Path| derived(pkg).into_iter().find(|r| r.id == "smoke").unwrap();
    let ok = smoke(&pkg);
    assert_eq!(ok.status, CaseStatus::Pass, "{:?}", ok.failures);
    assert!(
        ok.notes
            .contains(&"replies derived from the definition".to_owned())
    );

    let yaml = std::fs::read_to_string(pkg.join("process.yaml")).unwrap();
    let broken = yaml.replacen(
        "  rules:\n",
        "  rules:\n    - name: no-boilerplate\n      description: \"No generated boilerplate\"\n      check: \"no model wrote this file\"\n      severity: error\n      type: regex\n      target: deliverables\n",
        1,
    );
    assert_ne!(broken, yaml, "market-sizing has verification rules");
    std::fs::write(pkg.join("process.yaml"), &broken).unwrap();
    let r = smoke(&pkg);
    assert_eq!(r.status, CaseStatus::Fail, "{:?}", r.notes);
    assert!(
        r.notes[0].contains("first cause: bottom-up#1 rule:no-boilerplate fail: forbidden match"),
        "{:?}",
        r.notes
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("derived replies: phase top-down: rule no-boilerplate")),
        "{:?}",
        r.notes
    );
    assert!(
        r.failures
            .iter()
            .any(|f| f.starts_with("acceptance.deliverables.must_exist:")
                || f.starts_with("acceptance.phases.must_include:")),
        "{:?}",
        r.failures
    );
}
