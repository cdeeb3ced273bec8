//! `loom-process validate PATH [--format text|json]`.

use std::io::Write;
use std::path::PathBuf;

use super::{Format, exit};
use crate::package::dir::{PROCESS_FILE, read_process_file};
use crate::package::rules::{self};
use crate::package::{Report, validate_str};

/// Arguments of `validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A process.yaml file or a package directory containing one.
    pub path: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Validates and prints the report; exit 0 valid, 1 invalid, 2 when the file cannot be read.
pub fn run(args: &Args, out: &mut dyn Write) -> std::io::Result<i32> {
    let file = if args.path.is_dir() {
        args.path.join(PROCESS_FILE)
    } else {
        args.path.clone()
    };
    if args.path.is_dir() && !file.exists() {
        let report = Report::new(vec![crate::package::Diagnostic::new(
            &rules::PACKAGE_PROCESS_YAML_MISSING,
            "",
            Default::default(),
            format!("{} has no {PROCESS_FILE}", args.path.display()),
        )]);
        print(args.format, &report, &file, out)?;
        return Ok(exit::USAGE);
    }
    let text = match read_process_file(&file) {
        Ok(text) => text,
        Err(report) => {
            print(args.format, &report, &file, out)?;
            // An existing file that is not UTF-8 is an invalid definition, not a usage error.
            let encoding = report.errors().any(|d| d.rule == rules::YAML_ENCODING.id);
            return Ok(if encoding { exit::INVALID } else { exit::USAGE });
        }
    };
    let report = validate_str(&text);
    print(args.format, &report, &file, out)?;
    Ok(if report.is_valid() {
        exit::OK
    } else {
        exit::INVALID
    })
}

fn print(
    format: Format,
    report: &Report,
    file: &std::path::Path,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    match format {
        Format::Text => write!(out, "{}", report.to_text(&file.display().to_string())),
        Format::Json => {
            let mut json = report.to_json();
            json["file"] = serde_json::Value::String(file.display().to_string());
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&json).unwrap_or_default()
            )
        }
    }
}
