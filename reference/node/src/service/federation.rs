//! Federation, receiving side and peers (v1.1 §15): `POST /v1/federation/deliver`, the
//! handshake document (§15.7), peer node documents and their keys (§15.2, v1.0 §7.4) and
//! remote identities (node-signed documents, DESIGN.md §9). The sending side — the outbox
//! worker — is [`super::outbox`].
//!
//! A delivery, in order:
//! 1. the raw body is capped by `federation.max_wrapper_bytes` (the HTTP layer, 413);
//! 2. the peer's node keys come from the store; a peer not seen yet, or a `X-LOOM-Key-Id`
//!    its stored document does not list, makes the node fetch the document from the peer's
//!    configured base URL (at most once per `federation.refetch_min_interval_ms` per peer,
//!    default a minute);
//! 3. `loom_protocol::federation::check_delivery`: headers, policy, key, freshness, signature,
//!    nonce (probed against the store's cache, not yet recorded), wrapper, sender authority;
//! 4. the per-node rate class (§14.3), only now that the node is authenticated;
//! 5. each envelope's sender — and each delegator of its `from.delegation_chain` (§13.3
//!    verifies the links with their keys) — is resolved from its home node when unknown (or
//!    when the named key id is unknown), then admitted with `Origin::Federated` and committed by the
//!    single writer with the wrapper's other envelopes, in wrapper order;
//! 6. the nonce is recorded in the store once something was accepted (a racing copy loses
//!    the insert and is refused as a replay), so a restart does not reopen a replay window;
//!    a request refused as a whole records nothing and changes nothing;
//! 7. the answer: 202 `{receipt, rejected}` — the signed receipt (`accepted`/`partial`, the
//!    accepted ids) where the existing v1.1 node reads it (DESIGN.md §9), and an unsigned
//!    `rejected[]` naming each refused envelope's §24.1 error — or, when nothing was
//!    accepted, the first envelope's error as the §24.1 body (an envelope whose sender's
//!    home node served an identity document that does not verify is refused with
//!    `SIGNATURE_INVALID` naming `node_signature` and that node).

use super::Service;
use super::rate_limit::LimitClass;
use super::write_group::Submitter;
use crate::error::{ApiError, ApiResult};
use crate::outbound::{HttpClient, TransportError};
use crate::quirks::QuirkRules;
use crate::store::federation::{self as fed_store, RemoteIdentity};
use crate::store::resolvers::{LocalDirectory, local_directory};
use ed25519_dalek::VerifyingKey;
use loom_protocol::accept::{Deviations, Directory, Facts, Origin, SpecRules, admit};
use loom_protocol::capability::presented_token_issuer;
use loom_protocol::delegation::{DelegationResolver, LinkRef};
use loom_protocol::envelope::SenderType;
use loom_protocol::federation::node_document::{
    KeyLookup, configured_document_url, discovery_url, identity_url, read_node_document,
    should_refetch_after, url_origin,
};
use loom_protocol::federation::node_name::parse_node_name;
use loom_protocol::federation::replication::stamp_federated_meta;
use loom_protocol::federation::wrapper::{DELIVER_PATH, MAX_ENVELOPES_PER_WRAPPER, WrapperLimits};
use loom_protocol::federation::{
    DeliveryReceipt, DocumentSource, FederationPolicy, InboundContext, NodeKeys, PolicyDecision,
    RetiredKey, RetryPolicy, authenticate_node_document, check_delivery_with,
    verify_identity_document,
};
use loom_protocol::http_sig::{
    FRESHNESS_MS, HEADER_SIGNATURE, NONCE_TTL_MS, NonceCache, NonceOutcome, RequestParts,
    SignedHeaders,
};
use loom_protocol::keys::{public_key_from_b64url, public_key_to_b64url, public_key_to_spki_pem};
use loom_protocol::{Address, ErrorCode, ProtocolError, Timestamp};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

/// Federation state of a running node.
#[derive(Debug)]
pub struct Federation {
    /// Outbound HTTP (tokio or turmoil sockets).
    pub(crate) client: HttpClient,
    /// The enforced policy.
    pub(crate) policy: FederationPolicy,
    /// §15.6 timing.
    pub(crate) retry: RetryPolicy,
    /// Wakes the outbox worker when the writer queued something.
    pub(crate) wake: tokio::sync::Notify,
    /// Set by the writer when a group queued outbox rows.
    pub(crate) queued: AtomicBool,
    /// One outbox pass at a time.
    pub(crate) tick: tokio::sync::Mutex<()>,
    /// When (injected clock, unix ms) the nonce cache was last purged
    /// (`FederationConfig::nonce_purge_ms`); `i64::MIN` before the first pass.
    pub(crate) last_purge_ms: std::sync::atomic::AtomicI64,
    /// When (injected clock, unix ms) fetching each node's document for an inbound request
    /// last failed (discovering an unknown node, or re-fetching after a signature failed
    /// under a known key id): such requests trigger at most one fetch per
    /// `federation.refetch_min_interval_ms` per node name, so made-up `X-LOOM-Node` values
    /// cannot make this node fetch `https://{name}/…` per request. Bounded by
    /// [`MAX_DISCOVERY_FAILURES`] (cleared when full).
    pub(crate) discovery_failures: std::sync::Mutex<BTreeMap<String, i64>>,
    /// Optional DNS SRV/TXT discovery (v1.1 §15.1, `federation.dns_server`); see
    /// [`crate::discover`].
    pub(crate) discover: Option<std::sync::Arc<dyn crate::discover::Discover>>,
}

/// Most node names remembered in [`Federation::discovery_failures`].
pub const MAX_DISCOVERY_FAILURES: usize = 10_000;

/// A peer as this node knows it: keys and where to reach it.
#[derive(Debug, Clone)]
pub struct Peer {
    /// Its node signing keys.
    pub keys: NodeKeys,
    /// Where deliveries go.
    pub deliver_url: String,
    /// The identity resolution template (`{identity}` placeholder).
    pub identity_template: String,
    /// When its document was fetched.
    pub fetched_at: Option<Timestamp>,
}

/// The answer to a delivery: status and body.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryAnswer {
    /// 202.
    pub status: u16,
    /// The signed receipt and `rejected[]`.
    pub body: Value,
}

/// Probes the store's nonce cache without recording: the nonce is recorded only once the
/// whole request passed (module docs, step 5).
struct StoreNonces<'a> {
    svc: &'a Service,
    fresh: Option<(String, String)>,
}

impl NonceCache for StoreNonces<'_> {
    fn check_and_insert(&mut self, node: &str, nonce: &str, now: Timestamp) -> NonceOutcome {
        let cutoff = now.unix_ms().saturating_sub(NONCE_TTL_MS);
        let seen = fed_store::nonce_seen(&self.svc.store.read(), node, nonce, cutoff);
        match seen {
            // A store failure refuses the request rather than risk accepting a replay.
            Ok(true) | Err(_) => NonceOutcome::Replayed,
            Ok(false) => {
                self.fresh = Some((node.to_owned(), nonce.to_owned()));
                NonceOutcome::Fresh
            }
        }
    }
}

/// Local identities from the authentication cache, remote ones as resolved for this
/// delivery (`loom_protocol::accept::Directory`).
struct FedDirectory<'a> {
    local: LocalDirectory<'a>,
    remote: &'a BTreeMap<Address, RemoteIdentity>,
}

impl FedDirectory<'_> {
    fn remote_keys(&self, identity: &Address) -> Option<Vec<(String, VerifyingKey)>> {
        let r = self.remote.get(identity)?;
        Some(
            r.keys
                .iter()
                .filter_map(|(k, pk)| public_key_from_b64url(pk).ok().map(|v| (k.clone(), v)))
                .collect(),
        )
    }
}

impl Directory for FedDirectory<'_> {
    fn registered_type(&self, identity: &Address) -> Option<String> {
        self.local
            .registered_type(identity)
            .or_else(|| self.remote.get(identity)?.kind.clone())
    }

    fn active_signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.local.active_signing_key(identity, key_id).or_else(|| {
            self.remote_keys(identity)?
                .into_iter()
                .find(|(k, _)| k == key_id)
                .map(|(_, v)| v)
        })
    }

    /// A remote sender's key its home node lists as `retired` (v1.0 §7.4); local
    /// identities have none (their keys are active or revoked).
    fn retired_signing_key(&self, identity: &Address, key_id: &str) -> Option<RetiredKey> {
        let (kid, pk, at) = self
            .remote
            .get(identity)?
            .retired
            .iter()
            .find(|(k, _, _)| k == key_id)?;
        let retired_at = match at {
            None => None,
            // Stored only after the document verified; a value that no longer parses is
            // treated as the document's rule would be: the key cannot be judged, so unused.
            Some(t) => Some(Timestamp::parse(t).ok()?),
        };
        Some(RetiredKey {
            key_id: kid.clone(),
            key: public_key_from_b64url(pk).ok()?,
            retired_at,
        })
    }
}

impl DelegationResolver for FedDirectory<'_> {
    fn signing_keys(&self, identity: &Address) -> Option<Vec<(String, VerifyingKey)>> {
        self.local
            .signing_keys(identity)
            .or_else(|| self.remote_keys(identity))
    }

    fn identity_type(&self, identity: &Address) -> Option<SenderType> {
        SenderType::parse(&self.registered_type(identity)?)
    }

    fn is_revoked(&self, link: &LinkRef<'_>) -> bool {
        self.local.is_revoked(link)
    }
}

/// [`crate::quirks::Quirk::IgnoreDeliveredLock`]: acceptance decides on an empty
/// `thread.update@v1` (no change to the thread) in place of a delivered `thread.lock@v1`;
/// the stored envelope is still the signed lock.
fn ignore_lock(facts: &mut loom_protocol::accept::Facts) {
    if facts.kind == "thread_op"
        && let Some(s) = facts.structured.as_mut()
        && s.intent == "thread.lock@v1"
    {
        s.intent = "thread.update@v1".into();
        s.parameters = None;
    }
}

/// A refusal for want of the sender node's keys (`X-LOOM-Node`: no authenticated document;
/// `X-LOOM-Key-Id`: not among its keys) names why fetching its document failed, when a
/// fetch was tried: a certificate for another name, a document for another domain, an
/// unreachable node (v1.1 §15.2, §15.3).
fn with_fetch_error(mut e: ApiError, fetch: Option<&ApiError>) -> ApiError {
    if let Some(f) = fetch
        && (e.field == "X-LOOM-Node" || e.field == "X-LOOM-Key-Id")
    {
        e.reason = format!(
            "{}; fetching its node document failed: {} ({})",
            e.reason, f.reason, f.section
        );
    }
    e
}

fn transport_error(what: &str, e: &TransportError) -> ApiError {
    ApiError::new(
        ErrorCode::NodeUnreachable,
        "X-LOOM-Node",
        format!("{what}: {e}"),
        "v1.1 §15.2",
    )
}

/// `url` with its origin replaced by `base` (a configured peer is reached at its base URL,
/// whatever public URLs its document names). A URL that already lies under `base` (the
/// document names it under the same path prefix, e.g. `http://127.0.0.1:P/peer/7/v1/…` for
/// the base `http://127.0.0.1:P/peer/7`) is used as it is: rebasing it would apply the
/// prefix twice.
fn rebase(url: &str, base: Option<&str>) -> String {
    let Some(b) = base.map(|b| b.trim_end_matches('/')) else {
        return url.to_owned();
    };
    if url == b
        || url
            .strip_prefix(b)
            .is_some_and(|rest| rest.starts_with('/'))
    {
        return url.to_owned();
    }
    match url_origin(url) {
        Some(origin) => format!("{b}{}", &url[origin.len()..]),
        None => url.to_owned(),
    }
}

/// The `reject-old-envelopes` quirk: refuses `env` when its `created_at` is more than the
/// The identities whose keys accepting `env` needs, with the key id each signed with: the
/// sender (`from.key_id`, v1.1 §7.3), every delegator of `from.delegation_chain` (the
/// link's `key_id`, §13.3 step 2) and the issuer of a presented capability token (its
/// `signature.key_id`, §12.4). Unparsable entries are left to acceptance to refuse.
fn signers(env: &Value) -> Vec<(Address, String)> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
    let mut out = Vec::new();
    if let Some(a) = env
        .pointer("/from/identity")
        .and_then(Value::as_str)
        .and_then(|s| Address::parse(s).ok())
    {
        out.push((a, text(env.pointer("/from/key_id"))));
    }
    let chain = env
        .pointer("/from/delegation_chain")
        .and_then(Value::as_array);
    for link in chain.into_iter().flatten() {
        if let Some(a) = link
            .get("delegator")
            .and_then(Value::as_str)
            .and_then(|s| Address::parse(s).ok())
        {
            out.push((a, text(link.get("key_id"))));
        }
    }
    out.extend(presented_token_issuer(env));
    out
}

/// §15.5 freshness window before `now`. A correct node never calls this: §15.5 bounds the
/// request and wrapper timestamps only, a queued envelope may be days old.
fn refuse_old_envelope(env: &Value, now: Timestamp) -> Result<(), ProtocolError> {
    let created = env
        .get("created_at")
        .and_then(Value::as_str)
        .and_then(|s| Timestamp::parse(s).ok());
    match created {
        Some(c) if now.unix_ms() - c.unix_ms() > FRESHNESS_MS => Err(ProtocolError::invalid(
            "created_at",
            format!("created_at {c} is more than {FRESHNESS_MS} ms old"),
            "v1.1 §15.5",
        )),
        _ => Ok(()),
    }
}

impl Service {
    /// The acceptance deviations of delivered envelopes.
    pub(crate) fn federated_deviations(&self) -> Deviations {
        let f = &self.settings.federation;
        let mut d = self.deviations;
        d.skip_signature |= f.skip_envelope_signature;
        d.skip_delegation_chain |= f.skip_delegation;
        d.skip_capability_check |= f.skip_capability;
        d
    }

    /// The node's own identity, `loom://loom-node@{domain}` (failure receipts).
    pub(crate) fn node_address(&self) -> ApiResult<Address> {
        Address::parse(&format!(
            "loom://{}@{}",
            super::outbox::NODE_IDENTITY_LOCAL,
            self.config.domain
        ))
        .map_err(ApiError::internal)
    }

    /// The configured base URL of `node`, if it is a static peer.
    fn peer_base(&self, node: &str) -> Option<&str> {
        self.config
            .federation
            .peers
            .iter()
            .find(|(d, _)| d.eq_ignore_ascii_case(node.trim_end_matches('.')))
            .map(|(_, u)| u.as_str())
    }

    /// `node` as stored, if its document was fetched before.
    pub(crate) fn stored_peer(&self, node: &str) -> ApiResult<Option<Peer>> {
        let Some((doc, at)) = fed_store::node_document(&self.store.read(), node)? else {
            return Ok(None);
        };
        let view = match read_node_document(&doc, node) {
            Ok(v) => v,
            Err(_) => return Ok(None),
        };
        let base = self.peer_base(node);
        Ok(Some(Peer {
            keys: view.keys,
            deliver_url: rebase(&view.deliver_url, base),
            identity_template: rebase(&view.identity_resolve_url, base),
            fetched_at: Timestamp::parse(&at).ok(),
        }))
    }

    /// Fetches and stores the node document of `node`: from its configured base URL when it
    /// is a static peer, else discovered at `https://{node}/.well-known/loom.json`
    /// (v1.1 §15.1 discovery, §15.2 node document) — only for a node the federation policy
    /// admits (§23.1), so a refused node cannot make this node fetch anything. The document
    /// is stored, and its keys used for `node`, only when
    /// `loom_protocol::federation::authenticate_node_document` finds it authenticated for
    /// `node` (§15.3: the URL, whose host the TLS certificate was checked against, and the
    /// document's `domain`). The client follows no redirect: a 3xx is a failed fetch. With
    /// `federation.dns_server` set, a discovered node's document is fetched where its DNS
    /// SRV/TXT records point, if it has any ([`Service::dns_document_urls`]); when they name
    /// several SRV targets, each is tried in RFC 2782 order until one serves an
    /// authenticated document, and the refusal names what every target answered.
    pub async fn fetch_peer(&self, node: &str) -> ApiResult<Peer> {
        let configured = self
            .peer_base(node)
            .map(|b| b.trim_end_matches('/').to_owned());
        let (urls, from_dns) = match &configured {
            Some(b) => (vec![configured_document_url(b)], false),
            None => {
                let name = parse_node_name(node).map_err(|why| {
                    ApiError::new(
                        ErrorCode::NodeUnreachable,
                        "X-LOOM-Node",
                        format!("cannot discover node {node:?}: {why}"),
                        "v1.1 §15.1",
                    )
                })?;
                if let Err(e) = self.fed.policy.decide(&name) {
                    return Err(ApiError::new(
                        e.code,
                        "X-LOOM-Node",
                        format!("node {name} is not discovered: {}", e.rule),
                        "v1.1 §15.1, §23.1",
                    ));
                }
                let found = self.dns_document_urls(&name).await?;
                if found.is_empty() {
                    (vec![discovery_url(&name)], false)
                } else {
                    (found, true)
                }
            }
        };
        let mut failures = Vec::new();
        for url in &urls {
            let source = match &configured {
                Some(base) => DocumentSource::ConfiguredPeer { base, url },
                None if from_dns => DocumentSource::DnsDiscovery { url },
                None => DocumentSource::Discovery { url },
            };
            match self.fetch_node_document(node, url, source).await {
                Ok(doc) => {
                    self.put_node_document(node, &doc)?;
                    return self
                        .stored_peer(node)?
                        .ok_or_else(|| ApiError::internal("peer document just stored"));
                }
                Err(e) => failures.push((url, e)),
            }
        }
        match failures.len() {
            0 => Err(ApiError::internal("no node document URL to try")),
            1 => Err(failures.remove(0).1),
            n => Err(ApiError::new(
                ErrorCode::NodeUnreachable,
                "X-LOOM-Node",
                format!(
                    "none of the {n} SRV targets of {node} served its node document: {}",
                    failures
                        .iter()
                        .map(|(url, e)| format!("{url}: {}", e.reason))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                "v1.1 §15.1, §15.2",
            )),
        }
    }

    /// GETs the node document of `node` at `url` and authenticates it for `node` (§15.2,
    /// §15.3); nothing is stored.
    async fn fetch_node_document(
        &self,
        node: &str,
        url: &str,
        source: DocumentSource<'_>,
    ) -> ApiResult<Value> {
        let reply = self
            .fed
            .client
            .request("GET", url, &[], Vec::new())
            .await
            .map_err(|e| transport_error(&format!("node document of {node}"), &e))?;
        if reply.status != 200 {
            return Err(ApiError::new(
                ErrorCode::NodeUnreachable,
                "X-LOOM-Node",
                format!("{url} answered {}", reply.status),
                "v1.1 §15.2",
            ));
        }
        let doc = loom_protocol::jcs::parse_strict_bytes(&reply.body).map_err(|e| {
            ApiError::new(
                ErrorCode::NodeUnreachable,
                "X-LOOM-Node",
                format!("node document of {node} is not JSON: {e}"),
                "v1.1 §15.2",
            )
        })?;
        authenticate_node_document(&doc, node, source)?;
        Ok(doc)
    }

    /// The peer `node`: stored, else fetched.
    pub(crate) async fn peer(&self, node: &str) -> ApiResult<Peer> {
        match self.stored_peer(node)? {
            Some(p) => Ok(p),
            None => self.fetch_peer(node).await,
        }
    }

    /// The peer `node` for a request naming `key_id`: re-fetched when the key is unknown
    /// (v1.0 §7.4), at most once a minute; with the fetch's error when one was tried and
    /// failed (the refusal names it).
    async fn peer_for_key(&self, node: &str, key_id: &str) -> (Option<Peer>, Option<ApiError>) {
        let stored = self.stored_peer(node).ok().flatten();
        let unknown = stored
            .as_ref()
            .is_none_or(|p| matches!(p.keys.lookup(key_id), KeyLookup::UnknownKeyId));
        let may_fetch = match &stored {
            None => self.peer_base(node).is_some() || self.may_discover(node),
            Some(p) => {
                !self.settings.federation.no_refetch_on_unknown_key
                    && self.may_refetch(p.fetched_at)
            }
        };
        if unknown && may_fetch {
            match self.fetch_peer(node).await {
                Ok(p) => return (Some(p), None),
                Err(e) => {
                    if stored.is_none() && self.peer_base(node).is_none() {
                        self.discovery_failed(node);
                    }
                    return (stored, Some(e));
                }
            }
        }
        (stored, None)
    }

    /// Whether an inbound request from `node` may trigger a fetch of its document now: not
    /// within `refetch_min_interval_ms` of a failed one (discovery of an unknown node, or a
    /// re-fetch after a bad signature).
    fn may_discover(&self, node: &str) -> bool {
        let Ok(failures) = self.fed.discovery_failures.lock() else {
            return false;
        };
        let last = failures
            .get(&node.to_ascii_lowercase())
            .map(|ms| Timestamp::from_unix_ms(*ms));
        self.may_refetch(last)
    }

    /// Remembers that fetching `node`'s document for an inbound request failed now.
    fn discovery_failed(&self, node: &str) {
        if let Ok(mut failures) = self.fed.discovery_failures.lock() {
            if failures.len() >= MAX_DISCOVERY_FAILURES {
                failures.clear();
            }
            failures.insert(node.to_ascii_lowercase(), self.env.now().unix_ms());
        }
    }

    /// Whether a document last fetched at `last` may be fetched again for an unknown key id
    /// (v1.0 §7.4; `federation.refetch_min_interval_ms` apart).
    fn may_refetch(&self, last: Option<Timestamp>) -> bool {
        let min = i64::try_from(self.config.federation.refetch_min_interval_ms).unwrap_or(i64::MAX);
        should_refetch_after(last, self.env.now(), min)
    }

    /// Resolves the remote `who` from its home node `peer` (or the store's earlier answer),
    /// re-fetching when `key_id` is not among its keys. Beside the identity: why the home
    /// node's answer was refused, when it served a document that does not verify — a
    /// `node_signature` in neither form, or a document for someone else (§15.4, DESIGN.md
    /// §9) — so the refusal names it instead of calling the identity unknown. Each such
    /// refusal is logged (§23.2 "log security events").
    async fn remote_identity(
        &self,
        who: &Address,
        peer: &Peer,
        key_id: &str,
    ) -> ApiResult<(Option<RemoteIdentity>, Option<ApiError>)> {
        let id = who.to_string();
        let stored = fed_store::remote_identity(&self.store.read(), &id)?;
        if let Some(r) = &stored {
            let fresh_enough = !self.may_refetch(Timestamp::parse(&r.fetched_at).ok());
            if r.lists_key(key_id)
                || fresh_enough
                || self.settings.federation.no_refetch_on_unknown_key
            {
                return Ok((stored, None));
            }
        }
        let url = identity_url(&peer.identity_template, &id);
        let Ok(reply) = self.fed.client.request("GET", &url, &[], Vec::new()).await else {
            return Ok((stored, None));
        };
        if reply.status != 200 {
            return Ok((stored, None));
        }
        let Ok(doc) = loom_protocol::jcs::parse_strict_bytes(&reply.body) else {
            return Ok((stored, None));
        };
        let refused = |field: &str, why: String| {
            tracing::warn!(peer = %peer.keys.node, identity = %id, %url, field, reason = %why,
                "federation: remote identity document refused");
            ApiError::new(
                ErrorCode::SignatureInvalid,
                field,
                format!(
                    "the identity document of {id} served by node {}: {why}",
                    peer.keys.node
                ),
                "v1.1 §15.4; DESIGN.md §9",
            )
        };
        let v = match verify_identity_document(&doc, &peer.keys) {
            Ok(v) => v,
            Err(e) => {
                let field = if e.field.starts_with("node_signature") {
                    "node_signature".to_owned()
                } else {
                    format!("node_signature ({})", e.field)
                };
                return Ok((stored, Some(refused(&field, e.rule))));
            }
        };
        if v.id != *who {
            let why = format!("the document is for {}", v.id);
            return Ok((stored, Some(refused("id", why))));
        }
        let ident = RemoteIdentity {
            kind: v.kind,
            keys: v
                .signing_keys
                .iter()
                .map(|(k, pk)| (k.clone(), public_key_to_b64url(pk)))
                .collect(),
            retired: v
                .retired_keys
                .iter()
                .map(|k| {
                    (
                        k.key_id.clone(),
                        public_key_to_b64url(&k.key),
                        k.retired_at.map(|t| t.to_rfc3339()),
                    )
                })
                .collect(),
            fetched_at: self.env.now().to_rfc3339(),
        };
        self.put_remote_identity(&id, &peer.keys.node, &ident, &doc)?;
        Ok((Some(ident), None))
    }

    /// Resolves the issuer of the capability token `env` presents (v1.1 §12.4) when it is a
    /// remote identity, from its home node as remote senders are (node-signed document,
    /// cached in the store), so that the writer's capability check — which reads keys from
    /// the store (`store::resolvers`) — can verify a token issued on another node (§12:
    /// "portable across federation … verifiable offline"). Nothing to do for a local or
    /// bridged issuer, or an envelope without a token. When the issuer cannot be resolved
    /// (home node unreachable, or its document does not verify) and nothing is cached, the
    /// envelope is refused here with `CAPABILITY_DENIED` naming why; nothing is stored.
    pub(crate) async fn resolve_token_issuer(&self, env: &Value) -> ApiResult<()> {
        let Some((issuer, key_id)) = presented_token_issuer(env) else {
            return Ok(());
        };
        if self.is_local(&issuer) || issuer.is_bridge() {
            return Ok(());
        }
        let home = issuer.domain().to_ascii_lowercase();
        let denied = |why: String| {
            ApiError::new(
                ErrorCode::CapabilityDenied,
                "content.structured.parameters.capability_token.issued_by",
                format!("the token's issuer {issuer} cannot be verified: {why}"),
                "v1.1 §12.1, §15.2",
            )
        };
        let peer = self.peer(&home).await.map_err(|e| {
            denied(format!(
                "its home node {home} could not be reached: {}",
                e.reason
            ))
        })?;
        match self.remote_identity(&issuer, &peer, &key_id).await? {
            (Some(_), _) => Ok(()),
            (None, Some(refused)) => Err(denied(refused.reason)),
            (None, None) => Err(denied(format!(
                "its home node {home} did not answer with a verifiable identity document"
            ))),
        }
    }

    /// `POST /v1/federation/deliver` (module docs). `pairs` are the request headers, `path`
    /// the request path as received (it is signed).
    pub async fn federation_deliver(
        &self,
        pairs: &[(String, String)],
        path: &str,
        body: &[u8],
    ) -> ApiResult<DeliveryAnswer> {
        let headers =
            SignedHeaders::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let dev = self.settings.federation;
        let now = self.env.now();
        let mut keys: BTreeMap<String, NodeKeys> = BTreeMap::new();
        let mut fetch_error = None;
        let mut stored_peer = None;
        if let Ok(node) = parse_node_name(&headers.node)
            && !dev.inbound.accept_unsigned
        {
            let (peer, error) = self.peer_for_key(&node, &headers.key_id).await;
            fetch_error = error;
            if let Some(p) = peer {
                keys.insert(node.clone(), p.keys.clone());
                stored_peer = Some((node, p));
            }
        }
        let req = RequestParts {
            method: "POST",
            path,
            body,
        };
        let mut checked = self.check_signed_delivery(&req, &headers, &keys, now);
        if let (Err(e), Some((node, peer))) = (&checked, &stored_peer)
            && e.code == ErrorCode::SignatureInvalid
            && e.field == HEADER_SIGNATURE
            && self.may_refetch_after_bad_signature(node, peer)
        {
            // The key id is published but its key does not verify: the peer may have
            // rotated its key under the same id (DESIGN.md §9). One re-fetch, then judge.
            match self.fetch_peer(node).await {
                Ok(p) => {
                    tracing::info!(peer = %node, key_id = %headers.key_id,
                        "federation: signature failed under a known key id; node document re-fetched");
                    keys.insert(node.clone(), p.keys);
                    checked = self.check_signed_delivery(&req, &headers, &keys, now);
                }
                Err(e) => {
                    self.discovery_failed(node);
                    fetch_error = Some(e);
                }
            }
        }
        let (checked, fresh) =
            checked.map_err(|e| with_fetch_error(e.into(), fetch_error.as_ref()))?;
        let node = checked.request.node.clone();
        if let Some(d) = self.rate_check(LimitClass::Federation, &node)
            && !d.allowed
        {
            return Err(ApiError::new(
                ErrorCode::RateLimitExceeded,
                "X-LOOM-Node",
                format!(
                    "node {node:?} sent more than {} deliveries this minute",
                    d.limit
                ),
                "v1.1 §14.3",
            )
            .with_header("Retry-After", d.reset_secs.to_string()));
        }
        let answer = self.accept_delivery(checked, now).await?;
        // Recorded once something was accepted: a request refused as a whole changes
        // nothing, and its replay is refused again for the same reason. Of two copies that
        // raced, the second loses the insert and is answered as the replay it is (its
        // envelopes were identical re-deliveries, stored once).
        if let Some((n, nonce)) = fresh
            && !self.record_nonce(&n, &nonce, now)?
        {
            return Err(ApiError::new(
                ErrorCode::SignatureInvalid,
                "X-LOOM-Nonce",
                "nonce already used by this node within 15 minutes (replay)",
                "v1.1 §15.3, §23.2",
            ));
        }
        Ok(answer)
    }

    /// Steps 1–6 of `loom_protocol::federation::check_delivery` with the peer `keys` known
    /// now; the nonce is probed, not recorded (module docs), and handed back for recording.
    fn check_signed_delivery(
        &self,
        req: &RequestParts<'_>,
        headers: &SignedHeaders,
        keys: &BTreeMap<String, NodeKeys>,
        now: Timestamp,
    ) -> Result<
        (
            loom_protocol::federation::CheckedDelivery,
            Option<(String, String)>,
        ),
        ProtocolError,
    > {
        let ctx = InboundContext {
            keys,
            policy: &self.fed.policy,
            limits: WrapperLimits {
                max_envelopes: MAX_ENVELOPES_PER_WRAPPER,
                max_bytes: self.config.federation.max_wrapper_bytes,
            },
            now,
        };
        let mut nonces = StoreNonces {
            svc: self,
            fresh: None,
        };
        let checked = check_delivery_with(
            req,
            headers,
            &mut nonces,
            &ctx,
            &self.settings.federation.inbound,
        )?;
        Ok((checked, nonces.fresh.take()))
    }

    /// Whether a signature that failed under a key id `peer`'s stored document publishes as
    /// active (a signature error is only reached with such a key) may trigger a re-fetch of that document: not one fetched just now, at most once per
    /// `federation.refetch_min_interval_ms` per peer, and not within that interval of a
    /// failed fetch (so forged requests cannot make this node fetch per request).
    fn may_refetch_after_bad_signature(&self, node: &str, peer: &Peer) -> bool {
        !self.settings.federation.no_refetch_on_signature_failure
            && peer.fetched_at != Some(self.env.now())
            && self.may_refetch(peer.fetched_at)
            && self.may_discover(node)
    }

    async fn accept_delivery(
        &self,
        checked: loom_protocol::federation::CheckedDelivery,
        now: Timestamp,
    ) -> ApiResult<DeliveryAnswer> {
        let node = checked.request.node.clone();
        let dev = self.settings.federation;
        let total = checked.wrapper.envelopes.len();
        // Resolve senders first (IO), then admit (no IO), then commit in wrapper order.
        let mut remote: BTreeMap<Address, RemoteIdentity> = BTreeMap::new();
        let mut refused: BTreeMap<Address, ApiError> = BTreeMap::new();
        for env in &checked.wrapper.envelopes {
            for (who, key_id) in signers(env) {
                if self.is_local(&who)
                    || who.is_bridge()
                    || remote.contains_key(&who)
                    || refused.contains_key(&who)
                {
                    continue;
                }
                let home = who.domain().to_ascii_lowercase();
                let Ok(peer) = self.peer(&home).await else {
                    continue;
                };
                match self.remote_identity(&who, &peer, &key_id).await? {
                    (Some(r), _) => {
                        remote.insert(who, r);
                    }
                    (None, Some(e)) => {
                        refused.insert(who, e);
                    }
                    (None, None) => {}
                }
            }
        }
        let delivery_quirks = self.quirks.for_delivery();
        let node_address = self.node_address()?;
        let limit = &self.config.limits.envelope();
        let mut outcomes: Vec<(Option<String>, Result<(), ApiError>)> = Vec::with_capacity(total);
        let mut jobs = Vec::new();
        for (i, (env, authority)) in checked
            .wrapper
            .envelopes
            .iter()
            .zip(&checked.authority)
            .enumerate()
        {
            let id = env.get("id").and_then(Value::as_str).map(str::to_owned);
            if let Some(e) = signers(env).iter().find_map(|(who, _)| refused.get(who)) {
                outcomes.push((id, Err(e.clone())));
                continue;
            }
            let admitted = (|| -> Result<_, ProtocolError> {
                authority.clone()?;
                if dev.reject_old_envelopes {
                    refuse_old_envelope(env, now)?;
                }
                let received = stamp_federated_meta(env.get("meta"), 0)?;
                let origin_event_seq = received
                    .get("origin_event_seq")
                    .and_then(Value::as_u64)
                    .filter(|_| !dev.drop_origin_event_seq);
                let sender_node = if dev.inbound.accept_foreign_sender {
                    env.pointer("/from/identity")
                        .and_then(Value::as_str)
                        .and_then(|s| Address::parse(s).ok())
                        .map_or_else(|| node.clone(), |a| a.domain().to_owned())
                } else {
                    node.clone()
                };
                let directory = FedDirectory {
                    local: local_directory(&self.store),
                    remote: &remote,
                };
                let mut unmetered = env.clone();
                if let Some(o) = unmetered.as_object_mut() {
                    o.remove("meta");
                }
                let origin = Origin::Federated {
                    node: &sender_node,
                    origin_event_seq,
                };
                let a = if delivery_quirks == crate::quirks::Quirks::none() {
                    admit(unmetered, origin, &directory, &SpecRules, limit, now)?
                } else {
                    let sender = env
                        .pointer("/from/identity")
                        .and_then(Value::as_str)
                        .and_then(|s| Address::parse(s).ok());
                    let caller = sender.unwrap_or_else(|| node_address.clone());
                    let rules = QuirkRules::new(&delivery_quirks, &self.env, &caller);
                    admit(unmetered, origin, &directory, &rules, limit, now)?
                };
                Ok((a, sender_node, origin_event_seq))
            })();
            match admitted {
                Ok((mut a, sender_node, origin_event_seq)) => {
                    if dev.orphan_delivered_replies {
                        a.facts.parent = None;
                    }
                    if dev.ignore_delivered_lock {
                        ignore_lock(&mut a.facts);
                    }
                    if checked.policy == PolicyDecision::Quarantine {
                        outcomes.push((id, self.quarantine(&a.facts, &a.envelope, &node)));
                    } else {
                        jobs.push((
                            i,
                            a,
                            Submitter::Federated {
                                node: sender_node,
                                origin_event_seq,
                            },
                        ));
                        outcomes.push((id, Ok(())));
                    }
                }
                Err(e) => outcomes.push((id, Err(e.into()))),
            }
        }
        let committed = if dev.drop_delivered_envelopes {
            Vec::new()
        } else {
            self.commit_many(
                jobs.iter()
                    .map(|(_, a, s)| (a.clone(), s.clone()))
                    .collect(),
            )
            .await
        };
        for ((i, _, _), r) in jobs.iter().zip(committed) {
            if let Err(e) = r {
                outcomes[*i].1 = Err(e);
            }
        }
        self.receipt_answer(&checked.wrapper.delivery_id, &node, outcomes, total, now)
    }

    fn record_nonce(&self, node: &str, nonce: &str, now: Timestamp) -> ApiResult<bool> {
        let cutoff = now.unix_ms().saturating_sub(NONCE_TTL_MS);
        let tx = self.store.begin()?;
        let recorded = fed_store::record_nonce(&tx, node, nonce, now.unix_ms(), cutoff)?;
        tx.commit()?;
        Ok(recorded)
    }

    fn put_node_document(&self, node: &str, doc: &Value) -> ApiResult<()> {
        let tx = self.store.begin()?;
        fed_store::put_node_document(&tx, node, doc, &self.env.now().to_rfc3339())?;
        tx.commit()?;
        Ok(())
    }

    fn put_remote_identity(
        &self,
        id: &str,
        node: &str,
        ident: &RemoteIdentity,
        doc: &Value,
    ) -> ApiResult<()> {
        let tx = self.store.begin()?;
        fed_store::put_remote_identity(&tx, id, node, ident, doc)?;
        tx.commit()?;
        Ok(())
    }

    fn quarantine(&self, facts: &Facts, envelope: &Value, node: &str) -> Result<(), ApiError> {
        let tx = self.store.begin()?;
        fed_store::quarantine(
            &tx,
            &facts.id.to_string(),
            node,
            envelope,
            &self.env.now().to_rfc3339(),
        )?;
        tx.commit()?;
        Ok(())
    }

    fn receipt_answer(
        &self,
        delivery_id: &Option<String>,
        node: &str,
        outcomes: Vec<(Option<String>, Result<(), ApiError>)>,
        total: usize,
        now: Timestamp,
    ) -> ApiResult<DeliveryAnswer> {
        let mut accepted = Vec::new();
        let mut rejected = Vec::new();
        let mut first_error = None;
        for (id, r) in outcomes {
            match (id, r) {
                (Some(id), Ok(())) => accepted.push(id),
                (id, Err(e)) => {
                    rejected.push(json!({
                        "envelope_id": id,
                        "error": {"code": e.code.as_str(), "message": e.to_string(),
                                  "details": {"field": e.field, "reason": e.reason, "section": e.section}},
                    }));
                    first_error.get_or_insert(e);
                }
                (None, Ok(())) => {}
            }
        }
        let Some(receipt) = DeliveryReceipt::for_delivery(
            delivery_id.clone(),
            &self.config.domain,
            node,
            accepted,
            total,
            now,
        ) else {
            return Err(first_error.unwrap_or_else(|| {
                ApiError::bad_request("envelopes", "no envelope was accepted", "v1.1 §15.4")
            }));
        };
        let (key_id, key) = self.node_key();
        let dev = &self.settings.federation;
        let receipt = if dev.unsigned_receipt {
            receipt.unsigned_value()
        } else {
            receipt.sign(key_id, key)
        };
        // DESIGN.md §9: the existing node reads the receipt under `receipt`.
        let body = if dev.no_receipt {
            json!({})
        } else if dev.top_level_receipt {
            let mut body = receipt;
            body["rejected"] = Value::Array(rejected);
            body
        } else {
            json!({"receipt": receipt, "rejected": rejected})
        };
        Ok(DeliveryAnswer { status: 202, body })
    }

    /// `GET /v1/federation/hello` (§15.7): capabilities and policy, signed
    /// (`loom_protocol::federation::hello`).
    pub fn federation_hello(&self) -> Value {
        let doc = self.node_document();
        let (key_id, key) = self.node_key();
        let mut hello = json!({
            "loom": "1.1",
            "node_id": self.config.domain,
            "domain": self.config.domain,
            "federation": doc.get("federation").cloned().unwrap_or(Value::Null),
            "supported_versions": doc.get("supported_versions").cloned().unwrap_or(Value::Null),
            "supported_profiles": doc.get("supported_profiles").cloned().unwrap_or(Value::Null),
            "conformance_level": super::discovery::CONFORMANCE_LEVEL,
            "limits": {
                "max_envelopes_per_wrapper": MAX_ENVELOPES_PER_WRAPPER,
                "max_wrapper_bytes": self.config.federation.max_wrapper_bytes,
                "max_envelope_bytes": self.config.limits.max_envelope_bytes,
                "federation_per_node_per_min": self.config.rate_limits.federation_per_node,
            },
            "timestamp": self.env.now().to_rfc3339(),
        });
        loom_protocol::federation::hello::sign_hello(&mut hello, key_id, key);
        hello
    }

    /// The `federation` member of the node document (§15.2).
    pub(crate) fn federation_member(&self) -> Value {
        let base = self.config.base_url();
        let (key_id, key) = self.node_key();
        let vk = key.verifying_key();
        json!({
            "deliver_url": format!("{base}{DELIVER_PATH}"),
            "identity_resolve_url": format!("{base}/v1/identity/{{identity}}"),
            "hello_url": format!("{base}/v1/federation/hello"),
            "requirements": ["LOOM-HTTP-SIG-1"],
            "policy": self.config.federation_policy,
            "signing_keys": std::iter::once((key_id, vk, "active"))
                .chain(self.retired_node_keys().iter().map(|(k, v)| (k.as_str(), *v, "retired")))
                .map(|(k, v, status)| json!({
                    "key_id": k,
                    "algorithm": "Ed25519",
                    "public_key": public_key_to_b64url(&v),
                    "public_key_pem": public_key_to_spki_pem(&v).trim_end(),
                    "status": status,
                }))
                .collect::<Vec<Value>>(),
            "max_envelopes_per_wrapper": MAX_ENVELOPES_PER_WRAPPER,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::rebase;

    #[test]
    fn rebase_replaces_the_origin_by_the_configured_base() {
        let base = Some("http://127.0.0.1:9/peer/7");
        assert_eq!(
            rebase("https://peer-7.test/v1/federation/deliver", base),
            "http://127.0.0.1:9/peer/7/v1/federation/deliver"
        );
        assert_eq!(
            rebase(
                "http://peer-7.test:80/v1/identity/{identity}",
                Some("http://127.0.0.1:9/")
            ),
            "http://127.0.0.1:9/v1/identity/{identity}"
        );
        assert_eq!(rebase("https://b.test/x", None), "https://b.test/x");
    }

    #[test]
    fn rebase_keeps_a_url_already_under_the_base_prefix() {
        // The fedharness report: the prefix was applied twice (`/peer/22/peer/22/...`).
        let base = Some("http://127.0.0.1:9/peer/22");
        for url in [
            "http://127.0.0.1:9/peer/22/v1/federation/deliver",
            "http://127.0.0.1:9/peer/22/v1/identity/{identity}",
        ] {
            assert_eq!(rebase(url, base), url);
        }
        assert_eq!(
            rebase(
                "http://127.0.0.1:9/peer/22/v1/x",
                Some("http://127.0.0.1:9/peer/22/")
            ),
            "http://127.0.0.1:9/peer/22/v1/x"
        );
        // Same origin, another prefix that merely starts with the same characters: rebased.
        assert_eq!(
            rebase("http://127.0.0.1:9/peer/221/v1/x", base),
            "http://127.0.0.1:9/peer/22/peer/221/v1/x"
        );
    }
}
