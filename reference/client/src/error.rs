//! The client's one error type. A node's refusal keeps its §24.1 error body and the whole
//! exchange ([`Transcript`]), so a caller can print what the node said and why.

use crate::transcript::Transcript;
use serde_json::Value;
use std::fmt;

/// The §24.1 error body a node returns: `{"error": {code, message, details, request_id,
/// timestamp}}` (v1.1 §24.1). Every member is optional here: a client must not trust a
/// server to be well-formed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiErrorBody {
    /// The §24.2 registry code (`ENVELOPE_INVALID`, `RATE_LIMIT_EXCEEDED`, …).
    pub code: Option<String>,
    /// The human-readable message.
    pub message: Option<String>,
    /// `details.field`: which field broke the rule.
    pub field: Option<String>,
    /// `details.reason`: which rule.
    pub reason: Option<String>,
    /// `details.section`: where the rule is in the spec.
    pub section: Option<String>,
    /// The node's request id (`req_…`).
    pub request_id: Option<String>,
}

impl ApiErrorBody {
    /// Reads a §24.1 body from a JSON value; `None` if there is no `error` object.
    pub fn from_json(v: &Value) -> Option<ApiErrorBody> {
        let e = v.get("error")?.as_object()?;
        let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let details = e.get("details");
        Some(ApiErrorBody {
            code: s(e.get("code")),
            message: s(e.get("message")),
            field: s(details.and_then(|d| d.get("field"))),
            reason: s(details.and_then(|d| d.get("reason"))),
            section: s(details.and_then(|d| d.get("section"))),
            request_id: s(e.get("request_id")),
        })
    }
}

impl fmt::Display for ApiErrorBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code.as_deref().unwrap_or("(no code)"))?;
        if let Some(m) = &self.message {
            write!(f, ": {m}")?;
        }
        let mut parts = Vec::new();
        if let Some(x) = &self.field {
            parts.push(format!("field {x}"));
        }
        if let Some(x) = &self.reason {
            parts.push(format!("reason: {x}"));
        }
        if let Some(x) = &self.section {
            parts.push(format!("section {x}"));
        }
        if let Some(x) = &self.request_id {
            parts.push(format!("request {x}"));
        }
        if !parts.is_empty() {
            write!(f, " [{}]", parts.join("; "))?;
        }
        Ok(())
    }
}

/// Everything that can go wrong talking to a node.
#[derive(Debug)]
pub enum ClientError {
    /// The node URL could not be used.
    Url(String),
    /// Connecting (TCP) failed.
    Connect {
        /// `host:port` dialled.
        target: String,
        /// The socket error.
        source: std::io::Error,
    },
    /// The TLS handshake or configuration failed.
    Tls(String),
    /// The HTTP exchange failed (connection closed, protocol error).
    Http(String),
    /// No response within the client's timeout.
    Timeout {
        /// `METHOD path`.
        request: String,
        /// The timeout that passed.
        after: std::time::Duration,
    },
    /// The node answered with a status that is not what the call expects.
    Api {
        /// The parsed §24.1 body, when the node sent one.
        error: Option<Box<ApiErrorBody>>,
        /// The exchange.
        transcript: Box<Transcript>,
    },
    /// The node answered successfully but the body is not what the spec describes.
    BadResponse {
        /// What was wrong.
        reason: String,
        /// The exchange.
        transcript: Box<Transcript>,
    },
    /// A local input was invalid (key file, address, envelope that cannot be signed).
    Input(String),
}

impl ClientError {
    /// The HTTP status of a node refusal, if this is one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { transcript, .. } | ClientError::BadResponse { transcript, .. } => {
                Some(transcript.status)
            }
            _ => None,
        }
    }

    /// The §24.2 code of a node refusal, if it sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Api { error: Some(e), .. } => e.code.as_deref(),
            _ => None,
        }
    }

    /// The exchange behind this error, if one happened.
    pub fn transcript(&self) -> Option<&Transcript> {
        match self {
            ClientError::Api { transcript, .. } | ClientError::BadResponse { transcript, .. } => {
                Some(transcript)
            }
            _ => None,
        }
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Url(e) => write!(f, "bad node URL: {e}"),
            ClientError::Connect { target, source } => {
                write!(f, "cannot connect to {target}: {source}")
            }
            ClientError::Tls(e) => write!(f, "TLS: {e}"),
            ClientError::Http(e) => write!(f, "HTTP: {e}"),
            ClientError::Timeout { request, after } => {
                write!(f, "{request}: no response within {after:?}")
            }
            ClientError::Api { error, transcript } => {
                write!(
                    f,
                    "{} {} → HTTP {}",
                    transcript.method, transcript.path, transcript.status
                )?;
                match error {
                    Some(e) => write!(f, " {e}"),
                    None => {
                        let body = String::from_utf8_lossy(&transcript.response_body);
                        let body: String = body.chars().take(200).collect();
                        if body.is_empty() {
                            write!(f, " (empty body, no §24.1 error)")
                        } else {
                            write!(f, " (not a §24.1 error body: {body})")
                        }
                    }
                }
            }
            ClientError::BadResponse { reason, transcript } => write!(
                f,
                "{} {} → HTTP {}: unexpected response: {reason}",
                transcript.method, transcript.path, transcript.status
            ),
            ClientError::Input(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientError::Connect { source, .. } => Some(source),
            _ => None,
        }
    }
}
