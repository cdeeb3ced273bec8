//! ECMAScript number formatting (RFC 8785 §3.2.2.3, v1.1 §7.2) through
//! `loom_protocol::jcs::format_number`, one double at a time or as a seeded stream.

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_protocol::jcs::format_number;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// Parses 16 hex digits of an IEEE-754 bit pattern.
fn hex64(input: Input<'_>, name: &str) -> Result<u64, BadRequest> {
    let s = input.str(name)?;
    if s.len() != 16 {
        return Err(format!("{name} must be 16 hex digits"));
    }
    u64::from_str_radix(s, 16).map_err(|e| format!("{name}: {e}"))
}

/// `format-number`: the ECMAScript text of the double whose bits are `bits`.
pub fn format(input: Input<'_>) -> Result<Answer, BadRequest> {
    let v = f64::from_bits(hex64(input, "bits")?);
    Ok(if v.is_finite() {
        Answer::valid(format_number(v))
    } else {
        Answer::invalid("NON_FINITE_NUMBER", format!("{v} has no JSON form"))
    })
}

/// SplitMix64 (vectors/kinds/jcs-numbers.md): the stream's bit-pattern source.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64-bit output.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The next finite double's bit pattern (NaN and ±Infinity are skipped).
    pub fn next_finite_bits(&mut self) -> u64 {
        loop {
            let bits = self.next_u64();
            if (bits >> 52) & 0x7ff != 0x7ff {
                return bits;
            }
        }
    }
}

/// `number-stream-checkpoint`: hex SHA-256 of the first `lines` stream lines from `seed`.
pub fn stream_checkpoint(input: Input<'_>) -> Result<Answer, BadRequest> {
    let seed = hex64(input, "seed")?;
    let lines = input
        .value("lines")?
        .as_u64()
        .ok_or("input member \"lines\" must be a non-negative integer")?;
    let mut rng = SplitMix64::new(seed);
    let mut hash = Sha256::new();
    let mut line = String::with_capacity(48);
    for _ in 0..lines {
        let bits = rng.next_finite_bits();
        line.clear();
        let _ = writeln!(line, "{bits:016x},{}", format_number(f64::from_bits(bits)));
        hash.update(line.as_bytes());
    }
    Ok(Answer::valid(hex::encode(hash.finalize())))
}
