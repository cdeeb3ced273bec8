//! Outcomes exactly as DESIGN.md §5 names them, and the result of one case.

use loom_client::Transcript;
use serde::Serialize;
use std::fmt;
use std::time::Duration;

/// What a case came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The target met the requirement.
    Pass,
    /// A MUST (or, under `--strict`, a SHOULD) was broken.
    Fail,
    /// A SHOULD was broken.
    NonStrict,
    /// A MAY was not implemented.
    Informational,
    /// The case does not apply; the reason is declared.
    Skipped,
    /// The target does not advertise a capability the case needs.
    Unsupported,
    /// Listed in the implementer's skip file, and it failed as expected.
    ExpectedFail,
    /// Listed in the skip file, but it passed: the skip file is stale.
    UnexpectedPass,
    /// The harness itself failed; never counted as a pass.
    Error,
}

impl Outcome {
    /// Every outcome, in report order.
    pub const ALL: [Outcome; 9] = [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::NonStrict,
        Outcome::Informational,
        Outcome::Skipped,
        Outcome::Unsupported,
        Outcome::ExpectedFail,
        Outcome::UnexpectedPass,
        Outcome::Error,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::NonStrict => "non-strict",
            Outcome::Informational => "informational",
            Outcome::Skipped => "skipped",
            Outcome::Unsupported => "unsupported",
            Outcome::ExpectedFail => "expected-fail",
            Outcome::UnexpectedPass => "unexpected-pass",
            Outcome::Error => "error",
        }
    }

    /// Whether this outcome makes the run exit 1.
    pub fn fails_run(self) -> bool {
        matches!(
            self,
            Outcome::Fail | Outcome::Error | Outcome::UnexpectedPass
        )
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The result of one case, with everything a report shows.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseResult {
    /// Case ID.
    pub id: &'static str,
    /// Outcome.
    pub outcome: Outcome,
    /// Why (skip reason, error, or the failure summary).
    pub message: Option<String>,
    /// What the spec requires (failures).
    pub expected: Option<String>,
    /// What the target did (failures).
    pub actual: Option<String>,
    /// Index of the deciding exchange in `transcripts`.
    pub decisive: Option<usize>,
    /// Every exchange the case made.
    pub transcripts: Vec<Transcript>,
    /// The refusals it credited, each with its passing control when it had one (issue 29).
    pub refusals: Vec<crate::finding::Refusal>,
    /// Wall time of the case.
    pub duration: Duration,
}
