//! Fuzz bodies (DESIGN.md §8, issue 19): library functions shared by the `cargo fuzz` targets
//! in `fuzz/` and by `cargo test`, which replays every committed corpus file through them
//! (the test at the end of this module). A panic is a broken property of the parser driven.
//!
//! | target | body | drives |
//! |---|---|---|
//! | `process_yaml` | [`process_yaml`] | the `process.yaml` loader and validator ([`crate::package`]) |
//! | `loop_tool_action` | [`tool_action`] | Tool Action v1 ([`ToolAction::from_json`]) and chat replies ([`parse_reply`]) |
//! | `loop_events` | [`events`] | Loop Engine JSONL traces ([`read_jsonl`]) |

use crate::engine::action::ToolAction;
use crate::engine::chat::parse_reply;
use crate::engine::event::{read_jsonl, summarize, to_jsonl};
use crate::engine::model::Purpose;
use crate::package::model::Process;
use crate::package::rules::by_id;
use crate::package::{load_str, validate_str};
use serde_json::Value;

/// A fuzz body: takes any bytes, panics only on a broken property.
pub type Body = fn(&[u8]);

/// Every fuzz target whose body lives in this crate: `(target name, body)`; the name is the
/// `[[bin]]` of `fuzz/Cargo.toml` and the corpus directory `fuzz/corpus/<name>/`.
pub const TARGETS: &[(&str, Body)] = &[
    ("process_yaml", process_yaml),
    ("loop_tool_action", tool_action),
    ("loop_events", events),
];

/// `process.yaml` (package guide): the loader accepts exactly when the report has no error
/// (first-error and all-errors forms agree); every diagnostic names a known rule with its
/// severity and guide section, a path or the document, and a position inside the text;
/// validation is deterministic; an accepted definition's typed model prints and reads back
/// unchanged (parse∘print = id).
pub fn process_yaml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let report = validate_str(text);
    let loaded = load_str(text);
    assert_eq!(
        loaded.is_ok(),
        report.is_valid(),
        "load and validate disagree: {report:?}"
    );
    // YAML line breaks are CR LF, CR and LF (YAML 1.2 §5.4): a lone CR starts a line.
    let lines = (text.replace("\r\n", "\n").split(['\n', '\r']).count()) as u64;
    for d in &report.diagnostics {
        let rule = by_id(d.rule).unwrap_or_else(|| panic!("unknown rule id {}", d.rule));
        assert_eq!(d.severity, rule.level, "{d:?}");
        assert_eq!(d.section, rule.section, "{d:?}");
        assert!(!d.section.is_empty() && !d.message.is_empty(), "{d:?}");
        assert!(
            d.line <= lines + 1,
            "line {} beyond the text: {d:?}",
            d.line
        );
        assert!(d.line > 0 || d.column == 0, "{d:?}");
    }
    assert_eq!(validate_str(text), report, "validation is deterministic");
    match loaded {
        Ok(v) => {
            assert_eq!(v.report, report);
            let printed = serde_json::to_value(&v.process).expect("a process serializes");
            let back: Process =
                serde_json::from_value(printed).expect("a printed process reads back");
            assert_eq!(back, v.process, "parse∘print = id");
        }
        Err(r) => assert_eq!(r, report),
    }
}

/// Tool actions (loop-engine "Tool Action Schema (v1)"): an accepted action prints to JSON
/// that parses back to the same action, with the `id` and `type` it was given; a refusal says
/// what is wrong and cites the schema. A chat-completions reply carrying actions parses to
/// actions that round-trip the same way.
pub fn tool_action(data: &[u8]) {
    if let Ok(v) = serde_json::from_slice::<Value>(data) {
        match ToolAction::from_json(&v) {
            Ok(a) => {
                round_trip(&a);
                assert_eq!(Some(a.id()), v.get("id").and_then(Value::as_str));
                assert_eq!(Some(a.type_name()), v.get("type").and_then(Value::as_str));
            }
            Err(e) => {
                assert!(!e.0.is_empty());
                assert!(e.to_string().contains("Tool Action Schema"), "{e}");
            }
        }
    }
    if let Ok(reply) = parse_reply(&Purpose::Act, data) {
        for a in &reply.actions {
            round_trip(a);
        }
    }
}

fn round_trip(a: &ToolAction) {
    let printed = a.to_json();
    let back = ToolAction::from_json(&printed)
        .unwrap_or_else(|e| panic!("a printed action does not parse: {e}: {printed}"));
    assert_eq!(&back, a, "parse∘print = id");
}

/// Loop Engine traces (loop-engine "Event Schema", JSONL): an accepted trace has `seq`
/// 1, 2, … and one `runId`, prints to JSONL that reads back to the same events, and
/// summarizes without panicking; a refusal names a line of the text.
pub fn events(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match read_jsonl(text) {
        Ok(events) => {
            for (i, e) in events.iter().enumerate() {
                assert_eq!(e.seq, i as u64 + 1);
                assert_eq!(e.run_id, events[0].run_id);
            }
            let printed = to_jsonl(&events);
            let back = read_jsonl(&printed).expect("printed events read back");
            assert_eq!(back, events, "parse∘print = id");
            let s = summarize(&events);
            assert_eq!(s.events, events.len());
        }
        Err(e) => {
            assert!(e.line >= 1 && e.line <= text.lines().count(), "{e}");
            assert!(!e.message.is_empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Regression (fuzz target `loop_events`, corpus `crash-f05262a2…`): serde_json's default
    /// float parser is not correctly rounded: it read the payload integer below as
    /// 9.999991999999991e61, one ulp off, which prints as a text that reads back as another
    /// number, so a trace changed on re-reading. The crate enables `float_roundtrip`.
    #[test]
    fn trace_numbers_read_back_exactly() {
        let digits = "99999919999999900000000000000000000000000006450984253743169526";
        let line = format!(
            r#"{{"id":"e","runId":"r","ts":1,"seq":1,"type":"StateChanged","payload":{{"n":{digits}}}}}"#
        );
        let events = read_jsonl(&line).unwrap();
        let correctly_rounded: f64 = digits.parse().unwrap();
        assert_eq!(events[0].payload["n"].as_f64(), Some(correctly_rounded));
        assert_eq!(read_jsonl(&to_jsonl(&events)).unwrap(), events);
    }

    /// The fuzz body's position check counts lines as YAML does (corpus `crash-f7ed3768…`:
    /// lone CRs, a diagnostic on line 87 of a text with 81 LFs).
    #[test]
    fn diagnostics_count_a_lone_cr_as_a_line_break() {
        let report = validate_str("name: x\rversion: \"1\"\rbogus: 1\r");
        let d = report
            .diagnostics
            .iter()
            .find(|d| d.rule == "yaml.unknown_key")
            .unwrap_or_else(|| panic!("bogus is reported: {report:?}"));
        assert_eq!((d.path.as_str(), d.line), ("bogus", 3), "{d:?}");
        process_yaml(b"name: x\rversion: \"1\"\rbogus: 1\r");
    }

    /// Replays `fuzz/corpus/<target>/` for every target of this crate; a missing or empty
    /// corpus fails (issue 19: every target has a committed seed corpus).
    #[test]
    fn every_process_target_replays_its_committed_corpus() {
        let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
        loom_protocol::fuzzing::replay_committed_corpora(&fuzz_dir, TARGETS);
    }
}
