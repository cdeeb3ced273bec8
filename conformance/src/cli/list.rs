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

/// Prints the selected cases.
pub fn main(a: &Args) -> ExitCode {
    let cases: Vec<_> = catalogue::all()
        .into_iter()
        .filter(|c| {
            c.level <= a.level
                && (a.only.is_empty() || a.only.iter().any(|g| runner::glob_match(g, c.id)))
                && (a.area.is_empty() || a.area.iter().any(|x| x == c.area()))
                && (a.strength.is_empty() || a.strength.contains(&c.strength))
        })
        .collect();
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
    for c in &cases {
        outln!(
            "{:<58} L{} {:<6} {}",
            c.id,
            c.level,
            c.strength.to_string(),
            c.spec.join(", ")
        );
    }
    let must = cases
        .iter()
        .filter(|c| c.strength == Strength::Must)
        .count();
    outln!("{} cases ({must} MUST)", cases.len());
    ExitCode::SUCCESS
}
