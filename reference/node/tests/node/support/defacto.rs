//! A stand-in for the existing JavaScript v1.1 node, written from DESIGN.md §9 alone: the
//! forms under test here — the LOOM-HTTP-SIG-1 signing string, the identity document's
//! `node_signature` (registration form), the nine-line delivery receipt, partial receipts
//! with string error codes, the `{receipt, rejected}` answer and delegation links whose
//! signature covers `signature_context` — are built and checked with this file's own code
//! (`serde_json_canonicalizer`, `ed25519-dalek`, `sha2`, `base64`), never with
//! `loom-protocol`'s, so a test fails when our node and the de-facto forms drift apart. Only
//! the envelope signature (not under test) is made with `loom-protocol`.
//!
//! It serves, on a real loopback port, what a node of ours reaches: the node document, node-
//! signed identity documents and `POST /v1/federation/deliver`. To verify what our node
//! delivers it fetches our node document and identity documents over plain HTTP/1.1, as the
//! existing node does.

use super::fed::{Served, fed_node, free_port, serve};
use super::{Ident, Resp, TestNode};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use loom_node::Storage;
use loom_protocol::clock::{Clock, ManualClock};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The delivery path both sides use.
pub const DELIVER: &str = "/v1/federation/deliver";

/// An identity the de-facto node hosts.
#[derive(Debug, Clone)]
pub struct User {
    /// `loom://{name}@{domain}`.
    pub address: String,
    /// Its signing key.
    pub key: SigningKey,
    /// `k_sign_…`, unique on the node (DESIGN.md §9).
    pub key_id: String,
    /// `human` or `agent`.
    pub kind: String,
    /// `agent_info` (agents) — covered by the node signature.
    pub agent_info: Option<Value>,
    /// `encryption_keys` — covered by the node signature.
    pub encryption_keys: Option<Value>,
}

/// How the de-facto node answers deliveries.
#[derive(Debug, Clone, Default)]
pub struct Behaviour {
    /// Write `rejected[].error` as `{code}` instead of a string.
    pub error_as_object: bool,
    /// Store the next delivery's envelopes, then answer 503 (a lost answer).
    pub lose_next_answer: bool,
    /// Serve identity documents whose `agent_info` changed after signing.
    pub tamper_identity_documents: bool,
}

#[derive(Debug)]
struct Inner {
    node_key: SigningKey,
    users: BTreeMap<String, User>,
    stored: BTreeMap<String, Value>,
    behaviour: Behaviour,
    /// Why each refused envelope or request was refused.
    refusals: Vec<String>,
    /// The `/.well-known/loom.json` fetches it answered.
    document_fetches: usize,
    nonces: u64,
}

/// The de-facto node `domain`, served on `127.0.0.1:port`, whose peer (a node of ours) is
/// reachable at `peer_base`.
#[derive(Debug, Clone)]
pub struct Defacto {
    pub domain: String,
    pub port: u16,
    /// `k_node_sign_…`, kept across key rotations (DESIGN.md §9).
    pub node_key_id: String,
    peer_base: String,
    clock: ManualClock,
    inner: Arc<Mutex<Inner>>,
}

fn seed(label: &str) -> SigningKey {
    SigningKey::from_bytes(&Sha256::digest(format!("defacto/{label}").as_bytes()).into())
}

/// SPKI PEM of an Ed25519 public key, without a trailing newline (DESIGN.md §9).
pub fn pem(key: &VerifyingKey) -> String {
    let mut der = hex_bytes("302a300506032b6570032100");
    der.extend_from_slice(key.as_bytes());
    format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----",
        STANDARD.encode(der)
    )
}

fn hex_bytes(h: &str) -> Vec<u8> {
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
        .collect()
}

/// The key inside an SPKI PEM, if it is one.
fn key_from_pem(text: &str) -> Option<VerifyingKey> {
    let b64: String = text
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .map(str::trim)
        .collect();
    let der = STANDARD.decode(b64).ok()?;
    let raw: [u8; 32] = der
        .strip_prefix(&hex_bytes("302a300506032b6570032100")[..])?
        .try_into()
        .ok()?;
    VerifyingKey::from_bytes(&raw).ok()
}

fn canonical(v: &Value) -> Vec<u8> {
    serde_json_canonicalizer::to_vec(v).unwrap()
}

fn verify_b64(key: &VerifyingKey, message: &[u8], sig: &str) -> bool {
    let Ok(bytes) = URL_SAFE_NO_PAD.decode(sig.trim_end_matches('=')) else {
        return false;
    };
    let Ok(sig) = ed25519_dalek::Signature::from_slice(&bytes) else {
        return false;
    };
    key.verify_strict(message, &sig).is_ok()
}

/// The registration form a `node_signature` covers (DESIGN.md §9).
pub fn registration_form(doc: &Value) -> Value {
    let mut keys: Vec<Value> = doc["signing_keys"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|k| json!({"key_id": k["key_id"], "public_key_pem": k["public_key_pem"]}))
        .collect();
    keys.sort_by(|a, b| a["key_id"].as_str().cmp(&b["key_id"].as_str()));
    let mut form = Map::new();
    form.insert("loom".into(), "1.1".into());
    for m in ["id", "type", "display_name"] {
        if let Some(v) = doc.get(m) {
            form.insert(m.into(), v.clone());
        }
    }
    form.insert("signing_keys".into(), Value::Array(keys));
    for m in ["encryption_keys", "agent_info"] {
        if let Some(v) = doc.get(m).filter(|v| !v.is_null()) {
            form.insert(m.into(), v.clone());
        }
    }
    Value::Object(form)
}

/// The nine lines a receipt signature covers (DESIGN.md §9).
fn receipt_text(r: &Value) -> String {
    let s = |m: &str| match &r[m] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    };
    let ids: Vec<&str> = r["accepted_envelope_ids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    [
        s("loom"),
        s("type"),
        s("delivery_id"),
        s("sender_node"),
        s("recipient_node"),
        s("status"),
        s("accepted_count"),
        ids.join(","),
        s("timestamp"),
    ]
    .join("\n")
}

/// Whether `receipt` (as the existing node reads it, under `receipt`) is signed by `key` over
/// the nine lines and names `id` as accepted.
pub fn receipt_accepts(answer: &Value, key: &VerifyingKey, id: &str) -> bool {
    let r = &answer["receipt"];
    verify_b64(
        key,
        receipt_text(r).as_bytes(),
        r["signature"]["value"].as_str().unwrap_or(""),
    ) && r["accepted_envelope_ids"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == id))
}

/// The five-line LOOM-HTTP-SIG-1 string (v1.1 §15.3).
fn five_lines(path: &str, body: &[u8], timestamp: &str, nonce: &str) -> String {
    format!(
        "POST\n{path}\n{}\n{timestamp}\n{nonce}",
        hex::encode(Sha256::digest(body))
    )
}

/// A minimal HTTP/1.1 GET to `base` + `path`; `(status, body)`.
async fn http_get(base: &str, path: &str) -> Option<(u16, Value)> {
    let authority = base.strip_prefix("http://")?;
    let mut stream = tokio::net::TcpStream::connect(authority).await.ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(req.as_bytes()).await.ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.ok()?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let mut body = raw[split + 4..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).ok()?.trim(), 16)
                    .ok()?;
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[line_end + 2..line_end + 2 + size]);
            rest = &rest[line_end + 4 + size..];
        }
        body = out;
    }
    Some((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
}

fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

impl Defacto {
    /// The de-facto node `domain` on a reserved port; `peer_base` is where the node of ours
    /// it federates with is served; `clock` is that node's (both read the same time).
    pub fn new(domain: &str, port: u16, peer_base: &str, clock: ManualClock) -> Defacto {
        Defacto {
            domain: domain.to_owned(),
            port,
            node_key_id: "k_node_sign_01JDEFACT0NODE0000000000001".into(),
            peer_base: peer_base.to_owned(),
            clock,
            inner: Arc::new(Mutex::new(Inner {
                node_key: seed(&format!("{domain}/node/1")),
                users: BTreeMap::new(),
                stored: BTreeMap::new(),
                behaviour: Behaviour::default(),
                refusals: Vec::new(),
                document_fetches: 0,
                nonces: 0,
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap()
    }

    /// Hosts `name` of type `kind`; agents get `agent_info`, everyone an encryption key, as
    /// the existing node's users have.
    pub fn host(&self, name: &str, kind: &str) -> User {
        let n = self.lock().users.len() + 1;
        let key = seed(&format!("{}/{name}", self.domain));
        let user = User {
            address: format!("loom://{name}@{}", self.domain),
            key_id: format!("k_sign_01JDEFACT0{n:016}"),
            kind: kind.to_owned(),
            agent_info: (kind == "agent").then(
                || json!({"provider": "defacto-labs", "model": "helper-1", "version": "1.0.0"}),
            ),
            encryption_keys: Some(json!([{"key_id": format!("k_enc_01JDEFACT0{n:016}"),
                "algorithm": "X25519", "public_key": URL_SAFE_NO_PAD.encode(seed(&format!("{name}/enc")).verifying_key().as_bytes())}])),
            key,
        };
        self.lock().users.insert(user.address.clone(), user.clone());
        user
    }

    /// A new node key under the same key id (what the existing node may do on restart).
    pub fn rotate_node_key_same_id(&self, generation: u32) {
        self.lock().node_key = seed(&format!("{}/node/{generation}", self.domain));
    }

    /// Changes how deliveries are answered.
    pub fn set(&self, b: Behaviour) {
        self.lock().behaviour = b;
    }

    /// Envelopes stored, by id.
    pub fn stored(&self) -> BTreeMap<String, Value> {
        self.lock().stored.clone()
    }

    /// Why envelopes or requests were refused.
    pub fn refusals(&self) -> Vec<String> {
        self.lock().refusals.clone()
    }

    /// How often its node document was fetched.
    pub fn document_fetches(&self) -> usize {
        self.lock().document_fetches
    }

    /// The node document, with keys as SPKI PEM under `federation.signing_keys`.
    fn node_document(&self) -> Value {
        let origin = format!("http://127.0.0.1:{}", self.port);
        let mut inner = self.lock();
        inner.document_fetches += 1;
        json!({
            "loom": "1.1", "node_id": self.domain, "domain": self.domain,
            "api_url": format!("{origin}/v1"),
            "federation": {
                "deliver_url": format!("{origin}{DELIVER}"),
                "identity_resolve_url": format!("{origin}/v1/identity/{{identity}}"),
                "requirements": ["LOOM-HTTP-SIG-1"], "policy": "open",
                "signing_keys": [{"key_id": self.node_key_id, "public_key_pem": pem(&inner.node_key.verifying_key())}],
            },
        })
    }

    /// A hosted identity's document, node-signed over the registration form.
    fn identity_document(&self, address: &str) -> Option<Value> {
        let inner = self.lock();
        let u = inner.users.get(address)?;
        let mut doc = json!({
            "loom": "1.1", "id": u.address, "type": u.kind, "display_name": address,
            "signing_keys": [{"key_id": u.key_id, "public_key_pem": pem(&u.key.verifying_key())}],
            "created_at": "2026-01-01T00:00:00.000Z",
        });
        if let Some(a) = &u.agent_info {
            doc["agent_info"] = a.clone();
        }
        if let Some(e) = &u.encryption_keys {
            doc["encryption_keys"] = e.clone();
        }
        let sig = inner.node_key.sign(&canonical(&registration_form(&doc)));
        doc["node_signature"] = json!({"algorithm": "Ed25519", "key_id": self.node_key_id,
            "value": URL_SAFE_NO_PAD.encode(sig.to_bytes())});
        if inner.behaviour.tamper_identity_documents && doc.get("agent_info").is_some() {
            doc["agent_info"]["model"] = "someone-else".into();
        }
        Some(doc)
    }

    /// A message from `from` to `to` in `thread`, signed with `from`'s key (§7.3).
    pub fn message(
        &self,
        from: &User,
        to: &str,
        thread: &str,
        parent: Option<&str>,
        id: &str,
    ) -> Value {
        let mut env = json!({
            "loom": "1.1", "id": id, "thread_id": thread, "parent_id": parent, "type": "message",
            "from": {"identity": from.address, "display": "x", "key_id": from.key_id, "type": from.kind},
            "to": [{"identity": to, "role": "primary"}],
            "created_at": self.clock.now().to_rfc3339(), "priority": "normal",
            "content": {"human": {"text": "from the de-facto node", "format": "plaintext"}, "encrypted": false},
            "attachments": [],
        });
        let kid =
            loom_protocol::id::KeyId::parse(&from.key_id, loom_protocol::id::KeyKind::Signing)
                .unwrap();
        loom_protocol::envelope::sign_envelope(&mut env, &from.key, &kid).unwrap();
        env
    }

    /// A delegation link from `delegator` to `delegate` for `scope`, signed the way the
    /// existing node verifies: `LOOM-DELEGATION-SIG-v1 ‖ 0x00 ‖ JCS(link − signature)`, so
    /// `signature_context` is inside the signed bytes (§13.3.1 is silent; DESIGN.md §9).
    pub fn delegation_link(&self, delegator: &User, delegate: &User, scope: &[&str]) -> Value {
        let mut link = json!({
            "id": format!("dlg_{}", delegate.key_id.trim_start_matches("k_sign_")),
            "delegator": delegator.address, "delegate": delegate.address, "scope": scope,
            "created_at": self.clock.now().to_rfc3339(), "expires_at": "2027-01-01T00:00:00.000Z",
            "allow_sub_delegation": false, "max_sub_delegation_depth": 0, "revocable": true,
            "key_id": delegator.key_id, "signature_context": "LOOM-DELEGATION-SIG-v1",
        });
        let mut message = b"LOOM-DELEGATION-SIG-v1\0".to_vec();
        message.extend(canonical(&link));
        link["signature"] = URL_SAFE_NO_PAD
            .encode(delegator.key.sign(&message).to_bytes())
            .into();
        link
    }

    /// A signed delivery of `envelopes` to the peer: the five-line signature and, as the
    /// existing node sends it, `X-LOOM-Trust-Epoch: 1` beside it (DESIGN.md §9).
    pub fn delivery(&self, envelopes: Vec<Value>) -> (Vec<(String, String)>, Vec<u8>) {
        let now = self.clock.now().to_rfc3339();
        let n = {
            let mut i = self.lock();
            i.nonces += 1;
            i.nonces
        };
        let body = serde_json::to_vec(&json!({
            "loom": "1.1", "sender_node": self.domain,
            "delivery_id": format!("fdel_01JDEFACT0{n:016}"), "timestamp": now, "envelopes": envelopes,
        }))
        .unwrap();
        let nonce = URL_SAFE_NO_PAD.encode(Sha256::digest(format!("nonce-{n}").as_bytes()));
        let sig = self
            .lock()
            .node_key
            .sign(five_lines(DELIVER, &body, &now, &nonce).as_bytes());
        let headers = [
            ("X-LOOM-Node", self.domain.clone()),
            ("X-LOOM-Timestamp", now),
            ("X-LOOM-Nonce", nonce),
            ("X-LOOM-Key-Id", self.node_key_id.clone()),
            ("X-LOOM-Signature", URL_SAFE_NO_PAD.encode(sig.to_bytes())),
            ("X-LOOM-Trust-Epoch", "1".into()),
        ];
        (
            headers
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            body,
        )
    }

    fn refuse(&self, why: String) {
        self.lock().refusals.push(why);
    }

    /// The peer's node key `key_id`, from its node document.
    async fn peer_node_key(&self, key_id: &str) -> Result<VerifyingKey, String> {
        let (_, doc) = http_get(&self.peer_base, "/.well-known/loom.json")
            .await
            .ok_or("peer node document unreachable")?;
        doc["federation"]["signing_keys"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|k| k["key_id"] == key_id)
            .and_then(|k| key_from_pem(k["public_key_pem"].as_str()?))
            .ok_or_else(|| format!("no PEM key {key_id} in the peer's node document"))
    }

    /// Resolves the sender of `env` on the peer and checks its document's node signature
    /// (registration form) and that it lists the envelope's key id.
    async fn check_sender(&self, env: &Value, node_key: &VerifyingKey) -> Result<(), String> {
        let who = env["from"]["identity"].as_str().ok_or("no from.identity")?;
        let (status, doc) = http_get(&self.peer_base, &format!("/v1/identity/{}", percent(who)))
            .await
            .ok_or("identity document unreachable")?;
        if status != 200 {
            return Err(format!("identity document of {who}: HTTP {status}"));
        }
        let sig = doc["node_signature"]["value"].as_str().unwrap_or("");
        if !verify_b64(node_key, &canonical(&registration_form(&doc)), sig) {
            return Err(format!(
                "node_signature of {who} does not verify over the registration form"
            ));
        }
        let kid = &env["from"]["key_id"];
        if !doc["signing_keys"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|k| &k["key_id"] == kid)
        {
            return Err(format!("{who} has no key {kid}"));
        }
        Ok(())
    }

    async fn deliver(
        &self,
        headers: axum::http::HeaderMap,
        body: axum::body::Bytes,
    ) -> (u16, Value) {
        let h = |n: &str| {
            headers
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        let node_key = match self.peer_node_key(&h("x-loom-key-id")).await {
            Ok(k) => k,
            Err(e) => {
                self.refuse(e.clone());
                return (
                    401,
                    json!({"error": {"code": "SIGNATURE_INVALID", "message": e}}),
                );
            }
        };
        let text = five_lines(DELIVER, &body, &h("x-loom-timestamp"), &h("x-loom-nonce"));
        if !verify_b64(&node_key, text.as_bytes(), &h("x-loom-signature")) {
            self.refuse("request signature".into());
            return (
                401,
                json!({"error": {"code": "SIGNATURE_INVALID", "message": "bad request signature"}}),
            );
        }
        let wrapper: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (mut accepted, mut rejected) = (Vec::new(), Vec::new());
        for env in wrapper["envelopes"].as_array().cloned().unwrap_or_default() {
            let id = env["id"].as_str().unwrap_or("").to_owned();
            let error_as_object = self.lock().behaviour.error_as_object;
            let code = if self.lock().stored.contains_key(&id) {
                Some("ENVELOPE_DUPLICATE")
            } else if let Err(why) = self.check_sender(&env, &node_key).await {
                self.refuse(why);
                Some("SIGNATURE_INVALID")
            } else {
                None
            };
            match code {
                None => {
                    self.lock().stored.insert(id.clone(), env);
                    accepted.push(id);
                }
                Some(c) if error_as_object => {
                    rejected.push(json!({"envelope_id": id, "error": {"code": c}}))
                }
                Some(c) => rejected.push(json!({"envelope_id": id, "error": c})),
            }
        }
        if std::mem::take(&mut self.lock().behaviour.lose_next_answer) {
            return (
                503,
                json!({"error": {"code": "INTERNAL_ERROR", "message": "lost"}}),
            );
        }
        if accepted.is_empty()
            && rejected.iter().all(|r| {
                r["error"] != "ENVELOPE_DUPLICATE" && r["error"]["code"] != "ENVELOPE_DUPLICATE"
            })
        {
            return (
                403,
                json!({"error": {"code": "SIGNATURE_INVALID", "message": "nothing accepted"}, "rejected": rejected}),
            );
        }
        let mut receipt = json!({
            "loom": "1.1", "type": "federation.delivery.receipt@v1",
            "delivery_id": wrapper["delivery_id"], "sender_node": self.domain,
            "recipient_node": wrapper["sender_node"],
            "status": if rejected.is_empty() { "accepted" } else { "partial" },
            "accepted_count": accepted.len(), "accepted_envelope_ids": accepted,
            "timestamp": self.clock.now().to_rfc3339(),
        });
        let sig = self.lock().node_key.sign(receipt_text(&receipt).as_bytes());
        receipt["signature"] = json!({"algorithm": "Ed25519", "key_id": self.node_key_id,
            "value": URL_SAFE_NO_PAD.encode(sig.to_bytes())});
        (202, json!({"receipt": receipt, "rejected": rejected}))
    }

    /// Serves the node on its port until the returned handle is dropped or stopped.
    pub async fn serve(&self) -> super::fed::Served {
        use axum::extract::Path;
        use axum::response::IntoResponse;
        use axum::routing::{get, post};
        let reply = |(status, body): (u16, Value)| {
            (
                axum::http::StatusCode::from_u16(status).unwrap(),
                axum::Json(body),
            )
                .into_response()
        };
        let (d1, d2, d3) = (self.clone(), self.clone(), self.clone());
        let router = axum::Router::new()
            .route(
                "/.well-known/loom.json",
                get(move || {
                    let d = d1.clone();
                    async move { reply((200, d.node_document())) }
                }),
            )
            .route(
                "/v1/identity/{id}",
                get(move |Path(id): Path<String>| {
                    let d = d2.clone();
                    async move {
                        match d.identity_document(&id) {
                            Some(doc) => reply((200, doc)),
                            None => reply((404, json!({"error": {"code": "IDENTITY_NOT_FOUND"}}))),
                        }
                    }
                }),
            )
            .route(
                DELIVER,
                post(
                    move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                        let d = d3.clone();
                        async move { reply(d.deliver(headers, body).await) }
                    },
                ),
            );
        super::fed::serve_router(router, self.port).await
    }
}

/// a.test (with `quirks`) federating with the de-facto node js.test, both
/// served; alice on a.test, carol (human) and bot (agent) on js.test.
pub struct WithDefacto {
    pub a: TestNode,
    pub js: Defacto,
    pub alice: Ident,
    pub carol: User,
    pub bot: User,
    _served: (Served, Served),
}

pub async fn with_defacto(quirks: loom_node::Quirks) -> WithDefacto {
    let (pa, pj) = (free_port().await, free_port().await);
    let a = fed_node("a.test", "js.test", pj, Storage::Memory, quirks, |_| {});
    let js = Defacto::new(
        "js.test",
        pj,
        &format!("http://127.0.0.1:{pa}"),
        a.clock.clone(),
    );
    let served = (serve(&a, pa).await, js.serve().await);
    let alice = a.register("alice", "human", 1).await;
    let carol = js.host("carol", "human");
    let bot = js.host("bot", "agent");
    WithDefacto {
        a,
        alice,
        carol,
        bot,
        js,
        _served: served,
    }
}

impl WithDefacto {
    /// A message from `from` on js.test to alice, delivered as the de-facto node delivers.
    pub async fn deliver_from_js(&self, env: Value) -> Resp {
        let (h, body) = self.js.delivery(vec![env]);
        self.a.deliver(&h, body).await
    }

    pub fn carol_message(&self) -> Value {
        let id = self.a.envelope_id();
        self.js.message(
            &self.carol,
            &self.alice.address,
            &self.a.thread_id(),
            None,
            &id,
        )
    }

    /// A message from alice to carol, queued; the outbox row's state after one pass.
    pub async fn to_js(&self) -> (String, String) {
        let env = self
            .alice
            .message(&self.a, &self.a.thread_id(), None, &[], "to js");
        let mut env = env;
        env["to"] = json!([{"identity": self.carol.address, "role": "primary"}]);
        let sent = self.alice.send(&self.a, env).await.expect(201).body;
        self.a.tick().await;
        let id = sent["id"].as_str().unwrap().to_owned();
        let row = self
            .a
            .outbox()
            .into_iter()
            .find(|r| r.envelope_id == id)
            .unwrap();
        (id, row.state)
    }

    /// A message from js.test's agent `bot` to alice, acting under carol's delegation link
    /// (whose signature covers `signature_context`); returns the envelope and its id.
    pub fn bot_message(&self) -> (Value, String) {
        let id = self.a.envelope_id();
        let mut env = self.js.message(
            &self.bot,
            &self.alice.address,
            &self.a.thread_id(),
            None,
            &id,
        );
        env["from"]["delegation_chain"] =
            json!([self
                .js
                .delegation_link(&self.carol, &self.bot, &["message.*"])]);
        let kid =
            loom_protocol::id::KeyId::parse(&self.bot.key_id, loom_protocol::id::KeyKind::Signing)
                .unwrap();
        loom_protocol::envelope::sign_envelope(&mut env, &self.bot.key, &kid).unwrap();
        (env, id)
    }
}
