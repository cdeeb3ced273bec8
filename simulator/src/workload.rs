//! The seeded workload (issue 16 Build 2): one client host per node registers that node's
//! users (DESIGN.md §9 registration, §14.2 login), waits for the setup phase to end, then
//! performs `[workload].actions` actions: a new local or federated message, or a reply to an
//! envelope the user can read on its node (building thread DAGs across nodes). Every 201 is
//! an [`Ack`] the invariants check; every exchange is a trace line.

use crate::clock::SkewClock;
use crate::derive_bytes;
use crate::scenario::Workload;
use crate::trace::{Ack, Shared, short_hash};
use loom_client::{Client, EnvelopeFactory, Identity, MessageDraft, SimDial};
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Duration;

/// The port every node listens on.
pub const PORT: u16 = 8787;

/// What one client host needs.
#[derive(Debug, Clone)]
pub struct ClientPlan {
    /// The node's domain.
    pub domain: String,
    /// The node's base URL (`http://addr:port`).
    pub url: String,
    /// Users of this node (addresses).
    pub users: Vec<String>,
    /// Users of every other node.
    pub remote_users: Vec<String>,
    /// The run seed.
    pub seed: u64,
    /// Sub-seed of this client.
    pub rng_seed: u64,
    /// The workload mix.
    pub workload: Workload,
    /// Simulated seconds of setup before the first action.
    pub setup_secs: u64,
    /// The node's clock (clients share their organisation's clock).
    pub clock: SkewClock,
    /// The run's record.
    pub shared: Shared,
}

/// A user's identity key, derived from the run seed and the address.
pub fn identity(seed: u64, address: &str) -> Result<Identity, String> {
    Identity::from_seed(address, &derive_bytes(seed, address)).map_err(|e| e.to_string())
}

fn uniform(rng: &mut ChaCha20Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

fn index(rng: &mut ChaCha20Rng, len: usize) -> usize {
    usize::try_from(rng.next_u64() % (len.max(1) as u64)).unwrap_or(0)
}

pub(crate) struct User {
    pub(crate) id: Identity,
    pub(crate) client: Client<SimDial>,
}

/// What the owner of a thread did to it (so the next operation is one the §10.4 state
/// machine and §11.2 membership rules allow).
#[derive(Debug, Default)]
struct Owned {
    added: Vec<String>,
    locked: bool,
    /// Forks made from the thread, and whether each is merged back.
    forks: Vec<(String, bool)>,
}

pub(crate) fn status_of(r: &Result<loom_client::Reply, loom_client::ClientError>) -> (u16, String) {
    match r {
        Ok(rep) => (
            rep.transcript.status,
            short_hash(&rep.transcript.response_body),
        ),
        Err(e) => (
            e.status().unwrap_or(0),
            e.code().unwrap_or("transport").to_owned(),
        ),
    }
}

/// Registers `address` on the node at `url` and logs it in (v1.1 §16.1), recording the
/// exchange in the trace (as `client`) and its key in the run's record. Setup runs before any
/// fault; a refusal here is a defect the trace shows.
pub(crate) async fn sign_up(
    url: &str,
    seed: u64,
    address: &str,
    client: &str,
    shared: &Shared,
) -> Result<User, Box<dyn std::error::Error>> {
    let id = identity(seed, address)?;
    let mut http = Client::new(url, SimDial)?.with_timeout(Duration::from_secs(120));
    let reg = id.register(&mut http).await;
    let (status, digest) = status_of(&reg);
    shared.lock().line(
        "http",
        json!({"client": client, "user": address, "op": "register", "status": status, "body": digest}),
    );
    reg?;
    let session = id.login(&mut http).await?;
    http.set_token(Some(session.access_token));
    shared
        .lock()
        .keys
        .insert(address.to_owned(), id.signing_key().verifying_key());
    Ok(User { id, client: http })
}

/// Runs one client host to completion.
pub async fn run_client(plan: ClientPlan) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = ChaCha20Rng::seed_from_u64(plan.rng_seed);
    let mut factory = EnvelopeFactory::new(plan.clock.clone(), plan.rng_seed);
    let mut users = Vec::new();
    for address in &plan.users {
        users.push(sign_up(&plan.url, plan.seed, address, &plan.domain, &plan.shared).await?);
    }
    let w = &plan.workload;
    let mut agent = match users.first_mut() {
        Some(first) if w.agent_ratio > 0.0 => {
            Some(crate::authority::register_agent(&plan, first, &factory).await?)
        }
        _ => None,
    };
    let setup = Duration::from_secs(plan.setup_secs);
    let elapsed = turmoil::sim_elapsed().unwrap_or_default();
    if elapsed < setup {
        tokio::time::sleep(setup - elapsed).await;
    }
    let mut owned: BTreeMap<String, Owned> = BTreeMap::new();
    let everyone: Vec<String> = plan
        .users
        .iter()
        .chain(plan.remote_users.iter())
        .cloned()
        .collect();
    for _ in 0..w.actions {
        let gap = rng.next_u64() % (2 * w.mean_gap_ms + 1);
        tokio::time::sleep(Duration::from_millis(gap)).await;
        let ui = index(&mut rng, users.len());
        let reply = uniform(&mut rng) < w.reply_ratio;
        let draw_remote = uniform(&mut rng) < w.remote_ratio;
        let draw_pick = rng.next_u64();
        let me = users[ui].id.address().to_owned();
        // Drawn only when the mix has operations, retractions, capabilities or agents, so
        // older scenarios keep their streams.
        let special = w.has_special().then(|| uniform(&mut rng));
        // Drawn only when the mix has reads, for the same reason.
        if w.read_ratio > 0.0 && uniform(&mut rng) < w.read_ratio {
            read_thread(&plan, &mut users[ui], draw_pick).await;
        }
        if let Some(x) = special {
            let done = if x < w.op_ratio {
                thread_op(
                    &plan,
                    &mut users[ui],
                    &mut factory,
                    &mut owned,
                    &everyone,
                    draw_pick,
                )
                .await?
            } else if x < w.op_ratio + w.retract_ratio {
                retract(&plan, &mut users[ui], draw_pick).await
            } else if x < w.op_ratio + w.retract_ratio + w.capability_ratio {
                let locked = |t: &str| owned.get(t).is_some_and(|o| o.locked);
                crate::authority::capability_action(
                    &plan,
                    &mut users,
                    ui,
                    &mut factory,
                    &everyone,
                    &locked,
                    draw_pick,
                )
                .await?
            } else if x < w.op_ratio + w.retract_ratio + w.capability_ratio + w.agent_ratio
                && let Some(agent) = agent.as_mut()
            {
                let pool = if draw_remote && !plan.remote_users.is_empty() {
                    &plan.remote_users
                } else {
                    &plan.users
                };
                let to = pool[usize::try_from(draw_pick % pool.len() as u64).unwrap_or(0)].clone();
                crate::authority::agent_message(&plan, agent, &mut factory, to).await?;
                true
            } else {
                false
            };
            if done {
                continue;
            }
        }
        let mut draft = None;
        if reply {
            let candidates: Vec<Ack> = plan
                .shared
                .lock()
                .acks
                .iter()
                .filter(|a| a.kind == "message" && (a.sender == me || a.to.contains(&me)))
                .cloned()
                .collect();
            if !candidates.is_empty() {
                let parent =
                    &candidates[usize::try_from(draw_pick % candidates.len() as u64).unwrap_or(0)];
                let got = users[ui].client.get_envelope(&parent.id).await;
                let (status, digest) = status_of(&got);
                plan.shared.lock().line(
                    "http",
                    json!({"client": plan.domain, "user": me, "op": "get", "envelope": parent.id, "status": status, "body": digest}),
                );
                if got.is_ok() {
                    let mut to: Vec<String> = if parent.sender != me {
                        vec![parent.sender.clone()]
                    } else {
                        parent.to.iter().filter(|a| **a != me).cloned().collect()
                    };
                    if to.is_empty() {
                        to.push(me.clone());
                    }
                    draft = Some(MessageDraft {
                        thread_id: Some(parent.thread.clone()),
                        parent_id: Some(parent.id.clone()),
                        to,
                        text: format!("re: {}", parent.id),
                    });
                }
            }
        }
        let draft = match draft {
            Some(d) => d,
            None => {
                let pool: Vec<&String> = if draw_remote && !plan.remote_users.is_empty() {
                    plan.remote_users.iter().collect()
                } else {
                    let others: Vec<&String> = plan.users.iter().filter(|a| **a != me).collect();
                    if others.is_empty() {
                        vec![&plan.users[ui]]
                    } else {
                        others
                    }
                };
                let to = pool[usize::try_from(draw_pick % pool.len() as u64).unwrap_or(0)].clone();
                MessageDraft {
                    thread_id: None,
                    parent_id: None,
                    to: vec![to],
                    text: format!("hello from {me}"),
                }
            }
        };
        let env = factory.message(&users[ui].id, &draft)?;
        let sent = users[ui].client.send_envelope(&env).await;
        let (status, digest) = status_of(&sent);
        let id = env["id"].as_str().unwrap_or_default().to_owned();
        let mut rec = plan.shared.lock();
        rec.line(
            "http",
            json!({"client": plan.domain, "user": me, "op": "send", "envelope": id,
                   "to": draft.to, "parent": draft.parent_id, "status": status, "body": digest}),
        );
        if sent.is_ok() {
            rec.acks.push(Ack {
                node: plan.domain.clone(),
                id,
                thread: env["thread_id"].as_str().unwrap_or_default().to_owned(),
                parent: draft.parent_id.clone(),
                sender: me,
                to: draft.to.clone(),
                kind: "message".into(),
            });
        }
    }
    Ok(())
}

/// Lists one of the threads in which `user`'s node acknowledged an envelope of `user`
/// (`GET /v1/threads/{id}/envelopes`, v1.1 §16.2) and records what it knew it had written
/// beside what the node listed, for the `history` invariant. A refusal (the user removed
/// from the thread, the node down) records nothing.
async fn read_thread(plan: &ClientPlan, user: &mut User, pick: u64) {
    let me = user.id.address().to_owned();
    let (thread, expected) = {
        let rec = plan.shared.lock();
        let mine: Vec<&Ack> = rec
            .acks
            .iter()
            .filter(|a| a.node == plan.domain && a.sender == me)
            .collect();
        if mine.is_empty() {
            return;
        }
        let thread = mine[usize::try_from(pick % mine.len() as u64).unwrap_or(0)]
            .thread
            .clone();
        let expected: Vec<String> = mine
            .iter()
            .filter(|a| a.thread == thread && !rec.retracted.contains(&a.id))
            .map(|a| a.id.clone())
            .collect();
        (thread, expected)
    };
    let at_ms = turmoil::sim_elapsed()
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    let got = user.client.thread_envelopes(&thread).await;
    let (status, digest) = status_of(&got);
    let mut rec = plan.shared.lock();
    rec.line(
        "http",
        json!({"client": plan.domain, "user": me, "op": "list", "thread": thread, "status": status, "body": digest}),
    );
    let Ok(reply) = got else { return };
    let seen: Vec<String> = reply.body["envelopes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["id"].as_str().map(str::to_owned))
        .collect();
    rec.reads.push(crate::trace::Read {
        node: plan.domain.clone(),
        user: me,
        thread,
        at_ms,
        expected,
        seen,
    });
}

/// A thread operation by the owner of one of the threads `user` started (v1.1 §11.1–§11.2,
/// §11.4, §10.4): add a participant, remove one it added, fork the thread from its root,
/// merge a fork back, lock, or reopen a thread it locked.
/// `false` when the user owns no thread yet (the action becomes a message).
async fn thread_op(
    plan: &ClientPlan,
    user: &mut User,
    factory: &mut EnvelopeFactory<SkewClock>,
    owned: &mut BTreeMap<String, Owned>,
    everyone: &[String],
    pick: u64,
) -> Result<bool, Box<dyn std::error::Error>> {
    let me = user.id.address().to_owned();
    let threads: Vec<Ack> = plan
        .shared
        .lock()
        .acks
        .iter()
        .filter(|a| a.kind == "message" && a.sender == me && a.parent.is_none())
        .cloned()
        .collect();
    if threads.is_empty() {
        return Ok(false);
    }
    // Half the operations go to the user's newest thread, so threads see several operations
    // in a row (a removal after an add, a merge after a fork).
    let root = if (pick >> 40) & 1 == 1 {
        &threads[threads.len() - 1]
    } else {
        &threads[usize::try_from(pick % threads.len() as u64).unwrap_or(0)]
    };
    let st = owned.entry(root.thread.clone()).or_default();
    let fresh: Vec<&String> = everyone
        .iter()
        .filter(|a| **a != me && !root.to.contains(a) && !st.added.contains(a))
        .collect();
    let choice = (pick >> 16) % 6;
    let open_fork = st.forks.iter().position(|(_, merged)| !merged);
    // A thread with an open fork or an added participant gets the follow-up (merge, removal)
    // half the time; otherwise add (3/6), fork (2/6) or lock (1/6).
    let (intent, params, who) = if st.locked {
        ("thread.reopen@v1", json!({}), None)
    } else if choice.is_multiple_of(2)
        && let Some(i) = open_fork
    {
        let fork = st.forks[i].0.clone();
        (
            "thread.merge@v1",
            json!({"fork_thread_id": fork}),
            Some(fork),
        )
    } else if !choice.is_multiple_of(2)
        && let Some(who) = st.added.last().cloned()
    {
        (
            "thread.remove_participant@v1",
            json!({"identity": who}),
            Some(who),
        )
    } else if matches!(choice, 0 | 1 | 5) && !fresh.is_empty() {
        let who = fresh[usize::try_from((pick >> 24) % fresh.len() as u64).unwrap_or(0)].clone();
        (
            "thread.add_participant@v1",
            json!({"identity": who, "role": "participant"}),
            Some(who),
        )
    } else if matches!(choice, 2 | 3) {
        let fork = factory.thread_id();
        (
            "thread.fork@v1",
            json!({"fork_thread_id": fork, "forked_from": root.id}),
            Some(fork),
        )
    } else {
        ("thread.lock@v1", json!({}), None)
    };
    let env = factory.thread_op(&user.id, &root.thread, intent, params)?;
    let sent = user.client.send_envelope(&env).await;
    let (status, digest) = status_of(&sent);
    let id = env["id"].as_str().unwrap_or_default().to_owned();
    let mut rec = plan.shared.lock();
    rec.line(
        "http",
        json!({"client": plan.domain, "user": me, "op": intent, "envelope": id,
               "thread": root.thread, "subject": who, "status": status, "body": digest}),
    );
    if sent.is_ok() {
        match intent {
            "thread.add_participant@v1" => st.added.extend(who),
            "thread.remove_participant@v1" => {
                st.added.pop();
            }
            "thread.fork@v1" => st.forks.extend(who.map(|f| (f, false))),
            "thread.merge@v1" => {
                if let Some(i) = open_fork {
                    st.forks[i].1 = true;
                }
            }
            "thread.lock@v1" => st.locked = true,
            _ => st.locked = false,
        }
        rec.acks.push(Ack {
            node: plan.domain.clone(),
            id,
            thread: root.thread.clone(),
            parent: None,
            sender: me.clone(),
            to: vec![me],
            kind: "thread_op".into(),
        });
    }
    Ok(true)
}

/// Retracts one of `user`'s messages on its own node (`DELETE /v1/envelopes/{id}`, v1.1
/// §20.7); `false` when it has none left to retract.
async fn retract(plan: &ClientPlan, user: &mut User, pick: u64) -> bool {
    let me = user.id.address().to_owned();
    let mine: Vec<String> = {
        let rec = plan.shared.lock();
        rec.acks
            .iter()
            .filter(|a| {
                a.kind == "message"
                    && a.sender == me
                    && a.node == plan.domain
                    && !rec.retracted.contains(&a.id)
            })
            .map(|a| a.id.clone())
            .collect()
    };
    if mine.is_empty() {
        return false;
    }
    let id = &mine[usize::try_from(pick % mine.len() as u64).unwrap_or(0)];
    let t = user
        .client
        .call("DELETE", &format!("/v1/envelopes/{id}"), None)
        .await;
    let (status, digest) = crate::trace::outcome(&t);
    let mut rec = plan.shared.lock();
    rec.line(
        "http",
        json!({"client": plan.domain, "user": me, "op": "retract", "envelope": id,
               "status": status, "body": digest}),
    );
    if status == 200 {
        rec.retracted.insert(id.clone());
    }
    true
}

/// The replay host: at each time in `times_ms` (simulated ms since start) it re-sends the
/// latest recorded federation delivery byte for byte and records the answer. A replayed,
/// signed delivery request must be refused (v1.1 §15.3 nonce cache, §23.2): a 2xx is a
/// `replay-refused` violation.
pub async fn run_replayer(
    times_ms: Vec<u64>,
    shared: Shared,
) -> Result<(), Box<dyn std::error::Error>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    for at in times_ms {
        let now =
            u64::try_from(turmoil::sim_elapsed().unwrap_or_default().as_millis()).unwrap_or(0);
        if at > now {
            tokio::time::sleep(Duration::from_millis(at - now)).await;
        }
        let Some(c) = shared.lock().captured.last().cloned() else {
            shared
                .lock()
                .line("replay", json!({"skipped": "nothing recorded yet"}));
            continue;
        };
        let mut status = 0u16;
        if let Ok(mut s) = turmoil::net::TcpStream::connect((c.to.as_str(), PORT)).await
            && s.write_all(&c.bytes).await.is_ok()
        {
            let mut buf = vec![0u8; 256];
            if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await
            {
                let line = String::from_utf8_lossy(&buf[..n]).into_owned();
                status = line
                    .split(' ')
                    .nth(1)
                    .and_then(|x| x.parse().ok())
                    .unwrap_or(0);
            }
        }
        let t = u64::try_from(turmoil::sim_elapsed().unwrap_or_default().as_millis()).unwrap_or(0);
        let mut rec = shared.lock();
        rec.line(
            "replay",
            json!({"from": c.from, "to": c.to, "request_sha": short_hash(&c.bytes), "status": status}),
        );
        if (200..300).contains(&status) {
            rec.violation(
                "replay-refused",
                t,
                format!(
                    "a replayed delivery request from {} to {} (request {}) was accepted with {status}; a used nonce must be refused (v1.1 §15.3, §23.2)",
                    c.from,
                    c.to,
                    short_hash(&c.bytes)
                ),
            );
        }
    }
    Ok(())
}
