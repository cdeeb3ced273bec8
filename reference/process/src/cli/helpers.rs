//! `loom-process helpers [--format text|json]`: the verification helper registry that
//! `verification.policy.semantic_checks[].helper` names (`package::helpers`), and whether this
//! runner executes each one (`runner::semantic`).

use std::io::Write;

use super::{Format, exit};
use crate::package::helpers::BUILTIN;
use crate::runner::semantic::BOUND;

/// Arguments of `helpers`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Prints every registered helper: name, capabilities, bound here or not, description.
pub fn run(args: &Args, out: &mut dyn Write) -> std::io::Result<i32> {
    match args.format {
        Format::Text => {
            for h in BUILTIN {
                writeln!(
                    out,
                    "{:<27} {:<34} {:<9} {}",
                    h.name,
                    h.capabilities.join(","),
                    if BOUND.contains(&h.name) {
                        "bound"
                    } else {
                        "not bound"
                    },
                    h.description
                )?;
            }
        }
        Format::Json => {
            let rows: Vec<_> = BUILTIN
                .iter()
                .map(|h| {
                    serde_json::json!({"name": h.name, "capabilities": h.capabilities,
                                       "bound": BOUND.contains(&h.name), "description": h.description})
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
