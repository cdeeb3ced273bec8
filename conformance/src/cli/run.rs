//! `loom-conformance run`: certify a target (default: the embedded reference node).

use super::{outln, usage};
use crate::outcome::CaseResult;
use crate::profile::Profile;
use crate::report::{self, RunReport};
use crate::runner::{self, RunConfig};
use crate::skips::SkipFile;
use crate::{Case, catalogue, target};
use loom_protocol::clock::{Clock, SystemClock};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// `run` options.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The node's base URL (`https://node.example`); without it the embedded reference node
    /// is started on a loopback port.
    #[arg(long)]
    target: Option<String>,
    /// Target profile (TOML): provisioning, TLS trust, readiness, timing, features.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Conformance level to certify (1–4). Default: the highest this run can test — 4 for
    /// the embedded node; for --target, 1, 2 with a profile [federation], 4 with [bridge] too.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=4))]
    level: Option<u8>,
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
    /// Seed for test data (ids, keys, addresses of provisioned identities). Default: a fresh
    /// random seed, printed and written to every report, so a run can be reproduced.
    #[arg(long)]
    seed: Option<u64>,
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
    /// Stop the run once more than N cases errored for one setup cause (a rate limit, a
    /// refused registration or login); 0 never stops.
    #[arg(long, default_value_t = 10, value_name = "N")]
    max_setup_errors: usize,
}

/// Checks `--target` before anything else (issue 18): an http(s) URL with a host, an optional
/// port and path, no query, fragment, user information or whitespace. Returns the URL
/// without a trailing slash.
pub fn check_target_url(url: &str) -> Result<String, String> {
    let hint = "expected a base URL such as https://node.example or http://127.0.0.1:8787";
    if url.is_empty() || url.chars().any(char::is_whitespace) {
        return Err(format!("--target {url:?}: not a URL; {hint}"));
    }
    if !url.starts_with("http://") && !url.starts_with("https://") {
        let guess = if url.contains("://") {
            String::new()
        } else {
            format!(" (did you mean http://{url} or https://{url}?)")
        };
        return Err(format!(
            "--target {url:?}: the URL needs the scheme http:// or https://{guess}; {hint}"
        ));
    }
    loom_client::NodeUrl::parse(url).map_err(|e| format!("--target: {e}; {hint}"))?;
    Ok(url.trim_end_matches('/').to_owned())
}

/// Why the run is not complete for its level (issue 18): filters and MUST cases in the skip
/// file. An early stop is added by the caller.
pub fn partial_reasons(
    args_only: &[String],
    args_exclude: &[String],
    skips: &SkipFile,
) -> Vec<String> {
    let mut why = Vec::new();
    if !args_only.is_empty() {
        why.push(format!(
            "filtered with --only {}",
            args_only.join(", --only ")
        ));
    }
    if !args_exclude.is_empty() {
        why.push(format!(
            "filtered with --exclude {}",
            args_exclude.join(", --exclude ")
        ));
    }
    let must_skips = catalogue::all()
        .into_iter()
        .filter(|c| c.strength == crate::Strength::Must && skips.get(c.id).is_some())
        .count();
    if must_skips > 0 {
        why.push(format!(
            "the skip file lists {must_skips} MUST case(s) as expected failures"
        ));
    }
    why
}

/// Runs the catalogue and writes the reports.
pub async fn main(args: Args, fresh_seed: u64) -> ExitCode {
    let target_url = match args.target.as_deref().map(check_target_url) {
        Some(Err(e)) => return usage(e),
        Some(Ok(u)) => Some(u),
        None => None,
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
    let case_timeout = profile.target.case_timeout_secs;
    if !(case_timeout.is_finite() && (1.0..=86_400.0).contains(&case_timeout)) {
        return usage(format!(
            "target.case_timeout_secs must be between 1 and 86400 seconds, not {case_timeout}"
        ));
    }
    let timeout_scale = args.timeout_scale.unwrap_or(profile.target.timeout_scale);
    if !(timeout_scale > 0.0 && timeout_scale <= 1000.0) {
        return usage("--timeout-scale must be a number above 0 and at most 1000");
    }
    let seed = args.seed.unwrap_or(fresh_seed);
    // The only wall clock of the harness: everything below receives it.
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let started = Instant::now();
    let started_at = clock.now().to_rfc3339();
    let embedded = match &target_url {
        Some(_) => None,
        None => {
            let transport = if args.plain_http {
                target::Transport::Plain
            } else {
                target::Transport::Tls
            };
            // The fake federation peers first: the node is configured with their addresses.
            let mut config = target::embedded_config();
            let fed =
                match crate::peer::Federation::embedded(&mut config, seed, clock.clone()).await {
                    Ok(f) => f,
                    Err(e) => {
                        eprintln!("error: the fake federation peers: {e}");
                        return ExitCode::from(3);
                    }
                };
            // Level 3: the harness's SMTP sink and DNS records, configured into the node.
            let mail = match crate::mail::MailWorld::embedded(&mut config).await {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("error: the harness's mail world: {e}");
                    return ExitCode::from(3);
                }
            };
            match target::start_embedded(
                target::spec_rules(),
                clock.clone(),
                seed,
                config,
                transport,
            )
            .await
            {
                Ok(e) => Some((e, fed, mail)),
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(3);
                }
            }
        }
    };
    // A target of the user's: the fake peers first too, so their CA file (`tls = true`)
    // exists before the target is probed — a node started after the harness can trust it.
    let external_fed = match (&embedded, &profile.federation) {
        (None, Some(section)) => {
            match crate::peer::Federation::start(section.clone(), seed, clock.clone()).await {
                Ok(f) => Some(Arc::new(f)),
                Err(e) => return usage(e),
            }
        }
        _ => None,
    };
    let external_mail = match (&embedded, &profile.bridge) {
        (None, Some(section)) => match crate::mail::MailWorld::external(section).await {
            Ok(m) => {
                match m.dns() {
                    Some(dns) => eprintln!(
                        "Level 3: the harness serves these DNS records at {dns} (UDP; point the target's resolver there, or preload them); the target relays to the harness's sink at {}:",
                        m.sink_addr
                    ),
                    None => eprintln!(
                        "Level 3: the target must see these DNS records (its resolver or preload list; or set bridge.dns_listen and point its resolver there) and relay to the harness's sink at {}:",
                        m.sink_addr
                    ),
                }
                for r in m.records() {
                    eprintln!("  {} {} \"{}\"", r.name, r.kind, r.value);
                }
                Some(m)
            }
            Err(e) => return usage(e),
        },
        _ => None,
    };
    let waiting = |m: &str| {
        eprintln!(
            "{}",
            report::layout::indented(m, report::layout::width(), 0, 2)
        )
    };
    let probed = match (&target_url, &embedded) {
        (Some(url), _) => target::probe_reporting(url, &profile, false, &waiting).await,
        (None, Some((e, _, _))) => target::probe_embedded_with(e, &profile).await,
        (None, None) => unreachable!("the embedded node was started above"),
    };
    let mut info = match probed {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(3);
        }
    };
    // Level 2: the fake federation peers (DESIGN.md §5): the embedded node's, or the
    // profile's `[federation]` section for a target of the user's.
    info.federation = match &embedded {
        Some((_, fed, _)) => Some(fed.clone()),
        None => external_fed,
    };
    // Level 3: the harness's mail world, told the target's SMTP address, mail domain and
    // DKIM records.
    info.mail = match &embedded {
        Some((e, _, mail)) => {
            mail.learn(&info, e.smtp, None);
            Some(mail.clone())
        }
        None => external_mail.inspect(|m| m.learn(&info, None, profile.bridge.as_ref())),
    };
    let level = args
        .level
        .unwrap_or_else(|| default_level(embedded.is_some(), &profile));
    let info = Arc::new(info);
    let cfg = RunConfig {
        level,
        only: args.only,
        exclude: args.exclude,
        skips,
        strict: args.strict,
        jobs: args.jobs,
        timeout_scale,
        case_timeout: std::time::Duration::from_secs_f64(case_timeout),
        seed,
        max_setup_errors: (args.max_setup_errors > 0).then_some(args.max_setup_errors),
    };
    let mut partial = partial_reasons(&cfg.only, &cfg.exclude, &cfg.skips);
    let selected: Vec<&'static Case> = runner::select(&catalogue::all(), &cfg);
    if selected.is_empty() {
        return usage("no case matches the selection (--level/--only/--exclude)");
    }
    eprintln!(
        "{}",
        report::terminal::run_header(selected.len(), &info.url, &info.domain, cfg.level, seed)
    );
    let total = selected.len();
    let done = AtomicUsize::new(0);
    let quiet = args.quiet;
    let progress = |r: &CaseResult| {
        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
        if !quiet && let Some(c) = catalogue::find(r.id) {
            eprintln!(
                "{}",
                report::terminal::progress_line(c, r, n, total, report::layout::width())
            );
        }
    };
    let ran =
        runner::run_until_stopped(&selected, info.clone(), &cfg, clock.clone(), &progress).await;
    if let Some(stop) = &ran.stopped {
        partial.push(format!(
            "stopped early after {} setup errors ({}); {} cases not run",
            stop.errors,
            stop.cause.name(),
            stop.not_run
        ));
    }
    let report = RunReport {
        target: info.url.clone(),
        embedded: info.embedded,
        level: cfg.level,
        strict: cfg.strict,
        seed: cfg.seed,
        started_at,
        duration: started.elapsed(),
        node: info.domain.clone(),
        results: selected
            .iter()
            .copied()
            .zip(ran.results)
            .filter_map(|(c, r)| r.map(|r| (c, r)))
            .collect(),
        partial,
    };
    outln!("{}", report::terminal::summary(&report));
    // Where the spec leaves a choice open, what the target chose (issue 29).
    for (what, which) in info.readings.found() {
        outln!("reading detected: {what}: {which}");
    }
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
            Err(e) => return usage(format!("{kind} report {}: {e}", path.display())),
        }
    }
    if let Some(stop) = &ran.stopped {
        eprintln!(
            "\n{}",
            report::layout::indented(
                &format!("error: {}", stop.message()),
                report::layout::width(),
                0,
                2
            )
        );
        if !args.no_fail {
            return ExitCode::from(3);
        }
    }
    if args.no_fail {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(report.exit_code())
    }
}

/// The level a run certifies without `--level`: the highest it can test (v1.1 §28.1). The
/// embedded node comes with the harness's federation peers and mail world (Level 4); a
/// target of the user's reaches Level 2 only with a profile `[federation]` section (the fake
/// peers it must be able to reach), and Levels 3 and 4 only with `[bridge]` as well.
fn default_level(embedded: bool, profile: &crate::profile::Profile) -> u8 {
    match (
        embedded,
        profile.federation.is_some(),
        profile.bridge.is_some(),
    ) {
        (true, _, _) | (false, true, true) => 4,
        (false, true, false) => 2,
        (false, false, _) => 1,
    }
}
