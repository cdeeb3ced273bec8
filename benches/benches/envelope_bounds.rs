//! Per-envelope bounds (issue 19, item 4): what the two envelopes of the issue cost the
//! admission step now that they are refused (time to refusal, `bounds::check`), against the
//! admission-side work they used to get before reaching the writer (structure validation and
//! the canonical form), and what the check adds to a typical accepted envelope.
//! Run: `cargo bench -p loom-benches --bench envelope_bounds`.

use criterion::{Criterion, criterion_group, criterion_main};
use loom_benches::typical_envelope;
use loom_protocol::bounds::{EnvelopeLimits, check};
use loom_protocol::envelope::validate::validate_envelope_all;
use loom_protocol::jcs::{parse_strict, to_canonical_bytes_without};
use serde_json::{Value, json};
use std::hint::black_box;

/// The first case: 4,000 recipients (unregistered, one domain).
fn wide() -> Value {
    let mut v = parse_strict(&typical_envelope(1024)).expect("fixture parses");
    v["to"] = (0..4_000)
        .map(|i| json!({"identity": format!("loom://u{i}@example.org"), "role": if i == 0 { "primary" } else { "cc" }}))
        .collect();
    v
}

/// The second case: a 100,000-element array in extension data.
fn long_array() -> Value {
    let mut v = parse_strict(&typical_envelope(1024)).expect("fixture parses");
    v["extensions"] = json!({"org.example.rows": vec![0; 100_000]});
    v
}

fn bench(c: &mut Criterion) {
    let limits = EnvelopeLimits::default();
    let cases = [
        (
            "typical_1k",
            parse_strict(&typical_envelope(1024)).expect("parses"),
        ),
        (
            "typical_4k",
            parse_strict(&typical_envelope(4096)).expect("parses"),
        ),
        ("recipients_4000", wide()),
        ("extension_array_100k", long_array()),
    ];
    let mut g = c.benchmark_group("envelope_bounds");
    for (name, env) in &cases {
        g.bench_function(format!("{name}/bounds_check"), |b| {
            b.iter(|| check(black_box(env), black_box(&limits)).is_ok())
        });
        g.bench_function(format!("{name}/validate_and_canonicalize"), |b| {
            b.iter(|| {
                let errors = validate_envelope_all(black_box(env)).len();
                let bytes = to_canonical_bytes_without(black_box(env), &["meta"]).map(|b| b.len());
                (errors, bytes)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
