//! Budgets: loop-engine "Task Config Schema" `budget` (`maxIterations`, `maxToolCalls`,
//! `maxWallTimeMs`) and the guide's per-loop `iteration_budget` (guide "Phase iteration
//! loops": `max_wall_clock_seconds`, `max_tokens`, `max_tool_calls`). Time is read from the
//! injected clock, so a budget runs out at the same point in every deterministic run.

use serde::Serialize;

/// Limits; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Iterations (model turns or attempts, as the owner counts them).
    pub max_iterations: Option<u64>,
    /// Tool calls.
    pub max_tool_calls: Option<u64>,
    /// Wall time in ms.
    pub max_wall_time_ms: Option<u64>,
    /// Tokens.
    pub max_tokens: Option<u64>,
}

/// Why a loop stopped because of a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exhausted {
    /// `maxIterations`.
    Iterations,
    /// `maxToolCalls` / `max_tool_calls`.
    ToolCalls,
    /// `maxWallTimeMs` / `max_wall_clock_seconds`.
    WallTime,
    /// `max_tokens`.
    Tokens,
}

impl Exhausted {
    /// The stop reason's name in events.
    pub fn as_str(self) -> &'static str {
        match self {
            Exhausted::Iterations => "budget_iterations",
            Exhausted::ToolCalls => "budget_tool_calls",
            Exhausted::WallTime => "budget_wall_time",
            Exhausted::Tokens => "budget_tokens",
        }
    }
}

/// Usage against limits, started at a clock reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// The limits.
    pub limits: Limits,
    /// Clock reading at the start.
    pub started_ms: i64,
    /// Iterations used.
    pub iterations: u64,
    /// Tool calls used.
    pub tool_calls: u64,
    /// Tokens used.
    pub tokens: u64,
}

impl Budget {
    /// A fresh budget started at `now_ms`.
    pub fn new(limits: Limits, now_ms: i64) -> Self {
        Budget {
            limits,
            started_ms: now_ms,
            iterations: 0,
            tool_calls: 0,
            tokens: 0,
        }
    }

    /// Milliseconds elapsed at `now_ms`.
    pub fn elapsed_ms(&self, now_ms: i64) -> u64 {
        u64::try_from(now_ms.saturating_sub(self.started_ms)).unwrap_or(0)
    }

    /// The first exhausted limit at `now_ms`, if any (checked in a fixed order: iterations,
    /// tool calls, wall time, tokens). A limit is exhausted when usage has reached it.
    pub fn exhausted(&self, now_ms: i64) -> Option<Exhausted> {
        let l = &self.limits;
        if l.max_iterations.is_some_and(|m| self.iterations >= m) {
            Some(Exhausted::Iterations)
        } else if l.max_tool_calls.is_some_and(|m| self.tool_calls >= m) {
            Some(Exhausted::ToolCalls)
        } else if l
            .max_wall_time_ms
            .is_some_and(|m| self.elapsed_ms(now_ms) >= m)
        {
            Some(Exhausted::WallTime)
        } else if l.max_tokens.is_some_and(|m| self.tokens >= m) {
            Some(Exhausted::Tokens)
        } else {
            None
        }
    }

    /// Whether `n` more tool calls fit.
    pub fn tool_calls_fit(&self, n: u64) -> bool {
        self.limits
            .max_tool_calls
            .is_none_or(|m| self.tool_calls.saturating_add(n) <= m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn each_limit_stops() {
        let mut b = Budget::new(
            Limits {
                max_iterations: Some(2),
                max_tool_calls: Some(3),
                max_wall_time_ms: Some(100),
                max_tokens: Some(50),
            },
            1_000,
        );
        assert_eq!(b.exhausted(1_000), None);
        b.tokens = 50;
        assert_eq!(b.exhausted(1_000), Some(Exhausted::Tokens));
        assert_eq!(b.exhausted(1_100), Some(Exhausted::WallTime));
        b.tool_calls = 3;
        assert_eq!(b.exhausted(1_000), Some(Exhausted::ToolCalls));
        assert!(!b.tool_calls_fit(1));
        b.iterations = 2;
        assert_eq!(b.exhausted(1_000), Some(Exhausted::Iterations));
        assert_eq!(Budget::new(Limits::default(), 0).exhausted(i64::MAX), None);
    }

    proptest! {
        /// Any loop that charges at least one unit per step against a finite limit stops.
        #[test]
        fn charging_loops_always_stop(limit in 1u64..200, per in 1u64..10, which in 0usize..4) {
            let mut limits = Limits::default();
            match which {
                0 => limits.max_iterations = Some(limit),
                1 => limits.max_tool_calls = Some(limit),
                2 => limits.max_wall_time_ms = Some(limit),
                _ => limits.max_tokens = Some(limit),
            }
            let mut b = Budget::new(limits, 0);
            let mut now = 0i64;
            let mut steps = 0u64;
            while b.exhausted(now).is_none() {
                b.iterations += 1;
                b.tool_calls += per;
                b.tokens += per;
                now += per as i64;
                steps += 1;
                prop_assert!(steps <= limit, "no stop after {steps} steps");
            }
        }
    }
}
