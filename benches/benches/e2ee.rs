//! E2EE seal and open throughput per message size (issue 33): sealing a payload for two
//! members (XChaCha20-Poly1305 over the payload, one X25519 + HKDF key wrap each) and opening
//! it as one member (one unwrap, one decryption), at 256 B, 4 KiB, 64 KiB and 1 MiB; beside
//! them the bare AEAD over the same bytes, so the fixed cost of the key wraps shows.
//! Run: `cargo bench -p loom-benches --bench e2ee`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use loom_protocol::e2ee::crypto::{Sealing, public_key, xchacha_open, xchacha_seal};
use loom_protocol::e2ee::{AadKind, Profile, Recipient, WrapRandomness, open, seal};
use std::hint::black_box;

fn member(name: &str, seed: u8) -> (Recipient, WrapRandomness) {
    (
        Recipient {
            to: format!("loom://{name}@a.test"),
            key_id: format!("k_enc_{name}_1"),
            public: public_key(&[seed; 32]),
        },
        WrapRandomness {
            ephemeral_secret: [seed + 100; 32].into(),
            nonce: [seed; 24],
        },
    )
}

fn bench(c: &mut Criterion) {
    let members = [member("alice", 1), member("bob", 2)];
    let s = Sealing {
        profile: Profile::V1,
        epoch: 3,
        replay_counter: 9,
        kind: AadKind::Payload,
    };
    let (cek, nonce) = ([5u8; 32], [6u8; 24]);
    let mut g = c.benchmark_group("e2ee");
    for size in [256usize, 4 * 1024, 64 * 1024, 1024 * 1024] {
        let plaintext = vec![0x42u8; size];
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::new("seal_for_2", size), &plaintext, |b, p| {
            b.iter(|| seal(black_box(&s), black_box(p), &cek, &nonce, &members).is_ok())
        });
        let content = seal(&s, &plaintext, &cek, &nonce, &members).expect("seals");
        g.bench_with_input(BenchmarkId::new("open_as_1", size), &content, |b, c| {
            b.iter(|| {
                open(
                    black_box(c),
                    AadKind::Payload,
                    "loom://bob@a.test",
                    None,
                    &[2; 32],
                )
                .is_ok()
            })
        });
        g.bench_with_input(
            BenchmarkId::new("aead_seal_only", size),
            &plaintext,
            |b, p| b.iter(|| xchacha_seal(&cek, &nonce, b"aad", black_box(p)).is_ok()),
        );
        let sealed = xchacha_seal(&cek, &nonce, b"aad", &plaintext).expect("seals");
        g.bench_with_input(BenchmarkId::new("aead_open_only", size), &sealed, |b, x| {
            b.iter(|| xchacha_open(&cek, &nonce, b"aad", black_box(x)).is_ok())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
