//! Interim main job until the conformance harness exists: builds a v1.1 envelope with
//! deterministic IDs, signs it with the context prefix, validates and verifies it, then
//! shows that tampering and a wrong key are caught with §24.2 errors.
//!
//! `cargo run --release -p loom-protocol --example demo`

use loom_protocol::envelope::{
    envelope_signing_payload, sign_envelope, validate_envelope, verify_envelope_signature,
};
use loom_protocol::id::{IdGenerator, KeyKind};
use loom_protocol::keys::{public_key_to_spki_pem, signing_key_from_seed};
use loom_protocol::{FixedClock, Timestamp};
use serde_json::json;
use std::process::ExitCode;

fn main() -> ExitCode {
    let clock = FixedClock(Timestamp::parse("2026-02-16T16:37:00Z").expect("literal timestamp"));
    let mut ids = IdGenerator::new(clock, 2026);
    let key = signing_key_from_seed(&ids.bytes32());
    let key_id = ids.key(KeyKind::Signing);
    let mut envelope = json!({
        "loom": "1.1",
        "id": ids.envelope().to_string(),
        "thread_id": ids.thread().to_string(),
        "parent_id": null,
        "type": "message",
        "from": {"identity": "loom://alice@node.test", "display": "Alice", "key_id": key_id.as_str(), "type": "human"},
        "to": [{"identity": "loom://bob@node.test", "role": "primary"}],
        "created_at": clock.0.to_rfc3339(),
        "content": {"human": {"text": "Hello from the LOOM protocol core.", "format": "plaintext"}}
    });
    if let Err(e) = sign_envelope(&mut envelope, &key, &key_id) {
        eprintln!("signing failed: {e}");
        return ExitCode::FAILURE;
    }
    let canonical = envelope_signing_payload(&envelope).unwrap_or_default();
    println!(
        "signer key ({key_id}):\n{}",
        public_key_to_spki_pem(&key.verifying_key())
    );
    println!(
        "canonical signing payload ({} bytes, v1.1 §7.2):\n{}\n",
        canonical.len(),
        String::from_utf8_lossy(&canonical)
    );
    let mut ok = true;
    let mut report = |what: &str, passed: bool, detail: String| {
        ok &= passed;
        println!(
            "[{}] {what}: {detail}",
            if passed { "PASS" } else { "FAIL" }
        );
    };
    match validate_envelope(&envelope) {
        Ok(_) => report(
            "envelope validates (v1.1 §8.2)",
            true,
            "no rule broken".into(),
        ),
        Err(e) => report("envelope validates (v1.1 §8.2)", false, e.to_string()),
    }
    match verify_envelope_signature(&envelope, &key.verifying_key()) {
        Ok(mode) => report("signature verifies (v1.1 §7.3)", true, format!("{mode:?}")),
        Err(e) => report("signature verifies (v1.1 §7.3)", false, e.to_string()),
    }
    let mut tampered = envelope.clone();
    tampered["content"]["human"]["text"] = json!("Hello from someone else.");
    match verify_envelope_signature(&tampered, &key.verifying_key()) {
        Err(e) => report("tampered body is rejected", true, e.to_string()),
        Ok(_) => report("tampered body is rejected", false, "accepted".into()),
    }
    let other = signing_key_from_seed(&ids.bytes32());
    match verify_envelope_signature(&envelope, &other.verifying_key()) {
        Err(e) => report("wrong key is rejected", true, e.to_string()),
        Ok(_) => report("wrong key is rejected", false, "accepted".into()),
    }
    let mut broken = envelope.clone();
    broken["to"] = json!([]);
    match validate_envelope(&broken) {
        Err(e) => report(
            "envelope without recipients is rejected",
            true,
            format!("HTTP {} {e}", e.http_status()),
        ),
        Ok(_) => report(
            "envelope without recipients is rejected",
            false,
            "accepted".into(),
        ),
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
