//! `loom-conformance report merge`: several JSON reports (targets or runs) as one matrix —
//! rows are case IDs (sorted), columns are the runs in the order given, cells are outcomes.
//! Every input must carry the same `schema` as this build writes.

use super::html::{badge, escape, page};
use super::json::SCHEMA;
use crate::outcome::Outcome;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

/// The schema identifier of the merged JSON.
pub const MATRIX_SCHEMA: &str = "loom-conformance-matrix/1";

/// One input report.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The file it came from.
    pub file: String,
    /// `target.url`.
    pub target: String,
    /// `target.node`.
    pub node: String,
    /// `run.started_at`.
    pub started_at: String,
    /// `summary.level_achieved`.
    pub level_achieved: Option<u64>,
    /// `run.level`.
    pub level: u64,
    /// Outcome per case ID.
    pub outcomes: BTreeMap<String, String>,
}

/// Reads one JSON report; errors name the file and what is wrong.
pub fn load(path: &Path) -> Result<Run, String> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    parse(&name, &text)
}

/// Parses one JSON report.
pub fn parse(name: &str, text: &str) -> Result<Run, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("{name}: not JSON ({e})"))?;
    match v["schema"].as_str() {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(format!(
                "{name}: schema {other:?}, but this build merges only {SCHEMA:?} reports"
            ));
        }
        None => {
            return Err(format!(
                "{name}: no \"schema\" member; not a loom-conformance report"
            ));
        }
    }
    let str_of = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
    let cases = v["cases"]
        .as_array()
        .ok_or_else(|| format!("{name}: \"cases\" is not an array"))?;
    let mut outcomes = BTreeMap::new();
    for (i, c) in cases.iter().enumerate() {
        let (Some(id), Some(o)) = (c["id"].as_str(), c["outcome"].as_str()) else {
            return Err(format!("{name}: cases[{i}] lacks a string id or outcome"));
        };
        if !Outcome::ALL.iter().any(|x| x.name() == o) {
            return Err(format!("{name}: cases[{i}] has the unknown outcome {o:?}"));
        }
        if outcomes.insert(id.to_owned(), o.to_owned()).is_some() {
            return Err(format!("{name}: case {id} appears twice"));
        }
    }
    Ok(Run {
        file: name.to_owned(),
        target: str_of("/target/url").unwrap_or_default(),
        node: str_of("/target/node").unwrap_or_default(),
        started_at: str_of("/run/started_at").unwrap_or_default(),
        level_achieved: v.pointer("/summary/level_achieved").and_then(Value::as_u64),
        level: v.pointer("/run/level").and_then(Value::as_u64).unwrap_or(0),
        outcomes,
    })
}

/// Every case ID of any run, sorted.
pub fn case_ids(runs: &[Run]) -> Vec<String> {
    let ids: BTreeSet<&String> = runs.iter().flat_map(|r| r.outcomes.keys()).collect();
    ids.into_iter().cloned().collect()
}

/// The IDs whose outcomes differ between runs (a run lacking the case counts as `not run`).
pub fn differing(runs: &[Run]) -> Vec<String> {
    case_ids(runs)
        .into_iter()
        .filter(|id| {
            let seen: BTreeSet<Option<&String>> = runs.iter().map(|r| r.outcomes.get(id)).collect();
            seen.len() > 1
        })
        .collect()
}

/// The terminal summary of a merge (issue 18: `report merge` says what it merged): one line
/// per run (file, level verdict, pass/total) and the number of rows that differ, fitted to
/// `width`.
pub fn to_text(runs: &[Run], width: usize) -> String {
    use super::layout::{indented, shorten_middle};
    use std::fmt::Write;
    let mut out = String::new();
    for (i, r) in runs.iter().enumerate() {
        let pass = r.outcomes.values().filter(|o| *o == "pass").count();
        let verdict = match r.level_achieved {
            Some(l) => format!("Level {l} achieved"),
            None => format!("Level {} not certified", r.level),
        };
        let _ = writeln!(
            out,
            "{}",
            indented(
                &format!(
                    "run {}: {} — {} ({pass}/{} pass), {}",
                    i + 1,
                    shorten_middle(&r.file, 40),
                    shorten_middle(&r.target, 40),
                    r.outcomes.len(),
                    verdict
                ),
                width,
                0,
                7
            )
        );
    }
    let differ = differing(runs);
    let _ = writeln!(
        out,
        "merged {} runs: {} cases, {} with differing outcomes",
        runs.len(),
        case_ids(runs).len(),
        differ.len()
    );
    for id in differ.iter().take(20) {
        let cells: Vec<&str> = runs
            .iter()
            .map(|r| r.outcomes.get(id).map_or("not run", String::as_str))
            .collect();
        let _ = writeln!(
            out,
            "{}",
            indented(&format!("≠ {id}: {}", cells.join(" | ")), width, 2, 6)
        );
    }
    if differ.len() > 20 {
        let _ = writeln!(out, "  … {} more (see the matrix)", differ.len() - 20);
    }
    out
}

/// The merged matrix as JSON.
pub fn to_json(runs: &[Run]) -> Value {
    let cases: Vec<Value> = case_ids(runs)
        .iter()
        .map(|id| {
            json!({
                "id": id,
                "outcomes": runs.iter().map(|r| r.outcomes.get(id)).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "schema": MATRIX_SCHEMA,
        "runs": runs.iter().map(|r| json!({
            "file": r.file,
            "target": r.target,
            "node": r.node,
            "started_at": r.started_at,
            "level": r.level,
            "level_achieved": r.level_achieved,
        })).collect::<Vec<_>>(),
        "cases": cases,
    })
}

/// The merged matrix as one HTML page.
pub fn to_html(runs: &[Run]) -> String {
    let outcome = |s: &str| Outcome::ALL.into_iter().find(|o| o.name() == s);
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<h1>LOOM conformance matrix</h1><p class=\"meta\">{} runs · rows are cases, columns are runs · rows whose outcomes differ are marked ≠</p>",
        runs.len()
    );
    b.push_str("<table class=\"matrix\"><tr><th>#</th><th>target</th><th>node</th><th>started</th><th>level achieved</th><th>file</th></tr>\n");
    for (i, r) in runs.iter().enumerate() {
        let _ = writeln!(
            b,
            "<tr><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"mono\">{}</td></tr>",
            i + 1,
            escape(&r.target),
            escape(&r.node),
            escape(&r.started_at),
            r.level_achieved.map_or_else(
                || format!("none of {}", r.level),
                |l| format!("{l} of {}", r.level)
            ),
            escape(&r.file)
        );
    }
    b.push_str("</table>\n<h2>Outcomes</h2>\n<table class=\"matrix\"><tr><th>case</th><th></th>");
    for i in 0..runs.len() {
        let _ = write!(b, "<th class=\"c\">run {}</th>", i + 1);
    }
    b.push_str("</tr>\n");
    for id in case_ids(runs) {
        let cells: Vec<Option<&String>> = runs.iter().map(|r| r.outcomes.get(&id)).collect();
        let distinct: BTreeSet<_> = cells.iter().collect();
        let _ = write!(
            b,
            "<tr><td class=\"mono\">{}</td><td>{}</td>",
            escape(&id),
            if distinct.len() > 1 { "≠" } else { "" }
        );
        for cell in cells {
            let html = match cell.map(|s| (s, outcome(s))) {
                Some((_, Some(o))) => badge(o),
                Some((s, None)) => escape(s),
                None => "<span class=\"o o-none\">not run</span>".into(),
            };
            let _ = write!(b, "<td class=\"c\">{html}</td>");
        }
        b.push_str("</tr>\n");
    }
    b.push_str("</table>\n");
    page("LOOM conformance matrix", &b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_other_schemas_and_garbage() {
        assert!(parse("a", "{").is_err());
        assert!(parse("a", "{}").unwrap_err().contains("no \"schema\""));
        let e = parse("a", r#"{"schema":"loom-conformance-report/0","cases":[]}"#).unwrap_err();
        assert!(e.contains("loom-conformance-report/0"), "{e}");
        let ok = parse(
            "a",
            r#"{"schema":"loom-conformance-report/1","cases":[{"id":"core.x","outcome":"pass"}]}"#,
        )
        .unwrap();
        assert_eq!(ok.outcomes["core.x"], "pass");
        assert!(
            parse(
                "a",
                r#"{"schema":"loom-conformance-report/1","cases":[{"id":"core.x","outcome":"meh"}]}"#
            )
            .is_err()
        );
    }
}
