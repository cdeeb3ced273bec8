//! loom-tokens: golden counts, the round-trip gate, tokenizer sanity, CLI errors.

use std::process::Command;

use loom_benches::tokens::datasets::{Dataset, Doc};
use loom_benches::tokens::format::{Codec, EncodeFailure, Format};
use loom_benches::tokens::measure::Outcome;
use loom_benches::tokens::tokenizer::Tokenizers;
use loom_benches::tokens::{golden, report, run_builtin, run_with};
use serde_json::{Value, json};

#[test]
fn committed_golden_counts_equal_a_fresh_run() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/results/token-counts.json");
    let committed: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("golden file is committed"))
            .expect("golden file is JSON");
    let fresh = golden::to_json(&run_builtin(Tokenizers::shared()));
    let diffs = golden::check(&committed, &fresh);
    assert!(
        diffs.is_empty(),
        "token counts changed (run `cargo run -p loom-benches --bin loom-tokens -- --write-results` if intended):\n{}",
        diffs.join("\n")
    );
}

#[test]
fn tiktoken_counts_of_known_strings() {
    let tok = Tokenizers::shared();
    assert_eq!(tok.count("hello world"), [2, 2]);
    assert_eq!(tok.count(""), [0, 0]);
    // Special-token text is counted as ordinary text, never as one special token.
    assert!(tok.count("<|endoftext|>")[1] > 1);
}

/// Writes compact JSON but drops the last element of every array.
#[derive(Debug)]
struct DropsLastElement;

fn drop_last(v: &Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(
            a.iter()
                .take(a.len().saturating_sub(1))
                .map(drop_last)
                .collect(),
        ),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), drop_last(v))).collect())
        }
        other => other.clone(),
    }
}

impl Codec for DropsLastElement {
    fn name(&self) -> &str {
        "lossy"
    }
    fn encode(&self, value: &Value) -> Result<String, EncodeFailure> {
        Ok(serde_json::to_string(&drop_last(value)).unwrap())
    }
    fn decode(&self, text: &str) -> Result<Value, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

#[test]
fn lossy_encoder_is_excluded_and_reported() {
    let set = Dataset {
        name: "tiny".to_string(),
        description: "two documents".to_string(),
        docs: vec![
            Doc {
                label: "no-arrays".to_string(),
                value: json!({"a": 1}),
            },
            Doc {
                label: "has-array".to_string(),
                value: json!({"a": {"b": [1, 2]}}),
            },
        ],
    };
    let codecs: Vec<&dyn Codec> = vec![
        &Format::JsonPretty,
        &Format::JsonCompact,
        &DropsLastElement,
        &Format::Plsp,
    ];
    let run = run_with(0, &[set], &codecs, Tokenizers::shared());
    let r = &run.datasets[0];
    match &r.cell("lossy").unwrap().outcome {
        Outcome::Excluded {
            kind,
            doc,
            detail,
            uncounted,
            numbers_only,
        } => {
            assert_eq!(*kind, "lossy");
            assert_eq!(doc, "has-array");
            assert_eq!(detail, "$.\"a\".\"b\": expected 2 elements, got 1");
            assert!(uncounted.is_some());
            assert!(!numbers_only);
        }
        other => panic!("lossy codec was not excluded: {other:?}"),
    }
    match &r.cell("plsp").unwrap().outcome {
        Outcome::Excluded { kind, detail, .. } => {
            assert_eq!(*kind, "encode-failed");
            assert!(detail.contains("not a flat state map"), "{detail}");
        }
        other => panic!("nested data must not count as PLSP: {other:?}"),
    }
    let totals = report::totals(&run.datasets, &run.formats);
    let lossy = totals.iter().find(|t| t.format == "lossy").unwrap();
    assert_eq!((lossy.datasets, lossy.tokens), (0, [0, 0]));
    assert_eq!(
        lossy.left_out,
        vec![("tiny".to_string(), "lossy".to_string())]
    );
    let table = report::dataset_table(r);
    assert!(
        table.contains("lossy — excluded (document `has-array`"),
        "{table}"
    );
    let json = golden::to_json(&run);
    assert_eq!(json["datasets"][0]["results"][2]["status"], "lossy");
}

#[test]
fn strict_formats_round_trip_the_adversarial_corpus() {
    let set = Dataset {
        name: "adversarial".to_string(),
        description: String::new(),
        docs: loom_benches::tokens::datasets::adversarial(),
    };
    let codecs: Vec<&dyn Codec> = vec![&Format::JsonPretty, &Format::JsonCompact, &Format::Loom];
    let run = run_with(0, &[set], &codecs, Tokenizers::shared());
    for c in &run.datasets[0].cells {
        assert_eq!(c.outcome.status(), "ok", "{}: {:?}", c.format, c.outcome);
    }
}

#[test]
fn unreadable_input_file_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_loom-tokens"))
        .arg("/nonexistent/input.json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot read /nonexistent/input.json"), "{err}");
}

#[test]
fn agent_messages_are_small() {
    let tok = Tokenizers::shared();
    let sets = loom_benches::tokens::datasets::builtin(loom_benches::tokens::datasets::SEED);
    let msgs = sets.iter().find(|d| d.name == "agent-messages").unwrap();
    for d in &msgs.docs {
        let text = serde_json::to_string_pretty(&d.value).unwrap();
        let c = tok.count(&text);
        assert!(c[0] < 100 && c[1] < 100, "{}: {c:?} tokens", d.label);
    }
}
