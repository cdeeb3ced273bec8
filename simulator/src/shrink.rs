//! Shrinking a failing run (issue 16 Build 5): the fault schedule of a seed that violates an
//! invariant is cut down, keeping every cut after which the same invariant still fails. It
//! tries removing halves, then quarters, … then single faults (delta debugging, ddmin-style:
//! chunks of the current list, largest first), so a schedule of `n` faults needs
//! O(n log n) runs in the usual case. The workload is left alone: it is a function of the
//! seed, and the seed is kept.
//!
//! The result is a scenario with no random faults and the minimal schedule as scripted
//! faults (`[[faults.script]]` with `at_ms`), which `loom-sim run --scenario FILE --seed N`
//! replays: the same seed with the same schedule is the same run.

use crate::faults::{Scheduled, schedule};
use crate::scenario::Scenario;
use crate::world::{RunOptions, RunReport, run};

/// What a shrink found.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The invariant that kept failing.
    pub invariant: String,
    /// The seed's own schedule.
    pub original: Vec<Scheduled>,
    /// The smallest schedule found that still fails the invariant.
    pub minimal: Vec<Scheduled>,
    /// The failing run with the minimal schedule.
    pub report: RunReport,
    /// Runs it took (the first, failing one included).
    pub runs: usize,
    /// The scenario that replays the minimal run: random faults off, the minimal schedule
    /// scripted.
    pub scenario: Scenario,
}

impl Shrunk {
    /// The replay scenario as TOML.
    pub fn toml(&self) -> Result<String, String> {
        toml::to_string(&self.scenario).map_err(|e| format!("cannot write the scenario: {e}"))
    }
}

fn fails(
    scenario: &Scenario,
    seed: u64,
    opts: &RunOptions,
    sched: &[Scheduled],
    invariant: &str,
) -> Result<Option<RunReport>, String> {
    let o = RunOptions {
        schedule: Some(sched.to_vec()),
        keep_trace: false,
        ..opts.clone()
    };
    let r = run(scenario, seed, &o)?;
    Ok(r.violations
        .iter()
        .any(|v| v.invariant == invariant)
        .then_some(r))
}

/// The scenario that runs exactly `sched` (random fault counts zeroed).
pub fn scripted(scenario: &Scenario, seed: u64, sched: &[Scheduled]) -> Scenario {
    let mut s = scenario.clone();
    s.name = format!("{}-shrunk-{seed}", scenario.name);
    s.source = None;
    s.description = format!(
        "The schedule of {} seed {seed}, shrunk by `loom-sim shrink`: run it with --seed {seed}.",
        scenario.name
    );
    let f = &mut s.faults;
    f.partitions = 0;
    f.holds = 0;
    f.crashes = 0;
    f.replays = 0;
    f.slow_links = 0;
    f.skew_max_secs = 0;
    f.script = sched.iter().map(Scheduled::to_script).collect();
    s
}

/// Shrinks the fault schedule of `seed` (module docs). An error if the seed holds every
/// invariant.
pub fn shrink(scenario: &Scenario, seed: u64, opts: &RunOptions) -> Result<Shrunk, String> {
    let original = opts
        .schedule
        .clone()
        .unwrap_or_else(|| schedule(scenario, seed));
    let first = run(
        scenario,
        seed,
        &RunOptions {
            schedule: Some(original.clone()),
            keep_trace: false,
            ..opts.clone()
        },
    )?;
    let Some(v) = first.violations.first() else {
        return Err(format!(
            "{} seed {seed} holds every invariant: nothing to shrink",
            scenario.name
        ));
    };
    let invariant = v.invariant.clone();
    let mut runs = 1;
    let mut current = original.clone();
    let mut best = first;
    let mut chunk = current.len().div_ceil(2).max(1);
    while !current.is_empty() {
        let mut removed_any = false;
        let mut start = 0;
        while start < current.len() {
            let end = (start + chunk).min(current.len());
            let mut candidate = current.clone();
            candidate.drain(start..end);
            runs += 1;
            if let Some(r) = fails(scenario, seed, opts, &candidate, &invariant)? {
                current = candidate;
                best = r;
                removed_any = true;
            } else {
                start = end;
            }
        }
        if chunk == 1 && !removed_any {
            break;
        }
        if !removed_any || chunk > current.len() {
            chunk = (chunk / 2).max(1);
        }
    }
    let scenario_out = scripted(scenario, seed, &current);
    Ok(Shrunk {
        invariant,
        original,
        minimal: current,
        report: best,
        runs,
        scenario: scenario_out,
    })
}
