//! `loom-conformance list`: the catalogue as a table or JSON.

use super::outln;
use crate::case::Strength;
use crate::{catalogue, runner};
use std::process::ExitCode;

/// `list` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only IDs matching this glob (repeatable).
    #[arg(long)]
    only: Vec<String>,
    /// Only this level and below.
    #[arg(long, default_value_t = 4)]
    level: u8,
    /// Only cases of this area (the ID's second segment: `envelope`, `auth`, …; repeatable).
    #[arg(long)]
    area: Vec<String>,
    /// Only cases of this strength (MUST, SHOULD or MAY; repeatable).
    #[arg(long, value_parser = parse_strength)]
    strength: Vec<Strength>,
    /// One JSON array instead of the table.
    #[arg(long)]
    json: bool,
}

fn parse_strength(s: &str) -> Result<Strength, String> {
    match s.to_ascii_uppercase().as_str() {
        "MUST" => Ok(Strength::Must),
        "SHOULD" => Ok(Strength::Should),
        "MAY" => Ok(Strength::May),
        _ => Err(format!("{s:?} is not MUST, SHOULD or MAY")),
    }
}

/// Prints the selected cases. A filter that names an unknown area, or selects nothing, is a
/// usage error (exit 2) that lists the areas, as `run` refuses a selection matching nothing.
pub fn main(a: &Args) -> ExitCode {
    let all = catalogue::all();
    let areas: std::collections::BTreeSet<&str> = all.iter().map(|c| c.area()).collect();
    if let Some(bad) = a.area.iter().find(|x| !areas.contains(x.as_str())) {
        return super::usage(format!(
            "--area {bad:?} is not an area of the catalogue; areas: {}",
            areas.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let cases: Vec<_> = all
        .into_iter()
        .filter(|c| {
            c.level <= a.level
                && (a.only.is_empty() || a.only.iter().any(|g| runner::glob_match(g, c.id)))
                && (a.area.is_empty() || a.area.iter().any(|x| x == c.area()))
                && (a.strength.is_empty() || a.strength.contains(&c.strength))
        })
        .collect();
    if cases.is_empty() {
        return super::usage(
            "no case matches the selection (--only/--level/--area/--strength); `loom-conformance list` shows them all",
        );
    }
    if a.json {
        let v: Vec<serde_json::Value> = cases
            .iter()
            .map(|c| {
                serde_json::json!({
                    "id": c.id,
                    "area": c.area(),
                    "level": c.level,
                    "strength": c.strength,
                    "spec": c.spec,
                    "requirement": c.requirement,
                    "covers": c.covers,
                    "needs": c.needs,
                    "how": c.how,
                    "interpretation": c.interpretation,
                    "mutant": c.mutant,
                })
            })
            .collect();
        return match serde_json::to_string_pretty(&v) {
            Ok(t) => {
                outln!("{t}");
                ExitCode::SUCCESS
            }
            Err(e) => super::usage(e),
        };
    }
    // The ID column is as wide as the longest ID (never shortened: IDs are what people copy);
    // the spec references wrap in what is left, or go on the next line.
    let width = crate::report::layout::width();
    let id_w = cases.iter().map(|c| c.id.len()).max().unwrap_or(0);
    for c in &cases {
        let lead = format!(
            "{:<id_w$} L{} {:<6} ",
            c.id,
            c.level,
            c.strength.to_string()
        );
        outln!(
            "{}",
            crate::report::layout::row(&lead, &c.spec.join(", "), width, 16)
        );
    }
    let must = cases
        .iter()
        .filter(|c| c.strength == Strength::Must)
        .count();
    outln!("{} cases ({must} MUST)", cases.len());
    ExitCode::SUCCESS
}
