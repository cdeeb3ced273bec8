//! Area `capability-token`: authorizing an action with a capability token (v1.1 §12, the
//! grants an operation of §11.2 needs, and the PoP hardening of §12.6; v1.0 §11).
//!
//! Tokens and PoP proofs are signed here independently of `loom-protocol`; every expectation
//! is a literal in the case functions below.

use super::delegation_chain::{addr, sign_raw};
use super::keys::public_b64url;
use super::schema::AreaSchema;
use super::{Case, FileBuilder};
use loom_protocol::jcs::{to_canonical_bytes, to_canonical_bytes_without};
use serde_json::{Value, json};

const AREA: &str = "capability-token";
const KIND: &str = "authorize-capability";
const DENIED: &str = "CAPABILITY_DENIED";
const SIG: &str = "CAPABILITY_DENIED";
const NOW: &str = "2026-03-01T12:00:00Z";
const CAP: &str = "cap_01JMKB7X9Q2RVHF3KN4TYZPG00";
const CAP2: &str = "cap_01JMKB7X9Q2RVHF3KN4TYZPG01";
const SPENT: &str = "cap_01JMKB7X9Q2RVHF3KN4TYZPG02";
const THR: &str = "thr_01JMKB7W8P1QSGF2JM3SXYZR00";
const THR2: &str = "thr_01JMKB7W8P1QSGF2JM3SXYZR01";
const ENV: &str = "env_01JMKB7X9Q2RVHF3KN4TYZPG00";
const ENV2: &str = "env_01JMKB7X9Q2RVHF3KN4TYZPG01";
const POP_TS: &str = "2026-03-01T11:59:00Z";
const POP_CTX: &str = "LOOM-CAPABILITY-POP-v1";

const S121: &str = "v1.1 §12.1";
const S122: &str = "v1.1 §12.2";
const S123: &str = "v1.1 §12.3";
const S124: &str = "v1.1 §12.4";
const S125: &str = "v1.1 §12.5";
const S126: &str = "v1.1 §12.6";
const S112: &str = "v1.1 §11.2";
const V113: &str = "v1.0 §11.3";

/// The token all cases start from: alice (owner) grants bob `reply` on the thread.
fn token() -> Value {
    json!({
        "loom": "1.1",
        "id": CAP,
        "issued_by": addr("alice"),
        "issued_to": addr("bob"),
        "created_at": "2026-03-01T09:00:00Z",
        "expires_at": "2026-06-01T00:00:00Z",
        "single_use": false,
        "epoch": 3,
        "grants": ["reply"],
        "scope": {"thread_id": THR, "envelope_types": ["message", "task", "thread_op"], "max_depth": 50, "max_priority": "normal", "external_domains": "deny"}
    })
}

/// `t` signed by key `key` under `key_id`: Ed25519 over JCS(token − signature), no prefix (§12.1).
fn sign_with(mut t: Value, key_id: &str, key: &str) -> Value {
    t.as_object_mut().map(|o| o.remove("signature"));
    let payload = to_canonical_bytes_without(&t, &["signature"]).unwrap_or_default();
    t["signature"] =
        json!({"algorithm": "Ed25519", "key_id": key_id, "value": sign_raw(key, None, &payload)});
    t
}

/// `t` signed by alice.
fn signed(t: Value) -> Value {
    sign_with(t, "k_sign_alice_1", "alice")
}

/// The base token with member `k` set to `v`, then signed by alice.
fn tok(k: &str, v: Value) -> Value {
    let mut t = token();
    t[k] = v;
    signed(t)
}

/// The base token with `scope.k` set to `v` (or removed when `v` is null), signed.
fn scoped(k: &str, v: Value) -> Value {
    let mut t = token();
    match v {
        Value::Null => {
            t["scope"].as_object_mut().map(|o| o.remove(k));
        }
        v => t["scope"][k] = v,
    }
    signed(t)
}

/// The base token without member `k`, signed.
fn tok_without(k: &str) -> Value {
    let mut t = token();
    t.as_object_mut().map(|o| o.remove(k));
    signed(t)
}

/// The request: bob sends envelope `ENV` of `type` with `intent` (null for none).
fn req(kind: &str, intent: Option<&str>) -> Value {
    json!({"actor": addr("bob"), "envelope_id": ENV, "type": kind, "intent": intent, "priority": "normal", "depth": 3, "pop": null})
}

fn message() -> Value {
    req("message", Some("message.general@v1"))
}

fn op(intent: &str) -> Value {
    req("thread_op", Some(intent))
}

fn with(mut v: Value, k: &str, x: Value) -> Value {
    v[k] = x;
    v
}

/// A PoP proof by key `key` over `(cap, env, signed_ts)`, presented with `shown_ts`.
fn pop(
    key: &str,
    prefix: Option<&str>,
    cap: &str,
    env: &str,
    signed_ts: &str,
    shown_ts: &str,
) -> Value {
    let payload = to_canonical_bytes(
        &json!({"capability_id": cap, "envelope_id": env, "timestamp": signed_ts}),
    );
    json!({"signature": sign_raw(key, prefix, &payload), "timestamp": shown_ts})
}

fn good_pop() -> Value {
    pop("bob-pop", Some(POP_CTX), CAP, ENV, POP_TS, POP_TS)
}

/// An admin token bound to bob's PoP key.
fn bound() -> Value {
    let mut t = token();
    t["grants"] = json!(["admin"]);
    t["cnf"] = json!({"key_id": "k_sign_bob_pop"});
    signed(t)
}

fn case(
    id: &str,
    comment: &str,
    spec: &[&str],
    flags: &[&str],
    token: Value,
    request: Value,
) -> Case {
    Case::new(id, comment, spec)
        .flags(flags)
        .input("token", token)
        .input("request", request)
}

fn spent(b: bool) -> Value {
    json!({"mark_spent": b})
}

#[rustfmt::skip]
fn basic_cases() -> Vec<Case> {
    vec![
        case("valid.reply", "bob's reply token authorizes a message", &[S121, S122, S124], &[], signed(token()), message()).valid_with(spent(false)),
        case("valid.no-expiry", "expires_at null: no expiry", &[S121], &[], tok("expires_at", Value::Null), message()).valid_with(spent(false)),
        case("valid.no-single-use-member", "single_use absent means reusable", &[S121], &["Interpretation"], tok_without("single_use"), message()).valid_with(spent(false)),
        case("thread.other", "the token is scoped to another thread", &[S121], &["Binding"], scoped("thread_id", THR2.into()), message()).invalid(DENIED),
        case("holder.other", "the token was issued to carol, bob presents it", &[S121], &["Binding"], tok("issued_to", addr("carol").into()), message()).invalid(DENIED),
        case("holder.issuer-presents", "the issuer presents a token issued to bob", &[S121], &["Binding"], signed(token()), with(message(), "actor", addr("alice").into())).invalid(DENIED),
        case("expiry.at-now", "expires_at equal to now: still valid", &[S121, V113], &["Boundary", "Interpretation"], tok("expires_at", NOW.into()), message()).valid_with(spent(false)),
        case("expiry.one-ms-past", "expired 1 ms before now", &[S121, V113], &["Expired", "Boundary"], tok("expires_at", "2026-03-01T11:59:59.999Z".into()), message()).invalid(DENIED),
        case("expiry.long-past", "expired a month ago", &[S121, V113], &["Expired"], tok("expires_at", "2026-02-01T00:00:00Z".into()), message()).invalid(DENIED),
        case("expiry.malformed", "expires_at is not ISO 8601", &[S121], &["Malformed"], tok("expires_at", "next week".into()), message()).invalid(DENIED),
        case("epoch.lower", "token epoch 2, thread cap_epoch 3", &[S123], &["Epoch"], tok("epoch", 2.into()), message()).invalid(DENIED),
        case("epoch.higher", "token epoch 4, thread cap_epoch 3", &[S123], &["Epoch"], tok("epoch", 4.into()), message()).invalid(DENIED),
        case("epoch.missing", "tokens MUST carry epoch", &[S123], &["Epoch"], tok_without("epoch"), message()).invalid(DENIED),
        case("epoch.string", "epoch is a number", &[S123], &["Epoch", "Malformed"], tok("epoch", "3".into()), message()).invalid(DENIED),
        case("revoked.listed", "the token id is on the thread's revocation list", &[S123], &["Revoked"], tok("id", CAP2.into()), message()).invalid(DENIED),
        case("single-use.reusable-listed-spent", "spent bookkeeping only concerns single-use tokens", &[S125], &["SingleUse"], signed(with(token(), "id", SPENT.into())), message()).valid_with(spent(false)),
        case("single-use.first", "a fresh single-use token is accepted and must now be marked spent", &[S125], &["SingleUse"], tok("single_use", true.into()), message()).valid_with(spent(true)),
        case("single-use.spent", "the single-use token was already spent", &[S125], &["SingleUse"], signed(with(with(token(), "single_use", true.into()), "id", SPENT.into())), message()).invalid(DENIED),
    ]
}

#[rustfmt::skip]
fn signature_cases() -> Vec<Case> {
    let mut tampered = signed(token());
    tampered["grants"] = json!(["admin"]);
    let mut wrong_alg = signed(token());
    wrong_alg["signature"]["algorithm"] = "RS256".into();
    vec![
        case("sig.tampered-grants", "grants widened to admin after signing", &[S121], &["Signature", "Interpretation"], tampered, op("thread.lock@v1")).invalid(SIG),
        case("sig.tampered-epoch", "epoch changed after signing", &[S121], &["Signature", "Interpretation"], with(signed(tok("epoch", 2.into())), "epoch", 3.into()), message()).invalid(SIG),
        case("sig.tampered-holder", "issued_to changed to bob after signing for carol", &[S121], &["Signature", "Interpretation"], with(tok("issued_to", addr("carol").into()), "issued_to", addr("bob").into()), message()).invalid(SIG),
        case("sig.wrong-key", "alice's key_id, bob's key", &[S121], &["Signature", "Interpretation"], sign_with(token(), "k_sign_alice_1", "bob"), message()).invalid(SIG),
        case("sig.unknown-key-id", "key_id names no key of the issuer", &[S121], &["Signature", "Interpretation"], sign_with(token(), "k_sign_alice_9", "alice"), message()).invalid(SIG),
        case("sig.missing", "the token is not signed", &[S121], &["Signature", "Interpretation"], token(), message()).invalid(SIG),
        case("sig.algorithm", "signature.algorithm is not Ed25519", &[S121], &["Signature", "Interpretation"], wrong_alg, message()).invalid(SIG),
        case("sig.second-issuer-key", "signed with alice's second key", &[S121], &["Signature"], sign_with(token(), "k_sign_alice_2", "alice-2"), message()).valid_with(spent(false)),
        case("issuer.no-authority", "carol signs a token for the thread but is neither owner nor admin", &[S121, V113], &["Issuer"], sign_with(with(token(), "issued_by", addr("carol").into()), "k_sign_carol_1", "carol"), message()).invalid(DENIED),
        case("issuer.admin-participant", "dave holds admin on the thread and may issue", &[V113], &["Issuer"], sign_with(with(token(), "issued_by", addr("dave").into()), "k_sign_dave_1", "dave"), message()).valid_with(spent(false)),
    ]
}

/// (intent, grant it needs, whether the §11.2 → §12.2 mapping is a reading of the names).
const OPS: &[(&str, &str, bool)] = &[
    ("thread.add_participant@v1", "add_participant", false),
    ("thread.remove_participant@v1", "remove_participant", false),
    ("thread.resolve@v1", "resolve", false),
    ("thread.archive@v1", "archive", false),
    ("thread.lock@v1", "lock", false),
    ("thread.delegate@v1", "delegate", false),
    ("thread.fork@v1", "fork", false),
    ("thread.merge@v1", "merge", false),
    ("thread.update@v1", "label", true),
    ("thread.link@v1", "forward", true),
];

fn op_name(intent: &str) -> &str {
    intent.trim_start_matches("thread.").trim_end_matches("@v1")
}

fn grant_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (intent, grant, reading) in OPS {
        let flags: &[&str] = if *reading {
            &["Grant", "Interpretation"]
        } else {
            &["Grant"]
        };
        let name = op_name(intent);
        out.push(
            case(
                &format!("grant.{name}.exact"),
                &format!("{intent} needs the {grant} grant"),
                &[S112, S122],
                flags,
                tok("grants", json!([grant])),
                op(intent),
            )
            .valid_with(spent(false)),
        );
        out.push(
            case(
                &format!("grant.{name}.reply-only"),
                &format!("{intent} is not covered by reply"),
                &[S112, S122],
                flags,
                signed(token()),
                op(intent),
            )
            .invalid(DENIED),
        );
    }
    out.extend(more_grant_cases());
    out
}

#[rustfmt::skip]
fn more_grant_cases() -> Vec<Case> {
    vec![
        case("grant.admin-superset", "admin covers lock", &[S122], &["Grant"], tok("grants", json!(["admin"])), op("thread.lock@v1")).valid_with(spent(false)),
        case("grant.admin-covers-reply", "admin covers sending a message", &[S122], &["Grant"], tok("grants", json!(["admin"])), message()).valid_with(spent(false)),
        case("grant.read-cannot-reply", "read does not allow sending", &[S122], &["Grant"], tok("grants", json!(["read"])), message()).invalid(DENIED),
        case("grant.reopen-needs-admin", "thread.reopen@v1 has no grant of its own: admin is needed", &[S112, S122], &["Grant", "Interpretation"], tok("grants", json!(["resolve"])), op("thread.reopen@v1")).invalid(DENIED),
        case("grant.reopen-admin", "admin may reopen", &[S112, S122], &["Grant", "Interpretation"], tok("grants", json!(["admin"])), op("thread.reopen@v1")).valid_with(spent(false)),
        case("grant.unknown", "a grant outside the §12.2 registry: §12.2 lists the grants but never says an unknown one voids the token; our reading refuses it (fail closed)", &[S122], &["Grant", "Malformed", "Interpretation"], tok("grants", json!(["reply", "superuser"])), message()).invalid(DENIED),
        case("grant.empty", "no grants at all", &[S121], &["Grant", "Malformed"], tok("grants", json!([])), message()).invalid(DENIED),
        case("grant.several", "the needed grant is the second of several", &[S122], &["Grant"], tok("grants", json!(["reply", "lock"])), op("thread.lock@v1")).valid_with(spent(false)),
    ]
}

#[rustfmt::skip]
fn scope_cases() -> Vec<Case> {
    vec![
        case("scope.type-outside", "envelope_types does not list receipt", &[S121], &["ScopeLimit"], signed(token()), req("receipt", None)).invalid(DENIED),
        case("scope.types-absent", "no envelope_types: any type", &[S121], &["ScopeLimit"], scoped("envelope_types", Value::Null), req("receipt", None)).valid_with(spent(false)),
        case("scope.depth-at-max", "depth equal to max_depth", &[S121], &["ScopeLimit", "Boundary"], signed(token()), with(message(), "depth", 50.into())).valid_with(spent(false)),
        case("scope.depth-over-max", "depth one above max_depth", &[S121], &["ScopeLimit", "Boundary"], signed(token()), with(message(), "depth", 51.into())).invalid(DENIED),
        case("scope.priority-high", "high is above max_priority normal", &[S121], &["ScopeLimit"], signed(token()), with(message(), "priority", "high".into())).invalid(DENIED),
        case("scope.priority-urgent", "urgent is above max_priority normal", &[S121], &["ScopeLimit"], signed(token()), with(message(), "priority", "urgent".into())).invalid(DENIED),
        case("scope.priority-low", "low is within max_priority normal", &[S121], &["ScopeLimit"], signed(token()), with(message(), "priority", "low".into())).valid_with(spent(false)),
        case("scope.priority-urgent-max", "max_priority urgent allows urgent", &[S121], &["ScopeLimit"], scoped("max_priority", "urgent".into()), with(message(), "priority", "urgent".into())).valid_with(spent(false)),
        case("scope.thread-missing", "scope names no thread", &[S121], &["Malformed"], scoped("thread_id", Value::Null), message()).invalid(DENIED),
    ]
}

const SENSITIVE: [&str; 4] = [
    "delegation.revoked@v1",
    "encryption.epoch@v1",
    "encryption.rotate@v1",
    "capability.revoked@v1",
];

fn pop_cases() -> Vec<Case> {
    let mut out: Vec<Case> = SENSITIVE
        .iter()
        .map(|intent| {
            case(
                &format!("pop.missing.{}", intent.trim_end_matches("@v1")),
                &format!("{intent} with a cnf-bound token and no PoP"),
                &[S126],
                &["PoP"],
                bound(),
                op(intent),
            )
            .invalid(DENIED)
        })
        .collect();
    out.extend(more_pop_cases());
    out
}

#[rustfmt::skip]
fn more_pop_cases() -> Vec<Case> {
    let revoke = || op("capability.revoked@v1");
    let proof = |p: Value| with(revoke(), "pop", p);
    vec![
        case("pop.valid", "a valid PoP by the cnf key over this envelope", &[S126], &["PoP"], bound(), proof(good_pop())).valid_with(spent(false)),
        case("pop.wrong-key", "PoP signed by bob's ordinary key, not the cnf key", &[S126], &["PoP"], bound(), proof(pop("bob", Some(POP_CTX), CAP, ENV, POP_TS, POP_TS))).invalid(DENIED),
        case("pop.other-envelope", "PoP bound to another envelope id", &[S126], &["PoP"], bound(), proof(pop("bob-pop", Some(POP_CTX), CAP, ENV2, POP_TS, POP_TS))).invalid(DENIED),
        case("pop.other-capability", "PoP over another capability id", &[S126], &["PoP"], bound(), proof(pop("bob-pop", Some(POP_CTX), CAP2, ENV, POP_TS, POP_TS))).invalid(DENIED),
        case("pop.timestamp-mismatch", "the presented timestamp differs from the signed one", &[S126], &["PoP"], bound(), proof(pop("bob-pop", Some(POP_CTX), CAP, ENV, POP_TS, "2026-03-01T11:59:30Z"))).invalid(DENIED),
        case("pop.unprefixed", "PoP signed without the LOOM-CAPABILITY-POP-v1 prefix", &[S126], &["PoP"], bound(), proof(pop("bob-pop", None, CAP, ENV, POP_TS, POP_TS))).invalid(DENIED),
        case("pop.delegation-context", "PoP signed under the delegation context", &[S126], &["PoP"], bound(), proof(pop("bob-pop", Some("LOOM-DELEGATION-SIG-v1"), CAP, ENV, POP_TS, POP_TS))).invalid(DENIED),
        case("pop.not-needed-unbound", "a token without cnf needs no PoP even for a sensitive intent", &[S126], &["PoP"], tok("grants", json!(["admin"])), revoke()).valid_with(spent(false)),
        case("pop.not-needed-intent", "a non-sensitive intent needs no PoP even with cnf", &[S126], &["PoP"], bound(), op("thread.lock@v1")).valid_with(spent(false)),
        case("pop.cnf-unknown-key", "cnf.key_id names no key of the holder", &[S126], &["PoP"], { let mut t = bound(); t["cnf"] = json!({"key_id": "k_sign_bob_9"}); signed(t) }, proof(good_pop())).invalid(DENIED),
        case("pop.cnf-malformed", "cnf without key_id: §12.6 asks for proof of possession only when cnf.key_id is present; our reading refuses a cnf that names no key rather than ignoring the binding", &[S126], &["PoP", "Malformed", "Interpretation"], { let mut t = bound(); t["cnf"] = json!({"kid": "k_sign_bob_pop"}); signed(t) }, proof(good_pop())).invalid(DENIED),
    ]
}

/// Flags of this file.
const NOTES: &[(&str, &str, &str, &str)] = &[
    (
        "Binding",
        "§12.1: the token is bound to scope.thread_id and to issued_to (the actor presenting it).",
        "missing binding check",
        "a token for one thread or holder works for another",
    ),
    (
        "Expired",
        "§12.1 expires_at / v1.0 §11.3: a token past expires_at is invalid.",
        "missing expiry check",
        "expired authority keeps working",
    ),
    (
        "Boundary",
        "The exact value on either side of a limit.",
        "off-by-one",
        "nodes disagree at the boundary",
    ),
    (
        "Epoch",
        "§12.3: nodes MUST reject tokens whose epoch differs from the thread's cap_epoch.",
        "missing epoch check",
        "tokens survive a revocation",
    ),
    (
        "Revoked",
        "§12.3: a revoked token id is refused.",
        "missing revocation check",
        "revoked tokens keep working",
    ),
    (
        "SingleUse",
        "§12.5: a single-use token is spent on its first successful use (output mark_spent) and refused afterwards.",
        "replayable single-use tokens",
        "one-time authority is used many times",
    ),
    (
        "Signature",
        "The issuer's Ed25519 signature over JCS(token without signature) (§12 intro: signed and verifiable offline).",
        "unsigned or unchecked tokens",
        "anyone can mint or widen a token",
    ),
    (
        "Issuer",
        "v1.0 §11.3 Creation: only the thread owner or an admin participant may issue tokens for the thread.",
        "self-issued tokens",
        "anyone can sign a token granting themselves admin",
    ),
    (
        "Grant",
        "§12.2 grants (admin is a superset) and the grant each §11.2 operation needs.",
        "grant confusion",
        "an action runs without the grant it needs",
    ),
    (
        "ScopeLimit",
        "§12.1 scope limits: envelope_types, max_depth, max_priority.",
        "ignored scope limits",
        "a token is used beyond its limits",
    ),
    (
        "PoP",
        "§12.6: for a token with cnf.key_id, the sensitive intents need a PoP signature with LOOM-CAPABILITY-POP-v1 over {capability_id, envelope_id, timestamp}.",
        "missing or weak PoP check",
        "a stolen bearer token is replayed",
    ),
    (
        "Malformed",
        "A member of the token has the wrong type or is missing.",
        "missing shape validation",
        "undefined behaviour on hostile tokens",
    ),
    (
        "Interpretation",
        "The spec is silent; the expectation pins loom-protocol's documented reading (capability.rs): a token whose signature fails is CAPABILITY_DENIED (missing or invalid capability, v1.1 §24.2, as §12.6 does for a failed PoP) rather than SIGNATURE_INVALID, which stays the envelope's own signature; expires_at is inclusive as for delegations; absent single_use is false; thread.update@v1 needs label, thread.link@v1 needs forward, and operations without a grant of their own (reopen) need admin.",
        "divergent reading of an underspecified rule",
        "two nodes disagree on the same token",
    ),
];

fn identities() -> Value {
    let mut dir = serde_json::Map::new();
    for (local, keys) in [
        (
            "alice",
            vec![("k_sign_alice_1", "alice"), ("k_sign_alice_2", "alice-2")],
        ),
        (
            "bob",
            vec![("k_sign_bob_1", "bob"), ("k_sign_bob_pop", "bob-pop")],
        ),
        ("carol", vec![("k_sign_carol_1", "carol")]),
        ("dave", vec![("k_sign_dave_1", "dave")]),
    ] {
        let keys: serde_json::Map<String, Value> = keys
            .into_iter()
            .map(|(k, n)| (k.to_owned(), public_b64url(n).into()))
            .collect();
        dir.insert(addr(local), json!({"signing_keys": keys}));
    }
    Value::Object(dir)
}

fn thread() -> Value {
    json!({"id": THR, "cap_epoch": 3, "issuers": [addr("alice"), addr("dave")], "revoked": [CAP2], "spent": [SPENT]})
}

/// Builds the file.
pub fn build() -> FileBuilder {
    let mut f = FileBuilder::new(
        AREA,
        "Authorizing an action with a capability token: issuer signature and authority, thread and holder binding, expiry, epoch, revocation, single use, grants, scope limits and proof-of-possession (v1.1 §12, §11.2; v1.0 §11).",
    );
    for (flag, d, b, e) in NOTES {
        f = f.note(flag, d, b, e);
    }
    let cases = [
        basic_cases(),
        signature_cases(),
        grant_cases(),
        scope_cases(),
        pop_cases(),
    ]
    .concat();
    f.group(
        KIND,
        json!({"now": NOW, "identities": identities(), "thread": thread()}),
    )
    .tests(cases)
}

/// The file's schema.
pub fn schema() -> AreaSchema {
    let strings = json!({"type": "array", "items": {"type": "string"}});
    AreaSchema {
        kinds: vec![KIND],
        inputs: vec![
            ("now", json!({"type": "string"})),
            (
                "identities",
                json!({
                    "type": "object",
                    "additionalProperties": {
                        "type": "object", "additionalProperties": false, "required": ["signing_keys"],
                        "properties": {"signing_keys": {"type": "object", "additionalProperties": {"type": "string"}}}
                    }
                }),
            ),
            (
                "thread",
                json!({
                    "type": "object", "additionalProperties": false,
                    "required": ["id", "cap_epoch", "issuers", "revoked", "spent"],
                    "properties": {"id": {"type": "string"}, "cap_epoch": {"type": "integer", "minimum": 0}, "issuers": strings, "revoked": strings, "spent": strings}
                }),
            ),
            ("token", json!(true)),
            (
                "request",
                json!({
                    "type": "object", "additionalProperties": false,
                    "required": ["actor", "envelope_id", "type", "intent", "priority", "depth", "pop"],
                    "properties": {
                        "actor": {"type": "string"}, "envelope_id": {"type": "string"}, "type": {"type": "string"},
                        "intent": {"type": ["string", "null"]},
                        "priority": {"enum": ["low", "normal", "high", "urgent"]},
                        "depth": {"type": ["integer", "null"], "minimum": 0},
                        "pop": {"oneOf": [{"type": "null"}, {"type": "object", "additionalProperties": false, "required": ["signature", "timestamp"], "properties": {"signature": {"type": "string"}, "timestamp": {"type": "string"}}}]}
                    }
                }),
            ),
        ],
        required: vec!["now", "identities", "thread", "token", "request"],
        expected: json!({"type": "object", "additionalProperties": false, "required": ["mark_spent"], "properties": {"mark_spent": {"type": "boolean"}}}),
        errors: vec![DENIED],
    }
}
