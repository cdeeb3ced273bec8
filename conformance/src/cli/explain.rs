//! `loom-conformance explain ID`: one case in full.

use super::outln;
use crate::case::Mutant;
use crate::{catalogue, requirements};
use std::process::ExitCode;

/// `explain` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The case ID.
    id: String,
}

/// Prints the case.
pub fn main(a: &Args) -> ExitCode {
    let Some(c) = catalogue::find(&a.id) else {
        return super::usage(format!(
            "no case {:?}; `loom-conformance list` shows every ID",
            a.id
        ));
    };
    outln!(
        "{}\n  level {} · {} · {}",
        c.id,
        c.level,
        c.strength,
        c.spec.join(", ")
    );
    outln!("  requirement: {}", c.requirement);
    if let Ok(reqs) = requirements::all()
        && let Some(r) = c
            .covers
            .first()
            .and_then(|id| reqs.iter().find(|r| &r.id.as_str() == id))
        && let Some(q) = &r.quote
    {
        outln!("  enforces:    {} ({}): \"{q}\"", r.id, r.quote_source());
    }
    outln!("  covers:      {}", c.covers.join(", "));
    outln!("  how:         {}", c.how);
    if let Some(i) = c.interpretation {
        outln!("  interpretation: {i}");
    }
    if !c.needs.is_empty() {
        outln!(
            "  needs:       {}",
            c.needs
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    match c.mutant {
        Mutant::Quirk(q) => outln!("  proven able to fail by the reference node's `{q}` quirk"),
        Mutant::NotApplicable(why) => outln!("  no quirk proves it: {why}"),
    }
    ExitCode::SUCCESS
}
