//! `e2ee`: the X25519/XChaCha20 E2EE profiles (v1.1 §7.1, §7.4, §10.6, §23.1; wire format of
//! DESIGN.md §9). Packages are assembled here from the primitives (x25519-dalek, hkdf,
//! chacha20poly1305) with additional data written out by hand in canonical key order, not by
//! `loom-protocol`'s e2ee module; every verdict, path and plaintext is a literal of a case table.

use super::keys::seed;
use super::schema::{AreaSchema, string};
use super::{Case, FileBuilder};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const V1: &str = "loom-e2ee-x25519-xchacha20-v1";
const V2: &str = "loom-e2ee-x25519-xchacha20-v2";
const WRAP: &str = "X25519-HKDF-SHA256";
const PAYLOAD: &str = "loom.e2ee.payload@v1";
const ATTACHMENT: &str = "loom.e2ee.attachment@v1";
const BAD: &str = "ENVELOPE_INVALID";
const SEAL: &[&str] = &["v1.1 §7.4", "v1.1 §7.1"];
const PROFILES: &[&str] = &["v1.1 §7.4.1", "v1.1 §7.4.2"];
const REPLAY: &[&str] = &["v1.1 §23.1"];
const TEXT: &str = "Quarterly numbers attached; please review by Friday.";

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A participant: identity, `k_enc_` key id, and the name of its X25519 key seed.
#[derive(Debug, Clone, Copy)]
struct Party {
    to: &'static str,
    key_id: &'static str,
    key: &'static str,
}

const ALICE: Party = Party {
    to: "loom://alice@a.test",
    key_id: "k_enc_alice_1",
    key: "e2ee-alice",
};
const BOB: Party = Party {
    to: "loom://bob@b.test",
    key_id: "k_enc_bob_1",
    key: "e2ee-bob",
};
const CAROL: Party = Party {
    to: "loom://carol@a.test",
    key_id: "k_enc_carol_1",
    key: "e2ee-carol",
};
const DAVE: Party = Party {
    to: "loom://dave@a.test",
    key_id: "k_enc_dave_1",
    key: "e2ee-dave",
};

fn secret(name: &str) -> [u8; 32] {
    seed(name)
}

fn public(name: &str) -> [u8; 32] {
    x25519_dalek::x25519(secret(name), x25519_dalek::X25519_BASEPOINT_BYTES)
}

/// `base64url(SHA-256(JCS(descriptor)))`, the descriptor written in sorted key order.
fn commitment(profile: &str, epoch: u64) -> String {
    let descriptor = format!(
        r#"{{"attachment_aad_type":"{ATTACHMENT}","cipher":"XChaCha20-Poly1305","epoch":{epoch},"kdf":"HKDF-SHA-256","key_agreement":"X25519","payload_aad_type":"{PAYLOAD}","payload_ciphertext_package_version":1,"profile":"{profile}","profile_commitment_required":true,"recipient_key_algorithm":"X25519","replay_counter_required":true,"type":"loom.e2ee.profile_commitment@v1","wrapped_key_aad_type":"loom.e2ee.wrapped_key@v1","wrapped_key_algorithms":["{WRAP}"],"wrapped_key_ciphertext_package_version":1}}"#
    );
    b64(&Sha256::digest(descriptor.as_bytes()))
}

fn wrap_binding(profile: &str, epoch: u64, to: &str, key_id: &str) -> String {
    format!(
        r#"{{"algorithm":"{WRAP}","epoch":{epoch},"key_id":"{key_id}","profile":"{profile}","to":"{to}","type":"loom.e2ee.wrapped_key@v1"}}"#
    )
}

fn payload_aad(kind: &str, profile: &str, epoch: u64, counter: u64, commit: &str) -> String {
    format!(
        r#"{{"epoch":{epoch},"profile":"{profile}","profile_commitment":"{commit}","replay_counter":{counter},"type":"{kind}"}}"#
    )
}

fn xchacha(key: &[u8; 32], nonce: &[u8; 24], aad: &str, msg: &[u8]) -> Vec<u8> {
    XChaCha20Poly1305::new_from_slice(key)
        .unwrap()
        .encrypt(
            &XNonce::from(*nonce),
            Payload {
                msg,
                aad: aad.as_bytes(),
            },
        )
        .unwrap()
}

fn nonce_of(name: &str) -> [u8; 24] {
    seed(name)[..24].try_into().unwrap()
}

/// What to seal and for whom; randomness from named seeds.
#[derive(Debug, Clone)]
struct Seal {
    profile: &'static str,
    epoch: u64,
    counter: u64,
    kind: &'static str,
    plaintext: String,
    tag: &'static str,
    to: Vec<Party>,
}

fn base(tag: &'static str) -> Seal {
    Seal {
        profile: V1,
        epoch: 3,
        counter: 9,
        kind: PAYLOAD,
        plaintext: format!(r#"{{"human":{{"format":"plaintext","text":"{TEXT}"}}}}"#),
        tag,
        to: vec![ALICE, BOB],
    }
}

impl Seal {
    fn cek(&self) -> [u8; 32] {
        seed(&format!("e2ee-cek-{}", self.tag))
    }
    fn nonce(&self) -> [u8; 24] {
        nonce_of(&format!("e2ee-nonce-{}", self.tag))
    }
    fn ephemeral(&self, p: &Party) -> String {
        format!("e2ee-eph-{}-{}", self.tag, p.key)
    }
    fn wrap_nonce(&self, p: &Party) -> [u8; 24] {
        nonce_of(&format!("e2ee-wrap-nonce-{}-{}", self.tag, p.key))
    }

    fn wrapped(&self, p: &Party) -> Value {
        let eph = self.ephemeral(p);
        let shared = x25519_dalek::x25519(secret(&eph), public(p.key));
        let salt = Sha256::digest(format!(
            "loom.e2ee.wrap.salt.v1|{}|{}|{WRAP}",
            self.profile, self.epoch
        ));
        let info = wrap_binding(self.profile, self.epoch, p.to, p.key_id);
        let mut key = [0u8; 32];
        Hkdf::<Sha256>::new(Some(&salt), &shared)
            .expand(info.as_bytes(), &mut key)
            .unwrap();
        let sealed = xchacha(&key, &self.wrap_nonce(p), &info, &self.cek());
        let mut package = vec![1u8];
        package.extend_from_slice(&public(&eph));
        package.extend_from_slice(&self.wrap_nonce(p));
        package.extend_from_slice(&sealed);
        json!({"to": p.to, "algorithm": WRAP, "key_id": p.key_id, "ciphertext": b64(&package)})
    }

    /// The encrypted `content` (DESIGN.md §9).
    fn content(&self) -> Value {
        let commit = commitment(self.profile, self.epoch);
        let aad = payload_aad(self.kind, self.profile, self.epoch, self.counter, &commit);
        let mut package = vec![1u8];
        package.extend_from_slice(&self.nonce());
        package.extend(xchacha(
            &self.cek(),
            &self.nonce(),
            &aad,
            self.plaintext.as_bytes(),
        ));
        json!({
            "encrypted": true,
            "profile": self.profile,
            "epoch": self.epoch,
            "replay_counter": self.counter,
            "profile_commitment": commit,
            "ciphertext": b64(&package),
            "wrapped_keys": self.to.iter().map(|p| self.wrapped(p)).collect::<Vec<_>>(),
        })
    }

    /// The `e2ee-seal` inputs that reproduce [`Seal::content`].
    fn seal_inputs(&self, case: Case) -> Case {
        let recipients: Vec<Value> = self
            .to
            .iter()
            .map(|p| {
                json!({"to": p.to, "key_id": p.key_id, "public_key": b64(&public(p.key)),
                "ephemeral_private_key": b64(&secret(&self.ephemeral(p))), "wrap_nonce": b64(&self.wrap_nonce(p))})
            })
            .collect();
        case.input("profile", self.profile)
            .input("epoch", self.epoch)
            .input("replay_counter", self.counter)
            .input("aad_kind", aad_kind_name(self.kind))
            .input("plaintext", self.plaintext.clone())
            .input("cek", b64(&self.cek()))
            .input("nonce", b64(&self.nonce()))
            .input("recipients", recipients)
    }
}

fn aad_kind_name(kind: &str) -> &'static str {
    if kind == ATTACHMENT {
        "attachment"
    } else {
        "payload"
    }
}

fn recipient(p: &Party, key_of: &str) -> Value {
    json!({"to": p.to, "key_id": p.key_id, "private_key": b64(&secret(key_of))})
}

/// An `e2ee-open` case: `who` opens `content` (as `kind`) with the private key `key_of`.
fn open_case(
    id: &str,
    comment: &str,
    content: Value,
    kind: &str,
    who: &Party,
    key_of: &str,
) -> Case {
    Case::new(id, comment, SEAL)
        .input("content", content)
        .input("aad_kind", aad_kind_name(kind))
        .input("recipient", recipient(who, key_of))
}

fn flip(text: &str, at: isize) -> String {
    let mut bytes = URL_SAFE_NO_PAD.decode(text).unwrap();
    let i = if at < 0 {
        (bytes.len() as isize + at) as usize
    } else {
        at as usize
    };
    bytes[i] ^= 0x01;
    b64(&bytes)
}

fn edit(text: &str, f: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut bytes = URL_SAFE_NO_PAD.decode(text).unwrap();
    f(&mut bytes);
    b64(&bytes)
}

fn valid_open_cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut add = |id: &str, comment: &str, s: Seal, who: Party, flags: &[&str]| {
        let plaintext = s.plaintext.clone();
        out.push(
            open_case(id, comment, s.content(), s.kind, &who, who.key)
                .flags(flags)
                .valid_with(plaintext),
        );
    };
    add(
        "open.v1.bob",
        "A member opens a payload sealed for two",
        base("v1"),
        BOB,
        &["Valid"],
    );
    add(
        "open.v1.alice",
        "The sender, also a recipient, opens it too",
        base("v1"),
        ALICE,
        &["Valid"],
    );
    add(
        "open.v2.bob",
        "The v2 profile",
        Seal {
            profile: V2,
            ..base("v2")
        },
        BOB,
        &["Valid"],
    );
    add(
        "open.attachment",
        "An attachment package (attachment AAD type)",
        Seal {
            kind: ATTACHMENT,
            plaintext: "%PDF-1.7 fake attachment bytes".into(),
            ..base("att")
        },
        BOB,
        &["Valid"],
    );
    add(
        "open.empty",
        "An empty plaintext (the package is version, nonce and tag only)",
        Seal {
            plaintext: String::new(),
            ..base("empty")
        },
        BOB,
        &["Valid"],
    );
    add(
        "open.large",
        "A 4 KiB plaintext",
        Seal {
            plaintext: "x".repeat(4096),
            ..base("large")
        },
        BOB,
        &["Valid"],
    );
    add(
        "open.unicode",
        "A UTF-8 plaintext",
        Seal {
            plaintext: "Grüße, 世界 — ✓".into(),
            ..base("uni")
        },
        BOB,
        &["Valid"],
    );
    add(
        "open.epoch0-counter0",
        "Epoch 0, counter 0",
        Seal {
            epoch: 0,
            counter: 0,
            ..base("zero")
        },
        BOB,
        &["Valid"],
    );
    add(
        "open.large-epoch",
        "Epoch 2^53 - 1 (the largest exact JSON integer)",
        Seal {
            epoch: 9_007_199_254_740_991,
            counter: 1,
            ..base("bigepoch")
        },
        BOB,
        &["Valid"],
    );
    add(
        "open.three.carol",
        "Three recipients; the third opens",
        Seal {
            to: vec![ALICE, BOB, CAROL],
            ..base("three")
        },
        CAROL,
        &["Valid"],
    );
    add(
        "open.single",
        "A single recipient",
        Seal {
            to: vec![BOB],
            ..base("single")
        },
        BOB,
        &["Valid"],
    );
    // The alias as written: AAD and commitments always use the canonical id (DESIGN.md §9).
    let s = base("alias1");
    let mut c = s.content();
    c["profile"] = json!("loom-e2ee-1");
    out.push(
        open_case(
            "open.alias.v1",
            "profile written as its alias loom-e2ee-1",
            c,
            PAYLOAD,
            &BOB,
            BOB.key,
        )
        .flags(&["Valid", "Alias"])
        .valid_with(s.plaintext.clone()),
    );
    let s = Seal {
        profile: V2,
        ..base("alias2")
    };
    let mut c = s.content();
    c["profile"] = json!("loom-e2ee-2");
    out.push(
        open_case(
            "open.alias.v2",
            "profile written as its alias loom-e2ee-2",
            c,
            PAYLOAD,
            &BOB,
            BOB.key,
        )
        .flags(&["Valid", "Alias"])
        .valid_with(s.plaintext.clone()),
    );
    let s = base("lower");
    let mut c = s.content();
    c["wrapped_keys"][1]["algorithm"] = json!("x25519-hkdf-sha-256");
    out.push(open_case("open.algorithm-spelling", "The wrap algorithm in another spelling the existing implementation accepts (lower case, SHA-256)", c, PAYLOAD, &BOB, BOB.key).flags(&["Valid", "Interpretation"]).valid_with(s.plaintext.clone()));
    let s = base("plus");
    let mut c = s.content();
    c["wrapped_keys"][1]["algorithm"] = json!("X25519+HKDF-SHA256");
    out.push(open_case("open.algorithm-plus", "The wrap algorithm spelled with '+' (X25519+HKDF-SHA256), as the existing implementation accepts", c, PAYLOAD, &BOB, BOB.key).flags(&["Valid", "Interpretation"]).valid_with(s.plaintext.clone()));
    let s = base("nokid");
    let mut case = open_case(
        "open.without-key-id",
        "The recipient names only its identity; its one wrapped key is found by `to`",
        s.content(),
        PAYLOAD,
        &BOB,
        BOB.key,
    );
    case = case.input(
        "recipient",
        json!({"to": BOB.to, "private_key": b64(&secret(BOB.key))}),
    );
    out.push(case.flags(&["Valid"]).valid_with(s.plaintext.clone()));
    out
}

type Tamper = (
    &'static str,
    &'static str,
    &'static str,
    fn(&mut Value),
    &'static str,
);

/// Changes to a valid content and the member whose check must fail.
#[rustfmt::skip]
const TAMPERS: &[Tamper] = &[
    ("profile.mls", "The MLS profile is not implemented: fail closed", "UnsupportedProfile", |c| c["profile"] = json!("loom-e2ee-mls-1"), "content.profile"),
    ("profile.unknown", "An unknown profile", "UnsupportedProfile", |c| c["profile"] = json!("loom-e2ee-x25519-xchacha20-v3"), "content.profile"),
    ("profile.uppercase-alias", "Profile names are matched exactly", "UnsupportedProfile", |c| c["profile"] = json!("LOOM-E2EE-1"), "content.profile"),
    ("profile.missing", "No profile", "MissingMember", |c| drop(c.as_object_mut().unwrap().remove("profile")), "content.profile"),
    ("profile.number", "profile is a number", "MissingMember", |c| c["profile"] = json!(1), "content.profile"),
    ("encrypted.false", "encrypted is false", "MissingMember", |c| c["encrypted"] = json!(false), "content.encrypted"),
    ("epoch.missing", "No epoch", "MissingMember", |c| drop(c.as_object_mut().unwrap().remove("epoch")), "content.epoch"),
    ("epoch.negative", "A negative epoch", "MissingMember", |c| c["epoch"] = json!(-1), "content.epoch"),
    ("epoch.string", "epoch as a string", "MissingMember", |c| c["epoch"] = json!("3"), "content.epoch"),
    ("epoch.fraction", "epoch 3.5", "MissingMember", |c| c["epoch"] = json!(3.5), "content.epoch"),
    ("counter.missing", "No replay_counter (the profile requires it)", "MissingMember", |c| drop(c.as_object_mut().unwrap().remove("replay_counter")), "content.replay_counter"),
    ("counter.negative", "A negative replay_counter", "MissingMember", |c| c["replay_counter"] = json!(-9), "content.replay_counter"),
    ("counter.string", "replay_counter as a string", "MissingMember", |c| c["replay_counter"] = json!("9"), "content.replay_counter"),
    ("commitment.missing", "No profile_commitment (the profile requires it)", "MissingMember", |c| drop(c.as_object_mut().unwrap().remove("profile_commitment")), "content.profile_commitment"),
    ("commitment.other-epoch", "The commitment of another epoch", "Commitment", |c| c["profile_commitment"] = json!(commitment(V1, 4)), "content.profile_commitment"),
    ("commitment.other-profile", "The commitment of the other profile", "Commitment", |c| c["profile_commitment"] = json!(commitment(V2, 3)), "content.profile_commitment"),
    ("commitment.truncated", "A truncated commitment", "Commitment", |c| { let s = c["profile_commitment"].as_str().unwrap()[..40].to_owned(); c["profile_commitment"] = json!(s) }, "content.profile_commitment"),
    ("commitment.epoch-changed", "The epoch changed, the commitment kept", "Commitment", |c| c["epoch"] = json!(4), "content.profile_commitment"),
    ("commitment.profile-changed", "The profile changed to v2, the commitment kept", "Commitment", |c| c["profile"] = json!(V2), "content.profile_commitment"),
    ("ciphertext.missing", "No ciphertext", "MissingMember", |c| drop(c.as_object_mut().unwrap().remove("ciphertext")), "content.ciphertext"),
    ("ciphertext.padded", "Padded base64 is not base64url without padding", "Package", |c| { let s = format!("{}=", c["ciphertext"].as_str().unwrap()); c["ciphertext"] = json!(s) }, "content.ciphertext"),
    ("ciphertext.short", "A package shorter than version, nonce and tag", "Package", |c| c["ciphertext"] = json!(b64(&[1u8; 40])), "content.ciphertext"),
    ("ciphertext.version0", "Package version 0", "Package", |c| { let s = edit(c["ciphertext"].as_str().unwrap(), |b| b[0] = 0); c["ciphertext"] = json!(s) }, "content.ciphertext"),
    ("ciphertext.version2", "Package version 2", "Package", |c| { let s = edit(c["ciphertext"].as_str().unwrap(), |b| b[0] = 2); c["ciphertext"] = json!(s) }, "content.ciphertext"),
    ("ciphertext.tag-last-bit", "The last tag byte changed", "Tampered", |c| { let s = flip(c["ciphertext"].as_str().unwrap(), -1); c["ciphertext"] = json!(s) }, "content.ciphertext"),
    ("ciphertext.tag-first-bit", "The first tag byte changed", "Tampered", |c| { let s = flip(c["ciphertext"].as_str().unwrap(), -16); c["ciphertext"] = json!(s) }, "content.ciphertext"),
    ("ciphertext.body-bit", "A ciphertext byte changed", "Tampered", |c| { let s = flip(c["ciphertext"].as_str().unwrap(), 30); c["ciphertext"] = json!(s) }, "content.ciphertext"),
    ("ciphertext.nonce-bit", "A nonce byte changed", "Tampered", |c| { let s = flip(c["ciphertext"].as_str().unwrap(), 5); c["ciphertext"] = json!(s) }, "content.ciphertext"),
    ("ciphertext.truncated", "The last byte removed", "Tampered", |c| { let s = edit(c["ciphertext"].as_str().unwrap(), |b| { b.pop(); }); c["ciphertext"] = json!(s) }, "content.ciphertext"),
    ("ciphertext.extended", "A byte appended", "Tampered", |c| { let s = edit(c["ciphertext"].as_str().unwrap(), |b| b.push(0)); c["ciphertext"] = json!(s) }, "content.ciphertext"),
    ("aad.counter", "replay_counter changed (it is in the payload AAD)", "TamperedAad", |c| c["replay_counter"] = json!(10), "content.ciphertext"),
    ("aad.epoch", "epoch changed with a matching commitment (the wrapped key is bound to the epoch)", "TamperedAad", |c| { c["epoch"] = json!(4); c["profile_commitment"] = json!(commitment(V1, 4)) }, "content.wrapped_keys[1].ciphertext"),
    ("aad.profile", "profile changed to v2 with a matching commitment", "TamperedAad", |c| { c["profile"] = json!(V2); c["profile_commitment"] = json!(commitment(V2, 3)) }, "content.wrapped_keys[1].ciphertext"),
    ("wrapped.missing", "No wrapped_keys", "MissingMember", |c| drop(c.as_object_mut().unwrap().remove("wrapped_keys")), "content.wrapped_keys"),
    ("wrapped.empty", "wrapped_keys is empty", "MissingMember", |c| c["wrapped_keys"] = json!([]), "content.wrapped_keys"),
    ("wrapped.object", "wrapped_keys is an object", "MissingMember", |c| c["wrapped_keys"] = json!({}), "content.wrapped_keys"),
    ("wrapped.entry-string", "An entry is a string", "MissingMember", |c| c["wrapped_keys"][0] = json!("x"), "content.wrapped_keys[0]"),
    ("wrapped.to-missing", "An entry without to", "MissingMember", |c| drop(c["wrapped_keys"][0].as_object_mut().unwrap().remove("to")), "content.wrapped_keys[0].to"),
    ("wrapped.key-id-missing", "An entry without key_id", "MissingMember", |c| { drop(c["wrapped_keys"][0] .as_object_mut() .unwrap() .remove("key_id"), ) }, "content.wrapped_keys[0].key_id"),
    ("wrapped.algorithm-missing", "An entry without algorithm", "MissingMember", |c| { drop(c["wrapped_keys"][0] .as_object_mut() .unwrap() .remove("algorithm"), ) }, "content.wrapped_keys[0].algorithm"),
    ("wrapped.ciphertext-missing", "An entry without ciphertext", "MissingMember", |c| { drop(c["wrapped_keys"][0] .as_object_mut() .unwrap() .remove("ciphertext"), ) }, "content.wrapped_keys[0].ciphertext"),
    ("wrapped.key-id-signing", "A signing key id (k_sign_) instead of an encryption key", "KeyId", |c| c["wrapped_keys"][0]["key_id"] = json!("k_sign_alice_1"), "content.wrapped_keys[0].key_id"),
    ("wrapped.key-id-short", "k_enc_ with one character after it", "KeyId", |c| c["wrapped_keys"][0]["key_id"] = json!("k_enc_a"), "content.wrapped_keys[0].key_id"),
    ("wrapped.algorithm-other", "Another wrap algorithm", "UnsupportedProfile", |c| c["wrapped_keys"][0]["algorithm"] = json!("RSA-OAEP-256"), "content.wrapped_keys[0].algorithm"),
    ("wrapped.bridge", "A bridge identity holds a wrapped key", "Bridge", |c| c["wrapped_keys"][0]["to"] = json!("bridge://alice@mail.test"), "content.wrapped_keys[0].to"),
    ("wrapped.duplicate", "Two wrapped keys for one recipient", "Duplicate", |c| { let first = c["wrapped_keys"][0].clone(); c["wrapped_keys"][1] = first }, "content.wrapped_keys[1].to"),
    ("wrapped.package-short", "A wrapped-key package too short for a key", "Package", |c| c["wrapped_keys"][0]["ciphertext"] = json!(b64(&[1u8; 104])), "content.wrapped_keys[0].ciphertext"),
    ("wrapped.package-version2", "Wrapped-key package version 2", "Package", |c| { let s = edit(c["wrapped_keys"][0]["ciphertext"].as_str().unwrap(), |b| { b[0] = 2 }); c["wrapped_keys"][0]["ciphertext"] = json!(s) }, "content.wrapped_keys[0].ciphertext"),
    ("wrapped.ephemeral-bit", "Bob's ephemeral public key changed", "Tampered", |c| { let s = flip(c["wrapped_keys"][1]["ciphertext"].as_str().unwrap(), 3); c["wrapped_keys"][1]["ciphertext"] = json!(s) }, "content.wrapped_keys[1].ciphertext"),
    ("wrapped.nonce-bit", "Bob's wrap nonce changed", "Tampered", |c| { let s = flip(c["wrapped_keys"][1]["ciphertext"].as_str().unwrap(), 40); c["wrapped_keys"][1]["ciphertext"] = json!(s) }, "content.wrapped_keys[1].ciphertext"),
    ("wrapped.sealed-key-bit", "A byte of Bob's sealed content key changed", "Tampered", |c| { let s = flip(c["wrapped_keys"][1]["ciphertext"].as_str().unwrap(), 60); c["wrapped_keys"][1]["ciphertext"] = json!(s) }, "content.wrapped_keys[1].ciphertext"),
    ("wrapped.tag-bit", "The tag of Bob's wrapped key changed", "Tampered", |c| { let s = flip(c["wrapped_keys"][1]["ciphertext"].as_str().unwrap(), -1); c["wrapped_keys"][1]["ciphertext"] = json!(s) }, "content.wrapped_keys[1].ciphertext"),
    ("wrapped.low-order-ephemeral", "Bob's ephemeral key replaced by a low-order point (all-zero shared secret, RFC 7748 §6.1)", "LowOrder", |c| { let s = edit(c["wrapped_keys"][1]["ciphertext"].as_str().unwrap(), |b| { b[1..33].fill(0) }); c["wrapped_keys"][1]["ciphertext"] = json!(s) }, "content.wrapped_keys[1].ciphertext"),
    ("wrapped.swapped", "Alice's and Bob's packages swapped", "WrongRecipient", |c| { let a = c["wrapped_keys"][0]["ciphertext"].clone(); let b = c["wrapped_keys"][1]["ciphertext"].clone(); c["wrapped_keys"][0]["ciphertext"] = b; c["wrapped_keys"][1]["ciphertext"] = a }, "content.wrapped_keys[1].ciphertext"),
    ("wrapped.readdressed", "Alice's entry readdressed to Bob and Bob's removed", "WrongRecipient", |c| { c["wrapped_keys"][0]["to"] = json!(BOB.to); c["wrapped_keys"][0]["key_id"] = json!(BOB.key_id); c["wrapped_keys"].as_array_mut().unwrap().pop(); }, "content.wrapped_keys[0].ciphertext"),
];

fn tamper_cases() -> Vec<Case> {
    let s = base("v1");
    TAMPERS
        .iter()
        .map(|(id, comment, flag, change, path)| {
            let mut c = s.content();
            change(&mut c);
            open_case(&format!("open.{id}"), comment, c, PAYLOAD, &BOB, BOB.key)
                .flags(&[flag])
                .invalid_at(BAD, path)
        })
        .collect()
}

fn recipient_cases() -> Vec<Case> {
    let s = base("v1");
    let c = s.content();
    let bob_only = |to: &str| json!({"to": to, "private_key": b64(&secret(BOB.key))});
    let mut to_rebound = c.clone();
    to_rebound["wrapped_keys"][1]["to"] = json!("loom://bob.mobile@b.test");
    let mut kid_rebound = c.clone();
    kid_rebound["wrapped_keys"][1]["key_id"] = json!("k_enc_bob_2");
    vec![
        open_case(
            "open.not-a-recipient",
            "Dave was not a recipient at this epoch (a member added later cannot read it)",
            c.clone(),
            PAYLOAD,
            &DAVE,
            DAVE.key,
        )
        .flags(&["WrongRecipient"])
        .invalid_at(BAD, "content.wrapped_keys"),
        open_case(
            "open.wrapped.to-rebound",
            "Bob's entry readdressed to another identity, which opens it with Bob's own key: the recipient is in the wrap binding",
            to_rebound,
            PAYLOAD,
            &BOB,
            BOB.key,
        )
        .input("recipient", bob_only("loom://bob.mobile@b.test"))
        .flags(&["Binding"])
        .invalid_at(BAD, "content.wrapped_keys[1].ciphertext"),
        open_case(
            "open.wrapped.key-id-rebound",
            "Bob's entry names another key id; Bob opens it with his own key (selected by identity): the key id is in the wrap binding",
            kid_rebound,
            PAYLOAD,
            &BOB,
            BOB.key,
        )
        .input("recipient", bob_only(BOB.to))
        .flags(&["Binding"])
        .invalid_at(BAD, "content.wrapped_keys[1].ciphertext"),
        open_case(
            "open.wrong-private-key",
            "Bob's entry with Carol's private key",
            c.clone(),
            PAYLOAD,
            &BOB,
            CAROL.key,
        )
        .flags(&["WrongRecipient"])
        .invalid_at(BAD, "content.wrapped_keys[1].ciphertext"),
        open_case(
            "open.other-recipients-key",
            "Bob's entry with Alice's private key",
            c.clone(),
            PAYLOAD,
            &BOB,
            ALICE.key,
        )
        .flags(&["WrongRecipient"])
        .invalid_at(BAD, "content.wrapped_keys[1].ciphertext"),
        open_case(
            "open.key-id-mismatch",
            "Bob names a key id no entry has",
            c.clone(),
            PAYLOAD,
            &BOB,
            BOB.key,
        )
        .input(
            "recipient",
            json!({"to": BOB.to, "key_id": "k_enc_bob_9", "private_key": b64(&secret(BOB.key))}),
        )
        .flags(&["WrongRecipient"])
        .invalid_at(BAD, "content.wrapped_keys"),
        open_case(
            "open.payload-as-attachment",
            "A payload package opened as an attachment (the AAD types differ)",
            c.clone(),
            ATTACHMENT,
            &BOB,
            BOB.key,
        )
        .flags(&["TamperedAad"])
        .invalid_at(BAD, "content.ciphertext"),
        open_case(
            "open.attachment-as-payload",
            "An attachment package opened as a payload",
            Seal {
                kind: ATTACHMENT,
                ..base("att")
            }
            .content(),
            PAYLOAD,
            &BOB,
            BOB.key,
        )
        .flags(&["TamperedAad"])
        .invalid_at(BAD, "content.ciphertext"),
    ]
}

/// A change to the `recipients` input of an `e2ee-seal` case.
type RecipientsEdit = fn(&mut Vec<Value>);

fn seal_cases() -> Vec<Case> {
    let variants: Vec<(&str, &str, Seal)> = vec![
        ("seal.v1.two", "v1 for two recipients", base("v1")),
        (
            "seal.v2.two",
            "v2 for two recipients",
            Seal {
                profile: V2,
                ..base("v2")
            },
        ),
        (
            "seal.attachment",
            "An attachment package",
            Seal {
                kind: ATTACHMENT,
                plaintext: "%PDF-1.7 fake attachment bytes".into(),
                ..base("att")
            },
        ),
        (
            "seal.empty",
            "An empty plaintext",
            Seal {
                plaintext: String::new(),
                ..base("empty")
            },
        ),
        (
            "seal.single",
            "One recipient",
            Seal {
                to: vec![BOB],
                ..base("single")
            },
        ),
        (
            "seal.three",
            "Three recipients",
            Seal {
                to: vec![ALICE, BOB, CAROL],
                ..base("three")
            },
        ),
        (
            "seal.epoch0",
            "Epoch 0, counter 0",
            Seal {
                epoch: 0,
                counter: 0,
                ..base("zero")
            },
        ),
        (
            "seal.unicode",
            "A UTF-8 plaintext",
            Seal {
                plaintext: "Grüße, 世界 — ✓".into(),
                ..base("uni")
            },
        ),
        (
            "seal.large-counter",
            "Counter 2^32",
            Seal {
                counter: 4_294_967_296,
                ..base("bigcounter")
            },
        ),
        (
            "seal.large",
            "A 4 KiB plaintext",
            Seal {
                plaintext: "x".repeat(4096),
                ..base("large")
            },
        ),
    ];
    let mut out: Vec<Case> = variants
        .into_iter()
        .map(|(id, comment, s)| {
            s.seal_inputs(Case::new(id, comment, SEAL))
                .flags(&["Seal"])
                .valid_with(s.content())
        })
        .collect();
    let s = base("alias1");
    let mut case = s.seal_inputs(Case::new(
        "seal.alias",
        "Sealing under the alias loom-e2ee-1 writes and binds the canonical id",
        SEAL,
    ));
    case = case.input("profile", "loom-e2ee-1");
    out.push(case.flags(&["Seal", "Alias"]).valid_with(s.content()));
    let bad: [(&str, &str, RecipientsEdit, &str); 3] = [
        (
            "seal.no-recipients",
            "No recipient",
            |r| r.clear(),
            "wrapped_keys",
        ),
        (
            "seal.duplicate-recipient",
            "One recipient twice",
            |r| {
                let first = r[0].clone();
                r.push(first)
            },
            "wrapped_keys",
        ),
        (
            "seal.low-order-recipient",
            "A recipient key of low order (all-zero shared secret)",
            |r| r[1]["public_key"] = json!(b64(&[0u8; 32])),
            "wrapped_keys[1].to",
        ),
    ];
    for (id, comment, change, path) in bad {
        let s = base("v1");
        let mut recipients: Vec<Value> = s
            .to
            .iter()
            .map(|p| json!({"to": p.to, "key_id": p.key_id, "public_key": b64(&public(p.key)), "ephemeral_private_key": b64(&secret(&s.ephemeral(p))), "wrap_nonce": b64(&s.wrap_nonce(p))}))
            .collect();
        change(&mut recipients);
        out.push(
            s.seal_inputs(Case::new(id, comment, SEAL))
                .input("recipients", recipients)
                .flags(&["Seal"])
                .invalid_at(BAD, path),
        );
    }
    out.push(
        base("v1")
            .seal_inputs(Case::new(
                "seal.mls",
                "The MLS profile is refused (fail closed)",
                PROFILES,
            ))
            .input("profile", "loom-e2ee-mls-1")
            .flags(&["Seal", "UnsupportedProfile"])
            .invalid_at(BAD, "profile"),
    );
    out
}

fn commitment_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (profile, written) in [(V1, V1), (V2, V2), (V1, "loom-e2ee-1"), (V2, "loom-e2ee-2")] {
        for epoch in [0u64, 1, 3, 9_007_199_254_740_991] {
            let id = format!("commitment.{written}.{epoch}");
            out.push(
                Case::new(
                    id,
                    format!("The commitment of {written} at epoch {epoch}"),
                    PROFILES,
                )
                .flags(&["Commitment"])
                .input("profile", written)
                .input("epoch", epoch)
                .valid_with(commitment(profile, epoch)),
            );
        }
    }
    for (id, p) in [
        ("commitment.mls", "loom-e2ee-mls-1"),
        ("commitment.unknown", "loom-e2ee-3"),
        ("commitment.empty", ""),
    ] {
        out.push(
            Case::new(id, format!("No commitment for profile {p:?}"), PROFILES)
                .flags(&["UnsupportedProfile"])
                .input("profile", p)
                .input("epoch", 0)
                .invalid_at(BAD, "profile"),
        );
    }
    out
}

/// (id, comment, mode, accepted history, next, verdict path or "" for valid).
type ReplayCase = (
    &'static str,
    &'static str,
    &'static str,
    &'static [(u64, u64)],
    (u64, u64),
    &'static str,
);

const COUNTER: &str = "content.replay_counter";
const EPOCH: &str = "content.epoch";

#[rustfmt::skip]
const REPLAYS: &[ReplayCase] = &[
    ("strict.first", "A sender's first counter in an epoch may be any value", "strict", &[], (0, 7), ""),
    ("strict.next", "The next counter", "strict", &[(0, 0)], (0, 1), ""),
    ("strict.gap", "A gap is fine", "strict", &[(0, 0)], (0, 50), ""),
    ("strict.same", "The same counter again", "strict", &[(0, 4)], (0, 4), COUNTER),
    ("strict.lower", "A lower counter", "strict", &[(0, 4)], (0, 3), COUNTER),
    ("strict.lower-after-gap", "Lower than the highest after a gap", "strict", &[(0, 1), (0, 10)], (0, 5), COUNTER),
    ("strict.new-epoch", "A new epoch starts a new sequence", "strict", &[(0, 10)], (1, 0), ""),
    ("strict.new-epoch-any", "A new epoch's first counter may be any value", "strict", &[(0, 10)], (1, 3), ""),
    ("strict.old-epoch", "Back to an older epoch", "strict", &[(0, 10), (1, 0)], (0, 11), EPOCH),
    ("strict.old-epoch-same", "An older epoch with a counter never used there", "strict", &[(2, 0)], (1, 0), EPOCH),
    ("strict.long-run", "A long increasing run", "strict", &[(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5)], (0, 6), ""),
    ("strict.replay-in-run", "A counter from earlier in the run", "strict", &[(0, 0), (0, 1), (0, 2), (0, 3)], (0, 1), COUNTER),
    ("strict.large", "Counters near 2^53", "strict", &[(0, 9_007_199_254_740_990)], (0, 9_007_199_254_740_991), ""),
    ("strict.zero-again", "Zero after zero", "strict", &[(0, 0)], (0, 0), COUNTER),
    ("strict.epoch-jump", "A later epoch far ahead", "strict", &[(0, 3)], (9, 0), ""),
    ("window.first", "A sender's first counter may be any value", "sliding_window", &[], (0, 7), ""),
    ("window.next", "The next counter", "sliding_window", &[(0, 0)], (0, 1), ""),
    ("window.same", "The same counter again", "sliding_window", &[(0, 4)], (0, 4), COUNTER),
    ("window.lower-unseen", "A lower counter not yet seen, inside the window", "sliding_window", &[(0, 4)], (0, 3), ""),
    ("window.lower-seen", "A lower counter already seen", "sliding_window", &[(0, 3), (0, 4)], (0, 3), COUNTER),
    ("window.out-of-order-run", "Out of order inside the window", "sliding_window", &[(0, 10), (0, 8), (0, 9)], (0, 7), ""),
    ("window.out-of-order-replay", "A replay inside an out-of-order run", "sliding_window", &[(0, 10), (0, 8), (0, 9)], (0, 8), COUNTER),
    ("window.edge-inside", "63 below the highest: the oldest slot of the window", "sliding_window", &[(0, 100)], (0, 37), ""),
    ("window.edge-outside", "64 below the highest: outside the window", "sliding_window", &[(0, 100)], (0, 36), COUNTER),
    ("window.far-below", "Far below the window", "sliding_window", &[(0, 1000)], (0, 5), COUNTER),
    ("window.slide-forgets", "After the window slid past it, a seen counter is refused as too old", "sliding_window", &[(0, 5), (0, 200)], (0, 5), COUNTER),
    ("window.slide-keeps", "After a slide of 10, a counter seen before is still remembered", "sliding_window", &[(0, 50), (0, 60)], (0, 50), COUNTER),
    ("window.slide-unseen", "After a slide of 10, an unseen counter inside is taken", "sliding_window", &[(0, 50), (0, 60)], (0, 51), ""),
    ("window.big-jump", "A jump far ahead clears the window", "sliding_window", &[(0, 1), (0, 2)], (0, 5000), ""),
    ("window.after-big-jump", "After a jump, the old counters are below the window", "sliding_window", &[(0, 1), (0, 5000)], (0, 2), COUNTER),
    ("window.new-epoch", "A new epoch starts a new window", "sliding_window", &[(0, 10)], (1, 10), ""),
    ("window.old-epoch", "Back to an older epoch", "sliding_window", &[(0, 10), (1, 0)], (0, 9), EPOCH),
    ("window.new-epoch-lower", "In a new epoch, a counter lower than the old epoch's highest", "sliding_window", &[(0, 100)], (1, 1), ""),
    ("window.zero-again", "Zero after zero", "sliding_window", &[(0, 0)], (0, 0), COUNTER),
    ("window.fill-all", "Every slot below the highest filled, then one more replay", "sliding_window", &[(0, 3), (0, 0), (0, 1), (0, 2)], (0, 2), COUNTER),
    ("strict.new-epoch-replay", "A replay inside the new epoch", "strict", &[(0, 5), (1, 0)], (1, 0), COUNTER),
    ("strict.new-epoch-lower", "In a new epoch, a counter lower than the old epoch's highest", "strict", &[(0, 100)], (1, 1), ""),
    ("window.new-epoch-replay", "A replay inside the new epoch's window", "sliding_window", &[(0, 10), (1, 10)], (1, 10), COUNTER),
    ("window.edge-after-slide-seen", "63 below the new highest, seen before the slide", "sliding_window", &[(0, 10), (0, 73)], (0, 10), COUNTER),
    ("window.edge-after-slide-unseen", "62 below the new highest, never seen", "sliding_window", &[(0, 10), (0, 73)], (0, 11), ""),
    ("window.highest-plus-one", "One above the highest", "sliding_window", &[(0, 9)], (0, 10), ""),
    ("window.fill-take", "Three out of order then the missing one", "sliding_window", &[(0, 3), (0, 0), (0, 2)], (0, 1), ""),
];

fn replay_cases() -> Vec<Case> {
    REPLAYS
        .iter()
        .map(|&(id, comment, mode, history, (epoch, counter), path)| {
            let flag = if mode == "strict" {
                "StrictReplay"
            } else {
                "WindowReplay"
            };
            let case = Case::new(format!("replay.{id}"), comment, REPLAY)
                .flags(&[flag])
                .input("mode", mode)
                .input(
                    "accepted",
                    history
                        .iter()
                        .map(|(e, c)| json!({"epoch": e, "replay_counter": c}))
                        .collect::<Vec<_>>(),
                )
                .input("next", json!({"epoch": epoch, "replay_counter": counter}));
            if path.is_empty() {
                case.valid()
            } else {
                case.invalid_at(BAD, path)
            }
        })
        .collect()
}

/// Builds `e2ee.json`.
pub fn build() -> FileBuilder {
    FileBuilder::new(
        "e2ee",
        "End-to-end encryption with the loom-e2ee-x25519-xchacha20 profiles (v1.1 §7.1, §7.4-§7.4.2, §10.6, §23.1; wire format per DESIGN.md §9). \
         Kind e2ee-open: a recipient ('recipient': to, optional key_id, raw X25519 private key base64url) opens encrypted 'content' as a payload or attachment ('aad_kind'); expected is the UTF-8 plaintext. \
         Kind e2ee-seal: seal 'plaintext' with the given content key, nonce and per-recipient ephemeral keys and wrap nonces; expected is the exact content object. \
         Kind e2ee-commitment: the profile commitment of a profile (id or alias) at an epoch. \
         Kind e2ee-replay: a receiver has accepted the 'accepted' (epoch, replay_counter) pairs in order from one sender and device, in mode strict or sliding_window (64 entries); is 'next' accepted? \
         Every refusal is ENVELOPE_INVALID with expected_error_path naming the member that fails (the first in the order: encrypted, profile, epoch, replay_counter, profile_commitment, ciphertext form, wrapped_keys entries in order and their form; then, when opening, the selected wrapped key and the payload).",
    )
    .note("Valid", "A package sealed as DESIGN.md §9 describes opens for each of its recipients.", "interoperability", "Two implementations cannot read each other's messages.")
    .note("Alias", "loom-e2ee-1/-2 name the v1/v2 profiles (v1.1 §8.1); AAD and commitments always bind the canonical id.", "alias handling", "Messages sealed under an alias do not open elsewhere.")
    .note("Seal", "Sealing with fixed randomness is deterministic, byte for byte.", "wire form", "Packages differ in layout or member order between implementations.")
    .note("UnsupportedProfile", "Unknown profiles and the MLS profile (not implemented here) fail closed (v1.1 §7.4.2).", "downgrade", "Content is accepted under a profile nobody can check.")
    .note("MissingMember", "profile, epoch, replay_counter, profile_commitment, ciphertext and wrapped_keys are required, with their types (the profile requires replay counters and commitments).", "lenient parsing", "Content without replay protection or binding is accepted.")
    .note("Commitment", "profile_commitment must be the commitment of (profile, epoch).", "profile confusion", "A package is presented under another profile or epoch.")
    .note("Package", "Packages are base64url without padding, version 1, at least their fixed length.", "lenient decoding", "Malformed packages reach the cipher or are read differently.")
    .note("Tampered", "Any changed byte of a package fails its Poly1305 tag.", "missing authentication", "Ciphertext can be altered undetected.")
    .note("TamperedAad", "Profile, epoch, replay counter, commitment and the payload/attachment type are bound as AAD.", "unbound metadata", "Replay counters or epochs can be rewritten without detection.")
    .note("KeyId", "A wrapped key names a k_enc_ key of its recipient.", "key confusion", "Keys of the wrong kind are used for encryption.")
    .note("Bridge", "Bridge identities cannot participate in E2EE threads (v1.1 §21.4).", "bridge leakage", "Plaintext keys reach a mail gateway.")
    .note("Duplicate", "One wrapped key per recipient.", "ambiguity", "Recipients cannot tell which key is theirs.")
    .note("LowOrder", "An all-zero X25519 shared secret is refused (RFC 7748 §6.1).", "small-subgroup", "A wrapping key becomes a constant an attacker knows.")
    .note("Binding", "The wrapped key binds recipient and key id (HKDF info and AAD).", "re-targeting", "A wrapped key is moved to another recipient or key.")
    .note("WrongRecipient", "Only a recipient with its own private key opens its wrapped key.", "access control", "Non-members read E2EE content.")
    .note("StrictReplay", "Strict-monotonic mode: every counter exceeds the last of that epoch (v1.1 §23.1).", "replay", "Replayed ciphertexts are accepted.")
    .note("WindowReplay", "Sliding-window mode: each of the 64 counters ending at the highest is accepted once (v1.1 §23.1).", "replay", "Replays inside the window are accepted, or legitimate reordering is refused.")
    .note("Interpretation", "The spec is silent; the vector pins the existing implementation's reading (DESIGN.md §9).", "interpretation", "Implementations that read the spec differently disagree on these inputs.")
    .group("e2ee-open", Value::Null)
    .tests(valid_open_cases().into_iter().chain(tamper_cases()).chain(recipient_cases()))
    .group("e2ee-seal", Value::Null)
    .tests(seal_cases())
    .group("e2ee-commitment", Value::Null)
    .tests(commitment_cases())
    .group("e2ee-replay", Value::Null)
    .tests(replay_cases())
}

/// The inputs and outputs of `e2ee.json`.
pub fn schema() -> AreaSchema {
    let int = json!({"type": "integer", "minimum": 0});
    let pair = json!({"type": "object", "additionalProperties": false, "required": ["epoch", "replay_counter"],
        "properties": {"epoch": int, "replay_counter": int}});
    AreaSchema {
        kinds: vec!["e2ee-open", "e2ee-seal", "e2ee-commitment", "e2ee-replay"],
        inputs: vec![
            ("content", json!(true)),
            ("aad_kind", json!({"enum": ["payload", "attachment"]})),
            (
                "recipient",
                json!({"type": "object", "required": ["to", "private_key"],
                "properties": {"to": string(), "key_id": string(), "private_key": string()}}),
            ),
            ("profile", string()),
            ("epoch", int.clone()),
            ("replay_counter", int.clone()),
            ("plaintext", string()),
            ("cek", string()),
            ("nonce", string()),
            (
                "recipients",
                json!({"type": "array", "items": {"type": "object"}}),
            ),
            ("mode", json!({"enum": ["strict", "sliding_window"]})),
            ("accepted", json!({"type": "array", "items": pair})),
            ("next", pair),
        ],
        required: vec![],
        expected: json!(true),
        errors: vec![BAD],
    }
}
