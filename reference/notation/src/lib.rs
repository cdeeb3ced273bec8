//! # loom-notation
//!
//! The Loom notation codec (seed: `docs/specs/loom-notation.md`; precise rules: `SPEC.md` in this
//! crate): indentation-based, token-efficient text ⇄ [`serde_json::Value`].
//!
//! - [`decode`] reads text in the **strict** profile: lossless, unambiguous, rejects
//!   duplicate keys and malformed quoting with a [`DecodeError`] carrying line and column.
//! - [`decode_with`] + [`DecodeOptions::lenient`] reads legacy text the way the seed's rules
//!   do (duplicate keys: last wins; any deeper indentation; malformed quotes kept as text).
//! - [`encode`] writes text that [`decode`] reads back to the same value (SPEC.md rule 12):
//!   `decode(&encode(v)?)? == v` for every `Value` nested at most [`MAX_DEPTH`] deep.
//!
//! ```
//! let v = loom_notation::decode("services: slack, email\nchannel: #general\n").unwrap();
//! assert_eq!(v, serde_json::json!({"services": ["slack", "email"], "channel": "#general"}));
//! assert_eq!(loom_notation::encode(&serde_json::json!({"tags": ["one"]})).unwrap(), "tags: [one]\n");
//! ```

mod decode;
mod encode;
mod error;
mod lines;
mod scalar;

pub use error::{DecodeError, EncodeError, ErrorCode};
use serde_json::Value;

/// The default container nesting limit of the decoder and the limit of the encoder (rule 11).
pub const MAX_DEPTH: usize = 128;

/// The decoder never nests deeper than this, whatever [`DecodeOptions::max_depth`] says.
pub const HARD_MAX_DEPTH: usize = 512;

/// Which reading rules apply (SPEC.md rule 13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// The lossless profile `encode` writes: every ambiguity is an error.
    #[default]
    Strict,
    /// The seed's rules for legacy text: duplicate keys keep the last value, any deeper
    /// indentation opens a block, malformed quotes/brackets are plain text.
    Lenient,
}

/// Options for [`decode_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Strict or lenient reading.
    pub mode: Mode,
    /// Deepest container nesting accepted (top-level container = 1); capped at
    /// [`HARD_MAX_DEPTH`].
    pub max_depth: usize,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions::strict()
    }
}

impl DecodeOptions {
    /// The strict profile with the default depth limit.
    pub fn strict() -> DecodeOptions {
        DecodeOptions {
            mode: Mode::Strict,
            max_depth: MAX_DEPTH,
        }
    }

    /// The lenient (seed-compatible) reader with the default depth limit.
    pub fn lenient() -> DecodeOptions {
        DecodeOptions {
            mode: Mode::Lenient,
            ..DecodeOptions::strict()
        }
    }
}

/// Decodes `text` in strict mode (SPEC.md rules 1–11).
pub fn decode(text: &str) -> Result<Value, DecodeError> {
    decode::decode(text, &DecodeOptions::strict())
}

/// Decodes `text` with `opts`.
pub fn decode_with(text: &str, opts: &DecodeOptions) -> Result<Value, DecodeError> {
    decode::decode(text, opts)
}

/// Encodes `v` as strict text (SPEC.md rule 12). Fails only when `v` nests containers deeper
/// than [`MAX_DEPTH`], since such text would not decode.
pub fn encode(v: &Value) -> Result<String, EncodeError> {
    encode::encode(v)
}

/// Fuzz body (DESIGN.md §10): decodes `data` in both modes (must not panic); whenever a decode
/// succeeds, the value must survive `encode` → strict `decode` unchanged, and encoding must be
/// stable. Panics on any violation; invalid UTF-8 is ignored.
pub fn fuzz_decode(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for opts in [DecodeOptions::strict(), DecodeOptions::lenient()] {
        if let Ok(v) = decode_with(text, &opts) {
            let enc = encode(&v).expect("a decoded value is within the depth limit");
            let back =
                decode(&enc).unwrap_or_else(|e| panic!("encoded text does not decode: {e}\n{enc}"));
            assert_eq!(back, v, "round trip changed the value; text:\n{enc}");
            let again = encode(&back).expect("same depth");
            assert_eq!(again, enc, "encoding is not stable");
        }
    }
}
