//! LOOM-HTTP-SIG-1 (v1.1 §15.3–§15.5, DESIGN.md §9).

mod common;

use common::key;
use ed25519_dalek::{Signature, Verifier as _};
use loom_protocol::http_sig::{
    MemoryNonceCache, RequestParts, SignedHeaders, canonical_string, sign_request, verify_request,
};
use loom_protocol::keys::b64url_decode;
use loom_protocol::{ErrorCode, ManualClock, ProtocolError, Timestamp};
use sha2::{Digest, Sha256};

const BODY: &[u8] = br#"{"loom":"1.1","sender_node":"a.test","delivery_id":"dlv_1","timestamp":"2026-02-16T18:30:00.000Z","envelopes":[]}"#;

fn now() -> Timestamp {
    Timestamp::parse("2026-02-16T18:30:00Z").unwrap()
}

fn req(body: &[u8]) -> RequestParts<'_> {
    RequestParts {
        method: "POST",
        path: "/v1/federation/deliver",
        body,
    }
}

fn signed() -> SignedHeaders {
    sign_request(
        &req(BODY),
        "a.test",
        "k_node_sign_a_1",
        &key(40),
        now(),
        &[7u8; 16],
    )
}

fn check(
    r: &RequestParts<'_>,
    h: &SignedHeaders,
    cache: &mut MemoryNonceCache,
    clock: &ManualClock,
) -> Result<(), ProtocolError> {
    verify_request(r, h, &key(40).verifying_key(), cache, clock)
}

#[test]
fn canonical_string_and_raw_signature() {
    let h = signed();
    let text = canonical_string(&req(BODY), &h.timestamp, &h.nonce);
    let expected = format!(
        "POST\n/v1/federation/deliver\n{}\n2026-02-16T18:30:00.000Z\n{}",
        hex::encode(Sha256::digest(BODY)),
        h.nonce
    );
    assert_eq!(text, expected);
    let sig: [u8; 64] = b64url_decode(&h.signature).unwrap().try_into().unwrap();
    key(40)
        .verifying_key()
        .verify(expected.as_bytes(), &Signature::from_bytes(&sig))
        .unwrap();
    assert_eq!(
        canonical_string(
            &RequestParts {
                method: "post",
                path: "/v1/federation/deliver?x=1",
                body: BODY
            },
            &h.timestamp,
            &h.nonce
        ),
        expected
    );
}

#[test]
fn valid_requests_pass_once() {
    let clock = ManualClock::new(now());
    let mut cache = MemoryNonceCache::default();
    let h = signed();
    assert_eq!(check(&req(BODY), &h, &mut cache, &clock), Ok(()));
    let e = check(&req(BODY), &h, &mut cache, &clock).unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (ErrorCode::SignatureInvalid, "X-LOOM-Nonce")
    );
    // After 15 minutes the nonce has aged out of the cache; the timestamp is stale by then.
    clock.advance_ms(15 * 60 * 1000 + 1);
    assert_eq!(
        check(&req(BODY), &h, &mut cache, &clock).unwrap_err().field,
        "X-LOOM-Timestamp"
    );
}

#[test]
fn freshness_window_is_plus_minus_five_minutes() {
    let h = signed();
    for (offset, ok) in [
        (300_000, true),
        (300_001, false),
        (-300_000, true),
        (-300_001, false),
    ] {
        let clock = ManualClock::new(now());
        clock.advance_ms(offset);
        let r = check(&req(BODY), &h, &mut MemoryNonceCache::default(), &clock);
        assert_eq!(r.is_ok(), ok, "offset {offset}: {r:?}");
        if let Err(e) = r {
            assert_eq!(
                (e.field.as_str(), e.section),
                ("X-LOOM-Timestamp", "v1.1 §15.5")
            );
        }
    }
}

#[test]
fn any_change_breaks_the_signature() {
    let clock = ManualClock::new(now());
    let h = signed();
    let fails = |r: RequestParts<'_>, h: &SignedHeaders| {
        check(&r, h, &mut MemoryNonceCache::default(), &clock).unwrap_err()
    };
    assert_eq!(fails(req(b"{}"), &h).field, "X-LOOM-Signature");
    assert_eq!(
        fails(
            RequestParts {
                path: "/v1/federation/deliver2",
                ..req(BODY)
            },
            &h
        )
        .field,
        "X-LOOM-Signature"
    );
    assert_eq!(
        fails(
            RequestParts {
                method: "PUT",
                ..req(BODY)
            },
            &h
        )
        .field,
        "X-LOOM-Signature"
    );
    let mut h2 = h.clone();
    h2.nonce = "other".into();
    assert_eq!(fails(req(BODY), &h2).field, "X-LOOM-Signature");
    let mut h2 = h.clone();
    h2.timestamp = "2026-02-16T18:30:01.000Z".into();
    assert_eq!(fails(req(BODY), &h2).field, "X-LOOM-Signature");
    let mut h2 = h.clone();
    h2.signature = "!!".into();
    assert_eq!(fails(req(BODY), &h2).field, "X-LOOM-Signature");
    let mut h2 = h.clone();
    h2.node = String::new();
    assert_eq!(fails(req(BODY), &h2).field, "X-LOOM-Node");
    let mut h2 = h.clone();
    h2.timestamp = "yesterday".into();
    assert_eq!(fails(req(BODY), &h2).field, "X-LOOM-Timestamp");
    // Another node's key does not verify.
    let e = verify_request(
        &req(BODY),
        &h,
        &key(41).verifying_key(),
        &mut MemoryNonceCache::default(),
        &clock,
    )
    .unwrap_err();
    assert_eq!(e.field, "X-LOOM-Signature");
}

#[test]
fn forged_requests_do_not_burn_nonces() {
    let clock = ManualClock::new(now());
    let mut cache = MemoryNonceCache::default();
    let h = signed();
    let mut forged = h.clone();
    forged.signature = signed().signature.replace('A', "B");
    let _ = check(&req(b"tampered"), &forged, &mut cache, &clock);
    assert_eq!(check(&req(BODY), &h, &mut cache, &clock), Ok(()));
}

#[test]
fn replays_cannot_dodge_the_cache_by_respelling_the_unsigned_node_header() {
    let clock = ManualClock::new(now());
    let mut cache = MemoryNonceCache::default();
    let h = signed();
    assert!(check(&req(BODY), &h, &mut cache, &clock).is_ok());
    for spelling in ["A.TEST", "a.test."] {
        let mut replay = h.clone();
        replay.node = spelling.into();
        let e = check(&req(BODY), &replay, &mut cache, &clock).unwrap_err();
        assert_eq!(e.field, "X-LOOM-Nonce", "{spelling}");
    }
}

#[test]
fn nonces_are_per_node() {
    let clock = ManualClock::new(now());
    let mut cache = MemoryNonceCache::default();
    let a = sign_request(
        &req(BODY),
        "a.test",
        "k_node_sign_1",
        &key(40),
        now(),
        &[1; 16],
    );
    let b = sign_request(
        &req(BODY),
        "b.test",
        "k_node_sign_1",
        &key(40),
        now(),
        &[1; 16],
    );
    assert_eq!(a.nonce, b.nonce);
    assert!(check(&req(BODY), &a, &mut cache, &clock).is_ok());
    assert!(check(&req(BODY), &b, &mut cache, &clock).is_ok());
}

#[test]
fn the_wrapper_sender_must_be_the_signing_node() {
    use loom_protocol::http_sig::check_wrapper_sender;
    let w = serde_json::json!({"loom": "1.1", "sender_node": "node-a.test"});
    assert!(check_wrapper_sender(&w, "node-a.test").is_ok());
    assert!(check_wrapper_sender(&w, "NODE-A.test.").is_ok());
    let e = check_wrapper_sender(&w, "node-b.test").unwrap_err();
    assert_eq!(e.code, loom_protocol::ErrorCode::SignatureInvalid);
    assert_eq!(e.field, "sender_node");
    assert!(check_wrapper_sender(&serde_json::json!({"sender_node": 7}), "node-a.test").is_err());
}

mod v2 {
    use super::*;
    use loom_protocol::http_sig::{
        NonceCacheLimits, SigningForm, sign_request_with_epoch, signing_string,
        verify_request_detailed,
    };
    use loom_protocol::keys::sign_b64url;

    fn verify(h: &SignedHeaders) -> Result<SigningForm, ProtocolError> {
        verify_request_detailed(
            &req(BODY),
            h,
            &key(40).verifying_key(),
            &mut MemoryNonceCache::default(),
            now(),
        )
        .map(|v| v.form)
    }

    #[test]
    fn the_six_line_string_appends_the_trust_epoch() {
        let five = canonical_string(&req(BODY), "T", "N");
        assert_eq!(signing_string(&req(BODY), "T", "N", None), five);
        assert_eq!(
            signing_string(&req(BODY), "T", "N", Some("12")),
            format!("{five}\n12")
        );
    }

    /// DESIGN.md §9, v1.1 §15.3: the existing node sends `X-LOOM-Trust-Epoch: 1` beside a
    /// five-line signature; that signature is valid, and the unsigned epoch is not handed on.
    #[test]
    fn a_five_line_signature_verifies_beside_an_epoch_header() {
        let mut added = signed();
        added.trust_epoch = Some("1".into());
        let v = verify_request_detailed(
            &req(BODY),
            &added,
            &key(40).verifying_key(),
            &mut MemoryNonceCache::default(),
            now(),
        )
        .unwrap();
        assert_eq!((v.form, v.trust_epoch), (SigningForm::V1, None));
        // Even beside an epoch that could never be signed.
        added.trust_epoch = Some("not-a-number".into());
        assert_eq!(verify(&added), Ok(SigningForm::V1));
    }

    #[test]
    fn a_signed_trust_epoch_is_bound_to_its_signature() {
        let h = sign_request_with_epoch(
            &req(BODY),
            "a.test",
            "k",
            &key(40),
            now(),
            &[9; 16],
            Some("3"),
        );
        assert_eq!(h.trust_epoch.as_deref(), Some("3"));
        assert_eq!(verify(&h), Ok(SigningForm::V2));
        // Changing the epoch, or dropping the header, breaks the signature.
        let mut other = h.clone();
        other.trust_epoch = Some("4".into());
        assert_eq!(verify(&other).unwrap_err().field, "X-LOOM-Signature");
        let mut dropped = h.clone();
        dropped.trust_epoch = None;
        assert_eq!(verify(&dropped).unwrap_err().field, "X-LOOM-Signature");
        let mut junk = h.clone();
        junk.trust_epoch = Some("3\n".into());
        assert_eq!(verify(&junk).unwrap_err().field, "X-LOOM-Trust-Epoch");
    }

    #[test]
    fn six_lines_with_an_empty_epoch_verify_without_the_header() {
        let mut h = signed();
        let text = format!("{}\n", canonical_string(&req(BODY), &h.timestamp, &h.nonce));
        h.signature = sign_b64url(&key(40), None, text.as_bytes());
        assert_eq!(verify(&h), Ok(SigningForm::V2));
        assert_eq!(verify(&signed()), Ok(SigningForm::V1));
    }

    /// Without the nonce rule, a six-line signature over nonce `n` and epoch `5` would verify
    /// as a five-line one over nonce "n\n5": a different cache slot, i.e. a replay.
    #[test]
    fn a_nonce_cannot_smuggle_a_line_break() {
        let h = sign_request_with_epoch(
            &req(BODY),
            "a.test",
            "k",
            &key(40),
            now(),
            &[9; 16],
            Some("5"),
        );
        let mut smuggled = h.clone();
        smuggled.nonce = format!("{}\n5", h.nonce);
        smuggled.trust_epoch = None;
        assert_eq!(verify(&smuggled).unwrap_err().field, "X-LOOM-Nonce");
        let mut long = signed();
        long.nonce = "n".repeat(257);
        assert_eq!(verify(&long).unwrap_err().field, "X-LOOM-Nonce");
    }

    #[test]
    fn a_full_replay_cache_refuses_with_429() {
        let mut cache = MemoryNonceCache::with_limits(NonceCacheLimits {
            max_per_node: 1,
            ..NonceCacheLimits::default()
        });
        let clock = ManualClock::new(now());
        assert_eq!(check(&req(BODY), &signed(), &mut cache, &clock), Ok(()));
        let second = sign_request(&req(BODY), "a.test", "k", &key(40), now(), &[8; 16]);
        let e = check(&req(BODY), &second, &mut cache, &clock).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_str()),
            (ErrorCode::RateLimitExceeded, "X-LOOM-Nonce")
        );
    }

    #[test]
    fn headers_read_case_insensitively() {
        let h = SignedHeaders::from_pairs([
            ("x-loom-node", "a.test"),
            ("X-LOOM-TIMESTAMP", "t"),
            ("x-loom-nonce", "n"),
            ("X-Loom-Key-Id", "k"),
            ("x-loom-signature", "s"),
            ("x-loom-trust-epoch", "2"),
            ("content-type", "application/json"),
        ]);
        assert_eq!(
            (
                h.node.as_str(),
                h.timestamp.as_str(),
                h.nonce.as_str(),
                h.key_id.as_str(),
                h.signature.as_str(),
                h.trust_epoch.as_deref()
            ),
            ("a.test", "t", "n", "k", "s", Some("2"))
        );
        assert_eq!(SignedHeaders::from_pairs([]).trust_epoch, None);
        assert_eq!(h.all_pairs().len(), 6);
    }
}
