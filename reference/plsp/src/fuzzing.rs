//! Fuzz bodies (DESIGN.md §8, issue 19): library functions shared by the `cargo fuzz` targets
//! in `fuzz/` and by `cargo test`, which replays every committed corpus file through them
//! (the test at the end of this module). A panic is a broken property of the parser driven.
//!
//! | target | body | drives |
//! |---|---|---|
//! | `plsp` | [`state_block`] | `S{...}S` blocks: [`crate::parse`], the serializer, [`crate::validate`] |
//! | `plsp_imf` | [`instruction`] | the instruction micro-format: [`crate::imf::parse`], [`crate::imf::apply`] |

use crate::ast::{Block, Literal};
use crate::imf::{self, EngineErrorCode, Inputs};
use crate::parse::{extract, parse, parse_bytes};
use crate::validate::{self, Limits, validate_transition};

/// A fuzz body: takes any bytes, panics only on a broken property.
pub type Body = fn(&[u8]);

/// Every fuzz target whose body lives in this crate: `(target name, body)`; the name is the
/// `[[bin]]` of `fuzz/Cargo.toml` and the corpus directory `fuzz/corpus/<name>/`.
pub const TARGETS: &[(&str, Body)] = &[("plsp", state_block), ("plsp_imf", instruction)];

/// State blocks (PLSP v0.5 §4, `GRAMMAR.md`): whatever parses serializes to canonical text
/// that parses to the same block (parse∘print = id) and is its own canonical form; the state
/// rules (§5) and reference resolution answer without panicking; a block is found again by
/// [`extract`] inside surrounding text.
pub fn state_block(data: &[u8]) {
    if let Ok(block) = parse_bytes(data) {
        let text = block.to_string();
        let again = parse(&text).expect("canonical text re-parses");
        assert_eq!(again, block, "canonical text parses to the same block");
        assert_eq!(again.to_string(), text, "canonical text is a fixed point");
        let _ = validate_transition(&block, &block, &Limits::default());
        let _ = validate::validate_block(&block, &Limits::default());
        let _ = validate::resolved_state(&block);
        let framed = format!("model says:\n{text}\nthanks");
        let (found, range) = extract(&framed).expect("a canonical block is found in text");
        assert_eq!(found, block);
        assert_eq!(&framed[range], text);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = extract(text);
    }
}

/// The inputs `@fetch` can read in [`instruction`].
fn inputs() -> Inputs {
    let mut i = Inputs::new();
    for (name, lit) in [
        ("temp", Literal::string("21.5")),
        ("url", Literal::string("https://example.test/page")),
        ("tool.result", Literal::string("ok")),
    ] {
        if let Some(lit) = lit {
            i.insert(name.to_owned(), lit);
        }
    }
    i
}

/// The instruction micro-format (`IMF.md`). The first line is an `INSTR:` string, the rest a
/// previous block. Parsing never panics and an error's offset lies within the text; the
/// `INSTR:` prefix and surrounding whitespace do not change the directives; applying them to
/// the previous state either fails with an engine code (never `IMF_SYNTAX` for parsed
/// directives) or gives a block that keeps every previous variable in order (variables are
/// never removed, §5), serializes and parses back to itself, and is the same on a second run.
pub fn instruction(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (instr, rest) = text.split_once('\n').unwrap_or((text, "S{$n:1;}S"));
    let directives = match imf::parse(instr) {
        Ok(d) => d,
        Err(e) => {
            assert!(
                e.offset <= instr.len(),
                "offset {} beyond the text: {e}",
                e.offset
            );
            assert!(!e.expected.is_empty());
            return;
        }
    };
    if !instr.trim_start().starts_with("INSTR:") {
        let prefixed = format!(" INSTR: {instr}\t");
        assert_eq!(
            imf::parse(&prefixed).as_ref(),
            Ok(&directives),
            "the INSTR: prefix and whitespace change nothing"
        );
    }
    let previous = parse(rest).unwrap_or_else(|_| Block::default());
    let inputs = inputs();
    match imf::apply(&previous, &directives, &inputs) {
        Err(e) => {
            assert_ne!(e.code, EngineErrorCode::ImfSyntax, "{e}");
            assert!(!e.message.is_empty());
        }
        Ok(next) => {
            let before: Vec<_> = previous.vars().map(|(i, _)| i.clone()).collect();
            let after: Vec<_> = next.vars().map(|(i, _)| i.clone()).collect();
            assert!(
                after.starts_with(&before),
                "previous variables kept in order: {before:?} → {after:?}"
            );
            let printed = next.to_string();
            assert_eq!(parse(&printed).as_ref(), Ok(&next), "{printed}");
            assert_eq!(
                imf::apply(&previous, &directives, &inputs).as_ref(),
                Ok(&next),
                "apply is deterministic"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TARGETS;
    use std::path::Path;

    /// Replays `fuzz/corpus/<target>/` for every target of this crate; a missing or empty
    /// corpus fails (issue 19: every target has a committed seed corpus).
    #[test]
    fn every_plsp_target_replays_its_committed_corpus() {
        let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
        loom_protocol::fuzzing::replay_committed_corpora(&fuzz_dir, TARGETS);
    }
}
