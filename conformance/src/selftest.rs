//! The mutation self-test (DESIGN.md §4–§5): the whole catalogue must pass against the clean
//! reference node, and every MUST case must fail against the reference node running the
//! quirk that turns off exactly the check the case is about. A MUST case no quirk can make
//! fail is a defect of the catalogue, and coverage says how many there are. SHOULD cases
//! that name a quirk are run against it too and must not pass there (they report
//! `non-strict`), so they are proven able to detect what they check.

use crate::case::{Case, Mutant, Strength};
use crate::outcome::{CaseResult, Outcome};
use crate::runner::{RunConfig, run_all};
use crate::target::{SetupError, Transport, embedded_config, probe_embedded, start_embedded};
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
    /// Outcome against the quirked node (cases that name a quirk).
    pub mutated: Option<Outcome>,
    /// Why the case is not proven, when it is not.
    pub problem: Option<String>,
}

/// The whole self-test.
#[derive(Debug, Clone, PartialEq)]
pub struct SelfTest {
    /// Per case, in catalogue order.
    pub cases: Vec<Mutation>,
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

    /// Every problem: clean failures and unproven MUST cases.
    pub fn problems(&self) -> Vec<String> {
        self.cases
            .iter()
            .filter_map(|m| m.problem.as_ref().map(|p| format!("{}: {p}", m.id)))
            .collect()
    }
}

async fn run_against(
    quirks: Quirks,
    cases: &[&'static Case],
    cfg: &RunConfig,
    clock: Arc<dyn Clock>,
) -> Result<Vec<CaseResult>, SetupError> {
    let node = start_embedded(
        quirks,
        clock.clone(),
        cfg.seed,
        embedded_config(),
        Transport::Tls,
    )
    .await?;
    let info = Arc::new(probe_embedded(&node).await?);
    Ok(run_all(cases, info, cfg, clock, &|_| {}).await)
}

/// Runs the self-test over `cases`.
pub async fn selftest(
    cases: &[&'static Case],
    cfg: &RunConfig,
    clock: Arc<dyn Clock>,
) -> Result<SelfTest, SetupError> {
    let clean = run_against(Quirks::none(), cases, cfg, clock.clone()).await?;
    let mut by_quirk: BTreeMap<&'static str, Vec<&'static Case>> = BTreeMap::new();
    for c in cases {
        if let Mutant::Quirk(q) = c.mutant {
            by_quirk.entry(q).or_default().push(c);
        }
    }
    let mut mutated: BTreeMap<&'static str, Outcome> = BTreeMap::new();
    let mut unknown: BTreeMap<&'static str, String> = BTreeMap::new();
    for (q, group) in &by_quirk {
        let Some(quirk) = Quirk::parse(q) else {
            for c in group {
                unknown.insert(
                    c.id,
                    format!("names the quirk {q:?}, which the reference node does not have"),
                );
            }
            continue;
        };
        let results = run_against(Quirks::none().with(quirk), group, cfg, clock.clone()).await?;
        for r in results {
            mutated.insert(r.id, r.outcome);
        }
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
            Mutation { id: c.id, quirk, clean: r.outcome, mutated: m, problem }
        })
        .collect();
    Ok(SelfTest { cases: out })
}
