//! Area `identity-document`: the members an identity document must (and must not) carry
//! because of its type (v1.1 §6.3 table, §6.4; v1.0 §6.3, §6.4). Kind `identity-type-members`,
//! input `{type, document, now, delegator_keys?}`.
//!
//! An agent names its `delegator`, describes itself in `agent_info` and carries a bounded,
//! signed delegation (`delegation_scope`, `delegation_expires`, `delegation_signature`); a team
//! carries `members` and a `routing_policy`; a service names its `operator`. Where the spec is
//! silent the expectations pin `loom_protocol::identity_profile`'s documented reading (flag
//! `Interpretation`): the signature is the delegator's Ed25519 signature, with the §13.3.1
//! context, over JCS(`{delegator, delegate, scope, expires_at}`); "bounded" is a non-empty
//! list of §13.2 scopes and an expiry after `now`; members of another type are refused.
//!
//! Signatures are made here from the documents (addresses in canonical lowercase, §6.1)
//! independently of `loom-protocol`; every expectation is a literal in a case function below.

use super::delegation_chain::{addr, sign_raw};
use super::keys::public_b64url;
use super::schema::AreaSchema;
use super::{Case, FileBuilder};
use loom_protocol::jcs::to_canonical_bytes;
use serde_json::{Value, json};

const AREA: &str = "identity-document";
const KIND: &str = "identity-type-members";
const INVALID: &str = "ENVELOPE_INVALID";
const SIG_INVALID: &str = "SIGNATURE_INVALID";
const NOW: &str = "2026-03-01T12:00:00Z";
const EXPIRES: &str = "2026-06-01T00:00:00Z";
const CTX: &str = "LOOM-DELEGATION-SIG-v1";
const SIG: &str = "delegation_signature";

const S61: &str = "v1.1 §6.1";
const S63: &str = "v1.1 §6.3";
const S64: &str = "v1.1 §6.4";
const S131: &str = "v1.1 §13.1";
const S132: &str = "v1.1 §13.2";
const S133: &str = "v1.1 §13.3";
const S1331: &str = "v1.1 §13.3.1";
const V63: &str = "v1.0 §6.3";
const V64: &str = "v1.0 §6.4";

/// The §6.4 example scope.
const SCOPE: [&str; 4] = ["read.*", "reply.routine", "task.create", "calendar.*"];

fn agent_id() -> String {
    addr("assistant.alice")
}

/// The §6.4 example agent, unsigned: alice delegates the example scope to assistant.alice.
fn base() -> Value {
    json!({
        "id": agent_id(),
        "display_name": "Alice's Assistant",
        "delegator": addr("alice"),
        "agent_info": {"provider": "example", "model": "model-1", "version": "2026.02"},
        "delegation_scope": SCOPE,
        "delegation_expires": EXPIRES,
    })
}

/// A string member in canonical lowercase (§6.1); other values as they are.
fn lower(v: &Value) -> Value {
    v.as_str()
        .map_or_else(|| v.clone(), |s| Value::from(s.to_lowercase()))
}

/// The signed payload: JCS of `{delegator, delegate, scope, expires_at}`.
fn payload(delegator: &Value, delegate: &Value, scope: &Value, expires: &Value) -> Vec<u8> {
    to_canonical_bytes(&json!({
        "delegator": lower(delegator),
        "delegate": lower(delegate),
        "scope": scope,
        "expires_at": expires,
    }))
}

/// The payload of `doc`'s own delegation.
fn own_payload(doc: &Value) -> Vec<u8> {
    payload(
        &doc["delegator"],
        &doc["id"],
        &doc["delegation_scope"],
        &doc["delegation_expires"],
    )
}

/// `doc` with `delegation_signature` by key `key` under `prefix` over `bytes`.
fn with_sig(mut doc: Value, key: &str, prefix: Option<&str>, bytes: &[u8]) -> Value {
    doc[SIG] = sign_raw(key, prefix, bytes).into();
    doc
}

/// `doc` signed by alice as the rules say.
fn signed(doc: Value) -> Value {
    let bytes = own_payload(&doc);
    with_sig(doc, "alice", Some(CTX), &bytes)
}

/// `doc` signed by key `key` (prefixed) over its own delegation.
fn signed_by(doc: Value, key: &str) -> Value {
    let bytes = own_payload(&doc);
    with_sig(doc, key, Some(CTX), &bytes)
}

/// The complete signed example agent.
fn agent() -> Value {
    signed(base())
}

/// `doc` with member `k` set to `v`.
fn set(mut doc: Value, k: &str, v: Value) -> Value {
    doc[k] = v;
    doc
}

/// `doc` without member `k`.
fn without(mut doc: Value, k: &str) -> Value {
    doc.as_object_mut().map(|o| o.remove(k));
    doc
}

/// The base agent with `k` set to `v`, then signed (only the rule under test is broken).
fn agent_with(k: &str, v: Value) -> Value {
    signed(set(base(), k, v))
}

/// What a valid agent document publishes.
fn published(doc: &Value, delegator: &str) -> Value {
    json!({
        "delegator": delegator,
        "agent_info": doc["agent_info"],
        "delegation_scope": doc["delegation_scope"],
        "delegation_expires": doc["delegation_expires"],
        "delegation_signature": doc[SIG],
    })
}

/// A test of `doc`.
fn t(id: &str, comment: &str, spec: &[&str], flags: &[&str], doc: Value) -> Case {
    Case::new(id, comment, spec)
        .flags(flags)
        .input("document", doc)
}

/// Base64url public keys of the named keys.
fn keys(names: &[&str]) -> Value {
    names
        .iter()
        .map(|n| Value::from(public_b64url(n)))
        .collect()
}

/// An agent case whose valid output is the document's members with delegator `delegator`.
fn agent_ok(id: &str, comment: &str, spec: &[&str], flags: &[&str], doc: Value) -> Case {
    let delegator = lower(&doc["delegator"]);
    let out = published(&doc, delegator.as_str().unwrap_or_default());
    t(id, comment, spec, flags, doc).valid_with(out)
}

/// An ENVELOPE_INVALID case at `path`.
fn bad(id: &str, comment: &str, spec: &[&str], flags: &[&str], doc: Value, path: &str) -> Case {
    t(id, comment, spec, flags, doc).invalid_at(INVALID, path)
}

/// A SIGNATURE_INVALID case.
fn bad_sig(id: &str, comment: &str, spec: &[&str], flags: &[&str], doc: Value) -> Case {
    t(id, comment, spec, flags, doc).invalid_at(SIG_INVALID, SIG)
}

#[rustfmt::skip]
fn agent_valid_cases() -> Vec<Case> {
    let star = agent_with("delegation_scope", json!(["*", "read.*", "task.create"]));
    vec![
        agent_ok("agent.complete", "the §6.4 example agent, signed by its delegator", &[S64, V64], &["SpecExample"], agent()),
        agent_ok("agent.scope.star", "several scopes including `*` (alice is a human: the root human→agent delegation)", &[S64, S132], &[], star),
        agent_ok("agent.scope.single", "one scope is a bounded scope", &[S64, S132], &[], agent_with("delegation_scope", json!(["task.create"]))),
        agent_ok("agent.scope.deep", "deeper names and a deep wildcard are §13.2 scopes", &[S132], &[], agent_with("delegation_scope", json!(["calendar.events.*", "x_y-2.z9"]))),
        agent_ok("agent.info.empty", "agent_info {} is an object", &[S64], &["Interpretation"], agent_with("agent_info", json!({}))),
        agent_ok("agent.delegator.mixed-case", "delegator in mixed case: compared case-insensitively, published lowercase, signed in canonical form", &[S61, S64], &["Canonical", "Interpretation"], agent_with("delegator", json!("loom://Alice@Node.TEST"))),
        agent_ok("agent.expires.just-after-now", "delegation_expires 1 ms after now: still in the future", &[S64], &["Boundary", "Interpretation"], agent_with("delegation_expires", json!("2026-03-01T12:00:00.001Z"))),
        agent_ok("agent.expires.at-now", "delegation_expires equal to now is not in the past: the same reading as a §13.3 delegation link's expires_at", &[S64, S133], &["Boundary", "Interpretation"], agent_with("delegation_expires", json!(NOW))),
        agent_ok("agent.expires.offset", "delegation_expires with a UTC offset; published (and signed) as written", &[S64], &["Interpretation"], agent_with("delegation_expires", json!("2026-06-01T02:00:00+02:00"))),
        agent_ok("agent.other-members", "members outside the type rules (display_name, public_keys, capabilities) are not type members", &[S64], &[], signed(set(set(base(), "public_keys", json!({"signing": [], "encryption": []})), "capabilities", json!(["send", "receive", "reply"])))),
    ]
}

#[rustfmt::skip]
fn agent_missing_cases() -> Vec<Case> {
    let miss = |m: &str| {
        let doc = without(agent(), m);
        bad(&format!("agent.missing.{}", m.replace('_', "-")), &format!("no {m}"), &[S63, S64, V64], &["MissingMember"], doc, m)
    };
    let mut v: Vec<Case> = ["delegator", "agent_info", "delegation_scope", "delegation_expires", SIG].into_iter().map(miss).collect();
    v.push(bad("agent.null.delegator", "delegator null names no delegator", &[S63, S64], &["MissingMember"], agent_with("delegator", Value::Null), "delegator"));
    v.push(bad("agent.null.delegation-signature", "delegation_signature null is no signature", &[S64, V64], &["MissingMember"], set(agent(), SIG, Value::Null), SIG));
    v
}

#[rustfmt::skip]
fn agent_type_cases() -> Vec<Case> {
    vec![
        bad("agent.type.delegator-number", "delegator is a number", &[S61, S64], &["WrongType"], agent_with("delegator", json!(7)), "delegator"),
        bad("agent.type.delegator-object", "delegator is an object, not an address", &[S61, S64], &["WrongType"], agent_with("delegator", json!({"id": addr("alice")})), "delegator"),
        bad("agent.type.delegator-name", "delegator is a name, not a LOOM address", &[S61, S64], &["WrongType", "BadAddress"], agent_with("delegator", json!("Alice")), "delegator"),
        bad("agent.type.delegator-no-scheme", "delegator without the loom:// scheme", &[S61, S64], &["BadAddress"], agent_with("delegator", json!("alice@node.test")), "delegator"),
        bad("agent.type.delegator-bad-local", "delegator local part breaks [a-z0-9][a-z0-9._-]{0,63}", &[S61, S64], &["BadAddress"], agent_with("delegator", json!("loom://_alice@node.test")), "delegator"),
        bad("agent.type.info-string", "agent_info is a string", &[S64], &["WrongType"], agent_with("agent_info", json!("model-1")), "agent_info"),
        bad("agent.type.info-array", "agent_info is an array", &[S64], &["WrongType"], agent_with("agent_info", json!(["example", "model-1"])), "agent_info"),
        bad("agent.type.scope-string", "delegation_scope is one string, not a list", &[S64, S132], &["WrongType"], agent_with("delegation_scope", json!("read.*")), "delegation_scope"),
        bad("agent.type.scope-object", "delegation_scope is an object", &[S64, S132], &["WrongType"], agent_with("delegation_scope", json!({"read": true})), "delegation_scope"),
        bad("agent.type.scope-item-number", "the second scope is a number", &[S132], &["WrongType"], agent_with("delegation_scope", json!(["read.*", 7])), "delegation_scope[1]"),
        bad("agent.type.scope-item-null", "the third scope is null", &[S132], &["WrongType"], agent_with("delegation_scope", json!(["read.*", "task.create", null])), "delegation_scope[2]"),
        bad("agent.type.expires-number", "delegation_expires is a number", &[S64], &["WrongType"], agent_with("delegation_expires", json!(1_780_272_000)), "delegation_expires"),
        bad("agent.type.expires-prose", "delegation_expires is not an RFC 3339 time", &[S64], &["WrongType"], agent_with("delegation_expires", json!("June 2026")), "delegation_expires"),
        bad("agent.type.expires-date-only", "delegation_expires is a date without a time", &[S64], &["WrongType"], agent_with("delegation_expires", json!("2026-06-01")), "delegation_expires"),
        bad("agent.type.signature-number", "delegation_signature is a number", &[S64, V64], &["WrongType"], set(agent(), SIG, json!(42)), SIG),
    ]
}

#[rustfmt::skip]
const BAD_SCOPES: &[(&str, &str, &str)] = &[
    ("empty-string", "", "the empty string names nothing"),
    ("leading-dot", ".read", "empty first segment"),
    ("trailing-dot", "read.", "empty last segment"),
    ("double-dot", "read..thread", "empty middle segment"),
    ("wildcard-first", "*.read", "a wildcard may only be the last segment"),
    ("wildcard-middle", "calendar.*.read", "a wildcard may only be the last segment"),
    ("partial-wildcard", "calendar.sched*", "a wildcard is a whole segment"),
    ("uppercase", "Calendar.read", "names are lowercase"),
    ("space", "calendar read", "spaces are not part of a name"),
    ("versioned", "task.create@v1", "a scope names actions without an intent version"),
    ("slash", "calendar/read", "segments are separated by dots only"),
];

#[rustfmt::skip]
fn agent_scope_cases() -> Vec<Case> {
    let mut v = vec![bad("agent.scope.empty", "an empty scope list bounds nothing", &[S63, S64], &["Unbounded", "Interpretation"], agent_with("delegation_scope", json!([])), "delegation_scope")];
    v.extend(BAD_SCOPES.iter().map(|(id, scope, why)| {
        let flags: &[&str] = if matches!(*id, "uppercase" | "versioned") { &["ScopeSyntax", "Interpretation"] } else { &["ScopeSyntax"] };
        let doc = agent_with("delegation_scope", json!(["read.*", scope]));
        bad(&format!("agent.scope.{id}"), &format!("second scope {scope:?}: {why}"), &[S132, S64], flags, doc, "delegation_scope[1]")
    }));
    v
}

#[rustfmt::skip]
fn agent_expiry_cases() -> Vec<Case> {
    vec![
        bad("agent.expires.past", "the delegation expired a month ago", &[S64, S133], &["Unbounded"], agent_with("delegation_expires", json!("2026-02-01T00:00:00Z")), "delegation_expires"),
        bad("agent.expires.just-before-now", "delegation_expires 1 ms before now", &[S64, S133], &["Unbounded", "Boundary"], agent_with("delegation_expires", json!("2026-03-01T11:59:59.999Z")), "delegation_expires"),

    ]
}

#[rustfmt::skip]
fn agent_self_cases() -> Vec<Case> {
    vec![
        bad("agent.self.same", "the agent names itself as delegator", &[S64, S63], &["SelfDelegation"], agent_with("delegator", json!(agent_id())), "delegator"),
        bad("agent.self.mixed-case", "the agent names itself in another case spelling (§6.1: case-insensitive)", &[S64, S61], &["SelfDelegation", "Canonical"], agent_with("delegator", json!("loom://Assistant.ALICE@node.test")), "delegator"),
        bad("agent.self.domain-case", "the agent names itself with its domain in upper case", &[S64, S61], &["SelfDelegation", "Canonical"], agent_with("delegator", json!("loom://assistant.alice@NODE.test")), "delegator"),
    ]
}

/// 64 bytes of base64url that no key made (no more checks than the form).
fn zero_sig() -> String {
    "A".repeat(86)
}

#[rustfmt::skip]
fn agent_signature_cases() -> Vec<Case> {
    let good = agent()[SIG].as_str().unwrap_or_default().to_owned();
    let b = base();
    let other_scope = json!(["read.*", "reply.routine"]);
    let reordered = json!(["calendar.*", "task.create", "reply.routine", "read.*"]);
    let over = |delegator: &str, delegate: &str, scope: &Value, expires: &str| {
        with_sig(b.clone(), "alice", Some(CTX), &payload(&json!(delegator), &json!(delegate), scope, &json!(expires)))
    };
    let scope = json!(SCOPE);
    vec![
        bad("sig.form.not-base64url", "delegation_signature is not base64url", &[S64, S1331], &["BadSignature"], set(agent(), SIG, json!("not a signature!")), SIG),
        bad("sig.form.standard-base64", "standard base64 (`+`, `/`) is not base64url", &[S64, S1331], &["BadSignature"], set(agent(), SIG, json!(format!("{}+/", &good[..84]))), SIG),
        bad("sig.form.empty", "delegation_signature is empty", &[S64, S1331], &["BadSignature"], set(agent(), SIG, json!("")), SIG),
        bad("sig.form.short", "63 bytes: one byte short of an Ed25519 signature", &[S64, S1331], &["BadSignature"], set(agent(), SIG, json!("A".repeat(84))), SIG),
        bad("sig.form.long", "65 bytes: one byte too many", &[S64, S1331], &["BadSignature"], set(agent(), SIG, json!("A".repeat(87))), SIG),
        bad_sig("sig.zero", "64 bytes of the right form that no key made", &[S64, V64], &["BadSignature"], set(agent(), SIG, json!(zero_sig()))),
        bad_sig("sig.other-key", "signed by bob, not by the delegator alice", &[S64, V64], &["BadSignature"], signed_by(base(), "bob")),
        bad_sig("sig.tampered.scope", "scope widened after signing", &[S64, V64], &["Tampered"], over(&addr("alice"), &agent_id(), &other_scope, EXPIRES)),
        bad_sig("sig.tampered.scope-order", "the scope list is signed in another order (JCS keeps array order)", &[S64, S131], &["Tampered"], over(&addr("alice"), &agent_id(), &reordered, EXPIRES)),
        bad_sig("sig.tampered.expires", "delegation_expires extended after signing", &[S64, V64], &["Tampered"], over(&addr("alice"), &agent_id(), &scope, "2026-04-01T00:00:00Z")),
        bad_sig("sig.tampered.delegate", "the signature delegates to another agent", &[S64, S131], &["Tampered"], over(&addr("alice"), &addr("helper.alice"), &scope, EXPIRES)),
        bad_sig("sig.tampered.delegator", "alice's key signed a delegation naming bob as delegator", &[S64, S131], &["Tampered"], over(&addr("bob"), &agent_id(), &scope, EXPIRES)),
        bad_sig("sig.legacy-unprefixed", "legacy signature without the LOOM-DELEGATION-SIG-v1 prefix: a registration is new, and new signatures MUST be prefixed", &[S1331, "v1.1 §7.3"], &["Legacy", "Interpretation"], with_sig(base(), "alice", None, &own_payload(&base()))),
        bad_sig("sig.envelope-context", "signed under the envelope context, not the delegation context", &[S1331], &["BadSignature"], with_sig(base(), "alice", Some("LOOM-ENVELOPE-SIG-v1"), &own_payload(&base()))),
    ]
}

/// Agent cases where the delegator's key is known (`delegator_keys` = alice's key).
fn agent_cases() -> Vec<Case> {
    [
        agent_valid_cases(),
        agent_missing_cases(),
        agent_type_cases(),
        agent_scope_cases(),
        agent_expiry_cases(),
        agent_self_cases(),
        agent_signature_cases(),
    ]
    .concat()
}

/// Agent cases with a remote delegator (no keys) or their own list of keys.
#[rustfmt::skip]
fn agent_key_cases() -> Vec<Case> {
    let legacy = with_sig(base(), "alice", None, &own_payload(&base()));
    vec![
        agent_ok("remote.complete", "remote delegator: the complete agent", &[S64], &["Interpretation"], agent()),
        agent_ok("remote.other-key", "remote delegator: only the signature's form is checked, so bob's signature passes", &[S64], &["Interpretation"], signed_by(base(), "bob")),
        agent_ok("remote.legacy-unprefixed", "remote delegator: an unprefixed signature has the right form", &[S64], &["Legacy", "Interpretation"], legacy),
        bad("remote.form.short", "remote delegator: a malformed signature is still refused", &[S64], &["BadSignature"], set(agent(), SIG, json!("A".repeat(84))), SIG),
        bad("remote.expired", "remote delegator: an expired delegation is still refused", &[S64], &["Unbounded"], agent_with("delegation_expires", json!("2026-02-01T00:00:00Z")), "delegation_expires"),
        agent_ok("keys.rotated", "the delegator has two keys; the second verifies", &[S64, V64], &[], agent()).input("delegator_keys", keys(&["alice-2", "alice"])),
        agent_ok("keys.second-key-signed", "signed by the delegator's other active key", &[S64, V64], &[], signed_by(base(), "alice-2")).input("delegator_keys", keys(&["alice", "alice-2"])),
        bad_sig("keys.none-verifies", "none of the delegator's keys made the signature", &[S64, V64], &["BadSignature"], agent()).input("delegator_keys", keys(&["alice-2", "bob"])),
        bad_sig("keys.signer-not-listed", "signed by bob, while only alice's key is listed", &[S64, V64], &["BadSignature"], signed_by(base(), "bob")).input("delegator_keys", keys(&["alice"])),
    ]
}

/// A valid team with `members` and `routing_policy`.
fn team(members: Value, policy: Value) -> Value {
    json!({"id": addr("support"), "display_name": "Support", "members": members, "routing_policy": policy})
}

fn two() -> Value {
    json!([addr("alice"), addr("bob")])
}

fn team_ok(id: &str, comment: &str, flags: &[&str], doc: Value, out: Value) -> Case {
    t(id, comment, &[S63], flags, doc).valid_with(out)
}

#[rustfmt::skip]
fn team_cases() -> Vec<Case> {
    let rr = json!("round_robin");
    let obj = json!({"strategy": "all", "escalate_after_minutes": 30});
    let out = |m: Value, p: &Value| json!({"members": m, "routing_policy": p});
    let bad_t = |id: &str, comment: &str, flags: &[&str], doc: Value, path: &str| bad(id, comment, &[S63, V63], flags, doc, path);
    vec![
        team_ok("team.complete", "members and a routing policy string", &[], team(two(), rr.clone()), out(two(), &rr)),
        team_ok("team.policy-object", "a routing policy object is kept as given", &["Interpretation"], team(two(), obj.clone()), out(two(), &obj)),
        team_ok("team.members.mixed-case", "member addresses are published lowercase", &["Canonical"], team(json!(["loom://Alice@Node.test", addr("bob")]), rr.clone()), out(two(), &rr)),
        team_ok("team.members.empty", "an empty members list is a list (a team may start empty)", &["Interpretation"], team(json!([]), rr.clone()), out(json!([]), &rr)),
        bad_t("team.members.missing", "no members list", &["MissingMember"], without(team(two(), rr.clone()), "members"), "members"),
        bad_t("team.members.null", "members null is no list", &["MissingMember"], team(Value::Null, rr.clone()), "members"),
        bad_t("team.members.string", "members is one address, not a list", &["WrongType"], team(json!(addr("alice")), rr.clone()), "members"),
        bad_t("team.members.object", "members is an object", &["WrongType"], team(json!({"alice": addr("alice")}), rr.clone()), "members"),
        bad_t("team.members.bad-address", "the second member is not a LOOM address", &["BadAddress"], team(json!([addr("alice"), "bob@node.test"]), rr.clone()), "members[1]"),
        bad_t("team.members.number", "the first member is a number", &["WrongType"], team(json!([7, addr("bob")]), rr.clone()), "members[0]"),
        bad_t("team.members.with-role", "a member given as {address, role} (v1.0 wording) is not an address (v1.1 §6.3 reading)", &["WrongType", "Interpretation"], team(json!([{"address": addr("alice"), "role": "lead"}]), rr.clone()), "members[0]"),
        bad_t("team.members.duplicate", "the same member listed twice", &["Duplicate", "Interpretation"], team(json!([addr("alice"), addr("bob"), addr("alice")]), rr.clone()), "members[2]"),
        bad_t("team.members.duplicate-case", "two members differing only in case are the same address (§6.1)", &["Duplicate", "Canonical", "Interpretation"], team(json!([addr("bob"), "loom://BOB@node.test"]), rr.clone()), "members[1]"),
        bad_t("team.policy.missing", "no routing policy", &["MissingMember"], without(team(two(), rr.clone()), "routing_policy"), "routing_policy"),
        bad_t("team.policy.empty-string", "routing_policy \"\" names no policy", &["WrongType", "Interpretation"], team(two(), json!("")), "routing_policy"),
        bad_t("team.policy.blank", "routing_policy of spaces names no policy", &["WrongType", "Interpretation"], team(two(), json!("   ")), "routing_policy"),
        bad_t("team.policy.empty-object", "routing_policy {} states no policy", &["WrongType", "Interpretation"], team(two(), json!({})), "routing_policy"),
        bad_t("team.policy.number", "routing_policy is a number", &["WrongType", "Interpretation"], team(two(), json!(1)), "routing_policy"),
        bad_t("team.policy.array", "routing_policy is an array", &["WrongType", "Interpretation"], team(two(), json!(["all"])), "routing_policy"),
        bad_t("team.policy.boolean", "routing_policy is a boolean", &["WrongType", "Interpretation"], team(two(), json!(true)), "routing_policy"),
    ]
}

fn service(operator: Value) -> Value {
    json!({"id": addr("ci-bot"), "display_name": "CI bot", "operator": operator})
}

#[rustfmt::skip]
fn service_cases() -> Vec<Case> {
    let ok = |id: &str, comment: &str, flags: &[&str], op: Value, out: &str| t(id, comment, &[S63, V63], flags, service(op)).valid_with(json!({"operator": out}));
    let bad_s = |id: &str, comment: &str, flags: &[&str], doc: Value| bad(id, comment, &[S63, V63], flags, doc, "operator");
    vec![
        ok("service.operator.name", "an organisation named in prose", &[], json!("Acme Ltd"), "Acme Ltd"),
        ok("service.operator.person", "a person named in prose", &[], json!("Alice Example"), "Alice Example"),
        ok("service.operator.address", "a LOOM address of the accountable human", &[], json!(addr("alice")), &addr("alice")),
        ok("service.operator.address-mixed-case", "a loom:// operator in mixed case is published lowercase", &["Canonical", "Interpretation"], json!("loom://Alice@Node.TEST"), &addr("alice")),
        bad_s("service.operator.missing", "no operator", &["MissingMember"], without(service(json!("x")), "operator")),
        bad_s("service.operator.null", "operator null names nobody", &["MissingMember"], service(Value::Null)),
        bad_s("service.operator.empty", "operator \"\" names nobody", &["WrongType"], service(json!(""))),
        bad_s("service.operator.blank", "operator of spaces names nobody", &["WrongType", "Interpretation"], service(json!("   "))),
        bad_s("service.operator.number", "operator is a number", &["WrongType"], service(json!(42))),
        bad_s("service.operator.object", "operator is an object", &["WrongType", "Interpretation"], service(json!({"name": "Acme Ltd"}))),
        bad_s("service.operator.bad-address", "a loom:// operator that is no LOOM address (no domain)", &["BadAddress", "Interpretation"], service(json!("loom://alice"))),
        bad_s("service.operator.bad-local", "a loom:// operator whose local part breaks §6.1", &["BadAddress", "Interpretation"], service(json!("loom://al ice@node.test"))),
    ]
}

/// Type `ty`, document `doc`: a cross-type case.
fn typed(id: &str, comment: &str, spec: &[&str], flags: &[&str], ty: &str, doc: Value) -> Case {
    Case::new(id, comment, spec)
        .flags(flags)
        .input("type", ty)
        .input("document", doc)
}

#[rustfmt::skip]
fn cross_type_cases() -> Vec<Case> {
    let human = || json!({"id": addr("alice"), "display_name": "Alice"});
    let foreign = |id: &str, ty: &str, member: &str, v: Value, spec: &[&str]| {
        typed(id, &format!("{member} under type {ty:?}: only another type carries it"), spec, &["ForeignMember", "Interpretation"], ty, set(human(), member, v)).invalid_at(INVALID, member)
    };
    let a = agent();
    vec![
        typed("human.plain", "a human document has no type members", &[S63], &[], "human", human()).valid_with(json!({})),
        typed("human.null-member", "operator null under a human is no member", &[S63], &["Interpretation"], "human", set(human(), "operator", Value::Null)).valid_with(json!({})),
        typed("node.plain", "a node identity has no type members", &[S63], &[], "node", json!({"id": addr("node")})).valid_with(json!({})),
        foreign("human.agent.delegator", "human", "delegator", json!(addr("bob")), &[S64, V63]),
        foreign("human.agent.delegation-scope", "human", "delegation_scope", json!(SCOPE), &[S64, V63]),
        foreign("human.agent.agent-info", "human", "agent_info", a["agent_info"].clone(), &[S64, V63]),
        foreign("human.agent.delegation-expires", "human", "delegation_expires", json!(EXPIRES), &[S64, V63]),
        foreign("human.agent.delegation-signature", "human", SIG, a[SIG].clone(), &[S64, V63]),
        foreign("human.team.members", "human", "members", two(), &[S63]),
        foreign("human.team.routing-policy", "human", "routing_policy", json!("all"), &[S63]),
        foreign("human.service.operator", "human", "operator", json!("Acme Ltd"), &[S63]),
        foreign("team.agent.delegator", "team", "delegator", json!(addr("bob")), &[S64, S63]),
        foreign("team.service.operator", "team", "operator", json!("Acme Ltd"), &[S63]),
        foreign("service.agent.delegation-signature", "service", SIG, a[SIG].clone(), &[S64, S63]),
        foreign("service.team.routing-policy", "service", "routing_policy", json!("all"), &[S63]),
        foreign("bridge.agent.delegator", "bridge", "delegator", json!(addr("bob")), &[S64, S63]),
        typed("agent.service.operator", "operator under type \"agent\": a service member", &[S63], &["ForeignMember", "Interpretation"], "agent", set(a.clone(), "operator", json!("Acme Ltd"))).invalid_at(INVALID, "operator"),
        typed("agent.team.members", "members under type \"agent\": a team member", &[S63], &["ForeignMember", "Interpretation"], "agent", set(a, "members", two())).invalid_at(INVALID, "members"),
    ]
}

#[rustfmt::skip]
const NOTES: &[(&str, &str, &str, &str)] = &[
    ("SpecExample", "The §6.4 example agent document.", "basic", "a node refuses the spec's own example"),
    ("MissingMember", "v1.1 §6.3/§6.4: a member the type requires is absent (or null).", "missing required-member check", "agents without an accountable delegator, teams without members, services without an operator"),
    ("WrongType", "A type member has the wrong JSON type or form (agent_info an object, delegation_scope an array of strings, delegation_expires an RFC 3339 time, members an array, routing_policy a non-empty string or object, operator a non-empty string).", "missing type check", "clients that read the document crash or misread it"),
    ("BadAddress", "v1.1 §6.1: a delegator, member or loom:// operator that is not a LOOM address.", "missing address check", "documents naming identities that cannot exist"),
    ("Unbounded", "v1.1 §6.3 \"bounded scope\": an empty scope list or a delegation whose delegation_expires is not after now.", "missing bound check", "agents with no or expired authority get registered"),
    ("ScopeSyntax", "v1.1 §13.2: a delegation scope that is not a dot-separated name, optionally ending in `*`, or `*` alone.", "missing scope syntax check", "scopes that match unpredictably across implementations"),
    ("SelfDelegation", "An agent naming itself (in any case spelling, §6.1) as its delegator.", "missing self-delegation check", "an agent is accountable to nobody"),
    ("BadSignature", "delegation_signature malformed (not base64url of 64 bytes) or not made by any of the delegator's keys under the delegation context.", "missing or wrong signature check", "anyone can claim to act for a delegator"),
    ("Tampered", "A genuine delegator signature over a delegation other than the one the document states (scope, order, expiry, delegate, delegator).", "signature over the wrong payload", "a delegation is widened or transplanted without the delegator"),
    ("Legacy", "v1.1 §13.3.1/§7.3: a signature without the LOOM-DELEGATION-SIG-v1 context prefix.", "legacy fallback misuse", "domain separation is bypassed"),
    ("ForeignMember", "A member that belongs to another identity type (§6.3 table); a document carrying it must say that type (§6.4 \"Agents MUST set type agent\").", "missing type-member exclusivity check", "agent fields hidden under type human spoof accountability"),
    ("Duplicate", "A team member listed twice (addresses compare case-insensitively, §6.1).", "missing duplicate check", "routing delivers twice"),
    ("Canonical", "v1.1 §6.1: addresses compare case-insensitively and are published in canonical lowercase.", "case-sensitive comparison or non-canonical output", "the same identity is two identities"),
    ("Boundary", "The expiry boundary, one millisecond on each side of now and exactly now.", "off-by-one in time comparison", "delegations live a moment too long or die too early"),
    ("Interpretation", "The spec is silent; the expectation pins loom_protocol::identity_profile's documented reading (module doc; node README \"Identity documents by type\"): the signature is the delegator's Ed25519 signature with the §13.3.1 context over JCS({delegator, delegate, scope, expires_at}) with canonical addresses and expires_at as written, verified only when the delegator's keys are known (a remote delegator: form only) and never by the legacy unprefixed fallback (a registration is new, §7.3 'New implementations MUST always produce context-prefixed signatures'); bounded = non-empty scope list and expiry strictly after now; agent_info any object; members an array of distinct LOOM addresses (possibly empty); routing_policy a non-empty (non-blank) string or non-empty object; operator a non-blank string, canonicalized when it starts with loom://; a null member is absent; members of another type are refused.", "divergent reading of an underspecified rule", "two nodes disagree on whether the same registration is valid"),
];

/// Builds the file.
pub fn build() -> FileBuilder {
    let mut f = FileBuilder::new(
        AREA,
        "The members an identity document carries because of its type: agent delegator, agent_info and signed bounded delegation; team members and routing policy; service operator; none under other types (v1.1 §6.3, §6.4, §13.1-§13.3.1; v1.0 §6.3, §6.4).",
    );
    for (flag, d, b, e) in NOTES {
        f = f.note(flag, d, b, e);
    }
    f.group(
        KIND,
        json!({"type": "agent", "now": NOW, "delegator_keys": keys(&["alice"])}),
    )
    .tests(agent_cases())
    .group(KIND, json!({"type": "agent", "now": NOW}))
    .tests(agent_key_cases())
    .group(KIND, json!({"type": "team", "now": NOW}))
    .tests(team_cases())
    .group(KIND, json!({"type": "service", "now": NOW}))
    .tests(service_cases())
    .group(KIND, json!({"now": NOW}))
    .tests(cross_type_cases())
}

/// The file's schema.
pub fn schema() -> AreaSchema {
    let string = json!({"type": "string"});
    AreaSchema {
        kinds: vec![KIND],
        inputs: vec![
            (
                "type",
                json!({"enum": ["human", "agent", "team", "service", "bridge", "node"]}),
            ),
            (
                "document",
                json!({"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}),
            ),
            ("now", string.clone()),
            (
                "delegator_keys",
                json!({"type": "array", "minItems": 1, "items": {"type": "string"}}),
            ),
        ],
        required: vec!["type", "document", "now"],
        expected: json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "delegator": string, "agent_info": {"type": "object"},
                "delegation_scope": {"type": "array", "items": {"type": "string"}},
                "delegation_expires": string, "delegation_signature": string,
                "members": {"type": "array", "items": {"type": "string"}},
                "routing_policy": {"type": ["string", "object"]},
                "operator": string
            }
        }),
        errors: vec![INVALID, SIG_INVALID],
    }
}
