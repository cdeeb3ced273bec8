//! The E2EE primitives against Wycheproof, and the profile's packages end to end (v1.1 §7.1,
//! §7.4; DESIGN.md §9).

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Nonce};
use loom_protocol::e2ee::crypto::{
    Sealing, hkdf_sha256, public_key, x25519_agree, xchacha_open, xchacha_seal,
};
use loom_protocol::e2ee::package::{PayloadPackage, WrappedKeyPackage};
use loom_protocol::e2ee::{
    AadKind, EncryptedContent, EpochParameters, Profile, Recipient, WrapRandomness, open, seal,
    seal_with_rng, unwrap_key,
};
use loom_protocol::keys::{b64url_decode, b64url_encode};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{Value, json};
use wycheproof::TestResult;
use zeroize::Zeroizing;

/// Counts of (valid passed, invalid refused, acceptable taken, acceptable refused).
#[derive(Default, Debug)]
struct Tally {
    valid: usize,
    invalid: usize,
    acceptable_taken: usize,
    acceptable_refused: usize,
}

#[test]
fn wycheproof_x25519() {
    use wycheproof::xdh::{TestFlag, TestName, TestSet};
    let set = TestSet::load(TestName::X25519).unwrap();
    let mut t = Tally::default();
    for g in set.test_groups {
        for case in g.tests {
            let secret: [u8; 32] = case.private_key.as_slice().try_into().unwrap();
            let public: [u8; 32] = case.public_key.as_slice().try_into().unwrap();
            let got = x25519_agree(&secret, &public, "t");
            let zero = case.shared_secret.iter().all(|b| *b == 0);
            match case.result {
                TestResult::Valid => {
                    assert_eq!(
                        got.unwrap().as_slice(),
                        &case.shared_secret[..],
                        "tc {}",
                        case.tc_id
                    );
                    t.valid += 1;
                }
                // "Acceptable": a library may compute it or refuse it. We compute every one
                // (twists, non-canonical keys) except an all-zero result, refused as RFC 7748
                // §6.1 allows; nothing else may be refused and nothing may be wrong.
                TestResult::Acceptable => match got {
                    Ok(s) => {
                        assert_eq!(s.as_slice(), &case.shared_secret[..], "tc {}", case.tc_id);
                        t.acceptable_taken += 1;
                    }
                    Err(_) => {
                        assert!(zero, "tc {} refused but its result is not zero", case.tc_id);
                        assert!(
                            case.flags.contains(&TestFlag::ZeroSharedSecret)
                                || case.flags.contains(&TestFlag::LowOrderPublic),
                            "tc {}",
                            case.tc_id
                        );
                        t.acceptable_refused += 1;
                    }
                },
                TestResult::Invalid => {
                    assert!(got.is_err(), "tc {}", case.tc_id);
                    t.invalid += 1;
                }
            }
        }
    }
    eprintln!("x25519: {t:?}");
    assert_eq!(
        t.valid + t.invalid + t.acceptable_taken + t.acceptable_refused,
        518
    );
    assert!(
        t.acceptable_refused > 0,
        "the zero-result refusal is exercised"
    );
}

type AeadFn = fn(&[u8], &[u8], &[u8], &[u8]) -> Result<Vec<u8>, ()>;

/// Runs a Wycheproof AEAD file: valid cases seal to the expected bytes and open back; invalid
/// ones (modified tags, wrong nonce sizes) never open. The files hold no "acceptable" case.
fn wycheproof_aead(name: wycheproof::aead::TestName, seal: AeadFn, open: AeadFn) -> Tally {
    let set = wycheproof::aead::TestSet::load(name).unwrap();
    let mut t = Tally::default();
    for g in set.test_groups {
        for case in g.tests {
            let mut sealed = case.ct.to_vec();
            sealed.extend_from_slice(&case.tag);
            let opened = open(&case.key, &case.nonce, &case.aad, &sealed);
            match case.result {
                TestResult::Valid => {
                    let enc = seal(&case.key, &case.nonce, &case.aad, &case.pt);
                    assert_eq!(enc.as_deref(), Ok(&sealed[..]), "tc {} seal", case.tc_id);
                    assert_eq!(
                        opened.as_deref(),
                        Ok(&case.pt[..]),
                        "tc {} open",
                        case.tc_id
                    );
                    t.valid += 1;
                }
                TestResult::Invalid => {
                    assert!(
                        opened.is_err(),
                        "tc {} ({:?}) opened",
                        case.tc_id,
                        case.flags
                    );
                    t.invalid += 1;
                }
                TestResult::Acceptable => {
                    panic!("tc {}: no acceptable AEAD cases expected", case.tc_id)
                }
            }
        }
    }
    t
}

fn ietf(k: &[u8], n: &[u8]) -> Result<(ChaCha20Poly1305, Nonce), ()> {
    Ok((
        ChaCha20Poly1305::new_from_slice(k).map_err(|_| ())?,
        Nonce::try_from(n).map_err(|_| ())?,
    ))
}

#[test]
fn wycheproof_xchacha20_poly1305() {
    // The profile's AEAD, through the functions the packages use.
    let t = wycheproof_aead(
        wycheproof::aead::TestName::XChaCha20Poly1305,
        |k, n, a, m| xchacha_seal(k, n, a, m).map_err(|_| ()),
        |k, n, a, m| xchacha_open(k, n, a, m).map_err(|_| ()),
    );
    eprintln!("xchacha20_poly1305: {t:?}");
    assert_eq!((t.valid, t.invalid), (246, 69));
}

#[test]
fn wycheproof_chacha20_poly1305() {
    // The IETF construction under XChaCha20-Poly1305 (same crate, same Poly1305).
    let t = wycheproof_aead(
        wycheproof::aead::TestName::ChaCha20Poly1305,
        |k, n, a, m| {
            let (c, nonce) = ietf(k, n)?;
            c.encrypt(&nonce, Payload { msg: m, aad: a })
                .map_err(|_| ())
        },
        |k, n, a, m| {
            let (c, nonce) = ietf(k, n)?;
            c.decrypt(&nonce, Payload { msg: m, aad: a })
                .map_err(|_| ())
        },
    );
    eprintln!("chacha20_poly1305: {t:?}");
    assert_eq!((t.valid, t.invalid), (256, 69));
}

#[test]
fn wycheproof_hkdf_sha256() {
    use wycheproof::hkdf::{TestName, TestSet};
    let set = TestSet::load(TestName::HkdfSha256).unwrap();
    let (mut valid, mut invalid) = (0, 0);
    for g in set.test_groups {
        for case in g.tests {
            let mut okm = vec![0u8; case.size];
            let got = hkdf_sha256(&case.salt, &case.ikm, &case.info, &mut okm);
            match case.result {
                TestResult::Valid => {
                    got.unwrap();
                    assert_eq!(okm, case.okm.to_vec(), "tc {}", case.tc_id);
                    valid += 1;
                }
                _ => {
                    assert!(got.is_err(), "tc {}", case.tc_id);
                    invalid += 1;
                }
            }
        }
    }
    eprintln!("hkdf_sha256: valid {valid}, invalid {invalid}");
    assert_eq!((valid, invalid), (83, 3));
}

fn recipient(name: &str, seed: u8) -> (Recipient, [u8; 32]) {
    let secret = [seed; 32];
    (
        Recipient {
            to: format!("loom://{name}@a.test"),
            key_id: format!("k_enc_{name}_1"),
            public: public_key(&secret),
        },
        secret,
    )
}

fn sealing(epoch: u64, counter: u64) -> Sealing {
    Sealing {
        profile: Profile::V1,
        epoch,
        replay_counter: counter,
        kind: AadKind::Payload,
    }
}

fn sealed_for_alice_and_bob() -> (EncryptedContent, [u8; 32], [u8; 32]) {
    let (alice, a_secret) = recipient("alice", 1);
    let (bob, b_secret) = recipient("bob", 2);
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let content = seal_with_rng(
        &sealing(3, 9),
        b"{\"human\":{\"text\":\"hi\"}}",
        &[alice, bob],
        &mut rng,
    )
    .unwrap();
    (content, a_secret, b_secret)
}

#[test]
fn members_open_what_was_sealed_for_them_and_no_one_else_does() {
    let (content, a, b) = sealed_for_alice_and_bob();
    for (who, secret) in [("alice", a), ("bob", b)] {
        let opened = open(
            &content,
            AadKind::Payload,
            &format!("loom://{who}@a.test"),
            None,
            &secret,
        )
        .unwrap();
        assert_eq!(&opened.plaintext[..], b"{\"human\":{\"text\":\"hi\"}}");
    }
    // Carol was never a recipient; with Bob's wrapped key she still cannot unwrap.
    let (_, carol) = recipient("carol", 3);
    let e = open(
        &content,
        AadKind::Payload,
        "loom://carol@a.test",
        None,
        &carol,
    )
    .unwrap_err();
    assert_eq!(e.field, "content.wrapped_keys");
    let e = open(
        &content,
        AadKind::Payload,
        "loom://bob@a.test",
        None,
        &carol,
    )
    .unwrap_err();
    assert!(e.field.ends_with(".ciphertext"), "{e}");
    // The parsed wire form is the same value.
    let again = EncryptedContent::parse(&content.to_value(), "content").unwrap();
    assert_eq!(again, content);
}

/// Every bound member changed alone breaks opening (or parsing) with an error naming it.
#[test]
fn tampering_with_any_bound_member_is_refused() {
    let (content, _, b) = sealed_for_alice_and_bob();
    let bob = "loom://bob@a.test";
    let opens = |c: &EncryptedContent, kind| open(c, kind, bob, None, &b).map(|_| ());
    assert!(opens(&content, AadKind::Payload).is_ok());
    assert!(
        opens(&content, AadKind::Attachment).is_err(),
        "a payload is not an attachment"
    );
    let mut c = content.clone();
    c.replay_counter += 1;
    assert!(
        opens(&c, AadKind::Payload).is_err(),
        "replay counter is in the AAD"
    );
    let mut c = content.clone();
    c.epoch += 1;
    assert_eq!(
        opens(&c, AadKind::Payload).unwrap_err().field,
        "content.profile_commitment"
    );
    let mut c = content.clone();
    c.epoch += 1;
    c.profile_commitment = Profile::V1.commitment(c.epoch);
    assert!(
        opens(&c, AadKind::Payload).is_err(),
        "the epoch is in the AAD and the wrap"
    );
    let mut c = content.clone();
    c.profile = Profile::V2;
    c.profile_commitment = Profile::V2.commitment(c.epoch);
    assert!(
        opens(&c, AadKind::Payload).is_err(),
        "the profile is in the AAD"
    );
    // Flip one bit of the tag, of the ciphertext, of the nonce.
    for at in [usize::MAX, 30, 2] {
        let mut bytes = b64url_decode(&content.ciphertext).unwrap();
        let i = if at == usize::MAX {
            bytes.len() - 1
        } else {
            at
        };
        bytes[i] ^= 1;
        let mut c = content.clone();
        c.ciphertext = b64url_encode(&bytes);
        assert!(opens(&c, AadKind::Payload).is_err(), "bit at {i}");
    }
    // A wrapped key moved to another recipient's name fails its binding.
    let mut c = content.clone();
    c.wrapped_keys[1].key_id = "k_enc_bob_2".into();
    assert!(opens(&c, AadKind::Payload).is_err());
}

#[test]
fn fixed_inputs_give_fixed_packages() {
    let (alice, _) = recipient("alice", 1);
    let make = || {
        let random = WrapRandomness {
            ephemeral_secret: Zeroizing::new([5; 32]),
            nonce: [6; 24],
        };
        seal(
            &sealing(0, 0),
            b"x",
            &[4; 32],
            &[8; 24],
            &[(alice.clone(), random)],
        )
        .unwrap()
    };
    assert_eq!(make(), make());
    let c = make();
    let p = PayloadPackage::parse(&c.ciphertext, "c").unwrap();
    assert_eq!(p.nonce, [8; 24]);
    assert_eq!(p.sealed.len(), 1 + 16);
    let w = WrappedKeyPackage::parse(&c.wrapped_keys[0].ciphertext, "w").unwrap();
    assert_eq!(w.ephemeral_public, public_key(&[5; 32]));
    let cek = unwrap_key(Profile::V1, 0, &c.wrapped_keys[0], &[1; 32], "w").unwrap();
    assert_eq!(*cek, [4; 32]);
}

#[test]
fn parsing_names_the_first_wrong_member() {
    let (content, _, _) = sealed_for_alice_and_bob();
    let good = content.to_value();
    let cases: Vec<(&str, Value, &str)> = vec![
        ("/profile", json!("loom-e2ee-mls-1"), "content.profile"),
        ("/profile", json!("loom-e2ee-9"), "content.profile"),
        ("/epoch", json!(-1), "content.epoch"),
        ("/replay_counter", json!("1"), "content.replay_counter"),
        (
            "/profile_commitment",
            json!("AAAA"),
            "content.profile_commitment",
        ),
        ("/ciphertext", json!("AQ"), "content.ciphertext"),
        ("/wrapped_keys", json!([]), "content.wrapped_keys"),
        (
            "/wrapped_keys/0/to",
            json!("bridge://x@mail.test"),
            "content.wrapped_keys[0].to",
        ),
        (
            "/wrapped_keys/1/to",
            json!("loom://alice@a.test"),
            "content.wrapped_keys[1].to",
        ),
        (
            "/wrapped_keys/0/key_id",
            json!("k_sign_1"),
            "content.wrapped_keys[0].key_id",
        ),
        (
            "/wrapped_keys/0/algorithm",
            json!("RSA-OAEP"),
            "content.wrapped_keys[0].algorithm",
        ),
        (
            "/wrapped_keys/0/ciphertext",
            json!("AQID"),
            "content.wrapped_keys[0].ciphertext",
        ),
    ];
    for (pointer, value, field) in cases {
        let mut v = good.clone();
        *v.pointer_mut(pointer).unwrap() = value;
        let e = EncryptedContent::parse(&v, "content").unwrap_err();
        assert_eq!(e.field, field, "{pointer}: {e}");
    }
    let mut v = good.clone();
    v.as_object_mut().unwrap().remove("replay_counter");
    assert_eq!(
        EncryptedContent::parse(&v, "content").unwrap_err().field,
        "content.replay_counter"
    );
    // Aliases and the case-insensitive algorithm spellings the existing implementation uses.
    let mut v = good.clone();
    v["profile"] = json!("loom-e2ee-1");
    v["wrapped_keys"][0]["algorithm"] = json!("x25519-hkdf-sha-256");
    assert!(EncryptedContent::parse(&v, "content").is_ok());
}

#[test]
fn epoch_parameters_round_trip() {
    let (content, _, _) = sealed_for_alice_and_bob();
    let p = EpochParameters {
        profile: Profile::V1,
        epoch: 3,
        wrapped_keys: content.wrapped_keys.clone(),
    };
    assert_eq!(
        EpochParameters::parse(p.to_value().as_object().unwrap()),
        Ok(p)
    );
}
