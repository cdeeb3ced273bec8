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
    // Each labelled value wraps under itself at the terminal width (issue 18).
    let w = crate::report::layout::width();
    let field = |label: &str, text: &str| {
        crate::report::layout::row(&format!("  {:<13}", format!("{label} ")), text, w, 20)
    };
    outln!("{}", field("requirement:", c.requirement));
    if let Ok(reqs) = requirements::all()
        && let Some(r) = c
            .covers
            .first()
            .and_then(|id| reqs.iter().find(|r| &r.id.as_str() == id))
        && let Some(q) = &r.quote
    {
        outln!(
            "{}",
            field(
                "enforces:",
                &format!("{} ({}): \"{q}\"", r.id, r.quote_source())
            )
        );
    }
    outln!("{}", field("covers:", &c.covers.join(", ")));
    outln!("{}", field("how:", c.how));
    if let Some(i) = c.interpretation {
        outln!("{}", field("interpretation:", i));
    }
    if !c.needs.is_empty() {
        let needs = c
            .needs
            .iter()
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        outln!("{}", field("needs:", &needs));
    }
    match c.mutant {
        Mutant::Quirk(q) => outln!(
            "{}",
            crate::report::layout::indented(
                &format!("proven able to fail by the reference node's `{q}` quirk"),
                w,
                2,
                4
            )
        ),
        Mutant::NotApplicable(why) => outln!(
            "{}",
            crate::report::layout::indented(&format!("no quirk proves it: {why}"), w, 2, 4)
        ),
    }
    ExitCode::SUCCESS
}
