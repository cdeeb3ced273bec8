//! The spec's temperature monitor (§4.1, §4.5, §4.6) as a scenario: trace snapshots, the same
//! scenario twice gives the same bytes, replay accepts it and catches tampering, and `!wait`
//! runs on tokio time (paused here, simulated under turmoil).

use loom_plsp::engine::reference::ReferenceEngine;
use loom_plsp::env::{TokioClock, TokioSleeper};
use loom_plsp::middleware::actions::{ActionRegistry, RecordingNotifier};
use loom_plsp::middleware::sink::MemorySink;
use loom_plsp::middleware::{LoopConfig, Middleware, Schedule};
use loom_plsp::scenario::{self, Scenario};
use loom_plsp::{Block, Limits};
use loom_protocol::clock::Clock;
use loom_protocol::time::Timestamp;
use std::sync::Arc;

fn monitor() -> Scenario {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/temperature-monitor.json"
    ))
    .unwrap();
    Scenario::from_json(&text).unwrap()
}

#[tokio::test]
async fn temperature_monitor_trace_snapshot() {
    let out = scenario::run(&monitor(), Arc::new(ReferenceEngine)).await;
    let summary = out.result.as_ref().unwrap();
    assert_eq!(summary.cycles, 6);
    assert_eq!(
        out.pages,
        vec![
            ("op".to_owned(), "Temp high".to_owned()),
            ("op".to_owned(), "Temp high".to_owned())
        ]
    );
    insta::assert_snapshot!("temperature_monitor_trace", out.trace.join("\n"));
    insta::assert_snapshot!("temperature_monitor_data", out.data.join("\n"));
}

#[tokio::test]
async fn same_scenario_twice_gives_identical_traces() {
    let a = scenario::run(&monitor(), Arc::new(ReferenceEngine)).await;
    let b = scenario::run(&monitor(), Arc::new(ReferenceEngine)).await;
    assert_eq!(a.trace, b.trace);
    assert_eq!(a.data, b.data);
}

#[tokio::test]
async fn replay_accepts_the_trace_and_catches_tampering() {
    let out = scenario::run(&monitor(), Arc::new(ReferenceEngine)).await;
    let text = out.trace.join("\n");
    let r = loom_plsp::replay::replay(&text, &Limits::default());
    assert_eq!((r.cycles, r.problems.clone()), (6, vec![]));
    // A model that "forgot" $l: the next block drops a variable, and the chain breaks.
    let tampered = text.replace("$l:82;", "");
    assert_ne!(tampered, text);
    let r = loom_plsp::replay::replay(&tampered, &Limits::default());
    assert!(
        r.problems.iter().any(|p| p.contains("DROPPED_VARIABLE")),
        "{:?}",
        r.problems
    );
}

#[tokio::test]
async fn unknown_action_policy_from_the_scenario() {
    let mut s = monitor();
    s.instructions = vec!["@sig:!launch,1".into()];
    let out = scenario::run(&s, Arc::new(ReferenceEngine)).await;
    assert_eq!(
        out.result.unwrap_err(),
        "cycle 1: unknown action !launch (no handler; the unknown-action policy is `fail`)"
    );
}

struct Waits;
impl Schedule for Waits {
    fn instr(&mut self, cycle: u64, _: &Block) -> Option<String> {
        (cycle <= 3).then(|| "@set:$n=1;@sig:!wait,5000".to_owned())
    }
    fn inputs(&mut self, _: u64) -> loom_plsp::imf::Inputs {
        Default::default()
    }
}

#[tokio::test(start_paused = true)]
async fn wait_runs_on_tokio_time() {
    let clock = TokioClock::new(Timestamp::from_unix_ms(0));
    let sleeper = Arc::new(TokioSleeper);
    let actions = ActionRegistry::standard(
        sleeper.clone(),
        Arc::new(RecordingNotifier::default()),
        Arc::new(loom_plsp::http::ScriptedDial::default()),
    );
    let mw = Middleware::new(
        Arc::new(ReferenceEngine),
        actions,
        Arc::new(clock),
        sleeper,
        LoopConfig::default(),
    );
    let mut trace = MemorySink::default();
    let s = mw
        .run(
            &mut Waits,
            Block::default(),
            &mut trace,
            &mut loom_plsp::middleware::sink::NullSink,
        )
        .await
        .unwrap();
    assert_eq!(s.cycles, 3);
    // Three `!wait,5000` took 15 s of (paused, auto-advanced) tokio time and no real time.
    assert_eq!(clock.now().unix_ms(), 15_000);
    assert!(
        trace.lines()[3].contains(r#""at_ms":10000"#),
        "{}",
        trace.lines()[3]
    );
}
