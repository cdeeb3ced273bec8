//! A short text a package pattern matches: what derived replies write where the definition
//! requires a pattern to appear (an `artifact_regex` gate with `expect_match: true`, a regex
//! rule with `min_count`; guide "Phase iteration loops", "Verification rules").
//!
//! The pattern is parsed as the runner compiles it ([`crate::package::pattern`]: Python `re`
//! spelling translated, then fancy-regex) and walked: a literal as written, the first
//! alternative that yields text, each repetition its minimum count, a character class its
//! first member from a fixed list of candidates (letters, digits, space, punctuation), `.` an
//! `x`; anchors and look-arounds add nothing. The result is then checked with the compiled
//! pattern: a text it does not match (a look-around that excludes it, a backreference) is no
//! sample (`None`), never a guess.

use crate::package::pattern::{Pattern, translate};
use fancy_regex::Expr;

/// Deepest nesting walked; deeper patterns get no sample.
const MAX_DEPTH: usize = 64;
/// Longest sample built (bytes).
const MAX_LEN: usize = 4096;
/// Characters tried, in order, for a character class.
const CANDIDATES: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,:;!?#/()[]{}@%&*+=<>'\"|\\~^$`\t";

/// A text `pattern` matches (verified), or `None` when none can be built.
pub fn sample(pattern: &str) -> Option<String> {
    let tree = Expr::parse_tree(&translate(pattern)).ok()?;
    let mut out = String::new();
    walk(&tree.expr, &mut out, 0)?;
    let compiled = Pattern::compile(pattern).ok()?;
    matches!(compiled.is_match(&out), Ok(true)).then_some(out)
}

fn walk(e: &Expr, out: &mut String, depth: usize) -> Option<()> {
    if depth > MAX_DEPTH || out.len() > MAX_LEN {
        return None;
    }
    match e {
        Expr::Empty
        | Expr::Assertion(_)
        | Expr::LookAround(..)
        | Expr::KeepOut
        | Expr::ContinueFromPreviousMatchEnd => Some(()),
        Expr::Any { .. } => {
            out.push('x');
            Some(())
        }
        Expr::GeneralNewline { .. } => {
            out.push('\n');
            Some(())
        }
        Expr::Literal { val, .. } => {
            out.push_str(val);
            Some(())
        }
        Expr::Concat(items) => items.iter().try_for_each(|i| walk(i, out, depth + 1)),
        Expr::Alt(alternatives) => alternatives.iter().find_map(|a| {
            let mut tried = out.clone();
            walk(a, &mut tried, depth + 1).map(|()| *out = tried)
        }),
        Expr::Group(inner) => walk(inner, out, depth + 1),
        Expr::AtomicGroup(inner) => walk(inner, out, depth + 1),
        Expr::Repeat { child, lo, .. } => {
            if *lo > MAX_LEN {
                return None;
            }
            (0..*lo).try_for_each(|_| walk(child, out, depth + 1))
        }
        Expr::Delegate { inner, casei } => {
            let class = regex::RegexBuilder::new(&format!("^(?:{inner})$"))
                .case_insensitive(*casei)
                .build()
                .ok()?;
            let mut buf = [0u8; 4];
            let c = CANDIDATES
                .chars()
                .find(|c| class.is_match(c.encode_utf8(&mut buf)))?;
            out.push(c);
            Some(())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::sample;

    #[test]
    fn samples_match_their_patterns() {
        for (pattern, want) in [
            ("(?m)^## Sources", "## Sources"),
            ("(?m)^## (Added|Fixed)$", "## Added"),
            (
                "(?i)as-of date: \\d{4}-\\d{2}-\\d{2}",
                "as-of date: 0000-00-00",
            ),
            ("\\[TBD\\]|\\[TODO\\]", "[TBD]"),
            ("colou?r", "color"),
            ("a+b*[^x]", "aa"),
            ("(?P<word>ok)", "ok"),
        ] {
            assert_eq!(sample(pattern).as_deref(), Some(want), "{pattern}");
        }
    }

    /// A pattern whose walk does not match (a look-ahead that excludes it, a backreference)
    /// has no sample: derived replies then report the requirement as unmet.
    #[test]
    fn no_sample_is_guessed() {
        for pattern in [
            "a(?!b)b",
            "(a)\\1",
            "\\d(?<=x)",
            "(?m)^- (?!\\d{2}:\\d{2} UTC)x",
        ] {
            let got = sample(pattern);
            assert!(
                got.as_deref()
                    .is_none_or(|s| crate::package::pattern::Pattern::compile(pattern)
                        .unwrap()
                        .is_match(s)
                        .unwrap()),
                "{pattern}: {got:?}"
            );
        }
        assert_eq!(sample("a(?!b)b"), None);
        assert_eq!(sample("(a)\\1"), None);
    }
}
