//! Fixtures shared by the integration tests: fixed-seed keys and valid v1.1 envelopes.
#![allow(dead_code)]

use ed25519_dalek::SigningKey;
use loom_protocol::id::{KeyId, KeyKind};
use serde_json::{Value, json};

pub const ALICE: &str = "loom://alice@node.test";
pub const BOB: &str = "loom://bob@node.test";
pub const CAROL: &str = "loom://carol@node.test";
pub const ENV_ID: &str = "env_01JMKB7X9Q2RVHF3KN4TYZPG00";
pub const ENV_ID_2: &str = "env_01JMKB7X9Q2RVHF3KN4TYZPG01";
pub const THR_ID: &str = "thr_01JMKB7W8P1QSGF2JM3SXYZR00";

/// A signing key from a seed made of one repeated byte.
pub fn key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

pub fn key_id(label: &str) -> KeyId {
    KeyId::parse(&format!("k_sign_{label}"), KeyKind::Signing).unwrap()
}

/// A valid, unsigned `message` envelope from alice to bob.
pub fn message() -> Value {
    json!({
        "loom": "1.1",
        "id": ENV_ID,
        "thread_id": THR_ID,
        "parent_id": null,
        "type": "message",
        "from": {
            "identity": ALICE,
            "display": "Alice",
            "key_id": "k_sign_alice_1",
            "type": "human"
        },
        "to": [{ "identity": BOB, "role": "primary" }],
        "created_at": "2026-02-16T16:37:00.000Z",
        "priority": "normal",
        "content": {
            "human": { "text": "Can you send the Q1 invoice?", "format": "markdown" },
            "structured": { "intent": "message.general@v1", "parameters": { "topic": "q1-invoice" } },
            "encrypted": false
        },
        "attachments": [],
        "labels": ["finance"]
    })
}

/// `message()` signed by alice's key (seed 1) with the context prefix.
pub fn signed_message() -> Value {
    let mut env = message();
    loom_protocol::envelope::sign_envelope(&mut env, &key(1), &key_id("alice_1")).unwrap();
    env
}
