//! The shim for the real-time stream (v1.1 §17): a variant that makes another choice on the
//! WebSocket cannot rewrite an HTTP body, so the shim takes the client's upgrade itself, opens
//! its own WebSocket to the node's unchanged router over an in-memory connection, and carries
//! frames both ways through the variant's [`Rewrite`]. A refusal of the inner upgrade (a bad
//! token: 401) is answered to the client as the node gave it, before any upgrade.

use super::shim::Shim;
use axum::extract::FromRequestParts;
use axum::extract::Request;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use tokio_tungstenite::tungstenite::Message as Inner;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame as InnerClose;

/// How a variant changes the text frames: client → node and node → client (close frames
/// pass unchanged: no case judges a close code, the spec names none).
#[derive(Debug, Clone, Copy)]
pub struct Rewrite {
    /// A client's text frame as the node should see it.
    pub to_node: fn(&str) -> String,
    /// A node's text frame as the client should see it.
    pub to_client: fn(&str) -> String,
}

/// Whether `req` is the WebSocket upgrade of `/ws`.
pub fn is_upgrade(req: &Request) -> bool {
    req.uri().path() == "/ws"
        && req
            .headers()
            .get(axum::http::header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// Proxies the upgrade `req` to the node behind `shim`, through `rewrite`.
pub async fn proxy(shim: Arc<Shim>, req: Request, rewrite: Rewrite) -> Response {
    let Some(router) = shim.inner() else {
        return shim.error("INTERNAL_ERROR", "$path", "the shim has no node router");
    };
    let (mut parts, _) = req.into_parts();
    let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let service = TowerToHyperService::new(router);
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(server_io), service)
            .with_upgrades()
            .await;
    });
    let target = format!(
        "ws://{}{}",
        parts
            .headers
            .get(axum::http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("node.inner"),
        parts
            .uri
            .path_and_query()
            .map_or("/ws", axum::http::uri::PathAndQuery::as_str)
    );
    let Ok(mut inner_req) = target.into_client_request() else {
        return shim.error(
            "INTERNAL_ERROR",
            "$path",
            "the inner request does not build",
        );
    };
    if let Some(auth) = parts.headers.get(axum::http::header::AUTHORIZATION) {
        inner_req
            .headers_mut()
            .insert(axum::http::header::AUTHORIZATION, auth.clone());
    }
    let inner = match tokio_tungstenite::client_async(inner_req, client_io).await {
        Ok((ws, _)) => ws,
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            let (p, body) = resp.into_parts();
            let mut out = Response::new(axum::body::Body::from(body.unwrap_or_default()));
            *out.status_mut() = p.status;
            *out.headers_mut() = p.headers;
            return out;
        }
        Err(e) => {
            return shim.error(
                "INTERNAL_ERROR",
                "$path",
                &format!("the inner upgrade failed: {e}"),
            );
        }
    };
    upgrade.on_upgrade(move |outer| pump(outer, inner, rewrite))
}

type InnerWs = tokio_tungstenite::WebSocketStream<tokio::io::DuplexStream>;

async fn pump(mut outer: WebSocket, mut inner: InnerWs, rewrite: Rewrite) {
    loop {
        tokio::select! {
            m = outer.recv() => match m {
                Some(Ok(Message::Text(t))) => {
                    if inner.send(Inner::Text((rewrite.to_node)(t.as_str()).into())).await.is_err() {
                        return;
                    }
                }
                Some(Ok(Message::Binary(b))) => {
                    if inner.send(Inner::Binary(b)).await.is_err() {
                        return;
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                    let _ = inner.close(None).await;
                    return;
                }
                Some(Ok(_)) => {}
            },
            m = inner.next() => match m {
                Some(Ok(Inner::Text(t))) => {
                    let text = (rewrite.to_client)(t.as_str());
                    if outer.send(Message::Text(text.into())).await.is_err() {
                        return;
                    }
                }
                Some(Ok(Inner::Binary(b))) => {
                    if outer.send(Message::Binary(b)).await.is_err() {
                        return;
                    }
                }
                Some(Ok(Inner::Close(c))) => {
                    let frame = c.map(|InnerClose { code, reason }| CloseFrame {
                        code: u16::from(code),
                        reason: reason.as_str().into(),
                    });
                    let _ = outer.send(Message::Close(frame)).await;
                    return;
                }
                None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
        }
    }
}
