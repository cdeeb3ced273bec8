//! The `loom-process` command line: one module per subcommand.
//!
//! Exit codes: 0 success (a valid definition; warnings allowed), 1 invalid definition,
//! 2 usage or IO error.

pub mod events;
pub mod helpers;
pub mod review;
pub mod rules;
pub mod run;
pub mod test;
pub mod validate;

use clap::{Parser, Subcommand, ValueEnum};

/// Validate, review, run and test LOOM process packages.
#[derive(Debug, Parser)]
#[command(name = "loom-process", version, about)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate a process.yaml or package directory against the package guide.
    Validate(validate::Args),
    /// List the validation rule ids, their severity and guide section.
    Rules(rules::Args),
    /// List the verification helpers semantic checks may name, and which this runner runs.
    Helpers(helpers::Args),
    /// Print the install security review of a package.
    Review(review::Args),
    /// Run a process with a model backend and write its Loop Engine events.
    Run(run::Args),
    /// Run the package's `tests:` manifest (deterministic cases, scripted model).
    Test(test::Args),
    /// Summarize a JSONL event trace.
    Events(events::Args),
}

/// Output format shared by subcommands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Human-readable text.
    #[default]
    Text,
    /// JSON.
    Json,
}

/// Process exit codes.
pub mod exit {
    /// Success.
    pub const OK: i32 = 0;
    /// The definition is invalid.
    pub const INVALID: i32 = 1;
    /// Usage or IO error.
    pub const USAGE: i32 = 2;
}

/// Runs a parsed command line, writing to `out`, and returns the exit code.
pub fn run(cli: Cli, out: &mut dyn std::io::Write) -> i32 {
    let result = match cli.command {
        Command::Validate(args) => validate::run(&args, out),
        Command::Rules(args) => rules::run(&args, out),
        Command::Helpers(args) => helpers::run(&args, out),
        Command::Review(args) => review::run(&args, out),
        Command::Run(args) => run::run(&args, out),
        Command::Test(args) => test::run(&args, out),
        Command::Events(args) => events::run(&args, out),
    };
    result.unwrap_or(exit::USAGE)
}
