//! Discovery (v1.1 §15.2): the well-known node document.
//!
//! §15.2 lists what the document must include, not where every item lives: `node_id`,
//! `domain`, `api_url`, `websocket_url` and `deliver_url` are spelled as member names and are
//! looked up by those names (`deliver_url` top-level or in a `federation` object); the
//! federation requirements and policy, the node signing keys and the supported versions and
//! profiles are described, so the harness accepts the names and places implementations use
//! ([`find`]). A document that has an item under a name the harness does not know fails with
//! the names it looked for, so the implementer can tell which it is.

use crate::case::{Case, Finding, Mutant, Strength, Verdict};
use crate::ctx::Ctx;
use serde_json::Value;

/// Where the harness looks for each described item, in order (JSON pointers).
const DELIVER_URL: &[&str] = &["/federation/deliver_url", "/deliver_url"];
const REQUIREMENTS: &[&str] = &[
    "/federation/requirements",
    "/federation_requirements",
    "/requirements",
];
const POLICY: &[&str] = &[
    "/federation/policy",
    "/federation/policy_mode",
    "/federation/mode",
    "/federation_policy",
    "/policy",
];
const SIGNING_KEYS: &[&str] = &[
    "/signing_keys",
    "/federation/signing_keys",
    "/node_signing_keys",
    "/keys/signing",
    "/keys",
];
const VERSIONS: &[&str] = &[
    "/supported_versions",
    "/versions",
    "/protocol_versions",
    "/loom_versions",
    "/loom_version",
];
const PROFILES: &[&str] = &["/supported_profiles", "/profiles", "/protocol_profiles"];

/// The first of `places` present in `doc` (not null): (place, value).
pub(super) fn find<'d>(
    doc: &'d Value,
    places: &[&'static str],
) -> Option<(&'static str, &'d Value)> {
    places
        .iter()
        .find_map(|p| doc.pointer(p).filter(|v| !v.is_null()).map(|v| (*p, v)))
}

fn places(places: &[&str]) -> String {
    places
        .iter()
        .map(|p| p.trim_start_matches('/').replace('/', "."))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A string or a list of strings as a list.
fn strings(v: &Value) -> Vec<&str> {
    match v {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

async fn node_document_members(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    for m in ["node_id", "domain", "api_url", "websocket_url"] {
        cx.net.expect_that(
            !doc[m].is_null(),
            format!("the node document has {m} (v1.1 §15.2)"),
            format!("{m} is missing"),
        )?;
    }
    let described: [(&str, &[&'static str]); 6] = [
        ("federation deliver_url", DELIVER_URL),
        ("federation requirements", REQUIREMENTS),
        ("federation policy mode", POLICY),
        ("node signing keys", SIGNING_KEYS),
        ("supported versions", VERSIONS),
        ("supported profiles", PROFILES),
    ];
    for (what, at) in described {
        cx.net.expect_that(
            find(&doc, at).is_some(),
            format!(
                "the node document has the {what} (v1.1 §15.2), as one of: {}",
                places(at)
            ),
            format!("none of {} is present", places(at)),
        )?;
    }
    Ok(())
}

/// The node document, fetched by this case (200 and a JSON object).
pub(super) async fn document(cx: &mut Ctx) -> Result<Value, Finding> {
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
    // §15.2 lists them as one item: "node_id, domain".
    cx.net.expect_that(
        doc["node_id"].as_str().is_some_and(|s| !s.is_empty()),
        "node_id next to domain (v1.1 §15.2: \"node_id, domain\")",
        format!("node_id = {}", doc["node_id"]),
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
    let found = find(&doc, DELIVER_URL);
    cx.net.expect_that(
        found.is_some_and(|(_, v)| absolute_url(cx, v, s)),
        url_expectation(cx, &format!("deliver_url ({})", places(DELIVER_URL)), s),
        match found {
            Some((at, v)) => format!("{} = {v}", places(&[at])),
            None => format!("none of {} is present", places(DELIVER_URL)),
        },
    )
}

async fn federation_requirements(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    let found = find(&doc, REQUIREMENTS);
    cx.net.expect_that(
        found.is_some_and(|(_, v)| v.as_array().is_some_and(|a| a.iter().all(Value::is_string))),
        format!(
            "the federation requirements as an array of strings (v1.1 §15.2), as one of: {}",
            places(REQUIREMENTS)
        ),
        match found {
            Some((at, v)) => format!("{} = {v}", places(&[at])),
            None => format!("none of {} is present", places(REQUIREMENTS)),
        },
    )
}

async fn federation_policy(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    let found = find(&doc, POLICY);
    cx.net.expect_that(
        found.is_some_and(|(_, v)| {
            v.as_str()
                .is_some_and(|p| ["open", "quarantine", "allowlist"].contains(&p))
        }),
        format!(
            "the federation policy mode open, quarantine or allowlist (v1.1 §15.2), as one of: {}",
            places(POLICY)
        ),
        match found {
            Some((at, v)) => format!("{} = {v}", places(&[at])),
            None => format!("none of {} is present", places(POLICY)),
        },
    )
}

const B64URL: &str = "public_key";
const PEM: &str = "public_key_pem";

/// The encodings a node key entry carries its public key in. §15.2 asks for "node signing
/// keys" and names no encoding: base64url of the raw 32 bytes (as §7.3 stores signatures) and
/// SPKI PEM (as DESIGN.md §9's registration sends identity keys) are both read. A member that
/// is present but not a valid Ed25519 key is an error, named.
fn key_encodings(k: &Value) -> Result<Vec<&'static str>, String> {
    use loom_protocol::keys::{public_key_from_b64url, public_key_from_spki_pem};
    let mut found = Vec::new();
    if let Some(v) = k.get(B64URL) {
        let s = v.as_str().ok_or("public_key is not a string")?;
        public_key_from_b64url(s).map_err(|e| format!("public_key: {}", e.reason))?;
        found.push(B64URL);
    }
    if let Some(v) = k.get(PEM) {
        let s = v.as_str().ok_or("public_key_pem is not a string")?;
        public_key_from_spki_pem(s).map_err(|e| format!("public_key_pem: {}", e.reason))?;
        found.push(PEM);
    }
    Ok(found)
}

async fn signing_keys(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    let found = find(&doc, SIGNING_KEYS);
    let keys = found
        .and_then(|(_, v)| v.as_array().cloned())
        .unwrap_or_default();
    cx.net.expect_that(
        !keys.is_empty(),
        format!(
            "the node signing keys as a non-empty array (v1.1 §15.2), as one of: {}",
            places(SIGNING_KEYS)
        ),
        match found {
            Some((at, v)) => format!("{} = {}", places(&[at]), crate::show::compact(v)),
            None => format!("none of {} is present", places(SIGNING_KEYS)),
        },
    )?;
    let mut seen = std::collections::BTreeSet::new();
    for k in &keys {
        cx.net.expect_that(
            k["key_id"]
                .as_str()
                .and_then(|id| id.strip_prefix("k_node_sign_"))
                .is_some_and(|rest| !rest.is_empty()),
            "every node key_id starts with k_node_sign_ (v1.1 §8.4, §15.2)",
            format!("key = {k}"),
        )?;
        let enc = key_encodings(k);
        cx.net.expect_that(
            enc.as_ref().is_ok_and(|e| !e.is_empty()),
            "every node key as an Ed25519 public key: public_key (base64url of the 32 bytes) or public_key_pem (SPKI PEM), a valid point (v1.1 §7.1, §15.2; the encoding is a reading the harness detects)",
            match &enc {
                Err(why) => format!("{why}; key = {k}"),
                Ok(_) => format!("neither public_key nor public_key_pem; key = {k}"),
            },
        )?;
        seen.extend(enc.unwrap_or_default());
    }
    let which = match (seen.contains(&B64URL), seen.contains(&PEM)) {
        (true, true) => "base64url public_key and SPKI PEM public_key_pem",
        (false, true) => "SPKI PEM (public_key_pem) only",
        _ => "base64url (public_key) only",
    };
    cx.target
        .readings
        .record(crate::readings::KEY_ENCODING_READING, which.to_owned());
    Ok(())
}

async fn supported_versions(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    let found = find(&doc, VERSIONS);
    cx.net.expect_that(
        found.is_some_and(|(_, v)| strings(v).contains(&"1.1")),
        format!(
            "the supported versions, including \"1.1\" (v1.1 §15.2), as one of: {}",
            places(VERSIONS)
        ),
        match found {
            Some((at, v)) => format!("{} = {v}", places(&[at])),
            None => format!("none of {} is present", places(VERSIONS)),
        },
    )
}

async fn supported_profiles(cx: &mut Ctx) -> Verdict {
    let doc = document(cx).await?;
    let found = find(&doc, PROFILES);
    cx.net.expect_that(
        found.is_some_and(|(_, v)| {
            let s = strings(v);
            !s.is_empty() && s.iter().all(|p| !p.is_empty())
        }),
        format!(
            "the supported profiles, a non-empty list of names (v1.1 §15.2), as one of: {}",
            places(PROFILES)
        ),
        match found {
            Some((at, v)) => format!("{} = {v}", places(&[at])),
            None => format!("none of {} is present", places(PROFILES)),
        },
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

/// `application/json; charset=utf-8`, compared as a media type: names and the charset value
/// case-insensitively, spaces around `;` optional (RFC 9110 §8.3.1, §8.3.2, §5.6.6).
pub(super) fn is_json_utf8(ct: &str) -> bool {
    let mut parts = ct
        .split(';')
        .map(|p| p.replace(' ', "").to_ascii_lowercase());
    parts.next().as_deref() == Some("application/json")
        && parts.any(|p| p == "charset=utf-8" || p == "charset=\"utf-8\"")
}

const NODE_DOC: &[&str] = &["v1.1 §15.2", "v1.0 §14.2"];
const NAMES: &str = "The items §15.2 describes without a member name are looked for under the names implementations use (see `how`).";

/// Discovery cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.discovery.node-document.members",
        level: 1,
        strength: Strength::Must,
        spec: NODE_DOC,
        requirement: "Every node MUST serve /.well-known/loom.json with node_id, domain, api_url, websocket_url, the federation deliver_url, requirements and policy mode, the node signing keys and the supported versions and profiles.",
        covers: &["R-15.2-01"],
        needs: &[],
        how: "GET /.well-known/loom.json; node_id, domain, api_url, websocket_url by name; deliver_url as federation.deliver_url or deliver_url; requirements as federation.requirements, federation_requirements or requirements; policy as federation.policy (or policy_mode, mode), federation_policy or policy; keys as signing_keys, federation.signing_keys, node_signing_keys, keys.signing or keys; versions as supported_versions, versions, protocol_versions, loom_versions or loom_version; profiles as supported_profiles, profiles or protocol_profiles.",
        interpretation: Some(NAMES),
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
        covers: &["R-15.2-03"],
        needs: &[],
        how: "GET /.well-known/loom.json; domain must be a non-empty lowercase name, with node_id next to it (§15.2 lists \"node_id, domain\" as one item).",
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
        how: "GET /.well-known/loom.json; deliver_url (federation.deliver_url or top-level deliver_url) must be an absolute URL (https on a TLS target).",
        interpretation: Some(
            "§15.2 names deliver_url but not whether it sits in a federation object; both are accepted.",
        ),
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
        how: "GET /.well-known/loom.json; the requirements (federation.requirements, federation_requirements or requirements) must be an array of strings.",
        interpretation: Some(NAMES),
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
        how: "GET /.well-known/loom.json; the policy (federation.policy, policy_mode or mode, federation_policy or policy) must be open, quarantine or allowlist.",
        interpretation: Some(NAMES),
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
        how: "GET /.well-known/loom.json; the keys (signing_keys, federation.signing_keys, node_signing_keys, keys.signing or keys) must be non-empty, each key_id k_node_sign_… and each key a valid Ed25519 public key as base64url public_key or SPKI PEM public_key_pem (the encoding found is reported as a reading).",
        interpretation: Some(NAMES),
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
        how: "GET /.well-known/loom.json; the versions (supported_versions, versions, protocol_versions, loom_versions or loom_version; a string or a list) must include \"1.1\".",
        interpretation: Some(NAMES),
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
        how: "GET /.well-known/loom.json; the profiles (supported_profiles, profiles or protocol_profiles) must be a non-empty list of names.",
        interpretation: Some(NAMES),
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
        how: "GET /.well-known/loom.json; the Content-Type must be application/json with charset utf-8 (compared case-insensitively).",
        interpretation: None,
        mutant: Mutant::Quirk("no-json-charset"),
        run: |cx| Box::pin(content_type(cx)),
    },
];
