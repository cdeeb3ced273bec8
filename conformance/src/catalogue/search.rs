//! Search (v1.1 §16.6): cleartext human text, structured intent and parameters, and thread
//! subject, labels and participants are searchable; results hold only what the caller may
//! read (§8.3). §16.6 fixes what is searchable, not the response: a hit is any object in the
//! body whose `id` is the envelope or thread (or, for envelopes, whose `envelope_id` is), under
//! whatever member (`envelopes[]`, `threads[]`, `results[]`, …) the node uses.

use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ident, shapes};
use loom_protocol::e2ee::Profile;
use serde_json::{Value, json};

/// A search term no other case uses (letters and digits only, so any tokenizer keeps it).
pub(super) fn token(cx: &mut Ctx) -> String {
    cx.data.word()
}

/// What a node that indexed encrypted content would find: the longest run of letters and
/// digits of its base64url `ciphertext` (any tokenizer keeps one).
pub(super) fn ciphertext_token(content: &Value) -> String {
    content["ciphertext"]
        .as_str()
        .unwrap_or_default()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .max_by_key(|run| run.len())
        .unwrap_or_default()
        .to_owned()
}

/// `GET /v1/search?q=…` as `who`; returns the body.
pub(super) async fn search(cx: &mut Ctx, who: &Ident, q: &str) -> Result<Value, Finding> {
    let i = cx
        .net
        .get(&format!("/v1/search?q={}", encode(q)), &who.token)
        .await?;
    cx.net.ok_body(i)
}

/// `q` percent-encoded for a query string (RFC 3986 unreserved characters kept).
fn encode(q: &str) -> String {
    let mut enc = String::new();
    for b in q.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            enc.push(b as char);
        } else {
            enc.push_str(&format!("%{b:02X}"));
        }
    }
    enc
}

/// How a search can ask for an intent: the full-text `q`, or a structured `intent` filter
/// (v1.0 §16's example filters by `type`, `state` and `from` the same way). §16.6 makes the
/// intent searchable and names neither.
const INTENT_FORMS: [(&str, &str); 2] = [
    ("q", "full-text q finds intents"),
    ("intent", "an intent= filter"),
];

/// Whether a search answer lists `want` (an `env_` or `thr_` id) as a hit.
fn lists(body: &Value, want: &str) -> bool {
    fn envelope_hit(v: &Value, want: &str) -> bool {
        match v {
            Value::Object(o) => {
                o.get("envelope_id").and_then(Value::as_str) == Some(want)
                    || o.values().any(|x| envelope_hit(x, want))
            }
            Value::Array(a) => a.iter().any(|x| envelope_hit(x, want)),
            _ => false,
        }
    }
    shapes::has_object_with_id(body, want) || (want.starts_with("env_") && envelope_hit(body, want))
}

/// `want` must (or must not) be a hit of `body`. A hit that must not be there must not appear
/// anywhere in the answer at all.
pub(super) fn expect_found(cx: &Ctx, body: &Value, want: &str, found: bool, what: &str) -> Verdict {
    let ok = if found {
        lists(body, want)
    } else {
        !shapes::mentions(body, want)
    };
    cx.net.expect_that(
        ok,
        format!(
            "the search answer {} {want} ({what})",
            if found { "lists" } else { "does not mention" }
        ),
        format!("answer = {}", crate::show::compact(body)),
    )
}

async fn human_text(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let tok = token(cx);
    let t = cx.data.thread_id();
    let env = cx.data.signed_message(
        &alice,
        &t,
        None,
        &[&bob],
        &format!("the word {tok} is here"),
    );
    let i = cx.net.send(&alice, &env).await?;
    cx.net.expect_created(i)?;
    let body = search(cx, &bob, &tok).await?;
    expect_found(
        cx,
        &body,
        env["id"].as_str().unwrap_or(""),
        true,
        "cleartext content.human.text is searchable, v1.1 §16.6",
    )
}

/// A message carrying `content.structured` with a case-unique intent and parameter.
async fn structured(cx: &mut Ctx) -> Result<(Ident, String, String, String), Finding> {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let intent = format!("message.{}@v1", token(cx));
    let param = token(cx);
    let t = cx.data.thread_id();
    let mut env = cx
        .data
        .message(&alice, &t, None, &[&bob], "structured request");
    env["content"]["structured"] = json!({"intent": intent, "parameters": {"note": param}});
    alice.sign(&mut env);
    let i = cx.net.send(&alice, &env).await?;
    cx.net.expect_created(i)?;
    Ok((
        bob,
        env["id"].as_str().unwrap_or("").to_owned(),
        intent,
        param,
    ))
}

/// Each way of asking for an intent ([`INTENT_FORMS`]) is tried; the requirement is met by
/// any, and the ones that find the envelope are reported as the target's reading.
async fn intent(cx: &mut Ctx) -> Verdict {
    let (bob, id, intent, _) = structured(cx).await?;
    let mut found = Vec::new();
    let mut answers = Vec::new();
    for (param, what) in INTENT_FORMS {
        let i = cx
            .net
            .get(
                &format!("/v1/search?{param}={}", encode(&intent)),
                &bob.token,
            )
            .await?;
        let t = cx.net.transcript(i);
        if t.is_success() && lists(&cx.net.json(i), &id) {
            found.push(what);
        } else {
            answers.push(format!(
                "?{param}=: HTTP {} {}",
                t.status,
                crate::show::preview(&t.response_body)
            ));
        }
    }
    cx.net.expect_that(
        !found.is_empty(),
        format!(
            "a search for the intent {intent} lists {id} (v1.1 §16.6: content.structured.intent is searchable), by ?q= or ?intent="
        ),
        answers.join("; "),
    )?;
    cx.target
        .readings
        .record(crate::readings::INTENT_SEARCH_READING, found.join(" and "));
    Ok(())
}

async fn parameters(cx: &mut Ctx) -> Verdict {
    let (bob, id, _, param) = structured(cx).await?;
    let body = search(cx, &bob, &param).await?;
    expect_found(
        cx,
        &body,
        &id,
        true,
        "content.structured parameters are searchable, v1.1 §16.6",
    )
}

/// A thread of alice and bob whose subject and labels carry fresh tokens.
async fn described_thread(cx: &mut Ctx) -> Result<(Ident, Ident, String, String, String), Finding> {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, _) = cx.start_thread(&alice, &[&bob]).await?;
    let subject = token(cx);
    let label = token(cx);
    let mut op = cx.data.op(
        &alice,
        &t,
        "thread.update@v1",
        json!({"subject": format!("Subject {subject}"), "labels": [label]}),
    );
    alice.sign(&mut op);
    let i = cx.net.send(&alice, &op).await?;
    cx.net.expect_created(i)?;
    Ok((alice, bob, t, subject, label))
}

async fn thread_subject(cx: &mut Ctx) -> Verdict {
    let (_, bob, t, subject, _) = described_thread(cx).await?;
    let body = search(cx, &bob, &subject).await?;
    expect_found(
        cx,
        &body,
        &t,
        true,
        "thread subject is searchable, v1.1 §16.6",
    )
}

async fn thread_labels(cx: &mut Ctx) -> Verdict {
    let (_, bob, t, _, label) = described_thread(cx).await?;
    let body = search(cx, &bob, &label).await?;
    expect_found(
        cx,
        &body,
        &t,
        true,
        "thread labels are searchable, v1.1 §16.6",
    )
}

async fn thread_participants(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _, _) = described_thread(cx).await?;
    let body = search(cx, &alice, bob.address()).await?;
    expect_found(
        cx,
        &body,
        &t,
        true,
        "thread participants are searchable, v1.1 §16.6",
    )
}

async fn audience_limited(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let carol = cx.identity("carol", "human").await?;
    let dave = cx.identity("dave", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob, &carol]).await?;
    let tok = token(cx);
    let mut env = cx.data.message(
        &alice,
        &t,
        root["id"].as_str(),
        &[&bob],
        &format!("for bob only {tok}"),
    );
    env["audience"] = json!({"mode": "recipients"});
    alice.sign(&mut env);
    let i = cx.net.send(&alice, &env).await?;
    cx.net.expect_created(i)?;
    let id = env["id"].as_str().unwrap_or("").to_owned();
    let body = search(cx, &bob, &tok).await?;
    let control = last(cx)?;
    expect_found(cx, &body, &id, true, "control: the recipient finds it")?;
    let body = search(cx, &carol, &tok).await?;
    expect_withheld(
        cx,
        &body,
        &id,
        control,
        "a participant outside audience.mode=recipients may not read it, v1.1 §8.3",
    )?;
    let body = search(cx, &dave, &tok).await?;
    expect_withheld(
        cx,
        &body,
        &id,
        control,
        "a non-participant may not read it, v1.1 §8.3",
    )
}

/// The exchange just made.
pub(super) fn last(cx: &Ctx) -> Result<crate::ctx::Ex, Finding> {
    cx.net
        .last()
        .ok_or_else(|| Finding::Error("no exchange was recorded".into()))
}

/// The last search's answer does not mention `want`, beside `control`, a search of the same
/// term that listed it: the absence is credited as a refusal with its control (issue 29), so
/// a node whose search finds nothing cannot pass.
pub(super) fn expect_withheld(
    cx: &Ctx,
    body: &Value,
    want: &str,
    control: crate::ctx::Ex,
    what: &str,
) -> Verdict {
    let probe = last(cx)?;
    expect_found(cx, body, want, false, what)?;
    cx.net.credit(probe, Some(control));
    Ok(())
}

async fn encrypted_not_indexed(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let t = cx.data.thread_id();
    let mut env = cx.data.message(&alice, &t, None, &[&bob], "");
    let content = super::e2ee::sealed(cx, Profile::V1, 0, 0, &[&alice, &bob]);
    let cipher = ciphertext_token(&content);
    env["content"] = content;
    alice.sign(&mut env);
    let i = cx.net.send(&alice, &env).await?;
    cx.net.expect_created(i)?;
    let clear = token(cx);
    let reply = cx
        .data
        .signed_message(&alice, &t, env["id"].as_str(), &[&bob], &clear);
    let i = cx.net.send(&alice, &reply).await?;
    cx.net.expect_created(i)?;
    let body = search(cx, &bob, &clear).await?;
    let control = last(cx)?;
    expect_found(
        cx,
        &body,
        reply["id"].as_str().unwrap_or(""),
        true,
        "control: cleartext in the same thread is found",
    )?;
    let body = search(cx, &bob, &cipher).await?;
    expect_withheld(
        cx,
        &body,
        env["id"].as_str().unwrap_or(""),
        control,
        "encrypted content is not indexed, v1.1 §16.6",
    )
}

const NEEDS: &[Need] = &[Need::Provisioning, Need::Search];

/// Search cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.search.envelope.human-text",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.6"],
        requirement: "A node MUST support searching cleartext content.human.text.",
        covers: &["R-16.6-01"],
        needs: NEEDS,
        how: "Alice sends Bob a message with a case-unique word; Bob's GET /v1/search?q=word must list the envelope (any object of the answer whose id, or envelope_id, is the envelope's).",
        interpretation: None,
        mutant: Mutant::Quirk("skip-envelope-search-index"),
        run: |cx| Box::pin(human_text(cx)),
    },
    Case {
        id: "core.search.envelope.intent",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.6"],
        requirement: "A node MUST support searching content.structured.intent.",
        covers: &["R-16.6-02"],
        needs: NEEDS,
        how: "A message with content.structured.intent `message.<unique>@v1`; the recipient's search for that intent, as ?q= or as an ?intent= filter, must list it (the forms that do are reported as a reading).",
        interpretation: None,
        mutant: Mutant::Quirk("skip-envelope-search-index"),
        run: |cx| Box::pin(intent(cx)),
    },
    Case {
        id: "core.search.envelope.parameters",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.6"],
        requirement: "A node MUST support searching content.structured parameters.",
        covers: &["R-16.6-03"],
        needs: NEEDS,
        how: "A message whose content.structured.parameters hold a case-unique word; the recipient's search for it must list the envelope.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-envelope-search-index"),
        run: |cx| Box::pin(parameters(cx)),
    },
    Case {
        id: "core.search.thread.subject",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.6", "v1.1 §11.1"],
        requirement: "A node MUST support searching thread subjects.",
        covers: &["R-16.6-04"],
        needs: NEEDS,
        how: "The owner sets the subject with thread.update@v1; a participant's search for a word of it must list the thread (an object of the answer whose id is the thread's).",
        interpretation: None,
        mutant: Mutant::Quirk("skip-thread-search-index"),
        run: |cx| Box::pin(thread_subject(cx)),
    },
    Case {
        id: "core.search.thread.labels",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.6", "v1.1 §11.1"],
        requirement: "A node MUST support searching thread labels.",
        covers: &["R-16.6-05"],
        needs: NEEDS,
        how: "The owner sets a case-unique label with thread.update@v1; a participant's search for it must list the thread.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-thread-search-index"),
        run: |cx| Box::pin(thread_labels(cx)),
    },
    Case {
        id: "core.search.thread.participants",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.6"],
        requirement: "A node MUST support searching thread participants.",
        covers: &["R-16.6-06"],
        needs: NEEDS,
        how: "Alice searches for Bob's address; her thread with Bob must be listed.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-thread-search-index"),
        run: |cx| Box::pin(thread_participants(cx)),
    },
    Case {
        id: "core.search.audience.enforced",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.6", "v1.1 §8.3"],
        requirement: "Search results MUST hold only envelopes the caller may read (audience enforced in retrieval).",
        covers: &["R-8.3-05", "R-8.3-08"],
        needs: NEEDS,
        how: "In a thread of Alice, Bob and Carol, Alice sends Bob a word with audience.mode=recipients: Bob's search finds it (control), Carol's and an outsider's do not.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-audience"),
        run: |cx| Box::pin(audience_limited(cx)),
    },
    Case {
        id: "core.search.envelope.encrypted-not-indexed",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §16.6", "v1.1 §7.4"],
        requirement: "Encrypted content is not indexed: a search never matches an envelope by its ciphertext.",
        covers: &["R-16.6-07"],
        needs: NEEDS,
        how: "In a plain thread Alice sends Bob an encrypted-content envelope (sealed for both in the DESIGN.md §9 wire format, fresh keys) and a cleartext reply; Bob's search finds the reply's word (control) but not the longest alphanumeric run of the ciphertext.",
        interpretation: Some(
            "The §16.6 MUST (\"For E2EE threads, nodes MUST NOT claim decrypted content search\") concerns E2EE threads (Level 4); in a plain thread, not indexing an encrypted-content envelope's ciphertext is a recommendation.",
        ),
        mutant: Mutant::NotApplicable(
            "the MUST of §16.6 concerns E2EE threads (Level 4, R-16.6-07); in plain threads this is the node's indexing choice",
        ),
        run: |cx| Box::pin(encrypted_not_indexed(cx)),
    },
];
