//! Verify-path cost (issue: protocol core bench): strict parse + canonicalize + context-prefixed
//! Ed25519 verify of a typical 1 KB and 4 KB envelope, against a raw Ed25519 verify of the
//! same signed bytes. Run: `cargo bench -p loom-benches --bench envelope_verify`.

use criterion::{Criterion, criterion_group, criterion_main};
use ed25519_dalek::Signature;
use loom_benches::{bench_key, typical_envelope};
use loom_protocol::envelope::{envelope_signing_payload, verify_envelope_signature};
use loom_protocol::jcs::parse_strict;
use loom_protocol::keys::{SigContext, signature_from_b64url};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let pk = bench_key().verifying_key();
    for size in [1024usize, 4096] {
        let text = typical_envelope(size);
        let value = parse_strict(&text).expect("fixture parses");
        let message =
            SigContext::ENVELOPE.message(&envelope_signing_payload(&value).expect("object"));
        let sig: Signature =
            signature_from_b64url(value["signature"]["value"].as_str().expect("signed"))
                .expect("valid signature");
        let mut g = c.benchmark_group(format!("envelope_{}b", text.len()));
        g.bench_function("raw_ed25519_verify_strict", |b| {
            b.iter(|| {
                pk.verify_strict(black_box(&message), black_box(&sig))
                    .is_ok()
            })
        });
        g.bench_function("raw_ed25519_verify", |b| {
            b.iter(|| {
                ed25519_dalek::Verifier::verify(&pk, black_box(&message), black_box(&sig)).is_ok()
            })
        });
        g.bench_function("parse_canonicalize_verify", |b| {
            b.iter(|| {
                let v = parse_strict(black_box(&text)).expect("parses");
                verify_envelope_signature(&v, &pk).is_ok()
            })
        });
        g.bench_function("parse_canonicalize_only", |b| {
            b.iter(|| {
                let v = parse_strict(black_box(&text)).expect("parses");
                envelope_signing_payload(&v).map(|p| p.len())
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
