//! LOOM addresses (v1.1 §6.1; v1.0 §6.1): `loom://{local}@{domain}[#{fragment}]` and the
//! reserved `bridge://{email}` scheme.
//!
//! Comparison is case-insensitive, so parsing lowercases; the wire form must already be
//! lowercase ("MUST be serialized in canonical lowercase form"), which
//! [`Address::parse_wire`] checks. Fragments are client-side deep links and "MUST NOT be
//! transmitted in envelopes": only [`Address::parse_with_fragment`] accepts one.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// Why an address was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressError {
    /// The rule that was broken.
    pub reason: &'static str,
}

impl fmt::Display for AddressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason)
    }
}

impl std::error::Error for AddressError {}

fn fail<T>(reason: &'static str) -> Result<T, AddressError> {
    Err(AddressError { reason })
}

/// A LOOM or bridged identity address, in canonical lowercase form.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Address {
    /// `loom://local@domain`
    Loom {
        /// Local part, `[a-z0-9][a-z0-9._-]{0,63}`.
        local: String,
        /// Domain of the hosting node.
        domain: String,
    },
    /// `bridge://mailbox@domain`: an identity proxied from email.
    Bridge {
        /// Email local part.
        local: String,
        /// Email domain.
        domain: String,
    },
}

/// The `loom://` scheme.
pub const LOOM_SCHEME: &str = "loom://";
/// The reserved `bridge://` scheme.
pub const BRIDGE_SCHEME: &str = "bridge://";

impl Address {
    /// Parses an address without a fragment, normalizing case.
    pub fn parse(s: &str) -> Result<Self, AddressError> {
        if s.contains('#') {
            return fail(
                "fragment identifiers are client-side only and must not be transmitted (v1.1 §6.1)",
            );
        }
        Self::parse_body(s)
    }

    /// Parses an address as it must appear on the wire: no fragment, already lowercase.
    pub fn parse_wire(s: &str) -> Result<Self, AddressError> {
        let a = Self::parse(s)?;
        if a.to_string() != s {
            return fail("address must be serialized in canonical lowercase form (v1.1 §6.1)");
        }
        Ok(a)
    }

    /// Parses a client-side deep link, returning the fragment separately.
    pub fn parse_with_fragment(s: &str) -> Result<(Self, Option<String>), AddressError> {
        match s.split_once('#') {
            None => Ok((Self::parse_body(s)?, None)),
            Some((body, frag)) => {
                if frag.is_empty() || frag.contains('#') {
                    return fail("fragment must be non-empty and contain no further '#'");
                }
                if matches!(Self::parse_body(body)?, Address::Bridge { .. }) {
                    return fail("bridge:// addresses do not take fragments");
                }
                Ok((Self::parse_body(body)?, Some(frag.to_owned())))
            }
        }
    }

    fn parse_body(s: &str) -> Result<Self, AddressError> {
        let lower = s.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix(LOOM_SCHEME) {
            let (local, domain) = rest.rsplit_once('@').ok_or(AddressError {
                reason: "loom address must be loom://{local}@{domain}",
            })?;
            check_loom_local(local)?;
            check_domain(domain)?;
            Ok(Address::Loom {
                local: local.to_owned(),
                domain: domain.to_owned(),
            })
        } else if let Some(rest) = lower.strip_prefix(BRIDGE_SCHEME) {
            let (local, domain) = rest.rsplit_once('@').ok_or(AddressError {
                reason: "bridge address must be bridge://{mailbox}@{domain}",
            })?;
            check_email_local(local)?;
            check_domain(domain)?;
            Ok(Address::Bridge {
                local: local.to_owned(),
                domain: domain.to_owned(),
            })
        } else {
            fail("address must use the loom:// or bridge:// scheme")
        }
    }

    /// True for `bridge://` addresses (reserved for bridged identities, v1.1 §6.1).
    pub fn is_bridge(&self) -> bool {
        matches!(self, Address::Bridge { .. })
    }

    /// The local part.
    pub fn local(&self) -> &str {
        match self {
            Address::Loom { local, .. } | Address::Bridge { local, .. } => local,
        }
    }

    /// The domain.
    pub fn domain(&self) -> &str {
        match self {
            Address::Loom { domain, .. } | Address::Bridge { domain, .. } => domain,
        }
    }

    /// The agent-scoping hierarchy of a loom address, outermost first:
    /// `research.assistant.almarion` → `["research", "assistant", "almarion"]` (v1.1 §6.1).
    pub fn scope_segments(&self) -> Vec<&str> {
        match self {
            Address::Loom { local, .. } => local.split('.').collect(),
            Address::Bridge { .. } => Vec::new(),
        }
    }

    /// The identity an agent address is scoped to: `assistant.almarion@d` → `almarion@d`.
    /// `None` for an unscoped local part or a bridge address.
    pub fn scoped_parent(&self) -> Option<Address> {
        match self {
            Address::Loom { local, domain } => local.split_once('.').and_then(|(_, parent)| {
                (!parent.is_empty()).then(|| Address::Loom {
                    local: parent.to_owned(),
                    domain: domain.clone(),
                })
            }),
            Address::Bridge { .. } => None,
        }
    }
}

/// `[a-z0-9][a-z0-9._-]{0,63}` (v1.1 §6.1).
fn check_loom_local(local: &str) -> Result<(), AddressError> {
    let b = local.as_bytes();
    if b.is_empty() {
        return fail("local part must not be empty");
    }
    if b.len() > 64 {
        return fail("local part must be at most 64 characters ([a-z0-9][a-z0-9._-]{0,63})");
    }
    if !(b[0].is_ascii_lowercase() || b[0].is_ascii_digit()) {
        return fail("local part must start with [a-z0-9]");
    }
    if !b
        .iter()
        .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'.' | b'_' | b'-'))
    {
        return fail("local part may contain only [a-z0-9._-]");
    }
    Ok(())
}

/// An email local part as a dot-atom (RFC 5322 §3.2.3), at most 64 octets (RFC 5321 §4.5.3.1.1).
fn check_email_local(local: &str) -> Result<(), AddressError> {
    if local.is_empty() || local.len() > 64 {
        return fail("email local part must be 1 to 64 characters");
    }
    if local.starts_with('.') || local.ends_with('.') || local.contains("..") {
        return fail("email local part must be a dot-atom (no leading, trailing or doubled '.')");
    }
    let atext = |c: u8| c.is_ascii_alphanumeric() || b"!#$%&'*+/=?^_`{|}~-.".contains(&c);
    if !local.bytes().all(atext) {
        return fail("email local part may contain only RFC 5322 atext characters and '.'");
    }
    Ok(())
}

/// A DNS name of LDH labels (RFC 1123 §2.1), at most 253 characters.
fn check_domain(domain: &str) -> Result<(), AddressError> {
    if domain.is_empty() || domain.len() > 253 {
        return fail("domain must be 1 to 253 characters");
    }
    for label in domain.split('.') {
        let b = label.as_bytes();
        if b.is_empty() || b.len() > 63 {
            return fail("each domain label must be 1 to 63 characters");
        }
        if b[0] == b'-' || b[b.len() - 1] == b'-' {
            return fail("domain labels must not start or end with '-'");
        }
        if !b
            .iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        {
            return fail("domain labels may contain only [a-z0-9-]");
        }
    }
    Ok(())
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Loom { local, domain } => write!(f, "{LOOM_SCHEME}{local}@{domain}"),
            Address::Bridge { local, domain } => write!(f, "{BRIDGE_SCHEME}{local}@{domain}"),
        }
    }
}

impl FromStr for Address {
    type Err = AddressError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Address::parse(s)
    }
}

impl Serialize for Address {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Address {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Address::parse_wire(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples_parse() {
        let a = Address::parse("loom://almarion@cowork-os.com").unwrap();
        assert_eq!(a.local(), "almarion");
        assert_eq!(a.domain(), "cowork-os.com");
        let agent = Address::parse("loom://research.assistant.almarion@cowork-os.com").unwrap();
        assert_eq!(
            agent.scope_segments(),
            vec!["research", "assistant", "almarion"]
        );
        assert_eq!(
            agent.scoped_parent().unwrap().to_string(),
            "loom://assistant.almarion@cowork-os.com"
        );
        assert_eq!(a.scoped_parent(), None);
        let b = Address::parse("bridge://alice@gmail.com").unwrap();
        assert!(b.is_bridge());
        assert_eq!(b.to_string(), "bridge://alice@gmail.com");
        let (deep, frag) =
            Address::parse_with_fragment("loom://almarion@cowork-os.com#thr_01JMKB7W").unwrap();
        assert_eq!(deep, a);
        assert_eq!(frag.as_deref(), Some("thr_01JMKB7W"));
    }

    #[test]
    fn case_is_normalized_but_wire_form_must_be_lowercase() {
        let a = Address::parse("LOOM://Almarion@CoWork-OS.com").unwrap();
        assert_eq!(a.to_string(), "loom://almarion@cowork-os.com");
        assert!(Address::parse_wire("loom://Almarion@cowork-os.com").is_err());
        assert!(Address::parse_wire("loom://almarion@cowork-os.com").is_ok());
        assert!(serde_json::from_str::<Address>("\"loom://A@b.c\"").is_err());
    }

    #[test]
    fn local_part_rule_is_enforced() {
        let max = format!("loom://a{}@d.test", "b".repeat(63));
        assert!(Address::parse(&max).is_ok());
        let over = format!("loom://a{}@d.test", "b".repeat(64));
        assert!(Address::parse(&over).is_err());
        for bad in [
            "loom://@d.test",
            "loom://.a@d.test",
            "loom://_a@d.test",
            "loom://-a@d.test",
            "loom://a+b@d.test",
            "loom://a b@d.test",
            "loom://ä@d.test",
            "loom://a@",
            "loom://a@-d.test",
            "loom://a@d..test",
            "loom://a@d_x.test",
            "loom://a@d.test#",
            "loom://a@d.test#x",
            "mailto:a@d.test",
            "loom:/a@d.test",
            "a@d.test",
        ] {
            assert!(Address::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Address::parse("loom://a.b_c-d.9@d.test").is_ok());
    }

    #[test]
    fn bridge_addresses_take_email_rules_and_no_fragment() {
        assert!(Address::parse("bridge://first.last+tag@example.com").is_ok());
        assert!(Address::parse("bridge://.first@example.com").is_err());
        assert!(Address::parse("bridge://a..b@example.com").is_err());
        assert!(Address::parse("bridge://a@b@example.com").is_err());
        assert!(Address::parse_with_fragment("bridge://a@example.com#x").is_err());
    }
}
