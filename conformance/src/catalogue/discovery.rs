//! Discovery (v1.1 §15.2): the well-known node document.

use crate::case::Verdict;
use crate::case::{Case, Mutant, Strength};
use crate::ctx::Ctx;

async fn node_document_members(cx: &mut Ctx) -> Verdict {
    let i = cx.call("GET", "/.well-known/loom.json", None, None).await?;
    let doc = cx.body_of(i, 200)?;
    for m in [
        "node_id",
        "domain",
        "api_url",
        "websocket_url",
        "signing_keys",
        "supported_versions",
        "supported_profiles",
    ] {
        cx.expect_that(
            !doc[m].is_null(),
            format!("the node document has {m} (v1.1 §15.2)"),
            format!("{m} is missing"),
        )?;
    }
    cx.expect_that(
        doc["federation"]["deliver_url"].is_string(),
        "federation.deliver_url",
        "missing",
    )?;
    cx.expect_that(
        doc["federation"]["policy"]
            .as_str()
            .is_some_and(|p| ["open", "quarantine", "allowlist"].contains(&p)),
        "federation.policy open|quarantine|allowlist",
        format!("{}", doc["federation"]["policy"]),
    )
}

/// Discovery cases.
pub const CASES: &[Case] = &[Case {
    id: "core.discovery.node-document.members",
    level: 1,
    strength: Strength::Must,
    spec: &["v1.1 §15.2", "v1.0 §14.2"],
    requirement: "Every node MUST serve /.well-known/loom.json with node_id, domain, api_url, websocket_url, federation deliver_url and policy, signing keys, supported versions and profiles.",
    covers: &["R-15.2-01"],
    needs: &[],
    how: "GET /.well-known/loom.json; every member §15.2 lists must be present.",
    mutant: Mutant::Quirk("incomplete-node-document"),
    run: |cx| Box::pin(node_document_members(cx)),
}];
