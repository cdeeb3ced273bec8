//! WebSocket watchers (`[realtime]`, issue 34 Build 5): turmoil hosts logged in as one of a
//! node's users that hold its real-time stream (v1.1 §17) open, drop it after a random time
//! (sometimes politely, sometimes by vanishing), wait, and resume from the last `event_id`
//! they saw (§17.1) — across partitions, crashes and restarts of their node. What each saw
//! goes into the run's record ([`crate::trace::WatchRecord`]); the `realtime-stream` invariant
//! compares it with the node's event log.

use crate::scenario::Realtime;
use crate::trace::{Shared, WatchRecord};
use crate::workload::identity;
use loom_client::ws::{self, Frame, TokenIn};
use loom_client::{Client, SimDial};
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use serde_json::json;
use std::time::Duration;
use tokio::time::Instant;

/// What one watcher host needs.
#[derive(Debug, Clone)]
pub struct WatcherPlan {
    /// Its host name.
    pub host: String,
    /// The node's domain.
    pub domain: String,
    /// The node's base URL.
    pub url: String,
    /// The user it watches as (registered by the node's client host).
    pub user: String,
    /// The run seed (the user's key derives from it).
    pub seed: u64,
    /// This watcher's sub-seed.
    pub rng_seed: u64,
    /// Its timing.
    pub realtime: Realtime,
    /// Simulated seconds before the workload starts.
    pub setup_secs: u64,
    /// The run's record.
    pub shared: Shared,
}

/// The turmoil host name of watcher `k` of `domain`.
pub fn host_name(domain: &str, k: usize) -> String {
    format!("watch{k}.{domain}")
}

fn between(rng: &mut ChaCha20Rng, [lo, hi]: [u64; 2]) -> Duration {
    let span = hi.saturating_sub(lo).saturating_add(1);
    Duration::from_millis(lo + rng.next_u64() % span)
}

/// Logs in as the plan's user, retrying while the node is unreachable or the user not yet
/// registered; `None` once `deadline` passed.
async fn login(plan: &WatcherPlan, deadline: Instant) -> Option<String> {
    let id = identity(plan.seed, &plan.user).ok()?;
    while Instant::now() < deadline {
        if let Ok(http) = Client::new(&plan.url, SimDial) {
            let mut http = http.with_timeout(Duration::from_secs(10));
            if let Ok(s) = id.login(&mut http).await {
                return Some(s.access_token);
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    None
}

/// Runs one watcher until `watch_secs` of simulated time have passed.
pub async fn run_watcher(plan: WatcherPlan) -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(plan.realtime.watch_secs);
    let mut rng = ChaCha20Rng::seed_from_u64(plan.rng_seed);
    // The node's client host registers the user during setup.
    tokio::time::sleep(Duration::from_secs(plan.setup_secs)).await;
    let index = {
        let mut rec = plan.shared.lock();
        rec.watchers.push(WatchRecord {
            host: plan.host.clone(),
            node: plan.domain.clone(),
            identity: plan.user.clone(),
            ..WatchRecord::default()
        });
        rec.watchers.len() - 1
    };
    let Some(mut token) = login(&plan, deadline).await else {
        return Ok(());
    };
    // Where to resume: the last event id seen, or the first subscription's cursor.
    let mut last_event: Option<String> = None;
    while Instant::now() < deadline {
        let opened = ws::connect(
            &SimDial,
            &plan.url,
            None,
            "/ws",
            &token,
            TokenIn::Query,
            Duration::from_secs(10),
        )
        .await;
        let mut c = match opened {
            Ok(c) => c,
            Err(ws::Refused::Status(401, _)) => {
                if let Some(t) = login(&plan, deadline).await {
                    token = t;
                }
                continue;
            }
            Err(_) => {
                tokio::time::sleep(between(&mut rng, plan.realtime.pause_ms)).await;
                continue;
            }
        };
        let session = {
            let mut rec = plan.shared.lock();
            rec.watchers[index].sessions += 1;
            rec.watchers[index].sessions
        };
        let mut sub = json!({"action": "subscribe", "channels": [{"type": "all_threads"}]});
        if let Some(e) = &last_event {
            sub["since"] = e.clone().into();
        }
        if c.send(&sub).await.is_err() {
            continue;
        }
        let end = (Instant::now() + between(&mut rng, plan.realtime.session_ms)).min(deadline);
        let mut received = 0usize;
        let mut how = "dropped";
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match c.next(left).await {
                None => break,
                Some(Frame::Closed(_)) => {
                    how = "closed by the node";
                    break;
                }
                Some(Frame::Json(v)) => {
                    let mut rec = plan.shared.lock();
                    let w = &mut rec.watchers[index];
                    if v["event"] == "subscribed" {
                        if w.start.is_none() {
                            w.start = v["cursor"].as_str().and_then(|c| c.parse().ok());
                        }
                        // Before any event, the subscription's own position is where to
                        // resume (the node takes a cursor in `since`, §17.1).
                        if last_event.is_none() {
                            last_event = v["cursor"].as_str().map(str::to_owned);
                        }
                        continue;
                    }
                    if let (Some(id), Some(cursor)) = (
                        v["event_id"].as_str(),
                        v["cursor"].as_str().and_then(|c| c.parse::<i64>().ok()),
                    ) {
                        let thread = v["thread_id"].as_str().map(str::to_owned);
                        w.frames.push((id.to_owned(), cursor, thread));
                        last_event = Some(id.to_owned());
                        received += 1;
                    }
                }
                Some(_) => {}
            }
        }
        // Half the time the watcher says goodbye; otherwise it just vanishes.
        if how == "dropped" && rng.next_u64() % 2 == 0 {
            c.close().await;
            how = "closed";
        } else {
            drop(c);
        }
        plan.shared.lock().line(
            "ws",
            json!({"host": plan.host, "session": session, "events": received, "end": how, "resume_from": last_event}),
        );
        tokio::time::sleep(between(&mut rng, plan.realtime.pause_ms)).await;
    }
    Ok(())
}
