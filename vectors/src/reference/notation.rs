//! Loom notation (`reference/notation/SPEC.md`): decode text in a mode, encode a value.

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_notation::{DecodeOptions, decode_with, encode};

/// `notation-decode`: `text` read in `mode` (`strict` or `lenient`); the output is the JSON
/// value, an error names its code and gives line and column in `detail`.
pub fn notation_decode(input: Input<'_>) -> Result<Answer, BadRequest> {
    let text = input.str("text")?;
    let opts = match input.str("mode")? {
        "strict" => DecodeOptions::strict(),
        "lenient" => DecodeOptions::lenient(),
        other => return Err(format!("unknown mode {other:?}")),
    };
    Ok(match decode_with(text, &opts) {
        Ok(v) => Answer::valid(v),
        Err(e) => Answer::invalid(
            e.code.as_str(),
            format!("line {}, column {}: {}", e.line, e.column, e.message),
        ),
    })
}

/// `notation-encode`: the exact strict text of `value`.
pub fn notation_encode(input: Input<'_>) -> Result<Answer, BadRequest> {
    Ok(match encode(input.value("value")?) {
        Ok(text) => Answer::valid(text),
        Err(e) => Answer::invalid("TOO_DEEP", e.to_string()),
    })
}
