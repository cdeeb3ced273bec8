//! Kinds `read-node-document`, `verify-identity-node-signature`, `check-sender-authority`
//! and `federation-policy`.
//!
//! `read-node-document` input: `document`, `node` (the node it was fetched for). Valid
//! output: `{domain, deliver_url, identity_resolve_url, policy, active_keys, inactive_keys,
//! missing}` — `missing` lists the §15.2 items absent under every legal spelling.
//!
//! `verify-identity-node-signature` input: `document` (as `GET {identity_resolve_url}`
//! answered), `home_node` (the node it was fetched from), `node_keys`. Valid output:
//! `{id, signing_keys}` (the active keys the signature covers, by `key_id`).

use super::{case, node_key, sign};
use crate::generate::keys::{public_b64url, public_pem};
use crate::generate::{Case, FileBuilder};
use serde_json::{Map, Value, json};

const S152: &[&str] = &["v1.1 §15.2", "v1.0 §14.2"];
const ALL_MISSING_NONE: [&str; 0] = [];

fn b_doc() -> Value {
    json!({
        "loom": "1.1", "node_id": "b.test", "domain": "b.test",
        "api_url": "https://b.test/v1", "websocket_url": "wss://b.test/ws",
        "federation": {"deliver_url": "https://b.test/v1/federation/deliver", "requirements": ["LOOM-HTTP-SIG-1"], "policy": "open"},
        "signing_keys": [{"key_id": "k_node_sign_b_1", "public_key": public_b64url("fed-node-b-1"), "algorithm": "Ed25519", "status": "active"}],
        "supported_versions": ["1.1"], "supported_profiles": ["loom-core-1"],
    })
}

fn view(
    deliver: &str,
    resolve: &str,
    policy: Option<&str>,
    active: &[&str],
    inactive: Value,
    missing: &[&str],
) -> Value {
    json!({"domain": "b.test", "deliver_url": deliver, "identity_resolve_url": resolve, "policy": policy,
        "active_keys": active, "inactive_keys": inactive, "missing": missing})
}

const DELIVER: &str = "https://b.test/v1/federation/deliver";
const RESOLVE: &str = "https://b.test/v1/identity/{identity}";

fn edit(f: impl FnOnce(&mut Map<String, Value>)) -> Value {
    let mut d = b_doc();
    if let Some(o) = d.as_object_mut() {
        f(o);
    }
    d
}

fn node_documents() -> Vec<Case> {
    let nd = &["NodeDocument"];
    let ok = |id: &str, comment: &str, flags: &[&str], doc: Value, out: Value| {
        case(id, comment, S152, flags)
            .input("document", doc)
            .valid_with(out)
    };
    let existing = json!({
        "loom_version": "1.1", "node_id": "b.test",
        "deliver_url": "http://127.0.0.1:8788/v1/federation/deliver",
        "federation": {"signing_keys": [{"key_id": "k_node_sign_b_1", "public_key_pem": public_pem("fed-node-b-1")}]},
    });
    let rotation = edit(|o| {
        o.insert("signing_keys".into(), json!([
            {"key_id": "k_node_sign_b_0", "public_key": public_b64url("fed-node-b-0"), "status": "retired"},
            {"key_id": "k_node_sign_b_1", "public_key": public_b64url("fed-node-b-1")},
            {"key_id": "k_node_sign_b_x", "public_key": public_b64url("fed-node-b-7"), "status": "revoked"},
        ]));
    });
    let both_places = edit(|o| {
        let keys = o["signing_keys"].clone();
        o["federation"]["signing_keys"] = keys;
    });
    let split = edit(|o| {
        o["federation"]["signing_keys"] =
            json!([{"key_id": "k_node_sign_b_2", "public_key_pem": public_pem("fed-node-b-2")}]);
    });
    let bad_key = edit(|o| {
        o.insert("signing_keys".into(), json!([
            {"key_id": "k_node_sign_b_1", "public_key": public_b64url("fed-node-b-1")},
            {"key_id": "k_node_sign_b_9", "public_key": "not-a-key"},
            {"key_id": "k_node_sign_b_8", "public_key": public_b64url("fed-node-b-8"), "algorithm": "X25519"},
        ]));
    });
    let defaults = json!({"loom": "1.1", "domain": "b.test", "api_url": "https://api.b.test:8443/v1",
        "signing_keys": [{"key_id": "k_node_sign_b_1", "public_key": public_b64url("fed-node-b-1")}]});
    let bare = json!({"domain": "b.test", "signing_keys": [{"key_id": "k_node_sign_b_1", "public_key": public_b64url("fed-node-b-1")}]});
    let v10 = json!({"loom_version": "1.0", "node_id": "node_01JN0000000000000000000000", "domain": "b.test",
        "api_url": "https://b.test/v1", "websocket_url": "wss://b.test/ws",
        "public_keys_url": "https://b.test/.well-known/loom-keys",
        "federation_policy": {"open": false, "allowlist": ["a.test"], "denylist": []}});
    let explicit_resolve = edit(|o| {
        o["federation"]["identity_resolve_url"] = "https://id.b.test/resolve?who={identity}".into();
    });
    let conflict = edit(|o| {
        o["federation"]["signing_keys"] =
            json!([{"key_id": "k_node_sign_b_1", "public_key": public_b64url("fed-node-b-2")}]);
    });
    let existing_missing = [
        "domain",
        "api_url",
        "websocket_url",
        "requirements",
        "supported_versions",
        "supported_profiles",
        "policy",
    ];
    vec![
        ok(
            "node-doc.ours",
            "every §15.2 item: keys at the top level as base64url, federation block with deliver_url, requirements, policy",
            nd,
            b_doc(),
            view(
                DELIVER,
                RESOLVE,
                Some("open"),
                &["k_node_sign_b_1"],
                json!([]),
                &ALL_MISSING_NONE,
            ),
        ),
        ok(
            "node-doc.existing-node-shape",
            "the existing node's shape: loom_version, no domain (node_id names the node), keys under federation as SPKI PEM, deliver_url at the top level; identity resolution defaults to the deliver origin",
            nd,
            existing,
            json!({"domain": "b.test", "deliver_url": "http://127.0.0.1:8788/v1/federation/deliver", "identity_resolve_url": "http://127.0.0.1:8788/v1/identity/{identity}",
                "policy": null, "active_keys": ["k_node_sign_b_1"], "inactive_keys": [], "missing": existing_missing}),
        ),
        ok(
            "node-doc.rotation",
            "three keys: retired, active (no status), revoked; only the active one verifies",
            &["NodeDocument", "KeyRotation"],
            rotation,
            view(
                DELIVER,
                RESOLVE,
                Some("open"),
                &["k_node_sign_b_1"],
                json!([{"key_id": "k_node_sign_b_0", "status": "retired"}, {"key_id": "k_node_sign_b_x", "status": "revoked"}]),
                &ALL_MISSING_NONE,
            ),
        ),
        ok(
            "node-doc.keys-in-both-places",
            "the same key published at the top level and under federation counts once",
            nd,
            both_places,
            view(
                DELIVER,
                RESOLVE,
                Some("open"),
                &["k_node_sign_b_1"],
                json!([]),
                &ALL_MISSING_NONE,
            ),
        ),
        ok(
            "node-doc.keys-split",
            "one key at the top level, another under federation: both are the node's",
            nd,
            split,
            view(
                DELIVER,
                RESOLVE,
                Some("open"),
                &["k_node_sign_b_1", "k_node_sign_b_2"],
                json!([]),
                &ALL_MISSING_NONE,
            ),
        ),
        ok(
            "node-doc.bad-key-skipped",
            "an unparsable key and an X25519 key are skipped; the good key still verifies",
            &["NodeDocument", "Interpretation"],
            bad_key,
            view(
                DELIVER,
                RESOLVE,
                Some("open"),
                &["k_node_sign_b_1"],
                json!([]),
                &ALL_MISSING_NONE,
            ),
        ),
        ok(
            "node-doc.deliver-default-from-api",
            "no deliver_url: §15.4's path on the api_url origin",
            &["NodeDocument", "Interpretation"],
            defaults,
            json!({"domain": "b.test", "deliver_url": "https://api.b.test:8443/v1/federation/deliver", "identity_resolve_url": "https://api.b.test:8443/v1/identity/{identity}",
                "policy": null, "active_keys": ["k_node_sign_b_1"], "inactive_keys": [], "missing": ["node_id", "websocket_url", "deliver_url", "requirements", "supported_versions", "supported_profiles", "policy"]}),
        ),
        ok(
            "node-doc.deliver-default-domain",
            "no deliver_url and no api_url: https://{domain}",
            &["NodeDocument", "Interpretation"],
            bare,
            json!({"domain": "b.test", "deliver_url": "https://b.test/v1/federation/deliver", "identity_resolve_url": RESOLVE,
                "policy": null, "active_keys": ["k_node_sign_b_1"], "inactive_keys": [], "missing": ["node_id", "api_url", "websocket_url", "deliver_url", "requirements", "supported_versions", "supported_profiles", "policy"]}),
        ),
        ok(
            "node-doc.v1.0-shape",
            "v1.0 §14.2: loom_version, node_id distinct from domain, public_keys_url, federation_policy object {open: false} (allowlist)",
            nd,
            v10,
            json!({"domain": "b.test", "deliver_url": DELIVER, "identity_resolve_url": RESOLVE, "policy": "allowlist",
                "active_keys": [], "inactive_keys": [], "missing": ["deliver_url", "requirements", "supported_versions", "supported_profiles"]}),
        ),
        ok(
            "node-doc.explicit-resolve-url",
            "federation.identity_resolve_url is used as given",
            nd,
            explicit_resolve,
            view(
                DELIVER,
                "https://id.b.test/resolve?who={identity}",
                Some("open"),
                &["k_node_sign_b_1"],
                json!([]),
                &ALL_MISSING_NONE,
            ),
        ),
        case(
            "node-doc.fetched-name-case",
            "fetched for B.TEST.: the same node",
            S152,
            &["NodeDocument"],
        )
        .input("document", b_doc())
        .input("node", "B.TEST.")
        .valid_with(view(
            DELIVER,
            RESOLVE,
            Some("open"),
            &["k_node_sign_b_1"],
            json!([]),
            &ALL_MISSING_NONE,
        )),
        case(
            "node-doc.other-node",
            "fetched for c.test but names b.test: its keys must never verify c.test",
            &["v1.1 §15.2", "v1.1 §15.3"],
            &["DocumentIdentity"],
        )
        .input("document", b_doc())
        .input("node", "c.test")
        .invalid("SIGNATURE_INVALID"),
        case(
            "node-doc.key-conflict",
            "k_node_sign_b_1 published twice with different keys",
            S152,
            &["DocumentIdentity"],
        )
        .input("document", conflict)
        .invalid("ENVELOPE_INVALID"),
        case(
            "node-doc.not-object",
            "the document is an array",
            S152,
            &["NodeDocument"],
        )
        .input("document", json!([b_doc()]))
        .invalid("ENVELOPE_INVALID"),
        case(
            "node-doc.no-name",
            "neither domain nor node_id",
            S152,
            &["NodeDocument"],
        )
        .input(
            "document",
            edit(|o| {
                o.remove("domain");
                o.remove("node_id");
            }),
        )
        .invalid("ENVELOPE_INVALID"),
        case(
            "node-doc.bad-domain",
            "domain is not a DNS name",
            S152,
            &["NodeDocument"],
        )
        .input(
            "document",
            edit(|o| {
                o.insert("domain".into(), "b test".into());
            }),
        )
        .invalid("ENVELOPE_INVALID"),
    ]
}

/// JCS of `{loom, id, type, display_name, signing_keys sorted by key_id}`, built here.
fn identity_payload(doc: &Value, keys_member: &str) -> Vec<u8> {
    let mut p = Map::new();
    p.insert("loom".into(), "1.1".into());
    for k in ["id", "type", "display_name"] {
        if let Some(v) = doc.get(k) {
            p.insert(k.into(), v.clone());
        }
    }
    let mut keys: Vec<Value> = doc
        .pointer(keys_member)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    keys.sort_by(|a, b| a["key_id"].as_str().cmp(&b["key_id"].as_str()));
    p.insert("signing_keys".into(), Value::Array(keys));
    loom_protocol::jcs::to_canonical_bytes(&Value::Object(p))
}

/// JCS of the registration form (DESIGN.md §9): `{loom, id, type, display_name,
/// signing_keys as {key_id, public_key_pem} sorted by key_id, encryption_keys?,
/// agent_info?}`, built here.
fn registration_payload(doc: &Value) -> Vec<u8> {
    let mut p = Map::new();
    p.insert("loom".into(), "1.1".into());
    for k in ["id", "type", "display_name"] {
        if let Some(v) = doc.get(k) {
            p.insert(k.into(), v.clone());
        }
    }
    let mut keys: Vec<Value> = doc["signing_keys"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|k| json!({"key_id": k["key_id"], "public_key_pem": k["public_key_pem"]}))
        .collect();
    keys.sort_by(|a, b| a["key_id"].as_str().cmp(&b["key_id"].as_str()));
    p.insert("signing_keys".into(), Value::Array(keys));
    for k in ["encryption_keys", "agent_info"] {
        if let Some(v) = doc.get(k).filter(|v| !v.is_null()) {
            p.insert(k.into(), v.clone());
        }
    }
    loom_protocol::jcs::to_canonical_bytes(&Value::Object(p))
}

/// An agent of b.test as the existing node serves it: PEM keys only, an encryption key and
/// agent_info, no key status.
fn agent() -> Value {
    json!({"id": "loom://helper@b.test", "type": "agent", "display_name": "Helper",
    "signing_keys": [
        {"key_id": "k_sign_helper_2", "public_key_pem": public_pem("fed-helper-2")},
        {"key_id": "k_sign_helper_1", "public_key_pem": public_pem("fed-helper-1")},
    ],
    "encryption_keys": [{"key_id": "k_enc_helper_1", "algorithm": "X25519", "public_key": "bm90LWEta2V5LWJ1dC1jb3ZlcmVkLWJ5LXRoZS1zaWc"}],
    "agent_info": {"provider": "b-labs", "model": "helper-1", "version": "1.0.0"}})
}

fn registration_signed(doc: Value) -> Value {
    let p = registration_payload(&doc);
    node_sign(doc, "", "k_node_sign_b_1", "fed-node-b-1", Some(p))
}

fn bob() -> Value {
    json!({"id": "loom://bob@b.test", "type": "human", "display_name": "Bob", "node": "b.test",
    "signing_keys": [
        {"key_id": "k_sign_bob_2", "public_key_pem": public_pem("fed-bob-2")},
        {"key_id": "k_sign_bob_1", "public_key_pem": public_pem("fed-bob-1"), "status": "revoked"},
    ]})
}

fn node_sign(
    mut doc: Value,
    keys_member: &str,
    key_id: &str,
    key: &str,
    payload: Option<Vec<u8>>,
) -> Value {
    let p = payload.unwrap_or_else(|| identity_payload(&doc, keys_member));
    doc["node_signature"] =
        json!({"algorithm": "Ed25519", "key_id": key_id, "value": sign(key, &p)});
    doc
}

fn signed(doc: Value) -> Value {
    node_sign(
        doc,
        "/signing_keys",
        "k_node_sign_b_1",
        "fed-node-b-1",
        None,
    )
}

fn identities() -> Vec<Case> {
    let ri = &["RemoteIdentity"];
    let spec = &["v1.1 §15.4", "v1.1 §6.2", "v1.1 §5.2"];
    let ok = |id: &str, comment: &str, flags: &[&str], doc: Value, out: Value| {
        case(id, comment, spec, flags)
            .input("document", doc)
            .valid_with(out)
    };
    let bad = |id: &str, comment: &str, flags: &[&str], doc: Value| {
        case(id, comment, spec, flags)
            .input("document", doc)
            .invalid("SIGNATURE_INVALID")
    };
    let spec_shape = json!({"loom": "1.1", "id": "loom://bob@b.test", "type": "human", "display_name": "Bob",
        "public_keys": {"signing": [{"algorithm": "Ed25519", "key_id": "k_sign_bob_2", "public_key": public_b64url("fed-bob-2"), "status": "active"}], "encryption": []}});
    let spec_signed = node_sign(
        spec_shape,
        "/public_keys/signing",
        "k_node_sign_b_1",
        "fed-node-b-1",
        None,
    );
    let mut extra = signed(bob());
    extra["created_at"] = "2026-01-01T00:00:00Z".into();
    extra["capabilities"] = json!(["reply"]);
    let mut no_name = bob();
    if let Some(o) = no_name.as_object_mut() {
        o.remove("display_name");
    }
    let mut no_alg = signed(bob());
    if let Some(s) = no_alg["node_signature"].as_object_mut() {
        s.remove("algorithm");
    }
    let mut tampered_name = signed(bob());
    tampered_name["display_name"] = "Mallory".into();
    let mut swapped = signed(bob());
    swapped["signing_keys"][0]["public_key_pem"] = public_pem("fed-mallory").into();
    let mut added = signed(bob());
    if let Some(a) = added["signing_keys"].as_array_mut() {
        a.push(json!({"key_id": "k_sign_bob_9", "public_key_pem": public_pem("fed-mallory")}));
    }
    let foreign = signed(
        json!({"id": "loom://carol@c.test", "type": "human", "display_name": "Carol",
        "signing_keys": [{"key_id": "k_sign_carol_1", "public_key_pem": public_pem("fed-carol-1")}]}),
    );
    let unsorted = {
        let d = bob();
        let keys = d["signing_keys"].clone();
        let p = loom_protocol::jcs::to_canonical_bytes(
            &json!({"loom": "1.1", "id": d["id"], "type": d["type"], "display_name": d["display_name"], "signing_keys": keys}),
        );
        node_sign(d, "", "k_node_sign_b_1", "fed-node-b-1", Some(p))
    };
    let prefixed = {
        let d = bob();
        let mut p = b"LOOM-ENVELOPE-SIG-v1\0".to_vec();
        p.extend(identity_payload(&d, "/signing_keys"));
        node_sign(d, "", "k_node_sign_b_1", "fed-node-b-1", Some(p))
    };
    let mut unsigned = bob();
    unsigned["node_signature"] = Value::Null;
    let bridged =
        signed(json!({"id": "bridge://bob@b.test", "type": "bridge", "signing_keys": []}));
    let reg = &["RemoteIdentity", "Interpretation"];
    let mut agent_info_changed = registration_signed(agent());
    agent_info_changed["agent_info"]["model"] = "helper-2".into();
    let mut encryption_changed = registration_signed(agent());
    encryption_changed["encryption_keys"][0]["key_id"] = "k_enc_helper_9".into();
    let mut status_added = registration_signed(agent());
    status_added["signing_keys"][1]["status"] = "revoked".into();
    let mut b64_beside = registration_signed(agent());
    b64_beside["signing_keys"][0]["public_key"] = public_b64url("fed-mallory").into();
    b64_beside["signing_keys"][0]["algorithm"] = "Ed25519".into();
    let mut pem_swapped = registration_signed(agent());
    pem_swapped["signing_keys"][0]["public_key_pem"] = public_pem("fed-mallory").into();
    let mut cases = vec![
        ok(
            "identity.registration-form",
            "an agent document as the existing v1.1 node signs it: the registration form covers PEM keys, encryption_keys and agent_info",
            reg,
            registration_signed(agent()),
            json!({"id": "loom://helper@b.test", "signing_keys": ["k_sign_helper_1", "k_sign_helper_2"]}),
        ),
        bad(
            "identity.registration-form.agent-info-changed",
            "agent_info changed after signing: the registration form covers it",
            &["RemoteIdentity", "Tampered", "Interpretation"],
            agent_info_changed,
        ),
        bad(
            "identity.registration-form.encryption-keys-changed",
            "an encryption key id changed after signing: the registration form covers encryption_keys",
            &["RemoteIdentity", "Tampered", "Interpretation"],
            encryption_changed,
        ),
        bad(
            "identity.registration-form.pem-swapped",
            "a signing key's public_key_pem replaced after signing",
            &["RemoteIdentity", "Tampered", "Interpretation"],
            pem_swapped,
        ),
        ok(
            "identity.registration-form.status-narrows",
            "a key marked revoked after signing: status is outside the registration form, so the document still verifies, and the mark takes the key away",
            reg,
            status_added,
            json!({"id": "loom://helper@b.test", "signing_keys": ["k_sign_helper_2"]}),
        ),
        ok(
            "identity.registration-form.unsigned-public-key-ignored",
            "a base64url public_key and an algorithm added beside a signed PEM key after signing: both are outside the registration form, so the document still verifies with the same keys",
            reg,
            b64_beside,
            json!({"id": "loom://helper@b.test", "signing_keys": ["k_sign_helper_1", "k_sign_helper_2"]}),
        ),
    ];
    cases.extend(vec![
        ok(
            "identity.existing-node-shape",
            "the full-key form our older nodes signed: signing_keys with SPKI PEM keys, one revoked; the signature covers both, only the active one is usable",
            ri,
            signed(bob()),
            json!({"id": "loom://bob@b.test", "signing_keys": ["k_sign_bob_2"]}),
        ),
        ok(
            "identity.spec-shape",
            "only §6.2 public_keys.signing: those keys are the signed list",
            &["RemoteIdentity", "Interpretation"],
            spec_signed,
            json!({"id": "loom://bob@b.test", "signing_keys": ["k_sign_bob_2"]}),
        ),
        ok(
            "identity.unsigned-members-free",
            "members outside {loom, id, type, display_name, signing_keys} may change (created_at, capabilities added)",
            ri,
            extra,
            json!({"id": "loom://bob@b.test", "signing_keys": ["k_sign_bob_2"]}),
        ),
        ok(
            "identity.no-display-name",
            "an absent display_name is left out of the payload, not written as null",
            &["RemoteIdentity", "Interpretation"],
            signed(no_name),
            json!({"id": "loom://bob@b.test", "signing_keys": ["k_sign_bob_2"]}),
        ),
        ok(
            "identity.no-algorithm",
            "node_signature without algorithm",
            &["RemoteIdentity", "Interpretation"],
            no_alg,
            json!({"id": "loom://bob@b.test", "signing_keys": ["k_sign_bob_2"]}),
        ),
        bad(
            "identity.tampered.display-name",
            "display_name changed after signing",
            &["RemoteIdentity", "Tampered"],
            tampered_name,
        ),
        bad(
            "identity.tampered.key-swapped",
            "a signing key replaced after signing",
            &["RemoteIdentity", "Tampered"],
            swapped,
        ),
        bad(
            "identity.tampered.key-added",
            "a signing key added after signing",
            &["RemoteIdentity", "Tampered"],
            added,
        ),
        bad(
            "identity.foreign-identity",
            "b.test vouches for carol@c.test: only an identity's home node may",
            &["RemoteIdentity", "SenderAuthority"],
            foreign,
        ),
        bad(
            "identity.bridge-identity",
            "a bridge:// identity has no home node",
            &["RemoteIdentity", "Interpretation"],
            bridged,
        ),
        bad("identity.unsigned", "node_signature is null", ri, unsigned),
        bad(
            "identity.retired-node-key",
            "signed with b.test's retired node key",
            &["RemoteIdentity", "KeyRotation"],
            node_sign(
                bob(),
                "/signing_keys",
                "k_node_sign_b_0",
                "fed-node-b-0",
                None,
            ),
        ),
        bad(
            "identity.unknown-node-key",
            "signed with a key b.test does not publish",
            &["RemoteIdentity", "KeyRotation"],
            node_sign(
                bob(),
                "/signing_keys",
                "k_node_sign_b_5",
                "fed-node-b-5",
                None,
            ),
        ),
        bad(
            "identity.unsorted-keys",
            "signed over signing_keys in document order instead of sorted by key_id",
            &["RemoteIdentity", "Interpretation"],
            unsorted,
        ),
        bad(
            "identity.context-prefixed",
            "signed with an envelope context prefix: the node signature has none",
            &["RemoteIdentity", "Interpretation"],
            prefixed,
        ),
    ]);
    cases
}

fn authority() -> Vec<Case> {
    let spec = &["loom-core-1 §Core 5", "v1.1 §15.4"];
    let t = |id: &str, comment: &str, flags: &[&str], node: &str, from: Value| {
        case(id, comment, spec, flags)
            .input("delivering_node", node)
            .input("envelope", json!({"id": super::E1, "from": from}))
    };
    let sa = &["SenderAuthority"];
    vec![
        t(
            "authority.own",
            "alice@a.test delivered by a.test",
            sa,
            "a.test",
            json!({"identity": "loom://alice@a.test"}),
        )
        .valid(),
        t(
            "authority.own-agent",
            "an agent address of a.test",
            sa,
            "a.test",
            json!({"identity": "loom://research.assistant.alice@a.test"}),
        )
        .valid(),
        t(
            "authority.node-case",
            "the delivering node spelled A.TEST.",
            sa,
            "A.TEST.",
            json!({"identity": "loom://alice@a.test"}),
        )
        .valid(),
        t(
            "authority.foreign",
            "carol@c.test delivered by a.test",
            sa,
            "a.test",
            json!({"identity": "loom://carol@c.test"}),
        )
        .invalid("CAPABILITY_DENIED"),
        t(
            "authority.subdomain-sender",
            "a sender at mail.a.test is not a.test's",
            sa,
            "a.test",
            json!({"identity": "loom://alice@mail.a.test"}),
        )
        .invalid("CAPABILITY_DENIED"),
        t(
            "authority.parent-domain-sender",
            "node mail.a.test delivering for alice@a.test",
            sa,
            "mail.a.test",
            json!({"identity": "loom://alice@a.test"}),
        )
        .invalid("CAPABILITY_DENIED"),
        t(
            "authority.bridge",
            "a bridge:// sender over federation (our reading: no node owns an email domain)",
            &["SenderAuthority", "Interpretation"],
            "a.test",
            json!({"identity": "bridge://alice@a.test"}),
        )
        .invalid("CAPABILITY_DENIED"),
        t(
            "authority.no-from",
            "from.identity is missing",
            sa,
            "a.test",
            json!({"display": "Alice"}),
        )
        .invalid("ENVELOPE_INVALID"),
        t(
            "authority.not-an-address",
            "from.identity is not a LOOM address",
            sa,
            "a.test",
            json!({"identity": "alice@a.test"}),
        )
        .invalid("ENVELOPE_INVALID"),
    ]
}

fn policies() -> Vec<Case> {
    let spec = &["v1.1 §15.2", "v1.1 §23.1", "v1.0 §14.2"];
    let t = |id: &str, comment: &str, flags: &[&str], policy: Value, node: &str| {
        case(id, comment, spec, flags)
            .input("policy", policy)
            .input("node", node)
    };
    let p = &["Policy"];
    let allow = json!({"mode": "allowlist", "allow": ["a.test", "*.corp.test"], "block": ["bad.corp.test"]});
    vec![
        t(
            "policy.open",
            "open: anyone",
            p,
            json!({"mode": "open"}),
            "x.test",
        )
        .valid_with("accept"),
        t(
            "policy.open-blocked",
            "open, but x.test is blocked",
            p,
            json!({"mode": "open", "block": ["x.test"]}),
            "x.test",
        )
        .invalid("CAPABILITY_DENIED"),
        t(
            "policy.block-case",
            "the blocklist compares names case-insensitively",
            p,
            json!({"mode": "open", "block": ["x.test"]}),
            "X.Test.",
        )
        .invalid("CAPABILITY_DENIED"),
        t(
            "policy.allowlist-listed",
            "allowlist lists a.test",
            p,
            allow.clone(),
            "a.test",
        )
        .valid_with("accept"),
        t(
            "policy.allowlist-wildcard",
            "*.corp.test admits eu.corp.test",
            p,
            allow.clone(),
            "eu.corp.test",
        )
        .valid_with("accept"),
        t(
            "policy.allowlist-wildcard-apex",
            "*.corp.test does not admit corp.test itself",
            &["Policy", "Interpretation"],
            allow.clone(),
            "corp.test",
        )
        .invalid("CAPABILITY_DENIED"),
        t(
            "policy.allowlist-suffix-only",
            "*.corp.test does not admit evilcorp.test",
            p,
            allow.clone(),
            "evilcorp.test",
        )
        .invalid("CAPABILITY_DENIED"),
        t(
            "policy.block-beats-allow",
            "bad.corp.test matches the allowlist wildcard and the blocklist: blocked",
            p,
            allow.clone(),
            "bad.corp.test",
        )
        .invalid("CAPABILITY_DENIED"),
        t(
            "policy.allowlist-unlisted",
            "allowlist without b.test",
            p,
            allow,
            "b.test",
        )
        .invalid("CAPABILITY_DENIED"),
        t(
            "policy.quarantine-listed",
            "quarantine mode, a.test listed: accepted",
            p,
            json!({"mode": "quarantine", "allow": ["a.test"]}),
            "a.test",
        )
        .valid_with("accept"),
        t(
            "policy.quarantine-unlisted",
            "quarantine mode, b.test unlisted: accepted into quarantine",
            p,
            json!({"mode": "quarantine", "allow": ["a.test"]}),
            "b.test",
        )
        .valid_with("quarantine"),
    ]
}

fn b_keys() -> Value {
    json!([
        node_key("b.test", "k_node_sign_b_0", "fed-node-b-0", Some("retired")),
        node_key("b.test", "k_node_sign_b_1", "fed-node-b-1", None),
    ])
}

/// Adds the document, authority and policy groups.
pub fn add(f: FileBuilder) -> FileBuilder {
    f.group("read-node-document", json!({"node": "b.test"}))
        .tests(node_documents())
        .group(
            "verify-identity-node-signature",
            json!({"home_node": "b.test", "node_keys": b_keys()}),
        )
        .tests(identities())
        .group("check-sender-authority", Value::Null)
        .tests(authority())
        .group("federation-policy", Value::Null)
        .tests(policies())
}
