//! Replays the committed fuzz corpora through the library fuzz bodies, so every input that
//! once mattered to a fuzzer is checked by `cargo test` (DESIGN.md §8, issue 19), and keeps
//! `fuzz/` whole: every target has a body file, a non-empty seed corpus and a crate whose
//! tests replay it.
//!
//! Each crate with fuzz bodies replays its own targets (`TARGETS` of its `fuzzing` module);
//! this file does it for `loom-protocol` and checks the whole `fuzz/` directory.

use loom_protocol::fuzzing::TARGETS;
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `fuzz/corpus/<target>/`, sorted; a missing or empty directory fails.
fn corpus_files(target: &str) -> Vec<PathBuf> {
    let dir = fuzz_dir().join("corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus of fuzz target {target}: {}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "the corpus of fuzz target {target} is empty"
    );
    files
}

/// The `[[bin]]` names of `fuzz/Cargo.toml` (one per fuzz target).
fn fuzz_bins() -> Vec<String> {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    let mut bins = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin && let Some(rest) = line.strip_prefix("name") {
            let name = rest.trim_start_matches([' ', '=']).trim_matches('"');
            bins.push(name.to_owned());
        }
    }
    bins
}

#[test]
fn every_protocol_target_replays_its_committed_corpus() {
    loom_protocol::fuzzing::replay_committed_corpora(&fuzz_dir(), TARGETS);
}

/// Crates whose tests replay the targets whose body they hold (see each `fuzzing` module).
const BODY_CRATES: [&str; 7] = [
    "loom_protocol::fuzzing::",
    "loom_bridge::fuzzing::",
    "loom_plsp::fuzzing::",
    "loom_process::fuzzing::",
    "loom_node::fuzzing::",
    "loom_conformance::fuzzing::",
    // Replayed by reference/notation/tests/roundtrip.rs.
    "loom_notation::fuzz_decode",
];

#[test]
fn every_fuzz_target_has_a_body_a_seed_corpus_and_a_replaying_crate() {
    let bins = fuzz_bins();
    assert!(bins.len() >= TARGETS.len(), "{bins:?}");
    for bin in &bins {
        let src = fuzz_dir().join("fuzz_targets").join(format!("{bin}.rs"));
        let text =
            std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        let owner = BODY_CRATES
            .iter()
            .find(|c| text.contains(*c))
            .unwrap_or_else(|| panic!("{bin}: its body is in no crate that replays corpora"));
        if owner.starts_with("loom_protocol::") {
            assert!(
                TARGETS.iter().any(|(t, _)| t == bin),
                "{bin} calls loom_protocol::fuzzing but is not in its TARGETS (so not replayed)"
            );
        }
        corpus_files(bin);
    }
    for (target, _) in TARGETS {
        assert!(
            bins.iter().any(|b| b == target),
            "{target} has no [[bin]] in fuzz/Cargo.toml"
        );
    }
    for entry in std::fs::read_dir(fuzz_dir().join("corpus")).expect("fuzz/corpus") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        assert!(
            bins.contains(&name),
            "fuzz/corpus/{name} belongs to no fuzz target"
        );
    }
}
