//! Property tests: `decode(encode(v)) == v` for arbitrary JSON values (SPEC.md rule 12), and
//! the fuzz body replayed over arbitrary bytes and near-miss texts.

use loom_notation::{decode, encode, fuzz_decode};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        // Any Unicode, control characters included.
        prop::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter),
        // Pieces of the notation's own syntax, glued together.
        prop::collection::vec(
            prop::sample::select(vec![
                "a", " ", ", ", ": ", ":", "-", "- ", "#", "\"", "\\", "[", "]", "{}", "{", "|",
                ">", "\n", "\t", "\r", "0", "1", "-0", "1e21", ".5", "true", "null", "é", "😀",
                "\u{2028}", "\u{feff}", "\u{85}",
            ]),
            0..6
        )
        .prop_map(|v| v.concat()),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        (-1000i32..1000, -30i32..30).prop_map(|(m, e)| Value::from(f64::from(m) * 10f64.powi(e))),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        tricky_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((tricky_string(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn same_bits(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(p), Some(q)) if x.is_f64() => y.is_f64() && p.to_bits() == q.to_bits(),
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_bits(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k1, v1), (k2, v2))| k1 == k2 && same_bits(v1, v2))
        }
        _ => a == b,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn decode_of_encode_is_identity(v in json()) {
        let text = encode(&v).unwrap();
        let back = decode(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert!(same_bits(&back, &v), "{back} != {v}\n{text}");
        prop_assert_eq!(encode(&back).unwrap(), text);
    }

    #[test]
    fn fuzz_body_on_arbitrary_bytes(data in prop::collection::vec(any::<u8>(), 0..200)) {
        fuzz_decode(&data);
    }

    #[test]
    fn fuzz_body_on_near_miss_text(
        lines in prop::collection::vec(
            (0usize..6, prop::sample::select(vec![
                "a: 1", "b:", "- x", "-", "- k: v", "c: |", "d: >-", "text", "\"q\": 2",
                "e: [1]", "f: []", "g: {}", "h: a, b", "# c", "", "\t", "i: \"x", "- - y",
                "j: [a, \"b", "k: 1e400", "\"l\"", "m: \"a\" b", "- \"n\": 1",
            ])),
            0..12,
        )
    ) {
        let text: String = lines
            .iter()
            .map(|(ind, l)| format!("{}{l}\n", " ".repeat(*ind)))
            .collect();
        fuzz_decode(text.as_bytes());
    }
}

#[test]
fn committed_fuzz_corpus_replays() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/notation");
    let mut n = 0;
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            fuzz_decode(&std::fs::read(e.path()).unwrap());
            n += 1;
        }
    }
    assert!(n > 0, "no corpus files in {}", dir.display());
}
