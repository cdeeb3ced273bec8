//! `loom-sim`: run one seed of a scenario (with its trace and the determinism check) or
//! sweep many seeds. Exit codes: 0 every invariant held; 1 a violation; 2 usage error.

use clap::{Parser, Subcommand};
use loom_sim::sweep::{Shard, parse_range, seeds, sweep};
use loom_sim::{RunOptions, Scenario, run};
use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    name = "loom-sim",
    about = "Deterministic multi-node simulator of LOOM reference nodes"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run one seed of a scenario and check every invariant.
    Run {
        /// A shipped scenario name or a TOML file.
        #[arg(long)]
        scenario: String,
        /// The seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Write the JSONL trace here.
        #[arg(long)]
        trace: Option<std::path::PathBuf>,
        /// Run twice and compare the trace hashes.
        #[arg(long)]
        check_determinism: bool,
        /// Run the nodes with a deliberate defect (builds with the `quirks` feature only).
        #[arg(long)]
        quirk: Vec<String>,
    },
    /// Run many seeds.
    Sweep {
        /// A shipped scenario name or a TOML file.
        #[arg(long)]
        scenario: String,
        /// Seeds `a..b` (end exclusive).
        #[arg(long, default_value = "0..100")]
        seeds: String,
        /// Only this shard `i/n` of the seeds.
        #[arg(long)]
        shard: Option<String>,
        /// Parallel runs.
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        /// Write the JSON summary here (it is printed to stdout as well).
        #[arg(long)]
        summary: Option<std::path::PathBuf>,
        /// Run the nodes with a deliberate defect (builds with the `quirks` feature only).
        #[arg(long)]
        quirk: Vec<String>,
    },
    /// Shrink the fault schedule of a failing seed to a minimal one that still violates the
    /// same invariant; prints it as a scenario with `[[faults.script]]` and the replay command.
    Shrink {
        /// A shipped scenario name or a TOML file.
        #[arg(long)]
        scenario: String,
        /// The failing seed.
        #[arg(long)]
        seed: u64,
        /// Write the replay scenario here (default `shrunk-SCENARIO-SEED.toml`).
        #[arg(long)]
        out: Option<std::path::PathBuf>,
        /// Run the nodes with a deliberate defect (builds with the `quirks` feature only).
        #[arg(long)]
        quirk: Vec<String>,
    },
    /// List the shipped scenarios.
    List,
}

/// Run options with the quirks `names`: node quirks, and agent quirks (`[agents]`).
fn options(names: &[String]) -> Result<RunOptions, String> {
    if !cfg!(feature = "quirks") && !names.is_empty() {
        return Err(
            "--quirk needs a build with the `quirks` feature (cargo run -p loom-sim --features quirks)"
                .into(),
        );
    }
    let (agent, node): (Vec<String>, Vec<String>) = names
        .iter()
        .cloned()
        .partition(|n| loom_sim::agents::is_agent_quirk(n));
    Ok(RunOptions {
        rules: quirks(&node)?,
        agent_quirks: agent,
        ..RunOptions::default()
    })
}

#[cfg(feature = "quirks")]
fn quirks(names: &[String]) -> Result<loom_sim::world::NodeRules, String> {
    let mut q = loom_node::Quirks::none();
    for n in names {
        let quirk = loom_node::Quirk::parse(n).ok_or_else(|| format!("unknown quirk {n:?}"))?;
        q = q.with(quirk);
    }
    Ok(q.into())
}

#[cfg(not(feature = "quirks"))]
fn quirks(names: &[String]) -> Result<loom_sim::world::NodeRules, String> {
    if names.is_empty() {
        return Ok(loom_sim::world::NodeRules::default());
    }
    Err(
        "--quirk needs a build with the `quirks` feature (cargo run -p loom-sim --features quirks)"
            .into(),
    )
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match real_main(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("loom-sim: {e}");
            ExitCode::from(2)
        }
    }
}

fn real_main(cli: Cli) -> Result<ExitCode, String> {
    match cli.cmd {
        Cmd::List => {
            for (name, text) in loom_sim::scenario::SHIPPED {
                let s = Scenario::from_toml(text)?;
                println!("{name}\n    {}\n", s.description);
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Run {
            scenario,
            seed,
            trace,
            check_determinism,
            quirk,
        } => {
            let s = Scenario::load(&scenario)?;
            let opts = RunOptions {
                keep_trace: trace.is_some(),
                ..options(&quirk)?
            };
            let started = Instant::now();
            let r = run(&s, seed, &opts)?;
            let wall = started.elapsed().as_secs_f64();
            if let (Some(path), Some(t)) = (&trace, &r.trace) {
                std::fs::write(path, t)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            }
            println!(
                "scenario {} seed {}: {} envelopes acknowledged, {:.1} simulated s in {:.2} wall s ({:.0}x), {} steps, trace {} lines sha256 {}",
                r.scenario,
                r.seed,
                r.acknowledged,
                r.simulated_ms as f64 / 1000.0,
                wall,
                r.simulated_ms as f64 / 1000.0 / wall.max(1e-9),
                r.steps,
                r.trace_lines,
                r.trace_hash
            );
            let mut code = ExitCode::SUCCESS;
            if check_determinism {
                let again = run(&s, seed, &opts)?;
                if again.trace_hash == r.trace_hash {
                    println!("determinism: two runs, same trace hash {}", r.trace_hash);
                } else {
                    println!(
                        "determinism: VIOLATED: trace hashes differ ({} vs {})",
                        r.trace_hash, again.trace_hash
                    );
                    code = ExitCode::from(1);
                }
            }
            if let Some(v) = r.violations.first() {
                println!(
                    "VIOLATION seed {}: invariant {} at step {} ({} ms simulated): {}",
                    r.seed, v.invariant, v.step, v.at_ms, v.detail
                );
                if r.violations.len() > 1 {
                    println!("({} more violations in this run)", r.violations.len() - 1);
                }
                println!("replay: {}", r.replay_command());
                code = ExitCode::from(1);
            } else {
                println!("every invariant held");
            }
            Ok(code)
        }
        Cmd::Shrink {
            scenario,
            seed,
            out,
            quirk,
        } => {
            let s = Scenario::load(&scenario)?;
            let opts = options(&quirk)?;
            let started = Instant::now();
            let r = loom_sim::shrink::shrink(&s, seed, &opts)?;
            let toml = r.toml()?;
            let path = out.unwrap_or_else(|| format!("shrunk-{}-{seed}.toml", s.name).into());
            std::fs::write(&path, &toml)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            println!(
                "shrunk {} seed {seed}: invariant {} still fails with {} of {} faults ({} runs, {:.1} s)",
                s.name,
                r.invariant,
                r.minimal.len(),
                r.original.len(),
                r.runs,
                started.elapsed().as_secs_f64()
            );
            if let Some(v) = r
                .report
                .violations
                .iter()
                .find(|v| v.invariant == r.invariant)
            {
                println!(
                    "VIOLATION: {} at step {}: {}",
                    v.invariant, v.step, v.detail
                );
            }
            println!("\n# minimal fault schedule ({})", path.display());
            for f in &r.scenario.faults.script {
                let one = toml::to_string(f).map_err(|e| e.to_string())?;
                println!("[[faults.script]]\n{one}");
            }
            println!(
                "replay: {}",
                loom_sim::world::replay_command(&path.display().to_string(), seed, &quirk)
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Sweep {
            scenario,
            seeds: range,
            shard,
            jobs,
            summary,
            quirk,
        } => {
            let s = Scenario::load(&scenario)?;
            let shard = shard.as_deref().map(Shard::parse).transpose()?;
            let list = seeds(parse_range(&range)?, shard);
            let opts = RunOptions {
                keep_trace: false,
                ..options(&quirk)?
            };
            let started = Instant::now();
            let progress =
                |done: usize, total: usize, failed: usize, bad: Option<&loom_sim::RunReport>| {
                    let mut err = std::io::stderr().lock();
                    if let Some(r) = bad
                        && let Some(v) = r.violations.first()
                    {
                        let _ = writeln!(
                            err,
                            "\nFAIL seed {}: {} at step {}: {}\n  replay: {}",
                            r.seed,
                            v.invariant,
                            v.step,
                            v.detail,
                            r.replay_command()
                        );
                    }
                    let width = 30usize;
                    let filled = done * width / total.max(1);
                    let _ = write!(
                        err,
                        "\r[{}{}] {done}/{total} seeds, {failed} failed, {:.1} seeds/s ",
                        "#".repeat(filled),
                        "-".repeat(width - filled),
                        done as f64 / started.elapsed().as_secs_f64().max(1e-9)
                    );
                    let _ = err.flush();
                };
            let reports = sweep(&s, &list, jobs, &opts, &progress);
            eprintln!();
            let result = loom_sim::sweep::SweepResult {
                reports,
                wall_secs: started.elapsed().as_secs_f64(),
            };
            for (seed, r) in &result.reports {
                if let Err(e) = r {
                    eprintln!("ERROR seed {seed}: {e}");
                }
            }
            let summary_json = result.summary(&s.name, &scenario, &quirk);
            let text = serde_json::to_string_pretty(&summary_json).map_err(|e| e.to_string())?;
            println!("{text}");
            if let Some(p) = summary {
                std::fs::write(&p, &text)
                    .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
            }
            Ok(if result.failures().is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}
