//! A test client for the node: calls the router in-process (no sockets), registers identities
//! with real proofs (DESIGN.md §9), logs in (§14.2) and builds signed envelopes. Time is a
//! [`ManualClock`] the test controls; the seed is fixed, so runs are reproducible.
#![allow(dead_code)]

use axum::body::Body;
use axum::http::{Request, StatusCode};
use ed25519_dalek::SigningKey;
use http_body_util::BodyExt;
use loom_node::{Env, Node, NodeConfig};
use loom_protocol::clock::ManualClock;
use loom_protocol::id::{KeyId, KeyKind};
use loom_protocol::keys::{public_key_to_spki_pem, sign_b64url, signing_key_from_seed};
use loom_protocol::{Address, Timestamp};
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

pub mod defacto;
pub mod fed;

/// A capability token (v1.1 §12.1) from `issuer` to `holder` for `grants` on `thread`,
/// signed with `key` under the issuer's key id. Defaults: a fresh id, no expiry, reusable,
/// epoch 0; each member of `fields` replaces its default before signing.
pub fn capability_token(
    n: &TestNode,
    issuer: &Ident,
    holder: &Ident,
    thread: &str,
    grants: &[&str],
    key: &SigningKey,
    fields: Value,
) -> Value {
    let mut t = json!({
        "loom": "1.1",
        "id": n.node.service().env.ids().capability().to_string(),
        "issued_by": issuer.address,
        "issued_to": holder.address,
        "created_at": n.now(),
        "expires_at": null,
        "single_use": false,
        "epoch": 0,
        "grants": grants,
        "scope": {"thread_id": thread},
    });
    if let (Some(t), Value::Object(f)) = (t.as_object_mut(), fields) {
        t.extend(f);
    }
    let kid = KeyId::parse(&issuer.key_id, KeyKind::Signing).unwrap();
    loom_protocol::capability::sign_capability_token(&mut t, key, &kid).unwrap();
    t
}

/// The domain every test node serves.
pub const DOMAIN: &str = "node.test";
/// The time every test starts at.
pub const START: &str = "2026-03-01T12:00:00Z";

/// A response: status, headers and the body as JSON (Null when empty or not JSON).
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Value,
    pub raw: Vec<u8>,
}

impl Resp {
    /// Asserts the status, printing the body when it differs.
    pub fn expect(self, status: u16) -> Resp {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.body
        );
        self
    }

    /// Asserts a §24.1 error body with `code`.
    pub fn expect_error(self, status: u16, code: &str) -> Resp {
        let r = self.expect(status);
        assert_eq!(r.body["error"]["code"], code, "body: {}", r.body);
        assert!(
            r.body["error"]["request_id"]
                .as_str()
                .is_some_and(|s| s.starts_with("req_")),
            "{}",
            r.body
        );
        assert!(r.body["error"]["timestamp"].is_string(), "{}", r.body);
        r
    }
}

/// A node under test.
pub struct TestNode {
    pub node: Node,
    pub clock: ManualClock,
}

/// A registered, logged-in identity with its key.
#[derive(Debug, Clone)]
pub struct Ident {
    pub address: String,
    pub key: SigningKey,
    pub key_id: String,
    pub token: String,
    pub refresh: String,
    pub kind: String,
}

impl TestNode {
    /// A node with default config (in-memory store) and the given tweak.
    pub fn with(tweak: impl FnOnce(&mut NodeConfig)) -> TestNode {
        let clock = ManualClock::new(Timestamp::parse(START).unwrap());
        let mut config = NodeConfig {
            domain: DOMAIN.into(),
            ..NodeConfig::default()
        };
        config.rate_limits = loom_node::config::RateLimits::unlimited();
        tweak(&mut config);
        let env = Env::new(Arc::new(clock.clone()), 7);
        let node = Node::builder(config, env).build().unwrap();
        TestNode { node, clock }
    }

    /// A node with default config and deliberate defects (DESIGN.md §4).
    pub fn with_quirks(quirks: loom_node::Quirks, tweak: impl FnOnce(&mut NodeConfig)) -> TestNode {
        let clock = ManualClock::new(Timestamp::parse(START).unwrap());
        let mut config = NodeConfig {
            domain: DOMAIN.into(),
            ..NodeConfig::default()
        };
        config.rate_limits = loom_node::config::RateLimits::unlimited();
        tweak(&mut config);
        let env = Env::new(Arc::new(clock.clone()), 7);
        let node = Node::builder(config, env).quirks(quirks).build().unwrap();
        TestNode { node, clock }
    }

    /// The domain this node serves.
    pub fn domain(&self) -> String {
        self.node.service().config.domain.clone()
    }

    /// A node with default config.
    pub fn new() -> TestNode {
        Self::with(|_| {})
    }

    /// Sends a request with optional bearer token and raw body bytes + content type.
    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<(&str, Vec<u8>)>,
    ) -> Resp {
        let mut b = Request::builder().method(method).uri(path);
        if let Some(t) = token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let req = match body {
            Some((ctype, bytes)) => b
                .header("content-type", ctype)
                .body(Body::from(bytes))
                .unwrap(),
            None => b.body(Body::empty()).unwrap(),
        };
        let resp = self.node.router().oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let raw = resp
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec();
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        Resp {
            status,
            headers,
            body,
            raw,
        }
    }

    /// A JSON request.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Resp {
        let body = body.map(|v| {
            (
                "application/json; charset=utf-8",
                serde_json::to_vec(&v).unwrap(),
            )
        });
        self.raw(method, path, token, &[], body).await
    }

    /// GET with a token.
    pub async fn get(&self, path: &str, token: &str) -> Resp {
        self.call("GET", path, Some(token), None).await
    }

    /// Registers `local@node.test` of `kind` with a key from `seed`, then logs in.
    pub async fn register(&self, local: &str, kind: &str, seed: u8) -> Ident {
        let members = self.type_members(local, kind, seed).await;
        self.register_with(local, kind, seed, members).await
    }

    /// The members `kind` must carry (v1.1 §6.3/§6.4): an agent gets a sponsoring human
    /// `sponsor-<local>` (registered here) as its delegator, with a signed, bounded delegation.
    pub async fn type_members(&self, local: &str, kind: &str, seed: u8) -> Value {
        match kind {
            "agent" => {
                let sponsor_local = format!("sponsor-{}", local.replace('.', "-"));
                let sponsor =
                    Box::pin(self.register(&sponsor_local, "human", seed.wrapping_add(101))).await;
                let agent = format!("loom://{local}@{}", self.domain());
                let scope = vec!["*".to_owned()];
                let expires = "2099-01-01T00:00:00Z";
                let sig = loom_protocol::identity_profile::sign_agent_delegation(
                    &sponsor.key,
                    &sponsor.address,
                    &agent,
                    &scope,
                    expires,
                );
                json!({
                    "delegator": sponsor.address,
                    "agent_info": {"provider": "loom-node tests"},
                    "delegation_scope": scope,
                    "delegation_expires": expires,
                    "delegation_signature": sig,
                })
            }
            "team" => json!({"members": [], "routing_policy": "all"}),
            "service" => json!({"operator": "LOOM test suite"}),
            _ => json!({}),
        }
    }

    /// Registers `local@node.test` with extra document members (type-specific fields).
    pub async fn register_with(&self, local: &str, kind: &str, seed: u8, members: Value) -> Ident {
        let address = format!("loom://{local}@{}", self.domain());
        let key = signing_key_from_seed(&[seed; 32]);
        let key_id = format!("k_sign_{}_1", local.replace('.', "_"));
        self.post_registration(local, kind, seed, members)
            .await
            .expect(201);
        let (token, refresh) = self.login(&address, &key, &key_id).await;
        Ident {
            address,
            key,
            key_id,
            token,
            refresh,
            kind: kind.into(),
        }
    }

    /// Challenge and `POST /v1/identity` for `local@node.test` (key from `seed`) with extra
    /// document members; the response, whatever it is (the challenge's when that is refused).
    pub async fn post_registration(
        &self,
        local: &str,
        kind: &str,
        seed: u8,
        members: Value,
    ) -> Resp {
        let address = format!("loom://{local}@{}", self.domain());
        self.post_registration_as(&address, kind, seed, members)
            .await
    }

    /// [`TestNode::post_registration`] for exactly `address` (any scheme or spelling); the key
    /// id is `k_sign_<local part>_1` with characters outside `[a-z0-9_-]` as `_`.
    pub async fn post_registration_as(
        &self,
        address: &str,
        kind: &str,
        seed: u8,
        members: Value,
    ) -> Resp {
        let local = address
            .split("://")
            .nth(1)
            .unwrap_or(address)
            .split('@')
            .next()
            .unwrap_or_default();
        let key = signing_key_from_seed(&[seed; 32]);
        let key_id: String = format!("k_sign_{local}_1")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let ch = self
            .call(
                "POST",
                "/v1/identity/challenge",
                None,
                Some(json!({"identity": address, "key_id": key_id})),
            )
            .await;
        if ch.status.as_u16() != 200 {
            return ch; // the challenge itself was refused
        }
        let mut req = json!({
            "id": address,
            "type": kind,
            "display_name": local,
            "signing_keys": [{"key_id": key_id, "public_key_pem": public_key_to_spki_pem(&key.verifying_key())}],
        });
        for (k, v) in members.as_object().into_iter().flatten() {
            req[k] = v.clone();
        }
        let hash = loom_node::service::identity::registration_document_hash(&req);
        let text = loom_node::service::identity::registration_text(
            address,
            &key_id,
            &hash,
            ch.body["nonce"].as_str().unwrap(),
        );
        req["registration_proof"] = json!({
            "challenge_id": ch.body["challenge_id"],
            "key_id": key_id,
            "signature": sign_b64url(&key, None, text.as_bytes()),
        });
        self.call("POST", "/v1/identity", None, Some(req)).await
    }

    /// The challenge/token exchange; returns (access, refresh).
    pub async fn login(&self, address: &str, key: &SigningKey, key_id: &str) -> (String, String) {
        let ch = self
            .call(
                "POST",
                "/v1/auth/challenge",
                None,
                Some(json!({"identity": address, "key_id": key_id})),
            )
            .await
            .expect(200);
        let sig = sign_b64url(key, None, ch.body["nonce"].as_str().unwrap().as_bytes());
        let t = self
            .call("POST", "/v1/auth/token", None, Some(json!({"identity": address, "key_id": key_id, "challenge_id": ch.body["challenge_id"], "signature": sig})))
            .await
            .expect(200);
        (
            t.body["access_token"].as_str().unwrap().into(),
            t.body["refresh_token"].as_str().unwrap().into(),
        )
    }

    /// A fresh envelope id (deterministic per node: ULIDs from the test clock).
    pub fn envelope_id(&self) -> String {
        self.node.service().env.ids().envelope().to_string()
    }

    /// A fresh thread id.
    pub fn thread_id(&self) -> String {
        self.node.service().env.ids().thread().to_string()
    }

    /// The current test time.
    pub fn now(&self) -> String {
        self.node.service().env.now().to_rfc3339()
    }
}

impl Ident {
    /// An unsigned message from this identity to `to` in `thread`, replying to `parent`.
    pub fn message(
        &self,
        node: &TestNode,
        thread: &str,
        parent: Option<&str>,
        to: &[&Ident],
        text: &str,
    ) -> Value {
        json!({
            "loom": "1.1",
            "id": node.envelope_id(),
            "thread_id": thread,
            "parent_id": parent,
            "type": "message",
            "from": {"identity": self.address, "display": "x", "key_id": self.key_id, "type": self.kind},
            "to": to.iter().map(|i| json!({"identity": i.address, "role": "primary"})).collect::<Vec<_>>(),
            "created_at": node.now(),
            "priority": "normal",
            "content": {"human": {"text": text, "format": "plaintext"}, "encrypted": false},
            "attachments": [],
        })
    }

    /// An unsigned `thread_op` with `intent` and `parameters` in `thread`.
    pub fn op(&self, node: &TestNode, thread: &str, intent: &str, parameters: Value) -> Value {
        json!({
            "loom": "1.1",
            "id": node.envelope_id(),
            "thread_id": thread,
            "parent_id": null,
            "type": "thread_op",
            "from": {"identity": self.address, "display": "x", "key_id": self.key_id, "type": self.kind},
            "to": [{"identity": self.address, "role": "primary"}],
            "created_at": node.now(),
            "priority": "normal",
            "content": {"structured": {"intent": intent, "parameters": parameters}, "encrypted": false},
            "attachments": [],
        })
    }

    /// Signs and posts `env`; returns the response.
    pub async fn send(&self, node: &TestNode, env: Value) -> Resp {
        node.call(
            "POST",
            "/v1/envelopes",
            Some(&self.token),
            Some(self.sign(env)),
        )
        .await
    }

    /// Signs `env` with this identity's key (context-prefixed, §7.3).
    pub fn sign(&self, mut env: Value) -> Value {
        let kid = KeyId::parse(&self.key_id, KeyKind::Signing).unwrap();
        loom_protocol::envelope::sign_envelope(&mut env, &self.key, &kid).unwrap();
        env
    }

    /// The parsed address.
    pub fn addr(&self) -> Address {
        Address::parse_wire(&self.address).unwrap()
    }
}
