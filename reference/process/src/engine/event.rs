//! loop-engine "Event Schema": `{id, runId, ts, seq, type, payload}` and the JSONL log.
//!
//! Choices the schema leaves open (documented in the README, section "Running"):
//! - `seq` is **1-based** and gapless within a run: the first event has `seq: 1`.
//! - `id` and `runId` are UUID-formatted (version 4 layout) strings drawn from a ChaCha20 RNG
//!   seeded by the run's seed; the run id is the first draw. Same seed, same ids.
//! - `ts` is Unix milliseconds from the injected [`Clock`].
//! - Phases of one wave run concurrently, each drafting its events into its own log
//!   ([`EventLog::draft`]: the run's id, ids from a stream seeded by (run seed, phase id),
//!   `ts` from the phase's clock fork); after the wave the drafts are appended in phase-id
//!   order ([`EventLog::append_drafted`]), which renumbers `seq`. So ids and `ts` depend on
//!   the phase's own work only, never on thread timing.

use super::clock::Clock;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The recommended event types of loop-engine "Event Schema", serialized by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EventType {
    /// A run, phase or attempt changed state.
    StateChanged,
    /// A message from the user (the goal).
    UserMessage,
    /// A complete message from the agent (model).
    AgentMessage,
    /// A streamed fragment of an agent message.
    AgentMessageChunk,
    /// The end of a streamed agent message.
    AgentMessageDone,
    /// The agent proposed a tool action.
    AgentActionProposed,
    /// A tool call began.
    ToolCallStarted,
    /// A streamed fragment of tool output.
    ToolCallChunk,
    /// A tool call ended.
    ToolCallFinished,
    /// The observation a tool call produced.
    Observation,
    /// The plan changed.
    PlanUpdated,
    /// The task (run) changed: progress, budgets, final status.
    TaskUpdated,
    /// A judge, gate or verification rule gave a verdict.
    JudgeResult,
    /// Something went wrong.
    Error,
}

impl EventType {
    /// The type's name as it appears in JSON.
    pub fn name(self) -> &'static str {
        match self {
            EventType::StateChanged => "StateChanged",
            EventType::UserMessage => "UserMessage",
            EventType::AgentMessage => "AgentMessage",
            EventType::AgentMessageChunk => "AgentMessageChunk",
            EventType::AgentMessageDone => "AgentMessageDone",
            EventType::AgentActionProposed => "AgentActionProposed",
            EventType::ToolCallStarted => "ToolCallStarted",
            EventType::ToolCallChunk => "ToolCallChunk",
            EventType::ToolCallFinished => "ToolCallFinished",
            EventType::Observation => "Observation",
            EventType::PlanUpdated => "PlanUpdated",
            EventType::TaskUpdated => "TaskUpdated",
            EventType::JudgeResult => "JudgeResult",
            EventType::Error => "Error",
        }
    }
}

/// One event, exactly the keys of loop-engine "Event Schema" (unknown keys are rejected on
/// reading so a misspelt trace is noticed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Event {
    /// Event id (UUID-formatted).
    pub id: String,
    /// The run this event belongs to (UUID-formatted).
    pub run_id: String,
    /// Unix milliseconds from the injected clock.
    pub ts: i64,
    /// 1-based position in the run.
    pub seq: u64,
    /// The event type.
    #[serde(rename = "type")]
    pub kind: EventType,
    /// Type-specific payload (always a JSON object).
    pub payload: Json,
}

/// Formats 16 random bytes as a version-4-layout UUID string.
pub fn uuid_from_bytes(mut b: [u8; 16]) -> String {
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A seeded UUID source (DESIGN.md §3: ids from a seeded RNG).
#[derive(Debug, Clone)]
pub struct IdSource(ChaCha20Rng);

impl IdSource {
    /// Ids drawn from ChaCha20 seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        IdSource(ChaCha20Rng::seed_from_u64(seed))
    }

    /// Ids of one phase's stream: ChaCha20 seeded with SHA-256(`seed` little-endian ‖
    /// `phase`), so concurrent phases draw ids independently of each other's progress.
    pub fn for_phase(seed: u64, phase: &str) -> Self {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(seed.to_le_bytes());
        h.update(phase.as_bytes());
        IdSource(ChaCha20Rng::from_seed(h.finalize().into()))
    }

    /// The next UUID-formatted id.
    pub fn next_uuid(&mut self) -> String {
        let mut b = [0u8; 16];
        self.0.fill_bytes(&mut b);
        uuid_from_bytes(b)
    }
}

/// The append-only event log of one run: assigns `id`, `seq` and `ts`, and optionally streams
/// each event as one JSON line to a sink as it is emitted.
pub struct EventLog {
    run_id: String,
    ids: IdSource,
    clock: Arc<dyn Clock>,
    events: Vec<Event>,
    sink: Option<Box<dyn std::io::Write + Send>>,
    sink_error: Option<String>,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLog")
            .field("run_id", &self.run_id)
            .field("events", &self.events.len())
            .finish_non_exhaustive()
    }
}

impl EventLog {
    /// A log whose run id and event ids come from `seed`, timestamps from `clock`.
    pub fn new(seed: u64, clock: Arc<dyn Clock>) -> Self {
        let mut ids = IdSource::new(seed);
        let run_id = ids.next_uuid();
        EventLog {
            run_id,
            ids,
            clock,
            events: Vec::new(),
            sink: None,
            sink_error: None,
        }
    }

    /// Also writes every event, as a JSON line, to `sink` when it is emitted.
    pub fn with_sink(mut self, sink: Box<dyn std::io::Write + Send>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// A draft log for one concurrently running phase: the same run id, event ids from
    /// [`IdSource::for_phase`]`(seed, phase)`, timestamps from `clock` (the phase's fork), no
    /// sink. Its events reach the run through [`EventLog::append_drafted`].
    pub fn draft(&self, seed: u64, phase: &str, clock: Arc<dyn Clock>) -> Self {
        EventLog {
            run_id: self.run_id.clone(),
            ids: IdSource::for_phase(seed, phase),
            clock,
            events: Vec::new(),
            sink: None,
            sink_error: None,
        }
    }

    /// Appends an event of type `kind`; `payload` should be a JSON object.
    pub fn emit(&mut self, kind: EventType, payload: Json) -> &Event {
        let event = Event {
            id: self.ids.next_uuid(),
            run_id: self.run_id.clone(),
            ts: self.clock.now_ms(),
            seq: 0,
            kind,
            payload,
        };
        self.push(event)
    }

    /// Appends an event drafted by a phase log ([`EventLog::draft`]), keeping its `id` and
    /// `ts` and giving it the next `seq` of this log.
    pub fn append_drafted(&mut self, event: Event) -> &Event {
        self.push(event)
    }

    /// The drafted events, for merging.
    pub fn into_events(self) -> Vec<Event> {
        self.events
    }

    fn push(&mut self, mut event: Event) -> &Event {
        event.seq = self.events.len() as u64 + 1;
        event.run_id.clone_from(&self.run_id);
        if let Some(sink) = self.sink.as_mut() {
            let line = format!("{}\n", serde_json::to_string(&event).unwrap_or_default());
            if let Err(e) = sink.write_all(line.as_bytes()).and_then(|()| sink.flush()) {
                self.sink_error.get_or_insert(e.to_string());
            }
        }
        self.events.push(event);
        self.events.last().expect("just pushed")
    }

    /// The events so far.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The first error writing to the sink, if any.
    pub fn sink_error(&self) -> Option<&str> {
        self.sink_error.as_deref()
    }

    /// All events as JSONL (one compact JSON object per line, `\n`-terminated).
    pub fn to_jsonl(&self) -> String {
        to_jsonl(&self.events)
    }
}

/// Events as JSONL.
pub fn to_jsonl(events: &[Event]) -> String {
    let mut out = String::new();
    for e in events {
        out.push_str(&serde_json::to_string(e).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// A JSONL trace that does not parse: which line, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}: {} (loop-engine \"Event Schema\")",
            self.line, self.message
        )
    }
}

impl std::error::Error for TraceError {}

/// Reads a JSONL trace; blank lines are skipped. Checks that `seq` is 1-based and gapless
/// and that every event has the same `runId` (the log's own guarantees).
pub fn read_jsonl(text: &str) -> Result<Vec<Event>, TraceError> {
    let mut events: Vec<Event> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let line_no = i + 1;
        let e: Event = serde_json::from_str(line).map_err(|err| TraceError {
            line: line_no,
            message: err.to_string(),
        })?;
        let expected = events.len() as u64 + 1;
        if e.seq != expected {
            return Err(TraceError {
                line: line_no,
                message: format!("seq is {}, expected {expected}", e.seq),
            });
        }
        if let Some(first) = events.first()
            && first.run_id != e.run_id
        {
            return Err(TraceError {
                line: line_no,
                message: format!(
                    "runId {} differs from the first event's {}",
                    e.run_id, first.run_id
                ),
            });
        }
        events.push(e);
    }
    Ok(events)
}

/// What `loom-process events TRACE` prints: counts by type, phase outcomes, verdicts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceSummary {
    /// The run id (empty for an empty trace).
    pub run_id: String,
    /// Number of events.
    pub events: usize,
    /// Milliseconds between the first and last event.
    pub duration_ms: i64,
    /// Event count per type name.
    pub counts: BTreeMap<String, usize>,
    /// Last state per phase, from `StateChanged` events with `scope: "phase"`.
    pub phases: BTreeMap<String, String>,
    /// Every `JudgeResult`: `phase#attempt kind:name status`.
    pub verdicts: Vec<String>,
    /// Every `Error` event's message.
    pub errors: Vec<String>,
    /// The run's final status (the last `TaskUpdated` with a `status`).
    pub outcome: Option<String>,
    /// For a run that did not complete, the failure everything else followed from
    /// ([`first_cause`]).
    pub first_cause: Option<String>,
}

fn field<'a>(payload: &'a Json, key: &str) -> &'a str {
    payload.get(key).and_then(Json::as_str).unwrap_or("")
}

/// Summarizes a trace.
pub fn summarize(events: &[Event]) -> TraceSummary {
    let mut s = TraceSummary {
        run_id: events.first().map(|e| e.run_id.clone()).unwrap_or_default(),
        events: events.len(),
        duration_ms: match (events.first(), events.last()) {
            (Some(a), Some(b)) => b.ts - a.ts,
            _ => 0,
        },
        counts: BTreeMap::new(),
        phases: BTreeMap::new(),
        verdicts: Vec::new(),
        errors: Vec::new(),
        outcome: None,
        first_cause: None,
    };
    for e in events {
        *s.counts.entry(e.kind.name().to_owned()).or_default() += 1;
        let p = &e.payload;
        match e.kind {
            EventType::StateChanged if field(p, "scope") == "phase" => {
                s.phases
                    .insert(field(p, "phase").to_owned(), field(p, "to").to_owned());
            }
            EventType::JudgeResult => {
                let attempt = p.get("attempt").and_then(Json::as_u64).unwrap_or(0);
                s.verdicts.push(format!(
                    "{}#{attempt} {}:{} {}",
                    field(p, "phase"),
                    field(p, "kind"),
                    field(p, "name"),
                    field(p, "status")
                ));
            }
            EventType::Error => s.errors.push(field(p, "message").to_owned()),
            EventType::TaskUpdated if !field(p, "status").is_empty() => {
                s.outcome = Some(field(p, "status").to_owned());
            }
            _ => {}
        }
    }
    if s.outcome.as_deref() != Some("completed") {
        s.first_cause = first_cause(events);
    }
    s
}

/// The first failure of a run, in event order, that the run's failure follows from: a
/// run-level error or failed auth check (no phase), else the first blocking `JudgeResult`
/// that failed (or errored) or the first `Error` of a phase that ended `failed`, else the
/// run's `stopReason`. A check an earlier attempt failed and a retry repaired belongs to a
/// phase that completed, so it is not a cause; a retry's own error (a script that has no
/// turns for attempt 2, a budget) follows the failure that caused the retry, so it comes
/// later. `phase#attempt kind:name status: first reason (+N more)` or `phase#attempt code:
/// message`.
pub fn first_cause(events: &[Event]) -> Option<String> {
    let mut final_state: BTreeMap<&str, &str> = BTreeMap::new();
    let mut stop_reason = None;
    for e in events {
        let p = &e.payload;
        match e.kind {
            EventType::StateChanged if field(p, "scope") == "phase" => {
                final_state.insert(field(p, "phase"), field(p, "to"));
            }
            EventType::TaskUpdated if !field(p, "status").is_empty() => {
                stop_reason = p.get("stopReason").and_then(Json::as_str);
            }
            _ => {}
        }
    }
    let failed = |phase: &str| final_state.get(phase) == Some(&"failed");
    let at = |p: &Json| {
        let attempt = p.get("attempt").and_then(Json::as_u64);
        match (field(p, "phase"), attempt) {
            ("", _) => String::new(),
            (ph, Some(a)) => format!("{ph}#{a} "),
            (ph, None) => format!("{ph} "),
        }
    };
    events
        .iter()
        .find_map(|e| {
            let p = &e.payload;
            let phase = field(p, "phase");
            match e.kind {
                EventType::Error if phase.is_empty() || failed(phase) => Some(format!(
                    "{}{}: {}",
                    at(p),
                    field(p, "code"),
                    field(p, "message")
                )),
                EventType::JudgeResult
                    if (phase.is_empty() || failed(phase))
                        && p.get("blocking").and_then(Json::as_bool) == Some(true)
                        && matches!(field(p, "status"), "fail" | "error") =>
                {
                    let reasons: Vec<&str> = p
                        .get("reasons")
                        .and_then(Json::as_array)
                        .map(|r| r.iter().filter_map(Json::as_str).collect())
                        .unwrap_or_default();
                    let more = match reasons.len() {
                        0 | 1 => String::new(),
                        n => format!(" (+{} more)", n - 1),
                    };
                    Some(format!(
                        "{}{}:{} {}: {}{more}",
                        at(p),
                        field(p, "kind"),
                        field(p, "name"),
                        field(p, "status"),
                        reasons.first().copied().unwrap_or("no reason given")
                    ))
                }
                _ => None,
            }
        })
        .or_else(|| stop_reason.map(str::to_owned))
}

impl std::fmt::Display for TraceSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "run {}: {} events over {} ms",
            self.run_id, self.events, self.duration_ms
        )?;
        if let Some(cause) = &self.first_cause {
            writeln!(f, "first cause: {cause}")?;
        }
        writeln!(f, "events by type:")?;
        for (k, n) in &self.counts {
            writeln!(f, "  {k:<20} {n}")?;
        }
        if !self.phases.is_empty() {
            writeln!(f, "phases:")?;
            for (k, v) in &self.phases {
                writeln!(f, "  {k:<20} {v}")?;
            }
        }
        if !self.verdicts.is_empty() {
            writeln!(f, "verdicts:")?;
            for v in &self.verdicts {
                writeln!(f, "  {v}")?;
            }
        }
        if !self.errors.is_empty() {
            writeln!(f, "errors:")?;
            for v in &self.errors {
                writeln!(f, "  {v}")?;
            }
        }
        writeln!(
            f,
            "outcome: {}",
            self.outcome.as_deref().unwrap_or("(no final TaskUpdated)")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::clock::ManualClock;
    use serde_json::json;

    fn log(seed: u64) -> EventLog {
        EventLog::new(seed, Arc::new(ManualClock::ticking(1_710_000_000_000, 1)))
    }

    fn judge(
        l: &mut EventLog,
        phase: &str,
        attempt: u32,
        name: &str,
        blocking: bool,
        status: &str,
    ) {
        l.emit(
            EventType::JudgeResult,
            json!({"phase": phase, "attempt": attempt, "kind": "gate", "name": name,
                   "blocking": blocking, "status": status, "reasons": [format!("{name} said {status}"), "second"]}),
        );
    }

    fn phase_end(l: &mut EventLog, phase: &str, to: &str) {
        l.emit(
            EventType::StateChanged,
            json!({"scope": "phase", "phase": phase, "from": "running", "to": to}),
        );
    }

    fn finish(l: &mut EventLog, status: &str, stop: Option<&str>) -> Vec<Event> {
        l.emit(
            EventType::TaskUpdated,
            json!({"status": status, "stopReason": stop}),
        );
        l.events().to_vec()
    }

    /// The first cause is the first blocking failure of a phase that ended failed: not an
    /// earlier failure a retry repaired, not a non-blocking one, not the retry's own error.
    #[test]
    fn the_first_cause_is_the_failure_the_run_follows_from() {
        let mut l = log(3);
        judge(&mut l, "a", 1, "clean", true, "fail");
        judge(&mut l, "a", 2, "clean", true, "pass");
        phase_end(&mut l, "a", "completed");
        judge(&mut l, "b", 1, "advice", false, "fail");
        judge(&mut l, "b", 1, "score", true, "fail");
        l.emit(
            EventType::Error,
            json!({"phase": "b", "attempt": 2, "turn": 1, "code": "model_error", "message": "the script has no turns for phase \"b\" attempt 2"}),
        );
        phase_end(&mut l, "b", "failed");
        let events = finish(&mut l, "partial", None);
        let s = summarize(&events);
        assert_eq!(
            s.first_cause.as_deref(),
            Some("b#1 gate:score fail: score said fail (+1 more)")
        );
        let text = s.to_string();
        assert_eq!(
            text.lines().nth(1),
            Some("first cause: b#1 gate:score fail: score said fail (+1 more)"),
            "{text}"
        );
        assert!(
            text.contains("errors:\n  the script has no turns"),
            "{text}"
        );
    }

    #[test]
    fn run_level_errors_and_stop_reasons_are_causes_and_a_completed_run_has_none() {
        let mut l = log(4);
        l.emit(
            EventType::Error,
            json!({"code": "auth_preflight", "message": "missing credential env KEY"}),
        );
        let events = finish(&mut l, "failed", Some("auth preflight failed"));
        assert_eq!(
            first_cause(&events).as_deref(),
            Some("auth_preflight: missing credential env KEY")
        );
        let mut l = log(5);
        phase_end(&mut l, "a", "completed");
        let events = finish(&mut l, "failed", Some("run budget_tool_calls"));
        assert_eq!(
            first_cause(&events).as_deref(),
            Some("run budget_tool_calls")
        );
        let mut l = log(6);
        judge(&mut l, "a", 1, "clean", true, "fail");
        judge(&mut l, "a", 2, "clean", true, "pass");
        phase_end(&mut l, "a", "completed");
        let events = finish(&mut l, "completed", None);
        let s = summarize(&events);
        assert_eq!(s.first_cause, None);
        assert!(!s.to_string().contains("first cause"));
    }

    #[test]
    fn event_json_has_exactly_the_schema_keys_in_camel_case() {
        let mut l = log(7);
        let e = l
            .emit(EventType::ToolCallStarted, json!({"tool": "fs.read"}))
            .clone();
        let v = serde_json::to_value(&e).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["id", "payload", "runId", "seq", "ts", "type"]);
        assert_eq!(v["type"], "ToolCallStarted");
        assert_eq!(v["seq"], 1);
        assert_eq!(v["ts"], 1_710_000_000_000_i64);
    }

    #[test]
    fn ids_are_uuid_shaped_and_seeded() {
        let mut a = log(1);
        let mut b = log(1);
        let mut c = log(2);
        for l in [&mut a, &mut b, &mut c] {
            l.emit(EventType::UserMessage, json!({}));
        }
        assert_eq!(a.to_jsonl(), b.to_jsonl());
        assert_ne!(a.run_id(), c.run_id());
        let re = regex::Regex::new(
            "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
        )
        .unwrap();
        assert!(re.is_match(a.run_id()), "{}", a.run_id());
        assert!(re.is_match(&a.events()[0].id));
        assert_ne!(a.events()[0].id, a.run_id());
    }

    #[test]
    fn jsonl_round_trips_and_seq_is_one_based() {
        let mut l = log(3);
        l.emit(
            EventType::StateChanged,
            json!({"scope": "phase", "phase": "a", "to": "running"}),
        );
        l.emit(
            EventType::StateChanged,
            json!({"scope": "phase", "phase": "a", "to": "completed"}),
        );
        let text = l.to_jsonl();
        let back = read_jsonl(&text).unwrap();
        assert_eq!(back, l.events());
        assert_eq!(back.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn read_jsonl_names_the_line_of_a_gap_or_bad_type() {
        let mut l = log(3);
        l.emit(EventType::UserMessage, json!({}));
        l.emit(EventType::UserMessage, json!({}));
        let text = l.to_jsonl();
        let lines: Vec<&str> = text.lines().collect();
        let gap = format!(
            "{}\n\n{}\n",
            lines[0],
            lines[1].replace("\"seq\":2", "\"seq\":3")
        );
        let err = read_jsonl(&gap).unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.message.contains("expected 2"), "{err}");
        let bad = lines[0].replace("UserMessage", "UserShout");
        let err = read_jsonl(&bad).unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.message.contains("UserShout"), "{err}");
    }

    #[test]
    fn sink_receives_the_same_lines() {
        #[derive(Clone, Default)]
        struct Shared(Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Shared {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buf = Shared::default();
        let mut l = log(9).with_sink(Box::new(buf.clone()));
        l.emit(EventType::AgentMessage, json!({"text": "hi"}));
        l.emit(EventType::Error, json!({"message": "boom"}));
        assert_eq!(
            String::from_utf8(buf.0.lock().unwrap().clone()).unwrap(),
            l.to_jsonl()
        );
    }

    #[test]
    fn summary_counts_types_phases_verdicts_and_outcome() {
        let mut l = log(4);
        l.emit(
            EventType::StateChanged,
            json!({"scope": "phase", "phase": "a", "to": "running"}),
        );
        l.emit(
            EventType::JudgeResult,
            json!({"phase": "a", "attempt": 1, "kind": "gate", "name": "g", "status": "fail"}),
        );
        l.emit(
            EventType::StateChanged,
            json!({"scope": "phase", "phase": "a", "to": "failed"}),
        );
        l.emit(EventType::Error, json!({"message": "budget"}));
        l.emit(EventType::TaskUpdated, json!({"status": "failed"}));
        let s = summarize(l.events());
        assert_eq!(s.events, 5);
        assert_eq!(s.counts["StateChanged"], 2);
        assert_eq!(s.phases["a"], "failed");
        assert_eq!(s.verdicts, ["a#1 gate:g fail"]);
        assert_eq!(s.errors, ["budget"]);
        assert_eq!(s.outcome.as_deref(), Some("failed"));
        assert_eq!(s.duration_ms, 4);
        assert!(s.to_string().contains("outcome: failed"));
    }
}
