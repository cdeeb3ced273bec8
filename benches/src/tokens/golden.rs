//! JSON results and the golden-count gate (`--check`, `benches/results/token-counts.json`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Run;
use super::measure::Outcome;
use super::report::totals;
use super::tokenizer::{Counts, TOKENIZER_NAMES};

/// Schema tag of the results file (2: eight tokenizers, TOON, `numbers_normalized`).
pub const SCHEMA: &str = "loom-tokens/2";

fn counts_json(c: Counts) -> Value {
    Value::Object(
        TOKENIZER_NAMES
            .iter()
            .zip(c)
            .map(|(name, n)| (name.to_string(), json!(n)))
            .collect(),
    )
}

/// The run as JSON (what `--json` writes and what the golden file holds).
pub fn to_json(run: &Run) -> Value {
    let datasets: Vec<Value> = run
        .datasets
        .iter()
        .map(|r| {
            let results: Vec<Value> = r
                .cells
                .iter()
                .map(|c| {
                    let mut v = json!({"format": c.format, "status": c.outcome.status()});
                    match &c.outcome {
                        Outcome::Counted {
                            bytes,
                            tokens,
                            normalized,
                        } => {
                            v["bytes"] = json!(bytes);
                            v["tokens"] = counts_json(*tokens);
                            if *normalized > 0 {
                                v["numbers_normalized"] = json!(normalized);
                            }
                        }
                        Outcome::Excluded {
                            doc,
                            detail,
                            uncounted,
                            numbers_only,
                            ..
                        } => {
                            v["document"] = json!(doc);
                            v["detail"] = json!(detail);
                            v["numbers_only"] = json!(numbers_only);
                            if let Some((bytes, tokens)) = uncounted {
                                v["uncounted_bytes"] = json!(bytes);
                                v["uncounted_tokens"] = counts_json(*tokens);
                            }
                        }
                        Outcome::Unavailable(why) => v["detail"] = json!(why),
                    }
                    v
                })
                .collect();
            json!({"name": r.name, "description": r.description, "documents": r.docs, "results": results})
        })
        .collect();
    let totals: Vec<Value> = totals(&run.datasets, &run.formats)
        .into_iter()
        .map(|t| {
            json!({
                "format": t.format,
                "datasets": t.datasets,
                "bytes": t.bytes,
                "tokens": counts_json(t.tokens),
                "json_compact_tokens": counts_json(t.compact),
                "json_pretty_tokens": counts_json(t.pretty),
                "left_out": t.left_out.iter().map(|(d, s)| json!({"dataset": d, "status": s})).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "schema": SCHEMA,
        "seed": format!("{:#x}", run.seed),
        "tokenizers": TOKENIZER_NAMES,
        "formats": run.formats,
        "datasets": datasets,
        "totals": totals,
    })
}

/// `dataset/format/metric` → value for every status, byte and token count of a results file.
pub fn counts(results: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for d in results["datasets"].as_array().into_iter().flatten() {
        let name = d["name"].as_str().unwrap_or("?");
        for r in d["results"].as_array().into_iter().flatten() {
            let key = format!("{name}/{}", r["format"].as_str().unwrap_or("?"));
            out.insert(format!("{key}/status"), r["status"].to_string());
            if !r["bytes"].is_null() {
                out.insert(format!("{key}/bytes"), r["bytes"].to_string());
            }
            for field in ["numbers_only", "numbers_normalized"] {
                if !r[field].is_null() {
                    out.insert(format!("{key}/{field}"), r[field].to_string());
                }
            }
            for field in ["tokens", "uncounted_tokens"] {
                for t in TOKENIZER_NAMES {
                    if !r[field][t].is_null() {
                        out.insert(format!("{key}/{field}.{t}"), r[field][t].to_string());
                    }
                }
            }
        }
    }
    out
}

/// Every difference between the golden counts and a fresh run, one line each.
pub fn check(golden: &Value, fresh: &Value) -> Vec<String> {
    let g = counts(golden);
    let f = counts(fresh);
    let mut diffs = Vec::new();
    for (k, gv) in &g {
        match f.get(k) {
            Some(fv) if fv == gv => {}
            Some(fv) => diffs.push(format!("changed {k}: golden {gv}, now {fv}")),
            None => diffs.push(format!("gone {k}: golden {gv}, not measured now")),
        }
    }
    for (k, fv) in &f {
        if !g.contains_key(k) {
            diffs.push(format!("new {k}: {fv}, not in the golden file"));
        }
    }
    diffs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_every_changed_count() {
        let golden = json!({"datasets": [{"name": "d", "results": [
            {"format": "loom", "status": "ok", "bytes": 10, "tokens": {"o200k_base": 3, "cl100k_base": 4}},
            {"format": "plsp", "status": "unavailable"}]}]});
        let mut fresh = golden.clone();
        assert!(check(&golden, &fresh).is_empty());
        fresh["datasets"][0]["results"][0]["tokens"]["o200k_base"] = json!(5);
        fresh["datasets"][0]["results"][0]["bytes"] = json!(11);
        let diffs = check(&golden, &fresh);
        assert_eq!(
            diffs,
            vec![
                "changed d/loom/bytes: golden 10, now 11".to_string(),
                "changed d/loom/tokens.o200k_base: golden 3, now 5".to_string(),
            ]
        );
    }
}
