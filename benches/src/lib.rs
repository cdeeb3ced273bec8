//! Fixtures shared by the kit's criterion benches: realistic signed envelopes of a chosen size.

pub mod tokens;

use ed25519_dalek::SigningKey;
use loom_protocol::envelope::sign_envelope;
use loom_protocol::id::{KeyId, KeyKind};
use serde_json::{Value, json};

/// The bench signing key (fixed seed).
pub fn bench_key() -> SigningKey {
    SigningKey::from_bytes(&[7u8; 32])
}

/// A signed `task` envelope whose compact JSON is about `target_bytes` long: realistic
/// members (recipients, structured parameters, labels, meta) with the human
/// text sized to reach the target.
pub fn typical_envelope(target_bytes: usize) -> String {
    let mut env = json!({
        "loom": "1.1",
        "id": "env_01JMKB7X9Q2RVHF3KN4TYZPG00",
        "thread_id": "thr_01JMKB7W8P1QSGF2JM3SXYZR00",
        "parent_id": "env_01JMKB7X9Q2RVHF3KN4TYZPG01",
        "type": "task",
        "from": {"identity": "loom://almarion@cowork-os.com", "display": "Almarion", "key_id": "k_sign_dev_01JMKB7X9Q2RVHF3KN4TYZPG02", "type": "human"},
        "to": [
            {"identity": "loom://sarah@acme.corp", "role": "primary"},
            {"identity": "loom://billing@acme.corp", "role": "cc"}
        ],
        "created_at": "2026-02-16T16:37:00.000Z",
        "priority": "high",
        "content": {
            "human": {"text": "", "format": "markdown"},
            "structured": {
                "intent": "task.create@v1",
                "parameters": {"title": "Review PR #247", "assignee": "loom://sarah@acme.corp", "due_date": "2026-02-20T17:00:00Z"},
                "response_schema": "task.state_update@v1"
            },
            "encrypted": false
        },
        "labels": ["engineering", "q1-2026"],
        "meta": {"node_id": "cowork-os.com", "event_seq": 42}
    });
    let key_id = KeyId::parse("k_sign_dev_01JMKB7X9Q2RVHF3KN4TYZPG02", KeyKind::Signing)
        .expect("fixture key id");
    let sign = |env: &mut Value| {
        sign_envelope(env, &bench_key(), &key_id).expect("fixture envelope is an object");
        serde_json::to_string(env).expect("serializable")
    };
    let base_len = sign(&mut env).len();
    let filler = "Please review the changes to the invoice pipeline and approve by Friday. ";
    let text: String = filler
        .chars()
        .cycle()
        .take(target_bytes.saturating_sub(base_len))
        .collect();
    env["content"]["human"]["text"] = Value::String(text);
    sign(&mut env)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loom_protocol::envelope::{validate_envelope, verify_envelope_signature};

    #[test]
    fn fixtures_are_valid_signed_envelopes_of_the_requested_size() {
        for size in [1024, 4096] {
            let text = typical_envelope(size);
            assert!(text.len().abs_diff(size) <= 8, "{} vs {size}", text.len());
            let v = loom_protocol::jcs::parse_strict(&text).unwrap();
            validate_envelope(&v).unwrap();
            verify_envelope_signature(&v, &bench_key().verifying_key()).unwrap();
        }
    }
}
