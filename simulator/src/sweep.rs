//! Sweeps (issue 16 Build 6): many seeds of one scenario, optionally one shard of them
//! (`--shard i/n` takes the seeds whose position in the range is `i` modulo `n`, so a CI
//! matrix or batch scheduler can spread a sweep over machines), on `--jobs K` threads.
//! Each run is independent and deterministic; the summary lists seeds in order whatever
//! order the threads finished in.

use crate::scenario::Scenario;
use crate::world::{RunOptions, RunReport, run};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `i/n`: this machine's part of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Index, `0..n`.
    pub index: u64,
    /// Number of shards.
    pub count: u64,
}

impl Shard {
    /// Parses `i/n` with `i < n`.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("--shard {s:?}: expected i/n, e.g. 0/4"))?;
        let index: u64 = i
            .parse()
            .map_err(|_| format!("--shard {s:?}: {i:?} is not a number"))?;
        let count: u64 = n
            .parse()
            .map_err(|_| format!("--shard {s:?}: {n:?} is not a number"))?;
        if count == 0 || index >= count {
            return Err(format!("--shard {s:?}: need 0 <= i < n"));
        }
        Ok(Shard { index, count })
    }
}

/// Parses `a..b` (end exclusive).
pub fn parse_range(s: &str) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("--seeds {s:?}: expected a..b, e.g. 0..1000"))?;
    let a: u64 = a
        .parse()
        .map_err(|_| format!("--seeds {s:?}: {a:?} is not a number"))?;
    let b: u64 = b
        .parse()
        .map_err(|_| format!("--seeds {s:?}: {b:?} is not a number"))?;
    if b < a {
        return Err(format!("--seeds {s:?}: the end is before the start"));
    }
    Ok(a..b)
}

/// The seeds of `range` that belong to `shard`.
pub fn seeds(range: std::ops::Range<u64>, shard: Option<Shard>) -> Vec<u64> {
    range
        .filter(|s| shard.is_none_or(|sh| s % sh.count == sh.index))
        .collect()
}

/// What a sweep found.
#[derive(Debug, Clone)]
pub struct SweepResult {
    /// Reports by seed.
    pub reports: BTreeMap<u64, Result<RunReport, String>>,
    /// Wall-clock seconds the sweep took (measured by the caller's clock; not in the summary
    /// hash).
    pub wall_secs: f64,
}

impl SweepResult {
    /// Seeds with a violation or an error.
    pub fn failures(&self) -> Vec<u64> {
        self.reports
            .iter()
            .filter(|(_, r)| !r.as_ref().is_ok_and(RunReport::ok))
            .map(|(s, _)| *s)
            .collect()
    }

    /// The JSON summary of a sweep of the scenario named `name`, given on the command line
    /// as `scenario` (a shipped name or a file path) with the quirks `quirks`: each failure's
    /// `replay` is exactly the command that replays it (the same as the `FAIL` lines).
    pub fn summary(&self, name: &str, scenario: &str, quirks: &[String]) -> Value {
        let failures: Vec<Value> = self
            .reports
            .iter()
            .filter_map(|(seed, r)| match r {
                Ok(r) if r.ok() => None,
                Ok(r) => {
                    let v = &r.violations[0];
                    Some(
                        json!({"seed": seed, "invariant": v.invariant, "step": v.step,
                        "at_ms": v.at_ms, "detail": v.detail,
                        "replay": crate::world::replay_command(scenario, *seed, quirks)}),
                    )
                }
                Err(e) => Some(json!({"seed": seed, "error": e})),
            })
            .collect();
        let simulated: u64 = self
            .reports
            .values()
            .filter_map(|r| r.as_ref().ok().map(|r| r.simulated_ms))
            .sum();
        json!({
            "scenario": name,
            "seeds": self.reports.len(),
            "passed": self.reports.len() - failures.len(),
            "failed": failures.len(),
            "failures": failures,
            "simulated_secs": simulated as f64 / 1000.0,
            "wall_secs": self.wall_secs,
            "seeds_per_sec": if self.wall_secs > 0.0 { self.reports.len() as f64 / self.wall_secs } else { 0.0 },
        })
    }
}

/// Called after each run: `(done, total, failed so far, the failing report)`.
pub type Progress<'a> = dyn Fn(usize, usize, usize, Option<&RunReport>) + Sync + 'a;

/// Runs every seed on `jobs` threads; `progress(done, total, failures)` after each run.
pub fn sweep(
    scenario: &Scenario,
    seeds: &[u64],
    jobs: usize,
    opts: &RunOptions,
    progress: &Progress<'_>,
) -> BTreeMap<u64, Result<RunReport, String>> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    let results = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&seed) = seeds.get(i) else { break };
                    let r = run(scenario, seed, opts);
                    let bad = !r.as_ref().is_ok_and(RunReport::ok);
                    if bad {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    progress(
                        n,
                        seeds.len(),
                        failed.load(Ordering::Relaxed),
                        r.as_ref().ok().filter(|_| bad),
                    );
                    results
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(seed, r);
                }
            });
        }
    });
    results.into_inner().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_the_range_without_overlap() {
        let all: Vec<u64> = (0..4)
            .flat_map(|i| seeds(0..10, Some(Shard { index: i, count: 4 })))
            .collect();
        let mut sorted = all.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
        assert!(Shard::parse("4/4").is_err());
        assert!(Shard::parse("x").is_err());
        assert_eq!(parse_range("3..7").unwrap(), 3..7);
        assert!(parse_range("7..3").is_err());
    }

    fn failing(seed: u64) -> RunReport {
        RunReport {
            scenario: "mine".into(),
            seed,
            violations: vec![crate::trace::Violation {
                invariant: "convergence".into(),
                step: 10,
                at_ms: 100,
                detail: "x".into(),
            }],
            trace_hash: String::new(),
            trace_lines: 0,
            trace: None,
            simulated_ms: 1000,
            steps: 100,
            scenario_ref: "mine.toml".into(),
            quirks: vec!["omit-event-seq".into()],
            custom_schedule: false,
            acknowledged: 1,
        }
    }

    #[test]
    fn the_summary_replay_is_the_command_that_replays() {
        let result = SweepResult {
            reports: [(7, Ok(failing(7)))].into_iter().collect(),
            wall_secs: 1.0,
        };
        // A scenario file and a quirk: the replay names the file and the quirk.
        let quirks = vec!["ignore-delivered-lock".to_owned()];
        let s = result.summary("mine", "/tmp/mine.toml", &quirks);
        assert_eq!(s["scenario"], "mine");
        assert_eq!(
            s["failures"][0]["replay"],
            "cargo run --release -p loom-sim --features quirks -- run --scenario /tmp/mine.toml --seed 7 --quirk ignore-delivered-lock --trace trace-7.jsonl"
        );
        // The report's own command carries its scenario file and quirks.
        assert_eq!(
            failing(7).replay_command(),
            "cargo run --release -p loom-sim --features quirks -- run --scenario mine.toml --seed 7 --quirk omit-event-seq --trace trace-7.jsonl"
        );
        // A shipped scenario by name on a correct node: no features, no quirk.
        let s = result.summary("mine", "mine", &[]);
        assert_eq!(
            s["failures"][0]["replay"],
            "cargo run --release -p loom-sim -- run --scenario mine --seed 7 --trace trace-7.jsonl"
        );
    }
}
