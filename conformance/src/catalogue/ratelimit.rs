//! Rate limits (v1.1 §14.3): a node answers 429 `RATE_LIMIT_EXCEEDED` past its limit and
//! reports the limit in `X-LOOM-RateLimit-*` headers.

use crate::case::{Case, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, skip};

/// Most envelopes the harness sends to reach a limit (2 × limit + 1 must stay below it).
const MAX_PROBE: u64 = 2_000;

async fn envelopes_limited(cx: &mut Ctx) -> Verdict {
    let limit = cx
        .target
        .capability("/rate_limits/envelopes_per_identity_per_min")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    if limit == 0 {
        return skip(
            "the target advertises no rate_limits.envelopes_per_identity_per_min in /v1/protocol/capabilities",
        );
    }
    if 2 * limit + 1 > MAX_PROBE {
        return skip(format!(
            "the advertised limit {limit}/min is too high to reach in one case (at most {MAX_PROBE} envelopes)"
        ));
    }
    let alice = cx.identity("alice", "human").await?;
    // Fixed windows may reset once while we send: 2 × limit + 1 envelopes put at least
    // limit + 1 into one window.
    let mut last = None;
    for n in 0..(2 * limit + 1) {
        let t = cx.data.thread_id();
        let env = cx
            .data
            .signed_message(&alice, &t, None, &[&alice], "rate probe");
        let i = cx.net.send(&alice, &env).await?;
        let status = cx.net.transcript(i).status;
        if status == 429 {
            // The control: the same kind of envelope, accepted before the window filled.
            return match last {
                Some((_, c)) => cx.net.expect_refused_beside(
                    i,
                    c,
                    "an envelope sent before the window filled",
                    &["RATE_LIMIT_EXCEEDED"],
                    "",
                ),
                None => cx.net.expect_code(i, "RATE_LIMIT_EXCEEDED"),
            };
        }
        if !cx.net.transcript(i).is_success() {
            // Another refusal than 429 during the flood: the window was never reached.
            return cx
                .net
                .expect_created(i)
                .map_err(crate::finding::setup_step("an envelope inside the window"));
        }
        last = Some((n + 1, i));
    }
    let sent = last.map_or(0, |(n, _)| n);
    cx.net.expect_that(
        false,
        format!(
            "HTTP 429 RATE_LIMIT_EXCEEDED after more than {limit} envelopes in a minute (the advertised limit, v1.1 §14.3)"
        ),
        format!("all {sent} envelopes were accepted with 201"),
    )
}

async fn headers_present(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let t = cx.data.thread_id();
    let env = cx
        .data
        .signed_message(&alice, &t, None, &[&alice], "headers");
    let i = cx.net.send(&alice, &env).await?;
    cx.net.expect_created(i)?;
    let missing: Vec<&str> = [
        "x-loom-ratelimit-limit",
        "x-loom-ratelimit-remaining",
        "x-loom-ratelimit-reset",
    ]
    .into_iter()
    .filter(|h| cx.net.transcript(i).header(h).is_none())
    .collect();
    cx.net.expect_that(
        missing.is_empty(),
        "X-LOOM-RateLimit-Limit, -Remaining and -Reset on a rate-limited POST /v1/envelopes (v1.1 §14.3)",
        format!("missing {}", missing.join(", ")),
    )
}

/// Rate-limit cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.ratelimit.envelopes.exceeded",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.3", "v1.1 §24.2", "v1.0 §13.3"],
        requirement: "A node MUST rate-limit POST /v1/envelopes and answer 429 RATE_LIMIT_EXCEEDED past the limit.",
        covers: &["R-14.3-01", "R-24.2-16"],
        needs: &[Need::Provisioning, Need::RateLimit],
        how: "Read rate_limits.envelopes_per_identity_per_min from /v1/protocol/capabilities (skip when absent or 0); a fresh identity posts up to 2×limit+1 envelopes; one must be 429 RATE_LIMIT_EXCEEDED with a §24.1 body.",
        interpretation: None,
        mutant: Mutant::Quirk("disable-rate-limit"),
        run: |cx| Box::pin(envelopes_limited(cx)),
    },
    Case {
        id: "core.ratelimit.headers.present",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §14.3"],
        requirement: "A node SHOULD return X-LOOM-RateLimit-Limit, -Remaining and -Reset.",
        covers: &["R-14.3-07", "R-14.3-08", "R-14.3-09"],
        needs: &[Need::Provisioning, Need::RateLimit],
        how: "POST one envelope; the 201 response must carry the three X-LOOM-RateLimit-* headers.",
        interpretation: None,
        mutant: Mutant::NotApplicable("SHOULD: the headers are not a MUST"),
        run: |cx| Box::pin(headers_present(cx)),
    },
];
