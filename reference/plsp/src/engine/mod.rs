//! State engines (spec §2 step 2): whatever turns `INSTR:` plus the previous block into the
//! next block's text. [`reference::ReferenceEngine`] applies the IMF deterministically;
//! [`chat::ChatEngine`] asks an OpenAI-compatible chat-completions model.

pub mod chat;
pub mod reference;

use crate::ast::Block;
use crate::env::BoxFuture;
use crate::imf::{Inputs, StepError};
use std::fmt;

/// One cycle's request to an engine (spec §2 step 1).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineRequest {
    /// The cycle number, from 1.
    pub cycle: u64,
    /// The instruction string (`INSTR: …`).
    pub instr: String,
    /// The previous state block (`S{}S` on the first cycle).
    pub previous: Block,
    /// Data available to `@fetch` this cycle.
    pub inputs: Inputs,
    /// Why the previous attempt of this cycle was rejected, on a retry.
    pub retry_note: Option<String>,
}

/// Why an engine produced no text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineError {
    /// A deterministic engine refused the instruction; retrying cannot help.
    Step(StepError),
    /// The transport failed (connection, HTTP status); a retry may help.
    Transport(String),
    /// The backend answered something that is not a completion; a retry may help.
    BadResponse(String),
}

impl EngineError {
    /// True when trying again might succeed.
    pub fn retryable(&self) -> bool {
        !matches!(self, EngineError::Step(_))
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Step(e) => write!(f, "the instruction failed: {e}"),
            EngineError::Transport(e) => write!(f, "transport: {e}"),
            EngineError::BadResponse(e) => write!(f, "bad response: {e}"),
        }
    }
}

impl std::error::Error for EngineError {}

/// Produces the next block's text (spec §2 steps 2–3). The middleware parses and checks it.
#[cfg_attr(test, mockall::automock)]
pub trait StateEngine: Send + Sync + std::fmt::Debug {
    /// A short name for traces (`reference`, `chat:<model>`).
    fn name(&self) -> String;
    /// The raw output for `req`.
    fn next(&self, req: EngineRequest) -> BoxFuture<Result<String, EngineError>>;
}
