//! The error registry of LOOM v1.1 §24 and the error type every rule in this crate returns.
//!
//! One type for the whole protocol layer (DESIGN.md §3): each error carries the §24.2 code
//! (which fixes the HTTP status), the field it concerns, the rule that was broken and the
//! spec section that states the rule, so a node can answer with a §24.1 body and a harness
//! can explain a verdict without guessing.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An error code from the core registry (v1.1 §24.2; v1.0 §21.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// Envelope fails schema or DAG rules.
    EnvelopeInvalid,
    /// Signature verification failed.
    SignatureInvalid,
    /// Delegation invalid, expired or revoked.
    DelegationInvalid,
    /// Missing or invalid capability.
    CapabilityDenied,
    /// Audience restriction blocks access.
    AudienceDenied,
    /// Thread requires encryption but payload is not encrypted.
    EncryptionRequired,
    /// Deletion blocked by legal hold.
    LegalHoldActive,
    /// Identity missing.
    IdentityNotFound,
    /// Thread missing.
    ThreadNotFound,
    /// Envelope missing.
    EnvelopeNotFound,
    /// Extension surface disabled by protocol profile or route policy.
    ExtensionDisabled,
    /// Duplicate envelope ID.
    EnvelopeDuplicate,
    /// Thread locked.
    ThreadLocked,
    /// Invalid state transition.
    StateTransitionInvalid,
    /// Size limits exceeded.
    PayloadTooLarge,
    /// Too many requests.
    RateLimitExceeded,
    /// Remote node unreachable.
    NodeUnreachable,
    /// Delivery timeout.
    DeliveryTimeout,
    /// Email bridge failure.
    BridgeDeliveryFailed,
    /// Unexpected error.
    InternalError,
}

impl ErrorCode {
    /// Every code of the §24.2 registry, in registry order.
    pub const ALL: [ErrorCode; 20] = [
        ErrorCode::EnvelopeInvalid,
        ErrorCode::SignatureInvalid,
        ErrorCode::DelegationInvalid,
        ErrorCode::CapabilityDenied,
        ErrorCode::AudienceDenied,
        ErrorCode::EncryptionRequired,
        ErrorCode::LegalHoldActive,
        ErrorCode::IdentityNotFound,
        ErrorCode::ThreadNotFound,
        ErrorCode::EnvelopeNotFound,
        ErrorCode::ExtensionDisabled,
        ErrorCode::EnvelopeDuplicate,
        ErrorCode::ThreadLocked,
        ErrorCode::StateTransitionInvalid,
        ErrorCode::PayloadTooLarge,
        ErrorCode::RateLimitExceeded,
        ErrorCode::NodeUnreachable,
        ErrorCode::DeliveryTimeout,
        ErrorCode::BridgeDeliveryFailed,
        ErrorCode::InternalError,
    ];

    /// The wire spelling of the code (v1.1 §24.2).
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::EnvelopeInvalid => "ENVELOPE_INVALID",
            ErrorCode::SignatureInvalid => "SIGNATURE_INVALID",
            ErrorCode::DelegationInvalid => "DELEGATION_INVALID",
            ErrorCode::CapabilityDenied => "CAPABILITY_DENIED",
            ErrorCode::AudienceDenied => "AUDIENCE_DENIED",
            ErrorCode::EncryptionRequired => "ENCRYPTION_REQUIRED",
            ErrorCode::LegalHoldActive => "LEGAL_HOLD_ACTIVE",
            ErrorCode::IdentityNotFound => "IDENTITY_NOT_FOUND",
            ErrorCode::ThreadNotFound => "THREAD_NOT_FOUND",
            ErrorCode::EnvelopeNotFound => "ENVELOPE_NOT_FOUND",
            ErrorCode::ExtensionDisabled => "EXTENSION_DISABLED",
            ErrorCode::EnvelopeDuplicate => "ENVELOPE_DUPLICATE",
            ErrorCode::ThreadLocked => "THREAD_LOCKED",
            ErrorCode::StateTransitionInvalid => "STATE_TRANSITION_INVALID",
            ErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorCode::RateLimitExceeded => "RATE_LIMIT_EXCEEDED",
            ErrorCode::NodeUnreachable => "NODE_UNREACHABLE",
            ErrorCode::DeliveryTimeout => "DELIVERY_TIMEOUT",
            ErrorCode::BridgeDeliveryFailed => "BRIDGE_DELIVERY_FAILED",
            ErrorCode::InternalError => "INTERNAL_ERROR",
        }
    }

    /// The HTTP status the registry assigns to the code (v1.1 §24.2).
    pub const fn http_status(self) -> u16 {
        match self {
            ErrorCode::EnvelopeInvalid => 400,
            ErrorCode::SignatureInvalid => 401,
            ErrorCode::DelegationInvalid
            | ErrorCode::CapabilityDenied
            | ErrorCode::AudienceDenied
            | ErrorCode::EncryptionRequired
            | ErrorCode::LegalHoldActive => 403,
            ErrorCode::IdentityNotFound
            | ErrorCode::ThreadNotFound
            | ErrorCode::EnvelopeNotFound
            | ErrorCode::ExtensionDisabled => 404,
            ErrorCode::EnvelopeDuplicate
            | ErrorCode::ThreadLocked
            | ErrorCode::StateTransitionInvalid => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::RateLimitExceeded => 429,
            ErrorCode::NodeUnreachable | ErrorCode::BridgeDeliveryFailed => 502,
            ErrorCode::DeliveryTimeout => 504,
            ErrorCode::InternalError => 500,
        }
    }

    /// Parses the wire spelling; `None` for anything outside the core registry.
    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A broken protocol rule: which code, which field, which rule, which section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError {
    /// Registry code (fixes the HTTP status).
    pub code: ErrorCode,
    /// JSON path of the offending field (`to[0].role`), or `$` for the whole document.
    pub field: String,
    /// The rule, stated as the spec states it.
    pub rule: String,
    /// Where the rule is written (`v1.1 §8.2`).
    pub section: &'static str,
}

impl ProtocolError {
    /// Builds an error for `field` breaking `rule` of `section`.
    pub fn new(
        code: ErrorCode,
        field: impl Into<String>,
        rule: impl Into<String>,
        section: &'static str,
    ) -> Self {
        ProtocolError {
            code,
            field: field.into(),
            rule: rule.into(),
            section,
        }
    }

    /// Shorthand for the most common code, `ENVELOPE_INVALID`.
    pub fn invalid(
        field: impl Into<String>,
        rule: impl Into<String>,
        section: &'static str,
    ) -> Self {
        ProtocolError::new(ErrorCode::EnvelopeInvalid, field, rule, section)
    }

    /// The HTTP status of this error's code.
    pub fn http_status(&self) -> u16 {
        self.code.http_status()
    }

    /// Renders the §24.1 error body; `request_id` and `timestamp` come from the caller's
    /// environment so the body stays deterministic under an injected clock.
    pub fn to_body(
        &self,
        request_id: impl Into<String>,
        timestamp: impl Into<String>,
    ) -> ErrorBody {
        ErrorBody {
            error: ErrorObject {
                code: self.code,
                message: self.to_string(),
                details: Some(serde_json::json!({
                    "field": self.field,
                    "reason": self.rule,
                    "section": self.section,
                })),
                request_id: Some(request_id.into()),
                timestamp: Some(timestamp.into()),
            },
        }
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {} ({})",
            self.code, self.field, self.rule, self.section
        )
    }
}

impl std::error::Error for ProtocolError {}

/// The error response body of v1.1 §24.1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    /// The single `error` member.
    pub error: ErrorObject,
}

/// The `error` object of v1.1 §24.1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// Registry code.
    pub code: ErrorCode,
    /// Human-readable message.
    pub message: String,
    /// Structured details (`field`, `reason`, and here also `section`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
    /// Request identifier (`req_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// When the error was produced (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_and_has_registry_status() {
        let expected = [
            ("ENVELOPE_INVALID", 400),
            ("SIGNATURE_INVALID", 401),
            ("DELEGATION_INVALID", 403),
            ("CAPABILITY_DENIED", 403),
            ("AUDIENCE_DENIED", 403),
            ("ENCRYPTION_REQUIRED", 403),
            ("LEGAL_HOLD_ACTIVE", 403),
            ("IDENTITY_NOT_FOUND", 404),
            ("THREAD_NOT_FOUND", 404),
            ("ENVELOPE_NOT_FOUND", 404),
            ("EXTENSION_DISABLED", 404),
            ("ENVELOPE_DUPLICATE", 409),
            ("THREAD_LOCKED", 409),
            ("STATE_TRANSITION_INVALID", 409),
            ("PAYLOAD_TOO_LARGE", 413),
            ("RATE_LIMIT_EXCEEDED", 429),
            ("NODE_UNREACHABLE", 502),
            ("DELIVERY_TIMEOUT", 504),
            ("BRIDGE_DELIVERY_FAILED", 502),
            ("INTERNAL_ERROR", 500),
        ];
        assert_eq!(expected.len(), ErrorCode::ALL.len());
        for (code, (name, status)) in ErrorCode::ALL.iter().zip(expected) {
            assert_eq!(code.as_str(), name);
            assert_eq!(code.http_status(), status, "{name}");
            assert_eq!(ErrorCode::parse(name), Some(*code));
            let json = serde_json::to_string(code).unwrap();
            assert_eq!(json, format!("\"{name}\""));
        }
        assert_eq!(ErrorCode::parse("NOT_A_CODE"), None);
    }

    #[test]
    fn error_body_has_the_section_24_1_shape() {
        let err = ProtocolError::new(
            ErrorCode::SignatureInvalid,
            "signature.value",
            "Ed25519 signature mismatch",
            "v1.1 §7.3",
        );
        let body = serde_json::to_value(err.to_body("req_1", "2026-02-16T18:40:00.000Z")).unwrap();
        assert_eq!(body["error"]["code"], "SIGNATURE_INVALID");
        assert_eq!(body["error"]["details"]["field"], "signature.value");
        assert_eq!(
            body["error"]["details"]["reason"],
            "Ed25519 signature mismatch"
        );
        assert_eq!(body["error"]["details"]["section"], "v1.1 §7.3");
        assert_eq!(body["error"]["request_id"], "req_1");
        assert_eq!(body["error"]["timestamp"], "2026-02-16T18:40:00.000Z");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("signature.value")
        );
        let back: ErrorBody = serde_json::from_value(body).unwrap();
        assert_eq!(back.error.code, ErrorCode::SignatureInvalid);
    }
}
