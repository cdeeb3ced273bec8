//! The markdown report: per-dataset tables, totals, the seed's claims, where Loom loses.

use std::fmt::Write as _;

use super::Run;
use super::datasets::{SEED_CLASSIFIER_JSON, SEED_CLASSIFIER_LOOM};
use super::measure::{DatasetResult, Outcome};
use super::tokenizer::{Counts, TOKENIZER_NAMES, Tokenizers};

const COMPACT: &str = "json-compact";
const PRETTY: &str = "json-pretty";
const LOOM: &str = "loom";

/// Change of `a` relative to `base`, e.g. `-38.2%`.
pub fn pct(a: usize, base: usize) -> String {
    if base == 0 {
        return "n/a".to_string();
    }
    format!("{:+.1}%", (a as f64 / base as f64 - 1.0) * 100.0)
}

fn pair(c: Counts) -> String {
    format!("{} / {}", c[0], c[1])
}

fn pct_pair(a: Counts, base: Counts) -> String {
    format!("{} / {}", pct(a[0], base[0]), pct(a[1], base[1]))
}

/// One format's sums over the datasets where it (and both JSON baselines) counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Total {
    /// Format name.
    pub format: String,
    /// Datasets included.
    pub datasets: usize,
    /// Datasets left out (lossy, failed or unavailable), with the status.
    pub left_out: Vec<(String, String)>,
    /// Summed bytes.
    pub bytes: usize,
    /// Summed tokens.
    pub tokens: Counts,
    /// Compact JSON tokens over the same datasets.
    pub compact: Counts,
    /// Pretty JSON tokens over the same datasets.
    pub pretty: Counts,
}

/// Totals per format (same order as the run's formats).
pub fn totals(results: &[DatasetResult], formats: &[String]) -> Vec<Total> {
    formats
        .iter()
        .map(|f| {
            let mut t = Total {
                format: f.clone(),
                datasets: 0,
                left_out: Vec::new(),
                bytes: 0,
                tokens: [0; 2],
                compact: [0; 2],
                pretty: [0; 2],
            };
            for r in results {
                let own = r.cell(f).map(|c| &c.outcome);
                match (
                    own.and_then(Outcome::counted),
                    r.tokens(COMPACT),
                    r.tokens(PRETTY),
                ) {
                    (Some((bytes, tok)), Some(c), Some(p)) => {
                        t.datasets += 1;
                        t.bytes += bytes;
                        for i in 0..2 {
                            t.tokens[i] += tok[i];
                            t.compact[i] += c[i];
                            t.pretty[i] += p[i];
                        }
                    }
                    _ => t.left_out.push((
                        r.name.clone(),
                        own.map_or("missing", Outcome::status).to_string(),
                    )),
                }
            }
            t
        })
        .collect()
}

/// Median of the per-dataset change of `format` vs `base` for tokenizer `i`.
pub fn median_change(results: &[DatasetResult], format: &str, base: &str, i: usize) -> Option<f64> {
    let mut v: Vec<f64> = results
        .iter()
        .filter_map(|r| {
            Some((r.tokens(format)?[i] as f64 / r.tokens(base)?[i] as f64 - 1.0) * 100.0)
        })
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Markdown table of one dataset.
pub fn dataset_table(r: &DatasetResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| format | bytes | tokens o200k | tokens cl100k | vs compact JSON (o200k / cl100k) | vs pretty JSON (o200k / cl100k) |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|");
    let compact = r.tokens(COMPACT);
    let pretty = r.tokens(PRETTY);
    for c in &r.cells {
        match &c.outcome {
            Outcome::Counted { bytes, tokens } => {
                let vs = |b: Option<Counts>| b.map_or("n/a".to_string(), |b| pct_pair(*tokens, b));
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} |",
                    c.format,
                    bytes,
                    tokens[0],
                    tokens[1],
                    vs(compact),
                    vs(pretty)
                );
            }
            other => {
                let why = other.explanation().unwrap_or_default().replace('|', "\\|");
                let _ = writeln!(s, "| {} | {} | | | | |", c.format, why);
            }
        }
    }
    s
}

fn claims_section(run: &Run, tok: &Tokenizers, out: &mut String) {
    let _ = writeln!(out, "## The seed's claims next to the measurements\n");
    let _ = writeln!(
        out,
        "The seed (`loom-notation.md`) does not say which tokenizer or which JSON layout it counted. \
         Measured cells give `o200k / cl100k`. \"Loom\" is the strict encoder (`loom_notation::encode`), \
         which writes one-element arrays as `[x]` so they read back losslessly.\n"
    );
    let _ = writeln!(
        out,
        "| structure (seed table) | seed: JSON | seed: Loom | seed: reduction | measured: compact JSON | measured: pretty JSON | measured: Loom | Loom vs compact | Loom vs pretty |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let rows: [(&str, usize, usize, &str, Option<&str>); 4] = [
        (
            "Classifier Response",
            45,
            28,
            "38%",
            Some("example-1-classifier"),
        ),
        (
            "Enrichment Question",
            62,
            38,
            "39%",
            Some("example-2-enrichment"),
        ),
        (
            "Simple Workflow Plan",
            280,
            165,
            "41%",
            Some("example-3-workflow-plan"),
        ),
        ("Complex Workflow Plan", 850, 490, "42%", None),
    ];
    for (label, sj, sl, sr, doc) in rows {
        let measured = doc.and_then(|d| run.seed_docs.iter().find(|r| r.name == d));
        match measured.map(|r| (r.tokens(COMPACT), r.tokens(PRETTY), r.tokens(LOOM))) {
            Some((Some(c), Some(p), Some(l))) => {
                let _ = writeln!(
                    out,
                    "| {label} (`{}`) | {sj} | {sl} | {sr} | {} | {} | {} | {} | {} |",
                    doc.unwrap_or_default(),
                    pair(c),
                    pair(p),
                    pair(l),
                    pct_pair(l, c),
                    pct_pair(l, p)
                );
            }
            Some(_) => {
                let _ = writeln!(
                    out,
                    "| {label} | {sj} | {sl} | {sr} | a format was excluded, see the seed-examples table | | | | |"
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "| {label} | {sj} | {sl} | {sr} | not measured: the seed prints no complex plan (see `workflow-graph` below for a large nested plan) | | | | |"
                );
            }
        }
    }
    let _ = writeln!(out);

    // The "Token Comparison" example, as printed.
    let json_chars = SEED_CLASSIFIER_JSON.chars().count();
    let loom_text = SEED_CLASSIFIER_LOOM.trim_end();
    let loom_chars = loom_text.chars().count();
    let jt = tok.count(SEED_CLASSIFIER_JSON);
    let lt = tok.count(SEED_CLASSIFIER_LOOM);
    let original: serde_json::Value =
        serde_json::from_str(SEED_CLASSIFIER_JSON).unwrap_or_default();
    let verbatim_reads = match loom_notation::decode(SEED_CLASSIFIER_LOOM) {
        Ok(v) => match super::compare::first_difference(&original, &v) {
            None => "reads back as the JSON".to_string(),
            Some(d) => format!("does not read back as the JSON: {d}"),
        },
        Err(e) => format!("is rejected by the strict decoder: {e}"),
    };
    let strict = loom_notation::encode(&original).unwrap_or_default();
    let st = tok.count(&strict);
    let _ = writeln!(out, "The seed's \"Token Comparison\" example:\n");
    let _ = writeln!(
        out,
        "| text | seed says | measured chars | measured tokens (o200k / cl100k) | vs the JSON |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|");
    let _ = writeln!(
        out,
        "| the JSON, as printed | 186 chars, ~47 tokens | {json_chars} | {} | |",
        pair(jt)
    );
    let _ = writeln!(
        out,
        "| the Loom text, as printed | 114 chars, ~29 tokens, 38% reduction | {loom_chars} | {} | {} |",
        pair(lt),
        pct_pair(lt, jt)
    );
    let _ = writeln!(
        out,
        "| strict `encode` of the same value | | {} | {} | {} |\n",
        strict.trim_end().chars().count(),
        pair(st),
        pct_pair(st, jt)
    );
    let _ = writeln!(
        out,
        "The printed Loom text {verbatim_reads} (`actions: send` is a string; `[send]` is the one-element array, SPEC.md rule 13 A2). \
         Character counts exclude the final newline.\n"
    );

    // "Average: ~40-60% token reduction".
    let _ = writeln!(out, "The seed's \"Average: ~40-60% token reduction\":\n");
    let _ = writeln!(
        out,
        "| scope | Loom vs compact JSON (o200k / cl100k) | Loom vs pretty JSON (o200k / cl100k) |"
    );
    let _ = writeln!(out, "|---|---:|---:|");
    let seed_set: Vec<&DatasetResult> = run
        .datasets
        .iter()
        .filter(|r| r.name == "seed-examples")
        .collect();
    for (scope, set) in [
        (
            "the seed's examples (summed)",
            seed_set.into_iter().cloned().collect::<Vec<_>>(),
        ),
        ("all datasets (summed tokens)", run.datasets.clone()),
    ] {
        let t = totals(&set, &[LOOM.to_string()]);
        if let Some(t) = t.first().filter(|t| t.datasets > 0) {
            let _ = writeln!(
                out,
                "| {scope} | {} | {} |",
                pct_pair(t.tokens, t.compact),
                pct_pair(t.tokens, t.pretty)
            );
        }
    }
    let med = |base: &str| {
        (0..2)
            .map(|i| {
                median_change(&run.datasets, LOOM, base, i)
                    .map_or("n/a".to_string(), |m| format!("{m:+.1}%"))
            })
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let _ = writeln!(
        out,
        "| median over datasets | {} | {} |\n",
        med(COMPACT),
        med(PRETTY)
    );
}

fn losses_section(run: &Run, out: &mut String) {
    let _ = writeln!(out, "## Where Loom notation loses\n");
    let counted: Vec<&DatasetResult> = run
        .datasets
        .iter()
        .filter(|r| r.tokens(LOOM).is_some() && r.tokens(COMPACT).is_some())
        .collect();
    for (base, label) in [(COMPACT, "compact JSON"), (PRETTY, "pretty JSON")] {
        let worse = counted
            .iter()
            .filter(|r| match (r.tokens(LOOM), r.tokens(base)) {
                (Some(l), Some(b)) => (0..2).any(|i| l[i] > b[i]),
                _ => false,
            })
            .count();
        let _ = writeln!(
            out,
            "- Loom notation costs more tokens than {label} (with at least one tokenizer) on **{worse} of {}** datasets.",
            counted.len()
        );
    }
    let _ = writeln!(out);
    let mut lines = Vec::new();
    for r in &run.datasets {
        let Some(l) = r.tokens(LOOM) else {
            if let Some(c) = r.cell(LOOM) {
                lines.push(format!(
                    "- **{}**: Loom is not counted — {}",
                    r.name,
                    c.outcome.explanation().unwrap_or_default()
                ));
            }
            continue;
        };
        for other in [COMPACT, "yaml", "toon"] {
            if let Some(Outcome::Excluded {
                uncounted: Some((_, o)),
                numbers_only: true,
                ..
            }) = r.cell(other).map(|c| &c.outcome)
            {
                if (0..2).any(|i| l[i] > o[i]) {
                    lines.push(format!(
                        "- **{}**: {other} is excluded here (it rewrites number representation: 1.0 → 1, -0.0 → 0), \
                         but if that is acceptable it would cost {} tokens against Loom's {} ({} for Loom, o200k / cl100k)",
                        r.name,
                        pair(*o),
                        pair(l),
                        pct_pair(l, *o)
                    ));
                }
                continue;
            }
            let Some(o) = r.tokens(other) else { continue };
            let worse: Vec<&str> = (0..2)
                .filter(|&i| l[i] > o[i])
                .map(|i| TOKENIZER_NAMES[i])
                .collect();
            if !worse.is_empty() {
                lines.push(format!(
                    "- **{}**: Loom costs more than {other} ({} vs {} tokens, o200k / cl100k: {}; worse with {})",
                    r.name,
                    pair(l),
                    pair(o),
                    pct_pair(l, o),
                    worse.join(", ")
                ));
            }
        }
    }
    if lines.is_empty() {
        let _ = writeln!(
            out,
            "On no dataset does Loom cost more tokens than compact JSON, YAML or TOON.\n"
        );
    } else {
        let _ = writeln!(
            out,
            "Every dataset where Loom notation costs more tokens than compact JSON, YAML or TOON with either tokenizer:\n"
        );
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
        let _ = writeln!(out);
    }
}

/// The whole report (`benches/results/token-efficiency.md`).
pub fn markdown(run: &Run, tok: &Tokenizers) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Token efficiency of Loom notation\n");
    let _ = writeln!(
        out,
        "<!-- GENERATED by `cargo run --release -p loom-benches --bin loom-tokens -- --write-results`; do not edit by hand. -->\n"
    );
    let _ = writeln!(
        out,
        "Tokenizers: {} (tiktoken-rs 0.12, ordinary text: special-token strings count as text). \
         Formats: {}. Generated datasets use seed `{:#x}` (ChaCha20). Every encoding is decoded again and compared \
         with the original value (numbers by kind and bits, so `1` ≠ `1.0` and `0.0` ≠ `-0.0`); \
         a result that does not round-trip is excluded from every total and listed as such. \
         Object keys are in {} order in every format. Percentages are `tokens / baseline − 1`: negative means fewer tokens.\n",
        TOKENIZER_NAMES.join(" and "),
        run.formats
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", "),
        run.seed,
        if super::keys_keep_insertion_order() {
            "source (insertion)"
        } else {
            "sorted"
        },
    );

    if let Some(l) = totals(&run.datasets, &run.formats)
        .into_iter()
        .find(|t| t.format == LOOM && t.datasets > 0)
    {
        let _ = writeln!(
            out,
            "**Headline:** over all {} datasets, Loom notation takes {} tokens (o200k / cl100k) relative to compact JSON \
             and {} relative to pretty JSON.\n",
            l.datasets,
            pct_pair(l.tokens, l.compact),
            pct_pair(l.tokens, l.pretty)
        );
    }
    let _ = writeln!(out, "## Totals\n");
    let _ = writeln!(
        out,
        "Summed tokens over the datasets where the format round-tripped; the JSON baselines are summed over the same datasets. \
         The 2,000-row dataset dominates these sums; the median row of the next section weights datasets equally.\n"
    );
    let _ = writeln!(
        out,
        "| format | datasets | bytes | tokens o200k | tokens cl100k | vs compact JSON (o200k / cl100k) | vs pretty JSON (o200k / cl100k) | left out |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---|");
    for t in totals(&run.datasets, &run.formats) {
        let left = t
            .left_out
            .iter()
            .map(|(d, s)| format!("{d} ({s})"))
            .collect::<Vec<_>>()
            .join(", ");
        if t.datasets == 0 {
            let _ = writeln!(
                out,
                "| {} | 0 | | | | | | all ({}) |",
                t.format,
                t.left_out.first().map_or("", |x| x.1.as_str())
            );
            continue;
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            t.format,
            t.datasets,
            t.bytes,
            t.tokens[0],
            t.tokens[1],
            pct_pair(t.tokens, t.compact),
            pct_pair(t.tokens, t.pretty),
            if left.is_empty() {
                "—".to_string()
            } else {
                left
            }
        );
    }
    let _ = writeln!(out);

    claims_section(run, tok, &mut out);
    losses_section(run, &mut out);

    let _ = writeln!(out, "## Availability\n");
    let mut notes: Vec<String> = Vec::new();
    for f in &run.formats {
        let reasons: Vec<String> = run
            .datasets
            .iter()
            .filter_map(|r| match &r.cell(f)?.outcome {
                Outcome::Unavailable(why) => Some(why.clone()),
                _ => None,
            })
            .collect();
        if let Some(why) = reasons.first() {
            notes.push(format!("- `{f}`: {why}"));
        }
    }
    if notes.is_empty() {
        let _ = writeln!(out, "Every format is available.\n");
    } else {
        for n in notes {
            let _ = writeln!(out, "{n}");
        }
        let _ = writeln!(out);
    }

    let _ = writeln!(out, "## Per dataset\n");
    for r in &run.datasets {
        let _ = writeln!(
            out,
            "### {}\n\n{} ({} document{})\n",
            r.name,
            r.description,
            r.docs,
            if r.docs == 1 { "" } else { "s" }
        );
        out.push_str(&dataset_table(r));
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}
