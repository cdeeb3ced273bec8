//! Federation policy (v1.1 §15.2 "federation policy mode (open/quarantine/allowlist)";
//! v1.0 §14.2 `federation_policy {open, allowlist, denylist}`; v1.1 §23.1 "policy
//! allow/deny"): which peers a node federates with, as one pure decision applied to inbound
//! deliveries and to outbound ones alike.
//!
//! - a peer on the **blocklist** is refused in every mode;
//! - **open**: everyone else is accepted;
//! - **allowlist**: only listed peers are accepted;
//! - **quarantine**: listed peers are accepted, others are accepted into quarantine (held for
//!   review instead of delivered to mailboxes, v1.1 §23.1 "quarantine").
//!
//! Patterns are a node name (`b.test`) or a wildcard `*.b.test`, which matches subdomains of
//! `b.test` but not `b.test` itself. Names compare case-insensitively.

use crate::error::{ErrorCode, ProtocolError};
use crate::federation::node_name::parse_node_name;

/// The policy mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyMode {
    /// Federate with everyone not blocked.
    Open,
    /// Federate only with listed peers.
    Allowlist,
    /// Accept listed peers; quarantine the rest.
    Quarantine,
}

impl PolicyMode {
    /// Parses `open`, `allowlist` or `quarantine`.
    pub fn parse(s: &str) -> Option<PolicyMode> {
        match s {
            "open" => Some(PolicyMode::Open),
            "allowlist" => Some(PolicyMode::Allowlist),
            "quarantine" => Some(PolicyMode::Quarantine),
            _ => None,
        }
    }

    /// The wire spelling (§15.2).
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyMode::Open => "open",
            PolicyMode::Allowlist => "allowlist",
            PolicyMode::Quarantine => "quarantine",
        }
    }
}

/// A node's federation policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FederationPolicy {
    mode: PolicyMode,
    allow: Vec<Pattern>,
    block: Vec<Pattern>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    Exact(String),
    Subdomains(String),
}

impl Pattern {
    fn parse(s: &str) -> Result<Pattern, String> {
        match s.strip_prefix("*.") {
            Some(rest) => parse_node_name(rest)
                .map(Pattern::Subdomains)
                .map_err(|why| format!("pattern {s:?}: {why}")),
            None => parse_node_name(s)
                .map(Pattern::Exact)
                .map_err(|why| format!("pattern {s:?}: {why}")),
        }
    }

    fn matches(&self, node: &str) -> bool {
        match self {
            Pattern::Exact(n) => n == node,
            Pattern::Subdomains(suffix) => node
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }
}

/// What the policy lets a peer do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyDecision {
    /// Federate normally.
    Accept,
    /// Accept, but hold what arrives in quarantine.
    Quarantine,
}

impl FederationPolicy {
    /// A policy; a malformed pattern is a configuration error naming it.
    pub fn new(
        mode: PolicyMode,
        allow: &[&str],
        block: &[&str],
    ) -> Result<FederationPolicy, String> {
        let parse = |list: &[&str]| {
            list.iter()
                .map(|p| Pattern::parse(p))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(FederationPolicy {
            mode,
            allow: parse(allow)?,
            block: parse(block)?,
        })
    }

    /// Open to everyone.
    pub fn open() -> FederationPolicy {
        FederationPolicy {
            mode: PolicyMode::Open,
            allow: vec![],
            block: vec![],
        }
    }

    /// The mode.
    pub fn mode(&self) -> PolicyMode {
        self.mode
    }

    /// The decision for `peer` (see the module docs); a refusal is `CAPABILITY_DENIED`.
    pub fn decide(&self, peer: &str) -> Result<PolicyDecision, ProtocolError> {
        let deny = |why: String| {
            ProtocolError::new(
                ErrorCode::CapabilityDenied,
                "X-LOOM-Node",
                why,
                "v1.1 §15.2, §23.1",
            )
        };
        let node = parse_node_name(peer).map_err(|why| deny(format!("node {peer:?}: {why}")))?;
        if self.block.iter().any(|p| p.matches(&node)) {
            return Err(deny(format!(
                "node {node:?} is blocked by federation policy"
            )));
        }
        let listed = self.allow.iter().any(|p| p.matches(&node));
        match self.mode {
            PolicyMode::Open => Ok(PolicyDecision::Accept),
            PolicyMode::Allowlist if listed => Ok(PolicyDecision::Accept),
            PolicyMode::Allowlist => Err(deny(format!(
                "federation policy is allowlist and node {node:?} is not listed"
            ))),
            PolicyMode::Quarantine if listed => Ok(PolicyDecision::Accept),
            PolicyMode::Quarantine => Ok(PolicyDecision::Quarantine),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions() {
        let p = |m, a: &[&str], b: &[&str]| FederationPolicy::new(m, a, b).unwrap();
        assert_eq!(
            FederationPolicy::open().decide("x.test"),
            Ok(PolicyDecision::Accept)
        );
        let open = p(PolicyMode::Open, &[], &["bad.test", "*.spam.test"]);
        assert!(open.decide("BAD.test.").is_err());
        assert!(open.decide("a.spam.test").is_err());
        assert_eq!(open.decide("spam.test"), Ok(PolicyDecision::Accept));
        let allow = p(
            PolicyMode::Allowlist,
            &["a.test", "*.corp.test"],
            &["x.corp.test"],
        );
        assert_eq!(allow.decide("a.test"), Ok(PolicyDecision::Accept));
        assert_eq!(allow.decide("eu.corp.test"), Ok(PolicyDecision::Accept));
        assert!(allow.decide("corp.test").is_err());
        assert!(allow.decide("xcorp.test").is_err());
        let e = allow.decide("x.corp.test").unwrap_err();
        assert_eq!(e.code, ErrorCode::CapabilityDenied);
        let q = p(PolicyMode::Quarantine, &["a.test"], &[]);
        assert_eq!(q.decide("a.test"), Ok(PolicyDecision::Accept));
        assert_eq!(q.decide("b.test"), Ok(PolicyDecision::Quarantine));
        assert!(FederationPolicy::new(PolicyMode::Open, &["*."], &[]).is_err());
        assert!(FederationPolicy::new(PolicyMode::Open, &[], &["a b"]).is_err());
        assert_eq!(
            PolicyMode::parse("quarantine").map(PolicyMode::as_str),
            Some("quarantine")
        );
    }
}
