//! Audience and BCC (v1.1 §8.3, §20.6): who may read an envelope, enforced on retrieval.

use super::thread_kit::{expect_refused_without, has_id, id_of, thread_envelopes};
use crate::case::{Case, Ex, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ident};
use serde_json::{Value, json};

/// Alice owns a thread with Bob and Carol; returns (alice, bob, carol, thread, root id).
async fn trio(cx: &mut Ctx) -> Result<(Ident, Ident, Ident, String, String), Finding> {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let carol = cx.identity("carol", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob, &carol]).await?;
    Ok((alice, bob, carol, t, id_of(&root)))
}

/// Alice sends `text` to `to` with `audience`, replying to `parent`; must be 201.
async fn send_with_audience(
    cx: &mut Ctx,
    alice: &Ident,
    t: &str,
    parent: &str,
    to: &[&Ident],
    audience: Value,
    text: &str,
) -> Result<Value, Finding> {
    let mut e = cx.data.message(alice, t, Some(parent), to, text);
    e["audience"] = audience;
    alice.sign(&mut e);
    let i = cx.net.send(alice, &e).await?;
    cx.net.expect_created(i)?;
    Ok(e)
}

/// `who` may read `env` (200), and sees it in the thread listing; returns the read (the
/// control of a refused read by someone outside the audience).
async fn readable(cx: &mut Ctx, who: &Ident, t: &str, env: &Value) -> Result<Ex, Finding> {
    let i = cx
        .net
        .get(&format!("/v1/envelopes/{}", id_of(env)), &who.token)
        .await?;
    cx.net.expect_ok(i)?;
    let list = thread_envelopes(cx, who, t).await?;
    cx.net.expect_that(
        has_id(&list, &id_of(env)),
        format!("{} sees the envelope in the thread listing", who.address()),
        "it is missing",
    )?;
    Ok(i)
}

/// What the control of a refused read is.
const READER: &str = "the same envelope read by an identity in its audience";

/// `who` is refused `env` with 403 AUDIENCE_DENIED beside `control` (a reader in the
/// audience, [`readable`]) and does not see it in the listing.
async fn hidden(
    cx: &mut Ctx,
    who: &Ident,
    t: &str,
    env: &Value,
    secret: &str,
    control: Ex,
) -> Verdict {
    let i = cx
        .net
        .get(&format!("/v1/envelopes/{}", id_of(env)), &who.token)
        .await?;
    cx.net
        .expect_refused_beside(i, control, READER, &["AUDIENCE_DENIED"], "")?;
    expect_refused_without(cx, i, secret, "the envelope's content")?;
    let i = cx
        .net
        .get(&format!("/v1/threads/{t}/envelopes"), &who.token)
        .await?;
    cx.net.expect_ok(i)?;
    let body = cx.net.text(i);
    cx.net.expect_that(
        !body.contains(&id_of(env)) && !body.contains(secret),
        format!(
            "the thread listing for {} leaves the envelope out (v1.1 §8.3 delivery and retrieval)",
            who.address()
        ),
        crate::show::preview(body.as_bytes()),
    )
}

async fn recipients_only(cx: &mut Ctx) -> Verdict {
    let (alice, bob, carol, t, root) = trio(cx).await?;
    let secret = format!("for-bob-{}", &t[4..]);
    let e = send_with_audience(
        cx,
        &alice,
        &t,
        &root,
        &[&bob],
        json!({"mode": "recipients"}),
        &secret,
    )
    .await?;
    let c = readable(cx, &bob, &t, &e).await?;
    hidden(cx, &carol, &t, &e, &secret, c).await
}

async fn custom_only(cx: &mut Ctx) -> Verdict {
    let (alice, bob, carol, t, root) = trio(cx).await?;
    let secret = format!("for-carol-{}", &t[4..]);
    // Addressed to Carol, whom the audience lists: Bob is a participant outside it.
    let aud = json!({"mode": "custom", "identities": [alice.address(), carol.address()]});
    let e = send_with_audience(cx, &alice, &t, &root, &[&carol], aud, &secret).await?;
    let c = readable(cx, &carol, &t, &e).await?;
    hidden(cx, &bob, &t, &e, &secret, c).await
}

async fn thread_audience(cx: &mut Ctx) -> Verdict {
    let (alice, bob, carol, t, root) = trio(cx).await?;
    let mallory = cx.identity("mallory", "human").await?;
    let secret = format!("thread-wide-{}", &t[4..]);
    let e = send_with_audience(
        cx,
        &alice,
        &t,
        &root,
        &[&bob],
        json!({"mode": "thread"}),
        &secret,
    )
    .await?;
    let c = readable(cx, &carol, &t, &e).await?;
    let i = cx
        .net
        .get(&format!("/v1/envelopes/{}", id_of(&e)), &mallory.token)
        .await?;
    expect_refused_without(cx, i, &secret, "the envelope's content")?;
    cx.net.expect_refused_beside(i, c, READER, &[], "")
}

/// How a bcc-copy addresses its recipient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BccForm {
    /// `to` = the visible recipients plus `{bcc recipient, role: bcc}` (the reference node's).
    VisiblePlusBcc,
    /// `to` = `{bcc recipient, role: primary}` only.
    RecipientOnly,
}

/// Alice's bcc-copy for `carol` of `visible` (sent to `bob`), signed.
fn bcc_copy(
    cx: &mut Ctx,
    alice: &Ident,
    bob: &Ident,
    carol: &Ident,
    t: &str,
    visible: &Value,
    form: BccForm,
) -> Value {
    let to: &[&Ident] = match form {
        BccForm::VisiblePlusBcc => &[bob],
        BccForm::RecipientOnly => &[carol],
    };
    let mut copy = cx
        .data
        .message(alice, t, Some(&id_of(visible)), to, "hello bob");
    if form == BccForm::VisiblePlusBcc
        && let Some(a) = copy["to"].as_array_mut()
    {
        a.push(json!({"identity": carol.address(), "role": "bcc"}));
    }
    copy["audience"] = json!({"mode": "custom", "identities": [alice.address(), carol.address()]});
    copy["references"] = json!({"linked_envelopes": [id_of(visible)]});
    alice.sign(&mut copy);
    copy
}

async fn bcc_copy_case(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let carol = cx.identity("carol", "human").await?;
    let t = cx.data.thread_id();
    let visible = cx
        .data
        .signed_message(&alice, &t, None, &[&bob], "hello bob");
    let i = cx.net.send(&alice, &visible).await?;
    cx.net
        .expect_created(i)
        .map_err(crate::finding::setup_step(
            "the visible envelope the copy links to",
        ))?;
    // The bcc-copy (v1.1 §20.6): same thread, audience custom {sender, bcc recipient}, linked
    // to the visible envelope. §20.6 does not say whom its `to` names, so the harness sends
    // the reference node's form (the visible recipients plus the bcc entry, reference/node/
    // README.md) and, if that is refused, the copy addressed to the bcc recipient alone.
    let mut copy = Value::Null;
    for form in [BccForm::VisiblePlusBcc, BccForm::RecipientOnly] {
        copy = bcc_copy(cx, &alice, &bob, &carol, &t, &visible, form);
        let i = cx.net.send(&alice, &copy).await?;
        if cx.net.transcript(i).is_success() {
            break;
        }
        if form == BccForm::RecipientOnly {
            return Err(crate::finding::Finding::Error(format!(
                "setup: the node accepted neither bcc-copy form the harness knows (the visible recipients plus a bcc entry, or the bcc recipient alone as primary): the last answer was HTTP {}{}",
                cx.net.status(i),
                crate::show::error_summary(cx.net.transcript(i))
            )));
        }
    }
    let c = cx
        .net
        .get(&format!("/v1/envelopes/{}", id_of(&copy)), &carol.token)
        .await?;
    let got = super::envelopes::stored(&cx.net.ok_body(c)?);
    cx.net
        .expect_eq("thread_id of the bcc-copy", &json!(t), &got["thread_id"])?;
    // Bob sees the visible envelope, never the copy or Carol's address.
    let i = cx
        .net
        .get(&format!("/v1/envelopes/{}", id_of(&copy)), &bob.token)
        .await?;
    cx.net
        .expect_refused_beside(i, c, READER, &["AUDIENCE_DENIED"], "")?;
    let i = cx
        .net
        .get(&format!("/v1/threads/{t}/envelopes"), &bob.token)
        .await?;
    cx.net.expect_ok(i)?;
    let body = cx.net.text(i);
    cx.net.expect_that(
        body.contains(&id_of(&visible)) && !body.contains(carol.address()),
        "Bob's listing has the visible envelope and no trace of the bcc recipient (v1.1 §8.3)",
        crate::show::preview(body.as_bytes()),
    )
}

const P: &[Need] = &[Need::Provisioning];

/// Audience cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.audience.recipients.only",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §8.3", "v1.1 §24.2"],
        requirement: "An envelope with audience.mode \"recipients\" MUST be readable only by the sender and its explicit recipients, on single reads and in thread listings.",
        covers: &["R-8.3-05", "R-8.3-07", "R-8.3-08", "R-24.2-05"],
        needs: P,
        how: "In a thread of Alice, Bob and Carol, Alice sends to Bob with audience recipients; Bob reads it and lists it; Carol's GET is 403 AUDIENCE_DENIED without the text and her thread listing leaves it out.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-audience"),
        run: |cx| Box::pin(recipients_only(cx)),
    },
    Case {
        id: "core.audience.custom.only",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §8.3", "v1.1 §24.2"],
        requirement: "An envelope with audience.mode \"custom\" MUST be readable only by the sender and the listed identities, not by other thread participants.",
        covers: &["R-8.3-06", "R-8.3-07", "R-8.3-08", "R-24.2-05"],
        needs: P,
        how: "In a thread of Alice, Bob and Carol, Alice sends to Carol with audience custom [Alice, Carol]; Carol reads and lists it; Bob (a participant outside the audience) gets 403 AUDIENCE_DENIED and his listing leaves it out.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-audience"),
        run: |cx| Box::pin(custom_only(cx)),
    },
    Case {
        id: "core.audience.thread.participants",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §8.3"],
        requirement: "An envelope with audience.mode \"thread\" MUST be visible to every thread participant and to no one outside the thread.",
        covers: &["R-8.3-04", "R-8.3-08"],
        needs: P,
        how: "Alice sends to Bob with audience thread; Carol (a participant, not a recipient) reads and lists it; Mallory (outside) gets a 4xx §24.1 error without the text.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-audience"),
        run: |cx| Box::pin(thread_audience(cx)),
    },
    Case {
        id: "core.audience.bcc.copy",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §8.3", "v1.1 §20.6"],
        requirement: "BCC is one visible envelope plus one bcc-copy per bcc recipient (same thread, audience custom {sender, recipient}, linked to the visible one); other recipients MUST NOT see the copy or the bcc identity.",
        covers: &[
            "R-8.3-02",
            "R-8.3-01",
            "R-8.3-03",
            "R-20.6-01",
            "R-20.6-02",
            "R-20.6-03",
            "R-20.6-04",
            "R-20.6-05",
        ],
        needs: P,
        how: "Alice sends a visible envelope to Bob and a bcc-copy for Carol (the reference node's form: to = Bob plus {Carol, role bcc}; if refused, to = Carol alone); Carol reads the copy (same thread_id); Bob's GET of the copy is 403 AUDIENCE_DENIED and his thread listing has the visible envelope but not Carol's address.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-audience"),
        run: |cx| Box::pin(bcc_copy_case(cx)),
    },
];
