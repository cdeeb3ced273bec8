//! Typed helpers for the v1.1 §15.2 and §16 endpoints. Each requires the status the spec
//! gives for success and returns the JSON body with its transcript; anything else is a
//! [`ClientError::Api`] carrying the node's §24.1 error.

use crate::client::{Client, Reply};
use crate::dial::Dial;
use crate::error::ClientError;
use serde_json::Value;

/// Percent-encodes a path segment or query value (RFC 3986 unreserved characters kept).
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn query_string(query: &[(&str, &str)]) -> String {
    if query.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = query
        .iter()
        .map(|(k, v)| format!("{}={}", encode_component(k), encode_component(v)))
        .collect();
    format!("?{}", parts.join("&"))
}

impl<D: Dial> Client<D> {
    /// `GET /.well-known/loom.json` (v1.1 §15.2).
    pub async fn node_document(&mut self) -> Result<Reply, ClientError> {
        self.expect("GET", "/.well-known/loom.json", None, 200)
            .await
    }

    /// `POST /v1/envelopes` (v1.1 §16.1): 201 with the stored envelope (`meta.event_seq`).
    pub async fn send_envelope(&mut self, envelope: &Value) -> Result<Reply, ClientError> {
        self.expect("POST", "/v1/envelopes", Some(envelope), 201)
            .await
    }

    /// `POST /v1/envelopes` with an `Idempotency-Key` (v1.1 §14.4).
    pub async fn send_envelope_idempotent(
        &mut self,
        envelope: &Value,
        key: &str,
    ) -> Result<Reply, ClientError> {
        let body = serde_json::to_vec(envelope)
            .map_err(|e| ClientError::Input(format!("cannot serialize the envelope: {e}")))?;
        let t = self
            .exchange(
                "POST",
                "/v1/envelopes",
                &[("idempotency-key", key)],
                Some(body),
                None,
            )
            .await?;
        Reply::require(t, 201)
    }

    /// `GET /v1/envelopes/{id}` (v1.1 §16.1).
    pub async fn get_envelope(&mut self, id: &str) -> Result<Reply, ClientError> {
        let path = format!("/v1/envelopes/{}", encode_component(id));
        self.expect("GET", &path, None, 200).await
    }

    /// `GET /v1/threads` with query parameters (`state`, `label`, `limit`, `cursor`, …;
    /// v1.1 §16.2).
    pub async fn list_threads(&mut self, query: &[(&str, &str)]) -> Result<Reply, ClientError> {
        let path = format!("/v1/threads{}", query_string(query));
        self.expect("GET", &path, None, 200).await
    }

    /// `GET /v1/threads/{id}` (v1.1 §16.2, the §10.1 thread object).
    pub async fn get_thread(&mut self, id: &str) -> Result<Reply, ClientError> {
        let path = format!("/v1/threads/{}", encode_component(id));
        self.expect("GET", &path, None, 200).await
    }

    /// `GET /v1/threads/{id}/envelopes` (v1.1 §16.2).
    pub async fn thread_envelopes(&mut self, id: &str) -> Result<Reply, ClientError> {
        let path = format!("/v1/threads/{}/envelopes", encode_component(id));
        self.expect("GET", &path, None, 200).await
    }

    /// Uploads `bytes` as one blob (v1.1 §16.7): initiate (readable by `thread`'s
    /// participants), one part, complete. Returns the completion body (`blob_id`, `size`,
    /// `sha256`, `hash`).
    pub async fn upload_blob(
        &mut self,
        filename: &str,
        mime_type: &str,
        thread: Option<&str>,
        bytes: &[u8],
    ) -> Result<Reply, ClientError> {
        let req = serde_json::json!({
            "filename": filename,
            "mime_type": mime_type,
            "size_bytes": bytes.len(),
            "thread_id": thread,
        });
        let created = self.expect("POST", "/v1/blobs", Some(&req), 201).await?;
        let id = encode_component(created.str("blob_id")?);
        let t = self
            .exchange(
                "PUT",
                &format!("/v1/blobs/{id}/parts/1"),
                &[("content-type", "application/octet-stream")],
                Some(bytes.to_vec()),
                None,
            )
            .await?;
        Reply::require(t, 200)?;
        self.expect("POST", &format!("/v1/blobs/{id}/complete"), None, 200)
            .await
    }

    /// `GET /v1/blobs/{id}` (v1.1 §16.7): the blob's bytes.
    pub async fn download_blob(&mut self, id: &str) -> Result<Vec<u8>, ClientError> {
        let path = format!("/v1/blobs/{}", encode_component(id));
        let t = self
            .exchange("GET", &path, &[("accept", "*/*")], None, None)
            .await?;
        if t.status != 200 {
            return Err(ClientError::Api {
                error: t.api_error().map(Box::new),
                transcript: Box::new(t),
            });
        }
        Ok(t.response_body)
    }

    /// `GET /v1/identity/me` (v1.1 §16.3).
    pub async fn me(&mut self) -> Result<Reply, ClientError> {
        self.expect("GET", "/v1/identity/me", None, 200).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes() {
        assert_eq!(
            encode_component("loom://a@b.test"),
            "loom%3A%2F%2Fa%40b.test"
        );
        assert_eq!(
            query_string(&[("state", "active"), ("limit", "5")]),
            "?state=active&limit=5"
        );
    }
}
