//! `loom-plsp replay`: re-checks a recorded trace (spec §7) line by line: each cycle's
//! previous block is the last cycle's next block, each next block parses, is canonical and
//! keeps the state rules (§5), its actions and logs are the ones recorded, and — for traces
//! of the reference engine — recomputing the step from INSTR, previous S and inputs gives the
//! same next block.

use crate::ast::{Block, Literal};
use crate::engine::EngineRequest;
use crate::engine::reference::ReferenceEngine;
use crate::imf::Inputs;
use crate::validate::{Limits, validate_transition};
use serde_json::Value as Json;

/// The outcome of a replay: cycles checked and every problem found (empty = consistent).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReplayReport {
    /// Cycle lines checked.
    pub cycles: u64,
    /// Problems, `line N: …`.
    pub problems: Vec<String>,
}

fn block(v: &Json, what: &str) -> Result<Block, String> {
    let t = v
        .as_str()
        .ok_or_else(|| format!("`{what}` is not a string"))?;
    let b = crate::parse(t).map_err(|e| format!("`{what}`: {e}"))?;
    if b.to_string() != t {
        return Err(format!("`{what}` is not in canonical form"));
    }
    Ok(b)
}

/// Replays the JSONL `text` of a trace with `limits`.
pub fn replay(text: &str, limits: &Limits) -> ReplayReport {
    let mut r = ReplayReport::default();
    let mut last: Option<Block> = None;
    let mut reference = false;
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let n = n + 1;
        let mut bad = |m: String| r.problems.push(format!("line {n}: {m}"));
        let v: Json = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                bad(format!("not JSON: {e}"));
                continue;
            }
        };
        match v["type"].as_str() {
            Some("start") => {
                reference = v["engine"] == "reference";
                last = block(&v["initial"], "initial").map_err(&mut bad).ok();
            }
            Some("end") => {
                if let (Some(l), Ok(e)) = (&last, block(&v["last"], "last"))
                    && *l != e
                {
                    bad("`last` differs from the last cycle's next block".into());
                }
            }
            Some("cycle") => {
                r.cycles += 1;
                let (prev, next) =
                    match (block(&v["previous"], "previous"), block(&v["next"], "next")) {
                        (Ok(p), Ok(x)) => (p, x),
                        (Err(e), _) | (_, Err(e)) => {
                            bad(e);
                            last = None;
                            continue;
                        }
                    };
                if last.as_ref().is_some_and(|l| *l != prev) {
                    bad("`previous` is not the previous cycle's `next` (§5 history)".into());
                }
                // The accepted model output must be the block the cycle went on with.
                let accepted = v["attempts"]
                    .as_array()
                    .and_then(|a| a.iter().rev().find(|x| x["error"].is_null()))
                    .and_then(|x| x["output"].as_str());
                if let Some(out) = accepted {
                    match crate::extract(out) {
                        Ok((b, _)) if b == next => {}
                        Ok((b, _)) => bad(format!(
                            "the accepted model output {b} is not the recorded `next` {next}"
                        )),
                        Err(e) => bad(format!("the accepted model output does not parse: {e}")),
                    }
                }
                for viol in validate_transition(&prev, &next, limits) {
                    bad(viol.to_string());
                }
                let recorded: Vec<&str> = v["actions"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|x| x["action"].as_str()).collect())
                    .unwrap_or_default();
                let expected: Vec<String> = next
                    .actions()
                    .map(|(a, p)| crate::Stmt::Action(a.to_owned(), p.to_vec()).to_string())
                    .collect();
                if recorded != expected {
                    bad(format!(
                        "actions {recorded:?} differ from the block's {expected:?}"
                    ));
                }
                let logs = v["logs"].as_array().map_or(0, Vec::len);
                if logs != next.logs().count() {
                    bad(format!(
                        "{logs} logs recorded, the block has {}",
                        next.logs().count()
                    ));
                }
                if reference {
                    let inputs: Result<Inputs, String> = v["inputs"]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(k, t)| {
                            let lit = t
                                .as_str()
                                .and_then(|t| crate::parse(&format!("S{{$x:{t};}}S")).ok())
                                .and_then(|b| match b.stmts.into_iter().next() {
                                    Some(crate::Stmt::Assign(_, crate::Value::Lit(l))) => Some(l),
                                    _ => None,
                                })
                                .ok_or_else(|| format!("input {k} is not a literal"));
                            lit.map(|l: Literal| (k.clone(), l))
                        })
                        .collect();
                    match inputs {
                        Err(e) => bad(e),
                        Ok(inputs) => {
                            let req = EngineRequest {
                                cycle: r.cycles,
                                instr: v["instr"].as_str().unwrap_or_default().to_owned(),
                                previous: prev.clone(),
                                inputs,
                                retry_note: None,
                            };
                            match ReferenceEngine::step(&req) {
                                Ok(b) if b == next => {}
                                Ok(b) => bad(format!(
                                    "the reference engine gives {b}, the trace says {next}"
                                )),
                                Err(e) => bad(format!("the reference engine fails: {e}")),
                            }
                        }
                    }
                }
                last = Some(next);
            }
            _ => bad("unknown or missing `type`".into()),
        }
    }
    r
}
