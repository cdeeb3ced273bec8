//! The middleware loop (spec §2): each cycle sends `INSTR:` and the previous block to a
//! [`StateEngine`], parses and checks the answer (§4, §5) with retries, executes its `!`
//! actions, writes its `>` data to a JSONL sink, and writes one trace line (§7: INSTR,
//! previous S, next S, actions, logs).

pub mod actions;
pub mod sink;

use crate::ast::{Block, Literal, Value};
use crate::engine::{EngineError, EngineRequest, StateEngine};
use crate::env::Sleeper;
use crate::imf::Inputs;
use crate::validate::{Limits, validate_transition};
use actions::{ActionOutcome, ActionRegistry, ResolvedAction, UnknownActionPolicy};
use loom_protocol::clock::Clock;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use sink::Sink;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Retries of a cycle whose output is unparseable or incomplete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicy {
    /// Attempts per cycle, the first included (at least 1).
    pub max_attempts: u32,
    /// Base backoff before attempt n+1: `backoff_ms * n` plus seeded jitter below `backoff_ms`.
    pub backoff_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            backoff_ms: 200,
        }
    }
}

/// The loop's limits and policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoopConfig {
    /// Cycles to run at most.
    pub max_cycles: u64,
    /// State rules for each next block.
    pub limits: Limits,
    /// Raw engine output size limit, before parsing.
    pub max_output_bytes: usize,
    /// Time allowed for one engine call.
    pub engine_timeout_ms: u64,
    /// Time allowed for one action.
    pub action_timeout_ms: u64,
    /// Retries for unusable output.
    pub retry: RetryPolicy,
    /// Actions no handler knows.
    pub unknown_actions: UnknownActionPolicy,
    /// Accept a block surrounded by other text (GRAMMAR.md choice 12); off by default.
    pub lenient_extraction: bool,
    /// Seed of the backoff jitter.
    pub seed: u64,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            max_cycles: 100,
            limits: Limits::default(),
            max_output_bytes: 16 * 1024,
            engine_timeout_ms: 60_000,
            action_timeout_ms: 3_700_000,
            retry: RetryPolicy::default(),
            unknown_actions: UnknownActionPolicy::Fail,
            lenient_extraction: false,
            seed: 0,
        }
    }
}

/// Why the loop stopped early.
#[derive(Debug)]
pub enum LoopError {
    /// No usable block after every attempt.
    Output {
        /// The cycle.
        cycle: u64,
        /// Attempts made.
        attempts: u32,
        /// The last problem.
        last: String,
    },
    /// The engine failed in a way retrying cannot fix.
    Engine {
        /// The cycle.
        cycle: u64,
        /// The error.
        error: EngineError,
    },
    /// An action no handler knows, under [`UnknownActionPolicy::Fail`].
    UnknownAction {
        /// The cycle.
        cycle: u64,
        /// The action name.
        name: String,
    },
    /// Writing a sink failed.
    Sink(std::io::Error),
}

impl fmt::Display for LoopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoopError::Output {
                cycle,
                attempts,
                last,
            } => write!(
                f,
                "cycle {cycle}: no usable S{{...}}S block after {attempts} attempt(s); last problem: {last}"
            ),
            LoopError::Engine { cycle, error } => write!(f, "cycle {cycle}: {error}"),
            LoopError::UnknownAction { cycle, name } => write!(
                f,
                "cycle {cycle}: unknown action !{name} (no handler; the unknown-action policy is `fail`)"
            ),
            LoopError::Sink(e) => write!(f, "writing a sink: {e}"),
        }
    }
}

impl std::error::Error for LoopError {}

/// Supplies each cycle's instruction and inputs (a scenario, or a real controller).
pub trait Schedule: Send {
    /// The instruction of `cycle` given the current state, or `None` to stop.
    fn instr(&mut self, cycle: u64, state: &Block) -> Option<String>;
    /// The inputs of `cycle` (before `!fetch` results of the previous cycle are added).
    fn inputs(&mut self, cycle: u64) -> Inputs;
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// Cycles completed.
    pub cycles: u64,
    /// The last block.
    pub last: Block,
}

/// The loop with its environment.
#[derive(Debug)]
pub struct Middleware {
    engine: Arc<dyn StateEngine>,
    actions: ActionRegistry,
    clock: Arc<dyn Clock>,
    sleeper: Arc<dyn Sleeper>,
    config: LoopConfig,
}

fn resolve(block: &Block, v: &Value) -> Result<Literal, String> {
    match v {
        Value::Lit(l) => Ok(l.clone()),
        Value::Ref(r) => crate::validate::resolve(block, r)
            .cloned()
            .map_err(|c| format!("{r}: {}", c.as_str())),
    }
}

impl Middleware {
    /// A loop over `engine` with these handlers, clock (trace times) and sleeper (backoff).
    pub fn new(
        engine: Arc<dyn StateEngine>,
        actions: ActionRegistry,
        clock: Arc<dyn Clock>,
        sleeper: Arc<dyn Sleeper>,
        config: LoopConfig,
    ) -> Self {
        Middleware {
            engine,
            actions,
            clock,
            sleeper,
            config,
        }
    }

    /// Parses and checks one output against the previous block.
    pub fn check_output(&self, previous: &Block, out: &str) -> Result<Block, String> {
        if out.len() > self.config.max_output_bytes {
            return Err(format!(
                "OUTPUT_TOO_LARGE: {} bytes, over the limit of {}",
                out.len(),
                self.config.max_output_bytes
            ));
        }
        let block = if self.config.lenient_extraction {
            crate::parse::extract(out).map(|(b, _)| b)
        } else {
            crate::parse::parse(out)
        }
        .map_err(|e| e.to_string())?;
        let v = validate_transition(previous, &block, &self.config.limits);
        if let Some(first) = v.first() {
            let all: Vec<String> = v.iter().map(ToString::to_string).collect();
            let _ = first;
            return Err(format!("incomplete or invalid state: {}", all.join("; ")));
        }
        Ok(block)
    }

    /// Runs cycles until the schedule stops or `max_cycles`, starting from `initial`.
    pub async fn run(
        &self,
        schedule: &mut dyn Schedule,
        initial: Block,
        trace: &mut dyn Sink,
        data: &mut dyn Sink,
    ) -> Result<RunSummary, LoopError> {
        let mut rng = ChaCha20Rng::seed_from_u64(self.config.seed);
        let mut state = initial;
        let mut carried: Inputs = Inputs::new();
        let mut cycles = 0;
        trace
            .write(&json!({"type": "start", "engine": self.engine.name(), "at_ms": self.clock.now().unix_ms(), "initial": state.to_string(), "seed": self.config.seed}))
            .map_err(LoopError::Sink)?;
        for cycle in 1..=self.config.max_cycles {
            let Some(instr) = schedule.instr(cycle, &state) else {
                break;
            };
            let mut inputs = schedule.inputs(cycle);
            inputs.append(&mut carried);
            let at_ms = self.clock.now().unix_ms();
            let (next, attempts) = self
                .attempt(cycle, &instr, &state, &inputs, &mut rng)
                .await?;
            let mut actions = Vec::new();
            for (name, params) in next.actions() {
                let (entry, fetched) = self.act(cycle, &next, name, params).await?;
                actions.push(entry);
                if let Some((k, v)) = fetched {
                    carried.insert(k, v);
                }
            }
            let mut logs = Vec::new();
            for vals in next.logs() {
                let resolved: Vec<Json> = vals
                    .iter()
                    .map(|v| resolve(&next, v).map(|l| l.to_json()).unwrap_or(Json::Null))
                    .collect();
                data.write(&json!({"cycle": cycle, "at_ms": self.clock.now().unix_ms(), "values": resolved}))
                    .map_err(LoopError::Sink)?;
                logs.push(Json::from(resolved));
            }
            let inputs_json: serde_json::Map<String, Json> = inputs
                .iter()
                .map(|(k, v)| (k.clone(), Json::from(v.to_string())))
                .collect();
            trace
                .write(&json!({
                    "type": "cycle",
                    "cycle": cycle,
                    "at_ms": at_ms,
                    "instr": instr,
                    "inputs": inputs_json,
                    "previous": state.to_string(),
                    "attempts": attempts,
                    "next": next.to_string(),
                    "actions": actions,
                    "logs": logs,
                }))
                .map_err(LoopError::Sink)?;
            state = next;
            cycles = cycle;
        }
        trace
            .write(&json!({"type": "end", "cycles": cycles, "at_ms": self.clock.now().unix_ms(), "last": state.to_string()}))
            .map_err(LoopError::Sink)?;
        Ok(RunSummary {
            cycles,
            last: state,
        })
    }

    async fn attempt(
        &self,
        cycle: u64,
        instr: &str,
        state: &Block,
        inputs: &Inputs,
        rng: &mut ChaCha20Rng,
    ) -> Result<(Block, Vec<Json>), LoopError> {
        let max = self.config.retry.max_attempts.max(1);
        let mut log = Vec::new();
        let mut note: Option<String> = None;
        for n in 1..=max {
            if n > 1 {
                let base = self.config.retry.backoff_ms;
                let jitter = if base == 0 { 0 } else { rng.next_u64() % base };
                let wait = base.saturating_mul(u64::from(n - 1)).saturating_add(jitter);
                self.sleeper.sleep(wait).await;
            }
            let req = EngineRequest {
                cycle,
                instr: instr.to_owned(),
                previous: state.clone(),
                inputs: inputs.clone(),
                retry_note: note.clone(),
            };
            let limit = Duration::from_millis(self.config.engine_timeout_ms);
            let err: String = match tokio::time::timeout(limit, self.engine.next(req)).await {
                Err(_) => format!(
                    "ENGINE_TIMEOUT: no answer within {} ms",
                    self.config.engine_timeout_ms
                ),
                Ok(Err(e)) if !e.retryable() => return Err(LoopError::Engine { cycle, error: e }),
                Ok(Err(e)) => e.to_string(),
                Ok(Ok(text)) => match self.check_output(state, &text) {
                    Ok(b) => {
                        log.push(json!({"output": text, "error": null}));
                        return Ok((b, log));
                    }
                    Err(e) => {
                        log.push(json!({"output": text, "error": e}));
                        note = Some(e.clone());
                        continue;
                    }
                },
            };
            log.push(json!({"output": null, "error": err}));
            note = Some(err);
        }
        Err(LoopError::Output {
            cycle,
            attempts: max,
            last: note.unwrap_or_default(),
        })
    }

    async fn act(
        &self,
        cycle: u64,
        block: &Block,
        name: &str,
        params: &[Value],
    ) -> Result<(Json, Option<(String, Literal)>), LoopError> {
        let text = crate::ast::Stmt::Action(name.to_owned(), params.to_vec()).to_string();
        let resolved: Result<Vec<Literal>, String> =
            params.iter().map(|p| resolve(block, p)).collect();
        let Some(handler) = self.actions.get(name) else {
            return match self.config.unknown_actions {
                UnknownActionPolicy::Fail => Err(LoopError::UnknownAction {
                    cycle,
                    name: name.to_owned(),
                }),
                UnknownActionPolicy::Skip => Ok((
                    json!({"action": text, "outcome": "skipped", "detail": "no handler"}),
                    None,
                )),
            };
        };
        let params = match resolved {
            Ok(p) => p,
            Err(e) => {
                return Ok((
                    json!({"action": text, "outcome": "error", "detail": e}),
                    None,
                ));
            }
        };
        let limit = Duration::from_millis(self.config.action_timeout_ms);
        let fut = handler.run(ResolvedAction {
            name: name.to_owned(),
            params,
        });
        Ok(match tokio::time::timeout(limit, fut).await {
            Err(_) => (
                json!({"action": text, "outcome": "error", "detail": format!("timed out after {} ms", self.config.action_timeout_ms)}),
                None,
            ),
            Ok(Err(e)) => (
                json!({"action": text, "outcome": "error", "detail": e}),
                None,
            ),
            Ok(Ok(ActionOutcome::Done(d))) => {
                (json!({"action": text, "outcome": "ok", "detail": d}), None)
            }
            Ok(Ok(ActionOutcome::Data { source, value })) => (
                json!({"action": text, "outcome": "ok", "detail": format!("{source} = {value}")}),
                Some((source, value)),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::MockStateEngine;
    use crate::env::ManualSleeper;
    use loom_protocol::clock::ManualClock;
    use loom_protocol::time::Timestamp;
    use sink::MemorySink;

    struct Fixed(Vec<&'static str>);
    impl Schedule for Fixed {
        fn instr(&mut self, cycle: u64, _: &Block) -> Option<String> {
            self.0
                .get(usize::try_from(cycle).ok()? - 1)
                .map(|s| (*s).to_owned())
        }
        fn inputs(&mut self, _: u64) -> Inputs {
            Inputs::new()
        }
    }

    fn mw(engine: MockStateEngine, config: LoopConfig) -> (Middleware, ManualClock) {
        let clock = ManualClock::new(Timestamp::from_unix_ms(0));
        let m = Middleware::new(
            Arc::new(engine),
            ActionRegistry::new(),
            Arc::new(clock.clone()),
            Arc::new(ManualSleeper(clock.clone())),
            config,
        );
        (m, clock)
    }

    #[tokio::test]
    async fn retries_garbage_then_accepts() {
        let mut e = MockStateEngine::new();
        e.expect_name().return_const("mock".to_owned());
        let mut n = 0;
        e.expect_next().times(3).returning(move |req| {
            n += 1;
            let out = match n {
                1 => "sure, here you go".to_owned(),
                2 => {
                    assert!(
                        req.retry_note
                            .as_deref()
                            .unwrap()
                            .starts_with("EXPECTED_BLOCK_START")
                    );
                    "S{$b:1;}S".to_owned() // drops $a
                }
                _ => "S{$a:1;$b:1;}S".to_owned(),
            };
            Box::pin(async move { Ok(out) })
        });
        let (m, clock) = mw(
            e,
            LoopConfig {
                retry: RetryPolicy {
                    max_attempts: 3,
                    backoff_ms: 100,
                },
                ..LoopConfig::default()
            },
        );
        let mut t = MemorySink::default();
        let s = m
            .run(
                &mut Fixed(vec!["@set:$b=1"]),
                crate::parse("S{$a:1;}S").unwrap(),
                &mut t,
                &mut sink::NullSink,
            )
            .await
            .unwrap();
        assert_eq!(s.last.to_string(), "S{$a:1;$b:1;}S");
        assert!(t.lines()[1].contains("DROPPED_VARIABLE"));
        assert!(
            clock.now().unix_ms() >= 300,
            "backoff went through the sleeper"
        );
    }

    #[tokio::test]
    async fn gives_up_with_a_clear_error() {
        let mut e = MockStateEngine::new();
        e.expect_name().return_const("mock".to_owned());
        e.expect_next()
            .times(2)
            .returning(|_| Box::pin(async { Ok("S{$a:1".to_owned()) }));
        let (m, _) = mw(
            e,
            LoopConfig {
                retry: RetryPolicy {
                    max_attempts: 2,
                    backoff_ms: 0,
                },
                ..LoopConfig::default()
            },
        );
        let err = m
            .run(
                &mut Fixed(vec!["x"]),
                Block::default(),
                &mut sink::NullSink,
                &mut sink::NullSink,
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "cycle 1: no usable S{...}S block after 2 attempt(s); last problem: UNTERMINATED_BLOCK at byte 6: expected `;` or `}S`, found end of input"
        );
    }

    #[tokio::test]
    async fn unknown_actions_follow_the_policy() {
        for (policy, ok) in [
            (UnknownActionPolicy::Fail, false),
            (UnknownActionPolicy::Skip, true),
        ] {
            let mut e = MockStateEngine::new();
            e.expect_name().return_const("mock".to_owned());
            e.expect_next()
                .returning(|_| Box::pin(async { Ok("S{!launch,1;}S".to_owned()) }));
            let (m, _) = mw(
                e,
                LoopConfig {
                    unknown_actions: policy,
                    ..LoopConfig::default()
                },
            );
            let r = m
                .run(
                    &mut Fixed(vec!["x"]),
                    Block::default(),
                    &mut sink::NullSink,
                    &mut sink::NullSink,
                )
                .await;
            assert_eq!(r.is_ok(), ok, "{policy:?}");
        }
    }

    #[tokio::test]
    async fn step_errors_are_not_retried() {
        let mut e = MockStateEngine::new();
        e.expect_name().return_const("mock".to_owned());
        e.expect_next().times(1).returning(|_| {
            Box::pin(async {
                Err(EngineError::Step(crate::imf::StepError {
                    code: crate::imf::EngineErrorCode::TypeMismatch,
                    message: "x".into(),
                }))
            })
        });
        let (m, _) = mw(e, LoopConfig::default());
        let r = m
            .run(
                &mut Fixed(vec!["x"]),
                Block::default(),
                &mut sink::NullSink,
                &mut sink::NullSink,
            )
            .await;
        assert!(matches!(r, Err(LoopError::Engine { cycle: 1, .. })));
    }
}
