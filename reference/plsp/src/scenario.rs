//! Scenario files for `loom-plsp run --script`: an instruction schedule, simulated inputs and
//! HTTP answers, run on a manual clock so the same file always gives the same trace.
//!
//! ```json
//! {"name": "…", "seed": 7, "start_ms": 1744000000000, "initial": "S{}S",
//!  "instructions": ["INSTR: …", "INSTR: …"],      // cycle n uses entry n, the last one repeats
//!  "inputs": {"temp": [75, 82, 95]},              // cycle n's @fetch input is entry n
//!  "http": {"http://h/x": {"status": 200, "body": "42"}},
//!  "config": {"max_cycles": 6, "unknown_actions": "skip", …}}
//! ```

use crate::ast::{Block, Literal};
use crate::engine::StateEngine;
use crate::env::ManualSleeper;
use crate::http::{HttpResponse, ScriptedDial};
use crate::imf::Inputs;
use crate::middleware::actions::{ActionRegistry, RecordingNotifier};
use crate::middleware::sink::MemorySink;
use crate::middleware::{LoopConfig, LoopError, Middleware, RunSummary, Schedule};
use crate::number::Number;
use loom_protocol::clock::ManualClock;
use loom_protocol::time::Timestamp;
use serde::Deserialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A scripted HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpStub {
    /// Status code (default 200).
    #[serde(default = "ok")]
    pub status: u16,
    /// Body text.
    pub body: String,
}

fn ok() -> u16 {
    200
}

fn empty_block() -> String {
    "S{}S".into()
}

/// A scenario file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Its name (for traces).
    pub name: String,
    /// Seed of everything random (retry jitter).
    #[serde(default)]
    pub seed: u64,
    /// Clock start, Unix ms.
    #[serde(default)]
    pub start_ms: i64,
    /// The first previous block.
    #[serde(default = "empty_block")]
    pub initial: String,
    /// Instruction of cycle n = entry n (1-based); the last entry repeats.
    pub instructions: Vec<String>,
    /// Simulated inputs: cycle n gets entry n of each series (strings or numbers).
    #[serde(default)]
    pub inputs: BTreeMap<String, Vec<Json>>,
    /// Answers of `!fetch` URLs.
    #[serde(default)]
    pub http: BTreeMap<String, HttpStub>,
    /// Loop configuration (`max_cycles`, limits, retry, policies).
    #[serde(default)]
    pub config: LoopConfig,
}

/// A scenario problem found before running.
pub type ScenarioError = String;

/// A JSON input value as a PLSP literal.
pub fn json_literal(v: &Json) -> Result<Literal, ScenarioError> {
    match v {
        Json::String(s) => Literal::string(s).ok_or_else(|| format!("input {s:?} contains `\"`")),
        Json::Number(n) => Number::parse(&n.to_string())
            .map(Literal::Num)
            .ok_or_else(|| format!("input {n} is not a PLSP number (no exponents)")),
        other => Err(format!("input {other} must be a string or a number")),
    }
}

impl Scenario {
    /// Parses and checks a scenario file.
    pub fn from_json(text: &str) -> Result<Scenario, ScenarioError> {
        let s: Scenario = serde_json::from_str(text).map_err(|e| format!("scenario: {e}"))?;
        if s.instructions.is_empty() {
            return Err("scenario: `instructions` is empty".into());
        }
        crate::parse(&s.initial).map_err(|e| format!("scenario: initial block: {e}"))?;
        for (k, series) in &s.inputs {
            for v in series {
                json_literal(v).map_err(|e| format!("scenario: inputs.{k}: {e}"))?;
            }
        }
        Ok(s)
    }
}

/// A scenario as the loop's [`Schedule`]: cycle n gets instruction n (the last repeats) and
/// entry n of each input series.
#[derive(Debug)]
pub struct Script<'a>(pub &'a Scenario);

impl Schedule for Script<'_> {
    fn instr(&mut self, cycle: u64, _: &Block) -> Option<String> {
        let i = usize::try_from(cycle.saturating_sub(1)).unwrap_or(usize::MAX);
        self.0
            .instructions
            .get(i)
            .or(self.0.instructions.last())
            .cloned()
    }

    fn inputs(&mut self, cycle: u64) -> Inputs {
        let i = usize::try_from(cycle.saturating_sub(1)).unwrap_or(usize::MAX);
        self.0
            .inputs
            .iter()
            .filter_map(|(k, series)| Some((k.clone(), json_literal(series.get(i)?).ok()?)))
            .collect()
    }
}

/// Everything a scenario run produced.
#[derive(Debug, Clone)]
pub struct ScenarioRun {
    /// The trace, one JSON line per entry.
    pub trace: Vec<String>,
    /// The `>` data lines.
    pub data: Vec<String>,
    /// Pages sent, in order.
    pub pages: Vec<(String, String)>,
    /// How it ended.
    pub result: Result<RunSummary, String>,
}

/// Runs `scenario` against `engine` on a manual clock with scripted HTTP and a recording
/// notifier. Deterministic: the same scenario and engine give the same [`ScenarioRun`].
pub async fn run(scenario: &Scenario, engine: Arc<dyn StateEngine>) -> ScenarioRun {
    let clock = ManualClock::new(Timestamp::from_unix_ms(scenario.start_ms));
    let sleeper = Arc::new(ManualSleeper(clock.clone()));
    let notifier = RecordingNotifier::default();
    let dial = ScriptedDial {
        routes: scenario
            .http
            .iter()
            .map(|(u, s)| {
                (
                    u.clone(),
                    HttpResponse {
                        status: s.status,
                        body: s.body.clone().into_bytes(),
                    },
                )
            })
            .collect(),
    };
    let actions =
        ActionRegistry::standard(sleeper.clone(), Arc::new(notifier.clone()), Arc::new(dial));
    let config = LoopConfig {
        seed: scenario.seed,
        ..scenario.config
    };
    let mw = Middleware::new(engine, actions, Arc::new(clock), sleeper, config);
    let (mut trace, mut data) = (MemorySink::default(), MemorySink::default());
    let result = match crate::parse(&scenario.initial) {
        Ok(initial) => mw
            .run(&mut Script(scenario), initial, &mut trace, &mut data)
            .await
            .map_err(|e: LoopError| e.to_string()),
        Err(e) => Err(format!("initial block: {e}")),
    };
    ScenarioRun {
        trace: trace.lines(),
        data: data.lines(),
        pages: notifier.pages(),
        result,
    }
}
