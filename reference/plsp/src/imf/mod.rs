//! The instruction micro-format (spec §3), pinned down for the reference middleware: the
//! exact grammar and semantics are in `IMF.md`. [`parse`] turns an `INSTR:` string into
//! [`Directive`]s; [`apply`] runs them against a previous state.

mod eval;
mod parse;

pub use eval::{EngineErrorCode, Inputs, StepError, apply, eval_cond};
pub use parse::{ImfError, MAX_DEPTH, parse};

use crate::ast::{Ident, Value};

/// A comparison operator (IMF.md "Conditions").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A condition of `@if`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cond {
    /// `a op b`.
    Cmp(Value, CmpOp, Value),
    /// `a && b` (short-circuit).
    And(Box<Cond>, Box<Cond>),
    /// `a || b` (short-circuit).
    Or(Box<Cond>, Box<Cond>),
}

/// One IMF directive (IMF.md "Directives").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// `@set:$v=val`: create or overwrite `$v`.
    Set(Ident, Value),
    /// `@upd:$v=val`: overwrite `$v`, which must exist.
    Upd(Ident, Value),
    /// `@fetch:source,$v`: store the input named `source` in `$v` (§6 tool integration).
    Fetch(String, Ident),
    /// `@if:cond?then[:else]`.
    If(Cond, Vec<Directive>, Vec<Directive>),
    /// `@sig:!name,p…`: emit the action `!name,p…` in the next block.
    Sig(String, Vec<Value>),
    /// `@log:v,…`: emit the log command `>v,…` in the next block.
    Log(Vec<Value>),
}
