//! The detached signature object federation documents carry: `{algorithm, key_id, value}`
//! (a node-signed identity document's `node_signature`, a delivery receipt's `signature`;
//! DESIGN.md §9). One reading for both, so they refuse the same shapes the same way.

use crate::error::{ErrorCode, ProtocolError};
use serde_json::{Map, Value};

/// The `key_id` and `value` of the signature object at `obj[member]`. `algorithm`, when
/// present, must be `Ed25519`; `key_id` and `value` are required strings. A refusal is
/// `SIGNATURE_INVALID` naming `member` or `member.algorithm|key_id|value`, under `section`.
pub(crate) fn read<'a>(
    obj: &'a Map<String, Value>,
    member: &str,
    section: &'static str,
) -> Result<(&'a str, &'a str), ProtocolError> {
    let bad = |field: String, rule: String| {
        ProtocolError::new(ErrorCode::SignatureInvalid, field, rule, section)
    };
    let sig = obj.get(member).and_then(Value::as_object).ok_or_else(|| {
        bad(
            member.to_owned(),
            format!("{member} {{algorithm, key_id, value}} is required"),
        )
    })?;
    if let Some(alg) = sig.get("algorithm")
        && alg.as_str() != Some("Ed25519")
    {
        return Err(bad(
            format!("{member}.algorithm"),
            format!("algorithm {alg} is not Ed25519"),
        ));
    }
    let required = |name: &str| {
        sig.get(name).and_then(Value::as_str).ok_or_else(|| {
            bad(
                format!("{member}.{name}"),
                format!("{member}.{name} is required"),
            )
        })
    };
    Ok((required("key_id")?, required("value")?))
}
