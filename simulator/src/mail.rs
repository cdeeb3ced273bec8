//! The email scenario (`[mail]`, issue 32 Build 4): one node runs the bridge (v1.1 §21) and
//! the outside world is two turmoil hosts — `mta.example.net`, which sends the bridge's users
//! mail (authentic, forged and from unknown domains) over SMTP and, as a LOOM user of the
//! bridge node, sends envelopes to mail recipients; and `mx.example.net`, the mail exchanger
//! the bridge relays outbound mail to (a server host: it keeps receiving while the world
//! settles). What both saw goes into the run's record ([`crate::trace::MailRecord`]); the invariants
//! `mail-in-once` and `mail-out-once-or-failed` compare it with the bridge node's store.
//!
//! Authentication is real: `example.net` publishes SPF for the MTA's simulated address and
//! DMARC `p=reject`; forged mail claims `example.net` from another domain; unknown mail comes
//! from a domain with no records. Every name the bridge looks up is preloaded or a TXT miss,
//! so no lookup leaves the simulation.

use crate::clock::SkewClock;
use crate::scenario::Mail;
use crate::trace::{Ack, MailArrived, MailIn, MailKind, MailOutcome, Shared};
use crate::workload::{User, sign_up, status_of};
use loom_bridge::smtp::client::{self, RecipientOutcome, SendError};
use loom_bridge::smtp::server::{self, Handler, ServerConfig};
use loom_bridge::smtp::session::{
    RecipientVerdict, Recipients, SessionConfig, SessionLimits, Transaction, Verdict,
};
use loom_client::{Client, EnvelopeFactory, MessageDraft, SimDial};
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use serde_json::json;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// The outside mail exchanger (receives the bridge's outbound mail).
pub const MX: &str = "mx.example.net";
/// The outside mail sender (and a LOOM user of the bridge node).
pub const MTA: &str = "mta.example.net";
/// Both outside hosts (link faults may name them).
pub const HOSTS: [&str; 2] = [MX, MTA];
/// SMTP's port, on the bridge node and on the exchanger.
pub const SMTP_PORT: u16 = 25;
/// The outside domain: SPF for the MTA, DMARC `p=reject`.
pub const SENDER_DOMAIN: &str = "example.net";
/// Outbound recipients with this prefix are refused `550` by the exchanger.
pub const REFUSED_PREFIX: &str = "refused-";
/// One SMTP exchange's timeout on the outside host.
const SMTP_STEP: Duration = Duration::from_secs(30);

/// The bridge node's `[bridge]` section: relay through [`MX`], `example.net`'s records with
/// the MTA's simulated address.
pub fn bridge_config(m: &Mail, domain: &str, mta_ip: IpAddr) -> loom_node::config::BridgeConfig {
    let record = |name: &str, value: String| loom_bridge::auth::Record {
        name: name.into(),
        kind: "TXT".into(),
        value,
    };
    loom_node::config::BridgeConfig {
        listen: SocketAddr::from(([0, 0, 0, 0], SMTP_PORT)),
        domain: Some(domain.into()),
        hostname: Some(format!("mail.{domain}")),
        smarthost: Some(format!("{MX}:{SMTP_PORT}")),
        dkim_selector: "loom".into(),
        dkim_key: None,
        dns_server: None,
        dns_records: vec![
            record(SENDER_DOMAIN, format!("v=spf1 ip4:{mta_ip} -all")),
            record(
                &format!("_dmarc.{SENDER_DOMAIN}"),
                "v=DMARC1; p=reject".into(),
            ),
        ],
        policy: loom_bridge::auth::AuthPolicy::default(),
        require_tls: false,
        max_message_bytes: 1024 * 1024,
        max_recipients: 10,
        auto_actuation: false,
        max_attempts: m.max_attempts,
        retry_base_secs: m.retry_base_secs,
    }
}

/// Serves SMTP for a node on its turmoil address (the node's handler).
pub async fn serve_node_smtp(node: &loom_node::Node) -> std::io::Result<()> {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", SMTP_PORT)).await?;
    node.serve_smtp(listener, None).await
}

/// The exchanger's handler: records every message it accepts.
struct Sink {
    shared: Shared,
}

impl Recipients for Sink {
    fn check(&self, address: &str) -> RecipientVerdict {
        if address.starts_with(REFUSED_PREFIX) {
            RecipientVerdict::Unknown
        } else {
            RecipientVerdict::Accept
        }
    }
}

impl Handler for Sink {
    fn deliver(
        &self,
        _: SocketAddr,
        tx: Transaction,
    ) -> Pin<Box<dyn Future<Output = Verdict> + Send + '_>> {
        Box::pin(async move {
            let parsed = mail_parser::MessageParser::default().parse(&tx.data);
            let header = |n: &str| {
                parsed
                    .as_ref()
                    .and_then(|m| m.header_raw(n))
                    .map(|v| v.trim().trim_matches(['<', '>']).to_owned())
                    .unwrap_or_default()
            };
            let (message_id, envelope_id) = (header("Message-ID"), header("X-LOOM-Envelope-ID"));
            let mut rec = self.shared.lock();
            for rcpt in &tx.rcpt_to {
                rec.line(
                    "mail.arrived",
                    json!({"rcpt": rcpt, "message_id": message_id, "envelope": envelope_id}),
                );
                rec.mail.arrived.push(MailArrived {
                    rcpt: rcpt.clone(),
                    message_id: message_id.clone(),
                    envelope_id: envelope_id.clone(),
                });
            }
            Verdict::accepted("queued")
        })
    }
}

/// The exchanger host: serves SMTP until the simulation ends (restarted if it is bounced).
pub async fn run_mx(shared: Shared) -> turmoil::Result {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", SMTP_PORT)).await?;
    let session = SessionConfig {
        hostname: MX.into(),
        limits: SessionLimits::default(),
        starttls: false,
        require_tls: false,
    };
    server::serve(
        loom_node::net::SmtpListener(listener),
        Arc::new(ServerConfig::new(session)),
        None,
        Arc::new(Sink { shared }),
    )
    .await?;
    Ok(())
}

/// What the sending host needs.
#[derive(Debug, Clone)]
pub struct MtaPlan {
    /// The bridge node's domain (its SMTP host name too).
    pub domain: String,
    /// The bridge node's HTTP base URL.
    pub url: String,
    /// The node's users (inbound mail goes to them).
    pub users: Vec<String>,
    /// The run seed (identities derive from it).
    pub seed: u64,
    /// This host's sub-seed.
    pub rng_seed: u64,
    /// `[mail]`.
    pub mail: Mail,
    /// Simulated seconds of setup.
    pub setup_secs: u64,
    /// The node's clock (the mailer user signs envelopes with it).
    pub clock: SkewClock,
    /// The run's record.
    pub shared: Shared,
}

fn uniform(rng: &mut ChaCha20Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// The email address of a `loom://` user of the bridge node (its mail domain is its domain).
fn email(address: &str) -> String {
    address.trim_start_matches("loom://").to_owned()
}

/// The sending host: inbound mail and outbound envelopes in a seeded order.
pub async fn run_mta(plan: MtaPlan) -> Result<(), Box<dyn std::error::Error>> {
    let m = &plan.mail;
    let mut rng = ChaCha20Rng::seed_from_u64(plan.rng_seed);
    let mut factory = EnvelopeFactory::new(plan.clock.clone(), plan.rng_seed);
    let mailer = format!("loom://mailer@{}", plan.domain);
    let User { id, mut client } = sign_up(&plan.url, plan.seed, &mailer, MTA, &plan.shared).await?;
    let setup = Duration::from_secs(plan.setup_secs);
    let elapsed = turmoil::sim_elapsed().unwrap_or_default();
    if elapsed < setup {
        tokio::time::sleep(setup - elapsed).await;
    }
    let (mut left_in, mut left_out) = (m.inbound, m.outbound);
    while left_in + left_out > 0 {
        let gap = rng.next_u64() % (2 * m.mean_gap_ms + 1);
        tokio::time::sleep(Duration::from_millis(gap)).await;
        let share_in = left_in as f64 / (left_in + left_out) as f64;
        let draw = uniform(&mut rng);
        let pick = rng.next_u64();
        if draw < share_in {
            let n = m.inbound - left_in;
            left_in -= 1;
            let kind = uniform(&mut rng);
            let kind = if kind < m.forged_ratio {
                MailKind::Forged
            } else if kind < m.forged_ratio + m.unknown_ratio {
                MailKind::Unknown
            } else {
                MailKind::Authentic
            };
            send_in(&plan, n, kind, pick).await;
        } else {
            let n = m.outbound - left_out;
            left_out -= 1;
            let refused = uniform(&mut rng) < m.refused_ratio;
            send_out(&plan, &id, &mut client, &mut factory, n, refused, pick).await?;
        }
    }
    Ok(())
}

/// One inbound message, sent until the bridge answers it for good (`250` or `5xx`) or the
/// attempts run out, waiting 2, 4, 8 … s between attempts as an MTA would.
async fn send_in(plan: &MtaPlan, n: usize, kind: MailKind, pick: u64) {
    let users = &plan.users;
    let first = usize::try_from(pick % users.len().max(1) as u64).unwrap_or(0);
    let mut to = vec![users[first].clone()];
    if pick & 0x100 != 0 && users.len() > 1 {
        to.push(users[(first + 1) % users.len()].clone());
    }
    let message_id = format!("in-{n}.{}@{SENDER_DOMAIN}", plan.seed);
    let (from, mail_from) = match kind {
        MailKind::Authentic => ("Alice <alice@example.net>", "alice@example.net"),
        MailKind::Forged => ("CEO <ceo@example.net>", "billing@forger.example"),
        MailKind::Unknown => (
            "Stranger <someone@unknown.example>",
            "someone@unknown.example",
        ),
    };
    let rcpt: Vec<String> = to.iter().map(|a| email(a)).collect();
    let data = format!(
        "From: {from}\r\nTo: {}\r\nSubject: mail {n}\r\nDate: Sun, 01 Mar 2026 12:00:00 +0000\r\nMessage-ID: <{message_id}>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nMessage number {n}.\r\n",
        rcpt.join(", ")
    );
    let mut outcome = MailOutcome::GaveUp;
    let mut attempts = 0;
    while attempts < plan.mail.send_attempts {
        if attempts > 0 {
            tokio::time::sleep(Duration::from_secs(1 << attempts.min(8))).await;
        }
        attempts += 1;
        let answer = match turmoil::net::TcpStream::connect((plan.domain.as_str(), SMTP_PORT)).await
        {
            Ok(stream) => {
                let envelope = client::Envelope {
                    helo: MTA,
                    mail_from,
                    rcpt_to: &rcpt,
                    data: data.as_bytes(),
                };
                client::send(stream, &envelope, SMTP_STEP).await
            }
            Err(e) => Err(SendError::Io(e)),
        };
        let verdict = match &answer {
            Ok(per) if per.iter().all(|(_, o)| *o == RecipientOutcome::Delivered) => {
                Some(MailOutcome::Accepted)
            }
            Ok(per) => per.iter().find_map(|(_, o)| match o {
                RecipientOutcome::Failed(reply) => Some(MailOutcome::Refused(reply.clone())),
                _ => None,
            }),
            Err(SendError::Refused(reply)) if reply.code >= 500 => Some(MailOutcome::Refused(
                format!("{} {}", reply.code, reply.lines.join(" ")),
            )),
            Err(_) => None,
        };
        plan.shared.lock().line(
            "mail.sent",
            json!({"message_id": message_id, "mail": format!("{kind:?}"), "attempt": attempts,
                   "answer": match &answer { Ok(per) => format!("{per:?}"), Err(e) => e.to_string() }}),
        );
        if let Some(v) = verdict {
            outcome = v;
            break;
        }
    }
    plan.shared.lock().mail.sent.push(MailIn {
        message_id,
        kind,
        to,
        outcome,
        attempts,
    });
}

/// One envelope from the mailer to one or two mail recipients (some refused by the
/// exchanger), acknowledged like every workload envelope.
async fn send_out(
    plan: &MtaPlan,
    id: &loom_client::Identity,
    client: &mut Client<SimDial>,
    factory: &mut EnvelopeFactory<SkewClock>,
    n: usize,
    refused: bool,
    pick: u64,
) -> Result<(), Box<dyn std::error::Error>> {
    let prefix = if refused { REFUSED_PREFIX } else { "" };
    let mut to = vec![format!("bridge://{prefix}r{n}@{SENDER_DOMAIN}")];
    if pick & 1 == 1 {
        to.push(format!("bridge://cc{n}@{SENDER_DOMAIN}"));
    }
    let draft = MessageDraft {
        thread_id: None,
        parent_id: None,
        to: to.clone(),
        text: format!("Outbound number {n}."),
    };
    let env = factory.message(id, &draft)?;
    let sent = client.send_envelope(&env).await;
    let (status, digest) = status_of(&sent);
    let envelope = env["id"].as_str().unwrap_or_default().to_owned();
    let mut rec = plan.shared.lock();
    rec.line(
        "http",
        json!({"client": MTA, "user": id.address(), "op": "send", "envelope": envelope,
               "to": to, "status": status, "body": digest}),
    );
    if sent.is_ok() {
        rec.acks.push(Ack {
            node: plan.domain.clone(),
            id: envelope,
            thread: env["thread_id"].as_str().unwrap_or_default().to_owned(),
            parent: None,
            sender: id.address().to_owned(),
            to,
            kind: "message".into(),
        });
    }
    Ok(())
}
