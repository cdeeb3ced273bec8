//! A delivery, steps 1–6 of the module docs of [`super`]: the signed request checked, the
//! peer's keys found or fetched, each envelope's signers resolved, admitted and committed, the
//! nonce recorded.

use super::directory::FedDirectory;
use super::peers::with_fetch_error;
use super::{DeliveryAnswer, Peer};
use crate::error::{ApiError, ApiResult};
use crate::service::Service;
use crate::service::rate_limit::LimitClass;
use crate::service::write_group::Submitter;
use crate::store::federation::{self as fed_store, RemoteIdentity};
use crate::store::resolvers::local_directory;
use loom_protocol::accept::{Facts, Origin, admit};
use loom_protocol::capability::presented_token_issuer;
use loom_protocol::federation::node_name::parse_node_name;
use loom_protocol::federation::replication::stamp_federated_meta;
use loom_protocol::federation::wrapper::{MAX_ENVELOPES_PER_WRAPPER, WrapperLimits};
use loom_protocol::federation::{InboundContext, NodeKeys, PolicyDecision, check_delivery};
use loom_protocol::http_sig::{
    HEADER_SIGNATURE, NONCE_TTL_MS, NonceCache, NonceOutcome, RequestParts, SignedHeaders,
};
use loom_protocol::{Address, ErrorCode, ProtocolError, Timestamp};
use serde_json::Value;
use std::collections::BTreeMap;

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

/// The sending peer's keys for one delivery, found (or fetched) from its headers before its
/// body is read ([`Service::federation_peer`]).
#[derive(Debug)]
pub struct PeerKeys {
    keys: BTreeMap<String, NodeKeys>,
    stored: Option<(String, Peer)>,
    fetch_error: Option<ApiError>,
}

fn claimed_node(headers: &SignedHeaders) -> &str {
    if headers.node.is_empty() {
        "anonymous"
    } else {
        headers.node.as_str()
    }
}

impl Service {
    /// `POST /v1/federation/deliver` (module docs). `pairs` are the request headers, `path`
    /// the request path as received (it is signed), `peer` what [`Service::federation_peer`]
    /// found for them.
    pub async fn federation_deliver(
        &self,
        pairs: &[(String, String)],
        path: &str,
        body: &[u8],
        peer: PeerKeys,
    ) -> ApiResult<DeliveryAnswer> {
        let headers =
            SignedHeaders::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let answer = self.deliver_checked(&headers, path, body, peer).await;
        let claimed = claimed_node(&headers);
        match &answer {
            // The request itself: forged, replayed, stale, from a blocked peer.
            Err(e) => self.security_event("federation", claimed, path, e),
            // Envelopes refused inside an authenticated delivery.
            Ok((_, refused)) => {
                for (id, e) in refused {
                    self.security_event("federation.envelope", claimed, id, e);
                }
            }
        }
        answer.map(|(a, _)| a)
    }

    /// The checks of a delivery that need only its headers (required headers, node name,
    /// policy, freshness), run before its body is read so a request that fails them costs no
    /// body buffer (issue 36, item 1); refusals are security events like the rest.
    pub fn federation_head_check(&self, pairs: &[(String, String)], path: &str) -> ApiResult<()> {
        let headers =
            SignedHeaders::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let checked = self
            .rules
            .inbound()
            .check_head(&headers, &self.fed.policy, self.env.now())
            .map_err(ApiError::from);
        if let Err(e) = &checked {
            self.security_event("federation", claimed_node(&headers), path, e);
        }
        checked
    }

    /// After [`Service::federation_head_check`] and before the body is read (issue 36, item
    /// 1): the sending peer's node document, from the cache or fetched (at most once per
    /// `refetch_min_interval_ms` per peer), must list the request's key id as active — the
    /// same step 3 the full check runs. A refusal is a security event.
    pub async fn federation_peer(
        &self,
        pairs: &[(String, String)],
        path: &str,
    ) -> ApiResult<PeerKeys> {
        let headers =
            SignedHeaders::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let mut found = PeerKeys {
            keys: BTreeMap::new(),
            stored: None,
            fetch_error: None,
        };
        if let Ok(node) = parse_node_name(&headers.node) {
            let (peer, error) = self.peer_for_key(&node, &headers.key_id).await;
            found.fetch_error = error;
            if let Some(p) = peer {
                found.keys.insert(node.clone(), p.keys.clone());
                found.stored = Some((node, p));
            }
        }
        let checked = self
            .rules
            .inbound()
            .check_head_key(&headers, &found.keys)
            .map_err(|e| with_fetch_error(e.into(), found.fetch_error.as_ref()));
        if let Err(e) = &checked {
            self.security_event("federation", claimed_node(&headers), path, e);
        }
        checked.map(|()| found)
    }

    /// [`Service::federation_deliver`] with the per-envelope refusals beside the answer.
    async fn deliver_checked(
        &self,
        headers: &SignedHeaders,
        path: &str,
        body: &[u8],
        peer: PeerKeys,
    ) -> ApiResult<(DeliveryAnswer, Vec<(String, ApiError)>)> {
        let now = self.env.now();
        let PeerKeys {
            mut keys,
            stored: stored_peer,
            mut fetch_error,
        } = peer;
        let req = RequestParts {
            method: "POST",
            path,
            body,
        };
        let mut checked = self.check_signed_delivery(&req, headers, &keys, now);
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
                    checked = self.check_signed_delivery(&req, headers, &keys, now);
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
        let checked = check_delivery(req, headers, &mut nonces, &ctx, self.rules.inbound())?;
        Ok((checked, nonces.fresh.take()))
    }

    /// Whether a signature that failed under a key id `peer`'s stored document publishes as
    /// active (a signature error is only reached with such a key) may trigger a re-fetch of that document: not one fetched just now, at most once per
    /// `federation.refetch_min_interval_ms` per peer, and not within that interval of a
    /// failed fetch (so forged requests cannot make this node fetch per request).
    fn may_refetch_after_bad_signature(&self, node: &str, peer: &Peer) -> bool {
        !self.deviations.federation.no_refetch_on_signature_failure
            && peer.fetched_at != Some(self.env.now())
            && self.may_refetch(peer.fetched_at)
            && self.may_discover(node)
    }

    async fn accept_delivery(
        &self,
        checked: loom_protocol::federation::CheckedDelivery,
        now: Timestamp,
    ) -> ApiResult<(DeliveryAnswer, Vec<(String, ApiError)>)> {
        let node = checked.request.node.clone();
        let dev = self.deviations.federation;
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
                let received = stamp_federated_meta(env.get("meta"), 0)?;
                let origin_event_seq = received
                    .get("origin_event_seq")
                    .and_then(Value::as_u64)
                    .filter(|_| !dev.drop_origin_event_seq);
                let sender_node = node.clone();
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
                let sender = env
                    .pointer("/from/identity")
                    .and_then(Value::as_str)
                    .and_then(|s| Address::parse(s).ok());
                let caller = sender.unwrap_or_else(|| node_address.clone());
                let rules = self.admission(&caller, true);
                let a = admit(unmetered, origin, &directory, &*rules, limit, now)?;
                Ok((a, sender_node, origin_event_seq))
            })();
            match admitted {
                Ok((a, sender_node, origin_event_seq)) => {
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
        let refused = outcomes
            .iter()
            .filter_map(|(id, r)| {
                r.as_ref()
                    .err()
                    .map(|e| (id.clone().unwrap_or_else(|| "-".into()), e.clone()))
            })
            .collect();
        self.receipt_answer(&checked.wrapper.delivery_id, &node, outcomes, total, now)
            .map(|a| (a, refused))
    }

    fn record_nonce(&self, node: &str, nonce: &str, now: Timestamp) -> ApiResult<bool> {
        let cutoff = now.unix_ms().saturating_sub(NONCE_TTL_MS);
        let tx = self.store.begin()?;
        let recorded = fed_store::record_nonce(&tx, node, nonce, now.unix_ms(), cutoff)?;
        tx.commit()?;
        Ok(recorded)
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
}
