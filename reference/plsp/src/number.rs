//! PLSP numbers (spec §4.4 "Number (`digits[.digits]`)"), held exactly as canonical decimal
//! text so that comparisons and round trips never go through floating point.
//!
//! Choices the spec leaves open (GRAMMAR.md, "Numbers"): an optional leading `-` is accepted;
//! the canonical form drops leading zeros of the integer part, trailing zeros of the
//! fraction, a fraction that becomes empty, and the sign of zero (`-0.50` → `-0.5`,
//! `007` → `7`, `1.0` → `1`, `-0` → `0`).

use std::cmp::Ordering;
use std::fmt;

/// An exact decimal number in canonical form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Number(String);

impl Number {
    /// Parses `-?[0-9]+(\.[0-9]+)?` and canonicalizes it; `None` for anything else.
    pub fn parse(text: &str) -> Option<Number> {
        let (neg, body) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (int, frac) = match body.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (body, None),
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(int) || frac.is_some_and(|f| !digits(f)) {
            return None;
        }
        let int = int.trim_start_matches('0');
        let int = if int.is_empty() { "0" } else { int };
        let frac = frac.map(|f| f.trim_end_matches('0')).unwrap_or("");
        let zero = int == "0" && frac.is_empty();
        let mut s = String::with_capacity(text.len());
        if neg && !zero {
            s.push('-');
        }
        s.push_str(int);
        if !frac.is_empty() {
            s.push('.');
            s.push_str(frac);
        }
        Some(Number(s))
    }

    /// A number from an integer.
    pub fn from_i64(n: i64) -> Number {
        Number(n.to_string())
    }

    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for negative numbers (never for zero).
    pub fn is_negative(&self) -> bool {
        self.0.starts_with('-')
    }

    /// The value as `i64` when it is an integer in range.
    pub fn as_i64(&self) -> Option<i64> {
        self.0.parse().ok()
    }

    /// The value as JSON: an integer when it fits `i64`, else a finite `f64`, else the text.
    pub fn to_json(&self) -> serde_json::Value {
        if let Some(i) = self.as_i64() {
            return i.into();
        }
        match self
            .0
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
        {
            Some(n) => serde_json::Value::Number(n),
            None => self.0.clone().into(),
        }
    }

    /// Exact numeric comparison (IMF.md, "Comparisons").
    pub fn cmp_value(&self, other: &Number) -> Ordering {
        match (self.is_negative(), other.is_negative()) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => cmp_magnitude(&self.0, &other.0),
            (true, true) => cmp_magnitude(&other.0[1..], &self.0[1..]),
        }
    }
}

fn cmp_magnitude(a: &str, b: &str) -> Ordering {
    let (ai, af) = a.split_once('.').unwrap_or((a, ""));
    let (bi, bf) = b.split_once('.').unwrap_or((b, ""));
    ai.len()
        .cmp(&bi.len())
        .then_with(|| ai.cmp(bi))
        .then_with(|| af.cmp(bf))
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Number {
        Number::parse(s).unwrap()
    }

    #[test]
    fn canonical_forms() {
        for (i, o) in [
            ("007", "7"),
            ("1.0", "1"),
            ("-0", "0"),
            ("-0.50", "-0.5"),
            ("0.000", "0"),
            ("3.14", "3.14"),
            ("100", "100"),
        ] {
            assert_eq!(n(i).as_str(), o, "{i}");
        }
        for bad in [
            "", "-", ".5", "5.", "1.2.3", "+1", "1e3", " 1", "0x1", "--1",
        ] {
            assert!(Number::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn exact_comparison() {
        use Ordering::*;
        for (a, b, o) in [
            ("10", "9", Greater),
            ("9.99", "10", Less),
            ("-1", "0", Less),
            ("-10", "-9", Less),
            ("-1.5", "-1.25", Less),
            ("1.5", "1.50", Equal),
            ("0.1", "0.09", Greater),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567891",
                Less,
            ),
        ] {
            assert_eq!(n(a).cmp_value(&n(b)), o, "{a} vs {b}");
        }
    }
}
