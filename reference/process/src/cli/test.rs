//! `loom-process test PATH [--case ID] [--format text|json] [--events-dir DIR]
//! [--enable-command-exit-gates] [--python PATH] [--replies auto|scripted|derived]`: runs the
//! package's `tests:` manifest in deterministic mode (guide "Process test manifest";
//! conventions in [`crate::runner::testcase`]), on each case's script or on replies derived
//! from the definition ([`crate::runner::derived`]).
//!
//! Exit codes: 0 every case passed (skipped `live` cases allowed), 1 a case failed, 2 usage
//! or IO error, an invalid definition, or no case matched `--case`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use super::{Format, exit};
use crate::engine::policy::DenyConfirm;
use crate::runner::RunOptions;
use crate::runner::testcase::{CaseStatus, Replies, check_case_id, run_case_with};

/// Arguments of `test`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A package directory (or its process.yaml).
    pub path: PathBuf,
    /// Run only this case.
    #[arg(long)]
    pub case: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write each case's events to DIR/<case-id>.jsonl.
    #[arg(long)]
    pub events_dir: Option<PathBuf>,
    /// Run `command_exit` gates (off by default, as the guide's runtime note says).
    #[arg(long)]
    pub enable_command_exit_gates: bool,
    /// Run the package's bundled tools with this Python instead of the declared one.
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// Where the model replies come from: `auto` (the case's `scripts/<id>.yaml`, else
    /// replies derived from the definition), `scripted` (a case without a script fails) or
    /// `derived` (ignore the scripts).
    #[arg(long, value_enum, default_value_t = RepliesArg::Auto)]
    pub replies: RepliesArg,
}

/// `--replies`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RepliesArg {
    /// The case's script when it has one, else derived replies.
    Auto,
    /// The case's script only.
    Scripted,
    /// Replies derived from the definition, scripts ignored.
    Derived,
}

impl From<RepliesArg> for Replies {
    fn from(r: RepliesArg) -> Self {
        match r {
            RepliesArg::Auto => Replies::Auto,
            RepliesArg::Scripted => Replies::Scripted,
            RepliesArg::Derived => Replies::Derived,
        }
    }
}

/// Runs the cases and prints one line per case (or JSON).
pub fn run(args: &Args, out: &mut dyn Write) -> std::io::Result<i32> {
    let Some(pkg) = super::run::load(&args.path, out)? else {
        return Ok(exit::USAGE);
    };
    let cases: Vec<_> = pkg
        .process
        .tests
        .iter()
        .filter(|c| args.case.as_ref().is_none_or(|id| *id == c.id))
        .collect();
    if cases.is_empty() {
        match &args.case {
            Some(id) => writeln!(out, "error: no test case {id:?} in {}", args.path.display())?,
            None => writeln!(out, "error: {} declares no tests", args.path.display())?,
        }
        return Ok(exit::USAGE);
    }
    if let Some(dir) = &args.events_dir
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        writeln!(out, "error: cannot create {}: {e}", dir.display())?;
        return Ok(exit::USAGE);
    }
    let options = RunOptions {
        enable_command_exit_gates: args.enable_command_exit_gates,
        python: args.python.clone(),
        ..RunOptions::default()
    };
    let mut reports = Vec::new();
    for case in cases {
        let r = run_case_with(
            &pkg.process,
            &pkg.root,
            case,
            &options,
            Arc::new(DenyConfirm),
            args.replies.into(),
        );
        // The case id names the events file: only an id that passes the runtime check
        // (no `/`, no `..`) is ever joined to the directory.
        if let Some(dir) = &args.events_dir
            && !r.events_jsonl.is_empty()
            && check_case_id(&r.id).is_ok()
        {
            let path = dir.join(format!("{}.jsonl", r.id));
            if let Err(e) = std::fs::write(&path, &r.events_jsonl) {
                writeln!(out, "error: cannot write {}: {e}", path.display())?;
                return Ok(exit::USAGE);
            }
        }
        reports.push(r);
    }
    let failed = reports
        .iter()
        .filter(|r| r.status == CaseStatus::Fail)
        .count();
    match args.format {
        Format::Json => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "package": pkg.process.name,
                "cases": reports,
                "failed": failed,
            }))
            .unwrap_or_default()
        )?,
        Format::Text => {
            for r in &reports {
                let tag = match r.status {
                    CaseStatus::Pass => "PASS",
                    CaseStatus::Fail => "FAIL",
                    CaseStatus::Skipped => "SKIP",
                };
                writeln!(out, "{tag} {} ({})", r.id, r.notes.join("; "))?;
                for f in &r.failures {
                    writeln!(out, "  - {f}")?;
                }
            }
            writeln!(
                out,
                "{}: {} passed, {failed} failed, {} skipped",
                pkg.process.name,
                reports
                    .iter()
                    .filter(|r| r.status == CaseStatus::Pass)
                    .count(),
                reports
                    .iter()
                    .filter(|r| r.status == CaseStatus::Skipped)
                    .count()
            )?;
        }
    }
    Ok(if failed == 0 { exit::OK } else { exit::INVALID })
}
