//! Scalars: type inference of plain text (SPEC.md rules 6–7), quoted strings with JSON escapes
//! (rule 8), number text (rule 6) and the quoting decisions of the encoder (rule 12).

use crate::error::ErrorCode;
use serde_json::{Number, Value};

/// An error inside one line, at a byte offset relative to the text that was being read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LocalError {
    pub code: ErrorCode,
    pub offset: usize,
    pub message: String,
}

impl LocalError {
    pub(crate) fn new(code: ErrorCode, offset: usize, message: impl Into<String>) -> LocalError {
        LocalError {
            code,
            offset,
            message: message.into(),
        }
    }
}

/// True when `s` is a JSON number literal: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
/// (rule 6). Only these plain scalars are numbers; `007`, `+1`, `.5`, `1.` stay strings.
pub(crate) fn is_json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if b.first() == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    i == b.len()
}

/// The value of a JSON number literal (rule 6), as `serde_json::from_str` would give it: an
/// integer when it fits u64/i64, `-0` as the float -0.0, anything else the nearest f64
/// (correctly rounded). `None` when the literal overflows f64.
pub(crate) fn parse_number(s: &str) -> Option<Number> {
    let integral = !s.contains(['.', 'e', 'E']);
    if integral {
        if s == "-0" {
            return Number::from_f64(-0.0);
        }
        if let Some(neg) = s.strip_prefix('-') {
            if neg.parse::<u64>().is_ok()
                && let Ok(i) = s.parse::<i64>()
            {
                return Some(Number::from(i));
            }
        } else if let Ok(u) = s.parse::<u64>() {
            return Some(Number::from(u));
        }
    }
    s.parse::<f64>().ok().and_then(Number::from_f64)
}

/// The text of a number (rule 6): integers in decimal; floats with the shortest digits that
/// read back to the same f64, positional when `1e-4 <= |x| < 1e16` (always with a fraction,
/// `1.0`), otherwise `d[.ddd]e[-]N` (`1e21`, `1.5e-7`). Zero is `0.0` or `-0.0`.
pub(crate) fn format_number(n: &Number) -> String {
    if let Some(u) = n.as_u64() {
        u.to_string()
    } else if let Some(i) = n.as_i64() {
        i.to_string()
    } else {
        format_f64(n.as_f64().unwrap_or(0.0))
    }
}

/// See [`format_number`].
pub(crate) fn format_f64(f: f64) -> String {
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0.0");
    }
    // `{:e}` gives the shortest round-trip digits as `d[.ddd]e<k>`.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let k: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..16).contains(&k) {
        let mut out = String::from(sign);
        if k >= 0 {
            let k = k as usize;
            let int_len = k + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.push_str(&"0".repeat(int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.push_str(&"0".repeat((-k - 1) as usize));
            out.push_str(&digits);
        }
        out
    } else {
        let (first, rest) = digits.split_at(1);
        if rest.is_empty() {
            format!("{sign}{first}e{k}")
        } else {
            format!("{sign}{first}.{rest}e{k}")
        }
    }
}

/// Reads a quoted string starting at `s[start] == '"'` (rule 8). Returns the string and the
/// byte offset just past the closing quote.
pub(crate) fn parse_quoted(s: &str, start: usize) -> Result<(String, usize), LocalError> {
    let mut out = String::new();
    let mut chars = s[start + 1..].char_indices().peekable();
    let base = start + 1;
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((out, base + i + 1)),
            '\\' => {
                let Some((_, e)) = chars.next() else {
                    return Err(LocalError::new(
                        ErrorCode::UnterminatedQuote,
                        start,
                        "expected a closing `\"` before the end of the line",
                    ));
                };
                match e {
                    '"' => out.push('"'),
                    '\\' => out.push('\\'),
                    '/' => out.push('/'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'n' => out.push('\n'),
                    'r' => out.push('\r'),
                    't' => out.push('\t'),
                    'u' => {
                        let hi = hex4(s, base + i + 2)?;
                        let code = if (0xD800..0xDC00).contains(&hi) {
                            let lo_at = base + i + 6;
                            if !s[lo_at..].starts_with("\\u") {
                                return Err(LocalError::new(
                                    ErrorCode::BadEscape,
                                    base + i,
                                    "expected `\\u` with a low surrogate after a high surrogate",
                                ));
                            }
                            let lo = hex4(s, lo_at + 2)?;
                            if !(0xDC00..0xE000).contains(&lo) {
                                return Err(LocalError::new(
                                    ErrorCode::BadEscape,
                                    lo_at,
                                    "expected a low surrogate (\\udc00-\\udfff)",
                                ));
                            }
                            for _ in 0..10 {
                                chars.next();
                            }
                            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                        } else if (0xDC00..0xE000).contains(&hi) {
                            return Err(LocalError::new(
                                ErrorCode::BadEscape,
                                base + i,
                                "a low surrogate without a high surrogate before it",
                            ));
                        } else {
                            for _ in 0..4 {
                                chars.next();
                            }
                            hi
                        };
                        out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                    }
                    other => {
                        return Err(LocalError::new(
                            ErrorCode::BadEscape,
                            base + i,
                            format!(
                                "unknown escape `\\{other}`; expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX"
                            ),
                        ));
                    }
                }
            }
            c => out.push(c),
        }
    }
    Err(LocalError::new(
        ErrorCode::UnterminatedQuote,
        start,
        "expected a closing `\"` before the end of the line",
    ))
}

fn hex4(s: &str, at: usize) -> Result<u32, LocalError> {
    let h = s
        .get(at..at + 4)
        .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    match h {
        Some(h) => Ok(u32::from_str_radix(h, 16).unwrap_or(0)),
        None => Err(LocalError::new(
            ErrorCode::BadEscape,
            at.saturating_sub(2),
            "expected 4 hex digits after `\\u`",
        )),
    }
}

/// Appends `s` as a quoted string (rule 8): `"` and `\` escaped, `\n \r \t \b \f` short
/// escapes, every other control character (C0, DEL, C1) and U+2028, U+2029, U+FEFF as
/// lowercase `\uXXXX`; everything else as itself.
pub(crate) fn write_quoted(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if needs_escape(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

/// True when `s` looks like a number to any common reader (rule 12.2), so the encoder quotes
/// it: `[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?`, or `nan`/`inf`/`infinity` with an optional
/// sign, in any case. Broader than [`is_json_number`] on purpose (`007`, `+1`, `.5`, `1.`).
pub(crate) fn looks_numeric(s: &str) -> bool {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let lower = unsigned.to_ascii_lowercase();
    if matches!(lower.as_str(), "nan" | "inf" | "infinity") {
        return true;
    }
    let b = unsigned.as_bytes();
    let mut i = 0;
    let int_start = i;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let s2 = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        frac_digits = i - s2;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let s3 = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == s3 {
            return false;
        }
    }
    i == b.len()
}

/// True when `s` is a block scalar header `|`, `|-`, `|+`, `>`, `>-`, `>+` (rule 10).
pub(crate) fn is_block_header(s: &str) -> bool {
    matches!(s, "|" | "|-" | "|+" | ">" | ">-" | ">+")
}

fn has_unsafe_char(s: &str) -> bool {
    s.chars().any(needs_escape)
}

fn edge_whitespace(s: &str) -> bool {
    s.starts_with(char::is_whitespace) || s.ends_with(char::is_whitespace)
}

/// Whether the encoder must quote the string value `s` (rule 12.2): everything that would read
/// back as something else, or that readers of the seed could misread.
pub(crate) fn value_needs_quotes(s: &str) -> bool {
    s.is_empty()
        || edge_whitespace(s)
        || has_unsafe_char(s)
        || matches!(s.to_ascii_lowercase().as_str(), "true" | "false" | "null")
        || looks_numeric(s)
        || s.contains(", ")
        || s.contains(": ")
        || s.ends_with(':')
        || s.starts_with(['"', '[', '{', '#'])
        || s.starts_with("- ")
        || s == "-"
        || is_block_header(s)
}

/// Whether the encoder must quote the key `k` (rule 12.3).
pub(crate) fn key_needs_quotes(k: &str) -> bool {
    k.is_empty()
        || edge_whitespace(k)
        || has_unsafe_char(k)
        || k.contains(": ")
        || k.ends_with(':')
        || k.contains('"')
        || k.starts_with(['#', '[', '{'])
        || k.starts_with("- ")
        || k == "-"
}

/// The value of a plain (unquoted) scalar (rule 7): `true`, `false`, `null`, a JSON number
/// literal, or else the text itself. In strict mode an overflowing number is an error; the
/// lenient reader keeps it as a string.
pub(crate) fn infer_plain(s: &str, strict: bool) -> Result<Value, LocalError> {
    Ok(match s {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" => Value::Null,
        _ if is_json_number(s) => match parse_number(s) {
            Some(n) => Value::Number(n),
            None if strict => {
                return Err(LocalError::new(
                    ErrorCode::NumberOutOfRange,
                    0,
                    format!(
                        "number {s} is outside the range of a 64-bit float; quote it to keep it as text"
                    ),
                ));
            }
            None => Value::String(s.to_owned()),
        },
        _ => Value::String(s.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_text_matches_rust_debug_shortest_form() {
        for f in [
            1.0,
            0.95,
            2.71,
            1e21,
            1e16,
            9999999999999998.0,
            1e-4,
            1e-5,
            1.5e-7,
            123456.789,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            0.1,
            100.0,
            2.5e15,
        ] {
            assert_eq!(format_f64(f), format!("{f:?}"), "{f}");
            assert_eq!(format_f64(-f), format!("{:?}", -f), "{f}");
            assert_eq!(format_f64(f).parse::<f64>().unwrap(), f);
        }
        assert_eq!(format_f64(-0.0), "-0.0");
        assert_eq!(format_f64(1e21), "1e21");
    }

    #[test]
    fn number_grammar() {
        for s in [
            "0",
            "-0",
            "1",
            "-1",
            "1.5",
            "1e5",
            "1E+5",
            "-0.0e-0",
            "12345678901234567890123",
        ] {
            assert!(is_json_number(s), "{s}");
        }
        for s in [
            "", "-", "007", "+1", ".5", "1.", "1e", "0x10", "1_000", "NaN", "- 1",
        ] {
            assert!(!is_json_number(s), "{s}");
        }
        assert_eq!(parse_number("-0").unwrap().as_f64(), Some(-0.0));
        assert!(
            parse_number("-0")
                .unwrap()
                .as_f64()
                .unwrap()
                .is_sign_negative()
        );
        assert_eq!(
            parse_number("18446744073709551615").unwrap().as_u64(),
            Some(u64::MAX)
        );
        assert_eq!(
            parse_number("-9223372036854775808").unwrap().as_i64(),
            Some(i64::MIN)
        );
        assert!(parse_number("18446744073709551616").unwrap().is_f64());
        assert!(parse_number("1e400").is_none());
    }

    #[test]
    fn quoted_strings() {
        let (s, end) = parse_quoted(r#""a\"b\u00e9\ud83d\ude00" x"#, 0).unwrap();
        assert_eq!(s, "a\"bé😀");
        assert_eq!(end, 24);
        assert_eq!(
            parse_quoted(r#""\q""#, 0).unwrap_err().code,
            ErrorCode::BadEscape
        );
        assert_eq!(
            parse_quoted(r#""\ud800""#, 0).unwrap_err().code,
            ErrorCode::BadEscape
        );
        assert_eq!(
            parse_quoted(r#""\udc00""#, 0).unwrap_err().code,
            ErrorCode::BadEscape
        );
        assert_eq!(
            parse_quoted(r#""\u12""#, 0).unwrap_err().code,
            ErrorCode::BadEscape
        );
        assert_eq!(
            parse_quoted(r#""abc"#, 0).unwrap_err().code,
            ErrorCode::UnterminatedQuote
        );
        let mut out = String::new();
        write_quoted("a\"\\\n\u{1}\u{7f}é", &mut out);
        assert_eq!(out, r#""a\"\\\n\u0001\u007fé""#);
    }
}
