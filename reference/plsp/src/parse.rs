//! The state-block parser (spec §4, GRAMMAR.md). Linear, no recursion, never panics; each
//! error carries a byte offset and what was expected.

use crate::ast::{Block, Ident, Literal, Stmt, Value};
use crate::error::{ParseCode, ParseError};
use crate::number::Number;
use std::collections::BTreeSet;

/// The default input limit of [`parse`]: 1 MiB.
pub const DEFAULT_MAX_INPUT_BYTES: usize = 1 << 20;

/// Parses one `S{...}S` block, allowing whitespace around it and nothing else.
pub fn parse(text: &str) -> Result<Block, ParseError> {
    parse_with_limit(text, DEFAULT_MAX_INPUT_BYTES)
}

/// [`parse`] for raw bytes: non-UTF-8 input is `INVALID_UTF8` at the first bad byte.
pub fn parse_bytes(bytes: &[u8]) -> Result<Block, ParseError> {
    match std::str::from_utf8(bytes) {
        Ok(t) => parse(t),
        Err(e) => Err(ParseError {
            code: ParseCode::InvalidUtf8,
            offset: e.valid_up_to(),
            expected: "UTF-8 text",
            found: "an invalid byte sequence".into(),
        }),
    }
}

/// [`parse`] with an explicit input limit (`BLOCK_TOO_LARGE` beyond it).
pub fn parse_with_limit(text: &str, max_bytes: usize) -> Result<Block, ParseError> {
    if text.len() > max_bytes {
        return Err(ParseError {
            code: ParseCode::BlockTooLarge,
            offset: max_bytes,
            expected: "at most the configured number of bytes",
            found: format!("{} bytes", text.len()),
        });
    }
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        i: 0,
    };
    let (block, end) = p.block()?;
    p.i = end;
    p.ws();
    if p.i < p.s.len() {
        return Err(p.err(ParseCode::TrailingContent, "end of input after `}S`"));
    }
    Ok(block)
}

/// Finds the first `S{` in `text` and parses one block from there, ignoring text before and
/// after it: the middleware's lenient extraction of a block from chatty model output.
/// Returns the block and the byte range it occupied.
pub fn extract(text: &str) -> Result<(Block, std::ops::Range<usize>), ParseError> {
    let Some(start) = text.find("S{") else {
        return Err(ParseError {
            code: ParseCode::ExpectedBlockStart,
            offset: 0,
            expected: "`S{` somewhere in the output",
            found: "no block".into(),
        });
    };
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        i: start,
    };
    let (block, end) = p.block()?;
    Ok((block, start..end))
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn at(&self, lit: &str) -> bool {
        self.s[self.i.min(self.s.len())..].starts_with(lit.as_bytes())
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn found(&self) -> String {
        match self.text.get(self.i..).and_then(|r| r.chars().next()) {
            None => "end of input".into(),
            Some(c) => format!("{c:?}"),
        }
    }

    fn err(&self, code: ParseCode, expected: &'static str) -> ParseError {
        ParseError {
            code,
            offset: self.i,
            expected,
            found: self.found(),
        }
    }

    /// Parses `S{ … }S` at the cursor (after whitespace); returns the block and the end offset.
    fn block(&mut self) -> Result<(Block, usize), ParseError> {
        self.ws();
        if !self.at("S{") {
            return Err(self.err(ParseCode::ExpectedBlockStart, "`S{`"));
        }
        self.i += 2;
        let mut stmts = Vec::new();
        let mut seen = BTreeSet::new();
        loop {
            self.ws();
            if self.at("}S") {
                self.i += 2;
                return Ok((Block { stmts }, self.i));
            }
            let stmt = match self.peek() {
                None | Some(b'}') => {
                    return Err(self.err(ParseCode::UnterminatedBlock, "`}S`"));
                }
                Some(b'$') => {
                    let at = self.i;
                    let s = self.assign()?;
                    if let Stmt::Assign(id, _) = &s
                        && !seen.insert(id.clone())
                    {
                        return Err(ParseError {
                            code: ParseCode::DuplicateVariable,
                            offset: at,
                            expected: "each variable assigned once per block",
                            found: format!("{id} again"),
                        });
                    }
                    s
                }
                Some(b'>') => {
                    self.i += 1;
                    Stmt::Log(self.values(true)?)
                }
                Some(b'!') => self.action()?,
                Some(b';') => {
                    return Err(self.err(ParseCode::EmptyStatement, "a statement before `;`"));
                }
                Some(b'#') => {
                    return Err(self.err(
                        ParseCode::CommentNotAllowed,
                        "a statement (no comments, §4.2)",
                    ));
                }
                Some(_) => {
                    return Err(self.err(ParseCode::ExpectedStatement, "`$`, `>`, `!` or `}S`"));
                }
            };
            stmts.push(stmt);
            self.ws();
            match self.peek() {
                Some(b';') => self.i += 1,
                _ if self.at("}S") => {}
                None => return Err(self.err(ParseCode::UnterminatedBlock, "`;` or `}S`")),
                Some(b'#') => {
                    return Err(self.err(ParseCode::CommentNotAllowed, "`;` (no comments, §4.2)"));
                }
                Some(_) => return Err(self.err(ParseCode::ExpectedSeparator, "`;` or `}S`")),
            }
        }
    }

    fn ident(&mut self) -> Result<Ident, ParseError> {
        // The cursor is just after `$`.
        let start = self.i;
        if !self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            return Err(self.err(ParseCode::BadIdentifier, "a letter after `$`"));
        }
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric()) {
            self.i += 1;
        }
        Ident::new(&self.text[start..self.i])
            .ok_or_else(|| self.err(ParseCode::BadIdentifier, "`[A-Za-z][A-Za-z0-9]*`"))
    }

    fn assign(&mut self) -> Result<Stmt, ParseError> {
        self.i += 1;
        let id = self.ident()?;
        self.ws();
        if self.peek() != Some(b':') {
            return Err(self.err(ParseCode::ExpectedColon, "`:` after the variable name"));
        }
        self.i += 1;
        self.ws();
        Ok(Stmt::Assign(id, self.value()?))
    }

    fn action(&mut self) -> Result<Stmt, ParseError> {
        self.i += 1;
        self.ws();
        let start = self.i;
        if !self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            return Err(self.err(
                ParseCode::BadActionName,
                "an action name `[A-Za-z][A-Za-z0-9_]*`",
            ));
        }
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            self.i += 1;
        }
        let name = self.text[start..self.i].to_owned();
        Ok(Stmt::Action(name, self.values(false)?))
    }

    /// `v1,v2,…`; `first` says whether a value is required right away (logs) or only after
    /// each `,` (action parameters).
    fn values(&mut self, first: bool) -> Result<Vec<Value>, ParseError> {
        let mut out = Vec::new();
        if first {
            self.ws();
            out.push(self.value()?);
        }
        loop {
            let save = self.i;
            self.ws();
            if self.peek() == Some(b',') {
                self.i += 1;
                self.ws();
                out.push(self.value()?);
            } else {
                self.i = save;
                return Ok(out);
            }
        }
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            Some(b'"') => {
                let open = self.i;
                let body = self.i + 1;
                match self.s[body..].iter().position(|&c| c == b'"') {
                    Some(n) => {
                        self.i = body + n + 1;
                        Ok(Value::Lit(Literal::Str(
                            self.text[body..body + n].to_owned(),
                        )))
                    }
                    None => {
                        self.i = open;
                        Err(self.err(ParseCode::UnterminatedString, "a closing `\"`"))
                    }
                }
            }
            Some(b'$') => {
                self.i += 1;
                Ok(Value::Ref(self.ident()?))
            }
            Some(c) if c.is_ascii_digit() || c == b'-' => self.number(),
            _ => Err(self.err(ParseCode::ExpectedValue, "a string, a number or `$id`")),
        }
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b'+'))
        {
            self.i += 1;
        }
        match Number::parse(&self.text[start..self.i]) {
            Some(n) => Ok(Value::Lit(Literal::Num(n))),
            None => {
                let found = self.text[start..self.i].to_owned();
                self.i = start;
                Err(ParseError {
                    code: ParseCode::BadNumber,
                    offset: start,
                    expected: "a number `-?digits[.digits]`",
                    found: format!("{found:?}"),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(t: &str) -> (&'static str, usize) {
        let e = parse(t).unwrap_err();
        (e.code.as_str(), e.offset)
    }

    #[test]
    fn spec_examples_parse_and_canonicalize() {
        for (t, c) in [
            (
                "S{$p:\"run\";$t:75;$l:70;!wait,5000;}S",
                "S{$p:\"run\";$t:75;$l:70;!wait,5000;}S",
            ),
            (
                "S{$i:\"user_input\";$c:10;$r:$i;}S",
                "S{$i:\"user_input\";$c:10;$r:$i;}S",
            ),
            ("S{$t:75; >\"Temp OK\",$t;}S", "S{$t:75;>\"Temp OK\",$t;}S"),
            (
                "S{$u:\"op\";$m:\"CPU High\"; !page,$u,$m; !wait,1000;}S",
                "S{$u:\"op\";$m:\"CPU High\";!page,$u,$m;!wait,1000;}S",
            ),
            ("S{}S", "S{}S"),
        ] {
            assert_eq!(parse(t).unwrap().to_string(), c);
        }
    }

    #[test]
    fn errors_carry_offsets() {
        assert_eq!(code(""), ("EXPECTED_BLOCK_START", 0));
        assert_eq!(code("S{$a:1;"), ("UNTERMINATED_BLOCK", 7));
        assert_eq!(code("S{$a:1;}S x"), ("TRAILING_CONTENT", 10));
        assert_eq!(code("S{$a:\"x;}S"), ("UNTERMINATED_STRING", 5));
        assert_eq!(code("S{$a:1;$a:2;}S"), ("DUPLICATE_VARIABLE", 7));
        assert_eq!(code("S{$a:1.;}S"), ("BAD_NUMBER", 5));
        assert_eq!(code("S{#c\n$a:1;}S"), ("COMMENT_NOT_ALLOWED", 2));
        assert_eq!(code("S{$1:1;}S"), ("BAD_IDENTIFIER", 3));
        assert_eq!(code("S{$a 1;}S"), ("EXPECTED_COLON", 5));
        assert_eq!(code("S{$a:1 $b:2;}S"), ("EXPECTED_SEPARATOR", 7));
        assert_eq!(code("S{$a:1;}"), ("UNTERMINATED_BLOCK", 7));
    }

    #[test]
    fn extract_skips_surrounding_text() {
        let (b, r) = extract("Sure! S{$a:1;}S hope that helps").unwrap();
        assert_eq!(b.to_string(), "S{$a:1;}S");
        assert_eq!(r, 6..15);
    }
}
