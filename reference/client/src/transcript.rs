//! One HTTP exchange as the conformance harness shows it: the request (method, path,
//! headers, body), the response (status, headers, body) and how long it took.

use crate::error::ApiErrorBody;
use serde_json::{Value, json};
use std::fmt;
use std::time::Duration;

/// A request and its response, exactly as sent and received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transcript {
    /// `GET`, `POST`, …
    pub method: String,
    /// The request target (path and query), without the scheme and authority.
    pub path: String,
    /// `HTTP/1.1` or `HTTP/2`.
    pub version: String,
    /// Request headers in the order sent (lowercase names).
    pub request_headers: Vec<(String, String)>,
    /// The request body bytes.
    pub request_body: Vec<u8>,
    /// The response status.
    pub status: u16,
    /// Response headers in the order received (lowercase names).
    pub response_headers: Vec<(String, String)>,
    /// The response body bytes.
    pub response_body: Vec<u8>,
    /// From just before the request was written to the last body byte read.
    pub elapsed: Duration,
}

impl Transcript {
    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The response body as JSON, if it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.response_body).ok()
    }

    /// The §24.1 error in the response body, if there is one.
    pub fn api_error(&self) -> Option<ApiErrorBody> {
        self.json().as_ref().and_then(ApiErrorBody::from_json)
    }

    /// The first response header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.response_headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A JSON rendering for reports (bodies as text when UTF-8, else base64-free hex).
    pub fn to_json(&self) -> Value {
        let text = |b: &[u8]| match std::str::from_utf8(b) {
            Ok(s) => Value::from(s),
            Err(_) => Value::from(format!("hex:{}", hex::encode(b))),
        };
        let headers =
            |h: &[(String, String)]| h.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>();
        json!({
            "method": self.method,
            "path": self.path,
            "version": self.version,
            "request_headers": headers(&self.request_headers),
            "request_body": text(&self.request_body),
            "status": self.status,
            "response_headers": headers(&self.response_headers),
            "response_body": text(&self.response_body),
            "elapsed_ms": self.elapsed.as_secs_f64() * 1000.0,
        })
    }
}

/// Longest body printed by [`fmt::Display`]; reports keep the full bytes.
const DISPLAY_BODY_LIMIT: usize = 4096;

impl fmt::Display for Transcript {
    /// An HTTP/1.1-style rendering: `> ` request lines, `< ` response lines.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let body = |f: &mut fmt::Formatter<'_>, prefix: &str, b: &[u8]| -> fmt::Result {
            if b.is_empty() {
                return Ok(());
            }
            let s = String::from_utf8_lossy(b);
            let shown: String = s.chars().take(DISPLAY_BODY_LIMIT).collect();
            writeln!(f, "{prefix}")?;
            for line in shown.lines() {
                writeln!(f, "{prefix}{line}")?;
            }
            if shown.len() < s.len() {
                writeln!(f, "{prefix}… ({} bytes in all)", b.len())?;
            }
            Ok(())
        };
        writeln!(f, "> {} {} {}", self.method, self.path, self.version)?;
        for (k, v) in &self.request_headers {
            let v = if k == "authorization" {
                "Bearer …"
            } else {
                v
            };
            writeln!(f, "> {k}: {v}")?;
        }
        body(f, "> ", &self.request_body)?;
        writeln!(
            f,
            "< {} {} ({:.1} ms)",
            self.version,
            self.status,
            self.elapsed.as_secs_f64() * 1000.0
        )?;
        for (k, v) in &self.response_headers {
            writeln!(f, "< {k}: {v}")?;
        }
        body(f, "< ", &self.response_body)
    }
}
