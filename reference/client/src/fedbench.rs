//! Federated delivery throughput (issue 15): two nodes that know each other as peers;
//! `alice@A` posts `count` messages to `bob@B` over `concurrency` connections to A, then the
//! run waits until bob can read every one on B. Each envelope's delivery latency is B's
//! `meta.received_at` minus A's (both nodes on one machine read the same wall clock);
//! throughput is `count` over the span from A's first acceptance to B's last.

use crate::load::{Latency, percentiles};
use crate::{Client, ClientError, EnvelopeFactory, Identity, MessageDraft, TokioDial};
use loom_protocol::Timestamp;
use loom_protocol::clock::Clock;
use serde_json::Value;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct FedBenchConfig {
    /// Sending node's base URL and domain.
    pub a: (String, String),
    /// Receiving node's base URL and domain.
    pub b: (String, String),
    /// Messages.
    pub count: usize,
    /// Connections to A.
    pub concurrency: usize,
    /// Seed for keys and ids.
    pub seed: u64,
    /// Longest wait for the last delivery.
    pub timeout: Duration,
}

/// The result.
#[derive(Debug, Clone)]
pub struct FedBenchReport {
    /// Messages delivered.
    pub delivered: usize,
    /// Seconds from A's first acceptance to B's last.
    pub span_secs: f64,
    /// Delivered envelopes per second over that span.
    pub per_sec: f64,
    /// Seconds A took to accept every post.
    pub post_secs: f64,
    /// Delivery latency (B received − A received), ms.
    pub latency: Latency,
}

fn received_at(v: &Value) -> Option<Timestamp> {
    Timestamp::parse(v.pointer("/meta/received_at")?.as_str()?).ok()
}

fn seed32(seed: u64, n: u8) -> [u8; 32] {
    let mut s = [n; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s
}

async fn session(url: &str, who: &Identity) -> Result<Client<TokioDial>, ClientError> {
    let mut c = Client::tcp(url)?;
    // A re-run against the same stores finds the identity registered already.
    let _ = who.register(&mut c).await;
    let s = who.login(&mut c).await?;
    c.set_token(Some(s.access_token));
    Ok(c)
}

/// Runs the benchmark with `clock` for envelope timestamps.
pub async fn run<C: Clock + Clone + Send + 'static>(
    cfg: &FedBenchConfig,
    clock: C,
) -> Result<FedBenchReport, ClientError> {
    let alice = Identity::from_seed(&format!("loom://alice@{}", cfg.a.1), &seed32(cfg.seed, 1))?;
    let bob = Identity::from_seed(&format!("loom://bob@{}", cfg.b.1), &seed32(cfg.seed, 2))?;
    let mut bob_client = session(&cfg.b.0, &bob).await?;
    session(&cfg.a.0, &alice).await?;
    let mut factory = EnvelopeFactory::new(clock, cfg.seed);
    let mut envelopes = Vec::with_capacity(cfg.count);
    for i in 0..cfg.count {
        envelopes.push(factory.message(
            &alice,
            &MessageDraft {
                to: vec![bob.address().to_owned()],
                text: format!("federated {i}"),
                ..MessageDraft::default()
            },
        )?);
    }
    let started = Instant::now();
    let conns = cfg.concurrency.max(1);
    let mut tasks = Vec::new();
    for w in 0..conns {
        let mine: Vec<Value> = envelopes.iter().skip(w).step_by(conns).cloned().collect();
        let (url, alice) = (cfg.a.0.clone(), alice.clone());
        tasks.push(tokio::spawn(async move {
            let mut c = session(&url, &alice).await?;
            let mut out = Vec::with_capacity(mine.len());
            for e in mine {
                let r = c.send_envelope(&e).await?;
                let id = r.str("id")?.to_owned();
                out.push((id, received_at(&r.body)));
            }
            Ok::<_, ClientError>(out)
        }));
    }
    let mut sent = Vec::with_capacity(cfg.count);
    for t in tasks {
        let part = t
            .await
            .map_err(|e| ClientError::Input(format!("sender task: {e}")))??;
        sent.extend(part);
    }
    let post_secs = started.elapsed().as_secs_f64();
    let deadline = Instant::now() + cfg.timeout;
    let mut latencies = Vec::with_capacity(sent.len());
    let (mut first_a, mut last_b) = (i64::MAX, i64::MIN);
    for (id, a_at) in &sent {
        let b_at = loop {
            let t = bob_client
                .call("GET", &format!("/v1/envelopes/{id}"), None)
                .await?;
            if t.status == 200 {
                break t.json().as_ref().and_then(received_at);
            }
            if Instant::now() > deadline {
                return Err(ClientError::Input(format!(
                    "{id} did not reach bob within {:?}",
                    cfg.timeout
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        if let (Some(a), Some(b)) = (a_at, b_at) {
            first_a = first_a.min(a.unix_ms());
            last_b = last_b.max(b.unix_ms());
            latencies.push((b.unix_ms() - a.unix_ms()) as f64);
        }
    }
    latencies.sort_by(f64::total_cmp);
    let span_secs = ((last_b - first_a).max(1) as f64) / 1000.0;
    Ok(FedBenchReport {
        delivered: latencies.len(),
        span_secs,
        per_sec: latencies.len() as f64 / span_secs,
        post_secs,
        latency: percentiles(&latencies),
    })
}
