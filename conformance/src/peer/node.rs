//! One fake federation peer: its own domain, node signing keys (drawn from the run seed),
//! the identities it hosts, a scripted answer queue for deliveries it receives, and the log
//! of every request the target sent it (DESIGN.md §5 "fake peers", issue 15).

use loom_client::Identity;
use loom_protocol::clock::Clock;
use loom_protocol::federation::identity::NodeSignatureForm;
use loom_protocol::federation::receipt::DeliveryReceipt;
use loom_protocol::federation::wrapper::WrapperLimits;
use loom_protocol::federation::{DeliveryWrapper, sign_identity_document_as};
use loom_protocol::http_sig::{RequestParts, SignedHeaders, sign_request_with_epoch};
use loom_protocol::keys::{public_key_to_b64url, public_key_to_spki_pem};
use loom_protocol::time::Timestamp;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How the peer answers the next delivery it receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 202 with a receipt signed by the peer's node key, accepting every envelope.
    Accept,
    /// This HTTP status with a §24.1 error body (503: the peer is overloaded).
    Status(u16),
    /// Answer [`Answer::Accept`] after this delay.
    Delay(Duration),
}

/// A request the target sent to the peer, as received.
#[derive(Debug, Clone)]
pub struct Received {
    /// When it arrived (the harness clock).
    pub at: Timestamp,
    /// `GET`, `POST`.
    pub method: String,
    /// The path the target used, without the peer's `/peer/{n}` prefix.
    pub path: String,
    /// The full path as sent (what the target signed).
    pub raw_path: String,
    /// Request headers (names lower case), in arrival order.
    pub headers: Vec<(String, String)>,
    /// The raw body (a chunked body arrives de-chunked).
    pub body: Vec<u8>,
    /// The status the peer answered.
    pub status: u16,
}

impl Received {
    /// A header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The LOOM-HTTP-SIG-1 headers as sent (absent ones empty).
    pub fn signed_headers(&self) -> SignedHeaders {
        SignedHeaders::from_pairs(self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())))
    }

    /// Whether this is a delivery (`POST …/federation/deliver`).
    pub fn is_delivery(&self) -> bool {
        self.method == "POST" && self.path.ends_with("/federation/deliver")
    }

    /// The body as JSON (`Null` when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// Envelope ids the body's `envelopes` carry.
    pub fn envelope_ids(&self) -> Vec<String> {
        self.json()["envelopes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["id"].as_str().map(str::to_owned))
            .collect()
    }

    /// A one-line summary for reports.
    pub fn summary(&self) -> String {
        format!(
            "{} {} → {} at {} ({} bytes; envelopes {:?})",
            self.method,
            self.raw_path,
            self.status,
            self.at.to_rfc3339(),
            self.body.len(),
            self.envelope_ids()
        )
    }
}

/// A node signing key of the peer.
#[derive(Debug, Clone)]
pub struct PeerKey {
    /// `k_node_…`.
    pub key_id: String,
    /// The key.
    pub key: ed25519_dalek::SigningKey,
    /// `active` or `retired` (published in the node document).
    pub status: &'static str,
}

#[derive(Debug, Default)]
struct State {
    keys: Vec<PeerKey>,
    identities: BTreeMap<String, Identity>,
    /// Earlier keys of hosted identities (published as `retired`, v1.0 §7.4).
    retired: BTreeMap<String, Vec<Identity>>,
    script: VecDeque<Answer>,
    received: Vec<Received>,
    deliver_url: Option<String>,
    draws: u64,
    /// The form hosted identities' documents are signed in (`None`: the registration form).
    identity_form: Option<NodeSignatureForm>,
    /// Identities whose documents are signed in another form than the peer's.
    identity_forms: BTreeMap<String, NodeSignatureForm>,
}

/// One fake peer.
#[derive(Debug)]
pub struct PeerNode {
    /// Index on the peer server (`/peer/{index}`).
    pub index: u32,
    /// Its domain (`peer-3.test`).
    pub domain: String,
    /// The base URL the target reaches it at (`http://127.0.0.1:PORT/peer/3`).
    pub base_url: String,
    seed: [u8; 32],
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    arrived: tokio::sync::Notify,
}

impl PeerNode {
    /// A peer whose keys and nonces are drawn from `seed`.
    pub fn new(
        index: u32,
        domain: String,
        base_url: String,
        seed: [u8; 32],
        clock: Arc<dyn Clock>,
    ) -> PeerNode {
        let p = PeerNode {
            index,
            domain,
            base_url,
            seed,
            clock,
            state: Mutex::new(State::default()),
            arrived: tokio::sync::Notify::new(),
        };
        let key = p.derive_key("node-key-1");
        p.lock().keys.push(PeerKey {
            key_id: format!("k_node_{}_1", p.label()),
            key,
            status: "active",
        });
        p
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn label(&self) -> String {
        self.domain.replace(['.', '-'], "_")
    }

    fn derive(&self, what: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.seed);
        h.update(what.as_bytes());
        h.finalize().into()
    }

    fn derive_key(&self, what: &str) -> ed25519_dalek::SigningKey {
        ed25519_dalek::SigningKey::from_bytes(&self.derive(what))
    }

    /// The harness clock's reading.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// 16 nonce bytes, fresh for every call (seeded).
    pub fn nonce_bytes(&self) -> [u8; 16] {
        let n = {
            let mut s = self.lock();
            s.draws += 1;
            s.draws
        };
        let b = self.derive(&format!("nonce-{n}"));
        let mut out = [0; 16];
        out.copy_from_slice(&b[..16]);
        out
    }

    /// The active signing key the peer signs with.
    pub fn active_key(&self) -> PeerKey {
        let s = self.lock();
        s.keys
            .iter()
            .rev()
            .find(|k| k.status == "active")
            .cloned()
            .unwrap_or_else(|| s.keys[0].clone())
    }

    /// Every node key, published or not.
    pub fn keys(&self) -> Vec<PeerKey> {
        self.lock().keys.clone()
    }

    /// Rotates the node key: a new active key; the previous ones become `retired`.
    pub fn rotate_key(&self) -> PeerKey {
        let n = self.lock().keys.len() + 1;
        let key = PeerKey {
            key_id: format!("k_node_{}_{n}", self.label()),
            key: self.derive_key(&format!("node-key-{n}")),
            status: "active",
        };
        let mut s = self.lock();
        for k in &mut s.keys {
            k.status = "retired";
        }
        s.keys.push(key.clone());
        key
    }

    /// A key the peer never publishes (signatures with it must not verify).
    pub fn unpublished_key(&self) -> PeerKey {
        PeerKey {
            key_id: format!("k_node_{}_unpublished", self.label()),
            key: self.derive_key("unpublished"),
            status: "active",
        }
    }

    /// A human identity `loom://{name}@{domain}` the peer hosts (serves its node-signed
    /// identity document).
    pub fn host(&self, name: &str) -> Identity {
        self.host_as(name, "human")
    }

    /// The signing key id of hosted identity `name`'s key `generation`: `k_sign_{ULID}`,
    /// unique per identity, generation and peer (a node may keep key ids unique across every
    /// identity it knows, DESIGN.md §9), and the same for the same seed.
    fn identity_key_id(&self, name: &str, generation: u32) -> String {
        let b = self.derive(&format!("identity-key-id-{name}-{generation}"));
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&b[..16]);
        format!("k_sign_{}", ulid::Ulid::from_bytes(bytes))
    }

    /// An identity of type `kind` (`human`, `agent`, …) the peer hosts.
    pub fn host_as(&self, name: &str, kind: &str) -> Identity {
        let address = format!("loom://{name}@{}", self.domain);
        let seed = self.derive(&format!("identity-{name}-1"));
        let id = Identity::from_seed(&address, &seed)
            .and_then(|i| i.with_key_id(&self.identity_key_id(name, 1)))
            .map(|i| i.with_type(kind))
            .expect("a seeded Ed25519 key and a valid key id");
        self.lock().identities.insert(address, id.clone());
        id
    }

    /// Gives hosted identity `address` a new active signing key; the earlier one stays in its
    /// document marked `retired` (v1.0 §7.4 "Old keys MUST be retained … (marked `retired`)").
    pub fn rotate_identity_key(&self, address: &str, generation: u32) -> Option<Identity> {
        let mut s = self.lock();
        let old = s.identities.get(address)?.clone();
        let name = old
            .address()
            .trim_start_matches("loom://")
            .split('@')
            .next()
            .unwrap_or("x")
            .to_owned();
        let seed = self.derive(&format!("identity-{name}-{generation}"));
        let id = Identity::from_seed(address, &seed)
            .and_then(|i| i.with_key_id(&self.identity_key_id(&name, generation)))
            .ok()?
            .with_type(old.kind());
        s.retired.entry(address.to_owned()).or_default().push(old);
        s.identities.insert(address.to_owned(), id.clone());
        Some(id)
    }

    /// Signs every hosted identity's document in `form` from now on (the reading the target
    /// verifies, [`crate::readings`]).
    pub fn set_identity_form(&self, form: NodeSignatureForm) {
        self.lock().identity_form = Some(form);
    }

    /// Signs `address`'s document in `form`, whatever the peer's form (the reading probes).
    pub fn sign_identity_as(&self, address: &str, form: NodeSignatureForm) {
        self.lock().identity_forms.insert(address.to_owned(), form);
    }

    /// Where the node document says deliveries go.
    pub fn deliver_url(&self) -> String {
        self.lock()
            .deliver_url
            .clone()
            .unwrap_or_else(|| format!("{}/v1/federation/deliver", self.base_url))
    }

    /// Publishes another deliver URL (an unreachable one, for store-and-forward cases).
    pub fn set_deliver_url(&self, url: String) {
        self.lock().deliver_url = Some(url);
    }

    /// The peer's public origin: its own domain, with the scheme and port of the harness
    /// address (`http://peer-7.test:9900`). A real node's document names URLs on its own
    /// domain; a target that resolves the peer domains to the harness reaches them there (the
    /// server routes by `Host`), and a target configured with a base URL for the peer
    /// (`peer-7.test -> http://127.0.0.1:9900/peer/7`) reaches the same paths under it.
    pub fn public_origin(&self) -> String {
        let (scheme, rest) = self
            .base_url
            .split_once("://")
            .unwrap_or(("http", &self.base_url));
        let authority = rest.split('/').next().unwrap_or("");
        let port = authority
            .rsplit_once(':')
            .filter(|(_, p)| p.parse::<u16>().is_ok())
            .map(|(_, p)| format!(":{p}"))
            .unwrap_or_default();
        format!("{scheme}://{}{port}", self.domain)
    }

    /// The node document (v1.1 §15.2): keys both as base64url (`signing_keys`) and as SPKI
    /// PEM under `federation.signing_keys` (DESIGN.md §9: the existing node reads them there);
    /// URLs on the peer's [`PeerNode::public_origin`] unless a case published another
    /// deliver URL.
    pub fn node_document(&self) -> Value {
        let origin = self.public_origin();
        let deliver = self
            .lock()
            .deliver_url
            .clone()
            .unwrap_or_else(|| format!("{origin}/v1/federation/deliver"));
        let keys = self.keys();
        let b64: Vec<Value> = keys
            .iter()
            .map(|k| {
                json!({"key_id": k.key_id, "algorithm": "Ed25519", "status": k.status,
                    "public_key": public_key_to_b64url(&k.key.verifying_key())})
            })
            .collect();
        let pem: Vec<Value> = keys
            .iter()
            .map(|k| {
                json!({"key_id": k.key_id, "algorithm": "Ed25519", "status": k.status,
                    "public_key_pem": public_key_to_spki_pem(&k.key.verifying_key())})
            })
            .collect();
        json!({
            "loom": "1.1",
            "node_id": self.domain,
            "domain": self.domain,
            "api_url": format!("{origin}/v1"),
            "websocket_url": format!("{}/ws", origin.replacen("http", "ws", 1)),
            "federation": {
                "deliver_url": deliver,
                "identity_resolve_url": format!("{origin}/v1/identity/{{identity}}"),
                "requirements": ["LOOM-HTTP-SIG-1"],
                "policy": "open",
                "signing_keys": pem,
            },
            "signing_keys": b64,
            "supported_versions": ["1.1"],
            "supported_profiles": ["loom-core-1"],
            "conformance_level": 2,
        })
    }

    /// The node-signed identity document of a hosted identity (DESIGN.md §9), if hosted,
    /// signed in the registration form unless a detected reading said otherwise.
    pub fn identity_document(&self, address: &str) -> Option<Value> {
        let (id, retired, form) = {
            let s = self.lock();
            let (a, id) = s
                .identities
                .iter()
                .find(|(a, _)| a.eq_ignore_ascii_case(address))?;
            let form = s.identity_forms.get(a).copied().or(s.identity_form);
            (
                id.clone(),
                s.retired.get(a).cloned().unwrap_or_default(),
                form.unwrap_or(NodeSignatureForm::Registration),
            )
        };
        let key = |i: &Identity, status: &str| {
            json!({
                "key_id": i.key_id(),
                "algorithm": "Ed25519",
                "public_key": public_key_to_b64url(&i.signing_key().verifying_key()),
                "public_key_pem": i.public_key_pem(),
                "status": status,
            })
        };
        let mut keys: Vec<Value> = retired.iter().map(|i| key(i, "retired")).collect();
        keys.push(key(&id, "active"));
        let mut doc = json!({
            "loom": "1.1",
            "id": id.address(),
            "type": id.kind(),
            "display_name": id.display_name(),
            "signing_keys": keys,
        });
        let k = self.active_key();
        sign_identity_document_as(&mut doc, form, &k.key_id, &k.key).ok()?;
        Some(doc)
    }

    /// The §15.7 hello: capabilities and policy, signed by the node key over their canonical
    /// JSON (the spec fixes no form; this is the peer's).
    pub fn hello(&self) -> Value {
        let k = self.active_key();
        let body = json!({"loom": "1.1", "node_id": self.domain, "policy": "open",
            "capabilities": ["federation.deliver", "LOOM-HTTP-SIG-1"]});
        let payload = loom_protocol::jcs::to_canonical_bytes(&body);
        let mut out = body;
        out["signature"] = json!({"algorithm": "Ed25519", "key_id": k.key_id,
            "value": loom_protocol::keys::sign_b64url(&k.key, None, &payload)});
        out
    }

    /// A delivery wrapper from this peer (v1.1 §15.4) with `timestamp` = `at`.
    pub fn wrapper(&self, envelopes: Vec<Value>, at: Timestamp) -> Value {
        let id = hex::encode(&self.nonce_bytes()[..8]);
        DeliveryWrapper::new(&self.domain, Some(format!("fdel_{id}")), at, envelopes).to_value()
    }

    /// LOOM-HTTP-SIG-1 headers for a request to the target, signed at `at` with `key`
    /// (5-line string, or 6-line with `trust_epoch`).
    pub fn sign(
        &self,
        method: &str,
        path: &str,
        body: &[u8],
        at: Timestamp,
        key: &PeerKey,
        trust_epoch: Option<&str>,
    ) -> SignedHeaders {
        let req = RequestParts { method, path, body };
        sign_request_with_epoch(
            &req,
            &self.domain,
            &key.key_id,
            &key.key,
            at,
            &self.nonce_bytes(),
            trust_epoch,
        )
    }

    /// [`PeerNode::sign`] with given nonce bytes (a replay reuses another request's nonce).
    pub fn sign_with_nonce(
        &self,
        req: &RequestParts<'_>,
        at: Timestamp,
        key: &PeerKey,
        nonce: &[u8],
    ) -> SignedHeaders {
        sign_request_with_epoch(req, &self.domain, &key.key_id, &key.key, at, nonce, None)
    }

    /// Queues how the next deliveries are answered (then [`Answer::Accept`]).
    pub fn script(&self, answers: &[Answer]) {
        self.lock().script.extend(answers.iter().copied());
    }

    pub(crate) fn next_answer(&self) -> Answer {
        self.lock().script.pop_front().unwrap_or(Answer::Accept)
    }

    /// The signed receipt for a delivery body (every envelope accepted), or why there is none.
    pub(crate) fn receipt_for(&self, body: &[u8]) -> Result<Value, String> {
        let limits = WrapperLimits::default();
        let w = DeliveryWrapper::parse(body, &limits).map_err(|e| e.to_string())?;
        let ids: Vec<String> = w
            .envelope_ids()
            .into_iter()
            .flatten()
            .map(str::to_owned)
            .collect();
        let total = w.envelopes.len();
        let r = DeliveryReceipt::for_delivery(
            w.delivery_id.clone(),
            &self.domain,
            &w.sender_node,
            ids,
            total,
            self.now(),
        )
        .ok_or("the wrapper carries no envelope")?;
        let k = self.active_key();
        Ok(r.sign(&k.key_id, &k.key))
    }

    pub(crate) fn record(&self, r: Received) {
        self.lock().received.push(r);
        self.arrived.notify_waiters();
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.lock().received.clone()
    }

    /// Deliveries received so far.
    pub fn deliveries(&self) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(Received::is_delivery)
            .collect()
    }

    /// Waits until `done` holds for the deliveries received, or `timeout` passes; returns
    /// the deliveries either way.
    pub async fn wait_for(
        &self,
        timeout: Duration,
        done: impl Fn(&[Received]) -> bool,
    ) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.arrived.notified();
            let d = self.deliveries();
            if done(&d) || tokio::time::Instant::now() >= deadline {
                return d;
            }
            let _ = tokio::time::timeout_at(deadline, notified).await;
        }
    }
}
