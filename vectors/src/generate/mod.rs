//! Builds the generated vector files byte-identically (DESIGN.md §6): inputs (keys from fixed
//! seeds, signatures, tampered copies) are computed here; every expectation is a literal in an
//! area module's case table, written from the spec, never taken from `loom-protocol`'s output.
//!
//! Hand-written areas (`canonical-json`, `ids`, `addresses`) are their own source; only their
//! schemas come from here.

pub mod capability_token;
pub mod delegation_chain;
pub mod e2ee;
pub mod email_auth;
pub mod envelope_signature;
pub mod envelope_validation;
pub mod federation;
pub mod handwritten;
pub mod http_signature;
pub mod identity_document;
pub mod jcs_numbers;
pub mod keys;
pub mod mime_mapping;
pub mod notation;
pub mod plsp;
pub mod process_yaml;
pub mod schema;
pub mod scope_matching;
pub mod task_state;
pub mod thread_dag;
pub mod thread_state;
pub mod writer;

pub use schema::AreaSchema;

pub use writer::{Case, FileBuilder};

/// A generated area: its name and the function that builds its file text.
#[derive(Debug, Clone, Copy)]
pub struct GeneratedArea {
    /// Area name (the file stem).
    pub area: &'static str,
    /// Builds the file.
    pub build: fn() -> FileBuilder,
    /// Describes its inputs and outputs for the area's JSON Schema.
    pub schema: fn() -> AreaSchema,
}

/// Every generated area, in the order `generate` writes them.
pub const GENERATED: &[GeneratedArea] = &[
    GeneratedArea {
        area: "envelope-signature",
        build: envelope_signature::build,
        schema: envelope_signature::schema,
    },
    GeneratedArea {
        area: "e2ee",
        build: e2ee::build,
        schema: e2ee::schema,
    },
    GeneratedArea {
        area: "envelope-validation",
        build: envelope_validation::build,
        schema: envelope_validation::schema,
    },
    GeneratedArea {
        area: "thread-dag",
        build: thread_dag::build,
        schema: thread_dag::schema,
    },
    GeneratedArea {
        area: "thread-state",
        build: thread_state::build,
        schema: thread_state::schema,
    },
    GeneratedArea {
        area: "task-state",
        build: task_state::build,
        schema: task_state::schema,
    },
    GeneratedArea {
        area: "scope-matching",
        build: scope_matching::build,
        schema: scope_matching::schema,
    },
    GeneratedArea {
        area: "delegation-chain",
        build: delegation_chain::build,
        schema: delegation_chain::schema,
    },
    GeneratedArea {
        area: "capability-token",
        build: capability_token::build,
        schema: capability_token::schema,
    },
    GeneratedArea {
        area: "jcs-numbers",
        build: jcs_numbers::build,
        schema: jcs_numbers::schema,
    },
    GeneratedArea {
        area: "http-signature",
        build: http_signature::build,
        schema: http_signature::schema,
    },
    GeneratedArea {
        area: "notation-decode",
        build: notation::decode_file,
        schema: notation::decode_schema,
    },
    GeneratedArea {
        area: "notation-encode",
        build: notation::encode_file,
        schema: notation::encode_schema,
    },
    GeneratedArea {
        area: "notation-errors",
        build: notation::errors_file,
        schema: notation::errors_schema,
    },
    GeneratedArea {
        area: "plsp-parse",
        build: plsp::parse_file,
        schema: plsp::parse_schema,
    },
    GeneratedArea {
        area: "plsp-serialize",
        build: plsp::serialize_file,
        schema: plsp::serialize_schema,
    },
    GeneratedArea {
        area: "plsp-state",
        build: plsp::state_file,
        schema: plsp::state_schema,
    },
    GeneratedArea {
        area: "plsp-engine",
        build: plsp::engine_file,
        schema: plsp::engine_schema,
    },
    GeneratedArea {
        area: "process-yaml",
        build: process_yaml::build,
        schema: process_yaml::schema,
    },
    GeneratedArea {
        area: "identity-document",
        build: identity_document::build,
        schema: identity_document::schema,
    },
    GeneratedArea {
        area: "federation",
        build: federation::build,
        schema: federation::schema,
    },
    GeneratedArea {
        area: "email-auth",
        build: email_auth::build,
        schema: email_auth::schema,
    },
    GeneratedArea {
        area: "mime-mapping",
        build: mime_mapping::build,
        schema: mime_mapping::schema,
    },
];

/// The schema description of `area`, generated or hand-written.
pub fn schema_for(area: &str) -> Option<AreaSchema> {
    GENERATED
        .iter()
        .find(|g| g.area == area)
        .map(|g| (g.schema)())
        .or_else(|| handwritten::schema(area))
}

/// Every area with a schema: the generated ones, then the hand-written ones.
pub fn all_areas() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = GENERATED.iter().map(|g| g.area).collect();
    v.extend(["canonical-json", "ids", "addresses"]);
    v
}

/// The text of `schema/<area>.schema.json`.
pub fn schema_text(area: &str) -> Option<String> {
    schema_for(area).map(|s| {
        let mut t = serde_json::to_string_pretty(&s.render(area)).expect("schema serializes");
        t.push('\n');
        t
    })
}
