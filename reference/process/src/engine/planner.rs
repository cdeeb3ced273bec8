//! The planner seam (guide "Replanning", "Planner examples"; "Phase iteration loops":
//! `replan_on_exhaustion`, `max_replans_after_exhaustion`): when a phase's iteration loop is
//! exhausted, the runner asks a [`Planner`] for a revised step. The scripted backend answers
//! from its `planner:` section in tests; for real runs [`ModelPlanner`] asks the model
//! backend (`Purpose::Replan`).

use super::model::{Model, ModelError, ModelRequest, Purpose, Replan};
use std::sync::Arc;

/// A planner's answer: the revised step (or `None`: declined), why, and its token usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannerAnswer {
    /// The revised step; `None` when the planner declines to replan.
    pub replan: Option<Replan>,
    /// The planner's message (a decline says why).
    pub message: String,
    /// Tokens spent.
    pub tokens: u64,
}

/// Decides how to adapt a step after its loop is exhausted.
pub trait Planner: Send + Sync + std::fmt::Debug {
    /// A short name for events.
    fn name(&self) -> String;
    /// The answer to `req` (purpose [`Purpose::Replan`]).
    fn replan(&self, req: &ModelRequest) -> Result<PlannerAnswer, ModelError>;
}

/// The model backend as planner: the scripted model answers from its `planner:` section, a
/// chat model from the replanning prompt.
#[derive(Debug, Clone)]
pub struct ModelPlanner(pub Arc<dyn Model>);

impl Planner for ModelPlanner {
    fn name(&self) -> String {
        self.0.name()
    }

    fn replan(&self, req: &ModelRequest) -> Result<PlannerAnswer, ModelError> {
        if !matches!(req.purpose, Purpose::Replan(_)) {
            return Err(ModelError(
                "a planner request must have purpose Replan".into(),
            ));
        }
        let reply = self.0.reply(req)?;
        Ok(PlannerAnswer {
            replan: reply.replan,
            message: reply.message,
            tokens: reply.tokens.total(),
        })
    }
}
