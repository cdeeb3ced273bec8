//! Discovery (v1.1 §15.2): the well-known node document.

use crate::case::Verdict;
use crate::case::{Case, Finding, Mutant, Strength};
use crate::ctx::{Ctx, Ex, Ident, TestData, skip};
use serde_json::Value;

async fn node_document_members(cx: &mut Ctx) -> Verdict {
    let i = cx
        .net
        .call("GET", "/.well-known/loom.json", None, None)
        .await?;
    let doc = cx.net.ok_body(i)?;
    for m in [
        "node_id",
        "domain",
        "api_url",
        "websocket_url",
        "signing_keys",
        "supported_versions",
        "supported_profiles",
    ] {
        cx.net.expect_that(
            !doc[m].is_null(),
            format!("the node document has {m} (v1.1 §15.2)"),
            format!("{m} is missing"),
        )?;
    }
    cx.net.expect_that(
        doc["federation"]["deliver_url"].is_string(),
        "federation.deliver_url",
        "missing",
    )?;
    cx.net.expect_that(
        doc["federation"]["policy"]
            .as_str()
            .is_some_and(|p| ["open", "quarantine", "allowlist"].contains(&p)),
        "federation.policy open|quarantine|allowlist",
        format!("{}", doc["federation"]["policy"]),
    )
}

/// The node document, fetched by this case (200 and a JSON object).
async fn document(cx: &mut Ctx) -> Result<Value, Finding> {
    let i = cx
        .net
        .call("GET", "/.well-known/loom.json", None, None)
        .await?;
    let doc = cx.net.ok_body(i)?;
    cx.net.expect_that(
        doc.is_object(),
        "the node document is a JSON object (v1.1 §15.2)",
        crate::show::preview(&cx.net.transcript(i).response_body),
    )?;
    Ok(doc)
}

/// `v` is an absolute URL with one of `schemes` (only the secure one on a TLS target).
fn absolute_url(cx: &Ctx, v: &Value, schemes: (&str, &str)) -> bool {
    let Some(u) = v.as_str() else { return false };
    let rest = if cx.target.is_tls() {
        u.strip_prefix(schemes.1)
    } else {
        u.strip_prefix(schemes.0).or(u.strip_prefix(schemes.1))
    };
    rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/'))
}

fn url_expectation(cx: &Ctx, member: &str, schemes: (&str, &str)) -> String {
    if cx.target.is_tls() {
        format!(
            "{member} is an absolute {}… URL (v1.1 §15.2, §14.1)",
            schemes.1
        )
    } else {
        format!("{member} is an absolute URL (v1.1 §15.2)")
    }
}

async fn node_id(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    cx.net.expect_that(
        doc["node_id"].as_str().is_some_and(|s| !s.is_empty()),
        "node_id is a non-empty string (v1.1 §15.2)",
        format!("node_id = {}", doc["node_id"]),
    )
}

async fn domain(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    cx.net.expect_that(
        doc["domain"]
            .as_str()
            .is_some_and(|d| !d.is_empty() && d == d.to_ascii_lowercase()),
        "domain is a non-empty lowercase domain name (v1.1 §15.2, §6.1)",
        format!("domain = {}", doc["domain"]),
    )?;
    cx.net.expect_that(
        doc["node_id"].is_string() && doc["api_url"].is_string(),
        "the node document names node_id and api_url next to domain (v1.1 §15.2)",
        format!("node_id = {}, api_url = {}", doc["node_id"], doc["api_url"]),
    )
}

async fn api_url(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    let s = ("http://", "https://");
    cx.net.expect_that(
        absolute_url(cx, &doc["api_url"], s),
        url_expectation(cx, "api_url", s),
        format!("api_url = {}", doc["api_url"]),
    )
}

async fn websocket_url(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    let s = ("ws://", "wss://");
    cx.net.expect_that(
        absolute_url(cx, &doc["websocket_url"], s),
        url_expectation(cx, "websocket_url", s),
        format!("websocket_url = {}", doc["websocket_url"]),
    )
}

async fn deliver_url(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    let s = ("http://", "https://");
    cx.net.expect_that(
        absolute_url(cx, &doc["federation"]["deliver_url"], s),
        url_expectation(cx, "federation.deliver_url", s),
        format!("federation = {}", doc["federation"]),
    )
}

async fn federation_requirements(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    cx.net.expect_that(
        doc["federation"]["requirements"]
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_string)),
        "federation.requirements is an array of strings (v1.1 §15.2)",
        format!("federation = {}", doc["federation"]),
    )
}

async fn federation_policy(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    cx.net.expect_that(
        doc["federation"]["policy"]
            .as_str()
            .is_some_and(|p| ["open", "quarantine", "allowlist"].contains(&p)),
        "federation.policy is open, quarantine or allowlist (v1.1 §15.2)",
        format!("federation = {}", doc["federation"]),
    )
}

async fn signing_keys(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    let keys = doc["signing_keys"].as_array().cloned().unwrap_or_default();
    cx.net.expect_that(
        !keys.is_empty(),
        "signing_keys is a non-empty array (v1.1 §15.2)",
        format!("signing_keys = {}", doc["signing_keys"]),
    )?;
    for k in &keys {
        cx.net.expect_that(
            k["key_id"]
                .as_str()
                .and_then(|id| id.strip_prefix("k_node_sign_"))
                .is_some_and(|rest| !rest.is_empty()),
            "every node key_id starts with k_node_sign_ (v1.1 §8.4, §15.2)",
            format!("key = {k}"),
        )?;
        let valid = k["public_key"]
            .as_str()
            .and_then(|p| loom_protocol::keys::b64url_decode(p).ok())
            .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
            .is_some_and(|b| ed25519_dalek::VerifyingKey::from_bytes(&b).is_ok());
        cx.net.expect_that(
            valid,
            "every node public_key is a base64url Ed25519 public key (32 bytes, a valid point)",
            format!("key = {k}"),
        )?;
    }
    Ok(())
}

async fn supported_versions(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    cx.net.expect_that(
        doc["supported_versions"]
            .as_array()
            .is_some_and(|a| a.iter().any(|v| v == "1.1")),
        "supported_versions is an array containing \"1.1\" (v1.1 §15.2)",
        format!("supported_versions = {}", doc["supported_versions"]),
    )
}

async fn supported_profiles(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    cx.net.expect_that(
        doc["supported_profiles"].as_array().is_some_and(|a| {
            !a.is_empty() && a.iter().all(|v| v.as_str().is_some_and(|s| !s.is_empty()))
        }),
        "supported_profiles is a non-empty array of profile names (v1.1 §15.2)",
        format!("supported_profiles = {}", doc["supported_profiles"]),
    )
}

async fn content_type(cx: &mut Ctx) -> Verdict {
    let i = cx
        .net
        .call("GET", "/.well-known/loom.json", None, None)
        .await?;
    cx.net.expect_ok(i)?;
    let ct = cx
        .net
        .transcript(i)
        .header("content-type")
        .unwrap_or("")
        .to_owned();
    cx.net.expect_that(
        is_json_utf8(&ct),
        "Content-Type: application/json; charset=utf-8 (v1.1 §14.1)",
        format!("Content-Type: {ct:?}"),
    )
}

/// `application/json; charset=utf-8`, compared as a media type (case and spaces aside).
pub(super) fn is_json_utf8(ct: &str) -> bool {
    let mut parts = ct
        .split(';')
        .map(|p| p.replace(' ', "").to_ascii_lowercase());
    parts.next().as_deref() == Some("application/json")
        && parts.any(|p| p == "charset=utf-8" || p == "charset=\"utf-8\"")
}

const NODE_DOC: &[&str] = &["v1.1 §15.2", "v1.0 §14.2"];

/// Discovery cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.discovery.node-document.members",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §15.2", "v1.0 §14.2"],
        requirement: "Every node MUST serve /.well-known/loom.json with node_id, domain, api_url, websocket_url, federation deliver_url and policy, signing keys, supported versions and profiles.",
        covers: &["R-15.2-01"],
        needs: &[],
        how: "GET /.well-known/loom.json; every member §15.2 lists must be present.",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-node-document"),
        run: |cx| Box::pin(node_document_members(cx)),
    },
    Case {
        id: "core.discovery.node-document.node-id",
        level: 1,
        strength: Strength::Must,
        spec: NODE_DOC,
        requirement: "The node document MUST include node_id.",
        covers: &["R-15.2-02"],
        needs: &[],
        how: "GET /.well-known/loom.json; node_id must be a non-empty string.",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-node-document"),
        run: |cx| Box::pin(node_id(cx)),
    },
    Case {
        id: "core.discovery.node-document.domain",
        level: 1,
        strength: Strength::Must,
        spec: NODE_DOC,
        requirement: "The node document MUST include the node's domain.",
        covers: &["R-15.2-03", "R-15.2-01"],
        needs: &[],
        how: "GET /.well-known/loom.json; domain must be a non-empty lowercase name, next to node_id and api_url.",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-node-document"),
        run: |cx| Box::pin(domain(cx)),
    },
    Case {
        id: "core.discovery.node-document.api-url",
        level: 1,
        strength: Strength::Must,
        spec: NODE_DOC,
        requirement: "The node document MUST include api_url.",
        covers: &["R-15.2-04"],
        needs: &[],
        how: "GET /.well-known/loom.json; api_url must be an absolute URL (https on a TLS target).",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-node-document"),
        run: |cx| Box::pin(api_url(cx)),
    },
    Case {
        id: "core.discovery.node-document.websocket-url",
        level: 1,
        strength: Strength::Must,
        spec: NODE_DOC,
        requirement: "The node document MUST include websocket_url.",
        covers: &["R-15.2-05"],
        needs: &[],
        how: "GET /.well-known/loom.json; websocket_url must be an absolute ws(s) URL (wss on a TLS target).",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-node-document"),
        run: |cx| Box::pin(websocket_url(cx)),
    },
    Case {
        id: "core.discovery.node-document.federation-deliver-url",
        level: 1,
        strength: Strength::Must,
        spec: NODE_DOC,
        requirement: "The node document MUST include the federation deliver_url.",
        covers: &["R-15.2-06"],
        needs: &[],
        how: "GET /.well-known/loom.json; federation.deliver_url must be an absolute URL (https on a TLS target).",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-node-document"),
        run: |cx| Box::pin(deliver_url(cx)),
    },
    Case {
        id: "core.discovery.node-document.federation-requirements",
        level: 1,
        strength: Strength::Must,
        spec: NODE_DOC,
        requirement: "The node document MUST include the federation requirements.",
        covers: &["R-15.2-07"],
        needs: &[],
        how: "GET /.well-known/loom.json; federation.requirements must be an array of strings.",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-node-document"),
        run: |cx| Box::pin(federation_requirements(cx)),
    },
    Case {
        id: "core.discovery.node-document.federation-policy",
        level: 1,
        strength: Strength::Must,
        spec: NODE_DOC,
        requirement: "The node document MUST include the federation policy mode (open/quarantine/allowlist).",
        covers: &["R-15.2-11"],
        needs: &[],
        how: "GET /.well-known/loom.json; federation.policy must be open, quarantine or allowlist.",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-node-document"),
        run: |cx| Box::pin(federation_policy(cx)),
    },
    Case {
        id: "core.discovery.node-document.signing-keys",
        level: 1,
        strength: Strength::Must,
        spec: NODE_DOC,
        requirement: "The node document MUST include the node signing keys.",
        covers: &["R-15.2-08", "R-8.4-10"],
        needs: &[],
        how: "GET /.well-known/loom.json; signing_keys must be non-empty, each key_id k_node_sign_… and each public_key a valid base64url Ed25519 key.",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-node-document"),
        run: |cx| Box::pin(signing_keys(cx)),
    },
    Case {
        id: "core.discovery.node-document.supported-versions",
        level: 1,
        strength: Strength::Must,
        spec: NODE_DOC,
        requirement: "The node document MUST include the supported versions (a v1.1 node lists 1.1).",
        covers: &["R-15.2-09"],
        needs: &[],
        how: "GET /.well-known/loom.json; supported_versions must be an array containing \"1.1\".",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-node-document"),
        run: |cx| Box::pin(supported_versions(cx)),
    },
    Case {
        id: "core.discovery.node-document.supported-profiles",
        level: 1,
        strength: Strength::Must,
        spec: NODE_DOC,
        requirement: "The node document MUST include the supported profiles.",
        covers: &["R-15.2-10"],
        needs: &[],
        how: "GET /.well-known/loom.json; supported_profiles must be a non-empty array of strings.",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-node-document"),
        run: |cx| Box::pin(supported_profiles(cx)),
    },
    Case {
        id: "core.discovery.node-document.content-type",
        level: 1,
        strength: Strength::Must,
        spec: NODE_DOC,
        requirement: "The node document MUST be served as application/json; charset=utf-8.",
        covers: &["R-14.1-04"],
        needs: &[],
        how: "GET /.well-known/loom.json; the Content-Type must be application/json with charset=utf-8.",
        interpretation: None,
        mutant: Mutant::Quirk("no-json-charset"),
        run: |cx| Box::pin(content_type(cx)),
    },
];
