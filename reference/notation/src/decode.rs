//! The decoder: lines → blocks → values (SPEC.md rules 3–11). One recursive-descent pass over
//! the lines; recursion is bounded by [`DecodeOptions::max_depth`](crate::DecodeOptions).

use crate::error::{DecodeError, ErrorCode};
use crate::lines::{self, Line};
use crate::scalar::{self, LocalError};
use crate::{DecodeOptions, Mode};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

type R<T> = Result<T, DecodeError>;

/// A position: line index and byte offset in that line.
#[derive(Debug, Clone, Copy)]
struct At {
    line: usize,
    col: usize,
}

/// What a line (or the text after `- `) is (rule 4).
#[derive(Debug)]
enum Kind {
    /// `-` or `- …`.
    Item,
    /// `key:` / `key: value`; offsets are relative to the classified text.
    Key {
        key: String,
        key_at: usize,
        value_at: usize,
    },
    /// Anything else: a scalar or inline array.
    Scalar,
}

/// Decodes `text` with `opts` (see [`crate::decode_with`]).
pub(crate) fn decode(text: &str, opts: &DecodeOptions) -> R<Value> {
    let mut p = Parser {
        lines: lines::split(text),
        pos: 0,
        strict: opts.mode == Mode::Strict,
        max_depth: opts.max_depth.min(crate::HARD_MAX_DEPTH),
        depth: 0,
    };
    p.document()
}

#[derive(Debug)]
struct Parser<'a> {
    lines: Vec<Line<'a>>,
    pos: usize,
    strict: bool,
    max_depth: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn err(
        &self,
        code: ErrorCode,
        line: usize,
        byte: usize,
        msg: impl Into<String>,
    ) -> DecodeError {
        let column = self.lines.get(line).map_or(1, |l| l.column(byte));
        DecodeError::new(code, line + 1, column, msg)
    }

    fn local(&self, e: LocalError, line: usize, base: usize) -> DecodeError {
        self.err(e.code, line, base + e.offset, e.message)
    }

    fn raw(&self, line: usize) -> &'a str {
        self.lines[line].raw
    }

    /// The next structural line (rule 4 skips blank and comment lines), with its indentation;
    /// a tab in its indentation is an error (rule 3).
    fn peek(&mut self) -> R<Option<(usize, usize)>> {
        while self.pos < self.lines.len()
            && (self.lines[self.pos].is_blank() || self.lines[self.pos].is_comment())
        {
            self.pos += 1;
        }
        let Some(l) = self.lines.get(self.pos) else {
            return Ok(None);
        };
        let ind = l.indent();
        if l.raw[ind..].starts_with('\t') {
            return Err(self.err(
                ErrorCode::TabIndent,
                self.pos,
                ind,
                "expected spaces for indentation, found a tab",
            ));
        }
        Ok(Some((self.pos, ind)))
    }

    fn enter(&mut self, at: At) -> R<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(self.err(
                ErrorCode::DepthLimit,
                at.line,
                at.col,
                format!(
                    "containers nest deeper than the limit of {} levels",
                    self.max_depth
                ),
            ));
        }
        Ok(())
    }

    fn check_inline_depth(&self, line: usize, col: usize) -> R<()> {
        if self.depth + 1 > self.max_depth {
            return Err(self.err(
                ErrorCode::DepthLimit,
                line,
                col,
                format!(
                    "containers nest deeper than the limit of {} levels",
                    self.max_depth
                ),
            ));
        }
        Ok(())
    }

    /// Rule 10: a document is an object block, a list block, or one scalar line.
    fn document(&mut self) -> R<Value> {
        if self.strict
            && let Some((line, byte, c)) = lines::first_control(&self.lines)
        {
            return Err(self.err(
                ErrorCode::InvalidCharacter,
                line,
                byte,
                format!(
                    "raw control character U+{:04X}; expected it escaped inside a quoted string",
                    c as u32
                ),
            ));
        }
        let Some((i, ind)) = self.peek()? else {
            if self.strict {
                return Err(DecodeError::new(
                    ErrorCode::EmptyDocument,
                    1,
                    1,
                    "expected a value; an empty object is written `{}`",
                ));
            }
            return Ok(Value::Object(Map::new()));
        };
        if self.strict && ind != 0 {
            return Err(self.err(
                ErrorCode::BadIndent,
                i,
                ind,
                "expected the first line of the document at column 1",
            ));
        }
        let at = At { line: i, col: ind };
        let v = match self.classify(at)? {
            Kind::Item => self.list(at, ind)?,
            Kind::Key { .. } => self.map(at, ind)?,
            Kind::Scalar => {
                self.pos = i + 1;
                let (v, vstart) = trimmed(self.raw(i), ind);
                let v = self.inline(v, i, vstart)?;
                if let Some((j, jind)) = self.peek()? {
                    return Err(self.err(
                        ErrorCode::TrailingContent,
                        j,
                        jind,
                        "expected the end of the document: a scalar document is a single line",
                    ));
                }
                return Ok(v);
            }
        };
        if let Some((j, jind)) = self.peek()? {
            return Err(self.err(
                ErrorCode::BadIndent,
                j,
                jind,
                format!("expected indentation of {ind} spaces, found {jind}"),
            ));
        }
        Ok(v)
    }

    /// Rule 4: what the text at `at` is.
    fn classify(&self, at: At) -> R<Kind> {
        let text = &self.raw(at.line)[at.col..];
        if text.trim_end_matches([' ', '\t']) == "-" || text.starts_with("- ") {
            return Ok(Kind::Item);
        }
        if text.starts_with('"') {
            match scalar::parse_quoted(text, 0) {
                Ok((key, end)) => {
                    let rest = &text[end..];
                    if rest.trim_end_matches([' ', '\t']) == ":" || rest.starts_with(": ") {
                        return Ok(Kind::Key {
                            key,
                            key_at: 0,
                            value_at: end + 1,
                        });
                    }
                    if self.strict {
                        return Ok(Kind::Scalar);
                    }
                }
                Err(e) if self.strict => return Err(self.local(e, at.line, at.col)),
                Err(_) => {}
            }
        }
        let trimmed = text.trim_end_matches([' ', '\t']);
        let idx = match text.find(": ") {
            Some(i) => i,
            None if trimmed.ends_with(':') => trimmed.len() - 1,
            None => return Ok(Kind::Scalar),
        };
        let candidate = &text[..idx];
        if self.strict {
            if candidate.is_empty() || candidate.contains('"') || candidate.starts_with(['[', '{'])
            {
                return Ok(Kind::Scalar);
            }
            Ok(Kind::Key {
                key: candidate.to_owned(),
                key_at: 0,
                value_at: idx + 1,
            })
        } else {
            Ok(Kind::Key {
                key: candidate.trim_end_matches([' ', '\t']).to_owned(),
                key_at: 0,
                value_at: idx + 1,
            })
        }
    }

    /// Rule 5: an object block whose entries sit at indentation `n`, starting at `first`.
    fn map(&mut self, first: At, n: usize) -> R<Value> {
        self.enter(first)?;
        let mut obj = Map::new();
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let mut at = first;
        loop {
            match self.classify(at)? {
                Kind::Key {
                    key,
                    key_at,
                    value_at,
                } => {
                    if let Some(prev) = seen.get(&key)
                        && self.strict
                    {
                        return Err(self.err(
                            ErrorCode::DuplicateKey,
                            at.line,
                            at.col + key_at,
                            format!(
                                "key {key:?} already appeared on line {prev}; expected each key once (strict mode; the lenient reader keeps the last value)"
                            ),
                        ));
                    }
                    seen.insert(key.clone(), at.line + 1);
                    let v = self.entry_value(at.line, at.col + value_at, n)?;
                    obj.insert(key, v);
                }
                Kind::Item => {
                    return Err(self.err(
                        ErrorCode::MixedBlock,
                        at.line,
                        at.col,
                        "expected `key: value` (this block is an object), found a `- ` item",
                    ));
                }
                Kind::Scalar => {
                    return Err(self.err(
                        ErrorCode::ExpectedKey,
                        at.line,
                        at.col,
                        "expected `key: value` or `key:` (quote keys that contain `: ` or `\"`)",
                    ));
                }
            }
            match self.peek()? {
                Some((i, ind)) if ind == n => at = At { line: i, col: ind },
                Some((i, ind)) if ind > n => {
                    return Err(self.err(
                        ErrorCode::BadIndent,
                        i,
                        ind,
                        format!(
                            "expected indentation of {n} spaces (next key) or less, found {ind}"
                        ),
                    ));
                }
                _ => break,
            }
        }
        self.depth -= 1;
        Ok(Value::Object(obj))
    }

    /// Rule 9: a list block whose `- ` items sit at indentation `n`, starting at `first`.
    fn list(&mut self, first: At, n: usize) -> R<Value> {
        self.enter(first)?;
        let mut arr = Vec::new();
        let mut at = first;
        loop {
            match self.classify(at)? {
                Kind::Item => arr.push(self.item_value(at, n)?),
                Kind::Key { .. } => {
                    return Err(self.err(
                        ErrorCode::MixedBlock,
                        at.line,
                        at.col,
                        "expected a `- ` item (this block is a list), found `key:`",
                    ));
                }
                Kind::Scalar => {
                    return Err(self.err(
                        ErrorCode::ExpectedItem,
                        at.line,
                        at.col,
                        "expected a `- ` item (this block is a list)",
                    ));
                }
            }
            match self.peek()? {
                Some((i, ind)) if ind == n => at = At { line: i, col: ind },
                Some((i, ind)) if ind > n => {
                    return Err(self.err(
                        ErrorCode::BadIndent,
                        i,
                        ind,
                        format!(
                            "expected indentation of {n} spaces (next item) or less, found {ind}"
                        ),
                    ));
                }
                _ => break,
            }
        }
        self.depth -= 1;
        Ok(Value::Array(arr))
    }

    /// Rule 5: the value after `key:` whose text starts at byte `value_byte` of `line`.
    fn entry_value(&mut self, line: usize, value_byte: usize, n: usize) -> R<Value> {
        self.pos = line + 1;
        let (v, vstart) = trimmed(self.raw(line), value_byte);
        if v.is_empty() {
            return self.nested(line, n, "`key:`");
        }
        if scalar::is_block_header(v) {
            return Ok(self.block_scalar(v, n));
        }
        self.inline(v, line, vstart)
    }

    /// Rule 9: the value of the `- ` item at `at`, in a list at indentation `n`.
    fn item_value(&mut self, at: At, n: usize) -> R<Value> {
        self.pos = at.line + 1;
        let raw = self.raw(at.line);
        let (v, vstart) = trimmed(raw, at.col + 1);
        if v.is_empty() {
            return self.nested(at.line, n, "`-`");
        }
        if scalar::is_block_header(v) {
            return Ok(self.block_scalar(v, n));
        }
        let vat = At {
            line: at.line,
            col: vstart,
        };
        match self.classify(vat)? {
            Kind::Key { .. } => {
                if self.strict && vstart != n + 2 {
                    return Err(self.err(
                        ErrorCode::BadIndent,
                        at.line,
                        vstart,
                        "expected exactly one space between `-` and the first key",
                    ));
                }
                self.map(vat, vstart)
            }
            Kind::Item if self.strict => Err(self.err(
                ErrorCode::ReservedScalar,
                at.line,
                vstart,
                "expected a value after `- `, found another `- `; write `-` alone and indent the inner list below it",
            )),
            _ => self.inline(v, at.line, vstart),
        }
    }

    /// Rules 5 and 9: `key:` or `-` with nothing after it takes the block indented below.
    fn nested(&mut self, line: usize, n: usize, what: &str) -> R<Value> {
        match self.peek()? {
            Some((i, ind)) if ind > n => {
                if self.strict && ind != n + 2 {
                    return Err(self.err(
                        ErrorCode::BadIndent,
                        i,
                        ind,
                        format!(
                            "expected indentation of {} spaces (2 more than line {}), found {ind}",
                            n + 2,
                            line + 1
                        ),
                    ));
                }
                let at = At { line: i, col: ind };
                match self.classify(at)? {
                    Kind::Item => self.list(at, ind),
                    Kind::Key { .. } => self.map(at, ind),
                    Kind::Scalar => Err(self.err(
                        ErrorCode::ExpectedKey,
                        i,
                        ind,
                        "expected `key: value` or a `- ` item in an indented block (a scalar goes on the line above)",
                    )),
                }
            }
            _ if self.strict => Err(self.err(
                ErrorCode::MissingValue,
                line,
                self.raw(line).len(),
                format!(
                    "expected a value after {what} or a block indented by {} spaces below it",
                    n + 2
                ),
            )),
            _ => Ok(Value::Object(Map::new())),
        }
    }

    /// Rule 10 (block scalars): `|` literal, `>` folded, with `-` strip / `+` keep chomping.
    fn block_scalar(&mut self, header: &str, n: usize) -> Value {
        let m = if self.strict {
            n + 2
        } else {
            let mut j = self.pos;
            while j < self.lines.len() && self.lines[j].is_blank() {
                j += 1;
            }
            match self.lines.get(j) {
                Some(l) if l.indent() > n => l.indent(),
                _ => usize::MAX,
            }
        };
        let mut body: Vec<&str> = Vec::new();
        while let Some(l) = self.lines.get(self.pos) {
            if l.indent() >= m {
                body.push(&l.raw[m..]);
            } else if l.is_blank() {
                body.push("");
            } else {
                break;
            }
            self.pos += 1;
        }
        let trailing = body.iter().rev().take_while(|l| l.is_empty()).count();
        let content = &body[..body.len() - trailing];
        let text = if header.starts_with('>') {
            let mut out = String::new();
            let mut prev_text = false;
            for l in content {
                if l.is_empty() {
                    out.push('\n');
                    prev_text = false;
                } else {
                    if prev_text {
                        out.push(' ');
                    }
                    out.push_str(l);
                    prev_text = true;
                }
            }
            out
        } else {
            content.join("\n")
        };
        Value::String(match header.as_bytes().get(1) {
            Some(b'-') => text,
            Some(_) => {
                let mut t = text;
                if !content.is_empty() {
                    t.push('\n');
                }
                t.push_str(&"\n".repeat(trailing));
                t
            }
            None if content.is_empty() => String::new(),
            None => text + "\n",
        })
    }

    /// Rules 6–9: a value written on one line (scalar, quoted string, inline array, `[]`, `{}`).
    fn inline(&self, v: &str, line: usize, vstart: usize) -> R<Value> {
        if v == "{}" {
            self.check_inline_depth(line, vstart)?;
            return Ok(Value::Object(Map::new()));
        }
        if v.starts_with('[') {
            if v.len() >= 2 && v.ends_with(']') {
                self.check_inline_depth(line, vstart)?;
                let (inner, istart) = trimmed(&v[..v.len() - 1], 1);
                if inner.is_empty() {
                    return Ok(Value::Array(vec![]));
                }
                return self
                    .tokenize(inner)
                    .map(Value::Array)
                    .map_err(|e| self.local(e, line, vstart + istart));
            }
            if self.strict {
                return Err(self.err(
                    ErrorCode::UnterminatedBracket,
                    line,
                    vstart,
                    "expected `]` at the end of the inline array",
                ));
            }
            return Ok(Value::String(v.to_owned()));
        }
        if v.starts_with('{') {
            if self.strict {
                return Err(self.err(
                    ErrorCode::ReservedScalar,
                    line,
                    vstart,
                    "inline objects are not supported: expected `{}` or an indented block (quote a string that starts with `{`)",
                ));
            }
            return Ok(Value::String(v.to_owned()));
        }
        let mut items = self.tokenize(v).map_err(|e| self.local(e, line, vstart))?;
        if items.len() == 1 {
            return Ok(items.pop().unwrap_or(Value::Null));
        }
        self.check_inline_depth(line, vstart)?;
        Ok(Value::Array(items))
    }

    /// Rule 9: items separated by `, `; the lenient reader falls back to a plain split.
    fn tokenize(&self, s: &str) -> Result<Vec<Value>, LocalError> {
        match tokenize_strictly(s, self.strict) {
            Err(_) if !self.strict => Ok(s
                .split(", ")
                .map(|p| {
                    scalar::infer_plain(p.trim_matches([' ', '\t']), false)
                        .unwrap_or_else(|_| Value::String(p.to_owned()))
                })
                .collect()),
            r => r,
        }
    }
}

fn tokenize_strictly(s: &str, strict: bool) -> Result<Vec<Value>, LocalError> {
    let mut items = Vec::new();
    let mut pos = 0;
    loop {
        pos += s[pos..].len() - s[pos..].trim_start_matches(' ').len();
        if s[pos..].starts_with('"') {
            let (text, end) = scalar::parse_quoted(s, pos)?;
            items.push(Value::String(text));
            pos = end;
            if pos == s.len() {
                return Ok(items);
            }
            if !s[pos..].starts_with(", ") {
                return Err(LocalError::new(
                    ErrorCode::TrailingCharacters,
                    pos,
                    "expected `, ` or the end of the value after the closing quote",
                ));
            }
            pos += 2;
        } else {
            let end = s[pos..].find(", ").map_or(s.len(), |i| pos + i);
            let item = s[pos..end].trim_end_matches([' ', '\t']);
            if item.is_empty() {
                return Err(LocalError::new(
                    ErrorCode::EmptyItem,
                    pos,
                    "expected an item between separators (write `\"\"` for an empty string)",
                ));
            }
            if strict && item.starts_with(['[', '{']) {
                return Err(LocalError::new(
                    ErrorCode::ReservedScalar,
                    pos,
                    "expected a scalar item: quote items that start with `[` or `{` (nested containers use `- ` lists)",
                ));
            }
            items.push(scalar::infer_plain(item, strict).map_err(|mut e| {
                e.offset += pos;
                e
            })?);
            if end == s.len() {
                return Ok(items);
            }
            pos = end + 2;
        }
    }
}

/// `raw[from..]` without surrounding spaces and tabs, and the byte offset where it starts.
fn trimmed(raw: &str, from: usize) -> (&str, usize) {
    let rest = &raw[from..];
    let start = from + rest.len() - rest.trim_start_matches([' ', '\t']).len();
    (raw[start..].trim_end_matches([' ', '\t']), start)
}
