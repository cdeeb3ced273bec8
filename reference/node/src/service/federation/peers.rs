//! Peers (v1.1 §15.2, v1.0 §7.4): their node documents and keys, from the store or fetched
//! from their configured base URL, at most once per interval for a node that failed.

use super::{MAX_DISCOVERY_FAILURES, Peer};
use crate::error::{ApiError, ApiResult};
use crate::outbound::TransportError;
use crate::service::Service;
use crate::store::federation as fed_store;
use loom_protocol::federation::node_document::{
    KeyLookup, configured_document_url, discovery_url, read_node_document, should_refetch_after,
    url_origin,
};
use loom_protocol::federation::node_name::parse_node_name;
use loom_protocol::federation::{DocumentSource, authenticate_node_document};
use loom_protocol::{ErrorCode, Timestamp};
use serde_json::Value;

/// A refusal for want of the sender node's keys (`X-LOOM-Node`: no authenticated document;
/// `X-LOOM-Key-Id`: not among its keys) names why fetching its document failed, when a
/// fetch was tried: a certificate for another name, a document for another domain, an
/// unreachable node (v1.1 §15.2, §15.3).
pub(super) fn with_fetch_error(mut e: ApiError, fetch: Option<&ApiError>) -> ApiError {
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

impl Service {
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
    ///
    /// Single-flight per node (issue 36, item 5): a request that finds a fetch of the same
    /// node under way waits for it and takes its result instead of fetching again, so many
    /// concurrent requests naming an unknown key cost one fetch, not one each.
    pub async fn fetch_peer(&self, node: &str) -> ApiResult<Peer> {
        let gate = self.fetch_gate(node);
        let busy = gate.try_lock().is_err();
        let mut last = gate.lock().await;
        if busy && let Some(r) = last.as_ref() {
            return r.clone();
        }
        let r = self.fetch_peer_now(node).await;
        *last = Some(r.clone());
        r
    }

    /// The gate of `node`'s document fetches (one map entry per node name; the map is
    /// cleared of idle gates when it reaches [`MAX_DISCOVERY_FAILURES`] entries).
    fn fetch_gate(&self, node: &str) -> super::PeerFetchGate {
        let mut gates = self
            .fed
            .fetch_gates
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if gates.len() >= MAX_DISCOVERY_FAILURES {
            gates.retain(|_, g| std::sync::Arc::strong_count(g) > 1);
        }
        gates.entry(node.to_ascii_lowercase()).or_default().clone()
    }

    async fn fetch_peer_now(&self, node: &str) -> ApiResult<Peer> {
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
    pub(super) async fn peer_for_key(
        &self,
        node: &str,
        key_id: &str,
    ) -> (Option<Peer>, Option<ApiError>) {
        let stored = self.stored_peer(node).ok().flatten();
        let unknown = stored
            .as_ref()
            .is_none_or(|p| matches!(p.keys.lookup(key_id), KeyLookup::UnknownKeyId));
        let may_fetch = match &stored {
            None => self.peer_base(node).is_some() || self.may_discover(node),
            Some(p) => {
                !self.deviations.federation.no_refetch_on_unknown_key
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
    pub(super) fn may_discover(&self, node: &str) -> bool {
        let Ok(failures) = self.fed.discovery_failures.lock() else {
            return false;
        };
        let last = failures
            .get(&node.to_ascii_lowercase())
            .map(|ms| Timestamp::from_unix_ms(*ms));
        self.may_refetch(last)
    }

    /// Remembers that fetching `node`'s document for an inbound request failed now.
    pub(super) fn discovery_failed(&self, node: &str) {
        if let Ok(mut failures) = self.fed.discovery_failures.lock() {
            if failures.len() >= MAX_DISCOVERY_FAILURES {
                failures.clear();
            }
            failures.insert(node.to_ascii_lowercase(), self.env.now().unix_ms());
        }
    }

    /// Whether a document last fetched at `last` may be fetched again for an unknown key id
    /// (v1.0 §7.4; `federation.refetch_min_interval_ms` apart).
    pub(super) fn may_refetch(&self, last: Option<Timestamp>) -> bool {
        let min = i64::try_from(self.config.federation.refetch_min_interval_ms).unwrap_or(i64::MAX);
        should_refetch_after(last, self.env.now(), min)
    }

    fn put_node_document(&self, node: &str, doc: &Value) -> ApiResult<()> {
        let tx = self.store.begin()?;
        fed_store::put_node_document(&tx, node, doc, &self.env.now().to_rfc3339())?;
        tx.commit()?;
        Ok(())
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
