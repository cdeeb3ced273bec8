//! Replays the committed fuzz corpora through the library fuzz bodies, so every input that
//! once mattered to a fuzzer is checked by `cargo test` (DESIGN.md §8).

use std::path::Path;

fn replay(target: &str, body: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .collect();
    entries.sort();
    for path in &entries {
        body(&std::fs::read(path).expect("corpus file"));
    }
    entries.len()
}

#[test]
fn canonical_json_corpus() {
    assert!(replay("canonical_json", loom_protocol::fuzzing::canonical_json) >= 9);
}

#[test]
fn envelope_corpus() {
    assert!(replay("envelope", loom_protocol::fuzzing::envelope) >= 6);
}
