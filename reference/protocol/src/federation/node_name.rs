//! Node names: the DNS domain a node serves (v1.1 §15.1–§15.2 `domain`, `X-LOOM-Node`,
//! wrapper `sender_node`). Compared case-insensitively with a trailing dot ignored
//! ([`crate::http_sig::normalize_node`]), written lowercase.

use crate::http_sig::normalize_node;

/// Parses a node name: a DNS name of LDH labels (RFC 1123 §2.1), at most 253 characters,
/// returned in normalized form (lowercase, no trailing dot). Ports, schemes and paths are not
/// part of a node name.
pub fn parse_node_name(s: &str) -> Result<String, &'static str> {
    let n = normalize_node(s);
    if n.is_empty() || n.len() > 253 {
        return Err("a node name is a DNS name of 1 to 253 characters");
    }
    for label in n.split('.') {
        let b = label.as_bytes();
        if b.is_empty() || b.len() > 63 {
            return Err("each label of a node name must be 1 to 63 characters");
        }
        if b[0] == b'-' || b[b.len() - 1] == b'-' {
            return Err("node name labels must not start or end with '-'");
        }
        if !b
            .iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        {
            return Err("node name labels may contain only letters, digits and '-'");
        }
    }
    Ok(n)
}

/// True when `a` and `b` name the same node.
pub fn same_node(a: &str, b: &str) -> bool {
    normalize_node(a) == normalize_node(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_normalize_and_bad_names_are_refused() {
        assert_eq!(parse_node_name("Node-A.Test.").unwrap(), "node-a.test");
        for bad in [
            "",
            ".",
            "a..b",
            "-a.test",
            "a-.test",
            "a.test:8443",
            "https://a.test",
            "a test",
            "a_b.test",
        ] {
            assert!(parse_node_name(bad).is_err(), "{bad:?}");
        }
        assert!(parse_node_name(&"a".repeat(64)).is_err());
        assert!(same_node("A.test.", "a.TEST"));
        assert!(!same_node("a.test", "b.test"));
    }
}
