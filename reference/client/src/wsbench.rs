//! Real-time fan-out (issue 34, item 7): `clients` WebSocket connections to one node, spread
//! over `identities` users who all take part in one thread; one sender posts `messages`
//! envelopes to that thread, one at a time, and every connection must receive each as
//! `envelope.new` (v1.1 §17). Reported: connections opened and the time it took, events
//! fanned out per second (deliveries over the span from the first post to the last
//! delivery), and delivery latency (post sent → frame read by a client: p50, p99, max).
//!
//! The clients and the node share the machine; run the node as its own process so each has
//! its own descriptor limit (10,000 connections need 10,000 on each side).

use crate::load::{Latency, percentiles};
use crate::ws::{self, Frame, TokenIn};
use crate::{Client, ClientError, EnvelopeFactory, Identity, MessageDraft, TokioDial};
use loom_protocol::clock::Clock;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// What to run.
#[derive(Debug, Clone)]
pub struct WsBenchConfig {
    /// The node's base URL.
    pub url: String,
    /// The node's domain.
    pub domain: String,
    /// WebSocket connections.
    pub clients: usize,
    /// Users the connections are spread over (all in the thread; at most the node's
    /// recipients-per-envelope limit).
    pub identities: usize,
    /// Envelopes posted (each fans out to every connection).
    pub messages: usize,
    /// Connections opened at once.
    pub connect_concurrency: usize,
    /// Seed for keys and ids.
    pub seed: u64,
    /// Longest wait for the last delivery of one message.
    pub timeout: Duration,
}

/// The result.
#[derive(Debug, Clone)]
pub struct WsBenchReport {
    /// Connections open when posting began.
    pub connected: usize,
    /// Seconds to open them.
    pub connect_secs: f64,
    /// Deliveries expected (`connected × messages`).
    pub expected: usize,
    /// Deliveries that arrived.
    pub delivered: usize,
    /// Seconds from the first post to the last delivery.
    pub span_secs: f64,
    /// Deliveries per second over that span.
    pub per_sec: f64,
    /// Post sent → frame read, ms.
    pub latency: Latency,
}

fn seed32(seed: u64, n: u32) -> [u8; 32] {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s[8..12].copy_from_slice(&n.to_le_bytes());
    s[31] = 0x5a;
    s
}

async fn session(url: &str, who: &Identity) -> Result<(Client<TokioDial>, String), ClientError> {
    let mut c = Client::tcp(url)?.with_timeout(Duration::from_secs(60));
    // A re-run against the same store finds the identity registered already.
    let _ = who.register(&mut c).await;
    let s = who.login(&mut c).await?;
    c.set_token(Some(s.access_token.clone()));
    Ok((c, s.access_token))
}

type Sent = Arc<Mutex<BTreeMap<String, Instant>>>;

/// One connection: reads until it has seen `messages` posts, recording each latency.
async fn listen(
    mut c: ws::WsClient,
    messages: usize,
    sent: Sent,
    latencies: Arc<Mutex<Vec<f64>>>,
    timeout: Duration,
) {
    let mut seen = 0;
    while seen < messages {
        match c.next(timeout).await {
            Some(Frame::Json(v)) if v["event"] == "envelope.new" => {
                let now = Instant::now();
                let id = v["envelope_id"].as_str().unwrap_or_default();
                let at = sent.lock().map(|m| m.get(id).copied()).ok().flatten();
                if let Some(at) = at {
                    seen += 1;
                    let ms = now.duration_since(at).as_secs_f64() * 1000.0;
                    if let Ok(mut l) = latencies.lock() {
                        l.push(ms);
                    }
                }
            }
            Some(Frame::Closed(_)) | None => return,
            Some(_) => {}
        }
    }
    c.close().await;
}

/// Runs the benchmark with `clock` for envelope timestamps.
pub async fn run<C: Clock + Clone + Send + 'static>(
    cfg: &WsBenchConfig,
    clock: C,
) -> Result<WsBenchReport, ClientError> {
    let k = cfg.identities.max(1);
    let mut users = Vec::with_capacity(k);
    for i in 0..k {
        let id = Identity::from_seed(
            &format!("loom://ws{}-{i}@{}", cfg.seed, cfg.domain),
            &seed32(cfg.seed, i as u32 + 1),
        )?;
        let (_, token) = session(&cfg.url, &id).await?;
        users.push((id, token));
    }
    let sender = Identity::from_seed(
        &format!("loom://wssender{}@{}", cfg.seed, cfg.domain),
        &seed32(cfg.seed, 0),
    )?;
    let (mut post, _) = session(&cfg.url, &sender).await?;
    let mut factory = EnvelopeFactory::new(clock, cfg.seed);
    let to: Vec<String> = users.iter().map(|(u, _)| u.address().to_owned()).collect();
    // The thread: its root makes every user a participant.
    let root = factory.message(
        &sender,
        &MessageDraft {
            thread_id: None,
            parent_id: None,
            to: to.clone(),
            text: "fan-out".into(),
        },
    )?;
    post.expect("POST", "/v1/envelopes", Some(&root), 201)
        .await?;
    let thread = root["thread_id"].as_str().unwrap_or_default().to_owned();

    let sent: Sent = Arc::default();
    let latencies: Arc<Mutex<Vec<f64>>> = Arc::default();
    let started = Instant::now();
    let mut listeners = Vec::with_capacity(cfg.clients);
    let sem = Arc::new(tokio::sync::Semaphore::new(cfg.connect_concurrency.max(1)));
    let mut opening = tokio::task::JoinSet::new();
    for i in 0..cfg.clients {
        let (url, token) = (cfg.url.clone(), users[i % k].1.clone());
        let sem = sem.clone();
        opening.spawn(async move {
            let _permit = sem.acquire_owned().await.ok()?;
            let mut c = ws::connect(
                &TokioDial,
                &url,
                None,
                "/ws",
                &token,
                TokenIn::Query,
                Duration::from_secs(60),
            )
            .await
            .ok()?;
            c.send(&json!({"action": "subscribe", "channels": [{"type": "all_threads"}]}))
                .await
                .ok()?;
            // The node acknowledges the subscription (the reference node's `subscribed`).
            match c.next(Duration::from_secs(60)).await {
                Some(Frame::Json(v)) if v["event"] == "subscribed" => Some(c),
                _ => None,
            }
        });
    }
    while let Some(r) = opening.join_next().await {
        if let Ok(Some(c)) = r {
            listeners.push(tokio::spawn(listen(
                c,
                cfg.messages,
                sent.clone(),
                latencies.clone(),
                cfg.timeout,
            )));
        }
    }
    let connected = listeners.len();
    let connect_secs = started.elapsed().as_secs_f64();

    let first = Instant::now();
    for i in 0..cfg.messages {
        let e = factory.message(
            &sender,
            &MessageDraft {
                thread_id: Some(thread.clone()),
                parent_id: None,
                to: to.clone(),
                text: format!("event {i}"),
            },
        )?;
        let id = e["id"].as_str().unwrap_or_default().to_owned();
        if let Ok(mut m) = sent.lock() {
            m.insert(id, Instant::now());
        }
        post.expect("POST", "/v1/envelopes", Some(&e), 201).await?;
    }
    for l in listeners {
        let _ = l.await;
    }
    let mut ms = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    ms.sort_by(f64::total_cmp);
    let delivered = ms.len();
    let span_secs = first.elapsed().as_secs_f64();
    Ok(WsBenchReport {
        connected,
        connect_secs,
        expected: connected * cfg.messages,
        delivered,
        span_secs,
        per_sec: delivered as f64 / span_secs.max(f64::EPSILON),
        latency: percentiles(&ms),
    })
}
