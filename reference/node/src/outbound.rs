//! The node's HTTP client for federation (v1.1 §15): plain HTTP/1.1 over a [`Dial`] seam, so
//! the same outbox runs on tokio sockets ([`TokioDial`]) and, with the `sim` feature, on
//! turmoil's simulated network ([`SimDial`]) — reqwest cannot run inside turmoil
//! (DESIGN.md §3, §8). One connection per request: deliveries are batched (up to 100
//! envelopes per request), so the handshake is not what limits throughput.

use axum::body::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// A byte stream to a peer.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

/// A connection attempt in progress.
pub type Connecting<'a> = Pin<Box<dyn Future<Output = io::Result<Box<dyn Io>>> + Send + 'a>>;

/// Opens byte streams to `host:port`.
pub trait Dial: Send + Sync + fmt::Debug + 'static {
    /// Connects.
    fn dial<'a>(&'a self, host: &'a str, port: u16) -> Connecting<'a>;
}

/// Real TCP through tokio.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioDial;

impl Dial for TokioDial {
    fn dial<'a>(&'a self, host: &'a str, port: u16) -> Connecting<'a> {
        Box::pin(async move {
            let s = tokio::net::TcpStream::connect((host, port)).await?;
            s.set_nodelay(true)?;
            Ok(Box::new(s) as Box<dyn Io>)
        })
    }
}

/// turmoil's simulated TCP (feature `sim`); `host` is a turmoil host name.
#[cfg(feature = "sim")]
#[derive(Debug, Clone, Copy, Default)]
pub struct SimDial;

#[cfg(feature = "sim")]
impl Dial for SimDial {
    fn dial<'a>(&'a self, host: &'a str, port: u16) -> Connecting<'a> {
        Box::pin(async move {
            let s = turmoil::net::TcpStream::connect((host, port)).await?;
            Ok(Box::new(s) as Box<dyn Io>)
        })
    }
}

/// Why a request got no HTTP answer (the §15.6 failure kinds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// The URL is unusable or the connection failed.
    Unreachable(String),
    /// No answer in time.
    Timeout,
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Unreachable(why) => write!(f, "unreachable: {why}"),
            TransportError::Timeout => f.write_str("timed out"),
        }
    }
}

/// An HTTP answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Body bytes.
    pub body: Bytes,
}

/// The largest answer body read (node documents, identities, receipts are small).
pub const MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;

/// An `http://host[:port]/path` URL, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// Host (name or address literal, without brackets).
    pub host: String,
    /// Port (80 when absent).
    pub port: u16,
    /// Path and query (`/` when absent).
    pub path: String,
}

impl HttpUrl {
    /// Parses a plain-HTTP URL.
    pub fn parse(url: &str) -> Result<HttpUrl, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url:?} is not an http:// URL"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
                h,
                p.parse::<u16>()
                    .map_err(|_| format!("{url:?}: bad port {p:?}"))?,
            ),
            _ => (authority, 80),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(format!("{url:?} has no host"));
        }
        Ok(HttpUrl {
            host: host.to_owned(),
            port,
            path: path.to_owned(),
        })
    }
}

/// The federation HTTP client.
#[derive(Debug, Clone)]
pub struct HttpClient {
    dial: Arc<dyn Dial>,
    timeout: Duration,
}

impl HttpClient {
    /// A client dialling through `dial`, giving each request `timeout`.
    pub fn new(dial: Arc<dyn Dial>, timeout: Duration) -> HttpClient {
        HttpClient { dial, timeout }
    }

    /// Sends one request and reads the answer.
    pub async fn request(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<Reply, TransportError> {
        match tokio::time::timeout(self.timeout, self.request_inner(method, url, headers, body))
            .await
        {
            Ok(r) => r,
            Err(_) => Err(TransportError::Timeout),
        }
    }

    async fn request_inner(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<Reply, TransportError> {
        let u = HttpUrl::parse(url).map_err(TransportError::Unreachable)?;
        let io = self
            .dial
            .dial(&u.host, u.port)
            .await
            .map_err(|e| TransportError::Unreachable(format!("connect {}:{}: {e}", u.host, u.port)))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| TransportError::Unreachable(format!("HTTP handshake: {e}")))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let host = if u.port == 80 {
            u.host.clone()
        } else {
            format!("{}:{}", u.host, u.port)
        };
        let mut b = hyper::Request::builder()
            .method(method)
            .uri(&u.path)
            .header("host", host);
        if !body.is_empty() {
            b = b.header("content-type", "application/json; charset=utf-8");
        }
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let req = b
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| TransportError::Unreachable(format!("request: {e}")))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| TransportError::Unreachable(format!("send: {e}")))?;
        let status = resp.status().as_u16();
        let body = Limited::new(resp.into_body(), MAX_REPLY_BYTES)
            .collect()
            .await
            .map_err(|e| TransportError::Unreachable(format!("read answer: {e}")))?
            .to_bytes();
        Ok(Reply { status, body })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_port_and_path() {
        let u = HttpUrl::parse("http://127.0.0.1:8788/v1/federation/deliver").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("127.0.0.1", 8788, "/v1/federation/deliver"));
        let u = HttpUrl::parse("http://[::1]:9/x").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 9));
        assert_eq!(HttpUrl::parse("http://b.test").unwrap().path, "/");
        assert!(HttpUrl::parse("https://b.test").is_err());
        assert!(HttpUrl::parse("http://b.test:x/").is_err());
    }
}
