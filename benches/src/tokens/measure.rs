//! Encode every document of a dataset in every format, gate on a lossless round trip, count.

use serde_json::Value;

use super::compare::{first_difference, normalized_numbers};
use super::datasets::Dataset;
use super::format::{Codec, EncodeFailure, NumberPolicy, counted_text};
use super::tokenizer::{self, Counts, Tokenizers};

/// What one format gave for one dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every document round-tripped; sums over the documents.
    Counted {
        /// UTF-8 bytes of all encodings.
        bytes: usize,
        /// Tokens per tokenizer.
        tokens: Counts,
        /// Numbers that came back in another form with the same value (`1.0` → `1`); always 0
        /// for formats with [`NumberPolicy::Exact`].
        normalized: usize,
    },
    /// A document did not survive encode → decode; excluded from every total.
    Excluded {
        /// `lossy`, `encode-failed` or `decode-failed`.
        kind: &'static str,
        /// Label of the first failing document.
        doc: String,
        /// First differing path, or the error.
        detail: String,
        /// Bytes and tokens the format would have had, when every document was at least
        /// encoded and decoded (shown for information, never summed).
        uncounted: Option<(usize, Counts)>,
        /// Every lossy document differs only in number representation (`1.0` → `1`, `-0.0` → `0`).
        numbers_only: bool,
    },
    /// The format is not implemented in this build.
    Unavailable(String),
}

impl Outcome {
    /// Counted bytes and tokens, if the result may be counted.
    pub fn counted(&self) -> Option<(usize, Counts)> {
        match self {
            Outcome::Counted { bytes, tokens, .. } => Some((*bytes, *tokens)),
            _ => None,
        }
    }

    /// Short status word: `ok`, `lossy`, `encode-failed`, `decode-failed` or `unavailable`.
    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Counted { .. } => "ok",
            Outcome::Excluded { kind, .. } => kind,
            Outcome::Unavailable(_) => "unavailable",
        }
    }

    /// How the round trip went, for the tables: `exact`, `exact up to number form (N numbers)`,
    /// or the status word.
    pub fn round_trip(&self) -> String {
        match self {
            Outcome::Counted { normalized: 0, .. } => "exact".to_string(),
            Outcome::Counted { normalized, .. } => format!(
                "same values, {normalized} number{} in canonical form",
                if *normalized == 1 { "" } else { "s" }
            ),
            other => other.status().to_string(),
        }
    }

    /// One-line explanation for an excluded or unavailable result.
    pub fn explanation(&self) -> Option<String> {
        match self {
            Outcome::Counted { .. } => None,
            Outcome::Excluded {
                kind,
                doc,
                detail,
                uncounted,
                numbers_only,
            } => {
                let mut s = format!("{kind} — excluded (document `{doc}`: {detail})");
                if *numbers_only {
                    s.push_str(
                        "; every difference is number representation only (1.0 → 1, -0.0 → 0)",
                    );
                }
                if let Some((_, t)) = uncounted {
                    s.push_str(&format!(
                        "; not counted: would be {} / {} tokens ({} / {})",
                        t[0],
                        t[1],
                        tokenizer::TOKENIZER_NAMES[0],
                        tokenizer::TOKENIZER_NAMES[1]
                    ));
                }
                Some(s)
            }
            Outcome::Unavailable(reason) => Some(reason.clone()),
        }
    }
}

/// One format's result on one dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// Format name.
    pub format: String,
    /// Counts or the reason there are none.
    pub outcome: Outcome,
}

/// Every format's result on one dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetResult {
    /// Dataset name.
    pub name: String,
    /// What the dataset is.
    pub description: String,
    /// Number of documents encoded separately.
    pub docs: usize,
    /// One cell per format, in codec order.
    pub cells: Vec<Cell>,
}

impl DatasetResult {
    /// The cell of the named format.
    pub fn cell(&self, format: &str) -> Option<&Cell> {
        self.cells.iter().find(|c| c.format == format)
    }

    /// Counted tokens of the named format.
    pub fn tokens(&self, format: &str) -> Option<Counts> {
        self.cell(format)?.outcome.counted().map(|(_, t)| t)
    }
}

/// What encoding and decoding one value gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trip {
    /// Decoded to exactly the original value.
    Exact(String),
    /// Decoded to the original value up to the form of some numbers (`1.0` → `1`), which the
    /// codec's [`NumberPolicy::CanonicalForm`] allows.
    SameValues {
        /// The encoding.
        text: String,
        /// How many numbers changed form.
        normalized: usize,
    },
    /// Decoded to a different value.
    Lossy {
        /// The encoding.
        text: String,
        /// First difference (`path: expected …, got …`).
        detail: String,
        /// The values are equal when numbers compare by value only.
        numbers_only: bool,
    },
    /// Encoding or decoding failed: (`encode-failed` | `decode-failed`, error).
    Failed(&'static str, String),
    /// The format is not implemented in this build.
    Unavailable(String),
}

/// Encodes `value` (the [`counted_text`]: no final newline, whatever the encoder writes),
/// decodes that text and compares the result with `value`: exactly (numbers by kind and bits),
/// or by value for numbers when the codec's [`NumberPolicy`] says so. The text in the answer is
/// the one that was decoded and is the one [`measure`] counts.
pub fn round_trip(codec: &dyn Codec, value: &Value) -> Trip {
    let text = match counted_text(codec, value) {
        Ok(t) => t,
        Err(EncodeFailure::Unavailable(r)) => return Trip::Unavailable(r),
        Err(EncodeFailure::Failed(e)) => return Trip::Failed("encode-failed", e),
    };
    let back = match codec.decode(&text) {
        Ok(v) => v,
        Err(e) => return Trip::Failed("decode-failed", e.replace('\n', " ")),
    };
    let Some(detail) = first_difference(value, &back) else {
        return Trip::Exact(text);
    };
    let same_values = normalized_numbers(value, &back);
    match (codec.numbers(), same_values) {
        (NumberPolicy::CanonicalForm, Some(normalized)) => Trip::SameValues { text, normalized },
        _ => Trip::Lossy {
            numbers_only: same_values.is_some(),
            text,
            detail,
        },
    }
}

/// Measures `dataset` in every codec.
pub fn measure(dataset: &Dataset, codecs: &[&dyn Codec], tok: &Tokenizers) -> DatasetResult {
    let cells = codecs
        .iter()
        .map(|codec| Cell {
            format: codec.name().to_string(),
            outcome: measure_one(dataset, *codec, tok),
        })
        .collect();
    DatasetResult {
        name: dataset.name.clone(),
        description: dataset.description.clone(),
        docs: dataset.docs.len(),
        cells,
    }
}

fn measure_one(dataset: &Dataset, codec: &dyn Codec, tok: &Tokenizers) -> Outcome {
    let mut bytes = 0;
    let mut tokens = [0usize; tokenizer::N];
    let mut normalized = 0;
    let mut first: Option<(&'static str, String, String)> = None;
    let mut all_texts = true;
    let mut numbers_only = true;
    for doc in &dataset.docs {
        let text = match round_trip(codec, &doc.value) {
            Trip::Exact(text) => text,
            Trip::SameValues {
                text,
                normalized: n,
            } => {
                normalized += n;
                text
            }
            Trip::Lossy {
                text,
                detail,
                numbers_only: n,
            } => {
                numbers_only &= n;
                first.get_or_insert(("lossy", doc.label.clone(), detail));
                text
            }
            Trip::Failed(kind, e) => {
                all_texts = false;
                numbers_only = false;
                first.get_or_insert((kind, doc.label.clone(), e));
                continue;
            }
            Trip::Unavailable(reason) => return Outcome::Unavailable(reason),
        };
        bytes += text.len();
        tokenizer::add(&mut tokens, &tok.count(&text));
    }
    match first {
        None => Outcome::Counted {
            bytes,
            tokens,
            normalized,
        },
        Some((kind, doc, detail)) => Outcome::Excluded {
            kind,
            doc,
            detail,
            uncounted: all_texts.then_some((bytes, tokens)),
            numbers_only,
        },
    }
}
