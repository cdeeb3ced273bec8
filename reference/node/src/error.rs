//! The node's one error type (DESIGN.md §3). Every failure a client can see is an
//! [`ApiError`] carrying a §24.2 code, the field and rule it concerns and the section that
//! states the rule; the HTTP layer renders it as the §24.1 body with a `req_` id.
//!
//! The registry fixes the status of each code. Four transport conditions have no code of
//! their own, so they reuse the closest one with the status HTTP requires (documented in
//! the node README): an unknown route is 404 `EXTENSION_DISABLED`, a known route with the
//! wrong method is 405 `EXTENSION_DISABLED` with `Allow`, a missing or expired access token
//! is 401 `SIGNATURE_INVALID` (proof-of-key failed, §14.2), and a wrong content type is 415
//! `ENVELOPE_INVALID`.

use loom_protocol::{ErrorCode, ProtocolError};
use std::borrow::Cow;
use std::fmt;

/// A client-visible failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// Registry code.
    pub code: ErrorCode,
    /// The field or request part concerned (`signature.value`, `$body`, `Authorization`).
    pub field: String,
    /// The rule broken, in words.
    pub reason: String,
    /// Where the rule is written.
    pub section: Cow<'static, str>,
    /// A status other than the registry's, for the transport cases above.
    pub status: Option<u16>,
    /// Extra response headers (`Allow`, `Retry-After`, rate-limit headers).
    pub headers: Vec<(&'static str, String)>,
}

impl ApiError {
    /// An error with the registry status of `code`.
    pub fn new(
        code: ErrorCode,
        field: impl Into<String>,
        reason: impl Into<String>,
        section: impl Into<Cow<'static, str>>,
    ) -> ApiError {
        ApiError {
            code,
            field: field.into(),
            reason: reason.into(),
            section: section.into(),
            status: None,
            headers: Vec::new(),
        }
    }

    /// The same error with a transport status.
    pub fn with_status(mut self, status: u16) -> ApiError {
        self.status = Some(status);
        self
    }

    /// The same error with a response header.
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> ApiError {
        self.headers.push((name, value.into()));
        self
    }

    /// The §24.1 response: the status, `{error: {code, message, details: {field, reason,
    /// section}, request_id, timestamp}}` with the §14.1 content type, and the error's extra
    /// headers. The one builder of an error body, for routed requests (with the request id
    /// and the node's time) and for the connection layer's refusals alike.
    pub fn to_response(
        &self,
        request_id: Option<String>,
        timestamp: Option<String>,
    ) -> axum::response::Response {
        use axum::http::{HeaderValue, StatusCode, header};
        let body = loom_protocol::ErrorBody {
            error: self.error_object(request_id, timestamp),
        };
        let mut resp = axum::response::Response::new(axum::body::Body::from(
            serde_json::to_vec(&body).unwrap_or_default(),
        ));
        *resp.status_mut() =
            StatusCode::from_u16(self.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
        self.add_headers(&mut resp);
        resp
    }

    /// The §24.1 error object (`{code, message, details: {field, reason, section}, request_id,
    /// timestamp}`): the body of an HTTP error and of a WebSocket `error` frame.
    pub fn error_object(
        &self,
        request_id: Option<String>,
        timestamp: Option<String>,
    ) -> loom_protocol::error::ErrorObject {
        loom_protocol::error::ErrorObject {
            code: self.code,
            message: self.message(),
            details: Some(serde_json::json!({
                "field": self.field, "reason": self.reason, "section": self.section,
            })),
            request_id,
            timestamp,
        }
    }

    /// Adds the error's extra headers (`Retry-After`, …) to `resp`.
    pub fn add_headers(&self, resp: &mut axum::response::Response) {
        for (name, value) in &self.headers {
            if let Ok(v) = axum::http::HeaderValue::from_str(value) {
                resp.headers_mut().insert(*name, v);
            }
        }
    }

    /// The §24.1 `message`: field, rule and section. The code is not repeated (it is the
    /// body's `code`; clients print both, issue 18).
    pub fn message(&self) -> String {
        format!("{}: {} ({})", self.field, self.reason, self.section)
    }

    /// The HTTP status to send.
    pub fn http_status(&self) -> u16 {
        self.status.unwrap_or_else(|| self.code.http_status())
    }

    /// `ENVELOPE_INVALID` (400) for a malformed request.
    pub fn bad_request(
        field: impl Into<String>,
        reason: impl Into<String>,
        section: &'static str,
    ) -> Self {
        ApiError::new(ErrorCode::EnvelopeInvalid, field, reason, section)
    }

    /// 401: no valid access token (§14.2).
    pub fn unauthenticated(reason: impl Into<String>) -> ApiError {
        ApiError::new(
            ErrorCode::SignatureInvalid,
            "Authorization",
            reason,
            "v1.1 §14.2",
        )
        .with_header("WWW-Authenticate", "Bearer")
    }

    /// 404 for a path this node does not serve.
    pub fn no_route(path: &str) -> ApiError {
        ApiError::new(
            ErrorCode::ExtensionDisabled,
            "$path",
            format!("no API surface at {path}"),
            "v1.1 §16",
        )
    }

    /// 405 for a known path with the wrong method.
    pub fn wrong_method(method: &str, allow: &str) -> ApiError {
        ApiError::new(
            ErrorCode::ExtensionDisabled,
            "$method",
            format!("{method} is not allowed here; allowed: {allow}"),
            "v1.1 §16",
        )
        .with_status(405)
        .with_header("Allow", allow)
    }

    /// 500: never the client's fault; the detail is logged, not sent.
    pub fn internal(what: impl fmt::Display) -> ApiError {
        tracing::error!(error = %what, "internal error");
        ApiError::new(
            ErrorCode::InternalError,
            "$",
            "unexpected server error",
            "v1.1 §24.2",
        )
    }

    /// Shorthand for not-found codes.
    pub fn not_found(
        code: ErrorCode,
        field: impl Into<String>,
        what: impl fmt::Display,
    ) -> ApiError {
        ApiError::new(code, field, format!("{what} does not exist"), "v1.1 §24.2")
    }
}

impl From<ProtocolError> for ApiError {
    fn from(e: ProtocolError) -> ApiError {
        ApiError::new(e.code, e.field, e.rule, e.section)
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(e: rusqlite::Error) -> ApiError {
        ApiError::internal(format!("store: {e}"))
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {} ({})",
            self.code, self.field, self.reason, self.section
        )
    }
}

impl std::error::Error for ApiError {}

/// The result type of every service call.
pub type ApiResult<T> = Result<T, ApiError>;

/// A request body as a typed request. The body must be a JSON object: serde would also read
/// a struct from an array (`["a.txt", "text/plain"]`), a form no LOOM request has, under which
/// the typed request and the members the node reads from the raw body would disagree (found
/// by the fuzz target `node_request_body`).
pub fn typed_body<T: serde::de::DeserializeOwned>(
    value: &serde_json::Value,
    section: &'static str,
) -> Result<T, ApiError> {
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "$body",
            "the request body must be a JSON object",
            section,
        ));
    }
    serde_json::from_value(value.clone())
        .map_err(|e| ApiError::bad_request("$body", e.to_string(), section))
}
