//! Where the node document of a discovered (not statically configured) peer is fetched
//! from (v1.1 §15.1–§15.2): `https://{domain}/.well-known/loom.json`, or — with
//! `federation.dns_server` set — where the domain's SRV/TXT records point
//! ([`crate::discover`]). The fetch itself stays in `Service::fetch_peer`, so the TLS and
//! document checks are the same whichever way the URL was found.

use super::Service;
use crate::config::NodeConfig;
use crate::discover::{Discover, DnsDiscover, node_document_urls};
use crate::dns::DnsClient;
use crate::env::Env;
use crate::error::{ApiError, ApiResult};
use loom_protocol::ErrorCode;
use std::sync::Arc;
use std::time::Duration;

impl Service {
    /// The DNS discovery of `config` (`federation.dns_server`), if enabled; its RNG (query
    /// ids, SRV weight draws) is seeded from the node's seeded RNG (DESIGN.md §3).
    pub(crate) fn dns_discover(
        config: &NodeConfig,
        env: &Env,
    ) -> ApiResult<Option<Arc<dyn Discover>>> {
        let f = &config.federation;
        let server = f
            .dns_server_addr()
            .map_err(|e| ApiError::bad_request("federation.dns_server", e, "v1.1 §15.1"))?;
        Ok(server.map(|server| {
            let seed = env.ids().bytes32();
            let mut s = [0u8; 8];
            s.copy_from_slice(&seed[..8]);
            let client = DnsClient {
                server,
                timeout: Duration::from_millis(f.dns_timeout_ms.max(1)),
                attempts: f.dns_attempts.max(1),
            };
            Arc::new(DnsDiscover::new(
                client,
                loom_protocol::id::seeded_rng(u64::from_le_bytes(s)),
            )) as Arc<dyn Discover>
        }))
    }

    /// Where the DNS SRV/TXT records of `name` (a normalized node name, admitted by the
    /// policy) put its node document, in the order to try them, when
    /// `federation.dns_server` is set and the domain has §15.1 records; none otherwise (the
    /// caller uses `https://{name}/.well-known/loom.json`). A DNS failure or an unusable
    /// record is `NODE_UNREACHABLE` (the outbox retries, §15.6).
    pub(crate) async fn dns_document_urls(&self, name: &str) -> ApiResult<Vec<String>> {
        let Some(discover) = &self.fed.discover else {
            return Ok(Vec::new());
        };
        let unreachable = |why: String| {
            ApiError::new(
                ErrorCode::NodeUnreachable,
                "X-LOOM-Node",
                format!("DNS discovery of node {name}: {why}"),
                "v1.1 §15.1",
            )
        };
        let records = discover.lookup(name).await.map_err(unreachable)?;
        let urls = node_document_urls(name, &records).map_err(unreachable)?;
        tracing::debug!(node = %name, urls = ?urls, "DNS discovery (§15.1)");
        Ok(urls)
    }
}
