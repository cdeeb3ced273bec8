//! `loom-conformance`: certify a LOOM node over the wire (the subcommands are in
//! `loom_conformance::cli`).

use clap::Parser;
use std::hash::{BuildHasher, Hasher};
use std::process::ExitCode;

/// A fresh seed for runs given no `--seed`: the standard library seeds `RandomState` from the
/// operating system, so this is the harness's one read of OS randomness (DESIGN.md §3: only
/// `main` may).
fn fresh_seed() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    // Keep seeds short enough to retype (`--seed 123456789`).
    h.finish() % 1_000_000_000
}

fn main() -> ExitCode {
    loom_conformance::cli::main(loom_conformance::cli::Cli::parse(), fresh_seed())
}
