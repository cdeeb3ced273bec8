//! Where a peer's node document is (v1.1 §15.1 discovery, §15.2 document): the
//! [`Discover`] seam and its optional DNS implementation, [`DnsDiscover`], which asks one
//! configured DNS server for SRV `_loom._tcp.{domain}` and TXT `_loom.{domain}`.
//!
//! [`node_document_urls`] turns the records into the URLs to try, in this order:
//! 1. the `wellknown=` URL of the `_loom` TXT record (read by
//!    `loom_protocol::federation::dns_discovery::parse_loom_txt`), alone;
//! 2. else every SRV target in RFC 2782 order (priority, then weight drawn from the seeded
//!    RNG), at most [`MAX_SRV_TARGETS`] of them: `https://{target}:{port}/.well-known/loom.json`.
//!    As RFC 2782 asks of a client, the next target is tried when one fails
//!    (`Service::fetch_peer`); the bound keeps a hostile answer (a 64 KiB message holds
//!    thousands of SRV records) from making one discovery contact thousands of hosts;
//! 3. else (no records, NXDOMAIN) `https://{domain}/.well-known/loom.json`, as without DNS.
//!
//! A DNS failure (timeout, SERVFAIL, malformed answer) or an unusable `_loom` record is an
//! error, not a silent fall-back: the outbox retries the delivery later (§15.6). Whatever
//! URL is chosen, the document is fetched by the same function as without DNS
//! (`Service::fetch_peer`): TLS verifies the certificate of the host actually contacted
//! (§14.1), and the document's `domain` must name the domain being resolved (§15.2).

use crate::dns::{DnsClient, DnsError, RData, Srv, TYPE_SRV, TYPE_TXT, order_srv};
use loom_protocol::federation::dns_discovery::{parse_loom_txt, srv_name, txt_name};
use rand_chacha::ChaCha20Rng;
use rand_core::Rng;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

/// The §15.1 records found for one domain.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsRecords {
    /// SRV `_loom._tcp.{domain}` records, already in the order to try them.
    pub srv: Vec<Srv>,
    /// Whether the SRV answer was the lone `.` target ("service not available here").
    pub srv_unavailable: bool,
    /// TXT `_loom.{domain}` values, each record's character-strings concatenated
    /// (RFC 7208 §3.3 style); records that are not UTF-8 are skipped.
    pub txt: Vec<String>,
}

/// A [`Discover`] answer in progress.
pub type Discovering<'a> = Pin<Box<dyn Future<Output = Result<DnsRecords, String>> + Send + 'a>>;

/// Looks up the §15.1 records of a domain.
pub trait Discover: Send + Sync + fmt::Debug + 'static {
    /// The records of `domain` (empty when it has none); `Err` names what failed.
    fn lookup<'a>(&'a self, domain: &'a str) -> Discovering<'a>;
}

/// §15.1 discovery through one DNS server (`federation.dns_server`).
#[derive(Debug)]
pub struct DnsDiscover {
    client: DnsClient,
    /// Query ids and SRV weight draws (seeded from the node's RNG: deterministic per seed).
    rng: Mutex<ChaCha20Rng>,
}

impl DnsDiscover {
    /// Asks `client`'s server, drawing from `rng`.
    pub fn new(client: DnsClient, rng: ChaCha20Rng) -> DnsDiscover {
        DnsDiscover {
            client,
            rng: Mutex::new(rng),
        }
    }

    fn next_u32(&self) -> u32 {
        self.rng
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .next_u32()
    }

    async fn query(&self, name: &str, qtype: u16) -> Result<Vec<RData>, String> {
        let id = (self.next_u32() & 0xFFFF) as u16;
        let kind = if qtype == TYPE_SRV { "SRV" } else { "TXT" };
        self.client
            .query(name, qtype, id)
            .await
            .map(|recs| recs.into_iter().map(|r| r.data).collect())
            .map_err(|e: DnsError| format!("{kind} {name} via {}: {e}", self.client.server))
    }
}

impl Discover for DnsDiscover {
    fn lookup<'a>(&'a self, domain: &'a str) -> Discovering<'a> {
        Box::pin(async move {
            let srv_records: Vec<Srv> = self
                .query(&srv_name(domain), TYPE_SRV)
                .await?
                .into_iter()
                .filter_map(|d| match d {
                    RData::Srv(s) => Some(s),
                    _ => None,
                })
                .collect();
            let txt = self
                .query(&txt_name(domain), TYPE_TXT)
                .await?
                .into_iter()
                .filter_map(|d| match d {
                    RData::Txt(strings) => String::from_utf8(strings.concat()).ok(),
                    _ => None,
                })
                .collect();
            let srv_unavailable = srv_records.len() == 1 && srv_records[0].target.is_empty();
            let srv = order_srv(&srv_records, &mut |total| {
                if total == 0 {
                    0
                } else {
                    self.next_u32() % (total + 1)
                }
            });
            Ok(DnsRecords {
                srv,
                srv_unavailable,
                txt,
            })
        })
    }
}

/// Most SRV targets one discovery tries (module docs).
pub const MAX_SRV_TARGETS: usize = 8;

/// The node document URLs `records` point to for `domain`, in the order to try them
/// (module docs), or none when they name none (fall back to
/// `https://{domain}/.well-known/loom.json`). TXT records not starting with `v=LOOM` are
/// other services' and ignored; more than one `v=LOOM` record, or one that does not read,
/// is an error naming the rule.
pub fn node_document_urls(domain: &str, records: &DnsRecords) -> Result<Vec<String>, String> {
    let loom: Vec<&String> = records
        .txt
        .iter()
        .filter(|t| {
            // Bytes, not a str slice: a TXT record may hold any UTF-8 (fuzz: `node_dns`).
            let t = t.trim_start().as_bytes();
            t.len() >= 6 && t[..6].eq_ignore_ascii_case(b"v=loom")
        })
        .collect();
    if loom.len() > 1 {
        return Err(format!(
            "{} has {} v=LOOM TXT records; one is expected (v1.1 §15.1)",
            txt_name(domain),
            loom.len()
        ));
    }
    if let Some(t) = loom.first() {
        let txt = parse_loom_txt(t).map_err(|e| {
            format!(
                "{} TXT: {}: {} ({})",
                txt_name(domain),
                e.field,
                e.rule,
                e.section
            )
        })?;
        if let Some(url) = txt.wellknown {
            return Ok(vec![url]);
        }
    }
    if records.srv_unavailable {
        return Err(format!(
            "{} is \".\": the domain offers no LOOM service (RFC 2782, v1.1 §15.1)",
            srv_name(domain)
        ));
    }
    Ok(records
        .srv
        .iter()
        .take(MAX_SRV_TARGETS)
        .map(|s| {
            if s.port == 443 {
                format!("https://{}/.well-known/loom.json", s.target)
            } else {
                format!("https://{}:{}/.well-known/loom.json", s.target, s.port)
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn srv(target: &str, port: u16) -> Srv {
        Srv {
            priority: 10,
            weight: 0,
            port,
            target: target.into(),
        }
    }

    /// Fuzz crash (`node_dns`, corpus `crash-5966…`): a multi-byte character inside the first
    /// six bytes of a TXT record cut a str slice in half. Such a record is another service's.
    #[test]
    fn txt_with_a_multibyte_character_up_front_is_not_a_loom_record() {
        let r = DnsRecords {
            srv: vec![],
            srv_unavailable: false,
            txt: vec![
                "v=L:\u{2002}.amplei=https://loom.example.com/v1".into(),
                "\u{e9}v=LOOM1.1".into(),
            ],
        };
        assert_eq!(node_document_urls("b.test", &r), Ok(vec![]));
    }

    #[test]
    fn txt_wellknown_wins_then_srv_then_nothing() {
        let mut r = DnsRecords {
            srv: vec![srv("node.b.test", 8443), srv("other.b.test", 443)],
            srv_unavailable: false,
            txt: vec![
                "google-site-verification=x".into(),
                "v=LOOM1.1; wellknown=https://b.test/x/loom.json".into(),
            ],
        };
        assert_eq!(
            node_document_urls("b.test", &r).unwrap(),
            ["https://b.test/x/loom.json"]
        );
        r.txt = vec!["v=LOOM1.1; api=https://api.b.test/v1".into()];
        assert_eq!(
            node_document_urls("b.test", &r).unwrap(),
            [
                "https://node.b.test:8443/.well-known/loom.json",
                "https://other.b.test/.well-known/loom.json"
            ]
        );
        r.srv.remove(0);
        assert_eq!(
            node_document_urls("b.test", &r).unwrap(),
            ["https://other.b.test/.well-known/loom.json"]
        );
        assert_eq!(
            node_document_urls("b.test", &DnsRecords::default()),
            Ok(vec![])
        );
    }

    #[test]
    fn at_most_max_srv_targets_are_tried_in_order() {
        let r = DnsRecords {
            srv: (0..20)
                .map(|i| srv(&format!("n{i}.b.test"), 8443))
                .collect(),
            ..DnsRecords::default()
        };
        let urls = node_document_urls("b.test", &r).unwrap();
        assert_eq!(urls.len(), MAX_SRV_TARGETS);
        assert_eq!(urls[0], "https://n0.b.test:8443/.well-known/loom.json");
        assert_eq!(urls[7], "https://n7.b.test:8443/.well-known/loom.json");
    }

    #[test]
    fn unusable_records_are_errors() {
        let r = DnsRecords {
            txt: vec!["v=LOOM1.1; wellknown=ftp://b.test/x".into()],
            ..DnsRecords::default()
        };
        let e = node_document_urls("b.test", &r).unwrap_err();
        assert!(
            e.contains("_loom.b.test") && e.contains("wellknown") && e.contains("§15.1"),
            "{e}"
        );
        let r = DnsRecords {
            txt: vec!["v=LOOM1.1".into(), "V=LOOM1.1; api=https://x/v1".into()],
            ..DnsRecords::default()
        };
        assert!(
            node_document_urls("b.test", &r)
                .unwrap_err()
                .contains("2 v=LOOM")
        );
        let r = DnsRecords {
            srv_unavailable: true,
            ..DnsRecords::default()
        };
        assert!(
            node_document_urls("b.test", &r)
                .unwrap_err()
                .contains("no LOOM service")
        );
    }
}
