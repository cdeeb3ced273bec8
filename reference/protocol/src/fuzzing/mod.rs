//! Fuzz bodies (DESIGN.md §8, issue 19): library functions so that the `cargo fuzz` targets in
//! `fuzz/` and `cargo test` (which replays every committed corpus file, `tests/fuzz_corpus.rs`)
//! run the same code. Each body takes arbitrary bytes and asserts the properties that must
//! hold for every input — a panic here is a bug in the parser it drives, not in the body:
//!
//! - a rejection is a [`ProtocolError`] naming a field, a rule and a spec section;
//! - first-error and all-errors forms agree on accept/refuse;
//! - canonical forms are fixed points, and parse∘print is the identity where a printer exists;
//! - sign∘verify holds for generated values, and a change to a signed member breaks it.
//!
//! Bodies that need structure (signed envelopes, chains, tokens, receipts) build their input
//! from the bytes with [`arbitrary::Unstructured`], so the fuzzer reaches signature, chain
//! and DAG code instead of stopping at the JSON parser.
//!
//! | target | body | drives |
//! |---|---|---|
//! | `canonical_json` | [`canonical_json`] | [`crate::jcs`] |
//! | `envelope` | [`envelope`] | [`crate::envelope`] validation and signatures |
//! | `http_sig` | [`http_sig`] | [`crate::http_sig`] headers, signing strings, nonces |
//! | `identity_document` | [`identity_document`] | [`crate::documents`], [`crate::identity_profile`], [`crate::registration`] |
//! | `delegation_chain` | [`delegation_chain`] | [`crate::delegation`] |
//! | `capability_token` | [`capability_token`] | [`crate::capability`] |
//! | `federation_wrapper` | [`federation_wrapper`] | [`crate::federation::wrapper`] |
//! | `federation_receipt` | [`federation_receipt`] | [`crate::federation::receipt`] |
//! | `node_document` | [`node_document`] | [`crate::federation::node_document`] |
//! | `node_signed_identity` | [`node_signed_identity`] | [`crate::federation::identity`] |
//! | `accept` | [`accept`] | [`crate::accept`]: admit and decide over a small world |
//! | `e2ee` | [`e2ee`] | [`crate::e2ee`]: encrypted content, packages, sealing and opening |

mod accept;
mod capability;
mod delegation;
mod e2ee;
mod federation;
mod http_sig;
mod identity;
mod json;
pub mod world;

pub use accept::accept;
pub use capability::capability_token;
pub use delegation::delegation_chain;
pub use e2ee::e2ee;
pub use federation::{federation_receipt, federation_wrapper, node_document, node_signed_identity};
pub use http_sig::http_sig;
pub use identity::identity_document;
pub use json::{canonical_json, envelope};

use crate::error::ProtocolError;
use crate::time::Timestamp;

/// A fuzz body: takes any bytes, panics only on a broken property.
pub type Body = fn(&[u8]);

/// Every fuzz target whose body lives in this crate: `(target name, body)`. The target name
/// is the `[[bin]]` in `fuzz/Cargo.toml` and the corpus directory `fuzz/corpus/<name>/`.
pub const TARGETS: &[(&str, Body)] = &[
    ("canonical_json", canonical_json),
    ("envelope", envelope),
    ("http_sig", http_sig),
    ("identity_document", identity_document),
    ("delegation_chain", delegation_chain),
    ("capability_token", capability_token),
    ("federation_wrapper", federation_wrapper),
    ("federation_receipt", federation_receipt),
    ("node_document", node_document),
    ("node_signed_identity", node_signed_identity),
    ("accept", accept),
    ("e2ee", e2ee),
];

/// The fixed "now" of every body (the vectors' reference time), so runs are reproducible.
pub(crate) fn now() -> Timestamp {
    Timestamp::from_unix_ms(1_771_261_200_000) // 2026-02-16T17:00:00Z
}

/// A rejection names the field, the rule and the section (HELPERS.md quality bar; v1.1 §24.1
/// error bodies carry them).
#[track_caller]
pub(crate) fn assert_explained(e: &ProtocolError) {
    assert!(!e.field.is_empty(), "error without a field: {e:?}");
    assert!(!e.rule.trim().is_empty(), "error without a rule: {e:?}");
    assert!(
        e.section.starts_with("v1.") || e.section.starts_with("loom-core-1"),
        "error without a spec section: {e:?}"
    );
}

/// Replays `fuzz/corpus/<target>/` (under `fuzz_dir`) through each body of `targets`, for the
/// corpus-replay test every crate with fuzz bodies runs (issue 19: every input that once
/// mattered to a fuzzer is checked by `cargo test`). Panics, naming what is wrong, when a
/// target has no `[[bin]]` in `fuzz/Cargo.toml`, its corpus is missing or empty, or any
/// input breaks a property (every such input is listed, not only the first).
pub fn replay_committed_corpora(fuzz_dir: &std::path::Path, targets: &[(&str, Body)]) {
    let manifest = std::fs::read_to_string(fuzz_dir.join("Cargo.toml")).expect("fuzz/Cargo.toml");
    let mut broken = Vec::new();
    for (target, body) in targets {
        assert!(
            manifest.contains(&format!("name = \"{target}\"")),
            "{target} has no [[bin]] in fuzz/Cargo.toml"
        );
        let dir = fuzz_dir.join("corpus").join(target);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("corpus of fuzz target {target}: {}: {e}", dir.display()))
            .map(|e| e.expect("corpus entry").path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        assert!(
            !files.is_empty(),
            "the corpus of fuzz target {target} is empty"
        );
        for f in files {
            let data = std::fs::read(&f).expect("corpus file");
            // The panic message is printed; the file is collected so every broken one is listed.
            if std::panic::catch_unwind(|| body(&data)).is_err() {
                broken.push(format!("{target}: {}", f.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "inputs that break a property: {broken:#?}"
    );
}
