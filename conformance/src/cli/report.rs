//! `loom-conformance report merge`: one matrix across several JSON reports.

use crate::report;
use clap::Subcommand;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `report` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: ReportCmd,
}

#[derive(Debug, Subcommand)]
enum ReportCmd {
    /// One matrix across several JSON reports (targets or runs): rows are cases, columns runs.
    Merge {
        /// JSON reports written by `run --report json=PATH`.
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// Write the matrix as HTML into this directory (`index.html`).
        #[arg(long)]
        html: Option<PathBuf>,
        /// Write the matrix as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

/// Runs the report subcommand.
pub fn main(a: &Args) -> ExitCode {
    match &a.command {
        ReportCmd::Merge {
            reports,
            html,
            json,
        } => merge(reports, html.as_deref(), json.as_deref()),
    }
}

fn merge(reports: &[PathBuf], html: Option<&Path>, json: Option<&Path>) -> ExitCode {
    if html.is_none() && json.is_none() {
        return super::usage("report merge needs --html DIR and/or --json OUT");
    }
    let mut runs = Vec::new();
    for p in reports {
        match report::merge::load(p) {
            Ok(r) => runs.push(r),
            Err(e) => return super::usage(e),
        }
    }
    if let Some(dir) = html {
        let written = std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(dir.join("index.html"), report::merge::to_html(&runs)));
        if let Err(e) = written {
            return super::usage(format!("{}: {e}", dir.display()));
        }
        eprintln!("wrote {}", dir.join("index.html").display());
    }
    if let Some(out) = json {
        let text = serde_json::to_string_pretty(&report::merge::to_json(&runs))
            .map(|t| t + "\n")
            .map_err(|e| e.to_string());
        if let Err(e) = text.and_then(|t| std::fs::write(out, t).map_err(|e| e.to_string())) {
            return super::usage(format!("{}: {e}", out.display()));
        }
        eprintln!("wrote {}", out.display());
    }
    super::outln!(
        "{}",
        report::merge::to_text(&runs, report::layout::width()).trim_end()
    );
    ExitCode::SUCCESS
}
