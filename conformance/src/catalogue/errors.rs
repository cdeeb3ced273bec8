//! Errors (v1.1 §24.1 body, §24.2 registry): every member of the error object, and the HTTP
//! status of each code as the registry fixes it.

use super::identity::{fresh, resolve_path};
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::Ctx;
use loom_protocol::{ErrorCode, Timestamp};
use serde_json::{Value, json};

async fn body_members(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let nobody = fresh(cx, "nobody")?;
    let i = cx
        .net
        .get(&resolve_path(nobody.address()), &alice.token)
        .await?;
    let body = cx.net.json(i);
    let e = &body["error"];
    let checks: [(bool, &str); 7] = [
        (e.is_object(), "a top-level `error` object (R-24.1-01)"),
        (
            e["code"].as_str().and_then(ErrorCode::parse).is_some(),
            "error.code from the §24.2 registry (R-24.1-02)",
        ),
        (
            e["message"].as_str().is_some_and(|m| !m.is_empty()),
            "a non-empty human-readable error.message (R-24.1-03)",
        ),
        (
            e["details"].is_object(),
            "an error.details object (R-24.1-04)",
        ),
        (
            e["request_id"].as_str().is_some_and(|r| !r.is_empty()),
            "a non-empty error.request_id (R-24.1-05; the req_ prefix is the example's)",
        ),
        (e["timestamp"].is_string(), "error.timestamp (R-24.1-06)"),
        (
            e["timestamp"]
                .as_str()
                .is_some_and(|t| Timestamp::parse(t).is_ok()),
            "error.timestamp as an RFC 3339 / ISO 8601 timestamp (R-24.1-06)",
        ),
    ];
    for (ok, what) in checks {
        if !ok {
            return Err(Finding::Fail {
                expected: format!("a §24.1 error body with {what}"),
                actual: format!(
                    "HTTP {}: {}",
                    cx.net.transcript(i).status,
                    crate::show::preview(&cx.net.transcript(i).response_body)
                ),
                decisive: Some(i),
            });
        }
    }
    Ok(())
}

async fn details_field_reason(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let nobody = fresh(cx, "nobody")?;
    let i = cx
        .net
        .get(&resolve_path(nobody.address()), &alice.token)
        .await?;
    let d = cx
        .net
        .json(i)
        .pointer("/error/details")
        .cloned()
        .unwrap_or(Value::Null);
    cx.net.expect_at(
        i,
        d["field"].is_string() && d["reason"].is_string(),
        "error.details with field and reason strings, as the §24.1 example shows",
        format!("details = {}", crate::show::compact(&d)),
    )
}

async fn registry_status(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let nobody = fresh(cx, "nobody")?;
    let mut provoked = Vec::new();
    provoked.push(
        cx.net
            .get(&resolve_path(nobody.address()), &alice.token)
            .await?,
    );
    provoked.push(cx.net.call("GET", "/v1/threads", None, None).await?);
    provoked.push(
        cx.net
            .exchange(
                "POST",
                "/v1/envelopes",
                &[],
                Some(b"{\"loom\":".to_vec()),
                Some(&alice.token),
            )
            .await?,
    );
    let ch = cx
        .net
        .call(
            "POST",
            "/v1/auth/challenge",
            None,
            Some(&json!({"identity": alice.address(), "key_id": alice.id.key_id()})),
        )
        .await?;
    let ch = cx.net.ok_body(ch).map_err(crate::finding::setup_step(
        "the login challenge (DESIGN.md §9)",
    ))?;
    provoked.push(
        cx.net
            .call(
                "POST",
                "/v1/auth/token",
                None,
                Some(&json!({
                    "identity": alice.address(),
                    "key_id": alice.id.key_id(),
                    "challenge_id": super::identity::challenge_id(&ch),
                    "challenge": super::identity::challenge_id(&ch),
                    "signature": "AAAA",
                })),
            )
            .await?,
    );
    for i in provoked {
        let body: Value = cx.net.json(i);
        let code = body
            .pointer("/error/code")
            .and_then(Value::as_str)
            .and_then(ErrorCode::parse);
        let status = cx.net.transcript(i).status;
        let ok = code.is_some_and(|c| c.http_status() == status);
        if !ok {
            return Err(Finding::Fail {
                expected:
                    "an error code from the §24.2 registry sent with the registry's HTTP status"
                        .into(),
                actual: format!(
                    "HTTP {status} with code {}",
                    body.pointer("/error/code").unwrap_or(&Value::Null)
                ),
                decisive: Some(i),
            });
        }
    }
    Ok(())
}

/// Error cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.errors.body.members",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §24.1", "v1.0 §21.1"],
        requirement: "Every API error MUST be a JSON object {error: {code, message, details, request_id, timestamp}}.",
        covers: &[
            "R-24.1-01",
            "R-24.1-02",
            "R-24.1-03",
            "R-24.1-04",
            "R-24.1-05",
            "R-24.1-06",
        ],
        needs: &[Need::Provisioning],
        how: "Provoke IDENTITY_NOT_FOUND; the body must carry error.code (registry), a non-empty message, a details object, a request_id and an RFC 3339 timestamp.",
        interpretation: None,
        mutant: Mutant::Quirk("bare-error-bodies"),
        run: |cx| Box::pin(body_members(cx)),
    },
    Case {
        id: "core.errors.details.field-reason",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §24.1"],
        requirement: "error.details should name the field and the reason, as the §24.1 example does.",
        covers: &["R-24.1-04"],
        needs: &[Need::Provisioning],
        how: "Provoke IDENTITY_NOT_FOUND; error.details must carry field and reason strings.",
        interpretation: Some(
            "§24.1 shows details {field, reason} in the example of the format; no sentence requires those members, so they are a recommendation.",
        ),
        mutant: Mutant::Quirk("bare-error-bodies"),
        run: |cx| Box::pin(details_field_reason(cx)),
    },
    Case {
        id: "core.errors.registry.status",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §24.2", "v1.0 §21.2"],
        requirement: "Each error MUST carry a §24.2 code sent with the HTTP status the registry gives that code.",
        covers: &["R-24.1-02", "R-24.2-01", "R-24.2-02", "R-24.2-08"],
        needs: &[Need::Provisioning],
        how: "Provoke an unknown identity, a missing token (GET /v1/threads), a malformed envelope body and a bad login signature; each response's status must equal the registry status of its error.code.",
        interpretation: None,
        mutant: Mutant::Quirk("bare-error-bodies"),
        run: |cx| Box::pin(registry_status(cx)),
    },
];
