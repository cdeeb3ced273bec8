//! Target profiles: how to reach and provision a node under test (DESIGN.md §5). A profile
//! is a TOML file; every key is optional and unknown keys are errors that name the key.
//!
//! ```toml
//! [target]
//! readiness_timeout_secs = 30        # how long to wait for /.well-known/loom.json
//! timeout_scale = 1.0                # multiplies every per-request timeout
//! features = ["search", "blobs"]     # the features to assume (the harness's convention)
//!
//! [capabilities]                     # merged over /v1/protocol/capabilities, or used when the
//! limits = { max_envelope_bytes = 262144 }     # node serves no such document
//! rate_limits = { envelopes_per_identity_per_min = 100 }
//!
//! [tls]
//! ca_cert = "ca.pem"                 # trust this PEM for an https target
//! insecure = false                   # accept any certificate (development only)
//!
//! [provisioning]
//! mode = "register"                  # "register" (DESIGN.md §9 API) or "pool"
//! [provisioning.registration]        # what registrations carry besides the §9 members
//! agent_info = { provider = "acme", model = "m-1", version = "2026.02" }
//! extra = { invite_code = "…" }      # added to every registration document
//! # pool: identities the operator created beforehand, with their Ed25519 seeds
//! [[provisioning.identity]]
//! address = "loom://conf-a@example.org"
//! type = "human"
//! key_id = "k_sign_conf_a_1"
//! seed_hex = "…64 hex digits…"
//! ```

use serde::Deserialize;
use std::path::Path;

/// A whole profile.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Profile {
    /// Reachability and timing.
    pub target: TargetSection,
    /// TLS trust.
    pub tls: TlsSection,
    /// How identities are obtained.
    pub provisioning: Provisioning,
    /// Capabilities to assume, merged over what `/v1/protocol/capabilities` serves (same
    /// members: `limits`, `rate_limits`, …).
    pub capabilities: Option<toml::Table>,
    /// Level 2: how the target reaches the harness's fake federation peers
    /// ([`crate::peer::profile`]).
    pub federation: Option<crate::peer::profile::FederationSection>,
    /// Level 3: where the target takes mail and where it relays mail to
    /// ([`crate::mail::profile`]).
    pub bridge: Option<crate::mail::profile::BridgeSection>,
}

/// `[target]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TargetSection {
    /// Seconds to wait for the node document.
    pub readiness_timeout_secs: f64,
    /// Timeout multiplier.
    pub timeout_scale: f64,
    /// The deadline of one case, in seconds, before `timeout_scale` (default 60): a case
    /// still running then is an `error`. Level 2 cases wait for the target's outbox, so a
    /// node that federates on a slow timer needs more.
    pub case_timeout_secs: f64,
    /// Features to assume instead of the advertised and probed ones (the harness's own
    /// vocabulary: `search`, `blobs`, `events`, `delegations`, `capability-tokens`,
    /// `rate-limits`, `identity-me`, `retraction`).
    pub features: Option<Vec<String>>,
}

impl Default for TargetSection {
    fn default() -> Self {
        TargetSection {
            readiness_timeout_secs: 30.0,
            timeout_scale: 1.0,
            case_timeout_secs: 60.0,
            features: None,
        }
    }
}

/// `[tls]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsSection {
    /// A PEM file of trusted certificates.
    pub ca_cert: Option<String>,
    /// Trust any certificate.
    pub insecure: bool,
}

/// `[provisioning]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Provisioning {
    /// `register` or `pool`.
    pub mode: String,
    /// The pool.
    pub identity: Vec<PoolIdentity>,
    /// What registrations carry besides the DESIGN.md §9 members.
    pub registration: Registration,
}

impl Default for Provisioning {
    fn default() -> Self {
        Provisioning {
            mode: "register".into(),
            identity: Vec::new(),
            registration: Registration::default(),
        }
    }
}

/// `[provisioning.registration]`: members a node may need at registration (issue 13, item 4).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Registration {
    /// The `agent_info` of agents the harness registers (default: provider, model and version
    /// of the harness; v1.1 §6.4 shows all three).
    pub agent_info: Option<toml::Table>,
    /// Members added to every registration document (not part of the §9 document hash).
    pub extra: Option<toml::Table>,
}

/// One pre-provisioned identity.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolIdentity {
    /// `loom://…`.
    pub address: String,
    /// §6.3 type.
    #[serde(rename = "type", default = "human")]
    pub kind: String,
    /// Its signing key id.
    pub key_id: String,
    /// The Ed25519 seed, 64 hex digits.
    pub seed_hex: String,
}

fn human() -> String {
    "human".into()
}

impl Profile {
    /// Reads and checks a profile file; errors name the file and the problem.
    pub fn load(path: &Path) -> Result<Profile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("profile {}: {e}", path.display()))?;
        Profile::parse(&text).map_err(|e| format!("profile {}: {e}", path.display()))
    }

    /// Parses and checks profile text.
    pub fn parse(text: &str) -> Result<Profile, String> {
        let p: Profile = toml::from_str(text).map_err(|e| e.to_string())?;
        if !matches!(p.provisioning.mode.as_str(), "register" | "pool") {
            return Err(format!(
                "provisioning.mode must be \"register\" or \"pool\", not {:?}",
                p.provisioning.mode
            ));
        }
        if p.provisioning.mode == "pool" && p.provisioning.identity.is_empty() {
            return Err(
                "provisioning.mode = \"pool\" needs [[provisioning.identity]] entries".into(),
            );
        }
        for (i, id) in p.provisioning.identity.iter().enumerate() {
            let ok = id.seed_hex.len() == 64 && id.seed_hex.bytes().all(|b| b.is_ascii_hexdigit());
            if !ok {
                return Err(format!(
                    "provisioning.identity[{i}].seed_hex must be 64 hex digits"
                ));
            }
        }
        if let Some(a) = &p.provisioning.registration.agent_info
            && a.is_empty()
        {
            return Err(
                "provisioning.registration.agent_info must not be empty (v1.1 §6.4)".into(),
            );
        }
        // The ranges `loom-conformance run` accepts, so every parsed profile gives valid
        // durations (the fuzz target `conformance_profile` found 5.2e18 accepted here).
        let ready = p.target.readiness_timeout_secs;
        if !(ready.is_finite() && (0.0..=86_400.0).contains(&ready)) {
            return Err(format!(
                "target.readiness_timeout_secs must be between 0 and 86400 seconds, not {ready}"
            ));
        }
        if !(p.target.timeout_scale > 0.0 && p.target.timeout_scale <= 1000.0) {
            return Err("target.timeout_scale must be a number above 0 and at most 1000".into());
        }
        if let Some(f) = &p.federation {
            f.check()?;
        }
        Ok(p)
    }
}

/// A TOML table as JSON.
pub fn table_json(t: &toml::Table) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_extras_and_capabilities_parse() {
        let p = Profile::parse(
            "[capabilities.limits]\nmax_envelope_bytes = 1000\n[provisioning.registration]\nagent_info = { provider = \"p\", model = \"m\", version = \"v\" }\nextra = { invite_code = \"x\" }\n",
        )
        .expect("parses");
        let caps = table_json(p.capabilities.as_ref().expect("capabilities"));
        assert_eq!(caps["limits"]["max_envelope_bytes"], 1000);
        let extra = table_json(p.provisioning.registration.extra.as_ref().expect("extra"));
        assert_eq!(extra["invite_code"], "x");
        assert!(Profile::parse("[provisioning.registration]\nagent_info = {}\n").is_err());
        assert!(Profile::parse("[provisioning.registration]\nbogus = 1\n").is_err());
    }
}
