//! E2EE content and packages (v1.1 §7.4; DESIGN.md §9): any JSON parsed as encrypted content
//! or `encryption.epoch@v1` parameters never panics and a parsed value round-trips; a genuine
//! package changed anywhere the input says never opens, and an unchanged one always does.

use super::assert_explained;
use crate::e2ee::crypto::{Sealing, public_key};
use crate::e2ee::package::PayloadPackage;
use crate::e2ee::{
    AadKind, EncryptedContent, EpochParameters, Profile, Recipient, WrapRandomness, open, seal,
};
use crate::error::ProtocolError;
use crate::keys::{b64url_decode, b64url_encode};
use arbitrary::Unstructured;
use serde_json::Value;

const BOB: &str = "loom://bob@b.test";

fn flip(text: &str, at: usize) -> String {
    let mut bytes = b64url_decode(text).unwrap_or_default();
    if !bytes.is_empty() {
        let i = at % bytes.len();
        bytes[i] ^= 0x01;
    }
    b64url_encode(&bytes)
}

fn parse_anything(data: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        if let Ok(text) = std::str::from_utf8(data) {
            let _ = PayloadPackage::parse(text.trim(), "content.ciphertext");
        }
        return;
    };
    match EncryptedContent::parse(&v, "content") {
        Ok(c) => {
            assert_eq!(
                EncryptedContent::parse(&c.to_value(), "content").as_ref(),
                Ok(&c)
            );
            if let Err(e) = open(&c, AadKind::Payload, BOB, None, &[2; 32]) {
                assert_explained(&ProtocolError::from(e));
            }
        }
        Err(e) => assert_explained(&ProtocolError::from(e)),
    }
    if let Some(params) = v.as_object()
        && let Err(e) = EpochParameters::parse(params)
    {
        assert_explained(&ProtocolError::from(e));
    }
}

/// Fuzz body `e2ee`.
pub fn e2ee(data: &[u8]) {
    parse_anything(data);
    let mut u = Unstructured::new(data);
    let plaintext: Vec<u8> = u.arbitrary().unwrap_or_default();
    let seed = |u: &mut Unstructured| u.arbitrary::<[u8; 32]>().unwrap_or([7; 32]);
    let recipients: Vec<(Recipient, WrapRandomness)> = [("alice@a.test", 1u8), ("bob@b.test", 2)]
        .into_iter()
        .map(|(who, k)| {
            let r = Recipient {
                to: format!("loom://{who}"),
                key_id: format!("k_enc_{k}x"),
                public: public_key(&[k; 32]),
            };
            let random = WrapRandomness {
                ephemeral_secret: seed(&mut u).into(),
                nonce: seed(&mut u)[..24].try_into().unwrap_or([0; 24]),
            };
            (r, random)
        })
        .collect();
    let s = Sealing {
        profile: if u.arbitrary().unwrap_or(false) {
            Profile::V2
        } else {
            Profile::V1
        },
        epoch: u.arbitrary::<u32>().unwrap_or(0).into(),
        replay_counter: u.arbitrary::<u32>().unwrap_or(0).into(),
        kind: AadKind::Payload,
    };
    let nonce: [u8; 24] = seed(&mut u)[..24].try_into().unwrap_or([0; 24]);
    let Ok(genuine) = seal(&s, &plaintext, &seed(&mut u), &nonce, &recipients) else {
        return; // an ephemeral key of low order: refused, as it must be
    };
    let mut changed = genuine.clone();
    let mut kind = AadKind::Payload;
    let at = u.arbitrary::<usize>().unwrap_or(0);
    match u.int_in_range(0..=6u8).unwrap_or(0) {
        0 => {}
        1 => changed.ciphertext = flip(&changed.ciphertext, at),
        2 => changed.wrapped_keys[1].ciphertext = flip(&changed.wrapped_keys[1].ciphertext, at),
        3 => changed.replay_counter ^= 1 + (at as u64 & 0xff),
        4 => {
            changed.epoch ^= 1 + (at as u64 & 0xff);
            changed.profile_commitment = changed.profile.commitment(changed.epoch);
        }
        5 => kind = AadKind::Attachment,
        _ => changed.wrapped_keys[1].key_id.push('x'),
    }
    let opened = open(&changed, kind, BOB, None, &[2; 32]);
    if changed == genuine && kind == AadKind::Payload {
        assert_eq!(
            opened
                .expect("a genuine package opens")
                .plaintext
                .as_slice(),
            &plaintext[..]
        );
    } else {
        assert!(opened.is_err(), "a changed package opened");
    }
}
