//! loom-tokens: golden counts, the round-trip gate, tokenizer sanity, CLI errors.

use std::process::Command;

use loom_benches::tokens::datasets::{Dataset, Doc};
use loom_benches::tokens::format::{
    Codec, EncodeFailure, Format, NumberPolicy, counted_text, without_final_newline,
};
use loom_benches::tokens::measure::{self, Outcome, Trip};
use loom_benches::tokens::tokenizer::{N, TOKENIZER_NAMES, Tokenizers};
use loom_benches::tokens::toon::{self, Bridge, Delimiter};
use loom_benches::tokens::{golden, report, run_builtin, run_with};
use serde_json::{Value, json};

/// The golden counts include TOON, so the bridge must work (`toon::shared` builds it with
/// Cargo on first use, so a clean clone needs no set-up step).
fn require_bridge() {
    if let Err(e) = toon::shared().call(&json!({"op": "version"})) {
        panic!(
            "the TOON bridge is needed by this test and is not usable: {e:?}\nbuild it with `benches/toon-bridge/build.sh`"
        );
    }
}

#[test]
fn committed_golden_counts_equal_a_fresh_run() {
    require_bridge();
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

/// Issue 35: every format's text is counted the same way at its end — without a final
/// newline — whatever its encoder writes (Loom notation and YAML end with `\n`, JSON, TOON and
/// PLSP do not). Checked on the text the round-trip gate decoded and `measure` counts, for
/// every document of every built-in dataset (the seed's examples included).
#[test]
fn every_format_is_counted_without_a_final_newline() {
    require_bridge();
    let docs: Vec<Doc> =
        loom_benches::tokens::datasets::builtin(loom_benches::tokens::datasets::SEED)
            .into_iter()
            .flat_map(|set| set.docs)
            .collect();
    let mut checked = [0usize; Format::ALL.len()];
    let mut raw_newline = [0usize; Format::ALL.len()];
    let mut bad = Vec::new();
    for doc in &docs {
        for (i, f) in Format::ALL.iter().enumerate() {
            if f.encode(&doc.value).is_ok_and(|t| t.ends_with('\n')) {
                raw_newline[i] += 1;
            }
            let text = match measure::round_trip(f, &doc.value) {
                Trip::Exact(text) | Trip::SameValues { text, .. } | Trip::Lossy { text, .. } => {
                    text
                }
                Trip::Failed(..) => continue,
                Trip::Unavailable(why) => panic!("{}: {why}", f.as_str()),
            };
            checked[i] += 1;
            if text.ends_with('\n') || text.ends_with('\r') {
                bad.push(format!("{} / {}: {:?}", f.as_str(), doc.label, text));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} counted texts end with a line break, first ones:\n{}",
        bad.len(),
        bad[..bad.len().min(5)].join("\n")
    );
    // Every format was checked on the datasets (PLSP only has the flat state maps).
    for (f, n) in Format::ALL.iter().zip(checked) {
        assert!(n > 0, "{} counted no text", f.as_str());
    }
    // The normalization is not idle: the Loom notation encoder ends its text with a newline.
    let loom = Format::ALL.iter().position(|f| *f == Format::Loom).unwrap();
    assert!(raw_newline[loom] > 0, "{raw_newline:?}");
}

/// Compact JSON with a final newline: counted exactly like compact JSON.
#[derive(Debug)]
struct JsonWithNewline;

impl Codec for JsonWithNewline {
    fn name(&self) -> &str {
        "json-newline"
    }
    fn encode(&self, value: &Value) -> Result<String, EncodeFailure> {
        Ok(serde_json::to_string(value).unwrap() + "\n")
    }
    fn decode(&self, text: &str) -> Result<Value, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

#[test]
fn a_final_newline_is_removed_for_any_codec_before_the_round_trip_and_the_count() {
    let set = Dataset {
        name: "tiny".to_string(),
        description: String::new(),
        docs: vec![
            Doc {
                label: "object".to_string(),
                value: json!({"a": [1, 2], "b": "x"}),
            },
            Doc {
                label: "text".to_string(),
                value: json!("line one\nline two\n"),
            },
        ],
    };
    let codecs: Vec<&dyn Codec> = vec![&Format::JsonCompact, &JsonWithNewline];
    let run = run_with(0, &[set], &codecs, Tokenizers::shared());
    let r = &run.datasets[0];
    let plain = r.cell("json-compact").unwrap().outcome.counted().unwrap();
    let newline = r.cell("json-newline").unwrap().outcome.counted().unwrap();
    assert_eq!(plain, newline);
    assert_eq!(
        counted_text(&JsonWithNewline, &json!([1])).unwrap(),
        counted_text(&Format::JsonCompact, &json!([1])).unwrap()
    );
    // One line break goes; a second one is the text's own.
    assert_eq!(without_final_newline("a: 1\n".to_string()), "a: 1");
    assert_eq!(without_final_newline("a: 1\r\n".to_string()), "a: 1");
    assert_eq!(
        without_final_newline("a: |+\n  x\n\n".to_string()),
        "a: |+\n  x\n"
    );
    assert_eq!(without_final_newline("a: 1".to_string()), "a: 1");
    assert_eq!(without_final_newline(String::new()), "");
}

#[test]
fn tokenizer_counts_of_known_strings() {
    let tok = Tokenizers::shared();
    assert_eq!(tok.count("hello world"), [2; N]);
    assert_eq!(tok.count(""), [0; N]);
    // Special-token text is counted as ordinary text, never as one special token, for each
    // vocabulary's own special tokens.
    let col = |name: &str| TOKENIZER_NAMES.iter().position(|n| *n == name).unwrap();
    for (text, name) in [
        ("<|endoftext|>", "cl100k_base"),
        ("<|endoftext|>", "o200k_base"),
        ("<|endoftext|>", "p50k_base"),
        ("<|endoftext|>", "r50k_base"),
        ("<|begin_of_text|>", "llama3"),
        ("<|im_start|>", "qwen2"),
        ("<｜User｜>", "deepseek_v3"),
        ("[INST]", "mistral_v3"),
    ] {
        assert!(
            tok.count(text)[col(name)] > 1,
            "{name} counted {text} as one token"
        );
    }
    // Qwen's tokenizer reads text as NFC: a decomposed "é" costs what the composed one does
    // (Llama 3's has no normalizer, and there the decomposed text costs more).
    let (nfd, nfc) = (
        tok.count("text: Cafe\u{0301} invoice"),
        tok.count("text: Caf\u{00e9} invoice"),
    );
    assert_eq!(nfd[col("qwen2")], nfc[col("qwen2")]);
    assert!(nfd[col("llama3")] > nfc[col("llama3")], "{nfd:?} {nfc:?}");
    // r50k_base has no tokens for runs of spaces; p50k_base adds them (same vocabulary
    // otherwise), so indentation is where the two differ.
    let indented = "a:\n        b: 1\n";
    let c = tok.count(indented);
    assert!(c[col("r50k_base")] > c[col("p50k_base")], "{c:?}");
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
    assert_eq!((lossy.datasets, lossy.tokens), (0, [0; N]));
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
        assert_eq!(
            c.outcome.round_trip(),
            "exact",
            "{}: {:?}",
            c.format,
            c.outcome
        );
    }
}

#[test]
fn toon_keeps_every_adversarial_value_and_only_rewrites_minus_zero() {
    require_bridge();
    let set = Dataset {
        name: "adversarial".to_string(),
        description: String::new(),
        docs: loom_benches::tokens::datasets::adversarial(),
    };
    let codecs: Vec<&dyn Codec> = vec![&Format::JsonCompact, &Format::Toon, &Format::ToonTab];
    let run = run_with(0, &[set], &codecs, Tokenizers::shared());
    for f in ["toon", "toon-tab"] {
        match &run.datasets[0].cell(f).unwrap().outcome {
            // -0.0 comes back as 0 (TOON §2) in its three documents (alone, in an object, in
            // the array); 1e21, u64::MAX and i64::MIN keep their values and kinds.
            Outcome::Counted { normalized, .. } => assert_eq!(*normalized, 3, "{f}"),
            other => panic!("{f}: {other:?}"),
        }
    }
}

#[test]
fn toon_writes_uniform_records_as_a_table_and_reads_them_back() {
    require_bridge();
    let v = json!({"records": [{"id": 1, "name": "Ada", "score": 2.5}, {"id": 2, "name": "Bo, Jr.", "score": 3.0}]});
    let text = Format::Toon.encode(&v).unwrap();
    assert_eq!(
        text,
        "records[2]{id,name,score}:\n  1,Ada,2.5\n  2,\"Bo, Jr.\",3"
    );
    let tab = Format::ToonTab.encode(&v).unwrap();
    assert!(tab.starts_with("records[2\t]{id\tname\tscore}:"), "{tab}");
    for (codec, t) in [(Format::Toon, &text), (Format::ToonTab, &tab)] {
        let back = codec.decode(t).unwrap();
        // 3.0 comes back as the integer 3: equal in value, reported as normalized.
        assert_eq!(
            loom_benches::tokens::compare::normalized_numbers(&v, &back),
            Some(1)
        );
    }
}

#[test]
fn a_missing_bridge_is_unavailable_and_names_the_build_command() {
    let b = Bridge::at("/nonexistent/loom-toon-bridge");
    match b.encode(&json!({"a": 1}), Delimiter::Comma) {
        Err(EncodeFailure::Unavailable(why)) => {
            assert!(why.contains("/nonexistent/loom-toon-bridge"), "{why}");
            assert!(why.contains("benches/toon-bridge/build.sh"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert!(b.decode("a: 1").unwrap_err().contains("not available"));
}

#[test]
fn a_program_that_is_not_a_bridge_is_refused_at_the_handshake() {
    // `cat` answers the version request with the request itself: no "ok" member.
    let b = Bridge::at("/bin/cat");
    match b.encode(&json!(1), Delimiter::Comma) {
        Err(EncodeFailure::Unavailable(why)) => {
            assert!(why.contains("is not a working TOON bridge"), "{why}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_bridge_is_pinned_to_the_toon_format_version_the_benchmark_expects() {
    let manifest = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/toon-bridge/Cargo.toml"
    ))
    .unwrap();
    let pin = format!(
        "toon-format = {{ version = \"={}\"",
        toon::TOON_FORMAT_VERSION
    );
    assert!(
        manifest.contains(&pin),
        "{pin} not in the bridge's Cargo.toml"
    );
}

/// Compact JSON whose writer rounds every number to an integer; it claims TOON's policy.
#[derive(Debug)]
struct RoundsNumbers;

fn round_numbers(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64().unwrap().round() as i64),
        Value::Array(a) => Value::Array(a.iter().map(round_numbers).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), round_numbers(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

impl Codec for RoundsNumbers {
    fn name(&self) -> &str {
        "rounds"
    }
    fn encode(&self, value: &Value) -> Result<String, EncodeFailure> {
        Ok(serde_json::to_string(&round_numbers(value)).unwrap())
    }
    fn decode(&self, text: &str) -> Result<Value, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
    fn numbers(&self) -> NumberPolicy {
        NumberPolicy::CanonicalForm
    }
}

#[test]
fn canonical_number_policy_allows_a_change_of_form_but_not_of_value() {
    let doc = |label: &str, value: Value| Doc {
        label: label.to_string(),
        value,
    };
    let tok = Tokenizers::shared();
    let codecs: Vec<&dyn Codec> = vec![&Format::JsonCompact, &RoundsNumbers];
    let integral = Dataset {
        name: "integral".to_string(),
        description: String::new(),
        docs: vec![doc("a", json!({"x": [1.0, 2, -0.0]}))],
    };
    let fractional = Dataset {
        name: "fractional".to_string(),
        description: String::new(),
        docs: vec![doc("a", json!({"x": [1.0]})), doc("b", json!({"y": 2.5}))],
    };
    let run = run_with(0, &[integral, fractional], &codecs, tok);
    match &run.datasets[0].cell("rounds").unwrap().outcome {
        Outcome::Counted { normalized, .. } => assert_eq!(*normalized, 2),
        other => panic!("{other:?}"),
    }
    let out = &run.datasets[1].cell("rounds").unwrap().outcome;
    assert_eq!(out.status(), "lossy");
    assert!(
        out.explanation()
            .unwrap()
            .contains("$.\"y\": expected 2.5, got 3"),
        "{out:?}"
    );
    let table = report::dataset_table(&run.datasets[0]);
    assert!(
        table.contains("| rounds | same values, 2 numbers in canonical form |"),
        "{table}"
    );
    // The same change is a loss for a format with the exact policy.
    assert_eq!(
        run.datasets[0]
            .cell("json-compact")
            .unwrap()
            .outcome
            .round_trip(),
        "exact"
    );
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
fn check_covers_toon_and_fails_when_the_bridge_is_missing() {
    let out = Command::new(env!("CARGO_BIN_EXE_loom-tokens"))
        .arg("--check")
        .env("LOOM_TOON_BRIDGE", "/nonexistent/loom-toon-bridge")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("changed flat-records-100/toon/status: golden \"ok\", now \"unavailable\""),
        "{stdout}"
    );
    assert!(
        stdout.contains("gone flat-records-100/toon-tab/tokens.o200k_base"),
        "{stdout}"
    );
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
