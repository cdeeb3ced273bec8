//! Every legal variant really makes its choice: against the node under each variant's shim,
//! one request shows the changed behaviour (the shape, code or refusal the variant describes),
//! so a variant the catalogue passes is not a no-op that proves nothing.

use loom_client::{Client, Identity, Transcript};
use loom_conformance::ctx::provision::registration_request;
use loom_conformance::variants::{self, Variant};
use loom_protocol::clock::{Clock, SystemClock};
use loom_protocol::keys::sign_b64url;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A client of the node under `v`, and its domain.
async fn node(v: &'static Variant) -> (loom_conformance::target::Embedded, Client, String) {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let (embedded, info) = variants::start(v, clock, 3)
        .await
        .expect("the variant starts");
    let client = Client::tcp(&embedded.url).expect("client");
    (embedded, client, info.domain.clone())
}

async fn call(
    c: &mut Client,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &Value,
) -> Transcript {
    let bytes = (!body.is_null()).then(|| serde_json::to_vec(body).expect("json"));
    c.exchange(method, path, &[], bytes, token)
        .await
        .expect("exchange")
}

fn json(t: &Transcript) -> Value {
    t.json().unwrap_or(Value::Null)
}

fn code(t: &Transcript) -> String {
    json(t)["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Registers `name` (PEM trimmed, with `extra` members) and logs it in; returns the identity
/// and its access token.
async fn session(
    c: &mut Client,
    domain: &str,
    name: &str,
    extra: &Map<String, Value>,
) -> (Identity, String) {
    let mut seed = [7u8; 32];
    for (i, b) in name.bytes().enumerate() {
        seed[i % 32] ^= b;
    }
    let id = Identity::from_seed(&format!("loom://{name}@{domain}"), &seed).expect("identity");
    let ch = call(
        c,
        "POST",
        "/v1/identity/challenge",
        None,
        &json!({"identity": id.address(), "key_id": id.key_id()}),
    )
    .await;
    let ch = json(&ch);
    let req = registration_request(
        &id,
        extra,
        ch["challenge_id"].as_str().unwrap_or_default(),
        ch["nonce"].as_str().unwrap_or_default(),
    );
    let t = call(c, "POST", "/v1/identity", None, &req).await;
    assert!(t.is_success(), "registration of {name}: {t}");
    let ch = json(
        &call(
            c,
            "POST",
            "/v1/auth/challenge",
            None,
            &json!({"identity": id.address(), "key_id": id.key_id()}),
        )
        .await,
    );
    let cid = ch["challenge_id"]
        .as_str()
        .or(ch["challenge"].as_str())
        .unwrap_or_default()
        .to_owned();
    let sig = sign_b64url(
        id.signing_key(),
        None,
        ch["nonce"].as_str().unwrap_or_default().as_bytes(),
    );
    let t = call(c, "POST", "/v1/auth/token", None, &json!({"identity": id.address(), "key_id": id.key_id(), "challenge_id": cid, "challenge": cid, "signature": sig})).await;
    assert!(t.is_success(), "login of {name}: {t}");
    let token = json(&t)["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (id, token)
}

/// A signed message from `from` to `to` in a fresh thread.
fn message(from: &Identity, to: &Identity, n: u8) -> Value {
    let mut env = json!({
        "loom": "1.1",
        "id": format!("env_01J0000000000000000000000{n}"),
        "thread_id": format!("thr_01J0000000000000000000000{n}"),
        "parent_id": null,
        "type": "message",
        "from": from.from_object(),
        "to": [{"identity": to.address(), "role": "primary"}],
        "created_at": "2026-01-01T00:00:00Z",
        "content": {"human": {"text": "hello", "format": "plaintext"}, "encrypted": false},
    });
    from.sign(&mut env).expect("signed");
    env
}

/// `env` delivered by `peer` in a signed wrapper to the node `c` talks to.
async fn deliver(
    c: &mut Client,
    peer: &loom_conformance::peer::PeerNode,
    env: Value,
) -> Transcript {
    let body = serde_json::to_vec(&peer.wrapper(vec![env], peer.now())).expect("json");
    let path = loom_protocol::federation::wrapper::DELIVER_PATH;
    let h = peer.sign("POST", path, &body, peer.now(), &peer.active_key(), None);
    let mut pairs = h.all_pairs();
    pairs.push(("content-type", "application/json"));
    c.exchange("POST", path, &pairs, Some(body), None)
        .await
        .expect("exchange")
}

/// What the node under `v` does differently, observed in one or two requests.
async fn witness(v: &'static Variant) {
    let (_node, mut c, domain) = node(v).await;
    let none = Map::new();
    let doc = |t: &Transcript| json(t);
    match v.name {
        "node-document-federation-keys" => {
            let d = doc(&call(&mut c, "GET", "/.well-known/loom.json", None, &Value::Null).await);
            assert!(
                d["signing_keys"].is_null() && d["federation"]["signing_keys"].is_array(),
                "{d}"
            );
        }
        "node-document-flat-federation" => {
            let d = doc(&call(&mut c, "GET", "/.well-known/loom.json", None, &Value::Null).await);
            assert!(
                d["federation"].is_null() && d["deliver_url"].is_string(),
                "{d}"
            );
        }
        "node-document-loom-version" => {
            let d = doc(&call(&mut c, "GET", "/.well-known/loom.json", None, &Value::Null).await);
            assert!(
                d["supported_versions"].is_null() && d["loom_version"] == "1.1",
                "{d}"
            );
        }
        "delegation-link-context-signed" => {
            // A link stored by its delegator: refused when its signature leaves
            // signature_context out, stored when it covers it.
            let (alice, token) = session(&mut c, &domain, "linker", &none).await;
            let link = |reading| {
                let mut l = json!({
                    "delegator": alice.address(), "delegate": format!("loom://helper@{domain}"),
                    "scope": ["message.*"], "created_at": "2026-01-01T00:00:00Z",
                    "expires_at": "2099-01-01T00:00:00Z", "revocable": true,
                    "allow_sub_delegation": false,
                });
                loom_conformance::readings::sign_link(
                    &mut l,
                    alice.signing_key(),
                    alice.key_id_typed(),
                    reading,
                );
                l
            };
            use loom_conformance::readings::LinkContext;
            let t = call(
                &mut c,
                "POST",
                "/v1/delegations",
                Some(&token),
                &link(LinkContext::Outside),
            )
            .await;
            assert_eq!(
                (t.status, code(&t)),
                (403, "DELEGATION_INVALID".into()),
                "{t}"
            );
            let t = call(
                &mut c,
                "POST",
                "/v1/delegations",
                Some(&token),
                &link(LinkContext::Inside),
            )
            .await;
            assert!(t.is_success(), "{t}");
        }
        "no-identity-me" => {
            let t = call(&mut c, "GET", "/v1/identity/me", None, &Value::Null).await;
            assert_eq!(t.status, 404, "{t}");
        }
        "no-retraction" => {
            let t = call(
                &mut c,
                "DELETE",
                "/v1/envelopes/env_01J00000000000000000000000",
                None,
                &Value::Null,
            )
            .await;
            assert_eq!(t.status, 404, "{t}");
        }
        "no-capabilities-document" => {
            let t = call(
                &mut c,
                "GET",
                "/v1/protocol/capabilities",
                None,
                &Value::Null,
            )
            .await;
            assert_eq!(t.status, 404, "{t}");
        }
        "message-intents-by-type" => {
            let t = call(
                &mut c,
                "POST",
                "/v1/envelopes",
                None,
                &json!({"type": "message", "content": {"structured": {"intent": "note.add@v1"}}}),
            )
            .await;
            assert_eq!(
                (t.status, code(&t)),
                (400, "ENVELOPE_INVALID".into()),
                "{t}"
            );
        }
        "custom-audience-covers-recipients" => {
            let t = call(&mut c, "POST", "/v1/envelopes", None, &json!({"from": {"identity": "loom://a@x.test"}, "to": [{"identity": "loom://b@x.test"}], "audience": {"mode": "custom", "identities": ["loom://a@x.test"]}})).await;
            assert_eq!(
                (t.status, code(&t)),
                (400, "ENVELOPE_INVALID".into()),
                "{t}"
            );
        }
        "missing-signature-envelope-invalid" => {
            let t = call(
                &mut c,
                "POST",
                "/v1/envelopes",
                None,
                &json!({"type": "message"}),
            )
            .await;
            assert_eq!(
                (t.status, code(&t)),
                (400, "ENVELOPE_INVALID".into()),
                "{t}"
            );
        }
        "padded-base64url-signatures" => {
            let (alice, token) = session(&mut c, &domain, "alice", &none).await;
            let mut env = message(&alice, &alice, 1);
            let padded = format!(
                "{}==",
                env["signature"]["value"].as_str().unwrap_or_default()
            );
            env["signature"]["value"] = padded.into();
            let t = call(&mut c, "POST", "/v1/envelopes", Some(&token), &env).await;
            assert!(t.is_success(), "a padded signature is taken: {t}");
        }
        "invalid-utf8-signature-invalid" => {
            let (_, token) = session(&mut c, &domain, "alice", &none).await;
            let t = c
                .exchange(
                    "POST",
                    "/v1/envelopes",
                    &[("content-type", "application/json")],
                    Some(vec![b'{', 0xff, b'}']),
                    Some(&token),
                )
                .await
                .expect("exchange");
            assert_eq!(
                (t.status, code(&t)),
                (401, "SIGNATURE_INVALID".into()),
                "{t}"
            );
        }
        "envelope-wrapped" => {
            let (alice, token) = session(&mut c, &domain, "alice", &none).await;
            let t = call(
                &mut c,
                "POST",
                "/v1/envelopes",
                Some(&token),
                &message(&alice, &alice, 2),
            )
            .await;
            assert!(json(&t)["envelope"]["id"].is_string(), "{t}");
        }
        "thread-existence-hidden-403" => {
            let (alice, token) = session(&mut c, &domain, "alice", &none).await;
            let (_, carol) = session(&mut c, &domain, "carol", &none).await;
            let env = message(&alice, &alice, 3);
            assert!(
                call(&mut c, "POST", "/v1/envelopes", Some(&token), &env)
                    .await
                    .is_success()
            );
            let path = format!(
                "/v1/threads/{}",
                env["thread_id"].as_str().unwrap_or_default()
            );
            let t = call(&mut c, "GET", &path, Some(&carol), &Value::Null).await;
            assert_eq!((t.status, code(&t)), (403, "AUDIENCE_DENIED".into()), "{t}");
        }
        "bare-list-responses" => {
            let (_, token) = session(&mut c, &domain, "alice", &none).await;
            let t = call(&mut c, "GET", "/v1/threads", Some(&token), &Value::Null).await;
            assert!(json(&t).is_array(), "{t}");
        }
        "search-results-list" => {
            let (_, token) = session(&mut c, &domain, "alice", &none).await;
            let t = call(
                &mut c,
                "GET",
                "/v1/search?q=hello",
                Some(&token),
                &Value::Null,
            )
            .await;
            assert!(
                json(&t)["results"].is_array() && json(&t)["envelopes"].is_null(),
                "{t}"
            );
        }
        "events-event-id-data" => {
            let (alice, token) = session(&mut c, &domain, "alice", &none).await;
            assert!(
                call(
                    &mut c,
                    "POST",
                    "/v1/envelopes",
                    Some(&token),
                    &message(&alice, &alice, 4)
                )
                .await
                .is_success()
            );
            let t = call(&mut c, "GET", "/v1/events", Some(&token), &Value::Null).await;
            let e = &json(&t)["events"][0];
            assert!(
                e["event_id"].is_string() && e["id"].is_null() && e["payload"].is_null(),
                "{t}"
            );
        }
        "idempotency-conflict-409" => {
            let (_, token) = session(&mut c, &domain, "alice", &none).await;
            let mut statuses = Vec::new();
            for name in ["a.txt", "b.txt"] {
                let body =
                    serde_json::to_vec(&json!({"filename": name, "mime_type": "text/plain"}))
                        .expect("json");
                let t = c
                    .exchange(
                        "POST",
                        "/v1/blobs",
                        &[("idempotency-key", "k1")],
                        Some(body),
                        Some(&token),
                    )
                    .await
                    .expect("exchange");
                statuses.push(t.status);
            }
            assert_eq!(statuses[1], 409, "{statuses:?}");
        }
        "wrong-content-type-400" => {
            let (_, token) = session(&mut c, &domain, "alice", &none).await;
            let t = c
                .exchange(
                    "POST",
                    "/v1/envelopes",
                    &[("content-type", "text/plain")],
                    Some(b"{}".to_vec()),
                    Some(&token),
                )
                .await
                .expect("exchange");
            assert_eq!(t.status, 400, "{t}");
        }
        "success-200" => {
            let (alice, token) = session(&mut c, &domain, "alice", &none).await;
            let t = call(
                &mut c,
                "POST",
                "/v1/envelopes",
                Some(&token),
                &message(&alice, &alice, 5),
            )
            .await;
            assert_eq!(t.status, 200, "{t}");
        }
        "error-details-minimal" => {
            let t = call(&mut c, "GET", "/v1/threads", None, &Value::Null).await;
            assert_eq!(json(&t)["error"]["details"], json!({}), "{t}");
        }
        "content-type-spelling" => {
            let t = call(&mut c, "GET", "/.well-known/loom.json", None, &Value::Null).await;
            assert_eq!(
                t.header("content-type"),
                Some("Application/JSON;Charset=UTF-8")
            );
        }
        "duplicate-registration-at-challenge" => {
            let (alice, _) = session(&mut c, &domain, "alice", &none).await;
            let t = call(
                &mut c,
                "POST",
                "/v1/identity/challenge",
                None,
                &json!({"identity": alice.address(), "key_id": alice.key_id()}),
            )
            .await;
            assert_eq!(t.status, 409, "{t}");
        }
        "agent-info-complete" => {
            let t = call(
                &mut c,
                "POST",
                "/v1/identity",
                None,
                &json!({"type": "agent", "agent_info": {"provider": "p"}}),
            )
            .await;
            assert_eq!(json(&t)["error"]["details"]["field"], "agent_info", "{t}");
        }
        "pem-trimmed-before-hashing" => {
            // A client that hashes the PEM with its trailing newline is not understood.
            let id = Identity::from_seed(&format!("loom://untrimmed@{domain}"), &[9; 32])
                .expect("identity");
            let ch = json(
                &call(
                    &mut c,
                    "POST",
                    "/v1/identity/challenge",
                    None,
                    &json!({"identity": id.address(), "key_id": id.key_id()}),
                )
                .await,
            );
            // `loom-client` sends trimmed PEMs (issue 18), so the untrimmed request is built
            // here: the PEM with its newline, hashed and signed as it is sent.
            let mut req = id.registration_document();
            let pem = format!("{}\n", id.public_key_pem());
            req["signing_keys"][0]["public_key_pem"] = pem.into();
            let text = loom_protocol::registration::registration_text(
                id.address(),
                id.key_id(),
                &loom_protocol::registration::registration_document_hash(&req),
                ch["nonce"].as_str().unwrap_or_default(),
            );
            req["registration_proof"] = json!({
                "challenge_id": ch["challenge_id"].as_str().unwrap_or_default(),
                "key_id": id.key_id(),
                "signature": sign_b64url(id.signing_key(), None, text.as_bytes()),
            });
            let t = call(&mut c, "POST", "/v1/identity", None, &req).await;
            assert_eq!(t.status, 401, "{t}");
            session(&mut c, &domain, "trimmed", &none).await;
        }
        "registration-invite" => {
            let t = call(
                &mut c,
                "POST",
                "/v1/identity",
                None,
                &json!({"id": "loom://x@y.test"}),
            )
            .await;
            assert_eq!(
                (t.status, code(&t)),
                (403, "CAPABILITY_DENIED".into()),
                "{t}"
            );
            let mut extra = Map::new();
            extra.insert("invite_code".into(), "conformance-selftest".into());
            session(&mut c, &domain, "invited", &extra).await;
        }
        "identity-document-registration-shape" => {
            let (alice, token) = session(&mut c, &domain, "alice", &none).await;
            let path = format!(
                "/v1/identity/{}",
                loom_client::api::encode_component(alice.address())
            );
            let d = json(&call(&mut c, "GET", &path, Some(&token), &Value::Null).await);
            assert!(
                d["public_keys"].is_null() && d["signing_keys"][0]["public_key_pem"].is_string(),
                "{d}"
            );
        }
        "opaque-tokens" => {
            let (_, token) = session(&mut c, &domain, "alice", &none).await;
            assert!(token.starts_with("tok."), "{token}");
            let t = call(&mut c, "GET", "/v1/threads", Some(&token), &Value::Null).await;
            assert!(t.is_success(), "the opaque token authenticates: {t}");
        }
        "challenge-member" => {
            let t = call(
                &mut c,
                "POST",
                "/v1/auth/challenge",
                None,
                &json!({"identity": "loom://nobody@x.test", "key_id": "k_sign_x_1"}),
            )
            .await;
            let t2 = call(
                &mut c,
                "POST",
                "/v1/auth/token",
                None,
                &json!({"challenge_id": "x"}),
            )
            .await;
            assert!(
                json(&t)["challenge_id"].is_null()
                    && json(&t2)["error"]["details"]["field"] == "challenge",
                "{t} {t2}"
            );
        }
        "blob-json-transfer" => {
            let t = c
                .exchange(
                    "PUT",
                    "/v1/blobs/blob_x/parts/1",
                    &[("content-type", "application/octet-stream")],
                    Some(b"raw".to_vec()),
                    None,
                )
                .await
                .expect("exchange");
            assert_eq!(json(&t)["error"]["details"]["field"], "data_base64", "{t}");
        }
        "blob-size-declared" => {
            let t = call(&mut c, "POST", "/v1/blobs", None, &json!({"filename": "a"})).await;
            assert_eq!(json(&t)["error"]["details"]["field"], "size_bytes", "{t}");
        }
        "node-document-pem-keys" => {
            let d = doc(&call(&mut c, "GET", "/.well-known/loom.json", None, &Value::Null).await);
            let keys = d["signing_keys"].as_array().cloned().unwrap_or_default();
            assert!(
                !keys.is_empty()
                    && keys
                        .iter()
                        .all(|k| k["public_key"].is_null() && k["public_key_pem"].is_string()),
                "{d}"
            );
        }
        "search-intent-filter" => {
            let (alice, a) = session(&mut c, &domain, "alice", &none).await;
            let (bob, b) = session(&mut c, &domain, "bob", &none).await;
            let mut env = message(&alice, &bob, 7);
            env["content"]["structured"] =
                json!({"intent": "message.witness@v1", "parameters": {}});
            alice.sign(&mut env).expect("signed");
            let t = call(&mut c, "POST", "/v1/envelopes", Some(&a), &env).await;
            assert!(t.is_success(), "{t}");
            let by_q = call(
                &mut c,
                "GET",
                "/v1/search?q=message.witness%40v1",
                Some(&b),
                &Value::Null,
            )
            .await;
            let by_filter = call(
                &mut c,
                "GET",
                "/v1/search?intent=message.witness%40v1",
                Some(&b),
                &Value::Null,
            )
            .await;
            let id = env["id"].as_str().expect("id");
            let text = |t: &Transcript| String::from_utf8_lossy(&t.response_body).into_owned();
            assert!(
                by_q.is_success() && !text(&by_q).contains(id) && text(&by_filter).contains(id),
                "{by_q} {by_filter}"
            );
        }
        "capability-ids-minted-by-node" => {
            let (alice, a) = session(&mut c, &domain, "alice", &none).await;
            let (bob, _) = session(&mut c, &domain, "bob", &none).await;
            let env = message(&alice, &bob, 8);
            let t = call(&mut c, "POST", "/v1/envelopes", Some(&a), &env).await;
            assert!(t.is_success(), "{t}");
            let mut tok = json!({
                "loom": "1.1", "id": "cap_01J00000000000000000000008",
                "issued_by": alice.address(), "issued_to": bob.address(),
                "created_at": "2026-01-01T00:00:00Z", "expires_at": null, "single_use": false,
                "epoch": 0, "grants": ["label"], "scope": {"thread_id": env["thread_id"]},
            });
            loom_protocol::capability::sign_capability_token(
                &mut tok,
                alice.signing_key(),
                alice.key_id_typed(),
            )
            .expect("signed");
            let t = call(&mut c, "POST", "/v1/capabilities", Some(&a), &tok).await;
            let issued = json(&t)["id"].as_str().unwrap_or_default().to_owned();
            assert!(
                t.is_success() && issued.starts_with("cap_") && issued != tok["id"],
                "{t}"
            );
            let by_token_id = call(
                &mut c,
                "DELETE",
                "/v1/capabilities/cap_01J00000000000000000000008",
                Some(&a),
                &json!({}),
            )
            .await;
            assert_eq!(by_token_id.status, 404, "{by_token_id}");
        }
        "identity-document-full-key-form" => {
            let clock: Arc<dyn Clock> = Arc::new(SystemClock);
            let (embedded, info) = variants::start(v, clock, 5).await.expect("starts");
            let mut c = Client::tcp(&embedded.url).expect("client");
            let (bob, _) = session(&mut c, &info.domain, "bob", &none).await;
            let fed = info.federation.clone().expect("the fake federation peers");
            let peer = fed.server.fresh().expect("a peer");
            let mut answers = Vec::new();
            for (n, form) in loom_protocol::federation::identity::NodeSignatureForm::ALL
                .into_iter()
                .enumerate()
            {
                let alice = peer.host(&format!("alice{n}"));
                peer.sign_identity_as(alice.address(), form);
                let env = message(&alice, &bob, 1 + n as u8);
                let t = deliver(&mut c, &peer, env).await;
                answers.push((t.status, json(&t)["error"]["details"]["field"].clone()));
            }
            assert_eq!(
                answers,
                vec![(401, json!("node_signature")), (202, Value::Null)],
                "the registration form refused, the full-key form accepted"
            );
        }
        "signature-failure-envelope-invalid" => {
            let (alice, a) = session(&mut c, &domain, "alice", &none).await;
            let (bob, _) = session(&mut c, &domain, "bob", &none).await;
            let mut env = message(&alice, &bob, 6);
            env["content"]["human"]["text"] = "changed after signing".into();
            let t = call(&mut c, "POST", "/v1/envelopes", Some(&a), &env).await;
            assert_eq!(
                (t.status, code(&t)),
                (400, "ENVELOPE_INVALID".to_owned()),
                "{t}"
            );
        }
        "delivery-refusals-in-receipt" => {
            // Its own node: the fake peers live as long as the run info that holds them.
            let clock: Arc<dyn Clock> = Arc::new(SystemClock);
            let (embedded, info) = variants::start(v, clock, 4).await.expect("starts");
            let mut c = Client::tcp(&embedded.url).expect("client");
            let (bob, _) = session(&mut c, &info.domain, "bob", &none).await;
            let fed = info.federation.clone().expect("the fake federation peers");
            let peer = fed.server.fresh().expect("a peer");
            let alice = peer.host("alice");
            let mut env = message(&alice, &bob, 9);
            env["content"]["human"]["text"] = "changed after signing".into();
            let t = deliver(&mut c, &peer, env).await;
            assert!(
                t.status == 202 && json(&t)["accepted_envelope_ids"] == json!([]),
                "{t}"
            );
        }
        "ws-opaque-cursors" | "ws-type-member" => {
            let url = embedded_url(&c);
            ws_witness(v.name, &mut c, &domain, &url).await;
        }
        other => panic!("no witness for the variant {other}: add one here"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_variant_makes_its_choice() {
    let mut handles = Vec::new();
    for v in variants::all() {
        handles.push((v.name, tokio::spawn(witness(v))));
    }
    for (name, h) in handles {
        if let Err(e) = h.await {
            panic!("variant {name}: {e}");
        }
    }
}

#[test]
fn the_node_readme_lists_every_variant_with_its_sentence() {
    let readme = include_str!("../../reference/node/README.md");
    let section = readme
        .split("## Legal variants (conformance self-test)")
        .nth(1)
        .expect("reference/node/README.md has the legal-variant section");
    for v in variants::all() {
        let row = section
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", v.name)))
            .unwrap_or_else(|| panic!("the node README does not list the variant {}", v.name));
        assert!(row.contains(v.section), "{}: {row}", v.name);
    }
}

/// Each reading the harness detects (issue 29), on the reference node and under the variant
/// that makes the other choice: the cases of its area pass on both, and the run reports the
/// reading found — so the harness finds the target's choice instead of imposing ours.
struct ReadingCheck {
    /// The variant making the other choice.
    variant: &'static str,
    /// The cases that depend on the reading (ID prefix).
    cases: &'static str,
    /// The reading's report name.
    reading: &'static str,
    /// What is found on the reference node, and under the variant.
    found: (&'static str, &'static str),
}

const READINGS: &[ReadingCheck] = &[
    ReadingCheck {
        variant: "delegation-link-context-signed",
        cases: "core.delegation.",
        reading: loom_conformance::readings::LINK_READING,
        found: (
            "both forms accepted",
            "signature_context inside the signed bytes only",
        ),
    },
    ReadingCheck {
        variant: "node-document-pem-keys",
        cases: "core.discovery.",
        reading: loom_conformance::readings::KEY_ENCODING_READING,
        found: (
            "base64url (public_key) only",
            "SPKI PEM (public_key_pem) only",
        ),
    },
    ReadingCheck {
        variant: "search-intent-filter",
        cases: "core.search.",
        reading: loom_conformance::readings::INTENT_SEARCH_READING,
        found: (
            "full-text q finds intents and an intent= filter",
            "an intent= filter",
        ),
    },
    ReadingCheck {
        variant: "capability-ids-minted-by-node",
        cases: "core.capability.endpoints",
        reading: loom_conformance::readings::CAPABILITY_ID_READING,
        found: (
            "the client's: the node keeps the token's id",
            "the node's: it answers ",
        ),
    },
    ReadingCheck {
        variant: "identity-document-full-key-form",
        cases: "fed.inbound.valid-delivery",
        reading: loom_conformance::readings::IDENTITY_FORM_READING,
        found: ("both forms accepted", "full-key form only"),
    },
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readings_are_detected_not_imposed() {
    use loom_conformance::runner::{RunConfig, run_all};
    use loom_conformance::{Outcome, catalogue};
    for check in READINGS {
        let cases: Vec<&'static loom_conformance::Case> = catalogue::all()
            .into_iter()
            .filter(|c| c.id.starts_with(check.cases))
            .collect();
        assert!(!cases.is_empty(), "{}", check.cases);
        let cfg = RunConfig {
            jobs: 4,
            seed: 21,
            ..RunConfig::default()
        };
        // The reference node behind a variant that changes nothing these cases touch.
        for (name, expected) in [
            ("no-identity-me", check.found.0),
            (check.variant, check.found.1),
        ] {
            let clock: Arc<dyn Clock> = Arc::new(SystemClock);
            let v = variants::find(name).expect("variant");
            let (node, info) = variants::start(v, clock.clone(), 21).await.expect("starts");
            let info = Arc::new(info);
            let results = run_all(&cases, info.clone(), &cfg, clock, &|_| {}).await;
            drop(node);
            for r in &results {
                assert!(
                    matches!(
                        r.outcome,
                        Outcome::Pass | Outcome::Skipped | Outcome::Unsupported
                    ),
                    "{name} {}: {} {:?}",
                    r.id,
                    r.outcome,
                    r.message
                );
            }
            let found = info.readings.found();
            let got = found
                .iter()
                .find(|(what, _)| *what == check.reading)
                .map(|(_, which)| which.as_str());
            assert!(
                got.is_some_and(|g| g.starts_with(expected)),
                "{name}: {} found {got:?}, expected {expected:?} ({found:?})",
                check.reading
            );
        }
    }
}

fn embedded_url(c: &Client) -> String {
    c.url().to_string()
}

/// The WebSocket variants, through the shim's proxy: a bad token is refused as the node
/// refuses it, a subscribed connection gets an event in the variant's form, and a resume from
/// the variant's cursor works.
async fn ws_witness(name: &str, c: &mut Client, domain: &str, url: &str) {
    use loom_client::ws::{self, Frame, TokenIn};
    use std::time::Duration;
    let none = Map::new();
    let (alice, atoken) = session(c, domain, "alice", &none).await;
    let (bob, btoken) = session(c, domain, "bob", &none).await;
    let wait = Duration::from_secs(5);
    let mut s = ws::connect(
        &loom_client::TokioDial,
        url,
        None,
        "/ws",
        &btoken,
        TokenIn::Query,
        wait,
    )
    .await
    .expect("the upgrade through the proxy");
    s.send(&json!({"action": "subscribe", "channels": [{"type": "all_threads"}]}))
        .await
        .unwrap();
    // The bad-token refusal passes through the proxy as the node answers it.
    match ws::connect(
        &loom_client::TokioDial,
        url,
        None,
        "/ws",
        "at_bogus",
        TokenIn::Query,
        wait,
    )
    .await
    {
        Err(ws::Refused::Status(401, _)) => {}
        other => panic!("{name}: a bad token through the proxy: {other:?}"),
    }
    let m = message(&alice, &bob, 1);
    let t = call(c, "POST", "/v1/envelopes", Some(&atoken), &m).await;
    assert_eq!(t.status, 201, "{t}");
    let frame = loop {
        match s.next(wait).await {
            Some(Frame::Json(v)) if v["event"] == "envelope.new" || v["type"] == "envelope.new" => {
                break v;
            }
            Some(Frame::Json(_)) => {}
            other => panic!("{name}: no envelope.new: {other:?}"),
        }
    };
    match name {
        "ws-opaque-cursors" => {
            let cursor = frame["cursor"].as_str().unwrap_or_default().to_owned();
            assert!(cursor.starts_with("c."), "{frame}");
            // Resuming from the opaque cursor replays nothing before it and the next event after.
            let mut again = ws::connect(
                &loom_client::TokioDial,
                url,
                None,
                "/ws",
                &btoken,
                TokenIn::Query,
                wait,
            )
            .await
            .unwrap();
            again
                .send(&json!({"action": "subscribe", "channels": [{"type": "all_threads"}], "since": cursor}))
                .await
                .unwrap();
            let m2 = message(&alice, &bob, 2);
            assert_eq!(
                call(c, "POST", "/v1/envelopes", Some(&atoken), &m2)
                    .await
                    .status,
                201
            );
            let next = loop {
                match again.next(wait).await {
                    Some(Frame::Json(v)) if v["event"] == "envelope.new" => break v,
                    Some(Frame::Json(v)) if v["event"] == "error" => panic!("{v}"),
                    Some(Frame::Json(_)) => {}
                    other => panic!("no event after the opaque cursor: {other:?}"),
                }
            };
            assert_eq!(next["envelope_id"], m2["id"], "{next}");
        }
        "ws-type-member" => {
            assert!(
                frame["event"].is_null() && frame["type"] == "envelope.new",
                "{frame}"
            );
            assert!(
                frame["envelope_id"].is_null() && frame["data"]["envelope_id"] == m["id"],
                "{frame}"
            );
        }
        other => panic!("no WebSocket witness for {other}"),
    }
}
