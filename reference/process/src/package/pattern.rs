//! Package regular expressions: the one place a pattern written in a `process.yaml` is
//! compiled and executed.
//!
//! The guide's packages are written for Python `re` (guide "Verification rules": a regex
//! rule's `check` is a "Regular expression pattern"; guide "Phase iteration loops":
//! `artifact_regex.pattern`; guide "Process test manifest": `forbidden_patterns`). Python
//! patterns may use look-around and backreferences, which the `regex` crate refuses, so we
//! use `fancy-regex` (a backtracking engine over `regex`). Python-only spellings it lacks are
//! translated first ([`translate`]): `\Z` (end of text) becomes `\z`. `(?P<name>…)` and
//! `(?P=name)` are supported by fancy-regex as written.
//!
//! Limits are explicit: a pattern whose compiled program exceeds [`Pattern::SIZE_LIMIT`] is
//! [`PatternError::TooLarge`] (its own rule ids, `*.regex.too_large`), and a match that
//! exceeds the backtracking budget is [`PatternError::Runtime`].

use std::fmt;

/// A compiled package pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    re: fancy_regex::Regex,
}

/// Why a pattern cannot be compiled or run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternError {
    /// Not a valid (Python `re`-compatible) regular expression.
    Invalid(String),
    /// Valid, but its compiled form exceeds [`Pattern::SIZE_LIMIT`].
    TooLarge(String),
    /// Matching gave up (backtracking budget exhausted).
    Runtime(String),
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatternError::Invalid(m) | PatternError::Runtime(m) => f.write_str(m),
            PatternError::TooLarge(m) => write!(
                f,
                "the compiled pattern exceeds the {} byte size limit ({m})",
                Pattern::SIZE_LIMIT
            ),
        }
    }
}

impl std::error::Error for PatternError {}

impl Pattern {
    /// Compiled-size limit of the pattern's automaton, in bytes (1 MiB).
    pub const SIZE_LIMIT: usize = 1 << 20;
    /// Backtracking steps one match may take before it gives up.
    pub const BACKTRACK_LIMIT: usize = 1_000_000;

    /// Compiles a package pattern.
    pub fn compile(src: &str) -> Result<Pattern, PatternError> {
        let translated = translate(src);
        let mut builder = fancy_regex::RegexBuilder::new(&translated);
        builder
            .delegate_size_limit(Self::SIZE_LIMIT)
            .delegate_dfa_size_limit(Self::SIZE_LIMIT)
            .backtrack_limit(Self::BACKTRACK_LIMIT);
        builder.build().map(|re| Pattern { re }).map_err(|e| {
            let too_large = match &e {
                fancy_regex::Error::CompileError(c) => {
                    matches!(&**c, fancy_regex::CompileError::InnerError(b) if b.size_limit().is_some())
                }
                _ => false,
            };
            let msg = describe(&e);
            if too_large || msg.contains("size limit") {
                PatternError::TooLarge(msg)
            } else {
                PatternError::Invalid(msg)
            }
        })
    }

    /// True if the pattern matches somewhere in `text`.
    pub fn is_match(&self, text: &str) -> Result<bool, PatternError> {
        self.re.is_match(text).map_err(runtime)
    }

    /// The first match in `text`, if any.
    pub fn find<'t>(&self, text: &'t str) -> Result<Option<&'t str>, PatternError> {
        self.re
            .find(text)
            .map(|m| m.map(|m| m.as_str()))
            .map_err(runtime)
    }

    /// Every non-overlapping match in `text`.
    pub fn find_iter<'t>(&self, text: &'t str) -> Result<Vec<&'t str>, PatternError> {
        Ok(self.spans(text)?.into_iter().map(|(_, m)| m).collect())
    }

    /// Every non-overlapping match in `text` with its byte offset.
    pub fn spans<'t>(&self, text: &'t str) -> Result<Vec<(usize, &'t str)>, PatternError> {
        self.re
            .find_iter(text)
            .map(|m| m.map(|m| (m.start(), m.as_str())).map_err(runtime))
            .collect()
    }

    /// The pattern as written in the package.
    pub fn as_str(&self) -> &str {
        self.re.as_str()
    }
}

fn runtime(e: fancy_regex::Error) -> PatternError {
    PatternError::Runtime(describe(&e))
}

/// The error and its causes on one line (fancy-regex's own text omits the cause).
fn describe(e: &fancy_regex::Error) -> String {
    let mut out = one_line(&e.to_string());
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let line = one_line(&s.to_string());
        if !line.is_empty() && !out.contains(&line) {
            out = format!("{out}: {line}");
        }
        source = s.source();
    }
    out
}

/// The last non-empty line of a multi-line error (the line that says what is wrong).
fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("")
        .trim_start_matches("error: ")
        .to_string()
}

/// Rewrites Python-only syntax fancy-regex lacks: `\Z` (Python: end of text) → `\z`.
/// Escapes are followed pairwise, so `\\Z` (a literal backslash, then `Z`) is kept.
pub fn translate(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut chars = src.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('Z') => out.push_str("\\z"),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_lookaround_and_backreferences_compile_and_match() {
        let p = Pattern::compile(r"\d+(?= USD)").unwrap();
        assert_eq!(p.find("costs 42 USD").unwrap(), Some("42"));
        let p = Pattern::compile(r"(?<!\$)\b\d{3}\b").unwrap();
        assert!(p.is_match("code 404").unwrap());
        assert!(!p.is_match("$404").unwrap());
        let p = Pattern::compile(r"(?!.*TODO)^done").unwrap();
        assert!(!p.is_match("done TODO").unwrap());
        let p = Pattern::compile(r"\b(\w+) \1\b").unwrap();
        assert_eq!(p.find("the the end").unwrap(), Some("the the"));
        let p = Pattern::compile(r"(?P<word>\w+)-(?P=word)").unwrap();
        assert!(p.is_match("go-go").unwrap());
        assert!(!p.is_match("go-stop").unwrap());
        let p = Pattern::compile(r"end\Z").unwrap();
        assert!(p.is_match("the end").unwrap());
        assert!(!p.is_match("the end\nmore").unwrap());
        assert_eq!(
            Pattern::compile("a|b").unwrap().find_iter("xaxb").unwrap(),
            ["a", "b"]
        );
    }

    #[test]
    fn malformed_and_oversized_patterns_are_distinct_errors() {
        assert!(matches!(
            Pattern::compile("("),
            Err(PatternError::Invalid(_))
        ));
        assert!(matches!(
            Pattern::compile("[TBD"),
            Err(PatternError::Invalid(_))
        ));
        let huge = format!("(?:{}){{1000}}", r"\w{50}");
        match Pattern::compile(&huge) {
            Err(PatternError::TooLarge(m)) => assert!(!m.is_empty()),
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }

    #[test]
    fn translation_keeps_escaped_backslashes() {
        assert_eq!(translate(r"a\Z"), r"a\z");
        assert_eq!(translate(r"a\\Z"), r"a\\Z");
    }
}
