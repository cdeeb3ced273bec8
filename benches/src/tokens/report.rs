//! The markdown report: which format when, totals, the seed's claims, where Loom loses and why,
//! per-dataset tables.

use std::fmt::Write as _;

use super::Run;
use super::datasets::{SEED_CLASSIFIER_JSON, SEED_CLASSIFIER_LOOM};
use super::format::{Format, counted_text, without_final_newline};
use super::measure::{DatasetResult, Outcome};
use super::tokenizer::{self, Counts, N, TOKENIZER_NAMES, TOKENIZERS, Tokenizers};
use super::toon;

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

/// `o200k / cl100k` of a count (the two tokenizers the seed's claims are set against).
fn pair(c: Counts) -> String {
    format!("{} / {}", c[0], c[1])
}

fn pct_pair(a: Counts, base: Counts) -> String {
    format!("{} / {}", pct(a[0], base[0]), pct(a[1], base[1]))
}

/// `tokens (±x%)` against `base` (compact JSON), or just the count without a base.
fn token_cell(tokens: usize, base: Option<usize>) -> String {
    match base {
        Some(b) => format!("{tokens} ({})", pct(tokens, b)),
        None => tokens.to_string(),
    }
}

fn tokenizer_header() -> String {
    TOKENIZER_NAMES.iter().map(|n| format!(" {n} |")).collect()
}

fn right_aligned(n: usize) -> String {
    "---:|".repeat(n)
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
                tokens: [0; N],
                compact: [0; N],
                pretty: [0; N],
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
                        tokenizer::add(&mut t.tokens, &tok);
                        tokenizer::add(&mut t.compact, &c);
                        tokenizer::add(&mut t.pretty, &p);
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

/// Markdown table of one dataset: round-trip status, bytes and every tokenizer's count with
/// its change against compact JSON.
pub fn dataset_table(r: &DatasetResult) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| format | round trip | bytes |{}", tokenizer_header());
    let _ = writeln!(s, "|---|---|---:|{}", right_aligned(N));
    let compact = r.tokens(COMPACT);
    for c in &r.cells {
        match &c.outcome {
            Outcome::Counted { bytes, tokens, .. } => {
                let cells: String = (0..N)
                    .map(|i| format!(" {} |", token_cell(tokens[i], compact.map(|b| b[i]))))
                    .collect();
                let _ = writeln!(
                    s,
                    "| {} | {} | {bytes} |{cells}",
                    c.format,
                    c.outcome.round_trip()
                );
            }
            other => {
                let why = other.explanation().unwrap_or_default().replace('|', "\\|");
                let _ = writeln!(s, "| {} | {why} | |{}", c.format, " |".repeat(N));
            }
        }
    }
    s
}

/// A kind of data agents exchange, and the datasets that stand for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Name in the decision table.
    pub name: &'static str,
    /// Built-in datasets summed for this shape.
    pub datasets: &'static [&'static str],
}

/// The rows of the "which format when" table (the adversarial corpus is in none).
pub const SHAPES: [Shape; 7] = [
    Shape {
        name: "uniform records",
        datasets: &["flat-records-100", "flat-records-2000", "time-series"],
    },
    Shape {
        name: "nested config",
        datasets: &["nested-config", "process-definitions", "workflow-graph"],
    },
    Shape {
        name: "text-heavy",
        datasets: &["string-heavy"],
    },
    Shape {
        name: "event logs",
        datasets: &["event-log", "loop-engine-events"],
    },
    Shape {
        name: "envelopes",
        datasets: &["loom-envelopes"],
    },
    Shape {
        name: "small agent messages",
        datasets: &["seed-examples", "agent-messages"],
    },
    Shape {
        name: "flat state maps",
        datasets: &["plsp-state-maps"],
    },
];

/// The family of a format: variants of one notation (`json-compact` and `json-pretty`,
/// `toon` and `toon-tab`) share the part of the name before the first `-`.
pub fn family(format: &str) -> &str {
    format.split('-').next().unwrap_or(format)
}

/// The cheapest lossless format of a shape for one tokenizer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// Cheapest format.
    pub best: String,
    /// Its summed tokens.
    pub best_tokens: usize,
    /// The cheapest format of another [`family`] and its tokens: the margin is against the
    /// next notation, not against a variant of the winner.
    pub runner_up: Option<(String, usize)>,
    /// The cheapest format brought some numbers back in canonical form (`1.0` → `1`).
    pub normalized: bool,
    /// Loom notation's summed tokens, if it counted on every dataset of the shape.
    pub loom: Option<usize>,
}

/// Every format that counted on all of `datasets`, with its summed tokens and normalized
/// numbers, cheapest first for tokenizer `i` (ties in format order).
pub fn ranking(
    results: &[DatasetResult],
    datasets: &[&str],
    formats: &[String],
    i: usize,
) -> Vec<(String, usize, usize)> {
    let members: Vec<&DatasetResult> = results
        .iter()
        .filter(|r| datasets.contains(&r.name.as_str()))
        .collect();
    if members.is_empty() {
        return Vec::new();
    }
    let mut ranked: Vec<(String, usize, usize)> = formats
        .iter()
        .filter_map(|f| {
            let mut tokens = 0;
            let mut normalized = 0;
            for r in &members {
                match &r.cell(f)?.outcome {
                    Outcome::Counted {
                        tokens: t,
                        normalized: n,
                        ..
                    } => {
                        tokens += t[i];
                        normalized += n;
                    }
                    _ => return None,
                }
            }
            Some((f.clone(), tokens, normalized))
        })
        .collect();
    // Stable sort: equal counts keep the run's format order.
    ranked.sort_by_key(|(_, t, _)| *t);
    ranked
}

/// The decision for one shape and tokenizer.
pub fn choose(
    results: &[DatasetResult],
    datasets: &[&str],
    formats: &[String],
    i: usize,
) -> Option<Choice> {
    let ranked = ranking(results, datasets, formats, i);
    let (best, best_tokens, normalized) = ranked.first()?.clone();
    let runner_up = ranked
        .iter()
        .find(|(f, _, _)| family(f) != family(&best))
        .map(|(f, t, _)| (f.clone(), *t));
    Some(Choice {
        best,
        best_tokens,
        runner_up,
        normalized: normalized > 0,
        loom: ranked
            .iter()
            .find(|(f, _, _)| f == LOOM)
            .map(|(_, t, _)| *t),
    })
}

fn decision_section(run: &Run, out: &mut String) {
    let _ = writeln!(out, "## Which format when\n");
    let _ = writeln!(
        out,
        "The cheapest lossless format for each kind of data and tokenizer, with its margin over the next cheapest \
         notation (summed tokens over the datasets named; a format that is lossy or fails on any of them is not a \
         candidate; the margin is against the cheapest format of another notation, so `toon` is not compared with \
         `toon-tab`). Rows are data shapes, columns tokenizers; `*` marks a winner that brought some numbers back in canonical \
         form (TOON writes `1.0` as `1`; see \"Lossless\" above). The second table puts Loom notation against the winner.\n"
    );
    let shapes: Vec<&Shape> = SHAPES
        .iter()
        .filter(|s| {
            run.datasets
                .iter()
                .any(|r| s.datasets.contains(&r.name.as_str()))
        })
        .collect();
    let _ = writeln!(out, "| data shape (datasets) |{}", tokenizer_header());
    let _ = writeln!(out, "|---|{}", "---|".repeat(N));
    for s in &shapes {
        let cells: String = (0..N)
            .map(
                |i| match choose(&run.datasets, s.datasets, &run.formats, i) {
                    Some(c) => {
                        let star = if c.normalized { "*" } else { "" };
                        match &c.runner_up {
                            Some((f, t)) if *t == c.best_tokens => {
                                format!(" **{}**{star}, tied with {f} |", c.best)
                            }
                            Some((f, t)) => {
                                format!(" **{}**{star} {} vs {f} |", c.best, pct(c.best_tokens, *t))
                            }
                            None => format!(" **{}**{star} |", c.best),
                        }
                    }
                    None => " n/a |".to_string(),
                },
            )
            .collect();
        let _ = writeln!(out, "| {} ({}) |{cells}", s.name, s.datasets.join(", "));
    }
    let _ = writeln!(out);
    for s in &shapes {
        // For a starred winner: the cheapest format that also keeps number kinds.
        let mut exact: Vec<String> = Vec::new();
        let mut starred = false;
        for i in 0..N {
            let ranked = ranking(&run.datasets, s.datasets, &run.formats, i);
            starred |= ranked.first().is_some_and(|(_, _, n)| *n > 0);
            if let Some((f, _, _)) = ranked.iter().find(|(_, _, n)| *n == 0)
                && !exact.contains(f)
            {
                exact.push(f.clone());
            }
        }
        if starred && !exact.is_empty() {
            let _ = writeln!(
                out,
                "- `*` {}: if integer/float kinds and `-0.0` must survive, the cheapest is {}.",
                s.name,
                exact
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            );
        }
    }
    if !out.ends_with("\n\n") {
        out.push('\n');
    }
    let _ = writeln!(out, "Loom notation against the cheapest format:\n");
    let _ = writeln!(out, "| data shape |{}", tokenizer_header());
    let _ = writeln!(out, "|---|{}", right_aligned(N));
    for s in &shapes {
        let cells: String = (0..N)
            .map(
                |i| match choose(&run.datasets, s.datasets, &run.formats, i) {
                    Some(c) if c.best == LOOM => " cheapest |".to_string(),
                    Some(Choice {
                        loom: Some(l),
                        best,
                        best_tokens,
                        ..
                    }) => format!(" {} vs {best} |", pct(l, best_tokens)),
                    _ => " n/a |".to_string(),
                },
            )
            .collect();
        let _ = writeln!(out, "| {} |{cells}", s.name);
    }
    let _ = writeln!(out);
}

fn anatomy_section(run: &Run, out: &mut String) {
    if run.anatomy.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Why Loom notation costs more than compact JSON\n");
    let _ = writeln!(
        out,
        "Two rules of the syntax put whitespace where compact JSON has none, and tokenizers count it: every nested line \
         starts with its indentation (SPEC.md rule 3: exactly 2 spaces per level, one extra token per indented line), \
         and an entry is `key: value` (rule 5: the key ends at `: `; before a number the space is a token of its own, \
         while JSON's `\":` joins the punctuation). The columns below take each out of the strict encoding. \
         **These texts are not valid Loom notation** (they lose nesting, or read as scalar lines); they are counted \
         only to show how much of the gap each rule accounts for. o200k_base tokens:\n"
    );
    let _ = writeln!(
        out,
        "| dataset | compact JSON | Loom | Loom without indentation | Loom without the space before numbers | without both |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
    for r in &run.anatomy {
        let c = r.compact[0];
        let cell = |x: usize| format!("{x} ({})", pct(x, c));
        let _ = writeln!(
            out,
            "| {} | {c} | {} | {} | {} | {} |",
            r.dataset,
            cell(r.loom[0]),
            cell(r.no_indent[0]),
            cell(r.no_number_space[0]),
            cell(r.neither[0])
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "No encoding choice within the seed's syntax removes either cost: indentation is fixed by rule 3, the `: ` \
         separator by rule 5, and the seed has no tabular form for arrays of uniform objects (what TOON's \
         `key[N]{{fields}}:` header adds). The other choices the syntax leaves open are already the cheaper ones in \
         the strict encoder (inline `a, b` arrays, an object item's first entry on its `- ` line, quotes only where a \
         string would read back as something else); block scalars (`|`, rule 10) would only touch strings with line \
         breaks, of which the datasets have {} in all. Closing the gap to compact JSON or TOON on uniform records \
         needs a change to the notation itself, not an encoder option.\n",
        run.anatomy
            .iter()
            .map(|r| r.multiline_strings)
            .sum::<usize>()
    );
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
    // Counted like every format's text: without a final newline.
    let json_text = without_final_newline(SEED_CLASSIFIER_JSON.to_string());
    let loom_text = without_final_newline(SEED_CLASSIFIER_LOOM.to_string());
    let json_chars = json_text.chars().count();
    let loom_chars = loom_text.chars().count();
    let jt = tok.count(&json_text);
    let lt = tok.count(&loom_text);
    let original: serde_json::Value =
        serde_json::from_str(SEED_CLASSIFIER_JSON).unwrap_or_default();
    let verbatim_reads = match loom_notation::decode(SEED_CLASSIFIER_LOOM) {
        Ok(v) => match super::compare::first_difference(&original, &v) {
            None => "reads back as the JSON".to_string(),
            Some(d) => format!("does not read back as the JSON: {d}"),
        },
        Err(e) => format!("is rejected by the strict decoder: {e}"),
    };
    let strict = counted_text(&Format::Loom, &original).unwrap_or_default();
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
        strict.chars().count(),
        pair(st),
        pct_pair(st, jt)
    );
    let _ = writeln!(
        out,
        "The printed Loom text {verbatim_reads} (`actions: send` is a string; `[send]` is the one-element array, SPEC.md rule 13 A2). \
         Characters and tokens are counted without the final newline, like every text on this page.\n"
    );

    // "Average: ~40-60% token reduction".
    let _ = writeln!(out, "The seed's \"Average: ~40-60% token reduction\":\n");
    let _ = writeln!(
        out,
        "| scope | Loom vs compact JSON (o200k / cl100k) | Loom vs pretty JSON (o200k / cl100k) |"
    );
    let _ = writeln!(out, "|---|---:|---:|");
    let seed_set: Vec<DatasetResult> = run
        .datasets
        .iter()
        .filter(|r| r.name == "seed-examples")
        .cloned()
        .collect();
    for (scope, set) in [
        ("the seed's examples (summed)", seed_set),
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

/// Tokenizers (by name) with which `a` costs more than `b`.
fn worse_with(a: &Counts, b: &Counts) -> Vec<&'static str> {
    (0..N)
        .filter(|&i| a[i] > b[i])
        .map(|i| TOKENIZER_NAMES[i])
        .collect()
}

fn losses_section(run: &Run, out: &mut String) {
    let _ = writeln!(out, "## Where Loom notation loses\n");
    let counted: Vec<&DatasetResult> = run
        .datasets
        .iter()
        .filter(|r| r.tokens(LOOM).is_some() && r.tokens(COMPACT).is_some())
        .collect();
    let peers: Vec<&str> = [COMPACT, PRETTY, "yaml", "toon", "toon-tab"]
        .into_iter()
        .filter(|p| run.formats.iter().any(|f| f == p))
        .collect();
    for base in &peers {
        let with: Vec<&&DatasetResult> = counted
            .iter()
            .filter(|r| r.tokens(base).is_some())
            .collect();
        let worse = with
            .iter()
            .filter(|r| match (r.tokens(LOOM), r.tokens(base)) {
                (Some(l), Some(b)) => !worse_with(&l, &b).is_empty(),
                _ => false,
            })
            .count();
        let _ = writeln!(
            out,
            "- Loom notation costs more tokens than `{base}` (with at least one tokenizer) on **{worse} of {}** datasets.",
            with.len()
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Per dataset: Loom's change against each peer with o200k_base, and with how many of the {N} tokenizers Loom \
         costs more (`—`: fewer or equal tokens with every tokenizer; blank: the peer did not round-trip).\n"
    );
    let _ = writeln!(
        out,
        "| dataset |{}",
        peers
            .iter()
            .map(|p| format!(" vs {p} |"))
            .collect::<String>()
    );
    let _ = writeln!(out, "|---|{}", right_aligned(peers.len()));
    let mut notes = Vec::new();
    for r in &run.datasets {
        let Some(l) = r.tokens(LOOM) else {
            if let Some(c) = r.cell(LOOM) {
                notes.push(format!(
                    "- **{}**: Loom is not counted — {}",
                    r.name,
                    c.outcome.explanation().unwrap_or_default()
                ));
            }
            continue;
        };
        let cells: String = peers
            .iter()
            .map(|p| match r.tokens(p) {
                Some(o) => {
                    let worse = worse_with(&l, &o).len();
                    if worse == 0 {
                        " — |".to_string()
                    } else {
                        format!(" {} ({worse}/{N}) |", pct(l[0], o[0]))
                    }
                }
                None => {
                    if let Some(Outcome::Excluded {
                        uncounted: Some((_, o)),
                        numbers_only: true,
                        ..
                    }) = r.cell(p).map(|c| &c.outcome)
                    {
                        notes.push(format!(
                            "- **{}**: {p} is excluded (it rewrites number representation: 1.0 → 1, -0.0 → 0); \
                             if that is acceptable it would cost {} tokens against Loom's {} (o200k / cl100k)",
                            r.name,
                            pair(*o),
                            pair(l)
                        ));
                    }
                    " |".to_string()
                }
            })
            .collect();
        let _ = writeln!(out, "| {} |{cells}", r.name);
    }
    let _ = writeln!(out);
    for n in notes {
        let _ = writeln!(out, "{n}");
    }
    if !out.ends_with("\n\n") {
        out.push('\n');
    }
}

fn intro(run: &Run, out: &mut String) {
    let _ = writeln!(out, "# Token efficiency of Loom notation\n");
    let _ = writeln!(
        out,
        "<!-- GENERATED by `cargo run --release -p loom-benches --bin loom-tokens -- --write-results`; do not edit by hand. -->\n"
    );
    let _ = writeln!(
        out,
        "What each format costs in LLM tokens, counted only when the text decodes back to the value it was made from. \
         Generated datasets use seed `{:#x}` (ChaCha20). Object keys are in {} order in every format. Percentages are \
         `tokens / baseline − 1`: negative means fewer tokens.\n",
        run.seed,
        if super::keys_keep_insertion_order() {
            "source (insertion)"
        } else {
            "sorted"
        },
    );
    let _ = writeln!(
        out,
        "**Every text is counted without a final newline**, as a message body is sent: the Loom notation and YAML \
         encoders end their text with `\\n`, the JSON, TOON and PLSP encoders do not, so one function \
         (`format::counted_text`) removes a final newline from every encoder's output before the round trip and the \
         count. The seed's printed example and the columns of \"Why Loom notation costs more\" are counted the same \
         way. Until issue 35 Loom notation and YAML were counted with it: one byte per document and usually one \
         token, enough to decide the closest rows. Small agent messages (34 documents) went from \
         `toon` cheapest with o200k_base, p50k_base, deepseek_v3 and mistral_v3 (o200k_base: TOON 1151, Loom 1157 \
         tokens) to `loom` cheapest with every tokenizer but r50k_base (o200k_base: Loom 1133, TOON 1151, -1.6%); \
         on flat state maps (44 documents) Loom went from +3.7% against `toon` with p50k_base and r50k_base to a tie \
         (1198 tokens each).\n"
    );
    let _ = writeln!(
        out,
        "**Tokenizers** (every vocabulary ships inside a crates.io package; nothing is downloaded; special-token \
         strings count as ordinary text):\n"
    );
    let _ = writeln!(out, "| column | used by | vocabulary and encoder from |");
    let _ = writeln!(out, "|---|---|---|");
    for t in TOKENIZERS {
        let _ = writeln!(out, "| `{}` | {} | {} |", t.name, t.models, t.source);
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "When these columns were added (issue 20), `o200k_base`, `llama3`, `qwen2` and `deepseek_v3` were checked \
         against independent implementations (transformers.js tokenizers loading each model's own tokenizer.json) \
         on every text this benchmark encodes: the counts were identical. `qwen2` needs the NFC normalization its \
         tokenizer.json asks for, which is applied here. `mistral_v3` had no independent reference available.\n"
    );
    let _ = writeln!(out, "**Formats:**\n");
    for f in &run.formats {
        let desc = Format::ALL
            .iter()
            .find(|x| x.as_str() == f)
            .map_or("", |x| x.description());
        let _ = writeln!(out, "- `{f}`: {desc}");
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "**Lossless** means the decoded value equals the original: same types, strings, array order and object members \
         (member order is not compared: JSON objects are unordered, and every format here writes the keys in the \
         same order anyway). For JSON, YAML, Loom notation and PLSP numbers must also keep their kind and bits \
         (`1` ≠ `1.0`, `0.0` ≠ `-0.0`). TOON's specification (§2) writes every number in one canonical decimal form, \
         so it cannot keep those distinctions: for `toon` and `toon-tab` a number counts as kept when its exact \
         value is kept (`1.0` → `1` and `-0.0` → `0` pass and are reported as \"numbers in canonical form\"; \
         18446744073709551615 → 1.8446744073709552e19 would be a loss). TOON runs in a separate process, \
         `benches/toon-bridge` (toon-format {}, TOON spec v{}), kept out of the workspace because toon-format turns \
         on serde_json's `preserve_order`; when it was added (issue 20) its text was byte-identical to the TypeScript \
         reference implementation (`@toon-format/toon` 4.4.0) on 434 of the 450 TOON texts of this run, the other 16 \
         differing only in numbers JavaScript cannot hold exactly (u64/i64 extremes) or writes with an exponent \
         (`1e+21` for 1e21). A format that is not lossless on a dataset is excluded from every total \
         and listed with its first difference.\n",
        toon::TOON_FORMAT_VERSION,
        toon::TOON_SPEC_VERSION
    );
}

fn headline(run: &Run, out: &mut String) {
    let all = totals(&run.datasets, &run.formats);
    for f in [LOOM, "toon", "toon-tab"] {
        if let Some(t) = all.iter().find(|t| t.format == f && t.datasets > 0) {
            let _ = writeln!(
                out,
                "**{f}:** over the {} datasets where it round-trips, {} tokens (o200k / cl100k) relative to compact JSON \
                 and {} relative to pretty JSON.\n",
                t.datasets,
                pct_pair(t.tokens, t.compact),
                pct_pair(t.tokens, t.pretty)
            );
        }
    }
}

fn totals_section(run: &Run, out: &mut String) {
    let _ = writeln!(out, "## Totals\n");
    let _ = writeln!(
        out,
        "Summed tokens over the datasets where the format round-tripped, with the change against compact JSON summed over \
         the same datasets. The 2,000-row dataset dominates these sums; the decision table above and the per-dataset \
         tables weight datasets separately.\n"
    );
    let _ = writeln!(
        out,
        "| format | datasets | bytes |{} left out |",
        tokenizer_header()
    );
    let _ = writeln!(out, "|---|---:|---:|{}---|", right_aligned(N));
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
                "| {} | 0 | |{} all ({}) |",
                t.format,
                " |".repeat(N),
                t.left_out.first().map_or("", |x| x.1.as_str())
            );
            continue;
        }
        let cells: String = (0..N)
            .map(|i| format!(" {} |", token_cell(t.tokens[i], Some(t.compact[i]))))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} |{cells} {} |",
            t.format,
            t.datasets,
            t.bytes,
            if left.is_empty() {
                "—".to_string()
            } else {
                left
            }
        );
    }
    let _ = writeln!(out);
}

fn availability_section(run: &Run, out: &mut String) {
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
}

/// The whole report (`benches/results/token-efficiency.md`); `charts` links each dataset's
/// chart (`charts/NAME.svg`, written next to it).
pub fn markdown(run: &Run, tok: &Tokenizers, charts: bool) -> String {
    let mut out = String::new();
    intro(run, &mut out);
    headline(run, &mut out);
    decision_section(run, &mut out);
    totals_section(run, &mut out);
    anatomy_section(run, &mut out);
    claims_section(run, tok, &mut out);
    losses_section(run, &mut out);
    availability_section(run, &mut out);

    let _ = writeln!(out, "## Per dataset\n");
    let _ = writeln!(
        out,
        "Token cells: count (change against compact JSON with the same tokenizer).\n"
    );
    for r in &run.datasets {
        let _ = writeln!(
            out,
            "### {}\n\n{} ({} document{})\n",
            r.name,
            r.description,
            r.docs,
            if r.docs == 1 { "" } else { "s" }
        );
        if charts {
            let _ = writeln!(
                out,
                "![{0}: tokens per format and tokenizer](charts/{0}.svg)\n",
                r.name
            );
        }
        out.push_str(&dataset_table(r));
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::measure::Cell;

    fn cell(format: &str, t: [usize; 2], normalized: usize) -> Cell {
        let mut tokens = [0; N];
        tokens[0] = t[0];
        tokens[1] = t[1];
        Cell {
            format: format.to_string(),
            outcome: Outcome::Counted {
                bytes: 1,
                tokens,
                normalized,
            },
        }
    }

    fn result(name: &str, cells: Vec<Cell>) -> DatasetResult {
        DatasetResult {
            name: name.to_string(),
            description: String::new(),
            docs: 1,
            cells,
        }
    }

    fn formats() -> Vec<String> {
        ["json-compact", "loom", "toon", "toon-tab", "plsp"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn the_cheapest_format_wins_and_the_margin_is_against_another_notation() {
        let results = vec![
            result(
                "a",
                vec![
                    cell("json-compact", [100, 100], 0),
                    cell("loom", [120, 90], 0),
                    cell("toon", [70, 95], 1),
                    cell("toon-tab", [69, 96], 0),
                    Cell {
                        format: "plsp".to_string(),
                        outcome: Outcome::Unavailable("n/a".to_string()),
                    },
                ],
            ),
            result(
                "b",
                vec![
                    cell("json-compact", [10, 10], 0),
                    cell("loom", [10, 10], 0),
                    cell("toon", [10, 10], 0),
                    cell("toon-tab", [10, 10], 0),
                ],
            ),
        ];
        let c = choose(&results, &["a", "b"], &formats(), 0).unwrap();
        assert_eq!(c.best, "toon-tab");
        assert_eq!(c.best_tokens, 79);
        // Not toon (same notation): the next notation is json-compact.
        assert_eq!(c.runner_up, Some(("json-compact".to_string(), 110)));
        assert_eq!(c.loom, Some(130));
        assert!(!c.normalized);
        // With cl100k_base Loom wins; toon's normalized numbers would be marked.
        let c = choose(&results, &["a", "b"], &formats(), 1).unwrap();
        assert_eq!((c.best.as_str(), c.best_tokens), ("loom", 100));
        assert_eq!(c.runner_up, Some(("toon".to_string(), 105)));
        let t = choose(&results, &["a"], &formats(), 0).unwrap();
        assert!(t.best == "toon-tab" && !t.normalized);
        // A format missing from one dataset of the shape is not a candidate.
        assert!(
            ranking(&results, &["a", "b"], &formats(), 0)
                .iter()
                .all(|(f, _, _)| f != "plsp")
        );
        assert_eq!(choose(&results, &["zzz"], &formats(), 0), None);
    }

    #[test]
    fn ties_keep_format_order() {
        let results = vec![result(
            "a",
            vec![cell("json-compact", [5, 5], 0), cell("toon", [5, 5], 2)],
        )];
        let c = choose(&results, &["a"], &formats(), 0).unwrap();
        assert_eq!(c.best, "json-compact");
        assert_eq!(c.runner_up, Some(("toon".to_string(), 5)));
    }
}
