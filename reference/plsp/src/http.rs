//! HTTP behind one seam (DESIGN.md §3, §8): the chat backend and the `fetch` action send
//! requests through [`Dial`]. [`HyperDial`] is hyper-util's client over tokio TCP (plain
//! `http://` and `https://`); [`ScriptedDial`] answers from a table for scenarios.

use crate::env::BoxFuture;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::collections::BTreeMap;

/// An HTTP request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// `GET` or `POST`.
    pub method: String,
    /// Absolute `http://` URL.
    pub url: String,
    /// Extra headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body (empty for GET).
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// A GET of `url`.
    pub fn get(url: &str) -> Self {
        HttpRequest {
            method: "GET".into(),
            url: url.into(),
            headers: vec![],
            body: vec![],
        }
    }
}

/// An HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
}

/// Sends HTTP requests.
#[cfg_attr(test, mockall::automock)]
pub trait Dial: Send + Sync + std::fmt::Debug {
    /// Sends `req`; transport failures are `Err` with a description.
    fn send(&self, req: HttpRequest) -> BoxFuture<Result<HttpResponse, String>>;
}

/// hyper-util's pooled client over tokio TCP, `http://` and `https://` (rustls with the
/// `ring` provider and the operating system's trusted roots, so a hosted chat-completions
/// API works as well as a local one).
#[derive(Debug, Clone)]
pub struct HyperDial {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    max_body: usize,
}

impl HyperDial {
    /// A client that refuses response bodies larger than `max_body` bytes. Without readable
    /// system roots, `https://` requests fail with a clear error and `http://` still works.
    pub fn new(max_body: usize) -> Self {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(provider.clone())
            .or_else(|_| {
                // No readable system roots: https fails at the handshake, http still works.
                rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map(|c| {
                        let cfg = c
                            .with_root_certificates(rustls::RootCertStore::empty())
                            .with_no_client_auth();
                        hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(cfg)
                    })
            })
            .map(|b| b.https_or_http().enable_http1().build());
        let client = match connector {
            Ok(c) => Client::builder(TokioExecutor::new()).build(c),
            // The ring provider supports the default versions, so this arm is unreachable;
            // plain HTTP is the honest fallback if it ever is not.
            Err(_) => Client::builder(TokioExecutor::new()).build(
                hyper_rustls::HttpsConnectorBuilder::new()
                    .with_tls_config(
                        rustls::ClientConfig::builder()
                            .with_root_certificates(rustls::RootCertStore::empty())
                            .with_no_client_auth(),
                    )
                    .https_or_http()
                    .enable_http1()
                    .build(),
            ),
        };
        HyperDial { client, max_body }
    }
}

impl Dial for HyperDial {
    fn send(&self, req: HttpRequest) -> BoxFuture<Result<HttpResponse, String>> {
        let client = self.client.clone();
        let max = self.max_body;
        Box::pin(async move {
            if !(req.url.starts_with("http://") || req.url.starts_with("https://")) {
                return Err(format!(
                    "{}: only http:// and https:// URLs are supported",
                    req.url
                ));
            }
            let mut b = hyper::Request::builder()
                .method(req.method.as_str())
                .uri(req.url.as_str());
            for (k, v) in &req.headers {
                b = b.header(k.as_str(), v.as_str());
            }
            let request = b
                .body(Full::new(Bytes::from(req.body)))
                .map_err(|e| format!("bad request: {e}"))?;
            let resp = client
                .request(request)
                .await
                .map_err(|e| format!("{}: {e}", req.url))?;
            let status = resp.status().as_u16();
            let body = Limited::new(resp.into_body(), max)
                .collect()
                .await
                .map_err(|e| format!("{}: reading the body: {e}", req.url))?
                .to_bytes()
                .to_vec();
            Ok(HttpResponse { status, body })
        })
    }
}

/// Answers from a fixed table (URL → status and body); other URLs get 404. Records nothing
/// and never touches the network.
#[derive(Debug, Clone, Default)]
pub struct ScriptedDial {
    /// The table.
    pub routes: BTreeMap<String, HttpResponse>,
}

impl Dial for ScriptedDial {
    fn send(&self, req: HttpRequest) -> BoxFuture<Result<HttpResponse, String>> {
        let r = self.routes.get(&req.url).cloned().unwrap_or(HttpResponse {
            status: 404,
            body: b"not found".to_vec(),
        });
        Box::pin(std::future::ready(Ok(r)))
    }
}

#[cfg(test)]
mod https_tests {
    use super::*;

    #[tokio::test]
    async fn https_urls_are_dialled_and_other_schemes_refused() {
        let dial = HyperDial::new(1024);
        // Port 9 on loopback refuses: the error is about connecting, not the scheme.
        let e = dial
            .send(HttpRequest::get("https://127.0.0.1:9/v1/chat/completions"))
            .await
            .unwrap_err();
        assert!(!e.contains("only http"), "{e}");
        let e = dial
            .send(HttpRequest::get("ftp://127.0.0.1/x"))
            .await
            .unwrap_err();
        assert!(e.contains("only http:// and https://"), "{e}");
    }
}
