//! What a check finds before the runner turns it into an outcome (DESIGN.md §5). A leaf
//! module: the case shape, the per-case context and the target all use it, none of them is
//! used by it.

use std::fmt;

/// The handle of one recorded exchange of a case (its index in the case's transcripts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ex(pub(crate) usize);

impl Ex {
    /// The position of the exchange in the case's transcripts (what reports call `decisive`).
    pub fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for Ex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0 + 1)
    }
}

/// A refusal a case credited (issue 29): the probe the target refused and, when the case sent
/// one, the control request that differs from the probe only in the property under test and
/// that the target accepted (Wycheproof's valid/invalid pairs). A refusal without a control
/// may have come from another defect of the request than the one under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The refused request.
    pub probe: Ex,
    /// The accepted control, if the case sent one.
    pub control: Option<Ex>,
}

/// The outcome of a check before the runner applies strength, skips and expected failures.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// The target broke the requirement: what was expected, what happened, and which
    /// exchange decided it.
    Fail {
        /// What the spec requires here.
        expected: String,
        /// What the target did.
        actual: String,
        /// The deciding exchange.
        decisive: Option<Ex>,
    },
    /// The case does not apply (declared reason).
    Skip(String),
    /// The target does not offer a feature the case needs.
    Unsupported(String),
    /// The harness itself failed (setup, network, a missing route the case only uses to get
    /// somewhere, a bug); never counted as a pass.
    Error(String),
}

/// `Ok(())` when the target met the requirement.
pub type Verdict = Result<(), Finding>;

/// Builds a [`Finding::Fail`] without a deciding exchange (handshakes, computed checks).
pub fn fail(expected: impl Into<String>, actual: impl Into<String>) -> Finding {
    Finding::Fail {
        expected: expected.into(),
        actual: actual.into(),
        decisive: None,
    }
}

/// Turns a failure of a setup step into a harness `error` naming the step: the case's
/// requirement was not reached, so the target did not break it (issue 13, item 3).
pub fn setup_step(step: &str) -> impl FnOnce(Finding) -> Finding + '_ {
    move |f| match f {
        Finding::Fail {
            expected, actual, ..
        } => Finding::Error(format!(
            "setup step failed before the requirement was reached: {step}: expected {expected}; got {actual}"
        )),
        other => other,
    }
}
