//! `loom-conformance`: certify a LOOM node over the wire.
//!
//! Exit codes (DESIGN.md §5): 0 the level was achieved (or `--no-fail`); 1 a required case
//! failed; 2 usage or configuration error; 3 the target is unreachable or failed readiness.

use clap::{Parser, Subcommand};
use loom_conformance::case::Strength;
use loom_conformance::profile::Profile;
use loom_conformance::report::{self, RunReport};
use loom_conformance::runner::{self, RunConfig};
use loom_conformance::skips::SkipFile;
use loom_conformance::{catalogue, target};
use loom_protocol::clock::{Clock, SystemClock};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Parser)]
#[command(
    name = "loom-conformance",
    version,
    about = "Conformance harness for LOOM v1.1 nodes"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run the catalogue against a target (default: the embedded reference node).
    Run(RunArgs),
    /// List cases with level, strength and spec references.
    List {
        /// Only IDs matching this glob.
        #[arg(long)]
        only: Vec<String>,
        /// Only this level and below.
        #[arg(long, default_value_t = 4)]
        level: u8,
    },
    /// Show one case: requirement, spec, how it is tested, the quirk that proves it can fail.
    Explain {
        /// The case ID.
        id: String,
    },
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The node's base URL (`https://node.example`); without it the embedded reference node
    /// is started on a loopback port.
    #[arg(long)]
    target: Option<String>,
    /// Target profile (TOML): provisioning, TLS trust, readiness, timing.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Conformance level to certify (1–4).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=4))]
    level: u8,
    /// Only cases whose ID matches (glob; repeatable).
    #[arg(long)]
    only: Vec<String>,
    /// Leave out cases whose ID matches (glob; repeatable).
    #[arg(long)]
    exclude: Vec<String>,
    /// The implementer's expected failures (JSON: [{id, reason, issue_url}]).
    #[arg(long)]
    skips: Option<PathBuf>,
    /// SHOULD failures fail the run.
    #[arg(long)]
    strict: bool,
    /// Cases in flight at once.
    #[arg(long, default_value_t = 4)]
    jobs: usize,
    /// Multiply every timeout (slow targets).
    #[arg(long)]
    timeout_scale: Option<f64>,
    /// Seed for test data (ids, keys of provisioned identities).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// `json=PATH`, `junit=PATH` or `html=DIR` (repeatable).
    #[arg(long = "report")]
    reports: Vec<String>,
    /// Always exit 0 once the run completes (report-only runs).
    #[arg(long)]
    no_fail: bool,
    /// No per-case progress lines.
    #[arg(long)]
    quiet: bool,
    /// Serve the embedded node over plain HTTP instead of TLS 1.3 (transport cases skip).
    #[arg(long)]
    plain_http: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Cmd::List { only, level } => list(&only, level),
        Cmd::Explain { id } => explain(&id),
        Cmd::Run(args) => {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("error: cannot start the async runtime: {e}");
                    return ExitCode::from(2);
                }
            };
            rt.block_on(run(args))
        }
    }
}

fn list(only: &[String], level: u8) -> ExitCode {
    let cases: Vec<_> = catalogue::all()
        .into_iter()
        .filter(|c| {
            c.level <= level
                && (only.is_empty() || only.iter().any(|g| runner::glob_match(g, c.id)))
        })
        .collect();
    for c in &cases {
        println!(
            "{:<58} L{} {:<6} {}",
            c.id,
            c.level,
            c.strength.to_string(),
            c.spec.join(", ")
        );
    }
    let must = cases
        .iter()
        .filter(|c| c.strength == Strength::Must)
        .count();
    println!("{} cases ({must} MUST)", cases.len());
    ExitCode::SUCCESS
}

fn explain(id: &str) -> ExitCode {
    let Some(c) = catalogue::find(id) else {
        eprintln!("error: no case {id:?}; `loom-conformance list` shows every ID");
        return ExitCode::from(2);
    };
    println!(
        "{}\n  level {} · {} · {}",
        c.id,
        c.level,
        c.strength,
        c.spec.join(", ")
    );
    println!("  requirement: {}", c.requirement);
    println!("  covers:      {}", c.covers.join(", "));
    println!("  how:         {}", c.how);
    if !c.needs.is_empty() {
        println!(
            "  needs:       {}",
            c.needs
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    match c.mutant {
        loom_conformance::Mutant::Quirk(q) => {
            println!("  proven able to fail by the reference node's `{q}` quirk")
        }
        loom_conformance::Mutant::NotApplicable(why) => println!("  no quirk proves it: {why}"),
    }
    ExitCode::SUCCESS
}

async fn run(args: RunArgs) -> ExitCode {
    let usage = |m: String| {
        eprintln!("error: {m}");
        ExitCode::from(2)
    };
    let profile = match &args.profile {
        Some(p) => match Profile::load(p) {
            Ok(p) => p,
            Err(e) => return usage(e),
        },
        None => Profile::default(),
    };
    let skips = match &args.skips {
        Some(p) => match SkipFile::load(p, &|id| catalogue::find(id).is_some()) {
            Ok(s) => s,
            Err(e) => return usage(e),
        },
        None => SkipFile::default(),
    };
    let mut outputs = Vec::new();
    for r in &args.reports {
        match r.split_once('=') {
            Some((kind @ ("json" | "junit" | "html"), path)) if !path.is_empty() => {
                outputs.push((kind.to_owned(), PathBuf::from(path)))
            }
            _ => {
                return usage(format!(
                    "--report {r:?}: expected json=PATH, junit=PATH or html=DIR"
                ));
            }
        }
    }
    let timeout_scale = args.timeout_scale.unwrap_or(profile.target.timeout_scale);
    if !(timeout_scale > 0.0 && timeout_scale.is_finite()) {
        return usage("--timeout-scale must be a positive number".into());
    }
    // The only wall clock of the harness: everything below receives it.
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let started = Instant::now();
    let started_at = clock.now().to_rfc3339();
    let embedded = match &args.target {
        Some(_) => None,
        None => {
            let transport = if args.plain_http {
                target::Transport::Plain
            } else {
                target::Transport::Tls
            };
            match target::start_embedded(
                loom_node::Quirks::none(),
                clock.clone(),
                args.seed,
                target::embedded_config(),
                transport,
            )
            .await
            {
                Ok(e) => Some(e),
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(3);
                }
            }
        }
    };
    let probed = match (&args.target, &embedded) {
        (Some(url), _) => target::probe(url, &profile, false).await,
        (None, Some(e)) => target::probe_embedded(e).await,
        (None, None) => unreachable!("the embedded node was started above"),
    };
    let info = match probed {
        Ok(i) => Arc::new(i),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(3);
        }
    };
    let cfg = RunConfig {
        level: args.level,
        only: args.only,
        exclude: args.exclude,
        skips,
        strict: args.strict,
        jobs: args.jobs,
        timeout_scale,
        seed: args.seed,
        ..RunConfig::default()
    };
    let all = catalogue::all();
    let selected: Vec<&'static loom_conformance::Case> = all
        .iter()
        .copied()
        .filter(|c| runner::select(std::slice::from_ref(*c), &cfg).len() == 1)
        .collect();
    if selected.is_empty() {
        return usage("no case matches the selection (--level/--only/--exclude)".into());
    }
    eprintln!(
        "loom-conformance: {} cases against {} ({}), level {}",
        selected.len(),
        info.url,
        info.domain,
        cfg.level
    );
    let total = selected.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let quiet = args.quiet;
    let progress = |r: &loom_conformance::CaseResult| {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if !quiet && let Some(c) = catalogue::find(r.id) {
            eprintln!("{}", report::terminal::progress_line(c, r, n, total));
        }
    };
    let results = runner::run_all(&selected, info.clone(), &cfg, clock.clone(), &progress).await;
    let report = RunReport {
        target: info.url.clone(),
        embedded: info.embedded,
        level: cfg.level,
        strict: cfg.strict,
        seed: cfg.seed,
        started_at,
        duration: started.elapsed(),
        node: info.domain.clone(),
        results: selected.iter().copied().zip(results).collect(),
    };
    println!("{}", report::terminal::summary(&report));
    for (kind, path) in outputs {
        let written = match kind.as_str() {
            "json" => serde_json::to_string_pretty(&report::json::render(&report))
                .map_err(|e| e.to_string())
                .and_then(|t| std::fs::write(&path, t + "\n").map_err(|e| e.to_string())),
            other => Err(format!("the {other} report is not available in this build")),
        };
        match written {
            Ok(()) => eprintln!("wrote {kind} report {}", path.display()),
            Err(e) => {
                eprintln!("error: {kind} report {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    if report.failed() && !args.no_fail {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
