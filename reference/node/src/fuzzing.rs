//! Fuzz bodies (DESIGN.md §8, issue 19) for the node's parsing and typing layer: what its HTTP
//! handlers do with a request before any store or service work — the strict JSON reading of
//! [`crate::http::StrictJson`], the typed request bodies, the key, id, address and signature
//! texts inside them, and the query strings of the list and search endpoints. Library
//! functions shared by the `cargo fuzz` targets in `fuzz/` and by `cargo test`, which replays
//! every committed corpus file through them (the test at the end of this module).
//!
//! | target | body | drives |
//! |---|---|---|
//! | `node_request_body` | [`request_body`] | strict JSON, the typed bodies of registration, auth challenge/token/refresh, key add, thread ops and envelopes, capabilities, delegations and blobs |
//! | `node_query` | [`query`] | query strings of `/v1/search`, `/v1/threads`, `/v1/events`; [`query_terms`] and [`Terms`] against SQLite FTS5 |
//! | `node_dns` | [`dns_answer`] | [`crate::dns`] response decoding, SRV ordering, §15.1 TXT reading and [`crate::discover::node_document_urls`] |

use crate::error::ApiError;
use crate::service::auth::{RefreshRequest, TokenRequest};
use crate::service::blobs::BlobCreate;
use crate::service::events::EventsQuery;
use crate::service::identity::{ChallengeRequest, KeyInput};
use crate::service::search::{MAX_QUERY_LEN, MAX_TERMS, SearchQuery, query_terms};
use crate::service::threads::ThreadQuery;
use crate::store::search::Terms;
use loom_protocol::capability::TokenShape;
use loom_protocol::documents::IdentityType;
use loom_protocol::envelope::validate_envelope;
use loom_protocol::id::{KeyId, KeyKind};
use loom_protocol::identity_profile::check_type_members;
use loom_protocol::jcs::parse_strict_bytes;
use loom_protocol::keys::{
    b64url_decode, b64url_encode, public_key_from_any, public_key_from_b64url,
    public_key_to_b64url, public_key_to_spki_pem, signature_from_b64url,
};
use loom_protocol::registration::{Registration, SpecRegistration, registration_document_hash};
use loom_protocol::scope::check_scope_syntax;
use loom_protocol::thread::ThreadOp;
use loom_protocol::{Address, ProtocolError, Timestamp};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A fuzz body: takes any bytes, panics only on a broken property.
pub type Body = fn(&[u8]);

/// Every fuzz target whose body lives in this crate: `(target name, body)`; the name is the
/// `[[bin]]` of `fuzz/Cargo.toml` and the corpus directory `fuzz/corpus/<name>/`.
pub const TARGETS: &[(&str, Body)] = &[
    ("node_request_body", request_body),
    ("node_query", query),
    ("node_dns", dns_answer),
];

/// The endpoints whose bodies [`request_body`] reads; the first input byte picks one.
pub const ENDPOINTS: [&str; 10] = [
    "POST /v1/identity/challenge",
    "POST /v1/identity",
    "POST /v1/auth/challenge",
    "POST /v1/auth/token",
    "POST /v1/auth/refresh",
    "POST /v1/identity/me/keys",
    "POST /v1/envelopes",
    "POST /v1/capabilities",
    "POST /v1/delegations",
    "POST /v1/blobs",
];

fn now() -> Timestamp {
    Timestamp::from_unix_ms(1_771_261_200_000)
}

#[track_caller]
fn explained(e: &ApiError) {
    assert!(!e.field.is_empty(), "{e:?}");
    assert!(!e.reason.is_empty(), "{e:?}");
    assert!(e.section.starts_with("v1."), "{e:?}");
}

#[track_caller]
fn explained_protocol(e: &ProtocolError) {
    assert!(!e.field.is_empty() && !e.rule.is_empty(), "{e:?}");
    assert!(
        e.section.starts_with("v1.") || e.section.starts_with("loom-core-1"),
        "{e:?}"
    );
}

/// The node's typed reading of a body ([`crate::http::StrictJson::parse`]).
fn typed<T: DeserializeOwned>(v: &Value, section: &'static str) -> Result<T, ApiError> {
    crate::error::typed_body(v, section)
}

/// A public key as a registration or key-add request sends it (SPKI PEM or base64url):
/// whatever parses prints in both forms and parses back to the same key (parse∘print = id).
fn key_text(k: &KeyInput) {
    let _ = KeyId::parse(&k.key_id, KeyKind::Signing);
    let _ = KeyId::parse(&k.key_id, KeyKind::Encryption);
    for text in [k.public_key_pem.as_deref(), k.public_key.as_deref()]
        .into_iter()
        .flatten()
    {
        if let Ok(key) = public_key_from_any(text) {
            assert_eq!(
                public_key_from_any(&public_key_to_spki_pem(&key)).ok(),
                Some(key)
            );
            assert_eq!(
                public_key_from_b64url(&public_key_to_b64url(&key)).ok(),
                Some(key)
            );
        }
        if let Ok(raw) = b64url_decode(text) {
            assert_eq!(b64url_decode(&b64url_encode(&raw)).ok(), Some(raw));
        }
    }
}

/// Request bodies. The first byte picks an endpoint of [`ENDPOINTS`], the rest is the body.
/// Strict JSON (v1.1 §7.2: no duplicate keys, no lone surrogates) reads or refuses; a typed
/// body reads or is refused naming `$body` and a section; the texts inside — addresses, ids,
/// keys, signatures, scopes, timestamps — parse or are refused with field, rule and section,
/// and keys print back to themselves; envelope and thread-op bodies validate with agreeing
/// first-error and all-errors forms.
pub fn request_body(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let Ok(v) = parse_strict_bytes(body) else {
        return;
    };
    match usize::from(pick) % ENDPOINTS.len() {
        0 | 2 => {
            if let Ok(r) = typed::<ChallengeRequest>(&v, "v1.1 §14.2").map_err(|e| explained(&e)) {
                let _ = Address::parse(&r.identity);
                let _ = KeyId::parse(&r.key_id, KeyKind::Signing);
            }
        }
        1 => register(&v),
        3 => {
            if let Ok(r) = typed::<TokenRequest>(&v, "v1.1 §14.2").map_err(|e| explained(&e)) {
                let _ = Address::parse(&r.identity);
                let _ = signature_from_b64url(&r.signature);
            }
        }
        4 => {
            let _ = typed::<RefreshRequest>(&v, "v1.1 §14.2").map_err(|e| explained(&e));
        }
        5 => {
            if let Ok(k) = typed::<KeyInput>(&v, "v1.1 §6.2").map_err(|e| explained(&e)) {
                key_text(&k);
            }
        }
        6 => envelope(&v),
        7 => match TokenShape::parse(&v, now(), false) {
            Ok(t) => {
                assert!(v.get("id").and_then(Value::as_str) == Some(t.id.to_string().as_str()))
            }
            Err(e) => explained_protocol(&e),
        },
        8 => delegation(&v),
        _ => {
            if let Ok(b) = typed::<BlobCreate>(&v, "v1.1 §16.7").map_err(|e| explained(&e)) {
                // The typed body reads the members the raw body has.
                assert_eq!(
                    Some(b.filename.as_str()),
                    v.get("filename").and_then(Value::as_str)
                );
            }
        }
    }
}

fn register(v: &Value) {
    let _ = registration_document_hash(v);
    let r = match Registration::parse(v, "node.test", now(), &SpecRegistration) {
        Ok(r) => r,
        Err(e) => return explained_protocol(&e),
    };
    // What was read is what the request said: the address is hosted here and canonical,
    // and every key prints back to itself.
    assert_eq!(r.id.domain(), "node.test");
    assert_eq!(
        Some(r.document_id.as_str()),
        v.get("id").and_then(Value::as_str)
    );
    assert!(!r.signing.is_empty(), "a registration has a signing key");
    for k in v
        .get("signing_keys")
        .and_then(Value::as_array)
        .into_iter()
        .chain(v.get("encryption_keys").and_then(Value::as_array))
        .flatten()
    {
        if let Ok(k) = serde_json::from_value::<KeyInput>(k.clone()) {
            key_text(&k);
        }
    }
    let _ = signature_from_b64url(&r.proof.signature);
    if let Ok(kind) = serde_json::from_value::<IdentityType>(Value::from(r.kind_text.clone()))
        && let Err(e) = check_type_members(kind, v, now())
    {
        explained_protocol(&e);
    }
}

fn envelope(v: &Value) {
    let all = loom_protocol::envelope::validate::validate_envelope_all(v);
    let first = validate_envelope(v);
    assert_eq!(
        first.is_ok(),
        all.is_empty(),
        "first-error and all-errors forms disagree"
    );
    for e in &all {
        explained_protocol(e);
    }
    if first.is_ok() && v.get("type").and_then(Value::as_str) == Some("thread_op") {
        let op = ThreadOp::from_envelope(v).unwrap_or_else(|e| panic!("a valid thread_op: {e:?}"));
        assert_eq!(
            Some(op.intent.as_str()),
            v.pointer("/content/structured/intent")
                .and_then(Value::as_str)
        );
    }
}

fn delegation(v: &Value) {
    let Some(o) = v.as_object() else {
        return;
    };
    for k in ["delegator", "delegate"] {
        if let Some(Err(e)) = o.get(k).and_then(Value::as_str).map(Address::parse) {
            assert!(!e.reason.is_empty());
        }
    }
    for s in o
        .get("scope")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(Err(e)) = s.as_str().map(check_scope_syntax) {
            assert!(!e.to_string().is_empty());
        }
    }
    for k in ["created_at", "expires_at"] {
        if let Some(Ok(t)) = o.get(k).and_then(Value::as_str).map(Timestamp::parse) {
            assert_eq!(
                Timestamp::parse(&t.to_rfc3339()).ok(),
                Some(t),
                "parse∘print = id"
            );
        }
    }
}

thread_local! {
    /// An FTS5 table like the node's search index, to check what [`Terms`] produces.
    static FTS: rusqlite::Connection = {
        let c = rusqlite::Connection::open_in_memory().expect("in-memory SQLite");
        c.execute_batch("CREATE VIRTUAL TABLE t USING fts5(text); INSERT INTO t VALUES ('hello world');")
            .expect("an FTS5 table");
        c
    };
}

/// Query strings (the `?…` of a request, as axum's `Query` reads them): the typed queries of
/// `/v1/search`, `/v1/threads` and `/v1/events` read or refuse without panicking; a search
/// term list that [`query_terms`] accepts is always a valid FTS5 expression (v1.1 §16.6: no user
/// input can make a syntax error) with at most [`MAX_TERMS`] terms, and a refusal names `q`.
pub fn query(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let q = if text.len() <= 2 * MAX_QUERY_LEN {
        text
    } else {
        &text[..text.floor_char_boundary(2 * MAX_QUERY_LEN)]
    };
    check_fts(q);
    let Ok(uri) = format!("/v1/search?{text}").parse::<axum::http::Uri>() else {
        return;
    };
    use axum::extract::Query;
    if let Ok(Query(s)) = Query::<SearchQuery>::try_from_uri(&uri)
        && let Some(q) = s.q
    {
        check_fts(&q);
    }
    let _ = Query::<ThreadQuery>::try_from_uri(&uri);
    let _ = Query::<EventsQuery>::try_from_uri(&uri);
}

/// A DNS answer from the network (v1.1 §15.1 discovery): [`crate::dns::decode_response`]
/// never panics and is deterministic; a decoded message keeps its bounds (at most one
/// question, names of at most 255 wire bytes); [`crate::dns::order_srv`] returns its SRV
/// records (bar `.` targets) by ascending priority, each once, whatever the weight draws;
/// every TXT value, and the raw input read as text, either reads as a §15.1 `_loom` record
/// with `http(s)://` URLs or is refused naming field, rule and `v1.1 §15.1`; and
/// [`crate::discover::node_document_urls`] gives `https://`/`http://` URLs (one per SRV
/// target up to its bound, or the TXT's one), nothing, or an error naming §15.1.
pub fn dns_answer(data: &[u8]) {
    use crate::discover::{DnsRecords, node_document_urls};
    use crate::dns::{RData, decode_response, order_srv};
    use loom_protocol::federation::dns_discovery::parse_loom_txt;

    let check_txt = |t: &str| match parse_loom_txt(t) {
        Ok(r) => {
            for url in [&r.api, &r.wellknown].into_iter().flatten() {
                assert!(
                    url.starts_with("https://") || url.starts_with("http://"),
                    "{url}"
                );
            }
            if let Some(ws) = &r.ws {
                assert!(ws.starts_with("wss://") || ws.starts_with("ws://"), "{ws}");
            }
        }
        Err(e) => explained_protocol(&e),
    };
    if let Ok(text) = std::str::from_utf8(data) {
        check_txt(text);
    }
    let Ok(resp) = decode_response(data) else {
        return;
    };
    assert_eq!(decode_response(data).as_ref(), Ok(&resp), "deterministic");
    if let Some((name, _, _)) = &resp.question {
        assert!(name.len() <= 4 * crate::dns::MAX_NAME_LEN, "{name}");
    }
    let mut records = DnsRecords::default();
    let mut srv = Vec::new();
    for rec in &resp.answers {
        match &rec.data {
            RData::Srv(s) => srv.push(s.clone()),
            RData::Txt(strings) => {
                if let Ok(t) = String::from_utf8(strings.concat()) {
                    check_txt(&t);
                    records.txt.push(t);
                }
            }
            RData::Other => {}
        }
    }
    let mut draws = data.iter().rev().copied();
    let ordered = order_srv(&srv, &mut |total| {
        u32::from(draws.next().unwrap_or(0)) % (total + 1)
    });
    let offered: Vec<_> = srv.iter().filter(|s| !s.target.is_empty()).collect();
    if !(srv.len() == 1 && srv[0].target.is_empty()) {
        assert_eq!(ordered.len(), offered.len());
    }
    assert!(ordered.windows(2).all(|w| w[0].priority <= w[1].priority));
    for s in &ordered {
        let in_input = srv.iter().filter(|x| *x == s).count();
        let in_output = ordered.iter().filter(|x| *x == s).count();
        assert_eq!(in_input, in_output, "each record once: {s:?}");
    }
    records.srv_unavailable = srv.len() == 1 && srv[0].target.is_empty();
    records.srv = ordered;
    match node_document_urls("fuzz.test", &records) {
        Ok(urls) if urls.is_empty() => assert!(records.srv.is_empty()),
        Ok(urls) => {
            let srv_urls = records.srv.len().min(crate::discover::MAX_SRV_TARGETS);
            assert!(urls.len() == 1 || urls.len() == srv_urls, "{urls:?}");
            for url in urls {
                assert!(url.starts_with("https://") || url.starts_with("http://"));
            }
        }
        Err(e) => assert!(e.contains("§15.1"), "{e}"),
    }
}

fn check_fts(q: &str) {
    match query_terms(q) {
        Ok(terms) => match Terms::of(&terms) {
            None => assert!(q.split_whitespace().next().is_none(), "{q:?}"),
            Some(expr) => {
                let expr = expr.as_str();
                assert!(terms.len() <= MAX_TERMS, "{expr}");
                FTS.with(|c| {
                    let r: rusqlite::Result<i64> =
                        c.query_row("SELECT count(*) FROM t WHERE t MATCH ?1", [expr], |row| {
                            row.get(0)
                        });
                    if let Err(e) = r {
                        panic!("query {q:?} gave {expr:?}, not a valid FTS5 query: {e}");
                    }
                });
            }
        },
        Err(e) => {
            explained(&e);
            assert_eq!(e.field, "q");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    /// Regression (fuzz target `node_request_body`, corpus `crash-7dc6bc41…`): serde reads a
    /// struct from a JSON array, so `["", "", 3, "&4,"]` was a `BlobCreate` whose members the
    /// raw body does not have. Typed bodies must be objects.
    #[test]
    fn typed_bodies_are_json_objects() {
        let e = typed::<BlobCreate>(&json!(["a.txt", "text/plain"]), "v1.1 §16.7").unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.section.as_ref()),
            ("$body", "v1.1 §16.7")
        );
        let e = Registration::parse(&json!([]), "node.test", now(), &SpecRegistration).unwrap_err();
        assert_eq!(e.field, "$body");
        let b: BlobCreate = typed(
            &json!({"filename": "a.txt", "mime_type": "text/plain"}),
            "v1.1 §16.7",
        )
        .unwrap();
        assert_eq!(b.filename, "a.txt");
        request_body(b"\x9f[\"\",\"\",3,\"&4,\"]");
    }

    /// Replays `fuzz/corpus/<target>/` for every target of this crate; a missing or empty
    /// corpus fails (issue 19: every target has a committed seed corpus).
    #[test]
    fn every_node_target_replays_its_committed_corpus() {
        let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
        loom_protocol::fuzzing::replay_committed_corpora(&fuzz_dir, TARGETS);
    }
}
