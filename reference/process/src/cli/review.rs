//! `loom-process review PATH [--install-root DIR] [--format text|json]`: the install security
//! review (guide "Security review").

use std::io::Write;
use std::path::PathBuf;

use super::{Format, exit};
use crate::package::load_dir;
use crate::package::review::SecurityReview;

/// Arguments of `review`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The package directory.
    pub path: PathBuf,
    /// Install root shown as the target (default: `~/.loom/processes`, printed literally).
    #[arg(long, default_value = "~/.loom/processes")]
    pub install_root: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Prints the review; an invalid package prints its validation report and exits 1.
pub fn run(args: &Args, out: &mut dyn Write) -> std::io::Result<i32> {
    let pkg = match load_dir(&args.path) {
        Ok(pkg) => pkg,
        Err(report) => {
            write!(out, "{}", report.to_text(&args.path.display().to_string()))?;
            let io = report
                .diagnostics
                .iter()
                .any(|d| d.rule.starts_with("package."));
            return Ok(if io { exit::USAGE } else { exit::INVALID });
        }
    };
    let review = SecurityReview::of(&pkg, &args.install_root);
    match args.format {
        Format::Text => write!(out, "{}", review.render())?,
        Format::Json => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&review).unwrap_or_default()
        )?,
    }
    Ok(exit::OK)
}
