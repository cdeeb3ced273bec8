//! The §10.7 per-thread envelope limit, reached through the limit the target advertises.

use super::thread_kit::{reply, senders_for};
use crate::case::{Case, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ident, skip};
use serde_json::Value;

async fn envelopes_per_thread_limit(cx: &mut Ctx) -> Verdict {
    let limit = cx
        .target
        .capability("/limits/max_envelopes_per_thread")
        .and_then(Value::as_u64);
    let Some(limit) = limit.filter(|l| (2..=1000).contains(l)) else {
        return skip(format!(
            "limits.max_envelopes_per_thread = {} in /v1/protocol/capabilities: not a limit the harness can reach quickly (2–1000)",
            limit.map_or("absent".into(), |l| l.to_string())
        ));
    };
    let all = senders_for(
        cx,
        limit + 1,
        &format!("max_envelopes_per_thread = {limit}"),
    )
    .await?;
    let alice = &all[0];
    let to: Vec<&Ident> = all[1..].iter().collect();
    let (t, root) = cx.start_thread(alice, &to).await?;
    let root_id = root["id"].as_str().map(str::to_owned);
    // The root is envelope 1; fill the thread up to the limit, all accepted.
    let mut control = None;
    for n in 1..limit {
        let who = &all[usize::try_from(n).unwrap_or(0) % all.len()];
        let (i, _) = reply(cx, who, &t, root_id.as_deref(), &[alice], "filling").await?;
        cx.net
            .expect_created(i)
            .map_err(crate::finding::setup_step("filling up to the limit"))?;
        control = Some(i);
    }
    let last = &all[usize::try_from(limit).unwrap_or(0) % all.len()];
    let (i, _) = reply(cx, last, &t, root_id.as_deref(), &[alice], "one too many").await?;
    match control {
        // The control: the last reply within the limit.
        Some(c) => cx.net.expect_refused_beside(
            i,
            c,
            "the previous reply, within the limit",
            &["ENVELOPE_INVALID"],
            "",
        ),
        None => cx.net.expect_code(i, "ENVELOPE_INVALID"),
    }
}

/// Limit cases.
pub const CASES: &[Case] = &[Case {
    id: "core.dag.limit.envelopes-per-thread",
    level: 1,
    strength: Strength::Must,
    spec: &["v1.1 §10.7"],
    requirement: "When a thread holds limits.max_envelopes_per_thread envelopes, nodes MUST reject new envelopes in it with ENVELOPE_INVALID.",
    covers: &["R-10.7-03", "R-10.7-02"],
    needs: &[Need::Provisioning],
    how: "Read limits.max_envelopes_per_thread (skip above 1000) and the per-identity envelope rate limit; fill one thread to the limit from enough participants (all 201); one more is 400 ENVELOPE_INVALID.",
    interpretation: None,
    mutant: Mutant::Quirk("ignore-thread-limits"),
    run: |cx| Box::pin(envelopes_per_thread_limit(cx)),
}];
