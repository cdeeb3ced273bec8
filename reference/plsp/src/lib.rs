//! # loom-plsp
//!
//! PLSP v0.5 (`specs/plsp-v0.5.md`): the `S{...}S` state-block syntax (§4) with a parser,
//! canonical serializer and state-rule validator (§5); a precise instruction micro-format
//! for `INSTR:` (§3, `IMF.md`); and the middleware loop (§2) over a [`engine::StateEngine`]
//! (a deterministic reference engine, or a chat-completions model) that executes `!` actions,
//! records `>` data and writes a per-cycle debug trace (§7).
//!
//! The grammar and every choice the spec leaves open are in `GRAMMAR.md`; the IMF in
//! `IMF.md`.

pub mod ast;
pub mod engine;
pub mod env;
pub mod error;
pub mod http;
pub mod imf;
pub mod middleware;
pub mod number;
pub mod parse;
pub mod replay;
pub mod scenario;
pub mod validate;

pub use ast::{Block, Ident, Literal, Stmt, Value};
pub use error::{ParseCode, ParseError};
pub use number::Number;
pub use parse::{extract, parse, parse_bytes};
pub use validate::{Limits, RuleCode, Violation, validate_block, validate_transition};

/// The fuzz body (`fuzz/fuzz_targets/plsp.rs`): parses arbitrary bytes as a block and, the
/// first line as an instruction; whatever parses must serialize, re-parse to the same value
/// and validate without panicking. Never panics on any input.
pub fn fuzz_parse(data: &[u8]) {
    if let Ok(block) = parse_bytes(data) {
        let text = block.to_string();
        let again = parse(&text).expect("canonical text re-parses");
        assert_eq!(again, block, "canonical text parses to the same block");
        let _ = validate_transition(&block, &block, &Limits::default());
        let _ = validate::resolved_state(&block);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let (instr, rest) = text.split_once('\n').unwrap_or((text, "S{}S"));
        if let Ok(ds) = imf::parse(instr) {
            let prev = parse(rest).unwrap_or_default();
            let _ = imf::apply(&prev, &ds, &imf::Inputs::new());
        }
        let _ = extract(text);
    }
}
