// The jcs-numbers edge table (vectors/src/generate/jcs_numbers.rs), computed independently of
// loom-protocol: node's String(x) is ECMAScript Number::toString (RFC 8785 §3.2.2.3).
// Prints one Rust tuple per case: (id, bits, expected, comment). Values are given either as
// 16 hex digits of the bit pattern or as a JS number.
const view = new DataView(new ArrayBuffer(8));
const hex = (x) => { view.setFloat64(0, x); return view.getBigUint64(0).toString(16).padStart(16, "0"); };
const num = (h) => { view.setBigUint64(0, BigInt("0x" + h)); return view.getFloat64(0); };
const step = (x, d) => { view.setFloat64(0, x); view.setBigUint64(0, view.getBigUint64(0) + BigInt(d)); return view.getFloat64(0); };

const cases = [
  // RFC 8785 Appendix B (finite rows)
  ["rfc8785.b.zero", "0000000000000000", "Appendix B: zero"],
  ["rfc8785.b.minus-zero", "8000000000000000", "Appendix B: minus zero serializes as 0"],
  ["rfc8785.b.min-subnormal", "0000000000000001", "Appendix B: smallest positive subnormal"],
  ["rfc8785.b.neg-min-subnormal", "8000000000000001", "Appendix B: smallest negative subnormal"],
  ["rfc8785.b.max-double", "7fefffffffffffff", "Appendix B: largest finite double"],
  ["rfc8785.b.neg-max-double", "ffefffffffffffff", "Appendix B: most negative finite double"],
  ["rfc8785.b.2-pow-53", "4340000000000000", "Appendix B: 2^53"],
  ["rfc8785.b.neg-2-pow-53", "c340000000000000", "Appendix B: -2^53"],
  ["rfc8785.b.2-pow-68", "4430000000000000", "Appendix B: 2^68, plain notation with trailing zeros"],
  ["rfc8785.b.1e23-prev", "44b52d02c7e14af5", "Appendix B: double just below 1e23"],
  ["rfc8785.b.1e23", "44b52d02c7e14af6", "Appendix B: 1e23, exponent notation"],
  ["rfc8785.b.1e23-next", "44b52d02c7e14af7", "Appendix B: double just above 1e23 needs 17 digits"],
  ["rfc8785.b.1e21-prev2", "444b1ae4d6e2ef4e", "Appendix B: two doubles below 1e21, still plain"],
  ["rfc8785.b.1e21-prev", "444b1ae4d6e2ef4f", "Appendix B: largest double below 1e21, plain"],
  ["rfc8785.b.1e21", "444b1ae4d6e2ef50", "Appendix B: 1e21 switches to exponent notation"],
  ["rfc8785.b.1e-6-prev", "3eb0c6f7a0b5ed8c", "Appendix B: just below 1e-6 switches to exponent notation"],
  ["rfc8785.b.1e-6", "3eb0c6f7a0b5ed8d", "Appendix B: 1e-6 is still plain"],
  ["rfc8785.b.third-m2", "41b3de4355555553", "Appendix B: shortest digits near 1e9/3"],
  ["rfc8785.b.third-m1", "41b3de4355555554", "Appendix B: shortest digits near 1e9/3"],
  ["rfc8785.b.third", "41b3de4355555555", "Appendix B: shortest digits near 1e9/3"],
  ["rfc8785.b.third-p1", "41b3de4355555556", "Appendix B: shortest digits near 1e9/3"],
  ["rfc8785.b.third-p2", "41b3de4355555557", "Appendix B: shortest digits near 1e9/3"],
  ["rfc8785.b.neg-small-plain", "becbf647612f3696", "Appendix B: negative value with 6 leading fraction zeros"],
  ["rfc8785.b.fraction-17", "43143ff3c1cb0959", "Appendix B: 17 significant digits with one fraction digit"],
  // IEEE-754 landmarks
  ["ieee.min-subnormal-2", "0000000000000002", "second-smallest subnormal"],
  ["ieee.min-subnormal-3", "0000000000000003", "third-smallest subnormal"],
  ["ieee.max-subnormal", "000fffffffffffff", "largest subnormal"],
  ["ieee.neg-max-subnormal", "800fffffffffffff", "largest negative subnormal"],
  ["ieee.min-normal", "0010000000000000", "smallest positive normal"],
  ["ieee.min-normal-next", "0010000000000001", "just above the smallest normal"],
  ["ieee.max-double-prev", "7feffffffffffffe", "just below the largest double"],
  ["ieee.one", 1, "one"],
  ["ieee.neg-one", -1, "minus one"],
  ["ieee.one-next", step(1, 1), "smallest double above 1 (1 + 2^-52)"],
  ["ieee.one-prev", step(1, -1), "largest double below 1"],
  ["ieee.two", 2, "two"],
  ["ieee.epsilon", Number.EPSILON, "2^-52"],
  ["ieee.2-pow-minus-1000", 2 ** -1000, "2^-1000"],
  ["ieee.2-pow-1023", 2 ** 1023, "2^1023"],
  ["ieee.half-max", 1.7976931348623157e308 / 2, "half the largest double"],
  // Integers
  ["int.small", 7, "small integer"],
  ["int.neg-small", -42, "negative integer"],
  ["int.ten", 10, "trailing zero kept on an integer"],
  ["int.hundred", 100, "integer with two trailing zeros"],
  ["int.2-pow-31", 2 ** 31, "2^31"],
  ["int.2-pow-32", 2 ** 32, "2^32"],
  ["int.2-pow-53-minus-1", 2 ** 53 - 1, "2^53 - 1, the largest safe integer"],
  ["int.neg-2-pow-53-minus-1", -(2 ** 53 - 1), "-(2^53 - 1)"],
  ["int.2-pow-53-plus-2", 2 ** 53 + 2, "2^53 + 2 (2^53 + 1 is not a double)"],
  ["int.2-pow-53-next-next", 2 ** 53 + 4, "2^53 + 4"],
  ["int.2-pow-63", 2 ** 63, "2^63 prints as the shortest digits padded with zeros"],
  ["int.2-pow-64", 2 ** 64, "2^64 prints as the shortest digits padded with zeros"],
  ["int.2-pow-70", 2 ** 70, "2^70 is beyond 1e21: exponent notation"],
  ["int.123456789", 123456789, "nine-digit integer"],
  ["int.1e15", 1e15, "1e15 plain"],
  ["int.1e16-plus-2", 1e16 + 2, "1e16 + 2, 17 significant digits"],
  ["int.17-digits", 12345678901234568, "17 significant digits, plain"],
  ["int.21-digits", 123456789012345680000, "21 integer digits, still plain"],
  ["int.22-digits", 1234567890123456800000, "22 integer digits: exponent notation"],
  // Powers of ten and the 1e21 boundary
  ["pow10.1e3", 1e3, "1e3"],
  ["pow10.1e5", 1e5, "1e5"],
  ["pow10.1e10", 1e10, "1e10"],
  ["pow10.1e19", 1e19, "1e19"],
  ["pow10.1e20", 1e20, "1e20, the largest power of ten printed plain"],
  ["pow10.1e50", 1e50, "1e50"],
  ["pow10.1e22", 1e22, "1e22"],
  ["pow10.neg-1e21", -1e21, "-1e21"],
  ["pow10.neg-1e20", -1e20, "-1e20"],
  ["pow10.5e20", 5e20, "5e20 prints plain with 20 zeros"],
  ["pow10.1e21-next", step(1e21, 1), "just above 1e21"],
  ["pow10.1-5e21", 1.5e21, "1.5e21 with a fraction digit in exponent notation"],
  ["pow10.1e100", 1e100, "1e100"],
  ["pow10.1e300", 1e300, "1e300"],
  ["pow10.1e308", 1e308, "1e308"],
  ["pow10.1e-300", 1e-300, "1e-300"],
  ["pow10.1e-307", 1e-307, "1e-307 (normal)"],
  ["pow10.1e-308", 1e-308, "1e-308 (subnormal)"],
  ["pow10.1e-320", 1e-320, "1e-320 (subnormal)"],
  // The 1e-7 boundary
  ["small.0-1", 0.1, "0.1"],
  ["small.0-01", 0.01, "0.01"],
  ["small.0-001", 0.001, "0.001"],
  ["small.1e-4", 1e-4, "1e-4 plain"],
  ["small.1e-5", 1e-5, "1e-5 plain"],
  ["small.1-5e-6", 1.5e-6, "1.5e-6 plain"],
  ["small.1e-7", 1e-7, "1e-7, the largest power of ten printed with an exponent"],
  ["small.1-5e-7", 1.5e-7, "1.5e-7 with a fraction digit"],
  ["small.9-99e-7", 9.99e-7, "9.99e-7: below 1e-6, exponent notation"],
  ["small.1-234e-6", 1.234e-6, "1.234e-6 plain with five leading fraction zeros"],
  ["small.1e-6-next", step(1e-6, 1), "just above 1e-6, plain"],
  ["small.neg-1e-7", -1e-7, "-1e-7"],
  ["small.neg-1e-6", -1e-6, "-1e-6"],
  ["small.1e-8", 1e-8, "1e-8"],
  ["small.1-2345e-10", 1.2345e-10, "1.2345e-10"],
  // Decimal fractions
  ["frac.0-2", 0.2, "0.2"],
  ["frac.0-3", 0.3, "0.3"],
  ["frac.0-1-plus-0-2", 0.1 + 0.2, "0.1 + 0.2 needs 17 digits"],
  ["frac.third", 1 / 3, "1/3"],
  ["frac.two-thirds", 2 / 3, "2/3"],
  ["frac.neg-third", -1 / 3, "-1/3"],
  ["frac.half", 0.5, "0.5"],
  ["frac.neg-half", -0.5, "-0.5"],
  ["frac.one-and-half", 1.5, "1.5"],
  ["frac.two-and-half", 2.5, "2.5"],
  ["frac.hundred-and-half", 100.5, "100.5"],
  ["frac.quarter", 0.25, "0.25"],
  ["frac.eighth", 0.125, "0.125"],
  ["frac.4-35", 4.35, "4.35"],
  ["frac.pi", Math.PI, "pi"],
  ["frac.e", Math.E, "e"],
  ["frac.sqrt2", Math.SQRT2, "sqrt(2)"],
  ["frac.1-1", 1.1, "1.1"],
  ["frac.123-456", 123.456, "123.456"],
  ["frac.neg-123-456", -123.456, "-123.456"],
  ["frac.large-with-fraction", 1234567890.125, "ten integer digits and a fraction"],
  ["frac.2-pow-51-plus-half", 2 ** 51 + 0.5, "2^51 + 0.5: fraction digit at the last representable place"],
  ["frac.9-99e-6", 9.99e-6, "9.99e-6 plain"],
  ["frac.5e-7", 5e-7, "5e-7"],
  ["frac.0-7", 0.7, "0.7"],
  ["frac.1-9999999999999998", 1.9999999999999998, "largest double below 2"],
  // Shortest round-trip digit choices
  ["shortest.5-units", 2.5e-323, "subnormal 5 * 2^-1074"],
  ["shortest.max-subnormal-prev", step(2.2250738585072011e-308, -1), "just below the largest subnormal"],
  ["shortest.2-pow-54-plus-1", 18014398509481985, "2^54 + 1 rounds to 2^54"],
  ["shortest.5e-2", 5e-2, "0.05"],
  ["shortest.max-double-prev2", 1.7976931348623153e308, "two below the largest double"],
  ["shortest.15-units", 7.4e-323, "subnormal 15 * 2^-1074"],
  ["shortest.2e-323", 2e-323, "2e-323"],
  ["shortest.8-41e21", 8.41e21, "8.41e21"],
  ["shortest.neg-1-5e300", -1.5e300, "-1.5e300"],
  ["shortest.1e-22", 1e-22, "1e-22"],
  ["shortest.tie-even-down", 2 ** 50 + 0.25, "2^50 + 0.25 lies halfway between ...624.2 and ...624.3: the even digit wins"],
  ["shortest.tie-even-up", 2 ** 50 + 0.75, "2^50 + 0.75 lies halfway between ...624.7 and ...624.8: the even digit wins"],
];

const invalid = [
  ["nonfinite.nan", "7ff8000000000000", "quiet NaN"],
  ["nonfinite.neg-nan", "fff8000000000000", "NaN with the sign bit set"],
  ["nonfinite.signalling-nan", "7ff0000000000001", "signalling NaN (smallest payload)"],
  ["nonfinite.nan-all-ones", "7fffffffffffffff", "Appendix B NaN (all payload bits set)"],
  ["nonfinite.neg-nan-all-ones", "ffffffffffffffff", "NaN with every bit set"],
  ["nonfinite.infinity", "7ff0000000000000", "Appendix B: +Infinity"],
  ["nonfinite.neg-infinity", "fff0000000000000", "-Infinity"],
];

const seenBits = new Map();
for (const [id, v, comment] of cases) {
  const bits = typeof v === "string" ? v : hex(v);
  const x = num(bits);
  if (!Number.isFinite(x)) throw new Error(id);
  if (seenBits.has(bits)) console.error(`note: ${id} has the same bits as ${seenBits.get(bits)}`);
  seenBits.set(bits, id);
  console.log(`    (${JSON.stringify(id)}, "${bits}", ${JSON.stringify(String(x))}, ${JSON.stringify(comment)}),`);
}
console.log("// invalid");
for (const [id, bits, comment] of invalid) {
  if (Number.isFinite(num(bits))) throw new Error(id);
  console.log(`    (${JSON.stringify(id)}, "${bits}", ${JSON.stringify(comment)}),`);
}
console.error(`${cases.length} finite, ${invalid.length} non-finite`);
