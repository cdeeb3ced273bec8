//! PLSP v0.5 (`reference/plsp`): parse, canonical serialization, state rules, engine step.

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_plsp::engine::EngineRequest;
use loom_plsp::engine::reference::ReferenceEngine;
use loom_plsp::{Block, Limits, Literal, Stmt, Value as PValue};
use serde_json::{Map, Value, json};

fn value(v: &PValue) -> Value {
    match v {
        PValue::Lit(Literal::Str(s)) => json!({"str": s}),
        PValue::Lit(Literal::Num(n)) => json!({"num": n.as_str()}),
        PValue::Ref(r) => json!({"ref": r.as_str()}),
    }
}

fn ast(b: &Block) -> Value {
    b.stmts
        .iter()
        .map(|s| match s {
            Stmt::Assign(i, v) => json!({"set": i.as_str(), "value": value(v)}),
            Stmt::Log(vs) => json!({"log": vs.iter().map(value).collect::<Vec<_>>()}),
            Stmt::Action(n, ps) => {
                json!({"action": n, "params": ps.iter().map(value).collect::<Vec<_>>()})
            }
        })
        .collect()
}

fn parsed(text: &str) -> Result<Block, Answer> {
    loom_plsp::parse(text).map_err(|e| Answer::invalid(e.code.as_str(), e.to_string()))
}

/// `plsp-parse`: `text` → the statement list.
pub fn parse(input: Input<'_>) -> Result<Answer, BadRequest> {
    Ok(match parsed(input.str("text")?) {
        Ok(b) => Answer::valid(ast(&b)),
        Err(a) => a,
    })
}

/// `plsp-serialize`: `text` → canonical text.
pub fn serialize(input: Input<'_>) -> Result<Answer, BadRequest> {
    Ok(match parsed(input.str("text")?) {
        Ok(b) => Answer::valid(b.to_string()),
        Err(a) => a,
    })
}

/// `plsp-check-transition`: `previous`, `next`, optional partial `limits` → resolved state.
pub fn check_transition(input: Input<'_>) -> Result<Answer, BadRequest> {
    let mut limits = Limits::default();
    if let Some(l) = input.opt("limits") {
        let get = |k: &str, d: usize| {
            l.get(k)
                .and_then(Value::as_u64)
                .map_or(d, |v| usize::try_from(v).unwrap_or(usize::MAX))
        };
        limits = Limits {
            max_block_bytes: get("max_block_bytes", limits.max_block_bytes),
            max_variables: get("max_variables", limits.max_variables),
            max_string_bytes: get("max_string_bytes", limits.max_string_bytes),
            max_statements: get("max_statements", limits.max_statements),
        };
    }
    let prev = match parsed(input.str("previous")?) {
        Ok(b) => b,
        Err(a) => return Ok(a),
    };
    let next = match parsed(input.str("next")?) {
        Ok(b) => b,
        Err(a) => return Ok(a),
    };
    if let Some(v) = loom_plsp::validate_transition(&prev, &next, &limits).first() {
        return Ok(Answer::invalid(v.code.as_str(), v.to_string()));
    }
    Ok(match loom_plsp::validate::resolved_state(&next) {
        Ok(vars) => Answer::valid(
            vars.into_iter()
                .map(|(i, l)| (i.as_str().to_owned(), Value::from(l.to_string())))
                .collect::<Map<_, _>>(),
        ),
        Err(v) => Answer::invalid(v.code.as_str(), v.to_string()),
    })
}

/// `plsp-engine-step`: `previous`, `instr`, `inputs` → the canonical next block.
pub fn engine_step(input: Input<'_>) -> Result<Answer, BadRequest> {
    let previous =
        loom_plsp::parse(input.str("previous")?).map_err(|e| format!("previous: {e}"))?;
    let mut inputs = loom_plsp::imf::Inputs::new();
    for (k, v) in input
        .value("inputs")?
        .as_object()
        .ok_or("inputs must be an object")?
    {
        let t = v.as_str().ok_or("inputs values are literal texts")?;
        let lit = match loom_plsp::parse(&format!("S{{$x:{t};}}S")).map(|b| b.stmts) {
            Ok(mut s) if s.len() == 1 => match s.remove(0) {
                Stmt::Assign(_, PValue::Lit(l)) => l,
                _ => return Err(format!("input {k}: not a literal")),
            },
            _ => return Err(format!("input {k}: not a literal")),
        };
        inputs.insert(k.clone(), lit);
    }
    let req = EngineRequest {
        cycle: 1,
        instr: input.str("instr")?.to_owned(),
        previous,
        inputs,
        retry_note: None,
    };
    Ok(match ReferenceEngine::step(&req) {
        Ok(b) => Answer::valid(b.to_string()),
        Err(loom_plsp::engine::EngineError::Step(e)) => Answer::invalid(e.code.as_str(), e.message),
        Err(e) => Answer::invalid("ENGINE", e.to_string()),
    })
}
