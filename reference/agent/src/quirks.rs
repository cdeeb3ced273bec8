//! Deliberate defects of an agent (feature `quirks`, never in a release build): each breaks
//! one rule through the [`Rules`] seam, so the simulator's `agent-tasks` invariant is proved
//! able to catch it (`loom-sim run --scenario agents-on-two-nodes --agent-quirk NAME`).

use crate::core::Rules;

/// One defect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AgentQuirk {
    /// Runs work its delegation does not grant (no `process.run.<package>` scope, §13.2).
    ActBeyondScope,
    /// Runs a task's work again after it completed, and reports it completed again.
    CompleteTwice,
}

impl AgentQuirk {
    /// Every quirk.
    pub const ALL: [AgentQuirk; 2] = [AgentQuirk::ActBeyondScope, AgentQuirk::CompleteTwice];

    /// The quirk's name on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            AgentQuirk::ActBeyondScope => "act-beyond-scope",
            AgentQuirk::CompleteTwice => "complete-twice",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<AgentQuirk> {
        AgentQuirk::ALL.into_iter().find(|q| q.name() == s)
    }
}

/// The rules of a quirky agent.
#[derive(Debug, Clone, Copy)]
pub struct QuirkRules(pub AgentQuirk);

impl Rules for QuirkRules {
    fn work_allowed(&self, scopes: &[String], work_scope: &str) -> bool {
        self.0 == AgentQuirk::ActBeyondScope || crate::scope::allows(scopes, work_scope)
    }

    fn rerun_completed(&self) -> bool {
        self.0 == AgentQuirk::CompleteTwice
    }
}
