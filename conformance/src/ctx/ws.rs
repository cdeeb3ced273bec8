//! The harness's WebSocket side (v1.1 §17, v1.0 §16): a session on the target's advertised
//! `websocket_url` that keeps every frame it sent and received, recorded as one transcript
//! (`WS <path>`: the frames sent as the request body, those received as the response body,
//! one JSON text per line) so a verdict shows the frames that decided it.
//!
//! What the spec leaves open is read generously, never imposed: the event type in `event`
//! (v1.0 §16.2) or `type`; the envelope, thread and identity on the frame or in its `data`;
//! the cursor as a string or a number.

use super::{Ctx, Ex, Ident};
use crate::finding::Finding;
use loom_client::Transcript;
use loom_client::ws::{self, Frame, Refused, TokenIn, WsClient};
use serde_json::Value;
use std::time::{Duration, Instant};

/// One open WebSocket of a case.
pub struct WsSession {
    client: Option<WsClient>,
    path: String,
    sent: Vec<String>,
    got: Vec<String>,
    closed: Option<Option<(u16, String)>>,
    opened: Instant,
    wait: Duration,
}

impl std::fmt::Debug for WsSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsSession")
            .field("path", &self.path)
            .field("sent", &self.sent.len())
            .field("got", &self.got.len())
            .finish_non_exhaustive()
    }
}

/// The type of a real-time frame (`event`, v1.0 §16.2; or `type`).
pub fn kind(f: &Value) -> Option<&str> {
    f["event"].as_str().or_else(|| f["type"].as_str())
}

/// The member `name` on the frame or in its `data` / `payload`.
pub fn member<'a>(f: &'a Value, name: &str) -> Option<&'a str> {
    f[name]
        .as_str()
        .or_else(|| f["data"][name].as_str())
        .or_else(|| f["payload"][name].as_str())
}

/// The envelope a frame is about: `envelope_id`, or `data.id` as v1.0 §16.2 shows it.
pub fn envelope(f: &Value) -> Option<&str> {
    member(f, "envelope_id").or_else(|| match kind(f) {
        Some("envelope.new" | "envelope.retracted") => f["data"]["id"].as_str(),
        _ => None,
    })
}

/// The thread a frame is about.
pub fn thread(f: &Value) -> Option<&str> {
    member(f, "thread_id")
}

/// The identity a frame is about (`identity`; v1.0 §16.4 presence carries it in `data`).
pub fn identity(f: &Value) -> Option<&str> {
    member(f, "identity")
}

/// The `event_id` of a frame (§17.2).
pub fn event_id(f: &Value) -> Option<&str> {
    f["event_id"].as_str().filter(|s| !s.is_empty())
}

/// The `cursor` of a frame as text (§17.2 shows a string; a number is read as its digits).
pub fn cursor(f: &Value) -> Option<String> {
    match &f["cursor"] {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// What an upgrade came to.
#[derive(Debug)]
pub enum Upgrade {
    /// Open.
    Open(Box<WsSession>),
    /// Refused with an HTTP status (recorded as exchange `Ex`).
    Refused(u16, Ex),
}

impl Ctx {
    /// The target's WebSocket endpoint as an HTTP base URL and a path: the node document's
    /// `websocket_url` (§15.2), else `/ws` on the API's origin (§17's example).
    pub fn ws_endpoint(&self) -> (String, String) {
        let advertised = self.target.node_document["websocket_url"]
            .as_str()
            .and_then(|u| {
                let (scheme, rest) = if let Some(r) = u.strip_prefix("wss://") {
                    ("https://", r)
                } else {
                    ("http://", u.strip_prefix("ws://")?)
                };
                let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                Some((format!("{scheme}{authority}"), path.to_owned()))
            });
        // The embedded node advertises its configured domain; the harness reaches it where
        // it listens.
        match advertised {
            Some((base, path)) if !self.target.embedded => {
                (base, if path.is_empty() { "/ws".into() } else { path })
            }
            Some((_, path)) if !path.is_empty() => (self.target.url.clone(), path),
            _ => (self.target.url.clone(), "/ws".into()),
        }
    }

    /// How long a stream is waited on for a frame. Every such wait is for a frame a correct
    /// node sends (an absence is judged from the frames that came before a proof event, never
    /// from a wait running out), so a long wait costs time only where something is missing,
    /// and it is generous for loaded machines.
    fn ws_wait(&self) -> Duration {
        Duration::from_secs_f64(10.0 * self.timeout_scale)
    }

    /// Opens the WebSocket as `who` with its token where `token_in` says. A refusal is
    /// recorded as an exchange; a 404 means the target has no WebSocket endpoint there
    /// (`unsupported`, never a refusal).
    pub async fn ws_upgrade(
        &mut self,
        who: Option<&Ident>,
        token_in: TokenIn,
        token: Option<&str>,
    ) -> Result<Upgrade, Finding> {
        let (base, path) = self.ws_endpoint();
        let token = token.or(who.map(|w| w.token.as_str())).unwrap_or("");
        let wait = self.ws_wait();
        let started = Instant::now();
        let r = ws::connect(
            &loom_client::TokioDial,
            &base,
            self.target.trust.as_ref(),
            &path,
            token,
            token_in,
            wait,
        )
        .await;
        let shown_path = match token_in {
            TokenIn::Query => format!("{path}?token=<access token>"),
            _ => path.clone(),
        };
        match r {
            Ok(client) => Ok(Upgrade::Open(Box::new(WsSession {
                client: Some(client),
                path: shown_path,
                sent: Vec::new(),
                got: Vec::new(),
                closed: None,
                opened: started,
                wait,
            }))),
            Err(Refused::Status(status, body)) => {
                let ex = self.net.record(Transcript {
                    method: "GET".into(),
                    path: shown_path.clone(),
                    version: "HTTP/1.1".into(),
                    request_headers: vec![
                        ("upgrade".into(), "websocket".into()),
                        ("connection".into(), "Upgrade".into()),
                    ],
                    request_body: Vec::new(),
                    status,
                    response_headers: Vec::new(),
                    response_body: body.into_bytes(),
                    elapsed: started.elapsed(),
                });
                if matches!(status, 404 | 405) && token_in != TokenIn::None {
                    return Err(Finding::Unsupported(format!(
                        "the WebSocket upgrade at {path} answered HTTP {status}: no such route, so the target offers no real-time stream there (v1.1 §17)"
                    )));
                }
                Ok(Upgrade::Refused(status, ex))
            }
            Err(Refused::Failed(e)) => Err(Finding::Error(format!(
                "WebSocket upgrade at {base}{path}: {e}"
            ))),
        }
    }

    /// Opens the WebSocket as `who` with `?token=` (§17); any refusal is a failure of the
    /// connection requirement.
    pub async fn ws_open(&mut self, who: &Ident) -> Result<WsSession, Finding> {
        match self.ws_upgrade(Some(who), TokenIn::Query, None).await? {
            Upgrade::Open(s) => Ok(*s),
            Upgrade::Refused(status, ex) => Err(Finding::Fail {
                expected:
                    "a WebSocket upgrade (101) for a valid access token in ?token= (v1.1 §17)"
                        .into(),
                actual: format!("HTTP {status}"),
                decisive: Some(ex),
            }),
        }
    }

    /// Records `s`'s frames as one exchange and returns it.
    pub fn ws_record(&mut self, s: &WsSession) -> Ex {
        let status = 101;
        let mut received = s.got.join("\n");
        if let Some(c) = &s.closed {
            received.push_str(&match c {
                Some((code, reason)) => format!("\n<close {code} {reason}>"),
                None => "\n<closed>".to_owned(),
            });
        }
        self.net.record(Transcript {
            method: "WS".into(),
            path: s.path.clone(),
            version: "HTTP/1.1".into(),
            request_headers: vec![("upgrade".into(), "websocket".into())],
            request_body: s.sent.join("\n").into_bytes(),
            status,
            response_headers: Vec::new(),
            response_body: received.into_bytes(),
            elapsed: s.opened.elapsed(),
        })
    }

    /// The id of the newest event `who` can see on the catch-up feed (§16.8), for a
    /// subscription that starts there (`since`), so no event after it is missed however
    /// late the target applies the subscription.
    pub async fn ws_resume_point(&mut self, who: &Ident) -> Result<Option<String>, Finding> {
        let evs = self.net.events(who, None).await?;
        Ok(evs
            .last()
            .and_then(|e| super::shapes::event_id(e))
            .map(str::to_owned))
    }

    /// Opens `who`'s WebSocket subscribed to `all_threads` from its newest event (§17.1).
    ///
    /// An identity with no event yet subscribes without `since`, which starts wherever the
    /// node stands when it takes the frame: an event the case makes before then is not owed
    /// to the stream. So a `ping` follows, and its `pong` (§17.4) is awaited: frames of one
    /// connection are taken in order, so the subscription is in force once the pong comes.
    /// (Without this, a loaded self-test once saw Carol's subscription taken after the
    /// message meant to prove her stream live.) A node that does not answer ping is waited
    /// for only the session's wait; frames read meanwhile stay in [`WsSession::received`].
    pub async fn ws_subscribed(&mut self, who: &Ident) -> Result<WsSession, Finding> {
        let since = self.ws_resume_point(who).await?;
        let mut s = self.ws_open(who).await?;
        s.subscribe(since.as_deref()).await?;
        if since.is_none() {
            s.send(&serde_json::json!({"action": "ping"})).await?;
            s.until(|f| kind(f) == Some("pong")).await;
        }
        Ok(s)
    }
}

impl WsSession {
    /// Sends one JSON frame.
    pub async fn send(&mut self, v: &Value) -> Result<(), Finding> {
        self.sent.push(v.to_string());
        let c = self
            .client
            .as_mut()
            .ok_or_else(|| Finding::Error("the WebSocket is closed".into()))?;
        c.send(v).await.map_err(|e| {
            Finding::Error(format!(
                "WebSocket send: {e} (frames so far: {})",
                self.got.len()
            ))
        })
    }

    /// `subscribe` to `all_threads`, after `since` when given (§17.1).
    pub async fn subscribe(&mut self, since: Option<&str>) -> Result<(), Finding> {
        let mut m =
            serde_json::json!({"action": "subscribe", "channels": [{"type": "all_threads"}]});
        if let Some(s) = since {
            m["since"] = s.into();
        }
        self.send(&m).await
    }

    /// The next frame within `wait` (`None`: nothing came), kept for the transcript.
    pub async fn next(&mut self, wait: Duration) -> Option<Frame> {
        let c = self.client.as_mut()?;
        let f = c.next(wait).await?;
        match &f {
            Frame::Json(v) => self.got.push(v.to_string()),
            Frame::Text(t) => self.got.push(t.clone()),
            Frame::Binary(b) => self.got.push(format!("<binary {} bytes>", b.len())),
            Frame::Closed(c) => {
                self.closed = Some(c.clone());
                self.client = None;
            }
        }
        Some(f)
    }

    /// JSON frames until `want` holds for one (returned) or the session's wait passes.
    pub async fn until(&mut self, mut want: impl FnMut(&Value) -> bool) -> Option<Value> {
        self.until_within(self.wait, &mut want).await
    }

    /// Like [`WsSession::until`] within `wait`.
    pub async fn until_within(
        &mut self,
        wait: Duration,
        want: &mut impl FnMut(&Value) -> bool,
    ) -> Option<Value> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await? {
                Frame::Json(v) if want(&v) => return Some(v),
                Frame::Closed(_) => return None,
                _ => {}
            }
        }
    }

    /// Every JSON frame that arrives within `wait`.
    pub async fn drain(&mut self, wait: Duration) -> Vec<Value> {
        let mut out = Vec::new();
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await {
                Some(Frame::Json(v)) => out.push(v),
                Some(Frame::Closed(_)) | None => return out,
                Some(_) => {}
            }
        }
    }

    /// The first event of `kind` about envelope `env`, if it comes.
    pub async fn event_for(&mut self, k: &str, env: &str) -> Option<Value> {
        self.until(|f| kind(f) == Some(k) && envelope(f) == Some(env))
            .await
    }

    /// How the session ended, if the node closed it.
    pub fn closed(&self) -> Option<&Option<(u16, String)>> {
        self.closed.as_ref()
    }

    /// Frames received so far (JSON texts).
    pub fn received(&self) -> &[String] {
        &self.got
    }

    /// The session's default wait.
    pub fn wait(&self) -> Duration {
        self.wait
    }

    /// Closes the socket (1000).
    pub async fn close(&mut self) {
        if let Some(c) = self.client.take() {
            c.close().await;
        }
    }
}
