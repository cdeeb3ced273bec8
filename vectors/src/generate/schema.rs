//! JSON Schemas (draft 2020-12) for the vector files, one per area (DESIGN.md §6): the file
//! header and test envelope are common; each area describes its own inputs and outputs.

use serde_json::{Value, json};

/// What an area's tests carry beyond the common members.
#[derive(Debug, Clone, PartialEq)]
pub struct AreaSchema {
    /// The group kinds the file uses.
    pub kinds: Vec<&'static str>,
    /// Input members of a test or group: name → JSON Schema.
    pub inputs: Vec<(&'static str, Value)>,
    /// Input members every test must have (after merging its group's shared members).
    pub required: Vec<&'static str>,
    /// The schema of `expected` on valid tests (`true` when any value, or absent).
    pub expected: Value,
    /// The error codes `expected_error` may name.
    pub errors: Vec<&'static str>,
}

/// The §24.2 codes, for areas whose errors are protocol errors.
pub const PROTOCOL_ERRORS: &[&str] = &[
    "ENVELOPE_INVALID",
    "SIGNATURE_INVALID",
    "DELEGATION_INVALID",
    "CAPABILITY_DENIED",
    "AUDIENCE_DENIED",
    "ENCRYPTION_REQUIRED",
    "LEGAL_HOLD_ACTIVE",
    "IDENTITY_NOT_FOUND",
    "THREAD_NOT_FOUND",
    "ENVELOPE_NOT_FOUND",
    "EXTENSION_DISABLED",
    "ENVELOPE_DUPLICATE",
    "THREAD_LOCKED",
    "STATE_TRANSITION_INVALID",
    "PAYLOAD_TOO_LARGE",
    "RATE_LIMIT_EXCEEDED",
    "NODE_UNREACHABLE",
    "DELIVERY_TIMEOUT",
    "BRIDGE_DELIVERY_FAILED",
    "INTERNAL_ERROR",
];

/// Areas whose invalid tests may also pin where the error is: `expected_error_path`, a path
/// into the input (e.g. `phases[2].depends_on[0]`), judged against the answer's `error_path`.
/// Other areas' schemas do not allow the member.
pub const AREAS_WITH_ERROR_PATHS: &[&str] = &["process-yaml", "identity-document", "e2ee"];

/// A schema that accepts a string.
pub fn string() -> Value {
    json!({"type": "string"})
}

/// A schema that accepts any JSON value.
pub fn any() -> Value {
    json!(true)
}

impl AreaSchema {
    /// The whole file schema for `area`.
    pub fn render(&self, area: &str) -> Value {
        let mut inputs = serde_json::Map::new();
        for (name, schema) in &self.inputs {
            inputs.insert((*name).to_owned(), schema.clone());
        }
        let mut test_props = inputs.clone();
        for (k, v) in [
            (
                "id",
                json!({"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]*$"}),
            ),
            ("comment", json!({"type": "string", "minLength": 1})),
            (
                "flags",
                json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true}),
            ),
            (
                "spec",
                json!({"type": "array", "items": {"type": "string"}}),
            ),
            ("result", json!({"enum": ["valid", "invalid"]})),
            ("expected", self.expected.clone()),
            ("expected_error", json!({"enum": self.errors})),
        ] {
            test_props.insert(k.to_owned(), v);
        }
        let with_paths = AREAS_WITH_ERROR_PATHS.contains(&area);
        if with_paths {
            test_props.insert(
                "expected_error_path".to_owned(),
                json!({"type": "string", "description": "Where the error is: a path into the input, judged against the answer's error_path."}),
            );
        }
        let mut group_props = inputs;
        group_props.insert("kind".into(), json!({"enum": self.kinds}));
        group_props.insert(
            "tests".into(),
            json!({"type": "array", "items": {"$ref": "#/$defs/test"}}),
        );
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": format!("LOOM test vectors: {area}"),
            "type": "object",
            "additionalProperties": false,
            "required": ["schema", "version", "area", "description", "number_of_tests", "notes", "groups"],
            "properties": {
                "schema": {"const": format!("loom-vectors/v1/{area}.schema.json")},
                "version": {"type": "string", "pattern": "^[0-9]+\\.[0-9]+\\.[0-9]+$"},
                "area": {"const": area},
                "description": {"type": "string"},
                "number_of_tests": {"type": "integer", "minimum": 0},
                "notes": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["description", "bug_class", "effect"],
                        "properties": {
                            "description": {"type": "string"},
                            "bug_class": {"type": "string"},
                            "effect": {"type": "string"}
                        }
                    }
                },
                "groups": {"type": "array", "items": {"$ref": "#/$defs/group"}}
            },
            "$defs": {
                "group": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["kind", "tests"],
                    "properties": group_props
                },
                "test": {
                    "description": format!(
                        "Required inputs, on the test or its group: {}",
                        self.required.join(", ")
                    ),
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "comment", "flags", "spec", "result"],
                    "properties": test_props,
                    "if": {"properties": {"result": {"const": "invalid"}}},
                    "then": {"required": ["expected_error"], "not": {"required": ["expected"]}},
                    "else": if with_paths {
                        json!({"not": {"anyOf": [{"required": ["expected_error"]}, {"required": ["expected_error_path"]}]}})
                    } else {
                        json!({"not": {"required": ["expected_error"]}})
                    }
                }
            }
        })
    }
}
