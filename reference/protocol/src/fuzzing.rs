//! Fuzz bodies (DESIGN.md §8): library functions so that `cargo fuzz` targets and `cargo test`
//! run the same code. Each takes arbitrary bytes and asserts the invariants that must hold
//! for every input; a panic here is a bug.

use crate::envelope::{validate_envelope, validate_envelope_all, verify_envelope_signature};
use crate::jcs::{canonicalize_str, parse_strict_bytes, to_canonical_string};

/// Strict parsing never panics, and whatever parses canonicalizes to a fixed point
/// (RFC 8785: canonical output re-canonicalizes to itself).
pub fn canonical_json(data: &[u8]) {
    if let Ok(v) = parse_strict_bytes(data) {
        let once = to_canonical_string(&v);
        match canonicalize_str(&once) {
            Ok(twice) => assert_eq!(once, twice, "canonical form is not a fixed point"),
            Err(e) => panic!("canonical output does not parse: {e}"),
        }
    }
}

/// Envelope validation and signature verification never panic; validation reports every
/// error with a field, a rule and a section, and agrees with its first-error form.
pub fn envelope(data: &[u8]) {
    let Ok(v) = parse_strict_bytes(data) else {
        return;
    };
    let all = validate_envelope_all(&v);
    assert_eq!(validate_envelope(&v).is_ok(), all.is_empty());
    for e in &all {
        assert!(
            !e.field.is_empty() && !e.rule.is_empty() && e.section.starts_with("v1."),
            "{e:?}"
        );
    }
    let key = ed25519_dalek::SigningKey::from_bytes(&[1; 32]).verifying_key();
    let _ = verify_envelope_signature(&v, &key);
}
