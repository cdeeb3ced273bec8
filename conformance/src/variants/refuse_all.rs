//! Refuse-all mutants (issue 29), the vacuity half of the self-test: each is the reference node
//! behind the variant shim refusing every request of one feature, as a node that lacks the
//! feature would. A negative case of that area that still *passes* under it proves nothing —
//! its refusal was not for the property under test — so the self-test requires every such
//! case to end `error`, `unsupported` or `fail` there. A passing control beside each refusal
//! is what makes them fail: the mutant refuses the control too.

use super::shim::{Shim, join, split};
use super::{Handler, Variant};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;

/// A refuse-all mutant and the cases it judges.
#[derive(Debug)]
pub struct RefuseAll {
    /// The shim (a [`Variant`] whose choice is to lack the feature).
    pub variant: Variant,
    /// Case ID prefixes of the area: its negative cases must not pass under the mutant.
    pub areas: &'static [&'static str],
    /// The node's configuration as the mutant runs it (most mutants change nothing there;
    /// the mail mutant's missing feature is not on the HTTP side).
    pub config: fn(&mut loom_node::NodeConfig),
}

/// Leaves the configuration as it is.
fn keep(_: &mut loom_node::NodeConfig) {}

/// A bridge that takes no mail: every message is over a 1-byte size limit (552 at DATA).
fn refuse_all_mail(config: &mut loom_node::NodeConfig) {
    if let Some(b) = &mut config.bridge {
        b.max_message_bytes = 1;
    }
}

async fn pass_through(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    next.run(req).await
}

macro_rules! handler {
    ($f:ident) => {{
        let h: Handler = |s, r, n| Box::pin($f(s, r, n));
        h
    }};
}

/// Refuses `POST /v1/envelopes` (and `path_extra`) when the JSON body holds `member`, with
/// `code`; everything else passes through.
async fn refuse_member(
    shim: Arc<Shim>,
    req: Request,
    next: Next,
    member: &str,
    code: &str,
    route: &str,
) -> Response {
    if req.method().as_str() == "POST" && req.uri().path() == route {
        return shim.error(code, "$body", &format!("{route} is refused by this node"));
    }
    if !(req.method().as_str() == "POST" && req.uri().path() == "/v1/envelopes") {
        return next.run(req).await;
    }
    let (parts, bytes) = split(req).await;
    let needle = format!("\"{member}\"");
    if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
        return shim.error(
            code,
            member,
            &format!("envelopes carrying {member} are refused"),
        );
    }
    next.run(join(parts, bytes)).await
}

async fn capability_tokens(shim: Arc<Shim>, req: Request, next: Next) -> Response {
    refuse_member(
        shim,
        req,
        next,
        "capability_token",
        "CAPABILITY_DENIED",
        "/v1/capabilities",
    )
    .await
}

async fn delegation_chains(shim: Arc<Shim>, req: Request, next: Next) -> Response {
    refuse_member(
        shim,
        req,
        next,
        "delegation_chain",
        "DELEGATION_INVALID",
        "/v1/delegations",
    )
    .await
}

/// A node without E2EE: every envelope carrying wrapped keys (an encrypted payload or an
/// `encryption.epoch@v1`) is refused; no route of its own.
async fn encrypted_content(shim: Arc<Shim>, req: Request, next: Next) -> Response {
    refuse_member(shim, req, next, "wrapped_keys", "ENVELOPE_INVALID", "").await
}

async fn federation_deliveries(shim: Arc<Shim>, req: Request, next: Next) -> Response {
    if req.method().as_str() == "POST"
        && req.uri().path() == loom_protocol::federation::wrapper::DELIVER_PATH
    {
        return shim.error(
            "SIGNATURE_INVALID",
            "X-LOOM-Signature",
            "every federation delivery is refused by this node",
        );
    }
    next.run(req).await
}

async fn key_operations(shim: Arc<Shim>, req: Request, next: Next) -> Response {
    if req.uri().path().starts_with("/v1/identity/me/keys")
        && matches!(req.method().as_str(), "POST" | "DELETE")
    {
        return shim.error(
            "CAPABILITY_DENIED",
            "$path",
            "key operations are refused by this node",
        );
    }
    next.run(req).await
}

async fn no_blob_routes(shim: Arc<Shim>, req: Request, next: Next) -> Response {
    if req.uri().path().starts_with("/v1/blobs") {
        let reason = format!("no API surface at {}", req.uri().path());
        return shim.error("EXTENSION_DISABLED", "$path", &reason);
    }
    next.run(req).await
}

async fn empty_search(_shim: Arc<Shim>, req: Request, next: Next) -> Response {
    if req.method().as_str() == "GET" && req.uri().path() == "/v1/search" {
        return super::shim::json_reply(
            200,
            &serde_json::json!({"envelopes": [], "threads": [], "total": 0}),
        );
    }
    next.run(req).await
}

async fn thread_operations(shim: Arc<Shim>, req: Request, next: Next) -> Response {
    if !(req.method().as_str() == "POST" && req.uri().path() == "/v1/envelopes") {
        return next.run(req).await;
    }
    let (parts, bytes) = split(req).await;
    let is_op =
        serde_json::from_slice::<serde_json::Value>(&bytes).is_ok_and(|v| v["type"] == "thread_op");
    if is_op {
        return shim.error(
            "CAPABILITY_DENIED",
            "type",
            "thread operations are refused by this node",
        );
    }
    next.run(join(parts, bytes)).await
}

/// A node without the real-time stream: its WebSocket route answers 404 (no such route).
async fn no_websocket(shim: Arc<Shim>, req: Request, next: Next) -> Response {
    if req.uri().path() == "/ws" {
        return shim.error("EXTENSION_DISABLED", "$path", "no API surface at /ws");
    }
    next.run(req).await
}

/// A node without workflows: every envelope carrying a `workflow.*` intent is refused.
async fn workflows(shim: Arc<Shim>, req: Request, next: Next) -> Response {
    refuse_member(shim, req, next, "workflow_id", "ENVELOPE_INVALID", "").await
}

/// Every refuse-all mutant, in list order.
pub static REFUSE_ALL: &[RefuseAll] = &[
    RefuseAll {
        variant: Variant {
            name: "refuse-all-capability-tokens",
            section: "DESIGN.md §4",
            quote: "",
            reading: "A node without capability tokens (v1.1 §12).",
            choice: "Every envelope that carries a capability_token, and every POST /v1/capabilities, is refused 403 CAPABILITY_DENIED.",
            departs: &[],
            profile: "",
            handler: handler!(capability_tokens),
        },
        areas: &["core.capability."],
        config: keep,
    },
    RefuseAll {
        variant: Variant {
            name: "refuse-all-delegation-chains",
            section: "DESIGN.md §4",
            quote: "",
            reading: "A node without delegation (v1.1 §13).",
            choice: "Every envelope that carries a delegation_chain, and every POST /v1/delegations, is refused 403 DELEGATION_INVALID.",
            departs: &[],
            profile: "",
            handler: handler!(delegation_chains),
        },
        areas: &["core.delegation."],
        config: keep,
    },
    RefuseAll {
        variant: Variant {
            name: "refuse-all-federation-deliveries",
            section: "DESIGN.md §4",
            quote: "",
            reading: "A node that takes no federated delivery (v1.1 §15.4).",
            choice: "Every POST /v1/federation/deliver is refused 401 SIGNATURE_INVALID.",
            departs: &[],
            profile: "",
            handler: handler!(federation_deliveries),
        },
        areas: &["fed.inbound."],
        config: keep,
    },
    RefuseAll {
        variant: Variant {
            name: "refuse-all-key-operations",
            section: "DESIGN.md §4",
            quote: "",
            reading: "A node that does not let identities manage their keys (v1.1 §16.3).",
            choice: "Every POST or DELETE under /v1/identity/me/keys is refused 403 CAPABILITY_DENIED.",
            departs: &[],
            profile: "",
            handler: handler!(key_operations),
        },
        areas: &["core.identity.keys."],
        config: keep,
    },
    RefuseAll {
        variant: Variant {
            name: "no-blob-routes",
            section: "DESIGN.md §4",
            quote: "",
            reading: "A node without blobs (v1.1 §16.7): its route family answers 404.",
            choice: "Every request under /v1/blobs answers 404 EXTENSION_DISABLED (no such route).",
            departs: &[],
            profile: "",
            handler: handler!(no_blob_routes),
        },
        areas: &["core.blobs."],
        config: keep,
    },
    RefuseAll {
        variant: Variant {
            name: "empty-search",
            section: "DESIGN.md §4",
            quote: "",
            reading: "A node whose search route answers but indexes nothing (v1.1 §16.6).",
            choice: "Every GET /v1/search answers 200 with no hits.",
            departs: &[],
            profile: "",
            handler: handler!(empty_search),
        },
        areas: &["core.search."],
        config: keep,
    },
    RefuseAll {
        variant: Variant {
            name: "refuse-all-thread-operations",
            section: "DESIGN.md §4",
            quote: "",
            reading: "A node without thread operations (v1.1 §11).",
            choice: "Every thread_op envelope is refused 403 CAPABILITY_DENIED.",
            departs: &[],
            profile: "",
            handler: handler!(thread_operations),
        },
        areas: &["core.ops."],
        config: keep,
    },
    RefuseAll {
        variant: Variant {
            name: "refuse-all-encrypted-content",
            section: "DESIGN.md §4",
            quote: "",
            reading: "A node without end-to-end encryption (v1.1 §7.4).",
            choice: "Every envelope carrying wrapped keys (encrypted content, encryption.epoch@v1) is refused 400 ENVELOPE_INVALID.",
            departs: &[],
            profile: "",
            handler: handler!(encrypted_content),
        },
        areas: &["full.e2ee."],
        config: keep,
    },
    RefuseAll {
        variant: Variant {
            name: "no-websocket",
            section: "DESIGN.md §4",
            quote: "",
            reading: "A node without the real-time stream (v1.1 §17): its WebSocket route answers 404.",
            choice: "Every request to /ws answers 404 EXTENSION_DISABLED (no such route).",
            departs: &[],
            profile: "",
            handler: handler!(no_websocket),
        },
        areas: &["full.ws.", "full.presence.", "full.typing."],
        config: keep,
    },
    RefuseAll {
        variant: Variant {
            name: "refuse-all-workflows",
            section: "DESIGN.md §4",
            quote: "",
            reading: "A node without workflows (v1.1 §19).",
            choice: "Every envelope naming a workflow_id (definitions and transition records) is refused 400 ENVELOPE_INVALID.",
            departs: &[],
            profile: "",
            handler: handler!(workflows),
        },
        areas: &["full.workflow."],
        config: keep,
    },
    RefuseAll {
        variant: Variant {
            name: "refuse-all-mail",
            section: "DESIGN.md §4",
            quote: "",
            reading: "A node whose email bridge takes no mail (v1.1 §21.2).",
            choice: "Every message is refused at DATA (552: the bridge's size limit is one byte); the HTTP side is unchanged.",
            departs: &[],
            profile: "",
            handler: handler!(pass_through),
        },
        areas: &["bridge."],
        config: refuse_all_mail,
    },
];
