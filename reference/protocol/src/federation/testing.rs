//! Strategies shared by this module's property tests.

use proptest::prelude::*;
use serde_json::Value;

/// Arbitrary JSON values, biased towards the strings and shapes federation documents use.
pub fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop_oneof![
            Just("1.1".to_owned()),
            Just("a.test".to_owned()),
            Just("env_01JN0000000000000000000001".to_owned()),
            Just("2026-03-01T12:00:00Z".to_owned()),
            Just("federation.delivery.receipt@v1".to_owned()),
            ".{0,12}",
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("loom".to_owned()),
                    Just("type".to_owned()),
                    Just("id".to_owned()),
                    Just("sender_node".to_owned()),
                    Just("signature".to_owned()),
                    Just("key_id".to_owned()),
                    Just("value".to_owned()),
                    Just("accepted_envelope_ids".to_owned()),
                    Just("envelopes".to_owned()),
                    "[a-z_]{1,8}",
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
