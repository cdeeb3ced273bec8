//! `loom-process rules [--format text|json]`: the rule table.

use std::io::Write;

use super::{Format, exit};
use crate::package::rules::ALL;

/// Arguments of `rules`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Prints every rule: id, severity, guide section, summary.
pub fn run(args: &Args, out: &mut dyn Write) -> std::io::Result<i32> {
    match args.format {
        Format::Text => {
            let width = ALL.iter().map(|r| r.id.len()).max().unwrap_or(0);
            for r in ALL {
                writeln!(
                    out,
                    "{:<width$}  {:<7}  guide \"{}\": {}",
                    r.id,
                    r.level.as_str(),
                    r.section,
                    r.summary
                )?;
            }
        }
        Format::Json => {
            let rows: Vec<_> = ALL
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "id": r.id, "severity": r.level, "section": r.section, "summary": r.summary
                    })
                })
                .collect();
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&rows).unwrap_or_default()
            )?;
        }
    }
    Ok(exit::OK)
}
