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
use loom_conformance::{catalogue, requirements, target};
use loom_protocol::clock::{Clock, SystemClock};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// `println!` that ignores a closed stdout (`loom-conformance list | head` must not panic).
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

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
        /// Only IDs matching this glob (repeatable).
        #[arg(long)]
        only: Vec<String>,
        /// Only this level and below.
        #[arg(long, default_value_t = 4)]
        level: u8,
        /// Only cases of this area (the ID's second segment: `envelope`, `auth`, …; repeatable).
        #[arg(long)]
        area: Vec<String>,
        /// Only cases of this strength (MUST, SHOULD or MAY; repeatable).
        #[arg(long, value_parser = parse_strength)]
        strength: Vec<Strength>,
        /// One JSON array instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Show one case: requirement, spec, how it is tested, the quirk that proves it can fail.
    Explain {
        /// The case ID.
        id: String,
    },
    /// The traceability matrix: every Level 1 MUST/SHOULD requirement and the cases covering
    /// it; uncovered and not-testable requirements are listed explicitly.
    Matrix {
        /// JSON instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Mutation self-test: the catalogue against the clean embedded node (all must pass) and
    /// every MUST case against the node with its quirk (it must fail).
    Selftest {
        /// Cases in flight at once.
        #[arg(long, default_value_t = 4)]
        jobs: usize,
        /// Only cases whose ID matches (glob; repeatable).
        #[arg(long)]
        only: Vec<String>,
    },
    /// Work with JSON reports.
    Report {
        #[command(subcommand)]
        command: ReportCmd,
    },
}

#[derive(Debug, Subcommand)]
enum ReportCmd {
    /// One matrix across several JSON reports (targets or runs): rows are cases, columns runs.
    Merge {
        /// JSON reports written by `run --report json=PATH`.
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// Write the matrix as HTML into this directory (`index.html`).
        #[arg(long)]
        html: Option<PathBuf>,
        /// Write the matrix as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

fn parse_strength(s: &str) -> Result<Strength, String> {
    match s.to_ascii_uppercase().as_str() {
        "MUST" => Ok(Strength::Must),
        "SHOULD" => Ok(Strength::Should),
        "MAY" => Ok(Strength::May),
        _ => Err(format!("{s:?} is not MUST, SHOULD or MAY")),
    }
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

fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("error: cannot start the async runtime: {e}");
            ExitCode::from(2)
        })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Cmd::List {
            only,
            level,
            area,
            strength,
            json,
        } => list(&only, level, &area, &strength, json),
        Cmd::Explain { id } => explain(&id),
        Cmd::Matrix { json } => matrix(json),
        Cmd::Report {
            command:
                ReportCmd::Merge {
                    reports,
                    html,
                    json,
                },
        } => merge(&reports, html.as_deref(), json.as_deref()),
        Cmd::Selftest { jobs, only } => match runtime() {
            Ok(rt) => rt.block_on(selftest(jobs, only)),
            Err(code) => code,
        },
        Cmd::Run(args) => match runtime() {
            Ok(rt) => rt.block_on(run(args)),
            Err(code) => code,
        },
    }
}

fn list(
    only: &[String],
    level: u8,
    areas: &[String],
    strengths: &[Strength],
    json: bool,
) -> ExitCode {
    let cases: Vec<_> = catalogue::all()
        .into_iter()
        .filter(|c| {
            c.level <= level
                && (only.is_empty() || only.iter().any(|g| runner::glob_match(g, c.id)))
                && (areas.is_empty() || areas.iter().any(|a| a == c.area()))
                && (strengths.is_empty() || strengths.contains(&c.strength))
        })
        .collect();
    if json {
        let v: Vec<serde_json::Value> = cases
            .iter()
            .map(|c| {
                serde_json::json!({
                    "id": c.id,
                    "area": c.area(),
                    "level": c.level,
                    "strength": c.strength,
                    "spec": c.spec,
                    "requirement": c.requirement,
                    "covers": c.covers,
                    "needs": c.needs,
                    "how": c.how,
                    "mutant": c.mutant,
                })
            })
            .collect();
        return match serde_json::to_string_pretty(&v) {
            Ok(t) => {
                outln!("{t}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        };
    }
    for c in &cases {
        outln!(
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
    outln!("{} cases ({must} MUST)", cases.len());
    ExitCode::SUCCESS
}

fn matrix(json: bool) -> ExitCode {
    let reqs = match requirements::level1() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let m = requirements::Matrix::build(&reqs, &catalogue::all());
    if json {
        match serde_json::to_string_pretty(&m.to_json()) {
            Ok(t) => outln!("{t}"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        outln!("{}", m.to_text().trim_end());
    }
    ExitCode::SUCCESS
}

fn merge(reports: &[PathBuf], html: Option<&Path>, json: Option<&Path>) -> ExitCode {
    if html.is_none() && json.is_none() {
        eprintln!("error: report merge needs --html DIR and/or --json OUT");
        return ExitCode::from(2);
    }
    let mut runs = Vec::new();
    for p in reports {
        match report::merge::load(p) {
            Ok(r) => runs.push(r),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(dir) = html {
        let written = std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(dir.join("index.html"), report::merge::to_html(&runs)));
        if let Err(e) = written {
            eprintln!("error: {}: {e}", dir.display());
            return ExitCode::from(2);
        }
        eprintln!("wrote {}", dir.join("index.html").display());
    }
    if let Some(out) = json {
        let text = serde_json::to_string_pretty(&report::merge::to_json(&runs))
            .map(|t| t + "\n")
            .map_err(|e| e.to_string());
        if let Err(e) = text.and_then(|t| std::fs::write(out, t).map_err(|e| e.to_string())) {
            eprintln!("error: {}: {e}", out.display());
            return ExitCode::from(2);
        }
        eprintln!("wrote {}", out.display());
    }
    eprintln!(
        "{} runs, {} cases",
        runs.len(),
        report::merge::case_ids(&runs).len()
    );
    ExitCode::SUCCESS
}

/// Without the `selftest` feature the mutants do not exist in this build (DESIGN.md §4: release
/// builds carry no quirk), so the command says how to get a build that has them.
#[cfg(not(feature = "selftest"))]
async fn selftest(_jobs: usize, _only: Vec<String>) -> ExitCode {
    eprintln!(
        "error: this loom-conformance was built without the `selftest` feature, so the reference \
         node's quirks (the mutants the self-test needs) are not compiled in.\n\
         Run: cargo run --release -p loom-conformance --features selftest -- selftest"
    );
    ExitCode::from(2)
}

#[cfg(feature = "selftest")]
async fn selftest(jobs: usize, only: Vec<String>) -> ExitCode {
    let cfg = RunConfig {
        jobs,
        only,
        level: 4,
        ..RunConfig::default()
    };
    let all = catalogue::all();
    let cases: Vec<&'static loom_conformance::Case> = all
        .iter()
        .copied()
        .filter(|c| runner::select(std::slice::from_ref(*c), &cfg).len() == 1)
        .collect();
    if cases.is_empty() {
        eprintln!("error: no case matches --only");
        return ExitCode::from(2);
    }
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let started = Instant::now();
    eprintln!(
        "loom-conformance selftest: {} cases against the clean embedded node, then each case that names a quirk against that quirk",
        cases.len()
    );
    let st = match loom_conformance::selftest::selftest(&cases, &cfg, clock).await {
        Ok(st) => st,
        Err(e) => {
            eprintln!("error: the embedded reference node did not start: {e}");
            return ExitCode::from(3);
        }
    };
    outln!("{:<58} {:<8} {:<14} quirk", "case", "clean", "mutated");
    for m in &st.cases {
        outln!(
            "{:<58} {:<8} {:<14} {}",
            m.id,
            m.clean.name(),
            m.mutated.map_or("-", |o| o.name()),
            m.quirk.unwrap_or("-")
        );
    }
    let (proven, total) = st.coverage(&cases);
    let pct = if total == 0 {
        100.0
    } else {
        proven as f64 * 100.0 / total as f64
    };
    outln!(
        "\nmutation coverage: {proven}/{total} MUST cases ({pct:.1}%) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let unproven: Vec<&str> = st
        .cases
        .iter()
        .filter(|m| {
            cases
                .iter()
                .any(|c| c.id == m.id && c.strength == Strength::Must)
                && !(m.clean == loom_conformance::Outcome::Pass
                    && m.mutated == Some(loom_conformance::Outcome::Fail))
        })
        .map(|m| m.id)
        .collect();
    if !unproven.is_empty() {
        outln!("unproven MUST cases ({}):", unproven.len());
        for id in &unproven {
            outln!("  {id}");
        }
    }
    let problems = st.problems();
    if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        outln!("\nproblems ({}):", problems.len());
        for p in &problems {
            outln!("  {p}");
        }
        ExitCode::from(1)
    }
}

fn explain(id: &str) -> ExitCode {
    let Some(c) = catalogue::find(id) else {
        eprintln!("error: no case {id:?}; `loom-conformance list` shows every ID");
        return ExitCode::from(2);
    };
    outln!(
        "{}\n  level {} · {} · {}",
        c.id,
        c.level,
        c.strength,
        c.spec.join(", ")
    );
    outln!("  requirement: {}", c.requirement);
    outln!("  covers:      {}", c.covers.join(", "));
    outln!("  how:         {}", c.how);
    if !c.needs.is_empty() {
        outln!(
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
            outln!("  proven able to fail by the reference node's `{q}` quirk")
        }
        loom_conformance::Mutant::NotApplicable(why) => outln!("  no quirk proves it: {why}"),
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
    let ready = profile.target.readiness_timeout_secs;
    if !(ready.is_finite() && (0.0..=86_400.0).contains(&ready)) {
        return usage(format!(
            "target.readiness_timeout_secs must be between 0 and 86400 seconds, not {ready}"
        ));
    }
    let timeout_scale = args.timeout_scale.unwrap_or(profile.target.timeout_scale);
    if !(timeout_scale > 0.0 && timeout_scale <= 1000.0) {
        return usage("--timeout-scale must be a number above 0 and at most 1000".into());
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
    outln!("{}", report::terminal::summary(&report));
    for (kind, path) in outputs {
        let written = match kind.as_str() {
            "json" => serde_json::to_string_pretty(&report::json::render(&report))
                .map_err(|e| e.to_string())
                .and_then(|t| std::fs::write(&path, t + "\n").map_err(|e| e.to_string())),
            "junit" => report::junit::render(&report)
                .and_then(|t| std::fs::write(&path, t).map_err(|e| e.to_string())),
            "html" => report::html::write(&report, &path).map_err(|e| e.to_string()),
            other => Err(format!("unknown report kind {other}")),
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
