//! Where Loom notation's extra tokens come from (issue 20, item 4).
//!
//! Counterfactual texts, never counted as a format: the strict encoding with the two pieces
//! of structural whitespace the syntax requires taken out — the indentation of nested lines
//! (SPEC.md rule 3: exactly 2 spaces per level) and the space between `key:` and a number
//! (rule 5: an entry's key ends at `: `). Neither text is valid Loom notation (the first loses
//! nesting, the second is read as a scalar line); they only measure how much of the gap to
//! compact JSON each rule accounts for, which no encoder choice within the syntax can remove.
//! Like every text of the benchmark, the real encodings are counted as
//! [`counted_text`] gives them (no final newline), and so are the counterfactuals.

use serde_json::Value;

use super::datasets::Dataset;
use super::format::{Format, counted_text};
use super::tokenizer::{self, Counts, Tokenizers};

/// Token sums of one dataset: the real encodings and the two counterfactuals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Dataset name.
    pub dataset: String,
    /// Compact JSON.
    pub compact: Counts,
    /// Loom notation, strict encoder.
    pub loom: Counts,
    /// Loom with every line's indentation removed.
    pub no_indent: Counts,
    /// Loom with the space after `key:` removed where the value is a number.
    pub no_number_space: Counts,
    /// Both removed.
    pub neither: Counts,
    /// Strings containing a line break (the only ones a block scalar, rule 10, could write).
    pub multiline_strings: usize,
}

fn multiline_strings(v: &Value) -> usize {
    match v {
        Value::String(s) => usize::from(s.contains('\n')),
        Value::Array(a) => a.iter().map(multiline_strings).sum(),
        Value::Object(o) => o.values().map(multiline_strings).sum(),
        _ => 0,
    }
}

/// `text` without leading spaces on any line.
pub fn strip_indentation(text: &str) -> String {
    text.lines()
        .map(|l| l.trim_start_matches(' '))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` with `key: 42` written `key:42` (also after a list dash: `- key: 42`).
pub fn strip_number_space(text: &str) -> String {
    text.lines()
        .map(|l| match l.rsplit_once(": ") {
            Some((key, value)) if is_number(value) => format!("{key}:{value}"),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Rule 6's number grammar.
fn is_number(s: &str) -> bool {
    serde_json::from_str::<Value>(s).is_ok_and(|v| v.is_number())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
}

/// The row of one dataset (documents that Loom cannot encode are skipped in every column).
pub fn row(dataset: &Dataset, tok: &Tokenizers) -> Row {
    let mut r = Row {
        dataset: dataset.name.clone(),
        compact: [0; tokenizer::N],
        loom: [0; tokenizer::N],
        no_indent: [0; tokenizer::N],
        no_number_space: [0; tokenizer::N],
        neither: [0; tokenizer::N],
        multiline_strings: 0,
    };
    for doc in &dataset.docs {
        let (Ok(loom), Ok(json)) = (
            counted_text(&Format::Loom, &doc.value),
            counted_text(&Format::JsonCompact, &doc.value),
        ) else {
            continue;
        };
        r.multiline_strings += multiline_strings(&doc.value);
        let flat = strip_indentation(&loom);
        tokenizer::add(&mut r.compact, &tok.count(&json));
        tokenizer::add(&mut r.loom, &tok.count(&loom));
        tokenizer::add(&mut r.no_indent, &tok.count(&flat));
        tokenizer::add(
            &mut r.no_number_space,
            &tok.count(&strip_number_space(&loom)),
        );
        tokenizer::add(&mut r.neither, &tok.count(&strip_number_space(&flat)));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counterfactuals_remove_only_what_they_name() {
        let loom = "a:\n  b: 1\n  c: x: 2\n  - d: -2.5e3\nn: 007\n";
        assert_eq!(
            strip_indentation(loom),
            "a:\nb: 1\nc: x: 2\n- d: -2.5e3\nn: 007"
        );
        assert_eq!(
            strip_number_space(loom),
            "a:\n  b:1\n  c: x:2\n  - d:-2.5e3\nn: 007"
        );
    }
}
