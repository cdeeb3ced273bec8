//! The strict unified-diff applier behind `fs.applyPatch` (loop-engine "Tool Action Schema
//! (v1)"). Strict means: every hunk's old side (context and removed lines) must match the
//! file exactly at the line the header names, hunk line counts must agree with the header,
//! and hunks must be in order and not overlap. No fuzz, no offset search: a patch that does
//! not match is rejected, naming the hunk and line.
//!
//! Accepted input: optional `diff`/`index`/`---`/`+++` header lines, then hunks
//! `@@ -a[,b] +c[,d] @@` with lines starting ` `, `-`, `+`, and `\ No newline at end of file`
//! markers.
//!
//! Hostile headers never panic: ranges beyond [`MAX_LINE_NUMBER`] are rejected and every
//! position is computed with checked arithmetic.

/// One parsed hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hunk {
    old_start: usize,
    old_len: usize,
    new_len: usize,
    /// (tag, text) with tag ' ', '-' or '+'.
    lines: Vec<(char, String)>,
    header_line: usize,
}

/// Largest line number or count a hunk header may name (far beyond any file `fs.applyPatch`
/// reads; anything larger is a hostile or broken header).
pub const MAX_LINE_NUMBER: usize = 100_000_000;

fn parse_range(s: &str) -> Option<(usize, usize)> {
    let (a, b) = match s.split_once(',') {
        Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
        None => (s.parse().ok()?, 1),
    };
    (a <= MAX_LINE_NUMBER && b <= MAX_LINE_NUMBER).then_some((a, b))
}

fn parse(patch: &str) -> Result<(Vec<Hunk>, bool), String> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut no_newline_at_end = false;
    for (i, line) in patch.lines().enumerate() {
        let n = i + 1;
        if let Some(rest) = line.strip_prefix("@@ ") {
            let inner = rest
                .split_once(" @@")
                .map(|(a, _)| a)
                .ok_or_else(|| format!("patch line {n}: malformed hunk header {line:?}"))?;
            let mut parts = inner.split_whitespace();
            let (old, new) = match (parts.next(), parts.next(), parts.next()) {
                (Some(o), Some(nw), None) if o.starts_with('-') && nw.starts_with('+') => (o, nw),
                _ => return Err(format!("patch line {n}: malformed hunk header {line:?}")),
            };
            let (old_start, old_len) = parse_range(&old[1..]).ok_or_else(|| {
                format!("patch line {n}: bad old range {old:?} (numbers up to {MAX_LINE_NUMBER})")
            })?;
            let (_, new_len) = parse_range(&new[1..]).ok_or_else(|| {
                format!("patch line {n}: bad new range {new:?} (numbers up to {MAX_LINE_NUMBER})")
            })?;
            hunks.push(Hunk {
                old_start,
                old_len,
                new_len,
                lines: Vec::new(),
                header_line: n,
            });
            continue;
        }
        match hunks.last_mut() {
            None => {
                if line.starts_with("---")
                    || line.starts_with("+++")
                    || line.starts_with("diff ")
                    || line.starts_with("index ")
                {
                    continue;
                }
                return Err(format!(
                    "patch line {n}: expected a hunk header `@@ -a,b +c,d @@`, got {line:?}"
                ));
            }
            Some(h) => {
                if line.starts_with('\\') {
                    if h.lines.last().is_some_and(|(t, _)| *t != '-') {
                        no_newline_at_end = true;
                    }
                    continue;
                }
                let (tag, text) = match line.chars().next() {
                    Some(c @ (' ' | '-' | '+')) => (c, line[1..].to_owned()),
                    // Some tools drop the single space of an empty context line.
                    None => (' ', String::new()),
                    Some(_) => {
                        return Err(format!(
                            "patch line {n}: a hunk line must start with ' ', '-' or '+', got {line:?}"
                        ));
                    }
                };
                h.lines.push((tag, text));
            }
        }
    }
    if hunks.is_empty() {
        return Err("patch has no hunks".into());
    }
    for h in &hunks {
        let old = h.lines.iter().filter(|(t, _)| *t != '+').count();
        let new = h.lines.iter().filter(|(t, _)| *t != '-').count();
        if old != h.old_len || new != h.new_len {
            return Err(format!(
                "hunk at patch line {}: header says -{} +{} lines but the hunk has -{old} +{new}",
                h.header_line, h.old_len, h.new_len
            ));
        }
    }
    Ok((hunks, no_newline_at_end))
}

/// Applies `patch` to `original`, or says which hunk does not match.
pub fn apply(original: &str, patch: &str) -> Result<String, String> {
    let (hunks, no_newline_at_end) = parse(patch)?;
    let had_trailing_newline = original.ends_with('\n');
    let old_lines: Vec<&str> = if original.is_empty() {
        Vec::new()
    } else {
        original
            .strip_suffix('\n')
            .unwrap_or(original)
            .split('\n')
            .collect()
    };
    let mut out: Vec<String> = Vec::new();
    let mut cursor = 0usize; // next unconsumed old line (0-based)
    for h in &hunks {
        // For an empty old side, `old_start` is the line after which to insert.
        let start = if h.old_len == 0 {
            h.old_start
        } else {
            h.old_start.saturating_sub(1)
        };
        if h.old_len > 0 && h.old_start == 0 {
            return Err(format!(
                "hunk at patch line {}: old start 0 with a non-empty old side",
                h.header_line
            ));
        }
        if start < cursor {
            return Err(format!(
                "hunk at patch line {}: overlaps or is out of order",
                h.header_line
            ));
        }
        let end = start
            .checked_add(h.old_len)
            .filter(|e| *e <= old_lines.len())
            .ok_or_else(|| {
                format!(
                    "hunk at patch line {}: needs lines {}..{} but the file has {} lines",
                    h.header_line,
                    start.saturating_add(1),
                    start.saturating_add(h.old_len),
                    old_lines.len()
                )
            })?;
        out.extend(old_lines[cursor..start].iter().map(|s| (*s).to_owned()));
        let mut at = start;
        for (tag, text) in &h.lines {
            match tag {
                '+' => out.push(text.clone()),
                _ => {
                    // `parse` checked that the old side has `old_len` lines, so `at < end`.
                    let Some(found) = old_lines.get(at).filter(|_| at < end) else {
                        return Err(format!(
                            "hunk at patch line {}: runs past file line {end}",
                            h.header_line
                        ));
                    };
                    if *found != text {
                        return Err(format!(
                            "hunk at patch line {} does not match file line {}: expected {:?}, found {:?}",
                            h.header_line,
                            at + 1,
                            text,
                            found
                        ));
                    }
                    if *tag == ' ' {
                        out.push(text.clone());
                    }
                    at += 1;
                }
            }
        }
        cursor = at;
    }
    out.extend(old_lines[cursor..].iter().map(|s| (*s).to_owned()));
    let mut text = out.join("\n");
    let touches_end = hunks.last().is_some_and(|h| {
        let s = if h.old_len == 0 {
            h.old_start
        } else {
            h.old_start.saturating_sub(1)
        };
        s.checked_add(h.old_len) == Some(old_lines.len())
    });
    let trailing = if touches_end {
        !no_newline_at_end
    } else {
        had_trailing_newline
    };
    if trailing && !out.is_empty() {
        text.push('\n');
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "one\ntwo\nthree\nfour\nfive\n";

    #[test]
    fn applies_a_replacement_hunk() {
        let p = "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n two\n-three\n+THREE\n four\n";
        assert_eq!(apply(FILE, p).unwrap(), "one\ntwo\nTHREE\nfour\nfive\n");
    }

    #[test]
    fn applies_several_hunks_inserts_and_deletes() {
        let p = "@@ -1,1 +1,2 @@\n one\n+one-and-a-half\n@@ -5 +5,0 @@\n-five\n";
        assert_eq!(
            apply(FILE, p).unwrap(),
            "one\none-and-a-half\ntwo\nthree\nfour\n"
        );
        let p = "@@ -0,0 +1 @@\n+zero\n";
        assert_eq!(apply(FILE, p).unwrap(), "zero\n".to_owned() + FILE);
        assert_eq!(apply("", "@@ -0,0 +1,2 @@\n+a\n+b\n").unwrap(), "a\nb\n");
    }

    #[test]
    fn no_newline_marker_is_honoured() {
        let p = "@@ -5 +5 @@\n-five\n+FIVE\n\\ No newline at end of file\n";
        assert_eq!(apply(FILE, p).unwrap(), "one\ntwo\nthree\nfour\nFIVE");
    }

    #[test]
    fn rejects_mismatch_counts_order_and_garbage() {
        let cases = [
            ("@@ -2,1 +2,1 @@\n-TWO\n+2\n", "does not match file line 2"),
            ("@@ -2,2 +2,1 @@\n-two\n+2\n", "header says -2 +1"),
            (
                "@@ -4,1 +4,1 @@\n-four\n+4\n@@ -1,1 +1,1 @@\n-one\n+1\n",
                "out of order",
            ),
            ("@@ -9,1 +9,1 @@\n-x\n+y\n", "the file has 5 lines"),
            ("hello\n", "expected a hunk header"),
            ("", "no hunks"),
            ("@@ -1,1 +1,1 @@\n*one\n+1\n", "must start with"),
            ("@@ bogus @@\n", "malformed hunk header"),
            (
                "@@ -18446744073709551615,2 +1,2 @@\n-a\n-b\n+a\n+b\n",
                "bad old range",
            ),
            (
                "@@ -100000000,2 +1,2 @@\n-a\n-b\n+a\n+b\n",
                "the file has 5 lines",
            ),
            ("@@ -1,99999999999 +1 @@\n-one\n", "bad old range"),
            ("@@ -1 +1,18446744073709551616 @@\n-one\n", "bad new range"),
        ];
        for (p, want) in cases {
            let err = apply(FILE, p).unwrap_err();
            assert!(err.contains(want), "{p:?}: {err}");
        }
    }

    use proptest::prelude::*;

    /// Patch-like text: headers with arbitrary (often huge) numbers and hunk lines.
    fn patchish() -> impl Strategy<Value = String> {
        let header = (
            prop_oneof![any::<u64>(), u64::MAX - 4..=u64::MAX, 0u64..20],
            prop_oneof![
                Just(None),
                (0u64..4).prop_map(Some),
                any::<u64>().prop_map(Some)
            ],
            0u64..12,
            0u64..12,
        )
            .prop_map(|(a, b, c, d)| match b {
                Some(b) => format!("@@ -{a},{b} +{c},{d} @@"),
                None => format!("@@ -{} +{c},{d} @@", a % 12),
            });
        let line = prop_oneof![
            header,
            "[ +-][a-c]{0,3}",
            Just("\\ No newline at end of file".to_owned()),
            Just(String::new()),
            ".{0,12}",
        ];
        proptest::collection::vec(line, 0..12).prop_map(|ls| ls.join("\n"))
    }

    proptest! {
        /// `apply` returns `Ok` or `Err` for any patch and file text; it never panics.
        #[test]
        fn apply_never_panics(patch in patchish(), file in "([a-c]{0,3}\n){0,8}[a-c]{0,2}") {
            let _ = apply(&file, &patch);
        }

        #[test]
        fn apply_never_panics_on_any_text(patch in ".{0,200}", file in ".{0,100}") {
            let _ = apply(&file, &patch);
        }
    }
}
