//! `loom-process`: validate, review, run and test process packages.

use clap::Parser;

fn main() {
    let cli = loom_process::cli::Cli::parse();
    let mut stdout = std::io::stdout().lock();
    let code = loom_process::cli::run(cli, &mut stdout);
    std::process::exit(code);
}
