//! The self-test (DESIGN.md §4–§5, issue 13), in two halves.
//!
//! **Mutation coverage**: the whole catalogue must pass against the clean reference node, and
//! every MUST case must fail against the reference node running the quirk that turns off
//! exactly the check the case is about. A MUST case no quirk can make fail is a defect of the
//! catalogue, and coverage says how many there are. SHOULD cases that name a quirk are run
//! against it too and must not pass there (they report `non-strict`), so they are proven able
//! to detect what they check.
//!
//! **Legal-variant coverage**: the whole catalogue runs against the reference node under each
//! legal variant ([`crate::variants`]): a correct node that made one other choice the spec
//! allows. Every case must pass there, or be `skipped`/`unsupported` with a reason (an optional
//! feature the variant does not offer), or — for a SHOULD case the variant declares it departs
//! from — be `non-strict`. A case that fails a legal variant asserts more than the spec does.

use crate::case::{Case, Mutant, Strength};
use crate::outcome::{CaseResult, Outcome};
use crate::runner::{RunConfig, run_all};
use crate::target::{SetupError, Transport, embedded_config, probe_embedded, start_embedded};
use crate::variants::Variant;
use loom_node::{Quirk, Quirks};
use loom_protocol::clock::Clock;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One case's self-test result.
#[derive(Debug, Clone, PartialEq)]
pub struct Mutation {
    /// Case ID.
    pub id: &'static str,
    /// The quirk, when the case names one.
    pub quirk: Option<&'static str>,
    /// Outcome against the clean node.
    pub clean: Outcome,
    /// Refusals it credited against the clean node, and how many of them had a passing
    /// control beside them (issue 29): a negative case credits at least one.
    pub refusals: (usize, usize),
    /// Outcome against the quirked node (cases that name a quirk).
    pub mutated: Option<Outcome>,
    /// Why the case is not proven, when it is not.
    pub problem: Option<String>,
}

/// One case under one legal variant.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantCase {
    /// Case ID.
    pub id: &'static str,
    /// Its outcome.
    pub outcome: Outcome,
    /// The outcome's message (skip reason, failure summary).
    pub message: Option<String>,
    /// Why this outcome is not acceptable under the variant, if it is not.
    pub problem: Option<String>,
}

/// The catalogue under one legal variant.
#[derive(Debug, Clone)]
pub struct VariantRun {
    /// The variant.
    pub variant: &'static Variant,
    /// Per case, in catalogue order.
    pub cases: Vec<VariantCase>,
}

impl VariantRun {
    /// How many cases came out `outcome`.
    pub fn count(&self, outcome: Outcome) -> usize {
        self.cases.iter().filter(|c| c.outcome == outcome).count()
    }

    /// Whether every case is acceptable under the variant.
    pub fn clean(&self) -> bool {
        self.cases.iter().all(|c| c.problem.is_none())
    }
}

/// The negative cases of one area under its refuse-all mutant ([`crate::variants::refuse_all`]).
#[derive(Debug, Clone)]
pub struct RefuseAllRun {
    /// The mutant's name.
    pub mutant: &'static str,
    /// Each negative case of the area (one that credited a refusal against the clean node) and
    /// its outcome under the mutant, in catalogue order.
    pub cases: Vec<(&'static str, Outcome)>,
}

impl RefuseAllRun {
    /// The negative cases that still pass under the mutant: their refusal was not for the
    /// property under test.
    pub fn vacuous(&self) -> Vec<&'static str> {
        self.cases
            .iter()
            .filter(|(_, o)| *o == Outcome::Pass)
            .map(|(id, _)| *id)
            .collect()
    }
}

/// The whole self-test.
#[derive(Debug, Clone)]
pub struct SelfTest {
    /// Mutation results per case, in catalogue order.
    pub cases: Vec<Mutation>,
    /// One run of the catalogue per legal variant, in variant order.
    pub variants: Vec<VariantRun>,
    /// One run per refuse-all mutant, in list order.
    pub refuse_all: Vec<RefuseAllRun>,
}

impl SelfTest {
    /// MUST cases proven to fail / all MUST cases.
    pub fn coverage(&self, cases: &[&Case]) -> (usize, usize) {
        let must: Vec<&str> = cases
            .iter()
            .filter(|c| c.strength == Strength::Must)
            .map(|c| c.id)
            .collect();
        let proven = self
            .cases
            .iter()
            .filter(|m| {
                must.contains(&m.id) && m.mutated == Some(Outcome::Fail) && m.clean == Outcome::Pass
            })
            .count();
        (proven, must.len())
    }

    /// MUST cases not proven: not passing clean, or not failing under their quirk.
    pub fn unproven(&self, cases: &[&Case]) -> Vec<&'static str> {
        self.cases
            .iter()
            .filter(|m| {
                cases
                    .iter()
                    .any(|c| c.id == m.id && c.strength == Strength::Must)
                    && !(m.clean == Outcome::Pass && m.mutated == Some(Outcome::Fail))
            })
            .map(|m| m.id)
            .collect()
    }

    /// Legal-variant coverage: (variants under which every case was acceptable, variants).
    pub fn variant_coverage(&self) -> (usize, usize) {
        let clean = self.variants.iter().filter(|v| v.clean()).count();
        (clean, self.variants.len())
    }

    /// (acceptable case runs, case runs) over all variants.
    pub fn variant_case_runs(&self) -> (usize, usize) {
        let all: Vec<&VariantCase> = self.variants.iter().flat_map(|v| &v.cases).collect();
        let ok = all.iter().filter(|c| c.problem.is_none()).count();
        (ok, all.len())
    }

    /// (negative cases whose every credited refusal had a passing control, negative cases),
    /// over `cases` — a negative case credited at least one refusal against the clean node.
    pub fn negative_controls(&self, cases: &[&Case]) -> (usize, usize) {
        let negative: Vec<&Mutation> = self
            .cases
            .iter()
            .filter(|m| m.refusals.0 > 0 && cases.iter().any(|c| c.id == m.id))
            .collect();
        let controlled = negative
            .iter()
            .filter(|m| m.refusals.1 == m.refusals.0)
            .count();
        (controlled, negative.len())
    }

    /// Negative cases without a control beside each refusal, in catalogue order.
    pub fn uncontrolled(&self) -> Vec<&'static str> {
        self.cases
            .iter()
            .filter(|m| m.refusals.0 > m.refusals.1)
            .map(|m| m.id)
            .collect()
    }

    /// `(mutant, case)` for each negative case that passed under its area's refuse-all mutant.
    pub fn vacuous_passes(&self) -> Vec<(&'static str, &'static str)> {
        self.refuse_all
            .iter()
            .flat_map(|r| r.vacuous().into_iter().map(|c| (r.mutant, c)))
            .collect()
    }

    /// Every problem: clean failures, unproven MUST cases, cases a legal variant failed, and
    /// negative cases that pass under a refuse-all mutant.
    pub fn problems(&self) -> Vec<String> {
        let mutations = self
            .cases
            .iter()
            .filter_map(|m| m.problem.as_ref().map(|p| format!("{}: {p}", m.id)));
        let variants = self.variants.iter().flat_map(|v| {
            v.cases.iter().filter_map(move |c| {
                c.problem
                    .as_ref()
                    .map(|p| format!("{} under variant {}: {p}", c.id, v.variant.name))
            })
        });
        let vacuous = self.vacuous_passes().into_iter().map(|(m, c)| {
            format!(
                "{c}: passes under the refuse-all mutant {m}, a node that lacks the feature: its refusal was not for the property under test"
            )
        });
        mutations.chain(variants).chain(vacuous).collect()
    }
}

async fn run_against(
    quirks: Quirks,
    cases: &[&'static Case],
    cfg: &RunConfig,
    clock: Arc<dyn Clock>,
) -> Result<Vec<CaseResult>, SetupError> {
    let mut config = embedded_config();
    let fed = crate::peer::Federation::embedded(&mut config, cfg.seed, clock.clone())
        .await
        .map_err(|e| SetupError(format!("the fake federation peers: {e}")))?;
    let mail = crate::mail::MailWorld::embedded(&mut config)
        .await
        .map_err(|e| SetupError(format!("the harness's mail world: {e}")))?;
    let node = start_embedded(
        crate::target::quirk_rules(quirks),
        clock.clone(),
        cfg.seed,
        config,
        Transport::Tls,
    )
    .await?;
    let mut info = probe_embedded(&node).await?;
    info.federation = Some(fed);
    mail.learn(&info, node.smtp, None);
    info.mail = Some(mail);
    let info = Arc::new(info);
    Ok(run_all(cases, info, cfg, clock, &|_| {}).await)
}

/// Runs the self-test over `cases`: the mutation half, and the catalogue under each of
/// `variants`, concurrently (at most [`NODES_AT_ONCE`] embedded nodes serve at a time).
pub async fn selftest(
    cases: &[&'static Case],
    cfg: &RunConfig,
    clock: Arc<dyn Clock>,
    variants: &[&'static Variant],
) -> Result<SelfTest, SetupError> {
    let nodes = Arc::new(tokio::sync::Semaphore::new(NODES_AT_ONCE));
    let (mutations, variants) = tokio::join!(
        mutations(cases, cfg, clock.clone(), nodes.clone()),
        variant_runs(cases, cfg, clock.clone(), variants, nodes.clone())
    );
    let mutations = mutations?;
    let refuse_all = refuse_all_runs(cases, &mutations, cfg, clock, nodes).await?;
    Ok(SelfTest {
        cases: mutations,
        variants: variants?,
        refuse_all,
    })
}

/// The negative cases of each refuse-all mutant's area under that mutant.
async fn refuse_all_runs(
    cases: &[&'static Case],
    mutations: &[Mutation],
    cfg: &RunConfig,
    clock: Arc<dyn Clock>,
    nodes: Arc<tokio::sync::Semaphore>,
) -> Result<Vec<RefuseAllRun>, SetupError> {
    let negative = |c: &Case| mutations.iter().any(|m| m.id == c.id && m.refusals.0 > 0);
    let runs: Vec<(&'static crate::variants::RefuseAll, Vec<&'static Case>)> =
        crate::variants::REFUSE_ALL
            .iter()
            .map(|r| {
                let area: Vec<&'static Case> = cases
                    .iter()
                    .copied()
                    .filter(|c| r.areas.iter().any(|a| c.id.starts_with(a)) && negative(c))
                    .collect();
                (r, area)
            })
            .collect();
    bounded(runs, nodes, |(r, area)| {
        let cfg = cfg.clone();
        let clock = clock.clone();
        async move {
            let (node, info) =
                crate::variants::start_configured(&r.variant, clock.clone(), cfg.seed, r.config)
                    .await?;
            let results = run_all(&area, Arc::new(info), &cfg, clock, &|_| {}).await;
            drop(node);
            Ok(RefuseAllRun {
                mutant: r.variant.name,
                cases: area
                    .iter()
                    .zip(results)
                    .map(|(c, x)| (c.id, x.outcome))
                    .collect(),
            })
        }
    })
    .await
}

/// Embedded nodes serving at once during the self-test (each runs its cases `cfg.jobs` at a
/// time).
pub const NODES_AT_ONCE: usize = 6;

/// Runs `work` for each item on its own task, at most `nodes` at a time; results in order.
async fn bounded<T, R, F, Fut>(
    items: Vec<T>,
    nodes: Arc<tokio::sync::Semaphore>,
    work: F,
) -> Result<Vec<R>, SetupError>
where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(T) -> Fut,
    Fut: std::future::Future<Output = Result<R, SetupError>> + Send + 'static,
{
    let mut handles = Vec::new();
    for item in items {
        let fut = work(item);
        let nodes = nodes.clone();
        handles.push(tokio::spawn(async move {
            let _permit = nodes.acquire_owned().await;
            fut.await
        }));
    }
    let mut out = Vec::new();
    for h in handles {
        out.push(
            h.await
                .map_err(|e| SetupError(format!("a self-test run panicked: {e}")))??,
        );
    }
    Ok(out)
}

/// The catalogue under each legal variant.
async fn variant_runs(
    cases: &[&'static Case],
    cfg: &RunConfig,
    clock: Arc<dyn Clock>,
    variants: &[&'static Variant],
    nodes: Arc<tokio::sync::Semaphore>,
) -> Result<Vec<VariantRun>, SetupError> {
    let cases: Vec<&'static Case> = cases.to_vec();
    bounded(variants.to_vec(), nodes, |v| {
        let cases = cases.clone();
        let cfg = cfg.clone();
        let clock = clock.clone();
        async move {
            let (node, info) = crate::variants::start(v, clock.clone(), cfg.seed).await?;
            let results = run_all(&cases, Arc::new(info), &cfg, clock, &|_| {}).await;
            drop(node);
            let cases = cases
                .iter()
                .zip(results)
                .map(|(c, r)| VariantCase {
                    id: c.id,
                    outcome: r.outcome,
                    problem: variant_problem(v, c, &r),
                    message: r.message,
                })
                .collect();
            Ok(VariantRun { variant: v, cases })
        }
    })
    .await
}

/// Why `r` is not acceptable for `case` under `v`, if it is not.
fn variant_problem(v: &Variant, case: &Case, r: &CaseResult) -> Option<String> {
    let departs = v.departs.contains(&case.id);
    let why = || r.message.clone().unwrap_or_default();
    match (r.outcome, departs) {
        (Outcome::Pass | Outcome::Skipped | Outcome::Unsupported, false) => None,
        (Outcome::NonStrict, true) => None,
        (o, true) => Some(format!(
            "{o}, but the variant departs from this SHOULD case, which must notice it (non-strict): {}",
            why()
        )),
        (o, false) => Some(format!(
            "{o} under a legal variant ({} {}): {}",
            v.section,
            v.name,
            why()
        )),
    }
}

/// The mutation half: clean, then each quirk's cases against that quirk.
async fn mutations(
    cases: &[&'static Case],
    cfg: &RunConfig,
    clock: Arc<dyn Clock>,
    nodes: Arc<tokio::sync::Semaphore>,
) -> Result<Vec<Mutation>, SetupError> {
    let clean = {
        let _permit = nodes.clone().acquire_owned().await;
        run_against(Quirks::none(), cases, cfg, clock.clone()).await?
    };
    let mut by_quirk: BTreeMap<&'static str, Vec<&'static Case>> = BTreeMap::new();
    for c in cases {
        if let Mutant::Quirk(q) = c.mutant {
            by_quirk.entry(q).or_default().push(c);
        }
    }
    let mut mutated: BTreeMap<&'static str, Outcome> = BTreeMap::new();
    let mut unknown: BTreeMap<&'static str, String> = BTreeMap::new();
    let mut runs = Vec::new();
    for (q, group) in by_quirk {
        match Quirk::parse(q) {
            Some(quirk) => runs.push((quirk, group)),
            None => {
                for c in group {
                    unknown.insert(
                        c.id,
                        format!("names the quirk {q:?}, which the reference node does not have"),
                    );
                }
            }
        }
    }
    let per_quirk = bounded(runs, nodes, |(quirk, group)| {
        let cfg = cfg.clone();
        let clock = clock.clone();
        async move { run_against(Quirks::none().with(quirk), &group, &cfg, clock).await }
    })
    .await?;
    for r in per_quirk.into_iter().flatten() {
        mutated.insert(r.id, r.outcome);
    }
    let out = cases
        .iter()
        .zip(clean)
        .map(|(c, r)| {
            let quirk = match c.mutant {
                Mutant::Quirk(q) => Some(q),
                Mutant::NotApplicable(_) => None,
            };
            let m = mutated.get(c.id).copied();
            let problem = if r.outcome != Outcome::Pass {
                Some(format!("{} against the clean reference node: {}", r.outcome, r.message.unwrap_or_default()))
            } else if let Some(u) = unknown.get(c.id) {
                Some(u.clone())
            } else if c.strength != Strength::Must {
                match (c.mutant, m) {
                    (Mutant::Quirk(q), Some(Outcome::Pass)) => Some(format!(
                        "still passes against the node with the `{q}` quirk: the {} case does not detect the broken rule",
                        c.strength
                    )),
                    _ => None,
                }
            } else {
                match (c.mutant, m) {
                    (Mutant::NotApplicable(why), _) => Some(format!("no quirk proves this MUST case can fail: {why}")),
                    (_, Some(Outcome::Fail)) => None,
                    (Mutant::Quirk(q), other) => Some(format!(
                        "still {} against the node with the `{q}` quirk: the case does not detect the broken rule",
                        other.map_or("not run", Outcome::name)
                    )),
                }
            };
            let controlled = r.refusals.iter().filter(|x| x.control.is_some()).count();
            Mutation { id: c.id, quirk, clean: r.outcome, refusals: (r.refusals.len(), controlled), mutated: m, problem }
        })
        .collect();
    Ok(out)
}
