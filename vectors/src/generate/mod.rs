//! Builds the generated vector files byte-identically (DESIGN.md §6): inputs (keys from fixed
//! seeds, signatures, tampered copies) are computed here; every expectation is a literal in an
//! area module's case table, written from the spec, never taken from `loom-protocol`'s output.
//!
//! Hand-written areas (`canonical-json`, `ids`, `addresses`) are their own source; only their
//! schemas come from here.

pub mod http_signature;
pub mod jcs_numbers;
pub mod keys;
pub mod schema;
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
        area: "jcs-numbers",
        build: jcs_numbers::build,
        schema: jcs_numbers::schema,
    },
    GeneratedArea {
        area: "http-signature",
        build: http_signature::build,
        schema: http_signature::schema,
    },
];
