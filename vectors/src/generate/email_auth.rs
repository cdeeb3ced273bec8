//! Area `email-auth`: the SPF, DKIM and DMARC verdicts an email bridge records in
//! `meta.bridge.auth_results` (v1.1 §21.2 "Verify SPF/DKIM/DMARC", §8.1 `auth_results`),
//! judged by RFC 7208 (SPF), RFC 6376 and RFC 8463 (DKIM), RFC 8301 (DKIM algorithms) and
//! RFC 7489 (DMARC). Every test carries the raw message, what the SMTP session saw (client
//! IP, HELO, MAIL FROM) and, inline, every DNS record the world holds: a name not listed has
//! no records (NXDOMAIN), so verdicts never depend on the network.
//!
//! Signatures are made here by [`Signer`], which canonicalizes and assembles the
//! `DKIM-Signature` field itself (RFC 6376 §3.4, §3.5, §3.7) and only borrows the key
//! operation; expectations are literals written from the RFCs.

use super::keys;
use super::schema::{AreaSchema, string};
use super::{Case, FileBuilder};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use loom_bridge::outbound::Dkim;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The RSA test key (2048 bits, PKCS#8), shared with the bridge's tests.
const RSA_PEM: &str = include_str!("../../../reference/bridge/tests/data/dkim-rsa-test.pem");

const SPF: &[&str] = &["v1.1 §21.2", "RFC 7208"];
const DKIM: &[&str] = &["v1.1 §21.2", "RFC 6376"];
const DMARC: &[&str] = &["v1.1 §21.2", "RFC 7489"];

/// The address inside the sender domain's SPF range.
const GOOD_IP: &str = "192.0.2.10";
/// An address no record of the sender domain lists.
const OTHER_IP: &str = "198.51.100.7";
const HELO: &str = "mail.example.com";

/// A DNS record of a test's world.
fn rr(name: &str, kind: &str, value: &str) -> Value {
    json!({"name": name, "type": kind, "value": value})
}

/// The base message: one From at example.com, a plain-text body.
fn message(from: &str, extra_headers: &str, body: &str) -> String {
    format!(
        "From: Alice <{from}>\r\nTo: bob@bridge.test\r\nSubject: Quarterly numbers\r\nDate: Sat, 28 Nov 2026 10:00:00 +0000\r\nMessage-ID: <q1@example.com>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n{extra_headers}\r\n{body}"
    )
}

const BODY: &str = "Hello Bob,\r\nthe numbers are attached.\r\n";

fn plain() -> String {
    message("alice@example.com", "", BODY)
}

/// What a test expects: the SPF result, the DKIM results (sorted), the DMARC result and the
/// DMARC policy that applies to the From domain (null without a DMARC record).
fn verdict(spf: &str, dkim: &[&str], dmarc: &str, policy: Option<&str>) -> Value {
    let mut dkim: Vec<&str> = dkim.to_vec();
    dkim.sort_unstable();
    json!({"spf": spf, "dkim": dkim, "dmarc": dmarc, "dmarc_policy": policy})
}

/// One test's SMTP context and world.
#[derive(Clone)]
struct World {
    ip: &'static str,
    helo: &'static str,
    mail_from: String,
    dns: Vec<Value>,
}

impl World {
    fn new(ip: &'static str, mail_from: &str) -> World {
        World {
            ip,
            helo: HELO,
            mail_from: mail_from.into(),
            dns: vec![],
        }
    }

    fn with(mut self, records: impl IntoIterator<Item = Value>) -> World {
        self.dns.extend(records);
        self
    }

    fn case(self, id: &str, comment: &str, spec: &[&str], message: &str) -> Case {
        Case::new(id, comment, spec)
            .input("message", message)
            .input("client_ip", self.ip)
            .input("helo", self.helo)
            .input("mail_from", self.mail_from)
            .input("dns", self.dns)
    }
}

// ---------------------------------------------------------------------------------------
// DKIM signing (RFC 6376 §3.4 canonicalization, §3.5 tags, §3.7 hashes)
// ---------------------------------------------------------------------------------------

/// RFC 6376 §3.4.2 "relaxed" header canonicalization of one field.
fn relaxed_header(name: &str, value: &str) -> String {
    let unfolded = value.replace("\r\n", "");
    let collapsed = unfolded
        .split([' ', '\t'])
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    format!("{}:{}", name.trim().to_ascii_lowercase(), collapsed)
}

/// RFC 6376 §3.4.3 / §3.4.4 body canonicalization.
fn canonical_body(body: &str, relaxed: bool) -> String {
    let mut lines: Vec<String> = body
        .split("\r\n")
        .map(|l| {
            if relaxed {
                let collapsed = l
                    .split([' ', '\t'])
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ");
                if l.starts_with([' ', '\t']) && !collapsed.is_empty() {
                    format!(" {collapsed}")
                } else {
                    collapsed
                }
            } else {
                l.to_string()
            }
        })
        .collect();
    // `split` yields a last empty piece after the final CRLF; drop every trailing empty line.
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    if lines.is_empty() {
        return if relaxed {
            String::new()
        } else {
            "\r\n".into()
        };
    }
    let mut out = lines.join("\r\n");
    out.push_str("\r\n");
    out
}

/// The header fields of `msg` in order, each as (name, value with folding kept).
fn fields(head: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![];
    for line in head.split("\r\n").filter(|l| !l.is_empty()) {
        if line.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut() {
                last.1.push_str("\r\n");
                last.1.push_str(line);
            }
        } else if let Some((n, v)) = line.split_once(':') {
            out.push((n.to_string(), v.to_string()));
        }
    }
    out
}

/// The key a signature is made with.
#[derive(Clone, Copy)]
enum Key {
    /// The Ed25519 key named (seed from `keys::seed`).
    Ed(&'static str),
    /// The RSA test key.
    Rsa,
}

impl Key {
    fn dkim(self) -> Dkim {
        match self {
            Key::Ed(name) => Dkim::ed25519("x", "x", &keys::seed(name)),
            Key::Rsa => Dkim::rsa_pem("x", "x", RSA_PEM),
        }
        .expect("fixed test key loads")
    }

    /// The `_domainkey` TXT record publishing this key.
    fn record(self) -> String {
        self.dkim().dns_record().to_string()
    }

    fn algorithm(self) -> &'static str {
        match self {
            Key::Ed(_) => "ed25519-sha256",
            Key::Rsa => "rsa-sha256",
        }
    }
}

/// A DKIM signature to add.
#[derive(Clone)]
struct Signer {
    key: Key,
    d: &'static str,
    s: &'static str,
    /// `c=` header/body: relaxed (true) or simple.
    header_relaxed: bool,
    body_relaxed: bool,
    /// Write `c=` with the header algorithm only (body defaults to simple, §3.5).
    c_header_only: bool,
    h: Vec<&'static str>,
    /// Tags written between `s=` and `h=` (i=, l=, t=, x=, …), in order.
    extra: Vec<(&'static str, String)>,
    /// Overrides of the `v=` and `a=` tags (as written; the key still signs).
    v: &'static str,
    a: Option<&'static str>,
    /// `l=`: hash only this many body bytes.
    l: Option<usize>,
}

const SIGNED: [&str; 5] = ["from", "to", "subject", "date", "message-id"];

impl Signer {
    fn new(key: Key, d: &'static str, s: &'static str) -> Signer {
        Signer {
            key,
            d,
            s,
            header_relaxed: true,
            body_relaxed: true,
            c_header_only: false,
            h: SIGNED.to_vec(),
            extra: vec![],
            v: "1",
            a: None,
            l: None,
        }
    }

    fn ed() -> Signer {
        Signer::new(Key::Ed("dkim/example.com/ed"), "example.com", "ed")
    }

    fn canon(mut self, header_relaxed: bool, body_relaxed: bool) -> Signer {
        self.header_relaxed = header_relaxed;
        self.body_relaxed = body_relaxed;
        self
    }

    fn tag(mut self, name: &'static str, value: impl Into<String>) -> Signer {
        self.extra.push((name, value.into()));
        self
    }

    fn headers(mut self, h: &[&'static str]) -> Signer {
        self.h = h.to_vec();
        self
    }

    /// `msg` with this signature's `DKIM-Signature` field in front.
    fn sign(&self, msg: &str) -> String {
        let (head, body) = msg.split_once("\r\n\r\n").expect("message has a body");
        let head = format!("{head}\r\n");
        let canonical = canonical_body(body, self.body_relaxed);
        let hashed = match self.l {
            Some(n) => &canonical.as_bytes()[..n.min(canonical.len())],
            None => canonical.as_bytes(),
        };
        let sha1 = self.a == Some("rsa-sha1");
        let bh = if sha1 {
            B64.encode(sha1::Sha1::digest(hashed))
        } else {
            B64.encode(Sha256::digest(hashed))
        };
        let c = match (self.header_relaxed, self.body_relaxed, self.c_header_only) {
            (h, _, true) => (if h { "relaxed" } else { "simple" }).to_string(),
            (h, b, false) => format!(
                "{}/{}",
                if h { "relaxed" } else { "simple" },
                if b { "relaxed" } else { "simple" }
            ),
        };
        let mut tags = vec![
            ("v", self.v.to_string()),
            ("a", self.a.unwrap_or(self.key.algorithm()).to_string()),
            ("c", c),
            ("d", self.d.to_string()),
            ("s", self.s.to_string()),
        ];
        tags.extend(self.extra.iter().map(|(k, v)| (*k, v.clone())));
        if let Some(l) = self.l {
            tags.push(("l", l.to_string()));
        }
        tags.push(("h", self.h.join(":")));
        tags.push(("bh", bh));
        let value = format!(
            " {}; b=",
            tags.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ")
        );
        // §5.4.2: each listed name takes the next instance from the bottom.
        let all = fields(&head);
        let mut used: Vec<usize> = vec![];
        let mut input = String::new();
        for name in &self.h {
            let pick = all
                .iter()
                .enumerate()
                .rev()
                .find(|(i, (n, _))| n.eq_ignore_ascii_case(name) && !used.contains(i));
            if let Some((i, (n, v))) = pick {
                used.push(i);
                input.push_str(&self.header(n, v));
                input.push_str("\r\n");
            }
        }
        input.push_str(&self.header("DKIM-Signature", &value));
        let b = B64.encode(if sha1 {
            rsa_sha1(input.as_bytes())
        } else {
            self.key
                .dkim()
                .sign_bytes(input.as_bytes())
                .expect("fixed key signs")
        });
        format!("DKIM-Signature:{value}{b}\r\n{msg}")
    }

    fn header(&self, name: &str, value: &str) -> String {
        if self.header_relaxed {
            relaxed_header(name, value)
        } else {
            format!("{name}:{value}")
        }
    }
}

/// RSASSA-PKCS1-v1_5 with SHA-1 over `data` with the RSA test key (RFC 6376 §3.3.1
/// rsa-sha1, which RFC 8301 §3.1 tells verifiers to refuse): a genuine signature, so the
/// refusal is the only reason such a vector fails.
fn rsa_sha1(data: &[u8]) -> Vec<u8> {
    use rsa::pkcs8::DecodePrivateKey;
    /// DER DigestInfo prefix for SHA-1 (RFC 8017 §9.2 note 1).
    const SHA1_PREFIX: [u8; 15] = [
        0x30, 0x21, 0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00, 0x04, 0x14,
    ];
    let key = rsa::RsaPrivateKey::from_pkcs8_pem(RSA_PEM).expect("test key is PKCS#8");
    let scheme = rsa::Pkcs1v15Sign {
        hash_len: Some(20),
        prefix: SHA1_PREFIX.to_vec().into_boxed_slice(),
    };
    key.sign(scheme, &sha1::Sha1::digest(data))
        .expect("fixed key signs")
}

/// The DNS of example.com for DKIM and DMARC tests: an SPF record that does not list
/// [`OTHER_IP`] (so only DKIM can pass), the ed25519 and RSA keys, DMARC `p=reject`.
fn signed_world() -> World {
    World::new(OTHER_IP, "alice@example.com").with([
        rr("example.com", "TXT", "v=spf1 ip4:192.0.2.0/24 -all"),
        rr(
            "ed._domainkey.example.com",
            "TXT",
            &Key::Ed("dkim/example.com/ed").record(),
        ),
        rr("rsa._domainkey.example.com", "TXT", &Key::Rsa.record()),
        rr("_dmarc.example.com", "TXT", "v=DMARC1; p=reject"),
    ])
}

// ---------------------------------------------------------------------------------------
// SPF (RFC 7208)
// ---------------------------------------------------------------------------------------

/// (id, comment, SPF record of example.com, client ip, extra records, expected SPF result, flags)
type SpfCase = (
    &'static str,
    &'static str,
    Option<&'static str>,
    &'static str,
    &'static [(&'static str, &'static str, &'static str)],
    &'static str,
    &'static [&'static str],
);

const SPF_CASES: &[SpfCase] = &[
    (
        "spf.ip4.exact",
        "the client address is the one ip4 names (§5.6)",
        Some("v=spf1 ip4:192.0.2.10 -all"),
        GOOD_IP,
        &[],
        "pass",
        &["SpfPass"],
    ),
    (
        "spf.ip4.cidr",
        "the client address is inside the ip4 CIDR range (§5.6)",
        Some("v=spf1 ip4:192.0.2.0/24 -all"),
        GOOD_IP,
        &[],
        "pass",
        &["SpfPass"],
    ),
    (
        "spf.ip4.outside-fail",
        "an address outside every mechanism reaches -all: fail (§4.6.2, §2.6.4)",
        Some("v=spf1 ip4:192.0.2.0/24 -all"),
        OTHER_IP,
        &[],
        "fail",
        &["SpfFail"],
    ),
    (
        "spf.ip4.outside-softfail",
        "~all gives softfail, not fail (§2.6.5)",
        Some("v=spf1 ip4:192.0.2.0/24 ~all"),
        OTHER_IP,
        &[],
        "softfail",
        &["SpfFail"],
    ),
    (
        "spf.ip4.outside-neutral",
        "?all gives neutral (§2.6.3)",
        Some("v=spf1 ip4:192.0.2.0/24 ?all"),
        OTHER_IP,
        &[],
        "neutral",
        &["SpfFail"],
    ),
    (
        "spf.plus-all",
        "+all passes every address: a permissive record is still a pass (§2.6.3)",
        Some("v=spf1 +all"),
        OTHER_IP,
        &[],
        "pass",
        &["SpfPass"],
    ),
    (
        "spf.no-match-no-all",
        "no mechanism matches and there is no all or redirect: neutral (§4.7)",
        Some("v=spf1 ip4:192.0.2.0/24"),
        OTHER_IP,
        &[],
        "neutral",
        &["SpfFail"],
    ),
    (
        "spf.empty-record",
        "a record with no terms: neutral for every address (§4.7)",
        Some("v=spf1"),
        OTHER_IP,
        &[],
        "neutral",
        &["SpfFail"],
    ),
    (
        "spf.no-record",
        "the domain publishes no TXT record: none (§4.5)",
        None,
        GOOD_IP,
        &[],
        "none",
        &["SpfNone"],
    ),
    (
        "spf.txt-not-spf",
        "a TXT record that does not start with v=spf1 is not an SPF record: none (§4.5)",
        Some("site-verification=abc123"),
        GOOD_IP,
        &[],
        "none",
        &["SpfNone"],
    ),
    (
        "spf.version-prefix-only",
        "\"v=spf10\" is not version 1 followed by a space: no SPF record (§4.5)",
        Some("v=spf10 +all"),
        GOOD_IP,
        &[],
        "none",
        &["SpfNone"],
    ),
    (
        "spf.mechanism-qualifier-fail",
        "a matching mechanism with '-' fails before +all is reached (§4.6.2)",
        Some("v=spf1 -ip4:192.0.2.10 +all"),
        GOOD_IP,
        &[],
        "fail",
        &["SpfFail"],
    ),
    (
        "spf.mechanism-qualifier-softfail",
        "a matching mechanism with '~' gives softfail (§4.6.2)",
        Some("v=spf1 ~ip4:192.0.2.10 -all"),
        GOOD_IP,
        &[],
        "softfail",
        &["SpfFail"],
    ),
    (
        "spf.mechanism-qualifier-neutral",
        "a matching mechanism with '?' gives neutral (§4.6.2)",
        Some("v=spf1 ?ip4:192.0.2.10 -all"),
        GOOD_IP,
        &[],
        "neutral",
        &["SpfFail"],
    ),
    (
        "spf.first-match-wins",
        "mechanisms are evaluated left to right; -all first ends evaluation (§4.6.2)",
        Some("v=spf1 -all ip4:192.0.2.10"),
        GOOD_IP,
        &[],
        "fail",
        &["SpfFail"],
    ),
    (
        "spf.a.match",
        "a: the domain's A record is the client address (§5.3)",
        Some("v=spf1 a -all"),
        GOOD_IP,
        &[("example.com", "A", "192.0.2.10")],
        "pass",
        &["SpfPass"],
    ),
    (
        "spf.a.no-match",
        "a: the domain's A record is another address (§5.3)",
        Some("v=spf1 a -all"),
        GOOD_IP,
        &[("example.com", "A", "192.0.2.99")],
        "fail",
        &["SpfFail"],
    ),
    (
        "spf.a.cidr",
        "a/24 matches any address in the A record's /24 (§5.3, §5.6)",
        Some("v=spf1 a/24 -all"),
        GOOD_IP,
        &[("example.com", "A", "192.0.2.99")],
        "pass",
        &["SpfPass"],
    ),
    (
        "spf.a.other-domain",
        "a:host.example.net looks up that name (§5.3)",
        Some("v=spf1 a:host.example.net -all"),
        GOOD_IP,
        &[("host.example.net", "A", "192.0.2.10")],
        "pass",
        &["SpfPass"],
    ),
    (
        "spf.mx.match",
        "mx: an exchanger's address is the client (§5.4)",
        Some("v=spf1 mx -all"),
        GOOD_IP,
        &[
            ("example.com", "MX", "10 mx1.example.com"),
            ("mx1.example.com", "A", "192.0.2.10"),
        ],
        "pass",
        &["SpfPass"],
    ),
    (
        "spf.mx.no-match",
        "mx: the exchanger has another address (§5.4)",
        Some("v=spf1 mx -all"),
        GOOD_IP,
        &[
            ("example.com", "MX", "10 mx1.example.com"),
            ("mx1.example.com", "A", "192.0.2.77"),
        ],
        "fail",
        &["SpfFail"],
    ),
    (
        "spf.mx.none",
        "mx with no MX record matches nothing (§5.4)",
        Some("v=spf1 mx -all"),
        GOOD_IP,
        &[],
        "fail",
        &["SpfFail"],
    ),
    (
        "spf.include.pass",
        "include: the included record passes, so include matches (§5.2)",
        Some("v=spf1 include:_spf.example.net -all"),
        GOOD_IP,
        &[("_spf.example.net", "TXT", "v=spf1 ip4:192.0.2.10 -all")],
        "pass",
        &["SpfPass"],
    ),
    (
        "spf.include.fail-no-match",
        "an included fail means 'no match', evaluation goes on to -all (§5.2 table)",
        Some("v=spf1 include:_spf.example.net ?all"),
        GOOD_IP,
        &[("_spf.example.net", "TXT", "v=spf1 -all")],
        "neutral",
        &["SpfFail"],
    ),
    (
        "spf.include.none-permerror",
        "include of a name without an SPF record is permerror (§5.2 table: none → permerror)",
        Some("v=spf1 include:_spf.example.net -all"),
        GOOD_IP,
        &[],
        "permerror",
        &["SpfPermError"],
    ),
    (
        "spf.redirect",
        "redirect= hands the evaluation to another record (§6.1)",
        Some("v=spf1 redirect=_spf.example.net"),
        GOOD_IP,
        &[("_spf.example.net", "TXT", "v=spf1 ip4:192.0.2.10 -all")],
        "pass",
        &["SpfPass"],
    ),
    (
        "spf.redirect.target-fails",
        "the redirected record's -all decides (§6.1)",
        Some("v=spf1 redirect=_spf.example.net"),
        OTHER_IP,
        &[("_spf.example.net", "TXT", "v=spf1 ip4:192.0.2.10 -all")],
        "fail",
        &["SpfFail"],
    ),
    (
        "spf.redirect.no-record",
        "redirect to a name without an SPF record is permerror (§6.1)",
        Some("v=spf1 redirect=_spf.example.net"),
        GOOD_IP,
        &[],
        "permerror",
        &["SpfPermError"],
    ),
    (
        "spf.redirect.ignored-with-all",
        "redirect is ignored when the record has an all mechanism (§6.1)",
        Some("v=spf1 -all redirect=_spf.example.net"),
        GOOD_IP,
        &[("_spf.example.net", "TXT", "v=spf1 +all")],
        "fail",
        &["SpfFail"],
    ),
    (
        "spf.exists.macro-i",
        "exists:%{i}.allow.example.net expands to the dotted client address (§5.7, §7.3)",
        Some("v=spf1 exists:%{i}.allow.example.net -all"),
        GOOD_IP,
        &[("192.0.2.10.allow.example.net", "A", "127.0.0.2")],
        "pass",
        &["SpfPass", "SpfMacro"],
    ),
    (
        "spf.exists.macro-ir",
        "%{ir} reverses the address's labels (§7.3)",
        Some("v=spf1 exists:%{ir}.allow.example.net -all"),
        GOOD_IP,
        &[("10.2.0.192.allow.example.net", "A", "127.0.0.2")],
        "pass",
        &["SpfPass", "SpfMacro"],
    ),
    (
        "spf.exists.miss",
        "exists on a name without an A record does not match (§5.7)",
        Some("v=spf1 exists:%{i}.allow.example.net -all"),
        GOOD_IP,
        &[],
        "fail",
        &["SpfFail", "SpfMacro"],
    ),
    (
        "spf.macro-d-include",
        "%{d} is the domain being checked (§7.2)",
        Some("v=spf1 include:_s.%{d} -all"),
        GOOD_IP,
        &[("_s.example.com", "TXT", "v=spf1 ip4:192.0.2.10 -all")],
        "pass",
        &["SpfPass", "SpfMacro"],
    ),
    (
        "spf.macro-l",
        "%{l} is the local part of MAIL FROM (§7.2)",
        Some("v=spf1 exists:%{l}.users.example.com -all"),
        GOOD_IP,
        &[("alice.users.example.com", "A", "127.0.0.2")],
        "pass",
        &["SpfPass", "SpfMacro"],
    ),
    (
        "spf.ip6.match",
        "ip6 range containing the client's IPv6 address (§5.6)",
        Some("v=spf1 ip6:2001:db8::/32 -all"),
        "2001:db8::25",
        &[],
        "pass",
        &["SpfPass"],
    ),
    (
        "spf.ip6.outside",
        "an IPv6 client outside the ip6 range (§5.6)",
        Some("v=spf1 ip6:2001:db8::/32 -all"),
        "2001:db9::25",
        &[],
        "fail",
        &["SpfFail"],
    ),
    (
        "spf.ip4-vs-ip6-client",
        "ip4 never matches an IPv6 client (§5.6)",
        Some("v=spf1 ip4:192.0.2.0/24 -all"),
        "2001:db8::25",
        &[],
        "fail",
        &["SpfFail"],
    ),
    (
        "spf.syntax.unknown-mechanism",
        "an unknown mechanism is a syntax error: permerror (§4.6, §5)",
        Some("v=spf1 ip4:192.0.2.10 foo:bar -all"),
        GOOD_IP,
        &[],
        "permerror",
        &["SpfPermError"],
    ),
    (
        "spf.syntax.bad-cidr",
        "ip4 with a /33 prefix is invalid: permerror (§5.6)",
        Some("v=spf1 ip4:192.0.2.0/33 -all"),
        GOOD_IP,
        &[],
        "permerror",
        &["SpfPermError"],
    ),
    (
        "spf.syntax.bad-address",
        "ip4 with a non-address is invalid: permerror (§5.6)",
        Some("v=spf1 ip4:192.0.2 -all"),
        GOOD_IP,
        &[],
        "permerror",
        &["SpfPermError"],
    ),
    (
        "spf.unknown-modifier-ignored",
        "an unknown modifier is ignored (§6)",
        Some("v=spf1 foo=bar ip4:192.0.2.10 -all"),
        GOOD_IP,
        &[],
        "pass",
        &["SpfPass"],
    ),
    (
        "spf.exp-modifier",
        "exp= only explains a fail; the result stays fail (§6.2)",
        Some("v=spf1 ip4:192.0.2.0/24 -all exp=explain.example.com"),
        OTHER_IP,
        &[("explain.example.com", "TXT", "v=spf1 not an explanation")],
        "fail",
        &["SpfFail"],
    ),
    (
        "spf.lookup-limit.exceeded",
        "eleven DNS-querying terms exceed the limit of 10: permerror (§4.6.4)",
        Some(
            "v=spf1 a:a1.example.com a:a2.example.com a:a3.example.com a:a4.example.com a:a5.example.com a:a6.example.com a:a7.example.com a:a8.example.com a:a9.example.com a:a10.example.com a:a11.example.com -all",
        ),
        GOOD_IP,
        &[
            ("a1.example.com", "A", "192.0.2.201"),
            ("a2.example.com", "A", "192.0.2.202"),
            ("a3.example.com", "A", "192.0.2.203"),
            ("a4.example.com", "A", "192.0.2.204"),
            ("a5.example.com", "A", "192.0.2.205"),
            ("a6.example.com", "A", "192.0.2.206"),
            ("a7.example.com", "A", "192.0.2.207"),
            ("a8.example.com", "A", "192.0.2.208"),
            ("a9.example.com", "A", "192.0.2.209"),
            ("a10.example.com", "A", "192.0.2.210"),
            ("a11.example.com", "A", "192.0.2.211"),
        ],
        "permerror",
        &["SpfPermError", "SpfLimits"],
    ),
    (
        "spf.lookup-limit.ten-ok",
        "ten DNS-querying terms are within the limit (§4.6.4)",
        Some(
            "v=spf1 a:a1.example.com a:a2.example.com a:a3.example.com a:a4.example.com a:a5.example.com a:a6.example.com a:a7.example.com a:a8.example.com a:a9.example.com a:a10.example.com -all",
        ),
        GOOD_IP,
        &[
            ("a1.example.com", "A", "192.0.2.201"),
            ("a2.example.com", "A", "192.0.2.202"),
            ("a3.example.com", "A", "192.0.2.203"),
            ("a4.example.com", "A", "192.0.2.204"),
            ("a5.example.com", "A", "192.0.2.205"),
            ("a6.example.com", "A", "192.0.2.206"),
            ("a7.example.com", "A", "192.0.2.207"),
            ("a8.example.com", "A", "192.0.2.208"),
            ("a9.example.com", "A", "192.0.2.209"),
            ("a10.example.com", "A", "192.0.2.10"),
        ],
        "pass",
        &["SpfPass", "SpfLimits"],
    ),
    (
        "spf.include-loop",
        "a record that includes itself exhausts the lookup limit: permerror (§4.6.4)",
        Some("v=spf1 include:example.com -all"),
        GOOD_IP,
        &[],
        "permerror",
        &["SpfPermError", "SpfLimits"],
    ),
    (
        "spf.ptr",
        "ptr: the client's PTR name is in the domain and resolves back to the client (§5.5)",
        Some("v=spf1 ptr -all"),
        GOOD_IP,
        &[
            ("192.0.2.10", "PTR", "out1.example.com"),
            ("out1.example.com", "A", "192.0.2.10"),
        ],
        "pass",
        &["SpfPass"],
    ),
    (
        "spf.ptr.no-forward",
        "ptr: a PTR name that does not resolve back is no match (§5.5)",
        Some("v=spf1 ptr -all"),
        GOOD_IP,
        &[("192.0.2.10", "PTR", "out1.example.com")],
        "fail",
        &["SpfFail"],
    ),
    (
        "spf.trailing-space",
        "trailing spaces after the last term are allowed (§12 ABNF: *SP)",
        Some("v=spf1 ip4:192.0.2.10 -all  "),
        GOOD_IP,
        &[],
        "pass",
        &["SpfPass"],
    ),
];

fn spf_cases() -> Vec<Case> {
    let mut out: Vec<Case> = SPF_CASES
        .iter()
        .map(|(id, comment, record, ip, extra, result, flags)| {
            let mut w = World::new(ip, "alice@example.com");
            if let Some(r) = record {
                w = w.with([rr("example.com", "TXT", r)]);
            }
            w = w.with(extra.iter().map(|(n, t, v)| rr(n, t, v)));
            w.case(id, comment, SPF, &plain())
                .flags(flags)
                .valid_with(verdict(result, &[], "none", None))
        })
        .collect();
    // §2.4: an empty reverse path (a bounce) is checked as postmaster@HELO.
    let bounce = World {
        ip: GOOD_IP,
        helo: "mail.example.com",
        mail_from: String::new(),
        dns: vec![rr("mail.example.com", "TXT", "v=spf1 ip4:192.0.2.10 -all")],
    };
    out.push(
        bounce
            .case(
                "spf.null-sender-uses-helo",
                "MAIL FROM:<> is checked against the HELO name's record (§2.4)",
                SPF,
                &plain(),
            )
            .flags(&["SpfPass"])
            .valid_with(verdict("pass", &[], "none", None)),
    );
    let bounce_fail = World {
        ip: OTHER_IP,
        helo: "mail.example.com",
        mail_from: String::new(),
        dns: vec![rr("mail.example.com", "TXT", "v=spf1 ip4:192.0.2.10 -all")],
    };
    out.push(
        bounce_fail
            .case(
                "spf.null-sender-helo-fail",
                "a bounce from an address the HELO name's record does not list fails (§2.4)",
                SPF,
                &plain(),
            )
            .flags(&["SpfFail"])
            .valid_with(verdict("fail", &[], "none", None)),
    );
    out
}

// ---------------------------------------------------------------------------------------
// DKIM (RFC 6376, RFC 8463, RFC 8301)
// ---------------------------------------------------------------------------------------

/// DKIM tests in the signed world (SPF fails, DMARC p=reject): the DMARC result follows the
/// DKIM result of the From domain alone.
fn dkim_cases() -> Vec<Case> {
    let base = plain();
    let ed = Signer::ed();
    let rsa = Signer::new(Key::Rsa, "example.com", "rsa");
    let pass = verdict("fail", &["pass"], "pass", Some("reject"));
    let fail = verdict("fail", &["permfail"], "fail", Some("reject"));
    let w = signed_world;
    let mut out = vec![];
    let mut push = |c: Case| out.push(c);

    push(
        w().case(
            "dkim.ed25519.pass",
            "an ed25519-sha256 signature over the message as sent (RFC 8463 §3)",
            DKIM,
            &ed.sign(&base),
        )
        .flags(&["DkimPass"])
        .valid_with(pass.clone()),
    );
    push(
        w().case(
            "dkim.rsa.pass",
            "an rsa-sha256 signature over the message as sent (§3.3.2)",
            DKIM,
            &rsa.sign(&base),
        )
        .flags(&["DkimPass"])
        .valid_with(pass.clone()),
    );
    for (hr, br) in [(false, false), (true, false), (false, true)] {
        let name = |r: bool| if r { "relaxed" } else { "simple" };
        let id = format!("dkim.canon.{}-{}", name(hr), name(br));
        let comment = format!(
            "c={}/{} signs and verifies unchanged mail (§3.4)",
            name(hr),
            name(br)
        );
        push(
            w().case(&id, &comment, DKIM, &ed.clone().canon(hr, br).sign(&base))
                .flags(&["DkimPass"])
                .valid_with(pass.clone()),
        );
    }
    {
        let mut s = ed.clone().canon(true, false);
        s.c_header_only = true;
        let signed = s.sign(&base);
        push(
            w().case(
                "dkim.canon.header-only-tag",
                "c=relaxed alone means relaxed/simple (§3.5 c=)",
                DKIM,
                &signed,
            )
            .flags(&["DkimPass"])
            .valid_with(pass.clone()),
        );
        let changed = signed.replace("Hello Bob,", "Hello  Bob,");
        push(w().case("dkim.canon.header-only-tag-body-space", "c=relaxed alone leaves the body simple: a doubled space breaks it (§3.5 c=, §3.4.3)", DKIM, &changed).flags(&["DkimTampered"]).valid_with(fail.clone()));
    }
    let signed = ed.sign(&base);
    push(
        w().case(
            "dkim.body.changed",
            "one word of the body changed after signing: body hash mismatch (§3.7, §6.1.3)",
            DKIM,
            &signed.replace("numbers", "numb3rs"),
        )
        .flags(&["DkimTampered"])
        .valid_with(fail.clone()),
    );
    push(
        w().case(
            "dkim.body.appended",
            "a line appended to the body (§6.1.3)",
            DKIM,
            &format!("{signed}P.S. pay to account 12345\r\n"),
        )
        .flags(&["DkimTampered"])
        .valid_with(fail.clone()),
    );
    push(w().case("dkim.body.trailing-blank-lines", "empty lines added at the end are ignored by both body canonicalizations (§3.4.3, §3.4.4)", DKIM, &format!("{signed}\r\n\r\n")).flags(&["DkimPass", "DkimCanonicalization"]).valid_with(pass.clone()));
    push(
        w().case(
            "dkim.body.relaxed-whitespace",
            "relaxed body: runs of spaces and trailing spaces do not matter (§3.4.4)",
            DKIM,
            &signed.replace("Hello Bob,", "Hello   Bob,  "),
        )
        .flags(&["DkimPass", "DkimCanonicalization"])
        .valid_with(pass.clone()),
    );
    let simple = ed.clone().canon(false, false).sign(&base);
    push(
        w().case(
            "dkim.body.simple-whitespace",
            "simple body: one extra space breaks the signature (§3.4.3)",
            DKIM,
            &simple.replace("Hello Bob,", "Hello  Bob,"),
        )
        .flags(&["DkimTampered", "DkimCanonicalization"])
        .valid_with(fail.clone()),
    );
    push(
        w().case(
            "dkim.header.subject-changed",
            "the signed Subject changed after signing (§6.1.3)",
            DKIM,
            &signed.replace("Quarterly numbers", "Urgent: wire transfer"),
        )
        .flags(&["DkimTampered"])
        .valid_with(fail.clone()),
    );
    push(
        w().case(
            "dkim.header.from-changed",
            "the signed From changed after signing (§6.1.3)",
            DKIM,
            &signed.replace(
                "From: Alice <alice@example.com>",
                "From: Alice <alice@example.com.evil.test>",
            ),
        )
        .flags(&["DkimTampered"])
        .valid_with(verdict("fail", &["permfail"], "none", None)),
    );
    push(
        w().case(
            "dkim.header.relaxed-refold",
            "relaxed header: refolding and extra spaces do not matter (§3.4.2)",
            DKIM,
            &signed.replace(
                "Subject: Quarterly numbers",
                "Subject:   Quarterly\r\n\tnumbers",
            ),
        )
        .flags(&["DkimPass", "DkimCanonicalization"])
        .valid_with(pass.clone()),
    );
    push(
        w().case(
            "dkim.header.simple-refold",
            "simple header: refolding breaks the signature (§3.4.1)",
            DKIM,
            &simple.replace(
                "Subject: Quarterly numbers",
                "Subject: Quarterly\r\n numbers",
            ),
        )
        .flags(&["DkimTampered", "DkimCanonicalization"])
        .valid_with(fail.clone()),
    );
    push(
        w().case(
            "dkim.header.relaxed-name-case",
            "relaxed header: the field name's case does not matter (§3.4.2)",
            DKIM,
            &signed.replace("Subject:", "SUBJECT:"),
        )
        .flags(&["DkimPass", "DkimCanonicalization"])
        .valid_with(pass.clone()),
    );
    push(
        w().case(
            "dkim.header.unsigned-added",
            "a header the signature does not list was added (§5.4)",
            DKIM,
            &signed.replace("MIME-Version:", "X-Mailer: relay 1.0\r\nMIME-Version:"),
        )
        .flags(&["DkimPass"])
        .valid_with(pass.clone()),
    );
    push(w().case("dkim.header.second-subject-above", "a second Subject above the signed one: the verifier takes instances from the bottom, so the signed one is checked (§5.4.2)", DKIM, &signed.replace("From: Alice", "Subject: Urgent\r\nFrom: Alice")).flags(&["DkimPass", "DkimHeaderSelection"]).valid_with(pass.clone()));
    push(
        w().case(
            "dkim.header.second-subject-below",
            "a second Subject below the signed one is the instance h= selects: broken (§5.4.2)",
            DKIM,
            &signed.replace("MIME-Version:", "Subject: Urgent\r\nMIME-Version:"),
        )
        .flags(&["DkimTampered", "DkimHeaderSelection"])
        .valid_with(fail.clone()),
    );
    {
        let over = ed
            .clone()
            .headers(&["from", "to", "subject", "subject", "date", "message-id"]);
        let signed = over.sign(&base);
        push(w().case("dkim.header.oversigned", "h= names Subject twice with one present: the missing instance is signed as empty (§5.4.2)", DKIM, &signed).flags(&["DkimPass", "DkimHeaderSelection"]).valid_with(pass.clone()));
        push(w().case("dkim.header.oversigned-added", "oversigned Subject: adding a second Subject anywhere breaks the signature (§5.4.2, §8.15)", DKIM, &signed.replace("From: Alice", "Subject: Urgent\r\nFrom: Alice")).flags(&["DkimTampered", "DkimHeaderSelection"]).valid_with(fail.clone()));
    }
    push(w().case("dkim.header.absent-listed", "h= lists Cc, which the message does not have: it hashes as empty and verifies (§5.4.2)", DKIM, &ed.clone().headers(&["from", "cc", "subject"]).sign(&base)).flags(&["DkimPass", "DkimHeaderSelection"]).valid_with(pass.clone()));
    push(
        w().case(
            "dkim.from-not-signed",
            "h= without From: the verifier MUST ignore the signature, PERMFAIL (§6.1.1)",
            DKIM,
            &ed.clone().headers(&["to", "subject", "date"]).sign(&base),
        )
        .flags(&["DkimMalformed"])
        .valid_with(fail.clone()),
    );
    push(
        w().case(
            "dkim.key.missing",
            "no key record at the selector: PERMFAIL (no key for signature) (§6.1.2)",
            DKIM,
            &Signer::new(Key::Ed("dkim/example.com/ed"), "example.com", "nokey").sign(&base),
        )
        .flags(&["DkimKey"])
        .valid_with(fail.clone()),
    );
    push(w().case("dkim.key.wrong", "the published key is not the one that signed: PERMFAIL (signature did not verify) (§6.1.3)", DKIM, &Signer::new(Key::Ed("dkim/example.com/other"), "example.com", "ed").sign(&base)).flags(&["DkimKey"]).valid_with(fail.clone()));
    {
        let revoked = signed_world().with([rr(
            "revoked._domainkey.example.com",
            "TXT",
            "v=DKIM1; k=ed25519; p=",
        )]);
        push(
            revoked
                .case(
                    "dkim.key.revoked",
                    "an empty p= means the key was revoked: PERMFAIL (§3.6.1 p=, §6.1.2)",
                    DKIM,
                    &Signer::new(Key::Ed("dkim/example.com/ed"), "example.com", "revoked")
                        .sign(&base),
                )
                .flags(&["DkimKey"])
                .valid_with(fail.clone()),
        );
        let wrongtype = signed_world().with([rr(
            "mixed._domainkey.example.com",
            "TXT",
            &Key::Ed("dkim/example.com/ed")
                .record()
                .replace("k=ed25519", "k=rsa"),
        )]);
        push(wrongtype.case("dkim.key.type-mismatch", "the key record says k=rsa, the signature a=ed25519-sha256: PERMFAIL (§3.6.1 k=, §6.1.2)", DKIM, &Signer::new(Key::Ed("dkim/example.com/ed"), "example.com", "mixed").sign(&base)).flags(&["DkimKey"]).valid_with(fail.clone()));
        let sha1only = signed_world().with([rr(
            "sha1._domainkey.example.com",
            "TXT",
            &Key::Rsa.record().replace("k=rsa;", "k=rsa; h=sha1;"),
        )]);
        push(sha1only.case("dkim.key.hash-not-allowed", "the key allows only sha1 (h=sha1); an rsa-sha256 signature is refused (§3.6.1 h=, §6.1.2)", DKIM, &Signer::new(Key::Rsa, "example.com", "sha1").sign(&base)).flags(&["DkimKey"]).valid_with(fail.clone()));
        let garbage = signed_world().with([rr(
            "junk._domainkey.example.com",
            "TXT",
            "this is not a key",
        )]);
        push(
            garbage
                .case(
                    "dkim.key.garbage",
                    "the selector's TXT record is not a key record: PERMFAIL (§6.1.2)",
                    DKIM,
                    &Signer::new(Key::Ed("dkim/example.com/ed"), "example.com", "junk").sign(&base),
                )
                .flags(&["DkimKey"])
                .valid_with(fail.clone()),
        );
        let unknown = signed_world().with([rr(
            "future._domainkey.example.com",
            "TXT",
            &format!("{}; zz=future-tag", Key::Ed("dkim/example.com/ed").record()),
        )]);
        push(
            unknown
                .case(
                    "dkim.key.unknown-tag",
                    "an unknown tag in the key record is ignored (§3.6.1)",
                    DKIM,
                    &Signer::new(Key::Ed("dkim/example.com/ed"), "example.com", "future")
                        .sign(&base),
                )
                .flags(&["DkimPass"])
                .valid_with(pass.clone()),
        );
        let strict = signed_world().with([rr(
            "strict._domainkey.example.com",
            "TXT",
            &Key::Ed("dkim/example.com/ed")
                .record()
                .replace("k=ed25519;", "k=ed25519; t=s;"),
        )]);
        push(
            strict
                .clone()
                .case(
                    "dkim.key.t-s-subdomain-auid",
                    "the key has t=s and i= names a subdomain of d=: PERMFAIL (§3.6.1 t=s)",
                    DKIM,
                    &Signer::new(Key::Ed("dkim/example.com/ed"), "example.com", "strict")
                        .tag("i", "@news.example.com")
                        .sign(&base),
                )
                .flags(&["DkimKey", "DkimIdentity"])
                .valid_with(fail.clone()),
        );
        push(
            strict
                .case(
                    "dkim.key.t-s-same-domain",
                    "t=s with i= in d= itself verifies (§3.6.1 t=s)",
                    DKIM,
                    &Signer::new(Key::Ed("dkim/example.com/ed"), "example.com", "strict")
                        .tag("i", "alice@example.com")
                        .sign(&base),
                )
                .flags(&["DkimPass", "DkimIdentity"])
                .valid_with(pass.clone()),
        );
    }
    let mangle = |from: &str, to: &str| signed.replacen(from, to, 1);
    push(
        w().case(
            "dkim.sig.b-corrupted",
            "one character of b= changed: PERMFAIL (signature did not verify) (§6.1.3)",
            DKIM,
            &flip_b(&signed),
        )
        .flags(&["DkimTampered"])
        .valid_with(fail.clone()),
    );
    push(
        w().case(
            "dkim.sig.bh-corrupted",
            "bh= is a well-formed hash of another body: PERMFAIL (body hash did not verify) (§6.1.3)",
            DKIM,
            &mangle(
                &format!("bh={}", B64.encode(Sha256::digest(canonical_body(BODY, true)))),
                &format!("bh={}", B64.encode(Sha256::digest(b"another body\r\n"))),
            ),
        )
        .flags(&["DkimTampered"])
        .valid_with(fail.clone()),
    );
    push(
        w().case(
            "dkim.sig.version-2",
            "v=2: an unsupported version is PERMFAIL (§6.1.1)",
            DKIM,
            &Signer {
                v: "2",
                ..Signer::ed()
            }
            .sign(&base),
        )
        .flags(&["DkimMalformed"])
        .valid_with(fail.clone()),
    );
    push(
        w().case(
            "dkim.sig.missing-bh",
            "a signature without bh=: a required tag is missing, PERMFAIL (§3.5, §6.1.1)",
            DKIM,
            &strip_tag(&signed, "bh"),
        )
        .flags(&["DkimMalformed"])
        .valid_with(fail.clone()),
    );
    push(
        w().case(
            "dkim.sig.missing-d",
            "a signature without d=: PERMFAIL (§3.5, §6.1.1)",
            DKIM,
            &strip_tag(&signed, "d"),
        )
        .flags(&["DkimMalformed"])
        .valid_with(fail.clone()),
    );
    push(w().case("dkim.sig.rsa-sha1", "a=rsa-sha1 is not accepted by verifiers any more (RFC 8301 §3.1: MUST NOT consider valid)", DKIM, &Signer { a: Some("rsa-sha1"), ..Signer::new(Key::Rsa, "example.com", "rsa") }.sign(&base)).flags(&["DkimAlgorithm"]).valid_with(fail.clone()));
    push(
        w().case(
            "dkim.sig.unknown-algorithm",
            "a=hmac-sha256 is no DKIM algorithm: PERMFAIL (§3.5 a=, §6.1.1)",
            DKIM,
            &Signer {
                a: Some("hmac-sha256"),
                ..Signer::ed()
            }
            .sign(&base),
        )
        .flags(&["DkimAlgorithm"])
        .valid_with(fail.clone()),
    );
    push(
        w().case(
            "dkim.sig.algorithm-key-mismatch",
            "a=rsa-sha256 over an Ed25519 key's record: PERMFAIL (§6.1.2)",
            DKIM,
            &Signer {
                a: Some("rsa-sha256"),
                ..Signer::ed()
            }
            .sign(&base),
        )
        .flags(&["DkimAlgorithm"])
        .valid_with(fail.clone()),
    );
    push(
        w().case(
            "dkim.sig.auid-outside-d",
            "i= in another domain than d=: PERMFAIL (domain mismatch) (§6.1.1)",
            DKIM,
            &Signer::ed().tag("i", "@evil.example.net").sign(&base),
        )
        .flags(&["DkimMalformed", "DkimIdentity"])
        .valid_with(fail.clone()),
    );
    push(
        w().case(
            "dkim.sig.auid-subdomain",
            "i= at a subdomain of d= is allowed (§3.5 i=)",
            DKIM,
            &Signer::ed().tag("i", "@news.example.com").sign(&base),
        )
        .flags(&["DkimPass", "DkimIdentity"])
        .valid_with(pass.clone()),
    );
    push(
        w().case(
            "dkim.sig.expired",
            "x= in the year 2000: the signature expired (§3.5 x=, §6.1.1)",
            DKIM,
            &Signer::ed()
                .tag("t", "946000000")
                .tag("x", "946684800")
                .sign(&base),
        )
        .flags(&["DkimExpiry", "Interpretation"])
        .valid_with(fail.clone()),
    );
    push(
        w().case(
            "dkim.sig.expires-later",
            "x= in 2100 and t= in 2026: not expired (§3.5 x=)",
            DKIM,
            &Signer::ed()
                .tag("t", "1795000000")
                .tag("x", "4102444800")
                .sign(&base),
        )
        .flags(&["DkimPass", "DkimExpiry"])
        .valid_with(pass.clone()),
    );
    push(
        w().case(
            "dkim.sig.uppercase-domain",
            "d= in capitals: domain names compare case-insensitively (§3.5 d=)",
            DKIM,
            &Signer::new(Key::Ed("dkim/example.com/ed"), "EXAMPLE.COM", "ed").sign(&base),
        )
        .flags(&["DkimPass"])
        .valid_with(pass.clone()),
    );
    {
        let mut s = Signer::ed();
        s.l = Some(BODY.len());
        let signed = s.sign(&base);
        push(w().case("dkim.sig.body-length", "a signature with l= is not counted even when l= covers the whole body: §8.2 lets a verifier ignore l= signatures, and a bridge that counted them would authenticate whatever is appended", DKIM, &signed).flags(&["DkimBodyLength", "Interpretation"]).valid_with(fail.clone()));
        push(w().case("dkim.sig.body-length-appended", "l= set and text appended after the counted bytes: the hash still matches, but the appended text is unauthenticated (§8.2); not a pass", DKIM, &format!("{signed}Appended by anyone.\r\n")).flags(&["DkimBodyLength", "Interpretation"]).valid_with(fail.clone()));
        push(
            w().case(
                "dkim.sig.body-length-too-long",
                "l= larger than the body is a PERMFAIL (§3.5 l=: 'MUST NOT exceed')",
                DKIM,
                &Signer {
                    l: Some(BODY.len() + 500),
                    ..Signer::ed()
                }
                .sign(&base),
            )
            .flags(&["DkimBodyLength", "Interpretation"])
            .valid_with(fail.clone()),
        );
    }
    push(
        w().case(
            "dkim.none",
            "no DKIM-Signature: no DKIM result (§6.1)",
            DKIM,
            &base,
        )
        .flags(&["DkimNone"])
        .valid_with(verdict("fail", &[], "fail", Some("reject"))),
    );
    push(w().case("dkim.two.broken-and-good", "two signatures, the first broken: each has its own result and one pass suffices for DMARC (§4.2, RFC 7489 §4.2)", DKIM, &flip_b(&rsa.sign(&ed.sign(&base)))).flags(&["DkimPass", "DkimMultiple"]).valid_with(verdict("fail", &["pass", "permfail"], "pass", Some("reject"))));
    push(
        w().case(
            "dkim.two.both-good",
            "two valid signatures (rsa and ed25519, the RFC 8463 §4 dual-signing practice)",
            DKIM,
            &rsa.sign(&ed.sign(&base)),
        )
        .flags(&["DkimPass", "DkimMultiple"])
        .valid_with(verdict("fail", &["pass", "pass"], "pass", Some("reject"))),
    );
    {
        let net = World::new(OTHER_IP, "alice@example.com").with([
            rr("example.com", "TXT", "v=spf1 ip4:192.0.2.0/24 -all"),
            rr(
                "ed._domainkey.example.net",
                "TXT",
                &Key::Ed("dkim/example.net/ed").record(),
            ),
            rr("_dmarc.example.com", "TXT", "v=DMARC1; p=reject"),
        ]);
        push(net.case("dkim.third-party", "a valid signature by example.net on mail From example.com: DKIM passes, DMARC fails (not aligned, RFC 7489 §3.1.1)", DKIM, &Signer::new(Key::Ed("dkim/example.net/ed"), "example.net", "ed").sign(&base)).flags(&["DkimPass", "DmarcAlignment"]).valid_with(verdict("fail", &["pass"], "fail", Some("reject"))));
    }
    {
        let utf8 = message("alice@example.com", "", "Grüße aus Zürich — 東京\r\n");
        push(
            w().case(
                "dkim.utf8-body",
                "an 8-bit UTF-8 body is hashed as its octets (§3.4.4)",
                DKIM,
                &ed.sign(&utf8),
            )
            .flags(&["DkimPass"])
            .valid_with(pass.clone()),
        );
        let empty = message("alice@example.com", "", "");
        push(
            w().case(
                "dkim.empty-body.simple",
                "an empty body canonicalizes to one CRLF under simple (§3.4.3)",
                DKIM,
                &ed.clone().canon(true, false).sign(&empty),
            )
            .flags(&["DkimPass", "DkimCanonicalization"])
            .valid_with(pass.clone()),
        );
        push(
            w().case(
                "dkim.empty-body.relaxed",
                "an empty body canonicalizes to nothing under relaxed (§3.4.4)",
                DKIM,
                &ed.sign(&empty),
            )
            .flags(&["DkimPass", "DkimCanonicalization"])
            .valid_with(pass.clone()),
        );
    }
    out
}

/// `msg` with one character of the first `b=` value changed.
fn flip_b(msg: &str) -> String {
    let at = msg.find("; b=").expect("signature has b=") + 4;
    let mut bytes = msg.as_bytes().to_vec();
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    String::from_utf8(bytes).expect("ascii change")
}

/// `msg` with the tag `name=` removed from its first DKIM-Signature.
fn strip_tag(msg: &str, name: &str) -> String {
    let (sig, rest) = msg.split_once("\r\n").expect("signature line");
    let kept: Vec<&str> = sig
        .trim_start_matches("DKIM-Signature:")
        .split(';')
        .filter(|t| t.trim().split_once('=').map(|(k, _)| k.trim()) != Some(name))
        .collect();
    format!("DKIM-Signature:{}\r\n{rest}", kept.join(";"))
}

// ---------------------------------------------------------------------------------------
// DMARC (RFC 7489)
// ---------------------------------------------------------------------------------------

fn dmarc_cases() -> Vec<Case> {
    let base = plain();
    let ed = Signer::ed();
    let mut out = vec![];
    let spf_world = |dmarc: &str, mail_from: &str| {
        World::new(GOOD_IP, mail_from).with([
            rr("example.com", "TXT", "v=spf1 ip4:192.0.2.0/24 -all"),
            rr("bounce.example.com", "TXT", "v=spf1 ip4:192.0.2.0/24 -all"),
            rr("example.net", "TXT", "v=spf1 ip4:192.0.2.0/24 -all"),
            rr("_dmarc.example.com", "TXT", dmarc),
        ])
    };
    let v = verdict;
    out.push(
        spf_world("v=DMARC1; p=reject", "alice@example.com")
            .case(
                "dmarc.spf-aligned",
                "SPF passes for the From domain itself: DMARC pass (§3.1.2, §4.2)",
                DMARC,
                &base,
            )
            .flags(&["DmarcPass"])
            .valid_with(v("pass", &[], "pass", Some("reject"))),
    );
    out.push(spf_world("v=DMARC1; p=reject", "bounces@bounce.example.com").case("dmarc.spf-relaxed-subdomain", "SPF passes for a subdomain of the From domain: aligned under relaxed aspf (§3.1.2)", DMARC, &base).flags(&["DmarcPass", "DmarcAlignment"]).valid_with(v("pass", &[], "pass", Some("reject"))));
    out.push(
        spf_world("v=DMARC1; p=reject; aspf=s", "bounces@bounce.example.com")
            .case(
                "dmarc.spf-strict-subdomain",
                "aspf=s: a subdomain is not aligned (§3.1.2)",
                DMARC,
                &base,
            )
            .flags(&["DmarcFail", "DmarcAlignment"])
            .valid_with(v("pass", &[], "fail", Some("reject"))),
    );
    out.push(spf_world("v=DMARC1; p=reject", "alice@example.net").case("dmarc.spf-other-domain", "SPF passes for example.net, From is example.com: not aligned, DMARC fails (§3.1.2)", DMARC, &base).flags(&["DmarcFail", "DmarcAlignment"]).valid_with(v("pass", &[], "fail", Some("reject"))));
    out.push(
        spf_world("v=DMARC1; p=quarantine", "alice@example.net")
            .case(
                "dmarc.policy-quarantine",
                "failing under p=quarantine (§6.3 p=)",
                DMARC,
                &base,
            )
            .flags(&["DmarcFail"])
            .valid_with(v("pass", &[], "fail", Some("quarantine"))),
    );
    out.push(
        spf_world("v=DMARC1; p=none", "alice@example.net")
            .case(
                "dmarc.policy-none",
                "failing under p=none: DMARC still fails, the policy asks for nothing (§6.3 p=)",
                DMARC,
                &base,
            )
            .flags(&["DmarcFail"])
            .valid_with(v("pass", &[], "fail", Some("none"))),
    );
    out.push(
        spf_world("v=DMARC1; p=none", "alice@example.com")
            .case(
                "dmarc.policy-none-pass",
                "p=none does not stop an aligned pass (§6.3)",
                DMARC,
                &base,
            )
            .flags(&["DmarcPass"])
            .valid_with(v("pass", &[], "pass", Some("none"))),
    );
    {
        let w = World::new(GOOD_IP, "alice@example.net").with([rr(
            "example.net",
            "TXT",
            "v=spf1 ip4:192.0.2.0/24 -all",
        )]);
        out.push(
            w.case(
                "dmarc.no-record",
                "the From domain publishes no DMARC record: none (§6.6.3)",
                DMARC,
                &base,
            )
            .flags(&["DmarcNone"])
            .valid_with(v("pass", &[], "none", None)),
        );
    }
    out.push(spf_world("p=reject", "alice@example.net").case("dmarc.record-without-version", "a TXT record at _dmarc without v=DMARC1 is not a DMARC record: none (§6.6.3 step 3)", DMARC, &base).flags(&["DmarcNone"]).valid_with(v("pass", &[], "none", None)));
    out.push(
        spf_world("v=DMARC1; p=bogus", "alice@example.net")
            .case(
                "dmarc.invalid-p-no-rua",
                "an invalid p= and no rua: no DMARC processing (§6.6.3 step 6.2)",
                DMARC,
                &base,
            )
            .flags(&["DmarcNone"])
            .valid_with(v("pass", &[], "none", None)),
    );
    out.push(
        spf_world(
            "v=DMARC1; p=bogus; rua=mailto:dmarc@example.com",
            "alice@example.net",
        )
        .case(
            "dmarc.invalid-p-with-rua",
            "an invalid p= with a valid rua: act as p=none (§6.6.3 step 6.1)",
            DMARC,
            &base,
        )
        .flags(&["DmarcFail"])
        .valid_with(v("pass", &[], "fail", Some("none"))),
    );
    {
        let w = |dmarc: &str| {
            World::new(OTHER_IP, "alice@example.com").with([
                rr("example.com", "TXT", "v=spf1 ip4:192.0.2.0/24 -all"),
                rr(
                    "ed._domainkey.example.com",
                    "TXT",
                    &Key::Ed("dkim/example.com/ed").record(),
                ),
                rr(
                    "ed._domainkey.news.example.com",
                    "TXT",
                    &Key::Ed("dkim/example.com/ed").record(),
                ),
                rr("_dmarc.example.com", "TXT", dmarc),
            ])
        };
        let sub = Signer::new(Key::Ed("dkim/example.com/ed"), "news.example.com", "ed");
        out.push(
            w("v=DMARC1; p=reject")
                .case(
                    "dmarc.dkim-aligned",
                    "only DKIM passes, for the From domain: DMARC pass (§3.1.1)",
                    DMARC,
                    &ed.sign(&base),
                )
                .flags(&["DmarcPass"])
                .valid_with(v("fail", &["pass"], "pass", Some("reject"))),
        );
        out.push(w("v=DMARC1; p=reject").case("dmarc.dkim-relaxed-subdomain", "DKIM d=news.example.com, From example.com: aligned under relaxed adkim (§3.1.1)", DMARC, &sub.sign(&base)).flags(&["DmarcPass", "DmarcAlignment"]).valid_with(v("fail", &["pass"], "pass", Some("reject"))));
        out.push(
            w("v=DMARC1; p=reject; adkim=s")
                .case(
                    "dmarc.dkim-strict-subdomain",
                    "adkim=s: d=news.example.com is not aligned with example.com (§3.1.1)",
                    DMARC,
                    &sub.sign(&base),
                )
                .flags(&["DmarcFail", "DmarcAlignment"])
                .valid_with(v("fail", &["pass"], "fail", Some("reject"))),
        );
        out.push(
            w("v=DMARC1; p=reject; adkim=s")
                .case(
                    "dmarc.dkim-strict-exact",
                    "adkim=s: d= equal to the From domain is aligned (§3.1.1)",
                    DMARC,
                    &ed.sign(&base),
                )
                .flags(&["DmarcPass", "DmarcAlignment"])
                .valid_with(v("fail", &["pass"], "pass", Some("reject"))),
        );
        let from_sub = message("alice@news.example.com", "", BODY);
        out.push(w("v=DMARC1; p=reject; sp=quarantine").case("dmarc.subdomain-policy", "From news.example.com has no record; the organizational domain's sp= applies (§6.6.3, §6.3 sp=)", DMARC, &from_sub).flags(&["DmarcFail", "DmarcSubdomain"]).valid_with(v("fail", &[], "fail", Some("quarantine"))));
        out.push(
            w("v=DMARC1; p=reject")
                .case(
                    "dmarc.subdomain-inherits-p",
                    "without sp=, a subdomain inherits p= (§6.3 sp=)",
                    DMARC,
                    &from_sub,
                )
                .flags(&["DmarcFail", "DmarcSubdomain"])
                .valid_with(v("fail", &[], "fail", Some("reject"))),
        );
        out.push(w("v=DMARC1; p=reject; sp=none").case("dmarc.subdomain-relaxed-parent-signature", "From news.example.com signed by d=example.com: aligned under relaxed adkim, sp=none irrelevant (§3.1.1)", DMARC, &ed.sign(&from_sub)).flags(&["DmarcPass", "DmarcSubdomain", "DmarcAlignment"]).valid_with(v("fail", &["pass"], "pass", Some("none"))));
        out.push(
            w("v=DMARC1; p=reject")
                .case(
                    "dmarc.dkim-broken",
                    "the From domain's only signature is broken: DMARC fail under p=reject (§4.2)",
                    DMARC,
                    &flip_b(&ed.sign(&base)),
                )
                .flags(&["DmarcFail"])
                .valid_with(v("fail", &["permfail"], "fail", Some("reject"))),
        );
        let upper = message("alice@EXAMPLE.COM", "", BODY);
        out.push(
            w("v=DMARC1; p=reject")
                .case(
                    "dmarc.from-domain-case",
                    "the From domain in capitals is the same domain (§3.1)",
                    DMARC,
                    &ed.sign(&upper),
                )
                .flags(&["DmarcPass"])
                .valid_with(v("fail", &["pass"], "pass", Some("reject"))),
        );
    }
    {
        let both = World::new(GOOD_IP, "alice@example.com").with([
            rr("example.com", "TXT", "v=spf1 ip4:192.0.2.0/24 -all"),
            rr(
                "ed._domainkey.example.com",
                "TXT",
                &Key::Ed("dkim/example.com/ed").record(),
            ),
            rr("_dmarc.example.com", "TXT", "v=DMARC1; p=reject"),
        ]);
        out.push(
            both.case(
                "dmarc.both-aligned",
                "SPF and DKIM both pass aligned (§4.2)",
                DMARC,
                &ed.sign(&base),
            )
            .flags(&["DmarcPass"])
            .valid_with(v("pass", &["pass"], "pass", Some("reject"))),
        );
    }
    {
        // A spoof: From example.com (p=reject), sent from an address example.com does not
        // list, MAIL FROM at the attacker's own domain whose SPF passes.
        let spoof = World::new(OTHER_IP, "x@attacker.example.org").with([
            rr("example.com", "TXT", "v=spf1 ip4:192.0.2.0/24 -all"),
            rr(
                "attacker.example.org",
                "TXT",
                "v=spf1 ip4:198.51.100.0/24 -all",
            ),
            rr("_dmarc.example.com", "TXT", "v=DMARC1; p=reject"),
        ]);
        out.push(spoof.case("dmarc.spoof-own-spf", "a spoof whose MAIL FROM domain passes its own SPF: DMARC fail, p=reject (§3.1.2)", DMARC, &base).flags(&["DmarcFail", "DmarcAlignment"]).valid_with(v("pass", &[], "fail", Some("reject"))));
        let attacker_signed = World::new(OTHER_IP, "x@attacker.example.org").with([
            rr(
                "attacker.example.org",
                "TXT",
                "v=spf1 ip4:198.51.100.0/24 -all",
            ),
            rr(
                "ed._domainkey.attacker.example.org",
                "TXT",
                &Key::Ed("dkim/attacker/ed").record(),
            ),
            rr("_dmarc.example.com", "TXT", "v=DMARC1; p=reject"),
        ]);
        out.push(attacker_signed.case("dmarc.spoof-own-dkim", "a spoof signed validly by the attacker's own domain: DKIM pass, DMARC fail (§3.1.1)", DMARC, &Signer::new(Key::Ed("dkim/attacker/ed"), "attacker.example.org", "ed").sign(&base)).flags(&["DmarcFail", "DmarcAlignment"]).valid_with(v("pass", &["pass"], "fail", Some("reject"))));
        let lookalike = World::new(OTHER_IP, "x@example.com.attacker.example.org").with([
            rr(
                "example.com.attacker.example.org",
                "TXT",
                "v=spf1 ip4:198.51.100.0/24 -all",
            ),
            rr("_dmarc.example.com", "TXT", "v=DMARC1; p=reject"),
        ]);
        out.push(lookalike.case("dmarc.lookalike-suffix", "MAIL FROM example.com.attacker.example.org merely starts with the From domain: not aligned (§3.1.2)", DMARC, &base).flags(&["DmarcFail", "DmarcAlignment"]).valid_with(v("pass", &[], "fail", Some("reject"))));
    }
    out
}

/// Builds `v1/email-auth.json`.
pub fn build() -> FileBuilder {
    FileBuilder::new(
        "email-auth",
        "SPF, DKIM and DMARC verdicts for inbound mail, which an email bridge records in meta.bridge.auth_results (v1.1 §21.2, §8.1; RFC 7208, RFC 6376, RFC 8463, RFC 8301, RFC 7489). Each test gives the raw message, what the SMTP session saw (client_ip, helo, mail_from) and every DNS record of its world; any other name has no records. The expected verdict: the RFC 7208 SPF result for MAIL FROM (or postmaster@HELO for a null sender), the RFC 6376 result of each DKIM signature (pass, permfail or tempfail; sorted), the RFC 7489 DMARC result for the From domain (pass, fail or none) and the policy that applies to it (p= or sp=; null without a record).",
    )
    .note("SpfPass", "SPF evaluates to pass.", "over-strict SPF evaluation", "Legitimate mail is quarantined or refused.")
    .note("SpfFail", "SPF evaluates to fail, softfail or neutral: the exact word matters (RFC 7208 §2.6).", "lenient or collapsed SPF results", "Forged mail is treated as authorized, or a softfail is treated as a hard fail.")
    .note("SpfNone", "No SPF record applies.", "treating a non-SPF TXT record as policy", "Mail is judged by a record that was never an SPF policy.")
    .note("SpfPermError", "The record cannot be evaluated: syntax error, missing include target, too many lookups.", "lenient SPF parser", "A broken record silently authorizes or blocks mail; lookup limits exist to stop DNS amplification.")
    .note("SpfMacro", "The record uses RFC 7208 §7 macros.", "missing or wrong macro expansion", "Per-address or per-user SPF policies are evaluated against the wrong names.")
    .note("SpfLimits", "The §4.6.4 DNS lookup and void-lookup limits.", "unbounded DNS work", "A crafted record makes the bridge issue unbounded DNS queries (amplification, slow mail).")
    .note("DkimPass", "A signature that verifies.", "over-strict DKIM verifier", "Signed mail is treated as unauthenticated.")
    .note("DkimTampered", "The message or the signature changed after signing.", "missing hash or signature check", "Altered mail keeps its sender's authentication: the classic DKIM replay-and-edit spoof.")
    .note("DkimCanonicalization", "Canonicalization details (RFC 6376 §3.4): what relaxed tolerates and simple does not.", "wrong canonicalization", "Mail that relays re-wrapped fails, or edits that must break a simple signature pass.")
    .note("DkimHeaderSelection", "Which header instances h= selects (§5.4.2): bottom-up, absent instances hash as empty.", "wrong header selection", "An attacker adds a second Subject or From that the reader sees but the signature never covered.")
    .note("DkimMalformed", "A signature whose tags break §3.5 or §6.1.1 (From not signed, missing tags, i= outside d=, wrong version).", "lenient signature parser", "Signatures that prove nothing about the author are counted as passes.")
    .note("DkimKey", "The key record (§3.6.1): missing, revoked, wrong type, hash not allowed, t=s.", "lenient key handling", "Revoked or mismatched keys keep authenticating mail.")
    .note("DkimAlgorithm", "Algorithms a verifier must refuse (RFC 8301, unknown a=, a= not matching the key).", "algorithm confusion", "Weak or mismatched algorithms authenticate mail.")
    .note("DkimIdentity", "The agent or user identifier i= and its relation to d= and t=s.", "missing AUID check", "A signature claims an identity outside the signing domain.")
    .note("DkimExpiry", "The x= expiration tag.", "missing expiry check", "Old signed mail is replayed as fresh.")
    .note("DkimBodyLength", "The l= body-length tag.", "wrong l= handling", "Content appended after the signed length is presented as authenticated (§8.2), or valid limited signatures fail.")
    .note("DkimMultiple", "More than one signature: each gets its own result.", "first-signature-only verification", "One broken signature hides a good one, or one good signature is reported for a broken one.")
    .note("DkimNone", "An unsigned message.", "phantom results", "Unsigned mail is reported as signed.")
    .note("DmarcPass", "SPF or DKIM passes for an identifier aligned with the From domain.", "over-strict alignment", "Legitimate mail is refused under p=reject.")
    .note("DmarcFail", "No aligned pass: DMARC fails and the record's policy applies.", "missing alignment check", "Spoofed mail From a p=reject domain is delivered as authenticated: the attack DMARC exists to stop.")
    .note("DmarcNone", "No DMARC record applies (absent, not DMARC1, invalid p= without rua).", "phantom policy", "Mail is refused or quarantined under a policy the domain never published.")
    .note("DmarcAlignment", "Relaxed and strict identifier alignment (§3.1).", "wrong alignment rule", "Subdomain or lookalike domains authenticate mail for the parent, or strict policies are ignored.")
    .note("DmarcSubdomain", "A From subdomain without its own record: the organizational domain's sp= (or p=) applies.", "wrong policy discovery", "Mail from subdomains escapes the parent domain's policy.")
    .note("Interpretation", "RFC 6376 leaves this to the verifier: x= says verifiers MAY consider expired signatures invalid, and §8.2 lets a verifier ignore signatures that use l= (content after the signed length would otherwise pass as authenticated). These tests pin the safe reading — not a pass — and their comments say so; a bridge exists to stop spoofed mail becoming signed-looking envelopes.", "divergent reading", "An implementation that reads the MAY the other way accepts expired signatures or mail with unsigned appended content.")
    .group("email-auth", Value::Null)
    .tests(spf_cases())
    .tests(dkim_cases())
    .tests(dmarc_cases())
}

/// The schema of `v1/email-auth.json`.
pub fn schema() -> AreaSchema {
    let word = |words: &[&str]| json!({"enum": words});
    AreaSchema {
        kinds: vec!["email-auth"],
        inputs: vec![
            ("message", string()),
            ("client_ip", string()),
            ("helo", string()),
            ("mail_from", string()),
            (
                "dns",
                json!({"type": "array", "items": {
                    "type": "object", "additionalProperties": false,
                    "required": ["name", "type", "value"],
                    "properties": {
                        "name": string(),
                        "type": {"enum": ["TXT", "A", "AAAA", "MX", "PTR"]},
                        "value": string()
                    }
                }}),
            ),
        ],
        required: vec!["message", "client_ip", "helo", "mail_from", "dns"],
        expected: json!({
            "type": "object", "additionalProperties": false,
            "required": ["spf", "dkim", "dmarc", "dmarc_policy"],
            "properties": {
                "spf": word(&["pass", "fail", "softfail", "neutral", "none", "temperror", "permerror"]),
                "dkim": {"type": "array", "items": word(&["pass", "permfail", "tempfail"])},
                "dmarc": word(&["pass", "fail", "none", "temperror", "permerror"]),
                "dmarc_policy": {"enum": ["none", "quarantine", "reject", null]}
            }
        }),
        errors: vec![],
    }
}
