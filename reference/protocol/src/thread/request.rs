//! What a thread endpoint takes before the envelope is admitted (v1.1 §16.2
//! `POST /v1/threads/{id}/ops`): a `thread_op` for the thread named in the path. The
//! acceptance core then checks the operation itself ([`crate::accept`]).

use crate::error::ProtocolError;
use crate::id::ThreadId;
use serde_json::Value;

/// Checks that `op` is a `thread_op` addressed to `thread` (v1.1 §16.2): `type` first,
/// then `thread_id`, each refused as `ENVELOPE_INVALID` naming the member.
pub fn check_op_for_thread(op: &Value, thread: &ThreadId) -> Result<(), ProtocolError> {
    if op.get("type").and_then(Value::as_str) != Some("thread_op") {
        return Err(ProtocolError::invalid(
            "type",
            "this endpoint takes thread_op envelopes",
            "v1.1 §16.2",
        ));
    }
    if op.get("thread_id").and_then(Value::as_str) != Some(&thread.to_string()) {
        return Err(ProtocolError::invalid(
            "thread_id",
            format!("must be {thread}, the thread in the path"),
            "v1.1 §16.2",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use serde_json::json;

    const T: &str = "thr_01JMKB7X9Q2RVHF3KN4TYZPG00";

    #[test]
    fn the_type_is_checked_before_the_thread() {
        let t = ThreadId::parse(T).unwrap();
        assert!(check_op_for_thread(&json!({"type": "thread_op", "thread_id": T}), &t).is_ok());
        let e = check_op_for_thread(&json!({"type": "message", "thread_id": "x"}), &t).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_str()),
            (ErrorCode::EnvelopeInvalid, "type")
        );
        let e = check_op_for_thread(&json!({"type": "thread_op"}), &t).unwrap_err();
        assert_eq!(e.field, "thread_id");
        assert!(e.rule.contains(T), "{e:?}");
    }
}
