//! The deterministic reference engine: applies the IMF (`IMF.md`) to the previous state, so
//! the loop runs, and is tested, with no LLM.

use super::{EngineError, EngineRequest, StateEngine};
use crate::env::BoxFuture;
use crate::imf;

/// Applies IMF directives exactly as `IMF.md` says; its output is canonical text.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReferenceEngine;

impl ReferenceEngine {
    /// The next block for `req`, synchronously.
    pub fn step(req: &EngineRequest) -> Result<crate::Block, EngineError> {
        let ds = imf::parse(&req.instr).map_err(|e| EngineError::Step(e.into()))?;
        imf::apply(&req.previous, &ds, &req.inputs).map_err(EngineError::Step)
    }
}

impl StateEngine for ReferenceEngine {
    fn name(&self) -> String {
        "reference".into()
    }

    fn next(&self, req: EngineRequest) -> BoxFuture<Result<String, EngineError>> {
        let out = Self::step(&req).map(|b| b.to_string());
        Box::pin(std::future::ready(out))
    }
}
