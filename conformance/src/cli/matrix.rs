//! `loom-conformance matrix`: requirement → cases, with the quoted sentences.

use super::outln;
use crate::{catalogue, requirements};
use std::process::ExitCode;

/// `matrix` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// JSON instead of the table.
    #[arg(long)]
    json: bool,
}

/// Prints the matrix.
pub fn main(a: &Args) -> ExitCode {
    let reqs = match requirements::all() {
        Ok(r) => r,
        Err(e) => return super::usage(e),
    };
    let m = requirements::Matrix::build(&reqs, &catalogue::all());
    if a.json {
        match serde_json::to_string_pretty(&m.to_json()) {
            Ok(t) => outln!("{t}"),
            Err(e) => return super::usage(e),
        }
    } else {
        outln!("{}", m.to_text(crate::report::layout::width()).trim_end());
    }
    ExitCode::SUCCESS
}
