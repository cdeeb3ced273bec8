//! Level 3, the email bridge (v1.1 §21, §20.6, §20.8; v1.0 §19; loom-core-1 "Bridge Safety
//! Baseline"): the harness mails the target from its own test domains ([`crate::mail`]) and
//! reads the envelopes over the API; a target identity writes to `bridge://` recipients and
//! the harness's sink receives what the target sends.
//!
//! Where the spec leaves a choice open the case detects the target's reading: failing
//! authentication may be refused at SMTP or delivered with the failure recorded (§21.2 says
//! only "verify … store results"); `auth_results` members may be words (§8.1 shows
//! `"spf": "pass|fail|none"`), objects with a `result`, or lists of them; a reply's
//! In-Reply-To may name the parent's original Message-ID or the target's own id for it.

use super::blobs::{PART1, PART2, upload};
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict, fail};
use crate::ctx::{Ctx, Ident, shapes};
use crate::finding::{Ex, setup_step};
use crate::mail::{
    self, Algorithm, Arrived, BARE, FORGED, GOOD, MailWorld, REFUSED_PREFIX, Submitted,
};
use loom_bridge::auth::{Connection, Record, Records, Verifier};
use mail_parser::MimeHeaders;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;

const NEEDS: &[Need] = &[Need::Provisioning, Need::MailBridge];
const NEEDS_BLOBS: &[Need] = &[Need::Provisioning, Need::MailBridge, Need::Blobs];

/// The readings reported under these names.
pub const FAILED_AUTH_READING: &str = "mail failing DMARC p=reject (v1.1 §21.2)";
/// How a reply's In-Reply-To names a bridged parent.
pub const REPLY_ID_READING: &str = "In-Reply-To of a reply to bridged mail (v1.1 §21.3)";
/// Whether bridged mail gets a best-effort `content.structured`.
pub const EXTRACTION_READING: &str = "content.structured of bridged mail (v1.1 §21.2)";

fn world(cx: &Ctx) -> Result<Arc<MailWorld>, Finding> {
    cx.target
        .mail
        .clone()
        .ok_or_else(|| Finding::Unsupported("no mail world for this target".into()))
}

/// A word unique to this case and call (markers find the envelopes and mail).
fn marker(cx: &mut Ctx, what: &str) -> String {
    format!("{what}-{}", cx.data.word())
}

/// One piece of inbound mail to send.
struct Mail<'a> {
    /// The domain of `From:` and MAIL FROM.
    domain: &'a str,
    /// The sender's local part (default: a fresh one).
    local: Option<String>,
    /// DKIM signature, if any.
    sign: Option<Algorithm>,
    /// Changes after signing (breaks the body hash).
    tamper: bool,
    /// Extra headers.
    headers: Vec<(&'a str, String)>,
}

impl<'a> Mail<'a> {
    fn signed(domain: &'a str) -> Mail<'a> {
        Mail {
            domain,
            local: None,
            sign: Some(Algorithm::Rsa),
            tamper: false,
            headers: Vec::new(),
        }
    }
}

/// Sent mail: its SMTP exchange, the target's answer, the marker in subject and body, and
/// the Message-ID.
struct Sent {
    ex: Ex,
    /// The sender's address.
    from: String,
    answer: Submitted,
    marker: String,
    message_id: String,
}

/// Mails `to` (a target identity) per `m`; the body and subject carry a fresh marker.
async fn send_mail(cx: &mut Ctx, w: &MailWorld, to: &Ident, m: &Mail<'_>) -> Result<Sent, Finding> {
    let marker = marker(cx, "mail");
    let local = m
        .local
        .clone()
        .unwrap_or_else(|| format!("sender-{}", cx.data.word()));
    let from = format!("{local}@{}", m.domain);
    let message_id = format!("{marker}@{}", m.domain);
    let rcpt = mail::mail_address(w, to);
    let headers: Vec<(&str, &str)> = m.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let body = format!("Hello from the conformance harness.\n\nMarker: {marker}\n");
    let mut raw = mail::message(
        &from,
        &rcpt,
        &message_id,
        &format!("Probe {marker}"),
        &body,
        &headers,
    );
    if let Some(a) = m.sign {
        raw = mail::sign(raw, m.domain, a);
    }
    if m.tamper {
        let text = String::from_utf8_lossy(&raw).replace("Hello from", "Goodbye from");
        raw = text.into_bytes();
    }
    let (ex, answer) = mail::submit(cx, w, &from, &rcpt, &raw).await?;
    Ok(Sent {
        ex,
        from,
        answer,
        marker,
        message_id,
    })
}

/// The stored form of the envelope `who` sees holding `marker` (`GET /v1/envelopes/{id}`,
/// for `meta`), or `None` when none shows up within the mail wait.
async fn bridged(
    cx: &mut Ctx,
    w: &MailWorld,
    who: &Ident,
    marker: &str,
) -> Result<Option<Value>, Finding> {
    let Some(listed) = mail::find_bridged(cx, w, who, marker).await? else {
        return Ok(None);
    };
    let id = listed["id"].as_str().unwrap_or_default().to_owned();
    let i = cx
        .net
        .get(&format!("/v1/envelopes/{id}"), &who.token)
        .await?;
    if cx.net.status(i) != 200 {
        return Ok(Some(listed));
    }
    let body = cx.net.transcript(i).json().unwrap_or_default();
    Ok(Some(shapes::envelope(&body)))
}

/// Mails `to` and requires the target to take it and show the envelope; the envelope.
async fn delivered(
    cx: &mut Ctx,
    w: &MailWorld,
    to: &Ident,
    m: &Mail<'_>,
    what: &str,
) -> Result<(Sent, Value), Finding> {
    let sent = send_mail(cx, w, to, m).await?;
    if let Submitted::Refused(r) = &sent.answer {
        return Err(Finding::Fail {
            expected: format!("{what} accepted at SMTP (v1.1 §21.2 \"When email arrives\")"),
            actual: r.clone(),
            decisive: Some(sent.ex),
        });
    }
    match bridged(cx, w, to, &sent.marker).await? {
        Some(e) => Ok((sent, e)),
        None => Err(Finding::Fail {
            expected: format!(
                "{what} delivered to {} as an envelope in a thread it can list (v1.0 §19.2 \"Deliver to LOOM recipient normally\")",
                to.address()
            ),
            actual: format!(
                "no envelope mentioning {} within {:?}",
                sent.marker,
                w.wait.mul_f64(cx.timeout_scale)
            ),
            decisive: Some(sent.ex),
        }),
    }
}

/// An `auth_results` member in any of the shapes implementations use: a word, an object
/// with `result`, or a list of those (the first passing one wins).
fn auth_word(env: &Value, member: &str) -> Option<String> {
    let v = env.pointer("/meta/bridge/auth_results")?.get(member)?;
    let word = |v: &Value| -> Option<String> {
        v.as_str()
            .or_else(|| v.get("result").and_then(Value::as_str))
            .map(str::to_ascii_lowercase)
    };
    match v {
        Value::Array(a) => {
            let words: Vec<String> = a.iter().filter_map(word).collect();
            words
                .iter()
                .find(|w| *w == "pass")
                .or(words.first())
                .cloned()
        }
        other => word(other),
    }
}

/// The check common to the three authentication cases: `probe` (failing `member`) must be
/// refused at SMTP or delivered with `member` recorded as not passing; `control` (the same
/// mail passing it) must be delivered with `member` = pass.
async fn auth_pair(
    cx: &mut Ctx,
    member: &str,
    probe: Mail<'_>,
    control: Mail<'_>,
    refusal_allowed: bool,
) -> Verdict {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let (c, ce) = delivered(cx, &w, &alice, &control, "the control mail").await?;
    let got = auth_word(&ce, member);
    if got.as_deref() != Some("pass") {
        // Mail that passes the check must be recorded as passing: a node that records
        // anything else does not verify it (or stores no results it can be read by).
        return Err(Finding::Fail {
            expected: format!(
                "the control mail, which passes {member}, recorded with meta.bridge.auth_results.{member} = pass (v1.1 §21.2 \"Verify SPF/DKIM/DMARC; store results\")"
            ),
            actual: format!(
                "{member} = {got:?} in {}",
                crate::show::compact(&ce["meta"]["bridge"])
            ),
            decisive: Some(c.ex),
        });
    }
    let p = send_mail(cx, &w, &alice, &probe).await?;
    if let Submitted::Refused(r) = &p.answer {
        if refusal_allowed && r.starts_with('5') {
            cx.target
                .readings
                .record(FAILED_AUTH_READING, "refused at SMTP".into());
            cx.net.credit(p.ex, Some(c.ex));
            return Ok(());
        }
        return Err(Finding::Fail {
            expected: format!(
                "the probe failing {member} accepted, with the failure recorded in meta.bridge.auth_results (v1.1 §21.2)"
            ),
            actual: r.clone(),
            decisive: Some(p.ex),
        });
    }
    let Some(pe) = bridged(cx, &w, &alice, &p.marker).await? else {
        return Err(fail(
            "the probe delivered (the control was) with its results recorded, or refused at SMTP (v1.1 §21.2)",
            "the target accepted it at SMTP but no envelope showed up",
        ));
    };
    if refusal_allowed {
        cx.target.readings.record(
            FAILED_AUTH_READING,
            "delivered with the failure recorded".into(),
        );
    }
    let word = auth_word(&pe, member);
    cx.net.expect_that(
        word.as_deref().is_some_and(|w| w != "pass"),
        format!(
            "meta.bridge.auth_results.{member} records that the check failed (not \"pass\"; v1.1 §21.2 \"Verify SPF/DKIM/DMARC; store results\")"
        ),
        format!("{member} = {word:?} in {}", crate::show::compact(&pe["meta"]["bridge"])),
    )
}

async fn auth_dkim(cx: &mut Ctx) -> Verdict {
    let mut probe = Mail::signed(GOOD);
    probe.tamper = true;
    auth_pair(cx, "dkim", probe, Mail::signed(GOOD), false).await
}

async fn auth_spf(cx: &mut Ctx) -> Verdict {
    // Signed for FORGED: DMARC passes through DKIM, so only SPF fails.
    auth_pair(cx, "spf", Mail::signed(FORGED), Mail::signed(GOOD), false).await
}

async fn auth_dmarc(cx: &mut Ctx) -> Verdict {
    let mut probe = Mail::signed(FORGED);
    probe.sign = None;
    auth_pair(cx, "dmarc", probe, Mail::signed(FORGED), true).await
}

async fn envelope_shape(cx: &mut Ctx) -> Verdict {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let (sent, e) = delivered(cx, &w, &alice, &Mail::signed(GOOD), "authenticated mail").await?;
    let want = format!("bridge://{}", sent.from.to_ascii_lowercase());
    cx.net.expect_that(
        e["from"]["identity"]
            .as_str()
            .map(str::to_ascii_lowercase)
            .as_deref()
            == Some(want.as_str()),
        format!(
            "from.identity = {want} (v1.1 §21.2 \"Create sender identity: bridge://{{email}}\")"
        ),
        format!("from = {}", crate::show::compact(&e["from"])),
    )?;
    cx.net.expect_that(
        e["from"]["type"] == "bridge",
        "from.type = \"bridge\" (v1.1 §21.2)",
        format!("from.type = {}", e["from"]["type"]),
    )?;
    cx.net.expect_that(
        e.pointer("/meta/bridge/source") == Some(&json!("email")),
        "meta.bridge.source = \"email\" (v1.1 §21.2)",
        format!(
            "meta.bridge = {}",
            crate::show::compact(&e["meta"]["bridge"])
        ),
    )
}

async fn original_headers(cx: &mut Ctx) -> Verdict {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let nonce = marker(cx, "hdr");
    let mut m = Mail::signed(GOOD);
    m.headers.push(("X-Conformance-Probe", nonce.clone()));
    let (_, e) = delivered(cx, &w, &alice, &m, "mail with an extra header").await?;
    let headers = e
        .pointer("/meta/bridge/original_headers")
        .cloned()
        .unwrap_or(Value::Null);
    cx.net.expect_that(
        shapes::mentions(&headers, &nonce)
            && (shapes::mentions(&headers, "X-Conformance-Probe")
                || shapes::mentions(&headers, "x-conformance-probe")),
        "meta.bridge.original_headers holds the mail's X-Conformance-Probe header and value (v1.1 §21.2 \"preserved\")",
        format!("original_headers = {}", crate::show::compact(&headers)),
    )
}

async fn original_message_id(cx: &mut Ctx) -> Verdict {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let (sent, e) = delivered(cx, &w, &alice, &Mail::signed(GOOD), "authenticated mail").await?;
    let got = e
        .pointer("/meta/bridge/original_message_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim_matches(['<', '>', ' '])
        .to_owned();
    cx.net.expect_that(
        got == sent.message_id,
        format!(
            "meta.bridge.original_message_id = {} (v1.0 §19.2)",
            sent.message_id
        ),
        format!("{:?}", e.pointer("/meta/bridge/original_message_id")),
    )
}

async fn human_text(cx: &mut Ctx) -> Verdict {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let (sent, e) = delivered(cx, &w, &alice, &Mail::signed(GOOD), "authenticated mail").await?;
    let text = e
        .pointer("/content/human/text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    cx.net.expect_that(
        text.contains("Hello from the conformance harness.") && text.contains(&sent.marker),
        "content.human.text holds the mail's text body (v1.1 §21.2 \"body converted to markdown where possible\")",
        format!("content.human = {}", crate::show::compact(&e["content"]["human"])),
    )
}

async fn extracted(cx: &mut Ctx) -> Verdict {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let (_, e) = delivered(cx, &w, &alice, &Mail::signed(GOOD), "authenticated mail").await?;
    let Some(s) = e.pointer("/content/structured").filter(|s| s.is_object()) else {
        cx.target
            .readings
            .record(EXTRACTION_READING, "no extraction".into());
        return Ok(());
    };
    cx.target
        .readings
        .record(EXTRACTION_READING, "extracted and marked".into());
    let confidence = s["extraction_confidence"].as_f64();
    cx.net.expect_that(
        s["extracted"] == true
            && s["authoritative"] == false
            && s["trust_level"].is_string()
            && confidence.is_some_and(|c| (0.0..=1.0).contains(&c)),
        "content.structured marked extracted=true, authoritative=false, a trust_level and an extraction_confidence in 0..1 (v1.1 §21.2; loom-core-1 \"non-authoritative by default\")",
        format!("content.structured = {}", crate::show::compact(s)),
    )
}

/// `meta.bridge.structured_trust`, or a skip when the target publishes none.
async fn trust_of(cx: &mut Ctx) -> Result<Value, Finding> {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let (_, e) = delivered(cx, &w, &alice, &Mail::signed(GOOD), "authenticated mail").await?;
    match e.pointer("/meta/bridge/structured_trust") {
        Some(t) if t.is_object() => Ok(t.clone()),
        _ => Err(Finding::Fail {
            expected: "meta.bridge.structured_trust present (v1.1 §21.2 SHOULD)".into(),
            actual: format!(
                "meta.bridge = {}",
                crate::show::compact(&e["meta"]["bridge"])
            ),
            decisive: cx.net.last(),
        }),
    }
}

async fn trust(cx: &mut Ctx) -> Verdict {
    let t = trust_of(cx).await?;
    cx.net.expect_that(
        t["authoritative"] == false
            && t["trust_level"].is_string()
            && t["auto_actuation_allowed"].is_boolean()
            && t["reason"].is_string(),
        "structured_trust with authoritative=false, trust_level, auto_actuation_allowed (boolean) and reason (v1.1 §21.2)",
        format!("structured_trust = {}", crate::show::compact(&t)),
    )
}

async fn non_actuating(cx: &mut Ctx) -> Verdict {
    let t = match trust_of(cx).await {
        Ok(t) => t,
        Err(Finding::Fail { .. }) => {
            return Err(Finding::Skip(
                "the target publishes no meta.bridge.structured_trust, the only observable sign of actuation".into(),
            ));
        }
        Err(e) => return Err(e),
    };
    cx.net.expect_that(
        t["auto_actuation_allowed"] != true && t["authoritative"] != true,
        "bridged mail non-actuating and non-authoritative by default: auto_actuation_allowed and authoritative not true (loom-core-1 Bridge Safety Baseline)",
        format!("structured_trust = {}", crate::show::compact(&t)),
    )
}

async fn threading_in(cx: &mut Ctx) -> Verdict {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let (first, e1) = delivered(cx, &w, &alice, &Mail::signed(GOOD), "the first mail").await?;
    // The same correspondent answers (a participant of the thread since the first mail).
    let mut reply = Mail::signed(GOOD);
    reply.local = first.from.split('@').next().map(str::to_owned);
    let parent = format!("<{}>", first.message_id);
    reply.headers.push(("In-Reply-To", parent.clone()));
    reply.headers.push(("References", parent));
    let (_, e2) = delivered(cx, &w, &alice, &reply, "the reply").await?;
    cx.net.expect_that(
        e2["thread_id"] == e1["thread_id"] && e2["parent_id"] == e1["id"],
        format!(
            "the reply in thread {} under parent {} (v1.1 §21.2 \"map Message-ID / References / In-Reply-To to thread_id/parent_id\")",
            e1["thread_id"], e1["id"]
        ),
        format!("thread_id = {}, parent_id = {}", e2["thread_id"], e2["parent_id"]),
    )
}

async fn quarantine(cx: &mut Ctx) -> Verdict {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let (_, ce) = delivered(
        cx,
        &w,
        &alice,
        &Mail::signed(GOOD),
        "authenticated mail (the control)",
    )
    .await?;
    if shapes::mentions(&ce, "sys.quarantine") {
        return Err(Finding::Error(
            "the control (authenticated mail) is labelled sys.quarantine too: cannot judge".into(),
        ));
    }
    let mut bare = Mail::signed(BARE);
    bare.sign = None;
    let p = send_mail(cx, &w, &alice, &bare).await?;
    if let Submitted::Refused(r) = &p.answer {
        return cx.net.expect_that(
            r.starts_with('5'),
            "unauthenticated mail from an unknown sender refused or labelled sys.quarantine (v1.1 §21.5)",
            r.clone(),
        );
    }
    let Some(pe) = bridged(cx, &w, &alice, &p.marker).await? else {
        return Err(fail(
            "the unauthenticated mail delivered labelled sys.quarantine, or refused (v1.1 §21.5)",
            "accepted at SMTP but no envelope showed up",
        ));
    };
    cx.net.expect_that(
        shapes::mentions(&pe, "sys.quarantine"),
        "mail from an unknown, unauthenticated sender labelled sys.quarantine (v1.1 §21.5)",
        format!(
            "labels = {}, meta.bridge = {}",
            pe["labels"],
            crate::show::compact(&pe["meta"]["bridge"])
        ),
    )
}

// ---- outbound -----------------------------------------------------------------------

/// A fresh bridge recipient in the harness's domain.
fn outside(cx: &mut Ctx, prefix: &str) -> String {
    format!("{prefix}{}@{GOOD}", cx.data.word())
}

/// `alice` sends `env` (signed here); must be accepted.
async fn send_out(
    cx: &mut Ctx,
    alice: &Ident,
    mut env: Value,
    what: &str,
) -> Result<String, Finding> {
    alice.sign(&mut env);
    let i = cx.net.send(alice, &env).await?;
    cx.net.expect_created(i).map_err(setup_step(what))?;
    Ok(env["id"].as_str().unwrap_or_default().to_owned())
}

/// An unsigned message from `alice` to the bridge recipients `to` (role, email).
fn to_bridge(
    cx: &mut Ctx,
    alice: &Ident,
    thread: &str,
    parent: Option<&str>,
    to: &[(&str, &str)],
    text: &str,
) -> Value {
    let mut env = cx.data.message(alice, thread, parent, &[], text);
    env["to"] = Value::Array(
        to.iter()
            .map(|(role, email)| json!({"identity": format!("bridge://{email}"), "role": role}))
            .collect(),
    );
    env
}

/// The mail the sink got for `rcpt` that mentions `needle`, waiting for it.
async fn arrived_for(
    cx: &mut Ctx,
    w: &MailWorld,
    rcpt: &str,
    needle: &str,
) -> Result<Arrived, Finding> {
    let wait = w.wait.mul_f64(cx.timeout_scale);
    let got = w
        .sink
        .wait_for(wait, 1, |a| {
            a.tx.rcpt_to.iter().any(|r| r.eq_ignore_ascii_case(rcpt)) && a.text().contains(needle)
        })
        .await;
    got.into_iter().next().ok_or_else(|| {
        fail(
            format!("mail for {rcpt} at the harness's sink {} (v1.1 §21.3 \"When sending to email recipients\")", w.sink_addr),
            format!("none mentioning {needle} within {wait:?}"),
        )
    })
}

/// Alice writes `text` to a fresh bridge recipient; the mail it became.
async fn one_out(
    cx: &mut Ctx,
    text_kind: &str,
) -> Result<(Arc<MailWorld>, Ident, Value, Arrived), Finding> {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let rcpt = outside(cx, "out-");
    let m = marker(cx, "out");
    let t = cx.data.thread_id();
    let mut env = to_bridge(
        cx,
        &alice,
        &t,
        None,
        &[("primary", &rcpt)],
        &format!("{text_kind} {m}"),
    );
    env["content"]["human"]["format"] = json!("markdown");
    let _ = send_out(
        cx,
        &alice,
        env.clone(),
        "a message to a bridge:// recipient",
    )
    .await?;
    let a = arrived_for(cx, &w, &rcpt, &m).await?;
    Ok((w, alice, env, a))
}

async fn loom_headers(cx: &mut Ctx) -> Verdict {
    let (_, _, env, a) = one_out(cx, "Headers check").await?;
    let want = [
        ("X-LOOM-Envelope-ID", env["id"].as_str().unwrap_or_default()),
        (
            "X-LOOM-Thread-ID",
            env["thread_id"].as_str().unwrap_or_default(),
        ),
    ];
    for (name, value) in want {
        let got = a.header(name);
        cx.net.expect_that(
            got.as_deref() == Some(value),
            format!("{name}: {value} (v1.1 §21.3 \"Include headers\")"),
            format!("{name}: {got:?}"),
        )?;
    }
    let intent = a.header("X-LOOM-Intent");
    cx.net.expect_that(
        intent.as_deref().is_some_and(|i| !i.is_empty()),
        "an X-LOOM-Intent header (v1.1 §21.3)",
        format!("{intent:?}"),
    )
}

async fn alternative(cx: &mut Ctx) -> Verdict {
    let (_, _, _, a) = one_out(cx, "Render **this** in both forms").await?;
    let parsed = mail::parsed(&a).ok_or_else(|| fail("an RFC 5322 message", a.text()))?;
    let has = |t: &str, s: &str| {
        parsed
            .parts
            .iter()
            .any(|p| p.is_content_type(t, s) && !p.contents().is_empty())
    };
    cx.net.expect_that(
        has("text", "plain") && has("text", "html"),
        "a text/plain and a text/html rendering of content.human (v1.1 §21.3 \"Render content.human to HTML + plaintext\")",
        format!(
            "parts: {:?}",
            parsed
                .parts
                .iter()
                .map(|p| p.content_type().map(|c| format!("{}/{}", c.ctype(), c.subtype().unwrap_or(""))).unwrap_or_default())
                .collect::<Vec<_>>()
        ),
    )
}

async fn dkim_out(cx: &mut Ctx) -> Verdict {
    let (w, _, _, a) = one_out(cx, "Signed mail").await?;
    cx.net.expect_that(
        a.header("DKIM-Signature").is_some(),
        "a DKIM-Signature header (v1.1 §21.3 \"DKIM-sign … for bridge domain\")",
        "the mail carries none",
    )?;
    if w.target_dkim.get().is_none_or(Vec::is_empty) {
        return Err(Finding::Skip(
            "the target's DKIM public key is unknown (it advertises no /bridge/dkim capability and the profile's [bridge.dkim] names none): the signature's presence was checked, its validity cannot be".into(),
        ));
    }
    let records = Records::new(true);
    for (name, value) in w.target_dkim.get().cloned().unwrap_or_default() {
        let _ = records.add(&Record {
            name,
            kind: "TXT".into(),
            value,
        });
    }
    let verifier = Verifier::new(Arc::new(records), None, &format!("sink.{GOOD}"))
        .map_err(|e| Finding::Error(e.to_string()))?;
    let auth = verifier
        .verify(
            &a.tx.data,
            Connection {
                ip: w.harness_ip,
                helo: "target",
                mail_from: &a.tx.mail_from,
            },
        )
        .await;
    let from_domain = mail::parsed(&a)
        .and_then(|p| {
            p.from()
                .and_then(|f| f.first())
                .and_then(|f| f.address().map(str::to_owned))
        })
        .and_then(|f| f.rsplit_once('@').map(|(_, d)| d.to_ascii_lowercase()))
        .unwrap_or_default();
    cx.net.expect_that(
        auth.dkim_signatures
            .iter()
            .any(|s| s.result == "pass" && (s.domain == from_domain || from_domain.ends_with(&format!(".{}", s.domain)))),
        format!("a DKIM signature that verifies under the target's published key, for the From domain {from_domain} (v1.1 §21.3 \"DKIM-sign and align SPF/DMARC for bridge domain\")"),
        format!("DKIM: {:?}", auth.dkim_signatures),
    )
}

async fn threading_out(cx: &mut Ctx) -> Verdict {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let (first, e1) =
        delivered(cx, &w, &alice, &Mail::signed(GOOD), "the mail to reply to").await?;
    let sender = e1["from"]["identity"]
        .as_str()
        .unwrap_or_default()
        .trim_start_matches("bridge://")
        .to_owned();
    let m = marker(cx, "reply");
    let thread = e1["thread_id"].as_str().unwrap_or_default().to_owned();
    let parent = e1["id"].as_str().unwrap_or_default().to_owned();
    let env = to_bridge(
        cx,
        &alice,
        &thread,
        Some(&parent),
        &[("primary", &sender)],
        &format!("A reply {m}"),
    );
    send_out(cx, &alice, env, "a reply to bridged mail").await?;
    let a = arrived_for(cx, &w, &sender, &m).await?;
    let irt = a.header("In-Reply-To").unwrap_or_default();
    let refs = a.header("References").unwrap_or_default();
    let names_original = irt.contains(&first.message_id);
    let names_parent = irt.contains(&parent);
    if names_original || names_parent {
        cx.target.readings.record(
            REPLY_ID_READING,
            if names_original {
                "the parent's original Message-ID"
            } else {
                "the target's id for the parent envelope"
            }
            .into(),
        );
    }
    cx.net.expect_that(
        (names_original || names_parent) && !refs.is_empty(),
        format!("In-Reply-To naming the parent (<{}> or an id of {parent}) and References (v1.1 §21.3 \"Preserve threading via In-Reply-To/References\")", first.message_id),
        format!("In-Reply-To: {irt:?}, References: {refs:?}"),
    )
}

async fn attachment_out(cx: &mut Ctx) -> Verdict {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let rcpt = outside(cx, "att-");
    // A thread first (blobs are bound to one, v1.1 §16.7), then the message with the file.
    let t = cx.data.thread_id();
    let root = to_bridge(
        cx,
        &alice,
        &t,
        None,
        &[("primary", &rcpt)],
        "A file follows.",
    );
    let root_id = send_out(cx, &alice, root, "the thread the attachment goes to").await?;
    let blob = upload(cx, &alice, &t).await?;
    let bytes = [PART1, PART2].concat();
    let m = marker(cx, "att");
    let mut env = to_bridge(
        cx,
        &alice,
        &t,
        Some(&root_id),
        &[("primary", &rcpt)],
        &format!("With a file {m}"),
    );
    env["attachments"] = json!([{
        "id": format!("att_{}", cx.data.envelope_id().trim_start_matches("env_")),
        "filename": "conformance.txt",
        "mime_type": "text/plain",
        "size_bytes": bytes.len(),
        "hash": format!("sha256:{}", hex::encode(Sha256::digest(&bytes))),
        "blob_id": blob,
        "inline": false,
    }]);
    send_out(
        cx,
        &alice,
        env,
        "a message with an attachment to a bridge:// recipient",
    )
    .await?;
    let a = arrived_for(cx, &w, &rcpt, &m).await?;
    let parsed = mail::parsed(&a).ok_or_else(|| fail("an RFC 5322 message", a.text()))?;
    let found = parsed
        .attachments()
        .any(|p| p.contents() == bytes.as_slice());
    cx.net.expect_that(
        found,
        "the blob's bytes as a MIME attachment (v1.1 §21.3 \"Attach blobs as MIME attachments\")",
        format!(
            "{} attachment(s): {:?}",
            parsed.attachment_count(),
            parsed
                .attachments()
                .map(|p| p.attachment_name().unwrap_or("").to_owned())
                .collect::<Vec<_>>()
        ),
    )
}

async fn bcc_out(cx: &mut Ctx) -> Verdict {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let shown = outside(cx, "shown-");
    let hidden = outside(cx, "hidden-");
    let t = cx.data.thread_id();
    let m = marker(cx, "bcc");
    let visible = to_bridge(
        cx,
        &alice,
        &t,
        None,
        &[("primary", &shown)],
        &format!("To all {m}"),
    );
    let visible_id = send_out(cx, &alice, visible, "the visible envelope (v1.1 §20.6)").await?;
    // §20.6's copy, in the form the target takes: the visible recipients beside the bcc
    // one, or the bcc recipient alone (the reading the Level 1 bcc case detects too).
    let mut sent = false;
    for form in [
        vec![("primary", shown.as_str()), ("bcc", hidden.as_str())],
        vec![("primary", hidden.as_str())],
    ] {
        let mut copy = to_bridge(
            cx,
            &alice,
            &t,
            Some(&visible_id),
            &form,
            &format!("To all {m}"),
        );
        copy["audience"] = json!({"mode": "custom", "identities": [alice.address(), format!("bridge://{hidden}")]});
        copy["references"] = json!({"linked_envelopes": [visible_id]});
        alice.sign(&mut copy);
        let i = cx.net.send(&alice, &copy).await?;
        if (200..300).contains(&cx.net.status(i)) {
            sent = true;
            break;
        }
    }
    if !sent {
        return Err(Finding::Error(
            "setup: the target took neither form of the bcc-copy envelope (v1.1 §20.6; see the exchanges)".into(),
        ));
    }
    let _ = arrived_for(cx, &w, &hidden, &m).await?;
    let _ = arrived_for(cx, &w, &shown, &m).await?;
    // Anything still on its way to the visible recipient arrives within a short wait.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let to_shown: Vec<Arrived> = w
        .sink
        .arrived()
        .into_iter()
        .filter(|a| {
            a.text().contains(&m) && a.tx.rcpt_to.iter().any(|r| r.eq_ignore_ascii_case(&shown))
        })
        .collect();
    let leaks: Vec<String> = to_shown
        .iter()
        .filter(|a| {
            a.text()
                .to_ascii_lowercase()
                .contains(&hidden.to_ascii_lowercase())
                || a.tx.rcpt_to.iter().any(|r| r.eq_ignore_ascii_case(&hidden))
                || to_shown.len() > 1
        })
        .map(|a| {
            format!(
                "RCPT {:?}, X-LOOM-Envelope-ID {:?}",
                a.tx.rcpt_to,
                a.header("X-LOOM-Envelope-ID")
            )
        })
        .collect();
    cx.net.expect_that(
        leaks.is_empty(),
        format!("{shown} gets one message that does not reveal the Bcc recipient {hidden}; {hidden}'s copy goes in a separate SMTP transaction (v1.1 §21.3 \"MUST send separate SMTP messages without revealing BCC\")"),
        format!("{} message(s) reached {shown}: {leaks:?}", to_shown.len()),
    )
}

async fn failure_receipt(cx: &mut Ctx) -> Verdict {
    let w = world(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let rcpt = outside(cx, REFUSED_PREFIX);
    let m = marker(cx, "bounce");
    let t = cx.data.thread_id();
    let env = to_bridge(
        cx,
        &alice,
        &t,
        None,
        &[("primary", &rcpt)],
        &format!("Will bounce {m}"),
    );
    let id = send_out(cx, &alice, env, "a message to a recipient the sink refuses").await?;
    let deadline = tokio::time::Instant::now() + w.wait.mul_f64(cx.timeout_scale);
    loop {
        if let Some(r) = receipt_naming(cx, &alice, &id).await? {
            return cx.net.expect_that(
                shapes::mentions(&r, "BRIDGE_DELIVERY_FAILED"),
                "a failed receipt naming BRIDGE_DELIVERY_FAILED (v1.1 §20.8, §24.2 \"Email bridge failure\")",
                crate::show::compact(&r),
            );
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(fail(
                format!(
                    "a receipt envelope about {id} visible to {} after the sink refused {rcpt} with 550 (v1.1 §20.8 failed, §24.3)",
                    alice.address()
                ),
                "none appeared",
            ));
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// A `receipt` envelope visible to `who` that mentions `id`.
async fn receipt_naming(cx: &mut Ctx, who: &Ident, id: &str) -> Result<Option<Value>, Finding> {
    mail::find_in_threads(cx, who, |e| {
        e["type"] == "receipt" && shapes::mentions(e, id)
    })
    .await
}

macro_rules! bridge_case {
    ($id:literal, $strength:expr, $spec:expr, $covers:expr, $needs:expr, $req:literal, $how:literal, $quirk:literal, $f:ident) => {
        Case {
            id: $id,
            level: 3,
            strength: $strength,
            spec: $spec,
            requirement: $req,
            covers: $covers,
            needs: $needs,
            how: $how,
            interpretation: None,
            mutant: Mutant::Quirk($quirk),
            run: |cx| Box::pin($f(cx)),
        }
    };
}

/// The Level 3 cases.
pub const CASES: &[Case] = &[
    bridge_case!(
        "bridge.email-in.envelope",
        Strength::Must,
        &["v1.1 §21.2", "v1.0 §19.2"],
        &[
            "R-21.2-04",
            "R-21.2-02",
            "R-21.2-03",
            "R-v1.0-19.2-03",
            "R-28.1-04"
        ],
        NEEDS,
        "Authenticated mail to a target identity becomes an envelope from bridge://{email}, from.type bridge, meta.bridge.source email, delivered to the recipient.",
        "the harness mails a provisioned identity (DKIM-signed rsa-sha256 for mail-harness.test, from an SPF-authorized address, DMARC p=reject) and finds the envelope in the identity's threads; expect from.identity bridge://{sender}, from.type \"bridge\", meta.bridge.source \"email\".",
        "bridge-no-source",
        envelope_shape
    ),
    bridge_case!(
        "bridge.email-in.auth.dkim",
        Strength::Must,
        &["v1.1 §21.2", "v1.0 §19.2"],
        &["R-21.2-01"],
        NEEDS,
        "A bridge verifies DKIM and records a body that does not match its signature as not passing.",
        "control: signed mail, expect auth_results.dkim pass; probe: the same mail with its body changed after signing (SPF still passes, so DMARC passes and the mail is delivered); expect dkim recorded as not pass.",
        "bridge-skip-dkim",
        auth_dkim
    ),
    bridge_case!(
        "bridge.email-in.auth.spf",
        Strength::Must,
        &["v1.1 §21.2", "v1.0 §19.2"],
        &["R-21.2-01"],
        NEEDS,
        "A bridge verifies SPF and records a sender address its domain does not authorize as not passing.",
        "control: mail from mail-harness.test (SPF authorizes the harness), expect spf pass; probe: the same from forged-harness.test (SPF -all, DKIM-signed so DMARC passes); expect spf recorded as not pass.",
        "bridge-skip-spf",
        auth_spf
    ),
    bridge_case!(
        "bridge.email-in.auth.dmarc",
        Strength::Must,
        &["v1.1 §21.2", "v1.0 §19.2"],
        &["R-21.2-01"],
        NEEDS,
        "A bridge verifies DMARC: unauthenticated mail from a p=reject domain is refused at SMTP or recorded as failing DMARC.",
        "control: DKIM-signed mail from forged-harness.test (DMARC passes through DKIM), expect dmarc pass; probe: the same mail unsigned (SPF -all, no DKIM); expect a 5xx at SMTP or dmarc recorded as not pass (the target's reading is reported).",
        "bridge-skip-dmarc",
        auth_dmarc
    ),
    bridge_case!(
        "bridge.email-in.original-headers",
        Strength::Must,
        &["v1.1 §21.2", "v1.0 §19.2"],
        &["R-21.2-05"],
        NEEDS,
        "A bridged envelope preserves the mail's headers in meta.bridge.original_headers.",
        "signed mail with an extra header X-Conformance-Probe: <nonce>; expect the header's name and value in meta.bridge.original_headers (any layout).",
        "bridge-drop-original-headers",
        original_headers
    ),
    bridge_case!(
        "bridge.email-in.message-id",
        Strength::Must,
        &["v1.0 §19.2"],
        &["R-v1.0-19.2-01"],
        NEEDS,
        "A bridged envelope records the mail's Message-ID in meta.bridge.original_message_id.",
        "signed mail with a fresh Message-ID; expect it (angle brackets optional) in meta.bridge.original_message_id.",
        "bridge-no-original-message-id",
        original_message_id
    ),
    bridge_case!(
        "bridge.email-in.human-text",
        Strength::Must,
        &["v1.1 §21.2", "v1.0 §19.2"],
        &["R-21.2-07"],
        NEEDS,
        "A bridged envelope's content.human carries the mail's text body.",
        "signed plain-text mail; expect its sentences in content.human.text.",
        "bridge-drop-human-text",
        human_text
    ),
    bridge_case!(
        "bridge.email-in.extraction",
        Strength::Must,
        &["v1.1 §21.2", "loom-core-1 §Bridge Safety Baseline"],
        &["R-21.2-08", "R-core-bridge-01"],
        NEEDS,
        "Extracted content.structured of bridged mail is marked extracted, non-authoritative, with a trust level and a confidence in 0..1.",
        "signed mail; when the envelope has content.structured, expect extracted=true, authoritative=false, a trust_level and extraction_confidence in [0, 1]; no content.structured is a legal reading of \"best-effort\" (reported).",
        "bridge-authoritative-extraction",
        extracted
    ),
    bridge_case!(
        "bridge.email-in.trust",
        Strength::Should,
        &["v1.1 §21.2"],
        &["R-21.2-06"],
        NEEDS,
        "A bridged envelope carries meta.bridge.structured_trust with authoritative=false, a trust level, an auto-actuation flag and a reason.",
        "signed mail; expect meta.bridge.structured_trust {authoritative: false, trust_level, auto_actuation_allowed: boolean, reason}.",
        "bridge-trusted-by-default",
        trust
    ),
    bridge_case!(
        "bridge.email-in.non-actuating",
        Strength::Must,
        &["loom-core-1 §Bridge Safety Baseline", "v1.0 §19.2"],
        &["R-core-bridge-02"],
        NEEDS,
        "Bridged mail is non-actuating and non-authoritative by default.",
        "signed mail to a node with default settings; expect structured_trust.auto_actuation_allowed and authoritative not true (skipped when the target publishes no structured_trust).",
        "bridge-trusted-by-default",
        non_actuating
    ),
    bridge_case!(
        "bridge.email-in.threading",
        Strength::Must,
        &["v1.1 §21.2", "v1.0 §19.2"],
        &["R-21.2-09"],
        NEEDS,
        "A reply by mail (In-Reply-To / References) lands in the thread of the mail it answers, under it.",
        "mail M1 becomes envelope E1; mail M2 with In-Reply-To and References <M1>; expect E2.thread_id = E1.thread_id and E2.parent_id = E1.id.",
        "bridge-ignore-reply-headers",
        threading_in
    ),
    bridge_case!(
        "bridge.email-in.quarantine",
        Strength::Should,
        &["v1.1 §21.5"],
        &["R-21.5-01"],
        NEEDS,
        "Unauthenticated mail from an unknown sender is labelled sys.quarantine (or refused).",
        "control: authenticated mail, expect no sys.quarantine; probe: unsigned mail from bare-harness.test (no SPF, DKIM or DMARC records); expect sys.quarantine on the envelope, or a 5xx at SMTP.",
        "bridge-no-quarantine",
        quarantine
    ),
    bridge_case!(
        "bridge.email-out.loom-headers",
        Strength::Must,
        &["v1.1 §21.3", "v1.0 §19.3"],
        &["R-21.3-02"],
        NEEDS,
        "Mail the bridge sends carries X-LOOM-Intent, X-LOOM-Thread-ID and X-LOOM-Envelope-ID.",
        "a target identity writes to bridge://out-…@mail-harness.test; at the harness's sink expect X-LOOM-Envelope-ID and X-LOOM-Thread-ID equal to the envelope's and an X-LOOM-Intent.",
        "bridge-omit-loom-headers",
        loom_headers
    ),
    bridge_case!(
        "bridge.email-out.html-and-text",
        Strength::Must,
        &["v1.1 §21.3", "v1.0 §19.3"],
        &["R-21.3-01"],
        NEEDS,
        "Mail the bridge sends renders content.human as text/plain and text/html.",
        "a Markdown message to a bridge recipient; expect a non-empty text/plain and a non-empty text/html part.",
        "bridge-text-only",
        alternative
    ),
    bridge_case!(
        "bridge.email-out.dkim",
        Strength::Must,
        &["v1.1 §21.3", "v1.0 §19.3"],
        &["R-21.3-05"],
        NEEDS,
        "Mail the bridge sends is DKIM-signed for the bridge domain.",
        "a message to a bridge recipient; verify the received mail's DKIM-Signature (mail-auth) under the DKIM records the target publishes (capabilities /bridge/dkim or the profile); expect one that passes with d= aligned to the From domain.",
        "bridge-unsigned-mail",
        dkim_out
    ),
    bridge_case!(
        "bridge.email-out.threading",
        Strength::Must,
        &["v1.1 §21.3", "v1.0 §19.3"],
        &["R-21.3-03"],
        NEEDS,
        "A reply the bridge sends carries In-Reply-To and References mapped from its parent.",
        "mail M1 becomes envelope E1; the recipient replies to E1's bridge:// sender with parent E1; expect In-Reply-To naming <M1> (or an id of E1; the reading is reported) and a References header.",
        "bridge-no-reply-headers",
        threading_out
    ),
    bridge_case!(
        "bridge.email-out.attachments",
        Strength::Must,
        &["v1.1 §21.3", "v1.0 §19.3"],
        &["R-21.3-04"],
        NEEDS_BLOBS,
        "An envelope's blobs go out as MIME attachments.",
        "upload a blob (v1.1 §16.7), send a message attaching it to a bridge recipient; expect a MIME attachment with the blob's bytes.",
        "bridge-drop-attachments",
        attachment_out
    ),
    bridge_case!(
        "bridge.email-out.bcc",
        Strength::Must,
        &["v1.1 §21.3", "v1.1 §20.6"],
        &["R-21.3-06"],
        NEEDS,
        "Bcc recipients get separate SMTP messages; no message reveals them.",
        "a visible envelope to bridge://shown-… and its bcc-copy (v1.1 §20.6) adding bridge://hidden-… as bcc; expect both to get mail, hidden in its own transaction, and shown exactly one message that names no hidden address.",
        "bridge-copy-to-all",
        bcc_out
    ),
    bridge_case!(
        "bridge.email-out.failure-receipt",
        Strength::Must,
        &["v1.1 §20.8", "v1.1 §24.2", "v1.1 §24.3"],
        &["R-20.8-01"],
        NEEDS,
        "When mail cannot be delivered the sender gets a failed receipt naming BRIDGE_DELIVERY_FAILED.",
        "a message to bridge://refused-…@mail-harness.test, which the sink refuses with 550 5.1.1; expect a receipt envelope about it, visible to the sender, naming BRIDGE_DELIVERY_FAILED.",
        "bridge-no-failure-receipt",
        failure_receipt
    ),
];
