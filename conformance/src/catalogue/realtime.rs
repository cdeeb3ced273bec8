//! The real-time stream (Level 4; v1.1 §17, v1.0 §16): connection and authentication,
//! subscribe and resume, `event_id` / `cursor`, ack, ping/pong, the §17.3 event types a
//! client can cause over the API, presence (§17.5) and typing.
//!
//! Every subscription starts at the newest event the identity's catch-up feed shows (`since`,
//! §16.8), so however late a target applies it, no event the case causes is missed. What the
//! spec leaves open is read, not imposed (`ctx::ws`): the type in `event` or `type`, the ids
//! on the frame or in its `data`, extra frames (a `subscribed` acknowledgement, errors)
//! ignored. Each absence ("Carol sees nothing") stands beside a control that sees it.

use super::delegation::{human_and_agent, store_link};
use super::thread_kit::{Grant, op_ok, token};
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::ws::{self, Upgrade, WsSession};
use crate::ctx::{Ctx, Ex, Ident};
use loom_client::ws::TokenIn;
use serde_json::{Value, json};
use std::time::Duration;

const NEEDS: &[Need] = &[Need::Provisioning];

/// Alice and Bob in a new thread; Bob's stream subscribed from his newest event.
async fn bob_listening(cx: &mut Ctx) -> Result<(Ident, Ident, String, Value, WsSession), Finding> {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    let s = cx.ws_subscribed(&bob).await?;
    Ok((alice, bob, t, root, s))
}

/// Alice's signed reply in `t` to `to`; must be accepted. Returns its id.
async fn reply(cx: &mut Ctx, alice: &Ident, t: &str, to: &[&Ident]) -> Result<String, Finding> {
    let word = cx.data.word();
    let m = cx.data.signed_message(alice, t, None, to, &word);
    let i = cx.net.send(alice, &m).await?;
    cx.net
        .expect_created(i)
        .map_err(crate::finding::setup_step("sending a message"))?;
    Ok(m["id"].as_str().unwrap_or_default().to_owned())
}

/// Records `s` and judges `ok` on it.
fn judged(
    cx: &mut Ctx,
    s: &WsSession,
    ok: bool,
    expected: impl Into<String>,
    actual: impl Into<String>,
) -> Verdict {
    let ex = cx.ws_record(s);
    cx.net.expect_at(ex, ok, expected, actual)
}

fn frames_seen(s: &WsSession) -> String {
    let got = s.received();
    if got.is_empty() {
        return "no frame".into();
    }
    let shown: Vec<&str> = got.iter().rev().take(6).map(String::as_str).collect();
    format!("{} frame(s), the last: {}", got.len(), shown.join(" | "))
}

/// Waits for an event of `kind` in thread `t` (and about `subject`, when given).
async fn expect_event(
    cx: &mut Ctx,
    s: &mut WsSession,
    kind: &str,
    t: &str,
    subject: Option<&str>,
    section: &str,
) -> Verdict {
    let got = s
        .until(|f| {
            ws::kind(f) == Some(kind)
                && ws::thread(f) == Some(t)
                && subject.is_none_or(|a| ws::identity(f).is_none_or(|i| i == a))
        })
        .await;
    let what = subject.map(|a| format!(" about {a}")).unwrap_or_default();
    let seen = frames_seen(s);
    judged(
        cx,
        s,
        got.is_some(),
        format!("a `{kind}` event for thread {t}{what} on the subscribed stream ({section})"),
        seen,
    )
}

/// The frames `c` delivered so far that match `leak`. Called after [`carol_is_listening`]:
/// an event leaked to Carol was committed before Alice's message to her, so it came before
/// that message's `envelope.new` (§17.2 order) — judging every frame up to it catches a leak
/// however late it arrived (a fixed drain before the proof missed late ones).
fn delivered(c: &WsSession, leak: impl Fn(&Value) -> bool) -> Vec<Value> {
    c.received()
        .iter()
        .filter_map(|t| serde_json::from_str::<Value>(t).ok())
        .filter(|f| leak(f))
        .collect()
}

/// Proves Carol's stream was live while she saw nothing: Alice then writes to Carol in a
/// thread of their own, and that must reach her (else her silence proves nothing).
async fn carol_is_listening(
    cx: &mut Ctx,
    alice: &Ident,
    carol: &Ident,
    c: &mut WsSession,
) -> Verdict {
    let (_, own) = cx.start_thread(alice, &[carol]).await?;
    let id = own["id"].as_str().unwrap_or_default().to_owned();
    if c.event_for("envelope.new", &id).await.is_some() {
        return Ok(());
    }
    let ex = cx.ws_record(c);
    let closed = match c.closed() {
        Some(close) => format!("; the node closed it: {close:?}"),
        None => String::new(),
    };
    Err(Finding::Error(format!(
        "Carol's stream did not deliver envelope.new for {id} that Alice then sent her (exchange {ex}; {}{closed}): her subscription is not live, so her silence proves nothing",
        frames_seen(c)
    )))
}

// ---- connection ----

async fn connect(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let mut s = cx.ws_open(&alice).await?;
    s.send(&json!({"action": "ping", "ts": 1})).await?;
    let closed = s.drain(Duration::from_millis(300)).await;
    let gone = s.closed().cloned();
    judged(
        cx,
        &s,
        gone.is_none(),
        "the connection stays open after the upgrade (v1.1 §17)",
        format!("closed: {gone:?} after {} frame(s)", closed.len()),
    )
}

async fn auth_required(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bogus = format!("at_conformance-{}", cx.data.word());
    let mut probes: Vec<(Ex, u16, &str)> = Vec::new();
    for (how, token, what) in [
        (TokenIn::None, None, "no token"),
        (TokenIn::Query, Some(bogus.as_str()), "a made-up ?token="),
    ] {
        match cx.ws_upgrade(Some(&alice), how, token).await? {
            Upgrade::Open(s) => {
                return judged(
                    cx,
                    &s,
                    false,
                    format!(
                        "the upgrade with {what} refused (v1.1 §17: the stream is the identity's)"
                    ),
                    "101 Switching Protocols: the connection was opened",
                );
            }
            Upgrade::Refused(status, ex) => probes.push((ex, status, what)),
        }
    }
    let control = match cx.ws_upgrade(Some(&alice), TokenIn::Query, None).await? {
        Upgrade::Open(s) => cx.ws_record(&s),
        Upgrade::Refused(status, ex) => {
            return Err(Finding::Error(format!(
                "the control upgrade with Alice's valid token was refused too (HTTP {status}, exchange {ex}); the refusals cannot be credited"
            )));
        }
    };
    for (ex, status, what) in probes {
        cx.net.expect_at(
            ex,
            (400..500).contains(&status),
            format!("a 4xx refusal of the upgrade with {what}"),
            format!("HTTP {status}"),
        )?;
        let body = cx.net.text(ex);
        cx.net.expect_at(
            ex,
            !body.contains(&bogus),
            "a refusal that does not echo the token (v1.1 §17, §23)",
            format!("the body repeats the token: {body}"),
        )?;
        cx.net.credit(ex, Some(control));
    }
    Ok(())
}

// ---- subscribe, resume, audience, ids ----

/// Waits for an event of `kind` about envelope `id` and judges that it came.
async fn expect_envelope_event(
    cx: &mut Ctx,
    s: &mut WsSession,
    kind: &str,
    id: &str,
    section: &str,
) -> Verdict {
    let got = s.event_for(kind, id).await;
    let seen = frames_seen(s);
    judged(
        cx,
        s,
        got.is_some(),
        format!("a `{kind}` event for {id} on the subscribed stream ({section})"),
        seen,
    )
}

async fn subscribe_delivers(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _, mut s) = bob_listening(cx).await?;
    let id = reply(cx, &alice, &t, &[&bob]).await?;
    expect_envelope_event(cx, &mut s, "envelope.new", &id, "v1.1 §17.1, §17.3").await
}

async fn event_ids(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _, mut s) = bob_listening(cx).await?;
    let id = reply(cx, &alice, &t, &[&bob]).await?;
    let Some(f) = s.event_for("envelope.new", &id).await else {
        return Err(Finding::Error(format!(
            "no envelope.new event for {id} arrived, so its members cannot be judged ({}); full.ws.subscribe-delivers judges delivery",
            frames_seen(&s)
        )));
    };
    judged(
        cx,
        &s,
        ws::event_id(&f).is_some() && ws::cursor(&f).is_some(),
        "the event carries `event_id` and `cursor` (v1.1 §17.2)",
        format!("event = {f}"),
    )
}

async fn resume(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _, mut s) = bob_listening(cx).await?;
    let first = reply(cx, &alice, &t, &[&bob]).await?;
    // The first subscription already resumes (from Bob's newest event): a gap there is the
    // same failure.
    let Some(f) = s.event_for("envelope.new", &first).await else {
        let seen = frames_seen(&s);
        return judged(
            cx,
            &s,
            false,
            format!("envelope.new for {first}, sent after the subscription's since (v1.1 §17.1)"),
            seen,
        );
    };
    let Some(since) = ws::event_id(&f).map(str::to_owned) else {
        return Err(Finding::Error(
            "the event has no event_id to resume from (full.ws.event-id-and-cursor judges that)"
                .into(),
        ));
    };
    s.close().await;
    cx.ws_record(&s);
    let mut missed = Vec::new();
    for _ in 0..3 {
        missed.push(reply(cx, &alice, &t, &[&bob]).await?);
    }
    let mut again = cx.ws_open(&bob).await?;
    again.subscribe(Some(&since)).await?;
    let mut pending: Vec<String> = missed.clone();
    let wait = again.wait();
    again
        .until_within(wait, &mut |f| {
            if ws::kind(f) == Some("envelope.new")
                && let Some(e) = ws::envelope(f)
            {
                pending.retain(|p| p != e);
            }
            pending.is_empty()
        })
        .await;
    let seen = frames_seen(&again);
    judged(
        cx,
        &again,
        pending.is_empty(),
        format!(
            "after resuming with since={since}, envelope.new for each of the {} envelopes sent while Bob was away (v1.1 §17.1, §17.2 at-least-once)",
            missed.len()
        ),
        format!("missing {pending:?}; {seen}"),
    )
}

async fn audience(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _, mut s) = bob_listening(cx).await?;
    let carol = cx.identity("carol", "human").await?;
    let mut c = cx.ws_subscribed(&carol).await?;
    let id = reply(cx, &alice, &t, &[&bob]).await?;
    let control = s.event_for("envelope.new", &id).await;
    let control_ex = cx.ws_record(&s);
    if control.is_none() {
        return Err(Finding::Error(format!(
            "Bob, a participant, did not receive envelope.new for {id} either, so Carol's silence proves nothing (exchange {control_ex})"
        )));
    }
    carol_is_listening(cx, &alice, &carol, &mut c).await?;
    let leaked = delivered(&c, |f| {
        ws::thread(f) == Some(t.as_str()) || ws::envelope(f) == Some(id.as_str())
    });
    let ex = cx.ws_record(&c);
    cx.net.expect_at(
        ex,
        leaked.is_empty(),
        format!("no event of thread {t} on Carol's stream: she is not a participant (v1.1 §8.3)"),
        format!("Carol received {}", Value::Array(leaked.clone())),
    )?;
    cx.net.credit(ex, Some(control_ex));
    Ok(())
}

async fn ack(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _, mut s) = bob_listening(cx).await?;
    let first = reply(cx, &alice, &t, &[&bob]).await?;
    let Some(f) = s.event_for("envelope.new", &first).await else {
        return Err(Finding::Error(format!(
            "no envelope.new for {first} to acknowledge ({})",
            frames_seen(&s)
        )));
    };
    let cursor = ws::cursor(&f).or_else(|| ws::event_id(&f).map(str::to_owned));
    s.send(&json!({"action": "ack", "cursor": cursor})).await?;
    // A ping after the ack: frames of one connection are taken in order, so its pong (or the
    // end of the stream) shows the ack was taken before the next envelope exists.
    s.send(&json!({"action": "ping"})).await?;
    s.until(|f| ws::kind(f) == Some("pong")).await;
    let second = reply(cx, &alice, &t, &[&bob]).await?;
    expect_envelope_event(
        cx,
        &mut s,
        "envelope.new",
        &second,
        "after an ack, v1.1 §17.2",
    )
    .await
}

async fn ping(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let mut s = cx.ws_open(&alice).await?;
    s.send(&json!({"action": "ping", "ts": 1_708_099_800}))
        .await?;
    let got = s.until(|f| ws::kind(f) == Some("pong")).await;
    let seen = frames_seen(&s);
    judged(
        cx,
        &s,
        got.is_some(),
        "a `pong` for the client's `ping` (v1.1 §17.4)",
        seen,
    )
}

// ---- event types ----

async fn thread_updated(cx: &mut Ctx) -> Verdict {
    let (alice, _, t, _, mut s) = bob_listening(cx).await?;
    let subject = cx.data.word();
    op_ok(
        cx,
        &alice,
        &t,
        "thread.update@v1",
        json!({"subject": subject}),
    )
    .await?;
    expect_event(cx, &mut s, "thread.updated", &t, None, "v1.1 §17.3").await
}

async fn participants(cx: &mut Ctx) -> Verdict {
    let (alice, _, t, _, mut s) = bob_listening(cx).await?;
    let carol = cx.identity("carol", "human").await?;
    let who = json!({"identity": carol.address()});
    op_ok(cx, &alice, &t, "thread.add_participant@v1", who.clone()).await?;
    expect_event(
        cx,
        &mut s,
        "participant.joined",
        &t,
        Some(carol.address()),
        "v1.1 §17.3",
    )
    .await?;
    op_ok(cx, &alice, &t, "thread.remove_participant@v1", who).await?;
    expect_event(
        cx,
        &mut s,
        "participant.left",
        &t,
        Some(carol.address()),
        "v1.1 §17.3",
    )
    .await
}

async fn forks(cx: &mut Ctx) -> Verdict {
    let (alice, _, t, root, mut s) = bob_listening(cx).await?;
    let f = cx.data.thread_id();
    op_ok(
        cx,
        &alice,
        &t,
        "thread.fork@v1",
        json!({"fork_thread_id": f, "forked_from": root["id"]}),
    )
    .await?;
    expect_event(cx, &mut s, "thread.fork", &t, None, "v1.1 §17.3").await?;
    op_ok(
        cx,
        &alice,
        &t,
        "thread.merge@v1",
        json!({"fork_thread_id": f}),
    )
    .await?;
    expect_event(cx, &mut s, "thread.merged", &t, None, "v1.1 §17.3").await
}

async fn retracted(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _, mut s) = bob_listening(cx).await?;
    let id = reply(cx, &alice, &t, &[&bob]).await?;
    let i = cx
        .net
        .call(
            "DELETE",
            &format!("/v1/envelopes/{id}"),
            Some(&alice.token),
            None,
        )
        .await?;
    cx.net.expect_ok(i).map_err(crate::finding::setup_step(
        "retracting the envelope (DELETE /v1/envelopes/{id})",
    ))?;
    expect_envelope_event(cx, &mut s, "envelope.retracted", &id, "v1.1 §17.3, §20.7").await
}

async fn capability_revoked(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _, mut s) = bob_listening(cx).await?;
    let tok = token(cx, &alice, &bob, &Grant::new(&t, &["resolve"]));
    op_ok(
        cx,
        &alice,
        &t,
        "capability.revoked@v1",
        json!({"capability_id": tok["id"]}),
    )
    .await?;
    expect_event(cx, &mut s, "capability.revoked", &t, None, "v1.1 §17.3").await
}

async fn delegation_revoked(cx: &mut Ctx) -> Verdict {
    let (alice, bot, l, _) = human_and_agent(cx).await?;
    let id = store_link(cx, &alice, &l)
        .await
        .map_err(crate::finding::setup_step(
            "storing the link (POST /v1/delegations)",
        ))?;
    let mut s = cx.ws_subscribed(&bot).await?;
    let i = cx
        .net
        .call(
            "DELETE",
            &format!("/v1/delegations/{id}"),
            Some(&alice.token),
            None,
        )
        .await?;
    cx.net.expect_ok(i).map_err(crate::finding::setup_step(
        "revoking the link (DELETE /v1/delegations/{id})",
    ))?;
    let got = s.until(|f| ws::kind(f) == Some("delegation.revoked")).await;
    let seen = frames_seen(&s);
    judged(
        cx,
        &s,
        got.is_some(),
        "a `delegation.revoked` event on the delegate's stream (v1.1 §17.3, §13.4)",
        seen,
    )
}

async fn receipt(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    let mut s = cx.ws_subscribed(&alice).await?;
    let mut r = cx
        .data
        .message(&bob, &t, root["id"].as_str(), &[&alice], "read");
    r["type"] = "receipt".into();
    r["content"]["structured"] =
        json!({"intent": "receipt.read@v1", "parameters": {"envelope_id": root["id"]}});
    bob.sign(&mut r);
    let i = cx.net.send(&bob, &r).await?;
    cx.net
        .expect_created(i)
        .map_err(crate::finding::setup_step(
            "sending a receipt.read@v1 receipt envelope",
        ))?;
    expect_event(cx, &mut s, "receipt.read", &t, None, "v1.1 §17.3").await
}

// ---- presence and typing ----

async fn presence_delivered(cx: &mut Ctx) -> Verdict {
    let (alice, _, _, _, mut s) = bob_listening(cx).await?;
    let mut a = cx.ws_open(&alice).await?;
    a.send(&json!({"action": "presence.update", "data": {"identity": alice.address(), "status": "busy"}}))
        .await?;
    let got = s
        .until(|f| {
            ws::kind(f) == Some("presence.update") && ws::identity(f) == Some(alice.address())
        })
        .await;
    cx.ws_record(&a);
    let seen = frames_seen(&s);
    let status = got
        .as_ref()
        .and_then(|f| ws::member(f, "status"))
        .map(str::to_owned);
    judged(
        cx,
        &s,
        status.as_deref() == Some("busy"),
        "a `presence.update` event naming Alice with status busy on Bob's stream (v1.0 §16.4, v1.1 §17.5)",
        format!("status {status:?}; {seen}"),
    )
}

async fn presence_private(cx: &mut Ctx) -> Verdict {
    let (alice, _, _, _, mut s) = bob_listening(cx).await?;
    let carol = cx.identity("carol", "human").await?;
    let mut c = cx.ws_subscribed(&carol).await?;
    let mut a = cx.ws_open(&alice).await?;
    a.send(&json!({"action": "presence.update", "data": {"identity": alice.address(), "status": "away"}}))
        .await?;
    cx.ws_record(&a);
    let control = s
        .until(|f| {
            ws::kind(f) == Some("presence.update") && ws::identity(f) == Some(alice.address())
        })
        .await;
    let control_ex = cx.ws_record(&s);
    if control.is_none() {
        return Err(Finding::Error(format!(
            "Bob, who shares a thread with Alice, did not see her presence either, so Carol's silence proves nothing (exchange {control_ex})"
        )));
    }
    carol_is_listening(cx, &alice, &carol, &mut c).await?;
    let leaked = delivered(&c, |f| {
        ws::kind(f) == Some("presence.update") && ws::identity(f) == Some(alice.address())
    });
    let ex = cx.ws_record(&c);
    cx.net.expect_at(
        ex,
        leaked.is_empty(),
        "Alice's presence not shown to Carol, who shares no thread with her (v1.1 §17.5)",
        format!("Carol received {}", Value::Array(leaked)),
    )?;
    cx.net.credit(ex, Some(control_ex));
    Ok(())
}

async fn typing(cx: &mut Ctx) -> Verdict {
    let (alice, _, t, _, mut s) = bob_listening(cx).await?;
    let mut a = cx.ws_open(&alice).await?;
    a.send(&json!({"action": "typing.start", "thread_id": t}))
        .await?;
    expect_event(
        cx,
        &mut s,
        "typing.start",
        &t,
        Some(alice.address()),
        "v1.1 §17.3",
    )
    .await?;
    a.send(&json!({"action": "typing.stop", "thread_id": t}))
        .await?;
    cx.ws_record(&a);
    expect_event(
        cx,
        &mut s,
        "typing.stop",
        &t,
        Some(alice.address()),
        "v1.1 §17.3",
    )
    .await
}

/// How long a typing indicator lasts, as the target advertises it (`realtime.typing_ttl_ms`
/// in `/v1/protocol/capabilities`); the case waits at most 10 s.
const MAX_TYPING_WAIT_MS: u64 = 10_000;

async fn typing_expires(cx: &mut Ctx) -> Verdict {
    let Some(ttl) = cx
        .target
        .capability("/realtime/typing_ttl_ms")
        .and_then(Value::as_u64)
    else {
        return Err(Finding::Skip(
            "the target advertises no typing TTL (realtime.typing_ttl_ms); the spec names none"
                .into(),
        ));
    };
    if ttl > MAX_TYPING_WAIT_MS {
        return Err(Finding::Skip(format!(
            "the advertised typing TTL of {ttl} ms is longer than the case waits ({MAX_TYPING_WAIT_MS} ms)"
        )));
    }
    let (alice, _, t, _, mut s) = bob_listening(cx).await?;
    let mut a = cx.ws_open(&alice).await?;
    a.send(&json!({"action": "typing.start", "thread_id": t}))
        .await?;
    let wait = Duration::from_millis(ttl) + s.wait();
    let mut stop =
        |f: &Value| ws::kind(f) == Some("typing.stop") && ws::thread(f) == Some(t.as_str());
    let got = s.until_within(wait, &mut stop).await;
    cx.ws_record(&a);
    let seen = frames_seen(&s);
    judged(
        cx,
        &s,
        got.is_some(),
        format!(
            "a `typing.stop` within the advertised {ttl} ms TTL of a typing.start that was neither renewed nor stopped"
        ),
        seen,
    )
}

const TYPING_MAY: &str = "a MAY: the spec names no typing TTL; a node that keeps the indicator until typing.stop is conformant";

macro_rules! rt_case {
    ($id:literal, $strength:expr, $spec:expr, $covers:expr, $needs:expr, $req:literal, $how:literal, $interp:expr, $mutant:expr, $f:ident) => {
        Case {
            id: $id,
            level: 4,
            strength: $strength,
            spec: $spec,
            requirement: $req,
            covers: $covers,
            needs: $needs,
            how: $how,
            interpretation: $interp,
            mutant: $mutant,
            run: |cx| Box::pin($f(cx)),
        }
    };
}

pub const CASES: &[Case] = &[
    rt_case!(
        "full.ws.connect",
        Strength::Must,
        &["v1.1 §17", "v1.0 §16.1"],
        &["R-17-01", "R-28.1-05"],
        NEEDS,
        "A WebSocket opens at the node's websocket_url with the access token in ?token=.",
        "Open the node document's websocket_url (else /ws) with ?token=<Alice's access token>; expect 101 and the connection still open after a ping.",
        None,
        Mutant::Quirk("ws-header-token-only"),
        connect
    ),
    rt_case!(
        "full.ws.auth-required",
        Strength::Must,
        &["v1.1 §17", "v1.1 §8.3"],
        &["R-17-02"],
        NEEDS,
        "A WebSocket upgrade without a valid access token is refused, and the refusal does not echo the token.",
        "Upgrade with no token, then with a made-up ?token= (probes), then with Alice's token (control, 101); expect a 4xx for each probe whose body does not repeat the token.",
        None,
        Mutant::Quirk("ws-accept-without-token"),
        auth_required
    ),
    rt_case!(
        "full.ws.subscribe-delivers",
        Strength::Must,
        &["v1.1 §17.1", "v1.1 §17.3"],
        &["R-17.1-01"],
        NEEDS,
        "After subscribe to all_threads, an envelope in one of the identity's threads is pushed as envelope.new.",
        "Bob subscribes to all_threads from his newest event (since); Alice sends Bob a message; expect envelope.new naming it on Bob's stream.",
        None,
        Mutant::Quirk("ws-ignore-subscribe"),
        subscribe_delivers
    ),
    rt_case!(
        "full.ws.event-id-and-cursor",
        Strength::Must,
        &["v1.1 §17.2"],
        &["R-17.2-01"],
        NEEDS,
        "Each pushed event carries event_id and cursor.",
        "Bob subscribes; Alice sends him a message; the envelope.new frame must carry a non-empty event_id and a cursor (string or number).",
        None,
        Mutant::Quirk("ws-omit-event-ids"),
        event_ids
    ),
    rt_case!(
        "full.ws.resume-no-gap",
        Strength::Must,
        &["v1.1 §17.1", "v1.1 §17.2"],
        &["R-17.1-02", "R-17.2-02"],
        NEEDS,
        "A subscription resumed with since gets every event after it: nothing sent while the client was away is lost.",
        "Bob subscribes and receives envelope.new for a first message; he disconnects; Alice sends three more; Bob reconnects with since=<the first event's event_id>; expect envelope.new for all three (duplicates allowed, order not judged).",
        Some(
            "The spec shows `since` as an event id (`evt_…`); the harness resumes from the event_id of the last event the client saw."
        ),
        Mutant::Quirk("ws-drop-event-on-resume"),
        resume
    ),
    rt_case!(
        "full.ws.audience",
        Strength::Must,
        &["v1.1 §8.3", "v1.1 §17.1"],
        &["R-17.1-03"],
        NEEDS,
        "A subscription pushes only events the identity may read.",
        "Bob (participant, control) and Carol (not a participant) subscribe; Alice sends Bob a message; Bob must receive envelope.new, Carol no event of that thread within 0.7 s after Bob's arrived.",
        None,
        Mutant::Quirk("ignore-event-audience"),
        audience
    ),
    rt_case!(
        "full.ws.ack-accepted",
        Strength::Should,
        &["v1.1 §17.2"],
        &["R-17.2-04"],
        NEEDS,
        "A node takes a client's ack and the stream goes on.",
        "Bob receives envelope.new for a first message and acks its cursor ({action: ack, cursor}), then pings (its pong shows the ack was taken); Alice sends a second; expect envelope.new for it on the same connection.",
        Some(
            "§17.2 asks clients to ack (SHOULD) and says nothing of what a node does with it; the harness requires only that the ack does not end the stream."
        ),
        Mutant::Quirk("ws-close-on-ack"),
        ack
    ),
    rt_case!(
        "full.ws.ping-pong",
        Strength::Must,
        &["v1.1 §17.4", "v1.0 §16.5"],
        &["R-17.4-02"],
        NEEDS,
        "The node answers a client ping with pong.",
        "Send {action: ping, ts}; expect a frame of type pong.",
        None,
        Mutant::Quirk("ws-no-pong"),
        ping
    ),
    rt_case!(
        "full.ws.event.thread-updated",
        Strength::Must,
        &["v1.1 §17.3"],
        &["R-17.3-01"],
        NEEDS,
        "A change of thread metadata is pushed as thread.updated.",
        "Bob subscribes; Alice (owner) sends thread.update@v1 with a new subject; expect thread.updated for the thread on Bob's stream.",
        None,
        Mutant::Quirk("omit-thread-updated-event"),
        thread_updated
    ),
    rt_case!(
        "full.ws.event.participants",
        Strength::Must,
        &["v1.1 §17.3"],
        &["R-17.3-02"],
        NEEDS,
        "Adding and removing a participant are pushed as participant.joined and participant.left.",
        "Bob subscribes; Alice adds Carol (thread.add_participant@v1), then removes her; expect participant.joined then participant.left for the thread, naming Carol where the event names an identity.",
        None,
        Mutant::Quirk("omit-membership-events"),
        participants
    ),
    rt_case!(
        "full.ws.event.fork-merged",
        Strength::Must,
        &["v1.1 §17.3", "v1.1 §11.4"],
        &["R-17.3-03"],
        NEEDS,
        "A fork of a subscribed thread is pushed as thread.fork, its merge as thread.merged.",
        "Bob subscribes; Alice forks the thread at its root (thread.fork@v1), then merges the fork (thread.merge@v1); expect thread.fork and thread.merged for the parent thread.",
        None,
        Mutant::Quirk("omit-fork-events"),
        forks
    ),
    rt_case!(
        "full.ws.event.retracted",
        Strength::Must,
        &["v1.1 §17.3", "v1.1 §20.7"],
        &["R-17.3-04"],
        &[Need::Provisioning, Need::Retraction],
        "A retraction is pushed as envelope.retracted.",
        "Bob subscribes; Alice sends him a message and retracts it (DELETE /v1/envelopes/{id}); expect envelope.retracted naming it.",
        None,
        Mutant::Quirk("omit-retracted-event"),
        retracted
    ),
    rt_case!(
        "full.ws.event.capability-revoked",
        Strength::Must,
        &["v1.1 §17.3", "v1.1 §12.3"],
        &["R-17.3-09"],
        NEEDS,
        "A capability revocation is pushed as capability.revoked.",
        "Bob subscribes; Alice issues Bob a resolve token and revokes it (capability.revoked@v1); expect capability.revoked for the thread.",
        None,
        Mutant::Quirk("omit-capability-revoked-event"),
        capability_revoked
    ),
    rt_case!(
        "full.ws.event.delegation-revoked",
        Strength::Must,
        &["v1.1 §17.3", "v1.1 §13.4"],
        &["R-17.3-05"],
        &[Need::Provisioning, Need::Agent, Need::Delegations],
        "A delegation revocation is pushed as delegation.revoked to the delegate.",
        "Alice stores a delegation to her agent; the agent subscribes; Alice revokes the delegation (DELETE /v1/delegations/{id}); expect delegation.revoked on the agent's stream.",
        None,
        Mutant::Quirk("omit-delegation-revoked-event"),
        delegation_revoked
    ),
    rt_case!(
        "full.ws.event.receipt",
        Strength::Must,
        &["v1.1 §17.3"],
        &["R-17.3-06"],
        NEEDS,
        "A receipt envelope is pushed as its receipt.* event.",
        "Alice subscribes; Bob sends a receipt envelope (type receipt, intent receipt.read@v1, the root's id as parameters.envelope_id); expect receipt.read for the thread on Alice's stream.",
        None,
        Mutant::Quirk("omit-receipt-events"),
        receipt
    ),
    rt_case!(
        "full.presence.update-delivered",
        Strength::Must,
        &["v1.1 §17.5", "v1.0 §16.4", "v1.1 §28.1"],
        &["R-17.3-10"],
        NEEDS,
        "A presence.update from an identity is pushed to those who may see it, naming the identity and status.",
        "Alice and Bob share a thread; Bob subscribes; Alice sends {action: presence.update, data: {identity, status: busy}}; expect presence.update naming Alice with status busy on Bob's stream.",
        Some("§17.5 makes presence optional for nodes, but §28.1 lists presence in Level 4."),
        Mutant::Quirk("drop-presence"),
        presence_delivered
    ),
    rt_case!(
        "full.presence.private",
        Strength::Should,
        &["v1.1 §17.5"],
        &["R-17.5-02"],
        NEEDS,
        "Presence is not shown to an identity that shares no thread with its owner.",
        "Bob (shares a thread with Alice, control) and Carol (shares none) subscribe; Alice updates her presence; Bob must see it, Carol not within 0.7 s after.",
        Some(
            "§17.5 allows thread participants and/or explicitly trusted contacts; the harness creates no trust relation, so Carol is neither."
        ),
        Mutant::Quirk("presence-to-everyone"),
        presence_private
    ),
    rt_case!(
        "full.typing.start-stop",
        Strength::Must,
        &["v1.1 §17.3"],
        &["R-17.3-07"],
        NEEDS,
        "typing.start and typing.stop from a participant are pushed to the thread's participants.",
        "Bob subscribes; Alice sends {action: typing.start, thread_id}, then typing.stop; expect typing.start and typing.stop for the thread naming Alice where they name an identity.",
        Some(
            "The spec lists the event types but not the client action; the harness sends them as actions named like the events, with thread_id, as presence.update is sent (v1.0 §16.4)."
        ),
        Mutant::Quirk("drop-typing-events"),
        typing
    ),
    rt_case!(
        "full.typing.expires",
        Strength::May,
        &["v1.1 §17.3"],
        &["R-17.3-08"],
        NEEDS,
        "A typing indicator neither renewed nor stopped ends with typing.stop within the TTL the node advertises.",
        "Needs realtime.typing_ttl_ms in /v1/protocol/capabilities (at most 10 s); Alice sends typing.start only; expect typing.stop for the thread within the TTL plus the harness's wait.",
        Some(TYPING_MAY),
        Mutant::NotApplicable(TYPING_MAY),
        typing_expires
    ),
];
