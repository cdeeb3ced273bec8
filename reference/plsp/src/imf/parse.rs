//! IMF parser (IMF.md "Grammar"): recursive descent with a depth limit, byte-offset errors,
//! never panics.

use super::{CmpOp, Cond, Directive};
use crate::ast::{Ident, Literal, Value, is_action_name};
use crate::number::Number;
use std::fmt;

/// Nesting limit for `@if` branches and parentheses together.
pub const MAX_DEPTH: usize = 32;

/// An IMF syntax error: byte offset and what was expected (code `IMF_SYNTAX`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImfError {
    /// Byte offset into the instruction string.
    pub offset: usize,
    /// What was expected there.
    pub expected: String,
}

impl fmt::Display for ImfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IMF_SYNTAX at byte {}: expected {}",
            self.offset, self.expected
        )
    }
}

impl std::error::Error for ImfError {}

/// Parses an instruction string (with or without the `INSTR:` prefix).
pub fn parse(text: &str) -> Result<Vec<Directive>, ImfError> {
    let mut p = P {
        t: text,
        s: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    p.ws();
    if p.at("INSTR:") {
        p.i += 6;
    }
    let list = p.list(false)?;
    p.ws();
    if p.i < p.s.len() {
        return Err(p.err("`;`, a directive `@…` or end of input"));
    }
    Ok(list)
}

struct P<'a> {
    t: &'a str,
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl P<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn at(&self, lit: &str) -> bool {
        self.s
            .get(self.i..)
            .is_some_and(|r| r.starts_with(lit.as_bytes()))
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }
    fn err(&self, expected: &str) -> ImfError {
        ImfError {
            offset: self.i,
            expected: expected.to_owned(),
        }
    }
    fn eat(&mut self, lit: &str, expected: &str) -> Result<(), ImfError> {
        self.ws();
        if self.at(lit) {
            self.i += lit.len();
            Ok(())
        } else {
            Err(self.err(expected))
        }
    }
    fn enter(&mut self) -> Result<(), ImfError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err("less nesting (the limit is 32 levels)"));
        }
        Ok(())
    }

    /// `{ directive ";" } [ directive ]`, ending at end of input (top level) or `}` (group).
    fn list(&mut self, group: bool) -> Result<Vec<Directive>, ImfError> {
        let mut out = Vec::new();
        loop {
            self.ws();
            match self.peek() {
                None => return Ok(out),
                Some(b'}') if group => return Ok(out),
                Some(b'@') => out.push(self.directive()?),
                Some(_) => {
                    return Err(
                        self.err("a directive `@set`, `@upd`, `@fetch`, `@if`, `@sig` or `@log`")
                    );
                }
            }
            self.ws();
            match self.peek() {
                Some(b';') => self.i += 1,
                None => return Ok(out),
                Some(b'}') if group => return Ok(out),
                _ => return Err(self.err("`;` after a directive")),
            }
        }
    }

    fn directive(&mut self) -> Result<Directive, ImfError> {
        // cursor at `@`
        for (kw, f) in [
            ("@set:", 0u8),
            ("@upd:", 1),
            ("@fetch:", 2),
            ("@if:", 3),
            ("@sig:", 4),
            ("@log:", 5),
        ] {
            if self.at(kw) {
                self.i += kw.len();
                return match f {
                    0 | 1 => {
                        let id = self.var()?;
                        self.eat("=", "`=` after the variable")?;
                        let v = self.value()?;
                        Ok(if f == 0 {
                            Directive::Set(id, v)
                        } else {
                            Directive::Upd(id, v)
                        })
                    }
                    2 => {
                        let src = self.source()?;
                        self.eat(",", "`,` after the fetch source")?;
                        Ok(Directive::Fetch(src, self.var()?))
                    }
                    3 => self.if_directive(),
                    4 => {
                        self.eat("!", "`!` and an action name")?;
                        self.ws();
                        let start = self.i;
                        while self
                            .peek()
                            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                        {
                            self.i += 1;
                        }
                        let name = &self.t[start..self.i];
                        if !is_action_name(name) {
                            self.i = start;
                            return Err(self.err("an action name `[A-Za-z][A-Za-z0-9_]*`"));
                        }
                        let mut params = Vec::new();
                        while self.comma() {
                            params.push(self.value()?);
                        }
                        Ok(Directive::Sig(name.to_owned(), params))
                    }
                    _ => {
                        let mut vals = vec![self.value()?];
                        while self.comma() {
                            vals.push(self.value()?);
                        }
                        Ok(Directive::Log(vals))
                    }
                };
            }
        }
        Err(self.err("a directive `@set:`, `@upd:`, `@fetch:`, `@if:`, `@sig:` or `@log:`"))
    }

    fn comma(&mut self) -> bool {
        let save = self.i;
        self.ws();
        if self.peek() == Some(b',') {
            self.i += 1;
            true
        } else {
            self.i = save;
            false
        }
    }

    fn if_directive(&mut self) -> Result<Directive, ImfError> {
        self.enter()?;
        let cond = self.or()?;
        self.eat("?", "`?` after the condition")?;
        let then = self.branch()?;
        let save = self.i;
        self.ws();
        let els = if self.peek() == Some(b':') {
            self.i += 1;
            self.branch()?
        } else {
            self.i = save;
            Vec::new()
        };
        self.depth -= 1;
        Ok(Directive::If(cond, then, els))
    }

    fn branch(&mut self) -> Result<Vec<Directive>, ImfError> {
        self.ws();
        match self.peek() {
            Some(b'{') => {
                self.i += 1;
                let l = self.list(true)?;
                self.eat("}", "`}` closing the group")?;
                Ok(l)
            }
            Some(b'@') => Ok(vec![self.directive()?]),
            _ => Err(self.err("a directive or a `{…}` group")),
        }
    }

    fn or(&mut self) -> Result<Cond, ImfError> {
        let mut l = self.and()?;
        loop {
            self.ws();
            if self.at("||") {
                self.i += 2;
                l = Cond::Or(Box::new(l), Box::new(self.and()?));
            } else {
                return Ok(l);
            }
        }
    }

    fn and(&mut self) -> Result<Cond, ImfError> {
        let mut l = self.prim()?;
        loop {
            self.ws();
            if self.at("&&") {
                self.i += 2;
                l = Cond::And(Box::new(l), Box::new(self.prim()?));
            } else {
                return Ok(l);
            }
        }
    }

    fn prim(&mut self) -> Result<Cond, ImfError> {
        self.ws();
        if self.peek() == Some(b'(') {
            self.i += 1;
            self.enter()?;
            let c = self.or()?;
            self.eat(")", "`)`")?;
            self.depth -= 1;
            return Ok(c);
        }
        let a = self.value()?;
        self.ws();
        let op = [
            ("==", CmpOp::Eq),
            ("!=", CmpOp::Ne),
            ("<=", CmpOp::Le),
            (">=", CmpOp::Ge),
            ("<", CmpOp::Lt),
            (">", CmpOp::Gt),
        ]
        .into_iter()
        .find(|(s, _)| self.at(s));
        let Some((s, op)) = op else {
            return Err(self.err("a comparison `==`, `!=`, `<`, `<=`, `>` or `>=`"));
        };
        self.i += s.len();
        let b = self.value()?;
        Ok(Cond::Cmp(a, op, b))
    }

    fn var(&mut self) -> Result<Ident, ImfError> {
        self.ws();
        if self.peek() != Some(b'$') {
            return Err(self.err("a variable `$id`"));
        }
        self.i += 1;
        self.ident()
    }

    fn ident(&mut self) -> Result<Ident, ImfError> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
            self.i += 1;
        }
        Ident::new(&self.t[start..self.i]).ok_or_else(|| {
            self.i = start;
            self.err("a variable name `[A-Za-z][A-Za-z0-9]*` after `$`")
        })
    }

    fn source(&mut self) -> Result<String, ImfError> {
        self.ws();
        if self.peek() == Some(b'"') {
            return match self.value()? {
                Value::Lit(Literal::Str(s)) if !s.is_empty() => Ok(s),
                _ => Err(self.err("a non-empty source")),
            };
        }
        let start = self.i;
        while self.peek().is_some_and(|c| {
            c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'/' | b'-')
        }) {
            self.i += 1;
        }
        if start == self.i {
            return Err(self.err("a fetch source (a name or a string)"));
        }
        Ok(self.t[start..self.i].to_owned())
    }

    fn value(&mut self) -> Result<Value, ImfError> {
        self.ws();
        match self.peek() {
            Some(b'"') => {
                let body = self.i + 1;
                match self.s[body..].iter().position(|&c| c == b'"') {
                    Some(n) => {
                        self.i = body + n + 1;
                        Ok(Value::Lit(Literal::Str(self.t[body..body + n].to_owned())))
                    }
                    None => Err(self.err("a closing `\"`")),
                }
            }
            Some(b'$') => {
                self.i += 1;
                Ok(Value::Ref(self.ident()?))
            }
            Some(c) if c.is_ascii_digit() || c == b'-' => {
                let start = self.i;
                if c == b'-' {
                    self.i += 1;
                }
                while self.peek().is_some_and(|c| c.is_ascii_digit() || c == b'.') {
                    self.i += 1;
                }
                match Number::parse(&self.t[start..self.i]) {
                    Some(n) => Ok(Value::Lit(Literal::Num(n))),
                    None => {
                        self.i = start;
                        Err(self.err("a number `-?digits[.digits]`"))
                    }
                }
            }
            _ => Err(self.err("a value (string, number or `$id`)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_directive() {
        let d = parse(r#"INSTR: @set:$p="run"; @upd:$t=$x; @fetch:temp,$t; @if:($t>80||$p=="x")&&$t<=100? {@sig:!page,$u,"hot";@log:$t} : @set:$s="ok"; @sig:!wait,5000"#).unwrap();
        assert_eq!(d.len(), 5);
        assert!(matches!(&d[3], Directive::If(_, t, e) if t.len() == 2 && e.len() == 1));
    }

    #[test]
    fn errors_have_offsets() {
        assert_eq!(parse("@set:$a 1").unwrap_err().offset, 8);
        assert_eq!(parse("@nope:1").unwrap_err().offset, 0);
        assert_eq!(parse("@if:$a>1 @set:$b=1").unwrap_err().offset, 9);
        assert_eq!(parse("@set:$a=1 @set:$b=2").unwrap_err().offset, 10);
        let deep = format!("@if:{}$a>1{}?@log:1", "(".repeat(40), ")".repeat(40));
        assert!(parse(&deep).is_err());
    }
}
