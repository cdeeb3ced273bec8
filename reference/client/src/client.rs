//! One keep-alive connection to a node and the requests made over it. HTTP/1.1 by default;
//! HTTP/2 when TLS ALPN selects `h2` (v1.1 §14.1). Every exchange is returned as a
//! [`Transcript`]: the conformance harness prints these, the load generator times them.

use crate::dial::{Dial, TokioDial};
use crate::error::ClientError;
use crate::tls::{Trust, client_config, server_name};
use crate::transcript::Transcript;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use std::fmt;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsConnector;

/// The JSON content type of v1.1 §14.1.
pub const JSON: &str = "application/json; charset=utf-8";

/// Default time allowed for one exchange (connect excluded).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP/1.1 (development nodes, the simulator).
    Http,
    /// TLS 1.3; HTTP/2 or HTTP/1.1 by ALPN.
    Https,
}

/// A node's base URL: scheme, host, port and an optional path prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeUrl {
    /// The scheme.
    pub scheme: Scheme,
    /// Host name or IP address (IPv6 without brackets).
    pub host: String,
    /// The port (default 80/443).
    pub port: u16,
    /// A path prefix without a trailing slash (usually empty); API paths are appended.
    pub prefix: String,
}

impl NodeUrl {
    /// Parses `http://host[:port][/prefix]` or `https://…`.
    pub fn parse(s: &str) -> Result<NodeUrl, ClientError> {
        let bad = |why: &str| ClientError::Url(format!("{s:?}: {why}"));
        let (scheme, rest) = if let Some(r) = s.strip_prefix("http://") {
            (Scheme::Http, r)
        } else if let Some(r) = s.strip_prefix("https://") {
            (Scheme::Https, r)
        } else {
            return Err(bad("must start with http:// or https://"));
        };
        let (authority, prefix) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if prefix.contains(['?', '#']) {
            return Err(bad("must not have a query or fragment"));
        }
        if authority.contains('@') {
            return Err(bad("must not contain user information"));
        }
        let default_port = match scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("unclosed '['"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| bad("bad port"))?,
                None if after.is_empty() => default_port,
                None => return Err(bad("junk after ']'")),
            };
            (h.to_owned(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_owned(), p.parse().map_err(|_| bad("bad port"))?),
                None => (authority.to_owned(), default_port),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        Ok(NodeUrl {
            scheme,
            host,
            port,
            prefix: prefix.trim_end_matches('/').to_owned(),
        })
    }

    /// `host:port` (IPv6 in brackets), as sent in `Host` / `:authority`.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for NodeUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        write!(f, "{scheme}://{}{}", self.authority(), self.prefix)
    }
}

/// The request half of an open HTTP connection.
enum Sender {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    fn is_closed(&self) -> bool {
        match self {
            Sender::H1(s) => s.is_closed(),
            Sender::H2(s) => s.is_closed(),
        }
    }

    fn version(&self) -> &'static str {
        match self {
            Sender::H1(_) => "HTTP/1.1",
            Sender::H2(_) => "HTTP/2",
        }
    }

    async fn send(
        &mut self,
        req: hyper::Request<Full<Bytes>>,
    ) -> Result<hyper::Response<hyper::body::Incoming>, hyper::Error> {
        match self {
            Sender::H1(s) => {
                s.ready().await?;
                s.send_request(req).await
            }
            Sender::H2(s) => {
                s.ready().await?;
                s.send_request(req).await
            }
        }
    }
}

/// A client of one node over one keep-alive connection, opened lazily and reopened when
/// the node closes it. Generic over the [`Dial`] seam (real TCP or turmoil).
pub struct Client<D: Dial = TokioDial> {
    url: NodeUrl,
    dial: D,
    tls: Option<TlsConnector>,
    sender: Option<Sender>,
    timeout: Duration,
    token: Option<String>,
    connects: u64,
}

impl<D: Dial> fmt::Debug for Client<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.url.to_string())
            .field("dial", &self.dial)
            .field("tls", &self.tls.is_some())
            .field("connected", &self.sender.is_some())
            .field("authenticated", &self.token.is_some())
            .finish_non_exhaustive()
    }
}

impl Client<TokioDial> {
    /// A client of `url` over real TCP.
    pub fn tcp(url: &str) -> Result<Client<TokioDial>, ClientError> {
        Client::new(url, TokioDial)
    }
}

impl<D: Dial> Client<D> {
    /// A client of `url` dialling through `dial`. `https` URLs need [`Client::with_trust`].
    pub fn new(url: &str, dial: D) -> Result<Client<D>, ClientError> {
        Ok(Client {
            url: NodeUrl::parse(url)?,
            dial,
            tls: None,
            sender: None,
            timeout: DEFAULT_TIMEOUT,
            token: None,
            connects: 0,
        })
    }

    /// Sets which server certificates to accept (required for `https`).
    pub fn with_trust(mut self, trust: &Trust) -> Result<Client<D>, ClientError> {
        self.tls = Some(TlsConnector::from(client_config(trust)?));
        Ok(self)
    }

    /// Sets the time allowed for one exchange.
    pub fn with_timeout(mut self, timeout: Duration) -> Client<D> {
        self.timeout = timeout;
        self
    }

    /// The node's base URL.
    pub fn url(&self) -> &NodeUrl {
        &self.url
    }

    /// Sets (or clears) the bearer access token sent with [`Client::call`].
    pub fn set_token(&mut self, token: Option<String>) {
        self.token = token;
    }

    /// The bearer token in use, if any.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// How many connections this client has opened (1 while keep-alive holds).
    pub fn connects(&self) -> u64 {
        self.connects
    }

    /// `HTTP/1.1` or `HTTP/2` once connected.
    pub fn http_version(&self) -> Option<&'static str> {
        self.sender.as_ref().map(Sender::version)
    }

    /// Opens the connection now (otherwise the first request does).
    pub async fn connect(&mut self) -> Result<(), ClientError> {
        if self.sender.as_ref().is_some_and(|s| !s.is_closed()) {
            return Ok(());
        }
        self.sender = None;
        let target = self.url.authority();
        let io = tokio::time::timeout(self.timeout, self.dial.dial(&self.url.host, self.url.port))
            .await
            .map_err(|_| ClientError::Timeout {
                request: format!("connect {target}"),
                after: self.timeout,
            })?
            .map_err(|source| ClientError::Connect {
                target: target.clone(),
                source,
            })?;
        let sender = match self.url.scheme {
            Scheme::Http => handshake(io, false).await?,
            Scheme::Https => {
                let tls = self.tls.as_ref().ok_or_else(|| {
                    ClientError::Tls(format!(
                        "{} is https but no trust is configured (a CA file, the node's certificate, or insecure mode)",
                        self.url
                    ))
                })?;
                let name = server_name(&self.url.host)?;
                let stream = tokio::time::timeout(self.timeout, tls.connect(name, io))
                    .await
                    .map_err(|_| ClientError::Timeout {
                        request: format!("TLS handshake with {target}"),
                        after: self.timeout,
                    })?
                    .map_err(|e| ClientError::Tls(format!("handshake with {target}: {e}")))?;
                let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                handshake(stream, h2).await?
            }
        };
        self.sender = Some(sender);
        self.connects += 1;
        Ok(())
    }

    /// Sends one request with raw body bytes and returns the exchange, whatever the status.
    /// `bearer` overrides the client's token for this request; `headers` are added as given.
    pub async fn exchange(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
        bearer: Option<&str>,
    ) -> Result<Transcript, ClientError> {
        let full_path = format!("{}{}", self.url.prefix, path);
        let mut request_headers: Vec<(String, String)> = Vec::new();
        let bearer = bearer.map(str::to_owned).or_else(|| self.token.clone());
        request_headers.push((
            "user-agent".into(),
            concat!("loom-client/", env!("CARGO_PKG_VERSION")).into(),
        ));
        request_headers.push(("accept".into(), "application/json".into()));
        if body.is_some() {
            request_headers.push(("content-type".into(), JSON.into()));
        }
        if let Some(t) = &bearer {
            request_headers.push(("authorization".into(), format!("Bearer {t}")));
        }
        for (k, v) in headers {
            // A caller's header replaces a default of the same name (a deliberately wrong
            // content type, say), rather than being sent next to it.
            let name = k.to_ascii_lowercase();
            request_headers.retain(|(n, _)| *n != name);
            request_headers.push((name, (*v).to_owned()));
        }
        let body = body.unwrap_or_default();
        let label = format!("{method} {full_path}");

        // One retry when the node closed the kept-alive connection before our request went
        // out (hyper cancels it unsent), so nothing can be applied twice.
        let mut attempt = 0;
        let (resp, started, version, sent_headers) = loop {
            attempt += 1;
            self.connect().await?;
            let Some(sender) = self.sender.as_mut() else {
                return Err(ClientError::Http("no connection".into()));
            };
            let version = sender.version();
            let mut sent_headers = request_headers.clone();
            let mut b = hyper::Request::builder().method(method);
            if let Sender::H2(_) = sender {
                let scheme = match self.url.scheme {
                    Scheme::Http => "http",
                    Scheme::Https => "https",
                };
                b = b.uri(format!("{scheme}://{}{full_path}", self.url.authority()));
                b = b.version(hyper::Version::HTTP_2);
            } else {
                b = b.uri(full_path.as_str());
                sent_headers.insert(0, ("host".into(), self.url.authority()));
            }
            for (k, v) in &sent_headers {
                b = b.header(k.as_str(), v.as_str());
            }
            let req = b
                .body(Full::new(Bytes::from(body.clone())))
                .map_err(|e| ClientError::Input(format!("cannot build request {label}: {e}")))?;
            let started = tokio::time::Instant::now();
            match tokio::time::timeout(self.timeout, sender.send(req)).await {
                Err(_) => {
                    self.sender = None;
                    return Err(ClientError::Timeout {
                        request: label,
                        after: self.timeout,
                    });
                }
                Ok(Ok(resp)) => break (resp, started, version, sent_headers),
                Ok(Err(e)) => {
                    self.sender = None;
                    if e.is_canceled() && attempt == 1 {
                        continue;
                    }
                    return Err(ClientError::Http(format!("{label}: {e}")));
                }
            }
        };
        let status = resp.status().as_u16();
        let response_headers = resp
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let remaining = self.timeout.saturating_sub(started.elapsed());
        let collected = match tokio::time::timeout(remaining, resp.into_body().collect()).await {
            Err(_) => {
                self.sender = None;
                return Err(ClientError::Timeout {
                    request: label,
                    after: self.timeout,
                });
            }
            Ok(Err(e)) => {
                self.sender = None;
                return Err(ClientError::Http(format!("{label}: reading the body: {e}")));
            }
            Ok(Ok(c)) => c.to_bytes(),
        };
        Ok(Transcript {
            method: method.to_owned(),
            path: full_path,
            version: version.to_owned(),
            request_headers: sent_headers,
            request_body: body,
            status,
            response_headers,
            response_body: collected.to_vec(),
            elapsed: started.elapsed(),
        })
    }

    /// Sends a JSON request (with the client's token, if set) and returns the exchange,
    /// whatever the status.
    pub async fn call(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Transcript, ClientError> {
        let bytes = body
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| ClientError::Input(format!("cannot serialize the request body: {e}")))?;
        self.exchange(method, path, &[], bytes, None).await
    }

    /// Sends a JSON request and requires status `want` and a JSON body; any other status is
    /// [`ClientError::Api`] with the node's §24.1 error.
    pub async fn expect(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        want: u16,
    ) -> Result<Reply, ClientError> {
        let t = self.call(method, path, body).await?;
        Reply::require(t, want)
    }
}

/// A successful exchange: the parsed JSON body and the transcript.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The response body as JSON.
    pub body: Value,
    /// The exchange.
    pub transcript: Transcript,
}

impl Reply {
    /// Requires status `want` and a JSON body.
    pub fn require(t: Transcript, want: u16) -> Result<Reply, ClientError> {
        if t.status != want {
            return Err(ClientError::Api {
                error: t.api_error().map(Box::new),
                transcript: Box::new(t),
            });
        }
        match t.json() {
            Some(body) => Ok(Reply {
                body,
                transcript: t,
            }),
            None => Err(ClientError::BadResponse {
                reason: "the body is not JSON".into(),
                transcript: Box::new(t),
            }),
        }
    }

    /// The string member `field` of the body, or a [`ClientError::BadResponse`] naming it.
    pub fn str(&self, field: &str) -> Result<&str, ClientError> {
        self.body
            .get(field)
            .and_then(Value::as_str)
            .ok_or_else(|| ClientError::BadResponse {
                reason: format!("no string member {field:?} in {}", self.body),
                transcript: Box::new(self.transcript.clone()),
            })
    }
}

/// Runs the HTTP handshake on `io` and spawns the connection driver.
async fn handshake<I>(io: I, h2: bool) -> Result<Sender, ClientError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(io);
    if h2 {
        let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(|e| ClientError::Http(format!("HTTP/2 handshake: {e}")))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Sender::H2(sender))
    } else {
        let (sender, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| ClientError::Http(format!("HTTP/1.1 handshake: {e}")))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Sender::H1(sender))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let u = NodeUrl::parse("http://127.0.0.1:8787").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.prefix.as_str()),
            ("127.0.0.1", 8787, "")
        );
        let u = NodeUrl::parse("https://loom.example.org/base/").unwrap();
        assert_eq!((u.port, u.prefix.as_str()), (443, "/base"));
        let u = NodeUrl::parse("http://[::1]:9/").unwrap();
        assert_eq!(u.authority(), "[::1]:9");
        for bad in [
            "ftp://x",
            "http://",
            "http://h:port",
            "http://h/?q",
            "http://u@h",
        ] {
            assert!(NodeUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
