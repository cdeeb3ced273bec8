//! Inbound mail authentication (v1.1 §21.2 "Verify SPF/DKIM/DMARC; store results in
//! `meta.bridge.auth_results`", v1.0 §19.2 step 2): SPF (RFC 7208) for the MAIL FROM
//! identity, DKIM (RFC 6376; rsa-sha256 and ed25519-sha256, RFC 8463) and DMARC alignment
//! (RFC 7489), computed by `mail-auth` and turned into the JSON the envelope carries and a
//! [`Disposition`] under the operator's [`AuthPolicy`].
//!
//! **The resolver seam.** `mail-auth` reads DNS through caches before it asks its resolver;
//! [`Records`] is that cache. Preloaded records (tests, the simulator, a harness profile)
//! answer first. In a *closed* world (no `dns_server` configured) every other name answers
//! "no such record" from the cache too, so no lookup ever leaves the process; with a
//! `dns_server`, misses go to that server (never to a public resolver by default).

mod records;
pub mod zone;

use mail_auth::common::parse::TxtRecordParser;
use mail_auth::dkim::{DkimError, DomainKeyReport};
use mail_auth::dmarc::{Dmarc, Policy};
use mail_auth::hickory_resolver::config::{
    ConnectionConfig, NameServerConfig, ResolverConfig, ResolverOpts,
};
use mail_auth::hickory_resolver::proto::op::ResponseCode;
use mail_auth::spf::Spf;
use mail_auth::spf::verify::SpfParameters;
use mail_auth::{
    AuthenticatedMessage, DkimResult, DmarcResult, DnsError, DnssecStatus, Error, MX,
    MessageAuthenticator, Parameters, RecordSet, ResolverCache, SpfResult, Txt,
};
use records::{closed_world_server, dmarc_without_invalid_policies, spf_syntax};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Most entries a cache keeps from real lookups (preloaded records always stay).
const MAX_CACHED: usize = 10_000;

/// One DNS record to preload (a zone line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// Owner name (`example.com`, `sel._domainkey.example.com`).
    pub name: String,
    /// `TXT`, `A`, `AAAA`, `MX` or `PTR`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The record data: TXT text, an address, `10 mx.example.com` for MX, a name for PTR
    /// (whose owner `name` is then the IP address).
    pub value: String,
}

/// A record that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    /// The record's name.
    pub name: String,
    /// Why.
    pub reason: String,
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DNS record {}: {}", self.name, self.reason)
    }
}

impl std::error::Error for RecordError {}

/// A lookup-only map (never iterated, so `HashMap` order never reaches output).
struct Cache<K, V> {
    entries: Mutex<HashMap<K, (V, Option<Instant>)>>,
    /// The value a miss answers with in a closed world.
    closed_miss: Option<V>,
}

impl<K: Hash + Eq, V: Clone> Cache<K, V> {
    fn new(closed_miss: Option<V>) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            closed_miss,
        }
    }

    fn preload(&self, key: K, value: V) {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, (value, None));
    }
}

impl<K: Hash + Eq, V: Clone> ResolverCache<K, V> for Cache<K, V> {
    fn get<Q>(&self, name: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match entries.get(name) {
            Some((v, None)) => Some(v.clone()),
            Some((v, Some(until))) if *until > Instant::now() => Some(v.clone()),
            _ => self.closed_miss.clone(),
        }
    }

    fn remove<Q>(&self, name: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match entries.get(name) {
            Some((_, Some(_))) => entries.remove(name).map(|(v, _)| v),
            _ => None,
        }
    }

    fn insert(&self, key: K, value: V, valid_until: Instant) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() < MAX_CACHED || entries.contains_key(&key) {
            entries.entry(key).or_insert((value, Some(valid_until)));
        }
    }
}

fn empty<T>() -> RecordSet<T> {
    RecordSet {
        rrset: Arc::from(Vec::new().into_boxed_slice()),
        dnssec_status: DnssecStatus::Indeterminate,
    }
}

fn fqdn(name: &str) -> Box<str> {
    let lower = name.trim().to_ascii_lowercase();
    if lower.ends_with('.') {
        lower.into_boxed_str()
    } else {
        format!("{lower}.").into_boxed_str()
    }
}

/// The DNS answers the verifier reads first (and, in a closed world, only).
pub struct Records {
    txt: Cache<Box<str>, Txt>,
    mx: Cache<Box<str>, RecordSet<MX>>,
    a: Cache<Box<str>, RecordSet<Ipv4Addr>>,
    aaaa: Cache<Box<str>, RecordSet<Ipv6Addr>>,
    ptr: Cache<IpAddr, RecordSet<Box<str>>>,
    closed: bool,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl Records {
    /// Empty; `closed`: unknown names have no records (no lookup leaves the process).
    pub fn new(closed: bool) -> Self {
        let nx = closed
            .then(|| Txt::Error(Error::Dns(DnsError::RecordNotFound(ResponseCode::NXDomain))));
        // Address misses are left to the resolver even in a closed world, where it asks
        // the in-process NXDOMAIN responder ([`closed_world_server`]): `mail-auth`'s SPF
        // `exists` treats any cached answer, an empty one included, as "exists".
        Self {
            txt: Cache::new(nx),
            mx: Cache::new(closed.then(empty)),
            a: Cache::new(None),
            aaaa: Cache::new(None),
            ptr: Cache::new(closed.then(empty)),
            closed,
        }
    }

    /// True when no lookup leaves the process.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Adds one record. TXT data is parsed as the record its name implies: `_dmarc.` names
    /// hold DMARC, `._domainkey.` names DKIM keys, anything else SPF (`v=spf1`).
    pub fn add(&self, record: &Record) -> Result<(), RecordError> {
        let err = |reason: String| RecordError {
            name: record.name.clone(),
            reason,
        };
        let name = fqdn(&record.name);
        let value = record.value.trim();
        match record.kind.to_ascii_uppercase().as_str() {
            "TXT" => {
                let bytes = value.as_bytes();
                let txt = if name.starts_with("_dmarc.") {
                    Txt::from(Dmarc::parse(
                        dmarc_without_invalid_policies(value).as_bytes(),
                    ))
                } else if name.contains("._domainkey.") {
                    Txt::from(mail_auth::common::verify::DomainKey::parse(bytes))
                } else if name.contains("._report._dmarc.") {
                    Txt::from(DomainKeyReport::parse(bytes))
                } else if let Some(Err(_)) = spf_syntax(value) {
                    Txt::Error(Error::ParseError)
                } else {
                    Txt::from(Spf::parse(bytes))
                };
                self.txt.preload(name, txt);
            }
            "A" => {
                let ip: Ipv4Addr = value.parse().map_err(|e| err(format!("A value: {e}")))?;
                self.a.preload(name, one(ip));
            }
            "AAAA" => {
                let ip: Ipv6Addr = value.parse().map_err(|e| err(format!("AAAA value: {e}")))?;
                self.aaaa.preload(name, one(ip));
            }
            "MX" => {
                let (pref, host) = value
                    .split_once(' ')
                    .ok_or_else(|| err("MX value is `PREFERENCE HOST`".into()))?;
                let preference = pref
                    .parse()
                    .map_err(|e| err(format!("MX preference: {e}")))?;
                self.mx.preload(
                    name,
                    RecordSet {
                        rrset: Arc::from(vec![MX {
                            exchanges: vec![fqdn(host)].into_boxed_slice(),
                            preference,
                        }]),
                        dnssec_status: DnssecStatus::Indeterminate,
                    },
                );
            }
            "PTR" => {
                let ip: IpAddr = record
                    .name
                    .trim()
                    .parse()
                    .map_err(|e| err(format!("a PTR record's name is an IP address: {e}")))?;
                self.ptr.preload(ip, one(fqdn(value)));
            }
            other => {
                return Err(err(format!(
                    "type {other} is not one of TXT, A, AAAA, MX, PTR"
                )));
            }
        }
        Ok(())
    }

    #[allow(clippy::type_complexity)]
    fn parameters<P>(
        &self,
        p: P,
    ) -> Parameters<
        '_,
        P,
        Cache<Box<str>, Txt>,
        Cache<Box<str>, RecordSet<MX>>,
        Cache<Box<str>, RecordSet<Ipv4Addr>>,
        Cache<Box<str>, RecordSet<Ipv6Addr>>,
        Cache<IpAddr, RecordSet<Box<str>>>,
    > {
        Parameters::new(p)
            .with_txt_cache(&self.txt)
            .with_mx_cache(&self.mx)
            .with_ipv4_cache(&self.a)
            .with_ipv6_cache(&self.aaaa)
            .with_ptr_cache(&self.ptr)
    }
}

fn one<T>(v: T) -> RecordSet<T> {
    RecordSet {
        rrset: Arc::from(vec![v]),
        dnssec_status: DnssecStatus::Indeterminate,
    }
}

/// What to do with mail that fails authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailAction {
    /// Deliver with the `sys.quarantine` label and no auto-actions (v1.1 §21.5, §18.5).
    Quarantine,
    /// Refuse at DATA (`550 5.7.x`); no envelope is created.
    Refuse,
}

/// The operator's authentication policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthPolicy {
    /// DMARC fails and the domain publishes `p=reject`.
    pub dmarc_reject: FailAction,
    /// DMARC fails under `p=quarantine` or `p=none`, or there is no DMARC record and neither
    /// SPF nor any DKIM signature passes for the From domain.
    pub unauthenticated: FailAction,
}

impl Default for AuthPolicy {
    fn default() -> Self {
        Self {
            dmarc_reject: FailAction::Refuse,
            unauthenticated: FailAction::Quarantine,
        }
    }
}

/// The outcome for one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// Authenticated: deliver normally.
    Deliver,
    /// Deliver labelled `sys.quarantine` (the reason goes into `meta.bridge`).
    Quarantine(String),
    /// Refuse (the reason goes into the SMTP reply).
    Refuse(String),
}

/// One DKIM signature's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DkimVerdict {
    /// `pass`, `fail`, `neutral`, `temperror`, `permerror`, `none`.
    pub result: String,
    /// `d=`.
    pub domain: String,
    /// `s=`.
    pub selector: String,
    /// `a=`.
    pub algorithm: String,
    /// Why it did not pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Everything `meta.bridge.auth_results` records: the three words of v1.1 §8.1
/// (`spf`, `dkim`, `dmarc`; RFC 8601's result words, of which §8.1 names `pass|fail|none`)
/// and the detail behind them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuthResults {
    /// SPF result for MAIL FROM (or the HELO name for a bounce).
    pub spf: String,
    /// `pass` when any signature passed; else the first signature's result; `none` unsigned.
    pub dkim: String,
    /// `pass`, `fail`, `none`, `temperror`, `permerror`.
    pub dmarc: String,
    /// The domain SPF judged.
    pub spf_domain: String,
    /// One entry per DKIM-Signature.
    pub dkim_signatures: Vec<DkimVerdict>,
    /// The From domain DMARC judged.
    pub dmarc_domain: String,
    /// The published policy (`none`, `quarantine`, `reject`, or `unspecified`).
    pub dmarc_policy: String,
    /// SPF passed for a domain aligned with the From domain.
    pub spf_aligned: bool,
    /// A DKIM signature aligned with the From domain passed.
    pub dkim_aligned: bool,
    /// The connecting IP.
    pub client_ip: String,
}

impl AuthResults {
    /// The JSON form for `meta.bridge.auth_results`.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| json!({}))
    }

    /// The message counts as authenticated: DMARC passed, or (no DMARC record) SPF or a
    /// DKIM signature passed for the From domain.
    pub fn authenticated(&self) -> bool {
        self.dmarc == "pass" || (self.dmarc == "none" && (self.spf_aligned || self.dkim_aligned))
    }

    /// The disposition under `policy`.
    pub fn disposition(&self, policy: &AuthPolicy) -> Disposition {
        if self.authenticated() {
            return Disposition::Deliver;
        }
        let (action, why) = if self.dmarc == "fail" && self.dmarc_policy == "reject" {
            (
                policy.dmarc_reject,
                format!("DMARC failed for {} (p=reject)", self.dmarc_domain),
            )
        } else if self.dmarc == "fail" {
            (
                policy.unauthenticated,
                format!(
                    "DMARC failed for {} (p={})",
                    self.dmarc_domain, self.dmarc_policy
                ),
            )
        } else {
            (
                policy.unauthenticated,
                format!(
                    "no SPF or DKIM pass aligned with {} (spf={}, dmarc={})",
                    self.dmarc_domain, self.spf, self.dmarc
                ),
            )
        };
        match action {
            FailAction::Quarantine => Disposition::Quarantine(why),
            FailAction::Refuse => Disposition::Refuse(why),
        }
    }
}

/// What the SMTP session saw of the sender.
#[derive(Debug, Clone, Copy)]
pub struct Connection<'a> {
    /// The client's address.
    pub ip: IpAddr,
    /// EHLO/HELO name.
    pub helo: &'a str,
    /// MAIL FROM (empty for a bounce).
    pub mail_from: &'a str,
}

/// The verifier: `mail-auth` over [`Records`].
pub struct Verifier {
    authenticator: MessageAuthenticator,
    records: Arc<Records>,
    /// Our host name (SPF's `%{r}` macro).
    host: String,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("records", &self.records)
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

/// A resolver could not be built.
#[derive(Debug)]
pub struct ResolverError(pub String);

impl std::fmt::Display for ResolverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DNS resolver: {}", self.0)
    }
}

impl std::error::Error for ResolverError {}

impl Verifier {
    /// A verifier answering from `records`, asking `dns_server` (UDP then TCP) on a miss
    /// when the records are not closed.
    pub fn new(
        records: Arc<Records>,
        dns_server: Option<SocketAddr>,
        host: &str,
    ) -> Result<Self, ResolverError> {
        // A closed world asks only its own NXDOMAIN responder (never a real resolver).
        let server = dns_server.or_else(|| {
            if records.is_closed() {
                closed_world_server()
            } else {
                None
            }
        });
        let servers = server
            .map(|addr| {
                let mut udp = ConnectionConfig::udp();
                udp.port = addr.port();
                let mut tcp = ConnectionConfig::tcp();
                tcp.port = addr.port();
                vec![NameServerConfig::new(addr.ip(), true, vec![udp, tcp])]
            })
            .unwrap_or_default();
        let mut opts = ResolverOpts::default();
        opts.timeout = std::time::Duration::from_secs(5);
        opts.attempts = 2;
        let config = ResolverConfig::from_parts(None, Vec::new(), servers);
        let authenticator =
            MessageAuthenticator::new(config, opts).map_err(|e| ResolverError(e.to_string()))?;
        Ok(Self {
            authenticator,
            records,
            host: host.to_string(),
        })
    }

    /// The records this verifier reads first.
    pub fn records(&self) -> &Records {
        &self.records
    }

    /// The mail exchangers of `domain`, most preferred first (RFC 5321 §5.1); empty when
    /// it has none or the lookup failed (the caller then tries the domain itself).
    pub async fn mx(&self, domain: &str) -> Vec<String> {
        match self
            .authenticator
            .mx_lookup(domain, Some(&self.records.mx))
            .await
        {
            Ok(set) => set
                .rrset
                .iter()
                .flat_map(|m| m.exchanges.iter())
                .map(|h| h.trim_end_matches('.').to_string())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// SPF, DKIM and DMARC for `raw` as received on `conn`.
    pub async fn verify(&self, raw: &[u8], conn: Connection<'_>) -> AuthResults {
        let records = &*self.records;
        // mail-parser (inside mail-auth) panics on some malformed nesting: such a message
        // is simply not parsed (DKIM and DMARC then have nothing to pass).
        let message =
            std::panic::catch_unwind(|| AuthenticatedMessage::parse(raw)).unwrap_or_default();
        let spf_params = if conn.mail_from.is_empty() {
            SpfParameters::verify_ehlo(conn.ip, conn.helo, &self.host)
        } else {
            SpfParameters::verify_mail_from(conn.ip, conn.helo, &self.host, conn.mail_from)
        };
        let spf = self
            .authenticator
            .verify_spf(records.parameters(spf_params))
            .await;
        let Some(message) = message else {
            return AuthResults {
                spf: spf_word(spf.result()).into(),
                dkim: "none".into(),
                dmarc: "permerror".into(),
                spf_domain: spf.domain().to_string(),
                dkim_signatures: Vec::new(),
                dmarc_domain: String::new(),
                dmarc_policy: "unspecified".into(),
                spf_aligned: false,
                dkim_aligned: false,
                client_ip: conn.ip.to_string(),
            };
        };
        let dkim = self
            .authenticator
            .verify_dkim(records.parameters(&message))
            .await;
        let refused: Vec<Option<String>> = dkim.iter().map(|o| self.refusal(o)).collect();
        let counted: Vec<_> = dkim
            .iter()
            .zip(&refused)
            .filter(|(_, r)| r.is_none())
            .map(|(o, _)| o.clone())
            .collect();
        let mail_from_domain = conn
            .mail_from
            .rsplit_once('@')
            .map_or(conn.helo, |(_, d)| d)
            .to_ascii_lowercase();
        let dmarc = self
            .authenticator
            .verify_dmarc(
                records.parameters(mail_auth::dmarc::verify::DmarcParameters::new(
                    &message,
                    &counted,
                    &mail_from_domain,
                    &spf,
                )),
            )
            .await;
        let from_domain = message
            .from()
            .rsplit_once('@')
            .map(|(_, d)| d.to_ascii_lowercase())
            .unwrap_or_default();
        let mut dkim_verdicts: Vec<DkimVerdict> = dkim
            .iter()
            .zip(refused)
            .map(|(o, refused)| {
                let (result, reason) = match refused {
                    Some(why) => ("permerror", Some(why)),
                    None => dkim_word(o.result()),
                };
                let sig = o.signature();
                DkimVerdict {
                    result: result.into(),
                    domain: sig.map(|s| s.d.to_ascii_lowercase()).unwrap_or_default(),
                    selector: sig.map(|s| s.s.clone()).unwrap_or_default(),
                    algorithm: sig
                        .map(|s| {
                            match s.a {
                                mail_auth::common::crypto::Algorithm::RsaSha256 => "rsa-sha256",
                                mail_auth::common::crypto::Algorithm::RsaSha1 => "rsa-sha1",
                                mail_auth::common::crypto::Algorithm::Ed25519Sha256 => {
                                    "ed25519-sha256"
                                }
                            }
                            .to_string()
                        })
                        .unwrap_or_default(),
                    reason,
                }
            })
            .collect();
        // A DKIM-Signature field `mail-auth` could not parse at all still gets a result
        // (RFC 6376 §6.1.1: a malformed signature is PERMFAIL, not absent).
        let fields = message
            .headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case(b"DKIM-Signature"))
            .count();
        while dkim_verdicts.len() < fields {
            dkim_verdicts.push(DkimVerdict {
                result: "permerror".into(),
                domain: String::new(),
                selector: String::new(),
                algorithm: String::new(),
                reason: Some("malformed DKIM-Signature: a required tag is missing or invalid (RFC 6376 §3.5, §6.1.1)".into()),
            });
        }
        let aligned = |d: &str| !from_domain.is_empty() && aligned_relaxed(d, &from_domain);
        let dkim_aligned = dkim_verdicts
            .iter()
            .any(|v| v.result == "pass" && aligned(&v.domain));
        let spf_aligned = spf.result() == SpfResult::Pass && aligned(&mail_from_domain);
        let dmarc_word = match dmarc.result() {
            DmarcResult::Pass => "pass",
            DmarcResult::Fail(_) => "fail",
            DmarcResult::TempError(_) => "temperror",
            DmarcResult::PermError(_) => "permerror",
            DmarcResult::None => "none",
        };
        // The policy that applies to the From domain (p=, or sp=/np= for a subdomain); none
        // when no DMARC record applies or it could not be read.
        let policy = match (dmarc_word, dmarc.policy()) {
            ("pass" | "fail", Policy::Reject) => "reject",
            ("pass" | "fail", Policy::Quarantine) => "quarantine",
            ("pass" | "fail", Policy::None) => "none",
            _ => "unspecified",
        };
        let dkim_word = if dkim_verdicts.iter().any(|v| v.result == "pass") {
            "pass".to_string()
        } else {
            dkim_verdicts
                .first()
                .map_or_else(|| "none".to_string(), |v| v.result.clone())
        };
        AuthResults {
            spf: spf_word(spf.result()).into(),
            dkim: dkim_word,
            spf_domain: spf.domain().to_string(),
            dkim_signatures: dkim_verdicts,
            dmarc: dmarc_word.into(),
            dmarc_domain: if dmarc.domain().is_empty() {
                from_domain.clone()
            } else {
                dmarc.domain().to_string()
            },
            dmarc_policy: policy.into(),
            spf_aligned,
            dkim_aligned,
            client_ip: conn.ip.to_string(),
        }
    }
}

impl Verifier {
    /// Why a signature `mail-auth` passed must not count (RFC checks it does not make):
    /// rsa-sha1 (RFC 8301 §3.1: verifiers MUST NOT consider it valid), `h=` without From (§5.4, §6.1.1: "MUST ignore … PERMFAIL (From field not signed)"), or
    /// a key record whose `h=` does not allow the signature's hash (§3.6.1, §6.1.2: PERMFAIL
    /// (inappropriate hash algorithm)).
    fn refusal(&self, o: &mail_auth::DkimOutput<'_>) -> Option<String> {
        if o.result() != &DkimResult::Pass {
            return None;
        }
        let sig = o.signature()?;
        if sig.a == mail_auth::common::crypto::Algorithm::RsaSha1 {
            return Some("rsa-sha1 signatures are not valid (RFC 8301 §3.1)".into());
        }
        if !sig.h.iter().any(|h| h.eq_ignore_ascii_case("from")) {
            return Some("h= does not list From (RFC 6376 §5.4, §6.1.1)".into());
        }
        let key = self
            .records
            .txt
            .get::<str>(&fqdn(&format!("{}._domainkey.{}", sig.s, sig.d)));
        if let Some(Txt::DomainKey(key)) = key {
            use mail_auth::common::crypto::HashAlgorithm;
            let restricted =
                key.has_flag(HashAlgorithm::Sha1) || key.has_flag(HashAlgorithm::Sha256);
            let hash = HashAlgorithm::from(sig.a);
            if restricted && !key.has_flag(hash) {
                return Some(
                    "the key record's h= does not allow this hash (RFC 6376 §3.6.1)".into(),
                );
            }
        }
        None
    }
}

/// Alignment with the From domain where no DMARC record defines it (RFC 7489 §3.1 needs
/// the organizational domain, which needs the public-suffix list): the same name, or a
/// parent of it with at least two labels — never a bare TLD.
fn aligned_relaxed(signer: &str, from: &str) -> bool {
    let signer = signer.trim_end_matches('.').to_ascii_lowercase();
    let from = from.trim_end_matches('.').to_ascii_lowercase();
    signer == from || (signer.contains('.') && from.ends_with(&format!(".{signer}")))
}

fn spf_word(r: SpfResult) -> &'static str {
    match r {
        SpfResult::Pass => "pass",
        SpfResult::Fail => "fail",
        SpfResult::SoftFail => "softfail",
        SpfResult::Neutral => "neutral",
        SpfResult::TempError => "temperror",
        SpfResult::PermError => "permerror",
        SpfResult::None => "none",
    }
}

/// RFC 8601 §2.7.1 words. A body that does not match its signed hash is `fail` (RFC 6376
/// §6.1.3: PERMFAIL, "body hash did not verify"), though `mail-auth` reports it neutral.
fn dkim_word(r: &DkimResult) -> (&'static str, Option<String>) {
    match r {
        DkimResult::Pass => ("pass", None),
        DkimResult::Neutral(e @ Error::Dkim(DkimError::FailedBodyHashMatch)) => {
            ("fail", Some(e.to_string()))
        }
        DkimResult::Neutral(e) => ("neutral", Some(e.to_string())),
        DkimResult::Fail(e) => ("fail", Some(e.to_string())),
        DkimResult::PermError(e) => ("permerror", Some(e.to_string())),
        DkimResult::TempError(e) => ("temperror", Some(e.to_string())),
        DkimResult::None => ("none", None),
    }
}
