//! The federation handshake (v1.1 §15.7, Recommended): `GET /v1/federation/hello`. The
//! spec gives no wire form, so the case asserts only what the sentence says: the route
//! answers with a JSON document that carries a signature (a `signature` member of any shape,
//! or LOOM-HTTP-SIG-1 response headers); member names of the capabilities and policies and
//! the signing construction are left open.

use crate::case::{Case, Mutant, Need, Strength, Verdict};
use crate::ctx::Ctx;

async fn hello(cx: &mut Ctx) -> Verdict {
    let ex = cx
        .net
        .exchange("GET", "/v1/federation/hello", &[], None, None)
        .await?;
    let body = cx.net.ok_body(ex)?;
    let t = cx.net.transcript(ex);
    let signed_member = body
        .get("signature")
        .is_some_and(|s| s.is_object() || s.as_str().is_some_and(|s| !s.is_empty()));
    let signed_header = t
        .response_headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("x-loom-signature") && !v.is_empty());
    cx.net.expect_at(
        ex,
        body.is_object() && (signed_member || signed_header),
        "a JSON document of the node's capabilities and policies carrying a signature (v1.1 §15.7 \"returning signed capabilities and policies\")",
        format!(
            "{} without a signature member or X-LOOM-Signature header",
            if body.is_object() { "an object" } else { "not a JSON object" }
        ),
    )
}

/// The handshake case.
pub const CASES: &[Case] = &[Case {
    id: "fed.hello.signed",
    level: 2,
    strength: Strength::Should,
    spec: &["v1.1 §15.7"],
    requirement: "A node SHOULD expose GET /v1/federation/hello returning its capabilities and policies, signed.",
    covers: &["R-15.7-01", "R-15.7-02"],
    needs: &[] as &[Need],
    how: "GET /v1/federation/hello without credentials; expect 2xx with a JSON object that carries a signature (a signature member or X-LOOM-Signature header)",
    interpretation: Some(
        "v1.1 §15.7 names the route and says the answer is signed but gives no wire form; the case accepts any signature member or signed response headers and does not verify the construction.",
    ),
    mutant: Mutant::NotApplicable("SHOULD (v1.1 §15.7 is Recommended)"),
    run: |cx| Box::pin(hello(cx)),
}];
