//! Event catch-up (v1.1 §16.8, §17.2, §17.3): `GET /v1/events` returns the caller's events
//! with stable ids in order, resumes after `since=<event id>`, and never hands one identity
//! another's private events (§8.3 "enforce audience in delivery").

use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::shapes::{event_envelope, event_id, event_thread};
use crate::ctx::{Ctx, Ident};
use crate::show::compact;
use serde_json::Value;

/// Alice sends Bob a root and a reply; returns (alice, bob, thread, [root id, reply id]).
async fn two_envelopes(cx: &mut Ctx) -> Result<(Ident, Ident, String, [String; 2]), Finding> {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    let reply = cx
        .data
        .signed_message(&alice, &t, root["id"].as_str(), &[&bob], "second");
    let i = cx.net.send(&alice, &reply).await?;
    cx.net.expect_created(i)?;
    let ids = [
        root["id"].as_str().unwrap_or("").to_owned(),
        reply["id"].as_str().unwrap_or("").to_owned(),
    ];
    Ok((alice, bob, t, ids))
}

/// The `envelope.new` event of envelope `env` in `evs`.
fn new_event<'a>(evs: &'a [Value], env: &str) -> Option<&'a Value> {
    evs.iter()
        .find(|e| e["type"] == "envelope.new" && event_envelope(e) == Some(env))
}

/// A short account of events: how many, and the type and envelope of the first few.
fn summary(evs: &[Value]) -> String {
    let shown: Vec<Value> = evs
        .iter()
        .map(|e| serde_json::json!({"type": e["type"], "envelope": event_envelope(e)}))
        .collect();
    format!("{} events: {}", evs.len(), compact(&Value::Array(shown)))
}

async fn stable_ids(cx: &mut Ctx) -> Verdict {
    let (_, bob, _, ids) = two_envelopes(cx).await?;
    let first = cx.net.events(&bob, None).await?;
    let (Some(a), Some(b)) = (new_event(&first, &ids[0]), new_event(&first, &ids[1])) else {
        return cx.net.expect_that(
            false,
            format!(
                "envelope.new events for {} and {} (v1.1 §17.3)",
                ids[0], ids[1]
            ),
            summary(&first),
        );
    };
    let (ia, ib) = (event_id(a).unwrap_or(""), event_id(b).unwrap_or(""));
    cx.net.expect_that(
        ia.starts_with("evt_") && ib.starts_with("evt_") && ia != ib,
        "distinct evt_ ids on each event (v1.1 §8.4, §17.2)",
        format!("ids {ia:?}, {ib:?}"),
    )?;
    let pa = first.iter().position(|e| event_id(e) == Some(ia));
    let pb = first.iter().position(|e| event_id(e) == Some(ib));
    cx.net.expect_that(
        pa < pb,
        "the root's event before the reply's (events in order)",
        format!("positions {pa:?}, {pb:?}"),
    )?;
    let second = cx.net.events(&bob, None).await?;
    let again: Vec<&str> = [&ids[0], &ids[1]]
        .iter()
        .filter_map(|e| new_event(&second, e).and_then(event_id))
        .collect();
    cx.net.expect_that(
        again == [ia, ib],
        format!("the same event ids on a second read: {ia}, {ib} (stable ids, v1.1 §16.8)"),
        format!("{again:?}"),
    )
}

async fn since_resumes(cx: &mut Ctx) -> Verdict {
    let (_, bob, _, ids) = two_envelopes(cx).await?;
    let all = cx.net.events(&bob, None).await?;
    let Some(first) = new_event(&all, &ids[0])
        .and_then(event_id)
        .map(str::to_owned)
    else {
        return cx.net.expect_that(
            false,
            format!("an envelope.new event for {}", ids[0]),
            summary(&all),
        );
    };
    let after = cx.net.events(&bob, Some(&first)).await?;
    cx.net.expect_that(
        new_event(&after, &ids[0]).is_none() && new_event(&after, &ids[1]).is_some(),
        format!("since={first} returns the reply's event and not the root's (v1.1 §16.8)"),
        summary(&after),
    )
}

async fn private(cx: &mut Ctx) -> Verdict {
    let (_, bob, t, ids) = two_envelopes(cx).await?;
    let carol = cx.identity("carol", "human").await?;
    let mine = cx.net.events(&bob, None).await?;
    cx.net.expect_that(
        new_event(&mine, &ids[0]).is_some(),
        "control: the recipient sees the envelope.new event",
        summary(&mine),
    )?;
    let theirs = cx.net.events(&carol, None).await?;
    let leaked: Vec<&Value> = theirs
        .iter()
        .filter(|e| {
            event_thread(e) == Some(t.as_str())
                || ids.iter().any(|i| event_envelope(e) == Some(i.as_str()))
        })
        .collect();
    cx.net.expect_that(
        leaked.is_empty(),
        "no event of a thread the caller is not in (v1.1 §8.3 audience enforced in delivery)",
        format!(
            "{} leaked: {}",
            leaked.len(),
            leaked.first().map(|v| compact(v)).unwrap_or_default()
        ),
    )
}

const NEEDS: &[Need] = &[Need::Provisioning, Need::Events];

/// Event cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.events.catch-up.stable-ids",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.8", "v1.1 §17.2", "v1.1 §17.3"],
        requirement: "Servers MUST provide stable event IDs: catch-up returns envelope.new events with the same ids on every read, in order.",
        covers: &["R-16.8-01"],
        needs: NEEDS,
        how: "Alice sends Bob a root and a reply; Bob's GET /v1/events (twice) must hold their envelope.new events, root first, with distinct evt_ ids that are the same on both reads.",
        interpretation: None,
        mutant: Mutant::Quirk("unstable-event-ids"),
        run: |cx| Box::pin(stable_ids(cx)),
    },
    Case {
        id: "core.events.since.resumes",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.8", "v1.1 §17.1"],
        requirement: "Servers MUST let clients resume from an event id (GET /v1/events?since=evt_…).",
        covers: &["R-16.8-02"],
        needs: NEEDS,
        how: "Bob reads his events, then reads again with since=<the root's event id>: the reply's event must be there and the root's not.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-events-since"),
        run: |cx| Box::pin(since_resumes(cx)),
    },
    Case {
        id: "core.events.audience.private",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §8.3", "v1.1 §16.8"],
        requirement: "A node MUST enforce audience in delivery: catch-up never returns another identity's private events.",
        covers: &["R-8.3-07"],
        needs: NEEDS,
        how: "Alice and Bob exchange two envelopes; Bob sees their events (control); Carol's GET /v1/events must hold no event of that thread.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-event-audience"),
        run: |cx| Box::pin(private(cx)),
    },
];
