//! RFC 8785 conformance of `loom_protocol::jcs` (v1.1 §7.2).

use loom_protocol::jcs::{canonicalize_str, to_canonical_string};
use proptest::prelude::*;
use serde_json::Value;
use std::path::Path;

/// The six sample pairs of the RFC 8785 reference test data, byte for byte.
#[test]
fn rfc8785_sample_pairs_are_reproduced_byte_for_byte() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/rfc8785");
    for name in [
        "arrays",
        "french",
        "structures",
        "unicode",
        "values",
        "weird",
    ] {
        let input =
            std::fs::read_to_string(dir.join("input").join(format!("{name}.json"))).unwrap();
        let expected = std::fs::read(dir.join("output").join(format!("{name}.json"))).unwrap();
        let got = canonicalize_str(&input).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            got.as_bytes(),
            &expected[..],
            "{name}: canonical bytes differ"
        );
        // Canonical output is a fixed point.
        assert_eq!(
            canonicalize_str(&got).unwrap(),
            got,
            "{name}: not idempotent"
        );
    }
}

/// Values of the kind JSON text can carry, without duplicate keys.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        (-1e25f64..1e25).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
        "[\\u{0}-\\u{7f}\\u{fb01}\\u{1f600}\\u{e9}]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\\u{e9}\\u{fb01}\\u{1f600}A-Z_]{0,5}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Canonicalizing is idempotent: parse(canonical(v)) canonicalizes to the same text.
    #[test]
    fn canonical_form_is_a_fixed_point(v in json_value()) {
        let once = to_canonical_string(&v);
        let twice = canonicalize_str(&once).unwrap();
        prop_assert_eq!(once, twice);
    }

    /// Member order and whitespace in the input do not change the canonical form.
    #[test]
    fn canonical_form_ignores_member_order_and_whitespace(v in json_value()) {
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        let reversed = reversed_text(&v);
        prop_assert_eq!(canonicalize_str(&pretty).unwrap(), canonicalize_str(&reversed).unwrap());
    }

    /// An independent RFC 8785 implementation agrees on every value.
    #[test]
    fn agrees_with_an_independent_implementation(v in json_value()) {
        let ours = to_canonical_string(&v);
        let theirs = serde_json_canonicalizer::to_string(&v).unwrap();
        prop_assert_eq!(ours, theirs);
    }

    /// Numbers survive canonicalization as the same double.
    #[test]
    fn numbers_round_trip_as_doubles(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        let text = to_canonical_string(&Value::from(f));
        let back: f64 = text.parse().unwrap();
        prop_assert_eq!(back, if f == 0.0 { 0.0 } else { f });
    }
}

/// JSON text of `v` with every object's members written in reverse key order (serde_json
/// without `preserve_order` would always write them sorted).
fn reversed_text(v: &Value) -> String {
    match v {
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(reversed_text).collect::<Vec<_>>().join(",")
        ),
        Value::Object(m) => {
            let members: Vec<String> = m
                .iter()
                .rev()
                .map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), reversed_text(v)))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        other => serde_json::to_string(other).unwrap(),
    }
}

#[test]
fn mvn_canonical_vectors_agree() {
    // Published canonical-json-v1 vectors of the existing v1.1 node.
    assert_eq!(
        canonicalize_str(r#"{"z":1,"a":{"y":true,"b":[3,2,1]}}"#).unwrap(),
        r#"{"a":{"b":[3,2,1],"y":true},"z":1}"#
    );
    assert_eq!(
        canonicalize_str(r#"{"n":-0,"list":["x",1.5,false,null]}"#).unwrap(),
        r#"{"list":["x",1.5,false,null],"n":0}"#
    );
    assert!(canonicalize_str(r#"{"bad":"\ud800"}"#).is_err());
}
