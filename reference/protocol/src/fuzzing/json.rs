//! Canonical JSON (RFC 8785, v1.1 §7.2) and envelope validation and signatures (§7.3, §8).

use super::assert_explained;
use crate::envelope::{
    SignatureMode, sign_envelope, validate_envelope, validate_envelope_all,
    verify_envelope_signature,
};
use crate::id::{KeyId, KeyKind};
use crate::jcs::{canonicalize_str, parse_strict, parse_strict_bytes, to_canonical_string};
use crate::keys::signing_key_from_seed;
use serde_json::Value;

/// Strict parsing never panics; whatever parses canonicalizes to a fixed point (RFC 8785:
/// canonical output re-canonicalizes to itself) that parses back to a value with the same
/// canonical form.
pub fn canonical_json(data: &[u8]) {
    let Ok(v) = parse_strict_bytes(data) else {
        return;
    };
    let once = to_canonical_string(&v);
    match canonicalize_str(&once) {
        Ok(twice) => assert_eq!(once, twice, "canonical form is not a fixed point"),
        Err(e) => panic!("canonical output does not parse: {e}"),
    }
    let back = parse_strict(&once).expect("canonical output parses strictly");
    assert_eq!(to_canonical_string(&back), once);
}

/// Envelope validation (§8) never panics; every error names field, rule and section; the
/// first-error and all-errors forms agree; signing a valid envelope and verifying it with the
/// same key succeeds with the context prefix (§7.3), a different key fails, and `meta` is
/// outside the signed form (§7.2).
pub fn envelope(data: &[u8]) {
    let Ok(v) = parse_strict_bytes(data) else {
        return;
    };
    let all = validate_envelope_all(&v);
    let first = validate_envelope(&v);
    assert_eq!(
        first.is_ok(),
        all.is_empty(),
        "first-error and all-errors forms disagree"
    );
    if let Err(e) = &first {
        assert_explained(e);
        assert!(
            all.contains(e),
            "the first error {e:?} is not among all errors"
        );
    }
    for e in &all {
        assert_explained(e);
    }
    let key = signing_key_from_seed(&[1; 32]);
    // Whatever the input carries, verification answers without panicking.
    if let Err(e) = verify_envelope_signature(&v, &key.verifying_key()) {
        assert_explained(&e);
    }
    if first.is_err() || !v.is_object() {
        return;
    }
    let mut signed = v;
    let kid = KeyId::parse("k_sign_fuzz_1", KeyKind::Signing).expect("key id");
    sign_envelope(&mut signed, &key, &kid).expect("an object signs");
    assert_eq!(
        verify_envelope_signature(&signed, &key.verifying_key()).ok(),
        Some(SignatureMode::ContextPrefixed),
        "sign∘verify"
    );
    let other = signing_key_from_seed(&[2; 32]).verifying_key();
    assert!(verify_envelope_signature(&signed, &other).is_err());
    signed["meta"] = Value::from("not signed");
    assert!(
        verify_envelope_signature(&signed, &key.verifying_key()).is_ok(),
        "meta is outside the signed form (§7.2)"
    );
}
