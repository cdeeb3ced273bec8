//! Encode every document of a dataset in every format, gate on a lossless round trip, count.

use serde_json::Value;

use super::compare::first_difference;
use super::datasets::Dataset;
use super::format::{Codec, EncodeFailure};
use super::tokenizer::{Counts, Tokenizers};

/// What one format gave for one dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every document round-tripped; sums over the documents.
    Counted {
        /// UTF-8 bytes of all encodings.
        bytes: usize,
        /// Tokens per tokenizer.
        tokens: Counts,
    },
    /// A document did not survive encode → decode; excluded from every total.
    Excluded {
        /// `lossy`, `encode-failed` or `decode-failed`.
        kind: &'static str,
        /// Label of the first failing document.
        doc: String,
        /// First differing path, or the error.
        detail: String,
    },
    /// The format is not implemented in this build.
    Unavailable(String),
}

impl Outcome {
    /// Counted bytes and tokens, if the result may be counted.
    pub fn counted(&self) -> Option<(usize, Counts)> {
        match self {
            Outcome::Counted { bytes, tokens } => Some((*bytes, *tokens)),
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

    /// One-line explanation for an excluded or unavailable result.
    pub fn explanation(&self) -> Option<String> {
        match self {
            Outcome::Counted { .. } => None,
            Outcome::Excluded { kind, doc, detail } => {
                Some(format!("{kind} — excluded (document `{doc}`: {detail})"))
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

/// Encodes, decodes and compares one value; `Ok(text)` only for a lossless round trip.
pub fn round_trip(codec: &dyn Codec, value: &Value) -> Result<String, (&'static str, String)> {
    let text = match codec.encode(value) {
        Ok(t) => t,
        Err(EncodeFailure::Unavailable(r)) => return Err(("unavailable", r)),
        Err(EncodeFailure::Failed(e)) => return Err(("encode-failed", e)),
    };
    let back = codec
        .decode(&text)
        .map_err(|e| ("decode-failed", e.replace('\n', " ")))?;
    match first_difference(value, &back) {
        None => Ok(text),
        Some(d) => Err(("lossy", d)),
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
    let mut tokens = [0usize; 2];
    for doc in &dataset.docs {
        match round_trip(codec, &doc.value) {
            Ok(text) => {
                bytes += text.len();
                let c = tok.count(&text);
                tokens[0] += c[0];
                tokens[1] += c[1];
            }
            Err(("unavailable", reason)) => return Outcome::Unavailable(reason),
            Err((kind, detail)) => {
                return Outcome::Excluded {
                    kind,
                    doc: doc.label.clone(),
                    detail,
                };
            }
        }
    }
    Outcome::Counted { bytes, tokens }
}
