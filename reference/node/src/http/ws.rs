//! `GET /ws` (v1.1 §17, v1.0 §16): the WebSocket shell. It authenticates the upgrade, then
//! carries frames between the socket and the service: client frames are parsed once
//! (`loom_protocol::realtime::parse_action`) and handed to the service; events come from the
//! hub (`service::realtime`) in log order. All decisions live in the service and the
//! protocol crate; this file only moves bytes and keeps time.
//!
//! Close codes (RFC 6455 §7.4.1; the spec names none): 1008 when no `ping` came for
//! `ping_timeout_secs` (§17.4), 1013 for a slow consumer (a frame waited `send_timeout_ms`
//! to be written), 1011 when the store fails, 1001 when the node shuts down. Refusals of
//! single frames are `error` frames carrying the §24.1 error object; the connection stays.

use super::AppState;
use crate::error::ApiError;
use crate::service::Caller;
use crate::service::rate_limit::LimitClass;
use crate::service::realtime::Connection;
use axum::Router;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use axum::routing::get;
use loom_protocol::realtime::{Channel, ClientAction, heartbeat_overdue, parse_action};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/ws", get(upgrade))
}

/// `?token=` (§17). Other parameters are refused by name.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WsQuery {
    token: Option<String>,
}

/// The bearer token of an upgrade: the `Authorization` header, else `?token=`. The token is
/// never logged or echoed.
fn token<'a>(headers: &'a HeaderMap, query: &'a WsQuery) -> Result<&'a str, ApiError> {
    if let Some(v) = headers.get(header::AUTHORIZATION) {
        return v
            .to_str()
            .ok()
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim)
            .ok_or_else(|| {
                ApiError::unauthenticated("the Authorization header must be 'Bearer <token>'")
            });
    }
    query.token.as_deref().ok_or_else(|| {
        ApiError::unauthenticated(
            "a WebSocket connection needs an access token: ?token= or Authorization: Bearer (v1.1 §17)",
        )
    })
}

async fn upgrade(
    State(s): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<WsQuery>, axum::extract::rejection::QueryRejection>,
    ws: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let Query(query) =
        query.map_err(|e| ApiError::bad_request("$query", e.body_text(), "v1.1 §17"))?;
    let dev = s.deviations.realtime;
    let authenticated = match token(&headers, &query) {
        Ok(_) if dev.header_token_only && headers.get(header::AUTHORIZATION).is_none() => Err(
            ApiError::unauthenticated("only an Authorization header is taken here"),
        ),
        Ok(t) => s.authenticate(t),
        Err(e) => Err(e),
    };
    let caller = match authenticated {
        Err(_) if dev.accept_without_token => Caller {
            identity: loom_protocol::Address::parse(&format!(
                "loom://anonymous@{}",
                s.config.domain
            ))
            .map_err(|e| ApiError::internal(e.to_string()))?,
            key_id: String::new(),
        },
        r => r?,
    };
    let ws = ws.map_err(|e| {
        ApiError::bad_request(
            "Upgrade",
            format!("{}: /ws is a WebSocket endpoint (RFC 6455)", e.body_text()),
            "v1.1 §17",
        )
        .with_status(426)
        .with_header("upgrade", "websocket")
    })?;
    let slot = s.realtime_connect(&caller)?;
    let cfg = &s.config.realtime;
    Ok(ws
        .max_message_size(cfg.max_frame_bytes)
        .max_frame_size(cfg.max_frame_bytes)
        // tungstenite requires the buffer that triggers a flush to be below the cap.
        .write_buffer_size(cfg.max_write_buffer_bytes / 2)
        .max_write_buffer_size(cfg.max_write_buffer_bytes)
        .on_upgrade(move |socket| Session::new(s, caller, slot, socket).run()))
}

/// What ends a session.
enum End {
    /// The client went away or broke the protocol; nothing more to say.
    Gone,
    /// Close with this code and reason.
    Close(u16, String),
}

struct Session {
    svc: AppState,
    caller: Caller,
    slot: Connection,
    socket: WebSocket,
    channels: Option<Vec<Channel>>,
    position: i64,
    last_ping: loom_protocol::Timestamp,
    /// `ws-drop-event-on-resume`: the next frame is dropped.
    drop_next: bool,
}

impl Session {
    fn new(svc: AppState, caller: Caller, slot: Connection, socket: WebSocket) -> Session {
        let last_ping = svc.env.now();
        Session {
            svc,
            caller,
            slot,
            socket,
            channels: None,
            position: 0,
            last_ping,
            drop_next: false,
        }
    }

    async fn run(mut self) {
        let end = self.serve().await;
        let key = self.slot.id;
        // The connection stops counting now; a close frame behind a full buffer (a slow
        // consumer) still gets `send_timeout_ms` to reach a client that reads again.
        drop(self.slot);
        if let End::Close(code, reason) = end {
            tracing::debug!(connection = key, code, %reason, "websocket closed by the node");
            let close = Message::Close(Some(CloseFrame {
                code,
                reason: reason.into(),
            }));
            let grace = Duration::from_millis(self.svc.config.realtime.send_timeout_ms);
            let _ = tokio::time::timeout(grace, self.socket.send(close)).await;
        }
    }

    async fn send(&mut self, text: &str) -> Result<(), End> {
        let timeout = Duration::from_millis(self.svc.config.realtime.send_timeout_ms);
        match tokio::time::timeout(timeout, self.socket.send(Message::Text(text.into()))).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(End::Gone),
            Err(_) => Err(End::Close(
                1013,
                format!(
                    "slow consumer: a frame waited more than {} ms to be written; reconnect and resume with since",
                    timeout.as_millis()
                ),
            )),
        }
    }

    async fn send_value(&mut self, v: Value) -> Result<(), End> {
        self.send(&v.to_string()).await
    }

    /// An `error` frame carrying the §24.1 error object (with the node's time).
    async fn send_error(&mut self, action: Option<&str>, e: &ApiError) -> Result<(), End> {
        let error = e.error_object(None, Some(self.svc.env.now().to_rfc3339()));
        self.send_value(json!({"event": "error", "action": action, "error": error}))
            .await
    }

    async fn serve(&mut self) -> End {
        let cfg = self.svc.config.realtime.clone();
        let mut commits = self.svc.store.watch_commits();
        let mut shutdown = self.svc.realtime_shutdown_signal();
        let mut heartbeat =
            tokio::time::interval(Duration::from_millis(cfg.heartbeat_check_ms.max(1)));
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let limits = cfg.limits();
        let ping_timeout = i64::try_from(cfg.ping_timeout_secs).unwrap_or(i64::MAX);
        loop {
            if let Err(end) = self.deliver().await {
                return end;
            }
            tokio::select! {
                m = self.socket.recv() => match m {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return End::Gone,
                    Some(Ok(Message::Text(t))) => {
                        if let Err(end) = self.handle(t.as_str(), &limits).await {
                            return end;
                        }
                    }
                    Some(Ok(Message::Binary(_))) => {
                        let e = ApiError::bad_request("$frame", "frames are JSON text, not binary", "v1.1 §17");
                        if let Err(end) = self.send_error(None, &e).await {
                            return end;
                        }
                    }
                    Some(Ok(_)) => {} // WebSocket-level ping/pong: answered by the library
                },
                r = commits.changed() => if r.is_err() { return End::Close(1001, "the node is shutting down".into()) },
                _ = shutdown.changed() => return End::Close(1001, "the node is shutting down".into()),
                _ = heartbeat.tick() => {
                    if heartbeat_overdue(self.last_ping, self.svc.env.now(), ping_timeout) {
                        return End::Close(
                            1008,
                            format!("no ping for {ping_timeout} s (v1.1 §17.4: clients ping every 30 s)"),
                        );
                    }
                }
            }
        }
    }

    /// Sends what the log holds past this connection's position, batch by batch.
    async fn deliver(&mut self) -> Result<(), End> {
        let Some(channels) = self.channels.clone() else {
            return Ok(());
        };
        loop {
            let batch = self
                .svc
                .realtime_batch(&self.caller.identity, &channels, self.position)
                .map_err(|e| End::Close(1011, e.message()))?;
            let dev = self.svc.deviations.realtime;
            for f in &batch.frames {
                if std::mem::take(&mut self.drop_next) {
                    continue;
                }
                if dev.omit_event_ids {
                    let mut v: Value = serde_json::from_str(f).unwrap_or_default();
                    if let Some(m) = v.as_object_mut() {
                        m.remove("event_id");
                        m.remove("cursor");
                    }
                    self.send(&v.to_string()).await?;
                    continue;
                }
                self.send(f).await?;
            }
            if batch.position == self.position {
                return Ok(());
            }
            self.position = batch.position;
        }
    }

    async fn handle(
        &mut self,
        text: &str,
        limits: &loom_protocol::realtime::RealtimeLimits,
    ) -> Result<(), End> {
        let key = format!("ws:{}", self.slot.id);
        if let Some(d) = self.svc.rate_check(LimitClass::WsMessages, &key)
            && !d.allowed
        {
            let e = ApiError::new(
                loom_protocol::ErrorCode::RateLimitExceeded,
                "$frame",
                format!(
                    "at most {} messages a minute on one connection; retry in {} s",
                    d.limit, d.reset_secs
                ),
                "v1.1 §14.3",
            );
            return self.send_error(None, &e).await;
        }
        let action = match parse_action(text, limits) {
            Ok(a) => a,
            Err(e) => return self.send_error(None, &e.into()).await,
        };
        let name = action.name();
        let reply = match action {
            ClientAction::Subscribe { channels, since } => self
                .svc
                .realtime_resume_point(&self.caller, since.as_deref())
                .map(|position| {
                    self.position = position;
                    let listed: Vec<Value> = channels.iter().map(Channel::to_json).collect();
                    let dev = self.svc.deviations.realtime;
                    self.drop_next = since.is_some() && dev.drop_event_on_resume;
                    if !dev.ignore_subscribe {
                        self.channels = Some(channels);
                    }
                    Some(json!({"event": "subscribed", "channels": listed, "cursor": position.to_string()}))
                }),
            ClientAction::Ack { .. } if self.svc.deviations.realtime.close_on_ack => {
                return Err(End::Close(1003, "ack is not taken here".into()));
            }
            ClientAction::Ping { .. } if self.svc.deviations.realtime.no_pong => Ok(None),
            ClientAction::Ack { cursor } => self
                .svc
                .realtime_ack(&self.caller, &cursor)
                .map(|p| Some(json!({"event": "acked", "cursor": p.to_string()}))),
            ClientAction::Ping { ts } => {
                self.last_ping = self.svc.env.now();
                let ts = ts.unwrap_or_else(|| (self.last_ping.unix_ms() / 1000).into());
                Ok(Some(json!({"event": "pong", "ts": ts})))
            }
            ClientAction::PresenceUpdate(p) => {
                self.svc.presence_update(&self.caller, &p).map(|()| None)
            }
            ClientAction::TypingStart(t) => self.svc.typing(&self.caller, &t, true).map(|()| None),
            ClientAction::TypingStop(t) => self.svc.typing(&self.caller, &t, false).map(|()| None),
        };
        match reply {
            Ok(Some(v)) => self.send_value(v).await,
            Ok(None) => Ok(()),
            Err(e) => self.send_error(Some(name), &e).await,
        }
    }
}
