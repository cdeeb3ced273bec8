//! The sender-authority rule of the loom-core-1 profile ("Federation trust wrapper baseline
//! … Sender authority checks for identity authority ownership"): a node may deliver only
//! envelopes whose sender it hosts, i.e. whose `from.identity` domain is the delivering
//! node. Without it, any federated node could inject envelopes "from" identities of a third
//! node, signed with keys it claims for them.
//!
//! `bridge://` senders are refused over federation: their domain is an email domain, not a
//! LOOM node, so no delivering node can own them (our reading; an email arrives at the node
//! running the bridge, §21.2, not through another node).

use crate::address::Address;
use crate::error::{ErrorCode, ProtocolError};
use crate::federation::node_name::same_node;
use serde_json::Value;

const SECTION: &str = "loom-core-1 §Core 5; v1.1 §15.4";

/// Checks that `delivering_node` may deliver `envelope` (see the module docs). A missing or
/// unparsable `from.identity` is `ENVELOPE_INVALID`; a sender of another domain, or a
/// bridged sender, is `CAPABILITY_DENIED` (the node lacks authority for that identity).
pub fn check_sender_authority(
    envelope: &Value,
    delivering_node: &str,
) -> Result<(), ProtocolError> {
    let text = envelope
        .pointer("/from/identity")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ProtocolError::invalid("from.identity", "from.identity is required", "v1.1 §8.2")
        })?;
    let sender = Address::parse(text)
        .map_err(|e| ProtocolError::invalid("from.identity", e.reason, "v1.1 §6.1"))?;
    if sender.is_bridge() {
        return Err(ProtocolError::new(
            ErrorCode::CapabilityDenied,
            "from.identity",
            format!("{sender} is a bridged identity; no node delivers for it over federation"),
            SECTION,
        ));
    }
    if !same_node(sender.domain(), delivering_node) {
        return Err(ProtocolError::new(
            ErrorCode::CapabilityDenied,
            "from.identity",
            format!("node {delivering_node:?} may deliver only its own identities, not {sender}"),
            SECTION,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn from(id: &str) -> Value {
        json!({"from": {"identity": id}})
    }

    #[test]
    fn only_own_domain_senders() {
        assert!(check_sender_authority(&from("loom://alice@a.test"), "a.test").is_ok());
        assert!(check_sender_authority(&from("loom://alice@a.test"), "A.TEST.").is_ok());
        assert!(check_sender_authority(&from("loom://bot.alice@a.test"), "a.test").is_ok());
        for (env, code) in [
            (from("loom://carol@c.test"), ErrorCode::CapabilityDenied),
            (from("loom://alice@sub.a.test"), ErrorCode::CapabilityDenied),
            (from("bridge://alice@a.test"), ErrorCode::CapabilityDenied),
            (from("not an address"), ErrorCode::EnvelopeInvalid),
            (json!({"from": {}}), ErrorCode::EnvelopeInvalid),
            (json!("x"), ErrorCode::EnvelopeInvalid),
        ] {
            let e = check_sender_authority(&env, "a.test").unwrap_err();
            assert_eq!((e.code, e.field.as_str()), (code, "from.identity"), "{env}");
        }
    }
}
