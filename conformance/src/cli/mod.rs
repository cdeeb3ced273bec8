//! The `loom-conformance` command line: one module per subcommand (as `loom-process` does).
//! Terminal rendering lives in [`crate::report::terminal`], so every subcommand prints the
//! same way.
//!
//! Exit codes (DESIGN.md §5): 0 the level was achieved (or `--no-fail`); 1 a required case
//! failed; 2 usage or configuration error; 3 the target is unreachable or failed readiness.

pub mod explain;
pub mod list;
pub mod matrix;
pub mod report;
pub mod run;
pub mod selftest;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// `println!` that ignores a closed stdout (`loom-conformance list | head` must not panic).
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}
pub(crate) use outln;

/// Conformance harness for LOOM v1.1 nodes.
#[derive(Debug, Parser)]
#[command(
    name = "loom-conformance",
    version,
    about = "Conformance harness for LOOM v1.1 nodes"
)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the catalogue against a target (default: the embedded reference node).
    Run(run::Args),
    /// List cases with level, strength and spec references.
    List(list::Args),
    /// Show one case: requirement, the sentence it enforces, spec, how it is tested, the quirk
    /// that proves it can fail.
    Explain(explain::Args),
    /// The traceability matrix: every Level 1 MUST/SHOULD requirement with its quoted sentence
    /// and the cases covering it, and for every MUST case the sentence it enforces.
    Matrix(matrix::Args),
    /// Self-test: the catalogue against the clean embedded node (all must pass), every MUST
    /// case against the node with its quirk (it must fail), and the whole catalogue against
    /// the node under each legal variant (all must pass).
    Selftest(selftest::Args),
    /// Work with JSON reports.
    Report(report::Args),
}

/// A multi-threaded tokio runtime, or exit code 2.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("error: cannot start the async runtime: {e}");
            ExitCode::from(2)
        })
}

/// Prints `error: {m}` and returns exit code 2.
pub(crate) fn usage(m: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {m}");
    ExitCode::from(2)
}

/// Runs `cli`; `fresh_seed` is the run seed when `run` is given no `--seed` (drawn by `main`,
/// the only place the harness reads OS randomness, DESIGN.md §3).
pub fn main(cli: Cli, fresh_seed: u64) -> ExitCode {
    match cli.command {
        Command::List(a) => list::main(&a),
        Command::Explain(a) => explain::main(&a),
        Command::Matrix(a) => matrix::main(&a),
        Command::Report(a) => report::main(&a),
        Command::Selftest(a) => match runtime() {
            Ok(rt) => rt.block_on(selftest::main(a, fresh_seed)),
            Err(code) => code,
        },
        Command::Run(a) => match runtime() {
            Ok(rt) => rt.block_on(run::main(a, fresh_seed)),
            Err(code) => code,
        },
    }
}
