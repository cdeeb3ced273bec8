//! The JSON report (schema `loom-conformance-report/1`, documented in conformance/README.md).
//! `summary.level_achieved` is the requested level when the run certified it and `null`
//! otherwise (always `null` for a partial run, `summary.partial`).
//! Passing cases carry no transcripts; every other case carries all of its exchanges, with
//! the deciding one marked.

use super::RunReport;
use crate::outcome::Outcome;
use serde_json::{Map, Value, json};

/// The schema identifier of the JSON report.
pub const SCHEMA: &str = "loom-conformance-report/1";

/// The report as JSON.
pub fn render(r: &RunReport) -> Value {
    let counts: Map<String, Value> = Outcome::ALL
        .iter()
        .map(|o| {
            (
                o.name().to_owned(),
                Value::from(r.counts().get(o).copied().unwrap_or(0)),
            )
        })
        .collect();
    let by_area: Map<String, Value> = r
        .by_area()
        .into_iter()
        .map(|(area, m)| {
            let inner: Map<String, Value> = m
                .into_iter()
                .map(|(o, n)| (o.name().to_owned(), Value::from(n)))
                .collect();
            (area.to_owned(), Value::Object(inner))
        })
        .collect();
    let cases: Vec<Value> = r
        .results
        .iter()
        .map(|(c, res)| {
            let transcripts: Vec<Value> = if res.outcome == Outcome::Pass {
                Vec::new()
            } else {
                res.transcripts.iter().map(|t| t.to_json()).collect()
            };
            json!({
                "id": c.id,
                "area": c.area(),
                "level": c.level,
                "strength": c.strength,
                "spec": c.spec,
                "requirement": c.requirement,
                "covers": c.covers,
                "interpretation": c.interpretation,
                "outcome": res.outcome,
                "message": res.message,
                "expected": res.expected,
                "actual": res.actual,
                "decisive": res.decisive,
                "duration_ms": res.duration.as_secs_f64() * 1000.0,
                "exchanges": res.transcripts.len(),
                "transcripts": transcripts,
            })
        })
        .collect();
    json!({
        "schema": SCHEMA,
        "harness": {"name": "loom-conformance", "version": env!("CARGO_PKG_VERSION")},
        "target": {"url": r.target, "embedded": r.embedded, "node": r.node},
        "run": {
            "level": r.level,
            "complete": r.partial.is_empty(),
            "strict": r.strict,
            "seed": r.seed,
            "started_at": r.started_at,
            "duration_ms": r.duration.as_secs_f64() * 1000.0,
        },
        "summary": {
            "level_achieved": r.level_achieved(),
            "level_reached": r.level_reached(),
            "partial": !r.partial.is_empty(),
            "partial_reasons": r.partial,
            "verdict": r.verdict().headline(),
            "passed": !r.failed(),
            "total": r.results.len(),
            "counts": counts,
            "by_area": by_area,
        },
        "cases": cases,
    })
}
