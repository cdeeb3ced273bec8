//! Canonical JSON per RFC 8785 (JCS), as v1.1 §7.2 requires for everything that is signed.
//!
//! Two halves:
//! * [`parse_strict`] reads JSON text the way a signature verifier must: RFC 8259 grammar,
//!   I-JSON restrictions (RFC 7493: no duplicate member names, no lone surrogates, numbers
//!   that fit an IEEE 754 double), and a nesting limit so hostile input cannot exhaust the stack.
//! * [`to_canonical_string`] writes a value in canonical form: members sorted by UTF-16 code
//!   units (RFC 8785 §3.2.3), no insignificant whitespace, minimal string escaping
//!   (§3.2.2.2) and ECMAScript number formatting (§3.2.2.3).
//!
//! Values are `serde_json::Value`s; because a Rust string cannot hold a lone surrogate and a
//! `serde_json::Number` cannot hold NaN or infinity, canonicalizing a `Value` cannot fail —
//! every rejection happens while parsing.

use serde_json::{Map, Number, Value};
use std::fmt;

/// Deepest nesting of arrays and objects [`parse_strict`] accepts.
pub const MAX_DEPTH: usize = 128;

/// What made JSON text unacceptable for canonicalization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonErrorKind {
    /// The bytes are not UTF-8.
    InvalidUtf8,
    /// The text breaks the RFC 8259 grammar; says what was expected.
    Syntax(&'static str),
    /// An object repeats a member name (RFC 8785 §3.1, RFC 7493 §2.3).
    DuplicateKey(String),
    /// A `\uD800`-`\uDFFF` escape without its partner (v1.1 §7.2, RFC 8785 §3.2.2.2).
    LoneSurrogate,
    /// A number that is not a finite IEEE 754 double (RFC 8785 §3.2.2.3).
    NonFiniteNumber,
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// A rejection with the byte offset where it was detected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// Byte offset into the input.
    pub offset: usize,
    /// What went wrong.
    pub kind: JsonErrorKind,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            JsonErrorKind::InvalidUtf8 => {
                write!(f, "byte {}: input is not valid UTF-8", self.offset)
            }
            JsonErrorKind::Syntax(what) => write!(f, "byte {}: expected {what}", self.offset),
            JsonErrorKind::DuplicateKey(k) => {
                write!(
                    f,
                    "byte {}: duplicate member name {k:?} (RFC 8785 §3.1)",
                    self.offset
                )
            }
            JsonErrorKind::LoneSurrogate => write!(
                f,
                "byte {}: lone surrogate code point (v1.1 §7.2, RFC 8785 §3.2.2.2)",
                self.offset
            ),
            JsonErrorKind::NonFiniteNumber => write!(
                f,
                "byte {}: number is not a finite IEEE 754 double (RFC 8785 §3.2.2.3)",
                self.offset
            ),
            JsonErrorKind::TooDeep => {
                write!(
                    f,
                    "byte {}: nesting deeper than {MAX_DEPTH} levels",
                    self.offset
                )
            }
        }
    }
}

impl std::error::Error for JsonError {}

/// Parses JSON text strictly (see the module docs).
pub fn parse_strict(text: &str) -> Result<Value, JsonError> {
    let mut p = Parser {
        b: text.as_bytes(),
        s: text,
        i: 0,
    };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != p.b.len() {
        return Err(p.err(JsonErrorKind::Syntax(
            "end of input after the top-level value",
        )));
    }
    Ok(v)
}

/// Parses JSON bytes strictly, rejecting invalid UTF-8 with the offset of the first bad byte.
pub fn parse_strict_bytes(bytes: &[u8]) -> Result<Value, JsonError> {
    let text = std::str::from_utf8(bytes).map_err(|e| JsonError {
        offset: e.valid_up_to(),
        kind: JsonErrorKind::InvalidUtf8,
    })?;
    parse_strict(text)
}

/// Parses JSON text strictly and returns its canonical form.
pub fn canonicalize_str(text: &str) -> Result<String, JsonError> {
    parse_strict(text).map(|v| to_canonical_string(&v))
}

struct Parser<'a> {
    b: &'a [u8],
    s: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn err(&self, kind: JsonErrorKind) -> JsonError {
        JsonError {
            offset: self.i,
            kind,
        }
    }

    fn syntax<T>(&self, what: &'static str) -> Result<T, JsonError> {
        Err(self.err(JsonErrorKind::Syntax(what)))
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, JsonError> {
        match self.b.get(self.i) {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.syntax("a JSON value"),
        }
    }

    fn literal(&mut self, word: &'static str, v: Value) -> Result<Value, JsonError> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            self.syntax("true, false or null")
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.err(JsonErrorKind::TooDeep));
        }
        self.i += 1;
        let mut map = Map::new();
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return self.syntax("a member name string");
            }
            let key_at = self.i;
            let key = self.string()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return self.syntax("':' after a member name");
            }
            self.i += 1;
            self.ws();
            let v = self.value(depth)?;
            match map.entry(key) {
                serde_json::map::Entry::Vacant(slot) => {
                    slot.insert(v);
                }
                serde_json::map::Entry::Occupied(dup) => {
                    let kind = JsonErrorKind::DuplicateKey(dup.key().clone());
                    return Err(JsonError {
                        offset: key_at,
                        kind,
                    });
                }
            }
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(map));
                }
                _ => return self.syntax("',' or '}' in an object"),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.err(JsonErrorKind::TooDeep));
        }
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth)?);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Array(items));
                }
                _ => return self.syntax("',' or ']' in an array"),
            }
        }
    }

    fn hex4(&mut self) -> Result<u16, JsonError> {
        let Some(h) = self.b.get(self.i..self.i + 4) else {
            return self.syntax("four hex digits after \\u");
        };
        let mut v = 0u16;
        for &c in h {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => return self.syntax("four hex digits after \\u"),
            };
            v = v * 16 + u16::from(d);
        }
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.i += 1; // opening quote
        let mut out = String::new();
        loop {
            let start = self.i;
            while let Some(&c) = self.b.get(self.i) {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            // The input is a &str and we stopped on ASCII bytes, so this slice is valid UTF-8.
            out.push_str(&self.s[start..self.i]);
            match self.b.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let esc_at = self.i;
                    self.i += 1;
                    let Some(&e) = self.b.get(self.i) else {
                        return self.syntax("an escape character after '\\'");
                    };
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = match hi {
                                0xD800..=0xDBFF => {
                                    if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                                        return Err(JsonError {
                                            offset: esc_at,
                                            kind: JsonErrorKind::LoneSurrogate,
                                        });
                                    }
                                    self.i += 2;
                                    let lo = self.hex4()?;
                                    if !(0xDC00..=0xDFFF).contains(&lo) {
                                        return Err(JsonError {
                                            offset: esc_at,
                                            kind: JsonErrorKind::LoneSurrogate,
                                        });
                                    }
                                    0x10000
                                        + ((u32::from(hi) - 0xD800) << 10)
                                        + (u32::from(lo) - 0xDC00)
                                }
                                0xDC00..=0xDFFF => {
                                    return Err(JsonError {
                                        offset: esc_at,
                                        kind: JsonErrorKind::LoneSurrogate,
                                    });
                                }
                                _ => u32::from(hi),
                            };
                            // Surrogates were excluded above, so this is a scalar value.
                            out.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                        }
                        _ => {
                            self.i = esc_at;
                            return self.syntax(
                                "a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)",
                            );
                        }
                    }
                }
                Some(_) => return self.syntax("control characters in strings to be escaped"),
                None => return self.syntax("a closing '\"'"),
            }
        }
    }

    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.i;
        if self.b[self.i] == b'-' {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                while let Some(b'0'..=b'9') = self.b.get(self.i) {
                    self.i += 1;
                }
            }
            _ => return self.syntax("a digit"),
        }
        let mut integral = true;
        if self.b.get(self.i) == Some(&b'.') {
            integral = false;
            self.i += 1;
            if !matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                return self.syntax("a digit after '.'");
            }
            while let Some(b'0'..=b'9') = self.b.get(self.i) {
                self.i += 1;
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            integral = false;
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            if !matches!(self.b.get(self.i), Some(b'0'..=b'9')) {
                return self.syntax("a digit in the exponent");
            }
            while let Some(b'0'..=b'9') = self.b.get(self.i) {
                self.i += 1;
            }
        }
        let text = &self.s[start..self.i];
        if integral {
            if let Ok(u) = text.parse::<u64>() {
                return Ok(Value::Number(u.into()));
            }
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Value::Number(i.into()));
            }
        }
        let f: f64 = text.parse().map_err(|_| JsonError {
            offset: start,
            kind: JsonErrorKind::Syntax("a number"),
        })?;
        Number::from_f64(f)
            .filter(|_| f.is_finite())
            .map(Value::Number)
            .ok_or(JsonError {
                offset: start,
                kind: JsonErrorKind::NonFiniteNumber,
            })
    }
}

/// Writes `v` in RFC 8785 canonical form.
pub fn to_canonical_string(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, &[]);
    out
}

/// Writes `v` in RFC 8785 canonical form, as UTF-8 bytes.
pub fn to_canonical_bytes(v: &Value) -> Vec<u8> {
    to_canonical_string(v).into_bytes()
}

/// The canonical form of an object without some of its top-level members (the signed form
/// of an envelope, link or token), written without copying the object. `None` if `v` is
/// not an object.
pub fn to_canonical_bytes_without(v: &Value, excluded: &[&str]) -> Option<Vec<u8>> {
    v.is_object().then(|| {
        let mut out = String::with_capacity(1024);
        write_value(&mut out, v, excluded);
        out.into_bytes()
    })
}

/// Two canonical forms of an object in one pass: without the top-level members `excluded`,
/// and without those and `also` (an envelope's stored form and its signed form, §7.2).
/// RFC 8785 writes each member on its own, so the second is the first with `also` and its
/// separating comma cut out. `None` if `v` is not an object.
pub fn to_canonical_bytes_without_and(
    v: &Value,
    excluded: &[&str],
    also: &str,
) -> Option<(Vec<u8>, Vec<u8>)> {
    let map = v.as_object()?;
    let mut out = String::with_capacity(1024);
    let cut = write_object(&mut out, map, excluded, Some(also));
    let full = out.into_bytes();
    let less = match cut {
        Some(r) => [&full[..r.start], &full[r.end..]].concat(),
        None => full.clone(),
    };
    Some((full, less))
}

/// `excluded` applies to the members of `v` itself, not to nested objects.
fn write_value(out: &mut String, v: &Value, excluded: &[&str]) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, &[]);
            }
            out.push(']');
        }
        Value::Object(map) => {
            write_object(out, map, excluded, None);
        }
    }
}

/// Writes an object without its members `excluded`; returns the byte range of member
/// `mark` together with the comma that separates it from a neighbour (the one before it,
/// or for the first member the one after it), so that cutting the range out leaves the
/// canonical form without `mark`.
fn write_object(
    out: &mut String,
    map: &serde_json::Map<String, Value>,
    excluded: &[&str],
    mark: Option<&str>,
) -> Option<std::ops::Range<usize>> {
    let mut members: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(k, _)| !excluded.contains(&k.as_str()))
        .collect();
    // Code-point order first (cheap, and already true for a BTreeMap, but never
    // assumed: `serde_json/preserve_order` would make maps insertion-ordered). UTF-16
    // order differs from it only between a supplementary character and one in
    // U+E000..=U+FFFF, so the UTF-16 sort runs only when a key holds such a character.
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    if members
        .iter()
        .any(|(k, _)| k.chars().any(|c| c >= '\u{e000}'))
    {
        members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    }
    let count = members.len();
    let mut cut = None;
    out.push('{');
    for (i, (k, val)) in members.into_iter().enumerate() {
        let start = out.len();
        if i > 0 {
            out.push(',');
        }
        write_string(out, k);
        out.push(':');
        write_value(out, val, &[]);
        if mark == Some(k.as_str()) {
            let comma_after = usize::from(i == 0 && count > 1);
            cut = Some(start..out.len() + comma_after);
        }
    }
    out.push('}');
    cut
}

/// Largest magnitude below which every integer is exactly a double (2^53).
const EXACT_INT: u64 = 1 << 53;

/// JSON numbers are IEEE 754 doubles under JCS; integers beyond 2^53 round as JavaScript
/// does. Exact integers print as themselves, which is what ECMAScript produces for them.
fn write_number(out: &mut String, n: &Number) {
    use std::fmt::Write as _;
    if let Some(u) = n.as_u64().filter(|u| *u <= EXACT_INT) {
        let _ = write!(out, "{u}");
    } else if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= EXACT_INT) {
        let _ = write!(out, "{i}");
    } else {
        let f = n
            .as_u64()
            .map(|u| u as f64)
            .or_else(|| n.as_i64().map(|i| i as f64))
            .or_else(|| n.as_f64());
        out.push_str(&format_number(f.unwrap_or(0.0)));
    }
}

/// RFC 8785 §3.2.2.2: escape only `"`, `\` and C0 controls, with the short forms where JSON
/// has them and lowercase `\u00xx` otherwise; everything else is written as UTF-8.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => continue,
        };
        // Escaped bytes are ASCII, so `run..i` and `i + 1..` fall on character boundaries.
        out.push_str(&s[run..i]);
        if esc.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
            out.push(char::from(b"0123456789abcdef"[usize::from(b & 0xf)]));
        } else {
            out.push_str(esc);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// Formats a finite double as ECMAScript's `Number.prototype.toString` does
/// (ECMA-262 Number::toString, which RFC 8785 §3.2.2.3 adopts): shortest round-trip digits,
/// plain notation for decimal exponents in [-6, 21), exponent notation outside.
pub fn format_number(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        // -0 serializes as 0; non-finite values never reach here (see module docs).
        return "0".to_owned();
    }
    if v < 0.0 {
        return format!("-{}", format_number(-v));
    }
    // Rust's `{:e}` gives the shortest digits that round-trip, as ECMA-262 requires, and the
    // closest of them; only an exact tie between two needs correcting (see `even_on_tie`).
    let sci = format!("{v:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let digits = even_on_tie(v, e, digits);
    let k = digits.len() as i32;
    let n = e + 1;
    if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        format!("{int}.{frac}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let (first, rest) = digits.split_at(1);
        let sign = if n > 0 { '+' } else { '-' };
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        format!("{first}{frac}e{sign}{}", (n - 1).abs())
    }
}

/// ECMA-262 Number::toString (step 5) takes, among the shortest digit strings `n` whose
/// value rounds to `v`, the one closest to `v`, and "if there are two such possible values
/// of n, choose the one that is even". Rust's shortest formatting breaks that exact tie
/// upward (0x43143ff3c1cb0959 = 1424953923781206.25 prints as `…206.3`, where RFC 8785
/// Appendix B requires `…206.2`), so when `v` lies exactly halfway between two k-digit
/// candidates this returns the even one. `digits` (k digits, first at 10^`e`) is Rust's
/// choice; `v` is positive and finite.
fn even_on_tie(v: f64, e: i32, digits: String) -> String {
    let k = digits.len();
    if k >= 18 {
        return digits;
    }
    // One more digit, correctly rounded: a tie shows as a trailing 5 at the same exponent.
    let longer = format!("{v:.k$e}");
    let (m, x) = longer.split_once('e').unwrap_or((&longer, "0"));
    let wide: String = m.chars().filter(|c| *c != '.').collect();
    let (Ok(d), true) = (
        wide.parse::<u64>(),
        x == e.to_string() && wide.ends_with('5'),
    ) else {
        return digits;
    };
    let p = e - k as i32; // the exponent of `wide`'s last digit
    if !equals_decimal(v, d, p) {
        return digits;
    }
    let lower = d / 10;
    let even = if lower % 2 == 0 { lower } else { lower + 1 };
    let candidate = even.to_string();
    // Both neighbours must round-trip for there to be a choice at all.
    let round_trips = format!("{candidate}e{}", p + 1).parse::<f64>() == Ok(v);
    if candidate.len() == k && round_trips {
        candidate.trim_end_matches('0').to_owned()
    } else {
        digits
    }
}

/// Whether `v` (positive, finite) equals `d`·10^`p` exactly.
fn equals_decimal(v: f64, d: u64, p: i32) -> bool {
    let bits = v.to_bits();
    let (mut m, mut q) = match (bits >> 52) as i32 {
        0 => (bits & ((1 << 52) - 1), -1074),
        be => ((bits & ((1 << 52) - 1)) | (1 << 52), be - 1075),
    };
    let (mut d, mut p2) = (u128::from(d), p);
    if m == 0 || d == 0 {
        return false;
    }
    let tz = m.trailing_zeros();
    m >>= tz;
    q += tz as i32;
    let tz = d.trailing_zeros();
    d >>= tz;
    p2 += tz as i32; // d·10^p = d'·2^(p + tz)·5^p
    // m·2^q == d'·5^p·2^p2 with m and d' odd: the powers of two and the odd parts must agree.
    if q != p2 {
        return false;
    }
    let five = 5u128.checked_pow(p.unsigned_abs());
    match five {
        Some(f) if p >= 0 => d.checked_mul(f) == Some(u128::from(m)),
        Some(f) => u128::from(m).checked_mul(f) == Some(d),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        canonicalize_str(s).unwrap()
    }

    #[test]
    fn numbers_follow_ecmascript() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-1.5, "-1.5"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789012345680000.0, "123456789012345680000"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (0.1, "0.1"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (9007199254740992.0, "9007199254740992"),
            (333333333.3333333, "333333333.3333333"),
            (4.35, "4.35"),
            (0.000001234, "0.000001234"),
            // RFC 8785 Appendix B: 1424953923781206.25 is a tie between …206.2 and …206.3.
            (f64::from_bits(0x4314_3ff3_c1cb_0959), "1424953923781206.2"),
            (0.5, "0.5"),
            (2.5, "2.5"),
            (2251799813685248.5, "2251799813685248.5"),
        ];
        for (v, want) in cases {
            assert_eq!(format_number(*v), *want, "{v:e}");
        }
    }

    #[test]
    fn integers_beyond_2_pow_53_round_like_a_double() {
        assert_eq!(canon("9007199254740993"), "9007199254740992");
        assert_eq!(canon("9007199254740991"), "9007199254740991");
        assert_eq!(canon("-9007199254740993"), "-9007199254740992");
        assert_eq!(canon("18446744073709551616"), "18446744073709552000");
        assert_eq!(canon("-0"), "0");
        assert_eq!(canon("-0.0"), "0");
        assert_eq!(canon("1E2"), "100");
        assert_eq!(canon("10.50"), "10.5");
    }

    #[test]
    fn keys_sort_by_utf16_code_units_not_code_points() {
        // U+1F600 is encoded as D83D DE00 in UTF-16, which sorts before U+FB01 (FB01).
        let got = canon("{\"\u{fb01}\":1,\"\u{1f600}\":2,\"a\":3}");
        assert_eq!(got, "{\"a\":3,\"\u{1f600}\":2,\"\u{fb01}\":1}");
    }

    #[test]
    fn exclusion_applies_to_top_level_members_only() {
        let v = parse_strict(r#"{"meta":1,"a":{"meta":2,"signature":3},"signature":4}"#).unwrap();
        let got = to_canonical_bytes_without(&v, &["signature", "meta"]).unwrap();
        assert_eq!(got, br#"{"a":{"meta":2,"signature":3}}"#.to_vec());
        assert_eq!(to_canonical_bytes_without(&Value::Null, &[]), None);
    }

    #[test]
    fn string_escaping_is_minimal() {
        assert_eq!(
            canon(r#""\u0041\/\u00e9\u2028\u001f\u007f""#),
            "\"A/\u{e9}\u{2028}\\u001f\u{7f}\""
        );
        assert_eq!(canon(r#""\b\f\n\r\t\"\\""#), r#""\b\f\n\r\t\"\\""#);
        assert_eq!(canon(r#""\ud83d\ude00""#), "\"\u{1f600}\"");
    }

    #[test]
    fn strictness_rejections_name_their_rule() {
        let kind = |s: &str| parse_strict(s).unwrap_err().kind;
        assert_eq!(
            kind(r#"{"a":1,"a":2}"#),
            JsonErrorKind::DuplicateKey("a".into())
        );
        assert_eq!(
            kind(r#"{"a":{"b":1,"b":1}}"#),
            JsonErrorKind::DuplicateKey("b".into())
        );
        assert_eq!(kind(r#""\ud800""#), JsonErrorKind::LoneSurrogate);
        assert_eq!(kind(r#""\udc00\ud800""#), JsonErrorKind::LoneSurrogate);
        assert_eq!(kind(r#""\ud800\u0041""#), JsonErrorKind::LoneSurrogate);
        assert_eq!(kind(r#""x\ude00""#), JsonErrorKind::LoneSurrogate);
        assert_eq!(kind("1e400"), JsonErrorKind::NonFiniteNumber);
        assert_eq!(kind("-1e309"), JsonErrorKind::NonFiniteNumber);
        assert!(matches!(kind("NaN"), JsonErrorKind::Syntax(_)));
        assert!(matches!(kind("Infinity"), JsonErrorKind::Syntax(_)));
        assert!(matches!(kind("01"), JsonErrorKind::Syntax(_)));
        assert!(matches!(kind("1."), JsonErrorKind::Syntax(_)));
        assert!(matches!(kind("+1"), JsonErrorKind::Syntax(_)));
        assert!(matches!(kind("[1,]"), JsonErrorKind::Syntax(_)));
        assert!(matches!(kind("{\"a\":1,}"), JsonErrorKind::Syntax(_)));
        assert!(matches!(kind("\"a\nb\""), JsonErrorKind::Syntax(_)));
        assert!(matches!(kind("\"\\x\""), JsonErrorKind::Syntax(_)));
        assert!(matches!(kind("[1] 2"), JsonErrorKind::Syntax(_)));
        assert!(matches!(kind(""), JsonErrorKind::Syntax(_)));
        assert!(matches!(kind("tru"), JsonErrorKind::Syntax(_)));
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(kind(&deep), JsonErrorKind::TooDeep);
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse_strict(&ok).is_ok());
        let err = parse_strict_bytes(b"[\"\xff\"]").unwrap_err();
        assert_eq!((err.offset, err.kind), (2, JsonErrorKind::InvalidUtf8));
        assert!(
            parse_strict(r#"{"a":1,"a":2}"#)
                .unwrap_err()
                .to_string()
                .contains("duplicate member name \"a\"")
        );
    }

    #[test]
    fn whitespace_and_literals() {
        assert_eq!(
            canon(" { \"b\" : [ true , false , null ] , \"a\" : { } } "),
            r#"{"a":{},"b":[true,false,null]}"#
        );
        assert_eq!(canon("[]"), "[]");
    }

    mod forms {
        use super::*;
        use proptest::prelude::*;

        /// Keys that sort around `signature` and `meta`, and keys whose UTF-16 order
        /// differs from their code-point order.
        fn key() -> impl Strategy<Value = String> {
            prop::sample::select(vec![
                "signature",
                "meta",
                "a",
                "sig",
                "signaturf",
                "z",
                "\u{e000}",
                "\u{1f600}",
            ])
            .prop_map(str::to_owned)
        }

        fn json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i32>().prop_map(Value::from),
                "[a-z\"\\\u{0}-\u{1f}\u{e9}]{0,6}".prop_map(Value::String),
            ];
            leaf.prop_recursive(3, 24, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::btree_map(key(), inner, 0..5)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        proptest! {
            /// Cutting `also` out of the first form is the canonical form without it, for
            /// every position `also` can take (first, last, only, absent, excluded).
            #[test]
            fn the_second_form_is_the_first_without_the_member(
                members in prop::collection::btree_map(key(), json(), 0..7),
                excluded in prop::sample::subsequence(vec!["meta", "signature", "z"], 0..=2),
            ) {
                let v = Value::Object(members.into_iter().collect());
                let (full, less) = to_canonical_bytes_without_and(&v, &excluded, "signature")
                    .unwrap();
                prop_assert_eq!(&full, &to_canonical_bytes_without(&v, &excluded).unwrap());
                let mut both = excluded.clone();
                both.push("signature");
                prop_assert_eq!(&less, &to_canonical_bytes_without(&v, &both).unwrap());
            }
        }

        #[test]
        fn only_objects_have_forms() {
            assert!(to_canonical_bytes_without_and(&Value::Null, &[], "a").is_none());
        }
    }
}
