//! `loom-protocol` answering the adapter protocol: the reference implementation every vector
//! must pass, used in-process by `cargo test` and over stdin/stdout by `loom-vectors adapter`.

mod basic;
mod bridge;
mod capability_token;
mod delegation_chain;
mod e2ee;
mod envelope_signature;
mod envelope_validation;
mod federation;
mod http_signature;
mod identity_document;
mod jcs_numbers;
mod notation;
mod plsp;
mod process_yaml;
mod scope_matching;
mod task_state;
mod thread_dag;
mod thread_state;

use crate::protocol::{Answer, Request};
use serde_json::{Map, Value};

/// The inputs of one request, with typed accessors whose errors name the missing member.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a>(pub &'a Map<String, Value>);

/// A request the reference cannot interpret (missing or mistyped input member).
pub type BadRequest = String;

impl<'a> Input<'a> {
    /// Member `name`, any JSON.
    pub fn value(&self, name: &str) -> Result<&'a Value, BadRequest> {
        self.0
            .get(name)
            .ok_or_else(|| format!("input member {name:?} is missing"))
    }

    /// Member `name`, which must be a string.
    pub fn str(&self, name: &str) -> Result<&'a str, BadRequest> {
        self.value(name)?
            .as_str()
            .ok_or_else(|| format!("input member {name:?} must be a string"))
    }

    /// Member `name` if present and not null.
    pub fn opt(&self, name: &str) -> Option<&'a Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }
}

/// One operation of the adapter protocol and the reference's answer to it.
#[derive(Debug, Clone, Copy)]
pub struct KindHandler {
    /// The `kind` of the request.
    pub kind: &'static str,
    /// Computes the answer from the inputs.
    pub answer: fn(Input<'_>) -> Result<Answer, BadRequest>,
}

/// Every kind the reference implements.
pub const KINDS: &[KindHandler] = &[
    KindHandler {
        kind: "e2ee-open",
        answer: e2ee::open,
    },
    KindHandler {
        kind: "e2ee-seal",
        answer: e2ee::seal,
    },
    KindHandler {
        kind: "e2ee-commitment",
        answer: e2ee::commitment,
    },
    KindHandler {
        kind: "e2ee-replay",
        answer: e2ee::replay,
    },
    KindHandler {
        kind: "canonicalize",
        answer: basic::canonicalize,
    },
    KindHandler {
        kind: "parse-id",
        answer: basic::parse_id,
    },
    KindHandler {
        kind: "parse-address",
        answer: basic::parse_address,
    },
    KindHandler {
        kind: "verify-envelope-signature",
        answer: envelope_signature::verify,
    },
    KindHandler {
        kind: "verify-envelope-signature-text",
        answer: envelope_signature::verify_text,
    },
    KindHandler {
        kind: "validate-envelope",
        answer: envelope_validation::validate,
    },
    KindHandler {
        kind: "task-transition",
        answer: task_state::task_transition,
    },
    KindHandler {
        kind: "insert-envelopes",
        answer: thread_dag::insert_envelopes,
    },
    KindHandler {
        kind: "rendering-order",
        answer: thread_dag::rendering_order_kind,
    },
    KindHandler {
        kind: "apply-thread-op",
        answer: thread_state::apply_thread_op,
    },
    KindHandler {
        kind: "replay-thread-ops",
        answer: thread_state::replay_thread_ops,
    },
    KindHandler {
        kind: "check-scope",
        answer: scope_matching::check_scope,
    },
    KindHandler {
        kind: "scope-allows",
        answer: scope_matching::scope_allows,
    },
    KindHandler {
        kind: "scope-subset",
        answer: scope_matching::scope_subset,
    },
    KindHandler {
        kind: "verify-delegation-chain",
        answer: delegation_chain::verify_chain,
    },
    KindHandler {
        kind: "authorize-capability",
        answer: capability_token::authorize,
    },
    KindHandler {
        kind: "format-number",
        answer: jcs_numbers::format,
    },
    KindHandler {
        kind: "number-stream-checkpoint",
        answer: jcs_numbers::stream_checkpoint,
    },
    KindHandler {
        kind: "verify-http-signature",
        answer: http_signature::verify,
    },
    KindHandler {
        kind: "http-signature-string",
        answer: http_signature::signing_string,
    },
    KindHandler {
        kind: "notation-decode",
        answer: notation::notation_decode,
    },
    KindHandler {
        kind: "notation-encode",
        answer: notation::notation_encode,
    },
    KindHandler {
        kind: "plsp-parse",
        answer: plsp::parse,
    },
    KindHandler {
        kind: "plsp-serialize",
        answer: plsp::serialize,
    },
    KindHandler {
        kind: "plsp-check-transition",
        answer: plsp::check_transition,
    },
    KindHandler {
        kind: "plsp-engine-step",
        answer: plsp::engine_step,
    },
    KindHandler {
        kind: "process-yaml.validate",
        answer: process_yaml::validate,
    },
    KindHandler {
        kind: "identity-type-members",
        answer: identity_document::type_members,
    },
    KindHandler {
        kind: "parse-delivery-wrapper",
        answer: federation::parse_wrapper,
    },
    KindHandler {
        kind: "federation-signing-string",
        answer: federation::signing_string_kind,
    },
    KindHandler {
        kind: "verify-delivery-request",
        answer: federation::verify_delivery,
    },
    KindHandler {
        kind: "federation-receipt-text",
        answer: federation::receipt_text,
    },
    KindHandler {
        kind: "verify-delivery-receipt",
        answer: federation::verify_delivery_receipt,
    },
    KindHandler {
        kind: "read-node-document",
        answer: federation::read_document,
    },
    KindHandler {
        kind: "verify-identity-node-signature",
        answer: federation::verify_identity,
    },
    KindHandler {
        kind: "check-sender-authority",
        answer: federation::sender_authority,
    },
    KindHandler {
        kind: "federation-policy",
        answer: federation::federation_policy,
    },
    KindHandler {
        kind: "backoff-bounds",
        answer: federation::backoff,
    },
    KindHandler {
        kind: "retry-after-failure",
        answer: federation::retry,
    },
    KindHandler {
        kind: "classify-delivery-response",
        answer: federation::classify,
    },
    KindHandler {
        kind: "federated-meta",
        answer: federation::federated_meta,
    },
    KindHandler {
        kind: "email-auth",
        answer: bridge::email_auth,
    },
    KindHandler {
        kind: "mail-to-envelope",
        answer: bridge::mail_to_envelope,
    },
    KindHandler {
        kind: "envelope-to-mail",
        answer: bridge::envelope_to_mail,
    },
];

/// The reference answer to `req`; unknown kinds and malformed inputs are `unsupported`, which
/// never counts as a pass.
pub fn answer(req: &Request) -> Answer {
    let a = match KINDS.iter().find(|k| k.kind == req.kind) {
        Some(h) => (h.answer)(Input(&req.input))
            .unwrap_or_else(|e| Answer::unsupported(format!("malformed request: {e}"))),
        None => Answer::unsupported(format!("unknown kind {:?}", req.kind)),
    };
    a.for_id(&req.id)
}
