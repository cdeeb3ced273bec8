//! # loom-plsp
//!
//! PLSP v0.5 (`docs/specs/plsp-v0.5.md`): the `S{...}S` state-block syntax (§4) with a parser,
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
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
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
