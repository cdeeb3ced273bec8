//! Reports: the run summary every format renders, and the formats.

pub mod html;
pub mod json;
pub mod junit;
pub mod layout;
pub mod merge;
pub mod terminal;

use crate::case::{Case, Strength};
use crate::outcome::{CaseResult, Outcome};
use std::collections::BTreeMap;
use std::time::Duration;

/// Everything one run produced.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The target URL.
    pub target: String,
    /// Whether it was the embedded reference node.
    pub embedded: bool,
    /// The level requested.
    pub level: u8,
    /// `--strict`.
    pub strict: bool,
    /// The data seed.
    pub seed: u64,
    /// When the run started (RFC 3339, from the harness clock).
    pub started_at: String,
    /// Wall time.
    pub duration: Duration,
    /// The node document's `node_id`/`domain`.
    pub node: String,
    /// Results in catalogue order with their cases.
    pub results: Vec<(&'static Case, CaseResult)>,
    /// Why this run is not a complete run of its level, if it is not (`--only`, `--exclude`,
    /// MUST cases in the skip file, an early stop): a partial run certifies no level.
    pub partial: Vec<String>,
}

/// What a run certifies (issue 18): every format renders this one verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LevelVerdict {
    /// A complete run in which every MUST case of levels 1..=`level` passed (or was skipped
    /// with a declared reason), and the catalogue has cases of `level`.
    Achieved(u8),
    /// A complete run that did not achieve the requested level; `reached` is the highest
    /// level below it that every MUST case met.
    NotAchieved {
        /// The level requested.
        requested: u8,
        /// The highest level every MUST case met, if any.
        reached: Option<u8>,
        /// Why the requested level was not achieved.
        why: String,
    },
    /// A filtered or stopped run: no level is certified, whatever passed.
    Partial(Vec<String>),
}

impl LevelVerdict {
    /// One line for the terminal, the HTML banner and the JSON `summary.verdict`.
    pub fn headline(&self) -> String {
        match self {
            LevelVerdict::Achieved(l) => format!("Level {l} achieved"),
            LevelVerdict::NotAchieved {
                requested, reached, ..
            } => match reached {
                Some(r) => {
                    format!("Level {requested} not achieved (every Level {r} requirement met)")
                }
                None => format!("Level {requested} not achieved"),
            },
            LevelVerdict::Partial(_) => "Partial run — no level certified".to_owned(),
        }
    }

    /// The reason under the headline (empty when the level was achieved).
    pub fn detail(&self) -> String {
        match self {
            LevelVerdict::Achieved(_) => String::new(),
            LevelVerdict::NotAchieved { why, .. } => why.clone(),
            LevelVerdict::Partial(reasons) => format!(
                "{}; run without filters to certify a level",
                reasons.join("; ")
            ),
        }
    }
}

impl RunReport {
    /// Counts per outcome.
    pub fn counts(&self) -> BTreeMap<Outcome, usize> {
        let mut m = BTreeMap::new();
        for (_, r) in &self.results {
            *m.entry(r.outcome).or_insert(0) += 1;
        }
        m
    }

    /// Counts per (area, outcome).
    pub fn by_area(&self) -> BTreeMap<&'static str, BTreeMap<Outcome, usize>> {
        let mut m: BTreeMap<&'static str, BTreeMap<Outcome, usize>> = BTreeMap::new();
        for (c, r) in &self.results {
            *m.entry(c.area()).or_default().entry(r.outcome).or_insert(0) += 1;
        }
        m
    }

    /// The level this run certifies: the requested one when [`LevelVerdict::Achieved`], else
    /// `None` (a partial run certifies nothing, whatever passed).
    pub fn level_achieved(&self) -> Option<u8> {
        match self.verdict() {
            LevelVerdict::Achieved(l) => Some(l),
            _ => None,
        }
    }

    /// What the run certifies. The requested level is achieved only by a complete run
    /// (no filter, no MUST case in the skip file, no early stop) in which the catalogue has
    /// cases of that level and every MUST case of levels 1..=requested passed or was skipped
    /// with a declared reason.
    pub fn verdict(&self) -> LevelVerdict {
        if !self.partial.is_empty() {
            return LevelVerdict::Partial(self.partial.clone());
        }
        let reached = self.level_reached();
        if reached == Some(self.level) {
            return LevelVerdict::Achieved(self.level);
        }
        let next = reached.map_or(1, |r| r + 1);
        let has_cases = self.results.iter().any(|(c, _)| c.level == next);
        let blocking = self
            .results
            .iter()
            .filter(|(c, r)| {
                c.level <= next
                    && c.strength == Strength::Must
                    && !matches!(r.outcome, Outcome::Pass | Outcome::Skipped)
            })
            .count();
        let untested = crate::requirements::uncovered_musts(next);
        let why = if !untested.is_empty() {
            format!(
                "the catalogue has no case yet for {} testable MUST requirement(s) of Level {next} ({}), so Level {next} cannot be certified",
                untested.len(),
                untested.join(", ")
            )
        } else if blocking > 0 {
            format!(
                "{blocking} MUST case(s) of Level {next} or below did not pass (fail, error, unsupported or expected-fail)"
            )
        } else if !has_cases {
            format!(
                "the catalogue has no Level {next} cases yet, so Level {next} cannot be certified"
            )
        } else {
            format!("Level {next} was not reached")
        };
        LevelVerdict::NotAchieved {
            requested: self.level,
            reached,
            why,
        }
    }

    /// The highest level in 1..=requested whose MUST cases all passed (skipped ones with a
    /// declared reason do not count against it; failures, errors, expected failures and
    /// unsupported capabilities do) and of which the run had cases. Says nothing about
    /// whether the run was complete: see [`RunReport::verdict`].
    pub fn level_reached(&self) -> Option<u8> {
        let mut achieved = None;
        for level in 1..=self.level {
            if !crate::requirements::uncovered_musts(level).is_empty() {
                break;
            }
            let blocked = self.results.iter().any(|(c, r)| {
                c.level <= level
                    && c.strength == Strength::Must
                    && !matches!(r.outcome, Outcome::Pass | Outcome::Skipped)
            });
            let any = self.results.iter().any(|(c, _)| c.level == level);
            if blocked || !any {
                break;
            }
            achieved = Some(level);
        }
        achieved
    }

    /// Whether any result makes the run fail (exit code 1).
    pub fn failed(&self) -> bool {
        self.results.iter().any(|(_, r)| r.outcome.fails_run())
    }

    /// The exit code of `run` (conformance/README.md "Exit codes"): 0 only when the requested
    /// level was achieved and nothing failed; 1 when a required case failed or the level was
    /// not achieved; 4 for a partial run in which no selected case failed.
    pub fn exit_code(&self) -> u8 {
        match self.verdict() {
            _ if self.failed() => 1,
            LevelVerdict::Achieved(_) => 0,
            LevelVerdict::NotAchieved { .. } => 1,
            LevelVerdict::Partial(_) => 4,
        }
    }
}
