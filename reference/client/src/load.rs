//! The load generator behind `loom-load`: registers N identities, logs them in, pre-signs M
//! envelopes (signing is not what is measured), then posts them over C keep-alive
//! connections and reports throughput, latency percentiles and errors by status and code.
//!
//! Workload shape: each identity owns its own threads of `thread_length` envelopes — a root
//! message, then replies each to the previous one — addressed to the next identity, so the
//! node does real per-thread work (DAG checks, `event_seq`, delivery to another mailbox).
//! The identities' threads take turns before they are dealt to connections whole, so each
//! connection posts as its own identities and the connections post as different identities
//! at the same time; a connection interleaves its threads, so a reply never overtakes its
//! parent and consecutive requests touch different threads. Ids and `created_at` are minted
//! in posting order ([`presign`]).

use crate::client::Client;
use crate::dial::Dial;
use crate::envelope::{EnvelopeFactory, MessageDraft};
use crate::error::ClientError;
use crate::identity::{Identity, Session};
use crate::tls::Trust;
use loom_protocol::clock::Clock;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// What to run.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// The node's base URL.
    pub target: String,
    /// Identities to register (N ≥ 1).
    pub identities: usize,
    /// Keep-alive connections posting in parallel (C ≥ 1).
    pub concurrency: usize,
    /// Envelopes to post (M).
    pub count: usize,
    /// Bytes of `content.human.text` per envelope.
    pub payload_bytes: usize,
    /// Envelopes per thread (root + replies).
    pub thread_length: usize,
    /// Seed for identity names, keys and envelope ids: the same seed gives the same run.
    pub seed: u64,
    /// TLS trust for `https` targets.
    pub trust: Option<Trust>,
    /// Per-request timeout.
    pub timeout: Duration,
}

/// One post's outcome.
#[derive(Debug, Clone)]
struct Sample {
    /// The envelope posted.
    id: String,
    latency: Duration,
    status: u16,
    code: Option<String>,
    message: Option<String>,
}

/// Failures of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorRow {
    /// HTTP status (0: no response — transport error or timeout).
    pub status: u16,
    /// The §24.2 code, `TRANSPORT` or `(none)`.
    pub code: String,
    /// How many.
    pub count: u64,
    /// The first message seen.
    pub example: String,
}

/// Latency percentiles, milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Latency {
    /// Fastest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Slowest.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// The node's base URL.
    pub target: String,
    /// The node's domain (from its §15.2 document).
    pub domain: String,
    /// The configuration that ran (trust omitted).
    pub identities: usize,
    /// Connections.
    pub concurrency: usize,
    /// Envelopes posted.
    pub count: usize,
    /// Payload bytes per envelope.
    pub payload_bytes: usize,
    /// Envelopes per thread.
    pub thread_length: usize,
    /// Threads created.
    pub threads: usize,
    /// The seed.
    pub seed: u64,
    /// `HTTP/1.1` or `HTTP/2`.
    pub http_version: String,
    /// Mean request body size.
    pub mean_request_bytes: f64,
    /// Registration and login, seconds.
    pub setup_secs: f64,
    /// Pre-signing, seconds.
    pub presign_secs: f64,
    /// Posting, seconds (first request to last response).
    pub elapsed_secs: f64,
    /// 201 responses.
    pub successes: u64,
    /// Everything else.
    pub failures: u64,
    /// Successes per second of `elapsed_secs`.
    pub envelopes_per_sec: f64,
    /// Latency of every post (successes and failures).
    pub latency_ms: Latency,
    /// Failures by status and code.
    pub errors: Vec<ErrorRow>,
    /// Connections opened while posting beyond the first per worker (reconnects).
    pub reconnects: u64,
    /// The ids of the envelopes the node acknowledged (201), sorted (`--acked FILE`).
    pub acked: Vec<String>,
}

impl LoadReport {
    /// The report as JSON (`loom-load --json`).
    pub fn to_json(&self) -> Value {
        let l = self.latency_ms;
        json!({
            "target": self.target,
            "domain": self.domain,
            "identities": self.identities,
            "concurrency": self.concurrency,
            "count": self.count,
            "payload_bytes": self.payload_bytes,
            "thread_length": self.thread_length,
            "threads": self.threads,
            "seed": self.seed,
            "http_version": self.http_version,
            "mean_request_bytes": self.mean_request_bytes,
            "setup_secs": self.setup_secs,
            "presign_secs": self.presign_secs,
            "elapsed_secs": self.elapsed_secs,
            "successes": self.successes,
            "failures": self.failures,
            "envelopes_per_sec": self.envelopes_per_sec,
            "latency_ms": {"min": l.min, "p50": l.p50, "p90": l.p90, "p99": l.p99, "max": l.max, "mean": l.mean},
            "errors": self.errors.iter().map(|e| json!({
                "status": e.status, "code": e.code, "count": e.count, "example": e.example,
            })).collect::<Vec<_>>(),
            "reconnects": self.reconnects,
        })
    }

    /// The human-readable report.
    pub fn render(&self) -> String {
        let l = self.latency_ms;
        let mut s = format!(
            "loom-load → {} (domain {}, {})\n  {} identities, {} connections, {} envelopes in {} threads (payload {} B, mean request {:.0} B, thread length {})\n  setup (register + login) {:.2} s, pre-sign {:.2} s\n  posted in {:.2} s: {:.0} envelopes/s ({} ok, {} failed{})\n  latency ms: p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}  (min {:.2}, mean {:.2})\n",
            self.target,
            self.domain,
            self.http_version,
            self.identities,
            self.concurrency,
            self.count,
            self.threads,
            self.payload_bytes,
            self.mean_request_bytes,
            self.thread_length,
            self.setup_secs,
            self.presign_secs,
            self.elapsed_secs,
            self.envelopes_per_sec,
            self.successes,
            self.failures,
            if self.reconnects > 0 {
                format!(", {} reconnects", self.reconnects)
            } else {
                String::new()
            },
            l.p50,
            l.p90,
            l.p99,
            l.max,
            l.min,
            l.mean,
        );
        if !self.errors.is_empty() {
            s.push_str("  errors:\n    status  code                      count  example\n");
            for e in &self.errors {
                s.push_str(&format!(
                    "    {:<6}  {:<24}  {:>5}  {}\n",
                    e.status, e.code, e.count, e.example
                ));
            }
            if self.errors.iter().any(|e| e.status == 429) {
                s.push_str("  note: 429 RATE_LIMIT_EXCEEDED means the node's §14.3 rate limits capped the run; start it with rate limits off ([rate_limits] … = 0) to measure throughput.\n");
            }
        }
        s
    }
}

/// One pre-signed post.
#[derive(Debug)]
pub(crate) struct Post {
    pub(crate) body: Vec<u8>,
    pub(crate) sender: usize,
    /// The envelope's id.
    pub(crate) id: String,
}

/// A setup step failed; `step` says which.
pub(crate) fn setup_error(step: &str, e: ClientError) -> ClientError {
    let hint = if e.status() == Some(429) {
        " — the node rate-limited the setup (§14.3); run it with rate limits off"
    } else {
        ""
    };
    match e {
        ClientError::Api { error, transcript } => ClientError::Api {
            error: error.map(|mut b| {
                b.message = Some(format!("{step}: {}{hint}", b.message.unwrap_or_default()));
                b
            }),
            transcript,
        },
        other => ClientError::Input(format!("{step}: {other}{hint}")),
    }
}

/// Identities registered and logged in, ready to post.
pub(crate) struct Setup<D: Dial + Clone, C: Clock + Clone> {
    /// The node's domain.
    pub(crate) domain: String,
    /// The identities, in order.
    pub(crate) idents: Vec<Identity>,
    /// One access token per identity.
    pub(crate) tokens: std::sync::Arc<Vec<String>>,
    /// Envelope ids, thread ids and `created_at` from the seed and clock.
    pub(crate) factory: EnvelopeFactory<C>,
    /// Registration and login, seconds.
    pub(crate) secs: f64,
    /// A client for reads outside the measured posts.
    pub(crate) admin: Client<D>,
}

/// Registers (or, with the same seed on a durable node, finds) and logs in `cfg.identities`
/// identities.
pub(crate) async fn setup<D, C>(
    cfg: &LoadConfig,
    dial: &D,
    clock: C,
) -> Result<Setup<D, C>, ClientError>
where
    D: Dial + Clone,
    C: Clock + Clone,
{
    if cfg.identities == 0 || cfg.concurrency == 0 || cfg.thread_length == 0 {
        return Err(ClientError::Input(
            "--identities, --concurrency and --thread-length must be at least 1".into(),
        ));
    }
    let started = Instant::now();
    let mut admin = new_client(cfg, dial.clone())?;
    let doc = admin
        .node_document()
        .await
        .map_err(|e| setup_error("discovery (GET /.well-known/loom.json)", e))?;
    let domain = doc
        .body
        .get("domain")
        .or_else(|| doc.body.get("node_id"))
        .and_then(Value::as_str)
        .ok_or_else(|| ClientError::BadResponse {
            reason: "the node document has no domain".into(),
            transcript: Box::new(doc.transcript.clone()),
        })?
        .to_owned();

    // Identities: names and keys from the seed, so a rerun with the same seed against a
    // durable node finds them registered (409) with the same keys and just logs in.
    let mut factory = EnvelopeFactory::new(clock, cfg.seed);
    let tag = format!("{:08x}", cfg.seed & 0xffff_ffff);
    let mut idents = Vec::with_capacity(cfg.identities);
    let mut tokens = Vec::with_capacity(cfg.identities);
    for i in 0..cfg.identities {
        let seed = factory.bytes32();
        let ident = Identity::from_seed(&format!("loom://load-{tag}-{i}@{domain}"), &seed)?
            .with_display_name(&format!("load {i}"));
        match ident.register(&mut admin).await {
            Ok(_) => {}
            Err(e) if e.status() == Some(409) => {}
            Err(e) => return Err(setup_error(&format!("registering {}", ident.address()), e)),
        }
        let s: Session = ident
            .login(&mut admin)
            .await
            .map_err(|e| setup_error(&format!("logging in {}", ident.address()), e))?;
        tokens.push(s.access_token);
        idents.push(ident);
    }
    Ok(Setup {
        domain,
        idents,
        tokens: std::sync::Arc::new(tokens),
        factory,
        secs: started.elapsed().as_secs_f64(),
        admin,
    })
}

fn new_client<D: Dial + Clone>(cfg: &LoadConfig, dial: D) -> Result<Client<D>, ClientError> {
    let c = Client::new(&cfg.target, dial)?.with_timeout(cfg.timeout);
    match &cfg.trust {
        Some(t) => c.with_trust(t),
        None => Ok(c),
    }
}

/// One envelope of the plan: who sends it, which thread of the plan it belongs to, and
/// its number among its sender's envelopes (for the message text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) sender: usize,
    pub(crate) thread: usize,
    pub(crate) n: usize,
}

/// The run's threads, before anything is signed: each identity's share of `cfg.count` in
/// threads of `cfg.thread_length`, taking turns by identity ([`spread`]), so [`deal`] gives
/// each connection its own identities and the connections post as different identities at
/// the same time, as 16 users would. (Dealt identity by identity, all connections posted as
/// one identity at a time at thread length 1: every group commit then shared that
/// identity's index pages, which flattered the node.)
pub(crate) fn plan(cfg: &LoadConfig) -> Vec<Vec<Slot>> {
    let mut chains: Vec<Vec<Slot>> = Vec::new();
    for i in 0..cfg.identities {
        let share = cfg.count / cfg.identities + usize::from(i < cfg.count % cfg.identities);
        let mut left = share;
        let mut n = 0;
        while left > 0 {
            let len = left.min(cfg.thread_length);
            left -= len;
            let thread = chains.len();
            chains.push(
                (n..n + len)
                    .map(|n| Slot {
                        sender: i,
                        thread,
                        n,
                    })
                    .collect(),
            );
            n += len;
        }
    }
    spread(chains, cfg.identities)
}

/// Signs the planned envelopes, batch by batch (a growth slice, or the whole run), and
/// returns each batch as one queue per connection ([`deal`]). Every thread root is a
/// message addressed to the next identity, every other envelope replies to the one before
/// it; `text(identity, n)` is the message text of that identity's `n`th envelope.
///
/// Ids and `created_at` are minted in the order the envelopes will be posted (the
/// connections' queues taken a step at a time), as clients that mint a ULID when they send
/// do (v1.1 §8.4: ids are ULIDs, which lead with their creation time). Minted thread by
/// thread instead, each identity's ids fell in one block of time, and sixteen connections
/// posting as sixteen identities then inserted at sixteen places of every id-keyed index
/// at once, which no real traffic does.
pub(crate) fn presign<C: Clock + Clone>(
    concurrency: usize,
    idents: &[Identity],
    factory: &mut EnvelopeFactory<C>,
    batches: Vec<Vec<Vec<Slot>>>,
    text: &dyn Fn(usize, usize) -> String,
) -> Result<Vec<Vec<Vec<Post>>>, ClientError> {
    // Per thread of the plan: its id and the id of its latest envelope, once minted.
    let threads = batches
        .iter()
        .flatten()
        .flatten()
        .map(|s| s.thread + 1)
        .max()
        .unwrap_or(0);
    let mut minted: Vec<Option<(String, String)>> = vec![None; threads];
    let mut out = Vec::with_capacity(batches.len());
    for batch in batches {
        let queues = deal(batch, concurrency);
        let steps = queues.iter().map(Vec::len).max().unwrap_or(0);
        let mut posts: Vec<Vec<Post>> =
            queues.iter().map(|q| Vec::with_capacity(q.len())).collect();
        for step in 0..steps {
            for (q, posts) in queues.iter().zip(&mut posts) {
                let Some(slot) = q.get(step) else { continue };
                let ident = &idents[slot.sender];
                let to = vec![
                    idents[(slot.sender + 1) % idents.len()]
                        .address()
                        .to_owned(),
                ];
                let (thread_id, parent_id) = match &minted[slot.thread] {
                    Some((t, last)) => (t.clone(), Some(last.clone())),
                    None => (factory.thread_id(), None),
                };
                let env = factory.message(
                    ident,
                    &MessageDraft {
                        thread_id: Some(thread_id.clone()),
                        parent_id,
                        to,
                        text: text(slot.sender, slot.n),
                    },
                )?;
                let id = env
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                minted[slot.thread] = Some((thread_id, id.clone()));
                let body = serde_json::to_vec(&env)
                    .map_err(|e| ClientError::Input(format!("serializing an envelope: {e}")))?;
                posts.push(Post {
                    body,
                    sender: slot.sender,
                    id,
                });
            }
        }
        out.push(posts);
    }
    Ok(out)
}

/// Orders threads so that every prefix holds each identity's threads in proportion:
/// round-robin over identities (the plan lists them identity by identity).
fn spread(chains: Vec<Vec<Slot>>, identities: usize) -> Vec<Vec<Slot>> {
    let mut by_identity: Vec<std::collections::VecDeque<Vec<Slot>>> =
        (0..identities).map(|_| Default::default()).collect();
    for c in chains {
        let i = c.first().map_or(0, |p| p.sender);
        by_identity[i % identities].push_back(c);
    }
    let mut out = Vec::new();
    while by_identity.iter().any(|q| !q.is_empty()) {
        for q in &mut by_identity {
            if let Some(c) = q.pop_front() {
                out.push(c);
            }
        }
    }
    out
}

/// Deals whole threads to `concurrency` workers; each worker interleaves its threads.
fn deal<T>(chains: Vec<Vec<T>>, concurrency: usize) -> Vec<Vec<T>> {
    let mut per_worker: Vec<Vec<Vec<T>>> = (0..concurrency).map(|_| Vec::new()).collect();
    for (n, chain) in chains.into_iter().enumerate() {
        per_worker[n % concurrency].push(chain);
    }
    per_worker.into_iter().map(interleave).collect()
}

/// Opens `cfg.concurrency` connections (before any clock starts).
pub(crate) async fn connect_all<D: Dial + Clone>(
    cfg: &LoadConfig,
    dial: &D,
) -> Result<Vec<Client<D>>, ClientError> {
    let mut clients = Vec::with_capacity(cfg.concurrency);
    for _ in 0..cfg.concurrency {
        let mut c = new_client(cfg, dial.clone())?;
        c.connect()
            .await
            .map_err(|e| setup_error("connecting", e))?;
        clients.push(c);
    }
    Ok(clients)
}

/// What posting one set of queues measured.
pub(crate) struct Posted<D: Dial> {
    /// Every post's outcome.
    samples: Vec<Sample>,
    /// Reconnects beyond the first connection per worker.
    pub(crate) reconnects: u64,
    /// First request to last response, seconds.
    pub(crate) elapsed_secs: f64,
    /// The connections, for the next round.
    pub(crate) clients: Vec<Client<D>>,
}

/// Posts each queue over its own connection, all at once; returns when every queue is done.
pub(crate) async fn post<D: Dial + Clone + Send + 'static>(
    clients: Vec<Client<D>>,
    queues: Vec<Vec<Post>>,
    tokens: &std::sync::Arc<Vec<String>>,
) -> Result<Posted<D>, ClientError>
where
    Client<D>: Send,
{
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(clients.len());
    for (mut client, queue) in clients.into_iter().zip(queues) {
        let tokens = tokens.clone();
        tasks.push(tokio::spawn(async move {
            let before = client.connects();
            let mut samples = Vec::with_capacity(queue.len());
            for post in queue {
                let t0 = Instant::now();
                let token = tokens.get(post.sender).map(String::as_str);
                let r = client
                    .exchange("POST", "/v1/envelopes", &[], Some(post.body), token)
                    .await;
                let id = post.id;
                samples.push(match r {
                    Ok(t) if t.status == 201 => Sample {
                        id,
                        latency: t.elapsed,
                        status: 201,
                        code: None,
                        message: None,
                    },
                    Ok(t) => {
                        let e = t.api_error();
                        Sample {
                            id,
                            latency: t.elapsed,
                            status: t.status,
                            code: e.as_ref().and_then(|e| e.code.clone()),
                            message: e.map(|e| e.to_string()),
                        }
                    }
                    Err(e) => Sample {
                        id,
                        latency: t0.elapsed(),
                        status: 0,
                        code: Some("TRANSPORT".into()),
                        message: Some(e.to_string()),
                    },
                });
            }
            let reconnects = client.connects().saturating_sub(before.max(1));
            (samples, reconnects, client)
        }));
    }
    let mut samples = Vec::new();
    let mut reconnects = 0;
    let mut clients = Vec::with_capacity(tasks.len());
    for t in tasks {
        let (s, r, c) = t
            .await
            .map_err(|e| ClientError::Input(format!("a load worker failed: {e}")))?;
        samples.extend(s);
        reconnects += r;
        clients.push(c);
    }
    Ok(Posted {
        samples,
        reconnects,
        elapsed_secs: started.elapsed().as_secs_f64(),
        clients,
    })
}

/// Successes, failures, errors by kind and latency percentiles of `samples`.
pub(crate) struct Tally {
    /// 201 responses.
    pub(crate) successes: u64,
    /// Everything else.
    pub(crate) failures: u64,
    /// Failures by status and code.
    pub(crate) errors: Vec<ErrorRow>,
    /// Latency of every post.
    pub(crate) latency: Latency,
}

impl<D: Dial> Posted<D> {
    /// The ids of the envelopes the node answered 201 for, sorted.
    pub(crate) fn acked(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .samples
            .iter()
            .filter(|s| s.status == 201)
            .map(|s| s.id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// Counts the outcomes.
    pub(crate) fn tally(&self) -> Tally {
        let samples = &self.samples;
        let successes = samples.iter().filter(|s| s.status == 201).count() as u64;
        let failures = samples.len() as u64 - successes;
        let mut errors: BTreeMap<(u16, String), ErrorRow> = BTreeMap::new();
        for s in samples.iter().filter(|s| s.status != 201) {
            let code = s.code.clone().unwrap_or_else(|| "(none)".into());
            errors
                .entry((s.status, code.clone()))
                .or_insert_with(|| ErrorRow {
                    status: s.status,
                    code,
                    count: 0,
                    example: s.message.clone().unwrap_or_default(),
                })
                .count += 1;
        }
        let mut latencies: Vec<f64> = samples
            .iter()
            .map(|s| s.latency.as_secs_f64() * 1000.0)
            .collect();
        latencies.sort_by(f64::total_cmp);
        Tally {
            successes,
            failures,
            errors: errors.into_values().collect(),
            latency: percentiles(&latencies),
        }
    }
}

/// Runs the load test through `dial`; identity names, keys, ids and `created_at` come from
/// `seed` and `clock`.
pub async fn run<D, C>(cfg: &LoadConfig, dial: D, clock: C) -> Result<LoadReport, ClientError>
where
    D: Dial + Clone + Send + 'static,
    Client<D>: Send,
    C: Clock + Clone,
{
    let mut s = setup(cfg, &dial, clock).await?;
    let presign_started = Instant::now();
    let text = payload(cfg.payload_bytes);
    let plan = plan(cfg);
    let threads = plan.len();
    let queues = presign(
        cfg.concurrency,
        &s.idents,
        &mut s.factory,
        vec![plan],
        &|_, _| text.clone(),
    )?
    .pop()
    .unwrap_or_default();
    let total_bytes: usize = queues.iter().flatten().map(|p| p.body.len()).sum();
    let presign_secs = presign_started.elapsed().as_secs_f64();

    let clients = connect_all(cfg, &dial).await?;
    let http_version = clients
        .first()
        .and_then(Client::http_version)
        .unwrap_or("HTTP/1.1")
        .to_owned();
    let posted = post(clients, queues, &s.tokens).await?;
    let t = posted.tally();
    let elapsed_secs = posted.elapsed_secs;
    Ok(LoadReport {
        target: cfg.target.clone(),
        domain: s.domain,
        identities: cfg.identities,
        concurrency: cfg.concurrency,
        count: cfg.count,
        payload_bytes: cfg.payload_bytes,
        thread_length: cfg.thread_length,
        threads,
        seed: cfg.seed,
        http_version,
        mean_request_bytes: if cfg.count == 0 {
            0.0
        } else {
            total_bytes as f64 / cfg.count as f64
        },
        setup_secs: s.secs,
        presign_secs,
        elapsed_secs,
        successes: t.successes,
        failures: t.failures,
        envelopes_per_sec: if elapsed_secs > 0.0 {
            t.successes as f64 / elapsed_secs
        } else {
            0.0
        },
        latency_ms: t.latency,
        errors: t.errors,
        reconnects: posted.reconnects,
        acked: posted.acked(),
    })
}

/// Round-robin over `chains`, keeping each chain's order.
fn interleave<T>(chains: Vec<Vec<T>>) -> Vec<T> {
    let total = chains.iter().map(Vec::len).sum();
    let mut iters: Vec<_> = chains.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::with_capacity(total);
    while out.len() < total {
        for it in &mut iters {
            if let Some(p) = it.next() {
                out.push(p);
            }
        }
    }
    out
}

/// Exactly `n` bytes of ASCII text.
pub(crate) fn payload(n: usize) -> String {
    const WORDS: &str = "loom load payload the quick brown fox jumps over the lazy dog ";
    WORDS.chars().cycle().take(n).collect()
}

/// Nearest-rank percentiles of sorted `ms`.
pub fn percentiles(ms: &[f64]) -> Latency {
    let Some(&max) = ms.last() else {
        return Latency::default();
    };
    let rank = |p: f64| {
        let i = ((p / 100.0) * ms.len() as f64).ceil() as usize;
        ms[i.clamp(1, ms.len()) - 1]
    };
    Latency {
        min: ms[0],
        p50: rank(50.0),
        p90: rank(90.0),
        p99: rank(99.0),
        max,
        mean: ms.iter().sum::<f64>() / ms.len() as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let l = percentiles(&v);
        assert_eq!(
            (l.min, l.p50, l.p90, l.p99, l.max),
            (1.0, 50.0, 90.0, 99.0, 100.0)
        );
        assert_eq!(percentiles(&[]), Latency::default());
        assert_eq!(percentiles(&[7.0]).p99, 7.0);
    }

    fn cfg(identities: usize, count: usize, thread_length: usize) -> LoadConfig {
        LoadConfig {
            target: "http://127.0.0.1:1".into(),
            identities,
            concurrency: identities,
            count,
            payload_bytes: 0,
            thread_length,
            seed: 1,
            trust: None,
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn plan_lets_identities_take_turns_and_deal_keeps_them_per_connection() {
        let plan = plan(&cfg(2, 6, 2));
        let shape: Vec<(usize, Vec<usize>)> = plan
            .iter()
            .map(|c| (c[0].sender, c.iter().map(|s| s.n).collect()))
            .collect();
        assert_eq!(
            shape,
            [(0, vec![0, 1]), (1, vec![0, 1]), (0, vec![2]), (1, vec![2])]
        );
        assert!(
            plan.iter()
                .all(|c| c.iter().all(|s| s.thread == c[0].thread))
        );
        let queues = deal(plan, 2);
        let per_queue: Vec<Vec<usize>> = queues
            .iter()
            .map(|q| q.iter().map(|s| s.sender).collect())
            .collect();
        assert_eq!(per_queue, [vec![0, 0, 0], vec![1, 1, 1]]);
    }

    /// A clock one millisecond later at every reading, so ids minted later sort later.
    #[derive(Debug, Clone)]
    struct Ticking(std::sync::Arc<std::sync::atomic::AtomicI64>);

    impl Clock for Ticking {
        fn now(&self) -> loom_protocol::Timestamp {
            let ms = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            loom_protocol::Timestamp::from_unix_ms(1_700_000_000_000 + ms)
        }
    }

    #[test]
    fn presign_mints_ids_in_posting_order_and_chains_replies() {
        let idents: Vec<Identity> = (0..3)
            .map(|i| Identity::from_seed(&format!("loom://u{i}@load.test"), &[i as u8; 32]))
            .collect::<Result<_, _>>()
            .unwrap();
        let mut factory = EnvelopeFactory::new(Ticking(Default::default()), 7);
        let plan = plan(&cfg(3, 12, 2));
        let batches = presign(3, &idents, &mut factory, vec![plan], &|i, n| {
            format!("{i}:{n}")
        })
        .unwrap()
        .pop()
        .unwrap();
        let envs: Vec<Vec<Value>> = batches
            .iter()
            .map(|q| {
                q.iter()
                    .map(|p| serde_json::from_slice(&p.body).unwrap())
                    .collect()
            })
            .collect();
        let field = |e: &Value, f: &str| e[f].as_str().unwrap_or_default().to_owned();
        // The order the connections post in, a step at a time, is the order of the ids.
        let steps = envs.iter().map(Vec::len).max().unwrap();
        let posting: Vec<String> = (0..steps)
            .flat_map(|t| envs.iter().filter_map(move |q| q.get(t)))
            .map(|e| field(e, "id"))
            .collect();
        let mut sorted = posting.clone();
        sorted.sort();
        assert_eq!(posting, sorted);
        assert_eq!(posting.len(), 12);
        // Each connection posts as one identity, and every reply follows its parent.
        let mut seen = std::collections::BTreeMap::new();
        for (q, envs) in batches.iter().zip(&envs) {
            assert!(q.iter().all(|p| p.sender == q[0].sender));
            for e in envs {
                let thread = field(e, "thread_id");
                let parent = e["parent_id"].as_str().map(str::to_owned);
                assert_eq!(seen.get(&thread).cloned(), parent, "{e}");
                assert_eq!(
                    e["content"]["human"]["text"]
                        .as_str()
                        .unwrap()
                        .split(':')
                        .next(),
                    Some(q[0].sender.to_string().as_str())
                );
                seen.insert(thread, field(e, "id"));
            }
        }
        assert_eq!(seen.len(), 6);
    }

    #[test]
    fn interleave_keeps_chain_order() {
        let out = interleave(vec![vec![1, 2, 3], vec![10], vec![20, 21]]);
        assert_eq!(out, [1, 10, 20, 2, 21, 3]);
    }

    #[test]
    fn payload_has_exact_length() {
        assert_eq!(payload(0).len(), 0);
        assert_eq!(payload(1000).len(), 1000);
    }
}
