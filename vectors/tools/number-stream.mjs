// The jcs-numbers generated stream (vectors/kinds/jcs-numbers.md), computed independently of
// loom-protocol: node's String(x) is ECMAScript Number::toString, which RFC 8785 §3.2.2.3 adopts.
//
//   node vectors/tools/number-stream.mjs [SEED_HEX] [LINES...]
//
// SplitMix64 from SEED: state += 0x9e3779b97f4a7c15; z = state;
// z = (z ^ z>>30) * 0xbf58476d1ce4e5b9; z = (z ^ z>>27) * 0x94d049bb133111eb; out = z ^ z>>31
// (all mod 2^64). Each output is an IEEE-754 bit pattern; patterns whose exponent field is
// 0x7ff (NaN, ±Infinity) are skipped. Line = 16 lowercase hex digits, ",", String(x), "\n".
// Prints the SHA-256 (hex) of the first N lines for each N.
import { createHash } from "node:crypto";

const MASK = (1n << 64n) - 1n;
const seed = BigInt("0x" + (process.argv[2] ?? "4c4f4f4d2d4e554d"));
const counts = (process.argv.length > 3 ? process.argv.slice(3) : ["1000", "10000", "100000"]).map(Number);
const max = Math.max(...counts);

let state = seed;
function next() {
  state = (state + 0x9e3779b97f4a7c15n) & MASK;
  let z = state;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
  return z ^ (z >> 31n);
}

const view = new DataView(new ArrayBuffer(8));
const hash = createHash("sha256");
const results = {};
for (let line = 1; line <= max; line++) {
  let bits;
  do {
    bits = next();
  } while (((bits >> 52n) & 0x7ffn) === 0x7ffn);
  view.setBigUint64(0, bits);
  hash.update(bits.toString(16).padStart(16, "0") + "," + String(view.getFloat64(0)) + "\n");
  if (counts.includes(line)) results[line] = hash.copy().digest("hex");
}
for (const n of counts) console.log(`${n} ${results[n]}`);
