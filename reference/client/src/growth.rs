//! `loom-load --slice N`: does the node stay flat as data grows? (issue 14 "Done when").
//!
//! The run signs `count` envelopes like an ordinary run (threads of `thread_length`, each
//! identity writing to the next, the identities' threads taking turns, ids minted in
//! posting order), cut into slices of `slice` envelopes, so every identity's threads are
//! spread evenly over the slices, and posts the slices one after the other over the same
//! `concurrency` connections. After each slice, with no posts in flight, it times three
//! reads as the first identity, each the median of `reads` requests (`time_reads`: after a
//! pause and untimed rounds, the three reads take turns; of [`PASSES`] such medians of the
//! same store the lowest counts, so that outside load — another VM, the kernel still
//! writing back the slice — is not mistaken for growth). A control request that never
//! touches the store is timed in the same rounds. Further passes follow (at most
//! [`MAX_PASSES`]) while the control's best median is more than [`CONTROL_SLACK`] above its
//! value on the empty store (the machine is slower than when the run began), or while a
//! read's best median is more than [`READ_TOLERANCE`] above its value after the first
//! slice. Every pass times the same unchanged store, so a store that became slower is
//! slower in every pass and stays over the tolerance; only a disturbance that passes is
//! filtered out. The `passes` column shows which slices needed more. The reads:
//!
//! - a page of threads: `GET /v1/threads?limit=50`;
//! - a page of events: `GET /v1/events?limit=50`;
//! - a search: `GET /v1/search?q=needle&limit=20`. The word `needle` is in the text of the
//!   first identity's first [`SEARCH_HITS`] envelopes (all in the first slice when a slice
//!   holds at least that many per identity), so the
//!   search has the same answer at every slice and what is timed is finding it, not
//!   ranking a number of matches that grows with the store.
//!
//! The verdict follows the issue: the last slice's throughput within 15% of the first's,
//! and each read within 25% of its value after the first slice.

use crate::client::Client;
use crate::dial::Dial;
use crate::error::ClientError;
use crate::load::{LoadConfig, Tally, connect_all, payload, plan, post, presign, setup};
use loom_protocol::clock::Clock;
use serde_json::{Value, json};

/// The pause between a slice's last post and its reads.
pub const SETTLE: std::time::Duration = std::time::Duration::from_secs(1);
/// Timing passes per slice at least; each read reports its lowest median. Nothing is
/// written between the passes, so the store is the same and a pass slower than another
/// measured outside load (a stall of the VM, the kernel's writeback), not the store.
pub const PASSES: usize = 2;
/// Timing passes per slice at most: passes beyond [`PASSES`] are taken only while the
/// control's best median stays more than [`CONTROL_SLACK`] above the baseline or a read's
/// more than [`READ_TOLERANCE`] above its first value.
pub const MAX_PASSES: usize = 6;
/// How far above its baseline (timed on the empty store before the first slice) the
/// control may be for a slice's reads to count as measured on an unloaded machine.
pub const CONTROL_SLACK: f64 = 0.10;
/// Untimed rounds of the reads before the timed ones.
pub const WARMUP_READS: usize = 3;
/// Envelopes whose text holds the searched word.
pub const SEARCH_HITS: usize = 20;
/// The searched word.
pub const NEEDLE: &str = "needle";
/// Throughput of the last slice may be this much below the first's.
pub const THROUGHPUT_TOLERANCE: f64 = 0.15;
/// A read may be this much slower than after the first slice.
pub const READ_TOLERANCE: f64 = 0.25;

/// The reads timed after every slice: name, request path and the member of the answer
/// that lists what was found.
pub const READS: [(&str, &str, &str); 3] = [
    ("threads page", "/v1/threads?limit=50", "threads"),
    ("events page", "/v1/events?limit=50", "events"),
    ("search", "/v1/search?q=needle&limit=20", "envelopes"),
];

/// Timed with the reads, as a control: a request whose cost does not depend on what is
/// stored (the node document, §15.2). When the control is slow, the machine was slow, not
/// the store: the slice gets more passes (up to [`MAX_PASSES`]), and the verdict still
/// judges the reads alone.
pub const CONTROL: &str = "/.well-known/loom.json";

/// One slice's measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice {
    /// Envelopes posted in this slice.
    pub posted: usize,
    /// Envelopes accepted so far (all slices up to this one).
    pub stored: u64,
    /// Accepted envelopes per second in this slice.
    pub envelopes_per_sec: f64,
    /// Median post latency, ms.
    pub p50_ms: f64,
    /// 99th percentile post latency, ms.
    pub p99_ms: f64,
    /// Posts that did not get a 201.
    pub failures: u64,
    /// Median of each read in [`READS`] order, ms.
    pub reads_ms: [f64; 3],
    /// How many items each read returned (the last of its requests).
    pub read_items: [usize; 3],
    /// Median of [`CONTROL`], ms (the lowest of the passes).
    pub control_ms: f64,
    /// Timing passes taken: [`PASSES`], more while the control or a read was slow.
    pub passes: usize,
}

/// The result of a growth run.
#[derive(Debug, Clone, PartialEq)]
pub struct GrowthReport {
    /// The node's base URL.
    pub target: String,
    /// Envelopes per slice.
    pub slice: usize,
    /// Requests per read timing.
    pub reads: usize,
    /// Envelopes per thread.
    pub thread_length: usize,
    /// Identities and connections.
    pub identities: usize,
    /// Connections.
    pub concurrency: usize,
    /// The control's median on the empty store, before the first slice, ms.
    pub baseline_control_ms: f64,
    /// The slices in order.
    pub slices: Vec<Slice>,
}

impl GrowthReport {
    /// Last slice's throughput relative to the first (1.0 = equal).
    pub fn throughput_ratio(&self) -> Option<f64> {
        let (first, last) = (self.slices.first()?, self.slices.last()?);
        (first.envelopes_per_sec > 0.0).then(|| last.envelopes_per_sec / first.envelopes_per_sec)
    }

    /// Each read's worst value relative to its first (1.0 = equal), in [`READS`] order.
    pub fn read_ratios(&self) -> Option<[f64; 3]> {
        let first = self.slices.first()?;
        let mut out = [0.0; 3];
        for (i, o) in out.iter_mut().enumerate() {
            let worst = self
                .slices
                .iter()
                .map(|s| s.reads_ms[i])
                .fold(0.0, f64::max);
            *o = if first.reads_ms[i] > 0.0 {
                worst / first.reads_ms[i]
            } else {
                f64::INFINITY
            };
        }
        Some(out)
    }

    /// The control's worst value relative to its first ([`CONTROL`]).
    pub fn control_ratio(&self) -> Option<f64> {
        let first = self.slices.first()?.control_ms;
        let worst = self.slices.iter().map(|s| s.control_ms).fold(0.0, f64::max);
        (first > 0.0).then(|| worst / first)
    }

    /// Slices whose control stayed more than [`CONTROL_SLACK`] above the baseline after
    /// [`MAX_PASSES`]: their reads were timed on a slower machine.
    pub fn slow_machine_slices(&self) -> usize {
        self.slices
            .iter()
            .filter(|s| machine_slow(s.control_ms, self.baseline_control_ms))
            .count()
    }

    /// Whether the run meets the issue's flatness targets (and every post succeeded).
    pub fn flat(&self) -> bool {
        self.slices.iter().all(|s| s.failures == 0)
            && self
                .throughput_ratio()
                .is_some_and(|r| r >= 1.0 - THROUGHPUT_TOLERANCE)
            && self
                .read_ratios()
                .is_some_and(|r| r.iter().all(|x| *x <= 1.0 + READ_TOLERANCE))
    }

    /// The report as JSON (`--json`).
    pub fn to_json(&self) -> Value {
        json!({
            "target": self.target,
            "slice": self.slice,
            "reads": self.reads,
            "thread_length": self.thread_length,
            "identities": self.identities,
            "concurrency": self.concurrency,
            "baseline_control_ms": self.baseline_control_ms,
            "read_paths": READS.iter().map(|(_, p, _)| *p).collect::<Vec<_>>(),
            "slices": self.slices.iter().map(|s| json!({
                "posted": s.posted,
                "stored": s.stored,
                "envelopes_per_sec": s.envelopes_per_sec,
                "p50_ms": s.p50_ms,
                "p99_ms": s.p99_ms,
                "failures": s.failures,
                "threads_page_ms": s.reads_ms[0],
                "events_page_ms": s.reads_ms[1],
                "search_ms": s.reads_ms[2],
                "read_items": s.read_items,
                "control_ms": s.control_ms,
                "passes": s.passes,
            })).collect::<Vec<_>>(),
            "slow_machine_slices": self.slow_machine_slices(),
            "throughput_ratio": self.throughput_ratio(),
            "read_ratios": self.read_ratios(),
            "flat": self.flat(),
        })
    }

    /// The human-readable table.
    pub fn render(&self) -> String {
        let mut s = format!(
            "loom-load growth → {} ({} identities, {} connections, thread length {}, slices of {}, reads: median of {})\n",
            self.target,
            self.identities,
            self.concurrency,
            self.thread_length,
            self.slice,
            self.reads
        );
        s.push_str(&format!(
            "  control on the empty store: {:.2} ms\n",
            self.baseline_control_ms
        ));
        s.push_str("  slice   stored    env/s   p50 ms   p99 ms  failed  threads ms  events ms  search ms  control ms  passes\n");
        for (i, x) in self.slices.iter().enumerate() {
            s.push_str(&format!(
                "  {:>5} {:>8} {:>8.0} {:>8.2} {:>8.2} {:>7} {:>11.2} {:>10.2} {:>10.2} {:>11.2} {:>7}\n",
                i + 1,
                x.stored,
                x.envelopes_per_sec,
                x.p50_ms,
                x.p99_ms,
                x.failures,
                x.reads_ms[0],
                x.reads_ms[1],
                x.reads_ms[2],
                x.control_ms,
                x.passes
            ));
        }
        if let (Some(t), Some(r)) = (self.throughput_ratio(), self.read_ratios()) {
            s.push_str(&format!(
                "  last/first throughput {:.2} (target ≥ {:.2}); worst/first reads: threads {:.2}, events {:.2}, search {:.2} (target ≤ {:.2}) → {}\n",
                t,
                1.0 - THROUGHPUT_TOLERANCE,
                r[0],
                r[1],
                r[2],
                1.0 + READ_TOLERANCE,
                if self.flat() { "flat" } else { "NOT flat" }
            ));
        }
        if let Some(c) = self.control_ratio() {
            s.push_str(&format!(
                "  worst/first control ({CONTROL}, independent of the store) {c:.2}\n"
            ));
        }
        let slow = self.slow_machine_slices();
        if slow > 0 {
            s.push_str(&format!(
                "  {slow} slice(s) timed while the control stayed over {:.0}% above the empty store's after {MAX_PASSES} passes: the machine was slower, and their reads still count\n",
                CONTROL_SLACK * 100.0
            ));
        }
        s
    }
}

/// The message text of identity `i`'s `n`th envelope: the searched word in the first
/// identity's first [`SEARCH_HITS`], the plain payload elsewhere (both `bytes` long).
fn text(bytes: usize) -> impl Fn(usize, usize) -> String {
    let plain = payload(bytes);
    let marked: String = format!("{NEEDLE} {plain}")
        .chars()
        .take(bytes.max(NEEDLE.len()))
        .collect();
    move |i, n| {
        if i == 0 && n < SEARCH_HITS {
            marked.clone()
        } else {
            plain.clone()
        }
    }
}

/// Cuts `chains` into slices of at least `slice` envelopes (whole threads).
fn cut<T>(chains: Vec<Vec<T>>, slice: usize) -> Vec<Vec<Vec<T>>> {
    let mut out: Vec<Vec<Vec<T>>> = Vec::new();
    let mut cur = Vec::new();
    let mut n = 0;
    for c in chains {
        n += c.len();
        cur.push(c);
        if n >= slice {
            out.push(std::mem::take(&mut cur));
            n = 0;
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether any read is more than [`READ_TOLERANCE`] above its value after the first slice.
fn reads_over(reads_ms: &[f64; 3], first_ms: &[f64; 3]) -> bool {
    reads_ms
        .iter()
        .zip(first_ms)
        .any(|(r, f)| *r > f * (1.0 + READ_TOLERANCE))
}

/// Whether a control median shows a machine slower than at the baseline.
fn machine_slow(control_ms: f64, baseline_ms: f64) -> bool {
    baseline_ms > 0.0 && control_ms > baseline_ms * (1.0 + CONTROL_SLACK)
}

/// One `GET path` as `token`: milliseconds, and how many items the answer's `list` member
/// held; fails on a non-200 answer.
async fn read_once<D: Dial + Clone>(
    client: &mut Client<D>,
    path: &str,
    list: &str,
    token: &str,
) -> Result<(f64, usize), ClientError> {
    let t = client.exchange("GET", path, &[], None, Some(token)).await?;
    if t.status != 200 {
        return Err(ClientError::BadResponse {
            reason: format!("GET {path} answered {}", t.status),
            transcript: Box::new(t),
        });
    }
    let items = serde_json::from_slice::<Value>(&t.response_body)
        .ok()
        .and_then(|v| v.get(list).and_then(Value::as_array).map(Vec::len))
        .unwrap_or(0);
    Ok((t.elapsed.as_secs_f64() * 1000.0, items))
}

/// Times every read of [`READS`]: after [`SETTLE`] and [`WARMUP_READS`] untimed rounds,
/// `reads` rounds of the three requests back to back (spacing them out lets the runtimes
/// park between requests, and the wake-ups then cost more than the reads), so that a burst
/// of outside load slows a few samples of each read rather than all samples of one; each
/// read's median and item count.
async fn time_reads<D: Dial + Clone>(
    client: &mut Client<D>,
    token: &str,
    reads: usize,
) -> Result<([f64; 3], [usize; 3], f64), ClientError> {
    tokio::time::sleep(SETTLE).await;
    let mut ms: [Vec<f64>; 4] = Default::default();
    let mut items = [0; 3];
    for round in 0..WARMUP_READS + reads.max(1) {
        for (i, (_, path, list)) in READS.iter().enumerate() {
            let (t, n) = read_once(client, path, list, token).await?;
            items[i] = n;
            if round >= WARMUP_READS {
                ms[i].push(t);
            }
        }
        let (t, _) = read_once(client, CONTROL, "", token).await?;
        if round >= WARMUP_READS {
            ms[3].push(t);
        }
    }
    let mut medians = [0.0; 4];
    for (m, mut v) in medians.iter_mut().zip(ms) {
        v.sort_by(f64::total_cmp);
        *m = v[v.len() / 2];
    }
    Ok(([medians[0], medians[1], medians[2]], items, medians[3]))
}

/// Runs the growth benchmark: `cfg` as for an ordinary run, `slice` envelopes per slice,
/// `reads` requests per read timing.
pub async fn run_growth<D, C>(
    cfg: &LoadConfig,
    slice: usize,
    reads: usize,
    dial: D,
    clock: C,
) -> Result<GrowthReport, ClientError>
where
    D: Dial + Clone + Send + 'static,
    Client<D>: Send,
    C: Clock + Clone,
{
    if slice == 0 {
        return Err(ClientError::Input("--slice must be at least 1".into()));
    }
    let mut s = setup(cfg, &dial, clock).await?;
    let slices = presign(
        cfg.concurrency,
        &s.idents,
        &mut s.factory,
        cut(plan(cfg), slice),
        &text(cfg.payload_bytes),
    )?;
    let token = s.tokens.first().cloned().unwrap_or_default();
    let mut clients = connect_all(cfg, &dial).await?;
    let mut baseline_control_ms = f64::INFINITY;
    for _ in 0..PASSES {
        let (_, _, control) = time_reads(&mut s.admin, &token, reads).await?;
        baseline_control_ms = baseline_control_ms.min(control);
    }
    let mut stored = 0u64;
    let mut out = Vec::with_capacity(slices.len());
    for queues in slices {
        let posted_n = queues.iter().map(Vec::len).sum();
        let posted = post(clients, queues, &s.tokens).await?;
        let Tally {
            successes,
            failures,
            latency,
            ..
        } = posted.tally();
        stored += successes;
        let (mut reads_ms, read_items, mut control_ms) =
            time_reads(&mut s.admin, &token, reads).await?;
        let mut passes = 1;
        let first_reads = out.first().map(|f: &Slice| f.reads_ms);
        while passes < PASSES
            || (passes < MAX_PASSES
                && (machine_slow(control_ms, baseline_control_ms)
                    || first_reads.is_some_and(|f| reads_over(&reads_ms, &f))))
        {
            let (again, _, control) = time_reads(&mut s.admin, &token, reads).await?;
            for (r, a) in reads_ms.iter_mut().zip(again) {
                *r = r.min(a);
            }
            control_ms = control_ms.min(control);
            passes += 1;
        }
        out.push(Slice {
            posted: posted_n,
            stored,
            envelopes_per_sec: if posted.elapsed_secs > 0.0 {
                successes as f64 / posted.elapsed_secs
            } else {
                0.0
            },
            p50_ms: latency.p50,
            p99_ms: latency.p99,
            failures,
            reads_ms,
            read_items,
            control_ms,
            passes,
        });
        clients = posted.clients;
    }
    Ok(GrowthReport {
        target: cfg.target.clone(),
        slice,
        reads,
        thread_length: cfg.thread_length,
        identities: cfg.identities,
        concurrency: cfg.concurrency,
        baseline_control_ms,
        slices: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_threads_whole() {
        let chains = vec![vec![0, 0], vec![1], vec![0], vec![1, 1]];
        let slices = cut(chains, 3);
        let sizes: Vec<Vec<usize>> = slices
            .iter()
            .map(|s| s.iter().map(Vec::len).collect())
            .collect();
        assert_eq!(sizes, [vec![2, 1], vec![1, 2]]);
    }

    #[test]
    fn needle_only_in_the_first_identitys_first_envelopes() {
        let t = text(64);
        assert!(t(0, 0).starts_with("needle "));
        assert!(t(0, SEARCH_HITS - 1).starts_with("needle "));
        assert!(!t(0, SEARCH_HITS).contains(NEEDLE));
        assert!(!t(1, 0).contains(NEEDLE));
        assert_eq!(t(0, 0).len(), 64);
        assert_eq!(t(3, 7).len(), 64);
    }

    fn slice(eps: f64, reads: [f64; 3]) -> Slice {
        Slice {
            posted: 10,
            stored: 10,
            envelopes_per_sec: eps,
            p50_ms: 1.0,
            p99_ms: 2.0,
            failures: 0,
            reads_ms: reads,
            read_items: [50, 50, 20],
            control_ms: 0.1,
            passes: PASSES,
        }
    }

    #[test]
    fn verdict_uses_the_issue_tolerances() {
        let mut r = GrowthReport {
            target: "t".into(),
            slice: 10,
            reads: 3,
            thread_length: 1,
            identities: 1,
            concurrency: 1,
            baseline_control_ms: 0.1,
            slices: vec![
                slice(1000.0, [1.0, 1.0, 1.0]),
                slice(860.0, [1.2, 1.25, 0.9]),
            ],
        };
        assert!(r.flat(), "{}", r.render());
        r.slices[1].envelopes_per_sec = 840.0;
        assert!(!r.flat());
        r.slices[1].envelopes_per_sec = 900.0;
        r.slices[1].reads_ms[2] = 1.3;
        assert!(!r.flat());
        assert!(r.render().contains("NOT flat"));
        // The control is reported, never judged: a slow machine is shown, not excused.
        r.slices[1].control_ms = 0.13;
        assert_eq!(r.control_ratio().map(|c| (c * 100.0).round()), Some(130.0));
        assert!(!r.flat());
        assert!(r.render().contains("worst/first control"), "{}", r.render());
        // Still slow after the extra passes: reported as such, and the reads still judged.
        assert_eq!(r.slow_machine_slices(), 1);
        assert!(r.render().contains("1 slice(s) timed while the control"));
        r.slices[1].reads_ms[2] = 1.0;
        assert!(r.flat(), "{}", r.render());
        r.slices[1].control_ms = 0.11;
        assert_eq!(r.slow_machine_slices(), 0);
    }

    #[test]
    fn only_a_control_over_the_slack_means_a_slow_machine() {
        assert!(!machine_slow(0.11, 0.10));
        assert!(machine_slow(0.111, 0.10));
        assert!(!machine_slow(5.0, 0.0), "no baseline, no excuse");
    }

    #[test]
    fn a_read_over_the_tolerance_is_timed_again() {
        let first = [0.40, 0.20, 0.50];
        assert!(
            !reads_over(&[0.50, 0.25, 0.625], &first),
            "at the tolerance"
        );
        assert!(reads_over(&[0.40, 0.20, 0.63], &first));
        assert!(reads_over(&[0.51, 0.10, 0.10], &first));
    }
}
