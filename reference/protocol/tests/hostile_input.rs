//! Bad input never panics: arbitrary bytes through the strict parser, and arbitrary JSON
//! (including mutations of valid envelopes) through validation, signature verification,
//! delegation-chain checks and thread-op parsing. Each must return a value or a clear error.

mod common;

use common::*;
use loom_protocol::delegation::{
    ChainPolicy, DelegationResolver, LinkRef, verify_delegation_chain,
};
use loom_protocol::envelope::{
    SenderType, validate_envelope, validate_envelope_all, verify_envelope_signature,
};
use loom_protocol::jcs::{parse_strict_bytes, to_canonical_string};
use loom_protocol::thread::ThreadOp;
use loom_protocol::{Address, FixedClock, Timestamp};
use proptest::prelude::*;
use serde_json::Value;

struct Nobody;

impl DelegationResolver for Nobody {
    fn signing_keys(&self, _: &Address) -> Option<Vec<(String, ed25519_dalek::VerifyingKey)>> {
        Some(vec![("k_sign_alice_1".into(), key(1).verifying_key())])
    }
    fn identity_type(&self, _: &Address) -> Option<SenderType> {
        Some(SenderType::Human)
    }
    fn is_revoked(&self, _: &LinkRef<'_>) -> bool {
        false
    }
}

fn exercise(v: &Value) {
    let all = validate_envelope_all(v);
    assert_eq!(validate_envelope(v).is_ok(), all.is_empty());
    for e in &all {
        assert!(
            !e.field.is_empty() && !e.rule.is_empty() && e.section.starts_with("v1."),
            "{e:?}"
        );
    }
    let _ = verify_envelope_signature(v, &key(1).verifying_key());
    let _ = verify_delegation_chain(
        v,
        &Nobody,
        &ChainPolicy::default(),
        &FixedClock(Timestamp::UNIX_EPOCH),
    );
    let _ = ThreadOp::from_envelope(v);
    let _ = to_canonical_string(v);
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "\\PC{0,10}".prop_map(Value::String),
        prop::sample::select(vec![
            ALICE,
            "k_sign_x",
            ENV_ID,
            THR_ID,
            "thread_op",
            "agent",
            "2026-01-01T00:00:00Z"
        ])
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "loom",
                    "id",
                    "type",
                    "from",
                    "to",
                    "content",
                    "signature",
                    "identity",
                    "delegation_chain",
                    "structured",
                    "intent",
                    "x"
                ]),
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn arbitrary_bytes_never_panic_the_parser(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        loom_protocol::fuzzing::canonical_json(&bytes);
        loom_protocol::fuzzing::envelope(&bytes);
        if let Ok(v) = parse_strict_bytes(&bytes) {
            exercise(&v);
        }
    }

    #[test]
    fn arbitrary_json_never_panics_the_rules(v in json_value()) {
        exercise(&v);
    }

    /// Replace one member of a valid signed envelope (or of its `from`, `content`,
    /// `signature`) by an arbitrary value: still no panic, and still a clear error.
    #[test]
    fn mutated_envelopes_never_panic(target in 0usize..4, member in "[a-z_]{1,12}", v in json_value()) {
        let mut env = signed_message();
        let slot = match target {
            0 => &mut env,
            1 => &mut env["from"],
            2 => &mut env["content"],
            _ => &mut env["signature"],
        };
        slot[member.as_str()] = v;
        exercise(&env);
    }
}

#[test]
fn hostile_sizes_are_bounded() {
    let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(parse_strict_bytes(deep.as_bytes()).is_err());
    let wide = format!("[{}1]", "1,".repeat(200_000));
    let v = parse_strict_bytes(wide.as_bytes()).unwrap();
    exercise(&v);
    let long_key = format!("{{\"{}\":1}}", "k".repeat(1 << 20));
    exercise(&parse_strict_bytes(long_key.as_bytes()).unwrap());
}
