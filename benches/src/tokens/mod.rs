//! `loom-tokens`: what each format costs in LLM tokens, counted only when it round-trips.
//!
//! Pipeline: [`datasets`] → [`measure`] (encode, decode, compare with [`compare`], count with
//! [`tokenizer`]; TOON through the [`toon`] bridge process) → [`report`] (markdown, with the
//! "which format when" table), [`golden`] (JSON results and the `--check` gate), [`svg`] (bar
//! charts); [`anatomy`] explains Loom's gap. Everything is deterministic: fixed seed,
//! `Vec`/`BTreeMap` only.

pub mod anatomy;
pub mod compare;
pub mod datasets;
pub mod format;
pub mod golden;
pub mod measure;
pub mod plsp;
pub mod report;
pub mod svg;
pub mod tokenizer;
pub mod toon;

use datasets::Dataset;
use format::{Codec, Format};
use measure::DatasetResult;
use tokenizer::Tokenizers;

/// Everything one run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Seed of the generated datasets.
    pub seed: u64,
    /// Format names, in column order.
    pub formats: Vec<String>,
    /// One result per dataset, in dataset order.
    pub datasets: Vec<DatasetResult>,
    /// The seed's documents measured one by one (for the claims table).
    pub seed_docs: Vec<DatasetResult>,
    /// Where Loom notation's tokens go, per dataset (counterfactual texts, never counted).
    pub anatomy: Vec<anatomy::Row>,
}

/// Measures `sets` in every built-in format.
pub fn run(seed: u64, sets: &[Dataset], tok: &Tokenizers) -> Run {
    run_with(seed, sets, &Format::all_codecs(), tok)
}

/// Measures `sets` in the given codecs.
pub fn run_with(seed: u64, sets: &[Dataset], codecs: &[&dyn Codec], tok: &Tokenizers) -> Run {
    let seed_docs = datasets::seed_examples()
        .into_iter()
        .map(|d| {
            let single = Dataset {
                name: d.label.clone(),
                description: String::new(),
                docs: vec![d],
            };
            measure::measure(&single, codecs, tok)
        })
        .collect();
    Run {
        seed,
        formats: codecs.iter().map(|c| c.name().to_string()).collect(),
        datasets: sets
            .iter()
            .map(|d| measure::measure(d, codecs, tok))
            .collect(),
        seed_docs,
        anatomy: sets.iter().map(|d| anatomy::row(d, tok)).collect(),
    }
}

/// The built-in benchmark: every built-in dataset from [`datasets::SEED`].
pub fn run_builtin(tok: &Tokenizers) -> Run {
    run(datasets::SEED, &datasets::builtin(datasets::SEED), tok)
}

/// Whether this build's `serde_json::Map` keeps insertion order (`preserve_order` feature).
pub fn keys_keep_insertion_order() -> bool {
    let v = serde_json::json!({"b": 1, "a": 2});
    v.as_object()
        .and_then(|m| m.keys().next())
        .is_some_and(|k| k == "b")
}
