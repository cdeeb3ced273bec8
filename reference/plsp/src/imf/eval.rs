//! IMF semantics (IMF.md "Semantics"): directives run in order against a working copy of the
//! previous state; the result is the next block: every variable (previous order, then new
//! ones in order of creation), then the `>`/`!` commands in the order their directives ran.

use super::{CmpOp, Cond, Directive, ImfError};
use crate::ast::{Block, Ident, Literal, Stmt, Value};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

/// Data the engine may read with `@fetch` (source name → literal), per cycle.
pub type Inputs = BTreeMap<String, Literal>;

/// Why a step failed. Codes are stable (vectors name them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineErrorCode {
    /// The instruction string is not valid IMF.
    ImfSyntax,
    /// A `$ref` (or `@upd` target) names no variable of the working state.
    UndefinedVariable,
    /// An ordering comparison between a string and a number.
    TypeMismatch,
    /// `@fetch` names a source with no input this cycle.
    FetchUnavailable,
    /// The previous block's references do not resolve (cycle), so it cannot be read.
    PreviousInvalid,
}

impl EngineErrorCode {
    /// The stable code text.
    pub fn as_str(self) -> &'static str {
        match self {
            EngineErrorCode::ImfSyntax => "IMF_SYNTAX",
            EngineErrorCode::UndefinedVariable => "UNDEFINED_VARIABLE",
            EngineErrorCode::TypeMismatch => "TYPE_MISMATCH",
            EngineErrorCode::FetchUnavailable => "FETCH_UNAVAILABLE",
            EngineErrorCode::PreviousInvalid => "PREVIOUS_INVALID",
        }
    }
}

/// A failed step: code and explanation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepError {
    /// The code.
    pub code: EngineErrorCode,
    /// What went wrong, naming the variable, source or offset.
    pub message: String,
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for StepError {}

impl From<ImfError> for StepError {
    fn from(e: ImfError) -> Self {
        StepError {
            code: EngineErrorCode::ImfSyntax,
            message: e.to_string(),
        }
    }
}

fn fail(code: EngineErrorCode, message: String) -> StepError {
    StepError { code, message }
}

/// The working state: variables in order, plus the commands emitted so far.
struct Work {
    vars: Vec<(Ident, Value)>,
    cmds: Vec<Stmt>,
}

impl Work {
    fn slot(&mut self, id: &Ident) -> Option<&mut Value> {
        self.vars.iter_mut().find(|(i, _)| i == id).map(|(_, v)| v)
    }

    fn lookup(&self, id: &Ident) -> Result<Literal, StepError> {
        let mut cur = id;
        for _ in 0..=self.vars.len() {
            match self.vars.iter().find(|(i, _)| i == cur).map(|(_, v)| v) {
                None => {
                    return Err(fail(
                        EngineErrorCode::UndefinedVariable,
                        format!("{cur} is not defined"),
                    ));
                }
                Some(Value::Lit(l)) => return Ok(l.clone()),
                Some(Value::Ref(r)) => cur = r,
            }
        }
        Err(fail(
            EngineErrorCode::PreviousInvalid,
            format!("{id} is on a reference cycle"),
        ))
    }

    fn eval(&self, v: &Value) -> Result<Literal, StepError> {
        match v {
            Value::Lit(l) => Ok(l.clone()),
            Value::Ref(r) => self.lookup(r),
        }
    }

    fn check_refs(&self, vals: &[Value]) -> Result<(), StepError> {
        vals.iter().try_for_each(|v| self.eval(v).map(|_| ()))
    }

    fn run(&mut self, ds: &[Directive], inputs: &Inputs) -> Result<(), StepError> {
        for d in ds {
            match d {
                Directive::Set(id, v) => {
                    let lit = Value::Lit(self.eval(v)?);
                    match self.slot(id) {
                        Some(slot) => *slot = lit,
                        None => self.vars.push((id.clone(), lit)),
                    }
                }
                Directive::Upd(id, v) => {
                    let lit = Value::Lit(self.eval(v)?);
                    match self.slot(id) {
                        Some(slot) => *slot = lit,
                        None => {
                            return Err(fail(
                                EngineErrorCode::UndefinedVariable,
                                format!(
                                    "@upd of {id}, which is not defined (use @set to create it)"
                                ),
                            ));
                        }
                    }
                }
                Directive::Fetch(src, id) => {
                    let Some(lit) = inputs.get(src) else {
                        return Err(fail(
                            EngineErrorCode::FetchUnavailable,
                            format!("no input {src:?} this cycle"),
                        ));
                    };
                    let lit = Value::Lit(lit.clone());
                    match self.slot(id) {
                        Some(slot) => *slot = lit,
                        None => self.vars.push((id.clone(), lit)),
                    }
                }
                Directive::If(c, then, els) => {
                    let branch = if self.cond(c)? { then } else { els };
                    self.run(branch, inputs)?;
                }
                Directive::Sig(name, params) => {
                    self.check_refs(params)?;
                    self.cmds.push(Stmt::Action(name.clone(), params.clone()));
                }
                Directive::Log(vals) => {
                    self.check_refs(vals)?;
                    self.cmds.push(Stmt::Log(vals.clone()));
                }
            }
        }
        Ok(())
    }

    fn cond(&self, c: &Cond) -> Result<bool, StepError> {
        match c {
            Cond::And(a, b) => Ok(self.cond(a)? && self.cond(b)?),
            Cond::Or(a, b) => Ok(self.cond(a)? || self.cond(b)?),
            Cond::Cmp(a, op, b) => {
                let (a, b) = (self.eval(a)?, self.eval(b)?);
                compare(&a, *op, &b)
            }
        }
    }
}

fn compare(a: &Literal, op: CmpOp, b: &Literal) -> Result<bool, StepError> {
    let ord = match (a, b) {
        (Literal::Num(x), Literal::Num(y)) => x.cmp_value(y),
        (Literal::Str(x), Literal::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => match op {
            CmpOp::Eq => return Ok(false),
            CmpOp::Ne => return Ok(true),
            _ => {
                return Err(fail(
                    EngineErrorCode::TypeMismatch,
                    format!("cannot order {a} and {b}: one is a string, the other a number"),
                ));
            }
        },
    };
    Ok(match op {
        CmpOp::Eq => ord == Ordering::Equal,
        CmpOp::Ne => ord != Ordering::Equal,
        CmpOp::Lt => ord == Ordering::Less,
        CmpOp::Le => ord != Ordering::Greater,
        CmpOp::Gt => ord == Ordering::Greater,
        CmpOp::Ge => ord != Ordering::Less,
    })
}

/// Evaluates a condition against a block's variables (for tools and tests).
pub fn eval_cond(c: &Cond, state: &Block) -> Result<bool, StepError> {
    let w = Work {
        vars: state.vars().map(|(i, v)| (i.clone(), v.clone())).collect(),
        cmds: vec![],
    };
    w.cond(c)
}

/// Applies `directives` to `previous` (its `>`/`!` commands are dropped: they belonged to
/// the previous cycle) with this cycle's `inputs`, giving the next block.
pub fn apply(
    previous: &Block,
    directives: &[Directive],
    inputs: &Inputs,
) -> Result<Block, StepError> {
    let mut w = Work {
        vars: previous
            .vars()
            .map(|(i, v)| (i.clone(), v.clone()))
            .collect(),
        cmds: vec![],
    };
    w.run(directives, inputs)?;
    let mut stmts: Vec<Stmt> = w
        .vars
        .into_iter()
        .map(|(i, v)| Stmt::Assign(i, v))
        .collect();
    stmts.extend(w.cmds);
    Ok(Block { stmts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::imf::parse;
    use crate::parse::parse as block;

    fn step(prev: &str, instr: &str, inputs: &[(&str, &str)]) -> Result<String, &'static str> {
        let inputs: Inputs = inputs
            .iter()
            .map(|(k, v)| {
                (
                    (*k).to_owned(),
                    match block(&format!("S{{$x:{v};}}S")).unwrap().stmts.remove(0) {
                        Stmt::Assign(_, Value::Lit(l)) => l,
                        _ => unreachable!(),
                    },
                )
            })
            .collect();
        let ds = parse(instr).map_err(|_| "IMF_SYNTAX")?;
        apply(&block(prev).unwrap(), &ds, &inputs)
            .map(|b| b.to_string())
            .map_err(|e| e.code.as_str())
    }

    #[test]
    fn temperature_monitor_cycle() {
        let instr = r#"@upd:$l=$t;@fetch:temp,$t;@if:$t>90?{@set:$p="alert";@sig:!page,$u,"Temp high"}:@log:"Temp OK",$t;@sig:!wait,5000"#;
        assert_eq!(
            step(
                r#"S{$p:"run";$u:"op";$t:75;$l:70;!wait,5000;}S"#,
                instr,
                &[("temp", "82")]
            )
            .unwrap(),
            r#"S{$p:"run";$u:"op";$t:82;$l:75;>"Temp OK",$t;!wait,5000;}S"#
        );
        assert_eq!(
            step(
                r#"S{$p:"run";$u:"op";$t:82;$l:75;}S"#,
                instr,
                &[("temp", "95")]
            )
            .unwrap(),
            r#"S{$p:"alert";$u:"op";$t:95;$l:82;!page,$u,"Temp high";!wait,5000;}S"#
        );
    }

    #[test]
    fn errors() {
        assert_eq!(step("S{}S", "@upd:$a=1", &[]), Err("UNDEFINED_VARIABLE"));
        assert_eq!(step("S{}S", "@fetch:x,$a", &[]), Err("FETCH_UNAVAILABLE"));
        assert_eq!(
            step("S{$a:1;}S", "@if:$a<\"b\"?@set:$b=1", &[]),
            Err("TYPE_MISMATCH")
        );
        assert_eq!(
            step("S{$a:1;}S", "@if:$a==\"1\"?@set:$b=1:@set:$b=2", &[]).unwrap(),
            "S{$a:1;$b:2;}S"
        );
        assert_eq!(
            step("S{$a:1;}S", "@if:$a==1||$zz==2?@set:$b=1", &[]).unwrap(),
            "S{$a:1;$b:1;}S"
        );
        assert_eq!(
            step("S{$a:$b;$b:$a;}S", "@set:$c=$a", &[]),
            Err("PREVIOUS_INVALID")
        );
    }
}
