//! Reports: the run summary every format renders, and the formats.

pub mod html;
pub mod json;
pub mod junit;
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

    /// The highest level in 1..=requested whose MUST cases all passed (skipped ones with a
    /// declared reason do not count against it; failures, errors, expected failures and
    /// unsupported capabilities do). `None` when not even level 1 was achieved.
    pub fn level_achieved(&self) -> Option<u8> {
        let mut achieved = None;
        for level in 1..=self.level {
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
}
