//! State rules (spec §5): a block must carry the entire state, its references must resolve,
//! and it must stay within configured size limits. Violations come in a fixed order
//! (statement order, then dropped variables in the previous block's order, then limits) so
//! reports are deterministic.

use crate::ast::{Block, Ident, Literal, Stmt, Value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Size limits a block must respect (all measured on the canonical serialization).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Canonical block size in bytes.
    pub max_block_bytes: usize,
    /// Number of variables (52 = one per single letter, §4.3).
    pub max_variables: usize,
    /// Bytes of one string literal.
    pub max_string_bytes: usize,
    /// Number of statements (variables, logs and actions together).
    pub max_statements: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_block_bytes: 4096,
            max_variables: 52,
            max_string_bytes: 256,
            max_statements: 128,
        }
    }
}

/// Which state rule a block broke. Codes are stable (vectors name them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum RuleCode {
    /// A `$ref` names a variable the block does not assign (§4.3, §5 self-contained state).
    UndefinedReference,
    /// References that never reach a literal (`$a:$b;$b:$a;`).
    ReferenceCycle,
    /// A variable of the previous block is missing from the next one (§5 "MUST contain the
    /// ENTIRE state").
    DroppedVariable,
    /// The canonical block exceeds `max_block_bytes`.
    BlockTooLarge,
    /// More than `max_variables` variables.
    TooManyVariables,
    /// A string longer than `max_string_bytes`.
    StringTooLong,
    /// More than `max_statements` statements.
    TooManyStatements,
}

impl RuleCode {
    /// The stable code text.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleCode::UndefinedReference => "UNDEFINED_REFERENCE",
            RuleCode::ReferenceCycle => "REFERENCE_CYCLE",
            RuleCode::DroppedVariable => "DROPPED_VARIABLE",
            RuleCode::BlockTooLarge => "BLOCK_TOO_LARGE",
            RuleCode::TooManyVariables => "TOO_MANY_VARIABLES",
            RuleCode::StringTooLong => "STRING_TOO_LONG",
            RuleCode::TooManyStatements => "TOO_MANY_STATEMENTS",
        }
    }

    /// Every code.
    pub const ALL: [RuleCode; 7] = [
        RuleCode::UndefinedReference,
        RuleCode::ReferenceCycle,
        RuleCode::DroppedVariable,
        RuleCode::BlockTooLarge,
        RuleCode::TooManyVariables,
        RuleCode::StringTooLong,
        RuleCode::TooManyStatements,
    ];
}

/// One broken rule, with the variable or statement it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The rule.
    pub code: RuleCode,
    /// What it concerns (`$t`, `statement 3`, …).
    pub subject: String,
    /// A human explanation citing the spec section.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.code.as_str(),
            self.subject,
            self.message
        )
    }
}

fn v(code: RuleCode, subject: impl Into<String>, message: String) -> Violation {
    Violation {
        code,
        subject: subject.into(),
        message,
    }
}

/// Resolves `$id` through the block's assignments to a literal.
pub fn resolve<'a>(block: &'a Block, id: &Ident) -> Result<&'a Literal, RuleCode> {
    let vars: BTreeMap<&Ident, &Value> = block.vars().collect();
    resolve_in(&vars, id)
}

fn resolve_in<'a>(vars: &BTreeMap<&Ident, &'a Value>, id: &Ident) -> Result<&'a Literal, RuleCode> {
    let mut cur = id;
    for _ in 0..=vars.len() {
        match vars.get(cur) {
            None => return Err(RuleCode::UndefinedReference),
            Some(Value::Lit(l)) => return Ok(l),
            Some(Value::Ref(next)) => cur = next,
        }
    }
    Err(RuleCode::ReferenceCycle)
}

/// Every variable resolved to its literal, in block order; the first broken reference is an
/// error.
pub fn resolved_state(block: &Block) -> Result<Vec<(Ident, Literal)>, Violation> {
    let vars: BTreeMap<&Ident, &Value> = block.vars().collect();
    block
        .vars()
        .map(|(id, _)| match resolve_in(&vars, id) {
            Ok(l) => Ok((id.clone(), l.clone())),
            Err(code) => Err(v(
                code,
                id.to_string(),
                format!("{id} does not resolve to a literal (§4.3)"),
            )),
        })
        .collect()
}

/// The rules one block must meet on its own: references resolve (§4.3), limits hold.
pub fn validate_block(block: &Block, limits: &Limits) -> Vec<Violation> {
    let vars: BTreeMap<&Ident, &Value> = block.vars().collect();
    let mut out = Vec::new();
    let check = |out: &mut Vec<Violation>, where_: &str, val: &Value| {
        if let Value::Ref(r) = val {
            match resolve_in(&vars, r) {
                Ok(_) => {}
                Err(RuleCode::UndefinedReference) if !vars.contains_key(r) => out.push(v(
                    RuleCode::UndefinedReference,
                    r.to_string(),
                    format!("{where_} references {r}, which this block does not assign (§5: the block is the whole state)"),
                )),
                Err(RuleCode::UndefinedReference) => {} // reported where the chain breaks
                Err(code) => out.push(v(code, r.to_string(), format!("{where_}: {r} never resolves to a literal"))),
            }
        }
        if let Value::Lit(Literal::Str(s)) = val
            && s.len() > limits.max_string_bytes
        {
            out.push(v(
                RuleCode::StringTooLong,
                where_.to_owned(),
                format!(
                    "a string of {} bytes exceeds the limit of {}",
                    s.len(),
                    limits.max_string_bytes
                ),
            ));
        }
    };
    for (n, s) in block.stmts.iter().enumerate() {
        match s {
            Stmt::Assign(id, val) => check(&mut out, &id.to_string(), val),
            Stmt::Log(vals) | Stmt::Action(_, vals) => {
                for val in vals {
                    check(&mut out, &format!("statement {}", n + 1), val);
                }
            }
        }
    }
    // A cycle is reported once per variable on it, not per reference to it.
    out.dedup_by(|a, b| {
        a.code == RuleCode::ReferenceCycle && a.code == b.code && a.subject == b.subject
    });
    let n_vars = vars.len();
    if n_vars > limits.max_variables {
        out.push(v(
            RuleCode::TooManyVariables,
            "block",
            format!(
                "{n_vars} variables exceed the limit of {}",
                limits.max_variables
            ),
        ));
    }
    if block.stmts.len() > limits.max_statements {
        out.push(v(
            RuleCode::TooManyStatements,
            "block",
            format!(
                "{} statements exceed the limit of {}",
                block.stmts.len(),
                limits.max_statements
            ),
        ));
    }
    let size = block.to_string().len();
    if size > limits.max_block_bytes {
        out.push(v(
            RuleCode::BlockTooLarge,
            "block",
            format!(
                "the canonical block is {size} bytes, over the limit of {}",
                limits.max_block_bytes
            ),
        ));
    }
    out
}

/// The rules a next block must meet given the previous one: [`validate_block`], and no
/// variable of `previous` may be missing (§5 "MUST contain the ENTIRE state").
pub fn validate_transition(previous: &Block, next: &Block, limits: &Limits) -> Vec<Violation> {
    let mut out = validate_block(next, limits);
    let dropped: Vec<Violation> = previous
        .vars()
        .filter(|(id, _)| next.get(id).is_none())
        .map(|(id, _)| {
            v(
                RuleCode::DroppedVariable,
                id.to_string(),
                format!("{id} is in the previous block but not in the next one (§5: each block MUST contain the entire state)"),
            )
        })
        .collect();
    // Dropped variables come before limit violations: they are the more basic error.
    let split = out
        .iter()
        .position(|x| {
            matches!(
                x.code,
                RuleCode::TooManyVariables | RuleCode::TooManyStatements | RuleCode::BlockTooLarge
            )
        })
        .unwrap_or(out.len());
    out.splice(split..split, dropped);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn codes(prev: &str, next: &str) -> Vec<&'static str> {
        validate_transition(
            &parse(prev).unwrap(),
            &parse(next).unwrap(),
            &Limits::default(),
        )
        .iter()
        .map(|x| x.code.as_str())
        .collect()
    }

    #[test]
    fn dropped_and_undefined() {
        assert_eq!(codes("S{$a:1;$b:2;}S", "S{$a:1;}S"), ["DROPPED_VARIABLE"]);
        assert_eq!(codes("S{}S", "S{$a:$z;}S"), ["UNDEFINED_REFERENCE"]);
        assert_eq!(codes("S{}S", "S{>$z;}S"), ["UNDEFINED_REFERENCE"]);
        assert_eq!(
            codes("S{}S", "S{$a:$b;$b:$a;}S"),
            ["REFERENCE_CYCLE", "REFERENCE_CYCLE"]
        );
        assert!(codes("S{$a:1;}S", "S{$a:2;$b:$a;!x,$b;}S").is_empty());
    }

    #[test]
    fn limits() {
        let l = Limits {
            max_block_bytes: 12,
            max_variables: 1,
            max_string_bytes: 2,
            max_statements: 1,
        };
        let b = parse("S{$a:\"abc\";$b:1;}S").unwrap();
        let c: Vec<_> = validate_block(&b, &l)
            .iter()
            .map(|x| x.code.as_str())
            .collect();
        assert_eq!(
            c,
            [
                "STRING_TOO_LONG",
                "TOO_MANY_VARIABLES",
                "TOO_MANY_STATEMENTS",
                "BLOCK_TOO_LARGE"
            ]
        );
    }
}
