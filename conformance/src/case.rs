//! The shape of a conformance case (DESIGN.md §5): a stable string ID that is never
//! renumbered, a level, a requirement strength, spec references, the one-line requirement,
//! the requirement IDs it covers (the first is the one whose quoted sentence it enforces),
//! the target capabilities it needs, how it is tested, the harness's interpretation where the
//! spec leaves room, the reference-node quirk that must make it fail, and the async check.

use crate::ctx::Ctx;
pub use crate::finding::{Ex, Finding, Verdict, fail};
use serde::Serialize;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// RFC 2119 strength of the requirement a case checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Strength {
    /// A failure fails the level.
    Must,
    /// A failure is `non-strict` (a `fail` under `--strict`).
    Should,
    /// A failure is `informational`.
    May,
}

impl fmt::Display for Strength {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Strength::Must => "MUST",
            Strength::Should => "SHOULD",
            Strength::May => "MAY",
        })
    }
}

/// What a target must offer for a case to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Need {
    /// The harness can create identities (registration API or a profile pool).
    Provisioning,
    /// The harness can register fresh identities itself (DESIGN.md §9 registration API).
    Registration,
    /// An agent identity with a delegation from a human is available.
    Agent,
    /// The target is served over https (TLS checks).
    Tls,
    /// The target advertises a rate limit the harness can reach.
    RateLimit,
    /// A retract window is advertised (§20.7).
    Retraction,
    /// Blob upload endpoints (§16.7).
    Blobs,
    /// Full-text search (§16.6).
    Search,
    /// Event catch-up (§16.8).
    Events,
    /// Delegation endpoints (§16.5).
    Delegations,
    /// Capability endpoints (§16.4).
    Capabilities,
    /// `GET /v1/identity/me` (§16.3, listed without a requirement keyword).
    IdentityMe,
    /// Level 2: the harness's fake federation peer, reachable by the target (profile
    /// `[federation]`; set up automatically for the embedded node).
    FederationPeer,
    /// Level 3: the target's email bridge, with the harness's SMTP source and sink and its
    /// DNS records (profile `[bridge]`; set up automatically for the embedded node).
    MailBridge,
}

impl Need {
    /// The feature name a target advertises in `/v1/protocol/capabilities` for this need, if
    /// the need is a feature.
    pub fn feature(self) -> Option<&'static str> {
        Some(match self {
            Need::Blobs => "blobs",
            Need::Search => "search",
            Need::Events => "events",
            Need::Delegations => "delegations",
            Need::Capabilities => "capability-tokens",
            Need::RateLimit => "rate-limits",
            Need::IdentityMe => "identity-me",
            Need::Retraction => "retraction",
            _ => return None,
        })
    }
}

/// How the mutation self-test proves a case can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Mutant {
    /// The reference node with this quirk (kebab-case name) must fail the case.
    Quirk(&'static str),
    /// Not proven by a quirk (SHOULD/MAY cases, or checks of the harness's own setup); the
    /// reason is shown by `explain` and the self-test report.
    NotApplicable(&'static str),
}

/// The async check of a case.
pub type CaseFn = for<'a> fn(&'a mut Ctx) -> Pin<Box<dyn Future<Output = Verdict> + Send + 'a>>;

/// One conformance case.
#[derive(Clone, Copy)]
pub struct Case {
    /// Stable ID (`core.envelope.sig.tampered-body`); never renumbered or reused.
    pub id: &'static str,
    /// Conformance level (1–4, v1.1 §28.1).
    pub level: u8,
    /// Requirement strength.
    pub strength: Strength,
    /// Spec references (`v1.1 §7.3`, `v1.0 §7.2`).
    pub spec: &'static [&'static str],
    /// The requirement in one line.
    pub requirement: &'static str,
    /// Requirement IDs of `requirements/level1.toml`/`level2.toml` this case covers.
    pub covers: &'static [&'static str],
    /// Target capabilities needed.
    pub needs: &'static [Need],
    /// How the case tests it (shown by `explain`).
    pub how: &'static str,
    /// Where the spec leaves room (silent, or only an example), how the harness reads it and
    /// why the case is not a MUST (shown by `explain`, `matrix` and the reports).
    pub interpretation: Option<&'static str>,
    /// The quirk that must make it fail.
    pub mutant: Mutant,
    /// The check.
    pub run: CaseFn,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("id", &self.id)
            .field("level", &self.level)
            .field("strength", &self.strength)
            .finish_non_exhaustive()
    }
}

impl Case {
    /// The area: the ID's second segment (`envelope` in `core.envelope.sig.tampered-body`).
    pub fn area(&self) -> &'static str {
        self.id.split('.').nth(1).unwrap_or("other")
    }

    /// Whether the case changes what *other* cases may do with the identities it uses, so
    /// that under a profile pool (where every case gets the same pooled identities) it must
    /// run with no other case in flight. Revoking a delegation is such a change: a node may
    /// legally record a revocation for the delegator/delegate pair up to the revocation time
    /// (the v1.0 §13 `delegation.revoked` notification names the pair, not the link), which
    /// then also revokes the links a concurrent case just made for the same pooled pair.
    pub fn alters_shared_identities(&self) -> bool {
        matches!(
            self.id,
            "core.delegation.revocation.enforced" | "core.delegation.revocation.recorded"
        )
    }

    /// Whether the case measures the target's timing, so that it must run with no other case
    /// in flight on the same target: the federation backoff is measured in intervals of
    /// 200 ms and more on the embedded node, and other cases' deliveries in the same outbox
    /// passes lengthened them by as much (the self-test saw a constant schedule pass as
    /// growing).
    pub fn measures_timing(&self) -> bool {
        self.id == "fed.outbound.backoff-grows"
    }
}
