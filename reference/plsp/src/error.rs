//! Parse errors of state blocks: a stable code, the byte offset where parsing stopped, and
//! what was expected there (GRAMMAR.md, "Errors").

use std::fmt;

/// Why a block did not parse. Codes are stable (vectors name them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ParseCode {
    /// The bytes are not UTF-8.
    InvalidUtf8,
    /// The input is longer than the parser's limit.
    BlockTooLarge,
    /// No `S{` where the block must start.
    ExpectedBlockStart,
    /// The input ended (or a lone `}` appeared) before `}S`.
    UnterminatedBlock,
    /// Something other than whitespace after `}S`.
    TrailingContent,
    /// A statement must start with `$`, `>` or `!`.
    ExpectedStatement,
    /// `;` with no statement before it (`S{;}S`, `;;`).
    EmptyStatement,
    /// `#`: the spec forbids comments (§4.2).
    CommentNotAllowed,
    /// `$` not followed by `[A-Za-z]`.
    BadIdentifier,
    /// An assignment without `:` after the name.
    ExpectedColon,
    /// No value where one is required.
    ExpectedValue,
    /// A string with no closing `"`.
    UnterminatedString,
    /// A malformed number (`1.`, `-`, `12ab`, `1.2.3`).
    BadNumber,
    /// After a statement: neither `;`, `,` (in a list) nor `}S`.
    ExpectedSeparator,
    /// `!` not followed by an action name.
    BadActionName,
    /// A variable assigned twice in one block.
    DuplicateVariable,
}

impl ParseCode {
    /// The stable code text.
    pub fn as_str(self) -> &'static str {
        match self {
            ParseCode::InvalidUtf8 => "INVALID_UTF8",
            ParseCode::BlockTooLarge => "BLOCK_TOO_LARGE",
            ParseCode::ExpectedBlockStart => "EXPECTED_BLOCK_START",
            ParseCode::UnterminatedBlock => "UNTERMINATED_BLOCK",
            ParseCode::TrailingContent => "TRAILING_CONTENT",
            ParseCode::ExpectedStatement => "EXPECTED_STATEMENT",
            ParseCode::EmptyStatement => "EMPTY_STATEMENT",
            ParseCode::CommentNotAllowed => "COMMENT_NOT_ALLOWED",
            ParseCode::BadIdentifier => "BAD_IDENTIFIER",
            ParseCode::ExpectedColon => "EXPECTED_COLON",
            ParseCode::ExpectedValue => "EXPECTED_VALUE",
            ParseCode::UnterminatedString => "UNTERMINATED_STRING",
            ParseCode::BadNumber => "BAD_NUMBER",
            ParseCode::ExpectedSeparator => "EXPECTED_SEPARATOR",
            ParseCode::BadActionName => "BAD_ACTION_NAME",
            ParseCode::DuplicateVariable => "DUPLICATE_VARIABLE",
        }
    }

    /// Every code, for schemas and docs.
    pub const ALL: [ParseCode; 16] = [
        ParseCode::InvalidUtf8,
        ParseCode::BlockTooLarge,
        ParseCode::ExpectedBlockStart,
        ParseCode::UnterminatedBlock,
        ParseCode::TrailingContent,
        ParseCode::ExpectedStatement,
        ParseCode::EmptyStatement,
        ParseCode::CommentNotAllowed,
        ParseCode::BadIdentifier,
        ParseCode::ExpectedColon,
        ParseCode::ExpectedValue,
        ParseCode::UnterminatedString,
        ParseCode::BadNumber,
        ParseCode::ExpectedSeparator,
        ParseCode::BadActionName,
        ParseCode::DuplicateVariable,
    ];
}

/// A parse error: code, byte offset into the input, and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The stable code.
    pub code: ParseCode,
    /// Byte offset (0-based) where the problem was found.
    pub offset: usize,
    /// What the parser expected at `offset`.
    pub expected: &'static str,
    /// What it found (a short, printable description).
    pub found: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at byte {}: expected {}, found {}",
            self.code.as_str(),
            self.offset,
            self.expected,
            self.found
        )
    }
}

impl std::error::Error for ParseError {}
