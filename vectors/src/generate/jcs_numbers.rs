//! `jcs-numbers`: ECMAScript `Number::toString` as RFC 8785 §3.2.2.3 requires for canonical
//! JSON (v1.1 §7.2), one IEEE-754 double at a time, plus checkpoints of a seeded stream.
//!
//! Every expected string below was computed independently of `loom-protocol` with node.js
//! (`String(x)` is the ECMAScript reference): the edge table by `vectors/tools/number-edges.mjs`,
//! the stream checkpoints by `vectors/tools/number-stream.mjs`, and pasted here as literals.

use super::schema::{AreaSchema, string};
use super::{Case, FileBuilder};
use serde_json::{Value, json};

const SPEC: &[&str] = &["RFC 8785 §3.2.2.3", "v1.1 §7.2"];
const APPENDIX_B: &[&str] = &["RFC 8785 Appendix B", "RFC 8785 §3.2.2.3", "v1.1 §7.2"];

/// `(id, bits, expected, comment)`: finite doubles and their ECMAScript text (node.js).
const FINITE: &[(&str, &str, &str, &str)] = &[
    (
        "rfc8785.b.zero",
        "0000000000000000",
        "0",
        "Appendix B: zero",
    ),
    (
        "rfc8785.b.minus-zero",
        "8000000000000000",
        "0",
        "Appendix B: minus zero serializes as 0",
    ),
    (
        "rfc8785.b.min-subnormal",
        "0000000000000001",
        "5e-324",
        "Appendix B: smallest positive subnormal",
    ),
    (
        "rfc8785.b.neg-min-subnormal",
        "8000000000000001",
        "-5e-324",
        "Appendix B: smallest negative subnormal",
    ),
    (
        "rfc8785.b.max-double",
        "7fefffffffffffff",
        "1.7976931348623157e+308",
        "Appendix B: largest finite double",
    ),
    (
        "rfc8785.b.neg-max-double",
        "ffefffffffffffff",
        "-1.7976931348623157e+308",
        "Appendix B: most negative finite double",
    ),
    (
        "rfc8785.b.2-pow-53",
        "4340000000000000",
        "9007199254740992",
        "Appendix B: 2^53",
    ),
    (
        "rfc8785.b.neg-2-pow-53",
        "c340000000000000",
        "-9007199254740992",
        "Appendix B: -2^53",
    ),
    (
        "rfc8785.b.2-pow-68",
        "4430000000000000",
        "295147905179352830000",
        "Appendix B: 2^68, plain notation with trailing zeros",
    ),
    (
        "rfc8785.b.1e23-prev",
        "44b52d02c7e14af5",
        "9.999999999999997e+22",
        "Appendix B: double just below 1e23",
    ),
    (
        "rfc8785.b.1e23",
        "44b52d02c7e14af6",
        "1e+23",
        "Appendix B: 1e23, exponent notation",
    ),
    (
        "rfc8785.b.1e23-next",
        "44b52d02c7e14af7",
        "1.0000000000000001e+23",
        "Appendix B: double just above 1e23 needs 17 digits",
    ),
    (
        "rfc8785.b.1e21-prev2",
        "444b1ae4d6e2ef4e",
        "999999999999999700000",
        "Appendix B: two doubles below 1e21, still plain",
    ),
    (
        "rfc8785.b.1e21-prev",
        "444b1ae4d6e2ef4f",
        "999999999999999900000",
        "Appendix B: largest double below 1e21, plain",
    ),
    (
        "rfc8785.b.1e21",
        "444b1ae4d6e2ef50",
        "1e+21",
        "Appendix B: 1e21 switches to exponent notation",
    ),
    (
        "rfc8785.b.1e-6-prev",
        "3eb0c6f7a0b5ed8c",
        "9.999999999999997e-7",
        "Appendix B: just below 1e-6 switches to exponent notation",
    ),
    (
        "rfc8785.b.1e-6",
        "3eb0c6f7a0b5ed8d",
        "0.000001",
        "Appendix B: 1e-6 is still plain",
    ),
    (
        "rfc8785.b.third-m2",
        "41b3de4355555553",
        "333333333.3333332",
        "Appendix B: shortest digits near 1e9/3",
    ),
    (
        "rfc8785.b.third-m1",
        "41b3de4355555554",
        "333333333.33333325",
        "Appendix B: shortest digits near 1e9/3",
    ),
    (
        "rfc8785.b.third",
        "41b3de4355555555",
        "333333333.3333333",
        "Appendix B: shortest digits near 1e9/3",
    ),
    (
        "rfc8785.b.third-p1",
        "41b3de4355555556",
        "333333333.3333334",
        "Appendix B: shortest digits near 1e9/3",
    ),
    (
        "rfc8785.b.third-p2",
        "41b3de4355555557",
        "333333333.33333343",
        "Appendix B: shortest digits near 1e9/3",
    ),
    (
        "rfc8785.b.neg-small-plain",
        "becbf647612f3696",
        "-0.0000033333333333333333",
        "Appendix B: negative value with 6 leading fraction zeros",
    ),
    (
        "rfc8785.b.fraction-17",
        "43143ff3c1cb0959",
        "1424953923781206.2",
        "Appendix B: 17 significant digits with one fraction digit",
    ),
    (
        "ieee.min-subnormal-2",
        "0000000000000002",
        "1e-323",
        "second-smallest subnormal",
    ),
    (
        "ieee.min-subnormal-3",
        "0000000000000003",
        "1.5e-323",
        "third-smallest subnormal",
    ),
    (
        "ieee.max-subnormal",
        "000fffffffffffff",
        "2.225073858507201e-308",
        "largest subnormal",
    ),
    (
        "ieee.neg-max-subnormal",
        "800fffffffffffff",
        "-2.225073858507201e-308",
        "largest negative subnormal",
    ),
    (
        "ieee.min-normal",
        "0010000000000000",
        "2.2250738585072014e-308",
        "smallest positive normal",
    ),
    (
        "ieee.min-normal-next",
        "0010000000000001",
        "2.225073858507202e-308",
        "just above the smallest normal",
    ),
    (
        "ieee.max-double-prev",
        "7feffffffffffffe",
        "1.7976931348623155e+308",
        "just below the largest double",
    ),
    ("ieee.one", "3ff0000000000000", "1", "one"),
    ("ieee.neg-one", "bff0000000000000", "-1", "minus one"),
    (
        "ieee.one-next",
        "3ff0000000000001",
        "1.0000000000000002",
        "smallest double above 1 (1 + 2^-52)",
    ),
    (
        "ieee.one-prev",
        "3fefffffffffffff",
        "0.9999999999999999",
        "largest double below 1",
    ),
    ("ieee.two", "4000000000000000", "2", "two"),
    (
        "ieee.epsilon",
        "3cb0000000000000",
        "2.220446049250313e-16",
        "2^-52",
    ),
    (
        "ieee.2-pow-minus-1000",
        "0170000000000000",
        "9.332636185032189e-302",
        "2^-1000",
    ),
    (
        "ieee.2-pow-1023",
        "7fe0000000000000",
        "8.98846567431158e+307",
        "2^1023",
    ),
    (
        "ieee.half-max",
        "7fdfffffffffffff",
        "8.988465674311579e+307",
        "half the largest double",
    ),
    ("int.small", "401c000000000000", "7", "small integer"),
    (
        "int.neg-small",
        "c045000000000000",
        "-42",
        "negative integer",
    ),
    (
        "int.ten",
        "4024000000000000",
        "10",
        "trailing zero kept on an integer",
    ),
    (
        "int.hundred",
        "4059000000000000",
        "100",
        "integer with two trailing zeros",
    ),
    ("int.2-pow-31", "41e0000000000000", "2147483648", "2^31"),
    ("int.2-pow-32", "41f0000000000000", "4294967296", "2^32"),
    (
        "int.2-pow-53-minus-1",
        "433fffffffffffff",
        "9007199254740991",
        "2^53 - 1, the largest safe integer",
    ),
    (
        "int.neg-2-pow-53-minus-1",
        "c33fffffffffffff",
        "-9007199254740991",
        "-(2^53 - 1)",
    ),
    (
        "int.2-pow-53-plus-2",
        "4340000000000001",
        "9007199254740994",
        "2^53 + 2 (2^53 + 1 is not a double)",
    ),
    (
        "int.2-pow-53-next-next",
        "4340000000000002",
        "9007199254740996",
        "2^53 + 4",
    ),
    (
        "int.2-pow-63",
        "43e0000000000000",
        "9223372036854776000",
        "2^63 prints as the shortest digits padded with zeros",
    ),
    (
        "int.2-pow-64",
        "43f0000000000000",
        "18446744073709552000",
        "2^64 prints as the shortest digits padded with zeros",
    ),
    (
        "int.2-pow-70",
        "4450000000000000",
        "1.1805916207174113e+21",
        "2^70 is beyond 1e21: exponent notation",
    ),
    (
        "int.123456789",
        "419d6f3454000000",
        "123456789",
        "nine-digit integer",
    ),
    (
        "int.1e15",
        "430c6bf526340000",
        "1000000000000000",
        "1e15 plain",
    ),
    (
        "int.1e16-plus-2",
        "4341c37937e08001",
        "10000000000000002",
        "1e16 + 2, 17 significant digits",
    ),
    (
        "int.17-digits",
        "4345ee2a2eb5a5c4",
        "12345678901234568",
        "17 significant digits, plain",
    ),
    (
        "int.21-digits",
        "441ac53a7e04bcda",
        "123456789012345680000",
        "21 integer digits, still plain",
    ),
    (
        "int.22-digits",
        "4450bb448ec2f608",
        "1.2345678901234568e+21",
        "22 integer digits: exponent notation",
    ),
    ("pow10.1e3", "408f400000000000", "1000", "1e3"),
    ("pow10.1e5", "40f86a0000000000", "100000", "1e5"),
    ("pow10.1e10", "4202a05f20000000", "10000000000", "1e10"),
    (
        "pow10.1e19",
        "43e158e460913d00",
        "10000000000000000000",
        "1e19",
    ),
    (
        "pow10.1e20",
        "4415af1d78b58c40",
        "100000000000000000000",
        "1e20, the largest power of ten printed plain",
    ),
    ("pow10.1e50", "4a511b0ec57e649a", "1e+50", "1e50"),
    ("pow10.1e22", "4480f0cf064dd592", "1e+22", "1e22"),
    ("pow10.neg-1e21", "c44b1ae4d6e2ef50", "-1e+21", "-1e21"),
    (
        "pow10.neg-1e20",
        "c415af1d78b58c40",
        "-100000000000000000000",
        "-1e20",
    ),
    (
        "pow10.5e20",
        "443b1ae4d6e2ef50",
        "500000000000000000000",
        "5e20 prints plain with 20 zeros",
    ),
    (
        "pow10.1e21-next",
        "444b1ae4d6e2ef51",
        "1.0000000000000001e+21",
        "just above 1e21",
    ),
    (
        "pow10.1-5e21",
        "4454542ba12a337c",
        "1.5e+21",
        "1.5e21 with a fraction digit in exponent notation",
    ),
    ("pow10.1e100", "54b249ad2594c37d", "1e+100", "1e100"),
    ("pow10.1e300", "7e37e43c8800759c", "1e+300", "1e300"),
    ("pow10.1e308", "7fe1ccf385ebc8a0", "1e+308", "1e308"),
    ("pow10.1e-300", "01a56e1fc2f8f359", "1e-300", "1e-300"),
    (
        "pow10.1e-307",
        "0031fa182c40c60d",
        "1e-307",
        "1e-307 (normal)",
    ),
    (
        "pow10.1e-308",
        "000730d67819e8d2",
        "1e-308",
        "1e-308 (subnormal)",
    ),
    (
        "pow10.1e-320",
        "00000000000007e8",
        "1e-320",
        "1e-320 (subnormal)",
    ),
    ("small.0-1", "3fb999999999999a", "0.1", "0.1"),
    ("small.0-01", "3f847ae147ae147b", "0.01", "0.01"),
    ("small.0-001", "3f50624dd2f1a9fc", "0.001", "0.001"),
    ("small.1e-4", "3f1a36e2eb1c432d", "0.0001", "1e-4 plain"),
    ("small.1e-5", "3ee4f8b588e368f1", "0.00001", "1e-5 plain"),
    (
        "small.1-5e-6",
        "3eb92a737110e454",
        "0.0000015",
        "1.5e-6 plain",
    ),
    (
        "small.1e-7",
        "3e7ad7f29abcaf48",
        "1e-7",
        "1e-7, the largest power of ten printed with an exponent",
    ),
    (
        "small.1-5e-7",
        "3e8421f5f40d8376",
        "1.5e-7",
        "1.5e-7 with a fraction digit",
    ),
    (
        "small.9-99e-7",
        "3eb0c2ac1dbbe3d8",
        "9.99e-7",
        "9.99e-7: below 1e-6, exponent notation",
    ),
    (
        "small.1-234e-6",
        "3eb4b3fd5942cd96",
        "0.000001234",
        "1.234e-6 plain with five leading fraction zeros",
    ),
    (
        "small.1e-6-next",
        "3eb0c6f7a0b5ed8e",
        "0.0000010000000000000002",
        "just above 1e-6, plain",
    ),
    ("small.neg-1e-7", "be7ad7f29abcaf48", "-1e-7", "-1e-7"),
    ("small.neg-1e-6", "beb0c6f7a0b5ed8d", "-0.000001", "-1e-6"),
    ("small.1e-8", "3e45798ee2308c3a", "1e-8", "1e-8"),
    (
        "small.1-2345e-10",
        "3de0f782bf7cc83f",
        "1.2345e-10",
        "1.2345e-10",
    ),
    ("frac.0-2", "3fc999999999999a", "0.2", "0.2"),
    ("frac.0-3", "3fd3333333333333", "0.3", "0.3"),
    (
        "frac.0-1-plus-0-2",
        "3fd3333333333334",
        "0.30000000000000004",
        "0.1 + 0.2 needs 17 digits",
    ),
    (
        "frac.third",
        "3fd5555555555555",
        "0.3333333333333333",
        "1/3",
    ),
    (
        "frac.two-thirds",
        "3fe5555555555555",
        "0.6666666666666666",
        "2/3",
    ),
    (
        "frac.neg-third",
        "bfd5555555555555",
        "-0.3333333333333333",
        "-1/3",
    ),
    ("frac.half", "3fe0000000000000", "0.5", "0.5"),
    ("frac.neg-half", "bfe0000000000000", "-0.5", "-0.5"),
    ("frac.one-and-half", "3ff8000000000000", "1.5", "1.5"),
    ("frac.two-and-half", "4004000000000000", "2.5", "2.5"),
    (
        "frac.hundred-and-half",
        "4059200000000000",
        "100.5",
        "100.5",
    ),
    ("frac.quarter", "3fd0000000000000", "0.25", "0.25"),
    ("frac.eighth", "3fc0000000000000", "0.125", "0.125"),
    ("frac.4-35", "4011666666666666", "4.35", "4.35"),
    ("frac.pi", "400921fb54442d18", "3.141592653589793", "pi"),
    ("frac.e", "4005bf0a8b145769", "2.718281828459045", "e"),
    (
        "frac.sqrt2",
        "3ff6a09e667f3bcd",
        "1.4142135623730951",
        "sqrt(2)",
    ),
    ("frac.1-1", "3ff199999999999a", "1.1", "1.1"),
    ("frac.123-456", "405edd2f1a9fbe77", "123.456", "123.456"),
    (
        "frac.neg-123-456",
        "c05edd2f1a9fbe77",
        "-123.456",
        "-123.456",
    ),
    (
        "frac.large-with-fraction",
        "41d26580b4880000",
        "1234567890.125",
        "ten integer digits and a fraction",
    ),
    (
        "frac.2-pow-51-plus-half",
        "4320000000000001",
        "2251799813685248.5",
        "2^51 + 0.5: fraction digit at the last representable place",
    ),
    (
        "frac.9-99e-6",
        "3ee4f357252adccd",
        "0.00000999",
        "9.99e-6 plain",
    ),
    ("frac.5e-7", "3ea0c6f7a0b5ed8d", "5e-7", "5e-7"),
    ("frac.0-7", "3fe6666666666666", "0.7", "0.7"),
    (
        "frac.1-9999999999999998",
        "3fffffffffffffff",
        "1.9999999999999998",
        "largest double below 2",
    ),
    (
        "shortest.5-units",
        "0000000000000005",
        "2.5e-323",
        "subnormal 5 * 2^-1074",
    ),
    (
        "shortest.max-subnormal-prev",
        "000ffffffffffffe",
        "2.2250738585072004e-308",
        "just below the largest subnormal",
    ),
    (
        "shortest.2-pow-54-plus-1",
        "4350000000000000",
        "18014398509481984",
        "2^54 + 1 rounds to 2^54",
    ),
    ("shortest.5e-2", "3fa999999999999a", "0.05", "0.05"),
    (
        "shortest.max-double-prev2",
        "7feffffffffffffd",
        "1.7976931348623153e+308",
        "two below the largest double",
    ),
    (
        "shortest.15-units",
        "000000000000000f",
        "7.4e-323",
        "subnormal 15 * 2^-1074",
    ),
    ("shortest.2e-323", "0000000000000004", "2e-323", "2e-323"),
    (
        "shortest.8-41e21",
        "447c7e83209e90b2",
        "8.41e+21",
        "8.41e21",
    ),
    (
        "shortest.neg-1-5e300",
        "fe41eb2d66005835",
        "-1.5e+300",
        "-1.5e300",
    ),
    ("shortest.1e-22", "3b5e392010175ee6", "1e-22", "1e-22"),
    (
        "shortest.tie-even-down",
        "4310000000000001",
        "1125899906842624.2",
        "2^50 + 0.25 lies halfway between ...624.2 and ...624.3: the even digit wins",
    ),
    (
        "shortest.tie-even-up",
        "4310000000000003",
        "1125899906842624.8",
        "2^50 + 0.75 lies halfway between ...624.7 and ...624.8: the even digit wins",
    ),
];

/// `(id, bits, comment)`: NaN and infinities, which RFC 8785 §3.2.2.3 says must be rejected.
const NON_FINITE: &[(&str, &str, &str)] = &[
    ("nonfinite.nan", "7ff8000000000000", "quiet NaN"),
    (
        "nonfinite.neg-nan",
        "fff8000000000000",
        "NaN with the sign bit set",
    ),
    (
        "nonfinite.signalling-nan",
        "7ff0000000000001",
        "signalling NaN (smallest payload)",
    ),
    (
        "nonfinite.nan-all-ones",
        "7fffffffffffffff",
        "Appendix B NaN (all payload bits set)",
    ),
    (
        "nonfinite.neg-nan-all-ones",
        "ffffffffffffffff",
        "NaN with every bit set",
    ),
    (
        "nonfinite.infinity",
        "7ff0000000000000",
        "Appendix B: +Infinity",
    ),
    ("nonfinite.neg-infinity", "fff0000000000000", "-Infinity"),
];

/// `(id, seed, lines, sha256)`: checkpoints of the seeded stream (node.js, number-stream.mjs).
const CHECKPOINTS: &[(&str, &str, u64, &str)] = &[
    (
        "stream.loom-num.1",
        "4c4f4f4d2d4e554d",
        1,
        "dbea17fb66237c608ac9d147980fdaa434e40738c184cea25c5ef0c4aa5a706b",
    ),
    (
        "stream.loom-num.10",
        "4c4f4f4d2d4e554d",
        10,
        "f99d80e83bcbf2b852ce61d91c7258f51eb60ee6cdb882365d334bee6e67a03e",
    ),
    (
        "stream.loom-num.1000",
        "4c4f4f4d2d4e554d",
        1000,
        "5abd9014fe28a53c2b4754b85c466073ddf5e374c53e2c834765c6c0cc3c60f1",
    ),
    (
        "stream.loom-num.10000",
        "4c4f4f4d2d4e554d",
        10000,
        "a527c01e1ec53755e6635f4c7b794cfeedb668e7fabc489d4ef8007a1d34d55c",
    ),
    (
        "stream.loom-num.100000",
        "4c4f4f4d2d4e554d",
        100000,
        "08545749d7176e22178e0a0d8ea664059c92427c19e3b0abab92825a2f01389e",
    ),
    (
        "stream.zero-seed.1000",
        "0000000000000000",
        1000,
        "ee94d9ddef417f02a2bc3ed1cb8a702017a116bb8dbbe455e7e6dff6efc7c189",
    ),
];

/// The flag for a finite case, from its ID's first segment.
fn flag_for(id: &str) -> &'static str {
    match id.split('.').next() {
        Some("rfc8785") => "Rfc8785AppendixB",
        Some("ieee") => "Ieee754Landmark",
        Some("int") => "Integer",
        Some("pow10" | "small") => "NotationBoundary",
        Some("frac") => "DecimalFraction",
        _ => "ShortestDigits",
    }
}

fn finite_case(&(id, bits, expected, comment): &(&str, &str, &str, &str)) -> Case {
    let spec = if id.starts_with("rfc8785.") {
        APPENDIX_B
    } else {
        SPEC
    };
    Case::new(id, format!("{comment}: {expected}"), spec)
        .flags(&[flag_for(id)])
        .input("bits", bits)
        .valid_with(expected)
}

fn non_finite_case(&(id, bits, comment): &(&str, &str, &str)) -> Case {
    Case::new(id, format!("{comment} has no JSON form"), SPEC)
        .flags(&["NonFinite"])
        .input("bits", bits)
        .invalid("NON_FINITE_NUMBER")
}

fn checkpoint_case(&(id, seed, lines, sha): &(&str, &str, u64, &str)) -> Case {
    Case::new(
        id,
        format!("SHA-256 of the first {lines} stream lines from seed {seed}"),
        SPEC,
    )
    .flags(&["GeneratedStream"])
    .input("seed", seed)
    .input("lines", lines)
    .valid_with(sha)
}

/// Builds `jcs-numbers.json`.
pub fn build() -> FileBuilder {
    FileBuilder::new(
        "jcs-numbers",
        "ECMAScript Number::toString, which RFC 8785 §3.2.2.3 requires for numbers in canonical JSON (v1.1 §7.2). \
         Kind format-number: 'bits' is the IEEE-754 double as 16 lowercase hex digits of its bit pattern (big-endian, sign bit first); \
         'expected' is the exact text. NaN and ±Infinity are rejected with NON_FINITE_NUMBER. \
         Kind number-stream-checkpoint: SHA-256 (lowercase hex) of the first 'lines' lines of the SplitMix64 stream from 'seed' \
         (algorithm in vectors/kinds/jcs-numbers.md). Every expectation was computed independently with node.js \
         (String(x) is the ECMAScript reference; vectors/tools/number-edges.mjs and number-stream.mjs) and pasted as a literal.",
    )
    .note("Rfc8785AppendixB", "A row of the RFC 8785 Appendix B number table.", "number formatting", "Canonical JSON differs from every conforming implementation, so signatures over such numbers fail.")
    .note("Ieee754Landmark", "Subnormals, the normal range limits and neighbours of 1.", "shortest round-trip digits", "Numbers at the edges of the double range canonicalize differently across implementations.")
    .note("Integer", "Integral values print without a fraction or exponent up to 1e21, padded with zeros past 17 digits.", "integer formatting", "Large integers (ids, sizes, counters) break signatures.")
    .note("NotationBoundary", "Plain notation for 1e-6 <= |x| < 1e21; exponent notation outside, with an explicit sign on the exponent.", "notation choice", "Very large or small values canonicalize differently and signatures fail.")
    .note("DecimalFraction", "Short decimal fractions print with the fewest digits that round-trip.", "shortest round-trip digits", "Everyday decimal values break signatures.")
    .note("ShortestDigits", "The shortest digit string that round-trips, including cases where the nearest short decimal belongs to a neighbour.", "shortest round-trip digits", "Signatures fail on values whose digit choice is subtle.")
    .note("NonFinite", "NaN and ±Infinity have no JSON form; RFC 8785 §3.2.2.3 requires an error.", "non-finite handling", "An implementation emits text (NaN, Infinity, null) no peer can verify.")
    .note("GeneratedStream", "A checksum over a long seeded stream of bit patterns, to catch rare digit-generation bugs.", "shortest round-trip digits", "Rare values (exact ties between two shortest digit strings, for one) canonicalize differently and signatures over them fail.")
    .group("format-number", Value::Null)
    .tests(FINITE.iter().map(finite_case))
    .tests(NON_FINITE.iter().map(non_finite_case))
    .group("number-stream-checkpoint", Value::Null)
    .tests(CHECKPOINTS.iter().map(checkpoint_case))
}

/// The inputs and outputs of `jcs-numbers.json`.
pub fn schema() -> AreaSchema {
    let hex16 = json!({"type": "string", "pattern": "^[0-9a-f]{16}$"});
    AreaSchema {
        kinds: vec!["format-number", "number-stream-checkpoint"],
        inputs: vec![
            ("bits", hex16.clone()),
            ("seed", hex16),
            ("lines", json!({"type": "integer", "minimum": 1})),
        ],
        required: vec![],
        expected: string(),
        errors: vec!["NON_FINITE_NUMBER"],
    }
}
