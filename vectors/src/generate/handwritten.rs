//! Schemas of the hand-written areas, whose files are their own source.

use super::schema::{AreaSchema, string};
use serde_json::json;

/// `canonical-json`: RFC 8785 canonicalization (v1.1 §7.2).
pub fn canonical_json() -> AreaSchema {
    AreaSchema {
        kinds: vec!["canonicalize"],
        inputs: vec![("input", string())],
        required: vec!["input"],
        expected: string(),
        errors: vec![
            "INVALID_UTF8",
            "SYNTAX",
            "DUPLICATE_KEY",
            "LONE_SURROGATE",
            "NON_FINITE_NUMBER",
            "TOO_DEEP",
        ],
    }
}

/// `ids`: prefixed ULIDs and key IDs (v1.1 §8.4).
pub fn ids() -> AreaSchema {
    AreaSchema {
        kinds: vec!["parse-id"],
        inputs: vec![
            ("input", string()),
            (
                "id_type",
                json!({"enum": ["envelope", "thread", "attachment", "blob", "capability", "event",
                    "signing-key", "encryption-key", "node-signing-key"]}),
            ),
        ],
        required: vec!["input", "id_type"],
        expected: string(),
        errors: vec!["ENVELOPE_INVALID"],
    }
}

/// `addresses`: `loom://` and `bridge://` addresses (v1.1 §6.1).
pub fn addresses() -> AreaSchema {
    AreaSchema {
        kinds: vec!["parse-address"],
        inputs: vec![
            ("input", string()),
            ("mode", json!({"enum": ["wire", "lenient", "deeplink"]})),
        ],
        required: vec!["input", "mode"],
        expected: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["canonical", "fragment"],
            "properties": {"canonical": string(), "fragment": {"type": ["string", "null"]}}
        }),
        errors: vec!["ENVELOPE_INVALID"],
    }
}

/// The schema of a hand-written area.
pub fn schema(area: &str) -> Option<AreaSchema> {
    match area {
        "canonical-json" => Some(canonical_json()),
        "ids" => Some(ids()),
        "addresses" => Some(addresses()),
        _ => None,
    }
}
