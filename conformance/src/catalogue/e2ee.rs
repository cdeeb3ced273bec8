//! End-to-end encryption (Level 4; v1.1 §7.4, §10.6, §11.8, §21.4, §23.1, §24.2). The
//! harness registers members with X25519 keys, seals and opens payloads itself in the
//! DESIGN.md §9 wire format (`loom_protocol::e2ee`) and judges only what the node does with
//! them: it never needs, and never gets, a plaintext.
//!
//! How a thread becomes E2EE is detected, not imposed: `encryption.epoch@v1` from the owner
//! (v1.1 §11.8, the reference node's reading) or, where that is refused, an encrypted root
//! (the existing implementation's reading). Replay-counter mode is detected too (§23.1 allows
//! strict-monotonic or a 64-entry window). Every refusal stands beside an accepted control
//! that differs only in the property under test.

use super::thread_kit::{op_accepted, op_ok, send_op, thread_obj};
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict, fail};
use crate::ctx::{Ctx, Ex, Ident, shapes};
use loom_protocol::e2ee::crypto::Sealing;
use loom_protocol::e2ee::{AadKind, EpochParameters, Profile, Recipient, WrapRandomness, seal};
use serde_json::{Value, json};

/// How the target makes a thread E2EE, reported with the run.
pub const ENABLE_READING: &str = "how a thread becomes end-to-end encrypted (v1.1 §11.8)";
/// Which replay-counter mode the target uses, reported with the run.
pub const REPLAY_READING: &str = "E2EE replay-counter mode (v1.1 §23.1)";

const NEEDS: &[Need] = &[Need::Registration];

fn recipient(i: &Ident) -> Recipient {
    Recipient {
        to: i.address().to_owned(),
        key_id: i.id.encryption_key_id(),
        public: i.id.encryption_public(),
    }
}

/// Content sealed for `members` under `profile` at `epoch` with `counter` (fresh keys and
/// nonces from the case's seeded randomness).
pub(super) fn sealed(
    cx: &mut Ctx,
    profile: Profile,
    epoch: u64,
    counter: u64,
    members: &[&Ident],
) -> Value {
    let recipients: Vec<(Recipient, WrapRandomness)> = members
        .iter()
        .map(|m| {
            let nonce = cx.data.seed32();
            let random = WrapRandomness {
                ephemeral_secret: cx.data.seed32().into(),
                nonce: nonce[..24].try_into().unwrap_or_default(),
            };
            (recipient(m), random)
        })
        .collect();
    let s = Sealing {
        profile,
        epoch,
        replay_counter: counter,
        kind: AadKind::Payload,
    };
    let (cek, nonce) = (cx.data.seed32(), cx.data.seed32());
    let plaintext = format!(r#"{{"human":{{"text":"{}"}}}}"#, cx.data.word());
    seal(
        &s,
        plaintext.as_bytes(),
        &cek,
        nonce[..24].try_into().unwrap_or(&[0; 24]),
        &recipients,
    )
    .map(|c| c.to_value())
    .unwrap_or_default()
}

/// A signed message from `who` in `t` to `to` whose content is `content`.
fn with_content(cx: &mut Ctx, who: &Ident, t: &str, to: &[&Ident], content: Value) -> Value {
    let mut e = cx.data.message(who, t, None, to, "");
    e["content"] = content;
    who.sign(&mut e);
    e
}

/// An E2EE thread of Alice (owner) and Bob at `epoch`; Alice's next unused counter.
struct E2ee {
    alice: Ident,
    bob: Ident,
    t: String,
    epoch: u64,
    next: u64,
}

impl E2ee {
    /// Sends `who`'s payload sealed for `members` at `epoch` with `counter`.
    async fn send(
        &self,
        cx: &mut Ctx,
        who: &Ident,
        epoch: u64,
        counter: u64,
        members: &[&Ident],
    ) -> Result<(Ex, Value), Finding> {
        let content = sealed(cx, Profile::V1, epoch, counter, members);
        let to = if who.address() == self.bob.address() {
            &self.alice
        } else {
            &self.bob
        };
        let e = with_content(cx, who, &self.t, &[to], content);
        Ok((cx.net.send(who, &e).await?, e))
    }

    /// The thread's `encryption.key_epoch` as `who` reads it.
    async fn key_epoch(&self, cx: &mut Ctx, who: &Ident) -> Result<Option<u64>, Finding> {
        let th = thread_obj(cx, who, &self.t).await?;
        Ok(th.pointer("/encryption/key_epoch").and_then(Value::as_u64))
    }
}

fn epoch_params(profile: Profile, epoch: u64, content: &Value) -> Value {
    let wrapped = loom_protocol::e2ee::content::parse_wrapped_keys(
        content.get("wrapped_keys"),
        "wrapped_keys",
    )
    .unwrap_or_default();
    EpochParameters {
        profile,
        epoch,
        wrapped_keys: wrapped,
    }
    .to_value()
}

/// Alice and Bob in a thread the target takes as E2EE, by whichever reading it has.
async fn e2ee_thread(cx: &mut Ctx) -> Result<E2ee, Finding> {
    let alice = cx.e2ee_identity("alice").await?;
    let bob = cx.e2ee_identity("bob").await?;
    let (t, _) = cx.start_thread(&alice, &[&bob]).await?;
    let keys = sealed(cx, Profile::V1, 0, 0, &[&alice, &bob]);
    let op = send_op(
        cx,
        &alice,
        &t,
        "encryption.epoch@v1",
        epoch_params(Profile::V1, 0, &keys),
    )
    .await?;
    if cx.net.transcript(op).is_success() {
        cx.target
            .readings
            .record(ENABLE_READING, "encryption.epoch@v1 from the owner".into());
        return Ok(E2ee {
            alice,
            bob,
            t,
            epoch: 0,
            next: 0,
        });
    }
    // The other reading: a root whose content is encrypted for its members.
    let t2 = cx.data.thread_id();
    let root = with_content(cx, &alice, &t2, &[&bob], keys);
    let r = cx.net.send(&alice, &root).await?;
    let th = if cx.net.transcript(r).is_success() {
        Some(thread_obj(cx, &alice, &t2).await?)
    } else {
        None
    };
    if th.is_some_and(|th| th.pointer("/encryption/enabled") == Some(&Value::Bool(true))) {
        cx.target.readings.record(
            ENABLE_READING,
            "an encrypted thread root (encryption.epoch@v1 refused)".into(),
        );
        return Ok(E2ee {
            alice,
            bob,
            t: t2,
            epoch: 0,
            next: 1,
        });
    }
    Err(Finding::Fail {
        expected: "a thread made end-to-end encrypted: the owner's encryption.epoch@v1 with a key for every member accepted (v1.1 §11.8), or an encrypted root that makes the thread's encryption.enabled true".into(),
        actual: "both refused, or the thread did not become encrypted".into(),
        decisive: Some(op),
    })
}

async fn payload_accepted(cx: &mut Ctx) -> Verdict {
    let mut x = e2ee_thread(cx).await?;
    let (alice, bob) = (x.alice.clone(), x.bob.clone());
    let (i, env) = x.send(cx, &alice, x.epoch, x.next, &[&alice, &bob]).await?;
    x.next += 1;
    cx.net.expect_created(i)?;
    let id = env["id"].as_str().unwrap_or_default().to_owned();
    let g = cx
        .net
        .get(&format!("/v1/envelopes/{id}"), &bob.token)
        .await?;
    let stored = shapes::envelope(&cx.net.ok_body(g)?);
    cx.net.expect_eq(
        "the encrypted content as sent, unaltered (the node holds no key to it, v1.1 §7.4)",
        &env["content"],
        &stored["content"],
    )
}

async fn cleartext_refused(cx: &mut Ctx) -> Verdict {
    let x = e2ee_thread(cx).await?;
    let (alice, bob) = (x.alice.clone(), x.bob.clone());
    let clear = cx
        .data
        .signed_message(&alice, &x.t, None, &[&bob], "in clear");
    let probe = cx.net.send(&alice, &clear).await?;
    let (control, _) = x.send(cx, &alice, x.epoch, x.next, &[&alice, &bob]).await?;
    cx.net.expect_refused_beside(
        probe,
        control,
        "the same message encrypted for the thread's members",
        &["ENCRYPTION_REQUIRED"],
        "a cleartext payload in a thread that requires encryption",
    )
}

/// Carol joins Alice and Bob's E2EE thread; (carol, epoch before, epoch after).
async fn carol_joins(cx: &mut Ctx, x: &E2ee) -> Result<(Ident, u64, u64), Finding> {
    let before = x.key_epoch(cx, &x.alice).await?;
    let carol = cx.e2ee_identity("carol").await?;
    op_ok(
        cx,
        &x.alice,
        &x.t,
        "thread.add_participant@v1",
        json!({"identity": carol.address(), "role": "participant"}),
    )
    .await?;
    let after = x.key_epoch(cx, &x.alice).await?;
    match (before, after) {
        (Some(b), Some(a)) => Ok((carol, b, a)),
        _ => Err(fail(
            "the thread object's encryption.key_epoch (v1.1 §10.1, §10.6)",
            "no integer encryption.key_epoch in GET /v1/threads/{id}",
        )),
    }
}

async fn membership_moves_epoch(cx: &mut Ctx) -> Verdict {
    let x = e2ee_thread(cx).await?;
    let (carol, before, after) = carol_joins(cx, &x).await?;
    cx.net.expect_that(
        after > before,
        "encryption.key_epoch incremented by the membership change (v1.1 §10.6)",
        format!("key_epoch {before} before Carol joined, {after} after"),
    )?;
    // …and the rekeyed epoch is usable: a payload for all three at it is taken.
    let (alice, bob) = (x.alice.clone(), x.bob.clone());
    let (i, _) = x
        .send(cx, &alice, after, 0, &[&alice, &bob, &carol])
        .await?;
    cx.net.expect_created(i)
}

async fn stale_epoch_refused(cx: &mut Ctx) -> Verdict {
    let x = e2ee_thread(cx).await?;
    let (carol, before, after) = carol_joins(cx, &x).await?;
    if after <= before {
        return Err(fail(
            "a key epoch moved by Carol joining (v1.1 §10.6)",
            format!("key_epoch stayed {after}"),
        ));
    }
    let (alice, bob) = (x.alice.clone(), x.bob.clone());
    let (probe, _) = x.send(cx, &alice, before, x.next, &[&alice, &bob]).await?;
    let (control, _) = x
        .send(cx, &alice, after, 0, &[&alice, &bob, &carol])
        .await?;
    cx.net.expect_refused_beside(
        probe,
        control,
        "the same message sealed at the thread's current epoch for its current members",
        &[],
        "",
    )
}

async fn replayed_counter_refused(cx: &mut Ctx) -> Verdict {
    let x = e2ee_thread(cx).await?;
    let (alice, bob) = (x.alice.clone(), x.bob.clone());
    let first = x.next;
    let (i, _) = x.send(cx, &alice, x.epoch, first, &[&alice, &bob]).await?;
    cx.net.expect_created(i)?;
    let (control, _) = x
        .send(cx, &alice, x.epoch, first + 5, &[&alice, &bob])
        .await?;
    cx.net.expect_created(control)?;
    // The same (sender, device, epoch, counter) in a new envelope.
    let (probe, _) = x
        .send(cx, &alice, x.epoch, first + 5, &[&alice, &bob])
        .await?;
    // Which mode: an unseen counter below the highest is taken only by a window.
    let (lower, _) = x
        .send(cx, &alice, x.epoch, first + 3, &[&alice, &bob])
        .await?;
    let mode = if cx.net.transcript(lower).is_success() {
        "sliding window: an unseen lower counter is taken"
    } else {
        "strict-monotonic: a lower counter is refused"
    };
    cx.target.readings.record(REPLAY_READING, mode.into());
    cx.net.expect_refused_beside(
        probe,
        control,
        "the first envelope with that counter",
        &[],
        "",
    )
}

async fn bridge_cannot_join(cx: &mut Ctx) -> Verdict {
    let x = e2ee_thread(cx).await?;
    let bridged = format!("bridge://{}@mail.example", cx.data.word());
    let (plain, _) = cx.start_thread(&x.alice, &[&x.bob]).await?;
    let params = json!({"identity": bridged, "role": "participant"});
    let control = op_accepted(
        cx,
        &x.alice,
        &plain,
        "thread.add_participant@v1",
        params.clone(),
    )
    .await;
    let control = match control {
        Ok(c) => c,
        Err(_) => {
            return Err(Finding::Unsupported(format!(
                "the target does not add the bridge identity {bridged} to a plain thread either, so a refusal in an E2EE thread could not be told apart"
            )));
        }
    };
    let probe = send_op(cx, &x.alice, &x.t, "thread.add_participant@v1", params).await?;
    cx.net.expect_refused_beside(
        probe,
        control,
        "the same bridge identity added to a plain thread",
        &[],
        "",
    )
}

async fn unknown_profile_refused(cx: &mut Ctx) -> Verdict {
    let x = e2ee_thread(cx).await?;
    let (alice, bob) = (x.alice.clone(), x.bob.clone());
    let mut content = sealed(cx, Profile::V1, x.epoch, x.next, &[&alice, &bob]);
    let good = content.clone();
    content["profile"] = json!("loom-e2ee-x25519-xchacha20-v9");
    let probe_env = with_content(cx, &alice, &x.t, &[&bob], content);
    let probe = cx.net.send(&alice, &probe_env).await?;
    let control_env = with_content(cx, &alice, &x.t, &[&bob], good);
    let control = cx.net.send(&alice, &control_env).await?;
    cx.net.expect_refused_beside(
        probe,
        control,
        "the same payload under loom-e2ee-x25519-xchacha20-v1",
        &[],
        "",
    )
}

async fn search_shows_no_content(cx: &mut Ctx) -> Verdict {
    use super::search::{ciphertext_token, expect_found, expect_withheld, last, search, token};
    let x = e2ee_thread(cx).await?;
    let (alice, bob) = (x.alice.clone(), x.bob.clone());
    let (i, env) = x.send(cx, &alice, x.epoch, x.next, &[&alice, &bob]).await?;
    cx.net.expect_created(i)?;
    let cipher = ciphertext_token(&env["content"]);
    // Control: the same two people's cleartext word, in a plain thread, is found.
    let (plain, _) = cx.start_thread(&alice, &[&bob]).await?;
    let word = token(cx);
    let clear = cx.data.signed_message(&alice, &plain, None, &[&bob], &word);
    let c = cx.net.send(&alice, &clear).await?;
    cx.net.expect_created(c)?;
    let body = search(cx, &bob, &word).await?;
    let control = last(cx)?;
    let id = clear["id"].as_str().unwrap_or_default().to_owned();
    expect_found(
        cx,
        &body,
        &id,
        true,
        "control: cleartext in a plain thread is found",
    )?;
    let body = search(cx, &bob, &cipher).await?;
    expect_withheld(
        cx,
        &body,
        env["id"].as_str().unwrap_or_default(),
        control,
        "an E2EE payload is no search hit by its encrypted content, v1.1 §16.6",
    )
}

/// E2EE cases.
pub const CASES: &[Case] = &[
    Case {
        id: "full.e2ee.payload-accepted",
        level: 4,
        strength: Strength::Must,
        spec: &["v1.1 §7.4", "v1.1 §11.8"],
        requirement: "An E2EE thread is managed by thread operations (encryption.epoch@v1) and takes a member's encrypted payload, stored as sent.",
        covers: &["R-11.8-01", "R-7.4-02"],
        needs: NEEDS,
        how: "Alice and Bob register X25519 keys; the thread becomes E2EE (encryption.epoch@v1 wrapped for both, or an encrypted root: detected); Alice sends a payload sealed for both at the thread's epoch (DESIGN.md §9); expect 201 and Bob's GET returns the content byte for byte.",
        interpretation: None,
        mutant: Mutant::Quirk("refuse-encrypted-payloads"),
        run: |cx| Box::pin(payload_accepted(cx)),
    },
    Case {
        id: "full.e2ee.cleartext-refused",
        level: 4,
        strength: Strength::Must,
        spec: &["v1.1 §24.2", "v1.1 §10.6"],
        requirement: "A cleartext payload in a thread that requires encryption is refused with 403 ENCRYPTION_REQUIRED.",
        covers: &["R-24.2-06"],
        needs: NEEDS,
        how: "In an E2EE thread Alice sends a cleartext message (probe), then the same message encrypted for the members (control, 201); expect 403 ENCRYPTION_REQUIRED for the probe.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-encryption-required"),
        run: |cx| Box::pin(cleartext_refused(cx)),
    },
    Case {
        id: "full.e2ee.epoch-on-membership",
        level: 4,
        strength: Strength::Must,
        spec: &["v1.1 §10.6", "v1.1 §7.4"],
        requirement: "Any membership change of an E2EE thread increments thread.encryption.key_epoch.",
        covers: &["R-10.6-01", "R-7.4-01"],
        needs: NEEDS,
        how: "In an E2EE thread read encryption.key_epoch, add Carol (thread.add_participant@v1), read it again: it must be higher; a payload sealed for all three at the new epoch is accepted.",
        interpretation: None,
        mutant: Mutant::Quirk("no-epoch-bump"),
        run: |cx| Box::pin(membership_moves_epoch(cx)),
    },
    Case {
        id: "full.e2ee.stale-epoch-refused",
        level: 4,
        strength: Strength::Should,
        spec: &["v1.1 §10.6", "v1.1 §7.4"],
        requirement: "A payload sealed at a key epoch the thread has left behind is refused.",
        covers: &["R-10.6-03"],
        needs: NEEDS,
        how: "Carol joins an E2EE thread (the epoch moves); Alice sends a payload sealed at the old epoch for Alice and Bob (probe) and one at the new epoch for all three (control, 201); expect a 4xx §24.1 refusal of the probe.",
        interpretation: Some(
            "§7.4 and §10.6 require the epoch to move and the thread to be rekeyed on a membership change but do not say what a node does with a payload of the old epoch; refusing it is what rekeying is for (the reference node and the existing implementation both refuse), so the case is a SHOULD with no code asserted.",
        ),
        mutant: Mutant::Quirk("accept-stale-epoch"),
        run: |cx| Box::pin(stale_epoch_refused(cx)),
    },
    Case {
        id: "full.e2ee.replayed-counter-refused",
        level: 4,
        strength: Strength::Should,
        spec: &["v1.1 §23.1", "v1.1 §8.2"],
        requirement: "A replay counter a sender and device already used in an epoch is refused, in either counter mode.",
        covers: &["R-23.1-01"],
        needs: NEEDS,
        how: "In an E2EE thread Alice sends counters n and n+5 (201 each; the second is the control), then a new envelope reusing n+5 (probe) and one with n+3 (reports the mode: taken by a sliding window, refused by a strict one); expect a 4xx §24.1 refusal of the probe.",
        interpretation: Some(
            "§23.1 lists the replay counter among the mitigations (strict-monotonic or a 64-entry window, configurable) without a requirement keyword; a reused counter is refused in both modes, and which mode the target runs is detected and reported, not imposed.",
        ),
        mutant: Mutant::Quirk("accept-replayed-counter"),
        run: |cx| Box::pin(replayed_counter_refused(cx)),
    },
    Case {
        id: "full.e2ee.bridge-join-refused",
        level: 4,
        strength: Strength::Must,
        spec: &["v1.1 §21.4"],
        requirement: "A bridge identity cannot join an E2EE thread.",
        covers: &["R-21.4-03"],
        needs: NEEDS,
        how: "Alice adds bridge://<word>@mail.example to a plain thread (control, 201), then the same identity to her E2EE thread (probe); expect a 4xx §24.1 refusal. A target that refuses the control is unsupported (the refusal could not be told apart).",
        interpretation: None,
        mutant: Mutant::Quirk("bridge-joins-e2ee"),
        run: |cx| Box::pin(bridge_cannot_join(cx)),
    },
    Case {
        id: "full.e2ee.search-no-content",
        level: 4,
        strength: Strength::Should,
        spec: &["v1.1 §16.6"],
        requirement: "Search never returns an E2EE payload by its content.",
        covers: &["R-16.6-07"],
        needs: &[Need::Registration, Need::Search],
        how: "In an E2EE thread Alice sends Bob a sealed payload; in a plain thread a cleartext word; Bob's search finds the word (control) and no hit for the longest alphanumeric run of the payload's ciphertext.",
        interpretation: Some(
            "§16.6's MUST (\"For E2EE threads, nodes MUST NOT claim decrypted content search\") is about what a node claims, which is not observable on the wire; what is observable is that no search answer offers an E2EE payload as a content match, so the case is a SHOULD.",
        ),
        mutant: Mutant::Quirk("index-encrypted-content"),
        run: |cx| Box::pin(search_shows_no_content(cx)),
    },
    Case {
        id: "full.e2ee.unknown-profile-refused",
        level: 4,
        strength: Strength::Should,
        spec: &["v1.1 §7.4.2"],
        requirement: "A payload under an unknown E2EE profile is refused (fail closed).",
        covers: &["R-7.4.2-01"],
        needs: NEEDS,
        how: "In an E2EE thread Alice sends a sealed payload whose profile reads loom-e2ee-x25519-xchacha20-v9 (probe), then the same payload under -v1 (control, 201); expect a 4xx §24.1 refusal of the probe.",
        interpretation: Some(
            "§7.4.2 says implementations without MLS \"MAY continue to negotiate non-MLS profiles … and fail closed for unknown/unsupported profiles\": the fail-closed part sits in a MAY sentence, so the case is a SHOULD.",
        ),
        mutant: Mutant::Quirk("skip-envelope-validation"),
        run: |cx| Box::pin(unknown_profile_refused(cx)),
    },
];
