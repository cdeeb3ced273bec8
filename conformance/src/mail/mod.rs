//! Level 3: the harness's side of the email bridge (DESIGN.md §5 "an SMTP source and SMTP
//! sink for the bridge"). The harness plays the outside mail world:
//!
//! - a **source** that sends crafted mail to the target's SMTP port (RFC 5321, through
//!   loom-bridge's client) from three test domains whose DNS the target is given:
//!   [`GOOD`] (SPF allows the harness's address, DKIM keys for rsa-sha256 and
//!   ed25519-sha256, DMARC `p=reject`), [`FORGED`] (the same keys and DMARC, but SPF `-all`)
//!   and [`BARE`] (no records at all);
//! - a **sink**: an SMTP server the target relays its outbound mail to, recording every
//!   transaction, refusing recipients whose local part starts with `refused-` (`550 5.1.1`);
//! - the **records** the target needs, served by the harness's own DNS responder
//!   ([`MailWorld::serve_dns`]; the embedded node resolves through it, a target of the user's
//!   when the profile's `[bridge]` gives `dns_listen` and its resolver points there) and
//!   printed for an operator who would rather preload them; the profile's `[bridge]` section
//!   says where the sink and the target's SMTP are.
//!
//! Mail is parsed with `mail-parser` and DKIM verified with `mail-auth` (both third-party);
//! the SMTP client and server are transport, like `loom-client` for HTTP.

pub mod profile;

use crate::ctx::{Ctx, Ident};
use crate::finding::{Ex, Finding};
use loom_bridge::auth::Record;
use loom_bridge::auth::zone::{Zone, ZoneServer};
use loom_bridge::outbound::Dkim;
use loom_bridge::smtp::client::{self, RecipientOutcome};
use loom_bridge::smtp::server::{ServerConfig, serve_tcp};
use loom_bridge::smtp::session::{SessionConfig, SessionLimits};
use loom_client::Transcript;
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The harness's authenticated mail domain: SPF allows the harness, DKIM keys, DMARC reject.
pub const GOOD: &str = "mail-harness.test";
/// A domain with the same DKIM keys and DMARC policy whose SPF authorizes no one.
pub const FORGED: &str = "forged-harness.test";
/// A domain with no records at all (no SPF, DKIM or DMARC to pass or to fail).
pub const BARE: &str = "bare-harness.test";
/// The rsa-sha256 selector.
pub const RSA_SELECTOR: &str = "h1";
/// The ed25519-sha256 selector (RFC 8463).
pub const ED_SELECTOR: &str = "h2";
/// The sink refuses recipients whose local part starts with this (`550 5.1.1`).
pub const REFUSED_PREFIX: &str = "refused-";

const RSA_PEM: &str = include_str!("../../data/harness-dkim-rsa.pem");
const ED_SEED: [u8; 32] = *b"loom-conformance-harness-dkim-ed";

/// A DKIM algorithm the harness signs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// rsa-sha256 (RFC 6376), the one every verifier knows.
    Rsa,
    /// ed25519-sha256 (RFC 8463).
    Ed25519,
}

pub use loom_bridge::smtp::sink::{Arrived, RecordingSink as Sink};

/// The message of `a` parsed (`None`: not RFC 5322).
pub fn parsed(a: &Arrived) -> Option<mail_parser::Message<'_>> {
    mail_parser::MessageParser::default().parse(&a.tx.data)
}

/// The harness's mail world for one run.
#[derive(Debug)]
pub struct MailWorld {
    /// The target's SMTP address (set once the target is up).
    smtp: OnceLock<SocketAddr>,
    /// The target's mail domain (`alice@{mail_domain}` reaches `loom://alice@{domain}`).
    pub mail_domain: OnceLock<String>,
    /// The address the target sees the harness connect from (SPF for [`GOOD`]).
    pub harness_ip: IpAddr,
    /// The sink.
    pub sink: Arc<Sink>,
    /// Where the sink listens.
    pub sink_addr: SocketAddr,
    /// The target's DKIM records (`name`, TXT), to verify its outbound mail with.
    pub target_dkim: OnceLock<Vec<(String, String)>>,
    /// How long outbound mail may take to arrive (before the timeout scale).
    pub wait: Duration,
    /// The harness's DNS responder serving [`MailWorld::records`], when one runs.
    zone: OnceLock<ZoneServer>,
}

impl MailWorld {
    /// Starts the sink on `sink_listen`; the target's SMTP address comes later
    /// ([`MailWorld::set_target`]).
    pub async fn start(
        sink_listen: SocketAddr,
        harness_ip: IpAddr,
        wait: Duration,
    ) -> Result<Arc<MailWorld>, String> {
        let listener = tokio::net::TcpListener::bind(sink_listen)
            .await
            .map_err(|e| format!("cannot listen for the SMTP sink on {sink_listen}: {e}"))?;
        let sink_addr = listener
            .local_addr()
            .map_err(|e| format!("the SMTP sink's address: {e}"))?;
        let sink = Arc::new(Sink::refusing(REFUSED_PREFIX));
        let config = Arc::new(ServerConfig::new(SessionConfig {
            hostname: format!("sink.{GOOD}"),
            limits: SessionLimits::default(),
            starttls: false,
            require_tls: false,
        }));
        tokio::spawn(serve_tcp(listener, config, None, sink.clone()));
        Ok(Arc::new(MailWorld {
            smtp: OnceLock::new(),
            mail_domain: OnceLock::new(),
            harness_ip,
            sink,
            sink_addr,
            target_dkim: OnceLock::new(),
            wait,
            zone: OnceLock::new(),
        }))
    }

    /// The embedded node's mail world: the sink on loopback, and `config` given a
    /// `[bridge]` that relays to it and knows the harness's records.
    pub async fn embedded(config: &mut loom_node::NodeConfig) -> Result<Arc<MailWorld>, String> {
        let loopback = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
        let world = MailWorld::start(
            SocketAddr::new(loopback, 0),
            loopback,
            Duration::from_secs(10),
        )
        .await?;
        let mut b = loom_node::config::BridgeConfig::new(SocketAddr::new(loopback, 0));
        b.smarthost = Some(world.sink_addr.to_string());
        // The node resolves the harness's records over DNS, as a target of the user's does.
        b.dns_server = Some(world.serve_dns(SocketAddr::new(loopback, 0))?);
        b.retry_base_secs = 1;
        b.max_attempts = 2;
        config.bridge = Some(b);
        Ok(world)
    }

    /// A target of the user's (profile `[bridge]`): the sink on `sink_listen`; the target's
    /// SMTP address resolved now.
    pub async fn external(section: &profile::BridgeSection) -> Result<Arc<MailWorld>, String> {
        if !(section.wait_secs.is_finite() && (0.1..=3600.0).contains(&section.wait_secs)) {
            return Err(format!(
                "bridge.wait_secs must be between 0.1 and 3600, not {}",
                section.wait_secs
            ));
        }
        let world = MailWorld::start(
            section.sink_listen,
            section.harness_ip,
            Duration::from_secs_f64(section.wait_secs),
        )
        .await?;
        let smtp = tokio::net::lookup_host(section.smtp.as_str())
            .await
            .map_err(|e| format!("bridge.smtp {:?}: {e}", section.smtp))?
            .next()
            .ok_or_else(|| format!("bridge.smtp {:?} resolves to no address", section.smtp))?;
        let _ = world.smtp.set(smtp);
        if let Some(at) = section.dns_listen {
            world.serve_dns(at)?;
        }
        Ok(world)
    }

    /// Serves [`MailWorld::records`] on `at` (UDP, authoritative; every other name NXDOMAIN)
    /// for the rest of the run; returns the bound address.
    pub fn serve_dns(&self, at: SocketAddr) -> Result<SocketAddr, String> {
        let zone = Zone::new(&self.records()).map_err(|e| e.to_string())?;
        let server = ZoneServer::start(zone, at)
            .map_err(|e| format!("cannot serve the harness's DNS records on {at}: {e}"))?;
        let addr = server.addr();
        self.zone
            .set(server)
            .map_err(|_| "the harness's DNS responder already runs".to_string())?;
        Ok(addr)
    }

    /// Where the harness's DNS responder answers, when it runs.
    pub fn dns(&self) -> Option<SocketAddr> {
        self.zone.get().map(ZoneServer::addr)
    }

    /// The target is up: its SMTP address (when not known yet), mail domain and DKIM
    /// records — from the profile's `[bridge]` section when it names them, else from the
    /// target's capabilities (`/bridge/mail_domain`, `/bridge/dkim` `{name, record}`), else
    /// the target's domain and no records.
    pub fn learn(
        &self,
        target: &crate::target::TargetInfo,
        smtp: Option<SocketAddr>,
        section: Option<&profile::BridgeSection>,
    ) {
        if let Some(a) = smtp {
            let _ = self.smtp.set(a);
        }
        let domain = section
            .and_then(|s| s.mail_domain.clone())
            .or_else(|| {
                target
                    .capability("/bridge/mail_domain")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| target.domain.clone());
        let _ = self.mail_domain.set(domain.to_ascii_lowercase());
        let mut dkim: Vec<(String, String)> = section
            .map(|s| s.dkim.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        if dkim.is_empty() {
            let one = |v: &Value| {
                Some((
                    v.get("name")?.as_str()?.to_owned(),
                    v.get("record")?.as_str()?.to_owned(),
                ))
            };
            match target.capability("/bridge/dkim") {
                Some(Value::Array(a)) => dkim.extend(a.iter().filter_map(one)),
                Some(v) => dkim.extend(one(v)),
                None => {}
            }
        }
        let _ = self.target_dkim.set(dkim);
    }

    /// The target's SMTP address.
    pub fn smtp(&self) -> Result<SocketAddr, Finding> {
        self.smtp
            .get()
            .copied()
            .ok_or_else(|| Finding::Error("the target's SMTP address is not known".into()))
    }

    /// The target's mail domain.
    pub fn mail_domain(&self) -> &str {
        self.mail_domain.get().map_or("", String::as_str)
    }

    /// The DNS records the target must see for the harness's domains.
    pub fn records(&self) -> Vec<Record> {
        let txt = |name: String, value: String| Record {
            name,
            kind: "TXT".into(),
            value,
        };
        let ip = match self.harness_ip {
            IpAddr::V4(v4) => format!("ip4:{v4}"),
            IpAddr::V6(v6) => format!("ip6:{v6}"),
        };
        let mut out = vec![
            txt(GOOD.into(), format!("v=spf1 {ip} -all")),
            txt(FORGED.into(), "v=spf1 -all".into()),
        ];
        for domain in [GOOD, FORGED] {
            for algorithm in [Algorithm::Rsa, Algorithm::Ed25519] {
                let d = signer(domain, algorithm);
                out.push(txt(d.dns_name(), d.dns_record().to_string()));
            }
            out.push(txt(format!("_dmarc.{domain}"), "v=DMARC1; p=reject".into()));
        }
        out
    }
}

/// The harness's DKIM signer for `domain`.
pub fn signer(domain: &str, algorithm: Algorithm) -> Dkim {
    let made = match algorithm {
        Algorithm::Rsa => Dkim::rsa_pem(domain, RSA_SELECTOR, RSA_PEM),
        Algorithm::Ed25519 => Dkim::ed25519(domain, ED_SELECTOR, &ED_SEED),
    };
    made.unwrap_or_else(|e| unreachable!("the harness's own DKIM key does not load: {e}"))
}

/// `raw` DKIM-signed for `domain`.
pub fn sign(raw: Vec<u8>, domain: &str, algorithm: Algorithm) -> Vec<u8> {
    let d = signer(domain, algorithm);
    d.sign(raw.clone()).unwrap_or(raw)
}

/// A plain-text message, CRLF line ends, with the given extra headers after the standard ones.
pub fn message(
    from: &str,
    to: &str,
    message_id: &str,
    subject: &str,
    body: &str,
    extra: &[(&str, &str)],
) -> Vec<u8> {
    let mut m = format!(
        "From: Harness Sender <{from}>\r\nTo: {to}\r\nSubject: {subject}\r\n\
Message-ID: <{message_id}>\r\nDate: Sun, 29 Nov 2026 08:00:00 +0000\r\nMIME-Version: 1.0\r\n"
    );
    for (name, value) in extra {
        m.push_str(&format!("{name}: {value}\r\n"));
    }
    m.push_str(
        "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n",
    );
    for line in body.lines() {
        m.push_str(line);
        m.push_str("\r\n");
    }
    m.into_bytes()
}

/// What the target answered one SMTP transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// 250 after DATA.
    Accepted,
    /// Refused (RCPT or DATA), with the reply.
    Refused(String),
}

/// Sends `data` from `mail_from` to `rcpt` at the target's SMTP port and records the
/// exchange as a transcript (`SMTP`, the envelope as the path, the DATA reply as the status).
pub async fn submit(
    cx: &mut Ctx,
    world: &MailWorld,
    mail_from: &str,
    rcpt: &str,
    data: &[u8],
) -> Result<(Ex, Submitted), Finding> {
    let addr = world.smtp()?;
    let started = Instant::now();
    let step = Duration::from_secs_f64(30.0 * cx.timeout_scale);
    let stream = tokio::time::timeout(step, tokio::net::TcpStream::connect(addr))
        .await
        .map_err(|_| Finding::Error(format!("SMTP {addr}: connect timed out")))?
        .map_err(|e| Finding::Error(format!("SMTP {addr}: connect: {e}")))?;
    let rcpts = vec![rcpt.to_string()];
    let sent = client::send(
        stream,
        &client::Envelope {
            helo: &format!("source.{GOOD}"),
            mail_from,
            rcpt_to: &rcpts,
            data,
        },
        step,
    )
    .await;
    let (status, reply, outcome) = match sent {
        Ok(outcomes) => match outcomes.into_iter().next().map(|(_, o)| o) {
            Some(RecipientOutcome::Delivered) => {
                (250, "250 accepted".to_string(), Submitted::Accepted)
            }
            Some(RecipientOutcome::Failed(r) | RecipientOutcome::Deferred(r)) => {
                let code = r.get(..3).and_then(|c| c.parse().ok()).unwrap_or(554);
                (code, r.clone(), Submitted::Refused(r))
            }
            None => (
                554,
                "no answer for the recipient".into(),
                Submitted::Refused("no answer".into()),
            ),
        },
        Err(e) => {
            let r = e.to_string();
            let code = match &e {
                client::SendError::Refused(reply) => reply.code,
                _ => 0,
            };
            if code == 0 {
                return Err(Finding::Error(format!("SMTP {addr}: {r}")));
            }
            (code, r.clone(), Submitted::Refused(r))
        }
    };
    let ex = cx.net.record(Transcript {
        method: "SMTP".into(),
        path: format!("MAIL FROM:<{mail_from}> RCPT TO:<{rcpt}> (smtp://{addr})"),
        version: "SMTP".into(),
        request_headers: Vec::new(),
        request_body: data.to_vec(),
        status,
        response_headers: Vec::new(),
        response_body: reply.into_bytes(),
        elapsed: started.elapsed(),
    });
    Ok((ex, outcome))
}

/// The mail address of a target identity (`alice-x@{mail domain}`).
pub fn mail_address(world: &MailWorld, who: &Ident) -> String {
    let local = who.address().trim_start_matches("loom://");
    let local = local.split('@').next().unwrap_or(local);
    format!("{local}@{}", world.mail_domain())
}

/// Waits for an envelope visible to `who` whose text holds `marker`: the threads `who`
/// lists, then their envelopes. `None` when none shows up within the mail wait.
pub async fn find_bridged(
    cx: &mut Ctx,
    world: &MailWorld,
    who: &Ident,
    marker: &str,
) -> Result<Option<Value>, Finding> {
    let deadline = tokio::time::Instant::now() + world.wait.mul_f64(cx.timeout_scale);
    loop {
        if let Some(e) = scan_threads(cx, who, marker).await? {
            return Ok(Some(e));
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn scan_threads(cx: &mut Ctx, who: &Ident, marker: &str) -> Result<Option<Value>, Finding> {
    find_in_threads(cx, who, |e| crate::ctx::shapes::mentions(e, marker)).await
}

/// The first envelope `pick` selects among those `who` can list: the threads of
/// `GET /v1/threads`, then each thread's envelopes.
pub async fn find_in_threads(
    cx: &mut Ctx,
    who: &Ident,
    pick: impl Fn(&Value) -> bool,
) -> Result<Option<Value>, Finding> {
    let i = cx.net.get("/v1/threads", &who.token).await?;
    let body = cx.net.ok_body(i)?;
    let threads = crate::ctx::shapes::list(&body, &["threads"]).unwrap_or_default();
    for t in threads {
        let Some(id) = t
            .get("thread_id")
            .or_else(|| t.get("id"))
            .and_then(Value::as_str)
        else {
            continue;
        };
        let i = cx
            .net
            .get(&format!("/v1/threads/{id}/envelopes"), &who.token)
            .await?;
        if cx.net.status(i) != 200 {
            continue;
        }
        let body = cx.net.transcript(i).json().unwrap_or_default();
        let envelopes = crate::ctx::shapes::list(&body, &["envelopes"]).unwrap_or_default();
        if let Some(e) = envelopes.into_iter().find(|e| pick(e)) {
            return Ok(Some(e));
        }
    }
    Ok(None)
}
