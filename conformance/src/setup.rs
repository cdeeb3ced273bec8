//! Setup trouble, named as such (issue 18, item 2). A case that could not get past a setup
//! step — registering or logging in its identities, or any request the target rate-limited —
//! says which step, the cause and the fix, and is an `error`, never a verdict on the
//! requirement. The runner counts errors by [`SetupCause`] and stops a run early when one
//! cause keeps recurring: 190 copies of one message help nobody.

use crate::case::{Case, Need};
use crate::outcome::{CaseResult, Outcome};
use loom_client::Transcript;

/// Where conformance/README.md explains setup errors and their fixes.
pub const README_ANCHOR: &str = "conformance/README.md#setup-errors-and-their-fixes";

/// Why a setup step failed, by kind: the runner stops early on repeats of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SetupCause {
    /// The target answered 429 to a request the case needed to get anywhere.
    RateLimited,
    /// The target refused an identity registration (401, 403 or another 4xx but 409).
    RegistrationRefused,
    /// The address was already registered (409): a reused `--seed`.
    AlreadyRegistered,
    /// The target refused a login (challenge or token).
    LoginRefused,
    /// No HTTP answer: the connection failed or timed out.
    NoAnswer,
}

impl SetupCause {
    /// The cause in words, with what to change.
    pub fn fix(self) -> &'static str {
        match self {
            SetupCause::RateLimited => {
                "the target rate-limits the harness (HTTP 429): lift `rate_limits.auth_per_ip` (registration and login; 0 turns it off, as reference/node/certify.toml does) or the limit that answered, or use pool provisioning"
            }
            SetupCause::RegistrationRefused => {
                "the target refused to register a test identity: allow registration over the registration API, add the members it needs in the profile's [provisioning.registration], or list pre-provisioned identities ([[provisioning.identity]])"
            }
            SetupCause::AlreadyRegistered => {
                "the address is already registered: a run with the same --seed registered it before; run without --seed (every run draws a fresh seed) or pass another"
            }
            SetupCause::LoginRefused => {
                "the target refused to log a test identity in (v1.1 §14.2 challenge and token): check that it accepts `challenge_id` or `challenge` and an Ed25519 signature over the raw nonce"
            }
            SetupCause::NoAnswer => {
                "the target did not answer: check that it is still running and reachable, or raise --timeout-scale for a slow target"
            }
        }
    }

    /// A short name for the early-stop message.
    pub fn name(self) -> &'static str {
        match self {
            SetupCause::RateLimited => "rate-limited (HTTP 429)",
            SetupCause::RegistrationRefused => "registration refused",
            SetupCause::AlreadyRegistered => "already registered",
            SetupCause::LoginRefused => "login refused",
            SetupCause::NoAnswer => "no answer from the target",
        }
    }
}

fn is_registration(t: &Transcript) -> bool {
    t.path.starts_with("/v1/identity/challenge") || t.path == "/v1/identity"
}

fn is_login(t: &Transcript) -> bool {
    t.path.starts_with("/v1/auth/")
}

/// The exchange a result rests on: the deciding one, else the last.
fn resting_on(r: &CaseResult) -> Option<&Transcript> {
    r.decisive
        .and_then(|i| r.transcripts.get(i))
        .or(r.transcripts.last())
}

/// Names setup trouble in `r` (issue 18): a `fail` decided by a 429 becomes an `error` (the
/// target declined to process the request, so the requirement was never reached) unless the
/// case is about rate limits; every setup `error` gets its cause and fix, with a pointer into
/// the README.
pub fn name_trouble(case: &Case, r: &mut CaseResult) {
    let about_rate_limits = case.needs.contains(&Need::RateLimit);
    if r.outcome == Outcome::Fail
        && !about_rate_limits
        && let Some(t) = resting_on(r).filter(|t| t.status == 429)
    {
        let what = format!(
            "setup: {} {} answered HTTP 429 before the requirement was reached ({})",
            t.method,
            t.path,
            r.message.as_deref().unwrap_or("rate limited")
        );
        r.outcome = Outcome::Error;
        r.expected = None;
        r.actual = None;
        r.message = Some(what);
    }
    if let Some(cause) = cause_of(case, r) {
        let message = r.message.clone().unwrap_or_default();
        r.message = Some(format!(
            "{message}. Cause and fix: {} (see {README_ANCHOR})",
            cause.fix()
        ));
    }
}

/// The setup cause of an `error` result, if it is setup trouble: a 429 (outside the
/// rate-limit cases), a refused registration or login, or no answer at all.
pub fn cause_of(case: &Case, r: &CaseResult) -> Option<SetupCause> {
    if r.outcome != Outcome::Error {
        return None;
    }
    let t = resting_on(r)?;
    let message = r.message.as_deref().unwrap_or_default();
    Some(
        if t.status == 429 && !case.needs.contains(&Need::RateLimit) {
            SetupCause::RateLimited
        } else if !message.starts_with("setup") {
            let no_answer = ["connect", "refused", "timed out", "reset", "closed"]
                .iter()
                .any(|w| message.contains(w));
            if !no_answer {
                return None;
            }
            SetupCause::NoAnswer
        } else if is_registration(t) && t.status == 409 {
            SetupCause::AlreadyRegistered
        } else if is_registration(t) && (400..500).contains(&t.status) {
            SetupCause::RegistrationRefused
        } else if is_login(t) && (400..500).contains(&t.status) {
            SetupCause::LoginRefused
        } else {
            return None;
        },
    )
}
