//! Federation (v1.1 §15; v1.0 §14): the pure rules two nodes need to deliver envelopes to
//! each other, with no IO and time injected. The node wraps them in HTTP, a store and an
//! outbox worker; the conformance harness uses the same rules to build requests and to judge
//! a target's answers.
//!
//! | module | rule |
//! |---|---|
//! | [`dns_discovery`] | §15.1 DNS record names and the `_loom` TXT value |
//! | [`node_name`] | node names (`X-LOOM-Node`, `sender_node`, `domain`) |
//! | [`node_document`] | reading a peer's §15.2 document leniently; whether it is authenticated for a node (§15.3); key lookup and rotation |
//! | [`wrapper`] | the §15.4 delivery wrapper: parse, check, build, batch |
//! | [`inbound`] | the receiving checks of a delivery request, in order |
//! | [`authority`] | loom-core-1 sender authority |
//! | [`policy`] | open / allowlist / quarantine, blocklist |
//! | [`receipt`] | the signed delivery receipt: build, sign, verify |
//! | [`identity`] | node-signed remote identity documents |
//! | [`retry`] | §15.6 store-and-forward timing and failure reasons |
//! | [`limits`] | §14.3 per-node rate class, v1.0 §14.4 queue depth |
//! | [`replication`] | §11.5 operation audience, §11.6 `origin_event_seq`, fan-out by node |
//! | [`hello`] | the signed §15.7 handshake document |
//!
//! Request signing itself (LOOM-HTTP-SIG-1, the nonce cache) is [`crate::http_sig`].

pub mod authority;
pub mod dns_discovery;
pub mod hello;
pub mod identity;
pub mod inbound;
pub mod limits;
pub mod node_document;
pub mod node_name;
pub mod policy;
pub mod receipt;
pub mod replication;
pub mod retry;
mod signature_object;
pub mod wrapper;

#[cfg(test)]
pub(crate) mod testing;

pub use authority::check_sender_authority;
pub use identity::{
    NodeSignatureForm, RetiredKey, VerifiedIdentity, sign_identity_document,
    sign_identity_document_as, verify_identity_document,
};
pub use inbound::{
    CheckedDelivery, InboundContext, InboundRules, NodeKeySource, SpecInbound, authority_of,
    check_delivery, check_delivery_head, check_signed, request_key,
};
pub use node_document::{
    DocumentSource, KeyLookup, KeyStatus, NodeDocumentView, NodeKey, NodeKeys,
    authenticate_node_document, read_node_document,
};
pub use policy::{FederationPolicy, PolicyDecision, PolicyMode};
pub use receipt::{
    DeliveryReceipt, ReceiptExpectation, ReceiptStatus, VerifiedReceipt, verify_receipt,
};
pub use retry::{AttemptResult, FailureKind, NextStep, RetryPolicy};
pub use wrapper::{DeliveryWrapper, WrapperLimits};
