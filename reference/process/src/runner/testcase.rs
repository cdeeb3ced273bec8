//! The package `tests:` manifest in deterministic mode (guide "Process test manifest").
//!
//! Conventions (README "Running"), all relative to the package directory:
//! - `scripts/<case-id>.yaml` (or `.yml`, `.json`): the scripted model of the case
//!   ([`crate::engine::model::ScriptedModel`] format). Optional: without one (or with
//!   [`Replies::Derived`]) the case runs on replies derived from the definition
//!   ([`crate::runner::derived`], what the guide's loader does for `mode: deterministic`);
//!   with [`Replies::Scripted`] a case without a script fails.
//! - `scripts/<case-id>.workspace/` (optional): copied into the fresh temporary workspace
//!   before the run (fixtures such as a failing test to fix).
//! - `scripts/<case-id>.task.json` (optional): a loop-engine "Task Config Schema" object for
//!   the run (budget, risk policy); `goal` and `workspace` are taken from the case.
//! - `scripts/<case-id>.auth.json` (optional): the credentials the case's auth preflight
//!   sees, `{"ENV_KEY": "value"}` (the runner's own environment is never read in tests).
//!
//! A package's bundled tools run for real with its declared interpreter
//! (`engine::bundled`). Where no such Python exists on the machine, a case of a package whose
//! gates or script use a bundled tool is skipped with a note saying so (it is not failed).
//!
//! A case id names files, so at runtime it must match `^[a-z0-9][a-z0-9_.-]*$` without `..`
//! ([`check_case_id`]); any other id fails the case without touching the file system.
//!
//! The run uses a manual clock starting at [`DETERMINISTIC_START_MS`] that advances 1 ms per
//! reading, and a seed derived from the package name and the case id (so different packages'
//! cases get different run ids); the scripted model is named by its package-relative path
//! (`scripted:scripts/<case-id>.yaml`), so a case's events are byte-identical on every run,
//! whatever path the package was given by. `timeout_seconds` becomes the run's `maxWallTimeMs` on that clock (unless the
//! task config sets a smaller one); `requires_network` sets `allowNetwork`.
//!
//! A case passes when every acceptance assertion holds: `phases.must_include` phases ran
//! (were started: a failure-path case may include a phase that fails); `deliverables.must_exist` files exist in the workspace; no
//! `verification.forbidden_patterns` regex matches the verification output (every
//! `JudgeResult` reason and every `Error` message of each phase's FINAL attempt — earlier
//! attempts that a retry repaired do not count — plus run-level errors). A case without acceptance
//! assertions passes when the run completes. A model error (for example a script that runs
//! out) always fails the case. `live` cases are skipped: they need real providers. The
//! report's first note is the run's status and, when it did not complete, its first cause
//! ([`crate::engine::event::first_cause`]); with derived replies the notes also say what
//! they could not give, which checks passed unjudged and which tools got stand-in outputs.

use super::{Env, RunOptions, RunRequest, RunStatus, run};
use crate::engine::clock::ManualClock;
use crate::engine::event::{EventType, to_jsonl};
use crate::engine::model::{Model, ScriptedModel};
use crate::engine::planner::ModelPlanner;
use crate::engine::policy::{Confirm, TaskConfig, resolve_in_workspace};
use crate::engine::tools::ToolOutputs;
use crate::package::{Process, TestCase, TestMode};
use crate::runner::derived::DerivedModel;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// 2026-01-01T00:00:00Z: where the deterministic clock starts.
pub const DETERMINISTIC_START_MS: i64 = 1_767_225_600_000;

/// A case's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    /// Every assertion held.
    Pass,
    /// Some assertion failed (or the case could not run).
    Fail,
    /// Not run (`live` mode).
    Skipped,
}

/// The report of one case.
#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    /// Case id.
    pub id: String,
    /// Verdict.
    pub status: CaseStatus,
    /// Why it failed (empty on pass).
    pub failures: Vec<String>,
    /// Informational notes.
    pub notes: Vec<String>,
    /// The run's status, when it ran.
    pub run_status: Option<RunStatus>,
    /// The run's events as JSONL (empty when it did not run).
    #[serde(skip)]
    pub events_jsonl: String,
}

/// A case id is used in file names (`scripts/<id>.yaml`, `<events-dir>/<id>.jsonl`): it must
/// match `^[a-z0-9][a-z0-9_.-]*$` and must not contain `..`.
pub fn check_case_id(id: &str) -> Result<(), String> {
    let ok_first = id
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let ok_rest = id
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-'));
    if ok_first && ok_rest && !id.contains("..") {
        Ok(())
    } else {
        Err(format!(
            "test case id {id:?} is not usable as a file name: it must match ^[a-z0-9][a-z0-9_.-]*$ without \"..\" (guide \"Process test manifest\")"
        ))
    }
}

/// The scripted model file of `case_id` in `package_dir`, if present.
pub fn script_path(package_dir: &Path, case_id: &str) -> Option<PathBuf> {
    ["yaml", "yml", "json"]
        .iter()
        .map(|ext| package_dir.join("scripts").join(format!("{case_id}.{ext}")))
        .find(|p| p.is_file())
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(from)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let ty = e.file_type()?;
        let dest = to.join(e.file_name());
        if ty.is_dir() {
            std::fs::create_dir_all(&dest)?;
            copy_tree(&e.path(), &dest)?;
        } else if ty.is_file() {
            std::fs::copy(e.path(), &dest)?;
        }
    }
    Ok(())
}

fn seed_for(package: &str, case_id: &str) -> u64 {
    let d = Sha256::digest(format!("{package}\0{case_id}").as_bytes());
    u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

fn fail(id: &str, why: String) -> CaseReport {
    CaseReport {
        id: id.to_owned(),
        status: CaseStatus::Fail,
        failures: vec![why],
        notes: Vec::new(),
        run_status: None,
        events_jsonl: String::new(),
    }
}

/// Where a case's model replies come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Replies {
    /// `scripts/<case-id>.yaml` when it exists, else replies derived from the definition.
    #[default]
    Auto,
    /// The case's script only (a case without one fails).
    Scripted,
    /// Replies derived from the definition, even when a script exists ([`super::derived`]).
    Derived,
}

/// The model backend of one case.
enum Backend {
    Scripted(Arc<ScriptedModel>),
    Derived(Arc<DerivedModel>),
}

/// Runs one case in a fresh temporary workspace, with its script when it has one, else with
/// replies derived from the definition ([`Replies::Auto`]).
pub fn run_case(
    process: &Process,
    package_dir: &Path,
    case: &TestCase,
    options: &RunOptions,
    confirm: Arc<dyn Confirm>,
) -> CaseReport {
    run_case_with(process, package_dir, case, options, confirm, Replies::Auto)
}

/// Runs one case in a fresh temporary workspace with the replies `replies` selects.
pub fn run_case_with(
    process: &Process,
    package_dir: &Path,
    case: &TestCase,
    options: &RunOptions,
    confirm: Arc<dyn Confirm>,
    replies: Replies,
) -> CaseReport {
    if case.mode() == TestMode::Live {
        return CaseReport {
            id: case.id.clone(),
            status: CaseStatus::Skipped,
            failures: Vec::new(),
            notes: vec!["mode live needs real providers; only deterministic cases run here".into()],
            run_status: None,
            events_jsonl: String::new(),
        };
    }
    if let Err(e) = check_case_id(&case.id) {
        return fail(&case.id, e);
    }
    let found = script_path(package_dir, &case.id);
    // A script `--replies derived` leaves unused: the report says so (its story, a failure
    // path for instance, is then not what runs).
    let unused_script = found
        .as_ref()
        .filter(|_| replies == Replies::Derived)
        .map(|p| {
            p.strip_prefix(package_dir)
                .map(|r| r.display().to_string())
                .unwrap_or_else(|_| p.display().to_string())
        });
    let script = match replies {
        Replies::Derived => None,
        Replies::Auto | Replies::Scripted => found,
    };
    let backend = match script {
        Some(script) => {
            let shown = script
                .strip_prefix(package_dir)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| script.display().to_string());
            match ScriptedModel::from_file_named(&script, &shown) {
                Ok(m) => Backend::Scripted(Arc::new(m)),
                Err(e) => return fail(&case.id, e.0),
            }
        }
        None if replies == Replies::Scripted => {
            return fail(
                &case.id,
                format!(
                    "no scripted model: expected scripts/{}.yaml (or .yml/.json) in {}",
                    case.id,
                    package_dir.display()
                ),
            );
        }
        None => Backend::Derived(Arc::new(DerivedModel::new(process))),
    };
    let dir = match tempfile::Builder::new()
        .prefix("loom-process-test-")
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => {
            return fail(
                &case.id,
                format!("cannot create a temporary workspace: {e}"),
            );
        }
    };
    let fixtures = package_dir
        .join("scripts")
        .join(format!("{}.workspace", case.id));
    if fixtures.is_dir()
        && let Err(e) = copy_tree(&fixtures, dir.path())
    {
        return fail(&case.id, format!("cannot copy {}: {e}", fixtures.display()));
    }
    let task_file = package_dir
        .join("scripts")
        .join(format!("{}.task.json", case.id));
    let mut task = if task_file.is_file() {
        let parsed = std::fs::read_to_string(&task_file)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<TaskConfig>(&t).map_err(|e| e.to_string()));
        match parsed {
            Ok(t) => t,
            Err(e) => {
                return fail(
                    &case.id,
                    format!(
                        "{}: {e} (loop-engine \"Task Config Schema\")",
                        task_file.display()
                    ),
                );
            }
        }
    } else {
        TaskConfig::default()
    };
    task.goal = case.goal.clone();
    task.risk_policy.allow_network = case.requires_network.unwrap_or(false);
    if let Some(t) = case.timeout_seconds.and_then(|s| u64::try_from(s).ok()) {
        let ms = t.saturating_mul(1000);
        task.budget.max_wall_time_ms = Some(task.budget.max_wall_time_ms.map_or(ms, |m| m.min(ms)));
    }
    let auth_file = package_dir
        .join("scripts")
        .join(format!("{}.auth.json", case.id));
    let auth_env: BTreeMap<String, String> = if auth_file.is_file() {
        let parsed = std::fs::read_to_string(&auth_file)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()));
        match parsed {
            Ok(m) => m,
            Err(e) => {
                return fail(
                    &case.id,
                    format!(
                        "{}: {e} (expected an object of environment keys to values)",
                        auth_file.display()
                    ),
                );
            }
        }
    } else {
        BTreeMap::new()
    };
    let bundled = super::bundled_for(package_dir, options, &auth_env);
    if let Some(b) = &bundled
        && let Err(why) = b.interpreter_available()
    {
        return CaseReport {
            id: case.id.clone(),
            status: CaseStatus::Skipped,
            failures: Vec::new(),
            notes: vec![format!(
                "skipped: the package's bundled tools need Python and {why}"
            )],
            run_status: None,
            events_jsonl: String::new(),
        };
    }
    let (model, tool_outputs): (Arc<dyn Model>, Arc<dyn ToolOutputs>) = match &backend {
        Backend::Scripted(m) => (m.clone(), m.clone()),
        Backend::Derived(m) => (m.clone(), m.clone()),
    };
    let env = Env {
        model: model.clone(),
        clock: Arc::new(ManualClock::ticking(DETERMINISTIC_START_MS, 1)),
        confirm,
        fetch: None,
        tool_outputs: Some(tool_outputs),
        planner: Some(Arc::new(ModelPlanner(model))),
        bundled,
        auth_env,
    };
    let req = RunRequest {
        goal: case.goal.clone(),
        workspace: dir.path().to_path_buf(),
        seed: seed_for(&process.name, &case.id),
        task,
        options: options.clone(),
    };
    let outcome = match run(process, &env, &req) {
        Ok(o) => o,
        Err(e) => return fail(&case.id, e),
    };
    let mut failures = Vec::new();
    let mut notes = Vec::new();
    if let Backend::Derived(d) = &backend {
        notes.extend(derived_notes(d, replies));
    }
    if let Some(path) = unused_script {
        notes.push(format!("{path} not used"));
    }
    if !case.requires_tools.is_empty() {
        notes.push(format!(
            "requires_tools {} noted; this runner provides the Loop Engine tool actions",
            case.requires_tools.join(", ")
        ));
    }
    let mut verification_output = Vec::new();
    // forbidden_patterns read each phase's final attempt only (a repaired earlier attempt
    // does not fail the case); events without a phase and attempt always count.
    let final_attempt = |e: &crate::engine::event::Event| {
        let phase = e.payload.get("phase").and_then(|p| p.as_str());
        let attempt = e.payload.get("attempt").and_then(|a| a.as_u64());
        match (phase.and_then(|p| outcome.phases.get(p)), attempt) {
            (Some(o), Some(a)) => a == u64::from(o.attempts),
            _ => true,
        }
    };
    for e in &outcome.events {
        let counts = final_attempt(e);
        match e.kind {
            EventType::JudgeResult if counts => {
                if let Some(rs) = e.payload.get("reasons").and_then(|r| r.as_array()) {
                    verification_output
                        .extend(rs.iter().filter_map(|r| r.as_str()).map(str::to_owned));
                }
            }
            EventType::Error => {
                let msg = e
                    .payload
                    .get("message")
                    .and_then(|m| m.as_str())
                    .unwrap_or("");
                if counts {
                    verification_output.push(msg.to_owned());
                }
                if e.payload.get("code").and_then(|c| c.as_str()) == Some("model_error") {
                    failures.push(format!("model error: {msg}"));
                }
            }
            _ => {}
        }
    }
    let acceptance = case.acceptance.clone().unwrap_or_default();
    let mut asserted = false;
    if let Some(p) = &acceptance.phases {
        for id in &p.must_include {
            asserted = true;
            match outcome.phases.get(id) {
                None => failures.push(format!(
                    "acceptance.phases.must_include: no phase {id} in the run"
                )),
                Some(o) if o.status == super::PhaseStatus::Skipped => failures.push(format!(
                    "acceptance.phases.must_include: phase {id} did not run ({})",
                    o.stop_reason
                )),
                Some(_) => {}
            }
        }
    }
    if let Some(d) = &acceptance.deliverables {
        for f in &d.must_exist {
            asserted = true;
            let exists = resolve_in_workspace(&outcome.workspace, f).is_ok_and(|p| p.is_file());
            if !exists {
                failures.push(format!(
                    "acceptance.deliverables.must_exist: {f} does not exist"
                ));
            }
        }
    }
    if let Some(v) = &acceptance.verification {
        for pat in &v.forbidden_patterns {
            asserted = true;
            match crate::package::pattern::Pattern::compile(pat) {
                Err(e) => failures.push(format!(
                    "acceptance.verification.forbidden_patterns: invalid regex {pat:?}: {e}"
                )),
                Ok(re) => {
                    for line in &verification_output {
                        match re.is_match(line) {
                            Ok(false) => {}
                            Ok(true) => failures.push(format!(
                                "acceptance.verification.forbidden_patterns: {pat:?} matches {line:?}"
                            )),
                            Err(e) => failures.push(format!(
                                "acceptance.verification.forbidden_patterns: {pat:?} could not run on {line:?}: {e}"
                            )),
                        }
                    }
                }
            }
        }
    }
    if !asserted && outcome.status != RunStatus::Completed {
        failures.push(format!(
            "no acceptance assertions, and the run did not complete: {}{}",
            outcome.status.as_str(),
            outcome
                .stop_reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ));
    }
    let first_cause = (outcome.status != RunStatus::Completed)
        .then(|| crate::engine::event::first_cause(&outcome.events))
        .flatten();
    notes.insert(
        0,
        match first_cause {
            Some(cause) => format!("run {}, first cause: {cause}", outcome.status.as_str()),
            None => format!("run {}", outcome.status.as_str()),
        },
    );
    CaseReport {
        id: case.id.clone(),
        status: if failures.is_empty() {
            CaseStatus::Pass
        } else {
            CaseStatus::Fail
        },
        failures,
        notes,
        run_status: Some(outcome.status),
        events_jsonl: to_jsonl(&outcome.events),
    }
}

/// What the report says about derived replies: that they were used, and what they could
/// not give (each a line of [`DerivedModel::notes`]), which checks passed unjudged and which
/// gates read a stand-in tool output.
fn derived_notes(d: &DerivedModel, replies: Replies) -> Vec<String> {
    let mut out = vec![match replies {
        Replies::Derived => "replies derived from the definition".to_owned(),
        _ => "no script: replies derived from the definition".to_owned(),
    }];
    out.extend(d.notes().iter().map(|n| format!("derived replies: {n}")));
    let unjudged = d.unjudged();
    if !unjudged.is_empty() {
        out.push(format!(
            "not judged (derived pass): {}",
            unjudged.join(", ")
        ));
    }
    let stand_ins = d.stand_ins();
    if !stand_ins.is_empty() {
        out.push(format!(
            "stand-in output of tools not bundled: {}",
            stand_ins.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::policy::DenyConfirm;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/run_fixtures/release-notes")
    }

    fn case(yaml: &str) -> TestCase {
        serde_saphyr::from_str(yaml).expect("test case parses")
    }

    fn run(pkg: &Path, c: &TestCase) -> CaseReport {
        let loaded = crate::package::dir::load_dir(pkg).expect("fixture loads");
        run_case(
            &loaded.process,
            pkg,
            c,
            &RunOptions::default(),
            Arc::new(DenyConfirm),
        )
    }

    #[test]
    fn case_ids_must_be_file_name_safe() {
        for ok in ["smoke", "a", "0-x", "x_y.z", "a.b-c"] {
            assert!(check_case_id(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "../x", "a/b", "..", "a..b", ".hidden", "-x", "Smoke", "a b", "/abs",
        ] {
            let err = check_case_id(bad).unwrap_err();
            assert!(err.contains("^[a-z0-9][a-z0-9_.-]*$"), "{bad}: {err}");
        }
    }

    /// A traversing id fails its case before any file is looked up, even when the file it
    /// names exists (here: the package's own process.yaml read as a "script").
    #[test]
    fn a_traversing_case_id_fails_the_case_with_the_reason() {
        let r = run(&fixture(), &case("id: ../process\ngoal: G\n"));
        assert_eq!(r.status, CaseStatus::Fail);
        assert_eq!(r.failures.len(), 1, "{:?}", r.failures);
        assert!(r.failures[0].contains("not usable as a file name"), "{r:?}");
        assert!(r.run_status.is_none() && r.events_jsonl.is_empty());
    }

    #[test]
    fn seeds_differ_per_package_for_the_same_case_id() {
        assert_ne!(seed_for("pkg-a", "smoke"), seed_for("pkg-b", "smoke"));
        assert_eq!(seed_for("pkg-a", "smoke"), seed_for("pkg-a", "smoke"));
    }

    /// The fixture's `write` phase leaves `[TBD]` in attempt 1 and patches it out in attempt 2:
    /// a forbidden pattern on the repaired attempt's reasons does not fail the case, one on
    /// the final attempt does.
    #[test]
    fn forbidden_patterns_read_the_final_attempt_only() {
        let r = run(
            &fixture(),
            &case(
                "id: smoke\ngoal: G\nacceptance:\n  verification:\n    forbidden_patterns: [\"TBD\"]\n",
            ),
        );
        assert!(r.events_jsonl.contains("TBD"), "attempt 1 did flag it");
        assert_eq!(r.status, CaseStatus::Pass, "{:?}", r.failures);
        let r = run(
            &fixture(),
            &case(
                "id: smoke\ngoal: G\nacceptance:\n  verification:\n    forbidden_patterns: [\"CHANGELOG\"]\n",
            ),
        );
        assert_eq!(
            r.status,
            CaseStatus::Fail,
            "the final attempt's llm reason matches"
        );
    }
}
