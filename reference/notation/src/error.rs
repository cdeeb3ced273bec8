//! Decode and encode errors (SPEC.md rule 11). Every decode error carries a 1-based line and
//! column (in characters) and says what was expected there.

use std::fmt;

/// The class of a decode error; its [`ErrorCode::as_str`] is the code used by the vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorCode {
    /// Indentation that matches no open block, or not exactly 2 deeper (strict) (rule 3).
    BadIndent,
    /// A tab in the indentation of a structural line (rule 3).
    TabIndent,
    /// A key repeated in one object, in strict mode (rule 5).
    DuplicateKey,
    /// A quoted string without its closing `"` on the same line (rule 8).
    UnterminatedQuote,
    /// An unknown `\` escape, a bad `\u` sequence or a lone surrogate (rule 8).
    BadEscape,
    /// `- ` items and `key:` entries at the same level of one block (rule 4).
    MixedBlock,
    /// A line in an object block that is not `key: value` / `key:` (rule 5).
    ExpectedKey,
    /// A line in a list block that is not a `- ` item (rule 9).
    ExpectedItem,
    /// `key:` or `-` with no value and no indented block below, in strict mode (rule 5).
    MissingValue,
    /// `[` without the closing `]` at the end of the value (rule 9).
    UnterminatedBracket,
    /// An empty item in an inline array (`a, , b`), in strict mode (rule 9).
    EmptyItem,
    /// Text after a closing quote that is neither `, ` nor the end of the value (rule 8).
    TrailingCharacters,
    /// A plain scalar that starts with `[`, `{` (other than `{}`) or is otherwise reserved (rule 7).
    ReservedScalar,
    /// A number literal whose value is not a finite f64 (rule 6).
    NumberOutOfRange,
    /// A raw control character in strict mode (rule 2).
    InvalidCharacter,
    /// More than one line in a scalar document (rule 10).
    TrailingContent,
    /// No value at all (only blank and comment lines) in strict mode (rule 10).
    EmptyDocument,
    /// Containers nested deeper than [`crate::DecodeOptions::max_depth`] (rule 11).
    DepthLimit,
}

impl ErrorCode {
    /// The stable upper-case code (vectors/kinds/notation.md).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadIndent => "BAD_INDENT",
            ErrorCode::TabIndent => "TAB_INDENT",
            ErrorCode::DuplicateKey => "DUPLICATE_KEY",
            ErrorCode::UnterminatedQuote => "UNTERMINATED_QUOTE",
            ErrorCode::BadEscape => "BAD_ESCAPE",
            ErrorCode::MixedBlock => "MIXED_BLOCK",
            ErrorCode::ExpectedKey => "EXPECTED_KEY",
            ErrorCode::ExpectedItem => "EXPECTED_ITEM",
            ErrorCode::MissingValue => "MISSING_VALUE",
            ErrorCode::UnterminatedBracket => "UNTERMINATED_BRACKET",
            ErrorCode::EmptyItem => "EMPTY_ITEM",
            ErrorCode::TrailingCharacters => "TRAILING_CHARACTERS",
            ErrorCode::ReservedScalar => "RESERVED_SCALAR",
            ErrorCode::NumberOutOfRange => "NUMBER_OUT_OF_RANGE",
            ErrorCode::InvalidCharacter => "INVALID_CHARACTER",
            ErrorCode::TrailingContent => "TRAILING_CONTENT",
            ErrorCode::EmptyDocument => "EMPTY_DOCUMENT",
            ErrorCode::DepthLimit => "DEPTH_LIMIT",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a text could not be decoded, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// What kind of error.
    pub code: ErrorCode,
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, counted in Unicode scalar values.
    pub column: usize,
    /// What was found and what was expected instead.
    pub message: String,
}

impl DecodeError {
    pub(crate) fn new(
        code: ErrorCode,
        line: usize,
        column: usize,
        message: impl Into<String>,
    ) -> DecodeError {
        DecodeError {
            code,
            line,
            column,
            message: message.into(),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at line {}, column {}: {}",
            self.code, self.line, self.column, self.message
        )
    }
}

impl std::error::Error for DecodeError {}

/// Why a value could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeError {
    /// Containers nested deeper than [`crate::MAX_DEPTH`]: the text would not decode (rule 11).
    TooDeep {
        /// The limit that was exceeded.
        limit: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::TooDeep { limit } => {
                write!(f, "value nests containers deeper than {limit} levels")
            }
        }
    }
}

impl std::error::Error for EncodeError {}
