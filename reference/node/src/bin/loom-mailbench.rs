//! `loom-mailbench` — the email bridge's throughput on loopback (issue 32, item 6).
//!
//! One process: a release node with a `[bridge]` (in-memory store by default, `--data DIR`
//! for a durable one), its SMTP listener, a sink standing in for the outside world's MX, and
//! the load. Two phases:
//!
//! - **inbound**: `--connections` SMTP clients send `--messages` DKIM-signed mails (signed
//!   beforehand, so the client's signing is not measured) to registered identities, each
//!   connection many transactions; a message counts when the DATA reply is `250`, which the
//!   node sends after SPF, DKIM and DMARC, the mapping and the envelope's commit. Reported:
//!   messages/s over the phase, latency from `MAIL FROM` to the `250` (p50, p99, max).
//! - **outbound**: `--outbound` envelopes to `bridge://` recipients submitted through the
//!   service; each counts when the sink has it (rendered, DKIM-signed, sent over SMTP).
//!   Reported: messages/s from the first submission to the last arrival, and latency from
//!   submission to arrival.
//!
//! Ratios, not absolutes, compare machines: run it beside a baseline build (`farm-bench`-style
//! alternation) when judging a change.

use clap::Parser;
use loom_bridge::auth::Record;
use loom_bridge::outbound::Dkim;
use loom_bridge::smtp::client::{dot_stuff, read_reply};
use loom_bridge::smtp::server::{ServerConfig, serve_tcp};
use loom_bridge::smtp::session::{SessionConfig, SessionLimits};
use loom_bridge::smtp::sink::RecordingSink;
use loom_node::config::{BridgeConfig, RateLimits};
use loom_node::service::Caller;
use loom_node::service::identity::ChallengeRequest;
use loom_node::{Env, Node, NodeConfig, Storage};
use loom_protocol::keys::{public_key_to_spki_pem, signing_key_from_seed};
use loom_protocol::registration::REGISTER_PURPOSE;
use loom_protocol::registration::{registration_document_hash, registration_text};
use loom_protocol::{Address, KeyId, KeyKind, SystemClock};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Email bridge throughput on loopback: inbound (SMTP → SPF/DKIM/DMARC → envelope
/// committed) and outbound (render → DKIM → SMTP to a sink).
#[derive(Debug, Parser)]
#[command(name = "loom-mailbench", version)]
struct Args {
    /// Inbound messages.
    #[arg(long, default_value_t = 4000)]
    messages: usize,
    /// Concurrent SMTP connections for the inbound phase.
    #[arg(long, default_value_t = 8)]
    connections: usize,
    /// Recipient identities the inbound mail is spread over.
    #[arg(long, default_value_t = 16)]
    recipients: usize,
    /// Outbound messages (0 skips the phase).
    #[arg(long, default_value_t = 1000)]
    outbound: usize,
    /// Sign inbound mail rsa-sha256 (2048-bit) instead of ed25519-sha256.
    #[arg(long)]
    rsa: bool,
    /// A durable store in DIR (default: in memory).
    #[arg(long, value_name = "DIR")]
    data: Option<std::path::PathBuf>,
}

const DOMAIN: &str = "bench.test";
const SENDER_DOMAIN: &str = "sender.test";

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn signer(rsa: bool) -> Dkim {
    if rsa {
        Dkim::rsa_pem(SENDER_DOMAIN, "b1", RSA_PEM).expect("the bench's RSA key")
    } else {
        Dkim::ed25519(SENDER_DOMAIN, "b2", &[5u8; 32]).expect("the bench's Ed25519 key")
    }
}

/// A 2048-bit RSA key made for this benchmark only (`openssl genrsa 2048`).
const RSA_PEM: &str = include_str!("../../../bridge/tests/data/dkim-rsa-test.pem");

async fn register(node: &Node, local: &str, seed: u8) -> Caller {
    let svc = node.service();
    let address = format!("loom://{local}@{DOMAIN}");
    let key = signing_key_from_seed(&[seed; 32]);
    let key_id = format!("k_sign_{local}_1").replace('-', "_");
    let ch = svc
        .issue_challenge(
            REGISTER_PURPOSE,
            &ChallengeRequest {
                identity: address.clone(),
                key_id: key_id.clone(),
            },
        )
        .expect("challenge");
    let mut req = json!({
        "id": address,
        "type": "human",
        "display_name": local,
        "signing_keys": [{"key_id": key_id, "public_key_pem": public_key_to_spki_pem(&key.verifying_key())}],
    });
    let hash = registration_document_hash(&req);
    let text = registration_text(&address, &key_id, &hash, ch["nonce"].as_str().unwrap_or(""));
    use base64::Engine;
    use ed25519_dalek::Signer;
    let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(key.sign(text.as_bytes()).to_bytes());
    req["registration_proof"] =
        json!({"challenge_id": ch["challenge_id"], "key_id": key_id, "signature": sig});
    svc.register_identity(&req).expect("registration");
    Caller {
        identity: Address::parse_wire(&address).expect("address"),
        key_id,
    }
}

/// One client sending `mails` one transaction after another, on a new connection every
/// [`PER_CONNECTION`] messages (the node's per-connection limit is 100); the latency of each.
async fn client(smtp: SocketAddr, mails: Vec<(String, Vec<u8>)>) -> Vec<Duration> {
    let mut latencies = Vec::with_capacity(mails.len());
    let mut mails = mails.into_iter().peekable();
    while mails.peek().is_some() {
        let batch: Vec<(String, Vec<u8>)> = mails.by_ref().take(PER_CONNECTION).collect();
        latencies.extend(connection(smtp, batch).await);
    }
    latencies
}

/// Messages sent on one SMTP connection.
const PER_CONNECTION: usize = 90;

async fn connection(smtp: SocketAddr, mails: Vec<(String, Vec<u8>)>) -> Vec<Duration> {
    let step = Duration::from_secs(30);
    let stream = tokio::net::TcpStream::connect(smtp).await.expect("connect");
    let _ = stream.set_nodelay(true);
    let mut io = BufReader::new(stream);
    read_reply(&mut io, step).await.expect("greeting");
    io.get_mut()
        .write_all(b"EHLO load.sender.test\r\n")
        .await
        .expect("EHLO");
    read_reply(&mut io, step).await.expect("EHLO reply");
    let mut latencies = Vec::with_capacity(mails.len());
    for (rcpt, data) in mails {
        let started = Instant::now();
        let head = format!("MAIL FROM:<load@{SENDER_DOMAIN}>\r\nRCPT TO:<{rcpt}>\r\nDATA\r\n");
        io.get_mut()
            .write_all(head.as_bytes())
            .await
            .expect("write");
        for _ in 0..3 {
            read_reply(&mut io, step).await.expect("reply");
        }
        io.get_mut()
            .write_all(&dot_stuff(&data))
            .await
            .expect("DATA");
        let r = read_reply(&mut io, step).await.expect("DATA reply");
        assert_eq!(r.code, 250, "the node refused a benchmark mail: {r}");
        latencies.push(started.elapsed());
    }
    let _ = io.get_mut().write_all(b"QUIT\r\n").await;
    latencies
}

fn report(name: &str, n: usize, wall: Duration, mut lat: Vec<Duration>) {
    lat.sort();
    println!(
        "{name:<9} {n:>6} msgs  {:>8.0} msgs/s  p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms",
        n as f64 / wall.as_secs_f64(),
        ms(percentile(&lat, 0.50)),
        ms(percentile(&lat, 0.99)),
        ms(lat.last().copied().unwrap_or_default()),
    );
}

fn main() {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(args));
}

async fn run(args: Args) {
    let dkim = signer(args.rsa);
    let sink = Arc::new(RecordingSink::default());
    let sink_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let sink_addr = sink_listener.local_addr().expect("addr");
    let sink_config = Arc::new(ServerConfig::new(SessionConfig {
        hostname: "mx.outside.test".into(),
        limits: SessionLimits::default(),
        starttls: false,
        require_tls: false,
    }));
    tokio::spawn(serve_tcp(sink_listener, sink_config, None, sink.clone()));

    let mut config = NodeConfig {
        domain: DOMAIN.into(),
        storage: args.data.clone().map_or(Storage::Memory, Storage::Dir),
        ..NodeConfig::default()
    };
    config.rate_limits = RateLimits::unlimited();
    let mut bridge = BridgeConfig::new("127.0.0.1:0".parse().expect("addr"));
    bridge.smarthost = Some(sink_addr.to_string());
    bridge.dns_records = vec![
        Record {
            name: SENDER_DOMAIN.into(),
            kind: "TXT".into(),
            value: "v=spf1 ip4:127.0.0.1 -all".into(),
        },
        Record {
            name: dkim.dns_name(),
            kind: "TXT".into(),
            value: dkim.dns_record().into(),
        },
        Record {
            name: format!("_dmarc.{SENDER_DOMAIN}"),
            kind: "TXT".into(),
            value: "v=DMARC1; p=reject".into(),
        },
    ];
    config.bridge = Some(bridge);
    let node = Node::builder(config, Env::new(Arc::new(SystemClock), 42))
        .build()
        .expect("node");
    let smtp_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let smtp = smtp_listener.local_addr().expect("addr");
    let n = node.clone();
    tokio::spawn(async move { n.serve_smtp(smtp_listener, None).await });
    tokio::spawn(loom_node::service::bridge::outbound::run_worker(
        node.service().clone(),
    ));

    let mut recipients = Vec::new();
    for i in 0..args.recipients.max(1) {
        let local = format!("r{i}");
        recipients.push(register(&node, &local, (i % 250) as u8 + 1).await);
    }
    println!(
        "loom-mailbench: {} inbound over {} connections to {} recipients (DKIM {}), {} outbound; store {}",
        args.messages,
        args.connections,
        recipients.len(),
        if args.rsa {
            "rsa-sha256"
        } else {
            "ed25519-sha256"
        },
        args.outbound,
        if args.data.is_some() {
            "durable"
        } else {
            "in memory"
        }
    );

    // Inbound: signed beforehand.
    let mut per_conn: Vec<Vec<(String, Vec<u8>)>> = vec![Vec::new(); args.connections.max(1)];
    for i in 0..args.messages {
        let rcpt = format!("r{}@{DOMAIN}", i % recipients.len());
        let raw = format!(
            "From: Load <load@{SENDER_DOMAIN}>\r\nTo: {rcpt}\r\nSubject: load {i}\r\nMessage-ID: <m{i}@{SENDER_DOMAIN}>\r\nDate: Sun, 29 Nov 2026 08:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nMessage {i} of the mail benchmark.\r\nA second line.\r\n"
        );
        let signed = dkim.sign(raw.into_bytes()).expect("DKIM");
        let c = i % per_conn.len();
        per_conn[c].push((rcpt, signed));
    }
    let started = Instant::now();
    let tasks: Vec<_> = per_conn
        .into_iter()
        .map(|mails| tokio::spawn(client(smtp, mails)))
        .collect();
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.expect("client task"));
    }
    let wall = started.elapsed();
    report("inbound", lat.len(), wall, lat);

    // Outbound.
    if args.outbound > 0 {
        let sender = recipients[0].clone();
        let key = signing_key_from_seed(&[1u8; 32]);
        let kid = KeyId::parse(&sender.key_id, KeyKind::Signing).expect("key id");
        let svc = node.service().clone();
        let mut submitted = std::collections::BTreeMap::new();
        let started = Instant::now();
        for i in 0..args.outbound {
            let id = svc.env.ids().envelope().to_string();
            let mut env = json!({
                "loom": "1.1",
                "id": id,
                "thread_id": svc.env.ids().thread().to_string(),
                "parent_id": null,
                "type": "message",
                "from": {"identity": sender.identity.to_string(), "display": "Bench", "key_id": sender.key_id, "type": "human"},
                "to": [{"identity": format!("bridge://out{i}@outside.test"), "role": "primary"}],
                "created_at": svc.env.now().to_rfc3339(),
                "priority": "normal",
                "content": {"human": {"text": format!("Outbound **{i}**."), "format": "markdown"}, "encrypted": false},
                "attachments": [],
            });
            loom_protocol::envelope::sign::sign_envelope(&mut env, &key, &kid).expect("sign");
            submitted.insert(id, Instant::now());
            svc.submit_envelope(&sender, env).await.expect("submit");
        }
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let got = sink.arrived().len();
            if got >= args.outbound || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let arrived = sink.arrived();
        let last = arrived.iter().map(|a| a.at).max().unwrap_or(started);
        let lat: Vec<Duration> = arrived
            .iter()
            .filter_map(|a| {
                let id = a.header("X-LOOM-Envelope-ID")?;
                submitted.get(&id).map(|s| a.at.duration_since(*s))
            })
            .collect();
        report("outbound", arrived.len(), last.duration_since(started), lat);
    }
}
