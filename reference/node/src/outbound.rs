//! The node's HTTP client for federation (v1.1 §15): HTTP/1.1 over a [`Dial`] seam, so
//! the same outbox runs on tokio sockets ([`TokioDial`]) and, with the `sim` feature, on
//! turmoil's simulated network ([`SimDial`]) — reqwest cannot run inside turmoil
//! (DESIGN.md §3, §8). One connection per request: deliveries are batched (up to 100
//! envelopes per request), so the handshake is not what limits throughput.
//!
//! `https://` URLs get TLS 1.3 (v1.1 §14.1: "TLS 1.2 and below MUST be rejected") through
//! tokio-rustls on top of whatever [`Dial`] returned, so TLS also runs inside turmoil. The
//! server name (SNI and the certificate check) is always the URL's host, even when a
//! [`Resolve`] override sends the connection elsewhere (curl's `--resolve`). Plain `http://`
//! is refused unless the URL's host is a loopback or private address literal (or
//! `localhost`) and the client allows it ([`crate::config::FederationConfig::allow_private_http`]).
//! A TLS failure is a transport failure: [`TransportError::Unreachable`] naming the host
//! and the TLS reason, retried by the outbox like a refused connection (§15.6).

use axum::body::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsConnector;

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

/// Where to connect for a URL's `host:port`: the seam for name resolution overrides
/// (without an override the [`Dial`] resolves the host itself). The TLS server name stays
/// the URL host. DNS SRV/TXT discovery (v1.1 §15.1), which chooses *which URL* holds a
/// peer's node document rather than where a host connects, is [`crate::discover`].
pub trait Resolve: Send + Sync + fmt::Debug + 'static {
    /// The `(host, port)` to dial for the URL authority `host:port` (asynchronous, so an
    /// implementation may query DNS).
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> Resolving<'a>;
}

/// A [`Resolve`] answer in progress.
pub type Resolving<'a> = Pin<Box<dyn Future<Output = (String, u16)> + Send + 'a>>;

/// Fixed overrides, like curl's `--resolve`: a host name (case-insensitive, any port) →
/// `address:port`; other hosts are dialled as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StaticResolve {
    map: BTreeMap<String, (String, u16)>,
}

impl StaticResolve {
    /// Parses `name → "IP:PORT"` entries (`--resolve b.test=127.0.0.1:8788`).
    pub fn parse(entries: &BTreeMap<String, String>) -> Result<StaticResolve, String> {
        let mut map = BTreeMap::new();
        for (name, target) in entries {
            let addr: std::net::SocketAddr = target.trim().parse().map_err(|_| {
                format!("federation.resolve {name:?}: {target:?} is not an IP:PORT socket address")
            })?;
            map.insert(
                name.trim().trim_end_matches('.').to_ascii_lowercase(),
                (addr.ip().to_string(), addr.port()),
            );
        }
        Ok(StaticResolve { map })
    }
}

impl StaticResolve {
    /// Where `host:port` connects: the override for `host`, else `host:port` itself.
    pub fn lookup(&self, host: &str, port: u16) -> (String, u16) {
        let key = host.trim_end_matches('.').to_ascii_lowercase();
        self.map
            .get(&key)
            .cloned()
            .unwrap_or_else(|| (host.to_owned(), port))
    }
}

impl Resolve for StaticResolve {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> Resolving<'a> {
        let target = self.lookup(host, port);
        Box::pin(async move { target })
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

/// An `http://` or `https://host[:port]/path` URL, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// `https://` (TLS) rather than `http://`.
    pub tls: bool,
    /// Host (name or address literal, without brackets).
    pub host: String,
    /// Port (80 or 443 when absent).
    pub port: u16,
    /// Path and query (`/` when absent).
    pub path: String,
}

impl HttpUrl {
    /// Parses an `http://` or `https://` URL.
    pub fn parse(url: &str) -> Result<HttpUrl, String> {
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(format!("{url:?} is not an http:// or https:// URL"));
        };
        let default_port = if tls { 443 } else { 80 };
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
            _ => (authority, default_port),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(format!("{url:?} has no host"));
        }
        Ok(HttpUrl {
            tls,
            host: host.to_owned(),
            port,
            path: path.to_owned(),
        })
    }
}

/// Whether `host` (a URL host, without brackets) is `localhost` or a loopback, private or
/// link-local address literal: the only hosts plain `http://` may reach.
pub fn is_private_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| match ip {
            std::net::IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
            std::net::IpAddr::V6(v6) => v6.is_loopback() || v6.is_unique_local(),
        })
}

/// The federation HTTP client.
#[derive(Clone)]
pub struct HttpClient {
    dial: Arc<dyn Dial>,
    timeout: Duration,
    tls: Option<TlsConnector>,
    resolve: Option<Arc<dyn Resolve>>,
    allow_private_http: bool,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("dial", &self.dial)
            .field("timeout", &self.timeout)
            .field("tls", &self.tls.is_some())
            .field("resolve", &self.resolve)
            .field("allow_private_http", &self.allow_private_http)
            .finish()
    }
}

impl HttpClient {
    /// A client dialling through `dial`, giving each request `timeout`; plain `http://` to
    /// private hosts allowed, no TLS configured (every `https://` request fails) — see
    /// [`HttpClient::with_tls`], [`HttpClient::with_resolve`].
    /// The sockets this client dials through (the bridge sends mail through them too).
    pub fn dial(&self) -> &Arc<dyn Dial> {
        &self.dial
    }

    pub fn new(dial: Arc<dyn Dial>, timeout: Duration) -> HttpClient {
        HttpClient {
            dial,
            timeout,
            tls: None,
            resolve: None,
            allow_private_http: true,
        }
    }

    /// Verifies `https://` servers with `config` (see [`crate::tls::client_config`]).
    pub fn with_tls(mut self, config: Arc<rustls::ClientConfig>) -> HttpClient {
        self.tls = Some(TlsConnector::from(config));
        self
    }

    /// Connects through `resolve`'s overrides.
    pub fn with_resolve(mut self, resolve: Arc<dyn Resolve>) -> HttpClient {
        self.resolve = Some(resolve);
        self
    }

    /// Whether plain `http://` may reach loopback/private address literals (never others).
    pub fn allow_private_http(mut self, allow: bool) -> HttpClient {
        self.allow_private_http = allow;
        self
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
        let plain_http_allowed = self.allow_private_http && is_private_host(&u.host);
        if !u.tls && !plain_http_allowed {
            return Err(TransportError::Unreachable(format!(
                "{url}: plain http is allowed only to loopback or private addresses with allow_private_http (v1.1 §14.1 requires TLS between nodes)"
            )));
        }
        let (dial_host, dial_port) = match &self.resolve {
            Some(r) => r.resolve(&u.host, u.port).await,
            None => (u.host.clone(), u.port),
        };
        let io = self.dial.dial(&dial_host, dial_port).await.map_err(|e| {
            TransportError::Unreachable(format!(
                "connect {}:{} (for {}:{}): {e}",
                dial_host, dial_port, u.host, u.port
            ))
        })?;
        let io = if u.tls {
            self.tls_connect(&u.host, io).await?
        } else {
            io
        };
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| TransportError::Unreachable(format!("HTTP handshake: {e}")))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let host = if u.port == if u.tls { 443 } else { 80 } {
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

impl HttpClient {
    /// The TLS 1.3 handshake with `host` (SNI and certificate name) over `io`.
    async fn tls_connect(
        &self,
        host: &str,
        io: Box<dyn Io>,
    ) -> Result<Box<dyn Io>, TransportError> {
        let connector = self.tls.as_ref().ok_or_else(|| {
            TransportError::Unreachable(format!(
                "TLS to {host}: this client has no TLS configuration"
            ))
        })?;
        let name = rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(|e| {
            TransportError::Unreachable(format!("TLS to {host}: not a valid server name: {e}"))
        })?;
        let stream = connector.connect(name, io).await.map_err(|e| {
            TransportError::Unreachable(format!("TLS handshake with {host} failed: {e}"))
        })?;
        Ok(Box::new(stream) as Box<dyn Io>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_port_and_path() {
        let u = HttpUrl::parse("http://127.0.0.1:8788/v1/federation/deliver").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 8788, "/v1/federation/deliver")
        );
        let u = HttpUrl::parse("http://[::1]:9/x").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 9));
        assert_eq!(HttpUrl::parse("http://b.test").unwrap().path, "/");
        let u = HttpUrl::parse("https://b.test/.well-known/loom.json").unwrap();
        assert_eq!((u.tls, u.host.as_str(), u.port), (true, "b.test", 443));
        assert!(!HttpUrl::parse("http://b.test").unwrap().tls);
        assert!(HttpUrl::parse("ftp://b.test").is_err());
        assert!(HttpUrl::parse("http://b.test:x/").is_err());
    }

    #[test]
    fn resolve_overrides_map_names_not_ports() {
        let mut m = BTreeMap::new();
        m.insert("B.test".to_owned(), "127.0.0.1:8788".to_owned());
        let r = StaticResolve::parse(&m).unwrap();
        assert_eq!(r.lookup("b.test", 443), ("127.0.0.1".to_owned(), 8788));
        assert_eq!(r.lookup("b.test.", 80), ("127.0.0.1".to_owned(), 8788));
        assert_eq!(r.lookup("c.test", 443), ("c.test".to_owned(), 443));
        m.insert("c.test".to_owned(), "c.test:1".to_owned());
        let e = StaticResolve::parse(&m).unwrap_err();
        assert!(e.contains("c.test") && e.contains("IP:PORT"), "{e}");
    }

    #[tokio::test]
    async fn plain_http_only_reaches_private_hosts_when_allowed() {
        let c = HttpClient::new(Arc::new(TokioDial), Duration::from_secs(1));
        let e = c
            .request("GET", "http://b.test/x", &[], Vec::new())
            .await
            .unwrap_err();
        assert!(e.to_string().contains("plain http"), "{e}");
        let c = c.allow_private_http(false);
        let e = c
            .request("GET", "http://127.0.0.1:9/x", &[], Vec::new())
            .await
            .unwrap_err();
        assert!(e.to_string().contains("allow_private_http"), "{e}");
    }
}
