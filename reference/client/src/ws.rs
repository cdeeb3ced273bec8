//! A WebSocket client of the real-time stream (v1.1 §17, v1.0 §16) of any node, over the same
//! [`Dial`] seam as the HTTP client (real TCP, or turmoil in the simulator) and the same TLS
//! trust. It speaks frames and JSON only; what a frame means is for the caller to judge.
//!
//! The access token goes in `?token=` (§17) or, with [`TokenIn::Header`], in an
//! `Authorization: Bearer` header of the upgrade request.

use crate::client::{NodeUrl, Scheme};
use crate::dial::Dial;
use crate::error::ClientError;
use crate::tls::{Trust, client_config_with, server_name};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsConnector;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// Where the upgrade request carries the access token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenIn {
    /// `wss://…/ws?token=…` (§17).
    Query,
    /// `Authorization: Bearer …`.
    Header,
    /// No token (to see a refusal).
    None,
}

/// What came back from the node.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// A text frame holding JSON.
    Json(Value),
    /// A text frame that is not JSON.
    Text(String),
    /// A binary frame.
    Binary(Vec<u8>),
    /// The node closed the connection: the close code and reason, when it sent them.
    Closed(Option<(u16, String)>),
}

/// Why opening a WebSocket failed.
#[derive(Debug)]
pub enum Refused {
    /// The node answered the upgrade with an HTTP status (401, 404, 426, 429, …) and a body.
    Status(u16, String),
    /// Connecting, TLS or the handshake failed.
    Failed(ClientError),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Status(s, body) => write!(f, "upgrade answered {s}: {body}"),
            Refused::Failed(e) => write!(f, "{e}"),
        }
    }
}

/// Any stream a WebSocket can run over.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// One open WebSocket.
pub struct WsClient {
    ws: WebSocketStream<Box<dyn Stream>>,
}

impl std::fmt::Debug for WsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsClient").finish_non_exhaustive()
    }
}

fn failed(e: impl std::fmt::Display) -> Refused {
    Refused::Failed(ClientError::Http(e.to_string()))
}

/// Opens `path` (usually `/ws`) on the node at `base` with `token`, within `timeout`.
pub async fn connect<D: Dial>(
    dial: &D,
    base: &str,
    trust: Option<&Trust>,
    path: &str,
    token: &str,
    token_in: TokenIn,
    timeout: Duration,
) -> Result<WsClient, Refused> {
    let url = NodeUrl::parse(base).map_err(Refused::Failed)?;
    let io = tokio::time::timeout(timeout, dial.dial(&url.host, url.port))
        .await
        .map_err(|_| failed(format!("connect {} timed out", url.authority())))?
        .map_err(|source| {
            Refused::Failed(ClientError::Connect {
                target: url.authority(),
                source,
            })
        })?;
    let stream: Box<dyn Stream> = match url.scheme {
        Scheme::Http => Box::new(io),
        Scheme::Https => {
            let trust = trust.ok_or_else(|| {
                Refused::Failed(ClientError::Tls(format!(
                    "{base} is https but no trust is configured"
                )))
            })?;
            // RFC 6455 runs over HTTP/1.1: offer only that.
            let config = client_config_with(trust, &[&rustls::version::TLS13], &[b"http/1.1"])
                .map_err(Refused::Failed)?;
            let name = server_name(&url.host).map_err(Refused::Failed)?;
            let tls = tokio::time::timeout(timeout, TlsConnector::from(config).connect(name, io))
                .await
                .map_err(|_| failed("TLS handshake timed out"))?
                .map_err(|e| Refused::Failed(ClientError::Tls(e.to_string())))?;
            Box::new(tls)
        }
    };
    let scheme = match url.scheme {
        Scheme::Http => "ws",
        Scheme::Https => "wss",
    };
    let query = match token_in {
        TokenIn::Query => format!("?token={}", percent_encode(token)),
        _ => String::new(),
    };
    let target = format!("{scheme}://{}{}{path}{query}", url.authority(), url.prefix);
    let mut req = target.into_client_request().map_err(failed)?;
    if token_in == TokenIn::Header {
        let v = format!("Bearer {token}").parse().map_err(failed)?;
        req.headers_mut().insert("authorization", v);
    }
    let config = WebSocketConfig::default().max_message_size(Some(16 << 20));
    let handshake = tokio_tungstenite::client_async_with_config(req, stream, Some(config));
    match tokio::time::timeout(timeout, handshake).await {
        Err(_) => Err(failed("WebSocket handshake timed out")),
        Ok(Ok((ws, _))) => Ok(WsClient { ws }),
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(resp))) => {
            let status = resp.status().as_u16();
            let body = resp
                .body()
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default();
            Err(Refused::Status(status, body))
        }
        Ok(Err(e)) => Err(failed(e)),
    }
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl WsClient {
    /// Sends one JSON text frame.
    pub async fn send(&mut self, v: &Value) -> Result<(), ClientError> {
        self.send_text(&v.to_string()).await
    }

    /// Sends one text frame as given (malformed input included).
    pub async fn send_text(&mut self, text: &str) -> Result<(), ClientError> {
        self.ws
            .send(Message::Text(text.into()))
            .await
            .map_err(|e| ClientError::Http(format!("websocket send: {e}")))
    }

    /// The next frame, or `None` when nothing arrives within `wait`. WebSocket-level pings
    /// and pongs are skipped.
    pub async fn next(&mut self, wait: Duration) -> Option<Frame> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let m = tokio::time::timeout_at(deadline, self.ws.next())
                .await
                .ok()?;
            return Some(match m {
                None => Frame::Closed(None),
                Some(Err(_)) => Frame::Closed(None),
                Some(Ok(Message::Text(t))) => match serde_json::from_str(t.as_str()) {
                    Ok(v) => Frame::Json(v),
                    Err(_) => Frame::Text(t.to_string()),
                },
                Some(Ok(Message::Binary(b))) => Frame::Binary(b.to_vec()),
                Some(Ok(Message::Close(c))) => {
                    Frame::Closed(c.map(|c| (u16::from(c.code), c.reason.to_string())))
                }
                Some(Ok(_)) => continue,
            });
        }
    }

    /// Frames until one satisfies `want` (returned) or `wait` passes (`None`); the others
    /// are handed to `seen`.
    pub async fn until(
        &mut self,
        wait: Duration,
        mut want: impl FnMut(&Frame) -> bool,
        mut seen: impl FnMut(Frame),
    ) -> Option<Frame> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let f = self.next(left).await?;
            if want(&f) {
                return Some(f);
            }
            let closed = matches!(f, Frame::Closed(_));
            seen(f);
            if closed {
                return None;
            }
        }
    }

    /// Closes with code 1000.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}
