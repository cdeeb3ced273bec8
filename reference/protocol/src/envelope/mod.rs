//! Envelopes: the typed model (v1.1 §8.1), validation (§8.2–§8.4, §9.2) and signing (§7.2–§7.3).

pub mod model;
pub mod sign;
pub mod validate;

pub use model::*;
pub use sign::{
    SignatureMode, envelope_signing_payload, sign_envelope, sign_envelope_legacy,
    verify_envelope_signature, verify_envelope_signature_over,
};
pub use validate::{check_envelope_size, validate_envelope, validate_envelope_all};
