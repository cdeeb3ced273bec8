//! `loom-process events TRACE [--format text|json]`: summarizes a JSONL event trace (counts
//! by type, phase outcomes, verdicts, errors, final status). Exit 0, or 2 when the trace
//! cannot be read or is not a valid loop-engine "Event Schema" stream.

use std::io::Write;
use std::path::PathBuf;

use super::{Format, exit};
use crate::engine::event::{read_jsonl, summarize};

/// Arguments of `events`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A JSONL trace written by `run --events` or `test --events-dir`.
    pub trace: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Prints the summary.
pub fn run(args: &Args, out: &mut dyn Write) -> std::io::Result<i32> {
    let text = match std::fs::read_to_string(&args.trace) {
        Ok(t) => t,
        Err(e) => {
            writeln!(out, "error: cannot read {}: {e}", args.trace.display())?;
            return Ok(exit::USAGE);
        }
    };
    let events = match read_jsonl(&text) {
        Ok(ev) => ev,
        Err(e) => {
            writeln!(out, "error: {}: {e}", args.trace.display())?;
            return Ok(exit::USAGE);
        }
    };
    let s = summarize(&events);
    match args.format {
        Format::Text => write!(out, "{s}")?,
        Format::Json => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&s).unwrap_or_default()
        )?,
    }
    Ok(exit::OK)
}
