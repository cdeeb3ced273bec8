//! The formats being compared, each an encoder plus the decoder used by the round-trip gate.

use serde_json::Value;

/// Why a format produced no text for a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeFailure {
    /// The format has no implementation in this build (the reason is printed as is).
    Unavailable(String),
    /// The encoder refused or failed on this value.
    Failed(String),
}

/// An encoder and its decoder. The benchmark only counts text whose decoding equals the input.
pub trait Codec {
    /// Name used in tables, JSON results and golden counts.
    fn name(&self) -> &str;
    /// Text for `value`.
    fn encode(&self, value: &Value) -> Result<String, EncodeFailure>;
    /// The value `text` stands for.
    fn decode(&self, text: &str) -> Result<Value, String>;
}

/// The built-in formats, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Format {
    /// `serde_json::to_string_pretty` (2-space indentation).
    JsonPretty,
    /// `serde_json::to_string` (no whitespace): the baseline.
    JsonCompact,
    /// YAML written and read by serde-saphyr.
    Yaml,
    /// Loom notation, strict profile (`loom_notation::encode` / `decode`).
    Loom,
    /// TOON: slot only, see [`TOON_UNAVAILABLE`].
    Toon,
    /// PLSP `S{...}S` state blocks, for flat state maps only (`tokens::plsp`).
    Plsp,
}

/// Reason printed for the TOON slot.
///
/// toon-format 0.7.0 builds and round-trips here, but it depends on serde_json with the
/// `preserve_order` feature. Cargo unifies features across the workspace, so with it every
/// crate's `serde_json::Map` would switch from sorted to insertion order whenever the
/// workspace is built together (`loom-notation`'s snapshot test then fails under
/// `cargo test --workspace`): output would depend on what else is compiled (DESIGN.md §3).
pub const TOON_UNAVAILABLE: &str = "not available: toon-format 0.7.0 forces serde_json's \
    `preserve_order` on the whole workspace, changing key order in other crates (DESIGN.md §3)";

impl Format {
    /// Every format, in report order.
    pub const ALL: [Format; 6] = [
        Format::JsonPretty,
        Format::JsonCompact,
        Format::Yaml,
        Format::Loom,
        Format::Toon,
        Format::Plsp,
    ];

    /// Stable name (table column, JSON key).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::JsonPretty => "json-pretty",
            Format::JsonCompact => "json-compact",
            Format::Yaml => "yaml",
            Format::Loom => "loom",
            Format::Toon => "toon",
            Format::Plsp => "plsp",
        }
    }

    /// All built-in formats as codecs.
    pub fn all_codecs() -> Vec<&'static dyn Codec> {
        const ALL: [Format; 6] = Format::ALL;
        ALL.iter().map(|f| f as &dyn Codec).collect()
    }
}

impl Codec for Format {
    fn name(&self) -> &str {
        self.as_str()
    }

    fn encode(&self, value: &Value) -> Result<String, EncodeFailure> {
        let failed = |e: &dyn std::fmt::Display| EncodeFailure::Failed(e.to_string());
        match self {
            Format::JsonPretty => serde_json::to_string_pretty(value).map_err(|e| failed(&e)),
            Format::JsonCompact => serde_json::to_string(value).map_err(|e| failed(&e)),
            Format::Yaml => serde_saphyr::to_string(value).map_err(|e| failed(&e)),
            Format::Loom => loom_notation::encode(value).map_err(|e| failed(&e)),
            Format::Toon => Err(EncodeFailure::Unavailable(TOON_UNAVAILABLE.to_string())),
            Format::Plsp => super::plsp::encode(value).map_err(EncodeFailure::Failed),
        }
    }

    fn decode(&self, text: &str) -> Result<Value, String> {
        match self {
            Format::JsonPretty | Format::JsonCompact => {
                serde_json::from_str(text).map_err(|e| e.to_string())
            }
            Format::Yaml => serde_saphyr::from_str(text).map_err(|e| e.to_string()),
            Format::Loom => loom_notation::decode(text).map_err(|e| e.to_string()),
            Format::Toon => Err(TOON_UNAVAILABLE.to_string()),
            Format::Plsp => super::plsp::decode(text),
        }
    }
}
