//! Every quoted spec sentence is in the repository's copy of the specs (issue 18, item 6):
//! each `quote` of `requirements/level1.toml`, `level2.toml` and `level3.toml` and each legal variant's
//! sentence appears verbatim in `docs/specs/` (or, for the project's own conventions cited as
//! "DESIGN.md §N", in `docs/DESIGN.md`), after the normalisation the requirements file
//! describes: `**` emphasis dropped, whitespace runs collapsed, fragments of one passage
//! joined by ` … ` found one after another.

use loom_conformance::requirements;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// `**` dropped, every whitespace run one space.
fn normalise(text: &str) -> String {
    text.replace("**", "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The file a source names: `v1.1 §N` → the v1.1 spec, `v1.0 §N` → v1.0,
/// `loom-core-profile` or `loom-core-1 §N` → the core profile, `DESIGN.md §N` → docs/DESIGN.md.
fn source_file(source: &str) -> PathBuf {
    let root = repo();
    let name = if source.starts_with("v1.1") {
        "docs/specs/loom-protocol-v1.1.md"
    } else if source.starts_with("v1.0") {
        "docs/specs/loom-protocol-v1.0.md"
    } else if source.starts_with("loom-core") {
        "docs/specs/loom-core-profile.md"
    } else if source.starts_with("DESIGN.md") {
        "docs/DESIGN.md"
    } else {
        panic!("quote source {source:?} names no file of docs/");
    };
    root.join(name)
}

/// `None` when every ` … ` fragment of `quote` is found in order in `text`, else the first
/// fragment that is not.
fn missing_fragment(quote: &str, text: &str) -> Option<String> {
    let mut at = 0;
    for fragment in normalise(quote).split(" … ") {
        let fragment = fragment.trim();
        if fragment.is_empty() {
            continue;
        }
        match text[at..].find(fragment) {
            Some(i) => at += i + fragment.len(),
            None => match text.find(fragment) {
                // Found, but before the previous fragment: a passage quoted out of order is
                // still verbatim.
                Some(_) => {}
                None => return Some(fragment.to_owned()),
            },
        }
    }
    None
}

fn check(what: &str, quotes: Vec<(String, String, String)>) -> usize {
    let mut problems = Vec::new();
    for (id, source, quote) in &quotes {
        let path = source_file(source);
        let text = normalise(
            &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        );
        if let Some(f) = missing_fragment(quote, &text) {
            problems.push(format!(
                "{id} ({source}): {f:?} is not in {}",
                path.display()
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{what}: {} quote(s) not verbatim in docs/:\n{}",
        problems.len(),
        problems.join("\n")
    );
    quotes.len()
}

fn requirement_quotes(file: &str) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(repo().join("conformance/requirements").join(file))
        .expect("the requirements file");
    requirements::parse(&text)
        .unwrap_or_else(|e| panic!("{file}: {e}"))
        .into_iter()
        .filter_map(|r| {
            let source = r.quote_source().to_owned();
            r.quote.clone().map(|q| (r.id.clone(), source, q))
        })
        .collect()
}

#[test]
fn level1_quotes_are_verbatim_in_docs_specs() {
    let n = check("level1.toml", requirement_quotes("level1.toml"));
    assert!(n > 200, "{n} quotes: the file lost its quotes");
}

#[test]
fn level4_quotes_are_verbatim_in_docs_specs() {
    let n = check("level4.toml", requirement_quotes("level4.toml"));
    assert!(n >= 14, "{n} quotes: the file lost its quotes");
}

#[test]
fn level3_quotes_are_verbatim_in_docs_specs() {
    let n = check("level3.toml", requirement_quotes("level3.toml"));
    assert!(n > 25, "{n} quotes: the file lost its quotes");
}

#[test]
fn level2_quotes_are_verbatim_in_docs_specs() {
    let n = check("level2.toml", requirement_quotes("level2.toml"));
    assert!(n > 40, "{n} quotes: the file lost its quotes");
}

#[cfg(feature = "selftest")]
#[test]
fn legal_variant_sentences_are_verbatim_in_docs() {
    let quotes = loom_conformance::variants::all()
        .into_iter()
        .map(|v| (v.name.to_owned(), v.section.to_owned(), v.quote.to_owned()))
        .collect();
    check("legal variants", quotes);
}

#[test]
fn a_changed_quote_is_caught() {
    let text = normalise("Nodes **MUST** verify all inbound envelope signatures.");
    assert_eq!(
        missing_fragment("Nodes MUST verify all inbound envelope signatures.", &text),
        None
    );
    assert!(missing_fragment("Nodes MUST verify envelope signatures.", &text).is_some());
    assert!(missing_fragment("Nodes MUST … inbound envelopes", &text).is_some());
}
