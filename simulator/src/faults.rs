//! The fault schedule (issue 16 Build 3): drawn from the seed (`[faults]` counts) plus the
//! scenario's scripted faults, as one list ordered by time. Faults on TCP links are
//! partitions and holds, never `fail_rate` (turmoil has no TCP retransmission, DESIGN.md §3).

use crate::derive_seed;
use crate::scenario::Scenario;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use serde_json::{Value, json};

/// One fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Drop every message between two nodes.
    Partition(String, String),
    /// Undo a partition.
    Repair(String, String),
    /// Queue messages between two nodes (delivered on release).
    Hold(String, String),
    /// Deliver held messages.
    Release(String, String),
    /// Give every message between two nodes this fixed latency in ms (a slow link).
    Slow(String, String, u64),
    /// Restore a slow link's latency to the scenario's `[0, max_latency_ms]`.
    Fast(String, String),
    /// Stop a node's software (the store directory stays).
    Crash(String),
    /// Start a crashed node again (or restart a running one).
    Restart(String),
    /// Set a node's clock skew, in milliseconds.
    Skew(String, i64),
    /// Step a running node's clock by this many milliseconds (forward or back).
    Jump(String, i64),
    /// Replay the latest recorded federation delivery (a network duplicate).
    Replay,
    /// Every `fsync` of the node's store fails with EIO from now on.
    FsyncFail(String),
    /// The node's `fsync`s work again.
    FsyncOk(String),
    /// The node's disk is full: writes that grow a file of its store fail with ENOSPC.
    DiskFull(String),
    /// The node's disk has room again.
    DiskFree(String),
}

/// A fault at a simulated time (ms after the workload started).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheduled {
    /// When, in ms after the workload started.
    pub at_ms: u64,
    /// What.
    pub fault: Fault,
    /// Not undone when the network heals at the end of the workload.
    pub permanent: bool,
}

impl Fault {
    /// The trace form.
    pub fn to_json(&self) -> Value {
        match self {
            Fault::Partition(a, b) => json!({"fault": "partition", "a": a, "b": b}),
            Fault::Repair(a, b) => json!({"fault": "repair", "a": a, "b": b}),
            Fault::Hold(a, b) => json!({"fault": "hold", "a": a, "b": b}),
            Fault::Release(a, b) => json!({"fault": "release", "a": a, "b": b}),
            Fault::Slow(a, b, ms) => json!({"fault": "slow", "a": a, "b": b, "ms": ms}),
            Fault::Fast(a, b) => json!({"fault": "fast", "a": a, "b": b}),
            Fault::Crash(a) => json!({"fault": "crash", "node": a}),
            Fault::Restart(a) => json!({"fault": "restart", "node": a}),
            Fault::Skew(a, ms) => json!({"fault": "skew", "node": a, "ms": ms}),
            Fault::Jump(a, ms) => json!({"fault": "jump", "node": a, "ms": ms}),
            Fault::Replay => json!({"fault": "replay"}),
            Fault::FsyncFail(a) => json!({"fault": "fsync-fail", "node": a}),
            Fault::FsyncOk(a) => json!({"fault": "fsync-ok", "node": a}),
            Fault::DiskFull(a) => json!({"fault": "disk-full", "node": a}),
            Fault::DiskFree(a) => json!({"fault": "disk-free", "node": a}),
        }
    }
}

/// The workload's expected length in ms (random faults fall inside it).
pub fn workload_window_ms(s: &Scenario) -> u64 {
    let mail = s.mail.as_ref().map_or(0, |m| {
        ((m.inbound + m.outbound) as u64).saturating_mul(m.mean_gap_ms)
    });
    (s.workload.actions as u64)
        .saturating_mul(s.workload.mean_gap_ms)
        .max(mail)
        .max(1)
}

fn pick<'a>(rng: &mut ChaCha20Rng, nodes: &'a [String]) -> &'a str {
    let i = usize::try_from(rng.next_u64() % nodes.len() as u64).unwrap_or(0);
    &nodes[i]
}

fn pair(rng: &mut ChaCha20Rng, nodes: &[String]) -> Option<(String, String)> {
    if nodes.len() < 2 {
        return None;
    }
    let a = pick(rng, nodes).to_owned();
    let others: Vec<String> = nodes.iter().filter(|n| **n != a).cloned().collect();
    let b = pick(rng, &others).to_owned();
    Some((a, b))
}

/// Two ends of a link fault: two nodes, or — in an email scenario — a node and one of the
/// outside mail hosts too (never two outside hosts, which do not talk to each other).
fn link_ends(rng: &mut ChaCha20Rng, s: &Scenario) -> Option<(String, String)> {
    if s.mail.is_none() {
        return pair(rng, &s.nodes);
    }
    let mut ends: Vec<String> = s.nodes.clone();
    ends.extend(crate::mail::HOSTS.iter().map(|h| (*h).to_owned()));
    let pairs: Vec<(String, String)> = ends
        .iter()
        .enumerate()
        .flat_map(|(i, a)| ends[i + 1..].iter().map(move |b| (a.clone(), b.clone())))
        .filter(|(a, b)| s.nodes.contains(a) || s.nodes.contains(b))
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let i = usize::try_from(rng.next_u64() % pairs.len() as u64).unwrap_or(0);
    Some(pairs[i].clone())
}

fn between(rng: &mut ChaCha20Rng, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        lo
    } else {
        lo + rng.next_u64() % (hi - lo + 1)
    }
}

impl Scheduled {
    /// The scripted form (`[[faults.script]]`) of this fault: a schedule printed this way
    /// and read back is the same schedule (`loom-sim shrink`).
    pub fn to_script(&self) -> crate::scenario::Scripted {
        let mut s = crate::scenario::Scripted {
            at_secs: 0,
            at_ms: Some(self.at_ms),
            kind: String::new(),
            a: String::new(),
            b: None,
            secs: 0,
            ms: 0,
            permanent: self.permanent,
        };
        let link = |s: &mut crate::scenario::Scripted, kind: &str, a: &str, b: &str| {
            s.kind = kind.into();
            s.a = a.into();
            s.b = Some(b.into());
        };
        let node = |s: &mut crate::scenario::Scripted, kind: &str, n: &str| {
            s.kind = kind.into();
            s.a = n.into();
        };
        match &self.fault {
            Fault::Partition(a, b) => link(&mut s, "partition", a, b),
            Fault::Repair(a, b) => link(&mut s, "repair", a, b),
            Fault::Hold(a, b) => link(&mut s, "hold", a, b),
            Fault::Release(a, b) => link(&mut s, "release", a, b),
            Fault::Slow(a, b, ms) => {
                link(&mut s, "slow", a, b);
                s.ms = i64::try_from(*ms).unwrap_or(i64::MAX);
            }
            Fault::Fast(a, b) => link(&mut s, "fast", a, b),
            Fault::Crash(n) => node(&mut s, "crash", n),
            Fault::Restart(n) => node(&mut s, "restart", n),
            Fault::Skew(n, ms) => {
                node(&mut s, "skew", n);
                s.ms = *ms;
            }
            Fault::Jump(n, ms) => {
                node(&mut s, "jump", n);
                s.ms = *ms;
            }
            Fault::Replay => s.kind = "replay".into(),
            Fault::FsyncFail(n) => node(&mut s, "fsync-fail", n),
            Fault::FsyncOk(n) => node(&mut s, "fsync-ok", n),
            Fault::DiskFull(n) => node(&mut s, "disk-full", n),
            Fault::DiskFree(n) => node(&mut s, "disk-free", n),
        }
        s
    }
}

/// The whole schedule for `seed`, ordered by time (stable for equal times).
pub fn schedule(s: &Scenario, seed: u64) -> Vec<Scheduled> {
    let mut rng = ChaCha20Rng::seed_from_u64(derive_seed(seed, "faults"));
    let window = workload_window_ms(s);
    let [dmin, dmax] = s.faults.duration_secs;
    let mut out = Vec::new();
    if s.faults.skew_max_secs > 0 {
        let max = i64::try_from(s.faults.skew_max_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
        for n in &s.nodes {
            let span = u64::try_from(max).unwrap_or(0) * 2 + 1;
            let draw = i64::try_from(rng.next_u64() % span).unwrap_or(0) - max;
            out.push(Scheduled {
                at_ms: 0,
                fault: Fault::Skew(n.clone(), draw),
                permanent: true,
            });
        }
    }
    let link = |rng: &mut ChaCha20Rng, out: &mut Vec<Scheduled>, hold: bool| {
        if let Some((a, b)) = link_ends(rng, s) {
            let start = between(rng, 0, window);
            let dur = between(rng, dmin * 1000, dmax * 1000);
            let (on, off) = if hold {
                (Fault::Hold(a.clone(), b.clone()), Fault::Release(a, b))
            } else {
                (Fault::Partition(a.clone(), b.clone()), Fault::Repair(a, b))
            };
            out.push(Scheduled {
                at_ms: start,
                fault: on,
                permanent: false,
            });
            out.push(Scheduled {
                at_ms: start + dur,
                fault: off,
                permanent: false,
            });
        }
    };
    for _ in 0..s.faults.partitions {
        link(&mut rng, &mut out, false);
    }
    for _ in 0..s.faults.holds {
        link(&mut rng, &mut out, true);
    }
    for _ in 0..s.faults.slow_links {
        if let Some((a, b)) = link_ends(&mut rng, s) {
            let start = between(&mut rng, 0, window);
            let dur = between(&mut rng, dmin * 1000, dmax * 1000);
            let ms = between(&mut rng, s.faults.slow_ms[0], s.faults.slow_ms[1]);
            out.push(Scheduled {
                at_ms: start,
                fault: Fault::Slow(a.clone(), b.clone(), ms),
                permanent: false,
            });
            out.push(Scheduled {
                at_ms: start + dur,
                fault: Fault::Fast(a, b),
                permanent: false,
            });
        }
    }
    for _ in 0..s.faults.crashes {
        let n = pick(&mut rng, &s.nodes).to_owned();
        let start = between(&mut rng, 0, window);
        let dur = between(&mut rng, dmin * 1000, dmax * 1000);
        out.push(Scheduled {
            at_ms: start,
            fault: Fault::Crash(n.clone()),
            permanent: false,
        });
        out.push(Scheduled {
            at_ms: start + dur,
            fault: Fault::Restart(n),
            permanent: false,
        });
    }
    for _ in 0..s.faults.replays {
        let at = between(&mut rng, window / 4, window);
        out.push(Scheduled {
            at_ms: at,
            fault: Fault::Replay,
            permanent: false,
        });
    }
    // Storage and clock faults: windows on one node each, drawn after every older kind so
    // the scenarios without them keep their schedules.
    let mut on_off = |rng: &mut ChaCha20Rng, on: fn(String) -> Fault, off: fn(String) -> Fault| {
        let n = pick(rng, &s.nodes).to_owned();
        let start = between(rng, 0, window);
        let dur = between(rng, dmin * 1000, dmax * 1000);
        out.push(Scheduled {
            at_ms: start,
            fault: on(n.clone()),
            permanent: false,
        });
        out.push(Scheduled {
            at_ms: start + dur,
            fault: off(n),
            permanent: false,
        });
    };
    for _ in 0..s.faults.fsync_errors {
        on_off(&mut rng, Fault::FsyncFail, Fault::FsyncOk);
    }
    for _ in 0..s.faults.disk_full {
        on_off(&mut rng, Fault::DiskFull, Fault::DiskFree);
    }
    let [jmin, jmax] = s.faults.jump_secs;
    for _ in 0..s.faults.clock_jumps {
        let n = pick(&mut rng, &s.nodes).to_owned();
        let start = between(&mut rng, 0, window);
        let dur = between(&mut rng, dmin * 1000, dmax * 1000);
        let size = i64::try_from(between(&mut rng, jmin * 1000, jmax * 1000)).unwrap_or(0);
        let ms = if rng.next_u64() & 1 == 0 { size } else { -size };
        out.push(Scheduled {
            at_ms: start,
            fault: Fault::Jump(n.clone(), ms),
            permanent: false,
        });
        out.push(Scheduled {
            at_ms: start + dur,
            fault: Fault::Jump(n, -ms),
            permanent: false,
        });
    }
    for f in &s.faults.script {
        let b = f.b.clone().unwrap_or_default();
        let fault = match f.kind.as_str() {
            "partition" => Fault::Partition(f.a.clone(), b),
            "repair" => Fault::Repair(f.a.clone(), b),
            "hold" => Fault::Hold(f.a.clone(), b),
            "release" => Fault::Release(f.a.clone(), b),
            "slow" => Fault::Slow(f.a.clone(), b, u64::try_from(f.ms).unwrap_or(0)),
            "fast" => Fault::Fast(f.a.clone(), b),
            "crash" => Fault::Crash(f.a.clone()),
            "restart" => Fault::Restart(f.a.clone()),
            "replay" => Fault::Replay,
            "fsync-fail" => Fault::FsyncFail(f.a.clone()),
            "fsync-ok" => Fault::FsyncOk(f.a.clone()),
            "disk-full" => Fault::DiskFull(f.a.clone()),
            "disk-free" => Fault::DiskFree(f.a.clone()),
            "jump" => Fault::Jump(
                f.a.clone(),
                if f.ms != 0 {
                    f.ms
                } else {
                    f.secs.saturating_mul(1000)
                },
            ),
            _ => Fault::Skew(
                f.a.clone(),
                if f.ms != 0 {
                    f.ms
                } else {
                    f.secs.saturating_mul(1000)
                },
            ),
        };
        out.push(Scheduled {
            at_ms: f.at(),
            fault,
            permanent: f.permanent,
        });
    }
    out.extend(crate::agents::crash_schedule(s, seed));
    out.sort_by_key(|f| f.at_ms);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_a_function_of_the_seed() {
        let s = Scenario::load("partition-heal").unwrap();
        assert_eq!(schedule(&s, 3), schedule(&s, 3));
        assert_ne!(schedule(&s, 3), schedule(&s, 4));
        let sched = schedule(&s, 3);
        assert_eq!(
            sched.len(),
            2 * (s.faults.partitions + s.faults.holds + s.faults.slow_links)
        );
        assert!(sched.windows(2).all(|w| w[0].at_ms <= w[1].at_ms));
    }

    #[test]
    fn skews_stay_within_the_bound() {
        let s = Scenario::load("clock-skew").unwrap();
        for seed in 0..50 {
            for f in schedule(&s, seed) {
                if let Fault::Skew(_, ms) = f.fault {
                    assert!(ms.abs() <= 600_000, "{ms}");
                }
            }
        }
    }
}
