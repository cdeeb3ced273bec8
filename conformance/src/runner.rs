//! Selects cases (level, `--only`/`--exclude` globs), runs them against a target with a
//! bounded number in flight, and turns each finding into an outcome by the case's strength,
//! the implementer's skip file and `--strict`.

use crate::case::{Case, Need, Strength};
use crate::ctx::Ctx;
use crate::finding::Finding;
use crate::outcome::{CaseResult, Outcome};
use crate::skips::SkipFile;
use crate::target::TargetInfo;
use loom_client::Transcript;
use loom_protocol::clock::Clock;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Highest level to include.
    pub level: u8,
    /// Only case IDs matching one of these globs (empty = all).
    pub only: Vec<String>,
    /// Leave out case IDs matching these globs.
    pub exclude: Vec<String>,
    /// Expected failures.
    pub skips: SkipFile,
    /// SHOULD failures fail.
    pub strict: bool,
    /// Cases in flight at once.
    pub jobs: usize,
    /// Timeout multiplier.
    pub timeout_scale: f64,
    /// Seed for test data.
    pub seed: u64,
    /// Longest a single case may take before it is an `error`.
    pub case_timeout: Duration,
    /// Stop the run once more than this many cases errored for one setup cause
    /// ([`crate::setup::SetupCause`]); `None` never stops (the self-test).
    pub max_setup_errors: Option<usize>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            level: 1,
            only: Vec::new(),
            exclude: Vec::new(),
            skips: SkipFile::default(),
            strict: false,
            jobs: 4,
            timeout_scale: 1.0,
            seed: 1,
            case_timeout: Duration::from_secs(60),
            max_setup_errors: None,
        }
    }
}

/// `*` matches any run of characters, `?` one character.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    fn go(p: &[u8], t: &[u8]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], t) || (!t.is_empty() && go(p, &t[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &t[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &t[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), text.as_bytes())
}

/// The cases `cfg` selects, in catalogue order.
pub fn select(cases: &[&'static Case], cfg: &RunConfig) -> Vec<&'static Case> {
    cases
        .iter()
        .copied()
        .filter(|c| c.level <= cfg.level)
        .filter(|c| cfg.only.is_empty() || cfg.only.iter().any(|g| glob_match(g, c.id)))
        .filter(|c| !cfg.exclude.iter().any(|g| glob_match(g, c.id)))
        .collect()
}

/// Why `case` cannot run on `target`, if it cannot.
fn not_applicable(case: &Case, target: &TargetInfo) -> Option<Finding> {
    for need in case.needs {
        match need {
            Need::Tls if !target.is_tls() => {
                return Some(Finding::Skip(format!(
                    "the target {} is plain http; TLS checks apply to https targets (v1.1 §14.1 requires TLS 1.3 in deployment)",
                    target.url
                )));
            }
            Need::Registration if target.pool.is_some() => {
                return Some(Finding::Skip(
                    "the profile provisions a fixed pool; this case registers identities itself"
                        .into(),
                ));
            }
            Need::MailBridge if target.mail.is_none() => {
                return Some(Finding::Unsupported(
                    "no email bridge is set up for this target: give the profile a [bridge] section (smtp, sink_listen, harness_ip; README, Level 3)".into(),
                ));
            }
            Need::FederationPeer if target.federation.is_none() => {
                return Some(Finding::Unsupported(
                    "no fake federation peer is set up for this target: give the profile a [federation] section (harness_address, learn_peer; README, Level 2)".into(),
                ));
            }
            n => {
                if let Some(f) = n.feature()
                    && !target.features.contains(f)
                {
                    return Some(Finding::Unsupported(target.missing_feature(f)));
                }
            }
        }
    }
    None
}

/// Outcome of a finished check.
pub fn judge(
    case: &Case,
    verdict: Result<(), Finding>,
    cfg: &RunConfig,
) -> (Outcome, Option<Finding>) {
    let expected_fail = cfg.skips.get(case.id).is_some();
    match verdict {
        Ok(()) if expected_fail => (Outcome::UnexpectedPass, None),
        Ok(()) => (Outcome::Pass, None),
        Err(f @ Finding::Fail { .. }) => {
            let o = if expected_fail {
                Outcome::ExpectedFail
            } else {
                match case.strength {
                    Strength::Must => Outcome::Fail,
                    Strength::Should if cfg.strict => Outcome::Fail,
                    Strength::Should => Outcome::NonStrict,
                    Strength::May => Outcome::Informational,
                }
            };
            (o, Some(f))
        }
        Err(f @ Finding::Skip(_)) => (Outcome::Skipped, Some(f)),
        Err(f @ Finding::Unsupported(_)) => (Outcome::Unsupported, Some(f)),
        Err(f @ Finding::Error(_)) => (Outcome::Error, Some(f)),
    }
}

/// Runs one case.
pub async fn run_case(
    case: &Case,
    target: Arc<TargetInfo>,
    cfg: &RunConfig,
    clock: Arc<dyn Clock>,
) -> CaseResult {
    let started = Instant::now();
    let (verdict, transcripts, refusals) = match not_applicable(case, &target) {
        Some(f) => (Err(f), Vec::new(), Vec::new()),
        None => match Ctx::new(target, case.id, cfg.seed, clock, cfg.timeout_scale) {
            Err(f) => (Err(f), Vec::new(), Vec::new()),
            Ok(mut cx) => {
                let limit = cfg.case_timeout.mul_f64(cfg.timeout_scale);
                let v = match tokio::time::timeout(limit, (case.run)(&mut cx)).await {
                    Ok(v) => v,
                    Err(_) => Err(Finding::Error(format!(
                        "the case did not finish within {limit:?}"
                    ))),
                };
                (v, cx.take_transcripts(), cx.take_refusals())
            }
        },
    };
    let (outcome, finding) = judge(case, verdict, cfg);
    let mut transcripts = transcripts;
    if transcripts.is_empty() && matches!(outcome, Outcome::Fail | Outcome::Error) {
        transcripts.push(no_request(finding.as_ref()));
    }
    let mut r = CaseResult {
        id: case.id,
        outcome,
        message: None,
        expected: None,
        actual: None,
        decisive: None,
        transcripts,
        refusals,
        duration: started.elapsed(),
    };
    match finding {
        Some(Finding::Fail {
            expected,
            actual,
            decisive,
        }) => {
            r.message = Some(format!("expected {expected}; got {actual}"));
            r.decisive = decisive
                .map(crate::finding::Ex::index)
                .or(r.transcripts.len().checked_sub(1));
            r.expected = Some(expected);
            r.actual = Some(actual);
            if let Some(entry) = cfg.skips.get(case.id) {
                r.message = Some(format!(
                    "{} (expected failure: {})",
                    r.message.unwrap_or_default(),
                    entry.reason
                ));
            }
        }
        Some(Finding::Error(m)) => {
            // The exchange that stopped the case is its last.
            r.decisive = r.transcripts.len().checked_sub(1);
            r.message = Some(m);
        }
        Some(Finding::Skip(m) | Finding::Unsupported(m)) => r.message = Some(m),
        None if outcome == Outcome::UnexpectedPass => {
            r.message = Some("listed in the skip file as an expected failure, but it passed: remove it from the skip file".into());
        }
        None => {}
    }
    crate::setup::name_trouble(case, &mut r);
    r
}

/// The record of a case that failed or errored before its first exchange: method `-`, status
/// 0, and what happened as the body, so every `fail` and `error` shows what it rests on.
fn no_request(finding: Option<&Finding>) -> Transcript {
    let why = match finding {
        Some(Finding::Error(m) | Finding::Skip(m) | Finding::Unsupported(m)) => m.clone(),
        Some(Finding::Fail {
            expected, actual, ..
        }) => format!("expected {expected}; got {actual}"),
        None => String::new(),
    };
    Transcript {
        method: "-".into(),
        path: "(no request: the case ended before its first exchange)".into(),
        version: "-".into(),
        request_headers: Vec::new(),
        request_body: Vec::new(),
        status: 0,
        response_headers: Vec::new(),
        response_body: why.into_bytes(),
        elapsed: Duration::ZERO,
    }
}

/// Runs `cases` with at most `cfg.jobs` in flight; `progress` sees each result as it lands;
/// results come back in catalogue order.
pub async fn run_all(
    cases: &[&'static Case],
    target: Arc<TargetInfo>,
    cfg: &RunConfig,
    clock: Arc<dyn Clock>,
    progress: &(dyn Fn(&CaseResult) + Sync),
) -> Vec<CaseResult> {
    run_until_stopped(cases, target, cfg, clock, progress)
        .await
        .results
        .into_iter()
        .flatten()
        .collect()
}

/// Why a run stopped before running every case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlyStop {
    /// The setup cause that kept recurring.
    pub cause: crate::setup::SetupCause,
    /// How many cases errored for it.
    pub errors: usize,
    /// How many cases were not run.
    pub not_run: usize,
}

impl EarlyStop {
    /// The one message the run ends with: the cause, the fix and where the README explains.
    pub fn message(&self) -> String {
        format!(
            "stopped early: {} cases could not get past setup ({}), {} cases not run. {} (see {})",
            self.errors,
            self.cause.name(),
            self.not_run,
            upper_first(self.cause.fix()),
            crate::setup::README_ANCHOR
        )
    }
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// What [`run_until_stopped`] produced: a result per case in catalogue order (`None` for the
/// cases an early stop left out) and the stop, if any.
#[derive(Debug)]
pub struct RunResults {
    /// Per case, in the order given.
    pub results: Vec<Option<CaseResult>>,
    /// Set when `cfg.max_setup_errors` was exceeded.
    pub stopped: Option<EarlyStop>,
}

/// [`run_all`], stopping once more than `cfg.max_setup_errors` cases errored for one setup
/// cause: cases not started by then are not run.
pub async fn run_until_stopped(
    cases: &[&'static Case],
    target: Arc<TargetInfo>,
    cfg: &RunConfig,
    clock: Arc<dyn Clock>,
    progress: &(dyn Fn(&CaseResult) + Sync),
) -> RunResults {
    use crate::setup::SetupCause;
    use std::collections::BTreeMap;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};
    let sem = Arc::new(tokio::sync::Semaphore::new(cfg.jobs.max(1)));
    // Under a profile pool every case shares the same identities: a case that alters them
    // for others runs alone (write), every other case alongside the rest (read). A case
    // that measures the target's timing runs alone too, pool or not.
    let pooled = target.pool.is_some();
    let shared = Arc::new(tokio::sync::RwLock::new(()));
    let stop = Arc::new(AtomicBool::new(false));
    let tally: Arc<Mutex<BTreeMap<SetupCause, usize>>> = Arc::default();
    let stopped_by: Arc<Mutex<Option<SetupCause>>> = Arc::default();
    let mut handles = Vec::new();
    for case in cases {
        let case: &'static Case = case;
        let target = target.clone();
        let cfg = cfg.clone();
        let clock = clock.clone();
        let sem = sem.clone();
        let shared = shared.clone();
        let (stop, tally, stopped_by) = (stop.clone(), tally.clone(), stopped_by.clone());
        handles.push(tokio::spawn(async move {
            let _permit = sem.acquire_owned().await;
            let alone = (pooled && case.alters_shared_identities()) || case.measures_timing();
            let (_alone, _alongside) = if alone {
                (Some(shared.write().await), None)
            } else {
                (None, Some(shared.read().await))
            };
            if stop.load(Ordering::SeqCst) {
                return None;
            }
            let r = run_case(case, target, &cfg, clock).await;
            if let (Some(max), Some(cause)) =
                (cfg.max_setup_errors, crate::setup::cause_of(case, &r))
            {
                let mut t = tally.lock().unwrap_or_else(|p| p.into_inner());
                let n = t.entry(cause).or_insert(0);
                *n += 1;
                if *n > max && !stop.swap(true, Ordering::SeqCst) {
                    *stopped_by.lock().unwrap_or_else(|p| p.into_inner()) = Some(cause);
                }
            }
            Some(r)
        }));
    }
    let mut results = Vec::with_capacity(handles.len());
    for (h, case) in handles.into_iter().zip(cases) {
        let r = match h.await {
            Ok(r) => r,
            Err(e) => {
                let why = Finding::Error(format!("the case panicked: {e}"));
                Some(CaseResult {
                    id: case.id,
                    outcome: Outcome::Error,
                    message: Some(format!("the case panicked: {e}")),
                    expected: None,
                    actual: None,
                    decisive: None,
                    transcripts: vec![no_request(Some(&why))],
                    refusals: Vec::new(),
                    duration: Duration::ZERO,
                })
            }
        };
        if let Some(r) = &r {
            progress(r);
        }
        results.push(r);
    }
    let cause = *stopped_by.lock().unwrap_or_else(|p| p.into_inner());
    let stopped = cause.map(|cause| EarlyStop {
        cause,
        errors: tally
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&cause)
            .copied()
            .unwrap_or(0),
        not_run: results.iter().filter(|r| r.is_none()).count(),
    });
    RunResults { results, stopped }
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("core.envelope.*", "core.envelope.sig.tampered"));
        assert!(glob_match("*tampered*", "core.envelope.sig.tampered-body"));
        assert!(!glob_match("core.auth.*", "core.envelope.x"));
        assert!(glob_match("core.a?th.x", "core.auth.x"));
        assert!(glob_match("*", ""));
    }

    /// The cases that run alone under a pool are named by id: a renamed case must not
    /// silently lose that.
    #[test]
    fn the_cases_that_run_alone_under_a_pool_exist() {
        let alone: Vec<&str> = crate::catalogue::all()
            .into_iter()
            .filter(|c| c.alters_shared_identities())
            .map(|c| c.id)
            .collect();
        assert_eq!(
            alone,
            [
                "core.delegation.revocation.enforced",
                "core.delegation.revocation.recorded"
            ]
        );
        let timing: Vec<&str> = crate::catalogue::all()
            .into_iter()
            .filter(|c| c.measures_timing())
            .map(|c| c.id)
            .collect();
        assert_eq!(timing, ["fed.outbound.backoff-grows"]);
    }
}
