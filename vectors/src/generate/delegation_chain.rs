//! Area `delegation-chain`: verification of a signed delegation chain against a directory of
//! identities, a revocation list, a clock, the sender and the action (v1.1 §13.1–§13.4,
//! §7.3; v1.0 §12).
//!
//! Links are signed here independently of `loom-protocol`: Ed25519 over
//! `"LOOM-DELEGATION-SIG-v1" ‖ 0x00 ‖ JCS(link − signature − signature_context)` (§13.3.1).
//! Every expectation is a literal in the case functions below.

use super::keys::{public_b64url, signing_key};
use super::schema::AreaSchema;
use super::{Case, FileBuilder};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::Signer;
use loom_protocol::jcs::to_canonical_bytes_without;
use serde_json::{Map, Value, json};

const AREA: &str = "delegation-chain";
const KIND: &str = "verify-delegation-chain";
const ERR: &str = "DELEGATION_INVALID";
const NOW: &str = "2026-03-01T12:00:00Z";
const CREATED: &str = "2026-03-01T09:00:00Z";
const EXPIRES: &str = "2026-06-01T00:00:00Z";

const S131: &str = "v1.1 §13.1";
const S132: &str = "v1.1 §13.2";
const S133: &str = "v1.1 §13.3";
const S1331: &str = "v1.1 §13.3.1";
const S134: &str = "v1.1 §13.4";
const S73: &str = "v1.1 §7.3";
const S63: &str = "v1.1 §6.3";
const V10: &str = "v1.0 §12.4";

/// Ed25519 signature (base64url, unpadded) by key `key` over `prefix ‖ 0x00 ‖ payload`, or
/// over `payload` alone when `prefix` is `None`.
pub fn sign_raw(key: &str, prefix: Option<&str>, payload: &[u8]) -> String {
    let mut msg = Vec::new();
    if let Some(p) = prefix {
        msg.extend_from_slice(p.as_bytes());
        msg.push(0);
    }
    msg.extend_from_slice(payload);
    URL_SAFE_NO_PAD.encode(signing_key(key).sign(&msg).to_bytes())
}

/// `loom://{local}@node.test`.
pub fn addr(local: &str) -> String {
    format!("loom://{local}@node.test")
}

/// The directory: (local part, identity type, [(key id, key name)]).
type IdentityRow = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

#[rustfmt::skip]
const IDENTITIES: &[IdentityRow] = &[
    ("alice", "human", &[("k_sign_alice_1", "alice"), ("k_sign_alice_2", "alice-2")]),
    ("bob", "human", &[("k_sign_bob_1", "bob")]),
    ("assistant.alice", "agent", &[("k_sign_assistant_1", "assistant")]),
    ("cal.assistant.alice", "agent", &[("k_sign_cal_1", "cal")]),
    ("helper.cal.assistant.alice", "agent", &[("k_sign_helper_1", "helper")]),
    ("bot", "agent", &[("k_sign_bot_1", "bot")]),
    ("ci", "service", &[("k_sign_ci_1", "ci")]),
    ("ops", "team", &[("k_sign_ops_1", "ops")]),
];

const ALICE: &str = "alice";
const BOB: &str = "bob";
const ASSISTANT: &str = "assistant.alice";
const CAL: &str = "cal.assistant.alice";
const HELPER: &str = "helper.cal.assistant.alice";
const BOT: &str = "bot";
const CI: &str = "ci";
const OPS: &str = "ops";

/// The agents of the long chains: `a01.alice` … `a11.alice`.
fn chain_agent(n: usize) -> String {
    format!("a{n:02}.alice")
}

/// (key id, key name) of identity `local`.
fn key_of(local: &str) -> (String, String) {
    if let Some((_, _, keys)) = IDENTITIES.iter().find(|(l, _, _)| *l == local) {
        return (keys[0].0.to_owned(), keys[0].1.to_owned());
    }
    let short = local.split('.').next().unwrap_or(local);
    (format!("k_sign_{short}_1"), local.to_owned())
}

fn directory() -> Value {
    let mut dir = Map::new();
    let mut add = |local: &str, kind: &str, keys: Vec<(String, String)>| {
        let keys: Map<String, Value> = keys
            .into_iter()
            .map(|(kid, name)| (kid, Value::from(public_b64url(&name))))
            .collect();
        dir.insert(addr(local), json!({"type": kind, "signing_keys": keys}));
    };
    for (local, kind, keys) in IDENTITIES {
        let keys = keys
            .iter()
            .map(|(k, n)| ((*k).into(), (*n).into()))
            .collect();
        add(local, kind, keys);
    }
    for n in 1..=11 {
        add(&chain_agent(n), "agent", vec![key_of(&chain_agent(n))]);
    }
    Value::Object(dir)
}

fn policy(max_chain_length: u64, enforce_root: bool, accept_legacy: bool) -> Value {
    json!({
        "max_chain_length": max_chain_length,
        "enforce_root_delegator_type": enforce_root,
        "max_created_at_future_skew_ms": 300000,
        "accept_legacy_signatures": accept_legacy
    })
}

/// An unsigned link from `from` to `to` (local parts).
fn link(from: &str, to: &str, scope: &[&str]) -> Value {
    json!({
        "id": format!("dlg_{from}_{to}"),
        "delegator": addr(from),
        "delegate": addr(to),
        "scope": scope,
        "created_at": CREATED,
        "expires_at": EXPIRES,
        "revocable": true,
        "allow_sub_delegation": true,
        "max_sub_delegation_depth": 2
    })
}

/// How a link is signed.
#[derive(Clone, Copy)]
enum Sig {
    /// §13.3.1: prefixed, `signature_context` set.
    Prefixed,
    /// Prefixed, `signature_context` left out (§7.3: verifiers try the prefix first).
    PrefixedNoContext,
    /// Legacy: no prefix, no `signature_context`.
    Legacy,
    /// Legacy bytes while claiming `signature_context`.
    LegacyWithContext,
    /// Prefixed, but `signature_context` included in the signed bytes.
    ContextSigned,
    /// The envelope context (`LOOM-ENVELOPE-SIG-v1`) claimed and used.
    EnvelopeContext,
}

/// Sets `key_id` and signs `l` with key `key` (a key name), in mode `mode`.
fn sign_as(mut l: Value, key_id: Option<&str>, key: &str, mode: Sig) -> Value {
    if let Some(k) = key_id {
        l["key_id"] = k.into();
    }
    let (context, prefix) = match mode {
        Sig::Prefixed | Sig::ContextSigned => (
            Some("LOOM-DELEGATION-SIG-v1"),
            Some("LOOM-DELEGATION-SIG-v1"),
        ),
        Sig::PrefixedNoContext => (None, Some("LOOM-DELEGATION-SIG-v1")),
        Sig::Legacy => (None, None),
        Sig::LegacyWithContext => (Some("LOOM-DELEGATION-SIG-v1"), None),
        Sig::EnvelopeContext => (Some("LOOM-ENVELOPE-SIG-v1"), Some("LOOM-ENVELOPE-SIG-v1")),
    };
    if let Some(c) = context {
        l["signature_context"] = c.into();
    }
    let excluded: &[&str] = match mode {
        Sig::ContextSigned => &["signature"],
        _ => &["signature", "signature_context"],
    };
    let payload = to_canonical_bytes_without(&l, excluded).unwrap_or_default();
    l["signature"] = sign_raw(key, prefix, &payload).into();
    l
}

/// `l` signed by its delegator's first key, prefixed (the normal case).
fn signed(l: Value) -> Value {
    signed_mode(l, Sig::Prefixed)
}

fn signed_mode(l: Value, mode: Sig) -> Value {
    let delegator = l["delegator"].as_str().unwrap_or_default().to_owned();
    let local = delegator
        .trim_start_matches("loom://")
        .trim_end_matches("@node.test");
    let (kid, key) = key_of(local);
    sign_as(l, Some(&kid), &key, mode)
}

/// `l` with member `k` set to `v`.
fn with(mut l: Value, k: &str, v: Value) -> Value {
    l[k] = v;
    l
}

/// `l` without member `k`.
fn without(mut l: Value, k: &str) -> Value {
    l.as_object_mut().map(|o| o.remove(k));
    l
}

/// Signed root alice → assistant with `scope`.
fn root(scope: &[&str]) -> Value {
    signed(link(ALICE, ASSISTANT, scope))
}

/// Signed assistant → cal with `scope`.
fn sub(scope: &[&str]) -> Value {
    signed(link(ASSISTANT, CAL, scope))
}

/// Signed cal → helper with `scope`.
fn subsub(scope: &[&str]) -> Value {
    signed(link(CAL, HELPER, scope))
}

const ROOT_SCOPE: &[&str] = &["read.*", "task.*", "calendar.*"];
const SUB_SCOPE: &[&str] = &["calendar.*"];
const LEAF_SCOPE: &[&str] = &["calendar.schedule"];

/// The valid two-link chain alice → assistant → cal.
fn two() -> Vec<Value> {
    vec![root(ROOT_SCOPE), sub(SUB_SCOPE)]
}

/// The valid three-link chain alice → assistant → cal → helper.
fn three() -> Vec<Value> {
    vec![
        root(ROOT_SCOPE),
        signed(with(
            link(ASSISTANT, CAL, SUB_SCOPE),
            "max_sub_delegation_depth",
            1.into(),
        )),
        subsub(LEAF_SCOPE),
    ]
}

/// A chain of `n` links alice → a01 → … → a{n}, each scope strictly inside the previous one
/// (`task.*`, `task.a.*`, `task.a.a.*`, …); returns the chain, the sender and an action the
/// leaf allows.
fn long_chain(n: usize) -> (Vec<Value>, String, String) {
    let mut chain = Vec::new();
    let mut ns = String::from("task");
    for k in 0..n {
        let from = if k == 0 {
            ALICE.to_owned()
        } else {
            chain_agent(k)
        };
        let scope = format!("{ns}.*");
        let l = without(
            link(&from, &chain_agent(k + 1), &[&scope]),
            "max_sub_delegation_depth",
        );
        chain.push(signed(l));
        ns.push_str(".a");
    }
    (chain, chain_agent(n), format!("{ns}.go@v1"))
}

fn no_revocations() -> Value {
    json!({"ids": [], "pairs": []})
}

/// A test of the chain `chain` presented by `sender` (local part) for `action`.
fn case(
    id: &str,
    comment: &str,
    spec: &[&str],
    flags: &[&str],
    chain: Vec<Value>,
    sender: &str,
    action: &str,
) -> Case {
    Case::new(id, comment, spec)
        .flags(flags)
        .input("chain", Value::Array(chain))
        .input("sender", addr(sender))
        .input("action", action)
}

/// `case` with no revocations.
fn plain(
    id: &str,
    comment: &str,
    spec: &[&str],
    flags: &[&str],
    chain: Vec<Value>,
    sender: &str,
    action: &str,
) -> Case {
    case(id, comment, spec, flags, chain, sender, action).input("revocations", no_revocations())
}

fn ok(
    id: &str,
    comment: &str,
    spec: &[&str],
    flags: &[&str],
    chain: Vec<Value>,
    sender: &str,
    action: &str,
) -> Case {
    plain(id, comment, spec, flags, chain, sender, action).valid()
}

fn bad(
    id: &str,
    comment: &str,
    spec: &[&str],
    flags: &[&str],
    chain: Vec<Value>,
    sender: &str,
    action: &str,
) -> Case {
    plain(id, comment, spec, flags, chain, sender, action).invalid(ERR)
}

/// One link alice → assistant with `l` as the (already built) link, for `task.create@v1`.
fn one(l: Value) -> Vec<Value> {
    vec![l]
}

const TASK: &str = "task.create@v1";
const SCHED: &str = "calendar.schedule@v1";

#[rustfmt::skip]
fn valid_chains() -> Vec<Case> {
    vec![
        ok("valid.one-link", "human → agent, action inside the scope", &[S133, V10], &[], one(root(&["task.*"])), ASSISTANT, TASK),
        ok("valid.two-links", "human → agent → sub-agent, narrowing scopes", &[S133, S132, V10], &[], two(), CAL, SCHED),
        ok("valid.three-links", "three links within every depth limit", &[S133, S131], &[], three(), HELPER, SCHED),
        ok("valid.spec-example", "the v1.1 §13.1 delegation object, acting on reply.routine", &[S131, S133], &["SpecExample"], one(root(&["read.*", "reply.routine", "task.create", "calendar.*"])), ASSISTANT, "reply.routine@v1"),
        ok("root.star-human", "`*` on the root human → agent link allows anything", &[S132, S133], &["Wildcard"], one(root(&["*"])), ASSISTANT, "thread.resolve@v1"),
        ok("root.service-delegator", "a service root is not an agent; its non-`*` delegation stands", &[S133, S63], &["RootType"], one(signed(link(CI, ASSISTANT, &["task.*"]))), ASSISTANT, TASK),
        ok("root.team-delegator", "a team root is not an agent; its non-`*` delegation stands", &[S133, S63], &["RootType"], one(signed(link(OPS, ASSISTANT, &["task.*"]))), ASSISTANT, TASK),
    ]
}

#[rustfmt::skip]
fn root_cases() -> Vec<Case> {
    vec![
        bad("root.agent-delegator", "the root delegator is an agent identity", &[S133, S63], &["RootType"], one(signed(link(BOT, ASSISTANT, &["task.*"]))), ASSISTANT, TASK),
        bad("root.unknown-delegator", "the root delegator is not in the directory", &[S133], &["RootType"], one(sign_as(link("nobody", ASSISTANT, &["task.*"]), Some("k_sign_nobody_1"), "nobody", Sig::Prefixed)), ASSISTANT, TASK),
        bad("root.star-service", "`*` is only valid on a human root", &[S132], &["Wildcard", "RootType"], one(signed(link(CI, ASSISTANT, &["*"]))), ASSISTANT, TASK),
        bad("root.star-team", "`*` is only valid on a human root", &[S132], &["Wildcard", "RootType"], one(signed(link(OPS, ASSISTANT, &["*"]))), ASSISTANT, TASK),
        bad("star.below-root", "`*` on a sub-delegation, even under a `*` root", &[S132], &["Wildcard"], vec![root(&["*"]), sub(&["*"])], CAL, TASK),
    ]
}

#[rustfmt::skip]
fn length_cases() -> Vec<Case> {
    let (ten, s10, a10) = long_chain(10);
    let (eleven, s11, a11) = long_chain(11);
    vec![
        ok("length.ten", "10 links: exactly maxChainLength (default 10)", &[S133], &["ChainLength"], ten, &s10, &a10),
        bad("length.eleven", "11 links: one over maxChainLength", &[S133], &["ChainLength"], eleven, &s11, &a11),
        bad("length.empty", "an agent must present its full chain; an empty one proves nothing", &[S133, "v1.1 §13.5"], &["Shape"], vec![], ASSISTANT, TASK),
    ]
}

#[rustfmt::skip]
fn created_cases() -> Vec<Case> {
    let at = |t: Value| {
        vec![signed(with(
            link(ALICE, ASSISTANT, &["task.*"]),
            "created_at",
            t,
        ))]
    };
    vec![
        bad("created.missing", "created_at MUST be present", &[S133], &["CreatedAt"], one(signed(without(link(ALICE, ASSISTANT, &["task.*"]), "created_at"))), ASSISTANT, TASK),
        bad("created.null", "created_at null is not present", &[S133], &["CreatedAt"], at(Value::Null), ASSISTANT, TASK),
        bad("created.space-separator", "not ISO 8601 (space instead of T)", &[S133], &["CreatedAt"], at("2026-03-01 09:00:00Z".into()), ASSISTANT, TASK),
        bad("created.not-a-date", "not ISO 8601", &[S133], &["CreatedAt"], at("yesterday".into()), ASSISTANT, TASK),
        bad("created.number", "created_at must be an ISO 8601 string", &[S133], &["CreatedAt"], at(1772355600.into()), ASSISTANT, TASK),
        ok("created.future-at-skew", "exactly 5 minutes ahead of now: within maxCreatedAtFutureSkewMs", &[S133], &["Boundary"], at("2026-03-01T12:05:00Z".into()), ASSISTANT, TASK),
        bad("created.future-beyond-skew", "5 minutes and 1 ms ahead: beyond maxCreatedAtFutureSkewMs", &[S133], &["CreatedAt", "Boundary"], at("2026-03-01T12:05:00.001Z".into()), ASSISTANT, TASK),
        bad("created.far-future", "created a year ahead", &[S133], &["CreatedAt"], at("2027-03-01T12:00:00Z".into()), ASSISTANT, TASK),
        ok("created.offset", "an ISO 8601 time with a numeric offset is valid", &[S133], &[], at("2026-03-01T10:00:00+01:00".into()), ASSISTANT, TASK),
        bad("created.future-sub-link", "the second link is created 10 minutes ahead", &[S133], &["CreatedAt"], vec![root(ROOT_SCOPE), signed(with(link(ASSISTANT, CAL, SUB_SCOPE), "created_at", "2026-03-01T12:10:00Z".into()))], CAL, SCHED),
    ]
}

#[rustfmt::skip]
fn expiry_cases() -> Vec<Case> {
    let exp = |t: Value| {
        vec![signed(with(
            link(ALICE, ASSISTANT, &["task.*"]),
            "expires_at",
            t,
        ))]
    };
    vec![
        ok("expiry.at-now", "expires_at equal to now is not in the past", &[S133], &["Boundary"], exp(NOW.into()), ASSISTANT, TASK),
        bad("expiry.one-ms-past", "expires_at 1 ms before now", &[S133, V10], &["Expired", "Boundary"], exp("2026-03-01T11:59:59.999Z".into()), ASSISTANT, TASK),
        bad("expiry.long-past", "expired a month ago", &[S133, V10], &["Expired"], exp("2026-02-01T00:00:00Z".into()), ASSISTANT, TASK),
        ok("expiry.null", "expires_at null: no expiry", &[S131, S133], &[], exp(Value::Null), ASSISTANT, TASK),
        ok("expiry.absent", "no expires_at: nothing is in the past", &[S131, S133], &["Interpretation"], one(signed(without(link(ALICE, ASSISTANT, &["task.*"]), "expires_at"))), ASSISTANT, TASK),
        bad("expiry.malformed", "expires_at is not ISO 8601", &[S133], &["Expired"], exp("June 2026".into()), ASSISTANT, TASK),
        bad("expiry.root-expired", "the root link has expired; the leaf has not", &[S133, V10], &["Expired"], vec![signed(with(link(ALICE, ASSISTANT, ROOT_SCOPE), "expires_at", "2026-02-28T00:00:00Z".into())), sub(SUB_SCOPE)], CAL, SCHED),
    ]
}

#[rustfmt::skip]
fn signature_cases() -> Vec<Case> {
    let base = || link(ALICE, ASSISTANT, &["task.*"]);
    let tamper = |k: &str, v: Value| vec![with(root(&["task.*"]), k, v)];
    let mut flipped = root(&["task.*"]);
    let sig = flipped["signature"].as_str().unwrap_or_default().to_owned();
    let c = if &sig[10..11] == "A" { "B" } else { "A" };
    flipped["signature"] = format!("{}{c}{}", &sig[..10], &sig[11..]).into();
    vec![
        ok("sig.prefixed-without-context", "prefixed signature, signature_context absent: prefixed verification is tried first", &[S1331, S73], &["Signature"], one(signed_mode(base(), Sig::PrefixedNoContext)), ASSISTANT, TASK),
        ok("sig.legacy", "legacy unprefixed signature without signature_context, migration window open", &[S1331, S73], &["Signature", "Legacy"], one(signed_mode(base(), Sig::Legacy)), ASSISTANT, TASK),
        bad("sig.legacy-with-context", "signature_context is present, so only prefixed verification applies", &[S1331, S73], &["Signature", "Legacy"], one(signed_mode(base(), Sig::LegacyWithContext)), ASSISTANT, TASK),
        ok("sig.context-in-payload", "signature_context was included in the signed bytes: §13.3.1 does not say whether the member is signed, so a verifier accepts both readings (DESIGN.md §9); signers leave it out", &[S1331], &["Signature", "Interpretation"], one(signed_mode(base(), Sig::ContextSigned)), ASSISTANT, TASK),
        bad("sig.envelope-context", "signed with the envelope context and claiming it", &[S1331], &["Signature"], one(signed_mode(base(), Sig::EnvelopeContext)), ASSISTANT, TASK),
        bad("sig.wrong-key", "alice's key_id but bob's key", &[S133, V10], &["Signature"], one(sign_as(base(), Some("k_sign_alice_1"), "bob", Sig::Prefixed)), ASSISTANT, TASK),
        bad("sig.signed-by-delegate", "the delegate signed its own delegation", &[S133, V10], &["Signature"], one(sign_as(base(), Some("k_sign_assistant_1"), "assistant", Sig::Prefixed)), ASSISTANT, TASK),
        ok("sig.second-key", "signed with the delegator's second signing key", &[S133], &["Signature"], one(sign_as(base(), Some("k_sign_alice_2"), "alice-2", Sig::Prefixed)), ASSISTANT, TASK),
        bad("sig.key-id-unknown", "key_id names no key of the delegator", &[S133], &["Signature"], one(sign_as(base(), Some("k_sign_alice_9"), "alice", Sig::Prefixed)), ASSISTANT, TASK),
        ok("sig.key-id-absent-single", "no key_id; the delegator has exactly one signing key", &[S133], &["Signature"], vec![root(ROOT_SCOPE), sign_as(link(ASSISTANT, CAL, SUB_SCOPE), None, "assistant", Sig::Prefixed)], CAL, SCHED),
        bad("sig.tampered-scope", "scope widened after signing", &[S133, V10], &["Signature", "Tampered"], tamper("scope", json!(["task.*", "calendar.*"])), ASSISTANT, TASK),
        bad("sig.tampered-delegate", "delegate changed after signing", &[S133, V10], &["Signature", "Tampered"], tamper("delegate", addr(CAL).into()), CAL, TASK),
        bad("sig.tampered-expires", "expires_at extended after signing", &[S133, V10], &["Signature", "Tampered"], tamper("expires_at", "2027-06-01T00:00:00Z".into()), ASSISTANT, TASK),
        bad("sig.tampered-depth", "max_sub_delegation_depth raised after signing", &[S133, V10], &["Signature", "Tampered"], vec![with(root(ROOT_SCOPE), "max_sub_delegation_depth", 5.into()), sub(SUB_SCOPE)], CAL, SCHED),
        bad("sig.tampered-sub-link", "the second link's scope widened after signing", &[S133, V10], &["Signature", "Tampered"], vec![root(ROOT_SCOPE), with(sub(&["calendar.schedule"]), "scope", json!(["calendar.*"]))], CAL, "calendar.cancel@v1"),
        bad("sig.missing", "the link has no signature", &[S131, S133], &["Signature"], one(without(root(&["task.*"]), "signature")), ASSISTANT, TASK),
        bad("sig.not-base64url", "the signature is not base64url", &[S133], &["Signature"], tamper("signature", "not/base64+url==".into()), ASSISTANT, TASK),
        bad("sig.one-char-changed", "one base64url character of the signature changed", &[S133], &["Signature"], vec![flipped], ASSISTANT, TASK),
    ]
}

fn revocations(ids: &[&str], pairs: Vec<(&str, &str, &str)>) -> Value {
    let pairs: Vec<Value> = pairs
        .into_iter()
        .map(|(from, to, at)| json!({"delegator": addr(from), "delegate": addr(to), "revoked_at": at}))
        .collect();
    json!({"ids": ids, "pairs": pairs})
}

fn revoked(
    id: &str,
    comment: &str,
    flags: &[&str],
    chain: Vec<Value>,
    sender: &str,
    action: &str,
    rev: Value,
) -> Case {
    case(
        id,
        comment,
        &[S133, S134, "v1.0 §12.5"],
        flags,
        chain,
        sender,
        action,
    )
    .input("revocations", rev)
}

#[rustfmt::skip]
fn revocation_cases() -> Vec<Case> {
    let root_id = "dlg_alice_assistant.alice";
    let sub_id = "dlg_assistant.alice_cal.assistant.alice";
    vec![
        revoked("revoked.by-id", "the root link's id is on the revocation list", &["Revoked"], one(root(&["task.*"])), ASSISTANT, TASK, revocations(&[root_id], vec![])).invalid(ERR),
        revoked("revoked.other-id", "only another link is revoked", &["Revoked"], one(root(&["task.*"])), ASSISTANT, TASK, revocations(&["dlg_other"], vec![])).valid(),
        revoked("revoked.sub-link-id", "the second link's id is revoked", &["Revoked"], two(), CAL, SCHED, revocations(&[sub_id], vec![])).invalid(ERR),
        revoked("revoked.pair-after-creation", "delegation.revoked for the pair after the link was made", &["Revoked"], one(root(&["task.*"])), ASSISTANT, TASK, revocations(&[], vec![(ALICE, ASSISTANT, "2026-03-01T10:00:00Z")])).invalid(ERR),
        revoked("revoked.pair-at-creation", "revoked_at equals the link's created_at", &["Revoked", "Interpretation"], one(root(&["task.*"])), ASSISTANT, TASK, revocations(&[], vec![(ALICE, ASSISTANT, CREATED)])).invalid(ERR),
        revoked("revoked.pair-before-creation", "the pair was revoked before this fresh link was made", &["Revoked", "Interpretation"], one(root(&["task.*"])), ASSISTANT, TASK, revocations(&[], vec![(ALICE, ASSISTANT, "2026-02-01T00:00:00Z")])).valid(),
        revoked("revoked.pair-other-delegate", "a revocation of alice → cal does not touch alice → assistant", &["Revoked"], one(root(&["task.*"])), ASSISTANT, TASK, revocations(&[], vec![(ALICE, CAL, "2026-03-01T10:00:00Z")])).valid(),
        revoked("revoked.pair-reversed", "a revocation of assistant → alice does not touch alice → assistant", &["Revoked"], one(root(&["task.*"])), ASSISTANT, TASK, revocations(&[], vec![(ASSISTANT, ALICE, "2026-03-01T10:00:00Z")])).valid(),
        revoked("revoked.pair-sub-link", "the sub-delegation pair is revoked", &["Revoked"], two(), CAL, SCHED, revocations(&[], vec![(ASSISTANT, CAL, "2026-03-01T10:00:00Z")])).invalid(ERR),
    ]
}

#[rustfmt::skip]
fn continuity_cases() -> Vec<Case> {
    vec![
        bad("continuity.broken", "the second link's delegator is not the first link's delegate", &[S133], &["Continuity"], vec![root(ROOT_SCOPE), signed(link(BOB, CAL, SUB_SCOPE))], CAL, SCHED),
        bad("continuity.reversed-order", "links presented leaf first", &[S133], &["Continuity"], vec![sub(SUB_SCOPE), root(ROOT_SCOPE)], CAL, SCHED),
        bad("continuity.leaf-not-sender", "the chain ends at cal but helper sends", &[S133, "v1.1 §13.5"], &["Continuity"], two(), HELPER, SCHED),
        bad("continuity.sender-is-root", "the human root is the sender, not the leaf delegate", &[S133], &["Continuity"], one(root(&["task.*"])), ALICE, TASK),
        bad("continuity.sender-is-middle", "the sender is the middle of the chain", &[S133], &["Continuity"], two(), ASSISTANT, SCHED),
    ]
}

#[rustfmt::skip]
fn subset_cases() -> Vec<Case> {
    vec![
        ok("subset.equal", "the sub-delegation passes the parent scope on unchanged", &[S132, "v1.0 §12.3"], &["Interpretation"], vec![root(SUB_SCOPE), sub(SUB_SCOPE)], CAL, SCHED),
        bad("subset.wider", "the sub-delegation adds task.* to calendar.*", &[S132, V10], &["Subset"], vec![root(SUB_SCOPE), sub(&["calendar.*", "task.*"])], CAL, SCHED),
        bad("subset.sibling", "calendar.* may not sub-delegate task.create", &[S132, "v1.0 §12.3"], &["Subset", "SpecExample"], vec![root(SUB_SCOPE), sub(&["task.create"])], CAL, TASK),
        bad("subset.wildcard-under-exact", "a wildcard under an exact name", &[S132], &["Subset", "Wildcard"], vec![root(&["calendar.schedule"]), sub(&["calendar.*"])], CAL, SCHED),
        bad("subset.segment-boundary", "calendarx.read is outside calendar.*", &[S132], &["Subset", "SegmentBoundary"], vec![root(SUB_SCOPE), sub(&["calendarx.read"])], CAL, "calendarx.read@v1"),
        bad("subset.third-wider-than-second", "the third link is within the root but wider than its parent", &[S132], &["Subset"], vec![root(ROOT_SCOPE), signed(link(ASSISTANT, CAL, LEAF_SCOPE)), subsub(&["calendar.*"])], HELPER, SCHED),
    ]
}

#[rustfmt::skip]
fn sub_delegation_cases() -> Vec<Case> {
    let root_with = |k: &str, v: Value| signed(with(link(ALICE, ASSISTANT, ROOT_SCOPE), k, v));
    let root_without = |k: &str| signed(without(link(ALICE, ASSISTANT, ROOT_SCOPE), k));
    vec![
        bad("subdeleg.forbidden", "the root link says allow_sub_delegation: false", &[S131], &["SubDelegation"], vec![root_with("allow_sub_delegation", false.into()), sub(SUB_SCOPE)], CAL, SCHED),
        bad("subdeleg.absent", "without allow_sub_delegation a link may not be sub-delegated (fail closed)", &[S131], &["SubDelegation", "Interpretation"], vec![root_without("allow_sub_delegation"), sub(SUB_SCOPE)], CAL, SCHED),
        ok("subdeleg.forbidden-on-leaf", "allow_sub_delegation: false on the only link", &[S131], &["SubDelegation"], one(signed(with(link(ALICE, ASSISTANT, &["task.*"]), "allow_sub_delegation", false.into()))), ASSISTANT, TASK),
        bad("subdeleg.middle-forbidden", "the second of three links forbids sub-delegation", &[S131], &["SubDelegation"], vec![root(ROOT_SCOPE), signed(with(link(ASSISTANT, CAL, SUB_SCOPE), "allow_sub_delegation", false.into())), subsub(LEAF_SCOPE)], HELPER, SCHED),
        bad("subdeleg.not-boolean", "allow_sub_delegation must be a boolean", &[S131], &["Shape"], vec![root_with("allow_sub_delegation", "yes".into()), sub(SUB_SCOPE)], CAL, SCHED),
        ok("depth.zero-one-link", "max_sub_delegation_depth 0 on the only link", &[S131], &["Depth", "Interpretation"], one(signed(with(link(ALICE, ASSISTANT, &["task.*"]), "max_sub_delegation_depth", 0.into()))), ASSISTANT, TASK),
        bad("depth.zero-two-links", "max_sub_delegation_depth 0, one sub-delegation follows", &[S131], &["Depth", "Interpretation"], vec![root_with("max_sub_delegation_depth", 0.into()), sub(SUB_SCOPE)], CAL, SCHED),
        ok("depth.one-two-links", "max_sub_delegation_depth 1, one sub-delegation follows", &[S131], &["Depth", "Interpretation"], vec![root_with("max_sub_delegation_depth", 1.into()), sub(SUB_SCOPE)], CAL, SCHED),
        bad("depth.one-three-links", "max_sub_delegation_depth 1, two sub-delegations follow", &[S131], &["Depth", "Interpretation"], vec![root_with("max_sub_delegation_depth", 1.into()), sub(SUB_SCOPE), subsub(LEAF_SCOPE)], HELPER, SCHED),
        ok("depth.two-three-links", "max_sub_delegation_depth 2 (the §13.1 example), two sub-delegations follow", &[S131], &["Depth", "Interpretation"], vec![root(ROOT_SCOPE), sub(SUB_SCOPE), subsub(LEAF_SCOPE)], HELPER, SCHED),
        bad("depth.root-bounds-later", "a later link's larger depth does not lift the root's limit", &[S131], &["Depth", "Interpretation"], vec![root_with("max_sub_delegation_depth", 1.into()), signed(with(link(ASSISTANT, CAL, SUB_SCOPE), "max_sub_delegation_depth", 5.into())), subsub(LEAF_SCOPE)], HELPER, SCHED),
        bad("depth.negative", "max_sub_delegation_depth must be a non-negative integer", &[S131], &["Shape"], vec![root_with("max_sub_delegation_depth", (-1).into()), sub(SUB_SCOPE)], CAL, SCHED),
    ]
}

#[rustfmt::skip]
fn leaf_cases() -> Vec<Case> {
    vec![
        bad("leaf.action-outside", "the action is in no scope of the chain", &[S133, V10], &["LeafScope"], two(), CAL, "thread.resolve@v1"),
        bad("leaf.action-only-in-root", "task.create is in the root scope but not the leaf's", &[S133, V10], &["LeafScope"], two(), CAL, TASK),
        bad("leaf.segment-boundary", "calendarx.read is outside the leaf's calendar.*", &[S133], &["LeafScope", "SegmentBoundary"], two(), CAL, "calendarx.read@v1"),
        ok("leaf.other-version", "an unversioned scope allows every version of the intent", &[S133, S132], &["Interpretation"], one(root(&["task.create"])), ASSISTANT, "task.create@v2"),
    ]
}

#[rustfmt::skip]
fn shape_cases() -> Vec<Case> {
    let scoped = |v: Value| vec![signed(with(link(ALICE, ASSISTANT, &[]), "scope", v))];
    vec![
        bad("shape.link-not-object", "a link is an object", &[S131], &["Shape"], vec![json!("dlg_alice_assistant")], ASSISTANT, TASK),
        bad("shape.scope-empty", "an empty scope delegates nothing", &[S131, S132], &["Shape", "Interpretation"], scoped(json!([])), ASSISTANT, TASK),
        bad("shape.scope-string", "scope is an array of scope strings", &[S131], &["Shape"], scoped("task.*".into()), ASSISTANT, TASK),
        bad("shape.scope-object", "scope is an array (the object form of the existing node's fixture is not v1.1)", &[S131], &["Shape"], scoped(json!({"actions": ["send"]})), ASSISTANT, TASK),
        bad("shape.scope-malformed", "a malformed scope string in the link", &[S132], &["Shape", "Interpretation"], scoped(json!(["Task.*"])), ASSISTANT, TASK),
        bad("shape.delegate-missing", "the link names no delegate", &[S131], &["Shape"], one(signed(without(link(ALICE, ASSISTANT, &["task.*"]), "delegate"))), ASSISTANT, TASK),
        bad("shape.delegator-not-address", "the delegator is not a loom:// address", &[S131, "v1.1 §6.1"], &["Shape"], one(signed(with(link(ALICE, ASSISTANT, &["task.*"]), "delegator", "alice@node.test".into()))), ASSISTANT, TASK),
    ]
}

/// Flags of this file.
#[rustfmt::skip]
const NOTES: &[(&str, &str, &str, &str)] = &[
    ("SpecExample", "Uses the delegation object or scope rule the spec shows.", "spec conformance", "the spec's own example is mishandled"),
    ("RootType", "§13.3 step 4: the root delegator must not be an agent (and `*` needs a human root, §13.2).", "missing root check", "an agent can mint authority for itself or another agent"),
    ("ChainLength", "§13.3 step 3: maxChainLength (default 10) bounds the number of links.", "unbounded chains", "verification cost and authority laundering through long chains"),
    ("CreatedAt", "§13.3 step 5: created_at present, ISO 8601, not more than maxCreatedAtFutureSkewMs ahead.", "missing created_at checks", "post-dated delegations are accepted"),
    ("Expired", "§13.3 step 5: a link whose expires_at is in the past is invalid.", "missing expiry check", "expired authority keeps working"),
    ("Boundary", "The exact instant on either side of a limit.", "off-by-one in time comparisons", "nodes disagree at the boundary"),
    ("Signature", "§13.3 step 5 and §13.3.1: the delegator's Ed25519 signature with the LOOM-DELEGATION-SIG-v1 prefix over the link without signature and signature_context.", "signature verification", "forged or altered delegations are accepted"),
    ("Legacy", "§13.3.1 and §7.3: the unprefixed legacy signature is accepted only without signature_context and only during the migration window.", "legacy fallback", "downgrade to unprefixed signatures, or rejection of legacy links still in their window"),
    ("Tampered", "A signed member changed after signing.", "unsigned members", "an agent widens its own authority"),
    ("Revoked", "§13.4: links revoked by id, or by a delegation.revoked@v1 for the delegator/delegate pair.", "missing revocation check", "revoked agents keep acting"),
    ("Continuity", "Each link's delegator is the previous link's delegate, and the leaf delegate is the sender.", "unchained links", "an agent borrows someone else's delegation"),
    ("Subset", "§13.2: each sub-delegation scope lies within its parent's.", "scope escalation", "a sub-agent gains authority its delegator never had"),
    ("SubDelegation", "§13.1 allow_sub_delegation: a link that does not allow it may not be followed by another.", "ignored allow_sub_delegation", "a delegate re-delegates against the delegator's wish"),
    ("Depth", "§13.1 max_sub_delegation_depth bounds how many links may follow a link.", "ignored depth limit", "chains grow beyond what the delegator allowed"),
    ("LeafScope", "§13.3 step 6: the action lies within the leaf's scope.", "missing leaf scope check", "an agent acts outside its delegation"),
    ("SegmentBoundary", "Scope names match whole dot-separated segments.", "string-prefix matching", "`calendar.*` grants `calendarx.read`"),
    ("Wildcard", "§13.2: `*` is only valid on the root human → agent link.", "wildcard laundering", "a sub-agent holds full authority"),
    ("Shape", "The link is not a §13.1 delegation object (wrong member types, missing members).", "missing shape validation", "undefined behaviour on hostile chains"),
    ("Interpretation", "The spec is silent; the expectation pins loom-protocol's documented reading (delegation.rs, scope.rs): an equal scope counts as a subset; a link without allow_sub_delegation may not be sub-delegated; max_sub_delegation_depth N lets at most N links follow; a pair revocation voids links created at or before revoked_at; absent expires_at never expires; signature_context is outside the signed bytes (as the existing v1.1 node's published vector verifies); an unversioned scope allows every version of an intent; `x.*` does not allow bare `x`; empty or malformed scopes are rejected.", "divergent reading of an underspecified rule", "two nodes disagree on whether the same chain is valid"),
];

fn group_inputs(policy: Value) -> Value {
    json!({"now": NOW, "policy": policy, "identities": directory()})
}

#[rustfmt::skip]
fn policy_cases() -> (Vec<Case>, Vec<Case>, Vec<Case>) {
    let base = || link(ALICE, ASSISTANT, &["task.*"]);
    let closed = vec![
        bad("policy.legacy-closed", "the migration window is closed: legacy signatures are refused", &[S1331, S73], &["Legacy", "Signature"], one(signed_mode(base(), Sig::Legacy)), ASSISTANT, TASK),
        ok("policy.legacy-closed-prefixed", "prefixed signatures still verify with the window closed", &[S1331], &["Signature"], one(signed(base())), ASSISTANT, TASK),
    ];
    let short = vec![
        ok("policy.max-two-two-links", "maxChainLength 2, two links", &[S133], &["ChainLength"], two(), CAL, SCHED),
        bad("policy.max-two-three-links", "maxChainLength 2, three links", &[S133], &["ChainLength"], three(), HELPER, SCHED),
    ];
    let lax = vec![
        ok("policy.agent-root-allowed", "enforceRootDelegatorType off: an agent root delegation stands", &[S133], &["RootType"], one(signed(link(BOT, ASSISTANT, &["task.*"]))), ASSISTANT, TASK),
        bad("policy.agent-root-star", "enforceRootDelegatorType off, but `*` still needs a human root", &[S132], &["RootType", "Wildcard"], one(signed(link(BOT, ASSISTANT, &["*"]))), ASSISTANT, TASK),
    ];
    (closed, short, lax)
}

/// Builds the file.
pub fn build() -> FileBuilder {
    let mut f = FileBuilder::new(
        AREA,
        "Delegation chain verification (v1.1 §13.3 in order: chain length, root delegator type, per-link created_at, expiry, signature, revocation, continuity, subset scopes, sub-delegation permission and depth, leaf = sender, action within the leaf scope).",
    );
    for (flag, d, b, e) in NOTES {
        f = f.note(flag, d, b, e);
    }
    let main: Vec<Case> = [
        valid_chains(),
        root_cases(),
        length_cases(),
        created_cases(),
        expiry_cases(),
        signature_cases(),
        revocation_cases(),
        continuity_cases(),
        subset_cases(),
        sub_delegation_cases(),
        leaf_cases(),
        shape_cases(),
    ]
    .concat();
    let (closed, short, lax) = policy_cases();
    f.group(KIND, group_inputs(policy(10, true, true)))
        .tests(main)
        .group(KIND, group_inputs(policy(10, true, false)))
        .tests(closed)
        .group(KIND, group_inputs(policy(2, true, true)))
        .tests(short)
        .group(KIND, group_inputs(policy(10, false, true)))
        .tests(lax)
}

/// The file's schema.
pub fn schema() -> AreaSchema {
    let address = json!({"type": "string"});
    let ts = json!({"type": "string"});
    AreaSchema {
        kinds: vec![KIND],
        inputs: vec![
            ("now", ts.clone()),
            (
                "policy",
                json!({
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["max_chain_length", "enforce_root_delegator_type", "max_created_at_future_skew_ms", "accept_legacy_signatures"],
                    "properties": {
                        "max_chain_length": {"type": "integer", "minimum": 1},
                        "enforce_root_delegator_type": {"type": "boolean"},
                        "max_created_at_future_skew_ms": {"type": "integer", "minimum": 0},
                        "accept_legacy_signatures": {"type": "boolean"}
                    }
                }),
            ),
            (
                "identities",
                json!({
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["type", "signing_keys"],
                        "properties": {
                            "type": {"enum": ["human", "agent", "team", "service", "bridge"]},
                            "signing_keys": {"type": "object", "additionalProperties": {"type": "string"}}
                        }
                    }
                }),
            ),
            ("chain", json!({"type": "array"})),
            ("sender", address.clone()),
            ("action", json!({"type": "string"})),
            (
                "revocations",
                json!({
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["ids", "pairs"],
                    "properties": {
                        "ids": {"type": "array", "items": {"type": "string"}},
                        "pairs": {"type": "array", "items": {
                            "type": "object",
                            "additionalProperties": false,
                            "required": ["delegator", "delegate", "revoked_at"],
                            "properties": {"delegator": address.clone(), "delegate": address, "revoked_at": ts}
                        }}
                    }
                }),
            ),
        ],
        required: vec![
            "now",
            "policy",
            "identities",
            "chain",
            "sender",
            "action",
            "revocations",
        ],
        expected: json!(true),
        errors: vec![ERR],
    }
}
