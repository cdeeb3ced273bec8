//! The formats being compared, each an encoder plus the decoder used by the round-trip gate.
//!
//! Every encoder's output goes through [`counted_text`] before it is decoded or counted, so
//! all formats are measured the same way at the end of the text: **without a final newline**.
//! The encoders disagree (Loom notation and YAML end their text with `\n`, JSON, TOON and PLSP
//! do not), and a message body an agent sends or receives does not end in one either; before
//! issue 35 Loom notation and YAML paid one byte, and usually one token, per document for it.

use serde_json::Value;

use super::toon::Delimiter;

/// Why a format produced no text for a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeFailure {
    /// The format has no implementation in this build (the reason is printed as is).
    Unavailable(String),
    /// The encoder refused or failed on this value.
    Failed(String),
}

/// What a round trip must preserve of numbers for the text to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberPolicy {
    /// Kind and bits: `1` ≠ `1.0`, `0.0` ≠ `-0.0` (JSON, YAML, Loom notation, PLSP).
    Exact,
    /// The exact value only: the format's specification writes every number in one canonical
    /// form, so `1.0` reads back as `1` and `-0.0` as `0` (TOON §2). A number whose value
    /// changes is still a loss. See [`super::compare::normalized_numbers`].
    CanonicalForm,
}

/// `text` without its final newline (one `\n`, or `\r\n`), if it has one.
///
/// The one place where the benchmark decides how a text ends: every format's text is counted
/// (and decoded by the round-trip gate) through [`counted_text`], which applies this, and the
/// report's side tables (the anatomy columns, the seed's printed example) apply it too. Only one
/// line break is removed: a second one would be part of the content (a YAML `|+` scalar), and
/// the round-trip gate would report the text if removing the first changed the value.
pub fn without_final_newline(mut text: String) -> String {
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    text
}

/// The text of `value` in `codec` as the benchmark counts it: the encoder's output
/// [`without_final_newline`]. The round-trip gate decodes exactly this text.
pub fn counted_text(codec: &dyn Codec, value: &Value) -> Result<String, EncodeFailure> {
    codec.encode(value).map(without_final_newline)
}

/// An encoder and its decoder. The benchmark only counts text whose decoding equals the input.
pub trait Codec {
    /// Name used in tables, JSON results and golden counts.
    fn name(&self) -> &str;
    /// Text for `value`, as the encoder writes it (the benchmark counts [`counted_text`]).
    fn encode(&self, value: &Value) -> Result<String, EncodeFailure>;
    /// The value `text` stands for.
    fn decode(&self, text: &str) -> Result<Value, String>;
    /// What the round trip must keep of numbers.
    fn numbers(&self) -> NumberPolicy {
        NumberPolicy::Exact
    }
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
    /// TOON with its default comma delimiter (toon-format, through [`super::toon`]).
    Toon,
    /// TOON with the tab delimiter (`[N\t]` headers), which TOON recommends for fewer tokens.
    ToonTab,
    /// PLSP `S{...}S` state blocks, for flat state maps only (`tokens::plsp`).
    Plsp,
}

impl Format {
    /// Every format, in report order.
    pub const ALL: [Format; 7] = [
        Format::JsonPretty,
        Format::JsonCompact,
        Format::Yaml,
        Format::Loom,
        Format::Toon,
        Format::ToonTab,
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
            Format::ToonTab => "toon-tab",
            Format::Plsp => "plsp",
        }
    }

    /// One line on what the format is and which implementation writes and reads it.
    pub fn description(self) -> &'static str {
        match self {
            Format::JsonPretty => "JSON, 2-space indentation (`serde_json::to_string_pretty`)",
            Format::JsonCompact => "JSON without whitespace (`serde_json::to_string`)",
            Format::Yaml => "YAML (serde-saphyr)",
            Format::Loom => "Loom notation, strict profile (`loom_notation::encode`)",
            Format::Toon => "TOON, comma delimiter (toon-format, TOON spec v4.4)",
            Format::ToonTab => "TOON, tab delimiter (toon-format, TOON spec v4.4)",
            Format::Plsp => "PLSP v0.5 `S{...}S` state block (`loom-plsp`), flat state maps only",
        }
    }

    /// All built-in formats as codecs.
    pub fn all_codecs() -> Vec<&'static dyn Codec> {
        const ALL: [Format; 7] = Format::ALL;
        ALL.iter().map(|f| f as &dyn Codec).collect()
    }

    fn toon_delimiter(self) -> Option<Delimiter> {
        match self {
            Format::Toon => Some(Delimiter::Comma),
            Format::ToonTab => Some(Delimiter::Tab),
            _ => None,
        }
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
            Format::Toon | Format::ToonTab => {
                super::toon::shared().encode(value, self.toon_delimiter().unwrap_or_default())
            }
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
            Format::Toon | Format::ToonTab => super::toon::shared().decode(text),
            Format::Plsp => super::plsp::decode(text),
        }
    }

    fn numbers(&self) -> NumberPolicy {
        match self {
            Format::Toon | Format::ToonTab => NumberPolicy::CanonicalForm,
            _ => NumberPolicy::Exact,
        }
    }
}
