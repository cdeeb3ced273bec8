//! The data model of a state block (spec §4): an ordered list of statements, each an
//! assignment (§4.3), a `>` log command (§4.5) or a `!` action command (§4.6).
//!
//! [`Block`]'s `Display` is the canonical minimal serialization (GRAMMAR.md, "Canonical
//! form"): no whitespace outside strings, every statement followed by `;`, statements in
//! their original order, numbers in canonical form.

use crate::number::Number;
use std::fmt;

/// A variable name: `[A-Za-z][A-Za-z0-9]*` (spec §4.3; single letters preferred).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ident(String);

impl Ident {
    /// A name if `s` matches `[A-Za-z][A-Za-z0-9]*`.
    pub fn new(s: &str) -> Option<Ident> {
        let mut b = s.bytes();
        let ok = b.next().is_some_and(|c| c.is_ascii_alphabetic())
            && b.all(|c| c.is_ascii_alphanumeric());
        ok.then(|| Ident(s.to_owned()))
    }

    /// The name without `$`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${}", self.0)
    }
}

/// A literal value: a string or a number (spec §4.4).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Literal {
    /// `"..."`: any characters but `"` (no escapes exist).
    Str(String),
    /// An exact decimal number.
    Num(Number),
}

impl Literal {
    /// The value as JSON (strings as strings, numbers via [`Number::to_json`]).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Literal::Str(s) => s.clone().into(),
            Literal::Num(n) => n.to_json(),
        }
    }

    /// A string literal if `s` has no `"` (which PLSP strings cannot hold).
    pub fn string(s: &str) -> Option<Literal> {
        (!s.contains('"')).then(|| Literal::Str(s.to_owned()))
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Str(s) => write!(f, "\"{s}\""),
            Literal::Num(n) => write!(f, "{n}"),
        }
    }
}

/// A value in an assignment, log or action: a literal or a `$id` reference (spec §4.3).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Value {
    /// A literal.
    Lit(Literal),
    /// A reference to a variable of the same block.
    Ref(Ident),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Lit(l) => write!(f, "{l}"),
            Value::Ref(r) => write!(f, "{r}"),
        }
    }
}

/// One statement (spec §4.2).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Stmt {
    /// `$id:val` (§4.3).
    Assign(Ident, Value),
    /// `>v1,v2,…` (§4.5): at least one value.
    Log(Vec<Value>),
    /// `!name,p1,…` (§4.6): an action name and zero or more parameters.
    Action(String, Vec<Value>),
}

impl fmt::Display for Stmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stmt::Assign(id, v) => write!(f, "{id}:{v}"),
            Stmt::Log(vs) => {
                f.write_str(">")?;
                join(f, vs)
            }
            Stmt::Action(name, ps) => {
                write!(f, "!{name}")?;
                for p in ps {
                    write!(f, ",{p}")?;
                }
                Ok(())
            }
        }
    }
}

fn join(f: &mut fmt::Formatter<'_>, vs: &[Value]) -> fmt::Result {
    for (i, v) in vs.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{v}")?;
    }
    Ok(())
}

/// True if `s` is a valid action name: `[A-Za-z][A-Za-z0-9_]*` (GRAMMAR.md).
pub fn is_action_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next().is_some_and(|c| c.is_ascii_alphabetic())
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// A parsed `S{...}S` block (spec §4.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Block {
    /// The statements, in order.
    pub stmts: Vec<Stmt>,
}

impl Block {
    /// The assignments, in order.
    pub fn vars(&self) -> impl Iterator<Item = (&Ident, &Value)> {
        self.stmts.iter().filter_map(|s| match s {
            Stmt::Assign(i, v) => Some((i, v)),
            _ => None,
        })
    }

    /// The value assigned to `id`, if any.
    pub fn get(&self, id: &Ident) -> Option<&Value> {
        self.vars().find(|(i, _)| *i == id).map(|(_, v)| v)
    }

    /// The `!` actions, in order.
    pub fn actions(&self) -> impl Iterator<Item = (&str, &[Value])> {
        self.stmts.iter().filter_map(|s| match s {
            Stmt::Action(n, p) => Some((n.as_str(), p.as_slice())),
            _ => None,
        })
    }

    /// The `>` log commands, in order.
    pub fn logs(&self) -> impl Iterator<Item = &[Value]> {
        self.stmts.iter().filter_map(|s| match s {
            Stmt::Log(v) => Some(v.as_slice()),
            _ => None,
        })
    }

    /// The state alone: the assignments, without this cycle's `>` and `!` commands (§5).
    pub fn state_only(&self) -> Block {
        Block {
            stmts: self
                .stmts
                .iter()
                .filter(|s| matches!(s, Stmt::Assign(..)))
                .cloned()
                .collect(),
        }
    }
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("S{")?;
        for s in &self.stmts {
            write!(f, "{s};")?;
        }
        f.write_str("}S")
    }
}
